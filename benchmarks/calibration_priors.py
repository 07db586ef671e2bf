"""Choose the calibration's priors by leave-one-file-out over the corpus, and print the table.

    python -m benchmarks.calibration_priors                   # heuristic estimator
    python -m benchmarks.calibration_priors --estimator tiktoken
    python -m benchmarks.calibration_priors --rounds 1        # a quicker search

The priors of `inspector.tokens.calibration` (how sure the cost model is of each coefficient
before a session's reports, the noise of a difference, how often unseen content comes, what
share of earlier reasoning a new turn takes off) are not fitted to a session: every session
learns its own coefficients online. What they decide is how fast and how far one session's
first observations move them, so they are chosen on other sessions:

- the knobs (`KNOBS`) each have a few candidate values; a setting is one value per knob;
- a set of files is scored by the delta mode's figures on their usual requests (the requests
  `accuracy()` scores in the modes' figures): median over the files of each file's p95, over 0.5,
  plus median of each file's max, over 3 (issue 25's targets, so both weigh the same);
- for each file of the corpus (`calibration_table.measured_files`), coordinate descent from the
  module's current values finds the best setting on the *other* files, and the held-out file is
  scored with it (the "held out" columns: what a session nobody tuned on gets);
- the last row is the setting chosen on every file: the values the module should hold. A value
  that only one file wants never wins over the others here.

Every setting is evaluated once per file (cached), so a run costs a few hundred calibration passes.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from inspector.formats import load
from inspector.model import Transcript
from inspector.tokens import calibration as C
from inspector.tokens import get_estimator
from inspector.tokens.accuracy import percentile, request_kinds
from inspector.tokens.calibration import cost_model as _cost_model
from inspector.tokens.calibration import delta as _delta
from inspector.tokens.calibration import priors as _priors

from .calibration_table import measured_files

KIND_SD = ("text", "thinking", "tool_call", "tool_result", "out_text", "out_thinking", "out_call")
SHAPE_SD = ("tool_result_chars", "tool_result_lines", "tool_call_chars", "tool_call_lines", "out_call_lines")

KNOBS: dict[str, tuple[float, ...]] = {
    "kind_sd": (0.025, 0.05, 0.1, 0.2, 0.4),
    "shape_sd": (0.05, 0.1, 0.25, 0.5, 1.0),
    "noise_share": (0.02, 0.05, 0.1, 0.2),
    "unseen_share": (0.1, 0.2, 0.4, 0.6),
    "unseen_mean": (300.0, 1000.0),
    "tool_ratio_sd": (0.05, 0.1, 0.2),
    "tool_extra_sd": (50.0, 200.0),
    "strip_prior": (0.0, 0.5, 0.75, 1.0),
    "prior_ratio": (0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3),
    "pieces": (0.0, 0.15, 0.3, 0.45),
    "pieces_sd": (0.05, 0.1, 0.2, 0.4),
    "error_sd": (25.0, 50.0, 150.0),
}
"""Each knob's candidates. `kind_sd` is the prior sd of the kind ratios; `shape_sd` scales the
prior sds of the shape coefficients (characters, lines); `prior_ratio` is the estimator's
`PRIOR_RATIO`; `pieces` and `pieces_sd` the prior of `tool_result_pieces` (heuristic sizes only);
`error_sd` the prior sd of `error_results` (its mean is 0)."""


def current(estimator: str) -> dict[str, float]:
    """The module's values of the knobs."""
    return {
        "kind_sd": C.PRIORS["tool_result"][1],
        "shape_sd": 1.0,
        "noise_share": C.NOISE_SHARE,
        "unseen_share": C.UNSEEN_SHARE,
        "unseen_mean": C.UNSEEN_MEAN,
        "tool_ratio_sd": C.TOOL_RATIO_PRIOR[1],
        "tool_extra_sd": C.TOOL_EXTRA_PRIOR[1],
        "strip_prior": C.STRIP_PRIOR[0],
        "prior_ratio": C.PRIOR_RATIO.get(estimator, 1.0),
        "pieces": C.PRIORS["tool_result_pieces"][0],
        "pieces_sd": C.PRIORS["tool_result_pieces"][1],
        "error_sd": C.PRIORS["error_results"][1],
    }


@contextlib.contextmanager
def knobs(setting: dict[str, float], estimator: str) -> Iterator[None]:
    """The calibration module's globals set to `setting` for the block (restored after)."""
    saved = {
        n: getattr(C, n) for n in ("PRIORS", "NOISE_SHARE", "UNSEEN_SHARE", "UNSEEN_MEAN", "TOOL_RATIO_PRIOR")
    }
    saved.update({n: getattr(C, n) for n in ("TOOL_EXTRA_PRIOR", "STRIP_PRIOR", "PRIOR_RATIO")})
    base = C.PRIORS
    priors = dict(base)
    for name in KIND_SD:
        priors[name] = (base[name][0], setting["kind_sd"] * base[name][1] / base["tool_result"][1])
    for name in SHAPE_SD:
        priors[name] = (base[name][0], base[name][1] * setting["shape_sd"])
    priors["tool_result_pieces"] = (setting["pieces"], setting["pieces_sd"])
    priors["error_results"] = (base["error_results"][0], setting["error_sd"])
    C.PRIORS = priors
    C.NOISE_SHARE = setting["noise_share"]
    C.UNSEEN_SHARE = setting["unseen_share"]
    C.UNSEEN_MEAN = setting["unseen_mean"]
    C.TOOL_RATIO_PRIOR = (C.TOOL_RATIO_PRIOR[0], setting["tool_ratio_sd"])
    C.TOOL_EXTRA_PRIOR = (C.TOOL_EXTRA_PRIOR[0], setting["tool_extra_sd"])
    C.STRIP_PRIOR = (setting["strip_prior"], C.STRIP_PRIOR[1])
    C.PRIOR_RATIO = {**C.PRIOR_RATIO, estimator: setting["prior_ratio"]}
    # the package's modules read their own copies of the names: each gets the setting
    for n in saved:
        _share(n, getattr(C, n))
    try:
        yield
    finally:
        for n, v in saved.items():
            setattr(C, n, v)
            _share(n, v)


