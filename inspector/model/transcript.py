"""A transcript: the ledger's messages, its segments, the requests made with it, recorded events."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .message import Message


class Usage(BaseModel):
    """What the provider billed for one request."""

    model_config = ConfigDict(frozen=True)

    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0
    reasoning: int = 0

    @property
    def context(self) -> int:
        """The request's whole input: what the context window held (input + cache write + cache read)."""
        return self.input + self.cache_read + self.cache_write

    @property
    def spent(self) -> int:
        """Tokens this request cost in all: its whole input plus its output."""
        return self.context + self.output


class Request(BaseModel):
    """One model call. Request k was made with `ledger_len` messages of segment `segment`.

    `index` is 1-based, as users count requests ("request 212").
    """

    model_config = ConfigDict(frozen=True)

    index: int
    response_id: str | None = None
    """The id of the Message that is this request's response."""
    model: str | None = None
    usage: Usage | None = None
    segment: int = 0
    ledger_len: int = 0
    timestamp: str | None = None
    stop_reason: str | None = None


class EventKind(StrEnum):
    COMPACTION = "compaction"
    MICROCOMPACT = "microcompact"
    LAYER_FIRED = "layer_fired"


class RecordedEvent(BaseModel):
    """Something the harness itself recorded doing to its context."""

    model_config = ConfigDict(frozen=True)

    kind: EventKind
    trigger: str | None = None
    pre_tokens: int | None = None
    post_tokens: int | None = None
    tokens_saved: int | None = None
    after_request: int = 0
    """The 1-based index of the last request made before the event (0: before any request)."""
    segment: int | None = None
    """For a compaction: the ledger segment it began."""
    summary_id: str | None = None
    preserved_ids: tuple[str, ...] = ()
    cleared_tool_ids: tuple[str, ...] = ()
    layer: str | None = None
    call_file: str | None = None
    """The file holding the compaction's own model call (Claude Code `agent-acompact-*`)."""
    timestamp: str | None = None
    file: str | None = None
    line: int | None = None


class LoadIssue(BaseModel):
    """A problem met while loading; loading goes on."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    reason: str


class Segment(BaseModel):
    """A stretch of the ledger between compactions: message ids in the order the harness held them."""

    model_config = ConfigDict(frozen=True)

    index: int
    message_ids: tuple[str, ...] = ()
    started_by: int | None = None
    """Index into `Transcript.events` of the compaction that began this segment."""


class SubagentRef(BaseModel):
    """A subagent's own transcript, listed under its parent."""

    model_config = ConfigDict(frozen=True)

    agent_id: str
    path: str | None = None
    """Its file; None for inline sidechains (Claude Code 1.0), which live in the parent's file."""
    layout: str = ""
    agent_type: str | None = None
    description: str | None = None
    tool_use_id: str | None = None
    messages: int = 0
    requests: int = 0


class AbandonedBranch(BaseModel):
    """Messages on a branch a rewind left behind: kept in the file, not in the ledger."""

    model_config = ConfigDict(frozen=True)

    fork_id: str
    """The message both branches grew from."""
    message_ids: tuple[str, ...] = ()
    first_line: int = 0
    preview: str = ""


class Transcript(BaseModel):
    """Everything a reader makes of a session."""

    format: str
    path: str
    session_id: str | None = None
    model: str | None = None
    window: int | None = None
    """The context window the transcript states, where it states one."""
    title: str | None = None
    messages: list[Message] = Field(default_factory=list)
    """Every message of the active branch, across all segments, in order."""
    segments: list[Segment] = Field(default_factory=list)
    requests: list[Request] = Field(default_factory=list)
    events: list[RecordedEvent] = Field(default_factory=list)
    subagents: list[SubagentRef] = Field(default_factory=list)
    abandoned: list[AbandonedBranch] = Field(default_factory=list)
    load_issues: list[LoadIssue] = Field(default_factory=list)
    skipped: dict[str, int] = Field(default_factory=dict)
    """Records that are not conversation, counted by type."""

    _by_id: dict[str, Message] | None = PrivateAttr(default=None)
    _by_id_of: tuple[int, int] = PrivateAttr(default=(0, -1))
    """(id of the `messages` list, its length) when `_by_id` was built."""
    _segment_messages: dict[int, tuple[Segment, dict[str, Message], tuple[Message, ...] | None]] = (
        PrivateAttr(default_factory=dict)
    )
    """Segment index -> (the segment, the index it was resolved with, its messages in order; None
    when an id of it names no message)."""

    def _index(self) -> dict[str, Message]:
        private = self.__pydantic_private__  # read directly: this is on every request's path
        assert private is not None
        cached: dict[str, Message] | None = private["_by_id"]
        messages = self.messages
        key = (id(messages), len(messages))
        if cached is None or private["_by_id_of"] != key:
            cached = {m.id: m for m in messages}
            self._by_id = cached
            self._by_id_of = key
        return cached

    def adopt_index(self, previous: Transcript, changed: Iterable[Message]) -> None:
        """Index this transcript's messages from `previous`'s index plus `changed` (the messages
        that are new or differ), for a transcript that extends `previous` by what a followed file
        added: a copy of a dict instead of a pass over every message."""
        by_id = dict(previous._index())
        for m in changed:
            by_id[m.id] = m
        self._by_id = by_id
        self._by_id_of = (id(self.messages), len(self.messages))

    def _segment_tuple(self, index: int) -> tuple[Message, ...] | None:
        """Every message of segment `index`, in ledger order (resolved once per segment)."""
        seg = self.segments[index]
        by_id = self._index()
        assert self.__pydantic_private__ is not None
        cache: dict[int, tuple[Segment, dict[str, Message], tuple[Message, ...] | None]] = (
            self.__pydantic_private__["_segment_messages"]
        )
        hit = cache.get(index)
        if hit is not None and hit[0] is seg and hit[1] is by_id:
            return hit[2]
        msgs: tuple[Message, ...] | None
        try:
            msgs = tuple([by_id[i] for i in seg.message_ids])
        except KeyError:
            msgs = None
        cache[index] = (seg, by_id, msgs)
        return msgs

    def message(self, message_id: str) -> Message:
        return self._index()[message_id]

    def request(self, index: int) -> Request:
        """The request with 1-based `index`."""
        if not 1 <= index <= len(self.requests):
            raise IndexError(f"request {index} is out of range 1..{len(self.requests)}")
        return self.requests[index - 1]

    def ledger(self, index: int) -> list[Message]:
        """The ledger as it stood when request `index` (1-based) was made."""
        return list(self.ledger_tuple(index))

    def ledger_tuple(self, index: int) -> tuple[Message, ...]:
        """`ledger(index)` as a tuple, sliced from the segment's messages (no lookup per message)."""
        req = self.request(index)
        msgs = self._segment_tuple(req.segment)
        if msgs is None:
            by_id = self._index()
            return tuple(by_id[i] for i in self.segments[req.segment].message_ids[: req.ledger_len])
        return msgs[: req.ledger_len]

    def response(self, index: int) -> Message | None:
        req = self.request(index)
        return self._index().get(req.response_id) if req.response_id else None

    def current_ledger(self) -> list[Message]:
        """The ledger as it stands now (the last segment, whole)."""
        if not self.segments:
            return []
        by_id = self._index()
        return [by_id[i] for i in self.segments[-1].message_ids]
