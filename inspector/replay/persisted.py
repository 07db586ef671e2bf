"""A policy run by a harness that keeps what it compacted, and the compaction storms it makes.

`persisted_run(replay)`: the compacted view is the next request's starting point, as in harnesses
that rewrite their history, which is where the gap between trigger and target decides whether the
next request triggers again: a target at the trigger storms, the default 75% does not. (A
read-time replay, `Replay.step`, reshapes the whole ledger at every request instead.)
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import Struct

from inspector.model import Message
from inspector.shaping import Action

from . import Replay

__all__ = ["STORM_SPAN", "PersistedRun", "PersistedStep", "persisted_run", "storms"]

STORM_SPAN = 3
"""Compactions at most this many requests apart belong to one storm (the findings' default)."""


class PersistedStep(Struct, frozen=True, kw_only=True):
    """One request of a persisted run: the view it started from, what it sent, what fired."""

    request: int
    input_tokens: int
    sent_tokens: int
    fired: list[str]
    compacted: bool
    """A layer removed or folded messages (a compaction: a new prefix, and with a summary a model call)."""
    removed: int
    summarized: int
    cleared: int


class PersistedRun(Struct, frozen=True, kw_only=True):
    """A policy run by a harness that keeps what it compacted, request by request."""

    policy: str
    window: int | None
    trigger: int
    target: int
    steps: list[PersistedStep]

    @property
    def compactions(self) -> list[int]:
        """The requests at which a compaction happened."""
        return [s.request for s in self.steps if s.compacted]

    def storms(self, span: int = STORM_SPAN) -> list[list[int]]:
        """Runs of two or more compactions whose neighbours are at most `span` requests apart."""
        return storms(self.compactions, span)

    def step(self, k: int) -> PersistedStep:
        return self.steps[k - 1]


_FOLDS = (Action.REMOVED, Action.SUMMARIZED)


def persisted_run(replay: Replay) -> PersistedRun:
    """The replay's policy run by a harness that keeps what it compacted.

    Request k starts from the view sent at request k-1 plus the messages added to the ledger
    since (a recorded compaction, a new ledger segment, starts over from that segment's ledger).
    A fresh pipeline of the policy shapes it with request k's calibrated weights; its output is
    what is sent and where request k+1 starts. A request compacts when a layer removes or folds
    messages (snip, auto compact); a clear alone is counted apart.
    """
    t = replay.transcript
    pipeline = replay.policy.pipeline(messages=t.messages)
    budget = replay.budget
    steps: list[PersistedStep] = []
    state: tuple[Message, ...] = ()
    previous = None
    for k in range(1, len(replay) + 1):
        request = t.request(k)
        ledger = replay.step(k).ledger
        if previous is None or previous.segment != request.segment:
            base = ledger
        else:
            base = state + ledger[1 + previous.ledger_len :]
        result = pipeline.run(base, budget, replay.sizer(k))
        state = result.final
        previous = request
        folded = any(d.action in _FOLDS for layer in result.layers for d in layer.decisions)
        steps.append(
            PersistedStep(
                request=k,
                input_tokens=result.input_tokens,
                sent_tokens=result.sent_tokens,
                fired=list(result.fired),
                compacted=folded,
                removed=sum(layer.removed for layer in result.layers),
                summarized=sum(layer.summarized for layer in result.layers),
                cleared=sum(layer.cleared for layer in result.layers),
            )
        )
    return PersistedRun(
        policy=replay.policy.name,
        window=budget.window,
        trigger=budget.trigger,
        target=budget.target,
        steps=steps,
    )


def storms(compactions: Sequence[int], span: int = STORM_SPAN) -> list[list[int]]:
    """Clusters of two or more requests whose neighbours are at most `span` apart."""
    clusters: list[list[int]] = []
    for k in sorted(compactions):
        if clusters and k - clusters[-1][-1] <= span:
            clusters[-1].append(k)
        else:
            clusters.append([k])
    return [c for c in clusters if len(c) >= 2]
