"""What the app's first frame waits for (issue 29): a first open's cache entry is written once the app
has closed, never before its first frame; the next open is served from that entry. (conftest points
XDG_CACHE_HOME at a folder of each test's, and makes standard output a terminal for `main`.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inspector.cli import main
from inspector.formats import cache, load
from inspector.model import Transcript
from tests.conftest import ROOT

SAMPLE = ROOT / "inspector" / "samples" / "long-session.jsonl"


def entries() -> list[Path]:
    folder = cache.cache_dir()
    return sorted(folder.glob("*" + cache.SUFFIX)) if folder.exists() else []


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


# -- the gauge before the columns -----------------------------------------------------------------

SIZE = (160, 48)


def test_the_waiting_line_says_the_request_s_own_report_and_what_is_left() -> None:
    from inspector.model import Message, Request, Role, Segment, TextBlock, Usage
    from inspector.tui.first import waiting_status

    messages = [Message(id=f"m{i}", role=Role.USER, blocks=(TextBlock(text="x"),)) for i in range(3)]
    requests = [
        Request(index=1, ledger_len=1, usage=Usage(input=1_000, output=5)),
        Request(index=2, ledger_len=3, usage=None),
        Request(index=3, ledger_len=3, usage=Usage(input=50, cache_read=149_950, output=5)),
    ]
    t = Transcript(
        format="claude-code",
        path="s.jsonl",
        messages=messages,
        segments=[Segment(index=0, message_ids=tuple(m.id for m in messages))],
        requests=requests,
    )
    assert waiting_status(t, 3, 200_000, "s.jsonl") == (
        "request 3/3: 150,000 tokens reported (75% of 200,000) · loading s.jsonl: calibrating 3 messages…"
    )
    assert waiting_status(t, 1, None, "s.jsonl") == (
        "request 1/3: 1,000 tokens reported · loading s.jsonl: calibrating 3 messages…"
    )
    assert waiting_status(t, 2, 200_000, "s.jsonl") == (
        "request 2/3 · loading s.jsonl: calibrating 3 messages…"  # no report: no figure
    )


async def test_the_gauge_says_the_last_report_while_the_columns_are_shaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    import inspector.tui.app as app_module
    from inspector.samples import SAMPLES, sample_path
    from inspector.tui import InspectorApp

    path = sample_path("short-session")
    transcript, window = load(path), SAMPLES["short-session"].window
    last = transcript.requests[-1]
    assert last.usage is not None
    release = threading.Event()
    real = app_module.step_view

    def held(*args: Any, **kwargs: Any) -> Any:
        release.wait(20)  # the columns of the first request wait here until the test has looked
        return real(*args, **kwargs)

    monkeypatch.setattr(app_module, "step_view", held)
    app = InspectorApp(transcript, policy="opencollab", window=window)
    try:
        async with app.run_test(size=SIZE) as pilot:
            main = app.main
            for _ in range(500):
                await pilot.pause(0.02)
                if main.session is not None:
                    break
            await pilot.pause(0.05)
            assert main.view is None and main.columns.view is None  # the columns are not shaped yet
            n = len(transcript.requests)
            want = (
                f"request {n:,}/{n:,}: {last.usage.context:,} tokens reported "
                f"({last.usage.context / window:.0%} of {window:,})"
            )
            assert main.gauge.status.startswith(want + " · loading short-session.jsonl: calibrating")
            shown = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
            assert want in shown
            release.set()
            for _ in range(500):
                await pilot.pause(0.02)
                if main.view is not None and main.columns.view is main.view:
                    break
            await pilot.pause(0.05)
            assert main.gauge.status == ""  # the request's gauge took its place
            assert main.gauge.plain_lines()[0].startswith(f"request {n}/{n}")
    finally:
        release.set()


def test_the_paint_benchmark_opens_through_the_command_line_and_times_both_frames(tmp_path: Path) -> None:
    """`python -m benchmarks.paint` (the runner's first-paint rows) on a sample: a first open through
    `inspector.cli.main`, the session's first frame no later than its columns, the entry written
    once the app closed, in a cache folder of its own (never the run's)."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.paint", str(SAMPLE)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
        check=True,
    ).stdout
    got = json.loads(out)
    assert got["painted"] == 1.0
    assert got["load"] > 0 and got["paint"] > 0
    assert got["framed_at"] <= got["painted_at"] + 1e-3
    assert 0 < got["framed_cpu"] <= got["cpu"]
    assert len(got["steps"]) == min(30, len(load(SAMPLE).requests) - 1)
    assert not (tmp_path / "cache" / "context-inspector" / "transcripts").exists()  # a fresh folder's
