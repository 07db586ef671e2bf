"""One opened session, without a screen: its replay and the lock around it, the paced background
scan, the live rebuilds of a followed transcript, and the findings cache.

The app's screen runs these methods in its worker threads and posts what they return as messages;
its handlers hand the results to the widgets. Nothing here imports Textual, so every rule of the
scan and of following a file can be tested with plain pytest.

Every access to the Replay goes through `lock`, because the background scan and the request being
viewed share its step cache. What the screen waits on takes it through `held()`, counted in
`waiting`, so that the scan steps aside for it.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from inspector.model import RecordedEvent, Transcript
from inspector.model.bulk import paused_gc
from inspector.replay import Replay, ReplayError, Step
from inspector.replay.folded import OpenedCompaction, compaction_at, opened
from inspector.shaping import Policy

if TYPE_CHECKING:
    from inspector.findings import Finding
    from inspector.live import Follower, FollowUpdate
    from inspector.replay.composition import Composition

__all__ = [
    "HARNESS_QUIET_S",
    "SCAN_MAX_REST",
    "SCAN_POST_INTERVAL",
    "SCAN_SHARE",
    "SCAN_SLICE",
    "SCAN_TAIL_S",
    "SCAN_YIELD_S",
    "Pacer",
    "Rebuild",
    "Rebuilt",
    "ScanState",
    "Session",
    "Waiting",
    "open_compaction",
    "paused_gc",
]

HARNESS_QUIET_S = 1.0
"""A followed file rests this long before the harness's estimates of the grown session are computed."""
SCAN_POST_INTERVAL = 0.25
"""Seconds between progress reports of the background scan."""
SCAN_SLICE = 0.002
SCAN_SHARE = 2 / 3
SCAN_MAX_REST = 0.25
"""The scan rests once it has worked a slice (seconds), so that it works `SCAN_SHARE` of one core
at most (a rest of at most `SCAN_MAX_REST`). A request takes some 0.1 ms to shape, and a rest after
each one (at least 0.5 ms, as sleeping goes) had the scan of 5,794 requests end 6.3 s after the
app's start; at half of a core 1.56-1.73 s, at two thirds 1.37-1.48 s. The requests being shown go
first (`SCAN_YIELD_S`): steps back took the same 59 ms (p95 62-81 ms) at either share."""
SCAN_YIELD_S = 0.5
SCAN_TAIL_S = 0.1
"""While a request is being shaped to be shown (a step the user asked for, a live update, the first
paint), the scan rests, and for `SCAN_TAIL_S` after it is shown, its frames going first; at most
`SCAN_YIELD_S` in all (seconds). While the scan worked beside them, a step back took 70 ms (p95
110 ms) against 64 ms (70 ms) alone, and a live append reached the screen in 90-160 ms against
87-100 ms with no scan."""

V = TypeVar("V")
Layout = Callable[[Replay, Step, list[RecordedEvent], OpenedCompaction | None], V]
"""Lays a shaped request out for the screen: (replay, step, events before it, its compaction)."""


def find_all(replay: Replay) -> list[Finding]:
    """`inspector.findings.find_all`, imported when first asked for (not on the first frame)."""
    from inspector.findings import find_all as found

    return found(replay)


def open_compaction(replay: Replay, k: int) -> OpenedCompaction | None:
    """The compaction the harness recorded right before request k, opened (hold the replay's
    lock: it shapes the request before it); None where there is none, or it cannot be opened."""
    event = compaction_at(replay, k)
    if event is None or event.after_request < 1:
        return None
    try:
        return opened(replay, event)
    except (ReplayError, ValueError, KeyError, IndexError):
        return None


class Pacer:
    """Keeps a background thread to a `share` of one core: once it has worked `work_slice` seconds
    since its last rest, it rests for what keeps it to that share (at most `max_rest` at a time)."""

    def __init__(
        self,
        work_slice: float = SCAN_SLICE,
        share: float = SCAN_SHARE,
        max_rest: float = SCAN_MAX_REST,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"a share of one core is in (0, 1], not {share}")
        self.work_slice = work_slice
        self.rest_per_work = (1 - share) / share
        self.max_rest = max_rest
        self.sleep = sleep
        self.owed = 0.0
        """Seconds worked since the last rest."""

    def worked(self, seconds: float) -> None:
        self.owed += seconds
        if self.owed >= self.work_slice:
            self.sleep(min(self.max_rest, self.owed * self.rest_per_work))
            self.owed = 0.0


