"""Summarizers for auto compact: two that need no model (recorded, extractive) and a model hook."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from inspector.model import Message, Role, ToolResultBlock

SUMMARY_PROMPT = """\
Summarize the conversation above so the work can continue without it. Keep, in this order:
1. the user's primary request and intent;
2. key technical concepts;
3. files and code sections read or changed, with why they matter;
4. errors met and how they were fixed;
5. problem solving done so far;
6. every user message, verbatim;
7. pending tasks;
8. the work in progress right before this summary;
9. the next step, if one is clear.
Reply with the summary only; call no tools."""
"""The instructions a model summarizer is given: intent, decisions, errors, every user message,
pending work and the next step (the sections of the prompt OpenCollab borrowed from Claude Code)."""

PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "file")
COMMAND_KEYS = ("command", "cmd")
LINE_CAP = 200
"""Characters kept of one command or error line in an extractive digest."""
LAST_TEXT_CAP = 4_000
"""Characters kept of the last assistant text in an extractive digest."""


@runtime_checkable
class Summarizer(Protocol):
    """Turns a stretch of messages into summary text (without the auto-compact header)."""

    def summarize(self, messages: Sequence[Message]) -> str: ...


def summarizer_key(summarizer: Summarizer) -> str:
    """What distinguishes one summarizer's output from another's, for the summary cache key."""
    return str(
        getattr(summarizer, "cache_key", None) or getattr(summarizer, "name", type(summarizer).__name__)
    )


def cacheable(summarizer: Summarizer) -> bool:
    """Whether the summarizer's last answer may be cached (a fallback answer may not)."""
    return bool(getattr(summarizer, "last_call_cacheable", True))


