"""The harnesses this inspector reads: one entry each, the one place a harness is named.

Every table that lists harnesses derives from `HARNESSES` (detection order, the session finders,
the presets per format, the rules' harness names, the estimators' harness, the incremental
readers of `live.follow`, the "can read" line of a load error). An entry names its code by a
lazy import path (`"module:attribute"`), so this module imports nothing of the package and sits
below everything: a module is imported only when its harness is asked for (a Claude Code session
imports no other reader).

The spellings of a harness:
- `id` (`HarnessId`): what users type and read (`--policy claude-code`, the `sessions` list's
  `harness` column, `rules = "claude-code"` in a policy file) and what the tables are keyed by;
- `label`: its name in prose ("Claude Code 2.1.39 · auto compact at ...");
- `format`: `Transcript.format`, what its reader writes in a transcript (the JSON `format`);
- `estimator`: the id of its token estimator in `inspector.tokens.harness.ESTIMATORS`
  (`claude_code`: estimator ids keep their underscore in the JSON schema); as input every
  spelling of an id is accepted: case, `-`, `_` and spaces do not count (`claude-code` =
  `claude_code` = `Claude Code`), and `aliases` are accepted too (`claude`).

Adding a harness: its reader module (`inspector/formats/NAME.py`) and an entry here; the README's
"Where to change what" says what more it may bring (rules by version, its own preset, a finder).
"""

from __future__ import annotations

import importlib
from typing import Any, Literal, get_args

from msgspec import Struct

HarnessId = Literal["claude-code", "codex", "opencode", "opencollab", "chat"]
"""The one id type of a harness."""


class Harness(Struct, frozen=True):
    """One harness: who it is and where its pieces live."""

    id: HarnessId
    label: str
    """Its name in prose ("Claude Code")."""
    format: str
    """`Transcript.format` of what its reader makes."""
    reader: str
    """The `Reader` (`inspector.formats.base`) that detects and loads its transcripts, as
    `"module:Class"` (instantiated with no arguments)."""
    estimator: str
    """Its own token estimate (`inspector.tokens.harness.ESTIMATORS`; a rule by version may name
    another estimator of the same harness, `claude_code_usage`)."""
    preset: str
    """The preset policy a transcript of it is replayed with by default (`inspector.shaping`)."""
    rules: bool = False
    """It has compaction rules by version (`inspector.harness_rules.RULES`, keyed by `id`)."""
    finder: str | None = None
    """`"module:function"` that lists its sessions on this machine (`inspector.live.discovery`:
    called as `finder(env, cwd, home, now)`, yields `SessionInfo`); None: not discovered, a file
    is opened by its path."""
    locations: str = ""
    """Where its sessions live, in words (the finder's docstring says it in full)."""
    follow_reader: str | None = None
    """`"module:Class"` of its incremental reader (`inspector.live.follow`: fed the bytes a
    growing file gains); None: a growing file is read again whole."""
    aliases: tuple[str, ...] = ()
    """More spellings accepted as input for it (a preset name, `harness_id`)."""
    protects: tuple[tuple[str, str], ...] = ()
    """The sources it protects through a compaction, and why in its own terms: (`SourceKind`
    value, sentence), read by `inspector.shaping.policy.pin_reason` (docs/notes/claude-code-transcripts.md
    §4.1 "What survives compaction"; docs/notes/opencode-codex.md §A3, §B3 step 4). Empty: the harness
    pins by priority (OpenCollab's floor, `PIN_FLOOR`; docs/notes/opencollab.md §2)."""
    also_restored: str = ""
    """What it keeps through a compaction beyond the sources it protects, in one sentence."""


