"""Overflow recovery replayed: forced mode on a rejected call's ledger, and its single retry.

- `overflow_recovery(replay, k)`: what forced mode (every reactive layer compacting to its target
  unconditionally, pinned messages still protected) sends at request k, the estimates before and
  after, and whether that fits the window.
- `overflow_incidents(replay)` pairs every recorded "prompt is too long" error (a failed call, no
  request: an `EventKind.API_ERROR` event after request k) with its single retry and says whether
  the run stopped, and why. Forced mode for a rejected call runs on the ledger it was made with
  (`call_ledger`): the retry's (request k + 1, before its response), or, when no request
  followed, request k's ledger and what was written after it.

The protocol is OpenCollab's safety net (recompact once in forced mode, retry once, stop on a
second overflow). It sits with the findings because it reads the API errors they recognise
(`checks.api_errors`, `is_overflow_error`); the teaching scenarios narrate it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from msgspec import Struct

from inspector.model import SEGMENT_EVENTS, Message, RecordedEvent
from inspector.replay import Replay
from inspector.shaping import ShapeResult, group_spans
from inspector.shaping.pinning import Pins

from .checks import api_errors, call_text, is_overflow_error

__all__ = [
    "ForcedRecovery",
    "OverflowIncident",
    "call_ledger",
    "overflow_incidents",
    "overflow_recovery",
]


class ForcedRecovery(Struct, frozen=True, kw_only=True):
    """Forced mode at one request: what it sends, the estimates before and after, whether it fits.

    `request` is the request whose calibration sizes the messages: forced mode at request k runs
    on its ledger; for a rejected call (no request) on the ledger that call was made with
    (`call_after` says after which request it was made; see `call_ledger`).
    `tokens_before` is the estimate of the view the normal pipeline sends on that ledger (what
    the provider rejected), `tokens_after` that of the forced view. Above the trigger every
    reactive layer already compacts toward its target, so the two are equal there; forced mode
    frees more only where the estimate was under the trigger. `limit` is the window (what the
    provider accepts); `pinned_tokens` and `recent_tokens` are the parts of the forced view no
    layer may remove (pinned messages, the overhead among them; the last `groups_kept` groups).
    """

    request: int
    limit: int | None
    ledger_tokens: int
    tokens_before: int
    tokens_after: int
    fits: bool
    fired: list[str]
    removed: int
    cleared: int
    summarized: int
    pinned_tokens: int
    recent_tokens: int
    largest_id: str
    largest_tokens: int
    message_ids: list[str]
    """What forced mode sends, in order (the overhead pseudo-message first)."""
    view: tuple[Message, ...] = ()
    """The messages themselves, in that order."""
    call_after: int | None = None
    """Set when the ledger is a rejected call's (made after that request), not request `request`'s."""
    normal: ShapeResult | None = None
    """What the normal (unforced) pipeline made of the same ledger."""

    @property
    def freed(self) -> int:
        return self.tokens_before - self.tokens_after


class OverflowIncident(Struct, frozen=True, kw_only=True):
    """A call the provider rejected as too long, its single retry, and how it ended.

    The rejected call is no request: it was made after request `after_request` (k), and the
    transcript records it as an API error (`line`). Its retry is the next call: request k + 1
    when that went through, or another overflow with no request between (`retry_overflowed`).
    """

    after_request: int
    line: int | None
    error: str
    recovery: ForcedRecovery
    """Forced mode on the ledger the rejected call was made with."""
    retry: int | None
    """The request that retried it (k + 1), when the retry went through; None when the retry was
    rejected too or the transcript ends before any."""
    retry_overflowed: bool
    stopped: bool
    reason: str
    """Why the run stopped, or how it recovered, in one sentence with the numbers."""


def fired(result: ShapeResult) -> list[str]:
    return list(result.fired)


def _protected(
    view: Sequence[Message], keep: int, size: Callable[[Message], int], pins: Pins
) -> tuple[int, int]:
    """(tokens of the messages `pins` pins, tokens of the other messages in the last `keep` groups)."""
    pinned = sum(size(m) for m in view if pins(m))
    groups = group_spans(view, pins)
    recent = sum(
        size(m) for g in groups[max(1, len(groups) - keep) :] for m in g.messages(view) if not pins(m)
    )
    return pinned, recent


def overflow_recovery(
    replay: Replay, k: int, ledger: Sequence[Message] | None = None, *, call_after: int | None = None
) -> ForcedRecovery:
    """What forced mode sends at request `k` (overflow recovery), and whether it fits the window.

    Runs a fresh pipeline of the replay's policy over request k's ledger (or `ledger`, sized
    with request k's calibration: a rejected call's, see `call_ledger`; `call_after` says after
    which request that call was made) with `forced=True`: every reactive layer compacts toward
    its target even under the trigger; pinned messages and the last groups stay. Fits means the
    forced estimate is at most the window (unknown window: at most the trigger).
    """
    step = replay.step(k)
    sizer = replay.sizer(k)
    messages = replay.transcript.messages
    if ledger is None or [m.id for m in ledger] == [m.id for m in step.ledger]:
        ledger, normal = step.ledger, step.result
    else:
        ledger = tuple(ledger)
        normal = replay.policy.pipeline(messages=messages).run(ledger, replay.budget, sizer)
    forced = replay.policy.pipeline(messages=messages).run(ledger, replay.budget, sizer, forced=True)
    view = forced.final
    pinned, recent = _protected(view, replay.budget.groups_kept, sizer.message, replay.budget.pins)
    largest = max(view, key=sizer.message)
    limit = replay.budget.window
    return ForcedRecovery(
        request=k,
        limit=limit,
        ledger_tokens=normal.input_tokens,
        tokens_before=normal.sent_tokens,
        tokens_after=forced.sent_tokens,
        fits=forced.sent_tokens <= (limit if limit is not None else replay.budget.trigger),
        fired=fired(forced),
        removed=sum(layer.removed for layer in forced.layers),
        cleared=sum(layer.cleared for layer in forced.layers),
        summarized=sum(layer.summarized for layer in forced.layers),
        pinned_tokens=pinned,
        recent_tokens=recent,
        largest_id=largest.id,
        largest_tokens=sizer.message(largest),
        message_ids=[m.id for m in view],
        view=view,
        call_after=call_after,
        normal=normal,
    )


def call_ledger(replay: Replay, error: RecordedEvent) -> tuple[int, tuple[Message, ...]]:
    """The ledger a failed call (an API error after request k, no request) was made with, and
    the request whose calibration sizes it.

    The retry's ledger (request k + 1, before its response: the overhead first), without what
    was written after the error; when no request followed (or a compaction recorded after the
    error began the retry's ledger afresh), request k's ledger and the messages
    of its segment written after it and before the error (the segment begun by a compaction
    recorded in between, if there is one), sized as at request k.
    """
    t = replay.transcript
    n = len(replay)
    k = error.after_request
    line = error.line

    def before(m: Message) -> bool:
        return line is None or m.origin is None or m.origin.line < line

    # a compaction (or a cleared context) recorded after the error began the retry's ledger afresh
    reset = any(
        e.kind in SEGMENT_EVENTS and e.after_request == k and (line is None or (e.line or 0) > line)
        for e in t.events
    )
    if k < n and (not reset or k == 0):
        ledger = replay.step(k + 1).ledger
        cut = len(ledger)
        while cut > 1 and not before(ledger[cut - 1]):
            cut -= 1
        return k + 1, ledger[:cut]
    step = replay.step(k)
    seg = step.request.segment
    begun = [
        e.segment
        for e in t.events
        if e.kind in SEGMENT_EVENTS
        and e.after_request == k
        and e.segment is not None
        and seg < e.segment < len(t.segments)
        and (line is None or (e.line or 0) < line)
    ]
    if begun:
        ids = t.segments[max(begun)].message_ids
        return k, (step.ledger[0], *(m for i in ids if before(m := t.message(i))))
    added: list[Message] = []
    for mid in t.segments[seg].message_ids[step.request.ledger_len :]:
        m = t.message(mid)
        if not before(m):
            break
        added.append(m)
    return k, (*step.ledger, *added)


def _forced_text(recovery: ForcedRecovery) -> str:
    if recovery.tokens_after < recovery.tokens_before:
        return (
            f"forced mode recompacted it from {recovery.tokens_before:,} to {recovery.tokens_after:,} tokens"
        )
    return (
        f"forced mode could free nothing beyond what the pipeline had already done ({recovery.tokens_after:,} "
        "tokens)"
    )


def overflow_incidents(replay: Replay) -> list[OverflowIncident]:
    """Every recorded overflow with its single retry: recovered, or a graceful stop with its reason.

    The protocol replayed is OpenCollab's safety net: on a provider overflow, recompact once in
    forced mode and retry once; a second overflow stops the run (phase STOPPED, with a reason).
    The overflows are the failed calls the harness recorded (`EventKind.API_ERROR` events whose
    text says "prompt is too long"...): a call after request k is retried by the next call,
    which is request k + 1 when it went through; an overflow after the same request k (no request
    between) is that retry rejected, not a new incident (a third in a row would be: a new run
    after a manual continue). Forced mode runs on the ledger the rejected call was made with
    (`call_ledger`). A transcript with no request has no ledger to replay: no incident.
    """
    n = len(replay)
    if n == 0:
        return []
    errors = [e for e in api_errors(replay.transcript) if is_overflow_error(e)]
    out: list[OverflowIncident] = []
    i = 0
    while i < len(errors):
        error = errors[i]
        k = error.after_request
        again = i + 1 < len(errors) and errors[i + 1].after_request == k
        i += 2 if again else 1
        at, ledger = call_ledger(replay, error)
        recovery = overflow_recovery(replay, at, ledger, call_after=k)
        call = call_text(k)
        limit = f"{recovery.limit:,}" if recovery.limit is not None else "unknown"
        went_on = k < n
        retry: int | None = None
        if again:
            still = (
                f"still over the {limit}-token window"
                if not recovery.fits
                else f"within the {limit}-token window by the estimate"
            )
            reason = (
                f"context overflow: {call} was rejected as too long; {_forced_text(recovery)}, {still}, and "
                "the single retry (the next call, no request between) was rejected too, so the run stopped: "
                f"{recovery.pinned_tokens:,} tokens are pinned and {recovery.recent_tokens:,} sit in the last "
                f"{replay.budget.groups_kept} groups, which no layer removes"
            )
            if went_on:
                reason += f"; the session went on at request {k + 1}"
            stopped = True
        elif not went_on:
            reason = (
                f"{call} was rejected as too long and the transcript ends before any retry; forced mode "
                f"would send {recovery.tokens_after:,} tokens (limit {limit})"
            )
            stopped = True
        else:
            retry = k + 1
            reason = f"{call} was rejected as too long; {_forced_text(recovery)} and the retry (request {retry}) went through"
            stopped = False
        out.append(
            OverflowIncident(
                after_request=k,
                line=error.line,
                error=error.detail or "",
                recovery=recovery,
                retry=retry,
                retry_overflowed=again,
                stopped=stopped,
                reason=reason,
            )
        )
    return out
