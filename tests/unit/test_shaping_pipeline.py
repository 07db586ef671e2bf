"""The pipeline: layer order, escalation, forced mode, estimator use, explain() sentences."""

from __future__ import annotations

import re
import time
from collections import Counter

from msgspec.structs import replace

from inspector.model import (
    Message,
    ReasoningBlock,
    Role,
    Source,
    SourceKind,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from inspector.shaping import (
    CLEARED_CONTENT,
    NO_HISTORY_COMPACTION,
    OPENCOLLAB,
    Action,
    Budget,
    Pipeline,
    ShapeResult,
    TokenMemo,
    explain,
    unpaired,
)
from inspector.tokens import HeuristicEstimator

EST = HeuristicEstimator()
TASK = Source.of(SourceKind.TASK)


def ledger(n: int, size: int = 3_000, tool: str = "Read", *, reasoning: bool = False) -> list[Message]:
    """A system prompt, a pinned task, `n` tool exchanges of `size`-char results, a closing user turn."""
    msgs = [
        Message(
            id="sys",
            role=Role.SYSTEM,
            blocks=(TextBlock(text="You are a coding agent."),),
            source=Source.of(SourceKind.IDENTITY),
        ),
        Message(id="task", role=Role.USER, blocks=(TextBlock(text="Fix the failing test."),), source=TASK),
    ]
    for k in range(n):
        blocks: list[TextBlock | ReasoningBlock | ToolCallBlock] = []
        if reasoning:
            blocks.append(ReasoningBlock(text="hmm", signed=True))
        blocks.append(ToolCallBlock(id=f"c{k}", name=tool, arguments={"file_path": f"src/m{k}.py"}))
        msgs.append(Message(id=f"a{k}", role=Role.ASSISTANT, blocks=tuple(blocks)))
        msgs.append(
            Message(
                id=f"r{k}",
                role=Role.USER,
                blocks=(ToolResultBlock(call_id=f"c{k}", content=f"{k}:" + "x" * size),),
                source=Source.of(SourceKind.TOOL_OUTPUT),
            )
        )
    msgs.append(Message(id="last", role=Role.USER, blocks=(TextBlock(text="Go on."),)))
    return msgs


def tokens(view: list[Message] | tuple[Message, ...]) -> int:
    return sum(EST.message(m) for m in view)


def run(view: list[Message], window: int | None, *, forced: bool = False) -> ShapeResult:
    return OPENCOLLAB.pipeline().run(view, OPENCOLLAB.budget(window), EST, forced=forced)


class Counting:
    """An estimator that counts how often it sizes each message object."""

    name = "counting"

    def __init__(self) -> None:
        self.calls: Counter[int] = Counter()
        self.by_id: Counter[str] = Counter()

    def text(self, text: str) -> int:
        return EST.text(text)

    def message(self, message: Message) -> int:
        self.calls[id(message)] += 1
        self.by_id[message.id] += 1
        return EST.message(message)


def test_under_trigger_nothing_fires() -> None:
    view = ledger(10)
    result = run(view, 200_000)
    total = tokens(view)
    assert result.final == tuple(view) and result.final is result.input
    assert result.fired == ()
    assert result.input_tokens == result.sent_tokens == total
    assert [layer.name for layer in result.layers] == [
        "per_tool_budget",
        "tool_output_clear",
        "old_history_snip",
        "auto_compact",
    ]
    assert [layer.reason for layer in result.layers] == [
        "no tool result over 16,000 chars",
        f"{total:,} under trigger 167,000",
        f"{total:,} under trigger 167,000",
        f"{total:,} under trigger 167,000",
    ]
    assert result.decisions == ()


def test_a_cheap_layer_under_the_trigger_stops_the_expensive_ones() -> None:
    view = ledger(60)
    total = tokens(view)
    assert total > 60_000
    result = run(view, 80_000)  # trigger 47,000
    clear = result.layer("tool_output_clear")
    assert clear.fired and clear.tokens_after <= 47_000
    assert result.fired == ("tool_output_clear",)
    assert result.layer("old_history_snip").reason == f"{clear.tokens_after:,} under trigger 47,000"
    assert result.layer("auto_compact").reason == f"{clear.tokens_after:,} under trigger 47,000"
    assert result.sent_tokens == clear.tokens_after == tokens(result.final)


def test_without_explaining_the_views_and_figures_are_the_same() -> None:
    """`explain=False` (a simulation over every request): the same views, figures and reasons,
    with tool output clear's decisions left out."""
    view = ledger(60)
    budget = OPENCOLLAB.budget(80_000)
    told = OPENCOLLAB.pipeline().run(view, budget, EST)
    quiet = OPENCOLLAB.pipeline().run(view, budget, EST, explain=False)
    assert told.fired == quiet.fired == ("tool_output_clear",)
    for a, b in zip(told.layers, quiet.layers, strict=True):
        assert (a.name, a.view, a.tokens_before, a.tokens_after, a.fired, a.reason, a.cleared) == (
            b.name,
            b.view,
            b.tokens_before,
            b.tokens_after,
            b.fired,
            b.reason,
            b.cleared,
        )
    assert len(told.layer("tool_output_clear").decisions) == 60  # 55 cleared, 5 kept recent
    assert quiet.layer("tool_output_clear").decisions == ()


def test_per_tool_budget_alone_can_be_enough() -> None:
    view = ledger(2, size=300_000)
    result = run(view, 200_000)
    assert result.fired == ("per_tool_budget",)
    assert result.layer("per_tool_budget").truncated == 2
    assert result.sent_tokens < 167_000


def test_escalation_to_snip_and_auto_compact() -> None:
    view = ledger(40, size=3_000, reasoning=False)
    result = run(view, 40_000)  # trigger 7,000, target 5,250
    assert result.layer("tool_output_clear").fired
    assert result.layer("old_history_snip").fired
    assert result.sent_tokens <= result.budget.target
    for prev, nxt in zip(result.layers, result.layers[1:], strict=False):
        assert prev.tokens_after == nxt.tokens_before
    assert not unpaired(result.final)
    assert result.final[0].id == "sys" and result.final[1].id == "task"

    # Reasoning-only exchanges cannot be snipped: auto compact is the last resort.
    view = ledger(40, size=3_000, reasoning=True)
    result = run(view, 40_000)
    assert not result.layer("old_history_snip").fired
    assert result.layer("auto_compact").fired
    assert result.sent_tokens <= result.budget.target
    summary = next(m for m in result.final if m.is_summary)
    assert summary.text.startswith("[Context auto-compacted — summary of ")


def test_no_history_compaction_keeps_history() -> None:
    view = ledger(40, size=20_000)
    result = NO_HISTORY_COMPACTION.pipeline().run(view, NO_HISTORY_COMPACTION.budget(40_000), EST)
    assert [layer.name for layer in result.layers] == ["per_tool_budget"]
    assert [m.id for m in result.final] == [m.id for m in view]
    assert result.layers[0].truncated == 40


def test_forced_mode_compacts_under_the_trigger_but_keeps_pins() -> None:
    view = ledger(20)
    normal = run(view, 200_000)
    assert normal.fired == ()
    forced = run(view, 200_000, forced=True)
    assert forced.forced
    clear = forced.layer("tool_output_clear")
    assert clear.fired and clear.cleared == 15
    assert clear.reason.startswith(f"forced (overflow recovery), estimate {tokens(view):,}; cleared 15")
    # Already under the target: snip and auto compact have nothing to reach.
    assert forced.layer("old_history_snip").reason.endswith("already at or under target 125,250")
    assert forced.final[1] == view[1]

    # Over the target (but under the trigger), forced mode compacts down to the target.
    budget = Budget.for_window(tokens(view) + 34_000)
    assert budget.target < tokens(view) <= budget.trigger
    result = OPENCOLLAB.pipeline().run(view, budget, EST, forced=True)
    assert result.sent_tokens <= budget.target
    assert result.final[:2] == tuple(view[:2])


def test_each_message_is_sized_once_per_run() -> None:
    view = ledger(50)
    counting = Counting()
    run_result = OPENCOLLAB.pipeline().run(view, OPENCOLLAB.budget(1_000_000), counting)
    assert run_result.fired == ()
    assert set(counting.calls.values()) == {1}
    assert len(counting.calls) == len(view)


def test_changed_messages_are_sized_afresh() -> None:
    view = ledger(50)
    counting = Counting()
    result = OPENCOLLAB.pipeline().run(view, OPENCOLLAB.budget(80_000), counting)
    assert result.fired == ("tool_output_clear",)
    cleared = [d.message_id for d in result.decisions if d.action is Action.CLEARED]
    assert len(cleared) == 45
    for mid in cleared:
        assert counting.by_id[mid] == 2  # the original and its cleared copy
    assert all(counting.by_id[m.id] == 1 for m in view if m.id not in cleared)
    assert max(counting.calls.values()) == 1


def test_a_memo_kept_across_runs_sizes_nothing_twice() -> None:
    view = ledger(30)
    counting = Counting()
    memo = TokenMemo(counting)
    pipeline = OPENCOLLAB.pipeline()
    pipeline.run(view, OPENCOLLAB.budget(1_000_000), memo)
    first = sum(counting.calls.values())
    grown = [*view, Message(id="more", role=Role.USER, blocks=(TextBlock(text="one more"),))]
    pipeline.run(grown, OPENCOLLAB.budget(1_000_000), memo)
    assert sum(counting.calls.values()) == first + 1


def test_calibrated_weights_are_used_for_unchanged_messages_only() -> None:
    """An estimator that knows a calibrated weight for each original message (as token accounting
    will) keeps it for unchanged messages; a cleared copy is sized from its new content."""
    view = ledger(30)
    weights = {id(m): 2 * EST.message(m) for m in view}

    class Calibrated:
        name = "calibrated"

        def text(self, text: str) -> int:
            return EST.text(text)

        def message(self, message: Message) -> int:
            return weights.get(id(message), EST.message(message))

    result = OPENCOLLAB.pipeline().run(view, OPENCOLLAB.budget(80_000), Calibrated())
    assert result.input_tokens == 2 * tokens(view)
    clear = result.layer("tool_output_clear")
    assert clear.fired
    for d in clear.decisions:
        if d.action is Action.CLEARED:
            new = next(m for m in clear.view if m.id == d.message_id)
            assert d.tokens_after == EST.message(new)
            assert new.tool_results[0].content == CLEARED_CONTENT
    assert result.sent_tokens == sum(weights.get(id(m), EST.message(m)) for m in result.final)


def test_two_thousand_messages_shape_fast_when_nothing_fires() -> None:
    view = ledger(1_000, size=1_000)
    assert len(view) == 2_003
    memo = TokenMemo(EST)
    pipeline = OPENCOLLAB.pipeline()
    budget = OPENCOLLAB.budget(1_000_000)
    pipeline.run(view, budget, memo)  # sizes every message once
    best: dict[str, float] = {}
    for _ in range(5):
        for layer in pipeline.layers:
            start = time.perf_counter()
            result = layer.apply(view, budget, memo)
            elapsed = time.perf_counter() - start
            assert not result.fired
            best[layer.name] = min(best.get(layer.name, 1.0), elapsed)
    assert max(best.values()) < 0.02, best


# --- explain ----------------------------------------------------------------------------------


def test_explain_cleared() -> None:
    view = ledger(50)
    result = run(view, 80_000)
    before = result.layer("tool_output_clear").tokens_before
    assert explain(result, "r41") == (
        f"cleared by tool output clear: estimate {before:,} > trigger 47,000; "
        "9th most recent compactable result (Read), only 5 kept"
    )
    assert (
        explain(result, "r49")
        == "kept by tool output clear: 1st most recent compactable result (Read), 5 kept"
    )


def test_explain_pinned_and_unchanged() -> None:
    view = ledger(10)
    result = run(view, 200_000)
    assert explain(result, "task") == "kept: pinned (task, priority 80)"
    assert explain(result, "sys") == "kept: pinned (identity, priority 100)"
    assert (
        explain(result, "r3")
        == f"unchanged: no layer fired (estimate {tokens(view):,} under trigger 167,000)"
    )
    assert explain(result, "nope") == "nope: not in this request's ledger"
    result = run(ledger(50), 80_000)
    assert explain(result, "a3") == "unchanged: tool output clear fired but left this message as it was"


def test_explain_truncated_then_cleared() -> None:
    view = ledger(50)
    view[5] = replace(view[5], blocks=(ToolResultBlock(call_id="c1", content="y" * 40_000),))
    result = run(view, 80_000)
    sentence = explain(result, "r1")
    pattern = (
        r"truncated by per-tool budget: tool result of 40,000 chars over the 16,000-char tool result budget; "
        r"[\d,]+ chars dropped, the head kept; then cleared by tool output clear: estimate [\d,]+ > trigger 47,000; "
        r"49th most recent compactable result \(Read\), only 5 kept"
    )
    assert re.fullmatch(pattern, sentence), sentence


def test_explain_removed_and_summarized() -> None:
    result = run(ledger(40), 40_000)
    removed = [d for d in result.layer("old_history_snip").decisions if d.action is Action.REMOVED]
    first = removed[0]
    sentence = explain(result, first.message_id)
    assert sentence.startswith("removed by old history snip: estimate ")
    assert "> trigger 7,000; tool exchange in group 2 of " in sentence
    assert "removed oldest first toward target 5,250" in sentence

    result = run(ledger(40, reasoning=True), 40_000)
    summary = next(m for m in result.final if m.is_summary)
    folded = explain(result, "a0")
    assert folded.startswith("summarized by auto compact: estimate ")
    assert f"into summary {summary.id} (" in folded
    assert explain(result, summary.id).startswith("summarized by auto compact: estimate ")


def test_pipeline_of_no_layers() -> None:
    view = ledger(3)
    result = Pipeline([]).run(view, Budget.for_window(None), EST)
    assert result.final == tuple(view) and result.sent_tokens == tokens(view)
    assert repr(Pipeline([])) == "Pipeline(empty)"
    assert (
        repr(OPENCOLLAB.pipeline())
        == "Pipeline(per_tool_budget -> tool_output_clear -> old_history_snip -> auto_compact)"
    )
