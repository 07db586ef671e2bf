"""Calibration (ContextPressure): per-message token weights that add up to what the provider billed.

A provider reports one number per request: the whole input (Anthropic: input + cache write + cache
read, `Usage.context`). Calibration splits that number over what was sent: the fixed prompt
overhead the transcript does not store (`OVERHEAD_ID`, a pinned pseudo-message) plus every
message of `Transcript.ledger(k)`. At every request with usage the weights are integers that sum
exactly to `usage.context` (rounding remainders go, by largest remainder and then by position, to
the earliest messages).

Two modes, kept side by side so users can compare:

`proportional` (the seed). At each report every weight is re-apportioned in proportion to the
messages' local estimates (the overhead's local estimate is pinned at the first report: the
report minus the estimates of the first ledger). Between reports, unchanged messages keep their
weights and new ones start from their local estimate times the last report's scale.

`delta` (the default). Weights, once calibrated, stay put; the *difference* between consecutive
reports is attributed to the messages added in between, so an old weight is never smeared by a
new error. What a new message will cost is predicted by a linear cost model learned online, per
session, from those differences (recursive least squares with priors; an error far beyond the
model's own uncertainty, such as a hook's output the transcript does not store, gets a Cauchy
weight and teaches the model little):

    cost = r_text * text + r_thinking * thinking + r_call * tool_call + r_result * tool_result
         + (per tool: a ratio offset and a per-result extra) + c_chars * characters
         + c_lines * lines (of tool calls and results: content shape the base tokenizer misses)
         + c_media * media + c_sig * signature_chars + framing per block, message and request

where text/thinking/tool_call/tool_result are the base estimator's tokens of each kind of block
(`PRIORS`, `PRIOR_RATIO`: where each estimator usually stands before any report). The previous
response's own output tokens are known from its usage, but Claude Code often writes a stale
streaming snapshot (`output_tokens` of 1..25 for a long answer): a response's output is trusted
("final") when it is at least `FINAL_FRACTION` of the model's prediction of its visible blocks,
and then it costs that output plus framing; otherwise its blocks are sized by the model.
Reasoning is never sized by its signature bytes: with a final output its part is the output minus
the visible blocks (so capped by the output); otherwise the model's thinking ratio and signature
coefficient, both learned from the differences.

Reasoning from earlier turns: some models drop the thinking of previous turns from the context
(a new user turn strips it); newer ones keep it. Which one a session does is decided from the
evidence: at each turn boundary both hypotheses are scored against the report and the better so
far is used to predict.

Compaction: the first request of a new segment re-derives the segment's weights: preserved
messages keep theirs, the summary and other new messages are predicted by the model, and the
report's remainder is spread over the new messages (it includes what the harness re-injects, such
as recently read files). The overhead stays pinned. Cleared tool output (a `microcompact` event):
from the first request after it, the cleared results weigh what the model predicts for the
placeholder text.

Requests with no report (after the last one, or a transcript without usage) get the model's
predictions (plain local estimates when nothing was ever reported).
"""

from __future__ import annotations

import bisect
import gc
import json
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from enum import StrEnum
from itertools import repeat
from operator import itemgetter, mul, sub
from typing import Literal

from inspector.model import (
    EventKind,
    MediaBlock,
    Message,
    ReasoningBlock,
    RecordedEvent,
    Request,
    Role,
    Segment,
    Source,
    SourceKind,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Transcript,
)

from .base import Estimator

OVERHEAD_ID = "overhead"
OVERHEAD_TEXT = "[system prompt and tool schemas — not stored in the transcript]"
CLEARED_TEXT = "[Old tool result content cleared]"

Mode = Literal["proportional", "delta"]
MODES: tuple[Mode, ...] = ("proportional", "delta")

CHANGED_CACHE = 65_536
"""How many changed messages (truncated, cleared copies) a calibration remembers the features of."""

FINAL_FRACTION = 0.5
"""A response's reported output is trusted when it reaches this share of its predicted visible cost."""


@contextmanager
def _paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while a pass allocates many small objects (it frees few of
    them; collections over a large transcript would only rescan it). Afterwards what it built goes
    straight to the oldest generation (freeze then unfreeze moves objects without scanning; only
    when nothing else is frozen), so young collections do not rescan it either."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def overhead_message() -> Message:
    """The pinned pseudo-message standing for the system prompt and tool schemas."""
    return Message(
        id=OVERHEAD_ID,
        role=Role.SYSTEM,
        blocks=(TextBlock(text=OVERHEAD_TEXT),),
        source=Source.of(SourceKind.OVERHEAD),
    )


class Kind(StrEnum):
    """Kinds of content, each with its own learned ratio to the base estimate."""

    TEXT = "text"
    THINKING = "thinking"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"


Features = dict[str, float]
"""A sparse feature vector: feature name -> value."""

PRIORS: dict[str, tuple[float, float]] = {
    # name: (prior mean, prior standard deviation)
    "text": (1.0, 0.4),
    "thinking": (1.0, 0.6),
    "tool_call": (1.0, 0.4),
    "tool_result": (1.0, 0.4),
    "media": (800.0, 1500.0),
    "signature": (0.0, 0.05),
    "block": (6.0, 10.0),
    "message": (4.0, 10.0),
    "final": (6.0, 15.0),
    "request": (0.0, 30.0),
    "tool_result_chars": (0.0, 0.08),
    "tool_result_lines": (0.0, 3.0),
    "tool_call_chars": (0.0, 0.08),
    "tool_call_lines": (0.0, 3.0),
}
"""Before any report: ratios of 1 to the base estimate, a few tokens of framing, images ~800."""
TOOL_RATIO_PRIOR = (0.0, 0.3)
"""`result:<tool>`: how far one tool's results stray from the tool_result ratio."""
TOOL_EXTRA_PRIOR = (0.0, 100.0)
"""`results:<tool>`: tokens a tool's result costs beyond its text (framing, hook output)."""
NOISE_SD = 10.0
"""Typical unexplained tokens of one difference (harness reminders, tokenizer luck)."""
NOISE_SHARE = 0.03
"""... plus this share of the difference (tokenizer luck grows with size)."""
ROBUST_C = 3.0
"""Errors beyond this many standard deviations count less and less (Cauchy weights)."""
RATIO_BOUNDS = (0.2, 6.0)
KIND_NAMES = frozenset(k.value for k in Kind)


PRIOR_RATIO: dict[str, float] = {"heuristic": 0.9, "tiktoken": 1.15}
"""Where each base estimator usually stands against Claude's tokenizer before any report: the
heuristic counts characters/3 where text averages ~3.5 characters a token; cl100k splits ~15%
coarser. Only a starting point: the reports correct it within a few requests."""


