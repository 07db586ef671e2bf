"""Exports: a transcript's report at one request, as JSON, Markdown, HTML or SVG (DESIGN.md §6, §8).

`export(replay, fmt, step=None, redact=False)` returns the whole document as text:

- `json`: the Report (`context-inspector report --json`'s schema), with the pipeline's layers at the
  step;
- `md`: Markdown: the report's facts, the pipeline at the step, and a table of the ledger at the
  step (message, role, tool, calibrated weight, and its fate in each layer), recorded events,
  context per request and load issues;
- `html`: one self-contained page with the same content (inline style, no script, a Content
  Security Policy that forbids loading anything);
- `svg`: the text report rendered by Rich (`Console(record=True, width=120).export_svg`).

`step` is a 1-based request; None means the last one (a transcript without requests has no
pipeline or ledger sections). A step out of range raises `ReplayError`, an unknown format
`ExportError`.

Untrusted content stays inert in every format: control and hiding characters are made visible
(`sanitize.visible`) so a file that is `cat` to a terminal sends no escape sequence; Markdown
escapes the characters that would start markup, HTML escapes everything, the SVG is built from
Rich `Text` (never markup) and JSON is escaped by its encoder plus `sanitize.json_safe`.

With `redact`, every content-derived string (message text, tool names, arguments and results,
titles, previews, descriptions, load issue reasons, model names, skipped record types) goes
through `redact.redact` before anything is written; file paths are kept.
"""

from __future__ import annotations

import html
import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import msgspec
from rich.console import Console

from inspector.model import MediaBlock, Message, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from inspector.replay import Replay, Step
from inspector.shaping import Action

from .redact import redact as redact_text
from .redact import redact_value
from .render import render_report
from .sanitize import json_text, one_line, visible
from .summary import Report, replay_report

FORMATS = ("json", "md", "html", "svg")
SVG_WIDTH = 120
SUMMARY_WIDTH = 100
PATH_KEYS = frozenset({"path", "call_file", "file"})
"""Report keys whose values are file paths: kept as they are by redaction."""

FATE_WORDS: dict[Action, str] = {
    Action.TRUNCATED: "truncated",
    Action.CLEARED: "cleared",
    Action.REMOVED: "removed",
    Action.SUMMARIZED: "summarized",
    Action.KEPT_PINNED: "kept (pinned)",
    Action.KEPT_RECENT: "kept (recent)",
}
UNTOUCHED = "·"
"""The fate of a message a layer passed on as it was."""
GONE = "—"
"""The fate of a message an earlier layer already took out of the view."""


class ExportError(ValueError):
    """An export the user asked for that cannot be made (an unknown format)."""


@dataclass(frozen=True, slots=True)
class LedgerRow:
    """One message of the ledger at a step, as the exports show it."""

    position: int
    id: str
    role: str
    tool: str
    summary: str
    weight: int | None
    fates: tuple[str, ...]
    """One per layer, in pipeline order: a FATE_WORDS word, UNTOUCHED or GONE."""
    sent: bool


@dataclass(frozen=True, slots=True)
class LedgerTable:
    step: int
    layers: tuple[str, ...]
    rows: tuple[LedgerRow, ...]


def export(replay: Replay, fmt: str, step: int | None = None, redact: bool = False) -> str:
    """The report of `replay` at request `step` (None: the last) as a `fmt` document (FORMATS)."""
    kind = fmt.lower().strip()
    if kind not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    k = step if step is not None else (len(replay) or None)
    report = replay_report(replay, step=k)
    if redact:
        report = redact_report(report)
    if kind == "json":
        return json_text(report) + "\n"
    if kind == "svg":
        return to_svg(report)
    table = ledger_table(replay, k, redact) if k is not None else None
    return to_markdown(report, table) if kind == "md" else to_html(report, table)


# -- redaction ---------------------------------------------------------------------------------
def _redact_dump(value: Any, key: str | None = None) -> Any:
    if isinstance(value, str):
        return value if key in PATH_KEYS else redact_text(value)
    if isinstance(value, dict):
        return {redact_text(k): _redact_dump(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_dump(v, key) for v in value]
    return value


def redact_report(report: Report) -> Report:
    """A copy of `report` with every content-derived string redacted (file paths kept)."""
    return msgspec.convert(_redact_dump(msgspec.to_builtins(report)), Report)


# -- the ledger at a step ------------------------------------------------------------------------
def _arguments_text(arguments: dict[str, Any] | str) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True, default=str)


