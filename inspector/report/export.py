"""Exports: a transcript's report at one request, as JSON, Markdown, HTML or SVG (docs/DESIGN.md §6, §8).

`export(replay, fmt, step=None, redact=False)` returns the whole document as text:

- `json`: the Report (`context-inspector report --json`'s schema), with the pipeline's layers at the
  step;
- `md`: Markdown: the report's facts, the pipeline at the step, and a table of the ledger at the
  step (message, role, tool, calibrated weight, and its fate in each layer), recorded events,
  context per request and load issues;
- `html`: one self-contained page that reads as a report (`html_page`): the facts, the context
  chart as inline SVG, what fills the window, the findings linked to their messages, the
  pipeline and the ledger, then the rest of the Markdown's content (inline style, no script, a
  Content Security Policy that forbids loading anything);
- `svg`: the text report rendered by Rich (`Console(record=True, width=120).export_svg`).

`step` is a 1-based request; None means the last one (a transcript without requests has no
pipeline or ledger sections). A step out of range raises `ReplayError`, an unknown format
`ExportError`.

Untrusted content stays inert in every format: control and hiding characters are made visible
(`sanitize.visible`) so a file that is `cat` to a terminal sends no escape sequence; Markdown
escapes the characters that would start markup, HTML escapes everything, the SVG is built from
Rich `Text` (never markup) and JSON is escaped by its encoder plus `sanitize.json_safe`.

With `redact`, every string of every export (message text, tool names, arguments and results,
titles, previews, descriptions, ids, load issue reasons, model names, skipped record types, file
paths) goes through `redact.redact` before anything is cut or written: a ledger summary redacts
each part's first line whole and cuts after; a preview a reader already cut loses its last word
too (`redact.redact_cut`).
"""

from __future__ import annotations

import html
import io
import json
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec
from rich.console import Console

from inspector.model import (
    MediaBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Transcript,
)
from inspector.model.bulk import paused_gc
from inspector.model.cost import cost_line
from inspector.model.sanitize import json_text, one_line, visible
from inspector.replay import Replay, Step
from inspector.shaping import Action

from .redact import redact as redact_text
from .redact import redact_cut, redact_value
from .render import render_report
from .summary import Report, attach_cost, load_issues_title, replay_report

if TYPE_CHECKING:
    from .html_page import FindingLike

FORMATS = ("json", "md", "html", "svg")
SVG_WIDTH = 120
SUMMARY_WIDTH = 100

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


class LedgerRow(NamedTuple):
    """One message of the ledger at a step, as the exports show it (a tuple: one is made per
    message of the ledger, 100,000 in a long session)."""

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


def export(
    replay: Replay,
    fmt: str,
    step: int | None = None,
    redact: bool = False,
    findings: Sequence[FindingLike] | None = None,
    checks_left_out: Sequence[str] = (),
) -> str:
    """The report of `replay` at request `step` (None: the last) as a `fmt` document (FORMATS).

    `findings` (`inspector.findings.find_all(replay)`, which the report cannot import: it sits
    above it) go into the HTML page, each linked to its messages; None leaves them out.
    `checks_left_out`: the checks not run, which the page names (see `html_page.shaping_fits`)."""
    kind = fmt.lower().strip()
    if kind not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    k = step if step is not None else (len(replay) or None)
    report = attach_cost(replay_report(replay, step=k), replay.transcript)
    if redact:
        report = redact_report(report)
    if kind == "json":
        return json_text(report) + "\n"
    if kind == "svg":
        return to_svg(report)
    with paused_gc():  # a row (tuples, lists) per message: nothing to collect, only to rescan
        table = ledger_table(replay, k, redact) if k is not None else None
        if kind == "md":
            return to_markdown(report, table)
        from .html_page import page_facts, to_html

        return to_html(report, table, page_facts(replay, report, table, findings, redact, checks_left_out))


