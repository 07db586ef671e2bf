"""Messages the worker threads post to the main screen (post_message is thread-safe)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from inspector.model import SubagentRef, Transcript
from inspector.replay import Replay
from inspector.shaping import Policy
from inspector.tui.viewmodel import Detail, SessionView, StepView

if TYPE_CHECKING:  # what the first frame does not import (the messages only name them)
    from inspector.findings import Finding
    from inspector.live import FollowUpdate, SessionInfo
    from inspector.scenarios import Tour
    from inspector.tui.live import Opened


@dataclass
class ReplayReady(Message):
    """A replay is ready (after loading, or under a new policy or window)."""

    replay: Replay
    session: SessionView
    generation: int


@dataclass
class LoadFailed(Message):
    """Loading or re-shaping failed; `reason` is one line for the user."""

    reason: str
    generation: int


@dataclass
class StepReady(Message):
    """One request, laid out."""

    view: StepView
    generation: int
    keep: str | None
    """The message id to keep the cursor on."""
    bottom: bool = False
    """Put the cursor on the newest message instead (live following)."""


@dataclass
class HarnessReady(Message):
    """The harness's own estimates of the replay of `generation` are computed (live: after the
    grown transcript is on screen, so that they never hold it back)."""

    generation: int


@dataclass
class ScanProgress(Message):
    """The background scan of every request: which layers fired where, so far."""

    fired: dict[int, frozenset[str]]
    simulated: frozenset[int]
    scanned: int
    total: int
    generation: int
    sent: tuple[int, ...] = ()
    """What the pipeline sends at requests 1..len(sent) (the chart's second series)."""


@dataclass
class FindingsReady(Message):
    """`find_all` of the replay of `generation`."""

    findings: list[Finding]
    generation: int


@dataclass
class TourReady(Message):
    """A scenario's tour and its stops."""

    tour: Tour


@dataclass
class DetailReady(Message):
    detail: Detail | None
    generation: int


@dataclass
class SearchDone(Message):
    query: str
    row: int | None
    request: int
    generation: int


# -- live following ------------------------------------------------------------------------------
@dataclass
class TranscriptChanged(Message):
    """The followed file changed (the tail worker's update)."""

    update: FollowUpdate


@dataclass
class LiveReplayReady(Message):
    """The grown (or re-read) transcript, replayed."""

    replay: Replay
    session: SessionView
    generation: int
    reset_reason: str | None
    """Why the file was re-read from the start, when it was."""
    view: StepView | None = None
    """The request the screen is expected to show, laid out (None: none was)."""


@dataclass
class LiveFailed(Message):
    """Reading or replaying the grown transcript failed; following goes on."""

    reason: str
    generation: int


# -- the session picker --------------------------------------------------------------------------
@dataclass
class SessionsFound(Message):
    """discover() is done."""

    sessions: list[SessionInfo]


@dataclass
class OpenProgress(Message):
    """Bytes read so far of the transcript being opened."""

    done: int
    total: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, OpenProgress)


@dataclass
class SessionOpened(Message):
    """The chosen transcript is read (and its follower, when it is followed)."""

    opened: Opened
    policy: str | Policy | None
    window: int | None


@dataclass
class OpenFailed(Message):
    reason: str


@dataclass
class SubagentLoaded(Message):
    """A subagent's own transcript, read (to be opened on a main screen of its own)."""

    transcript: Transcript
    agent: SubagentRef
    generation: int