HARNESSES: dict[HarnessId, Harness] = {
    h.id: h
    for h in (
        Harness(
            id="claude-code",
            label="Claude Code",
            format="claude-code",
            reader="inspector.formats.claude_code:ClaudeCodeFormat",
            estimator="claude_code",
            preset="claude-code",
            rules=True,
            finder="inspector.live.discovery:claude_code_sessions",
            locations="$CLAUDE_CONFIG_DIR/projects, ~/.claude/projects, ~/.config/claude/projects",
            follow_reader="inspector.formats.claude_code:ClaudeCodeReader",
            aliases=("claude",),
            protects=(
                ("overhead", "sent by Claude Code with every request (system prompt and tool definitions)"),
                (
                    "project_instructions",
                    "re-attached by Claude Code after compaction (memory files: CLAUDE.md, user and project memory)",
                ),
                (
                    "skill",
                    "re-attached by Claude Code after compaction (invoked skills, up to 5,000 tokens each, "
                    "25,000 in all)",
                ),
            ),
            also_restored=(
                "Claude Code also re-attaches after a compaction what the transcript does not mark: the plan, "
                "the todo list and up to 5 recently read files (5,000 tokens each, 50,000 in all)"
            ),
        ),
        Harness(
            id="codex",
            label="Codex",
            format="codex",
            reader="inspector.formats.codex:CodexFormat",
            estimator="codex",
            preset="codex",
            rules=True,
            finder="inspector.live.discovery:codex_sessions",
            locations="$CODEX_HOME/sessions or ~/.codex/sessions",
            follow_reader="inspector.formats.codex:CodexReader",
            protects=(
                (
                    "identity",
                    "re-injected by Codex after compaction (initial context: base and developer instructions, "
                    "environment)",
                ),
                (
                    "project_instructions",
                    "re-injected by Codex after compaction (initial context: AGENTS.md)",
                ),
                ("skill", "re-injected by Codex after compaction (initial context: skills instructions)"),
                ("overhead", "sent by Codex with every request (tool definitions)"),
            ),
            also_restored="Codex also keeps the most recent user messages, newest first, up to 20,000 tokens",
        ),
        Harness(
            id="opencode",
            label="opencode",
            format="opencode",
            reader="inspector.formats.opencode:OpencodeFormat",
            estimator="opencode",
            preset="opencode",
            rules=True,
            finder="inspector.live.discovery:opencode_sessions",
            locations="$XDG_DATA_HOME/opencode or ~/.local/share/opencode (opencode*.db, storage/)",
            protects=(
                ("identity", "sent by opencode with every request (its system parts)"),
                ("overhead", "sent by opencode with every request (system prompt and tool definitions)"),
                ("skill", "opencode: prune never clears `skill` output (PRUNE_PROTECTED_TOOLS)"),
            ),
            also_restored="opencode also keeps a tail of the latest turns (at most 2, within 2,000-15,000 tokens)",
        ),
        Harness(
            id="opencollab",
            label="OpenCollab",
            format="opencollab",
            reader="inspector.formats.opencollab:OpencollabFormat",
            estimator="heuristic",
            preset="opencollab",
            finder="inspector.live.discovery:opencollab_sessions",
            locations=".opencollab/sessions/<run>/ below the current folder",
        ),
        Harness(
            id="chat",
            label="chat JSON",
            format="generic",
            reader="inspector.formats.generic:GenericChatFormat",
            estimator="heuristic",
            preset="opencollab",
            locations="not looked for: open the file by its path",
        ),
    )
}
"""Id -> harness, in detection order: most specific reader first (chat JSON, the loosest, last)."""

BY_FORMAT: dict[str, Harness] = {h.format: h for h in HARNESSES.values()}
"""`Transcript.format` -> its harness."""


def normalized(name: str) -> str:
    """A spelling as compared: lower case, `-` and spaces as `_` ("Claude Code" = "claude_code")."""
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def harness_id(name: str) -> HarnessId:
    """The harness any of its spellings names (id, label, format, alias, in any case, `-` or
    `_`), or ValueError naming the ids."""
    key = normalized(name)
    for h in HARNESSES.values():
        if key in {normalized(s) for s in (h.id, h.label, h.format, *h.aliases)}:
            return h.id
    raise ValueError(f"unknown harness {name!r} (known: {', '.join(HARNESSES)})")


def of_format(transcript_format: str | None) -> Harness | None:
    """The harness whose reader writes `transcript_format` (None: no harness's)."""
    return BY_FORMAT.get(transcript_format or "")


def label_of(transcript_format: str | None) -> str | None:
    """The label of the harness that writes `transcript_format`."""
    h = of_format(transcript_format)
    return h.label if h is not None else None


def labels() -> str:
    """Every harness's label, in detection order ("Claude Code, Codex, ...")."""
    return ", ".join(h.label for h in HARNESSES.values())


def resolve(target: str) -> Any:
    """The object `"module:attribute"` names (imported now)."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


assert set(HARNESSES) == set(get_args(HarnessId)), "every id has its entry"

__all__ = [
    "BY_FORMAT",
    "HARNESSES",
    "Harness",
    "HarnessId",
    "harness_id",
    "label_of",
    "labels",
    "normalized",
    "of_format",
    "resolve",
]
