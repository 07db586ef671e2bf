"""The shortcuts export takes per message give what the general paths give (issue 31: export
within 3x `report`): the ledger table's role and tools, the composition's split, the facts' scan of
calls and results."""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.findings.facts import Facts
from inspector.formats import load
from inspector.model import (
    MediaBlock,
    Message,
    ReasoningBlock,
    Role,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from inspector.replay import Replay
from inspector.replay.composition import _apportion, _block_size, build, message_parts
from inspector.report.export import _role, _tools
from inspector.shaping import Budget

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"
CORPUS_FILES = sorted((CORPUS / "claude-code").glob("*.jsonl"))[:6] if CORPUS.is_dir() else []

CALL = ToolCallBlock(id="c1", name="Read", arguments={"file_path": "src/a.py"})
RESULT = ToolResultBlock(call_id="c1", tool_name="Read", content="def f():\n    return 1\n")
SAMPLES = [
    Message(id="u1", role=Role.USER, blocks=(TextBlock(text="look at src/a.py"),)),
    Message(id="a1", role=Role.ASSISTANT, blocks=(CALL,)),
    Message(id="a2", role=Role.ASSISTANT, blocks=(ToolCallBlock(id="c2", name="", arguments={}),)),
    Message(id="r1", role=Role.USER, blocks=(RESULT,)),
    Message(id="r2", role=Role.USER, blocks=(ToolResultBlock(call_id="c9"),)),
    Message(id="m1", role=Role.USER, blocks=(MediaBlock(media_type="image/png"),)),
    Message(id="s1", role=Role.USER, blocks=(TextBlock(text="summary"),), is_summary=True),
    Message(id="e1", role=Role.ASSISTANT, blocks=()),
    Message(id="a3", role=Role.ASSISTANT, blocks=(TextBlock(text="reading"), CALL, CALL)),
    Message(id="r3", role=Role.USER, blocks=(RESULT, MediaBlock(media_type="image/png"))),
    Message(id="t1", role=Role.ASSISTANT, blocks=(ReasoningBlock(text="hmm"), TextBlock(text="ok"))),
]


def _general_tools(message: Message) -> str:
    """_tools as it was: every block walked (no one-block shortcut)."""
    calls = [b.name for b in message.blocks if isinstance(b, ToolCallBlock)]
    results = [b.tool_name or "?" for b in message.blocks if isinstance(b, ToolResultBlock)]
    return ", ".join(dict.fromkeys(n for n in calls + results if n))


def test_tools_of_one_block_is_tools_of_every_block_walked() -> None:
    got = [(_role(m), _tools(m)) for m in SAMPLES]
    assert [t for _, t in got] == [_general_tools(m) for m in SAMPLES]
    assert got[:7] == [
        ("user", ""),
        ("assistant", "Read"),
        ("assistant", ""),
        ("tool result", "Read"),
        ("tool result", "?"),
        ("user", ""),
        ("summary", ""),
    ]
    assert got[8] == ("assistant", "Read") and got[9] == ("tool result", "Read")


def _general_parts(message: Message, weight: int, names: dict[str, str]) -> list[tuple[str, int]]:
    """message_parts as it was: every block sized, then apportioned (no one-part shortcut)."""
    sizes: dict[str, int] = {}
    for b in message.blocks:
        if isinstance(b, ToolResultBlock):
            key = "tool:" + (b.tool_name or names.get(b.call_id) or "unknown tool")
        elif isinstance(b, ReasoningBlock):
            key = "thinking"
        else:
            key = "conversation"
        sizes[key] = sizes.get(key, 0) + max(1, _block_size(b))
    return _apportion(weight, list(sizes.items())) if sizes else [("conversation", weight)]


def test_message_parts_in_one_part_take_the_whole_weight_as_apportioning_gives() -> None:
    for m in (m for m in SAMPLES if not m.is_summary):  # (a summary is its own part whole)
        assert message_parts(m, 1_001, {"c9": "Bash"}) == _general_parts(m, 1_001, {"c9": "Bash"}), m.id
    assert message_parts(SAMPLES[8], 1_001, {}) == [("conversation", 1_001)]
    assert message_parts(SAMPLES[10], 100, {}) == [("thinking", 60), ("conversation", 40)]


def test_a_message_sent_at_another_weight_is_split_at_that_weight() -> None:
    budget = Budget.for_window(200_000)
    mixed = SAMPLES[10]  # thinking 3 characters, text 2: 60 / 40 of 100
    ledger = [(SAMPLES[0], 50), (mixed, 100), (SAMPLES[3], 30)]
    sent = [(SAMPLES[0], 50), (mixed, 10), (SAMPLES[3], 30)]  # the mixed one shrunk
    comp = build(1, ledger, sent, budget)
    raw = {p.key: p.raw for p in comp.parts if not p.space}
    out = {p.key: p.sent for p in comp.parts if not p.space}
    assert raw == {"conversation": 90, "thinking": 60, "tool:Read": 30}
    assert out == {"conversation": 54, "thinking": 6, "tool:Read": 30}
    assert comp.context == 180 and comp.sent == 90


@pytest.mark.skipif(not CORPUS_FILES, reason="../shared/corpus is absent")
@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_facts_scan_the_calls_and_results_each_message_holds(path: Path) -> None:
    transcript = load(str(path))
    facts = Facts(Replay.open(transcript))
    calls = [
        (i, m.id, m.tool_calls)
        for i, m in enumerate(transcript.messages)
        if m.role is Role.ASSISTANT and m.tool_calls
    ]
    results = [(i, m.id, m.tool_results) for i, m in enumerate(transcript.messages) if m.tool_results]
    assert [(i, m.id, c) for i, m, c in facts._calls_in] == calls
    assert [(i, m.id, r) for i, m, r in facts._results_in] == results
    assert len(facts.calls) == sum(len(c) for _, _, c in calls)
    for m in transcript.messages:
        assert _tools(m) == _general_tools(m)
