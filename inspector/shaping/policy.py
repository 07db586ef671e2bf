"""Policies: named pipeline compositions with their parameters, presets, and loading from files.

A policy is a preset name (`opencollab`, `no_history_compaction`, and the harness presets
`claude-code`, `opencode`, `codex`; `default` is OpenCollab's own name for `opencollab`), a
TOML/JSON file of parameters over a base preset, or OpenCollab's
team-file form `context: {policy: no_history_compaction, tool_result_budget: 20000}` written as a
TOML/JSON `context` table. Unknown names and keys are errors (`PolicyError`, one line).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import msgspec
from msgspec import Struct

from inspector.errors import UserError
from inspector.harness_rules import HARNESS_NAMES, resolve, resolve_for
from inspector.harnesses import HARNESSES
from inspector.model import PIN_FLOOR, Message, Source, SourceKind, Transcript
from inspector.tokens.harness import ESTIMATORS

from .auto_compact import AutoCompact
from .base import Layer
from .budget import (
    DEFAULT_OUTPUT_RESERVE,
    DEFAULT_SAFETY_BUFFER,
    DEFAULT_TARGET_RATIO,
    DEFAULT_TOOL_RESULT_BUDGET,
    MIN_TOOL_RESULT_BUDGET,
    Budget,
)
from .claude_code import (
    CACHE_LIFETIME_MINUTES,
    CLAUDE_CODE_TOOLS,
    PREVIEW_THRESHOLD,
    FullCompact,
    LargeResultPreview,
    Microcompact,
)
from .codex import TOOL_OUTPUT_LIMIT_BYTES, CodexCompact, MiddleTruncate
from .eager_clear import DEFAULT_EAGER_KEEP, EagerToolOutputClear
from .history_snip import OldHistorySnip
from .opencode import OpencodeCompact, OpencodePrune
from .pinning import FLOOR, Pins
from .pipeline import Pipeline
from .summarize import ExtractiveSummarizer, RecordedSummarizer, Summarizer
from .tool_budget import PerToolResultBudget
from .tool_output_clear import ToolOutputClear
from .tools import DEFAULT_COMPACTABLE_TOOLS, canonical_tool


class PolicyError(UserError, ValueError):
    """A policy that cannot be used: unknown name, unknown key, bad value. The message is one line."""


LayerFactory = Callable[["Policy", "Summarizer | None"], Layer]
"""Builds one layer from a policy (and the summarizer chosen for it)."""

LAYER_FACTORIES: dict[str, LayerFactory] = {
    "eager_clear": lambda p, s: EagerToolOutputClear(p.compactable_tools, keep=p.eager_keep),
    "per_tool_budget": lambda p, s: PerToolResultBudget(),
    "tool_output_clear": lambda p, s: ToolOutputClear(p.compactable_tools),
    "old_history_snip": lambda p, s: OldHistorySnip(),
    "auto_compact": lambda p, s: AutoCompact(s),
    # Claude Code
    "large_result_preview": lambda p, s: LargeResultPreview(),
    "microcompact": lambda p, s: Microcompact(p.compactable_tools, idle_gap_minutes=p.idle_gap_minutes),
    "full_compact": lambda p, s: FullCompact(s),
    # opencode
    "opencode_prune": lambda p, s: OpencodePrune(),
    "opencode_compact": lambda p, s: OpencodeCompact(s),
    # Codex
    "middle_truncate": lambda p, s: MiddleTruncate(),
    "codex_compact": lambda p, s: CodexCompact(s),
}
"""Layer name -> factory. Harness presets that need layers of their own register them here."""

SUMMARIZING_LAYERS = frozenset({"auto_compact", "full_compact", "opencode_compact", "codex_compact"})
"""Layers that need a summarizer (off without one)."""

SUMMARIZER_NAMES = ("extractive", "recorded", "model")

TRIGGER_ESTIMATORS = tuple(ESTIMATORS)
"""The harness estimators a policy may name for its trigger decisions (`inspector.tokens.harness`)."""


def normalize_name(name: str) -> str:
    """Policy names compare in lower case with `-` and spaces as `_` ("Claude-Code" = "claude_code")."""
    return name.strip().lower().replace("-", "_").replace(" ", "_")


class Policy(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A named pipeline composition with its parameters (docs/DESIGN.md §2.5).

    `layers` are names from `LAYER_FACTORIES`, in order. `summarizer` names the auto-compact
    summarizer ("extractive", "recorded", "model") or is None (auto compact off). `results_kept`
    and `groups_kept` override the window-derived counts; `blocking_buffer` sets a blocking line.
    Harness parameters: `trigger_estimator` names the estimator the harness makes its trigger
    decisions with (`inspector.tokens.harness`: heuristic, claude_code, opencode, codex);
    `max_output` caps the output reserve (reserve = min(output_reserve, max_output));
    `trigger_ratio` puts the trigger at that share of the window instead (Codex: 0.9);
    `idle_gap_minutes` is microcompact's time trigger (None: off).
    `rules` names the harness whose table of rules by version (`inspector.harness_rules`) sets the
    trigger, output reserve, blocking and warning lines, the microcompact and the estimator, for
    the version the transcript records (claude-code, codex, opencode; None: the lines come from
    `output_reserve`, `safety_buffer`, `trigger_ratio` and `blocking_buffer`). A policy file that
    sets one of those four leaves the table, unless it names `rules` itself.
    """

    name: str
    description: str = ""
    layers: tuple[str, ...]
    tool_result_budget: int = DEFAULT_TOOL_RESULT_BUDGET
    compactable_tools: tuple[str, ...] = DEFAULT_COMPACTABLE_TOOLS
    results_kept: int | None = None
    groups_kept: int | None = None
    eager_keep: int = DEFAULT_EAGER_KEEP
    summarizer: str | None = "extractive"
    output_reserve: int = DEFAULT_OUTPUT_RESERVE
    safety_buffer: int = DEFAULT_SAFETY_BUFFER
    target_ratio: float = DEFAULT_TARGET_RATIO
    blocking_buffer: int | None = None
    trigger_estimator: str = "heuristic"
    max_output: int | None = None
    trigger_ratio: float | None = None
    idle_gap_minutes: float | None = None
    rules: str | None = None

    def __post_init__(self) -> None:
        """Every value checked beyond its type when a policy is made (by name, from a file, or by
        `replace`), field by field in the order they are declared: a ValueError names the first
        field with a problem. Names are normalized once checked."""
        for name in self.__struct_fields__:
            check = _CHECKS.get(name)
            problem = check(getattr(self, name)) if check is not None else None
            if problem is not None:
                raise ValueError(f"{name}: {problem}")
        set_field = msgspec.structs.force_setattr
        set_field(self, "trigger_estimator", normalize_name(self.trigger_estimator))
        set_field(
            self, "compactable_tools", tuple(dict.fromkeys(canonical_tool(t) for t in self.compactable_tools))
        )
        if self.summarizer is not None and self.summarizer.strip().lower() in _NO_SUMMARIZER:
            set_field(self, "summarizer", None)
        if self.rules is not None:
            key = self.rules.strip().lower().replace("_", "-")
            set_field(self, "rules", None if key in _NO_SUMMARIZER else key)

    def budget(
        self,
        window: int | None,
        *,
        transcript: Transcript | None = None,
        model: str | None = None,
        version: str | None = None,
    ) -> Budget:
        """Every threshold for `window` (None: unknown) under this policy.

        With `rules`, the harness's rule for the version `transcript` records (or `version`; none:
        the newest rule) on `window` with `model` (default: the transcript's), its max output
        capped by `max_output` where set (`rules.resolve`). Without: the output reserve is
        min(output_reserve, max_output); with `trigger_ratio`, the trigger is floor(window * ratio)
        and the safety buffer is what lies between it and the reserve.
        """
        if self.rules is not None and window is not None and window > 0:
            if version is not None or transcript is None:
                resolved = resolve(self.rules, version, window, model, max_output=self.max_output)
            else:
                resolved = resolve_for(self.rules, transcript, window, model, max_output=self.max_output)
            ruled = Budget.for_rule(
                resolved,
                target_ratio=self.target_ratio,
                tool_result_budget=self.tool_result_budget,
                groups_kept=self.groups_kept,
                results_kept=self.results_kept,
            )
            return msgspec.structs.replace(ruled, pins=self.pins)
        reserve = (
            self.output_reserve if self.max_output is None else min(self.output_reserve, self.max_output)
        )
        buffer = self.safety_buffer
        if self.trigger_ratio is not None and window is not None and window > 0:
            trigger = max(2, math.floor(Fraction(str(self.trigger_ratio)) * window))
            reserve = max(0, min(reserve, window - trigger))
            buffer = max(0, window - reserve - trigger)
        plain = Budget.for_window(
            window,
            output_reserve=reserve,
            safety_buffer=buffer,
            target_ratio=self.target_ratio,
            tool_result_budget=self.tool_result_budget,
            groups_kept=self.groups_kept,
            results_kept=self.results_kept,
            blocking_buffer=self.blocking_buffer,
        )
        return plain if self.pins is FLOOR else msgspec.structs.replace(plain, pins=self.pins)

    @property
    def pins(self) -> Pins:
        """Which messages this policy's layers may not touch (`inspector.shaping.pins`): under a
        harness's rules (claude-code, codex, opencode), the source kinds that harness protects
        (`PROTECTIONS`) and the overhead; otherwise OpenCollab's priority >= 70 (`FLOOR`)."""
        harness = self.rules if self.rules in PROTECTIONS else None
        if harness is None:
            return FLOOR
        found = _HARNESS_PINS.get(harness)
        if found is None:
            found = _HARNESS_PINS[harness] = Pins.protecting(p.kind for p in PROTECTIONS[harness])
        return found

    def make_summarizer(self, messages: Sequence[Message] = ()) -> Summarizer | None:
        """The summarizer this policy names; "recorded" reads the transcript's `messages`."""
        if self.summarizer is None:
            return None
        if self.summarizer == "extractive":
            return ExtractiveSummarizer()
        if self.summarizer == "recorded":
            return RecordedSummarizer(messages)
        raise PolicyError(
            f"policy {self.name!r} uses the model summarizer: pass summarizer=ModelSummarizer(call) to pipeline()"
        )

    def pipeline(self, *, summarizer: Summarizer | None = None, messages: Sequence[Message] = ()) -> Pipeline:
        """A fresh pipeline of this policy's layers (with its own summary cache).

        `summarizer` overrides the one the policy names; `messages` (the transcript's messages, in
        order) feed the "recorded" summarizer.
        """
        needs_summary = any(name in SUMMARIZING_LAYERS for name in self.layers)
        chosen = (
            summarizer
            if summarizer is not None
            else (self.make_summarizer(messages) if needs_summary else None)
        )
        return Pipeline(LAYER_FACTORIES[name](self, chosen) for name in self.layers)


