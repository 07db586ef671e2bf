"""The harness presets (claude-code, opencode, codex): their budgets, their layers, with numbers,
and the DESIGN §2.3 invariants over generated ledgers (strategies from test_shaping_properties)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Unpack

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec.structs import replace

from inspector.formats.detect import load
from inspector.model import (
    CONVERSATION,
    Message,
    Role,
    Source,
    SourceKind,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from inspector.shaping import (
    CLAUDE_CODE,
    CLAUDE_CODE_TOOLS,
    CLEARED_CONTENT,
    CODEX,
    OPENCODE,
    PRESETS,
    TRIGGER_ESTIMATORS,
    Action,
    Budget,
    CodexCompact,
    ExtractiveSummarizer,
    FullCompact,
    LargeResultPreview,
    Layer,
    Microcompact,
    MiddleTruncate,
    OpencodeCompact,
    OpencodePrune,
    Policy,
    explain,
    idle_minutes,
    load_policy,
    preset,
    preset_for_format,
    truncate_middle,
    unpaired,
)
from inspector.shaping.claude_code import PERSISTED_OPEN, PREVIEW_CHARS
from inspector.shaping.codex import SUMMARY_PREFIX as CODEX_PREFIX
from inspector.shaping.codex import approx_tokens
from inspector.shaping.opencode import token_estimate
from inspector.shaping.pinning import FLOOR
from inspector.tokens import HeuristicEstimator
from inspector.tokens.harness import ESTIMATORS, harness_window
from tests.support.typed import MessageExtras
from tests.unit.test_shaping_properties import (
    SETTINGS,
    WINDOWS,
    BloatedSummarizer,
    CharsOverFour,
    budgets,
    check_view,
    estimators,
    ledgers,
    total,
)

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
EST = HeuristicEstimator()


def corpus(relative: str) -> Path:
    path = CORPUS / relative
    if not path.exists():
        pytest.skip(f"real transcript corpus not found at {CORPUS}")
    return path


class Chat:
    """A small ledger builder with timestamps (one minute apart unless told otherwise)."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._ids = itertools.count(1)
        self.clock = datetime(2026, 2, 12, 10, 0, tzinfo=UTC)

    def _stamp(self, gap_minutes: float) -> str:
        self.clock += timedelta(minutes=gap_minutes)
        return self.clock.isoformat().replace("+00:00", "Z")

    def add(self, m: Message) -> Message:
        self.messages.append(m)
        return m

    def system(self) -> Message:
        return self.add(
            Message(
                id="sys",
                role=Role.SYSTEM,
                blocks=(TextBlock(text="You are a coding agent."),),
                source=Source.of(SourceKind.IDENTITY),
            )
        )

    def user(
        self, text: str, gap: float = 1, source: Source = CONVERSATION, **kw: Unpack[MessageExtras]
    ) -> Message:
        return self.add(
            Message(
                id=f"u{next(self._ids)}",
                role=Role.USER,
                blocks=(TextBlock(text=text),),
                timestamp=self._stamp(gap),
                source=source,
                **kw,
            )
        )

    def say(self, text: str, gap: float = 1) -> Message:
        return self.add(
            Message(
                id=f"a{next(self._ids)}",
                role=Role.ASSISTANT,
                blocks=(TextBlock(text=text),),
                timestamp=self._stamp(gap),
            )
        )

    def call(
        self,
        tool: str,
        content: str,
        args: dict[str, object] | None = None,
        gap: float = 1,
        source: Source | None = None,
        error: bool = False,
    ) -> tuple[Message, Message]:
        n = next(self._ids)
        leader = self.add(
            Message(
                id=f"a{n}",
                role=Role.ASSISTANT,
                blocks=(
                    ToolCallBlock(
                        id=f"call{n}", name=tool, arguments=dict(args or {"file_path": f"f{n}.py"})
                    ),
                ),
                timestamp=self._stamp(gap),
            )
        )
        result = self.add(
            Message(
                id=f"r{n}",
                role=Role.USER,
                blocks=(ToolResultBlock(call_id=f"call{n}", content=content, is_error=error),),
                timestamp=self._stamp(0.1),
                source=source or Source.of(SourceKind.TOOL_OUTPUT),
            )
        )
        return leader, result


