"""The calibrate panel: A shows the session's calibration accuracy and its five worst-predicted
requests with what was added before each; enter goes to that request."""

from __future__ import annotations

from textual.widgets import Label, OptionList

from inspector.formats import load
from inspector.tokens.accuracy import accuracy, worst_requests
from inspector.tui import InspectorApp
from inspector.tui.calibrate import CalibrateScreen
from tests.app.test_tui_findings import SIZE, settled
from tests.conftest import corpus_file


async def test_the_panel_lists_the_five_worst_requests_and_goes_to_one() -> None:
    path = corpus_file("claude-code/pooknast-da0d9633.jsonl")
    tr = load(path)
    worst = worst_requests(tr, accuracy(tr))
    assert len(worst) == 5
    app = InspectorApp(load(path), start=1)
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot, 1)
        await pilot.press("A")
        panel = app.screen
        assert isinstance(panel, CalibrateScreen)
        options = panel.query_one(OptionList)
        for _ in range(500):
            await pilot.pause(0.02)
            if options.option_count == 5:
                break
        assert options.option_count == 5
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(5)]
        for miss, prompt in zip(worst, prompts, strict=True):
            assert prompt.startswith(f"request {miss.request:,}")
            assert f"{miss.error_pct:.2f}% off" in prompt
            assert all(line[:40] in prompt for line in miss.added)
        summary = str(panel.query_one("#calibrate-summary", Label).render())
        assert "(best)" in summary and "p95" in summary
        options.highlighted = 1
        await pilot.press("enter")
        main = await settled(pilot, worst[1].request)
        assert app.screen is main
        assert main.gauge.plain_lines()[0].startswith(f"request {worst[1].request}/")
