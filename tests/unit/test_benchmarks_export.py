"""Export's growth check, in CI: twice the messages in one segment cost at most about twice the
time (issue 31: the ledger table looked every message up in every layer's view, so the html of a
100,000-line chain took 576 s). Ratios only, never absolute times, and of CPU time: CI machines
are shared, and a busy neighbour stretches walls, not CPU seconds.

The chain is `benchmarks.export`'s (cached under benchmarks/out/); the full figure, html export
against `report` on 100,000 lines, is `python -m benchmarks.export`.
"""

from __future__ import annotations

import gc
import time

import pytest

from benchmarks.export import chain
from inspector.formats import load
from inspector.model import Transcript
from inspector.replay import Replay
from inspector.report.export import export

SMALL = 8_000
MAX_GROWTH = 2.5
"""Doubling the lines: at most this many times the time (linear is 2; quadratic is 4)."""


def _seconds(transcript: Transcript, fmt: str, rounds: int = 5) -> float:
    """The best CPU time of `rounds` exports, each from a fresh replay (a step is cached per
    replay)."""
    best = float("inf")
    # what the test process already holds (a whole suite's objects) is kept out of the collector's
    # walks, as a command's own process holds nothing else: the export's growth is measured, not
    # the suite's heap
    gc.collect()
    gc.freeze()
    try:
        for _ in range(rounds):
            replay = Replay.open(transcript)
            t0 = time.process_time()
            export(replay, fmt)
            best = min(best, time.process_time() - t0)
    finally:
        gc.unfreeze()
    return best


def _growth(small: Transcript, large: Transcript, fmt: str) -> float:
    return _seconds(large, fmt) / _seconds(small, fmt)


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_twice_the_messages_cost_about_twice_the_time(fmt: str) -> None:
    small = load(chain(SMALL))
    large = load(chain(2 * SMALL))
    assert len(large.segments) == len(small.segments) == 1  # one segment: the case that was quadratic
    assert len(large.messages) == 2 * len(small.messages) == SMALL * 2
    ratio = _growth(small, large, fmt)
    if ratio > MAX_GROWTH:
        ratio = _growth(small, large, fmt)  # a shared machine: measure once more
    assert ratio <= MAX_GROWTH, f"{2 * SMALL:,} lines cost {ratio:.2f}x {SMALL:,} lines ({fmt})"


def test_the_chain_is_one_request_per_assistant_line() -> None:
    t = load(chain(SMALL))
    assert len(t.requests) == SMALL // 2 and not t.load_issues
    assert max(r.usage.context for r in t.requests if r.usage is not None) < 167_000
