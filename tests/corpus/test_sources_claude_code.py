"""Sources that are right on real sessions (issue 30): the task is the first prompt the human
wrote, and no command, command output or caveat is ever labelled a task or a memory file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inspector.formats import load
from inspector.model import Role, SourceKind, ToolResultBlock
from inspector.replay import Replay
from inspector.tokens.tiktoken_estimator import TiktokenEstimator
from tests.conftest import CORPUS, claude_code_corpus, corpus_file

TASKS = {
    "applabnl-a9185eb7.jsonl": "I want claude sessions to optionally start with the --dangerously-skip-permissions",
    "chiphuyen-ba79134d.jsonl": "ok, now write the program using the instruction in README.md",  # after /init
    "claude-code-log-dag-compact-after-rewind.jsonl": "Start",
    "claude-code-viewer-inline-sidechains.jsonl": "Thanks! Please update CLAUDE.md for current changes",
    "conneroisu-b9712494.jsonl": "solve backlog tasks not marked as completed",  # not `continue`
    "dkimuson-5c0375b4.jsonl": None,  # one /orchestrator command and its expansion: no typed prompt
    "fasthooks-manual-compact.jsonl": "can you run a command ls -la",
    "kesslerio-c7428042.jsonl": "review https://github.com/kesslerio/attio-mcp-server/pull/39",  # not /mcp
    "patternstack-263940d8.jsonl": "Review the project and provide me a summary of current state",
    "pooknast-da0d9633.jsonl": "Read and digest this article https://x.com/mvanhorn/status/",  # not /clear
    "spotter-short.jsonl": "mix phx.server doesnt seem to start",
    "tail-claude-mcp-tools.jsonl": "Quick qa test - can you call some mcp tools?",
    "thomasjmcgovern-fb36f7a7.jsonl": "do we use bun?",  # not /prime or its expansion
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl": "Work on bead spotter-a0y.",
    "lroystack-24133cc4-chat.json": "HOy queremos acabar de desarrollar nuestra pagina principal",
}
"""The first prompt the human typed in each main session, read from the files by hand."""
HARNESS_MARKERS = (
    "<command-name>",
    "<local-command-stdout>",
    "<local-command-caveat>",
    "Caveat: The messages below",
)


def _main_sessions() -> list[Path]:
    return [p for p in claude_code_corpus() if "subagents" not in p.parts]


def test_the_task_is_the_first_prompt_the_human_wrote() -> None:
    files = _main_sessions()
    if not files:
        pytest.skip(f"real transcript corpus not found at {CORPUS}")
    assert {p.name for p in files} == set(TASKS)
    for path in files:
        t = load(path)
        tasks = [m for m in t.messages if m.source.kind is SourceKind.TASK and not m.sidechain]
        want = TASKS[path.name]
        if want is None:
            assert tasks == [], path.name
            continue
        assert len(tasks) == 1, (path.name, [m.text[:60] for m in tasks])
        assert tasks[0].text.strip().startswith(want), (path.name, tasks[0].text[:80])
        assert tasks[0].source.pinned


def test_no_command_output_or_caveat_is_a_task_or_memory() -> None:
    files = claude_code_corpus()
    if not files:
        pytest.skip(f"real transcript corpus not found at {CORPUS}")
    seen = 0
    for path in files:
        for m in load(path).messages:
            if m.role is not Role.USER or not any(k in m.text for k in HARNESS_MARKERS):
                continue
            seen += 1
            assert m.source.kind not in (SourceKind.TASK, SourceKind.PROJECT_INSTRUCTIONS), (
                path.name,
                m.text[:80],
            )
            assert not m.source.pinned, (path.name, m.source)
    assert seen >= 20  # the corpus holds dozens of such lines


def _weight(path: Path, name: str) -> tuple[int, int, str]:
    """The calibrated weight of the first message named `name` at the last request that held
    it, its tiktoken count, and its text."""
    t = load(path)
    replay = Replay.open(t)
    m = next(m for m in t.messages if m.source.name == name)
    step = replay.step(replay.requests_holding(m.id)[-1])
    weight = step.weight(m.id)
    assert weight is not None
    text = "\n".join([m.text, *(b.content for b in m.blocks if isinstance(b, ToolResultBlock))]).strip()
    return weight, TiktokenEstimator().text(text), text


@pytest.mark.parametrize(
    ("rel", "name", "starts"),
    [
        ("claude-code/pooknast-da0d9633.jsonl", "skill body", "Base directory for this skill"),
        ("claude-code/kesslerio-c7428042.jsonl", "slash command /mcp", "<command-name>/mcp</command-name>"),
        ("claude-code/kesslerio-c7428042.jsonl", "local command output", "<local-command-stdout>"),
        ("claude-code/thomasjmcgovern-fb36f7a7.jsonl", "slash command expansion (/prime)", "# Prime"),
        ("claude-code/chiphuyen-ba79134d.jsonl", "slash command /init", "<command-message>init is analyzing"),
        ("claude-code/applabnl-a9185eb7.jsonl", "caveat", "Caveat: The messages below were generated"),
        (
            "claude-code/spotter-fa812bfe/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl",
            "subagent result (Task)",
            "",
        ),
    ],
)
def test_each_category_on_the_file_that_holds_it(rel: str, name: str, starts: str) -> None:
    weight, counted, text = _weight(corpus_file(rel), name)
    assert text.lstrip().startswith(starts)
    # the calibrated weight is the text's size, within what the calibration may add or take
    assert 0.5 * counted <= weight <= 2.0 * counted + 50, (weight, counted)


def test_a_memory_reminder_is_a_pinned_memory_file(tmp_path: Path) -> None:
    """No corpus file holds one (memory files are in the system prompt since 1.0's later
    versions); the form is the one earlier versions wrote as an `isMeta` system-reminder."""
    recs = [json.loads(x) for x in corpus_file("claude-code/spotter-short.jsonl").read_text().splitlines()]
    first = next(i for i, r in enumerate(recs) if r.get("type") == "user")
    reminder = dict(
        recs[first],
        uuid="7e57c1a0-0000-4000-8000-000000000001",
        isMeta=True,
        message={
            "role": "user",
            "content": "<system-reminder>\nAs you answer the user's questions, you can use the following "
            "context:\n# claudeMd\nContents of /home/me/project/CLAUDE.md (project instructions, checked "
            "into the codebase):\n\nAlways run mix test before committing.\n</system-reminder>",
        },
    )
    recs[first] = dict(recs[first], parentUuid=reminder["uuid"])
    reminder["parentUuid"] = None
    path = tmp_path / "memory.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*recs[:first], reminder, *recs[first:]]))
    t = load(path)
    (memory,) = [m for m in t.messages if m.source.kind is SourceKind.PROJECT_INSTRUCTIONS]
    assert memory.source.name == "CLAUDE.md memory" and memory.source.pinned
    (task,) = [m for m in t.messages if m.source.kind is SourceKind.TASK]
    assert task.text.startswith("mix phx.server doesnt seem to start")


def test_a_clear_command_starts_a_new_task(tmp_path: Path) -> None:
    recs = [
        json.loads(x) for x in corpus_file("claude-code/applabnl-a9185eb7.jsonl").read_text().splitlines()
    ]
    prompts = [
        i
        for i, r in enumerate(recs)
        if r.get("type") == "user" and isinstance(r["message"].get("content"), str) and "Caveat" not in str(r)
    ]
    at = prompts[2]  # a later prompt ("We have now implemented this feature ...")
    clear = dict(
        recs[at],
        uuid="c1ea0000-0000-4000-8000-000000000001",
        message={
            "role": "user",
            "content": "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n"
            "<command-args></command-args>",
        },
    )
    recs[at] = dict(recs[at], parentUuid=clear["uuid"])
    path = tmp_path / "cleared.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*recs[:at], clear, *recs[at:]]))
    tasks = [m for m in load(path).messages if m.source.kind is SourceKind.TASK]
    assert [m.text[:40] for m in tasks] == [
        "I want claude sessions to optionally sta",
        "We have now implemented this feature on ",
    ]
