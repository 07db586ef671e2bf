"""The core's answers to the first questions: how close to the trigger, what a recorded compaction
took, what fills the window (inspector.replay.distance, .folded, .composition), and how `report
--step`, `explain` and `findings` say them. Pilot: the real session fa812bfe (its auto compaction
after request 126)."""

from __future__ import annotations

import json
from functools import cache

import pytest

from inspector.cli import main
from inspector.formats import load
from inspector.model import Message, ReasoningBlock, Role, TextBlock, ToolCallBlock, ToolResultBlock
from inspector.replay import Replay
from inspector.replay.composition import build, composition, grid, message_parts
from inspector.replay.distance import distance_text, distances, gap_text, percent
from inspector.replay.folded import compaction_at, fold_sentence, folded_by, opened
from inspector.report.summary import replay_report
from inspector.samples import SAMPLES, sample_path
from inspector.shaping import Budget
from tests.conftest import FA812, corpus_file


@cache
def pilot() -> Replay:
    corpus_file(str(FA812.relative_to(FA812.parents[2])))
    return Replay.open(load(str(FA812)))


# -- distance --------------------------------------------------------------------------------------


def test_distance_to_each_line_in_tokens_and_share_of_the_window() -> None:
    gaps = distances(166_874, 167_000, 177_000, 200_000)
    assert [(g.line, g.left) for g in gaps] == [("trigger", 126), ("blocking", 10_126), ("window", 33_126)]
    assert distance_text(gaps) == (
        "126 to trigger 167,000 (0.06% of window) · 10,126 to blocking 177,000 · 33,126 to window 200,000"
    )
    assert distance_text(gaps, width=30) == "126 to trigger (0.06%)"
    over = distances(170_000, 167_000, None, None)
    assert [g.line for g in over] == ["trigger"]
    assert distance_text(over) == "3,000 over trigger 167,000 (1.8% of trigger)"
    assert gap_text(distances(167_000, 167_000, None, 200_000)[0]) == "at trigger 167,000"
    assert percent(0.051) == "5.1%" and percent(0.00063) == "0.06%"


def test_pilot_request_126_is_126_tokens_from_the_trigger() -> None:
    replay = pilot()
    gaps, own = replay.distances(126)
    assert gaps[0].line == "trigger" and gaps[0].context == 166_874 and gaps[0].left == 126
    assert own is not None and own[0].context == 166_742 and own[0].left == 258
    d = replay_report(replay, step=126).distance
    assert d is not None and d["text"].startswith("126 to trigger 167,000")
    assert d["harness_text"].startswith("258 to trigger 167,000")