def result_text(m: Message) -> str:
    (b,) = m.tool_results
    return b.content


def window_for(view: Sequence[Message], policy: Policy, below: int = 1) -> Budget:
    """A budget under `policy` whose trigger sits at least `below` tokens under the view's
    estimate: the largest window whose trigger does (the trigger grows with the window)."""
    want = total(view, EST) - below
    low, high = 1, 8 * want + 100_000
    while low < high:
        mid = (low + high + 1) // 2
        if policy.budget(mid).trigger <= want:
            low = mid
        else:
            high = mid - 1
    return policy.budget(low)


# --- presets and budgets ----------------------------------------------------------------------


def test_harness_presets_are_registered_with_their_estimators() -> None:
    assert {"claude_code", "opencode", "codex"} <= set(PRESETS)
    assert load_policy("claude-code") is CLAUDE_CODE
    assert load_policy("Claude") is CLAUDE_CODE
    assert preset("OPENCODE") is OPENCODE
    assert preset("codex") is CODEX
    assert CLAUDE_CODE.trigger_estimator == "claude_code"
    assert OPENCODE.trigger_estimator == "opencode"
    assert CODEX.trigger_estimator == "codex"
    assert load_policy("opencollab").trigger_estimator == "heuristic"
    assert set(TRIGGER_ESTIMATORS) == set(ESTIMATORS)
    assert preset_for_format("claude-code") is CLAUDE_CODE
    assert preset_for_format("codex") is CODEX
    assert preset_for_format("opencode") is OPENCODE
    assert preset_for_format("generic").name == "opencollab"
    assert preset_for_format(None).name == "opencollab"
    with pytest.raises(ValueError):
        Policy(name="x", layers=(), trigger_estimator="tiktoken")


def test_claude_code_budget_at_200k() -> None:
    b = CLAUDE_CODE.budget(200_000)
    assert (b.trigger, b.blocking, b.output_reserve, b.safety_buffer) == (167_000, 177_000, 20_000, 13_000)
    assert b.results_kept == 5
    assert ("blocking", 177_000) in b.lines() and ("trigger", 167_000) in b.lines()
    # effective = window - min(max output, 20,000): a model with 8,000 of output reserves less
    small = replace(CLAUDE_CODE, max_output=8_000).budget(200_000)
    assert (small.trigger, small.blocking) == (179_000, 189_000)
    assert CLAUDE_CODE.budget(1_000_000).trigger == 967_000


def test_opencode_budget_is_usable_context() -> None:
    # the newest rule (1.18.x, overflow.ts @31e22f65): context - min(max output, 32,000) - min(20,000, it)
    b = OPENCODE.budget(200_000)
    assert b.trigger == 148_000
    capped = replace(OPENCODE, max_output=4_096).budget(200_000)
    assert capped.trigger == 200_000 - 4_096 - 4_096
    # the compaction.ts era (0.6-1.1): context - min(max output, 32,000)
    assert OPENCODE.budget(200_000, version="1.1.3").trigger == 168_000
    # mid 2025: 0.9 x (context - min(max output, 32,000))
    assert OPENCODE.budget(200_000, version="0.4.0").trigger == 151_200


def test_codex_trigger_is_90_percent_of_the_window() -> None:
    transcript = load(corpus("codex/lazyagents-codex-0.158.0-rollout.jsonl"))
    assert transcript.window == 258_400
    b = CODEX.budget(transcript.window)
    assert b.trigger == 232_560 == 258_400 * 9 // 10
    assert b.trigger + b.safety_buffer + b.output_reserve == 258_400
    # Codex's own line: 90% of the model's window, which the rollout states at 95%
    assert harness_window(transcript) == 272_000
    assert CODEX.budget(harness_window(transcript)).trigger == 244_800
    assert CODEX.budget(None).trigger == 120_000


# --- Claude Code: large-result preview ---------------------------------------------------------


