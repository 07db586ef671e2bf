"""A compaction the harness recorded, opened: what it held before, what came after, what it took.

At a recorded compaction (Claude Code's `compact_boundary`, a Codex `compacted` record, an early
1.0 summary root) the raw ledger goes from hundreds of messages to a summary and a few preserved
ones. `opened(replay, event)` lays out what the harness did: the ledger before it (the whole
segment the compaction ended, each message with its calibrated weight at the last request made
with it), what came after (the summary, the preserved messages, and in Claude Code the files it
restores, which the transcript does not record: the files read last are named as candidates),
every folded message with its weight, and the pinned sources that did not survive it (their
messages folded, none of the same source after it); pinned as the replay's policy pins
(`Budget.pins`: under Claude Code memory and skills, not the task, which its summary carries).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from inspector.model import (
    EventKind,
    Message,
    RecordedEvent,
    Role,
    SourceKind,
    ToolCallBlock,
    ToolResultBlock,
)
from inspector.model.sanitize import one_line
from inspector.shaping.pinning import FLOOR, Pins

if TYPE_CHECKING:
    from inspector.replay import Replay

RESTORED_FILES = 5
"""Claude Code restores up to this many recently read files after a compaction (docs/DESIGN.md §2.5)."""
READ_TOOLS = frozenset({"Read", "read", "file_read", "view"})


@dataclass(frozen=True, slots=True)
class Entry:
    """One message of a ledger, as the opened compaction lists it."""

    message_id: str
    role: str
    """user / assistant / tool / summary."""
    tool: str
    text: str
    """One line of its content (control characters made visible)."""
    weight: int
    source: str
    """ "task · first user task" (kind, and name when it has one)."""
    pinned: bool
    line: int | None = None
    """Its line in the transcript file."""

    def to_dict(self) -> dict[str, object]:
        return {
            "message_id": self.message_id,
            "role": self.role,
            "tool": self.tool,
            "text": self.text,
            "weight": self.weight,
            "source": self.source,
            "pinned": self.pinned,
            "line": self.line,
        }


@dataclass(frozen=True, slots=True)
class LostPin:
    """A pinned source the compaction folded: its messages, and whether the same source is in the
    ledger after it (re-read, as Claude Code re-reads memory files)."""

    source: str
    count: int
    weight: int
    survived: bool

    def to_dict(self) -> dict[str, object]:
        return {"source": self.source, "count": self.count, "weight": self.weight, "survived": self.survived}


@dataclass(frozen=True, slots=True)
class OpenedCompaction:
    """One recorded compaction, opened (see the module docstring)."""

    event: RecordedEvent
    before_request: int
    """The last request made before it."""
    after_request: int | None
    """The first request made after it (None: none was)."""
    before: tuple[Entry, ...]
    """The ledger it ended, whole."""
    before_tokens: int
    """The calibrated context of `before_request`."""
    summary: Entry | None
    preserved: tuple[Entry, ...]
    after: tuple[Entry, ...]
    """The ledger at `after_request`: the summary, the preserved messages, what the harness added."""
    after_tokens: int | None
    """The calibrated context of `after_request`."""
    folded: tuple[Entry, ...]
    """Messages of `before` that are not in the ledger after it, heaviest first."""
    lost_pins: tuple[LostPin, ...]
    restored_candidates: tuple[str, ...] = ()
    """Claude Code: the files read last before it (it restores up to `RESTORED_FILES` of them;
    the transcript does not say which)."""

    @property
    def folded_tokens(self) -> int:
        return sum(e.weight for e in self.folded)

    def headline(self) -> str:
        """ "the harness compacted (auto) after request 126: 167,117 tokens by its count; 299
        messages → 1 (summary 6,009 tokens); 299 folded (140,868 tokens); pinned lost: memory"."""
        e = self.event
        how = e.trigger or "recorded"
        pre = f"{e.pre_tokens:,} tokens by its count" if e.pre_tokens else f"{self.before_tokens:,} tokens"
        summary = f"summary {self.summary.weight:,} tokens" if self.summary is not None else "no summary"
        after = f"{len(self.after):,}" if self.after_request is not None else "?"
        lost = [p.source for p in self.lost_pins if not p.survived]
        pins = f"; pinned lost: {', '.join(lost)}" if lost else "; no pinned source lost"
        return (
            f"the harness compacted ({how}) after request {self.before_request}: {pre}; "
            f"{len(self.before):,} messages → {after} ({summary}); {len(self.folded):,} folded "
            f"({self.folded_tokens:,} tokens){pins}"
        )

    def to_dict(self) -> dict[str, object]:
        e = self.event
        return {
            "after_request": e.after_request,
            "trigger": e.trigger,
            "style": e.style,
            "pre_tokens": e.pre_tokens,
            "before_request": self.before_request,
            "first_request_after": self.after_request,
            "before_messages": len(self.before),
            "before_tokens": self.before_tokens,
            "after_messages": len(self.after),
            "after_tokens": self.after_tokens,
            "summary": self.summary.to_dict() if self.summary is not None else None,
            "preserved": [p.to_dict() for p in self.preserved],
            "folded": [f.to_dict() for f in self.folded],
            "folded_tokens": self.folded_tokens,
            "lost_pins": [p.to_dict() for p in self.lost_pins],
            "restored_candidates": list(self.restored_candidates),
        }


