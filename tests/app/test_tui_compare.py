"""Compare mode: two policies at one request, side by side (Pilot at 160x48, and a snapshot)."""

from __future__ import annotations

from typing import Any

import pytest

from inspector.formats import load
from inspector.replay import Replay
from inspector.samples import sample_path
from inspector.tui import InspectorApp
from inspector.tui.compare import CompareScreen
from inspector.tui.viewmodel import CellState

SIZE = (160, 48)
K = 264
A, B = "opencollab", "no_history_compaction"


def make_app() -> InspectorApp:
    path = sample_path("long-session")
    if not path.exists():
        pytest.skip("sample long-session not generated yet")
    app = InspectorApp(load(path), policy=A, window=200_000, start=K)
    app.animation_level = "none"
    return app


async def open_compare(pilot: Any) -> CompareScreen:
    app = pilot.app
    for _ in range(600):
        await pilot.pause(0.02)
        if app.main.view is not None and app.main.view.index == K:
            break
    await pilot.press("c")
    await pilot.pause()
    # the policy list, without the current policy: choose B
    from textual.widgets import OptionList

    options = app.screen.query_one(OptionList)
    ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
    assert A not in ids
    options.highlighted = ids.index(B)
    await pilot.press("enter")
    screen = app.screen
    assert isinstance(screen, CompareScreen)
    for _ in range(600):
        await pilot.pause(0.02)
        view = screen.columns.view
        if view is not None and view.index == screen.request:
            break
    for _ in range(1500):  # the prompt-cache cost shapes every request of both policies
        if screen.cache is not None:
            break
        await pilot.pause(0.02)
    await pilot.pause()
    return screen


@pytest.mark.slow
async def test_compare_shows_both_policies_and_their_sent_tokens() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_compare(pilot)
        transcript = app.main.transcript
        sent_a = Replay.open(transcript, policy=A, window=200_000).step(K).result.sent_tokens
        sent_b = Replay.open(transcript, policy=B, window=200_000).step(K).result.sent_tokens
        assert sent_a != sent_b
        head_a = str(screen.head_a.render())
        head_b = str(screen.head_b.render())
        assert A in str(screen.head_a.border_title) and B in str(screen.head_b.border_title)
        assert f"sends {sent_a:,} tokens" in head_a
        assert f"sends {sent_b:,} tokens" in head_b
        assert f"{A} · sends {sent_a:,}" in screen.columns.column_header_text(1)
        assert f"{B} · sends {sent_b:,}" in screen.columns.column_header_text(2)
        # a row cleared on one side only, marked as such on screen
        view = screen.columns.view
        assert view is not None
        rows = [
            r
            for r in range(len(view.rows))
            if view.cell(1, r).state is CellState.CLEARED and view.cell(2, r).state is CellState.SAME
        ]
        assert rows
        screen.columns.select_row(rows[0])
        await pilot.pause()
        assert screen.columns.column_text(1, rows[0]).startswith("○")
        assert "○" not in screen.columns.column_text(2, rows[0])
        # [ steps both sides; escape returns to the main screen
        await pilot.press("left_square_bracket")
        for _ in range(600):
            await pilot.pause(0.02)
            if screen.columns.view is not None and screen.columns.view.index == K - 1:
                break
        assert screen.comparison is not None and screen.comparison.step == K - 1
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main


@pytest.mark.slow
def test_compare_screen_snapshot(snap_compare: Any) -> None:
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=open_compare)


async def test_compare_shows_the_prompt_cache_cost_of_eager_clear() -> None:
    from inspector.samples import SCENARIOS_DIR, sample_info

    info = sample_info("eager-clear-cache")
    app = InspectorApp(
        load(sample_path("eager-clear-cache")), policy=info.policy, window=info.window, start=23
    )
    app.animation_level = "none"
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(600):
            await pilot.pause(0.02)
            if app.main.view is not None and app.main.view.index == 23:
                break
        assert app.main.replay is not None
        screen = CompareScreen(
            app.main.replay, str(SCENARIOS_DIR / "opencollab-eager.toml"), 23, app.main.replay_lock
        )
        await app.push_screen(screen)
        for _ in range(1500):
            await pilot.pause(0.02)
            if screen.cache is not None and screen.comparison is not None:
                break
        await pilot.pause()
        assert "0 prefix rewrites · 0 tokens re-billed" in str(screen.head_a.render())
        assert "9 prefix rewrites · 66,526 tokens re-billed" in str(screen.head_b.render())
