"""What every reader shares: incremental line splitting, safe JSON decoding and the reader protocol."""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from io import FileIO
from pathlib import Path
from typing import Any, BinaryIO, Protocol, Self, SupportsIndex

import orjson

from inspector.model import LoadIssue, Message, ToolCallBlock, ToolResultBlock, Transcript

MAX_LINE_BYTES = 64 * 1024 * 1024
"""A line longer than this is reported as a load issue and skipped, never decoded (nor held whole)."""

MAX_DEPTH = 100
"""A record nested deeper than this is a load issue, not loaded. Nothing a harness writes comes
close (a Claude Code tool call's arguments sit about 6 levels down); below it, everything
downstream (JSON encoders, reprs, the app) can recurse safely. orjson itself
refuses more than 1,024 levels."""

MAX_TOKENS = 1_000_000_000
"""A token count or context window above this is absurd (no model has a billion-token window):
it is a load issue and counts as nothing, so one bad number cannot swamp every figure."""


class LoaderError(Exception):
    """A problem a user caused (missing path, not a transcript): one clear line, no traceback."""


MAX_LOAD_ISSUES = 100
"""How many load issues a load keeps (the first ones met); the others are only counted. A file
of a million junk lines is a million issues: kept whole they took 700 MB, and no one reads them."""


class LoadIssues(list[LoadIssue]):
    """The load issues of one load, bounded: the first `limit` are kept, `total` counts them all.

    Every reader collects its issues in one (a plain list's `append`, `extend`, `+` and `+=` work
    on it, and keep the bound and the count), so a file of junk costs a bounded sample of issues
    however long it is. `Transcript.load_issues` is one; `issue_total` reads its count.
    """

    __slots__ = ("limit", "total")

    def __init__(self, issues: Iterable[LoadIssue] = (), *, limit: int = MAX_LOAD_ISSUES) -> None:
        super().__init__()
        self.limit = limit
        self.total = 0
        self.extend(issues)

    @classmethod
    def joined(cls, *parts: Iterable[LoadIssue]) -> LoadIssues:
        """The issues of every part, in order (each part's own count included)."""
        out = cls()
        for part in parts:
            out.extend(part)
        return out

    @property
    def dropped(self) -> int:
        """How many issues were counted but not kept."""
        return self.total - len(self)

    def append(self, issue: LoadIssue, /) -> None:
        self.total += 1
        if len(self) < self.limit:
            super().append(issue)

    def extend(self, issues: Iterable[LoadIssue], /) -> None:
        if isinstance(issues, LoadIssues):
            room = max(0, self.limit - len(self))
            super().extend(issues[:room])
            self.total += issues.total
            return
        for issue in issues:
            self.append(issue)

    def insert(self, index: SupportsIndex, issue: LoadIssue, /) -> None:
        self.total += 1
        super().insert(index, issue)
        if len(self) > self.limit:
            super().pop()

    def __iadd__(self, issues: Iterable[LoadIssue], /) -> Self:  # type: ignore[override]
        self.extend(issues)
        return self

    def __add__(self, issues: list[LoadIssue], /) -> LoadIssues:  # type: ignore[override]
        return LoadIssues.joined(self, issues)

    def copy(self) -> LoadIssues:
        return LoadIssues(self, limit=self.limit)

    def after(self, earlier: LoadIssues) -> LoadIssues:
        """The issues added since this was a copy of `earlier` (`earlier` unchanged since): those
        of them kept, and their count."""
        out = LoadIssues(limit=self.limit)
        list.extend(out, self[len(earlier) :])
        out.total = self.total - earlier.total
        return out

    def __reduce__(self) -> Any:
        return (_rebuild_issues, (list(self), self.limit, self.total))


def _rebuild_issues(kept: list[LoadIssue], limit: int, total: int) -> LoadIssues:
    out = LoadIssues(kept, limit=max(limit, len(kept)))
    out.total = total
    return out


def issue_total(issues: Sequence[LoadIssue]) -> int:
    """How many load issues `issues` stands for: a `LoadIssues`' count, else its length."""
    return issues.total if isinstance(issues, LoadIssues) else len(issues)


class Overlong(bytes):
    """What `LineSplitter` yields, empty, for a line longer than its `max_line`: only its size is kept."""

    size: int

    def __new__(cls, size: int) -> Overlong:
        self = super().__new__(cls)
        self.size = size
        return self


VIEW_MIN = 256
"""Lines up to this many bytes are copied, not viewed (`LineSplitter.views`): a memoryview
object takes about 180 bytes of its own, so a chunk of short lines (a file of junk lines: 200,000
of 2 bytes took 70 MB at peak against 27 MB without them) costs more as views than as copies;
a session's lines average about 1,800 bytes."""


