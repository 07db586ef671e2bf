"""The app: one main screen (gauge, sparkline, pipeline columns, side panes), modals, workers.

The session shown (`inspector.session.Session`, no Textual) owns the replay and its lock, the paced
background scan, the live rebuilds and the findings cache. The screen's workers (threads) call it
and post what it returns; the screen's message handlers hand the results to the widgets. Widgets
never shape. The screen keeps display and key routing.

Every `@work` here names its `description`: without one Textual builds it from `repr()` of the
arguments, which for a StepView of 100,000 messages takes over a minute on the UI thread.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from textual import getters, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.reactive import var
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, Static
from textual.worker import Worker, WorkerState, get_current_worker

from inspector.formats import LoaderError, load
from inspector.model import RecordedEvent, SubagentRef, Transcript
from inspector.model.bulk import hold_loaded
from inspector.model.cost import money_at
from inspector.model.sanitize import one_line
from inspector.replay import Replay, ReplayError, Step
from inspector.replay.folded import OpenedCompaction
from inspector.replay.settings import RunSettings, WindowSource
from inspector.session import SCAN_TAIL_S as SCAN_TAIL_S  # (re-exported: where the tests look)
from inspector.session import SCAN_YIELD_S as SCAN_YIELD_S
from inspector.session import Pacer as Pacer
from inspector.session import Rebuild, ScanState, Session
from inspector.shaping import PRESETS, Policy, PolicyError
from inspector.tui.banner import sample_banner
from inspector.tui.first import waiting_status
from inspector.tui.messages import (
    DetailReady,
    FindingsReady,
    HarnessReady,
    LiveFailed,
    LiveReplayReady,
    LoadFailed,
    ReplayReady,
    ScanProgress,
    SearchDone,
    SessionOpened,
    StepReady,
    SubagentLoaded,
    TourReady,
    TranscriptChanged,
)
from inspector.tui.text import join, line, lines, notify
from inspector.tui.viewmodel import (
    SIMULATED_COMPACTION_LAYERS,
    SessionView,
    StepView,
    build_detail,
    build_step_view,
    event_notes,
    is_event,
    parse_window,
    searchable_text,
    session_view,
    tokens,
)
from inspector.tui.widgets.columns import LedgerColumns
from inspector.tui.widgets.gauge import PressureGauge, numbers, when
from inspector.tui.widgets.keybar import KeyBar
from inspector.tui.widgets.side import MessageDetail, PinnedSources
from inspector.tui.widgets.sparkline import ContextSparkline, legend
from inspector.tui.window import CompositionReady, compaction_note

if TYPE_CHECKING:  # the modal screens and what only they use are imported when opened
    from inspector.findings import Finding
    from inspector.live import Follower, SessionInfo
    from inspector.scenarios import Tour
    from inspector.tui.lab import LabResult

Start = Literal["first", "last"] | int
RESET_WORDS = {
    "truncated": "was truncated",
    "replaced": "was replaced",
    "rewritten": "was rewritten",
    "reappeared": "came back",
    "changed": "changed",
}
"""FollowUpdate.reset_reason, as the notification says it."""
DETAIL_DELAY = 0.06
"""Seconds the cursor must rest on a row before its detail is computed (holding a key down
spawns no work)."""


def step_view(
    replay: Replay,
    step: Step,
    events: list[RecordedEvent],
    *,
    wait: bool = True,
    compaction: OpenedCompaction | None = None,
) -> StepView:
    """A replayed request laid out for the widgets (in a worker thread: it walks the whole ledger).

    `wait` False: the harness's own estimate only if it is known already (a live update must
    not wait for a pass over the whole session; the scan brings it, `HarnessReady`).
    `compaction`: the recorded compaction right before it, opened (`open_compaction`)."""
    requests = replay.transcript.requests
    previous = requests[step.index - 2].timestamp if step.index >= 2 else None
    money = money_at(replay.transcript, step.index)
    return build_step_view(
        index=step.index,
        total=len(replay),
        policy=replay.policy.name,
        pin_policy=replay.policy,
        window=replay.window,
        window_source=replay.window_source,
        ledger=step.ledger,
        weights=step.weights,
        layers=step.result.layers,
        context=step.context,
        reported=step.reported,
        predicted=step.predicted,
        sent=step.result.sent_tokens,
        input_tokens=step.result.input_tokens,
        lines=step.budget.lines(),
        trigger=step.budget.trigger,
        target=step.budget.target,
        events=[*events, *replay.events_at(step.index)],
        result=step.result,
        harness=replay.harness_estimate(step.index, wait=wait),
        decides_as_harness=replay.decides_as_harness,
        cost=money.text,
        priced=money.priced,
        timestamp=step.request.timestamp,
        model=step.request.model,
        previous_timestamp=previous,
        opened=compaction,
    )


def _layout(
    replay: Replay,
    step: Step,
    events: list[RecordedEvent],
    compaction: OpenedCompaction | None,
    *,
    wait: bool,
) -> StepView:
    """`step_view` as the session's `Layout`."""
    return step_view(replay, step, events, wait=wait, compaction=compaction)


def palette_entries(
    bindings: Iterable[BindingType], key_display: Callable[[Binding], str] = lambda b: b.key
) -> list[tuple[str, str, str]]:
    """The command palette's entries, from a screen's bindings (one source of truth): (name, help,
    action) for every binding, its footer label as the name, its tooltip and key as the help. A
    key bound twice to one action is one entry."""
    entries: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for binding in Binding.make_bindings(bindings):
        if binding.action in seen:
            continue
        seen.add(binding.action)
        said = binding.tooltip or binding.description
        entries.append((binding.description, f"{said} · key {key_display(binding)}", binding.action))
    return entries


class InspectorCommands(Provider):
    """Every key's action (`MainScreen.BINDINGS`), and every policy preset, in the command palette."""

    def _keys(self) -> list[tuple[str, str, str]]:
        return palette_entries(MainScreen.BINDINGS, self.app.get_key_display)

    def _commands(self) -> Iterable[tuple[str, str, str]]:
        yield from self._keys()
        for policy in PRESETS.values():
            yield (f"Policy: {policy.name}", policy.description, f"set_policy('{policy.name}')")

    async def discover(self) -> Hits:
        screen = self.screen
        if not isinstance(screen, MainScreen):
            return
        for name, help_text, action in self._keys():
            yield DiscoveryHit(name, partial(screen.run_action, action), help=help_text)

    async def search(self, query: str) -> Hits:
        screen = self.screen
        if not isinstance(screen, MainScreen):
            return
        matcher = self.matcher(query)
        for name, help_text, action in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), partial(screen.run_action, action), help=help_text)


