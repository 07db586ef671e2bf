"""The delta calibration pass alone, in-process, on a real-shaped transcript (`benchmarks.real`).

What a hand-inlined copy in the pass's hot loop (`inspector/tokens/calibration/`) has to pay for:
the transcript is loaded once, then the pass runs from scratch `--repeat` times (the sizes of the
messages included, as a first `report` or `calibrate` runs it); the best and the median are printed,
of the wall and of the process's CPU time (on a shared machine the CPU time is the steadier).

    python -m benchmarks.calibration_pass [--shape chained] [--copies 30] [--repeat 7]

It also times the two cases the package writes out beside the general code they copy (each held
equal to it by a test): `apportion` of two shares and `_targets` of two messages, per call, on the
inputs the pass itself gives them in this transcript.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from typing import Any

from inspector.formats import load
from inspector.tokens import get_estimator
from inspector.tokens.calibration import Calibration
from inspector.tokens.calibration import delta as _delta
from inspector.tokens.calibration import weights as _weights

from . import real


def _per_call(fn: Callable[..., Any], cases: list[tuple[Any, ...]]) -> float:
    """Microseconds per call of `fn` over `cases` (best of 7)."""
    if not cases:
        return 0.0
    best = min(timeit.repeat(lambda: [fn(*c) for c in cases], number=5, repeat=7))
    return round(best / 5 / len(cases) * 1e6, 3)


def written_out(transcript: Any, estimator: Any) -> dict[str, float]:
    """The written-out cases against the general ones, per call, on what one pass gives them."""
    shares: list[tuple[Any, ...]] = []
    pairs: list[tuple[Any, ...]] = []
    apportion, targets_two = _weights.apportion, _delta._targets_two

    def seen_apportion(total: int, s: Any) -> list[int]:
        if len(s) == 2 and total >= 0:
            shares.append((total, list(s)))
        return apportion(total, s)

    def seen_targets(total: int, a: Any, b: Any) -> list[float] | None:
        pairs.append((total, a.copy(), b.copy()))
        return targets_two(total, a, b)

    names = vars(_delta)  # delta reads both names from its module at each call
    names["apportion"], names["_targets_two"] = seen_apportion, seen_targets
    try:
        Calibration(transcript, estimator, "delta").predictions()
    finally:
        names["apportion"], names["_targets_two"] = apportion, targets_two
    return {
        "apportion_two_calls": len(shares),
        "apportion_two_us": _per_call(lambda t, s: _weights._apportion_two(t, s[0], s[1]), shares),
        "apportion_general_us": _per_call(_weights._apportion_any, shares),
        "targets_two_calls": len(pairs),
        "targets_two_us": _per_call(targets_two, pairs),
        "targets_general_us": _per_call(lambda t, a, b: _delta._targets(t, [a, b]), pairs),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.calibration_pass")
    parser.add_argument("--shape", default="chained", choices=real.SHAPES)
    parser.add_argument("--copies", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--estimator", default="heuristic", choices=("heuristic", "tiktoken"))
    args = parser.parse_args(argv)
    if not real.available():
        print("the real corpus session is not beside the project (../shared/corpus)", file=sys.stderr)
        return 2
    transcript = load(str(real.make(args.shape, args.copies).path))
    estimator = get_estimator(args.estimator)
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(args.repeat):
        gc.collect()
        t, c = time.perf_counter(), time.process_time()
        Calibration(transcript, estimator, "delta").predictions()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    out = {
        "requests": len(transcript.requests),
        "messages": len(transcript.messages),
        "best_s": round(min(walls), 4),
        "median_s": round(statistics.median(walls), 4),
        "best_cpu_s": round(min(cpus), 4),
        "median_cpu_s": round(statistics.median(cpus), 4),
        **written_out(transcript, estimator),
    }
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
