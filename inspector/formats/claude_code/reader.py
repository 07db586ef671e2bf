"""The incremental reader: bytes in as they arrive, a transcript out at any time (extended, not
built again, while the file only grows along the active branch)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from inspector.model import LoadIssue, Transcript, Usage

from ..base import MAX_LINE_BYTES, LineSplitter, Overlong, decode_json_line, short, too_deep, too_deep_reason
from .agents import _agent_files, _file_key, _is_compaction_call, _meta_lines, _with_recovered_context
from .builder import _Builder, _Built
from .extend import extend
from .ledger import _Memo
from .lines import Line, TypedMessage, decode_line, too_deep_input
from .lines import blocks as typed_blocks
from .lines import decode as decode_typed
from .lines import usage as typed_usage
from .records import (
    BOUNDARY_SUBTYPES,
    CONVERSATION_TYPES,
    KNOWN_TYPES,
    TITLE_TYPES,
    _kept,
    _Node,
    _problems,
    _read_message,
    _State,
    _system_key,
)

SALVAGE_BYTES = 4096
"""How far into a broken line its `parentUuid` and `isSidechain` are looked for (they come first)."""
_UUID_RE = rb'"([0-9A-Za-z][0-9A-Za-z_.:-]{0,127})"'
_UUID_KEY = re.compile(rb'"uuid"\s*:\s*' + _UUID_RE)
_PARENT_KEY = re.compile(rb'"parentUuid"\s*:\s*(?:' + _UUID_RE + rb"|(null))")
_SIDECHAIN_KEY = re.compile(rb'"isSidechain"\s*:\s*true')
_PLAIN = KNOWN_TYPES - CONVERSATION_TYPES - frozenset(TITLE_TYPES) - {"system"}
"""The known types of line that hold no message, title or boundary: counted and made a node."""


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
        first, lines = self._lines.views(data)
        # most lines of a session (progress, snapshots and the like: `_PLAIN` types) are made a
        # node right here, as `_node` makes them (the loop's names are locals, its calls the
        # decoder's alone: this loop runs once a line); every other line goes to `_take_line`
        # (or the long way). An `Overlong` is empty bytes: it never decodes.
        state = self._state
        nodes = state.nodes
        order = state.order
        skipped = state.skipped
        versions = state.versions
        take_line = self._take_line
        take_long = self._take_long
        plain = _PLAIN
        decode = decode_typed
        node = _Node
        count = self._count
        no_session = state.session_id is None
        for line_no, raw in enumerate(lines, first):
            try:
                line = decode(raw)
            except (msgspec.DecodeError, RecursionError):  # (ValidationError included)
                self._count = count
                take_long(line_no, raw if type(raw) is Overlong else bytes(raw))
                count = self._count
                no_session = state.session_id is None
                continue
            rtype = line.type
            if rtype in plain:
                if no_session and line.session_id is not None:
                    state.session_id = line.session_id
                    no_session = False
                if (version := line.version) is not None:
                    versions[version] += 1
                skipped[rtype] += 1
                uuid = line.uuid
                if uuid is not None and uuid not in nodes:
                    nodes[uuid] = node(uuid, line.parent_uuid, rtype, line_no, count, line.is_sidechain is True)
                    count += 1
                    order.append(uuid)
                continue
            self._count = count
            if not take_line(line_no, line):
                take_long(line_no, bytes(raw))
            count = self._count
            no_session = state.session_id is None
        self._count = count

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

    def _node(self, line_no: int, line: Line, key: str) -> None:
        """A line that holds no message, title or boundary: counted under `key` (its type, or
        what it says of it) and made a node of the tree."""
        state = self._state
        if state.session_id is None and line.session_id is not None:
            state.session_id = line.session_id
        if line.version is not None:
            state.versions[line.version] += 1
        state.skipped[key] += 1
        uuid = line.uuid
        if uuid is not None and uuid not in state.nodes:
            state.nodes[uuid] = _Node(
                uuid, line.parent_uuid, line.type, line_no, self._count, bool(line.is_sidechain)
            )
            self._count += 1
            state.order.append(uuid)

    def _take_line(self, line_no: int, line: Line) -> bool:
        """A line in the usual shape (`lines`): what `_take_long` makes of it, made
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
            self._node(line_no, line, key if rtype in KNOWN_TYPES else f"unknown:{short(rtype)}")
            return True
        msg = line.message
        if msg is None or uuid is None or too_deep_input(msg):
            return False
        if line.version is not None:
            state.versions[line.version] += 1
        nodes = state.nodes
        if uuid in nodes:
            self._duplicate(line_no, uuid)
            return True
        # (positional: the fields of `_Node` in order, `file` None)
        nodes[uuid] = _Node(
            uuid,
            line.parent_uuid,
            rtype,
            line_no,
            self._count,
            line.is_sidechain is True,
            {
                "type": rtype,
                "subtype": line.subtype,
                "timestamp": line.timestamp,
                "isMeta": line.is_meta,
                "isCompactSummary": line.is_compact_summary,
                "isApiErrorMessage": line.is_api_error_message,
                "agentId": line.agent_id,
            },
            None,
            typed_blocks(msg, self._call_names),
            self._usage(msg) if rtype == "assistant" else None,
            msg.id,
            msg.model,
            msg.stop_reason,
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
        message), `_Tree._chain` links across it by file order (`broken`)."""
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
            extended = extend(self.file, self._state, self._memo, built, agents)
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
