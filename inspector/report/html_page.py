"""The HTML export as a report to read (`export --format html`): one self-contained page.

What it shows, in reading order: the session's facts (harness and version, model, requests,
compactions, cost with the price table's date); the context chart, inline SVG (the context of
every request, raw and sent after shaping, the trigger and window lines, the recorded compactions
and the chosen request marked, labelled axes); what fills the window at the chosen request (the
report's composition, `report --step K` and the app's `x` view: a stacked bar per side and its
table); the findings, each linking to its messages (`#msg-…`); the pipeline's layers, the
distance to the lines, and the ledger of the chosen request (every message with its weight and
what each layer did, each row an anchor); then recorded events, subagents, rewinds, the requests
and load issues.

Every figure is the core's: the report (`replay_report` + cost), its composition, the findings
(`inspector.findings`, computed by the caller: the report sits below the findings), each step's
`sent_tokens`. Nothing is computed here but the drawing. Transcript text (message summaries,
ids, tool names, model names, findings' quotes, paths) is escaped (`export.h`); the page loads
nothing (a Content Security Policy forbids it) and runs no script.

The sent line needs every request shaped, in order. Where that is more work than SENT_BUDGET
(ledger messages over all requests), only the chosen request's is drawn, and the chart says so;
the findings that shape every request are then left out too (`shaping_fits`), and the page says so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from inspector.model import EventKind, Message
from inspector.model.cost import cost_line, money_text
from inspector.model.sanitize import one_line
from inspector.replay import Replay

from .export import (
    GONE,
    STYLE,
    UNTOUCHED,
    LedgerTable,
    _cell,
    _composition_rows,
    _distance_rows,
    _event_rows,
    _facts,
    _fate_class,
    _html_table,
    _layer_rows,
    _ledger_head,
    _n,
    _role,
    _title,
    h,
    message_summary,
)
from .redact import redact as redact_text
from .summary import Report, load_issues_title, plural

SENT_BUDGET = 20_000_000
"""Ledger messages the sent line may shape in all (about 0.3 to 1.4 s on this machine: a step costs
15 to 70 ns per message of its ledger). Every request of every corpus session fits (the largest,
conneroisu-b9712494, is 0.2 million); a 20,000-line chain (10,000 requests, 50 million) is drawn
at its chosen request only, and the findings that shape every request are left out (`shaping_fits`)."""

CHART_W, CHART_H = 960, 340
LEFT, RIGHT, TOP, BOTTOM = 72, 120, 36, 48
BAR_W, BAR_H = 720, 26

PART_COLOURS = {
    "overhead": "#6e7781",
    "pinned": "#8250df",
    "memory": "#a475f9",
    "skills": "#bf8700",
    "task": "#0969da",
    "summary": "#1a7f37",
    "project": "#54aeff",
    "conversation": "#218bff",
    "thinking": "#d4a72c",
    "free": "#eaeef2",
    "buffer": "#ffd8b5",
    "reserve": "#ffcecb",
    "over": "#cf222e",
}
TOOL_COLOURS = ("#fb8f44", "#e16f24", "#bc4c00", "#f6b26b", "#953800", "#fd8c73", "#c4432b")


class FindingLike(Protocol):
    """What the page reads of a finding (`inspector.findings.Finding`)."""

    @property
    def kind(self) -> str: ...
    @property
    def severity(self) -> str: ...
    @property
    def request(self) -> int: ...
    @property
    def message_ids(self) -> tuple[str, ...]: ...
    @property
    def explanation(self) -> str: ...
    @property
    def tokens(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class Link:
    anchor: str
    label: str


@dataclass(frozen=True, slots=True)
class FindingRow:
    kind: str
    severity: str
    request: int
    explanation: str
    tokens: int | None
    links: tuple[Link, ...]


@dataclass(frozen=True, slots=True)
class ElsewhereRow:
    """A message a finding names that the chosen ledger does not hold."""

    anchor: str
    id: str
    role: str
    where: str
    summary: str


@dataclass(slots=True)
class PageFacts:
    """What the page shows besides the report and the ledger table: computed by `page_facts`."""

    harness: str
    version: str | None
    sent: dict[int, int] = field(default_factory=dict)
    """Request -> tokens the policy's pipeline sends there (every request, or the chosen one)."""
    partial: bool = False
    """True: the sent line is not drawn at every request (only at the chosen one)."""
    findings: tuple[FindingRow, ...] | None = None
    """None: the findings were not computed (an `export()` called without them)."""
    checks_left_out: tuple[str, ...] = ()
    """Checks not run for the page (they shape every request: more than SENT_BUDGET of work)."""
    elsewhere: tuple[ElsewhereRow, ...] = ()
    anchors: tuple[str, ...] = ()
    """The anchor of each ledger row, in ledger order."""


