"""The pipeline columns: raw ledger | each layer's view, aligned by message, one Line-API widget.

Only visible lines are rendered (`render_line`), each from a row model computed once per request
in a worker (`StepView`), and every rendered line is cached as a Strip keyed by (row, width,
cursor, model version). A transcript of 100,000 messages scrolls like one of 100.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import var
from textual.scroll_view import ScrollView
from textual.strip import Strip

from inspector.tui.viewmodel import (
    Cell,
    CellState,
    StepView,
    compact_tokens,
    role_label,
    summary_line,
    tool_name,
)

MIN_HEADER_LINES = 2
MAX_HEADER_LINES = 5
BAR_WIDTH = 3
WEIGHT_WIDTH = 5
BLOCKS = " ▏▎▍▌▋▊▉█"

ROLE_SHORT = {"user": "user", "assistant": "asst", "tool": "tool", "system": "sys", "summary": "sum"}
GLYPH = {
    CellState.TRUNCATED: "✂",
    CellState.CLEARED: "○",
    CellState.REMOVED: "✗",
    CellState.SUMMARIZED: "Σ",
    CellState.SUMMARY: "Σ",
}
PIN = "⚑"


def column_widths(width: int, count: int) -> list[int]:
    """Widths of `count` columns sharing `width` cells with a 1-cell separator between them.

    The raw column is wider (it carries role, tool and summary); the layer columns share the rest.
    """
    if count <= 0:
        return []
    avail = max(count, width - (count - 1))
    if count == 1:
        return [avail]
    share = 0.5 if count == 2 else 0.36
    raw = max(min(avail - 8 * (count - 1), int(avail * share)), min(20, avail // count))
    rest = avail - raw
    each, extra = divmod(rest, count - 1)
    return [raw] + [each + (1 if i < extra else 0) for i in range(count - 1)]


def wrap_header(text: str, width: int, lines: int = MAX_HEADER_LINES) -> list[str]:
    """Pack the " · "-separated phrases of a header into at most `lines` lines of `width` cells.

    Phrases share a line (joined by " · ") when they fit; a phrase that does not fit starts a new
    line, and one longer than a line wraps at spaces. What is left after the last line is cut.
    """
    out: list[str] = []
    current = ""
    for phrase in text.split(" · "):
        joined = f"{current} · {phrase}" if current else phrase
        if cell_len(joined) <= width:
            current = joined
            continue
        if current:
            out.append(current)
            current = ""
        for word in phrase.split(" "):
            candidate = f"{current} {word}" if current else word
            if cell_len(candidate) <= width or not current:
                current = candidate
            else:
                out.append(current)
                current = word
    if current:
        out.append(current)
    if len(out) > lines:
        out = [*out[: lines - 1], " ".join(out[lines - 1 :])]
    return out


def bar(weight: int, scale: int, width: int = BAR_WIDTH) -> str:
    """A bar of `weight` against `scale` (the heaviest message of the request), in eighths of a cell.

    Square-root scale, so that a 100-token message still shows beside a 10,000-token one (the
    exact figure is printed beside the bar); any weight above zero gets at least one eighth.
    """
    if weight <= 0 or scale <= 0:
        return " " * width
    eighths = max(1, round(math.sqrt(weight / scale) * width * 8))
    full, part = divmod(min(eighths, width * 8), 8)
    return ("█" * full + (BLOCKS[part] if part else "")).ljust(width)


def weight_text(weight: int) -> str:
    """At most 5 cells: 9,999 exact, then 12k, 123k, 1.23M."""
    return f"{weight:,}" if weight < 10_000 else compact_tokens(weight)


@dataclass(slots=True)
class _Line:
    """A line being built: pieces of text with styles, cropped to a width."""

    width: int
    segments: list[Segment]
    used: int = 0

    def add(self, text: str, style: Style) -> None:
        room = self.width - self.used
        if room <= 0 or not text:
            return
        length = cell_len(text)
        if length > room:
            text = _crop(text, room - 1) + "…" if room > 1 else _crop(text, room)
            length = cell_len(text)
        self.segments.append(Segment(text, style))
        self.used += length

    def pad(self, style: Style) -> None:
        if self.used < self.width:
            self.segments.append(Segment(" " * (self.width - self.used), style))
            self.used = self.width


def _crop(text: str, cells: int) -> str:
    out: list[str] = []
    used = 0
    for ch in text:
        w = cell_len(ch)
        if used + w > cells:
            break
        out.append(ch)
        used += w
    return "".join(out)


class LedgerColumns(ScrollView, can_focus=True):
    """Rows of messages across the pipeline's columns, with a cursor row."""

    every_column_sent: ClassVar[bool] = False
    """Mark every column after the raw ledger "⇒ sent" (compare mode: one final view per policy)."""

    COMPONENT_CLASSES = {
        "ledger--header",
        "ledger--header-fired",
        "ledger--header-idle",
        "ledger--header-sent",
        "ledger--rule",
        "ledger--cursor",
        "ledger--bar",
        "ledger--weight",
        "ledger--same",
        "ledger--role-user",
        "ledger--role-assistant",
        "ledger--role-tool",
        "ledger--role-system",
        "ledger--role-summary",
        "ledger--tool",
        "ledger--text",
        "ledger--pinned",
        "ledger--truncated",
        "ledger--cleared",
        "ledger--removed",
        "ledger--summarized",
        "ledger--summary",
        "ledger--gone",
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First row", show=False),
        Binding("end", "edge(1)", "Last row", show=False),
        Binding("enter", "open", "Open message", tooltip="Show the selected message full screen"),
    ]

    cursor_row: var[int] = var(0, init=False)

    @dataclass
    class CursorMoved(Message):
        """The cursor moved to another row."""

        columns: LedgerColumns
        row: int
        message_id: str | None

        @property
        def control(self) -> LedgerColumns:
            return self.columns

    @dataclass
    class Opened(Message):
        """The user asked to open the message on a row."""

        columns: LedgerColumns
        row: int

        @property
        def control(self) -> LedgerColumns:
            return self.columns

    @dataclass
    class EndPressed(Message):
        """End was pressed (the cursor went to the last row); a live screen follows again."""

        columns: LedgerColumns

        @property
        def control(self) -> LedgerColumns:
            return self.columns

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.view: StepView | None = None
        self._version = 0
        self._cache: LRUCache[tuple[int, int, bool, int], Strip] = LRUCache(1024)
        self._header_cache: dict[tuple[int, int], list[Strip]] = {}
        self._wrapped_cache: dict[tuple[int, int, bool], list[list[str]]] = {}
        self._styles: dict[str, Style] = {}

    # -- data ---------------------------------------------------------------------------------
    def show(self, view: StepView, keep: str | None = None) -> None:
        """Show a new request; keep the cursor on message `keep` when it is still there."""
        self.view = view
        self._version += 1
        self._cache.clear()
        self._header_cache.clear()
        rows = len(view.rows)
        target = view.row_of.get(keep, self.cursor_row) if keep is not None else self.cursor_row
        self.virtual_size = Size(self.scrollable_content_region.width, self.header_height + rows)
        self.set_reactive(LedgerColumns.cursor_row, max(0, min(target, rows - 1)))
        self._scroll_cursor_into_view()
        self.refresh()
        self._post_cursor()

    @property
    def row_count(self) -> int:
        return len(self.view.rows) if self.view is not None else 0

    def select_row(self, row: int) -> None:
        """Move the cursor to `row` (clamped) and scroll it into view."""
        if self.row_count:
            self.cursor_row = max(0, min(row, self.row_count - 1))

    def watch_cursor_row(self, old: int, new: int) -> None:
        self._refresh_row(old)
        self._refresh_row(new)
        self._scroll_cursor_into_view()
        self._post_cursor()

    def _post_cursor(self) -> None:
        if self.view is None or not self.view.rows:
            return
        message = self.view.message_at(self.cursor_row)
        self.post_message(self.CursorMoved(self, self.cursor_row, message.id if message else None))

    def _refresh_row(self, row: int) -> None:
        y = row + self.header_height - round(self.scroll_y)
        if self.header_height <= y < self.size.height:
            self.refresh_line(row + self.header_height)

    def _visible_rows(self) -> int:
        return max(1, self.scrollable_content_region.height - self.header_height)

    def _scroll_cursor_into_view(self) -> None:
        top = round(self.scroll_y)
        height = self._visible_rows()
        row = self.cursor_row
        if row < top:
            self.scroll_to(y=row, animate=False)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False)

    # -- actions ------------------------------------------------------------------------------
    def action_cursor(self, delta: int) -> None:
        self.select_row(self.cursor_row + delta)

    def action_page(self, direction: int) -> None:
        self.select_row(self.cursor_row + direction * self._visible_rows())

    def action_edge(self, end: int) -> None:
        self.select_row(self.row_count - 1 if end else 0)
        if end:
            self.post_message(self.EndPressed(self))

    def action_open(self) -> None:
        if self.row_count:
            self.post_message(self.Opened(self, self.cursor_row))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < self.header_height:
            return
        row = round(self.scroll_y) + offset.y - self.header_height
        if 0 <= row < self.row_count:
            self.cursor_row = row
            if event.chain >= 2:
                self.post_message(self.Opened(self, row))

    def on_resize(self, event: events.Resize) -> None:
        self._cache.clear()
        self._header_cache.clear()
        if self.view is not None:
            self.virtual_size = Size(
                self.scrollable_content_region.width, self.header_height + len(self.view.rows)
            )
            self._scroll_cursor_into_view()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = {}
        self._cache.clear()
        self._header_cache.clear()

    # -- rendering ----------------------------------------------------------------------------
    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self.get_component_rich_style(f"ledger--{name}", partial=True)
            self._styles[name] = style
        return style

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        view = self.view
        if view is None or width <= 0:
            return Strip.blank(max(0, width), base)
        if y < self.header_height:
            return self._header(width)[y]
        row = round(self.scroll_y) + y - self.header_height
        if row >= len(view.rows):
            return Strip.blank(width, base)
        cursor = row == self.cursor_row
        key = (row, width, cursor, self._version)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_row(row, width, cursor)
            self._cache[key] = strip
        return strip

    def _wrapped_headers(self, width: int) -> list[list[str]]:
        """Each column's header text, wrapped to its width."""
        key = (width, self._version, self.size.height >= 24)
        cached = self._wrapped_cache.get(key)
        if cached is not None:
            return cached
        if self.view is None:
            return []
        columns = self.view.columns
        widths = column_widths(width, len(columns))
        wrapped: list[list[str]] = []
        for column, w in zip(columns, widths, strict=True):
            lines = self._max_header_lines()
            text = wrap_header(column.header, max(4, w - 1), lines)
            if column.short_header and len(wrap_header(column.header, max(4, w - 1), 99)) > lines:
                text = wrap_header(column.short_header, max(4, w - 1), lines)
            wrapped.append(text)
        self._wrapped_cache = {key: wrapped}
        return wrapped

    def _max_header_lines(self) -> int:
        """Up to 5 header lines, 3 when the widget is short (an 80x24 terminal)."""
        return MAX_HEADER_LINES if self.size.height >= 24 else 3

    @property
    def header_height(self) -> int:
        """Header text lines (as many as the longest header needs, 2 to 4) plus the rule."""
        wrapped = self._wrapped_headers(self.scrollable_content_region.width)
        lines = max((len(w) for w in wrapped), default=MIN_HEADER_LINES)
        return max(MIN_HEADER_LINES, min(self._max_header_lines(), lines)) + 1

    def _header(self, width: int) -> list[Strip]:
        key = (width, self._version)
        cached = self._header_cache.get(key)
        if cached is not None:
            return cached
        assert self.view is not None
        base = self.rich_style
        header = base + self._style("header")
        rule = base + self._style("rule")
        columns = self.view.columns
        widths = column_widths(width, len(columns))
        wrapped = self._wrapped_headers(width)
        count = self.header_height - 1
        lines = [_Line(width, []) for _ in range(count)]
        rule_line = _Line(width, [])
        for c, (column, w) in enumerate(zip(columns, widths, strict=True)):
            if c == 0:
                title = header + self._style("header-idle")
            elif column.fired:
                title = header + self._style("header-fired")
            else:
                title = header + self._style("header-idle")
            for i in range(count):
                line = lines[i]
                if c:
                    line.add("│", rule)
                cell = _Line(w, [])
                content = wrapped[c][i] if i < len(wrapped[c]) else ""
                cell.add(" " + content, title if i == 0 else header)
                cell.pad(header)
                line.segments.extend(cell.segments)
                line.used += cell.used
            if c:
                rule_line.add("┼", rule)
            if c > 0 and (c == len(columns) - 1 or self.every_column_sent):
                sent = "─ ⇒ sent "
                rule_line.add(sent, base + self._style("header-sent"))
                rule_line.add("─" * max(0, w - cell_len(sent)), rule)
            else:
                rule_line.add("─" * w, rule)
        strips = [Strip(line.segments, width).crop_extend(0, width, header) for line in lines]
        strips.append(Strip(rule_line.segments, width).crop_extend(0, width, rule))
        self._header_cache[key] = strips
        return strips

    def _render_row(self, row: int, width: int, cursor: bool) -> Strip:
        assert self.view is not None
        view = self.view
        base = self.rich_style
        if cursor:
            base = base + self._style("cursor")
        rule = base + self._style("rule")
        widths = column_widths(width, len(view.columns))
        line = _Line(width, [])
        for c, w in enumerate(widths):
            if c:
                line.add("│", rule)
            cell_line = _Line(w, [])
            if c == 0:
                self._raw_cell(cell_line, view.cell(0, row), base)
            else:
                self._layer_cell(cell_line, view.cell(c, row), base, cursor)
            cell_line.pad(base)
            line.segments.extend(cell_line.segments)
            line.used += cell_line.used
        line.pad(base)
        return Strip(line.segments, width)

    def _scale(self) -> int:
        assert self.view is not None
        return self.view.max_weight

    def _raw_cell(self, line: _Line, cell: Cell, base: Style) -> None:
        message = cell.message
        if message is None:
            line.add("", base)
            return
        assert self.view is not None
        pinned = self.view.pins(message)
        line.add(PIN if pinned else " ", base + self._style("pinned"))
        line.add(bar(cell.weight, self._scale()), base + self._style("bar"))
        line.add(" " + weight_text(cell.weight).rjust(WEIGHT_WIDTH), base + self._style("weight"))
        role = role_label(message)
        line.add(" " + ROLE_SHORT.get(role, role).ljust(4), base + self._style(f"role-{role}"))
        tool = tool_name(message, self.view.call_names)
        if tool:
            line.add(" " + tool, base + self._style("tool"))
        line.add(" " + summary_line(message, max(8, line.width)), base + self._style("text"))

    def _layer_cell(self, line: _Line, cell: Cell, base: Style, cursor: bool = False) -> None:
        state = cell.state
        if state is CellState.GONE:
            line.add("", base)
            return
        if state in (CellState.REMOVED, CellState.SUMMARIZED):
            style = base + self._style(state.value)
            words = "— removed —" if state is CellState.REMOVED else "— folded into summary —"
            line.add(f"{GLYPH[state]} {words}", style)
            return
        message = cell.message
        pinned = message is not None and self.view is not None and self.view.pins(message)
        if state is CellState.SAME:
            dim = base + self._style("weight" if cursor else "same")
            line.add(PIN if pinned else " ", base + self._style("pinned") if pinned else dim)
            line.add(bar(cell.weight, self._scale()), dim)
            line.add(" " + weight_text(cell.weight).rjust(WEIGHT_WIDTH), dim)
            return
        style = base + self._style(state.value)
        line.add(GLYPH[state], style)
        line.add(bar(cell.weight, self._scale()), style)
        line.add(" " + weight_text(cell.weight).rjust(WEIGHT_WIDTH), style)
        if state is CellState.TRUNCATED:
            line.add(" truncated", style)
        elif message is not None:
            line.add(" " + summary_line(message, max(8, line.width)), style)

    # -- plain text, for tests and copy -------------------------------------------------------
    def row_text(self, row: int) -> str:
        """The rendered text of `row` at the current width (what the user sees on that line)."""
        if self.view is None or not 0 <= row < len(self.view.rows):
            return ""
        return self._render_row(row, self.scrollable_content_region.width, False).text

    def header_text(self) -> list[str]:
        """The rendered header lines at the current width."""
        if self.view is None:
            return []
        return [strip.text for strip in self._header(self.scrollable_content_region.width)]

    def column_text(self, column: int, row: int) -> str:
        """The rendered text of one column of one row."""
        if self.view is None:
            return ""
        widths = column_widths(self.scrollable_content_region.width, len(self.view.columns))
        start = sum(widths[:column]) + column
        return self.row_text(row)[start : start + widths[column]]

    def column_header_text(self, column: int) -> str:
        """A column's header as rendered, its lines joined with spaces."""
        if self.view is None:
            return ""
        widths = column_widths(self.scrollable_content_region.width, len(self.view.columns))
        start = sum(widths[:column]) + column
        lines = self.header_text()[:-1]
        return " ".join(line[start : start + widths[column]].strip(" │") for line in lines).strip()
