"""opencode sessions: the SQLite `opencode.db` (1.2+) and the older JSON-folder storage.

Where they live (docs/notes/opencode-codex.md §A5-§A6):
- 1.2 and later: `~/.local/share/opencode/opencode.db` (WAL), tables `session`, `message` and
  `part`; `message.data` / `part.data` hold the JSON record minus its ids. The database is opened
  read-only through a `file:...?mode=ro` URI (retried with `immutable=1` when a live database
  refuses that), inside one read transaction, so it is never locked against opencode or changed.
- Before: JSON files under `storage/`: `session/<project>/<ses>.json`,
  `message/<ses>/<msg>.json`, `part/<msg>/<prt>.json` (0.6-1.1), or, older still,
  `session/{info,message,part}/...` inside a project folder. A lone part or message file outside
  such a tree is read on its own.
- A path may be the database, the folder holding it, a `storage/` folder (or the folder holding
  it), or one JSON record inside a storage tree (the session it belongs to is loaded).

How a session becomes a ledger:
- Messages in creation order. A user message's text/file parts are its blocks (`ignored` text and
  text files already inlined as synthetic text are not sent, so not kept). An assistant message
  is split at its steps (`step-start` ... `step-finish`): each step is one model call and becomes
  an assistant message (reasoning, text, tool calls) followed by one tool message per tool part
  (the result as the model sees it; an unfinished tool reads `[Tool execution was interrupted]`).
  The first step keeps the opencode message id; later steps take the id of their first part;
  tool messages take their part id.
- Requests: one per `step-finish` (its `tokens` {input, output, reasoning, cache {read, write}};
  opencode's `input` excludes cached tokens, so `usage.context` = input + cache read + write), or
  one per assistant message when it has no step-finish (the message's own `tokens`, if any).
- Compaction: a user message with a `compaction` part, answered by an assistant `summary: true`
  message that finished without error, begins a new segment ordered as opencode rebuilds it:
  [the compaction request, the summary, the retained tail from `tail_start_id`, newer messages].
  The summarization call is a request of the old segment whose response is the summary. Older
  sessions with a summary message but no compaction part restart from the summary alone.
- Pruned tool output (`state.time.compacted`): the stored output stays in the ledger (opencode
  only flags it; the model was sent `[Old tool result content cleared]` from then on); each prune
  pass is a MICROCOMPACT event listing the cleared call ids, placed after the last request made
  before it.
- opencode does not store the context window, so `Transcript.window` stays None.
- Child sessions (subagents started by the `task` tool) are listed as `subagents`.

Sources: what each opencode message is, by the field or part it keys on (docs/notes/opencode-codex.md §A4-§A6):

| category | marker | kind · priority |
|---|---|---|
| system prompt (stored on the message, opencode 0.x) | an assistant message's `system` list of strings | identity · 100 (pinned: sent with every request) |
| system part | a user message's `system` string | identity · 100 (pinned) |
| compaction request | a user message with a `compaction` part | conversation · 0 |
| compaction summary | an assistant message with `summary: true` | summary · 0 |
| injected by the harness | a user message whose text parts are all `synthetic` (the compaction's "Continue if you have next steps" and the like) | conversation · 0 |
| task | the first user message with a typed text or file part | task · 80 (pinned) |
| skill tool output | a `skill` tool part (prune never clears it: `PRUNE_PROTECTED_TOOLS`) | skill · 85 (pinned) |
| tool output | every other tool part | tool output · 0 |

opencode 1.x stores neither its system prompt nor its tool definitions: they are the fixed
overhead the calibration sizes from the first step's tokens.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from inspector.model import (
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
    SourceKind,
    SubagentRef,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Transcript,
    Usage,
)

from .base import (
    LoaderError,
    LoadIssues,
    Progress,
    describe,
    json_error_reason,
    open_regular,
    read_regular,
    short,
    token_count,
    too_deep,
    too_deep_reason,
)
from .choice import match_session

FORMAT = "opencode"
SQLITE_MAGIC = b"SQLite format 3\x00"
REQUIRED_TABLES = frozenset({"session", "message", "part"})
CLEARED_TEXT = "[Old tool result content cleared]"
INTERRUPTED_TEXT = "[Tool execution was interrupted]"
STORED_SYSTEM = Source.of(SourceKind.IDENTITY, "system prompt (stored on the message, opencode 0.x)")
USER_SYSTEM = Source.of(SourceKind.IDENTITY, "system part (the prompt's `system`)")
COMPACTION_PROMPT = "What did we do so far?"
SUBTASK_TEXT = "The following tool was executed by the user"
PRUNE_GAP_MS = 10_000
"""Prunes flagged within this many milliseconds of each other are one prune pass."""
NOT_SENT_FILE_MIMES = frozenset({"text/plain", "application/x-directory"})
CONTENT_PARTS = frozenset({"text", "reasoning", "tool", "file", "compaction", "subtask"})
BOOKKEEPING_PARTS = frozenset({"step-start", "step-finish", "snapshot", "patch", "agent", "retry"})


# -- records, as either store yields them -------------------------------------------------------
@dataclass
class _Part:
    id: str
    data: dict[str, Any]
    file: str
    line: int
    time: int | None = None


@dataclass
class _Msg:
    id: str
    data: dict[str, Any]
    file: str
    line: int
    time: int | None = None
    parts: list[_Part] = field(default_factory=list)


@dataclass(frozen=True)
class OpencodeSession:
    """One session a store holds (for choosing which to load)."""

    id: str
    title: str | None = None
    updated: int = 0
    """Last update, milliseconds since the epoch."""
    parent_id: str | None = None
    directory: str | None = None
    model: str | None = None
    version: str | None = None
    """The opencode that wrote the session (its `version`)."""


def _json_text(value: Any) -> str:
    """Compact JSON for showing a structured value as text (never fails on odd values)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


