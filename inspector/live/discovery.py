"""Finding agent sessions on this machine, newest first (for the session picker and `sessions`).

Where each harness keeps its sessions (docs/DESIGN.md §4; docs/notes/claude-code-transcripts.md §1,
docs/notes/opencode-codex.md A5/B1, docs/notes/opencollab.md §5):
- Claude Code: `$CLAUDE_CONFIG_DIR/projects` when set, else `~/.claude/projects` and
  `~/.config/claude/projects`; `<project>/<session>.jsonl` only (subagent files, `agent-*.jsonl`
  and anything under `<session>/subagents/`, are parts of a session, not sessions).
- Codex: `$CODEX_HOME/sessions` or `~/.codex/sessions`, `YYYY/MM/DD/rollout-*.jsonl`.
- opencode: `$XDG_DATA_HOME/opencode` or `~/.local/share/opencode`: `opencode*.db` (one entry per
  session, its requests counted as the reader counts them, read through the reader's own read-only
  connection, `connect_readonly`, which creates no -wal or -shm beside a WAL database; one entry for
  the whole database when it cannot be read), and the older JSON layouts `storage/session/<project>/<ses>.json` and
  `project/<slug>/storage/session/info/<ses>.json`.
- OpenCollab: `.opencollab/sessions/<run>/agent_*.json` below the current folder.
- The settings' `session_folders` (`inspector.settings`): Codex rollouts, Claude Code sessions
  and opencode databases anywhere up to four levels below each.

Everything is cheap: a stat and a bounded read of each file's head (and tail), never a full load;
a missing or unreadable folder or file is skipped, never fatal; only regular files are opened
(`open_regular`: never a FIFO or a device). Nothing is written anywhere.
"""

from __future__ import annotations

import bisect
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, Protocol

import msgspec
import orjson
from msgspec import Struct

from inspector.formats.base import LoaderError, open_regular
from inspector.harnesses import HARNESSES, HarnessId, resolve
from inspector.settings import xdg_home

Harness = HarnessId

LIVE_SECONDS = 60
"""A session modified this recently is marked live."""
HEAD_BYTES = 64 * 1024
"""How much of a file's start is read for its title and project."""
EXACT_COUNT_BYTES = 8 << 20
"""Files up to this size are read whole to count requests exactly, as the reader counts them
(Claude Code: the active branch walked, rewinds not counted; 9 ms for the 3.7 MB corpus file, 25 ms
at 8 MB); bigger ones are sampled and the count marked estimated (a sample holds no whole chain:
an abandoned branch's responses in it are counted)."""
SAMPLE_BYTES = 512 << 10
"""For a bigger file: this much of its head and of its tail are read, and the count extrapolated."""
TITLE_CHARS = 120

# JSON is matched as bytes, spaces after ":" allowed (Claude Code and Codex write none; others may)
_REQUEST_ID = re.compile(rb'"requestId":\s*"([^"\\]+)"')
_MESSAGE_ID = re.compile(rb'"id":\s*"(msg_[^"\\]+)"')
_CWD = re.compile(rb'"cwd":\s*"((?:[^"\\]|\\.)*)"')
_ASSISTANT = re.compile(rb'"type":\s*"assistant"')
_PROGRESS = re.compile(rb'"type":\s*"progress"')
_SIDECHAIN = re.compile(rb'"isSidechain":\s*true')
_TITLE_LINE = re.compile(rb'"type":\s*"(?:custom|ai)-title"')
_STEP_COUNT = re.compile(rb'"step_count":\s*(\d+)')
_AGENT_FILE = re.compile(r"^agent_(\d+)_(.+)\.json$")


class SessionInfo(Struct, frozen=True, kw_only=True):
    """One session found on this machine."""

    harness: Harness
    path: Path
    """The transcript file (opencode: the database, with `session_id` naming the session in it)."""
    project: str | None = None
    """The folder the agent worked in, where it can be told."""
    size_bytes: int = 0
    requests: int | None = None
    """A cheap count of model calls; None when it cannot be told cheaply."""
    requests_estimated: bool = False
    """True when `requests` was extrapolated from samples of a big file."""
    last_activity: datetime
    """The last modification, UTC."""
    live: bool = False
    """Modified in the last LIVE_SECONDS: probably still being written."""
    title: str | None = None
    session_id: str | None = None


