"""The benchmark runner: every figure of docs/DESIGN.md §7 against a floor measured in the same run.

    python -m benchmarks            # the full run (100 MB transcript): a few minutes
    python -m benchmarks --small    # the same figures on smaller files: under a minute
    python -m benchmarks --only growth,replay

These machines are shared and noisy, so every figure is printed beside a floor measured in the same
run (what the same work costs at its barest: reading and decoding the file, walking the ledgers, an
empty app's first paint...) and the ratio between the two. Targets are checked on the figure the
design states (a ratio, or an absolute time where the design gives one). Results go to a table on
stdout and to `benchmarks/out/results.json`.
"""

from __future__ import annotations

import argparse
import compileall
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import real, synth
from .paint import FRAME_S
from .synth import OUT, Synth

PY = sys.executable
ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Figure:
    """One row of the table."""

    name: str
    target: str
    measured: float
    unit: str
    floor: float | None = None
    floor_what: str = ""
    ratio: float | None = None
    passed: bool | None = None
    """None: informative, no target."""
    detail: dict[str, Any] = field(default_factory=dict)

    def cells(self) -> list[str]:
        def num(v: float | None, unit: str = "") -> str:
            if v is None:
                return "-"
            if unit == "s":
                if v < 0.001:
                    return f"{v * 1e6:,.0f} µs"
                return f"{v * 1000:,.1f} ms" if v < 1 else f"{v:,.2f} s"
            if unit == "MB":
                return f"{v:,.0f} MB"
            if unit == "x":
                return f"{v:,.2f}x"
            return f"{v:,.3g}{unit}"

        verdict = "info" if self.passed is None else ("PASS" if self.passed else "FAIL")
        floor = num(self.floor, self.unit) + (f" ({self.floor_what})" if self.floor_what else "")
        if self.target == "(breakdown)":
            floor = ", ".join(
                f"{k.replace('_', ' ')} {v:.2f} s"
                for k, v in self.detail.items()
                if k not in ("messages", "requests")
            )
        return [self.name, self.target, num(self.measured, self.unit), floor, num(self.ratio, "x"), verdict]


# -- helpers ---------------------------------------------------------------------------------


LAUNCHER = """
import json, os, subprocess, sys, time
report, args = sys.argv[1], sys.argv[2:]
started_at = time.time()
t0 = time.perf_counter()
proc = subprocess.Popen(args)
_, status, usage = os.wait4(proc.pid, 0)
wall = time.perf_counter() - t0
with open(report, "w") as fh:
    json.dump({"wall": wall, "maxrss": usage.ru_maxrss * 1024, "started_at": started_at,
               "code": os.waitstatus_to_exitcode(status)}, fh)
"""
"""Runs a measured command and says how it went. Linux counts the resident size of the process a
child was spawned from into the child's peak (it carries it across exec): a child of the runner,
which holds whole transcripts by the live figures, would report at least the runner's size. The
launcher is a bare interpreter (-S, a few MB), so its child's peak is the child's own."""


@dataclass(frozen=True)
class Child:
    """A measured command: wall seconds, its own peak resident bytes, what it wrote to stdout,
    and when (epoch seconds) it was spawned."""

    wall: float
    rss: int
    out: bytes
    started_at: float


def run_child(args: list[str], stdout: int | None = subprocess.DEVNULL) -> Child:
    """Run a command through `LAUNCHER` (stdout: captured where None, else where it says)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "child.json"
        proc = subprocess.Popen(
            [PY, "-S", "-c", LAUNCHER, str(report), *args],
            stdout=subprocess.PIPE if stdout is None else stdout,
            env=env,
            cwd=ROOT,
        )
        out = b""
        if stdout is None:
            assert proc.stdout is not None
            out = proc.stdout.read()
        proc.wait()
        got = json.loads(report.read_text()) if report.exists() else {"code": proc.returncode}
    if proc.returncode != 0 or got["code"] != 0:
        raise RuntimeError(f"{' '.join(args[:4])}... exited {got['code']}")
    return Child(got["wall"], got["maxrss"], out, got["started_at"])


def timed_child(args: list[str], stdout: int | None = subprocess.DEVNULL) -> tuple[float, int, bytes]:
    """Run a child process: (wall seconds, its own peak resident bytes, stdout)."""
    c = run_child(args, stdout)
    return c.wall, c.rss, c.out


FLOOR_CODE = """
import sys
if sys.argv[2] == "orjson":
    import orjson
    loads = orjson.loads
else:
    import msgspec
    loads = msgspec.json.Decoder().decode
n = 0
with open(sys.argv[1], 'rb') as f:
    for line in f:
        if line.strip():
            loads(line)
            n += 1
