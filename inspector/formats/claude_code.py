"""Claude Code session transcripts (`~/.claude/projects/<cwd>/<session>.jsonl`).

How a file becomes a ledger (DESIGN.md §4, notes/claude-code-transcripts.md §2-§5):
- Lines form a tree through `uuid`/`parentUuid`; order comes from that tree, not from timestamps.
  Every line with a uuid is a node (progress lines too: conversation lines can hang off them).
- The active branch is the chain from the newest conversation line back to a root. Where the
  chain meets a `compact_boundary` (a root), it goes on through `logicalParentUuid` (or the
  preserved segment) into the history before the compaction.
- Lines beside the chain are parallel tool traffic, not a fork, when they repeat a response on the
  chain (same `message.id`) or answer tool calls made on it; anything else beside the chain is a
  branch a rewind abandoned, reported but not mixed in.
- One API response is several `assistant` lines sharing `message.id`: their blocks are merged
  into one message and the largest `output_tokens` is kept. A request's context size is
  input + cache_creation + cache_read.
- `compact_boundary` starts a new ledger segment: the `isCompactSummary` message plus any
  preserved messages, then what follows. `microcompact_boundary` is recorded as an event.
- Non-conversation lines (progress, file-history-snapshot, queue-operation, system subtypes
  other than the two boundaries, and any type this reader does not know) are counted, skipped.
- Tool results are read from `message.content` (what the model saw), never `toolUseResult`.
- Each line is read once, as it arrives: lines of the usual shape by msgspec's typed decoder
  (`claude_code_lines`, which skips undecoded what the ledger never reads), any other line the
  long way (`_take_long`: orjson, checks, load issues); both make the same node, which holds what
  its message says (blocks, usage, ids). Nesting depth is checked on what is kept.
- Subagents: `<session>/subagents/agent-*.jsonl` (2.1), `agent-*.jsonl` beside the session with
  the same sessionId (2.0), or inline `isSidechain` lines (1.0). `agent-acompact-*` files are a
  compaction's own call: linked to its event, not listed as subagents.
"""

from __future__ import annotations

import json
import re
from array import array
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson
from msgspec import DecodeError, Struct
from msgspec.structs import replace

from inspector.model import (
    CONVERSATION,
    SEGMENT_EVENTS,
    AbandonedBranch,
    Block,
    EventKind,
    LoadIssue,
    MediaBlock,
    Message,
    Origin,
    ReasoningBlock,
    RecordedEvent,
    Request,
    Role,
    Segment,
    Source,
    SubagentRef,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Transcript,
    Usage,
)

from .base import (
    MAX_LINE_BYTES,
    MAX_TOKENS,
    LineSplitter,
    LoaderError,
    LoadIssues,
    Overlong,
    Pairing,
    Progress,
    decode_json_line,
    describe,
    feed_file,
    issue_total,
    short,
    token_count,
    too_deep,
    too_deep_reason,
)
from .claude_code_lines import Line, TypedMessage, decode, decode_line, too_deep_input
from .claude_code_lines import blocks as typed_blocks
from .claude_code_lines import usage as typed_usage
from .claude_code_sources import Classifier, harness_written
from .json_array import first_elements, is_array

FORMAT = "claude-code"
CONVERSATION_TYPES = frozenset({"user", "assistant"})
KNOWN_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "progress",
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "custom-title",
        "ai-title",
        "last-prompt",
        "mode",
        "permission-mode",
        "pr-link",
        "attachment",
        "content-replacement",
        "agent-name",
        "agent-setting",
        "bridge-session",
        "file-history-delta",
    }
)
SNIFF_KEYS = frozenset({"uuid", "parentUuid", "sessionId", "leafUuid", "messageId"})
TITLE_TYPES = ("summary", "custom-title", "ai-title")
BOUNDARY_SUBTYPES = ("compact_boundary", "microcompact_boundary")
"""(Tuples: a subtype may be any JSON value, a list included, so it is compared, never hashed.)"""
MAX_HOPS_OFF_CHAIN = 64
"""How many non-conversation lines (progress, system) a line may hang below the chain by and still
be taken as hanging off it (`_Builder._hangs_off`)."""
MAX_BROKEN_GAP = 64
"""How many lines after a broken line a line whose parent is missing is taken to hang off it."""
SALVAGE_BYTES = 4096
"""How far into a broken line its `parentUuid` and `isSidechain` are looked for (they come first)."""
_UUID_RE = rb'"([0-9A-Za-z][0-9A-Za-z_.:-]{0,127})"'
_UUID_KEY = re.compile(rb'"uuid"\s*:\s*' + _UUID_RE)
_PARENT_KEY = re.compile(rb'"parentUuid"\s*:\s*(?:' + _UUID_RE + rb"|(null))")
_SIDECHAIN_KEY = re.compile(rb'"isSidechain"\s*:\s*true')
BOUNDARY = "compact_boundary"
SUMMARY_ROOT = "summary_root"
"""An old-style compaction (early 1.0.x): the summary line is a new root, with no boundary line."""
NEW_ROOT = "new_root"
"""A new root that is no summary: a fresh context (plan mode's "clear context and implement")."""
MAX_REJOIN = 64
"""How many lines may leave the end of the active branch (parallel tool traffic the new line does
not hang off) for a transcript to still be extended rather than built again."""


class _Node(Struct):
    """One line of the file that has a uuid: the tree's node, slimmed to what the ledger needs (a
    struct: most lines of a session make one)."""

    uuid: str
    parent: str | None
    type: str
    line: int
    order: int
    sidechain: bool = False
    record: dict[str, Any] | None = None
    """What the ledger reads of a conversation or boundary line's own fields (`KEPT`, without the
    message); None for progress and the like."""
    file: str | None = None
    """Set for a line recovered from another file (a compaction call's copy of hook output)."""
    blocks: tuple[Block, ...] = ()
    """A conversation line's blocks (tool results named by the calls read before them in the file:
    `_Acc.take` names them by the ledger's own calls)."""
    usage: Usage | None = None
    """An assistant line's usage."""
    rid: str | None = None
    """The message's id (on an assistant line: the response it is part of)."""
    model: str | None = None
    stop: str | None = None


@dataclass
class _State:
    nodes: dict[str, _Node] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    """The uuids of the nodes with a record (conversation and boundary lines), in file order."""
    issues: LoadIssues = field(default_factory=LoadIssues)
    skipped: Counter[str] = field(default_factory=Counter)
    title: str | None = None
    session_id: str | None = None
    versions: Counter[str] = field(default_factory=Counter)
    """The harness `version` the lines carry, counted (the transcript records the commonest)."""
    broken: array[int] = field(default_factory=lambda: array("q"))
    """Line numbers of the lines that did not decode (`ClaudeCodeReader._salvage`), packed: a file
    of junk holds a million of them."""


@dataclass
class _Memo:
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


KEPT = (
    "type",
    "subtype",
    "timestamp",
    "isMeta",
    "isCompactSummary",
    "isApiErrorMessage",
    "agentId",
    "compactMetadata",
    "microcompactMetadata",
    "logicalParentUuid",
)
"""A conversation or boundary line's own fields the ledger reads (its message is read at once)."""


def _kept(rec: dict[str, Any]) -> dict[str, Any]:
    """The fields of `rec` the ledger reads later (`KEPT`)."""
    return {k: rec[k] for k in KEPT if k in rec}


