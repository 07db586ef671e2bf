"""Fidelity: what a transcript records its harness doing, beside what a policy simulates.

Where a transcript records what its harness did to its context (Claude Code compact boundaries
and microcompact boundaries, Codex `compacted`, opencode compaction parts and pruned tool output,
OpenCollab `context_shaping` records as `layer_fired` events), `fidelity()` lists each recorded
event beside the simulated one, and every simulated event the transcript does not record.

How the simulation decides:
- Compactions, with the harness's own numbers (`inspector.tokens.harness`): before sending
  request k, the harness estimates its context with the estimator the policy names
  (`Policy.trigger_estimator`) and compacts when that reaches the policy's trigger (`>=` for
  Claude Code, opencode and Codex; `>` for OpenCollab's pipeline). The simulated compaction is
  placed after request k - 1. Once over the line it stays one event until the estimate falls
  back under it, or a recorded compaction starts a new segment. Where a segment ends in a
  recorded compaction, the check also runs on the old ledger as it stood then (for Claude Code
  that figure is its `preTokens`). A harness that records its compaction's own summarization
  call as a request (opencode, Codex) decided at the request before that call.
- Cleared tool output (`microcompact`) and fired rungs (`layer_fired`): the policy's pipeline on
  the replayed ledger (calibrated weights), at the request right after the recorded event and,
  failing that, the nearest request within `SEARCH_RADIUS` in the same segment.
- A harness whose estimator uses no report (OpenCollab's character heuristic) shapes every
  request afresh from its raw ledger, each layer re-estimating its input with that estimator, so
  a cheap layer that gets under the trigger leaves the costlier ones idle. For such a policy the
  pipeline runs on the raw ledger sized by the harness's own estimator (`own_sizer`) for
  fired rungs, and a compaction is simulated only where its summarizing layer still fires. The
  calibrated weights are of the view the provider billed, already cleared where the harness
  cleared: with them a clearing the harness repeats at every request looks needless.

A recorded event matches when the simulated one falls after the same request. Manual
compactions (and compactions whose trigger the harness does not record, as in Codex) are shown
but not counted; every other disagreement counts as a miss.
"""

from __future__ import annotations

from msgspec import Struct

from inspector.model import EventKind, Message, RecordedEvent, Transcript
from inspector.model.bulk import paused_gc
from inspector.shaping import Policy, PolicyError, load_policy, preset_for_format
from inspector.shaping.base import TokenMemo
from inspector.shaping.pipeline import ShapeResult
from inspector.shaping.policy import SUMMARIZING_LAYERS
from inspector.tokens.calibration import OVERHEAD_ID, CalibratedEstimator
from inspector.tokens.harness import (
    ESTIMATORS,
    estimator_for,
    harness_tokens,
    harness_window,
    is_compaction_call,
    own_sizer,
    segment_end_estimates,
)

from . import Replay

SEARCH_RADIUS = 8
"""How many requests away a simulated layer event is looked for."""
COUNTED_TRIGGERS = frozenset({"auto", "overflow"})
"""Recorded compaction triggers that count: the harness compacted on its own."""


class FidelityEvent(Struct, frozen=True, kw_only=True):
    """One recorded event beside the simulated one (or a simulated event with no recorded one).

    `recorded_after_request` / `simulated_after_request`: the last request before the event
    (None: no such event). `harness_estimate`: the harness's own figure at the decision, before
    the next request (for Claude Code compactions: the recorded `preTokens` to compare with);
    `previous_harness_estimate`: the same figure one request earlier; `calibrated`: the
    calibrated context at that point (the provider's report where there is one); `context`: the
    reported context of the last request before the event; `threshold`: the line the estimate is
    compared with.
    """

    kind: str
    trigger: str | None
    recorded_after_request: int | None
    simulated_after_request: int | None
    match: bool
    counted: bool
    harness_estimate: int | None = None
    calibrated: int | None = None
    previous_harness_estimate: int | None = None
    threshold: int | None = None
    pre_tokens: int | None = None
    context: int | None = None
    layer: str | None = None
    segment: int | None = None
    line: int | None = None
    note: str = ""


class Fidelity(Struct, frozen=True, kw_only=True):
    """Recorded against simulated events for one transcript under one policy and window.

    `matches` / `misses` count the counted events only; `events` lists them all, in request order.
    `rule`: the harness rule that set the trigger, with its figures (None: the policy names none).
    """

    matches: int
    misses: int
    events: list[FidelityEvent]
    policy: str
    estimator: str
    window: int | None
    trigger: int
    rule: str | None = None


class _Sim(Struct):
    """A simulated compaction: the decision after request `after`, on `segment`'s ledger."""

    after: int
    estimate: int
    previous: int | None
    segment: int
    used: bool = False


