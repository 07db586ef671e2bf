"""The Claude Code reader against the real corpus and against broken files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inspector.formats import LoaderError, load
from inspector.formats.claude_code import ClaudeCodeReader
from inspector.model import EventKind, Role, SourceKind, ToolCallBlock, ToolResultBlock
from tests.conftest import CORPUS, FA812, claude_code_corpus, corpus_file


def test_fa812bfe_requests_and_context() -> None:
    t = load(corpus_file(FA812.relative_to(CORPUS).as_posix()))
    assert t.format == "claude-code"
    assert len(t.requests) == 157
    assert t.requests[0].usage is not None and t.requests[0].usage.context == 26061
    last = t.requests[-1]
    assert last.usage is not None
    # the final main-chain response: input + cache_creation + cache_read, with the largest output
    final = [json.loads(line) for line in FA812.read_text().splitlines()]
    final_assistant = [r for r in final if r["type"] == "assistant" and not r.get("isSidechain")][-1]
    u = final_assistant["message"]["usage"]
    assert (
        last.usage.context
        == u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
        == 76350
    )
    assert t.model == "claude-opus-4-6"


def test_fa812bfe_streamed_lines_merge_by_message_id_keeping_largest_output() -> None:
    path = corpus_file(FA812.relative_to(CORPUS).as_posix())
    records = [json.loads(line) for line in path.read_text().splitlines()]
    outputs: dict[str, int] = {}
    for r in records:
        if r["type"] == "assistant" and not r.get("isSidechain"):
            mid = r["message"]["id"]
            outputs[mid] = max(outputs.get(mid, 0), r["message"]["usage"]["output_tokens"])
    t = load(path)
    assert len({m.response_id for m in t.messages if m.role is Role.ASSISTANT}) == 157
    for req in t.requests:
        resp = t.message(req.response_id or "")
        assert req.usage is not None and req.usage.output == outputs[resp.response_id or ""]
    assert sum(r.usage.output for r in t.requests if r.usage) == sum(outputs.values())


def test_fa812bfe_auto_compaction_resets_the_ledger() -> None:
    t = load(corpus_file(FA812.relative_to(CORPUS).as_posix()))
    compactions = [e for e in t.events if e.kind is EventKind.COMPACTION]
    assert len(compactions) == 1
    c = compactions[0]
    assert (c.trigger, c.pre_tokens, c.after_request) == ("auto", 167117, 126)
    usage = t.request(126).usage
    assert usage is not None and usage.context == 166874
    assert t.request(127).segment == 1 and t.request(127).ledger_len == 1
    ledger = t.ledger(127)
    assert len(ledger) == 1 and ledger[0].is_summary
    assert ledger[0].text.startswith("This session is being continued from a previous conversation")
    assert c.call_file is not None and Path(c.call_file).name == "agent-acompact-70d8e7.jsonl"
    # the file keeps everything: the full history holds both segments
    assert len(t.messages) == len(t.segments[0].message_ids) + len(t.segments[1].message_ids)


def test_fa812bfe_subagents() -> None:
    t = load(corpus_file(FA812.relative_to(CORPUS).as_posix()))
    ids = [s.agent_id for s in t.subagents]
    assert ids == ["a93ccab"]
    assert t.subagents[0].requests == 11
    assert not any("acompact" in s.agent_id for s in t.subagents)


def test_fa812bfe_every_tool_call_answered_in_ledger_order() -> None:
    t = load(corpus_file(FA812.relative_to(CORPUS).as_posix()))
    for seg in t.segments:
        seen_calls: set[str] = set()
        for mid in seg.message_ids:
            m = t.message(mid)
            for b in m.blocks:
                if isinstance(b, ToolCallBlock):
                    seen_calls.add(b.id)
                elif isinstance(b, ToolResultBlock):
                    assert b.call_id in seen_calls, f"result {b.call_id} before its call in {m.origin}"
    tools = {b.tool_name for m in t.messages for b in m.tool_results}
    assert {"Read", "Bash", "Edit"} <= tools


def test_manual_compaction() -> None:
    t = load(corpus_file("claude-code/fasthooks-manual-compact.jsonl"))
    comps = [e for e in t.events if e.kind is EventKind.COMPACTION]
    assert [(e.trigger, e.pre_tokens) for e in comps] == [("manual", 21558)]
    assert any(m.has_reasoning for m in t.messages)
    assert any(b.is_error for m in t.messages for b in m.tool_results)


def test_rewind_follows_newest_leaf_and_reports_abandoned_branch() -> None:
    t = load(corpus_file("claude-code/claude-code-log-dag-compact-after-rewind.jsonl"))
    texts = [m.text for m in t.messages]
    assert "First attempt" not in texts and "First answer" not in texts
    assert texts[:5] == ["Start", "Ready", "Second attempt", "Second answer", "Keep going"]
    assert texts[-2:] == ["After compaction", "Final answer"]
    assert [(a.fork_id, a.message_ids) for a in t.abandoned] == [("a1", ("b1u", "b1a"))]
    # after the compaction: the summary, then the preserved messages, then what followed
    assert list(t.segments[1].message_ids) == ["cs", "b2a", "b2u2", "b2a2", "p1u", "p1a"]
    assert t.events[0].preserved_ids == ("b2a", "b2u2", "b2a2")


def test_inline_sidechains_stay_out_of_the_main_ledger() -> None:
    path = corpus_file("claude-code/claude-code-viewer-inline-sidechains.jsonl")
    t = load(path)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    side = {r["uuid"] for r in records if r.get("isSidechain")}
    assert side and not side & {m.id for m in t.messages}
    assert not any(m.sidechain for m in t.messages)
    main_ids = {r["message"]["id"] for r in records if r["type"] == "assistant" and not r.get("isSidechain")}
    assert len(t.requests) == len(main_ids) == 9
    assert len(t.subagents) == 5 and all(s.layout == "inline (1.0)" for s in t.subagents)
    assert t.title == "Empty Repo Setup: CLAUDE.md Foundation Created"


@pytest.mark.parametrize("path", claude_code_corpus(), ids=lambda p: p.name)
def test_every_corpus_file_loads_without_issues(path: Path) -> None:
    t = load(path)
    assert t.load_issues == []
    assert t.requests, "every corpus file has at least one request"
    assert all(r.usage is not None and r.usage.context > 0 for r in t.requests)


def test_first_human_prompt_is_the_pinned_task() -> None:
    t = load(corpus_file("claude-code/spotter-short.jsonl"))
    first_human = next(m for m in t.messages if m.is_human)
    assert first_human.source.kind is SourceKind.TASK and first_human.pinned
    assert first_human.text == "mix phx.server doesnt seem to start"


def _line(**rec: object) -> bytes:
    return json.dumps(rec).encode() + b"\n"


def _user(uuid: str, parent: str | None, text: str) -> bytes:
    return _line(
        type="user", uuid=uuid, parentUuid=parent, sessionId="s", message={"role": "user", "content": text}
    )


def _assistant(uuid: str, parent: str, mid: str, text: str, out: int = 5) -> bytes:
    usage = {
        "input_tokens": 10,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 1000,
        "output_tokens": out,
    }
    return _line(
        type="assistant",
        uuid=uuid,
        parentUuid=parent,
        sessionId="s",
        message={
            "id": mid,
            "role": "assistant",
            "model": "claude-x",
            "content": [{"type": "text", "text": text}],
            "usage": usage,
        },
    )


def test_broken_file_loads_the_rest_and_reports_each_problem(tmp_path: Path) -> None:
    data = (
        _user("u1", None, "hello")
        + _assistant("a1", "u1", "m1", "hi")
        + b'{"type": "user", "uuid": "u2", "parentUuid": "a1", "message": {"role": "user", "content": "caf\xff"}}\n'
        + _line(type="brand-new-record-type", uuid="x1", parentUuid="a1")
        + _user("u3", "a1", "next")
        + _assistant("a3", "u3", "m3", "done")
        + b'{"type": "user", "uuid": "u4", "parentUuid": "a3", "mess'
    )
    path = tmp_path / "broken.jsonl"
    path.write_bytes(data)
    t = load(path)
    assert [m.text for m in t.messages] == ["hello", "hi", "next", "done"]
    assert len(t.requests) == 2
    reasons = {i.line: i.reason for i in t.load_issues}
    assert set(reasons) == {3, 7}
    assert "UTF-8" in reasons[3]
    assert "truncated last line" in reasons[7]
    assert t.skipped == {"unknown:brand-new-record-type": 1}


def test_incremental_feed_matches_whole_load_whatever_the_split(tmp_path: Path) -> None:
    path = corpus_file("claude-code/fasthooks-manual-compact.jsonl")
    data = path.read_bytes()
    whole = load(path)
    for step in (1, 7, 4096):
        reader = ClaudeCodeReader(path)
        for i in range(0, len(data), step):
            reader.feed(data[i : i + step])
        reader.finish()
        t = reader.transcript()
        assert [m.id for m in t.messages] == [m.id for m in whole.messages]
        assert [r.usage for r in t.requests] == [r.usage for r in whole.requests]


def test_partial_last_line_is_held_back_until_its_newline(tmp_path: Path) -> None:
    reader = ClaudeCodeReader(tmp_path / "x.jsonl")
    whole = _user("u1", None, "hello") + _assistant("a1", "u1", "m1", "hi")
    cut = len(whole) - 10
    reader.feed(whole[:cut])
    assert [m.text for m in reader.transcript().messages] == ["hello"]
    reader.feed(whole[cut:])
    assert [m.text for m in reader.transcript().messages] == ["hello", "hi"]


def test_parent_cycle_is_a_load_issue_not_a_hang(tmp_path: Path) -> None:
    path = tmp_path / "cycle.jsonl"
    path.write_bytes(_user("u1", "a1", "hello") + _assistant("a1", "u1", "m1", "hi"))
    t = load(path)
    assert any("cycle" in i.reason for i in t.load_issues)
    assert [m.text for m in t.messages] == ["hello", "hi"]


def test_missing_and_unreadable_paths_are_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LoaderError, match="no such file"):
        load(tmp_path / "nope.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(LoaderError, match="empty"):
        load(empty)
    junk = tmp_path / "junk.txt"
    junk.write_text("just some words\n")
    with pytest.raises(LoaderError, match="not a transcript"):
        load(junk)


def test_hook_output_missing_from_the_session_is_recovered_from_the_compaction_call() -> None:
    t = load(corpus_file(FA812.relative_to(CORPUS).as_posix()))
    recovered = [
        m
        for m in t.messages
        if m.origin is not None and m.origin.file.endswith("agent-acompact-70d8e7.jsonl")
    ]
    assert len(recovered) == 13
    assert all(m.is_meta and m.text.startswith("<system-reminder>") for m in recovered)
    assert sum("PostToolUse:Edit hook additional context" in m.text for m in recovered) == 12
    # each sits right after the session line it hangs off (its parentUuid), in the first segment
    order = list(t.segments[0].message_ids)
    first = recovered[0]
    before = t.message(order[order.index(first.id) - 1])
    assert before.origin is not None and before.origin.line == 827 and before.is_tool_result
    # requests made after it see it in their ledger
    holding = [r.index for r in t.requests if r.segment == 0 and r.ledger_len > order.index(first.id)]
    assert holding[0] == 57 and holding[-1] == 126
    assert len(t.requests) == 157
