"""The calibrate panel: how well calibration predicts this session's reports, and where it is worst.

The figures are `inspector.tokens.accuracy.accuracy` of the session (the core computes them, in a
worker: the panel only shows them): each mode's median, p95 and max error, the requests scored
apart (after a compaction, a model switch, an API error), and the five worst-predicted requests
with what was added to the context before each. Enter on one goes to that request.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from inspector.model import Transcript
from inspector.model.sanitize import one_line
from inspector.tokens.accuracy import AccuracyReport, Miss, accuracy, worst_requests
from inspector.tui.text import line

WORST = 5


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}%"


def summary_text(report: AccuracyReport) -> Text:
    """Each mode's median / p95 / max on the usual requests, then each kind scored apart."""
    out = Text()
    for mode, stats in report.modes.items():
        mark = " (best)" if mode == report.best else ""
        out.append(f"{mode + mark:<24}", "bold" if mark else "")
        out.append(
            f"median {_pct(stats.median_pct):>7} · p95 {_pct(stats.p95_pct):>7} · "
            f"max {_pct(stats.max_pct):>7} · {stats.n:,} request{'' if stats.n == 1 else 's'} predicted\n"
        )
    for kind, by_mode in report.kinds.items():
        best = by_mode.get(report.best)
        if best is not None:
            out.append(f"{kind:<24}", "dim")
            out.append(
                f"max {_pct(best.max_pct)} over {best.n:,} request{'' if best.n == 1 else 's'}\n", "dim"
            )
    return out


def miss_label(miss: Miss) -> Text:
    """A worst-predicted request: its error and figures, then what was added before it."""
    sign = "+" if miss.predicted >= miss.reported else "−"
    head = Text.assemble(
        (f"request {miss.request:,}", "bold"),
        (f"  {miss.error_pct:.2f}% off", "bold red" if miss.error_pct >= 3 else "bold yellow"),
        (
            f"  predicted {miss.predicted:,}, reported {miss.reported:,} ({sign}{abs(miss.predicted - miss.reported):,})",
            "dim",
        ),
    )
    if miss.after:
        head.append(f"  · {miss.after}", "italic")
    if not miss.added:
        head.append("\n  (a new ledger: nothing added to the one before)", "dim")
    for added in miss.added[:6]:
        head.append("\n  + ")
        head.append(one_line(added, 160))
    if len(miss.added) > 6:
        head.append(f"\n  + … {len(miss.added) - 6:,} more", "dim")
    return head


class CalibrateScreen(ModalScreen[int | None]):
    """The session's calibration accuracy and its five worst-predicted requests; enter goes there."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Close"),
        Binding("A", "cancel", "Close", show=False),
    ]

    def __init__(self, transcript: Transcript, estimator: str = "heuristic") -> None:
        super().__init__(classes="prompt", id="calibrate")
        self.transcript = transcript
        self.estimator = estimator
        self.misses: list[Miss] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="calibrate-dialog"):
            yield Label(line(f"Calibration accuracy ({self.estimator} estimator)"), classes="dialog-title")
            yield Label("measuring…", id="calibrate-summary", markup=False)
            yield Label("Worst-predicted requests, with what was added before each", markup=False)
            yield OptionList(id="calibrate-worst")
            yield Label("enter goes to the request · esc closes", classes="dialog-hint", markup=False)

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()
        self.measure()

    @work(
        thread=True, exclusive=True, group="calibrate", exit_on_error=False, description="measure calibration"
    )
    def measure(self) -> None:
        has_usage = any(r.usage for r in self.transcript.requests)
        report = accuracy(self.transcript, self.estimator) if has_usage else None
        misses = worst_requests(self.transcript, report, n=WORST) if report is not None else []
        self.app.call_from_thread(self.show, report, misses)

    def show(self, report: AccuracyReport | None, misses: list[Miss]) -> None:
        summary = self.query_one("#calibrate-summary", Label)
        if report is None or not report.requests:
            summary.update("This session records no token usage to predict: nothing to measure.")
            return
        summary.update(summary_text(report))
        self.misses = misses
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options([Option(miss_label(m), id=str(i)) for i, m in enumerate(misses)])

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.misses[int(event.option.id or 0)].request)

    def action_cancel(self) -> None:
        self.dismiss(None)
