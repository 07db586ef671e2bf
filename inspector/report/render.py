"""The report as Rich tables for a terminal. Every transcript string goes through `visible`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from inspector.model.cost import cost_line, money_text
from inspector.model.sanitize import one_line, visible

from .progress import human_size
from .summary import Report, load_issues_title, plural

if TYPE_CHECKING:
    from inspector.live.discovery import SessionInfo
    from inspector.tokens.accuracy import AccuracyReport, CorpusReport, ModeAccuracy


PIPE_WIDTH = 10_000
"""The width of output that is not a terminal (a pipe, a file): wide enough for any row, so a
table takes the width it needs and nothing a user copies (a path, a reason) is cut or wrapped."""


def output_console(file: Any = None) -> Console:
    """A console for `file` (standard output by default): a terminal's own width, else `PIPE_WIDTH`
    and no colours."""
    import sys

    stream = sys.stdout if file is None else file
    try:
        terminal = bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        terminal = False
    if terminal:
        return Console(file=stream)
    return Console(file=stream, width=PIPE_WIDTH, color_system=None, highlight=False)


def _whole(text: str, style: str = "") -> Text:
    """A line that is never cut nor wrapped by Rich (a path): the terminal wraps it, if it must, as
    one line that copies whole."""
    return Text(visible(text, newlines=False), style=style, no_wrap=True, overflow="ignore")


def _n(v: int | None) -> str:
    return "—" if v is None else f"{v:,}"


def _text(value: str) -> Text:
    """A table cell from a string that may carry transcript content: never markup, controls visible."""
    return Text(visible(value, newlines=False))


_KEY_WIDTH = 8
"""The width of the keys of the report's head ("requests", "messages")."""


def _kv_table(title: str | None) -> Table:
    t = Table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold", min_width=_KEY_WIDTH)
    t.add_column()
    return t


def session_line(report: Report) -> str:
    """Which session of several the report is of, and how to choose another."""
    n = report.sessions_in_source or 0
    which = report.session_id or "(no id)"
    if report.session_chosen == "named":
        return f"{which} (named with --session, of {n:,} sessions here)"
    return f"{which}: the newest of {n:,} sessions here (choose another with --session ID)"


def file_line(report: Report) -> Text:
    """ "file      /the/transcript.jsonl": printed on a line of its own, never cut (`print_report`)."""
    line = Text.assemble(("file".ljust(_KEY_WIDTH + 2), "bold"), visible(report.path, newlines=False))
    line.no_wrap, line.overflow = True, "ignore"
    return line


