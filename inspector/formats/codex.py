"""Codex CLI rollouts (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`).

How a rollout becomes a ledger (docs/DESIGN.md §4, docs/notes/opencode-codex.md §B):
- Each line is an envelope `{timestamp, type, payload}`; builds from 2026 add `ordinal` and
  sometimes `metadata` beside them (read, not needed). Rollouts from before September 2025 have no
  envelope: a bare header `{id, timestamp, instructions}`, `{"record_type": "state"}` markers and
  bare response items; those are read too.
- `response_item` records are the model-visible history, one item per line. The output items of
  one model response (reasoning, assistant text, tool calls) come on consecutive lines and are
  merged into one assistant message; an input item (a user or developer message, a tool output)
  or a `token_count` report ends the response. Every tool output is a message of its own
  (role tool). Ghost snapshots are never sent to the model and are skipped.
- `session_meta.base_instructions` is the system prompt Codex sends with every request (the
  Responses API `instructions`): it becomes a pinned system message at the head of every segment.
- Requests: one per model response, at the place in the ledger where its first output item was
  written. `event_msg/token_count` reports the usage of the call that just finished
  (`info.last_token_usage`); OpenAI counts cached tokens inside `input_tokens`, so the usage is
  mapped as input = input_tokens - cached_input_tokens (- cache_write_input_tokens), cache_read =
  cached_input_tokens, so `usage.context` is `input_tokens`, what the window held. `output`
  is `output_tokens`, which includes `reasoning_output_tokens` (also given as `reasoning`). A
  report that follows no new response (the compaction's own summarization call, an aborted
  call) is a request without a response; a repeated identical report is skipped.
- `compacted` records a compaction: the ledger restarts from its `replacement_history` when
  present (2026 builds), otherwise from the summary `message` as one user message; the system
  prompt stays at the head. Codex does not record whether it was automatic or manual, nor its
  own pre-compaction figure, so `trigger` and `pre_tokens` stay None.
- `Transcript.window` is `model_context_window` exactly as the rollout states it (from
  `token_count` or `event_msg/task_started`). For Codex that is already the *effective* window,
  95% of the model's context window (272,000 -> 258,400), not the raw model window.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from msgspec.structs import replace

from inspector.model import (
    Block,
    EventKind,
    LoadIssue,
    MediaBlock,
    Message,
    Origin,
    ReasoningBlock,
    RecordedEvent,
    Request,
    Role,
    Segment,
    Source,
    SourceKind,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Transcript,
    Usage,
)

from .base import (
    MAX_LINE_BYTES,
    MAX_TOKENS,
    LineSplitter,
    LoadIssues,
    Progress,
    decode_json_line,
    describe,
    feed_file,
    pairing_issues,
    short,
    token_count,
    too_deep,
)

FORMAT = "codex"

ENVELOPE_TYPES = frozenset(
    {
        "session_meta",
        "turn_context",
        "response_item",
        "event_msg",
        "compacted",
        "world_state",
        "token_usage_record",
        "inter_agent_communication",
        "inter_agent_communication_metadata",
    }
)
"""Record types a rollout envelope may carry (sniffing accepts any of them with a `payload`)."""

OUTPUT_ITEMS = frozenset(
    {
        "reasoning",
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "tool_search_call",
        "web_search_call",
        "image_generation_call",
    }
)
"""Response items the model produces (besides assistant messages)."""

RESULT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
RESPONSE_ITEM_TYPES = OUTPUT_ITEMS | RESULT_ITEMS | {"message", "compaction", "ghost_snapshot"}

SUMMARY_PREFIX = "Another language model started to solve this problem"
"""How Codex's compaction summary message begins (templates/compact/summary_prefix.md)."""

_EXIT_RE = re.compile(r"^(?:Process exited with code|Exit code:)\s*(-?\d+)", re.MULTILINE)
_SNIFF_TYPE_RE = re.compile(
    rb'"type"\s*:\s*"(' + b"|".join(t.encode() for t in sorted(ENVELOPE_TYPES)) + rb')"'
)


