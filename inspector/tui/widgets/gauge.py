"""The pressure gauge: the request's calibrated context against the window, with labelled lines."""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from inspector.model.sanitize import one_line, visible
from inspector.replay.distance import distance_text, distance_variants, distances, gap_text, lines_of
from inspector.tui.viewmodel import StepView, clock, compact_tokens, duration, tokens
from inspector.tui.widgets.runs import append_runs

LABEL_ROWS = 4
"""Rows for the line labels under the bar when the widget's height is not known yet."""
SHORT = {
    # Budget.lines() label -> the gauge's word for it (also its component class, gauge--<word>)
    "window": "window",
    "output reserve": "reserve",
    "safety buffer": "buffer",
    "blocking": "blocking",
    "trigger": "trigger",
    "target": "target",
}


@dataclass(frozen=True, slots=True)
class GaugeLine:
    """One labelled line: where it is (cell), what it says, how it is styled."""

    position: int
    label: str
    style: str
    short: str = ""
    """The label with a short figure ("blocking 177k"), where the full one finds no room."""


def when(view: StepView, *, date: bool = True) -> str:
    """ "2026-02-12 16:13:21 (+4s) · claude-opus-4-6": the request's time, the gap since the one
    before it, its model (what the transcript records of them; "" when it records none)."""
    stamp = clock(view.timestamp)
    if stamp and not date:
        stamp = stamp.split(" ")[-1]
    gap = f" (+{duration(view.gap_s)})" if stamp and view.gap_s is not None else ""
    model = one_line(view.model, 40) if view.model else ""
    return " · ".join(p for p in (f"{stamp}{gap}", model) if p)


def numbers(view: StepView, width: int = 1_000) -> str:
    """ "request 212/300 · context 171,204 (reported) · sent 119,880 after shaping · 85.6% of window",
    with fewer words when `width` is too narrow for them (the time and the model are in `when`); a
    context that is the calibrated prediction (no usage reported) is called one as long as it fits."""
    how = (
        "reported" if view.reported is not None and view.reported == view.context else "calibrated prediction"
    )
    share = f"{view.context / view.window:.1%} of window" if view.window else ""
    cost = visible(view.cost, newlines=False)  # a model's name may be the transcript's
    variants = [
        [
            f"request {view.index}/{view.total}",
            f"context {tokens(view.context)} ({how})",
            f"sent {tokens(view.sent)} after shaping",
            share,
            cost,
        ],
        [
            f"request {view.index}/{view.total}",
            f"context {tokens(view.context)}",
            f"sent {tokens(view.sent)}",
            share,
            cost,
        ],
        [
            f"request {view.index}/{view.total}",
            f"context {tokens(view.context)}",
            f"sent {tokens(view.sent)}",
            share,
        ],
        [f"req {view.index}/{view.total}", f"ctx {tokens(view.context)}", f"sent {tokens(view.sent)}", share],
    ]
    if how != "reported":
        # A predicted context keeps saying so (in fewer words) before the cost or the words
        # "after shaping" are dropped: unlabelled, it would read as what the harness reported.
        index, context, sent = f"request {view.index}/{view.total}", tokens(view.context), tokens(view.sent)
        variants[1:1] = [
            [index, f"context {context} ({how})", f"sent {sent}", share, cost],
            [index, f"context {context} ({how})", f"sent {sent}", share],
            [index, f"context {context} (predicted)", f"sent {sent}", share],
            [f"req {view.index}/{view.total}", f"ctx {context} (predicted)", f"sent {sent}", share],
            [f"req {view.index}/{view.total}", f"ctx {context} (predicted)", f"sent {sent}"],
        ]
    for parts in variants:
        text = " · ".join(p for p in parts if p)
        if cell_len(text) <= width:
            return text
    return text


def distance(view: StepView, width: int = 1_000) -> str:
    """ "126 to trigger 167,000 (0.06% of window) · 10,126 to blocking 177,000 · 33,126 to window
    200,000 · harness est. 166,742: 258 to trigger": how far this request is from each line, and how
    far the harness's own estimate (the number it decides by) is from the trigger; shorter when
    `width` is narrow (the harness's figure goes last)."""
    blocking, window = lines_of(view.lines)
    gaps = distances(view.context, view.trigger, blocking, window)
    variants = distance_variants(gaps)
    owns: list[str] = []
    if view.harness is not None:
        value = view.harness[0]
        own_gap = distances(value, view.trigger, blocking, window)[0]
        said = gap_text(own_gap, value=False, share=False)
        owns = [f"harness est. {tokens(value)}: {said}", f"harness: {said}"]
    for text in variants:
        for own in owns:
            joined = f"{text} · {own}"
            if cell_len(joined) <= width:
                return joined
    return distance_text(gaps, width=width)


def scale_of(view: StepView) -> int:
    """The token count at the right end of the bar."""
    top = max([view.context, view.sent, *(v for _, v in view.lines)])
    if view.window is None:
        top = max(top, round(view.trigger * 1.25))
    return max(1, top)


def gauge_lines(view: StepView, width: int) -> list[GaugeLine]:
    """Budget lines merged by value (the safety buffer usually sits on the trigger), placed on cells."""
    scale = scale_of(view)
    merged: dict[int, list[str]] = {}
    for label, value in view.lines:
        merged.setdefault(value, []).append(label)
    out: list[GaugeLine] = []
    for value, labels in merged.items():
        # Name the trigger last so "trigger 167,000" reads as one phrase.
        labels.sort(key=lambda x: (x == "trigger", x))
        name = "/".join(SHORT.get(x, x) for x in labels)
        position = min(width - 1, max(0, round(value / scale * (width - 1))))
        out.append(
            GaugeLine(
                position,
                f"{name} {tokens(value)}",
                SHORT.get(labels[-1], "window"),
                f"{SHORT.get(labels[-1], labels[-1])} {compact_tokens(value)}",
            )
        )
    out.sort(key=lambda g: g.position)
    return out