def render_report(report: Report, *, with_file: bool = True) -> RenderableType:
    parts: list[RenderableType] = [Text("Session", style="italic")]
    if with_file:
        parts.append(file_line(report))
    head = _kv_table(None)
    head.add_row("format", _text(report.format))
    if report.sessions_in_source is not None and report.sessions_in_source > 1:
        head.add_row("session", Text(visible(session_line(report), newlines=False)))
    head.add_row("model", Text(visible(report.model or "unknown", newlines=False)))
    if report.title:
        head.add_row("title", Text(one_line(report.title, 100)))
    head.add_row("requests", f"{len(report.requests):,}")
    head.add_row("messages", ", ".join(f"{k} {v:,}" for k, v in report.messages_by_role.items()) or "0")
    if report.context:
        c = report.context
        head.add_row(
            "context",
            f"first {c.first:,} · max {c.max:,} (request {c.max_request}) · last {c.last:,}",
        )
    head.add_row("spent", f"{report.cumulative_tokens:,} tokens in all (input + output, across compactions)")
    if report.cost is not None:
        head.add_row("cost", _text(cost_line(report.cost)))
    b = report.budget
    head.add_row(
        "budget",
        _text(
            f"policy {b.policy} · window {_n(b.window)} ({b.window_source}) · trigger {b.trigger:,} · target {b.target:,}"
            + (f" · blocking {b.blocking:,}" if b.blocking is not None else "")
        ),
    )
    if b.rule:
        head.add_row("rule", _text(b.rule))
    if report.skipped:
        head.add_row("skipped", _text(", ".join(f"{k} {v:,}" for k, v in report.skipped.items())))
    parts.append(head)

    if report.tool_calls:
        tools = Table(title="Tool calls", title_justify="left")
        tools.add_column("tool")
        tools.add_column("calls", justify="right")
        for name, count in report.tool_calls.items():
            tools.add_row(Text(visible(name, newlines=False)), f"{count:,}")
        parts.append(tools)

    if report.recorded_events:
        ev = Table(title="Recorded events", title_justify="left")
        for col in ("kind", "trigger", "after request", "pre tokens", "post / saved", "line"):
            ev.add_column(
                col,
                justify="right" if col in ("after request", "pre tokens", "post / saved", "line") else "left",
            )
        for e in report.recorded_events:
            what = e.kind + (f" ({e.layer})" if e.layer else "") + (f" · {e.style}" if e.style else "")
            if e.detail:
                what += ": " + e.detail
            pre = _n(e.pre_tokens)
            if (
                e.pre_tokens is None
                and e.kind == "compaction"
                and 0 < e.after_request <= len(report.requests)
            ):
                # not recorded (an old-style compaction): the last request's context, said to be inferred
                pre = f"{report.requests[e.after_request - 1].context_tokens:,} (inferred)"
            ev.add_row(
                Text(one_line(what, 100)),
                Text(visible(e.trigger or "—", newlines=False)),
                str(e.after_request),
                pre,
                _n(e.post_tokens if e.post_tokens is not None else e.tokens_saved),
                _n(e.line),
            )
        parts.append(ev)

    if len(report.segment_starts) > 1:
        seg = Table(title="Ledger segments", title_justify="left")
        for col in ("segment", "first request", "requests", "begun by"):
            seg.add_column(col, justify="left" if col == "begun by" else "right")
        for srow in report.segment_starts:
            begun = "the session's start"
            if srow.started_by is not None:
                begun = srow.started_by + (f" · {srow.style}" if srow.style else "")
                begun += f" · trigger {srow.trigger}" if srow.trigger else " · trigger not recorded"
            seg.add_row(
                str(srow.index),
                _n(srow.first_request),
                f"{srow.requests:,}",
                Text(visible(begun, newlines=False)),
            )
        parts.append(seg)

    if report.layers is not None:
        b = report.budget
        lines = [
            Text(
                f"Pipeline at request {report.step} (policy {b.policy}, trigger {b.trigger:,}, target {b.target:,})",
                style="italic",
            )
        ]
        if report.layers_decide_with:
            lines.append(
                Text(
                    f"  the layers decide as the harness did, with its own estimate "
                    f"({report.layers_decide_with}: the figures their reasons quote); the tokens are calibrated",
                    style="dim",
                )
            )
        label_width = max((len(layer.label) for layer in report.layers), default=0) + 2
        for layer in report.layers:
            changes = ", ".join(
                f"{n} {word}"
                for n, word in (
                    (layer.truncated, "truncated"),
                    (layer.cleared, "cleared"),
                    (layer.removed, "removed"),
                    (layer.summarized, "summarized"),
                )
                if n
            )
            row = Text()
            row.append(f"  {layer.label:<{label_width}}", style="bold")
            row.append("fired    " if layer.fired else "idle     ", style="green" if layer.fired else "dim")
            row.append(f"{layer.tokens_before:>10,} → {layer.tokens_after:>10,}   ")
            row.append(changes or "no change")
            lines.append(row)
            lines.append(Text(f"      {layer.reason}", style="dim"))
        parts.append(Group(*lines))
    if report.compare is not None:
        parts.append(_compare_table(report.compare))

    if report.distance:
        parts.append(_distance_lines(report))
    if report.composition:
        parts.append(_composition_table(report.composition))
        parts.append(_pinned_lines(report.composition))
    if report.compaction:
        parts.append(_compaction_table(report.compaction))

    if report.cache:
        cache = Table(title="Prompt cache over the session", title_justify="left")
        money = any(entry.get("rebilled_cost") is not None for entry in report.cache)
        cols = ["policy", "prefix rewrites", "tokens re-billed", "tokens sent", "served from cache"]
        if money:
            cols.insert(3, "re-billed cost")
        for col in cols:
            cache.add_column(col, justify="left" if col == "policy" else "right")
        for entry in report.cache:
            cells: list[RenderableType] = [
                _text(str(entry["policy"])),
                f"{entry['rewrites']:,}",
                f"{entry['rebilled_tokens']:,}",
                f"{entry['sent_tokens']:,}",
                f"{entry['cached_tokens']:,}",
            ]
            if money:
                cells.insert(3, _text(cache_money(entry)))
            cache.add_row(*cells)
        parts.append(cache)
        for entry in report.cache:
            parts.append(Text(visible(cache_sentence(entry), newlines=False)))

    if report.subagents:
        sub = Table(title="Subagents", title_justify="left")
        for col in ("agent", "layout", "type", "requests", "messages", "task"):
            sub.add_column(col)
        for s in report.subagents:
            sub.add_row(
                Text(visible(s.agent_id, newlines=False)),
                s.layout,
                Text(visible(s.agent_type or "—", newlines=False)),
                f"{s.requests:,}",
                f"{s.messages:,}",
                Text(one_line(s.description or "", 60)),
            )
        parts.append(sub)

    if report.abandoned_branches:
        ab = Table(title="Abandoned branches (rewinds)", title_justify="left")
        for col in ("forked from", "messages", "first line", "begins with"):
            ab.add_column(col)
        for a in report.abandoned_branches:
            ab.add_row(
                Text(visible(a.fork_id, newlines=False)),
                str(a.messages),
                str(a.first_line),
                Text(one_line(a.preview, 60)),
            )
        parts.append(ab)

    if report.load_issues:
        iss = Table(title=load_issues_title(report), title_justify="left")
        iss.add_column("where")
        iss.add_column("reason")
        for issue in report.load_issues[:200]:
            iss.add_row(
                Text(visible(f"{issue.file}:{issue.line}", newlines=False)),
                Text(visible(issue.reason, newlines=False)),
            )
        parts.append(iss)

    if report.fidelity and report.fidelity.get("events"):
        parts.append(_fidelity_table(report.fidelity))

    if report.requests:
        rq = Table(title="Context per request", title_justify="left")
        b = report.budget
        # on another harness's transcript the figures are what the policy's harness would estimate
        estimate = estimate_label(b.harness, b.harness_wrote_transcript)
        cols = ["request", "context", estimate, "output", "spent so far", "cost", "segment"]
        priced = any(r.cost is not None for r in report.requests)
        if not priced:
            cols.remove("cost")
        harness = any(r.harness_estimate is not None for r in report.requests)
        if not harness:
            cols.remove(estimate)
        for col in cols:
            rq.add_column(col, justify="right")
        rows = report.requests
        shown = rows if len(rows) <= 40 else rows[:10] + rows[-30:]
        for i, r in enumerate(shown):
            if len(rows) > 40 and i == 10:
                rq.add_row("…", *([""] * (len(cols) - 1)))
            context = _n(r.context_tokens) + (" ~" if r.estimated else "")
            row_cells = [str(r.index), context]
            if harness:
                row_cells.append(_n(r.harness_estimate))
            row_cells += [_n(r.output_tokens), f"{r.cumulative_tokens:,}"]
            if priced:
                row_cells.append(money_text(r.cost.total) if r.cost is not None else "—")
            row_cells.append(str(r.segment))
            rq.add_row(*row_cells)
        parts.append(rq)
        if any(r.estimated for r in report.requests):
            parts.append(
                Text(
                    "  ~ no usage reported for this request: the context is the calibrated prediction",
                    style="dim",
                )
            )
    return Group(*parts)


