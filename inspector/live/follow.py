"""Following a transcript file that a running agent is still writing.

How it works (docs/DESIGN.md §4, §7 "live", §8; docs/notes/textual.md §5):
- The follower keeps its own byte offset and feeds the bytes appended since then, in chunks, to an
  incremental reader (anything with `feed(bytes)` and `transcript()`); the reader holds back a
  partial last line until its newline arrives.
- At every poll it opens the file and checks, on the opened descriptor, device+inode, size and the
  last bytes it read before the offset. A new inode (replaced, e.g. write-new-then-rename), a size
  below the offset (truncated) or different bytes before the offset (rewritten in place) make it
  start over from byte 0 with a FRESH reader, never mixing old and new, and report a reset.
- A deleted file keeps what was read (`missing` is reported); when it comes back it is a reset.
  A file replaced by what is not a regular file (a FIFO, a link to /dev/zero) is missing too:
  only regular files are opened (`regular_fd`: a non-blocking open, checked on the descriptor),
  and a poll reads no further than the size the opened file had, so nothing blocks or never ends.
- Waiting is done by watchfiles on the PARENT folder, not the file (a watch on the file itself dies
  when the file is replaced), filtered to the file and to `<stem>/subagents/`, where new subagent
  transcripts are reported. Watchfiles blocks on inotify/FSEvents/ReadDirectoryChanges; nothing
  here sleeps in a loop. `force_polling=True` is the fallback for file systems without events.
- Formats whose reader cannot be fed bytes (SQLite, whole-JSON snapshots) are followed in
  whole-file mode: any change of the file or its side files (`-wal`, `.journal`) is a reset, and
  the reader reloads the file.
- Read-only: files are opened for reading only; nothing is ever written next to a transcript.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from io import FileIO
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from inspector.formats.base import NotRegularFileError, regular_fd
from inspector.harnesses import HARNESSES, of_format, resolve
from inspector.model import Transcript

if TYPE_CHECKING:
    from watchfiles import Change

CHUNK_BYTES = 1 << 20
"""Appended bytes are read and fed in chunks of this size."""
MAX_BYTES_PER_UPDATE = 64 << 20
"""The async/sync loops report progress at least this often while catching up on a big file."""
TAIL_CHECK_BYTES = 64
"""How many bytes before the offset are compared at each poll to notice an in-place rewrite."""
DEBOUNCE_MS = 50
"""watchfiles: the longest it groups changes while they keep coming before it reports them."""
STEP_MS = 25
"""watchfiles: a change is reported once no new change came for this long (latency ~ 1-2 steps)."""
SAFETY_POLL_MS = 5_000
"""A quiet watcher still checks the file this often (inode, size): a net for missed events."""
POLL_DELAY_MS = 100
"""With force_polling: how often watchfiles itself scans the folders."""


class TranscriptReader(Protocol):
    """What the follower feeds: bytes in (a partial last line held back), a transcript out."""

    def feed(self, data: bytes) -> None: ...

    def transcript(self) -> Transcript: ...


ReaderFactory = Callable[[Path], TranscriptReader]


@dataclass(frozen=True)
class FollowUpdate:
    """What one poll found."""

    bytes_read: int = 0
    """Bytes fed to the reader by this poll (whole-file mode: the file's size when it was reloaded)."""
    reset: bool = False
    """The file was truncated, replaced or rewritten: the reader was replaced by a fresh one and the
    file re-read from byte 0. Anything derived from the old transcript must be dropped."""
    reset_reason: str | None = None
    """"truncated", "replaced", "rewritten", "reappeared" or "changed" (whole-file mode)."""
    new_subagent_files: tuple[Path, ...] = ()
    """Subagent transcripts (`<stem>/subagents/agent-*.jsonl`) that appeared since the last poll."""
    new_compaction_files: tuple[Path, ...] = ()
    """Compaction calls (`agent-acompact-*.jsonl`) that appeared since the last poll: a compaction ran."""
    missing: bool = False
    """The file is gone; what was read so far is kept."""
    more: bool = False
    """The poll stopped at its byte cap: more is waiting (poll again at once)."""
    offset: int = 0
    """The follower's offset after this poll."""

    @property
    def changed(self) -> bool:
        """Whether the transcript (or the session's subagent list) may differ from before this poll."""
        return bool(self.bytes_read or self.reset or self.new_subagent_files or self.new_compaction_files)


class ReloadingReader:
    """For formats without an incremental reader: ignores the bytes, loads the whole file when asked.

    The follower creates a fresh one at every change, so each instance loads at most once.
    """

    def __init__(self, path: Path, load: Callable[[Path], Transcript] | None = None) -> None:
        self.path = Path(path)
        self._load = load
        self._cached: Transcript | None = None

    def feed(self, data: bytes) -> None:
        """Bytes are not needed: the file is loaded whole on `transcript()`."""

    def transcript(self) -> Transcript:
        if self._cached is None:
            if self._load is not None:
                self._cached = self._load(self.path)
            else:
                from inspector.formats import load

                self._cached = load(self.path)
        return self._cached


class _StopFlag:
    """A stop event for watchfiles (it only calls `is_set()`): ours, or the caller's."""

    def __init__(self, outer: asyncio.Event | threading.Event | None) -> None:
        self._outer = outer
        self._own = False

    def set(self) -> None:
        self._own = True

    def is_set(self) -> bool:
        return self._own or (self._outer is not None and self._outer.is_set())


_Ident = tuple[int, int]
_Signature = tuple[tuple[int, int, int, int] | None, ...]


class Follower:
    """Follows one growing transcript file; see the module docstring.

    `poll_once()` is the whole synchronous core (no watcher needed: tests drive it directly);
    `updates()` (asyncio) and `iter_updates()` (threads) call it whenever watchfiles reports a change.
    Calls are serialized by a lock, so `transcript()` may be called from another thread.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        make_reader: ReaderFactory,
        *,
        chunk_size: int = CHUNK_BYTES,
        whole_file: bool = False,
        sidecars: Sequence[str | os.PathLike[str]] = (),
        watch_subagents: bool = True,
    ) -> None:
        self.path = Path(os.path.abspath(path))
        self.make_reader = make_reader
        self.chunk_size = max(1, chunk_size)
        self.whole_file = whole_file
        self.sidecars = tuple(Path(os.path.abspath(p)) for p in sidecars)
        self.watch_subagents = watch_subagents
        self._real = Path(os.path.realpath(self.path))
        self._lock = threading.RLock()
        self._reader: TranscriptReader = make_reader(self.path)
        self._offset = 0
        self._tail = b""
        self._ident: _Ident | None = None
        self._signature: _Signature | None = None
        self._missing = False
        self._reported_missing = False
        self._known_agents: set[str] = set()
        self._agents_baseline = False

    # -- state --------------------------------------------------------------------------------
    @property
    def offset(self) -> int:
        """Bytes of the current file fed to the reader so far (a held-back partial line included)."""
        return self._offset

    @property
    def reader(self) -> TranscriptReader:
        """The current reader (a fresh one after every reset)."""
        return self._reader

    @property
    def missing(self) -> bool:
        return self._missing

    def transcript(self) -> Transcript:
        """The reader's transcript of everything read so far (a partial last line is not in it)."""
        with self._lock:
            return self._reader.transcript()

    @property
    def subagent_dir(self) -> Path:
        """Where this session's subagent transcripts appear (Claude Code 2.1 layout)."""
        return self._real.parent / self._real.stem / "subagents"

    # -- the synchronous core -------------------------------------------------------------------
    def poll_once(self, max_bytes: int | None = None) -> FollowUpdate:
        """Read whatever is new right now; reset first if the file was truncated or replaced.

        `max_bytes` caps how much one call reads (the update then says `more`); None reads to the end.
        OSErrors other than "file not found" (e.g. permission denied) propagate.
        """
        with self._lock:
            agents, calls = self._scan_subagents()
            if self.whole_file:
                return self._poll_whole(agents, calls)
            try:
                fd, st = regular_fd(self.path)
            except (FileNotFoundError, NotRegularFileError):
                # gone, or replaced by what is not a regular file (a FIFO, a link to /dev/zero):
                # nothing is read of it, and what was read so far is kept
                self._missing = True
                return FollowUpdate(
                    new_subagent_files=agents,
                    new_compaction_files=calls,
                    missing=True,
                    offset=self._offset,
                )
            with FileIO(fd, "rb", closefd=True) as fh:  # (non-blocking: no read of it ever waits)
                ident = (st.st_dev, st.st_ino)
                reason: str | None = None
                if self._ident is not None and self._missing:
                    reason = "reappeared"  # whatever its inode: file systems reuse inode numbers
                elif self._ident is not None and ident != self._ident:
                    reason = "replaced"
                elif st.st_size < self._offset:
                    reason = "truncated"
                elif self._tail and not self._tail_matches(fh):
                    reason = "rewritten"
                if reason is not None:
                    self._start_over()
                self._ident = ident
                self._missing = False
                read, more = self._read_from(fh, st.st_size, max_bytes)
            return FollowUpdate(
                bytes_read=read,
                reset=reason is not None,
                reset_reason=reason,
                new_subagent_files=agents,
                new_compaction_files=calls,
                more=more,
                offset=self._offset,
            )

    def _start_over(self) -> None:
        self._reader = self.make_reader(self.path)
        self._offset = 0
        self._tail = b""

    def _tail_matches(self, fh: FileIO) -> bool:
        n = len(self._tail)
        fh.seek(self._offset - n)
        return fh.read(n) == self._tail

    def _read_from(self, fh: FileIO, size: int, max_bytes: int | None) -> tuple[int, bool]:
        """Feed the bytes from the offset up to `size` (the file's size when it was opened: what
        is appended after is read at the next poll, and a pseudo-file that says 0 is never read)."""
        fh.seek(self._offset)
        total = 0
        while max_bytes is None or total < max_bytes:
            want = self.chunk_size if max_bytes is None else min(self.chunk_size, max_bytes - total)
            want = min(want, size - self._offset)
            if want <= 0:
                break  # (more may have been appended since it was opened)
            data = fh.read(want)
            if not data:
                return total, False
            self._reader.feed(data)
            total += len(data)
            self._offset += len(data)
            self._tail = (self._tail + data)[-TAIL_CHECK_BYTES:]
        return total, os.fstat(fh.fileno()).st_size > self._offset

    def _poll_whole(self, agents: tuple[Path, ...], calls: tuple[Path, ...]) -> FollowUpdate:
        signature = tuple(_stat_signature(p) for p in (self.path, *self.sidecars))
        main = signature[0]
        self._missing = main is None
        if main is None or signature == self._signature:
            return FollowUpdate(
                new_subagent_files=agents,
                new_compaction_files=calls,
                missing=main is None,
                offset=self._offset,
            )
        reset = self._signature is not None
        self._signature = signature
        self._reader = self.make_reader(self.path)
        self._offset = main[2]
        return FollowUpdate(
            bytes_read=main[2],
            reset=reset,
            reset_reason="changed" if reset else None,
            new_subagent_files=agents,
            new_compaction_files=calls,
            offset=self._offset,
        )

    def _scan_subagents(self) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
        """`agent-*.jsonl` files new under `<stem>/subagents/` since the last poll (none at the first):
        subagents, and compaction calls (`agent-acompact-*`)."""
        if not self.watch_subagents:
            return (), ()
        folder = self.subagent_dir
        try:
            with os.scandir(folder) as entries:
                names = {e.name for e in entries if e.name.startswith("agent-") and e.name.endswith(".jsonl")}
        except OSError:
            names = set()
        fresh = sorted(names - self._known_agents)
        self._known_agents |= names
        if not self._agents_baseline:
            self._agents_baseline = True  # what is there at the first poll is part of the load
            return (), ()
        agents = tuple(folder / n for n in fresh if not n.startswith("agent-acompact"))
        calls = tuple(folder / n for n in fresh if n.startswith("agent-acompact"))
        return agents, calls

    # -- watching ------------------------------------------------------------------------------
    def watch_paths(self) -> list[Path]:
        """The folders to watch (non-recursively): the file's folder, and the subagent folders that exist."""
        paths = [self._real.parent]
        for side in self.sidecars:
            parent = Path(os.path.realpath(side)).parent
            if parent not in paths:
                paths.append(parent)
        if self.watch_subagents:
            stem_dir = self._real.parent / self._real.stem
            if stem_dir.is_dir():
                paths.append(stem_dir)
                if (stem_dir / "subagents").is_dir():
                    paths.append(stem_dir / "subagents")
        return paths

    def _filter(self) -> Callable[[Change, str], bool]:
        from watchfiles import Change

        names = {str(self._real), str(self.path)}
        names |= {str(p) for p in self.sidecars}
        names |= {os.path.realpath(p) for p in self.sidecars}
        stem_dir = str(self._real.parent / self._real.stem)
        sub_dir = os.path.join(stem_dir, "subagents")
        watch_sub = self.watch_subagents

        def accepts(change: Change, path: str) -> bool:
            if path in names:
                return True
            if not watch_sub:
                return False
            if path in (stem_dir, sub_dir):
                return True
            head, name = os.path.split(path)
            return (
                change == Change.added
                and head == sub_dir
                and name.startswith("agent-")
                and name.endswith(".jsonl")
            )

        return accepts

    async def updates(
        self,
        stop_event: asyncio.Event | None = None,
        *,
        debounce_ms: int = DEBOUNCE_MS,
        step_ms: int = STEP_MS,
        force_polling: bool = False,
        poll_delay_ms: int = POLL_DELAY_MS,
        safety_poll_ms: int = SAFETY_POLL_MS,
        max_bytes_per_update: int | None = MAX_BYTES_PER_UPDATE,
    ) -> AsyncIterator[FollowUpdate]:
        """Yield an update whenever the file changes, until `stop_event` is set or the loop is cancelled.

        The first update (if anything is there) is what the file holds beyond the offset when the
        watch starts, so a caller may `poll_once()` first for the initial load, then iterate. Only
        updates that changed something (or a change of the `missing` state) are yielded. Reading is
        done in a worker thread (`asyncio.to_thread`), so a large burst does not block the loop.
        Cancelling the consuming task stops the watcher within one step. A missing parent folder
        raises FileNotFoundError (there is nothing to watch).
        """
        from watchfiles import awatch

        self._reported_missing = self._missing
        while stop_event is None or not stop_event.is_set():
            paths = self.watch_paths()
            flag = _StopFlag(stop_event)
            gen = awatch(
                *paths,
                watch_filter=self._filter(),
                debounce=debounce_ms,
                step=step_ms,
                stop_event=cast(asyncio.Event, flag),
                # notify's own polling misses appends within the same second of mtime: when
                # polling, the follower also checks the file itself at every poll interval
                rust_timeout=poll_delay_ms if force_polling else safety_poll_ms,
                yield_on_timeout=True,
                force_polling=force_polling,
                poll_delay_ms=poll_delay_ms,
                recursive=False,
                ignore_permission_denied=True,
            )
            pending = asyncio.ensure_future(_next_changes(gen))
            try:
                # awatch installs its watches synchronously in its first step, before it waits;
                # one turn of the loop lets it do so, then the catch-up poll closes the startup race
                await asyncio.sleep(0)
                while True:
                    while True:
                        update = await asyncio.to_thread(self.poll_once, max_bytes_per_update)
                        if self._worth_reporting(update):
                            yield update
                        if not update.more:
                            break
                    if self.watch_paths() != paths:
                        break  # a subagent folder appeared (or went): watch again with the new set
                    if await pending is None:
                        return  # stopped
                    pending = asyncio.ensure_future(_next_changes(gen))
            finally:
                flag.set()  # the watcher thread notices within one step
                if not pending.done():
                    with contextlib.suppress(Exception, asyncio.CancelledError):
                        await pending
                elif not pending.cancelled():
                    pending.exception()  # retrieved: a restart or a stop does not need it
                await gen.aclose()

    def iter_updates(
        self,
        stop: threading.Event | None = None,
        *,
        debounce_ms: int = DEBOUNCE_MS,
        step_ms: int = STEP_MS,
        force_polling: bool = False,
        poll_delay_ms: int = POLL_DELAY_MS,
        safety_poll_ms: int = SAFETY_POLL_MS,
        max_bytes_per_update: int | None = MAX_BYTES_PER_UPDATE,
    ) -> Iterator[FollowUpdate]:
        """The same as `updates()`, blocking, for a thread; stops when `stop` is set.

        A change made in the instant between the catch-up poll and the watch being installed is
        seen at the next event or, at the latest, at the next safety poll (`safety_poll_ms`).
        """
        from watchfiles import watch

        self._reported_missing = self._missing
        while stop is None or not stop.is_set():
            paths = self.watch_paths()
            yield from self._drain(max_bytes_per_update)
            changes = watch(
                *paths,
                watch_filter=self._filter(),
                debounce=debounce_ms,
                step=step_ms,
                stop_event=stop,
                # see updates(): when polling, the follower checks the file at every poll interval
                rust_timeout=poll_delay_ms if force_polling else safety_poll_ms,
                yield_on_timeout=True,
                force_polling=force_polling,
                poll_delay_ms=poll_delay_ms,
                recursive=False,
                ignore_permission_denied=True,
            )
            try:
                for _batch in changes:
                    yield from self._drain(max_bytes_per_update)
                    if self.watch_paths() != paths:
                        break  # a subagent folder appeared (or went): watch again with the new set
                else:
                    return  # stopped
            finally:
                changes.close()

    def _drain(self, max_bytes: int | None) -> Iterator[FollowUpdate]:
        """Poll until nothing more is waiting; the updates worth reporting."""
        while True:
            update = self.poll_once(max_bytes)
            if self._worth_reporting(update):
                yield update
            if not update.more:
                return

    def _worth_reporting(self, update: FollowUpdate) -> bool:
        """A change, or the file going missing or coming back."""
        if update.changed or update.missing != self._reported_missing:
            self._reported_missing = update.missing
            return True
        return False


async def _next_changes(gen: AsyncIterator[set[tuple[Change, str]]]) -> set[tuple[Change, str]] | None:
    """The watcher's next batch of changes, or None when it stopped."""
    try:
        return await anext(gen)
    except StopAsyncIteration:
        return None


def _stat_signature(path: Path) -> tuple[int, int, int, int] | None:
    """What identifies this version of the file; None when it is missing or not a regular file."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None  # a FIFO or a device in its place is never read
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


# -- choosing a reader -------------------------------------------------------------------------
INCREMENTAL_FORMATS = frozenset(h.format for h in HARNESSES.values() if h.follow_reader is not None)
"""The formats whose harness has an incremental reader (`Harness.follow_reader`)."""


def factory_for_format(fmt: str) -> ReaderFactory:
    """The reader factory for a format name (`Reader.format`): its harness's incremental reader
    (`Harness.follow_reader`); formats without one reload."""
    harness = of_format(fmt)
    if harness is None or harness.follow_reader is None:
        return ReloadingReader
    factory: ReaderFactory = resolve(harness.follow_reader)
    return factory


def reader_factory_for(path: str | os.PathLike[str]) -> ReaderFactory:
    """The reader factory for the transcript at `path`, chosen by `detect(path).format`.

    Raises `LoaderError` (one clear line) when the file is missing, empty or not a transcript.
    """
    from inspector.formats import detect

    return factory_for_format(detect(path).format)


def _is_json_array(path: Path) -> bool:
    """Whether the file is one JSON array (`formats.json_array`), not JSON Lines."""
    from inspector.formats.json_array import is_array

    try:
        with path.open("rb") as fh:
            return is_array(fh.read(64))
    except OSError:
        return False


def follower_for(path: str | os.PathLike[str], *, chunk_size: int = CHUNK_BYTES) -> Follower:
    """A Follower set up for the transcript at `path`: incremental where the format allows it,
    whole-file (with the side files that change with it) otherwise."""
    from inspector.formats import detect

    p = Path(path)
    fmt = detect(p).format
    factory = factory_for_format(fmt)
    if fmt in INCREMENTAL_FORMATS and _is_json_array(p):
        factory = ReloadingReader  # one JSON array of records, written anew each time: read whole
    if fmt in INCREMENTAL_FORMATS and factory is not ReloadingReader:
        return Follower(p, factory, chunk_size=chunk_size)
    sidecars: list[Path] = []
    if p.suffix == ".db":
        sidecars.append(p.with_name(p.name + "-wal"))  # not -shm: readers touch it
    journal = p.with_name(p.name + ".journal")
    if p.suffix == ".json":
        sidecars.append(journal)
    return Follower(
        p, factory, chunk_size=chunk_size, whole_file=True, sidecars=sidecars, watch_subagents=False
    )
