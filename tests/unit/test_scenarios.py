"""Each teaching scenario shows its phenomenon, with the numbers (inspector.scenarios)."""

from __future__ import annotations

import pytest

from inspector.findings import find_all
from inspector.findings.overflow import ForcedRecovery, call_ledger, overflow_incidents, overflow_recovery
from inspector.model import (
    EventKind,
    Message,
    Origin,
    RecordedEvent,
    Role,
    Source,
    SourceKind,
    TextBlock,
    ToolResultBlock,
)
from inspector.model.transcript import Request, Segment, Transcript, Usage
from inspector.replay import Replay, ReplayError
from inspector.replay.persisted import STORM_SPAN, persisted_run, storms
from inspector.samples import SCENARIOS
from inspector.scenarios import open_scenario, stops
from inspector.shaping import Action, load_policy, policy_from_dict
from inspector.shaping.base import LayerResult


def fired(replay: Replay, k: int) -> tuple[str, ...]:
    return replay.step(k).result.fired


def layer(replay: Replay, k: int, name: str) -> LayerResult:
    return replay.step(k).result.layer(name)


def requests_where(replay: Replay, name: str) -> list[int]:
    return [k for k in range(1, len(replay) + 1) if name in fired(replay, k)]


def stop_at(name: str, k: int) -> list[str]:
    return [s.narration for s in stops(name) if s.request == k]


# -- (a) the per-tool budget alone ---------------------------------------------------------------


def test_a_the_per_tool_budget_alone_keeps_the_view_under_the_trigger() -> None:
    replay = open_scenario("budget-alone")
    assert (replay.budget.trigger, replay.budget.target) == (27_000, 20_250)
    # the budget fires from the full read of parser.py on; nothing reactive ever does
    assert requests_where(replay, "per_tool_budget") == [3, 4, 5, 6, 7, 8, 9]
    for k in range(1, 10):
        assert set(fired(replay, k)) <= {"per_tool_budget"}
    budget = layer(replay, 3, "per_tool_budget")
    assert (budget.tokens_before, budget.tokens_after, budget.truncated) == (25_755, 20_177, 1)
    assert budget.decisions[0].reason == (
        "tool result of 37,485 chars over the 16,000-char tool result budget; 21,592 chars dropped, the head kept"
    )
    # request 6: the verbose test run is cut too; the ledger is over the trigger, the view is not
    r6 = replay.step(6).result
    assert (r6.input_tokens, r6.sent_tokens) == (34_535, 25_450)
    assert r6.input_tokens > replay.budget.trigger >= r6.sent_tokens
    assert layer(replay, 6, "per_tool_budget").truncated == 2
    assert layer(replay, 6, "tool_output_clear").reason == "25,450 under trigger 27,000"
    over = [k for k in range(1, 10) if replay.step(k).result.input_tokens > replay.budget.trigger]
    assert over == [6, 7, 8, 9]
    assert (replay.step(9).result.input_tokens, replay.step(9).result.sent_tokens) == (35_625, 26_540)
    assert [s.request for s in stops("budget-alone")] == [3, 6, 9]
    assert "0 requests needed a reactive layer" in stop_at("budget-alone", 9)[0]


# -- (b) tool output clear suffices ---------------------------------------------------------------


def test_b_tool_output_clear_alone_brings_the_view_under_the_trigger() -> None:
    replay = open_scenario("clear-suffices")
    assert requests_where(replay, "tool_output_clear") == [14, 15, 16]
    assert requests_where(replay, "old_history_snip") == requests_where(replay, "auto_compact") == []
    assert fired(replay, 13) == ()
    assert replay.step(13).result.sent_tokens == 25_778
    clear = layer(replay, 14, "tool_output_clear")
    assert (clear.tokens_before, clear.tokens_after, clear.cleared) == (27_445, 20_707, 8)
    assert clear.tokens_before > replay.budget.trigger >= clear.tokens_after
    kept = [d for d in clear.decisions if d.action is Action.KEPT_RECENT]
    assert len(kept) == replay.budget.results_kept == 5
    assert layer(replay, 14, "old_history_snip").reason == "20,707 under trigger 27,000"
    last = layer(replay, 16, "tool_output_clear")
    assert (last.tokens_before, last.tokens_after, last.cleared) == (28_723, 21_091, 10)
    assert [s.request for s in stops("clear-suffices")] == [13, 14, 16]


