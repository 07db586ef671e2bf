"""What the app shows, as plain data: built in worker threads from a replayed step, read by widgets.

Nothing here imports Textual and nothing here shapes: every number comes from the `Replay`, its
`Step` and the `ShapeResult` layers. Every string laid out here for the screen (tool names, one-line
summaries, headers, pinned-source names, the detail's title, id, origin, source, fates,
explanation and content) has been through `inspector.model.sanitize.visible`: a transcript's
controls are escapes (`\\x1b`), and widgets build plain `Text`/`Content` from them, never markup.
This module only lays the results out for display: one row per ledger message, one column per
pipeline stage (the raw ledger, then every layer's view), with what each layer changed in each
row, so a row reads across the pipeline.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

from inspector.model import (
    SEGMENT_EVENTS,
    EventKind,
    MediaBlock,
    Message,
    ReasoningBlock,
    RecordedEvent,
    Role,
    Source,
    SourceKind,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Transcript,
)
from inspector.model.sanitize import one_line, visible
from inspector.replay.folded import OpenedCompaction
from inspector.shaping import Action, Decision, LayerResult, Policy, ShapeResult, explain
from inspector.shaping.budget import parse_window
from inspector.shaping.pinning import FLOOR, Pins
from inspector.shaping.policy import pin_reason, pins_of
from inspector.tokens.calibration import OVERHEAD_ID

SIMULATED_COMPACTION_LAYERS = frozenset({"old_history_snip", "auto_compact"})
"""Layers whose firing the sparkline marks as a simulated compaction."""


# --------------------------------------------------------------------------------------------
# Numbers and words
# --------------------------------------------------------------------------------------------


def tokens(n: int) -> str:
    """1,234,567 (the app always shows exact figures, with thousands separators)."""
    return f"{n:,}"


def compact_tokens(n: int) -> str:
    """A short figure for narrow cells: 987, 12.3k, 123k, 1.23M."""
    if n < 1_000:
        return str(n)
    if n < 10_000:
        return f"{n / 1000:.1f}k"
    if n < 1_000_000:
        return f"{n // 1000}k"
    return f"{n / 1_000_000:.2f}M"


def role_label(message: Message) -> str:
    """user / assistant / tool / system / summary, as the columns show it."""
    if message.is_summary or message.source.kind is SourceKind.SUMMARY:
        return "summary"
    if message.role is Role.TOOL or message.is_tool_result:
        return "tool"
    return message.role.value


def _argument_summary(arguments: dict[str, object] | str) -> str:
    if isinstance(arguments, str):
        return arguments
    for key in ("command", "file_path", "path", "pattern", "query", "url", "description", "prompt"):
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value
    for value in arguments.values():
        if isinstance(value, str) and value.strip():
            return value
    return json.dumps(arguments, ensure_ascii=False) if arguments else ""


def tool_name(message: Message, call_names: dict[str, str]) -> str:
    """The tool a message calls or answers ("Bash", "Read +2"), or "", as one visible line."""
    calls = message.tool_calls
    if calls:
        more = f" +{len(calls) - 1}" if len(calls) > 1 else ""
        return visible(calls[0].name, newlines=False) + more
    results = message.tool_results
    if results:
        first = results[0]
        return visible(first.tool_name or call_names.get(first.call_id, ""), newlines=False)
    return ""


def summary_line(message: Message, width: int = 200) -> str:
    """A one-line summary of a message, control characters made visible (never markup).

    Its text if it has any; else its first tool call's main argument, its tool result, its
    thinking (marked, and marked signed), or its media.
    """
    if message.has_text:
        return one_line(message.text, width)
    calls = message.tool_calls
    if calls:
        return one_line(_argument_summary(calls[0].arguments), width) or one_line(calls[0].name, width)
    for block in message.blocks:
        if isinstance(block, ToolResultBlock):
            text = one_line(block.content, width)
            if not text and block.media:
                return one_line(f"[{block.media} media]", width)
            return text or "(empty result)"
    for block in message.blocks:
        if isinstance(block, ReasoningBlock):
            kind = "signed thinking" if block.signed else "thinking"
            if block.redacted:
                return f"({kind}, redacted)"
            body = one_line(block.text, width)
            return f"({kind}) {body}" if body else f"({kind})"
        if isinstance(block, MediaBlock):
            return one_line(f"[{block.type} {block.media_type}]".replace(" ]", "]"), width)
    return ""


def message_content(message: Message) -> str:
    """The full content of a message as plain text, control characters made visible.

    Tool calls show their arguments, thinking is marked (and marked signed when it is).
    """
    parts: list[str] = []
    for block in message.blocks:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ReasoningBlock):
            marks = ["signed" if block.signed else "", "redacted" if block.redacted else ""]
            label = ", ".join(m for m in marks if m)
            head = f"── thinking ({label}) ──" if label else "── thinking ──"
            body = block.text if block.text else "(its text is not in the transcript)"
            parts.append(f"{head}\n{body}")
        elif isinstance(block, ToolCallBlock):
            args = (
                block.arguments
                if isinstance(block.arguments, str)
                else json.dumps(block.arguments, indent=2, ensure_ascii=False)
            )
            parts.append(f"── tool call {block.name} ({block.id}) ──\n{args}")
        elif isinstance(block, ToolResultBlock):
            name = f"{block.tool_name} " if block.tool_name else ""
            error = " · error" if block.is_error else ""
            media = f" · {block.media} media" if block.media else ""
            parts.append(f"── tool result {name}({block.call_id}){error}{media} ──\n{block.content}")
        elif isinstance(block, MediaBlock):
            parts.append(f"[{block.type} {block.media_type} · {block.size_bytes:,} bytes]")
    return visible("\n\n".join(parts))


def searchable_text(message: Message) -> str:
    """Everything a search may match in a message: text, thinking, tool arguments and results."""
    parts: list[str] = []
    for block in message.blocks:
        if isinstance(block, TextBlock | ReasoningBlock):
            parts.append(block.text)
        elif isinstance(block, ToolCallBlock):
            parts.append(block.name)
            parts.append(block.arguments if isinstance(block.arguments, str) else json.dumps(block.arguments))
        elif isinstance(block, ToolResultBlock):
            parts.append(block.content)
    return "\n".join(parts)


def display_path(path: str, transcript_path: str) -> str:
    """A file shown relative to the transcript's folder (never an absolute temporary path)."""
    base = os.path.dirname(os.path.abspath(transcript_path))
    full = os.path.abspath(path)
    try:
        rel = os.path.relpath(full, base)
    except ValueError:
        return os.path.basename(path)
    return os.path.basename(path) if rel.startswith("..") else rel


