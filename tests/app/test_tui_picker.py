"""The session picker (`context-inspector` with no PATH) over fake home folders."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Label, OptionList

from inspector.live import SessionInfo
from inspector.model import Transcript
from inspector.report.progress import human_size
from inspector.samples import sample_path
from inspector.tui import InspectorApp
from inspector.tui.app import MainScreen
from inspector.tui.picker import HEADING_NONE, PickerScreen, ago, short_project
from tests.app.test_tui_app import tiny_transcript

SIZE = (160, 48)
WAIT = 8.0
NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture()
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every harness location points into tmp_path (and nothing is there yet)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "home").mkdir()
    return tmp_path


def claude_session(root: Path, name: str, sample: str, minutes_ago: float) -> Path:
    path = root / "claude" / "projects" / "-home-dev-projects-ledgerline" / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    source = sample_path(sample)
    if not source.exists():
        pytest.skip(f"sample {sample} not generated yet")
    path.write_bytes(source.read_bytes())
    then = time.time() - minutes_ago * 60
    os.utime(path, (then, then))
    return path


def codex_session(root: Path, minutes_ago: float) -> Path:
    path = root / "codex" / "sessions" / "2026" / "02" / "27" / "rollout-2026-02-27T10-00-00-0199.jsonl"
    path.parent.mkdir(parents=True)
    records = [
        {
            "timestamp": "2026-02-27T10:00:00Z",
            "type": "session_meta",
            "payload": {"id": "0199-thread", "cwd": "/work/codex-proj", "originator": "codex_cli_rs"},
        },
        {"type": "event_msg", "payload": {"type": "user_message", "message": "Rename the module"}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    then = time.time() - minutes_ago * 60
    os.utime(path, (then, then))
    return path


async def wait_until(pilot: Any, check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if check():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def option_ids(app: InspectorApp) -> list[str | None]:
    options = app.screen.query_one("#picker-list", OptionList)
    return [options.get_option_at_index(i).id for i in range(options.option_count)]


def counter(app: InspectorApp) -> str:
    screen = app.screen
    if not isinstance(screen, MainScreen) or screen.view is None:
        return ""
    return screen.gauge.plain_lines()[0]


def loaded(app: InspectorApp) -> bool:
    if not isinstance(app.screen, PickerScreen) or not app.screen.query("#picker-list"):
        return False
    return any((i or "").startswith("sample-") for i in option_ids(app))


async def test_lists_sessions_newest_first_and_enter_opens_one(fake_home: Path) -> None:
    older = claude_session(fake_home, "aaaa1111", "short-session", minutes_ago=180)
    newer = claude_session(fake_home, "bbbb2222", "long-session", minutes_ago=10)
    oldest = codex_session(fake_home, minutes_ago=3 * 24 * 60)
    app = InspectorApp()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: loaded(app), "the discovered sessions")
        picker = app.screen
        assert isinstance(picker, PickerScreen)
        assert [s.path for s in picker.found] == [newer, older, oldest]
        ids = option_ids(app)
        assert ids[:3] == ["session-0", "session-1", "session-2"]
        assert ids[3] is None  # after a divider: the "bundled samples" heading (disabled)
        assert ids[4:] == ["sample-long-session", "sample-short-session"]
        heading = str(picker.query_one("#picker-heading", Label).content)
        assert heading.startswith("Sessions on this machine, newest first (3)")
        text = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
        assert "claude-code" in text and "codex" in text and "Rename the module" in text
        assert "10 min ago" in text and "3 h ago" in text and "3 days ago" in text
        assert "…/dev/projects/ledgerline" in text
        assert str(fake_home) not in text  # no temporary path on screen

        await pilot.press("down", "enter")  # the older Claude Code session: the short one
        await wait_until(pilot, lambda: counter(app).startswith("request 12/12"), "the main screen")
        main = app.screen
        assert isinstance(main, MainScreen)
        assert main.follower is None and "● live" not in str(main.gauge.border_title)
        assert "aaaa1111.jsonl" in str(main.gauge.border_title)
        assert app.main is main

        # s: back to the sessions, and another one opens
        await pilot.press("s")
        await wait_until(pilot, lambda: loaded(app), "the picker again")
        await pilot.press("enter")
        await wait_until(pilot, lambda: counter(app).startswith("request 264/264"), "the long session")


async def test_a_session_written_in_the_last_minute_opens_live(fake_home: Path) -> None:
    claude_session(fake_home, "cccc3333", "short-session", minutes_ago=0.2)
    app = InspectorApp()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: loaded(app), "the discovered sessions")
        picker = app.screen
        assert isinstance(picker, PickerScreen) and picker.found[0].live
        assert "● 1 live" in str(picker.query_one("#picker-heading", Label).content)
        await pilot.press("enter")
        await wait_until(pilot, lambda: counter(app).startswith("request 12/12"), "the main screen")
        main = app.screen
        assert isinstance(main, MainScreen)
        assert main.follower is not None and main.following
        assert "● live" in str(main.gauge.border_title)


async def test_nothing_found_offers_the_samples(fake_home: Path) -> None:
    app = InspectorApp()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: loaded(app), "the samples")
        picker = app.screen
        assert isinstance(picker, PickerScreen)
        assert str(picker.query_one("#picker-heading", Label).content) == HEADING_NONE
        assert option_ids(app) == ["sample-long-session", "sample-short-session"]
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: counter(app).startswith("request 12/12"), "the short sample")
        main = app.screen
        assert isinstance(main, MainScreen) and "policy opencollab" in str(main.gauge.border_title)


async def test_escape_quits(fake_home: Path) -> None:
    app = InspectorApp()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: loaded(app), "the samples")
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert app.return_code == 0


@pytest.mark.slow
async def test_an_opencode_session_is_loaded_by_its_id(
    fake_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = fake_home / "xdg" / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"SQLite format 3\x00")
    calls: list[tuple[Path, str | None]] = []

    def fake_load(self: object, path: Path, session_id: str | None = None) -> Transcript:
        calls.append((Path(path), session_id))
        return tiny_transcript("opencode.db")

    monkeypatch.setattr("inspector.formats.opencode.OpencodeFormat.load", fake_load)
    old = NOW - timedelta(days=1)
    rows = [
        SessionInfo(harness="opencode", path=db, last_activity=old, session_id="ses_b", title="B"),
        SessionInfo(harness="opencode", path=db, last_activity=old, session_id="ses_a", title="A"),
    ]
    app = InspectorApp(sessions=rows, now=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: loaded(app), "the rows")
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: counter(app).startswith("request 2/2"), "the opencode session")
    assert calls == [(db, "ses_a")]


async def test_a_file_that_cannot_be_read_keeps_the_picker(fake_home: Path) -> None:
    bad = fake_home / "gone.jsonl"
    rows = [SessionInfo(harness="claude-code", path=bad, last_activity=NOW, title="gone")]
    app = InspectorApp(sessions=rows, now=NOW)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_until(pilot, lambda: loaded(app), "the rows")
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, PickerScreen) and not app.screen.opening,
            "the failure",
        )
        assert not app.screen.query_one("#picker-list", OptionList).disabled


def test_row_words() -> None:
    assert human_size(412) == "412 B"
    assert human_size(830_000) == "830 KB"
    assert human_size(1_900_000) == "1.9 MB"
    assert ago(NOW - timedelta(seconds=12), NOW) == "12 s ago"
    assert ago(NOW - timedelta(minutes=5), NOW) == "5 min ago"
    assert ago(NOW - timedelta(days=1, hours=2), NOW) == "1 day ago"
    assert ago(NOW - timedelta(days=40), NOW) == "2026-01-20"
    home = Path("/home/ana")
    assert short_project("/home/ana/src/ledgerline", home) == "~/src/ledgerline"
    assert short_project("/home/anabel/x", home) == "/home/anabel/x"
    assert short_project("/srv/" + "a" * 60 + "/project", home) == "…/project"
    assert short_project("/home/dev/projects/ledgerline", home) == "…/dev/projects/ledgerline"
    one = short_project("/" + "b" * 40, home)
    assert one.startswith("…b") and len(one) == 28
    assert short_project("/tmp/\x1b]52;c;SGVsbG8=\x07", None) == "/tmp/\\x1b]52;c;SGVsbG8=\\x07"
    assert short_project(None, home) == "—"


def snapshot_rows() -> list[SessionInfo]:
    def at(**ago_: float) -> datetime:
        return NOW - timedelta(**ago_)

    return [
        SessionInfo(
            harness="claude-code",
            path=Path("/nowhere/a.jsonl"),
            project="/home/ana/src/ledgerline",
            size_bytes=14_200_000,
            requests=212,
            last_activity=at(seconds=12),
            live=True,
            title="Fix the CSV export crash on files that end with a blank line",
        ),
        SessionInfo(
            harness="opencode",
            path=Path("/nowhere/opencode.db"),
            project="/home/ana/src/tools",
            size_bytes=1_100_000,
            requests=48,
            last_activity=at(hours=3),
            title="Add a --currency option [bold red]x[/] \x1b[31mred\x1b[0m",
            session_id="ses_1",
        ),
        SessionInfo(
            harness="codex",
            path=Path("/nowhere/rollout.jsonl"),
            project="/srv/builds/a-rather-long-folder-name/and/a/deeply/nested/project",
            size_bytes=96_000_000,
            requests=1_240,
            requests_estimated=True,
            last_activity=at(days=2),
            title="Port the importer to the new API",
        ),
        SessionInfo(
            harness="opencollab",
            path=Path("/nowhere/agent_1_coder.json"),
            project=None,
            size_bytes=4_100,
            requests=None,
            last_activity=at(days=30),
            title=None,
        ),
    ]


def test_picker_snapshot(snap_compare: Any) -> None:
    app = InspectorApp(sessions=snapshot_rows(), now=NOW, home=Path("/home/ana"))
    app.animation_level = "none"

    async def run_before(pilot: Any) -> None:
        await wait_until(pilot, lambda: loaded(app), "the rows")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


@pytest.mark.slow
async def test_each_session_of_an_opencode_database_is_a_row_that_opens_it(fake_home: Path) -> None:
    from tests.support.opencode_sessions import (
        NEWEST_FIRST,
        ORIGINAL,
        SECOND,
        SESSIONS,
        THIRD,
        three_session_db,
    )

    db = three_session_db(fake_home / "xdg" / "opencode")
    app = InspectorApp()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: loaded(app), "the discovered sessions")
        picker = app.screen
        assert isinstance(picker, PickerScreen)
        assert [(s.path, s.session_id) for s in picker.found] == [(db, sid) for sid in NEWEST_FIRST]
        assert option_ids(app)[:4] == ["session-0", "session-1", "session-2", None]
        heading = str(picker.query_one("#picker-heading", Label).content)
        assert heading.startswith("Sessions on this machine, newest first (3)")
        lines = [strip.text for strip in app.screen._compositor.render_strips()]
        rows = [line for line in lines if " opencode " in line]
        assert len(rows) == 3
        for line, sid in zip(rows, NEWEST_FIRST, strict=True):
            assert SESSIONS[sid]["title"] in line
        assert [line.split()[3] for line in rows] == ["1", "2", "2"]  # │ harness project requests

        for downs, sid in ((1, SECOND), (2, ORIGINAL), (0, THIRD)):
            await pilot.press(*(["down"] * downs), "enter")
            n = len(SESSIONS[sid]["contexts"])

            def shown(n: int = n) -> bool:
                return counter(app).startswith(f"request {n}/{n}")

            await wait_until(pilot, shown, f"session {sid}")
            main = app.screen
            assert isinstance(main, MainScreen)
            assert main.transcript.session_id == sid
            assert [r.usage.context for r in main.transcript.requests if r.usage] == SESSIONS[sid]["contexts"]
            await pilot.press("s")
            await wait_until(pilot, lambda: loaded(app), "the picker again")


def test_an_untitled_session_of_a_database_shows_its_id() -> None:
    from inspector.tui.picker import session_row

    db = Path("/data/opencode/opencode.db")
    rows = [
        SessionInfo(harness="opencode", path=db, last_activity=NOW, session_id="ses_abc\x1b[2J"),
        SessionInfo(harness="opencode", path=db, last_activity=NOW, session_id="ses_def", title="named"),
        SessionInfo(harness="claude-code", path=Path("/p/s1.jsonl"), last_activity=NOW, session_id="s1"),
    ]
    titles = [session_row(i, r, NOW, None).title for i, r in enumerate(rows)]
    assert titles == ["(untitled) ses_abc\\x1b[2J", "named", "(untitled)"]