def test_results_over_50000_chars_become_a_2kb_preview() -> None:
    chat = Chat()
    chat.user("go")
    _, big = chat.call("Bash", "".join(f"line {i}\n" for i in range(8_000)))  # 78,890 chars
    _, fits = chat.call("Bash", "x" * 50_000)
    budget = CLAUDE_CODE.budget(200_000)
    assert budget.tool_result_budget == 50_000
    result = LargeResultPreview().apply(chat.messages, budget, EST)
    out = {m.id: m for m in result.view}
    text = result_text(out[big.id])
    assert text.startswith(PERSISTED_OPEN + "\nOutput too large (")
    assert "Full output saved to: tool-results/call" in text and "Preview (first 2KB):\n" in text
    preview = text.split("Preview (first 2KB):\n", 1)[1].rsplit("\n...\n", 1)[0]
    assert 1_000 <= len(preview) <= PREVIEW_CHARS and result_text(big).startswith(preview)
    assert len(text) < 2_300
    assert out[fits.id] == fits  # exactly 50,000 is not over
    assert result.truncated == 1 and result.decisions[0].action is Action.TRUNCATED
    assert "78,890 chars over 50,000" in result.decisions[0].reason
    assert not LargeResultPreview().apply(result.view, budget, EST).fired


# --- Claude Code: microcompact ------------------------------------------------------------------


def microcompact_chat(gap: float) -> tuple[Chat, list[Message]]:
    chat = Chat()
    chat.system()
    chat.user("fix it", source=Source.of(SourceKind.TASK))
    results = []
    for tool in ("Read", "Bash", "Grep", "Glob", "WebSearch", "WebFetch", "Edit", "Write"):
        results.append(chat.call(tool, f"{tool} output " + "z" * 600)[1])
    chat.call("Task", "subagent conclusion " + "y" * 600)
    chat.say("done for now")
    chat.user("and now?", gap=gap)
    return chat, results


def test_microcompact_keeps_the_5_most_recent_compactable_results_under_pressure() -> None:
    chat, results = microcompact_chat(gap=2)
    budget = window_for(chat.messages, CLAUDE_CODE)
    layer = Microcompact(CLAUDE_CODE_TOOLS, idle_gap_minutes=60)
    result = layer.apply(chat.messages, budget, EST)
    out = {m.id: m for m in result.view}
    assert [result_text(out[r.id]) == CLEARED_CONTENT for r in results] == [True] * 3 + [False] * 5
    task_result = chat.messages[-3]
    assert out[task_result.id] == task_result  # Task (AgentTool) output is not compactable
    assert result.cleared == 3 and result.reason.startswith("estimate ")
    assert "kept the 5 most recent" in result.reason
    assert not unpaired(result.view)
    assert not layer.apply(result.view, budget, EST).fired


def test_microcompact_fires_on_an_idle_gap_below_the_trigger() -> None:
    budget = CLAUDE_CODE.budget(200_000)
    layer = Microcompact(CLAUDE_CODE_TOOLS, idle_gap_minutes=60)
    busy, _ = microcompact_chat(gap=30)
    assert idle_minutes(busy.messages) == pytest.approx(30)
    quiet = layer.apply(busy.messages, budget, EST)
    assert not quiet.fired and "30 min since the last assistant message" in quiet.reason
    idle, results = microcompact_chat(gap=75)
    assert total(idle.messages, EST) < budget.trigger
    result = layer.apply(idle.messages, budget, EST)
    assert result.fired and result.cleared == 3 and not result.forced
    assert result.reason.startswith("idle 75 min since the last assistant message > 60-min cache lifetime")
    cleared = [d for d in result.decisions if d.action is Action.CLEARED]
    assert [d.message_id for d in cleared] == [r.id for r in results[:3]]
    assert all(d.reason.startswith("idle 75 min") for d in cleared)
    assert not layer.apply(result.view, budget, EST).fired
    assert not Microcompact(CLAUDE_CODE_TOOLS, idle_gap_minutes=None).apply(idle.messages, budget, EST).fired


