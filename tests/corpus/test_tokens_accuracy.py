"""Calibration accuracy on the real corpus, against the two baselines of docs/DESIGN.md §3."""

from __future__ import annotations

import functools
from pathlib import Path

import msgspec
import pytest
from msgspec.structs import replace

from inspector.formats import load
from inspector.model import EventKind, RecordedEvent
from inspector.tokens.accuracy import (
    BASELINES,
    AccuracyReport,
    CorpusRow,
    accuracy,
    corpus_summary,
    file_row,
    percentile,
    request_kinds,
    worst_requests,
)
from tests.conftest import claude_code_corpus

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
FA812 = CORPUS / "claude-code" / "spotter-fa812bfe" / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"
SKIP = "real transcript corpus not found beside the project (../shared/corpus); present in CI"

# Files where the best calibration mode does not beat both baselines, with the reason.
KNOWN_LOSSES: dict[tuple[str, str], str] = {
    ("claude-code-log-dag-compact-after-rewind.jsonl", "heuristic"): (
        "synthetic fixture: every request reports 10 tokens while the ledger grows; no overhead "
        "and no ratio can fit it from one report"
    ),
    ("claude-code-log-dag-compact-after-rewind.jsonl", "tiktoken"): "same synthetic fixture",
    ("claude-code-viewer-inline-sidechains.jsonl", "heuristic"): (
        "9 requests (not judged in the corpus table): at request 4, three Task results cost 368 "
        "tokens less than the first three reports taught (2.0% against chars/4's 0.92%, which fits "
        "this 1.0.98-era file by chance: cl100k misses by 2.0% too)"
    ),
}
MAX_ONLY_LOSSES: dict[tuple[str, str], str] = {}
"""Files where the best mode loses to a baseline on the max only; p95 must still beat both."""

TARGET_P95 = 0.5
TARGET_MAX = 3.0
"""Issue 25's target for the summary row: median over the files of each file's p95 and max."""
REACHED = {"heuristic": (0.50, 1.64), "tiktoken": (0.66, 1.56)}
"""What the summary row reaches today (median of per-file p95, of per-file max), a guard."""


def usage_files() -> list[Path]:
    if not CORPUS.exists():
        return []
    out = []
    for p in claude_code_corpus():
        tr = load(p)
        if sum(1 for r in tr.requests if r.usage is not None) >= 3:
            out.append(p)
    return out


@functools.cache
def corpus_rows(estimator: str) -> tuple[CorpusRow, ...]:
    """The corpus table's rows: every Claude Code file with at least 10 measured requests."""
    from benchmarks.calibration_table import measured_files

    return tuple(file_row(load(p), estimator, p.name) for p in measured_files(CORPUS))


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
    assert set(rep.kinds) == {"after compaction"}
    assert set(rep.kinds["after compaction"]) == {"proportional", "delta"}  # no baseline predicts it
    row = next(r for r in rep.requests if r.request == 50)
    assert set(row.predicted) == {"baseline", "baseline_tiktoken", "proportional", "delta"}


def test_the_tiktoken_baseline_counts_a_repeated_text_every_time_it_is_added() -> None:
    # each distinct text is tokenized once; a text added again still counts at every request
    from inspector.model import Message, Request, Role, Segment, TextBlock, Transcript, Usage
    from inspector.tokens.base import serialize
    from inspector.tokens.tiktoken_estimator import TiktokenEstimator

    same = "the same reminder, repeated by the harness " * 30
    messages = [
        Message(id=f"m{i}", role=Role.USER if i % 2 == 0 else Role.ASSISTANT, blocks=(TextBlock(text=t),))
        for i, t in enumerate([same, "ok", same, "fine " * 9, same, "done"])
    ]
    requests = [
        Request(index=k, ledger_len=2 * k - 1, segment=0, usage=Usage(input=1000 * k, output=5))
        for k in (1, 2, 3)
    ]
    tr = Transcript(
        format="synthetic",
        path="synthetic",
        messages=messages,
        segments=[Segment(index=0, message_ids=tuple(m.id for m in messages))],
        requests=requests,
    )
    rep = accuracy(tr, "heuristic")
    tik = TiktokenEstimator()
    for row in rep.requests:
        k = row.request
        added = tr.ledger(k)[requests[k - 2].ledger_len :]
        want = 1000 * (k - 1) + sum(tik.text(serialize(m)) for m in added)
        assert row.predicted["baseline_tiktoken"] == want
    assert [r.request for r in rep.requests] == [2, 3]