class ClaudeCodeReader:
    """Incremental reader: feed it bytes as they arrive, ask for the transcript at any time."""

    def __init__(self, path: str | Path, *, with_subagents: bool = True, follow: bool = True) -> None:
        """`follow` False: the transcript is asked for once, at the end (nothing is kept for
        building it again)."""
        self.path = Path(path)
        self.file = str(path)
        self.with_subagents = with_subagents
        self._lines = LineSplitter(max_line=MAX_LINE_BYTES)
        self._state = _State()
        self._count = 0
        self._memo = _Memo(keep=follow)
        self._last_usage: tuple[object, Usage | None] | None = None
        self._call_names: dict[str, str] = {}
        """Tool call id -> name, of every call read so far (names results as they are read)."""
        self._built: _Built | None = None
        self.builds = 0
        """Transcripts built from every line."""
        self.extensions = 0
        """Transcripts made by extending the one before (see `transcript`)."""

    def feed(self, data: bytes) -> None:
        first, lines = self._lines.split(data)
        state = self._state
        nodes = state.nodes
        order = state.order
        skipped = state.skipped
        take_line = self._take_line
        progress = 0
        for line_no, raw in enumerate(lines, first):
            if type(raw) is not bytes:  # an `Overlong`
                self._take_long(line_no, raw)
                continue
            try:
                line = decode(raw)
            except (DecodeError, RecursionError):  # not the usual shape (`claude_code_lines`)
                self._take_long(line_no, raw)
                continue
            if line.type == "progress" and state.session_id is not None:
                # most lines of a session (hooks, tool and agent progress): a node of the tree, no more
                progress += 1
                uuid = line.uuid
                if uuid is not None and uuid not in nodes:
                    nodes[uuid] = _Node(
                        uuid, line.parent_uuid, "progress", line_no, self._count, bool(line.is_sidechain)
                    )
                    self._count += 1
                    order.append(uuid)
            elif not take_line(line_no, line):
                self._take_long(line_no, raw)
        if progress:
            skipped["progress"] += progress

    def finish(self) -> None:
        """At end of file: a held-back last line without its newline is read if it is whole JSON."""
        for line_no, raw in self._lines.flush():
            self._take(line_no, raw, torn_ok=False)

    def note(self, line: int, reason: str) -> None:
        """A load issue about the file as a whole (`line` 0) or one of its lines."""
        self._state.issues.append(LoadIssue(file=self.file, line=line, reason=reason))

    @property
    def lines_read(self) -> int:
        return self._lines.lines_seen

    def _take(self, line_no: int, raw: bytes, torn_ok: bool = True) -> None:
        line = decode_line(raw) if type(raw) is bytes else None  # not an `Overlong`
        if line is None or not self._take_line(line_no, line):
            self._take_long(line_no, raw, torn_ok)

    def _take_line(self, line_no: int, line: Line) -> bool:
        """A line in the usual shape (`claude_code_lines`): what `_take_long` makes of it, made
        from the decoded structs. False: a line `_take_long` reads (a boundary, a title, or a
        message line it has something to say about)."""
        state = self._state
        rtype = line.type
        if rtype in TITLE_TYPES or (rtype == "system" and line.subtype in BOUNDARY_SUBTYPES):
            return False
        if state.session_id is None and line.session_id is not None:
            state.session_id = line.session_id
        uuid = line.uuid
        if rtype not in CONVERSATION_TYPES:
            # most lines of a session (hooks, tool and agent progress, snapshots): a node of the tree
            key = rtype if rtype != "system" else _system_key(line.subtype)
            if line.version is not None:
                state.versions[line.version] += 1
            state.skipped[key if rtype in KNOWN_TYPES else f"unknown:{short(rtype)}"] += 1
            if uuid is not None and uuid not in state.nodes:
                state.nodes[uuid] = _Node(
                    uuid, line.parent_uuid, rtype, line_no, self._count, bool(line.is_sidechain)
                )
                self._count += 1
                state.order.append(uuid)
            return True
        msg = line.message
        if msg is None or uuid is None or too_deep_input(msg):
            return False
        if line.version is not None:
            state.versions[line.version] += 1
        if uuid in state.nodes:
            self._duplicate(line_no, uuid)
            return True
        state.nodes[uuid] = _Node(
            uuid=uuid,
            parent=line.parent_uuid,
            type=rtype,
            line=line_no,
            order=self._count,
            sidechain=bool(line.is_sidechain),
            record={
                "type": rtype,
                "subtype": line.subtype,
                "timestamp": line.timestamp,
                "isMeta": line.is_meta,
                "isCompactSummary": line.is_compact_summary,
                "isApiErrorMessage": line.is_api_error_message,
                "agentId": line.agent_id,
            },
            blocks=typed_blocks(msg, self._call_names),
            usage=self._usage(msg) if rtype == "assistant" else None,
            rid=msg.id,
            model=msg.model,
            stop=msg.stop_reason,
        )
        self._count += 1
        state.order.append(uuid)
        state.kept.append(uuid)
        return True

    def _usage(self, msg: TypedMessage) -> Usage | None:
        """`typed_usage(msg)`; the same object as the line before's when the figures are the same
        (the lines of one response mostly repeat its usage)."""
        u = msg.usage
        if u is None:
            return None
        last = self._last_usage
        if last is not None and last[0] == u:
            return last[1]
        made = typed_usage(msg)
        self._last_usage = (u, made)
        return made

    def _salvage(self, line_no: int, raw: bytes | Overlong) -> None:
        """A line that does not decode (torn, bad bytes, NaN): its message is lost, but the tree
        must not be. Where its own `uuid` and `parentUuid` can still be read from its bytes, it
        stays in the tree as a node without a message, so the lines after it still reach the lines
        before it; where they cannot (a torn line loses its tail, and `uuid` comes after the
        message), `_Builder._chain` links across it by file order (`broken`)."""
        state = self._state
        state.broken.append(line_no)
        if type(raw) is not bytes:
            return
        head = raw[:SALVAGE_BYTES]
        uuid = _UUID_KEY.search(raw)
        parent = _PARENT_KEY.search(head)
        if uuid is None or parent is None:
            return
        u = uuid.group(1).decode("ascii")
        if u in state.nodes:
            return
        p = parent.group(1)  # (None: `"parentUuid": null`)
        state.nodes[u] = _Node(
            u,
            p.decode("ascii") if p is not None else None,
            "broken",
            line_no,
            self._count,
            _SIDECHAIN_KEY.search(head) is not None,
        )
        self._count += 1
        state.order.append(u)

    def _duplicate(self, line_no: int, uuid: str) -> None:
        first = self._state.nodes[uuid]
        self._state.issues.append(
            LoadIssue(
                file=self.file,
                line=line_no,
                reason=f"duplicate uuid {short(uuid)} (first at line {first.line}); kept the first",
            )
        )

    def _take_long(self, line_no: int, raw: bytes, torn_ok: bool = True) -> None:
        """Any line, decoded whole and checked in Python, with a load issue for what is wrong."""
        state = self._state
        before = state.issues.total
        # nesting depth is checked below, on what is kept of the line: the rest (file-history
        # snapshots are the bulk of the deep-looking lines) is only counted, never recursed into
        rec = decode_json_line(raw, self.file, line_no, state.issues, depth=False)
        if rec is None:
            if state.issues.total > before:  # broken, not blank: it costs itself, not its children
                self._salvage(line_no, raw)
            if not torn_ok and state.issues.total > before and len(state.issues) == state.issues.total:
                last = state.issues[-1]
                state.issues[-1] = LoadIssue(
                    file=last.file,
                    line=last.line,
                    reason=f"truncated last line ({len(raw):,} bytes, no newline): {last.reason}",
                )
            return
        rtype = rec.get("type")
        if not isinstance(rtype, str):
            state.issues.append(LoadIssue(file=self.file, line=line_no, reason="record has no `type`"))
            return
        if state.session_id is None and isinstance(rec.get("sessionId"), str):
            state.session_id = rec["sessionId"]
        if isinstance(rec.get("version"), str):
            state.versions[rec["version"]] += 1
        if rtype == "summary":
            if isinstance(rec.get("summary"), str) and state.title is None:
                state.title = rec["summary"]
            state.skipped[rtype] += 1
            return
        if rtype in ("custom-title", "ai-title"):
            title = rec.get("customTitle") or rec.get("aiTitle") or rec.get("title")
            if isinstance(title, str):
                state.title = title
        uuid = rec.get("uuid")
        is_conv = rtype in CONVERSATION_TYPES
        is_boundary = rtype == "system" and rec.get("subtype") in BOUNDARY_SUBTYPES
        kept: dict[str, Any] | None = None
        msg = rec.get("message")
        if is_conv or is_boundary:
            kept = _kept(rec)
            if isinstance(msg, dict):
                # what is read of the message (its ids and names are read only as strings)
                kept["message"] = {"content": msg.get("content"), "usage": msg.get("usage")}
            if too_deep(kept, raw):
                state.issues.append(LoadIssue(file=self.file, line=line_no, reason=too_deep_reason()))
                return
            kept.pop("message", None)
            if is_conv and not isinstance(msg, dict):
                state.issues.append(
                    LoadIssue(
                        file=self.file, line=line_no, reason=f"{rtype} record without a `message` object"
                    )
                )
                return
            if not isinstance(uuid, str):
                state.issues.append(
                    LoadIssue(file=self.file, line=line_no, reason=f"{rtype} record without a `uuid`")
                )
                return
        else:
            key = rtype if rtype != "system" else _system_key(rec.get("subtype"))
            state.skipped[key if rtype in KNOWN_TYPES else f"unknown:{short(rtype)}"] += 1
        if not isinstance(uuid, str):
            return
        if uuid in state.nodes:
            if is_conv or is_boundary:
                self._duplicate(line_no, uuid)
            return
        if is_conv or is_boundary:
            state.issues.extend(
                LoadIssue(file=self.file, line=line_no, reason=p) for p in _problems(rec, is_boundary)
            )
        parent = rec.get("parentUuid")
        node = _Node(
            uuid=uuid,
            parent=parent if isinstance(parent, str) else None,
            type=rtype,
            line=line_no,
            order=self._count,
            sidechain=bool(rec.get("isSidechain")),
            record=kept,
        )
        if is_conv:
            assert isinstance(msg, dict)
            _read_message(node, msg, self._call_names)
        self._count += 1
        state.nodes[uuid] = node
        state.order.append(uuid)
        if kept is not None:
            state.kept.append(uuid)

    def transcript(self) -> Transcript:
        """The transcript of everything fed so far (the partial last line is not included).

        After the first, a transcript is made by extending the one before when the lines added
        since only continue the active branch (what a followed file does almost always): the
        cost is that of the new lines. Anything else (a compaction, a rewind, a subagent line, a
        new compaction-call file) builds it again from every line."""
        state = self._state
        # the session's agent files (subagents and compaction calls), listed once for this update
        agents = _agent_files(self.path, state.session_id) if self.with_subagents else None
        calls = [p for p, _ in agents or () if _is_compaction_call(p)]
        calls_key = tuple(_file_key(p) for p in calls)
        built = self._built
        if built is not None and built.calls == calls_key:
            extended = self._extend(built, agents)
            if extended is not None:
                self.extensions += 1
                return extended
        full = _with_recovered_context(state, calls)
        builder = _Builder(self.file, full, self._memo)
        transcript = builder.build(agents)
        self._built = builder.built
        if self._built is not None:
            self._built.count = len(state.order)
            self._built.recovered = {u: n for u, n in full.nodes.items() if n.file is not None}
            self._built.calls = calls_key
            self._built.call_parents = frozenset(
                str(rec.get("parentUuid")) for p in calls for _, rec in _meta_lines(p)
            )
        self.builds += 1
        return transcript

    def _extend(self, built: _Built, agents: list[tuple[Path, str]] | None) -> Transcript | None:
        """`built`'s transcript with the lines read since, when they only continue its active
        branch; None when a full build is needed. Checks everything before changing anything."""
        state = self._state
        base = state.nodes
        new = [base[u] for u in state.order[built.count :]]
        recovered = built.recovered

        def node(uuid: str) -> _Node | None:
            n = base.get(uuid)
            return n if n is not None else recovered.get(uuid)

        old = built.transcript
        conv = [n for n in new if n.record is not None]
        for n in conv:
            if (
                n.type not in CONVERSATION_TYPES  # a compaction or microcompact boundary
                or n.sidechain
                or _is_api_error(n)
                or n.uuid in built.call_parents
                or n.uuid in built.preserved
            ):
                return None
        if built.missing and any(n.uuid in built.missing for n in new):
            return None  # a line that detached lines hang off has come: they join the tree
        if not conv and (
            issue_total(old.load_issues)
            == issue_total(built.chain_issues) + state.issues.total + built.pairing.issues().total
            and old.title == state.title
            and old.skipped == dict(Counter(state.skipped) + built.skipped_extra)
        ):
            built.count = len(state.order)
            return old
        # The newest line leads back to the old chain through new lines, or old lines that hold no
        # message (progress) or that the ledger already holds beside the chain (parallel tool
        # traffic). Where it meets the chain, the chain's tail after that point leaves it; that
        # tail must still be in the ledger as parallel traffic, or the ledger is not simply longer.
        path: list[_Node] = []
        dropped: list[_Node] = []
        if conv:
            cur: _Node | None = conv[-1]
            seen: set[str] = set()
            while cur is not None and cur.uuid not in built.on_chain:
                if cur.uuid in seen:
                    return None
                if cur.order < built.count and cur.record is not None and cur.uuid not in built.members:
                    return None  # an old line beside the ledger: a rewind's branch
                seen.add(cur.uuid)
                path.append(cur)
                cur = node(cur.parent) if cur.parent else None
            if cur is None:
                return None
            at = built.chain_pos[cur.uuid]
            if len(built.chain) - at - 1 > MAX_REJOIN:
                return None
            dropped = [d for u in built.chain[at + 1 :] if (d := node(u)) is not None]
            if len(dropped) != len(built.chain) - at - 1:
                return None
        # where an abandoned or detached line's ancestors meet the chain moves only if the chain
        # now runs through one of them (an old line the new path takes) or leaves the line they met
        # it at (the tail that drops off): then they are walked again, the rest kept as they are
        rewalk = bool(built.strays) and (
            any(n.uuid in built.meets for n in path if n.order < built.count)
            or any(d.uuid in built.forks for d in dropped)
        )
        rid_delta: Counter[str] = Counter()
        for n in dropped:
            if n.record is None:
                continue
            if n.type not in CONVERSATION_TYPES or _is_api_error(n):
                return None
            if n.type == "assistant":
                rid = n.rid
                if rid is None:
                    return None
                rid_delta[rid] -= 1
        for n in path:
            if n.type == "assistant" and n.record is not None and (rid := n.rid):
                rid_delta[rid] += 1
        if any(built.rid_count[r] + d <= 0 for r, d in rid_delta.items() if d < 0):
            return None  # a response would leave the chain, and the tool calls that came with it
        path_ids = {n.uuid for n in path}
        add_rids = {r for r, d in rid_delta.items() if d > 0 and built.rid_count[r] <= 0}
        add_calls = {c for n in path if n.type == "assistant" and n.record is not None for c in _call_ids(n)}
        members = {n.uuid for n in path if n.record is not None}
        users: list[_Node] = []
        for n in conv:
            if n.uuid in path_ids:
                continue
            assert n.record is not None
            if n.type == "assistant":
                rid = n.rid
                if rid is None or not (rid in built.chain_rids or rid in add_rids):
                    return None
                members.add(n.uuid)
                add_calls.update(_call_ids(n))
            else:
                users.append(n)
        for n in users + [n for n in dropped if n.type == "user" and n.record is not None]:
            assert n.record is not None
            if n.file is not None and n.parent in built.members:
                continue  # hook output recovered from a compaction call, after its tool result
            answers = _answers(n)
            if not answers or not all(a in built.chain_calls or a in add_calls for a in answers):
                return None
            members.add(n.uuid)
        for n in built.strays:
            assert n.record is not None
            if n.type == "assistant" and n.rid in add_rids:
                return None
            if n.type == "user":
                answers = _answers(n)
                if answers and all(a in built.chain_calls or a in add_calls for a in answers):
                    return None
                if n.file is not None and n.parent in members:
                    return None  # recovered hook output whose tool result joins the ledger
        # from here on, `built` is changed into the extended build
        built.count = len(state.order)
        if path:
            for n in dropped:
                built.on_chain.discard(n.uuid)
                del built.chain_pos[n.uuid]
            del built.chain[len(built.chain) - len(dropped) :]
            for n in reversed(path):
                built.on_chain.add(n.uuid)
                built.chain_pos[n.uuid] = len(built.chain)
                built.chain.append(n.uuid)
            built.leaf = path[0].uuid
        abandoned = list(old.abandoned)
        if rewalk:
            walked = state if not recovered else _State(nodes={**base, **recovered})
            walker = _Builder(self.file, walked, self._memo)
            walker.skipped = Counter()
            abandoned = walker._abandoned(built.strays, built.on_chain)
            for key in STRAY_COUNTS:
                del built.skipped_extra[key]
            built.skipped_extra.update(walker.skipped)
            built.meets, built.forks, built.missing = walker.meets, walker.forks, walker.missing
        built.rid_count.update(rid_delta)
        built.chain_rids |= add_rids
        built.chain_calls |= add_calls
        built.members |= members
        acc = built.acc
        builder = _Builder(self.file, state, self._memo)
        touched: set[int] = set()
        for n in new:
            if n.uuid in members:  # new lines only: the old ones the chain now runs through are read
                gi = acc.take(n)
                if gi is not None:
                    touched.add(gi)
        messages = list(old.messages)
        requests = list(old.requests)
        first_changed = min(touched) if touched else len(messages)
        built.pairing.truncate(first_changed)
        last = len(old.segments) - 1
        last_ids = built.last_ids
        for gi in sorted(touched):
            g = acc.groups[gi]
            m = builder._message(g, acc)
            if gi < len(messages):
                messages[gi] = m
            else:
                messages.append(m)
                last_ids.append(m.id)
            if g.rid is not None:
                ri = built.request_of.get(m.id)
                request = _request(
                    acc.request_fields(len(requests) + 1, m, last, len(last_ids) - 1)
                    if ri is None
                    else acc.request_fields(ri + 1, m, requests[ri].segment, requests[ri].ledger_len)
                )
                if ri is None:
                    built.request_of[m.id] = len(requests)
                    requests.append(request)
                    _count_model(built.models, request, 1)
                elif request != requests[ri]:
                    _count_model(built.models, requests[ri], -1)
                    _count_model(built.models, request, 1)
                    requests[ri] = request
        for m in messages[first_changed:]:
            built.pairing.add(m)
        segments = list(old.segments)
        if len(last_ids) != len(segments[-1].message_ids):
            segments[-1] = replace(segments[-1], message_ids=tuple(last_ids))
        models = +built.models
        subagents = list(built.inline)
        if agents is not None:
            subagents += _find_subagent_files(agents)[0]
        skipped = Counter(state.skipped) + built.skipped_extra
        transcript = Transcript(
            format=FORMAT,
            path=self.file,
            session_id=state.session_id,
            model=models.most_common(1)[0][0] if models else None,
            harness_version=_commonest(state.versions),
            title=state.title,
            messages=messages,
            segments=segments,
            requests=requests,
            events=list(old.events),
            subagents=subagents,
            abandoned=abandoned,
            load_issues=LoadIssues.joined(state.issues, built.chain_issues, built.pairing.issues()),
            skipped=dict(skipped),
        )
        transcript.adopt_index(old, [messages[gi] for gi in touched])
        built.transcript = transcript
        return transcript