class MainScreen(Screen[None]):
    """Gauge and sparkline on top, the pipeline columns in the middle, pinned sources and detail beside.

    Live following (with a `follower`): the "tail" worker waits on the follower's `updates()` (it
    never ends by itself); each update that changed the file marks the transcript dirty, and one
    "live" thread worker at a time reads the grown transcript, replays it and posts it (updates
    arriving meanwhile are folded into the next round). The view stays on the newest request while
    `following`; any step away pauses it and the header counts the requests that arrived since.
    """

    AUTO_FOCUS = "#columns"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left_square_bracket", "previous_request", "Prev req", tooltip="Previous request"),
        Binding("right_square_bracket", "next_request", "Next req", tooltip="Next request"),
        Binding(
            "n",
            "next_event",
            "Next event",
            tooltip="Next request where a layer starts firing or a compaction was recorded",
        ),
        Binding("N", "previous_event", "Prev event", tooltip="Previous such request"),
        Binding("g", "goto", "Go to", tooltip="Go to a request by number"),
        Binding("less_than_sign", "first_request", "First request", tooltip="Jump to request 1", show=False),
        Binding(
            "greater_than_sign",
            "last_request",
            "Last request",
            tooltip="Jump to the newest request",
            show=False,
        ),
        Binding("f", "toggle_follow", "Follow", tooltip="Follow the newest request"),
        Binding(
            "slash", "search", "Search", tooltip="Find the next message containing a text, in this ledger"
        ),
        Binding("p", "choose_policy", "Policy", tooltip="Replay under another policy preset"),
        Binding("w", "set_window", "Window", tooltip="Replay with another context window"),
        Binding("full_stop", "next_stop", "Next stop", tooltip="Tour: the next stop"),
        Binding("comma", "previous_stop", "Prev stop", tooltip="Tour: the previous stop"),
        Binding("x", "composition", "Context", tooltip="What fills the window at this request (/context)"),
        Binding(
            "r",
            "open_compaction",
            "Compaction",
            tooltip="The harness's compaction right before this request: what it folded",
        ),
        Binding("v", "toggle_panel", "Panel", tooltip="Small terminals: pipeline → side panes → chart"),
        Binding(
            "F",
            "findings",
            "Findings",
            tooltip="What went wrong in this session (re-reads, storms, overflows…); enter goes there",
        ),
        Binding(
            "l",
            "lab",
            "What-if",
            tooltip="Change the window and the policy's parameters, replay, save as a policy file",
        ),
        Binding(
            "A",
            "calibrate",
            "Accuracy",
            tooltip="Calibration accuracy: the worst-predicted requests",
            show=False,
        ),
        Binding(
            "e",
            "export_svg",
            "SVG",
            tooltip="Save this screen as an SVG in the current directory",
        ),
        Binding("c", "compare", "Compare", tooltip="Compare this request under another policy"),
        Binding(
            "a",
            "subagents",
            "Subagents",
            tooltip="The subagents this session ran: enter opens one, esc there comes back",
        ),
        Binding("t", "toggle_theme", "Theme", tooltip="Light or dark theme", show=False),
        Binding("enter", "open_message", "Open", tooltip="Show the selected message full screen", show=False),
        Binding("question_mark", "help", "Help", tooltip="Keys and what the columns mean"),
        Binding("s", "sessions", "Sessions", tooltip="Back to the sessions on this machine"),
        Binding("q", "quit", "Quit", tooltip="Quit the app"),
        Binding(
            "escape",
            "close_search",
            "Back",
            tooltip="Close the search; on a subagent's transcript, back to its session",
        ),
        Binding(
            "end",
            "follow_newest",
            "Follow newest",
            tooltip="Live: follow the newest request again",
            show=False,
        ),
    ]

    following: var[bool] = var(False, init=False)
    """Stay on the newest request (live: as the transcript grows)."""

    PANELS: ClassVar[tuple[str, ...]] = ("columns", "side", "chart")
    """What the middle of a narrow screen shows, in the order `v` goes through them."""

    @property
    def KEY_PRIORITY(self) -> tuple[str, ...]:
        """The footer's keys in order of use, where not all fit: help and quit first."""
        tour = ("next_stop", "previous_stop") if self.tour_name is not None else ()
        narrow = ("toggle_panel",) if self.has_class("-narrow") else ()
        back = ("close_search",) if self.parent_screen is not None else ()
        return (
            *back,
            "help",
            "quit",
            *tour,
            *narrow,
            "previous_request",
            "next_request",
            "composition",
            "next_event",
            "open_compaction",
            "findings",
            "subagents",
            "compare",
            "lab",
            "export_svg",
            "goto",
            "search",
            "choose_policy",
            "set_window",
            "toggle_follow",
            "previous_event",
            "toggle_panel",
            "sessions",
        )

    gauge = getters.query_one("#gauge", PressureGauge)
    sparkline = getters.query_one("#sparkline", ContextSparkline)
    columns = getters.query_one("#columns", LedgerColumns)
    pinned = getters.query_one("#pinned", PinnedSources)
    detail = getters.query_one("#detail", MessageDetail)
    search_input = getters.query_one("#search", Input)

    def __init__(
        self,
        transcript: Transcript,
        policy: str | Policy | None = None,
        window: int | None = None,
        start: Start = "last",
        follower: Follower | None = None,
        tour: str | None = None,
        window_source: str = "--window",
        parent: MainScreen | None = None,
        agent: SubagentRef | None = None,
    ) -> None:
        super().__init__(id="main" if parent is None else None)
        self._preset_breakpoints()
        self.parent_screen = parent
        """The session's screen, when this one shows one of its subagents (esc goes back to it)."""
        self.agent = agent
        """The subagent shown (with `parent`)."""
        self.links: tuple[Transcript, dict[str, SubagentRef]] | None = None
        """Which messages of the transcript spawned or answered which subagent (`subagent_links`)."""
        self.tour_name = tour
        """A scenario whose guided tour runs beside the columns (`.`/`,` step through its stops)."""
        self.tour: Tour | None = None
        self.stop_index = 0
        self.core = Session(transcript, policy, window, window_source, follower)
        """The session shown: its replay and lock, the scan, live rebuilds, the findings (no Textual)."""
        self.start = start
        self.request = 0
        self.view: StepView | None = None
        self.session: SessionView | None = None
        self.last_query = ""
        self.pending: int | None = None
        self.detail_timer: Timer | None = None
        self.file_missing = False
        self.tail_stopped: str | None = None
        """Why following stopped (the tail worker failed), if it did."""
        self.seen_total = 0
        """Requests there were when the user stepped away from the newest one."""
        self.title_text = ""
        self.panel = "columns"
        """What the middle of a narrow screen shows (`PANELS`)."""
        if follower is not None:
            self.set_reactive(MainScreen.following, True)

    def _preset_breakpoints(self) -> None:
        """The breakpoint classes of the terminal's size (`InspectorApp.HORIZONTAL_BREAKPOINTS`),
        set before the first styles: set by the screen's first resize, as Textual does, they
        restyled every widget and its component classes a second time before the first frame.
        The resize still sets them (no change then, no restyle), and follows any later size."""
        try:
            app = self.app
        except RuntimeError:  # (NoActiveAppError) made outside an app: the first resize sets them
            return
        width, height = app.size
        for size, points in ((width, app.HORIZONTAL_BREAKPOINTS), (height, app.VERTICAL_BREAKPOINTS)):
            for start, name in sorted(points or [], reverse=True):
                if size >= start:
                    self.add_class(name, update=False)
                    break

    # -- the session's state, as the screen reads it ----------------------------------------------
    @property
    def transcript(self) -> Transcript:
        return self.core.transcript

    @property
    def replay(self) -> Replay | None:
        return self.core.replay

    @property
    def generation(self) -> int:
        return self.core.generation

    @property
    def follower(self) -> Follower | None:
        return self.core.follower

    @property
    def fired(self) -> dict[int, frozenset[str]]:
        return self.core.fired

    @property
    def scanned(self) -> int:
        return self.core.scanned

    @property
    def reshaping(self) -> bool:
        return self.core.reshaping

    @property
    def window_source(self) -> str:
        return self.core.window_source

    @property
    def replay_lock(self) -> threading.Lock:
        return self.core.lock

    @property
    def scan_rests_until(self) -> float:
        return self.core.rests_until

    # -- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static("", id="banner", markup=False)
        with Horizontal(id="top"):
            yield PressureGauge(id="gauge")
            yield ContextSparkline(id="sparkline")
        with Horizontal(id="middle"):
            yield LedgerColumns(id="columns")
            with Vertical(id="side"):
                if self.tour_name is not None:
                    yield Static("", id="narration", markup=False)
                yield Static("", id="compaction-note", markup=False)
                yield PinnedSources(id="pinned")
                yield MessageDetail(id="detail")
        yield Input(placeholder="search this ledger (enter: next match, esc: close)", id="search")
        yield KeyBar()

    @property
    def shown_name(self) -> str:
        """What the header calls this transcript: its file, or, for a subagent, whose it is."""
        if self.parent_screen is not None and self.agent is not None:
            return f"{self.parent_screen.shown_name} › subagent {one_line(self.agent.agent_id, 40)}"
        return self.file_name

    @property
    def file_name(self) -> str:
        """The transcript's file name, shown literally (control characters made visible)."""
        return one_line(os.path.basename(self.transcript.path), 120) or "transcript"

    @property
    def live(self) -> bool:
        """Following the file (whether or not the view sticks to the newest request)."""
        return self.follower is not None and self.tail_stopped is None

    def on_mount(self) -> None:
        name = self.file_name
        self.title_text = self.shown_name
        self._show_title()
        self.gauge.set_class(self.following, "-following")
        n = len(self.transcript.messages)
        self.gauge.status = (
            f"loading {name}: calibrating {n:,} messages over {len(self.transcript.requests):,} requests…"
        )
        self.sparkline.border_title = "context per request"
        self.sparkline.border_subtitle = line(legend(None))
        self.pinned.border_title = "pinned sources"
        self.detail.border_title = "message"
        self.columns.border_title = "pipeline"
        self.search_input.cursor_blink = False
        # no collections before the first columns are drawn (`Session.pause_collector`)
        self.core.pause_collector()
        self.load_replay(self.generation)
        if self.follower is not None:
            self.tail(self.follower)
        if self.tour_name is not None:
            self.add_class("-tour")
            narration = self.query_one("#narration", Static)
            narration.border_title = "tour"
            narration.update(line(f"preparing the tour of {self.tour_name}…"))
            self.load_tour(self.tour_name, self.generation)

    def on_unmount(self) -> None:
        self.core.resume_collector()  # closed before its first columns came

    # -- workers ------------------------------------------------------------------------------
    # Each calls the session (`self.core`) and posts what it returns; the handlers below show it.
    @work(
        thread=True,
        exclusive=True,
        group="load",
        exit_on_error=False,
        description="load and calibrate the transcript",
    )
    def load_replay(self, generation: int) -> None:
        try:
            replay, contexts = self.core.open()
        except (PolicyError, ReplayError, OSError, ValueError) as exc:
            self.post_message(LoadFailed(str(exc), generation))
            return
        session = session_view(contexts, self.transcript.events)
        self.post_message(ReplayReady(replay, session, generation))

    @work(exclusive=True, group="tail", exit_on_error=False, description="follow the transcript file")
    async def tail(self, follower: Follower) -> None:
        """Wait for the file to change and say so; never ends by itself (cancelled with the screen).

        The follower already read the file up to its offset: its first update is whatever was
        appended since, so nothing written between the load and the watch is lost.
        """
        async for update in follower.updates():
            self.post_message(TranscriptChanged(update))

    @work(
        thread=True,
        group="live",
        exit_on_error=False,
        description="read and replay the grown transcript",
    )
    def rebuild_live(self, order: Rebuild) -> None:
        """The follower's transcript of everything read so far, replayed (one at a time: see
        `_kick_live`), with the request to show laid out (`Session.rebuild`)."""
        layout = partial(_layout, wait=False)
        try:
            done = self.core.rebuild(order, layout)
        except Exception as exc:  # the transcript is untrusted: a failure must not stop following
            self.post_message(LiveFailed(f"cannot read the grown transcript: {exc}", order.generation))
            return
        session = session_view(done.contexts, done.transcript.events)
        self.post_message(
            LiveReplayReady(done.replay, session, order.generation, order.reset_reason, done.view)
        )

    @work(
        thread=True,
        exclusive=True,
        group="load",
        exit_on_error=False,
        description="replay under another policy or window",
    )
    def reshape(
        self, replay: Replay, policy: str | Policy | None, window: int | None, generation: int
    ) -> None:
        try:
            new = self.core.reshaped(replay, policy, window)
        except (PolicyError, ValueError) as exc:
            self.post_message(LoadFailed(str(exc), generation))
            return
        assert self.session is not None
        session = dataclasses.replace(self.session, simulated=frozenset(), scanned=0, sent=())
        self.post_message(ReplayReady(new, session, generation))

    @work(thread=True, exclusive=True, group="step", exit_on_error=False, description="shape one request")
    def compute_step(
        self, replay: Replay, k: int, generation: int, keep: str | None, bottom: bool = False
    ) -> None:
        # the first frame does not wait for the harness's estimates (a pass over the whole
        # session): the scan that starts once it is drawn brings them (`HarnessReady`)
        layout = partial(_layout, wait=self.view is not None)
        try:
            view = self.core.shape(replay, k, layout)
        except ReplayError as exc:
            self.post_message(LoadFailed(str(exc), generation))
            return
        self.post_message(StepReady(view, generation, keep, bottom))

    @work(
        thread=True,
        exclusive=True,
        group="scan",
        exit_on_error=False,
        description="scan every request for layers firing",
    )
    def scan(self, replay: Replay, generation: int, seed: dict[int, frozenset[str]]) -> None:
        """Which layers fire at every request (for the sparkline's marks and `n`/`N`); lazily.

        `seed`: requests 1..len(seed) already scanned (live: before the transcript grew)."""
        worker = get_current_worker()

        def cancelled() -> bool:
            return worker.is_cancelled

        known = self.session.sent if self.session is not None else ()
        first = self.follower is None and len(seed) < len(replay)  # first: the gauge shown lacks it
        if first and self.core.estimate_harness(replay, cancelled):
            self.post_message(HarnessReady(generation))
        states = self.core.scan(replay, seed, known, marks=SIMULATED_COMPACTION_LAYERS, cancelled=cancelled)
        for state in states:
            self.post_message(
                ScanProgress(state.fired, state.simulated, state.scanned, state.total, generation, state.sent)
            )
        if not cancelled() and self.core.estimate_harness(replay, cancelled):
            self.post_message(HarnessReady(generation))

    @work(
        thread=True,
        exclusive=True,
        group="detail",
        exit_on_error=False,
        description="detail of the selected message",
    )
    def compute_detail(self, view: StepView, row: int, generation: int) -> None:
        """The selected message in detail (needs no lock: it reads the step's own result)."""
        self.post_message(DetailReady(build_detail(view, row, self.transcript), generation))

    @work(thread=True, exclusive=True, group="search", exit_on_error=False, description="search the ledger")
    def run_search(self, view: StepView, query: str, start: int, generation: int) -> None:
        needle = query.casefold()
        count = len(view.rows)
        for i in range(1, count + 1):
            row = (start + i) % count
            message = view.message_at(row)
            if message is not None and needle in searchable_text(message).casefold():
                self.post_message(SearchDone(query, row, view.index, generation))
                return
        self.post_message(SearchDone(query, None, view.index, generation))

    # -- handlers -----------------------------------------------------------------------------
    @on(ReplayReady)
    def replay_ready(self, event: ReplayReady) -> None:
        if event.generation != self.generation:
            return
        replay = event.replay
        self.core.landed(replay)
        self.session = event.session
        self._set_title(replay)
        self._show_banner(replay)
        total = len(replay)
        if total == 0:
            self.gauge.status = self._no_requests()
            self.core.resume_collector()
        else:
            self.sparkline.show_session(event.session)
            if self.request == 0:
                if self.start == "first":
                    self.request = 1
                elif self.start == "last":
                    self.request = total
                else:
                    self.request = self.start
            self.request = max(1, min(self.request, total))
            if self.view is None:  # until its columns are shaped: the request's own report
                self.gauge.status = waiting_status(replay.transcript, self.request, replay.window, self.file_name)
            # live, at first: the cursor on the newest message
            self.show_request(self.request, bottom=self.live and self.following and self.view is None)
        self._first_replay_landed()

    @on(LoadFailed)
    def load_failed(self, event: LoadFailed) -> None:
        if event.generation != self.generation:
            return
        self.core.settings_failed()
        self.core.resume_collector()
        if self.view is None:
            self.gauge.status = f"cannot open: {one_line(event.reason, 400)}"
        notify(self, event.reason, title="context-inspector", severity="error")
        self._first_replay_landed()

    def _no_requests(self) -> str:
        if self.live:
            return "no requests yet: waiting for the first one (following the file)"
        return "this transcript has no requests: nothing was sent to a model"

    def _show_banner(self, replay: Replay) -> None:
        """A bundled sample opened with its own window: one line says what it is and why."""
        banner = self.query_one("#banner", Static)
        said = (
            sample_banner(self.transcript.path, replay.policy.name, replay.window)
            if replay.window_source == "sample"
            else None
        )
        if self.parent_screen is not None and self.agent is not None:
            from inspector.tui.subagents import subagent_line

            said = subagent_line(self.agent, self.parent_screen.file_name, self.parent_screen.request)
        banner.set_class(said is not None, "-shown")
        if said is not None:
            banner.update(line(said))

    def _set_title(self, replay: Replay) -> None:
        window = (
            f"window {tokens(replay.window)} ({replay.window_source})" if replay.window else "window unknown"
        )
        name = self.shown_name
        rule = f" · {replay.budget.rule}" if replay.budget.rule else ""  # the harness rule, by version
        self.title_text = f"{name} · policy {replay.policy.name} · {window}{rule}"
        self._show_title()

    def _show_title(self) -> None:
        """The gauge's title (the top line of the screen): the live badge, the file, policy, window.

        A Content, not a string: a file name is shown as text (`join`), never read as markup."""
        badge = self._live_badge()
        if badge is None:
            self.gauge.border_title = line(self.title_text)
        else:
            text, style = badge
            self.gauge.border_title = join((text, style), " · ", self.title_text)

    def _live_badge(self) -> tuple[str, str] | None:
        """What the header says about following: ● live, paused (+N new requests), file gone, stopped."""
        if self.follower is None:
            return None
        if self.tail_stopped is not None:
            return "■ not following", "bold $error"
        if self.file_missing:
            return "● live · file gone (what was read stays)", "bold $warning"
        if self.following:
            return "● live", "bold $success"
        new = max(0, self.total - self.seen_total)
        more = f" · +{new:,} new request{'' if new == 1 else 's'}" if new else ""
        return f"❚❚ paused{more} · f or end follows", "bold $warning"

    # -- live following -----------------------------------------------------------------------
    def _first_replay_landed(self) -> None:
        if self.core.first_landed():
            self._kick_live()

    @on(TranscriptChanged)
    def transcript_changed(self, event: TranscriptChanged) -> None:
        update = event.update
        if update.missing != self.file_missing:
            self.file_missing = update.missing
            if update.missing:
                notify(
                    self,
                    f"{self.file_name} is gone; what was read stays on screen",
                    title="following",
                    severity="warning",
                )
            self._show_title()
        self.core.file_changed(update)
        if update.changed:
            self._kick_live()

    def _kick_live(self) -> None:
        """Start a rebuild if the file changed and none is running (one at a time; changes that
        arrive meanwhile are read by the next one, so a burst costs two rebuilds, not one each)."""
        want = None if self.following or not self.request else self.request
        order = self.core.next_rebuild(want)
        if order is not None:
            self.rebuild_live(order)

    @on(LiveFailed)
    def live_failed(self, event: LiveFailed) -> None:
        self.core.rebuild_ended(event.generation, None, accepted=True)  # not read again: it failed
        if event.generation == self.generation:
            notify(self, event.reason, title="following", severity="error")
        self._kick_live()

    @on(LiveReplayReady)
    def live_replay_ready(self, event: LiveReplayReady) -> None:
        # The policy or window changed meanwhile (a newer generation): read it again under them.
        stale = event.generation != self.generation
        self.core.rebuild_ended(event.generation, event.reset_reason, accepted=not stale)
        if not stale:
            self._accept_live(event)
        self._kick_live()

    def _accept_live(self, event: LiveReplayReady) -> None:
        """The grown transcript replaces the old one: new generation, the newest request when
        following, notifications when the pressure crosses the warning line or the trigger."""
        from inspector.tui.live import crossing

        replay, reset = event.replay, event.reset_reason
        old = self.session.contexts if self.session is not None else ()
        before = old[-1] if old and reset is None else None
        seed = self.core.grew(replay, reset)  # what the scan found for the old requests holds
        simulated = frozenset(k for k, names in seed.items() if names & SIMULATED_COMPACTION_LAYERS)
        sent = self.session.sent[: len(seed)] if self.session is not None else ()
        self.session = dataclasses.replace(event.session, simulated=simulated, scanned=len(seed), sent=sent)
        total = len(replay)
        self._set_title(replay)
        if reset is not None:
            self.seen_total = min(self.seen_total, total)
            notify(
                self,
                f"{self.file_name} {RESET_WORDS.get(reset, 'changed')}: read again from the start",
                title="following",
                severity="warning",
            )
        if total == 0:
            self.view = None
            self.request = 0
            self.gauge.view = None
            self.gauge.status = self._no_requests()
            return
        self.sparkline.show_session(self.session)
        budget = replay.budget
        crossed = crossing(before, event.session.contexts[-1], total, budget.trigger, budget.target)
        if crossed is not None:
            notify(
                self,
                crossed.message(budget.trigger, budget.blocking, budget.window),
                title="context pressure",
                severity="error" if crossed.line == "trigger" else "warning",
                timeout=10,
            )
        at_bottom = self.view is None or self.columns.cursor_row >= len(self.view.rows) - 1
        if self.following or self.request == 0:
            self.request = total
        self.request = max(1, min(self.request, total))
        self._show_title()
        bottom = self.following and at_bottom
        view = event.view
        if view is not None and view.index == self.request:
            # laid out by the rebuild already: show it now (the cursor stays on its message)
            self.step_ready(StepReady(view, self.generation, self._cursor_message(), bottom))
        else:
            self.show_request(self.request, bottom=bottom, quiet=True)

    @on(StepReady)
    def step_ready(self, event: StepReady) -> None:
        if event.generation != self.generation or event.view.index != self.request:
            return
        view = event.view
        self.view = view
        # shown: the scan goes on once its frames are drawn
        self.core.shown()
        self.gauge.show(view)
        self.gauge.border_subtitle = line(self._gauge_subtitle(view))
        self.sparkline.set_current(view.index, view.trigger, view.target, view.window)
        self.pinned.show(view.pinned, view.context)
        self.pinned.border_subtitle = line(f"request {view.index}")
        self._show_compaction_note(view)
        deciding = " · deciding with the harness's own estimate" if view.decides_as_harness else ""
        self.columns.border_title = line(f"pipeline · {view.policy} · request {view.index}{deciding}")
        self.columns.show(view, keep=event.keep)
        if event.bottom:
            self.columns.select_row(len(view.rows) - 1)
        if self.core.collector_paused:  # the first columns: collections once they are drawn
            self.call_after_refresh(self.core.resume_collector)
        if self.core.start_scan() and self.replay is not None:
            # once these columns are drawn: begun beside their frame, the scan's harness pass
            # took the GIL from it (a rest of SCAN_TAIL_S was shorter than a cold first frame)
            self.call_after_refresh(self._start_scan, self.replay, self.generation)

    def _start_scan(self, replay: Replay, generation: int) -> None:
        """The scan of `replay`, unless a newer replay replaced it meanwhile (its own starts then)."""
        if generation == self.generation and replay is self.replay:
            self.scan(replay, generation, self.core.scan_seed)

    @on(HarnessReady)
    def harness_ready(self, event: HarnessReady) -> None:
        view = self.view
        if event.generation != self.generation or self.replay is None or view is None or view.harness:
            return
        shown = view
        self.view = view = dataclasses.replace(
            view, harness=self.replay.harness_estimate(view.index, wait=False)
        )
        if self.columns.view is shown:
            self.columns.view = view  # the same rows: only the gauge's words change
        self.gauge.show(view)  # its distance line gives the harness's own figure too
        self.gauge.border_subtitle = line(self._gauge_subtitle(view))

    def _gauge_subtitle(self, view: StepView) -> str:
        """What the harness recorded and estimated at this request, as one line (its compaction's
        trigger is the transcript's: shown through `line`, as text)."""
        parts: list[str] = []
        said = when(view)  # the request's time, the gap since the one before, its model
        if said:
            parts.append(said)
        if view.priced and view.cost not in numbers(view, self.gauge.content_region.width or 1_000):
            parts.append(view.cost)  # the gauge's first line had no room left for the money
        if self.following and self.follower is None:
            parts.append("● following newest")
        event = view.compaction_before
        if event is not None:
            how = f"{event.trigger} " if event.trigger else ""
            before = f", {tokens(event.pre_tokens)} before" if event.pre_tokens else ""
            parts.append(
                f"◆ the harness compacted ({how.strip() or 'recorded'}{before}) right before this request"
                + (" (r opens it)" if view.opened is not None else "")
            )
        parts.extend(event_notes(view))
        if view.harness is not None and self.replay is not None:
            value, over = view.harness
            over_it = ", over its trigger" if over else ""
            if self.replay.harness_wrote_it:
                parts.append(f"the harness estimated {tokens(value)}{over_it}")
            else:
                # another harness wrote the session: the policy's harness never saw it; its layers
                # here decide with calibrated weights
                parts.append(f"{self.replay.harness} would estimate {tokens(value)}{over_it}")
        if view.predicted is not None and view.reported is not None and view.reported:
            error = (view.predicted - view.reported) / view.reported
            parts.append(f"weights before it predicted {tokens(view.predicted)} ({error:+.1%})")
        return " · ".join(parts)

    @on(ScanProgress)
    def scan_progress(self, event: ScanProgress) -> None:
        if event.generation != self.generation or self.session is None:
            return
        self.core.scanned_to(ScanState(event.fired, event.simulated, event.scanned, event.total, event.sent))
        self.session = dataclasses.replace(
            self.session, simulated=event.simulated, scanned=event.scanned, sent=event.sent
        )
        self.sparkline.show_session(self.session)
        if event.scanned < event.total:
            self.sparkline.border_subtitle = line(f"scanning {event.scanned:,}/{event.total:,}…")
        else:
            self.sparkline.border_subtitle = line(legend(self.session))
        if self.pending is not None:
            direction, self.pending = self.pending, None
            self._jump_event(direction)

    @on(LedgerColumns.CursorMoved)
    def cursor_moved(self, event: LedgerColumns.CursorMoved) -> None:
        if self.replay is None or self.view is None:
            return
        if self.detail_timer is not None:
            self.detail_timer.stop()
        view, row, generation = self.view, event.row, self.generation
        self.detail_timer = self.set_timer(
            DETAIL_DELAY, lambda: self.compute_detail(view, row, generation), name="detail"
        )

    @on(DetailReady)
    def detail_ready(self, event: DetailReady) -> None:
        if event.generation != self.generation:
            return
        if event.detail is not None and (self.view is None or event.detail.request != self.view.index):
            return
        if event.detail is not None and event.detail.row != self.columns.cursor_row:
            return
        self.detail.show(event.detail)
        self._show_spawned(event.detail.message_id if event.detail is not None else None)

    def _show_spawned(self, message_id: str | None) -> None:
        """The message pane says so when its message ran a subagent (`a` lists it, enter opens)."""
        ref = self.subagent_links().get(message_id) if message_id is not None else None
        said = f"ran subagent {ref.agent_id}: a lists it" if ref is not None else ""
        self.detail.border_subtitle = line(said)

    @on(LedgerColumns.Opened)
    def opened(self, event: LedgerColumns.Opened) -> None:
        self.action_open_message()

    @on(ContextSparkline.RequestClicked)
    def sparkline_clicked(self, event: ContextSparkline.RequestClicked) -> None:
        self.following = False
        self.go(event.request)

    @on(SearchDone)
    def search_done(self, event: SearchDone) -> None:
        if event.generation != self.generation or self.view is None or event.request != self.view.index:
            return
        if event.row is None:
            notify(self, f"no message in this ledger contains {event.query!r}", severity="warning")
            return
        self.columns.select_row(event.row)

    @on(Input.Submitted, "#search")
    def search_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        query = event.value.strip()
        self.search_input.remove_class("-visible")
        self.columns.focus()
        if not query or self.view is None:
            return
        self.last_query = query
        self.run_search(self.view, query, self.columns.cursor_row, self.generation)

    # -- navigation ---------------------------------------------------------------------------
    @property
    def total(self) -> int:
        return len(self.replay) if self.replay is not None else 0

    def go(self, k: int, *, bottom: bool = False, select: str | None = None) -> None:
        """Show request k (clamped to the transcript); `select`: put the cursor on that message."""
        if self.replay is None or not self.total:
            return
        k = max(1, min(k, self.total))
        self.show_request(k, bottom=bottom, select=select)

    def show_request(
        self, k: int, *, bottom: bool = False, quiet: bool = False, select: str | None = None
    ) -> None:
        """Shape request k in a worker; keep the cursor on its message (or on `select`, or, with
        `bottom`, on the newest one). `quiet`: no "shaping…" note (live updates would make it flicker)."""
        assert self.replay is not None
        self.request = k
        keep = select or self._cursor_message()
        if not quiet:
            self.gauge.border_subtitle = line(f"shaping request {k}…")
        self.core.showing()  # the scan rests until it is shown (`step_ready`)
        self.compute_step(self.replay, k, self.generation, keep, bottom)

    def _cursor_message(self) -> str | None:
        """The id of the message under the cursor (to keep the cursor on it at another request)."""
        if self.view is None:
            return None
        message = self.view.message_at(self.columns.cursor_row)
        return message.id if message is not None else None

    def ready(self, what: str) -> bool:
        """Whether there are requests to act on; if not, a notification says why `what` cannot be
        done yet (the session is still being read, or it has no requests)."""
        if self.replay is None:
            notify(self, f"{self.file_name} is still being read: {what} once it is shown", timeout=3)
            return False
        if not self.total:
            notify(self, f"{what}: {self._no_requests()}", timeout=3)
            return False
        return True

    def _at_end(self, k: int) -> bool:
        """Whether request k is past either end; if so, a notification says which end it is."""
        if k < 1:
            notify(self, "this is request 1, the first one: ] goes to the next", timeout=3)
            return True
        if k > self.total:
            more = "; more come as the file grows" if self.live else ""
            notify(
                self, f"this is request {self.total:,}, the last one{more}: [ goes to the previous", timeout=3
            )
            return True
        return False

    def action_next_request(self) -> None:
        if not self.ready("stepping to the next request") or self._at_end(self.request + 1):
            return
        self.following = False
        self.go(self.request + 1)

    def action_previous_request(self) -> None:
        if not self.ready("stepping to the previous request") or self._at_end(self.request - 1):
            return
        self.following = False
        self.go(self.request - 1)

    def action_first_request(self) -> None:
        if not self.ready("going to the first request"):
            return
        if self.request == 1:
            notify(self, "this is request 1, the first one already", timeout=3)
            return
        self.following = False
        self.go(1)

    def action_last_request(self) -> None:
        if not self.ready("going to the last request"):
            return
        if self.request == self.total:
            notify(self, f"this is request {self.total:,}, the last one already", timeout=3)
            return
        self.go(self.total)

    def _jump_event(self, direction: int) -> None:
        if not self.ready(
            "looking for the next event" if direction > 0 else "looking for the previous event"
        ):
            return
        if self.session is None:
            return
        recorded = self.session.recorded
        k = self.request + direction
        while 1 <= k <= self.total:
            if k > self.scanned and (k - 1) not in recorded:
                # Not scanned yet: wait for the scan to get there.
                self.pending = direction
                notify(self, f"scanning requests ({self.scanned:,}/{self.total:,})…", timeout=2)
                return
            if is_event(k, self.fired, recorded):
                self.go(k)
                return
            k += direction
        where = f"after request {self.request:,}" if direction > 0 else f"before request {self.request:,}"
        key = "N goes back" if direction > 0 else "n goes on"
        notify(
            self,
            f"no request {where} where a layer starts firing or a compaction was recorded ({key})",
            timeout=3,
        )

    def action_next_event(self) -> None:
        self.following = False
        self._jump_event(1)

    def action_previous_event(self) -> None:
        self.following = False
        self._jump_event(-1)

    def action_goto(self) -> None:
        from inspector.tui.screens import PromptScreen

        if not self.ready("going to a request"):
            return
        total = self.total

        def check(value: str) -> str | None:
            if not value.isdigit() or not 1 <= int(value) <= total:
                return f"give a request number from 1 to {total:,}"
            return None

        def done(value: str | None) -> None:
            if value:
                self.following = False
                self.go(int(value))

        self.app.push_screen(
            PromptScreen(
                f"Go to request (1–{total:,})",
                placeholder=str(self.request),
                hint="enter goes · esc cancels",
                check=check,
                input_type="integer",
                id="goto",
            ),
            done,
        )

    def watch_following(self, following: bool) -> None:
        self.gauge.set_class(following, "-following")
        if following:
            self.go(self.total, bottom=self.live)
        else:
            self.seen_total = self.total
        self._show_title()
        if self.view is not None:
            self.gauge.border_subtitle = line(self._gauge_subtitle(self.view))

    def action_toggle_follow(self) -> None:
        if not self.ready("following the newest request"):
            return
        if not self.following and not self.live:
            why = (
                f"following {self.file_name} stopped ({one_line(self.tail_stopped, 120)})"
                if self.tail_stopped is not None
                else f"{self.file_name} is not followed as it grows (--follow follows a file being written)"
            )
            notify(self, f"{why}: f keeps the view on its last request, {self.total:,}", timeout=4)
        self.following = not self.following

    def action_follow_newest(self) -> None:
        """End (live): follow the newest request again."""
        if not self.live:
            notify(
                self,
                f"{self.file_name} is not followed as it grows: end follows a live file's newest request",
                timeout=3,
            )
            return
        self._follow_newest()

    def _follow_newest(self) -> None:
        if self.live and not self.following:
            self.following = True

    @on(LedgerColumns.EndPressed)
    def end_pressed(self, event: LedgerColumns.EndPressed) -> None:
        self._follow_newest()  # (End in the columns also moves the cursor to the last row: no note)

    @on(Worker.StateChanged)
    def worker_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group in ("load", "step") and event.state is WorkerState.ERROR:
            self.core.resume_collector()  # no first columns to wait for
        if worker.group == "tail" and event.state is WorkerState.ERROR:
            error = worker.error
            reason = (
                (getattr(error, "strerror", None) or str(error) or type(error).__name__)
                if error is not None
                else "unknown error"
            )
            self.tail_stopped = reason
            self.gauge.set_class(False, "-following")
            self._show_title()
            notify(
                self,
                f"stopped following {self.file_name}: {one_line(reason, 200)}",
                title="following",
                severity="error",
            )
        elif worker.group == "live" and event.state in (WorkerState.ERROR, WorkerState.CANCELLED):
            # (the worker reports its own failures: this is a safety net)
            self.core.rebuild_ended(self.generation, None, accepted=True)
            self._kick_live()

    def action_search(self) -> None:
        if self.view is None:
            if self.ready("searching the ledger"):
                notify(self, "the request is being shaped: / searches it once it is shown", timeout=3)
            return
        search = self.search_input
        search.add_class("-visible")
        if self.last_query and not search.value:
            search.value = self.last_query
        search.focus()

    def action_close_search(self) -> None:
        if self.search_input.has_class("-visible"):
            self.search_input.remove_class("-visible")
            self.columns.focus()
            return
        if self._back_to_parent():
            return
        notify(self, "nothing to close here (the search is not open): q quits", timeout=3)

    def action_choose_policy(self) -> None:
        from inspector.tui.screens import PolicyScreen

        if self.replay is None:
            self.ready("choosing a policy")
            return
        presets = [(p.name, p.description) for p in PRESETS.values()]

        def done(name: str | None) -> None:
            if name:
                self.action_set_policy(name)

        self.app.push_screen(PolicyScreen(presets, self.replay.policy.name), done)

    def action_compare(self, policy: str | None = None) -> None:
        """Ask for a second policy (unless given) and show both side by side at this request."""
        from inspector.tui.compare import CompareScreen
        from inspector.tui.screens import PolicyScreen

        if not self.ready("comparing two policies") or self.replay is None or not self.request:
            return
        replay, request = self.replay, self.request

        def done(name: str | None) -> None:
            if name:
                self.app.push_screen(CompareScreen(replay, name, request, self.replay_lock))

        if policy is not None:
            done(policy)
            return
        presets = [(p.name, p.description) for p in PRESETS.values()]
        others = [p for p in presets if p[0] != replay.policy.name]
        if not others:
            notify(self, f"{replay.policy.name} is the only policy there is: nothing to compare it with")
            return
        self.app.push_screen(PolicyScreen(others or presets, "", title="Compare with which policy?"), done)

    def action_findings(self) -> None:
        """The findings of this replay (computed once per replay, in a worker), in a panel."""
        if not self.ready("looking for findings"):
            return
        cached = self.core.cached_findings()
        if cached is not None:
            self._show_findings(cached)
            return
        notify(self, "looking for findings…", timeout=2)
        self.compute_findings(self.replay, self.generation)

    # -- subagents ---------------------------------------------------------------------------
    def subagent_links(self) -> dict[str, SubagentRef]:
        """Message id -> the subagent it spawned or answered, for the transcript shown (kept)."""
        if self.links is None or self.links[0] is not self.transcript:
            from inspector.tui.subagents import subagent_links

            self.links = (self.transcript, subagent_links(self.transcript))
        return self.links[1]

    def action_subagents(self) -> None:
        """The subagents of this session; the one chosen opens on a screen of its own."""
        from inspector.tui.subagents import SubagentsScreen

        subagents = self.transcript.subagents
        if not subagents:
            what = f"subagent {self.agent.agent_id}" if self.agent is not None else self.file_name
            notify(
                self,
                f"{what} ran no subagents (none in its file, none in a subagents/ folder beside it)",
                timeout=4,
            )
            return
        message = self.view.message_at(self.columns.cursor_row) if self.view is not None else None
        linked = self.subagent_links().get(message.id) if message is not None else None

        def done(ref: SubagentRef | None) -> None:
            if ref is not None:
                self.open_subagent(ref)

        self.app.push_screen(
            SubagentsScreen(subagents, self.file_name, linked.agent_id if linked is not None else None), done
        )

    def open_subagent(self, ref: SubagentRef) -> None:
        """Read the subagent's transcript (in a worker); it opens on a main screen of its own."""
        from inspector.tui.subagents import openable

        if not openable(ref) or ref.path is None:
            notify(
                self,
                f"subagent {ref.agent_id} was written inline, in {self.file_name} itself (Claude Code 1.0): "
                "it has no transcript of its own to open",
                timeout=5,
            )
            return
        notify(self, f"reading subagent {ref.agent_id}…", timeout=2)
        self.load_subagent(ref, self.generation)

    @work(thread=True, exclusive=True, group="subagent", exit_on_error=False, description="read a subagent")
    def load_subagent(self, ref: SubagentRef, generation: int) -> None:
        assert ref.path is not None
        try:
            transcript = load(Path(ref.path))
        except (LoaderError, OSError, ValueError) as exc:
            # said whatever the generation (a live session's grows at every update)
            notify(self, f"cannot open subagent {ref.agent_id}: {exc}", title="subagent", severity="error")
            return
        self.post_message(SubagentLoaded(transcript, ref, generation))

    @on(SubagentLoaded)
    def subagent_loaded(self, event: SubagentLoaded) -> None:
        if self.app.screen is not self:
            return  # the user went elsewhere meanwhile
        core = self.core
        window = core.window if core.window_source == "--window" else None
        screen = MainScreen(event.transcript, core.policy, window, "last", parent=self, agent=event.agent)
        self.app.push_screen(screen)

    def _back_to_parent(self) -> bool:
        """On a subagent's screen: back to the session's (same request, same selection)."""
        if self.parent_screen is None or self.app.screen is not self:
            return False
        self.app.pop_screen()
        return True

    # -- tour ---------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="tour", exit_on_error=False, description="prepare the tour")
    def load_tour(self, name: str, generation: int) -> None:
        from inspector.scenarios import tour as scenario_tour

        try:
            found = scenario_tour(name)
        except (KeyError, PolicyError, ReplayError, ValueError) as exc:
            self.post_message(LoadFailed(f"cannot prepare the tour: {exc}", generation))
            return
        self.post_message(TourReady(found))

    @on(TourReady)
    def tour_ready(self, event: TourReady) -> None:
        self.tour = event.tour
        self.stop_index = 0
        if self.replay is not None:
            self._go_stop()
        else:
            self._show_stop()

    def _show_stop(self) -> None:
        tour = self.tour
        if tour is None:
            return
        narration = self.query_one("#narration", Static)
        if not tour.stops:
            narration.update(lines(f"{tour.title}\n\n{tour.description}"))
            return
        stop = tour.stops[self.stop_index]
        narration.border_title = line(f"tour · stop {self.stop_index + 1}/{len(tour.stops)}")
        narration.border_subtitle = ", previous · . next"
        narration.update(
            Content.assemble(
                (one_line(tour.title, 200), "bold"),
                "\n\n",
                (f"request {stop.request} · {one_line(stop.title, 200)}", "bold $accent"),
                f"\nunder {stop.policy}\n\n",
                lines(stop.narration),
            )
        )

    def _go_stop(self) -> None:
        """Show the current stop: its narration, its request, under its policy."""
        from inspector.samples import sample_info

        tour = self.tour
        if tour is None or not tour.stops or self.replay is None:
            return
        self._show_stop()
        stop = tour.stops[self.stop_index]
        self.following = False
        if stop.policy != self.replay.policy.name:
            info = sample_info(tour.name)
            wanted = info.compare_policy if stop.policy == tour.compare_policy else info.policy
            if wanted is not None:
                self.request = stop.request
                self.action_set_policy(wanted)
                return
        self.go(stop.request)

    def _no_stops(self) -> bool:
        """Whether there is no tour to step through (a notification says why)."""
        if self.tour_name is None:
            notify(
                self, "no tour here: context-inspector tour NAME opens a scenario with its stops", timeout=4
            )
            return True
        if self.tour is None:
            notify(self, f"the tour of {self.tour_name} is still being prepared", timeout=3)
            return True
        if not self.tour.stops:
            notify(self, f"the tour of {self.tour_name} has no stops", timeout=3)
            return True
        return False

    def action_next_stop(self) -> None:
        if self._no_stops() or self.tour is None:
            return
        if self.stop_index + 1 >= len(self.tour.stops):
            notify(self, "that was the last stop of the tour", timeout=3)
            return
        self.stop_index += 1
        self._go_stop()

    def action_previous_stop(self) -> None:
        if self._no_stops() or self.tour is None:
            return
        if self.stop_index == 0:
            notify(self, "this is the first stop of the tour", timeout=3)
            return
        self.stop_index -= 1
        self._go_stop()

    @work(thread=True, exclusive=True, group="findings", exit_on_error=False, description="find findings")
    def compute_findings(self, replay: Replay, generation: int) -> None:
        try:
            found = self.core.findings(replay, generation)
        except (ReplayError, ValueError) as exc:
            self.post_message(LoadFailed(f"cannot look for findings: {exc}", generation))
            return
        self.post_message(FindingsReady(found, generation))

    @on(FindingsReady)
    def findings_ready(self, event: FindingsReady) -> None:
        if event.generation != self.generation:
            return
        self.core.keep_findings(event.generation, event.findings)
        self._show_findings(event.findings)

    def action_calibrate(self) -> None:
        """The calibration's accuracy on this session and its five worst-predicted requests."""
        from inspector.tui.calibrate import CalibrateScreen

        if not self.ready("judging the calibration"):
            return

        def done(request: int | None) -> None:
            if request is not None:
                self.following = False
                self.go(request)

        self.app.push_screen(CalibrateScreen(self.transcript), done)

    def _show_findings(self, findings: list[Finding]) -> None:
        from inspector.tui.findings import FindingsScreen

        if self.replay is None or isinstance(self.app.screen, FindingsScreen):
            return

        def done(finding: Finding | None) -> None:
            if finding is not None:
                self.following = False
                self.go(finding.request, select=finding.message_ids[0] if finding.message_ids else None)

        self.app.push_screen(FindingsScreen(findings, self.replay.policy.name), done)

    def action_export_svg(self) -> None:
        """This screen as an SVG, in the current directory (never next to the transcript)."""
        k = self.view.index if self.view is not None else self.request
        target = Path.cwd() / f"context-inspector-request-{k}.svg"
        try:
            target.write_text(
                self.app.export_screenshot(title=f"context-inspector · request {k}"), encoding="utf-8"
            )
        except OSError as exc:
            notify(self, f"cannot save {target}: {exc.strerror or exc}", severity="error")
            return
        notify(self, f"saved the screen to {target}", title="export")

    def action_lab(self) -> None:
        """The what-if form: apply replays under the policy and window it gives."""
        from inspector.tui.lab import LabScreen

        if not self.ready("the what-if lab") or self.replay is None:
            return

        def done(result: LabResult | None) -> None:
            if result is not None:
                self.apply_lab(result)

        self.app.push_screen(LabScreen(self.replay.policy, self.replay.window), done)

    def apply_lab(self, result: LabResult) -> None:
        if self.replay is None:
            return
        self.core.change_settings(result.policy, result.window, "--window")
        self.gauge.border_subtitle = line(f"what if: {result.policy.name}, a {result.window:,}-token window…")
        self.reshape(self.replay, result.policy, result.window, self.generation)

    def action_set_policy(self, name: str) -> None:
        if self.replay is None or name == self.replay.policy.name:
            return
        # Live rebuilds from now on use the new settings (restored if the replay fails).
        self.core.change_settings(policy=name)
        self.gauge.border_subtitle = line(f"replaying under policy {name}…")
        self.reshape(self.replay, name, None, self.generation)

    def action_set_window(self) -> None:
        from inspector.tui.screens import PromptScreen

        if self.replay is None:
            self.ready("setting the window")
            return

        def check(value: str) -> str | None:
            return None if parse_window(value) else "give a window in tokens, e.g. 100000, 100k or 1m"

        def done(value: str | None) -> None:
            window = parse_window(value) if value else None
            if window is not None:
                self.apply_window(window)

        current = self.replay.window
        self.app.push_screen(
            PromptScreen(
                "Context window (tokens)",
                placeholder=f"{current:,}" if current else "e.g. 200000",
                hint="e.g. 100000, 100k, 1m · enter applies · esc cancels",
                check=check,
                id="window",
            ),
            done,
        )

    def apply_window(self, window: int) -> None:
        if self.replay is None:
            return
        self.core.change_settings(window=window, window_source="--window")
        self.gauge.border_subtitle = line(f"replaying with a {window:,}-token window…")
        self.reshape(self.replay, None, window, self.generation)

    def action_open_message(self) -> None:
        from inspector.tui.screens import MessageScreen

        if self.search_input.has_focus:
            return
        if self.view is None:
            self.ready("opening a message")
            return
        detail = self.detail.detail
        row = self.columns.cursor_row
        if detail is None or detail.row != row or detail.request != self.view.index:
            # the cursor just moved (its detail waits for the cursor to rest): build it now, so that
            # a fast Down and Enter opens the message the cursor is on
            detail = build_detail(self.view, row, self.transcript)
            if detail is None:
                notify(self, f"request {self.view.index} holds no message to open", timeout=3)
                return
            if self.detail_timer is not None:
                self.detail_timer.stop()
            self.detail.show(detail)
        self.app.push_screen(MessageScreen(detail))

    # -- what fills the window, the recorded compaction, panels, theme ------------------------
    def _show_compaction_note(self, view: StepView) -> None:
        """At a request right after a recorded compaction, the side pane says what it took."""
        note = self.query_one("#compaction-note", Static)
        opened_here = view.opened
        note.set_class(opened_here is not None, "-shown")
        if opened_here is None:
            return
        note.border_title = line(f"◆ compacted after request {opened_here.before_request}")
        note.border_subtitle = line("r opens it")
        note.update(compaction_note(opened_here))

    def action_open_compaction(self) -> None:
        from inspector.tui.window import CompactionScreen

        view = self.view
        if view is None:
            self.ready("opening the recorded compaction")
            return
        if view.opened is None:
            recorded = sorted(self.session.recorded) if self.session is not None else []
            where = (
                "; n / N go to the next or previous request where something happens"
                if recorded
                else "; this session records none"
            )
            notify(
                self,
                f"the harness recorded no compaction right before request {view.index}{where}",
                timeout=4,
            )
            return
        self.app.push_screen(CompactionScreen(view.opened))

    def action_composition(self) -> None:
        if not self.ready("laying out the window") or not self.request:
            return
        self.compute_composition(self.replay, self.request, self.generation)

    @work(
        thread=True,
        exclusive=True,
        group="composition",
        exit_on_error=False,
        description="what fills the window",
    )
    def compute_composition(self, replay: Replay, k: int, generation: int) -> None:
        try:
            found = self.core.composition(replay, k)
        except (ReplayError, ValueError) as exc:
            self.post_message(LoadFailed(f"cannot lay out the window: {exc}", generation))
            return
        self.post_message(CompositionReady(found, generation))

    @on(CompositionReady)
    def composition_ready(self, event: CompositionReady) -> None:
        from inspector.tui.window import CompositionScreen

        if event.generation != self.generation or isinstance(self.app.screen, CompositionScreen):
            return
        self.app.push_screen(CompositionScreen(event.composition))

    def action_toggle_panel(self) -> None:
        """Small terminals: the middle shows the pipeline, the side panes, or the chart (in turn)."""
        if not self.has_class("-narrow"):
            notify(
                self,
                "the side panes and the chart are on screen already (v switches panels below 110 columns)",
                timeout=3,
            )
            return
        i = (self.PANELS.index(self.panel) + 1) % len(self.PANELS)
        self.set_panel(self.PANELS[i])

    def set_panel(self, panel: str) -> None:
        self.panel = panel
        self.set_class(panel == "side", "-panel-side")
        self.set_class(panel == "chart", "-panel-chart")
        if panel == "columns":
            self.columns.focus()
        elif panel == "side":
            self.detail.focus()

    def action_toggle_theme(self) -> None:
        self.app.theme = "textual-light" if self.app.theme == "textual-dark" else "textual-dark"

    def action_help(self) -> None:
        from inspector.tui.screens import HelpScreen

        self.app.push_screen(HelpScreen())

    def hides_key(self, action: str) -> bool:
        """Keys the key bar leaves out here (they still run, and say why they do nothing): `s`
        where the app was not opened on the picker, the tour's keys outside a tour."""
        if action == "sessions":
            return not self._picker_below()
        if action in ("next_stop", "previous_stop"):
            return self.tour_name is None
        if action == "close_search":
            return self.parent_screen is None  # "esc Back" on a subagent's screen
        if action == "subagents":
            return not self.transcript.subagents
        return False

    def _picker_below(self) -> bool:
        picker = sys.modules.get("inspector.tui.picker")  # never imported: no picker was opened
        if picker is None:
            return False
        stack = self.app.screen_stack
        return (
            self in stack
            and stack.index(self) > 0
            and isinstance(stack[stack.index(self) - 1], picker.PickerScreen)
        )

    def action_sessions(self) -> None:
        """Back to the session picker (this screen, its workers and its follower go)."""
        if self.parent_screen is not None:
            notify(
                self,
                f"this is a subagent of {self.parent_screen.file_name}: esc goes back to it first",
                timeout=4,
            )
            return
        if not self._picker_below():
            notify(
                self,
                "the app was opened on a file, not on the session picker: "
                "context-inspector with no PATH lists the sessions on this machine",
                timeout=4,
            )
            return
        if self.app.screen is self:
            self.app.pop_screen()

    async def action_quit(self) -> None:
        self.app.exit()