# --- Claude Code: full compaction -----------------------------------------------------------------


def full_chat() -> tuple[Chat, dict[str, Message]]:
    chat = Chat()
    chat.system()
    task = chat.user("refactor the parser", source=Source.of(SourceKind.TASK))
    named: dict[str, Message] = {"task": task}
    for k in range(7):
        named[f"read{k}"] = chat.call(
            "Read",
            f"contents of file {k}\n" + "a" * (3_000 + 40_000 * (k == 2)),
            {"file_path": f"src/f{k}.py"},
        )[1]
        chat.say(f"read file {k}")
    named["again"] = chat.call("Read", "contents of file 6 again", {"file_path": "src/f6.py"})[1]
    chat.user("continue")
    return chat, named


def test_full_compact_folds_the_conversation_and_restores_recent_files() -> None:
    chat, named = full_chat()
    budget = window_for(chat.messages, CLAUDE_CODE)
    layer = FullCompact(ExtractiveSummarizer())
    result = layer.apply(chat.messages, budget, EST)
    assert result.fired
    ids = [m.id for m in result.view]
    # group 0 stays; the task does not: Claude Code protects memory and skills, not the task, which
    # only its summary carries on (issue 30: priorities follow the policy)
    assert ids[0] == "sys" and named["task"].id not in ids
    summary = result.view[1]
    assert summary.is_summary and summary.text.startswith("This session is being continued")
    restored = list(result.view[2:])
    # files 0..5 were read in the folded part; file 6 is read again there too (the latest read wins);
    # at most 5, most recently read first, each at most 5,000 tokens
    paths = [m.text.split("]\n", 1)[0].removeprefix("[File restored after compaction: ") for m in restored]
    assert paths == ["src/f6.py", "src/f5.py", "src/f4.py", "src/f3.py", "src/f2.py"]
    assert restored[0].text.endswith("contents of file 6 again")
    assert all(EST.message(m) <= 5_000 + 100 for m in restored)
    assert "[... truncated to 5,000 tokens]" in restored[4].text  # file 2 was ~43,000 chars
    assert sum(EST.message(m) for m in restored) <= 50_000
    assert result.summarized == len(chat.messages) - 1
    assert result.tokens_after < result.tokens_before
    assert not unpaired(result.view)
    assert not layer.apply(result.view, budget, EST).fired


class Flaky:
    name = "flaky"

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def summarize(self, messages: Sequence[Message]) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise RuntimeError("prompt is too long")
        return "what happened so far"


def test_full_compact_circuit_breaker_after_3_failures() -> None:
    chat, _ = full_chat()
    budget = window_for(chat.messages, CLAUDE_CODE)
    broken = Flaky(failures=10)
    result = FullCompact(broken).apply(chat.messages, budget, EST)
    assert not result.fired and broken.calls == 3
    assert "circuit breaker open: 3 consecutive summary failures" in result.reason
    recovers = Flaky(failures=2)
    assert FullCompact(recovers).apply(chat.messages, budget, EST).fired and recovers.calls == 3
    off = FullCompact(None).apply(chat.messages, budget, EST)
    assert not off.fired and off.reason == "off: no summarizer configured"
    under = FullCompact(ExtractiveSummarizer()).apply(chat.messages, CLAUDE_CODE.budget(1_000_000), EST)
    assert not under.fired and "under trigger 967,000" in under.reason


def test_claude_code_pipeline_under_pressure_runs_cheap_layers_first() -> None:
    chat, _ = microcompact_chat(gap=2)
    budget = window_for(chat.messages, CLAUDE_CODE, below=50)
    result = CLAUDE_CODE.pipeline().run(chat.messages, budget, EST)
    assert result.fired == ("microcompact",)  # clearing got it under: no compaction
    assert result.layer("full_compact").reason.endswith(f"under trigger {budget.trigger:,}")


# --- opencode: prune -------------------------------------------------------------------------------


