"""The budget: every shaping threshold, derived once from the window and the policy (docs/DESIGN.md §2.1).

Layers, UI lines and reports all read one `Budget`, so what is drawn cannot drift from what is
enforced. Nothing else in the code base hard-codes a trigger or a target: a harness preset's lines
come from the table of harness rules by version (`inspector.harness_rules`), which
`Budget.for_rule` reads.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from msgspec import Struct
from msgspec.structs import replace

from .pinning import FLOOR, Pins

if TYPE_CHECKING:
    from inspector.harness_rules import ResolvedRule

DEFAULT_OUTPUT_RESERVE = 20_000
"""Tokens kept free for the model's answer."""
DEFAULT_SAFETY_BUFFER = 13_000
"""Tokens between the trigger and the output reserve, for estimation error."""
DEFAULT_TARGET_RATIO = 0.75
"""Target = 75% of the trigger, so the next request does not trigger again (no compaction storms)."""
UNKNOWN_WINDOW_TRIGGER = 120_000
UNKNOWN_WINDOW_TARGET = 90_000
DEFAULT_TOOL_RESULT_BUDGET = 16_000
"""Characters one tool result may keep (per-tool result budget)."""
MIN_TOOL_RESULT_BUDGET = 256
"""A smaller budget could not hold the truncation marker itself."""
DEFAULT_GROUPS_KEPT = 4
"""Most recent groups snip and auto compact never touch."""
DEFAULT_RESULTS_KEPT = 5
"""Most recent compactable tool results tool output clear keeps verbatim."""
MIN_AFFORDABLE_GROUPS = 2
AFFORDABLE_GROUP_TOKENS = DEFAULT_TOOL_RESULT_BUDGET // 4
"""Tokens one maximum-size tool exchange costs (16,000 chars / 4). OpenCollab divides by the default
budget even when a policy sets another `tool_result_budget`; so does this."""

# Harness constants that are not compaction lines (those are in `inspector/harness_rules.py`, by version).
OPENCODE_PRUNE_MINIMUM = 20_000
"""opencode `PRUNE_MINIMUM`: prune only when more than this many tokens (chars/4) would be freed."""
CODEX_USER_MESSAGE_TOKENS = 20_000
"""Codex `COMPACT_USER_MESSAGE_MAX_TOKENS`: the recent user messages its compaction keeps (bytes/4)."""


def trigger_target(
    window: int | None,
    output_reserve: int = DEFAULT_OUTPUT_RESERVE,
    safety_buffer: int = DEFAULT_SAFETY_BUFFER,
    target_ratio: float = DEFAULT_TARGET_RATIO,
) -> tuple[int, int]:
    """(trigger, target) for a window; an unknown window (None or <= 0) gives (120,000, 90,000)."""
    if not (math.isfinite(target_ratio) and 0 < target_ratio < 1):
        raise ValueError(f"target_ratio must be between 0 and 1 (exclusive), got {target_ratio}")
    if output_reserve < 0 or safety_buffer < 0:
        raise ValueError("output_reserve and safety_buffer must be >= 0")
    if window is None or window <= 0:
        return UNKNOWN_WINDOW_TRIGGER, UNKNOWN_WINDOW_TARGET
    trigger = max(2, window - output_reserve - safety_buffer)
    target = max(1, min(trigger - 1, int(trigger * target_ratio)))
    return trigger, target