def estimate_label(harness: str | None, wrote_it: bool | None) -> str:
    """The heading of the harness's estimate: "what OpenCollab would estimate" on another harness's
    transcript, "Claude Code's own estimate" on its own."""
    if not harness:
        return "harness estimate"
    return f"what {harness} would estimate" if wrote_it is False else f"{harness}'s own estimate"


def cache_money(entry: dict[str, Any]) -> str:
    """The money of the tokens a policy re-billed ("$0.42"), or why there is none."""
    cost = entry.get("rebilled_cost")
    if cost is None:
        reason = entry.get("cost_note")
        return str(reason) if reason else "—"
    return money_text(float(cost))


def cache_sentence(entry: dict[str, Any]) -> str:
    """ "opencollab+eager re-bills 66,526 tokens = $0.41 on this session"."""
    n = int(entry["rebilled_tokens"])
    text = f"{entry['policy']} re-bills {plural(n, 'token')}"
    cost = entry.get("rebilled_cost")
    if cost is not None:
        text += f" = {money_text(float(cost))}"
    elif entry.get("cost_note"):
        text += f" ({entry['cost_note']})"
    text += " on this session"
    rewrites = int(entry.get("rewrites", 0))
    why = "written to the cache again instead of read from it; " if cost is not None and n else ""
    return text + f" ({why}{plural(rewrites, 'prefix rewrite')})"


