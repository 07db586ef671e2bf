"""The generic chat JSON reader: OpenAI message arrays, Anthropic request bodies, detection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inspector.formats import load
from inspector.formats.base import LoaderError
from inspector.formats.codex import CodexFormat
from inspector.formats.detect import HEAD_BYTES, detect, read_head
from inspector.formats.generic import GenericChatFormat, load_chat_json
from inspector.formats.opencode import OpencodeFormat
from inspector.model import MediaBlock, ReasoningBlock, Role, SourceKind, TextBlock, ToolCallBlock

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"

OPENAI_CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a careful coding agent."},
    {"role": "user", "content": [{"type": "text", "text": "Why does test_parse fail?"}]},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "file_read", "arguments": '{"path": "parse.py"}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "run_tests", "arguments": "not json"}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "def parse(s):\n    return s.split(',')"},
    {"role": "tool", "tool_call_id": "call_2", "content": "1 failed, 4 passed"},
    {"role": "assistant", "content": "parse() does not strip spaces.", "model": "gpt-4.1"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "fix it"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ],
    },
]

ANTHROPIC_BODY: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "system": [{"type": "text", "text": "You are Claude Code."}, {"type": "text", "text": "Be brief."}],
    "messages": [
        {"role": "user", "content": "List the repo."},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "use ls", "signature": "sig" * 10},
                {"type": "text", "text": "Listing."},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "README.md\nsrc"}],
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "redacted_thinking", "data": "xyz"},
                {"type": "text", "text": "Two entries."},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_9", "content": "denied", "is_error": True},
                {"type": "text", "text": "ok"},
            ],
        },
    ],
}


def write(tmp_path: Path, name: str, value: Any, indent: int | None = None) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value, indent=indent))
    return path


def test_openai_chat_array(tmp_path: Path) -> None:
    path = write(tmp_path, "chat.json", OPENAI_CHAT, indent=2)
    assert detect(path).format == "generic"
    t = load_chat_json(path)
    assert t.format == "generic" and t.load_issues == []
    assert [m.id for m in t.messages] == ["m1", "m2", "m3", "m4", "m5", "m6", "m7"]
    assert [m.role for m in t.messages] == [
        Role.SYSTEM,
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.TOOL,
        Role.ASSISTANT,
        Role.USER,
    ]
    system, task, calls, r1, r2, answer, last = t.messages
    assert system.source.kind is SourceKind.IDENTITY and system.pinned
    assert task.source.kind is SourceKind.TASK and task.text == "Why does test_parse fail?"
    assert calls.tool_calls == (
        ToolCallBlock(id="call_1", name="file_read", arguments={"path": "parse.py"}),
        ToolCallBlock(id="call_2", name="run_tests", arguments="not json"),
    )
    assert [(b.call_id, b.tool_name) for m in (r1, r2) for b in m.tool_results] == [
        ("call_1", "file_read"),
        ("call_2", "run_tests"),
    ]
    assert r2.tool_results[0].content == "1 failed, 4 passed"
    assert r1.source.kind is SourceKind.TOOL_OUTPUT
    assert answer.text == "parse() does not strip spaces."
    assert last.source.kind is SourceKind.CONVERSATION
    assert isinstance(last.blocks[1], MediaBlock) and last.blocks[1].media_type == "image/png"
    assert t.model == "gpt-4.1"
    assert last.origin is not None and last.origin.line == 7
    # no usage: one request made with the whole ledger
    (req,) = t.requests
    assert (req.index, req.usage, req.segment, req.ledger_len) == (1, None, 0, 7)
    assert [m.id for m in t.ledger(1)] == [m.id for m in t.messages]


def test_anthropic_request_body(tmp_path: Path) -> None:
    path = write(tmp_path, "body.json", ANTHROPIC_BODY)
    assert detect(path).format == "generic"
    t = load(path)
    assert t.load_issues == []
    assert t.model == "claude-sonnet-4-5"
    assert len(t.messages) == 6
    system = t.messages[0]
    assert system.role is Role.SYSTEM and system.text == "You are Claude Code.\nBe brief."
    assert system.pinned and system.id == "m1"
    assert t.messages[1].source.kind is SourceKind.TASK
    reply = t.messages[2]
    thinking = reply.blocks[0]
    assert isinstance(thinking, ReasoningBlock) and thinking.signed and thinking.signature_chars == 30
    assert reply.tool_calls == (ToolCallBlock(id="toolu_1", name="Bash", arguments={"command": "ls"}),)
    result = t.messages[3]
    assert result.is_tool_result and result.source.kind is SourceKind.TOOL_OUTPUT
    assert result.tool_results[0].content == "README.md\nsrc" and result.tool_results[0].tool_name == "Bash"
    redacted = t.messages[4].blocks[0]
    assert isinstance(redacted, ReasoningBlock) and redacted.redacted
    mixed = t.messages[5]
    assert mixed.tool_results[0].is_error and isinstance(mixed.blocks[1], TextBlock)
    assert mixed.source.kind is SourceKind.CONVERSATION
    assert t.requests[0].ledger_len == 6 and t.requests[0].model == "claude-sonnet-4-5"


def test_bad_records_are_load_issues_and_the_rest_loads(tmp_path: Path) -> None:
    chat = [
        *OPENAI_CHAT[:2],
        "not a message",
        {"role": "narrator", "content": "?"},
        {"role": "tool", "content": "x"},
    ]
    t = load_chat_json(write(tmp_path, "chat.json", chat))
    assert [(i.line, i.reason.split(" ")[0]) for i in t.load_issues] == [
        (3, "expected"),
        (4, "message"),
        (5, "tool"),
    ]
    assert len(t.messages) == 3
    assert t.requests[0].ledger_len == 3


def test_invalid_json_is_a_loader_error(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text('[{"role": "user", "content": "hi"}')
    with pytest.raises(LoaderError, match="not valid JSON"):
        load_chat_json(path)


def test_large_file_sniffed_from_its_head(tmp_path: Path) -> None:
    chat = [{"role": "user", "content": "x" * 1000} for _ in range(400)]
    path = write(tmp_path, "big.json", chat)
    assert path.stat().st_size > HEAD_BYTES
    assert GenericChatFormat().sniff(path, read_head(path))
    assert len(load_chat_json(path).messages) == 400


def test_generic_sniff_rejects_other_json(tmp_path: Path) -> None:
    fmt = GenericChatFormat()
    values: list[Any] = [
        [],
        [1, 2],
        {"messages": []},
        {"role": "user", "content": "no array"},
        {"model": "x"},
    ]
    for value in values:
        path = write(tmp_path, "x.json", value)
        assert not fmt.sniff(path, read_head(path)), value
    jsonl = tmp_path / "lines.jsonl"
    jsonl.write_text(json.dumps({"messages": [{"role": "user", "content": "a"}]}) + "\n" + "{}\n" * 5)
    assert not fmt.sniff(jsonl, read_head(jsonl))


def test_samples_are_not_claimed_by_other_readers(tmp_path: Path) -> None:
    for path in (write(tmp_path, "a.json", OPENAI_CHAT), write(tmp_path, "b.json", ANTHROPIC_BODY, indent=1)):
        head = read_head(path)
        assert not CodexFormat().sniff(path, head)
        assert not OpencodeFormat().sniff(path, head)


def test_corpus_files_are_not_generic_chat() -> None:
    if not CORPUS.exists():
        pytest.skip(f"the shared corpus is not here ({CORPUS} absent): a fresh clone has no ../shared/corpus")
    fmt = GenericChatFormat()
    files = [p for p in sorted(CORPUS.rglob("*")) if p.is_file() and p.suffix in (".jsonl", ".json", ".sql")]
    assert len(files) >= 12
    for path in files:
        assert not fmt.sniff(path, read_head(path)), path
