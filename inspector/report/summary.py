"""The report: the facts of a transcript as a documented, stable JSON schema (`Report`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct

from inspector.formats.base import MAX_LOAD_ISSUES, issue_total
from inspector.model import (
    MediaBlock,
    ReasoningBlock,
    Role,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Transcript,
)
from inspector.model.cost import CostSummary, Money
from inspector.replay import Replay, ReplayError
from inspector.shaping import Policy

SCHEMA_VERSION = 1


def plural(n: int, word: str, words: str | None = None) -> str:
    """ "1 request", "2 requests", "1,581 messages"."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


class RequestRow(Struct, kw_only=True):
    """One model call."""

    index: Annotated[int, Meta(description="1-based request number")]
    context_tokens: Annotated[
        int | None,
        Meta(
            description="input + cache write + cache read reported for this request (calibrated where none was reported)"
        ),
    ]
    estimated: Annotated[bool, Meta(description="true when context_tokens is calibrated, not reported")] = (
        False
    )
    output_tokens: int | None
    cumulative_tokens: Annotated[
        int, Meta(description="tokens spent so far (input + output of every request), across compactions")
    ]
    harness_estimate: Annotated[
        int | None,
        Meta(description="what the harness itself would have estimated before sending this request"),
    ] = None
    segment: Annotated[int, Meta(description="ledger segment (0 before the first compaction)")]
    ledger_messages: Annotated[int, Meta(description="messages in the ledger when the request was made")]
    model: str | None
    timestamp: str | None
    cost: Annotated[
        Money | None,
        Meta(
            description="what the request cost in US dollars (input, cache write, cache read, output, "
            "total), at the prices of genai-prices; None: see cost_note"
        ),
    ] = None
    cost_note: Annotated[
        str | None, Meta(description='why there is no cost: "no usage reported", "no price for MODEL"')
    ] = None


class ContextStats(Struct, kw_only=True):
    first: int
    max: int
    max_request: int
    last: int


class EventRow(Struct, kw_only=True):
    """Something the harness recorded doing to its context (a compaction, a microcompact, a fired layer)."""

    kind: str
    style: Annotated[
        str | None,
        Meta(
            description="how the harness wrote a compaction: compact_boundary, summary_root (early Claude "
            "Code 1.0: the summary is a new root), new_root (a fresh context), or the format's own record"
        ),
    ] = None
    detail: Annotated[str | None, Meta(description="what the harness said of it (an API error's text)")] = (
        None
    )
    trigger: str | None
    pre_tokens: int | None
    post_tokens: int | None
    tokens_saved: int | None
    after_request: Annotated[int, Meta(description="the last request made before the event")]
    cleared_tool_ids: list[str]
    preserved_ids: list[str]
    layer: str | None
    call_file: Annotated[str | None, Meta(description="the file holding the compaction's own model call")]
    line: int | None


class SegmentRow(Struct, kw_only=True):
    """A stretch of the ledger between compactions (or fresh contexts)."""

    index: int
    first_request: Annotated[int | None, Meta(description="its first request; None: it has none")]
    requests: int
    started_by: Annotated[
        str | None, Meta(description="the kind of the recorded event that began it (None: the first)")
    ]
    style: Annotated[str | None, Meta(description="that event's style (see recorded_events)")]
    trigger: str | None


class SubagentRow(Struct, kw_only=True):
    agent_id: str
    path: str | None
    layout: str
    agent_type: str | None
    description: str | None
    messages: int
    requests: int


class AbandonedRow(Struct, kw_only=True):
    fork_id: str
    messages: int
    first_line: int
    preview: str


class IssueRow(Struct, kw_only=True):
    file: str
    line: int
    reason: str


