"""Where the cost model starts before any report: the priors, the bounds of its coefficients, and
how much wider they are on harnesses the priors were not chosen on (see the package docstring)."""

from __future__ import annotations

import math
from enum import StrEnum
from functools import lru_cache


class Kind(StrEnum):
    """Kinds of content, each with its own learned ratio to the base estimate."""

    TEXT = "text"
    THINKING = "thinking"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"


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
    "tool_result_pieces": (0.3, 0.2),  # see PIECE_TOKENS
    "tool_call_chars": (0.0, 0.02),
    "tool_call_lines": (0.0, 0.75),
    "error_results": (0.0, 50.0),
    "bg_shell": (0.0, 50.0),  # per running background shell, beyond its reminder's text
}
"""Before any report: ratios of 1 to the base estimate, a few tokens of framing, images ~800."""
PIECE_TOKENS = 1.25
"""Claude tokens per piece of a tool result (`features.pieces`: a run of letters, digits or
punctuation, with its space; a run of whitespace). The character heuristic sizes a result by its
length; what it costs follows how many pieces it splits into (67 single-tool results of 4,000+
characters on 10 corpus files: 1.245 tokens a piece, 1.236-1.252 with any one file left out; the
spread of tokens per piece within one tool of one file is under half that of tokens per character,
median 2.1% against 4.6%, p90 7.3% against 19.2%: a whitespace-heavy Read costs 3.4 characters a
token, a JSON MCP result 2.7). Under the heuristic a result gets `tool_result_pieces` = this times
its pieces minus its estimate, whose coefficient (prior in `PRIORS`, chosen by
`benchmarks.calibration_priors`) is how far the prediction moves from characters to pieces; cl100k
already counts pieces (the same pre-tokenizer), so tiktoken sizes get no such feature."""
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
KEEPS_REASONING = ("claude-opus-",)
"""Model families that keep earlier turns' reasoning in the context (a new user turn takes none
of it off): their sessions' turn boundaries start from a share of 0 instead of `STRIP_PRIOR`'s.
Evidence (every corpus file with reasoning at a turn boundary): opus-4-6 (spotter-fa812bfe
requests 44 and 57: 34 and 0 of 780 and 80 tokens came off; pooknast-da0d9633 request 12: 0 of
48) and opus-4-1 (kesslerio-c7428042 requests 24 and 47: 353 of 1,205, 0 of 804) keep it;
sonnet-4 (lroystack), sonnet-4-5 (applabnl, thomasjmcgovern) and haiku-4-5 (fasthooks) on Claude
Code 1.x and 2.0 lose most of it. Only where the share starts: each session still learns its own."""
KEEPS_FROM_VERSION = (2, 1)
"""Claude Code from 2.1 keeps earlier turns' reasoning on every model (it sends the history as
it was, so the cache holds): the bundled long-session sample (2.1.39, sonnet-4-5) loses 15, 13,
12 and 0 of 168, 6,498, 2,336 and 1,183 tokens at its four turn boundaries, reading from the
cache more than the whole request before each time; spotter-fa812bfe (2.1.39) and
pooknast-da0d9633 (2.1.96) keep it too. The 2.0 sessions lose it (thomasjmcgovern 2.0.22 request
29: all 822 tokens, the cache read stopping at the first message)."""


def _version(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    out: list[int] = []
    for part in text.split("."):
        digits = "".join(c for c in part if c.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out) or None


def keeps_reasoning(model: str | None, harness_version: str | None = None) -> bool:
    """Whether a session on `model` written by Claude Code `harness_version` keeps earlier turns'
    reasoning (`KEEPS_REASONING`, `KEEPS_FROM_VERSION`)."""
    if model is not None and model.startswith(KEEPS_REASONING):
        return True
    version = _version(harness_version)
    return version is not None and version >= KEEPS_FROM_VERSION


_SQRT_2PI = math.sqrt(2.0 * math.pi)
RATIO_BOUNDS = (0.2, 6.0)
KIND_NAMES = frozenset(k.value for k in Kind) | {"out_text", "out_thinking", "out_call"}
_OFFSETS = ("result:",)
"""Prefixes of per-tool ratio offsets."""
_SHAPES = frozenset(
    {
        "tool_result_chars",
        "tool_result_lines",
        "tool_result_pieces",
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
    if name == "tool_result_pieces":
        # evidence from Claude's tokenizer only: elsewhere a session learns it from nothing
        return 0.0, sd * WIDE_SD
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
