"""`LineSplitter.views` gives the lines `split` gives (as views of the chunk, not copies), and the
Claude Code reader reads a file the same fed in any chunking."""

from __future__ import annotations

import random
from typing import Any

import orjson

from inspector.formats.base import VIEW_MIN, LineSplitter, Overlong
from inspector.formats.claude_code.reader import ClaudeCodeReader


def _as_split(splitter: LineSplitter, chunks: list[bytes], views: bool) -> list[tuple[int, bytes, str]]:
    out: list[tuple[int, bytes, str]] = []
    for chunk in chunks:
        first, lines = splitter.views(chunk) if views else splitter.split(chunk)
        for n, line in enumerate(lines, first):
            kind = f"overlong:{line.size}" if isinstance(line, Overlong) else type(line).__name__
            out.append((n, bytes(line), kind))
    out.extend((n, bytes(line), "flush") for n, line in splitter.flush())
    return out


def test_views_are_the_lines_split_gives_at_any_chunking() -> None:
    rng = random.Random(29)
    for _ in range(300):
        data = b"".join(
            rng.choice([b"\n", b"ab", b"x" * rng.randint(0, 30), b"{}", b"\n\n"])
            for _ in range(rng.randint(0, 40))
        )
        cuts = sorted(rng.sample(range(len(data) + 1), min(len(data) + 1, rng.randint(0, 8))))
        chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        limit = rng.choice([None, 5, 12, 40])
        want = _as_split(LineSplitter(max_line=limit), chunks, views=False)
        got = _as_split(LineSplitter(max_line=limit), chunks, views=True)
        assert [(n, b, k.startswith("overlong")) for n, b, k in got] == [
            (n, b, k.startswith("overlong")) for n, b, k in want
        ]
        assert [k for *_, k in got if k.startswith("overlong")] == [
            k for *_, k in want if k.startswith("overlong")
        ]
        assert len(got) == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


def test_a_line_inside_a_chunk_is_a_view_and_one_across_chunks_is_bytes() -> None:
    s = LineSplitter()
    long1, long2 = b"o" * (VIEW_MIN + 1), b"t" * (VIEW_MIN + 1)
    first, lines = s.views(long1 + b"\n" + long2 + b"\nthr")
    assert first == 1 and [type(x) for x in lines] == [memoryview, memoryview]
    assert [bytes(x) for x in lines] == [long1, long2]
    long4 = b"f" * (VIEW_MIN + 1)
    first, lines = s.views(b"ee\n" + long4 + b"\n")
    assert first == 3 and [type(x) for x in lines] == [bytes, memoryview]
    assert [bytes(x) for x in lines] == [b"three", long4]
    assert s.views(b"") == (5, []) and s.lines_seen == 4


def test_a_short_line_is_a_copy_not_a_view() -> None:
    """A memoryview takes ~180 bytes of its own: a chunk of short lines (junk) is copied."""
    s = LineSplitter()
    short = b"s" * VIEW_MIN
    _, lines = s.views(b"x\n" + short + b"\n" + short + b"s\n")
    assert [type(x) for x in lines] == [bytes, bytes, memoryview]
    assert [bytes(x) for x in lines] == [b"x", short, short + b"s"]


def _records() -> bytes:
    recs = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "sessionId": "s",
            "version": "2.1.0",
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "user", "content": "hello"},
        },
        {
            "type": "progress",
            "uuid": "p1",
            "parentUuid": "u1",
            "sessionId": "s",
            "version": "2.1.0",
            "data": {"type": "hook_progress"},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "p1",
            "sessionId": "s",
            "version": "2.1.0",
            "message": {
                "id": "m1",
                "model": "claude-x",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"p": "x"}}],
                "usage": {"input_tokens": 10, "output_tokens": 3},
            },
        },
        {
            "type": "user",
            "uuid": "u2",
            "parentUuid": "a1",
            "sessionId": "s",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            },
        },
        {"type": "progress", "uuid": "p2", "parentUuid": "u2", "sessionId": "s", "version": "2.0.9"},
        {"type": "summary", "summary": "A title", "leafUuid": "u2"},
        {
            "type": "assistant",
            "uuid": "a2",
            "parentUuid": "u2",
            "sessionId": "s",
            "message": {
                "id": "m2",
                "model": "claude-x",
                "role": "assistant",
                "content": [{"type": "text", "text": "done"}],
                "usage": {"input_tokens": 12, "output_tokens": 1},
            },
        },
    ]
    lines = [orjson.dumps(r) for r in recs]
    lines.insert(3, b'{"type": "user", "uuid": "broken1", "parentUuid": "a1", "message": {"con')  # torn
    lines.insert(5, b"")
    return b"\n".join(lines) + b"\n"


def test_the_reader_reads_the_same_at_any_chunking() -> None:
    data = _records()

    def read(chunks: list[bytes]) -> tuple[Any, ...]:
        r = ClaudeCodeReader("s.jsonl", with_subagents=False, follow=False)
        for c in chunks:
            r.feed(c)
        r.finish()
        t = r.transcript()
        s = r._state
        return (
            [(m.id, m.blocks, m.origin) for m in t.messages],
            [(q.index, q.usage) for q in t.requests],
            [(i.line, i.reason) for i in t.load_issues],
            t.skipped,
            t.title,
            t.harness_version,
            list(s.order),
            [n.line for n in s.nodes.values()],
        )

    whole = read([data])
    assert whole[0] and len(whole[1]) == 2 and whole[4] == "A title" and whole[5] == "2.1.0"
    assert whole[3] == {"progress": 2, "summary": 1}
    assert whole[2] == [(4, "invalid JSON: unexpected end of data")]
    rng = random.Random(7)
    for size in (1, 2, 3, 7, 64, 200):
        assert read([data[i : i + size] for i in range(0, len(data), size)]) == whole
    for _ in range(20):
        cuts = sorted(rng.sample(range(len(data)), 5))
        assert read([data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]) == whole