def _with_recovered_context(state: _State, calls: list[Path]) -> _State:
    """The state plus the hook output that only a compaction call's file kept.

    Claude Code 2.1 does not write the `additionalContext` of PostToolUse hooks (compiler errors,
    lint reports) into the session file, yet the model is sent it after the tool result. The
    compaction call (`agent-acompact-*`) replays the conversation, and writes exactly those
    missing lines: `isMeta` user lines whose `parentUuid` is the session's tool result. They are
    put back after their parent, so the ledger holds what the model really saw.
    """
    if not calls:
        return state
    extra: dict[str, list[_Node]] = defaultdict(list)
    for call in calls:
        for line_no, rec in _meta_lines(call):
            uuid, parent = rec.get("uuid"), rec.get("parentUuid")
            if not isinstance(uuid, str) or not isinstance(parent, str) or uuid in state.nodes:
                continue
            anchor = state.nodes.get(parent)
            if anchor is None or anchor.sidechain or not isinstance(rec.get("message"), dict):
                continue
            kept = _kept(rec)  # a new dict: the call's records are cached, never changed
            kept["_recovered"] = True
            node = _Node(
                uuid=uuid,
                parent=parent,
                type="user",
                line=line_no,
                order=anchor.order,
                record=kept,
                file=str(call),
            )
            _read_message(node, rec["message"], {})  # results are named when the ledger is read
            extra[parent].append(node)
    if not extra:
        return state
    nodes = dict(state.nodes)
    order: list[str] = []
    for uuid in state.order:
        order.append(uuid)
        for n in extra.get(uuid, ()):
            nodes[n.uuid] = n
            order.append(n.uuid)
    return _State(
        nodes=nodes,
        order=order,
        kept=[u for u in order if nodes[u].record is not None],
        issues=state.issues,
        skipped=state.skipped,
        title=state.title,
        session_id=state.session_id,
        versions=state.versions,
        broken=state.broken,
    )


