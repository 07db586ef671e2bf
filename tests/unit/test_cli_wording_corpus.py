"""Issue 27, "labels a newcomer can read", on the corpus files where they were seen: every number
says what it is, and singular and plural agree."""

from __future__ import annotations

import pytest

from inspector.cli import main
from tests.conftest import corpus_file

SHORT = "claude-code/spotter-short.jsonl"  # one request, one finding (pressure)


def test_one_finding_is_one_finding(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(SHORT)
    assert main(["findings", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "1 finding: 0 errors, 0 warnings, 1 info"
    assert len(lines) == 2 and "pressure" in lines[0]


def test_the_overhead_is_kept_with_its_priority_named(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(SHORT)
    assert main(["explain", str(path), "overhead"]) == 0
    assert capsys.readouterr().out == (
        "request 1: kept: pinned (overhead, priority 100): "
        "sent by Claude Code with every request (system prompt and tool definitions)\n"
    )


def test_a_request_without_usage_says_its_context_is_the_calibrated_prediction(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = corpus_file("codex/agent-history-synthetic-compaction.jsonl")  # requests 1-5 report no usage
    assert main(["report", str(path), "--step", "2"]) == 0
    out = capsys.readouterr().out
    assert "no usage reported for this request: the context is the calibrated prediction" in out


def test_a_session_of_one_request_says_request_not_requests(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(SHORT)
    assert main(["calibrate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "records token usage for 1 request:" in err and "1 requests" not in err


def _header(out: str, first: str) -> list[str]:
    """The column names of the table whose heading row begins with `first`."""
    (row,) = [x for x in out.splitlines() if x.startswith(f"┃ {first} ")]
    return [c.strip() for c in row.strip("┃").split("┃")]


def test_the_fidelity_table_names_the_trigger_and_the_result(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `report | cat` at 80 columns, read as a newcomer: the fidelity column that held 155,000 was
    # called "line" (the recorded events above it call a file's line number so) and the verdict
    # had no heading
    monkeypatch.setenv("COLUMNS", "80")
    path = corpus_file("claude-code/fasthooks-manual-compact.jsonl")  # one manual compaction
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert _header(out, "event") == [
        "event",
        "recorded after request",
        "simulated after request",
        "harness estimate",
        "trigger",
        "estimate before",
        "result",
    ]
    (row,) = [x for x in out.splitlines() if x.startswith("│ compaction (manual)")]
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert (
        cells[4] == "155,000"
        and cells[6] == "· the policy does not compact before this point; a manual compaction, not counted"
    )
    assert _header(out, "kind")[-1] == "line"  # the recorded events: line 59 of the file
    (event,) = [x for x in out.splitlines() if x.startswith("│ compaction · compact_boundary")]
    assert event.rstrip().endswith("│   59 │")


def test_calibrate_names_the_columns_of_requests_scored_apart_as_above(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    path = corpus_file("claude-code/spotter-fa812bfe/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl")
    assert main(["calibrate", str(path)]) == 0
    out = capsys.readouterr().out
    above = _header(out, "mode")
    assert above[:5] == ["mode", "median error", "p95 error", "max error", "requests predicted"]
    apart = _header(out, "kind of request")
    assert apart == ["kind of request", *above[:5]]  # was "requests, mode, median, p95, max, n"
    rows = [
        [c.strip() for c in x.strip("│").split("│")]
        for x in out.splitlines()
        if x.startswith("│ after compaction")
    ]
    assert [r[1] for r in rows] == ["proportional", "delta"] and all(r[5] == "1" for r in rows)
