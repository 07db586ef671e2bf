"""The findings panel: F lists find_all's findings; enter goes to the request and its message."""

from __future__ import annotations

from typing import Any

from textual.widgets import OptionList

from inspector.findings import find_all
from inspector.samples import sample_info
from inspector.scenarios import open_scenario
from inspector.tui import InspectorApp
from inspector.tui.app import MainScreen
from inspector.tui.findings import FindingsScreen
from tests.conftest import settle as shared_settle

SIZE = (160, 48)
NAME = "eager-clear-cache"


async def settled(pilot: Any, request: int | None = None) -> MainScreen:
    main: MainScreen = await shared_settle(pilot, request)
    return main


async def test_selecting_a_finding_moves_to_its_request_and_message() -> None:
    info = sample_info(NAME)
    assert info.compare_policy is not None
    replay = open_scenario(NAME, policy=info.compare_policy)
    reread = next(f for f in find_all(replay) if f.kind == "reread")
    app = InspectorApp(replay.transcript, policy=info.compare_policy, window=info.window, start=1)
    async with app.run_test(size=SIZE) as pilot:
        main = await settled(pilot, 1)
        await pilot.press("F")
        for _ in range(300):
            await pilot.pause(0.02)
            if isinstance(app.screen, FindingsScreen):
                break
        panel = app.screen
        assert isinstance(panel, FindingsScreen)
        options = panel.query_one(OptionList)
        index = next(i for i, f in enumerate(panel.findings) if f.kind == "reread")
        prompt = str(options.get_option_at_index(index).prompt)
        assert "WARNING" in prompt and "reread" in prompt and f"request {reread.request}" in prompt
        options.highlighted = index
        await pilot.press("enter")
        main = await settled(pilot, reread.request)
        assert app.screen is main
        assert main.gauge.plain_lines()[0].startswith(f"request {reread.request}/")
        view = main.view
        assert view is not None
        message = view.message_at(main.columns.cursor_row)
        assert message is not None and message.id == reread.message_ids[0]


async def test_findings_panel_closes_with_escape() -> None:
    info = sample_info(NAME)
    replay = open_scenario(NAME, policy=info.compare_policy)
    app = InspectorApp(replay.transcript, policy=info.compare_policy, window=info.window)
    async with app.run_test(size=SIZE) as pilot:
        main = await settled(pilot)
        request = main.request
        await pilot.press("F")
        for _ in range(300):
            await pilot.pause(0.02)
            if isinstance(app.screen, FindingsScreen):
                break
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is main and main.request == request
