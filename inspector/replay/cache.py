"""Prompt-cache cost of a policy: how often the sent prefix is rewritten, and what that re-bills.

Providers cache the prompt by prefix: a request reads from the cache everything up to the first
place where it differs from what was sent before, and pays full price for the rest. Appending
new messages at the end keeps the whole earlier prompt cached; clearing, truncating, folding or
removing anything before the end (a "prefix rewrite") makes everything after that point be
billed again, although it was cached.

`cache_cost(replay)` compares the views sent at consecutive requests message by message (the
overhead pseudo-message first; two messages are the same when their id and content are equal)
and sizes them with the step's calibrated weights (a message a layer changed is sized by the
same calibrated estimator the pipeline used):

- `common_prefix_messages` / `prefix_tokens`: how much of request k's view equals the start of
  request k-1's (what the cache can serve);
- `rewrite`: some message request k-1 sent is not at the same place, unchanged, in request k's
  view (removed, cleared, truncated or folded), so the cache stops before the end of the old prompt;
- `rebilled_tokens`: the tokens of request k's view after the first difference that were sent,
  unchanged, at request k-1 (cached then, billed again now). New messages and changed ones are
  not counted: they would be billed anyway.

Request 1 has nothing cached before it. A recorded compaction (the harness rewrote its own
history) shows up as a rewrite too: the provider cannot tell the difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, count
from operator import is_not
from typing import TYPE_CHECKING

from msgspec import Struct

from inspector.model import Message, Transcript
from inspector.tokens.calibration import CalibratedEstimator

if TYPE_CHECKING:  # the replay package may import this module: no import cycle at run time
    from . import Replay, Step

__all__ = [
    "CACHE_READ_PRICE",
    "CACHE_WRITE_PRICE",
    "CacheCost",
    "CacheRow",
    "cache_cost",
    "cache_money",
    "common_prefix",
]

CACHE_READ_PRICE = 0.1
"""What a token read from the prompt cache costs, as a share of the base input price (Anthropic)."""
CACHE_WRITE_PRICE = 1.25
"""What a token written to the prompt cache costs (Anthropic, 5-minute cache): every uncached one."""


class CacheRow(Struct, frozen=True, kw_only=True):
    """One request's view against the previous request's view."""

    request: int
    messages: int
    """Messages in the view sent at this request (the overhead pseudo-message included)."""
    sent_tokens: int
    """Tokens of that view."""
    common_prefix_messages: int
    prefix_tokens: int
    """Tokens of the common prefix: what the prompt cache can serve."""
    rebilled_tokens: int
    rewrite: bool


class CacheCost(Struct, frozen=True, kw_only=True):
    """Per-request prefix comparison and the session's totals under one policy and window."""

    policy: str
    window: int | None
    requests: list[CacheRow]
    rewrites: int
    """Requests whose view rewrote the previous request's prompt before its end."""
    rebilled_tokens: int
    """Tokens billed again because of those rewrites, over the whole session."""
    sent_tokens: int
    """Tokens of every view sent, summed over the session."""
    cached_tokens: int
    """Of those, the tokens the prompt cache could serve (the common prefixes)."""

    def billed(self, read: float = CACHE_READ_PRICE, write: float = CACHE_WRITE_PRICE) -> float:
        """The session's input cost in base-price tokens: cached tokens at `read`, the rest at `write`."""
        return self.cached_tokens * read + (self.sent_tokens - self.cached_tokens) * write

    @property
    def rewrite_requests(self) -> list[int]:
        """The requests that rewrote the prefix, in order."""
        return [row.request for row in self.requests if row.rewrite]


def _same(a: Message, b: Message) -> bool:
    return a is b or (a.id == b.id and a.blocks == b.blocks)


def common_prefix(previous: Sequence[Message], current: Sequence[Message]) -> int:
    """How many messages at the start of `current` equal those at the start of `previous`."""
    n = min(len(previous), len(current))
    # the very same objects, skipped at C speed (most of a view is the one before it); `_same`
    # goes on from the first that is not
    i = next(compress(count(), map(is_not, previous, current)), n)
    while i < n and _same(previous[i], current[i]):
        i += 1
    return i


def _sizes(replay: Replay, step: Step) -> list[int]:
    """The tokens of every message of the view sent at `step`, with that step's weights."""
    weights = step.weights
    originals = {m.id: m for m in step.ledger}
    sizer: CalibratedEstimator | None = None
    out: list[int] = []
    for m in step.result.final:
        w = weights.get(m.id)
        orig = originals.get(m.id)
        if w is not None and orig is not None and (m is orig or m == orig):
            out.append(w)
            continue
        if sizer is None:
            sizer = replay.sizer(step.index)
        out.append(sizer.message(m))
    return out


def cache_cost(replay: Replay) -> CacheCost:
    """Prefix rewrites and re-billed tokens of every request of `replay` (see the module docstring)."""
    rows: list[CacheRow] = []
    previous: tuple[Message, ...] = ()
    for step in replay.steps():
        view = step.result.final
        sizes = _sizes(replay, step)
        if step.index == 1:
            rows.append(
                CacheRow(
                    request=1,
                    messages=len(view),
                    sent_tokens=sum(sizes),
                    common_prefix_messages=0,
                    prefix_tokens=0,
                    rebilled_tokens=0,
                    rewrite=False,
                )
            )
            previous = view
            continue
        p = common_prefix(previous, view)
        rewrite = p < len(previous)
        rebilled = 0
        if rewrite:
            before = {m.id: m for m in previous[p:]}
            for m, size in zip(view[p:], sizes[p:], strict=True):
                old = before.get(m.id)
                if old is not None and _same(old, m):
                    rebilled += size
        rows.append(
            CacheRow(
                request=step.index,
                messages=len(view),
                sent_tokens=sum(sizes),
                common_prefix_messages=p,
                prefix_tokens=sum(sizes[:p]),
                rebilled_tokens=rebilled,
                rewrite=rewrite,
            )
        )
        previous = view
    return CacheCost(
        policy=replay.policy.name,
        window=replay.window,
        requests=rows,
        rewrites=sum(row.rewrite for row in rows),
        rebilled_tokens=sum(row.rebilled_tokens for row in rows),
        sent_tokens=sum(row.sent_tokens for row in rows),
        cached_tokens=sum(row.prefix_tokens for row in rows),
    )


def cache_money(transcript: Transcript, cost: CacheCost) -> tuple[float | None, str | None]:
    """What the tokens `cost` re-billed cost in US dollars: each written to the prompt cache again
    at its request's model's cache-write price instead of read at its cache-read price
    (`inspector.model.cost`); (None, "no price for MODEL") where a model has no price."""
    from inspector.model.cost import rebilled_cost

    return rebilled_cost(transcript, ((row.request, row.rebilled_tokens) for row in cost.requests))