# -- anchors ------------------------------------------------------------------------------------
_SAFE = re.compile(r"[A-Za-z0-9-]+")
_UNSAFE = re.compile(r"[^A-Za-z0-9-]")


def anchor_of(message_id: str) -> str:
    """`msg-` and the id, every character but ASCII letters, digits and `-` written `_xxxx` (hex):
    one id, one anchor, and nothing of it can leave the attribute."""
    if _SAFE.fullmatch(message_id):
        return "msg-" + message_id
    return "msg-" + _UNSAFE.sub(lambda m: f"_{ord(m.group(0)):04x}", message_id)


class _Anchors:
    """Message id (as the transcript has it) -> its anchor, made from the id as the page shows it
    (redacted with --redact: an anchor leaks nothing the text does not), unique on the page."""

    def __init__(self, redact: bool) -> None:
        self.redact = redact
        self.by_id: dict[str, str] = {}
        self.used: set[str] = set()

    def shown(self, mid: str) -> str:
        return redact_text(mid) if self.redact else mid

    def add(self, mid: str) -> str:
        a = self.by_id.get(mid)
        if a is not None:
            return a
        a = base = anchor_of(self.shown(mid))
        n = 1
        while a in self.used:
            n += 1
            a = f"{base}-{n}"
        self.used.add(a)
        self.by_id[mid] = a
        return a


# -- the sent line -----------------------------------------------------------------------------
def shaping_work(replay: Replay) -> int:
    """Ledger messages shaping every request of `replay` goes through (what a step costs grows with
    its ledger: a session of n requests in one segment is about n² / 2 of them)."""
    return sum(r.ledger_len + 1 for r in replay.transcript.requests)


def shaping_fits(replay: Replay, budget: int = SENT_BUDGET) -> bool:
    """Whether every request can be shaped for the page: the sent line drawn at every request and
    the findings that shape every request run (else a sample, and the findings that do not)."""
    return shaping_work(replay) <= budget


def sent_series(replay: Replay, step: int | None, budget: int = SENT_BUDGET) -> tuple[dict[int, int], bool]:
    """What the pipeline sends at each request (`Step.result.sent_tokens`), and whether it is
    missing at some: every request, shaped in order (each step builds on the calibration of the
    one before: a request shaped out of order costs a pass over its whole ledger, 40 ms at 10,000
    messages), where that is at most `budget` of work (`shaping_work`); else only the chosen
    request's, which the report shaped already."""
    n = len(replay)
    if n == 0:
        return {}, False
    if shaping_work(replay) <= budget:
        return {k: replay.step(k).result.sent_tokens for k in range(1, n + 1)}, False
    return ({step: replay.step(step).result.sent_tokens} if step is not None else {}), True