def message_summary(message: Message, redact: bool = False, width: int = SUMMARY_WIDTH) -> str:
    """One line saying what a message holds (text, tool calls, results, reasoning, media), made
    visible; redacted before it is cut, so a secret is never left half there."""
    parts: list[str] = []
    for b in message.blocks:
        if isinstance(b, TextBlock) and b.text.strip():
            parts.append(b.text)
        elif isinstance(b, ToolCallBlock):
            args = b.arguments if not redact else redact_value(b.arguments)
            parts.append(f"{b.name}({_arguments_text(args)})")
        elif isinstance(b, ToolResultBlock):
            parts.append(("[error] " if b.is_error else "") + (b.content or "[empty result]"))
        elif isinstance(b, ReasoningBlock):
            parts.append("[reasoning] " + (b.text or ("[redacted]" if b.redacted else "")))
        elif isinstance(b, MediaBlock):
            parts.append(f"[{b.type} {b.media_type}]".replace(" ]", "]"))
        if sum(len(p) for p in parts) > 4 * width:
            break
    text = " · ".join(one_line(p, 4 * width) for p in parts if p.strip())
    if redact:
        text = redact_text(text)
    return one_line(text, width)


def _tools(message: Message) -> str:
    names = [c.name for c in message.tool_calls] + [r.tool_name or "?" for r in message.tool_results]
    return ", ".join(dict.fromkeys(n for n in names if n))


def _fates(s: Step, message_id: str) -> tuple[str, ...]:
    out: list[str] = []
    view: Sequence[Message] = s.result.input
    for layer in s.result.layers:
        present = any(m.id == message_id for m in view)
        decided = [d for d in layer.decisions if d.message_id == message_id]
        changed = [d for d in decided if d.action.changed]
        if changed:
            out.append(FATE_WORDS[changed[-1].action])
        elif decided:
            out.append(FATE_WORDS[decided[-1].action])
        else:
            out.append(UNTOUCHED if present else GONE)
        view = layer.view
    return tuple(out)


def ledger_table(replay: Replay, step: int, redact: bool = False) -> LedgerTable:
    """The ledger replay holds at request `step`, one row per message with its fate in each layer."""
    s = replay.step(step)
    sent = {m.id for m in s.sent}
    rows = tuple(
        LedgerRow(
            position=i,
            id=m.id,
            role="tool result" if m.is_tool_result else ("summary" if m.is_summary else m.role.value),
            tool=redact_text(_tools(m)) if redact else _tools(m),
            summary=message_summary(m, redact),
            weight=s.weights.get(m.id),
            fates=_fates(s, m.id),
            sent=m.id in sent,
        )
        for i, m in enumerate(s.ledger)
    )
    return LedgerTable(step=step, layers=tuple(layer.label for layer in s.result.layers), rows=rows)


# -- shared facts --------------------------------------------------------------------------------
def _n(v: int | None) -> str:
    return "—" if v is None else f"{v:,}"


def _facts(report: Report) -> list[tuple[str, str]]:
    """The report's head as (label, value) pairs of plain (not yet escaped) text."""
    facts = [("file", report.path), ("format", report.format), ("model", report.model or "unknown")]
    if report.title:
        facts.append(("title", one_line(report.title, 200)))
    if report.session_id:
        facts.append(("session", report.session_id))
    facts.append(("requests", f"{len(report.requests):,}"))
    facts.append(
        ("messages", ", ".join(f"{k} {v:,}" for k, v in report.messages_by_role.items()) or "0"),
    )
    if report.context:
        c = report.context
        facts.append(
            ("context", f"first {c.first:,} · max {c.max:,} (request {c.max_request}) · last {c.last:,}")
        )
    facts.append(
        ("spent", f"{report.cumulative_tokens:,} tokens in all (input + output, across compactions)")
    )
    b = report.budget
    facts.append(
        (
            "budget",
            f"policy {b.policy} · window {_n(b.window)} ({b.window_source}) · trigger {b.trigger:,}"
            f" · target {b.target:,}" + (f" · blocking {b.blocking:,}" if b.blocking is not None else ""),
        )
    )
    if report.tool_calls:
        facts.append(("tool calls", ", ".join(f"{k} {v:,}" for k, v in report.tool_calls.items())))
    if report.skipped:
        facts.append(("skipped", ", ".join(f"{k} {v:,}" for k, v in report.skipped.items())))
    return facts


def _layer_rows(report: Report) -> list[list[str]]:
    rows: list[list[str]] = []
    for layer in report.layers or []:
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
        rows.append(
            [
                layer.label,
                "fired" if layer.fired else "idle",
                f"{layer.tokens_before:,}",
                f"{layer.tokens_after:,}",
                changes or "no change",
                layer.reason,
            ]
        )
    return rows


def _event_rows(report: Report) -> list[list[str]]:
    return [
        [
            e.kind + (f" ({e.layer})" if e.layer else ""),
            e.trigger or "—",
            str(e.after_request),
            _n(e.pre_tokens),
            _n(e.post_tokens if e.post_tokens is not None else e.tokens_saved),
            _n(e.line),
        ]
        for e in report.recorded_events
    ]


