"""The delta calibration pass alone, in-process, on a real-shaped transcript (`benchmarks.real`).

What a hand-inlined copy in the pass's hot loop (`inspector/tokens/calibration/`) has to pay for:
the transcript is loaded once, then the pass runs from scratch `--repeat` times (the sizes of the
messages included, as a first `report` or `calibrate` runs it); the best and the median are printed,
of the wall and of the process's CPU time (on a shared machine the CPU time is the steadier).

    python -m benchmarks.calibration_pass [--shape chained] [--copies 30] [--repeat 7]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time

from inspector.formats import load
from inspector.tokens import get_estimator
from inspector.tokens.calibration import Calibration

from . import real


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
    }
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
