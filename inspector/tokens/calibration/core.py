"""Per-request calibrated weights of a whole transcript (`Calibration`, see the package docstring)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Literal

from msgspec import Struct

from inspector.model import Message, Request, Segment, Transcript
from inspector.model.bulk import paused_gc

from ..base import Estimator
from ..heuristic import HeuristicEstimator, heuristic_tokens
from .cost_model import Coefficients
from .delta import _DeltaRun
from .estimator import CalibratedEstimator
from .features import OVERHEAD_ID, Features, Parts, _parts, _texts_of, parts_of
from .priors import CHOSEN_ON, Kind, prior_ratio
from .requests import _micro_events
from .weights import _Versions, apportion

Mode = Literal["proportional", "delta"]
MODES: tuple[Mode, ...] = ("proportional", "delta")

CHANGED_CACHE = 65_536
"""How many changed messages (truncated, cleared copies) a calibration remembers the features of."""


class _Step(Struct):
    """What calibration knows about one request."""

    predicted: int | None = None
    context: int = 0
    model: Coefficients | None = None
    report: int = 0
    """Proportional mode: the request whose report these weights derive from (0: none)."""
    scale: float = 1.0


class Calibration:
    """Per-request calibrated weights of a whole transcript (see the module docstring)."""

    def __init__(
        self,
        transcript: Transcript,
        estimator: Estimator,
        mode: Mode = "delta",
        serialized: Sequence[str] | None = None,
    ) -> None:
        """`serialized`: `serialize(m)` of each of `transcript.messages`, in order, where the caller
        has them already (the proportional mode's heuristic estimates are read from them)."""
        if mode not in MODES:
            raise ValueError(f"unknown calibration mode {mode!r}; choose one of: {', '.join(MODES)}")
        self.transcript = transcript
        self.estimator = estimator
        self.mode: Mode = mode
        self._parts: dict[str, Parts] = {}
        self._local: dict[str, int] = {}
        self._versions: dict[str, _Versions] = {}
        """Message id -> its weights (read them after `_flush`)."""
        self._lock = threading.RLock()
        """Held while the pass runs or what it set is filed: the app asks from several threads."""
        self._log: list[tuple[str, int, int]] = []
        """(id, request, weight) set by the pass and not yet in `_versions` and `_changes`, in
        order: the pass only writes them, so they are filed when first read (`_flush`)."""
        self._steps: list[_Step] = [_Step() for _ in transcript.requests]
        self._weights_cache: dict[int, dict[str, int]] = {}
        self._totals: dict[int, int] = {}
        self._positions: dict[int, tuple[Segment, dict[str, int] | None]] = {}
        """Request -> the sum of its ledger's weights (overhead included), where already known."""
        self._changes: dict[int, list[str]] = {}
        """Request -> ids whose weight was (re)set at it (for stepping the weights forward; read
        it after `_flush`)."""
        self._models: list[Coefficients] = []
        """`model_at` of the requests up to len(_models) (extended as the pass goes on)."""
        self._changed: dict[int, tuple[Message, Estimator | None, Features | None, int]] = {}
        """id(message) -> `_changed_entry` of messages sized as changed."""
        self._same: dict[int, tuple[Message, Message, bool]] = {}
        self._priced: dict[int, tuple[Message, Estimator, Coefficients, int]] = {}
        """id(message) -> (message, base, model, `changed_message` by that model): a layer's changed
        copy is sized again at every request it is shaped at, and the model stays the same object
        from one of its updates to the next (`model_at`)."""
        """id(message) -> (message, the transcript's message of its id, whether they are equal)."""
        self._spent: list[int] = []
        self._spend_seen: dict[str | int, int] = {}
        self._overhead_estimate = 0
        self._prefix: list[list[int]] = []
        self._strip_thinking = False
        self.first_report: int | None = next(
            (r.index for r in transcript.requests if r.usage is not None), None
        )
        self._run: _DeltaRun | None = None
        self._done = 0
        """Delta mode: the requests calibrated so far (the pass runs on demand, see `_upto`)."""
        self.ahead: Callable[[Calibration], bool] | None = None
        """Delta mode: where the pass may already have run elsewhere (`inspector.tokens.stored`'s
        `run_ahead`: another process): called once, before the pass would first run, it gives
        this calibration what that pass decided (True), or nothing (False: the pass runs here)."""
        with paused_gc():
            if mode == "proportional":
                self._prefetch_local(serialized)
                self._run_proportional()
                self._done = len(self._steps)
            self._cumulative_spend()

    def _upto(self, k: int) -> None:
        """Calibrate the requests up to k (delta mode), if not yet done.

        The pass runs on demand and stops where asked: a question about request k needs only
        the requests up to it (the pass never changes what it decided before), so a report that
        reads the providers' own figures never runs it, and one that looks at request 30 of 7,000
        runs 30. Going on later from where it stopped gives what one whole pass gives. Only the
        messages the pass reaches are sized (those of the ledgers of the requests it runs)."""
        if k <= self._done:
            return
        with self._lock, paused_gc():
            if k <= self._done:
                return  # another thread ran it meanwhile
            ahead, self.ahead = self.ahead, None
            if ahead is not None and not self._done and ahead(self) and k <= self._done:
                return
            if self._run is None and self._done:
                self._again()
            self._prefetch_sizes(self._reached(self._done, k))
            if self._run is None:
                self._run = _DeltaRun(self)
            self._run.run(start=self._done, stop=k)
            self._done = k

    def _again(self) -> None:
        """Run the pass again up to where it stood, to go on from there: a calibration restored
        from the persistent cache (`inspector.tokens.stored`) holds what its pass decided, not the
        pass's own state. The pass run again decides the same, so what another thread reads
        meanwhile (of the requests up to `_done`) is the same before and after."""
        again = Calibration(self.transcript, self.estimator, self.mode)
        again._upto(self._done)
        again._flush()
        self._flush()
        self._parts = again._parts
        self._versions, self._changes, self._steps = again._versions, again._changes, again._steps
        assert again._run is not None
        again._run.cal = self
        self._run = again._run

    def _reached(self, start: int, stop: int) -> list[Message]:
        """The messages not sized yet of the ledgers of requests `start` + 1 to `stop`: what the
        pass over them reads (each ledger's messages past the request before's, in ledger order)."""
        tr = self.transcript
        requests = tr.requests
        by_id = tr.messages_by_id()
        parts = self._parts
        out: list[Message] = []
        seg, seen = -1, 0
        if start:
            seg, seen = requests[start - 1].segment, requests[start - 1].ledger_len
        ids: Sequence[str] = tr.segments[seg].message_ids if seg >= 0 else ()
        for r in requests[start:stop]:
            if r.segment != seg:
                seg, seen = r.segment, 0
                ids = tr.segments[seg].message_ids
            if r.ledger_len > seen:
                for mid in ids[seen : r.ledger_len]:
                    if mid not in parts and (m := by_id.get(mid)) is not None:
                        out.append(m)
                seen = r.ledger_len
        return out

    @property
    def strip_thinking(self) -> bool:
        """Whether this session drops earlier turns' reasoning (decided from all its reports)."""
        self._upto(len(self._steps))
        return self._strip_thinking

    # -- sizes -------------------------------------------------------------------------------

    def extended(self, transcript: Transcript) -> Calibration | None:
        """The calibration of `transcript`, a later state of this one's (a file that grew: the same
        requests so far, whose ledgers only grew, more after them), going on from where this pass
        stopped instead of starting over; None when `transcript` does not simply extend this one
        (then calibrate it afresh). This calibration is left as it was."""
        old = self.transcript
        run = self._run
        n = len(old.requests)
        if self.mode == "delta":
            self._upto(n)
            run = self._run
        if (
            run is None
            or n == 0
            or len(transcript.requests) < n
            or len(transcript.segments) < len(old.segments)
        ):
            return None

        def key(r: Request) -> tuple[object, ...]:
            # not the output: the last response may still be streaming (it counts from the next request)
            return (r.index, r.segment, r.ledger_len, r.response_id, r.usage.context if r.usage else None)

        if any(
            key(a) != key(b)
            for a, b in zip(
                old.requests[-64:], transcript.requests[n - len(old.requests[-64:]) : n], strict=True
            )
        ):
            return None
        for a, b in zip(old.segments, transcript.segments, strict=False):
            if a is not b and b.message_ids[: len(a.message_ids)] != a.message_ids:
                return None
        if [e for e in _micro_events(old) if e.after_request < n] != [
            e for e in _micro_events(transcript) if e.after_request < n
        ]:
            return None
        last = old.requests[-1]
        held = old.segments[last.segment].message_ids[: last.ledger_len]
        index = transcript.messages_by_id()
        old_index = old.messages_by_id()
        if any(index.get(mid) != old_index.get(mid) for mid in held[-32:]):
            return None
        new = Calibration.__new__(Calibration)
        new.__dict__.update(self.__dict__)
        new._lock = threading.RLock()
        new.transcript = transcript
        # sizes: messages not in the last ledger may have changed (a response still streaming);
        # the others are kept (copied whole and the few stale ones taken out: no pass per message)
        stale = list(old.segments[last.segment].message_ids[last.ledger_len :])
        for seg in old.segments[last.segment + 1 :]:
            stale.extend(seg.message_ids)
        new._parts = dict(self._parts)
        new._local = dict(self._local)
        for mid in stale:
            if mid not in held:
                new._parts.pop(mid, None)
                new._local.pop(mid, None)
        # (the messages not sized are sized as the pass reaches them: `_upto`)
        self._flush()
        new._log = []
        # weights set from here on are of the current segment's messages and the overhead
        new._versions = dict(self._versions)
        for mid in (OVERHEAD_ID, *transcript.segments[last.segment].message_ids):
            ver = new._versions.get(mid)
            if ver is not None:
                new._versions[mid] = _Versions(list(ver.at), list(ver.value))
        new._changes = dict(self._changes)
        new._steps = self._steps + [_Step() for _ in transcript.requests[n:]]
        new._weights_cache = {}
        new._totals = {}
        new._positions = {}
        new._models = []
        new._changed = {}
        new._same = {}
        # spend: kept up to the last old request (whose output may still have grown)
        new._spent = self._spent[: n - 1]
        new._spend_seen = dict(self._spend_seen)
        last_key = old.requests[-1].response_id or -old.requests[-1].index
        if new._spend_seen.get(last_key) == n - 1:
            del new._spend_seen[last_key]
        new.first_report = next((r.index for r in transcript.requests if r.usage is not None), None)
        with paused_gc():
            new._run = run.clone(new, n)
            new._done = n
            new._cumulative_spend(n - 1)
        return new

    def _prefetch_sizes(self, messages: Sequence[Message] | None = None) -> None:
        """Size every block of `messages` (default: the transcript's) once: in one batch when the
        estimator can batch (tiktoken), else text by text in a single pass over each message."""
        msgs = self.transcript.messages if messages is None else messages
        parts = self._parts
        # the last message with an id wins, as in `{m.id: m for m in messages}`
        batch = getattr(self.estimator, "texts", None)
        if callable(batch):
            texts: list[str] = []
            owners: list[tuple[Message, int]] = []
            for m in msgs:
                ts = _texts_of(m)
                owners.append((m, len(ts)))
                texts.extend(ts)
            unique = list(dict.fromkeys(texts))  # each distinct text tokenized once
            if len(unique) < len(texts):
                size_of = dict(zip(unique, batch(unique), strict=True))
                sizes = [size_of[t] for t in texts]
            else:
                sizes = list(batch(texts))
            pos = 0
            for m, n in owners:
                parts[m.id] = parts_of(m, sizes[pos : pos + n], texts[pos : pos + n])
                pos += n
            return
        est = self.estimator
        if type(est) is HeuristicEstimator:
            for m in msgs:
                parts[m.id] = _parts(m, heuristic_tokens, None, True)
        else:
            size = est.text
            for m in msgs:
                parts[m.id] = _parts(m, size)

    def _prefetch_local(self, serialized: Sequence[str] | None = None) -> None:
        msgs = self.transcript.messages
        batch = getattr(self.estimator, "messages", None)
        if serialized is not None and type(self.estimator) is HeuristicEstimator:
            # `HeuristicEstimator.message`, from the texts the caller serialized
            values = [HeuristicEstimator.serialized(t) for t in serialized]
        elif callable(batch):
            values = list(batch(msgs))
        else:
            values = [self.estimator.message(m) for m in msgs]
        self._local = {m.id: int(v) for m, v in zip(msgs, values, strict=True)}

    def parts(self, message: Message) -> Parts:
        """The message's content by kind (cached by id)."""
        p = self._parts.get(message.id)
        if p is None:
            p = self._parts[message.id] = _parts(message, self.estimator.text)
        return p

    def local(self, message: Message) -> int:
        """The plain local estimate of a message (cached by id)."""
        v = self._local.get(message.id)
        if v is None:
            v = self._local[message.id] = self.estimator.message(message)
        return v

    def _set(self, mid: str, k: int, v: int) -> None:
        """Record weight `v` of `mid` from request k on (filed by `_flush`)."""
        self._log.append((mid, k, v))

    def _flush(self) -> None:
        """File the weights the pass set since the last call in `_versions` and `_changes`."""
        if not self._log:
            return
        with self._lock:
            self._file(self._log)

    def _file(self, log: list[tuple[str, int, int]]) -> None:
        versions = self._versions
        changes = self._changes
        for mid, k, v in log:
            ver = versions.get(mid)
            if ver is None:
                versions[mid] = _Versions([k], [v])
            else:
                ver.set(k, v)
            ids = changes.get(k)
            if ids is None:
                changes[k] = [mid]
            else:
                ids.append(mid)
        log.clear()

    def _cumulative_spend(self, start: int = 0) -> None:
        """Input plus output of every response, counted once, up to each request; from request
        `start` + 1 on (the ones before are in `_spent` and `_spend_seen` already)."""
        spent = self._spent
        total = spent[start - 1] if start else 0
        seen = self._spend_seen  # response -> 0-based request it was first counted at
        requests = self.transcript.requests
        for i in range(start, len(requests)):
            r = requests[i]
            u = r.usage
            if u is not None:
                key = r.response_id or -r.index  # no id: each request on its own
                if key not in seen:
                    seen[key] = i
                    total += u.spent
            spent.append(total)

    # -- proportional mode -------------------------------------------------------------------

    def _run_proportional(self) -> None:
        tr = self.transcript
        self._prefix = []
        for seg in tr.segments:
            pre = [0]
            for mid in seg.message_ids:
                pre.append(pre[-1] + self.local(tr.message(mid)))
            self._prefix.append(pre)
        e_ov: int | None = None
        last: tuple[int, int, float, int] | None = None  # (request, context, scale, segment)
        for req in tr.requests:
            k = req.index
            step = self._steps[k - 1]
            pre = self._prefix[req.segment]
            est = pre[req.ledger_len]
            if last is not None and last[3] == req.segment:
                j, c_j, s_j, _ = last
                pred = c_j + s_j * (est - pre[tr.request(j).ledger_len])
                step.predicted = round(pred)
            elif last is not None:
                s_j = last[2]
                pred = s_j * ((e_ov or 0) + est)
                step.predicted = round(pred)
            else:
                pred = float(est)
            if req.usage is None:
                step.report = last[0] if last is not None else 0
                step.scale = last[2] if last is not None else 1.0
                step.context = round(pred)
                continue
            c = req.usage.context
            if e_ov is None:
                e_ov = max(0, c - est)
                self._overhead_estimate = e_ov
            total_est = e_ov + est
            s = c / total_est if total_est > 0 else 1.0
            last = (k, c, s, req.segment)
            step.report, step.scale, step.context = k, s, c

    def _weights_proportional(self, k: int) -> dict[str, int]:
        tr = self.transcript
        step = self._steps[k - 1]
        ledger = tr.ledger(k)
        j = step.report
        if j == 0:
            out = {OVERHEAD_ID: 0}
            out.update({m.id: self.local(m) for m in ledger})
            return out
        rj = tr.request(j)
        e_ov = self._overhead_estimate
        if rj.segment != tr.request(k).segment:
            s = step.scale
            out = {OVERHEAD_ID: round(s * e_ov)}
            out.update({m.id: round(s * self.local(m)) for m in ledger})
            return out
        n = rj.ledger_len
        assert rj.usage is not None
        shares = [float(e_ov)] + [float(self.local(m)) for m in ledger[:n]]
        ints = apportion(rj.usage.context, shares)
        out = {OVERHEAD_ID: ints[0]}
        for m, w in zip(ledger[:n], ints[1:], strict=True):
            out[m.id] = w
        s = step.scale
        for m in ledger[n:]:
            out[m.id] = round(s * self.local(m))
        return out

    # -- queries -----------------------------------------------------------------------------

    def _check(self, k: int) -> None:
        if not 1 <= k <= len(self._steps):
            raise IndexError(f"request {k} is out of range 1..{len(self._steps)}")

    def weights(self, k: int) -> dict[str, int]:
        """Message id -> calibrated weight for the ledger at request k, `OVERHEAD_ID` included.

        At a request with usage they sum exactly to `usage.context`.
        """
        return dict(self.shared_weights(k))

    def weight_at(self, k: int, mid: str) -> int | None:
        """`weights(k).get(mid)`: one message's weight (or the overhead's), None where `mid` is not
        in request k's ledger; read one by one where the calibration can (no dict of the ledger)."""
        self._check(k)
        self._upto(k)
        lazy = self._lazy_positions(k)
        if lazy is None:
            return self.shared_weights(k).get(mid)
        pos, n = lazy
        if mid != OVERHEAD_ID and pos.get(mid, n) >= n:
            return None
        return self.weight_of(k, mid)

    def shared_weights(self, k: int) -> dict[str, int]:
        """`weights(k)` without the copy: cached and shared with the calibration (and every other
        caller), so read it and never change it."""
        self._check(k)
        self._upto(k)
        self._flush()
        cached = self._weights_cache.get(k)
        if cached is None:
            if self.mode == "proportional":
                cached = self._weights_proportional(k)
            elif self.first_report is None or k < self.first_report:
                # nothing reported yet: plain local estimates, no overhead known
                cached = {OVERHEAD_ID: 0}
                cached.update({m.id: self.local(m) for m in self.transcript.ledger(k)})
            else:
                cached = self._weights_stepped(k)
                if cached is None:
                    ov = self._versions.get(OVERHEAD_ID)
                    cached = {OVERHEAD_ID: (ov.get(k) if ov is not None else None) or 0}
                    for m in self.transcript.ledger(k):
                        ver = self._versions.get(m.id)
                        v = ver.get(k) if ver is not None else None
                        cached[m.id] = v if v is not None else self.local(m)
            if len(self._weights_cache) >= 64:
                # keep the previous request's weights: stepping forward builds on them
                prev = self._weights_cache.get(k - 1)
                prev_total = self._totals.get(k - 1)
                self._weights_cache.clear()
                self._totals = {k: self._totals[k]} if k in self._totals else {}
                if prev is not None:
                    self._weights_cache[k - 1] = prev
                    if prev_total is not None:
                        self._totals[k - 1] = prev_total
            self._weights_cache[k] = cached
        return cached

    def ledger_total(self, k: int) -> int:
        """The sum of the weights of request k's ledger, overhead included, one term per message
        (what summing `CalibratedEstimator(self, k).message` over the overhead and the ledger gives).

        Stepping forward it is kept up to date from the request before: the weights (re)set at k
        and the messages added since, no pass over the ledger."""
        self._check(k)
        self._upto(k)
        total = self._totals.get(k)
        if total is None:
            total = self._total_stepped(k)
        if total is None:
            weights = self.shared_weights(k)
            total = self._totals.get(k)
            if total is None:
                tr = self.transcript
                req = tr.request(k)
                ids = tr.segments[req.segment].message_ids[: req.ledger_len]
                total = weights.get(OVERHEAD_ID, 0) + sum(map(weights.__getitem__, ids))
        self._totals[k] = total
        return total

    def _total_stepped(self, k: int) -> int | None:
        if k < 2 or self._lazy_positions(k) is None or self._lazy_positions(k - 1) is None:
            return None
        self._flush()
        prev = self._totals.get(k - 1)
        if prev is None:
            return None
        tr = self.transcript
        req, before = tr.requests[k - 1], tr.requests[k - 2]
        if req.segment != before.segment or req.ledger_len < before.ledger_len:
            return None
        pos = self._segment_positions(req.segment)
        assert pos is not None
        total = prev
        # request k's and k - 1's weights are read one by one (checked above) and the pass has
        # reached k (`ledger_total`): `_read_weight`, not `weight_of`'s checks again per message
        read = self._read_weight
        held = before.ledger_len
        for mid in set(self._changes.get(k, ())):
            if mid == OVERHEAD_ID or pos.get(mid, held) < held:
                total += read(k, mid) - read(k - 1, mid)
        for mid in tr.segments[req.segment].message_ids[held : req.ledger_len]:
            total += read(k, mid)
        return total

    def _segment_positions(self, segment: int) -> dict[str, int] | None:
        """Message id -> position in the segment; None when an id is there twice (or is the
        overhead's): then weights are only read from whole dicts."""
        seg = self.transcript.segments[segment]
        hit = self._positions.get(segment)
        if hit is not None and hit[0] is seg:
            return hit[1]
        ids = seg.message_ids
        pos = {mid: i for i, mid in enumerate(ids)}
        found = pos if len(pos) == len(ids) and OVERHEAD_ID not in pos else None
        self._positions[segment] = (seg, found)
        return found

    def _lazy_positions(self, k: int) -> tuple[dict[str, int], int] | None:
        """(segment positions, ledger length) when request k's weights can be read one by one."""
        if self.mode != "delta" or self.first_report is None or k < self.first_report:
            return None
        req = self.transcript.requests[k - 1]
        pos = self._segment_positions(req.segment)
        return (pos, req.ledger_len) if pos is not None else None

    def weight_of(self, k: int, mid: str) -> int:
        """The weight at request k of a message of its ledger (or of the overhead), as in
        `weights(k)`, without building the dict (delta mode, from the first report on)."""
        self._upto(k)
        if self._lazy_positions(k) is None:
            return self.shared_weights(k)[mid]
        return self._read_weight(k, mid)

    def _read_weight(self, k: int, mid: str) -> int:
        """`weight_of(k, mid)` where the pass has reached k and request k's weights are read one
        by one (`_lazy_positions(k)`): the caller knows."""
        self._flush()
        ver = self._versions.get(mid)
        v = ver.get(k) if ver is not None else None
        if mid == OVERHEAD_ID:
            return v or 0
        return v if v is not None else self.local(self.transcript.messages_by_id()[mid])

    def _weights_stepped(self, k: int) -> dict[str, int] | None:
        """The weights at k from those at k-1 (when cached and the ledger only grew): only the
        weights (re)set at k and the messages added since change. None when that does not apply."""
        if k - 1 < (self.first_report or 1):
            return None
        prev = self._weights_cache.get(k - 1)
        if prev is None:
            return None
        tr = self.transcript
        req, before = tr.requests[k - 1], tr.requests[k - 2]
        if req.segment != before.segment or req.ledger_len < before.ledger_len:
            return None
        out = dict(prev)
        total = self._totals.get(k - 1)
        if len(prev) != before.ledger_len + 1:
            total = None  # an id twice in the ledger: the sum is not the sum of the dict
        versions = self._versions
        for mid in self._changes.get(k, ()):
            if mid in out:
                v = versions[mid].get(k)
                if v is not None:
                    if total is not None:
                        total += v - out[mid]
                    out[mid] = v
        if req.ledger_len > before.ledger_len:
            by_id = tr.messages_by_id()
            for mid in tr.segments[req.segment].message_ids[before.ledger_len : req.ledger_len]:
                ver = versions.get(mid)
                v = ver.get(k) if ver is not None else None
                w = v if v is not None else self.local(by_id[mid])
                if total is not None:
                    if mid in out:
                        total = None
                    else:
                        total += w
                out[mid] = w
        if total is not None:
            self._totals[k] = total
        return out

    def predicted(self, k: int) -> int | None:
        """The input predicted for request k from the weights before it (None before any report)."""
        self._check(k)
        self._upto(k)
        return self._steps[k - 1].predicted

    def predictions(self) -> list[int | None]:
        """`predicted(k)` of every request in order (index 0 is request 1): the pass run once to
        the end, not request by request."""
        self._upto(len(self._steps))
        return [step.predicted for step in self._steps]

    def context(self, k: int) -> int:
        """The calibrated total input at request k (the report itself where there is one)."""
        self._check(k)
        usage = self.transcript.requests[k - 1].usage
        if usage is None:
            return sum(self.weights(k).values())
        return usage.context

    def overhead(self, k: int) -> int:
        """The weight of the pinned overhead pseudo-message at request k."""
        return self.weights(k)[OVERHEAD_ID]

    def spent(self, k: int) -> int:
        """Cumulative tokens spent through request k: every response's input + output, once each."""
        self._check(k)
        return self._spent[k - 1]

    @property
    def spend(self) -> list[int]:
        """Cumulative spend per request (index 0 is request 1); keeps counting across compactions."""
        return list(self._spent)

    def model_at(self, k: int) -> Coefficients:
        """The delta mode's cost model as learned through request k."""
        self._check(k)
        self._upto(k)
        models = self._models
        if len(models) < k:
            with self._lock:
                # the requests calibrated so far keep their models: only the new ones are looked at
                wide = self.transcript.format not in CHOSEN_ON
                last = models[-1] if models else Coefficients(ratio=prior_ratio(self.estimator.name, wide))
                for step in self._steps[len(models) : k]:
                    if step.model is not None:
                        last = step.model
                    models.append(last)
        return models[k - 1]

    def ratios(self, k: int) -> dict[str, float]:
        """What was learned by request k: the cost model's coefficients, or the proportional scale."""
        if self.mode == "proportional":
            return {"scale": round(self._steps[k - 1].scale, 4)}
        return {name: round(v, 4) for name, v in self.model_at(k).as_dict().items()}

    def changed_text(self, k: int, text: str, base: Estimator) -> int:
        if self.mode == "proportional":
            return round(self._steps[k - 1].scale * base.text(text))
        return max(0, round(self.model_at(k).kind_ratio(Kind.TEXT) * base.text(text)))

    def changed_message(
        self, k: int, message: Message, base: Estimator, coefs: Coefficients | None = None
    ) -> int:
        """What a message that is not (or no longer) as in the ledger costs at request k
        (`coefs`: `model_at(k)`, where the caller has it)."""
        if self.mode == "proportional":
            return round(self._steps[k - 1].scale * base.message(message))
        if coefs is None:
            coefs = self.model_at(k)
        hit = self._priced.get(id(message))
        if hit is not None and hit[0] is message and hit[1] is base and hit[2] is coefs:
            return hit[3]
        x = self._changed_entry(message, base)[2]
        assert x is not None
        # never below what its texts cost by themselves (a cleared result's placeholder included)
        cost = max(0, round(max(coefs.predict(x), coefs.content(x))))
        if len(self._priced) >= CHANGED_CACHE:
            self._priced.clear()
        self._priced[id(message)] = (message, base, coefs, cost)
        return cost

    def _changed_entry(
        self, message: Message, base: Estimator | None
    ) -> tuple[Message, Estimator | None, Features | None, int]:
        """(message, base, features by `base`, text length), cached by message object."""
        hit = self._changed.get(id(message))
        if hit is not None and hit[0] is message and (base is None or hit[1] is base):
            return hit
        texts = _texts_of(message)
        x = None
        if base is not None:
            x = parts_of(message, [base.text(t) for t in texts], texts, type(base) is HeuristicEstimator).x
        entry = (message, base, x, sum(len(t) for t in texts))
        if len(self._changed) >= CHANGED_CACHE:
            self._changed.clear()
        self._changed[id(message)] = entry
        return entry

    def _same_as_own(self, message: Message, own: Message) -> bool:
        """`message == own`, for `own` the transcript's message of its id (cached by both objects:
        a layer's changed copy is sized again at every request it is shaped at)."""
        hit = self._same.get(id(message))
        if hit is not None and hit[0] is message and hit[1] is own:
            return hit[2]
        same = message == own
        if len(self._same) >= CHANGED_CACHE:
            self._same.clear()
        self._same[id(message)] = (message, own, same)
        return same

    def _text_len(self, message: Message) -> int:
        """Characters of a message's texts (cached by message object)."""
        hit = self._changed.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[3]
        return self._changed_entry(message, None)[3]

    def estimator_at(self, k: int, base: Estimator) -> CalibratedEstimator:
        """An Estimator for shaping request k: calibrated weights for unchanged ledger messages."""
        self._check(k)
        self._upto(k)
        return CalibratedEstimator(self, k, base)


def calibrate(
    transcript: Transcript, estimator: Estimator, mode: Mode = "delta", serialized: Sequence[str] | None = None
) -> Calibration:
    """Calibrate every request of `transcript` against its reported usage (see the module docstring;
    `serialized`: as `Calibration`'s)."""
    return Calibration(transcript, estimator, mode, serialized)