# -- (c) snip is needed ----------------------------------------------------------------------------


def test_c_clear_is_not_enough_and_snip_removes_exchanges_to_the_target() -> None:
    replay = open_scenario("snip-needed")
    assert requests_where(replay, "tool_output_clear") == list(range(14, 21))
    assert requests_where(replay, "old_history_snip") == list(range(16, 21))
    assert requests_where(replay, "auto_compact") == []
    # 14: clear alone is enough
    assert fired(replay, 14) == ("tool_output_clear",)
    clear14 = layer(replay, 14, "tool_output_clear")
    assert (clear14.tokens_before, clear14.tokens_after) == (27_554, 25_882)
    # 16: clear leaves it over the trigger; snip removes whole exchanges down to the target
    clear, snip = layer(replay, 16, "tool_output_clear"), layer(replay, 16, "old_history_snip")
    assert (clear.tokens_before, clear.tokens_after) == (30_169, 28_497)
    assert clear.tokens_after > replay.budget.trigger
    assert (snip.tokens_before, snip.tokens_after, snip.removed, snip.truncated) == (28_497, 19_635, 10, 10)
    assert snip.tokens_after <= replay.budget.target == 20_250
    removed = {d.message_id for d in snip.decisions if d.action is Action.REMOVED}
    view = replay.step(16).result.final
    assert not removed & {m.id for m in view}
    # whole exchanges: every call left in the view still has its result
    calls = {c.id for m in view for c in m.tool_calls}
    results = {b.call_id for m in view for b in m.blocks if isinstance(b, ToolResultBlock)}
    assert calls == results
    assert layer(replay, 16, "auto_compact").reason == "19,635 under trigger 27,000"
    assert [s.request for s in stops("snip-needed")] == [14, 16]


# -- (d) auto compact, the last resort, and a pinned task -------------------------------------------


def test_d_auto_compact_is_the_last_resort_and_the_pinned_task_survives() -> None:
    replay = open_scenario("compact-last-resort")
    assert requests_where(replay, "old_history_snip") == list(range(17, 26))
    assert requests_where(replay, "auto_compact") == list(range(20, 26))
    assert requests_where(replay, "tool_output_clear") == []
    # 17-19: snip alone gets under the trigger (not to the target)
    snip17 = layer(replay, 17, "old_history_snip")
    assert (snip17.tokens_before, snip17.tokens_after, snip17.removed) == (27_387, 25_083, 3)
    # 20: snip stays over the trigger, auto compact folds one stretch into a summary
    snip, compact = layer(replay, 20, "old_history_snip"), layer(replay, 20, "auto_compact")
    assert (snip.tokens_before, snip.tokens_after) == (29_736, 27_432)
    assert snip.tokens_after > replay.budget.trigger
    assert (compact.tokens_before, compact.tokens_after, compact.summarized) == (27_432, 18_850, 25)
    assert compact.tokens_after <= replay.budget.target
    view = replay.step(20).result.final
    summaries = [m for m in view if m.is_summary]
    assert len(summaries) == 1
    assert summaries[0].text.startswith("[Context auto-compacted — summary of 25 earlier messages]")
    # the task: pinned, never folded, verbatim in every view
    task = next(m for m in replay.transcript.messages if m.source.kind is SourceKind.TASK)
    assert task.pinned and task.source.priority == 80
    assert task.text.startswith("TASK (keep this in mind the whole session)")
    for k in range(20, 26):
        final = replay.step(k).result.final
        assert task in final
        assert task.id not in {
            d.message_id for d in layer(replay, k, "auto_compact").decisions if d.action is Action.SUMMARIZED
        }
    assert [m.source.kind for m in view if m.pinned] == [
        SourceKind.OVERHEAD,
        SourceKind.PROJECT_INSTRUCTIONS,
        SourceKind.TASK,
        SourceKind.SKILL,
    ]
    pinned_kept = [d for d in compact.decisions if d.action is Action.KEPT_PINNED and d.message_id == task.id]
    assert pinned_kept and pinned_kept[0].reason == "pinned (task, priority 80)"
    assert [s.request for s in stops("compact-last-resort")] == [17, 20, 20]


