"""The session without a screen (`inspector.session`): scan, lock, live rebuilds, findings cache.

No Textual here: these run the methods the app's workers call, in plain threads."""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path

import pytest

import inspector.session as session_module
from inspector.formats import load
from inspector.live.follow import FollowUpdate, follower_for
from inspector.model import RecordedEvent
from inspector.replay import Replay, Step
from inspector.replay.folded import OpenedCompaction
from inspector.samples import sample_path
from inspector.session import Pacer, ScanState, Session

MARKS = frozenset({"old_history_snip", "auto_compact"})


def opened(name: str = "long-session") -> tuple[Session, Replay]:
    session = Session(load(sample_path(name)))
    replay, _ = session.open()
    session.landed(replay)
    return session, replay


def no_rest() -> Pacer:
    return Pacer(sleep=lambda s: None)


def expected_fired(name: str = "long-session") -> dict[int, frozenset[str]]:
    fresh = Replay.open(load(sample_path(name)))
    return {k: frozenset(fresh.step(k).result.fired) for k in range(1, len(fresh) + 1)}


def test_the_scan_reports_its_progress_up_to_every_request() -> None:
    session, replay = opened()
    total = len(replay)
    assert total > 10
    states = list(session.scan(replay, {}, marks=MARKS, pacer=no_rest(), interval=0.0))
    assert [s.scanned for s in states] == list(range(1, total + 1))  # every request, in order
    last = states[-1]
    assert (last.scanned, last.total, len(last.sent)) == (total, total, total)
    assert last.fired == expected_fired()
    assert last.simulated == frozenset(k for k, names in last.fired.items() if names & MARKS)
    assert last.sent == tuple(replay.step(k).result.sent_tokens for k in range(1, total + 1))
    session.scanned_to(last)
    assert (session.scanned, session.fired) == (total, last.fired)


def test_the_scan_goes_on_from_its_seed() -> None:
    session, replay = opened()
    total = len(replay)
    full = list(session.scan(replay, {}, pacer=no_rest(), interval=0.0))[-1]
    seed = {k: full.fired[k] for k in range(1, 6)}
    states = list(session.scan(replay, seed, full.sent, pacer=no_rest(), interval=0.0))
    assert [s.scanned for s in states] == list(range(6, total + 1))  # requests 1-5 not redone
    assert states[-1].fired == full.fired and states[-1].sent == full.sent
    # all of it seeded: one report, at once
    done = list(session.scan(replay, dict(full.fired), full.sent))
    assert [(s.scanned, s.total) for s in done] == [(total, total)]


def test_the_scan_holds_the_lock_while_it_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    session, replay = opened()
    held: list[bool] = []
    step = replay.step

    def watched(k: int) -> Step:
        held.append(session.lock.locked())
        return step(k)

    monkeypatch.setattr(replay, "step", watched)
    list(session.scan(replay, {}, pacer=no_rest()))
    assert len(held) == len(replay) and all(held)


def test_shaping_holds_the_lock_for_the_step_only_with_the_collector_paused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session, replay = opened()
    held: list[bool] = []
    step = replay.step

    def watched(k: int) -> Step:
        held.append(session.lock.locked())
        return step(k)

    monkeypatch.setattr(replay, "step", watched)

    def layout(
        r: Replay, s: Step, events: list[RecordedEvent], compaction: OpenedCompaction | None
    ) -> tuple[int, bool, bool]:
        return s.index, session.lock.locked(), gc.isenabled()

    assert gc.isenabled()
    assert session.shape(replay, 3, layout) == (3, False, False)
    assert held[0] is True
    assert gc.isenabled()


def test_the_scan_steps_aside_while_the_screen_waits_or_rests() -> None:
    now = [100.0]
    session = Session(load(sample_path("long-session")), clock=lambda: now[0])
    replay, _ = session.open()
    session.landed(replay)
    session.showing()  # a request is being shaped for the screen: the scan rests
    assert session.rests_until == 100.0 + session_module.SCAN_YIELD_S
    got: list[ScanState] = []
    stop = threading.Event()
    thread = threading.Thread(
        target=lambda: got.extend(
            session.scan(replay, {}, pacer=no_rest(), interval=0.0, cancelled=stop.is_set, wait=0.001)
        )
    )
    thread.start()
    time.sleep(0.2)
    assert got == []  # rested all along
    now[0] += 0.05
    session.shown()  # shown: the scan waits its tail, then goes on
    assert session.rests_until == pytest.approx(100.05 + session_module.SCAN_TAIL_S)
    with session.held():  # the screen holds the lock meanwhile: still nothing
        now[0] += 1.0
        time.sleep(0.1)
        assert got == []
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert got[-1].scanned == len(replay)


def test_the_harness_pass_waits_for_the_shown_request_and_its_frames() -> None:
    """The first scan's pass over the session for the harness's estimates steps aside like the
    scan: begun as the first columns were drawn, it took the GIL from their frame."""
    now = [100.0]
    session = Session(load(sample_path("long-session")), clock=lambda: now[0])
    replay, _ = session.open()
    session.landed(replay)
    session.showing()
    session.shown()  # the first columns shown: their frames go first, for SCAN_TAIL_S
    done: list[bool] = []
    thread = threading.Thread(target=lambda: done.append(session.estimate_harness(replay)))
    thread.start()
    time.sleep(0.2)
    assert done == [] and replay.harness_estimate(1, wait=False) is None  # rested all along
    now[0] += session_module.SCAN_TAIL_S
    thread.join(timeout=30)
    assert done == [True] and replay.harness_estimate(1, wait=False) is not None
    assert session.estimate_harness(replay) is False  # known already: nothing more to do