def _tool_result_text(content: Any) -> tuple[str, int]:
    """The text of a tool_result's content and how many media items it held."""
    if isinstance(content, str):
        return content, 0
    if isinstance(content, list):
        parts: list[str] = []
        media = 0
        for item in content:
            if isinstance(item, dict):
                if item.get("type") == "text":
                    parts.append(str(item.get("text", "")))
                elif item.get("type") in ("image", "document"):
                    media += 1
                else:
                    parts.append(json.dumps(item, ensure_ascii=False, sort_keys=True))
            else:
                parts.append(str(item))
        return "\n".join(parts), media
    if content is None:
        return "", 0
    return json.dumps(content, ensure_ascii=False, sort_keys=True), 0


def _media(block: dict[str, Any]) -> MediaBlock:
    src = block.get("source")
    media_type = ""
    size = 0
    if isinstance(src, dict):
        media_type = str(src.get("media_type", ""))
        data = src.get("data")
        if isinstance(data, str):
            size = len(data) * 3 // 4
    kind: Literal["image", "document"] = "document" if block.get("type") == "document" else "image"
    return MediaBlock(type=kind, media_type=media_type, size_bytes=size)


def _read_message(n: _Node, msg: dict[str, Any], call_names: dict[str, str]) -> None:
    """A conversation line's message, read into its node (the long way)."""
    n.blocks = tuple(_blocks(msg.get("content"), call_names))
    n.usage = _usage(msg.get("usage")) if n.type == "assistant" else None
    rid, model, stop = msg.get("id"), msg.get("model"), msg.get("stop_reason")
    n.rid = rid if isinstance(rid, str) else None
    n.model = model if isinstance(model, str) else None
    n.stop = stop if isinstance(stop, str) else None


def _blocks(content: Any, call_names: dict[str, str]) -> list[Block]:
    if isinstance(content, str):
        return [TextBlock(text=content)]
    if not isinstance(content, list):
        return [] if content is None else [TextBlock(text=json.dumps(content, ensure_ascii=False))]
    out: list[Block] = []
    for b in content:
        if not isinstance(b, dict):
            out.append(TextBlock(text=str(b)))
            continue
        t = b.get("type")
        if t == "text":
            out.append(TextBlock(text=str(b.get("text", ""))))
        elif t == "thinking":
            sig = b.get("signature")
            out.append(
                ReasoningBlock(
                    text=str(b.get("thinking", "")),
                    signed=bool(sig),
                    signature_chars=len(sig) if isinstance(sig, str) else 0,
                )
            )
        elif t == "redacted_thinking":
            data = b.get("data")
            out.append(
                ReasoningBlock(
                    redacted=True, signed=True, signature_chars=len(data) if isinstance(data, str) else 0
                )
            )
        elif t == "tool_use":
            call_id = str(b.get("id", ""))
            name = str(b.get("name", ""))
            call_names[call_id] = name
            args = b.get("input")
            out.append(
                ToolCallBlock(id=call_id, name=name, arguments=args if isinstance(args, dict | str) else {})
            )
        elif t == "tool_result":
            call_id = str(b.get("tool_use_id", ""))
            text, media = _tool_result_text(b.get("content"))
            out.append(
                ToolResultBlock(
                    call_id=call_id,
                    tool_name=call_names.get(call_id),
                    content=text,
                    is_error=bool(b.get("is_error")),
                    media=media,
                )
            )
        elif t in ("image", "document"):
            out.append(_media(b))
        else:
            # server tools (server_tool_use, web_search_tool_result) and future block types: the
            # model sees them, so they stay, as text that says what they are.
            body = {k: v for k, v in b.items() if k != "type"}
            out.append(TextBlock(text=f"[{t}] {json.dumps(body, ensure_ascii=False, sort_keys=True)}"))
    return out


USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


def _usage(raw: Any, problems: list[str] | None = None) -> Usage | None:
    """`message.usage` as Usage; a count that is not a whole number from 0 to MAX_TOKENS is 0 (and a
    problem, when `problems` is given)."""
    if not isinstance(raw, dict):
        return None
    if problems is None and "output_tokens_details" not in raw:
        a, b, c, d = (raw.get(k, 0) for k in USAGE_KEYS)
        if (
            type(a) is int
            and type(b) is int
            and type(c) is int
            and type(d) is int
            and 0 <= a <= MAX_TOKENS
            and 0 <= b <= MAX_TOKENS
            and 0 <= c <= MAX_TOKENS
            and 0 <= d <= MAX_TOKENS
        ):
            return Usage(input=a, cache_write=b, cache_read=c, output=d)
    sink: list[str] = [] if problems is None else problems
    details = raw.get("output_tokens_details")
    counts = [token_count(raw, key, "message.usage", sink) for key in USAGE_KEYS]
    reasoning = (
        token_count(details, "thinking_tokens", "message.usage.output_tokens_details", sink)
        if isinstance(details, dict)
        else 0
    )
    return Usage(
        input=counts[0], cache_write=counts[1], cache_read=counts[2], output=counts[3], reasoning=reasoning
    )


def _problems(rec: dict[str, Any], is_boundary: bool) -> list[str]:
    """Mistyped fields of a conversation or boundary line, in words; the line still loads as well as
    it can (a bad parent link reads as a root, bad content as text, a bad usage as none)."""
    out: list[str] = []
    parent = rec.get("parentUuid")
    if parent is not None and not isinstance(parent, str):
        out.append(f"`parentUuid` is {describe(parent)}, not a string; read as a root")
    if is_boundary:
        for key in ("compactMetadata", "microcompactMetadata"):
            if key in rec and not isinstance(rec[key], dict):
                out.append(f"`{key}` is {describe(rec[key])}, not an object; ignored")
        return out
    msg = rec["message"]
    content = msg.get("content")
    if content is not None and not isinstance(content, str | list):
        out.append(f"`message.content` is {describe(content)}, not a string or a list; kept as text")
    elif isinstance(content, list):
        not_blocks = calls = results = 0
        for b in content:
            if not isinstance(b, dict):
                not_blocks += 1
            elif b.get("type") == "tool_use":
                calls += not (isinstance(b.get("id"), str) and isinstance(b.get("name"), str))
            elif b.get("type") == "tool_result":
                results += not isinstance(b.get("tool_use_id"), str)
        if not_blocks:
            out.append(f"`message.content` holds {not_blocks:,} item(s) that are not blocks; kept as text")
        if calls:
            out.append(f"{calls:,} tool_use block(s) without a string `id` and `name`")
        if results:
            out.append(f"{results:,} tool_result block(s) without a string `tool_use_id`")
    usage = msg.get("usage")
    if usage is not None and not isinstance(usage, dict):
        out.append(f"`message.usage` is {describe(usage)}, not an object; ignored")
    elif isinstance(usage, dict):
        sane = all(type(usage.get(k, 0)) is int and 0 <= usage.get(k, 0) <= MAX_TOKENS for k in USAGE_KEYS)
        details = usage.get("output_tokens_details")
        if not sane or isinstance(details, dict):
            _usage(usage, out)  # says which count is wrong
    return out


def _answers(n: _Node) -> list[str]:
    """The tool call ids a user line's tool results answer (empty if it holds anything else)."""
    blocks = n.blocks
    if not blocks or not all(isinstance(b, ToolResultBlock) for b in blocks):
        return []
    return [b.call_id for b in blocks if isinstance(b, ToolResultBlock)]


def _call_ids(n: _Node) -> list[str]:
    return [b.id for b in n.blocks if isinstance(b, ToolCallBlock)]


def _named(blocks: tuple[Block, ...], call_names: dict[str, str]) -> tuple[Block, ...]:
    """`blocks` with each tool result named by the call `call_names` holds for it (the calls of
    `blocks` go in first, in order); the very tuple when every name already agrees."""
    out: list[Block] | None = None
    for i, b in enumerate(blocks):
        if isinstance(b, ToolCallBlock):
            call_names[b.id] = b.name
        elif isinstance(b, ToolResultBlock):
            name = call_names.get(b.call_id)
            if name != b.tool_name:
                if out is None:
                    out = list(blocks)
                out[i] = replace(b, tool_name=name)
    return blocks if out is None else tuple(out)


@dataclass(slots=True)
class _Group:
    """The lines that make one message: one user line, or every line of one response."""

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


@dataclass
class _Acc:
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
        if rec is None or n.type not in CONVERSATION_TYPES:
            return None
        blocks = _named(n.blocks, self.call_names)
        if n.type == "assistant":
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