# -- (e) overflow: forced mode, one retry, a graceful stop -----------------------------------------


def test_e_the_transcript_records_two_overflow_errors_that_findings_recognise() -> None:
    replay = open_scenario("overflow-stop")
    t = replay.transcript
    # the rejected call and its retry are no requests: two API errors after request 5 (lines 25, 26)
    assert len(t.requests) == 5
    assert [(e.kind, e.after_request, e.line, e.detail) for e in t.events] == [
        (EventKind.API_ERROR, 5, 25, "Prompt is too long"),
        (EventKind.API_ERROR, 5, 26, "Prompt is too long"),
    ]
    assert all(r.usage is not None and r.usage.context > 0 for r in t.requests)
    found = find_all(replay, ["overflow", "api_errors"])
    assert [(f.kind, f.severity, f.request, f.explanation) for f in found] == [
        (
            "overflow",
            "error",
            5,
            'the provider rejected the call after request 5 as too long: "Prompt is too long"; '
            "its retry was rejected too (the next call, with no request between)",
        ),
        (
            "overflow",
            "error",
            5,
            'the provider rejected the call after request 5 as too long: "Prompt is too long"; '
            "overflow 2 in a row; no request succeeded after it: the run stopped here",
        ),
    ]
    assert replay.step(5).reported == 16_858


def test_e_forced_mode_on_the_ledger_of_the_rejected_call_does_not_fit() -> None:
    replay = open_scenario("overflow-stop")
    [inc] = overflow_incidents(replay)
    rec = inc.recovery
    assert isinstance(rec, ForcedRecovery)
    # no request followed the call: its ledger is request 5's, its response and the paste, sized
    # as at request 5; the user's last message (written after the errors) is not in it
    k, ledger = call_ledger(replay, replay.transcript.events[0])
    step = replay.step(5)
    response = replay.transcript.response(5)
    assert response is not None
    paste = ledger[-1]
    assert k == 5 and [m.id for m in ledger] == [m.id for m in step.ledger] + [response.id, paste.id]
    assert paste.is_human and paste.text.startswith("Here is the whole nightly log")
    last = replay.transcript.messages[-1]
    assert last.text.startswith("That log is too big") and last.id not in {m.id for m in ledger}
    assert (rec.request, rec.call_after) == (5, 5)
    assert (rec.ledger_tokens, rec.tokens_before, rec.tokens_after, rec.limit) == (
        72_159,
        70_577,
        70_577,
        60_000,
    )
    assert not rec.fits and rec.freed == 0
    assert rec.fired == ["old_history_snip"]
    assert (rec.removed, rec.cleared, rec.summarized) == (2, 0, 0)
    assert (rec.pinned_tokens, rec.recent_tokens) == (15_018, 55_528)
    assert rec.largest_tokens == 55_245 and rec.largest_id == paste.id
    assert rec.message_ids[0] == "overhead" and rec.message_ids[-1] == paste.id
    assert [m.id for m in rec.view] == rec.message_ids
    # the normal pipeline on the same ledger fired the same layer and sent as much: over the
    # trigger every reactive layer already compacts toward its target
    assert rec.normal is not None and rec.normal.fired == ("old_history_snip",)
    assert rec.tokens_after == rec.normal.sent_tokens


