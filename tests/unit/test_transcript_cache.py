"""The persistent cache of loaded transcripts (issue 29, `inspector.formats.cache`): a hit is the
cold load's transcript, byte for byte in `report --json`; any change to the file (or to what is
read beside it) is another key; `--no-cache` writes nothing; the folder is bounded; nothing is
ever written next to a transcript. (conftest points XDG_CACHE_HOME at a folder of each test's.)"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import inspector.cli as cli
from inspector.cli import main
from inspector.formats import cache, load
from inspector.model import MediaBlock, Message, Role, TextBlock, Transcript
from inspector.model.cost import PriceTable
from tests.conftest import FA812, ROOT

SAMPLE = ROOT / "inspector" / "samples" / "long-session.jsonl"


def report_json(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    assert main(["report", str(path), "--json", *extra]) == 0
    return capsys.readouterr().out


def entries() -> list[Path]:
    folder = cache.cache_dir()
    return sorted(folder.glob("*" + cache.SUFFIX)) if folder.exists() else []


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def test_the_cache_folder_is_the_user_s_never_beside_the_transcript(
    session: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cache.cache_dir() == Path(os.environ["XDG_CACHE_HOME"]) / "context-inspector" / "transcripts"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "context-inspector" / "transcripts"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # not absolute: ignored, as XDG says
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "context-inspector" / "transcripts"
    # the prices looked up go to the same folder (a relative one wrote them inside the project)
    assert PriceTable().cache == tmp_path / "home" / ".cache" / "context-inspector" / "prices.json"
    before = listing(session.parent)
    report_json(session, capsys)
    report_json(session, capsys)
    assert listing(session.parent) == before
    assert len(entries()) == 1


def test_a_hit_is_byte_identical_to_a_cold_load_in_report_json(
    session: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cold = report_json(session, capsys, "--no-cache")
    assert entries() == []  # --no-cache wrote nothing
    first = report_json(session, capsys)  # cold, and kept
    assert len(entries()) == 1
    # the second open is served from the cache: no reader runs
    monkeypatch.setattr(cli, "load", lambda *a, **k: pytest.fail("the file was read again"))
    warm = report_json(session, capsys)
    assert cold == first == warm
    assert '"requests"' in warm and len(warm) > 10_000


@pytest.mark.skipif(not FA812.exists(), reason="real transcript corpus not found (../shared/corpus)")
def test_a_corpus_session_with_subagents_round_trips(tmp_path: Path) -> None:
    """A real 2.1 session: subagents, a compaction call's recovered hook output, a compaction."""
    cold = load(FA812)
    k = cache.key(FA812)
    assert k is not None
    cache.write(k, cold)
    warm = cache.read(k)
    assert warm is not None and warm == cold
    assert warm.subagents and warm.events and len(warm.messages) == len(cold.messages)
    assert warm.harness_version == cold.harness_version == "2.1.39"  # what the rules read
    assert type(warm.messages[0]) is Message and warm.message(cold.messages[-1].id) == cold.messages[-1]
    assert all(a.source == b.source for a, b in zip(warm.messages, cold.messages, strict=True))


def test_media_blocks_and_every_block_kind_round_trip() -> None:
    t = Transcript(
        format="claude-code",
        path="/x.jsonl",
        messages=[
            Message(
                id="m1",
                role=Role.USER,
                blocks=(
                    TextBlock(text="look"),
                    MediaBlock(type="image", media_type="image/png", size_bytes=12),
                    MediaBlock(type="document", media_type="application/pdf", size_bytes=99),
                ),
            )
        ],
        skipped={"progress": 3},
    )
    back = cache.decode(cache.encode(t))
    assert back == t
    assert [type(b) for b in back.messages[0].blocks] == [TextBlock, MediaBlock, MediaBlock]
    assert [b.type for b in back.messages[0].blocks] == ["text", "image", "document"]