"""
"""The open floor: read the file and decode every line, with orjson or msgspec (the Claude Code
reader decodes most lines with msgspec's typed decoder and the rest with orjson; the floor is the
faster of the two libraries decoding every line whole)."""
FLOOR_LIBRARIES = ("orjson", "msgspec")

OTHER_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("report", "--json", "--policy", "opencollab"),
    ("findings", "--json"),
    ("calibrate", "--json"),
)
"""Commands beside `report --json` on the same file, timed once each against the same floor (no
target of docs/DESIGN.md §7: a user waits on them too, and a change that slows one shows here)."""


NO_CACHE = ("--no-cache",)
"""The open figures are of a first open: the persistent cache (`inspector.formats.cache`) is
neither read nor written (the warm row fills and reads one of its own)."""


def p95(values: list[float]) -> float:
    """The 95th percentile, nearest rank below (of a handful of latencies: no interpolation)."""
    ordered = sorted(values)
    return ordered[int(0.95 * (len(ordered) - 1))]


def best_of(n: int, fn: Callable[[], float]) -> float:
    return min(fn() for _ in range(n))


# -- figures ---------------------------------------------------------------------------------


def _open_runs(
    path: str, repeat: int
) -> tuple[list[tuple[float, int]], list[tuple[float, int]], dict[str, list[float]]]:
    """(wall, peak RSS) of `report --json` and of the floor with each library, `repeat` times
    each, alternating; and the floor's walls by library."""
    runs: list[tuple[float, int]] = []
    floors: list[tuple[float, int]] = []
    by_library: dict[str, list[float]] = {name: [] for name in FLOOR_LIBRARIES}
    for _ in range(repeat):
        for name in FLOOR_LIBRARIES:
            w, rss, _ = timed_child([PY, "-c", FLOOR_CODE, path, name])
            floors.append((w, rss))
            by_library[name].append(w)
        w, rss, _ = timed_child([PY, "-m", "inspector", "report", path, "--json", *NO_CACHE])
        runs.append((w, rss))
    return runs, floors, by_library


def bench_scale(huge: Synth, repeat: int) -> list[Figure]:
    """`report --json` on a file of hundreds of megabytes, as the open figure measures it: the
    interpreter's start and the imports weigh less beside a bigger floor (no target of its own)."""
    runs, floors, _ = _open_runs(str(huge.path), repeat)
    wall = min(w for w, _ in runs)
    floor = min(w for w, _ in floors)
    peak = max(r for _, r in runs)
    mb = huge.bytes / 1e6
    return [
        Figure(
            name=f"open at scale: report --json, {mb:,.0f} MB ({huge.requests:,} requests)",
            target="(comparison)",
            measured=wall,
            unit="s",
            floor=floor,
            floor_what="the same floor",
            ratio=wall / floor,
            detail={"runs": runs, "bytes": huge.bytes, "lines": huge.lines},
        ),
        Figure(
            name=f"memory at scale: peak RSS of report --json, {mb:,.0f} MB",
            target="(comparison)",
            measured=peak / 1e6,
            unit="MB",
            ratio=peak / huge.bytes,
            detail={"peak_bytes": peak, "file_bytes": huge.bytes},
        ),
    ]


def bench_open(big: Synth, repeat: int) -> list[Figure]:
    """`report --json` against reading and decoding every line with orjson or msgspec (the faster),
    all as fresh processes."""
    path = str(big.path)
    runs, floors, by_library = _open_runs(path, repeat)
    wall = min(w for w, _ in runs)
    floor = min(w for w, _ in floors)
    floor_what = "read + decode every line, " + min(by_library, key=lambda n: min(by_library[n]))
    peak = max(r for _, r in runs)
    mb = big.bytes / 1e6
    _, _, out = timed_child([PY, "-m", "benchmarks.phases", path], stdout=None)
    phases = json.loads(out)
    _, _, out = timed_child([PY, "-m", "benchmarks.bound", path], stdout=None)
    bound = json.loads(out)
    # both targets are about a big transcript (docs/DESIGN.md §7: "on a 100 MB transcript"): on a small
    # file the interpreter's start and the imports (0.07 s, a 10 MB floor's worth) dominate
    memory_target = open_target = big.bytes >= 50_000_000
    others: list[Figure] = []
    for args in OTHER_COMMANDS:
        w, rss, _ = timed_child([PY, "-m", "inspector", args[0], path, *args[1:], *NO_CACHE])
        others.append(
            Figure(
                name=f"open, other commands: {' '.join(args)}, {mb:,.0f} MB",
                target="(comparison)",
                measured=w,
                unit="s",
                floor=floor,
                floor_what="the same floor",
                ratio=w / floor,
                detail={"peak_bytes": rss},
            )
        )
    return [
        Figure(
            name=f"open: report --json, {mb:,.0f} MB",
            target="<= 3x floor" if open_target else "(>= 50 MB files only)",
            measured=wall,
            unit="s",
            floor=floor,
            floor_what=floor_what,
            ratio=wall / floor,
            passed=wall / floor <= 3.0 if open_target else None,
            detail={
                "runs": runs,
                "floors": by_library,
                "bytes": big.bytes,
                "lines": big.lines,
                "phases": phases,
            },
        ),
        Figure(
            name="open: where the time goes (one process)",
            target="(breakdown)",
            measured=sum(v for k, v in phases.items() if k not in ("messages", "requests")),
            unit="s",
            detail=phases,
        ),
        Figure(
            name="open: a bare loader (read, decode, a message a line)",
            target="(bound)",
            measured=bound["read"] + bound["models"],
            unit="s",
            detail=bound,
        ),
        Figure(
            name=f"memory: peak RSS of report --json, {mb:,.0f} MB",
            target="<= 3x file size" if memory_target else "(>= 50 MB files only)",
            measured=peak / 1e6,
            unit="MB",
            floor=max(r for _, r in floors) / 1e6,
            floor_what="the floor's own peak",
            ratio=peak / big.bytes,
            passed=(peak / big.bytes <= 3.0) if memory_target else None,
            detail={"peak_bytes": peak, "file_bytes": big.bytes},
        ),
        *others,
    ]