# --------------------------------------------------------------------------------------------
# The row model
# --------------------------------------------------------------------------------------------


class CellState(StrEnum):
    """What one column shows in one row."""

    SAME = "same"
    """Present, as the column before had it."""
    TRUNCATED = "truncated"
    CLEARED = "cleared"
    REMOVED = "removed"
    """This layer removed it: a visible gap."""
    SUMMARIZED = "summarized"
    """This layer folded it into a summary: a visible gap."""
    SUMMARY = "summary"
    """A message this layer inserted (the auto-compact summary), in place of the first folded row."""
    GONE = "gone"
    """Removed or folded by an earlier layer (or not yet inserted): blank."""


ACTION_STATE: dict[Action, CellState] = {
    Action.TRUNCATED: CellState.TRUNCATED,
    Action.CLEARED: CellState.CLEARED,
    Action.REMOVED: CellState.REMOVED,
    Action.SUMMARIZED: CellState.SUMMARIZED,
}


@dataclass(frozen=True, slots=True)
class Cell:
    state: CellState
    message: Message | None
    """The version of the message in this column's view (None for a gap)."""
    weight: int
    reason: str = ""


GONE = Cell(CellState.GONE, None, 0)


@dataclass(frozen=True, slots=True, repr=False)
class Column:
    """One stage of the pipeline as a column: its header and the rows it changed."""

    name: str
    label: str
    fired: bool
    header: str
    """ "tool output clear · fired · 154,316 → 103,072 · 74 cleared" or "… · idle · reason"."""
    short_header: str = ""
    """The same with compact figures ("154k → 103k"), for narrow columns."""
    changes: dict[int, Cell] = field(default_factory=dict)
    """Row -> cell, only for rows this column shows differently from the column before."""


