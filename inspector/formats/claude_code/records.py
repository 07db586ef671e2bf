"""What one line of a Claude Code transcript becomes: the tree's node, the reader's state, and the
long way a line is read (orjson and checks in Python, with a load issue for what is wrong)."""

from __future__ import annotations

import json
from array import array
from collections import Counter
from typing import Any, Literal

from msgspec import Struct, field

from inspector.model import (
    Block,
    MediaBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Usage,
)

from ..base import MAX_TOKENS, LoadIssues, describe, short, token_count

FORMAT = "claude-code"
CONVERSATION_TYPES = frozenset({"user", "assistant"})
KNOWN_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "progress",
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "custom-title",
        "ai-title",
        "last-prompt",
        "mode",
        "permission-mode",
        "pr-link",
        "attachment",
        "content-replacement",
        "agent-name",
        "agent-setting",
        "bridge-session",
        "file-history-delta",
    }
)
SNIFF_KEYS = frozenset({"uuid", "parentUuid", "sessionId", "leafUuid", "messageId"})
TITLE_TYPES = ("summary", "custom-title", "ai-title")
BOUNDARY_SUBTYPES = ("compact_boundary", "microcompact_boundary")
"""(Tuples: a subtype may be any JSON value, a list included, so it is compared, never hashed.)"""


BOUNDARY = "compact_boundary"
SUMMARY_ROOT = "summary_root"
"""An old-style compaction (early 1.0.x): the summary line is a new root, with no boundary line."""
NEW_ROOT = "new_root"
"""A new root that is no summary: a fresh context (plan mode's "clear context and implement")."""


class _Node(Struct):
    """One line of the file that has a uuid: the tree's node, slimmed to what the ledger needs (a
    struct: most lines of a session make one)."""

    uuid: str
    parent: str | None
    type: str
    line: int
    order: int
    sidechain: bool = False
    record: dict[str, Any] | None = None
    """What the ledger reads of a conversation or boundary line's own fields (`KEPT`, without the
    message); None for progress and the like."""
    file: str | None = None
    """Set for a line recovered from another file (a compaction call's copy of hook output)."""
    blocks: tuple[Block, ...] = ()
    """A conversation line's blocks (tool results named by the calls read before them in the file:
    `_Acc.take` names them by the ledger's own calls)."""
    usage: Usage | None = None
    """An assistant line's usage."""
    rid: str | None = None
    """The message's id (on an assistant line: the response it is part of)."""
    model: str | None = None
    stop: str | None = None


class _State(Struct):
    nodes: dict[str, _Node] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    """The uuids of the nodes with a record (conversation and boundary lines), in file order."""
    issues: LoadIssues = field(default_factory=LoadIssues)
    skipped: Counter[str] = field(default_factory=Counter)
    title: str | None = None
    session_id: str | None = None
    versions: Counter[str] = field(default_factory=Counter)
    """The harness `version` the lines carry, counted (the transcript records the commonest)."""
    broken: array[int] = field(default_factory=lambda: array("q"))
    """Line numbers of the lines that did not decode (`ClaudeCodeReader._salvage`), packed: a file
    of junk holds a million of them."""


KEPT = (
    "type",
    "subtype",
    "timestamp",
    "isMeta",
    "isCompactSummary",
    "isApiErrorMessage",
    "agentId",
    "compactMetadata",
    "microcompactMetadata",
    "logicalParentUuid",
)
"""A conversation or boundary line's own fields the ledger reads (its message is read at once)."""


def _kept(rec: dict[str, Any]) -> dict[str, Any]:
    """The fields of `rec` the ledger reads later (`KEPT`)."""
    return {k: rec[k] for k in KEPT if k in rec}


def _tool_result_text(content: Any) -> tuple[str, int]:
    """The text of a tool_result's content and how many media items it held."""
    if isinstance(content, str):
        return content, 0
    if isinstance(content, list):
        parts: list[str] = []
        media = 0
        for item in content:
            if isinstance(item, dict):
                if item.get("type") == "text":
                    parts.append(str(item.get("text", "")))
                elif item.get("type") in ("image", "document"):
                    media += 1
                else:
                    parts.append(json.dumps(item, ensure_ascii=False, sort_keys=True))
            else:
                parts.append(str(item))
        return "\n".join(parts), media
    if content is None:
        return "", 0
    return json.dumps(content, ensure_ascii=False, sort_keys=True), 0


def _media(block: dict[str, Any]) -> MediaBlock:
    src = block.get("source")
    media_type = ""
    size = 0
    if isinstance(src, dict):
        media_type = str(src.get("media_type", ""))
        data = src.get("data")
        if isinstance(data, str):
            size = len(data) * 3 // 4
    kind: Literal["image", "document"] = "document" if block.get("type") == "document" else "image"
    return MediaBlock(type=kind, media_type=media_type, size_bytes=size)


def _read_message(n: _Node, msg: dict[str, Any], call_names: dict[str, str]) -> None:
    """A conversation line's message, read into its node (the long way)."""
    n.blocks = tuple(_blocks(msg.get("content"), call_names))
    n.usage = _usage(msg.get("usage")) if n.type == "assistant" else None
    rid, model, stop = msg.get("id"), msg.get("model"), msg.get("stop_reason")
    n.rid = rid if isinstance(rid, str) else None
    n.model = model if isinstance(model, str) else None
    n.stop = stop if isinstance(stop, str) else None