def _opt_int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _iso(ms: int | None) -> str | None:
    if ms is None or ms <= 0:
        return None
    try:
        return (
            datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        )
    except (OverflowError, OSError, ValueError):
        return None


def _decode(raw: Any, file: str, line: int, what: str, issues: list[LoadIssue]) -> dict[str, Any] | None:
    """A JSON object from a `data` column or a file's bytes, or a load issue."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if not isinstance(raw, bytes | bytearray | memoryview):
        issues.append(LoadIssue(file=file, line=line, reason=f"{what}: no JSON data"))
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        issues.append(LoadIssue(file=file, line=line, reason=f"{what}: {json_error_reason(bytes(raw), exc)}"))
        return None
    if not isinstance(value, dict):
        issues.append(
            LoadIssue(
                file=file, line=line, reason=f"{what}: expected a JSON object, got {type(value).__name__}"
            )
        )
        return None
    if too_deep(value, bytes(raw)):
        issues.append(LoadIssue(file=file, line=line, reason=f"{what}: {too_deep_reason()}"))
        return None
    return value


def _model_name(raw: Any) -> str | None:
    """`session.model` / a user message's `model`: {id|modelID, providerID} or a JSON string of it."""
    if isinstance(raw, str):
        try:
            raw = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw or None
    if isinstance(raw, dict):
        return _str(raw.get("id")) or _str(raw.get("modelID"))
    return None


# -- SQLite ---------------------------------------------------------------------------------------
def _uri(db: Path) -> str:
    return "file:" + quote(str(db.resolve()), safe="/")


def _wal_files_missing(db: Path) -> bool:
    """A WAL-mode database whose -wal/-shm files are absent (no writer has it open)."""
    try:
        with open_regular(db) as fh:
            header = fh.read(20)
    except OSError:
        return False
    wal_mode = len(header) == 20 and header[18] == 2 and header[19] == 2
    return wal_mode and not (Path(f"{db}-wal").exists() and Path(f"{db}-shm").exists())


def connect_readonly(db: Path) -> sqlite3.Connection:
    """Open `db` read-only: never locks it against its writer, never changes it, writes nothing.

    A `mode=ro` open is tried first; if the database refuses it (a WAL database whose shared
    memory cannot be opened, a writer holding an exclusive lock), it is opened `immutable=1`,
    which reads the main file as it stands and takes no locks at all. A WAL database that no
    writer has open (its -wal and -shm files are absent: everything is in the main file) is opened
    `immutable=1` at once, because a `mode=ro` open would create those two files beside it.
    """
    uri = _uri(db)
    attempts = ["mode=ro", "mode=ro&immutable=1"]
    if _wal_files_missing(db):
        attempts.reverse()
    first: sqlite3.Error | None = None
    for params in attempts:
        con: sqlite3.Connection | None = None
        try:
            con = sqlite3.connect(f"{uri}?{params}", uri=True, timeout=1.0, isolation_level=None)
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return con
        except sqlite3.Error as exc:
            if con is not None:
                con.close()
            first = first or exc
    raise LoaderError(f"cannot open {db} read-only: {first}")


