"""Issue 27, "labels a newcomer can read", on the corpus files where they were seen: every number
says what it is, and singular and plural agree."""

from __future__ import annotations

import pytest

from inspector.cli import main

from .conftest import corpus_file

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