def test_requests_after_a_switch_a_prompt_change_or_a_compaction_are_scored_apart() -> None:
    path = CORPUS / "claude-code" / "patternstack-263940d8.jsonl"
    if not path.exists():
        pytest.skip(SKIP)
    tr = load(path)
    # request 70 runs on sonnet-4 after opus-4-1; request 25 reads nothing from the cache 267 s
    # after request 24 read 30,682 tokens from it (right after /mcp: the tool schemas changed)
    assert request_kinds(tr) == {70: "after model switch", 25: "after prompt change"}
    assert tr.request(70).model != tr.request(69).model
    usage = tr.request(25).usage
    assert usage is not None and usage.cache_read == 0
    rep = accuracy(tr)
    assert rep.modes["delta"].n == 79  # 82 requests: not the first, not 25, not 70
    assert rep.kinds["after model switch"]["baseline"].n == 1
    assert rep.kinds["after prompt change"]["delta"].max_pct == next(
        r.error_pct["delta"] for r in rep.requests if r.request == 25
    )
    # every other corpus session has no switch and no prompt change: only its compactions are apart
    lroy = CORPUS / "claude-code-json-array" / "lroystack-24133cc4-chat.json"
    assert request_kinds(load(lroy)) == {47: "after compaction", 162: "after compaction"}


def test_the_request_after_an_api_error_is_scored_apart() -> None:
    path = CORPUS / "claude-code" / "chiphuyen-ba79134d.jsonl"
    if not path.exists():
        pytest.skip(SKIP)
    tr = load(path)
    failed = RecordedEvent(
        kind=EventKind.API_ERROR, detail="API Error: 529 overloaded_error", after_request=5
    )
    with_error = replace(tr, events=[*tr.events, failed])
    assert request_kinds(with_error) == {6: "after API error"}
    plain, rep = accuracy(tr), accuracy(with_error)
    assert rep.modes["delta"].n == plain.modes["delta"].n - 1
    row = next(r for r in rep.requests if r.request == 6)
    assert row.after == "after API error"
    assert rep.kinds["after API error"]["delta"].max_pct == row.error_pct["delta"]


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["heuristic", "tiktoken"])
def test_best_beats_baselines_on_every_file(estimator: str) -> None:
    """Every Claude Code corpus file with usage: the best mode's p95 beats both baselines' (unless a
    known loss), and so does its max (unless a known loss on the max only)."""
    files = usage_files()
    if not files:
        pytest.skip(SKIP)
    losses = []
    for path in files:
        rep = accuracy(load(path), estimator)
        best = rep.modes[rep.best]
        assert best.p95_pct is not None and best.max_pct is not None
        beats_p95 = all(best.p95_pct < (rep.modes[b].p95_pct or 0) for b in ("baseline", "baseline_tiktoken"))
        beats_max = all(best.max_pct < (rep.modes[b].max_pct or 0) for b in ("baseline", "baseline_tiktoken"))
        key = (path.name, estimator)
        if key in KNOWN_LOSSES:
            assert not (beats_p95 and beats_max), f"{key} beats both now: take it off KNOWN_LOSSES"
            continue
        if key in MAX_ONLY_LOSSES:
            assert beats_p95 and not beats_max, (
                f"{key}: p95 must beat both; a max that beats comes off the list"
            )
            continue
        if not (beats_p95 and beats_max):
            losses.append((path.name, rep.best, best.p95_pct, best.max_pct))
    assert not losses


