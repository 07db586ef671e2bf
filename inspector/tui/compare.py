"""Compare mode: two policies' final (sent) views of the same request, side by side.

The rows are the ledger's messages (plus the summaries either side inserted), aligned across
three columns: the raw ledger, what policy A sends, what policy B sends. A message one side removed
leaves a gap on that side; cleared, truncated and summarized messages are marked as in the main
columns. The numbers come from `inspector.replay.compare.compare` and the two replays' steps.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import ClassVar

from textual import getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message as TextualMessage
from textual.screen import Screen
from textual.widgets import Static

from inspector.model import ToolCallBlock
from inspector.model.sanitize import one_line, visible
from inspector.replay import Replay, ReplayError, Step
from inspector.replay.cache import CacheCost, cache_cost
from inspector.replay.compare import Comparison, Side, compare
from inspector.shaping import LayerResult, PolicyError
from inspector.tokens.calibration import OVERHEAD_ID
from inspector.tui.text import line, lines, notify
from inspector.tui.viewmodel import (
    Cell,
    CellState,
    Column,
    StepView,
    build_rows,
    tokens,
)
from inspector.tui.widgets.columns import LedgerColumns
from inspector.tui.widgets.keybar import KeyBar

FATE_STATE = {
    "removed": CellState.REMOVED,
    "summarized": CellState.SUMMARIZED,
    "cleared": CellState.CLEARED,
    "truncated": CellState.TRUNCATED,
}


def side_header(side: Side) -> str:
    """ "opencollab · sends 153,210 of 230,118 · fired: tool output clear (…)"."""
    fired = ", ".join(side.labels.get(n, n) for n in side.fired) if side.fired else "nothing fired"
    return visible(
        f"{side.policy} · sends {tokens(side.sent_tokens)} of {tokens(side.input_tokens)} · {fired}",
        newlines=False,
    )


def side_summary(side: Side) -> str:
    """The long form, for the header panel: every layer that fired and why."""
    window = f"window {tokens(side.window)}" if side.window else "window unknown"
    lines = [
        f"{side.policy} · {window} · trigger {tokens(side.trigger)} · target {tokens(side.target)}",
        f"sends {tokens(side.sent_tokens)} tokens of {tokens(side.input_tokens)} "
        f"({tokens(side.saved_tokens)} saved) · {side.messages_sent:,} messages",
    ]
    counts = " · ".join(f"{n:,} {word}" for word, n in side.counts.items() if n)
    if counts:
        lines.append(counts)
    if side.fired:
        for name in side.fired:
            lines.append(f"fired {side.labels.get(name, name)}: {one_line(side.reasons.get(name, ''), 200)}")
    else:
        idle = "; ".join(f"{side.labels.get(n, n)}: {one_line(r, 80)}" for n, r in side.reasons.items())
        lines.append(f"nothing fired ({idle})" if idle else "nothing fired")
    return "\n".join(lines)


def _final_cells(step: Step, side: Side) -> dict[str, Cell]:
    """Ledger id -> this side's cell for it (every ledger message)."""
    weights = step.weights
    final = {m.id: m for m in step.result.final}
    reasons: dict[str, str] = {}
    after: dict[str, int] = {}
    for d in step.result.decisions:
        if d.action.changed:
            reasons[d.message_id] = d.reason
            after[d.message_id] = d.tokens_after
    fate: dict[str, CellState] = {}
    for word, state in FATE_STATE.items():
        for mid in getattr(side, word):
            fate[mid] = state
    cells: dict[str, Cell] = {}
    for m in step.ledger:
        if m.id == OVERHEAD_ID:
            continue
        state = fate.get(m.id, CellState.SAME)
        reason = reasons.get(m.id, "")
        if state in (CellState.REMOVED, CellState.SUMMARIZED):
            cells[m.id] = Cell(state, None, 0, reason)
        elif state is CellState.SAME:
            cells[m.id] = Cell(state, final.get(m.id, m), weights.get(m.id, 0))
        else:
            cells[m.id] = Cell(state, final.get(m.id, m), after.get(m.id, weights.get(m.id, 0)), reason)
    return cells