@dataclass(frozen=True, slots=True)
class PinnedSource:
    """Pinned messages of one source (kind and name) at one request."""

    kind: str
    name: str
    priority: int
    count: int
    weight: int
    share: float
    """Fraction of the request's calibrated context."""
    why: str = ""
    """Why it is pinned, in the harness's terms (`inspector.shaping.policy.pin_reason`)."""


@dataclass(frozen=True, slots=True, repr=False)
class StepView:
    """One request laid out for display."""

    index: int
    total: int
    policy: str
    window: int | None
    window_source: str
    context: int
    reported: int | None
    predicted: int | None
    sent: int
    input_tokens: int
    lines: tuple[tuple[str, int], ...]
    """Budget lines (label, tokens), highest first (Budget.lines())."""
    trigger: int
    target: int
    rows: tuple[Message | None, ...]
    """The raw ledger (without the overhead pseudo-message); None for a row only a layer has."""
    weights: tuple[int, ...]
    """Calibrated weight of each row's raw message."""
    columns: tuple[Column, ...]
    """The raw ledger first, then one column per layer; the last is what is sent."""
    max_weight: int
    call_names: dict[str, str]
    pinned: tuple[PinnedSource, ...]
    row_of: dict[str, int]
    """Message id -> row (raw messages and inserted ones)."""
    compaction_before: RecordedEvent | None = None
    """A compaction the harness recorded right before this request (it began this ledger segment)."""
    cleared_before: RecordedEvent | None = None
    """A fresh context the harness began right before this request (`EventKind.CONTEXT_CLEARED`:
    a new ledger segment, nothing summarized)."""
    errors_before: tuple[RecordedEvent, ...] = ()
    """Failed model calls recorded between the request before and this one (`EventKind.API_ERROR`:
    no requests)."""
    errors_after: tuple[RecordedEvent, ...] = ()
    """Failed model calls recorded after this request, before the next one (if the events given
    reach that far)."""
    result: ShapeResult | None = None
    """The pipeline's result at this request (for the explanations)."""
    harness: tuple[int, bool] | None = None
    """What the policy's harness estimated before this request, with its own estimator, and
    whether that is over its trigger (`Replay.harness_estimate`); None: not known yet."""
    decides_as_harness: bool = False
    """The layers decided with the harness's own estimate (`Replay.decides_as_harness`)."""
    cost: str = ""
    """What the request cost, and the session so far ("cost $0.06 · $10.23 so far"), or why not."""
    priced: bool = False
    """Whether `cost` is a price (not why there is none: "no price for MODEL")."""
    timestamp: str | None = None
    """When the request was made (its response's timestamp, ISO 8601), if the transcript says."""
    model: str | None = None
    gap_s: float | None = None
    """Seconds since the request before it (None: the first, or no timestamps)."""
    opened: OpenedCompaction | None = None
    """The compaction the harness recorded right before this request, opened (`replay.folded`)."""
    pins: Pins = FLOOR
    """Which messages the policy pins: the rule its layers applied (`Budget.pins`), for the ⚑."""

    def cell(self, column: int, row: int) -> Cell:
        """What `column` shows in `row`."""
        if column == 0:
            raw = self.rows[row]
            return Cell(CellState.SAME, raw, self.weights[row]) if raw is not None else GONE
        for c in range(column, 0, -1):
            hit = self.columns[c].changes.get(row)
            if hit is None:
                continue
            if c == column:
                return hit
            if hit.state in (CellState.REMOVED, CellState.SUMMARIZED, CellState.GONE):
                return GONE
            return Cell(CellState.SAME, hit.message, hit.weight)
        return self.cell(0, row)

    def message_at(self, row: int) -> Message | None:
        """The raw message of a row, or the first version a layer inserted there."""
        if not 0 <= row < len(self.rows):
            return None
        raw = self.rows[row]
        if raw is not None:
            return raw
        for c in range(1, len(self.columns)):
            hit = self.columns[c].changes.get(row)
            if hit is not None and hit.message is not None:
                return hit.message
        return None

    @property
    def fired(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns[1:] if c.fired)


