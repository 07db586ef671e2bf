"""The report's rows and counts (inspector.report.summary) as `replay_report` builds them: one
row per request, filled once with the calibrated context, the spend and the harness estimate."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from inspector.formats.detect import load
from inspector.model import (
    MediaBlock,
    Message,
    Request,
    Role,
    Segment,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Transcript,
    Usage,
)
from inspector.replay import Replay
from inspector.report.summary import (
    budget_row,
    build_report,
    context_stats,
    replay_report,
    request_rows,
    role_counts,
    tool_counts,
)
from tests.conftest import real_transcripts


def plain_role_counts(tr: Transcript) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for m in tr.messages:
        if m.role is Role.USER and m.is_tool_result:
            counts["tool_result"] += 1
        elif m.is_summary:
            counts["summary"] += 1
        else:
            counts[m.role.value] += 1
    return dict(sorted(counts.items()))


def plain_tool_counts(tr: Transcript) -> dict[str, int]:
    return dict(Counter(c.name for m in tr.messages for c in m.tool_calls).most_common())


@pytest.mark.parametrize("path", real_transcripts(), ids=lambda p: p.name)
def test_report_rows_and_counts_are_what_the_transcript_and_calibration_say(path: Path) -> None:
    tr = load(path)
    replay = Replay.open(tr)
    report = replay_report(replay)
    spend = replay.calibration.spend
    harness = replay.harness_estimates()
    assert len(report.requests) == len(tr.requests)
    for k, (row, req) in enumerate(zip(report.requests, tr.requests, strict=True), 1):
        reported = req.usage.context if req.usage is not None else None
        assert row.index == req.index and row.segment == req.segment and row.ledger_messages == req.ledger_len
        assert (row.model, row.timestamp) == (req.model, req.timestamp)
        assert row.output_tokens == (req.usage.output if req.usage is not None else None)
        assert row.estimated == (reported is None)
        assert row.context_tokens == (reported if reported is not None else replay.calibration.context(k))
        assert row.cumulative_tokens == spend[k - 1] and row.harness_estimate == harness[k - 1]
    assert report.cumulative_tokens == (spend[-1] if spend else 0)
    assert report.messages_by_role == plain_role_counts(tr) == role_counts(tr)
    assert report.tool_calls == plain_tool_counts(tr) == tool_counts(tr)
    assert list(report.tool_calls) == list(plain_tool_counts(tr))  # the same order: by count, then first seen
    # the context figures are those the transcript reported, not calibrated ones
    bare = build_report(tr, budget_row(replay))
    assert report.context == bare.context == context_stats(request_rows(tr))


class Text2(TextBlock, frozen=True):
    """A block subclass: counted as its base class."""


class Result2(ToolResultBlock, frozen=True):
    pass


def test_counts_of_odd_messages() -> None:
    messages = [
        Message(id="1", role=Role.USER, blocks=()),
        Message(id="2", role=Role.USER, blocks=(ToolResultBlock(call_id="a", content="x"), MediaBlock())),
        Message(id="3", role=Role.USER, blocks=(MediaBlock(),)),
        Message(id="4", role=Role.USER, blocks=(Result2(call_id="a"), Text2(text="note"))),
        Message(id="5", role=Role.USER, blocks=(Result2(call_id="a"),)),
        Message(id="6", role=Role.USER, blocks=(TextBlock(text="sum"),), is_summary=True),
        Message(id="7", role=Role.USER, blocks=(ToolResultBlock(call_id="a"),), is_summary=True),
        Message(
            id="8",
            role=Role.ASSISTANT,
            blocks=(ToolCallBlock(id="b", name="Bash"), ToolCallBlock(id="c", name="Read")),
        ),
        Message(id="9", role=Role.ASSISTANT, blocks=(ToolCallBlock(id="d", name="Read"),)),
        Message(id="10", role=Role.TOOL, blocks=(ToolResultBlock(call_id="d"),)),
    ]
    tr = Transcript(format="generic", path="x", messages=messages)
    assert (
        role_counts(tr)
        == plain_role_counts(tr)
        == {
            "assistant": 2,
            "summary": 1,
            "tool": 1,
            "tool_result": 3,
            "user": 3,
        }
    )
    assert list(tool_counts(tr).items()) == list(plain_tool_counts(tr).items()) == [("Read", 2), ("Bash", 1)]


def test_a_request_with_no_report_is_calibrated_and_left_out_of_the_context_figures() -> None:
    messages = [
        Message(id="u1", role=Role.USER, blocks=(TextBlock(text="task " * 50),)),
        Message(id="a1", role=Role.ASSISTANT, blocks=(TextBlock(text="ok"),)),
        Message(id="u2", role=Role.USER, blocks=(TextBlock(text="more " * 50),)),
        Message(id="a2", role=Role.ASSISTANT, blocks=(TextBlock(text="ok"),)),
    ]
    tr = Transcript(
        format="claude-code",
        path="x",
        messages=messages,
        segments=[Segment(index=0, message_ids=("u1", "a1", "u2", "a2"))],
        requests=[
            Request(index=1, response_id="a1", usage=Usage(input=5_000, output=10), ledger_len=1),
            Request(index=2, response_id="a2", usage=None, ledger_len=3),
        ],
    )
    replay = Replay.open(tr)
    report = replay_report(replay)
    first, second = report.requests
    assert (first.context_tokens, first.estimated) == (5_000, False)
    assert second.estimated and second.context_tokens == replay.calibration.context(2) > 5_000
    assert report.context is not None
    assert (report.context.first, report.context.max, report.context.last) == (5_000, 5_000, 5_000)


def test_rows_refuse_figures_for_another_number_of_requests() -> None:
    tr = Transcript(format="generic", path="x", requests=[Request(index=1)])
    with pytest.raises(ValueError, match="2 spend figures for 1 requests"):
        request_rows(tr, spend=[1, 2])
    with pytest.raises(ValueError, match="0 harness estimates for 1 requests"):
        request_rows(tr, harness=[])
    (row,) = request_rows(tr)
    assert (row.context_tokens, row.estimated, row.cumulative_tokens, row.harness_estimate) == (
        None,
        False,
        0,
        None,
    )
