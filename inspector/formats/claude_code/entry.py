"""The public entry: read a whole file (JSONL or a JSON array of records) and detect the format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from inspector.model import LoadIssue, Transcript

from ..base import LoaderError, Progress, decode_json_line, feed_file
from ..json_array import first_elements, is_array
from .reader import ClaudeCodeReader
from .records import FORMAT, KNOWN_TYPES, SNIFF_KEYS


def load_claude_code(
    path: str | Path, *, with_subagents: bool = True, progress: Progress | None = None
) -> Transcript:
    """Read a whole Claude Code transcript file (`progress`: see `feed_file`)."""
    reader = ClaudeCodeReader(path, with_subagents=with_subagents, follow=False)
    with Path(path).open("rb") as fh:
        head = fh.read(64)
    if is_array(head):
        feed_array(reader, Path(path))
    else:
        feed_file(reader, path, progress)
    return reader.transcript()


def _is_record(rec: Any) -> bool:
    """Whether a decoded value has a Claude Code record's envelope (a known `type`, a tree key)."""
    if not isinstance(rec, dict):
        return False
    rtype = rec.get("type")
    return isinstance(rtype, str) and rtype in KNOWN_TYPES and not SNIFF_KEYS.isdisjoint(rec)


def feed_array(reader: ClaudeCodeReader, path: Path) -> None:
    """Feed a JSON array of records (`json_array`) to the reader, one record a line: the line
    numbers its load issues name count records. An array that breaks off (a copy torn while it
    was written) gives the records before the break, and a load issue that says where."""
    data = path.read_bytes()
    records: list[Any]
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        records, stop = _array_prefix(data)
        reader.note(
            0,
            f"the JSON array breaks off at byte {stop:,} ({exc}); read the {len(records):,} records before it",
        )
    else:
        if not isinstance(value, list):
            raise LoaderError(f"{path} holds a JSON {type(value).__name__}, not an array of records")
        records = value
    batch: list[bytes] = []
    for rec in records:
        try:
            batch.append(orjson.dumps(rec))
        except (TypeError, orjson.JSONEncodeError):  # (too deep to encode again)
            batch.append(b"\x00")  # a line the reader reports as broken, at its own number
        if len(batch) >= 4096:
            reader.feed(b"\n".join(batch) + b"\n")
            batch.clear()
    if batch:
        reader.feed(b"\n".join(batch) + b"\n")
    reader.finish()


def _array_prefix(data: bytes) -> tuple[list[Any], int]:
    """The whole elements at the front of a broken JSON array, and the byte where it breaks."""
    text = data.decode("utf-8", errors="replace")
    decoder = json.JSONDecoder()
    out: list[Any] = []
    pos = text.find("[") + 1
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        try:
            value, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            return out, len(text[:pos].encode("utf-8", errors="replace"))
        out.append(value)


class ClaudeCodeFormat:
    """Detects Claude Code JSONL by its envelope: `type` plus uuid/parentUuid/sessionId keys."""

    format = FORMAT

    def sniff(self, path: Path, head: bytes) -> bool:
        if path.is_dir():
            return False
        if is_array(head):  # a JSON array of records (`json_array`): judged by its first elements
            return any(_is_record(e) for e in first_elements(head))
        for raw in head.split(b"\n")[:50]:
            issues: list[LoadIssue] = []
            rec = decode_json_line(raw, str(path), 0, issues)
            if rec is None:
                continue
            if _is_record(rec):
                return True
            if "payload" in rec or "role" in rec:
                return False
        return False

    def load(self, path: Path, *, progress: Progress | None = None) -> Transcript:
        return load_claude_code(path, progress=progress)
