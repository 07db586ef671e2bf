"""Choosing one session where a path holds several (`--session ID`).

A path can hold several sessions: an opencode database or JSON storage folder (each session a row
or a file inside it), a folder of Codex rollouts (`rollout-*.jsonl`, also the `YYYY/MM/DD` folders
of `~/.codex/sessions`), or a Claude Code project folder (`<session>.jsonl`; `agent-*.jsonl` files
are parts of a session, never sessions). `--session` names one by its full id or by a prefix only
one id has; without it, the newest is read (for opencode: the reader's choice, the most recently
updated top-level session). An id that names none, or several, is one line naming a few that
exist.

Which file of a folder is a session is told by content (the readers' `sniff`, on the file's
head), never by name alone; a session file's id is the one it records (Claude Code: the first
`sessionId`; Codex: `session_meta`'s `id`), else the id in its name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import orjson
from msgspec import Struct

from .base import LoaderError, short

MAX_LISTED = 5
"""An error line names at most this many of the ids there are."""
HEAD_BYTES = 64 * 1024
"""How much of each file of a folder is read to tell whether it is a session, and its id."""
CODEX_DAY_DEPTH = 3
"""`~/.codex/sessions/YYYY/MM/DD/`: rollouts are looked for this many all-digit folders down."""

_SESSION_ID = re.compile(rb'"sessionId":\s*"([^"\\]{1,200})"')
_META_ID = re.compile(rb'"type":\s*"session_meta"\s*,\s*"payload":\s*\{\s*"id":\s*"([^"\\]{1,200})"')
_UUID_TAIL = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$")


class Choice(Struct, frozen=True):
    """What to read for a path and a `--session` (or none)."""

    path: Path
    """The file to read (opencode: the database or storage the session is in)."""
    format: str | None
    """The reader's format, where choosing told it (None: detect it)."""
    session_id: str | None
    """The session to read inside `path` (opencode); None: `path` is the session, or the newest."""
    sessions: int
    """How many sessions the path given holds."""
    named: bool
    """Named by `--session` (else the newest was taken)."""


class FolderSession(Struct, frozen=True):
    """A session file of a folder of Codex or Claude Code sessions."""

    id: str
    path: Path
    format: str
    mtime: float


def _few(ids: Sequence[str]) -> str:
    shown = ", ".join(short(i, 60) for i in ids[:MAX_LISTED])
    more = len(ids) - MAX_LISTED
    return shown + (f" and {more:,} more" if more > 0 else "")


def match_session(ids: Sequence[str], wanted: str, where: str) -> str:
    """The id among `ids` (newest first) that `wanted` names: itself, or the only id it begins.

    Raises LoaderError (one line, naming up to MAX_LISTED ids there are) when it names none or several.
    """
    if not wanted.strip():
        raise LoaderError(f"an empty session id names no session of {where}")
    if wanted in ids:
        return wanted
    hits = [i for i in ids if i.startswith(wanted)]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise LoaderError(
            f"session {short(wanted)!r} is ambiguous in {where}: {len(hits):,} sessions begin with it: {_few(hits)}"
        )
    if not ids:
        raise LoaderError(f"no session {short(wanted)!r} in {where}: it holds no session")
    n = len(ids)
    raise LoaderError(
        f"no session {short(wanted)!r} in {where}; it holds {n:,} session{'' if n == 1 else 's'}: {_few(ids)}"
    )


# -- folders of session files ---------------------------------------------------------------------
def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError:
        return b""


def _id_in(head: bytes, pattern: re.Pattern[bytes]) -> str | None:
    m = pattern.search(head)
    if m is None:
        return None
    text = m.group(1).decode("utf-8", "replace")
    return text if text.strip() else None


def _codex_id(head: bytes) -> str | None:
    """The id `session_meta` records (as the Codex reader reads it), from the head's first lines."""
    for raw in head.split(b"\n", 20)[:20]:
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue  # (a torn line: a session_meta longer than the head)
        if isinstance(rec, dict) and rec.get("type") == "session_meta":
            payload = rec.get("payload")
            sid = payload.get("id", payload.get("session_id")) if isinstance(payload, dict) else None
            return sid if isinstance(sid, str) and sid.strip() else None
    return _id_in(head, _META_ID)


def _candidates(folder: Path) -> list[Path]:
    """`*.jsonl` files of `folder` (not `agent-*`), and `rollout-*.jsonl` in its `YYYY/MM/DD` folders."""
    found: list[Path] = []
    try:
        found.extend(p for p in folder.glob("*.jsonl") if not p.name.startswith("agent-") and p.is_file())
        level = [folder]
        for _ in range(CODEX_DAY_DEPTH):
            level = [d for f in level for d in f.iterdir() if d.name.isdigit() and d.is_dir()]
            found.extend(p for d in level for p in d.glob("rollout-*.jsonl") if p.is_file())
    except OSError:
        pass
    return sorted(set(found))


def folder_sessions(folder: Path) -> list[FolderSession]:
    """The Codex and Claude Code sessions a folder holds, newest first (by modification time)."""
    from .claude_code import ClaudeCodeFormat
    from .codex import CodexFormat

    claude, codex = ClaudeCodeFormat(), CodexFormat()
    out: list[FolderSession] = []
    for path in _candidates(folder):
        head = _head(path)
        if not head:
            continue
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if claude.sniff(path, head):
            sid = _id_in(head, _SESSION_ID) or path.stem
            out.append(FolderSession(id=sid, path=path, format=claude.format, mtime=mtime))
        elif codex.sniff(path, head):
            uuid = _UUID_TAIL.search(path.stem)
            sid = _codex_id(head) or (uuid.group(1) if uuid else path.stem)
            out.append(FolderSession(id=sid, path=path, format=codex.format, mtime=mtime))
    out.sort(key=lambda s: (s.mtime, s.path.name), reverse=True)
    return out


def pick_in_folder(folder: Path, session: str | None) -> Choice | None:
    """The session file of `folder` that `session` names (None: the newest); None when the folder
    holds no Codex or Claude Code session."""
    found = folder_sessions(folder)
    if not found:
        return None
    if session is None:
        chosen = found[0]
    else:
        ids = [s.id for s in found]
        duplicated = {i for i in ids if ids.count(i) > 1}
        wanted = match_session(list(dict.fromkeys(ids)), session, str(folder))
        if wanted in duplicated:
            files = ", ".join(s.path.name for s in found if s.id == wanted)
            raise LoaderError(f"session {short(wanted)!r} is in several files of {folder}: {files}; open one")
        chosen = next(s for s in found if s.id == wanted)
    return Choice(
        path=chosen.path,
        format=chosen.format,
        session_id=None,
        sessions=len(found),
        named=session is not None,
    )
