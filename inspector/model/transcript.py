"""A transcript: the ledger's messages, its segments, the requests made with it, recorded events."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from msgspec import Struct, field

from .message import Message


class Usage(Struct, frozen=True, kw_only=True):
    """What the provider billed for one request."""

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


class Request(Struct, frozen=True, kw_only=True):
    """One model call. Request k was made with `ledger_len` messages of segment `segment`.

    `index` is 1-based, as users count requests ("request 212").
    """

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
    CONTEXT_CLEARED = "context_cleared"
    """The harness began a fresh context without summarizing (plan mode's "clear context and
    implement"): a new ledger segment, like a compaction, but nothing was folded into a summary."""
    API_ERROR = "api_error"
    """A model call that failed (overloaded, rate limit, prompt too long): not a request."""


SEGMENT_EVENTS = frozenset({EventKind.COMPACTION, EventKind.CONTEXT_CLEARED})
"""The recorded events that begin a ledger segment."""


class RecordedEvent(Struct, frozen=True, kw_only=True):
    """Something the harness itself recorded doing to its context."""

    kind: EventKind
    style: str | None = None
    """How the harness wrote a compaction: `compact_boundary` (a boundary line), `summary_root`
    (early Claude Code 1.0: the summary line is a new root), `new_root` (a fresh context), or
    the format's own record (`compacted`, a summary message)."""
    detail: str | None = None
    """What the harness said of it (an API error's text)."""
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


class LoadIssue(Struct, frozen=True, kw_only=True):
    """A problem met while loading; loading goes on."""

    file: str
    line: int
    reason: str


class Segment(Struct, frozen=True, kw_only=True):
    """A stretch of the ledger between compactions: message ids in the order the harness held them."""

    index: int
    message_ids: tuple[str, ...] = ()
    started_by: int | None = None
    """Index into `Transcript.events` of the compaction that began this segment."""


class SubagentRef(Struct, frozen=True, kw_only=True):
    """A subagent's own transcript, listed under its parent."""

    agent_id: str
    path: str | None = None
    """Its file; None for inline sidechains (Claude Code 1.0), which live in the parent's file."""
    layout: str = ""
    agent_type: str | None = None
    description: str | None = None
    tool_use_id: str | None = None
    messages: int = 0
    requests: int = 0


class AbandonedBranch(Struct, frozen=True, kw_only=True):
    """Messages on a branch a rewind left behind: kept in the file, not in the ledger."""

    fork_id: str
    """The message both branches grew from."""
    message_ids: tuple[str, ...] = ()
    first_line: int = 0
    preview: str = ""


class Transcript(Struct, kw_only=True, dict=True, weakref=True):
    """Everything a reader makes of a session.

    Its lookups (message by id, a segment's messages) are built when first asked and kept in the
    instance's own dict, beside the fields: never compared, never written out."""

    format: str
    path: str
    session_id: str | None = None
    model: str | None = None
    window: int | None = None
    """The context window the transcript states, where it states one."""
    harness_version: str | None = None
    """The version of the harness that wrote it, as the reader found it recorded (Claude Code: the
    `version` most of its lines carry; Codex: `session_meta.cli_version`; opencode: the session's
    `version`); None where the format records none (OpenCollab, chat JSON)."""
    title: str | None = None
    messages: list[Message] = field(default_factory=list)
    """Every message of the active branch, across all segments, in order."""
    segments: list[Segment] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    events: list[RecordedEvent] = field(default_factory=list)
    subagents: list[SubagentRef] = field(default_factory=list)
    abandoned: list[AbandonedBranch] = field(default_factory=list)
    load_issues: list[LoadIssue] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    """Records that are not conversation, counted by type."""
    sessions_in_source: int | None = None
    """How many sessions the database or folder it was read from holds (an opencode database, a
    folder of Codex or Claude Code sessions); None: the file read is this one session."""
    session_named: bool = False
    """This session was named (`--session ID`, a picker row); else it is the newest of them."""

    def messages_by_id(self) -> dict[str, Message]:
        """Every message by its id (built when first asked, kept while `messages` is the same
        list of the same length; never change the dict)."""
        cache = self.__dict__
        cached: dict[str, Message] | None = cache.get("_by_id")
        messages = self.messages
        key = (id(messages), len(messages))
        # built for the `messages` list of this identity and length
        if cached is None or cache.get("_by_id_of") != key:
            cached = cache["_by_id"] = {m.id: m for m in messages}
            cache["_by_id_of"] = key
        return cached


    def adopt_index(self, previous: Transcript, changed: Iterable[Message]) -> None:
        """Index this transcript's messages from `previous`'s index plus `changed` (the messages
        that are new or differ), for a transcript that extends `previous` by what a followed file
        added: a copy of a dict instead of a pass over every message."""
        by_id = dict(previous.messages_by_id())
        for m in changed:
            by_id[m.id] = m
        self.__dict__["_by_id"] = by_id
        self.__dict__["_by_id_of"] = (id(self.messages), len(self.messages))

    def segment_messages(self, index: int) -> tuple[Message, ...] | None:
        """Every message of segment `index`, in ledger order (resolved once per segment); None when
        an id of the segment names no message."""
        seg = self.segments[index]
        by_id = self.messages_by_id()
        # segment index -> (the segment, the index it was resolved with, its messages in order;
        # None when an id of it names no message)
        cache: dict[int, tuple[Segment, dict[str, Message], tuple[Message, ...] | None]] = (
            self.__dict__.setdefault("_segment_messages", {})
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
        return self.messages_by_id()[message_id]

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
        msgs = self.segment_messages(req.segment)
        if msgs is None:
            by_id = self.messages_by_id()
            return tuple(by_id[i] for i in self.segments[req.segment].message_ids[: req.ledger_len])
        return msgs[: req.ledger_len]

    def response(self, index: int) -> Message | None:
        req = self.request(index)
        return self.messages_by_id().get(req.response_id) if req.response_id else None

    def current_ledger(self) -> list[Message]:
        """The ledger as it stands now (the last segment, whole)."""
        if not self.segments:
            return []
        by_id = self.messages_by_id()
        return [by_id[i] for i in self.segments[-1].message_ids]