def prior(name: str, ratio: float = 1.0) -> tuple[float, float]:
    got = PRIORS.get(name)
    if got is not None:
        return (got[0] * ratio, got[1]) if name in KIND_NAMES else got
    return TOOL_RATIO_PRIOR if name.startswith("result:") else TOOL_EXTRA_PRIOR


def _clamp(name: str, value: float) -> float:
    if name in KIND_NAMES:
        return min(max(value, RATIO_BOUNDS[0]), RATIO_BOUNDS[1])
    if name in ("signature", "media"):
        return max(value, 0.0)
    if name.startswith("result:"):
        return min(max(value, -0.8), 3.0)
    return value


def _bounds(name: str) -> tuple[float, float]:
    """(lo, hi) with `min(max(v, lo), hi) == _clamp(name, v)` for every float v (NaN included)."""
    if name in KIND_NAMES:
        return RATIO_BOUNDS
    if name in ("signature", "media"):
        return (0.0, math.inf)
    if name.startswith("result:"):
        return (-0.8, 3.0)
    return (-math.inf, math.inf)


def block_text(block: ToolCallBlock) -> str:
    args = (
        block.arguments
        if isinstance(block.arguments, str)
        else json.dumps(block.arguments, sort_keys=True, ensure_ascii=False)
    )
    return f"{block.name} {args}"


@dataclass(slots=True)
class Parts:
    """A message's content as features, in base-estimator tokens."""

    x: Features
    content: Features
    """Only what a response shows besides reasoning (no framing, no reasoning)."""
    human: bool
    """A user message that is not only tool results: it starts a new turn."""
    thinking: bool


def _texts_of(message: Message) -> list[str]:
    out: list[str] = []
    for b in message.blocks:
        if isinstance(b, TextBlock | ReasoningBlock):
            out.append(b.text)
        elif isinstance(b, ToolCallBlock):
            out.append(block_text(b))
        elif isinstance(b, ToolResultBlock):
            out.append(b.content)
    return out


def _add(x: Features, name: str, v: float) -> None:
    if v:
        x[name] = x.get(name, 0.0) + v


def parts_of(message: Message, sizes: Sequence[int], texts: Sequence[str] | None = None) -> Parts:
    """Parts of `message` given the base-estimator sizes of its texts (in `_texts_of` order).

    `texts`, when given, are the message's `_texts_of` (so tool calls are not serialized again)."""
    x: Features = {}
    it = iter(sizes)
    tx = iter(texts) if texts is not None else None
    thinking = False
    blocks = 0
    for b in message.blocks:
        blocks += 1
        if isinstance(b, TextBlock):
            _add(x, "text", next(it))
            if tx is not None:
                next(tx)
        elif isinstance(b, ReasoningBlock):
            thinking = True
            _add(x, "thinking", next(it))
            if tx is not None:
                next(tx)
            if b.signed or b.redacted:
                _add(x, "signature", b.signature_chars)
        elif isinstance(b, ToolCallBlock):
            _add(x, "tool_call", next(it))
            text = next(tx) if tx is not None else block_text(b)
            _add(x, "tool_call_chars", len(text))
            _add(x, "tool_call_lines", text.count("\\n") + text.count("\n"))
        elif isinstance(b, ToolResultBlock):
            n = next(it)
            if tx is not None:
                next(tx)
            tool = b.tool_name or "?"
            _add(x, "tool_result", n)
            _add(x, "tool_result_chars", len(b.content))
            _add(x, "tool_result_lines", b.content.count("\n"))
            _add(x, "result:" + tool, n)
            _add(x, "results:" + tool, 1)
            _add(x, "media", b.media)
        elif isinstance(b, MediaBlock):
            _add(x, "media", 1)
    content = {k: v for k, v in x.items() if k not in ("thinking", "signature")}
    x["block"] = float(blocks)
    x["message"] = 1.0
    human = message.role is Role.USER and not message.is_tool_result
    return Parts(x=x, content=content, human=human, thinking=thinking)


class Coefficients:
    """A frozen view of the cost model: feature name -> coefficient (clamped)."""

    def __init__(self, coef: dict[str, float] | None = None, ratio: float = 1.0) -> None:
        self._coef = coef if coef is not None else {}
        self._ratio = ratio

    def coef(self, name: str) -> float:
        got = self._coef.get(name)
        return got if got is not None else _clamp(name, prior(name, self._ratio)[0])

    def predict(self, x: Features) -> float:
        coef = self._coef
        try:
            # the same products, summed in the same order, at C speed (every name known)
            total: float = sum(map(mul, map(coef.__getitem__, x), x.values()))
            return total
        except KeyError:
            return sum(self.coef(n) * v for n, v in x.items())

    def kind_ratio(self, kind: Kind) -> float:
        return self.coef(kind.value)

    def as_dict(self) -> dict[str, float]:
        out = {n: _clamp(n, prior(n, self._ratio)[0]) for n in PRIORS}
        out.update(self._coef)
        return out


class CostModel(Coefficients):
    """Online ridge regression (recursive least squares) of report differences on content features."""

    def __init__(self, ratio: float = 1.0) -> None:
        super().__init__(ratio=ratio)
        self.index: dict[str, int] = {}
        self.names: list[str] = []
        self.theta: list[float] = []
        self.P: list[list[float]] = []
        """(prior precision + sum of w x x^T)^-1, in units of the noise variance."""
        self.bounds: list[tuple[float, float]] = []
        """Per coefficient: what `_clamp` keeps it within (-inf/inf where it does not)."""
        self.n = 0
        for name in PRIORS:
            self._ensure(name)

    def _ensure(self, name: str) -> int:
        i = self.index.get(name)
        if i is None:
            mean, sd = prior(name, self._ratio)
            i = len(self.names)
            self.index[name] = i
            self.names.append(name)
            self.theta.append(mean)
            for row in self.P:
                row.append(0.0)
            self.P.append([0.0] * i + [(sd / NOISE_SD) ** 2])
            self._coef[name] = _clamp(name, mean)
            self.bounds.append(_bounds(name))
        return i

    def snapshot(self) -> Coefficients:
        return Coefficients(dict(self._coef), self._ratio)

    def update(self, x: Features, y: float, robust: bool = True) -> None:
        """Learn from one observed difference `y` explained by features `x`.

        `robust=False` for a hard fact rather than a noisy difference (a report smaller than the
        messages it held, as estimated)."""
        nz = [(self._ensure(n), v) for n, v in x.items() if v]
        if not nz:
            return
        theta, P = self.theta, self.P
        err = y - sum(theta[i] * v for i, v in nz)
        # The same arithmetic as `[sum(row[i] * v for i, v in nz) for row in P]`, term for term and
        # in the same order, at C speed (itemgetter picks the columns, map multiplies).
        idx = [i for i, _ in nz]
        vals = [v for _, v in nz]
        if len(idx) == 1:
            j, v0 = idx[0], vals[0]
            px = [sum((row[j] * v0,)) for row in P]
        else:
            pick = itemgetter(*idx)
            px = [sum(map(mul, pick(row), vals)) for row in P]
        xpx = sum(v * px[i] for i, v in nz)
        # robust weight: an error far beyond what the model's own uncertainty and the noise allow
        # (a harness reminder, a hook's output) teaches the ratios little (Cauchy weights)
        noise = NOISE_SD + NOISE_SHARE * abs(y)
        z = abs(err) / (noise * math.sqrt(1.0 + xpx * (NOISE_SD / noise) ** 2))
        w = 1.0 / (1.0 + (z / ROBUST_C) ** 2) if robust else 1.0
        w *= (NOISE_SD / noise) ** 2
        denom = 1.0 / w + xpx
        coef, names, bounds = self._coef, self.names, self.bounds
        for i, p in enumerate(px):
            ki = p / denom
            if ki:
                theta[i] += ki * err
                # P[i] = [pij - ki * pj for pij, pj in zip(P[i], px)], at C speed
                P[i] = list(map(sub, P[i], map(mul, repeat(ki), px)))
                lo, hi = bounds[i]
                coef[names[i]] = min(max(theta[i], lo), hi)  # `_clamp`, without the call
        self.n += 1