def discover(
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
    *,
    now: datetime | None = None,
    folders: Iterable[Path] | None = None,
) -> list[SessionInfo]:
    """Every session of every known harness on this machine, newest first.

    `folders`: more folders to look in (None: the settings' `session_folders`,
    `inspector.settings`), each holding sessions as a harness lays them out or copies of them
    (`_extra_folder`); a session found twice is listed once."""
    env = os.environ if env is None else env
    if home is None:
        home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    cwd = Path.cwd() if cwd is None else cwd
    now = datetime.now(UTC) if now is None else now
    if folders is None:
        from inspector.settings import current

        folders = current().session_folders
    rows: list[SessionInfo] = []
    for finder in finders():
        try:
            rows.extend(finder(env, cwd, home, now))
        except OSError:  # pragma: no cover - each finder already skips what it cannot read
            continue
    seen = {(os.path.realpath(r.path), r.session_id) for r in rows}
    for folder in folders:
        for row in _extra_folder(Path(folder), now):
            key = (os.path.realpath(row.path), row.session_id)
            if key not in seen:
                seen.add(key)
                rows.append(row)
    rows.sort(key=lambda r: (r.last_activity, str(r.path), r.session_id or ""), reverse=True)
    return rows


class Finder(Protocol):
    """Lists one harness's sessions (`Harness.finder`)."""

    def __call__(self, env: Mapping[str, str], cwd: Path, home: Path, now: datetime, /) -> Iterable[SessionInfo]: ...


def finders() -> list[Finder]:
    """The session finder of each harness that has one (`inspector.harnesses`), in its order."""
    return [resolve(h.finder) for h in HARNESSES.values() if h.finder is not None]


def sessions_table(rows: Iterable[SessionInfo]) -> list[dict[str, Any]]:
    """Rows as plain JSON-ready dicts (paths as strings, times as ISO 8601 UTC)."""
    out: list[dict[str, Any]] = []
    for r in rows:
        d = msgspec.to_builtins(r, enc_hook=str)  # (a path as its string)
        d["last_activity"] = r.last_activity.astimezone(UTC).isoformat().replace("+00:00", "Z")
        out.append(d)
    return out


# -- file system helpers: every failure is a skip ---------------------------------------------
_os_scandir = os.scandir  # tests inject failures here


def _open_binary(path: Path) -> BinaryIO:
    """Opens a regular file for reading, never a FIFO or a device (tests inject failures here)."""
    return open_regular(path)


def _scandir(path: Path) -> list[os.DirEntry[str]]:
    """The entries of a folder; [] when it is missing, not a folder, or unreadable."""
    try:
        with _os_scandir(path) as it:
            return list(it)
    except OSError:
        return []


def _subdirs(path: Path) -> Iterator[Path]:
    for e in _scandir(path):
        try:
            if e.is_dir():
                yield Path(e.path)
        except OSError:
            continue


def _files(path: Path, suffix: str) -> Iterator[tuple[Path, os.stat_result]]:
    for e in _scandir(path):
        if not e.name.endswith(suffix):
            continue
        try:
            if not e.is_file():
                continue
            st = e.stat()
        except OSError:
            continue
        yield Path(e.path), st


def _read_head_tail(path: Path, size: int) -> tuple[bytes, bytes | None]:
    """The whole file when it is small (tail None); else its head and tail samples. b"" on error."""
    try:
        with _open_binary(path) as fh:
            if size <= EXACT_COUNT_BYTES:
                return fh.read(EXACT_COUNT_BYTES + 1), None
            head = fh.read(SAMPLE_BYTES)
            fh.seek(max(0, size - SAMPLE_BYTES))
            return head, fh.read(SAMPLE_BYTES)
    except OSError:
        return b"", None


def _read_head(path: Path, limit: int = HEAD_BYTES) -> bytes:
    try:
        with _open_binary(path) as fh:
            return fh.read(limit)
    except OSError:
        return b""


def _mtime(st: os.stat_result) -> datetime:
    return datetime.fromtimestamp(st.st_mtime, UTC)


def _is_live(when: datetime, now: datetime) -> bool:
    return (now - when).total_seconds() <= LIVE_SECONDS


def _records(data: bytes, limit: int = 400) -> Iterator[dict[str, Any]]:
    """JSON objects of the complete lines in `data` (a torn last line is skipped)."""
    lines = data.split(b"\n")
    if not data.endswith(b"\n"):
        lines = lines[:-1]
    for raw in lines[:limit]:
        if not raw.strip():
            continue
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(rec, dict):
            yield rec


