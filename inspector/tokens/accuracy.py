"""How well calibration predicts what the provider reports (DESIGN.md §3, "report the accuracy").

For each request k > 1 with usage whose previous request k-1 also has usage and belongs to the
same ledger segment, every mode predicts k's input from what it knew before report k, and the
absolute error is taken in percent of the reported input:

- `baseline`: the last reported input plus characters/4 of what was added to the ledger since
  (the serialized messages, the previous response included) - Claude Code's own between-calls
  estimate;
- `baseline_tiktoken`: the same with tiktoken (cl100k) tokens of the serialized messages;
- `proportional` and `delta`: `Calibration.predicted(k)` of each calibration mode.

Requests right after a compaction (the first of a new segment) are excluded from every mode
alike: a baseline has no report of that ledger to build on, and the calibration modes can only
predict the overhead plus fresh estimates of the summary, without the files the harness
re-injects. They are counted separately (`n_after_compaction`). `best` names the better of the
calibration modes (lower p95, then max, then median), never a baseline.
"""

from __future__ import annotations

import itertools
import math
import statistics

from msgspec import Struct, field

from inspector.model import Transcript

from .base import serialize
from .calibration import MODES, calibrate

BASELINES = ("baseline", "baseline_tiktoken")
ALL_MODES = (*BASELINES, *MODES)


class ModeAccuracy(Struct, kw_only=True):
    """Absolute prediction error of one mode, in percent of the reported input."""

    median_pct: float | None = None
    p95_pct: float | None = None
    max_pct: float | None = None
    n: int = 0
    n_after_compaction: int = 0


class RequestAccuracy(Struct, kw_only=True):
    request: int
    reported: int
    after_compaction: bool = False
    predicted: dict[str, int] = field(default_factory=dict)
    error_pct: dict[str, float] = field(default_factory=dict)


class AccuracyReport(Struct, kw_only=True):
    estimator: str = "heuristic"
    modes: dict[str, ModeAccuracy] = field(default_factory=dict)
    best: str = "delta"
    requests: list[RequestAccuracy] = field(default_factory=list)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def _stats(errors: list[float], after: int) -> ModeAccuracy:
    if not errors:
        return ModeAccuracy(n=0, n_after_compaction=after)
    return ModeAccuracy(
        median_pct=round(statistics.median(errors), 4),
        p95_pct=round(percentile(errors, 95), 4),
        max_pct=round(max(errors), 4),
        n=len(errors),
        n_after_compaction=after,
    )


def accuracy(transcript: Transcript, estimator_name: str = "heuristic") -> AccuracyReport:
    """Prediction accuracy of the two baselines and the two calibration modes, side by side."""
    from . import get_estimator
    from .tiktoken_estimator import TiktokenEstimator

    estimator = get_estimator(estimator_name)
    cals = {mode: calibrate(transcript, estimator, mode) for mode in MODES}
    tik = estimator if isinstance(estimator, TiktokenEstimator) else TiktokenEstimator()
    errors: dict[str, list[float]] = {m: [] for m in ALL_MODES}
    after = 0
    rows: list[RequestAccuracy] = []
    reqs = transcript.requests
    pairs = [
        (prev, req)
        for prev, req in itertools.pairwise(reqs)
        if req.usage is not None and prev.usage is not None and req.usage.context > 0
    ]
    # the messages each request added, tokenized in one batch (a batch per request costs more)
    added_texts = {
        req.index: [serialize(m) for m in transcript.ledger(req.index)[prev.ledger_len :]]
        for prev, req in pairs
        if req.segment == prev.segment
    }
    sizes = iter(tik.texts([t for texts in added_texts.values() for t in texts]))
    for prev, req in pairs:
        assert req.usage is not None and prev.usage is not None
        k = req.index
        reported = req.usage.context
        if req.segment != prev.segment:
            after += 1
            predicted: dict[str, int] = {m: p for m in MODES if (p := cals[m].predicted(k)) is not None}
            rows.append(
                RequestAccuracy(
                    request=k,
                    reported=reported,
                    after_compaction=True,
                    predicted=predicted,
                    error_pct={m: round(abs(p - reported) / reported * 100, 4) for m, p in predicted.items()},
                )
            )
            continue
        texts = added_texts[k]
        predicted = {
            "baseline": prev.usage.context + round(sum(len(t) for t in texts) / 4),
            "baseline_tiktoken": prev.usage.context + sum(itertools.islice(sizes, len(texts))),
        }
        for mode in MODES:
            p = cals[mode].predicted(k)
            if p is not None:
                predicted[mode] = p
        err = {m: round(abs(p - reported) / reported * 100, 4) for m, p in predicted.items()}
        for name, e in err.items():
            errors[name].append(e)
        rows.append(RequestAccuracy(request=k, reported=reported, predicted=predicted, error_pct=err))
    modes = {m: _stats(errors[m], after) for m in ALL_MODES}

    def key(m: str) -> tuple[float, float, float]:
        s = modes[m]
        inf = float("inf")
        return (
            s.p95_pct if s.p95_pct is not None else inf,
            s.max_pct if s.max_pct is not None else inf,
            s.median_pct if s.median_pct is not None else inf,
        )

    best = min(MODES, key=lambda m: (key(m), MODES.index(m) if m != "delta" else -1))
    return AccuracyReport(estimator=estimator.name, modes=modes, best=best, requests=rows)