class Waiting:
    """A thread-safe count of threads waiting for something, used as a context manager."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        with self._lock:
            self._count += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._count -= 1

    @property
    def busy(self) -> bool:
        return self._count > 0


@dataclass(frozen=True)
class ScanState:
    """How far the background scan got: which layers fired at requests 1..scanned."""

    fired: dict[int, frozenset[str]]
    simulated: frozenset[int]
    """Requests where one of the scan's `marks` fired (the chart's simulated compactions)."""
    scanned: int
    total: int
    sent: tuple[int, ...]
    """What the pipeline sends at requests 1..len(sent)."""


@dataclass(frozen=True)
class Rebuild:
    """A live rebuild to run (`Session.next_rebuild`): the replay it grows from (None after a
    reset or while new settings are applied), the settings, and the request to lay out (None: the
    newest)."""

    follower: Follower
    previous: Replay | None
    policy: str | Policy | None
    window: int | None
    window_source: str
    generation: int
    reset_reason: str | None
    want: int | None


@dataclass(frozen=True)
class Rebuilt(Generic[V]):
    """A rebuild's result: the grown transcript replayed, its contexts, the wanted request laid out."""

    transcript: Transcript
    replay: Replay
    contexts: tuple[int, ...]
    view: V | None


class Session:
    """A transcript being inspected: its replay under the current settings and everything the
    screen's workers compute from it (one generation per replay; a result of an older one is stale).
    """

    def __init__(
        self,
        transcript: Transcript,
        policy: str | Policy | None = None,
        window: int | None = None,
        window_source: str = "--window",
        follower: Follower | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.transcript = transcript
        self.policy = policy
        self.window = window
        self.window_source = window_source
        self.follower = follower
        self.clock = clock
        self.replay: Replay | None = None
        self.lock = threading.Lock()
        self.waiting = Waiting()
        """Steps for the screen waiting for the lock (the background scan steps aside for them)."""
        self.rests_until = 0.0
        """Clock time until which the scan rests (`SCAN_YIELD_S`, `SCAN_TAIL_S`)."""
        self.generation = 0
        self.fired: dict[int, frozenset[str]] = {}
        self.scanned = 0
        self.scan_seed: dict[int, frozenset[str]] = {}
        """What the scan of the replay before a live update found, still valid for this one."""
        self.scan_started = -1
        """The generation whose scan was started last."""
        self._findings: tuple[int, list[Finding]] | None = None
        self.reshaping = False
        """A change of policy or window is being replayed (its replay has not landed yet)."""
        self._before: tuple[str | Policy | None, int | None, str] = (policy, window, window_source)
        # live following
        self.live_busy = follower is not None
        """A live rebuild is running (at first: the initial load, which must land first)."""
        self.live_dirty = False
        """The file changed since the last rebuild started."""
        self.changed_at = clock()
        """When the followed file last changed (clock seconds)."""
        self.live_reset: str | None = None
        """The file was truncated or replaced since the last rebuild started (the reason)."""
        self.awaiting_first = follower is not None
        """Live: the first replay has not landed yet (rebuilds wait for it, so it cannot land last)."""
        self._collector_paused = False

    @property
    def total(self) -> int:
        return len(self.replay) if self.replay is not None else 0

    # -- the lock ---------------------------------------------------------------------------------
    @contextmanager
    def held(self) -> Iterator[None]:
        """The replay's lock, taken for what the screen waits on (a step, the findings, the
        window's layout): counted in `waiting` while it waits, so the background scan steps aside."""
        with self.waiting:
            self.lock.acquire()
        try:
            yield
        finally:
            self.lock.release()

    def showing(self) -> None:
        """A request is being shaped to be shown: the scan rests until it is (`SCAN_YIELD_S`)."""
        self.rests_until = self.clock() + SCAN_YIELD_S

    def shown(self) -> None:
        """It is shown: the scan goes on once its frames are drawn (`SCAN_TAIL_S`)."""
        self.rests_until = min(self.rests_until, self.clock() + SCAN_TAIL_S)

    # -- the first paint --------------------------------------------------------------------------
    def pause_collector(self) -> None:
        """No cyclic garbage collection until `resume_collector` (the first columns drawn): the
        calibration of the first request shown builds its many objects with the collector paused
        (`paused_gc`), and the collections that followed it, before the columns' frame, walked
        them all (a young and a middle one, 27-54 ms of the 0.4 s between the first frame and the
        first columns at 4,710 requests). They come after the frame instead. Nothing if the
        collector is off already (a `paused_gc` under way re-enables it as before)."""
        if not self._collector_paused and gc.isenabled():
            gc.disable()
            self._collector_paused = True

    @property
    def collector_paused(self) -> bool:
        return self._collector_paused

    def resume_collector(self) -> None:
        """The collector on again, if `pause_collector` paused it (idempotent)."""
        if self._collector_paused:
            self._collector_paused = False
            gc.enable()

    # -- replays ----------------------------------------------------------------------------------
    def open(self) -> tuple[Replay, tuple[int, ...]]:
        """The transcript replayed under the settings, and its contexts (a worker's first job)."""
        with self.lock:
            replay = Replay.open(
                self.transcript, policy=self.policy, window=self.window, window_source=self.window_source
            )
            return replay, tuple(replay.contexts())

    def change_settings(
        self, policy: str | Policy | None = None, window: int | None = None, window_source: str | None = None
    ) -> int:
        """Replay from now on under another policy and/or window (None: unchanged); the new
        generation, which `reshaped` replays. `settings_failed` restores the ones before."""
        self._before = (self.policy, self.window, self.window_source)
        if policy is not None:
            self.policy = policy
        if window is not None:
            self.window = window
        if window_source is not None:
            self.window_source = window_source
        self.reshaping = True
        self.generation += 1
        return self.generation

    def reshaped(self, replay: Replay, policy: str | Policy | None, window: int | None) -> Replay:
        """`replay` under another policy or window."""
        with self.lock:
            return replay.with_settings(policy=policy, window=window)

    def settings_failed(self) -> None:
        """The replay under new settings failed: the settings before it hold again."""
        if self.reshaping and self.replay is not None:
            self.reshaping = False
            self.policy, self.window, self.window_source = self._before

    def landed(self, replay: Replay) -> None:
        """A replay (the first one, or under new settings) is the one shown from now on."""
        self.reshaping = False
        self.replay = replay
        self.fired = {}
        self.scanned = 0
        self.scan_seed = {}

    def shape(self, replay: Replay, k: int, layout: Layout[V]) -> V:
        """Request k shaped (holding the lock) and laid out (not holding it), the collector paused."""
        with paused_gc():
            with self.held():
                step = replay.step(k)
                events = replay.events_at(k - 1)
                compaction = open_compaction(replay, k)
            return layout(replay, step, events, compaction)

    def findings(self, replay: Replay, generation: int) -> list[Finding]:
        """The findings of `replay` (computed once per generation; holding the lock)."""
        cached = self.cached_findings(generation)
        if cached is not None:
            return cached
        with self.held():
            found = find_all(replay)
        if generation == self.generation:
            self._findings = (generation, found)
        return found

    def cached_findings(self, generation: int | None = None) -> list[Finding] | None:
        """The findings already found for `generation` (the current one by default), if any."""
        want = self.generation if generation is None else generation
        if self._findings is not None and self._findings[0] == want:
            return self._findings[1]
        return None

    def keep_findings(self, generation: int, findings: list[Finding]) -> None:
        if generation == self.generation:
            self._findings = (generation, findings)

    def composition(self, replay: Replay, k: int) -> Composition:
        """What fills the window at request k (holding the lock)."""
        from inspector.replay.composition import composition

        with self.held():
            return composition(replay.step(k))

    # -- the background scan ----------------------------------------------------------------------
    def start_scan(self) -> bool:
        """Whether the scan of this generation is still to start (it is marked started)."""
        if self.scan_started == self.generation or self.replay is None:
            return False
        self.scan_started = self.generation
        return True

    def scan(
        self,
        replay: Replay,
        seed: dict[int, frozenset[str]],
        known_sent: tuple[int, ...] = (),
        *,
        marks: frozenset[str] = frozenset(),
        cancelled: Callable[[], bool] = lambda: False,
        pacer: Pacer | None = None,
        interval: float = SCAN_POST_INTERVAL,
        wait: float = 0.01,
    ) -> Iterator[ScanState]:
        """Which layers fire at every request, one request at a time (in a worker thread): yields
        how far it got every `interval` seconds and at the end. It steps aside while the screen
        waits for the lock or rests (`showing`), and keeps to a share of one core (`pacer`).

        `seed`: requests 1..len(seed) already scanned (live: before the transcript grew), and
        `known_sent` what they send. `marks`: the layers whose firing counts as `simulated`."""
        fired: dict[int, frozenset[str]] = dict(seed)
        sent: list[int] = list(known_sent[: len(seed)])
        simulated: set[int] = {k for k, names in seed.items() if names & marks}
        total = len(replay)
        if len(seed) >= total:
            yield ScanState(fired, frozenset(simulated), total, total, tuple(sent))
            return
        pacer = pacer or Pacer()
        last = self.clock()
        for k in range(len(seed) + 1, total + 1):
            if cancelled():
                return
            # The request the user is looking at goes first: wait while it wants the lock.
            while not cancelled() and (self.waiting.busy or self.clock() < self.rests_until):
                time.sleep(wait)
            started = time.perf_counter()
            with self.lock:
                result = replay.step(k).result
                names = frozenset(result.fired)
            if len(sent) == k - 1:
                sent.append(result.sent_tokens)
            # At most SCAN_SHARE of one core: a thread that never sleeps keeps the GIL from the UI.
            pacer.worked(time.perf_counter() - started)
            fired[k] = names
            if names & marks:
                simulated.add(k)
            now = self.clock()
            if now - last >= interval or k == total:
                last = now
                yield ScanState(dict(fired), frozenset(simulated), k, total, tuple(sent))

    def scanned_to(self, state: ScanState) -> None:
        """The scan of the current generation got this far."""
        self.fired = state.fired
        self.scanned = state.scanned

    def estimate_harness(self, replay: Replay, cancelled: Callable[[], bool] = lambda: False) -> bool:
        """What the harness estimated at every request (one pass over the session), for the gauge
        of a live session, whose updates do not wait for it: once the file has rested
        `HARNESS_QUIET_S` (a pass costs 0.1-0.3 s at 20,000 messages, and an agent's burst of lines
        would otherwise pay it at every line). Whether it computed them now (False: known already,
        no requests, or cancelled)."""
        if not len(replay) or replay.harness_estimate(1, wait=False) is not None:
            return False
        while self.follower is not None and self.clock() - self.changed_at < HARNESS_QUIET_S:
            if cancelled():
                return False
            time.sleep(0.05)
        # Like the scan, it steps aside while a request is being shown and for its frames: begun
        # as the first columns were drawn, it took the GIL from their frame (a pass of 35 ms at
        # 4,710 requests). The gauge's harness figure comes `SCAN_TAIL_S` after them.
        while not cancelled() and (self.waiting.busy or self.clock() < self.rests_until):
            time.sleep(0.01)
        if cancelled():
            return False
        replay.harness_estimates()
        return True

    # -- live following ---------------------------------------------------------------------------
    def file_changed(self, update: FollowUpdate) -> None:
        """The follower saw the file change: the next rebuild reads it (from the start after a reset)."""
        if update.reset:
            self.live_reset = update.reset_reason or "replaced"
        if update.changed:
            self.changed_at = self.clock()
            self.live_dirty = True

    def first_landed(self) -> bool:
        """The first replay landed (or failed): rebuilds may start. Whether it was the first."""
        if not self.awaiting_first:
            return False
        self.awaiting_first = False
        self.live_busy = False
        return True

    def next_rebuild(self, want: int | None) -> Rebuild | None:
        """The rebuild to run now, if the file changed and none is running (one at a time; changes
        that arrive meanwhile are read by the next one, so a burst costs two rebuilds, not one each).
        `want`: the request to lay out with it (None: the newest). The scan rests meanwhile."""
        if self.follower is None or self.live_busy or not self.live_dirty:
            return None
        self.live_busy = True
        self.live_dirty = False
        self.showing()  # until the grown session is shown
        reason, self.live_reset = self.live_reset, None
        previous = None if reason is not None or self.reshaping else self.replay
        return Rebuild(
            self.follower,
            previous,
            self.policy,
            self.window,
            self.window_source,
            self.generation,
            reason,
            want,
        )

    def rebuild(self, order: Rebuild, layout: Layout[V]) -> Rebuilt[V]:
        """Run a rebuild (in a worker thread): the follower's transcript of everything read so far,
        replayed (growing `previous`'s calibration where there is one), and the wanted request laid
        out, the collector paused."""
        transcript = order.follower.transcript()
        view: V | None = None
        with paused_gc():
            with self.held():
                if order.previous is None:
                    replay = Replay.open(
                        transcript,
                        policy=order.policy,
                        window=order.window,
                        window_source=order.window_source,
                    )
                else:
                    replay = order.previous.refreshed(transcript)
                # The request that will be shown, shaped here: one worker less before it is on screen.
                k = len(replay) if order.want is None else min(order.want, len(replay))
                if k >= 1:
                    view = layout(replay, replay.step(k), replay.events_at(k - 1), open_compaction(replay, k))
            contexts = tuple(replay.contexts())
        return Rebuilt(transcript, replay, contexts, view)

    def rebuild_ended(self, generation: int, reset_reason: str | None, accepted: bool) -> None:
        """A rebuild ended. Not `accepted` (it failed, or the settings changed meanwhile, a newer
        `generation`): a stale one is read again under the new settings."""
        self.live_busy = False
        if not accepted and generation != self.generation:
            self.live_dirty = True
            self.live_reset = self.live_reset or reset_reason

    def grew(self, replay: Replay, reset: str | None) -> dict[int, frozenset[str]]:
        """The grown transcript's replay replaces the old one (a new generation). What the scan
        found for the old requests holds (a request's shaping depends on the transcript up to it
        only); the old last one may have grown (streamed lines) and is redone. The seed kept."""
        old_total = self.total
        seed: dict[int, frozenset[str]] = {}
        k = 1
        while reset is None and k < old_total and k in self.fired:
            seed[k] = self.fired[k]
            k += 1
        self.generation += 1
        self.transcript = replay.transcript
        self.replay = replay
        self.fired = dict(seed)
        self.scanned = len(seed)
        self.scan_seed = seed
        return seed
