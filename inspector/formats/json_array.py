"""Transcripts written as one JSON array of records instead of one record a line.

A Stop hook copied by many public repositories writes a Claude Code session as `logs/chat.json`:
the session's JSONL records as one (usually pretty-printed) JSON array. Detection must tell such a
file from a chat message array (`[{"role": ...}]`) by its elements, not by its first byte: this
module reads the first few elements of an array from a file's head, whole, without the rest.
"""

from __future__ import annotations

import json
from typing import Any

HEAD_ELEMENTS = 8
"""How many leading elements detection looks at."""


def is_array(head: bytes) -> bool:
    """Whether the bytes open a JSON array (after a byte order mark and white space)."""
    return head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"[")


def first_elements(head: bytes, count: int = HEAD_ELEMENTS) -> list[Any]:
    """The first `count` elements of the JSON array the bytes open, each decoded whole; fewer
    where the head ends (or breaks) sooner; [] when the bytes open no array."""
    text = head.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace").lstrip()
    if not text.startswith("["):
        return []
    decoder = json.JSONDecoder()
    out: list[Any] = []
    pos = 1
    end = len(text)
    while len(out) < count:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos >= end or text[pos] == "]":
            break
        try:
            value, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            break  # the head ends inside this element, or it is broken
        out.append(value)
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos < end and text[pos] == ",":
            pos += 1
        else:
            break
    return out
