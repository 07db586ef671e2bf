"""Facts: what the checks need to know about a replayed transcript, gathered once.

Checks never shape anything themselves. `Facts` indexes the transcript once (positions, the
request that made each response, tool calls and their results, which request first sent each
message, open calls and orphan results in each ledger) and, the first time a check asks for
`facts.shaped`, walks the replay once, request by request, calling `Replay.step(k)` at most once
per request (or learning from `Replay.quiet(k)` that no layer fires there, without shaping it)
and keeping only the few numbers the checks need. So a 2,000-request session is shaped at most
2,000 times in all, whatever checks run, and checks that need no shaping (stop reasons, loops,
pressure, recorded overflows) cost no shaping at all.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from inspector.model import Message, Request, Role, ToolCallBlock, ToolResultBlock, Transcript
from inspector.replay import Replay
from inspector.shaping import Action, LayerResult, ShapeResult, unpaired
from inspector.shaping.eager_clear import call_target
from inspector.shaping.summarize import call_arguments
from inspector.shaping.tools import canonical_tool

from .base import Settings, quote

PATH_KEYS = ("file_path", "path", "filename")
"""Arguments that name the file a call reads (the issue's three)."""
COMMAND_KEYS = ("command", "cmd")
WRITE_TOOLS = frozenset({"edit", "write"})
"""Canonical tools that change a file: a read after one is a fresh read, not a re-read."""
SHELL_TOOLS = frozenset({"bash"})
LEAVES = frozenset({Action.REMOVED, Action.SUMMARIZED})
CHANGES = frozenset(a for a in Action if a.changed)
"""Decisions that take a message out of the view (a summary's own decision aside)."""


class Call(msgspec.Struct, frozen=True):
    """One tool call of the transcript, with where it sits and what answered it."""

    order: int
    """Its place among all calls of the transcript (0-based)."""
    block: ToolCallBlock
    message_id: str
    position: int
    """Index of its message in `Transcript.messages`."""
    request: int | None
    """The request whose response made the call (None: its message is not a response)."""
    result_id: str | None = None
    """The message holding its result (the first one), or None when nothing answered it."""
    result: ToolResultBlock | None = None
    result_position: int | None = None


class ReadAgain(msgspec.Struct, frozen=True):
    """A call that reads what an earlier call read (same file, same command, or same call)."""

    earlier: Call
    later: Call
    target: str
    """What was read, for sentences: a path, a quoted command, or a tool and its target."""


class Change(msgspec.Struct, frozen=True):
    """What the pipeline had done to a message in the view sent at a request, and since when."""

    layer: str
    label: str
    action: Action
    since: int
    """The first request of the unbroken run of requests where this layer did this to it."""


class Cut(msgspec.Struct, frozen=True):
    """A simulated compaction: a layer removed or folded messages the request before had kept."""

    request: int
    layer: str
    label: str
    messages: int
    """How many messages were newly removed or folded."""
    summaries: int = 0
    """New summaries written (each one a summarizer call in a real harness)."""


class CompactorMiss(msgspec.Struct, frozen=True):
    """A request where the policy's compaction layer ran above the trigger and stayed above it."""

    request: int
    layer: str
    label: str
    before: int
    after: int


class ViewOrphans(msgspec.Struct, frozen=True):
    """Calls without results and results without calls that shaping created in a sent view."""

    request: int
    calls: tuple[str, ...]
    results: tuple[str, ...]
    layer: str
    label: str


class Shaped(msgspec.Struct):
    """What one pass over every shaped request left for the checks."""

    changes: dict[tuple[int, str], Change] = msgspec.field(default_factory=dict)
    """(request, message id) -> its change in the view sent at that request, for watched messages."""
    weights: dict[tuple[int, str], int] = msgspec.field(default_factory=dict)
    """(request, message id) -> calibrated weight, for watched messages."""
    cuts: list[Cut] = msgspec.field(default_factory=list)
    misses: list[CompactorMiss] = msgspec.field(default_factory=list)
    view_orphans: list[ViewOrphans] = msgspec.field(default_factory=list)
    steps: int = 0
    """How many requests were gone through (each once)."""
    quiet: int = 0
    """How many of them no layer fired at, known without shaping them (`Replay.quiet`)."""


class LedgerOrphan(msgspec.Struct, frozen=True):
    """A call still open, or a result with no call, in the ledger a request was made with."""

    request: int
    call_id: str
    message_id: str
    is_call: bool


def _path(args: dict[str, Any]) -> str | None:
    for key in PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _command(args: dict[str, Any]) -> str | None:
    for key in COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, list) and value:
            value = " ".join(str(v) for v in value)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
    return None


