"""The command palette lists every key's action from the main screen's bindings (one source of
truth), and each entry runs its action."""

from __future__ import annotations

import time
from typing import Any

from textual.binding import Binding
from textual.command import CommandPalette

from inspector.formats import load
from inspector.samples import SAMPLES, sample_path
from inspector.tui import InspectorApp
from inspector.tui.app import MainScreen, palette_entries

SIZE = (160, 48)


def test_every_binding_is_one_palette_entry_with_its_label_tooltip_and_key() -> None:
    bindings = list(Binding.make_bindings(MainScreen.BINDINGS))
    entries = palette_entries(MainScreen.BINDINGS, lambda b: f"<{b.key}>")
    assert [action for _, _, action in entries] == [b.action for b in bindings]  # each once, in order
    by_action = {b.action: b for b in bindings}
    for name, help_text, action in entries:
        binding = by_action[action]
        assert name == binding.description
        assert help_text == f"{binding.tooltip or binding.description} · key <{binding.key}>"
    assert {"first_request", "last_request", "calibrate", "findings", "quit"} <= set(by_action)
    named = {name: action for name, _, action in entries}
    assert named["First request"] == "first_request" and named["Findings"] == "findings"


def test_a_binding_added_to_the_screen_is_in_the_palette() -> None:
    extra = [*MainScreen.BINDINGS, Binding("z", "zoom", "Zoom", tooltip="Zoom in")]
    assert palette_entries(extra)[-1] == ("Zoom", "Zoom in · key z", "zoom")
    twice = [Binding("a", "alpha", "Alpha"), Binding("b", "alpha", "Alpha again")]
    assert palette_entries(twice) == [("Alpha", "Alpha · key a", "alpha")]


async def wait_for(pilot: Any, check: Any, what: str, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)


async def test_the_palette_runs_a_key_s_action_by_its_label() -> None:
    app = InspectorApp(load(sample_path("long-session")), window=SAMPLES["long-session"].window)
    app.animation_level = "none"
    async with app.run_test(size=SIZE) as pilot:
        main = app.main
        await wait_for(pilot, lambda: main.view is not None, "the first request")
        assert main.request == main.total > 1
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), "the command palette")
        await pilot.press(*"First request")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: main.view is not None and main.view.index == 1, "request 1")
        assert main.request == 1
        assert isinstance(app.screen, MainScreen)
        # and the key the palette's entry names does the same
        await pilot.press("greater_than_sign")
        await wait_for(pilot, lambda: main.view is not None and main.view.index == main.total, "the last")