class BudgetRow(Struct, kw_only=True):
    """The lines every layer, drawing and report reads (docs/DESIGN.md §2.1)."""

    policy: str
    window: int | None
    window_source: Annotated[
        str, Meta(description="--window, --model, sample, transcript, model, or unknown")
    ]
    window_stated: Annotated[
        int | None,
        Meta(description="the window as the transcript states it (Codex: 95% of the model's window)"),
    ] = None
    output_reserve: int
    safety_buffer: int
    trigger: int
    target: int
    groups_kept: int
    results_kept: int
    blocking: int | None
    harness: Annotated[
        str | None,
        Meta(
            description="the harness whose own estimator the trigger decisions use (each request's harness_estimate)"
        ),
    ] = None
    harness_wrote_transcript: Annotated[
        bool | None,
        Meta(
            description="that harness wrote this transcript: its estimates are what it decided with, "
            "not what it would have estimated"
        ),
    ] = None
    rule: Annotated[
        str | None,
        Meta(
            description="the harness rule (by the transcript's version) that set the trigger, with its "
            "figures; says so where the version is unknown or newer than every rule"
        ),
    ] = None


class LayerRow(Struct, kw_only=True):
    """One layer of the pipeline at the requested step."""

    name: str
    label: str
    fired: bool
    reason: str
    tokens_before: int
    tokens_after: int
    truncated: int
    cleared: int
    removed: int
    summarized: int


class Report(Struct, kw_only=True):
    """`context-inspector report PATH --json`. Keys are stable; new keys may be added."""

    schema_version: int = SCHEMA_VERSION
    format: str
    path: str
    session_id: str | None
    model: str | None
    title: str | None
    requests: list[RequestRow]
    messages: int
    messages_by_role: dict[str, int]
    tool_calls: dict[str, int]
    context: ContextStats | None
    cumulative_tokens: int
    recorded_events: list[EventRow]
    segments: int
    segment_starts: Annotated[
        list[SegmentRow], Meta(description="each segment: its first request and what began it")
    ]
    subagents: list[SubagentRow]
    abandoned_branches: list[AbandonedRow]
    skipped: dict[str, int]
    load_issues: Annotated[
        list[IssueRow],
        Meta(
            description=f"the first load issues met (at most {MAX_LOAD_ISSUES:,}; `load_issues_total` counts all)"
        ),
    ]
    load_issues_total: Annotated[
        int, Meta(description="how many load issues there were in all, `load_issues` among them")
    ] = 0
    budget: BudgetRow
    fidelity: Annotated[
        dict[str, Any] | None,
        Meta(description="each recorded harness event beside the request where the policy would act"),
    ] = None
    step: int | None = None
    layers: list[LayerRow] | None = None
    layers_decide_with: Annotated[
        str | None,
        Meta(
            description="the harness estimator the layers decided with (its own transcript, a harness that "
            "sizes by itself); None: calibrated weights. Token figures are calibrated either way"
        ),
    ] = None
    compare: Annotated[
        dict[str, Any] | None, Meta(description="with --compare: two policies at the step")
    ] = None
    distance: Annotated[
        dict[str, Any] | None,
        Meta(
            description="with --step: how far the step's context is from the trigger, the blocking line and "
            "the window (tokens left, negative when over; share of the window), and the same for the "
            "harness's own estimate"
        ),
    ] = None
    composition: Annotated[
        dict[str, Any] | None,
        Meta(
            description="with --step: what fills the window at the step, part by part (system prompt and "
            "tools, memory files, skills, conversation, tool results by tool, thinking, free space, buffer, "
            "reserve), raw ledger and sent, tokens and share"
        ),
    ] = None
    compaction: Annotated[
        dict[str, Any] | None,
        Meta(
            description="with --step right after a compaction the harness recorded: that compaction opened "
            "(the ledger before, the summary and preserved messages after, every folded message with its "
            "weight, pinned sources lost)"
        ),
    ] = None
    cache: Annotated[
        list[dict[str, Any]] | None,
        Meta(
            description="with --cache: per policy, the prompt-cache cost of its views over the whole session "
            "(prefix rewrites, tokens re-billed because of them, tokens sent, tokens served from cache)"
        ),
    ] = None
    cost: Annotated[
        CostSummary | None,
        Meta(
            description="the session's cost in US dollars: the total of the requests priced, split by kind "
            "of token, the models without a price, and the price table's source and date"
        ),
    ] = None
    sessions_in_source: Annotated[
        int | None,
        Meta(
            description="how many sessions the path read holds (an opencode database, a folder of Codex or "
            "Claude Code sessions); None: the file is this one session"
        ),
    ] = None
    session_chosen: Annotated[
        str | None,
        Meta(
            description='with sessions_in_source: "named" (--session ID) or "newest" (no --session: the '
            "newest session; in opencode, the newest one that is not a subagent's)"
        ),
    ] = None


