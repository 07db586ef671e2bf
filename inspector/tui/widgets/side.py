"""The side panes: pinned sources at this request, and the selected message in detail."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual import getters
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Static

from inspector.tui.viewmodel import CellState, Detail, PinnedSource, tokens

DETAIL_CONTENT_LIMIT = 20_000
"""Characters of content the pane shows; the full message opens with enter."""

STATE_STYLE = {
    CellState.SAME: "same",
    CellState.GONE: "same",
    CellState.TRUNCATED: "truncated",
    CellState.CLEARED: "cleared",
    CellState.REMOVED: "removed",
    CellState.SUMMARIZED: "summarized",
    CellState.SUMMARY: "summarized",
}


def pinned_text(sources: tuple[PinnedSource, ...], context: int, width: int) -> Text:
    """One line per pinned source: priority, name, weight and share of the context; under it,
    why it is pinned in the harness's terms."""
    out = Text(no_wrap=True, overflow="ellipsis")
    if not sources:
        out.append("no pinned source at this request", "italic")
        return out
    total = sum(s.weight for s in sources)
    share = total / context if context else 0.0
    head = f"{tokens(total)} tokens · {share:.1%} of context"
    if len(head) > width:
        head = f"{tokens(total)} · {share:.1%}"
    out.append(head + "\n", "bold")
    weight_width = max(len(tokens(s.weight)) for s in sources)
    # "priority 100" where the pane is wide enough for it and a name of 10 cells; else the number
    word = "priority " if width - 2 - 13 - (weight_width + 1) - 6 >= 10 else ""
    room = max(6, width - 2 - 4 - len(word) - (weight_width + 1) - 6)
    for i, s in enumerate(sources):
        kind = s.kind.replace("_", " ")
        name = s.name or kind
        if s.count > 1:
            name += f" ×{s.count}"
        extra = f" ({kind})" if s.name and len(name) + len(kind) + 3 <= room else ""
        shown = name if len(name) <= room else name[: room - 1] + "…"
        out.append("⚑ ", "bold")
        out.append(f"{word}{s.priority:>3} ", "dim")
        out.append(shown)
        out.append(extra, "dim")
        out.append(" " * max(0, room - len(shown) - len(extra)))
        out.append(f" {tokens(s.weight):>{weight_width}} {s.share:>5.1%}")
        if s.why:
            # why it is pinned, in the harness's terms, under its line
            why = s.why if len(s.why) <= width - 2 else s.why[: max(1, width - 3)] + "…"
            out.append("\n  " + why, "dim italic")
        if i < len(sources) - 1:
            out.append("\n")
    return out


class PinnedSources(Widget):
    """Pinned sources (priority >= 70) at the current request, each with why it is pinned (laid out
    for the pane's width)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.sources: tuple[PinnedSource, ...] = ()
        self.context = 0

    def show(self, sources: tuple[PinnedSource, ...], context: int) -> None:
        # a new height (another number of sources) moves what is below: only then a new layout
        resized = [bool(s.why) for s in sources] != [bool(s.why) for s in self.sources]
        self.sources, self.context = sources, context
        self.refresh(layout=resized)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return 1 + max(1, sum(2 if s.why else 1 for s in self.sources))

    def render(self) -> Text:
        return pinned_text(self.sources, self.context, max(20, self.content_region.width))


def detail_text(
    detail: Detail,
    styles: dict[str, Style],
    limit: int | None = DETAIL_CONTENT_LIMIT,
    *,
    content: bool = True,
) -> Text:
    """The selected message: title, origin, weight, fate per layer, explanation, and (unless
    `content` is False) its content, cut at `limit` characters. Built from plain strings."""
    out = Text()
    out.append(detail.title, styles.get("title", Style(bold=True)))
    out.append(f"  {detail.message_id}\n", styles.get("dim", Style(dim=True)))
    out.append(f"{detail.origin}\n", styles.get("dim", Style(dim=True)))
    out.append(f"weight {tokens(detail.weight)} tokens · {detail.share:.1%} of context\n")
    out.append(f"source {detail.source}\n")
    out.append("\n")
    out.append(f"fate at request {detail.request}\n", styles.get("heading", Style(bold=True)))
    for fate in detail.fates:
        out.append(f"{fate.layer}: ", Style(bold=True))
        out.append(f"{fate.text}\n", styles.get(STATE_STYLE[fate.state], Style()))
    out.append(detail.explanation, styles.get("explain", Style(italic=True)))
    if not content:
        return out
    out.append("\n\n")
    out.append("content\n", styles.get("heading", Style(bold=True)))
    body = detail.content
    if limit is not None and len(body) > limit:
        out.append(body[:limit])
        out.append(
            f"\n… {len(body) - limit:,} more characters (enter opens the whole message)", Style(italic=True)
        )
    else:
        out.append(body or "(empty)")
    return out


class MessageDetail(VerticalScroll):
    """The selected message: its content (scrollable), origin, weight and its fate in each layer."""

    COMPONENT_CLASSES = {
        "detail--title",
        "detail--dim",
        "detail--heading",
        "detail--explain",
        "detail--same",
        "detail--truncated",
        "detail--cleared",
        "detail--removed",
        "detail--summarized",
    }

    body = getters.query_one("#detail-body", Static)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.detail: Detail | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="detail-body", markup=False)

    def styles_map(self) -> dict[str, Style]:
        names = (
            "title",
            "dim",
            "heading",
            "explain",
            "same",
            "truncated",
            "cleared",
            "removed",
            "summarized",
        )
        return {n: self.get_component_rich_style(f"detail--{n}", partial=True) for n in names}

    def show(self, detail: Detail | None) -> None:
        self.detail = detail
        body = self.body
        if detail is None:
            body.update(Text("no message selected", style="italic"))
            return
        body.update(detail_text(detail, self.styles_map()))
        self.scroll_home(animate=False)

    @property
    def plain(self) -> str:
        """What the pane shows, as plain text (for tests)."""
        if self.detail is None:
            return ""
        return detail_text(self.detail, {}).plain
