"""The calibration corpus table: every Claude Code corpus file, both estimators, both baselines.

    python -m benchmarks.calibration_table            # the table, heuristic and tiktoken
    python -m benchmarks.calibration_table --json     # the same rows as JSON
    python -m benchmarks.calibration_table --estimator tiktoken

Each Claude Code transcript of the shared corpus (`../shared/corpus`) with at least `MIN_MEASURED`
measured requests (requests whose usage the file records) is run
through `inspector.tokens.accuracy.accuracy` once per estimator. Per file: median / p95 / max of
the absolute prediction error (percent of the reported input) of the best calibration mode and of
the two baselines (last report + chars/4, last report + cl100k of what was added), all measured
in the same run; then the summary row: the median over files of each file's median, p95 and max.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import msgspec

from inspector.formats import load
from inspector.tokens.accuracy import CorpusRow, ModeAccuracy, corpus_report, file_row

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
MIN_MEASURED = 10
"""Files with fewer measured requests say little about p95 and max (issue 25)."""
ESTIMATORS = ("heuristic", "tiktoken")


def corpus_files(corpus: Path = CORPUS) -> list[Path]:
    """Every Claude Code transcript of the corpus (as `tests/conftest.py::claude_code_corpus`)."""
    if not corpus.exists():
        return []
    return sorted((corpus / "claude-code").rglob("*.jsonl")) + sorted(
        (corpus / "claude-code-json-array").glob("*.json")
    )


def measured_files(corpus: Path = CORPUS) -> list[Path]:
    """The corpus files the calibration is judged on: at least `MIN_MEASURED` measured requests."""
    return [p for p in corpus_files(corpus) if sum(1 for r in load(p).requests if r.usage) >= MIN_MEASURED]


def table(estimator: str, corpus: Path = CORPUS) -> tuple[list[CorpusRow], float]:
    """The rows of the files with at least `MIN_MEASURED` measured requests, and the seconds it took."""
    rows: list[CorpusRow] = []
    start = time.perf_counter()
    for path in measured_files(corpus):
        rows.append(file_row(load(path), estimator, name=path.name))
    return rows, time.perf_counter() - start


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def render(estimator: str, rows: list[CorpusRow], seconds: float) -> str:
    cols = ("file", "n", "mode", "best med/p95/max %", "chars/4 med/p95/max %", "cl100k med/p95/max %")
    lines: list[list[str]] = []

    def triple(s: tuple[float | None, float | None, float | None] | ModeAccuracy) -> str:
        if isinstance(s, ModeAccuracy):
            s = (s.median_pct, s.p95_pct, s.max_pct)
        return " / ".join(_pct(v) for v in s)

    for r in rows:
        lines.append([r.name, str(r.n), r.best, triple(r.best_stats), triple(r.baseline), triple(r.tiktoken)])
    report = corpus_report(rows, estimator)
    summary = report.summary
    lines.append(
        [
            f"summary ({len(rows)} files)",
            str(sum(r.n for r in rows)),
            "",
            triple(summary["best"]),
            triple(summary["baseline"]),
            triple(summary["baseline_tiktoken"]),
        ]
    )
    for kind, stats in report.kinds.items():
        lines.append([kind, str(stats.n), "(best)", triple(stats), "", ""])
    widths = [max(len(c), *(len(line[i]) for line in lines)) for i, c in enumerate(cols)]
    out = [f"estimator {estimator} ({seconds:.1f} s)"]
    out.append("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)))
    for line in lines:
        out.append("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.calibration_table", description=__doc__)
    ap.add_argument("--estimator", choices=ESTIMATORS, default=None, help="one estimator (default: both)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument(
        "--corpus", type=Path, default=CORPUS, help="the corpus folder (default: ../shared/corpus)"
    )
    args = ap.parse_args(argv)
    if not args.corpus.exists():
        print(f"corpus not found at {args.corpus}", file=sys.stderr)
        return 2
    out: dict[str, object] = {}
    for est in (args.estimator,) if args.estimator else ESTIMATORS:
        rows, seconds = table(est, args.corpus)
        if args.json:
            out[est] = msgspec.to_builtins(corpus_report(rows, est))
        else:
            print(render(est, rows, seconds))
            print()
    if args.json:
        print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