def _compare_table(compare: dict[str, Any]) -> Table:
    """Two policies at one request, side by side (`report --step K --compare POLICY`)."""
    a, b = compare["a"], compare["b"]
    table = Table(
        title=f"Compared at request {compare['step']} ({plural(compare['ledger_messages'], 'message')} in the ledger)",
        title_justify="left",
    )
    table.add_column("")
    table.add_column(f"A · {visible(str(a['policy']), newlines=False)}", justify="right")
    table.add_column(f"B · {visible(str(b['policy']), newlines=False)}", justify="right")

    def row(what: str, key: str) -> None:
        table.add_row(what, _n(a.get(key)), _n(b.get(key)))

    row("window", "window")
    row("trigger", "trigger")
    row("target", "target")
    row("ledger tokens", "input_tokens")
    row("tokens sent", "sent_tokens")
    row("tokens saved", "saved_tokens")
    row("messages sent", "messages_sent")
    for fate in ("removed", "summarized", "cleared", "truncated", "added"):
        table.add_row(f"messages {fate}", _n(a["counts"].get(fate)), _n(b["counts"].get(fate)))

    def fired(side: dict[str, Any]) -> Text:
        labels = side.get("labels") or {}
        names = [labels.get(n, n) for n in side.get("fired", [])]
        return _text(", ".join(names) or "none")

    table.add_row("layers fired", fired(a), fired(b))
    table.add_row(
        "sent only by this side",
        _n(len(compare.get("only_in_a", []))),
        _n(len(compare.get("only_in_b", []))),
    )
    table.add_row(
        "kept whole only by this side",
        _n(len(compare.get("kept_only_by_a", []))),
        _n(len(compare.get("kept_only_by_b", []))),
    )
    return table


def _distance_lines(report: Report) -> RenderableType:
    """How far the step's context (and the harness's own estimate) is from each line."""
    d = report.distance or {}
    lines = [Text(f"Distance at request {report.step}", style="italic")]
    row = Text()
    row.append(f"  context {d.get('context', 0):,}: ", style="bold")
    row.append(str(d.get("text", "")))
    lines.append(row)
    if "harness_text" in d:
        b = report.budget
        who = f"{b.harness} would estimate" if b.harness_wrote_transcript is False else "harness estimate"
        own = Text()
        own.append(f"  {who} {d.get('harness_estimate', 0):,}: ", style="bold")
        own.append(str(d["harness_text"]))
        lines.append(own)
    return Group(*lines)


def _composition_table(comp: dict[str, Any]) -> Table:
    """What fills the window at the step, raw ledger and sent side by side (the `/context` picture)."""
    of = "window" if comp.get("share_of") == "window" else "context"
    window = comp.get("window")
    table = Table(
        title=(
            f"What fills the window at request {comp.get('request')}: raw {comp.get('context', 0):,}, "
            f"sent {comp.get('sent', 0):,}" + (f" of {window:,}" if window else " (window unknown)")
        ),
        title_justify="left",
    )
    table.add_column("part")
    for col in ("raw", f"raw % of {of}", "sent", f"sent % of {of}"):
        table.add_column(col, justify="right")
    table.add_column("", no_wrap=True)
    for part in comp.get("parts", []):
        share = float(part.get("raw_share", 0.0))
        bar = "█" * round(share * 20) if not part.get("space") else "░" * round(share * 20)
        table.add_row(
            _text(str(part.get("label", ""))),
            f"{part.get('raw', 0):,}",
            f"{share:.1%}",
            f"{part.get('sent', 0):,}",
            f"{float(part.get('sent_share', 0.0)):.1%}",
            bar,
            style="dim" if part.get("space") else None,
        )
    return table