_sorted_json = msgspec.json.Encoder(order="sorted").encode
"""Compact JSON, the keys of every dict sorted, in C: a twelfth of `json.dumps`' time."""


def canonical_args(call: ToolCallBlock) -> str:
    """A call's arguments as canonical JSON (keys sorted), so equal calls compare equal.

    A key only (the checks compare them, never show them): msgspec's compact text where it writes
    one that only equal arguments share, else `json.dumps`' spaced one (a text both could have
    written is valid JSON, so the two arguments read back from it alike). Not msgspec's where it
    holds a null (it writes NaN as null too) or where it refuses (a lone surrogate)."""
    args: dict[str, Any] | str = call.arguments
    if isinstance(args, str):
        parsed = call_arguments(args)
        if not parsed and args.strip() not in ("", "{}"):
            return args.strip()
        args = parsed
    if type(args) is dict:
        try:
            fast = _sorted_json(args)
        except (TypeError, ValueError):  # (UnicodeEncodeError is a ValueError)
            pass
        else:
            if b"null" not in fast:
                return fast.decode()
    return json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def written_path(call: ToolCallBlock) -> str | None:
    """The file an edit or write call changes, or None for any other call."""
    if canonical_tool(call.name) not in WRITE_TOOLS:
        return None
    return _path(call_arguments(call.arguments))


def read_key(call: ToolCallBlock) -> tuple[tuple[str, str], str] | None:
    """(key, target) of a call that reads something, or None.

    A file read (`Read`, `file_read`, any non-writing tool whose name says "read") is keyed by
    its path, whatever range it asked for; a shell call by its command, whitespace squeezed;
    any other non-writing call that names a path (grep, glob, list...) by the whole call, so
    only an identical call counts as reading the same thing again.
    """
    canon = canonical_tool(call.name)
    if canon in WRITE_TOOLS:
        return None
    key = _read_key(call, canon)
    return (key, _read_target(call, key)) if key is not None else None


def _read_key(call: ToolCallBlock, canon: str) -> tuple[str, str] | None:
    """`read_key`'s key alone, of a call whose canonical tool (`canon`) does not write."""
    args = call_arguments(call.arguments)
    path = _path(args)
    if path is not None and (canon == "file_read" or "read" in canon):
        return ("file", path)
    if canon in SHELL_TOOLS:
        cmd = _command(args)
        return ("command", cmd) if cmd is not None else None
    if path is not None:
        return ("call", f"{canon} {canonical_args(call)}")
    return None


def _read_target(call: ToolCallBlock, key: tuple[str, str]) -> str:
    """`read_key`'s target, for sentences: the path, the quoted command, or the call in words."""
    kind, value = key
    if kind == "file":
        return value
    if kind == "command":
        return f"`{quote(value)}`"
    return call_label(call)


def call_label(call: ToolCallBlock) -> str:
    """ "Read src/app.py (whole file)", "Bash `pytest -q`", "Grep TODO in src": a call in a few words."""
    args = call_arguments(call.arguments)
    pattern, path = args.get("pattern"), _path(args)
    if isinstance(pattern, str) and pattern:
        return f"{call.name} {quote(pattern, 40)}" + (f" in {quote(path, 40)}" if path else "")
    target = call_target(call.name, call.arguments)
    if canonical_tool(call.name) in SHELL_TOOLS and target:
        return f"{call.name} `{quote(target)}`"
    return f"{call.name} {quote(target)}".strip()


