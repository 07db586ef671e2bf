"""Each harness as it was: its compaction rules by version.

This module is THE table of harness thresholds, beside the harness registry (`harnesses.py`, whose
`Harness.rules` says which harnesses have rules here). `Policy.budget` reads it for the harness
presets (`claude-code`, `codex`, `opencode`), and the layers, the gauge and the report read that
budget; the harness estimators (`inspector.tokens.harness.estimator_for`) read which estimator a
version decided with. Nothing else writes a harness threshold down. The models the rules apply to
(window, max output) are the models table, `inspector.model.windows.MODELS`.

It imports only the registry and the models table, and sits just above the ledger's types
(tests/unit/test_architecture.py `LAYERS`), so `tokens` and `shaping` both read it downward.

The version comes from the transcript (`recorded_version`): every Claude Code line carries
`version`, a Codex rollout's `session_meta` carries `cli_version`, an opencode session its
`version`. A version no rule covers (not recorded, or newer than every rule) gets the harness's
newest rule, and the rule's text says so (`ResolvedRule.text`).

Sources. `notes` = `docs/notes/harness-versions.md` (each figure there with its citation and
trust: CL:L<n> the Claude Code changelog line, `autoCompact.ts` the 2.1.88 source, the 1.0.34
bundle `chunks.94.mjs`, Reddit 1qnsmk0 the 2.1.19 binary, #N issues); `opencode-codex` =
`docs/notes/opencode-codex.md`; `corpus` = `../shared/corpus/` with `FACTS.json`.

The corpus' recorded auto compactions (request numbers on the active branch; "context" the
reported input, "out" the output, of the last request before the compaction):

| version | file | after request | context + out of it | preTokens | before it |
|---|---|---|---|---|---|
| 1.0.113 | claude-code-json-array/lroystack-24133cc4-chat.json | 46 | 154,935 + 11 (stale) | 155,431 | request 45: 154,599 + 7 (stale) |
| 1.0.113 | same | 161 | 155,084 + 157 | 155,241 | request 160: 154,261 + 280 = 154,541 |
| 2.0.22 | claude-code/thomasjmcgovern-fb36f7a7.jsonl | 77 | 157,134 + 2 (stale) | 157,932 | request 76: 154,500 + 2 (stale) |
| 2.1.39 | claude-code/spotter-fa812bfe/fa812bfe-….jsonl | 126 | 166,874 + 25 (stale) | 167,117 | request 125: 166,611 + 118 |

What they show:
- 1.0.113 counts the last response's usage alone: the second compaction's preTokens is exactly
  155,084 + 157, although tool results and a user turn came after that response (their
  characters/4 would add 111). 2.0.22 too: 157,932 - 157,134 = 798 is less than the 1,652
  characters/4 of what followed response 77, so 798 is that response's final output (the file
  keeps a streaming snapshot of 2). 2.1.39 adds characters/4 of what followed: 166,874 + the
  output 145 + 98 = 167,117 (`tokenCountWithEstimation`, 2.1.88 `utils/tokens.ts:226-261`).
- 1.0.113 does not follow the 0.92 rule of the 1.0.34 bundle: its line would be 0.92 x (200,000
  - 32,000) = 154,560, and request 45 already left 154,599 + 7 = 154,606 >= 154,560, so that rule
  compacts after request 45, not 46. `W - maxOut - 13,000` = 155,000 puts it after 46 (154,599
  + the final output of 45, about 275, is under 155,000; 154,935 + 496 = 155,431 is not) and
  after 161 (154,541 under, 155,241 over). So the 13,000-buffer rule had arrived by 1.0.113,
  which narrows the notes' bracket (after ~1.0.68, by 2.0.13) to after ~1.0.70 and by 1.0.113.
- 2.0.22 (Sonnet 4.5, max output 32,000 as Claude Code resolves it): 155,000 again. Request 76
  left 154,500 + its output (a 2-token snapshot; about 213 by its blocks) under it; request 77
  left 157,932. preTokens overshoots the line by a turn's growth, as the notes say (#29634,
  #44147): 157,932 is what the harness held when it compacted, not where its line is.
- 2.1.39 (Opus 4.6): window - min(max output, 20,000) - 13,000 = 167,000; request 125 left
  166,590 by the harness's estimate, request 126 left 167,117.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

from msgspec import Struct

from inspector.harnesses import HARNESSES, HarnessId
from inspector.model.windows import model_spec

if TYPE_CHECKING:
    from inspector.model import Transcript

# -- versions --------------------------------------------------------------------------------------

Version = tuple[int, ...]
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str | None) -> Version | None:
    """(major, minor, patch) of "2.0.22", "v0.100.0-alpha.3", "rust-v0.40.0"; None if not one."""
    if not text:
        return None
    m = _VERSION.search(text)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def _upper(last: str) -> Version:
    """The highest version a range's `last` covers: "0.39.x" is every 0.39 release."""
    if last.endswith(".x"):
        head = parse_version(last[:-2] + ".0")
        assert head is not None
        return head[0], head[1], 1 << 30
    got = parse_version(last)
    assert got is not None
    return got