_NO_SUMMARIZER = ("", "none", "off")
"""What a policy may write for "no summarizer" (auto compact off)."""


def _layer_problem(layer: str) -> str | None:
    if layer in LAYER_FACTORIES:
        return None
    return f"unknown layer {layer!r} (known: {', '.join(LAYER_FACTORIES)})"


def _layers_repeat_problem(layers: tuple[str, ...]) -> str | None:
    return "a layer appears twice" if len(set(layers)) != len(layers) else None


def _layers_problem(layers: tuple[str, ...]) -> str | None:
    for layer in layers:
        problem = _layer_problem(layer)
        if problem is not None:
            return problem
    return _layers_repeat_problem(layers)


def _summarizer_problem(name: str | None) -> str | None:
    if name is None or name.strip().lower() in _NO_SUMMARIZER or name in SUMMARIZER_NAMES:
        return None
    return f"unknown summarizer {name!r} (known: {', '.join(SUMMARIZER_NAMES)}, none)"


def _rules_problem(name: str | None) -> str | None:
    if name is None or name.strip().lower() in _NO_SUMMARIZER:
        return None
    if name.strip().lower().replace("_", "-") in HARNESS_NAMES:
        return None
    return f"unknown rules {name!r} (known: {', '.join(HARNESS_NAMES)}, none)"