def bench_paint(big: Synth, repeat: int) -> list[Figure]:
    """The app's first paint (main columns showing the last request), in a fresh process: from the
    process's start (what a user waits: the interpreter, the imports, the load, the app), and from
    the app's creation on a loaded transcript (the app alone)."""
    got = []
    waits = []
    for _ in range(repeat):
        c = run_child([PY, "-m", "benchmarks.paint", str(big.path)], stdout=None)
        got.append(json.loads(c.out))
        waits.append(got[-1]["painted_at"] - c.started_at)
    scans = [
        json.loads(run_child([PY, "-m", "benchmarks.paint", "--scan", str(big.path)], stdout=None).out)
        for _ in range(repeat)
    ]
    floors = []
    floor_waits = []
    for _ in range(repeat):
        c = run_child([PY, "-m", "benchmarks.paint", "--floor"], stdout=None)
        floors.append(json.loads(c.out)["paint"])
        floor_waits.append(json.loads(c.out)["painted_at"] - c.started_at)
    paint = min(g["paint"] for g in got)
    wait = min(waits)
    floor = min(floors)
    floor_wait = min(floor_waits)
    steps = [t for g in got for t in g["steps"]] or [0.0]
    painted = all(g["painted"] for g in got)
    mb = big.bytes / 1e6
    return [
        Figure(
            name=f"first paint: columns of the last request, from the process's start, {mb:,.0f} MB",
            target="<= 2 s",
            measured=wait,
            unit="s",
            floor=floor_wait,
            floor_what="empty app, from its process's start",
            ratio=wait / floor_wait,
            passed=wait <= 2.0 and painted,
            detail={"waits": waits, "load_s": min(g["load"] for g in got)},
        ),
        Figure(
            name=f"first paint: the app alone, on the loaded transcript, {mb:,.0f} MB",
            target="(comparison)",
            measured=paint,
            unit="s",
            floor=floor,
            floor_what="empty app",
            ratio=paint / floor,
            detail={"runs": got, "floors": floors},
        ),
        Figure(
            name=f"app: step back a request, action to frame, {big.bytes / 1e6:,.0f} MB",
            target="(comparison)",
            measured=statistics.median(steps),
            unit="s",
            floor=FRAME_S,
            floor_what=f"the frame waited; p95 {p95(steps) * 1000:,.0f} ms, max {max(steps) * 1000:,.0f} ms",
            detail={"steps": steps},
        ),
        Figure(
            name=f"app: every request scanned in the background, from the app's start, {mb:,.0f} MB",
            target="(comparison)",
            measured=min(g["scan"] for g in scans),
            unit="s",
            floor=min(g["core"] for g in scans),
            floor_what="the same shaping without the app",
            ratio=min(g["scan"] for g in scans) / min(g["core"] for g in scans),
            detail={"runs": scans},
        ),
    ]


def _ledger_walk(transcript: Any) -> float:
    """The floor of a replay: touch every message of every request's ledger once, in C."""
    by_id = {m.id: m for m in transcript.messages}
    t0 = time.perf_counter()
    for req in transcript.requests:
        ids = transcript.segments[req.segment].message_ids[: req.ledger_len]
        tuple(map(by_id.__getitem__, ids))
    return time.perf_counter() - t0


