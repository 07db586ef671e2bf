"""A persistent cache of what the token passes computed for a transcript (issue 29).

A warm open (the transcript read from `inspector.formats.cache`) still ran every pass over it
again: on the 104 MB chained benchmark session the delta calibration (`Calibration._upto`, 0.67 s
of CPU) and the harness estimates (`tokens.harness`, 0.07 s) were most of a warm `report --json`.
What they decided is kept here, beside the transcripts, in
`$XDG_CACHE_HOME/context-inspector/derived/` (never next to a transcript), as msgpack (msgspec,
never pickle), one entry per transcript:

- the delta calibration of each estimator, as far as its pass ran: the log of the weights it set
  ((message, request, weight), filed into `Calibration`'s versions when first read, as the pass's
  own log is), each request's prediction, context and cost model (the distinct models once), and
  whether the session strips reasoning. That is what every query reads (`weights`, `weight_of`,
  `ledger_total`, `predicted`, `model_at`, ...); the sizes of messages are made again when asked
  for (from the same code, the same numbers). The pass's own state is not kept (its cost model's
  matrix, its pending messages): a restored calibration asked beyond where the entry's pass
  stopped runs the pass again up to there and goes on (`Calibration._upto`); to spare that, an
  entry's pass is run to the end before it is written where what is left is no more than what ran;
- the harness estimates of each estimator (`tokens.harness`): its rows and segment ends.

The entry's key is the transcript entry's (`cache.key_of`: the file, what is read beside it, the
readers' code) with the source of this package's token code (`CODE`); inside it, each result is
named by what else it depends on (the calibration mode and the estimator, a tiktoken estimator's
encoding and the tiktoken version). A transcript read with `--no-cache`, or not through the cache
(a library caller, a followed live session), has no key: nothing is read or written for it.

Entries are written when the command has printed (the command line calls `write_pending` after
the command, the app's open after the app closed), so a cold run shows its output first, and only
where this process computed more than its entry held. The folder is bounded by its share of the
cache's budget (`cache.DERIVED_LIMIT`), the entries used longest ago removed first.

The same state carries a pass run ahead (`run_ahead`): the app's first open and `calibrate` fork
a process that runs the calibration's pass on another core while they go on, and take what it
decided (not where the entry holds it already).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, NoReturn

import msgspec

from inspector.formats import cache
from inspector.model import Transcript
from inspector.model.identity import ByIdentity
from inspector.settings import cache_folder

from .base import Estimator
from .calibration import Calibration
from .calibration.cost_model import Coefficients
from .calibration.weights import _Versions
from .harness import HarnessEstimate
from .heuristic import HeuristicEstimator

__all__ = [
    "CODE",
    "MAGIC",
    "cache_dir",
    "calibration",
    "harness_pass",
    "run_ahead",
    "stop_ahead",
    "write_pending",
]

MAGIC = b"ctxi-derived-1\n"
"""Names the entries' format (bumped when `_Entry` changes)."""
CODE = ("tokens", "harness_rules.py", "harnesses.py")
"""The package's code the kept results depend on, beyond the transcript's (its readers and model
are in the transcript entry's key)."""

_Row = tuple[int, str, int, str, int | None, int | None, int | None, int | None, bool, int, int | None]
"""`tokens.harness`'s row of a `HarnessEstimate`'s fields, as a type msgspec decodes."""


class _Calibrated(msgspec.Struct, array_like=True, frozen=True):
    """One delta calibration as far as its pass ran (see the module docstring)."""

    done: int
    strip_thinking: bool
    log: list[tuple[str, int, int]]
    """(message id, request, weight) of every weight the pass set, in order (`Calibration._log`)."""
    predicted: list[int | None]
    context: list[int]
    model: list[int]
    """Per request: its cost model's index in `models` (-1: none)."""
    models: list[tuple[dict[str, float], float]]
    """The distinct cost models: (coefficients, ratio)."""


class _Harness(msgspec.Struct, array_like=True, frozen=True):
    rows: list[_Row]
    ends: list[_Row]


class _Entry(msgspec.Struct, frozen=True):
    calibrations: dict[str, _Calibrated] = {}
    harness: dict[str, _Harness] = {}


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(_Entry)
_STATE_DECODER = msgspec.msgpack.Decoder(_Calibrated)


