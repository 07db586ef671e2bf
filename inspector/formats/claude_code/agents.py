"""A session's agent files: subagent transcripts (2.1 `subagents/`, 2.0 beside the session) and
compaction calls (`agent-acompact-*`), whose hook output is put back into the session's ledger."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
from msgspec.structs import replace

from inspector.model import EventKind, LoadIssue, Role, SubagentRef, Transcript

from ..base import decode_json_line
from .records import _kept, _Node, _read_message, _State


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


def clear_caches() -> None:
    """Forget every agent file read so far (the next read of each reads it again)."""
    for cache in (_SUBAGENT_CACHE, _CALL_CACHE, _SESSION_CACHE):
        cache.clear()


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
    from .entry import load_claude_code  # (the entry reads agent files too: imported when used)

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