# -- never over an input -------------------------------------------------------------------------
DB_SIBLINGS = ("-wal", "-shm", "-journal")
"""Files SQLite keeps beside a database: an export written as one would be read as its log."""


def _files_under(folder: Path) -> Iterator[Path]:
    for root, _dirs, files in os.walk(folder):
        for name in files:
            yield Path(root) / name


def input_files(path: str, transcript: Transcript) -> tuple[list[Path], list[Path]]:
    """What reading `path` (as `transcript`) took in: (files, folders whose every file counts).

    Files: the path, the transcript's own file, its subagents' files, compaction call files,
    every file a message or a load issue came from, a database's -wal/-shm/-journal (present or
    not). Folders: the path when it is one (a session folder, the folder holding a database) and
    a Claude Code session's own folder beside its file (subagents, their meta files, tool results)."""
    p = Path(path)
    files: set[Path] = set()
    folders: list[Path] = []
    if p.is_dir():
        folders.append(p)
    else:
        files.add(p)
    named = {transcript.path, *(s.path for s in transcript.subagents if s.path)}
    named |= {e.call_file for e in transcript.events if e.call_file}
    named |= {i.file for i in transcript.load_issues}
    named |= {m.origin.file for m in transcript.messages if m.origin is not None}
    for name in named:
        f = Path(name)
        files.add(f)
        if f.suffix == ".db" or f.name.endswith(".sqlite"):
            files.update(f.with_name(f.name + suffix) for suffix in DB_SIBLINGS)
    own = Path(transcript.path)
    if own.suffix == ".jsonl" and own.with_suffix("").is_dir():
        folders.append(own.with_suffix(""))
    return sorted(files), folders


def output_clash(output: str, path: str, transcript: Transcript) -> str | None:
    """The input `output` would overwrite or write into (the same file by path, hard link or
    symbolic link; or a file inside a folder that was read), or None when it is none of them."""
    out = Path(output)
    try:
        target = out.resolve()
    except (OSError, RuntimeError):
        return None  # (a link loop: the write fails with its own message)
    try:
        st = out.stat()
        inode: tuple[int, int] | None = (st.st_dev, st.st_ino)
    except OSError:
        inode = None
    files, folders = input_files(path, transcript)
    for folder in folders:
        base = folder.resolve()
        if target == base or base in target.parents:
            return f"{output} is inside {folder}, which was read as the transcript"
    candidates = [*files, *(f for folder in folders for f in _files_under(folder))]
    for f in candidates:
        try:
            if f.resolve() == target:
                return f"{output} is {f}, an input of the transcript"
            if inode is not None:
                fs = f.stat()
                if (fs.st_dev, fs.st_ino) == inode:
                    return f"{output} is the same file as {f}, an input of the transcript"
        except OSError:
            continue
    return None


# -- redaction ---------------------------------------------------------------------------------
READER_CUT = 120
"""Characters a reader keeps of an abandoned branch's preview or a subagent's first task (the
Claude Code reader cuts them so): a secret may straddle that cut, so its last word goes too."""
CUT_KEYS = frozenset({"preview", "description"})
"""Report keys whose values a reader may have cut to READER_CUT."""
HEAD = 8_192
"""Characters of a part's first line a ledger summary looks at: what is redacted, before anything
is cut. More than any secret the patterns take whole (a key block cut here is still recognised)."""


NAME_PREFIXES = ("tool:",)
"""Prefixes of the composition's part keys that stand before a tool's name (`replay.composition`)."""


def _redact_dump(value: Any, key: str | None = None) -> Any:
    if isinstance(value, str):
        if key in CUT_KEYS:
            return redact_cut(value, READER_CUT)
        # a label joins names with " · " ("tool results · NAME") and a key prefixes one ("tool:NAME"):
        # each name is redacted as itself too, as a rule anchored at the start of a value would miss
        # it after the prefix
        if value.startswith(NAME_PREFIXES):
            prefix, _, name = value.partition(":")
            return f"{prefix}:{_redact_dump(name)}"
        return " · ".join(redact_text(part) for part in redact_text(value).split(" · "))
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            rk = redact_text(k) if isinstance(k, str) else k
            rv = _redact_dump(v, k)
            if rk in out and type(out[rk]) is int and type(rv) is int:
                out[rk] += rv  # two names that differed only by a secret: one count
            elif rk not in out:
                out[rk] = rv
        return out
    if isinstance(value, list):
        return [_redact_dump(v, key) for v in value]
    return value