def cache_dir() -> Path:
    """`cache_folder()/derived`: beside the transcripts' folder, never next to a transcript."""
    return cache_folder() / "derived"


def _estimator_key(estimator: Estimator) -> str | None:
    """What names an estimator's sizes: None where they may depend on more than this package's
    code (an estimator of a library caller's), then nothing is kept."""
    if type(estimator) is HeuristicEstimator:
        return estimator.name
    from .tiktoken_estimator import TiktokenEstimator

    if type(estimator) is TiktokenEstimator:
        from importlib.metadata import PackageNotFoundError, version

        try:
            lib = version("tiktoken")
        except PackageNotFoundError:
            lib = "-"
        return f"{estimator.name}:{estimator.encoding_name}:{lib}"
    return None


class _Held:
    """One transcript's entry in this process: what it held, and the calibrations made since."""

    def __init__(self, key: str, folder: Path, entry: _Entry | None) -> None:
        self.key = key
        self.folder = folder
        """Where the entry was read from, and is written to."""
        self.calibrations: dict[str, _Calibrated] = dict(entry.calibrations) if entry else {}
        self.harness: dict[str, _Harness] = dict(entry.harness) if entry else {}
        self.live: dict[str, Calibration] = {}
        """The calibrations handed out, by name: their state is taken when the entry is written."""
        self.changed = False


_HELD: ByIdentity[Transcript, _Held | None] = ByIdentity()
"""Transcript -> its entry (None: not kept, no key)."""
_LOCK = threading.RLock()


def _held(transcript: Transcript) -> _Held | None:
    """The transcript's entry (read at the first question), None where it has no key."""
    with _LOCK:
        if transcript in _HELD:
            return _HELD.get(transcript)
        k = cache.key_of(transcript)
        held: _Held | None = None
        if k is not None:
            where, rest = k.split("-", 1)
            key = f"{where}-{cache.digest(rest + chr(10) + cache.source_key(CODE))}"
            folder = cache_dir()
            held = _Held(key, folder, cache.read_entry(key, folder, MAGIC, _DECODER.decode))
        _HELD.set(transcript, held)
        return held


def calibration(
    transcript: Transcript, estimator: Estimator, mode: str = "delta", serialized: Any = None
) -> Calibration:
    """`Calibration(transcript, estimator, mode, serialized)`, restored from the transcript's entry
    where it holds one (a delta calibration of the same estimator), and kept for the next open."""
    held = _held(transcript) if mode == "delta" else None
    name = _estimator_key(estimator) if held is not None else None
    if held is None or name is None:
        fresh = Calibration(transcript, estimator, mode, serialized)  # type: ignore[arg-type]
        return _ahead_for(fresh) if mode == "delta" else fresh
    name = _entry_name(mode, name)
    with _LOCK:
        got = held.live.get(name)
        if got is not None and got.estimator is estimator:
            return got
        state = held.calibrations.get(name)
        cal = _restored(transcript, estimator, state) if state is not None else None
        if cal is None:
            cal = _ahead_for(Calibration(transcript, estimator, "delta", serialized))
        held.live[name] = cal
        return cal


def _entry_name(mode: str, estimator_key: str) -> str:
    """The name an entry files a calibration of `mode` under, sized by the estimator of that key."""
    return f"{mode}:{estimator_key}"


def _restored(transcript: Transcript, estimator: Estimator, state: _Calibrated) -> Calibration | None:
    """The calibration `state` holds (None where it does not fit the transcript)."""
    cal = Calibration(transcript, estimator, "delta")
    return cal if _adopt(cal, state) else None


def _adopt(cal: Calibration, state: _Calibrated) -> bool:
    """Give `cal`, a delta calibration whose pass has not run, what `state` holds (False, and
    `cal` left as it was, where `state` does not fit its transcript)."""
    steps = cal._steps
    if len(state.context) != len(steps) or not 0 <= state.done <= len(steps):
        return False
    cal._log = list(state.log)  # filed (and emptied) when first read, as the pass's own log is: a
    # copy, so that the entry this process writes again still holds it
    models = [Coefficients(coef, ratio) for coef, ratio in state.models]
    for step, predicted, context, model in zip(
        steps, state.predicted, state.context, state.model, strict=True
    ):
        step.predicted = predicted
        step.context = context
        step.model = models[model] if model >= 0 else None
    cal._strip_thinking = state.strip_thinking
    cal._done = state.done
    return True


