"""The live follower: appends in bursts, truncation, replacement, subagents, and the real watcher."""

from __future__ import annotations

import asyncio
import json
import os
import random
import threading
import time
from pathlib import Path

import pytest

from inspector.formats import load
from inspector.formats.base import LineSplitter
from inspector.formats.claude_code import ClaudeCodeReader
from inspector.live import (
    Follower,
    FollowUpdate,
    ReloadingReader,
    factory_for_format,
    follower_for,
    reader_factory_for,
)
from inspector.model import Transcript
from tests.conftest import CORPUS, FA812, corpus_file


class LineRecorder:
    """A tiny reader: records every complete line it is fed, through the project's LineSplitter."""

    instances = 0

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[bytes] = []
        self._split = LineSplitter()
        LineRecorder.instances += 1

    def feed(self, data: bytes) -> None:
        self.lines.extend(raw for _, raw in self._split.feed(data))

    def transcript(self) -> Transcript:
        return Transcript(format="test", path=str(self.path))


def _records(n: int, rng: random.Random, tag: str = "a") -> list[bytes]:
    return [json.dumps({"n": i, "tag": tag, "pad": "x" * rng.randint(0, 300)}).encode() for i in range(n)]


def _write_in_bursts(
    path: Path, data: bytes, rng: random.Random, follower: Follower, max_write: int = 4000
) -> list[FollowUpdate]:
    """Append `data` in writes split at random points (mid-line included), polling between bursts."""
    updates: list[FollowUpdate] = []
    pos = 0
    with path.open("ab") as fh:
        while pos < len(data):
            for _ in range(rng.randint(1, 3)):  # a burst: a few writes before the follower looks
                step = rng.randint(1, max_write)
                fh.write(data[pos : pos + step])
                fh.flush()
                pos += step
                if pos >= len(data):
                    break
            updates.append(follower.poll_once())
    updates.append(follower.poll_once())
    return updates


def _recorder(f: Follower) -> LineRecorder:
    reader = f.reader
    assert isinstance(reader, LineRecorder)
    return reader


# -- the synchronous core ----------------------------------------------------------------------
def test_5000_records_appended_in_bursts_arrive_exactly_once_in_order(tmp_path: Path) -> None:
    rng = random.Random(20240611)
    path = tmp_path / "session.jsonl"
    path.touch()
    f = Follower(path, LineRecorder, chunk_size=97)  # small chunks: lines cross chunk edges too
    expected = _records(5000, rng)
    data = b"\n".join(expected) + b"\n"
    updates = _write_in_bursts(path, data, rng, f, max_write=1200)
    assert _recorder(f).lines == expected
    assert f.offset == len(data) == sum(u.bytes_read for u in updates)
    assert not any(u.reset for u in updates)
    assert len(updates) > 500  # the follower really looked in between (many partial lines)


def test_a_partial_last_line_is_held_back_until_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":')
    f = Follower(path, LineRecorder)
    u = f.poll_once()
    assert u.bytes_read == 13 and u.changed and not u.reset
    assert _recorder(f).lines == [b'{"a":1}']
    assert f.poll_once() == FollowUpdate(offset=13)  # nothing new: no change
    with path.open("ab") as fh:
        fh.write(b"2}\n")
    f.poll_once()
    assert _recorder(f).lines == [b'{"a":1}', b'{"b":2}']