def bench_replay(session: Synth, repeat: int) -> list[Figure]:
    """Every request of a 2,000-request session shaped, in order, on a freshly opened replay (the
    opening counted: the calibration runs as the requests are asked for)."""
    from inspector.formats import load
    from inspector.replay import Replay

    transcript = load(session.path)
    times = []
    opens = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        replay = Replay.open(transcript)
        t1 = time.perf_counter()
        for k in range(1, len(replay) + 1):
            replay.step(k)
        times.append(time.perf_counter() - t0)
        opens.append(t1 - t0)
    floor = best_of(repeat, lambda: _ledger_walk(transcript))
    total = min(times)
    n = len(transcript.requests)
    return [
        Figure(
            name=f"replay: all {n:,} requests shaped ({session.compactions} compactions)",
            target="< 2 s",
            measured=total,
            unit="s",
            floor=floor,
            floor_what="walk every ledger",
            ratio=total / floor if floor else None,
            passed=total < 2.0,
            detail={"runs": times, "open_s": min(opens), "requests": n, "messages": len(transcript.messages)},
        )
    ]


def step_costs(
    transcript: Any, at: tuple[int, ...], span: int = 20, rounds: int = 3, **open_kw: Any
) -> tuple[dict[int, float], dict[int, int]]:
    """The cost of one more request at each of `at`: replaying in order (each request after the one
    before it), the median time of the `span` requests ending at k, best of `rounds` replays.
    `open_kw` goes to `Replay.open` (policy, window)."""
    from inspector.replay import Replay

    best: dict[int, float] = {k: float("inf") for k in at}
    sizes: dict[int, int] = {}
    for _ in range(rounds):
        replay = Replay.open(transcript, **open_kw)
        last = max(at)
        per: dict[int, float] = {}
        gc.collect()
        for k in range(1, last + 1):
            t0 = time.perf_counter()
            replay.step(k)
            per[k] = time.perf_counter() - t0
        for k in at:
            med = statistics.median(per[j] for j in range(max(1, k - span + 1), k + 1))
            best[k] = min(best[k], med)
            sizes[k] = len(replay.step(k).ledger)
    return best, sizes


def bench_growth(compacted: Synth, flat: Synth, rounds: int) -> list[Figure]:
    """Request 2,000 against request 200: the cost of one more request as the session grows."""
    from inspector.formats import load

    figs = []
    cases: list[tuple[str, Synth, dict[str, Any], bool]] = [
        ("compacting session, default policy", compacted, {}, True),
        ("no compaction, ledger x10, layers idle (window 2M)", flat, {"window": 2_000_000}, True),
        # the codex preset's middle truncation fires on every long result of the ledger (kept from
        # one request to the next: a result is cut once)
        ("no compaction, ledger x10, codex policy (window 2M)", flat, {"window": 2_000_000, "policy": "codex"}, True),
        # opencode's prune clears most of the ledger at every request, each cleared output a
        # decision of its own: linear in what it clears (not judged)
        ("no compaction, ledger x10, opencode policy (window 2M)", flat, {"window": 2_000_000, "policy": "opencode"}, False),
    ]
    for label, s, kw, judged in cases:
        transcript = load(s.path)
        n = len(transcript.requests)
        hi = min(2000, n)
        costs, sizes = step_costs(transcript, (200, hi), rounds=rounds, **kw)
        ratio = costs[hi] / costs[200]
        figs.append(
            Figure(
                name=f"growth: request {hi:,} vs 200 ({label})",
                target="<= 2x" if judged else "(comparison)",
                measured=costs[hi],
                unit="s",
                floor=costs[200],
                floor_what="request 200",
                ratio=ratio,
                passed=ratio <= 2.0 if judged else None,
                detail={"ledger_len": sizes, "cost": costs},
            )
        )
    return figs