def _share(name: str, value: object) -> None:
    """Set `name` to `value` in every module of the calibration package that holds it."""
    for module in (_priors, _cost_model, _delta):
        if hasattr(module, name):
            setattr(module, name, value)


@dataclass
class Session:
    name: str
    transcript: Transcript
    scored: list[tuple[int, int]]
    """(request, reported input) of the usual requests `accuracy()` scores."""


def sessions() -> list[Session]:
    out = []
    for path in measured_files():
        tr = load(path)
        kinds = request_kinds(tr)
        scored = [
            (req.index, req.usage.context)
            for prev, req in zip(tr.requests, tr.requests[1:], strict=False)
            if req.usage is not None
            and prev.usage is not None
            and req.usage.context > 0
            and req.index not in kinds
        ]
        out.append(Session(path.name, tr, scored))
    return out


class Search:
    def __init__(self, files: list[Session], estimator: str) -> None:
        self.files = files
        self.estimator = estimator
        self.cache: dict[tuple[float, ...], list[tuple[float, float]]] = {}

    def figures(self, setting: dict[str, float]) -> list[tuple[float, float]]:
        """(p95, max) of the delta mode on each file under `setting`."""
        key = tuple(setting[k] for k in KNOBS)
        got = self.cache.get(key)
        if got is None:
            got = []
            est = get_estimator(self.estimator)
            with knobs(setting, self.estimator):
                for s in self.files:
                    cal = C.calibrate(s.transcript, est, "delta")
                    errors = []
                    for k, reported in s.scored:
                        p = cal.predicted(k)
                        if p is not None:
                            errors.append(abs(p - reported) / reported * 100)
                    got.append((percentile(errors, 95), max(errors)) if errors else (0.0, 0.0))
            self.cache[key] = got
        return got

    def score(self, setting: dict[str, float], skip: int | None) -> float:
        figs = [f for i, f in enumerate(self.figures(setting)) if i != skip]
        return statistics.median(p for p, _ in figs) / 0.5 + statistics.median(m for _, m in figs) / 3.0

    def descend(self, start: dict[str, float], skip: int | None, rounds: int) -> dict[str, float]:
        """Coordinate descent over `KNOBS` (each knob in turn to its best candidate)."""
        best = dict(start)
        best_score = self.score(best, skip)
        for _ in range(rounds):
            moved = False
            for knob, values in KNOBS.items():
                for v in values:
                    if v == best[knob]:
                        continue
                    trial = {**best, knob: v}
                    sc = self.score(trial, skip)
                    if sc < best_score - 1e-9:
                        best, best_score, moved = trial, sc, True
            if not moved:
                break
        return best


def _fmt(setting: dict[str, float], base: dict[str, float]) -> str:
    changed = [f"{k}={v:g}" for k, v in setting.items() if v != base[k]]
    return ", ".join(changed) or "(the module's values)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.calibration_priors", description=__doc__)
    ap.add_argument("--estimator", choices=("heuristic", "tiktoken"), default="heuristic")
    ap.add_argument("--rounds", type=int, default=2, help="coordinate-descent rounds (default 2)")
    args = ap.parse_args(argv)
    files = sessions()
    if not files:
        print("corpus not found beside the project (../shared/corpus)", file=sys.stderr)
        return 2
    start = time.perf_counter()
    search = Search(files, args.estimator)
    base = current(args.estimator)
    now = search.figures(base)
    rows: list[list[Any]] = []
    held: list[tuple[float, float]] = []
    for i, s in enumerate(files):
        chosen = search.descend(base, i, args.rounds)
        p95, mx = search.figures(chosen)[i]
        held.append((p95, mx))
        rows.append(
            [s.name, f"{now[i][0]:.3f}", f"{now[i][1]:.3f}", f"{p95:.3f}", f"{mx:.3f}", _fmt(chosen, base)]
        )
    everywhere = search.descend(base, None, args.rounds)
    final = search.figures(everywhere)
    rows.append(
        [
            "median over files",
            f"{statistics.median(p for p, _ in now):.3f}",
            f"{statistics.median(m for _, m in now):.3f}",
            f"{statistics.median(p for p, _ in held):.3f}",
            f"{statistics.median(m for _, m in held):.3f}",
            "",
        ]
    )
    rows.append(
        [
            "chosen on every file",
            "",
            "",
            f"{statistics.median(p for p, _ in final):.3f}",
            f"{statistics.median(m for _, m in final):.3f}",
            _fmt(everywhere, base),
        ]
    )
    head = [
        "file (held out)",
        "now p95 %",
        "now max %",
        "held-out p95 %",
        "held-out max %",
        "setting chosen on the others",
    ]
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    print(
        f"delta mode, {args.estimator} estimator, {len(search.cache)} settings tried "
        f"({time.perf_counter() - start:.0f} s)"
    )
    for r in [head, *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))
    print("values chosen on every file:", ", ".join(f"{k}={v:g}" for k, v in everywhere.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
