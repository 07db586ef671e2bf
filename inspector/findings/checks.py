"""The checks: each a small function over `Facts` that returns findings, and the registry of them."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence

from msgspec import Struct

from inspector.model import (
    SEGMENT_EVENTS,
    EventKind,
    Message,
    RecordedEvent,
    Role,
    TextBlock,
    ToolResultBlock,
    Transcript,
)
from inspector.replay.distance import distances, gap_text, percent
from inspector.shaping.tools import canonical_tool

from .base import Finding, Severity, quote, requests_text, span_text, times, unique
from .facts import WRITE_TOOLS, Call, Facts, call_label, canonical_args

CheckFn = Callable[[Facts], list[Finding]]


class Check(Struct, frozen=True):
    """A registered check: its name, its function, the finding kinds it can return.

    `shapes`: whether it needs the shaped views (the one pass over `Replay.step`).
    """

    name: str
    run: CheckFn
    kinds: tuple[str, ...]
    shapes: bool

    @property
    def description(self) -> str:
        """The first line of the check's docstring."""
        doc = (self.run.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else self.name


CHECKS: dict[str, Check] = {}
"""Check name -> check, in the order `find_all` runs them."""


def register(name: str, kinds: tuple[str, ...], *, shapes: bool) -> Callable[[CheckFn], CheckFn]:
    """Add a check to `CHECKS` under `name` (a later registration with the same name replaces it)."""

    def add(fn: CheckFn) -> CheckFn:
        CHECKS[name] = Check(name=name, run=fn, kinds=kinds, shapes=shapes)
        return fn

    return add


def _clusters(requests: Sequence[int], span: int) -> list[list[int]]:
    """Sorted requests split where two neighbours are more than `span` apart."""
    out: list[list[int]] = []
    for r in sorted(requests):
        if out and r - out[-1][-1] <= span:
            out[-1].append(r)
        else:
            out.append([r])
    return out


# -- re-read after clearing ------------------------------------------------------------------------


def _result_share(message: Message, block: ToolResultBlock | None, weight: int) -> int:
    """The part of a message's weight that is this result's (by length, when it holds several)."""
    results = message.tool_results
    if block is None or len(results) <= 1:
        return weight
    total = sum(len(b.content) for b in results) or 1
    return round(weight * len(block.content) / total)


def _reread_cause(facts: Facts, earlier: Call, at: int) -> tuple[str, str, str] | None:
    """(layer, what it did, whose doing) for an earlier result the view at request `at` lacked."""
    assert earlier.result_id is not None
    t = facts.transcript
    harness = t.format
    if not facts.in_ledger(earlier.result_id, at):
        before = [e for e in t.events if e.kind is EventKind.COMPACTION and e.after_request < at]
        if not before:
            return None
        e = before[-1]
        trigger = f"{e.trigger} " if e.trigger else ""
        return (
            "recorded:compaction",
            f"the harness's own {trigger}compaction before request {e.after_request + 1} dropped it",
            f"recorded by {harness}",
        )
    for e in t.events:
        if (
            e.kind is EventKind.MICROCOMPACT
            and e.after_request < at
            and earlier.block.id in e.cleared_tool_ids
        ):
            return (
                "recorded:microcompact",
                f"the harness's own microcompact after request {e.after_request} cleared it",
                f"recorded by {harness}",
            )
    if earlier.result is not None and "<persisted-output>" in earlier.result.content:
        return (
            "recorded:persisted_output",
            "the harness kept only a preview of it (persisted-output)",
            f"recorded by {harness}",
        )
    change = facts.shaped.changes.get((at, earlier.result_id))
    if change is None:
        return None
    return change.layer, f"{change.label} {change.action.value} it at request {change.since}", facts.policy


@register("reread", ("reread",), shapes=True)
def reread(facts: Facts) -> list[Finding]:
    """Re-reads after clearing: a file (or command) read again after its earlier result was cleared.

    A read of the same file (arguments `file_path`/`path`/`filename`), the same shell command or
    the same call, whose earlier result had been truncated, cleared, snipped or summarized in
    the view the model saw when it made the call (the request before the re-read's result was
    sent), with no write to that file in between. Why it matters: every re-read bills its
    result again (its calibrated weight, counted here) and usually breaks the prompt cache, so
    a layer that clears too eagerly costs more than it saves. The cost is attributed to the
    layer and policy that cleared it, or to the harness when the transcript records the
    clearing (a compaction, a microcompact, a persisted-output preview).
    """
    out: list[Finding] = []
    shaped = facts.shaped
    for again in facts.reads_again:
        earlier, later = again.earlier, again.later
        assert later.request is not None
        cause = _reread_cause(facts, earlier, later.request)
        if cause is None:
            continue
        layer, what, whose = cause
        k = facts.first_holding.get(later.result_id) if later.result_id is not None else None
        cost: int | None = None
        if k is not None and later.result_id is not None:
            w = shaped.weights.get((k, later.result_id))
            if w is not None:
                cost = _result_share(facts.message(later.result_id), later.result, w)
        at = k if k is not None else later.request
        tail = f"{cost:,} tokens re-billed" if cost is not None else "its result was never sent"
        ids = [earlier.result_id or earlier.message_id, later.message_id]
        if later.result_id is not None:
            ids.append(later.result_id)
        out.append(
            Finding(
                kind="reread",
                severity="warning",
                request=at,
                message_ids=unique(ids),
                explanation=f"re-read {again.target} at request {at} after {what} ({whose}): {tail}",
                layer=layer,
                tokens=cost,
            )
        )
    return out


# -- stop reason contradicts content ---------------------------------------------------------------

STOP_REASONS = frozenset({"stop", "end_turn"})
"""Finish reasons that say "the turn is over, no tool to run" (OpenAI, Anthropic)."""
TOOL_REASONS = frozenset({"tool_use", "tool_calls", "function_call"})
"""Finish reasons that say "run my tool calls"."""


def _calls_text(calls: Sequence[Call]) -> str:
    shown = ", ".join(call_label(c.block) for c in calls[:3])
    return shown + (f", and {len(calls) - 3} more" if len(calls) > 3 else "")


@register("stop_reason", ("stop_reason", "unanswered_call"), shapes=False)
def stop_reason(facts: Facts) -> list[Finding]:
    """Stop reasons that contradict the content, and turns that ended with calls never answered.

    A response whose finish reason is `stop`/`end_turn` but that makes tool calls (a harness
    that trusts the reason never runs them), or `tool_use`/`tool_calls` with no call (a harness
    waits for calls that never come); only a stop reason the transcript records is used (Claude
    Code 2.1.38-39 records none). And a response with calls that no later message answers: the
    turn ended without their results, which providers reject on the next request (a warning), or
    the transcript ends there, cut off or still running (info).
    """
    t = facts.transcript
    out: list[Finding] = []
    calls_of: dict[str, list[Call]] = defaultdict(list)
    for c in facts.calls:
        calls_of[c.message_id].append(c)
    requests = {r.response_id: r for r in t.requests if r.response_id is not None}
    last = len(t.messages) - 1
    for i, m in enumerate(t.messages):
        if m.role is not Role.ASSISTANT:
            continue
        req = requests.get(m.id)
        reason = m.stop_reason or (req.stop_reason if req is not None else None)
        word = reason.strip().lower() if reason else None
        calls = calls_of.get(m.id, [])
        open_calls = [c for c in calls if c.result_id is None]
        if (
            not open_calls
            and not (word in STOP_REASONS and calls)
            and not (word in TOOL_REASONS and not calls)
        ):
            continue  # (most responses: nothing to say, so nothing to word)
        k = facts.request_of(m.id)
        later = last - i
        where = f"the response to request {k}" if req is not None else f"assistant message at request {k}"
        ids = unique([m.id, *(c.message_id for c in open_calls)])
        if word in STOP_REASONS and calls:
            never = (
                f"; {len(open_calls)} of them never answered"
                if open_calls
                else "; the harness ran them anyway"
            )
            severity: Severity = "error" if open_calls and later > 0 else "warning"
            out.append(
                Finding(
                    kind="stop_reason",
                    severity=severity,
                    request=k,
                    message_ids=ids,
                    explanation=(
                        f"{where} has stop reason {reason} but makes {len(calls)} tool "
                        f"call{'s' if len(calls) != 1 else ''} ({_calls_text(calls)}){never}"
                    ),
                )
            )
            continue
        if word in TOOL_REASONS and not calls:
            out.append(
                Finding(
                    kind="stop_reason",
                    severity="warning",
                    request=k,
                    message_ids=(m.id,),
                    explanation=f"{where} has stop reason {reason} but makes no tool call",
                )
            )
            continue
        if not open_calls:
            continue
        n = len(open_calls)
        noun = f"{n} tool call{'s' if n != 1 else ''}"
        if later == 0:
            out.append(
                Finding(
                    kind="unanswered_call",
                    severity="info",
                    request=k,
                    message_ids=ids,
                    explanation=(
                        f"the transcript ends with {noun} from request {k} unanswered "
                        f"({_calls_text(open_calls)}): the run was cut off or is still going"
                    ),
                )
            )
        else:
            out.append(
                Finding(
                    kind="unanswered_call",
                    severity="warning",
                    request=k,
                    message_ids=ids,
                    explanation=(
                        f"{where} ended its turn with {noun} never answered ({_calls_text(open_calls)}); "
                        f"{later} more message{'s' if later != 1 else ''} followed without "
                        f"{'their results' if n != 1 else 'its result'}"
                    ),
                )
            )
    return out


# -- orphans -----------------------------------------------------------------------------------------


@register("orphans", ("orphan",), shapes=True)
def orphans(facts: Facts) -> list[Finding]:
    """Tool results without a call and calls without a result, in a ledger or in a sent view.

    In the ledger (what the transcript shows the harness held): a result whose call is not in
    it, or a call sent still open though its result came later. Providers reject both (the
    Anthropic API requires every tool_use to be answered in the next message and every
    tool_result to follow its tool_use), so they point at a reader or a harness bug (warning,
    once per call id). In a view (what shaping sent): an orphan the ledger did not have was
    created by a layer, breaking the pairing invariant (error, once per call id, naming the first
    layer whose output has it). Calls never answered anywhere are the stop-reason check's.
    """
    out: list[Finding] = []
    tools = {c.block.id: c for c in facts.calls}
    for o in facts.ledger_orphans:
        if o.is_call:
            call = tools.get(o.call_id)
            label = call_label(call.block) if call is not None else o.call_id
            answered = (
                f"; its result came only at request {facts.request_of(call.result_id)}"
                if call is not None and call.result_id is not None
                else ""
            )
            text = f"request {o.request} was sent with call {o.call_id} ({label}) unanswered{answered}"
            ids: tuple[str, ...] = (o.message_id,)
        else:
            text = f"request {o.request} was sent with a result for call {o.call_id} whose call is not in its ledger"
            ids = (o.message_id,)
        out.append(
            Finding(kind="orphan", severity="warning", request=o.request, message_ids=ids, explanation=text)
        )
    seen: set[str] = set()
    for v in facts.shaped.view_orphans:
        calls = [c for c in v.calls if c not in seen]
        results = [r for r in v.results if r not in seen]
        if not calls and not results:
            continue
        seen.update(calls)
        seen.update(results)
        parts = []
        if calls:
            parts.append(
                f"{len(calls)} call{'s' if len(calls) != 1 else ''} without a result ({', '.join(calls[:3])})"
            )
        if results:
            parts.append(
                f"{len(results)} result{'s' if len(results) != 1 else ''} without a call ({', '.join(results[:3])})"
            )
        ids_v = unique(
            mid
            for cid in (*calls, *results)
            for mid in (
                (tools[cid].message_id, tools[cid].result_id or tools[cid].message_id) if cid in tools else ()
            )
        )
        out.append(
            Finding(
                kind="orphan",
                severity="error",
                request=v.request,
                message_ids=ids_v,
                explanation=(
                    f"the view sent at request {v.request} has {' and '.join(parts)}, "
                    f"made by {v.label} ({facts.policy}); the ledger had none"
                ),
                layer=v.layer,
            )
        )
    return out


# -- compaction storms ---------------------------------------------------------------------------------


@register("compaction_storm", ("compaction_storm",), shapes=True)
def compaction_storm(facts: Facts) -> list[Finding]:
    """Compactions within a few requests of each other (`Settings.storm_span`, default 3).

    Recorded compactions (what the harness did) and simulated ones (a layer of the replayed
    policy removing or folding messages the request before had kept: old history snip or auto
    compact cutting the view again) are clustered separately: two or more whose neighbours are at
    most `storm_span` requests apart make a storm. Why it matters: each compaction throws away
    context and breaks the prompt cache (a new summary is a model call), so a target too close to
    the trigger, or a compaction that frees too little, pays that cost again and again.
    """
    span = facts.settings.storm_span
    out: list[Finding] = []
    t = facts.transcript
    recorded = [e for e in t.events if e.kind is EventKind.COMPACTION]
    at = [min(e.after_request + 1, max(facts.n, 1)) for e in recorded]
    for cluster in _clusters(at, span):
        if len(cluster) < 2:
            continue
        events = [e for e, r in zip(recorded, at, strict=True) if cluster[0] <= r <= cluster[-1]]
        pre = [e.pre_tokens for e in events if e.pre_tokens is not None]
        size = f"; pre-compaction sizes {', '.join(f'{p:,}' for p in pre[:5])}" if pre else ""
        out.append(
            Finding(
                kind="compaction_storm",
                severity="warning",
                request=cluster[0],
                message_ids=unique(e.summary_id for e in events if e.summary_id),
                explanation=(
                    f"{len(cluster)} recorded compactions within {cluster[-1] - cluster[0] + 1} requests "
                    f"(before requests {requests_text(cluster)}){size}"
                ),
                layer="recorded:compaction",
            )
        )
    cuts = facts.shaped.cuts
    for cluster in _clusters([c.request for c in cuts], span):
        if len(cluster) < 2:
            continue
        members = [c for c in cuts if cluster[0] <= c.request <= cluster[-1]]
        labels: dict[str, int] = defaultdict(int)
        for c in members:
            labels[c.label] += 1
        by = ", ".join(f"{label} ×{n}" for label, n in labels.items())
        removed = sum(c.messages for c in members)
        summaries = sum(c.summaries for c in members)
        extra = f", {summaries} new summar{'ies' if summaries != 1 else 'y'}" if summaries else ""
        out.append(
            Finding(
                kind="compaction_storm",
                severity="warning",
                request=cluster[0],
                message_ids=(),
                explanation=(
                    f"{facts.policy} compacted {len(cluster)} times within "
                    f"{cluster[-1] - cluster[0] + 1} requests ({span_text(cluster[0], cluster[-1])}: {by}; "
                    f"{removed:,} messages newly cut{extra}); each cut breaks the prompt cache"
                ),
                layer=members[0].layer if len(labels) == 1 else None,
            )
        )
    return out


# -- overflow ------------------------------------------------------------------------------------------

OVERFLOW = re.compile(
    r"prompt is too long|context_length_exceeded|context[ _-]?window[ _-]?exceeded|"
    r"input length and `?max_tokens`? exceed context limit|maximum context length|"
    r"exceeds? the (?:model'?s? )?context (?:window|limit|length)|context length exceeded",
    re.IGNORECASE,
)
"""What providers say when a request does not fit (Anthropic, OpenAI, Codex, opencode)."""
COMPACTION_FAILED = re.compile(
    r"error during compaction|compaction failed|failed to compact|conversation too long|"
    r"too large to compact|exceeds model context limit even",
    re.IGNORECASE,
)
"""What harnesses say when a compaction itself fails (Claude Code, opencode)."""
_SIZES = (
    re.compile(r"(\d[\d,]*)\s*tokens?\s*>\s*(\d[\d,]*)"),
    re.compile(r"(\d[\d,]*)\s*\+\s*\d[\d,]*\s*>\s*(\d[\d,]*)"),
    re.compile(r"maximum context length is (\d[\d,]*) tokens.*?(?:resulted in|requested) (\d[\d,]*)", re.S),
)
ERROR_TEXT_CAP = 4_000
"""A longer message is work, not an error notice; it is not searched."""


def harness_text(message: Message) -> str | None:
    """The text of a message the harness or provider wrote about an error, or None.

    API-error style: a synthetic assistant message (model `<synthetic>`), an assistant message
    with no calls that starts like an error; a system or injected (meta) message; a local
    command's output. Human turns, tool results and pinned messages (system prompt, skills,
    project instructions) are never searched: a grep for "prompt is too long" is not an overflow.
    (Claude Code's failed calls, its `isApiErrorMessage` lines, are no messages: the reader makes
    them `EventKind.API_ERROR` events, whose text is `api_error_text`.)
    """
    role = message.role
    # what pins and the role alone rule out first, so that those messages' text is never joined
    if message.pinned or (role is not Role.ASSISTANT and role is not Role.SYSTEM and role is not Role.USER):
        return None
    text = "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock)).strip()
    if not text or len(text) > ERROR_TEXT_CAP:
        return None
    if role is Role.ASSISTANT:
        if message.model == "<synthetic>":
            return text
        if text.lower().startswith(("api error", "prompt is too long", "error:")) and not message.tool_calls:
            return text
        return None
    if role is Role.SYSTEM:
        return text
    if message.is_meta or "<local-command-std" in text:
        return text
    return None


def _sizes(text: str) -> str:
    for pattern in _SIZES:
        m = pattern.search(text)
        if m:
            a, b = (int(g.replace(",", "")) for g in m.groups())
            sent, limit = (b, a) if pattern is _SIZES[2] else (a, b)
            return f" ({sent:,} tokens against a limit of {limit:,})"
    return ""


def api_errors(transcript: Transcript) -> list[RecordedEvent]:
    """The failed model calls the harness recorded (`EventKind.API_ERROR`), in order."""
    return sorted(
        (e for e in transcript.events if e.kind is EventKind.API_ERROR),
        key=lambda e: (e.after_request, e.line or 0),
    )


def is_overflow_error(event: RecordedEvent) -> bool:
    """Whether a recorded API error says the call did not fit ("prompt is too long"...)."""
    return (
        event.kind is EventKind.API_ERROR and bool(event.detail) and bool(OVERFLOW.search(event.detail or ""))
    )


def call_text(after_request: int) -> str:
    """ "the call after request 6" (or "the first call"): where a failed call, no request, was made."""
    return f"the call after request {after_request}" if after_request > 0 else "the first call"


def _event_request(facts: Facts, after_request: int) -> int:
    """The request a finding about an event after request k points at: the next one (k + 1, the
    request the event came right before), else the last (0 with none)."""
    return min(after_request + 1, facts.n)


def _recovered_how(facts: Facts, error: RecordedEvent) -> str:
    """How the request after a rejected call differs: a compaction or a cleared context recorded
    after the error (before that request), or none."""
    after = [
        e
        for e in facts.transcript.events
        if e.kind in SEGMENT_EVENTS
        and e.after_request == error.after_request
        and (e.line is None or error.line is None or e.line > error.line)
    ]
    if any(e.kind is EventKind.COMPACTION for e in after):
        return "after a recorded compaction"
    if after:
        return "after the harness cleared its context"
    return "with no compaction in between"


def _overflow_events(facts: Facts) -> list[Finding]:
    """The `overflow` findings of recorded API errors (Claude Code): the rejected call is no
    request; it was made after request k, and its retry is request k + 1, if there is one. A
    second overflow with no request between is that retry, rejected too."""
    errors = [e for e in api_errors(facts.transcript) if is_overflow_error(e)]
    out: list[Finding] = []
    streak = 0
    for i, e in enumerate(errors):
        k = e.after_request
        text = e.detail or ""
        streak = streak + 1 if i and errors[i - 1].after_request == k else 1
        again = i + 1 < len(errors) and errors[i + 1].after_request == k
        retry = k + 1 if k < facts.n else None
        nth = f"overflow {streak} in a row; " if streak > 1 else ""
        head = f'the provider rejected {call_text(k)} as too long: "{quote(text, 80)}"{_sizes(text)}; {nth}'
        ids: tuple[str, ...] = ()
        severity: Severity
        if again:
            severity = "error" if retry is None else "warning"
            tail = "its retry was rejected too (the next call, with no request between)"
        elif retry is None:
            severity = "error"
            tail = "no request succeeded after it: the run stopped here"
        else:
            severity = "warning"
            size = facts.reported(retry)
            with_size = f" with {size:,} tokens" if size is not None else " (no usage reported)"
            tail = f"retried at request {retry}{with_size} {_recovered_how(facts, e)}"
            response = facts.transcript.request(retry).response_id
            ids = (response,) if response else ()
        out.append(
            Finding(
                kind="overflow",
                severity=severity,
                request=_event_request(facts, k),
                message_ids=ids,
                explanation=head + tail,
            )
        )
    return out


class _Failure(Struct, frozen=True):
    request: int
    line: int
    message_id: str | None
    what: str


@register("overflow", ("overflow", "compaction_failed", "circuit_breaker"), shapes=True)
def overflow(facts: Facts) -> list[Finding]:
    """Provider "prompt too long" errors, what was retried, whether the run stopped; failed compactions.

    Overflow errors are found in the text of the failed calls a harness recorded (Claude Code's
    API errors, `EventKind.API_ERROR`: no request, made after request k, retried at request
    k + 1 if there is one; a second overflow with no request between is the retry rejected too)
    and of API-error style messages in other formats ("prompt is too long",
    "context_length_exceeded", "input length and max_tokens exceed context limit"...). For each:
    the next request that succeeded (with its size, and whether a recorded compaction came
    first), or that none did and the run stopped (error). Failed compactions (a harness's
    "Error during compaction", or a recorded compaction that did not shrink the context) are
    warnings; `Settings.breaker` (3) of them in a row with no successful compaction between
    trip Claude Code's circuit breaker, after which it stops compacting (error). The replayed
    policy's own compaction (auto compact, or a harness's) staying above the trigger that many
    requests in a row is reported the same way (warning).
    """
    t = facts.transcript
    out: list[Finding] = []
    failures: list[_Failure] = []
    streak = 0
    for i, m in enumerate(t.messages):
        text = harness_text(m)
        if text is None:
            continue
        line = m.origin.line if m.origin is not None else i
        if COMPACTION_FAILED.search(text):
            failures.append(_Failure(facts.request_of(m.id), line, m.id, f'"{quote(text, 80)}"'))
            continue
        if not OVERFLOW.search(text):
            continue
        own = facts.response_request.get(m.id)
        before = own - 1 if own is not None else facts.requests_before(i)
        failed = own if own is not None else min(before + 1, facts.n)
        retry = next(
            (
                r
                for r in t.requests[before:]
                if r.index != own
                and facts.reported(r.index) is not None
                and (r.response_id is None or harness_text(facts.message(r.response_id)) is None)
                and facts.position.get(r.response_id or "", i + 1) > i
            ),
            None,
        )
        streak += 1
        nth = f"overflow {streak} in a row; " if streak > 1 else ""
        said = f'"{quote(text, 80)}"{_sizes(text)}'
        if retry is None:
            out.append(
                Finding(
                    kind="overflow",
                    severity="error",
                    request=failed,
                    message_ids=(m.id,),
                    explanation=(
                        f"the provider rejected request {failed} as too long: {said}; {nth}"
                        "no request succeeded after it: the run stopped here"
                    ),
                )
            )
            continue
        streak = 0
        compacted = [
            e for e in t.events if e.kind is EventKind.COMPACTION and before <= e.after_request < retry.index
        ]
        how = "after a recorded compaction" if compacted else "with no compaction in between"
        size = facts.reported(retry.index)
        out.append(
            Finding(
                kind="overflow",
                severity="warning",
                request=failed,
                message_ids=unique([m.id, *(x for x in [retry.response_id] if x)]),
                explanation=(
                    f"the provider rejected request {failed} as too long: {said}; {nth}retried at request "
                    f"{retry.index} with {size or 0:,} tokens {how}"
                ),
            )
        )
    out.extend(_overflow_events(facts))
    # recorded compactions that did not shrink anything count as failures; the others reset
    resets: list[int] = []
    for e in t.events:
        if e.kind is not EventKind.COMPACTION:
            continue
        k = min(e.after_request + 1, max(facts.n, 1))
        if e.pre_tokens is not None and e.post_tokens is not None and e.post_tokens >= e.pre_tokens:
            failures.append(
                _Failure(
                    k,
                    e.line or 0,
                    e.summary_id,
                    f"compaction kept {e.post_tokens:,} of {e.pre_tokens:,} tokens",
                )
            )
        else:
            resets.append(k)
    failures.sort(key=lambda f: (f.request, f.line))
    run: list[_Failure] = []
    breaker = facts.settings.breaker
    for f in failures:
        if run and any(run[-1].request < r <= f.request for r in resets):
            run = []
        run.append(f)
        out.append(
            Finding(
                kind="compaction_failed",
                severity="warning",
                request=f.request,
                message_ids=(f.message_id,) if f.message_id else (),
                explanation=f"a compaction failed at request {f.request}: {f.what}",
                layer="recorded:compaction",
            )
        )
        if len(run) == breaker:
            out.append(
                Finding(
                    kind="circuit_breaker",
                    severity="error",
                    request=f.request,
                    message_ids=unique(x.message_id for x in run if x.message_id),
                    explanation=(
                        f"{breaker} failed compactions in a row (requests {requests_text([x.request for x in run])}): "
                        "the circuit breaker trips and the harness stops compacting"
                    ),
                    layer="recorded:compaction",
                )
            )
    out.extend(_compactor_breaker(facts))
    return out


def _compactor_breaker(facts: Facts) -> list[Finding]:
    """Runs of `breaker` or more requests where the policy's compaction stayed above the trigger."""
    misses = facts.shaped.misses
    breaker = facts.settings.breaker
    out: list[Finding] = []
    runs: list[list[int]] = []
    for i, miss in enumerate(misses):
        prev = misses[runs[-1][-1]] if runs else None
        if prev is not None and prev.request == miss.request - 1 and prev.layer == miss.layer:
            runs[-1].append(i)
        else:
            runs.append([i])
    trigger = facts.budget.trigger
    for run in runs:
        if len(run) < breaker:
            continue
        first, last = misses[run[0]], misses[run[-1]]
        worst = max((misses[i] for i in run), key=lambda x: x.after)
        out.append(
            Finding(
                kind="circuit_breaker",
                severity="warning",
                request=first.request,
                message_ids=(),
                explanation=(
                    f"{facts.policy}'s {first.label} stayed above the trigger {trigger:,} at {len(run)} requests "
                    f"in a row ({span_text(first.request, last.request)}; up to {worst.after:,} after "
                    f"compacting, at request {worst.request}): a harness with a circuit breaker stops "
                    f"compacting after {breaker}"
                ),
                layer=first.layer,
                tokens=worst.after,
            )
        )
    return out


# -- API errors --------------------------------------------------------------------------------------


@register("api_errors", ("api_error",), shapes=False)
def api_error_calls(facts: Facts) -> list[Finding]:
    """Failed model calls the harness recorded: overloaded, rate limits, connection errors.

    A call the provider refused or that never reached it is no request (Claude Code writes it as
    an `isApiErrorMessage` line, read as an `EventKind.API_ERROR` event): it was made after
    request k, and the next call is request k + 1 if there is one. One finding per error, with
    what the provider said: info when a request followed, a warning when none did (the session
    ends on it, as after "5-hour limit reached"). Overflows ("prompt is too long") are the
    `overflow` check's.
    """
    errors = api_errors(facts.transcript)
    out: list[Finding] = []
    streak = 0
    for i, e in enumerate(errors):
        k = e.after_request
        streak = streak + 1 if i and errors[i - 1].after_request == k else 1
        if is_overflow_error(e):
            continue
        said = f'"{quote(e.detail, 80)}"' if e.detail else "(no error text recorded)"
        nth = f"API error {streak} in a row; " if streak > 1 else ""
        again = i + 1 < len(errors) and errors[i + 1].after_request == k
        severity: Severity = "info" if k < facts.n else "warning"
        if again:
            tail = "the next call failed too"
        elif k < facts.n:
            tail = f"the next request ({k + 1}) went through"
        else:
            tail = "no request after it: the session ends here"
        out.append(
            Finding(
                kind="api_error",
                severity=severity,
                request=_event_request(facts, k),
                message_ids=(),
                explanation=f"{call_text(k)} failed: {said}; {nth}{tail}",
            )
        )
    return out


# -- loops ---------------------------------------------------------------------------------------------


@register("loops", ("loop",), shapes=False)
def loops(facts: Facts) -> list[Finding]:
    """The same tool call with the same arguments repeated within a short span.

    `Settings.loop_repeats` (3) identical calls (same tool, same arguments) within
    `Settings.loop_span` (10) requests: an agent going in circles, often because it no longer
    sees what the earlier calls returned. One finding per run of such calls; a warning when
    every result was identical and no file was edited in between (nothing changed, so the agent is
    stuck), info otherwise (polling, or re-running a build or tests after edits, may be fine).
    """
    repeats, span = facts.settings.loop_repeats, facts.settings.loop_span
    by_key: dict[tuple[str, str], list[Call]] = defaultdict(list)
    for c in facts.calls:
        k = c.request if c.request is not None else facts.first_holding.get(c.message_id)
        if k is None:
            continue
        by_key[(c.block.name, canonical_args(c.block))].append(c)
    writes = [c.order for c in facts.calls if canonical_tool(c.block.name) in WRITE_TOOLS]
    out: list[Finding] = []
    for calls in by_key.values():
        if len(calls) < repeats:
            continue
        at = [c.request if c.request is not None else facts.first_holding[c.message_id] for c in calls]
        marked = [False] * len(calls)
        j = 0
        for i in range(len(calls)):
            j = max(j, i)
            while j + 1 < len(calls) and at[j + 1] - at[i] < span:
                j += 1
            if j - i + 1 >= repeats:
                for x in range(i, j + 1):
                    marked[x] = True
        runs: list[list[int]] = []
        for i, hit in enumerate(marked):
            if not hit:
                continue
            if runs and at[i] - at[runs[-1][-1]] < span:
                runs[-1].append(i)
            else:
                runs.append([i])
        for run in runs:
            members = [calls[i] for i in run]
            reqs = [at[i] for i in run]
            contents = [c.result.content for c in members if c.result is not None]
            same = len(contents) == len(members) and len(set(contents)) == 1
            own = {c.order for c in members}
            edits = sum(1 for w in writes if members[0].order < w < members[-1].order and w not in own)
            stuck = edits == 0 and (same or not contents)
            severity: Severity = "warning" if stuck else "info"
            results = (
                "identical results each time"
                if same
                else "no results"
                if not contents
                else f"{len(set(contents))} different results"
            )
            if edits:
                results += f", {edits} file edit{'s' if edits != 1 else ''} in between"
            out.append(
                Finding(
                    kind="loop",
                    severity=severity,
                    request=reqs[0],
                    message_ids=unique(c.message_id for c in members),
                    explanation=(
                        f"{call_label(members[0].block)} called {times(len(members))} with the same arguments "
                        f"within {reqs[-1] - reqs[0] + 1} requests (requests {requests_text(reqs)}), {results}"
                    ),
                )
            )
    return out


# -- pressure ------------------------------------------------------------------------------------------


@register("pressure", ("pressure",), shapes=False)
def pressure(facts: Facts) -> list[Finding]:
    """Requests sent above the blocking line or the trigger by the provider's own report.

    The line is the policy's blocking line when it has one (a harness refuses to send above it),
    else its trigger (compaction should have fired first). One warning per run of consecutive
    requests above it, an error when a request went above the window itself; and one info
    finding: the closest approach to the trigger that applies, with the distance to the blocking
    line and the window (calibrated estimates when nothing was reported).
    Why it matters: above the trigger the harness is late to compact (its own estimate lagged
    the truth), above the window the next request fails.
    """
    b = facts.budget
    line, name = (b.blocking, "blocking line") if b.blocking is not None else (b.trigger, "trigger")
    window = b.window
    t = facts.transcript
    out: list[Finding] = []
    run: list[tuple[int, int]] = []

    def flush() -> None:
        if not run:
            return
        first, last = run[0][0], run[-1][0]
        peak_k, peak = max(run, key=lambda x: (x[1], -x[0]))
        over_window = window is not None and peak > window
        tail = f"; {peak - window:,} over the {window:,} window" if over_window and window is not None else ""
        what = "was" if first == last else f"({len(run)}) were"
        out.append(
            Finding(
                kind="pressure",
                severity="error" if over_window else "warning",
                request=first,
                message_ids=unique(x for x in [t.request(peak_k).response_id] if x),
                explanation=(
                    f"{span_text(first, last)} {what} sent above the {name} {line:,} by the provider's own "
                    f"report (peak {peak:,} at request {peak_k}, {peak - line:,} over){tail}"
                ),
                tokens=peak,
            )
        )
        run.clear()

    reports: list[tuple[int, int]] = []
    for r in t.requests:
        size = facts.reported(r.index)
        if size is not None:
            reports.append((r.index, size))
        if size is not None and size > line:
            if run and run[-1][0] != r.index - 1:
                flush()
            run.append((r.index, size))
        elif run:
            flush()
    flush()
    estimated = not reports
    if estimated:
        reports = list(enumerate(facts.replay.contexts(), start=1))
    if reports:
        peak_k, peak = max(reports, key=lambda x: (x[1], -x[0]))
        word = "an estimated " if estimated else ""
        # against the trigger that applies (the policy's, by the harness's rule), then the window
        gaps = distances(peak, b.trigger, b.blocking, window)
        first = gaps[0]
        of = f"{percent(first.share)} of the {first.scale_name}"
        rest = (
            f"{first.left:,} to spare ({of})"
            if first.left > 0
            else "right at it"
            if first.left == 0
            else f"{-first.left:,} over it ({of})"
        )
        others = ", ".join(gap_text(g, share=False) for g in gaps[1:])
        full = f" (the request filled {peak / window:.1%} of the window)" if window else ""
        text = (
            f"closest approach to the trigger {b.trigger:,}: request {peak_k} held {word}{peak:,} tokens, {rest}"
            + (f"; {others}{full}" if others else "")
            + ("" if window is not None else "; window unknown")
        )
        out.append(
            Finding(
                kind="pressure",
                severity="info",
                request=peak_k,
                message_ids=unique(x for x in [t.request(peak_k).response_id] if x),
                explanation=text,
                tokens=peak,
            )
        )
    return out
