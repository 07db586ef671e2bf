"""Append-to-screen latency in the app, measured in a process of its own (run by the runner).

    python -m benchmarks.live_app PATH [APPENDS]   # {"latencies": [s, ...], "messages": n}

The file at PATH is copied to a temporary folder without its last requests; the app follows the
copy (headless, `App.run_test(size=(160, 48))`, the file watcher and the worker threads it really
uses); once its first scan of every request is done, the held-back lines are appended one request
at a time, and the clock runs from the write until the gauge shows the new request as the newest
("request n/n"). This is what a user watching a live session waits for: the watcher's wake-up, the
read, the transcript extended, the calibration and the replay brought up to date, the newest
request shaped and laid out, the frame.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

SIZE = (160, 48)
TIMEOUT_S = 60.0


def _request_starts(lines: list[bytes], appends: int) -> list[int]:
    """Indexes of the lines that begin the last `appends` responses (a new `message.id`)."""
    import orjson

    starts: list[int] = []
    seen: set[str] = set()
    for i in range(len(lines) - 1, -1, -1):
        if b'"assistant"' not in lines[i]:
            continue
        try:
            rec = orjson.loads(lines[i])
        except orjson.JSONDecodeError:
            continue
        if rec.get("type") != "assistant" or rec.get("isSidechain"):
            continue
        mid = rec.get("message", {}).get("id")
        if mid in seen:
            continue
        seen.add(mid)
        # the first line of this response: walk back to the earliest line with the same id
        j = i
        while j > 0 and f'"id":"{mid}"'.encode() in lines[j - 1]:
            j -= 1
        starts.append(j)
        if len(starts) > appends:
            break
    return sorted(set(starts))[-appends:]


def _newest(gauge: str) -> int | None:
    """n of a gauge reading "request n/n ..." (the newest request shown), else None."""
    head = gauge.split(" ", 2)
    if len(head) < 2 or head[0] != "request" or "/" not in head[1]:
        return None
    k, _, total = head[1].partition("/")
    return int(k) if k == total and k.isdigit() else None


async def _run(path: Path, appends: int) -> dict[str, object]:
    from inspector.model.bulk import hold_loaded
    from inspector.tui.app import InspectorApp
    from inspector.tui.live import open_transcript

    lines = path.read_bytes().splitlines(keepends=True)
    starts = _request_starts(lines, appends)
    # the request count after each append, as the reader makes it (an append that adds none is
    # merged into the next)
    from inspector.formats.claude_code import ClaudeCodeReader

    probe = ClaudeCodeReader(path, with_subagents=False)
    probe.feed(b"".join(lines[: starts[0]]))
    counts = [len(probe.transcript().requests)]
    cuts: list[int] = []
    done = starts[0]
    for cut in [*starts[1:], len(lines)]:
        probe.feed(b"".join(lines[done:cut]))
        done = cut
        count = len(probe.transcript().requests)
        if count > counts[-1]:
            cuts.append(cut)
            counts.append(count)
    tmp = Path(tempfile.mkdtemp(prefix="ctxi-live-app-"))
    try:
        live = tmp / "session.jsonl"
        live.write_bytes(b"".join(lines[: starts[0]]))
        opened = open_transcript(live, follow=True)
        assert opened.follower is not None
        hold_loaded()  # as `run_app` does
        app = InspectorApp(opened.transcript, follower=opened.follower)
        app.animation_level = "none"
        latencies: list[float] = []
        async with app.run_test(size=SIZE) as pilot:
            main = app.main
            n = counts[0]

            def shown() -> str:
                return main.gauge.plain_lines()[0] if main.view is not None else ""

            deadline = time.perf_counter() + TIMEOUT_S
            while not shown().startswith(f"request {n}/{n}"):
                if time.perf_counter() > deadline:
                    raise SystemExit(f"the app never showed request {n}/{n}: {shown()!r}")
                await pilot.pause(0.01)
            # the first scan of every request done (the state a user watching a session is in
            # after the first seconds; before, it works beside the updates: 90-120 ms at 20,186
            # messages against 87-100 ms after it, in the runs of 30 Nov 2026)
            while main.scanned < main.total and time.perf_counter() < deadline:
                await pilot.pause(0.05)
            await pilot.pause(0.2)
            done = starts[0]
            for cut, want in zip(cuts, counts[1:], strict=True):
                # up to the line before the next response: this response's lines and its results
                with live.open("ab") as fh:
                    fh.write(b"".join(lines[done:cut]))
                    fh.flush()
                started = time.perf_counter()
                while _newest(shown()) != want:
                    if time.perf_counter() - started > TIMEOUT_S:
                        raise SystemExit(f"request {want}/{want} never showed: {shown()!r}")
                    await pilot.pause(0.002)
                latencies.append(time.perf_counter() - started)
                done = cut
                await pilot.pause(0.05)
            messages = len(main.replay.transcript.messages) if main.replay is not None else 0
            reader = opened.follower.reader
            rebuilds = [getattr(reader, "builds", None), getattr(reader, "extensions", None)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"latencies": latencies, "messages": messages, "rebuilds": rebuilds}


def main(argv: list[str]) -> int:
    appends = int(argv[1]) if len(argv) > 1 else 15
    result = asyncio.run(_run(Path(argv[0]), appends))
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