def prune_chat(old_results: int, skill_at: int | None = None) -> tuple[Chat, list[Message]]:
    """A first turn with `old_results` tool outputs of exactly 10,000 tokens (chars/4), then the
    last two user turns, each with one more 10,000-token output."""
    chat = Chat()
    chat.system()
    chat.user("start")
    results = []
    for k in range(old_results):
        tool = "skill" if k == skill_at else "bash"
        results.append(chat.call(tool, "o" * 40_000, {"command": f"cmd {k}"})[1])
    chat.user("second to last turn")
    results.append(chat.call("bash", "p" * 40_000)[1])
    chat.user("last turn")
    results.append(chat.call("bash", "q" * 40_000)[1])
    return chat, results


def test_opencode_prune_needs_more_than_20000_tokens_freed() -> None:
    assert token_estimate("o" * 40_000) == 10_000
    budget = OPENCODE.budget(200_000)
    # six old outputs: 40,000 protected, 20,000 beyond it: not more than PRUNE_MINIMUM
    chat, _ = prune_chat(6)
    result = OpencodePrune().apply(chat.messages, budget, EST)
    assert not result.fired
    assert result.reason == (
        "60,000 tokens of tool output (chars/4) before the last 2 user turns; 20,000 beyond the newest 40,000, "
        "not more than the 20,000 minimum: nothing pruned"
    )
    # seven: 30,000 beyond the newest 40,000: the three oldest are pruned
    chat, results = prune_chat(7)
    result = OpencodePrune().apply(chat.messages, budget, EST)
    out = {m.id: m for m in result.view}
    cleared = [result_text(out[r.id]) == CLEARED_CONTENT for r in results]
    assert cleared == [True, True, True, False, False, False, False, False, False]
    assert result.cleared == 3
    assert "30,000 beyond the newest 40,000, over the 20,000 minimum" in result.reason
    kept_newest = sum(token_estimate(result_text(out[r.id])) for r in results[3:7])
    assert kept_newest == 40_000
    # the last two user turns are never pruned, whatever their size
    assert [result_text(out[r.id])[0] for r in results[7:]] == ["p", "q"]
    assert not unpaired(result.view)
    again = OpencodePrune().apply(result.view, budget, EST)
    assert not again.fired and "stopped at output pruned before" in again.reason


def test_opencode_prune_never_prunes_skill_output() -> None:
    budget = OPENCODE.budget(200_000)
    chat, results = prune_chat(8, skill_at=0)
    result = OpencodePrune().apply(chat.messages, budget, EST)
    out = {m.id: m for m in result.view}
    assert result_text(out[results[0].id]) == "o" * 40_000  # the skill's output stays
    # the skill output is not counted either: 7 outputs walked, 30,000 beyond the newest 40,000
    expected = [False, True, True, True, False, False, False, False]
    assert [result_text(out[r.id]) == CLEARED_CONTENT for r in results[:8]] == expected
    assert "70,000 tokens of tool output" in result.reason
    # a pinned result (skill bodies are pinned by the readers) is never touched either
    pinned_chat, pinned = prune_chat(8)
    msgs = [
        replace(m, source=Source.of(SourceKind.SKILL)) if m.id == pinned[0].id else m
        for m in pinned_chat.messages
    ]
    out2 = {m.id: m for m in OpencodePrune().apply(msgs, budget, EST).view}
    assert result_text(out2[pinned[0].id]) == "o" * 40_000


def test_opencode_compact_keeps_a_tail_of_recent_turns() -> None:
    chat = Chat()
    chat.system()
    chat.user("first task")
    for k in range(6):
        chat.call("read", "r" * 20_000, {"filePath": f"a{k}"})
    chat.user("second")
    chat.call("read", "s" * 20_000)
    chat.user("third")
    chat.call("read", "t" * 8_000)
    budget = window_for(chat.messages, OPENCODE)
    result = OpencodeCompact(ExtractiveSummarizer()).apply(chat.messages, budget, EST)
    assert result.fired
    ids = [m.id for m in result.view]
    # preserve = clamp(usable * 0.25, 2,000, 15,000) = 15,000 tokens (chars/4): the last turn
    # (~2,000) fits, the one before (~5,000 more) fits, at most 2 turns
    summary = next(m for m in result.view if m.is_summary)
    assert summary.text.startswith("What did we do so far?")
    assert ids[0] == "sys" and ids[1] == summary.id
    assert ids[2:] == [m.id for m in chat.messages[-6:]]
    assert not OpencodeCompact(ExtractiveSummarizer()).apply(result.view, budget, EST).fired