def load_issues_title(report: Report) -> str:
    """The heading of a report's load issues: how many there were, and how many are shown."""
    shown = len(report.load_issues)
    total = max(report.load_issues_total, shown)
    return (
        f"Load issues ({total:,})"
        if total == shown
        else f"Load issues ({total:,}; the first {shown:,} shown)"
    )


_ROLE_NAMES = {role: role.value for role in Role}
"""Role -> its value (read from an enum member, `.value` is slow in a loop over every message)."""


def _message_counts(transcript: Transcript) -> tuple[dict[str, int], dict[str, int]]:
    """`role_counts` and `tool_counts` in one pass over the messages, each block looked at once."""
    roles: dict[str, int] = {}
    tools: dict[str, int] = {}
    user = Role.USER
    for m in transcript.messages:
        results = False  # a tool result among the blocks
        others = False  # a block that is neither a tool result nor media
        for b in m.blocks:
            # the common blocks by exact type; any other (a subclass, a kind added later) by isinstance
            if type(b) is ToolResultBlock:
                results = True
            elif type(b) is ToolCallBlock:
                others = True
                name = b.name
                tools[name] = tools.get(name, 0) + 1
            elif type(b) is TextBlock or type(b) is ReasoningBlock:
                others = True
            elif type(b) is not MediaBlock:
                if isinstance(b, ToolResultBlock):
                    results = True
                elif not isinstance(b, MediaBlock):
                    others = True
                if isinstance(b, ToolCallBlock):
                    tools[b.name] = tools.get(b.name, 0) + 1
        # `Message.is_tool_result`: tool results, with nothing but media beside them
        role = m.role
        if role is user and results and not others:
            key = "tool_result"
        elif m.is_summary:
            key = "summary"
        else:
            key = _ROLE_NAMES[role]
        roles[key] = roles.get(key, 0) + 1
    # as `Counter.most_common()` orders them: by count, ties in the order first seen
    return dict(sorted(roles.items())), dict(sorted(tools.items(), key=itemgetter(1), reverse=True))


def role_counts(transcript: Transcript) -> dict[str, int]:
    return _message_counts(transcript)[0]


def tool_counts(transcript: Transcript) -> dict[str, int]:
    return _message_counts(transcript)[1]


def request_rows(
    transcript: Transcript,
    *,
    calibrated: Callable[[int], int] | None = None,
    spend: Sequence[int] | None = None,
    harness: Sequence[int] | None = None,
) -> list[RequestRow]:
    """One row per request.

    By default a row holds what the transcript reports: no context where none was reported, and
    the spend summed from the reports. `calibrated(k)`: the context of a request that reported
    none (the row is then `estimated`); `spend` and `harness`: per request (index 0 is request 1),
    the cumulative spend and the harness's own estimate.
    """
    requests = transcript.requests
    if spend is not None and len(spend) != len(requests):
        raise ValueError(f"{len(spend)} spend figures for {len(requests)} requests")
    if harness is not None and len(harness) != len(requests):
        raise ValueError(f"{len(harness)} harness estimates for {len(requests)} requests")
    rows: list[RequestRow] = []
    spent = 0
    for i, r in enumerate(requests):
        usage = r.usage
        estimated = False
        if usage is not None:
            context: int | None = usage.context
            output: int | None = usage.output
            if spend is None:
                spent += usage.spent
        else:
            output = context = None
            if calibrated is not None:
                context = calibrated(i + 1)
                estimated = True
        rows.append(
            RequestRow(
                index=r.index,
                context_tokens=context,
                estimated=estimated,
                output_tokens=output,
                cumulative_tokens=spent if spend is None else spend[i],
                harness_estimate=None if harness is None else harness[i],
                segment=r.segment,
                ledger_messages=r.ledger_len,
                model=r.model,
                timestamp=r.timestamp,
            )
        )
    return rows