def test_max_bytes_caps_one_poll_and_says_more(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [b'{"i":%d}' % i for i in range(1000)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    f = Follower(path, LineRecorder, chunk_size=100)
    u = f.poll_once(max_bytes=1000)
    assert u.bytes_read == 1000 and u.more
    while u.more:
        u = f.poll_once(max_bytes=1000)
    assert _recorder(f).lines == lines


def _cc_lines(n_pairs: int, session: str = "sess-1", start: int = 0, tag: str = "") -> list[bytes]:
    """Claude Code user/assistant pairs; each response streamed as two lines sharing message.id."""
    out: list[bytes] = []
    parent: str | None = None
    for i in range(start, start + n_pairs):
        user_uuid = f"u-{tag}{i}"
        out.append(
            json.dumps(
                {
                    "type": "user",
                    "uuid": user_uuid,
                    "parentUuid": parent,
                    "sessionId": session,
                    "isSidechain": False,
                    "cwd": "/work/proj",
                    "timestamp": f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
                    "message": {"role": "user", "content": f"prompt {tag}{i}: " + "words " * (i % 17)},
                }
            ).encode()
        )
        parent = user_uuid
        for part in (0, 1):
            a_uuid = f"a-{tag}{i}-{part}"
            out.append(
                json.dumps(
                    {
                        "type": "assistant",
                        "uuid": a_uuid,
                        "parentUuid": parent,
                        "sessionId": session,
                        "isSidechain": False,
                        "requestId": f"req_{tag}{i}",
                        "timestamp": f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.500Z",
                        "message": {
                            "id": f"msg_{tag}{i}",
                            "type": "message",
                            "role": "assistant",
                            "model": "claude-test-1",
                            "content": [{"type": "text", "text": f"answer {tag}{i} part {part}"}],
                            "usage": {
                                "input_tokens": 10 + i,
                                "cache_creation_input_tokens": 100,
                                "cache_read_input_tokens": 1000 + 50 * i,
                                "output_tokens": 5 + part * 20,
                            },
                        },
                    }
                ).encode()
            )
            parent = a_uuid
    return out


def _ids(t: Transcript) -> tuple[list[str], list[str | None], list[int]]:
    return (
        [m.id for m in t.messages],
        [r.response_id for r in t.requests],
        [r.usage.context if r.usage else -1 for r in t.requests],
    )


def test_claude_code_lines_in_bursts_match_a_whole_file_load(tmp_path: Path) -> None:
    rng = random.Random(7)
    path = tmp_path / "0b7c-session.jsonl"
    path.touch()
    f = Follower(path, ClaudeCodeReader, chunk_size=1 << 12)
    lines = _cc_lines(400)
    data = b"\n".join(lines) + b"\n"
    # checkpoints: what the follower holds equals a whole-file load of the complete lines so far
    cut = len(data) // 3
    with path.open("ab") as fh:
        fh.write(data[:cut])
    f.poll_once()
    prefix = tmp_path / "prefix.jsonl"
    prefix.write_bytes(data[: data.rindex(b"\n", 0, cut) + 1])
    assert _ids(f.transcript()) == _ids(load(prefix))
    _write_in_bursts(path, data[cut:], rng, f, max_write=3000)
    followed = f.transcript()
    whole = load(path)
    assert _ids(followed) == _ids(whole)
    assert len(followed.requests) == 400
    responses = [followed.message(r.response_id or "").response_id for r in followed.requests]
    assert responses == [f"msg_{i}" for i in range(400)]
    assert followed.requests[-1].usage is not None and followed.requests[-1].usage.output == 25


def test_the_real_fa812bfe_session_replayed_in_bursts_matches_a_load(tmp_path: Path) -> None:
    source = corpus_file(FA812.relative_to(CORPUS).as_posix())
    data = source.read_bytes()
    rng = random.Random(3)
    path = tmp_path / source.name
    path.touch()
    f = Follower(path, ClaudeCodeReader)
    _write_in_bursts(path, data, rng, f, max_write=60_000)
    assert _ids(f.transcript()) == _ids(load(path))
    assert len(f.transcript().requests) == 157


def test_codex_rollout_followed_in_bursts_matches_a_load(tmp_path: Path) -> None:
    from inspector.formats.codex import load_codex

    source = corpus_file("codex/lazyagents-codex-0.158.0-rollout.jsonl")
    data = source.read_bytes()
    path = tmp_path / "rollout-2026-01-01T00-00-00-x.jsonl"
    path.touch()
    f = Follower(path, factory_for_format("codex"))
    _write_in_bursts(path, data, random.Random(11), f, max_write=700)
    assert _ids(f.transcript()) == _ids(load_codex(path))


# -- truncation and replacement ----------------------------------------------------------------
def test_truncate_and_rewrite_starts_over_with_a_fresh_reader(tmp_path: Path) -> None:
    rng = random.Random(99)
    path = tmp_path / "s.jsonl"
    old = _records(2000, rng, tag="old")
    path.write_bytes(b"\n".join(old) + b"\n" + b'{"torn":')  # and a partial line held back
    f = Follower(path, LineRecorder, chunk_size=500)
    f.poll_once()
    assert _recorder(f).lines == old
    first_reader = f.reader
    with path.open("r+b") as fh:
        fh.truncate(0)
    u = f.poll_once()
    assert u.reset and u.reset_reason == "truncated" and f.offset == 0
    assert f.reader is not first_reader
    new = _records(3000, rng, tag="new")
    updates = _write_in_bursts(path, b"\n".join(new) + b"\n", rng, f)
    assert not any(x.reset for x in updates)
    assert _recorder(f).lines == new  # only the new file's records: nothing old, nothing torn


def test_a_rewrite_longer_than_the_offset_between_two_polls_is_noticed(tmp_path: Path) -> None:
    rng = random.Random(5)
    path = tmp_path / "s.jsonl"
    old = _records(100, rng, tag="old")
    path.write_bytes(b"\n".join(old) + b"\n")
    f = Follower(path, LineRecorder)
    f.poll_once()
    new = _records(500, rng, tag="new")  # longer than before: size alone cannot tell
    with path.open("r+b") as fh:  # same inode, rewritten in place
        fh.truncate(0)
        fh.write(b"\n".join(new[:300]) + b"\n")
    assert path.stat().st_size > f.offset
    u = f.poll_once()
    assert u.reset and u.reset_reason == "rewritten"
    _write_in_bursts(path, b"\n".join(new[300:]) + b"\n", rng, f)
    assert _recorder(f).lines == new


def test_replace_by_rename_starts_over_with_the_new_file(tmp_path: Path) -> None:
    rng = random.Random(42)
    path = tmp_path / "s.jsonl"
    old = _records(1500, rng, tag="old")
    path.write_bytes(b"\n".join(old) + b'\n{"partial')
    f = Follower(path, LineRecorder, chunk_size=333)
    f.poll_once()
    new = _records(3000, rng, tag="new")
    tmp = tmp_path / "s.jsonl.tmp"
    tmp.write_bytes(b"\n".join(new[:1000]) + b"\n")
    os.replace(tmp, path)
    u = f.poll_once()
    assert u.reset and u.reset_reason == "replaced"
    updates = _write_in_bursts(path, b"\n".join(new[1000:]) + b"\n", rng, f)
    assert not any(x.reset for x in updates)
    assert _recorder(f).lines == new


def test_replace_then_truncate_in_bursts_with_polls_between(tmp_path: Path) -> None:
    """Several resets in one run; every time the follower ends with exactly the current file."""
    rng = random.Random(1234)
    path = tmp_path / "s.jsonl"
    path.touch()
    f = Follower(path, LineRecorder, chunk_size=211)
    for round_no in range(4):
        recs = _records(800, rng, tag=f"r{round_no}")
        if round_no % 2:
            tmp = tmp_path / "next.jsonl"
            tmp.write_bytes(b"")
            os.replace(tmp, path)
        else:
            path.write_bytes(b"")
        _write_in_bursts(path, b"\n".join(recs) + b"\n", rng, f)
        assert _recorder(f).lines == recs


def test_a_deleted_file_keeps_what_was_read_and_a_new_one_is_a_reset(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a":1}\n')
    f = Follower(path, LineRecorder)
    f.poll_once()
    path.unlink()
    u = f.poll_once()
    assert u.missing and not u.changed and _recorder(f).lines == [b'{"a":1}']
    path.write_bytes(b'{"b":2}\n')
    u = f.poll_once()
    assert u.reset and not u.missing and u.reset_reason == "reappeared"
    assert _recorder(f).lines == [b'{"b":2}']


def test_a_missing_file_at_start_is_followed_once_it_appears(tmp_path: Path) -> None:
    path = tmp_path / "later.jsonl"
    f = Follower(path, LineRecorder)
    assert f.poll_once().missing
    path.write_bytes(b'{"a":1}\n')
    u = f.poll_once()
    assert u.bytes_read == 8 and not u.missing and _recorder(f).lines == [b'{"a":1}']


def test_new_subagent_files_are_reported_once(tmp_path: Path) -> None:
    path = tmp_path / "abc.jsonl"
    path.write_bytes(b'{"a":1}\n')
    sub = tmp_path / "abc" / "subagents"
    sub.mkdir(parents=True)
    (sub / "agent-old.jsonl").write_bytes(b"{}\n")
    f = Follower(path, LineRecorder)
    assert f.poll_once().new_subagent_files == ()  # what was there at the start is not news
    (sub / "agent-a1.jsonl").write_bytes(b"{}\n")
    (sub / "agent-a1.meta.json").write_bytes(b"{}")
    (sub / "agent-acompact-77.jsonl").write_bytes(b"{}\n")
    u = f.poll_once()
    assert u.new_subagent_files == (sub / "agent-a1.jsonl",)
    assert u.new_compaction_files == (sub / "agent-acompact-77.jsonl",)
    assert u.changed and u.bytes_read == 0
    assert f.poll_once().new_subagent_files == ()


def test_the_follower_writes_nothing_next_to_the_transcript(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(_cc_lines(20)) + b"\n")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    os.chmod(path, 0o444)
    f = Follower(path, ClaudeCodeReader)
    f.poll_once()
    f.transcript()
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_whole_file_mode_reloads_on_a_change_of_the_file_or_a_side_file(tmp_path: Path) -> None:
    path = tmp_path / "agent_1_coder.json"
    journal = tmp_path / "agent_1_coder.json.journal"
    path.write_text("{}")
    loads: list[Path] = []

    def fake_load(p: Path) -> Transcript:
        loads.append(p)
        return Transcript(format="fake", path=str(p))

    f = Follower(
        path,
        lambda p: ReloadingReader(p, fake_load),
        whole_file=True,
        sidecars=[journal],
        watch_subagents=False,
    )
    u = f.poll_once()
    assert u.changed and not u.reset
    assert f.transcript().format == "fake" and len(loads) == 1
    assert not f.poll_once().changed
    f.transcript()
    assert len(loads) == 1  # nothing changed: no reload
    journal.write_text('{"sequence":1}\n')
    u = f.poll_once()
    assert u.reset and u.reset_reason == "changed"
    f.transcript()
    assert len(loads) == 2


def test_factories_by_format(tmp_path: Path) -> None:
    from inspector.formats.codex import CodexReader

    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(_cc_lines(2)) + b"\n")
    assert reader_factory_for(path) is ClaudeCodeReader
    assert factory_for_format("codex") is CodexReader
    assert factory_for_format("opencode") is ReloadingReader
    f = follower_for(path)
    assert not f.whole_file
    f.poll_once()
    assert len(f.transcript().requests) == 2


# -- through the real watcher ------------------------------------------------------------------
async def _next_update(it: object, timeout: float = 5.0) -> FollowUpdate:
    return await asyncio.wait_for(it.__anext__(), timeout)  # type: ignore[attr-defined]


async def test_async_updates_report_an_appended_line_quickly(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"i":0}\n')
    f = Follower(path, LineRecorder)
    f.poll_once()
    stop = asyncio.Event()
    it = f.updates(stop)
    try:
        first = asyncio.ensure_future(_next_update(it))
        await asyncio.sleep(0.3)  # the watcher is waiting
        latencies = []
        for i in range(1, 6):
            t0 = time.perf_counter()
            with path.open("ab") as fh:
                fh.write(b'{"i":%d}\n' % i)
            u = await first if i == 1 else await _next_update(it)
            latencies.append(time.perf_counter() - t0)
            assert u.bytes_read > 0 and not u.reset
            await asyncio.sleep(0.05)
        assert _recorder(f).lines == [b'{"i":%d}' % i for i in range(6)]
        latencies.sort()
        print(
            f"\nappend -> update latency: median {latencies[2] * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms"
        )
        assert latencies[-1] < 2.0
        # a replacement arrives through the watcher as a reset
        tmp = tmp_path / "s.tmp"
        tmp.write_bytes(b'{"new":1}\n')
        os.replace(tmp, path)
        u = await _next_update(it)
        assert u.reset and _recorder(f).lines == [b'{"new":1}']
        # a subagent folder created later is watched (the watcher restarts with it)
        sub = tmp_path / "s" / "subagents"
        sub.mkdir(parents=True)
        (sub / "agent-x1.jsonl").write_bytes(b"{}\n")
        u = await _next_update(it)
        assert u.new_subagent_files == (sub / "agent-x1.jsonl",)
    finally:
        stop.set()
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(it.__anext__(), 5.0)


async def test_async_updates_stop_promptly_when_cancelled(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    f = Follower(path, LineRecorder)

    async def consume() -> None:
        async for _ in f.updates():
            pass

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0.2)
    t0 = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5.0)
    assert time.perf_counter() - t0 < 1.0  # not the watcher's 5 s timeout


async def test_async_catch_up_reads_what_was_written_before_the_watch(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"i":0}\n{"i":1}\n')
    f = Follower(path, LineRecorder)
    stop = asyncio.Event()
    it = f.updates(stop)
    u = await _next_update(it)
    assert u.bytes_read == 16 and _recorder(f).lines == [b'{"i":0}', b'{"i":1}']
    stop.set()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(it.__anext__(), 5.0)


def test_iter_updates_in_a_thread(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    f = Follower(path, LineRecorder)
    stop = threading.Event()
    got: list[FollowUpdate] = []
    seen = threading.Event()

    def run() -> None:
        for u in f.iter_updates(stop):
            got.append(u)
            seen.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    time.sleep(0.3)
    with path.open("ab") as fh:
        fh.write(b'{"a":1}\n')
    assert seen.wait(5.0)
    stop.set()
    t.join(5.0)
    assert not t.is_alive()
    assert got[0].bytes_read == 8 and _recorder(f).lines == [b'{"a":1}']


async def test_force_polling_fallback_sees_appends(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    f = Follower(path, LineRecorder)
    f.poll_once()
    stop = asyncio.Event()
    it = f.updates(stop, force_polling=True, poll_delay_ms=50)
    try:
        pending = asyncio.ensure_future(_next_update(it))
        await asyncio.sleep(0.2)
        with path.open("ab") as fh:
            fh.write(b'{"p":1}\n')
        u = await pending
        assert u.bytes_read == 8
    finally:
        stop.set()
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(it.__anext__(), 5.0)


def test_importing_the_live_core_does_not_load_textual() -> None:
    import subprocess
    import sys

    code = "import sys, inspector.live, inspector.live.follow, inspector.live.discovery\nprint('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