def _first_line(text: str) -> str | None:
    for line in text.strip().splitlines():
        line = line.strip()
        if line:
            return line[:TITLE_CHARS]
    return None


def _text_of(content: Any) -> str | None:
    """The text of a message content (a string, or a list of text blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            b["text"]
            for b in content
            if isinstance(b, dict)
            and b.get("type") in ("text", "input_text")
            and isinstance(b.get("text"), str)
        ]
        return "\n".join(parts) if parts else None
    return None


def _prompt_title(text: str | None) -> str | None:
    """A user prompt's first line, unless it is a harness wrapper (`<command-name>`, `<environment_context>`)."""
    if not text or text.lstrip().startswith(("<", "# AGENTS.md")):
        return None
    return _first_line(text)


def _decode_json_string(raw: bytes) -> str | None:
    try:
        value = orjson.loads(b'"' + raw + b'"')
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, str) else None


def _claude_line_count(lines: Iterable[bytes]) -> int:
    """Claude Code, on a sample of a big file: distinct API calls among main-chain `assistant`
    lines (one call is several lines), rewinds not followed (a sample holds no whole chain)."""
    seen: set[bytes] = set()
    n = 0
    for line in lines:
        if b'"assistant"' not in line or not _ASSISTANT.search(line):
            continue
        if _PROGRESS.search(line) or _SIDECHAIN.search(line):
            continue  # a subagent's message carried in a progress line, or an inline sidechain
        n += 1
        m = _REQUEST_ID.search(line) or _MESSAGE_ID.search(line)
        seen.add(m.group(1) if m else str(n).encode())
    return len(seen)


class _CcMessage(Struct):
    id: Any = None
    model: Any = None


class _CcLine(Struct, rename="camel"):
    """What the quick count reads of a Claude Code line; every other field is skipped undecoded."""

    type: Any = None
    uuid: Any = None
    parent_uuid: Any = None
    is_sidechain: Any = None
    is_api_error_message: Any = None
    subtype: Any = None
    logical_parent_uuid: Any = None
    compact_metadata: Any = None
    message: _CcMessage | None = None


_cc_decode = msgspec.json.Decoder(_CcLine).decode
_CC_MAX_BROKEN_GAP = 64
"""As the reader's MAX_BROKEN_GAP: a line whose parent is missing, this close after a line that
did not decode, is taken to hang off the newest main-thread line before it."""


class _CcNode(NamedTuple):
    order: int
    line: int
    parent: str | None
    conversation: bool
    """A user or assistant line with a message (the reader's conversation lines)."""
    main: bool
    """Not a sidechain's (or, in a file of sidechain lines only, any)."""
    api_error: bool
    rid: str | None
    """An assistant line's response (its message id, else its uuid); None for any other line."""
    candidates: tuple[str, ...]
    """A compact_boundary written as a root: where the history before it ends, in the reader's
    order of preference (logicalParentUuid, the preserved segment's tail, the preserved messages
    newest first, the segment's head)."""
    root_user: bool
    """A user line written as a root (an old-style compaction summary or a fresh context)."""
    boundary: bool
    """A compact_boundary line."""


def _boundary_candidates(line: _CcLine) -> tuple[str, ...]:
    meta = line.compact_metadata if isinstance(line.compact_metadata, dict) else {}
    out: list[Any] = [line.logical_parent_uuid]
    seg = meta.get("preservedSegment")
    if isinstance(seg, dict):
        out.append(seg.get("tailUuid"))
    kept = meta.get("preservedMessages")
    if isinstance(kept, dict) and isinstance(kept.get("uuids"), list):
        out.extend(reversed(kept["uuids"]))
    if isinstance(seg, dict):
        out.append(seg.get("headUuid"))
    return tuple(c for c in out if isinstance(c, str))


def _cc_line(raw: bytes) -> _CcLine | None:
    """The fields of a line; None for a line that is no JSON (a torn line: the reader's broken)."""
    try:
        return _cc_decode(raw)
    except msgspec.ValidationError:
        pass  # JSON, not in the usual shape (a message that is no object): its fields one by one
    except (msgspec.DecodeError, RecursionError):
        return None
    try:
        rec = orjson.loads(raw)
    except (orjson.JSONDecodeError, RecursionError):
        return None
    if not isinstance(rec, dict):
        return _CcLine()
    msg = rec.get("message")
    return _CcLine(
        type=rec.get("type"),
        uuid=rec.get("uuid"),
        parent_uuid=rec.get("parentUuid"),
        is_sidechain=rec.get("isSidechain"),
        is_api_error_message=rec.get("isApiErrorMessage"),
        subtype=rec.get("subtype"),
        logical_parent_uuid=rec.get("logicalParentUuid"),
        compact_metadata=rec.get("compactMetadata"),
        message=_CcMessage(id=msg.get("id"), model=msg.get("model")) if isinstance(msg, dict) else None,
    )


