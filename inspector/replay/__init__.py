"""Request-by-request replay: the shaped views of any request of a transcript, computed on demand.

`Replay.open(transcript, policy, window)` calibrates the transcript once (per-message weights
checked against what the provider billed), derives the budget once, and shapes a request when
it is asked for (`step(k)`), keeping recent steps in a cache so stepping back and forth is
instant. Calibration does not depend on the policy or the window, so `with_settings` reuses it.

A run's settings come whole (`RunSettings`, `inspector.replay.settings`, where the window is
resolved); the report of a replay is built by the report (`inspector.report.summary.replay_report`):
the replay knows nothing of the report.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from collections.abc import Callable, Iterator
from functools import partial

from msgspec import Struct

from inspector.errors import UserError
from inspector.model import EventKind, Message, RecordedEvent, Request, Segment, Transcript
from inspector.replay.distance import Gap, distance_text, distances
from inspector.replay.settings import (
    DEFAULT_ESTIMATOR,
    INFERRED_WINDOW,
    RunSettings,
    WindowSource,
    resolve_policy,
    resolve_window,
)
from inspector.shaping import Budget, Policy, ShapeResult, TokenMemo, explain
from inspector.shaping.pipeline import recast
from inspector.shaping.policy import pin_reason
from inspector.tokens import Estimator, get_estimator, stored
from inspector.tokens.calibration import OVERHEAD_ID, CalibratedEstimator, Calibration, overhead_message
from inspector.tokens.harness import (
    ESTIMATORS,
    cached_harness_tokens,
    harness_tokens,
    own_sizer,
)

STEP_CACHE = 256
DEFAULT_POLICY = "opencollab"


class ReplayError(UserError, ValueError):
    """A request or message the user named does not exist."""


class Step(Struct, frozen=True):
    """One request, replayed: the ledger it was made with, its weights, and the pipeline's result."""

    index: int
    request: Request
    ledger: tuple[Message, ...]
    """The overhead pseudo-message (system prompt and tool schemas) followed by the ledger."""
    calibration: Calibration
    result: ShapeResult
    budget: Budget
    context: int
    """Calibrated whole input at this request (the provider's report where there is one)."""
    reported: int | None
    predicted: int | None
    """What the weights before this request predicted its input to be."""

    raw: dict[str, int] | None = None
    """Weights that stand in for the calibrated ones of messages the harness cleared in what it
    sent, not in its ledger (`Replay._as_sent`): what they weighed when last sent whole."""

    @property
    def sent(self) -> tuple[Message, ...]:
        return self.result.final

    @property
    def weights(self) -> dict[str, int]:
        """Calibrated weight of every ledger message, by id (the overhead's under `OVERHEAD_ID`).

        Made when first asked for (shaping does not need the whole dict) and shared with the
        calibration: read it, do not change it (`Calibration.weights(k)` gives a copy)."""
        weights = self.calibration.shared_weights(self.index)
        return {**weights, **self.raw} if self.raw else weights

    def weight(self, mid: str) -> int | None:
        """`weights.get(mid)`, without making the dict of the whole ledger (a check that reads a
        message's weight at one request, request after request)."""
        if self.raw:
            w = self.raw.get(mid)
            if w is not None:
                return w
        return self.calibration.weight_at(self.index, mid)


class _Deferred:
    """A sizer made when it is first asked for a size (`Replay.quiet`: the layers that can tell
    they would do nothing mostly size nothing beyond the view whose estimate is known)."""

    def __init__(self, make: Callable[[], CalibratedEstimator]) -> None:
        self._make = make
        self._made: CalibratedEstimator | None = None

    def _sizer(self) -> CalibratedEstimator:
        if self._made is None:
            self._made = self._make()
        return self._made

    def text(self, text: str) -> int:
        return self._sizer().text(text)

    def message(self, message: Message) -> int:
        return self._sizer().message(message)