def bench_live(big: Synth, appends: int) -> list[Figure]:
    """An appended line, at the core level: the follower's poll, the transcript rebuilt, the
    replay brought up to date and the newest request shaped. Then CPU while the file is quiet."""
    from inspector.live.follow import follower_for
    from inspector.replay import Replay

    lines = big.path.read_bytes().splitlines(keepends=True)
    # hold back the file's last `appends` lines and append them one at a time
    tail_at = len(lines) - appends
    tmpdir = Path(tempfile.mkdtemp(prefix="ctxi-live-", dir=OUT))
    path = tmpdir / "session.jsonl"
    try:
        path.write_bytes(b"".join(lines[:tail_at]))
        follower = follower_for(path)
        follower.poll_once()
        transcript = follower.transcript()
        replay = Replay.open(transcript)
        replay.step(len(replay))
        refresh = getattr(Replay, "refreshed", None)
        lat: list[float] = []
        polls: list[float] = []
        with path.open("ab") as fh:
            for line in lines[tail_at:]:
                fh.write(line)
                fh.flush()
                t0 = time.perf_counter()
                follower.poll_once()
                t1 = time.perf_counter()
                transcript = follower.transcript()
                replay = refresh(replay, transcript) if refresh else Replay.open(transcript)
                if len(replay):
                    replay.step(len(replay))
                t2 = time.perf_counter()
                lat.append(t2 - t0)
                polls.append(t1 - t0)
        messages = len(transcript.messages)
        # quiet: a follower waiting on the unchanged file, in a thread, for two seconds
        stop = threading.Event()

        def wait() -> None:
            for _ in follower.iter_updates(stop):
                pass

        th = threading.Thread(target=wait, daemon=True)
        th.start()
        time.sleep(0.3)
        c0, w0 = time.process_time(), time.perf_counter()
        time.sleep(2.0)
        cpu = (time.process_time() - c0) / (time.perf_counter() - w0)
        stop.set()
        th.join(timeout=10)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    med = statistics.median(lat)
    return [
        Figure(
            name=f"live: appended line to shaped request ({messages:,} messages)",
            target="median < 150 ms",
            measured=med,
            unit="s",
            floor=statistics.median(polls),
            floor_what="follower poll alone",
            ratio=med / statistics.median(polls),
            passed=med < 0.150,
            detail={
                "latencies": lat,
                "p95": p95(lat),
                "incremental_replay": refresh is not None,
            },
        ),
        Figure(
            name="live: CPU while the file is quiet",
            target="~0 (< 1% of a core)",
            measured=cpu * 100,
            unit="%",
            passed=cpu < 0.01,
            detail={"cpu_share": cpu},
        ),
    ]


def bench_live_app(big: Synth, appends: int) -> list[Figure]:
    """Append-to-screen in the app (watcher, worker threads, layout), in a fresh process."""
    _, _, out = timed_child([PY, "-m", "benchmarks.live_app", str(big.path), str(appends)], stdout=None)
    got = json.loads(out)
    lat = got["latencies"]
    med = statistics.median(lat)
    return [
        Figure(
            name=f"live: append to screen in the app ({got['messages']:,} messages)",
            target="median < 150 ms",
            measured=med,
            unit="s",
            passed=med < 0.150,
            detail={"latencies": got["latencies"], "p95": p95(lat)},
        )
    ]


LIVE_REQUESTS = 9_400
"""Requests of the live session of the full run: about 20,150 messages (docs/DESIGN.md §7 asks for a
20,000-message session)."""


def _live(session: Synth, small: bool) -> list[Figure]:
    return bench_live(session, appends=12 if small else 20) + bench_live_app(session, 8 if small else 20)


def bench_peer(big: Synth) -> list[Figure]:
    """claude-code-log on the same file, where it is installed (the `peer` extra, not a dependency):
    beside this interpreter, or on PATH."""
    exe = shutil.which("claude-code-log", path=str(Path(sys.executable).parent)) or shutil.which(
        "claude-code-log"
    )
    if exe is None:
        return []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.html"
        try:
            wall, rss, _ = timed_child([exe, str(big.path), "-o", str(out)])
        except RuntimeError:
            return []
    return [
        Figure(
            name=f"peer: claude-code-log to HTML, {big.bytes / 1e6:,.0f} MB",
            target="(comparison)",
            measured=wall,
            unit="s",
            detail={"peak_bytes": rss},
        )
    ]


REAL_COPIES = (10, 30, 100)
"""Copies of the real session in the full run's real-shaped files (`benchmarks.real`): about 35,
104 and 347 MB. The targets are read at `REAL_TARGET` copies (about 100 MB)."""
REAL_COPIES_SMALL = (3,)
REAL_TARGET = 30
REAL_LIMITS = {"chained": 2.0, "rewind": 2.5, "detached": 2.5}
"""`report --json` against the floor, at `REAL_TARGET` copies (issue 29)."""
REAL_OTHER: tuple[tuple[tuple[str, ...], float], ...] = (
    (("findings", "--json"), 3.0),
    (("calibrate", "--json"), 4.0),
    (("report", "--json", "--policy", "opencollab"), 3.0),
)


LEAST_CODE = """
import os, sys
from inspector.formats import load
from inspector.settings import DEFAULT_ESTIMATOR
from inspector.tokens import get_estimator
from inspector.tokens.calibration import Calibration
transcript = load(sys.argv[1])
Calibration(transcript, get_estimator(DEFAULT_ESTIMATOR), "delta").predictions()
os._exit(0)
"""
"""The least a first `report --json` does on a session that compacted: the interpreter, the
imports, the load and the delta calibration's whole pass (the fidelity's calibrated context after
the last compaction needs it), and nothing of the report. Where this alone is over a row's limit,
no change to the rest of the report can make the row pass."""
LEAST_SHAPES = ("chained", "detached")
"""The real shapes that compact (`benchmarks.real`): their `report --json` runs the pass."""