# -- the rules -------------------------------------------------------------------------------------

Harness = HarnessId
HARNESS_NAMES: dict[str, str] = {h.id: h.label for h in HARNESSES.values() if h.rules}
"""The harnesses with rules by version (`Harness.rules`) -> their labels."""
CLAUDE_BUFFER = 13_000
"""Claude Code `AUTOCOMPACT_BUFFER_TOKENS` (2.1.88 autoCompact.ts:62; #12004 `nx1 = 13000`; the
2.1.19 binary `jbA=13000`)."""
CLAUDE_SUMMARY_OUTPUT = 20_000
"""Claude Code `MAX_OUTPUT_TOKENS_FOR_SUMMARY`: from 2.1.21 the reserve is min(max output, this)
(autoCompact.ts:30)."""
CLAUDE_BLOCKING_BUFFER = 3_000
"""Claude Code `MANUAL_COMPACT_BUFFER_TOKENS` (autoCompact.ts:63-65; the 2.1.19 binary `xbA=3000`)."""
CLAUDE_WARNING_BELOW = 20_000
"""From the 13,000-buffer rule on, Claude Code warns this far under its line (#12004 `tyI = eyI =
20000`; autoCompact.ts:93-145)."""
OPENCODE_COMPACTION_BUFFER = 20_000
"""opencode `COMPACTION_BUFFER` (overflow.ts): reserved = min(20,000, max output)."""
OPENCODE_OUTPUT_TOKEN_MAX = 32_000
"""opencode `OUTPUT_TOKEN_MAX` (`provider/transform.ts`): `maxOutputTokens = min(limit.output,
32,000) || 32,000` (opencode-codex §A2)."""


class Microcompact(Struct, frozen=True):
    """How a harness clears old tool results without a model call, in one version range.

    `mode`: "none" (no such layer), "legacy" (clear once the compactable results hold more than
    `min_tokens` and the context is over the warning line, keeping `keep`, only if it frees at
    least `min_saving`), "time" (after an idle gap over `idle_minutes`, keeping `keep`; and under
    pressure over the trigger), "prune" (opencode prune) or "truncate" (Codex truncates each output,
    nothing later)."""

    mode: Literal["none", "legacy", "time", "prune", "truncate"]
    keep: int = 0
    min_tokens: int = 0
    min_saving: int = 0
    idle_minutes: float | None = None
    note: str = ""


