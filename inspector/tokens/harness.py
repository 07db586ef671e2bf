"""Each harness's own estimate of its context, the number it makes its TRIGGER decisions with.

A harness decides when to compact with its own numbers, errors included (DESIGN.md §2.5), so to
predict what it did, a policy names the estimator its harness uses (`Policy.trigger_estimator`)
and this module computes, for every request k of a transcript, what that harness would have
believed it was about to send at k, before k's report was known:

- `heuristic` (OpenCollab): its character heuristic over the ledger, per message 64 + characters/3
  (ASCII) + 1 per wide character (`HeuristicEstimator`). No report is used.
- `claude_code` (Claude Code `tokenCountWithEstimation`): the last report, that is request j's
  whole input (input + cache write + cache read) plus the output of j's response, plus a rough
  characters/4 (`Math.round(length / 4)`, per block) of every message appended after that
  response (tool results, user turns). Blocks are sized as Claude Code sizes them: text and
  thinking by their text, a tool call by its name + the JSON of its input, a tool result by its
  content, an image or document as 2,000. Before any report in a segment (the first request, or
  the first after a compaction) it is characters/4 of the whole ledger: the system prompt and
  tool schemas are not in it, as they are not in Claude Code's own figure.
  Claude Code holds each response's *final* output count in memory, but the transcript often
  keeps a stale streaming snapshot (`output_tokens` of 1, 19, 25 ... for a long answer). A
  recorded output below characters/4 of the response's own blocks is taken for such a snapshot
  and replaced by characters/4 of the blocks plus the session's median (output - characters/4)
  over the responses recorded with a final count before it (0 until there are 3 of those).
- `opencode` (`isOverflow`): the last step's tokens, input + output + cache read + cache write
  (`tokens.total`); nothing is added for what came after it. With no report yet, characters/4
  (opencode `Token.estimate`, `Math.round(length / 4)`) of the ledger.
- `codex` (`get_total_token_usage`): the last `last_token_usage.total_tokens` (input + output)
  plus bytes/4 (rounded up) of the items appended after the last model output; with no report,
  bytes/4 of the ledger.

`harness_estimate(transcript, policy, k)` is the number; `harness_estimates(transcript, policy)`
gives every request's `HarnessEstimate` with its parts (computed once per transcript and
estimator, in one pass). At the first request of a segment that a compaction began, `tokens` is
the estimate of the compacted ledger actually sent, and `before_compaction` the estimate of the
old ledger as it stood when the harness decided to compact (for Claude Code's auto compaction in
spotter `fa812bfe`: the recorded `preTokens`, 167,117, against 167,100 here).
"""

from __future__ import annotations

import bisect
import json
import math
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from inspector.model import (
    MediaBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Transcript,
)

from .heuristic import HeuristicEstimator

MEDIA_TOKENS = 2_000
"""Claude Code's rough size of an image or a document."""
STALE_MIN_SAMPLES = 3
"""Final-count responses needed before their median corrects a stale output snapshot."""
CACHE_SIZE = 8


@dataclass(frozen=True, slots=True)
class EstimatorSpec:
    """A harness estimator: its name, what it does, and how its trigger compares.

    `at_or_above`: the harness compacts when its figure reaches the line (Claude Code
    `tokens >= threshold`, opencode `count >= usable`, Codex `total >= limit`); OpenCollab's
    pipeline acts only when the estimate exceeds its trigger.
    """

    name: str
    description: str
    at_or_above: bool
    uses_reports: bool


ESTIMATORS: dict[str, EstimatorSpec] = {
    "heuristic": EstimatorSpec(
        "heuristic", "OpenCollab's character heuristic over the ledger (64 + chars/3 a message)", False, False
    ),
    "claude_code": EstimatorSpec(
        "claude_code",
        "Claude Code: last report + its response's output + chars/4 of the messages after it",
        True,
        True,
    ),
    "opencode": EstimatorSpec(
        "opencode",
        "opencode: the last step's tokens (input + output + cache); chars/4 before any",
        True,
        True,
    ),
    "codex": EstimatorSpec(
        "codex", "Codex: last total_tokens + bytes/4 of the items appended after it", True, True
    ),
}
"""Estimator name -> spec. `Policy.trigger_estimator` names one of these."""


