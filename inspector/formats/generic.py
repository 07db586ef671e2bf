"""Generic chat transcripts: one JSON file holding a conversation in a provider's request shape.

Accepted shapes:
- an array of OpenAI-style chat messages: `role` (system, developer, user, assistant, tool,
  function), `content` as a string or a list of parts (text, image_url, ...), assistant
  `tool_calls` [{id, function: {name, arguments (a JSON string)}}], `tool` messages answering
  them by `tool_call_id` (and the older `function_call` / `function` role pair);
- a request body with a `messages` array: the Anthropic Messages API (`system` as a string or
  text blocks; content blocks text, image, document, tool_use, tool_result, thinking,
  redacted_thinking) or an OpenAI chat completion body; `model` is read from it.
Both message styles may be mixed; each message is read by what it holds.

Such a file records no usage: the transcript has one request, made with the whole ledger
(`usage` None), so the pipeline can be run on it. Message ids are `m1`, `m2`, ... in ledger
order, and `Origin.line` is that same 1-based record number (a top-level `system` counts as
the first record), as is the line of a load issue about a record.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import orjson

from inspector.model import (
    Block,
    LoadIssue,
    MediaBlock,
    Message,
    Origin,
    ReasoningBlock,
    Request,
    Role,
    Segment,
    Source,
    SourceKind,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Transcript,
)

from .base import (
    LoaderError,
    LoadIssues,
    Progress,
    describe,
    pairing_issues,
    read_regular,
    too_deep,
    too_deep_reason,
)
from .json_array import first_elements

FORMAT = "generic"
ROLES: dict[str, Role] = {
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "user": Role.USER,
    "human": Role.USER,
    "assistant": Role.ASSISTANT,
    "ai": Role.ASSISTANT,
    "model": Role.ASSISTANT,
    "tool": Role.TOOL,
    "function": Role.TOOL,
}
MAX_BYTES = 512 * 1024 * 1024
"""A chat JSON file is read whole; beyond this size it is refused with a clear error."""
_ARRAY_START = re.compile(rb"^\[\s*\{")
_ROLE_KEY = re.compile(rb'"role"\s*:\s*"(' + b"|".join(r.encode() for r in ROLES) + rb')"')


def _json_text(value: Any) -> str:
    """Compact JSON for showing a structured value as text (never fails on odd values)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def _arguments(raw: Any) -> dict[str, Any] | str:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
        return value if isinstance(value, dict) and not too_deep(value) else raw
    return {} if raw is None else _json_text(raw)


def _media(part: dict[str, Any]) -> MediaBlock:
    """An image or document part (OpenAI image_url / file, Anthropic image / document)."""
    t = part.get("type")
    media_type = ""
    size = 0
    src = part.get("source")
    if isinstance(src, dict):  # Anthropic {type: base64, media_type, data}
        media_type = str(src.get("media_type", ""))
        data = src.get("data")
        size = len(data) * 3 // 4 if isinstance(data, str) else 0
    url = part.get("image_url")
    if isinstance(url, dict):
        url = url.get("url")
    if isinstance(url, str) and url.startswith("data:"):
        head, _, data = url.partition(",")
        media_type = head[5:].split(";")[0]
        size = len(data) * 3 // 4
    kind: Literal["image", "document"] = "document" if t in ("document", "file", "input_file") else "image"
    return MediaBlock(type=kind, media_type=media_type, size_bytes=size)


def _result_text(content: Any) -> tuple[str, int]:
    """A tool result's content as text, and how many media items it held."""
    if isinstance(content, str):
        return content, 0
    if content is None:
        return "", 0
    if isinstance(content, list):
        texts: list[str] = []
        media = 0
        for b in _parts(content, {}):
            if isinstance(b, TextBlock):
                texts.append(b.text)
            elif isinstance(b, MediaBlock):
                media += 1
        return "\n".join(texts), media
    return _json_text(content), 0


def _parts(content: Any, call_names: dict[str, str]) -> list[Block]:
    """Content as blocks: a string, or a list of OpenAI parts / Anthropic blocks."""
    if isinstance(content, str):
        return [TextBlock(text=content)]
    if content is None:
        return []
    if not isinstance(content, list):
        return [TextBlock(text=_json_text(content))]
    out: list[Block] = []
    for part in content:
        if isinstance(part, str):
            out.append(TextBlock(text=part))
            continue
        if not isinstance(part, dict):
            out.append(TextBlock(text=_json_text(part)))
            continue
        t = part.get("type")
        if t in ("text", "input_text", "output_text"):
            out.append(TextBlock(text=str(part.get("text", ""))))
        elif t == "refusal":
            out.append(TextBlock(text=str(part.get("refusal", ""))))
        elif t in ("image_url", "image", "input_image", "document", "file", "input_file"):
            out.append(_media(part))
        elif t == "thinking":
            sig = part.get("signature")
            out.append(
                ReasoningBlock(
                    text=str(part.get("thinking", "")),
                    signed=isinstance(sig, str) and bool(sig),
                    signature_chars=len(sig) if isinstance(sig, str) else 0,
                )
            )
        elif t == "redacted_thinking":
            data = part.get("data")
            out.append(
                ReasoningBlock(
                    redacted=True, signed=True, signature_chars=len(data) if isinstance(data, str) else 0
                )
            )
        elif t == "tool_use":
            call_id = str(part.get("id", ""))
            name = str(part.get("name", ""))
            call_names[call_id] = name
            out.append(ToolCallBlock(id=call_id, name=name, arguments=_arguments(part.get("input"))))
        elif t == "tool_result":
            call_id = str(part.get("tool_use_id", ""))
            text, media = _result_text(part.get("content"))
            out.append(
                ToolResultBlock(
                    call_id=call_id,
                    tool_name=call_names.get(call_id),
                    content=text,
                    is_error=bool(part.get("is_error")),
                    media=media,
                )
            )
        else:
            body = {k: v for k, v in part.items() if k != "type"}
            out.append(TextBlock(text=f"[{t}] {_json_text(body)}"))
    return out