def _estimator_problem(name: str) -> str | None:
    if normalize_name(name) in TRIGGER_ESTIMATORS:
        return None
    return f"unknown trigger estimator {name!r} (known: {', '.join(TRIGGER_ESTIMATORS)})"


def _at_least(floor: int, words: str = "") -> Callable[[int | None], str | None]:
    """A number not below `floor` (`words`: what to say of one that is; "must be >= floor")."""
    said = words or f"must be >= {floor}"
    return lambda v: None if v is None or v >= floor else said


def _above_zero(high: float, high_open: bool, words: str) -> Callable[[float | None], str | None]:
    """A finite number in (0, high], or (0, high) when `high_open`."""

    def problem(v: float | None) -> str | None:
        if v is None:
            return None
        fits = math.isfinite(v) and v > 0 and (v < high if high_open else v <= high)
        return None if fits else words

    return problem


_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "layers": _layers_problem,
    "tool_result_budget": _at_least(MIN_TOOL_RESULT_BUDGET, f"must be at least {MIN_TOOL_RESULT_BUDGET}"),
    "results_kept": _at_least(0),
    "groups_kept": _at_least(1),
    "eager_keep": _at_least(0),
    "summarizer": _summarizer_problem,
    "output_reserve": _at_least(0),
    "safety_buffer": _at_least(0),
    "target_ratio": _above_zero(1, True, "must be between 0 and 1 (exclusive)"),
    "trigger_estimator": _estimator_problem,
    "max_output": _at_least(1),
    "trigger_ratio": _above_zero(1, False, "must be between 0 (exclusive) and 1"),
    "idle_gap_minutes": _above_zero(math.inf, False, "must be > 0 (or omitted: no time trigger)"),
    "rules": _rules_problem,
}
"""Policy field -> what is wrong with a value of it (None: nothing), for `Policy.__post_init__`."""


