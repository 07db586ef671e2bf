"""The benchmarks' growth checks, in CI: one more request costs about the same at request 2,000 as
at request 200 (DESIGN.md §7 "replay"). Ratios only, never absolute times: CI machines are shared.

The sessions are generated (and cached under benchmarks/out/) by `benchmarks.synth`; the same
measurement is a row of `python -m benchmarks --small`.
"""

from __future__ import annotations

import orjson
import pytest

from benchmarks import synth
from benchmarks.runner import step_costs
from inspector.formats import load

MAX_GROWTH = 2.0


def _growth(transcript, **open_kw) -> tuple[float, dict[int, int]]:  # type: ignore[no-untyped-def]
    costs, sizes = step_costs(transcript, (200, 2000), span=20, rounds=3, **open_kw)
    return costs[2000] / costs[200], sizes


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "compact", "open_kw"),
    [
        ("replay2000", True, {}),
        ("flat2000", False, {"window": 2_000_000}),
    ],
    ids=["compacting-session", "no-compaction-ledger-x10"],
)
def test_request_2000_costs_at_most_twice_request_200(
    name: str, compact: bool, open_kw: dict[str, int]
) -> None:
    session = synth.synth(name, requests=2000, compact=compact)
    transcript = load(session.path)
    assert len(transcript.requests) == 2000
    ratio, sizes = _growth(transcript, **open_kw)
    if not compact:
        assert sizes[2000] >= 8 * sizes[200], sizes  # the ledger really grew about tenfold
    if ratio > MAX_GROWTH:
        ratio, sizes = _growth(transcript, **open_kw)  # a shared machine: measure once more
    assert ratio <= MAX_GROWTH, f"request 2,000 costs {ratio:.2f}x request 200 (ledgers {sizes})"


def test_synthetic_sessions_compact_like_claude_code() -> None:
    session = synth.synth("replay2000", requests=2000)
    transcript = load(session.path)
    assert session.compactions >= 3
    assert len(transcript.segments) == session.compactions + 1
    assert not transcript.load_issues
    peak = max(r.usage.context for r in transcript.requests if r.usage is not None)
    assert 150_000 <= peak <= 190_000


def test_synthetic_sessions_are_mostly_lines_that_are_not_conversation() -> None:
    """As in a real Claude Code 2.1 session (spotter-fa812bfe: 71% progress), most lines are
    hooks, progress and file history; the hook lines hang off their tool call's line, so every
    request is still read and nothing is detached."""
    session = synth.synth("replay2000", requests=2000)
    transcript = load(session.path)
    types = [orjson.loads(line).get("type") for line in session.path.read_bytes().splitlines()]
    conversation = sum(1 for t in types if t in ("user", "assistant"))
    assert len(types) == session.lines and conversation > 5_000
    assert len(transcript.requests) == 2000
    assert "detached (parent not in file)" not in transcript.skipped
    assert transcript.skipped["progress"] > session.lines / 2
    assert conversation < session.lines * 0.4


def test_the_bare_loader_reads_every_line_and_makes_a_message_per_conversation_line() -> None:
    """`benchmarks.bound`: what the open figure could be at best; its loader reads what the reader
    reads (the same lines, a message per conversation line)."""
    from benchmarks.bound import _with_models, bare_load

    session = synth.synth("replay2000", requests=2000)
    data = session.path.read_bytes()
    types = [orjson.loads(line).get("type") for line in data.splitlines()]
    conversation = sum(1 for t in types if t in ("user", "assistant"))
    path = str(session.path)
    assert bare_load(path, data, _with_models(path)) == (session.lines, conversation)


def test_a_file_made_by_size_is_about_that_size() -> None:
    """The open figure is about "a 100 MB transcript" (DESIGN.md §7): a request costs more bytes as
    the session goes on, and `requests_for` allows for it (a constant per request made the "100 MB"
    file 130 MB)."""
    made = synth.by_size(10)
    assert 9_000_000 <= made.bytes <= 11_000_000
    assert synth.requests_for(100) < 10 * synth.requests_for(10)  # not linear: fewer requests a MB
    assert synth.requests_for(400) < 4 * synth.requests_for(100)


def test_the_phases_of_report_json_add_up_and_count_the_session(capsys: pytest.CaptureFixture[str]) -> None:
    """`benchmarks.phases` (the breakdown row of the open figure) runs `report --json`'s steps one by
    one in this process: each phase is timed, and the session it read is the whole one."""
    from benchmarks import phases

    session = synth.synth("replay2000", requests=2000)
    assert phases.main([str(session.path)]) == 0
    out = orjson.loads(capsys.readouterr().out)
    assert (out["requests"], out["messages"]) == (2000, len(load(session.path).messages))
    steps = ("imports", "load", "replay_open", "report", "json")
    assert set(out) == {*steps, "messages", "requests"}
    assert all(out[k] >= 0 for k in steps) and out["load"] > 0 and out["report"] > 0