@dataclass
class _Built:
    """A build kept for the next one: when the file only grew along the active branch (the
    common case while an agent is writing), the next transcript extends this one by what is new
    instead of being built again from every line."""

    count: int
    """Lines (nodes) of the reader's state this was built from."""
    calls: tuple[_FileKey | None, ...]
    """The compaction-call files whose lines were recovered, by path, size and mtime."""
    call_parents: frozenset[str]
    """The uuids their recovered lines hang off."""
    leaf: str
    chain: list[str]
    """The active branch's uuids, root first."""
    chain_pos: dict[str, int]
    on_chain: set[str]
    rid_count: Counter[str]
    """Response id -> how many lines of it are on the chain."""
    members: set[str]
    """The ledger's lines (on the chain and beside it)."""
    recovered: dict[str, _Node]
    """Lines recovered from the compaction calls (the session's own lines may hang off them)."""
    chain_rids: set[str]
    chain_calls: set[str]
    strays: list[_Node]
    """Lines beside the chain that no rule absorbed (abandoned or detached)."""
    meets: dict[str, str]
    """Every line the strays' ancestors were walked through -> where they met the chain (a fork's
    uuid, `_DETACHED`, `_OTHER_ROOT`)."""
    forks: set[str]
    """The chain's lines the strays' ancestors met it at."""
    missing: set[str]
    """The parents the strays' ancestors lead to that are not in the file."""
    acc: _Acc
    last_ids: list[str]
    """The last segment's message ids."""
    request_of: dict[str, int]
    """Message id of a response -> position of its request."""
    preserved: frozenset[str]
    """Every uuid a compaction on the chain names as preserved (a preserved line written after its
    boundary belongs to the segment before it as well)."""
    chain_issues: list[LoadIssue]
    models: Counter[str]
    """Requests per model (the transcript's model is the most common)."""
    skipped_extra: Counter[str]
    inline: list[SubagentRef]
    pairing: Pairing
    transcript: Transcript


STRAY_COUNTS = (
    "detached (parent not in file)",
    "off the active branch (another root)",
    "responses in detached lines",
)
"""What `_Builder._abandoned` counts of the lines beside the chain (in `skipped`)."""
_DETACHED = "\x00detached"
_OTHER_ROOT = "\x00other root"
"""(Where a stray line's ancestors end, when not on the chain: never a uuid.)"""