def _claude_count(lines: Iterable[bytes]) -> int:
    """Claude Code: the requests the reader finds (`inspector.formats.claude_code`) in a whole file,
    by a quick scan: each line's uuid, parent and kind decoded (its message's content skipped), the
    active branch walked back from the last main-thread conversation line, as the reader walks it
    (across compact boundaries and roots written mid-file, past lines that did not decode), and
    the distinct responses of its assistant lines counted, API errors excluded. An abandoned
    branch (a rewind) is not on that walk, so its responses are not counted."""
    nodes: dict[str, _CcNode] = {}
    kept: list[str] = []  # conversation and boundary lines, in file order
    broken: list[int] = []
    order = 0
    for no, raw in enumerate(lines, 1):
        if not raw or raw.isspace():
            continue
        line = _cc_line(raw)
        if line is None:
            broken.append(no)
            continue
        uuid = line.uuid
        if not isinstance(uuid, str) or uuid in nodes:
            continue
        rtype = line.type
        msg = line.message
        conversation = rtype in ("user", "assistant") and msg is not None
        boundary = rtype == "system" and line.subtype == "compact_boundary"
        parent = line.parent_uuid if isinstance(line.parent_uuid, str) else None
        api_error = line.is_api_error_message is True or (msg is not None and msg.model == "<synthetic>")
        rid = None
        if conversation and rtype == "assistant":
            rid = msg.id if msg is not None and isinstance(msg.id, str) and msg.id else uuid
        nodes[uuid] = _CcNode(
            order,
            no,
            parent,
            conversation,
            line.is_sidechain is not True,
            api_error,
            rid,
            _boundary_candidates(line) if boundary and parent is None else (),
            conversation and rtype == "user" and parent is None,
            boundary,
        )
        order += 1
        if conversation or boundary:
            kept.append(uuid)
    conv = [u for u in kept if nodes[u].conversation]
    sidechain_file = bool(conv) and not any(nodes[u].main for u in conv)

    def is_main(n: _CcNode) -> bool:
        return n.conversation and (sidechain_file or n.main)

    leaf = next((u for u in reversed(conv) if is_main(nodes[u]) and not nodes[u].api_error), None)
    if leaf is None:
        return 0
    kept_orders = [nodes[u].order for u in kept]
    seen: set[str] = set()

    def newest_before(n: _CcNode) -> str | None:
        # the newest main-thread conversation line before `n` in file order, not walked yet
        i = bisect.bisect_left(kept_orders, n.order)
        while i > 0:
            i -= 1
            u = kept[i]
            if is_main(nodes[u]) and u not in seen:
                return u
        return None

    responses: set[str] = set()
    cur: str | None = leaf
    while cur is not None and cur not in seen:
        seen.add(cur)
        n = nodes[cur]
        if n.rid is not None and not n.api_error:
            responses.add(n.rid)
        nxt = n.parent if n.parent in nodes else None
        if nxt is None and n.parent is None:
            if n.candidates:
                nxt = next((c for c in n.candidates if c in nodes and c not in seen), None)
                if nxt is None and not any(c in seen for c in n.candidates):
                    nxt = newest_before(n)
            elif n.root_user or n.boundary:
                nxt = newest_before(n)
        elif nxt is None and n.parent is not None:
            i = bisect.bisect_left(broken, n.line)
            if i > 0 and n.line - broken[i - 1] <= _CC_MAX_BROKEN_GAP:
                nxt = newest_before(n)
        cur = nxt
    return len(responses)