def affordable_groups(target: int) -> int:
    """How many maximum-size tool exchanges the target can hold: max(2, target // 4,000)."""
    return max(MIN_AFFORDABLE_GROUPS, target // AFFORDABLE_GROUP_TOKENS)


class Budget(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Trigger, target, reserves and kept counts for one window under one policy.

    - trigger = max(2, window - output_reserve - safety_buffer); target = max(1, min(trigger - 1,
      int(trigger * target_ratio))); unknown window: 120,000 / 90,000.
    - groups_kept = min(4, affordable), results_kept = min(5, affordable), affordable =
      max(2, target // 4,000), unless the policy overrides them.
    - blocking: where a harness refuses to send at all (None when the policy has no such line).
    Build it with `Budget.for_window(...)` (or `Policy.budget(window)`).
    """

    window: int | None
    output_reserve: int = DEFAULT_OUTPUT_RESERVE
    safety_buffer: int = DEFAULT_SAFETY_BUFFER
    target_ratio: float = DEFAULT_TARGET_RATIO
    trigger: int
    target: int
    affordable_groups: int
    groups_kept: int
    results_kept: int
    tool_result_budget: int = DEFAULT_TOOL_RESULT_BUDGET
    blocking: int | None = None
    warning: int | None = None
    """Where the harness starts warning (None: the policy names no harness rule)."""
    rule: str | None = None
    """Which harness rule set these lines, with its figures ("Claude Code 2.0.22 · auto compact
    at 155,000 (window 200,000 − output 32,000 − buffer 13,000) · rule 1.0.113–2.0.x")."""
    auto_compact: bool = True
    """False where the harness's rule has no auto compaction (the trigger is drawn at the window)."""
    clear_mode: str | None = None
    """The rule's microcompact (`rules.Microcompact.mode`: none, legacy, time); None: the layer's own."""
    clear_min_saving: int = 0
    """A legacy microcompact clears only when it frees at least this many tokens."""
    at_or_above: bool | None = None
    """How the harness's rule compares its estimate with the trigger (`>=` True, `>` False; None:
    as its estimator does, `EstimatorSpec.at_or_above`)."""
    pins: Pins = FLOOR
    """Which messages no layer may remove, clear or fold: the policy's rule (`Policy.pins`; the
    default, OpenCollab's: priority >= 70)."""

    @classmethod
    def for_window(
        cls,
        window: int | None,
        *,
        output_reserve: int = DEFAULT_OUTPUT_RESERVE,
        safety_buffer: int = DEFAULT_SAFETY_BUFFER,
        target_ratio: float = DEFAULT_TARGET_RATIO,
        tool_result_budget: int = DEFAULT_TOOL_RESULT_BUDGET,
        groups_kept: int | None = None,
        results_kept: int | None = None,
        blocking_buffer: int | None = None,
    ) -> Budget:
        """Derive every threshold from the window and the policy parameters.

        `blocking_buffer` (a hook for harness policies): when set and the window is known, the
        blocking line is window - output_reserve - blocking_buffer (never below the trigger).
        """
        if tool_result_budget < MIN_TOOL_RESULT_BUDGET:
            raise ValueError(
                f"tool_result_budget must be >= {MIN_TOOL_RESULT_BUDGET}, got {tool_result_budget}"
            )
        if groups_kept is not None and groups_kept < 1:
            raise ValueError(f"groups_kept must be >= 1, got {groups_kept}")
        if results_kept is not None and results_kept < 0:
            raise ValueError(f"results_kept must be >= 0, got {results_kept}")
        known = window if window is not None and window > 0 else None
        trigger, target = trigger_target(known, output_reserve, safety_buffer, target_ratio)
        affordable = affordable_groups(target)
        blocking = None
        if blocking_buffer is not None and known is not None:
            blocking = max(trigger, known - output_reserve - blocking_buffer)
        return cls(
            window=known,
            output_reserve=output_reserve,
            safety_buffer=safety_buffer,
            target_ratio=target_ratio,
            trigger=trigger,
            target=target,
            affordable_groups=affordable,
            groups_kept=min(DEFAULT_GROUPS_KEPT, affordable) if groups_kept is None else groups_kept,
            results_kept=min(DEFAULT_RESULTS_KEPT, affordable) if results_kept is None else results_kept,
            tool_result_budget=tool_result_budget,
            blocking=blocking,
        )

    @classmethod
    def for_rule(
        cls,
        resolved: ResolvedRule,
        *,
        target_ratio: float = DEFAULT_TARGET_RATIO,
        tool_result_budget: int = DEFAULT_TOOL_RESULT_BUDGET,
        groups_kept: int | None = None,
        results_kept: int | None = None,
    ) -> Budget:
        """The lines of a harness rule worked out for one window and model (`rules.resolve`).

        The trigger, reserve, blocking and warning lines are the rule's; the safety buffer is what
        lies between the trigger and the reserve; the target is `target_ratio` of the trigger.
        Kept results: the rule's microcompact keeps (3 legacy, 5 time-based) unless overridden.
        """
        window = resolved.window
        trigger = resolved.trigger
        reserve = max(0, min(resolved.reserve, window - trigger))
        base = cls.for_window(
            window,
            output_reserve=reserve,
            safety_buffer=max(0, window - reserve - trigger),
            target_ratio=target_ratio,
            tool_result_budget=tool_result_budget,
            groups_kept=groups_kept,
            results_kept=results_kept,
        )
        mc = resolved.rule.microcompact
        target = max(1, min(trigger - 1, int(trigger * target_ratio)))
        affordable = affordable_groups(target)
        kept = results_kept
        if kept is None:
            kept = mc.keep if mc.mode in ("legacy", "time") else min(DEFAULT_RESULTS_KEPT, affordable)
        return replace(
            base,
            trigger=trigger,
            target=target,
            affordable_groups=affordable,
            groups_kept=min(DEFAULT_GROUPS_KEPT, affordable) if groups_kept is None else groups_kept,
            results_kept=kept,
            blocking=resolved.blocking,
            warning=resolved.warning,
            rule=resolved.text,
            auto_compact=resolved.auto,
            clear_mode=mc.mode if resolved.rule.harness == "claude-code" else None,
            clear_min_saving=mc.min_saving,
            at_or_above=resolved.rule.at_or_above,
        )

    @property
    def thresholds_from(self) -> str:
        """ "context_window" when derived from a known window, else "fixed_default" (OpenCollab's words)."""
        return "context_window" if self.window is not None else "fixed_default"

    def lines(self) -> list[tuple[str, int]]:
        """Labelled token positions to draw on a pressure gauge, highest first.

        "output reserve" is where the space kept for the answer begins (window - output_reserve);
        "safety buffer" is the lower edge of the band below it (window - reserve - buffer), which is
        where the trigger sits unless the window is tiny. Unknown window: trigger and target only.
        """
        out: list[tuple[str, int]] = []
        if self.window is not None:
            out.append(("window", self.window))
            out.append(("output reserve", self.window - self.output_reserve))
            out.append(("safety buffer", self.window - self.output_reserve - self.safety_buffer))
        if self.blocking is not None:
            out.append(("blocking", self.blocking))
        out.append(("trigger", self.trigger))
        out.append(("target", self.target))
        out.sort(key=lambda line: -line[1])
        return out


MAX_WINDOW = 100_000_000
"""The largest window a user may give (`parse_window`)."""


def parse_window(text: str) -> int | None:
    """ "100000", "100,000", "100k", "1m" -> tokens; None when it is not a positive size."""
    raw = text.strip().lower().replace(",", "").replace("_", "").replace(" ", "")
    scale = 1
    if raw.endswith("k"):
        scale, raw = 1_000, raw[:-1]
    elif raw.endswith("m"):
        scale, raw = 1_000_000, raw[:-1]
    try:
        value = float(raw) * scale
    except ValueError:
        return None
    if not value or value != value or value < 1 or value > MAX_WINDOW:
        return None
    return int(value)
