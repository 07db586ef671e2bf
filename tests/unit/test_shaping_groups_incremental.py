"""`group_spans` splits only what a view does not share with one split before (issue 29: a replay
shapes every request's whole ledger, and the opencollab policy's snip split each one again), and
its groups are always those of a split from scratch."""

from __future__ import annotations

import random

import pytest
from msgspec import structs

from inspector.model import Message, Role, Source, SourceKind, TextBlock, ToolCallBlock, ToolResultBlock
from inspector.shaping import groups as groups_mod
from inspector.shaping.groups import group_spans
from inspector.shaping.pinning import FLOOR, Pins


def scratch(view: list[Message]) -> list[groups_mod.Group]:
    return groups_mod._spans(tuple(view), 0, [])


def conversation(rng: random.Random, n: int, tag: str) -> list[Message]:
    out: list[Message] = []
    while len(out) < n:
        k = len(out)
        roll = rng.random()
        if roll < 0.4:
            calls = [f"{tag}-c{k}-{j}" for j in range(rng.randint(1, 3))]
            out.append(
                Message(
                    id=f"{tag}-a{k}",
                    role=Role.ASSISTANT,
                    blocks=tuple(ToolCallBlock(id=c, name="Read", arguments={}) for c in calls),
                )
            )
            answered = calls if rng.random() < 0.8 else calls[:-1]  # now and then one is left open
            for j, c in enumerate(answered):
                out.append(
                    Message(
                        id=f"{tag}-r{k}-{j}",
                        role=Role.USER,
                        blocks=(ToolResultBlock(call_id=c, content="x"),),
                    )
                )
        elif roll < 0.5:  # a result whose call is not in the view
            out.append(
                Message(
                    id=f"{tag}-o{k}", role=Role.USER, blocks=(ToolResultBlock(call_id="gone", content="y"),)
                )
            )
        else:
            role = Role.USER if roll < 0.75 else Role.ASSISTANT
            out.append(Message(id=f"{tag}-t{k}", role=role, blocks=(TextBlock(text="words"),)))
    return out


@pytest.fixture(autouse=True)
def _empty_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(groups_mod, "_memo", ())


def test_growing_views_split_only_their_new_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = conversation(random.Random(3), 600, "g")
    starts: list[int] = []
    real = groups_mod._spans

    def spy(
        view: tuple[Message, ...], i: int, groups: list[groups_mod.Group], pins: Pins = FLOOR
    ) -> list[groups_mod.Group]:
        starts.append(i)
        return real(view, i, groups, pins)

    monkeypatch.setattr(groups_mod, "_spans", spy)
    for n in range(10, 601, 10):  # each request's ledger: the one before and ten messages more
        assert group_spans(ledger[:n]) == real(tuple(ledger[:n]), 0, [])
        _, _, kept = groups_mod._memo[0]  # the groups remembered: those of the view, in order
        assert kept == real(tuple(ledger[:n]), 0, []) and len(kept) > n // 4
    # after the first, each split began within the last ten messages of the view before (at the
    # start of its last group that ended before them), never at the front
    assert starts[0] == 0
    assert all(n - 10 - 4 <= s <= n - 10 for s, n in zip(starts[1:], range(20, 601, 10), strict=True)), starts


def test_any_view_gets_the_groups_of_a_split_from_scratch() -> None:
    rng = random.Random(11)
    base = conversation(rng, 300, "b")
    other = conversation(rng, 300, "o")
    for _ in range(300):
        view = list(base[: rng.randint(0, len(base))])
        roll = rng.random()
        if roll < 0.3 and view:  # a message changed in the middle (a layer cleared or dropped it)
            at = rng.randrange(len(view))
            if rng.random() < 0.5:
                del view[at]
            else:
                view[at] = Message(id=view[at].id, role=view[at].role, blocks=(TextBlock(text="[cleared]"),))
        elif roll < 0.5:  # another session's messages after a shared front
            view = view + other[: rng.randint(0, 40)]
        elif roll < 0.6:
            view = other[: rng.randint(0, 300)]
        assert group_spans(view) == scratch(view)
        assert group_spans(tuple(view)) == scratch(view)  # a tuple and a list alike


def test_equal_messages_that_are_other_objects_share_the_front() -> None:
    ledger = conversation(random.Random(5), 200, "e")
    group_spans(ledger)
    copies = [Message(id=m.id, role=m.role, blocks=m.blocks) for m in ledger[:150]]
    assert groups_mod._common_prefix(tuple(ledger), tuple(copies)) == 150
    assert group_spans(copies + ledger[150:]) == scratch(ledger)


