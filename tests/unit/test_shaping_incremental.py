"""Layers that carry their work from one request to the next (issue 29): the history snip's plan,
auto compact's stretch keys and sums, the extractive digest. Each gives, request after request,
what a fresh layer gives on that request alone, and its work grows with what each ledger added."""

from __future__ import annotations

import itertools

import pytest
from msgspec import structs

from inspector.model import Message, Role, Source, SourceKind, TextBlock, ToolCallBlock, ToolResultBlock
from inspector.shaping import (
    AutoCompact,
    Budget,
    ExtractiveSummarizer,
    OldHistorySnip,
    PerToolResultBudget,
    TokenMemo,
)
from inspector.shaping.base import LayerResult, starts_with
from inspector.tokens import HeuristicEstimator

EST = HeuristicEstimator()


class Counting(TokenMemo):
    """A memo that counts how often a layer asks it for a message's size."""

    def __init__(self) -> None:
        super().__init__(EST)
        self.asked = 0

    def message(self, message: Message) -> int:
        self.asked += 1
        return super().message(message)


def session(turns: int) -> list[Message]:
    """A system prompt, then turns of: a user line, a tool exchange (some led by text), a reply."""
    ids = itertools.count(1)
    out = [
        Message(
            id="sys",
            role=Role.SYSTEM,
            blocks=(TextBlock(text="You are a coding agent."),),
            source=Source.of(SourceKind.IDENTITY),
        )
    ]
    for t in range(turns):
        out.append(Message(id=f"u{next(ids)}", role=Role.USER, blocks=(TextBlock(text=f"step {t}"),)))
        call = ToolCallBlock(
            id=f"c{next(ids)}", name="Bash" if t % 3 else "Read", arguments={"command": f"make t{t}"}
        )
        lead: tuple[TextBlock | ToolCallBlock, ...] = (
            (TextBlock(text=f"Looking at part {t}."), call) if t % 4 == 0 else (call,)
        )
        out.append(Message(id=f"a{next(ids)}", role=Role.ASSISTANT, blocks=lead))
        out.append(
            Message(
                id=f"r{next(ids)}",
                role=Role.USER,
                blocks=(
                    ToolResultBlock(
                        call_id=call.id, content=f"{t} " * (400 + 37 * (t % 5)), is_error=t % 7 == 0
                    ),
                ),
                source=Source.of(SourceKind.TOOL_OUTPUT),
            )
        )
        out.append(Message(id=f"a{next(ids)}", role=Role.ASSISTANT, blocks=(TextBlock(text=f"done {t}"),)))
    return out


def same(a: LayerResult, b: LayerResult) -> None:
    assert [m.id for m in a.view] == [m.id for m in b.view]
    assert a.view == b.view
    assert (a.tokens_before, a.tokens_after, a.fired, a.reason) == (
        b.tokens_before,
        b.tokens_after,
        b.fired,
        b.reason,
    )
    assert (a.removed, a.truncated, a.summarized) == (b.removed, b.truncated, b.summarized)
    assert a.decisions == b.decisions


def ledgers(messages: list[Message], first: int) -> list[tuple[Message, ...]]:
    """The ledger of each request: the first `first` messages, then one turn (4 messages) more each."""
    whole = tuple(messages)
    return [whole[:n] for n in range(first, len(whole) + 1, 4)]


def test_snip_request_after_request_is_the_snip_of_each_request_alone() -> None:
    msgs = session(160)
    budget = Budget.for_window(60_000)
    carried, memo = OldHistorySnip(), Counting()
    fired = 0
    views = ledgers(msgs, 41)
    for k, view in enumerate(views):
        if k == len(views) // 2:
            # an earlier layer changed a message well inside what the snip removes: the plan
            # goes back to it and no further
            i = 10
            view = (*view[:i], structs.replace(view[i], blocks=(TextBlock(text="step x"),)), *view[i + 1 :])
        explain = k % 5 == 0
        got = carried.apply(view, budget, memo, explain=explain)
        alone = OldHistorySnip().apply(view, budget, TokenMemo(EST), explain=explain)
        same(got, alone)
        fired += got.fired
    assert fired > len(views) // 2
    # a lower target on the last request removes more; a higher one fewer (the head goes back)
    for ratio in (0.3, 0.9, 0.5):
        b = Budget.for_window(60_000, target_ratio=ratio)
        same(carried.apply(views[-1], b, memo), OldHistorySnip().apply(views[-1], b, TokenMemo(EST)))