def _counts(layer: LayerResult) -> str:
    parts = [
        f"{n:,} {word}"
        for n, word in (
            (layer.truncated, "truncated"),
            (layer.cleared, "cleared"),
            (layer.removed, "removed"),
            (layer.summarized, "summarized"),
        )
        if n
    ]
    return " · ".join(parts)


def column_header(layer: LayerResult, short: bool = False) -> str:
    """The header of a layer's column: fired with its numbers, or idle with the reason (which may
    quote a tool's name: made visible, one line)."""
    figure = compact_tokens if short else tokens
    if layer.fired:
        head = f"{layer.label} · fired · {figure(layer.tokens_before)} → {figure(layer.tokens_after)}"
        counts = _counts(layer)
        return visible(f"{head} · {counts}" if counts else head, newlines=False)
    return visible(f"{layer.label} · idle · {layer.reason}", newlines=False)


def _pinned_sources(
    ledger: Sequence[Message], weights: dict[str, int], context: int, policy: Policy | str = ""
) -> tuple[PinnedSource, ...]:
    groups: dict[tuple[str, str, int], list[int]] = {}
    whys: dict[tuple[str, str, int], str] = {}
    pinned = pins_of(policy)  # the rule the policy's layers apply (`Budget.pins`)
    for m in ledger:
        if not pinned(m):
            continue
        name = visible(m.source.name, newlines=False) or ("prompt overhead" if m.id == OVERHEAD_ID else "")
        key = (m.source.kind.value, name, m.source.priority)
        groups.setdefault(key, []).append(weights.get(m.id, 0))
        if key not in whys:
            whys[key] = visible(pin_reason(policy, m.source), newlines=False)
    out = [
        PinnedSource(
            kind,
            name,
            prio,
            len(ws),
            sum(ws),
            (sum(ws) / context) if context else 0.0,
            whys[(kind, name, prio)],
        )
        for (kind, name, prio), ws in groups.items()
    ]
    out.sort(key=lambda p: (-p.priority, -p.weight))
    return tuple(out)


def build_rows(
    raw: Sequence[Message], layers: Sequence[LayerResult]
) -> tuple[list[Message | None], list[dict[str, Message]], dict[str, int]]:
    """Rows: the raw messages, plus a row for any inserted message that takes no folded row's place.

    A message a layer inserts (the auto-compact summary) takes the row of the first raw message it
    folded after the view message before it; one with no folded row gets a row of its own after
    that message. Returns the rows, per layer the messages it inserted, and id -> row (inserted
    messages map to the row they sit in).
    """
    position = {m.id: i for i, m in enumerate(raw)}
    placed: dict[str, tuple[str, bool]] = {}
    """Inserted id -> (raw id it sits on or after, whether it has a row of its own)."""
    inserted: list[dict[str, Message]] = []
    for layer in layers:
        here: dict[str, Message] = {}
        view = layer.view
        # Most layers insert nothing: find the inserted messages in one fast pass first.
        new_at = [
            i
            for i, m in enumerate(view)
            if m.id not in position and m.id != OVERHEAD_ID and m.id not in placed
        ]
        if new_at:
            folded = sorted(
                position[d.message_id]
                for d in layer.decisions
                if d.action is Action.SUMMARIZED and d.message_id in position
            )
            used: set[int] = set()
            for i in new_at:
                m = view[i]
                previous = next((position[v.id] for v in reversed(view[:i]) if v.id in position), -1)
                here[m.id] = m
                anchor = next((p for p in folded if p > previous and p not in used), None)
                if anchor is not None:
                    used.add(anchor)
                    placed[m.id] = (raw[anchor].id, False)
                else:
                    placed[m.id] = (raw[previous].id if previous >= 0 else "", True)
        inserted.append(here)
    extra_after: dict[str, list[str]] = {}
    for mid, (after, own) in placed.items():
        if own:
            extra_after.setdefault(after, []).append(mid)
    rows: list[Message | None] = []
    row_of: dict[str, int] = {}

    def add_extra(key: str) -> None:
        for mid in extra_after.get(key, ()):
            row_of[mid] = len(rows)
            rows.append(None)

    add_extra("")
    for m in raw:
        row_of[m.id] = len(rows)
        rows.append(m)
        add_extra(m.id)
    for mid, (after, own) in placed.items():
        if not own:
            row_of[mid] = row_of[after]
    return rows, inserted, row_of


