"""Memory on junk (issue 31): `report --json` of a session holding a million junk lines.

Every junk line is a load issue. Kept whole they took 700 MB at 1,000,000 lines (a 2 MB file)
and 2.2 GB at 3,000,000; the readers keep the first `MAX_LOAD_ISSUES` and count the rest, so
the peak is about that of the interpreter and its imports however many there are. Target: under
300 MB peak resident size at 1,000,000 lines. The floor is `report --json` of the same session
without its junk, measured in the same run: the two should be close.

    python -m benchmarks.junk                     # 1,000,000 junk lines
    python -m benchmarks.junk --lines 3000000     # more
    python -m benchmarks --only junk              # as a row of the benchmark table

The peak is the child's own (`runner.run_child`: the bare launcher's `wait4`), never the parent's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from inspector.samples import sample_path

from .runner import PY, Figure, run_child
from .synth import OUT

TARGET_MB = 300
LINES = 1_000_000


def junk_session(lines: int, out: Path = OUT) -> tuple[Path, Path]:
    """(the bundled short session with `lines` junk lines put after its first line, the session
    itself), written under `out` (cached by size)."""
    clean = sample_path("short-session")
    data = clean.read_bytes()
    first, _, rest = data.partition(b"\n")
    path = out / f"junk-{lines}.jsonl"
    if not path.exists() or path.stat().st_size != len(data) + 2 * lines:
        out.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        with tmp.open("wb") as fh:
            fh.write(first + b"\n")
            block = b"x\n" * 100_000
            for _ in range(lines // 100_000):
                fh.write(block)
            fh.write(b"x\n" * (lines % 100_000))
            fh.write(rest)
        tmp.replace(path)
    return path, clean


def bench_junk(lines: int = LINES) -> list[Figure]:
    """Peak RSS of `report --json` on `lines` junk lines, against the same session without them."""
    path, clean = junk_session(lines)
    # once first, unmeasured: the first report of a model may import the price library to fill
    # the price cache (`model.cost`); both measured runs then find the cache as the other did
    run_child([PY, "-m", "inspector", "report", "--json", "--no-cache", str(clean)], stdout=None)
    run = run_child([PY, "-m", "inspector", "report", "--json", "--no-cache", str(path)], stdout=None)
    floor = run_child([PY, "-m", "inspector", "report", "--json", "--no-cache", str(clean)], stdout=None)
    report = json.loads(run.out)
    total, kept = report["load_issues_total"], len(report["load_issues"])
    if total != lines:
        raise RuntimeError(f"{path.name}: {total:,} load issues counted, {lines:,} expected")
    return [
        Figure(
            name=f"memory on junk: peak RSS of report --json, {lines:,} junk lines",
            target=f"< {TARGET_MB} MB",
            measured=run.rss / 1e6,
            unit="MB",
            floor=floor.rss / 1e6,
            floor_what="the session without its junk",
            ratio=run.rss / floor.rss,
            passed=run.rss < TARGET_MB * 1e6,
            detail={
                "lines": lines,
                "file_bytes": path.stat().st_size,
                "wall": run.wall,
                "load_issues_kept": kept,
                "load_issues_total": total,
                "json_bytes": len(run.out),
            },
        )
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.junk", description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=LINES, help=f"junk lines (default {LINES:,})")
    args = parser.parse_args(argv)
    (fig,) = bench_junk(args.lines)
    d = fig.detail
    print(
        f"{fig.name}: {fig.measured:,.0f} MB (target {fig.target}; without the junk {fig.floor:,.0f} MB), "
        f"{d['wall']:.2f} s; {d['load_issues_kept']} load issues kept of {d['load_issues_total']:,}, "
        f"JSON {d['json_bytes']:,} bytes: {'PASS' if fig.passed else 'FAIL'}"
    )
    return 0 if fig.passed else 1


if __name__ == "__main__":
    sys.exit(main())