@dataclass(slots=True)
class _Versions:
    """A weight that changes at some requests: weight from `at[i]` on is `value[i]`."""

    at: list[int] = field(default_factory=list)
    value: list[int] = field(default_factory=list)

    def set(self, k: int, v: int) -> None:
        if self.at and self.at[-1] == k:
            self.value[-1] = v
        else:
            self.at.append(k)
            self.value.append(v)

    def get(self, k: int) -> int | None:
        i = bisect.bisect_right(self.at, k) - 1
        return self.value[i] if i >= 0 else None

    @property
    def last(self) -> int:
        return self.value[-1] if self.value else 0


def apportion(total: int, shares: Sequence[float]) -> list[int]:
    """Integers proportional to `shares` that add up to `total` (largest remainder, ties to the first)."""
    n = len(shares)
    if n == 0:
        return []
    pos = [max(s, 0.0) for s in shares]
    s = sum(pos)
    if s <= 0:
        pos = [1.0] * n
        s = float(n)
    if total < 0:
        # negative totals only reach here for deficits; apportion the magnitude and negate
        return [-v for v in apportion(-total, pos)]
    raw = [total * p / s for p in pos]
    base = [math.floor(r) for r in raw]
    rest = total - sum(base)
    order = sorted(range(n), key=lambda i: (-(raw[i] - base[i]), i))
    for i in order[:rest]:
        base[i] += 1
    return base


class CalibratedEstimator:
    """An Estimator for the shaping pipeline at one request: calibrated weights for ledger messages.

    An unchanged ledger message (the very object, or an equal one) weighs its calibrated weight;
    a changed one (truncated, cleared, summarized by a layer) is sized from the base estimator
    by the ratio learned for its kind of content (the delta mode's cost model, the proportional
    mode's scale), never more than the original's weight when its text got shorter.
    """

    def __init__(self, calibration: Calibration, k: int, base: Estimator) -> None:
        self.name = f"calibrated-{calibration.mode}({base.name})"
        self._cal = calibration
        self._k = k
        self._base = base
        self._index = calibration.transcript._index()
        # Weights are looked up one message at a time where the calibration can (no dict of the
        # whole ledger per request); else the calibration's cached dict, shared and read only.
        lazy = calibration._lazy_positions(k)
        self._pos, self._len = lazy if lazy is not None else ({}, 0)
        self._weights = calibration._weights_at(k) if lazy is None else None

    def text(self, text: str) -> int:
        return self._cal.changed_text(self._k, text, self._base)

    def _weight(self, mid: str) -> int | None:
        """`Calibration.weights(k).get(mid)`: the weight of a ledger message (or the overhead)."""
        if self._weights is not None:
            return self._weights.get(mid)
        if mid != OVERHEAD_ID:
            p = self._pos.get(mid)
            if p is None or p >= self._len:
                return None
        return self._cal.weight_of(self._k, mid)

    def message(self, message: Message) -> int:
        if message.id == OVERHEAD_ID:
            return self._weight(OVERHEAD_ID) or 0
        # weights are kept for exactly the ledger's ids: a ledger message is the transcript's own object
        w = self._weight(message.id)
        orig = self._index.get(message.id) if w is not None else None
        if orig is not None and w is not None and (message is orig or message == orig):
            return w
        pred = self._cal.changed_message(self._k, message, self._base)
        if orig is not None and w is not None and self._cal._text_len(message) <= self._cal._text_len(orig):
            pred = min(pred, w)
        return pred


@dataclass(slots=True)
class _Step:
    """What calibration knows about one request."""

    predicted: int | None = None
    context: int = 0
    model: Coefficients | None = None
    report: int = 0
    """Proportional mode: the request whose report these weights derive from (0: none)."""
    scale: float = 1.0