@pytest.mark.parametrize("estimator", ["heuristic", "tiktoken"])
def test_every_judged_file_beats_the_better_baseline_on_p95(estimator: str) -> None:
    rows = corpus_rows(estimator)
    if not rows:
        pytest.skip(SKIP)
    assert len(rows) >= 12
    for row in rows:
        best, base, tik = row.best_stats[1], row.baseline[1], row.tiktoken[1]
        assert best is not None and base is not None and tik is not None
        assert best < min(base, tik), row.name


@pytest.mark.parametrize("estimator", ["heuristic", "tiktoken"])
def test_corpus_summary_holds_what_it_reached(estimator: str) -> None:
    """The summary row (median over the files of each file's p95 and max) stays where it is, and
    well under both baselines' (measured in the same run)."""
    rows = list(corpus_rows(estimator))
    if not rows:
        pytest.skip(SKIP)
    summary = corpus_summary(rows)
    best = summary["best"]
    assert best.p95_pct is not None and best.max_pct is not None
    p95, mx = REACHED[estimator]
    assert best.p95_pct <= p95, best
    assert best.max_pct <= mx, best
    assert best.max_pct <= TARGET_MAX
    for b in BASELINES:
        base = summary[b]
        assert base.p95_pct is not None and base.max_pct is not None
        assert best.p95_pct < base.p95_pct / 2.5
        assert best.max_pct < base.max_pct / 2


def test_corpus_summary_meets_the_target() -> None:
    """Issue 25's target, on the heuristic estimator (the default): median over the judged files
    of each file's p95 at most 0.5%, of each file's max at most 3%."""
    rows = list(corpus_rows("heuristic"))
    if not rows:
        pytest.skip(SKIP)
    best = corpus_summary(rows)["best"]
    assert best.p95_pct is not None and best.max_pct is not None
    assert best.p95_pct <= TARGET_P95
    assert best.max_pct <= TARGET_MAX


def test_the_long_session_sample_keeps_its_reasoning_at_a_turn_boundary() -> None:
    """The bundled long-session sample (Claude Code 2.1.39, sonnet-4-5) keeps earlier turns'
    reasoning: request 138, the first turn boundary after 130 requests of reasoning, was predicted
    5,633 tokens short (4.74%) when the share taken off started from taking all of it."""
    from inspector.samples import sample_path

    tr = load(sample_path("long-session"))
    rep = accuracy(tr, "heuristic")
    row = next(r for r in rep.requests if r.request == 138)
    assert row.error_pct["delta"] < 0.5, row
    assert abs(row.predicted["delta"] - row.reported) < 600, row
    assert rep.modes["delta"].p95_pct is not None and rep.modes["delta"].p95_pct < 0.2


@pytest.mark.parametrize("estimator", ["heuristic", "tiktoken"])
def test_running_background_shells_are_priced(estimator: str) -> None:
    """thomasjmcgovern-fb36f7a7 leaves one to five background shells running from request 99 on;
    Claude Code sends a reminder for each with every request. Unmodelled, the 49 requests from 100
    on were predicted a median 382 (cl100k: 399) tokens short and the file's p95 was 0.535%
    (0.587%)."""
    import statistics

    path = CORPUS / "claude-code" / "thomasjmcgovern-fb36f7a7.jsonl"
    if not path.exists():
        pytest.skip(SKIP)
    rep = accuracy(load(path), estimator)
    late = [r.predicted["delta"] - r.reported for r in rep.requests if r.request >= 100 and r.after is None]
    assert len(late) == 49
    assert abs(statistics.median(late)) < 100, late
    p95 = rep.modes["delta"].p95_pct
    assert p95 is not None and p95 < 0.5


def test_worst_requests_name_what_was_added_before_each() -> None:
    path = CORPUS / "claude-code" / "pooknast-da0d9633.jsonl"
    if not path.exists():
        pytest.skip(SKIP)
    tr = load(path)
    rep = accuracy(tr)
    worst = worst_requests(tr, rep)
    assert len(worst) == 5
    errors = [m.error_pct for m in worst]
    assert errors == sorted(errors, reverse=True)
    assert errors[0] == rep.modes[rep.best].max_pct
    by_request = {m.request: m for m in worst}
    # request 14: a ToolSearch that loads a deferred tool's schema (not in the file)
    assert by_request[14].added == ["response: call ToolSearch", "user: result ToolSearch 56 chars"]


