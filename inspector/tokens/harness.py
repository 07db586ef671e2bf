"""Each harness's own estimate of its context, the number it makes its TRIGGER decisions with.

A harness decides when to compact with its own numbers, errors included (docs/DESIGN.md §2.5), so to
predict what it did, a policy names the estimator its harness uses (`Policy.trigger_estimator`)
and this module computes, for every request k of a transcript, what that harness would have
believed it was about to send at k, before k's report was known:

- `heuristic` (OpenCollab `estimate_request_message_tokens`): over the ledger as OpenCollab sends
  it, per chat message 64 + a third of the characters of its compact JSON (sorted keys; a wide
  character counts 1), as docs/notes/opencollab.md §1.1 has it (`opencollab_message_tokens`). No report
  is used. (The general `heuristic` estimator of `inspector.tokens` sizes a plainer text: on the
  bundled OpenCollab run it came 8-9% under the figures OpenCollab recorded.)
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
- `claude_code_usage` (Claude Code 1.0.x and 2.0.x): the last report's whole input plus its
  response's output (with the stale-snapshot correction above), nothing for the messages after
  it: the 1.0.34 bundle sums the last real response's usage alone (chunks.94.mjs:674-690), and the
  corpus agrees (1.0.113: `preTokens` 155,241 = 155,084 + 157 with a tool result and a user turn
  after that response; 2.0.22: 157,932 = 157,134 + 798, less than what followed). Which of the
  two a Claude Code transcript is estimated with follows its recorded version
  (`estimator_for`, `inspector.harness_rules`).
- `opencode` (`isOverflow`): the last step's tokens, input + output + cache read + cache write
  (`tokens.total`); nothing is added for what came after it. With no report yet, characters/4
  (opencode `Token.estimate`, `Math.round(length / 4)`) of the ledger.
- `codex` (`get_total_token_usage`): the last `last_token_usage.total_tokens` (input + output)
  plus bytes/4 (rounded up) of the items appended after the last model output; with no report,
  bytes/4 of the ledger.

`harness_estimate(transcript, policy, k)` is the number; `harness_estimates(transcript, policy)`
gives every request's `HarnessEstimate` with its parts, `harness_tokens(transcript, policy)` the
numbers alone (computed once per transcript and estimator, in one pass). At the first request of
a segment that a compaction began, `tokens` is the estimate of the compacted ledger actually
sent, and `before_compaction` the estimate of the old ledger as it stood when the harness decided
to compact (for Claude Code's auto compactions in the corpus, against the recorded `preTokens`:
2.1.39 spotter `fa812bfe` 167,117 for 167,117; 2.0.22 157,834 for 157,932; 1.0.113 155,409 for
155,431 and 155,241 for 155,241).
"""

from __future__ import annotations

import heapq
import json
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from operator import itemgetter
from typing import Any, Protocol

import orjson
from msgspec import Struct

from inspector.harness_rules import FORMAT_HARNESS, recorded_version, rule_for
from inspector.harnesses import HARNESSES, HarnessId, harness_id
from inspector.model import (
    Block,
    MediaBlock,
    Message,
    ReasoningBlock,
    Request,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Transcript,
)

from .base import compact_json

MEDIA_TOKENS = 2_000
"""Claude Code's rough size of an image or a document."""
STALE_MIN_SAMPLES = 3
"""Final-count responses needed before their median corrects a stale output snapshot."""
CACHE_SIZE = 8


class EstimatorSpec(Struct, frozen=True):
    """A harness estimator: its name, what it does, and how its trigger compares.

    `at_or_above`: the harness compacts when its figure reaches the line (Claude Code
    `tokens >= threshold`, opencode `count >= usable`, Codex `total >= limit`); OpenCollab's
    pipeline acts only when the estimate exceeds its trigger.
    """

    name: str
    description: str
    at_or_above: bool
    uses_reports: bool
    harness: str
    """The harness that decides with it, as users name it ("Claude Code")."""
    format: str
    """The transcript format that harness writes (`Transcript.format`)."""

    def over(self, value: int, trigger: int) -> bool:
        """Whether the harness's figure `value` is over its trigger line, as it compares them."""
        return value >= trigger if self.at_or_above else value > trigger


