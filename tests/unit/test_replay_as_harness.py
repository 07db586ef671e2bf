"""A harness that sizes its context by itself, replayed on its own transcript: its layers decide
with its own estimate (docs/DESIGN.md §2.5), the views they make are weighed with calibrated weights,
and what it cleared only in what it sent weighs what it did when last sent whole."""

from __future__ import annotations

import json

import pytest
from msgspec.structs import replace

from inspector.formats import load
from inspector.model import Message, Role, TextBlock
from inspector.replay import Replay
from inspector.samples import OPENCOLLAB_RUN_DIR as RUN_DIR
from inspector.samples import sample_path
from inspector.shaping import Action, Budget, Decision, LayerResult, ShapeResult, TokenMemo
from inspector.shaping.pipeline import recast
from inspector.tokens import HeuristicEstimator


def test_the_opencollab_run_is_shaped_as_opencollab_shaped_it() -> None:
    transcript = load(RUN_DIR)
    replay = Replay.open(transcript)
    assert replay.policy.name == "opencollab" and replay.decides_as_harness
    clears = {e.after_request: e for e in transcript.events if e.layer == "tool_output_clear"}
    assert sorted(clears) == [23, 24, 25, 26, 27]
    for k in range(1, len(replay) + 1):
        step = replay.step(k)
        clear = step.result.layer("tool_output_clear")
        recorded = clears.get(k - 1)
        assert clear.fired == (recorded is not None), k
        assert step.reported is not None
        # what is sent weighs what the provider billed, within 2%
        assert abs(step.result.sent_tokens - step.reported) <= 0.02 * step.reported, k
        if recorded is None:
            continue
        # the estimate the layer decided with is the one OpenCollab recorded, to the token
        assert clear.reason.startswith(f"estimate {recorded.pre_tokens:,} > trigger 32,536"), k
        assert clear.cleared == len(
            {m.id for m in step.ledger for r in m.tool_results if r.call_id in recorded.cleared_tool_ids}
        )
        # the raw ledger weighs what it held whole: far more than what was sent
        assert step.result.input_tokens > 2 * step.reported


def test_the_report_and_the_app_say_the_layers_decide_as_the_harness(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from inspector.cli import main

    assert main(["report", str(RUN_DIR), "--step", "24", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["layers_decide_with"] == "heuristic"
    clear = next(layer for layer in report["layers"] if layer["name"] == "tool_output_clear")
    assert clear["fired"] and clear["cleared"] == 15 and clear["tokens_after"] < clear["tokens_before"] / 2
    long = sample_path("long-session")
    assert main(["report", str(long), "--step", "24", "--json", "--policy", "opencollab"]) == 0
    assert json.loads(capsys.readouterr().out)["layers_decide_with"] is None


def test_what_was_cleared_only_in_what_was_sent_weighs_what_it_did_whole() -> None:
    transcript = load(RUN_DIR)
    replay = Replay.open(transcript)
    first = min(e.after_request for e in transcript.events if e.layer == "tool_output_clear")
    before, after = replay.step(first), replay.step(first + 1)
    cleared = [
        m.id
        for m in before.ledger
        if any(
            r.call_id in e.cleared_tool_ids
            for r in m.tool_results
            for e in transcript.events
            if e.after_request == first and e.layer == "tool_output_clear"
        )
    ]
    assert len(cleared) == 15
    billed = replay.calibration.weights(first + 1)
    for mid in cleared:
        # the calibration weighs it as billed, cleared; the step as it stood whole
        assert after.weights[mid] == before.weights[mid] > billed[mid]


def test_other_transcripts_under_that_policy_decide_with_calibrated_weights() -> None:
    long = load(sample_path("long-session"))
    replay = Replay.open(long, "opencollab", 200_000)
    assert not replay.decides_as_harness
    assert not Replay.open(load(RUN_DIR), "claude-code").decides_as_harness


def test_the_report_says_whose_estimates_they_are(capsys: pytest.CaptureFixture[str]) -> None:
    """Each request's harness estimate is the policy's harness's: what it decided with on its own
    transcript, what it would have estimated on another's (the text report's column says so)."""
    from inspector.cli import main

    long = str(sample_path("long-session"))
    for path, policy, harness, wrote in (
        (str(RUN_DIR), "opencollab", "OpenCollab", True),
        (long, "claude-code", "Claude Code", True),
        (long, "opencollab", "OpenCollab", False),
        (str(RUN_DIR), "claude-code", "Claude Code", False),
    ):
        assert main(["report", path, "--json", "--policy", policy]) == 0
        budget = json.loads(capsys.readouterr().out)["budget"]
        assert (budget["harness"], budget["harness_wrote_transcript"]) == (harness, wrote), (path, policy)
    assert main(["report", long, "--policy", "opencollab"]) == 0
    text = capsys.readouterr().out
    assert "what OpenCollab would estimate" in text and "own estimate" not in text
    assert main(["report", long]) == 0
    assert "Claude Code's own estimate" in capsys.readouterr().out  # its own transcript: what it decided with


def test_under_another_policy_the_ledger_still_holds_what_was_cleared_whole() -> None:
    """The clearing was OpenCollab's view, not its ledger: Claude Code's policy is shown the same
    raw ledger (and, deciding with calibrated weights under its trigger, sends it all)."""
    transcript = load(RUN_DIR)
    own = Replay.open(transcript).step(24)
    other = Replay.open(transcript, "claude-code").step(24)
    assert other.result.input_tokens == own.result.input_tokens == 25_640
    assert other.weights == own.weights
    assert other.result.sent_tokens == 25_640 and own.result.sent_tokens < 10_000


def test_recast_weighs_the_same_views_again() -> None:
    a = Message(id="a", role=Role.USER, blocks=(TextBlock(text="x" * 300),))
    b = Message(id="b", role=Role.USER, blocks=(TextBlock(text="y" * 30),))
    a2 = replace(a, blocks=(TextBlock(text="x" * 30),))
    est = HeuristicEstimator()
    memo = TokenMemo(est)
    layer = LayerResult(
        name="cut",
        label="cut",
        view=(a2, b),
        tokens_before=1,
        tokens_after=1,
        fired=True,
        reason="because",
        decisions=(Decision("a", "cut", Action.TRUNCATED, "because", 1, 1),),
        truncated=1,
    )
    budget = Budget.for_window(None)
    result = ShapeResult(
        input=(a, b), budget=budget, layers=(layer,), final=(a2, b), input_tokens=1, sent_tokens=1
    )
    again = recast(result, memo)
    (cut,) = again.layers
    assert again.budget is budget
    assert again.input_tokens == est.message(a) + est.message(b)
    assert cut.tokens_before == again.input_tokens
    assert cut.tokens_after == again.sent_tokens == est.message(a2) + est.message(b)
    (d,) = cut.decisions
    assert (d.tokens_before, d.tokens_after, d.reason) == (est.message(a), est.message(a2), "because")
    assert cut.view == (a2, b) and cut.fired and cut.truncated == 1
