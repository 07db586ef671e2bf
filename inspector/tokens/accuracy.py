"""How well calibration predicts what the provider reports (docs/DESIGN.md §3, "report the accuracy").

For each request k > 1 with usage whose previous request k-1 also has usage and belongs to the
same ledger segment, every mode predicts k's input from what it knew before report k, and the
absolute error is taken in percent of the reported input:

- `baseline`: the last reported input plus characters/4 of what was added to the ledger since
  (the serialized messages, the previous response included) - Claude Code's own between-calls
  estimate;
- `baseline_tiktoken`: the same with tiktoken (cl100k) tokens of the serialized messages;
- `proportional` and `delta`: `Calibration.predicted(k)` of each calibration mode.

Requests of three kinds are scored but kept out of the modes' figures, each kind in its own row
(`AccuracyReport.kinds`), so a user sees which kind of request the model gets wrong:

- `after compaction`: the first request of a new ledger segment. A baseline has no report of that
  ledger to build on (only the calibration modes predict it: the overhead plus fresh estimates of
  the summary, without what the harness re-injects);
- `after model switch`: the first request made on another model than the request before (a Skill
  or a Task on another model: another tokenizer, another system prompt; nothing in the text says
  what it costs);
- `after prompt change`: a request that read nothing from the prompt cache although the one
  before did, within the cache's 5-minute life: the system prompt or the tool schemas changed
  (an MCP server came or went), and what they now hold is not in the transcript;
- `after API error`: the first request after a failed model call (an `api_error` event): a retry
  whose cache and reminders may differ from the failed call's.

`best` names the better of the calibration modes on the usual requests (lower p95, then max, then
median), never a baseline.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence

from msgspec import Struct, field

from inspector.model import EventKind, Message, Request, Transcript

from .base import serialize
from .calibration import MODES, model_switched, prefix_changed

BASELINES = ("baseline", "baseline_tiktoken")
ALL_MODES = (*BASELINES, *MODES)


AFTER_COMPACTION = "after compaction"
AFTER_MODEL_SWITCH = "after model switch"
AFTER_API_ERROR = "after API error"
AFTER_PROMPT_CHANGE = "after prompt change"
KINDS = (AFTER_COMPACTION, AFTER_MODEL_SWITCH, AFTER_PROMPT_CHANGE, AFTER_API_ERROR)
"""The kinds of request scored in rows of their own (in order of precedence)."""


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
    after: str | None = None
    """The kind of request this is (`KINDS`), None for a usual one."""
    predicted: dict[str, int] = field(default_factory=dict)
    error_pct: dict[str, float] = field(default_factory=dict)


class AccuracyReport(Struct, kw_only=True):
    estimator: str = "heuristic"
    modes: dict[str, ModeAccuracy] = field(default_factory=dict)
    best: str = "delta"
    requests: list[RequestAccuracy] = field(default_factory=list)
    kinds: dict[str, dict[str, ModeAccuracy]] = field(default_factory=dict)
    """Per kind of request kept out of `modes` (`KINDS`, those the transcript has): each mode's
    errors on them (the modes that predict them)."""


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


def request_kinds(transcript: Transcript) -> dict[int, str]:
    """Request index -> its kind (`KINDS`) for the requests scored in rows of their own."""
    out: dict[int, str] = {}
    errors = {e.after_request + 1 for e in transcript.events if e.kind is EventKind.API_ERROR}
    for prev, req in itertools.pairwise(transcript.requests):
        if req.segment != prev.segment:
            out[req.index] = AFTER_COMPACTION
        elif model_switched(prev, req):
            out[req.index] = AFTER_MODEL_SWITCH
        elif prefix_changed(prev, req):
            out[req.index] = AFTER_PROMPT_CHANGE
        elif req.index in errors:
            out[req.index] = AFTER_API_ERROR
    return out


def _added(transcript: Transcript, prev: Request, req: Request) -> Sequence[Message]:
    """The messages of `req`'s ledger past `prev`'s (same segment): sliced from the segment's
    messages, not from a copy of the whole ledger per request (quadratic in a long segment)."""
    whole = transcript.segment_messages(req.segment)
    if whole is None:
        return transcript.ledger_tuple(req.index)[prev.ledger_len :]
    return whole[prev.ledger_len : req.ledger_len]


def accuracy(transcript: Transcript, estimator_name: str = "heuristic") -> AccuracyReport:
    """Prediction accuracy of the two baselines and the two calibration modes, side by side."""
    from . import get_estimator
    from .tiktoken_estimator import FRAMING, TiktokenEstimator

    estimator = get_estimator(estimator_name)
    # every message serialized once: the proportional mode's heuristic estimates and the
    # baselines read the same texts
    serialized = [serialize(m) for m in transcript.messages]
    from .stored import calibration  # (the delta one restored where the transcript's cache entry holds it)

    cals = {mode: calibration(transcript, estimator, mode, serialized) for mode in MODES}
    tik = estimator if isinstance(estimator, TiktokenEstimator) else TiktokenEstimator()
    errors: dict[str, list[float]] = {m: [] for m in ALL_MODES}
    by_kind: dict[str, dict[str, list[float]]] = {}
    kinds = request_kinds(transcript)
    after = 0
    rows: list[RequestAccuracy] = []
    reqs = transcript.requests
    pairs = [
        (prev, req)
        for prev, req in itertools.pairwise(reqs)
        if req.usage is not None and prev.usage is not None and req.usage.context > 0
    ]
    # the messages each request added, tokenized in one batch (a batch per request costs more)
    added = {req.index: _added(transcript, prev, req) for prev, req in pairs if req.segment == prev.segment}
    text_of = {id(m): t for m, t in zip(transcript.messages, serialized, strict=True)}
    added_texts = {
        k: [t if (t := text_of.get(id(m))) is not None else serialize(m) for m in msgs]
        for k, msgs in added.items()
    }
    # each distinct text once (a file read again, a reminder repeated: the same text, the same count)
    first: dict[str, Message] = {}
    for k, texts in added_texts.items():
        for m, t in zip(added[k], texts, strict=True):
            first.setdefault(t, m)
    unique = list(first)
    if tik is estimator:
        # the proportional mode sized every message with this estimator already (its cache holds
        # FRAMING + the tokens of each serialized message): read them back, not tokenized again
        counts = [v - FRAMING for v in tik.messages(list(first.values()))]
    else:
        counts = tik.texts(unique)
    size_of = dict(zip(unique, counts, strict=True))
    predictions = {mode: cal.predictions() for mode, cal in cals.items()}
    for prev, req in pairs:
        assert req.usage is not None and prev.usage is not None
        k = req.index
        reported = req.usage.context
        kind = kinds.get(k)
        predicted: dict[str, int] = {}
        if req.segment == prev.segment:
            texts = added_texts[k]
            predicted["baseline"] = prev.usage.context + round(sum(len(t) for t in texts) / 4)
            predicted["baseline_tiktoken"] = prev.usage.context + sum([size_of[t] for t in texts])
        for mode in MODES:
            p = predictions[mode][k - 1]
            if p is not None:
                predicted[mode] = p
        err = {m: round(abs(p - reported) / reported * 100, 4) for m, p in predicted.items()}
        if kind is None:
            for name, e in err.items():
                errors[name].append(e)
        else:
            after += kind == AFTER_COMPACTION
            got = by_kind.setdefault(kind, {})
            for name, e in err.items():
                got.setdefault(name, []).append(e)
        rows.append(
            RequestAccuracy(
                request=k,
                reported=reported,
                after_compaction=kind == AFTER_COMPACTION,
                after=kind,
                predicted=predicted,
                error_pct=err,
            )
        )
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
    kind_stats = {
        kind: {m: _stats(e, 0) for m, e in by_kind[kind].items()} for kind in KINDS if kind in by_kind
    }
    return AccuracyReport(estimator=estimator.name, modes=modes, best=best, requests=rows, kinds=kind_stats)


def _triple(s: ModeAccuracy) -> tuple[float | None, float | None, float | None]:
    return (s.median_pct, s.p95_pct, s.max_pct)


class CorpusRow(Struct, kw_only=True):
    """One file's row of a corpus table: every mode's errors on its usual requests, and the best
    mode's on each kind of request kept apart (`KINDS`)."""

    name: str
    estimator: str
    n: int
    """Usual requests scored (the same for every mode)."""
    best: str
    modes: dict[str, ModeAccuracy] = field(default_factory=dict)
    kinds: dict[str, ModeAccuracy] = field(default_factory=dict)
    kind_errors: dict[str, list[float]] = field(default_factory=dict)
    """The best mode's error on each request of each kind (for pooling over files)."""

    @property
    def best_stats(self) -> tuple[float | None, float | None, float | None]:
        return _triple(self.modes[self.best])

    @property
    def baseline(self) -> tuple[float | None, float | None, float | None]:
        return _triple(self.modes["baseline"])

    @property
    def tiktoken(self) -> tuple[float | None, float | None, float | None]:
        return _triple(self.modes["baseline_tiktoken"])

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "name": self.name,
            "estimator": self.estimator,
            "n": self.n,
            "best": self.best,
        }
        for key in ("best_mode", *BASELINES):
            stats = self.modes[self.best if key == "best_mode" else key]
            out[key] = {"median_pct": stats.median_pct, "p95_pct": stats.p95_pct, "max_pct": stats.max_pct}
        return out