def _request_rows(report: Report) -> list[list[str]]:
    return [
        [
            str(r.index),
            _n(r.context_tokens) + (" (est.)" if r.estimated else ""),
            _n(r.output_tokens),
            f"{r.cumulative_tokens:,}",
            str(r.segment),
            r.model or "—",
        ]
        for r in report.requests
    ]


def _ledger_head(table: LedgerTable) -> list[str]:
    return ["#", "message", "role", "tool", "weight", *table.layers, "sent"]


def _ledger_cells(row: LedgerRow) -> list[str]:
    return [
        str(row.position),
        f"{row.id}: {row.summary}" if row.summary else row.id,
        row.role,
        row.tool,
        _n(row.weight),
        *row.fates,
        "yes" if row.sent else "no",
    ]


def _title(report: Report) -> str:
    return f"Context report: {PurePath(report.path).name or report.path}"


# -- Markdown ----------------------------------------------------------------------------------
_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]<>|~&$"})


def md(text: str) -> str:
    """Untrusted text for one Markdown table cell or line: visible, on one line, nothing it holds
    can start markup (emphasis, links, images, HTML, code, table cells)."""
    return visible(text, newlines=False).translate(_MD_SPECIAL)


def _md_table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table of untrusted cells."""
    out = ["| " + " | ".join(md(c) for c in head) + " |"]
    out.append("|" + "|".join("---" for _ in head) + "|")
    out.extend("| " + " | ".join(md(c) for c in row) + " |" for row in rows)
    return out


def to_markdown(report: Report, table: LedgerTable | None) -> str:
    lines = [f"# {md(_title(report))}", ""]
    lines += _md_table(("fact", "value"), _facts(report))
    if report.layers is not None:
        b = report.budget
        lines += [
            "",
            f"## Pipeline at request {report.step}",
            "",
            md(f"policy {b.policy}, trigger {b.trigger:,}, target {b.target:,}"),
            "",
        ]
        lines += _md_table(
            ("layer", "fired", "tokens before", "tokens after", "changes", "why"), _layer_rows(report)
        )
    if table is not None:
        n_sent = sum(1 for r in table.rows if r.sent)
        lines += [
            "",
            f"## Ledger at request {table.step} ({len(table.rows):,} messages, {n_sent:,} sent)",
            "",
        ]
        lines += _md_table(_ledger_head(table), (_ledger_cells(r) for r in table.rows))
        lines += [
            "",
            md(f"{UNTOUCHED} passed on unchanged; {GONE} already taken out by an earlier layer."),
        ]
    if report.recorded_events:
        lines += ["", "## Recorded events", ""]
        lines += _md_table(
            ("kind", "trigger", "after request", "pre tokens", "post / saved", "line"), _event_rows(report)
        )
    if report.subagents:
        lines += ["", "## Subagents", ""]
        lines += _md_table(
            ("agent", "layout", "type", "requests", "messages", "task"),
            (
                [
                    s.agent_id,
                    s.layout,
                    s.agent_type or "—",
                    f"{s.requests:,}",
                    f"{s.messages:,}",
                    one_line(s.description or "", 100),
                ]
                for s in report.subagents
            ),
        )
    if report.abandoned_branches:
        lines += ["", "## Abandoned branches (rewinds)", ""]
        lines += _md_table(
            ("forked from", "messages", "first line", "begins with"),
            (
                [a.fork_id, str(a.messages), str(a.first_line), one_line(a.preview, 100)]
                for a in report.abandoned_branches
            ),
        )
    if report.requests:
        lines += ["", "## Context per request", ""]
        lines += _md_table(
            ("request", "context", "output", "spent so far", "segment", "model"), _request_rows(report)
        )
    if report.load_issues:
        lines += ["", f"## Load issues ({len(report.load_issues):,})", ""]
        lines += _md_table(
            ("where", "reason"), ([f"{i.file}:{i.line}", i.reason] for i in report.load_issues)
        )
    return "\n".join(lines) + "\n"


# -- HTML ----------------------------------------------------------------------------------------
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #1b1f24; background: #fff; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #d0d7de; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.msg { max-width: 60em; overflow-wrap: anywhere; font-family: ui-monospace, monospace; font-size: 12px; }
.fired, .truncated, .cleared, .removed, .summarized { font-weight: 600; color: #9a3412; }
.idle, .gone, .untouched { color: #6e7781; }
p.note { color: #57606a; }
"""


def h(text: str) -> str:
    """Untrusted text for HTML: visible, then every special character escaped."""
    return html.escape(visible(text), quote=True)


def _cell(text: str, cls: str = "") -> str:
    return f'<td class="{cls}">{h(text)}</td>' if cls else f"<td>{h(text)}</td>"


