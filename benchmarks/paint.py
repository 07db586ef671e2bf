"""First paint of the app, measured in a process of its own (run by the runner as a subprocess).

    python -m benchmarks.paint PATH      # {"load": s, "paint": s, "painted_at": epoch s, "steps":
                                         # [s, ...]}: the transcript is loaded first, then the clock
                                         # runs from creating InspectorApp until the main columns
                                         # show the last request (`painted_at`: when, on the wall
                                         # clock, for the runner to count from the process's start);
                                         # then it steps back request by request
    python -m benchmarks.paint --cached PATH   # the same, the transcript read through the
                                         # persistent cache (filled by a run before)
    python -m benchmarks.paint --floor   # {"paint": s, "painted_at": epoch s}: the same harness
                                         # around an empty App
    python -m benchmarks.paint --scan PATH   # {"scan": s, "core": s}: from creating the app until
                                         # its background scan has shaped every request (the
                                         # sparkline's marks, `n`/`N`), nothing pressed; then the
                                         # same shaping of every request without the app (the
                                         # floor: a fresh replay stepped through in a loop)

Headless (`App.run_test(size=(160, 48))`); the benchmarks may import `inspector.tui`, the core never.
The app is "painted" when its pipeline columns hold the view of the last request, one frame later.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

SIZE = (160, 48)
FRAME_S = 1 / 30
"""Waited once the columns hold the request (two frames at Textual's 60 fps), in both measurements."""
TIMEOUT_S = 120.0
STEPS = 30
"""Requests stepped back through after the first paint, each timed from the action to its frame."""


async def _paint(path: str, cached: bool = False) -> dict[str, Any]:
    from inspector.formats import load
    from inspector.formats.cache import cached_load
    from inspector.model.bulk import hold_loaded
    from inspector.tui.app import InspectorApp

    t0 = time.perf_counter()
    # `cached`: as `context-inspector PATH` opens a file it opened before (the persistent cache)
    transcript = cached_load(path, lambda: load(path)) if cached else load(path)
    hold_loaded()  # as `run_app` does
    t1 = time.perf_counter()
    app = InspectorApp(transcript)
    async with app.run_test(size=SIZE) as pilot:
        main = None
        while time.perf_counter() - t1 < TIMEOUT_S:
            await pilot.pause(0.005)
            main = getattr(app, "main", None)
            view = getattr(main, "view", None) if main is not None else None
            if view is not None and main is not None and main.columns.view is view:
                break
        # One frame later the columns are on screen. (Not `pilot.pause()`: it waits for the
        # process to go idle, and the app's background scan of every request keeps it busy.)
        await pilot.pause(FRAME_S)
        t2 = time.perf_counter()
        painted_at = time.time()
        painted = main is not None and getattr(main, "view", None) is not None
        steps: list[float] = []
        if main is not None and main.view is not None:
            # `[` as a user steps back (the action its key runs), each until the columns hold the
            # request, and one frame more; the background scan of every request runs meanwhile
            for _ in range(min(STEPS, main.view.index - 1)):
                want = main.view.index - 1
                started = time.perf_counter()
                main.action_previous_request()
                while main.columns.view is None or main.columns.view.index != want:
                    await pilot.pause(0.001)
                await pilot.pause(FRAME_S)
                steps.append(time.perf_counter() - started)
    return {
        "load": t1 - t0,
        "paint": t2 - t1,
        "painted_at": painted_at,
        "painted": float(painted),
        "steps": steps,
    }


async def _scan(path: str) -> dict[str, float]:
    from inspector.formats import load
    from inspector.model.bulk import hold_loaded
    from inspector.replay import Replay
    from inspector.tui.app import InspectorApp

    transcript = load(path)
    hold_loaded()
    t1 = time.perf_counter()
    app = InspectorApp(transcript)
    scan = None
    async with app.run_test(size=SIZE) as pilot:
        while time.perf_counter() - t1 < TIMEOUT_S:
            await pilot.pause(0.005)
            main = getattr(app, "main", None)
            if main is not None and main.total and main.scanned >= main.total:
                scan = time.perf_counter() - t1
                break
    t2 = time.perf_counter()
    replay = Replay.open(transcript)
    for k in range(1, len(replay) + 1):
        replay.step(k)
    return {"scan": scan if scan is not None else float("nan"), "core": time.perf_counter() - t2}


async def _floor() -> dict[str, float]:
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    class Empty(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("ready")

    t1 = time.perf_counter()
    async with Empty().run_test(size=SIZE) as pilot:
        await pilot.pause(FRAME_S)
        t2 = time.perf_counter()
    return {"paint": t2 - t1, "painted_at": time.time()}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--floor"]:
        result = asyncio.run(_floor())
    elif argv[:1] == ["--scan"]:
        result = asyncio.run(_scan(argv[1]))
    elif argv[:1] == ["--cached"]:
        result = asyncio.run(_paint(argv[1], cached=True))
    else:
        result = asyncio.run(_paint(argv[0]))
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