def test_snip_asks_for_sizes_in_proportion_to_what_each_request_added() -> None:
    msgs = session(400)
    budget = Budget.for_window(60_000)
    views = ledgers(msgs, 41)
    carried, memo = OldHistorySnip(), Counting()
    alone_asked = 0
    for view in views:
        memo.seed_view(view, sum(map(EST.message, view)))
        carried.apply(view, budget, memo, explain=False)
        fresh = Counting()
        fresh.seed_view(view, sum(map(EST.message, view)))
        OldHistorySnip().apply(view, budget, fresh, explain=False)
        alone_asked += fresh.asked
    # every request removes more of the old exchanges: weighed afresh, that is quadratic
    assert alone_asked > 40 * len(msgs)
    assert memo.asked < 3 * len(msgs)


def compact_budget() -> Budget:
    return Budget.for_window(60_000, groups_kept=4)


def test_auto_compact_request_after_request_is_its_fold_of_each_request_alone() -> None:
    msgs = session(120)
    carried, memo = AutoCompact(ExtractiveSummarizer()), Counting()
    fired = 0
    for k, view in enumerate(ledgers(msgs, 41)):
        explain = k % 4 == 0
        got = carried.apply(view, compact_budget(), memo, explain=explain)
        alone = AutoCompact(ExtractiveSummarizer()).apply(
            view, compact_budget(), TokenMemo(EST), explain=explain
        )
        same(got, alone)
        fired += got.fired
        if not explain:
            assert got.decisions == ()
    assert fired > 10


def test_auto_compact_sums_each_stretch_from_where_the_last_stopped() -> None:
    msgs = session(300)
    carried, memo = AutoCompact(ExtractiveSummarizer()), Counting()
    views = ledgers(msgs, 41)
    for view in views:
        memo.seed_view(view, sum(map(EST.message, view)))
        carried.apply(view, compact_budget(), memo, explain=False)
    # the stretch folded grows with the ledger: summed afresh, about len(msgs)² / 8 lookups
    assert memo.asked < 3 * len(msgs) + 2 * len(views)


def test_extractive_digest_goes_on_from_a_shorter_stretch_and_starts_over_on_another() -> None:
    msgs = tuple(session(30))
    carried = ExtractiveSummarizer()
    for n in (5, 9, 9, 40, 121):
        assert carried.summarize(msgs[1:n]) == ExtractiveSummarizer().summarize(msgs[1:n])
    other = (*msgs[1:20], Message(id="x", role=Role.USER, blocks=(TextBlock(text="a new line"),)))
    assert carried.summarize(other) == ExtractiveSummarizer().summarize(other)
    assert "[20] a new line" not in carried.summarize(msgs[1:40])
    assert carried.summarize(msgs[1:40]) == ExtractiveSummarizer().summarize(msgs[1:40])
    assert carried.summarize(()) == ExtractiveSummarizer().summarize(())


def long_results(turns: int) -> list[Message]:
    """`session`, with every third tool result over the per-tool budget's 16,000 characters."""
    out = session(turns)
    for i, m in enumerate(out):
        if m.tool_results and int(m.id[1:]) % 3 == 0:
            (b,) = m.tool_results
            out[i] = structs.replace(m, blocks=(structs.replace(b, content=b.content * 20),))
    return out


def test_tool_budget_request_after_request_is_its_cuts_of_each_request_alone() -> None:
    msgs = long_results(90)
    budget = Budget.for_window(200_000)
    carried, memo = PerToolResultBudget(), Counting()
    views = ledgers(msgs, 9)
    fired = 0
    for k, view in enumerate(views):
        if k == len(views) // 2:
            view = (*view[:3], structs.replace(view[3], blocks=(TextBlock(text="step x"),)), *view[4:])
        explain = k % 3 == 0
        got = carried.apply(view, budget, memo, explain=explain)
        alone = PerToolResultBudget().apply(view, budget, TokenMemo(EST), explain=explain)
        same(got, alone if explain else structs.replace(alone, decisions=()))
        assert got.tokens_after == sum(map(EST.message, got.view))
        fired += got.fired
    assert fired > len(views) // 2


def test_tool_budget_cuts_only_what_each_request_added() -> None:
    msgs = long_results(300)
    budget = Budget.for_window(200_000)
    carried, memo = PerToolResultBudget(), Counting()
    for view in ledgers(msgs, 9):
        memo.seed_view(view, sum(map(EST.message, view)))
        carried.apply(view, budget, memo, explain=False)
    # each ledger holds a third of the results cut: weighed afresh, about len(msgs)² / 24 lookups
    assert memo.asked < 2 * len(msgs)