def _looks_like_chat(value: Any) -> bool:
    """Whether a decoded JSON value is a chat message array or a request body with messages."""
    if isinstance(value, dict):
        if "sessionID" in value or "payload" in value or "parentUuid" in value:
            return False
        value = value.get("messages")
    if not isinstance(value, list) or not value:
        return False
    first = next((m for m in value if isinstance(m, dict)), None)
    role = first.get("role") if first is not None else None
    return isinstance(role, str) and role in ROLES


class _Parser:
    def __init__(self, file: str) -> None:
        self.file = file
        self.messages: list[Message] = []
        self.issues: list[LoadIssue] = LoadIssues()
        self.call_names: dict[str, str] = {}
        self.pending_functions: dict[str, list[str]] = {}
        self.first_task_done = False

    def _add(self, role: Role, blocks: list[Block], record: int, **extra: Any) -> None:
        if role is Role.SYSTEM:
            source = Source.of(SourceKind.IDENTITY, "system prompt")
        elif (
            blocks
            and all(isinstance(b, ToolResultBlock | MediaBlock) for b in blocks)
            and any(isinstance(b, ToolResultBlock) for b in blocks)
        ):
            source = Source.of(SourceKind.TOOL_OUTPUT)
        elif role is Role.USER and not self.first_task_done and any(isinstance(b, TextBlock) for b in blocks):
            source = Source.of(SourceKind.TASK, "first user task")
            self.first_task_done = True
        else:
            source = Source.of(SourceKind.CONVERSATION)
        self.messages.append(
            Message(
                id=f"m{record}",
                role=role,
                blocks=tuple(blocks),
                source=source,
                origin=Origin(file=self.file, line=record),
                **extra,
            )
        )

    def system(self, system: Any, record: int) -> None:
        if too_deep(system):
            self.issues.append(LoadIssue(file=self.file, line=record, reason=f"`system` {too_deep_reason()}"))
            return
        blocks = _parts(system, self.call_names)
        self._add(Role.SYSTEM, blocks, record)

    def message(self, raw: Any, record: int) -> None:
        if not isinstance(raw, dict):
            self.issues.append(
                LoadIssue(
                    file=self.file, line=record, reason=f"expected a message object, got {type(raw).__name__}"
                )
            )
            return
        if too_deep(raw):
            self.issues.append(LoadIssue(file=self.file, line=record, reason=too_deep_reason()))
            return
        content = raw.get("content")
        if content is not None and not isinstance(content, str | list):
            self.issues.append(
                LoadIssue(
                    file=self.file,
                    line=record,
                    reason=f"`content` is {describe(content)}, not a string or a list; kept as text",
                )
            )
        role_name = raw.get("role")
        role = ROLES.get(role_name) if isinstance(role_name, str) else None
        if role is None:
            self.issues.append(
                LoadIssue(file=self.file, line=record, reason=f"message with unknown role {role_name!r}")
            )
            return
        blocks: list[Block] = []
        reasoning = raw.get("reasoning_content", raw.get("reasoning"))
        if role is Role.ASSISTANT and isinstance(reasoning, str) and reasoning:
            blocks.append(ReasoningBlock(text=reasoning))
        if role is Role.TOOL:
            call_id = raw.get("tool_call_id")
            name = raw.get("name") if isinstance(raw.get("name"), str) else None
            if not isinstance(call_id, str) and role_name == "function" and name is not None:
                waiting = self.pending_functions.get(name)
                call_id = waiting.pop(0) if waiting else None
            if not isinstance(call_id, str):
                self.issues.append(
                    LoadIssue(file=self.file, line=record, reason="tool message without a `tool_call_id`")
                )
                call_id = f"m{record}"
            text, media = _result_text(raw.get("content"))
            blocks.append(
                ToolResultBlock(
                    call_id=call_id,
                    tool_name=self.call_names.get(call_id, name),
                    content=text,
                    is_error=bool(raw.get("is_error")),
                    media=media,
                )
            )
            self._add(Role.TOOL, blocks, record)
            return
        blocks.extend(_parts(raw.get("content"), self.call_names))
        calls = raw.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            self.issues.append(
                LoadIssue(
                    file=self.file,
                    line=record,
                    reason=f"`tool_calls` is {describe(calls)}, not a list; ignored",
                )
            )
        if isinstance(calls, list):
            for n, call in enumerate(calls, 1):
                if not isinstance(call, dict):
                    continue
                fn = call.get("function") if isinstance(call.get("function"), dict) else {}
                assert isinstance(fn, dict)
                call_id = str(call.get("id") or f"m{record}.{n}")
                name = str(fn.get("name", call.get("name", "")))
                self.call_names[call_id] = name
                blocks.append(ToolCallBlock(id=call_id, name=name, arguments=_arguments(fn.get("arguments"))))
        legacy = raw.get("function_call")
        if isinstance(legacy, dict):
            call_id = f"m{record}.fn"
            name = str(legacy.get("name", ""))
            self.call_names[call_id] = name
            self.pending_functions.setdefault(name, []).append(call_id)
            blocks.append(ToolCallBlock(id=call_id, name=name, arguments=_arguments(legacy.get("arguments"))))
        model = raw.get("model") if isinstance(raw.get("model"), str) else None
        self._add(role, blocks, record, model=model)


