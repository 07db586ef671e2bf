"""Issue 27, "the same fact reads the same everywhere" and "labels a newcomer can read", in the app,
on the corpus files where they were seen: a session's request count is one number in the picker,
`sessions` and the app's header; a file's size is written one way; the gauge says when a context
is the calibrated prediction (no usage reported); a priority is called a priority."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Label, OptionList

from inspector.cli import main as cli
from inspector.formats import load
from inspector.report.progress import human_size
from inspector.tui import InspectorApp
from inspector.tui.app import MainScreen
from inspector.tui.calibrate import CalibrateScreen
from inspector.tui.messages import OpenProgress
from inspector.tui.picker import PickerScreen
from inspector.tui.widgets.gauge import numbers
from inspector.tui.widgets.side import detail_text
from tests.app.test_tui_app import SIZE, screen_text, settle
from tests.conftest import FA812, corpus_file

CODEX = (
    "codex/agent-history-real-session-01.jsonl",  # 1 request
    "codex/agent-history-synthetic-compaction.jsonl",  # 6 requests, 5 of them without usage
    "codex/lazyagents-codex-0.158.0-rollout.jsonl",  # 2 requests (the "2 requests")
)
FA812_NAME = "claude-code/spotter-fa812bfe/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"
WAIT = 60.0
"""Seconds a pilot waits for a screen (fa812bfe is 3.5 MB: opened, calibrated, under a loaded CI)."""


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every harness location points into tmp_path, where copies of corpus files are put (the
    corpus itself stays as it is: nothing is written beside a transcript)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "home").mkdir()
    return tmp_path


def placed(source: Path, target: Path, hours_ago: float) -> Path:
    """A copy of `source` at `target`, last written `hours_ago` (not live: the app does not follow it)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    then = time.time() - hours_ago * 3600
    os.utime(target, (then, then))
    return target


def codex_home_file(root: Path, relative: str, hours_ago: float) -> Path:
    source = corpus_file(relative)
    day = root / "codex" / "sessions" / "2026" / "01" / f"{10 + int(hours_ago):02d}"
    return placed(source, day / f"rollout-2026-01-10T00-00-00-{source.stem}.jsonl", hours_ago)


async def wait_until(pilot: Any, check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if check():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def picker_ready(app: InspectorApp) -> bool:
    screen = app.screen
    if not isinstance(screen, PickerScreen) or screen.opening or not screen.query("#picker-list"):
        return False
    options = screen.query_one("#picker-list", OptionList)
    return any(
        (options.get_option_at_index(i).id or "").startswith("sample-") for i in range(options.option_count)
    )


def header(app: InspectorApp) -> str:
    screen = app.screen
    if not isinstance(screen, MainScreen) or screen.view is None:
        return ""
    return screen.gauge.plain_lines()[0]


def shows_request(app: InspectorApp, n: int) -> Callable[[], bool]:
    """Whether the app's header reads "request N/N" (the last of N requests, as a file opens)."""
    return lambda: header(app).startswith(f"request {n}/{n} ")


def sessions_cli(capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, int], str]:
    """`sessions --json`'s request count per file, and the text table at 400 columns."""
    assert cli(["sessions", "--json"]) == 0
    listed = {Path(row["path"]).name: row["requests"] for row in json.loads(capsys.readouterr().out)}
    assert cli(["sessions"]) == 0
    return listed, capsys.readouterr().out


@pytest.mark.slow
async def test_a_request_count_is_one_number_in_picker_sessions_and_app(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    files = [codex_home_file(home, name, hours_ago=i + 1) for i, name in enumerate(CODEX)]
    claude = home / "claude" / "projects" / "-home-dev-spotter" / FA812.name
    files.append(placed(corpus_file(FA812_NAME), claude, hours_ago=5))
    # what the reader makes of each file: the number every surface must show
    expected = {f.name: len(load(str(f)).requests) for f in files}
    assert sorted(expected.values()) == [1, 2, 6, 157]

    monkeypatch.setenv("COLUMNS", "400")
    listed, table = sessions_cli(capsys)
    assert listed == expected
    for f in files:
        (line,) = [x for x in table.splitlines() if str(f) in x]
        assert f" {expected[f.name]:,} " in line, line

    app = InspectorApp()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: picker_ready(app), "the picker")
        picker = app.screen
        assert isinstance(picker, PickerScreen)
        assert [s.path for s in picker.found] == files  # newest first: the order they were placed in
        options = picker.query_one("#picker-list", OptionList)
        for i, f in enumerate(files):
            row = str(options.get_option_at_index(i).prompt)
            assert f" {expected[f.name]:,} " in row, row
            assert f"~{expected[f.name]}" not in row  # counted, not estimated
        for i, f in enumerate(files):
            await pilot.press("home", *["down"] * i, "enter")
            await wait_until(pilot, shows_request(app, expected[f.name]), f"{f.name} opened")
            assert f.name in str(app.screen.query_one("#gauge").border_title)
            await pilot.press("s")
            await wait_until(pilot, lambda: picker_ready(app), "the picker again")


