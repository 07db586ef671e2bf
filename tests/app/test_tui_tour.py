"""The guided tour: `context-inspector tour SCENARIO` opens the app with a narration panel."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.widgets import Static

from inspector.cli import main as cli_main
from inspector.formats import load
from inspector.samples import SCENARIOS
from inspector.scenarios import stops
from inspector.tui import InspectorApp
from inspector.tui.app import MainScreen

SIZE = (160, 48)
NAME = "clear-suffices"


def narration_text(main: MainScreen) -> str:
    return str(main.query_one("#narration", Static).render())


async def replay_where(pilot: Any, main: MainScreen, ready: Callable[[], bool]) -> None:
    """Wait (up to 5 s) until `ready()` holds of the screen's replay."""
    for _ in range(100):
        if ready():
            return
        await pilot.pause(0.05)


async def at_stop(pilot: Any, main: MainScreen, request: int, policy: str) -> None:
    for _ in range(600):
        await pilot.pause(0.02)
        view = main.view
        if (
            main.tour is not None
            and view is not None
            and main.columns.view is view
            and view.index == request
            and view.policy == policy
        ):
            break
    else:
        raise AssertionError(f"the tour did not reach request {request} under {policy}")
    await pilot.pause()


@pytest.mark.parametrize("name", [NAME, "eager-clear-cache"])
async def test_tour_shows_the_narration_and_steps_to_the_next_stop(name: str) -> None:
    info = SCENARIOS[name]
    expected = stops(name)
    assert len(expected) >= 2
    app = InspectorApp(load(info.path), policy=info.policy, window=info.window, start="first", tour=name)
    async with app.run_test(size=SIZE) as pilot:
        main = app.main
        first, second = expected[0], expected[1]
        await at_stop(pilot, main, first.request, first.policy)
        text = narration_text(main)
        assert first.narration[:60] in " ".join(text.split())
        assert f"request {first.request}" in text
        assert main.gauge.plain_lines()[0].startswith(f"request {first.request}/")
        await pilot.press("full_stop")
        await at_stop(pilot, main, second.request, second.policy)
        assert second.narration[:60] in " ".join(narration_text(main).split())
        assert main.gauge.plain_lines()[0].startswith(f"request {second.request}/")
        await pilot.press("comma")
        await at_stop(pilot, main, first.request, first.policy)


def test_tour_without_a_scenario_lists_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["tour"]) == 0
    out = capsys.readouterr().out
    for name, info in SCENARIOS.items():
        assert name in out and info.title in out


def test_tour_of_an_unknown_scenario_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["tour", "nope"]) != 0
    err = capsys.readouterr().err
    assert "no scenario named 'nope'" in err and "Traceback" not in err


def test_sample_accepts_scenario_names(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_run_app(transcript: Any, **kwargs: Any) -> None:
        seen["path"] = transcript.path
        seen.update(kwargs)

    monkeypatch.setattr("inspector.tui.run_app", fake_run_app)
    assert cli_main(["--sample", NAME]) == 0
    assert seen["path"].endswith(SCENARIOS[NAME].file.split("/")[-1])
    assert seen["settings"].window == SCENARIOS[NAME].window
    assert seen["settings"].window_source == "sample"  # the header says where the window came from


def test_sample_with_window_says_the_window_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr("inspector.tui.run_app", lambda transcript, **kw: seen.update(kw))
    assert cli_main(["--sample", NAME, "--window", "90000"]) == 0
    assert (seen["settings"].window, seen["settings"].window_source) == (90_000, "--window")


async def test_sample_header_names_the_sample_as_the_windows_source() -> None:
    info = SCENARIOS[NAME]
    app = InspectorApp(load(info.path), policy=info.policy, window=info.window, window_source="sample")
    async with app.run_test(size=SIZE) as pilot:
        main = app.main
        await replay_where(pilot, main, lambda: main.replay is not None)
        await pilot.pause()
        title = str(main.gauge.border_title)
        assert f"window {info.window:,} (sample)" in title, title
        assert "(--window)" not in title


async def test_a_window_set_in_the_app_is_no_longer_the_samples() -> None:
    """Once the user sets a window (`w`), the header and any later re-read (a followed file reset)
    call it given, not the sample's."""
    info = SCENARIOS[NAME]
    app = InspectorApp(load(info.path), policy=info.policy, window=info.window, window_source="sample")
    async with app.run_test(size=SIZE) as pilot:
        main = app.main
        await replay_where(pilot, main, lambda: main.replay is not None)
        main.apply_window(90_000)
        await replay_where(pilot, main, lambda: main.replay is not None and main.replay.window == 90_000)
        await pilot.pause()
        assert main.window_source == "--window"
        assert "window 90,000 (--window)" in str(main.gauge.border_title)