class CorpusReport(Struct, kw_only=True):
    """`calibrate` over several files: a row per file and the summary row."""

    estimator: str
    files: list[CorpusRow] = field(default_factory=list)
    summary: dict[str, ModeAccuracy] = field(default_factory=dict)
    """"best" (each file's best mode) and each baseline: the median over files of each file's
    median, p95 and max (`n`: the files)."""
    kinds: dict[str, ModeAccuracy] = field(default_factory=dict)
    """Per kind of request kept apart: the best mode's errors on every such request of every file,
    pooled (`n`: the requests)."""


def file_row(transcript: Transcript, estimator_name: str = "heuristic", name: str = "") -> CorpusRow:
    """`accuracy()` of one transcript as a corpus-table row."""
    return row_of(accuracy(transcript, estimator_name), name)


def row_of(report: AccuracyReport, name: str) -> CorpusRow:
    best = report.best
    kind_errors: dict[str, list[float]] = {}
    for r in report.requests:
        if r.after is not None and best in r.error_pct:
            kind_errors.setdefault(r.after, []).append(r.error_pct[best])
    return CorpusRow(
        name=name,
        estimator=report.estimator,
        n=report.modes[best].n,
        best=best,
        modes=dict(report.modes),
        kinds={kind: stats[best] for kind, stats in report.kinds.items() if best in stats},
        kind_errors=kind_errors,
    )