class Rule(Struct, frozen=True):
    """One harness's auto-compaction rule over one version range (`first` to `last`, inclusive).

    The trigger: `fixed` (model prefix -> limit) where the model matches; else, when `auto`,
    floor(`share` x base) - `buffer` - min(`buffer_output_cap`, max output), base = the window
    (`of` "window") or the window less the output reserve (`of` "effective"); reserve = the max
    output as the harness resolves it, capped at `reserve_cap` when one is set (`reserve` False:
    none). Not `auto` and no fixed limit: no auto compaction (the line is drawn at the window).
    Blocking: `blocking_of` ("window" / "effective") less `blocking_buffer`; None: no such line.
    Warning: `warning_share` of the trigger, or `warning_below` under it.
    """

    harness: Harness
    first: str
    last: str
    trigger: str
    """The formula, as the report and the README print it."""
    evidence: str
    confidence: str
    estimator: str
    """The harness estimator (`inspector.tokens.harness.ESTIMATORS`) it decides with."""
    microcompact: Microcompact
    share: Fraction = Fraction(1)
    of: Literal["window", "effective"] = "effective"
    buffer: int = 0
    buffer_output_cap: int | None = None
    reserve: bool = True
    reserve_cap: int | None = None
    output_cap: int | None = None
    """The harness caps the model's max output itself (opencode: 32,000)."""
    era_a_output: bool = False
    """Claude Code ≤1.0.x: max output 8,192 for a `3-5` or `haiku` model, else 32,000 (1.0.34
    bundle chunks.94.mjs:2044-2052), not the model table's."""
    fixed: tuple[tuple[str, int], ...] = ()
    auto: bool = True
    at_or_above: bool = True
    blocking_of: Literal["window", "effective"] | None = None
    blocking_buffer: int = CLAUDE_BLOCKING_BUFFER
    warning_share: Fraction | None = None
    warning_below: int | None = None
    target: str = "75% of the trigger (the inspector's own: the harnesses record none)"
    family: str = "all"
    """The model families the figures were measured on (the README's column)."""

    @property
    def range(self) -> str:
        return f"{self.first}–{self.last}" if self.first != self.last else self.first

    def covers(self, version: Version) -> bool:
        low, high = parse_version(self.first), _upper(self.last)
        assert low is not None
        return low <= version <= high


_NO_MC = Microcompact("none", note="none in the 1.0.34 bundle")
_LEGACY_MC = Microcompact(
    "legacy",
    keep=3,
    min_tokens=40_000,
    min_saving=20_000,
    note="keep the last 3 Read/Bash/Grep/Glob/WebSearch/WebFetch/Edit/Write results; clear older "
    "ones when those results exceed 40,000 tokens and the context is over the warning line, if that "
    "frees 20,000 (decompiled `Ly5=3, Ny5=40000, qy5=20000`, notes §1.5; medium)",
)
"""The decompiled client microcompact (notes §1.5). No rule uses it: the corpus refutes it for the
versions it was said to cover. Sessions of 1.0.113, 2.0.22 and 2.1.39 pass their warning line by
20,000-30,000 tokens with no drop in the reported context within a segment, where this rule would
have cleared 58,000 tokens or more (from request 35, 63 and 109 respectively)."""
_NOT_SEEN_MC = Microcompact(
    "none",
    note="none seen: the corpus (1.0.113, 2.0.22) shows no clearing past the warning line, where the "
    "decompiled legacy microcompact (keep 3, 40,000, 20,000; notes §1.5) would have cleared",
)
_TIME_MC = Microcompact(
    "time",
    keep=5,
    idle_minutes=60.0,
    note="time-based: after 60 minutes idle (the prompt cache expired) keep the 5 most recent "
    "compactable results (2.1.88 microCompact.ts:422-444, timeBasedMCConfig.ts:30-34); the legacy "
    "path is removed (microCompact.ts:288-291)",
)

