"""Prompt-cache cost per policy: prefix rewrites and re-billed tokens (inspector.replay.cache)."""

from __future__ import annotations

import json

import msgspec

from inspector.model import Message, Role, Source, SourceKind, TextBlock, ToolCallBlock, ToolResultBlock
from inspector.model.transcript import Request, Segment, Transcript, Usage
from inspector.replay import Replay
from inspector.replay.cache import (
    CACHE_READ_PRICE,
    CACHE_WRITE_PRICE,
    CacheCost,
    CacheRow,
    cache_cost,
    common_prefix,
)
from inspector.samples import SCENARIOS
from inspector.scenarios import open_scenario
from inspector.shaping import load_policy, policy_from_dict
from inspector.tokens.calibration import OVERHEAD_ID


def _reads(n: int, size: int = 3_000, usage: bool = True) -> Transcript:
    """A task, then n requests each reading one file, then a final answer (n + 1 requests)."""
    msgs = [
        Message(
            id="task",
            role=Role.USER,
            blocks=(TextBlock(text="Read them all."),),
            source=Source.of(SourceKind.TASK),
        )
    ]
    requests: list[Request] = []
    for i in range(1, n + 1):
        requests.append(
            Request(
                index=i,
                response_id=f"a{i}",
                segment=0,
                ledger_len=len(msgs),
                usage=Usage(input=2_000 + 1_100 * i) if usage else None,
            )
        )
        msgs.append(
            Message(
                id=f"a{i}",
                role=Role.ASSISTANT,
                blocks=(
                    TextBlock(text=f"Reading f{i}."),
                    ToolCallBlock(id=f"c{i}", name="Read", arguments={"file_path": f"f{i}.py"}),
                ),
            )
        )
        msgs.append(
            Message(
                id=f"r{i}",
                role=Role.USER,
                blocks=(ToolResultBlock(call_id=f"c{i}", content=f"{i}" * size),),
                source=Source.of(SourceKind.TOOL_OUTPUT),
            )
        )
    requests.append(Request(index=n + 1, response_id="done", segment=0, ledger_len=len(msgs)))
    msgs.append(Message(id="done", role=Role.ASSISTANT, blocks=(TextBlock(text="Done."),)))
    return Transcript(
        format="test",
        path="reads.jsonl",
        messages=msgs,
        segments=[Segment(index=0, message_ids=tuple(m.id for m in msgs))],
        requests=requests,
    )


EAGER_2 = policy_from_dict({"name": "eager-2", "layers": ["eager_clear"], "eager_keep": 2})


def test_appending_is_never_a_rewrite() -> None:
    replay = Replay.open(_reads(5), "opencollab", 200_000)
    cost = cache_cost(replay)
    assert isinstance(cost, CacheCost)
    assert (cost.policy, cost.window, cost.rewrites, cost.rebilled_tokens) == ("opencollab", 200_000, 0, 0)
    assert [row.request for row in cost.requests] == [1, 2, 3, 4, 5, 6]
    first = cost.requests[0]
    assert (first.common_prefix_messages, first.prefix_tokens, first.rewrite) == (0, 0, False)
    # each later request reads the whole previous view from the cache
    for row, prev in zip(cost.requests[1:], cost.requests, strict=False):
        assert row.common_prefix_messages == prev.messages
        assert row.prefix_tokens == prev.sent_tokens
        assert not row.rewrite and row.rebilled_tokens == 0
    assert cost.rewrite_requests == []
    assert cost.cached_tokens == sum(row.sent_tokens for row in cost.requests[:-1])


def test_clearing_before_the_end_rewrites_and_rebills_what_follows() -> None:
    replay = Replay.open(_reads(4), EAGER_2, 200_000)
    cost = cache_cost(replay)
    # request 4 sends r1..r3: r1 is the third most recent, so it becomes a stub
    assert cost.rewrite_requests == [4, 5]
    row4 = cost.requests[3]
    step4 = replay.step(4)
    w = step4.weights
    assert [m.id for m in step4.result.final] == [OVERHEAD_ID, "task", "a1", "r1", "a2", "r2", "a3", "r3"]
    assert step4.result.final[3].blocks[0].content.startswith("[Old tool result cleared: Read f1.py")  # type: ignore[union-attr]
    assert row4.common_prefix_messages == 3
    assert row4.prefix_tokens == w[OVERHEAD_ID] + w["task"] + w["a1"]
    # a2 and r2 were cached at request 3 and come after the change: billed again; a3, r3 are new
    assert row4.rebilled_tokens == w["a2"] + w["r2"] > 0
    row5 = cost.requests[4]
    w5 = replay.step(5).weights
    assert row5.common_prefix_messages == 5
    assert row5.rebilled_tokens == w5["a3"] + w5["r3"]
    assert cost.rewrites == 2
    assert cost.rebilled_tokens == row4.rebilled_tokens + row5.rebilled_tokens
    # the same session without the eager clear: no rewrite at all
    assert cache_cost(replay.with_settings("opencollab")).rewrites == 0