def _harness(harness: HarnessId) -> tuple[str, str]:
    """The label and the format of `harness` (`EstimatorSpec.harness`, `.format`)."""
    h = HARNESSES[harness]
    return h.label, h.format


ESTIMATORS: dict[str, EstimatorSpec] = {
    spec.name: spec
    for spec in (
        EstimatorSpec(
            "heuristic",
            "OpenCollab's character heuristic over the ledger (64 + chars/3 of each message's JSON)",
            False,
            False,
            *_harness("opencollab"),
        ),
        EstimatorSpec(
            "claude_code",
            "Claude Code: last report + its response's output + chars/4 of the messages after it",
            True,
            True,
            *_harness("claude-code"),
        ),
        EstimatorSpec(
            "claude_code_usage",
            "Claude Code 1.0/2.0: the last response's usage (input + cache + output) alone",
            True,
            True,
            *_harness("claude-code"),
        ),
        EstimatorSpec(
            "opencode",
            "opencode: the last step's tokens (input + output + cache); chars/4 before any",
            True,
            True,
            *_harness("opencode"),
        ),
        EstimatorSpec(
            "codex",
            "Codex: last total_tokens + bytes/4 of the items appended after it",
            True,
            True,
            *_harness("codex"),
        ),
    )
}
"""Estimator name -> spec. `Policy.trigger_estimator` names one of these."""


def estimator_name(name: str) -> str:
    """The canonical estimator name (`Claude-Code` -> `claude_code`), or ValueError naming the known ones."""
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    if key not in ESTIMATORS:
        try:  # a harness by any of its spellings: its own estimator ("claude" -> claude_code)
            return HARNESSES[harness_id(name)].estimator
        except ValueError:
            pass
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


_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
"""`json.dumps(value, separators=(",", ":"), ensure_ascii=False)`, without building an encoder per call."""
_ENCODE_SPACED = json.JSONEncoder(ensure_ascii=False).encode
"""`json.dumps(value, ensure_ascii=False)`, the same way."""


def _call_json(block: ToolCallBlock) -> str:
    args = block.arguments
    if isinstance(args, str):
        return args
    return _ENCODE(args)


def _call_chars(block: ToolCallBlock) -> int:
    """`len(_call_json(block))`, mostly without Python's json encoder."""
    args = block.arguments
    if isinstance(args, str):
        return len(args)
    compact = compact_json(args)
    return len(_ENCODE(args)) if compact is None else compact.chars


def _call_bytes(block: ToolCallBlock) -> int:
    """`len(_call_json(block).encode("utf-8"))`."""
    args = block.arguments
    if isinstance(args, str):
        return len(args.encode("utf-8"))
    compact = compact_json(args)
    return len(_ENCODE(args).encode("utf-8")) if compact is None else compact.nbytes


def _claude_code_block(b: Block) -> int:
    if isinstance(b, TextBlock):
        return _round4(len(b.text))
    if isinstance(b, ReasoningBlock):
        return _round4(b.signature_chars) if b.redacted else _round4(len(b.text))
    if isinstance(b, ToolCallBlock):
        return _round4(len(b.name) + _call_chars(b))
    if isinstance(b, ToolResultBlock):
        return _round4(len(b.content)) + MEDIA_TOKENS * b.media
    if isinstance(b, MediaBlock):
        return MEDIA_TOKENS
    return 0


def claude_code_rough(message: Message) -> int:
    """Claude Code's `roughTokenCountEstimationForMessage`: characters/4 per block."""
    total = 0
    for b in message.blocks:
        # the common blocks by exact type, inline; the rest (and any subclass) one by one
        if type(b) is ToolResultBlock:
            total += (len(b.content) + 2) // 4 + MEDIA_TOKENS * b.media
        elif type(b) is ToolCallBlock:
            total += (len(b.name) + _call_chars(b) + 2) // 4
        elif type(b) is TextBlock:
            total += (len(b.text) + 2) // 4
        else:
            total += _claude_code_block(b)
    return total


