"""A persistent cache of loaded transcripts, in the user's cache folder (issue 29).

Opening the same session again (a `report` after a `findings`, the app after a `report`) need not
read and build it again: the transcript a load made is written, as msgpack (msgspec, never
pickle: nothing in the cache can run code when read), to
`$XDG_CACHE_HOME/context-inspector/transcripts/` (`~/.cache/...` without it), never next to the
transcript. An entry is named by a hash of everything the transcript was made from:
- the file's real path, size, modification time, inode and device (any change, a rewrite, an
  append, a file moved into its place, makes another key, so a stale entry is never read);
- the files a reader reads beside it (a Claude Code session's subagent and compaction-call files:
  their names, sizes and times);
- this package's version and the source files of its readers and its model (a reader that reads
  differently after an update or an edit makes other keys).
The folder is bounded (`TRANSCRIPT_LIMIT`, its share of `LIMIT_BYTES`): after a write, the
entries used longest ago are removed until it fits. What the token passes computed from a
transcript is kept beside it, in a folder of its own (`inspector.tokens.stored`, `DERIVED_LIMIT`),
through the same entry functions (`read_entry`, `write_entry`) and named after the transcript's
key (`key_of`). `--no-cache` (every command that takes a PATH) neither reads nor writes it.

A growing file (a session an agent is still writing) is not served from an entry of its shorter
self: what a transcript lacks to be extended is the reader's tree of every line read (progress
lines included, most of a file), and keeping that would make an entry about as large as the work
it saves (decoding the lines again is half of a load; building the tree the other half). A live
session is followed by the incremental reader (`inspector.live`), which extends its transcript
as the file grows; the cache serves files that do not change between opens.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from msgspec.structs import asdict

from inspector import __version__
from inspector.model import (
    MediaBlock,
    Message,
    ReasoningBlock,
    Source,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Transcript,
)
from inspector.model.bulk import paused_gc
from inspector.model.identity import ByIdentity
from inspector.settings import cache_folder

LIMIT_BYTES = 512 * 1024 * 1024
"""The most the cache folders hold together; the entries used longest ago go first."""
DERIVED_LIMIT = LIMIT_BYTES // 16
"""The share of `LIMIT_BYTES` of what the token passes computed (`inspector.tokens.stored`: about
1 MB per 10,000 messages, where a transcript's entry is 20 MB)."""
TRANSCRIPT_LIMIT = LIMIT_BYTES - DERIVED_LIMIT
"""The transcripts' share of `LIMIT_BYTES`."""
MAGIC = b"ctxi-transcript-2\n"
"""Names the entries' format: bumped when `Transcript` gains a field (2: `harness_version`)."""
SUFFIX = ".msgpack"
_T = TypeVar("_T")
PACKAGE = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """`$XDG_CACHE_HOME/context-inspector/transcripts` (an absolute XDG_CACHE_HOME only, as the
    XDG spec says), else `~/.cache/context-inspector/transcripts`."""
    return cache_folder() / "transcripts"


# -- the wire form ---------------------------------------------------------------------------
# A media block is tagged by its own `type` field ("image" or "document"), the other blocks by
# their class's tag: a decoder needs every struct of a union tagged, so media blocks are read as
# two tagged stand-ins and turned back into `MediaBlock`s.


class _Image(msgspec.Struct, frozen=True, tag_field="type", tag="image"):
    media_type: str = ""
    size_bytes: int = 0


class _Document(msgspec.Struct, frozen=True, tag_field="type", tag="document"):
    media_type: str = ""
    size_bytes: int = 0


_WireBlock = TextBlock | ReasoningBlock | ToolCallBlock | ToolResultBlock | _Image | _Document


def _mirror(name: str, of: type[msgspec.Struct], types: dict[str, Any]) -> type[msgspec.Struct]:
    """A struct with `of`'s fields (names, defaults, order), the types in `types` put in place."""
    fields: list[tuple[str, Any, Any]] = []
    for f in msgspec.structs.fields(of):
        t = types.get(f.name, f.type)
        if f.default is not msgspec.NODEFAULT:
            fields.append((f.name, t, f.default))
        elif f.default_factory is not msgspec.NODEFAULT:
            fields.append((f.name, t, msgspec.field(default_factory=f.default_factory)))
        else:
            fields.append((f.name, t, msgspec.NODEFAULT))
    required = [(n, t) for n, t, d in fields if d is msgspec.NODEFAULT]
    optional = [(n, t, d) for n, t, d in fields if d is not msgspec.NODEFAULT]
    return msgspec.defstruct(name, [*required, *optional], kw_only=True)


_WireMessage = _mirror("_WireMessage", Message, {"blocks": tuple[_WireBlock, ...]})
_WireTranscript = _mirror("_WireTranscript", Transcript, {"messages": list[_WireMessage]})  # type: ignore[valid-type]
_MEDIA = frozenset({_Image, _Document})
_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(_WireTranscript)


def encode(transcript: Transcript) -> bytes:
    return _ENCODER.encode(transcript)


def _block(b: Any) -> Any:
    if type(b) is _Image:
        return MediaBlock(type="image", media_type=b.media_type, size_bytes=b.size_bytes)
    if type(b) is _Document:
        return MediaBlock(type="document", media_type=b.media_type, size_bytes=b.size_bytes)
    return b


def decode(data: bytes) -> Transcript:
    """The transcript `encode` wrote (msgspec.DecodeError where `data` is not one).

    Each wire message becomes a `Message` in as few Python steps as can be (its fields as a dict
    made in C, its media blocks looked for in C, its source made once per distinct source): on
    the 104 MB benchmark session (10,769 messages) they were half of the decode's CPU."""
    with paused_gc():
        wire: Any = _DECODER.decode(data)
        sources: dict[Source, Source] = {}
        messages: list[Message] = []
        append = messages.append
        for w in wire.messages:
            values = asdict(w)
            blocks = w.blocks
            if not _MEDIA.isdisjoint(map(type, blocks)):
                values["blocks"] = tuple(_block(b) for b in blocks)
            wsource = w.source
            source = sources.get(wsource)
            if source is None:
                source = sources[wsource] = Source.of(wsource.kind, wsource.name, wsource.priority)
            values["source"] = source
            append(Message(**values))
        values = asdict(wire)
        values["messages"] = messages
        return Transcript(**values)


# -- keys ------------------------------------------------------------------------------------
def _stat_key(st: os.stat_result) -> str:
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{st.st_dev}"


def source_key(names: Iterable[str]) -> str:
    """The package's version and the name, size and time of every source file of the package's
    folders and modules `names` (relative to the package: "formats", "harnesses.py"): an edit of
    one of them makes other keys."""
    parts = [__version__]
    for name in names:
        where = PACKAGE / name
        files = sorted(where.rglob("*.py")) if where.is_dir() else [where]  # (a reader may be a package)
        for p in files:
            with contextlib.suppress(OSError):
                parts.append(f"{p.relative_to(PACKAGE).as_posix()}:{_stat_key(p.stat())}")
    return "|".join(parts)


def _code_key() -> str:
    """`source_key` of the readers and the model: an edited reader makes other keys."""
    return source_key(("formats", "model"))


def _beside(path: Path) -> Iterable[Path]:
    """The files a reader may read beside a session file (an SQLite database's write-ahead log;
    Claude Code: subagents and compaction calls, in the session's own folder, a shared
    `subagents/`, or agent files beside it)."""
    yield path.with_name(path.name + "-wal")
    yield from sorted((path.parent / path.stem / "subagents").glob("*"))
    yield from sorted((path.parent / "subagents").glob("agent-*"))
    yield from sorted(path.parent.glob("agent-*"))


def key(path: Path, session: str | None = None) -> str | None:
    """The cache key of the transcript at `path`, a regular file (None: not a file, nothing to
    key, so not cached): a hash of its real path, then a hash of all it was made from (an entry of
    the same file in another state has the same first part)."""
    try:
        real = path.resolve(strict=True)
        st = real.stat()
    except (OSError, RuntimeError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    where = digest(str(real))[:16]
    parts = [_code_key(), str(real), _stat_key(st), session or ""]
    for p in _beside(real):
        if p == real:
            continue
        with contextlib.suppress(OSError):
            parts.append(f"{p.name}:{_stat_key(p.stat())}")
    return f"{where}-{digest(chr(10).join(parts))}"


def digest(text: str) -> str:
    """The hex SHA-256 of `text` (what keys are made of)."""
    import hashlib  # (with the cache on: --no-cache starts without OpenSSL)

    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


_KEYS: ByIdentity[Transcript, str] = ByIdentity()
"""Transcript -> the key it was read or written under."""


def key_of(transcript: Transcript) -> str | None:
    """The key `cached_load` read or wrote `transcript` under (None: not through the cache, a
    `--no-cache` open or a file changed while it was read): what was computed from it may be
    kept under a key made of it (`inspector.tokens.stored`)."""
    return _KEYS.get(transcript)


# -- the folder ------------------------------------------------------------------------------
def read_entry(k: str, folder: Path, magic: bytes, parse: Callable[[memoryview], _T]) -> _T | None:
    """`parse` of the bytes after `magic` of the entry of key `k` in `folder`, or None (absent, or
    not such an entry: then removed). A hit is marked used now (the last to be evicted)."""
    entry = folder / (k + SUFFIX)
    try:
        data = entry.read_bytes()
    except OSError:
        return None
    if not data.startswith(magic):
        _remove(entry)
        return None
    try:
        got = parse(memoryview(data)[len(magic) :])
    except (msgspec.DecodeError, msgspec.ValidationError, TypeError, ValueError):
        _remove(entry)
        return None
    with contextlib.suppress(OSError):
        os.utime(entry)  # used now: the last to be evicted
    return got


def read(k: str, folder: Path | None = None) -> Transcript | None:
    """The cached transcript of key `k`, or None (absent, or not a transcript: then removed)."""
    return read_entry(k, folder or cache_dir(), MAGIC, decode)  # type: ignore[arg-type]


def write(
    k: str, transcript: Transcript, folder: Path | None = None, limit: int = TRANSCRIPT_LIMIT
) -> Path | None:
    """Store `transcript` under key `k` (atomically: a reader never sees half an entry), then
    bring the folder back under `limit`. None where it cannot be written (a read-only home, a
    full disk): the cache is only ever a shortcut."""
    try:
        data = MAGIC + encode(transcript)
    except (UnicodeEncodeError, msgspec.EncodeError, OverflowError, TypeError):
        return None  # a path that is not UTF-8 (kept as surrogates): read again each time
    return write_entry(k, data, folder or cache_dir(), limit)


def write_entry(k: str, data: bytes, folder: Path, limit: int) -> Path | None:
    """`data` as the entry of key `k` in `folder` (see `write`): the entries of the same file in
    another state (the same first part of the key) are removed, then the folder brought back
    under `limit`."""
    if len(data) > limit:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        import tempfile

        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=SUFFIX)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            entry = folder / (k + SUFFIX)
            os.replace(tmp, entry)
        except BaseException:
            _remove(Path(tmp))
            raise
    except OSError:
        return None
    where = k.split("-", 1)[0]
    for stale in folder.glob(f"{where}-*{SUFFIX}"):  # the same file as it was before: never read again
        if stale != entry:
            _remove(stale)
    evict(folder, limit, keep=entry)
    return entry


def evict(folder: Path, limit: int = TRANSCRIPT_LIMIT, keep: Path | None = None) -> None:
    """Remove the entries used longest ago until the folder holds at most `limit` bytes."""
    entries: list[tuple[int, int, Path]] = []
    try:
        for p in folder.iterdir():
            if p.suffix != SUFFIX:
                continue
            with contextlib.suppress(OSError):
                st = p.stat()
                entries.append((st.st_mtime_ns, st.st_size, p))
    except OSError:
        return
    total = sum(size for _, size, _ in entries)
    for _, size, p in sorted(entries, key=lambda e: e[0]):
        if total <= limit:
            break
        if p == keep:
            continue
        _remove(p)
        total -= size


def _remove(p: Path) -> None:
    with contextlib.suppress(OSError):
        p.unlink()


def cached_load(
    path: str | os.PathLike[str],
    load: Callable[[], Transcript],
    *,
    session: str | None = None,
    enabled: bool = True,
    later: list[Callable[[], None]] | None = None,
) -> Transcript:
    """The transcript at `path`: from the cache where an entry has its key, else `load()`, then
    kept for the next open. `enabled` False: `load()`, nothing read or written.

    `later`: where a miss's write is put instead of done (the app's open: encoding and writing
    the 104 MB chained session's entry took 0.09-0.17 s of CPU before its first frame; the command
    line runs it once the app has closed). The entry is named by the file as it was read, so a
    write made later is of that state, never of a file changed since."""
    if not enabled:
        return load()
    p = Path(path)
    k = key(p, session)
    if k is None:
        return load()
    hit = read(k)
    if hit is not None:
        _KEYS.set(hit, k)
        return hit
    transcript = load()
    if key(p, session) == k:  # unchanged while it was read: the entry is what the file holds
        _KEYS.set(transcript, k)
        if later is None:
            write(k, transcript)
        else:

            def write_it() -> None:
                write(k, transcript)

            later.append(write_it)
    return transcript
