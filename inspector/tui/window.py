"""What fills the window (the `/context` picture) and a recorded compaction opened, as screens.

Both are computed in the core (`inspector.replay.composition`, `inspector.replay.folded`); here
they are only drawn: from plain strings into `rich.text.Text` (transcript text is already made
visible by the core's `one_line`), never from markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Static

from inspector.model.sanitize import visible
from inspector.replay.folded import Entry, OpenedCompaction
from inspector.tui.text import line
from inspector.tui.viewmodel import tokens
from inspector.tui.widgets.keybar import KeyBar

if TYPE_CHECKING:  # imported with the screen that shows one (not on the app's first frame)
    from inspector.replay.composition import Composition, Part

PALETTE = 8
"""Colours for the used parts (`window--p0` … `window--p7`, from the theme); the space parts have
their own (`window--free`, `window--buffer`, `window--reserve`, `window--over`)."""
USED_CELL = "■"
SPACE_CELL = {"free": "·", "buffer": "▒", "reserve": "▓", "over": "✖"}
GRID_COLUMNS = 20
GRID_ROWS = 10


@dataclass
class CompositionReady(Message):
    """The composition of a request, computed in a worker."""

    composition: Composition
    generation: int



def _v(text: str) -> str:
    """Transcript text as it may reach the screen: every control character made visible (the
    one sanitizer; idempotent on text the core already made visible)."""
    return visible(text, newlines=False)

def part_styles(comp: Composition, style_of: dict[str, Style]) -> dict[str, Style]:
    """The style of each part's cells: used parts take the palette in order, space parts their own."""
    out: dict[str, Style] = {}
    i = 0
    for part in comp.parts:
        if part.space:
            out[part.key] = style_of.get(part.key, Style(dim=True))
        else:
            out[part.key] = style_of.get(f"p{i % PALETTE}", Style())
            i += 1
    return out


def cell_of(part: Part) -> str:
    return SPACE_CELL.get(part.key, "░") if part.space else USED_CELL


def composition_text(comp: Composition, style_of: dict[str, Style], columns: int = GRID_COLUMNS) -> Text:
    """The two grids (raw ledger | sent) side by side, then one line per part: its cell, its name,
    tokens and share on each side."""
    styles = part_styles(comp, style_of)
    glyph = {p.key: cell_of(p) for p in comp.parts}
    cells = columns * GRID_ROWS
    from inspector.replay.composition import grid  # (with its screen: not on the first frame)

    raw, sent = grid(comp, "raw", cells), grid(comp, "sent", cells)
    of = f"of the {comp.window:,}-token window" if comp.window else "of the context (window unknown)"
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append(f"request {comp.request} · each cell is 1/{cells} {of}\n", style_of.get("dim", Style(dim=True)))
    head = "raw ledger (what the harness held)"
    out.append(f"{head:<{columns * 2 + 4}}", Style(bold=True))
    out.append("sent (after the policy's shaping)\n", Style(bold=True))
    for r in range(GRID_ROWS):
        for side in (raw, sent):
            for c in range(columns):
                i = r * columns + c
                key = side[i] if i < len(side) else ""
                out.append((glyph.get(key, " ") + " ") if key else "  ", styles.get(key, Style()))
            out.append("    ")
        out.append("\n")
    out.append("\n")
    width = max(len(p.label) for p in comp.parts) if comp.parts else 10
    out.append(f"  {'':<{width}} {'raw':>9} {'share':>6}   {'sent':>9} {'share':>6}\n", Style(bold=True))
    for part in comp.parts:
        out.append(cell_of(part) + " ", styles[part.key])
        out.append(f"{_v(part.label):<{width}}")  # a tool's name is the transcript's
        out.append(f" {tokens(part.raw):>9} {comp.share(part.raw):>6.1%}")
        changed = part.sent != part.raw
        out.append(
            f"   {tokens(part.sent):>9} {comp.share(part.sent):>6.1%}",
            style_of.get("changed", Style(bold=True)) if changed else Style(),
        )
        out.append("\n")
        if part.key == "overhead":  # its split, each share with where its figure comes from
            for x in comp.overhead_shares:
                line = _v(f"{x.label}: {tokens(x.tokens)} · {x.basis}")  # (MCP names: the transcript's)
                out.append(f"    {line}\n", style_of.get("dim", Style(dim=True)))
    out.append(f"  {'used':<{width}} {tokens(comp.context):>9} {comp.share(comp.context):>6.1%}")
    out.append(f"   {tokens(comp.sent):>9} {comp.share(comp.sent):>6.1%}\n", Style(bold=True))
    return out