def _ratio_figure(
    name: str, runs: list[float], floors: list[float], limit: float | None, **detail: Any
) -> Figure:
    wall, floor = min(runs), min(floors)
    return Figure(
        name=name,
        target=f"<= {limit:g}x floor" if limit is not None else "(comparison)",
        measured=wall,
        unit="s",
        floor=floor,
        floor_what="read + decode every line, the same run",
        ratio=wall / floor,
        passed=(wall / floor <= limit) if limit is not None else None,
        detail={"runs": runs, "floors": floors, **detail},
    )


def _floor_runs(path: str) -> list[float]:
    return [timed_child([PY, "-c", FLOOR_CODE, path, name])[0] for name in FLOOR_LIBRARIES]


def _least_runs(path: str, repeat: int) -> tuple[list[float], list[float]]:
    """(walls of `LEAST_CODE` on `path`, walls of the floor), alternating, as fresh processes."""
    runs: list[float] = []
    floors: list[float] = []
    for _ in range(repeat):
        floors.extend(_floor_runs(path))
        runs.append(timed_child([PY, "-c", LEAST_CODE, path])[0])
    return runs, floors


def _command_runs(
    path: str, args: tuple[str, ...], repeat: int, cache: bool = False
) -> tuple[list[float], list[float]]:
    """(walls of `context-inspector ARGS[0] PATH ARGS[1:]`, walls of the floor), alternating, as
    fresh processes; without the persistent cache unless `cache` (then one run fills it first)."""
    cmd = [PY, "-m", "inspector", args[0], path, *args[1:]]
    if not cache and CACHE_FLAG:
        cmd.append("--no-cache")
    if cache:
        timed_child(cmd)
    runs: list[float] = []
    floors: list[float] = []
    for _ in range(repeat):
        floors.extend(_floor_runs(path))
        runs.append(timed_child(cmd)[0])
    return runs, floors


CACHE_FLAG = True
"""Whether the commands take `--no-cache` (the persistent cache, `inspector.formats.cache`)."""


def bench_real(copies: tuple[int, ...], repeat: int) -> list[Figure]:
    """`report --json` on every real shape at every size (issue 29), cold (no cache); at the
    target size, the warm open (the cache filled by a run before) and the other commands; each the
    best of `repeat` runs (a single run swung `calibrate` from 3.66x to 4.91x within minutes)."""
    figs: list[Figure] = []
    for shape in real.SHAPES:
        for c in copies:
            made = real.make(shape, c)
            mb = made.bytes / 1e6
            runs, floors = _command_runs(str(made.path), ("report", "--json"), repeat)
            limit = REAL_LIMITS[shape] if c == REAL_TARGET and mb >= 50 else None
            figs.append(
                _ratio_figure(
                    f"real {shape}: report --json, {c} copies, {mb:,.0f} MB",
                    runs,
                    floors,
                    limit,
                    bytes=made.bytes,
                )
            )
            if limit is not None and shape in LEAST_SHAPES:
                runs, floors = _least_runs(str(made.path), repeat)
                figs.append(
                    _ratio_figure(
                        f"real {shape}: the least report --json does (load and calibration pass, "
                        f"no report), {c} copies, {mb:,.0f} MB",
                        runs,
                        floors,
                        None,
                        limit_of_the_row=limit,
                    )
                )
    target = REAL_TARGET if REAL_TARGET in copies else max(copies)
    made = real.make("chained", target)
    mb = made.bytes / 1e6
    big = mb >= 50
    if CACHE_FLAG:
        with tempfile.TemporaryDirectory() as tmp:
            old = os.environ.get("XDG_CACHE_HOME")
            os.environ["XDG_CACHE_HOME"] = tmp
            try:
                runs, floors = _command_runs(str(made.path), ("report", "--json"), repeat, cache=True)
            finally:
                if old is None:
                    os.environ.pop("XDG_CACHE_HOME", None)
                else:
                    os.environ["XDG_CACHE_HOME"] = old
        figs.append(
            _ratio_figure(
                f"real chained: report --json warm (cache), {target} copies, {mb:,.0f} MB",
                runs,
                floors,
                1.5 if big else None,
            )
        )
    for args, limit in REAL_OTHER:
        runs, floors = _command_runs(str(made.path), args, repeat)
        figs.append(
            _ratio_figure(
                f"real chained: {' '.join(args)}, {target} copies, {mb:,.0f} MB",
                runs,
                floors,
                limit if big else None,
            )
        )
    return figs


