"""Every side-of-a-line decision a tour scenario teaches keeps a margin (inspector.samples scenarios).

The scenarios' layers fire on calibrated weights: a calibration change moves every figure by a few
tenths of a percent, and a figure that sits a few tokens from its trigger or target flips the lesson
(a layer fires one request early, or not at all). The generator's sizes (tools/samples/scripted.py)
keep each decision at least MARGIN tokens from its line, so such a change fails here, naming the
scenario, the request and the figure, before it silently rewrites a tour.

What counts as a decision, scenario by scenario:

- every request, every reactive layer (tool output clear, snip, auto compact): the estimate the
  layer sees against the trigger (under it the layer stays idle, over it the layer runs);
- budget-alone: the ledger (before the per-tool budget) against the trigger, at every request (the
  tour shows the ledger crossing it while the view does not);
- auto compact's result against the target, where it fires (it folds one stretch; nothing makes it
  land under the target but the sizes). Snip's result against the target is no decision: snip
  removes exchanges until it is at or under the target;
- clear-suffices, request 13: forced mode's clear against the target (clear alone fits);
- overflow-stop: the view at request 5 against the target (forced mode has nothing to do) and the
  forced view of the rejected call against the window (it does not fit);
- compaction-storm, the default-target run (persisted): its view against the trigger at every
  request (it compacts at 15 and 28 only). The target-at-trigger run is *about* sitting at the
  line (its target is 1 token under the trigger): only its first crossing, the one both runs share,
  is a decision here; after it, which requests cross is the storm itself, not a margin.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from inspector.findings.overflow import overflow_incidents, overflow_recovery
from inspector.replay import Replay
from inspector.replay.persisted import persisted_run
from inspector.samples import SCENARIOS
from inspector.scenarios import open_scenario
from inspector.shaping import load_policy
from inspector.shaping.auto_compact import AutoCompact
from inspector.shaping.tool_budget import PerToolResultBudget

MARGIN = 300
"""Tokens between a figure and its line (about 1.1% of the 27,000-token trigger)."""


class Decision(NamedTuple):
    scenario: str
    request: int
    what: str
    figure: int
    line: int

    @property
    def margin(self) -> int:
        return abs(self.figure - self.line)

    def __str__(self) -> str:
        side = "over" if self.figure > self.line else "at or under"
        return (
            f"{self.scenario} request {self.request}: {self.what} {self.figure:,} is {self.margin:,} "
            f"{side} {self.line:,}"
        )


def _layer_decisions(name: str, replay: Replay) -> list[Decision]:
    trigger = replay.budget.trigger
    out: list[Decision] = []
    for k in range(1, len(replay) + 1):
        result = replay.step(k).result
        for layer in result.layers:
            if layer.name == PerToolResultBudget.name:
                continue
            out.append(Decision(name, k, f"{layer.label} sees", layer.tokens_before, trigger))
        if AutoCompact.name in result.fired:
            compact = result.layer(AutoCompact.name)
            out.append(Decision(name, k, "auto compact lands at", compact.tokens_after, replay.budget.target))
    return out


def decisions(name: str, replay: Replay | None = None) -> list[Decision]:
    """The side-of-a-line decisions of scenario `name` (its registered replay unless one is given)."""
    replay = replay if replay is not None else open_scenario(name)
    b = replay.budget
    out = _layer_decisions(name, replay)
    if name == "budget-alone":
        for k in range(1, len(replay) + 1):
            out.append(Decision(name, k, "the ledger", replay.step(k).result.input_tokens, b.trigger))
    elif name == "clear-suffices":
        k = next(k for k in range(1, len(replay) + 1) if replay.step(k).result.fired) - 1
        out.append(
            Decision(
                name, k, "forced mode's clear lands at", overflow_recovery(replay, k).tokens_after, b.target
            )
        )
    elif name == "overflow-stop":
        [inc] = overflow_incidents(replay)
        k = inc.after_request or 0
        out.append(
            Decision(name, k, "the view before the paste", replay.step(k).result.sent_tokens, b.target)
        )
        out.append(
            Decision(
                name, k, "the forced view of the rejected call", inc.recovery.tokens_after, b.window or 0
            )
        )
    elif name == "compaction-storm":
        calm = persisted_run(replay.with_settings(load_policy(SCENARIOS[name].compare_policy or "")))
        hot = persisted_run(replay)
        first = hot.compactions[0]
        # the default-target run replaces the read-time figures: a persisted run starts each request
        # from the view it kept, so the read-time estimates past the first compaction are no decision
        out = [d for d in out if d.request <= first]
        out += [
            Decision(name, s.request, "the default-target run's view", s.input_tokens, calm.trigger)
            for s in calm.steps
        ]
    return out


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_decision_of_the_scenario_keeps_its_margin(name: str) -> None:
    found = decisions(name)
    assert found, f"{name}: no decision found"
    near = [str(d) for d in found if d.margin < MARGIN]
    assert not near, (
        f"{name}: {len(near)} decision(s) closer than {MARGIN} tokens to their line:\n" + "\n".join(near)
    )


def test_the_decisions_the_tours_turn_on_are_checked() -> None:
    # the requests where a layer starts to fire, and the ones just before, are among the decisions
    def at(name: str, k: int, what: str) -> list[int]:
        return [d.figure for d in decisions(name) if d.request == k and d.what == what]

    trigger = 27_000
    assert at("snip-needed", 13, "tool output clear sees")[0] < trigger - MARGIN
    assert at("snip-needed", 15, "old history snip sees")[0] < trigger - MARGIN
    assert at("snip-needed", 16, "old history snip sees")[0] > trigger + MARGIN
    assert at("snip-needed", 17, "old history snip sees")[0] > trigger + MARGIN
    assert at("compact-last-resort", 16, "old history snip sees")[0] < trigger - MARGIN
    assert at("compact-last-resort", 17, "old history snip sees")[0] > trigger + MARGIN
    assert at("compact-last-resort", 19, "auto compact sees")[0] < trigger - MARGIN
    assert at("compact-last-resort", 20, "auto compact sees")[0] > trigger + MARGIN
    assert at("clear-suffices", 14, "tool output clear sees")[0] > trigger + MARGIN
    assert at("clear-suffices", 13, "forced mode's clear lands at")[0] < 20_250 - MARGIN
    assert at("budget-alone", 9, "tool output clear sees")[0] < trigger - MARGIN
    storm = decisions("compaction-storm")
    assert {d.request for d in storm if d.what == "the default-target run's view"} == set(range(1, 33))
    assert [d.request for d in storm if d.what == "the default-target run's view" and d.figure > trigger] == [
        15,
        28,
    ]


def test_a_figure_near_its_line_is_reported_with_the_scenario_named() -> None:
    # a window of 59,550 puts the trigger at 26,550: budget-alone's view at request 9 (26,540) is
    # then 10 tokens under it, what a calibration change of a fraction of a percent would do
    replay = open_scenario("budget-alone", window=59_550)
    assert replay.budget.trigger == 26_550
    near = [str(d) for d in decisions("budget-alone", replay) if d.margin < MARGIN]
    assert "budget-alone request 9: tool output clear sees 26,540 is 10 at or under 26,550" in near