STYLE_NAMES = (
    *(f"p{i}" for i in range(PALETTE)),
    "free",
    "buffer",
    "reserve",
    "over",
    "dim",
    "changed",
    "heading",
    "folded",
    "kept",
    "lost",
)


class WindowText(Static):
    """A Static whose text is built from the component styles below (set `build`)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {f"window--{n}" for n in STYLE_NAMES}

    def styles_map(self) -> dict[str, Style]:
        return {n: self.get_component_rich_style(f"window--{n}", partial=True) for n in STYLE_NAMES}


class CompositionScreen(ModalScreen[None]):
    """What fills the window at one request: the `/context` grid, raw and sent side by side."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("x", "close", "Close", show=False),
        Binding("q", "close", "Close", show=False),
    ]

    def __init__(self, composition: Composition) -> None:
        super().__init__(classes="window-screen")
        self.composition = composition

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="window-frame"):
            yield WindowText("", id="composition-text", markup=False)
        yield KeyBar()

    def on_mount(self) -> None:
        frame = self.query_one("#window-frame", VerticalScroll)
        comp = self.composition
        frame.border_title = line(f"what fills the window · request {comp.request}")
        frame.border_subtitle = line(f"raw {tokens(comp.context)} · sent {tokens(comp.sent)}")
        text = self.query_one("#composition-text", WindowText)
        text.update(composition_text(comp, text.styles_map()))

    def action_close(self) -> None:
        self.dismiss(None)


def _entry_line(e: Entry, out: Text, style: Style, mark: str) -> None:
    out.append(mark, style)
    out.append(f"{tokens(e.weight):>8} ")
    out.append(f"{e.role:<9} ", Style(bold=True))
    if e.tool:
        out.append(f"{_v(e.tool)} ", Style(bold=True))
    out.append("⚑ " if e.pinned else "", style)
    out.append(_v(e.text[:100]))
    out.append("\n")


def before_text(o: OpenedCompaction, style_of: dict[str, Style]) -> Text:
    """The ledger the compaction ended, in order: ✗ folded, ✓ in the ledger after it."""
    kept = {e.message_id for e in o.after}
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append(
        f"before · request {o.before_request} · {len(o.before):,} messages · {tokens(o.before_tokens)} tokens\n",
        style_of.get("heading", Style(bold=True)),
    )
    for e in o.before:
        survived = e.message_id in kept
        _entry_line(
            e,
            out,
            style_of.get("kept" if survived else "folded", Style()),
            "✓ " if survived else "✗ ",
        )
    return out


