"""Snapshots of the app at 160x48 on the bundled samples (deterministic data, no absolute paths).

Regenerate with `pytest tests/test_tui_snapshots.py --snapshot-update`, then look at the SVGs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from inspector.formats import load
from inspector.replay import Replay
from inspector.tui import InspectorApp
from sample_sessions import SAMPLES, sample_path

SIZE = (160, 48)


def make_app(name: str, **kwargs: Any) -> InspectorApp:
    path = sample_path(name)
    if not path.exists():
        pytest.skip(f"sample {name} not generated yet")
    app = InspectorApp(load(path), policy=SAMPLES[name].policy, window=SAMPLES[name].window, **kwargs)
    app.animation_level = "none"
    return app


def settled(request: int | None = None) -> Callable[[Any], Awaitable[None]]:
    """run_before: wait until the request, its detail and the background scan are all done."""

    async def run_before(pilot: Any) -> None:
        main = pilot.app.main
        for _ in range(1000):
            await pilot.pause(0.02)
            view = main.view
            if view is None or main.columns.view is not view:
                continue
            if request is not None and view.index != request:
                continue
            if main.detail.detail is None or main.detail.detail.request != view.index:
                continue
            if main.scanned < main.total:
                continue
            break
        await pilot.pause()

    return run_before


def first_firing(name: str, layer: str) -> int:
    transcript = load(sample_path(name))
    replay = Replay.open(transcript, policy=SAMPLES[name].policy, window=SAMPLES[name].window)
    return next(k for k in range(1, len(replay) + 1) if layer in replay.step(k).result.fired)


def test_main_screen_short_session(snap_compare: Any) -> None:
    assert snap_compare(make_app("short-session"), terminal_size=SIZE, run_before=settled())


def test_step_where_tool_output_clear_fires(snap_compare: Any) -> None:
    k = first_firing("long-session", "tool_output_clear")
    app = make_app("long-session", start=k)
    assert snap_compare(app, terminal_size=SIZE, run_before=settled(k))


def test_open_message_modal(snap_compare: Any) -> None:
    k = first_firing("long-session", "tool_output_clear")
    app = make_app("long-session", start=k)
    # Row 5 of the long sample is an old Read result that tool output clear replaced.
    assert snap_compare(
        app,
        terminal_size=SIZE,
        run_before=settled(k),
        press=["down"] * 5 + ["_", "enter", "_"],
    )


def test_help_screen(snap_compare: Any) -> None:
    assert snap_compare(
        make_app("short-session"), terminal_size=SIZE, run_before=settled(), press=["question_mark", "_"]
    )
