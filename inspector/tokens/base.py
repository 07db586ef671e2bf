"""The estimator protocol and the deterministic serialization every estimator sizes."""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Protocol, runtime_checkable

import orjson

from inspector.model import (
    MediaBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)

JSON_SCALARS = frozenset((str, int, bool, type(None)))
"""The exact types of the JSON scalars orjson writes as `json.dumps` does (a float may not be:
`1e-05` is `0.00001` to orjson; a subclass may not be either)."""


def _spaces(value: dict[str, Any] | list[Any]) -> int | None:
    """How many `", "` and `": "` `json.dumps` writes in `value` (a space each beyond the compact
    text), where `value` holds nothing but JSON scalars (`JSON_SCALARS`), lists and dicts, of exact
    types; None where it may not."""
    n = len(value)
    if type(value) is dict:
        spaces = n + n - 1 if n else 0
        items: Any = value.values()
    else:
        spaces = n - 1 if n else 0
        items = value
    for v in items:
        t = type(v)
        if t in JSON_SCALARS:
            continue
        if t is dict or t is list:
            inner = _spaces(v)
            if inner is not None:
                spaces += inner
                continue
        return None
    return spaces


class CompactJson(NamedTuple):
    """The size of a tool call's arguments written by `json.dumps(args, separators=(",", ":"),
    ensure_ascii=False)` (sizes only: the text is not kept)."""

    nbytes: int
    """Its length in UTF-8."""
    chars: int
    """Its length in characters."""
    escaped_breaks: int
    """How many `\\n` it holds (a line break within a string, as json escapes it)."""
    spaces: int
    """What `json.dumps`'s default separators (`", "`, `": "`) add to it: a space each."""
    escapes: int
    """How many `"` and `\\` it holds: what writing the text itself as a JSON string adds to it,
    a character each (it holds no control character to escape: json escaped them)."""


COMPACT_MEMO = 65_536
"""How many arguments' `compact_json` the process remembers (the harness estimate and the
calibration both size every tool call's arguments: each is written once)."""

_compact_memo: dict[int, tuple[dict[str, Any], CompactJson | None]] = {}
"""id(args) -> (args, its `compact_json`): the entry holds `args`, so its id is not reused while
the entry lives; emptied when full (`COMPACT_MEMO`)."""


def compact_json(args: dict[str, Any]) -> CompactJson | None:
    """`compact_json_of(args)`, remembered by the arguments' object (a transcript's arguments are
    never changed once read)."""
    memo = _compact_memo
    got = memo.get(id(args))
    if got is not None and got[0] is args:
        return got[1]
    out = compact_json_of(args)
    if len(memo) >= COMPACT_MEMO:
        memo.clear()
    memo[id(args)] = (args, out)
    return out


def compact_json_of(args: dict[str, Any]) -> CompactJson | None:
    """The size of `json.dumps(args, separators=(",", ":"), ensure_ascii=False)`, written by orjson
    (whose text it then is exactly, every string escaped the same way, in UTF-8); None where orjson's
    text may differ: `args` is not a dict of nothing but JSON scalars, lists and dicts of exact
    types, or orjson refuses it (an integer past 64 bits, a lone surrogate, nesting past its
    limit). The order of keys is the dict's (`sort_keys` changes no size)."""
    try:
        if type(args) is not dict:
            return None
        spaces = _spaces(args)
        if spaces is None:
            return None
        out = orjson.dumps(args)
    except (TypeError, RecursionError):  # TypeError: orjson.JSONEncodeError
        return None
    chars = len(out) if out.isascii() else len(out.decode("utf-8"))
    return CompactJson(len(out), chars, out.count(b"\\n"), spaces, out.count(b'"') + out.count(b"\\"))


MESSAGE_OVERHEAD = 64
"""Tokens a message costs beyond its text (role, framing), in the heuristic estimator."""

dumps_sorted = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode
"""`json.dumps(value, sort_keys=True, ensure_ascii=False)`, without building an encoder per call."""


def serialize(message: Message) -> str:
    """A deterministic text rendering of what the model is sent for `message`."""
    parts: list[str] = [message.role.value]
    for block in message.blocks:
        if isinstance(block, TextBlock | ReasoningBlock):
            parts.append(block.text)
        elif isinstance(block, ToolCallBlock):
            args = (
                block.arguments
                if isinstance(block.arguments, str)
                else dumps_sorted(block.arguments)
            )
            parts.append(f"{block.name} {args}")
        elif isinstance(block, ToolResultBlock):
            parts.append(block.content)
        elif isinstance(block, MediaBlock):
            parts.append(f"[{block.type} {block.media_type}]")
    return "\n".join(parts)


@runtime_checkable
class Estimator(Protocol):
    """Sizes text and messages in tokens. Pure: the same input always gives the same number."""

    name: str

    def text(self, text: str) -> int: ...

    def message(self, message: Message) -> int: ...
