"""Choose a reader from a file's content, never from its name."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from inspector.harnesses import HARNESSES, labels, resolve
from inspector.model import Transcript
from inspector.model.bulk import paused_gc

from .base import LoaderError, Progress, Reader, open_regular
from .choice import Choice, match_session, pick_in_folder

HEAD_BYTES = 256 * 1024


def _readers() -> Iterator[Reader]:
    """The readers of the harnesses (`inspector.harnesses`), most specific first; each module is
    imported when its turn comes (a Claude Code session, the usual case, never imports the others)."""
    for harness in HARNESSES.values():
        reader: Reader = resolve(harness.reader)()
        yield reader


def read_head(path: Path) -> bytes:
    """The first HEAD_BYTES of a regular file (`open_regular`: a file that says it holds 0 bytes,
    as /proc/kmsg does, is not read); b"" for a folder."""
    if path.is_dir():
        return b""
    with open_regular(path) as fh:
        return fh.read(HEAD_BYTES)


def detect(path: str | os.PathLike[str]) -> Reader:
    """The reader for `path`, or LoaderError naming what was wrong."""
    p = Path(path)
    if not p.exists():
        raise LoaderError(f"no such file or folder: {p}")
    if not os.access(p, os.R_OK):
        raise LoaderError(f"cannot read {p}: permission denied")
    if not (p.is_file() or p.is_dir()):
        # a FIFO would block the read forever, a device could be endless
        raise LoaderError(f"{p} is not a regular file or a folder")
    try:
        head = read_head(p)
    except OSError as exc:
        raise LoaderError(f"cannot read {p}: {exc.strerror or exc}") from None
    for reader in _readers():
        if reader.sniff(p, head):
            return reader
    if p.is_dir():
        raise LoaderError(f"{p} is a folder that holds no session this inspector can read")
    if not head.strip():
        raise LoaderError(f"{p} is empty")
    raise LoaderError(f"{p} is not a transcript this inspector can read ({labels()})")


def choose(path: str | os.PathLike[str], session: str | None = None) -> Choice:
    """What to read for `path` and `--session ID` (`session`; None: the newest): see `choice`.

    An opencode database or storage folder: the session's full id in it. A folder of Codex or
    Claude Code sessions: the session's file. Any other transcript is one session: `session` is
    kept, to be checked against the id it records once read (`check_named`). Raises LoaderError
    (one line) for a path that is no transcript, or a `session` that names none or several."""
    p = Path(path)
    try:
        reader = detect(p)
    except LoaderError:
        found = pick_in_folder(p, session) if p.is_dir() else None
        if found is None:
            raise
        return found
    if reader.format == "opencode":
        from .opencode import database_in, list_sessions

        p = (database_in(p) or p) if p.is_dir() else p  # (a folder holding a database: the database)
        try:
            ids = [s.id for s in list_sessions(p)]
        except LoaderError:  # one JSON record: the store it sits in is found when it is read
            return Choice(
                path=p, format=reader.format, session_id=session, sessions=1, named=session is not None
            )
        sid = match_session(ids, session, f"opencode {p}") if session is not None else None
        return Choice(path=p, format=reader.format, session_id=sid, sessions=len(ids), named=sid is not None)
    return Choice(path=p, format=reader.format, session_id=session, sessions=1, named=session is not None)


def check_named(transcript: Transcript, session: str | None, path: str | os.PathLike[str]) -> None:
    """Raises LoaderError when `session` names a session other than the one `transcript` is (a
    file that is one session: its recorded id, or a prefix of it, names it)."""
    if session is None or transcript.sessions_in_source is not None:
        return
    if not transcript.session_id:
        raise LoaderError(
            f"{path} is one session that records no id: there is no session to choose with --session"
        )
    match_session([transcript.session_id], session, str(path))


def load(
    path: str | os.PathLike[str], *, progress: Progress | None = None, session: str | None = None
) -> Transcript:
    """Load a transcript of any supported harness; `progress` hears (bytes read, bytes in all)
    after every chunk where the format is read incrementally (Claude Code, Codex).

    `session` names one session where the path holds several (`--session ID`: an id or a prefix
    only it has); without it, the newest. A transcript read from a database or folder of several
    sessions says how many it holds (`sessions_in_source`) and whether it was named."""
    p = Path(path)
    if session is None and not p.is_dir():
        reader = detect(p)  # (one file, the usual case: nothing more to choose)
        chosen: Choice | None = None
        target = p
    else:
        chosen = choose(p, session)
        target = chosen.path
        reader = detect(target)
    # no cyclic garbage collection while loading: a reader makes a million objects and frees few
    with paused_gc():
        try:
            if chosen is not None and chosen.format == "opencode":
                from .opencode import load_opencode

                transcript = load_opencode(target, session_id=chosen.session_id)
            else:
                transcript = reader.load(target, progress=progress)
        except OSError as exc:
            raise LoaderError(f"cannot read {target}: {exc.strerror or exc}") from None
    if chosen is not None and chosen.path != p:  # a file of a folder of sessions
        transcript.sessions_in_source = chosen.sessions
        transcript.session_named = chosen.named
    check_named(transcript, session, p)
    return transcript
