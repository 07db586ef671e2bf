"""The report as Rich tables for a terminal. Every transcript string goes through `visible`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from .sanitize import one_line, visible
from .summary import Report

if TYPE_CHECKING:
    from inspector.live.discovery import SessionInfo
    from inspector.tokens.accuracy import AccuracyReport


def _n(v: int | None) -> str:
    return "—" if v is None else f"{v:,}"


def _text(value: str) -> Text:
    """A table cell from a string that may carry transcript content: never markup, controls visible."""
    return Text(visible(value, newlines=False))


def _kv_table(title: str) -> Table:
    t = Table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold")
    t.add_column()
    return t


def session_line(report: Report) -> str:
    """Which session of several the report is of, and how to choose another."""
    n = report.sessions_in_source or 0
    which = report.session_id or "(no id)"
    if report.session_chosen == "named":
        return f"{which} (named with --session, of {n:,} sessions here)"
    return f"{which}: the newest of {n:,} sessions here (choose another with --session ID)"


def render_report(report: Report) -> RenderableType:
    parts: list[RenderableType] = []
    head = _kv_table("Session")
    head.add_row("file", Text(visible(report.path, newlines=False)))
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
            if e.pre_tokens is None and e.kind == "compaction" and 0 < e.after_request <= len(report.requests):
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
            row.append(f"  {layer.label:<20}", style="bold")
            row.append("fired    " if layer.fired else "idle     ", style="green" if layer.fired else "dim")
            row.append(f"{layer.tokens_before:>10,} → {layer.tokens_after:>10,}   ")
            row.append(changes or "no change")
            lines.append(row)
            lines.append(Text(f"      {layer.reason}", style="dim"))
        parts.append(Group(*lines))

    if report.distance:
        parts.append(_distance_lines(report))
    if report.composition:
        parts.append(_composition_table(report.composition))
    if report.compaction:
        parts.append(_compaction_table(report.compaction))

    if report.cache:
        cache = Table(title="Prompt cache over the session", title_justify="left")
        for col in ("policy", "prefix rewrites", "tokens re-billed", "tokens sent", "served from cache"):
            cache.add_column(col, justify="left" if col == "policy" else "right")
        for entry in report.cache:
            cache.add_row(
                _text(str(entry["policy"])),
                f"{entry['rewrites']:,}",
                f"{entry['rebilled_tokens']:,}",
                f"{entry['sent_tokens']:,}",
                f"{entry['cached_tokens']:,}",
            )
        parts.append(cache)

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
        iss = Table(title=f"Load issues ({len(report.load_issues):,})", title_justify="left")
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
        estimate = (
            f"{b.harness} would estimate"
            if b.harness and b.harness_wrote_transcript is False
            else "harness estimate"
        )
        cols = ["request", "context", estimate, "output", "spent so far", "segment"]
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
            cells = [str(r.index), _n(r.context_tokens)]
            if harness:
                cells.append(_n(r.harness_estimate))
            cells += [_n(r.output_tokens), f"{r.cumulative_tokens:,}", str(r.segment)]
            rq.add_row(*cells)
        parts.append(rq)
    return Group(*parts)


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
    for col in ("raw", f"% of {of}", "sent", f"% of {of} "):
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
            f"(policy {fidelity.get('policy')}, deciding with its harness's estimator "
            f"{fidelity.get('estimator')}, trigger {_n(fidelity.get('trigger'))})"
        ),
        title_justify="left",
    )
    table.add_column("event", no_wrap=True)
    for col in ("recorded", "simulated", "harness est.", "line", "est. before"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("")
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


def print_report(report: Report, console: Console | None = None) -> None:
    (console or Console()).print(render_report(report))


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}%"


def print_accuracy(result: AccuracyReport, mode: str | None = None, console: Console | None = None) -> None:
    """The calibration accuracy table: each mode's median, p95 and max absolute error."""
    table = Table(
        title=f"Predicting each request's input before its report ({result.estimator} estimator)",
        title_justify="left",
    )
    table.add_column("mode", no_wrap=True)
    for col in ("median", "p95", "max", "requests"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    table.add_column("how it predicts", style="dim")
    how = {
        "baseline": "last report + chars/4 of what was added",
        "baseline_tiktoken": "last report + tiktoken of what was added",
        "proportional": "weights apportioned from each report",
        "delta": "each report's difference put on what was added",
    }
    for key, stats in result.modes.items():
        table.add_row(
            key,
            _pct(stats.median_pct),
            _pct(stats.p95_pct),
            _pct(stats.max_pct),
            str(stats.n),
            Text("best", style="bold green") if key == result.best else "",
            how.get(key, ""),
        )
    parts: list[RenderableType] = [table]
    if mode is not None:
        rows = Table(title=f"Per request ({mode})", title_justify="left")
        for col in ("request", "reported", "predicted", "error"):
            rows.add_column(col, justify="right")
        for r in result.requests:
            if mode in r.predicted:
                rows.add_row(
                    str(r.request), f"{r.reported:,}", f"{r.predicted[mode]:,}", _pct(r.error_pct.get(mode))
                )
        parts.append(rows)
    (console or Console()).print(Group(*parts))


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def _session_path(row: SessionInfo) -> str:
    """Where a session is: its file, and for one session of an opencode database the `--session`
    that opens it."""
    if row.harness == "opencode" and row.session_id and row.path.suffix == ".db":
        return f"{row.path} --session {row.session_id}"
    return str(row.path)


def print_sessions(rows: list[SessionInfo], console: Console | None = None) -> None:
    """Sessions found on this machine, newest first; a live mark on those written in the last minute."""
    out = console or Console()
    if not rows:
        out.print(
            "No sessions found (Claude Code, Codex, opencode, OpenCollab). Try: context-inspector --sample"
        )
        return
    table = Table(title=f"Sessions ({len(rows):,}), newest first", title_justify="left")
    for col in ("", "harness", "project", "title", "requests", "size", "last activity", "path"):
        table.add_column(col, justify="right" if col in ("requests", "size") else "left")
    for r in rows:
        table.add_row(
            Text("●", style="bold green") if r.live else Text(""),
            r.harness,
            Text(visible(r.project or "—", newlines=False)),
            Text(one_line(r.title or "", 50)),
            "—"
            if r.requests is None
            else (f"~{r.requests:,}" if r.requests_estimated else f"{r.requests:,}"),
            _size(r.size_bytes),
            r.last_activity.strftime("%Y-%m-%d %H:%M"),
            Text(visible(_session_path(r), newlines=False)),
        )
    out.print(table)
