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


class ContextSparkline(Widget):
    """A bar per request (or per bucket of requests) of the calibrated context; click to go there."""

    COMPONENT_CLASSES = {
        "sparkline--ok",
        "sparkline--warn",
        "sparkline--over",
        "sparkline--current",
        "sparkline--recorded",
        "sparkline--cleared",
        "sparkline--error",
        "sparkline--simulated",
        "sparkline--axis",
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
        height = max(2, self.content_region.height)
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

    def _draw(self, session: SessionView, width: int, height: int) -> Text:
        bars = height - 1
        cols = buckets(len(session.contexts), width)
        top = max(max(session.contexts), 1)
        values = [max(session.contexts[a - 1 : b]) for a, b in cols]
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
        out = Text(no_wrap=True, overflow="crop")
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
        for r in range(bars):
            level = bars - r - 1  # 0 is the bottom row
            chars = []
            for value in values:
                eighths = round(value / top * bars * 8)
                fill = min(8, max(0, eighths - level * 8))
                if value > 0 and level == 0 and fill == 0:
                    fill = 1
                chars.append(EIGHTHS[fill] if fill else " ")
            append_runs(out, zip(chars, zones, strict=True), self._s)
            out.append("\n")
        shown = _mark_columns(cols)
        for c, (a, b) in enumerate(cols):
            if c not in shown:
                out.append(" ")
                continue
            current = a <= self.current <= b
            mark = marks.get(c)
            if mark is not None and mark in GLYPHS:
                out.append(GLYPHS[mark], self._s("current") if current else self._s(mark))
            elif current:
                out.append(CURRENT, self._s("current"))
            elif mark == "simulated":
                out.append(SIMULATED, self._s("simulated"))
            else:
                out.append(" ")
        return out

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cached = None

    def request_at(self, x: int) -> int | None:
        if self.session is None:
            return None
        cols = buckets(len(self.session.contexts), self.content_region.width)
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
        """The mark row as plain text (for tests)."""
        if self.session is None:
            return ""
        return self.render_session(self.session, self.content_region.width, 2).plain.split("\n")[-1]