def build_step_view(
    *,
    index: int,
    total: int,
    policy: str,
    window: int | None,
    window_source: str,
    ledger: Sequence[Message],
    pin_policy: Policy | None = None,
    weights: dict[str, int],
    layers: Sequence[LayerResult],
    context: int,
    reported: int | None,
    predicted: int | None,
    sent: int,
    input_tokens: int,
    lines: Iterable[tuple[str, int]],
    trigger: int,
    target: int,
    events: Sequence[RecordedEvent] = (),
    result: ShapeResult | None = None,
    harness: tuple[int, bool] | None = None,
    decides_as_harness: bool = False,
    cost: str = "",
    priced: bool = False,
    timestamp: str | None = None,
    model: str | None = None,
    previous_timestamp: str | None = None,
    opened: OpenedCompaction | None = None,
) -> StepView:
    """Lay one replayed request out as rows and columns (see the module docstring)."""
    raw = [m for m in ledger if m.id != OVERHEAD_ID]
    rows, inserted, row_of = build_rows(raw, layers)
    row_weights = [weights.get(m.id, 0) if m is not None else 0 for m in rows]
    call_names = {
        b.id: b.name
        for m in raw
        if m.role is Role.ASSISTANT
        for b in m.blocks
        if isinstance(b, ToolCallBlock)
    }

    columns: list[Column] = [
        Column(
            name="raw",
            label="raw ledger",
            fired=False,
            header=f"raw ledger · {len(raw):,} {'message' if len(raw) == 1 else 'messages'} · {tokens(input_tokens)} tokens",
        )
    ]
    for layer, here in zip(layers, inserted, strict=True):
        changes: dict[int, Cell] = {}
        changed = [d for d in layer.decisions if d.action.changed]
        wanted = {d.message_id for d in changed}
        present = {m.id: m for m in layer.view if m.id in wanted} if wanted else {}
        own: dict[str, Decision] = {d.message_id: d for d in layer.decisions if d.message_id in here}
        for d in changed:
            if d.message_id in here:
                continue
            state = ACTION_STATE.get(d.action)
            row = row_of.get(d.message_id)
            if state is None or row is None:
                continue
            kept = present.get(d.message_id)
            if state in (CellState.REMOVED, CellState.SUMMARIZED):
                if kept is not None:
                    # Changed but kept (snip dropped an exchange's calls and kept its text).
                    changes[row] = Cell(CellState.TRUNCATED, kept, d.tokens_after, d.reason)
                else:
                    changes[row] = Cell(state, None, 0, d.reason)
            else:
                changes[row] = Cell(state, kept, d.tokens_after, d.reason)
        for mid, m in here.items():
            mine = own.get(mid)
            changes[row_of[mid]] = Cell(
                CellState.SUMMARY, m, mine.tokens_after if mine else 0, mine.reason if mine else ""
            )
        columns.append(
            Column(
                name=layer.name,
                label=layer.label,
                fired=layer.fired,
                header=column_header(layer),
                short_header=column_header(layer, short=True),
                changes=changes,
            )
        )

    compaction = next(
        (e for e in events if e.kind is EventKind.COMPACTION and e.after_request == index - 1), None
    )
    cleared = next(
        (e for e in events if e.kind is EventKind.CONTEXT_CLEARED and e.after_request == index - 1), None
    )
    errors = [e for e in events if e.kind is EventKind.API_ERROR]
    return StepView(
        index=index,
        total=total,
        policy=policy,
        window=window,
        window_source=window_source,
        context=context,
        reported=reported,
        predicted=predicted,
        sent=sent,
        input_tokens=input_tokens,
        lines=tuple(lines),
        trigger=trigger,
        target=target,
        rows=tuple(rows),
        weights=tuple(row_weights),
        columns=tuple(columns),
        max_weight=max(row_weights, default=0),
        call_names=call_names,
        pinned=_pinned_sources(ledger, weights, context, pin_policy if pin_policy is not None else policy),
        row_of=row_of,
        compaction_before=compaction,
        cleared_before=cleared,
        errors_before=tuple(e for e in errors if e.after_request == index - 1),
        errors_after=tuple(e for e in errors if e.after_request == index),
        result=result,
        harness=harness,
        decides_as_harness=decides_as_harness,
        cost=cost,
        priced=priced,
        timestamp=timestamp,
        model=model,
        gap_s=seconds_between(previous_timestamp, timestamp),
        opened=opened,
        pins=result.budget.pins if result is not None else pins_of(pin_policy if pin_policy is not None else policy),
    )


