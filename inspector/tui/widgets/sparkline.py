"""Context size per request, with the current request and the recorded events marked."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual import events
from textual.message import Message
from textual.widget import Widget

from inspector.tui.viewmodel import SessionView
from inspector.tui.widgets.runs import append_runs

EIGHTHS = " ▁▂▃▄▅▆▇█"
CURRENT = "▲"
RECORDED = "◆"
CLEARED = "◇"
ERROR = "×"
SIMULATED = "•"
GLYPHS = {"recorded": RECORDED, "cleared": CLEARED, "error": ERROR}
"""The marks of recorded events, under the request they came after (drawn over ▲ and •)."""
LEGEND = "▲ now ◆ recorded • simulated"


def legend(session: SessionView | None) -> str:
    """The sparkline's key: the marks every session may show, and those of this one's events."""
    extra = []
    if session is not None and session.cleared:
        extra.append(f"{CLEARED} cleared")
    if session is not None and session.errors:
        extra.append(f"{ERROR} API error")
    return " ".join([LEGEND, *extra])


def buckets(count: int, width: int) -> list[tuple[int, int]]:
    """Split requests 1..count over at most `width` columns: (first, last) request per column.

    With fewer requests than columns each request gets the same whole number of columns.
    """
    if count <= 0 or width <= 0:
        return []
    if count <= width:
        per = max(1, width // count)
        return [(k, k) for k in range(1, count + 1) for _ in range(per)]
    out: list[tuple[int, int]] = []
    for c in range(width):
        first = c * count // width + 1
        last = (c + 1) * count // width
        out.append((first, max(first, last)))
    return out


def _mark_columns(cols: list[tuple[int, int]]) -> set[int]:
    """The columns that carry a request's mark: each column, or, where a request is drawn over
    several (a short session), the middle one of them (one ▲ under the current request's bar)."""
    out: set[int] = set()
    start = 0
    for c in range(1, len(cols) + 1):
        if c == len(cols) or cols[c] != cols[start]:
            out.add(start + (c - 1 - start) // 2)
            start = c
    return out


GUTTER = 6
"""Cells at the right of the chart for its y axis labels ("│167k")."""
LINE = "╌"
"""A horizontal line (the trigger, the window) where no bar reaches it."""


def axis_label(value: int) -> str:
    """A y axis figure in at most five cells: 167k, 1.0M, 900."""
    if value < 1_000:
        return str(value)
    if value < 1_000_000:
        return f"{value // 1000}k" if value < 999_500 else "1.0M"
    return f"{value / 1_000_000:.1f}M"


class ContextSparkline(Widget):
    """The context per request as a chart: a bar per request (or bucket of requests), solid up to
    what the pipeline sends and shaded above it up to the raw context, the trigger and the window
    drawn as lines and labelled on the y axis (at the right), the recorded events marked on a row
    of their own under the bars and the current request's ▲ on the row below, so that neither hides
    the other. Click a bar to go to its request."""

    COMPONENT_CLASSES = {
        "sparkline--ok",
        "sparkline--warn",
        "sparkline--over",
        "sparkline--shaped",
        "sparkline--current",
        "sparkline--recorded",
        "sparkline--cleared",
        "sparkline--error",
        "sparkline--simulated",
        "sparkline--axis",
        "sparkline--trigger",
        "sparkline--window",
    }

    @dataclass
    class RequestClicked(Message):
        sparkline: ContextSparkline
        request: int

        @property
        def control(self) -> ContextSparkline:
            return self.sparkline

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.session: SessionView | None = None
        self.current = 0
        self.trigger = 0
        self.target = 0
        self.window: int | None = None
        self._cached: tuple[tuple[int, int, int, int, int, int], Text] | None = None

    def show_session(self, session: SessionView) -> None:
        self.session = session
        self.refresh()

    def set_current(self, request: int, trigger: int, target: int, window: int | None) -> None:
        self.current = request
        self.trigger, self.target, self.window = trigger, target, window
        self.refresh()

    def _s(self, name: str) -> Style:
        return self.get_component_rich_style(f"sparkline--{name}", partial=True)

    def render(self) -> Text:
        session = self.session
        width = self.content_region.width
        height = max(3, self.content_region.height)
        if session is None or not session.contexts:
            return Text("")
        return self.render_session(session, width, height)

    def render_session(self, session: SessionView, width: int, height: int) -> Text:
        key = (id(session), self.current, self.trigger, self.target, width, height)
        if self._cached is not None and self._cached[0] == key:
            return self._cached[1]
        text = self._draw(session, width, height)
        self._cached = (key, text)
        return text

    def bars_width(self, width: int | None = None) -> int:
        """The columns the bars take (the content's width less the y axis gutter)."""
        w = self.content_region.width if width is None else width
        return max(1, w - GUTTER) if w > GUTTER + 8 else max(1, w)

    def _marks(self, session: SessionView, cols: list[tuple[int, int]]) -> dict[int, str]:
        lasts = [b for _, b in cols]
        marks: dict[int, str] = {}
        # later kinds win a column: a segment's start over an error over a simulated compaction
        kinds = (
            ("simulated", session.simulated),
            ("error", session.errors),
            ("recorded", session.recorded - session.cleared),
            ("cleared", session.cleared),
        )
        for kind, requests in kinds:
            for k in requests:
                c = bisect.bisect_left(lasts, k)
                while c < len(cols) and cols[c][0] <= k <= cols[c][1]:
                    marks[c] = kind
                    c += 1
        return marks

    def _draw(self, session: SessionView, width: int, height: int) -> Text:
        bars = max(1, height - 2)
        inner = self.bars_width(width)
        gutter = width - inner
        cols = buckets(len(session.contexts), inner)
        window = self.window or 0
        top = max(max(session.contexts), window, self.trigger, 1)
        values = [max(session.contexts[a - 1 : b]) for a, b in cols]
        sent_known = session.sent
        sents = [
            max(sent_known[a - 1 : b]) if b <= len(sent_known) else v
            for (a, b), v in zip(cols, values, strict=True)
        ]
        zones = [
            "current"
            if a <= self.current <= b
            else "ok"
            if v <= self.target
            else "warn"
            if v <= self.trigger
            else "over"
            for (a, b), v in zip(cols, values, strict=True)
        ]

        def row_of(value: int) -> int:
            """The row (0 at the bottom) whose band holds `value`."""
            return min(bars - 1, max(0, int(value / top * bars - 1e-9)))

        lines: dict[int, str] = {}
        if window:
            lines[row_of(window)] = "window"
        if self.trigger:
            lines[row_of(self.trigger)] = "trigger"  # the trigger wins a row it shares
        labels = {row_of(window): axis_label(window)} if window else {}
        if self.trigger:
            labels[row_of(self.trigger)] = axis_label(self.trigger)
        out = Text(no_wrap=True, overflow="crop")
        for r in range(bars):
            level = bars - r - 1  # 0 is the bottom row
            line = lines.get(level)
            cells: list[tuple[str, str]] = []
            for value, sent, zone in zip(values, sents, zones, strict=True):
                eighths = round(value / top * bars * 8)
                fill = min(8, max(0, eighths - level * 8))
                if value > 0 and level == 0 and fill == 0:
                    fill = 1
                if not fill:
                    cells.append((LINE, line) if line else (" ", "axis"))
                    continue
                # solid up to what is sent, shaded above it (what shaping took off)
                shaped = zone != "current" and (level + 0.5) / bars * top > sent
                cells.append((EIGHTHS[fill], "shaped" if shaped else zone))
            append_runs(out, cells, self._s)
            out.append(" " * (inner - len(cols)))
            if gutter:
                label = labels.get(level)
                if label is not None:
                    out.append(f"┤{label}".ljust(gutter), self._s(line or "axis"))
                else:
                    out.append("│".ljust(gutter), self._s("axis"))
            out.append("\n")
        shown = _mark_columns(cols)
        marks = self._marks(session, cols)
        for c in range(len(cols)):
            mark = marks.get(c) if c in shown else None
            if mark is None:
                out.append(" ")
            else:
                out.append(GLYPHS.get(mark, SIMULATED), self._s(mark))
        out.append(" " * (inner - len(cols)))
        if gutter:
            out.append("│".ljust(gutter), self._s("axis"))
        out.append("\n")
        axis: list[tuple[str, str]] = []
        for c, (a, b) in enumerate(cols):
            axis.append((CURRENT, "current") if c in shown and a <= self.current <= b else (" ", "axis"))
        first, last = "1", str(len(session.contexts))
        chars = [ch for ch, _ in axis]
        if len(chars) > len(first) + len(last) + 4:
            if all(ch == " " for ch in chars[: len(first) + 1]):
                for i, ch in enumerate(first):
                    axis[i] = (ch, "axis")
            end = len(chars) - len(last)
            if all(ch == " " for ch in chars[end - 1 :]):
                for i, ch in enumerate(last):
                    axis[end + i] = (ch, "axis")
        append_runs(out, axis, self._s)
        out.append(" " * (inner - len(cols)))
        if gutter:
            out.append(" " * gutter)
        return out

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cached = None

    def request_at(self, x: int) -> int | None:
        if self.session is None:
            return None
        cols = buckets(len(self.session.contexts), self.bars_width())
        if 0 <= x < len(cols):
            return cols[x][1]
        return None

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        k = self.request_at(offset.x)
        if k is not None:
            self.post_message(self.RequestClicked(self, k))

    def marks_text(self) -> str:
        """The marks under the bars and the ▲ of the current request as one plain line (a mark
        wins its cell), one character per bar column (for tests)."""
        if self.session is None:
            return ""
        height = max(3, self.content_region.height)
        lines = self.render_session(self.session, self.content_region.width, height).plain.split("\n")
        inner = self.bars_width()
        marks, axis = lines[-2][:inner], lines[-1][:inner]
        return "".join(
            m if m != " " else ("▲" if a == "▲" else " ") for m, a in zip(marks, axis, strict=True)
        )
