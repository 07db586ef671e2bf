"""Findings: each check firing and not firing on small ledgers, the numbers in its sentences, the
one-pass guarantee, the JSON and exit-code helpers, and every Claude Code corpus file."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from inspector.findings import (
    CHECKS,
    Facts,
    Finding,
    Settings,
    UnknownCheckError,
    exit_code,
    find_all,
    findings_json,
    findings_text,
)
from inspector.formats import load
from inspector.model import (
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
from inspector.replay import Replay, Step
from inspector.shaping import (
    OPENCOLLAB,
    Action,
    Budget,
    Decision,
    LayerResult,
    Pipeline,
    Policy,
    Sizer,
    memo,
)
from tests.conftest import claude_code_corpus, corpus_file

EAGER = Policy(
    name="opencollab+eager",
    layers=("eager_clear", *OPENCOLLAB.layers),
    eager_keep=2,
    summarizer="extractive",
)


class Session:
    """A small transcript built message by message; every assistant message is one request's response.

    `usage` gives the provider's report (whole input) of the next response; without it the
    request has no usage.
    """

    def __init__(self, task: str = "Fix the failing test.") -> None:
        self.messages: list[Message] = [
            Message(
                id="task", role=Role.USER, blocks=(TextBlock(text=task),), source=Source.of(SourceKind.TASK)
            )
        ]
        self.usage: dict[str, int] = {}
        self.stops: dict[str, str] = {}
        self.events: list[RecordedEvent] = []
        self._n = 0

    def _id(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def _assistant(
        self, blocks: Sequence[Any], usage: int | None, stop: str | None, model: str | None
    ) -> str:
        mid = self._id("a")
        self.messages.append(
            Message(id=mid, role=Role.ASSISTANT, blocks=tuple(blocks), stop_reason=stop, model=model)
        )
        if usage is not None:
            self.usage[mid] = usage
        return mid

    def call(
        self,
        name: str,
        args: dict[str, Any],
        result: str | None = "ok",
        *,
        usage: int | None = None,
        stop: str | None = None,
        text: str = "",
    ) -> tuple[str, str | None]:
        """An assistant message making one call, and (unless `result` is None) the user message answering it."""
        cid = self._id("c")
        blocks: list[Any] = [TextBlock(text=text)] if text else []
        blocks.append(ToolCallBlock(id=cid, name=name, arguments=args))
        aid = self._assistant(blocks, usage, stop, None)
        if result is None:
            return aid, None
        rid = self.result(cid, result)
        return aid, rid

    def result(self, call_id: str, content: str, *, error: bool = False) -> str:
        rid = self._id("r")
        self.messages.append(
            Message(
                id=rid,
                role=Role.USER,
                blocks=(ToolResultBlock(call_id=call_id, content=content, is_error=error),),
                source=Source.of(SourceKind.TOOL_OUTPUT),
            )
        )
        return rid

    def say(
        self,
        text: str = "Done.",
        *,
        usage: int | None = None,
        stop: str | None = None,
        model: str | None = None,
    ) -> str:
        return self._assistant([TextBlock(text=text)], usage, stop, model)

    def user(self, text: str, **extra: Any) -> str:
        mid = self._id("u")
        self.messages.append(Message(id=mid, role=Role.USER, blocks=(TextBlock(text=text),), **extra))
        return mid

    def compaction(self, after_request: int, **extra: Any) -> None:
        self.events.append(RecordedEvent(kind=EventKind.COMPACTION, after_request=after_request, **extra))

    def api_error(self, text: str | None) -> None:
        """A failed call after the requests so far (Claude Code's API-error line): a recorded event,
        no message, no request."""
        made = sum(1 for m in self.messages if m.role is Role.ASSISTANT)
        line = len(self.messages) + len(self.events) + 1
        self.events.append(
            RecordedEvent(kind=EventKind.API_ERROR, detail=text, after_request=made, line=line)
        )

    def transcript(self) -> Transcript:
        requests: list[Request] = []
        for pos, m in enumerate(self.messages):
            if m.role is Role.ASSISTANT:
                u = self.usage.get(m.id)
                requests.append(
                    Request(
                        index=len(requests) + 1,
                        response_id=m.id,
                        segment=0,
                        ledger_len=pos,
                        usage=Usage(input=u) if u is not None else None,
                        stop_reason=self.stops.get(m.id),
                    )
                )
        return Transcript(
            format="test",
            path="test.jsonl",
            messages=list(self.messages),
            segments=[Segment(index=0, message_ids=tuple(m.id for m in self.messages))],
            requests=requests,
            events=list(self.events),
        )

    def replay(self, policy: str | Policy | None = None, window: int | None = 200_000) -> Replay:
        return Replay.open(self.transcript(), policy, window)


def kinds(findings: Sequence[Finding]) -> list[str]:
    return [f.kind for f in findings]


def only(findings: Sequence[Finding], kind: str) -> list[Finding]:
    return [f for f in findings if f.kind == kind]


def run(replay: Replay, check: str, settings: Settings | None = None) -> list[Finding]:
    return find_all(replay, [check], settings)


# -- the registry and the helpers ------------------------------------------------------------------


def test_registry_names_every_check_with_a_docstring() -> None:
    assert list(CHECKS) == [
        "reread",
        "stop_reason",
        "orphans",
        "compaction_storm",
        "overflow",
        "api_errors",
        "loops",
        "pressure",
    ]
    for check in CHECKS.values():
        assert check.run.__doc__ and len(check.run.__doc__.split()) > 20, check.name
        assert check.description and check.kinds


def test_unknown_check_is_a_one_line_error() -> None:
    with pytest.raises(UnknownCheckError, match=r"unknown check 'nope' \(known: reread, stop_reason"):
        find_all(Session().replay(), ["nope"])


def test_json_and_exit_code() -> None:
    warn = Finding("loop", "warning", 3, ("a1",), "x")
    err = Finding("overflow", "error", 2, ("a2", "a3"), "y", layer="recorded:compaction", tokens=5)
    assert exit_code([]) == 0
    assert exit_code([warn]) == 0
    assert exit_code([warn, err]) == 1
    data = findings_json([err])
    assert data == [
        {
            "kind": "overflow",
            "severity": "error",
            "request": 2,
            "message_ids": ["a2", "a3"],
            "explanation": "y",
            "layer": "recorded:compaction",
            "tokens": 5,
        }
    ]
    json.dumps(data)


def test_text_lines_make_control_characters_visible() -> None:
    f = Finding("reread", "warning", 7, (), "re-read \x1b]52;c;aGk=\x07evil.py at request 7")
    lines = findings_text([f])
    assert "\x1b" not in lines[0] and "\\x1b]52;" in lines[0] and "\\x07" in lines[0]
    assert lines[-1] == "1 finding: 0 errors, 1 warning, 0 info"


def test_settings_reject_nonsense() -> None:
    with pytest.raises(ValueError, match="storm_span"):
        Settings(storm_span=0)


# -- re-read after clearing -------------------------------------------------------------------------


def reread_session(size: int = 2_000) -> tuple[Session, str]:
    """Read a.py, then four other files, then a.py again (a whole-file read and a narrower one).

    Ids: the first read is c1 / a2 / r3; the re-read is c16 / a17 / r18.
    """
    s = Session()
    s.call("Read", {"file_path": "src/a.py"}, "A" * size)
    for name in "bcde":
        s.call("Read", {"file_path": f"src/{name}.py"}, name * size)
    _, again = s.call("Read", {"file_path": "src/a.py", "offset": 10, "limit": 20}, "A" * 600)
    assert again == "r18"
    s.say("Fixed.")
    return s, again


def test_reread_after_eager_clear_is_found_with_its_cost() -> None:
    s, again = reread_session()
    replay = s.replay(EAGER, window=200_000)
    found = run(replay, "reread")
    assert len(found) == 1
    f = found[0]
    # a.py's result is the 5th most recent read at request 6 (the call), cleared since request 4
    # (the first request where it was 3rd most recent, with 2 kept); its re-read is sent at 7
    assert f.request == 7
    weight = replay.step(7).weights[again]
    assert f.tokens == weight > 0
    assert f.layer == "eager_clear"
    assert f.explanation == (
        f"re-read src/a.py at request 7 after eager tool output clear cleared it at request 4 "
        f"(opencollab+eager): {weight:,} tokens re-billed"
    )
    assert f.message_ids == ("r3", "a17", again)
    assert replay.explain("r3", 3).startswith("request 3: unchanged")
    assert replay.explain("r3", 4).startswith("request 4: cleared by eager tool output clear")


def test_no_reread_finding_when_the_earlier_result_was_intact() -> None:
    s, _ = reread_session()
    assert run(s.replay("opencollab", window=200_000), "reread") == []


def test_eager_clear_costs_more_rereads_than_plain_opencollab_in_a_small_window() -> None:
    s = Session()
    files = [f"src/m{i}.py" for i in range(8)]
    for f in files:
        s.call("Read", {"file_path": f}, f * 600)
    for f in files[:4]:
        s.call("Read", {"file_path": f}, f * 600)
    s.say("Done.")
    # trigger 20,000: the ledger (about 1,950 tokens a read) crosses it only at request 12, so
    # plain opencollab's tool output clear fires for the last re-read alone, while the eager
    # clear (2 kept) has cleared every earlier read of m0-m3 before it is read again
    window = 20_000 + 13_000 + 20_000
    eager = run(s.replay(EAGER, window), "reread")
    plain = run(s.replay("opencollab", window), "reread")
    assert [f.request for f in eager] == [10, 11, 12, 13]
    assert [(f.request, f.layer) for f in plain] == [(13, "tool_output_clear")]
    assert {f.layer for f in eager} == {"eager_clear"}
    assert all("(opencollab+eager)" in f.explanation and f.tokens for f in eager)


def test_reread_after_a_write_is_a_fresh_read() -> None:
    s = Session()
    s.call("Read", {"file_path": "src/a.py"}, "A" * 2_000)
    for name in "bcd":
        s.call("Read", {"file_path": f"src/{name}.py"}, name * 2_000)
    s.call("Edit", {"file_path": "src/a.py", "old_string": "A", "new_string": "B"}, "updated")
    s.call("Read", {"file_path": "src/a.py"}, "B" * 2_000)
    s.say()
    assert run(s.replay(EAGER), "reread") == []


def test_a_read_after_a_failed_read_is_a_retry() -> None:
    s = Session()
    s.call("Read", {"file_path": "src/a.py"}, None)
    s.result("c1", "File does not exist." + " " * 2_000, error=True)
    for name in "bcd":
        s.call("Read", {"file_path": f"src/{name}.py"}, name * 2_000)
    s.call("Read", {"file_path": "src/a.py"}, "A" * 2_000)
    s.say()
    assert run(s.replay(EAGER), "reread") == []


def test_same_command_is_a_reread_unless_something_was_written_in_between() -> None:
    def session(write: bool) -> Session:
        s = Session()
        s.call("Bash", {"command": "git   status"}, "clean " * 300)
        for name in "bcd":
            s.call("Read", {"file_path": f"src/{name}.py"}, name * 2_000)
        if write:
            s.call("Write", {"file_path": "src/new.py", "content": "x"}, "written")
        s.call("Bash", {"command": "git status"}, "clean " * 300)
        s.say()
        return s

    found = run(session(write=False).replay(EAGER), "reread")
    assert len(found) == 1
    assert found[0].explanation.startswith(
        "re-read `git status` at request 6 after eager tool output clear cleared it"
    )
    assert run(session(write=True).replay(EAGER), "reread") == []


def test_reread_after_per_tool_budget_truncation() -> None:
    s = Session()
    s.call("Read", {"file_path": "big.py"}, "x" * 20_000)
    s.call("Read", {"file_path": "big.py", "offset": 400, "limit": 50}, "y" * 1_000)
    s.say()
    found = run(s.replay("opencollab"), "reread")
    assert len(found) == 1
    assert found[0].explanation.startswith(
        "re-read big.py at request 3 after per-tool budget truncated it at request 2 (opencollab): "
    )
    assert found[0].layer == "per_tool_budget"


@pytest.mark.parametrize(
    ("layer", "label", "verb"),
    [("old_history_snip", "old history snip", "removed"), ("auto_compact", "auto compact", "summarized")],
)
def test_reread_after_snip_or_auto_compact(layer: str, label: str, verb: str) -> None:
    s = Session()
    for i in range(10):
        s.call("Read", {"file_path": f"src/m{i}.py"}, f"m{i}" * 3_000)
    _, again = s.call("Read", {"file_path": "src/m0.py"}, "m0" * 3_000)
    s.say()
    policy = Policy(name=f"only-{layer}", layers=("per_tool_budget", layer), summarizer="extractive")
    replay = s.replay(policy, 20_000 + 13_000 + 12_000)  # trigger 12,000, crossed at request 7
    found = run(replay, "reread")
    assert [(f.request, f.layer) for f in found] == [(12, layer)]
    weight = replay.step(12).weights[again or ""]
    assert found[0].explanation == (
        f"re-read src/m0.py at request 12 after {label} {verb} it at request 7 (only-{layer}): {weight:,} tokens re-billed"
    )


def test_reread_after_a_recorded_compaction() -> None:
    s = Session()
    s.call("Read", {"file_path": "src/a.py"}, "A" * 400)
    s.say("Read it.")
    s.user("This session is being continued from a previous conversation.", is_summary=True)
    s.call("Read", {"file_path": "src/a.py"}, "A" * 400)
    s.say()
    t = s.transcript()
    # the harness compacted after request 2: segment 1 holds the summary and what follows
    cut = [m.id for m in t.messages].index("u5")
    seg1 = tuple(m.id for m in t.messages[cut:])
    t.segments = [
        Segment(index=0, message_ids=tuple(m.id for m in t.messages[:cut])),
        Segment(index=1, message_ids=seg1),
    ]
    t.requests = [
        r if r.index <= 2 else replace(r, segment=1, ledger_len=seg1.index(r.response_id or ""))
        for r in t.requests
    ]
    t.events = [
        RecordedEvent(kind=EventKind.COMPACTION, after_request=2, segment=1, trigger="auto", summary_id="u5")
    ]
    found = find_all(Replay.open(t, "opencollab", 200_000), ["reread"])
    assert [f.explanation.split(":")[0] for f in found] == [
        "re-read src/a.py at request 4 after the harness's own auto compaction before request 3 dropped it (recorded by test)"
    ]
    assert found[0].layer == "recorded:compaction"


# -- stop reason contradicts content ------------------------------------------------------------------


def test_end_turn_with_calls_is_a_contradiction() -> None:
    s = Session()
    s.call("Read", {"file_path": "a.py"}, "A", stop="end_turn")
    s.say("Done.", stop="end_turn")
    found = run(s.replay(), "stop_reason")
    assert [(f.kind, f.severity, f.request) for f in found] == [("stop_reason", "warning", 1)]
    assert found[0].explanation == (
        "the response to request 1 has stop reason end_turn but makes 1 tool call (Read a.py (whole file)); "
        "the harness ran them anyway"
    )


def test_stop_with_calls_never_answered_is_an_error() -> None:
    s = Session()
    s.call("Bash", {"command": "pytest -q"}, None, stop="stop")
    s.user("Why did you stop?")
    s.say("Sorry.", stop="stop")
    found = run(s.replay(), "stop_reason")
    assert [(f.kind, f.severity, f.request) for f in found] == [("stop_reason", "error", 1)]
    assert found[0].explanation.endswith("makes 1 tool call (Bash `pytest -q`); 1 of them never answered")


def test_tool_use_without_calls() -> None:
    s = Session()
    s.say("All done.", stop="tool_use")
    found = run(s.replay(), "stop_reason")
    assert [f.explanation for f in found] == [
        "the response to request 1 has stop reason tool_use but makes no tool call"
    ]


def test_consistent_or_absent_stop_reasons_are_fine() -> None:
    s = Session()
    s.call("Read", {"file_path": "a.py"}, "A", stop="tool_use")
    s.call("Read", {"file_path": "b.py"}, "B")  # no stop reason recorded (Claude Code 2.1.38-39)
    s.say("Done.", stop="end_turn")
    assert run(s.replay(), "stop_reason") == []


def test_unanswered_calls_mid_session_and_at_the_end() -> None:
    s = Session()
    s.call("Read", {"file_path": "a.py"}, None)
    s.user("go on")
    s.call("Grep", {"pattern": "TODO", "path": "src"}, None)
    found = run(s.replay(), "stop_reason")
    assert [(f.kind, f.severity, f.request) for f in found] == [
        ("unanswered_call", "warning", 1),
        ("unanswered_call", "info", 2),
    ]
    assert found[0].explanation == (
        "the response to request 1 ended its turn with 1 tool call never answered (Read a.py (whole file)); "
        "2 more messages followed without its result"
    )
    assert found[1].explanation == (
        "the transcript ends with 1 tool call from request 2 unanswered (Grep TODO in src): "
        "the run was cut off or is still going"
    )


# -- orphans --------------------------------------------------------------------------------------------


def test_orphan_result_in_the_ledger() -> None:
    s = Session()
    s.result("ghost", "a result whose call is nowhere")
    s.call("Read", {"file_path": "a.py"}, "A")
    s.say()
    found = run(s.replay(), "orphans")
    # once, at the first request that sent it, though requests 1 and 2 both did
    assert [(f.severity, f.request, f.message_ids) for f in found] == [("warning", 1, ("r1",))]
    assert (
        found[0].explanation
        == "request 1 was sent with a result for call ghost whose call is not in its ledger"
    )


def test_call_answered_only_later_is_an_orphan_in_the_ledger_between() -> None:
    s = Session()
    s.call("Bash", {"command": "sleep 100"}, None)
    s.say("Waiting.")
    s.result("c1", "done")
    s.say()
    found = run(s.replay(), "orphans")
    assert [(f.severity, f.request) for f in found] == [("warning", 2)]
    assert (
        found[0].explanation
        == "request 2 was sent with call c1 (Bash `sleep 100`) unanswered; its result came only at request 3"
    )
    # a call never answered at all is the stop-reason check's, not reported twice
    s2 = Session()
    s2.call("Bash", {"command": "x"}, None)
    s2.say()
    assert run(s2.replay(), "orphans") == []


def test_well_paired_sessions_have_no_orphans_even_when_layers_fire() -> None:
    s, _ = reread_session()
    assert run(s.replay(EAGER, window=40_000), "orphans") == []


class DropResults:
    """A broken layer: removes every tool result message but keeps the calls (and says so)."""

    name = "drop_results"
    label = "drop results"
    reactive = False

    def __init__(self, silent: bool = False) -> None:
        self.silent = silent

    def apply(
        self,
        view: Sequence[Message],
        budget: Budget,
        estimator: Sizer,
        *,
        forced: bool = False,
        explain: bool = True,
    ) -> LayerResult:
        sizer = memo(estimator)
        src = tuple(view)
        out = tuple(m for m in src if not m.is_tool_result)
        decisions = (
            ()
            if self.silent
            else tuple(
                Decision(m.id, self.name, Action.REMOVED, "broken", sizer.message(m), 0)
                for m in src
                if m.is_tool_result
            )
        )
        return LayerResult(
            name=self.name,
            label=self.label,
            view=out,
            tokens_before=sizer.view(src),
            tokens_after=sizer.view(out),
            fired=out != src,
            reason="broken",
            decisions=decisions,
        )


@pytest.mark.parametrize("silent", [False, True])
def test_orphans_a_layer_creates_in_the_view_are_errors(silent: bool) -> None:
    s = Session()
    s.call("Read", {"file_path": "a.py"}, "A")
    s.call("Read", {"file_path": "b.py"}, "B")
    s.say()
    replay = s.replay()
    replay.pipeline = Pipeline([*replay.pipeline.layers[:1], DropResults(silent)])
    found = run(replay, "orphans")
    assert [(f.severity, f.request, f.layer) for f in found] == [
        ("error", 2, "drop_results"),
        ("error", 3, "drop_results"),
    ]
    assert found[0].explanation == (
        "the view sent at request 2 has 1 call without a result (c1), made by drop results (opencollab); the ledger had none"
    )
    assert found[1].explanation.startswith("the view sent at request 3 has 1 call without a result (c4)")


# -- compaction storms ------------------------------------------------------------------------------------


def many_requests(n: int, usage: int | None = None) -> Session:
    s = Session()
    for i in range(n):
        s.call("Bash", {"command": f"step {i}"}, "ok", usage=usage)
    s.say()
    return s


def test_recorded_compactions_close_together_are_a_storm() -> None:
    s = many_requests(12)
    s.compaction(2, pre_tokens=167_100, summary_id="task")
    s.compaction(4, pre_tokens=168_000)
    s.compaction(10, pre_tokens=170_000)
    found = run(s.replay(), "compaction_storm")
    assert [(f.severity, f.request) for f in found] == [("warning", 3)]
    assert found[0].explanation == (
        "2 recorded compactions within 3 requests (before requests 3 and 5); pre-compaction sizes 167,100, 168,000"
    )
    assert run(s.replay(), "compaction_storm", Settings(storm_span=1)) == []
    assert len(run(s.replay(), "compaction_storm", Settings(storm_span=6))) == 1
    assert (
        "3 recorded compactions within 9 requests"
        in run(s.replay(), "compaction_storm", Settings(storm_span=6))[0].explanation
    )


def growing_session(n: int, size: int = 3_000) -> Session:
    """Each request adds a tool exchange with a `size`-char result of an edit (not clearable)."""
    s = Session()
    for i in range(n):
        s.call("Edit", {"file_path": f"f{i}.py", "old_string": "a", "new_string": "b"}, f"{i}" + "e" * size)
    s.say()
    return s


def test_simulated_snip_cutting_again_and_again_is_a_storm() -> None:
    s = growing_session(30)
    window = 20_000 + 13_000 + 12_000
    replay = s.replay("opencollab", window)
    found = run(replay, "compaction_storm")
    assert found, "the snip should cut a little more at nearly every request once over the trigger"
    first_over = next(
        k for k in range(1, len(replay) + 1) if "old_history_snip" in replay.step(k).result.fired
    )
    # once over the trigger the snip removes one more exchange at every request: 20 new cuts
    assert [(f.request, f.layer) for f in found] == [(first_over, "old_history_snip")]
    assert found[0].explanation == (
        "opencollab compacted 20 times within 20 requests (requests 12–31: old history snip ×20; "
        "46 messages newly cut); each cut breaks the prompt cache"
    )
    assert run(s.replay("opencollab", 1_000_000), "compaction_storm") == []


# -- overflow -----------------------------------------------------------------------------------------------


def test_prompt_too_long_then_compaction_and_retry() -> None:
    s = Session()
    s.call("Read", {"file_path": "a.py"}, "A", usage=190_000)
    s.api_error("Prompt is too long: 201,234 tokens > 200000 maximum")
    s.user("This session is being continued from a previous conversation.", is_summary=True)
    retry = s.say("Continuing.", usage=40_000)
    s.compaction(1, pre_tokens=201_234, post_tokens=30_000)
    replay = s.replay()
    assert len(replay) == 2  # the rejected call is no request
    found = run(replay, "overflow")
    assert [(f.kind, f.severity, f.request, f.message_ids) for f in found] == [
        ("overflow", "warning", 2, (retry,))
    ]
    assert found[0].explanation == (
        'the provider rejected the call after request 1 as too long: "Prompt is too long: 201,234 tokens > '
        '200000 maximum" (201,234 tokens against a limit of 200,000); retried at request 2 with 40,000 tokens '
        "after a recorded compaction"
    )
    # an API error that is an overflow is the overflow check's, not also an api_error finding
    assert run(replay, "api_errors") == []


def test_a_retry_with_nothing_recorded_between_and_a_compaction_before_the_error() -> None:
    s = Session()
    s.call("Read", {"file_path": "a.py"}, "A", usage=150_000)
    s.compaction(1, pre_tokens=150_000, post_tokens=20_000, line=1)  # before the error (line 4)
    s.api_error("prompt is too long: 210000 tokens > 200000 maximum")
    s.say("Ok.")  # no usage reported
    found = run(s.replay(), "overflow")
    assert [f.explanation.split("; ")[-1] for f in found if f.kind == "overflow"] == [
        "retried at request 2 (no usage reported) with no compaction in between"
    ]


def test_overflow_with_no_success_after_it_stops_the_run() -> None:
    s = Session()
    s.call("Read", {"file_path": "a.py"}, "A", usage=150_000)
    s.api_error(
        'API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":'
        '"input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000"}}'
    )
    s.user("please continue")
    s.api_error("API Error: 400 prompt is too long")
    replay = s.replay()
    assert len(replay) == 1
    found = run(replay, "overflow")
    assert [(f.kind, f.severity, f.request, f.message_ids) for f in found] == [
        ("overflow", "error", 1, ()),
        ("overflow", "error", 1, ()),
    ]
    # (findings at one request are sorted by their text: the second error's comes first)
    second, first = (f.explanation for f in found)
    assert first.startswith('the provider rejected the call after request 1 as too long: "API Error: 400 {')
    # the second call after request 1, with no request between, is the retry: rejected too
    assert first.endswith(
        "(188,240 tokens against a limit of 200,000); its retry was rejected too (the next call, with no "
        "request between)"
    )
    assert second == (
        'the provider rejected the call after request 1 as too long: "API Error: 400 prompt is too long"; '
        "overflow 2 in a row; no request succeeded after it: the run stopped here"
    )
    assert exit_code(found) == 1


def test_overflow_written_as_a_response_in_other_formats() -> None:
    # formats that write a provider error as the request's response (no API-error event)
    s = Session()
    s.call("Read", {"file_path": "a.py"}, "A", usage=150_000)
    s.say("API Error: 400 prompt is too long")
    found = run(s.replay(), "overflow")
    assert [(f.kind, f.severity, f.request, f.explanation) for f in found] == [
        (
            "overflow",
            "error",
            2,
            'the provider rejected request 2 as too long: "API Error: 400 prompt is too long"; '
            "no request succeeded after it: the run stopped here",
        )
    ]


def test_overflow_words_in_tool_output_or_a_human_turn_are_not_errors() -> None:
    s = Session("Why does the API say 'prompt is too long'?")
    s.call(
        "Grep",
        {"pattern": "prompt is too long", "path": "."},
        "errors.py:3: raise Overflow('prompt is too long')",
    )
    s.say("That string is raised in errors.py when the context_length_exceeded error comes back.")
    assert run(s.replay(), "overflow") == []


def test_three_failed_compactions_in_a_row_trip_the_breaker() -> None:
    s = Session()
    for i in range(3):
        s.call("Bash", {"command": f"work {i}"}, "ok")
        s.user("Error: Error during compaction: Error: Conversation too long.", is_meta=True)
    s.say()
    found = run(s.replay(), "overflow")
    assert [(f.kind, f.severity, f.request) for f in found] == [
        ("compaction_failed", "warning", 2),
        ("compaction_failed", "warning", 3),
        ("circuit_breaker", "error", 4),
        ("compaction_failed", "warning", 4),
    ]
    assert found[0].explanation == (
        'a compaction failed at request 2: "Error: Error during compaction: Error: Conversation too long."'
    )
    assert found[2].explanation == (
        "3 failed compactions in a row (requests 2, 3 and 4): the circuit breaker trips and the harness stops compacting"
    )


def test_two_failures_or_a_success_between_do_not_trip_it() -> None:
    s = Session()
    for i in range(3):
        s.call("Bash", {"command": f"work {i}"}, "ok")
        s.user("Error: Error during compaction: Error: Conversation too long.", is_meta=True)
    s.say()
    s.compaction(2, pre_tokens=170_000, post_tokens=30_000)  # a success between the 1st and 2nd
    found = run(s.replay(), "overflow")
    assert kinds(found) == ["compaction_failed"] * 3


def test_a_compaction_that_kept_everything_counts_as_failed() -> None:
    s = many_requests(5)
    s.compaction(1, pre_tokens=100_000, post_tokens=100_000)
    found = run(s.replay(), "overflow")
    assert [(f.kind, f.request, f.explanation) for f in found] == [
        (
            "compaction_failed",
            2,
            "a compaction failed at request 2: compaction kept 100,000 of 100,000 tokens",
        )
    ]


def test_simulated_auto_compact_stuck_above_the_trigger() -> None:
    s = Session("x" * 30_000)  # a pinned task bigger than the trigger: nothing can be folded
    for i in range(5):
        s.call("Bash", {"command": f"echo {i}"}, "ok")
    s.say()
    window = 20_000 + 13_000 + 5_000
    found = run(s.replay("opencollab", window), "overflow")
    assert kinds(found) == ["circuit_breaker"]
    f = found[0]
    assert (f.severity, f.request, f.layer) == ("warning", 1, "auto_compact")
    assert f.explanation.startswith(
        "opencollab's auto compact stayed above the trigger 5,000 at 6 requests in a row (requests 1–6; up to "
    )
    assert f.explanation.endswith("a harness with a circuit breaker stops compacting after 3")
    assert run(s.replay("opencollab", 200_000), "overflow") == []


# -- API errors ---------------------------------------------------------------------------------------------


def test_every_api_error_is_its_own_finding_where_it_happened() -> None:
    s = Session()
    s.call("Bash", {"command": "pytest"}, "ok", usage=20_000)
    s.api_error('API Error: 529 {"type":"overloaded_error","message":"Overloaded"}')
    s.api_error("API Error: Connection error.")
    s.call("Bash", {"command": "pytest -x"}, "ok", usage=21_000)
    s.say("Done.", usage=22_000)
    s.api_error("5-hour limit reached \u2219 resets 9pm")
    s.api_error(None)
    replay = s.replay()
    assert len(replay) == 3  # no failed call is a request
    found = run(replay, "api_errors")
    assert [(f.kind, f.severity, f.request, f.message_ids, f.explanation) for f in found] == [
        (
            "api_error",
            "info",
            2,
            (),
            'the call after request 1 failed: "API Error: 529 {"type":"overloaded_error","message":"Overloaded"}"; '
            "the next call failed too",
        ),
        (
            "api_error",
            "info",
            2,
            (),
            'the call after request 1 failed: "API Error: Connection error."; API error 2 in a row; '
            "the next request (2) went through",
        ),
        (
            "api_error",
            "warning",
            3,
            (),
            'the call after request 3 failed: "5-hour limit reached \u2219 resets 9pm"; the next call failed too',
        ),
        (
            "api_error",
            "warning",
            3,
            (),
            "the call after request 3 failed: (no error text recorded); API error 2 in a row; "
            "no request after it: the session ends here",
        ),
    ]
    assert exit_code(found) == 0


def test_api_error_text_is_quoted_not_raw() -> None:
    s = Session()
    s.api_error("API Error: \x1b[31mboom\x1b[0m\nsecond line " + "x" * 200)
    s.say("Ok.", usage=1_000)
    [f] = run(s.replay(), "api_errors")
    assert f.request == 1 and f.severity == "info"
    assert f.explanation.startswith("the first call failed: ")
    # control characters made visible, whitespace squeezed to one line, cut to 80 characters
    assert "\x1b" not in f.explanation and "\n" not in f.explanation
    assert '"API Error: \\x1b[31mboom\\x1b[0m second line xxx' in f.explanation
    quoted = f.explanation.split('"')[1]
    assert len(quoted) == 80 and quoted.endswith("…")
    assert f.explanation.endswith("; the next request (1) went through")


def test_an_api_error_inserted_in_a_real_session(tmp_path: Path) -> None:
    original = corpus_file("claude-code/applabnl-a9185eb7.jsonl")
    recs = [json.loads(line) for line in original.read_text().splitlines() if line.strip()]
    # a real prompt: the call it led to was rejected (overloaded); the answer hangs off the error
    at = next(
        i
        for i, r in enumerate(recs)
        if r.get("type") == "user" and isinstance(r["message"].get("content"), str) and i > 5
    )
    child = next(i for i in range(at + 1, len(recs)) if recs[i].get("parentUuid") == recs[at]["uuid"])
    error = {
        "parentUuid": recs[at]["uuid"],
        "isSidechain": False,
        "type": "assistant",
        "uuid": "11111111-2222-4333-8444-555555555555",
        "sessionId": recs[at]["sessionId"],
        "timestamp": recs[at]["timestamp"],
        "message": {
            "id": "e8a8302f-dff7-4a50-9e13-b9ed31ab31eb",
            "model": "<synthetic>",
            "role": "assistant",
            "type": "message",
            "usage": {"input_tokens": 0, "output_tokens": 0},
            "content": [{"type": "text", "text": "API Error: 529 overloaded_error"}],
        },
        "isApiErrorMessage": True,
    }
    recs[child] = dict(recs[child], parentUuid=error["uuid"])
    recs.insert(at + 1, error)
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps(r) + "\n" for r in recs))
    before = load(original)
    replay = Replay.open(load(edited))
    assert len(replay) == len(before.requests)
    k = next(e.after_request for e in replay.transcript.events if e.kind is EventKind.API_ERROR)
    assert 1 <= k < len(replay)
    found = find_all(replay)
    assert [(f.severity, f.request, f.explanation) for f in found if f.kind == "api_error"] == [
        (
            "info",
            k + 1,
            f'the call after request {k} failed: "API Error: 529 overloaded_error"; '
            f"the next request ({k + 1}) went through",
        )
    ]
    # the other findings are those of the file without the error line
    assert [(f.kind, f.request) for f in found if f.kind != "api_error"] == [
        (f.kind, f.request) for f in find_all(Replay.open(before))
    ]


# -- loops --------------------------------------------------------------------------------------------------


def test_same_call_three_times_within_ten_requests() -> None:
    s = Session()
    for i in range(3):
        s.call("Grep", {"path": "src", "pattern": "TODO"}, "src/a.py:1: TODO")
        s.call("Read", {"file_path": f"src/x{i}.py"}, "x")
    s.say()
    found = run(s.replay(), "loops")
    assert [(f.severity, f.request) for f in found] == [("warning", 1)]
    assert found[0].explanation == (
        "Grep TODO in src called 3 times with the same arguments within 5 requests (requests 1, 3 and 5), "
        "identical results each time"
    )
    assert found[0].message_ids == ("a2", "a8", "a14")


def test_argument_order_does_not_matter_but_values_do() -> None:
    s = Session()
    s.call("Grep", {"path": "src", "pattern": "TODO"}, "hit")
    s.call("Grep", {"pattern": "TODO", "path": "src"}, "hit")
    s.call("Grep", {"pattern": "FIXME", "path": "src"}, "hit")
    s.say()
    assert run(s.replay(), "loops") == []
    s.call("Grep", {"pattern": "TODO", "path": "src"}, "hit")
    s.say()
    assert len(run(s.replay(), "loops")) == 1


def test_repeats_spread_over_more_than_the_span_are_not_a_loop() -> None:
    s = Session()
    for i in range(3):
        s.call("Bash", {"command": "git status"}, "clean")
        for j in range(5):
            s.call("Read", {"file_path": f"f{i}{j}.py"}, "x")
    s.say()
    assert run(s.replay(), "loops") == []
    assert len(run(s.replay(), "loops", Settings(loop_span=13))) == 1


def test_repeats_with_edits_between_or_changing_results_are_info() -> None:
    s = Session()
    for i in range(3):
        s.call("Bash", {"command": "pytest -q"}, f"{3 - i} failed")
        s.call("Edit", {"file_path": "a.py", "old_string": f"v{i}", "new_string": f"v{i + 1}"}, "ok")
    s.say()
    found = run(s.replay(), "loops")
    assert [(f.severity, f.explanation) for f in found] == [
        (
            "info",
            "Bash `pytest -q` called 3 times with the same arguments within 5 requests (requests 1, 3 and 5), "
            "3 different results, 2 file edits in between",
        )
    ]


# -- pressure -----------------------------------------------------------------------------------------------


def test_requests_above_the_trigger_and_the_closest_approach() -> None:
    s = Session()
    for size in (100_000, 168_000, 171_204, 120_000, 169_000):
        s.call("Bash", {"command": "x"}, "ok", usage=size)
    s.say()
    found = run(s.replay(), "pressure")
    assert [(f.severity, f.request) for f in found] == [("warning", 2), ("info", 3), ("warning", 5)]
    assert found[0].explanation == (
        "requests 2–3 (2) were sent above the trigger 167,000 by the provider's own report "
        "(peak 171,204 at request 3, 4,204 over)"
    )
    assert found[1].explanation == (
        "closest approach to the trigger 167,000: request 3 held 171,204 tokens, 4,204 over it (2.1% of the window); "
        "28,796 to window 200,000 (the request filled 85.6% of the window)"
    )
    assert found[2].explanation.startswith("request 5 was sent above the trigger 167,000")
    assert found[1].tokens == 171_204


def test_above_the_window_is_an_error_and_a_blocking_line_is_used_when_the_policy_has_one() -> None:
    s = Session()
    for size in (150_000, 178_000, 205_000):
        s.call("Bash", {"command": "x"}, "ok", usage=size)
    s.say()
    found = run(s.replay(), "pressure")
    assert [(f.severity, f.request) for f in found] == [("error", 2), ("info", 3)]
    assert found[0].explanation.endswith(
        "(peak 205,000 at request 3, 38,000 over); 5,000 over the 200,000 window"
    )
    assert found[1].explanation.endswith("5,000 over window 200,000 (the request filled 102.5% of the window)")
    blocking = replace(OPENCOLLAB, name="with-blocking", blocking_buffer=3_000)
    found = run(s.replay(blocking), "pressure")
    assert found[0].explanation.startswith("requests 2–3 (2) were sent above the blocking line 177,000")


def test_below_the_lines_only_the_closest_approach() -> None:
    s = Session()
    s.call("Bash", {"command": "x"}, "ok", usage=40_000)
    s.say(usage=42_000)
    found = run(s.replay(), "pressure")
    assert [(f.severity, f.request, f.explanation) for f in found] == [
        (
            "info",
            2,
            "closest approach to the trigger 167,000: request 2 held 42,000 tokens, 125,000 to spare (62.5% of the "
            "window); 158,000 to window 200,000 (the request filled 21.0% of the window)",
        )
    ]


def test_no_reports_uses_the_calibrated_estimate() -> None:
    s = Session()
    s.call("Bash", {"command": "x"}, "ok")
    s.say()
    replay = s.replay(window=None)
    found = run(replay, "pressure")
    peak = max(replay.contexts())
    assert len(found) == 1 and found[0].tokens == peak
    assert "an estimated" in found[0].explanation


# -- all checks, one pass ---------------------------------------------------------------------------------


def test_find_all_sorts_by_request_and_shapes_each_request_once(monkeypatch: pytest.MonkeyPatch) -> None:
    s = growing_session(40)
    s.call("Bash", {"command": "ls"}, "a b c", usage=300_000)
    s.api_error("Prompt is too long")
    replay = s.replay(EAGER, 20_000 + 13_000 + 12_000)
    runs: list[int] = []
    original = replay.pipeline.run

    def counting(*args: Any, **kwargs: Any) -> Any:
        runs.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(replay.pipeline, "run", counting)
    found = find_all(replay)
    assert len(runs) == len(replay)
    assert [f.request for f in found] == sorted(f.request for f in found)
    assert {"compaction_storm", "overflow", "pressure"} <= set(kinds(found))
    assert exit_code(found) == 1


def test_requests_no_layer_fires_at_are_not_shaped_and_change_no_finding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = Session()
    for i in range(30):
        s.call("Read", {"file_path": f"src/{i % 7}.py"}, f"{i}" + "x" * 6_000)
    s.say()
    replay = s.replay("claude-code", 60_000)
    assert replay.budget.trigger == 27_000
    quiet = {k: replay.quiet(k) for k in range(1, len(replay) + 1)}
    # under the trigger no layer fires (known without shaping, with the ledger's estimate); from
    # request 14 on microcompact clears old reads
    assert [k for k, total in quiet.items() if total is not None] == list(range(1, 14))
    for k, total in quiet.items():
        result = replay.step(k).result
        assert (total is not None) == (result.fired == ()), k
        if total is not None:
            assert total == result.input_tokens == result.sent_tokens <= 27_000
    fresh = s.replay("claude-code", 60_000)
    shaped: list[int] = []
    step = fresh.step

    def counted(k: int) -> Step:
        shaped.append(k)
        return step(k)

    monkeypatch.setattr(fresh, "step", counted)
    found = find_all(fresh)
    assert shaped == list(range(14, 32))
    every = s.replay("claude-code", 60_000)
    monkeypatch.setattr(every, "quiet", lambda k: None)
    assert found == find_all(every)
    assert kinds(found).count("reread") == 17


def test_a_harness_that_sizes_by_itself_is_quiet_where_its_own_estimate_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An OpenCollab run: its layers decide with OpenCollab's own estimate (`Replay.decides_as_harness`),
    so `quiet` asks them with it; a quiet request gives what shaping it gives (nothing fired, the
    calibrated ledger's weight in and out), and the findings are those of shaping every request."""
    import inspector.samples as samples

    path = Path(samples.__file__).parent / "opencollab-run"
    replay = Replay.open(load(str(path)), policy="opencollab")
    assert replay.decides_as_harness and len(replay) == 28
    quiet = {k: replay.quiet(k) for k in range(1, len(replay) + 1)}
    assert sum(total is not None for total in quiet.values()) == 4
    for k, total in quiet.items():
        result = replay.step(k).result
        if total is not None:
            assert result.fired == () and total == result.input_tokens == result.sent_tokens, k
    found = find_all(Replay.open(load(str(path)), policy="opencollab"))
    every = Replay.open(load(str(path)), policy="opencollab")
    monkeypatch.setattr(every, "quiet", lambda k: None)
    assert found == find_all(every) and found


def test_checks_without_shaping_shape_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    s, _ = reread_session()
    replay = s.replay()
    monkeypatch.setattr(replay, "step", lambda k: pytest.fail("shaped"))
    find_all(replay, ["stop_reason", "loops", "pressure"])
    facts = Facts(replay)
    assert facts.reads_again and facts.n == len(replay)


# -- the real corpus ----------------------------------------------------------------------------------------


def corpus_findings(relative: str, policy: str | None = None, window: int | None = None) -> list[Finding]:
    return find_all(Replay.open(load(corpus_file(relative)), policy, window))


def test_every_claude_code_corpus_file_runs() -> None:
    files = claude_code_corpus()
    if not files:
        pytest.skip("real transcript corpus not found (present in CI, absent on a fresh clone)")
    for path in files:
        replay = Replay.open(load(path))
        found = find_all(replay)
        assert all(1 <= f.request <= len(replay) for f in found), path.name
        # exactly one closest-approach finding per file with requests
        assert len([f for f in found if f.kind == "pressure" and f.severity == "info"]) == 1, path.name
        json.dumps(findings_json(found))


def test_spotter_fa812bfe_under_opencollab() -> None:
    found = corpus_findings("claude-code/spotter-fa812bfe/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl")
    # request 126 is the last before the auto compaction (preTokens 167,117): 166,874 reported
    assert [(f.kind, f.severity, f.request) for f in found] == [
        ("pressure", "info", 126),
        ("loop", "info", 127),
    ]
    assert found[0].explanation == (
        "closest approach to the trigger 167,000: request 126 held 166,874 tokens, 126 to spare (0.06% of the window); "
        "10,126 to blocking 177,000, 33,126 to window 200,000 (the request filled 83.4% of the window)"
    )
    # lines 1590, 1655, 1690: `mix compile 2>&1` three times, Edits of pane_list_live.ex and
    # session_live_test.exs (lines 1609, 1632, 1677) in between
    assert found[1].explanation == (
        "Bash `mix compile 2>&1` called 3 times with the same arguments within 10 requests "
        "(requests 127, 132 and 136), identical results each time, 4 file edits in between"
    )


def test_spotter_fa812bfe_in_a_100k_window_rereads_what_tool_output_clear_cleared() -> None:
    found = corpus_findings(
        "claude-code/spotter-fa812bfe/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl", "opencollab", 100_000
    )
    rereads = only(found, "reread")
    # line 773 reads sync_transcripts_test.exs whole (request 51, 12,030 chars); tool output clear
    # clears it from request 60 (6th most recent compactable result, 5 kept); line 995 reads lines
    # 100-129 of it again (request 73, sent with request 74)
    assert [f.request for f in rereads] == [74]
    assert rereads[0].explanation.startswith(
        "re-read /home/USER/projects/spotter-worktrees/spotter-a0y/test/spotter/transcripts/jobs/"
        "sync_transcripts_test.exs at request 74 after tool output clear cleared it at request 60 (opencollab): "
    )
    storms = only(found, "compaction_storm")
    assert storms and all("old history snip" in f.explanation for f in storms)
    assert next(f.severity for f in only(found, "pressure")) == "error"  # 166,874 > the 100,000 window


def test_acompact_call_was_sent_above_the_trigger() -> None:
    found = corpus_findings(
        "claude-code/spotter-fa812bfe/subagents/agent-acompact-70d8e7.jsonl", "opencollab"
    )
    # the compaction call itself: 169,290 tokens reported, above 167,000
    assert [(f.kind, f.severity, f.request) for f in found] == [
        ("pressure", "warning", 1),
        ("pressure", "info", 1),
    ]
    assert "(peak 169,290 at request 1, 2,290 over)" in found[0].explanation


@pytest.mark.parametrize(
    ("relative", "peak_at", "held"),
    [
        ("claude-code/spotter-short.jsonl", 1, 25_353),
        ("claude-code/fasthooks-manual-compact.jsonl", 12, 21_331),
        ("claude-code/tail-claude-mcp-tools.jsonl", 3, 43_130),
        ("claude-code/claude-code-viewer-inline-sidechains.jsonl", 9, 21_552),
        ("claude-code/claude-code-log-dag-compact-after-rewind.jsonl", 1, 10),
        ("claude-code/spotter-fa812bfe/subagents/agent-a93ccab.jsonl", 11, 45_627),
    ],
)
def test_quiet_corpus_files_only_report_their_peak(relative: str, peak_at: int, held: int) -> None:
    # spotter-short: rejected tool uses are answered (is_error results), then an interrupt;
    # tail-claude: stop reasons tool_use (with a call) and end_turn (without): consistent
    found = corpus_findings(relative)
    assert [(f.kind, f.severity, f.request, f.tokens) for f in found] == [("pressure", "info", peak_at, held)]


def test_corpus_under_the_claude_code_policy() -> None:
    found = corpus_findings(
        "claude-code/spotter-fa812bfe/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl", "claude-code", None
    )
    assert ("loop", 127) in [(f.kind, f.request) for f in found]
    assert exit_code(found) == 0