RULES: tuple[Rule, ...] = (
    # -- Claude Code ---------------------------------------------------------------------------
    Rule(
        "claude-code", "0.2.47", "1.0.50",
        "0.92 × (window − max output)",
        "1.0.34 bundle chunks.94.mjs:3365-3405 (`VU2 = 200000`, `h11 = 0.92`), notes §1.1 row 1; "
        "feature from 0.2.47 (CL:L5710); warning at 0.6 × line (chunks.94.mjs:3373-3392)",
        "high for 1.0.34, medium stretched to this range",
        "claude_code_usage", _NO_MC,
        share=Fraction(23, 25), era_a_output=True, warning_share=Fraction(3, 5), family="Sonnet/Opus 4, 3.x",
    ),
    Rule(
        "claude-code", "1.0.51", "1.0.112",
        "0.92 × (window − max output)",
        "as above; warning raised to 0.8 × line in 1.0.51 (CL:L5350); cccontext@7469c3d (2025-08-06, "
        "~1.0.70: `oH8=0.92`); where the 13,000 buffer replaced 0.92 between 1.0.70 and 1.0.113 is "
        "not pinned: assumed at 1.0.113, the first version the corpus shows with it",
        "high (formula), medium (range; its end assumed)",
        "claude_code_usage", _NOT_SEEN_MC,
        share=Fraction(23, 25), era_a_output=True, warning_share=Fraction(4, 5), family="Sonnet/Opus 4, 3.x",
    ),
    Rule(
        "claude-code", "1.0.113", "2.0.x",
        "window − max output − 13,000",
        "corpus: 1.0.113 lroystack (155,000 puts both compactions after requests 46 and 161; 0.92 "
        "would compact after 45) and 2.0.22 thomasjmcgovern (after 77); #9286 (2.0.13: 45.0k "
        "buffer), #12004 (~2.0.4x cli.js `nx1 = 13000`); blocking at the full window − 3,000 "
        "(inferred from CL:L4376); estimate = the last usage alone (corpus: 1.0.113 preTokens "
        "155,241 = 155,084 + 157)",
        "high (formula), medium-high (blocking)",
        "claude_code_usage", _NOT_SEEN_MC,
        buffer=CLAUDE_BUFFER, blocking_of="window", warning_below=CLAUDE_WARNING_BELOW,
        family="Sonnet/Opus 4, Sonnet 4.5, Haiku 4.5",
    ),
    Rule(
        "claude-code", "2.1.0", "2.1.6",
        "window − max output − 13,000",
        "as 2.0.x; the estimate adds characters/4 of the messages after the last response from 2.1 "
        "(corpus 2.1.39: 166,874 + 145 + 98 = preTokens 167,117; 2.1.88 utils/tokens.ts:226-261) — "
        "where between 2.0.22 and 2.1.39 it began is assumed",
        "high (formula), medium (estimator start)",
        "claude_code", _NOT_SEEN_MC,
        buffer=CLAUDE_BUFFER, blocking_of="window", warning_below=CLAUDE_WARNING_BELOW,
        family="Sonnet/Opus 4.x",
    ),
    Rule(
        "claude-code", "2.1.7", "2.1.20",
        "window − max output − 13,000",
        "Reddit 1qnsmk0 (2.1.19 binary: `jbA=13000`, effective = context − max output, no cap); "
        "blocking at the effective window − 3,000 from 2.1.7 (CL:L4376)",
        "high",
        "claude_code", _NOT_SEEN_MC,
        buffer=CLAUDE_BUFFER, blocking_of="effective", warning_below=CLAUDE_WARNING_BELOW,
        family="Sonnet/Opus 4.x",
    ),
    Rule(
        "claude-code", "2.1.21", "2.1.91",
        "window − min(max output, 20,000) − 13,000",
        "CL:L4238 (2.1.21 'auto-compact triggering too early on models with large output token "
        "limits'); 2.1.88 source (autoCompact.ts:30-91 line, :63-65 blocking; microCompact.ts time-based only); 33k buffer on 2.1.3x (#23409, #24079); corpus 2.1.39 spotter (167,000, after "
        "request 126; no clearing past the 147,000 warning line, so the time-based microcompact, "
        "as 2.1.88 has it, rather than the legacy one the 2.1.68 gist lists)",
        "high (formula, 2.1.88 autoCompact.ts:30-91), medium-high (2.1.21 as the start)",
        "claude_code", _TIME_MC,
        buffer=CLAUDE_BUFFER, reserve_cap=CLAUDE_SUMMARY_OUTPUT, blocking_of="effective",
        warning_below=CLAUDE_WARNING_BELOW, family="Sonnet/Opus 4.x, Opus 4.6",
    ),
    Rule(
        "claude-code", "2.1.92", "2.1.240",
        "window − min(max output, 20,000) − 13,000 (the window may be tuned server-side)",
        "#86863 (maintainer: trigger = auto-compact window − fixed buffer); #43989 (Opus 1M capped "
        "to 400k), #46331 (~80k experiment), #56666/#64802 (gates that switch it off); the "
        "changelog snapshot ends at 2.1.240. Calibrate from the session's own compact_boundary "
        "records where the window was tuned",
        "medium-high (formula), low (the window per session)",
        "claude_code", _TIME_MC,
        buffer=CLAUDE_BUFFER, reserve_cap=CLAUDE_SUMMARY_OUTPUT, blocking_of="effective",
        warning_below=CLAUDE_WARNING_BELOW, family="Sonnet/Opus 4.x, Opus 4.6",
    ),
    # -- Codex (release numbers inferred from merge dates, notes §2.1) ----------------------------
    Rule(
        "codex", "0.0.0", "0.39.x",
        "none (manual /compact; a configured limit only)",
        "notes §2.1: TS CLI manual only; #3446 (ea225df22) limit = config, else none (i64::MAX)",
        "high",
        "codex", Microcompact("truncate", note="tool output truncated to 10,000 bytes"),
        reserve=False, auto=False, family="all",
    ),
    Rule(
        "codex", "0.40.0", "0.40.x",
        "220,000 for gpt-5-codex; none for other models",
        "#4093 (2451b19d1: openai_model_info.rs:64-67); openai/codex#4106 ('0.40.0 … ~220k')",
        "high",
        "codex", Microcompact("truncate", note="tool output truncated to 10,000 bytes"),
        reserve=False, auto=False, fixed=(("gpt-5-codex", 220_000),), family="gpt-5-codex",
    ),
    Rule(
        "codex", "0.41.0", "0.47.x",
        "350,000 for gpt-5-codex (above its 272,000 window: never); none for other models",
        "#4156 (db4aa6f91: openai_model_info.rs:65-68); #5292's motivation; release mapping inferred",
        "high (code), medium (versions)",
        "codex", Microcompact("truncate", note="tool output truncated to 10,000 bytes"),
        reserve=False, auto=False, fixed=(("gpt-5-codex", 350_000),), family="gpt-5-codex",
    ),
    Rule(
        "codex", "0.48.0", "0.99.x",
        "0.9 × window",
        "#5292 (049a61bcf, 2025-10-20: `context_window * 9 / 10`; 272,000 -> 244,800); release "
        "mapping inferred",
        "high (code), medium (versions)",
        "codex", Microcompact("truncate", note="tool output truncated to 10,000 bytes"),
        share=Fraction(9, 10), of="window", reserve=False, family="gpt-5.x, o3/o4-mini, gpt-4.1",
    ),
    Rule(
        "codex", "0.100.0", "0.158.x",
        "0.9 × window (a configured limit is clamped to it)",
        "#11504/#11516 (40de788c4, 0.100.0: clamp; pre-sampling compaction); openai/codex#11805; "
        "corpus rollouts 0.135.0 and 0.158.0 (model_context_window 258,400 = 95% of 272,000)",
        "high",
        "codex", Microcompact("truncate", note="tool output truncated to 10,000 bytes"),
        share=Fraction(9, 10), of="window", reserve=False, family="gpt-5.x",
    ),
    # -- opencode (versions mapped by date: assumed, opencode-codex §A2) -------------------------
    Rule(
        "opencode", "0.0.0", "0.5.x",
        "0.9 × (window − min(max output, 32,000)), compared with >",
        "kuuzuki@469f6677, @b4950a15 session/index.ts:324-343 (2025-07: 151,200 for 200k); "
        "version range mapped by date (assumed: opencode-codex §A2 puts ~v0.3-0.5 in mid 2025)",
        "high (code), low (versions)",
        "opencode", Microcompact("none", note="no prune before compaction.ts (assumed)"),
        share=Fraction(9, 10), output_cap=OPENCODE_OUTPUT_TOKEN_MAX, at_or_above=False,
        family="any (models.dev limits)",
    ),
    Rule(
        "opencode", "0.6.0", "1.1.x",
        "window − min(max output, 32,000), compared with >",
        "hi-ogawa notes (compaction.ts:30-39), anomalyco/opencode#8140 (`count > context - output`), "
        "#10016 (limit.input); version range assumed (opencode-codex §A2: ~v0.15-1.1)",
        "medium-high (code), low (versions)",
        "opencode", Microcompact("prune", keep=0, min_tokens=40_000, min_saving=20_000,
                                 note="prune on by default: PRUNE_PROTECT 40,000, PRUNE_MINIMUM 20,000"),
        output_cap=OPENCODE_OUTPUT_TOKEN_MAX, at_or_above=False, family="any (models.dev limits)",
    ),
    Rule(
        "opencode", "1.2.0", "1.17.x",
        "window − min(max output, 32,000)",
        "PR #12924 (2026-02-10, overflow.ts: `reserved` applies only with limit.input); "
        "anomalyco/opencode@08f74b9b overflow.ts; version range assumed",
        "high (code), low (versions)",
        "opencode", Microcompact("prune", min_tokens=40_000, min_saving=20_000,
                                 note="prune opt-in (`compaction.prune`), #24127"),
        output_cap=OPENCODE_OUTPUT_TOKEN_MAX, family="any (models.dev limits)",
    ),
    Rule(
        "opencode", "1.18.0", "1.18.x",
        "window − min(max output, 32,000) − min(20,000, max output)",
        "sst/opencode@31e22f65 overflow.ts (opencode-codex §A2: ~1.18.x; 200k/32k -> 148,000); "
        "corpus: an opencode 1.18.33 database",
        "medium (code A, dating C)",
        "opencode", Microcompact("prune", min_tokens=40_000, min_saving=20_000,
                                 note="prune opt-in (`compaction.prune`), #24127"),
        output_cap=OPENCODE_OUTPUT_TOKEN_MAX, buffer_output_cap=OPENCODE_COMPACTION_BUFFER,
        family="any (models.dev limits)",
    ),
)
"""Every harness rule, oldest first within each harness."""