# -- the pass run ahead, in another process ---------------------------------------------------------


class _Ahead:
    """A forked process running a delta calibration's whole pass (`run_ahead`), and the pipe it
    writes what the pass decided to (a `_Calibrated`, as an entry holds it)."""

    def __init__(self, pid: int, fd: int, name: str) -> None:
        self.pid = pid
        self.fd = fd
        self.name = name
        """The key (`_estimator_key`) of the estimator its pass sizes with."""
        self.handed = False
        """Given to a calibration (`_ahead_for`): no other gets it."""
        self._lock = threading.Lock()

    def adopt(self, cal: Calibration) -> bool:
        """Wait for the process and give `cal` what its pass decided (False where it failed)."""
        state = self._take()
        return state is not None and _adopt(cal, state)

    def _take(self) -> _Calibrated | None:
        with self._lock:
            if self.fd < 0:
                return None
            chunks: list[bytes] = []
            try:
                while chunk := os.read(self.fd, 1 << 20):
                    chunks.append(chunk)
            except OSError:
                chunks = []
            if not self._close(kill=False):
                return None
        try:
            return _STATE_DECODER.decode(b"".join(chunks)) if chunks else None
        except msgspec.DecodeError:  # (a ValidationError is one)
            return None

    def _close(self, kill: bool) -> bool:
        """Close the pipe and reap the process, killed first where `kill`: whether it ended well
        (holding the lock)."""
        fd, self.fd = self.fd, -1
        if fd < 0:
            return False
        os.close(fd)
        if kill:
            with suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
        try:
            _, status = os.waitpid(self.pid, 0)
        except OSError:
            return False
        return os.waitstatus_to_exitcode(status) == 0

    def cancel(self) -> None:
        with self._lock:
            self._close(kill=True)


_AHEAD: ByIdentity[Transcript, _Ahead] = ByIdentity()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def run_ahead(transcript: Transcript, estimator: Estimator) -> bool:
    """Start the delta calibration's whole pass over `transcript`, sized by `estimator`, in a
    forked process, on a core of its own, while this one goes on (the app: importing Textual,
    opening its replay, drawing its first frame). The calibration `calibration` then hands out
    for that transcript and estimator takes what the process's pass decided, once, where its
    own pass would first run (`Calibration.ahead`), waiting for it if need be; where the process
    fails it runs its own, as without it. Each decides the same: one code, the same transcript.

    On the 104 MB chained benchmark session the pass is 0.26-0.49 s of CPU, and taking its
    result 0.05 s (decoding about 1 MB and filing its weights). Nothing is started (False) for
    a session that reported no usage (nothing to calibrate on), where the transcript's entry of
    the persistent cache holds the pass (`calibration` restores it), without `os.fork`, with one core,
    where the estimator's sizes may depend on more than this package's code, or where this
    process runs another thread (a fork copies only the thread that calls it: a lock another
    held would stay locked in the child)."""
    name = _estimator_key(estimator)
    if (
        name is None
        or all(r.usage is None for r in transcript.requests)
        or not hasattr(os, "fork")
        or threading.active_count() > 1
        or _cores() < 2
    ):
        return False
    held = _held(transcript)
    if held is not None and _entry_name("delta", name) in held.calibrations:
        return False  # the transcript's entry holds it: restored where asked, never run
    read, write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return False
    if pid == 0:
        os.close(read)
        _ahead_child(transcript, estimator, write)
    os.close(write)
    old = _AHEAD.get(transcript)
    if old is not None:
        old.cancel()
    _AHEAD.set(transcript, _Ahead(pid, read, name))
    return True


def _ahead_child(transcript: Transcript, estimator: Estimator, fd: int) -> NoReturn:
    """The forked process: the pass, what it decided written to `fd`, and out at once (not a
    word on the terminal, nothing of the parent's flushed or cleaned up; any failure is only an
    exit code, and the parent runs the pass itself)."""
    code = 1
    try:
        cal = Calibration(transcript, estimator, "delta")
        cal._upto(len(cal._steps))
        view = memoryview(_ENCODER.encode(_state_of(cal)))
        while view:
            view = view[os.write(fd, view) :]
        code = 0
    finally:
        os._exit(code)