def _html_table(head: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    out = ["<table>", "<tr>" + "".join(f"<th>{h(c)}</th>" for c in head) + "</tr>"]
    for row in rows:
        out.append(
            "<tr>" + "".join(_cell(c, "num" if i in numeric else "") for i, c in enumerate(row)) + "</tr>"
        )
    out.append("</table>")
    return "\n".join(out)


def _fate_class(fate: str) -> str:
    if fate == GONE:
        return "gone"
    if fate == UNTOUCHED:
        return "untouched"
    return fate.split(" ")[0]


def to_html(report: Report, table: LedgerTable | None) -> str:
    title = _title(report)
    body = [f"<h1>{h(title)}</h1>"]
    body.append(
        "<table>" + "".join(f"<tr><th>{h(k)}</th>{_cell(v)}</tr>" for k, v in _facts(report)) + "</table>"
    )
    if report.layers is not None:
        b = report.budget
        body.append(f"<h2>Pipeline at request {report.step}</h2>")
        body.append(
            f'<p class="note">{h(f"policy {b.policy}, trigger {b.trigger:,}, target {b.target:,}")}</p>'
        )
        rows = [
            "<table>",
            "<tr>"
            + "".join(
                f"<th>{c}</th>" for c in ("layer", "fired", "tokens before", "tokens after", "changes", "why")
            )
            + "</tr>",
        ]
        for lr in _layer_rows(report):
            rows.append(
                "<tr>"
                + _cell(lr[0])
                + _cell(lr[1], lr[1])
                + _cell(lr[2], "num")
                + _cell(lr[3], "num")
                + _cell(lr[4])
                + _cell(lr[5])
                + "</tr>"
            )
        rows.append("</table>")
        body.append("\n".join(rows))
    if table is not None:
        n_sent = sum(1 for r in table.rows if r.sent)
        body.append(
            f"<h2>Ledger at request {table.step} ({len(table.rows):,} messages, {n_sent:,} sent)</h2>"
        )
        rows = ["<table>", "<tr>" + "".join(f"<th>{h(c)}</th>" for c in _ledger_head(table)) + "</tr>"]
        for r in table.rows:
            cells = _ledger_cells(r)
            fixed = cells[:5]
            rows.append(
                "<tr>"
                + _cell(fixed[0], "num")
                + _cell(fixed[1], "msg")
                + _cell(fixed[2])
                + _cell(fixed[3])
                + _cell(fixed[4], "num")
                + "".join(_cell(f, _fate_class(f)) for f in r.fates)
                + _cell(cells[-1])
                + "</tr>"
            )
        rows.append("</table>")
        body.append("\n".join(rows))
        body.append(
            f'<p class="note">{h(f"{UNTOUCHED} passed on unchanged; {GONE} already taken out by an earlier layer.")}</p>'
        )
    if report.recorded_events:
        body.append("<h2>Recorded events</h2>")
        body.append(
            _html_table(
                ("kind", "trigger", "after request", "pre tokens", "post / saved", "line"),
                _event_rows(report),
                numeric=(2, 3, 4, 5),
            )
        )
    if report.subagents:
        body.append("<h2>Subagents</h2>")
        body.append(
            _html_table(
                ("agent", "layout", "type", "requests", "messages", "task"),
                (
                    [
                        s.agent_id,
                        s.layout,
                        s.agent_type or "—",
                        f"{s.requests:,}",
                        f"{s.messages:,}",
                        one_line(s.description or "", 100),
                    ]
                    for s in report.subagents
                ),
                numeric=(3, 4),
            )
        )
    if report.abandoned_branches:
        body.append("<h2>Abandoned branches (rewinds)</h2>")
        body.append(
            _html_table(
                ("forked from", "messages", "first line", "begins with"),
                (
                    [a.fork_id, str(a.messages), str(a.first_line), one_line(a.preview, 100)]
                    for a in report.abandoned_branches
                ),
                numeric=(1, 2),
            )
        )
    if report.requests:
        body.append("<h2>Context per request</h2>")
        body.append(
            _html_table(
                ("request", "context", "output", "spent so far", "segment", "model"),
                _request_rows(report),
                numeric=(0, 1, 2, 3, 4),
            )
        )
    if report.load_issues:
        body.append(f"<h2>Load issues ({len(report.load_issues):,})</h2>")
        body.append(
            _html_table(("where", "reason"), ([f"{i.file}:{i.line}", i.reason] for i in report.load_issues))
        )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        f"<title>{h(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


# -- SVG -----------------------------------------------------------------------------------------
def to_svg(report: Report) -> str:
    """The text report as Rich draws it, recorded and exported to SVG."""
    console = Console(
        record=True, width=SVG_WIDTH, file=io.StringIO(), color_system="truecolor", force_terminal=True
    )
    console.print(render_report(report))
    return console.export_svg(title=visible(_title(report), newlines=False))