def _count_requests(
    data: bytes,
    tail: bytes | None,
    size: int,
    count: Callable[[Iterable[bytes]], int],
    sample: Callable[[Iterable[bytes]], int] | None = None,
) -> tuple[int | None, bool]:
    """`count(lines)` over the whole file, or `sample` (default: `count`) extrapolated from its
    head and tail samples."""
    if not data:
        return None, False
    if tail is None:
        return count(data.split(b"\n")), False
    # samples: drop the torn line at each cut
    head_lines = data.split(b"\n")[:-1]
    tail_lines = tail.split(b"\n")[1:]
    sampled = sum(len(x) + 1 for x in head_lines) + sum(len(x) + 1 for x in tail_lines)
    if sampled <= 0:
        return None, False
    sample = sample or count
    n = sample(head_lines) + sample(tail_lines)
    return round(n * size / sampled), True


# -- Claude Code -------------------------------------------------------------------------------
def _claude_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    config = env.get("CLAUDE_CONFIG_DIR")
    if config:
        return [Path(config).expanduser() / "projects"]
    return [home / ".claude" / "projects", home / ".config" / "claude" / "projects"]


def _claude_index(project_dir: Path) -> dict[str, dict[str, Any]]:
    """`sessions-index.json` (2.1.x), by session id; {} when absent or unreadable."""
    raw = _read_head(project_dir / "sessions-index.json", 4 << 20)
    if not raw:
        return {}
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    entries = data.get("entries") if isinstance(data, dict) else data
    out: dict[str, dict[str, Any]] = {}
    if isinstance(entries, list):
        for e in entries:
            if isinstance(e, dict) and isinstance(e.get("sessionId"), str):
                out[e["sessionId"]] = e
    return out


def claude_code_sessions(env: Mapping[str, str], cwd: Path, home: Path, now: datetime) -> Iterator[SessionInfo]:
    seen_roots: set[str] = set()
    for root in _claude_roots(env, home):
        key = os.path.realpath(root)
        if key in seen_roots:
            continue
        seen_roots.add(key)
        for project_dir in _subdirs(root):
            index: dict[str, dict[str, Any]] | None = None
            for path, st in _files(project_dir, ".jsonl"):
                if path.name.startswith("agent-"):
                    continue  # a 2.0 subagent (or a compaction call), part of its session
                if index is None:
                    index = _claude_index(project_dir)
                yield _claude_session(path, st, project_dir.name, index, now)


def _claude_session(
    path: Path, st: os.stat_result, folder: str, index: Mapping[str, dict[str, Any]], now: datetime
) -> SessionInfo:
    data, tail = _read_head_tail(path, st.st_size)
    requests, estimated = _count_requests(data, tail, st.st_size, _claude_count, _claude_line_count)
    project: str | None = None
    session_id: str | None = None
    titles: dict[str, str] = {}
    summary: str | None = None
    prompt: str | None = None
    for rec in _records(data[:HEAD_BYTES]):
        rtype = rec.get("type")
        if project is None and isinstance(rec.get("cwd"), str):
            project = rec["cwd"]
        if session_id is None and isinstance(rec.get("sessionId"), str):
            session_id = rec["sessionId"]
        if rtype in ("custom-title", "ai-title"):
            _claude_title(rec, titles)
        elif rtype == "summary" and summary is None and isinstance(rec.get("summary"), str):
            summary = rec["summary"]
        elif (
            rtype == "user"
            and prompt is None
            and not rec.get("isMeta")
            and not rec.get("isSidechain")
            and not rec.get("isCompactSummary")
            and isinstance(rec.get("message"), dict)
        ):
            prompt = _prompt_title(_text_of(rec["message"].get("content")))
    # titles are also written later in a session: look for them in the rest that was read
    rest = data[HEAD_BYTES:] if tail is None else tail
    if b'-title"' in rest:
        for line in rest.split(b"\n"):
            if b'-title"' in line and _TITLE_LINE.search(line):
                for rec in _records(line + b"\n"):
                    _claude_title(rec, titles)
    session_id = session_id or path.stem
    entry = index.get(session_id, {})
    indexed = entry.get("summary") if isinstance(entry.get("summary"), str) else None
    if project is None and isinstance(entry.get("projectPath"), str):
        project = entry["projectPath"]
    title = titles.get("custom-title") or titles.get("ai-title") or summary or indexed or prompt
    when = _mtime(st)
    return SessionInfo(
        harness="claude-code",
        path=path,
        project=project or _decode_project(folder),
        size_bytes=st.st_size,
        requests=requests,
        requests_estimated=estimated,
        last_activity=when,
        live=_is_live(when, now),
        title=_first_line(title) if title else None,
        session_id=session_id,
    )


