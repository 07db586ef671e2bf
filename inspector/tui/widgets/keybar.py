"""The key bar: the screen's shown key bindings on one line, as Textual's Footer shows them.

One widget that draws every key itself, where the Footer mounts a widget per key and mounts them
all again whenever the bindings may have changed (at every change of focus): at the first paint
of a session, three times over, some 0.08 s of the app's 0.55 s. Here a change of bindings is
one repaint. A key is pressed by clicking it; a disabled one is drawn dim and rings the bell; the
command palette's key sits at the right end. A key the screen's `hides_key(action)` names is left
out (it still runs, and says why it does nothing there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from rich.style import Style
from rich.text import Text
from textual import events
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.binding import ActiveBinding
    from textual.screen import Screen


class KeySpan(NamedTuple):
    """One key as drawn: its cells [start, end) on the line."""

    start: int
    end: int
    key: str
    enabled: bool
    tooltip: str


class KeyBar(Widget):
    """The shown bindings of the screen: ` key description` each, the palette's at the right."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"key-bar--key", "key-bar--description", "key-bar--hover", "key-bar--rule"}
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        width: 1fr;
        color: $footer-foreground;
        background: $footer-background;
        .key-bar--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .key-bar--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .key-bar--hover {
            background: $block-hover-background;
        }
        .key-bar--rule {
            color: $foreground 20%;
        }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.spans: list[KeySpan] = []
        """The keys as last drawn."""
        self.hovered: str | None = None

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        self.refresh()

    def _shown(self) -> tuple[list[ActiveBinding], ActiveBinding | None]:
        """The bindings to draw (the first of each action, as the Footer does) and the palette's."""
        active = self.screen.active_bindings
        app = self.app
        palette = active.get(app.COMMAND_PALETTE_BINDING) if app.ENABLE_COMMAND_PALETTE else None
        hides = getattr(self.screen, "hides_key", None)  # keys that say why they do nothing here
        seen: set[str] = set()
        out: list[ActiveBinding] = []
        for shown in active.values():
            if not shown.binding.show or shown.binding.action in seen or shown is palette:
                continue
            if hides is not None and hides(shown.binding.action):
                continue
            seen.add(shown.binding.action)
            out.append(shown)
        return out, palette

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-bar--key")
        text_style = self.get_component_rich_style("key-bar--description")
        hover = self.get_component_rich_style("key-bar--hover")
        dim = Style(dim=True)
        shown, palette = self._shown()

        def add(active: ActiveBinding, into: Text, spans: list[KeySpan], bare: bool = False) -> None:
            # `bare`: the palette's key, drawn without padding, its description with a cell before
            # it, then a cell of the bar's own
            binding = active.binding
            start = into.cell_len
            extra = hover if binding.key == self.hovered else Style()
            if not active.enabled:
                extra += dim
            key = self.app.get_key_display(binding)
            if bare:
                into.append(key, key_style + extra)
                if binding.description:
                    into.append(f" {binding.description}", text_style + extra)
                into.append(" ")
            else:
                into.append(f" {key} ", key_style + extra)
                if binding.description:
                    into.append(f"{binding.description} ", text_style + extra)
            tooltip = active.tooltip or binding.tooltip or binding.description
            spans.append(KeySpan(start, into.cell_len, binding.key, active.enabled, tooltip))

        line = Text(no_wrap=True, overflow="crop", end="")
        spans: list[KeySpan] = []
        shown = self._fitting(shown, palette)
        for active in shown:
            add(active, line, spans)
        if palette is not None:
            # the palette's key at the right end, over the others where the line is too short
            right = Text("▏", self.get_component_rich_style("key-bar--rule"), no_wrap=True, end="")
            ends: list[KeySpan] = []
            add(palette, right, ends, bare=True)
            at = max(0, self.size.width - right.cell_len)
            if line.cell_len > at:
                line.truncate(at)
                spans = [s._replace(end=min(s.end, at)) for s in spans if s.start < at]
            else:
                line.append(" " * (at - line.cell_len))
            spans.extend(s._replace(start=s.start + at, end=s.end + at) for s in ends)
            line.append_text(right)
        self.spans = spans
        return line

    def _width(self, active: ActiveBinding) -> int:
        binding = active.binding
        key = self.app.get_key_display(binding)
        return len(key) + 2 + (len(binding.description) + 1 if binding.description else 0)

    def _fitting(self, shown: list[ActiveBinding], palette: ActiveBinding | None) -> list[ActiveBinding]:
        """The keys that fit the line: all of them, or, when they do not, the most useful first
        (the screen's `KEY_PRIORITY`, actions in order; the others after, in their order), drawn
        in their own order, so that help and quit never fall off a narrow terminal."""
        room = self.size.width
        if palette is not None:
            room -= self._width(palette) + 1
        if sum(self._width(a) for a in shown) <= room:
            return shown
        priority: tuple[str, ...] = getattr(self.screen, "KEY_PRIORITY", ())
        rank: dict[str, int] = {}
        for i, action in enumerate(priority):
            rank.setdefault(action, i)  # an action named twice ranks where it is named first
        order = sorted(range(len(shown)), key=lambda i: (rank.get(shown[i].binding.action, len(rank)), i))
        kept: set[int] = set()
        used = 0
        for i in order:
            w = self._width(shown[i])
            if used + w <= room:
                kept.add(i)
                used += w
        return [a for i, a in enumerate(shown) if i in kept]

    def key_at(self, x: int) -> KeySpan | None:
        """The key drawn at cell x, if any."""
        return next((s for s in self.spans if s.start <= x < s.end), None)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        span = self.key_at(event.x)
        key = span.key if span is not None else None
        if key != self.hovered:
            self.hovered = key
            self.tooltip = span.tooltip if span is not None and span.tooltip else None
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self.hovered is not None:
            self.hovered = None
            self.refresh()

    def on_click(self, event: events.Click) -> None:
        span = self.key_at(event.x)
        if span is None:
            return
        event.stop()
        if span.enabled:
            self.app.simulate_key(span.key)
        else:
            self.app.bell()