def _pinned_lines(comp: dict[str, Any]) -> RenderableType:
    """The overhead's split (each share with its basis) and the pinned sources with why each is
    pinned, in the policy's terms."""
    lines: list[Text] = []
    for x in comp.get("overhead_split") or []:
        lines.append(
            Text(f"  {one_line(str(x.get('label', '')), 60)}: {x.get('tokens', 0):,} · ", style="dim")
        )
        lines[-1].append(one_line(str(x.get("basis", "")), 200), style="dim")
    for pin in comp.get("pinned") or []:
        count = int(pin.get("count", 0))
        name = one_line(str(pin.get("name") or pin.get("kind", "")), 60) + (f" ×{count}" if count > 1 else "")
        lines.append(
            Text(f"  ⚑ pinned {name} (priority {pin.get('priority', 0)}): {pin.get('tokens', 0):,} tokens — ")
        )
        lines[-1].append(one_line(str(pin.get("why", "")), 200), style="italic")
    return Group(*lines)


def _compaction_table(c: dict[str, Any], most: int = 25) -> RenderableType:
    """A recorded compaction opened: before, after, the folded messages (heaviest first), lost pins."""
    before, after = c.get("before_request"), c.get("first_request_after")
    head = Text(
        f"The harness's compaction after request {before} ({c.get('trigger') or 'trigger not recorded'}"
        + (f", {c['pre_tokens']:,} tokens by its count" if c.get("pre_tokens") else "")
        + f"): {c.get('before_messages', 0):,} messages, {c.get('before_tokens', 0):,} tokens at request "
        f"{before} → {c.get('after_messages', 0):,} message{'' if c.get('after_messages') == 1 else 's'}, "
        f"{_n(c.get('after_tokens'))} tokens at request "
        f"{_n(after)}",
        style="italic",
    )
    lines: list[RenderableType] = [head]
    summary = c.get("summary")
    if summary:
        lines.append(
            Text(
                f"  summary {summary.get('weight', 0):,} tokens: {one_line(str(summary.get('text', '')), 90)}"
            )
        )
    preserved = c.get("preserved") or []
    lines.append(Text(f"  preserved {len(preserved):,} message{'' if len(preserved) == 1 else 's'}"))
    restored = c.get("restored_candidates") or []
    if restored:
        lines.append(
            Text(
                "  files it restores (the transcript does not record them; read last before it): "
                + ", ".join(one_line(str(p).rsplit("/", 1)[-1], 60) for p in restored)
            )
        )
    for pin in c.get("lost_pins") or []:
        fate = "the same source is in the ledger after it" if pin.get("survived") else "did not survive"
        lines.append(
            Text(
                f"  ⚑ pinned {one_line(str(pin.get('source', '')), 60)}: {pin.get('count', 0):,} "
                f"message{'' if pin.get('count') == 1 else 's'}, "
                f"{pin.get('weight', 0):,} tokens folded; {fate}",
                style="bold" if not pin.get("survived") else "",
            )
        )
    folded = c.get("folded") or []
    table = Table(
        title=f"Folded: {len(folded):,} messages, {c.get('folded_tokens', 0):,} tokens (heaviest first)",
        title_justify="left",
    )
    for col in ("weight", "role", "tool", "line", "content"):
        table.add_column(col, justify="right" if col in ("weight", "line") else "left")
    for e in folded[:most]:
        table.add_row(
            f"{e.get('weight', 0):,}",
            str(e.get("role", "")),
            _text(str(e.get("tool", ""))),
            _n(e.get("line")),
            Text(("⚑ " if e.get("pinned") else "") + one_line(str(e.get("text", "")), 70)),
        )
    if len(folded) > most:
        table.add_row("…", "", "", "", f"and {len(folded) - most:,} more (report --json lists them all)")
    lines.append(table)
    return Group(*lines)