def _instant(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def seconds_between(earlier: str | None, later: str | None) -> float | None:
    """Seconds from one ISO timestamp to another (None when either is missing or unreadable)."""
    a, b = _instant(earlier), _instant(later)
    return None if a is None or b is None else (b - a).total_seconds()


def clock(stamp: str | None) -> str:
    """ "2026-02-12 16:13:21" (UTC, as the transcript records it), or ""."""
    when = _instant(stamp)
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if when is not None else ""


def duration(seconds: float) -> str:
    """4 -> "4s", 95 -> "1m35s", 7300 -> "2h01m", 200000 -> "2d07h"."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


# --------------------------------------------------------------------------------------------
# The detail of one message
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fate:
    """What one layer did to the selected message."""

    layer: str
    state: CellState
    text: str


@dataclass(frozen=True, slots=True, repr=False)
class Detail:
    """The selected message: who, where from, how heavy, what each layer did, and its content."""

    request: int
    row: int
    message_id: str
    title: str
    origin: str
    weight: int
    share: float
    source: str
    fates: tuple[Fate, ...]
    explanation: str
    content: str


def fate_text(cell: Cell, previous_weight: int) -> str:
    if cell.state is CellState.SAME:
        return f"unchanged ({tokens(cell.weight)} tokens)"
    if cell.state is CellState.GONE:
        return "not in this view (removed earlier)"
    if cell.state is CellState.SUMMARY:
        return f"replaced by the summary ({tokens(cell.weight)} tokens): {cell.reason}"
    after = 0 if cell.state in (CellState.REMOVED, CellState.SUMMARIZED) else cell.weight
    return f"{cell.state.value} {tokens(previous_weight)} → {tokens(after)}: {cell.reason}"


def explanation(view: StepView, row: int) -> str:
    """What the pipeline did to the message of `row` and why: Replay.explain's sentence."""
    message = view.message_at(row)
    if message is None:
        return ""
    if view.rows[row] is not message:
        cell = next(
            (
                view.columns[c].changes[row]
                for c in range(1, len(view.columns))
                if row in view.columns[c].changes
            ),
            None,
        )
        reason = f": {cell.reason}" if cell is not None and cell.reason else ""
        return f"request {view.index}: inserted by the pipeline (not in the ledger){reason}"
    if view.result is None:
        return ""
    whys = {(p.kind, p.name, p.priority): p.why for p in view.pinned}

    def why(src: Source) -> str:
        key = (src.kind.value, visible(src.name, newlines=False), src.priority)
        return whys.get(key) or visible(pin_reason(view.policy, src), newlines=False)

    return f"request {view.index}: {explain(view.result, message.id, why)}"


def build_detail(view: StepView, row: int, transcript: Transcript) -> Detail | None:
    """The detail pane's content for `row` of `view`."""
    message = view.message_at(row)
    if message is None:
        return None
    weight = view.weights[row] if view.rows[row] is not None else view.cell(len(view.columns) - 1, row).weight
    fates: list[Fate] = []
    previous = weight
    for c in range(1, len(view.columns)):
        cell = view.cell(c, row)
        fates.append(
            Fate(view.columns[c].label, cell.state, visible(fate_text(cell, previous), newlines=False))
        )
        if cell.state not in (CellState.GONE, CellState.REMOVED, CellState.SUMMARIZED):
            previous = cell.weight
    tool = tool_name(message, view.call_names)
    title = " · ".join(p for p in (role_label(message), tool) if p)
    origin = (
        f"{display_path(message.origin.file, transcript.path)}:{message.origin.line}"
        if message.origin is not None
        else "(no origin: made by the pipeline)"
    )
    src = message.source
    source = f"{src.kind.value}{' · ' + src.name if src.name else ''} · priority {src.priority}"
    if view.pins(message):
        source += " · pinned"
    return Detail(
        request=view.index,
        row=row,
        message_id=visible(message.id, newlines=False),
        title=visible(title, newlines=False),
        origin=visible(origin, newlines=False),
        weight=weight,
        share=(weight / view.context) if view.context else 0.0,
        source=visible(source, newlines=False),
        fates=tuple(fates),
        explanation=visible(explanation(view, row)),
        content=message_content(message),
    )


# --------------------------------------------------------------------------------------------
# The whole session, for the sparkline
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, repr=False)
class SessionView:
    """Per-request context sizes and the recorded events to mark on them."""

    contexts: tuple[int, ...]
    recorded: frozenset[int]
    """Requests after which the harness recorded an event that began a new ledger segment (a
    compaction, or a fresh context: `cleared`), by RecordedEvent.after_request."""
    simulated: frozenset[int] = frozenset()
    """Requests where snip or auto compact fired in the replay (filled in by the scan)."""
    scanned: int = 0
    """How many requests the scan has looked at so far."""
    cleared: frozenset[int] = frozenset()
    """Those of `recorded` where the harness began a fresh context without compacting."""
    errors: frozenset[int] = frozenset()
    """Requests after which a failed model call was recorded (an API error: no request)."""
    sent: tuple[int, ...] = ()
    """What the pipeline sends at requests 1..len(sent) (filled in by the scan)."""