class LineSplitter:
    """Feeds bytes in, yields (1-based line number, complete line bytes); holds back a partial last line.

    Each byte is scanned once however the line is split into chunks, and a partial line is kept
    as the chunks it arrived in (joined once, when its newline comes), so a 50 MB line costs one
    copy. With `max_line`, a line growing past it is dropped as it arrives (memory stays bounded)
    and yielded as an empty `Overlong` carrying its size.
    """

    def __init__(self, max_line: int | None = None) -> None:
        self._parts: list[bytes] = []
        self._size = 0
        self._dropped = 0
        self.max_line = max_line
        self.lines_seen = 0

    def _hold(self, data: bytes) -> None:
        if self._dropped:
            self._dropped += len(data)
            return
        self._parts.append(data)
        self._size += len(data)
        if self.max_line is not None and self._size > self.max_line:
            self._dropped = self._size
            self._parts.clear()
            self._size = 0

    def _take_held(self, tail: bytes) -> bytes:
        if self._dropped:
            line: bytes = Overlong(self._dropped + len(tail))
        elif self.max_line is not None and self._size + len(tail) > self.max_line:
            line = Overlong(self._size + len(tail))
        else:
            self._parts.append(tail)
            line = b"".join(self._parts)
        self._parts.clear()
        self._size = 0
        self._dropped = 0
        return line

    def feed(self, data: bytes) -> Iterator[tuple[int, bytes]]:
        first, lines = self.split(data)
        return enumerate(lines, first)

    def split(self, data: bytes) -> tuple[int, list[bytes]]:
        """The lines `data` completes, all at once: (the first one's number, the lines)."""
        first = self.lines_seen + 1
        if not data:
            return first, []
        if type(data) is not bytes:
            data = bytes(data)  # held parts must not change under us
        lines = data.split(b"\n")
        tail = lines.pop()  # after the last newline: the start of a line still being written
        if lines:
            if self._parts or self._dropped:
                lines[0] = self._take_held(lines[0])
            limit = self.max_line
            if limit is not None and len(data) > limit:
                lines = [Overlong(len(x)) if len(x) > limit and type(x) is bytes else x for x in lines]
            self.lines_seen += len(lines)
        if tail:
            self._hold(tail)
        return first, lines

    def views(self, data: bytes) -> tuple[int, list[bytes | memoryview]]:
        """As `split`, but each line inside `data` longer than `VIEW_MIN` bytes is a view of it,
        not a copy (a decoder reads a view as it reads bytes); a shorter one, or one that began
        in an earlier chunk, is bytes, a line past `max_line` an `Overlong`, as `split` gives
        them."""
        first = self.lines_seen + 1
        if type(data) is not bytes:
            data = bytes(data)  # held parts must not change under us
        last = data.rfind(b"\n")
        if last < 0:
            if data:
                self._hold(data)
            return first, []
        out: list[bytes | memoryview] = []
        find = data.find
        pos = 0
        if self._parts or self._dropped:
            pos = find(b"\n") + 1
            out.append(self._take_held(data[: pos - 1]))
        view = memoryview(data)
        limit = self.max_line
        short = VIEW_MIN
        if limit is None or len(data) <= limit:
            while pos <= last:
                end = find(b"\n", pos)
                out.append(view[pos:end] if end - pos > short else data[pos:end])
                pos = end + 1
        else:
            while pos <= last:
                end = find(b"\n", pos)
                n = end - pos
                out.append(Overlong(n) if n > limit else view[pos:end] if n > short else data[pos:end])
                pos = end + 1
        self.lines_seen += len(out)
        if last + 1 < len(data):
            self._hold(data[last + 1 :])
        return first, out

    @property
    def pending(self) -> bytes:
        """The partial last line held back until its newline arrives (empty once it is dropped)."""
        return b"".join(self._parts)

    def flush(self) -> Iterator[tuple[int, bytes]]:
        """At end of file: the held-back partial line, if any (it may be a torn write)."""
        if self._parts or self._dropped:
            self.lines_seen += 1
            yield self.lines_seen, self._take_held(b"")


class NotRegularFileError(OSError):
    """A path that is not a regular file (a FIFO, a device, a socket, a folder) was to be read."""


_OPEN_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
)


