"""The usual shape of a Claude Code line, decoded and checked in one pass by msgspec.

Most lines of a session have one of a few shapes: progress (hooks, tools, agents), a user or
assistant message whose content is text, thinking, tool calls and tool results, a file-history
snapshot. `decode_line` reads such a line straight into the structs below, checking every type
the ledger relies on as it decodes (in C), and skipping, without building it, everything the
ledger never reads (`data`, `snapshot`, `toolUseResult`, `cwd` and the like: most of a file's
bytes). A line of any other shape (a field of an unexpected type, an unknown block type, a
boundary, a title, invalid JSON) is not an error here: `decode_line` returns None and the
reader takes the line the long way (`orjson` and checks in Python, with a load issue for what is
wrong). The two ways make the same node of the same line: the structs accept only what the long
way reads without a complaint, and `blocks` below builds what its `_blocks` builds (a test reads
every corpus line both ways).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct, field

from inspector.model import (
    Block,
    MediaBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Usage,
)

from ..base import MAX_DEPTH, MAX_TOKENS, too_deep

Tokens = Annotated[int, Meta(ge=0, le=MAX_TOKENS)]
"""A token count as the long way accepts it without a complaint (`base.token_count`)."""


class _Text(Struct, tag="text"):
    text: str


class _Thinking(Struct, tag="thinking"):
    thinking: str = ""
    signature: str | None = None


class _Redacted(Struct, tag="redacted_thinking"):
    data: str | None = None


class _ToolUse(Struct, tag="tool_use"):
    id: str
    name: str
    input: dict[str, Any] | str = field(default_factory=dict)


class _Source(Struct):
    media_type: str = ""
    data: str | None = None


class _Image(Struct, tag="image"):
    source: _Source | None = None


class _Document(Struct, tag="document"):
    source: _Source | None = None


class _ResultImage(Struct, tag="image"):
    pass


class _ResultDocument(Struct, tag="document"):
    pass


class _ToolResult(Struct, tag="tool_result"):
    tool_use_id: str
    content: str | list[_Text | _ResultImage | _ResultDocument] | None = None
    is_error: bool | None = None


class _Details(Struct, frozen=True):
    thinking_tokens: Tokens | None = None


class _Usage(Struct, frozen=True):
    input_tokens: Tokens | None = None
    cache_creation_input_tokens: Tokens | None = None
    cache_read_input_tokens: Tokens | None = None
    output_tokens: Tokens | None = None
    output_tokens_details: _Details | None = None


class _Message(Struct):
    content: (
        str | list[_Text | _Thinking | _Redacted | _ToolUse | _ToolResult | _Image | _Document] | None
    ) = None
    usage: _Usage | None = None
    id: str | None = None
    model: str | None = None
    stop_reason: str | None = None


class Line(Struct, rename="camel"):
    """The fields of a line the ledger reads (by their names in the file: `parentUuid`, ...);
    every other field is skipped undecoded."""

    type: str
    uuid: str | None = None
    parent_uuid: str | None = None
    is_sidechain: bool | None = None
    session_id: str | None = None
    message: _Message | None = None
    subtype: Any = None
    timestamp: str | None = None
    is_meta: bool | None = None
    is_compact_summary: bool | None = None
    is_api_error_message: bool | None = None
    agent_id: str | None = None
    version: str | None = None


TypedMessage = _Message
decode = msgspec.json.Decoder(Line).decode
"""A line in the usual shape; raises `msgspec.DecodeError` (or RecursionError) for any other."""
INPUT_DEPTH = MAX_DEPTH - 4
"""A tool call's input nests this deep at most: the record, its message, the content list and the
block hold it (the long way checks the depth of the record it keeps, message included)."""


def decode_line(raw: bytes | memoryview) -> Line | None:
    """The line in the usual shape, or None (then read it the long way)."""
    try:
        return decode(raw)
    except (msgspec.DecodeError, RecursionError):  # ValidationError included: not the usual shape
        return None


def too_deep_input(message: _Message) -> bool:
    """Whether a tool call's input nests past what the long way accepts (the only part of a line in
    the usual shape that can nest without bound)."""
    content = message.content
    if type(content) is list:  # (the decoder makes exact types: compared, not `isinstance`)
        for b in content:
            if type(b) is _ToolUse and type(args := b.input) is dict:
                for v in args.values():
                    if type(v) is dict or type(v) is list:  # not flat: walked
                        if too_deep(args, limit=INPUT_DEPTH):
                            return True
                        break
    return False


def blocks(message: _Message, call_names: dict[str, str]) -> tuple[Block, ...]:
    """The message's blocks, as the long way's `_blocks` makes them; each tool call's name goes
    into `call_names` and each tool result takes its call's name from there."""
    content = message.content
    if content is None:
        return ()
    if isinstance(content, str):
        return (TextBlock(text=content),)
    out: list[Block] = []
    for b in content:  # (the decoder makes exact types: compared, not `isinstance`)
        if type(b) is _ToolResult:
            rc = b.content
            media = 0
            if rc is None:
                text = ""
            elif type(rc) is str:
                text = rc
            else:
                parts: list[str] = []
                for item in rc:
                    if type(item) is _Text:
                        parts.append(item.text)
                    else:
                        media += 1
                text = "\n".join(parts)
            out.append(
                ToolResultBlock(
                    call_id=b.tool_use_id,
                    tool_name=call_names.get(b.tool_use_id),
                    content=text,
                    is_error=bool(b.is_error),
                    media=media,
                )
            )
        elif type(b) is _Text:
            out.append(TextBlock(text=b.text))
        elif type(b) is _ToolUse:
            call_names[b.id] = b.name
            out.append(ToolCallBlock(id=b.id, name=b.name, arguments=b.input))
        elif type(b) is _Thinking:
            sig = b.signature
            out.append(
                ReasoningBlock(
                    text=b.thinking, signed=bool(sig), signature_chars=len(sig) if sig is not None else 0
                )
            )
        elif type(b) is _Redacted:
            data = b.data
            out.append(
                ReasoningBlock(
                    redacted=True, signed=True, signature_chars=len(data) if data is not None else 0
                )
            )
        else:
            assert isinstance(b, _Image | _Document)  # (the last of the union: for mypy)
            src = b.source
            out.append(
                MediaBlock(
                    type="document" if isinstance(b, _Document) else "image",
                    media_type=src.media_type if src is not None else "",
                    size_bytes=len(src.data) * 3 // 4 if src is not None and src.data is not None else 0,
                )
            )
    return tuple(out)


def usage(message: _Message) -> Usage | None:
    """The message's usage, as the long way's `_usage` reads it."""
    u = message.usage
    if u is None:
        return None
    details = u.output_tokens_details
    return Usage(
        input=u.input_tokens or 0,
        cache_write=u.cache_creation_input_tokens or 0,
        cache_read=u.cache_read_input_tokens or 0,
        output=u.output_tokens or 0,
        reasoning=(details.thinking_tokens or 0) if details is not None else 0,
    )
