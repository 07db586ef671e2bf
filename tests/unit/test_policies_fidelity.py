"""Fidelity: recorded harness events beside the simulated ones, and the harness estimators
(inspector.tokens.harness) that make the simulated trigger decisions."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Unpack

import msgspec
import pytest
from msgspec.structs import replace

from inspector.formats.detect import load
from inspector.model import (
    CONVERSATION,
    EventKind,
    Message,
    RecordedEvent,
    Request,
    Role,
    Segment,
    Source,
    SourceKind,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Transcript,
    Usage,
)
from inspector.replay import Replay
from inspector.replay.fidelity import decision_point, fidelity
from inspector.shaping import CLAUDE_CODE, Policy
from inspector.tokens.harness import (
    claude_code_rough,
    harness_estimate,
    harness_estimate_detail,
    harness_estimates,
    segment_end_estimates,
)
from tests.support.typed import MessageExtras

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
FA812 = "claude-code/spotter-fa812bfe/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"
FASTHOOKS = "claude-code/fasthooks-manual-compact.jsonl"


def corpus(relative: str) -> Path:
    path = CORPUS / relative
    if not path.exists():
        pytest.skip(f"real transcript corpus not found at {CORPUS}")
    return path


@pytest.fixture(scope="module")
def fa812() -> Transcript:
    return load(corpus(FA812))


# --- the key test: Claude Code's auto compaction in spotter fa812bfe ---------------------------------


def test_claude_code_compacts_after_request_126_not_125(fa812: Transcript) -> None:
    f = fidelity(fa812, "claude-code", 200_000)
    assert (f.matches, f.misses) == (1, 0)
    assert (f.policy, f.estimator, f.window, f.trigger) == ("claude-code", "claude_code", 200_000, 167_000)
    (ev,) = f.events
    assert (ev.kind, ev.trigger, ev.counted, ev.match) == ("compaction", "auto", True, True)
    assert ev.recorded_after_request == ev.simulated_after_request == 126
    # the last request before the boundary held 166,874; the one before it 166,611
    before = fa812.request(125).usage
    assert ev.context == 166_874 and before is not None and before.context == 166_611
    # Claude Code's own figure: preTokens 167,117; the simulation's, before sending 127 and 126
    assert ev.pre_tokens == 167_117
    assert ev.harness_estimate == 167_117 and ev.threshold == 167_000
    assert ev.previous_harness_estimate == 166_742 < 167_000
    assert 166_874 < (ev.calibrated or 0) < 167_500
    assert json.loads(json.dumps(msgspec.to_builtins(f)))["events"][0]["simulated_after_request"] == 126


def test_claude_code_estimate_parts_at_125_126_and_127(fa812: Transcript) -> None:
    # 125 -> 126: the last report (125: 166,611) + its response's output (118, a final count)
    # + chars/4 of the Grep result after it (51 chars -> 13)
    at126 = harness_estimate_detail(fa812, CLAUDE_CODE, 126)
    assert (at126.report_request, at126.report_context, at126.output, at126.appended) == (
        125,
        166_611,
        118,
        13,
    )
    assert at126.tokens == harness_estimate(fa812, CLAUDE_CODE, 126) == 166_742
    assert not at126.output_stale
    # 126 -> 127, on the old ledger (request 127 itself was sent after the compaction)
    decision = segment_end_estimates(fa812, CLAUDE_CODE)[0]
    assert (decision.report_request, decision.report_context, decision.appended) == (126, 166_874, 98)
    # the transcript keeps a stale streaming snapshot of 126's output (25); Claude Code held the
    # final count: chars/4 of the tool call (42) + the session's median output overhead
    assert decision.output_recorded == 25 and decision.output_stale
    assert decision.output == 145
    assert decision.tokens == 167_117
    assert harness_estimate_detail(fa812, CLAUDE_CODE, 127).before_compaction == 167_117
    # taken at face value, the snapshot leaves the figure 3 tokens under the line: no compaction
    assert 166_874 + 25 + 98 == 166_997 < 167_000
    # after the compaction: no report yet, chars/4 of the compacted ledger (no system prompt)
    at127 = harness_estimate_detail(fa812, CLAUDE_CODE, 127)
    assert at127.basis == "rough" and at127.tokens < 10_000
    assert at127.tokens == sum(claude_code_rough(m) for m in fa812.ledger(127))


def test_only_a_harness_like_estimator_gets_it_right(fa812: Transcript) -> None:
    estimates = {}
    for name in ("heuristic", "opencode"):
        policy = replace(CLAUDE_CODE, trigger_estimator=name)
        f = fidelity(fa812, policy, 200_000)
        (ev,) = f.events
        assert (f.matches, f.misses) == (0, 1)
        assert ev.simulated_after_request is None
        estimates[name] = ev.harness_estimate
    # opencode's figure stays under the line; OpenCollab's heuristic (64 + chars/3 of each
    # message's JSON) goes over it, but a harness that sizes by itself shapes each request from its
    # raw ledger, and the clearing layer ahead of the summarizing one gets it back under
    assert estimates["opencode"] is not None and estimates["opencode"] < 167_000
    assert estimates["heuristic"] == 167_128
    # opencode's figure: the last report's input + output, 166,874 + 25
    assert segment_end_estimates(fa812, "opencode")[0].tokens == 166_899
    f = fidelity(fa812, "opencollab", 200_000)
    assert f.estimator == "heuristic" and (f.matches, f.misses) == (0, 1)
    # a policy that never compacts cannot predict the compaction: shown, not counted
    f = fidelity(fa812, "no_history_compaction", 200_000)
    assert (f.matches, f.misses) == (0, 0) and not f.events[0].counted


def test_fidelity_from_a_replay_or_a_transcript(fa812: Transcript) -> None:
    replay = Replay.open(fa812, "claude-code", 200_000)
    assert fidelity(replay) == fidelity(fa812, "claude-code", 200_000)
    # the transcript's own harness by default (claude-code), at its model's window
    assert fidelity(fa812) == fidelity(fa812, "claude-code", 200_000)
    # a replay under another policy: the policy given wins
    assert fidelity(replay, "opencollab").policy == "opencollab"


def test_codex_is_judged_against_its_own_line() -> None:
    t = load(corpus("codex/lazyagents-codex-0.158.0-rollout.jsonl"))
    replay = Replay.open(t, "codex")
    # the rollout states 95% of the model's window (258,400); the replay shapes against the window
    # itself, and Codex compacts at 90% of it
    assert (t.window, replay.window, replay.budget.trigger) == (258_400, 272_000, 244_800)
    for f in (fidelity(t), fidelity(replay)):
        assert (f.policy, f.window, f.trigger) == ("codex", 272_000, 244_800)
        assert f.events == [] and (f.matches, f.misses) == (0, 0)
    assert fidelity(replay, window=258_400).trigger == 232_560
    empty = fidelity(Transcript(format="claude-code", path="empty.jsonl"))
    assert (empty.matches, empty.misses, empty.events, empty.trigger) == (0, 0, [], 120_000)


def test_manual_compaction_is_shown_not_counted() -> None:
    f = fidelity(load(corpus(FASTHOOKS)))
    assert f.policy == "claude-code" and (f.matches, f.misses) == (0, 0)
    (ev,) = f.events
    assert (ev.kind, ev.trigger, ev.counted, ev.match) == ("compaction", "manual", False, False)
    assert ev.recorded_after_request == 12 and ev.simulated_after_request is None
    assert ev.pre_tokens == 21_558 and ev.context == 21_331
    assert abs((ev.harness_estimate or 0) - 21_558) < 100
    assert "manual compaction, not counted" in ev.note


# --- synthetic transcripts -------------------------------------------------------------------------------


class Build:
    """Builds one-segment (or more) transcripts: messages, requests at assistant messages."""

    def __init__(self, fmt: str = "claude-code") -> None:
        self.fmt = fmt
        self.messages: list[Message] = []
        self.segments: list[list[str]] = [[]]
        self.requests: list[Request] = []
        self.clock = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
        self.n = 0

    def _ts(self, gap: float) -> str:
        self.clock += timedelta(minutes=gap)
        return self.clock.isoformat()

    def _add(self, m: Message, segments: Sequence[int] | None = None) -> Message:
        self.messages.append(m)
        for s in segments if segments is not None else [len(self.segments) - 1]:
            self.segments[s].append(m.id)
        return m

    def user(
        self, text: str, gap: float = 1, source: Source = CONVERSATION, **kw: Unpack[MessageExtras]
    ) -> Message:
        self.n += 1
        return self._add(
            Message(
                id=f"u{self.n}",
                role=Role.USER,
                blocks=(TextBlock(text=text),),
                timestamp=self._ts(gap),
                source=source,
                **kw,
            )
        )

    def reply(
        self,
        usage: Usage | None,
        text: str = "ok",
        call: tuple[str, str] | None = None,
        gap: float = 1,
        summary: bool = False,
    ) -> Message:
        """An assistant response (a request), with an optional tool call and its result."""
        self.n += 1
        blocks: list[TextBlock | ToolCallBlock] = [TextBlock(text=text)]
        if call is not None:
            blocks.append(ToolCallBlock(id=f"c{self.n}", name=call[0], arguments={"file_path": f"f{self.n}"}))
        seg = len(self.segments) - 1
        m = Message(
            id=f"a{self.n}",
            role=Role.ASSISTANT,
            blocks=tuple(blocks),
            timestamp=self._ts(gap),
            is_summary=summary,
            source=Source.of(SourceKind.SUMMARY) if summary else Source(),
        )
        self.requests.append(
            Request(
                index=len(self.requests) + 1,
                response_id=m.id,
                usage=usage,
                segment=seg,
                ledger_len=len(self.segments[seg]),
                timestamp=m.timestamp,
            )
        )
        if not summary:
            self._add(m)
        else:
            self.messages.append(m)
        if call is not None:
            self._add(
                Message(
                    id=f"r{self.n}",
                    role=Role.USER,
                    blocks=(ToolResultBlock(call_id=f"c{self.n}", tool_name=call[0], content=call[1]),),
                    timestamp=self._ts(0.1),
                    source=Source.of(SourceKind.TOOL_OUTPUT),
                )
            )
        return m

    def new_segment(self, *ids: str) -> None:
        self.segments.append(list(ids))

    def transcript(self, events: Sequence[RecordedEvent] = ()) -> Transcript:
        return Transcript(
            format=self.fmt,
            path=f"synthetic.{self.fmt}",
            model="claude-opus-4-6",
            messages=self.messages,
            segments=[Segment(index=i, message_ids=tuple(ids)) for i, ids in enumerate(self.segments)],
            requests=self.requests,
            events=list(events),
        )


def usage(context: int, output: int = 100) -> Usage:
    return Usage(input=1, cache_read=context - 1, output=output)


def test_a_compaction_the_transcript_does_not_record_is_a_miss() -> None:
    b = Build()
    b.user("task")
    b.reply(usage(100_000), call=("Read", "x" * 400))
    b.reply(usage(150_000), call=("Read", "x" * 400))
    b.reply(usage(166_500, output=600), call=("Read", "x" * 400))
    b.reply(usage(168_000))
    t = b.transcript()
    assert harness_estimate(t, CLAUDE_CODE, 4) == 166_500 + 600 + 100  # 400 chars / 4
    f = fidelity(t, "claude-code", 200_000)
    (ev,) = f.events
    assert ev.recorded_after_request is None and ev.simulated_after_request == 3
    assert ev.counted and not ev.match and (f.matches, f.misses) == (0, 1)
    assert ev.harness_estimate == 167_200 and ev.previous_harness_estimate == 150_000 + 100 + 100
    assert "records no compaction" in ev.note


def test_a_compaction_call_recorded_as_a_request_steps_back() -> None:
    """opencode records its summarization call as a request of the old segment: the harness
    decided at the request before it."""
    b = Build("opencode")
    b.user("task")
    b.reply(usage(100_000, 10))
    b.user("more")
    b.reply(usage(140_000, 10))
    b.user("more")
    b.reply(usage(185_000, 100))
    trigger = b.user("compact")
    summary = b.reply(usage(185_500, 900), text="what we did", summary=True)
    b.new_segment(trigger.id, summary.id)
    b.user("go on")
    b.reply(usage(20_000, 10))
    event = RecordedEvent(kind=EventKind.COMPACTION, trigger="auto", after_request=4, segment=1)
    t = b.transcript([event])
    assert decision_point(t, 4) == 3 and decision_point(t, 3) == 3
    assert harness_estimate(t, "opencode", 4) == 185_100  # the last step's input + output
    f = fidelity(t, "opencode", 200_000)
    (ev,) = f.events
    assert f.trigger == 148_000 and ev.recorded_after_request == ev.simulated_after_request == 3
    assert ev.match and ev.counted and (f.matches, f.misses) == (1, 0)
    assert ev.harness_estimate == 185_100 and ev.previous_harness_estimate == 140_010


def idle_session() -> Build:
    b = Build()
    b.user("task", source=Source.of(SourceKind.TASK))
    for _ in range(8):
        b.reply(usage(20_000), call=("Read", "y" * 800))
    b.reply(usage(21_000), text="done")
    b.user("back after lunch", gap=90)
    b.reply(usage(21_100))
    return b


def test_microcompact_on_an_idle_gap_matches_a_recorded_one() -> None:
    b = idle_session()
    cleared = ("c2", "c4", "c6")
    event = RecordedEvent(
        kind=EventKind.MICROCOMPACT, trigger="auto", after_request=9, cleared_tool_ids=cleared
    )
    t = b.transcript([event])
    f = fidelity(t, "claude-code", 200_000)
    (ev,) = f.events
    assert ev.kind == "microcompact" and ev.recorded_after_request == ev.simulated_after_request == 9
    assert ev.match and ev.counted and (f.matches, f.misses) == (1, 0)
    # opencollab has a clearing layer but no time trigger: it does not act there
    f2 = fidelity(t, "opencollab", 200_000)
    assert f2.events[0].simulated_after_request is None and (f2.matches, f2.misses) == (0, 1)
    # a policy with no clearing layer cannot model it: shown, not counted
    f3 = fidelity(t, "no_history_compaction", 200_000)
    assert not f3.events[0].counted and (f3.matches, f3.misses) == (0, 0)


def test_layer_fired_events_are_matched_by_rung() -> None:
    b = idle_session()
    fired = RecordedEvent(kind=EventKind.LAYER_FIRED, layer="tool_output_clear", after_request=5)
    absent = RecordedEvent(kind=EventKind.LAYER_FIRED, layer="eager_clear", after_request=5)
    t = b.transcript([fired, absent])
    small = Policy(name="tight", layers=("per_tool_budget", "tool_output_clear"), results_kept=2)
    f = fidelity(t, small, 34_000)  # trigger 1,000: the ledger is over it at every request
    by_layer = {ev.layer: ev for ev in f.events}
    assert by_layer["tool_output_clear"].match and by_layer["tool_output_clear"].simulated_after_request == 5
    assert not by_layer["eager_clear"].counted and "no layer 'eager_clear'" in by_layer["eager_clear"].note
    assert (f.matches, f.misses) == (1, 0)
    assert all(ev.kind == "layer_fired" for ev in f.events)  # no compaction layer: none simulated


def test_harness_estimators_on_a_tiny_session() -> None:
    b = Build("codex")
    b.user("hello")
    b.reply(usage(1_000, 50), call=("shell", "é" * 100))  # 200 bytes
    b.reply(usage(1_400, 20))
    t = b.transcript()
    codex = harness_estimates(t, "codex")
    assert codex[0].basis == "rough" and codex[0].tokens == 2  # "hello": 5 bytes -> 2
    assert codex[1].tokens == 1_000 + 50 + 50  # 200 bytes / 4
    heuristic = harness_estimates(t, "heuristic")
    assert heuristic[1].basis == "rough" and heuristic[1].report_request is None
    opencode = harness_estimates(t, "opencode")
    assert opencode[1].tokens == 1_050 and opencode[1].appended == 0
    with pytest.raises(ValueError, match="unknown harness estimator"):
        harness_estimates(t, "tiktoken")
    with pytest.raises(IndexError):
        harness_estimate(t, "codex", 3)
