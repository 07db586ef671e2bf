"""The calibration pass run ahead in a forked process (`inspector.tokens.stored.run_ahead`), as
the app's first open and `calibrate` start it.

Each case runs in a fresh interpreter of its own: `run_ahead` forks only a process with no other
thread, and a pytest worker has some. The script prints what the calibration handed out decided
beside what a pass run here decides, and the test compares them, value by value.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, TypedDict

import pytest

from inspector.samples import SAMPLES_DIR
from inspector.tokens import stored

ROOT = Path(__file__).resolve().parents[2]
SESSION = SAMPLES_DIR / "long-session.jsonl"

SCRIPT = """
import json, os, sys
from inspector.formats import load
from inspector.tokens import stored
from inspector.tokens.calibration import Calibration
from inspector.tokens.heuristic import HeuristicEstimator

if sys.argv[2] == "child-fails":
    def broken(cal):
        raise RuntimeError("the child's pass failed")
    stored._state_of = broken  # the forked child inherits it
transcript = load(sys.argv[1])
n = len(transcript.requests)
started = stored.run_ahead(transcript, HeuristicEstimator())
cal = stored.calibration(transcript, HeuristicEstimator())
handed = cal.ahead is not None
other = stored.calibration(transcript, HeuristicEstimator())  # handed once: this one runs its own
here = Calibration(transcript, HeuristicEstimator(), "delta")
out = {
    "started": started,
    "handed": handed,
    "other_handed": other.ahead is not None,
    "requests": n,
    "predictions": cal.predictions(),
    "expected_predictions": here.predictions(),
    "contexts": [cal.context(k) for k in range(1, n + 1)],
    "expected_contexts": [here.context(k) for k in range(1, n + 1)],
    "weights": cal.weights(n),
    "expected_weights": here.weights(n),
    "ratios": cal.ratios(n),
    "expected_ratios": here.ratios(n),
    "run_here": cal._run is not None,
    "done": cal._done,
}
stored.stop_ahead()
try:
    os.waitpid(-1, os.WNOHANG)
    out["children_left"] = True
except ChildProcessError:
    out["children_left"] = False
print(json.dumps(out))
"""


needs_fork = pytest.mark.skipif(
    not hasattr(os, "fork") or stored._cores() < 2, reason="run_ahead forks, onto a second core"
)


def _script(code: str, *args: str, cache: Path | None = None) -> Any:
    """What `code`, run in a fresh interpreter with `args`, printed (JSON); `cache`: its
    `XDG_CACHE_HOME`."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
    done = subprocess.run(
        [sys.executable, "-c", code, str(SESSION), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # the child says nothing
    return json.loads(done.stdout)


def _run(case: str) -> dict[str, object]:
    result: dict[str, object] = _script(SCRIPT, case)
    return result


@needs_fork
@pytest.mark.parametrize(
    ("case", "run_here"),
    [
        # its pass ran in the child: the calibration holds no pass state of its own
        ("ok", False),
        # the child failed: the pass ran here, and decided the same
        ("child-fails", True),
    ],
)
def test_the_calibration_takes_what_the_forked_pass_decided(case: str, run_here: bool) -> None:
    got = _run(case)
    assert got["started"] is True
    assert got["handed"] is True
    assert got["other_handed"] is False
    assert isinstance(got["requests"], int) and got["requests"] > 50
    for name in ("predictions", "contexts", "weights", "ratios"):
        assert got[name] == got[f"expected_{name}"], name
    assert got["done"] == got["requests"]
    assert got["children_left"] is False
    assert got["run_here"] is run_here


def test_nothing_is_forked_beside_another_thread() -> None:
    import threading

    from inspector.formats import load
    from inspector.tokens.heuristic import HeuristicEstimator

    transcript = load(str(SESSION))
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert stored.run_ahead(transcript, HeuristicEstimator()) is False
    finally:
        stop.set()
        other.join()
    assert stored.calibration(transcript, HeuristicEstimator()).ahead is None


CLI_SCRIPT = """
import contextlib, io, json, os, sys
from inspector import cli
from inspector.tokens import stored

started = []
run_ahead = stored.run_ahead
if sys.argv[2] == "off":
    stored.run_ahead = lambda transcript, estimator: started.append(False) or False
else:
    stored.run_ahead = lambda transcript, estimator: started.append(run_ahead(transcript, estimator)) or started[-1]
outs = []
for _ in range(int(sys.argv[3])):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(["calibrate", sys.argv[1], "--json", *sys.argv[4:]])
    outs.append((code, out.getvalue()))
try:
    os.waitpid(-1, os.WNOHANG)
    left = True
except ChildProcessError:
    left = False
print(json.dumps({"started": started, "outs": outs, "children_left": left}))
"""


class _Runs(TypedDict):
    started: list[bool]
    """What `run_ahead` returned, at each call."""
    outs: list[tuple[int, str]]
    """Each command's exit code and standard output (JSON makes each pair a list)."""
    children_left: bool


def _cli(case: str, runs: int, *args: str, cache: Path | None = None) -> _Runs:
    result: _Runs = _script(CLI_SCRIPT, case, str(runs), *args, cache=cache)
    return result


@needs_fork
def test_calibrate_prints_the_same_with_its_pass_run_ahead() -> None:
    ahead = _cli("on", 1, "--no-cache")
    here = _cli("off", 1, "--no-cache")
    assert ahead["started"] == [True]
    assert here["started"] == [False]
    assert ahead["outs"] == here["outs"]
    ((code, text),) = ahead["outs"]
    assert code == 0
    report = json.loads(text)
    predicted = [r for r in report["requests"] if "delta" in r["predicted"]]
    assert len(predicted) == report["modes"]["delta"]["n"] > 50
    assert ahead["children_left"] is False


@needs_fork
def test_no_pass_is_run_ahead_where_the_cache_holds_it(tmp_path: Path) -> None:
    got = _cli("on", 2, cache=tmp_path)
    # the first run's pass ran ahead and was kept in the transcript's entry; the second restores it
    assert got["started"] == [True, False]
    first, second = got["outs"]
    assert first == second
    assert got["children_left"] is False