# -- gathering ---------------------------------------------------------------------------------
def page_facts(
    replay: Replay,
    report: Report,
    table: LedgerTable | None,
    findings: Sequence[FindingLike] | None,
    redact: bool,
    left_out: Sequence[str] = (),
) -> PageFacts:
    from inspector.harness_rules import recorded_version

    transcript = replay.transcript
    version = recorded_version(transcript)
    facts = PageFacts(
        harness=replay.harness,
        version=(redact_text(version) if redact else version) if version else None,
    )
    facts.sent, facts.partial = sent_series(replay, report.step)
    facts.checks_left_out = tuple(left_out)
    anchors = _Anchors(redact)
    ledger: tuple[Message, ...] = ()
    if table is not None:
        ledger = replay.step(table.step).ledger
        facts.anchors = tuple(anchors.add(m.id) for m in ledger)
    in_ledger = set(anchors.by_id)
    if findings is None:
        return facts
    rows: list[FindingRow] = []
    elsewhere: list[ElsewhereRow] = []
    for f in findings:
        mids = list(f.message_ids)
        if not mids and 1 <= f.request <= len(replay):
            # a finding about a request as a whole: its link is the message the request answered
            last = transcript.ledger_tuple(f.request)
            if last:
                mids = [last[-1].id]
        links: list[Link] = []
        for mid in dict.fromkeys(mids):
            known = mid in anchors.by_id
            a = anchors.add(mid)
            if not known and mid not in in_ledger:
                elsewhere.append(_elsewhere(replay, mid, a, anchors.shown(mid), redact))
            links.append(Link(a, one_line(anchors.shown(mid), 16)))
        text = redact_text(f.explanation) if redact else f.explanation
        rows.append(FindingRow(f.kind, f.severity, f.request, text, f.tokens, tuple(links)))
    facts.findings = tuple(rows)
    facts.elsewhere = tuple(elsewhere)
    return facts


def _elsewhere(replay: Replay, mid: str, anchor: str, shown: str, redact: bool) -> ElsewhereRow:
    try:
        m = replay.transcript.message(mid)
    except KeyError:
        return ElsewhereRow(anchor, shown, "—", "not in the transcript's messages", "")
    held = replay.requests_holding(mid)
    where = (
        f"in the ledger of requests {held[0]}–{held[-1]}"
        if len(held) > 1
        else (
            f"in the ledger of request {held[0]}" if held else "in no request's ledger (a response after it)"
        )
    )
    if m.origin is not None:
        where += f"; line {m.origin.line}"
    return ElsewhereRow(anchor, shown, _role(m), where, message_summary(m, redact))


# -- the chart ---------------------------------------------------------------------------------
def _nice(top: float) -> float:
    """A round tick step giving about five ticks up to `top`."""
    if top <= 0:
        return 1.0
    raw = top / 5
    mag = 10.0 ** math.floor(math.log10(raw))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= m * mag:
            return m * mag
    return 10.0 * mag


def tokens_label(v: float) -> str:
    """An axis figure: 900, 12k, 167k, 1.2M."""
    if v < 1_000:
        return f"{v:g}"
    if v < 1_000_000:
        return f"{v / 1000:g}k"
    return f"{v / 1_000_000:g}M"