def estimator_name(name: str) -> str:
    """The canonical estimator name (`Claude-Code` -> `claude_code`), or ValueError naming the known ones."""
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    if key not in ESTIMATORS:
        raise ValueError(f"unknown harness estimator {name!r} (known: {', '.join(ESTIMATORS)})")
    return key


class HasTriggerEstimator(Protocol):
    """What this module needs of a policy: the name of its harness estimator."""

    @property
    def trigger_estimator(self) -> str: ...


# -- the harnesses' rough sizes ------------------------------------------------------------------


def _round4(n: int) -> int:
    """JavaScript `Math.round(n / 4)` for n >= 0 (halves round up)."""
    return (n + 2) // 4


def _call_json(block: ToolCallBlock) -> str:
    args = block.arguments
    if isinstance(args, str):
        return args
    return json.dumps(args, separators=(",", ":"), ensure_ascii=False)


def claude_code_rough(message: Message) -> int:
    """Claude Code's `roughTokenCountEstimationForMessage`: characters/4 per block."""
    total = 0
    for b in message.blocks:
        if isinstance(b, TextBlock):
            total += _round4(len(b.text))
        elif isinstance(b, ReasoningBlock):
            total += _round4(b.signature_chars) if b.redacted else _round4(len(b.text))
        elif isinstance(b, ToolCallBlock):
            total += _round4(len(b.name) + len(_call_json(b)))
        elif isinstance(b, ToolResultBlock):
            total += _round4(len(b.content)) + MEDIA_TOKENS * b.media
        elif isinstance(b, MediaBlock):
            total += MEDIA_TOKENS
    return total


def chars4(message: Message) -> int:
    """opencode's `Token.estimate` (`Math.round(length / 4)`) over a message's texts."""
    total = 0
    for b in message.blocks:
        if isinstance(b, TextBlock | ReasoningBlock):
            total += _round4(len(b.text))
        elif isinstance(b, ToolCallBlock):
            total += _round4(len(b.name) + len(_call_json(b)))
        elif isinstance(b, ToolResultBlock):
            total += _round4(len(b.content))
    return total