def build_compare_view(comparison: Comparison, step_a: Step, step_b: Step, total: int) -> StepView:
    """Three aligned columns: the raw ledger, side A's final view, side B's final view."""
    raw = [m for m in step_a.ledger if m.id != OVERHEAD_ID]
    finals = [
        LayerResult(
            name=f"side-{n}",
            label=side.policy,
            view=step.result.final,
            tokens_before=step.result.input_tokens,
            tokens_after=step.result.sent_tokens,
            fired=bool(side.fired),
            reason="",
            decisions=step.result.decisions,
        )
        for n, side, step in (("a", comparison.a, step_a), ("b", comparison.b, step_b))
    ]
    rows, inserted, row_of = build_rows(raw, finals)
    weights = step_a.weights
    row_weights = [weights.get(m.id, 0) if m is not None else 0 for m in rows]
    columns = [
        Column(
            name="raw",
            label="raw ledger",
            fired=False,
            header=f"raw ledger · {len(raw):,} messages · {tokens(step_a.result.input_tokens)} tokens",
        )
    ]
    for n, side, step, here in (
        ("a", comparison.a, step_a, inserted[0]),
        ("b", comparison.b, step_b, inserted[1]),
    ):
        cells = _final_cells(step, side)
        changes: dict[int, Cell] = {}
        for m in raw:
            changes[row_of[m.id]] = cells[m.id]
        for row, message in enumerate(rows):
            if message is None:
                changes[row] = Cell(CellState.GONE, None, 0)
        summary_sizes = {d.message_id: d.tokens_after for d in step.result.decisions}
        for mid, m in here.items():
            changes[row_of[mid]] = Cell(CellState.SUMMARY, m, summary_sizes.get(mid, 0), "inserted summary")
        header = side_header(side)
        columns.append(
            Column(
                name=f"side-{n}",
                label=side.policy,
                fired=bool(side.fired),
                header=header,
                short_header=header,
                changes=changes,
            )
        )
    return StepView(
        index=comparison.step,
        total=total,
        policy=f"{comparison.a.policy} vs {comparison.b.policy}",
        window=comparison.a.window,
        window_source="",
        context=step_a.context,
        reported=step_a.reported,
        predicted=step_a.predicted,
        sent=comparison.a.sent_tokens,
        input_tokens=step_a.result.input_tokens,
        lines=tuple(step_a.budget.lines()),
        trigger=step_a.budget.trigger,
        target=step_a.budget.target,
        rows=tuple(rows),
        weights=tuple(row_weights),
        columns=tuple(columns),
        max_weight=max(row_weights, default=0),
        call_names={b.id: b.name for m in raw for b in m.blocks if isinstance(b, ToolCallBlock)},
        pinned=(),
        row_of=row_of,
        result=None,
    )


class CompareColumns(LedgerColumns):
    """The raw ledger, then each policy's final (sent) view."""

    every_column_sent = True


@dataclass
class CompareReady(TextualMessage):
    comparison: Comparison
    view: StepView
    replay_b: Replay
    generation: int


@dataclass
class CompareFailed(TextualMessage):
    reason: str
    generation: int


@dataclass
class CacheCostReady(TextualMessage):
    """Both policies' prompt-cache cost over the whole session (every request shaped)."""

    a: CacheCost
    b: CacheCost


def cache_line(cost: CacheCost | None) -> str:
    """ "prompt cache over the session: 9 prefix rewrites · 66,526 tokens re-billed"."""
    if cost is None:
        return "prompt cache over the session: computing…"
    return (
        f"prompt cache over the session: {cost.rewrites:,} prefix rewrites · "
        f"{cost.rebilled_tokens:,} tokens re-billed · {cost.cached_tokens:,} served from cache"
    )