def chart_svg(report: Report, facts: PageFacts) -> str:
    """The context per request, raw and sent, with the trigger, window and compactions."""
    rows = report.requests
    n = len(rows)
    b = report.budget
    raw = [(r.index, r.context_tokens) for r in rows if r.context_tokens is not None]
    sent = sorted(facts.sent.items())
    peak = max(
        [v for _, v in raw] + [v for _, v in sent] + [b.trigger] + ([b.window] if b.window else []) + [1]
    )
    step_y = _nice(peak * 1.04)
    y_top = step_y * math.ceil(peak * 1.04 / step_y)
    pw, ph = CHART_W - LEFT - RIGHT, CHART_H - TOP - BOTTOM

    def x(k: float) -> float:
        return LEFT + (pw / 2 if n <= 1 else (k - 1) / (n - 1) * pw)

    def y(v: float) -> float:
        return TOP + ph * (1 - v / y_top)

    out = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {CHART_W} {CHART_H}" '
        f'width="{CHART_W}" height="{CHART_H}" role="img" aria-labelledby="chart-title">',
        '<title id="chart-title">Context per request: raw and sent after shaping</title>',
    ]
    # y axis: gridlines and figures
    v = 0.0
    while v <= y_top + 1e-9:
        yy = y(v)
        out.append(f'<line class="grid" x1="{LEFT}" y1="{yy:.1f}" x2="{LEFT + pw}" y2="{yy:.1f}"/>')
        out.append(
            f'<text class="tick" x="{LEFT - 6}" y="{yy + 4:.1f}" text-anchor="end">{tokens_label(v)}</text>'
        )
        v += step_y
    # x axis: requests
    out.append(f'<line class="axis" x1="{LEFT}" y1="{TOP + ph}" x2="{LEFT + pw}" y2="{TOP + ph}"/>')
    out.append(f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + ph}"/>')
    if n:
        xs = _nice(max(1, n - 1) * 1.0)
        xs = max(1.0, round(xs))
        ticks = sorted({1, n, *range(int(xs), n, int(xs))})
        for k in ticks:
            if k != n and n - k < xs / 3 and k != 1:
                continue  # too close to the last figure
            xx = x(k)
            out.append(
                f'<line class="axis" x1="{xx:.1f}" y1="{TOP + ph}" x2="{xx:.1f}" y2="{TOP + ph + 4}"/>'
            )
            out.append(
                f'<text class="tick" x="{xx:.1f}" y="{TOP + ph + 17}" text-anchor="middle">{k:,}</text>'
            )
    out.append(
        f'<text class="label" x="{LEFT + pw / 2:.0f}" y="{CHART_H - 8}" text-anchor="middle">request</text>'
    )
    out.append(
        f'<text class="label" transform="translate(16 {TOP + ph / 2:.0f}) rotate(-90)" '
        'text-anchor="middle">tokens in context</text>'
    )
    # the lines every layer reads
    for cls, value, word in (("window", b.window, "window"), ("trigger", b.trigger, "trigger")):
        if value is None:
            continue
        yy = y(value)
        out.append(
            f'<line class="{cls}" data-value="{value}" x1="{LEFT}" y1="{yy:.1f}" x2="{LEFT + pw}" y2="{yy:.1f}"/>'
        )
        out.append(f'<text class="{cls}" x="{LEFT + pw + 6}" y="{yy + 4:.1f}">{word} {value:,}</text>')
    # recorded compactions (and fresh contexts), between the request before and the one after
    for e in report.recorded_events:
        if e.kind not in (EventKind.COMPACTION.value, EventKind.CONTEXT_CLEARED.value) or e.after_request < 1:
            continue
        xx = x(min(n, e.after_request + 0.5)) if n > 1 else x(1)
        what = "compaction" if e.kind == EventKind.COMPACTION.value else "fresh context"
        detail = ", ".join(
            p
            for p in (
                e.trigger or "",
                f"{e.pre_tokens:,} before" if e.pre_tokens is not None else "",
                f"{e.post_tokens:,} after" if e.post_tokens is not None else "",
            )
            if p
        )
        tip = f"{what} recorded after request {e.after_request}" + (f" ({detail})" if detail else "")
        out.append(
            f'<g class="compaction" data-after="{e.after_request}"><title>{h(tip)}</title>'
            f'<line x1="{xx:.1f}" y1="{TOP}" x2="{xx:.1f}" y2="{TOP + ph}"/>'
            f'<text x="{xx:.1f}" y="{TOP + 10}" text-anchor="middle">◆</text></g>'
        )
    if report.step is not None and n:
        xx = x(report.step)
        out.append(
            f'<g class="step"><line x1="{xx:.1f}" y1="{TOP}" x2="{xx:.1f}" y2="{TOP + ph}"/>'
            f'<text x="{xx:.1f}" y="{TOP + ph + 32}" text-anchor="middle">▲ request {report.step:,}</text></g>'
        )
    # the two lines: one point per request
    for cls, points in (("raw", raw), ("sent", sent)):
        if not points:
            continue
        coords = " ".join(f"{x(k):.1f},{y(v):.1f}" for k, v in points)
        out.append(f'<polyline class="{cls}" data-points="{len(points)}" points="{coords}"/>')
        if len(points) == 1:
            ((k, v),) = points
            out.append(f'<circle class="{cls}" cx="{x(k):.1f}" cy="{y(v):.1f}" r="3"/>')
    # legend
    lx, ly = LEFT + 4.0, 14
    for cls, word in (
        ("raw", "context: the ledger the harness sent"),
        ("sent", f"sent after shaping ({b.policy})"),
        ("compaction", "compaction recorded"),
    ):
        out.append(f'<line class="key {cls}" x1="{lx:.0f}" y1="{ly}" x2="{lx + 18:.0f}" y2="{ly}"/>')
        out.append(f'<text class="key" x="{lx + 23:.0f}" y="{ly + 4}">{h(word)}</text>')
        lx += 30 + 6.2 * len(word)
    out.append("</svg>")
    return "".join(out)