def bench_real_app(copies: int, small: bool) -> list[Figure]:
    """The first paint on the chained shape (from the process's start), and append to screen on
    the detached shape (a session with lines beside the chain), at `copies` copies."""
    chained = real.make("chained", copies)
    waits = []
    warm_waits = []
    framed = []
    cpus: dict[str, list[float]] = {"cold": [], "warm": [], "cold first frame": []}
    with tempfile.TemporaryDirectory() as tmp:
        old = os.environ.get("XDG_CACHE_HOME")
        os.environ["XDG_CACHE_HOME"] = tmp
        try:
            run_child([PY, "-m", "benchmarks.paint", "--cached", str(chained.path)], stdout=None)  # fills it
            for _ in range(1 if small else 2):
                c = run_child([PY, "-m", "benchmarks.paint", str(chained.path)], stdout=None)
                got = json.loads(c.out)
                waits.append(got["painted_at"] - c.started_at)
                framed.append(got["framed_at"] - c.started_at)
                cpus["cold"].append(got["cpu"])
                cpus["cold first frame"].append(got["framed_cpu"])
                c = run_child([PY, "-m", "benchmarks.paint", "--cached", str(chained.path)], stdout=None)
                warm_waits.append(json.loads(c.out)["painted_at"] - c.started_at)
                cpus["warm"].append(json.loads(c.out)["cpu"])
        finally:
            if old is None:
                os.environ.pop("XDG_CACHE_HOME", None)
            else:
                os.environ["XDG_CACHE_HOME"] = old
    floor_waits = []
    for _ in range(1 if small else 2):
        c = run_child([PY, "-m", "benchmarks.paint", "--floor"], stdout=None)
        floor_waits.append(json.loads(c.out)["painted_at"] - c.started_at)
    mb = chained.bytes / 1e6
    big = mb >= 50
    figs = [
        Figure(
            name=f"real chained: first paint from the process's start, {copies} copies, {mb:,.0f} MB",
            target="< 1 s" if big else "(comparison)",
            measured=min(waits),
            unit="s",
            floor=min(floor_waits),
            floor_what="empty app, from its process's start",
            ratio=min(waits) / min(floor_waits),
            passed=min(waits) < 1.0 if big else None,
            detail={"waits": waits, "cpu": cpus},
        ),
        Figure(
            name=(
                f"real chained: first frame of the session (the last request's report on the gauge, "
                f"before the calibration), from the process's start, {copies} copies, {mb:,.0f} MB"
            ),
            target="(comparison)",
            measured=min(framed),
            unit="s",
            floor=min(floor_waits),
            floor_what="empty app, from its process's start",
            ratio=min(framed) / min(floor_waits),
            detail={"waits": framed},
        ),
        Figure(
            name=f"real chained: first paint from the process's start, warm (cache), {copies} copies, {mb:,.0f} MB",
            target="< 1 s" if big else "(comparison)",
            measured=min(warm_waits),
            unit="s",
            floor=min(floor_waits),
            floor_what="empty app, from its process's start",
            ratio=min(warm_waits) / min(floor_waits),
            passed=min(warm_waits) < 1.0 if big else None,
            detail={"waits": warm_waits},
        ),
    ]
    detached = real.make("detached", copies)
    appends = 8 if small else 20
    _, _, out = timed_child([PY, "-m", "benchmarks.live_app", str(detached.path), str(appends)], stdout=None)
    got = json.loads(out)
    lat = got["latencies"]
    med = statistics.median(lat)
    figs.append(
        Figure(
            name=f"real detached: live append to screen ({got['messages']:,} messages, {detached.bytes / 1e6:,.0f} MB)",
            target="median < 150 ms" if big else "(comparison)",
            measured=med,
            unit="s",
            passed=med < 0.150 if big else None,
            floor_what=f"p95 {p95(lat) * 1000:,.0f} ms, max {max(lat) * 1000:,.0f} ms",
            detail={"latencies": lat, "p95": p95(lat), "rebuilds": got.get("rebuilds")},
        )
    )
    return figs


def bench_ccusage(copies: int) -> list[Figure]:
    """`ccusage session --json --offline` on the real chained file, where ccusage is installed (an
    npm package, not a dependency): it reads a Claude config folder, so the file is linked into a
    temporary one."""
    exe = shutil.which("ccusage")
    if exe is None or not real.available():
        return []
    made = real.make("chained", copies)
    try:
        version = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=60
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        version = ""
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "projects" / "bench"
        project.mkdir(parents=True)
        (project / made.path.name).symlink_to(made.path)
        old = os.environ.get("CLAUDE_CONFIG_DIR")
        os.environ["CLAUDE_CONFIG_DIR"] = tmp
        try:
            walls = [timed_child([exe, "session", "--json", "--offline"])[0] for _ in range(2)]
        except RuntimeError:
            return []
        finally:
            if old is None:
                os.environ.pop("CLAUDE_CONFIG_DIR", None)
            else:
                os.environ["CLAUDE_CONFIG_DIR"] = old
    floors = _floor_runs(str(made.path))
    return [
        _ratio_figure(
            f"peer: ccusage {version} session --json --offline, real chained {copies} copies, "
            f"{made.bytes / 1e6:,.0f} MB",
            walls,
            floors,
            None,
        )
    ]