def _policy(policy: str | Policy | None, transcript: Transcript) -> Policy:
    if isinstance(policy, Policy):
        return policy
    if policy is None:
        return preset_for_format(transcript.format)
    try:
        return load_policy(policy)
    except OSError as exc:
        raise PolicyError(f"cannot read policy {policy}: {exc.strerror or exc}") from None


def decision_point(transcript: Transcript, after: int) -> int:
    """The last conversation request at or before `after` (stepping back over a compaction's own
    summarization call, which opencode and Codex record as requests)."""
    k = after
    while k >= 1 and is_compaction_call(transcript, k):
        k -= 1
    return k


_Rungs = tuple[tuple[str, bool, int], ...]
"""What the simulation reads of a shaped request: per layer, (its name, whether it fired, how many
messages it cleared). Kept per request instead of the result, whose views (each the size of the
ledger) would be held for every request of the run."""


def _rungs(result: ShapeResult) -> _Rungs:
    return tuple((layer.name, layer.fired, layer.cleared) for layer in result.layers)


def _summarizes(rungs: _Rungs) -> bool:
    """Whether a summarizing layer fired (the cheaper layers before it did not do)."""
    return any(fired and name in SUMMARIZING_LAYERS for name, fired, _ in rungs)


class _Context:
    """Everything one fidelity run reads: the replay, the harness estimates, the trigger."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.tr = replay.transcript
        self.policy = replay.policy
        self.budget = replay.budget
        self.estimator = estimator_for(self.tr, self.policy)
        """The estimator the harness decided with (for a harness preset, its version's)."""
        self.spec = ESTIMATORS[self.estimator]
        self.est: tuple[int, ...] = harness_tokens(self.tr, self.policy)
        """The harness's estimate before each request (index 0 is request 1)."""
        self.ends = segment_end_estimates(self.tr, self.policy)
        sizer = own_sizer(self.policy.trigger_estimator, OVERHEAD_ID)
        self.own_sizes = sizer is not None
        """Layers decide with the harness's own sizes (`own_sizer`), not calibrated weights."""
        self._memo = TokenMemo(sizer) if sizer is not None else None
        self._runs: dict[int, _Rungs] = {}

    def shaped(self, k: int) -> _Rungs:
        """What the policy's layers do to request k, deciding the way the harness does."""
        if not self.own_sizes:
            return _rungs(self.replay.step(k).result)
        got = self._runs.get(k)
        if got is None:
            assert self._memo is not None
            tr = self.tr
            req = tr.request(k)
            whole = tr.segment_messages(req.segment)
            if whole is None:
                ledger = tr.ledger_tuple(k)
            else:
                # the ledger weighs what the harness estimated (the same sizes, summed once by its
                # pass), and is a slice of its segment: the layers' scans go on from the last one
                ledger = whole[: req.ledger_len]
                self._memo.seed_view(ledger, self.est[k - 1], prefix_of=whole)
            got = self._runs[k] = self._run(ledger)
        return got

    def _run(self, ledger: tuple[Message, ...]) -> _Rungs:
        assert self._memo is not None
        return _rungs(self.replay.pipeline.run(ledger, self.budget, self._memo, explain=False))

    def compacts_at_end(self, seg: int) -> bool:
        """Whether the harness compacts with segment `seg`'s whole ledger (after its last request)."""
        if not self.over(self.ends[seg].tokens):
            return False
        if not self.own_sizes:
            return True
        by_id = self.tr.messages_by_id()
        ledger = tuple(by_id[i] for i in self.tr.segments[seg].message_ids if i in by_id)
        return _summarizes(self._run(ledger))

    @property
    def at_or_above(self) -> bool:
        """How the harness compares (its rule's way where the budget names one, else its estimator's)."""
        own = self.budget.at_or_above
        return self.spec.at_or_above if own is None else own

    def over(self, value: int) -> bool:
        t = self.budget.trigger
        return value >= t if self.at_or_above else value > t

    def simulate(self) -> list[_Sim]:
        tr = self.tr
        sims: list[_Sim] = []
        armed = True
        seg: int | None = None
        prev: int | None = None
        est = self.est
        t = self.budget.trigger
        at_or_above = self.at_or_above
        for req in tr.requests:
            k = req.index
            if seg is not None and req.segment != seg:
                if not is_compaction_call(tr, k - 1):
                    value = self.ends[seg].tokens
                    if armed and self.compacts_at_end(seg):
                        sims.append(_Sim(decision_point(tr, k - 1), value, prev, seg))
                armed = True
                prev = None
            seg = req.segment
            value = est[k - 1]
            # `self.over(value)`, written out; a harness that sizes by itself compacts only where
            # the cheaper layers before its summarizing one leave the view over the line
            if (value >= t if at_or_above else value > t) and (
                not self.own_sizes or _summarizes(self.shaped(k))
            ):
                if armed:
                    sims.append(_Sim(decision_point(tr, k - 1), value, prev, seg))
                armed = False
            else:
                armed = True
            prev = value
        if seg is not None and armed:
            value = self.ends[seg].tokens
            if self.compacts_at_end(seg):
                sims.append(_Sim(len(tr.requests), value, prev, seg))
        return sims

    def segment_of(self, after: int) -> int:
        return self.tr.request(after).segment if 1 <= after <= len(self.tr.requests) else 0

    def figure_after(self, d: int, seg: int) -> int | None:
        """The harness's figure when deciding right after request d (segment `seg`'s ledger)."""
        n = len(self.tr.requests)
        if d + 1 <= n and self.tr.request(d + 1).segment == seg:
            return self.est[d]
        return self.ends[seg].tokens if seg < len(self.ends) else None

    def previous_figure(self, d: int, seg: int) -> int | None:
        if 1 <= d <= len(self.tr.requests) and self.tr.request(d).segment == seg:
            return self.est[d - 1]
        return None

    def calibrated_after(self, d: int, seg: int) -> int | None:
        """The calibrated context of what the harness was about to send right after request d."""
        tr = self.tr
        n = len(tr.requests)
        cal = self.replay.calibration
        if d + 1 <= n and tr.request(d + 1).segment == seg:
            return cal.context(d + 1)
        if not 1 <= d <= n:
            return None
        req = tr.request(d)
        ids = tr.segments[req.segment].message_ids
        sizer = CalibratedEstimator(cal, d, self.replay.estimator)
        return cal.context(d) + sum(sizer.message(tr.message(i)) for i in ids[req.ledger_len :])

    def reported(self, d: int) -> int | None:
        if not 1 <= d <= len(self.tr.requests):
            return None
        usage = self.tr.request(d).usage
        return usage.context if usage is not None else None


def _compactions(ctx: _Context) -> list[FidelityEvent]:
    tr = ctx.tr
    compacts = (
        ctx.policy.summarizer is not None
        and ctx.budget.auto_compact
        and any(n in SUMMARIZING_LAYERS for n in ctx.policy.layers)
    )
    sims = ctx.simulate() if compacts else []
    out: list[FidelityEvent] = []
    for e in (e for e in tr.events if e.kind is EventKind.COMPACTION):
        d = decision_point(tr, e.after_request)
        old = e.segment - 1 if e.segment is not None and e.segment > 0 else ctx.segment_of(d)
        candidates = [s for s in sims if s.segment == old and not s.used]
        sim = next((s for s in candidates if s.after == d), candidates[0] if candidates else None)
        if sim is not None:
            sim.used = True
        counted = compacts and e.trigger in COUNTED_TRIGGERS
        match = sim is not None and sim.after == d
        if not compacts:
            note = (
                "the harness's rule for this version has no auto compaction, not counted"
                if not ctx.budget.auto_compact
                else "the policy has no compaction layer (or no summarizer), not counted"
            )
        elif match:
            note = "the policy compacts after the same request"
        elif sim is None:
            note = "the policy does not compact before this point"
        elif sim.after < d:
            note = f"the policy compacts {d - sim.after} request(s) earlier"
        else:
            note = f"the policy compacts {sim.after - d} request(s) later"
        if compacts and not counted:
            note += (
                "; a manual compaction, not counted"
                if e.trigger == "manual"
                else "; the harness did not record what triggered it, not counted"
            )
        out.append(
            FidelityEvent(
                kind=EventKind.COMPACTION.value,
                trigger=e.trigger,
                recorded_after_request=d,
                simulated_after_request=sim.after if sim is not None else None,
                match=match,
                counted=counted,
                harness_estimate=ctx.figure_after(d, old),
                calibrated=ctx.calibrated_after(d, old),
                previous_harness_estimate=ctx.previous_figure(d, old),
                threshold=ctx.budget.trigger,
                pre_tokens=e.pre_tokens,
                context=ctx.reported(d),
                segment=old,
                line=e.line,
                note=note,
            )
        )
    for s in sims:
        if s.used:
            continue
        out.append(
            FidelityEvent(
                kind=EventKind.COMPACTION.value,
                trigger=None,
                recorded_after_request=None,
                simulated_after_request=s.after,
                match=False,
                counted=True,
                harness_estimate=s.estimate,
                calibrated=ctx.calibrated_after(s.after, s.segment),
                previous_harness_estimate=s.previous,
                threshold=ctx.budget.trigger,
                context=ctx.reported(s.after),
                segment=s.segment,
                note="the policy would compact here; the transcript records no compaction",
            )
        )
    return out


def _fires(ctx: _Context, k: int, e: RecordedEvent) -> bool:
    rungs = ctx.shaped(k)
    if e.kind is EventKind.LAYER_FIRED:
        return any(name == e.layer and fired for name, fired, _ in rungs)
    return any(cleared > 0 for _, _, cleared in rungs)


CLEARING_LAYERS = frozenset({"tool_output_clear", "eager_clear", "microcompact", "opencode_prune"})


def _layer_event(ctx: _Context, e: RecordedEvent) -> FidelityEvent:
    tr = ctx.tr
    n = len(tr.requests)
    a = e.after_request
    layers = set(ctx.policy.layers)
    if e.kind is EventKind.LAYER_FIRED:
        modelled = e.layer in layers
        missing = f"the policy has no layer {e.layer!r}"
    else:
        modelled = bool(layers & CLEARING_LAYERS)
        missing = "the policy has no layer that clears tool output"
    counted = modelled and e.trigger != "manual"
    found: int | None = None
    if modelled and n:
        home = min(max(a + 1, 1), n)
        seg = tr.request(home).segment
        order = [home]
        for r in range(1, SEARCH_RADIUS + 1):
            order.extend((home - r, home + r))
        for k in order:
            if 1 <= k <= n and tr.request(k).segment == seg and _fires(ctx, k, e):
                found = k - 1
                break
    match = found is not None and found == a
    if not modelled:
        note = missing + ", not counted"
    elif match:
        note = "the policy acts before the same request"
    elif found is None:
        note = f"the policy does not act within {SEARCH_RADIUS} requests of it"
    else:
        note = f"the policy acts {abs(found - a)} request(s) {'earlier' if found < a else 'later'}"
    k = min(a + 1, n) if n else 0
    return FidelityEvent(
        kind=e.kind.value,
        trigger=e.trigger,
        recorded_after_request=a,
        simulated_after_request=found,
        match=match,
        counted=counted,
        harness_estimate=ctx.est[k - 1] if k >= 1 else None,
        calibrated=ctx.replay.calibration.context(k) if k >= 1 else None,
        previous_harness_estimate=ctx.est[k - 2] if k >= 2 else None,
        threshold=ctx.budget.trigger,
        pre_tokens=e.pre_tokens,
        context=ctx.reported(a),
        layer=e.layer,
        segment=tr.request(k).segment if k >= 1 else None,
        line=e.line,
        note=note,
    )


def fidelity(
    source: Replay | Transcript, policy: str | Policy | None = None, window: int | None = None
) -> Fidelity:
    """Every event the transcript records its harness doing, beside what `policy` simulates.

    `source` is a Replay (its policy and window are used unless given) or a Transcript (policy
    default: the preset of the harness that wrote it, `preset_for_format`). Window default: the
    window the harness computes its own thresholds from where the transcript states one
    (`harness_window`: a Codex rollout states 95% of its model's window), else the replay's.
    """
    if isinstance(source, Replay):
        if window is None and source.window_source == "transcript":
            own = harness_window(source.transcript)
            window = own if own != source.window else None
        replay = source if policy is None and window is None else source.with_settings(policy, window)
    else:
        chosen = _policy(policy, source)
        win = window if window is not None else harness_window(source)
        replay = Replay.open(source, chosen, win)
    # the simulation shapes request after request, each run making views of the whole ledger
    # (tuples, lists of groups) that live one request and hold no cycle: collections would only
    # rescan them, again and again (a quarter of the run on a long session over its trigger)
    with paused_gc():
        ctx = _Context(replay)
        events = _compactions(ctx)
        events.extend(
            _layer_event(ctx, e)
            for e in ctx.tr.events
            if e.kind in (EventKind.MICROCOMPACT, EventKind.LAYER_FIRED)
        )
    events.sort(
        key=lambda ev: (
            ev.recorded_after_request
            if ev.recorded_after_request is not None
            else ev.simulated_after_request or 0,
            ev.recorded_after_request is None,
        )
    )
    counted = [ev for ev in events if ev.counted]
    return Fidelity(
        matches=sum(1 for ev in counted if ev.match),
        misses=sum(1 for ev in counted if not ev.match),
        events=events,
        policy=replay.policy.name,
        estimator=ctx.estimator,
        window=replay.window,
        trigger=replay.budget.trigger,
        rule=replay.budget.rule,
    )


__all__ = ["SEARCH_RADIUS", "Fidelity", "FidelityEvent", "decision_point", "fidelity"]