OPENCOLLAB = Policy(
    name="opencollab",
    description="OpenCollab's default: per-tool budget, tool output clear, old history snip, auto compact.",
    layers=("per_tool_budget", "tool_output_clear", "old_history_snip", "auto_compact"),
    summarizer="extractive",
)
NO_HISTORY_COMPACTION = Policy(
    name="no_history_compaction",
    description="The per-tool result budget only: full history kept (research runs).",
    layers=("per_tool_budget",),
    summarizer=None,
)

CLAUDE_CODE = Policy(
    name="claude-code",
    description=(
        "Claude Code, as the version that wrote the session had it (its table of rules by version): "
        "tool results over 50,000 chars become a 2 KB preview; microcompact clears old "
        "Read/Bash/Grep/Glob/WebSearch/WebFetch/Edit/Write results; auto compact at the version's "
        "line (2.1.21+: window - min(max output, 20,000) - 13,000, 167,000 for 200k; 1.0.113-2.1.20: "
        "window - max output - 13,000, 155,000; older: 0.92 x (window - max output)) restores up to "
        "5 read files."
    ),
    layers=("large_result_preview", "microcompact", "full_compact"),
    tool_result_budget=PREVIEW_THRESHOLD,
    compactable_tools=CLAUDE_CODE_TOOLS,
    summarizer="recorded",
    idle_gap_minutes=CACHE_LIFETIME_MINUTES,
    trigger_estimator="claude_code",
    rules="claude-code",
)
"""Claude Code (`services/compact/autoCompact.ts`, `microCompact.ts`; docs/notes/claude-code-transcripts.md
§2.4, §4, §7.2; docs/notes/harness-versions.md §1; docs/seeds/001):

- the auto-compact, blocking and warning lines, the output reserve, the microcompact and the
  estimator are those of the version the transcript records (`rules.RULES`, where each figure
  cites its evidence: the corpus' recorded compactions and docs/notes/harness-versions.md); unknown or
  newer than every rule: the newest rule. `max_output` stands for `CLAUDE_CODE_MAX_OUTPUT_TOKENS`;
- tool results over 50,000 characters become a `<persisted-output>` 2 KB preview;
- microcompact: Read, Bash, Grep, Glob, WebSearch, WebFetch, Edit, Write (`COMPACTABLE_TOOLS`);
- after compaction up to 5 recently read files are restored, 5,000 tokens each, 50,000 in all;
  the circuit breaker opens after 3 consecutive failures;
- trigger decisions use Claude Code's own figure, `>=` the line: the last response's usage
  (1.0.x, 2.0.x), plus characters/4 of what came after it (2.1, `tokenCountWithEstimation`);
- the summary is the one the transcript recorded where there is one (else extractive).
"""