def bytes4(message: Message) -> int:
    """Codex's `approx_token_count`: UTF-8 bytes / 4, rounded up, over a message's texts."""
    size = 0
    for b in message.blocks:
        if isinstance(b, TextBlock | ReasoningBlock):
            size += len(b.text.encode("utf-8"))
        elif isinstance(b, ToolCallBlock):
            size += len(b.name.encode("utf-8")) + len(_call_json(b).encode("utf-8"))
        elif isinstance(b, ToolResultBlock):
            size += len(b.content.encode("utf-8"))
    return -(-size // 4)


_HEURISTIC = HeuristicEstimator()


class _RoughFn(Protocol):
    def __call__(self, message: Message, /) -> int: ...


def _rough(name: str) -> _RoughFn:
    if name == "heuristic":
        return _HEURISTIC.message
    if name == "codex":
        return bytes4
    if name == "opencode":
        return chars4
    return claude_code_rough


# -- the estimates ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HarnessEstimate:
    """What a harness believed it was about to send at one request, and the parts of that figure.

    `tokens`: the estimate for the ledger sent at this request. `basis`: "report" (built on the
    last report) or "rough" (no report to build on: the whole ledger sized roughly). For a report
    basis: `report_request` and `report_context` (its whole input), `output` (the response's
    output as used; `output_recorded` as the transcript has it, `output_stale` when the recorded
    one was taken for a streaming snapshot) and `appended` (rough tokens of what came after it).
    `before_compaction`: at the first request of a segment a compaction began, the estimate of the
    old ledger when the harness decided (None elsewhere, and where the old segment ends with the
    compaction's own call, whose estimate is that request's `tokens`).
    """

    request: int
    estimator: str
    tokens: int
    basis: str
    report_request: int | None = None
    report_context: int | None = None
    output: int | None = None
    output_recorded: int | None = None
    output_stale: bool = False
    appended: int = 0
    before_compaction: int | None = None


def is_compaction_call(transcript: Transcript, k: int) -> bool:
    """Whether request k is a compaction's own summarization call, recorded as a request.

    opencode records the call whose response is the summary; Codex a report with no response.
    """
    req = transcript.request(k)
    if req.response_id is None:
        return req.usage is not None
    resp = transcript.response(k)
    return resp is not None and resp.is_summary


class _Pass:
    """One pass over a transcript's requests, computing every estimate."""

    def __init__(self, transcript: Transcript, name: str) -> None:
        self.tr = transcript
        self.name = name
        self.size = _rough(name)
        self._sizes: dict[str, int] = {}
        self._offsets: list[int] = []
        self._by_id = {m.id: m for m in transcript.messages}
        self._prefix: dict[int, tuple[Sequence[str], list[int]]] = {}

    def sized(self, mid: str) -> int:
        got = self._sizes.get(mid)
        if got is None:
            m = self._by_id.get(mid)
            got = self._sizes[mid] = self.size(m) if m is not None else 0
        return got

    def span(self, ids: Sequence[str], start: int, end: int) -> int:
        """The rough size of `ids[start:end]`, from prefix sums kept per segment."""
        pre = self._prefix.get(id(ids))
        if pre is None or pre[0] is not ids:
            pre = self._prefix[id(ids)] = (ids, [0])
        sums = pre[1]
        end = max(0, min(end, len(ids)))
        while len(sums) <= end:
            sums.append(sums[-1] + self.sized(ids[len(sums) - 1]))
        start = max(0, min(start, end))
        return sums[end] - sums[start]

    def response_pos(self, ids: Sequence[str], k: int) -> int | None:
        req = self.tr.request(k)
        if req.response_id is None:
            return None
        if req.ledger_len < len(ids) and ids[req.ledger_len] == req.response_id:
            return req.ledger_len
        try:
            return ids.index(req.response_id)
        except ValueError:
            return None

    def output_of(self, k: int) -> tuple[int, int, bool]:
        """(output used, output recorded, stale) of request k's response."""
        req = self.tr.request(k)
        assert req.usage is not None
        recorded = req.usage.output
        if self.name != "claude_code" or req.response_id is None:
            return recorded, recorded, False
        rough = self.sized(req.response_id)
        if recorded >= rough:
            return recorded, recorded, False
        offset = 0
        if len(self._offsets) >= STALE_MIN_SAMPLES:
            n = len(self._offsets)
            mid = n // 2
            offset = (
                self._offsets[mid] if n % 2 else math.floor((self._offsets[mid - 1] + self._offsets[mid]) / 2)
            )
        return max(recorded, rough + offset), recorded, True

    def learn(self, k: int) -> None:
        """After request k: a response recorded with its final output teaches the stale correction."""
        if self.name != "claude_code":
            return
        req = self.tr.request(k)
        if req.usage is None or req.response_id is None or is_compaction_call(self.tr, k):
            return
        rough = self.sized(req.response_id)
        if rough > 0 and req.usage.output >= rough:
            bisect.insort(self._offsets, req.usage.output - rough)

    def estimate(self, k: int, ids: Sequence[str], end: int, reports: list[int]) -> HarnessEstimate:
        """The estimate of sending `ids[:end]`, built on the last of `reports` (requests of this segment)."""
        if self.name == "heuristic" or not reports:
            return HarnessEstimate(k, self.name, self.span(ids, 0, end), "rough")
        j = reports[-1]
        req = self.tr.request(j)
        assert req.usage is not None
        pos = self.response_pos(ids, j)
        out, recorded, stale = self.output_of(j)
        appended = 0
        if self.name != "opencode":
            start = pos + 1 if pos is not None else req.ledger_len
            appended = self.span(ids, start, end)
        return HarnessEstimate(
            request=k,
            estimator=self.name,
            tokens=req.usage.context + out + appended,
            basis="report",
            report_request=j,
            report_context=req.usage.context,
            output=out,
            output_recorded=recorded,
            output_stale=stale,
            appended=appended,
        )

    def run(self) -> tuple[tuple[HarnessEstimate, ...], tuple[HarnessEstimate, ...]]:
        tr = self.tr
        out: list[HarnessEstimate] = []
        ends: list[HarnessEstimate] = []
        seg = -1
        reports: list[int] = []
        for req in tr.requests:
            k = req.index
            before: int | None = None
            if req.segment != seg:
                # every segment before this one has ended: the one left now, and any without requests
                for done in range(len(ends), req.segment):
                    old = tr.segments[done].message_ids
                    ends.append(self.estimate(k, old, len(old), reports if done == seg else []))
                    if done == seg and not is_compaction_call(tr, k - 1):
                        before = ends[-1].tokens
                seg = req.segment
                reports = []
            ids = tr.segments[seg].message_ids
            est = self.estimate(k, ids, req.ledger_len, reports)
            if before is not None:
                est = replace(est, before_compaction=before)
            out.append(est)
            if req.usage is not None and (req.response_id is not None or self.name == "opencode"):
                reports.append(k)
            self.learn(k)
        n = len(tr.requests) + 1
        while len(ends) < len(tr.segments):
            done = len(ends)
            ids = tr.segments[done].message_ids
            ends.append(self.estimate(n, ids, len(ids), reports if done == seg else []))
        return tuple(out), tuple(ends)


_Result = tuple[tuple["HarnessEstimate", ...], tuple["HarnessEstimate", ...]]
_CACHE: OrderedDict[tuple[int, str], tuple[weakref.ref[Transcript], int, int, _Result]] = OrderedDict()
"""(id(transcript), estimator) -> (a weak reference to the transcript, its request and message
counts when computed, the result). Weak, so a cached transcript is not kept alive."""


def _name_of(policy: HasTriggerEstimator | str) -> str:
    return estimator_name(policy if isinstance(policy, str) else policy.trigger_estimator)


def _computed(transcript: Transcript, policy: HasTriggerEstimator | str) -> _Result:
    name = _name_of(policy)
    key = (id(transcript), name)
    hit = _CACHE.get(key)
    if (
        hit is not None
        and hit[0]() is transcript
        and hit[1] == len(transcript.requests)
        and hit[2] == len(transcript.messages)
    ):
        _CACHE.move_to_end(key)
        return hit[3]
    result = _Pass(transcript, name).run()
    _CACHE[key] = (weakref.ref(transcript), len(transcript.requests), len(transcript.messages), result)
    _CACHE.move_to_end(key)
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return result


def harness_estimates(
    transcript: Transcript, policy: HasTriggerEstimator | str
) -> tuple[HarnessEstimate, ...]:
    """Every request's harness estimate (index 0 is request 1), under the policy's estimator.

    `policy` is a Policy (its `trigger_estimator` is used) or an estimator name. Computed in one
    pass and cached per transcript object and estimator; a transcript that grew (live) is
    computed again.
    """
    return _computed(transcript, policy)[0]


def segment_end_estimates(
    transcript: Transcript, policy: HasTriggerEstimator | str
) -> tuple[HarnessEstimate, ...]:
    """Per ledger segment: the harness's estimate of its whole ledger after its last request.

    For a segment a compaction ended, what the harness believed it held when it decided to
    compact (Claude Code's `preTokens`); for the last segment, what it would send next. Each
    `request` is the request that came next (len(requests) + 1 after the last one).
    """
    return _computed(transcript, policy)[1]


def harness_estimate_detail(
    transcript: Transcript, policy: HasTriggerEstimator | str, k: int
) -> HarnessEstimate:
    """Request k's (1-based) harness estimate with its parts."""
    transcript.request(k)  # IndexError for a request that does not exist
    return harness_estimates(transcript, policy)[k - 1]


def harness_estimate(transcript: Transcript, policy: HasTriggerEstimator | str, k: int) -> int:
    """The harness's own estimate of the context it would send at request k (1-based), before
    k's report is known, with the estimator the policy names (see the module docstring)."""
    return harness_estimate_detail(transcript, policy, k).tokens


CODEX_EFFECTIVE_SHARE = 0.95
"""Codex states `model_context_window` as 95% of the model's window (272,000 -> 258,400)."""


def harness_window(transcript: Transcript) -> int | None:
    """The window a harness computes its own thresholds from, where the transcript states one.

    Codex rollouts state the effective window (95% of the model's); Codex's auto-compact limit is
    90% of the model's window, so its thresholds start from stated / 0.95 (258,400 -> 272,000).
    Other transcripts: the window they state (or None).
    """
    if transcript.window is None:
        return None
    if transcript.format == "codex":
        return round(transcript.window / CODEX_EFFECTIVE_SHARE)
    return transcript.window


__all__ = [
    "ESTIMATORS",
    "EstimatorSpec",
    "HarnessEstimate",
    "HasTriggerEstimator",
    "bytes4",
    "chars4",
    "claude_code_rough",
    "estimator_name",
    "harness_estimate",
    "harness_estimate_detail",
    "harness_estimates",
    "harness_window",
    "is_compaction_call",
    "segment_end_estimates",
]
