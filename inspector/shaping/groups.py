"""Groups, pairing and pins: the structure layers must respect.

A group is an assistant message with tool calls plus the messages right after it whose tool results
answer those calls (a result's `call_id` pairs with a `ToolCallBlock.id`); every other message is a
group of its own. Layers remove or fold whole groups, never half of one, so no call loses its
result and no result its call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from inspector.model import Message, Role, Source, ToolResultBlock


@dataclass(frozen=True, slots=True)
class Group:
    """`view[start:end]`. `exchange`: led by an assistant message with tool calls.

    `complete` (for an exchange): every call has exactly one result inside the group, every result
    in it answers one of the calls, and every follower is a pure tool-result message (no text).
    A non-exchange group is complete unless it is a tool result with no call before it (an orphan).
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


def group_spans(view: Sequence[Message]) -> list[Group]:
    """Split a view into groups, in order. Linear in the number of messages."""
    groups: list[Group] = []
    n = len(view)
    i = 0
    while i < n:
        leader = view[i]
        calls = leader.tool_calls if leader.role is Role.ASSISTANT else ()
        if calls:
            ids = frozenset(c.id for c in calls)
            j = i + 1
            while j < n and _answers(view[j], ids):
                j += 1
            answered: list[str] = []
            pure = True
            for follower in view[i + 1 : j]:
                pure = pure and follower.is_tool_result
                answered.extend(b.call_id for b in follower.blocks if isinstance(b, ToolResultBlock))
            complete = pure and len(ids) == len(calls) and len(answered) == len(ids) and set(answered) == ids
            members = view[i:j]
            groups.append(
                Group(
                    index=len(groups),
                    start=i,
                    end=j,
                    exchange=True,
                    complete=complete,
                    pinned=any(m.pinned for m in members),
                    summary=any(m.is_summary for m in members),
                )
            )
            i = j
        else:
            orphan = any(isinstance(b, ToolResultBlock) for b in leader.blocks)
            groups.append(
                Group(
                    index=len(groups),
                    start=i,
                    end=i + 1,
                    exchange=False,
                    complete=not orphan,
                    pinned=leader.pinned,
                    summary=leader.is_summary,
                )
            )
            i += 1
    return groups


@dataclass(frozen=True, slots=True)
class Unpaired:
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


def pins(view: Sequence[Message]) -> tuple[Message, ...]:
    """The pinned messages of a view (source priority >= PIN_FLOOR)."""
    return tuple(m for m in view if m.pinned)


def pin_label(source: Source) -> str:
    """ "task, priority 80": a source's kind and priority, as sentences use it."""
    return f"{source.kind.value.replace('_', ' ')}, priority {source.priority}"