def _arguments(call: ToolCallBlock) -> str:
    args = call.arguments
    if isinstance(args, str):
        return args
    for key in ("command", "file_path", "path", "pattern", "query", "url", "description", "prompt"):
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return json.dumps(args, ensure_ascii=False) if args else ""


def _role(m: Message) -> str:
    if m.is_summary or m.source.kind is SourceKind.SUMMARY:
        return "summary"
    if m.role is Role.TOOL or m.is_tool_result:
        return "tool"
    return m.role.value


def _text(m: Message, width: int = 120) -> str:
    if m.has_text:
        return one_line(m.text, width)
    calls = m.tool_calls
    if calls:
        return one_line(_arguments(calls[0]), width) or calls[0].name
    for b in m.blocks:
        if isinstance(b, ToolResultBlock):
            return one_line(b.content, width) or "(empty result)"
    return "(thinking)" if m.has_reasoning else ""


def source_text(m: Message) -> str:
    kind = m.source.kind.value.replace("_", " ")
    return f"{kind} · {m.source.name}" if m.source.name else kind


def entry(m: Message, weight: int, names: dict[str, str], pins: Pins = FLOOR) -> Entry:
    calls = m.tool_calls
    tool = ""
    if calls:
        tool = calls[0].name + (f" +{len(calls) - 1}" if len(calls) > 1 else "")
    elif m.tool_results:
        first = m.tool_results[0]
        tool = first.tool_name or names.get(first.call_id, "")
    return Entry(
        message_id=m.id,
        role=_role(m),
        tool=tool,
        text=_text(m),
        weight=weight,
        source=source_text(m),
        pinned=pins(m),
        line=m.origin.line if m.origin is not None else None,
    )


def _read_files(messages: Sequence[Message], most: int) -> tuple[str, ...]:
    """The files read last (newest first, each once), from the Read calls of `messages`."""
    out: list[str] = []
    for m in reversed(messages):
        for call in reversed(m.tool_calls):
            if call.name not in READ_TOOLS or isinstance(call.arguments, str):
                continue
            path = call.arguments.get("file_path") or call.arguments.get("path")
            if isinstance(path, str) and path and path not in out:
                out.append(path)
                if len(out) >= most:
                    return tuple(one_line(p, 200) for p in out)
    return tuple(one_line(p, 200) for p in out)


def compaction_at(replay: Replay, k: int) -> RecordedEvent | None:
    """The compaction the harness recorded right before request k (k is the first request after it)."""
    return next(
        (e for e in replay.transcript.events if e.kind is EventKind.COMPACTION and e.after_request == k - 1),
        None,
    )