def _fidelity_table(fidelity: dict[str, Any], most: int = 30) -> Table:
    """What the harness recorded doing beside what the policy simulates (`replay.fidelity`); past
    `most` events, every one that does not match and the first matches, then a count."""
    table = Table(
        title=(
            f"Fidelity: {fidelity.get('matches', 0):,} matched, {fidelity.get('misses', 0):,} missed "
            f"(policy {fidelity.get('policy')}, deciding with {_estimator_words(fidelity.get('estimator'))}, "
            f"trigger {_n(fidelity.get('trigger'))})"
        ),
        title_justify="left",
    )
    table.add_column("event", no_wrap=True)
    # "trigger": the line the harness's estimate is held against ("line" is a file's line number in
    # the recorded events above it); "result": whether the policy agrees, and why
    for col in (
        "recorded after request",
        "simulated after request",
        "harness estimate",
        "trigger",
        "estimate before",
    ):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("result")
    events: list[dict[str, Any]] = list(fidelity.get("events", []))
    shown = events
    if len(events) > most:
        matched = [e for e in events if e.get("match")]
        keep = {id(e) for e in matched[: most // 3]} | {id(e) for e in events if not e.get("match")}
        shown = [e for e in events if id(e) in keep]
    for e in shown:
        what = str(e.get("layer") or e.get("kind") or "")
        if e.get("trigger"):
            what += f" ({e['trigger']})"
        mark = "✓" if e.get("match") else ("✗" if e.get("counted") else "·")
        table.add_row(
            _text(what),
            _n(e.get("recorded_after_request")),
            _n(e.get("simulated_after_request")),
            _n(e.get("harness_estimate")),
            _n(e.get("threshold")),
            _n(e.get("previous_harness_estimate")),
            _text(f"{mark} {e.get('note', '')}"),
        )
    if len(shown) < len(events):
        table.add_row("…", "", "", "", "", "", f"and {len(events) - len(shown):,} more that match")
    return table


def _estimator_words(name: object) -> str:
    """ "Claude Code's own estimate" for the estimator `claude_code` (one spelling for users)."""
    from inspector.tokens.harness import ESTIMATORS

    spec = ESTIMATORS.get(str(name))
    return f"{spec.harness}'s own estimate" if spec is not None else f"the estimator {name}"


def print_report(report: Report, console: Console | None = None) -> None:
    """The report on `console`; its path on a line the terminal wraps, if it must, as one line
    (a line Rich cut or broke would not copy whole)."""
    out = console or output_console()
    out.print(Text("Session", style="italic"))
    out.print(file_line(report), soft_wrap=True)
    group = render_report(report, with_file=False)
    assert isinstance(group, Group)
    out.print(Group(*group.renderables[1:]))


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}%"


CALIBRATE_HOW = {
    "baseline": "last report + chars/4 of what was added",
    "baseline_tiktoken": "last report + tiktoken of what was added",
    "proportional": "weights apportioned from each report",
    "delta": "each report's difference put on what was added",
}


def print_accuracy(result: AccuracyReport, mode: str | None = None, console: Console | None = None) -> None:
    """The calibration accuracy table: each mode's median, p95 and max error of the next-request
    prediction (each request's input predicted before its report, against what it reported), then
    each kind of request scored apart (after a compaction, a model switch, an API error)."""
    table = Table(
        title=(
            "Error of the next-request prediction: each request's input predicted before its report, "
            f"against the report ({result.estimator} estimator)"
        ),
        title_justify="left",
    )
    table.add_column("mode", no_wrap=True)
    for col in ("median error", "p95 error", "max error", "requests predicted"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    table.add_column("how it predicts", style="dim", min_width=24)
    for key, stats in result.modes.items():
        table.add_row(
            key,
            _pct(stats.median_pct),
            _pct(stats.p95_pct),
            _pct(stats.max_pct),
            f"{stats.n:,}",
            Text("best", style="bold green") if key == result.best else "",
            CALIBRATE_HOW.get(key, ""),
        )
    parts: list[RenderableType] = [table]
    if result.kinds:
        kinds = Table(
            title="Requests scored apart (not in the figures above)",
            title_justify="left",
        )
        kinds.add_column("kind of request", no_wrap=True)
        kinds.add_column("mode", no_wrap=True)
        # the columns of the table above, in its words
        for col in ("median error", "p95 error", "max error", "requests predicted"):
            kinds.add_column(col, justify="right", no_wrap=True)
        for kind, by_mode in result.kinds.items():
            for key, stats in by_mode.items():
                kinds.add_row(
                    kind,
                    key,
                    _pct(stats.median_pct),
                    _pct(stats.p95_pct),
                    _pct(stats.max_pct),
                    f"{stats.n:,}",
                )
        parts.append(kinds)
    if mode is not None:
        rows = Table(title=f"Per request ({mode})", title_justify="left")
        for col in ("request", "reported input", "predicted input", "error of the prediction", "after"):
            rows.add_column(col, justify="right")
        for r in result.requests:
            if mode in r.predicted:
                rows.add_row(
                    str(r.request),
                    f"{r.reported:,}",
                    f"{r.predicted[mode]:,}",
                    _pct(r.error_pct.get(mode)),
                    r.after or "",
                )
        parts.append(rows)
    (console or output_console()).print(Group(*parts))


_STATS = "median\np95\nmax"


def print_corpus_accuracy(result: CorpusReport, console: Console | None = None) -> None:
    """`calibrate` over several files: a row per file (its best mode and both baselines), the
    summary row (median over files of each file's median, p95 and max), then each kind of request
    scored apart, pooled over the files."""
    table = Table(
        title=f"Predicting each request's input before its report ({result.estimator} estimator)",
        title_justify="left",
    )
    table.add_column("file", overflow="fold")
    table.add_column("requests", justify="right", no_wrap=True)
    table.add_column("", no_wrap=True, style="dim")
    for what in ("best mode", "chars/4", "tiktoken"):
        table.add_column(what, justify="right", no_wrap=True)

    def cell(stats: ModeAccuracy) -> str:
        return "\n".join(_pct(v) for v in (stats.median_pct, stats.p95_pct, stats.max_pct))

    for row in result.files:
        table.add_row(
            Text(visible(row.name, newlines=False)),
            f"{row.n}\n{row.best}",
            _STATS,
            cell(row.modes[row.best]),
            cell(row.modes["baseline"]),
            cell(row.modes["baseline_tiktoken"]),
        )
    s = result.summary
    table.add_row(
        Text(f"summary ({len(result.files)} files)", style="bold"),
        str(sum(r.n for r in result.files)),
        _STATS,
        cell(s["best"]),
        cell(s["baseline"]),
        cell(s["baseline_tiktoken"]),
        end_section=True,
    )
    for kind, stats in result.kinds.items():
        table.add_row(Text(kind, style="dim"), str(stats.n), _STATS, cell(stats), "", "")
    (console or output_console()).print(table)


def _session_path(row: SessionInfo) -> str:
    """Where a session is: its file, and for one session of an opencode database the `--session`
    that opens it."""
    if row.harness == "opencode" and row.session_id and row.path.suffix == ".db":
        return f"{row.path} --session {row.session_id}"
    return str(row.path)


def _requests_cell(r: SessionInfo) -> str:
    if r.requests is None:
        return "—"
    return f"~{r.requests:,}" if r.requests_estimated else f"{r.requests:,}"


def print_sessions(rows: list[SessionInfo], console: Console | None = None) -> None:
    """Sessions found on this machine, newest first; a live mark on those written in the last minute.

    Paths are never cut: where the table with them does not fit the terminal, each session takes
    two lines, its facts and then its path whole."""
    out = console or output_console()
    if not rows:
        out.print(
            "No sessions found (Claude Code, Codex, opencode, OpenCollab). Try: context-inspector --sample",
            soft_wrap=True,
        )
        return
    title = f"Sessions ({len(rows):,}), newest first"
    cols = ("", "harness", "project", "title", "requests", "size", "last activity")
    table = Table(title=title, title_justify="left")
    for col in (*cols, "path"):
        table.add_column(
            col, justify="right" if col in ("requests", "size") else "left", no_wrap=col == "path"
        )

    def cells(r: SessionInfo) -> list[RenderableType]:
        return [
            Text("●", style="bold green") if r.live else Text(""),
            r.harness,
            Text(visible(r.project or "—", newlines=False)),
            Text(one_line(r.title or "", 50)),
            _requests_cell(r),
            human_size(r.size_bytes),
            r.last_activity.strftime("%Y-%m-%d %H:%M"),
        ]

    for r in rows:
        table.add_row(*cells(r), Text(visible(_session_path(r), newlines=False)))
    from rich.measure import Measurement

    if Measurement.get(out, out.options.update_width(PIPE_WIDTH), table).maximum <= out.width:
        out.print(table)
        return
    # too wide for the terminal: the facts in a table, each followed by its path on a line of its own
    out.print(Text(title, style="italic"))
    for r in rows:
        facts = Table(show_header=False, box=None, pad_edge=False)
        for col in cols:
            facts.add_column(col, justify="right" if col in ("requests", "size") else "left")
        facts.add_row(*cells(r))
        out.print(facts)
        out.print(_whole("   " + _session_path(r)), soft_wrap=True)