OPENCODE = Policy(
    name="opencode",
    description=(
        "opencode: prune clears tool output beyond the newest 40,000 tokens (skipping the last 2 user "
        "turns and `skill` output) when more than 20,000 would be freed; on overflow (the version's "
        "line; 1.18: context - min(max output, 32,000) - min(20,000, max output)) it summarizes all "
        "but a tail of recent turns."
    ),
    layers=("opencode_prune", "opencode_compact"),
    summarizer="recorded",
    trigger_estimator="opencode",
    rules="opencode",
)
"""opencode (`packages/opencode/src/session/compaction.ts`, `overflow.ts`; docs/notes/opencode-codex.md
§A2-§A4; docs/seeds/002):

- overflow by the version's rule (`rules.RULES`): 1.18.x (overflow.ts @31e22f65) usable =
  context - maxOutputTokens - reserved, maxOutputTokens = min(limit.output, 32,000), reserved =
  min(`COMPACTION_BUFFER` 20,000, maxOutputTokens): 148,000 for 200,000; older versions by date
  (assumed, see the table);
- prune (`PRUNE_MINIMUM` 20,000, `PRUNE_PROTECT` 40,000, `PRUNE_PROTECTED_TOOLS` ["skill"]) walks
  newest to oldest, skips the last 2 user turns, protects the newest 40,000 tokens of tool
  output, clears only when more than 20,000 would be freed; cleared output reads
  `[Old tool result content cleared]`;
- compaction keeps a tail of at most 2 recent turns within clamp(usable * 0.25, 2,000, 15,000)
  tokens and summarizes the rest;
- sizes inside its layers are `Token.estimate` (characters / 4); trigger decisions use the last
  step's reported tokens (input + output + cache), `>=` usable.
"""

CODEX = Policy(
    name="codex",
    description=(
        "Codex: tool output truncated to 10,000 bytes from the middle; auto compaction at the "
        "version's line (0.48+: 90% of the window) keeps the recent user messages (up to 20,000 "
        "tokens) plus one summary message."
    ),
    layers=("middle_truncate", "codex_compact"),
    tool_result_budget=TOOL_OUTPUT_LIMIT_BYTES,
    summarizer="recorded",
    trigger_estimator="codex",
    rules="codex",
)
"""Codex CLI (`codex-rs/core/src/compact.rs`, `truncate.rs`, `model_family.rs`; docs/notes/opencode-codex.md
§B3-§B4):

- auto compaction by the version's rule (`rules.RULES`; 0.48 and later `context_window * 9 / 10`,
  0.40-0.47 a fixed limit for gpt-5-codex only, none before): the trigger is 90% of the window given; a rollout
  states 95% of the model's window as `model_context_window`, so for Codex's own line pass
  `inspector.tokens.harness.harness_window(transcript)`, 272,000 for a 258,400 rollout);
- tool output truncated to `TruncationPolicy::Bytes(10_000)` from the middle (`tool_result_budget`);
- the compacted history is the recent real user messages, newest first up to
  `COMPACT_USER_MESSAGE_MAX_TOKENS` 20,000 (bytes / 4), then one summary message with
  `SUMMARY_PREFIX`;
- trigger decisions use `last_token_usage.total_tokens` + bytes/4 of what came after it, `>=`.
"""


class Protection(Struct, frozen=True):
    """What a harness protects of one kind of source, and why, in the harness's own terms."""

    kind: SourceKind
    why: str