def opened(replay: Replay, event: RecordedEvent) -> OpenedCompaction:
    """`event` (a recorded compaction after request 1 or later) opened: see the module docstring."""
    tr = replay.transcript
    k = event.after_request
    if event.kind is not EventKind.COMPACTION or not 1 <= k <= len(tr.requests):
        raise ValueError("only a compaction recorded after a request can be opened")
    last = replay.step(k)
    weights = last.weights
    old_segment = tr.request(k).segment
    new_segment = event.segment if event.segment is not None else old_segment + 1
    by_id = tr.messages_by_id()
    before_msgs = [by_id[i] for i in tr.segments[old_segment].message_ids if i in by_id]
    names = {b.id: b.name for m in before_msgs for b in m.tool_calls}
    estimator = replay.estimator
    pins = replay.budget.pins  # pinned as the replay's layers pin: the policy's rule

    def weight(m: Message) -> int:
        w = weights.get(m.id)
        return w if w is not None else estimator.message(m)

    before = tuple(entry(m, weight(m), names, pins) for m in before_msgs)
    first_after = next((r.index for r in tr.requests if r.segment == new_segment), None)
    after_ids: set[str] = (
        set(tr.segments[new_segment].message_ids) if new_segment < len(tr.segments) else set()
    )
    after: tuple[Entry, ...] = ()
    after_tokens: int | None = None
    after_msgs: list[Message] = []
    if first_after is not None:
        step = replay.step(first_after)
        after_msgs = [m for m in tr.ledger_tuple(first_after)]
        w_after = step.weights
        after = tuple(entry(m, w_after.get(m.id, 0), names, pins) for m in after_msgs)
        after_tokens = step.context
    after_by_id = {e.message_id: e for e in after}
    summary = None
    if event.summary_id is not None:
        summary = after_by_id.get(event.summary_id)
        if summary is None and event.summary_id in by_id:
            m = by_id[event.summary_id]
            summary = entry(m, estimator.message(m), names, pins)
    preserved = tuple(
        after_by_id.get(i) or entry(by_id[i], weight(by_id[i]), names, pins)
        for i in event.preserved_ids
        if i in by_id
    )
    folded = tuple(sorted((e for e in before if e.message_id not in after_ids), key=lambda e: -e.weight))
    # pinned sources of what was folded, and whether the same source is in the new segment
    after_sources = {
        (by_id[i].source.kind, by_id[i].source.name) for i in after_ids if i in by_id and pins(by_id[i])
    }
    lost: dict[tuple[SourceKind, str], list[int]] = {}
    label: dict[tuple[SourceKind, str], str] = {}
    for m in before_msgs:
        if pins(m) and m.id not in after_ids:
            key = (m.source.kind, m.source.name)
            lost.setdefault(key, []).append(weight(m))
            label[key] = source_text(m)
    lost_pins = tuple(
        LostPin(label[key], len(ws), sum(ws), key in after_sources)
        for key, ws in sorted(lost.items(), key=lambda kv: -sum(kv[1]))
    )
    restored = _read_files(before_msgs, RESTORED_FILES) if tr.format == "claude-code" else ()
    return OpenedCompaction(
        event=event,
        before_request=k,
        after_request=first_after,
        before=before,
        before_tokens=last.context,
        summary=summary,
        preserved=preserved,
        after=after,
        after_tokens=after_tokens,
        folded=folded,
        lost_pins=lost_pins,
        restored_candidates=restored,
    )


def folded_by(replay: Replay, message_id: str) -> RecordedEvent | None:
    """The recorded compaction that folded this message: the first one after which it is no longer
    in the ledger (its segment ended with the compaction, and the new segment does not hold it)."""
    tr = replay.transcript
    for e in tr.events:
        if e.kind is not EventKind.COMPACTION or e.after_request < 1 or e.after_request > len(tr.requests):
            continue
        old = tr.request(e.after_request).segment
        new = e.segment if e.segment is not None else old + 1
        if message_id in tr.segments[old].message_ids and (
            new >= len(tr.segments) or message_id not in tr.segments[new].message_ids
        ):
            return e
    return None


def fold_sentence(replay: Replay, event: RecordedEvent) -> str:
    """ "folded by the compaction the harness recorded after request 126 (auto; 167,117 tokens by its
    count, calibrated 166,874; the ledger of 299 messages became 1, a summary of 6,009 tokens, at
    request 127)"."""
    o = opened(replay, event)
    parts = [event.trigger or "trigger not recorded"]
    if event.pre_tokens:
        parts.append(f"{event.pre_tokens:,} tokens by its count, calibrated {o.before_tokens:,}")
    else:
        parts.append(f"calibrated {o.before_tokens:,} tokens")
    if o.after_request is not None:
        summary = f", a summary of {o.summary.weight:,} tokens" if o.summary is not None else ""
        parts.append(
            f"the ledger of {len(o.before):,} messages became {len(o.after):,}{summary}, at request {o.after_request}"
        )
    return f"folded by the compaction the harness recorded after request {event.after_request} ({'; '.join(parts)})"


__all__ = [
    "RESTORED_FILES",
    "Entry",
    "LostPin",
    "OpenedCompaction",
    "compaction_at",
    "fold_sentence",
    "folded_by",
    "opened",
]