def _claude_title(rec: dict[str, Any], titles: dict[str, str]) -> None:
    """Keeps the latest `custom-title` (the user's) and the latest `ai-title` seen."""
    t = rec.get("customTitle") or rec.get("aiTitle") or rec.get("title")
    if isinstance(t, str) and t.strip():
        titles[str(rec.get("type"))] = t


def _decode_project(folder: str) -> str:
    """A project folder name back into a path: Claude Code wrote the cwd with "/" and "." as "-".

    Lossy ("-" in the original is indistinguishable), so it is only used when no record names the cwd.
    """
    return folder.replace("-", "/") if folder.startswith("-") else folder


# -- Codex ---------------------------------------------------------------------------------------
def _codex_count(lines: Iterable[bytes]) -> int:
    """Codex: model calls, counted as the reader counts them (`inspector.formats.codex`): one per
    run of output items (reasoning, assistant text, tool calls) ended by an input item or a
    report, and one per `token_count` report that follows no new response (a call whose output is
    not in the history); all-zero, unmoved and repeated reports are no call."""
    from inspector.formats.codex import OUTPUT_ITEMS

    n = 0
    open_response = False  # inside a run of output items
    pending = False  # a response counted whose report has not come yet
    last: tuple[Any, Any] | None = None
    for line in lines:
        if b"response_item" not in line and b"token_count" not in line and b'"type"' not in line:
            continue
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(rec, dict):
            continue
        rtype = rec.get("type")
        payload = rec.get("payload") if rtype in ("response_item", "event_msg") else rec
        if not isinstance(payload, dict):
            continue
        ptype = payload.get("type")
        if rtype == "event_msg" and ptype == "token_count":
            info = payload.get("info")
            if not isinstance(info, dict):
                continue
            key = (info.get("last_token_usage"), info.get("total_token_usage"))
            used = key[0] if isinstance(key[0], dict) else {}
            zero = not any(isinstance(used.get(k), int) and used[k] for k in ("input_tokens", "output_tokens"))
            if key != last and (zero or (last is not None and key[1] is not None and key[1] == last[1])):
                continue  # no model call was made
            if pending:
                pass  # the report of the response just counted
            elif key == last:
                continue  # repeated
            else:
                n += 1  # a call whose output is not in the history
            last, pending, open_response = key, False, False
            continue
        if rtype != "response_item" and "payload" in rec:
            continue
        output = ptype in OUTPUT_ITEMS or (ptype == "message" and payload.get("role") == "assistant")
        if output:
            if not open_response:
                n += 1
                open_response = pending = True
        elif ptype is not None:
            open_response = False
    return n


def codex_sessions(env: Mapping[str, str], cwd: Path, home: Path, now: datetime) -> Iterator[SessionInfo]:
    codex_home = Path(env["CODEX_HOME"]).expanduser() if env.get("CODEX_HOME") else home / ".codex"
    for year in _subdirs(codex_home / "sessions"):
        for month in _subdirs(year):
            for day in _subdirs(month):
                for path, st in _files(day, ".jsonl"):
                    if path.name.startswith("rollout-"):
                        yield _codex_session(path, st, now)


def _codex_session(path: Path, st: os.stat_result, now: datetime) -> SessionInfo:
    data, tail = _read_head_tail(path, st.st_size)
    requests, estimated = _count_requests(data, tail, st.st_size, _codex_count)
    head = data[:HEAD_BYTES] if tail is None else data
    project: str | None = None
    session_id: str | None = None
    prompt: str | None = None
    for rec in _records(head, limit=200):
        payload = rec.get("payload")
        if not isinstance(payload, dict):
            continue
        if rec.get("type") == "session_meta":
            if isinstance(payload.get("cwd"), str):
                project = payload["cwd"]
            if isinstance(payload.get("id"), str):
                session_id = payload["id"]
        elif prompt is None and payload.get("type") == "user_message":
            msg = payload.get("message")
            prompt = _prompt_title(msg if isinstance(msg, str) else None)
        elif prompt is None and payload.get("type") == "message" and payload.get("role") == "user":
            prompt = _prompt_title(_text_of(payload.get("content")))
    if project is None:
        # a session_meta line longer than the head: its cwd is usually still in it
        m = _CWD.search(head)
        if m:
            project = _decode_json_string(m.group(1))
    when = _mtime(st)
    return SessionInfo(
        harness="codex",
        path=path,
        project=project,
        size_bytes=st.st_size,
        requests=requests,
        requests_estimated=estimated,
        last_activity=when,
        live=_is_live(when, now),
        title=prompt,
        session_id=session_id,
    )