# -- the run ---------------------------------------------------------------------------------

FIGURES = (
    "open",
    "paint",
    "replay",
    "growth",
    "live",
    "scale",
    "export",
    "peer",
    "junk",
    "real",
    "real-app",
    "ccusage",
)
SCALE_MB = 400
"""The size of the file the full run's scale figures read (the small run has none)."""


def _junk(small: bool) -> list[Figure]:
    """Peak memory on junk lines (`benchmarks.junk`): a million of them, or 200,000 when small."""
    from .junk import bench_junk

    return bench_junk(200_000 if small else 1_000_000)


def _export(small: bool) -> list[Figure]:
    from .export import FULL_LINES, SMALL_LINES, bench_export  # (it imports this module)

    return bench_export(SMALL_LINES if small else FULL_LINES, repeat=2)


def run(small: bool, only: set[str] | None = None) -> list[Figure]:
    def want(name: str) -> bool:
        return only is None or name in only

    t0 = time.perf_counter()
    # What an installed package has and an editable install makes at its first import: the
    # bytecode. Compiled once here, so no timed process compiles the project's modules (where
    # PYTHONDONTWRITEBYTECODE is set, every process would otherwise compile them again).
    compileall.compile_dir(ROOT / "inspector", quiet=1)
    big = synth.by_size(10 if small else 100)
    session = synth.synth("replay2000", requests=2000)
    flat = synth.synth("flat2000", requests=2000, compact=False)
    print(
        f"files ready in {time.perf_counter() - t0:.1f} s: {big.path.name} ({big.bytes / 1e6:,.0f} MB, "
        f"{big.requests:,} requests, {big.compactions} compactions); {session.path.name}; {flat.path.name}",
        flush=True,
    )
    real_copies = REAL_COPIES_SMALL if small else REAL_COPIES
    real_target = REAL_TARGET if REAL_TARGET in real_copies else max(real_copies)
    figs: list[Figure] = []
    steps: list[tuple[str, Callable[[], list[Figure]]]] = [
        ("open", lambda: bench_open(big, repeat=2 if small else 3)),
        ("paint", lambda: bench_paint(big, repeat=1 if small else 2)),
        ("replay", lambda: bench_replay(session, repeat=1 if small else 3)),
        ("growth", lambda: bench_growth(session, flat, rounds=2 if small else 3)),
        ("live", lambda: _live(big if small else synth.synth("live20k", requests=LIVE_REQUESTS), small)),
        ("scale", lambda: [] if small else bench_scale(synth.by_size(SCALE_MB), repeat=2)),
        ("export", lambda: _export(small)),
        ("peer", lambda: bench_peer(big)),
        ("junk", lambda: _junk(small)),
        ("real", lambda: bench_real(real_copies, repeat=1 if small else 2) if real.available() else []),
        ("real-app", lambda: bench_real_app(real_target, small) if real.available() else []),
        ("ccusage", lambda: bench_ccusage(real_target)),
    ]
    for name, fn in steps:
        if not want(name):
            continue
        t = time.perf_counter()
        got = fn()
        figs.extend(got)
        for f in got:
            print(f"  {f.name}: {' | '.join(f.cells()[2:])}", flush=True)
        print(f"[{name}: {time.perf_counter() - t:.1f} s]", flush=True)
    return figs


def table(figs: list[Figure]) -> str:
    head = ["figure", "target", "measured", "floor (same run)", "ratio", "result"]
    rows = [head] + [f.cells() for f in figs]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="smaller files: under a minute")
    parser.add_argument("--only", default=None, help=f"comma-separated subset of: {', '.join(FIGURES)}")
    parser.add_argument("--json", type=Path, default=OUT / "results.json", help="where to write the results")
    args = parser.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    started = time.perf_counter()
    # whatever a measured command caches goes to a folder of this run's, never the user's
    with tempfile.TemporaryDirectory(prefix="ctxi-bench-cache-") as cache_home:
        os.environ["XDG_CACHE_HOME"] = cache_home
        figs = run(args.small, only)
    elapsed = time.perf_counter() - started
    print()
    print(table(figs))
    failed = [f.name for f in figs if f.passed is False]
    print(f"\n{len(figs)} figures in {elapsed:.0f} s; {len(failed)} failed")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "mode": "small" if args.small else "full",
                "seconds": round(elapsed, 1),
                "machine": {
                    "python": platform.python_version(),
                    "cpus": os.cpu_count(),
                    "platform": platform.platform(),
                },
                "figures": [asdict(f) for f in figs],
            },
            indent=2,
            default=str,
        )
        + "\n"
    )
    return 1 if failed else 0