def test_stretches_carried_are_the_stretches_of_each_view() -> None:
    import random

    from inspector.shaping.auto_compact import _Stretches, stretches
    from inspector.shaping.groups import Group

    rng = random.Random(29)

    def group(i: int, pos: int) -> Group:
        kind = rng.random()
        return Group(
            index=i,
            start=pos,
            end=pos + 2,
            exchange=True,
            complete=kind > 0.1,
            pinned=0.1 < kind < 0.15,
            summary=False,
        )

    carried = _Stretches()
    groups: list[Group] = [group(0, 0)]
    checked = longest = 0
    for step in range(400):
        cut = len(groups)
        if step % 17 == 5:
            cut = rng.randrange(1, len(groups) + 1)  # a change earlier in the view
        elif step % 29 == 7:
            cut = max(1, len(groups) - 3)
        groups = groups[:cut]
        for _ in range(rng.randrange(0, 5)):
            groups.append(group(len(groups), 2 * len(groups)))
        keep = rng.choice((2, 4, 4, 4))
        assert carried.of(groups, keep) == stretches(groups, keep)
        checked += 1
        longest = max(longest, len(groups))
    assert checked == 400 and longest > 60


class Checking(TokenMemo):
    """A memo that holds every layer to what it declares a view shares with another."""

    def __init__(self) -> None:
        super().__init__(EST)
        self.declared = 0

    def seed_shared(self, view: tuple[Message, ...], earlier: tuple[Message, ...], shared: int) -> None:
        assert shared <= min(len(view), len(earlier))
        assert view[:shared] == earlier[:shared]
        self.declared += 1
        super().seed_shared(view, earlier, shared)


@pytest.mark.parametrize("target_ratio", [None, 0.2])
def test_pipeline_request_after_request_with_one_memo_is_each_request_alone(
    target_ratio: float | None,
) -> None:
    """OpenCollab's pipeline on the growing ledger of request after request, with one memo kept
    across them as the fidelity simulation keeps it (its ledgers declared the start of one tuple):
    each layer's view and figures are those of a fresh pipeline on that request alone, and what
    the layers declare of their views (for the next layer's comparisons) holds."""
    from inspector.shaping import preset

    msgs = [
        # long replies, which no snip removes: what it leaves over the target, auto compact folds
        structs.replace(m, blocks=(TextBlock(text=f"{m.text} " * 200),)) if m.text.startswith("done") else m
        for m in session(100)
    ]
    whole = tuple(msgs)
    budget = (
        Budget.for_window(60_000)
        if target_ratio is None
        else Budget.for_window(60_000, target_ratio=target_ratio)
    )
    carried, memo = preset("opencollab").pipeline(), Checking()
    fired: set[str] = set()
    for k, n in enumerate(range(41, len(whole) + 1, 4)):
        view = whole[:n]
        if k % 9 == 4:  # now and then a ledger that is not the start of the last one
            view = (*view[:20], structs.replace(view[20], blocks=(TextBlock(text="edited"),)), *view[21:])
        else:
            memo.seed_view(view, sum(map(EST.message, view)), prefix_of=whole)
        got = carried.run(view, budget, memo, explain=False)
        alone = preset("opencollab").pipeline().run(view, budget, TokenMemo(EST), explain=False)
        for a, b in zip(got.layers, alone.layers, strict=True):
            same(a, b)
        fired.update(got.fired)
    assert {"tool_output_clear", "old_history_snip"} <= fired
    assert target_ratio is None or "auto_compact" in fired
    assert memo.declared > 50


def test_views_declared_through_different_memos_are_known_to_share_their_front() -> None:
    """A replay sizes each request with a memo of its own; the ledger of one request and that of
    the next are cut from one tuple and declared so through their own memos. A layer carrying its
    work compares them: the declaration holds across memos, so the front is known without
    comparing (at C speed, a long ledger's length at every request), and only what is past it is
    looked at."""
    whole = tuple(session(40))
    shorter, longer = whole[:50], whole[:90]
    first, second = TokenMemo(EST), TokenMemo(EST)
    first.seed_view(shorter, sum(map(EST.message, shorter)), prefix_of=whole)
    second.seed_view(longer, sum(map(EST.message, longer)), prefix_of=whole)
    assert second.known_front(shorter, longer) == 50
    assert first.known_front(longer, shorter) == 50
    # not declared: nothing is known, and the views are compared
    other = tuple(session(40))
    assert TokenMemo(EST).known_front(shorter, other[:90]) == 0
    edited = (*longer[:10], structs.replace(longer[10], blocks=(TextBlock(text="edited"),)), *longer[11:])
    assert not starts_with(edited, shorter, second)
    assert starts_with(longer, shorter, TokenMemo(EST))