def _int(v: Any) -> int:
    """A token count from an untrusted value: a whole number from 0 to MAX_TOKENS (0 for anything else)."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_TOKENS else 0


def _json_text(value: Any) -> str:
    """Compact JSON for showing a structured value as text (never fails on odd values)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _str(v: Any) -> str | None:
    """A string from an untrusted value (None for anything else, so it is safe to hash)."""
    return v if isinstance(v, str) else None


USAGE_KEYS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
)


def _usage(raw: Any, problems: list[str] | None = None) -> Usage | None:
    """Map Codex `last_token_usage` so that `Usage.context` equals `input_tokens`. A count that is not
    a whole number from 0 to MAX_TOKENS is 0 (and a problem, when `problems` is given)."""
    if not isinstance(raw, dict):
        return None
    if problems is not None:
        for key in USAGE_KEYS:
            token_count(raw, key, "last_token_usage", problems)
    total_in = _int(raw.get("input_tokens"))
    cached = _int(raw.get("cached_input_tokens"))
    written = _int(raw.get("cache_write_input_tokens"))
    # OpenAI counts cached tokens inside input_tokens; a provider that reports them beside it does not
    fresh = total_in - cached - written if cached + written <= total_in else total_in
    return Usage(
        input=fresh,
        cache_read=cached,
        cache_write=written,
        output=_int(raw.get("output_tokens")),
        reasoning=_int(raw.get("reasoning_output_tokens")),
    )


def _content_blocks(content: Any) -> list[Block]:
    """Message content items (input_text, output_text, input_image, ...) as blocks."""
    if isinstance(content, str):
        return [TextBlock(text=content)]
    if not isinstance(content, list):
        return []
    out: list[Block] = []
    for item in content:
        if isinstance(item, str):
            out.append(TextBlock(text=item))
            continue
        if not isinstance(item, dict):
            continue
        t = item.get("type")
        if t in ("input_text", "output_text", "text", "summary_text", "reasoning_text"):
            out.append(TextBlock(text=str(item.get("text", ""))))
        elif t == "refusal":
            out.append(TextBlock(text=str(item.get("refusal", ""))))
        elif t in ("input_image", "image"):
            url = item.get("image_url")
            size = 0
            media_type = ""
            if isinstance(url, str):
                if url.startswith("data:"):
                    head, _, data = url.partition(",")
                    media_type = head[5:].split(";")[0]
                    size = len(data) * 3 // 4
                else:
                    size = len(url)
            out.append(MediaBlock(type="image", media_type=media_type, size_bytes=size))
        elif t in ("input_file", "file"):
            file_data = item.get("file_data")
            size = len(file_data) * 3 // 4 if isinstance(file_data, str) else 0
            out.append(MediaBlock(type="document", size_bytes=size))
        else:
            body = {k: v for k, v in item.items() if k != "type"}
            out.append(TextBlock(text=f"[{t}] {_json_text(body)}"))
    return out


def _output_text(output: Any) -> tuple[str, bool | None, int]:
    """A tool output as the model sees it: its text, whether it says it failed, media count."""
    if isinstance(output, str):
        return output, None, 0
    if isinstance(output, dict):
        # 2025: {"content": "...", "success": false}; also {"content_items": [...]}
        success = output.get("success")
        failed = (not success) if isinstance(success, bool) else None
        if isinstance(output.get("content"), str):
            return output["content"], failed, 0
        items = output.get("content_items", output.get("content"))
        if isinstance(items, list):
            text, _, media = _output_text(items)
            return text, failed, media
        return _json_text(output), failed, 0
    if isinstance(output, list):
        parts: list[str] = []
        media = 0
        for b in _content_blocks(output):
            if isinstance(b, TextBlock):
                parts.append(b.text)
            else:
                media += 1
        return "\n".join(parts), None, media
    if output is None:
        return "", None, 0
    return _json_text(output), None, 0


