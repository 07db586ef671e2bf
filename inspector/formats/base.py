"""What every reader shares: incremental line splitting and the reader protocol."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import orjson

from inspector.model import LoadIssue, Transcript

MAX_LINE_BYTES = 64 * 1024 * 1024
"""A line longer than this is reported as a load issue and skipped, never decoded."""


class LoaderError(Exception):
    """A problem a user caused (missing path, not a transcript): one clear line, no traceback."""


class LineSplitter:
    """Feeds bytes in, yields (1-based line number, complete line bytes); holds back a partial last line."""

    def __init__(self) -> None:
        self._pending = bytearray()
        self.lines_seen = 0

    def feed(self, data: bytes) -> Iterator[tuple[int, bytes]]:
        if not data:
            return
        self._pending += data
        start = 0
        buf = self._pending
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            self.lines_seen += 1
            yield self.lines_seen, bytes(buf[start:nl])
            start = nl + 1
        del buf[:start]

    @property
    def pending(self) -> bytes:
        """The partial last line held back until its newline arrives."""
        return bytes(self._pending)

    def flush(self) -> Iterator[tuple[int, bytes]]:
        """At end of file: the held-back partial line, if any (it may be a torn write)."""
        if self._pending:
            self.lines_seen += 1
            data = bytes(self._pending)
            self._pending.clear()
            yield self.lines_seen, data


def decode_json_line(raw: bytes, file: str, line: int, issues: list[LoadIssue]) -> dict[str, Any] | None:
    """Decode one JSONL line into a dict, or record why not and return None. Blank lines are skipped."""
    if not raw.strip():
        return None
    if len(raw) > MAX_LINE_BYTES:
        issues.append(
            LoadIssue(
                file=file,
                line=line,
                reason=f"line of {len(raw):,} bytes is over the {MAX_LINE_BYTES:,} limit; skipped",
            )
        )
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as uexc:
            reason = f"invalid UTF-8 at byte {uexc.start}"
        else:
            reason = f"invalid JSON: {exc.msg if hasattr(exc, 'msg') else exc}"
        issues.append(LoadIssue(file=file, line=line, reason=reason))
        return None
    if not isinstance(value, dict):
        issues.append(
            LoadIssue(file=file, line=line, reason=f"expected a JSON object, got {type(value).__name__}")
        )
        return None
    return value


class Reader(Protocol):
    """A harness format. `sniff` looks at content (never the name); `load` reads the whole session."""

    format: str

    def sniff(self, path: Path, head: bytes) -> bool: ...

    def load(self, path: Path) -> Transcript: ...