def _place(
    lines: list[GaugeLine], width: int, rows: int, short_first: bool, left_first: bool = False
) -> tuple[list[list[tuple[int, str, str]]], int]:
    """One placement of the labels (see `place_labels`) and how many of them kept their name."""
    placed: list[list[tuple[int, str, str]]] = [[] for _ in range(rows)]
    taken: list[list[tuple[int, int]]] = [[] for _ in range(rows)]
    named = 0

    def free(row: int, start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in taken[row])

    def fits(line: GaugeLine, text: str) -> list[tuple[int, str]]:
        """Where `text` can go beside the tick: to its right, or ending at it."""
        right, left = "╵" + text, text + "╵"
        out: list[tuple[int, str]] = []
        if line.position + cell_len(right) <= width:
            out.append((line.position, right))
        if line.position - cell_len(left) + 1 >= 0:
            out.append((line.position - cell_len(left) + 1, left))
        return out[::-1] if left_first else out

    for line in lines:
        value = line.label.split(" ")[-1]
        short = line.short or line.label
        # The full label on the first row with room (or, `short_first`, its name with a short
        # figure: "blocking 177k"); failing that, the other; failing that, the value alone.
        words = (short, line.label) if short_first else (line.label, short)
        done = False
        for i, text in enumerate((*words, value)):
            for row in range(rows):
                for start, shown in fits(line, text):
                    end = start + cell_len(shown) + 1
                    if free(row, start, end):
                        placed[row].append((start, shown, line.style))
                        taken[row].append((start, end))
                        done = True
                        named += i < 2
                        break
                if done:
                    break
            if done:
                break
        if not done:
            # No room for any words: a bare tick, where one fits, keeps the line findable.
            for row in range(rows):
                if free(row, line.position, line.position + 1):
                    placed[row].append((line.position, "╵", line.style))
                    taken[row].append((line.position, line.position + 1))
                    break
    return placed, named


def place_labels(
    lines: list[GaugeLine], width: int, rows: int = LABEL_ROWS
) -> list[list[tuple[int, str, str]]]:
    """Put each label on the first row where it fits, beside a tick at its line's cell.

    A label reads "╵target 125,250" to the right of its tick, or "reserve 180,000╵" to the left
    when there is no room on the right; where full labels leave a line unnamed, every label takes
    its short figure ("reserve 180k") so that each keeps its name. Returns per row (start, text, style).
    """
    best, named = _place(lines, width, rows, short_first=False)
    if named == len(lines):
        return best
    for short_first, left_first, order in (
        (True, False, lines),
        (True, True, lines[::-1]),
        (True, True, lines),
        (True, False, lines[::-1]),
    ):
        placed, count = _place(order, width, rows, short_first, left_first)
        if count > named:
            best, named = placed, count
        if named == len(lines):
            break
    return best


class PressureGauge(Widget):
    """The calibrated context against the window, with trigger, target and reserve lines labelled."""

    COMPONENT_CLASSES = {
        "gauge--numbers",
        "gauge--distance",
        "gauge--status",
        "gauge--ok",
        "gauge--warn",
        "gauge--over",
        "gauge--shaped",
        "gauge--empty",
        "gauge--window",
        "gauge--reserve",
        "gauge--buffer",
        "gauge--blocking",
        "gauge--trigger",
        "gauge--target",
    }

    status: reactive[str] = reactive("loading…", layout=False)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.view: StepView | None = None

    def show(self, view: StepView) -> None:
        self.view = view
        self.status = ""
        self.refresh()

    def _s(self, name: str) -> Style:
        return self.get_component_rich_style(f"gauge--{name}", partial=True)

    def render(self) -> Text:
        width = self.content_region.width
        view = self.view
        if view is None or self.status:
            # a status may quote a reason (a file name, an error): shown as text
            return Text(visible(self.status or "", newlines=False), style=self._s("status"), no_wrap=True)
        return self.render_view(view, width)

    def render_view(self, view: StepView, width: int) -> Text:
        width = max(10, width)
        out = Text(no_wrap=True, overflow="ellipsis")
        out.append(numbers(view, width), self._s("numbers"))
        out.append("\n")
        gaps = distance(view, width)
        over = view.context > view.trigger
        near = not over and view.context >= view.target
        out.append(gaps, self._s("over" if over else "warn" if near else "distance"))
        out.append("\n")
        scale = scale_of(view)
        filled = min(width, round(view.context / scale * width))
        sent = min(filled, round(view.sent / scale * width))
        lines = gauge_lines(view, width)
        at = {g.position: g for g in lines}

        def cell(i: int) -> tuple[str, str]:
            line = at.get(i)
            if line is not None:
                return "┃", line.style
            if i < sent:
                mid = (i + 0.5) / width * scale
                return "█", "ok" if mid <= view.target else "warn" if mid <= view.trigger else "over"
            return ("▒", "shaped") if i < filled else ("░", "empty")

        append_runs(out, map(cell, range(width)), self._s)
        rows = max(1, self.content_region.height - 3) if self.content_region.height else LABEL_ROWS
        for row in place_labels(lines, width, rows):
            out.append("\n")
            cursor = 0
            for start, text, style in sorted(row):
                if start > cursor:
                    out.append(" " * (start - cursor))
                out.append(text, self._s(style))
                cursor = start + cell_len(text)
        return out

    def plain_lines(self) -> list[str]:
        """What the gauge shows, as plain lines (for tests)."""
        if self.view is None:
            return [self.status]
        return self.render_view(self.view, self.content_region.width).plain.split("\n")