def rules_of(harness: str) -> tuple[Rule, ...]:
    return tuple(r for r in RULES if r.harness == harness)


def newest_rule(harness: str) -> Rule:
    return rules_of(harness)[-1]


def rule_for(harness: str, version: str | None) -> tuple[Rule, str]:
    """The rule for `version` of `harness`, and how it was chosen: "version" (a rule covers it),
    "unknown" (no version recorded, or not one), "newer" (newer than every rule) or "older"
    (older than every rule: the oldest rule)."""
    rules = rules_of(harness)
    if not rules:
        raise ValueError(f"no rules for harness {harness!r} (known: {', '.join(HARNESS_NAMES)})")
    v = parse_version(version)
    if v is None:
        return rules[-1], "unknown"
    for r in rules:
        if r.covers(v):
            return r, "version"
    first = parse_version(rules[0].first)
    assert first is not None
    if v < first:
        return rules[0], "older"
    return rules[-1], "newer"


def _floor(x: Fraction) -> int:
    return int(x.numerator // x.denominator)


class ResolvedRule(Struct, frozen=True):
    """A rule worked out for one window, model and version: the lines and how each was reached."""

    rule: Rule
    version: str | None
    chosen: str
    """How the rule was chosen (`rule_for`): version, unknown, newer, older."""
    window: int
    model: str | None
    max_output: int
    reserve: int
    trigger: int
    blocking: int | None
    warning: int
    auto: bool
    formula: str
    """The trigger with its figures: "window 200,000 − output 32,000 − buffer 13,000"."""
    notes: tuple[str, ...] = ()

    @property
    def harness_name(self) -> str:
        return HARNESS_NAMES[self.rule.harness]

    @property
    def text(self) -> str:
        """ "Claude Code 2.0.22 · auto compact at 155,000 (window 200,000 − output 32,000 − buffer
        13,000)", with how the rule was chosen where no rule covers the version."""
        who = f"{self.harness_name} {self.version}" if self.version else self.harness_name
        what = f"auto compact at {self.trigger:,} ({self.formula})" if self.auto else (
            f"no auto compaction ({self.formula})"
        )
        for note in self.notes:
            what += f", {note}"
        out = f"{who} · {what}"
        if self.chosen == "unknown":
            out += f" · version not recorded: the newest rule ({self.rule.range})"
        elif self.chosen == "newer":
            out += f" · newer than every rule: the newest ({self.rule.range})"
        elif self.chosen == "older":
            out += f" · older than every rule: the oldest ({self.rule.range})"
        else:
            out += f" · rule {self.rule.range}"
        return out


def harness_max_output(rule: Rule, model: str | None, override: int | None = None) -> int:
    """The max output the harness of `rule` resolves for `model` (`override`: the user's, as
    `CLAUDE_CODE_MAX_OUTPUT_TOKENS` sets it)."""
    if override is not None:
        out = override
    elif rule.era_a_output:
        name = (model or "").lower()
        out = 8_192 if ("3-5" in name or "haiku" in name) else 32_000
    else:
        spec = model_spec(model)
        if rule.harness == "claude-code":
            out = spec.claude_code_output if spec is not None and spec.claude_code_output else 32_000
        else:
            out = spec.max_output if spec is not None else 0
    if rule.output_cap is not None:
        out = min(out, rule.output_cap) or rule.output_cap
    return out


def resolve(
    harness: str,
    version: str | None,
    window: int,
    model: str | None = None,
    *,
    max_output: int | None = None,
) -> ResolvedRule:
    """The lines of `harness`'s rule for `version`, on `window` with `model`."""
    rule, chosen = rule_for(harness, version)
    out = harness_max_output(rule, model, max_output)
    reserve = 0 if not rule.reserve else (min(out, rule.reserve_cap) if rule.reserve_cap else out)
    effective = window - reserve
    name = (model or "").lower().split("/")[-1]
    fixed = next((limit for prefix, limit in rule.fixed if name.startswith(prefix)), None)
    notes: list[str] = []
    auto = True
    if fixed is not None:
        trigger = fixed
        formula = f"{fixed:,} for {model}"
        if fixed > window:
            notes.append(f"above the {window:,} window: never reached")
    elif not rule.auto:
        auto = False
        trigger = window
        formula = rule.trigger
    else:
        base = window if rule.of == "window" else effective
        extra = min(rule.buffer_output_cap, out) if rule.buffer_output_cap is not None else 0
        trigger = _floor(rule.share * base) - rule.buffer - extra
        parts: list[str] = []
        if rule.of == "window":
            parts.append(f"window {window:,}")
        else:
            parts.append(f"window {window:,}")
            if reserve:
                cap = f"min(output {out:,}, {rule.reserve_cap:,})" if rule.reserve_cap else f"output {out:,}"
                parts.append(f"− {cap}")
        formula = " ".join(parts)
        if rule.share != 1:
            share = f"{float(rule.share):g}"
            formula = f"{share} × ({formula})" if len(parts) > 1 else f"{share} × {formula}"
        if rule.buffer:
            formula += f" − buffer {rule.buffer:,}"
        if extra:
            formula += f" − reserved {extra:,}"
        trigger = max(2, trigger)
    blocking: int | None = None
    if rule.blocking_of == "window":
        blocking = window - rule.blocking_buffer
    elif rule.blocking_of == "effective":
        blocking = effective - rule.blocking_buffer
    if blocking is not None:
        blocking = max(trigger, blocking)
    if rule.warning_share is not None:
        warning = _floor(rule.warning_share * trigger)
    else:
        warning = max(0, trigger - (rule.warning_below or 0))
    return ResolvedRule(
        rule=rule,
        version=version if parse_version(version) is not None else None,
        chosen=chosen,
        window=window,
        model=model,
        max_output=out,
        reserve=reserve,
        trigger=trigger,
        blocking=blocking,
        warning=warning,
        auto=auto,
        formula=formula,
        notes=tuple(notes),
    )


# -- the version a transcript records --------------------------------------------------------------

FORMAT_HARNESS: dict[str, Harness] = {h.format: h.id for h in HARNESSES.values() if h.rules}
"""`Transcript.format` -> the harness whose rules apply to the version it records."""


def recorded_version(transcript: Transcript) -> str | None:
    """The version of the harness that wrote the transcript, as its reader found it recorded
    (`Transcript.harness_version`); None: not recorded, or a format with no rules."""
    if FORMAT_HARNESS.get(transcript.format) is None:
        return None
    return transcript.harness_version or None


def resolve_for(
    harness: str,
    transcript: Transcript | None,
    window: int,
    model: str | None = None,
    *,
    max_output: int | None = None,
) -> ResolvedRule:
    """`resolve` with the version the transcript records, where its harness is `harness` (a
    transcript of another harness records no version of this one: the newest rule)."""
    version = None
    if transcript is not None and FORMAT_HARNESS.get(transcript.format) == harness:
        version = recorded_version(transcript)
    if model is None and transcript is not None:
        model = transcript.model
    return resolve(harness, version, window, model, max_output=max_output)


__all__ = [
    "FORMAT_HARNESS",
    "HARNESS_NAMES",
    "RULES",
    "Microcompact",
    "ResolvedRule",
    "Rule",
    "newest_rule",
    "parse_version",
    "recorded_version",
    "resolve",
    "resolve_for",
    "rule_for",
    "rules_of",
]