def _failed(text: str) -> bool:
    """Whether a tool output's own header says the command failed (exit code not 0)."""
    head = text[:2000]
    m = _EXIT_RE.search(head)
    if m is not None:
        return m.group(1) != "0"
    if head.startswith("{") and '"exit_code"' in head:
        # 2025 shell outputs: a JSON string {"output": ..., "metadata": {"exit_code": N, ...}}
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return False
        meta = value.get("metadata") if isinstance(value, dict) else None
        code = meta.get("exit_code") if isinstance(meta, dict) else None
        return isinstance(code, int) and code != 0
    return False


def _arguments(raw: Any) -> dict[str, Any] | str:
    """Function-call arguments: the JSON object when they parse as one, else the raw text."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
        return value if isinstance(value, dict) and not too_deep(value) else raw
    return "" if raw is None else _json_text(raw)


def _problems(payload: dict[str, Any]) -> list[str]:
    """Mistyped fields of a response item, in words; the item still loads as well as it can."""
    t = _str(payload.get("type"))
    out: list[str] = []
    if t == "message":
        content = payload.get("content")
        if content is not None and not isinstance(content, str | list):
            out.append(f"message `content` is {describe(content)}, not a list; ignored")
        role = payload.get("role")
        if not isinstance(role, str):
            out.append(f"message `role` is {describe(role)}, not a string; read as a user message")
    elif t in ("function_call", "custom_tool_call", "tool_search_call"):
        if not isinstance(payload.get("call_id", payload.get("id")), str):
            out.append(f"{t} without a string `call_id`")
        if t != "tool_search_call" and not isinstance(payload.get("name"), str):
            out.append(f"{t} without a string `name`")
    elif t in RESULT_ITEMS and not isinstance(payload.get("call_id"), str):
        out.append(f"{t} without a string `call_id`")
    return out


_INSTRUCTION_TAG = re.compile(r"<([a-z][a-z_ ]*(?:instructions|mode|personality))>")
"""A section tag of a developer message (`<skills_instructions>`, `<permissions instructions>`)."""


def developer_source(role: str, text: str) -> Source:
    """The source of a developer (or system) message: pinned instructions (Codex re-injects its
    initial context after a compaction), named by the section tags it holds, in order
    ("developer instructions (skills, permissions)" for `<skills_instructions>` and
    `<permissions instructions>`, the two the corpus' 0.158.0 rollout holds)."""
    tags = [t.replace("_instructions", "").replace(" instructions", "") for t in _INSTRUCTION_TAG.findall(text)]
    tags = list(dict.fromkeys(tags))
    name = f"{role} instructions" + (f" ({', '.join(tags[:4])})" if tags else "")
    return Source.of(SourceKind.IDENTITY, short(name))


def _user_source(text: str, first_task: bool) -> tuple[Source, bool, bool]:
    """(source, is_meta, is_summary) of a user-role message from its text, by the marker it
    starts with (docs/notes/opencode-codex.md §B2, §B3; each seen in the corpus' rollouts or Codex's
    templates):

    | category | marker | kind · priority |
    |---|---|---|
    | compaction summary | `SUMMARY_PREFIX` ("Another language model started to solve this problem") | summary · 0 |
    | environment context | `<environment_context>` | identity · 100 (pinned: initial context) |
    | AGENTS.md | `# AGENTS.md instructions`, `<user_instructions>`, `<INSTRUCTIONS>` | project instructions · 75 (pinned: initial context) |
    | skill | `<skill>` | skill · 85 (pinned) |
    | injected by the harness | `<user_shell_command>`, `<turn_aborted>`, `<subagent_notification>` | conversation · 0 |
    | task | the first other user message | task · 80 (pinned) |
    | (conversation) | every later one | conversation · 0 |

    Developer and system messages are `developer_source`; `session_meta.base_instructions` is
    "base instructions" (identity · 100); tool outputs are tool output · 0.
    """
    t = text.lstrip()
    if t.startswith(SUMMARY_PREFIX):
        return Source.of(SourceKind.SUMMARY, "compaction summary"), False, True
    if t.startswith("<environment_context>"):
        return Source.of(SourceKind.IDENTITY, "environment context"), True, False
    if t.startswith(("# AGENTS.md instructions", "<user_instructions>", "<INSTRUCTIONS>")):
        return Source.of(SourceKind.PROJECT_INSTRUCTIONS, "AGENTS.md"), True, False
    if t.startswith("<skill>"):
        return Source.of(SourceKind.SKILL, "skill"), True, False
    if t.startswith(("<user_shell_command>", "<turn_aborted>", "<subagent_notification>")):
        return Source.of(SourceKind.CONVERSATION, "injected by the harness"), True, False
    if first_task:
        return Source.of(SourceKind.TASK, "first user task"), False, False
    return Source.of(SourceKind.CONVERSATION), False, False


@dataclass
class _Item:
    """One response item turned into blocks, and what kind of item it is."""

    kind: str
    """'output' (model output), 'input' (user/developer message), 'result' (tool output) or 'compaction'."""
    role: Role
    blocks: list[Block]
    source: Source
    is_meta: bool = False
    is_summary: bool = False


@dataclass
class _State:
    messages: list[Message] = field(default_factory=list)
    segments: list[list[str]] = field(default_factory=lambda: [[]])
    requests: list[Request] = field(default_factory=list)
    events: list[RecordedEvent] = field(default_factory=list)
    issues: list[LoadIssue] = field(default_factory=LoadIssues)
    skipped: Counter[str] = field(default_factory=Counter)
    call_names: dict[str, str] = field(default_factory=dict)
    open_response: int | None = None
    """Index into `messages` of the assistant message the current response is being merged into."""
    reported: bool = True
    """Whether the last request already has its token_count (a new report then is a new call)."""
    last_info: Any = None
    first_task_done: bool = False
    first_task_text: str | None = None
    system_id: str | None = None
    session_id: str | None = None
    model: str | None = None
    window: int | None = None
    version: str | None = None
    """`session_meta.cli_version`: the Codex that wrote the rollout."""


class CodexReader:
    """Incremental reader: feed it bytes as they arrive, ask for the transcript at any time."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.file = str(path)
        self._lines = LineSplitter(max_line=MAX_LINE_BYTES)
        self._s = _State()

    @property
    def lines_read(self) -> int:
        return self._lines.lines_seen

    def feed(self, data: bytes) -> None:
        for line_no, raw in self._lines.feed(data):
            self._take(line_no, raw)

    def finish(self) -> None:
        """At end of file: a held-back last line without its newline is read if it is whole JSON."""
        for line_no, raw in self._lines.flush():
            self._take(line_no, raw, torn_ok=False)

    # -- records ----------------------------------------------------------------------------
    def _issue(self, line: int, reason: str) -> None:
        self._s.issues.append(LoadIssue(file=self.file, line=line, reason=reason))

    def _take(self, line_no: int, raw: bytes, torn_ok: bool = True) -> None:
        s = self._s
        before = len(s.issues)
        rec = decode_json_line(raw, self.file, line_no, s.issues)
        if rec is None:
            if not torn_ok and len(s.issues) > before:
                last = s.issues[-1]
                s.issues[-1] = LoadIssue(
                    file=last.file,
                    line=last.line,
                    reason=f"truncated last line ({len(raw):,} bytes, no newline): {last.reason}",
                )
            return
        rtype = rec.get("type")
        payload = rec.get("payload")
        ts = _str(rec.get("timestamp"))
        if "payload" not in rec:
            self._take_legacy(line_no, rec)
            return
        if not isinstance(rtype, str):
            self._issue(line_no, "record has no `type`")
            return
        if not isinstance(payload, dict):
            self._issue(line_no, f"{rtype} record whose `payload` is not an object")
            return
        if rtype == "response_item":
            self._response_item(line_no, payload, ts)
        elif rtype == "event_msg":
            self._event(line_no, payload, ts)
        elif rtype == "compacted":
            self._compacted(line_no, payload, ts)
        elif rtype == "session_meta":
            self._session_meta(line_no, payload, ts)
            s.skipped[rtype] += 1
        elif rtype == "turn_context":
            model = _str(payload.get("model"))
            if model:
                s.model = model
            s.skipped[rtype] += 1
        else:
            s.skipped[rtype if rtype in ENVELOPE_TYPES else f"unknown:{short(rtype)}"] += 1

    def _take_legacy(self, line_no: int, rec: dict[str, Any]) -> None:
        """Rollouts from before September 2025: no envelope."""
        s = self._s
        rtype = rec.get("type")
        if "record_type" in rec:
            s.skipped[f"legacy:{short(rec.get('record_type'))}"] += 1
        elif isinstance(rtype, str) and rtype in RESPONSE_ITEM_TYPES:
            self._response_item(line_no, rec, _str(rec.get("timestamp")))
        elif rtype is None and "id" in rec and "timestamp" in rec:
            self._session_meta(line_no, rec, _str(rec.get("timestamp")))
            s.skipped["legacy:session header"] += 1
        elif isinstance(rtype, str):
            self._issue(line_no, f"{rtype} record without a `payload`")
        else:
            self._issue(line_no, "record has no `type`")

    def _session_meta(self, line_no: int, payload: dict[str, Any], ts: str | None) -> None:
        s = self._s
        if s.session_id is None:
            sid = payload.get("id", payload.get("session_id"))
            s.session_id = sid if isinstance(sid, str) else None
        version = payload.get("cli_version")
        if s.version is None and isinstance(version, str) and version:
            s.version = version
        base = payload.get("base_instructions")
        text = base.get("text") if isinstance(base, dict) else base
        if s.system_id is None and isinstance(text, str) and text.strip():
            m = Message(
                id=f"L{line_no}",
                role=Role.SYSTEM,
                blocks=(TextBlock(text=text),),
                timestamp=ts,
                source=Source.of(SourceKind.IDENTITY, "base instructions"),
                origin=Origin(file=self.file, line=line_no),
                is_meta=True,
            )
            s.system_id = m.id
            s.messages.append(m)
            s.segments[-1].insert(0, m.id)

    def _event(self, line_no: int, payload: dict[str, Any], ts: str | None) -> None:
        s = self._s
        etype = _str(payload.get("type"))
        if etype == "token_count":
            info = payload.get("info")
            if not isinstance(info, dict):
                if info is not None:
                    self._issue(line_no, f"token_count `info` is {describe(info)}, not an object; ignored")
                s.skipped["event_msg/token_count (no info)"] += 1
                return
            self._window(line_no, info.get("model_context_window"))
            problems: list[str] = []
            raw_usage = info.get("last_token_usage")
            if raw_usage is not None and not isinstance(raw_usage, dict):
                problems.append(f"`last_token_usage` is {describe(raw_usage)}, not an object; ignored")
            usage = _usage(raw_usage, problems)
            for problem in problems:
                self._issue(line_no, problem)
            if usage is None:
                s.skipped["event_msg/token_count (no last_token_usage)"] += 1
                return
            self._report(usage, info, ts)
            return
        if etype == "task_started":
            self._window(line_no, payload.get("model_context_window"))
        s.skipped[f"event_msg/{short(etype)}"] += 1

    def _window(self, line_no: int, window: Any) -> None:
        """A stated `model_context_window`: kept when it is a sane whole number, else a load issue."""
        if window is None:
            return
        if _int(window):
            self._s.window = window
        else:
            self._issue(line_no, f"`model_context_window` is {describe(window)}, not a window size; ignored")

    def _report(self, usage: Usage, info: dict[str, Any], ts: str | None) -> None:
        """A token_count: the usage of the model call that just finished."""
        s = self._s
        key = (info.get("last_token_usage"), info.get("total_token_usage"))
        if key != s.last_info and (
            usage.context + usage.output == 0
            or (s.last_info is not None and key[1] is not None and key[1] == s.last_info[1])
        ):
            # all zero, or a total that did not move: no model call was made (a real rollout
            # reports one just before its `compacted` record), so no request
            s.skipped["event_msg/token_count (no new call)"] += 1
            return
        if not s.reported and s.requests and s.requests[-1].usage is None:
            s.requests[-1] = replace(s.requests[-1], usage=usage)
        elif s.requests and key == s.last_info:
            s.skipped["event_msg/token_count (repeated)"] += 1
        else:
            # a call whose output is not in the history (the compaction's summarization call, an abort)
            s.requests.append(
                Request(
                    index=len(s.requests) + 1,
                    model=s.model,
                    usage=usage,
                    segment=len(s.segments) - 1,
                    ledger_len=len(s.segments[-1]),
                    timestamp=ts,
                )
            )
        s.last_info = key
        s.reported = True
        s.open_response = None

    # -- response items ---------------------------------------------------------------------
    def _item(self, payload: dict[str, Any], retained: bool = False) -> _Item | None:
        """A response item as blocks, or None when it is not sent to the model.

        `retained`: an item of a compaction's replacement history (a copy: the first task keeps
        its source there only if it is the first task's own text).
        """
        s = self._s
        t = _str(payload.get("type"))
        if t == "message":
            role = payload.get("role")
            blocks = _content_blocks(payload.get("content"))
            if role == "assistant":
                return _Item("output", Role.ASSISTANT, blocks, Source.of(SourceKind.CONVERSATION))
            if role in ("developer", "system"):
                text = "\n".join(b.text for b in blocks if isinstance(b, TextBlock))
                return _Item("input", Role.SYSTEM, blocks, developer_source(str(role), text), is_meta=True)
            text = "\n".join(b.text for b in blocks if isinstance(b, TextBlock))
            if retained:
                first = s.first_task_text is not None and text == s.first_task_text
            else:
                first = not s.first_task_done
            source, is_meta, is_summary = _user_source(text, first_task=first)
            if source.kind is SourceKind.TASK and not retained:
                s.first_task_done = True
                s.first_task_text = text
            return _Item("input", Role.USER, blocks, source, is_meta=is_meta, is_summary=is_summary)
        if t == "reasoning":
            texts = [str(x.get("text", "")) for x in _list(payload.get("summary")) if isinstance(x, dict)]
            texts += [str(x.get("text", "")) for x in _list(payload.get("content")) if isinstance(x, dict)]
            enc = payload.get("encrypted_content")
            text = "\n".join(x for x in texts if x)
            block = ReasoningBlock(
                text=text,
                signed=isinstance(enc, str) and bool(enc),
                redacted=isinstance(enc, str) and bool(enc) and not text,
                signature_chars=len(enc) if isinstance(enc, str) else 0,
            )
            return _Item("output", Role.ASSISTANT, [block], Source.of(SourceKind.CONVERSATION))
        if t in ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call"):
            call_id = str(payload.get("call_id") or payload.get("id") or "")
            if t == "local_shell_call":
                name = "local_shell"
                args: dict[str, Any] | str = _arguments(payload.get("action"))
            elif t == "custom_tool_call":
                name = str(payload.get("name", ""))
                args = _arguments(payload.get("input"))
            elif t == "tool_search_call":
                name = str(payload.get("name") or "tool_search")
                args = _arguments(payload.get("arguments", payload.get("query")))
            else:
                name = str(payload.get("name", ""))
                args = _arguments(payload.get("arguments"))
            s.call_names[call_id] = name
            call = ToolCallBlock(id=call_id, name=name, arguments=args)
            return _Item("output", Role.ASSISTANT, [call], Source.of(SourceKind.CONVERSATION))
        if t in ("web_search_call", "image_generation_call"):
            # server-side tools: no output item comes back, so they stay as text (no orphan call)
            body = {k: v for k, v in payload.items() if k not in ("type", "id", "result")}
            text = f"[{t}] {_json_text(body)}"
            return _Item("output", Role.ASSISTANT, [TextBlock(text=text)], Source.of(SourceKind.CONVERSATION))
        if t in RESULT_ITEMS:
            call_id = str(payload.get("call_id") or "")
            text, failed, media = _output_text(payload.get("output", payload.get("tools")))
            result = ToolResultBlock(
                call_id=call_id,
                tool_name=s.call_names.get(call_id),
                content=text,
                is_error=failed if failed is not None else _failed(text),
                media=media,
            )
            return _Item("result", Role.TOOL, [result], Source.of(SourceKind.TOOL_OUTPUT))
        if t == "compaction":
            enc = payload.get("encrypted_content")
            block = ReasoningBlock(
                redacted=True, signed=True, signature_chars=len(enc) if isinstance(enc, str) else 0
            )
            return _Item(
                "compaction",
                Role.ASSISTANT,
                [block],
                Source.of(SourceKind.SUMMARY, "remote compaction"),
                is_summary=True,
            )
        return None

    def _response_item(self, line_no: int, payload: dict[str, Any], ts: str | None) -> None:
        s = self._s
        t = _str(payload.get("type"))
        for problem in _problems(payload):
            self._issue(line_no, problem)
        item = self._item(payload)
        if item is None:
            s.skipped[
                f"response_item/{t}" if t in RESPONSE_ITEM_TYPES else f"unknown:response_item/{short(t)}"
            ] += 1
            return
        if item.kind == "output":
            if s.open_response is not None:
                i = s.open_response
                old = s.messages[i]
                s.messages[i] = replace(old, blocks=old.blocks + tuple(item.blocks))
                return
            m = Message(
                id=f"L{line_no}",
                role=Role.ASSISTANT,
                blocks=tuple(item.blocks),
                timestamp=ts,
                source=item.source,
                origin=Origin(file=self.file, line=line_no),
                model=s.model,
            )
            s.requests.append(
                Request(
                    index=len(s.requests) + 1,
                    response_id=m.id,
                    model=s.model,
                    segment=len(s.segments) - 1,
                    ledger_len=len(s.segments[-1]),
                    timestamp=ts,
                )
            )
            s.reported = False
            s.open_response = len(s.messages)
            s.messages.append(m)
            s.segments[-1].append(m.id)
            return
        s.open_response = None
        m = Message(
            id=f"L{line_no}",
            role=item.role,
            blocks=tuple(item.blocks),
            timestamp=ts,
            source=item.source,
            origin=Origin(file=self.file, line=line_no),
            is_meta=item.is_meta,
            is_summary=item.is_summary,
        )
        s.messages.append(m)
        s.segments[-1].append(m.id)

    def _compacted(self, line_no: int, payload: dict[str, Any], ts: str | None) -> None:
        s = self._s
        s.open_response = None
        summary_text = payload.get("message")
        summary_text = summary_text if isinstance(summary_text, str) else ""
        history = payload.get("replacement_history")
        new_ids: list[str] = [s.system_id] if s.system_id is not None else []
        summary_id: str | None = None
        preserved: list[str] = []
        if isinstance(history, list):
            for i, raw in enumerate(history, 1):
                item = self._item(raw, retained=True) if isinstance(raw, dict) else None
                if item is None:
                    s.skipped["compacted/replacement item not sent"] += 1
                    continue
                text = "\n".join(b.text for b in item.blocks if isinstance(b, TextBlock))
                is_summary = item.is_summary or (
                    bool(summary_text.strip()) and text.strip() == summary_text.strip()
                )
                source = item.source
                if is_summary and source.kind is not SourceKind.SUMMARY:
                    source = Source.of(SourceKind.SUMMARY, "compaction summary")
                m = Message(
                    id=f"L{line_no}.{i}",
                    role=item.role,
                    blocks=tuple(item.blocks),
                    timestamp=ts,
                    source=source,
                    origin=Origin(file=self.file, line=line_no),
                    is_meta=item.is_meta,
                    is_summary=is_summary,
                )
                s.messages.append(m)
                new_ids.append(m.id)
                if is_summary and summary_id is None:
                    summary_id = m.id
                elif not is_summary:
                    preserved.append(m.id)
        else:
            m = Message(
                id=f"L{line_no}",
                role=Role.USER,
                blocks=(TextBlock(text=summary_text),),
                timestamp=ts,
                source=Source.of(SourceKind.SUMMARY, "compaction summary"),
                origin=Origin(file=self.file, line=line_no),
                is_summary=True,
            )
            s.messages.append(m)
            new_ids.append(m.id)
            summary_id = m.id
        s.segments.append(new_ids)
        s.events.append(
            RecordedEvent(
                kind=EventKind.COMPACTION,
                after_request=len(s.requests),
                segment=len(s.segments) - 1,
                summary_id=summary_id,
                preserved_ids=tuple(preserved),
                timestamp=ts,
                file=self.file,
                line=line_no,
            )
        )

    # -- result -----------------------------------------------------------------------------
    def transcript(self) -> Transcript:
        """The transcript of everything fed so far (the partial last line is not included)."""
        s = self._s
        segments: list[Segment] = []
        compactions = [i for i, e in enumerate(s.events) if e.kind is EventKind.COMPACTION]
        for i, ids in enumerate(s.segments):
            segments.append(
                Segment(index=i, message_ids=tuple(ids), started_by=compactions[i - 1] if i else None)
            )
        models = Counter(r.model for r in s.requests if r.model)
        return Transcript(
            format=FORMAT,
            path=self.file,
            session_id=s.session_id,
            model=models.most_common(1)[0][0] if models else s.model,
            window=s.window,
            harness_version=s.version,
            messages=list(s.messages),
            segments=segments,
            requests=list(s.requests),
            events=list(s.events),
            load_issues=LoadIssues.joined(s.issues, pairing_issues(s.messages, self.file)),
            skipped=dict(s.skipped),
        )


def load_codex(path: str | Path, *, progress: Progress | None = None) -> Transcript:
    """Read a whole Codex rollout file (`progress`: see `feed_file`)."""
    reader = CodexReader(path)
    feed_file(reader, path, progress)
    return reader.transcript()


def _looks_like_codex(rec: dict[str, Any]) -> bool | None:
    """True/False when a record decides it, None when it says nothing either way."""
    if "payload" in rec:
        return _str(rec.get("type")) in ENVELOPE_TYPES and isinstance(rec.get("payload"), dict)
    if "record_type" in rec:
        return True
    if "parentUuid" in rec or "sessionId" in rec or "uuid" in rec:
        return False
    return None


class CodexFormat:
    """Detects Codex rollouts by their envelope: `type` (a rollout record type) plus `payload`."""

    format = FORMAT

    def sniff(self, path: Path, head: bytes) -> bool:
        if path.is_dir() or not head.lstrip().startswith(b"{"):
            return False
        lines = head.split(b"\n")
        legacy_header = False
        seen = 0
        for n, raw in enumerate(lines):
            if not raw.strip():
                continue
            seen += 1
            if seen > 20:
                break
            issues: list[LoadIssue] = []
            rec = decode_json_line(raw, str(path), 0, issues)
            if rec is None:
                if n == len(lines) - 1 and seen == 1:
                    # one line longer than the head (a huge session_meta): judge by its opening bytes
                    return (
                        b'"payload"' in raw
                        and _SNIFF_TYPE_RE.search(raw) is not None
                        and b'"parentUuid"' not in raw
                    )
                continue
            verdict = _looks_like_codex(rec)
            if verdict is not None:
                return verdict
            if not legacy_header and rec.get("type") is None and "id" in rec and "timestamp" in rec:
                if "instructions" in rec:
                    return True
                legacy_header = True
                continue
            return legacy_header and _str(rec.get("type")) in RESPONSE_ITEM_TYPES
        return False

    def load(self, path: Path, *, progress: Progress | None = None) -> Transcript:
        return load_codex(path, progress=progress)
