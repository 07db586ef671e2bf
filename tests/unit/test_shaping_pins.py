"""Pins follow the policy (issue 30): under a harness preset a message is pinned iff its source kind
is one the harness protects (plus the overhead); under OpenCollab's presets, priority >= 70. Every
layer asks the one rule the policy's budget carries (`Budget.pins`), and the pinned panel, the
report and `explain` say what the layers did."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from inspector.formats.detect import load
from inspector.model import PIN_FLOOR, Message, Source, SourceKind
from inspector.replay import Replay
from inspector.replay.composition import composition
from inspector.shaping import (
    CLAUDE_CODE,
    CODEX,
    NO_HISTORY_COMPACTION,
    OPENCODE,
    OPENCOLLAB,
    Action,
    AutoCompact,
    Budget,
    CodexCompact,
    ExtractiveSummarizer,
    FullCompact,
    LayerResult,
    OpencodeCompact,
    OpencodePrune,
    Pins,
    explain,
    group_spans,
    load_policy,
)
from inspector.shaping.pinning import FLOOR
from inspector.shaping.policy import pin_reason, pins_of
from inspector.shaping.tool_output_clear import ToolOutputClear
from inspector.tokens.calibration import overhead_message
from tests.unit.test_policies_presets import EST, Chat, window_for

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
THOMAS = "claude-code/thomasjmcgovern-fb36f7a7.jsonl"

MEMORY = Source.of(SourceKind.PROJECT_INSTRUCTIONS, "CLAUDE.md memory")
TASK = Source.of(SourceKind.TASK, "first user task")
SKILL = Source.of(SourceKind.SKILL, "skill body")


def session() -> tuple[Chat, dict[str, Message]]:
    """System prompt, a memory file, the task, a skill body, seven file reads, a closing turn."""
    chat = Chat()
    chat.system()
    named = {
        "memory": chat.user(
            "Contents of /repo/CLAUDE.md: run `make test` before you commit", source=MEMORY, is_meta=True
        ),
        "task": chat.user("refactor the parser so that it streams", source=TASK),
        "skill": chat.user("Skill body: how to write parsers, in ten rules", source=SKILL, is_meta=True),
    }
    for k in range(7):
        chat.call("Read", f"contents of file {k}\n" + "a" * 6_000, {"file_path": f"src/f{k}.py"})
        chat.say(f"read file {k}")
    named["last"] = chat.user("continue")
    return chat, named


def ids(layer: LayerResult, action: Action) -> set[str]:
    return {d.message_id for d in layer.decisions if d.action is action}


def test_each_policy_names_its_rule() -> None:
    assert OPENCOLLAB.pins == NO_HISTORY_COMPACTION.pins == FLOOR and FLOOR.kinds is None
    kinds = {p.name: set(p.pins.kinds or ()) for p in (CLAUDE_CODE, CODEX, OPENCODE)}
    assert kinds == {
        "claude-code": {SourceKind.OVERHEAD, SourceKind.PROJECT_INSTRUCTIONS, SourceKind.SKILL},
        "codex": {
            SourceKind.OVERHEAD,
            SourceKind.IDENTITY,
            SourceKind.PROJECT_INSTRUCTIONS,
            SourceKind.SKILL,
        },
        "opencode": {SourceKind.OVERHEAD, SourceKind.IDENTITY, SourceKind.SKILL},
    }
    # the budget hands the rule to the layers, with the rule's lines or without
    assert (
        CLAUDE_CODE.budget(200_000).pins == CLAUDE_CODE.pins
        and CLAUDE_CODE.budget(None).pins == CLAUDE_CODE.pins
    )
    assert OPENCOLLAB.budget(200_000).pins is FLOOR and Budget.for_window(200_000).pins is FLOOR
    # a policy file over a harness preset keeps its harness's rule; one without rules is OpenCollab's
    assert load_policy("claude-code").pins == pins_of("Claude-Code") == CLAUDE_CODE.pins
    assert pins_of("default") is FLOOR and pins_of("no such policy") is FLOOR
    # the overhead pseudo-message is pinned under every rule; the task only by OpenCollab's
    overhead = overhead_message()
    assert all(p.pins(overhead) for p in (CLAUDE_CODE, CODEX, OPENCODE, OPENCOLLAB))
    assert [p.pins.source(TASK) for p in (CLAUDE_CODE, CODEX, OPENCODE, OPENCOLLAB)] == [
        False,
        False,
        False,
        True,
    ]
    assert Pins.protecting(()).kinds == frozenset({SourceKind.OVERHEAD})
    low = Source.of(SourceKind.TASK, "a task of low priority", priority=PIN_FLOOR - 1)
    assert not FLOOR.source(low) and FLOOR.source(Source.of(SourceKind.PROJECT_MAP, priority=PIN_FLOOR))


def test_pin_reason_says_what_the_layers_do() -> None:
    assert pin_reason(CLAUDE_CODE, MEMORY).startswith("re-attached by Claude Code after compaction")
    assert pin_reason(CLAUDE_CODE, TASK) == (
        "not pinned: Claude Code keeps the task only as its summary and recent messages carry it"
    )
    assert (
        pin_reason("opencode", MEMORY) == "not pinned: opencode does not protect project instructions sources"
    )
    assert pin_reason(OPENCOLLAB, TASK) == "OpenCollab: priority 80 ≥ 70"
    assert pin_reason("opencollab", Source.of(SourceKind.PROJECT_MAP)) == "not pinned: priority 30 < 70"


def test_claude_code_full_compaction_folds_the_task_and_keeps_memory_and_skills() -> None:
    chat, named = session()
    budget = window_for(chat.messages, CLAUDE_CODE)
    result = FullCompact(ExtractiveSummarizer()).apply(chat.messages, budget, EST)
    assert result.fired
    summarized = ids(result, Action.SUMMARIZED)
    assert named["task"].id in summarized and named["last"].id in summarized
    assert not summarized & {"sys", named["memory"].id, named["skill"].id}
    kept = [m.id for m in result.view if not m.is_summary]
    # group 0, then memory and the skill body, whole; the task lives on in the summary only
    assert kept[:3] == ["sys", named["memory"].id, named["skill"].id] and named["task"].id not in kept
    assert next(m for m in result.view if m.id == named["memory"].id) == named["memory"]
    # the same layer on OpenCollab's rule keeps the task: the rule decides, not the layer
    floor = FullCompact(ExtractiveSummarizer()).apply(chat.messages, Budget.for_window(budget.window), EST)
    assert floor.fired and named["task"].id not in ids(floor, Action.SUMMARIZED)
    assert [m.id for m in floor.view[:4]] == ["sys", named["memory"].id, named["task"].id, named["skill"].id]


def test_explain_and_groups_agree_with_the_claude_code_rule() -> None:
    chat, named = session()
    budget = window_for(chat.messages, CLAUDE_CODE)
    result = CLAUDE_CODE.pipeline().run(chat.messages, budget, EST, forced=True)
    assert "full_compact" in result.fired
    assert explain(result, named["task"].id).startswith("summarized by auto compact (full)")
    said = explain(result, named["memory"].id, lambda s: pin_reason(CLAUDE_CODE, s))
    assert said.startswith("kept: pinned (project instructions, priority 75): re-attached by Claude Code")
    groups = group_spans(chat.messages, budget.pins)
    assert [g.pinned for g in groups[:4]] == [False, True, False, True]  # sys, memory, task, skill
    assert [g.pinned for g in group_spans(chat.messages)[:4]] == [True, True, True, True]


def test_opencollab_auto_compact_keeps_the_task() -> None:
    chat, named = session()
    budget = window_for(chat.messages, OPENCOLLAB)
    assert budget.pins is FLOOR
    result = AutoCompact(ExtractiveSummarizer()).apply(chat.messages, budget, EST, forced=True)
    assert result.fired
    assert ids(result, Action.KEPT_PINNED) == {named["memory"].id, named["task"].id, named["skill"].id}
    assert not ids(result, Action.SUMMARIZED) & {named["memory"].id, named["task"].id, named["skill"].id}
    assert {named["memory"].id, named["task"].id, named["skill"].id} <= {m.id for m in result.view}


def test_codex_compaction_keeps_agents_md_and_folds_an_old_task() -> None:
    chat, named = session()
    # a late request of 21,000 tokens (bytes/4) fills Codex's 20,000-token room for user messages
    named["long"] = chat.user("please also handle this log:\n" + "b" * 84_000)
    budget = window_for(chat.messages, CODEX)
    result = CodexCompact(ExtractiveSummarizer()).apply(chat.messages, budget, EST)
    assert result.fired
    summarized = ids(result, Action.SUMMARIZED)
    assert named["task"].id in summarized
    assert not summarized & {"sys", named["memory"].id, named["skill"].id}
    assert ids(result, Action.TRUNCATED) == {named["long"].id}
    view = {m.id: m for m in result.view}
    assert view[named["memory"].id] == named["memory"] and view["sys"] == chat.messages[0]
    assert named["task"].id not in view


def test_opencode_compaction_keeps_skills_and_folds_the_task_and_memory() -> None:
    chat, named = session()
    budget = window_for(chat.messages, OPENCODE)
    result = OpencodeCompact(ExtractiveSummarizer()).apply(chat.messages, budget, EST, forced=True)
    assert result.fired
    summarized = ids(result, Action.SUMMARIZED)
    # opencode protects its system parts and `skill` output, not project instructions or the task
    assert {named["task"].id, named["memory"].id} <= summarized
    assert ids(result, Action.KEPT_PINNED) == {"sys", named["skill"].id}
    assert named["skill"].id in {m.id for m in result.view}


def test_clearing_layers_skip_what_the_policy_pins() -> None:
    chat = Chat()
    chat.system()
    chat.user("start")
    memory_read = chat.call("Read", "x" * 40_000, {"file_path": "CLAUDE.md"}, source=MEMORY)[1]
    task_read = chat.call("Read", "z" * 40_000, {"file_path": "TASK.md"}, source=TASK)[1]
    for k in range(8):
        chat.user(f"next {k}")
        chat.call("Read", f"file {k}\n" + "y" * 40_000, {"file_path": f"f{k}.py"})
    layer = ToolOutputClear()
    under_cc = layer.apply(chat.messages, window_for(chat.messages, CLAUDE_CODE), EST, forced=True)
    assert memory_read.id in ids(under_cc, Action.KEPT_PINNED) and task_read.id in ids(
        under_cc, Action.CLEARED
    )
    # the same layer object, then OpenCollab's rule: its slots are found afresh
    under_oc = layer.apply(chat.messages, window_for(chat.messages, OPENCOLLAB), EST, forced=True)
    assert ids(under_oc, Action.KEPT_PINNED) == {memory_read.id, task_read.id}
    assert task_read.id not in ids(under_oc, Action.CLEARED)
    # opencode's prune: a task result is pruned under its rule, kept under OpenCollab's
    prune = OpencodePrune()
    budget = window_for(chat.messages, OPENCODE)
    pruned = prune.apply(chat.messages, budget, EST, forced=True)
    floor = prune.apply(chat.messages, msgspec.structs.replace(budget, pins=FLOOR), EST, forced=True)
    assert task_read.id in ids(pruned, Action.CLEARED) and memory_read.id in ids(pruned, Action.CLEARED)
    assert not ids(floor, Action.CLEARED) & {task_read.id, memory_read.id} and ids(floor, Action.CLEARED)


def corpus(relative: str) -> Path:
    path = CORPUS / relative
    if not path.exists():
        pytest.skip(f"real transcript corpus not found at {CORPUS}")
    return path


def test_corpus_claude_code_compaction_folds_the_task_and_the_panel_agrees() -> None:
    t = load(corpus(THOMAS))
    cc = Replay.open(t)
    assert cc.policy.name == "claude-code" and cc.budget.pins == CLAUDE_CODE.pins
    step = cc.step(77)
    (task,) = (m for m in step.result.input if m.source.kind is SourceKind.TASK)
    assert task.text.startswith("do we use bun?")
    compact = step.result.layer("full_compact")
    assert compact.fired and task.id in ids(compact, Action.SUMMARIZED)
    assert (compact.tokens_before, compact.tokens_after) == (157_134, 59_091)  # recorded next: 58,685
    assert cc.explain(task.id, 77).startswith("request 77: summarized by auto compact (full)")
    rows = composition(step, cc.policy).pinned
    assert [(p.kind, p.name) for p in rows] == [("overhead", "system prompt and tools")]
    # whatever a layer changed at any request, the policy did not pin it
    for k in range(1, len(cc) + 1):
        res = cc.step(k).result
        by_id = {m.id: m for m in res.input}
        changed = {d.message_id for d in res.decisions if d.action.changed and d.message_id in by_id}
        assert not any(cc.budget.pins(by_id[i]) for i in changed), k
    # under OpenCollab's rule the task is pinned, listed so, and never touched
    oc = Replay.open(t, policy="opencollab")
    step = oc.step(77)
    assert ("task", "first user task") in [(p.kind, p.name) for p in composition(step, oc.policy).pinned]
    assert oc.explain(task.id, 77).startswith("request 77: kept: pinned (task, priority 80): OpenCollab")
    for k in range(1, len(oc) + 1):
        assert task.id not in {d.message_id for d in oc.step(k).result.decisions if d.action.changed}