PROTECTIONS: dict[str, tuple[Protection, ...]] = {
    h.id: tuple(Protection(SourceKind(kind), why) for kind, why in h.protects)
    for h in HARNESSES.values()
    if h.protects
}
"""Harness (a policy's `rules`) -> the sources it protects, and why (the registry's `protects`).
A policy without harness rules is OpenCollab's: it pins priority >= 70 whatever the kind
(`PIN_FLOOR`)."""

_HARNESS_PINS: dict[str, Pins] = {}
"""Harness -> its `Pins`, made once (`Policy.pins`)."""

ALSO_RESTORED: dict[str, str] = {h.id: h.also_restored for h in HARNESSES.values() if h.protects}
"""Harness -> what it keeps through a compaction beyond the sources it protects (one sentence)."""

HARNESS_TITLES: dict[str, str] = {h.id: h.label for h in HARNESSES.values()}
"""Harness (a policy's `rules`) -> its name in sentences."""


def harness_of(policy: Policy | str) -> str | None:
    """The harness whose protections a policy follows (claude-code, codex, opencode), or None
    for OpenCollab's (its own presets, and every policy without harness rules). A preset's name
    is read as that preset."""
    if isinstance(policy, str):
        key = PRESET_ALIASES.get(normalize_name(policy), normalize_name(policy))
        found = PRESETS.get(key)
        if found is None:
            return None
        policy = found
    return policy.rules if policy.rules in PROTECTIONS else None


def pins_of(policy: Policy | str) -> Pins:
    """The pin rule of a policy, or of the preset a name reads as (`Policy.pins`; an unknown name:
    OpenCollab's floor)."""
    if isinstance(policy, str):
        key = PRESET_ALIASES.get(normalize_name(policy), normalize_name(policy))
        found = PRESETS.get(key)
        return found.pins if found is not None else FLOOR
    return policy.pins


def pin_reason(policy: Policy | str, source: Source) -> str:
    """Why a source is pinned, or not, in the harness's terms, by the rule the policy's layers
    follow (`pins_of`): "re-attached by Claude Code after compaction (...)", "OpenCollab: priority
    80 >= 70"; a source the harness does not protect is "not pinned: ..." (under Claude Code the
    task too: it keeps the task only as its summary and recent messages carry it)."""
    harness = harness_of(policy)
    if harness is None:
        if source.priority >= PIN_FLOOR:
            return f"OpenCollab: priority {source.priority} ≥ {PIN_FLOOR}"
        return f"not pinned: priority {source.priority} < {PIN_FLOOR}"
    title = HARNESS_TITLES[harness]
    if pins_of(policy).source(source):
        for p in PROTECTIONS[harness]:
            if p.kind is source.kind:
                return p.why
        return f"sent by {title} with every request (system prompt and tool definitions)"
    if source.kind is SourceKind.TASK:
        return f"not pinned: {title} keeps the task only as its summary and recent messages carry it"
    return f"not pinned: {title} does not protect {source.kind.value.replace('_', ' ')} sources"


def protections(policy: Policy | str) -> list[str]:
    """What a policy's harness protects, one sentence each (the last: what else it keeps)."""
    harness = harness_of(policy)
    if harness is None:
        return [f"OpenCollab pins every source of priority ≥ {PIN_FLOOR} (identity, team, skills, task)"]
    out = [f"{p.kind.value.replace('_', ' ')}: {p.why}" for p in PROTECTIONS[harness]]
    out.append(ALSO_RESTORED[harness])
    return out


PRESETS: dict[str, Policy] = {}
"""Normalized name -> preset. Harness presets (claude-code, opencode, codex) register here."""
PRESET_ALIASES: dict[str, str] = {}
"""Normalized alias -> normalized preset name."""


def register_preset(policy: Policy, aliases: Iterable[str] = ()) -> None:
    """Make `policy` loadable by its name and by each alias."""
    key = normalize_name(policy.name)
    PRESETS[key] = policy
    for alias in aliases:
        PRESET_ALIASES[normalize_name(alias)] = key


register_preset(OPENCOLLAB, aliases=("default",))
register_preset(NO_HISTORY_COMPACTION)
register_preset(CLAUDE_CODE, aliases=HARNESSES["claude-code"].aliases)
register_preset(OPENCODE)
register_preset(CODEX)

