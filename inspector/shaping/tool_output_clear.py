"""Layer A0: tool output clear (OpenCollab rung `tool_output_clear`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from inspector.model import Message, ToolResultBlock

from .base import (
    SCAN_CACHE,
    Action,
    Decision,
    LayerResult,
    Sizer,
    ViewScan,
    kept_pinned,
    ordinal,
    plural,
    pressed,
)
from .budget import Budget
from .tools import DEFAULT_COMPACTABLE_TOOLS, canonical_set, is_compactable

CLEARED_CONTENT = "[Old tool result content cleared]"


@dataclass(frozen=True, slots=True)
class ResultSlot:
    """Where one compactable tool result sits: message index, block index, its call's order."""

    order: int
    message: int
    block: int
    tool: str


_Facts = tuple[tuple[tuple[str, str], ...], tuple[tuple[int, str], ...]]
"""A message's tool calls (id, name) and its result blocks (block index, call id)."""


def _facts(m: Message) -> _Facts | None:
    calls = tuple((c.id, c.name) for c in m.tool_calls)
    results = tuple((j, b.call_id) for j, b in enumerate(m.blocks) if isinstance(b, ToolResultBlock))
    return (calls, results) if calls or results else None


def compactable_results(
    view: Sequence[Message], compactable: frozenset[str], facts: list[tuple[int, _Facts]] | None = None
) -> list[ResultSlot]:
    """Results of compactable tools, in the order their calls were issued (orphans left out).

    The tool is the one the call names (a result's own `tool_name` is not trusted over it).
    `facts` (from a `ViewScan` of `_facts` over `view`) saves looking at every block again.
    """
    if facts is None:
        facts = [(i, f) for i, m in enumerate(view) if (f := _facts(m)) is not None]
    order: dict[str, tuple[int, str]] = {}
    for _, (calls, _results) in facts:
        for cid, name in calls:
            order.setdefault(cid, (len(order), name))
    slots: list[ResultSlot] = []
    for i, (_calls, results) in facts:
        for j, call_id in results:
            call = order.get(call_id)
            if call is None:
                continue
            if is_compactable(call[1], compactable):
                slots.append(ResultSlot(order=call[0], message=i, block=j, tool=call[1]))
    slots.sort(key=lambda s: s.order)
    return slots


_Replaced = dict[tuple[int, tuple[tuple[int, str], ...]], tuple[Message, Message]]


def replace_results(
    view: Sequence[Message],
    targets: Iterable[ResultSlot],
    content_for: dict[tuple[int, int], str],
    made: _Replaced | None = None,
) -> dict[int, Message]:
    """New messages (by view index) with the given result blocks' content replaced.

    `made` remembers copies across calls (keyed by the original message and the replacements), so
    the same message cleared at many requests is the same object each time."""
    by_message: dict[int, list[ResultSlot]] = {}
    for s in targets:
        by_message.setdefault(s.message, []).append(s)
    out: dict[int, Message] = {}
    for i, slots in by_message.items():
        m = view[i]
        key = (id(m), tuple((s.block, content_for[(s.message, s.block)]) for s in slots))
        if made is not None:
            hit = made.get(key)
            if hit is not None and hit[0] is m:
                out[i] = hit[1]
                continue
        blocks = list(m.blocks)
        for s in slots:
            b = blocks[s.block]
            assert isinstance(b, ToolResultBlock)
            blocks[s.block] = b.model_copy(update={"content": content_for[(s.message, s.block)]})
        out[i] = m.model_copy(update={"blocks": tuple(blocks)})
        if made is not None:
            if len(made) >= SCAN_CACHE:
                made.clear()
            made[key] = (m, out[i])
    return out