class Calibration:
    """Per-request calibrated weights of a whole transcript (see the module docstring)."""

    def __init__(self, transcript: Transcript, estimator: Estimator, mode: Mode = "delta") -> None:
        if mode not in MODES:
            raise ValueError(f"unknown calibration mode {mode!r}; choose one of: {', '.join(MODES)}")
        self.transcript = transcript
        self.estimator = estimator
        self.mode: Mode = mode
        self._sizes: dict[str, list[int]] = {}
        self._parts: dict[str, Parts] = {}
        self._local: dict[str, int] = {}
        self._versions: dict[str, _Versions] = {}
        self._steps: list[_Step] = [_Step() for _ in transcript.requests]
        self._weights_cache: dict[int, dict[str, int]] = {}
        self._totals: dict[int, int] = {}
        self._positions: dict[int, tuple[Segment, dict[str, int] | None]] = {}
        """Request -> the sum of its ledger's weights (overhead included), where already known."""
        self._changes: dict[int, list[str]] = {}
        """Request -> ids whose weight was (re)set at it (for stepping the weights forward)."""
        self._models: list[Coefficients] | None = None
        self._changed: dict[int, tuple[Message, Estimator | None, Features | None, int]] = {}
        """id(message) -> (message, base, features, text length) of messages sized as changed."""
        self._spent: list[int] = []
        self._overhead_estimate = 0
        self._prefix: list[list[int]] = []
        self.strip_thinking = False
        """Whether this session drops earlier turns' reasoning (decided from the reports)."""
        self.first_report: int | None = next(
            (r.index for r in transcript.requests if r.usage is not None), None
        )
        with _paused_gc():
            self._run: _DeltaRun | None = None
            if mode == "delta":
                self._prefetch_sizes()
                self._run = _DeltaRun(self)
                self._run.run()
            else:
                self._prefetch_local()
                self._run_proportional()
            self._cumulative_spend()

    # -- sizes -------------------------------------------------------------------------------

    def extended(self, transcript: Transcript) -> Calibration | None:
        """The calibration of `transcript`, a later state of this one's (a file that grew: the same
        requests so far, whose ledgers only grew, more after them), going on from where this pass
        stopped instead of starting over; None when `transcript` does not simply extend this one
        (then calibrate it afresh). This calibration is left as it was."""
        old = self.transcript
        run = self._run
        n = len(old.requests)
        if (
            run is None
            or n == 0
            or len(transcript.requests) < n
            or len(transcript.segments) < len(old.segments)
        ):
            return None

        def key(r: Request) -> tuple[object, ...]:
            # not the output: the last response may still be streaming (it counts from the next request)
            return (r.index, r.segment, r.ledger_len, r.response_id, r.usage.context if r.usage else None)

        if any(
            key(a) != key(b)
            for a, b in zip(
                old.requests[-64:], transcript.requests[n - len(old.requests[-64:]) : n], strict=True
            )
        ):
            return None
        for a, b in zip(old.segments, transcript.segments, strict=False):
            if b.message_ids[: len(a.message_ids)] != a.message_ids:
                return None
        if [e for e in _micro_events(old) if e.after_request < n] != [
            e for e in _micro_events(transcript) if e.after_request < n
        ]:
            return None
        last = old.requests[-1]
        held = old.segments[last.segment].message_ids[: last.ledger_len]
        index = transcript._index()
        old_index = old._index()
        if any(index.get(mid) != old_index.get(mid) for mid in held[-32:]):
            return None
        new = Calibration.__new__(Calibration)
        new.__dict__.update(self.__dict__)
        new.transcript = transcript
        # sizes: messages not in the last ledger may have changed (a response still streaming)
        known = set(held)
        for seg in old.segments[: last.segment]:
            known.update(seg.message_ids)
        new._sizes = {mid: v for mid, v in self._sizes.items() if mid in known}
        new._parts = {mid: v for mid, v in self._parts.items() if mid in known}
        new._local = {mid: v for mid, v in self._local.items() if mid in known}
        new._prefetch_sizes([m for m in transcript.messages if m.id not in known])
        # weights set from here on are of the current segment's messages and the overhead
        new._versions = dict(self._versions)
        for mid in (OVERHEAD_ID, *transcript.segments[last.segment].message_ids):
            ver = new._versions.get(mid)
            if ver is not None:
                new._versions[mid] = _Versions(list(ver.at), list(ver.value))
        new._changes = dict(self._changes)
        new._steps = self._steps + [_Step() for _ in transcript.requests[n:]]
        new._weights_cache = {}
        new._totals = {}
        new._positions = {}
        new._models = None
        new._changed = {}
        new._spent = []
        new.first_report = next((r.index for r in transcript.requests if r.usage is not None), None)
        with _paused_gc():
            new._run = run.clone(new)
            new._run.run(start=n)
            new._cumulative_spend()
        return new

    def _prefetch_sizes(self, messages: Sequence[Message] | None = None) -> None:
        """Size every block once, in one batch when the estimator can batch (tiktoken)."""
        texts: list[str] = []
        owners: list[tuple[Message, int]] = []
        for m in self.transcript.messages if messages is None else messages:
            ts = _texts_of(m)
            owners.append((m, len(ts)))
            texts.extend(ts)
        batch = getattr(self.estimator, "texts", None)
        sizes = list(batch(texts)) if callable(batch) else [self.estimator.text(t) for t in texts]
        pos = 0
        for m, n in owners:
            mine = sizes[pos : pos + n]
            self._sizes[m.id] = mine
            # the last message with an id wins, as in `{m.id: m for m in messages}`
            self._parts[m.id] = parts_of(m, mine, texts[pos : pos + n])
            pos += n

    def _prefetch_local(self) -> None:
        msgs = self.transcript.messages
        batch = getattr(self.estimator, "messages", None)
        values = list(batch(msgs)) if callable(batch) else [self.estimator.message(m) for m in msgs]
        self._local = {m.id: int(v) for m, v in zip(msgs, values, strict=True)}

    def parts(self, message: Message) -> Parts:
        """The message's content by kind (cached by id)."""
        p = self._parts.get(message.id)
        if p is None:
            sizes = self._sizes.get(message.id)
            if sizes is None:
                sizes = [self.estimator.text(t) for t in _texts_of(message)]
            p = parts_of(message, sizes)
            self._parts[message.id] = p
        return p

    def local(self, message: Message) -> int:
        """The plain local estimate of a message (cached by id)."""
        v = self._local.get(message.id)
        if v is None:
            v = self._local[message.id] = self.estimator.message(message)
        return v

    def _set(self, mid: str, k: int, v: int) -> None:
        ver = self._versions.get(mid)
        if ver is None:
            ver = self._versions[mid] = _Versions()
        ver.set(k, v)
        changes = self._changes.get(k)
        if changes is None:
            self._changes[k] = [mid]
        else:
            changes.append(mid)

    def _cumulative_spend(self) -> None:
        total = 0
        seen: set[str] = set()
        for r in self.transcript.requests:
            key = r.response_id or f"#{r.index}"
            if r.usage is not None and key not in seen:
                seen.add(key)
                total += r.usage.spent
            self._spent.append(total)

    # -- proportional mode -------------------------------------------------------------------

    def _run_proportional(self) -> None:
        tr = self.transcript
        self._prefix = []
        for seg in tr.segments:
            pre = [0]
            for mid in seg.message_ids:
                pre.append(pre[-1] + self.local(tr.message(mid)))
            self._prefix.append(pre)
        e_ov: int | None = None
        last: tuple[int, int, float, int] | None = None  # (request, context, scale, segment)
        for req in tr.requests:
            k = req.index
            step = self._steps[k - 1]
            pre = self._prefix[req.segment]
            est = pre[req.ledger_len]
            if last is not None and last[3] == req.segment:
                j, c_j, s_j, _ = last
                pred = c_j + s_j * (est - pre[tr.request(j).ledger_len])
                step.predicted = round(pred)
            elif last is not None:
                s_j = last[2]
                pred = s_j * ((e_ov or 0) + est)
                step.predicted = round(pred)
            else:
                pred = float(est)
            if req.usage is None:
                step.report = last[0] if last is not None else 0
                step.scale = last[2] if last is not None else 1.0
                step.context = round(pred)
                continue
            c = req.usage.context
            if e_ov is None:
                e_ov = max(0, c - est)
                self._overhead_estimate = e_ov
            total_est = e_ov + est
            s = c / total_est if total_est > 0 else 1.0
            last = (k, c, s, req.segment)
            step.report, step.scale, step.context = k, s, c

    def _weights_proportional(self, k: int) -> dict[str, int]:
        tr = self.transcript
        step = self._steps[k - 1]
        ledger = tr.ledger(k)
        j = step.report
        if j == 0:
            out = {OVERHEAD_ID: 0}
            out.update({m.id: self.local(m) for m in ledger})
            return out
        rj = tr.request(j)
        e_ov = self._overhead_estimate
        if rj.segment != tr.request(k).segment:
            s = step.scale
            out = {OVERHEAD_ID: round(s * e_ov)}
            out.update({m.id: round(s * self.local(m)) for m in ledger})
            return out
        n = rj.ledger_len
        assert rj.usage is not None
        shares = [float(e_ov)] + [float(self.local(m)) for m in ledger[:n]]
        ints = apportion(rj.usage.context, shares)
        out = {OVERHEAD_ID: ints[0]}
        for m, w in zip(ledger[:n], ints[1:], strict=True):
            out[m.id] = w
        s = step.scale
        for m in ledger[n:]:
            out[m.id] = round(s * self.local(m))
        return out

    # -- queries -----------------------------------------------------------------------------

    def _check(self, k: int) -> None:
        if not 1 <= k <= len(self._steps):
            raise IndexError(f"request {k} is out of range 1..{len(self._steps)}")

    def weights(self, k: int) -> dict[str, int]:
        """Message id -> calibrated weight for the ledger at request k, `OVERHEAD_ID` included.

        At a request with usage they sum exactly to `usage.context`.
        """
        return dict(self._weights_at(k))

    def _weights_at(self, k: int) -> dict[str, int]:
        """`weights(k)`, cached and shared: callers must not change it."""
        self._check(k)
        cached = self._weights_cache.get(k)
        if cached is None:
            if self.mode == "proportional":
                cached = self._weights_proportional(k)
            elif self.first_report is None or k < self.first_report:
                # nothing reported yet: plain local estimates, no overhead known
                cached = {OVERHEAD_ID: 0}
                cached.update({m.id: self.local(m) for m in self.transcript.ledger(k)})
            else:
                cached = self._weights_stepped(k)
                if cached is None:
                    ov = self._versions.get(OVERHEAD_ID)
                    cached = {OVERHEAD_ID: (ov.get(k) if ov is not None else None) or 0}
                    for m in self.transcript.ledger(k):
                        ver = self._versions.get(m.id)
                        v = ver.get(k) if ver is not None else None
                        cached[m.id] = v if v is not None else self.local(m)
            if len(self._weights_cache) >= 64:
                # keep the previous request's weights: stepping forward builds on them
                prev = self._weights_cache.get(k - 1)
                prev_total = self._totals.get(k - 1)
                self._weights_cache.clear()
                self._totals = {k: self._totals[k]} if k in self._totals else {}
                if prev is not None:
                    self._weights_cache[k - 1] = prev
                    if prev_total is not None:
                        self._totals[k - 1] = prev_total
            self._weights_cache[k] = cached
        return cached

    def ledger_total(self, k: int) -> int:
        """The sum of the weights of request k's ledger, overhead included, one term per message
        (what summing `CalibratedEstimator(self, k).message` over the overhead and the ledger gives).

        Stepping forward it is kept up to date from the request before: the weights (re)set at k
        and the messages added since, no pass over the ledger."""
        self._check(k)
        total = self._totals.get(k)
        if total is None:
            total = self._total_stepped(k)
        if total is None:
            weights = self._weights_at(k)
            total = self._totals.get(k)
            if total is None:
                tr = self.transcript
                req = tr.request(k)
                ids = tr.segments[req.segment].message_ids[: req.ledger_len]
                total = weights.get(OVERHEAD_ID, 0) + sum(map(weights.__getitem__, ids))
        self._totals[k] = total
        return total

    def _total_stepped(self, k: int) -> int | None:
        if k < 2 or self._lazy_positions(k) is None or self._lazy_positions(k - 1) is None:
            return None
        prev = self._totals.get(k - 1)
        if prev is None:
            return None
        tr = self.transcript
        req, before = tr.requests[k - 1], tr.requests[k - 2]
        if req.segment != before.segment or req.ledger_len < before.ledger_len:
            return None
        pos = self._segment_positions(req.segment)
        assert pos is not None
        total = prev
        weight = self.weight_of
        for mid in set(self._changes.get(k, ())):
            if mid == OVERHEAD_ID or pos.get(mid, before.ledger_len) < before.ledger_len:
                total += weight(k, mid) - weight(k - 1, mid)
        for mid in tr.segments[req.segment].message_ids[before.ledger_len : req.ledger_len]:
            total += weight(k, mid)
        return total

    def _segment_positions(self, segment: int) -> dict[str, int] | None:
        """Message id -> position in the segment; None when an id is there twice (or is the
        overhead's): then weights are only read from whole dicts."""
        seg = self.transcript.segments[segment]
        hit = self._positions.get(segment)
        if hit is not None and hit[0] is seg:
            return hit[1]
        ids = seg.message_ids
        pos = {mid: i for i, mid in enumerate(ids)}
        found = pos if len(pos) == len(ids) and OVERHEAD_ID not in pos else None
        self._positions[segment] = (seg, found)
        return found

    def _lazy_positions(self, k: int) -> tuple[dict[str, int], int] | None:
        """(segment positions, ledger length) when request k's weights can be read one by one."""
        if self.mode != "delta" or self.first_report is None or k < self.first_report:
            return None
        req = self.transcript.requests[k - 1]
        pos = self._segment_positions(req.segment)
        return (pos, req.ledger_len) if pos is not None else None

    def weight_of(self, k: int, mid: str) -> int:
        """The weight at request k of a message of its ledger (or of the overhead), as in
        `weights(k)`, without building the dict (delta mode, from the first report on)."""
        if self._lazy_positions(k) is None:
            return self._weights_at(k)[mid]
        ver = self._versions.get(mid)
        v = ver.get(k) if ver is not None else None
        if mid == OVERHEAD_ID:
            return v or 0
        return v if v is not None else self.local(self.transcript._index()[mid])

    def _weights_stepped(self, k: int) -> dict[str, int] | None:
        """The weights at k from those at k-1 (when cached and the ledger only grew): only the
        weights (re)set at k and the messages added since change. None when that does not apply."""
        if k - 1 < (self.first_report or 1):
            return None
        prev = self._weights_cache.get(k - 1)
        if prev is None:
            return None
        tr = self.transcript
        req, before = tr.requests[k - 1], tr.requests[k - 2]
        if req.segment != before.segment or req.ledger_len < before.ledger_len:
            return None
        out = dict(prev)
        total = self._totals.get(k - 1)
        if len(prev) != before.ledger_len + 1:
            total = None  # an id twice in the ledger: the sum is not the sum of the dict
        versions = self._versions
        for mid in self._changes.get(k, ()):
            if mid in out:
                v = versions[mid].get(k)
                if v is not None:
                    if total is not None:
                        total += v - out[mid]
                    out[mid] = v
        if req.ledger_len > before.ledger_len:
            by_id = tr._index()
            for mid in tr.segments[req.segment].message_ids[before.ledger_len : req.ledger_len]:
                ver = versions.get(mid)
                v = ver.get(k) if ver is not None else None
                w = v if v is not None else self.local(by_id[mid])
                if total is not None:
                    if mid in out:
                        total = None
                    else:
                        total += w
                out[mid] = w
        if total is not None:
            self._totals[k] = total
        return out

    def predicted(self, k: int) -> int | None:
        """The input predicted for request k from the weights before it (None before any report)."""
        self._check(k)
        return self._steps[k - 1].predicted

    def context(self, k: int) -> int:
        """The calibrated total input at request k (the report itself where there is one)."""
        self._check(k)
        if self.transcript.requests[k - 1].usage is None:
            return sum(self.weights(k).values())
        return self._steps[k - 1].context

    def overhead(self, k: int) -> int:
        """The weight of the pinned overhead pseudo-message at request k."""
        return self.weights(k)[OVERHEAD_ID]

    def spent(self, k: int) -> int:
        """Cumulative tokens spent through request k: every response's input + output, once each."""
        self._check(k)
        return self._spent[k - 1]

    @property
    def spend(self) -> list[int]:
        """Cumulative spend per request (index 0 is request 1); keeps counting across compactions."""
        return list(self._spent)

    def model_at(self, k: int) -> Coefficients:
        """The delta mode's cost model as learned through request k."""
        self._check(k)
        models = self._models
        if models is None:
            last = Coefficients(ratio=PRIOR_RATIO.get(self.estimator.name, 1.0))
            models = []
            for step in self._steps:
                if step.model is not None:
                    last = step.model
                models.append(last)
            self._models = models
        return models[k - 1]

    def ratios(self, k: int) -> dict[str, float]:
        """What was learned by request k: the cost model's coefficients, or the proportional scale."""
        if self.mode == "proportional":
            return {"scale": round(self._steps[k - 1].scale, 4)}
        return {name: round(v, 4) for name, v in self.model_at(k).as_dict().items()}

    def changed_text(self, k: int, text: str, base: Estimator) -> int:
        if self.mode == "proportional":
            return round(self._steps[k - 1].scale * base.text(text))
        return max(0, round(self.model_at(k).kind_ratio(Kind.TEXT) * base.text(text)))

    def changed_message(self, k: int, message: Message, base: Estimator) -> int:
        """What a message that is not (or no longer) as in the ledger costs at request k."""
        if self.mode == "proportional":
            return round(self._steps[k - 1].scale * base.message(message))
        x = self._changed_entry(message, base)[2]
        assert x is not None
        return max(0, round(self.model_at(k).predict(x)))

    def _changed_entry(
        self, message: Message, base: Estimator | None
    ) -> tuple[Message, Estimator | None, Features | None, int]:
        """(message, base, features by `base`, text length), cached by message object."""
        hit = self._changed.get(id(message))
        if hit is not None and hit[0] is message and (base is None or hit[1] is base):
            return hit
        texts = _texts_of(message)
        x = None
        if base is not None:
            x = parts_of(message, [base.text(t) for t in texts], texts).x
        entry = (message, base, x, sum(len(t) for t in texts))
        if len(self._changed) >= CHANGED_CACHE:
            self._changed.clear()
        self._changed[id(message)] = entry
        return entry

    def _text_len(self, message: Message) -> int:
        """Characters of a message's texts (cached by message object)."""
        hit = self._changed.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[3]
        return self._changed_entry(message, None)[3]

    def estimator_at(self, k: int, base: Estimator) -> CalibratedEstimator:
        """An Estimator for shaping request k: calibrated weights for unchanged ledger messages."""
        self._check(k)
        return CalibratedEstimator(self, k, base)


