"""First paint of the app, measured in a process of its own (run by the runner as a subprocess).

    python -m benchmarks.paint PATH      # {"load": s, "paint": s, "painted_at": epoch s, "framed_at":
                                         # epoch s, "cpu": s, "framed_cpu": s, "steps": [s, ...]}: a
                                         # first open, `context-inspector PATH --no-follow` as the
                                         # command line runs it (`inspector.cli.main`: its imports,
                                         # checks, load and cache) with a cache folder that does not
                                         # hold the file, the app headless in place of the
                                         # terminal's ("cpu": the process's CPU seconds); the clock runs
                                         # from the command's start ("load": until the app is
                                         # created) until the main columns show the last request
                                         # (`painted_at`: when, on the wall clock, for the runner to
                                         # count from the process's start; `framed_at`: when the
                                         # screen first showed the session, its title and the
                                         # sparkline of every request, before the calibration);
                                         # then it steps back request by request
    python -m benchmarks.paint --cached PATH   # the same in the run's own cache folder: the
                                         # transcript read through the persistent cache (filled by
                                         # a run before)
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
import os
import shutil
import sys
import tempfile
import time
from typing import Any

SIZE = (160, 48)
FRAME_S = 1 / 30
"""Waited once the columns hold the request (two frames at Textual's 60 fps), in both measurements."""
TIMEOUT_S = 120.0
STEPS = 30
"""Requests stepped back through after the first paint, each timed from the action to its frame."""


def _paint(path: str, cached: bool = False) -> dict[str, Any]:
    """The command line's open of PATH, the app run headless where `run_app` would run it."""
    import inspector.cli as cli
    import inspector.tui

    got: dict[str, Any] = {}

    def run_app(transcript: Any, settings: Any = None, *, follower: Any = None, **kwargs: Any) -> None:
        got["created"] = time.perf_counter()
        got.update(asyncio.run(_run(transcript, settings, follower)))

    t0 = time.perf_counter()
    cli._stdout_is_terminal = lambda: True  # standard output is the runner's pipe
    inspector.tui.run_app = run_app
    with tempfile.TemporaryDirectory(prefix="ctxi-paint-") as fresh:
        if not cached:  # a first open: a cache folder without the file's entry (prices kept)
            home = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
            prices = os.path.join(home, "context-inspector", "prices.json")
            os.makedirs(os.path.join(fresh, "context-inspector"))
            if os.path.exists(prices):
                shutil.copy(prices, os.path.join(fresh, "context-inspector", "prices.json"))
            os.environ["XDG_CACHE_HOME"] = fresh
        code = cli.main([path, "--no-follow"])
    if code != 0 or "created" not in got:
        raise SystemExit(f"context-inspector {path} exited {code}")
    return {"load": got.pop("created") - t0, **got}


async def _run(transcript: Any, settings: Any, follower: Any) -> dict[str, Any]:
    from inspector.model.bulk import hold_loaded
    from inspector.tui.app import InspectorApp

    hold_loaded()  # as `run_app` does
    t1 = time.perf_counter()
    app = InspectorApp(transcript, settings=settings, follower=follower)
    framed_at = framed_cpu = float("nan")
    async with app.run_test(size=SIZE) as pilot:
        main = None
        while time.perf_counter() - t1 < TIMEOUT_S:
            await pilot.pause(0.005)
            main = getattr(app, "main", None)
            if main is not None and framed_at != framed_at and getattr(main, "session", None) is not None:
                framed_at = time.time() + FRAME_S  # its frame is drawn within the next one
                framed_cpu = time.process_time()
            view = getattr(main, "view", None) if main is not None else None
            if view is not None and main is not None and main.columns.view is view:
                break
        # One frame later the columns are on screen. (Not `pilot.pause()`: it waits for the
        # process to go idle, and the app's background scan of every request keeps it busy.)
        await pilot.pause(FRAME_S)
        t2 = time.perf_counter()
        painted_at = time.time()
        painted_cpu = time.process_time()
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
        "paint": t2 - t1,
        "cpu": painted_cpu,
        "framed_cpu": framed_cpu if framed_cpu == framed_cpu else painted_cpu,
        "painted_at": painted_at,
        "framed_at": framed_at if framed_at == framed_at else painted_at,
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
        result = _paint(argv[1], cached=True)
    else:
        result = _paint(argv[0])
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