def regular_fd(path: str | os.PathLike[str]) -> tuple[int, os.stat_result]:
    """A descriptor of `path` opened for reading, with its `fstat`, if it is a regular file (a
    symlink is followed to what it names); else `NotRegularFileError` (an OSError).

    The open never blocks (it is non-blocking: a FIFO would wait for a writer, and reads of the
    descriptor never wait either) and the check is made on the opened descriptor, so the file
    cannot be swapped for a FIFO or a device (/dev/zero never ends) between the two."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(errno.EINVAL, "not a regular file", os.fspath(path))
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """`path` opened for reading (binary, buffered), if it is a regular file (`regular_fd`).

    A regular file whose size is 0 is not read at all (an empty stream is returned): on a real
    file system it is empty, while a pseudo-file that says 0 may block or never end (/proc/kmsg
    waits for kernel messages, and reading it takes them from syslog)."""
    fd, st = regular_fd(path)
    if st.st_size == 0:
        os.close(fd)
        return io.BytesIO()
    try:
        os.set_blocking(fd, True)
        raw = FileIO(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise
    return io.BufferedReader(raw)


def read_regular(path: str | os.PathLike[str]) -> bytes:
    """The whole content of the regular file `path` (`open_regular`: never a FIFO or a device)."""
    with open_regular(path) as fh:
        return fh.read()


def _too_deep(value: dict[str, Any] | list[Any], limit: int) -> bool:
    """Whether containers nest more than `limit` levels in `value` (iterative: no recursion)."""
    level: list[dict[str, Any] | list[Any]] = [value]
    depth = 1
    while level:
        if depth > limit:
            return True
        nxt: list[dict[str, Any] | list[Any]] = []
        for v in level:
            nxt.extend(x for x in (v.values() if isinstance(v, dict) else v) if isinstance(x, dict | list))
        level = nxt
        depth += 1
    return False


WALK_ABOVE = 1 << 20
"""Lines longer than this are checked for depth by walking their containers (a big line is mostly
strings, so that is quick); shorter ones are walked only if they hold enough brackets to be deep."""


def too_deep(value: Any, raw: bytes | None = None, limit: int = MAX_DEPTH) -> bool:
    """Whether a decoded JSON value nests deeper than `limit`. With the `raw` bytes it came from,
    a short value that cannot be that deep (fewer opening brackets than `limit`) is not walked."""
    if not isinstance(value, dict | list):
        return False
    if raw is not None and len(raw) <= WALK_ABOVE and raw.count(b"{") + raw.count(b"[") <= limit:
        return False
    return _too_deep(value, limit)


def too_deep_reason(limit: int = MAX_DEPTH) -> str:
    return f"nested more than {limit:,} levels deep; skipped"


def decode_json_line(
    raw: bytes, file: str, line: int, issues: list[LoadIssue], *, depth: bool = True
) -> dict[str, Any] | None:
    """Decode one JSONL line into a dict, or record why not and return None. Blank lines are skipped.
    With `depth` False the caller checks `too_deep` itself, on the records it keeps."""
    if isinstance(raw, Overlong):
        issues.append(
            LoadIssue(
                file=file,
                line=line,
                reason=f"line of {raw.size:,} bytes is over the {MAX_LINE_BYTES:,} limit; skipped",
            )
        )
        return None
    if not raw or raw.isspace():
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
        issues.append(LoadIssue(file=file, line=line, reason=json_error_reason(raw, exc)))
        return None
    if not isinstance(value, dict):
        issues.append(
            LoadIssue(file=file, line=line, reason=f"expected a JSON object, got {type(value).__name__}")
        )
        return None
    if depth and too_deep(value, raw):
        issues.append(LoadIssue(file=file, line=line, reason=too_deep_reason()))
        return None
    return value


def json_error_reason(raw: bytes, exc: orjson.JSONDecodeError) -> str:
    """Why `raw` is not JSON, in words: invalid UTF-8 (where), too deep, or the parser's message."""
    msg = exc.msg
    if "depth limit" in msg or "recursion" in msg.lower():
        return "nested more than 1,024 levels deep (the JSON parser's limit); skipped"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as uexc:
        return f"invalid UTF-8 at byte {uexc.start}"
    return f"invalid JSON: {msg}"


def describe(value: Any) -> str:
    """A short, safe description of an untrusted value for a load issue (never its whole content)."""
    if value is None or isinstance(value, bool | float):
        return repr(value)
    if isinstance(value, int):
        return f"{value:,}" if abs(value) < 10**40 else f"an integer of {value.bit_length():,} bits"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else f"a {type(value).__name__}"


