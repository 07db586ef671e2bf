"""Two policies at the same request, side by side: what each sends and what each took away.

`compare(replay_a, replay_b, k)` shapes request k of one transcript under both replays (each its
own policy and window) and says, for each side, the estimate of what it sends, which layers
fired, and which ledger messages it removed, cleared, truncated or folded into a summary (by id,
with counts), plus the messages one side kept as they were and the other did not.
`msgspec.to_builtins` of it is the JSON the report and the app's compare mode show.
"""

from __future__ import annotations

from msgspec import Struct

from inspector.shaping import Action

from . import Replay, ReplayError, Step

FATES = ("removed", "summarized", "cleared", "truncated")


class Side(Struct, frozen=True, kw_only=True):
    """One policy's final view of the request.

    `sent_tokens`: the calibrated estimate of the final view; `input_tokens`: of the whole ledger.
    `removed` / `summarized` / `cleared` / `truncated`: ledger message ids by what happened to
    them in the end (a message folded into a summary counts as summarized even if a layer before
    had cleared it). `added`: messages in the final view that are not in the ledger (summaries,
    restored files). `counts`: the length of each of those lists. `fired`: the layers that
    changed their input, with their reasons in `reasons` and their labels in `labels`.
    """

    policy: str
    window: int | None
    trigger: int
    target: int
    blocking: int | None
    input_tokens: int
    sent_tokens: int
    saved_tokens: int
    messages_sent: int
    fired: list[str]
    reasons: dict[str, str]
    labels: dict[str, str] = {}
    """Each layer's name -> its label, as the app's columns and the report say it ("microcompact")."""
    removed: list[str]
    summarized: list[str]
    cleared: list[str]
    truncated: list[str]
    added: list[str]
    counts: dict[str, int]


class Comparison(Struct, frozen=True, kw_only=True):
    """Two policies at request `step`: each side, and where they differ.

    `only_in_a` / `only_in_b`: ledger messages one side still sends (in any form) and the other
    does not; `kept_only_by_a` / `kept_only_by_b`: messages one side sends exactly as recorded and
    the other changed or dropped; `sent_difference`: a's sent tokens minus b's.
    """

    step: int
    ledger_messages: int
    a: Side
    b: Side
    only_in_a: list[str]
    only_in_b: list[str]
    kept_only_by_a: list[str]
    kept_only_by_b: list[str]
    sent_difference: int


def _side(replay: Replay, step: Step) -> Side:
    result = step.result
    ledger = {m.id: m for m in step.ledger}
    final = {m.id: m for m in result.final}
    fate: dict[str, str] = {}
    for d in result.decisions:
        if d.message_id not in ledger or not d.action.changed:
            continue
        word = {
            Action.REMOVED: "removed",
            Action.SUMMARIZED: "summarized",
            Action.CLEARED: "cleared",
            Action.TRUNCATED: "truncated",
        }.get(d.action)
        if word is None:
            continue
        if d.message_id in final and word in ("removed", "summarized"):
            continue  # snip's kept leader: it is truncated, not gone
        # the last word wins, except that leaving the view beats any change made before
        if fate.get(d.message_id) in ("removed", "summarized") and word in ("cleared", "truncated"):
            continue
        fate[d.message_id] = word
    for mid in ledger:
        if mid not in final and mid not in fate:
            fate[mid] = "removed"
        elif mid in final and final[mid] != ledger[mid] and mid not in fate:
            fate[mid] = "truncated"
    order = {m.id: i for i, m in enumerate(step.ledger)}
    lists = {f: sorted((mid for mid, w in fate.items() if w == f), key=order.__getitem__) for f in FATES}
    added = [m.id for m in result.final if m.id not in ledger]
    budget = step.budget
    return Side(
        policy=replay.policy.name,
        window=budget.window,
        trigger=budget.trigger,
        target=budget.target,
        blocking=budget.blocking,
        input_tokens=result.input_tokens,
        sent_tokens=result.sent_tokens,
        saved_tokens=result.input_tokens - result.sent_tokens,
        messages_sent=len(result.final),
        fired=[layer.name for layer in result.layers if layer.fired],
        reasons={layer.name: layer.reason for layer in result.layers},
        labels={layer.name: layer.label for layer in result.layers},
        removed=lists["removed"],
        summarized=lists["summarized"],
        cleared=lists["cleared"],
        truncated=lists["truncated"],
        added=added,
        counts={**{f: len(lists[f]) for f in FATES}, "added": len(added)},
    )


def compare(replay_a: Replay, replay_b: Replay, k: int) -> Comparison:
    """Request k (1-based) under both replays' policies and windows, side by side.

    Both replays must be of the same transcript (`Replay.with_settings` makes the second one
    cheaply); ReplayError otherwise, or when request k does not exist.
    """
    ta, tb = replay_a.transcript, replay_b.transcript
    if ta is not tb and (ta.path != tb.path or len(ta.requests) != len(tb.requests)):
        raise ReplayError("compare needs two replays of the same transcript")
    step_a, step_b = replay_a.step(k), replay_b.step(k)
    a, b = _side(replay_a, step_a), _side(replay_b, step_b)
    ids = [m.id for m in step_a.ledger]
    ledger = {m.id: m for m in step_a.ledger}
    final_a = {m.id: m for m in step_a.result.final}
    final_b = {m.id: m for m in step_b.result.final}
    intact_a = {mid for mid in ids if final_a.get(mid) == ledger[mid]}
    intact_b = {mid for mid in ids if final_b.get(mid) == ledger[mid]}
    return Comparison(
        step=k,
        ledger_messages=len(ids),
        a=a,
        b=b,
        only_in_a=[mid for mid in ids if mid in final_a and mid not in final_b],
        only_in_b=[mid for mid in ids if mid in final_b and mid not in final_a],
        kept_only_by_a=[mid for mid in ids if mid in intact_a and mid not in intact_b],
        kept_only_by_b=[mid for mid in ids if mid in intact_b and mid not in intact_a],
        sent_difference=a.sent_tokens - b.sent_tokens,
    )


__all__ = ["Comparison", "Side", "compare"]
