"""Text drawn a cell at a time, appended a run at a time."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import groupby
from operator import itemgetter

from rich.style import Style
from rich.text import Text

_char = itemgetter(0)
_style = itemgetter(1)


def append_runs(out: Text, cells: Iterable[tuple[str, str]], style_of: Callable[[str], Style]) -> None:
    """Append (character, style name) cells to `out`, one span per run of cells of one style:
    a bar of a hundred cells in four styles renders as four spans, not a hundred."""
    for name, run in groupby(cells, key=_style):
        out.append("".join(map(_char, run)), style_of(name))
