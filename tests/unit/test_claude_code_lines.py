"""The two ways a Claude Code line is read make the same node: the typed decoder of the usual shape
(`claude_code.lines`) and the long way (orjson and checks in Python, with load issues)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

import inspector.formats.claude_code.reader as cc
from benchmarks import synth
from inspector.formats.claude_code import ClaudeCodeReader
from inspector.formats.claude_code.lines import decode_line
from inspector.formats.claude_code.records import _Node
from inspector.model import Transcript
from tests.conftest import FA812, ROOT, claude_code_corpus


def _undecodable(raw: bytes | memoryview) -> object:
    """The typed decoder switched off: every line goes the long way."""
    raise msgspec.DecodeError("read the long way")


def _read(path: Path, *, fast: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[ClaudeCodeReader, Transcript]:
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(cc, "decode_line", lambda raw: None)
            m.setattr(cc, "decode_typed", _undecodable)
        reader = ClaudeCodeReader(path, follow=False)
        data = path.read_bytes()
        for i in range(0, len(data), 4096):  # in pieces: lines held across pieces too
            reader.feed(data[i : i + 4096])
        reader.finish()
        return reader, reader.transcript()


def _node(n: _Node) -> tuple[object, ...]:
    record = {k: v for k, v in (n.record or {}).items() if v is not None} if n.record is not None else None
    return (
        n.uuid,
        n.parent,
        n.type,
        n.line,
        n.order,
        n.sidechain,
        record,
        n.blocks,
        n.usage,
        n.rid,
        n.model,
        n.stop,
    )


def assert_same_both_ways(path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Both ways read `path` into the same nodes and transcript; how many lines the typed way took."""
    fast, t_fast = _read(path, fast=True, monkeypatch=monkeypatch)
    slow, t_slow = _read(path, fast=False, monkeypatch=monkeypatch)
    assert [_node(fast._state.nodes[u]) for u in fast._state.order] == [
        _node(slow._state.nodes[u]) for u in slow._state.order
    ]
    assert fast._state.issues == slow._state.issues
    assert fast._state.skipped == slow._state.skipped
    assert (fast._state.title, fast._state.session_id) == (slow._state.title, slow._state.session_id)
    assert t_fast == t_slow
    return sum(1 for raw in path.read_bytes().split(b"\n") if raw and decode_line(raw) is not None)