def corpus_summary(rows: list[CorpusRow]) -> dict[str, ModeAccuracy]:
    """The summary row: per column (each file's best mode, each baseline), the median over files
    of each file's median, p95 and max (files with no scored request left out)."""
    out: dict[str, ModeAccuracy] = {}
    for key in ("best", *BASELINES):
        stats = [r.modes[r.best] if key == "best" else r.modes[key] for r in rows]
        cols: list[float | None] = []
        for attr in ("median_pct", "p95_pct", "max_pct"):
            vals = [v for s in stats if (v := getattr(s, attr)) is not None]
            cols.append(round(statistics.median(vals), 4) if vals else None)
        out[key] = ModeAccuracy(
            median_pct=cols[0], p95_pct=cols[1], max_pct=cols[2], n=sum(1 for s in stats if s.n)
        )
    return out


def corpus_report(rows: list[CorpusRow], estimator: str) -> CorpusReport:
    pooled: dict[str, list[float]] = {}
    for r in rows:
        for kind, errs in r.kind_errors.items():
            pooled.setdefault(kind, []).extend(errs)
    return CorpusReport(
        estimator=estimator,
        files=rows,
        summary=corpus_summary(rows),
        kinds={kind: _stats(pooled[kind], 0) for kind in KINDS if kind in pooled},
    )


class Miss(Struct, kw_only=True):
    """One badly predicted request and what was added to the context before it."""

    request: int
    reported: int
    predicted: int
    error_pct: float
    after: str | None = None
    added: list[str] = field(default_factory=list)
    """One line per message added since the request before (role, blocks, tools, characters)."""


def describe(message: Message) -> str:
    """A message in one line: who sent it and what it holds (tool names, characters per kind)."""
    from inspector.model import ReasoningBlock, Role, TextBlock, ToolCallBlock, ToolResultBlock

    parts: list[str] = []
    for b in message.blocks:
        if isinstance(b, TextBlock):
            parts.append(f"text {len(b.text):,} chars")
        elif isinstance(b, ReasoningBlock):
            parts.append(f"thinking {len(b.text):,} chars")
        elif isinstance(b, ToolCallBlock):
            parts.append(f"call {b.name}")
        elif isinstance(b, ToolResultBlock):
            err = " (error)" if b.is_error else ""
            parts.append(f"result {b.tool_name or '?'} {len(b.content):,} chars{err}")
        else:
            parts.append(type(b).__name__.removesuffix("Block").lower())
    who = {Role.ASSISTANT: "response", Role.USER: "user", Role.SYSTEM: "system", Role.TOOL: "tool"}[message.role]
    if message.is_meta:
        who += " (harness)"
    return f"{who}: {', '.join(parts) or 'empty'}"


def worst_requests(
    transcript: Transcript, report: AccuracyReport, mode: str | None = None, n: int = 5
) -> list[Miss]:
    """The `n` requests `mode` (default: the report's best) predicts worst, worst first, each with
    what was added before it (nothing listed after a compaction: a new ledger)."""
    mode = mode or report.best
    rows = sorted(
        (r for r in report.requests if mode in r.predicted),
        key=lambda r: (-r.error_pct[mode], r.request),
    )[:n]
    out = []
    for r in rows:
        req, prev = transcript.request(r.request), transcript.request(r.request - 1)
        added = transcript.ledger(r.request)[prev.ledger_len :] if req.segment == prev.segment else []
        out.append(
            Miss(
                request=r.request,
                reported=r.reported,
                predicted=r.predicted[mode],
                error_pct=r.error_pct[mode],
                after=r.after,
                added=[describe(m) for m in added],
            )
        )
    return out
