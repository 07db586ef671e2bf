"""Each layer on hand-built ledgers: its rule, its constants, its decisions (docs/DESIGN.md §2.2)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Unpack

import pytest

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
    Action,
    AutoCompact,
    Budget,
    EagerToolOutputClear,
    ExtractiveSummarizer,
    ModelSummarizer,
    OldHistorySnip,
    PerToolResultBudget,
    RecordedSummarizer,
    TokenMemo,
    ToolOutputClear,
    canonical_tool,
    group_spans,
    is_compactable,
    pins,
    summary_header,
    unpaired,
)
from inspector.shaping.tool_budget import fitted_head, marker
from inspector.shaping.tools import DEFAULT_COMPACTABLE_TOOLS, canonical_set
from inspector.tokens import HeuristicEstimator
from tests.support.typed import MessageExtras

EST = HeuristicEstimator()
MARKER_RE = re.compile(
    r"\n\n\[truncated (\d+) chars — re-read a narrower range \(file_read with offset/limit, or grep\) to see the rest\]$"
)


class Ledger:
    """A tiny builder of realistic ledgers with unique ids."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._ids = itertools.count(1)

    def _id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids)}"

    def system(self, text: str = "You are a coding agent.") -> Message:
        return self._add(
            Message(
                id="sys",
                role=Role.SYSTEM,
                blocks=(TextBlock(text=text),),
                source=Source.of(SourceKind.IDENTITY),
            )
        )

    def user(self, text: str, source: Source | None = None, **kw: Unpack[MessageExtras]) -> Message:
        return self._add(
            Message(
                id=self._id("u"),
                role=Role.USER,
                blocks=(TextBlock(text=text),),
                source=source or Source(),
                **kw,
            )
        )

    def say(self, text: str) -> Message:
        return self._add(Message(id=self._id("a"), role=Role.ASSISTANT, blocks=(TextBlock(text=text),)))

    def exchange(
        self,
        *calls: tuple[str, str],
        text: str = "",
        reasoning: bool = False,
        style: str = "tool",
        args: dict[str, object] | None = None,
        error: bool = False,
        source: Source | None = None,
    ) -> tuple[Message, list[Message]]:
        """An assistant message calling (tool, result content) pairs, then the results."""
        blocks: list[TextBlock | ReasoningBlock | ToolCallBlock] = []
        if reasoning:
            blocks.append(ReasoningBlock(text="let me think", signed=True))
        if text:
            blocks.append(TextBlock(text=text))
        made = [
            ToolCallBlock(
                id=self._id("call"), name=tool, arguments=dict(args or {"file_path": f"src/m{k}.py"})
            )
            for k, (tool, _) in enumerate(calls)
        ]
        blocks.extend(made)
        leader = self._add(Message(id=self._id("a"), role=Role.ASSISTANT, blocks=tuple(blocks)))
        results = [
            ToolResultBlock(call_id=c.id, content=content, is_error=error)
            for c, (_, content) in zip(made, calls, strict=True)
        ]
        src = source or Source.of(SourceKind.TOOL_OUTPUT)
        if style == "claude":
            out = [self._add(Message(id=self._id("r"), role=Role.USER, blocks=tuple(results), source=src))]
        else:
            out = [
                self._add(Message(id=self._id("r"), role=Role.TOOL, blocks=(r,), source=src)) for r in results
            ]
        return leader, out

    def _add(self, m: Message) -> Message:
        self.messages.append(m)
        return m


def content_of(m: Message) -> str:
    (block,) = m.tool_results
    return block.content


def budget_between(view: Sequence[Message], **kw: int) -> Budget:
    """A budget whose trigger is just under the view's estimate (so reactive layers fire)."""
    tokens = sum(EST.message(m) for m in view)
    return Budget.for_window(tokens - 1 + 33_000, **kw)


# --- per-tool result budget -------------------------------------------------------------------


