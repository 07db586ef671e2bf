"""Snapshots of the app's answers: a recorded compaction opened, what fills the window, the chart,
the main screen at 80x24 and at 200x50, the light theme, the tour at 80x24.

Regenerate with `pytest tests/snapshots/test_tui_snapshots_window.py --snapshot-update`, then look at the SVGs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from inspector.formats import load
from inspector.samples import SCENARIOS
from inspector.tui import InspectorApp
from inspector.tui.window import CompositionScreen
from tests.conftest import FA812, corpus_file
from tests.snapshots.test_tui_snapshots import make_app, settled


def then(
    *keys: str, request: int | None = None, wait_for: type | None = None
) -> Callable[[Any], Awaitable[None]]:
    """Settle on the request, press `keys`, wait (bounded) for a screen of `wait_for`."""
    before = settled(request)

    async def run_before(pilot: Any) -> None:
        await before(pilot)
        for key in keys:
            await pilot.press(key)
            await pilot.pause(0.05)
        for _ in range(200):
            if wait_for is None or isinstance(pilot.app.screen, wait_for):
                break
            await pilot.pause(0.02)
        await pilot.pause(0.2)

    return run_before


def pilot_app(**kwargs: Any) -> InspectorApp:
    corpus_file(str(FA812.relative_to(FA812.parents[2])))
    app = InspectorApp(load(str(FA812)), **kwargs)
    app.animation_level = "none"
    return app


def test_recorded_compaction_opened(snap_compare: Any) -> None:
    from inspector.tui.window import CompactionScreen

    app = pilot_app(start=127)
    assert snap_compare(
        app, terminal_size=(160, 48), run_before=then("r", request=127, wait_for=CompactionScreen)
    )


def test_step_right_after_a_recorded_compaction(snap_compare: Any) -> None:
    assert snap_compare(pilot_app(start=127), terminal_size=(160, 48), run_before=settled(127))


def test_composition_view(snap_compare: Any) -> None:
    app = make_app("long-session", start=250)
    assert snap_compare(
        app, terminal_size=(160, 48), run_before=then("x", request=250, wait_for=CompositionScreen)
    )


def test_chart_at_80x24(snap_compare: Any) -> None:
    app = make_app("long-session", start=250)
    assert snap_compare(app, terminal_size=(80, 24), run_before=then("v", "v", request=250))


def test_main_screen_80x24(snap_compare: Any) -> None:
    assert snap_compare(make_app("long-session"), terminal_size=(80, 24), run_before=settled())


def test_main_screen_200x50(snap_compare: Any) -> None:
    assert snap_compare(make_app("long-session"), terminal_size=(200, 50), run_before=settled())


def test_light_theme(snap_compare: Any) -> None:
    app = make_app("long-session", start=250)

    async def run_before(pilot: Any) -> None:
        pilot.app.theme = "textual-light"
        await settled(250)(pilot)

    assert snap_compare(app, terminal_size=(160, 48), run_before=run_before)


def test_tour_at_80x24(snap_compare: Any) -> None:
    info = SCENARIOS["snip-needed"]
    app = InspectorApp(
        load(info.path), policy=info.policy, window=info.window, start="first", tour="snip-needed"
    )
    app.animation_level = "none"

    async def run_before(pilot: Any) -> None:
        main = pilot.app.main
        for _ in range(500):
            await pilot.pause(0.02)
            if main.tour is not None and main.view is not None and main.scanned >= main.total:
                break
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