def test_any_change_to_the_file_is_another_key(session: Path, capsys: pytest.CaptureFixture[str]) -> None:
    k0 = cache.key(session)
    report_json(session, capsys)
    assert [p.stem for p in entries()] == [k0]
    # an append: another key, and the report is the longer file's
    with session.open("ab") as fh:
        fh.write(SAMPLE.read_bytes().splitlines(keepends=True)[-1].replace(b'"uuid": "', b'"uuid": "x'))
    k1 = cache.key(session)
    assert k1 != k0
    grown = report_json(session, capsys)
    assert grown == report_json(session, capsys, "--no-cache")
    # only the file's newest state is kept (the entry of its shorter self was removed)
    assert [p.stem for p in entries()] == [k1]
    # the same bytes with another time, or another inode (a file moved into its place)
    os.utime(session, ns=(1_000_000_000, 1_000_000_000))
    k2 = cache.key(session)
    copy = session.with_name("copy.jsonl")
    shutil.copy2(session, copy)
    copy.replace(session)
    k3 = cache.key(session)
    assert len({k0, k1, k2, k3}) == 4
    # a file read beside it (a subagent) is part of the key
    sub = session.parent / "session" / "subagents"
    sub.mkdir(parents=True)
    (sub / "agent-a1.jsonl").write_text("{}\n")
    assert cache.key(session) != k3


def test_a_file_changed_while_it_was_read_is_not_kept(session: Path) -> None:
    def load_and_touch() -> Transcript:
        t = load(session)
        with session.open("ab") as fh:
            fh.write(b"\n")
        return t

    cache.cached_load(session, load_and_touch)
    assert entries() == []


def test_no_cache_reads_nothing_and_writes_nothing(
    session: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["report", "--json"], ["findings", "--json"], ["calibrate", "--json"], ["export"]):
        main([command[0], str(session), *command[1:], "--no-cache"])
        capsys.readouterr()
    assert not cache.cache_dir().exists()
    # and a stale entry is not read with --no-cache: a bogus one under the file's key stays unread
    k = cache.key(session)
    assert k is not None
    cache.write(k, Transcript(format="claude-code", path=str(session)))
    out = report_json(session, capsys, "--no-cache")
    assert '"requests": 0' not in out and len(out) > 10_000


def test_a_broken_entry_is_a_miss_and_is_replaced(session: Path, capsys: pytest.CaptureFixture[str]) -> None:
    want = report_json(session, capsys, "--no-cache")
    k = cache.key(session)
    assert k is not None
    folder = cache.cache_dir()
    folder.mkdir(parents=True)
    (folder / (k + cache.SUFFIX)).write_bytes(cache.MAGIC + b"\xc1 not msgpack")
    assert report_json(session, capsys) == want
    assert cache.read(k) is not None  # written again, whole


def test_the_folder_is_bounded_the_oldest_entries_go_first(tmp_path: Path) -> None:
    t = load(SAMPLE)
    size = len(cache.MAGIC + cache.encode(t))
    limit = int(size * 3.5)
    folder = tmp_path / "bounded"
    for i in range(8):
        entry = cache.write(f"{i:016x}-k", t, folder=folder, limit=limit)
        assert entry is not None
        os.utime(entry, ns=(i * 10**9, i * 10**9))  # written one after another
    kept = sorted(p.name for p in folder.iterdir())
    assert kept == [f"{i:016x}-k{cache.SUFFIX}" for i in (5, 6, 7)]
    assert sum(p.stat().st_size for p in folder.iterdir()) <= limit
    # an entry read is used now: it outlives older ones
    assert cache.read(f"{5:016x}-k", folder) is not None
    cache.write(f"{8:016x}-k", t, folder=folder, limit=limit)
    assert sorted(p.name[:16] for p in folder.iterdir()) == [f"{i:016x}" for i in (5, 7, 8)]
    # one too big for the folder is not written at all
    assert cache.write("f" * 16 + "-k", t, folder=folder, limit=size - 1) is None
    assert cache.LIMIT_BYTES <= 1024**3
