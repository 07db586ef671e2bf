"""The delta mode's single pass over the requests (`_DeltaRun`): weights, once calibrated, stay
put; the difference between consecutive reports goes to the messages added in between."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import Struct, field
from msgspec.structs import replace

from inspector.model import Message, RecordedEvent, Role, ToolResultBlock, Transcript

from .cost_model import Coefficients, CostModel
from .features import _FINAL_X, CLEARED_TEXT, OVERHEAD_ID, Features, _add, _parts
from .priors import CHOSEN_ON, STRIP_PRIOR, WIDE, keeps_reasoning, prior_ratio
from .requests import (
    SHELL_FEATURES,
    BackgroundShells,
    _micro_events,
    _outputs,
    model_switched,
    prefix_changed,
    prefix_rewritten,
)
from .weights import apportion

if TYPE_CHECKING:
    from .core import Calibration


FINAL_FRACTION = 0.5
"""A response's reported output is trusted when it reaches this share of its predicted output."""

MATURE = 256
"""Requests whose every observation teaches the cost model; after them, one in `STRIDE` does
(see `_DeltaRun._learns`)."""
STRIDE = 64
OUT_MATURE = 64
"""The same for the outputs of responses (observations without unseen content: learned sooner)."""
FEATURE_MATURE = 32
"""An observation holding a feature learned from fewer observations than this is always learned from."""


class _Pending:
    """A message whose weight is provisional until the next report."""

    __slots__ = ("cost", "known", "message", "mid", "think", "x")

    def __init__(self, message: Message, cost: float, known: float, x: Features, think: float) -> None:
        self.message = message
        self.mid = message.id
        self.cost = cost
        self.known = known
        """The part of `cost` that is known (a final response's output)."""
        self.x = x
        """Its features for learning (none for the known part; read only: replaced, not changed)."""
        self.think = think

    def copy(self) -> _Pending:
        return _Pending(self.message, self.cost, self.known, self.x, self.think)


class _RunState(Struct):
    """Where the delta pass stands between two requests (so a longer transcript can go on)."""

    mi: int = 0
    seg: int = -1
    ids: tuple[str, ...] = ()
    pos: dict[str, int] = field(default_factory=dict)
    seen: int = 0
    last_report: int | None = None
    pending: dict[str, _Pending] = field(default_factory=dict)
    removed: float = 0.0
    xadj: Features = field(default_factory=dict)
    stripped_to: int = 0


def _targets(total: int, new: list[_Pending]) -> list[float]:
    """What each of `new` gets of `total`: its prediction plus a share of the error in proportion
    to the uncertain part of the prediction, never below zero (those at zero drop out)."""
    n = len(new)
    costs = [pm.cost for pm in new]
    err = total - sum(costs)
    unc = [max(c - pm.known, 0.0) + 1.0 for c, pm in zip(costs, new, strict=True)]
    target = [max(c, 0.0) for c in costs]
    for _ in range(n + 1):
        live = [i for i in range(n) if target[i] > 0 or err > 0]
        su = sum([unc[i] for i in live])
        if su <= 0:
            break
        nt = list(target)
        for i in live:
            nt[i] = target[i] + err * unc[i] / su
        neg = [i for i in live if nt[i] < 0]
        if not neg:
            return nt
        for i in neg:
            target[i] = 0.0
        err = total - sum(target)
    return target


def _targets_two(total: int, a: _Pending, b: _Pending) -> list[float] | None:
    """`_targets(total, [a, b])` where it ends after its first round (neither drops out), written
    out: a response and its tool's result, at nearly every request of a session; a quarter of the
    general case's time (`python -m benchmarks.calibration_pass`). None otherwise (then the
    general case). A test holds the two equal."""
    ca = a.cost
    cb = b.cost
    err = total - (ca + cb)
    ta = max(ca, 0.0)
    tb = max(cb, 0.0)
    if err > 0 or (ta > 0 and tb > 0):
        ua = max(ca - a.known, 0.0) + 1.0
        ub = max(cb - b.known, 0.0) + 1.0
        su = ua + ub
        na = ta + err * ua / su
        nb = tb + err * ub / su
        if na >= 0 and nb >= 0:
            return [na, nb]
    return None