def test_a_cancelled_scan_stops_and_reports_nothing_more() -> None:
    session, replay = opened()
    calls = [0]

    def cancelled() -> bool:
        calls[0] += 1
        return calls[0] > 4

    states = list(session.scan(replay, {}, pacer=no_rest(), interval=0.0, cancelled=cancelled))
    assert 0 < len(states) < len(replay)


def test_the_findings_are_found_once_per_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    session, replay = opened("short-session")
    from inspector.findings import find_all as found
    calls: list[int] = []

    def counting(r: Replay) -> list[object]:
        calls.append(len(r))
        return found(r)  # type: ignore[return-value]

    monkeypatch.setattr(session_module, "find_all", counting)
    first = session.findings(replay, session.generation)
    assert session.findings(replay, session.generation) is first
    assert session.cached_findings() is first
    assert calls == [len(replay)]
    session.change_settings(window=150_000)  # a new generation: found again
    assert session.cached_findings() is None
    session.findings(replay, session.generation)
    assert len(calls) == 2


def test_settings_that_fail_are_put_back() -> None:
    session = Session(load(sample_path("short-session")), "claude-code", None, "--window")
    replay, _ = session.open()
    session.landed(replay)
    generation = session.change_settings(policy="no-such-policy")
    assert (generation, session.policy, session.reshaping) == (1, "no-such-policy", True)
    session.settings_failed()
    assert (session.policy, session.window, session.reshaping) == ("claude-code", None, False)
    assert session.change_settings(window=100_000, window_source="--window") == 2
    session.landed(session.reshaped(replay, None, 100_000))
    assert (session.window, session.reshaping, session.replay.window) == (100_000, False, 100_000)  # type: ignore[union-attr]


def test_a_followed_transcript_is_rebuilt_as_it_grows(tmp_path: Path) -> None:
    lines = sample_path("long-session").read_bytes().splitlines(keepends=True)
    path = tmp_path / "growing.jsonl"
    path.write_bytes(b"".join(lines[:400]))
    follower = follower_for(path)
    follower.poll_once()
    session = Session(follower.transcript(), follower=follower)
    assert session.next_rebuild(None) is None  # the first load has not landed
    replay, _ = session.open()
    session.landed(replay)
    assert session.first_landed() is True and session.first_landed() is False
    assert session.next_rebuild(None) is None  # nothing changed
    full = list(session.scan(replay, {}, pacer=no_rest()))[-1]
    session.scanned_to(full)
    old_total = len(replay)

    with path.open("ab") as fh:
        fh.write(b"".join(lines[400:]))
    update = follower.poll_once()
    assert update.changed and not update.reset
    session.file_changed(update)
    order = session.next_rebuild(None)
    assert order is not None and order.previous is replay and order.generation == 0
    assert session.next_rebuild(None) is None  # one at a time
    assert session.rests_until > time.monotonic()  # the scan rests until it is shown

    def layout(r: Replay, s: Step, e: list[RecordedEvent], c: OpenedCompaction | None) -> int:
        return s.index

    done = session.rebuild(order, layout)
    grown = len(done.replay)
    assert grown > old_total and done.view == grown  # the newest request laid out
    assert grown == len(Replay.open(load(path)))
    session.rebuild_ended(order.generation, None, accepted=True)
    seed = session.grew(done.replay, None)
    # what the scan found for the old requests holds, but for the old last one (it may have grown)
    assert seed == {k: full.fired[k] for k in range(1, old_total)}
    assert (session.generation, session.scanned, session.replay) == (1, old_total - 1, done.replay)
    assert session.transcript is done.replay.transcript
    rest = list(session.scan(done.replay, seed, full.sent, pacer=no_rest()))[-1]
    fresh = Replay.open(load(path))
    assert rest.fired == {k: frozenset(fresh.step(k).result.fired) for k in range(1, len(fresh) + 1)}


def test_a_reset_rebuilds_from_scratch_and_drops_the_scan(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(sample_path("short-session").read_bytes())
    follower = follower_for(path)
    follower.poll_once()
    session = Session(follower.transcript(), follower=follower)
    replay, _ = session.open()
    session.landed(replay)
    session.first_landed()
    session.scanned_to(list(session.scan(replay, {}, pacer=no_rest()))[-1])
    session.file_changed(FollowUpdate(bytes_read=10, reset=True, reset_reason="truncated"))
    order = session.next_rebuild(7)
    assert order is not None
    assert (order.previous, order.reset_reason, order.want) == (None, "truncated", 7)
    assert session.live_reset is None  # handed to the rebuild
    assert session.grew(replay, "truncated") == {} and session.scanned == 0


def test_a_rebuild_overtaken_by_new_settings_is_read_again() -> None:
    session = Session(load(sample_path("short-session")), follower=follower_for(sample_path("short-session")))
    session.first_landed()
    session.file_changed(FollowUpdate(bytes_read=5))
    order = session.next_rebuild(None)
    assert order is not None and order.generation == 0
    session.change_settings(window=120_000)  # generation 1 while it ran
    session.rebuild_ended(order.generation, "replaced", accepted=False)
    assert (session.live_busy, session.live_dirty, session.live_reset) == (False, True, "replaced")
    again = session.next_rebuild(None)
    assert again is not None and again.generation == 1 and again.window == 120_000
    assert again.previous is None  # still reshaping: no calibration to grow from