def context_stats(rows: list[RequestRow]) -> ContextStats | None:
    known = [(r.index, r.context_tokens) for r in rows if r.context_tokens is not None]
    if not known:
        return None
    top = max(known, key=lambda x: x[1])
    return ContextStats(first=known[0][1], max=top[1], max_request=top[0], last=known[-1][1])


def build_report(
    transcript: Transcript,
    budget: BudgetRow,
    *,
    calibrated: Callable[[int], int] | None = None,
    spend: Sequence[int] | None = None,
    harness: Sequence[int] | None = None,
) -> Report:
    """The report of a transcript; `calibrated`, `spend` and `harness` fill its request rows (see
    `request_rows`)."""
    rows = request_rows(transcript, calibrated=calibrated, spend=spend, harness=harness)
    roles, tools = _message_counts(transcript)
    return Report(
        format=transcript.format,
        path=transcript.path,
        session_id=transcript.session_id,
        sessions_in_source=transcript.sessions_in_source,
        session_chosen=None
        if transcript.sessions_in_source is None
        else ("named" if transcript.session_named else "newest"),
        model=transcript.model,
        title=transcript.title,
        requests=rows,
        messages=len(transcript.messages),
        messages_by_role=roles,
        tool_calls=tools,
        # what the transcript reported: not the contexts calibrated where it reported none
        context=context_stats([r for r in rows if not r.estimated]),
        cumulative_tokens=rows[-1].cumulative_tokens if rows else 0,
        recorded_events=[
            EventRow(
                kind=e.kind.value,
                style=e.style,
                detail=e.detail,
                trigger=e.trigger,
                pre_tokens=e.pre_tokens,
                post_tokens=e.post_tokens,
                tokens_saved=e.tokens_saved,
                after_request=e.after_request,
                cleared_tool_ids=list(e.cleared_tool_ids),
                preserved_ids=list(e.preserved_ids),
                layer=e.layer,
                call_file=e.call_file,
                line=e.line,
            )
            for e in transcript.events
        ],
        segments=len(transcript.segments),
        segment_starts=_segment_rows(transcript),
        subagents=[
            SubagentRow(
                agent_id=s.agent_id,
                path=s.path,
                layout=s.layout,
                agent_type=s.agent_type,
                description=s.description,
                messages=s.messages,
                requests=s.requests,
            )
            for s in transcript.subagents
        ],
        abandoned_branches=[
            AbandonedRow(
                fork_id=a.fork_id, messages=len(a.message_ids), first_line=a.first_line, preview=a.preview
            )
            for a in transcript.abandoned
        ],
        skipped=dict(sorted(transcript.skipped.items())),
        load_issues=[IssueRow(file=i.file, line=i.line, reason=i.reason) for i in transcript.load_issues],
        load_issues_total=issue_total(transcript.load_issues),
        budget=budget,
    )


def _segment_rows(transcript: Transcript) -> list[SegmentRow]:
    """Each ledger segment with its first request and the recorded event that began it."""
    first: dict[int, int] = {}
    count: dict[int, int] = {}
    for r in transcript.requests:
        first.setdefault(r.segment, r.index)
        count[r.segment] = count.get(r.segment, 0) + 1
    rows = []
    for seg in transcript.segments:
        event = transcript.events[seg.started_by] if seg.started_by is not None else None
        rows.append(
            SegmentRow(
                index=seg.index,
                first_request=first.get(seg.index),
                requests=count.get(seg.index, 0),
                started_by=event.kind.value if event is not None else None,
                style=event.style if event is not None else None,
                trigger=event.trigger if event is not None else None,
            )
        )
    return rows


