"""Live following and session opening for the app, as plain functions (no Textual here).

- Opening: `open_transcript(path, follow=...)` reads a transcript (with progress, for the picker)
  and, when following, hands back the `Follower` that has read it, so the app's tail picks up at
  exactly the byte the load stopped at.
- Following by default: a file that changed in the last minute is probably still being written
  (`recently_modified`, the same minute discovery marks "live").
- Pressure lines: `crossing()` tells when the newest request's calibrated context crossed the
  warning line or the trigger since the last update.
- Growing the replay: `next_replay()` is the one place a grown transcript becomes a Replay.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal

from inspector.formats import LoaderError, Progress, detect, load
from inspector.harness_rules import CLAUDE_WARNING_BELOW
from inspector.live.discovery import LIVE_SECONDS
from inspector.live.follow import (
    Follower,
    ReloadingReader,
    follower_for,
)
from inspector.model import Transcript
from inspector.replay import Replay
from inspector.replay.distance import distance_text, distances
from inspector.shaping import Policy

WARNING_BELOW_TRIGGER = CLAUDE_WARNING_BELOW
"""Claude Code warns 20,000 tokens below its auto-compact threshold (its warning and error
thresholds sit at threshold - 20,000; the figure is the table of rules'); the app draws its
warning line the same distance below the policy's trigger, but never below the target."""
READ_CHUNK = 4 << 20
"""Bytes read between two progress reports while a transcript is opened."""


# -- following by default ------------------------------------------------------------------------
def recently_modified(path: str | os.PathLike[str], now: float | None = None) -> bool:
    """Whether a transcript FILE changed in the last LIVE_SECONDS (a folder never counts).

    An opencode database is written through its `-wal` file: that one counts too.
    """
    p = Path(path)
    now = time.time() if now is None else now
    try:
        if not p.is_file():
            return False
        latest = p.stat().st_mtime
    except OSError:
        return False
    wal = p.with_name(p.name + "-wal")
    with contextlib.suppress(OSError):
        latest = max(latest, wal.stat().st_mtime)
    return now - latest <= LIVE_SECONDS


# -- pressure lines ------------------------------------------------------------------------------
def warning_line(trigger: int, target: int) -> int:
    """The warning line: WARNING_BELOW_TRIGGER under the trigger, clamped at the target."""
    return max(target, trigger - WARNING_BELOW_TRIGGER)


@dataclass(frozen=True, slots=True)
class Crossing:
    """The newest request's context went from below a line to at or above it."""

    line: Literal["warning", "trigger"]
    value: int
    """Where the line is, in tokens."""
    request: int
    context: int

    def message(self, trigger: int, blocking: int | None = None, window: int | None = None) -> str:
        """One line: what was crossed, and how far the context now is from the trigger (and the
        blocking line and the window), in tokens and %, as the header says it (`distance_text`)."""
        far = distance_text(distances(self.context, trigger, blocking, window))
        if self.line == "trigger":
            return (
                f"request {self.request}: context {self.context:,} crossed the trigger {trigger:,}: "
                f"{far}; the policy's reactive layers act from here"
            )
        return (
            f"request {self.request}: context {self.context:,} crossed the warning line {self.value:,}: {far}"
        )


def crossing(before: int | None, after: int, request: int, trigger: int, target: int) -> Crossing | None:
    """The highest line the newest context crossed going up between two updates, if any.

    `before` is the newest request's context at the previous update (None: nothing to compare with,
    as after a reset). Crossing both lines at once reports the trigger only.
    """
    if before is None:
        return None
    lines: tuple[tuple[Literal["warning", "trigger"], int], ...] = (
        ("trigger", trigger),
        ("warning", warning_line(trigger, target)),
    )
    for name, value in lines:
        if before < value <= after:
            return Crossing(name, value, request, after)
    return None


# -- growing the replay ---------------------------------------------------------------------------
def next_replay(
    previous: Replay | None,
    transcript: Transcript,
    policy: str | Policy | None,
    window: int | None,
    window_source: str = "--window",
) -> Replay:
    """The replay of a grown (or re-read) transcript under the current policy and window.

    `previous` is None after a reset or a change of settings: then a full calibration. Otherwise
    the calibration goes on from where it stopped (`Replay.refreshed`), costing what was added.
    """
    if previous is None:
        return Replay.open(transcript, policy=policy, window=window, window_source=window_source)
    return previous.refreshed(transcript)


# -- opening -------------------------------------------------------------------------------------
@dataclass
class Opened:
    """A transcript, and the follower that read it when it is to be followed."""

    transcript: Transcript
    follower: Follower | None = None


def _load_opencode_session(path: Path, session_id: str) -> Transcript:
    from inspector.formats.opencode import OpencodeFormat

    return OpencodeFormat().load(path, session_id=session_id)


def open_transcript(
    path: str | os.PathLike[str],
    *,
    follow: bool,
    session_id: str | None = None,
    harness: str | None = None,
    progress: Progress | None = None,
) -> Opened:
    """Read the transcript at `path`; with `follow`, through the follower the app will tail with.

    `session_id` with `harness="opencode"` picks one session of an opencode database or storage.
    Raises LoaderError (one line) for anything the user should read.
    """
    p = Path(path)
    opencode_session = session_id if harness == "opencode" and session_id else None
    try:
        if follow:
            detect(p)  # a missing file, an unreadable one or no transcript: the usual one line
            if not p.is_file():
                raise LoaderError(f"cannot follow {p}: only a transcript file can be followed, not a folder")
            follower = follower_for(p)
            if opencode_session is not None:
                # follower_for picks the format's reader; this session, not the newest, is wanted.
                # (Whole-file mode makes a fresh reader at every change, the first poll included.)
                load_one = partial(_load_opencode_session, session_id=opencode_session)
                follower.make_reader = partial(ReloadingReader, load=load_one)
            size = _size(p)
            while True:
                update = follower.poll_once(READ_CHUNK)
                if progress is not None:
                    progress(min(update.offset, size), max(size, update.offset))
                if not update.more:
                    break
            return Opened(follower.transcript(), follower)
        if opencode_session is not None:
            return Opened(_load_opencode_session(p, opencode_session))
        return Opened(load(p, progress=progress))
    except OSError as exc:
        raise LoaderError(f"cannot read {p}: {exc.strerror or exc}") from None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