class InspectorApp(App[None]):
    """context-inspector: what an agent's context window held, request by request, and why parts
    of it were cleared."""

    CSS_PATH = "inspector.tcss"
    TITLE = "context-inspector"
    COMMANDS = App.COMMANDS | {InspectorCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-medium"), (150, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (40, "-tall")]

    def __init__(
        self,
        transcript: Transcript | None = None,
        policy: str | Policy | None = None,
        window: int | None = None,
        *,
        start: Start = "last",
        follower: Follower | None = None,
        sessions: list[SessionInfo] | None = None,
        now: datetime | None = None,
        home: Path | None = None,
        tour: str | None = None,
        window_source: str = "--window",
        settings: RunSettings | None = None,
        remember: bool = False,
    ) -> None:
        """Open on `transcript` (followed live when a `follower` that read it is given), or, with
        no transcript, on the session picker (`sessions`, `now` and `home` fix its rows for tests).
        `settings`: the run's, whole (`policy`, `window` and `window_source` are those of
        `RunSettings(policy, window, window_source)` when it is not given). `remember`: a theme the
        user chooses is written into the user's settings file (the command line's app; a library
        caller or a test never writes it unless asked)."""
        super().__init__()
        if settings is None:
            settings = RunSettings(policy=policy, window=window, window_source=WindowSource(window_source))
        self.settings = settings
        self.transcript = transcript
        self.policy = settings.policy
        self.window = settings.window
        self.start = start
        self.follower = follower
        self.sessions = sessions
        self.now = now
        self.home = home
        self.tour = tour
        self.window_source = settings.window_source
        from inspector.settings import current

        self.theme = current().theme or "textual-dark"  # the user's settings file, where it names one
        self.remember = remember
        self.remembered_theme = self.theme
        """The theme the settings file names (or the app began with): a change is written there."""
        self.theme_lock = threading.Lock()

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, theme: object) -> None:
        """`t` or the palette changed the theme: remember it in the user's settings file."""
        if self.remember and self.theme != self.remembered_theme:
            self.remember_theme()

    @work(thread=True, group="theme", exit_on_error=False, description="remember the theme")
    def remember_theme(self) -> None:
        """Write the theme in force into the settings file (in a thread: it may import pydantic and
        touch a slow disk). A file that cannot be written is said, never fatal: the theme holds for
        this run."""
        from inspector.settings import SettingsError, remember_theme

        with self.theme_lock:  # one write at a time, of the theme in force when it is written
            theme = self.theme
            if theme == self.remembered_theme:
                return
            try:
                path = remember_theme(theme)
            except SettingsError as exc:
                self.remembered_theme = theme  # said once, not at every toggle back and forth
                notify(
                    self.screen, f"theme {theme} for this run only: {exc}", title="theme", severity="warning"
                )
                return
            self.remembered_theme = theme
        notify(self.screen, f"theme {theme}, remembered in {path}", title="theme", timeout=3)

    def get_default_screen(self) -> Screen[None]:
        if self.transcript is None:
            from inspector.tui.picker import PickerScreen

            return PickerScreen(
                sessions=self.sessions, now=self.now, home=self.home, policy=self.policy, window=self.window
            )
        return MainScreen(
            self.transcript,
            self.policy,
            self.window,
            self.start,
            follower=self.follower,
            tour=self.tour,
            window_source=self.window_source,
        )

    @on(SessionOpened)
    async def session_opened(self, event: SessionOpened) -> None:
        """The picker read a session: the main screen goes on top of it (`s` comes back)."""
        opened = event.opened
        screen = MainScreen(opened.transcript, event.policy, event.window, "last", follower=opened.follower)
        await self.push_screen(screen)

    @property
    def main(self) -> MainScreen:
        """The main screen (whatever modal is on top of it; the picker may be below it)."""
        for screen in reversed(self.screen_stack):
            if isinstance(screen, MainScreen):
                return screen
        raise LookupError("no main screen: the session picker is showing")


def run_app(
    transcript: Transcript | None,
    settings: RunSettings | None = None,
    *,
    start: Start = "last",
    follower: Follower | None = None,
    tour: str | None = None,
) -> None:
    """Open the app on a loaded transcript under the run's `settings` (its policy and window; the
    last request first; start="first" for teaching), following the file when `follower` (the one
    that read it) is given; with no transcript, open the session picker."""
    if transcript is not None:
        hold_loaded()  # the session lives as long as the app: out of the collector's full walks
    InspectorApp(
        transcript,
        start=start,
        follower=follower,
        tour=tour,
        settings=settings or RunSettings(),
        remember=True,
    ).run()
