"""Sources on every harness (issue 30): the fixed overhead and its split, why each pinned source
is pinned in its harness's terms, the Codex / opencode / OpenCollab rules, and the categories
(images, memory, todos, plan) with their token weights."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inspector.formats import load
from inspector.model import MediaBlock, Role, Source, SourceKind
from inspector.replay import Replay
from inspector.replay.composition import CLAUDE_CODE_SYSTEM_PROMPT, composition, overhead
from inspector.shaping.policy import CLAUDE_CODE, CODEX, OPENCODE, OPENCOLLAB, pin_reason, preset, protections
from inspector.tokens.calibration import OVERHEAD_ID
from inspector.tokens.tiktoken_estimator import TiktokenEstimator
from tests.conftest import CORPUS, claude_code_corpus, corpus_file

# -- the fixed overhead --------------------------------------------------------------------------


def _measured() -> list[Path]:
    """Every corpus transcript with at least one request with usage (Claude Code sessions, their
    subagents, the Codex rollouts)."""
    if not CORPUS.exists():
        return []
    return [*claude_code_corpus(), *sorted((CORPUS / "codex").glob("*.jsonl"))]


def test_overhead_is_the_first_billed_input_minus_the_visible_messages() -> None:
    files = _measured()
    if not files:
        pytest.skip(f"real transcript corpus not found at {CORPUS}")
    checked = 0
    for path in files:
        t = load(path)
        replay = Replay.open(t)
        o = overhead(replay)
        first = next((r for r in t.requests if r.usage is not None), None)
        if first is None or first.usage is None:
            assert o.request is None and o.tokens == 0 and o.shares == ()
            continue
        step = replay.step(first.index)
        # the visible messages' weight, summed here message by message
        visible = sum(step.weight(m.id) or 0 for m in step.ledger if m.id != OVERHEAD_ID)
        assert (o.request, o.billed) == (first.index, first.usage.context), path.name
        assert o.visible == visible and o.tokens == first.usage.context - visible, path.name
        assert o.tokens == step.weight(OVERHEAD_ID)
        assert sum(x.tokens for x in o.shares) == o.tokens, path.name
        assert o.label == "fixed overhead: the first request's billed input minus the visible messages"
        if o.tokens and t.format == "claude-code":
            prompt, tools = o.shares
            assert (prompt.key, tools.key) == ("system_prompt", "tools")
            assert prompt.tokens == min(o.tokens, CLAUDE_CODE_SYSTEM_PROMPT) and prompt.estimated
            assert "estimated" in prompt.label and "/context shows 3.2k" in prompt.basis
        checked += 1
    assert checked >= 18


def test_overhead_figures_on_three_files() -> None:
    short = overhead(Replay.open(load(corpus_file("claude-code/spotter-short.jsonl"))))
    assert (short.billed, short.visible, short.tokens) == (25_353, 22, 25_331)
    assert [(x.key, x.tokens) for x in short.shares] == [("system_prompt", 3_200), ("tools", 22_131)]
    mcp = overhead(Replay.open(load(corpus_file("claude-code/kesslerio-c7428042.jsonl"))))
    assert mcp.tokens == 57_991 and "MCP tools of github" in mcp.shares[1].basis
    codex = overhead(Replay.open(load(corpus_file("codex/agent-history-real-session-01.jsonl"))))
    # the rollout holds its base instructions: the overhead is the tool definitions
    assert (codex.billed, codex.visible, codex.tokens) == (22_539, 125, 22_414)
    assert [(x.key, x.tokens, x.estimated) for x in codex.shares] == [
        ("system_prompt", 0, False),
        ("tools", codex.tokens, False),
    ]


def test_the_composition_carries_the_split_of_its_overhead_part() -> None:
    replay = Replay.open(load(corpus_file("claude-code/spotter-short.jsonl")))
    comp = composition(replay.step(1))
    (part,) = [p for p in comp.parts if p.key == "overhead"]
    assert part.raw == 25_331 == sum(x.tokens for x in comp.overhead_shares)
    split = comp.to_dict()["overhead_split"]
    assert isinstance(split, list)
    assert [x["tokens"] for x in split] == [3_200, 22_131]


# -- why each source is pinned, preset by preset -------------------------------------------------


def test_claude_code_says_what_it_re_attaches() -> None:
    skill = Source.of(SourceKind.SKILL, "skill body")
    memory = Source.of(SourceKind.PROJECT_INSTRUCTIONS, "CLAUDE.md memory")
    task = Source.of(SourceKind.TASK, "first user task")
    assert pin_reason(CLAUDE_CODE, memory).startswith(
        "re-attached by Claude Code after compaction (memory files"
    )
    assert pin_reason(CLAUDE_CODE, skill) == (
        "re-attached by Claude Code after compaction (invoked skills, up to 5,000 tokens each, 25,000 in all)"
    )
    # not protected by Claude Code, so not pinned under its preset (issue 30: pins follow the policy)
    assert pin_reason("claude", task) == (
        "not pinned: Claude Code keeps the task only as its summary and recent messages carry it"
    )
    assert protections(CLAUDE_CODE)[-1].startswith(
        "Claude Code also re-attaches after a compaction what the transcript does not mark: the plan, "
        "the todo list and up to 5 recently read files"
    )


def test_codex_opencode_and_opencollab_say_theirs() -> None:
    env = Source.of(SourceKind.IDENTITY, "environment context")
    agents = Source.of(SourceKind.PROJECT_INSTRUCTIONS, "AGENTS.md")
    assert pin_reason(CODEX, env).startswith("re-injected by Codex after compaction (initial context")
    assert pin_reason(CODEX, agents) == "re-injected by Codex after compaction (initial context: AGENTS.md)"
    skill = Source.of(SourceKind.SKILL, "skill tool output")
    assert (
        pin_reason(OPENCODE, skill) == "opencode: prune never clears `skill` output (PRUNE_PROTECTED_TOOLS)"
    )
    assert pin_reason(OPENCOLLAB, Source.of(SourceKind.TASK, "task")) == "OpenCollab: priority 80 ≥ 70"
    assert pin_reason(preset("no_history_compaction"), Source(kind=SourceKind.CONVERSATION, priority=72)) == (
        "OpenCollab: priority 72 ≥ 70"
    )
    assert pin_reason(OPENCOLLAB, Source.of(SourceKind.PROJECT_MAP)) == "not pinned: priority 30 < 70"


def test_explain_and_the_pinned_panel_say_why(tmp_path: Path) -> None:
    from inspector.tui.app import step_view
    from inspector.tui.widgets.side import pinned_text

    t = load(corpus_file("claude-code/pooknast-da0d9633.jsonl"))
    replay = Replay.open(t)
    skill = next(m for m in t.messages if m.source.kind is SourceKind.SKILL)
    k = replay.requests_holding(skill.id)[-1]
    assert replay.explain(skill.id, k) == (
        f"request {k}: kept: pinned (skill, priority 85): re-attached by Claude Code after compaction "
        "(invoked skills, up to 5,000 tokens each, 25,000 in all)"
    )
    view = step_view(replay, replay.step(k), [])
    whys = {p.kind: p.why for p in view.pinned}
    assert whys["overhead"] == "sent by Claude Code with every request (system prompt and tool definitions)"
    assert whys["skill"].startswith("re-attached by Claude Code after compaction")
    shown = pinned_text(view.pinned, view.context, 200).plain
    assert "  re-attached by Claude Code after compaction (invoked skills" in shown
    # the same session under OpenCollab's policy: its terms
    other = Replay.open(t, policy="opencollab")
    view = step_view(other, other.step(k), [])
    assert {p.why for p in view.pinned} >= {"OpenCollab: priority 85 ≥ 70", "OpenCollab: priority 80 ≥ 70"}


# -- Codex, opencode, OpenCollab rules -----------------------------------------------------------


def test_codex_corpus_sources() -> None:
    t = load(corpus_file("codex/lazyagents-codex-0.158.0-rollout.jsonl"))
    named = [(m.source.kind, m.source.name, m.pinned) for m in t.messages[:4]]
    assert named == [
        (SourceKind.IDENTITY, "base instructions", True),
        (SourceKind.IDENTITY, "developer instructions (skills, permissions)", True),
        (SourceKind.IDENTITY, "environment context", True),
        (SourceKind.TASK, "first user task", True),
    ]
    assert t.messages[3].text == "run echo fixture please"
    real = load(corpus_file("codex/agent-history-real-session-01.jsonl"))
    assert [m.source.name for m in real.messages if m.pinned] == [
        "base instructions",
        "developer instructions",
        "environment context",
        "first user task",
    ]


def _rollout(tmp_path: Path, items: list[dict[str, Any]]) -> Path:
    lines = [
        {
            "timestamp": "2026-01-01T00:00:00.000Z",
            "type": "session_meta",
            "payload": {
                "id": "s1",
                "cli_version": "0.120.0",
                "base_instructions": {"text": "You are Codex."},
            },
        }
    ]
    lines += [{"timestamp": "2026-01-01T00:00:01.000Z", "type": "response_item", "payload": i} for i in items]
    path = tmp_path / "rollout-2026-01-01T00-00-00-s1.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _said(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def test_codex_agents_md_skill_and_injected_lines(tmp_path: Path) -> None:
    path = _rollout(
        tmp_path,
        [
            _said(
                "user", "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nRun the tests.\n</INSTRUCTIONS>"
            ),
            _said("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
            _said("user", "<skill>\n<name>pdf</name>\n</skill>"),
            _said("user", "fix the build"),
            _said("assistant", "done"),
            _said("user", "<turn_aborted>\nThe user interrupted.\n</turn_aborted>"),
            _said("user", "now the docs"),
        ],
    )
    got = [(m.source.kind, m.source.name, m.source.priority) for m in load(path).messages]
    assert got == [
        (SourceKind.IDENTITY, "base instructions", 100),
        (SourceKind.PROJECT_INSTRUCTIONS, "AGENTS.md", 75),
        (SourceKind.IDENTITY, "environment context", 100),
        (SourceKind.SKILL, "skill", 85),
        (SourceKind.TASK, "first user task", 80),
        (SourceKind.CONVERSATION, "", 0),
        (SourceKind.CONVERSATION, "injected by the harness", 0),
        (SourceKind.CONVERSATION, "", 0),
    ]


def _storage(root: Path, user_extra: dict[str, Any], assistant_extra: dict[str, Any]) -> Path:
    """A one-turn opencode session in the JSON-folder layout (0.6-1.1)."""
    storage = root / "storage"

    def put(rel: str, value: dict[str, Any]) -> None:
        path = storage / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value, indent=2))

    t0 = 1_760_000_000_000
    put(
        "session/global/ses_a.json",
        {
            "id": "ses_a",
            "projectID": "global",
            "directory": "/w",
            "title": "a",
            "time": {"created": t0, "updated": t0 + 9},
        },
    )
    put(
        "message/ses_a/msg_01.json",
        {"id": "msg_01", "sessionID": "ses_a", "role": "user", "time": {"created": t0}, **user_extra},
    )
    put(
        "part/msg_01/prt_01.json",
        {
            "id": "prt_01",
            "sessionID": "ses_a",
            "messageID": "msg_01",
            "type": "text",
            "text": "list the files",
        },
    )
    put(
        "message/ses_a/msg_02.json",
        {
            "id": "msg_02",
            "sessionID": "ses_a",
            "role": "assistant",
            "parentID": "msg_01",
            "modelID": "m",
            "providerID": "p",
            "time": {"created": t0 + 1, "completed": t0 + 2},
            **assistant_extra,
        },
    )
    parts: list[dict[str, Any]] = [
        {"type": "step-start"},
        {"type": "text", "text": "two files"},
        {
            "type": "step-finish",
            "reason": "stop",
            "tokens": {"input": 900, "output": 3, "reasoning": 0, "cache": {"read": 0, "write": 0}},
        },
    ]
    for n, part in enumerate(parts):
        put(
            f"part/msg_02/prt_02{n}.json",
            {"id": f"prt_02{n}", "sessionID": "ses_a", "messageID": "msg_02", **part},
        )
    return storage


def test_opencode_system_parts_are_pinned_system_messages(tmp_path: Path) -> None:
    storage = _storage(tmp_path, {}, {"system": ["You are opencode.", "Be terse."]})
    t = load(storage)
    ledger = t.ledger(1)
    first = ledger[0]
    assert (first.role, first.source.name, first.pinned) == (
        Role.SYSTEM,
        "system prompt (stored on the message, opencode 0.x)",
        True,
    )
    assert first.text == "You are opencode.\nBe terse."
    assert [m.source.kind for m in ledger] == [SourceKind.IDENTITY, SourceKind.TASK]
    assert t.requests[0].ledger_len == 2  # the system prompt is in the first call's ledger
    custom = load(_storage(tmp_path / "b", {"system": "Answer in French."}, {}))
    assert [(m.source.name, m.text) for m in custom.messages if m.role is Role.SYSTEM] == [
        ("system part (the prompt's `system`)", "Answer in French.")
    ]
    # without any: opencode 1.x stores neither prompt nor tools, only the overhead holds them
    plain = load(_storage(tmp_path / "c", {}, {}))
    assert [m.role for m in plain.messages] == [Role.USER, Role.ASSISTANT]
    (share,) = overhead(Replay.open(plain)).shares
    assert share.key == "system_prompt_and_tools" and share.tokens > 800


def test_opencode_corpus_task(tmp_path: Path) -> None:
    import sqlite3

    dump = corpus_file("opencode/lazyagents-opencode-1.18.33.sql")
    db = tmp_path / "opencode.db"
    con = sqlite3.connect(db)
    con.executescript(dump.read_text(encoding="utf-8"))
    con.close()
    t = load(db)
    assert [(m.source.kind, m.text) for m in t.messages if m.pinned] == [
        (SourceKind.TASK, '"run echo fixture please"')
    ]


def test_opencollab_ctx_is_read_exactly(tmp_path: Path) -> None:
    snap = {
        "snapshot_version": 1,
        "aid": 0,
        "role": "coder",
        "model": "m",
        "messages": [
            {
                "role": "system",
                "content": "You are a Coder.",
                "_ctx": {"name": "identity", "layer": "identity", "priority": 100},
            },
            {
                "role": "system",
                "content": "Your team",
                "_ctx": {"name": "team", "layer": "team", "priority": 90},
            },
            {
                "role": "system",
                "content": "repo map",
                "_ctx": {"name": "repo_map", "layer": "project", "priority": 72},
            },
            {
                "role": "system",
                "content": "skills",
                "_ctx": {"name": "catalog", "layer": "skill", "priority": 60},
            },
            {
                "role": "user",
                "content": "Task:\nfix it",
                "_ctx": {"name": "task", "layer": "task", "priority": 80},
            },
            {"role": "user", "content": "and the docs"},
        ],
    }
    path = tmp_path / "agent_0_coder.json"
    path.write_text(json.dumps(snap, indent=2))
    t = load(path)
    got = [(m.source.kind, m.source.name, m.source.priority, m.pinned) for m in t.messages]
    assert got == [
        (SourceKind.IDENTITY, "identity", 100, True),
        (SourceKind.TEAM, "team", 90, True),
        (SourceKind.PROJECT_MAP, "repo_map", 72, True),  # the priority recorded, not the layer's 30
        (SourceKind.SKILL, "catalog", 60, False),
        (SourceKind.TASK, "task", 80, True),
        (SourceKind.CONVERSATION, "", 0, False),
    ]
    replay = Replay.open(t)
    assert [pin_reason(replay.policy, m.source) for m in t.messages if m.pinned] == [
        "OpenCollab: priority 100 ≥ 70",
        "OpenCollab: priority 90 ≥ 70",
        "OpenCollab: priority 72 ≥ 70",
        "OpenCollab: priority 80 ≥ 70",
    ]


# -- categories and their token weights on the files that hold them ------------------------------


def test_a_pasted_image_is_a_prompt_with_an_image_and_weighs_like_one() -> None:
    """thomasjmcgovern-fb36f7a7 is the one corpus file with images: two screenshots pasted with a
    few words. An image costs Anthropic about (width x height) / 750 tokens, at most about 1,600
    (images are scaled to 1.15 megapixels): the calibrated weight is the words plus that."""
    t = load(corpus_file("claude-code/thomasjmcgovern-fb36f7a7.jsonl"))
    replay = Replay.open(t)
    pasted = [m for m in t.messages if any(isinstance(b, MediaBlock) for b in m.blocks)]
    assert [m.source.name for m in pasted] == ["user prompt (with an image)"] * 2
    assert all(m.source.kind is SourceKind.CONVERSATION and not m.pinned for m in pasted)
    for m in pasted:
        k = replay.requests_holding(m.id)[0]
        weight = replay.step(k).weight(m.id)
        words = TiktokenEstimator().text(m.text)
        assert weight is not None and 1_000 <= weight - words <= 2_000, (m.id, weight, words)


def test_a_memory_reminder_weighs_its_text(tmp_path: Path) -> None:
    """No corpus file holds a memory reminder (see test_sources_claude_code): built from
    spotter-short, its calibrated weight is its text's size."""
    recs = [json.loads(x) for x in corpus_file("claude-code/spotter-short.jsonl").read_text().splitlines()]
    first = next(i for i, r in enumerate(recs) if r.get("type") == "user")
    body = "\n".join(
        [
            "# Project rules",
            "- Run `mix test` before every commit; a red suite blocks the merge.",
            "- Phoenix contexts live in lib/spotter/, one folder per bounded context.",
            "- Migrations are reversible: write `change/0`, never `up/0` alone.",
            "- Use Req for HTTP calls, never HTTPoison or Tesla in new code.",
            "- LiveView components go in lib/spotter_web/components with a storybook entry.",
            "- Keep functions under 40 lines; extract private helpers with doc comments.",
            "- Secrets come from runtime.exs and the environment, never from config.exs.",
        ]
    )
    reminder = dict(
        recs[first],
        uuid="7e57c1a0-0000-4000-8000-000000000002",
        parentUuid=None,
        isMeta=True,
        message={
            "role": "user",
            "content": "<system-reminder>\n# claudeMd\nContents of /home/me/p/CLAUDE.md (project instructions, "
            f"checked into the codebase):\n\n{body}\n</system-reminder>",
        },
    )
    recs[first] = dict(recs[first], parentUuid=reminder["uuid"])
    path = tmp_path / "memory.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*recs[:first], reminder, *recs[first:]]))
    t = load(path)
    replay = Replay.open(t)
    (memory,) = [m for m in t.messages if m.source.kind is SourceKind.PROJECT_INSTRUCTIONS]
    weight = replay.step(1).weight(memory.id)
    counted = TiktokenEstimator().text(memory.text)
    assert weight is not None and 0.7 * counted <= weight <= 1.5 * counted + 50, (weight, counted)
    # the billed input is the same: what the memory weighs comes out of the unrecorded overhead
    without = overhead(Replay.open(load(corpus_file("claude-code/spotter-short.jsonl"))))
    assert overhead(replay).tokens == without.tokens - weight
    assert pin_reason(replay.policy, memory.source).startswith("re-attached by Claude Code after compaction")