class Facts:
    """A replayed transcript, indexed for the checks; `shaped` is computed on first use, once."""

    def __init__(self, replay: Replay, settings: Settings | None = None) -> None:
        self.replay = replay
        self.settings = settings or Settings()
        t: Transcript = replay.transcript
        self.transcript = t
        self.n = len(t.requests)
        self.budget = replay.budget
        self.policy = replay.policy.name
        self.position: dict[str, int] = {m.id: i for i, m in enumerate(t.messages)}
        self.response_request: dict[str, int] = {
            r.response_id: r.index for r in t.requests if r.response_id is not None
        }
        self._scan_blocks()
        self._index_ledgers()
        self._index_calls()
        self._index_partners()
        self.reads_again: list[ReadAgain] = self._reads_again()
        self._shaped: Shaped | None = None

    # -- transcript indexes (no shaping) -------------------------------------------------------
    def _scan_blocks(self) -> None:
        """The tool calls and results of every message, in one pass over the blocks (most
        messages hold neither): (position, message, its calls) of the assistant messages with
        calls, (position, message, its results) of the messages with results, in order."""
        self._calls_in: list[tuple[int, Message, tuple[ToolCallBlock, ...]]] = []
        self._results_in: list[tuple[int, Message, tuple[ToolResultBlock, ...]]] = []
        self._tooled: set[int] = set()
        """id() of the messages holding a call or a result (alive with the transcript)."""
        assistant = Role.ASSISTANT
        for i, m in enumerate(self.transcript.messages):
            calls, results = m.tool_calls, m.tool_results  # (one look at a single-block message)
            if not calls and not results:
                continue
            self._tooled.add(id(m))
            if calls and m.role is assistant:
                self._calls_in.append((i, m, calls))
            if results:
                self._results_in.append((i, m, results))

    def _index_ledgers(self) -> None:
        """Which request first sent each message; open calls and orphan results per ledger."""
        t = self.transcript
        by_id = self._by_id = {m.id: m for m in t.messages}
        self.first_holding: dict[str, int] = {}
        self.segment_position: list[dict[str, int]] = []
        self.ledger_orphans: list[LedgerOrphan] = []
        answered_anywhere = {b.call_id for _, _, found in self._results_in for b in found}
        tooled = self._tooled
        # the ids whose message (by id) holds a call or a result: the others need no look
        tooled_ids = {mid for mid, m in by_id.items() if id(m) in tooled}
        holding = self.first_holding.setdefault
        by_segment: dict[int, list[Request]] = defaultdict(list)
        for r in t.requests:  # one pass, not one per segment
            by_segment[r.segment].append(r)
        for seg in t.segments:
            ids = seg.message_ids
            self.segment_position.append({mid: i for i, mid in enumerate(ids)})
            reqs = sorted(by_segment.get(seg.index, ()), key=lambda r: r.index)
            open_calls: dict[str, str] = {}
            orphan_results: dict[str, str] = {}
            calls_seen: set[str] = set()
            results_seen: set[str] = set()
            fresh: list[tuple[str, str, bool]] = []
            pos = 0
            for r in reqs:
                end = min(r.ledger_len, len(ids))
                k = r.index
                for mid in ids[pos:end]:
                    holding(mid, k)
                    if mid not in tooled_ids:
                        continue  # (no call, no result: nothing to pair)
                    for b in by_id[mid].blocks:
                        if isinstance(b, ToolCallBlock):
                            if b.id in calls_seen:
                                continue
                            calls_seen.add(b.id)
                            if b.id in orphan_results:
                                del orphan_results[b.id]
                            elif b.id not in results_seen:
                                open_calls[b.id] = mid
                                fresh.append((b.id, mid, True))
                        elif isinstance(b, ToolResultBlock):
                            if b.call_id in results_seen:
                                continue
                            results_seen.add(b.call_id)
                            if b.call_id in open_calls:
                                del open_calls[b.call_id]
                            elif b.call_id not in calls_seen:
                                orphan_results[b.call_id] = mid
                                fresh.append((b.call_id, mid, False))
                pos = max(pos, end)
                for cid, mid, is_call in fresh:
                    still = open_calls.get(cid) if is_call else orphan_results.get(cid)
                    if still is None:
                        continue
                    # a call never answered anywhere is the unanswered-call check's to report
                    if is_call and cid not in answered_anywhere:
                        continue
                    self.ledger_orphans.append(LedgerOrphan(r.index, cid, mid, is_call))
                fresh.clear()

    def _index_calls(self) -> None:
        results: dict[str, tuple[str, ToolResultBlock, int]] = {}
        for i, m, found_here in self._results_in:
            for b in found_here:
                if b.call_id not in results:
                    results[b.call_id] = (m.id, b, i)
        self.result_message: dict[str, str] = {cid: found[0] for cid, found in results.items()}
        self.call_message: dict[str, str] = {}
        self.calls: list[Call] = []
        first_call = self.call_message.setdefault
        add = self.calls.append
        response_request = self.response_request.get
        for i, m, calls in self._calls_in:
            mid = m.id
            request = response_request(mid)
            for c in calls:
                first_call(c.id, mid)
                found = results.get(c.id)
                # (order, block, message_id, position, request, result_id, result, result_position)
                if found is None:
                    add(Call(len(self.calls), c, mid, i, request))
                else:
                    add(Call(len(self.calls), c, mid, i, request, found[0], found[1], found[2]))

    def _index_partners(self) -> None:
        """Message id -> the messages holding the other side of each of its calls and results."""
        partners: dict[str, set[str]] = defaultdict(set)
        for c in self.calls:
            if c.result_id is not None:
                partners[c.message_id].add(c.result_id)
        for _, m, results in self._results_in:
            for b in results:
                call_mid = self.call_message.get(b.call_id)
                if call_mid is not None:
                    partners[m.id].add(call_mid)
                else:
                    partners[m.id].add("")  # no call anywhere: never "all gone"
        # the sets themselves, read only from here on (a frozenset copy of each cost more than building them)
        self.partners: dict[str, set[str]] = dict(partners)

    def _reads_again(self) -> list[ReadAgain]:
        """Every read of something an earlier call already read, with no write in between.

        A read whose result is an error read nothing, so the next one is a retry, not a re-read.
        A write (edit or write tool) to a file makes the next read of that file a fresh one;
        any write makes the next identical command or search a fresh one too, since its output
        may depend on what was written (`mix test` after an edit is not a re-read).
        """
        last: dict[tuple[str, str], Call] = {}
        out: list[ReadAgain] = []
        for call in self.calls:
            block = call.block
            canon = canonical_tool(block.name)
            if canon in WRITE_TOOLS:
                # a write makes the next read of that file fresh, and any command's or search's
                # output may have changed with it
                if last:
                    wrote = _path(call_arguments(block.arguments))
                    last = {k: v for k, v in last.items() if k[0] == "file" and k[1] != wrote}
                continue
            key = _read_key(block, canon)
            if key is None:
                continue
            if call.result is not None and call.result.is_error:
                last.pop(key, None)  # a failed read read nothing: the next one is a retry
                continue
            prev = last.get(key)
            if (
                prev is not None
                and prev.result_position is not None
                and prev.result_position < call.position
                and call.request is not None
            ):
                out.append(ReadAgain(earlier=prev, later=call, target=_read_target(block, key)))
            last[key] = call
        return out

    # -- small queries ---------------------------------------------------------------------------
    def message(self, message_id: str) -> Message:
        return self.transcript.message(message_id)

    def in_ledger(self, message_id: str, k: int) -> bool:
        """Whether the ledger request `k` was made with held this message."""
        req = self.transcript.request(k)
        pos = self.segment_position[req.segment].get(message_id)
        return pos is not None and pos < req.ledger_len

    def reported(self, k: int) -> int | None:
        """The provider's own report of request k's whole input (None when absent or zero)."""
        usage = self.transcript.request(k).usage
        return usage.context if usage is not None and usage.context > 0 else None

    def request_of(self, message_id: str) -> int:
        """The request a message belongs to: the one it answers, else the first that sent it.

        A message no request ever sent (after the last one) belongs to the last request; 0 when
        the transcript has no requests.
        """
        k = self.response_request.get(message_id) or self.first_holding.get(message_id)
        return k if k is not None else self.n

    def requests_before(self, position: int) -> int:
        """How many requests had been answered before the message at `position` was written."""
        count = 0
        for r in self.transcript.requests:
            p = self.position.get(r.response_id) if r.response_id else None
            if p is not None and p < position:
                count = r.index
        return count

    # -- the one shaping pass --------------------------------------------------------------------
    @property
    def shaped(self) -> Shaped:
        if self._shaped is None:
            self._shaped = self._shape_once()
        return self._shaped

    def _watch_lists(self) -> tuple[dict[int, set[str]], dict[int, set[str]]]:
        state: dict[int, set[str]] = {}
        weight: dict[int, set[str]] = {}
        for again in self.reads_again:
            earlier, later = again.earlier, again.later
            assert earlier.result_id is not None and later.request is not None
            state.setdefault(later.request, set()).add(earlier.result_id)
            if later.result_id is not None:
                k = self.first_holding.get(later.result_id)
                if k is not None:
                    weight.setdefault(k, set()).add(later.result_id)
        return state, weight

    def _shape_once(self) -> Shaped:
        out = Shaped()
        replay = self.replay
        watch_state, watch_weight = self._watch_lists()
        watched: set[str] = set().union(*watch_state.values()) if watch_state else set()
        # layers that summarize (auto compact, a harness's full compaction), when one is configured
        compactors = {
            layer.name for layer in replay.pipeline.layers if getattr(layer, "summarizer", None) is not None
        }
        trigger = self.budget.trigger
        known = self.position
        streak: dict[str, Change] = {}
        prev_cut: dict[str, frozenset[str]] = {}
        prev_written: dict[str, frozenset[str]] = {}
        if self.n:
            # every request is shaped, each with its calibrated weights: the calibration pass is
            # run to the end at once, not one request at a time as each step would ask for it
            replay.calibration.predictions()
        calibration = replay.calibration
        for k in range(1, self.n + 1):
            out.steps += 1
            total = replay.quiet(k)
            if total is not None:
                # no layer fires: nothing changed, cut or orphaned, and every layer's estimate
                # before and after is the ledger's
                out.quiet += 1
                streak, prev_cut, prev_written = {}, {}, {}
                for mid in watch_weight.get(k, ()):
                    w = calibration.weight_at(k, mid)
                    if w is not None:
                        out.weights[(k, mid)] = w
                if compactors and total > trigger:
                    for quiet_layer in replay.pipeline.layers:
                        if quiet_layer.name in compactors:
                            out.misses.append(
                                CompactorMiss(k, quiet_layer.name, quiet_layer.label, total, total)
                            )
                continue
            step = replay.step(k)
            result = step.result
            latest: dict[str, tuple[str, str, Action]] = {}
            changes = _Changes()
            cut_now: dict[str, frozenset[str]] = {}
            written_now: dict[str, frozenset[str]] = {}
            # one walk over every decision of every layer that fired
            for layer in result.layers:
                if not layer.fired:
                    continue
                gone: set[str] = set()
                written: set[str] = set()
                for d in layer.decisions:
                    action = d.action
                    if action not in CHANGES:
                        continue
                    mid = d.message_id
                    if mid in watched:
                        latest[mid] = (layer.name, layer.label, action)
                    if action is Action.SUMMARIZED and mid not in known:
                        written.add(mid)
                    elif action in LEAVES:
                        gone.add(mid)
                    else:
                        changes.modified.add(mid)
                changes.gone |= gone
                changes.written |= written
                if not gone:
                    continue
                # a simulated compaction: this layer removed or folded what the request before kept
                cut, wrote = frozenset(gone), frozenset(written)
                cut_now[layer.name], written_now[layer.name] = cut, wrote
                new = cut - prev_cut.get(layer.name, frozenset())
                new_written = wrote - prev_written.get(layer.name, frozenset())
                if new or new_written:
                    out.cuts.append(Cut(k, layer.name, layer.label, len(new), len(new_written)))
            prev_cut, prev_written = cut_now, written_now
            # what was done to watched messages (the earlier reads of later re-reads), and since when
            if watched:
                now: dict[str, Change] = {}
                for mid, (name, label, action) in latest.items():
                    old = streak.get(mid)
                    same = old is not None and old.layer == name and old.action is action
                    now[mid] = Change(name, label, action, old.since if old is not None and same else k)
                streak = now
                for mid in watch_state.get(k, ()):
                    change = streak.get(mid)
                    if change is not None:
                        out.changes[(k, mid)] = change
            for mid in watch_weight.get(k, ()):
                w = step.weight(mid)
                if w is not None:
                    out.weights[(k, mid)] = w
            # a compaction layer ran above the trigger and could not get under it
            if compactors:
                for layer in result.layers:
                    if layer.name in compactors and min(layer.tokens_before, layer.tokens_after) > trigger:
                        out.misses.append(
                            CompactorMiss(k, layer.name, layer.label, layer.tokens_before, layer.tokens_after)
                        )
            # orphans that shaping created (the ledger's own are counted from the transcript)
            if any(layer.fired for layer in result.layers):
                calls, results = self._new_orphans(k, result, changes)
                if calls or results:
                    name, label = _first_orphaning(result.layers, set(calls) | set(results))
                    out.view_orphans.append(ViewOrphans(k, calls, results, name, label))
        return out

    def _new_orphans(
        self, k: int, result: ShapeResult, changes: _Changes
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Call ids left without their result, and result ids without their call, by shaping at k.

        Only a message a layer changed can break a pair, and every layer records a decision for
        each message it changes (removed or folded into a summary when it leaves the view). So
        only the messages that left the view, or whose blocks changed in number, are looked at,
        and one whose every partner (the other side of each of its calls and results) lost its
        tool blocks with it is cleared by one set comparison. Should the view's length not add up with the
        decisions (a layer that changed something silently), `unpaired` checks the whole view.
        """
        gone = changes.gone
        modified = changes.modified - gone
        written = changes.written - gone
        if len(result.final) != len(result.input) - len(gone) + len(written):
            found = unpaired(result.final)
            own = unpaired(result.input)
            old_calls, old_results = set(own.calls), set(own.results)
            return (
                tuple(c for c in found.calls if c not in old_calls),
                tuple(r for r in found.results if r not in old_results),
            )
        by_id = self._by_id
        partners = self.partners
        reshaped: dict[str, Message] = {}
        if modified:
            for m in result.final:
                if m.id in modified:
                    orig = by_id.get(m.id)
                    if orig is not None and len(orig.blocks) != len(m.blocks) and m.id in partners:
                        reshaped[m.id] = m
        # messages whose tool blocks all left the view (gone, or stripped of their calls)
        emptied = gone | {mid for mid, v in reshaped.items() if not (v.tool_calls or v.tool_results)}
        suspects: list[Message] = []
        for mid in emptied:
            p = partners.get(mid)
            if p is not None and not p <= emptied:
                suspects.append(by_id[mid])
        suspects.extend(by_id[mid] for mid in reshaped if mid not in emptied)
        if not suspects:
            return (), ()
        req = self.transcript.request(k)
        where = self.segment_position[req.segment]
        held = req.ledger_len

        def in_ledger(mid: str) -> bool:
            pos = where.get(mid)
            return pos is not None and pos < held

        def present(mid: str, call_id: str, is_call: bool) -> bool:
            if mid in gone:
                return False
            version = reshaped.get(mid)
            if version is None:
                return True
            if is_call:
                return any(c.id == call_id for c in version.tool_calls)
            return any(b.call_id == call_id for b in version.tool_results)

        calls: list[str] = []
        results: list[str] = []
        for m in suspects:
            pairs: list[tuple[str, str | None, str | None]] = [
                (c.id, m.id, self.result_message.get(c.id)) for c in m.tool_calls
            ]
            pairs += [(b.call_id, self.call_message.get(b.call_id), m.id) for b in m.tool_results]
            for call_id, call_mid, result_mid in pairs:
                if call_mid is None or result_mid is None:
                    continue
                if not (in_ledger(call_mid) and in_ledger(result_mid)):
                    continue  # not a pair in the ledger either: the ledger's own orphan
                has_call = present(call_mid, call_id, True)
                has_result = present(result_mid, call_id, False)
                if has_call and not has_result and call_id not in calls:
                    calls.append(call_id)
                elif has_result and not has_call and call_id not in results:
                    results.append(call_id)
        return tuple(calls), tuple(results)


class _Changes(msgspec.Struct):
    """The messages a request's layers changed: left the view, changed in place, written new."""

    gone: set[str] = msgspec.field(default_factory=set)
    modified: set[str] = msgspec.field(default_factory=set)
    written: set[str] = msgspec.field(default_factory=set)


def _first_orphaning(layers: Sequence[LayerResult], ids: Iterable[str]) -> tuple[str, str]:
    """The first layer whose output view holds one of these orphans."""
    wanted = set(ids)
    for layer in layers:
        if not layer.fired:
            continue
        found = unpaired(layer.view)
        if wanted & (set(found.calls) | set(found.results)):
            return layer.name, layer.label
    return "pipeline", "the pipeline"