def call_arguments(raw: dict[str, Any] | str) -> dict[str, Any]:
    """A tool call's arguments as a dict (a JSON string is parsed; anything else gives {})."""
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw)
    except (ValueError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


class ExtractiveSummarizer:
    """A deterministic digest of a stretch, no model: every message a person typed, verbatim
    (injected reminders and tool results are not user messages), the files touched (from tool call
    arguments file_path/path/notebook_path/filename/file), the commands run (command/cmd), the
    errors (the first line of each result with is_error), a count of tool calls by name, and the
    last assistant text (up to 4,000 chars)."""

    name = "extractive"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._digests: OrderedDict[int, _Digest] = OrderedDict()
        """id(first message) -> the digest of the longest stretch starting with it asked for:
        a replay folds, request after request, a stretch that is the one before and a few
        messages more, so its digest goes on from where the last one stopped."""

    def summarize(self, messages: Sequence[Message]) -> str:
        if not messages:
            return _Digest(()).text()
        with self._lock:  # (a digest is extended in place)
            return self._summarize(tuple(messages))

    def _summarize(self, stretch: tuple[Message, ...]) -> str:
        key = id(stretch[0])
        digest = self._digests.get(key)
        if digest is not None and digest.extends(stretch):
            self._digests.move_to_end(key)
            digest.extend(stretch)
        else:
            digest = _Digest(stretch)
            self._digests[key] = digest
            if len(self._digests) > DIGESTS:
                self._digests.popitem(last=False)
        return digest.text()


DIGESTS = 8
"""How many stretches (by their first message) an extractive summarizer goes on from."""


class _Digest:
    """What an extractive summary of a stretch holds, gathered message by message, so that a
    longer stretch with the same start is digested from where this one stopped."""

    def __init__(self, messages: tuple[Message, ...]) -> None:
        self.messages: tuple[Message, ...] = ()
        self.users: list[str] = []
        self.files: dict[str, None] = {}
        self.commands: dict[str, None] = {}
        self.errors: list[str] = []
        self.tools: dict[str, int] = {}
        self.names: dict[str, str] = {}
        self.last_text = ""
        self.extend(messages)

    def extends(self, messages: tuple[Message, ...]) -> bool:
        """Whether `messages` starts with the stretch digested so far (the same objects)."""
        n = len(self.messages)
        return len(messages) >= n and messages[:n] == self.messages

    def extend(self, messages: tuple[Message, ...]) -> None:
        """Digest the messages of `messages` past those digested (it extends them)."""
        users, files, commands, errors = self.users, self.files, self.commands, self.errors
        tools, names = self.tools, self.names
        for m in messages[len(self.messages) :]:
            if m.is_human and m.text.strip():
                users.append(f"[{len(users) + 1}] {m.text}")
            if m.role is Role.ASSISTANT:
                if m.has_text:
                    self.last_text = m.text
                for c in m.tool_calls:
                    names[c.id] = c.name
                    tools[c.name] = tools.get(c.name, 0) + 1
                    args = call_arguments(c.arguments)
                    for k in PATH_KEYS:
                        if isinstance(args.get(k), str) and args[k]:
                            files.setdefault(str(args[k]))
                    for k in COMMAND_KEYS:
                        if isinstance(args.get(k), str) and args[k].strip():
                            commands.setdefault(_cap(" ".join(str(args[k]).split()), LINE_CAP))
            for b in m.blocks:
                if isinstance(b, ToolResultBlock) and b.is_error:
                    tool = b.tool_name or names.get(b.call_id, "tool")
                    errors.append(f"- {tool}: {_cap(_first_line(b.content), LINE_CAP) or '(no message)'}")
        self.messages = messages

    def text(self) -> str:
        parts: list[str] = []
        if self.users:
            parts.append("User messages (verbatim):\n" + "\n".join(self.users))
        tools = self.tools
        if tools:
            counts = ", ".join(f"{name} {n}" for name, n in sorted(tools.items()))
            parts.append(f"Tool calls: {sum(tools.values())} ({counts})")
        if self.files:
            parts.append("Files touched:\n" + "\n".join(f"- {f}" for f in self.files))
        if self.commands:
            parts.append("Commands run:\n" + "\n".join(f"- {c}" for c in self.commands))
        if self.errors:
            parts.append("Errors:\n" + "\n".join(self.errors))
        if self.last_text:
            parts.append("Last assistant text:\n" + _cap(self.last_text, LAST_TEXT_CAP))
        return (
            "\n\n".join(parts) if parts else "(nothing to keep: no user message, tool call or assistant text)"
        )


class RecordedSummarizer:
    """The summary the harness itself recorded at that point, when there is one.

    Built from the transcript's messages in order; the recorded summaries are those with
    `is_summary`. For a stretch, the recorded summary is the first one written after the stretch's
    last message (it covers everything before it since the previous compaction). A stretch with no
    summary after it, or whose messages are not in the transcript, gets the fallback (extractive).
    """

    name = "recorded"

    def __init__(self, messages: Sequence[Message], fallback: Summarizer | None = None) -> None:
        self._messages = list(messages)
        self._index: tuple[dict[str, int], list[tuple[int, Message]]] | None = None
        """(position of each message id, the recorded summaries with theirs): built when first
        needed, since most replays never fold anything."""
        self.fallback: Summarizer = fallback if fallback is not None else ExtractiveSummarizer()
        self.last_call_cacheable = True
        self.last_call_recorded = False

    def _indexed(self) -> tuple[dict[str, int], list[tuple[int, Message]]]:
        if self._index is None:
            messages = self._messages
            self._index = (
                {m.id: k for k, m in enumerate(messages)},
                [(k, m) for k, m in enumerate(messages) if m.is_summary],
            )
        return self._index

    def recorded_for(self, messages: Sequence[Message]) -> Message | None:
        """The recorded summary message for a stretch, or None."""
        if not messages:
            return None
        position, summaries = self._indexed()
        last = position.get(messages[-1].id)
        if last is None:
            return None
        for k, m in summaries:
            if k > last:
                return m
        return None

    def summarize(self, messages: Sequence[Message]) -> str:
        found = self.recorded_for(messages)
        self.last_call_recorded = found is not None
        if found is not None:
            self.last_call_cacheable = True
            return found.text
        text = self.fallback.summarize(messages)
        self.last_call_cacheable = cacheable(self.fallback)
        return text


ModelCall = Callable[[Sequence[Message], str], str]
"""A real model call: (the stretch, the instructions) -> summary text."""


class ModelSummarizer:
    """The hook for a real model: calls `call(messages, SUMMARY_PROMPT)`.

    A failure (any exception, or an empty answer) falls back to `fallback` (extractive), and that
    answer is marked not cacheable, so the next time the stretch is asked for, the model is tried
    again. This project never calls a model itself; a caller supplies `call`.
    """

    name = "model"

    def __init__(
        self,
        call: ModelCall,
        *,
        prompt: str = SUMMARY_PROMPT,
        fallback: Summarizer | None = None,
        cache_key: str = "model",
    ) -> None:
        self.call = call
        self.prompt = prompt
        self.fallback: Summarizer = fallback if fallback is not None else ExtractiveSummarizer()
        self.cache_key = cache_key
        self.last_call_cacheable = True
        self.last_error: str | None = None

    def summarize(self, messages: Sequence[Message]) -> str:
        try:
            text = self.call(messages, self.prompt).strip()
            if not text:
                raise ValueError("the model returned an empty summary")
        except Exception as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            self.last_call_cacheable = False
            return self.fallback.summarize(messages)
        self.last_error = None
        self.last_call_cacheable = True
        return text
