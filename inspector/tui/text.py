"""Text for the screen from plain strings: through the one sanitizer, never read as markup.

Everything a transcript holds (content, names, ids, paths, triggers, reasons, errors, model
names) may carry escape sequences and markup. The rule, where text meets the terminal:

- every string shown goes through `inspector.model.sanitize.visible` (controls become escapes
  such as `\\x1b`, so no OSC 52, OSC 2, OSC 8 or CSI ever reaches the terminal);
- nothing is parsed as markup: the app builds `Content` (or `rich.text.Text`) from the plain
  result. A `str` given to `border_title`, `border_subtitle`, `Static.update` of a widget with
  markup on, or `notify` with markup on would be read as Textual markup (`Bash[/]` raises
  MarkupError, `[@click=…]` becomes an action): those take what these functions return.

`visible` leaves a backslash alone and escapes make only printable ASCII, so text that went through
it already (the view model's strings) comes out the same: a second pass changes nothing.
"""

from __future__ import annotations

from textual.content import Content
from textual.notifications import SeverityLevel
from textual.widget import Widget

from inspector.model.sanitize import visible


def line(text: str, style: str = "") -> Content:
    """One line (a title, a border, a status): controls visible, a newline as `⏎ `, never markup."""
    return Content.styled(visible(text, newlines=False), style)


def lines(text: str, style: str = "") -> Content:
    """Text of several lines (newlines and tabs kept), controls visible, never markup."""
    return Content.styled(visible(text), style)


def join(*parts: str | tuple[str, str]) -> Content:
    """One line from pieces, some styled `(text, style)`; each piece made visible, never markup."""
    return Content.assemble(
        *(
            (visible(p[0], newlines=False), p[1]) if isinstance(p, tuple) else visible(p, newlines=False)
            for p in parts
        )
    )


def notify(
    node: Widget,
    message: str,
    *,
    title: str = "",
    severity: SeverityLevel = "information",
    timeout: float | None = None,
) -> None:
    """A toast whose message (and title) are shown as text: visible, never markup."""
    node.notify(
        visible(message),
        title=visible(title, newlines=False),
        severity=severity,
        timeout=timeout,
        markup=False,
    )


__all__ = ["join", "line", "lines", "notify", "visible"]