def _ahead_for(cal: Calibration) -> Calibration:
    """`cal`, given the pass run ahead for its transcript and estimator, if one runs (once)."""
    ahead = _AHEAD.get(cal.transcript)
    if ahead is not None and not ahead.handed and ahead.name == _estimator_key(cal.estimator):
        ahead.handed = True
        cal.ahead = ahead.adopt
    return cal


def stop_ahead() -> None:
    """End every process `run_ahead` started that is still running (the command has printed, or
    the app has closed: what nothing took is not needed)."""
    for ahead in _AHEAD.pop_all():
        ahead.cancel()


def _set_at(ver: _Versions, k: int) -> int:
    """The weight `ver` was set to at request k (one of its `at`)."""
    v = ver.get(k)
    assert v is not None
    return v


def _state_of(cal: Calibration) -> _Calibrated:
    """What `_restored` makes `cal` again from (its pass as far as it ran)."""
    with cal._lock:
        # the weights filed so far (from `_changes`, in the order they were set: `_file` of this
        # gives the same versions and changes), then the log not filed yet, as it is (a report
        # that only read cost models never filed it: filing it here cost more than the rest)
        versions, changes = cal._versions, cal._changes
        log = [(mid, k, _set_at(versions[mid], k)) for k in sorted(changes) for mid in changes[k]]
        log += cal._log
        models: dict[int, int] = {}
        table: list[tuple[dict[str, float], float]] = []
        per_step: list[int] = []
        for step in cal._steps:
            m = step.model
            if m is None:
                per_step.append(-1)
                continue
            i = models.get(id(m))
            if i is None:
                i = models[id(m)] = len(table)
                table.append((m._coef, m._ratio))
            per_step.append(i)
        return _Calibrated(
            done=cal._done,
            strip_thinking=cal._strip_thinking,
            log=log,
            predicted=[s.predicted for s in cal._steps],
            context=[s.context for s in cal._steps],
            model=per_step,
            models=table,
        )


def harness_pass(
    transcript: Transcript, name: str, run: Callable[[], tuple[list[_Row], tuple[HarnessEstimate, ...]]]
) -> tuple[list[_Row], tuple[HarnessEstimate, ...]]:
    """`run()`, the harness pass of estimator `name` over `transcript` (its rows and segment ends),
    or what the transcript's entry kept of it; kept for the next open."""
    held = _held(transcript)
    if held is not None:
        with _LOCK:
            got = held.harness.get(name)
        if got is not None and len(got.rows) == len(transcript.requests):
            return got.rows, tuple([HarnessEstimate(*e) for e in got.ends])
    rows, ends = run()
    if held is not None:
        kept = _Harness(rows=rows, ends=[msgspec.structs.astuple(e) for e in ends])
        with _LOCK:
            held.harness[name] = kept
            held.changed = True
    return rows, ends


def write_pending() -> None:
    """Write the entries of the transcripts whose passes this process took further than their
    entries held (after a command printed, or the app closed), and forget them: the command is
    over (a later one, in a process that runs several, reads its entries afresh). Never raises
    for a cache that cannot be written: it is only ever a shortcut."""
    with _LOCK:
        helds = [h for h in _HELD.pop_all() if h is not None]
    for held in helds:
        with _LOCK:
            for name, cal in held.live.items():
                old = held.calibrations.get(name)
                n = len(cal._steps)
                if cal._done < n and cal._done >= n - cal._done:
                    cal.predictions()  # the rest of the pass costs no more than what ran: to the end
                if cal._done and (old is None or cal._done > old.done):
                    held.calibrations[name] = _state_of(cal)
                    held.changed = True
            if not held.changed:
                continue
            entry = _Entry(calibrations=dict(held.calibrations), harness=dict(held.harness))
            held.changed = False
        try:
            data = MAGIC + _ENCODER.encode(entry)
        except (UnicodeEncodeError, msgspec.EncodeError, OverflowError, TypeError):
            continue
        cache.write_entry(held.key, data, held.folder, cache.DERIVED_LIMIT)