def test_e_forced_mode_frees_more_than_the_normal_pipeline_between_target_and_trigger() -> None:
    # where the estimate is under the trigger but over the target, nothing fires normally; forced
    # mode compacts toward the target anyway (what it is for: the provider disagreed with the estimate)
    replay = open_scenario("clear-suffices")
    assert replay.step(13).result.fired == ()
    rec = overflow_recovery(replay, 13)
    assert (rec.tokens_before, rec.tokens_after) == (25_778, 19_793)
    assert rec.tokens_after <= replay.budget.target < rec.tokens_before <= replay.budget.trigger
    assert rec.fired == ["tool_output_clear"] and rec.cleared == 7 and rec.fits
    assert rec.call_after is None
    # under the target there is nothing to do, forced or not
    calm = overflow_recovery(open_scenario("overflow-stop"), 5)
    assert (calm.tokens_before, calm.tokens_after, calm.fired) == (16_858, 16_858, [])


def test_e_one_retry_then_a_graceful_stop_with_its_reason() -> None:
    replay = open_scenario("overflow-stop")
    incidents = overflow_incidents(replay)
    assert len(incidents) == 1
    inc = incidents[0]
    assert (inc.after_request, inc.line, inc.retry, inc.retry_overflowed, inc.stopped) == (
        5,
        25,
        None,
        True,
        True,
    )
    assert inc.error == "Prompt is too long"
    assert inc.reason == (
        "context overflow: the call after request 5 was rejected as too long; forced mode could free nothing "
        "beyond what the pipeline had already done (70,577 tokens), still over the 60,000-token window, and the "
        "single retry (the next call, no request between) was rejected too, so the run stopped: 15,018 tokens "
        "are pinned and 55,528 sit in the last 4 groups, which no layer removes"
    )
    found = stops("overflow-stop")
    assert [(s.request, s.title) for s in found] == [
        (5, "Before the paste"),
        (5, "The provider rejects the call after request 5"),
        (5, "One retry, then a graceful stop"),
    ]
    assert found[0].narration.startswith("The session is small: 16,858 tokens sent at request 5")
    assert "165,708 characters, 55,245 tokens." in found[0].narration
    assert (
        'the provider answers "Prompt is too long": it never becomes a request (the transcript records it as '
        "an API error after request 5, with no usage). Its ledger holds 72,159 tokens; the pipeline fired "
        "(old history snip 72,159 -> 70,577) and the view is still 70,577, over the 60,000-token window."
    ) in found[1].narration
    assert found[2].narration.startswith(
        "The harness retries once with the forced view (the next call). It is rejected again, a second API "
        "error with no request between"
    )
    assert inc.reason in found[2].narration


LOG = "log " * 4_000


def _overflow_session(case: str) -> Transcript:
    """A task, a first answer (request 1), a big paste, then the call after request 1 rejected as
    too long (line 4). "recovered": request 2 retries it and goes through; "typed": so does it,
    after the user typed a line (line 5) that the rejected call never carried; "stopped": the retry
    is rejected too (line 5) and no request follows."""

    def at(line: int) -> Origin:
        return Origin(file="t.jsonl", line=line)

    msgs = [
        Message(
            id="task",
            role=Role.USER,
            blocks=(TextBlock(text="Fix it."),),
            source=Source.of(SourceKind.TASK),
            origin=at(1),
        ),
        Message(id="a1", role=Role.ASSISTANT, blocks=(TextBlock(text="Looking."),), origin=at(2)),
        Message(id="u1", role=Role.USER, blocks=(TextBlock(text=LOG),), origin=at(3)),
    ]
    events = [RecordedEvent(kind=EventKind.API_ERROR, detail="Prompt is too long", after_request=1, line=4)]
    requests = [Request(index=1, response_id="a1", segment=0, ledger_len=1, usage=Usage(input=5_000))]
    if case == "typed":
        msgs.append(Message(id="u2", role=Role.USER, blocks=(TextBlock(text="try again"),), origin=at(5)))
    if case == "stopped":
        events.append(
            RecordedEvent(
                kind=EventKind.API_ERROR, detail="API Error: 400 prompt is too long", after_request=1, line=5
            )
        )
    else:
        msgs.append(Message(id="a2", role=Role.ASSISTANT, blocks=(TextBlock(text="Ok."),), origin=at(6)))
        requests.append(
            Request(index=2, response_id="a2", segment=0, ledger_len=len(msgs) - 1, usage=Usage(input=3_000))
        )
    return Transcript(
        format="test",
        path="t.jsonl",
        messages=msgs,
        segments=[Segment(index=0, message_ids=tuple(m.id for m in msgs))],
        requests=requests,
        events=events,
    )


