"""What reading the ledger's lines in file order accumulates: groups of lines that make one message,
each response's usage, model and stop reason, and the requests made of them."""

from __future__ import annotations

from collections import Counter

from msgspec import Struct, field
from msgspec.structs import replace

from inspector.model import (
    CONVERSATION,
    Block,
    Message,
    Request,
    Source,
    ToolCallBlock,
    ToolResultBlock,
    Usage,
)

from ..claude_code_sources import Classifier
from .records import CONVERSATION_TYPES, _Node


class _Memo(Struct):
    """Built messages and requests, keyed by uuid, so building again after an append only makes
    what is new (a followed session rebuilds its transcript at every update)."""

    users: dict[str, tuple[Source, tuple[Block, ...], Message]] = field(default_factory=dict)
    """uuid -> (its source, blocks it was built from, the message)."""
    responses: dict[str, tuple[tuple[tuple[Block, ...], ...], str | None, Message]] = field(
        default_factory=dict
    )
    """First line's uuid -> (each line's blocks, stop reason, the merged message)."""
    requests: dict[_RequestFields, Request] = field(default_factory=dict)

    keep: bool = True
    """False for a one-shot read: nothing is kept (nothing will be built again)."""


def _named(blocks: tuple[Block, ...], call_names: dict[str, str]) -> tuple[Block, ...]:
    """`blocks` with each tool result named by the call `call_names` holds for it (the calls of
    `blocks` go in first, in order); the very tuple when every name already agrees."""
    out: list[Block] | None = None
    for i, b in enumerate(blocks):
        if type(b) is ToolCallBlock:  # (exact types: the block structs have no subclasses)
            call_names[b.id] = b.name
        elif type(b) is ToolResultBlock:
            name = call_names.get(b.call_id)
            if name != b.tool_name:
                if out is None:
                    out = list(blocks)
                out[i] = replace(b, tool_name=name)
    return blocks if out is None else tuple(out)


class _Group(Struct):
    """The lines that make one message: one user line, or every line of one response (a struct:
    made in C, one for each message)."""

    lines: list[_Node]
    blocks: list[tuple[Block, ...]]
    rid: str | None
    """The response id (assistant groups only)."""
    source: Source = CONVERSATION
    """A user line's source, named when it was read (`claude_code_sources.Classifier`)."""


_RequestFields = tuple[int, str, str | None, Usage | None, int, int, str | None, str | None]
"""(index, response message id, model, usage, segment, ledger length, timestamp, stop reason)."""


def _request(f: _RequestFields) -> Request:
    return Request(
        index=f[0],
        response_id=f[1],
        model=f[2],
        usage=f[3],
        segment=f[4],
        ledger_len=f[5],
        timestamp=f[6],
        stop_reason=f[7],
    )


class _Acc(Struct):
    """What reading the ledger's lines in file order accumulates: tool names by call, each
    response's usage, model and stop reason, and the groups that become messages."""

    call_names: dict[str, str] = field(default_factory=dict)
    usage_by_rid: dict[str, Usage] = field(default_factory=dict)
    model_by_rid: dict[str, str] = field(default_factory=dict)
    stop_by_rid: dict[str, str] = field(default_factory=dict)
    sources: Classifier = field(default_factory=Classifier)
    """Names each user line's source, in ledger order (`claude_code_sources`)."""
    groups: list[_Group] = field(default_factory=list)
    group_of_rid: dict[str, int] = field(default_factory=dict)

    def request_fields(self, index: int, m: Message, segment: int, ledger_len: int) -> _RequestFields:
        """What the request made with response message `m` is, from what the lines said."""
        rid = m.response_id
        assert rid is not None
        return (
            index,
            m.id,
            self.model_by_rid.get(rid),
            self.usage_by_rid.get(rid),
            segment,
            ledger_len,
            m.timestamp,
            self.stop_by_rid.get(rid),
        )

    def take(self, n: _Node) -> int | None:
        """Read one member line; the index of the group it joined or began (None: not a message)."""
        rec = n.record
        rtype = n.type
        if rec is None or rtype not in CONVERSATION_TYPES:
            return None
        blocks = _named(n.blocks, self.call_names)
        if rtype == "assistant":
            rid = n.rid or n.uuid
            u = n.usage
            if u is not None:
                prev = self.usage_by_rid.get(rid)
                if prev is None or u.output > prev.output:
                    self.usage_by_rid[rid] = u
            if n.model is not None:
                self.model_by_rid[rid] = n.model
            if n.stop is not None:
                self.stop_by_rid[rid] = n.stop
            gi = self.group_of_rid.get(rid)
            if gi is not None:
                self.groups[gi].lines.append(n)
                self.groups[gi].blocks.append(blocks)
                return gi
            self.group_of_rid[rid] = len(self.groups)
            self.groups.append(_Group([n], [blocks], rid))
            return len(self.groups) - 1
        self.groups.append(_Group([n], [blocks], None, self.sources.source(rec, blocks)))
        return len(self.groups) - 1


def commonest(versions: Counter[str]) -> str | None:
    """The version most lines carry (on a tie, the first seen), or None when none carries one."""
    return versions.most_common(1)[0][0] if versions else None


def _count_model(models: Counter[str], request: Request, by: int) -> None:
    if request.model and request.model != "<synthetic>":
        models[request.model] += by