async def test_a_file_size_is_written_one_way_in_picker_sessions_and_loading_line(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = home / "claude" / "projects" / "-home-dev-spotter" / FA812.name
    path = placed(corpus_file(FA812_NAME), claude, hours_ago=5)
    size = path.stat().st_size
    shown = human_size(size)
    assert shown == f"{size / 1e6:.1f} MB" == "3.5 MB"  # 1000-based, one decimal: not 3.3 (MiB)

    monkeypatch.setenv("COLUMNS", "400")
    _, table = sessions_cli(capsys)
    (line,) = [x for x in table.splitlines() if str(path) in x]
    assert f" {shown} " in line and "MiB" not in line

    app = InspectorApp()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: picker_ready(app), "the picker")
        picker = app.screen
        assert isinstance(picker, PickerScreen)
        row = str(picker.query_one("#picker-list", OptionList).get_option_at_index(0).prompt)
        assert f" {shown} " in row, row
        # the line under the list once the file is read says the same size
        picker.opening_label = f"opening {path.name}"
        picker.open_progress(OpenProgress(size, size))
        label = str(picker.query_one("#picker-loading-label", Label).content)
        assert label == f"opening {path.name}: read {shown}, building the transcript…"


async def step_to(pilot: Any, request: int) -> MainScreen:
    await pilot.press("g")
    await pilot.pause(0.1)
    await pilot.press(*str(request), "enter")
    return await settle(pilot, request)


async def test_the_gauge_says_calibrated_prediction_where_no_usage_is_reported() -> None:
    transcript = load(corpus_file("codex/agent-history-synthetic-compaction.jsonl"))
    assert [r.usage is None for r in transcript.requests] == [True] * 5 + [False]
    app = InspectorApp(transcript)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, 6)
        assert main.gauge.plain_lines()[0].startswith("request 6/6 · context 2,000 ")
        assert "prediction" not in main.gauge.plain_lines()[0]  # reported: no prediction
        main = await step_to(pilot, 2)
        first = main.gauge.plain_lines()[0]
        assert first.startswith("request 2/6 · context 286 (calibrated prediction) · sent 286"), first
        assert "request 2/6 · context 286 (calibrated prediction)" in screen_text(app)
        # narrower, the label is kept (in fewer words) before the number goes unlabelled
        await pilot.resize_terminal(120, 48)
        await pilot.pause(0.2)
        assert main.gauge.content_region.width == 68
        assert (
            main.gauge.plain_lines()[0] == "request 2/6 · context 286 (predicted) · sent 286 · 0.2% of window"
        )
        view = main.view
        assert view is not None
        assert numbers(view, 40) == "req 2/6 · ctx 286 (predicted) · sent 286"


async def test_the_detail_pane_and_pinned_list_say_priority() -> None:
    transcript = load(corpus_file("codex/agent-history-synthetic-compaction.jsonl"))
    app = InspectorApp(transcript)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, 6)
        main = await step_to(pilot, 2)
        # row 0 at request 2 is the first user message: the task (priority 80), which the codex
        # preset does not pin (Codex protects its instructions, AGENTS.md and skills, not the task)
        assert main.detail.detail is not None and main.detail.detail.row == 0
        assert main.detail.detail.source == "task · first user task · priority 80"
        shown = detail_text(main.detail.detail, {}).plain.splitlines()
        assert "source task · first user task · priority 80" in shown
        assert "request 2: unchanged: no layer fired (estimate 286 under trigger 121,263)" in shown
        # on screen the pane wraps those lines: the words are there, in order
        pane = " ".join(x.strip("│ ") for x in screen_text(app).splitlines())
        assert "first user task · priority" in pane
        # the pinned sources: the overhead Codex sends with every request, said with its priority
        pinned = main.query_one("#pinned").render()
        lines = str(pinned).splitlines()
        assert any(x.startswith("⚑ priority 100 prompt overhead") for x in lines), lines
        assert lines[2].startswith("  sent by Codex with every request"), lines
        assert not any("first user task" in x for x in lines), lines


async def test_the_overhead_of_a_claude_code_session_is_named_with_its_priority() -> None:
    transcript = load(corpus_file("claude-code/spotter-short.jsonl"))
    app = InspectorApp(transcript)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, 1)
        lines = str(main.query_one("#pinned").render()).splitlines()
        assert lines[1].startswith("⚑ priority 100 prompt over"), lines
        assert lines[2].startswith("  sent by Claude Code with every reques"), lines


async def test_the_calibrate_panel_counts_one_request_predicted_in_the_singular() -> None:
    # two reports: the second request is the only one predicted ("1 requests" before)
    transcript = load(corpus_file("codex/lazyagents-codex-0.158.0-rollout.jsonl"))
    assert [r.usage is not None for r in transcript.requests] == [True, True]
    app = InspectorApp(transcript)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, 2)
        await pilot.press("A")
        await wait_until(pilot, lambda: isinstance(app.screen, CalibrateScreen), "the calibrate panel")
        summary = app.screen.query_one("#calibrate-summary", Label)
        await wait_until(pilot, lambda: "(best)" in str(summary.render()), "the accuracy figures")
        lines = str(summary.render()).splitlines()
        assert len(lines) == 4 and all(x.endswith(" · 1 request predicted") for x in lines), lines
        assert "requests" not in str(summary.render())


async def test_the_money_is_on_screen_where_the_gauge_line_has_no_room_for_it() -> None:
    """At 160x48 fa812bfe's first gauge line fills the gauge without the cost: the money moves to
    the gauge's bottom line, after the time and the model, and is said once."""
    transcript = load(corpus_file(FA812_NAME))
    app = InspectorApp(transcript)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, 157)
        view = main.view
        assert view is not None and view.cost.startswith("cost $") and view.cost.endswith(" so far")
        first = numbers(view, main.gauge.content_region.width)
        assert "cost" not in first  # no room on the first line
        subtitle = str(main.gauge.border_subtitle)
        assert view.cost in subtitle and subtitle.count("cost $") == 1
        assert subtitle.index("claude-opus-4-6") < subtitle.index(view.cost)
        assert "cost $" in screen_text(app)