def test_calibrate_several_paths_a_row_per_file_and_the_summary(capsys: pytest.CaptureFixture[str]) -> None:
    import json
    import statistics

    from inspector.cli import main

    files = [
        FA812,
        CORPUS / "claude-code" / "pooknast-da0d9633.jsonl",
        CORPUS / "claude-code" / "chiphuyen-ba79134d.jsonl",
    ]
    if not all(p.exists() for p in files):
        pytest.skip(SKIP)
    assert main(["calibrate", *map(str, files), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [f["name"] for f in got["files"]] == [p.name for p in files]
    singles = [accuracy(load(p)) for p in files]
    for row, rep in zip(got["files"], singles, strict=True):
        assert row["best"] == rep.best and row["n"] == rep.modes[rep.best].n
        assert row["modes"]["baseline"]["p95_pct"] == rep.modes["baseline"].p95_pct
    for stat in ("median_pct", "p95_pct", "max_pct"):
        want = statistics.median(getattr(r.modes[r.best], stat) for r in singles)
        assert got["summary"]["best"][stat] == round(want, 4)
        want = statistics.median(getattr(r.modes["baseline_tiktoken"], stat) for r in singles)
        assert got["summary"]["baseline_tiktoken"][stat] == round(want, 4)
    assert got["summary"]["best"]["n"] == 3
    # the request after fa812's compaction is scored apart, pooled over the files
    assert got["kinds"]["after compaction"]["n"] == 1
    assert main(["calibrate", *map(str, files)]) == 0
    out = capsys.readouterr().out
    assert "summary (3 files)" in out and "after compaction" in out
    assert all(p.name[:20] in out.replace("\n", "") or p.name[:15] in out for p in files)


LROYSTACK = CORPUS / "claude-code-json-array" / "lroystack-24133cc4-chat.json"


@pytest.mark.parametrize("estimator", ["heuristic", "tiktoken"])
def test_a_prompt_rewritten_inside_a_tool_loop_strips_reasoning_there(estimator: str) -> None:
    """lroystack-24133cc4 request 33: inside a tool loop the cache read falls from 114,744 to
    30,968 tokens and the report is 2,881 below the prediction (the reasoning of the turn came
    off); at the next user turn, request 36, the read is what request 33 wrote. Taking 33's
    reasoning off at the next turn again predicted request 36 2,397 tokens short, and the share a
    turn takes off fell to 0.61, so the turns after were over-predicted (request 64 by 1,170)."""
    if not LROYSTACK.exists():
        pytest.skip(SKIP)
    rep = accuracy(load(LROYSTACK), estimator)
    rows = {r.request: r for r in rep.requests}
    err = {k: rows[k].predicted["delta"] - rows[k].reported for k in (33, 36, 64, 75)}
    assert err[33] > 2_000, err  # the request itself: its report is read after it
    assert abs(err[36]) < 300, err
    assert err[64] < 1_000 and err[75] < 450, err


def test_prefix_rewritten_reads_the_cache_read_after_the_request() -> None:
    from inspector.model import Request, Usage
    from inspector.tokens.calibration.requests import prefix_rewritten

    def req(k: int, read: int, at: str) -> Request:
        usage = Usage(input=10, cache_read=read, cache_write=500, output=20)
        return Request(index=k, usage=usage, timestamp=f"2025-09-17T16:{at}Z")

    before = req(32, 114_744, "41:54.216")
    assert prefix_rewritten(before, req(33, 30_968, "42:53.712"))
    assert not prefix_rewritten(before, req(33, 115_244, "42:53.712"))  # the prefix grew
    assert not prefix_rewritten(before, req(33, 0, "42:53.712"))  # nothing read: `prefix_changed`
    assert not prefix_rewritten(before, req(33, 30_968, "47:55.000"))  # the cache had lapsed
    other = msgspec.structs.replace(req(33, 30_968, "42:53.712"), model="claude-haiku-4-5")
    assert not prefix_rewritten(msgspec.structs.replace(before, model="claude-sonnet-4"), other)
