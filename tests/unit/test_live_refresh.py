"""A followed session's replay is brought up to date from the one before (`Replay.refreshed`):
the transcript extended, the calibration gone on from where it stopped, the window and the spend
carried over. At every point it must equal a replay opened afresh on the same bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.formats.claude_code import ClaudeCodeReader
from inspector.replay import Replay
from tests.conftest import ROOT, claude_code_corpus


def _follow_and_compare(path: Path, every: int) -> int:
    data = path.read_bytes()
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    reader = ClaudeCodeReader(path)
    replay: Replay | None = None
    compared = 0
    prev = 0
    for n, end in enumerate(ends, start=1):
        reader.feed(data[prev:end])
        prev = end
        transcript = reader.transcript()
        if not transcript.requests:
            continue
        replay = Replay.open(transcript) if replay is None else replay.refreshed(transcript)
        if n % every and n != len(ends):
            continue
        fresh_reader = ClaudeCodeReader(path)
        fresh_reader.feed(data[:end])
        fresh = Replay.open(fresh_reader.transcript())
        assert (replay.window, replay.window_source) == (fresh.window, fresh.window_source)
        assert replay.contexts() == fresh.contexts(), f"contexts differ after line {n}"
        assert replay.calibration.spend == fresh.calibration.spend, f"spend differs after line {n}"
        k = len(fresh)
        got, want = replay.step(k).result, fresh.step(k).result
        assert (got.input_tokens, got.sent_tokens, got.fired) == (
            want.input_tokens,
            want.sent_tokens,
            want.fired,
        )
        compared += 1
    return compared


@pytest.mark.slow
def test_sample_session_followed_line_by_line_matches_fresh_replays() -> None:
    path = ROOT / "inspector" / "samples" / "long-session.jsonl"
    assert _follow_and_compare(path, every=25) >= 10


@pytest.mark.slow
@pytest.mark.parametrize(
    "path", [p for p in claude_code_corpus() if p.name.startswith("fa812bfe")], ids=lambda p: p.name
)
def test_corpus_followed_line_by_line_matches_fresh_replays(path: Path) -> None:
    assert _follow_and_compare(path, every=150) >= 10