# --- Codex -------------------------------------------------------------------------------------------


def test_codex_truncates_tool_output_to_10000_bytes_from_the_middle() -> None:
    text = "".join(f"row {i:05d}\n" for i in range(3_000))  # 30,000 bytes
    cut = truncate_middle(text, 10_000)
    assert len(cut.encode()) <= 10_000 and len(cut.encode()) > 9_900
    head, rest = cut.split("\n…", 1)
    count, tail = rest.split(" chars truncated…\n", 1)
    assert text.startswith(head) and text.endswith(tail)
    assert int(count) == len(text) - len(head) - len(tail)
    assert truncate_middle("é" * 6_000, 10_000).encode()  # cut on character boundaries
    chat = Chat()
    chat.user("go")
    _, big = chat.call("shell", text)
    _, small = chat.call("shell", "ok")
    result = MiddleTruncate().apply(chat.messages, CODEX.budget(258_400), EST)
    out = {m.id: m for m in result.view}
    assert result_text(out[big.id]) == cut and out[small.id] == small
    assert not MiddleTruncate().apply(result.view, CODEX.budget(258_400), EST).fired


def test_codex_compaction_keeps_recent_user_messages_and_one_summary() -> None:
    chat = Chat()
    chat.system()
    old = chat.user("u" * 60_000)  # 15,000 tokens (bytes/4)
    chat.call("shell", "x" * 30_000)
    mid = chat.user("m" * 40_000)  # 10,000
    chat.call("shell", "y" * 30_000)
    new = chat.user("n" * 24_000)  # 6,000
    chat.call("shell", "z" * 30_000)
    budget = window_for(chat.messages, CODEX)
    result = CodexCompact(ExtractiveSummarizer()).apply(chat.messages, budget, EST)
    assert result.fired
    view = result.view
    assert [m.id for m in view[:-1]] == ["sys", old.id, mid.id, new.id]
    summary = view[-1]
    assert summary.is_summary and summary.role is Role.USER and summary.text.startswith(CODEX_PREFIX)
    # newest first within 20,000 tokens: 6,000 + 10,000, then the oldest is cut to the 4,000 left
    assert view[2] == mid and view[3] == new
    assert approx_tokens(view[1].text) <= 4_000 and "chars truncated…" in view[1].text
    kept = sum(approx_tokens(m.text) for m in view[1:4])
    assert 19_900 <= kept <= 20_000
    assert result.truncated == 1 and result.summarized == 6
    assert not any(m.tool_calls or m.tool_results for m in view)
    assert not CodexCompact(ExtractiveSummarizer()).apply(view, budget, EST).fired


# --- invariants (DESIGN §2.3) over generated ledgers ---------------------------------------------------


@st.composite
def timed_ledgers(draw: st.DrawFn) -> list[Message]:
    """The generated ledgers of test_shaping_properties, with timestamps and sometimes an idle gap
    before the last message (for microcompact's time trigger)."""
    msgs = draw(ledgers())
    clock = datetime(2026, 1, 1, tzinfo=UTC)
    out = []
    idle = draw(st.sampled_from((0, 30, 90)))
    for k, m in enumerate(msgs):
        clock += timedelta(minutes=idle if k == len(msgs) - 1 else 1)
        stamped = draw(st.integers(0, 9)) > 0
        out.append(replace(m, timestamp=clock.isoformat() if stamped else None))
    return out