def _chart_caption(report: Report, facts: PageFacts) -> str:
    b = report.budget
    n = len(report.requests)
    estimated = sum(1 for r in report.requests if r.estimated)
    parts = [
        f"{plural(n, 'request')}; the light blue line is each request's context (the ledger the harness sent, "
        "as reported"
        + (f"; {plural(estimated, 'request')} calibrated where none was reported" if estimated else "")
        + f"), the green line what policy {b.policy} sends after shaping",
    ]
    if facts.partial:
        parts.append(
            f"The green line is drawn at request {report.step} only: shaping all {n:,} requests of a session "
            "this long takes minutes (the app's scan draws it as it goes)"
            if report.step is not None
            else "No green line: shaping every request of a session this long takes minutes"
        )
    parts.append(
        f"Dashed: the trigger ({b.trigger:,})" + (f" and the window ({b.window:,})" if b.window else "")
    )
    compactions = sum(
        1 for e in report.recorded_events if e.kind == EventKind.COMPACTION.value and e.after_request >= 1
    )
    if compactions:
        parts.append(f"◆ marks the {plural(compactions, 'compaction')} the harness recorded")
    return ". ".join(p.rstrip(".") for p in parts) + "."


# -- what fills the window ---------------------------------------------------------------------
def _colour(key: str, tools: dict[str, str]) -> str:
    if key.startswith("tool:"):
        c = tools.get(key)
        if c is None:
            c = tools[key] = TOOL_COLOURS[len(tools) % len(TOOL_COLOURS)]
        return c
    return PART_COLOURS.get(key, "#afb8c1")


