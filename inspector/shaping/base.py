"""What every layer shares: decisions, layer results, the layer protocol and the per-run token memo."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from inspector.model import Message

from .budget import Budget


class Action(StrEnum):
    """What a layer did to one message."""

    TRUNCATED = "truncated"
    CLEARED = "cleared"
    REMOVED = "removed"
    SUMMARIZED = "summarized"
    KEPT_PINNED = "kept_pinned"
    KEPT_RECENT = "kept_recent"

    @property
    def changed(self) -> bool:
        return self not in (Action.KEPT_PINNED, Action.KEPT_RECENT)


@dataclass(frozen=True, slots=True)
class Decision:
    """A record of what one layer did to one message, and why, with the numbers.

    `tokens_after` is 0 for a message that left the view (removed, or folded into a summary).
    """

    message_id: str
    layer: str
    action: Action
    reason: str
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True, slots=True)
class LayerResult:
    """One layer's output: its view, the estimates before and after, whether it fired and why.

    `fired` is True when the output differs from the input; `reason` says why it did or did not
    ("4,210 under trigger 167,000"). Counts are of messages.
    """

    name: str
    label: str
    view: tuple[Message, ...]
    tokens_before: int
    tokens_after: int
    fired: bool
    reason: str
    decisions: tuple[Decision, ...] = ()
    truncated: int = 0
    cleared: int = 0
    removed: int = 0
    summarized: int = 0
    forced: bool = False

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after


class Sizer(Protocol):
    """What layers need of an estimator (inspector.tokens.Estimator satisfies it)."""

    def text(self, text: str) -> int: ...

    def message(self, message: Message) -> int: ...


class TokenMemo:
    """An estimator wrapper that sizes each message object once.

    Keyed by object identity, holding a reference to each message so an id is never reused while
    the memo lives. A layer that changes a message makes a new object, which is sized afresh; an
    unchanged message keeps its first estimate through every layer. One memo per run is the
    default; a caller that shapes many requests of one transcript may keep one memo across runs.
    """

    def __init__(self, estimator: Sizer) -> None:
        self.estimator = estimator
        self.name: str = str(getattr(estimator, "name", type(estimator).__name__))
        self._memo: dict[int, tuple[Message, int]] = {}

    def text(self, text: str) -> int:
        return self.estimator.text(text)

    def message(self, message: Message) -> int:
        hit = self._memo.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        tokens = self.estimator.message(message)
        self._memo[id(message)] = (message, tokens)
        return tokens

    def view(self, messages: Iterable[Message]) -> int:
        """The estimate of a view: the sum of its messages' estimates."""
        size = self.message
        return sum(size(m) for m in messages)

    def __len__(self) -> int:
        return len(self._memo)


def memo(estimator: Sizer) -> TokenMemo:
    """`estimator` itself if it is already a TokenMemo, else a fresh memo around it."""
    return estimator if isinstance(estimator, TokenMemo) else TokenMemo(estimator)


class Layer(Protocol):
    """A shaping layer: input view in, output view out, plus decisions. Never mutates its input.

    `name` is the rung key ("tool_output_clear"), `label` the words ("tool output clear").
    `reactive` layers do nothing unless the estimate exceeds the trigger (or `forced`).
    """

    name: str
    label: str
    reactive: bool

    def apply(
        self, view: Sequence[Message], budget: Budget, estimator: Sizer, *, forced: bool = False
    ) -> LayerResult: ...


def no_change(layer: Layer, view: tuple[Message, ...], tokens: int, reason: str, forced: bool) -> LayerResult:
    """The result of a layer that left its input as it was, saying why."""
    return LayerResult(
        name=layer.name,
        label=layer.label,
        view=view,
        tokens_before=tokens,
        tokens_after=tokens,
        fired=False,
        reason=reason,
        forced=forced,
    )


def under_trigger(tokens: int, budget: Budget) -> str:
    """ "4,210 under trigger 167,000" (or "at trigger" when equal)."""
    word = "at" if tokens == budget.trigger else "under"
    return f"{tokens:,} {word} trigger {budget.trigger:,}"


def pressure(tokens: int, budget: Budget, forced: bool) -> str:
    """Why a reactive layer acts: "estimate 171,204 > trigger 167,000", or the forced variant."""
    if forced and tokens <= budget.trigger:
        return f"forced (overflow recovery), estimate {tokens:,}"
    prefix = "forced (overflow recovery), " if forced else ""
    return f"{prefix}estimate {tokens:,} > trigger {budget.trigger:,}"


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"