def chars4(message: Message) -> int:
    """opencode's `Token.estimate` (`Math.round(length / 4)`) over a message's texts."""
    total = 0
    for b in message.blocks:
        if isinstance(b, TextBlock | ReasoningBlock):
            total += _round4(len(b.text))
        elif isinstance(b, ToolCallBlock):
            total += _round4(len(b.name) + _call_chars(b))
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
            size += len(b.name.encode("utf-8")) + _call_bytes(b)
        elif isinstance(b, ToolResultBlock):
            size += len(b.content.encode("utf-8"))
    return -(-size // 4)


OPENCOLLAB_MESSAGE_OVERHEAD = 64
"""OpenCollab's tokens a message costs beside its JSON (`estimate_request_message_tokens`)."""


def opencollab_text_tokens(text: str) -> int:
    """OpenCollab `estimate_tokens`: `max(1, (n - wide) // 3 + wide)`, n characters, `wide` the
    UTF-8 bytes beyond one a character (at most n)."""
    n = len(text)
    if text.isascii():
        return max(1, n // 3)
    return _opencollab_tokens(n, len(text.encode("utf-8", "surrogatepass")))


def _opencollab_tokens(chars: int, size: int) -> int:
    """`opencollab_text_tokens` of a text of `chars` characters and `size` UTF-8 bytes."""
    wide = min(chars, size - chars)
    return max(1, (chars - wide) // 3 + wide)


def _compact_json_tokens(body: dict[str, Any], chars: int = 0, size: int = 0) -> int:
    """`opencollab_text_tokens(json.dumps(body, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False))`, written by orjson where it can (`body` holds strings, None, lists and
    dicts only: orjson escapes them as json does); json where orjson refuses (a lone surrogate).
    `chars` and `size` (UTF-8 bytes): what strings left out of `body` (written empty) add to it."""
    try:
        out = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError: not UTF-8
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return _opencollab_tokens(len(text) + chars, len(text.encode("utf-8", "surrogatepass")) + size)
    n = len(out) if out.isascii() else len(out.decode("utf-8"))
    return _opencollab_tokens(n + chars, len(out) + size)


def _chat_messages(message: Message) -> list[dict[str, Any]]:
    """The message as OpenCollab sends it (chat-completions form), with the fields its estimator
    reads: one `tool` message per tool result, else one message with its role, text (`content`,
    null for an assistant message of calls alone), reasoning text (`reasoning_content`) and calls
    (`tool_calls`, their arguments as JSON text)."""
    results = [b for b in message.blocks if isinstance(b, ToolResultBlock)]
    if results and len(results) == sum(1 for b in message.blocks if not isinstance(b, MediaBlock)):
        return [_tool_message(r) for r in results]
    texts = [b.text for b in message.blocks if isinstance(b, TextBlock)]
    calls = [b for b in message.blocks if isinstance(b, ToolCallBlock)]
    reasoning = [b.text for b in message.blocks if isinstance(b, ReasoningBlock) and b.text]
    return [_chat_body(message, texts, reasoning, [_call_message(c, _call_json_spaced(c)) for c in calls])]


def _chat_body(
    message: Message, texts: list[str], reasoning: list[str], calls: list[dict[str, Any]]
) -> dict[str, Any]:
    """The chat-completions message of `message` that is not only tool results: its role, text
    (`content`, null for an assistant message of calls alone), reasoning text and calls."""
    body: dict[str, Any] = {
        "role": message.role.value,
        "content": "\n".join(texts) if texts or not calls else None,
    }
    if reasoning:
        body["reasoning_content"] = "\n".join(reasoning)
    if calls:
        body["tool_calls"] = calls
    return body


def _tool_message(r: ToolResultBlock) -> dict[str, Any]:
    """A tool result as OpenCollab sends it: a `tool` message."""
    d: dict[str, Any] = {"role": "tool", "content": r.content, "tool_call_id": r.call_id}
    if r.tool_name:
        d["name"] = r.tool_name
    return d


def _call_message(c: ToolCallBlock, arguments: str) -> dict[str, Any]:
    """A tool call as OpenCollab sends it, with `arguments` as its arguments' text."""
    return {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments}}


def _call_json_spaced(c: ToolCallBlock) -> str:
    """A call's arguments as OpenCollab writes them: `json.dumps(arguments, ensure_ascii=False)`."""
    return c.arguments if isinstance(c.arguments, str) else _ENCODE_SPACED(c.arguments)


def opencollab_message_tokens(message: Message) -> int:
    """OpenCollab `estimate_request_message_tokens` of a message: per chat message it sends, 64 +
    `estimate_tokens` of its compact JSON with sorted keys (docs/notes/opencollab.md §1.1). Encrypted
    reasoning, which it sends back in `response_items`, adds its characters as ASCII.

    What `_chat_messages` makes, sized in one walk over the blocks; a call's arguments (a dict
    orjson writes as json does) by their sizes (`compact_json`), without writing their text."""
    blocks = message.blocks
    if len(blocks) == 1 and isinstance(blocks[0], ToolResultBlock):  # (most messages)
        return OPENCOLLAB_MESSAGE_OVERHEAD + _compact_json_tokens(_tool_message(blocks[0]))
    results: list[ToolResultBlock] = []
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    reasoning: list[str] = []
    others = 0
    sealed = 0
    chars = size = 0  # what the arguments left out of `calls` add
    for b in blocks:
        if isinstance(b, ToolResultBlock):
            results.append(b)
            continue
        if isinstance(b, MediaBlock):
            continue
        others += 1
        if isinstance(b, TextBlock):
            texts.append(b.text)
        elif isinstance(b, ToolCallBlock):
            args = b.arguments
            compact = compact_json(args) if type(args) is dict else None
            if compact is None:
                calls.append(_call_message(b, _call_json_spaced(b)))
            else:
                # the text json writes is orjson's with a space after each separator; as a JSON
                # string each `"` and `\` in it is escaped
                calls.append(_call_message(b, ""))
                added = compact.spaces + compact.escapes
                chars += compact.chars + added
                size += compact.nbytes + added
        elif isinstance(b, ReasoningBlock):
            if b.text:
                reasoning.append(b.text)
            if b.signed:
                sealed += b.signature_chars
    if results and not others:
        total = 0
        for r in results:
            total += OPENCOLLAB_MESSAGE_OVERHEAD + _compact_json_tokens(_tool_message(r))
        return total
    body = _chat_body(message, texts, reasoning, calls)
    return OPENCOLLAB_MESSAGE_OVERHEAD + _compact_json_tokens(body, chars, size) + sealed // 3


class OwnSizer:
    """The per-message estimate of a harness that sizes its context by itself (no report: only
    OpenCollab's `heuristic`), for layers to decide with as that harness does. A message the
    harness does not hold (the replay's prompt overhead, `skip`) weighs nothing."""

    def __init__(self, name: str, skip: str) -> None:
        self.name = name
        self.skip = skip

    def text(self, text: str) -> int:
        return opencollab_text_tokens(text)

    def message(self, message: Message) -> int:
        return 0 if message.id == self.skip else opencollab_message_tokens(message)


def own_sizer(name: str, skip: str) -> OwnSizer | None:
    """The sizer of estimator `name` when it uses no report (`ESTIMATORS[name].uses_reports`
    False), else None: a report-based figure has no per-message form to decide with."""
    spec = ESTIMATORS.get(name)
    return OwnSizer(name, skip) if spec is not None and not spec.uses_reports else None


class _RoughFn(Protocol):
    def __call__(self, message: Message, /) -> int: ...


def _rough(name: str) -> _RoughFn:
    if name == "heuristic":
        return opencollab_message_tokens
    if name == "codex":
        return bytes4
    if name == "opencode":
        return chars4
    return claude_code_rough


# -- the estimates ---------------------------------------------------------------------------------


class HarnessEstimate(Struct, frozen=True):
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


class _RunningMedian:
    """The median of a growing multiset of integers, in O(log n) an addition and O(1) a median
    (a sorted list costs O(n) an insertion: quadratic over a long session). The median of an even
    count is the floor of the mean of the two middle values. Values are put in the heaps when a
    median is next asked for (a session whose outputs are all final never asks)."""

    __slots__ = ("_high", "_low", "_new")

    def __init__(self) -> None:
        self._low: list[int] = []
        """The smaller half (one more when the count is odd), negated: a max-heap."""
        self._high: list[int] = []
        """The larger half: a min-heap."""
        self._new: list[int] = []
        """Values added since the last median, not yet in the heaps."""

    def __len__(self) -> int:
        return len(self._low) + len(self._high) + len(self._new)

    def add(self, value: int) -> None:
        self._new.append(value)

    def _file(self) -> None:
        low, high = self._low, self._high
        for value in self._new:
            if not low or value <= -low[0]:
                heapq.heappush(low, -value)
                if len(low) > len(high) + 1:
                    heapq.heappush(high, -heapq.heappop(low))
            else:
                heapq.heappush(high, value)
                if len(high) > len(low):
                    heapq.heappush(low, -heapq.heappop(high))
        self._new.clear()

    def median(self) -> int:
        if self._new:
            self._file()
        low, high = self._low, self._high
        if len(low) > len(high):
            return -low[0]
        return math.floor((-low[0] + high[0]) / 2)


_Row = tuple[
    int, str, int, str, "int | None", "int | None", "int | None", "int | None", bool, int, "int | None"
]
"""A `HarnessEstimate`'s fields, in order: what the pass makes per request (a tuple costs a
fraction of a frozen dataclass; the estimates are made of them when first asked for)."""

_Basis = tuple[int, int, int, int, "int | None"]
"""What estimates build on a report j: (j, its whole input, where what came after its response
starts in the segment, its recorded output, and for Claude Code the rough size of its response, a
recorded output below which is taken for a stale streaming snapshot)."""


class _Pass:
    """One pass over a transcript's requests, computing every estimate.

    The work per request does not grow with the session: each message is sized once, each ledger
    segment's sizes are summed once into prefix sums (a span of the ledger is a difference of two),
    and what an estimate needs of the report it builds on is taken when that report is met.
    """

    def __init__(self, transcript: Transcript, name: str) -> None:
        self.tr = transcript
        self.name = name
        self.adds = name not in ("opencode", "claude_code_usage")
        """Whether the estimate adds what came after the report's response."""
        self.size = _rough(name)
        self._sizes: dict[str, int] = {}
        self._summaries: set[str] = set()
        """Ids of the compaction summaries among the messages sized (noted while sizing them, so
        as not to look each response up again: on a long session that costs more than sizing)."""
        self._offsets = _RunningMedian()
        """(output - characters/4) of the responses recorded with a final count so far."""
        self._by_id = transcript.messages_by_id()
        self._prefix: dict[int, tuple[Sequence[str], list[int]]] = {}
        self._positions: dict[int, tuple[Sequence[str], dict[str, int]]] = {}

    def sized(self, mid: str) -> int:
        got = self._sizes.get(mid)
        if got is None:
            m = self._by_id.get(mid)
            got = self._sizes[mid] = self.size(m) if m is not None else 0
            if m is not None and m.is_summary:
                self._summaries.add(mid)
        return got

    def _sums(self, ids: Sequence[str], end: int) -> list[int]:
        """Prefix sums of the rough sizes of `ids`, up to `end` at least (all of them but for
        opencode, whose estimates need no more than its rough ones do); extended in place."""
        pre = self._prefix.get(id(ids))
        if pre is None or pre[0] is not ids:
            pre = self._prefix[id(ids)] = (ids, [0])
        sums = pre[1]
        if end < len(sums):
            return sums
        upto = end if not self.adds else len(ids)
        sizes = self._sizes
        by_id = self._by_id
        size = self.size
        total = sums[-1]
        for mid in ids[len(sums) - 1 : upto]:
            got = sizes.get(mid)
            if got is None:
                m = by_id.get(mid)
                if m is None:
                    got = sizes[mid] = 0
                else:
                    got = sizes[mid] = size(m)
                    if m.is_summary:
                        self._summaries.add(mid)
            total += got
            sums.append(total)
        return sums

    def _response_pos(self, ids: Sequence[str], req: Request) -> int | None:
        """Where `req`'s response is in the segment `ids` (None: not in it)."""
        rid = req.response_id
        if rid is None:
            return None
        if req.ledger_len < len(ids) and ids[req.ledger_len] == rid:
            return req.ledger_len
        # elsewhere: its first place in the segment (an index kept per segment, not a scan each time)
        pos = self._positions.get(id(ids))
        if pos is None or pos[0] is not ids:
            first: dict[str, int] = {}
            for i, mid in enumerate(ids):
                first.setdefault(mid, i)
            pos = self._positions[id(ids)] = (ids, first)
        return pos[1].get(rid)

    def _median_offset(self) -> int:
        offsets = self._offsets
        return offsets.median() if len(offsets) >= STALE_MIN_SAMPLES else 0

    def _estimate(
        self, k: int, ids: Sequence[str], end: int, basis: _Basis | None, before: int | None
    ) -> HarnessEstimate:
        """The estimate of sending `ids[:end]`, built on report `basis` (None: before any)."""
        n = len(ids)
        end = 0 if end < 0 else (end if end < n else n)
        if basis is None or self.name == "heuristic":
            sums = self._sums(ids, end)
            return HarnessEstimate(k, self.name, sums[end], "rough", None, None, None, None, False, 0, before)
        j, context, start, recorded, rough = basis
        out, stale = recorded, False
        if rough is not None and recorded < rough:
            out, stale = max(recorded, rough + self._median_offset()), True
        appended = 0
        if self.adds:
            sums = self._sums(ids, end)
            appended = sums[end] - sums[0 if start < 0 else (start if start < end else end)]
        return HarnessEstimate(
            k,
            self.name,
            context + out + appended,
            "report",
            j,
            context,
            out,
            recorded,
            stale,
            appended,
            before,
        )

    def run(self) -> tuple[list[_Row], tuple[HarnessEstimate, ...]]:
        """Every request's estimate (as `_Row`s) and every segment's end."""
        # `_estimate` and `_basis` written out inline for the requests of a segment: this loop
        # runs once per request of the session, and calls are most of what it would cost
        tr = self.tr
        requests = tr.requests
        n_requests = len(requests)
        segments = tr.segments
        name = self.name
        learns = name in ("claude_code", "claude_code_usage")
        rough_only = name == "heuristic"
        adds = self.adds  # adds what came after the report's response
        any_report = name == "opencode"
        sizes = self._sizes
        summaries = self._summaries
        offsets = self._offsets
        sized = self.sized
        estimate = self._estimate
        out: list[_Row] = []
        ends: list[HarnessEstimate] = []
        seg = -1
        # the last report of this segment (`_Basis`): j None before any
        j: int | None = None
        context = start = recorded = 0
        rough: int | None = None
        ids: Sequence[str] = ()
        n_ids = 0
        sums: list[int] = [0]
        for req in requests:
            k = req.index
            before: int | None = None
            if req.segment != seg:
                # every segment before this one has ended: the one left now, and any without requests
                for done in range(len(ends), req.segment):
                    old = segments[done].message_ids
                    basis = (j, context, start, recorded, rough) if done == seg and j is not None else None
                    ends.append(estimate(k, old, len(old), basis, None))
                    if done == seg and not is_compaction_call(tr, k - 1):
                        before = ends[-1].tokens
                seg = req.segment
                j = None
                ids = segments[seg].message_ids
                n_ids = len(ids)
                sums = self._sums(ids, 0)
            end = req.ledger_len
            end = 0 if end < 0 else (end if end < n_ids else n_ids)
            if j is None or rough_only:
                if end >= len(sums):
                    sums = self._sums(ids, end)
                est: _Row = (k, name, sums[end], "rough", None, None, None, None, False, 0, before)
            else:
                output, stale = recorded, False
                if rough is not None and recorded < rough:
                    output, stale = max(recorded, rough + self._median_offset()), True
                appended = 0
                if adds:  # (opencode and Claude Code 1.0/2.0 add nothing: what it has not sized, it need not size)
                    if end >= len(sums):
                        sums = self._sums(ids, end)
                    appended = sums[end] - sums[0 if start < 0 else (start if start < end else end)]
                est = (
                    k,
                    name,
                    context + output + appended,
                    "report",
                    j,
                    context,
                    output,
                    recorded,
                    stale,
                    appended,
                    before,
                )
            out.append(est)
            is_report = req.usage is not None and (req.response_id is not None or any_report)
            if not (learns or (is_report and not rough_only)):
                continue
            # request k as the transcript numbers it (the same object unless numbered oddly)
            own = req if 0 < k <= n_requests and requests[k - 1] is req else tr.request(k)
            usage = own.usage
            rid = own.response_id
            size: int | None = None
            if rid is not None and learns:
                size = sizes.get(rid)
                if size is None:
                    size = sized(rid)
            if is_report and not rough_only:
                # what the estimates that build on report k need of it (`_Basis`)
                assert usage is not None
                j, context, recorded, rough = k, usage.context, usage.output, size
                if adds:
                    ledger_len = own.ledger_len
                    if rid is not None and ledger_len < n_ids and ids[ledger_len] == rid:
                        start = ledger_len + 1
                    else:
                        pos = self._response_pos(ids, own)
                        start = pos + 1 if pos is not None else ledger_len
            if learns:
                # a response recorded with its final output teaches the stale correction
                if usage is None or rid is None or size is None:
                    continue
                if rid and rid in summaries:  # a compaction's own call (`is_compaction_call`)
                    continue
                if size > 0 and usage.output >= size:
                    offsets.add(usage.output - size)
        n = n_requests + 1
        while len(ends) < len(segments):
            done = len(ends)
            old = segments[done].message_ids
            basis = (j, context, start, recorded, rough) if done == seg and j is not None else None
            ends.append(estimate(n, old, len(old), basis, None))
        return out, tuple(ends)


class _Result:
    """One pass's figures: the rows, and the estimates and tokens made of them when first asked for."""

    __slots__ = ("_estimates", "_rows", "_tokens", "ends")

    def __init__(self, rows: list[_Row], ends: tuple[HarnessEstimate, ...]) -> None:
        self._rows = rows
        self.ends = ends
        self._estimates: tuple[HarnessEstimate, ...] | None = None
        self._tokens: tuple[int, ...] | None = None

    @property
    def estimates(self) -> tuple[HarnessEstimate, ...]:
        got = self._estimates
        if got is None:
            made = HarnessEstimate
            got = self._estimates = tuple([made(*row) for row in self._rows])
        return got

    @property
    def tokens(self) -> tuple[int, ...]:
        got = self._tokens
        if got is None:
            got = self._tokens = tuple(map(itemgetter(2), self._rows))
        return got


_CACHE: OrderedDict[tuple[int, str], tuple[weakref.ref[Transcript], int, int, _Result]] = OrderedDict()
"""(id(transcript), estimator) -> (a weak reference to the transcript, its request and message
counts when computed, the result). Weak, so a cached transcript is not kept alive."""


def _name_of(policy: HasTriggerEstimator | str) -> str:
    return estimator_name(policy if isinstance(policy, str) else policy.trigger_estimator)


def estimator_for(transcript: Transcript, policy: HasTriggerEstimator | str) -> str:
    """The estimator a policy decides with on this transcript: an estimator name as given; a
    policy's `trigger_estimator`, or, for a policy with harness `rules` (the harness presets), the
    estimator of the rule for the version the transcript records (Claude Code 2.0.22:
    `claude_code_usage`; 2.1.39: `claude_code`), where it is one of the same harness."""
    name = _name_of(policy)
    if isinstance(policy, str):
        return name
    rules = getattr(policy, "rules", None)
    if not isinstance(rules, str) or not rules:
        return name
    version = recorded_version(transcript) if FORMAT_HARNESS.get(transcript.format) == rules else None
    own = rule_for(rules, version)[0].estimator
    same = ESTIMATORS.get(own)
    return own if same is not None and same.harness == ESTIMATORS[name].harness else name


_CACHE_LOCK = threading.Lock()
"""Guards `_CACHE` (the app asks from worker threads); a pass itself runs outside it."""


def _cached(transcript: Transcript, name: str) -> _Result | None:
    key = (id(transcript), name)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if (
            hit is not None
            and hit[0]() is transcript
            and hit[1] == len(transcript.requests)
            and hit[2] == len(transcript.messages)
        ):
            _CACHE.move_to_end(key)
            return hit[3]
    return None


def _computed(transcript: Transcript, policy: HasTriggerEstimator | str) -> _Result:
    name = estimator_for(transcript, policy)
    result = _cached(transcript, name)
    if result is not None:
        return result
    from .stored import harness_pass  # (a transcript read through the cache: its entry may hold it)

    result = _Result(*harness_pass(transcript, name, _Pass(transcript, name).run))
    with _CACHE_LOCK:
        key = (id(transcript), name)
        _CACHE[key] = (weakref.ref(transcript), len(transcript.requests), len(transcript.messages), result)
        _CACHE.move_to_end(key)
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return result


def cached_harness_tokens(
    transcript: Transcript, policy: HasTriggerEstimator | str
) -> tuple[int, ...] | None:
    """`harness_tokens` if it was computed for this transcript already, else None (nothing is
    computed: for a caller that must not wait for a pass)."""
    result = _cached(transcript, estimator_for(transcript, policy))
    return result.tokens if result is not None else None


def harness_estimates(
    transcript: Transcript, policy: HasTriggerEstimator | str
) -> tuple[HarnessEstimate, ...]:
    """Every request's harness estimate (index 0 is request 1), under the policy's estimator.

    `policy` is a Policy (its `trigger_estimator` is used) or an estimator name. Computed in one
    pass and cached per transcript object and estimator; a transcript that grew (live) is
    computed again.
    """
    return _computed(transcript, policy).estimates


def harness_tokens(transcript: Transcript, policy: HasTriggerEstimator | str) -> tuple[int, ...]:
    """Every request's harness estimate as a number (`HarnessEstimate.tokens`; index 0 is
    request 1): what `harness_estimates` gives, without making the estimates (cached as they are)."""
    return _computed(transcript, policy).tokens


def segment_end_estimates(
    transcript: Transcript, policy: HasTriggerEstimator | str
) -> tuple[HarnessEstimate, ...]:
    """Per ledger segment: the harness's estimate of its whole ledger after its last request.

    For a segment a compaction ended, what the harness believed it held when it decided to
    compact (Claude Code's `preTokens`); for the last segment, what it would send next. Each
    `request` is the request that came next (len(requests) + 1 after the last one).
    """
    return _computed(transcript, policy).ends


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
    "OwnSizer",
    "bytes4",
    "cached_harness_tokens",
    "chars4",
    "claude_code_rough",
    "estimator_for",
    "estimator_name",
    "harness_estimate",
    "harness_estimate_detail",
    "harness_estimates",
    "harness_tokens",
    "harness_window",
    "is_compaction_call",
    "opencollab_message_tokens",
    "opencollab_text_tokens",
    "own_sizer",
    "segment_end_estimates",
]