def composition_html(report: Report) -> str:
    comp = report.composition or {}
    parts = list(comp.get("parts", []))
    tools: dict[str, str] = {}
    colours = [_colour(str(p.get("key", "")), tools) for p in parts]
    out: list[str] = []
    share_of = comp.get("share_of", "context")
    out.append(
        f'<p class="note">Each bar is the whole {h(str(share_of))} '
        + (
            f"({int(comp['window']):,} tokens)"
            if comp.get("window")
            else f"({int(comp.get('context', 0)):,} tokens)"
        )
        + ": what the harness held (raw ledger) and what the policy sends, part by part.</p>"
    )
    svg = [
        f'<svg class="bars" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {BAR_W + 150} {2 * BAR_H + 24}" '
        f'width="{BAR_W + 150}" height="{2 * BAR_H + 24}" role="img" aria-labelledby="bars-title">',
        '<title id="bars-title">What fills the window, raw and sent</title>',
    ]
    for row, (side, key) in enumerate((("raw", "raw_share"), ("sent", "sent_share"))):
        shares = [max(0.0, float(p.get(key, 0.0))) for p in parts]
        scale = BAR_W / max(1.0, sum(shares))
        yy = row * (BAR_H + 12) + 6
        svg.append(f'<text class="tick" x="0" y="{yy + BAR_H / 2 + 4:.1f}">{side}</text>')
        x = 40.0
        for p, share, colour in zip(parts, shares, colours, strict=True):
            w = share * scale
            if w <= 0:
                continue
            tokens = int(p.get(side, 0))
            tip = f"{p.get('label', '')}: {tokens:,} tokens ({share:.1%})"
            svg.append(
                f'<rect x="{x:.2f}" y="{yy}" width="{w:.2f}" height="{BAR_H}" fill="{colour}">'
                f"<title>{h(tip)}</title></rect>"
            )
            x += w
        total = int(comp.get("context" if side == "raw" else "sent", 0))
        svg.append(
            f'<text class="tick" x="{40 + BAR_W + 8}" y="{yy + BAR_H / 2 + 4:.1f}">{total:,} used</text>'
        )
    svg.append("</svg>")
    out.append("".join(svg))
    head = "".join(f"<th>{c}</th>" for c in ("", "part", "raw", "raw %", "sent", "sent %", "messages"))
    rows = [f'<table class="composition"><tr>{head}</tr>']
    for p, cells, colour in zip(parts, _composition_rows(report), colours, strict=True):
        space = "1" if p.get("space") else "0"
        rows.append(
            f'<tr data-part="{h(str(p.get("key", "")))}" data-space="{space}" data-raw="{int(p.get("raw", 0))}" '
            f'data-sent="{int(p.get("sent", 0))}"><td><span class="swatch" style="background:{colour}"></span></td>'
            + _cell(cells[0])
            + "".join(_cell(c, "num") for c in cells[1:])
            + _cell(f"{int(p.get('messages', 0)):,}" if not p.get("space") else "", "num")
            + "</tr>"
        )
    rows.append(
        f'<tr class="total" data-total-raw="{int(comp.get("context", 0))}" data-total-sent="{int(comp.get("sent", 0))}">'
        f'<td></td><th>used (the context)</th><td class="num">{int(comp.get("context", 0)):,}</td><td></td>'
        f'<td class="num">{int(comp.get("sent", 0)):,}</td><td></td><td></td></tr>'
    )
    rows.append("</table>")
    out.append("".join(rows))
    return "\n".join(out)


# -- findings ----------------------------------------------------------------------------------
def findings_html(facts: PageFacts, step: int | None) -> str:
    found = facts.findings or ()
    counts = {s: sum(1 for f in found if f.severity == s) for s in ("error", "warning", "info")}
    out = [
        f'<h2 id="findings">Findings ({len(found):,}: {plural(counts["error"], "error")}, '
        f"{plural(counts['warning'], 'warning')}, {counts['info']:,} info)</h2>"
    ]
    if facts.checks_left_out:
        out.append(
            f'<p class="note">Not run for this page: {h(", ".join(facts.checks_left_out))} (they shape every '
            "request, minutes of work on a session this long); <code>context-inspector findings PATH</code> "
            "runs them.</p>"
        )
    if not found:
        out.append('<p class="note">No check found anything to point at.</p>')
        return "\n".join(out)
    out.append(
        '<p class="note">Each finding links to its messages: in the ledger below'
        + (f" (request {step})" if step else "")
        + ", or, for a message that ledger does not hold, in the list after it.</p>"
    )
    rows = [
        '<table class="findings"><tr><th>request</th><th>severity</th><th>kind</th><th>what</th><th>messages</th></tr>'
    ]
    for f in found:
        links = " ".join(f'<a href="#{a.anchor}">{h(a.label)}</a>' for a in f.links) or "—"
        rows.append(
            f'<tr class="{h(f.severity)}"><td class="num">{f.request:,}</td><td class="sev">{h(f.severity)}</td>'
            f'<td>{h(f.kind)}</td><td>{h(f.explanation)}</td><td class="msg">{links}</td></tr>'
        )
    rows.append("</table>")
    out.append("\n".join(rows))
    return "\n".join(out)


def _elsewhere_html(facts: PageFacts, step: int | None) -> str:
    out = [
        f"<h2>Messages the findings name outside the ledger at request {step}</h2>"
        if step
        else "<h2>Messages the findings name</h2>"
    ]
    rows = ["<table><tr><th>message</th><th>role</th><th>where</th><th>what it holds</th></tr>"]
    for e in facts.elsewhere:
        rows.append(
            f'<tr id="{e.anchor}"><td class="msg">{h(e.id)}</td><td>{h(e.role)}</td><td>{h(e.where)}</td>'
            f'<td class="msg">{h(e.summary)}</td></tr>'
        )
    rows.append("</table>")
    out.append("\n".join(rows))
    return "\n".join(out)


