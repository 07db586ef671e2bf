"""Messages the worker threads post to the main screen (post_message is thread-safe)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from inspector.replay import Replay
from inspector.tui.viewmodel import Detail, SessionView, StepView


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


@dataclass
class ScanProgress(Message):
    """The background scan of every request: which layers fired where, so far."""

    fired: dict[int, frozenset[str]]
    simulated: frozenset[int]
    scanned: int
    total: int
    generation: int


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
