"""Layer 1: the per-tool result budget (OpenCollab rung `per_tool_budget`)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from msgspec import Struct
from msgspec.structs import replace

from inspector.model import Message, ToolResultBlock

from .base import (
    Action,
    CarryingLayer,
    Decision,
    LayerResult,
    ResultScans,
    Sizer,
    acted,
    memo,
    no_change,
    starts_with,
)
from .budget import Budget
from .pinning import Pins

TRUNCATION_MARKER = "[truncated {dropped} chars — re-read a narrower range (file_read with offset/limit, or grep) to see the rest]"
MARKER_SEPARATOR = "\n\n"


def marker(dropped: int) -> str:
    """The text that ends a truncated result, separator included."""
    return MARKER_SEPARATOR + TRUNCATION_MARKER.format(dropped=dropped)


def fitted_head(length: int, limit: int) -> int:
    """The longest head of a `length`-char text such that head + marker fit in `limit` chars."""
    h = max(0, limit - len(marker(length - limit)))
    while h > 0 and h + len(marker(length - h)) > limit:
        h -= 1
    return h


def truncate(content: str, limit: int) -> str:
    """`content` cut to at most `limit` characters: its longest head that fits, then the marker.

    Content within the limit is returned as is.
    """
    if len(content) <= limit:
        return content
    h = fitted_head(len(content), limit)
    return content[:h] + marker(len(content) - h)


class PerToolResultBudget(CarryingLayer):
    """Always on. A tool result longer than `budget.tool_result_budget` characters (16,000 by
    default) keeps its head and ends with `[truncated N chars — re-read a narrower range (file_read
    with offset/limit, or grep) to see the rest]`; head + marker fit in the budget and N is the
    number of characters dropped. The model knows it saw part and can re-read precisely.

    Pinned messages are never changed. Should an estimator size the cut message higher than the
    original (rounding at the edge), the head is shortened further until it does not.
    """

    name = "per_tool_budget"
    label = "per-tool budget"
    reactive = False

    def __init__(self) -> None:
        self._scan: ResultScans[_Cuts] = ResultScans(lambda m, limit: _Cuts(m, limit) if _over(m, limit) else None)
        """Per limit: the cut copies of each message with a result over it (kept across requests)."""
        super().__init__()
        self._last: _Cut | None = None
        """The view before, its cuts and its output: a replay shapes every request's ledger, each
        the one before and a few messages more, so the cuts of the front are those made before."""

    def quiet(self, view: Sequence[Message], budget: Budget, estimator: Sizer) -> bool:
        """Whether `apply` would leave `view` as it is (`Pipeline.quiet`): no tool result over the
        limit outside a pinned message (the scan `apply` reads, carried on from the view before)."""
        with self._lock:
            return not self._scan(budget)(tuple(view), memo(estimator))

    def _apply(
        self,
        view: Sequence[Message],
        budget: Budget,
        estimator: Sizer,
        *,
        forced: bool = False,
        explain: bool = True,
    ) -> LayerResult:
        sizer = memo(estimator)
        src = tuple(view)
        before = sizer.view(src)
        limit = budget.tool_result_budget
        pins = budget.pins
        scan = self._scan(budget)
        last = self._last
        if (
            last is not None
            and last.sizer is sizer
            and last.key == (limit, pins)
            and starts_with(src, last.src, sizer)
        ):
            # the view before and a few messages more: its cuts hold, only the new ones are made
            outs, gain, done, base = list(last.outs), last.gain, len(last.src), last.result
        else:
            outs, gain, done, base = [], 0, 0, ()
        hits = scan(src, sizer)
        size = sizer.message
        for i, cuts in hits[bisect_left(hits, done, key=lambda h: h[0]) :]:
            new, dropped, longest = cuts.first_fitting(sizer)
            if new is None:
                continue
            outs.append((i, new, dropped, longest))
            gain += size(src[i]) - size(new)
        if outs and outs[-1][0] >= done:
            tail = list(src[done:])
            for i, new, _dropped, _longest in reversed(outs):
                if i < done:
                    break
                tail[i - done] = new
            result = base + tuple(tail)
        else:
            result = base + src[done:]
        if base:
            sizer.seed_shared(result, base, len(base))  # (for the next layer's comparison)
        self._last = _Cut(sizer, (limit, pins), src, tuple(outs), gain, result)
        if not outs:
            return no_change(self, src, before, f"no tool result over {limit:,} chars", forced)
        after = before - gain  # (what summing its messages gives, each cut's difference so summed)
        sizer.seed_view(result, after)
        decisions = [
            Decision(
                message_id=src[i].id,
                layer=self.name,
                action=Action.TRUNCATED,
                reason=(
                    f"tool result of {longest:,} chars over the {limit:,}-char tool result budget; "
                    f"{dropped:,} chars dropped, the head kept"
                ),
                tokens_before=size(src[i]),
                tokens_after=size(new),
            )
            for i, new, dropped, longest in (outs if explain else ())
        ]
        return acted(
            self,
            result,
            before,
            after,
            reason=f"{len(outs):,} of the tool results over {limit:,} chars truncated",
            decisions=decisions,
            forced=forced,
            truncated=len(outs),
        )

    @staticmethod
    def _cut(m: Message, limit: int, sizer: Sizer) -> tuple[Message | None, int, int]:
        """(cut message or None, chars dropped, longest original result length)."""
        original = sizer.message(m)
        over = {
            j: len(b.content)
            for j, b in enumerate(m.blocks)
            if isinstance(b, ToolResultBlock) and len(b.content) > limit
        }
        heads = {j: fitted_head(n, limit) for j, n in over.items()}
        while True:
            blocks = list(m.blocks)
            dropped = 0
            for j, h in heads.items():
                b = blocks[j]
                assert isinstance(b, ToolResultBlock)
                blocks[j] = replace(b, content=b.content[:h] + marker(over[j] - h))
                dropped += over[j] - h
            new = replace(m, blocks=tuple(blocks))
            if sizer.message(new) <= original:
                return new, dropped, max(over.values())
            if not any(heads.values()):
                return None, 0, max(over.values())
            heads = {j: max(0, h - max(16, h // 8)) for j, h in heads.items()}


class _Cut(Struct, frozen=True):
    """What the per-tool budget made of one view, with the sizer and parameters it used: (index,
    cut copy, chars dropped, longest result) per message it cut, what they saved, its output."""

    sizer: Sizer
    key: tuple[int, Pins]
    src: tuple[Message, ...]
    outs: tuple[tuple[int, Message, int, int], ...]
    gain: int
    result: tuple[Message, ...]


def _over(m: Message, limit: int) -> bool:
    return any(isinstance(b, ToolResultBlock) and len(b.content) > limit for b in m.blocks)


class _Cuts:
    """The cut copies `PerToolResultBudget._cut` tries for one message, in order, made once each.

    Which one is taken depends on the estimator (the first not sized above the original), so the
    sequence is kept and walked again at every request; the copies themselves are the same objects.
    """

    __slots__ = ("_heads", "_tried", "longest", "message", "over")

    def __init__(self, m: Message, limit: int) -> None:
        self.message = m
        self.over = {
            j: len(b.content)
            for j, b in enumerate(m.blocks)
            if isinstance(b, ToolResultBlock) and len(b.content) > limit
        }
        self.longest = max(self.over.values())
        self._heads: dict[int, int] | None = {j: fitted_head(n, limit) for j, n in self.over.items()}
        self._tried: list[tuple[Message, int, bool]] = []
        """(copy, chars dropped, whether every head was already empty)."""

    def _candidate(self, i: int) -> tuple[Message, int, bool] | None:
        while len(self._tried) <= i:
            heads = self._heads
            if heads is None:
                return None
            m = self.message
            blocks = list(m.blocks)
            dropped = 0
            for j, h in heads.items():
                b = blocks[j]
                assert isinstance(b, ToolResultBlock)
                blocks[j] = replace(b, content=b.content[:h] + marker(self.over[j] - h))
                dropped += self.over[j] - h
            empty = not any(heads.values())
            self._tried.append((replace(m, blocks=tuple(blocks)), dropped, empty))
            self._heads = None if empty else {j: max(0, h - max(16, h // 8)) for j, h in heads.items()}
        return self._tried[i]

    def first_fitting(self, sizer: Sizer) -> tuple[Message | None, int, int]:
        """What `_cut` returns: (cut message or None, chars dropped, longest original result length)."""
        original = sizer.message(self.message)
        i = 0
        while True:
            got = self._candidate(i)
            if got is None:
                return None, 0, self.longest
            new, dropped, empty = got
            if sizer.message(new) <= original:
                return new, dropped, self.longest
            if empty:
                return None, 0, self.longest
            i += 1