def plain_split(view: list[Message], pins: Pins = FLOOR) -> list[groups_mod.Group]:
    """The split written out message by message, nothing remembered: the oracle."""
    out: list[groups_mod.Group] = []
    i, n = 0, len(view)
    while i < n:
        leader = view[i]
        calls = (
            [b for b in leader.blocks if isinstance(b, ToolCallBlock)]
            if leader.role is Role.ASSISTANT
            else []
        )
        if calls:
            ids = {c.id for c in calls}
            j = i + 1
            while (
                j < n
                and view[j].role is not Role.ASSISTANT
                and any(isinstance(b, ToolResultBlock) and b.call_id in ids for b in view[j].blocks)
            ):
                j += 1
            answered = [
                b.call_id for m in view[i + 1 : j] for b in m.blocks if isinstance(b, ToolResultBlock)
            ]
            complete = (
                all(m.is_tool_result for m in view[i + 1 : j])
                and len(ids) == len(calls) == len(answered)
                and set(answered) == ids
            )
        else:
            j = i + 1
            complete = not any(isinstance(b, ToolResultBlock) for b in leader.blocks)
        members = view[i:j]
        out.append(
            groups_mod.Group(
                index=len(out),
                start=i,
                end=j,
                exchange=bool(calls),
                complete=complete,
                pinned=any(pins(m) for m in members),
                summary=any(m.is_summary for m in members),
            )
        )
        i = j
    return out


def test_splits_from_remembered_facts_are_the_plain_split() -> None:
    """What `_spans` remembers of each message (per pin rule) gives the plain split's groups: with
    pinned messages and summaries among them, under two pin rules, split again and again."""
    rng = random.Random(17)
    task = Source.of(SourceKind.TASK)  # priority 80: pinned by OpenCollab's rule
    project_map = Source.of(SourceKind.PROJECT_MAP)  # priority 30: pinned by a harness that protects it
    ledger: list[Message] = []
    for m in conversation(rng, 400, "f"):
        roll = rng.random()
        if roll < 0.05:
            m = structs.replace(m, source=task)
        elif roll < 0.1:
            m = structs.replace(m, source=project_map)
        elif roll < 0.13:
            m = structs.replace(m, is_summary=True)
        ledger.append(m)
    harness = Pins.protecting([SourceKind.PROJECT_MAP])
    groups_mod._facts.clear()
    for _ in range(3):  # (the first time from the messages, then from what was remembered)
        for pins in (FLOOR, harness):
            for n in (0, 1, 57, 200, 400):
                assert groups_mod._spans(tuple(ledger[:n]), 0, [], pins) == plain_split(ledger[:n], pins)
    assert set(groups_mod._facts) == {FLOOR, harness}
    floor_pinned = {g.start for g in groups_mod._spans(tuple(ledger), 0, [], FLOOR) if g.pinned}
    harness_pinned = {g.start for g in groups_mod._spans(tuple(ledger), 0, [], harness) if g.pinned}
    assert floor_pinned and harness_pinned and floor_pinned != harness_pinned


def test_a_small_split_of_remembered_messages() -> None:
    call = Message(
        id="a",
        role=Role.ASSISTANT,
        blocks=(ToolCallBlock(id="c1", name="Read"), ToolCallBlock(id="c2", name="Read")),
    )
    r1 = Message(id="r1", role=Role.USER, blocks=(ToolResultBlock(call_id="c1"),))
    r2 = Message(
        id="r2", role=Role.USER, blocks=(ToolResultBlock(call_id="c2"),), source=Source.of(SourceKind.TASK)
    )
    orphan = Message(id="o", role=Role.USER, blocks=(ToolResultBlock(call_id="gone"),))
    text = Message(id="t", role=Role.USER, blocks=(TextBlock(text="go on"),), is_summary=True)
    groups_mod._facts.clear()
    for _ in range(2):
        got = groups_mod._spans((text, call, r1, r2, orphan, call, r1), 0, [])
        assert [(g.start, g.end, g.exchange, g.complete, g.pinned, g.summary) for g in got] == [
            (0, 1, False, True, False, True),
            (1, 4, True, True, True, False),
            (4, 5, False, False, False, False),
            (5, 7, True, False, False, False),  # c2 has no answer in it
        ]