def _blocks(content: Any, call_names: dict[str, str]) -> list[Block]:
    if isinstance(content, str):
        return [TextBlock(text=content)]
    if not isinstance(content, list):
        return [] if content is None else [TextBlock(text=json.dumps(content, ensure_ascii=False))]
    out: list[Block] = []
    for b in content:
        if not isinstance(b, dict):
            out.append(TextBlock(text=str(b)))
            continue
        t = b.get("type")
        if t == "text":
            out.append(TextBlock(text=str(b.get("text", ""))))
        elif t == "thinking":
            sig = b.get("signature")
            out.append(
                ReasoningBlock(
                    text=str(b.get("thinking", "")),
                    signed=bool(sig),
                    signature_chars=len(sig) if isinstance(sig, str) else 0,
                )
            )
        elif t == "redacted_thinking":
            data = b.get("data")
            out.append(
                ReasoningBlock(
                    redacted=True, signed=True, signature_chars=len(data) if isinstance(data, str) else 0
                )
            )
        elif t == "tool_use":
            call_id = str(b.get("id", ""))
            name = str(b.get("name", ""))
            call_names[call_id] = name
            args = b.get("input")
            out.append(
                ToolCallBlock(id=call_id, name=name, arguments=args if isinstance(args, dict | str) else {})
            )
        elif t == "tool_result":
            call_id = str(b.get("tool_use_id", ""))
            text, media = _tool_result_text(b.get("content"))
            out.append(
                ToolResultBlock(
                    call_id=call_id,
                    tool_name=call_names.get(call_id),
                    content=text,
                    is_error=bool(b.get("is_error")),
                    media=media,
                )
            )
        elif t in ("image", "document"):
            out.append(_media(b))
        else:
            # server tools (server_tool_use, web_search_tool_result) and future block types: the
            # model sees them, so they stay, as text that says what they are.
            body = {k: v for k, v in b.items() if k != "type"}
            out.append(TextBlock(text=f"[{t}] {json.dumps(body, ensure_ascii=False, sort_keys=True)}"))
    return out


USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


def _usage(raw: Any, problems: list[str] | None = None) -> Usage | None:
    """`message.usage` as Usage; a count that is not a whole number from 0 to MAX_TOKENS is 0 (and a
    problem, when `problems` is given)."""
    if not isinstance(raw, dict):
        return None
    sink: list[str] = [] if problems is None else problems
    details = raw.get("output_tokens_details")
    counts = [token_count(raw, key, "message.usage", sink) for key in USAGE_KEYS]
    reasoning = (
        token_count(details, "thinking_tokens", "message.usage.output_tokens_details", sink)
        if isinstance(details, dict)
        else 0
    )
    return Usage(
        input=counts[0], cache_write=counts[1], cache_read=counts[2], output=counts[3], reasoning=reasoning
    )


def _problems(rec: dict[str, Any], is_boundary: bool) -> list[str]:
    """Mistyped fields of a conversation or boundary line, in words; the line still loads as well as
    it can (a bad parent link reads as a root, bad content as text, a bad usage as none)."""
    out: list[str] = []
    parent = rec.get("parentUuid")
    if parent is not None and not isinstance(parent, str):
        out.append(f"`parentUuid` is {describe(parent)}, not a string; read as a root")
    if is_boundary:
        for key in ("compactMetadata", "microcompactMetadata"):
            if key in rec and not isinstance(rec[key], dict):
                out.append(f"`{key}` is {describe(rec[key])}, not an object; ignored")
        return out
    msg = rec["message"]
    content = msg.get("content")
    if content is not None and not isinstance(content, str | list):
        out.append(f"`message.content` is {describe(content)}, not a string or a list; kept as text")
    elif isinstance(content, list):
        not_blocks = calls = results = 0
        for b in content:
            if not isinstance(b, dict):
                not_blocks += 1
            elif b.get("type") == "tool_use":
                calls += not (isinstance(b.get("id"), str) and isinstance(b.get("name"), str))
            elif b.get("type") == "tool_result":
                results += not isinstance(b.get("tool_use_id"), str)
        if not_blocks:
            out.append(f"`message.content` holds {not_blocks:,} item(s) that are not blocks; kept as text")
        if calls:
            out.append(f"{calls:,} tool_use block(s) without a string `id` and `name`")
        if results:
            out.append(f"{results:,} tool_result block(s) without a string `tool_use_id`")
    usage = msg.get("usage")
    if usage is not None and not isinstance(usage, dict):
        out.append(f"`message.usage` is {describe(usage)}, not an object; ignored")
    elif isinstance(usage, dict):
        _usage(usage, out)  # says which count is wrong
    return out


def _answers(n: _Node) -> list[str]:
    """The tool call ids a user line's tool results answer (empty if it holds anything else)."""
    blocks = n.blocks
    if not blocks or not all(isinstance(b, ToolResultBlock) for b in blocks):
        return []
    return [b.call_id for b in blocks if isinstance(b, ToolResultBlock)]


def _call_ids(n: _Node) -> list[str]:
    return [b.id for b in n.blocks if isinstance(b, ToolCallBlock)]


def _preserved_uuids(rec: dict[str, Any]) -> list[str]:
    """The uuids a compact_boundary's metadata names as preserved."""
    meta = rec.get("compactMetadata")
    kept = meta.get("preservedMessages") if isinstance(meta, dict) else None
    uuids = kept.get("uuids") if isinstance(kept, dict) else None
    return [u for u in uuids if isinstance(u, str)] if isinstance(uuids, list) else []


def _is_api_error(n: _Node) -> bool:
    return n.model == "<synthetic>" or (n.record is not None and bool(n.record.get("isApiErrorMessage")))


def _int(v: Any) -> int | None:
    """A recorded token figure (a whole number from 0 to MAX_TOKENS), or None."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_TOKENS else None


def _system_key(subtype: Any) -> str:
    """How a system line is counted: by its subtype (`system/informational`); early 1.0 hook
    lines have none (`system`)."""
    return "system" if subtype is None else f"system/{short(subtype)}"