@pytest.mark.parametrize("case", ["recovered", "typed", "stopped"])
def test_e_incidents_tell_a_recovery_from_a_stop(case: str) -> None:
    replay = Replay.open(_overflow_session(case), "opencollab", 10_000)
    [inc] = overflow_incidents(replay)
    ok = case != "stopped"
    assert (inc.after_request, inc.line, inc.retry, inc.retry_overflowed, inc.stopped) == (
        1,
        4,
        2 if ok else None,
        not ok,
        not ok,
    )
    # forced mode ran on the ledger the rejected call was made with, whatever came after it: the
    # retry's (request 2) when there is one, request 1's and the paste when not
    k, ledger = call_ledger(replay, replay.transcript.events[0])
    assert (k, [m.id for m in ledger]) == (2 if ok else 1, ["overhead", "task", "a1", "u1"])
    assert (inc.recovery.request, inc.recovery.call_after) == (k, 1)
    if ok:
        assert inc.reason.endswith("and the retry (request 2) went through")
        assert inc.reason.startswith("the call after request 1 was rejected as too long; ")
    else:
        assert inc.reason.startswith("context overflow: the call after request 1 was rejected as too long; ")
        assert "the single retry (the next call, no request between) was rejected too" in inc.reason


def test_e_no_request_no_incident() -> None:
    t = _overflow_session("stopped")
    empty = Transcript(
        format="test", path="t.jsonl", messages=t.messages, segments=t.segments, requests=[], events=t.events
    )
    assert overflow_incidents(Replay.open(empty, "opencollab", 10_000)) == []


# -- (f) a small window ------------------------------------------------------------------------------


def test_f_a_small_window_keeps_two_groups_and_two_results() -> None:
    replay = open_scenario("small-window")
    b = replay.budget
    assert (b.window, b.trigger, b.target, b.affordable_groups) == (35_500, 2_500, 1_875, 2)
    assert (b.groups_kept, b.results_kept) == (2, 2)
    big = replay.with_settings(window=200_000).budget
    assert (big.groups_kept, big.results_kept) == (4, 5)
    # tool output clear keeps exactly the 2 most recent compactable results, at every request it fires
    assert requests_where(replay, "tool_output_clear") == list(range(4, 10))
    for k in range(4, 10):
        clear = layer(replay, k, "tool_output_clear")
        assert sum(d.action is Action.KEPT_RECENT for d in clear.decisions) == 2
    clear4 = layer(replay, 4, "tool_output_clear")
    assert (clear4.tokens_before, clear4.tokens_after, clear4.cleared) == (16_694, 16_307, 1)
    # snip never touches the last 2 groups and removes every removable exchange before them
    assert requests_where(replay, "old_history_snip") == list(range(4, 10))
    snip9 = layer(replay, 9, "old_history_snip")
    assert (snip9.tokens_before, snip9.tokens_after, snip9.removed) == (16_991, 16_334, 6)
    assert snip9.reason.endswith("still over target 1,875")
    recent = {d.message_id for d in snip9.decisions if d.action is Action.KEPT_RECENT}
    assert recent == {m.id for m in replay.step(9).ledger[-len(recent) :]}
    assert "in the last 2 groups, which snip never removes" in {
        d.reason for d in snip9.decisions if d.action is Action.KEPT_RECENT
    }
    # the overhead alone is over this trigger
    assert replay.step(1).weights["overhead"] == 14_397 > b.trigger
    assert [s.request for s in stops("small-window")] == [1, 4, 9]


# -- (g) a compaction storm --------------------------------------------------------------------------