# -- opencode ------------------------------------------------------------------------------------
def opencode_sessions(env: Mapping[str, str], cwd: Path, home: Path, now: datetime) -> Iterator[SessionInfo]:
    root = xdg_home("XDG_DATA_HOME", ".local/share", env, home) / "opencode"
    for path, st in _files(root, ".db"):
        if path.name.startswith("opencode"):
            yield from _opencode_db(path, st, now)
    storage = root / "storage"
    for project_dir in _subdirs(storage / "session"):
        yield from _opencode_json_sessions(project_dir, storage / "message", now)
    for slug in _subdirs(root / "project"):
        legacy = slug / "storage" / "session"
        yield from _opencode_json_sessions(legacy / "info", legacy / "message", now)


def _open_ro(path: Path) -> sqlite3.Connection:
    """The reader's own read-only connection (`connect_readonly`): it neither locks nor changes a
    live database, and opens a WAL database no writer holds `immutable=1`, where a `mode=ro`
    open would create its -wal and -shm files beside it."""
    from inspector.formats.opencode import connect_readonly

    return connect_readonly(path)


def _opencode_db(path: Path, st: os.stat_result, now: datetime) -> list[SessionInfo]:
    try:
        con = _open_ro(path)
    except (sqlite3.Error, LoaderError):
        return [_opencode_db_whole(path, st, now)]
    try:
        rows = con.execute("SELECT id, title, directory, time_updated, parent_id FROM session").fetchall()
        sizes: dict[str, int] = {}
        try:
            counts: dict[str, int] | None = _opencode_requests(con)
            for sid, size in con.execute(
                "SELECT session_id, sum(length(data)) FROM message GROUP BY session_id"
            ):
                sizes[sid] = int(size or 0)
            for sid, size in con.execute(
                "SELECT session_id, sum(length(data)) FROM part GROUP BY session_id"
            ):
                sizes[sid] = sizes.get(sid, 0) + int(size or 0)
        except sqlite3.Error:
            counts, sizes = None, {}
    except sqlite3.Error:
        return [_opencode_db_whole(path, st, now)]
    finally:
        con.close()
    out: list[SessionInfo] = []
    file_time = _mtime(st)
    for sid, title, directory, updated, _parent in rows:
        if not isinstance(sid, str):
            continue
        when = file_time
        if isinstance(updated, int | float) and updated > 0:
            try:
                when = datetime.fromtimestamp(updated / 1000, UTC)
            except (OverflowError, OSError, ValueError):
                when = file_time
        out.append(
            SessionInfo(
                harness="opencode",
                path=path,
                project=directory if isinstance(directory, str) else None,
                size_bytes=sizes.get(sid, 0),
                requests=counts.get(sid, 0) if counts is not None else None,
                last_activity=when,
                live=_is_live(when, now),
                title=_first_line(title) if isinstance(title, str) and title.strip() else None,
                session_id=sid,
            )
        )
    return out


# the JSON functions only on rows the cheap LIKE lets through, and only on valid JSON (json_extract
# fails the whole query on one malformed row)
_JSON_IS = "(data LIKE {like} AND json_valid(data) AND json_extract(data, '$.{key}') = {value})"
_OPENCODE_REQUESTS = f"""
SELECT m.session_id, sum(CASE WHEN f.n > 0 THEN f.n ELSE 1 END)
FROM message m
LEFT JOIN (
    SELECT message_id, count(*) AS n FROM part
    WHERE {_JSON_IS.format(like="'%step-finish%'", key="type", value="'step-finish'")}
    GROUP BY message_id
) f ON f.message_id = m.id
WHERE {_JSON_IS.format(like="'%assistant%'", key="role", value="'assistant'")}
GROUP BY m.session_id
"""


def _opencode_requests(con: sqlite3.Connection) -> dict[str, int]:
    """Model calls per session, counted as the reader counts them: one per `step-finish` part of
    an assistant message, or one for an assistant message without any."""
    return {sid: int(n or 0) for sid, n in con.execute(_OPENCODE_REQUESTS) if isinstance(sid, str)}


def _opencode_db_whole(path: Path, st: os.stat_result, now: datetime) -> SessionInfo:
    when = _mtime(st)
    return SessionInfo(
        harness="opencode",
        path=path,
        size_bytes=st.st_size,
        last_activity=when,
        live=_is_live(when, now),
    )