# -- the page ----------------------------------------------------------------------------------
PAGE_STYLE = (
    STYLE
    + """
body { max-width: 80em; }
.lede { color: #57606a; margin-top: -.6em; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1.2em; margin: 1em 0; }
dl.facts dt { color: #57606a; } dl.facts dd { margin: 0; }
svg text { font: 11px system-ui, sans-serif; fill: #57606a; }
svg text.label { font-size: 12px; fill: #1b1f24; }
svg .grid { stroke: #eaeef2; } svg .axis { stroke: #8c959f; }
svg polyline { fill: none; stroke-width: 1.6; stroke-linejoin: round; }
svg polyline.raw { stroke: #54aeff; stroke-width: 4; stroke-opacity: .7; }
svg line.key.raw { stroke: #54aeff; } svg circle.raw { fill: #54aeff; }
svg .sent { stroke: #1a7f37; } svg circle.sent { fill: #1a7f37; }
svg line.key { stroke-width: 3; }
svg line.trigger { stroke: #bf8700; stroke-dasharray: 6 4; } svg text.trigger { fill: #9a6700; }
svg line.window { stroke: #cf222e; stroke-dasharray: 2 3; } svg text.window { fill: #a40e26; }
svg .compaction line, svg line.key.compaction { stroke: #8250df; stroke-dasharray: 3 3; }
svg .compaction text { fill: #8250df; }
svg .step line { stroke: #1b1f24; stroke-opacity: .35; } svg .step text { fill: #1b1f24; }
.swatch { display: inline-block; width: .9em; height: .9em; border-radius: 2px; vertical-align: -.1em; }
tr.total th, tr.total td { border-top: 2px solid #8c959f; }
tr.error .sev { color: #cf222e; font-weight: 600; } tr.warning .sev { color: #9a6700; font-weight: 600; }
tr:target { background: #fff8c5; }
details > summary { cursor: pointer; font-weight: 600; margin: 1em 0 .4em; }
"""
)


def _glance(report: Report, facts: PageFacts) -> str:
    b = report.budget
    compactions = sum(1 for e in report.recorded_events if e.kind == EventKind.COMPACTION.value)
    rows: list[tuple[str, str]] = [
        ("harness", facts.harness + (f" {facts.version}" if facts.version else " (version not recorded)")),
        ("model", report.model or "unknown"),
        ("requests", f"{len(report.requests):,}"),
        (
            "compactions",
            f"{compactions:,} recorded"
            + (f" · {report.segments:,} ledger segments" if report.segments > 1 else ""),
        ),
    ]
    if report.cost is not None:
        c = report.cost
        rows.append(("cost", cost_line(c)))
    if report.context:
        c2 = report.context
        rows.append(
            (
                "context",
                f"first {c2.first:,} · largest {c2.max:,} (request {c2.max_request}) · last {c2.last:,}",
            )
        )
    rows.append(
        (
            "policy",
            f"{b.policy}: window {_n(b.window)} ({b.window_source}), trigger {b.trigger:,}, target {b.target:,}",
        )
    )
    if report.step is not None:
        rows.append(("this page", f"request {report.step:,} of {len(report.requests):,}"))
    return '<dl class="facts">' + "".join(f"<dt>{h(k)}</dt><dd>{h(v)}</dd>" for k, v in rows) + "</dl>"


