"""Groups, pairing and pins: the structure layers must respect.

A group is an assistant message with tool calls plus the messages right after it whose tool results
answer those calls (a result's `call_id` pairs with a `ToolCallBlock.id`); every other message is a
group of its own. Layers remove or fold whole groups, never half of one, so no call loses its
result and no result its call.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import TypeVar

from msgspec import Struct

from inspector.model import Message, Role, Source, ToolResultBlock

from .pinning import FLOOR, Pins


class Group(Struct, frozen=True, kw_only=True, gc=False):
    """`view[start:end]`. `exchange`: led by an assistant message with tool calls.

    `complete` (for an exchange): every call has exactly one result inside the group, every result
    in it answers one of the calls, and every follower is a pure tool-result message (no text).
    A non-exchange group is complete unless it is a tool result with no call before it (an orphan).
    A struct (no references, not tracked by the collector): a view's groups are made again from
    its first change at every request, a few thousand for a long ledger.
    """

    index: int
    start: int
    end: int
    exchange: bool
    complete: bool
    pinned: bool
    summary: bool

    def messages(self, view: Sequence[Message]) -> Sequence[Message]:
        return view[self.start : self.end]

    def __len__(self) -> int:
        return self.end - self.start


def _answers(message: Message, call_ids: frozenset[str]) -> bool:
    return message.role is not Role.ASSISTANT and any(
        isinstance(b, ToolResultBlock) and b.call_id in call_ids for b in message.blocks
    )


T = TypeVar("T")

Known = Callable[[tuple[Message, ...], tuple[Message, ...]], int]
"""How many messages two views are known to share at their front (`TokenMemo.known_front`)."""

MEMO_SIZE = 4
"""How many recent views `group_spans` remembers the groups of."""
_memo: tuple[tuple[tuple[Message, ...], Pins, list[Group]], ...] = ()
"""(view, the pin rule, its groups), newest first; replaced whole, never changed (threads share
it; the lists are never handed out, only copied)."""


def _end(g: Group) -> int:
    return g.end


def group_spans(view: Sequence[Message], pins: Pins = FLOOR, known: Known | None = None) -> list[Group]:
    """Split a view into groups, in order; a group is `pinned` when `pins` (the policy's rule,
    `Budget.pins`) pins one of its messages. Linear in the number of messages it does not share
    with a view split before: a replay shapes every request's ledger, each the one before and a
    few messages more, so the groups of the common front are taken from the view before (a
    group's extent depends on its own messages and the one after it only).

    `known`: how many messages at their front two views are known to share without comparing
    them (`TokenMemo.known_front`, what the layers before declared). Only a view remembered that
    shares more than the best found so far is compared at all (one look at the message after
    that front tells), and then from where it is known to agree."""
    global _memo
    view = tuple(view)
    reused: list[Group] = []
    cut = 0
    best = 0
    for prev, prev_pins, prev_groups in _memo:
        if prev_pins != pins:
            continue
        if best and (len(prev) <= best or not (prev[best] is view[best] or prev[best] == view[best])):
            continue  # it differs from the view at `best` already: it shares no more than that
        k = _common_prefix(prev, view, known(prev, view) if known is not None else 0)
        if k <= best:
            continue
        best = k
        reused = prev_groups
        cut = bisect_left(prev_groups, k, key=_end)  # those that end before the first change
        if k == len(view):
            break
    groups = reused[:cut]
    groups = _spans(view, groups[-1].end if groups else 0, groups, pins)
    _memo = ((view, pins, groups.copy()), *_memo[: MEMO_SIZE - 1])
    return groups


def _common_prefix(a: tuple[T, ...], b: tuple[T, ...], known: int = 0) -> int:
    """How many items (messages, groups) `a` and `b` share at their front (the same objects, or
    equal); `known`: how many at the front are known to be shared (not compared again)."""
    n = min(len(a), len(b))
    lo = min(known, n)  # a[:lo] == b[:lo]
    if lo == n:
        return n
    if lo and not (a[lo] is b[lo] or a[lo] == b[lo]):
        return lo  # (they differ right after what is known: what a layer's declaration says, often)
    if lo == 0:
        if not (a[0] is b[0] or a[0] == b[0]):
            return 0
        if a[:n] == b[:n]:  # (in C: items are compared by identity first)
            return n
        lo = 1
    elif a[lo:n] == b[lo:n]:
        return n
    hi = n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


_Facts = tuple[frozenset[str] | None, int, tuple[str, ...], bool, bool, bool, bool]
"""What splitting reads of one message under one pin rule: (the ids of its calls, None unless it
is an assistant message with calls; how many calls; the call ids its tool results answer; whether
it may answer calls (not an assistant message); whether it is a tool result message alone;
whether it is pinned; whether it is a summary)."""

FACTS_CACHE = 65_536
"""How many messages' `_Facts` the splitting remembers (then it starts afresh)."""
_facts: dict[Pins, dict[int, tuple[Message, _Facts]]] = {}
"""Per pin rule: id(message) -> (the message, its `_Facts`); the entry holds the message, so its
id is not reused while the entry lives. The groups of a view's changed tail are made again at
every request, mostly of messages split before."""


def _facts_of(message: Message, pins: Pins) -> _Facts:
    calls = message.tool_calls if message.role is Role.ASSISTANT else ()
    return (
        frozenset(c.id for c in calls) if calls else None,
        len(calls),
        tuple(b.call_id for b in message.blocks if isinstance(b, ToolResultBlock)),
        message.role is not Role.ASSISTANT,
        message.is_tool_result,
        pins(message),
        message.is_summary,
    )


def _spans(view: tuple[Message, ...], i: int, groups: list[Group], pins: Pins = FLOOR) -> list[Group]:
    """`groups` (of `view[:i]`) and the groups of `view[i:]` after them."""
    n = len(view)
    known = _facts.get(pins)
    if known is None or len(known) >= FACTS_CACHE:
        known = _facts[pins] = {}
    facts: list[_Facts] = []
    for m in view[i:]:
        hit = known.get(id(m))
        if hit is None or hit[0] is not m:
            hit = known[id(m)] = (m, _facts_of(m, pins))
        facts.append(hit[1])
    base = i
    while i < n:
        ids, n_calls, results, _, _, pinned, summary = facts[i - base]
        if ids is not None:
            # the messages right after it that answer one of its calls (none an assistant's)
            j = i + 1
            pure = True
            answered: list[str] = []
            while j < n:
                _, _, answers, may_answer, tool_result, also_pinned, also_summary = facts[j - base]
                if not (may_answer and any(c in ids for c in answers)):
                    break
                pure = pure and tool_result
                answered.extend(answers)
                pinned = pinned or also_pinned
                summary = summary or also_summary
                j += 1
            complete = pure and len(ids) == n_calls and len(answered) == len(ids) and set(answered) == ids
            groups.append(
                Group(
                    index=len(groups),
                    start=i,
                    end=j,
                    exchange=True,
                    complete=complete,
                    pinned=pinned,
                    summary=summary,
                )
            )
            i = j
        else:
            groups.append(
                Group(
                    index=len(groups),
                    start=i,
                    end=i + 1,
                    exchange=False,
                    complete=not results,  # (a tool result with no call before it: an orphan)
                    pinned=pinned,
                    summary=summary,
                )
            )
            i += 1
    return groups


class Unpaired(Struct, frozen=True):
    """Tool call ids with no result in the view, and result call ids with no call. Falsy when none."""

    calls: tuple[str, ...] = ()
    results: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.calls or self.results)


def unpaired(view: Sequence[Message]) -> Unpaired:
    """Orphan calls and orphan results in a view, in view order."""
    call_ids: list[str] = []
    result_ids: list[str] = []
    for m in view:
        for b in m.blocks:
            if isinstance(b, ToolResultBlock):
                result_ids.append(b.call_id)
        call_ids.extend(c.id for c in m.tool_calls)
    calls, results = set(call_ids), set(result_ids)
    return Unpaired(
        calls=tuple(c for c in call_ids if c not in results),
        results=tuple(r for r in result_ids if r not in calls),
    )


def pins(view: Sequence[Message], rule: Pins = FLOOR) -> tuple[Message, ...]:
    """The pinned messages of a view under `rule` (the policy's, `Budget.pins`; default
    OpenCollab's: source priority >= PIN_FLOOR)."""
    return tuple(m for m in view if rule(m))


def pin_label(source: Source) -> str:
    """ "task, priority 80": a source's kind and priority, as sentences use it."""
    return f"{source.kind.value.replace('_', ' ')}, priority {source.priority}"