def short(value: Any, width: int = 60) -> str:
    """An untrusted value as a short string for a count key or a load issue."""
    text = value if isinstance(value, str) else describe(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def token_count(raw: dict[str, Any], key: str, where: str, problems: list[str]) -> int:
    """`raw[key]` as a token count (a whole number from 0 to MAX_TOKENS); anything else counts 0
    and adds a problem. An absent key or null is 0 without a problem."""
    v = raw.get(key)
    if v is None:
        return 0
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_TOKENS:
        return v
    problems.append(f"`{where}.{key}` is {describe(v)}, not a token count; counted as 0")
    return 0


class Pairing:
    """Tool calls and results paired over a list of messages that grows at its end (a followed
    file), with `truncate` to take back the last ones (a response still being written)."""

    def __init__(self, file: str, *, orphans: bool = True) -> None:
        self.file = file
        self.orphans = orphans
        self._calls: list[list[str]] = []
        """Tool call ids of each message added, in order."""
        self._first: dict[str, tuple[int, Message]] = {}
        self._again: list[tuple[int, LoadIssue]] = []
        self._results: list[tuple[int, str, Message]] = []
        """Tool results whose call was not made before them: orphans unless it comes later."""

    def __len__(self) -> int:
        return len(self._calls)

    def _issue(self, m: Message, reason: str) -> LoadIssue:
        where = m.origin
        return LoadIssue(
            file=where.file if where is not None else self.file,
            line=where.line if where is not None else 0,
            reason=reason,
        )

    def add(self, m: Message) -> None:
        i = len(self._calls)
        calls: list[str] = []
        results: list[str] = []
        for b in m.blocks:
            if isinstance(b, ToolCallBlock):
                calls.append(b.id)
            elif isinstance(b, ToolResultBlock):
                results.append(b.call_id)
        self._calls.append(calls)
        first_of = self._first
        for c in calls:
            first = first_of.setdefault(c, (i, m))[1]
            if first is not m:
                at = f" (first at line {first.origin.line})" if first.origin is not None else ""
                self._again.append((i, self._issue(m, f"tool call id {short(c)!r} made again{at}")))
        if self.orphans:
            # a result whose call is known stays paired: a call is only forgotten with its message,
            # and the results after it with it
            for call in results:
                if call not in first_of:
                    self._results.append((i, call, m))

    def truncate(self, n: int) -> None:
        """Forget the messages from position `n` on."""
        while len(self._calls) > n:
            i = len(self._calls) - 1
            for c in self._calls.pop():
                if self._first.get(c, (-1,))[0] == i:
                    del self._first[c]
        while self._again and self._again[-1][0] >= n:
            self._again.pop()
        while self._results and self._results[-1][0] >= n:
            self._results.pop()

    def issues(self) -> LoadIssues:
        """A load issue for every tool call id made a second time (its results can no longer be
        told apart) and, with `orphans`, for every tool result whose call is nowhere (bounded:
        `LoadIssues`)."""
        out = LoadIssues(issue for _, issue in self._again)
        orphans = [(call, m) for _, call, m in self._results if call not in self._first]
        room = max(0, out.limit - len(out))
        out.extend(
            self._issue(m, f"tool result for call {short(call)!r}, which no message makes (an orphan)")
            for call, m in orphans[:room]
        )
        out.total += len(orphans) - min(room, len(orphans))
        return out


def pairing_issues(messages: Iterable[Message], file: str, *, orphans: bool = True) -> LoadIssues:
    """`Pairing.issues` of `messages`."""
    pairing = Pairing(file, orphans=orphans)
    for m in messages:
        pairing.add(m)
    return pairing.issues()


Progress = Callable[[int, int], None]
"""Called with (bytes read, bytes in all) while a transcript file is read."""

READ_CHUNK = 1 << 20
"""What an incremental reader is fed at a time when it reads a whole file."""


class _Fed(Protocol):
    def feed(self, data: bytes) -> None: ...

    def finish(self) -> None: ...


def feed_file(reader: _Fed, path: str | Path, progress: Progress | None = None) -> None:
    """Feed a whole file to an incremental reader, a chunk at a time, and finish it (a last line
    without its newline is read if whole); `progress` hears of every chunk."""
    with open_regular(path) as fh:
        size = fh.seek(0, os.SEEK_END) if progress is not None else 0
        fh.seek(0)
        done = 0
        while chunk := fh.read(READ_CHUNK):
            reader.feed(chunk)
            if progress is not None:
                done += len(chunk)
                progress(min(done, size), max(size, done))
    reader.finish()


class Reader(Protocol):
    """A harness format. `sniff` looks at content (never the name); `load` reads the whole session
    (telling `progress` how far it got, where it reads the file incrementally)."""

    format: str

    def sniff(self, path: Path, head: bytes) -> bool: ...

    def load(self, path: Path, *, progress: Progress | None = None) -> Transcript: ...