def window_problem(policy: Any, window: int | None) -> str | None:
    """Why `window` cannot be shaped against under `policy` (a `Policy`), or None when it can.

    A window must hold the policy's output reserve and safety buffer with room to spare: below
    that its trigger would be a token or two and every figure drawn against it meaningless (a
    context of 252,610 is not "5052200.0% of window", the window is wrong)."""
    if window is None:
        return None
    budget = policy.budget(window)
    if (
        budget.trigger >= MIN_USABLE_WINDOW
        and window - budget.output_reserve - budget.safety_buffer >= MIN_USABLE_WINDOW
    ):
        return None
    # the reserves as the policy's rule keeps them where a window holds them (a harness rule's
    # lines are clamped to a small window, which would understate them)
    budget = policy.budget(max(window, RESERVES_AT))
    reserved = budget.output_reserve + budget.safety_buffer
    return (
        f"window {window:,} is too small for policy {policy.name}: it keeps {budget.output_reserve:,} "
        f"for the answer and a {budget.safety_buffer:,} safety buffer, {reserved:,} in all; "
        f"give a window of at least {reserved + MIN_USABLE_WINDOW:,} tokens"
    )


MIN_USABLE_WINDOW = 1_000
"""Tokens a window must hold beyond a policy's reserves to be shaped against (`window_problem`)."""
RESERVES_AT = 200_000
"""The window at which `window_problem` reads a policy's reserves to name them."""


def attach_cost(report: Report, transcript: Transcript) -> Report:
    """`report` with the cost of each request and of the session (`inspector.model.cost`)."""
    from inspector.model.cost import session_cost

    found = session_cost(transcript)
    for row, cost in zip(report.requests, found.requests, strict=True):
        row.cost, row.cost_note = cost.cost, cost.note
    report.cost = found.summary
    return report


def budget_row(replay: Replay) -> BudgetRow:
    """The replay's budget, its policy and where its window came from, as the report's row."""
    b = replay.budget
    return BudgetRow(
        policy=replay.policy.name,
        window=b.window,
        window_source=replay.window_source,
        window_stated=replay.transcript.window,
        output_reserve=b.output_reserve,
        safety_buffer=b.safety_buffer,
        trigger=b.trigger,
        target=b.target,
        groups_kept=b.groups_kept,
        results_kept=b.results_kept,
        blocking=b.blocking,
        harness=replay.harness,
        harness_wrote_transcript=replay.harness_wrote_it,
        rule=b.rule,
    )


def replay_report(
    replay: Replay, step: int | None = None, compare_with: str | Policy | None = None
) -> Report:
    """The report of a replay (`report --json`): the transcript's facts, the request rows filled
    with calibrated contexts, spend and the harness's own estimates, the fidelity of the policy to
    the recorded events; with `step`, the layers at that request, and with `compare_with`, that
    request under a second policy (ReplayError without `step`)."""
    from inspector.replay.fidelity import fidelity

    report = build_report(
        replay.transcript,
        budget_row(replay),
        calibrated=replay.calibration.context,
        spend=replay.calibration.spend,
        harness=replay.harness_estimates(),
    )
    if len(replay):
        report.fidelity = msgspec.to_builtins(fidelity(replay))
    if step is not None:
        s = replay.step(step)
        report.step = step
        if replay.decides_as_harness:
            report.layers_decide_with = replay.policy.trigger_estimator
        report.layers = [
            LayerRow(
                name=layer.name,
                label=layer.label,
                fired=layer.fired,
                reason=layer.reason,
                tokens_before=layer.tokens_before,
                tokens_after=layer.tokens_after,
                truncated=layer.truncated,
                cleared=layer.cleared,
                removed=layer.removed,
                summarized=layer.summarized,
            )
            for layer in s.result.layers
        ]
        report.distance = replay.distance_dict(s)
        from inspector.replay.composition import composition
        from inspector.replay.folded import compaction_at, opened

        report.composition = composition(s, replay.policy).to_dict()
        event = compaction_at(replay, step)
        if event is not None and event.after_request >= 1:
            report.compaction = opened(replay, event).to_dict()
        if compare_with is not None:
            from inspector.replay.compare import compare

            report.compare = msgspec.to_builtins(compare(replay, replay.with_settings(compare_with), step))
    elif compare_with is not None:
        raise ReplayError("--compare needs --step K: the request at which to compare the two policies")
    return report