def redact_report(report: Report) -> Report:
    """A copy of `report` with every string redacted: content, names, ids, reasons and paths (an
    ordinary path matches no pattern, one holding a key loses the key)."""
    return msgspec.convert(_redact_dump(msgspec.to_builtins(report)), Report)


# -- the ledger at a step ------------------------------------------------------------------------
def _arguments_text(arguments: dict[str, Any] | str) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True, default=str)


def _redact_arguments(value: Any) -> Any:
    """`redact_value` on a call's arguments, each string cut to HEAD first (a summary shows less)."""
    if isinstance(value, str):
        return redact_text(value[:HEAD])
    if isinstance(value, dict):
        return redact_value({k: _redact_arguments(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return [_redact_arguments(v) for v in value]
    return value


_NON_SPACE = re.compile(r"\S")
_PLAIN_LINE = re.compile(r"[\x20-\x7e]*")
"""Printable ASCII without a line break: a text that is its own one visible line."""


def _first_line(text: str) -> str:
    """The first non-empty line of `text`, stripped, at most HEAD characters of it (without
    splitting the rest of a large text)."""
    m = _NON_SPACE.search(text)
    if m is None:
        return ""
    lines = text[m.start() : m.start() + HEAD].splitlines()
    return lines[0].strip() if lines else ""


def message_summary(message: Message, redact: bool = False, width: int = SUMMARY_WIDTH) -> str:
    """One line saying what a message holds (text, tool calls, results, reasoning, media), made
    visible: the first line of each part, redacted before anything is cut, so a secret is never
    left half there."""
    blocks = message.blocks
    if len(blocks) == 1 and type(blocks[0]) is TextBlock:
        text = blocks[0].text
        if len(text) <= width and _PLAIN_LINE.fullmatch(text):
            # one short line of plain ASCII (most prompts and answers): nothing to split or escape
            line = text.strip()
            if redact:
                line = visible(redact_text(line), newlines=False)
            return line if len(line) <= width else line[: width - 1] + "…"
    parts: list[str] = []
    seen = 0
    for b in blocks:
        if isinstance(b, TextBlock):
            part = b.text
        elif isinstance(b, ToolCallBlock):
            if redact:  # each on its own: a name glued to its arguments is no `NAME=value`
                part = f"{redact_text(b.name[:HEAD])}({_arguments_text(_redact_arguments(b.arguments))})"
            else:
                part = f"{b.name}({_arguments_text(b.arguments)})"
        elif isinstance(b, ToolResultBlock):
            part = ("[error] " if b.is_error else "") + (b.content or "[empty result]")
        elif isinstance(b, ReasoningBlock):
            part = "[reasoning] " + (b.text or ("[redacted]" if b.redacted else ""))
        elif isinstance(b, MediaBlock):
            part = f"[{b.type} {b.media_type}]".replace(" ]", "]")
        else:
            continue
        line = _first_line(part)
        if line:
            if redact:
                line = redact_text(line)
            line = visible(line, newlines=False)
            parts.append(line if len(line) <= 4 * width else line[: 4 * width - 1] + "…")
        seen += len(part)
        if seen > 4 * width:
            break
    text = " · ".join(parts)  # (each part one visible, stripped line already)
    return text if len(text) <= width else text[: width - 1] + "…"


def _tools(message: Message) -> str:
    blocks = message.blocks
    if len(blocks) == 1:  # most messages: read once, no lists
        b = blocks[0]
        if isinstance(b, ToolCallBlock):
            return b.name
        return (b.tool_name or "?") if isinstance(b, ToolResultBlock) else ""
    calls: list[str] = []
    results: list[str] = []
    for b in message.blocks:
        if isinstance(b, ToolCallBlock):
            calls.append(b.name)
        elif isinstance(b, ToolResultBlock):
            results.append(b.tool_name or "?")
    if not calls and not results:
        return ""
    return ", ".join(dict.fromkeys(n for n in calls + results if n))


class _Fates:
    """The fate of each message of step `s` in each layer, in pipeline order: its last change,
    else its last decision, else UNTOUCHED if the layer was given it and GONE if not.

    One pass over each layer's view and decisions (it looked every message up in every view:
    quadratic in the messages of a segment); a message no layer decided on and every layer was
    given (most of them) gets the one all-untouched tuple."""

    def __init__(self, s: Step) -> None:
        self.layers: list[tuple[frozenset[str], dict[str, str]]] = []
        ledger = {m.id for m in s.ledger}
        special: set[str] = set()
        view: Sequence[Message] = s.result.input
        for layer in s.result.layers:
            words: dict[str, str] = {}
            changed: set[str] = set()
            for d in layer.decisions:
                if d.action.changed:
                    words[d.message_id] = FATE_WORDS[d.action]
                    changed.add(d.message_id)
                elif d.message_id not in changed:
                    words[d.message_id] = FATE_WORDS[d.action]
            present = frozenset(m.id for m in view)
            self.layers.append((present, words))
            special |= words.keys()
            special |= ledger - present
            view = layer.view
        self.special = frozenset(special)
        self.untouched = (UNTOUCHED,) * len(self.layers)

    def of(self, message_id: str) -> tuple[str, ...]:
        if message_id not in self.special:
            return self.untouched
        return tuple(
            words.get(message_id) or (UNTOUCHED if message_id in present else GONE)
            for present, words in self.layers
        )


def _role(m: Message) -> str:
    blocks = m.blocks
    if blocks and isinstance(blocks[0], ToolResultBlock | MediaBlock) and m.is_tool_result:
        return "tool result"
    return "summary" if m.is_summary else m.role.value


def ledger_table(replay: Replay, step: int, redact: bool = False) -> LedgerTable:
    """The ledger replay holds at request `step`, one row per message with its fate in each layer."""
    s = replay.step(step)
    sent = {m.id for m in s.sent}
    fates = _Fates(s)
    weights = s.weights  # (a property that looks the step's weights up: once, not per row)
    rows = []
    for i, m in enumerate(s.ledger):
        mid = m.id
        tools = _tools(m)
        rows.append(
            LedgerRow(
                i,
                redact_text(mid) if redact else mid,
                _role(m),
                redact_text(tools) if redact and tools else tools,
                message_summary(m, redact),
                weights.get(mid),
                fates.of(mid),
                mid in sent,
            )
        )
    return LedgerTable(step=step, layers=tuple(layer.label for layer in s.result.layers), rows=tuple(rows))


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
    if report.cost is not None:
        facts.append(("cost", cost_line(report.cost)))
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


def _distance_rows(report: Report) -> list[list[str]]:
    """The step's context and the harness's estimate, each with its distance to every line."""
    d = report.distance or {}
    rows = [["calibrated context", f"{d.get('context', 0):,}", str(d.get("text", ""))]]
    if "harness_text" in d:
        rows.append(["the harness's own estimate", f"{d.get('harness_estimate', 0):,}", str(d["harness_text"])])
    return rows


def _composition_rows(report: Report) -> list[list[str]]:
    """What fills the window at the step: each part, raw and sent, tokens and share."""
    parts = (report.composition or {}).get("parts", [])
    return [
        [
            str(p.get("label", "")),
            f"{p.get('raw', 0):,}",
            f"{float(p.get('raw_share', 0.0)):.1%}",
            f"{p.get('sent', 0):,}",
            f"{float(p.get('sent_share', 0.0)):.1%}",
        ]
        for p in parts
    ]


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
            _n(r.context_tokens) + (" (predicted)" if r.estimated else ""),
            _n(r.output_tokens),
            f"{r.cumulative_tokens:,}",
            str(r.segment),
            r.model or "—",
        ]
        for r in report.requests
    ]


def _html_requests(report: Report) -> str:
    """The context-per-request table: `_html_table` of `_request_rows`, written out (one row per
    request: tens of thousands). Only the model is transcript text; the rest are our numbers."""
    models: dict[str, str] = {}
    out = [
        "<table>",
        "<tr>"
        + "".join(
            f"<th>{c}</th>" for c in ("request", "context", "output", "spent so far", "segment", "model")
        )
        + "</tr>",
    ]
    for r in report.requests:
        model = r.model or "—"
        m = models.get(model)
        if m is None:
            m = models[model] = h(model)
        est = " (predicted)" if r.estimated else ""
        out.append(
            f'<tr><td class="num">{r.index}</td><td class="num">{_n(r.context_tokens)}{est}</td>'
            f'<td class="num">{_n(r.output_tokens)}</td><td class="num">{r.cumulative_tokens:,}</td>'
            f'<td class="num">{r.segment}</td><td>{m}</td></tr>'
        )
    out.append("</table>")
    return "\n".join(out)


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


_MD_PLAIN_ASCII = re.compile(r"[^\\`*_\[\]<>|~&$\x00-\x1f\x7f]*")


def md(text: str) -> str:
    """Untrusted text for one Markdown table cell or line: visible, on one line, nothing it holds
    can start markup (emphasis, links, images, HTML, code, table cells)."""
    if text.isascii() and _MD_PLAIN_ASCII.fullmatch(text):
        return text  # (nothing to escape or make visible: most cells are numbers and words)
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
    if report.distance:
        lines += ["", f"## Distance at request {report.step}", ""]
        lines += _md_table(("estimate", "tokens", "distance"), _distance_rows(report))
    if report.composition:
        lines += ["", f"## What fills the window at request {report.step}", ""]
        lines += _md_table(("part", "raw", "raw %", "sent", "sent %"), _composition_rows(report))
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
        lines += ["", f"## {load_issues_title(report)}", ""]
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


_HTML_PLAIN_ASCII = re.compile(r"[^&<>\"'\x00-\x08\x0b-\x1f\x7f]*")


def h(text: str) -> str:
    """Untrusted text for HTML: visible, then every special character escaped."""
    if text.isascii() and _HTML_PLAIN_ASCII.fullmatch(text):
        return text  # (nothing to escape or make visible: most cells are numbers and words)
    return html.escape(visible(text), quote=True)


def _cell(text: str, cls: str = "") -> str:
    return f'<td class="{cls}">{h(text)}</td>' if cls else f"<td>{h(text)}</td>"


def _html_table(head: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    out = ["<table>", "<tr>" + "".join(f"<th>{h(c)}</th>" for c in head) + "</tr>"]
    opens = [('<td class="num">' if i in numeric else "<td>") for i in range(len(head))]
    seen: dict[str, str] = {}  # cells repeat (models, segments, "—"): each is escaped once
    for row in rows:
        cells = []
        for i, c in enumerate(row):
            e = seen.get(c)
            if e is None:
                e = h(c)
                if len(seen) < 4096:
                    seen[c] = e
            cells.append(opens[i] + e + "</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _fate_class(fate: str) -> str:
    if fate == GONE:
        return "gone"
    if fate == UNTOUCHED:
        return "untouched"
    return fate.split(" ")[0]


# -- SVG -----------------------------------------------------------------------------------------
def to_svg(report: Report) -> str:
    """The text report as Rich draws it, recorded and exported to SVG."""
    console = Console(
        record=True, width=SVG_WIDTH, file=io.StringIO(), color_system="truecolor", force_terminal=True
    )
    console.print(render_report(report))
    return console.export_svg(title=visible(_title(report), newlines=False))