@dataclass(slots=True)
class _Pending:
    """A message whose weight is provisional until the next report."""

    message: Message
    cost: float
    known: float
    """The part of `cost` that is known (a final response's output)."""
    x: Features
    """Its features for learning (none for the known part)."""
    think: float


def _outputs(transcript: Transcript) -> dict[str, int]:
    return {
        r.response_id: r.usage.output
        for r in transcript.requests
        if r.response_id is not None and r.usage is not None
    }


def _micro_events(transcript: Transcript) -> list[RecordedEvent]:
    return sorted(
        (e for e in transcript.events if e.kind is EventKind.MICROCOMPACT and e.cleared_tool_ids),
        key=lambda e: e.after_request,
    )


@dataclass(slots=True)
class _RunState:
    """Where the delta pass stands between two requests (so a longer transcript can go on)."""

    mi: int = 0
    seg: int = -1
    ids: tuple[str, ...] = ()
    pos: dict[str, int] = field(default_factory=dict)
    seen: int = 0
    last_report: int | None = None
    pending: dict[str, _Pending] = field(default_factory=dict)
    removed: float = 0.0
    xadj: Features = field(default_factory=dict)
    stripped_to: int = 0


class _DeltaRun:
    """The delta mode's single pass over the requests."""

    def __init__(self, cal: Calibration) -> None:
        self.cal = cal
        self.model = CostModel(PRIOR_RATIO.get(cal.estimator.name, 1.0))
        self.overhead: int | None = None
        self.cur: dict[str, int] = {}
        """Current weight of every message of the current segment's ledger."""
        self.total = 0
        """The sum of `cur`."""
        self.think: dict[str, float] = {}
        self.think_known: set[str] = set()
        """Messages whose reasoning part was derived from a known output (not from features)."""
        """The part of a message's weight that is reasoning still counted in the context."""
        self.cleared: set[str] = set()
        self.cleared_calls: set[str] = set()
        self.score_keep = 0.0
        self.score_strip = 0.0
        self.outputs = _outputs(cal.transcript)
        self.state = _RunState()

    # -- the model's view of one message ---------------------------------------------------

    def predict(self, m: Message) -> _Pending:
        """Predicted cost of `m` as sent, with its known part, learning features and reasoning part."""
        model = self.model
        p = self.cal.parts(m)
        if m.id in self.cleared:
            cx = self._cleared_x(m)
            return _Pending(m, model.predict(cx), 0.0, cx, 0.0)
        out = self.outputs.get(m.id) if m.role is Role.ASSISTANT else None
        if out:
            visible = model.predict(p.content)
            if out >= FINAL_FRACTION * visible:
                fx: Features = {"block": p.x["block"], "message": 1.0, "final": 1.0}
                think = max(0.0, out - visible) if p.thinking else 0.0
                return _Pending(m, out + model.predict(fx), float(out), fx, think)
        x = dict(p.x)
        think = 0.0
        if p.thinking:
            think = model.coef("thinking") * x.get("thinking", 0.0) + model.coef("signature") * x.get(
                "signature", 0.0
            )
            if out and think > out and out >= FINAL_FRACTION * think:
                think = float(out)  # reasoning never costs more than the output that produced it
        return _Pending(m, model.predict(x), 0.0, x, think)

    def _cleared_x(self, m: Message) -> Features:
        blocks = [
            b.model_copy(update={"content": CLEARED_TEXT, "media": 0})
            if isinstance(b, ToolResultBlock) and b.call_id in self.cleared_calls
            else b
            for b in m.blocks
        ]
        copy = m.model_copy(update={"blocks": tuple(blocks)})
        sizes = [self.cal.estimator.text(t) for t in _texts_of(copy)]
        return parts_of(copy, sizes).x

    # -- the pass ----------------------------------------------------------------------------

    def _put(self, mid: str, w: int, k: int | None = None) -> None:
        """Set a message's current weight (and record it from request k on, if given)."""
        self.total += w - self.cur.get(mid, 0)
        self.cur[mid] = w
        if k is not None:
            self.cal._set(mid, k, w)

    def run(self, start: int = 0) -> None:
        """Requests `start` (0-based) onward; the pass's state is kept, so a longer transcript can
        go on from where this one stopped (`Calibration.extended`)."""
        cal = self.cal
        tr = cal.transcript
        by_id = tr._index()
        micro = _micro_events(tr)
        st = self.state
        mi = st.mi
        seg = st.seg
        ids: tuple[str, ...] = st.ids
        pos: dict[str, int] = st.pos
        seen = st.seen  # ledger length at the previous request
        last_report: int | None = st.last_report  # context of the last report in this segment
        pending: dict[str, _Pending] = st.pending
        removed = st.removed  # tokens taken off calibrated weights since the last report
        xadj: Features = st.xadj  # features of model-sized content taken off since the last report
        stripped_to = st.stripped_to  # ledger position before which reasoning has been stripped
        if start and seg >= 0:
            # the segment may have grown since: its ids and their positions
            ids = tr.segments[seg].message_ids
            if len(ids) != len(pos):
                pos = {mid: i for i, mid in enumerate(ids)}
        for req in tr.requests[start:] if start else tr.requests:
            k = req.index
            step = cal._steps[k - 1]
            new_segment = req.segment != seg
            if new_segment:
                seg = req.segment
                ids = tr.segments[seg].message_ids
                pos = {mid: i for i, mid in enumerate(ids)}
                keep = {
                    mid: w for mid, w in self.cur.items() if pos.get(mid, req.ledger_len) < req.ledger_len
                }
                self.cur = keep
                self.total = sum(keep.values())
                self.think = {mid: t for mid, t in self.think.items() if mid in keep}
                pending = {}
                removed = 0.0
                xadj = {}
                last_report = None
                seen = 0
                stripped_to = 0
            added = [by_id[mid] for mid in ids[seen : req.ledger_len]]
            before = seen
            seen = max(seen, req.ledger_len)
            # tool output the harness cleared before this request
            while mi < len(micro) and micro[mi].after_request < k:
                self.cleared_calls.update(micro[mi].cleared_tool_ids)
                mi += 1
                for mid in ids[:before]:
                    m = by_id[mid]
                    if m.id in self.cleared or not any(
                        isinstance(b, ToolResultBlock) and b.call_id in self.cleared_calls for b in m.blocks
                    ):
                        continue
                    self.cleared.add(m.id)
                    self.think.pop(m.id, None)
                    if m.id in pending:
                        pending[m.id] = self.predict(m)
                        self._put(m.id, round(pending[m.id].cost), k)
                    else:
                        new_w = max(0, round(self.model.predict(self._cleared_x(m))))
                        removed += self.cur.get(m.id, 0) - new_w
                        self._put(m.id, new_w, k)
            for m in added:
                if m.id in self.cur:
                    continue  # preserved across a compaction: keeps its weight
                pm = self.predict(m)
                pending[m.id] = pm
                self._put(m.id, round(pm.cost))
                if pm.think > 0:
                    self.think[m.id] = pm.think
                    if pm.known:
                        self.think_known.add(m.id)
            # reasoning of earlier turns: a new user turn may strip it
            human_at = -1
            if not new_segment:
                for m in reversed(added):
                    if cal.parts(m).human:
                        human_at = pos[m.id]
                        break
            strip_ids = (
                [mid for mid, t in self.think.items() if t > 0 and stripped_to <= pos[mid] < human_at]
                if human_at > 0
                else []
            )
            strippable = sum(self.think[mid] for mid in strip_ids)
            ov = self.overhead or 0
            keep_total = ov + self.total
            strip_now = strippable > 0 and self.score_strip < self.score_keep
            if self.overhead is not None:
                step.predicted = round(keep_total - (strippable if strip_now else 0.0))
            if req.usage is None:
                if strip_now:
                    removed += self._strip(k, strip_ids, pending, xadj)
                    stripped_to = human_at
                for mid in pending:
                    cal._set(mid, k, self.cur[mid])
                cal._set(OVERHEAD_ID, k, ov)
                step.context = ov + self.total
                continue
            context = req.usage.context
            if strippable > 0:
                self.score_keep += abs(context - keep_total)
                self.score_strip += abs(context - (keep_total - strippable))
                if self.score_strip < self.score_keep:
                    removed += self._strip(k, strip_ids, pending, xadj)
                    stripped_to = human_at
            if last_report is not None and pending:
                x = dict(xadj)
                known = 0.0
                for pm in pending.values():
                    known += pm.known
                    for name, v in pm.x.items():
                        _add(x, name, v)
                x["request"] = 1.0
                self.model.update(x, context - last_report + removed - known)
            if last_report is None:
                self._segment_start(k, context, pending)
            else:
                self._attribute(k, context, pending)
            pending = {}
            removed = 0.0
            xadj = {}
            last_report = context
            step.context = context
            step.model = self.model.snapshot()
        cal.strip_thinking = self.score_strip < self.score_keep
        self.state = _RunState(
            mi=mi,
            seg=seg,
            ids=ids,
            pos=pos,
            seen=seen,
            last_report=last_report,
            pending=pending,
            removed=removed,
            xadj=xadj,
            stripped_to=stripped_to,
        )

    def clone(self, cal: Calibration) -> _DeltaRun:
        """A copy of this pass's state for `cal` (a calibration of a longer transcript), sharing
        nothing that going on would change."""
        run = _DeltaRun.__new__(_DeltaRun)
        run.cal = cal
        model = CostModel.__new__(CostModel)
        model._coef = dict(self.model._coef)
        model._ratio = self.model._ratio
        model.index = dict(self.model.index)
        model.names = list(self.model.names)
        model.theta = list(self.model.theta)
        model.P = [list(row) for row in self.model.P]
        model.bounds = list(self.model.bounds)
        model.n = self.model.n
        run.model = model
        run.overhead = self.overhead
        run.cur = dict(self.cur)
        run.total = self.total
        run.think = dict(self.think)
        run.think_known = set(self.think_known)
        run.cleared = set(self.cleared)
        run.cleared_calls = set(self.cleared_calls)
        run.score_keep = self.score_keep
        run.score_strip = self.score_strip
        run.outputs = _outputs(cal.transcript)
        st = self.state
        run.state = _RunState(
            mi=st.mi,
            seg=st.seg,
            ids=st.ids,
            pos=st.pos,
            seen=st.seen,
            last_report=st.last_report,
            pending={mid: replace(pm, x=dict(pm.x)) for mid, pm in st.pending.items()},
            removed=st.removed,
            xadj=dict(st.xadj),
            stripped_to=st.stripped_to,
        )
        return run

    def _strip(self, k: int, ids: list[str], pending: dict[str, _Pending], xadj: Features) -> float:
        """Drop the reasoning of `ids` from their weights.

        Returns the tokens that came off as known amounts (a final response's reasoning is its
        output minus its visible blocks); reasoning that was sized by the model comes off as
        features instead (added to `xadj`, negated), so the differences keep teaching the model
        what reasoning costs.
        """
        off = 0.0
        for mid in ids:
            t = self.think.pop(mid, 0.0)
            m = self.cal.transcript.message(mid)
            p = self.cal.parts(m)
            if mid in pending:
                pm = pending[mid]
                pm.cost = max(0.0, pm.cost - t)
                if pm.known:
                    # a final response without its reasoning: sized by its visible blocks
                    pm.known = 0.0
                    pm.x = dict(p.content)
                    pm.x["block"] = p.x["block"]
                    pm.x["message"] = 1.0
                else:
                    pm.x.pop("thinking", None)
                    pm.x.pop("signature", None)
                self._put(mid, round(pm.cost))
            else:
                w = self.cur[mid]
                nw = max(0, w - round(t))
                self._put(mid, nw, k)
                if mid in self.think_known:
                    off += w - nw
                else:
                    _add(xadj, "thinking", -p.x.get("thinking", 0.0))
                    _add(xadj, "signature", -p.x.get("signature", 0.0))
            self.think_known.discard(mid)
        return off

    def _segment_start(self, k: int, context: int, pending: dict[str, _Pending]) -> None:
        """First report of a segment (or of the transcript): pin the overhead, spread the rest."""
        new = list(pending.values())
        fixed = self.total - sum(self.cur[pm.message.id] for pm in new)
        if self.overhead is None:
            predicted = sum(pm.cost for pm in new)
            self.overhead = max(0, context - fixed - round(predicted))
            if predicted > context - fixed and new:
                # the report cannot even hold the messages as estimated: that teaches the ratios
                x: Features = {"request": 1.0}
                for pm in new:
                    for name, v in pm.x.items():
                        _add(x, name, v)
                self.model.update(x, context - fixed - sum(pm.known for pm in new), robust=False)
                for pm in new:
                    pm.cost = self.predict(pm.message).cost
        rest = context - self.overhead - fixed
        if rest < 0 or (not new and rest):
            self.overhead = max(0, self.overhead + rest)
            rest = context - self.overhead - fixed
        self.cal._set(OVERHEAD_ID, k, self.overhead)
        if rest < 0:
            # even without overhead the preserved messages weigh more than the report: scale them
            self._spread(k, 0, new)
            self._take_from_old(k, -rest, set(pending))
            return
        self._spread(k, rest, new)

    def _attribute(self, k: int, context: int, pending: dict[str, _Pending]) -> None:
        """A report after another: the difference goes to what was added since (old weights stay)."""
        ov = self.overhead or 0
        new = list(pending.values())
        fixed = ov + self.total - sum(self.cur[pm.message.id] for pm in new)
        rest = context - fixed
        if not new:
            # nothing was added, yet the input changed: something the transcript does not store
            self.overhead = max(0, ov + rest)
            self.cal._set(OVERHEAD_ID, k, self.overhead)
            if ov + rest < 0:
                self._take_from_old(k, -(ov + rest), set())
            return
        if rest < 0:
            # more went away than was added: new messages weigh nothing, the rest comes off old ones
            self._spread(k, 0, new)
            self._take_from_old(k, -rest, set(pending))
            return
        self._spread(k, rest, new)

    def _spread(self, k: int, total: int, new: list[_Pending]) -> None:
        """Give `new` integer weights adding up to `total`: predictions plus a share of the error.

        The error goes to the uncertain part of each prediction (a final response's output is
        known), and never takes a weight below zero.
        """
        if not new:
            return
        err = total - sum(pm.cost for pm in new)
        unc = [max(pm.cost - pm.known, 0.0) + 1.0 for pm in new]
        target = [max(pm.cost, 0.0) for pm in new]
        for _ in range(len(new) + 1):
            live = [i for i in range(len(new)) if target[i] > 0 or err > 0]
            su = sum(unc[i] for i in live)
            if su <= 0:
                break
            nt = list(target)
            for i in live:
                nt[i] = target[i] + err * unc[i] / su
            neg = [i for i in live if nt[i] < 0]
            if not neg:
                target = nt
                break
            for i in neg:
                target[i] = 0.0
            err = total - sum(target)
        ints = apportion(total, target)
        for pm, w in zip(new, ints, strict=True):
            mid = pm.message.id
            if pm.cost > 0 and mid in self.think:
                self.think[mid] = min(self.think[mid] * w / pm.cost, float(w))
            self._put(mid, w, k)

    def _take_from_old(self, k: int, short: int, skip: set[str]) -> None:
        """Take `short` tokens off the calibrated weights of messages not in `skip`, then the overhead."""
        olds = [(mid, w) for mid, w in self.cur.items() if mid not in skip]
        take = apportion(min(short, sum(w for _, w in olds)), [float(w) for _, w in olds])
        for (mid, w), t in zip(olds, take, strict=True):
            if t:
                self._put(mid, w - t, k)
        left = short - sum(take)
        if left > 0:
            self.overhead = max(0, (self.overhead or 0) - left)
            self.cal._set(OVERHEAD_ID, k, self.overhead)


def calibrate(transcript: Transcript, estimator: Estimator, mode: Mode = "delta") -> Calibration:
    """Calibrate every request of `transcript` against its reported usage (see the module docstring)."""
    return Calibration(transcript, estimator, mode)