class CompareScreen(Screen[None]):
    """The main screen's request under its policy and another, side by side (`[`/`]` step both)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left_square_bracket", "step(-1)", "Prev req", tooltip="Previous request (both sides)"),
        Binding("right_square_bracket", "step(1)", "Next req", tooltip="Next request (both sides)"),
        Binding("escape", "close", "Back"),
        Binding("q", "close", "Back", show=False),
    ]

    AUTO_FOCUS = "#compare-columns"

    columns = getters.query_one("#compare-columns", CompareColumns)
    head_a = getters.query_one("#compare-a", Static)
    head_b = getters.query_one("#compare-b", Static)

    def __init__(self, replay: Replay, policy_b: str, request: int, lock: threading.Lock) -> None:
        super().__init__(id="compare")
        self.replay = replay
        self.policy_b = policy_b
        self.replay_b: Replay | None = None
        self.request = request
        self.replay_lock = lock
        self.generation = 0
        self.comparison: Comparison | None = None
        self.cache: tuple[CacheCost, CacheCost] | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="compare-head"):
            yield Static("", id="compare-a", markup=False)
            yield Static("", id="compare-b", markup=False)
        yield CompareColumns(id="compare-columns")
        yield KeyBar()

    def on_mount(self) -> None:
        self.head_a.border_title = line("A")
        self.head_b.border_title = line("B")
        self.columns.border_title = line("compare")
        self.head_a.update(line(f"shaping request {self.request} under {self.replay.policy.name}…"))
        self.head_b.update(line(f"shaping request {self.request} under {self.policy_b}…"))
        self.run_compare(self.request, self.generation)

    @work(
        thread=True, exclusive=True, group="compare", exit_on_error=False, description="compare two policies"
    )
    def run_compare(self, k: int, generation: int) -> None:
        try:
            with self.replay_lock:
                replay_b = self.replay_b or self.replay.with_settings(policy=self.policy_b)
                comparison = compare(self.replay, replay_b, k)
                step_a, step_b = self.replay.step(k), replay_b.step(k)
                view = build_compare_view(comparison, step_a, step_b, len(self.replay))
        except (PolicyError, ReplayError, ValueError) as exc:
            self.post_message(CompareFailed(str(exc), generation))
            return
        self.post_message(CompareReady(comparison, view, replay_b, generation))

    @on(CompareReady)
    def compare_ready(self, event: CompareReady) -> None:
        if event.generation != self.generation:
            return
        if self.replay_b is None:
            self.run_cache_cost(event.replay_b)
        self.replay_b = event.replay_b
        self.comparison = event.comparison
        c = event.comparison
        self._show_heads()
        self.head_a.border_title = line(f"A · {c.a.policy}")
        self.head_b.border_title = line(f"B · {c.b.policy}")
        diff = c.sent_difference
        more = "A sends more" if diff > 0 else "B sends more" if diff < 0 else "same size"
        self.columns.border_title = line(
            f"compare · request {c.step}/{len(self.replay):,} · {more} ({abs(diff):,})"
        )
        self.columns.border_subtitle = line(
            f"only A sends {len(c.only_in_a):,} · only B sends {len(c.only_in_b):,} · "
            "○ cleared ✂ truncated ✗ removed Σ summarized"
        )
        self.columns.show(event.view, keep=self._cursor_message())

    def _show_heads(self) -> None:
        c = self.comparison
        if c is None:
            return
        cost_a, cost_b = self.cache if self.cache is not None else (None, None)
        self.head_a.update(lines(side_summary(c.a) + "\n" + cache_line(cost_a)))
        self.head_b.update(lines(side_summary(c.b) + "\n" + cache_line(cost_b)))

    @work(thread=True, exclusive=True, group="compare-cache", exit_on_error=False, description="cache cost")
    def run_cache_cost(self, replay_b: Replay) -> None:
        with self.replay_lock:
            a = cache_cost(self.replay)
        with self.replay_lock:
            b = cache_cost(replay_b)
        self.post_message(CacheCostReady(a, b))

    @on(CacheCostReady)
    def cache_ready(self, event: CacheCostReady) -> None:
        self.cache = (event.a, event.b)
        self._show_heads()

    @on(CompareFailed)
    def compare_failed(self, event: CompareFailed) -> None:
        if event.generation == self.generation:
            notify(self, event.reason, title="compare", severity="error")

    def _cursor_message(self) -> str | None:
        view = self.columns.view
        if view is None:
            return None
        message = view.message_at(self.columns.cursor_row)
        return message.id if message is not None else None

    def action_step(self, delta: int) -> None:
        k = max(1, min(self.request + delta, len(self.replay)))
        if k == self.request:
            end = "this is request 1, the first one" if delta < 0 else f"this is request {k:,}, the last one"
            notify(self, f"{end}: nothing further to compare", timeout=3)
            return
        self.request = k
        self.generation += 1
        self.columns.border_title = line(f"compare · shaping request {k}…")
        self.run_compare(k, self.generation)

    def action_close(self) -> None:
        self.dismiss(None)