@pytest.mark.parametrize("path", claude_code_corpus(), ids=lambda p: p.name)
def test_corpus_reads_the_same_both_ways(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    typed = assert_same_both_ways(path, monkeypatch)
    lines = sum(1 for raw in path.read_bytes().split(b"\n") if raw.strip())
    if path == FA812:
        assert typed >= 0.95 * lines, (typed, lines)  # the usual shape is the usual case


def test_samples_and_synthetic_sessions_read_the_same_both_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    made = synth.synth("lines400", requests=400)
    lines = made.path.read_bytes().count(b"\n")
    assert assert_same_both_ways(made.path, monkeypatch) == lines  # every line in the usual shape
    for sample in sorted((ROOT / "inspector" / "samples").glob("*.jsonl")):
        assert assert_same_both_ways(sample, monkeypatch) > 0


def _deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = {"k": value}
    return value


def _line(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"parentUuid": None, "isSidechain": False, "sessionId": "s", "timestamp": "t"}
    base.update(fields)
    return base


def _user(uuid: str | None, parent: Any, content: Any, **more: Any) -> dict[str, Any]:
    return _line(
        type="user", uuid=uuid, parentUuid=parent, message={"role": "user", "content": content}, **more
    )


def _assistant(uuid: str, parent: str, content: Any, usage: Any = None, **more: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"id": f"r-{uuid}", "model": "claude-x", "role": "assistant", "content": content}
    if usage is not None:
        msg["usage"] = usage
    msg.update(more.pop("message_fields", {}))
    return _line(type="assistant", uuid=uuid, parentUuid=parent, message=msg, **more)


OK_USAGE = {
    "input_tokens": 3,
    "cache_creation_input_tokens": 10,
    "cache_read_input_tokens": 900,
    "output_tokens": 7,
}

EDGE_LINES: list[tuple[str, Any]] = [
    ("plain text", _user("u1", None, "fix the build")),
    ("progress", _line(type="progress", uuid="p1", parentUuid="u1", data={"deep": _deep(150)})),
    (
        "thinking, signed",
        _assistant("a1", "p1", [{"type": "thinking", "thinking": "hm", "signature": "sig=="}], OK_USAGE),
    ),
    ("redacted thinking", _assistant("a2", "a1", [{"type": "redacted_thinking", "data": "abc"}], OK_USAGE)),
    (
        "thinking, null signature",
        _assistant("a3", "a2", [{"type": "thinking", "thinking": "", "signature": None}]),
    ),
    (
        "tool call and usage details",
        _assistant(
            "a4",
            "a3",
            [
                {"type": "text", "text": "ok"},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"c": [1, {"d": 2}]}},
            ],
            {**OK_USAGE, "output_tokens_details": {"thinking_tokens": 5}, "server_tool_use": {"x": 1}},
            message_fields={"stop_reason": "tool_use", "container": {"deep": _deep(150)}},
        ),
    ),
    (
        "tool result with image and text",
        _user(
            "u2",
            "a4",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "is_error": None,
                    "content": [
                        {"type": "text", "text": "a"},
                        {"type": "image", "source": {}},
                        {"type": "text", "text": "b"},
                    ],
                }
            ],
            toolUseResult={"agentId": "x", "deep": _deep(150)},
        ),
    ),
    (
        "image block",
        _user("u3", "u2", [{"type": "image", "source": {"media_type": "image/png", "data": "QUJD" * 9}}]),
    ),
    ("document, no source", _user("u4", "u3", [{"type": "document"}])),
    ("unknown block type", _user("u5", "u4", [{"type": "server_tool_use", "id": "s1", "name": "web"}])),
    (
        "tool result of an unknown call, null content",
        _user("u6", "u5", [{"type": "tool_result", "tool_use_id": "zz", "content": None}]),
    ),
    (
        "tool result content a dict",
        _user("u7", "u6", [{"type": "tool_result", "tool_use_id": "t1", "content": {"a": 1}}]),
    ),
    (
        "tool result item unknown",
        _user("u8", "u7", [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "x"}]}]),
    ),
    (
        "count is a float",
        _assistant("a5", "u8", [{"type": "text", "text": "x"}], {**OK_USAGE, "output_tokens": 7.0}),
    ),
    (
        "count is negative",
        _assistant("a6", "a5", [{"type": "text", "text": "x"}], {**OK_USAGE, "input_tokens": -1}),
    ),
    (
        "count is null",
        _assistant("a7", "a6", [{"type": "text", "text": "x"}], {**OK_USAGE, "input_tokens": None}),
    ),
    (
        "count is huge",
        _assistant("a8", "a7", [{"type": "text", "text": "x"}], {**OK_USAGE, "output_tokens": 10**12}),
    ),
    ("usage is a list", _assistant("a9", "a8", [{"type": "text", "text": "x"}], [1])),
    ("parent is a number", _user("u9", 5, "x")),
    ("sidechain is a string", _user("u10", "u9", "x", isSidechain="yes")),
    ("isMeta and summary flags", _user("u11", "u10", "x", isMeta=True, isCompactSummary=False)),
    ("timestamp is a number", _user("u12", "u11", "x", timestamp=5)),
    ("no message", _line(type="user", uuid="u13", parentUuid="u12")),
    ("message is a string", _line(type="user", uuid="u14", parentUuid="u12", message="x")),
    ("no uuid", _user(None, "u12", "x")),
    ("duplicate uuid", _user("u12", "u11", "again")),
    ("content is a number", _user("u15", "u12", 5)),
    ("content holds a string", _user("u16", "u15", ["x"])),
    ("text without text", _user("u17", "u16", [{"type": "text"}])),
    ("tool call without id", _assistant("a10", "u17", [{"type": "tool_use", "name": "Bash", "input": {}}])),
    (
        "tool call input a list",
        _assistant("a11", "a10", [{"type": "tool_use", "id": "t2", "name": "Bash", "input": [1]}]),
    ),
    (
        "tool call input 96 deep",
        _assistant("a12", "a11", [{"type": "tool_use", "id": "t3", "name": "B", "input": _deep(96)}]),
    ),
    (
        "tool call input 97 deep",
        _assistant("a13", "a12", [{"type": "tool_use", "id": "t4", "name": "B", "input": _deep(97)}]),
    ),
    ("api error", _assistant("a14", "a12", [{"type": "text", "text": "x"}], isApiErrorMessage=True)),
    (
        "synthetic",
        _assistant("a15", "a12", [{"type": "text", "text": "x"}], message_fields={"model": "<synthetic>"}),
    ),
    (
        "model a number",
        _assistant("a16", "a12", [{"type": "text", "text": "x"}], message_fields={"model": 5, "id": 7}),
    ),
    ("system line", _line(type="system", subtype="turn_duration", uuid="s1", parentUuid="a16")),
    ("system, subtype a list", _line(type="system", subtype=[1], uuid="s2", parentUuid="s1")),
    ("unknown type", _line(type="brand-new", uuid="n1", parentUuid="s2")),
    ("snapshot", _line(type="file-history-snapshot", messageId="m", snapshot={"deep": _deep(150)})),
    ("no type", _line(uuid="n2")),
    ("title", {"type": "custom-title", "customTitle": "My session"}),
    ("agent id", _user("u18", "a16", "x", agentId="agent-1", isSidechain=True)),
]


def test_edge_lines_read_the_same_both_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "edges.jsonl"
    path.write_text("".join(json.dumps(rec) + "\n" for _, rec in EDGE_LINES) + "{not json\n" + "[1]\n")
    typed = assert_same_both_ways(path, monkeypatch)
    assert 20 <= typed < len(EDGE_LINES)  # both ways are exercised
    reader, t = _read(path, fast=True, monkeypatch=monkeypatch)
    reasons = " | ".join(i.reason for i in t.load_issues)
    # what the long way says of the lines the typed way leaves to it
    for expected in (
        "not a token count",
        "nested more than 100 levels deep",
        "duplicate uuid u12",
        "user record without a `message` object",
        "user record without a `uuid`",
        "`parentUuid` is 5, not a string",
        "not a string or a list",
        "not blocks",
        "tool_use block(s) without a string `id` and `name`",
        "`message.usage` is a list, not an object",
    ):
        assert expected in reasons, expected
    by_line = {i.line: i.reason for i in t.load_issues}
    deep_96 = 1 + [name for name, _ in EDGE_LINES].index("tool call input 96 deep")
    assert deep_96 not in by_line and deep_96 + 1 in by_line  # the limit is the long way's: record depth 100
    # a deep side record (`toolUseResult`, `data`, a message field the ledger never reads) no
    # longer costs its message: only what is kept is checked
    names = [name for name, _ in EDGE_LINES]
    for name, uuid in (("tool call and usage details", "a4"), ("tool result with image and text", "u2")):
        assert 1 + names.index(name) not in by_line
        node = reader._state.nodes[uuid]
        assert node.blocks and node.record is not None
    assert reader._state.nodes["u2"].blocks[0].content == "a\nb"  # type: ignore[union-attr]
    assert reader._state.nodes["u2"].blocks[0].media == 1  # type: ignore[union-attr]