def after_text(o: OpenedCompaction, style_of: dict[str, Style]) -> Text:
    """What came after: the summary, preserved messages, the files restored, the pinned sources
    lost, and every folded message, heaviest first."""
    heading = style_of.get("heading", Style(bold=True))
    dim = style_of.get("dim", Style(dim=True))
    out = Text(no_wrap=True, overflow="ellipsis")
    if o.after_request is None:
        out.append("after · no request was made after it\n", heading)
    else:
        out.append(
            f"after · request {o.after_request} · {len(o.after):,} message{'' if len(o.after) == 1 else 's'}"
            f" · {tokens(o.after_tokens or 0)} tokens\n",
            heading,
        )
    if o.summary is not None:
        out.append(f"summary · {tokens(o.summary.weight)} tokens\n", Style(bold=True))
        out.append(f"  {_v(o.summary.text)}\n")
    else:
        out.append("no summary recorded\n", dim)
    out.append(f"preserved · {len(o.preserved):,}\n", Style(bold=True))
    for e in o.preserved:
        _entry_line(e, out, style_of.get("kept", Style()), "  ")
    if o.restored_candidates:
        out.append("files restored (not in the transcript: the files read last)\n", Style(bold=True))
        for path in o.restored_candidates:
            out.append(f"  {path.rsplit('/', 1)[-1]}", Style(bold=True))
            out.append(f"  {path}\n", dim)
    out.append("\n")
    if o.lost_pins:
        out.append("pinned sources folded\n", heading)
        for pin in o.lost_pins:
            style = style_of.get("kept" if pin.survived else "lost", Style(bold=True))
            fate = "the same source is in the ledger after it" if pin.survived else "did not survive"
            out.append(f"⚑ {_v(pin.source)}", style)
            out.append(f" · {pin.count:,} message{'' if pin.count == 1 else 's'} · {tokens(pin.weight)} tokens · ")
            out.append(f"{fate}\n", style)
    else:
        out.append("no pinned source was folded\n", dim)
    out.append("\n")
    out.append(
        f"folded · {len(o.folded):,} messages · {tokens(o.folded_tokens)} tokens, heaviest first\n", heading
    )
    for e in o.folded:
        _entry_line(e, out, style_of.get("folded", Style()), "  ")
    return out


def compaction_note(o: OpenedCompaction) -> Text:
    """The side pane's few lines at a recorded compaction: what it took, and r for the rest."""
    out = Text()
    e = o.event
    pre = f"{e.pre_tokens:,} by its count" if e.pre_tokens else f"{o.before_tokens:,}"
    out.append(f"{_v(e.trigger or 'recorded')} · {pre}\n", Style(bold=True))
    out.append(f"{len(o.before):,} messages → {len(o.after):,}")
    if o.after_tokens is not None:
        out.append(f" · {tokens(o.before_tokens)} → {tokens(o.after_tokens)} tokens")
    out.append("\n")
    out.append(f"folded {len(o.folded):,} ({tokens(o.folded_tokens)} tokens)")
    if o.summary is not None:
        out.append(f" · summary {tokens(o.summary.weight)}")
    out.append("\n")
    lost = [p for p in o.lost_pins if not p.survived]
    if lost:
        out.append("lost: " + ", ".join(f"⚑ {_v(p.source)}" for p in lost), Style(bold=True))
    else:
        out.append("no pinned source lost")
    return out


class CompactionScreen(ModalScreen[None]):
    """A recorded compaction opened: the ledger before it beside what came after."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("r", "close", "Close", show=False),
        Binding("q", "close", "Close", show=False),
    ]

    def __init__(self, opened: OpenedCompaction) -> None:
        super().__init__(classes="window-screen")
        self.opened = opened

    def compose(self) -> ComposeResult:
        with Vertical(id="compaction-frame"):
            yield WindowText("", id="compaction-head", markup=False)
            with Horizontal(id="compaction-sides"):
                with VerticalScroll(id="compaction-before"):
                    yield WindowText("", id="compaction-before-text", markup=False)
                with VerticalScroll(id="compaction-after"):
                    yield WindowText("", id="compaction-after-text", markup=False)
        yield KeyBar()

    def on_mount(self) -> None:
        o = self.opened
        frame = self.query_one("#compaction-frame", Vertical)
        frame.border_title = line(f"the harness's compaction after request {o.before_request}")
        head = self.query_one("#compaction-head", WindowText)
        head.update(Text(_v(o.headline())))
        before = self.query_one("#compaction-before-text", WindowText)
        before.update(before_text(o, before.styles_map()))
        after = self.query_one("#compaction-after-text", WindowText)
        after.update(after_text(o, after.styles_map()))
        self.query_one("#compaction-after", VerticalScroll).focus()

    def action_close(self) -> None:
        self.dismiss(None)


__all__ = [
    "CompactionScreen",
    "CompositionReady",
    "CompositionScreen",
    "WindowText",
    "after_text",
    "before_text",
    "compaction_note",
    "composition_text",
]