def _opencode_json_sessions(session_dir: Path, message_root: Path, now: datetime) -> Iterator[SessionInfo]:
    for path, st in _files(session_dir, ".json"):
        info: dict[str, Any] = {}
        raw = _read_head(path, 1 << 20)
        try:
            loaded = orjson.loads(raw) if raw else {}
            info = loaded if isinstance(loaded, dict) else {}
        except orjson.JSONDecodeError:
            info = {}
        sid_value = info.get("id")
        sid = sid_value if isinstance(sid_value, str) and _plain_name(sid_value) else path.stem
        size = st.st_size
        latest = st.st_mtime
        for _m, mst in _files(message_root / sid, ".json"):
            size += mst.st_size
            latest = max(latest, mst.st_mtime)
        when = datetime.fromtimestamp(latest, UTC)
        title = info.get("title")
        directory = info.get("directory")
        yield SessionInfo(
            harness="opencode",
            path=path,
            project=directory if isinstance(directory, str) else None,
            size_bytes=size,
            requests=None,
            last_activity=when,
            live=_is_live(when, now),
            title=_first_line(title) if isinstance(title, str) and title.strip() else None,
            session_id=sid,
        )


# -- OpenCollab ----------------------------------------------------------------------------------
def opencollab_sessions(env: Mapping[str, str], cwd: Path, home: Path, now: datetime) -> Iterator[SessionInfo]:
    for run in _subdirs(cwd / ".opencollab" / "sessions"):
        for path, st in _files(run, ".json"):
            m = _AGENT_FILE.match(path.name)
            if m is None:
                continue
            size = st.st_size
            latest = st.st_mtime
            journal = path.with_name(path.name + ".journal")
            steps: int | None = None
            head = _read_head(path)
            found = _STEP_COUNT.search(head)
            if found:
                steps = int(found.group(1))
            try:
                jst = journal.stat()
            except OSError:
                jst = None
            if jst is not None:
                size += jst.st_size
                latest = max(latest, jst.st_mtime)
                tail = _read_tail(journal, jst.st_size, HEAD_BYTES)
                counts = _STEP_COUNT.findall(tail)
                if counts:
                    steps = int(counts[-1])
            when = datetime.fromtimestamp(latest, UTC)
            yield SessionInfo(
                harness="opencollab",
                path=path,
                project=str(cwd),
                size_bytes=size,
                requests=steps,
                last_activity=when,
                live=_is_live(when, now),
                title=f"agent {m.group(1)} · {m.group(2)} ({run.name})",
                session_id=f"{run.name}/agent_{m.group(1)}",
            )


# -- folders of the settings ---------------------------------------------------------------------
EXTRA_DEPTH = 4
"""How deep below a settings folder sessions are looked for (Codex: YYYY/MM/DD/rollout-*.jsonl)."""


def _extra_folder(root: Path, now: datetime, depth: int = 0) -> Iterator[SessionInfo]:
    """Sessions in a folder of the settings and below it (EXTRA_DEPTH levels): Codex rollouts
    (`rollout-*.jsonl`), Claude Code sessions (other `.jsonl` files whose head has a
    `sessionId`; not `agent-*` nor under `subagents/`) and opencode databases (`opencode*.db`)."""
    index: dict[str, dict[str, Any]] | None = None
    for path, st in _files(root, ".jsonl"):
        if path.name.startswith("rollout-"):
            yield _codex_session(path, st, now)
        elif not path.name.startswith("agent-") and b'"sessionId"' in _read_head(path):
            if index is None:
                index = _claude_index(root)
            yield _claude_session(path, st, root.name, index, now)
    for path, st in _files(root, ".db"):
        if path.name.startswith("opencode"):
            yield from _opencode_db(path, st, now)
    if depth < EXTRA_DEPTH:
        for sub in _subdirs(root):
            if sub.name != "subagents":
                yield from _extra_folder(sub, now, depth + 1)


def _plain_name(name: str) -> bool:
    """A file name with no path in it (ids from untrusted files are joined to folders)."""
    return (
        bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and "\0" not in name
    )


def _read_tail(path: Path, size: int, limit: int) -> bytes:
    try:
        with _open_binary(path) as fh:
            fh.seek(max(0, size - limit))
            return fh.read(limit)
    except OSError:
        return b""