def recorded_compactions(events: Iterable[RecordedEvent]) -> frozenset[int]:
    return frozenset(
        e.after_request for e in events if e.kind is EventKind.COMPACTION and e.after_request > 0
    )


def session_view(contexts: tuple[int, ...], events: Iterable[RecordedEvent]) -> SessionView:
    """The sparkline's data before the scan: the contexts and the recorded events' requests
    (events before request 1 have no bar to be marked under)."""
    placed = [e for e in events if e.after_request > 0]
    compacted = {e.after_request for e in placed if e.kind is EventKind.COMPACTION}
    cleared = {e.after_request for e in placed if e.kind is EventKind.CONTEXT_CLEARED}
    return SessionView(
        contexts=contexts,
        recorded=frozenset(e.after_request for e in placed if e.kind in SEGMENT_EVENTS),
        cleared=frozenset(cleared - compacted),
        errors=frozenset(e.after_request for e in placed if e.kind is EventKind.API_ERROR),
    )


def event_notes(view: StepView) -> list[str]:
    """What the gauge says of the events recorded around this request, besides a compaction:
    a fresh context begun right before it, failed model calls before and after it (the provider's
    text made visible, one line, cut)."""
    out: list[str] = []
    if view.cleared_before is not None:
        out.append("◇ the harness began a fresh context (nothing summarized) right before this request")
    for where, errors in (("before", view.errors_before), ("after", view.errors_after)):
        if not errors:
            continue
        what = "an API error" if len(errors) == 1 else f"{len(errors)} API errors"
        last = errors[-1].detail
        said = f': "{one_line(" ".join(last.split()), 60)}"' if last else ""
        out.append(f"× {what} {where} this request{said}")
    return out


def is_event(k: int, fired: dict[int, frozenset[str]], recorded: frozenset[int]) -> bool:
    """Whether `n`/`N` stop at request k: a layer starts firing there, or a compaction (or a fresh
    context) was recorded right before it (the request begins a new ledger segment)."""
    if (k - 1) in recorded:
        return True
    here = fired.get(k)
    if here is None:
        return False
    before = fired.get(k - 1, frozenset())
    return bool(here - before)


__all__ = [
    "GONE",
    "OVERHEAD_ID",
    "SIMULATED_COMPACTION_LAYERS",
    "Cell",
    "CellState",
    "Column",
    "Detail",
    "Fate",
    "PinnedSource",
    "SessionView",
    "StepView",
    "build_detail",
    "build_step_view",
    "clock",
    "column_header",
    "compact_tokens",
    "display_path",
    "duration",
    "event_notes",
    "explanation",
    "is_event",
    "message_content",
    "parse_window",
    "recorded_compactions",
    "role_label",
    "searchable_text",
    "seconds_between",
    "session_view",
    "summary_line",
    "tokens",
]
