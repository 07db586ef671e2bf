"""What the app's first frame waits for (issue 29): a first open's cache entry is written once the app
has closed, never before its first frame; the next open is served from that entry. (conftest points
XDG_CACHE_HOME at a folder of each test's, and makes standard output a terminal for `main`.)"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from inspector.cli import main
from inspector.formats import cache, load
from inspector.model import Transcript

from .conftest import ROOT

SAMPLE = ROOT / "inspector" / "samples" / "long-session.jsonl"


def entries() -> list[Path]:
    folder = cache.cache_dir()
    return sorted(folder.glob("*" + cache.SUFFIX)) if folder.exists() else []


@pytest.fixture
def session(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    path = folder / "session.jsonl"
    shutil.copyfile(SAMPLE, path)
    return path


def test_a_first_open_writes_its_entry_once_the_app_has_closed(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[int, list[Path]]] = []

    def run_app(transcript: Transcript, **kwargs: Any) -> None:
        seen.append((len(transcript.messages), entries()))  # what was on disk while the app ran

    monkeypatch.setattr("inspector.tui.run_app", run_app)
    assert main([str(session), "--no-follow"]) == 0
    want = len(load(session).messages)
    assert want > 100
    assert seen == [(want, [])]  # nothing written before the app (its first frame) ran
    k = cache.key(session)
    assert k is not None
    assert [p.name for p in entries()] == [k + cache.SUFFIX]  # written when it closed
    hit = cache.read(k)
    assert hit is not None and len(hit.messages) == want

    # the next open reads that entry: the reader is not called again
    def no_reading(*args: Any, **kwargs: Any) -> Transcript:
        raise AssertionError("read the file again")

    monkeypatch.setattr("inspector.cli.load", no_reading)
    assert main([str(session), "--no-follow"]) == 0
    assert seen[1][0] == want


def test_the_entry_is_written_even_when_the_app_fails(session: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def run_app(transcript: Transcript, **kwargs: Any) -> None:
        raise RuntimeError("the terminal went away")

    monkeypatch.setattr("inspector.tui.run_app", run_app)
    with pytest.raises(RuntimeError):
        main([str(session), "--no-follow"])
    k = cache.key(session)
    assert k is not None and [p.name for p in entries()] == [k + cache.SUFFIX]


def test_no_cache_opens_the_app_and_writes_nothing(session: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[int] = []
    monkeypatch.setattr("inspector.tui.run_app", lambda transcript, **kw: opened.append(len(transcript.messages)))
    assert main([str(session), "--no-follow", "--no-cache"]) == 0
    assert opened == [len(load(session).messages)]
    assert entries() == []