class _Builder:
    """Turns the nodes read so far into a Transcript."""

    def __init__(self, file: str, state: _State, memo: _Memo | None = None) -> None:
        self.file = file
        self.s = state
        self.memo = memo if memo is not None else _Memo()
        self.built: _Built | None = None
        """Set by `build` when the result can be extended (not a sidechain-only file)."""
        self.issues = state.issues.copy()
        self.skipped: Counter[str] = Counter(state.skipped)
        self.starts: dict[str, str] = {}
        """Roots on the chain that begin a segment without a boundary line, by uuid: their style
        (`SUMMARY_ROOT`, `NEW_ROOT`)."""
        self._boundary_cycle = False
        self.meets: dict[str, str] = {}
        """Set by `_abandoned`: where each line walked meets the chain (`_Built.meets`)."""
        self.forks: set[str] = set()
        self.missing: set[str] = set()

    # -- the active branch -------------------------------------------------------------------
    def _is_main(self, node: _Node, sidechain_file: bool) -> bool:
        return node.record is not None and (sidechain_file or not node.sidechain)

    def _leaf(self, sidechain_file: bool) -> _Node | None:
        nodes = self.s.nodes
        for uuid in reversed(self.s.kept):
            n = nodes[uuid]
            if n.type in CONVERSATION_TYPES and self._is_main(n, sidechain_file) and not _is_api_error(n):
                return n
        return None

    def _chain(self, leaf: _Node, sidechain_file: bool) -> list[_Node]:
        """Leaf to root, crossing compaction boundaries into the history before them."""
        nodes = self.s.nodes
        chain: list[_Node] = []
        seen: set[str] = set()
        cur: _Node | None = leaf
        while cur is not None:
            if cur.uuid in seen:
                self.issues.append(
                    LoadIssue(
                        file=self.file,
                        line=cur.line,
                        reason=f"cycle in parent links at uuid {short(cur.uuid)}",
                    )
                )
                break
            seen.add(cur.uuid)
            chain.append(cur)
            nxt = nodes.get(cur.parent) if cur.parent else None
            rec = cur.record
            if nxt is None and cur.parent is None and rec is not None:
                if rec.get("subtype") == "compact_boundary":
                    nxt = self._before_boundary(rec, seen, cur.line)
                    if nxt is None and not self._boundary_cycle:
                        # its logical parent is not in the file (real 2.1 sessions): the history
                        # before it is the newest main-thread conversation line before it
                        nxt = self._newest_before(cur, seen, sidechain_file)
                        if nxt is not None:
                            self.issues.append(
                                LoadIssue(
                                    file=self.file,
                                    line=cur.line,
                                    reason=f"compact_boundary's logicalParentUuid "
                                    f"{short(str(rec.get('logicalParentUuid')))} is not in the file; "
                                    f"the history before it was taken to end at line {nxt.line} "
                                    "(the newest main-thread line before the boundary)",
                                )
                            )
                elif cur.type == "user":
                    # a root in the middle of the file: an old-style compaction (early 1.0: the
                    # summary line starts the next segment, no boundary) or a fresh context (plan
                    # mode's "clear context"); the history before it is the newest main-thread
                    # conversation line before it in file order
                    summary = bool(rec.get("isCompactSummary"))
                    nxt = self._newest_before(cur, seen, sidechain_file)
                    if summary:
                        self.starts[cur.uuid] = SUMMARY_ROOT
                    elif nxt is not None and not harness_written(rec, cur.blocks):
                        self.starts[cur.uuid] = NEW_ROOT
                    # (a local command written as a root goes on with the history before it)
            elif nxt is None and cur.parent is not None and (broken := self._broken_before(cur)):
                # its parent is a line this reader could not read (torn, with its uuid cut off):
                # the history before it goes on at the newest main-thread line before it
                nxt = self._newest_before(cur, seen, sidechain_file)
                if nxt is not None:
                    self.issues.append(
                        LoadIssue(
                            file=self.file,
                            line=broken,
                            reason=f"line {cur.line} hangs off this line, which could not be read; it was "
                            f"linked to line {nxt.line}, the newest main-thread line before it",
                        )
                    )
            # (a parent that is not in the file, compacted away or cut off: a root)
            cur = nxt
        chain.reverse()
        return chain

    def _hangs_off(self, node: _Node, on_chain: set[str]) -> bool:
        """Whether `node` hangs off the chain through lines that hold no conversation (progress,
        system lines): a line after the leaf, as a session's last API error is."""
        nodes = self.s.nodes
        cur = nodes.get(node.parent) if node.parent else None
        for _ in range(MAX_HOPS_OFF_CHAIN):
            if cur is None:
                return False
            if cur.uuid in on_chain:
                return True
            if cur.type in CONVERSATION_TYPES:
                return False
            cur = nodes.get(cur.parent) if cur.parent else None
        return False

    def _broken_before(self, node: _Node) -> int | None:
        """The line that could not be read just before `node` (at most `MAX_BROKEN_GAP` lines
        before it), which its missing parent is taken to be; None where there is none."""
        broken = self.s.broken
        i = bisect_left(broken, node.line)
        return broken[i - 1] if i > 0 and node.line - broken[i - 1] <= MAX_BROKEN_GAP else None

    def _newest_before(self, node: _Node, seen: set[str], sidechain_file: bool) -> _Node | None:
        """The newest main-thread conversation line before `node` in file order, not on the chain
        yet."""
        nodes = self.s.nodes
        kept = self.s.kept
        i = bisect_left(kept, node.order, key=lambda u: nodes[u].order)
        while i > 0:
            i -= 1
            n = nodes[kept[i]]
            if n.type in CONVERSATION_TYPES and self._is_main(n, sidechain_file) and n.uuid not in seen:
                return n
        return None

    def _before_boundary(self, rec: dict[str, Any], seen: set[str], line: int) -> _Node | None:
        self._boundary_cycle = False
        nodes = self.s.nodes
        meta = rec.get("compactMetadata") if isinstance(rec.get("compactMetadata"), dict) else {}
        assert isinstance(meta, dict)
        candidates: list[Any] = [rec.get("logicalParentUuid")]
        seg = meta.get("preservedSegment")
        if isinstance(seg, dict):
            candidates.append(seg.get("tailUuid"))
        kept = meta.get("preservedMessages")
        if isinstance(kept, dict) and isinstance(kept.get("uuids"), list):
            candidates.extend(reversed(kept["uuids"]))
        if isinstance(seg, dict):
            candidates.append(seg.get("headUuid"))
        for c in candidates:
            if isinstance(c, str) and c in nodes and c not in seen:
                return nodes[c]
        if any(isinstance(c, str) and c in seen for c in candidates):
            self._boundary_cycle = True
            self.issues.append(
                LoadIssue(
                    file=self.file,
                    line=line,
                    reason="cycle in parent links: the compact_boundary's `logicalParentUuid` leads back "
                    "into the chain after it; the history before it is not followed",
                )
            )
        return None

    # -- building ---------------------------------------------------------------------------
    def build(self, agents: list[tuple[Path, str]] | None) -> Transcript:
        """The transcript of the state; `agents`: the session's agent files (`_agent_files`),
        None to look for none (a subagent's own file)."""
        s = self.s
        nodes = s.nodes
        conv = [nodes[u] for u in s.kept if nodes[u].type in CONVERSATION_TYPES]
        sidechain_file = bool(conv) and all(n.sidechain for n in conv)
        leaf = self._leaf(sidechain_file)
        chain = self._chain(leaf, sidechain_file) if leaf is not None else []
        on_chain = {n.uuid for n in chain}
        chain_rids = {rid for n in chain if n.record is not None and (rid := n.rid) and n.type == "assistant"}
        chain_calls = {
            c for n in chain if n.record is not None and n.type == "assistant" for c in _call_ids(n)
        }
        # absorb parallel tool traffic beside the chain; the rest is an abandoned branch
        members: set[str] = set(on_chain)
        stray: list[_Node] = []
        for n in conv:
            if n.uuid in on_chain or not self._is_main(n, sidechain_file) or _is_api_error(n):
                continue
            assert n.record is not None
            if n.type == "assistant" and n.rid in chain_rids:
                members.add(n.uuid)
                chain_calls.update(_call_ids(n))
            else:
                stray.append(n)
        for n in stray:
            assert n.record is not None
            answers = _answers(n) if n.type == "user" else []
            if answers and all(a in chain_calls for a in answers):
                members.add(n.uuid)
        for n in stray:
            if n.file is not None and n.parent in members:
                members.add(n.uuid)  # hook output recovered from a compaction call
        # boundaries on the chain, in chain order (and the roots that begin a segment without one)
        starts = self.starts
        ordered = [  # (the other members hold no message; an API error is an event, not a message)
            n for u in s.kept if u in members and not _is_api_error(n := nodes[u])
        ]
        boundaries = [
            n
            for n in chain
            if n.record is not None and (n.record.get("subtype") == BOUNDARY or n.uuid in starts)
        ]
        # API errors on the chain, and those hanging off it where nothing followed them (a
        # session that ends on "5-hour limit reached": the leaf is the line before it)
        api_errors = [n for n in chain if n.record is not None and _is_api_error(n)]
        api_errors += [
            n
            for n in conv
            if n.uuid not in on_chain
            and _is_api_error(n)
            and self._is_main(n, sidechain_file)
            and self._hangs_off(n, on_chain)
        ]
        microcompacts = [
            n for n in chain if n.record is not None and n.record.get("subtype") == "microcompact_boundary"
        ]
        strays = [n for n in stray if n.uuid not in members]
        abandoned = self._abandoned(strays, on_chain)
        transcript = self._assemble(
            agents, chain, ordered, boundaries, microcompacts, api_errors, abandoned, sidechain_file
        )
        if self.built is not None:
            assert leaf is not None
            self.built.leaf = leaf.uuid
            self.built.chain = [n.uuid for n in chain]
            self.built.chain_pos = {u: i for i, u in enumerate(self.built.chain)}
            self.built.on_chain = on_chain
            self.built.rid_count = Counter(
                rid for n in chain if n.type == "assistant" and n.record is not None and (rid := n.rid)
            )
            self.built.members = members
            self.built.chain_rids = chain_rids
            self.built.chain_calls = chain_calls
            self.built.strays = strays
            self.built.meets, self.built.forks, self.built.missing = self.meets, self.forks, self.missing
        return transcript

    def _abandoned(self, strays: list[_Node], on_chain: set[str]) -> list[AbandonedBranch]:
        nodes = self.s.nodes
        by_fork: dict[str, list[_Node]] = defaultdict(list)
        # where each line's ancestors meet the chain: a fork's uuid, DETACHED (an ancestor's parent
        # is not in the file) or OTHER_ROOT (a root off the chain); remembered for every line
        # walked, so each line is walked once however many strays share its ancestors
        meets = self.meets = {}
        self.forks, self.missing = set(), set()
        detached_rids: set[str] = set()
        for n in strays:
            path: list[str] = []
            cur: _Node | None = n
            found: str | None = None
            while cur is not None:
                if cur.uuid in on_chain:
                    found = cur.uuid
                    break
                known = meets.get(cur.uuid)
                if known is not None:
                    found = known
                    break
                if len(path) > len(nodes):  # a cycle off the chain
                    found = _DETACHED
                    break
                path.append(cur.uuid)
                parent = cur.parent
                nxt = nodes.get(parent) if parent else None
                if nxt is None:
                    found = _DETACHED if parent else _OTHER_ROOT
                    if parent:
                        self.missing.add(parent)
                cur = nxt
            assert found is not None
            for u in path:
                meets[u] = found
            if found not in (_DETACHED, _OTHER_ROOT):
                self.forks.add(found)
            if found in (_DETACHED, _OTHER_ROOT):
                # hangs off a line that is not in this file (a compaction call's injected reminders,
                # a file cut at the front), or off a root the active branch does not reach: not a
                # fork of this ledger
                self.skipped[
                    "detached (parent not in file)" if found == _DETACHED else "off the active branch (another root)"
                ] += 1
                if n.type == "assistant" and n.rid:
                    detached_rids.add(n.rid)
                continue
            by_fork[found].append(n)
        if detached_rids:
            self.skipped["responses in detached lines"] += len(detached_rids)
        out: list[AbandonedBranch] = []
        for fork, ns in by_fork.items():
            ns.sort(key=lambda n: n.order)
            preview = ""
            for n in ns:
                text = " ".join(b.text for b in n.blocks if isinstance(b, TextBlock))
                if text.strip():
                    preview = text.strip().splitlines()[0][:120]
                    break
            out.append(
                AbandonedBranch(
                    fork_id=fork,
                    message_ids=tuple(n.uuid for n in ns),
                    first_line=ns[0].line,
                    preview=preview,
                )
            )
        out.sort(key=lambda a: a.first_line)
        return out

    def _assemble(
        self,
        agents: list[tuple[Path, str]] | None,
        chain: list[_Node],
        ordered: list[_Node],
        boundaries: list[_Node],
        microcompacts: list[_Node],
        api_errors: list[_Node],
        abandoned: list[AbandonedBranch],
        sidechain_file: bool,
    ) -> Transcript:
        memo = self.memo
        acc = _Acc()
        starts = self.starts
        # segment of each member, by the position of the boundary in file order (a root that
        # begins a segment is its first message: it starts just before itself)
        seg_starts = sorted(
            (b.order - 0.5 if b.uuid in starts else b.order, i + 1) for i, b in enumerate(boundaries)
        )
        # the segment of a node: the last boundary (in file order) before it, found by bisection
        start_orders = [order for order, _ in seg_starts]
        start_segments = [idx for _, idx in seg_starts]
        for n in ordered:
            if starts.get(n.uuid) == NEW_ROOT:
                acc.sources.new_context()  # a fresh context: its first human prompt is a task
            acc.take(n)
        messages: list[Message] = []
        msg_segment: dict[str, int] = {}
        line_of_msg: dict[str, int] = {}
        for g in acc.groups:
            m = self._message(g, acc)
            n = g.lines[0]
            j = bisect_left(start_orders, n.order)  # boundaries with order < n.order
            msg_segment[m.id] = start_segments[j - 1] if j else 0
            line_of_msg[m.id] = n.line
            messages.append(m)

        # segments: the ledger of each stretch between compactions
        by_id = {m.id: m for m in messages}
        events: list[RecordedEvent] = []
        in_segment: defaultdict[int, list[str]] = defaultdict(list)
        for m in messages:
            in_segment[msg_segment[m.id]].append(m.id)
        segments: list[list[str]] = [list(in_segment[0])]
        for i, b in enumerate(boundaries):
            rec = b.record
            assert rec is not None
            meta = rec.get("compactMetadata") if isinstance(rec.get("compactMetadata"), dict) else {}
            assert isinstance(meta, dict)
            after_ids = in_segment[i + 1]
            summary = next((x for x in after_ids if by_id[x].is_summary), None)
            preserved: list[str] = []
            kept = meta.get("preservedMessages")
            if isinstance(kept, dict) and isinstance(kept.get("uuids"), list):
                preserved = [u for u in kept["uuids"] if isinstance(u, str) and u in by_id]
            seg_ids: list[str] = []
            if summary is not None:
                seg_ids.append(summary)
            seg_ids.extend(p for p in preserved if p not in seg_ids)
            placed_ids = set(seg_ids)
            for x in after_ids:
                if x not in placed_ids:
                    seg_ids.append(x)
                    placed_ids.add(x)
            # a preserved message written after the boundary was in the ledger before it, too
            after_set = set(after_ids)
            segments[-1].extend(p for p in preserved if p in after_set and p not in segments[-1])
            segments.append(seg_ids)
            style = starts.get(b.uuid, BOUNDARY)
            events.append(
                RecordedEvent(
                    kind=EventKind.CONTEXT_CLEARED if style == NEW_ROOT else EventKind.COMPACTION,
                    style=style,
                    trigger=str(meta.get("trigger")) if meta.get("trigger") is not None else None,
                    pre_tokens=_int(meta.get("preTokens")),
                    post_tokens=_int(meta.get("postTokens")),
                    segment=i + 1,
                    summary_id=summary,
                    preserved_ids=tuple(preserved),
                    timestamp=rec.get("timestamp") if isinstance(rec.get("timestamp"), str) else None,
                    file=self.file,
                    line=b.line,
                )
            )
        # requests: one per response on the active branch, at its place in its segment's ledger
        requests: list[Request] = []
        kept_requests: dict[_RequestFields, Request] = {}
        response_of_request: list[str] = []
        preserved_after: set[str] = set()
        for e in events:
            preserved_after.update(e.preserved_ids)
        for seg_index, ids in enumerate(segments):
            for pos, mid in enumerate(ids):
                m = by_id[mid]
                if m.role is not Role.ASSISTANT or m.response_id is None:
                    continue
                if seg_index > 0 and mid in preserved_after:
                    continue  # a preserved response was made before the compaction, in the segment before
                fields = acc.request_fields(len(requests) + 1, m, seg_index, pos)
                if memo.keep:
                    req = memo.requests.get(fields) or _request(fields)
                    kept_requests[fields] = req
                else:
                    req = _request(fields)  # (a one-shot read: nothing to look up)
                requests.append(req)
                response_of_request.append(mid)
        memo.requests = kept_requests
        # place events on the request axis
        seg_first_request: dict[int, int] = {}
        for r in requests:
            seg_first_request.setdefault(r.segment, r.index)
        placed: list[RecordedEvent] = []
        requested = set(response_of_request)
        for e in events:
            first = seg_first_request.get(e.segment or 0)
            after = (first - 1) if first is not None else len(requests)
            placed.append(replace(e, after_request=after))
        # requests before a microcompact: those whose response line comes before it in the file
        request_lines = sorted(
            line_of_msg.get(m.id, 0) for m in messages if m.response_id and m.id in requested
        )
        for mc in microcompacts:
            rec = mc.record
            assert rec is not None
            meta = (
                rec.get("microcompactMetadata") if isinstance(rec.get("microcompactMetadata"), dict) else {}
            )
            assert isinstance(meta, dict)
            cleared = meta.get("compactedToolIds")
            after = bisect_left(request_lines, mc.line)
            placed.append(
                RecordedEvent(
                    kind=EventKind.MICROCOMPACT,
                    trigger=str(meta.get("trigger")) if meta.get("trigger") is not None else None,
                    pre_tokens=_int(meta.get("preTokens")),
                    tokens_saved=_int(meta.get("tokensSaved")),
                    cleared_tool_ids=tuple(str(x) for x in cleared) if isinstance(cleared, list) else (),
                    after_request=after,
                    timestamp=rec.get("timestamp") if isinstance(rec.get("timestamp"), str) else None,
                    file=self.file,
                    line=mc.line,
                )
            )
        for n in api_errors:
            assert n.record is not None
            text = " ".join(b.text for b in n.blocks if isinstance(b, TextBlock)).strip()
            placed.append(
                RecordedEvent(
                    kind=EventKind.API_ERROR,
                    detail=text or None,
                    after_request=bisect_left(request_lines, n.line),
                    timestamp=n.record.get("timestamp") if isinstance(n.record.get("timestamp"), str) else None,
                    file=self.file,
                    line=n.line,
                )
            )
        placed.sort(key=lambda e: (e.after_request, e.line or 0))
        segment_models = [
            Segment(
                index=i,
                message_ids=tuple(ids),
                started_by=next(
                    (j for j, e in enumerate(placed) if e.kind in SEGMENT_EVENTS and e.segment == i),
                    None,
                ),
            )
            for i, ids in enumerate(segments)
        ]
        models = Counter(r.model for r in requests if r.model and r.model != "<synthetic>")
        chain_issues = self.issues.after(self.s.issues)
        pairing = Pairing(self.file)
        for m in messages:
            pairing.add(m)
        self.issues.extend(pairing.issues())
        transcript = Transcript(
            format=FORMAT,
            path=self.file,
            session_id=self.s.session_id,
            model=models.most_common(1)[0][0] if models else None,
            harness_version=_commonest(self.s.versions),
            title=self.s.title,
            messages=messages,
            segments=segment_models,
            requests=requests,
            events=placed,
            abandoned=abandoned,
            load_issues=self.issues,
            skipped=dict(self.skipped),
        )
        inline: list[SubagentRef] = []
        if not sidechain_file:
            inline = self._inline_subagents()
            transcript.subagents = list(inline)
        if agents is not None and not sidechain_file:
            subs, calls = _find_subagent_files(agents)
            transcript.subagents = transcript.subagents + subs
            _link_compaction_calls(transcript, calls)
        empty_before_last = set(range(len(segments) - 1)) - {r.segment for r in requests}
        if memo.keep and not sidechain_file and chain and not empty_before_last:
            self.built = _Built(
                count=0,
                calls=(),
                call_parents=frozenset(),
                leaf="",
                chain=[],
                chain_pos={},
                on_chain=set(),
                rid_count=Counter(),
                members=set(),
                recovered={},
                chain_rids=set(),
                chain_calls=set(),
                strays=[],
                meets={},
                forks=set(),
                missing=set(),
                acc=acc,
                last_ids=list(segments[-1]),
                request_of={r.response_id: i for i, r in enumerate(requests) if r.response_id},
                preserved=frozenset(
                    u for b in boundaries if b.record is not None for u in _preserved_uuids(b.record)
                ),
                chain_issues=chain_issues,
                models=models,
                skipped_extra=self.skipped - self.s.skipped,
                inline=inline,
                pairing=pairing,
                transcript=transcript,
            )
        return transcript

    def _message(self, g: _Group, acc: _Acc) -> Message:
        """The message of one group of lines; the one made before when its lines are the same."""
        memo = self.memo
        n = g.lines[0]
        rec = n.record
        assert rec is not None
        if g.rid is not None:
            stop = acc.stop_by_rid.get(g.rid)
            hit_a = memo.responses.get(n.uuid)
            key = tuple(g.blocks)
            if (
                hit_a is not None
                and hit_a[1] == stop
                and len(hit_a[0]) == len(key)
                and all(a is b for a, b in zip(hit_a[0], key, strict=True))
            ):
                return hit_a[2]
            m = Message(
                id=n.uuid,
                role=Role.ASSISTANT,
                blocks=key[0] if len(key) == 1 else tuple(b for bs in key for b in bs),
                timestamp=rec.get("timestamp") if isinstance(rec.get("timestamp"), str) else None,
                source=CONVERSATION,
                sidechain=n.sidechain,
                agent_id=rec.get("agentId") if isinstance(rec.get("agentId"), str) else None,
                origin=Origin(file=self.file, line=n.line),
                response_id=g.rid,
                model=n.model,
                stop_reason=stop,
            )
            if memo.keep:
                memo.responses[n.uuid] = (key, stop, m)
            return m
        blocks = g.blocks[0]
        hit_u = memo.users.get(n.uuid)
        if hit_u is not None and hit_u[0] is g.source and hit_u[1] is blocks:
            return hit_u[2]
        m = Message(
            id=n.uuid,
            role=Role.USER,
            blocks=blocks,
            timestamp=rec.get("timestamp") if isinstance(rec.get("timestamp"), str) else None,
            source=g.source,
            sidechain=n.sidechain,
            agent_id=rec.get("agentId") if isinstance(rec.get("agentId"), str) else None,
            origin=Origin(file=n.file or self.file, line=n.line),
            is_meta=bool(rec.get("isMeta")),
            is_summary=bool(rec.get("isCompactSummary")),
        )
        if memo.keep:
            memo.users[n.uuid] = (g.source, blocks, m)
        return m

    def _inline_subagents(self) -> list[SubagentRef]:
        """Claude Code 1.0: sidechain lines written inline; each root begins one subagent run."""
        nodes = self.s.nodes
        roots: dict[str, list[_Node]] = defaultdict(list)
        root_of: dict[str, str] = {}
        for u in self.s.kept:
            n = nodes[u]
            if not n.sidechain or n.type not in CONVERSATION_TYPES:
                continue
            parent = nodes.get(n.parent) if n.parent else None
            root = root_of.get(parent.uuid) if parent is not None and parent.sidechain else None
            root = root or n.uuid
            root_of[n.uuid] = root
            roots[root].append(n)
        out: list[SubagentRef] = []
        for root, ns in roots.items():
            rids = {n.rid for n in ns if n.type == "assistant" and n.record is not None}
            agent = next(
                (n.record.get("agentId") for n in ns if n.record is not None and n.record.get("agentId")),
                None,
            )
            first = ns[0].blocks
            desc = first[0].text if len(first) == 1 and isinstance(first[0], TextBlock) else None
            out.append(
                SubagentRef(
                    agent_id=str(agent) if agent else f"inline-{root[:8]}",
                    path=None,
                    layout="inline (1.0)",
                    description=desc.strip().splitlines()[0][:120]
                    if isinstance(desc, str) and desc.strip()
                    else None,
                    messages=len({n.uuid for n in ns if n.type == "user"}) + len(rids),
                    requests=len(rids - {None}),
                )
            )
        return out