def parse_chat(value: Any, file: str) -> Transcript:
    """A transcript from a decoded chat JSON value (an array of messages or a request body)."""
    parser = _Parser(file)
    model: str | None = None
    items: Any = value
    offset = 0
    if isinstance(value, dict):
        model = value.get("model") if isinstance(value.get("model"), str) else None
        system = value.get("system")
        if system:
            parser.system(system, 1)
            offset = 1
        items = value.get("messages")
    if not isinstance(items, list):
        raise LoaderError(f"{file} holds no chat messages (expected an array or a body with `messages`)")
    for i, raw in enumerate(items, 1):
        parser.message(raw, i + offset)
    ids = tuple(m.id for m in parser.messages)
    if model is None:
        model = next((m.model for m in reversed(parser.messages) if m.model), None)
    return Transcript(
        format=FORMAT,
        path=file,
        model=model,
        messages=parser.messages,
        segments=[Segment(index=0, message_ids=ids)],
        requests=[Request(index=1, model=model, usage=None, segment=0, ledger_len=len(ids))],
        # a chat file is often an excerpt: a result whose call is cut off is not reported
        load_issues=LoadIssues.joined(parser.issues, pairing_issues(parser.messages, file, orphans=False)),
    )


def load_chat_json(path: str | Path) -> Transcript:
    """Read a chat JSON file whole."""
    p = Path(path)
    size = p.stat().st_size
    if size > MAX_BYTES:
        raise LoaderError(f"{p} is {size:,} bytes, over the {MAX_BYTES:,} limit for a chat JSON file")
    raw = read_regular(p).removeprefix(b"\xef\xbb\xbf")
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        # one JSON document: there are no records to keep apart from a broken one
        where = f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            line = raw.count(b"\n", 0, bad.start) + 1
            where = f"invalid UTF-8 at byte {bad.start:,}, line {line:,}"
        raise LoaderError(f"{p} is not valid JSON ({where})") from None
    return parse_chat(value, str(p))


class GenericChatFormat:
    """Detects a JSON array of chat messages or a request body with a `messages` array."""

    format = FORMAT

    def sniff(self, path: Path, head: bytes) -> bool:
        if path.is_dir():
            return False
        body = head.removeprefix(b"\xef\xbb\xbf").lstrip()
        if not body.startswith((b"[", b"{")):
            return False
        try:
            whole = path.stat().st_size <= len(head)
        except OSError:
            return False
        if whole:
            try:
                return _looks_like_chat(orjson.loads(body))
            except orjson.JSONDecodeError:
                pass  # broken (cut short, bad bytes): judged by its opening, and load() says where it breaks
        # larger than the head: judge by its opening
        if body.startswith(b"["):
            # by its first elements, never by a "role" key anywhere in the head (a Claude Code
            # record array holds roles inside its messages)
            if _ARRAY_START.match(body) is None:
                return False
            elements = first_elements(body)
            if elements:
                return _looks_like_chat(elements)
            # its first element does not decode (broken bytes): judged by a role key, and load()
            # says where it breaks
            return _ROLE_KEY.search(body) is not None
        first_line = body.split(b"\n", 1)[0]
        try:
            orjson.loads(first_line)
        except orjson.JSONDecodeError:
            # pretty-printed (not JSON Lines): a body whose messages carry roles
            return b'"messages"' in body and _ROLE_KEY.search(body) is not None and b'"sessionID"' not in body
        return False  # the first line is a whole object: JSON Lines, not one chat body

    def load(self, path: Path, *, progress: Progress | None = None) -> Transcript:
        """(A chat JSON file is parsed whole: `progress` hears nothing.)"""
        return load_chat_json(path)
