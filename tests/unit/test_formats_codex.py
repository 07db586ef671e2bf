"""The Codex rollout reader: corpus rollouts, compaction, incremental feeding, bad lines, detection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from inspector.formats import load
from inspector.formats.codex import SUMMARY_PREFIX, CodexFormat, CodexReader, load_codex
from inspector.formats.detect import detect, read_head
from inspector.formats.generic import GenericChatFormat
from inspector.formats.opencode import OpencodeFormat
from inspector.model import (
    EventKind,
    ReasoningBlock,
    Role,
    SourceKind,
    TextBlock,
    ToolCallBlock,
)

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
LAZY = "lazyagents-codex-0.158.0-rollout.jsonl"
REAL = "agent-history-real-session-01.jsonl"
SYNTH = "agent-history-synthetic-compaction.jsonl"
CODEX_FILES = [LAZY, REAL, SYNTH]


def corpus(*parts: str) -> Path:
    path = CORPUS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"the shared corpus is not here ({CORPUS} absent): a fresh clone has no ../shared/corpus")
    return path


def claude_files() -> list[Path]:
    folder = corpus("claude-code")
    files = sorted(folder.rglob("*.jsonl"))
    assert files
    return files


def line(timestamp: str, rtype: str, payload: dict[str, Any]) -> str:
    return json.dumps({"timestamp": timestamp, "type": rtype, "payload": payload})


def token_count(inp: int, cached: int, out: int, reasoning: int = 0, window: int = 258400) -> dict[str, Any]:
    usage = {
        "input_tokens": inp,
        "cached_input_tokens": cached,
        "output_tokens": out,
        "reasoning_output_tokens": reasoning,
        "total_tokens": inp + out,
    }
    return {
        "type": "token_count",
        "info": {"total_token_usage": usage, "last_token_usage": usage, "model_context_window": window},
    }


def sample_rollout() -> list[str]:
    """A small well-formed 2025-style rollout: two model calls, one tool call."""
    ts = "2025-11-01T10:00:00.000Z"
    return [
        line(
            ts,
            "session_meta",
            {
                "id": "sess-1",
                "cwd": "/w",
                "cli_version": "0.60.0",
                "base_instructions": {"text": "You are Codex."},
            },
        ),
        line(ts, "turn_context", {"cwd": "/w", "model": "gpt-5-codex"}),
        line(
            ts,
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "list the files"}],
            },
        ),
        line(
            ts,
            "response_item",
            {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gAAAAB" + "x" * 94},
        ),
        line(
            ts,
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command": ["ls"]}',
                "call_id": "call_a",
            },
        ),
        line(ts, "event_msg", token_count(1000, 800, 50, 20)),
        line(
            ts,
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "call_a",
                "output": "Exit code: 2\nOutput:\nno such dir",
            },
        ),
        line(
            ts,
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "It failed."}],
            },
        ),
        line(ts, "event_msg", token_count(1100, 1000, 10)),
    ]


# -- the corpus ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CODEX_FILES)
def test_every_corpus_rollout_loads_cleanly_with_usage(name: str) -> None:
    t = load_codex(corpus("codex", name))
    assert t.format == "codex"
    assert t.load_issues == []
    assert any(r.usage is not None and r.usage.context > 0 for r in t.requests)
    ids = [m.id for m in t.messages]
    assert len(ids) == len(set(ids))
    for r in t.requests:
        assert r.index == t.requests.index(r) + 1
        assert 0 <= r.ledger_len <= len(t.segments[r.segment].message_ids)
        if r.response_id is not None:
            assert t.message(r.response_id).role is Role.ASSISTANT


def test_lazyagents_rollout_2026_envelope() -> None:
    t = load_codex(corpus("codex", LAZY))
    assert t.window == 258400  # as the file states it: already 95% of a 272,000 window
    assert b"258400" in msgspec.json.encode(t)
    assert t.session_id == "01a0f21c-5c40-7f72-9aa9-ef0b43570680"
    assert t.model == "fake-model"
    assert [m.role for m in t.messages] == [
        Role.SYSTEM,  # base_instructions
        Role.SYSTEM,  # developer message
        Role.USER,  # environment context
        Role.USER,  # the task
        Role.ASSISTANT,
        Role.TOOL,
        Role.ASSISTANT,
    ]
    system, developer, env, task, call, result, answer = t.messages
    assert system.text.startswith("You are a coding agent") and system.pinned
    assert developer.source.kind is SourceKind.IDENTITY and len(developer.blocks) == 2
    assert env.source.kind is SourceKind.IDENTITY and env.is_meta
    assert task.source.kind is SourceKind.TASK and task.text == "run echo fixture please" and task.is_human
    assert call.tool_calls == (
        ToolCallBlock(id="call_1", name="exec_command", arguments={"cmd": "echo fixture"}),
    )
    (res,) = result.tool_results
    assert res.call_id == "call_1" and res.tool_name == "exec_command" and not res.is_error
    assert res.content.endswith("Process exited with code 0\nOriginal token count: 2\nOutput:\nfixture\n")
    assert result.source.kind is SourceKind.TOOL_OUTPUT
    assert answer.text == "The command printed fixture."
    assert task.origin is not None and task.origin.line == 7

    assert len(t.requests) == 2
    r1, r2 = t.requests
    assert (r1.ledger_len, r1.response_id) == (4, call.id)
    assert r1.usage is not None and (r1.usage.input, r1.usage.cache_read, r1.usage.output) == (120, 0, 8)
    assert r1.usage.context == 120
    assert (r2.ledger_len, r2.response_id) == (6, answer.id)
    assert r2.usage is not None and (r2.usage.input, r2.usage.cache_read, r2.usage.output) == (50, 100, 6)
    assert r2.usage.context == 150
    assert t.segments[0].message_ids == tuple(m.id for m in t.messages)
    assert t.events == []
    assert t.skipped["token_usage_record"] == 2
    assert t.skipped["world_state"] == 1
    assert t.skipped["event_msg/item_completed"] == 3


def test_real_session_usage_maps_cached_tokens() -> None:
    t = load_codex(corpus("codex", REAL))
    assert (len(t.messages), len(t.requests)) == (5, 1)
    (r,) = t.requests
    assert r.usage is not None
    # input_tokens 22539 include cached_input_tokens 20864
    assert (r.usage.input, r.usage.cache_read, r.usage.cache_write) == (1675, 20864, 0)
    assert r.usage.context == 22539
    assert r.usage.output == 10
    assert r.ledger_len == 4
    assert t.window == 258400
    assert t.model == "gpt-5.5"
    assert t.message(r.response_id or "").text == "[REDACTED_ASSISTANT_TEXT]"
    assert [m.source.kind for m in t.messages[:4]] == [
        SourceKind.IDENTITY,
        SourceKind.IDENTITY,
        SourceKind.IDENTITY,
        SourceKind.TASK,
    ]


def test_synthetic_compaction_starts_a_new_segment() -> None:
    t = load_codex(corpus("codex", SYNTH))
    assert t.load_issues == []
    assert len(t.segments) == 2
    (event,) = t.events
    assert event.kind is EventKind.COMPACTION
    assert event.segment == 1 and event.line == 13
    assert event.after_request == 4
    assert t.segments[1].started_by == 0
    summary = t.message(event.summary_id or "")
    assert summary.is_summary and summary.role is Role.USER
    assert summary.source.kind is SourceKind.SUMMARY
    assert summary.text.startswith("**Progress + Plan Status**")
    seg0, seg1 = t.segments
    assert len(seg0.message_ids) == 8
    assert seg1.message_ids[0] == summary.id and len(seg1.message_ids) == 5
    assert t.message(seg1.message_ids[1]).text == "Now add the authentication middleware"

    assert len(t.requests) == 6
    assert [(r.segment, r.ledger_len) for r in t.requests] == [(0, 1), (0, 3), (0, 5), (0, 7), (1, 2), (1, 4)]
    assert all(r.usage is None for r in t.requests[:5])
    last = t.requests[-1].usage
    assert last is not None
    assert (last.input, last.cache_read, last.output, last.reasoning) == (1500, 500, 1000, 200)
    assert last.context == 2000
    assert t.window == 128000 and t.model == "gpt-4.5-turbo"
    # reasoning + text + tool call of one response are one assistant message
    first_reply = t.message(t.requests[0].response_id or "")
    assert [type(b) for b in first_reply.blocks] == [ReasoningBlock, TextBlock, ToolCallBlock]
    assert first_reply.tool_calls[0].name == "shell"
    assert first_reply.tool_calls[0].arguments == {"command": "cat src/routes.py"}
    reasoning = first_reply.blocks[0]
    assert isinstance(reasoning, ReasoningBlock) and not reasoning.signed
    assert reasoning.text == "Planning API endpoint structure"
    # the ledger at a request after the compaction begins with the summary
    assert t.ledger(5)[0].id == summary.id
    assert t.ledger(4)[-1].text == "Now add product endpoints"


@pytest.mark.parametrize("name", CODEX_FILES)
def test_detection_picks_codex_for_corpus_rollouts(name: str) -> None:
    path = corpus("codex", name)
    assert detect(path).format == "codex"
    assert msgspec.to_builtins(load(path)) == msgspec.to_builtins(load_codex(path))
    head = read_head(path)
    assert not OpencodeFormat().sniff(path, head)
    assert not GenericChatFormat().sniff(path, head)


def test_codex_sniff_rejects_claude_code_and_other_corpus_files() -> None:
    fmt = CodexFormat()
    for path in claude_files():
        assert not fmt.sniff(path, read_head(path)), path
        assert detect(path).format == "claude-code", path
    for path in sorted(corpus("opencode").iterdir()):
        assert not fmt.sniff(path, read_head(path)), path


# -- synthetic rollouts ------------------------------------------------------------------------------
def test_sample_rollout_requests_errors_and_signed_reasoning(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(sample_rollout()) + "\n")
    assert detect(path).format == "codex"
    t = load_codex(path)
    assert t.load_issues == []
    assert [m.role for m in t.messages] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    reasoning = t.messages[2].blocks[0]
    assert isinstance(reasoning, ReasoningBlock) and reasoning.signed and reasoning.redacted
    assert reasoning.signature_chars == 100
    (res,) = t.messages[3].tool_results
    assert res.is_error and res.tool_name == "shell"
    assert [(r.ledger_len, r.usage.context if r.usage else None) for r in t.requests] == [
        (2, 1000),
        (4, 1100),
    ]
    assert t.requests[0].usage is not None and t.requests[0].usage.reasoning == 20


def test_truncated_last_line_and_invalid_line_are_reported_by_line(tmp_path: Path) -> None:
    lines = sample_rollout()
    lines.insert(4, '{"timestamp": "2025-11-01T10:00:00.000Z", "type": "response_item", "payload": {oops')
    text = "\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2]  # torn write, no newline
    path = tmp_path / "rollout.jsonl"
    path.write_text(text)
    t = load_codex(path)
    assert [(i.line, i.file) for i in t.load_issues] == [(5, str(path)), (10, str(path))]
    assert "invalid JSON" in t.load_issues[0].reason
    assert "truncated last line" in t.load_issues[1].reason
    # everything else still loads: 5 messages, both requests, the first with its usage
    assert len(t.messages) == 5
    assert len(t.requests) == 2
    assert t.requests[0].usage is not None and t.requests[0].usage.context == 1000
    assert t.requests[1].usage is None


def test_incremental_feeding_holds_back_the_partial_line(tmp_path: Path) -> None:
    data = ("\n".join(sample_rollout()) + "\n").encode()
    whole = CodexReader(tmp_path / "r.jsonl")
    whole.feed(data)
    whole.finish()
    expected = whole.transcript()

    reader = CodexReader(tmp_path / "r.jsonl")
    cut = data.index(b'"function_call"') + 5  # in the middle of line 5
    reader.feed(data[:cut])
    partial = reader.transcript()
    assert reader.lines_read == 4
    assert len(partial.messages) == 3 and len(partial.requests) == 1
    assert partial.load_issues == []
    for i in range(cut, len(data), 7):
        reader.feed(data[i : i + 7])
    reader.finish()
    got = reader.transcript()
    assert msgspec.to_builtins(got) == msgspec.to_builtins(expected)


def test_replacement_history_becomes_the_new_segment(tmp_path: Path) -> None:
    ts = "2026-03-01T10:00:00.000Z"
    summary = f"{SUMMARY_PREFIX} on a different task.\nDone: parsed the config."
    lines = [
        *sample_rollout(),
        line(
            ts,
            "compacted",
            {
                "message": "",
                "replacement_history": [
                    {
                        "type": "message",
                        "role": "developer",
                        "content": [{"type": "input_text", "text": "<permissions>"}],
                    },
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": "list the files"}],
                    },
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": summary}]},
                    {"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}},
                ],
            },
        ),
        line(ts, "event_msg", token_count(300, 0, 5)),  # a call with no recorded output
        line(
            ts,
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Continuing."}],
            },
        ),
        line(ts, "event_msg", token_count(320, 300, 5)),
        line(ts, "event_msg", token_count(320, 300, 5)),  # repeated report: not a new call
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(lines) + "\n")
    t = load_codex(path)
    assert t.load_issues == []
    (event,) = t.events
    assert (event.segment, event.after_request, event.line) == (1, 2, 10)
    seg = t.segments[1].message_ids
    assert seg[0] == t.messages[0].id  # the system prompt heads every segment
    assert [t.message(i).role for i in seg] == [
        Role.SYSTEM,
        Role.SYSTEM,
        Role.USER,
        Role.USER,
        Role.ASSISTANT,
    ]
    assert event.summary_id == seg[3] and t.message(seg[3]).is_summary
    assert event.preserved_ids == seg[1:3]
    assert t.message(seg[2]).source.kind is SourceKind.TASK  # the first task, retained
    assert [(r.segment, r.ledger_len, r.response_id is None) for r in t.requests[2:]] == [
        (1, 4, True),
        (1, 4, False),
    ]
    assert len(t.requests) == 4
    assert t.skipped["event_msg/token_count (repeated)"] == 1


def test_legacy_rollout_without_envelope(tmp_path: Path) -> None:
    lines = [
        {
            "id": "0198-legacy",
            "timestamp": "2025-08-01T09:00:00Z",
            "instructions": None,
            "git": {"branch": "main"},
        },
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi there"}]},
    ]
    path = tmp_path / "rollout-legacy.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert detect(path).format == "codex"
    t = load_codex(path)
    assert t.load_issues == []
    assert t.session_id == "0198-legacy"
    assert [m.text for m in t.messages] == ["hello", "hi there"]
    assert len(t.requests) == 1 and t.requests[0].usage is None and t.requests[0].ledger_len == 1


def test_records_missing_fields_are_load_issues(tmp_path: Path) -> None:
    lines = [
        *sample_rollout()[:3],
        json.dumps({"timestamp": "x", "type": "response_item", "payload": "not an object"}),
        json.dumps({"timestamp": "x", "payload": {}}),
        json.dumps([1, 2]),
        json.dumps({"timestamp": "x", "type": "brand_new_kind", "payload": {}}),
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(lines) + "\n")
    t = load_codex(path)
    assert [i.line for i in t.load_issues] == [4, 5, 6]
    assert t.skipped["unknown:brand_new_kind"] == 1
    assert len(t.messages) == 2
