"""Calibration accuracy on the real corpus, against the two baselines of DESIGN.md §3."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from inspector.formats import load
from inspector.tokens import accuracy
from inspector.tokens.accuracy import AccuracyReport, percentile

from .conftest import claude_code_corpus

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
FA812 = CORPUS / "claude-code" / "spotter-fa812bfe" / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"
SKIP = "real transcript corpus not found beside the project (../shared/corpus); present in CI"

# Files where the best calibration mode does not (yet) beat both baselines, with the reason.
KNOWN_LOSSES: dict[tuple[str, str], str] = {
    ("claude-code-log-dag-compact-after-rewind.jsonl", "heuristic"): (
        "synthetic fixture: every request reports 10 tokens while the ledger grows; no overhead "
        "and no ratio can fit it from one report"
    ),
    ("claude-code-log-dag-compact-after-rewind.jsonl", "tiktoken"): "same synthetic fixture",
}
MAX_ONLY_LOSSES: dict[str, str] = {
    # Real sessions nobody tuned against, read whole since the readers join every segment: p95
    # beats both baselines, the single worst request does not (calibration on unseen sessions,
    # issue 25, measures and models these).
    "conneroisu-b9712494.jsonl": "request 5 (50,337) jumps 19.6% past what the early ledger predicts",
    "patternstack-263940d8.jsonl": "request 25 (30,207) misses by 5.4%",
    "pooknast-da0d9633.jsonl": "request 19 (53,026) misses by 3.6%",
    "thomasjmcgovern-fb36f7a7.jsonl": "with tiktoken, request 118 (90,250) misses by 3.0% against 1.9%",
    "lroystack-24133cc4-chat.json": "request 162, the first after the second auto compaction, misses by 8.4%",
}
"""Files where the best mode loses to a baseline on the max only; p95 must still beat both."""


def usage_files() -> list[Path]:
    if not CORPUS.exists():
        return []
    out = []
    for p in claude_code_corpus():
        tr = load(p)
        if sum(1 for r in tr.requests if r.usage is not None) >= 3:
            out.append(p)
    return out


def fa812(estimator: str) -> AccuracyReport:
    if not FA812.exists():
        pytest.skip(SKIP)
    return accuracy(load(FA812), estimator)


def test_percentile_nearest_rank() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0
    assert percentile(list(map(float, range(1, 101))), 95) == 95.0
    assert percentile([7.0], 95) == 7.0


def test_report_shape() -> None:
    rep = fa812("heuristic")
    d = msgspec.to_builtins(rep)
    assert set(d["modes"]) == {"baseline", "baseline_tiktoken", "proportional", "delta"}
    for stats in d["modes"].values():
        assert {"median_pct", "p95_pct", "max_pct", "n"} <= set(stats)
    assert d["best"] in ("proportional", "delta")
    assert rep.modes["delta"].n == 155  # 157 requests: not the first, not the one after the compaction
    assert rep.modes["delta"].n_after_compaction == 1
    assert [r.request for r in rep.requests if r.after_compaction] == [127]
    row = next(r for r in rep.requests if r.request == 50)
    assert set(row.predicted) == {"baseline", "baseline_tiktoken", "proportional", "delta"}


@pytest.mark.parametrize("estimator", ["heuristic", "tiktoken"])
def test_fa812_achieved(estimator: str) -> None:
    """What the best mode reaches today on the key session (a guard against regressions)."""
    rep = fa812(estimator)
    best = rep.modes[rep.best]
    print(estimator, rep.best, best)
    assert rep.best == "delta"
    assert best.median_pct is not None and best.p95_pct is not None and best.max_pct is not None
    # heuristic 0.027 / 0.364 / 2.49, tiktoken 0.020 / 0.342 / 3.37 (issue 4's close)
    assert best.median_pct <= 0.03
    assert best.p95_pct <= 0.38
    assert best.max_pct <= 3.45
    for baseline in ("baseline", "baseline_tiktoken"):
        b = rep.modes[baseline]
        assert b.median_pct is not None and b.p95_pct is not None and b.max_pct is not None
        assert best.median_pct < b.median_pct / 3
        assert best.p95_pct < b.p95_pct / 2
        assert best.max_pct < b.max_pct / 2


@pytest.mark.parametrize(
    "estimator",
    [
        "heuristic",
        pytest.param(
            "tiktoken",
            marks=pytest.mark.xfail(
                strict=True,
                reason=(
                    "max not reached: delta 0.020% / 0.34% / max 3.37% (tiktoken). The max is request "
                    "128, right after the compaction: two large Reads (19,038 cl100k tokens) cost "
                    "~1.24x cl100k where this session's other Reads cost 1.07-1.15x (one of them is "
                    "the same file at request 109), so ~1,500 tokens the transcript does not hold; "
                    "even the model fitted on the whole session afterwards misses it by 3.3%"
                ),
            ),
        ),
    ],
)
def test_fa812_target(estimator: str) -> None:
    rep = fa812(estimator)
    best = rep.modes[rep.best]
    assert best.median_pct is not None and best.p95_pct is not None and best.max_pct is not None
    assert best.median_pct <= 0.03
    assert best.p95_pct <= 0.4
    assert best.max_pct <= 3.0


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["heuristic", "tiktoken"])
def test_best_beats_baselines_on_every_file(estimator: str) -> None:
    files = usage_files()
    if not files:
        pytest.skip(SKIP)
    losses = []
    for path in files:
        rep = accuracy(load(path), estimator)
        best = rep.modes[rep.best]
        assert best.p95_pct is not None and best.max_pct is not None
        beats_p95 = all(best.p95_pct < (rep.modes[b].p95_pct or 0) for b in ("baseline", "baseline_tiktoken"))
        beats = beats_p95 and all(
            best.max_pct < (rep.modes[b].max_pct or 0) for b in ("baseline", "baseline_tiktoken")
        )
        if not beats and path.name in MAX_ONLY_LOSSES and beats_p95:
            continue
        if not beats and (path.name, estimator) not in KNOWN_LOSSES:
            losses.append((path.name, rep.best, best.p95_pct, best.max_pct))
    assert not losses