def test_a_result_truncated_the_same_way_every_time_is_not_a_rewrite() -> None:
    replay = Replay.open(_reads(4, size=40_000), "opencollab", 1_000_000)
    assert "per_tool_budget" in replay.step(3).result.fired
    cost = cache_cost(replay)
    assert cost.rewrites == 0 and cost.rebilled_tokens == 0
    # the truncated result is sized as sent, not as stored
    row3 = cost.requests[2]
    assert row3.sent_tokens == replay.step(3).result.sent_tokens


def test_removing_exchanges_rewrites_the_prefix() -> None:
    replay = Replay.open(
        _reads(8, size=4_000, usage=False),
        policy_from_dict({"name": "snip", "layers": ["old_history_snip"]}),
        33_000 + 6_000,
    )
    cost = cache_cost(replay)
    snipped = [k for k in range(1, len(replay) + 1) if replay.step(k).result.fired]
    assert snipped == [6, 7, 8, 9]
    assert cost.rewrite_requests == snipped
    row6 = cost.requests[5]
    step = replay.step(6)
    # snip dropped the calls of a1-a3 (their text stays, changed) and the results r1-r3
    assert [m.id for m in step.result.final] == [
        OVERHEAD_ID,
        "task",
        "a1",
        "a2",
        "a3",
        "a4",
        "r4",
        "a5",
        "r5",
    ]
    assert row6.common_prefix_messages == 2
    # a4 and r4 were sent unchanged at request 5 and come after the change: billed again (a5, r5 are new)
    assert row6.rebilled_tokens == step.weights["a4"] + step.weights["r4"] == 1_480


def test_common_prefix_compares_id_and_content() -> None:
    a = Message(id="x", role=Role.USER, blocks=(TextBlock(text="one"),))
    same = Message(id="x", role=Role.USER, blocks=(TextBlock(text="one"),))
    changed = Message(id="x", role=Role.USER, blocks=(TextBlock(text="two"),))
    other = Message(id="y", role=Role.USER, blocks=(TextBlock(text="one"),))
    assert common_prefix([a, other], [same, other, a]) == 2
    assert common_prefix([a, other], [changed, other]) == 0
    assert common_prefix([a, other], [a, a]) == 1
    assert common_prefix([], [a]) == 0
    # the very same objects first, then an equal copy, then the same objects again
    run = [other, a, other, other]
    assert common_prefix(run, [other, same, other, other, a]) == 4
    assert common_prefix(run, [other, same, other, a]) == 3
    assert common_prefix(run, run[:2]) == 2


def test_billing_prices_cached_and_uncached_tokens() -> None:
    cost = cache_cost(Replay.open(_reads(3), "opencollab", 200_000))
    expected = (
        cost.cached_tokens * CACHE_READ_PRICE + (cost.sent_tokens - cost.cached_tokens) * CACHE_WRITE_PRICE
    )
    assert cost.billed() == expected
    assert cost.billed(read=1, write=1) == cost.sent_tokens


def test_eager_clear_scenario_costs_more_rewrites_and_rebilled_tokens() -> None:
    replay = open_scenario("eager-clear-cache")
    eager = replay.with_settings(load_policy(SCENARIOS["eager-clear-cache"].compare_policy or ""))
    base, with_eager = cache_cost(replay), cache_cost(eager)
    assert (base.policy, base.rewrites, base.rebilled_tokens) == ("opencollab", 0, 0)
    assert (with_eager.policy, with_eager.rewrites, with_eager.rebilled_tokens) == (
        "opencollab+eager",
        9,
        66_526,
    )
    assert with_eager.rewrite_requests == [14, 15, 16, 18, 19, 20, 21, 22, 23]
    first = with_eager.requests[13]
    assert (first.request, first.common_prefix_messages, first.prefix_tokens, first.rebilled_tokens) == (
        14,
        4,
        15_069,
        7_300,
    )
    # the eager clear sends fewer tokens, but far fewer of them come from the cache
    assert (base.sent_tokens, base.cached_tokens) == (522_864, 493_509)
    assert (with_eager.sent_tokens, with_eager.cached_tokens) == (490_350, 393_868)
    assert round(base.billed()) == 86_045 < round(with_eager.billed()) == 159_989


def test_cache_cost_dumps_to_json() -> None:
    cost = cache_cost(
        open_scenario("eager-clear-cache").with_settings(
            load_policy(SCENARIOS["eager-clear-cache"].compare_policy or "")
        )
    )
    data = json.loads(json.dumps(msgspec.to_builtins(cost)))
    assert set(data) == {
        "policy",
        "window",
        "requests",
        "rewrites",
        "rebilled_tokens",
        "sent_tokens",
        "cached_tokens",
    }
    assert (data["rewrites"], data["rebilled_tokens"]) == (9, 66_526)
    assert set(data["requests"][0]) == set(CacheRow.__struct_fields__)
    assert data["requests"][13] == {
        "request": 14,
        "messages": data["requests"][13]["messages"],
        "sent_tokens": data["requests"][13]["sent_tokens"],
        "common_prefix_messages": 4,
        "prefix_tokens": 15_069,
        "rebilled_tokens": 7_300,
        "rewrite": True,
    }