def test_per_tool_budget_truncates_a_long_result() -> None:
    big = "".join(f"{i:05d}\n" for i in range(40_000 // 6 + 1))[:40_000]
    led = Ledger()
    led.user("read it")
    _, (res,) = led.exchange(("Read", big))
    result = PerToolResultBudget().apply(led.messages, Budget.for_window(200_000), EST)

    (cut,) = [m for m in result.view if m.id == res.id]
    text = content_of(cut)
    assert len(text) <= 16_000
    match = MARKER_RE.search(text)
    assert match is not None
    head = text[: match.start()]
    assert big.startswith(head)
    assert int(match.group(1)) == 40_000 - len(head)
    assert len(head) == fitted_head(40_000, 16_000)
    assert len(head) + len(marker(40_000 - len(head))) in (15_999, 16_000)
    assert result.fired and result.truncated == 1
    (d,) = result.decisions
    assert d.action is Action.TRUNCATED and d.message_id == res.id
    assert d.tokens_before == EST.message(res) > d.tokens_after == EST.message(cut)
    assert f"{40_000:,} chars over the 16,000-char tool result budget" in d.reason
    assert f"{40_000 - len(head):,} chars dropped" in d.reason


@pytest.mark.parametrize("size", [15_999, 16_000])
def test_per_tool_budget_leaves_results_within_budget(size: int) -> None:
    led = Ledger()
    led.exchange(("Bash", "y" * size))
    src = tuple(led.messages)
    result = PerToolResultBudget().apply(src, Budget.for_window(200_000), EST)
    assert result.view is src
    assert not result.fired
    assert result.reason == "no tool result over 16,000 chars"
    assert result.decisions == ()


def test_per_tool_budget_uses_the_policy_budget_and_every_block() -> None:
    led = Ledger()
    _, (_res,) = led.exchange(
        ("Read", "a" * 30_000), ("Grep", "b" * 19_000), ("Grep", "c" * 100), style="claude"
    )
    result = PerToolResultBudget().apply(
        led.messages, Budget.for_window(200_000, tool_result_budget=20_000), EST
    )
    cut = result.view[-1]
    lengths = [len(b.content) for b in cut.tool_results]
    assert lengths[0] <= 20_000 and MARKER_RE.search(cut.tool_results[0].content)
    assert lengths[1:] == [19_000, 100]
    again = PerToolResultBudget().apply(
        result.view, Budget.for_window(200_000, tool_result_budget=20_000), EST
    )
    assert again.view == result.view and not again.fired


def test_per_tool_budget_handles_wide_text_and_never_grows_the_estimate() -> None:
    led = Ledger()
    _, (_res,) = led.exchange(("Read", "数" * 16_001))
    result = PerToolResultBudget().apply(led.messages, Budget.for_window(200_000), EST)
    assert len(content_of(result.view[-1])) <= 16_000
    assert result.tokens_after < result.tokens_before


def test_per_tool_budget_edge_never_raises_the_estimate() -> None:
    """Rounding at the edge (one char over) could cost a token more; the head is cut further then."""
    for size in range(16_001, 16_010):
        for prefix in ("", "x", "xy"):
            led = Ledger()
            led.exchange(("Read", prefix + "z" * (size - len(prefix))))
            r = PerToolResultBudget().apply(led.messages, Budget.for_window(200_000), EST)
            assert r.tokens_after <= r.tokens_before
            assert len(content_of(r.view[-1])) <= 16_000


def test_per_tool_budget_never_changes_pinned_output() -> None:
    led = Ledger()
    led.exchange(("Skill", "s" * 30_000), source=Source.of(SourceKind.SKILL))
    result = PerToolResultBudget().apply(led.messages, Budget.for_window(200_000), EST)
    assert result.view == tuple(led.messages) and not result.fired


# --- tool names -------------------------------------------------------------------------------


def test_alias_table_maps_harness_names() -> None:
    assert canonical_tool("Read") == canonical_tool("read_file") == canonical_tool("file-read") == "file_read"
    assert canonical_tool("Bash") == canonical_tool("shell") == canonical_tool("exec_command") == "bash"
    assert canonical_tool("LS") == "list"
    assert canonical_tool("WebFetch") == "web_fetch"
    assert canonical_tool("MultiEdit") == "edit"
    assert canonical_tool("My-Tool") == canonical_tool("my_tool")
    compactable = canonical_set(DEFAULT_COMPACTABLE_TOOLS)
    for name in (
        "Read",
        "Bash",
        "Grep",
        "Glob",
        "LS",
        "WebFetch",
        "WebSearch",
        "file_read",
        "git_diff",
        "run_tests",
    ):
        assert is_compactable(name, compactable), name
    for other in ("Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch", "Task", "TodoWrite", None):
        assert not is_compactable(other, compactable), other


# --- tool output clear ------------------------------------------------------------------------


def clear_ledger(n_reads: int = 14) -> tuple[Ledger, list[Message], list[Message]]:
    led = Ledger()
    led.system()
    led.user("fix the bug", source=Source.of(SourceKind.TASK))
    reads: list[Message] = []
    edits: list[Message] = []
    for k in range(n_reads):
        tool = ("Read", "Grep", "Bash", "Glob", "file_read", "WebFetch")[k % 6]
        _, (res,) = led.exchange((tool, f"output {k} " + "r" * 8_000))
        reads.append(res)
        if k % 4 == 0:
            _, (ed,) = led.exchange(("Edit", f"edited {k} " + "e" * 8_000))
            edits.append(ed)
    led.user("and now?")
    return led, reads, edits


def test_tool_output_clear_below_trigger_changes_nothing() -> None:
    led, _, _ = clear_ledger()
    src = tuple(led.messages)
    tokens = sum(EST.message(m) for m in src)
    result = ToolOutputClear().apply(src, Budget.for_window(200_000), EST)
    assert result.view is src
    assert not result.fired
    assert result.reason == f"{tokens:,} under trigger 167,000"


def test_tool_output_clear_above_trigger() -> None:
    led, reads, edits = clear_ledger()
    budget = budget_between(led.messages)
    result = ToolOutputClear().apply(led.messages, budget, EST)
    out = {m.id: m for m in result.view}

    assert [m.id for m in result.view] == [m.id for m in led.messages]
    for res in reads[-5:]:
        assert out[res.id] == res
    for res in reads[:-5]:
        assert content_of(out[res.id]) == CLEARED_CONTENT
        assert out[res.id].tool_results[0].call_id == res.tool_results[0].call_id
    for ed in edits:
        assert out[ed.id] == ed
    assert not unpaired(result.view)
    assert result.cleared == 9
    assert result.tokens_after < result.tokens_before
    cleared = {d.message_id: d for d in result.decisions if d.action is Action.CLEARED}
    assert set(cleared) == {r.id for r in reads[:-5]}
    oldest = cleared[reads[0].id]
    assert oldest.reason == (
        f"estimate {result.tokens_before:,} > trigger {budget.trigger:,}; "
        "14th most recent compactable result (Read), only 5 kept"
    )
    assert "9th most recent compactable result (WebFetch), only 5 kept" in cleared[reads[5].id].reason
    kept = [d for d in result.decisions if d.action is Action.KEPT_RECENT]
    assert {d.message_id for d in kept} == {r.id for r in reads[-5:]}


def test_tool_output_clear_on_a_growing_ledger_looks_at_what_is_new(monkeypatch: pytest.MonkeyPatch) -> None:
    """Request after request (one memo, the ledger growing by an exchange), the layer goes on from
    the request before: it looks at each result once, as it grows old, not at every request it
    stays old at; and every request's view is the one a fresh layer makes."""
    import inspector.shaping.tool_output_clear as toc

    made: list[int] = []
    real = toc.replace_results

    def counted(view, targets, content_for, made_before=None):  # type: ignore[no-untyped-def]
        targets = list(targets)
        made.append(len(targets))
        return real(view, targets, content_for, made_before)

    monkeypatch.setattr(toc, "replace_results", counted)
    led = Ledger()
    led.system()
    led.user("Fix the failing test")
    for k in range(60):
        led.exchange(("Read", f"line {k}\n" * 400))
    memo = TokenMemo(EST)
    layer = ToolOutputClear()
    budget = Budget.for_window(36_000)  # every request from the 8th on is over the trigger
    fired = 0
    for n in range(4, len(led.messages) + 1, 2):
        view = tuple(led.messages[:n])
        got = layer.apply(view, budget, memo)
        fired += got.fired
        if n % 20 == 0:
            with monkeypatch.context() as m:
                m.setattr(toc, "replace_results", real)
                want = ToolOutputClear().apply(view, budget, TokenMemo(EST))
            assert (got.view, got.tokens_after, got.reason) == (want.view, want.tokens_after, want.reason)
    assert fired > 40
    # each result that grew old looked at once (60 reads, `results_kept` of them still recent),
    # where a layer starting afresh looks at every old result at every request (1,711 here)
    assert sum(made) == 60 - budget.results_kept


def test_tool_output_clear_keeps_fewer_in_small_windows() -> None:
    led, reads, _ = clear_ledger(6)
    budget = Budget.for_window(35_500)
    assert budget.results_kept == 2
    result = ToolOutputClear().apply(led.messages, budget, EST)
    out = {m.id: m for m in result.view}
    assert [content_of(out[r.id]) == CLEARED_CONTENT for r in reads] == [True] * 4 + [False] * 2


def test_tool_output_clear_claude_style_results_and_short_results() -> None:
    led = Ledger()
    led.user("go")
    _, (multi,) = led.exchange(("Read", "r" * 5_000), ("Edit", "e" * 5_000), ("Grep", "ok"), style="claude")
    for k in range(5):
        led.exchange(("Bash", f"recent {k} " + "b" * 2_000))
    result = ToolOutputClear().apply(led.messages, budget_between(led.messages), EST)
    out = next(m for m in result.view if m.id == multi.id)
    assert [b.content[:20] for b in out.tool_results] == [CLEARED_CONTENT[:20], "e" * 20, "ok"]
    (d,) = [d for d in result.decisions if d.message_id == multi.id]
    assert "7th most recent compactable result (Read)" in d.reason


def test_tool_output_clear_resolves_tool_names_and_leaves_pinned_alone() -> None:
    led = Ledger()
    led.user("go")
    _, (pinned,) = led.exchange(("Read", "p" * 4_000), source=Source.of(SourceKind.SKILL))
    _, (old,) = led.exchange(("Read", "o" * 4_000))
    for k in range(5):
        led.exchange(("Grep", f"recent {k} " + "g" * 2_000))
    result = ToolOutputClear().apply(led.messages, budget_between(led.messages), EST)
    out = {m.id: m for m in result.view}
    assert out[pinned.id] == pinned
    assert content_of(out[old.id]) == CLEARED_CONTENT
    kept_pinned = [d for d in result.decisions if d.action is Action.KEPT_PINNED]
    assert [d.message_id for d in kept_pinned] == [pinned.id]
    assert kept_pinned[0].reason == "pinned (skill, priority 85)"


def test_tool_output_clear_is_idempotent_and_skips_cleared() -> None:
    led, _, _ = clear_ledger()
    budget = budget_between(led.messages)
    first = ToolOutputClear().apply(led.messages, budget, EST)
    second = ToolOutputClear(DEFAULT_COMPACTABLE_TOOLS).apply(first.view, budget, EST, forced=True)
    assert second.view == first.view and not second.fired


def test_tool_output_clear_compactable_set_is_a_parameter() -> None:
    led, reads, _ = clear_ledger()
    # "Read" stands for file_read: it matches the 3 Read and the 2 file_read calls, 5 in all.
    result = ToolOutputClear(["Read"]).apply(led.messages, budget_between(led.messages), EST)
    assert not result.fired
    assert result.reason.endswith("but only 5 compactable results, 5 kept")
    result = ToolOutputClear(["file_read"]).apply(
        led.messages, budget_between(led.messages, results_kept=1), EST
    )
    cleared = {d.message_id for d in result.decisions if d.action is Action.CLEARED}
    file_reads = [r.id for k, r in enumerate(reads) if k % 6 in (0, 4)]
    assert len(file_reads) == 5
    assert cleared == set(file_reads[:-1])


# --- old history snip -------------------------------------------------------------------------


def snip_ledger() -> tuple[Ledger, dict[str, Message]]:
    led = Ledger()
    named: dict[str, Message] = {}
    named["sys"] = led.system("s" * 3_000)
    named["task"] = led.user("fix the bug", source=Source.of(SourceKind.TASK))
    led.exchange(("Read", "a" * 6_000))
    named["user1"] = led.user("look at the tests too")
    named["reasoning"], (named["reasoning_res"],) = led.exchange(("Bash", "b" * 6_000), reasoning=True)
    named["texty"], (named["texty_res"],) = led.exchange(
        ("Grep", "c" * 6_000), text="Searching for the handler."
    )
    led.exchange(("Edit", "d" * 6_000))
    named["pinned_lead"], (named["pinned_res"],) = led.exchange(
        ("Skill", "k" * 6_000), source=Source.of(SourceKind.SKILL)
    )
    led.say("Now I understand the layout.")
    for k in range(6):
        led.exchange(("Read", f"{k}" * 6_000))
    named["last_user"] = led.user("ship it")
    return led, named


def test_snip_below_trigger_changes_nothing() -> None:
    led, _ = snip_ledger()
    src = tuple(led.messages)
    result = OldHistorySnip().apply(src, Budget.for_window(200_000), EST)
    assert result.view is src and not result.fired
    assert "under trigger 167,000" in result.reason


def test_snip_removes_oldest_exchanges_until_under_target() -> None:
    led, named = snip_ledger()
    src = tuple(led.messages)
    total = sum(EST.message(m) for m in src)
    budget = Budget.for_window(total - 1 + 33_000)
    groups = group_spans(src)
    result = OldHistorySnip().apply(src, budget, EST)
    kept = {m.id for m in result.view}

    assert budget.groups_kept == 4
    assert result.fired
    assert result.tokens_after <= budget.target
    assert not unpaired(result.view)
    # Never group 0, never the last 4 groups, never a user turn, never pinned.
    assert result.view[0] == src[0]
    for g in groups[-4:]:
        for m in g.messages(src):
            assert m.id in kept
    for m in src:
        if m.role is Role.USER and not m.is_tool_result:
            assert m.id in kept
    assert named["pinned_lead"].id in kept and named["pinned_res"].id in kept
    # The reasoning-only leader is skipped with its results.
    assert named["reasoning"].id in kept and named["reasoning_res"].id in kept
    # The text-and-calls leader keeps its text; its calls and results are gone.
    texty = next(m for m in result.view if m.id == named["texty"].id)
    assert texty.text == "Searching for the handler." and not texty.tool_calls
    assert texty.has_reasoning is False
    assert named["texty_res"].id not in kept
    # It stops as soon as the target is reached: putting back the last removed group overshoots.
    removed = [d for d in result.decisions if d.action is Action.REMOVED]
    assert removed and all(d.tokens_after == 0 for d in removed)
    last = removed[-1]
    assert result.tokens_after + last.tokens_before > budget.target
    assert result.removed == len(removed)
    assert "kept" in next(d.reason for d in result.decisions if d.message_id == named["texty"].id)


def test_snip_without_decisions_gives_the_same_view_and_figures_and_reuses_its_copies() -> None:
    led, named = snip_ledger()
    src = tuple(led.messages)
    total = sum(EST.message(m) for m in src)
    budget = Budget.for_window(total - 1 + 33_000)
    snip = OldHistorySnip()
    told = snip.apply(src, budget, EST)
    quiet = snip.apply(src, budget, EST, explain=False)
    assert told.fired and quiet.fired and told.decisions and quiet.decisions == ()
    assert quiet.view == told.view and quiet.reason == told.reason
    assert (quiet.tokens_before, quiet.tokens_after, quiet.removed, quiet.truncated) == (
        told.tokens_before,
        told.tokens_after,
        told.removed,
        told.truncated,
    )
    # the text-and-calls leader's copy is made once: the next request's view holds the same object
    again = snip.apply((*src, led.user("one more")), budget, EST)
    texty = next(m for m in told.view if m.id == named["texty"].id)
    assert texty is not named["texty"] and not texty.tool_calls
    assert next(m for m in again.view if m.id == named["texty"].id) is texty
    assert next(m for m in OldHistorySnip().apply(src, budget, EST).view if m.id == texty.id) == texty


def test_snip_walks_oldest_first() -> None:
    led = Ledger()
    led.system()
    first, _ = led.exchange(("Read", "1" * 9_000))
    second, _ = led.exchange(("Read", "2" * 9_000))
    for k in range(4):
        led.exchange(("Read", f"{k}" * 600))
    src = tuple(led.messages)
    total = sum(EST.message(m) for m in src)
    # Trigger just below the total, target a little below that: one group is enough.
    budget = Budget.for_window(total - 1 + 33_000, target_ratio=0.9)
    result = OldHistorySnip().apply(src, budget, EST)
    kept = {m.id for m in result.view}
    assert first.id not in kept and second.id in kept
    assert result.reason.startswith(
        f"estimate {total:,} > trigger {budget.trigger:,}; removed 1 tool exchange"
    )


def test_snip_keeps_fewer_groups_in_small_windows_and_reports_when_stuck() -> None:
    led = Ledger()
    led.system()
    led.user("q1")
    led.say("a1")
    led.user("q2")
    led.exchange(("Read", "x" * 9_000), reasoning=True)
    led.say("done")
    result = OldHistorySnip().apply(led.messages, budget_between(led.messages), EST)
    assert not result.fired
    assert budget_between(led.messages).groups_kept == 2
    assert result.reason.endswith("but no removable tool exchange outside group 0 and the last 2 groups")


def test_snip_forced_stops_at_target() -> None:
    led, _ = snip_ledger()
    result = OldHistorySnip().apply(led.messages, Budget.for_window(200_000), EST, forced=True)
    assert not result.fired
    assert result.reason.startswith("forced (overflow recovery), estimate ")
    assert result.reason.endswith("already at or under target 125,250")
    total = sum(EST.message(m) for m in led.messages)
    budget = Budget.for_window(total + 40_000)  # trigger above the estimate, target below it
    forced = OldHistorySnip().apply(led.messages, budget, EST, forced=True)
    assert forced.fired and forced.tokens_after <= budget.target
    assert not OldHistorySnip().apply(led.messages, budget, EST).fired


# --- auto compact -----------------------------------------------------------------------------


def compact_ledger(pinned_middle: bool = True) -> tuple[Ledger, dict[str, Message]]:
    led = Ledger()
    named: dict[str, Message] = {}
    named["sys"] = led.system()
    named["task"] = led.user("fix the bug", source=Source.of(SourceKind.TASK))
    for k in range(6):
        led.user(f"step {k}: look further")
        led.exchange(("Read", f"{k}" * 3_000), reasoning=True)
    if pinned_middle:
        named["memory"] = led.user(
            "CLAUDE.md: run the tests with -q",
            source=Source.of(SourceKind.PROJECT_INSTRUCTIONS),
            is_meta=True,
        )
    for k in range(3):
        led.user(f"later {k}")
        led.exchange(("Bash", f"{k}" * 3_000), reasoning=True)
    for k in range(4):
        led.exchange(("Read", f"recent {k}" + "z" * 200))
    return led, named


def test_auto_compact_folds_the_longest_pinned_free_stretch() -> None:
    led, named = compact_ledger()
    src = tuple(led.messages)
    layer = AutoCompact(ExtractiveSummarizer())
    budget = budget_between(src)
    result = layer.apply(src, budget, EST)

    assert result.fired
    summaries = [m for m in result.view if m.is_summary]
    assert len(summaries) >= 1
    first = summaries[0]
    assert first.role is Role.USER and first.source.kind is SourceKind.SUMMARY and not first.pinned
    # The longest stretch: from the first "step" user turn to the exchange before the memory message.
    memory_at = src.index(named["memory"])
    assert first.text.startswith(summary_header(memory_at - 2) + "\n\n")
    assert "[1] step 0: look further" in first.text
    # Pinned never folded; group 0 and the last 4 groups kept.
    assert named["memory"] in result.view and named["task"] in result.view and result.view[0] == src[0]
    tail = group_spans(src)[-budget.groups_kept].start
    assert result.view[-(len(src) - tail) :] == src[tail:]
    assert not unpaired(result.view)
    assert result.tokens_after < result.tokens_before
    folded = [d for d in result.decisions if d.action is Action.SUMMARIZED and d.message_id != first.id]
    assert result.summarized == len(folded) >= memory_at - 2
    kept_pinned = [d for d in result.decisions if d.action is Action.KEPT_PINNED]
    assert [d.message_id for d in kept_pinned] == [named["task"].id, named["memory"].id]


def test_auto_compact_never_folds_pinned_messages_in_the_region() -> None:
    led = Ledger()
    led.system()
    pinned = []
    for k in range(8):
        led.user(f"q{k}")
        led.exchange(("Read", "x" * 4_000))
        pinned.append(led.user(f"skill {k}", source=Source.of(SourceKind.SKILL), is_meta=True))
    for k in range(4):
        led.say(f"tail {k}")
    result = AutoCompact(ExtractiveSummarizer()).apply(
        led.messages, budget_between(led.messages), EST, forced=True
    )
    assert result.fired
    for p in pinned:
        assert p in result.view
    for m in result.view:
        if m.is_summary:
            assert "skill" not in m.text


def test_auto_compact_kept_only_if_smaller() -> None:
    class Bloated:
        name = "bloated"

        def summarize(self, messages: Sequence[Message]) -> str:
            return "word " * 50_000

    led, _ = compact_ledger()
    src = tuple(led.messages)
    result = AutoCompact(Bloated()).apply(src, budget_between(src), EST)
    assert result.view is src and not result.fired
    assert "no summary would lower the estimate" in result.reason


def test_auto_compact_off_without_summarizer() -> None:
    led, _ = compact_ledger()
    result = AutoCompact().apply(led.messages, budget_between(led.messages), EST)
    assert not result.fired and result.reason == "off: no summarizer configured"


def test_auto_compact_below_trigger_changes_nothing() -> None:
    led, _ = compact_ledger()
    src = tuple(led.messages)
    layer = AutoCompact(ExtractiveSummarizer())
    result = layer.apply(src, Budget.for_window(200_000), EST)
    assert result.view is src and not result.fired
    assert layer.cache.hits == layer.cache.misses == 0


def test_auto_compact_summary_cache() -> None:
    class Counting(ExtractiveSummarizer):
        calls = 0

        def summarize(self, messages: Sequence[Message]) -> str:
            Counting.calls += 1
            return super().summarize(messages)

    led, _ = compact_ledger(pinned_middle=True)
    layer = AutoCompact(Counting())
    budget = budget_between(led.messages)
    first = layer.apply(led.messages, budget, EST)
    misses = layer.cache.misses
    assert first.fired and misses >= 1 and layer.cache.hits == 0
    assert Counting.calls == misses

    # The same ledger again: every summary comes from the cache.
    again = layer.apply(led.messages, budget, EST)
    assert again.view == first.view
    assert layer.cache.hits == misses and layer.cache.misses == misses
    assert Counting.calls == misses

    # The ledger grew at the end: the folded prefix is unchanged and hits the cache.
    led.user("one more thing")
    led.exchange(("Read", "new" * 100))
    grown = layer.apply(led.messages, budget, EST)
    assert grown.fired
    assert layer.cache.hits > misses
    assert Counting.calls == layer.cache.misses


def test_summary_cache_is_an_lru_of_eight() -> None:
    layer = AutoCompact(ExtractiveSummarizer())
    msgs = [Message(id=f"m{k}", role=Role.USER, blocks=(TextBlock(text=f"q{k}"),)) for k in range(10)]
    keys = [layer.summary_for([m])[0] for m in msgs]
    assert len(layer.cache) == 8 and layer.cache.misses == 10
    assert keys[0] not in layer.cache and keys[9] in layer.cache
    layer.summary_for([msgs[2]])
    assert layer.cache.hits == 1
    layer.summary_for([msgs[0]])  # evicts the least recently used (m3, since m2 was just used)
    assert keys[2] in layer.cache and keys[3] not in layer.cache


def test_auto_compact_forced_under_trigger() -> None:
    led, _ = compact_ledger()
    total = sum(EST.message(m) for m in led.messages)
    budget = Budget.for_window(total + 34_000)
    assert budget.target < total <= budget.trigger
    layer = AutoCompact(ExtractiveSummarizer())
    assert not layer.apply(led.messages, budget, EST).fired
    forced = layer.apply(led.messages, budget, EST, forced=True)
    assert forced.fired and forced.forced
    assert forced.reason.startswith(f"forced (overflow recovery), estimate {total:,}; folded ")


# --- summarizers ------------------------------------------------------------------------------


def test_extractive_summary_digest() -> None:
    led = Ledger()
    led.user("Please fix the parser.\nIt crashes on empty input.")
    led.exchange(("Read", "def parse(): ..."), args={"file_path": "src/parser.py"})
    led.exchange(
        ("Bash", "Traceback (most recent call last):\nValueError: empty"),
        args={"command": "pytest -q"},
        error=True,
    )
    led.exchange(("Edit", "ok"), args={"file_path": "src/parser.py", "old_string": "a", "new_string": "b"})
    led.user("also the docs")
    led.say("Fixed the empty-input case.")
    led.say("Tests pass now.")
    text = ExtractiveSummarizer().summarize(led.messages)
    assert text == ExtractiveSummarizer().summarize(led.messages)
    assert "[1] Please fix the parser.\nIt crashes on empty input." in text
    assert "[2] also the docs" in text
    assert "Files touched:\n- src/parser.py\n" in text
    assert "Commands run:\n- pytest -q" in text
    assert "Errors:\n- Bash: Traceback (most recent call last):" in text
    assert "Tool calls: 3 (Bash 1, Edit 1, Read 1)" in text
    assert text.endswith("Last assistant text:\nTests pass now.")


def test_recorded_summarizer_uses_the_harness_summary() -> None:
    led = Ledger()
    a = led.user("first question")
    led.say("first answer")
    recorded = led.user("This session is being continued: the user asked a first question.", is_summary=True)
    later = led.user("second question")
    led.say("second answer")
    summarizer = RecordedSummarizer(led.messages)
    assert summarizer.summarize([a, led.messages[1]]) == recorded.text
    assert summarizer.last_call_recorded
    fallback = summarizer.summarize([later, led.messages[-1]])
    assert not summarizer.last_call_recorded
    assert fallback == ExtractiveSummarizer().summarize([later, led.messages[-1]])


def test_model_summarizer_hook() -> None:
    seen: list[tuple[int, str]] = []

    def call(messages: Sequence[Message], prompt: str) -> str:
        seen.append((len(messages), prompt))
        return "  The user wants the parser fixed.  "

    led = Ledger()
    led.user("fix the parser")
    led.say("on it")
    summarizer = ModelSummarizer(call)
    assert summarizer.summarize(led.messages) == "The user wants the parser fixed."
    assert seen[0][0] == 2 and "every user message, verbatim" in seen[0][1]
    assert summarizer.last_call_cacheable


def test_model_summarizer_failure_falls_back_uncached() -> None:
    def broken(messages: Sequence[Message], prompt: str) -> str:
        raise TimeoutError("no answer")

    led, _ = compact_ledger()
    summarizer = ModelSummarizer(broken)
    layer = AutoCompact(summarizer)
    result = layer.apply(led.messages, budget_between(led.messages), EST)
    assert result.fired
    assert summarizer.last_error == "TimeoutError: no answer"
    assert len(layer.cache) == 0


# --- eager clear ------------------------------------------------------------------------------


def test_eager_clear_stubs_old_results_at_any_pressure() -> None:
    led = Ledger()
    led.user("go")
    _first, (res,) = led.exchange(
        ("Read", "r" * 2_000), args={"file_path": "src/a.py", "offset": 10, "limit": 20}
    )
    _, (grep,) = led.exchange(("Grep", "g" * 2_000), args={"pattern": "def main"})
    for k in range(12):
        led.exchange(("Bash", f"{k}" * 2_000), args={"command": f"echo {k}"})
    layer = EagerToolOutputClear()
    result = layer.apply(led.messages, Budget.for_window(1_000_000), EST)
    out = {m.id: m for m in result.view}
    assert content_of(out[res.id]).startswith(
        "[Old tool result cleared: Read src/a.py lines 10-29] — you already ran this"
    )
    assert content_of(out[grep.id]).startswith("[Old tool result cleared: Grep def main]")
    assert result.cleared == 2 and not unpaired(result.view)
    assert layer.apply(result.view, Budget.for_window(1_000_000), EST).view == result.view


# --- groups and pins --------------------------------------------------------------------------


def test_groups_pairing_and_pins() -> None:
    led = Ledger()
    led.system()
    led.user("task", source=Source.of(SourceKind.TASK))
    leader, results = led.exchange(("Read", "1"), ("Grep", "2"))
    led.exchange(("Read", "3"), ("Bash", "4"), style="claude")
    led.say("text")
    groups = group_spans(led.messages)
    assert [(g.start, g.end, g.exchange, g.complete) for g in groups] == [
        (0, 1, False, True),
        (1, 2, False, True),
        (2, 5, True, True),
        (5, 7, True, True),
        (7, 8, False, True),
    ]
    assert [g.pinned for g in groups] == [True, True, False, False, False]
    assert [m.id for m in pins(led.messages)] == ["sys", led.messages[1].id]
    assert not unpaired(led.messages)

    broken = [m for m in led.messages if m.id != results[1].id]
    missing = unpaired(broken)
    assert missing.calls == (leader.tool_calls[1].id,) and missing.results == ()
    assert not group_spans(broken)[2].complete
    orphan = unpaired([m for m in led.messages if m.id != leader.id])
    assert orphan.results == tuple(b.call_id for r in results for b in r.tool_results)
    assert bool(orphan)