PRESET_FOR_FORMAT: dict[str, str] = {h.format: h.preset for h in HARNESSES.values()}
"""`Transcript.format` -> the preset of the harness that wrote it (`Harness.preset`: the replay's
default policy). Formats not listed get opencollab."""


def preset_for_format(transcript_format: str | None) -> Policy:
    """The preset of the harness that writes `transcript_format` (opencollab when unknown)."""
    return preset(PRESET_FOR_FORMAT.get(transcript_format or "", "opencollab"))


def preset(name: str) -> Policy:
    """The preset called `name` (any case, `-` or `_`), or PolicyError naming the known ones."""
    key = normalize_name(name)
    key = PRESET_ALIASES.get(key, key)
    found = PRESETS.get(key)
    if found is None:
        known = ", ".join(sorted(p.name for p in PRESETS.values()))  # as users write them: claude-code
        raise PolicyError(f"unknown policy {name!r} (known: {known})")
    return found


PARAMETER_KEYS = tuple(k for k in Policy.__struct_fields__ if k != "name")
FILE_KEYS = ("name", "base", *PARAMETER_KEYS)
CONTEXT_KEYS = ("policy", *PARAMETER_KEYS)


def _looks_like_path(value: str | os.PathLike[str]) -> bool:
    if not isinstance(value, str):
        return True
    return Path(value).is_file() or value.lower().endswith((".toml", ".json")) or os.sep in value


OWN_LINES = ("output_reserve", "safety_buffer", "trigger_ratio", "blocking_buffer")
"""Parameters that set a policy's lines itself: a file that gives one leaves the harness table."""


def _build(base: Policy, name: str, params: Mapping[str, Any], where: str) -> Policy:
    merged = {**msgspec.structs.asdict(base), **params, "name": name}
    if "rules" not in params and any(k in params for k in OWN_LINES):
        merged["rules"] = None
    try:
        return msgspec.convert(merged, Policy, strict=False)  # (20000.0 and "20000" are 20000)
    except msgspec.ValidationError as exc:
        message, _, at = str(exc).partition(" - at `$.")
        message = message.replace("`", "")
        if at:  # a value of another type: "Expected `int`, got `str` - at `$.eager_keep`"
            message = f"{at.rstrip('`')}: {message[:1].lower()}{message[1:]}"
        raise PolicyError(f"{where}: {message}") from None  # (a check's message names its field)


def policy_from_dict(data: Mapping[str, Any], where: str = "policy", default_name: str = "custom") -> Policy:
    """A policy from parsed file content: the team-file `context` form or flat parameters.

    Flat: `name`, `base` (a preset, default opencollab) and parameters. Team file: a single
    `context` key holding a preset name or a table with `policy` and parameters. Validated whole
    by the pydantic models of `policy_file` (imported here, at the door, not before): every
    problem with its location, in one line (`PolicyError`).
    """
    from .policy_file import parse_policy

    return parse_policy(data, where, default_name)


def load_policy(name_or_path: str | os.PathLike[str]) -> Policy:
    """A preset by name, or a policy file (TOML, or JSON for `.json`). Errors: PolicyError, one line."""
    if isinstance(name_or_path, str) and not _looks_like_path(name_or_path):
        return preset(name_or_path)
    path = Path(name_or_path)
    where = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise PolicyError(f"policy file not found: {where}") from None
    except OSError as exc:
        raise PolicyError(f"cannot read policy file {where}: {exc.strerror or exc}") from None
    import tomllib  # (only where a policy file is read: 2-4 ms of every command's start)

    try:
        text = raw.decode("utf-8")
        data: Any = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except UnicodeDecodeError:
        raise PolicyError(f"{where}: not UTF-8 text") from None
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        kind = "JSON" if path.suffix.lower() == ".json" else "TOML"
        raise PolicyError(f"{where}: not valid {kind}: {exc}") from None
    if not isinstance(data, Mapping):
        raise PolicyError(f"{where}: expected a table of policy settings")
    return policy_from_dict(data, where, default_name=path.stem)