class Replay:
    """A transcript under one policy and one window."""

    def __init__(
        self,
        transcript: Transcript,
        policy: Policy,
        window: int | None,
        window_source: WindowSource,
        estimator: Estimator,
        calibration: Calibration,
    ) -> None:
        self.transcript = transcript
        self.policy = policy
        self.window = window
        self.window_source = window_source
        self.estimator = estimator
        self.calibration = calibration
        self.budget = policy.budget(window, transcript=transcript)
        self.pipeline = policy.pipeline(messages=transcript.messages)
        self._steps: OrderedDict[int, Step] = OrderedDict()
        self._overhead = overhead_message()
        self._segments: dict[int, tuple[Segment, dict[str, Message], tuple[Message, ...]]] = {}
        self._observed_upto: tuple[int, int] = (-1, 0)
        """(n, the largest context the first n requests reported), for `refreshed`."""
        own = own_sizer(policy.trigger_estimator, OVERHEAD_ID)
        self._own: TokenMemo | None = TokenMemo(own) if own is not None and self.harness_wrote_it else None
        """Set where the policy's harness sizes its context by itself and wrote this transcript
        (OpenCollab): its layers then decide as it did, with its own estimate (docs/DESIGN.md §2.5),
        and the views they make are weighed with the calibrated weights."""
        self._cleared_from: dict[str, tuple[int, int]] | None = None

    @property
    def harness(self) -> str:
        """The harness whose estimator the policy's trigger decisions use ("OpenCollab")."""
        return ESTIMATORS[self.policy.trigger_estimator].harness

    @property
    def harness_wrote_it(self) -> bool:
        """Whether that harness wrote this transcript: its estimates are then what it decided
        with; on another harness's transcript they are what it would have estimated."""
        return ESTIMATORS[self.policy.trigger_estimator].format == self.transcript.format

    @property
    def decides_as_harness(self) -> bool:
        """Whether the layers decide with the harness's own estimate (see `_own`)."""
        return self._own is not None

    def _as_sent(self, k: int) -> dict[str, int]:
        """Message id -> the weight it had when last sent whole, for the ledger's messages at
        request k whose tool output the harness had cleared in what it sent by then, not in its
        ledger (the recorded rungs of an OpenCollab trace, which shapes every request afresh; a
        Claude Code microcompact clears the ledger itself). The calibration weighs them as billed,
        cleared; the ledger holds them whole, under any policy, and its layers clear them again
        where they do."""
        cleared = self._cleared_from
        if cleared is None:
            cleared = self._cleared_from = {}
            tr = self.transcript
            done: set[str] = set()
            for e in sorted(tr.events, key=lambda e: e.after_request):
                if e.kind is not EventKind.LAYER_FIRED or not e.cleared_tool_ids or e.after_request < 1:
                    continue
                new = set(e.cleared_tool_ids) - done
                done |= new
                if not new or e.after_request > len(tr.requests):
                    continue
                whole = self.calibration.shared_weights(e.after_request)
                for m in tr.ledger_tuple(e.after_request):
                    if (
                        m.id not in cleared
                        and m.id in whole
                        and any(c.call_id in new for c in m.tool_results)
                    ):
                        cleared[m.id] = (e.after_request + 1, whole[m.id])
        if not cleared:
            return {}
        return {mid: w for mid, (first, w) in cleared.items() if first <= k}

    @classmethod
    def from_settings(cls, transcript: Transcript, settings: RunSettings, *, mode: str = "delta") -> Replay:
        """The transcript under a run's settings (its policy, window and estimator)."""
        chosen = settings.policy_for(transcript)
        win, source = settings.window_for(transcript)
        est = get_estimator(settings.estimator)
        calibration = stored.calibration(transcript, est, mode)
        return cls(transcript, chosen, win, source, est, calibration)

    @classmethod
    def open(
        cls,
        transcript: Transcript,
        policy: str | Policy | None = None,
        window: int | None = None,
        estimator: str = DEFAULT_ESTIMATOR,
        mode: str = "delta",
        window_source: str = WindowSource.GIVEN,
    ) -> Replay:
        """`from_settings` with the settings given one by one (for library use and tests).
        `window_source`: what a given `window` is ("--window", or "sample" for the window a
        bundled sample comes with)."""
        settings = RunSettings(
            policy=policy, window=window, window_source=WindowSource(window_source), estimator=estimator
        )
        return cls.from_settings(transcript, settings, mode=mode)

    def with_settings(self, policy: str | Policy | None = None, window: int | None = None) -> Replay:
        """The same transcript and calibration under another policy and/or window."""
        chosen = resolve_policy(policy, self.transcript) if policy is not None else self.policy
        if window is None:
            win, source = self.window, self.window_source
        else:
            win, source = window, WindowSource.GIVEN
        return Replay(self.transcript, chosen, win, source, self.estimator, self.calibration)

    def refreshed(self, transcript: Transcript) -> Replay:
        """This replay (same policy, window choice, estimator and calibration mode) for
        `transcript`, a later state of the same session (a followed file that grew). The
        calibration goes on from where it stopped when `transcript` extends this one's (the same
        requests so far, ledgers that only grew), so the cost is that of what was added, not of the
        whole session; otherwise the transcript is calibrated afresh."""
        calibration = self.calibration.extended(transcript)
        observed: int | None = None
        prefix = 0
        if calibration is None:
            calibration = Calibration(transcript, self.estimator, mode=self.calibration.mode)
        else:
            # the largest context reported, from the old requests' (the last may have changed)
            reqs = transcript.requests
            prefix = max(
                [self._observed(len(self.transcript.requests) - 1)]
                + [r.usage.context for r in reqs[len(self.transcript.requests) - 1 : -1] if r.usage]
            )
            last = reqs[-1].usage
            observed = max(prefix, last.context if last is not None else 0)
        if self.window_source not in INFERRED_WINDOW:
            win, source = self.window, self.window_source
        else:
            win, source = resolve_window(transcript, None, observed=observed)
        new = Replay(transcript, self.policy, win, source, self.estimator, calibration)
        if observed is not None:
            new._observed_upto = (len(transcript.requests) - 1, prefix)
        return new

    def _observed(self, upto: int) -> int:
        """The largest context reported by the first `upto` requests."""
        n, value = self._observed_upto
        if n != upto:
            value = max((r.usage.context for r in self.transcript.requests[:upto] if r.usage), default=0)
            self._observed_upto = (upto, value)
        return value

    def __len__(self) -> int:
        return len(self.transcript.requests)

    # -- steps -------------------------------------------------------------------------------
    def _check(self, k: int) -> int:
        n = len(self)
        if n == 0:
            raise ReplayError("this transcript has no requests")
        if not 1 <= k <= n:
            raise ReplayError(f"request {k} does not exist: this transcript has requests 1 to {n}")
        return k

    def sizer(self, k: int) -> CalibratedEstimator:
        """Request `k`'s calibrated weights, for messages as they were written (a ledger the replay
        did not make itself: a rejected call's, a persisted run's, a view to weigh again)."""
        return CalibratedEstimator(self.calibration, k, self.estimator)

    def step(self, k: int) -> Step:
        """Request `k` (1-based), shaped; cached."""
        self._check(k)
        cached = self._steps.get(k)
        if cached is not None:
            self._steps.move_to_end(k)
            return cached
        request = self.transcript.request(k)
        ledger, base = self._ledger(request)
        raw = self._as_sent(k)
        sizer = CalibratedEstimator(self.calibration, k, self.estimator, raw)
        if self._own is None:
            memo = TokenMemo(sizer)
            if not raw:
                # Every ledger message is unchanged here, so the ledger weighs the sum of its
                # calibrated weights, which the calibration keeps up to date request by request.
                memo.seed_view(ledger, self.calibration.ledger_total(k), prefix_of=base)
            result = self.pipeline.run(ledger, self.budget, memo)
        else:
            result = recast(self.pipeline.run(ledger, self.budget, self._own), sizer)
        step = Step(
            index=k,
            request=request,
            ledger=ledger,
            calibration=self.calibration,
            result=result,
            budget=self.budget,
            context=self.calibration.context(k),
            reported=request.usage.context if request.usage else None,
            predicted=self.calibration.predicted(k),
            raw=raw or None,
        )
        self._steps[k] = step
        if len(self._steps) > STEP_CACHE:
            self._steps.popitem(last=False)
        return step

    def quiet(self, k: int) -> int | None:
        """The estimate of request `k`'s ledger when the pipeline is known to leave it as it is
        without shaping it (`Pipeline.quiet`): what `step(k)` would give, every layer unfired, its
        view the ledger and its estimates that one (where the layers decide with the harness's own
        estimate, they are asked with it, and the figures are the calibrated ones, as `recast`
        gives them). None where that is not known (then `step(k)`): a layer could fire, or some of
        the ledger weighs as last sent (`_as_sent`). Not cached: for one pass over every request."""
        self._check(k)
        if self._as_sent(k):
            return None
        ledger, base = self._ledger(self.transcript.request(k))
        if self._own is not None:
            # (every ledger message unchanged: `recast` weighs the view at the ledger's weights)
            return self.calibration.ledger_total(k) if self.pipeline.quiet(ledger, self.budget, self._own) else None
        memo = TokenMemo(_Deferred(partial(CalibratedEstimator, self.calibration, k, self.estimator)))
        total = self.calibration.ledger_total(k)
        memo.seed_view(ledger, total, prefix_of=base)
        return total if self.pipeline.quiet(ledger, self.budget, memo) else None

    def _ledger(self, request: Request) -> tuple[tuple[Message, ...], tuple[Message, ...] | None]:
        """The overhead pseudo-message followed by the request's ledger, and the tuple it is the
        start of: one slice of a tuple kept per segment (consecutive requests share it)."""
        tr = self.transcript
        seg = tr.segments[request.segment]
        by_id = tr.messages_by_id()
        hit = self._segments.get(request.segment)
        if hit is None or hit[0] is not seg or hit[1] is not by_id:
            self._segments.pop(request.segment, None)
            whole = tr.segment_messages(request.segment)
            if whole is None:
                return (self._overhead, *tr.ledger_tuple(request.index)), None
            hit = (seg, by_id, (self._overhead, *whole))
            self._segments[request.segment] = hit
        return hit[2][: request.ledger_len + 1], hit[2]

    def steps(self) -> Iterator[Step]:
        for k in range(1, len(self) + 1):
            yield self.step(k)

    def contexts(self) -> list[int]:
        """Calibrated context per request (index 0 is request 1)."""
        return [self.calibration.context(k) for k in range(1, len(self) + 1)]

    def events_at(self, k: int) -> list[RecordedEvent]:
        """Recorded events placed right after request k."""
        return [e for e in self.transcript.events if e.after_request == k]

    # -- finding messages ----------------------------------------------------------------------
    def find_message(self, ref: str) -> Message:
        """A message by id, unique id prefix, or line number in its file (`1583` or `:1583`)."""
        ref = ref.strip()
        if ref == OVERHEAD_ID:
            return self._overhead
        try:
            return self.transcript.message(ref)
        except KeyError:
            pass
        line = re.fullmatch(r":?(\d+)", ref)
        if line:
            n = int(line.group(1))
            for m in self.transcript.messages:
                if m.origin is not None and m.origin.line == n:
                    return m
        matches = [m for m in self.transcript.messages if m.id.startswith(ref)] if ref else []
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise ReplayError(f"{ref!r} matches {len(matches)} messages; give more of the id")
        raise ReplayError(
            f"no message {ref!r} in {os.path.basename(self.transcript.path)} (give an id, an id prefix or a line number)"
        )

    def requests_holding(self, message_id: str) -> list[int]:
        """The requests whose ledger held this message."""
        out: list[int] = []
        for seg in self.transcript.segments:
            if message_id in seg.message_ids:
                pos = seg.message_ids.index(message_id)
                out.extend(
                    r.index for r in self.transcript.requests if r.segment == seg.index and r.ledger_len > pos
                )
        return sorted(out)

    def explain(self, ref: str, step: int | None = None) -> str:
        """One sentence: what the pipeline did to a message at a request, and why, with the numbers."""
        message = self.find_message(ref)
        holding = (
            self.requests_holding(message.id) if message.id != OVERHEAD_ID else list(range(1, len(self) + 1))
        )
        if step is None:
            if not holding:
                return f"{message.id}: never sent — no request was made while it was in the ledger"
            step = holding[-1]
        self._check(step)
        from inspector.replay.folded import fold_sentence, folded_by

        fold = folded_by(self, message.id) if message.id != OVERHEAD_ID else None
        if message.id not in {m.id for m in self.step(step).ledger}:
            where = (
                f"it was sent with requests {holding[0]}–{holding[-1]}" if holding else "it was never sent"
            )
            if fold is not None and step > fold.after_request:
                where += f"; {fold_sentence(self, fold)}"
            return f"{message.id}: not in the ledger at request {step}; {where}"
        said = (
            f"request {step}: {explain(self.step(step).result, message.id, partial(pin_reason, self.policy))}"
        )
        if fold is not None and step == fold.after_request:
            # the last request it was sent with: what the harness did with it next
            said += f"; then {fold_sentence(self, fold)}"
        return said

    # -- the harness's own estimates ------------------------------------------------------
    def harness_estimates(self) -> list[int]:
        """What the policy's harness estimated before each request (index 0 is request 1)."""
        return list(harness_tokens(self.transcript, self.policy))

    def harness_estimate(self, k: int, *, wait: bool = True) -> tuple[int, bool] | None:
        """What the policy's harness estimated before request k (the number it decides with,
        `Policy.trigger_estimator`) and whether that is over its trigger. `wait` False: None
        unless the estimates of this transcript were computed already (one pass over it)."""
        self._check(k)
        found = (
            harness_tokens(self.transcript, self.policy)
            if wait
            else cached_harness_tokens(self.transcript, self.policy)
        )
        if found is None:
            return None
        value = found[k - 1]
        return value, ESTIMATORS[self.policy.trigger_estimator].over(value, self.budget.trigger)

    def distances(self, k: int, *, wait: bool = True) -> tuple[tuple[Gap, ...], tuple[Gap, ...] | None]:
        """How far request k's calibrated context is from the trigger, the blocking line and the
        window, and the same for the harness's own estimate (None: not known yet, `wait` False)."""
        b = self.budget
        step = self.step(k)
        own = self.harness_estimate(k, wait=wait)
        return (
            distances(step.context, b.trigger, b.blocking, b.window),
            distances(own[0], b.trigger, b.blocking, b.window) if own is not None else None,
        )

    def distance_dict(self, step: Step) -> dict[str, object]:
        gaps, own = self.distances(step.index)
        out: dict[str, object] = {
            "context": step.context,
            "gaps": [g.to_dict() for g in gaps],
            "text": distance_text(gaps),
        }
        if own is not None:
            out["harness_estimate"] = own[0].context
            out["harness_gaps"] = [g.to_dict() for g in own]
            out["harness_text"] = distance_text(own)
        return out


__all__ = [
    "DEFAULT_POLICY",
    "INFERRED_WINDOW",
    "Replay",
    "ReplayError",
    "RunSettings",
    "Step",
    "WindowSource",
    "resolve_policy",
    "resolve_window",
]
