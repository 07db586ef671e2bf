"""Layer A0: tool output clear (OpenCollab rung `tool_output_clear`)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Sequence
from operator import itemgetter

from msgspec import Struct
from msgspec.structs import replace

from inspector.model import Message, ToolResultBlock

from .base import (
    SCAN_CACHE,
    Action,
    Decision,
    LayerResult,
    Sizer,
    TokenMemo,
    ViewScan,
    acted,
    kept_pinned,
    ordinal,
    plural,
    pressed,
    quiet_below_trigger,
    starts_with,
)
from .budget import Budget
from .pinning import FLOOR, Pins
from .tools import DEFAULT_COMPACTABLE_TOOLS, canonical_set, is_compactable

CLEARED_CONTENT = "[Old tool result content cleared]"


class ResultSlot(Struct, frozen=True):
    """Where one compactable tool result sits: message index, block index, its call's order."""

    order: int
    message: int
    block: int
    tool: str


def _slot_key(s: ResultSlot) -> tuple[int, int, int]:
    """Call order, then view order: how `compactable_results` lists its slots."""
    return (s.order, s.message, s.block)


_Facts = tuple[tuple[tuple[str, str], ...], tuple[tuple[int, str], ...]]
"""A message's tool calls (id, name) and its result blocks (block index, call id)."""


def _facts(m: Message) -> _Facts | None:
    calls = tuple((c.id, c.name) for c in m.tool_calls)
    results = tuple((j, b.call_id) for j, b in enumerate(m.blocks) if isinstance(b, ToolResultBlock))
    return (calls, results) if calls or results else None


def compactable_results(view: Sequence[Message], compactable: frozenset[str]) -> list[ResultSlot]:
    """Results of compactable tools, in the order their calls were issued (orphans left out).

    The tool is the one the call names (a result's own `tool_name` is not trusted over it). The
    rule is `_Found`'s, applied to the whole view at once.
    """
    view = tuple(view)
    found = _Found(compactable)
    found.update(view, [(i, f) for i, m in enumerate(view) if (f := _facts(m)) is not None])
    return found.slots


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
            blocks[s.block] = replace(b, content=content_for[(s.message, s.block)])
        out[i] = replace(m, blocks=tuple(blocks))
        if made is not None:
            if len(made) >= SCAN_CACHE:
                made.clear()
            made[key] = (m, out[i])
    return out


class _Found:
    """`compactable_results` of a view that grows, kept up to date from its new messages alone.

    The ledgers of consecutive requests extend one another: a view that starts with the last one
    keeps its calls' order, and its results only gain company (a new result; an old one whose
    call arrives). `free` is the slots of messages `pins` (the policy's rule) leaves free, in the
    same order; another rule starts afresh."""

    __slots__ = ("compactable", "free", "order", "pins", "slots", "view", "waiting")

    def __init__(self, compactable: frozenset[str]) -> None:
        self.compactable = compactable
        self.pins: Pins = FLOOR
        self._clear()

    def _clear(self) -> None:
        self.view: tuple[Message, ...] = ()
        self.order: dict[str, tuple[int, str]] = {}
        """Call id -> (its order among the view's calls, the tool it names)."""
        self.waiting: dict[str, list[tuple[int, int]]] = {}
        """Call id -> (message, block) of each result whose call is not in the view (yet)."""
        self.slots: list[ResultSlot] = []
        self.free: list[ResultSlot] = []

    def update(
        self,
        view: tuple[Message, ...],
        facts: Sequence[tuple[int, _Facts]],
        pins: Pins = FLOOR,
        sizer: TokenMemo | None = None,
    ) -> tuple[tuple[Message, ...], int | None]:
        """Bring the slots to `view` (`facts`: its `_facts`, by index). Returns the view before and,
        where `view` extends it, the lowest place in `free` a slot went in at (`len(free)` when none
        did: every slot before it kept its place); None where the slots were found afresh.
        `sizer`: the layer's memo, told what `view` shares with the view before (`starts_with`)."""
        last = self.view
        n = len(last)
        extends = bool(n) and pins == self.pins and starts_with(view, last, sizer)
        if not extends:
            self._clear()
            self.pins = pins
            n = 0
        order, waiting, compactable = self.order, self.waiting, self.compactable
        new = facts[bisect_left(facts, n, key=itemgetter(0)) :] if n else facts
        placed: list[tuple[int, int, str]] = []
        # every call first (a result may come before its call in the view), then every result
        for _, (calls, _results) in new:
            for cid, name in calls:
                if cid not in order:
                    order[cid] = (len(order), name)
                    early = waiting.pop(cid, None)
                    if early:
                        placed.extend((i, j, cid) for i, j in early)
        for i, (_calls, results) in new:
            placed.extend((i, j, cid) for j, cid in results)
        free = self.free
        lowest = len(free)
        for i, j, cid in placed:
            call = order.get(cid)
            if call is None:
                waiting.setdefault(cid, []).append((i, j))
                continue
            if not is_compactable(call[1], compactable):
                continue
            slot = ResultSlot(order=call[0], message=i, block=j, tool=call[1])
            insort(self.slots, slot, key=_slot_key)
            if not pins(view[i]):
                at = bisect_right(free, _slot_key(slot), key=_slot_key)
                free.insert(at, slot)
                lowest = min(lowest, at)
        self.view = view
        return last, (lowest if extends else None)