def _ledger_html(table: LedgerTable, anchors: Sequence[str]) -> str:
    n_sent = sum(1 for r in table.rows if r.sent)
    out = [
        f'<details open><summary id="ledger">Ledger at request {table.step} ({len(table.rows):,} messages, '
        f"{n_sent:,} sent): each message, its weight and what each layer did</summary>"
    ]
    rows = ["<table>", "<tr>" + "".join(f"<th>{h(c)}</th>" for c in _ledger_head(table)) + "</tr>"]
    ends: dict[tuple[tuple[str, ...], bool], str] = {}
    words: dict[str, str] = {}
    for r in table.rows:
        end = ends.get((r.fates, r.sent))
        if end is None:
            end = ends[(r.fates, r.sent)] = "".join(_cell(f, _fate_class(f)) for f in r.fates) + _cell(
                "yes" if r.sent else "no"
            )
        role = words.get(r.role) or words.setdefault(r.role, h(r.role))
        tool = words.get(r.tool) or words.setdefault(r.tool, h(r.tool))
        msg = h(f"{r.id}: {r.summary}" if r.summary else r.id)
        rows.append(
            f'<tr id="{anchors[r.position]}"><td class="num">{r.position}</td><td class="msg">{msg}</td><td>{role}</td>'
            f'<td>{tool}</td><td class="num">{_n(r.weight)}</td>{end}</tr>'
        )
    rows.append("</table>")
    out.append("\n".join(rows))
    out.append(
        f'<p class="note">{h(f"{UNTOUCHED} passed on unchanged; {GONE} already taken out by an earlier layer.")}</p>'
    )
    out.append("</details>")
    return "\n".join(out)


def _requests_html(report: Report, facts: PageFacts) -> str:
    models: dict[str, str] = {}
    out = [
        f"<details><summary>Every request ({len(report.requests):,}): context, sent, output, cost</summary>",
        "<table>",
        "<tr>"
        + "".join(
            f"<th>{c}</th>"
            for c in ("request", "context", "sent", "output", "spent so far", "cost", "segment", "model")
        )
        + "</tr>",
    ]
    sent = facts.sent
    for r in report.requests:
        model = r.model or "—"
        m = models.get(model)
        if m is None:
            m = models[model] = h(model)
        est = " (predicted)" if r.estimated else ""
        cost = money_text(r.cost.total) if r.cost is not None else h(r.cost_note or "—")
        out.append(
            f'<tr><td class="num">{r.index}</td><td class="num">{_n(r.context_tokens)}{est}</td>'
            f'<td class="num">{_n(sent.get(r.index))}</td><td class="num">{_n(r.output_tokens)}</td>'
            f'<td class="num">{r.cumulative_tokens:,}</td><td class="num">{cost}</td>'
            f'<td class="num">{r.segment}</td><td>{m}</td></tr>'
        )
    out.append("</table></details>")
    return "\n".join(out)


def to_html(report: Report, table: LedgerTable | None, facts: PageFacts) -> str:
    title = _title(report)
    body = [f"<h1>{h(title)}</h1>", f'<p class="lede">{h(report.path)}</p>', _glance(report, facts)]
    if report.requests:
        body.append("<h2>Context per request</h2>")
        body.append(chart_svg(report, facts))
        body.append(f'<p class="note">{h(_chart_caption(report, facts))}</p>')
    if report.composition:
        body.append(f"<h2>What fills the window at request {report.step}</h2>")
        body.append(composition_html(report))
    if facts.findings is not None:
        body.append(findings_html(facts, report.step))
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
    if report.distance:
        body.append(f"<h2>Distance at request {report.step}</h2>")
        body.append(_html_table(("estimate", "tokens", "distance"), _distance_rows(report), numeric=(1,)))
    if table is not None:
        body.append(_ledger_html(table, facts.anchors))
    if facts.elsewhere:
        body.append(_elsewhere_html(facts, report.step))
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
        body.append(_requests_html(report, facts))
    body.append("<details><summary>Every fact of the report</summary>")
    body.append(
        "<table>" + "".join(f"<tr><th>{h(k)}</th>{_cell(v)}</tr>" for k, v in _facts(report)) + "</table>"
    )
    body.append("</details>")
    if report.load_issues:
        body.append(f"<h2>{load_issues_title(report)}</h2>")
        body.append(
            _html_table(("where", "reason"), ([f"{i.file}:{i.line}", i.reason] for i in report.load_issues))
        )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        f"<title>{h(title)}</title>\n<style>{PAGE_STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