def _commonest(versions: Counter[str]) -> str | None:
    return versions.most_common(1)[0][0] if versions else None


def _count_model(models: Counter[str], request: Request, by: int) -> None:
    if request.model and request.model != "<synthetic>":
        models[request.model] += by


def _preserved_uuids(rec: dict[str, Any]) -> list[str]:
    """The uuids a compact_boundary's metadata names as preserved."""
    meta = rec.get("compactMetadata")
    kept = meta.get("preservedMessages") if isinstance(meta, dict) else None
    uuids = kept.get("uuids") if isinstance(kept, dict) else None
    return [u for u in uuids if isinstance(u, str)] if isinstance(uuids, list) else []


def _is_api_error(n: _Node) -> bool:
    return n.model == "<synthetic>" or (n.record is not None and bool(n.record.get("isApiErrorMessage")))


def _int(v: Any) -> int | None:
    """A recorded token figure (a whole number from 0 to MAX_TOKENS), or None."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_TOKENS else None


def _first_record(path: Path) -> dict[str, Any] | None:
    try:
        with path.open("rb") as fh:
            for _ in range(50):
                raw = fh.readline()
                if not raw:
                    return None
                issues: list[LoadIssue] = []
                rec = decode_json_line(raw.rstrip(b"\n"), str(path), 0, issues)
                if rec is not None and ("sessionId" in rec or "agentId" in rec):
                    return rec
    except OSError:
        return None
    return None


def _is_compaction_call(path: Path) -> bool:
    return path.stem.removeprefix("agent-").startswith("acompact")


def _agent_files(path: Path, session_id: str | None) -> list[tuple[Path, str]]:
    """Agent files of the session at `path` (subagents and compaction calls), with their layout."""
    found: list[tuple[Path, str]] = []
    own_dir = path.parent / path.stem / "subagents"
    if own_dir.is_dir():
        found.extend((p, "subagents/ (2.1)") for p in sorted(own_dir.glob("agent-*.jsonl")) if p.is_file())
    if session_id and not path.name.startswith("agent-"):
        # a folder holding the session may keep `subagents/` beside it, or (2.0) agent files at its
        # own level; both may hold other sessions' agents, so the sessionId must match
        shared = [(p, "subagents/ (2.1)") for p in sorted((path.parent / "subagents").glob("agent-*.jsonl"))]
        shared += [(p, "beside the session (2.0)") for p in sorted(path.parent.glob("agent-*.jsonl"))]
        shared = [(p, layout) for p, layout in shared if p.is_file()]  # never a FIFO (a read would block)
        for p, layout in shared:
            if _session_of(p) == session_id and all(p != q for q, _ in found):
                found.append((p, layout))
    return found


_FileKey = tuple[str, int, int]
_SUBAGENT_CACHE: dict[_FileKey, tuple[int, int, str]] = {}
_CALL_CACHE: dict[_FileKey, list[tuple[int, dict[str, Any]]]] = {}
_CACHE_LIMIT = 512


def _file_key(path: Path) -> _FileKey | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path), st.st_size, st.st_mtime_ns)


def _remember(cache: dict[_FileKey, Any], key: _FileKey, value: Any) -> None:
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = value


_SESSION_CACHE: dict[_FileKey, str | None] = {}


def _session_of(path: Path) -> str | None:
    """The sessionId an agent file starts with; cached by size and mtime (a followed session's
    folder is looked through at every update, and may hold hundreds of other sessions' agents)."""
    key = _file_key(path)
    if key is not None and key in _SESSION_CACHE:
        return _SESSION_CACHE[key]
    rec = _first_record(path)
    sid = rec.get("sessionId") if rec is not None else None
    value = sid if isinstance(sid, str) else None
    if key is not None:
        _remember(_SESSION_CACHE, key, value)
    return value


def _subagent_counts(path: Path) -> tuple[int, int, str]:
    """Messages, requests and first task of a subagent file; cached by size and mtime, so a
    followed session does not re-read unchanged subagents at every update."""
    key = _file_key(path)
    if key is not None and key in _SUBAGENT_CACHE:
        return _SUBAGENT_CACHE[key]
    try:
        sub = load_claude_code(path, with_subagents=False)
    except OSError:
        return 0, 0, ""
    first_task = next((m.text for m in sub.messages if m.role is Role.USER and m.text.strip()), "")
    value = (len(sub.messages), len(sub.requests), first_task)
    if key is not None:
        _remember(_SUBAGENT_CACHE, key, value)
    return value


def _meta_lines(call: Path) -> list[tuple[int, dict[str, Any]]]:
    """The `isMeta` user lines of a compaction call's file (line number, record); cached."""
    key = _file_key(call)
    if key is not None and key in _CALL_CACHE:
        return _CALL_CACHE[key]
    try:
        data = call.read_bytes()
    except OSError:
        return []
    out: list[tuple[int, dict[str, Any]]] = []
    for line_no, raw in enumerate(data.split(b"\n"), start=1):
        rec = decode_json_line(raw, str(call), line_no, [])
        if rec is not None and rec.get("type") == "user" and rec.get("isMeta"):
            out.append((line_no, rec))
    if key is not None:
        _remember(_CALL_CACHE, key, out)
    return out


def _find_subagent_files(agents: list[tuple[Path, str]]) -> tuple[list[SubagentRef], list[Path]]:
    """The subagent transcripts among a session's agent files (`_agent_files`), and its
    compaction-call files."""
    subs: list[SubagentRef] = []
    calls: list[Path] = []
    for p, layout in agents:
        agent_id = p.stem.removeprefix("agent-")
        if _is_compaction_call(p):
            calls.append(p)
            continue
        meta: dict[str, Any] = {}
        meta_path = p.with_name(p.stem + ".meta.json")
        if meta_path.is_file():
            try:
                loaded = orjson.loads(meta_path.read_bytes())  # never a RecursionError, however deep
                meta = loaded if isinstance(loaded, dict) else {}
            except (OSError, ValueError):
                meta = {}
        n_msgs, n_reqs, first_task = _subagent_counts(p)
        desc = meta.get("description") if isinstance(meta.get("description"), str) else None
        subs.append(
            SubagentRef(
                agent_id=agent_id,
                path=str(p),
                layout=layout,
                agent_type=meta.get("agentType") if isinstance(meta.get("agentType"), str) else None,
                description=desc
                or (first_task.strip().splitlines()[0][:120] if first_task.strip() else None),
                tool_use_id=meta.get("toolUseId") if isinstance(meta.get("toolUseId"), str) else None,
                messages=n_msgs,
                requests=n_reqs,
            )
        )
    return subs, calls


def _link_compaction_calls(transcript: Transcript, calls: Iterable[Path]) -> None:
    """Pair each `agent-acompact-*` file with a recorded compaction, nearest in time first."""
    compactions = [i for i, e in enumerate(transcript.events) if e.kind is EventKind.COMPACTION]
    stamped: list[tuple[str, Path]] = []
    for p in calls:
        last_ts = ""
        try:
            with p.open("rb") as fh:
                for raw in fh:
                    issues: list[LoadIssue] = []
                    rec = decode_json_line(raw.rstrip(b"\n"), str(p), 0, issues)
                    if rec is not None and isinstance(rec.get("timestamp"), str):
                        last_ts = max(last_ts, rec["timestamp"])
        except OSError:
            continue
        stamped.append((last_ts, p))
    stamped.sort()
    for idx, (_, p) in zip(compactions, stamped, strict=False):
        transcript.events[idx] = replace(transcript.events[idx], call_file=str(p))


def load_claude_code(
    path: str | Path, *, with_subagents: bool = True, progress: Progress | None = None
) -> Transcript:
    """Read a whole Claude Code transcript file (`progress`: see `feed_file`)."""
    reader = ClaudeCodeReader(path, with_subagents=with_subagents, follow=False)
    with Path(path).open("rb") as fh:
        head = fh.read(64)
    if is_array(head):
        feed_array(reader, Path(path))
    else:
        feed_file(reader, path, progress)
    return reader.transcript()


def _system_key(subtype: Any) -> str:
    """How a system line is counted: by its subtype (`system/informational`); early 1.0 hook
    lines have none (`system`)."""
    return "system" if subtype is None else f"system/{short(subtype)}"


def _is_record(rec: Any) -> bool:
    """Whether a decoded value has a Claude Code record's envelope (a known `type`, a tree key)."""
    if not isinstance(rec, dict):
        return False
    rtype = rec.get("type")
    return isinstance(rtype, str) and rtype in KNOWN_TYPES and not SNIFF_KEYS.isdisjoint(rec)


def feed_array(reader: ClaudeCodeReader, path: Path) -> None:
    """Feed a JSON array of records (`json_array`) to the reader, one record a line: the line
    numbers its load issues name count records. An array that breaks off (a copy torn while it
    was written) gives the records before the break, and a load issue that says where."""
    data = path.read_bytes()
    records: list[Any]
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        records, stop = _array_prefix(data)
        reader.note(
            0,
            f"the JSON array breaks off at byte {stop:,} ({exc}); read the {len(records):,} records before it",
        )
    else:
        if not isinstance(value, list):
            raise LoaderError(f"{path} holds a JSON {type(value).__name__}, not an array of records")
        records = value
    batch: list[bytes] = []
    for rec in records:
        try:
            batch.append(orjson.dumps(rec))
        except (TypeError, orjson.JSONEncodeError):  # (too deep to encode again)
            batch.append(b"\x00")  # a line the reader reports as broken, at its own number
        if len(batch) >= 4096:
            reader.feed(b"\n".join(batch) + b"\n")
            batch.clear()
    if batch:
        reader.feed(b"\n".join(batch) + b"\n")
    reader.finish()


def _array_prefix(data: bytes) -> tuple[list[Any], int]:
    """The whole elements at the front of a broken JSON array, and the byte where it breaks."""
    text = data.decode("utf-8", errors="replace")
    decoder = json.JSONDecoder()
    out: list[Any] = []
    pos = text.find("[") + 1
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        try:
            value, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            return out, len(text[:pos].encode("utf-8", errors="replace"))
        out.append(value)


class ClaudeCodeFormat:
    """Detects Claude Code JSONL by its envelope: `type` plus uuid/parentUuid/sessionId keys."""

    format = FORMAT

    def sniff(self, path: Path, head: bytes) -> bool:
        if path.is_dir():
            return False
        if is_array(head):  # a JSON array of records (`json_array`): judged by its first elements
            return any(_is_record(e) for e in first_elements(head))
        for raw in head.split(b"\n")[:50]:
            issues: list[LoadIssue] = []
            rec = decode_json_line(raw, str(path), 0, issues)
            if rec is None:
                continue
            if _is_record(rec):
                return True
            if "payload" in rec or "role" in rec:
                return False
        return False

    def load(self, path: Path, *, progress: Progress | None = None) -> Transcript:
        return load_claude_code(path, progress=progress)
