"""Snapshots of the app at 160x48 on the bundled samples (deterministic data, no absolute paths).

Regenerate with `pytest tests/snapshots/test_tui_snapshots.py --snapshot-update`, then look at the SVGs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from inspector.formats import load
from inspector.replay import Replay
from inspector.samples import SAMPLES, sample_path
from inspector.tui import InspectorApp
from tests.conftest import settle as shared_settle

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
        await shared_settle(pilot, request, detail=True, scanned=True, timeout=20)

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


@pytest.mark.slow
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


@pytest.mark.slow
def test_help_screen(snap_compare: Any) -> None:
    assert snap_compare(
        make_app("short-session"), terminal_size=SIZE, run_before=settled(), press=["question_mark", "_"]
    )


def test_step_at_a_compaction(snap_compare: Any) -> None:
    """The compact-last-resort scenario at the first request where auto compact folds history."""
    from inspector.samples import sample_info

    info = sample_info("compact-last-resort")
    transcript = load(sample_path("compact-last-resort"))
    replay = Replay.open(transcript, policy=info.policy, window=info.window)
    k = next(j for j in range(1, len(replay) + 1) if "auto_compact" in replay.step(j).result.fired)
    app = InspectorApp(transcript, policy=info.policy, window=info.window, start=k)
    app.animation_level = "none"
    assert snap_compare(app, terminal_size=SIZE, run_before=settled(k))


def test_hostile_content_is_shown_literally(snap_compare: Any, tmp_path: Any) -> None:
    """Markup, CSI, OSC 8, OSC 52 and BEL in a transcript reach the screen as visible text only."""
    import json

    hostile = "[bold red]x[/] \x1b[31mred\x1b[0m \x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\ \x1b]52;c;SGVsbG8=\x07 bell\x07"
    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 900,
        "cache_read_input_tokens": 14000,
        "output_tokens": 9,
    }
    lines = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "sessionId": "s",
            "message": {"role": "user", "content": hostile},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "sessionId": "s",
            "message": {
                "id": "m1",
                "role": "assistant",
                "model": "claude-x",
                "content": [{"type": "text", "text": hostile}],
                "usage": usage,
            },
        },
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    transcript = load(path)
    transcript.path = "hostile.jsonl"  # no absolute temp path on screen
    app = InspectorApp(transcript, policy="opencollab", window=200_000)
    app.animation_level = "none"
    assert snap_compare(app, terminal_size=SIZE, run_before=settled())