@pytest.mark.parametrize(
    ("rel", "name", "count"),
    [
        ("claude-code/thomasjmcgovern-fb36f7a7.jsonl", "todo list (TodoWrite)", 25),
    ],
)
def test_todo_and_plan_results_are_named_not_pinned(rel: str, name: str, count: int) -> None:
    t = load(corpus_file(rel))
    found = [m for m in t.messages if m.source.name == name]
    assert len(found) == count and all(
        m.source.kind is SourceKind.TOOL_OUTPUT and not m.pinned for m in found
    )
    replay = Replay.open(t)
    m = found[-1]
    k = replay.requests_holding(m.id)[-1]
    weight = replay.step(k).weight(m.id)
    counted = TiktokenEstimator().text("\n".join(b.content for b in m.tool_results))
    assert weight is not None and 0.5 * counted <= weight <= 2.0 * counted + 60, (weight, counted)


def test_approved_plans_are_named_not_pinned() -> None:
    """The plan's words are the ExitPlanMode call's argument (2.0; billed) or a plan file (2.1):
    its result is the approval. thomasjmcgovern approved 6 of its 8 plans; pooknast rejected its
    one (a rejected plan is plain tool output)."""
    t = load(corpus_file("claude-code/thomasjmcgovern-fb36f7a7.jsonl"))
    found = [m for m in t.messages if m.source.name == "plan (ExitPlanMode)"]
    assert len(found) == 6 and all(m.source.kind is SourceKind.TOOL_OUTPUT and not m.pinned for m in found)
    assert all(m.tool_results[0].content.startswith("User has approved your plan.") for m in found)
    pook = load(corpus_file("claude-code/pooknast-da0d9633.jsonl"))
    (rejected,) = [m for m in pook.messages if any(b.tool_name == "ExitPlanMode" for b in m.tool_results)]
    assert rejected.source.name == "" and rejected.tool_results[0].is_error


