"""Live at any shape (issue 29): a followed session with lines beside the chain (a branch a rewind
abandoned, lines whose parent is not in the file) is extended at each append like any other, and
the extended transcript is the one a fresh reader makes of the same bytes, field by field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import real
from inspector.formats.claude_code import ClaudeCodeReader
from inspector.model import Transcript

needs_corpus = pytest.mark.skipif(
    not real.available(), reason=f"the corpus session {real.SOURCE.name} is absent (../shared/corpus)"
)


def fields(t: Transcript) -> dict[str, Any]:
    return {name: getattr(t, name) for name in type(t).__struct_fields__}


def fresh(path: Path, data: bytes) -> Transcript:
    reader = ClaudeCodeReader(path)
    reader.feed(data)
    return reader.transcript()


def same(got: Transcript, path: Path, data: bytes, where: str) -> None:
    want = fields(fresh(path, data))
    have = fields(got)
    for name, value in want.items():
        assert have[name] == value, f"{path.name}: {name} differs {where}"


def follow(path: Path, start: int, every: int, compare_every: int) -> tuple[ClaudeCodeReader, int]:
    """Feed `path` up to line `start`, then `every` lines at a time, asking for the transcript each
    time; every `compare_every`-th one (and the last) is compared with a fresh read. The reader,
    and how many updates there were."""
    data = path.read_bytes()
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    reader = ClaudeCodeReader(path)
    reader.feed(data[: ends[start]])
    reader.transcript()
    prev = ends[start]
    cuts = ends[start + every :: every]
    if cuts[-1] != len(data):
        cuts.append(len(data))
    for i, cut in enumerate(cuts):
        reader.feed(data[prev:cut])
        prev = cut
        got = reader.transcript()
        if i % compare_every == 0 or cut == len(data):
            same(got, path, data[:cut], f"after byte {cut:,}")
    return reader, len(cuts)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("real-live")


@needs_corpus
def test_a_session_with_detached_lines_is_extended_at_each_append(folder: Path) -> None:
    path = real.make("detached", 2, folder).path
    first = fresh(path, path.read_bytes())
    assert first.skipped["detached (parent not in file)"] == real.DETACHED_PER_COPY
    # the second copy, line by line: before issue 29 every append that hung off a line read
    # before (a hook's progress line) was a full build while detached lines existed
    lines = path.read_bytes().count(b"\n")
    reader, updates = follow(path, lines // 2 + 20, 1, 37)
    compactions = 1  # the second copy's own: the boundary starts a segment (the tree changed)
    assert reader.builds <= 1 + 2 * compactions, (reader.builds, reader.extensions)
    assert reader.extensions >= updates - 2 * compactions


@needs_corpus
def test_a_session_after_an_early_rewind_is_extended_at_each_append(folder: Path) -> None:
    path = real.make("rewind", 2, folder).path
    whole = fresh(path, path.read_bytes())
    assert len(whole.abandoned) == 1 and len(whole.abandoned[0].message_ids) > 300
    lines = path.read_bytes().count(b"\n")
    reader, updates = follow(path, lines // 2 + 20, 3, 13)
    assert reader.builds == 1, (reader.builds, reader.extensions)
    assert reader.extensions == updates


# -- where a stray's fork moves ------------------------------------------------------------------


def _line(uuid: str, parent: str | None, kind: str, **extra: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "s-strays",
        "type": kind,
        "uuid": uuid,
        "timestamp": "2026-01-01T00:00:00.000Z",
    }
    content = extra.pop("content", None)
    if kind == "user":
        rec["message"] = {"role": "user", "content": content or extra.pop("text", "hello")}
    elif kind == "assistant":
        rec["message"] = {
            "id": extra.pop("rid"),
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": content or [{"type": "text", "text": extra.pop("text", "ok")}],
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 100, "output_tokens": 5},
        }
    elif kind == "progress":
        rec["data"] = {"type": "hook_progress"}
    rec.update(extra)
    return rec


def _call(call_id: str) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": f"/{call_id}"}}]


def _result(call_id: str) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "tool_use_id": call_id, "content": f"contents of {call_id}"}]


def _write(path: Path, recs: list[dict[str, Any]]) -> bytes:
    data = b"".join(json.dumps(r).encode() + b"\n" for r in recs)
    path.write_bytes(data)
    return data


def _extends(path: Path, before: list[dict[str, Any]], after: list[dict[str, Any]]) -> ClaudeCodeReader:
    """A reader fed `before`, then `after`: its transcript after each equals a fresh read."""
    head = _write(path, before)
    data = _write(path, before + after)
    reader = ClaudeCodeReader(path)
    reader.feed(head)
    same(reader.transcript(), path, head, "before the append")
    reader.feed(data[len(head) :])
    same(reader.transcript(), path, data, "after the append")
    return reader


PARALLEL = [
    _line("u1", None, "user", text="read both files"),
    _line("a1", "u1", "assistant", rid="r1", content=_call("t1")),
    _line("a1b", "a1", "assistant", rid="r1", content=_call("t2")),  # the same response, a second call
    _line("res1", "a1b", "user", content=_result("t1")),
    # a prompt the user sent after the first result, then rewound
    _line("sx", "res1", "user", text="the path not taken"),
    _line("res2", "a1b", "user", content=_result("t2")),
]


def test_a_chain_that_now_runs_through_a_stray_s_ancestor_moves_its_fork(tmp_path: Path) -> None:
    """Two parallel tool results, and an abandoned prompt after the first; the next response hangs
    off the first result: the chain now runs through it, so the abandoned prompt forks there, not
    at the response before it; the transcript is extended, not built again."""
    path = tmp_path / "fork.jsonl"
    first = fresh(path, _write(path, PARALLEL))
    assert [b.fork_id for b in first.abandoned] == ["a1b"]
    reader = _extends(path, PARALLEL, [_line("a2", "res1", "assistant", rid="r2", text="both read")])
    t = reader.transcript()
    assert [b.fork_id for b in t.abandoned] == ["res1"]
    assert [m.id for m in t.messages] == ["u1", "a1", "res1", "res2", "a2"]
    assert reader.builds == 1  # the first read only: the append extended it


def test_detached_lines_whose_parent_comes_join_the_tree(tmp_path: Path) -> None:
    before = [
        _line("u1", None, "user", text="start"),
        _line("a1", "u1", "assistant", rid="r1"),
        _line("d1", "missing", "user", text="<system-reminder>hook</system-reminder>", isMeta=True),
        _line("u2", "a1", "user", text="second"),
        _line("a2", "u2", "assistant", rid="r2"),
    ]
    path = tmp_path / "detached.jsonl"
    first = fresh(path, _write(path, before))
    assert first.skipped["detached (parent not in file)"] == 1 and not first.abandoned
    # the missing line arrives (a progress line off the newest response): nothing is detached now,
    # the reminder is a branch beside the chain
    reader = _extends(path, before, [_line("missing", "a2", "progress")])
    t = reader.transcript()
    assert "detached (parent not in file)" not in t.skipped
    assert [b.fork_id for b in t.abandoned] == ["a2"]
