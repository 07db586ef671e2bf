"""Choose a reader from a file's content, never from its name."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from inspector.model import Transcript
from inspector.model.bulk import paused_gc

from .base import LoaderError, Progress, Reader, open_regular

HEAD_BYTES = 256 * 1024


def _readers() -> Iterator[Reader]:
    """The readers, most specific first; each module is imported when its turn comes (a Claude
    Code session, the usual case, never imports the other four)."""
    from .claude_code import ClaudeCodeFormat

    yield ClaudeCodeFormat()
    from .codex import CodexFormat

    yield CodexFormat()
    from .opencode import OpencodeFormat

    yield OpencodeFormat()
    from .opencollab import OpencollabFormat

    yield OpencollabFormat()
    from .generic import GenericChatFormat

    yield GenericChatFormat()


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
    raise LoaderError(
        f"{p} is not a transcript this inspector can read (Claude Code, Codex, opencode, OpenCollab, chat JSON)"
    )


def load(path: str | os.PathLike[str], *, progress: Progress | None = None) -> Transcript:
    """Load a transcript of any supported harness; `progress` hears (bytes read, bytes in all)
    after every chunk where the format is read incrementally (Claude Code, Codex)."""
    p = Path(path)
    reader = detect(p)
    # no cyclic garbage collection while loading: a reader makes a million objects and frees few
    with paused_gc():
        try:
            return reader.load(p, progress=progress)
        except OSError as exc:
            raise LoaderError(f"cannot read {p}: {exc.strerror or exc}") from None