class ToolOutputClear:
    """Reactive: does nothing unless the estimate exceeds `budget.trigger` (or forced).

    Keeps the `budget.results_kept` (5, fewer in small windows) most recent results of compactable
    tools verbatim, counted in the order their calls were issued, and replaces the content of every
    older one, at once, with `[Old tool result content cleared]` where that is shorter (and not
    sized higher). It does not iterate toward the target. Compactable tools are re-creatable
    read-only ones (a policy parameter, matched through the alias table in `tools.py`); edit and
    write results are never touched, nor are pinned messages. The call, the result message and its
    id survive: no orphan, no model call, assistant reasoning kept. Already cleared results are
    skipped, so running it twice equals running it once.
    """

    name = "tool_output_clear"
    label = "tool output clear"
    reactive = True

    def __init__(self, compactable: Iterable[str] = DEFAULT_COMPACTABLE_TOOLS) -> None:
        self.compactable = canonical_set(compactable)
        self._scan: ViewScan[_Facts] = ViewScan(_facts)
        self._made: _Replaced = {}

    def apply(
        self,
        view: Sequence[Message],
        budget: Budget,
        estimator: Sizer,
        *,
        forced: bool = False,
        explain: bool = True,
    ) -> LayerResult:
        ready = pressed(self, view, budget, estimator, forced)
        if isinstance(ready, LayerResult):
            return ready
        src, sizer, before, cause = ready.src, ready.sizer, ready.before, ready.cause
        unchanged = ready.unchanged
        keep = budget.results_kept
        slots = compactable_results(src, self.compactable, self._scan(src, sizer))
        free = [s for s in slots if not src[s.message].pinned]
        total = len(free)
        split = max(0, total - keep)
        older, recent = free[:split], free[split:]
        rank = {(s.message, s.block): total - k for k, s in enumerate(free)} if explain else {}

        targets = [s for s in older if len(CLEARED_CONTENT) < len(self._content(src, s))]
        changed = replace_results(
            src, targets, {(s.message, s.block): CLEARED_CONTENT for s in targets}, self._made
        )
        # A message an estimator would size higher after clearing is left as it was.
        changed = {i: new for i, new in changed.items() if sizer.message(new) <= sizer.message(src[i])}
        if not changed:
            if total <= keep:
                return unchanged(f"{cause}, but only {plural(total, 'compactable result')}, {keep} kept")
            return unchanged(f"{cause}, but no older compactable result is longer than the placeholder")

        decisions: list[Decision] = []
        for i, group in _by_message(s for s in targets if s.message in changed and explain):
            decisions.append(
                Decision(
                    message_id=src[i].id,
                    layer=self.name,
                    action=Action.CLEARED,
                    reason=f"{cause}; {_ranks(group, rank)}, only {keep} kept",
                    tokens_before=sizer.message(src[i]),
                    tokens_after=sizer.message(changed[i]),
                )
            )
        for i, group in _by_message(recent if explain else ()):
            decisions.append(
                Decision(
                    message_id=src[i].id,
                    layer=self.name,
                    action=Action.KEPT_RECENT,
                    reason=f"{_ranks(group, rank)}, {keep} kept",
                    tokens_before=sizer.message(src[i]),
                    tokens_after=sizer.message(src[i]),
                )
            )
        for i, _ in _by_message(s for s in slots if explain and src[s.message].pinned):
            decisions.append(kept_pinned(self.name, src[i], sizer))
        result = tuple(changed.get(i, m) for i, m in enumerate(src))
        after = sizer.view(result)
        n_cleared = sum(1 for s in targets if s.message in changed)
        return LayerResult(
            name=self.name,
            label=self.label,
            view=result,
            tokens_before=before,
            tokens_after=after,
            fired=True,
            reason=(
                f"{cause}; cleared {plural(n_cleared, 'older compactable result')}, "
                f"kept the {len(recent)} most recent"
            ),
            decisions=tuple(decisions),
            cleared=len(changed),
            forced=forced,
        )

    @staticmethod
    def _content(view: Sequence[Message], slot: ResultSlot) -> str:
        b = view[slot.message].blocks[slot.block]
        assert isinstance(b, ToolResultBlock)
        return b.content


def _by_message(slots: Iterable[ResultSlot]) -> list[tuple[int, list[ResultSlot]]]:
    grouped: dict[int, list[ResultSlot]] = {}
    for s in slots:
        grouped.setdefault(s.message, []).append(s)
    return list(grouped.items())


def _ranks(slots: list[ResultSlot], rank: dict[tuple[int, int], int]) -> str:
    """ "9th most recent compactable result (Read)" or, for several in one message, "9th, 10th ... results"."""
    ranks = sorted(rank[(s.message, s.block)] for s in slots)
    tools = ", ".join(dict.fromkeys(s.tool for s in slots))
    noun = "result" if len(ranks) == 1 else "results"
    return f"{', '.join(ordinal(r) for r in ranks)} most recent compactable {noun} ({tools})"