class _DeltaRun:
    """The delta mode's single pass over the requests."""

    def __init__(self, cal: Calibration) -> None:
        self.cal = cal
        wide = cal.transcript.format not in CHOSEN_ON
        self.model = CostModel(prior_ratio(cal.estimator.name, wide), wide)
        self.strip_prior = (WIDE["strip_prior"], STRIP_PRIOR[1]) if wide else STRIP_PRIOR
        self.strip_model = False
        """Whether `strip_prior` has been set from the session's model (its first request with one)."""
        self.overhead: int | None = None
        self.cur: dict[str, int] = {}
        """Current weight of every message of the current segment's ledger."""
        self.total = 0
        """The sum of `cur`."""
        self.think: dict[str, float] = {}
        """The part of a message's weight that is reasoning still counted in the context."""
        self.think_known: set[str] = set()
        """Messages whose reasoning part was derived from a known output (not from features)."""
        self.cleared: set[str] = set()
        self.cleared_calls: set[str] = set()
        self.strip_seen = 0.0
        """Tokens of earlier turns' reasoning that came off at the turn boundaries so far (each
        boundary's excess of the prediction without stripping, within what could come off)."""
        self.strip_offered = 0.0
        """Tokens of reasoning that could have come off at those boundaries."""
        self.outputs = _outputs(cal.transcript)
        self.learned: dict[str, int] = {}
        """Feature name -> how many learned observations held it, until `FEATURE_MATURE` (see
        `_learns`)."""
        self.mature: set[str] = set()
        """The features learned from at least `FEATURE_MATURE` observations."""
        self.k = 0
        """The request being calibrated."""
        self.snapshot: Coefficients | None = None
        self.snapshot_n = -1
        self.state = _RunState()
        self.micro: tuple[Transcript, list[RecordedEvent]] | None = None
        """The transcript the recorded clearings were read from, and them (`_micro_events`)."""
        self.shells = BackgroundShells()
        """The background shells running so far (their reminders go with each request)."""

    # -- the model's view of one message ---------------------------------------------------

    def predict(self, m: Message) -> _Pending:
        """Predicted cost of `m` as sent, with its known part, learning features and reasoning part.

        A response whose reported output is final costs that output plus `final`; its output, next
        to what it shows, also teaches the output model (an observation without unseen content,
        known before the next report). Any other response is sized by the output model."""
        model = self.model
        mid = m.id
        p = self.cal._parts.get(mid)
        if p is None:
            p = self.cal.parts(m)
        if mid in self.cleared:
            cx = self._cleared_x(m)
            # never below what the placeholder's text costs by itself
            return _Pending(m, max(model.predict(cx), model.content(cx)), 0.0, cx, 0.0)
        x = p.x  # shared with the parts: read only
        cost = model.predict(x)
        if not p.response:
            return _Pending(m, cost, 0.0, x, 0.0)
        out = self.outputs.get(mid)
        if out:
            coef = model._coef  # `final` is a prior's: always there (`model.coef("final")`)
            if out >= FINAL_FRACTION * (cost - coef["final"]):  # the output predicted from what it shows
                if self._learns(self.k, x, OUT_MATURE):
                    output = p.output
                    model.update(output, float(out))
                    self._count(output)
                think = max(0.0, out - model.predict(p.visible)) if p.thinking else 0.0
                return _Pending(m, out + coef["final"], float(out), _FINAL_X, think)
        think = 0.0
        if p.thinking:
            think = model.coef("out_thinking") * x.get("out_thinking", 0.0) + model.coef(
                "out_signature"
            ) * x.get("out_signature", 0.0)
            if out and think > out and out >= FINAL_FRACTION * think:
                think = float(out)  # reasoning never costs more than the output that produced it
        return _Pending(m, cost, 0.0, x, think)

    def _remind(self, last: Message, pending: dict[str, _Pending]) -> None:
        """Add the running background shells' reminders (`BackgroundShells`) to what `last`, the
        request's last new message, costs: the harness sends them with it, the file does not
        hold them. Sized as text plus `bg_shell` per shell (learned per session)."""
        pm = pending.get(last.id)
        if pm is None or last.role is Role.ASSISTANT:
            return
        reminders = self.shells.reminders()
        text = self.cal.estimator.text
        extra: Features = {"text": float(sum(text(r) for r in reminders)), "bg_shell": float(len(reminders))}
        x = dict(pm.x)
        for name, v in extra.items():
            _add(x, name, v)
        pm.x = x
        pm.cost += self.model.predict(extra)
        self._put(last.id, round(pm.cost))

    def _cleared_x(self, m: Message) -> Features:
        """The features of `m` with its cleared results replaced by the placeholder."""
        blocks = [
            replace(b, content=CLEARED_TEXT, media=0)
            if isinstance(b, ToolResultBlock) and b.call_id in self.cleared_calls
            else b
            for b in m.blocks
        ]
        copy = replace(m, blocks=tuple(blocks))
        return _parts(copy, self.cal.estimator.text).x

    def _learns(self, k: int, x: Features, mature: int = MATURE) -> bool:
        """Whether the observation made at request k teaches the model.

        Every one does for the first `MATURE` requests; after them one request in `STRIDE` does
        (the others would move the coefficients by a fraction of a percent of their error each:
        learning from all of them only costs time on long sessions), and so does every
        observation holding a feature learned from fewer than `FEATURE_MATURE` (a new tool, say)."""
        return k <= mature or k % STRIDE == 0 or not self.mature.issuperset(x)

    def _count(self, x: Features) -> None:
        """Count the observation toward the maturity of each feature it holds (a mature one's
        count no longer matters: not kept counting, most of a long session's features)."""
        learned = self.learned
        mature = self.mature
        for name, v in x.items():
            if v and name not in mature:
                c = learned[name] = learned.get(name, 0) + 1
                if c >= FEATURE_MATURE:
                    mature.add(name)

    # -- the pass ----------------------------------------------------------------------------

    def _micro_events(self, tr: Transcript) -> list[RecordedEvent]:
        """`_micro_events(tr)`, made once per transcript (the pass goes on request by request)."""
        got = self.micro
        if got is None or got[0] is not tr:
            got = self.micro = (tr, _micro_events(tr))
        return got[1]

    def _put(self, mid: str, w: int, k: int | None = None) -> None:
        """Set a message's current weight (and record it from request k on, if given)."""
        self.total += w - self.cur.get(mid, 0)
        self.cur[mid] = w
        if k is not None:
            self.cal._set(mid, k, w)

    def run(self, start: int = 0, stop: int | None = None) -> None:
        """Requests `start` up to `stop` (0-based, `stop` excluded; None: to the end); the pass's
        state is kept, so it can go on from where it stopped, for the same transcript
        (`Calibration._upto`) or a longer one (`Calibration.extended`)."""
        cal = self.cal
        tr = cal.transcript
        by_id = tr.messages_by_id()
        micro = self._micro_events(tr)
        steps = cal._steps
        parts = cal._parts
        model = self.model
        predict = self.predict
        st = self.state
        mi = st.mi
        seg = st.seg
        ids: tuple[str, ...] = st.ids
        pos: dict[str, int] = st.pos
        seen = st.seen  # ledger length at the previous request
        last_report: int | None = st.last_report  # context of the last report in this segment
        pending: dict[str, _Pending] = st.pending
        removed = st.removed  # tokens taken off calibrated weights since the last report
        xadj: Features = st.xadj  # features of model-sized content taken off since the last report
        stripped_to = st.stripped_to  # ledger position before which reasoning has been stripped
        if start and seg >= 0:
            # the segment may have grown since: its ids and their positions
            ids = tr.segments[seg].message_ids
            if len(ids) != len(pos):
                pos = {mid: i for i, mid in enumerate(ids)}
        for req in tr.requests[start:stop] if start or stop is not None else tr.requests:
            k = self.k = req.index
            step = steps[k - 1]
            if not self.strip_model and req.model:
                self.strip_model = True
                version = tr.harness_version if tr.format == "claude-code" else None
                if keeps_reasoning(req.model, version):
                    self.strip_prior = (0.0, self.strip_prior[1])
            ledger_len = req.ledger_len
            new_segment = req.segment != seg
            if new_segment:
                seg = req.segment
                ids = tr.segments[seg].message_ids
                pos = {mid: i for i, mid in enumerate(ids)}
                keep = {mid: w for mid, w in self.cur.items() if pos.get(mid, ledger_len) < ledger_len}
                self.cur = keep
                self.total = sum(keep.values())
                self.think = {mid: t for mid, t in self.think.items() if mid in keep}
                pending = {}
                removed = 0.0
                xadj = {}
                last_report = None
                seen = 0
                stripped_to = 0
            before = seen
            if ledger_len > seen:
                added = [by_id[mid] for mid in ids[seen:ledger_len]]
                seen = ledger_len
            else:
                added = []
            # tool output the harness cleared before this request
            while mi < len(micro) and micro[mi].after_request < k:
                self.cleared_calls.update(micro[mi].cleared_tool_ids)
                mi += 1
                for mid in ids[:before]:
                    m = by_id[mid]
                    if m.id in self.cleared or not any(
                        isinstance(b, ToolResultBlock) and b.call_id in self.cleared_calls for b in m.blocks
                    ):
                        continue
                    self.cleared.add(m.id)
                    self.think.pop(m.id, None)
                    self.think_known.discard(m.id)
                    if m.id not in pending:
                        # its calibrated weight comes off; what the placeholder weighs is a
                        # prediction until the next report, which it shares with the new messages
                        # (and teaches the model)
                        removed += self.cur.get(m.id, 0)
                    pm = pending[m.id] = predict(m)
                    self._put(m.id, round(pm.cost), k)
            cur = self.cur
            human_at = -1
            response_at = -1  # in a tool loop: where its last response starts
            if added:
                total = self.total
                # reasoning of earlier turns: a new user turn may strip it
                turns = not new_segment
                human: str | None = None  # the last message added that starts a turn
                response: str | None = None  # the last response added
                for m in added:
                    mid = m.id
                    p = parts.get(mid)
                    if p is None:
                        p = cal.parts(m)
                    if turns and p.human:
                        human = mid
                    elif p.response:
                        response = mid
                    if mid in cur:
                        continue  # preserved across a compaction: keeps its weight
                    pm = pending[mid] = predict(m)
                    w = round(pm.cost)
                    total += w
                    cur[mid] = w
                    if pm.think > 0:
                        self.think[mid] = pm.think
                        if pm.known:
                            self.think_known.add(mid)
                    if not SHELL_FEATURES.isdisjoint(p.x):
                        self.shells.see(m)
                self.total = total
                if self.shells.live:
                    self._remind(added[-1], pending)
                if human is not None:
                    human_at = pos[human]
                elif turns and response is not None:
                    response_at = pos[response]
            if human_at > 0 and self.think:
                strip_ids, strippable = self._strippable(pos, stripped_to, human_at)
            else:
                strip_ids = []
                strippable = 0
            ov = self.overhead or 0
            keep_total = ov + self.total
            share = self.strip_share() if strippable > 0 else 0.0
            if self.overhead is not None:
                step.predicted = round(keep_total - share * strippable)
            usage = req.usage
            if usage is None:
                if share > 0:
                    removed += self._strip(k, strip_ids, pending, xadj, share)
                    stripped_to = human_at
                for mid in pending:
                    cal._set(mid, k, self.cur[mid])
                cal._set(OVERHEAD_ID, k, ov)
                step.context = ov + self.total
                continue
            context = usage.context
            if (
                response_at > 0
                and k >= 2
                and self.think
                and self.strip_share() > 0
                and prefix_rewritten(tr.requests[k - 2], req)
            ):
                # the provider rewrote the prompt inside a tool loop: the reasoning before the
                # loop's last response came off as at a new turn (`prefix_rewritten`)
                human_at = response_at
                strip_ids, strippable = self._strippable(pos, stripped_to, human_at)
            if strippable > 0:
                # what came off, as far as this report tells (what was added is a prediction)
                self.strip_seen += min(max(keep_total - context, 0.0), strippable)
                self.strip_offered += strippable
                share = self.strip_share()
                if share > 0:
                    removed += self._strip(k, strip_ids, pending, xadj, share)
                    stripped_to = human_at
            if last_report is not None and pending:
                # `self._learns(k, x)`, without building x when it does not
                learn = k <= MATURE or k % STRIDE == 0
                if not learn:
                    mature = self.mature
                    learn = not mature.issuperset(xadj) or not all(
                        [mature.issuperset(pm.x) for pm in pending.values()]
                    )
                if learn and k >= 2:
                    # a request on another model than the one before (a Skill or Task on another
                    # model: its tokenizer and system prompt differ), or whose prompt prefix
                    # changed: nothing in the text says what it costs
                    before_req = tr.requests[k - 2]
                    learn = not model_switched(before_req, req) and not prefix_changed(before_req, req)
                if learn:
                    x = dict(xadj)
                    get = x.get
                    known = 0.0
                    for pm in pending.values():
                        known += pm.known
                        for name, v in pm.x.items():
                            if v:
                                x[name] = get(name, 0.0) + v
                    model.update(x, context - last_report + removed - known, unseen=True)
                    self._count(x)
            if last_report is None:
                self._segment_start(k, context, pending)
            else:
                self._attribute(k, context, pending)
            pending = {}
            removed = 0.0
            xadj = {}
            last_report = context
            step.context = context
            if self.snapshot_n != model.n or self.snapshot is None:
                self.snapshot = model.snapshot()
                self.snapshot_n = model.n
            step.model = self.snapshot
        cal._strip_thinking = self.strip_share() >= 0.5
        self.state = _RunState(
            mi=mi,
            seg=seg,
            ids=ids,
            pos=pos,
            seen=seen,
            last_report=last_report,
            pending=pending,
            removed=removed,
            xadj=xadj,
            stripped_to=stripped_to,
        )

    def clone(self, cal: Calibration, start: int) -> _DeltaRun:
        """A copy of this pass's state for `cal` (a calibration of a longer transcript, the same
        up to request `start`, whose output may have grown), sharing nothing that going on would
        change."""
        run = _DeltaRun.__new__(_DeltaRun)
        run.cal = cal
        run.model = self.model.copy()
        run.overhead = self.overhead
        run.cur = dict(self.cur)
        run.total = self.total
        run.think = dict(self.think)
        run.think_known = set(self.think_known)
        run.cleared = set(self.cleared)
        run.cleared_calls = set(self.cleared_calls)
        run.strip_prior = self.strip_prior
        run.strip_model = self.strip_model
        run.strip_seen = self.strip_seen
        run.strip_offered = self.strip_offered
        run.outputs = dict(self.outputs)
        for r in cal.transcript.requests[max(0, start - 1) :]:
            if r.response_id is not None and r.usage is not None:
                run.outputs[r.response_id] = r.usage.output
        run.learned = dict(self.learned)
        run.mature = set(self.mature)
        run.k = self.k
        run.snapshot = self.snapshot  # frozen: shared
        run.snapshot_n = self.snapshot_n
        run.micro = None  # (another transcript: read again)
        run.shells = self.shells.copy()
        st = self.state
        run.state = _RunState(
            mi=st.mi,
            seg=st.seg,
            ids=st.ids,
            pos=st.pos,
            seen=st.seen,
            last_report=st.last_report,
            pending={mid: pm.copy() for mid, pm in st.pending.items()},
            removed=st.removed,
            xadj=dict(st.xadj),
            stripped_to=st.stripped_to,
        )
        return run

    def _strippable(self, pos: dict[str, int], start: int, end: int) -> tuple[list[str], float]:
        """The messages whose reasoning a turn starting at ledger position `end` may take off
        (reasoning not stripped yet, from `start` on), and how much of it there is."""
        think = self.think
        ids = [mid for mid, t in think.items() if t > 0 and start <= pos[mid] < end]
        return ids, (sum([think[mid] for mid in ids]) if ids else 0)

    def strip_share(self) -> float:
        """The share of earlier turns' reasoning a new user turn takes off the context, learned
        from the turn boundaries so far (`STRIP_PRIOR` until they say otherwise)."""
        mean, weight = self.strip_prior
        return (mean * weight + self.strip_seen) / (weight + self.strip_offered)

    def _strip(
        self, k: int, ids: list[str], pending: dict[str, _Pending], xadj: Features, share: float = 1.0
    ) -> float:
        """Drop `share` of the reasoning of `ids` from their weights.

        Returns the tokens that came off as known amounts (a final response's reasoning is its
        output minus its visible blocks); reasoning that was sized by the model comes off as
        features instead (added to `xadj`, negated), so the differences keep teaching the model
        what reasoning costs.
        """
        off = 0.0
        whole = share >= 1.0
        for mid in ids:
            t = self.think.pop(mid, 0.0) * share
            m = self.cal.transcript.message(mid)
            p = self.cal.parts(m)
            t_name, s_name = p.reasoning
            if mid in pending:
                pm = pending[mid]
                pm.cost = max(0.0, pm.cost - t)
                if pm.known and whole:
                    # a final response without its reasoning: sized by its visible blocks
                    pm.known = 0.0
                    pm.x = {n: v for n, v in p.x.items() if n != t_name and n != s_name}
                elif pm.known:
                    pm.known = max(0.0, pm.known - t)
                elif whole:
                    # a new dict: `pm.x` may be the parts' own (read only)
                    pm.x = {n: v for n, v in pm.x.items() if n != t_name and n != s_name}
                else:
                    keep = 1.0 - share
                    pm.x = {n: v * keep if n in (t_name, s_name) else v for n, v in pm.x.items()}
                self._put(mid, round(pm.cost))
            else:
                w = self.cur[mid]
                nw = max(0, w - round(t))
                self._put(mid, nw, k)
                if mid in self.think_known:
                    off += w - nw
                else:
                    _add(xadj, t_name, -share * p.x.get(t_name, 0.0))
                    _add(xadj, s_name, -share * p.x.get(s_name, 0.0))
            self.think_known.discard(mid)
        return off

    def _segment_start(self, k: int, context: int, pending: dict[str, _Pending]) -> None:
        """First report of a segment (or of the transcript): pin the overhead, spread the rest."""
        new = list(pending.values())
        fixed = self.total - sum(self.cur[pm.mid] for pm in new)
        if self.overhead is None:
            predicted = sum(pm.cost for pm in new)
            self.overhead = max(0, context - fixed - round(predicted))
            if predicted > context - fixed and new:
                # the report cannot even hold the messages as estimated: that teaches the ratios
                x: Features = {}
                for pm in new:
                    for name, v in pm.x.items():
                        _add(x, name, v)
                self.model.update(x, context - fixed - sum(pm.known for pm in new), robust=False)
                self._count(x)
                for pm in new:
                    pm.cost = self.predict(pm.message).cost
        rest = context - self.overhead - fixed
        if rest < 0 or (not new and rest):
            self.overhead = max(0, self.overhead + rest)
            rest = context - self.overhead - fixed
        self.cal._set(OVERHEAD_ID, k, self.overhead)
        if rest < 0:
            # even without overhead the preserved messages weigh more than the report: scale them
            self._spread(k, 0, new)
            self._take_from_old(k, -rest, set(pending))
            return
        self._spread(k, rest, new)

    def _attribute(self, k: int, context: int, pending: dict[str, _Pending]) -> None:
        """A report after another: the difference goes to what was added since (old weights stay)."""
        ov = self.overhead or 0
        new = list(pending.values())
        cur = self.cur
        fixed = ov + self.total - sum([cur[pm.mid] for pm in new])
        rest = context - fixed
        if not new:
            # nothing was added, yet the input changed: something the transcript does not store
            self.overhead = max(0, ov + rest)
            self.cal._set(OVERHEAD_ID, k, self.overhead)
            if ov + rest < 0:
                self._take_from_old(k, -(ov + rest), set())
            return
        if rest < 0:
            # more went away than was added: new messages weigh nothing, the rest comes off old ones
            self._spread(k, 0, new)
            self._take_from_old(k, -rest, set(pending))
            return
        self._spread(k, rest, new)

    def _spread(self, k: int, total: int, new: list[_Pending]) -> None:
        """Give `new` integer weights adding up to `total`: predictions plus a share of the error.

        The error goes to the uncertain part of each prediction (a final response's output is
        known), and never takes a weight below zero.
        """
        n = len(new)
        if not n:
            return
        if n == 1:
            self._settle(k, new, [total])  # what `_targets` gives one message (total >= 0 here)
            return
        if n == 2:
            two = _targets_two(total, new[0], new[1])
            if two is not None:
                self._settle(k, new, apportion(total, two))
                return
        self._settle(k, new, apportion(total, _targets(total, new)))

    def _settle(self, k: int, new: list[_Pending], ints: list[int]) -> None:
        """Record the weights `ints` of `new` from request k on."""
        think = self.think
        for pm, w in zip(new, ints, strict=True):
            mid = pm.mid
            if think and mid in think and pm.cost > 0:
                think[mid] = min(think[mid] * w / pm.cost, float(w))
            self._put(mid, w, k)

    def _take_from_old(self, k: int, short: int, skip: set[str]) -> None:
        """Take `short` tokens off the calibrated weights of messages not in `skip`, then the overhead."""
        olds = [(mid, w) for mid, w in self.cur.items() if mid not in skip]
        take = apportion(min(short, sum(w for _, w in olds)), [float(w) for _, w in olds])
        for (mid, w), t in zip(olds, take, strict=True):
            if t:
                self._put(mid, w - t, k)
        left = short - sum(take)
        if left > 0:
            self.overhead = max(0, (self.overhead or 0) - left)
            self.cal._set(OVERHEAD_ID, k, self.overhead)
