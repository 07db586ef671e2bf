"""The Claude Code reader extends its last transcript when a followed file grows along the active
branch, instead of building it again from every line. Whatever path it takes, the transcript must
be the one a fresh reader makes of the same bytes."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from inspector.formats.base import Pairing, pairing_issues
from inspector.formats.claude_code import ClaudeCodeReader
from inspector.model import Message, Origin, Role, TextBlock, ToolCallBlock, ToolResultBlock, Transcript
from tests.conftest import ROOT, claude_code_corpus

SAMPLES = [ROOT / "inspector" / "samples" / "long-session.jsonl", ROOT / "inspector" / "samples" / "short-session.jsonl"]


def fields(t: Transcript) -> dict[str, Any]:
    return {name: getattr(t, name) for name in type(t).__struct_fields__}


def fresh(path: Path, data: bytes) -> Transcript:
    reader = ClaudeCodeReader(path)
    reader.feed(data)
    return reader.transcript()


def follow_and_compare(path: Path, cuts: list[int]) -> ClaudeCodeReader:
    """Feed `path` in the pieces `cuts` makes, asking for the transcript after each; every one
    must equal a fresh reader's of the same prefix, field by field."""
    data = path.read_bytes()
    reader = ClaudeCodeReader(path)
    prev = 0
    for cut in [*cuts, len(data)]:
        reader.feed(data[prev:cut])
        prev = cut
        got, want = fields(reader.transcript()), fields(fresh(path, data[:cut]))
        for name, value in want.items():
            assert got[name] == value, f"{path.name}: {name} differs after byte {cut:,}"
    return reader


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_followed_in_random_pieces_equals_fresh_reads(path: Path) -> None:
    size = path.stat().st_size
    cuts = sorted(random.Random(7).sample(range(1, size), 40))
    reader = follow_and_compare(path, cuts)
    # the fast path carried the follow: nearly every transcript extended the one before
    assert reader.extensions >= 35, (reader.builds, reader.extensions)


@pytest.mark.slow
def test_sample_followed_line_by_line_extends_every_time() -> None:
    path = SAMPLES[0]
    data = path.read_bytes()
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    reader = follow_and_compare(path, ends[:-1:5])
    assert reader.builds <= 2  # the first with a message in it, and the one before
    t = reader.transcript()
    assert len(t.requests) > 50 and t.messages[-1].id == fresh(path, data).messages[-1].id


@pytest.mark.slow
@pytest.mark.parametrize("path", claude_code_corpus(), ids=lambda p: p.name)
def test_corpus_followed_in_random_pieces_equals_fresh_reads(path: Path) -> None:
    size = path.stat().st_size
    cuts = sorted(random.Random(11).sample(range(1, size), min(60, size - 1)))
    follow_and_compare(path, cuts)


def test_corpus_parallel_tool_traffic_is_extended_not_rebuilt() -> None:
    """spotter-fa812bfe, line by line: tool results that hang off an earlier line of a response
    (parallel calls) and hook output recovered from the compaction call are extended; what is left
    for full builds is the compaction, the lines that carry recovered hook output, and the start."""
    paths = [p for p in claude_code_corpus() if p.name.startswith("fa812bfe")]
    if not paths:
        pytest.skip("real transcript corpus not found")
    path = paths[0]
    data = path.read_bytes()
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    reader = ClaudeCodeReader(path)
    prev = 0
    for end in ends:
        reader.feed(data[prev:end])
        prev = end
        reader.transcript()
    assert len(ends) == 1881
    assert reader.builds <= 30 and reader.extensions == len(ends) - reader.builds
    assert fields(reader.transcript()) == fields(fresh(path, data))


def _message(i: int, *, calls: tuple[str, ...] = (), results: tuple[str, ...] = ()) -> Message:
    blocks: list[Any] = [ToolCallBlock(id=c, name="Read") for c in calls]
    blocks += [ToolResultBlock(call_id=r, content="ok") for r in results]
    return Message(
        id=f"m{i}",
        role=Role.ASSISTANT if calls else Role.USER,
        blocks=tuple(blocks) or (TextBlock(text="hi"),),
        origin=Origin(file="f", line=i + 1),
    )


def test_pairing_truncate_then_add_equals_pairing_from_scratch() -> None:
    rng = random.Random(3)
    ids = [f"c{k}" for k in range(8)]
    msgs = [
        _message(
            i,
            calls=tuple(rng.sample(ids, rng.randint(0, 2))),
            results=tuple(rng.sample([*ids, "x0", "x1"], rng.randint(0, 2))),
        )
        for i in range(60)
    ]
    pairing = Pairing("f")
    for m in msgs[:40]:
        pairing.add(m)
    pairing.truncate(25)
    for m in msgs[25:]:
        pairing.add(m)
    want = pairing_issues(msgs, "f")
    assert pairing.issues() == want
    assert any("made again" in i.reason for i in want) and any("orphan" in i.reason for i in want)


def test_pairing_orphan_paired_by_a_later_call_is_not_reported() -> None:
    msgs = [_message(0, results=("late",)), _message(1, calls=("late",)), _message(2, results=("never",))]
    pairing = Pairing("f")
    for m in msgs:
        pairing.add(m)
    reasons = [i.reason for i in pairing.issues()]
    assert reasons == ["tool result for call 'never', which no message makes (an orphan)"]
    pairing.truncate(1)  # the call goes: the first result is an orphan again
    assert [i.line for i in pairing.issues()] == [1]
