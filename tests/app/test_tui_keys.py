"""Keys that can do nothing where the user is say why, in one line (and the key bar leaves out the
ones that never apply here)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.notifications import Notify

from inspector.formats import load
from inspector.model import SubagentRef
from inspector.samples import SAMPLES, sample_path
from inspector.tui import InspectorApp
from inspector.tui.app import MainScreen, Start
from inspector.tui.compare import CompareScreen
from inspector.tui.widgets.keybar import KeyBar
from tests.conftest import settle as shared_settle

SIZE = (160, 48)


def sample_app(start: Start = "last") -> InspectorApp:
    path = sample_path("short-session")
    if not path.exists():
        pytest.skip("sample short-session not generated yet")
    app = InspectorApp(load(path), policy="opencollab", window=SAMPLES["short-session"].window, start=start)
    app.animation_level = "none"
    return app


async def settled(pilot: Any, request: int | None = None) -> MainScreen:
    """The main screen once it shows `request` (or any) and its scan is done."""
    main: MainScreen = await shared_settle(pilot, request, scanned=True, timeout=15)
    return main


class Toasts:
    """The notifications the app posted, as their text."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def hook(self, message: Message) -> None:
        self.messages.append(message)

    def said(self) -> list[str]:
        return [m.notification.message for m in self.messages if isinstance(m, Notify)]

    async def after(self, pilot: Any, key: str) -> str:
        """Press `key`; the one notification it brought."""
        before = len(self.said())
        await pilot.press(key)
        deadline = time.monotonic() + 5
        while len(self.said()) == before:
            assert time.monotonic() < deadline, f"{key!r} said nothing"
            await pilot.pause(0.02)
        new = self.said()[before:]
        assert len(new) == 1, new
        assert "\n" not in new[0]
        return new[0]


def shown_keys(app: InspectorApp) -> list[str]:
    bar = app.screen.query_one(KeyBar)
    return [span.key for span in bar.spans]


async def test_keys_at_the_last_request_say_why() -> None:
    toasts = Toasts()
    app = sample_app("last")
    async with app.run_test(size=SIZE, notifications=True, message_hook=toasts.hook) as pilot:
        main = await settled(pilot)
        total = main.total
        assert main.view is not None and main.view.index == total
        assert await toasts.after(pilot, "right_square_bracket") == (
            f"this is request {total}, the last one: [ goes to the previous"
        )
        assert main.request == total  # nothing moved
        said = await toasts.after(pilot, "n")
        assert said.startswith(f"no request after request {total} where a layer starts firing")
        assert said.endswith("(N goes back)")
        assert await toasts.after(pilot, "full_stop") == (
            "no tour here: context-inspector tour NAME opens a scenario with its stops"
        )
        assert await toasts.after(pilot, "comma") == (
            "no tour here: context-inspector tour NAME opens a scenario with its stops"
        )
        said = await toasts.after(pilot, "s")
        assert said.startswith("the app was opened on a file, not on the session picker: ")
        assert await toasts.after(pilot, "a") == (
            "short-session.jsonl ran no subagents (none in its file, none in a subagents/ folder beside it)"
        )
        assert (
            await toasts.after(pilot, "escape") == "nothing to close here (the search is not open): q quits"
        )
        said = await toasts.after(pilot, "f")
        assert said == (
            "short-session.jsonl is not followed as it grows (--follow follows a file being written): "
            f"f keeps the view on its last request, {total}"
        )
        # End in the columns moves the cursor (no note); the screen's end key says why it follows nothing
        main.action_follow_newest()
        await pilot.pause(0.1)
        assert toasts.said()[-1] == (
            "short-session.jsonl is not followed as it grows: end follows a live file's newest request"
        )
        # the key bar leaves out the keys that never apply to this screen
        keys = shown_keys(app)
        assert "s" not in keys and "full_stop" not in keys and "a" not in keys and "escape" not in keys
        assert "question_mark" in keys and "q" in keys


async def test_keys_at_the_first_request_say_why(tmp_path: Path) -> None:
    toasts = Toasts()
    app = sample_app("first")
    async with app.run_test(size=SIZE, notifications=True, message_hook=toasts.hook) as pilot:
        main = await settled(pilot, 1)
        assert await toasts.after(pilot, "left_square_bracket") == (
            "this is request 1, the first one: ] goes to the next"
        )
        said = await toasts.after(pilot, "N")
        assert said.startswith("no request before request 1 where a layer starts firing")
        assert main.request == 1
        # an inline subagent (Claude Code 1.0) has no file of its own: said, not opened
        main.open_subagent(SubagentRef(agent_id="inline-1234", layout="inline (1.0)"))
        await pilot.pause(0.1)
        assert toasts.said()[-1] == (
            "subagent inline-1234 was written inline, in short-session.jsonl itself (Claude Code 1.0): "
            "it has no transcript of its own to open"
        )
        assert app.screen is main
        # a subagent whose file is gone: one line, and the session stays
        gone = tmp_path / "agent-gone.jsonl"
        main.open_subagent(SubagentRef(agent_id="gone", path=str(gone), layout="subagents/ (2.1)"))
        deadline = time.monotonic() + 5
        while not toasts.said()[-1].startswith("cannot open subagent gone: "):
            assert time.monotonic() < deadline, toasts.said()[-1]
            await pilot.pause(0.05)
        assert str(gone) in toasts.said()[-1] and "\n" not in toasts.said()[-1]
        assert app.screen is main and app.main is main


async def test_compare_at_the_last_request_says_why() -> None:
    toasts = Toasts()
    app = sample_app("last")
    async with app.run_test(size=SIZE, notifications=True, message_hook=toasts.hook) as pilot:
        main = await settled(pilot)
        main.action_compare("no_history_compaction")
        deadline = time.monotonic() + 10
        while not (isinstance(app.screen, CompareScreen) and app.screen.comparison is not None):
            assert time.monotonic() < deadline, "the comparison never showed"
            await pilot.pause(0.05)
        assert await toasts.after(pilot, "right_square_bracket") == (
            f"this is request {main.total}, the last one: nothing further to compare"
        )