def _tables(con: sqlite3.Connection) -> set[str]:
    return {str(r[0]) for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {str(r[1]) for r in con.execute(f"PRAGMA table_info({table})")}


def _is_opencode_db(path: Path) -> bool:
    try:
        with open_regular(path) as fh:
            if fh.read(16) != SQLITE_MAGIC:
                return False
    except OSError:
        return False
    try:
        con = connect_readonly(path)
    except LoaderError:
        return False
    try:
        return (
            _tables(con) >= REQUIRED_TABLES
            and "data" in _columns(con, "message")
            and "data" in _columns(con, "part")
        )
    except sqlite3.Error:
        return False
    finally:
        con.close()


class _DbStore:
    def __init__(self, db: Path) -> None:
        self.db = db
        self.file = str(db)
        self.count = 0
        """How many sessions `read` found."""

    def open(self) -> sqlite3.Connection:
        con = connect_readonly(self.db)
        try:
            if not _tables(con) >= REQUIRED_TABLES:
                raise LoaderError(
                    f"{self.db} is an SQLite database without opencode's session/message/part tables"
                )
        except sqlite3.Error as exc:
            con.close()
            raise LoaderError(f"cannot read {self.db}: {exc}") from None
        return con

    @staticmethod
    def _sessions(con: sqlite3.Connection) -> list[OpencodeSession]:
        cols = _columns(con, "session")
        want = [
            c
            for c in ("id", "title", "time_updated", "time_created", "parent_id", "directory", "model", "version")
            if c in cols
        ]
        out: list[OpencodeSession] = []
        for row in con.execute(f"SELECT {', '.join(want)} FROM session"):
            r = dict(zip(want, row, strict=True))
            out.append(
                OpencodeSession(
                    id=str(r["id"]),
                    title=_str(r.get("title")),
                    updated=_int(r.get("time_updated")) or _int(r.get("time_created")),
                    parent_id=_str(r.get("parent_id")),
                    directory=_str(r.get("directory")),
                    model=_model_name(r.get("model")),
                    version=_str(r.get("version")) or None,
                )
            )
        return out

    def sessions(self) -> list[OpencodeSession]:
        con = self.open()
        try:
            return self._sessions(con)
        finally:
            con.close()

    def read(
        self, session_id: str | None, issues: list[LoadIssue]
    ) -> tuple[OpencodeSession, list[_Msg], list[OpencodeSession], dict[str, tuple[int, int]]]:
        """The chosen session, its messages with parts, its child sessions and their sizes."""
        con = self.open()
        try:
            con.execute("BEGIN")  # one snapshot for every query below
            sessions = self._sessions(con)
            self.count = len(sessions)
            chosen = _choose(sessions, session_id, self.file)
            msgs: list[_Msg] = []
            by_id: dict[str, _Msg] = {}
            rows = con.execute(
                "SELECT rowid, id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id",
                (chosen.id,),
            )
            for rowid, mid, created, data in rows:
                rec = _decode(data, self.file, rowid, f"message {mid}", issues)
                if rec is None:
                    continue
                m = _Msg(id=str(mid), data=rec, file=self.file, line=rowid, time=_opt_int(created))
                msgs.append(m)
                by_id[m.id] = m
            rows = con.execute(
                "SELECT p.rowid, p.id, p.message_id, p.time_created, p.data FROM part p"
                " JOIN message m ON m.id = p.message_id WHERE m.session_id = ? ORDER BY p.message_id, p.id",
                (chosen.id,),
            )
            for rowid, pid, mid, created, data in rows:
                rec = _decode(data, self.file, rowid, f"part {pid}", issues)
                owner = by_id.get(str(mid))
                if rec is None or owner is None:
                    continue
                owner.parts.append(
                    _Part(id=str(pid), data=rec, file=self.file, line=rowid, time=_opt_int(created))
                )
            children = [s for s in sessions if s.parent_id == chosen.id]
            sizes: dict[str, tuple[int, int]] = {}
            for child in children:
                n_msgs = con.execute(
                    "SELECT count(*) FROM message WHERE session_id = ?", (child.id,)
                ).fetchone()[0]
                n_reqs = con.execute(
                    "SELECT count(*) FROM part p JOIN message m ON m.id = p.message_id"
                    " WHERE m.session_id = ? AND p.data LIKE '%\"step-finish\"%'",
                    (child.id,),
                ).fetchone()[0]
                sizes[child.id] = (int(n_msgs), int(n_reqs))
            con.execute("COMMIT")
            return chosen, msgs, children, sizes
        except sqlite3.Error as exc:
            raise LoaderError(f"cannot read {self.db}: {exc}") from None
        finally:
            con.close()


# -- JSON folders ---------------------------------------------------------------------------------
def _read_json(path: Path, issues: list[LoadIssue], what: str) -> dict[str, Any] | None:
    if not path.is_file():  # a folder named *.json, or a FIFO (a read would block)
        issues.append(LoadIssue(file=str(path), line=1, reason=f"{what}: not a regular file"))
        return None
    try:
        raw = read_regular(path)
    except OSError as exc:
        issues.append(LoadIssue(file=str(path), line=1, reason=f"{what}: cannot read: {exc.strerror or exc}"))
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        issues.append(
            LoadIssue(
                file=str(path), line=max(1, exc.lineno), reason=f"{what}: {json_error_reason(raw, exc)}"
            )
        )
        return None
    if too_deep(value, raw):
        issues.append(LoadIssue(file=str(path), line=1, reason=f"{what}: {too_deep_reason()}"))
        return None
    if not isinstance(value, dict):
        issues.append(
            LoadIssue(
                file=str(path), line=1, reason=f"{what}: expected a JSON object, got {type(value).__name__}"
            )
        )
        return None
    return value


def _is_storage(root: Path) -> bool:
    """A JSON storage root: `message/` and `part/` (0.6-1.1) or `session/{info,message}` (older)."""
    if (root / "message").is_dir() and ((root / "part").is_dir() or (root / "session").is_dir()):
        return True
    return (root / "session" / "message").is_dir() and (
        (root / "session" / "info").is_dir() or (root / "session" / "part").is_dir()
    )


def _plain_name(name: str) -> bool:
    """Whether an id read from a record is safe as one path component (never leads out of the store)."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\x00")


class _JsonStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.count = 0
        """How many sessions `read` found."""
        self.old = not (root / "message").is_dir() and (root / "session" / "message").is_dir()

    def _message_dir(self, session_id: str) -> Path:
        return (
            (self.root / "session" / "message" / session_id)
            if self.old
            else (self.root / "message" / session_id)
        )

    def _part_dir(self, session_id: str, message_id: str) -> Path:
        return (
            (self.root / "session" / "part" / session_id / message_id)
            if self.old
            else (self.root / "part" / message_id)
        )

    def sessions(self, issues: list[LoadIssue] | None = None) -> list[OpencodeSession]:
        sink: list[LoadIssue] = LoadIssues() if issues is None else issues
        files = (
            sorted((self.root / "session" / "info").glob("*.json"))
            if self.old
            else sorted((self.root / "session").glob("*/*.json"))
        )
        out: dict[str, OpencodeSession] = {}
        for f in files:
            rec = _read_json(f, sink, "session")
            if rec is None:
                continue
            t = rec.get("time") if isinstance(rec.get("time"), dict) else {}
            assert isinstance(t, dict)
            sid = _str(rec.get("id")) or f.stem
            out[sid] = OpencodeSession(
                id=sid,
                title=_str(rec.get("title")),
                updated=_int(t.get("updated")) or _int(t.get("created")),
                parent_id=_str(rec.get("parentID")),
                directory=_str(rec.get("directory")),
                version=_str(rec.get("version")) or None,
            )
        base = (self.root / "session" / "message") if self.old else (self.root / "message")
        for d in sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []:
            if d.name not in out:
                mtimes = [int(f.stat().st_mtime * 1000) for f in d.glob("*.json")]
                out[d.name] = OpencodeSession(id=d.name, updated=max(mtimes, default=0))
        return list(out.values())

    def messages(self, session_id: str, issues: list[LoadIssue]) -> list[_Msg]:
        msgs: list[_Msg] = []
        if not _plain_name(session_id):
            issues.append(
                LoadIssue(
                    file=str(self.root),
                    line=0,
                    reason=f"session id {short(session_id)!r} is not a plain name; its messages are not looked up",
                )
            )
            return msgs
        for f in sorted(self._message_dir(session_id).glob("*.json")):
            rec = _read_json(f, issues, "message")
            if rec is None:
                continue
            mid = _str(rec.get("id")) or f.stem
            t = rec.get("time") if isinstance(rec.get("time"), dict) else {}
            assert isinstance(t, dict)
            m = _Msg(id=mid, data=rec, file=str(f), line=1, time=_opt_int(t.get("created")))
            if not _plain_name(mid):
                issues.append(
                    LoadIssue(
                        file=str(f),
                        line=1,
                        reason=f"message id {short(mid)!r} is not a plain name; its parts are not looked up",
                    )
                )
                msgs.append(m)
                continue
            for pf in sorted(self._part_dir(session_id, mid).glob("*.json")):
                prec = _read_json(pf, issues, "part")
                if prec is not None:
                    m.parts.append(_Part(id=_str(prec.get("id")) or pf.stem, data=prec, file=str(pf), line=1))
            m.parts.sort(key=lambda p: p.id)
            msgs.append(m)
        msgs.sort(key=lambda m: (m.time or 0, m.id))
        seen: set[str] = set()
        unique: list[_Msg] = []
        for m in msgs:
            if m.id in seen:
                issues.append(
                    LoadIssue(file=m.file, line=1, reason=f"duplicate message id {m.id}; kept the first")
                )
                continue
            seen.add(m.id)
            unique.append(m)
        return unique

    def read(
        self, session_id: str | None, issues: list[LoadIssue]
    ) -> tuple[OpencodeSession, list[_Msg], list[OpencodeSession], dict[str, tuple[int, int]]]:
        sessions = self.sessions(issues)
        self.count = len(sessions)
        chosen = _choose(sessions, session_id, str(self.root))
        msgs = self.messages(chosen.id, issues)
        children = [s for s in sessions if s.parent_id == chosen.id]
        sizes: dict[str, tuple[int, int]] = {}
        for child in children:
            sink: list[LoadIssue] = []
            cm = self.messages(child.id, sink)
            sizes[child.id] = (len(cm), sum(1 for m in cm if m.data.get("role") == "assistant"))
        return chosen, msgs, children, sizes


def _choose(sessions: list[OpencodeSession], session_id: str | None, where: str) -> OpencodeSession:
    """The session `session_id` names (its id or a prefix only it has), else the most recently
    updated top-level one; LoaderError (one line naming a few ids) when it names none or several."""
    if session_id is not None:
        newest_first = sorted(sessions, key=lambda s: (s.updated, s.id), reverse=True)
        wanted = match_session([s.id for s in newest_first], session_id, f"opencode {where}")
        return next(s for s in newest_first if s.id == wanted)
    if not sessions:
        raise LoaderError(f"{where} holds no opencode session")
    roots = [s for s in sessions if s.parent_id is None] or sessions
    return max(roots, key=lambda s: (s.updated, s.id))


def _storage_of(record_file: Path, rec: dict[str, Any]) -> tuple[Path, str] | None:
    """The storage root a record file sits in, and the session it belongs to."""
    parents = record_file.parents
    if len(parents) < 3:
        return None
    candidates: list[tuple[Path, str | None]] = []
    if "messageID" in rec and "type" in rec:  # a part
        candidates.append((parents[2], _str(rec.get("sessionID"))))  # part/<msg>/<prt>.json
        if len(parents) > 4:
            candidates.append((parents[4], parents[1].name))  # session/part/<ses>/<msg>/<prt>.json
    elif "role" in rec:  # a message
        candidates.append((parents[2], parents[0].name))  # message/<ses>/<msg>.json
        if len(parents) > 3:
            candidates.append((parents[3], parents[0].name))  # session/message/<ses>/<msg>.json
    else:  # a session: session/<project>/<ses>.json, or session/info/<ses>.json (older)
        candidates.append((parents[2], _str(rec.get("id"))))
    for root, sid in candidates:
        if _is_storage(root) and sid:
            return root, sid
    return None


def _record_kind(rec: dict[str, Any]) -> str | None:
    """'part', 'message' or 'session' for an opencode JSON record, else None."""
    if not isinstance(rec.get("id"), str):
        return None
    if isinstance(rec.get("sessionID"), str):
        if isinstance(rec.get("messageID"), str) and isinstance(rec.get("type"), str):
            return "part"
        if rec.get("role") in ("user", "assistant") and isinstance(rec.get("time"), dict):
            return "message"
    if ("projectID" in rec or "directory" in rec) and isinstance(rec.get("time"), dict) and "title" in rec:
        return "session"
    return None


# -- building the transcript ---------------------------------------------------------------------
def _usage(tokens: Any, problems: list[str] | None = None) -> Usage | None:
    """`tokens` as Usage; a count that is not a whole number from 0 to MAX_TOKENS is 0 (and a
    problem, when `problems` is given)."""
    sink: list[str] = [] if problems is None else problems
    if not isinstance(tokens, dict):
        if tokens is not None:
            sink.append(f"`tokens` is {describe(tokens)}, not an object; ignored")
        return None
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
    assert isinstance(cache, dict)
    return Usage(
        input=token_count(tokens, "input", "tokens", sink),
        cache_read=token_count(cache, "read", "tokens.cache", sink),
        cache_write=token_count(cache, "write", "tokens.cache", sink),
        output=token_count(tokens, "output", "tokens", sink),
        reasoning=token_count(tokens, "reasoning", "tokens", sink),
    )


def _signature(meta: Any) -> int | None:
    """The size of a reasoning part's signature or encrypted content in its provider metadata."""
    if not isinstance(meta, dict):
        return None
    for v in meta.values():
        if isinstance(v, dict):
            for key in ("signature", "reasoningEncryptedContent", "encryptedContent", "redactedData"):
                sig = v.get(key)
                if isinstance(sig, str) and sig:
                    return len(sig)
    return None


def _media(data: dict[str, Any]) -> MediaBlock:
    mime = str(data.get("mime", ""))
    url = data.get("url")
    size = 0
    if isinstance(url, str):
        size = len(url.partition(",")[2]) * 3 // 4 if url.startswith("data:") else 0
    return MediaBlock(
        type="image" if mime.startswith("image/") else "document", media_type=mime, size_bytes=size
    )


@dataclass
class _Step:
    parts: list[_Part] = field(default_factory=list)
    finish: _Part | None = None
    start: _Part | None = None


class _Builder:
    def __init__(self, file: str, session: OpencodeSession, issues: list[LoadIssue]) -> None:
        self.file = file
        self.session = session
        self.issues = issues
        self.skipped: Counter[str] = Counter()
        self.messages: list[Message] = []
        self.segments: list[list[str]] = [[]]
        self.requests: list[Request] = []
        self.request_times: list[int | None] = []
        self.events: list[RecordedEvent] = []
        self.ids_of: dict[str, list[str]] = {}
        self.triggers: dict[str, tuple[_Msg, _Part]] = {}
        self.pruned: list[tuple[int, str, _Part]] = []
        self.task_sessions: dict[str, str] = {}
        self.first_task_done = False
        self.system_texts: set[str] = set()

    def _add(self, m: Message, segment: bool = True) -> None:
        self.messages.append(m)
        if segment:
            self.segments[-1].append(m.id)

    def _system_part(self, rec: _Msg, raw: object, source: Source) -> None:
        """A system part opencode recorded (`system`: a string on a user message, or, before 0.6,
        a list of strings on an assistant message) as a pinned system message, once per text.
        Before any request it heads the segment (the system prompt of the first call); later it
        goes where it was recorded."""
        parts = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
        text = "\n".join(x for x in parts if isinstance(x, str))
        if not text.strip() or text in self.system_texts:
            return
        self.system_texts.add(text)
        m = Message(
            id=f"{rec.id}:system",
            role=Role.SYSTEM,
            blocks=(TextBlock(text=text),),
            timestamp=_iso(rec.time),
            source=source,
            origin=Origin(file=rec.file, line=rec.line),
            is_meta=True,
        )
        if self.requests or len(self.segments) > 1:
            self._add(m)
        else:
            self.messages.append(m)
            self.segments[-1].insert(0, m.id)

    # -- user --------------------------------------------------------------------------------
    def user(self, rec: _Msg) -> None:
        self._system_part(rec, rec.data.get("system"), USER_SYSTEM)
        blocks: list[Block] = []
        trigger: _Part | None = None
        typed = False
        for p in rec.parts:
            d = p.data
            t = _str(d.get("type"))
            if t == "text":
                if d.get("ignored"):
                    self.skipped["part:text (ignored)"] += 1
                    continue
                blocks.append(TextBlock(text=str(d.get("text", ""))))
                typed = typed or not d.get("synthetic")
            elif t == "file":
                if _str(d.get("mime")) in NOT_SENT_FILE_MIMES:
                    self.skipped["part:file (inlined as text)"] += 1
                    continue
                blocks.append(_media(d))
                typed = True
            elif t == "compaction":
                trigger = p
                blocks.append(TextBlock(text=COMPACTION_PROMPT))
            elif t == "subtask":
                blocks.append(TextBlock(text=SUBTASK_TEXT))
            else:
                self.skipped[f"part:{t}" if t in BOOKKEEPING_PARTS else f"unknown:part:{t}"] += 1
        if not blocks:
            self.skipped["user message without parts sent"] += 1
            return
        if trigger is not None:
            source, meta = Source.of(SourceKind.CONVERSATION, "compaction request"), True
        elif not typed:
            source, meta = Source.of(SourceKind.CONVERSATION, "injected by the harness"), True
        elif not self.first_task_done:
            source, meta = Source.of(SourceKind.TASK, "first user task"), False
            self.first_task_done = True
        else:
            source, meta = Source.of(SourceKind.CONVERSATION), False
        m = Message(
            id=rec.id,
            role=Role.USER,
            blocks=tuple(blocks),
            timestamp=_iso(rec.time),
            source=source,
            origin=Origin(file=rec.file, line=rec.line),
            model=_model_name(rec.data.get("model")),
            is_meta=meta,
        )
        self._add(m)
        self.ids_of[rec.id] = [m.id]
        if trigger is not None:
            self.triggers[rec.id] = (rec, trigger)

    # -- assistant ---------------------------------------------------------------------------
    def _steps(self, rec: _Msg) -> list[_Step]:
        steps: list[_Step] = []
        cur: _Step | None = None
        for p in rec.parts:
            t = _str(p.data.get("type"))
            if t == "step-start":
                if cur is not None and cur.parts:
                    steps.append(cur)
                cur = _Step(start=p)
            elif t == "step-finish":
                cur = cur or _Step()
                cur.finish = p
                steps.append(cur)
                cur = None
            elif t in CONTENT_PARTS:
                cur = cur or _Step()
                cur.parts.append(p)
            else:
                self.skipped[f"part:{t}" if t in BOOKKEEPING_PARTS else f"unknown:part:{t}"] += 1
        if cur is not None and (cur.parts or not steps):
            steps.append(cur)
        return steps

    def _tool(self, p: _Part, blocks: list[Block], results: list[Message], rec: _Msg) -> None:
        d = p.data
        state = d.get("state") if isinstance(d.get("state"), dict) else {}
        assert isinstance(state, dict)
        if not isinstance(d.get("tool"), str) or not isinstance(d.get("state"), dict):
            self.issues.append(
                LoadIssue(
                    file=p.file,
                    line=p.line,
                    reason=f"tool part {short(p.id)} without a string `tool` and a `state` object",
                )
            )
        name = str(d.get("tool", ""))
        call_id = _str(d.get("callID")) or p.id
        args = state.get("input")
        blocks.append(
            ToolCallBlock(id=call_id, name=name, arguments=args if isinstance(args, dict | str) else {})
        )
        status = state.get("status")
        times = state.get("time") if isinstance(state.get("time"), dict) else {}
        assert isinstance(times, dict)
        media = 0
        if status == "completed":
            output = state.get("output")
            content = output if isinstance(output, str) else ("" if output is None else _json_text(output))
            error = False
            attachments = state.get("attachments")
            media = len(attachments) if isinstance(attachments, list) else 0
            compacted = _opt_int(times.get("compacted"))
            if compacted is not None:
                self.pruned.append((compacted, call_id, p))
        elif status == "error":
            err = state.get("error")
            content = err if isinstance(err, str) else _json_text(err)
            error = True
        else:
            content, error = INTERRUPTED_TEXT, True
        meta = state.get("metadata")
        if name == "task" and isinstance(meta, dict) and isinstance(meta.get("sessionId"), str):
            self.task_sessions[meta["sessionId"]] = call_id
        source = (
            Source.of(SourceKind.SKILL, "skill tool output")
            if name == "skill"
            else Source.of(SourceKind.TOOL_OUTPUT)
        )
        results.append(
            Message(
                id=p.id,
                role=Role.TOOL,
                blocks=(
                    ToolResultBlock(
                        call_id=call_id, tool_name=name, content=content, is_error=error, media=media
                    ),
                ),
                timestamp=_iso(_opt_int(times.get("end")) or rec.time),
                source=source,
                origin=Origin(file=p.file, line=p.line),
            )
        )

    def assistant(self, rec: _Msg) -> None:
        data = rec.data
        self._system_part(rec, data.get("system"), STORED_SYSTEM)
        is_summary = bool(data.get("summary"))
        times = data.get("time") if isinstance(data.get("time"), dict) else {}
        assert isinstance(times, dict)
        completed = _opt_int(times.get("completed"))
        summary_done = is_summary and bool(data.get("finish")) and not data.get("error")
        steps = self._steps(rec)
        has_finish = any(s.finish is not None for s in steps)
        model = _str(data.get("modelID"))
        ids: list[str] = []
        in_segment = not summary_done
        old_len = len(self.segments[-1])
        for k, step in enumerate(steps):
            blocks: list[Block] = []
            results: list[Message] = []
            for p in step.parts:
                d = p.data
                t = _str(d.get("type"))
                if t == "text":
                    if d.get("ignored"):
                        self.skipped["part:text (ignored)"] += 1
                        continue
                    blocks.append(TextBlock(text=str(d.get("text", ""))))
                elif t == "reasoning":
                    sig = _signature(d.get("metadata"))
                    text = str(d.get("text", ""))
                    blocks.append(
                        ReasoningBlock(
                            text=text,
                            signed=sig is not None,
                            redacted=sig is not None and not text,
                            signature_chars=sig or 0,
                        )
                    )
                elif t == "tool":
                    self._tool(p, blocks, results, rec)
                elif t == "file":
                    blocks.append(_media(d))
                else:
                    blocks.append(TextBlock(text=SUBTASK_TEXT if t == "subtask" else COMPACTION_PROMPT))
            if not blocks and step.finish is None:
                continue
            first = step.start or (step.parts[0] if step.parts else step.finish)
            finish = step.finish.data if step.finish is not None else {}
            problems: list[str] = []
            if step.finish is not None:
                usage = _usage(finish.get("tokens"), problems)
                where: _Part | _Msg = step.finish
            elif not has_finish:
                usage = _usage(data.get("tokens"), problems)
                where = rec
                if usage is not None and usage.context + usage.output == 0:
                    usage = None
            else:
                usage = None
                where = rec
            self.issues.extend(LoadIssue(file=where.file, line=where.line, reason=p) for p in problems)
            last = k == len(steps) - 1
            stop = _str(finish.get("reason")) or (_str(data.get("finish")) if last else None)
            m: Message | None = None
            if blocks:
                if not ids:
                    mid, origin, ms = rec.id, Origin(file=rec.file, line=rec.line), rec.time
                else:
                    assert first is not None
                    mid, origin, ms = (
                        first.id,
                        Origin(file=first.file, line=first.line),
                        first.time or rec.time,
                    )
                summary_source = Source.of(SourceKind.SUMMARY, "compaction summary")
                m = Message(
                    id=mid,
                    role=Role.ASSISTANT,
                    blocks=tuple(blocks),
                    timestamp=_iso(ms),
                    source=summary_source if is_summary else Source.of(SourceKind.CONVERSATION),
                    origin=origin,
                    model=model,
                    is_summary=is_summary,
                    stop_reason=stop,
                )
            else:
                self.skipped["step without output"] += 1
            finished_at = (step.finish.time if step.finish is not None else None) or completed
            self.requests.append(
                Request(
                    index=len(self.requests) + 1,
                    response_id=m.id if m is not None else None,
                    model=model,
                    usage=usage,
                    segment=len(self.segments) - 1,
                    ledger_len=len(self.segments[-1]) if in_segment else old_len,
                    timestamp=_iso(finished_at) or (m.timestamp if m is not None else _iso(rec.time)),
                    stop_reason=stop,
                )
            )
            self.request_times.append(finished_at or rec.time)
            if m is not None:
                self._add(m, segment=in_segment)
                ids.append(m.id)
            for r in results:
                self._add(r, segment=in_segment)
                ids.append(r.id)
        if not ids:
            self.skipped["assistant message without parts"] += 1
            return
        self.ids_of[rec.id] = ids
        if summary_done:
            self._compaction(rec, ids)

    def _compaction(self, rec: _Msg, summary_ids: list[str]) -> None:
        parent = _str(rec.data.get("parentID"))
        found = self.triggers.pop(parent, None) if parent else None
        old = self.segments[-1]
        new_ids: list[str] = []
        preserved: list[str] = []
        trigger: str | None = None
        auto: Any = None
        if found is not None:
            trig_rec, part = found
            trig_ids = self.ids_of.get(trig_rec.id, [])
            new_ids.extend(trig_ids)
            auto = part.data.get("auto")
            trigger = "auto" if auto else "manual"
            if part.data.get("overflow"):
                trigger = "overflow"
            tail = _str(part.data.get("tail_start_id"))
            tail_ids = self.ids_of.get(tail, []) if tail else []
            if tail_ids and tail_ids[0] in old:
                start = old.index(tail_ids[0])
                end = old.index(trig_ids[0]) if trig_ids and trig_ids[0] in old else len(old)
                preserved = old[start:end]
        new_ids.extend(summary_ids)
        new_ids.extend(preserved)
        self.segments.append(new_ids)
        self.events.append(
            RecordedEvent(
                kind=EventKind.COMPACTION,
                trigger=trigger,
                after_request=len(self.requests),
                segment=len(self.segments) - 1,
                summary_id=summary_ids[0],
                preserved_ids=tuple(preserved),
                timestamp=_iso(rec.time),
                file=rec.file,
                line=rec.line,
            )
        )

    # -- whole session -----------------------------------------------------------------------
    def _prunes(self) -> list[RecordedEvent]:
        out: list[RecordedEvent] = []
        clusters: list[list[tuple[int, str, _Part]]] = []
        for item in sorted(self.pruned, key=lambda x: x[0]):
            if clusters and item[0] - clusters[-1][-1][0] <= PRUNE_GAP_MS:
                clusters[-1].append(item)
            else:
                clusters.append([item])
        for c in clusters:
            at = c[0][0]
            after = 0
            for i, t in enumerate(self.request_times):
                if t is not None and t <= at:
                    after = i + 1
            out.append(
                RecordedEvent(
                    kind=EventKind.MICROCOMPACT,
                    trigger="prune",
                    cleared_tool_ids=tuple(call for _, call, _ in c),
                    after_request=after,
                    timestamp=_iso(at),
                    file=c[0][2].file,
                    line=c[0][2].line,
                )
            )
        return out

    def build(
        self, path: str, msgs: list[_Msg], children: list[OpencodeSession], sizes: dict[str, tuple[int, int]]
    ) -> Transcript:
        for rec in msgs:
            role = rec.data.get("role")
            if role == "user":
                self.user(rec)
            elif role == "assistant":
                self.assistant(rec)
            else:
                self.issues.append(
                    LoadIssue(
                        file=rec.file, line=rec.line, reason=f"message {rec.id} has unknown role {role!r}"
                    )
                )
        events = self.events + self._prunes()
        order = sorted(
            range(len(events)),
            key=lambda i: (events[i].after_request, events[i].kind is EventKind.COMPACTION, i),
        )
        events = [events[i] for i in order]
        started: dict[int, int] = {
            e.segment: i
            for i, e in enumerate(events)
            if e.kind is EventKind.COMPACTION and e.segment is not None
        }
        segments = [
            Segment(index=i, message_ids=tuple(ids), started_by=started.get(i))
            for i, ids in enumerate(self.segments)
        ]
        models = Counter(r.model for r in self.requests if r.model)
        subagents = [
            SubagentRef(
                agent_id=c.id,
                path=path,
                layout="opencode child session",
                description=c.title,
                tool_use_id=self.task_sessions.get(c.id),
                messages=sizes.get(c.id, (0, 0))[0],
                requests=sizes.get(c.id, (0, 0))[1],
            )
            for c in children
        ]
        return Transcript(
            format=FORMAT,
            path=path,
            session_id=self.session.id,
            model=models.most_common(1)[0][0] if models else self.session.model,
            window=None,
            harness_version=self.session.version,
            title=self.session.title,
            messages=self.messages,
            segments=segments,
            requests=self.requests,
            events=events,
            subagents=subagents,
            load_issues=self.issues,
            skipped=dict(self.skipped),
        )


# -- entry points ---------------------------------------------------------------------------------
def _db_in(folder: Path) -> Path | None:
    """An opencode database inside `folder` (`opencode.db` first, then `opencode-<channel>.db`)."""
    named = folder / "opencode.db"
    if named.is_file() and _is_opencode_db(named):
        return named
    others = sorted(folder.glob("opencode*.db"), key=lambda p: p.stat().st_mtime, reverse=True)
    return next((p for p in others if p.is_file() and _is_opencode_db(p)), None)


database_in = _db_in


def _storage_in(folder: Path) -> Path | None:
    for root in (folder / "storage", folder):
        if _is_storage(root):
            return root
    return None


def _lone_record(path: Path, rec: dict[str, Any], kind: str, issues: list[LoadIssue]) -> Transcript:
    """A part or message file outside any storage tree: read on its own."""
    session = OpencodeSession(
        id=_str(rec.get("sessionID")) or _str(rec.get("id")) or path.stem, title=_str(rec.get("title"))
    )
    msgs: list[_Msg] = []
    if kind == "part":
        ptype = rec.get("type")
        role = "user" if ptype in ("compaction", "subtask") else "assistant"
        mid = str(rec.get("messageID"))
        msgs.append(
            _Msg(
                id=mid,
                data={"role": role},
                file=str(path),
                line=1,
                parts=[_Part(id=str(rec["id"]), data=rec, file=str(path), line=1)],
            )
        )
    elif kind == "message":
        t = rec.get("time") if isinstance(rec.get("time"), dict) else {}
        assert isinstance(t, dict)
        msgs.append(
            _Msg(id=str(rec["id"]), data=rec, file=str(path), line=1, time=_opt_int(t.get("created")))
        )
    return _Builder(str(path), session, issues).build(str(path), msgs, [], {})


def load_opencode(path: str | Path, session_id: str | None = None) -> Transcript:
    """Read one opencode session (the most recently updated top-level one unless `session_id` names one)."""
    p = Path(path)
    issues: list[LoadIssue] = LoadIssues()
    store: _DbStore | _JsonStore | None = None
    from_record = False
    if p.is_dir():
        db = _db_in(p)
        if db is not None:
            store = _DbStore(db)
        else:
            root = _storage_in(p)
            if root is not None:
                store = _JsonStore(root)
    elif _is_opencode_db(p):
        store = _DbStore(p)
    else:
        rec = _read_json(p, issues, "record")
        kind = _record_kind(rec) if rec is not None else None
        if rec is None or kind is None:
            raise LoaderError(f"{p} is not an opencode database, storage folder or record")
        located = _storage_of(p.resolve(), rec)
        if located is None:
            return _lone_record(p, rec, kind, issues)
        root, sid = located
        store = _JsonStore(root)
        session_id = session_id or sid
        from_record = True
    if store is None:
        raise LoaderError(f"{p} holds no opencode database or storage folder")
    chosen, msgs, children, sizes = store.read(session_id, issues)
    where = store.file if isinstance(store, _DbStore) else str(p)
    transcript = _Builder(where, chosen, issues).build(where, msgs, children, sizes)
    if not from_record:  # (a record file names its session: the path is that one session)
        transcript.sessions_in_source = store.count
        transcript.session_named = session_id is not None
    return transcript


def list_sessions(path: str | Path) -> list[OpencodeSession]:
    """The sessions an opencode database or storage folder holds, most recently updated first."""
    p = Path(path)
    store: _DbStore | _JsonStore | None = None
    if p.is_dir():
        db = _db_in(p)
        root = None if db is not None else _storage_in(p)
        store = _DbStore(db) if db is not None else (_JsonStore(root) if root is not None else None)
    elif _is_opencode_db(p):
        store = _DbStore(p)
    if store is None:
        raise LoaderError(f"{p} holds no opencode database or storage folder")
    return sorted(store.sessions(), key=lambda s: (s.updated, s.id), reverse=True)


class OpencodeFormat:
    """Detects opencode by content: an SQLite file with session/message/part tables, a folder with
    such a database or a JSON `storage/` tree, or one opencode JSON record (part, message, session)."""

    format = FORMAT

    def sniff(self, path: Path, head: bytes) -> bool:
        if path.is_dir():
            return _db_in(path) is not None or _storage_in(path) is not None
        if head.startswith(SQLITE_MAGIC):
            return _is_opencode_db(path)
        body = head.lstrip()
        if not body.startswith(b"{") or (b'"sessionID"' not in head and b'"projectID"' not in head):
            return False
        try:
            value = orjson.loads(head)
        except orjson.JSONDecodeError:
            return False
        return isinstance(value, dict) and _record_kind(value) is not None

    def load(
        self, path: Path, session_id: str | None = None, *, progress: Progress | None = None
    ) -> Transcript:
        """(A database or a storage folder is queried, not read through: `progress` hears nothing.)"""
        return load_opencode(path, session_id=session_id)

    def sessions(self, path: Path) -> list[OpencodeSession]:
        return list_sessions(path)