LAYER_MAKERS: dict[str, Callable[[], Layer]] = {
    "large_result_preview": LargeResultPreview,
    "microcompact": lambda: Microcompact(CLAUDE_CODE_TOOLS, idle_gap_minutes=60),
    "full_compact": lambda: FullCompact(ExtractiveSummarizer()),
    "full_compact_bloated": lambda: FullCompact(BloatedSummarizer()),
    "opencode_prune": lambda: OpencodePrune(minimum=500, protect=800),
    "opencode_compact": lambda: OpencodeCompact(ExtractiveSummarizer()),
    "middle_truncate": MiddleTruncate,
    "codex_compact": lambda: CodexCompact(ExtractiveSummarizer(), user_tokens=40),
    "codex_compact_bloated": lambda: CodexCompact(BloatedSummarizer()),
}


def make_layer(name: str) -> Layer:
    return LAYER_MAKERS[name]()


LAYER_NAMES = (
    "large_result_preview",
    "microcompact",
    "full_compact",
    "full_compact_bloated",
    "opencode_prune",
    "opencode_compact",
    "middle_truncate",
    "codex_compact",
    "codex_compact_bloated",
)


@SETTINGS
@pytest.mark.slow
@given(
    ledger=timed_ledgers(),
    budget=budgets,
    estimator=estimators,
    layer_name=st.sampled_from(LAYER_NAMES),
    forced=st.booleans(),
)
def test_harness_layer_invariants(
    ledger: list[Message],
    budget: Budget,
    estimator: HeuristicEstimator | CharsOverFour,
    layer_name: str,
    forced: bool,
) -> None:
    layer = make_layer(layer_name)
    snapshot = [msgspec.to_builtins(m) for m in ledger]
    original = list(ledger)
    result = layer.apply(ledger, budget, estimator, forced=forced)
    assert ledger == original and all(a is b for a, b in zip(ledger, original, strict=True))
    assert [msgspec.to_builtins(m) for m in ledger] == snapshot
    check_view(ledger, result.view)
    assert result.tokens_before == total(ledger, estimator)
    assert result.tokens_after == total(result.view, estimator)
    assert result.tokens_after <= result.tokens_before
    assert result.fired == (tuple(result.view) != tuple(ledger))
    if layer.reactive and not forced and result.tokens_before <= budget.trigger:
        assert not result.fired and ("under trigger" in result.reason or "at trigger" in result.reason)
    again = layer.apply(result.view, budget, estimator, forced=forced)
    assert again.view == result.view and not again.fired


@SETTINGS
@given(
    ledger=timed_ledgers(),
    window=st.sampled_from(WINDOWS),
    estimator=estimators,
    policy_name=st.sampled_from(("claude-code", "opencode", "codex")),
    forced=st.booleans(),
)
def test_harness_preset_invariants(
    ledger: list[Message],
    window: int | None,
    estimator: HeuristicEstimator | CharsOverFour,
    policy_name: str,
    forced: bool,
) -> None:
    base = load_policy(policy_name)
    # the "recorded" summarizer falls back to extractive for stretches with no recorded summary
    policy = replace(base, summarizer="extractive")
    budget = policy.budget(window)
    pipeline = policy.pipeline()
    snapshot = [msgspec.to_builtins(m) for m in ledger]
    result = pipeline.run(ledger, budget, estimator, forced=forced)
    assert [msgspec.to_builtins(m) for m in ledger] == snapshot
    assert budget.pins == policy.pins != FLOOR  # the harness's protections, not priority >= 70
    check_view(ledger, result.final, budget.pins)
    assert result.sent_tokens == total(result.final, estimator) <= result.input_tokens
    for prev, nxt in itertools.pairwise(result.layers):
        assert prev.tokens_after == nxt.tokens_before
        check_view(prev.view, nxt.view, budget.pins)
    again = pipeline.run(result.final, budget, estimator, forced=forced)
    assert again.final == result.final and again.fired == ()
    changed_ids = {d.message_id for d in result.decisions if d.action.changed}
    before = {m.id: m for m in ledger}
    final_ids = {m.id for m in result.final}
    for m in ledger:
        if m.id not in final_ids or before[m.id] != next((f for f in result.final if f.id == m.id), m):
            assert m.id in changed_ids
        sentence = explain(result, m.id)
        assert sentence.startswith(("kept", "unchanged", "truncated", "cleared", "removed", "summarized")), (
            sentence
        )
