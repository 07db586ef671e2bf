"""Teaching scenarios: their replays, their tour stops, overflow recovery and compaction storms.

The scenario sessions are generated and registered by `inspector.samples` (`SCENARIOS`: file,
window, policy, the policy a lesson compares against). Everything a tour says about them is
computed here from their replays, so a stop cannot drift from the data: each scenario has a
function that finds its key requests (the first request where a layer fires, the request the
provider rejected, the first compaction of a storm...) and writes one paragraph per stop with
the numbers of that replay.

Two phenomena need more than one replayed request, and have their own functions:

- `overflow_recovery(replay, k)`: what forced mode (every reactive layer compacting to its target
  unconditionally, pinned messages still protected) sends at request k, the estimates before and
  after, and whether that fits the window; `overflow_incidents(replay)` pairs every recorded
  "prompt is too long" error (a failed call, no request: an `EventKind.API_ERROR` event after
  request k) with its single retry and says whether the run stopped, and why. Forced mode for a
  rejected call runs on the ledger it was made with: the retry's (request k + 1, before its
  response), or, when no request followed, request k's ledger and what was written after it.
- `persisted_run(replay)`: the policy run by a harness that keeps what it compacted (the
  compacted view is the next request's starting point, as in harnesses that rewrite their
  history), which is where the gap between trigger and target decides whether the next request
  triggers again: a target at the trigger storms, the default 75% does not. (A read-time replay,
  `Replay.step`, reshapes the whole ledger at every request instead.)

Pure core: no Textual. `tour(name)` is what an app or a `tour` command would list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

from msgspec import Struct

from inspector.findings.checks import api_errors, call_text, is_overflow_error
from inspector.formats import load
from inspector.model import SEGMENT_EVENTS, Message, RecordedEvent, SourceKind, Transcript
from inspector.replay import Replay, ReplayError
from inspector.replay.cache import cache_cost
from inspector.samples import SCENARIOS, SampleInfo
from inspector.shaping import Action, ShapeResult, group_spans, load_policy, pin_label
from inspector.shaping.base import plural
from inspector.tokens.calibration import CalibratedEstimator

__all__ = [
    "STORM_SPAN",
    "ForcedRecovery",
    "OverflowIncident",
    "PersistedRun",
    "PersistedStep",
    "Stop",
    "Tour",
    "call_ledger",
    "open_scenario",
    "overflow_incidents",
    "overflow_recovery",
    "persisted_run",
    "scenario_info",
    "scenario_names",
    "stops",
    "storms",
    "tour",
]

STORM_SPAN = 3
"""Compactions at most this many requests apart belong to one storm (the findings' default)."""


# --------------------------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------------------------


class Stop(Struct, frozen=True, kw_only=True):
    """A key request of a scenario and what a student should see there, in one paragraph."""

    request: int
    title: str
    narration: str
    policy: str
    """The policy whose replay the numbers come from (the scenario's own, or the one it compares)."""
    layer: str | None = None
    """The layer the stop is about, where there is one."""


class Tour(Struct, frozen=True, kw_only=True):
    """A scenario and its stops, in request order."""

    name: str
    title: str
    description: str
    file: str
    window: int
    policy: str
    compare_policy: str | None
    requests: int
    stops: list[Stop]


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


# --------------------------------------------------------------------------------------------
# Opening scenarios
# --------------------------------------------------------------------------------------------


def scenario_names() -> list[str]:
    """The registered scenarios, in registry order (the order of the lessons)."""
    return list(SCENARIOS)


def scenario_info(name: str) -> SampleInfo:
    """The registry entry of scenario `name` (KeyError naming the known ones)."""
    try:
        return SCENARIOS[name]
    except KeyError:
        raise KeyError(f"unknown scenario {name!r}; known scenarios: {', '.join(SCENARIOS)}") from None


@cache
def _transcript(name: str) -> Transcript:
    return load(scenario_info(name).path)


def open_scenario(name: str, policy: str | None = None, window: int | None = None) -> Replay:
    """The scenario's transcript replayed with its registered policy and window (or those given)."""
    info = scenario_info(name)
    return Replay.open(
        _transcript(name), policy=load_policy(policy or info.policy), window=window or info.window
    )


def _compare(name: str, replay: Replay) -> Replay | None:
    other = scenario_info(name).compare_policy
    return replay.with_settings(load_policy(other)) if other is not None else None


# --------------------------------------------------------------------------------------------
# Overflow recovery
# --------------------------------------------------------------------------------------------


def _sizer(replay: Replay, k: int) -> CalibratedEstimator:
    return CalibratedEstimator(replay.calibration, k, replay.estimator)


def _fired(result: ShapeResult) -> list[str]:
    return list(result.fired)


def _protected(view: Sequence[Message], keep: int, size: Callable[[Message], int]) -> tuple[int, int]:
    """(tokens of pinned messages, tokens of the other messages in the last `keep` groups)."""
    pinned = sum(size(m) for m in view if m.pinned)
    groups = group_spans(view)
    recent = sum(
        size(m) for g in groups[max(1, len(groups) - keep) :] for m in g.messages(view) if not m.pinned
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
    sizer = _sizer(replay, k)
    messages = replay.transcript.messages
    if ledger is None or [m.id for m in ledger] == [m.id for m in step.ledger]:
        ledger, normal = step.ledger, step.result
    else:
        ledger = tuple(ledger)
        normal = replay.policy.pipeline(messages=messages).run(ledger, replay.budget, sizer)
    forced = replay.policy.pipeline(messages=messages).run(ledger, replay.budget, sizer, forced=True)
    view = forced.final
    pinned, recent = _protected(view, replay.budget.groups_kept, sizer.message)
    largest = max(view, key=sizer.message)
    limit = replay.budget.window
    return ForcedRecovery(
        request=k,
        limit=limit,
        ledger_tokens=normal.input_tokens,
        tokens_before=normal.sent_tokens,
        tokens_after=forced.sent_tokens,
        fits=forced.sent_tokens <= (limit if limit is not None else replay.budget.trigger),
        fired=_fired(forced),
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


# --------------------------------------------------------------------------------------------
# Persisted runs and storms
# --------------------------------------------------------------------------------------------

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
        result = pipeline.run(base, budget, _sizer(replay, k))
        state = result.final
        previous = request
        folded = any(d.action in _FOLDS for layer in result.layers for d in layer.decisions)
        steps.append(
            PersistedStep(
                request=k,
                input_tokens=result.input_tokens,
                sent_tokens=result.sent_tokens,
                fired=_fired(result),
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


# --------------------------------------------------------------------------------------------
# Stops, scenario by scenario
# --------------------------------------------------------------------------------------------


def _first(replay: Replay, test: Callable[[ShapeResult], bool], start: int = 1) -> int | None:
    for k in range(start, len(replay) + 1):
        if test(replay.step(k).result):
            return k
    return None


def _need(k: int | None, what: str) -> int:
    if k is None:
        raise ReplayError(f"the scenario never shows {what}: regenerate it")
    return k


def _layers_text(result: ShapeResult) -> str:
    """ "per-tool budget 34,535 -> 24,984, then tool output clear 28,087 -> 21,802"."""
    parts = [
        f"{layer.label} {layer.tokens_before:,} -> {layer.tokens_after:,}"
        for layer in result.layers
        if layer.fired
    ]
    return ", then ".join(parts) if parts else "no layer fired"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _stop(replay: Replay, k: int, title: str, narration: str, layer: str | None = None) -> Stop:
    return Stop(request=k, title=title, narration=narration, policy=replay.policy.name, layer=layer)


def _budget_line(replay: Replay) -> str:
    b = replay.budget
    return (
        f"the {b.window or 0:,}-token window puts the trigger at {b.trigger:,} and the target at {b.target:,}"
    )


def _stops_budget_alone(replay: Replay, _: Replay | None) -> list[Stop]:
    b = replay.budget
    first = _need(_first(replay, lambda r: "per_tool_budget" in r.fired), "the per-tool budget firing")
    r1 = replay.step(first).result
    d = next(d for d in r1.layer("per_tool_budget").decisions)
    over = _need(
        _first(replay, lambda r: r.input_tokens > b.trigger >= r.sent_tokens), "a ledger over the trigger"
    )
    r2 = replay.step(over).result
    n = len(replay)
    reactive = [k for k in range(1, n + 1) if set(replay.step(k).result.fired) - {"per_tool_budget"}]
    peak = max(range(1, n + 1), key=lambda k: replay.step(k).result.input_tokens)
    r3 = replay.step(peak).result
    return [
        _stop(
            replay,
            first,
            "A tool result over the per-tool budget",
            f"The full read of a module came back as a tool result far longer than the {b.tool_result_budget:,}-"
            f"character per-tool budget. The budget is always on: it keeps the head and ends the result with a "
            f"marker telling the model to re-read a narrower range ({d.reason}). The estimate goes from "
            f"{r1.input_tokens:,} to {r1.sent_tokens:,} tokens; {_budget_line(replay)}, so nothing else runs.",
            "per_tool_budget",
        ),
        _stop(
            replay,
            over,
            "The ledger crosses the trigger; the budget keeps the view under it",
            f"The ledger now holds {r2.input_tokens:,} tokens, over the trigger ({b.trigger:,}), but the "
            f"per-tool budget has already cut the long results: the view is {r2.sent_tokens:,} tokens, under the "
            f"trigger, so tool output clear, snip and auto compact all stay idle ({_layers_text(r2)}). A cheap "
            "layer that runs first makes the expensive ones unnecessary.",
            "per_tool_budget",
        ),
        _stop(
            replay,
            peak,
            "The peak, and still no reactive layer",
            f"At the largest request the ledger holds {r3.input_tokens:,} tokens and {r3.sent_tokens:,} are sent. "
            f"Over the whole session, {plural(len(reactive), 'request')} needed a reactive layer: the per-tool "
            "budget alone was enough. Nothing was cleared, so the model never had to re-read anything.",
            "per_tool_budget",
        ),
    ]


def _stops_clear_suffices(replay: Replay, _: Replay | None) -> list[Stop]:
    b = replay.budget
    k = _need(_first(replay, lambda r: "tool_output_clear" in r.fired), "tool output clear firing")
    before = replay.step(k - 1).result
    r = replay.step(k).result
    clear = r.layer("tool_output_clear")
    n = len(replay)
    deeper = [
        x for x in range(1, n + 1) if {"old_history_snip", "auto_compact"} & set(replay.step(x).result.fired)
    ]
    last = replay.step(n).result
    return [
        _stop(
            replay,
            k - 1,
            "Just under the trigger",
            f"Every request so far read more code: {before.sent_tokens:,} tokens are sent, just under the trigger "
            f"({b.trigger:,}; {_budget_line(replay)}). Nothing fires; every tool result is still verbatim.",
        ),
        _stop(
            replay,
            k,
            "Over the trigger: tool output clear",
            f"The next read takes the estimate to {clear.tokens_before:,}, over the trigger. Tool output clear "
            f"keeps the {b.results_kept} most recent results of re-runnable tools (reads, greps, test runs) and "
            f"replaces {plural(clear.cleared, 'older one')} with a short placeholder; the calls and their ids "
            f"stay, so nothing is orphaned. The estimate drops to {clear.tokens_after:,}, under the trigger, so "
            "snip and auto compact see nothing to do.",
            "tool_output_clear",
        ),
        _stop(
            replay,
            n,
            "Clearing was enough for the whole session",
            f"At the last request {last.input_tokens:,} tokens of ledger become {last.sent_tokens:,} sent "
            f"({_layers_text(last)}). {plural(len(deeper), 'request')} needed snip or auto compact: old tool "
            "output was the bulk of the pressure, and it is the cheapest thing to drop, because the model can "
            "re-run the tool.",
            "tool_output_clear",
        ),
    ]


def _stops_snip_needed(replay: Replay, _: Replay | None) -> list[Stop]:
    b = replay.budget
    clear_k = _need(_first(replay, lambda r: "tool_output_clear" in r.fired), "tool output clear firing")
    snip_k = _need(_first(replay, lambda r: "old_history_snip" in r.fired), "old history snip firing")
    rc = replay.step(clear_k).result
    rs = replay.step(snip_k).result
    clear, snip = rs.layer("tool_output_clear"), rs.layer("old_history_snip")
    return [
        _stop(
            replay,
            clear_k,
            "Clear is enough, for now",
            f"The estimate crosses the trigger ({b.trigger:,}): tool output clear empties the old reads "
            f"({_layers_text(rc)}) and the view is under the trigger again. But most of this session is new test "
            "modules written with Write: their content travels in the assistant's tool calls, which no clear "
            "touches.",
            "tool_output_clear",
        ),
        _stop(
            replay,
            snip_k,
            "Clear is not enough: old history snip",
            f"Clearing takes {clear.tokens_before:,} only to {clear.tokens_after:,}, still over the trigger. Old "
            f"history snip walks the groups oldest first and removes whole tool exchanges (the call and its "
            f"result together, keeping any text the assistant wrote) until the estimate is at or under the target "
            f"({b.target:,}): {plural(snip.removed, 'message')} go, {snip.tokens_before:,} -> {snip.tokens_after:,}. "
            f"It never touches the first group, user turns, or the last {b.groups_kept} groups; auto compact is "
            "not needed.",
            "old_history_snip",
        ),
    ]


def _task(replay: Replay) -> Message:
    return next(m for m in replay.transcript.messages if m.source.kind is SourceKind.TASK)


def _stops_compact(replay: Replay, _: Replay | None) -> list[Stop]:
    b = replay.budget
    snip_k = _need(_first(replay, lambda r: "old_history_snip" in r.fired), "old history snip firing")
    k = _need(_first(replay, lambda r: "auto_compact" in r.fired), "auto compact firing")
    rs = replay.step(snip_k).result
    r = replay.step(k).result
    snip, compact = r.layer("old_history_snip"), r.layer("auto_compact")
    task = _task(replay)
    kept = task.id in {m.id for m in r.final}
    summary = next(m for m in r.final if m.is_summary)
    return [
        _stop(
            replay,
            snip_k,
            "Snip removes what it may",
            f"Over the trigger ({b.trigger:,}), snip removes the few exchanges it is allowed to: "
            f"{_layers_text(rs)}. Most of this session's work is in assistant messages that carry reasoning "
            "and tool calls but no text; signed reasoning cannot be split from its calls, so snip skips them.",
            "old_history_snip",
        ),
        _stop(
            replay,
            k,
            "The last resort: auto compact",
            f"Snip gets only from {snip.tokens_before:,} to {snip.tokens_after:,}, still over the trigger. Auto "
            f"compact replaces the longest stretch of groups holding no pinned message with one visible summary "
            f"({plural(compact.summarized, 'message')} folded into '{summary.text.splitlines()[0]}'): "
            f"{compact.tokens_before:,} -> {compact.tokens_after:,}, under the target ({b.target:,}). In a real "
            "harness this is a model call, which is why it runs last.",
            "auto_compact",
        ),
        _stop(
            replay,
            k,
            "The pinned task survives",
            f"The task the user gave first is pinned ({pin_label(task.source)}): auto compact never folds a "
            f"pinned message, so it {'is still in the view, verbatim,' if kept else 'is missing'} after the "
            "compaction, with the project instructions and the skill body. What the agent was asked to do "
            "cannot be summarized away.",
            "auto_compact",
        ),
    ]


def _stops_overflow(replay: Replay, _: Replay | None) -> list[Stop]:
    incidents = overflow_incidents(replay)
    if not incidents:
        raise ReplayError("the scenario records no overflow: regenerate it")
    inc = incidents[0]
    rec = inc.recovery
    k = _need(inc.after_request or None, "an overflow after a request")
    normal = rec.normal
    assert normal is not None
    limit = rec.limit or 0
    calm = replay.step(k).result
    paste = next(m for m in reversed(rec.view) if m.is_human)
    paste_tokens = _sizer(replay, rec.request).message(paste)
    call = call_text(k)
    out = [
        _stop(
            replay,
            k,
            "Before the paste",
            f"The session is small: {calm.sent_tokens:,} tokens sent at request {k}, under the trigger "
            f"({replay.budget.trigger:,}; {_budget_line(replay)}). Then the user pastes a whole nightly CI log "
            f"into one message: {len(paste.text):,} characters, {paste_tokens:,} tokens.",
        ),
        _stop(
            replay,
            k,
            f"The provider rejects {call}",
            f'The next call carries the paste, and the provider answers "{inc.error}": it never becomes a '
            f"request (the transcript records it as an API error after request {k}, with no usage). Its "
            f"ledger holds {rec.ledger_tokens:,} tokens; the pipeline fired ({_layers_text(normal)}) and the view "
            f"is still {rec.tokens_before:,}, over the {limit:,}-token window. The harness answers an overflow "
            "with forced mode: every reactive layer compacts to its target unconditionally. Here that sends "
            f"{rec.tokens_after:,} tokens: the layers had already done what they may, because the estimate was "
            "far over the trigger (forced mode frees more only when the estimate said 'under the trigger' and "
            "the provider disagreed).",
        ),
    ]
    if inc.retry_overflowed or inc.retry is not None:
        retry = f"request {inc.retry}" if inc.retry is not None else "the next call"
        out.append(
            _stop(
                replay,
                inc.retry if inc.retry is not None else k,
                "One retry, then a graceful stop" if inc.stopped else "One retry, and it went through",
                f"The harness retries once with the forced view ({retry}). "
                + (
                    "It is rejected again, a second API error with no request between, and a second overflow "
                    f'stops the run, with this reason: "{inc.reason}". The largest message alone, the pasted '
                    f"log, weighs {rec.largest_tokens:,} tokens; pinned sources stay protected even in forced "
                    "mode. Retrying again would only fail again."
                    if inc.stopped
                    else inc.reason + "."
                ),
            )
        )
    return out


def _stops_small_window(replay: Replay, _: Replay | None) -> list[Stop]:
    b = replay.budget
    big = replay.policy.budget(200_000)
    k = _need(_first(replay, lambda r: "tool_output_clear" in r.fired), "tool output clear firing")
    r = replay.step(k).result
    clear = r.layer("tool_output_clear")
    kept_results = sum(1 for d in clear.decisions if d.action is Action.KEPT_RECENT)
    snips = [x for x in range(1, len(replay) + 1) if "old_history_snip" in replay.step(x).result.fired]
    s = _need(snips[-1] if snips else None, "old history snip firing")
    snip = replay.step(s).result.layer("old_history_snip")
    kept_ids = {d.message_id for d in snip.decisions if d.action is Action.KEPT_RECENT}
    overhead = replay.step(1).weights.get("overhead", 0)
    return [
        _stop(
            replay,
            1,
            "A small window scales the kept counts down",
            f"{_sentence(_budget_line(replay))}. One maximum-size tool exchange costs 4,000 tokens (16,000 "
            f"characters), so the target affords max(2, {b.target:,} // 4,000) = {b.affordable_groups}: snip and "
            f"auto compact keep the last {b.groups_kept} groups and tool output clear keeps {b.results_kept} "
            f"results (a 200,000 window keeps {big.groups_kept} and {big.results_kept}). The fixed overhead of the "
            f"system prompt and tool schemas alone, {overhead:,} tokens, is over this trigger: every layer will "
            "work at every request.",
        ),
        _stop(
            replay,
            k,
            f"Tool output clear keeps {b.results_kept} results",
            f"{_sentence(clear.reason)}: {clear.tokens_before:,} -> {clear.tokens_after:,}. Only the {kept_results} most "
            "recent results of re-runnable tools stay verbatim.",
            "tool_output_clear",
        ),
        _stop(
            replay,
            s,
            f"Snip keeps the last {b.groups_kept} groups",
            f"{_sentence(snip.reason)}. The last {b.groups_kept} groups ({plural(len(kept_ids), 'message')}) are never "
            "removed; everything removable before them is. With a window this small the agent keeps only its "
            "latest location and evidence.",
            "old_history_snip",
        ),
    ]


def _stops_storm(replay: Replay, compare: Replay | None) -> list[Stop]:
    assert compare is not None
    hot, calm = persisted_run(replay), persisted_run(compare)
    if not hot.compactions:
        raise ReplayError("the scenario never compacts: regenerate it")
    first = hot.compactions[0]
    h1, c1 = hot.step(first), calm.step(first)
    second = hot.compactions[1] if len(hot.compactions) > 1 else first
    h2, c2 = hot.step(second), calm.step(second)
    hot_storms, calm_storms = hot.storms(), calm.storms()
    last = len(replay)
    return [
        _stop(
            replay,
            first,
            "The first compaction, two targets",
            f"This replay keeps what it compacted, as a harness that rewrites its history does. At request "
            f"{first} the view reaches {h1.input_tokens:,} tokens, over the trigger ({hot.trigger:,}). With the "
            f"target at the trigger ({hot.target:,}, policy {hot.policy}) snip removes just enough: "
            f"{h1.sent_tokens:,}. With the default target, 75% of the trigger ({calm.target:,}, {calm.policy}), "
            f"it removes more: {c1.sent_tokens:,}.",
            "old_history_snip",
        ),
        _stop(
            replay,
            second,
            "It triggers again",
            f"{plural(second - first, 'request')} later the view has grown back to {h2.input_tokens:,}, over the "
            f"trigger again, so it compacts again ({h2.input_tokens:,} -> {h2.sent_tokens:,}); from here on it "
            f"compacts at requests {', '.join(map(str, hot.compactions[1:]))}. With the 75% target the same "
            f"request starts from {c2.input_tokens:,}, well under the trigger: "
            f"{'it compacts too' if c2.compacted else 'nothing fires'}. Each compaction rewrites the prompt "
            "prefix (the provider's cache misses) and, with a summarizer, costs a model call.",
            "old_history_snip",
        ),
        _stop(
            replay,
            last,
            "A storm against a calm",
            f"Target at the trigger: {plural(len(hot.compactions), 'compaction')} in {last} requests "
            f"({_storm_text(hot_storms)}). Target at 75%: {plural(len(calm.compactions), 'compaction')} "
            f"(requests {', '.join(map(str, calm.compactions))}; {_storm_text(calm_storms)}). The gap between "
            "trigger and target is what lets the session run for a while before the next compaction.",
        ),
    ]


def _storm_text(found: list[list[int]]) -> str:
    if not found:
        return f"no storm: no two compactions within {STORM_SPAN} requests"
    longest = max(found, key=len)
    return f"{plural(len(found), 'storm')}, the longest {len(longest)} compactions in requests {longest[0]}-{longest[-1]}"


def _stops_eager(replay: Replay, compare: Replay | None) -> list[Stop]:
    assert compare is not None
    base, eager = cache_cost(replay), cache_cost(compare)
    if not eager.rewrite_requests:
        raise ReplayError("the eager clear never rewrites the prefix in this scenario: regenerate it")
    first = eager.rewrite_requests[0]
    row = eager.requests[first - 1]
    n = len(replay)
    e_last = compare.step(n).result
    b_last = replay.step(n).result
    e_sent = sum(r.sent_tokens for r in (compare.step(k).result for k in range(1, n + 1)))
    b_sent = sum(r.sent_tokens for r in (replay.step(k).result for k in range(1, n + 1)))
    return [
        _stop(
            compare,
            first,
            "Eager clear rewrites the prefix",
            f"The session is far under the trigger ({replay.budget.trigger:,}): no reactive layer fires and "
            f"{base.policy} only appends, so every request reads the whole previous prompt from the provider's "
            f"cache. With the eager clear in front ({eager.policy}), request {first} brings one more re-runnable "
            f"result than the {compare.policy.eager_keep} it keeps, so an old result is replaced by a stub: the "
            f"prompt now differs from the previous one after {plural(row.common_prefix_messages, 'message')} "
            f"({row.prefix_tokens:,} tokens), and the {row.rebilled_tokens:,} cached tokens after that point are "
            "billed again.",
            "eager_clear",
        ),
        _stop(
            compare,
            n,
            "The cache cost over the session",
            f"{eager.policy}: {plural(eager.rewrites, 'prefix rewrite')}, {eager.rebilled_tokens:,} tokens "
            f"billed again; {base.policy}: {plural(base.rewrites, 'rewrite')}, {base.rebilled_tokens:,}. The eager "
            f"clear trims the prompt ({e_last.sent_tokens:,} against {b_last.sent_tokens:,} tokens at the last "
            f"request; {b_sent - e_sent:,} fewer tokens sent over the session), but cached tokens are cheap "
            f"(a tenth of the price on Anthropic's API) and re-billed ones dear (written to the cache again, at "
            f"1.25x): priced that way the session's input costs {eager.billed():,.0f} base-price tokens with the "
            f"eager clear and {base.billed():,.0f} without. {_rereads_text(compare)} That is why OpenCollab took "
            "the eager clear out of its default pipeline.",
            "eager_clear",
        ),
    ]


def _rereads_text(replay: Replay) -> str:
    from inspector.findings import find_all

    found = [f for f in find_all(replay, ["reread"]) if f.layer == "eager_clear"]
    if not found:
        return "No file was read again after being cleared here."
    return (
        f"And the model read {plural(len(found), 'file')} again after the eager clear had cleared its "
        f"earlier read (request {', '.join(str(f.request) for f in found)})."
    )


_STOPS: dict[str, Callable[[Replay, Replay | None], list[Stop]]] = {
    "budget-alone": _stops_budget_alone,
    "clear-suffices": _stops_clear_suffices,
    "snip-needed": _stops_snip_needed,
    "compact-last-resort": _stops_compact,
    "overflow-stop": _stops_overflow,
    "small-window": _stops_small_window,
    "compaction-storm": _stops_storm,
    "eager-clear-cache": _stops_eager,
}


def stops(name: str, replay: Replay | None = None) -> list[Stop]:
    """The tour stops of scenario `name`, computed from its replay (opened with its registry settings)."""
    scenario_info(name)
    main = replay if replay is not None else open_scenario(name)
    found = _STOPS[name](main, _compare(name, main))
    return sorted(found, key=lambda s: s.request)


def tour(name: str) -> Tour:
    """Scenario `name` with its registry entry and its stops."""
    info = scenario_info(name)
    replay = open_scenario(name)
    return Tour(
        name=info.name,
        title=info.title,
        description=info.description,
        file=info.file,
        window=info.window,
        policy=replay.policy.name,
        compare_policy=load_policy(info.compare_policy).name if info.compare_policy else None,
        requests=len(replay),
        stops=stops(name, replay),
    )
