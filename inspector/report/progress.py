"""What the command line shows on a terminal while a big transcript is read.

A 400 MB session takes seconds to read before anything else can happen; a blank terminal for that
long looks like a hang. `LoadProgress` is the `Progress` the readers call after every chunk: once
the read has taken longer than `DELAY_S` it writes one line to standard error, rewritten in place
at most every `INTERVAL_S` ("reading NAME: 120 MB of 400 MB (30%)", then "building the
transcript"), and erases it when the load is over. Nothing is written where standard error is not
a terminal (scripts, pipes, tests), so standard output and logs never hold it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TextIO

from inspector.model.sanitize import one_line

DELAY_S = 0.4
"""A read shorter than this shows nothing (no flicker for the usual small session)."""
INTERVAL_S = 0.1
"""The line is rewritten at most this often."""
ERASE = "\r\x1b[2K"
"""Back to the start of the line and erase it (every terminal the app runs in knows both)."""


def human_size(n: int) -> str:
    """1.9 MB, 830 KB, 412 B."""
    if n < 1000:
        return f"{n} B"
    value = float(n)
    for unit in ("KB", "MB", "GB"):
        value /= 1000
        if value < 1000 or unit == "GB":
            return f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{n} B"  # pragma: no cover - the loop always returns


class LoadProgress:
    """A `Progress` that keeps one line on a terminal up to date (see the module docstring)."""

    def __init__(
        self, path: str | os.PathLike[str], stream: TextIO, now: Callable[[], float] = time.monotonic
    ) -> None:
        self.name = one_line(os.path.basename(os.fspath(path)), 60) or "the transcript"
        self.stream = stream
        self._now = now
        self.started = self._now()
        self._last = -INTERVAL_S
        self.shown = False
        """Something is on the line (erased by `close`)."""

    def __call__(self, done: int, total: int) -> None:
        now = self._now()
        if now - self.started < DELAY_S or (now - self._last < INTERVAL_S and done < total):
            return
        self._last = now
        if done < total:
            text = f"reading {self.name}: {human_size(done)} of {human_size(total)} ({100 * done // total}%)"
        else:
            text = f"read {self.name} ({human_size(total)}): building the transcript…"
        self.stream.write(ERASE + text)
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """Erase the line, if one was written."""
        if self.shown:
            self.stream.write(ERASE)
            self.stream.flush()
            self.shown = False


def progress_for(path: str | os.PathLike[str], stream: TextIO) -> LoadProgress | None:
    """A LoadProgress on `stream` where it is a terminal; None elsewhere."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        tty = False
    return LoadProgress(path, stream) if tty else None