def test_g_target_at_the_trigger_storms_and_the_default_target_does_not() -> None:
    hot_replay = open_scenario("compaction-storm")
    assert hot_replay.policy.name == "target-at-trigger"
    assert (hot_replay.budget.trigger, hot_replay.budget.target) == (27_000, 26_999)
    calm_replay = hot_replay.with_settings(load_policy(SCENARIOS["compaction-storm"].compare_policy or ""))
    assert (calm_replay.budget.trigger, calm_replay.budget.target) == (27_000, 20_250)
    hot, calm = persisted_run(hot_replay), persisted_run(calm_replay)
    assert hot.compactions == [15, 17, 20, 23, 26, 28, 29, 30, 31, 32]
    assert calm.compactions == [15, 28]
    assert hot.storms() == [[15, 17, 20, 23, 26, 28, 29, 30, 31, 32]]
    assert calm.storms() == []
    # the first compaction: the same crossing, two different landings
    assert (hot.step(15).input_tokens, hot.step(15).sent_tokens) == (27_639, 26_192)
    assert (calm.step(15).input_tokens, calm.step(15).sent_tokens) == (27_639, 19_916)
    assert calm.step(15).sent_tokens <= calm.target < hot.step(15).sent_tokens <= hot.target
    # two requests later: the hot run is over the trigger again, the calm one far under it
    assert (hot.step(17).input_tokens, hot.step(17).sent_tokens) == (27_445, 25_818)
    assert calm.step(17).input_tokens == 21_169 and not calm.step(17).compacted
    # every compaction here is snip's
    assert {name for s in hot.steps if s.compacted for name in s.fired} == {"old_history_snip"}
    assert [s.request for s in stops("compaction-storm")] == [15, 17, 32]


def test_g_the_target_cannot_reach_the_trigger() -> None:
    from inspector.shaping import PolicyError

    with pytest.raises(PolicyError, match="target_ratio: must be between 0 and 1"):
        policy_from_dict({"target_ratio": 1.0})
    closest = policy_from_dict({"target_ratio": 0.99999})
    assert closest.budget(60_000).target == closest.budget(60_000).trigger - 1


def test_storms_cluster_neighbours_within_the_span() -> None:
    assert STORM_SPAN == 3
    assert storms([15, 19, 21, 24, 27]) == [[19, 21, 24, 27]]
    assert storms([1, 5, 9]) == []
    assert storms([3, 1, 2], span=1) == [[1, 2, 3]]


def test_a_read_time_replay_reshapes_the_ledger_where_a_persisted_run_starts_from_its_last_view() -> None:
    replay = open_scenario("compaction-storm").with_settings("opencollab")
    run = persisted_run(replay)
    # read time: snip fires at every request over the trigger; persisted: only where the kept view crosses it
    assert requests_where(replay, "old_history_snip") == list(range(15, 33))
    assert [s.request for s in run.steps if s.fired] == [15, 28]
    assert run.step(16).input_tokens < replay.step(16).result.input_tokens


def test_scenario_stops_refuse_data_that_does_not_show_the_phenomenon() -> None:
    quiet = open_scenario("clear-suffices").with_settings(window=1_000_000)
    with pytest.raises(ReplayError, match="never shows tool output clear firing"):
        stops("clear-suffices", quiet)


# -- (h) the eager clear's cache cost ------------------------------------------------------------------


def test_h_eager_clear_rewrites_the_prefix_at_low_pressure() -> None:
    replay = open_scenario("eager-clear-cache")
    assert replay.budget.trigger == 167_000
    assert all(not fired(replay, k) for k in range(1, len(replay) + 1))
    eager = replay.with_settings(load_policy(SCENARIOS["eager-clear-cache"].compare_policy or ""))
    assert requests_where(eager, "eager_clear") == list(range(14, 24))
    clear = layer(eager, 14, "eager_clear")
    assert clear.cleared == 1
    assert (
        clear.decisions[0].reason == "eager: 13th most recent compactable result, only 12 kept (no trigger)"
    )
    rereads = [f for f in find_all(eager, ["reread"]) if f.layer == "eager_clear"]
    assert [f.request for f in rereads] == [21]
    assert find_all(replay, ["reread"]) == []
    assert [s.request for s in stops("eager-clear-cache")] == [14, 23]
