"""The OpenCollab reader: snapshot + journal replay, sources, requests, recorded shaping, detection."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from inspector.cli import main as cli_main
from inspector.formats import LoaderError, detect, load
from inspector.formats.detect import read_head
from inspector.formats.opencollab import (
    SKIP_FOLDED,
    SKIP_NONE,
    SKIP_TORN,
    OpencollabFormat,
    read_ledger,
    usage_of,
)
from inspector.model import EventKind, Message, Role, SourceKind, ToolCallBlock, ToolResultBlock, Usage
from inspector.tokens.harness import harness_tokens, opencollab_message_tokens, opencollab_text_tokens
from tests.conftest import CORPUS_DATA
from tools.samples import opencollab as sample
from tools.samples.opencollab import RUN_DIR, build_run, generate_run, write_final_snapshot

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
CODER = RUN_DIR / "agent_0_coder.json"
REVIEWER = RUN_DIR / "agent_1_reviewer.json"
JOURNAL = RUN_DIR / "agent_0_coder.json.journal"


def _copy_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(RUN_DIR, run)
    return run


def _journal_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write_journal(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _comparable(messages: list[Any]) -> list[dict[str, Any]]:
    return [replace(m, origin=None) for m in messages]


# -- the sample and its generator --------------------------------------------------------------


def test_committed_run_equals_a_fresh_generation(tmp_path: Path) -> None:
    info = generate_run(tmp_path / "fresh")
    fresh = {p.name: p.read_bytes() for p in sorted((tmp_path / "fresh").iterdir())}
    committed = {p.name: p.read_bytes() for p in sorted(RUN_DIR.iterdir())}
    assert (
        sorted(fresh)
        == sorted(committed)
        == [
            "agent_0_coder.json",
            "agent_0_coder.json.journal",
            "agent_1_reviewer.json",
            "agent_1_reviewer.json.journal",
            "team.json",
            "trajectory.jsonl",
        ]
    )
    for name in fresh:
        assert fresh[name] == committed[name], (
            f"{name} was edited by hand; run python -m tools.samples.opencollab"
        )
    assert info.bytes == sum(len(b) for b in committed.values()) < 300_000


def test_main_writes_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sample.main(["--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "28 requests" in out and "tool_output_clear x5" in out and "per_tool_budget x24" in out
    assert (tmp_path / "out" / "trajectory.jsonl").read_bytes() == (RUN_DIR / "trajectory.jsonl").read_bytes()


def test_the_sample_has_what_the_reader_must_handle() -> None:
    snapshot = json.loads(CODER.read_text(encoding="utf-8"))
    records = _journal_lines(JOURNAL)
    assert snapshot["snapshot_version"] == 1 and snapshot["_autosave_sequence"] == 16
    assert [r["sequence"] for r in records] == list(range(16, 32))  # 16 is already in the snapshot
    # every delta overlaps the ledger before it by one message
    count = len(snapshot["messages"])
    for r in records[1:]:
        assert r["replace_from"] == count - 1
        count = r["message_count"]
    # one delta rewrites the user turn the previous one appended (a steering note folded into it)
    assert records[1]["replace_from"] == records[0]["message_count"] - 1
    assert records[1]["messages"] == [
        {**records[0]["messages"][-1], "content": sample.FOLLOW_UP + sample.STEERING}
    ]
    shaping = [
        json.loads(line)["payload"]
        for line in (RUN_DIR / "trajectory.jsonl").read_text(encoding="utf-8").splitlines()
        if '"context_shaping"' in line
    ]
    assert Counter(p["rung"] for p in shaping if p["aid"] == 0) == {
        "per_tool_budget": 24,
        "tool_output_clear": 5,
        "none": 4,
    }


# -- snapshot + journal ------------------------------------------------------------------------


@pytest.mark.parametrize("aid", [0, 1])
def test_snapshot_plus_journal_equals_what_the_harness_writes_at_the_end(aid: int) -> None:
    final = build_run()[1].final_snapshots[aid]
    ledger = read_ledger(CODER if aid == 0 else REVIEWER)
    assert ledger.messages == final["messages"]
    assert ledger.sequence == final["_autosave_sequence"]
    assert ledger.meta == {k: v for k, v in final.items() if k not in ("messages", "_autosave_sequence")}
    assert ledger.issues == []
    # the journal mattered: the snapshot alone is an older ledger
    base = json.loads((CODER if aid == 0 else REVIEWER).read_text(encoding="utf-8"))
    assert len(base["messages"]) < len(final["messages"])


def test_loading_the_run_equals_loading_the_final_snapshot(tmp_path: Path) -> None:
    folder = tmp_path / "final"
    folder.mkdir()
    final = load(write_final_snapshot(0, folder / "agent_0_coder.json"))
    replayed = load(RUN_DIR)
    assert final.format == replayed.format == "opencollab"
    assert _comparable(final.messages) == _comparable(replayed.messages)
    assert len(replayed.messages) == 64
    users = [m for m in replayed.messages if m.role is Role.USER]
    assert [u.text.count("[steering") for u in users] == [0, 1]
    # where each message was last written: the snapshot (its place in `messages`) or a journal line
    assert replayed.messages[0].origin is not None and replayed.messages[0].origin.file == str(CODER)
    # the user turn was appended (journal line 1, already in the snapshot), rewritten with the steering
    # note (line 2), and written once more as the next record's one-message overlap (line 3)
    folded = users[1].origin
    assert folded is not None and folded.file == str(JOURNAL) and folded.line == 3


def test_a_torn_last_journal_line_is_ignored(tmp_path: Path) -> None:
    run = _copy_run(tmp_path)
    before = load(run)
    journal = run / JOURNAL.name
    with journal.open("ab") as fh:
        fh.write(b'{"journal_version":1,"sequence":32,"replace_from":63,"message_count":65,"messages":[{"ro')
    after = load(run)
    assert _comparable(after.messages) == _comparable(before.messages)
    assert after.load_issues == [] and after.skipped[SKIP_TORN] == 1
    assert SKIP_TORN not in before.skipped


def test_a_whole_last_record_without_its_newline_is_applied(tmp_path: Path) -> None:
    run = _copy_run(tmp_path)
    journal = run / JOURNAL.name
    records = _journal_lines(journal)
    extra = {
        **records[-1],
        "sequence": 32,
        "replace_from": records[-1]["message_count"],
        "message_count": records[-1]["message_count"] + 1,
        "messages": [{"role": "user", "content": "thanks!"}],
    }
    journal.write_text(journal.read_text(encoding="utf-8") + json.dumps(extra), encoding="utf-8")
    t = load(run)
    assert t.messages[-1].text == "thanks!" and t.load_issues == []


def test_a_broken_line_before_the_last_is_a_load_issue(tmp_path: Path) -> None:
    run = _copy_run(tmp_path)
    journal = run / JOURNAL.name
    lines = journal.read_text(encoding="utf-8").splitlines(keepends=True)
    lines.insert(5, '{"sequence": 20, "replace_from": \n')
    journal.write_text("".join(lines), encoding="utf-8")
    t = load(run)
    assert [(i.file, i.line) for i in t.load_issues] == [(str(journal), 6)]
    assert "invalid JSON" in t.load_issues[0].reason
    assert len(t.messages) == 64  # the records after it still apply


def test_records_already_in_the_snapshot_are_skipped(tmp_path: Path) -> None:
    committed = read_ledger(CODER)
    assert committed.skipped[SKIP_FOLDED] == 1 and committed.base_sequence == 16
    run = _copy_run(tmp_path)
    journal = run / JOURNAL.name
    records = _journal_lines(journal)
    # an old record that would truncate the ledger if it were applied
    stale = {
        "journal_version": 1,
        "sequence": 3,
        "replace_from": 1,
        "message_count": 2,
        "messages": [{"role": "user", "content": "old"}],
    }
    _write_journal(journal, [stale, *records])
    ledger = read_ledger(run / CODER.name)
    assert ledger.skipped[SKIP_FOLDED] == 2
    assert ledger.messages == committed.messages and ledger.issues == []


def test_a_sequence_that_does_not_advance_is_a_load_issue(tmp_path: Path) -> None:
    run = _copy_run(tmp_path)
    journal = run / JOURNAL.name
    records = _journal_lines(journal)
    _write_journal(
        journal,
        [*records[:5], {**records[4], "messages": [{"role": "user", "content": "dup"}]}, *records[5:]],
    )
    ledger = read_ledger(run / CODER.name)
    assert [(i.line, i.reason) for i in ledger.issues] == [
        (6, "journal sequence 20 is not after 20 (stale or conflicting); skipped")
    ]
    assert ledger.messages == read_ledger(CODER).messages


def test_a_message_count_mismatch_is_a_load_issue(tmp_path: Path) -> None:
    run = _copy_run(tmp_path)
    journal = run / JOURNAL.name
    records = _journal_lines(journal)
    records[7]["message_count"] += 2
    _write_journal(journal, records)
    t = load(run)
    assert [(i.file, i.line) for i in t.load_issues] == [(str(journal), 8)]
    reason = t.load_issues[0].reason
    assert "message_count" in reason and f"{records[7]['message_count']:,}" in reason
    assert len(t.messages) == 64  # the ledger is still the one the records build


def test_replace_from_past_the_end_is_a_load_issue(tmp_path: Path) -> None:
    run = _copy_run(tmp_path)
    journal = run / JOURNAL.name
    records = _journal_lines(journal)
    last = records[-1]
    records.append(
        {
            **last,
            "sequence": 32,
            "replace_from": 500,
            "message_count": 65,
            "messages": [{"role": "user", "content": "x"}],
        }
    )
    _write_journal(journal, records)
    ledger = read_ledger(run / CODER.name)
    assert len(ledger.messages) == 65 and ledger.messages[-1]["content"] == "x"
    assert [i.line for i in ledger.issues] == [len(records)]
    assert "past the end of the ledger (64 messages)" in ledger.issues[0].reason


# -- sources -----------------------------------------------------------------------------------


def test_ctx_priorities_become_sources() -> None:
    t = load(RUN_DIR)
    identity, team, repo_map, task = t.messages[:4]
    assert (identity.source.kind, identity.source.priority, identity.pinned) == (
        SourceKind.IDENTITY,
        100,
        True,
    )
    assert (team.source.kind, team.source.priority, team.pinned) == (SourceKind.TEAM, 90, True)
    assert (repo_map.source.kind, repo_map.source.priority, repo_map.pinned) == (
        SourceKind.PROJECT_MAP,
        30,
        False,
    )
    assert repo_map.source.name == "repo_map"
    assert (task.source.kind, task.source.priority, task.pinned) == (SourceKind.TASK, 80, True)
    # untagged: never pinned in OpenCollab, whatever the generic kind
    follow_up = [m for m in t.messages if m.role is Role.USER][1]
    assert follow_up.source.priority == 0 and not follow_up.pinned
    assert {m.source.kind for m in t.messages if m.role is Role.TOOL} == {SourceKind.TOOL_OUTPUT}
    assert [m.id for m in t.messages if m.pinned] == ["m1", "m2", "m4"]


def test_odd_ctx_tags(tmp_path: Path) -> None:
    snap = {
        "snapshot_version": 1,
        "aid": 3,
        "role": "scout",
        "model": "m",
        "messages": [
            {
                "role": "system",
                "content": "you",
                "_ctx": {"name": "identity", "layer": "IDENTITY", "priority": 100},
            },
            {
                "role": "system",
                "content": "skills",
                "_ctx": {"name": "catalog", "layer": "skill", "priority": "high"},
            },
            {
                "role": "system",
                "content": "memo",
                "_ctx": {"name": "memo", "layer": "memory", "priority": 20},
            },
            {"role": "user", "content": "go", "_ctx": "task"},
            {"role": "system", "content": "untagged system prompt"},
        ],
    }
    path = tmp_path / "agent_3_scout.json"
    path.write_text(json.dumps(snap, indent=2), encoding="utf-8")
    t = load(path)
    kinds = [(m.source.kind, m.source.priority) for m in t.messages]
    assert kinds == [
        (SourceKind.IDENTITY, 100),
        (SourceKind.SKILL, 85),  # a bad priority falls back to the layer's default
        (SourceKind.CONVERSATION, 20),  # an unknown layer keeps its priority
        (SourceKind.TASK, 0),  # no usable tag: the generic kind, never pinned
        (SourceKind.IDENTITY, 0),
    ]
    assert sorted(i.reason.split(" is ")[0] for i in t.load_issues) == ["`_ctx.priority`", "`_ctx`"]
    assert all(i.file == str(path) for i in t.load_issues)
    # no trajectory: one request per assistant message, or one over the whole ledger
    assert [(r.index, r.ledger_len, r.usage) for r in t.requests] == [(1, 5, None)]


# -- requests, usage, recorded shaping ----------------------------------------------------------


def _trace(aid: int) -> list[dict[str, Any]]:
    out = []
    for n, line in enumerate((RUN_DIR / "trajectory.jsonl").read_text(encoding="utf-8").splitlines(), 1):
        rec = json.loads(line)
        if rec["payload"].get("aid") == aid:
            out.append({**rec, "line": n})
    return out


def test_requests_come_from_llm_calls_and_assistant_messages() -> None:
    t = load(RUN_DIR)
    calls = [r for r in _trace(0) if r["type"] == "llm_call"]
    assistants = [i for i, m in enumerate(t.messages) if m.role is Role.ASSISTANT]
    assert len(t.requests) == len(calls) == len(assistants) == 28
    for req, call, pos in zip(t.requests, calls, assistants, strict=True):
        u = call["payload"]["usage"]
        assert req.usage is not None
        assert req.usage.context == u["input_tokens"]
        assert (req.usage.cache_read, req.usage.input, req.usage.output) == (
            u["cache_read_tokens"],
            u["uncached_input_tokens"],
            u["output_tokens"],
        )
        assert req.ledger_len == pos and req.response_id == t.messages[pos].id
        assert req.model == sample.MODEL and req.segment == 0
    assert t.requests[0].ledger_len == 4 and t.requests[0].stop_reason == "tool_calls"
    assert t.requests[-1].stop_reason == "stop"
    assert t.requests[0].timestamp == "2026-08-21T05:11:39.465+00:00"
    assert t.window == sample.CONTEXT_WINDOW == 65_536 and t.model == sample.MODEL
    assert t.session_id == "opencollab-run/agent_0"
    assert t.load_issues == []
    assert t.skipped[SKIP_NONE] == 4


def test_context_shaping_records_become_layer_fired_events() -> None:
    t = load(RUN_DIR)
    shaping = [r for r in _trace(0) if r["type"] == "context_shaping" and r["payload"]["rung"] != "none"]
    assert len(t.events) == len(shaping) == 29
    for e, rec in zip(t.events, shaping, strict=True):
        p = rec["payload"]
        assert e.kind is EventKind.LAYER_FIRED and e.layer == p["rung"]
        assert (e.pre_tokens, e.post_tokens) == (p["tokens_before"], p["tokens_after"])
        assert e.tokens_saved == p["tokens_before"] - p["tokens_after"]
        # shaping for the model call of step `seq` (= request seq) ran after request seq - 1
        assert e.after_request == p["seq"] - 1
        assert (e.file, e.line) == (str(RUN_DIR / "trajectory.jsonl"), rec["line"])
    clears = [e.after_request for e in t.events if e.layer == "tool_output_clear"]
    assert clears == [23, 24, 25, 26, 27]
    # the read of report.py (over the per-tool budget) came back after request 4
    assert min(e.after_request for e in t.events if e.layer == "per_tool_budget") == 4


def test_cleared_tool_ids_are_what_opencollab_cleared() -> None:
    """The trace names the rung only; the ids the reader derives equal the view the generator sent."""
    t = load(RUN_DIR)
    final = build_run()[1].final_snapshots[0]["messages"]
    replies = [i for i, m in enumerate(final) if m["role"] == "assistant"]
    clears = [e for e in t.events if e.layer == "tool_output_clear"]
    assert clears
    for e in clears:
        view, _ = sample.shape(final[: replies[e.after_request]])
        sent_cleared = tuple(m["tool_call_id"] for m in view if m.get("content") == sample.CLEARED)
        assert e.cleared_tool_ids == sent_cleared != ()
    assert all(e.cleared_tool_ids == () for e in t.events if e.layer == "per_tool_budget")


def test_recorded_shaping_in_report_json_and_fidelity(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["report", str(RUN_DIR), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["format"] == "opencollab"
    events = report["recorded_events"]
    assert {e["kind"] for e in events} == {"layer_fired"}
    assert Counter(e["layer"] for e in events) == {"per_tool_budget": 24, "tool_output_clear": 5}
    first_clear = next(e for e in events if e["layer"] == "tool_output_clear")
    assert (first_clear["after_request"], first_clear["pre_tokens"], first_clear["post_tokens"]) == (
        23,
        34_140,
        14_262,
    )
    assert (report["budget"]["window"], report["budget"]["window_source"]) == (65_536, "transcript")
    assert (report["budget"]["trigger"], report["budget"]["target"]) == (32_536, 24_402)
    fidelity = report["fidelity"]
    layered = [e for e in fidelity["events"] if e["kind"] == "layer_fired"]
    assert len(layered) == 29
    budget = [e for e in layered if e["layer"] == "per_tool_budget"]
    # the per-tool budget has no threshold: the simulated one fires before the same requests
    assert all(e["match"] and e["recorded_after_request"] == e["simulated_after_request"] for e in budget)
    clears = [e for e in layered if e["layer"] == "tool_output_clear"]
    assert [e["recorded_after_request"] for e in clears] == [23, 24, 25, 26, 27]
    assert all(e["counted"] and e["threshold"] == 32_536 for e in clears)
    # OpenCollab clears at every request from 23 on (it shapes each request from its raw ledger):
    # the policy, deciding with OpenCollab's own sizes, clears before the same requests
    assert all(e["match"] and e["simulated_after_request"] == e["recorded_after_request"] for e in clears)
    # and the clearing gets the view under the trigger: no compaction, recorded or simulated
    assert not [e for e in fidelity["events"] if e["kind"] == "compaction"]
    assert (fidelity["matches"], fidelity["misses"]) == (29, 0)
    assert [s["agent_id"] for s in report["subagents"]] == ["1"]


def test_the_harness_estimate_is_opencollabs_own() -> None:
    """Before each request, the harness estimate is what OpenCollab recorded estimating the raw
    ledger (the `pre_tokens` of its first rung), to the token."""
    t = load(RUN_DIR)
    est = harness_tokens(t, "heuristic")
    firsts = {e.after_request: e for e in reversed(t.events) if e.kind is EventKind.LAYER_FIRED}
    assert len(firsts) == 24
    assert {a: est[a] for a in firsts} == {a: e.pre_tokens for a, e in firsts.items()}
    assert est[23] == 34_383 > 32_536  # request 24: over the trigger, so tool output is cleared


def test_opencollab_estimator_pieces() -> None:
    for text in ("", "ab", "abcdefghi", "日本語", "é" * 10, "x" * 90 + "語" * 10):
        assert opencollab_text_tokens(text) == sample.estimate_tokens(text)
    assert opencollab_text_tokens("x" * 90 + "語" * 10) == 46  # (100 - 20) // 3 + 20
    calls_only = Message(
        id="a",
        role=Role.ASSISTANT,
        blocks=(ToolCallBlock(id="c1", name="grep", arguments={"pattern": "x", "path": "src"}),),
    )
    raw = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "grep", "arguments": '{"pattern": "x", "path": "src"}'},
            }
        ],
    }
    assert opencollab_message_tokens(calls_only) == sample.estimate_message(raw)
    result = Message(
        id="t",
        role=Role.TOOL,
        blocks=(ToolResultBlock(call_id="c1", tool_name="grep", content="src/a.py:1: x\n"),),
    )
    raw_result = {"role": "tool", "tool_call_id": "c1", "name": "grep", "content": "src/a.py:1: x\n"}
    assert opencollab_message_tokens(result) == sample.estimate_message(raw_result)


def test_usage_mapping() -> None:
    problems: list[str] = []
    openai = {"prompt_tokens": 1000, "completion_tokens": 50, "prompt_tokens_details": {"cached_tokens": 800}}
    assert usage_of(openai, problems) == Usage(input=200, cache_read=800, output=50)
    anthropic = {
        "input_tokens": 10,
        "cache_read_input_tokens": 900,
        "cache_creation_input_tokens": 90,
        "output_tokens": 7,
    }
    assert usage_of(anthropic, problems) == Usage(input=10, cache_read=900, cache_write=90, output=7)
    deepseek = {"prompt_tokens": 500, "prompt_cache_hit_tokens": 300, "completion_tokens": 9}
    assert usage_of(deepseek, problems) == Usage(input=200, cache_read=300, output=9)
    assert problems == []
    assert usage_of({"input_tokens": -4, "output_tokens": "many"}, problems) == Usage()
    assert len(problems) == 2
    assert usage_of(None, problems) is None


def test_estimated_usage_is_not_a_report(tmp_path: Path) -> None:
    run = _copy_run(tmp_path)
    trajectory = run / "trajectory.jsonl"
    lines = trajectory.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines):
        rec = json.loads(line)
        if rec["type"] == "llm_call" and rec["payload"]["aid"] == 0 and rec["payload"]["seq"] == 2:
            rec["payload"]["usage"]["estimated"] = True
            lines[n] = json.dumps(rec)
    trajectory.write_text("\n".join(lines) + "\n", encoding="utf-8")
    t = load(run)
    assert t.requests[1].usage is None and t.requests[0].usage is not None
    assert t.skipped["llm_call usage estimated by the harness (not a provider report)"] == 1


def test_a_torn_trajectory_line_and_a_cut_short_trajectory(tmp_path: Path) -> None:
    run = _copy_run(tmp_path)
    trajectory = run / "trajectory.jsonl"
    lines = trajectory.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = next(
        n
        for n, line in enumerate(lines)
        if '"llm_call"' in line and '"seq":20,' in line and '"aid":0' in line
    )
    trajectory.write_text("".join(lines[:cut]) + lines[cut][:40], encoding="utf-8")
    t = load(run)
    assert t.load_issues == [] and t.skipped["trajectory: torn last line"] == 1
    assert len(t.requests) == 28  # the assistant messages still make requests, without usage
    assert [r.usage is None for r in t.requests].index(True) == 19
    assert max(e.after_request for e in t.events) == 19  # shaping before request 20 was traced


# -- agents, detection, read-only --------------------------------------------------------------


def test_a_run_with_several_agents() -> None:
    t = load(RUN_DIR)
    assert t.title == "agent 0 · coder (opencollab-run)"
    (sub,) = t.subagents
    assert (sub.agent_id, sub.agent_type, sub.path, sub.messages, sub.requests) == (
        "1",
        "reviewer",
        str(REVIEWER),
        10,
        4,
    )
    assert sub.description is not None and sub.description.startswith("Review the uncommitted change")
    chosen = OpencollabFormat().load(RUN_DIR, agent=1)
    direct = load(REVIEWER)
    for r in (chosen, direct):
        assert r.path == str(REVIEWER) and len(r.requests) == 4 and len(r.messages) == 10
        assert r.events == [] and r.subagents == [] and r.load_issues == []
        assert r.skipped[SKIP_NONE] == 4 and r.window == 65_536
    assert _comparable(chosen.messages) == _comparable(direct.messages)
    via_journal = load(RUN_DIR / "agent_1_reviewer.json.journal")
    assert via_journal.path == str(REVIEWER)
    with pytest.raises(LoaderError, match="no agent 7"):
        OpencollabFormat().load(RUN_DIR, agent=7)


def test_detection_picks_the_opencollab_reader() -> None:
    for path in (RUN_DIR, CODER, REVIEWER, JOURNAL):
        assert detect(path).format == "opencollab", path
    for path in (RUN_DIR / "trajectory.jsonl", RUN_DIR / "team.json"):
        assert not OpencollabFormat().sniff(path, read_head(path))


def test_detection_still_picks_the_right_reader_for_other_files(tmp_path: Path) -> None:
    samples = sorted((ROOT / "inspector" / "samples").glob("*.jsonl"))
    assert samples
    for path in samples:
        assert detect(path).format == "claude-code", path
    chat = tmp_path / "chat.json"
    chat.write_text(
        json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}, indent=2)
    )
    assert detect(chat).format == "generic"
    if not CORPUS.exists():
        pytest.skip(f"the shared corpus is not here ({CORPUS} absent)")
    expected = {
        "claude-code": "claude-code",
        "claude-code-json-array": "claude-code",
        "codex": "codex",
        "opencode": "opencode",
    }
    files = [
        p
        for p in sorted(CORPUS.rglob("*"))
        if p.is_file() and p.suffix in (".jsonl", ".json", ".sql") and p.name not in CORPUS_DATA
    ]
    assert len(files) >= 12
    fmt = OpencollabFormat()
    for path in files:
        assert not fmt.sniff(path, read_head(path)), path
        try:
            found = detect(path).format
        except LoaderError:
            assert path.suffix == ".sql", path  # an SQL text dump, not a database: no reader claims it
            continue
        assert found == expected[path.relative_to(CORPUS).parts[0]], path
    for folder in sorted(p for p in CORPUS.rglob("*") if p.is_dir()):
        assert not fmt.sniff(folder, b""), folder


def test_loading_writes_nothing_next_to_the_run(tmp_path: Path) -> None:
    run = _copy_run(tmp_path)

    def state() -> dict[str, tuple[int, int]]:
        return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in run.iterdir()}

    before = state()
    for p in run.iterdir():
        p.chmod(0o444)
    run.chmod(0o555)
    try:
        t = load(run)
        load(run / CODER.name)
        OpencollabFormat().load(run, agent=1)
        assert cli_main(["report", str(run), "--json"]) == 0
    finally:
        run.chmod(0o755)
    assert state() == before
    assert not [p for p in run.iterdir() if p.name.endswith(".lock") or p.name.startswith(".")]
    assert len(t.messages) == 64 and os.access(run / CODER.name, os.R_OK)


def test_encrypted_reasoning_and_odd_records(tmp_path: Path) -> None:
    snap = {
        "snapshot_version": 1,
        "aid": 2,
        "role": "coder",
        "model": "gpt-5.6-luna",
        "_autosave_sequence": 1,
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": "done",
                "response_items": [
                    {"type": "reasoning", "encrypted_content": "e" * 900, "summary": []},
                    {"type": "message", "content": []},
                ],
            },
            {"role": "tool", "tool_call_id": "nowhere", "content": "orphan"},
            {"role": "wizard", "content": "?"},
        ],
    }
    path = tmp_path / "agent_2_coder.json"
    path.write_text(json.dumps(snap, indent=2), encoding="utf-8")
    t = load(path)
    assert [m.id for m in t.messages] == ["m1", "m2", "m3"]  # ids keep their ledger positions
    reasoning = t.messages[1].blocks[0]
    assert reasoning.type == "reasoning" and reasoning.signed and reasoning.redacted
    assert reasoning.signature_chars == 900
    reasons = sorted(i.reason for i in t.load_issues)
    assert any("orphan" in r for r in reasons) and any("unknown role" in r for r in reasons)
    assert {i.line for i in t.load_issues} == {3, 4}  # the message's place in the snapshot