def test_report_says_why_each_source_is_pinned(capsys: pytest.CaptureFixture[str]) -> None:
    from inspector.cli import main as cli_main

    path = corpus_file("claude-code/pooknast-da0d9633.jsonl")
    t = load(path)
    replay = Replay.open(t)
    skill = next(m for m in t.messages if m.source.kind is SourceKind.SKILL)
    k = replay.requests_holding(skill.id)[0]
    assert cli_main(["report", str(path), "--step", str(k), "--json"]) == 0
    comp = json.loads(capsys.readouterr().out)["composition"]
    pins = {p["kind"]: p for p in comp["pinned"]}
    assert pins["skill"]["why"].startswith("re-attached by Claude Code after compaction (invoked skills")
    assert pins["skill"]["tokens"] == replay.step(k).weight(skill.id)
    assert pins["overhead"]["tokens"] == replay.step(k).weight(OVERHEAD_ID)
    assert [x["key"] for x in comp["overhead_split"]] == ["system_prompt", "tools"]
    assert cli_main(["report", str(path), "--step", str(k), "--policy", "opencollab"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        f"⚑ pinned skill body (priority 85): {pins['skill']['tokens']:,} tokens — OpenCollab: priority 85 ≥ 70"
        in out
    )
    assert "system prompt (estimated): 3,200 · estimated: Claude Code's /context shows 3.2k" in out
