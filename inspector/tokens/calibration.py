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
session (recursive least squares with priors, `CostModel`), from two kinds of observations:

- the differences between consecutive reports, explained by the features of the messages added
  in between. Content the transcript does not hold (a hook's output, a harness reminder) only ever
  adds tokens, so a report above the prediction is learned from with the probability that it
  holds none of it (`UNSEEN_SHARE`); and an error far beyond the model's own uncertainty gets a
  Cauchy weight either way;
- the outputs of responses: a response's reported `output_tokens`, when final, next to what the
  response shows (the output model: what a response's visible blocks cost as output).

    cost of a response  = output + final
        output, when the report's is not final = r_text * text + r_thinking * thinking
              + r_call * tool_call + per call, per argument, per line of its arguments, per block,
              + c_sig * signature_chars + a constant
    cost of a message   = r_text * text + r_result * tool_result (+ a ratio offset per tool)
              + per result (+ an extra per tool) + c_chars * characters + c_lines * lines
              + c_media * media + framing per block and message

where text/thinking/tool_call/tool_result are the base estimator's tokens of each kind of block
(`PRIORS`, `PRIOR_RATIO`: where each estimator usually stands before any report). Claude Code
often writes a stale streaming snapshot (`output_tokens` of 1..25 for a long answer): a response's
output is trusted ("final") when it is at least `FINAL_FRACTION` of what the output model predicts
for it, and then it costs that output plus `final`; otherwise the output model sizes it (so a
stale response is priced from what final ones taught, not from its stale count). Reasoning is
never sized by its signature bytes: with a final output its part is the output minus the visible
blocks (so capped by the output); otherwise the output model's thinking ratio and signature
coefficient. On long sessions the model learns from every request of the first `MATURE`, then
from one in `STRIDE` (and from any holding a feature it has seldom seen).

Reasoning from earlier turns: some models drop the thinking of previous turns from the context
(a new user turn strips it); newer ones keep it. Which one a session does is decided from the
evidence: at each turn boundary both hypotheses are scored against the report and the better so
far is used to predict.

Compaction: the first request of a new segment re-derives the segment's weights: preserved
messages keep theirs, the summary and other new messages are predicted by the model, and the
report's remainder is spread over the new messages (it includes what the harness re-injects, such
as recently read files). The overhead stays pinned. Cleared tool output (a `microcompact` event):
from the first request after it, a cleared result weighs what the model predicts for it with the
placeholder text (never less than the placeholder's own base estimate), and shares the next
report's difference with the new messages (untouched old weights stay as they are).

Requests with no report (after the last one, or a transcript without usage) get the model's
predictions (plain local estimates when nothing was ever reported).

Where each rule comes from (issue 25: every Claude Code file of the shared corpus with at least 10
measured requests; `python -m benchmarks.calibration_table` prints the per-file figures, and
`python -m benchmarks.calibration_priors` the leave-one-file-out choice of the priors):

- Learned per session, online, never fixed: each kind's ratio (text, thinking, tool call, tool
  result, a response's output), each tool's ratio offset and extra tokens per result (so a tool
  whose results carry hook output after Edit/Write learns that output's mean, and no more: it is
  content the file does not hold, conneroisu-b9712494 requests 70 and 153 miss by ~5,700 tokens
  with every mode and both baselines), framing per block and message, the overhead.
- Priors (`PRIORS` sds, `TOOL_RATIO_PRIOR`, `TOOL_EXTRA_PRIOR`, `NOISE_SHARE`, `UNSEEN_*`,
  `STRIP_PRIOR`, `PRIOR_RATIO`): the setting `benchmarks.calibration_priors` chooses on every file
  (each held-out file scored with the setting chosen on the others: median of per-file max 3.0% ->
  1.7%). The tight kind-ratio sds (0.1) come from there: one session's first small results moved
  the ratio by a third and then mis-sized its first large Read (conneroisu-b9712494 request 5:
  19.6% off before, 1.3% now).
- Reasoning a new user turn takes off: a share learned from the session's turn boundaries
  (`_DeltaRun.strip_share`), not all or nothing: sonnet-4/4.5 and haiku-4.5 sessions (lroystack,
  thomasjmcgovern, applabnl, fasthooks) lose most of it, opus-4-6 and opus-4-1 ones (spotter,
  pooknast, kesslerio) keep it, and thomasjmcgovern loses only about half of what its responses'
  outputs say it held (request 118: 1,719 of 3,017).
- ExitPlanMode with a `planFilePath` (Claude Code 2.1): its plan argument is not billed
  (`billed_call`, pooknast-da0d9633 request 19). Claude Code 2.0 writes the plan as the model's
  own argument and it is billed (thomasjmcgovern-fb36f7a7, 8 calls).
- Not learned from: a request on another model than the one before (`model_switched`:
  patternstack request 70) or whose cached prefix changed (`prefix_changed`: patternstack request
  25, after `/mcp`). `accuracy()` scores them apart, with the first request after a compaction and
  after an API error.
- Checked and not modelled: a PreToolUse-blocked call (one in the corpus, spotter-fa812bfe, whose
  hook lines the model does not carry); the ~2,000 tokens of SessionStart hook output on the
  second request after an auto compaction (spotter-fa812bfe request 128 misses by 967 tokens: the
  hook lines are not in the model either); stale streaming `output_tokens` on thinking (fasthooks
  8 of 11 responses with reasoning, thomasjmcgovern 72 of 142, lroystack 59 of 128): the gap
  between a response and the message before it (time to first token plus generation) does not
  track the reasoning's size on these files, and the misses on those requests are a few hundred
  tokens either way, so the output model's thinking ratio sizes them.
"""

from __future__ import annotations

import bisect
import json
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import lru_cache
from operator import itemgetter, mul
from typing import Literal

from msgspec.structs import replace

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
from inspector.model.bulk import paused_gc

from .base import Estimator, compact_json
from .heuristic import ASCII_CHARS_PER_TOKEN, HeuristicEstimator, heuristic_tokens

OVERHEAD_ID = "overhead"
OVERHEAD_TEXT = "[system prompt and tool schemas — not stored in the transcript]"
CLEARED_TEXT = "[Old tool result content cleared]"

Mode = Literal["proportional", "delta"]
MODES: tuple[Mode, ...] = ("proportional", "delta")

CHANGED_CACHE = 65_536
"""How many changed messages (truncated, cleared copies) a calibration remembers the features of."""

FINAL_FRACTION = 0.5
"""A response's reported output is trusted when it reaches this share of its predicted output."""

MATURE = 256
"""Requests whose every observation teaches the cost model; after them, one in `STRIDE` does
(see `_DeltaRun._learns`)."""
STRIDE = 64
OUT_MATURE = 64
"""The same for the outputs of responses (observations without unseen content: learned sooner)."""
FEATURE_MATURE = 32
"""An observation holding a feature learned from fewer observations than this is always learned from."""


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
    # what a response costs when sent back: its output (as reported, or as predicted from what it
    # shows) plus `final`; the output model predicts output tokens from the visible blocks
    "out_text": (1.0, 0.1),
    "out_thinking": (1.0, 0.15),
    "out_call": (1.0, 0.1),
    "out_calls": (10.0, 40.0),  # per tool call and per argument: how the model writes a call
    "out_call_lines": (0.0, 0.75),
    "out_params": (5.0, 20.0),
    "out_signature": (0.0, 0.05),
    "out_blocks": (2.0, 10.0),
    "out_message": (2.0, 20.0),
    "final": (5.0, 15.0),
    # everything else: user text, tool results, harness messages
    "text": (1.0, 0.1),
    "thinking": (1.0, 0.15),
    "tool_call": (1.0, 0.1),
    "tool_result": (1.0, 0.1),
    "media": (800.0, 1500.0),
    "signature": (0.0, 0.05),
    "block": (6.0, 10.0),
    "message": (4.0, 10.0),
    "results": (10.0, 50.0),  # per tool result (its id and framing), shared by every tool
    "tool_result_chars": (0.0, 0.02),
    "tool_result_lines": (0.0, 0.25),
    "tool_call_chars": (0.0, 0.02),
    "tool_call_lines": (0.0, 0.75),
}
"""Before any report: ratios of 1 to the base estimate, a few tokens of framing, images ~800."""
TOOL_RATIO_PRIOR = (0.0, 0.05)
"""`result:<tool>`: how far one tool's results stray from the common ratio. Tight: a tool's
content differs from others' by some percent, and a loose offset learned from a few small results
extrapolates badly to the first large one."""
TOOL_EXTRA_PRIOR = (0.0, 200.0)
"""`results:<tool>`: tokens a tool's result costs beyond its text and the common `results`."""
NOISE_SD = 10.0
"""Typical unexplained tokens of one difference (harness reminders, tokenizer luck)."""
NOISE_SHARE = 0.1
"""... plus this share of the difference (tokenizer luck grows with size: on a real Claude Code
session, single tool results cost 0.85-1.13x their heuristic estimate, 1.0-1.45x their cl100k
one, a few percent apart within one tool)."""
ROBUST_C = 3.0
"""Errors beyond this many standard deviations count less and less (Cauchy weights)."""
UNSEEN_SHARE = 0.1
UNSEEN_MEAN = 300.0
"""Content the transcript does not hold (a hook's output, a harness reminder) only ever adds
tokens: a difference is taken to hold some with probability `UNSEEN_SHARE`, of about
`UNSEEN_MEAN` tokens (exponential). A report above the prediction is learned from with the
probability that it holds none (so the model predicts the usual request, not the average one)."""
STRIP_PRIOR = (1.0, 1000.0)
"""(share, weight in tokens): what a new user turn takes off of earlier turns' reasoning, before
a session's turn boundaries tell (`_DeltaRun.strip_share`)."""
_SQRT_2PI = math.sqrt(2.0 * math.pi)
RATIO_BOUNDS = (0.2, 6.0)
KIND_NAMES = frozenset(k.value for k in Kind) | {"out_text", "out_thinking", "out_call"}
_OFFSETS = ("result:",)
"""Prefixes of per-tool ratio offsets."""
_SHAPES = frozenset(
    {
        "tool_result_chars",
        "tool_result_lines",
        "tool_call_chars",
        "tool_call_lines",
        "out_call_lines",
    }
)
_CONTENT = KIND_NAMES | _SHAPES
"""The features of what texts cost by themselves (ratios and shape), as opposed to framing."""


@lru_cache(maxsize=4096)  # (tool names come from transcripts: the names are not bounded)
def _is_content(name: str) -> bool:
    """Whether a feature is a content feature (`_CONTENT` or a per-tool offset)."""
    return name in _CONTENT or name.startswith(_OFFSETS)


PRIOR_RATIO: dict[str, float] = {"heuristic": 1.0, "tiktoken": 1.15}
"""Where each base estimator usually stands against Claude's tokenizer before any report: the
heuristic counts characters/3 where text averages ~3.5 characters a token; cl100k splits ~15%
coarser. Only a starting point: the reports correct it within a few requests."""


CHOSEN_ON = frozenset({"claude-code"})
"""The transcript formats the priors above were chosen on (the shared corpus holds Claude Code
sessions with usage only). Other harnesses keep the wider priors of before (`WIDE`): their
providers' tokenizers may stand far from the base estimate (OpenCollab's bundled run bills 7
tokens for a tool call), and no corpus says how sure to be."""
WIDE_SD = 4.0
"""Other harnesses: the kind ratios' and shape coefficients' prior sds, times this."""
WIDE = {
    "tool_ratio_sd": 0.1,
    "tool_extra_sd": 50.0,
    "noise_share": 0.05,
    "unseen_share": 0.2,
    "strip_prior": 0.5,
}
WIDE_RATIO: dict[str, float] = {"heuristic": 0.9, "tiktoken": 1.15}


def prior_ratio(estimator: str, wide: bool = False) -> float:
    """Where `estimator` stands before any report (`PRIOR_RATIO`; `WIDE_RATIO` for other harnesses)."""
    return (WIDE_RATIO if wide else PRIOR_RATIO).get(estimator, 1.0)


def prior_sd(name: str, ratio: float, wide: bool) -> tuple[float, float]:
    """`prior(name, ratio)`, with the wider sds of `WIDE` where `wide`."""
    mean, sd = prior(name, ratio)
    if not wide:
        return mean, sd
    if name in KIND_NAMES or name in _SHAPES:
        return mean, sd * WIDE_SD
    if name.startswith(_OFFSETS):
        return mean, WIDE["tool_ratio_sd"]
    if name not in PRIORS:
        return mean, WIDE["tool_extra_sd"]
    return mean, sd


def prior(name: str, ratio: float = 1.0) -> tuple[float, float]:
    got = PRIORS.get(name)
    if got is not None:
        return (got[0] * ratio, got[1]) if name in KIND_NAMES else got
    return TOOL_RATIO_PRIOR if name.startswith(_OFFSETS) else TOOL_EXTRA_PRIOR


def _clamp(name: str, value: float) -> float:
    lo, hi = _bounds(name)
    return min(max(value, lo), hi)


def _bounds(name: str) -> tuple[float, float]:
    """What a coefficient is kept within (-inf/inf where it is not)."""
    if name in KIND_NAMES:
        return RATIO_BOUNDS
    if name in ("signature", "out_signature", "media"):
        return (0.0, math.inf)
    if name.startswith(_OFFSETS):
        return (-0.8, 3.0)
    return _FREE


_FREE = (-math.inf, math.inf)
"""The bounds of a coefficient kept within none."""


_dumps = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode
"""`json.dumps(value, sort_keys=True, ensure_ascii=False)`, without building an encoder per call."""


CACHE_LIFE_S = 300.0
"""Anthropic's prompt cache keeps a prefix 5 minutes after its last use (the provider's default)."""


def _seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def model_switched(before: Request, req: Request) -> bool:
    """`req` ran on another model than the request before (a Skill or a Task on another model)."""
    return req.model is not None and before.model is not None and req.model != before.model


def prefix_changed(before: Request, req: Request) -> bool:
    """`req` read nothing from the cache although the request before did, within the cache's life
    (`CACHE_LIFE_S`): the prompt's prefix changed (the system prompt or the tool schemas: an MCP
    server came or went, as after `/mcp` at patternstack-263940d8 request 25, 267 s after the one
    before). What the prefix now holds is not in the transcript."""
    u, b = req.usage, before.usage
    if u is None or b is None or u.cache_read or not b.cache_read:
        return False
    t, t0 = _seconds(req.timestamp), _seconds(before.timestamp)
    return t is not None and t0 is not None and 0 <= t - t0 < CACHE_LIFE_S


def billed_call(block: ToolCallBlock) -> ToolCallBlock:
    """The call as it is billed: an ExitPlanMode call whose arguments hold a `planFilePath` (Claude
    Code 2.1: the model writes the plan to a file and calls with none) carries the plan in the
    transcript only, for display; it is neither generated nor sent back (pooknast-da0d9633, request
    19: the context grew 558 tokens for a 436-token response and a 467-character result, while
    the plan in the call's input is 6,350 characters). Any other call is billed as it reads."""
    args = block.arguments
    if block.name == "ExitPlanMode" and type(args) is dict and "planFilePath" in args and "plan" in args:
        return replace(block, arguments={k: v for k, v in args.items() if k != "plan"})
    return block


def block_text(block: ToolCallBlock) -> str:
    args = block.arguments
    return f"{block.name} {args if isinstance(args, str) else _dumps(args)}"


def _ascii_call(block: ToolCallBlock) -> tuple[int, int] | None:
    """(characters, line breaks as `_parts` counts them) of `block_text(block)` where that text is
    ASCII and its arguments a dict orjson writes as `json.dumps` does (but for the spaces after
    separators, and the order of keys: neither moves a character of a string), without writing
    it; None elsewhere (then the text is written)."""
    args = block.arguments
    name = block.name
    if type(args) is not dict or not name.isascii():
        return None
    compact = compact_json(args)
    if compact is None or compact.nbytes != compact.chars:  # (not ASCII)
        return None
    # an escaped line break is within a string: the spaces, the key order and the space after
    # the name split none; a raw one can only be in the name (json escapes them)
    lines = name.count("\\n") + name.count("\n") + compact.escaped_breaks
    return len(name) + 1 + compact.chars + compact.spaces, lines


class Parts:
    """A message's content as features, in base-estimator tokens.

    A response (an assistant message) is described by what it shows (`out_*` features: the output
    model predicts its output tokens from them) plus `final` (what a response costs when sent back
    beyond its output); any other message by the kinds of its content and its framing."""

    __slots__ = ("_output", "_visible", "human", "response", "thinking", "x")

    def __init__(self, x: Features, human: bool, thinking: bool, response: bool = False) -> None:
        self.x = x
        """Read only (shared by the predictions made from it)."""
        self.human = human
        """A user message that is not only tool results: it starts a new turn."""
        self.thinking = thinking
        self.response = response
        self._visible: Features | None = None
        self._output: Features | None = None

    @property
    def reasoning(self) -> tuple[str, str]:
        """The names of this message's reasoning features."""
        return _REASONING[self.response]

    @property
    def visible(self) -> Features:
        """A response's output features without its reasoning (read only)."""
        v = self._visible
        if v is None:
            v = self._visible = {k: n for k, n in self.x.items() if k not in _NOT_VISIBLE}
        return v

    @property
    def output(self) -> Features:
        """A response's output features: all of `x` but `final` (read only)."""
        v = self._output
        if v is None:
            v = self._output = {k: n for k, n in self.x.items() if k != "final"}
        return v


_REASONING = {True: ("out_thinking", "out_signature"), False: ("thinking", "signature")}
_FINAL_X: Features = {"final": 1.0}
"""What a response with a final output is learned from besides its output (read only)."""
_NOT_VISIBLE = frozenset(("out_thinking", "out_signature", "final"))


def _texts_of(message: Message) -> list[str]:
    out: list[str] = []
    for b in message.blocks:
        if isinstance(b, TextBlock | ReasoningBlock):
            out.append(b.text)
        elif isinstance(b, ToolCallBlock):
            out.append(block_text(billed_call(b)))
        elif isinstance(b, ToolResultBlock):
            out.append(b.content)
    return out


def _add(x: Features, name: str, v: float) -> None:
    if v:
        x[name] = x.get(name, 0.0) + v


def parts_of(message: Message, sizes: Sequence[int], texts: Sequence[str] | None = None) -> Parts:
    """Parts of `message` given the base-estimator sizes of its texts (in `_texts_of` order).

    `texts`, when given, are the message's `_texts_of` (so tool calls are not serialized again)."""
    it = iter(sizes)
    if texts is None:
        return _parts(message, lambda _text: next(it))
    blocks = [
        b
        for b in message.blocks
        if isinstance(b, TextBlock | ReasoningBlock | ToolCallBlock | ToolResultBlock)
    ]
    calls = iter([t for b, t in zip(blocks, texts, strict=True) if isinstance(b, ToolCallBlock)])
    return _parts(message, lambda _text: next(it), lambda _b: next(calls))


def _tool_names(tool: str) -> tuple[str, str]:
    """(`result:<tool>`, `results:<tool>`), made once per tool name."""
    names = _TOOL_NAMES.get(tool)
    if names is None:
        names = _TOOL_NAMES[tool] = ("result:" + tool, "results:" + tool)
    return names


_TOOL_NAMES: dict[str, tuple[str, str]] = {}
_THIRDS = ASCII_CHARS_PER_TOKEN
_USER = Role.USER
_ASSISTANT = Role.ASSISTANT

_RESULT, _MEDIA, _TEXT, _CALL, _REASONING_BLOCK, _OTHER = range(6)
_KINDS: dict[type, int] = {}
"""Block class -> what `_parts` sees it as (the first of its checks the class passes)."""


def _kind(block: object) -> int:
    """What `_parts` sees `block` as, looked up by class (each class checked once)."""
    t = type(block)
    kind = _KINDS.get(t)
    if kind is None:
        kind = _KINDS[t] = next(
            (
                i
                for i, c in enumerate((ToolResultBlock, MediaBlock, TextBlock, ToolCallBlock, ReasoningBlock))
                if isinstance(block, c)
            ),
            _OTHER,
        )
    return kind


def _parts(
    message: Message,
    size: Callable[[str], int],
    call_text: Callable[[ToolCallBlock], str] | None = None,
    thirds: bool = False,
) -> Parts:
    """Parts of `message`, each text sized by `size` (called once per text, in `_texts_of` order;
    `call_text`, when given, gives a tool call's text in place of `block_text`, in the same turn).
    `thirds`: `size` is `heuristic_tokens` (then ASCII texts are sized here, without the call)."""
    x: Features = {}
    get = x.get
    response = message.role is _ASSISTANT
    thinking = False
    blocks = 0
    results = 0
    others = 0  # blocks that are neither tool results nor media
    kinds = _KINDS
    for b in message.blocks:
        blocks += 1
        kind = kinds.get(type(b))
        if kind is None:
            kind = _kind(b)
        if kind == _RESULT:
            assert isinstance(b, ToolResultBlock)
            results += 1
            content = b.content
            n = -(-len(content) // _THIRDS) if thirds and content.isascii() else size(content)
            tool_names = _TOOL_NAMES.get(b.tool_name or "?") or _tool_names(b.tool_name or "?")
            if n:
                x["tool_result"] = get("tool_result", 0.0) + n
                x[tool_names[0]] = get(tool_names[0], 0.0) + n
            if content:
                x["tool_result_chars"] = get("tool_result_chars", 0.0) + len(content)
                lines = content.count("\n")
                if lines:
                    x["tool_result_lines"] = get("tool_result_lines", 0.0) + lines
            x[tool_names[1]] = get(tool_names[1], 0.0) + 1
            x["results"] = get("results", 0.0) + 1
            if b.media:
                x["media"] = get("media", 0.0) + b.media
            continue
        if kind == _MEDIA:
            x["media"] = get("media", 0.0) + 1
            continue
        others += 1
        if kind == _TEXT:
            assert isinstance(b, TextBlock)
            text = b.text
            n = -(-len(text) // _THIRDS) if thirds and text.isascii() else size(text)
            if n:
                name = "out_text" if response else "text"
                x[name] = get(name, 0.0) + n
        elif kind == _CALL:
            assert isinstance(b, ToolCallBlock)
            if b.name == "ExitPlanMode":
                b = billed_call(b)
            shape = _ascii_call(b) if thirds and call_text is None else None
            if shape is not None:
                chars, lines = shape
                n = -(-chars // _THIRDS)
            else:
                text = block_text(b) if call_text is None else call_text(b)
                n = -(-len(text) // _THIRDS) if thirds and text.isascii() else size(text)
                chars = len(text)
                lines = text.count("\\n") + text.count("\n")
            if response:
                if n:
                    x["out_call"] = get("out_call", 0.0) + n
                x["out_calls"] = get("out_calls", 0.0) + 1
                args = b.arguments
                params = len(args) if isinstance(args, dict) else 1
                if params:
                    x["out_params"] = get("out_params", 0.0) + params
                if lines:
                    x["out_call_lines"] = get("out_call_lines", 0.0) + lines
            else:
                if n:
                    x["tool_call"] = get("tool_call", 0.0) + n
                if chars:
                    x["tool_call_chars"] = get("tool_call_chars", 0.0) + chars
                if lines:
                    x["tool_call_lines"] = get("tool_call_lines", 0.0) + lines
        elif kind == _REASONING_BLOCK:
            assert isinstance(b, ReasoningBlock)
            thinking = True
            think_name, sig_name = _REASONING[response]
            text = b.text
            n = -(-len(text) // _THIRDS) if thirds and text.isascii() else size(text)
            if n:
                x[think_name] = get(think_name, 0.0) + n
            if (b.signed or b.redacted) and b.signature_chars:
                x[sig_name] = get(sig_name, 0.0) + b.signature_chars
    if response:
        x["out_blocks"] = float(blocks)
        x["out_message"] = 1.0
        x["final"] = 1.0
    else:
        x["block"] = float(blocks)
        x["message"] = 1.0
    # `not message.is_tool_result`: not only tool results (and media) with at least one result
    human = message.role is _USER and (others > 0 or results == 0)
    return Parts(x, human, thinking, response)


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

    def content(self, x: Features) -> float:
        """What the texts of `x` cost by themselves: their base tokens at the learned ratio of
        their kind (and tool) and shape, without the framing terms (which can be negative)."""
        total = 0.0
        coef = self._coef
        for n, v in x.items():
            if _is_content(n):
                got = coef.get(n)
                total += (got if got is not None else self.coef(n)) * v
        return max(total, 0.0)

    def as_dict(self) -> dict[str, float]:
        out = {n: _clamp(n, prior(n, self._ratio)[0]) for n in PRIORS}
        out.update(self._coef)
        return out


class CostModel(Coefficients):
    """Online ridge regression (recursive least squares) of report differences on content features.

    `wide`: a harness the priors were not chosen on (`CHOSEN_ON`): the wider priors of `WIDE`."""

    def __init__(self, ratio: float = 1.0, wide: bool = False) -> None:
        super().__init__(ratio=ratio)
        self.wide = wide
        self.noise_share = WIDE["noise_share"] if wide else NOISE_SHARE
        self.unseen_share = WIDE["unseen_share"] if wide else UNSEEN_SHARE
        self.index: dict[str, int] = {}
        self.names: list[str] = []
        self.theta: list[float] = []
        self.P: list[list[float]] = []
        """(prior precision + sum of w x x^T)^-1, in units of the noise variance."""
        self.bounds: list[tuple[float, float]] = []
        """Per coefficient: what `_clamp` keeps it within (-inf/inf where it does not)."""
        self.n = 0
        # a feature joins the regression when first seen (its prior meanwhile); the result is
        # the same as with every feature in from the start, without the rows nothing ever touches
        for name in PRIORS:
            self._coef[name] = _clamp(name, prior(name, ratio)[0])

    def _ensure(self, name: str) -> int:
        i = self.index.get(name)
        if i is None:
            mean, sd = prior_sd(name, self._ratio, self.wide)
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

    def copy(self) -> CostModel:
        """An independent copy (for a calibration that goes on from this one's state)."""
        model = CostModel.__new__(CostModel)
        model._coef = dict(self._coef)
        model._ratio = self._ratio
        model.wide = self.wide
        model.noise_share = self.noise_share
        model.unseen_share = self.unseen_share
        model.index = dict(self.index)
        model.names = list(self.names)
        model.theta = list(self.theta)
        model.P = [list(row) for row in self.P]
        model.bounds = list(self.bounds)
        model.n = self.n
        return model

    def update(self, x: Features, y: float, robust: bool = True, unseen: bool = False) -> None:
        """Learn from one observed difference `y` explained by features `x`.

        `robust=False` for a hard fact rather than a noisy difference (a report smaller than the
        messages it held, as estimated). `unseen`: `y` may hold content the transcript does not
        (see `UNSEEN_SHARE`)."""
        index = self.index
        nz = [(index[n] if n in index else self._ensure(n), v) for n, v in x.items() if v]
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
        noise = NOISE_SD + self.noise_share * abs(y)
        spread = noise * math.sqrt(1.0 + xpx * (NOISE_SD / noise) ** 2)
        z = abs(err) / spread
        w = 1.0 / (1.0 + (z / ROBUST_C) ** 2) if robust else 1.0
        if unseen and robust and err > 0:
            # the odds that the excess is unseen content rather than the model's error
            log_model = -0.5 * z * z - math.log(spread * _SQRT_2PI)
            log_unseen = -err / UNSEEN_MEAN - math.log(UNSEEN_MEAN)
            share = self.unseen_share
            odds = share / (1.0 - share) * math.exp(min(log_unseen - log_model, 700.0))
            w /= 1.0 + odds
            if w <= 0.0:
                self.n += 1
                return
        w *= (NOISE_SD / noise) ** 2
        denom = 1.0 / w + xpx
        coef, names, bounds = self._coef, self.names, self.bounds
        # Row i of P becomes [pij - ki * pj for pij, pj in zip(P[i], px)] where ki is not zero.
        # Where pj is zero that leaves pij as it is (P never holds -0.0: it starts with none, and
        # a difference is -0.0 only from one), unless ki is not finite: then every column.
        live = [j for j, pj in enumerate(px) if pj]
        cols = live if all(map(math.isfinite, px)) else range(len(px))
        pcols = [px[j] for j in cols]
        for i in live:
            ki = px[i] / denom
            if ki:
                theta[i] += ki * err
                row = P[i]
                for j, pj in zip(cols, pcols, strict=True):
                    row[j] -= ki * pj
                b = bounds[i]
                # `_clamp`, without the call (nothing to clamp within `_FREE`)
                coef[names[i]] = theta[i] if b is _FREE else min(max(theta[i], b[0]), b[1])
        self.n += 1


class _Versions:
    """A weight that changes at some requests: weight from `at[i]` on is `value[i]`."""

    __slots__ = ("at", "value")

    def __init__(self, at: list[int] | None = None, value: list[int] | None = None) -> None:
        self.at: list[int] = at if at is not None else []
        self.value: list[int] = value if value is not None else []

    def set(self, k: int, v: int) -> None:
        if self.at and self.at[-1] == k:
            self.value[-1] = v
        else:
            self.at.append(k)
            self.value.append(v)

    def get(self, k: int) -> int | None:
        at = self.at
        if at and k >= at[-1]:
            return self.value[-1]
        i = bisect.bisect_right(at, k) - 1
        return self.value[i] if i >= 0 else None

    @property
    def last(self) -> int:
        return self.value[-1] if self.value else 0


def apportion(total: int, shares: Sequence[float]) -> list[int]:
    """Integers proportional to `shares` that add up to `total` (largest remainder, ties to the first)."""
    n = len(shares)
    if n == 0:
        return []
    if n == 2 and total >= 0:
        # the general case below for two shares, written out (one per message of a request)
        a, b = shares
        a = max(a, 0.0)
        b = max(b, 0.0)
        s = a + b
        if s > 0:
            ra = total * a / s
            rb = total * b / s
            fa = math.floor(ra)
            fb = math.floor(rb)
            rest = total - fa - fb
            if rest >= 2:
                return [fa + 1, fb + 1]
            if rest == 1:
                return [fa + 1, fb] if fa - ra <= fb - rb else [fa, fb + 1]
            return [fa, fb]
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
    if rest:
        order = sorted(range(n), key=lambda i: (base[i] - raw[i], i))
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

    def __init__(
        self, calibration: Calibration, k: int, base: Estimator, standing: dict[str, int] | None = None
    ) -> None:
        """`standing`: weights that stand in for the calibrated ones of those ledger messages
        (what a harness cleared only in what it sent weighs whole; `Replay._as_sent`)."""
        self.name = f"calibrated-{calibration.mode}({base.name})"
        self._cal = calibration
        self._k = k
        self._base = base
        self._standing = standing or {}
        self._index = calibration.transcript._index()
        # Weights are looked up one message at a time where the calibration can (no dict of the
        # whole ledger per request); else the calibration's cached dict, shared and read only.
        lazy = calibration._lazy_positions(k)
        self._pos, self._len = lazy if lazy is not None else ({}, 0)
        self._weights = calibration._weights_at(k) if lazy is None else None
        self._read: dict[str, int | None] = {}
        """Weights read one by one so far (a layer sizes a message and its changed copy, which
        share an id, many times over)."""
        self._reached = False
        """The calibration's pass has run to k."""
        self._coefs: Coefficients | None = None
        """`model_at(k)`, once asked for."""

    def text(self, text: str) -> int:
        return self._cal.changed_text(self._k, text, self._base)

    def _weight(self, mid: str) -> int | None:
        """`Calibration.weights(k).get(mid)`: the weight of a ledger message (or the overhead)."""
        if self._standing:
            stood = self._standing.get(mid)
            if stood is not None:
                return stood
        if self._weights is not None:
            return self._weights.get(mid)
        read = self._read
        if mid in read:
            return read[mid]
        w: int | None = None
        if mid == OVERHEAD_ID or self._pos.get(mid, self._len) < self._len:
            if not self._reached:
                self._cal._upto(self._k)  # (the estimator may be made before the pass ran)
                self._reached = True
            w = self._cal._read_weight(self._k, mid)
        read[mid] = w
        return w

    def message(self, message: Message) -> int:
        if message.id == OVERHEAD_ID:
            return self._weight(OVERHEAD_ID) or 0
        # weights are kept for exactly the ledger's ids: a ledger message is the transcript's own object
        cal = self._cal
        w = self._weight(message.id)
        orig = self._index.get(message.id) if w is not None else None
        if orig is not None and w is not None and (message is orig or cal._same_as_own(message, orig)):
            return w
        if self._coefs is None and cal.mode == "delta":
            self._coefs = cal.model_at(self._k)
        pred = cal.changed_message(self._k, message, self._base, self._coefs)
        if orig is not None and w is not None and cal._text_len(message) <= cal._text_len(orig):
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
        self._parts: dict[str, Parts] = {}
        self._local: dict[str, int] = {}
        self._versions: dict[str, _Versions] = {}
        """Message id -> its weights (read them after `_flush`)."""
        self._lock = threading.RLock()
        """Held while the pass runs or what it set is filed: the app asks from several threads."""
        self._log: list[tuple[str, int, int]] = []
        """(id, request, weight) set by the pass and not yet in `_versions` and `_changes`, in
        order: the pass only writes them, so they are filed when first read (`_flush`)."""
        self._steps: list[_Step] = [_Step() for _ in transcript.requests]
        self._weights_cache: dict[int, dict[str, int]] = {}
        self._totals: dict[int, int] = {}
        self._positions: dict[int, tuple[Segment, dict[str, int] | None]] = {}
        """Request -> the sum of its ledger's weights (overhead included), where already known."""
        self._changes: dict[int, list[str]] = {}
        """Request -> ids whose weight was (re)set at it (for stepping the weights forward; read
        it after `_flush`)."""
        self._models: list[Coefficients] = []
        """`model_at` of the requests up to len(_models) (extended as the pass goes on)."""
        self._changed: dict[int, tuple[Message, Estimator | None, Features | None, int]] = {}
        """id(message) -> `_changed_entry` of messages sized as changed."""
        self._same: dict[int, tuple[Message, Message, bool]] = {}
        """id(message) -> (message, the transcript's message of its id, whether they are equal)."""
        self._spent: list[int] = []
        self._spend_seen: dict[str | int, int] = {}
        self._overhead_estimate = 0
        self._prefix: list[list[int]] = []
        self._strip_thinking = False
        self.first_report: int | None = next(
            (r.index for r in transcript.requests if r.usage is not None), None
        )
        self._run: _DeltaRun | None = None
        self._done = 0
        """Delta mode: the requests calibrated so far (the pass runs on demand, see `_upto`)."""
        with paused_gc():
            if mode == "proportional":
                self._prefetch_local()
                self._run_proportional()
                self._done = len(self._steps)
            self._cumulative_spend()

    def _upto(self, k: int) -> None:
        """Calibrate the requests up to k (delta mode), if not yet done.

        The pass runs on demand and stops where asked: a question about request k needs only
        the requests up to it (the pass never changes what it decided before), so a report that
        reads the providers' own figures never runs it, and one that looks at request 30 of 7,000
        runs 30. Going on later from where it stopped gives what one whole pass gives. Only the
        messages the pass reaches are sized (those of the ledgers of the requests it runs)."""
        if k <= self._done:
            return
        with self._lock, paused_gc():
            if k <= self._done:
                return  # another thread ran it meanwhile
            self._prefetch_sizes(self._reached(self._done, k))
            if self._run is None:
                self._run = _DeltaRun(self)
            self._run.run(start=self._done, stop=k)
            self._done = k

    def _reached(self, start: int, stop: int) -> list[Message]:
        """The messages not sized yet of the ledgers of requests `start` + 1 to `stop`: what the
        pass over them reads (each ledger's messages past the request before's, in ledger order)."""
        tr = self.transcript
        requests = tr.requests
        by_id = tr._index()
        parts = self._parts
        out: list[Message] = []
        seg, seen = -1, 0
        if start:
            seg, seen = requests[start - 1].segment, requests[start - 1].ledger_len
        ids: Sequence[str] = tr.segments[seg].message_ids if seg >= 0 else ()
        for r in requests[start:stop]:
            if r.segment != seg:
                seg, seen = r.segment, 0
                ids = tr.segments[seg].message_ids
            if r.ledger_len > seen:
                for mid in ids[seen : r.ledger_len]:
                    if mid not in parts and (m := by_id.get(mid)) is not None:
                        out.append(m)
                seen = r.ledger_len
        return out

    @property
    def strip_thinking(self) -> bool:
        """Whether this session drops earlier turns' reasoning (decided from all its reports)."""
        self._upto(len(self._steps))
        return self._strip_thinking

    # -- sizes -------------------------------------------------------------------------------

    def extended(self, transcript: Transcript) -> Calibration | None:
        """The calibration of `transcript`, a later state of this one's (a file that grew: the same
        requests so far, whose ledgers only grew, more after them), going on from where this pass
        stopped instead of starting over; None when `transcript` does not simply extend this one
        (then calibrate it afresh). This calibration is left as it was."""
        old = self.transcript
        run = self._run
        n = len(old.requests)
        if self.mode == "delta":
            self._upto(n)
            run = self._run
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
            if a is not b and b.message_ids[: len(a.message_ids)] != a.message_ids:
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
        new._lock = threading.RLock()
        new.transcript = transcript
        # sizes: messages not in the last ledger may have changed (a response still streaming);
        # the others are kept (copied whole and the few stale ones taken out: no pass per message)
        stale = list(old.segments[last.segment].message_ids[last.ledger_len :])
        for seg in old.segments[last.segment + 1 :]:
            stale.extend(seg.message_ids)
        new._parts = dict(self._parts)
        new._local = dict(self._local)
        for mid in stale:
            if mid not in held:
                new._parts.pop(mid, None)
                new._local.pop(mid, None)
        # (the messages not sized are sized as the pass reaches them: `_upto`)
        self._flush()
        new._log = []
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
        new._models = []
        new._changed = {}
        new._same = {}
        # spend: kept up to the last old request (whose output may still have grown)
        new._spent = self._spent[: n - 1]
        new._spend_seen = dict(self._spend_seen)
        last_key = old.requests[-1].response_id or -old.requests[-1].index
        if new._spend_seen.get(last_key) == n - 1:
            del new._spend_seen[last_key]
        new.first_report = next((r.index for r in transcript.requests if r.usage is not None), None)
        with paused_gc():
            new._run = run.clone(new, n)
            new._done = n
            new._cumulative_spend(n - 1)
        return new

    def _prefetch_sizes(self, messages: Sequence[Message] | None = None) -> None:
        """Size every block of `messages` (default: the transcript's) once: in one batch when the
        estimator can batch (tiktoken), else text by text in a single pass over each message."""
        msgs = self.transcript.messages if messages is None else messages
        parts = self._parts
        # the last message with an id wins, as in `{m.id: m for m in messages}`
        batch = getattr(self.estimator, "texts", None)
        if callable(batch):
            texts: list[str] = []
            owners: list[tuple[Message, int]] = []
            for m in msgs:
                ts = _texts_of(m)
                owners.append((m, len(ts)))
                texts.extend(ts)
            unique = list(dict.fromkeys(texts))  # each distinct text tokenized once
            if len(unique) < len(texts):
                size_of = dict(zip(unique, batch(unique), strict=True))
                sizes = [size_of[t] for t in texts]
            else:
                sizes = list(batch(texts))
            pos = 0
            for m, n in owners:
                parts[m.id] = parts_of(m, sizes[pos : pos + n], texts[pos : pos + n])
                pos += n
            return
        est = self.estimator
        if type(est) is HeuristicEstimator:
            for m in msgs:
                parts[m.id] = _parts(m, heuristic_tokens, None, True)
        else:
            size = est.text
            for m in msgs:
                parts[m.id] = _parts(m, size)

    def _prefetch_local(self) -> None:
        msgs = self.transcript.messages
        batch = getattr(self.estimator, "messages", None)
        values = list(batch(msgs)) if callable(batch) else [self.estimator.message(m) for m in msgs]
        self._local = {m.id: int(v) for m, v in zip(msgs, values, strict=True)}

    def parts(self, message: Message) -> Parts:
        """The message's content by kind (cached by id)."""
        p = self._parts.get(message.id)
        if p is None:
            p = self._parts[message.id] = _parts(message, self.estimator.text)
        return p

    def local(self, message: Message) -> int:
        """The plain local estimate of a message (cached by id)."""
        v = self._local.get(message.id)
        if v is None:
            v = self._local[message.id] = self.estimator.message(message)
        return v

    def _set(self, mid: str, k: int, v: int) -> None:
        """Record weight `v` of `mid` from request k on (filed by `_flush`)."""
        self._log.append((mid, k, v))

    def _flush(self) -> None:
        """File the weights the pass set since the last call in `_versions` and `_changes`."""
        if not self._log:
            return
        with self._lock:
            self._file(self._log)

    def _file(self, log: list[tuple[str, int, int]]) -> None:
        versions = self._versions
        changes = self._changes
        for mid, k, v in log:
            ver = versions.get(mid)
            if ver is None:
                versions[mid] = _Versions([k], [v])
            else:
                ver.set(k, v)
            ids = changes.get(k)
            if ids is None:
                changes[k] = [mid]
            else:
                ids.append(mid)
        log.clear()

    def _cumulative_spend(self, start: int = 0) -> None:
        """Input plus output of every response, counted once, up to each request; from request
        `start` + 1 on (the ones before are in `_spent` and `_spend_seen` already)."""
        spent = self._spent
        total = spent[start - 1] if start else 0
        seen = self._spend_seen  # response -> 0-based request it was first counted at
        requests = self.transcript.requests
        for i in range(start, len(requests)):
            r = requests[i]
            u = r.usage
            if u is not None:
                key = r.response_id or -r.index  # no id: each request on its own
                if key not in seen:
                    seen[key] = i
                    total += u.spent
            spent.append(total)

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

    def weight_at(self, k: int, mid: str) -> int | None:
        """`weights(k).get(mid)`: one message's weight (or the overhead's), None where `mid` is not
        in request k's ledger; read one by one where the calibration can (no dict of the ledger)."""
        self._check(k)
        self._upto(k)
        lazy = self._lazy_positions(k)
        if lazy is None:
            return self._weights_at(k).get(mid)
        pos, n = lazy
        if mid != OVERHEAD_ID and pos.get(mid, n) >= n:
            return None
        return self.weight_of(k, mid)

    def _weights_at(self, k: int) -> dict[str, int]:
        """`weights(k)`, cached and shared: callers must not change it."""
        self._check(k)
        self._upto(k)
        self._flush()
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
        self._upto(k)
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
        self._flush()
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
        self._upto(k)
        if self._lazy_positions(k) is None:
            return self._weights_at(k)[mid]
        return self._read_weight(k, mid)

    def _read_weight(self, k: int, mid: str) -> int:
        """`weight_of(k, mid)` where the pass has reached k and request k's weights are read one
        by one (`_lazy_positions(k)`): the caller knows."""
        self._flush()
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
        self._upto(k)
        return self._steps[k - 1].predicted

    def context(self, k: int) -> int:
        """The calibrated total input at request k (the report itself where there is one)."""
        self._check(k)
        usage = self.transcript.requests[k - 1].usage
        if usage is None:
            return sum(self.weights(k).values())
        return usage.context

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
        self._upto(k)
        models = self._models
        if len(models) < k:
            with self._lock:
                # the requests calibrated so far keep their models: only the new ones are looked at
                wide = self.transcript.format not in CHOSEN_ON
                last = models[-1] if models else Coefficients(ratio=prior_ratio(self.estimator.name, wide))
                for step in self._steps[len(models) : k]:
                    if step.model is not None:
                        last = step.model
                    models.append(last)
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

    def changed_message(
        self, k: int, message: Message, base: Estimator, coefs: Coefficients | None = None
    ) -> int:
        """What a message that is not (or no longer) as in the ledger costs at request k
        (`coefs`: `model_at(k)`, where the caller has it)."""
        if self.mode == "proportional":
            return round(self._steps[k - 1].scale * base.message(message))
        x = self._changed_entry(message, base)[2]
        assert x is not None
        if coefs is None:
            coefs = self.model_at(k)
        # never below what its texts cost by themselves (a cleared result's placeholder included)
        return max(0, round(max(coefs.predict(x), coefs.content(x))))

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

    def _same_as_own(self, message: Message, own: Message) -> bool:
        """`message == own`, for `own` the transcript's message of its id (cached by both objects:
        a layer's changed copy is sized again at every request it is shaped at)."""
        hit = self._same.get(id(message))
        if hit is not None and hit[0] is message and hit[1] is own:
            return hit[2]
        same = message == own
        if len(self._same) >= CHANGED_CACHE:
            self._same.clear()
        self._same[id(message)] = (message, own, same)
        return same

    def _text_len(self, message: Message) -> int:
        """Characters of a message's texts (cached by message object)."""
        hit = self._changed.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[3]
        return self._changed_entry(message, None)[3]

    def estimator_at(self, k: int, base: Estimator) -> CalibratedEstimator:
        """An Estimator for shaping request k: calibrated weights for unchanged ledger messages."""
        self._check(k)
        self._upto(k)
        return CalibratedEstimator(self, k, base)


class _Pending:
    """A message whose weight is provisional until the next report."""

    __slots__ = ("cost", "known", "message", "mid", "think", "x")

    def __init__(self, message: Message, cost: float, known: float, x: Features, think: float) -> None:
        self.message = message
        self.mid = message.id
        self.cost = cost
        self.known = known
        """The part of `cost` that is known (a final response's output)."""
        self.x = x
        """Its features for learning (none for the known part; read only: replaced, not changed)."""
        self.think = think

    def copy(self) -> _Pending:
        return _Pending(self.message, self.cost, self.known, self.x, self.think)


def _outputs(transcript: Transcript) -> dict[str, int]:
    return {
        rid: usage.output
        for r in transcript.requests
        if (rid := r.response_id) is not None and (usage := r.usage) is not None
    }


CLEARING_LAYERS = frozenset({"tool_output_clear"})
"""Layers whose recorded firing (an OpenCollab trace's context_shaping) names the tool results it
cleared: from the next request on, the harness sent placeholders for them, as after a Claude Code
microcompact."""


def _micro_events(transcript: Transcript) -> list[RecordedEvent]:
    """The recorded clearings of tool output, in request order: Claude Code's microcompacts and
    the clearing layers an OpenCollab trace records (it reports the usage of what it sent)."""
    return sorted(
        (
            e
            for e in transcript.events
            if e.cleared_tool_ids
            and (
                e.kind is EventKind.MICROCOMPACT
                or (e.kind is EventKind.LAYER_FIRED and e.layer in CLEARING_LAYERS)
            )
        ),
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


def _targets(total: int, new: list[_Pending]) -> list[float]:
    """What each of `new` gets of `total`: its prediction plus a share of the error in proportion
    to the uncertain part of the prediction, never below zero (those at zero drop out)."""
    n = len(new)
    costs = [pm.cost for pm in new]
    err = total - sum(costs)
    unc = [max(c - pm.known, 0.0) + 1.0 for c, pm in zip(costs, new, strict=True)]
    target = [max(c, 0.0) for c in costs]
    for _ in range(n + 1):
        live = [i for i in range(n) if target[i] > 0 or err > 0]
        su = sum([unc[i] for i in live])
        if su <= 0:
            break
        nt = list(target)
        for i in live:
            nt[i] = target[i] + err * unc[i] / su
        neg = [i for i in live if nt[i] < 0]
        if not neg:
            return nt
        for i in neg:
            target[i] = 0.0
        err = total - sum(target)
    return target


class _DeltaRun:
    """The delta mode's single pass over the requests."""

    def __init__(self, cal: Calibration) -> None:
        self.cal = cal
        wide = cal.transcript.format not in CHOSEN_ON
        self.model = CostModel(prior_ratio(cal.estimator.name, wide), wide)
        self.strip_prior = (WIDE["strip_prior"], STRIP_PRIOR[1]) if wide else STRIP_PRIOR
        self.overhead: int | None = None
        self.cur: dict[str, int] = {}
        """Current weight of every message of the current segment's ledger."""
        self.total = 0
        """The sum of `cur`."""
        self.think: dict[str, float] = {}
        """The part of a message's weight that is reasoning still counted in the context."""
        self.think_known: set[str] = set()
        """Messages whose reasoning part was derived from a known output (not from features)."""
        self.cleared: set[str] = set()
        self.cleared_calls: set[str] = set()
        self.strip_seen = 0.0
        """Tokens of earlier turns' reasoning that came off at the turn boundaries so far (each
        boundary's excess of the prediction without stripping, within what could come off)."""
        self.strip_offered = 0.0
        """Tokens of reasoning that could have come off at those boundaries."""
        self.outputs = _outputs(cal.transcript)
        self.learned: dict[str, int] = {}
        """Feature name -> how many learned observations held it (see `_learns`)."""
        self.mature: set[str] = set()
        """The features learned from at least `FEATURE_MATURE` observations."""
        self.k = 0
        """The request being calibrated."""
        self.snapshot: Coefficients | None = None
        self.snapshot_n = -1
        self.state = _RunState()

    # -- the model's view of one message ---------------------------------------------------

    def predict(self, m: Message) -> _Pending:
        """Predicted cost of `m` as sent, with its known part, learning features and reasoning part.

        A response whose reported output is final costs that output plus `final`; its output, next
        to what it shows, also teaches the output model (an observation without unseen content,
        known before the next report). Any other response is sized by the output model."""
        model = self.model
        mid = m.id
        p = self.cal._parts.get(mid)
        if p is None:
            p = self.cal.parts(m)
        if mid in self.cleared:
            cx = self._cleared_x(m)
            # never below what the placeholder's text costs by itself
            return _Pending(m, max(model.predict(cx), model.content(cx)), 0.0, cx, 0.0)
        x = p.x  # shared with the parts: read only
        cost = model.predict(x)
        if not p.response:
            return _Pending(m, cost, 0.0, x, 0.0)
        out = self.outputs.get(mid)
        if out:
            coef = model._coef  # `final` is a prior's: always there (`model.coef("final")`)
            if out >= FINAL_FRACTION * (cost - coef["final"]):  # the output predicted from what it shows
                k = self.k
                # `self._learns(k, x, OUT_MATURE)`, written out
                if k <= OUT_MATURE or k % STRIDE == 0 or not self.mature.issuperset(x):
                    output = p.output
                    model.update(output, float(out))
                    self._count(output)
                think = max(0.0, out - model.predict(p.visible)) if p.thinking else 0.0
                return _Pending(m, out + coef["final"], float(out), _FINAL_X, think)
        think = 0.0
        if p.thinking:
            think = model.coef("out_thinking") * x.get("out_thinking", 0.0) + model.coef(
                "out_signature"
            ) * x.get("out_signature", 0.0)
            if out and think > out and out >= FINAL_FRACTION * think:
                think = float(out)  # reasoning never costs more than the output that produced it
        return _Pending(m, cost, 0.0, x, think)

    def _cleared_x(self, m: Message) -> Features:
        """The features of `m` with its cleared results replaced by the placeholder."""
        blocks = [
            replace(b, content=CLEARED_TEXT, media=0)
            if isinstance(b, ToolResultBlock) and b.call_id in self.cleared_calls
            else b
            for b in m.blocks
        ]
        copy = replace(m, blocks=tuple(blocks))
        return _parts(copy, self.cal.estimator.text).x

    def _learns(self, k: int, x: Features, mature: int = MATURE) -> bool:
        """Whether the observation made at request k teaches the model.

        Every one does for the first `MATURE` requests; after them one request in `STRIDE` does
        (the others would move the coefficients by a fraction of a percent of their error each:
        learning from all of them only costs time on long sessions), and so does every
        observation holding a feature learned from fewer than `FEATURE_MATURE` (a new tool, say)."""
        return k <= mature or k % STRIDE == 0 or not self.mature.issuperset(x)

    def _count(self, x: Features) -> None:
        learned = self.learned
        for name, v in x.items():
            if v:
                c = learned[name] = learned.get(name, 0) + 1
                if c >= FEATURE_MATURE:
                    self.mature.add(name)

    # -- the pass ----------------------------------------------------------------------------

    def _put(self, mid: str, w: int, k: int | None = None) -> None:
        """Set a message's current weight (and record it from request k on, if given)."""
        self.total += w - self.cur.get(mid, 0)
        self.cur[mid] = w
        if k is not None:
            self.cal._set(mid, k, w)

    def run(self, start: int = 0, stop: int | None = None) -> None:
        """Requests `start` up to `stop` (0-based, `stop` excluded; None: to the end); the pass's
        state is kept, so it can go on from where it stopped, for the same transcript
        (`Calibration._upto`) or a longer one (`Calibration.extended`)."""
        cal = self.cal
        tr = cal.transcript
        by_id = tr._index()
        micro = _micro_events(tr)
        steps = cal._steps
        parts = cal._parts
        model = self.model
        coef_of = model._coef.__getitem__  # (the model's coefficients change in place)
        predict = self.predict
        cleared = self.cleared
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
        for req in tr.requests[start:stop] if start or stop is not None else tr.requests:
            k = self.k = req.index
            step = steps[k - 1]
            ledger_len = req.ledger_len
            new_segment = req.segment != seg
            if new_segment:
                seg = req.segment
                ids = tr.segments[seg].message_ids
                pos = {mid: i for i, mid in enumerate(ids)}
                keep = {mid: w for mid, w in self.cur.items() if pos.get(mid, ledger_len) < ledger_len}
                self.cur = keep
                self.total = sum(keep.values())
                self.think = {mid: t for mid, t in self.think.items() if mid in keep}
                pending = {}
                removed = 0.0
                xadj = {}
                last_report = None
                seen = 0
                stripped_to = 0
            before = seen
            if ledger_len > seen:
                added = [by_id[mid] for mid in ids[seen:ledger_len]]
                seen = ledger_len
            else:
                added = []
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
                    self.think_known.discard(m.id)
                    if m.id not in pending:
                        # its calibrated weight comes off; what the placeholder weighs is a
                        # prediction until the next report, which it shares with the new messages
                        # (and teaches the model)
                        removed += self.cur.get(m.id, 0)
                    pm = pending[m.id] = predict(m)
                    self._put(m.id, round(pm.cost), k)
            cur = self.cur
            human_at = -1
            if added:
                total = self.total
                # reasoning of earlier turns: a new user turn may strip it
                turns = not new_segment
                human: str | None = None  # the last message added that starts a turn
                for m in added:
                    mid = m.id
                    p = parts.get(mid)
                    if p is None:
                        p = cal.parts(m)
                    if turns and p.human:
                        human = mid
                    if mid in cur:
                        continue  # preserved across a compaction: keeps its weight
                    if p.response or mid in cleared:
                        pm = predict(m)
                    else:
                        # `predict(m)` of any other message, written out
                        x = p.x
                        try:
                            cost: float = sum(map(mul, map(coef_of, x), x.values()))
                        except KeyError:  # a feature the model has not met yet
                            cost = model.predict(x)
                        pm = _Pending(m, cost, 0.0, x, 0.0)
                    pending[mid] = pm
                    w = round(pm.cost)
                    total += w
                    cur[mid] = w
                    if pm.think > 0:
                        self.think[mid] = pm.think
                        if pm.known:
                            self.think_known.add(mid)
                self.total = total
                if human is not None:
                    human_at = pos[human]
            if human_at > 0 and self.think:
                strip_ids = [
                    mid for mid, t in self.think.items() if t > 0 and stripped_to <= pos[mid] < human_at
                ]
                strippable = sum([self.think[mid] for mid in strip_ids]) if strip_ids else 0
            else:
                strip_ids = []
                strippable = 0
            ov = self.overhead or 0
            keep_total = ov + self.total
            share = self.strip_share() if strippable > 0 else 0.0
            if self.overhead is not None:
                step.predicted = round(keep_total - share * strippable)
            usage = req.usage
            if usage is None:
                if share > 0:
                    removed += self._strip(k, strip_ids, pending, xadj, share)
                    stripped_to = human_at
                for mid in pending:
                    cal._set(mid, k, self.cur[mid])
                cal._set(OVERHEAD_ID, k, ov)
                step.context = ov + self.total
                continue
            context = usage.context
            if strippable > 0:
                # what came off, as far as this report tells (what was added is a prediction)
                self.strip_seen += min(max(keep_total - context, 0.0), strippable)
                self.strip_offered += strippable
                share = self.strip_share()
                if share > 0:
                    removed += self._strip(k, strip_ids, pending, xadj, share)
                    stripped_to = human_at
            if last_report is not None and pending:
                # `self._learns(k, x)`, without building x when it does not
                learn = k <= MATURE or k % STRIDE == 0
                if not learn:
                    mature = self.mature
                    learn = not mature.issuperset(xadj) or not all(
                        [mature.issuperset(pm.x) for pm in pending.values()]
                    )
                if learn and k >= 2:
                    # a request on another model than the one before (a Skill or Task on another
                    # model: its tokenizer and system prompt differ), or whose prompt prefix
                    # changed: nothing in the text says what it costs
                    before_req = tr.requests[k - 2]
                    learn = not model_switched(before_req, req) and not prefix_changed(before_req, req)
                if learn:
                    x = dict(xadj)
                    get = x.get
                    known = 0.0
                    for pm in pending.values():
                        known += pm.known
                        for name, v in pm.x.items():
                            if v:
                                x[name] = get(name, 0.0) + v
                    model.update(x, context - last_report + removed - known, unseen=True)
                    self._count(x)
            if last_report is None:
                self._segment_start(k, context, pending)
            else:
                # `self._attribute(k, context, pending)`, written out for the usual case
                new = list(pending.values())
                rest = context - (ov + self.total - sum([cur[pm.mid] for pm in new])) if new else -1
                if rest >= 0 and self.overhead is not None:
                    self._spread(k, rest, new)
                else:
                    self._attribute(k, context, pending)
            pending = {}
            removed = 0.0
            xadj = {}
            last_report = context
            step.context = context
            if self.snapshot_n != model.n or self.snapshot is None:
                self.snapshot = model.snapshot()
                self.snapshot_n = model.n
            step.model = self.snapshot
        cal._strip_thinking = self.strip_share() >= 0.5
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

    def clone(self, cal: Calibration, start: int) -> _DeltaRun:
        """A copy of this pass's state for `cal` (a calibration of a longer transcript, the same
        up to request `start`, whose output may have grown), sharing nothing that going on would
        change."""
        run = _DeltaRun.__new__(_DeltaRun)
        run.cal = cal
        run.model = self.model.copy()
        run.overhead = self.overhead
        run.cur = dict(self.cur)
        run.total = self.total
        run.think = dict(self.think)
        run.think_known = set(self.think_known)
        run.cleared = set(self.cleared)
        run.cleared_calls = set(self.cleared_calls)
        run.strip_prior = self.strip_prior
        run.strip_seen = self.strip_seen
        run.strip_offered = self.strip_offered
        run.outputs = dict(self.outputs)
        for r in cal.transcript.requests[max(0, start - 1) :]:
            if r.response_id is not None and r.usage is not None:
                run.outputs[r.response_id] = r.usage.output
        run.learned = dict(self.learned)
        run.mature = set(self.mature)
        run.k = self.k
        run.snapshot = self.snapshot  # frozen: shared
        run.snapshot_n = self.snapshot_n
        st = self.state
        run.state = _RunState(
            mi=st.mi,
            seg=st.seg,
            ids=st.ids,
            pos=st.pos,
            seen=st.seen,
            last_report=st.last_report,
            pending={mid: pm.copy() for mid, pm in st.pending.items()},
            removed=st.removed,
            xadj=dict(st.xadj),
            stripped_to=st.stripped_to,
        )
        return run

    def strip_share(self) -> float:
        """The share of earlier turns' reasoning a new user turn takes off the context, learned
        from the turn boundaries so far (`STRIP_PRIOR` until they say otherwise)."""
        mean, weight = self.strip_prior
        return (mean * weight + self.strip_seen) / (weight + self.strip_offered)

    def _strip(
        self, k: int, ids: list[str], pending: dict[str, _Pending], xadj: Features, share: float = 1.0
    ) -> float:
        """Drop `share` of the reasoning of `ids` from their weights.

        Returns the tokens that came off as known amounts (a final response's reasoning is its
        output minus its visible blocks); reasoning that was sized by the model comes off as
        features instead (added to `xadj`, negated), so the differences keep teaching the model
        what reasoning costs.
        """
        off = 0.0
        whole = share >= 1.0
        for mid in ids:
            t = self.think.pop(mid, 0.0) * share
            m = self.cal.transcript.message(mid)
            p = self.cal.parts(m)
            t_name, s_name = p.reasoning
            if mid in pending:
                pm = pending[mid]
                pm.cost = max(0.0, pm.cost - t)
                if pm.known and whole:
                    # a final response without its reasoning: sized by its visible blocks
                    pm.known = 0.0
                    pm.x = {n: v for n, v in p.x.items() if n != t_name and n != s_name}
                elif pm.known:
                    pm.known = max(0.0, pm.known - t)
                elif whole:
                    # a new dict: `pm.x` may be the parts' own (read only)
                    pm.x = {n: v for n, v in pm.x.items() if n != t_name and n != s_name}
                else:
                    keep = 1.0 - share
                    pm.x = {n: v * keep if n in (t_name, s_name) else v for n, v in pm.x.items()}
                self._put(mid, round(pm.cost))
            else:
                w = self.cur[mid]
                nw = max(0, w - round(t))
                self._put(mid, nw, k)
                if mid in self.think_known:
                    off += w - nw
                else:
                    _add(xadj, t_name, -share * p.x.get(t_name, 0.0))
                    _add(xadj, s_name, -share * p.x.get(s_name, 0.0))
            self.think_known.discard(mid)
        return off

    def _segment_start(self, k: int, context: int, pending: dict[str, _Pending]) -> None:
        """First report of a segment (or of the transcript): pin the overhead, spread the rest."""
        new = list(pending.values())
        fixed = self.total - sum(self.cur[pm.mid] for pm in new)
        if self.overhead is None:
            predicted = sum(pm.cost for pm in new)
            self.overhead = max(0, context - fixed - round(predicted))
            if predicted > context - fixed and new:
                # the report cannot even hold the messages as estimated: that teaches the ratios
                x: Features = {}
                for pm in new:
                    for name, v in pm.x.items():
                        _add(x, name, v)
                self.model.update(x, context - fixed - sum(pm.known for pm in new), robust=False)
                self._count(x)
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
        cur = self.cur
        fixed = ov + self.total - sum([cur[pm.mid] for pm in new])
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
        n = len(new)
        if not n:
            return
        if n == 1:
            self._settle(k, new, [total])  # what `_targets` gives one message (total >= 0 here)
            return
        if n == 2:
            # `_targets` of two messages (a response and its tool's result) when it ends after
            # its first round, written out
            a, b = new
            ca = a.cost
            cb = b.cost
            err = total - (ca + cb)
            ta = max(ca, 0.0)
            tb = max(cb, 0.0)
            if err > 0 or (ta > 0 and tb > 0):
                ua = max(ca - a.known, 0.0) + 1.0
                ub = max(cb - b.known, 0.0) + 1.0
                su = ua + ub
                na = ta + err * ua / su
                nb = tb + err * ub / su
                if na >= 0 and nb >= 0:
                    self._settle(k, new, apportion(total, [na, nb]))
                    return
        self._settle(k, new, apportion(total, _targets(total, new)))

    def _settle(self, k: int, new: list[_Pending], ints: list[int]) -> None:
        """Record the weights `ints` of `new` from request k on."""
        log = self.cal._log
        cur = self.cur
        think = self.think
        delta = 0
        for pm, w in zip(new, ints, strict=True):
            mid = pm.mid
            if think and mid in think and pm.cost > 0:
                think[mid] = min(think[mid] * w / pm.cost, float(w))
            # `self._put(mid, w, k)`, written out
            delta += w - cur.get(mid, 0)
            cur[mid] = w
            log.append((mid, k, w))
        self.total += delta

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