class _Clearing:
    """What the layer cleared in the last view it acted on, to go on from when the next extends it.

    Going on gives what clearing afresh gives (the tests hold the two equal): with the same sizer
    and the same number kept, an older result stays older as the view grows (its place in `free`
    only moves back), so the results cleared before stay cleared, and only the messages holding
    results that became older are looked at again."""

    __slots__ = (
        "by_message",
        "changed",
        "cleared",
        "keep",
        "result",
        "saved",
        "sizer",
        "split",
        "targets",
        "view",
    )

    def __init__(self) -> None:
        self.view: tuple[Message, ...] = ()
        self.sizer: TokenMemo | None = None
        self.keep = -1
        self.split = 0
        """How many of `free` are older (all but the `keep` most recent)."""
        self.targets: list[ResultSlot] = []
        """The older results longer than the placeholder, in call order."""
        self.by_message: dict[int, list[ResultSlot]] = {}
        self.changed: dict[int, Message] = {}
        self.saved = 0
        """What the changed messages weigh less than before (the sizer's figures)."""
        self.cleared = 0
        """The targets in changed messages."""
        self.result: tuple[Message, ...] = ()

    def update(
        self,
        src: tuple[Message, ...],
        sizer: TokenMemo,
        keep: int,
        found: _Found,
        last: tuple[Message, ...],
        lowest: int | None,
        made: _Replaced,
    ) -> None:
        free = found.free
        split = max(0, len(free) - keep)
        goes_on = (
            lowest is not None
            and last is self.view
            and lowest >= self.split
            and sizer is self.sizer
            and keep == self.keep
        )
        if goes_on:
            newly = free[self.split : split]
            start = len(self.view)
        else:
            self.targets, self.by_message, self.changed = [], {}, {}
            self.saved = self.cleared = 0
            newly = free[:split]
            start = 0
        touched: dict[int, int] = {}
        """Message index -> how many of its results were targets before this view."""
        for s in newly:
            b = src[s.message].blocks[s.block]
            assert isinstance(b, ToolResultBlock)
            if len(CLEARED_CONTENT) < len(b.content):
                self.targets.append(s)
                slots = self.by_message.setdefault(s.message, [])
                touched.setdefault(s.message, len(slots))
                slots.append(s)
        made_before = self.result
        # the front of the view made before stays as it was, up to the first message cleared now:
        # only the rest is made again, not the whole view
        kept = min(start, min(touched, default=start))
        out = list(made_before[kept:start])
        out.extend(src[start:])
        size = sizer.message
        for i, before in touched.items():
            slots = self.by_message[i]
            new = replace_results(src, slots, {(i, s.block): CLEARED_CONTENT for s in slots}, made)[i]
            was = self.changed.pop(i, None)
            if was is not None:
                self.saved -= size(src[i]) - size(was)
                self.cleared -= before
            # a message an estimator would size higher after clearing is left as it was
            if size(new) <= size(src[i]):
                self.changed[i] = new
                self.saved += size(src[i]) - size(new)
                self.cleared += len(slots)
                out[i - kept] = new
            else:
                out[i - kept] = src[i]
        self.view, self.sizer, self.keep, self.split = src, sizer, keep, split
        self.result = made_before[:kept] + tuple(out)
        if start:
            # (for the next layer's comparison of this view with the one made before)
            sizer.seed_shared(self.result, made_before, kept)


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

    Run on the growing ledgers of consecutive requests, it goes on from the last one (`_Found`,
    `_Clearing`): the cost of a request is that of its new messages, not of its whole view.
    """

    name = "tool_output_clear"
    label = "tool output clear"
    reactive = True

    def __init__(self, compactable: Iterable[str] = DEFAULT_COMPACTABLE_TOOLS) -> None:
        self.compactable = canonical_set(compactable)
        self._scan: ViewScan[_Facts] = ViewScan(_facts)
        self._made: _Replaced = {}
        self._found = _Found(self.compactable)
        self._clearing = _Clearing()

    def quiet(self, view: Sequence[Message], budget: Budget, estimator: Sizer) -> bool:
        """Whether `apply` would leave `view` as it is, not forced (`Pipeline.quiet`)."""
        return quiet_below_trigger(view, budget, estimator)

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
        keep = budget.results_kept
        found, c = self._found, self._clearing
        last, lowest = found.update(src, self._scan(src, sizer), budget.pins, sizer)
        c.update(src, sizer, keep, found, last, lowest, self._made)
        total = len(found.free)
        if not c.changed:
            if total <= keep:
                return ready.unchanged(
                    f"{cause}, but only {plural(total, 'compactable result')}, {keep} kept"
                )
            return ready.unchanged(f"{cause}, but no older compactable result is longer than the placeholder")
        result = c.result
        after = before - c.saved
        sizer.seed_view(result, after)
        recent = found.free[c.split :]
        return acted(
            self,
            result,
            before,
            after,
            reason=(
                f"{cause}; cleared {plural(c.cleared, 'older compactable result')}, "
                f"kept the {len(recent)} most recent"
            ),
            decisions=self._decisions(src, sizer, cause, keep) if explain else (),
            forced=forced,
            cleared=len(c.changed),
        )

    def _decisions(
        self, src: tuple[Message, ...], sizer: TokenMemo, cause: str, keep: int
    ) -> tuple[Decision, ...]:
        found, c = self._found, self._clearing
        free = found.free
        total = len(free)
        rank = {(s.message, s.block): total - k for k, s in enumerate(free)}
        changed = c.changed
        decisions: list[Decision] = []
        for i, group in _by_message(s for s in c.targets if s.message in changed):
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
        for i, group in _by_message(free[c.split :]):
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
        for i, _ in _by_message(s for s in found.slots if found.pins(src[s.message])):
            decisions.append(kept_pinned(self.name, src[i], sizer))
        return tuple(decisions)


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