def test_report_step_says_the_distance(capsys: pytest.CaptureFixture[str]) -> None:
    pilot()
    assert main(["report", str(FA812), "--step", "126"]) == 0
    out = capsys.readouterr().out
    assert "context 166,874: 126 to trigger 167,000 (0.06% of window)" in out
    assert "harness estimate 166,742: 258 to trigger 167,000" in out
    assert main(["report", str(FA812), "--step", "126", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["distance"]["gaps"][0] == {
        "line": "trigger",
        "value": 167_000,
        "context": 166_874,
        "left": 126,
        "share_of": "window",
        "share": 0.00063,
    }


def test_findings_closest_approach_is_against_the_trigger(capsys: pytest.CaptureFixture[str]) -> None:
    pilot()
    main(["findings", str(FA812)])
    out = capsys.readouterr().out
    assert (
        "closest approach to the trigger 167,000: request 126 held 166,874 tokens, 126 to spare "
        "(0.06% of the window); 10,126 to blocking 177,000, 33,126 to window 200,000 (the request filled 83.4% of the window)"
    ) in out


# -- what a recorded compaction took ---------------------------------------------------------------


def test_pilot_recorded_compaction_opened() -> None:
    replay = pilot()
    event = compaction_at(replay, 127)
    assert event is not None and event.after_request == 126 and compaction_at(replay, 126) is None
    o = opened(replay, event)
    assert (o.before_request, o.after_request) == (126, 127)
    assert len(o.before) == 301 and len(o.after) == 1
    assert o.summary is not None and o.summary.role == "summary" and o.summary.weight == 6_014
    assert o.after[0].message_id == o.summary.message_id and o.preserved == ()
    # every message of the ended segment was folded: heaviest first, each with its weight
    assert len(o.folded) == 301
    assert [f.weight for f in o.folded] == sorted((f.weight for f in o.folded), reverse=True)
    heaviest = o.folded[0]
    assert (heaviest.tool, heaviest.weight, heaviest.line) == ("Read", 10_384, 755)
    assert "defmodule SpotterWeb.SessionLive" in heaviest.text
    assert o.folded_tokens == sum(e.weight for e in o.before) == 141_197
    # the calibrated context before: the folded messages sent with request 126 plus the overhead
    assert (o.before_tokens, o.after_tokens) == (166_874, 32_015)
    # Claude Code does not protect the task (its summary carries it on): no pinned source lost;
    # under OpenCollab's rule (priority >= 70) the task is pinned, and did not survive
    assert o.lost_pins == () and not any(e.pinned for e in o.folded)
    floor = opened(replay.with_settings(policy="opencollab"), event)
    assert [(p.source, p.count, p.survived) for p in floor.lost_pins] == [("task · first user task", 1, False)]
    assert len(o.restored_candidates) == 5 and o.restored_candidates[0].endswith("spotter.css")
    assert o.headline().startswith(
        "the harness compacted (auto) after request 126: 167,117 tokens by its count; 301 messages → 1"
    )


def test_explain_a_message_folded_by_a_recorded_compaction(capsys: pytest.CaptureFixture[str]) -> None:
    replay = pilot()
    mid = "eb2624d7-805c-4a88-b36c-9e87b4fcb40a"
    event = folded_by(replay, mid)
    assert event is not None and event.after_request == 126
    sentence = (
        "folded by the compaction the harness recorded after request 126 (auto; 167,117 tokens by its "
        "count, calibrated 166,874; the ledger of 301 messages became 1, a summary of 6,014 tokens, at "
        "request 127)"
    )
    assert fold_sentence(replay, event) == sentence
    assert replay.explain(mid).endswith(f"; then {sentence}")
    later = replay.explain(mid, step=140)
    assert later.startswith(f"{mid}: not in the ledger at request 140; it was sent with requests 50–126")
    assert later.endswith(sentence)
    # the summary itself was folded by nothing
    assert folded_by(replay, event.summary_id or "") is None
    main(["explain", str(FA812), "eb2624d7", "--step", "130"])
    assert sentence in capsys.readouterr().out


def test_report_step_after_the_compaction_lists_the_folded(capsys: pytest.CaptureFixture[str]) -> None:
    pilot()
    main(["report", str(FA812), "--step", "127", "--json"])
    data = json.loads(capsys.readouterr().out)
    c = data["compaction"]
    assert (c["before_messages"], c["after_messages"], c["folded_tokens"]) == (301, 1, 141_197)
    assert c["folded"][0]["weight"] == 10_384 and len(c["folded"]) == 301
    assert c["lost_pins"] == []  # Claude Code protects memory and skills, not the task
    main(["report", str(FA812), "--step", "127", "--json", "--policy", "opencollab"])
    assert json.loads(capsys.readouterr().out)["compaction"]["lost_pins"] == [
        {"source": "task · first user task", "count": 1, "weight": 60, "survived": False}
    ]
    main(["report", str(FA812), "--step", "126", "--json"])
    assert json.loads(capsys.readouterr().out)["compaction"] is None
    main(["report", str(FA812), "--step", "127"])
    out = capsys.readouterr().out
    assert "Folded: 301 messages, 141,197 tokens (heaviest first)" in out
    assert "⚑ pinned task" not in out and "first user task: 1 message, 60 tokens folded" not in out
    main(["report", str(FA812), "--step", "127", "--policy", "opencollab"])
    assert "⚑ pinned task · first user task: 1 message, 60 tokens folded; did not survive" in capsys.readouterr().out


# -- what fills the window -------------------------------------------------------------------------


def test_pilot_composition_totals_equal_the_context_at_every_request() -> None:
    replay = pilot()
    for k in range(1, len(replay) + 1):
        step = replay.step(k)
        comp = composition(step)
        assert comp.context == step.context == sum(p.raw for p in comp.used)
        assert comp.sent == step.result.sent_tokens == sum(p.sent for p in comp.used)
        assert comp.total("raw") == 200_000  # never over the window: the space parts complete it
    comp = composition(replay.step(126))
    by = {p.key: p for p in comp.parts}
    assert by["overhead"].raw == 26_001 and by["overhead"].label == "system prompt and tools"
    assert by["tool:Read"].raw == 52_055 and by["tool:Read"].messages == 28
    assert (by["free"].raw, by["buffer"].raw, by["reserve"].raw) == (126, 13_000, 20_000)
    assert by["thinking"].raw == 1_075 and by["task"].raw == 60
    assert [p.key for p in comp.parts][-3:] == ["free", "buffer", "reserve"]


def test_composition_raw_and_sent_on_the_sample_where_shaping_fires() -> None:
    info = SAMPLES["long-session"]
    replay = Replay.open(load(sample_path("long-session")), policy=info.policy, window=info.window)
    step = replay.step(250)
    comp = composition(step)
    by = {p.key: p for p in comp.parts}
    assert comp.context == step.context and comp.sent == step.result.sent_tokens < comp.context
    # tool output clear cleared old Read results: the sent side holds far less of them
    assert by["tool:Read"].sent < by["tool:Read"].raw / 4
    assert by["memory"].raw == by["memory"].sent > 0 and by["skills"].raw > 0
    assert by["over"].raw == comp.context - 200_000 and by["over"].sent == 0
    assert comp.total("sent") == 200_000
    cells = grid(comp, "sent", 100)
    assert len(cells) == 100 and cells.count("reserve") == 10
    report = replay_report(replay, step=250)
    assert report.composition is not None
    assert sum(p["raw"] for p in report.composition["parts"] if not p["space"]) == step.context


def test_a_message_is_split_over_thinking_tools_and_conversation_exactly() -> None:
    call = Message(
        id="a",
        role=Role.ASSISTANT,
        blocks=(
            ReasoningBlock(text="x" * 300),
            TextBlock(text="y" * 100),
            ToolCallBlock(id="c1", name="Read", arguments={}),
        ),
    )
    result = Message(
        id="r",
        role=Role.USER,
        blocks=(ToolResultBlock(call_id="c1", content="z" * 50),),
    )
    parts = dict(message_parts(call, 1_001, {}))
    assert sum(parts.values()) == 1_001 and parts["thinking"] > parts["conversation"] > 0
    assert message_parts(result, 77, {"c1": "Read"}) == [("tool:Read", 77)]
    comp = build(1, [(call, 1_001), (result, 77)], [(call, 1_001)], Budget.for_window(10_000))
    assert comp.context == 1_078 and comp.sent == 1_001
    assert comp.total("raw") == comp.total("sent") == 10_000
    unknown = build(1, [(call, 10)], [(call, 10)], Budget.for_window(None))
    assert unknown.window is None and all(not p.space for p in unknown.parts)


def test_exports_carry_the_distance_and_the_composition() -> None:
    from inspector.report.export import export

    info = SAMPLES["long-session"]
    replay = Replay.open(load(sample_path("long-session")), policy=info.policy, window=info.window)
    text = export(replay, "md", step=250)
    assert "## Distance at request 250" in text
    assert "| calibrated context | 227,333 | 60,333 over trigger 167,000 (30.2% of window)" in text
    assert "| tool results · Read | 116,371 | 58.2% | 6,849 | 3.4% |" in text
    assert "| safety buffer | 0 | 0.0% | 13,000 | 6.5% |" in text
    html = export(replay, "html", step=250)
    assert "<h2>What fills the window at request 250</h2>" in html
    data = json.loads(export(replay, "json", step=250))
    assert data["composition"]["sent"] == replay.step(250).result.sent_tokens
