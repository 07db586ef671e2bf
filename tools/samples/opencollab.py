"""Deterministic generator of an OpenCollab run folder (`inspector/samples/opencollab-run/`).

The run follows docs/notes/opencollab.md §5: per-agent snapshots `agent_<aid>_<role>.json` (pretty JSON
with `_autosave_sequence`), their `.json.journal` of autosave deltas, `team.json`, and the run's
`trajectory.jsonl` of tracer records.

The story: agent 0, a coder on a local model with a 65,536-token window, is asked to fix timesheet
spans that cross midnight in a small Python project ("tallyho"). It greps, reads files (one of
them larger than the 16,000-character per-tool budget), reproduces the bug, edits, runs the tests,
gets a follow-up request from the user (with a steering note folded into that same user turn),
spawns agent 1, a reviewer, and finishes. Every request is shaped the way OpenCollab shapes it,
with OpenCollab's own estimator (64 + characters/3 of each message's compact JSON): the per-tool
budget fires from the request after the large read on, tool output clear once the estimate passes
the trigger (32,536 for 65,536), and `context_shaping` records name what fired (`none` when
nothing did). Usage is what a provider would bill for the shaped view (about 3.6 characters a
token plus the tool schemas), with prompt caching broken where shaping rewrote the prefix.

Autosaves follow OpenCollab: one on startup, one per step end, one per user message; checkpoints
at sequences 1, 2, 4, 8, 16, ... rewrite the snapshot and truncate the journal; every delta keeps
a one-message overlap (`replace_from`). The coder's journal still begins with record 16, already
folded into its snapshot (written just before a checkpoint truncation that never happened).

Everything is fixed: no clock, no randomness, identical bytes every run.

    python -m tools.samples.opencollab                 # regenerate inspector/samples/opencollab-run/
    python -m tools.samples.opencollab --out DIR       # write the run folder to DIR
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import math
import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from inspector.samples import OPENCOLLAB_RUN_DIR

__all__ = [
    "CONTEXT_WINDOW",
    "MODEL",
    "RUN_DIR",
    "RunInfo",
    "estimate_message",
    "generate_run",
    "main",
]

RUN_DIR = OPENCOLLAB_RUN_DIR
MODEL = "qwen3-coder-30b-a3b-instruct"
CONTEXT_WINDOW = 65_536
OUTPUT_RESERVE = 20_000
COMPACT_BUFFER = 13_000
TRIGGER = CONTEXT_WINDOW - OUTPUT_RESERVE - COMPACT_BUFFER  # 32,536
TARGET = max(1, min(TRIGGER - 1, int(TRIGGER * 0.75)))  # 24,402
TOOL_RESULT_BUDGET = 16_000
TOOL_CLEAR_KEEP = min(5, max(2, TARGET // (TOOL_RESULT_BUDGET // 4)))
CLEARED = "[Old tool result content cleared]"
COMPACTABLE = frozenset({"bash", "file_read", "grep", "git_diff", "run_tests"})
ESTIMATED_FIELDS = (
    "role",
    "content",
    "reasoning_content",
    "tool_calls",
    "tool_call_id",
    "name",
    "provider_state",
    "response_items",
)
TOOL_SCHEMA_TOKENS = 2_300
"""What the provider bills for the tool schemas and request framing (not in the ledger)."""
CHARS_PER_TOKEN = 3.6
CACHE_BLOCK = 128
BASE_TIME = datetime(2026, 8, 21, 5, 11, 32, 104_512, tzinfo=UTC)
RUN_NAME = "2026-08-21T05-11-32-4f3c9a7e2b1d4e8f9a0b1c2d3e4f5a6b"
WORKSPACE = "/home/dev/src/tallyho"


# -- OpenCollab's estimator and shaping ----------------------------------------------------------


def estimate_tokens(text: str) -> int:
    """OpenCollab `estimate_tokens`: about 3 characters a token for ASCII, 1 per wide character."""
    n = len(text)
    wide = min(n, len(text.encode("utf-8")) - n)
    return max(1, (n - wide) // 3 + wide)


def estimate_message(message: dict[str, Any]) -> int:
    """OpenCollab `estimate_request_message_tokens` for one message: 64 + its compact JSON."""
    body = {k: message[k] for k in ESTIMATED_FIELDS if k in message}
    return 64 + estimate_tokens(json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def estimate_view(view: Sequence[dict[str, Any]]) -> int:
    return sum(estimate_message(m) for m in view)


def _budget_tool_results(view: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """PerToolResultBudgetShaper: a tool result over the budget keeps its head and a marker."""
    out = []
    for m in view:
        content = m.get("content")
        if m.get("role") == "tool" and isinstance(content, str) and len(content) > TOOL_RESULT_BUDGET:
            head = TOOL_RESULT_BUDGET
            for _ in range(3):
                marker = (
                    f"\n\n[truncated {len(content) - head} chars — re-read a narrower range "
                    "(file_read with offset/limit, or grep) to see the rest]"
                )
                head = TOOL_RESULT_BUDGET - len(marker)
            m = {**m, "content": (content[:head] + marker)[:TOOL_RESULT_BUDGET]}
        out.append(m)
    return out


def _clear_old_results(view: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ToolOutputClearShaper: all but the most recent compactable results lose their content."""
    names: dict[str, str] = {}
    for m in view:
        for call in m.get("tool_calls") or ():
            names[call["id"]] = call["function"]["name"]
    positions = [
        i
        for i, m in enumerate(view)
        if m.get("role") == "tool" and names.get(m["tool_call_id"]) in COMPACTABLE
    ]
    if len(positions) <= TOOL_CLEAR_KEEP:
        return view
    out = list(view)
    for i in positions[:-TOOL_CLEAR_KEEP]:
        content = out[i]["content"]
        if content != CLEARED and len(CLEARED) < len(content):
            out[i] = {**out[i], "content": CLEARED}
    return out


@dataclass(frozen=True)
class Rung:
    name: str
    before: int
    after: int


def shape(ledger: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Rung]]:
    """OpenCollab's default pipeline at this window: the view sent and the rungs that fired."""
    view = [{k: v for k, v in m.items() if k not in ("timestamp", "_ctx")} for m in ledger]
    fired: list[Rung] = []
    before = estimate_view(view)
    budgeted = _budget_tool_results(view)
    if budgeted != view:
        after = estimate_view(budgeted)
        fired.append(Rung("per_tool_budget", before, after))
        view, before = budgeted, after
    if before > TRIGGER:
        cleared = _clear_old_results(view)
        if cleared != view:
            after = estimate_view(cleared)
            fired.append(Rung("tool_output_clear", before, after))
            view, before = cleared, after
    if before > TRIGGER:
        raise AssertionError(f"the sample would need old_history_snip ({before:,} > {TRIGGER:,}); shorten it")
    return view, fired


def provider_tokens(message: dict[str, Any]) -> int:
    """What the provider bills for one sent message (a tokenizer stand-in: 3.6 characters a token)."""
    text = message.get("content") or ""
    for call in message.get("tool_calls") or ():
        text += call["function"]["name"] + call["function"]["arguments"]
    return 5 + math.ceil(len(text) / CHARS_PER_TOKEN)


# -- the project the agents work on ----------------------------------------------------------------


def numbered(text: str, start: int = 1) -> str:
    """A file_read result: each line with its number, as OpenCollab's file_read shows it."""
    return "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(text.split("\n"), start))


SPANS_PY = '''"""Work spans: a start and an end clock time on one sheet day, and their length in hours."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

CLOCK = re.compile(r"^(?P<h>[01]?\\d|2[0-3]):(?P<m>[0-5]\\d)$")
ROUNDING_MINUTES = 15


class SpanError(ValueError):
    """A span that cannot be read: a bad clock time or a missing end."""


@dataclass(frozen=True)
class Span:
    """One stretch of work as written on a timesheet line (`09:00-12:30 client-x`)."""

    day: date
    start: time
    end: time
    project: str
    note: str = ""

    @property
    def started(self) -> datetime:
        return datetime.combine(self.day, self.start)

    @property
    def ended(self) -> datetime:
        return datetime.combine(self.day, self.end)

    @property
    def hours(self) -> float:
        """The span's length in hours, rounded to the nearest quarter hour."""
        return duration_hours(self.start, self.end)


def parse_clock(text: str) -> time:
    """`9:05` or `09:05` as a time; anything else is a SpanError."""
    m = CLOCK.match(text.strip())
    if m is None:
        raise SpanError(f"not a clock time: {text!r}")
    return time(int(m["h"]), int(m["m"]))


def duration_hours(start: time, end: time) -> float:
    """Hours from `start` to `end`, rounded to ROUNDING_MINUTES."""
    minutes = (end.hour * 60 + end.minute) - (start.hour * 60 + start.minute)
    quarters = round(minutes / ROUNDING_MINUTES)
    return quarters * ROUNDING_MINUTES / 60


def parse_span(day: date, text: str) -> Span:
    """`09:00-12:30 project note...` on `day`."""
    clock, _, rest = text.strip().partition(" ")
    start_text, sep, end_text = clock.partition("-")
    if not sep or not end_text:
        raise SpanError(f"a span needs a start and an end: {text!r}")
    project, _, note = rest.strip().partition(" ")
    if not project:
        raise SpanError(f"a span needs a project: {text!r}")
    return Span(day, parse_clock(start_text), parse_clock(end_text), project, note.strip())


def split_at_midnight(span: Span) -> list[Span]:
    """The span as it counts per calendar day (one span unless it crosses midnight)."""
    return [span]


def total_hours(spans: list[Span]) -> float:
    return sum(s.hours for s in spans)


def overlapping(spans: list[Span]) -> list[tuple[Span, Span]]:
    """Pairs of spans on the same day that overlap (a timesheet mistake worth flagging)."""
    found = []
    ordered = sorted(spans, key=lambda s: (s.day, s.start))
    for a, b in zip(ordered, ordered[1:], strict=False):
        if a.day == b.day and b.start < a.end:
            found.append((a, b))
    return found


def next_day(span: Span) -> date:
    return span.day + timedelta(days=1)
'''

SPANS_FIXED_DURATION = '''def duration_hours(start: time, end: time) -> float:
    """Hours from `start` to `end`, rounded to ROUNDING_MINUTES.

    An end earlier than the start is on the next day (a night shift: 22:00-06:30 is 8.5 hours);
    an end equal to the start is an empty span, not a whole day.
    """
    minutes = (end.hour * 60 + end.minute) - (start.hour * 60 + start.minute)
    if minutes < 0:
        minutes += 24 * 60
    quarters = round(minutes / ROUNDING_MINUTES)
    return quarters * ROUNDING_MINUTES / 60'''

SPANS_FIRST_TRY = '''def duration_hours(start: time, end: time) -> float:
    """Hours from `start` to `end`, rounded to ROUNDING_MINUTES (an earlier end is the next day)."""
    minutes = (end.hour * 60 + end.minute) - (start.hour * 60 + start.minute)
    if minutes <= 0:
        minutes += 24 * 60
    quarters = round(minutes / ROUNDING_MINUTES)
    return quarters * ROUNDING_MINUTES / 60'''

SPANS_OLD_DURATION = '''def duration_hours(start: time, end: time) -> float:
    """Hours from `start` to `end`, rounded to ROUNDING_MINUTES."""
    minutes = (end.hour * 60 + end.minute) - (start.hour * 60 + start.minute)
    quarters = round(minutes / ROUNDING_MINUTES)
    return quarters * ROUNDING_MINUTES / 60'''

SPAN_CASES = (
    ("morning", "09:00", "12:30", 3.5),
    ("afternoon", "13:15", "17:45", 4.5),
    ("rounds_up", "09:00", "09:08", 0.25),
    ("rounds_down", "09:00", "09:07", 0.0),
    ("single_digit_hour", "9:00", "9:45", 0.75),
    ("late_evening", "18:00", "23:30", 5.5),
    ("zero_length", "10:00", "10:00", 0.0),
    ("full_morning", "06:00", "12:00", 6.0),
)


def _test_spans_py() -> str:
    lines = [
        '"""Tests for tallyho.spans."""',
        "",
        "from datetime import date, time",
        "",
        "import pytest",
        "",
        "from tallyho.spans import Span, SpanError, duration_hours, overlapping, parse_clock, parse_span",
        "",
        "DAY = date(2026, 3, 2)",
        "",
    ]
    for name, start, end, hours in SPAN_CASES:
        lines += [
            "",
            f"def test_duration_{name}() -> None:",
            f'    span = parse_span(DAY, "{start}-{end} client-x")',
            f"    assert span.hours == pytest.approx({hours})",
            "",
        ]
    lines += [
        "",
        '@pytest.mark.parametrize("text", ["25:00", "9:60", "noon", "", "12"])',
        "def test_bad_clock_times_are_rejected(text: str) -> None:",
        "    with pytest.raises(SpanError):",
        "        parse_clock(text)",
        "",
        "",
        "def test_a_span_needs_an_end_and_a_project() -> None:",
        "    with pytest.raises(SpanError, match='start and an end'):",
        '        parse_span(DAY, "09:00 client-x")',
        "    with pytest.raises(SpanError, match='project'):",
        '        parse_span(DAY, "09:00-10:00")',
        "",
        "",
        "def test_overlapping_spans_are_found() -> None:",
        '    a = parse_span(DAY, "09:00-11:00 client-x")',
        '    b = parse_span(DAY, "10:30-12:00 client-y")',
        '    c = parse_span(DAY, "13:00-14:00 client-x")',
        "    assert overlapping([c, b, a]) == [(a, b)]",
        "",
        "",
        "def test_duration_hours_is_symmetric_in_rounding() -> None:",
        "    assert duration_hours(time(9, 0), time(9, 22)) == 0.25",
        "    assert duration_hours(time(9, 0), time(9, 23)) == 0.5",
    ]
    return "\n".join(lines) + "\n"


SHEET_PY = '''"""Reading a timesheet file: day headers, spans, comments and includes.

A sheet looks like this::

    ## 2026-03-02 Mon
    09:00-12:30 client-x  sprint planning #meeting
    13:15-17:45 client-x  import job: retry on 429
    # a comment
    ## 2026-03-03 Tue
    22:00-06:30 ops-oncall night shift

Lines before the first day header are an error; days must come in order; `!include other.txt`
reads another sheet in place (relative to this one, at most 8 levels deep).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from .spans import Span, SpanError, parse_span

DAY_HEADER = re.compile(r"^##\\s+(?P<date>\\d{4}-\\d{2}-\\d{2})(?:\\s+(?P<weekday>[A-Z][a-z]{2}))?\\s*$")
INCLUDE = re.compile(r"^!include\\s+(?P<path>\\S+)\\s*$")
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
MAX_INCLUDE_DEPTH = 8
ENV_SHEET = "TALLYHO_SHEET"


@dataclass(frozen=True)
class SheetError(SpanError):
    """A sheet problem, with the file and line it is on."""

    path: Path
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


def default_path() -> Path:
    """$TALLYHO_SHEET, else ~/.tallyho/sheet.txt."""
    env = os.environ.get(ENV_SHEET)
    return Path(env).expanduser() if env else Path.home() / ".tallyho" / "sheet.txt"


def parse_day_header(line: str) -> date | None:
    """The date of a `## YYYY-MM-DD [Www]` header, or None when the line is not one."""
    m = DAY_HEADER.match(line)
    if m is None:
        return None
    day = date.fromisoformat(m["date"])
    weekday = m["weekday"]
    if weekday is not None and weekday != WEEKDAYS[day.weekday()]:
        raise ValueError(f"{day} is a {WEEKDAYS[day.weekday()]}, not a {weekday}")
    return day


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    text = path.read_text(encoding="utf-8-sig")
    for n, raw in enumerate(text.splitlines(), 1):
        yield n, raw.replace("\\t", " ").rstrip()


def _read(path: Path, depth: int, spans: list[Span], state: dict[str, date | None]) -> None:
    if depth > MAX_INCLUDE_DEPTH:
        raise SheetError(path, 0, f"includes nested more than {MAX_INCLUDE_DEPTH} deep")
    for n, line in _lines(path):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") and not stripped.startswith("##"):
            continue
        include = INCLUDE.match(stripped)
        if include is not None:
            _read((path.parent / include["path"]).resolve(), depth + 1, spans, state)
            continue
        try:
            day = parse_day_header(stripped)
        except ValueError as exc:
            raise SheetError(path, n, str(exc)) from None
        if day is not None:
            last = state["day"]
            if last is not None and day <= last:
                raise SheetError(path, n, f"day {day} comes after {last}; days must be in order")
            state["day"] = day
            continue
        current = state["day"]
        if current is None:
            raise SheetError(path, n, "a span before the first day header")
        try:
            spans.append(parse_span(current, stripped))
        except SpanError as exc:
            raise SheetError(path, n, str(exc)) from None


def load(path: Path | None = None) -> list[Span]:
    """Every span of the sheet at `path` (default: `default_path()`), in file order."""
    spans: list[Span] = []
    _read(path or default_path(), 0, spans, {"day": None})
    return spans
'''

WEEK_10_DAYS = (
    (
        "2026-03-02",
        "Mon",
        (
            ("08:45-09:15", "internal", "standup #meeting"),
            ("09:15-12:30", "client-x", "import job: retry on 429"),
            ("13:15-17:45", "client-x", "import job: backfill March"),
            ("18:00-18:30", "internal", "expenses"),
        ),
    ),
    (
        "2026-03-03",
        "Tue",
        (
            ("08:45-09:15", "internal", "standup #meeting"),
            ("09:30-12:00", "client-y", "dashboard filters"),
            ("13:00-16:30", "client-y", "dashboard filters, review fixes"),
            ("16:30-17:30", "client-x", "call with ops #meeting"),
        ),
    ),
    (
        "2026-03-04",
        "Wed",
        (
            ("08:45-09:15", "internal", "standup #meeting"),
            ("09:15-12:45", "client-x", "import job: schema migration"),
            ("13:30-15:00", "client-x", "import job: schema migration"),
            ("15:00-17:15", "internal", "hiring loop #interview"),
        ),
    ),
    (
        "2026-03-05",
        "Thu",
        (
            ("08:45-09:15", "internal", "standup #meeting"),
            ("09:15-11:45", "client-y", "release 4.2 #release"),
            ("12:30-17:00", "client-y", "release 4.2 hotfix #release"),
            ("22:00-06:30", "ops-oncall", "night shift (pager)"),
        ),
    ),
    (
        "2026-03-06",
        "Fri",
        (
            ("10:00-12:00", "client-x", "import job: docs"),
            ("13:00-15:30", "internal", "retro + planning #meeting"),
            ("15:30-16:45", "client-y", "support ticket 8812"),
        ),
    ),
)


def _week_10() -> str:
    out = ["# tallyho sheet: week 10 of 2026 (used by tests/test_sheet.py)", ""]
    for day, weekday, spans in WEEK_10_DAYS:
        out.append(f"## {day} {weekday}")
        out += [f"{clock} {project}  {note}" for clock, project, note in spans]
        out.append("")
    return "\n".join(out)


REPORT_COLUMNS = (
    ("day", "the sheet day, ISO format", "span.day.isoformat()"),
    ("weekday", "the weekday's short name", 'span.day.strftime("%a")'),
    ("start", "the start clock time", 'span.start.strftime("%H:%M")'),
    ("end", "the end clock time", 'span.end.strftime("%H:%M")'),
    ("hours", "hours, two decimals", 'f"{span.hours:.2f}"'),
    ("project", "the project code", "span.project"),
    ("note", "the free-text note, shortened", "_shorten(span.note, NOTE_WIDTH)"),
    ("client", "the client the project bills to", "clients.get(span.project, UNKNOWN_CLIENT)"),
    ("rate", "the hourly rate of the project", 'f"{rates.get(span.project, ZERO):.2f}"'),
    ("amount", "hours times rate", 'f"{Decimal(str(span.hours)) * rates.get(span.project, ZERO):.2f}"'),
    ("billable", "yes/no from the project table", '"yes" if span.project in billable else "no"'),
    ("week", "the ISO week number", "str(span.day.isocalendar().week)"),
    ("month", "the month, YYYY-MM", 'span.day.strftime("%Y-%m")'),
    ("quarter", "the calendar quarter", 'f"Q{(span.day.month - 1) // 3 + 1}"'),
    ("overtime", "hours beyond the daily norm", 'f"{max(0.0, day_total - DAILY_NORM):.2f}"'),
    ("tags", "hashtags found in the note", '" ".join(sorted(TAG.findall(span.note)))'),
)
REPORT_FORMATS = ("table", "csv", "markdown", "json", "html", "ledger")


def _report_py() -> str:
    """A long module (over the per-tool budget when read whole)."""
    out = [
        '"""Reports over timesheet spans: per day, per week, per project; several output formats."""',
        "",
        "from __future__ import annotations",
        "",
        "import csv",
        "import html",
        "import io",
        "import json",
        "import re",
        "from collections import defaultdict",
        "from collections.abc import Callable, Iterable, Mapping",
        "from dataclasses import dataclass, field",
        "from datetime import date, timedelta",
        "from decimal import Decimal",
        "",
        "from .spans import Span, split_at_midnight, total_hours",
        "",
        "ZERO = Decimal(0)",
        "DAILY_NORM = 8.0",
        "NOTE_WIDTH = 40",
        'UNKNOWN_CLIENT = "(no client)"',
        'TAG = re.compile(r"#[\\w-]+")',
        "",
        "",
        "def _shorten(text: str, width: int) -> str:",
        '    return text if len(text) <= width else text[: width - 1] + "…"',
        "",
        "",
        "@dataclass",
        "class ReportContext:",
        '    """What every column formatter may look at besides the span itself."""',
        "",
        "    clients: Mapping[str, str] = field(default_factory=dict)",
        "    rates: Mapping[str, Decimal] = field(default_factory=dict)",
        "    billable: frozenset[str] = frozenset()",
        "    day_totals: Mapping[date, float] = field(default_factory=dict)",
        "",
    ]
    for name, doc, expr in REPORT_COLUMNS:
        out += [
            "",
            f"def column_{name}(span: Span, ctx: ReportContext) -> str:",
            f'    """Column `{name}`: {doc}.',
            "",
            f"    Shown under the heading `{name.upper()}`; empty cells are never written, so a",
            "    missing value shows as the column's placeholder in table formats and as an empty",
            "    field in CSV. Formatters are pure: the same span and context give the same text.",
            '    """',
            "    clients, rates, billable = ctx.clients, ctx.rates, ctx.billable",
            "    day_total = ctx.day_totals.get(span.day, 0.0)",
            f"    return str({expr})",
            "",
        ]
    out += [
        "",
        "COLUMNS: dict[str, Callable[[Span, ReportContext], str]] = {",
        *(f'    "{name}": column_{name},' for name, _, _ in REPORT_COLUMNS),
        "}",
        "",
        "",
        "def day_totals(spans: Iterable[Span]) -> dict[date, float]:",
        '    """Hours per calendar day."""',
        "    totals: dict[date, float] = defaultdict(float)",
        "    for span in spans:",
        "        totals[span.day] += span.hours",
        "    return dict(totals)",
        "",
        "",
        "def week_report(spans: list[Span], week_start: date) -> dict[date, list[Span]]:",
        '    """The spans of the week beginning `week_start`, grouped by the day they count on."""',
        "    days = {week_start + timedelta(days=i): [] for i in range(7)}",
        "    for span in spans:",
        "        for part in split_at_midnight(span):",
        "            if part.day in days:",
        "                days[part.day].append(part)",
        "    return days",
        "",
        "",
        "def project_totals(spans: Iterable[Span]) -> dict[str, float]:",
        "    totals: dict[str, float] = defaultdict(float)",
        "    for span in spans:",
        "        totals[span.project] += span.hours",
        "    return dict(sorted(totals.items()))",
        "",
    ]
    for fmt in REPORT_FORMATS:
        out += [
            "",
            f"def render_{fmt}(rows: list[dict[str, str]], columns: list[str]) -> str:",
            f'    """Rows as {fmt}."""',
            "    buffer = io.StringIO()",
        ]
        if fmt == "csv":
            out += [
                "    writer = csv.DictWriter(buffer, fieldnames=columns)",
                "    writer.writeheader()",
                "    writer.writerows(rows)",
            ]
        elif fmt == "json":
            out += ["    json.dump(rows, buffer, indent=2)"]
        elif fmt == "html":
            out += [
                '    buffer.write("<table><tr>" + "".join(f"<th>{c}</th>" for c in columns) + "</tr>")',
                "    for row in rows:",
                '        cells = "".join(f"<td>{html.escape(row[c])}</td>" for c in columns)',
                '        buffer.write(f"<tr>{cells}</tr>")',
                '    buffer.write("</table>")',
            ]
        else:
            out += [
                "    widths = {c: max([len(c), *(len(r[c]) for r in rows)]) for c in columns}",
                '    sep = " | " if "' + fmt + '" == "markdown" else "  "',
                "    buffer.write(sep.join(c.ljust(widths[c]) for c in columns).rstrip() + chr(10))",
                "    for row in rows:",
                "        buffer.write(sep.join(row[c].ljust(widths[c]) for c in columns).rstrip() + chr(10))",
            ]
        out += ["    return buffer.getvalue()", ""]
    out += [
        "",
        "RENDERERS = {",
        *(f'    "{fmt}": render_{fmt},' for fmt in REPORT_FORMATS),
        "}",
        "",
        "",
        "def build_rows(spans: list[Span], columns: list[str], ctx: ReportContext) -> list[dict[str, str]]:",
        "    ctx.day_totals = day_totals(spans)",
        "    return [{c: COLUMNS[c](span, ctx) for c in columns} for span in spans]",
        "",
        "",
        "def render(spans: list[Span], columns: list[str], fmt: str, ctx: ReportContext | None = None) -> str:",
        '    """The report of `spans` with `columns` in format `fmt`."""',
        "    if fmt not in RENDERERS:",
        '        raise ValueError(f"unknown format {fmt!r}; choose one of {sorted(RENDERERS)}")',
        "    unknown = [c for c in columns if c not in COLUMNS]",
        "    if unknown:",
        '        raise ValueError(f"unknown columns: {unknown}")',
        "    rows = build_rows(spans, columns, ctx or ReportContext())",
        "    return RENDERERS[fmt](rows, columns)",
        "",
        "",
        "def summary_line(spans: list[Span]) -> str:",
        '    return f"{len(spans)} spans, {total_hours(spans):.2f} hours"',
    ]
    return "\n".join(out) + "\n"


CLI_OPTIONS = (
    ("--sheet", "PATH", "the timesheet file (default: ~/.tallyho/sheet.txt)"),
    ("--week", "DATE", "report the week that begins on DATE (a Monday)"),
    ("--month", "YYYY-MM", "report one calendar month"),
    ("--project", "CODE", "only spans of this project (repeatable)"),
    ("--columns", "LIST", "comma-separated report columns"),
    ("--format", "NAME", "table, csv, markdown, json, html or ledger"),
    ("--rates", "PATH", "a CSV of project,hourly rate"),
    ("--clients", "PATH", "a CSV of project,client"),
    ("--billable-only", "", "leave out projects not marked billable"),
    ("--round", "MINUTES", "rounding step in minutes (default 15)"),
    ("--check", "", "report overlapping spans and exit non-zero if any"),
    ("--output", "PATH", "write the report to PATH instead of standard output"),
)


def _cli_py() -> str:
    out = [
        '"""The `tallyho` command line."""',
        "",
        "from __future__ import annotations",
        "",
        "import argparse",
        "import sys",
        "from collections.abc import Sequence",
        "from datetime import date",
        "from pathlib import Path",
        "",
        "from . import report, sheet",
        "from .spans import SpanError, overlapping",
        "",
        "",
        "def build_parser() -> argparse.ArgumentParser:",
        '    parser = argparse.ArgumentParser(prog="tallyho", description="Timesheet reports.")',
    ]
    for flag, metavar, help_text in CLI_OPTIONS:
        if metavar:
            out.append(f'    parser.add_argument("{flag}", metavar="{metavar}", help="{help_text}")')
        else:
            out.append(f'    parser.add_argument("{flag}", action="store_true", help="{help_text}")')
    out += [
        "    return parser",
        "",
        "",
        "def main(argv: Sequence[str] | None = None) -> int:",
        "    args = build_parser().parse_args(argv)",
        '    path = Path(args.sheet or Path.home() / ".tallyho" / "sheet.txt")',
        "    try:",
        "        spans = sheet.load(path)",
        "    except (OSError, SpanError) as exc:",
        '        print(f"tallyho: {exc}", file=sys.stderr)',
        "        return 2",
        "    if args.check:",
        "        pairs = overlapping(spans)",
        "        for a, b in pairs:",
        '            print(f"{a.day} {a.start:%H:%M}-{a.end:%H:%M} overlaps {b.start:%H:%M}-{b.end:%H:%M}")',
        "        return 1 if pairs else 0",
        "    if args.project:",
        '        wanted = set(args.project.split(","))',
        "        spans = [s for s in spans if s.project in wanted]",
        "    if args.week:",
        "        days = report.week_report(spans, date.fromisoformat(args.week))",
        "        spans = [s for day in days.values() for s in day]",
        '    columns = (args.columns or "day,start,end,hours,project,note").split(",")',
        '    text = report.render(spans, columns, args.format or "table")',
        "    if args.output:",
        '        Path(args.output).write_text(text, encoding="utf-8")',
        "    else:",
        "        sys.stdout.write(text)",
        "    return 0",
        "",
        "",
        'if __name__ == "__main__":',
        "    raise SystemExit(main())",
    ]
    for n, (flag, _, help_text) in enumerate(CLI_OPTIONS, 1):
        out.append(f"# option {n}: {flag} — {help_text}")
    return "\n".join(out) + "\n"


REPORT_TEST_CASES = (
    ("table_has_a_header", "table", "day  start"),
    ("csv_quotes_commas_in_notes", "csv", '"a, b"'),
    ("markdown_uses_pipes", "markdown", " | "),
    ("json_is_a_list", "json", "["),
    ("html_escapes_notes", "html", "&lt;b&gt;"),
    ("ledger_aligns_columns", "ledger", "client-x"),
)


def _test_report_py() -> str:
    out = [
        '"""Tests for tallyho.report."""',
        "",
        "from datetime import date",
        "",
        "import pytest",
        "",
        "from tallyho.report import ReportContext, day_totals, project_totals, render, week_report",
        "from tallyho.spans import parse_span",
        "",
        "MONDAY = date(2026, 3, 2)",
        "",
        "",
        "@pytest.fixture",
        "def spans():",
        "    return [",
        '        parse_span(MONDAY, "09:00-12:30 client-x a, b"),',
        '        parse_span(MONDAY, "13:00-17:00 client-y <b>bold</b>"),',
        '        parse_span(date(2026, 3, 3), "09:00-11:00 client-x #standup"),',
        "    ]",
        "",
    ]
    for name, fmt, needle in REPORT_TEST_CASES:
        out += [
            "",
            f"def test_{name}(spans) -> None:",
            f'    text = render(spans, ["day", "start", "end", "hours", "project", "note"], "{fmt}")',
            f"    assert {needle!r} in text",
            "",
        ]
    out += [
        "",
        "def test_day_totals(spans) -> None:",
        "    assert day_totals(spans) == {MONDAY: 7.5, date(2026, 3, 3): 2.0}",
        "",
        "",
        "def test_project_totals(spans) -> None:",
        '    assert project_totals(spans) == {"client-x": 5.5, "client-y": 4.0}',
        "",
        "",
        "def test_week_report_groups_by_day(spans) -> None:",
        "    days = week_report(spans, MONDAY)",
        "    assert [len(v) for v in days.values()] == [2, 1, 0, 0, 0, 0, 0]",
        "",
        "",
        "def test_unknown_format_is_an_error(spans) -> None:",
        '    with pytest.raises(ValueError, match="unknown format"):',
        '        render(spans, ["day"], "pdf")',
        "",
        "",
        "def test_context_rates(spans) -> None:",
        '    ctx = ReportContext(rates={"client-x": 120})',
        '    text = render(spans, ["project", "amount"], "csv", ctx)',
        '    assert "420.00" in text',
    ]
    return "\n".join(out) + "\n"


def _test_cli_py() -> str:
    out = [
        '"""Tests for the tallyho command line."""',
        "",
        "from pathlib import Path",
        "",
        "import pytest",
        "",
        "from tallyho.cli import build_parser, main",
        "",
        'DATA = Path(__file__).parent / "data"',
        'WEEK = str(DATA / "week-10.txt")',
        "",
        "",
        "def test_help_lists_every_option(capsys) -> None:",
        "    with pytest.raises(SystemExit):",
        '        main(["--help"])',
        "    out = capsys.readouterr().out",
        *(f'    assert "{flag}" in out' for flag, _, _ in CLI_OPTIONS),
        "",
        "",
        "def test_week_report_as_markdown(capsys) -> None:",
        '    assert main(["--sheet", WEEK, "--week", "2026-03-02", "--format", "markdown"]) == 0',
        "    out = capsys.readouterr().out",
        '    assert out.splitlines()[0].startswith("day | start | end")',
        '    assert "2026-03-06" in out',
        "",
        "",
        '@pytest.mark.parametrize("fmt", ' + repr(list(REPORT_FORMATS)) + ")",
        "def test_every_format_writes_a_report(fmt: str, capsys) -> None:",
        '    assert main(["--sheet", WEEK, "--format", fmt]) == 0',
        "    assert capsys.readouterr().out",
        "",
        "",
        "def test_unknown_column_is_an_error() -> None:",
        '    with pytest.raises(ValueError, match="unknown columns"):',
        '        main(["--sheet", WEEK, "--columns", "day,colour"])',
        "",
        "",
        "def test_project_filter(capsys) -> None:",
        '    main(["--sheet", WEEK, "--project", "client-y", "--format", "csv"])',
        "    rows = capsys.readouterr().out.splitlines()[1:]",
        '    assert rows and all(",client-y," in row for row in rows)',
        "",
        "",
        "def test_check_reports_overlaps(tmp_path: Path, capsys) -> None:",
        '    sheet = tmp_path / "sheet.txt"',
        '    sheet.write_text("## 2026-03-02 Mon\\n09:00-11:00 a\\n10:30-12:00 b\\n")',
        '    assert main(["--sheet", str(sheet), "--check"]) == 1',
        '    assert "overlaps" in capsys.readouterr().out',
        "",
        "",
        "def test_check_exits_zero_when_clean() -> None:",
        '    assert main(["--sheet", WEEK, "--check"]) == 0',
        "",
        "",
        "def test_output_file(tmp_path: Path) -> None:",
        '    target = tmp_path / "out.csv"',
        '    assert main(["--sheet", WEEK, "--format", "csv", "--output", str(target)]) == 0',
        '    assert target.read_text().startswith("day,start,end")',
        "",
        "",
        "def test_missing_sheet_is_exit_2(tmp_path: Path, capsys) -> None:",
        '    assert main(["--sheet", str(tmp_path / "nope.txt")]) == 2',
        '    assert "tallyho:" in capsys.readouterr().err',
        "",
        "",
        "def test_bad_sheet_names_the_line(tmp_path: Path, capsys) -> None:",
        '    sheet = tmp_path / "bad.txt"',
        '    sheet.write_text("## 2026-03-02 Mon\\n9-10 a\\n")',
        '    assert main(["--sheet", str(sheet)]) == 2',
        '    assert "bad.txt:2:" in capsys.readouterr().err',
        "",
        "",
        "def test_parser_defaults() -> None:",
        "    args = build_parser().parse_args([])",
        "    assert args.format is None and args.columns is None and not args.check",
    ]
    return "\n".join(out) + "\n"


GIT_LOG = """commit 5d2b7e1c9a04f3e8b6d1c7a2e9f0b3d4c5a6e7f8
Author: Mira Okafor <mira@tallyho.dev>
Date:   Tue Feb 17 16:02:41 2026 +0100

    report: group the week by the day each part falls on

    Preparation for night shifts: week_report now asks split_at_midnight for the parts of a
    span. split_at_midnight is a stub that returns the span whole until durations handle the
    day boundary (see #41).

diff --git a/src/tallyho/report.py b/src/tallyho/report.py
index 1a7c3e0..3c1e9a2 100644
--- a/src/tallyho/report.py
+++ b/src/tallyho/report.py
@@ -184,9 +184,10 @@ def day_totals(spans: Iterable[Span]) -> dict[date, float]:
 def week_report(spans: list[Span], week_start: date) -> dict[date, list[Span]]:
     \"\"\"The spans of the week beginning `week_start`, grouped by the day they count on.\"\"\"
     days = {week_start + timedelta(days=i): [] for i in range(7)}
     for span in spans:
-        if span.day in days:
-            days[span.day].append(span)
+        for part in split_at_midnight(span):
+            if part.day in days:
+                days[part.day].append(part)
     return days

diff --git a/src/tallyho/spans.py b/src/tallyho/spans.py
index 8e41b7d..b9f2c60 100644
--- a/src/tallyho/spans.py
+++ b/src/tallyho/spans.py
@@ -75,6 +75,11 @@ def parse_span(day: date, text: str) -> Span:
     return Span(day, parse_clock(start_text), parse_clock(end_text), project, note.strip())


+def split_at_midnight(span: Span) -> list[Span]:
+    \"\"\"The span as it counts per calendar day (one span unless it crosses midnight).\"\"\"
+    return [span]
+
+
 def total_hours(spans: list[Span]) -> float:
     return sum(s.hours for s in spans)

commit 0b9c4e2f7d6a1358e0c2b4d6f8a1c3e5d7f9b0a2
Author: Jon Lindqvist <jon@tallyho.dev>
Date:   Mon Feb 9 10:14:07 2026 +0100

    spans: round durations to the quarter hour (ROUNDING_MINUTES)

diff --git a/src/tallyho/spans.py b/src/tallyho/spans.py
index 2f6d0c1..8e41b7d 100644
--- a/src/tallyho/spans.py
+++ b/src/tallyho/spans.py
@@ -8,6 +8,7 @@ from datetime import date, datetime, time, timedelta

 CLOCK = re.compile(r"^(?P<h>[01]?\\d|2[0-3]):(?P<m>[0-5]\\d)$")
+ROUNDING_MINUTES = 15


@@ -50,7 +51,8 @@ def parse_clock(text: str) -> time:
 def duration_hours(start: time, end: time) -> float:
-    \"\"\"Hours from `start` to `end`.\"\"\"
+    \"\"\"Hours from `start` to `end`, rounded to ROUNDING_MINUTES.\"\"\"
     minutes = (end.hour * 60 + end.minute) - (start.hour * 60 + start.minute)
-    return minutes / 60
+    quarters = round(minutes / ROUNDING_MINUTES)
+    return quarters * ROUNDING_MINUTES / 60
"""


def _week_table() -> str:
    """`tallyho --week 2026-03-02 --format markdown` over the sample week (durations fixed)."""
    rows = [("day", "start", "end", "hours", "project", "note")]
    for day, _, spans in WEEK_10_DAYS:
        for clock, project, note in spans:
            start, end = clock.split("-")
            minutes = (int(end[:2]) * 60 + int(end[3:])) - (int(start[:2]) * 60 + int(start[3:]))
            if minutes < 0:
                minutes += 24 * 60
            rows.append((day, start, end, f"{round(minutes / 15) * 15 / 60:.2f}", project, note))
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    total = sum(float(r[3]) for r in rows[1:])
    return "\n".join(lines) + f"\n\n{len(rows) - 1} spans, {total:.2f} hours\n\n[exit code 0, 0.15s]"


REPO_MAP = """Repository map of /home/dev/src/tallyho (generated at startup; may be stale)

pyproject.toml                 project metadata, ruff + pytest config
README.md                      usage: `tallyho --week 2026-03-02 --format markdown`
CHANGELOG.md
src/tallyho/__init__.py        __version__ = "0.9.2"
src/tallyho/__main__.py        python -m tallyho
src/tallyho/cli.py             build_parser, main
src/tallyho/sheet.py           load(path) -> list[Span]; DAY_HEADER, parse_day_header
src/tallyho/spans.py           Span, SpanError, parse_clock, duration_hours, parse_span,
                               split_at_midnight, total_hours, overlapping, next_day
src/tallyho/report.py          ReportContext, column_* (16 columns), COLUMNS, day_totals,
                               week_report, project_totals, render_* (6 formats), render,
                               summary_line
src/tallyho/rates.py           load_rates, load_clients
tests/conftest.py              tmp_sheet fixture
tests/test_sheet.py            22 tests
tests/test_spans.py            13 tests
tests/test_report.py           11 tests
tests/test_cli.py              9 tests
tests/data/week-10.txt         a sample sheet (five days, 31 spans)
"""

IDENTITY = """You are a Coder agent in an OpenCollab team. You work in the repository at {workspace}.

How you work:
- Read before you change: locate code with grep, read the narrowest range that answers your \
question (file_read with offset/limit), and do not re-read a file you already have unless it changed.
- Make the smallest change that fixes the problem; keep the project's style, typing and tests.
- Reproduce a bug before fixing it, and add a regression test that fails without your fix.
- Run the tests that cover your change, then the whole suite, before you say you are done.
- Use the tools for everything you do; never guess the content of a file or the result of a command.
- When a result is truncated, re-read a narrower range instead of asking for the whole file again.
- Report what you changed, why, and how you verified it, in a few sentences. Mention anything you \
could not verify.

Tools: file_read(path, offset?, limit?), grep(pattern, path?, glob?), bash(command, timeout?), \
run_tests(target?), git_diff(path?), file_edit(path, old, new), file_write(path, content), \
spawn_agent(role, task).

Safety: never run commands that touch anything outside the repository, never push, never \
delete files you did not create. Ask the lead when a task is ambiguous.
"""

TEAM = """Your team (run {run}):
- agent 0 · coder (you): owns the change and its tests.
- reviewers are spawned on demand with spawn_agent(role="reviewer", task=...); a reviewer reads \
the diff, runs the tests, and answers APPROVE or REQUEST CHANGES with reasons.
Budget: the team shares 1,000,000 tokens; you hold at most 250,000 at a time.
"""

TASK = """Context:
Workspace: {workspace} (git branch main, clean). Python 3.12, pytest.

Task:
Timesheet spans that cross midnight come out negative: `22:00-06:30 ops-oncall` on a night shift \
counts as -15.5 hours, so the weekly report subtracts the night shift from the week. Make a span \
whose end is earlier than its start run into the next day, and add a regression test. Keep every \
existing test passing.
"""

FOLLOW_UP = (
    "Thanks. One more thing while you are in there: in `tallyho --week`, a night shift should be "
    "listed on the day it started, even when it ends the next morning. Right now the report drops "
    "a span that starts on Sunday night and ends on Monday, because split_at_midnight is a stub."
)
STEERING = (
    "\n\n[steering, added before you started on it] Keep the CSV export byte-for-byte unchanged for "
    "spans that do not cross midnight; finance imports it."
)


def _pytest_output(
    tests: Iterable[str], failed: dict[str, str] | None = None, seconds: float = 0.21, verbose: bool = False
) -> str:
    failed = failed or {}
    names = list(tests)
    lines = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.12.7, pytest-8.3.4, pluggy-1.5.0"
        + (" -- /home/dev/.venvs/tallyho/bin/python" if verbose else ""),
        "cachedir: .pytest_cache" if verbose else "",
        f"rootdir: {WORKSPACE}",
        "configfile: pyproject.toml",
        f"collected {len(names)} items",
        "",
    ]
    lines = [ln for ln in lines[:-1] if ln] + [""]
    if verbose:
        for n, name in enumerate(names, 1):
            status = "FAILED" if name in failed else "PASSED"
            lines.append(f"{name} {status}".ljust(72) + f"[{n * 100 // len(names):3d}%]")
    else:
        by_file: dict[str, list[str]] = {}
        for name in names:
            by_file.setdefault(name.split("::")[0], []).append(name)
        for file, items in by_file.items():
            marks = "".join("F" if i in failed else "." for i in items)
            lines.append(f"{file} {marks}".ljust(72) + "[100%]")
    if failed:
        lines += ["", "=================================== FAILURES ==================================="]
        for name, trace in failed.items():
            lines += [f"{'_' * 29} {name.split('::')[-1]} {'_' * 29}", trace]
        lines += ["=========================== short test summary info ============================"]
        lines += [f"FAILED {n}" for n in failed]
        passed = len(names) - len(failed)
        lines.append(f"{'=' * 25} {len(failed)} failed, {passed} passed in {seconds:.2f}s {'=' * 25}")
    else:
        lines.append(f"{'=' * 30} {len(names)} passed in {seconds:.2f}s {'=' * 30}")
    return "\n".join(lines)


SHEET_TESTS = (
    "loads_the_sample_week",
    "day_header_with_weekday",
    "day_header_without_weekday",
    "weekday_must_match_the_date",
    "comment_lines_are_ignored",
    "blank_lines_are_ignored",
    "span_before_any_day_header",
    "two_headers_for_one_day",
    "days_must_be_in_order",
    "tabs_count_as_spaces",
    "crlf_line_endings",
    "utf8_bom_is_skipped",
    "error_names_file_and_line",
    "bad_clock_time_is_reported",
    "missing_project_is_reported",
    "notes_keep_inner_spaces",
    "hashtags_stay_in_the_note",
    "empty_file_is_an_empty_sheet",
    "header_only_day_has_no_spans",
    "default_sheet_path",
    "sheet_path_from_environment",
    "include_directive_reads_another_sheet",
)
CLI_TESTS = (
    "help_lists_every_option",
    "week_report_as_markdown",
    "unknown_column_is_an_error",
    "project_filter",
    "check_reports_overlaps",
    "check_exits_zero_when_clean",
    "output_file",
    "missing_sheet_is_exit_2",
    "bad_sheet_names_the_line",
)
SPAN_EXTRA_TESTS = (
    "bad_clock_times_are_rejected[25:00]",
    "bad_clock_times_are_rejected[9:60]",
    "bad_clock_times_are_rejected[noon]",
    "bad_clock_times_are_rejected[]",
    "bad_clock_times_are_rejected[12]",
    "a_span_needs_an_end_and_a_project",
    "overlapping_spans_are_found",
    "duration_hours_is_symmetric_in_rounding",
)
REPORT_EXTRA_TESTS = (
    "day_totals",
    "project_totals",
    "week_report_groups_by_day",
    "unknown_format_is_an_error",
    "context_rates",
)


def _suite(night: bool = False, week: bool = False) -> list[str]:
    out = [f"tests/test_cli.py::test_{name}" for name in CLI_TESTS]
    out += [f"tests/test_cli.py::test_every_format_writes_a_report[{fmt}]" for fmt in REPORT_FORMATS]
    out += [f"tests/test_report.py::test_{name}" for name, *_ in REPORT_TEST_CASES]
    out += [f"tests/test_report.py::test_{name}" for name in REPORT_EXTRA_TESTS]
    out += [f"tests/test_report.py::test_column_is_pure[{name}]" for name, *_ in REPORT_COLUMNS]
    if week:
        out.append("tests/test_report.py::test_week_report_lists_a_night_shift_on_its_start_day")
    out += [f"tests/test_sheet.py::test_{name}[{nl}]" for name in SHEET_TESTS for nl in ("lf", "crlf")]
    out += _span_tests(night)
    return out


def _span_tests(night: bool = False) -> list[str]:
    out = [f"tests/test_spans.py::test_duration_{name}" for name, *_ in SPAN_CASES]
    out += [f"tests/test_spans.py::test_{name}" for name in SPAN_EXTRA_TESTS]
    if night:
        out += [
            "tests/test_spans.py::test_duration_crosses_midnight",
            "tests/test_spans.py::test_duration_ends_at_midnight",
        ]
    return out


ZERO_LENGTH_FAILURE = """
    def test_duration_zero_length() -> None:
        span = parse_span(DAY, "10:00-10:00 client-x")
>       assert span.hours == pytest.approx(0.0)
E       assert 24.0 == 0.0 ± 1.0e-12
E
E         comparison failed
E         Obtained: 24.0
E         Expected: 0.0 ± 1.0e-12

tests/test_spans.py:58: AssertionError"""


def _diff(path: str, old: str, new: str, at: int) -> str:
    old_lines = old.split("\n")
    new_lines = new.split("\n")
    out = [f"diff --git a/{path} b/{path}", "index 3c1e9a2..8f04d17 100644", f"--- a/{path}", f"+++ b/{path}"]
    out.append(f"@@ -{at},{len(old_lines)} +{at},{len(new_lines)} @@")
    out += [f"-{line}" for line in old_lines]
    out += [f"+{line}" for line in new_lines]
    return "\n".join(out)


SPLIT_OLD = '''def split_at_midnight(span: Span) -> list[Span]:
    """The span as it counts per calendar day (one span unless it crosses midnight)."""
    return [span]'''

SPLIT_NEW = '''def split_at_midnight(span: Span) -> list[Span]:
    """The span as it counts per calendar day.

    A night shift is listed whole on the day it started (22:00-06:30 on Sunday counts 8.5 hours on
    Sunday): timesheets are signed per start day, and the CSV export of a span that does not cross
    midnight stays exactly as it was.
    """
    return [span]'''

WEEK_OLD = """    for span in spans:
        for part in split_at_midnight(span):
            if part.day in days:
                days[part.day].append(part)"""

WEEK_NEW = """    for span in spans:
        # a night shift counts on the day it started, even when it ends inside the next week
        if span.day in days:
            days[span.day].append(span)"""

NIGHT_TEST = """

def test_duration_crosses_midnight() -> None:
    span = parse_span(DAY, "22:00-06:30 ops-oncall")
    assert span.hours == pytest.approx(8.5)


def test_duration_ends_at_midnight() -> None:
    assert duration_hours(time(18, 0), time(0, 0)) == pytest.approx(6.0)"""

WEEK_TEST = """

def test_week_report_lists_a_night_shift_on_its_start_day() -> None:
    sunday = date(2026, 3, 8)
    night = parse_span(sunday, "22:00-06:30 ops-oncall")
    days = week_report([night], MONDAY)
    assert days[sunday] == [night]
    assert sum(s.hours for day in days.values() for s in day) == pytest.approx(8.5)"""


# -- the session -------------------------------------------------------------------------------


@dataclass
class Step:
    """One model call: the assistant reply and the tool results that answer it."""

    text: str | None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    seconds: float = 9.0


def _grep_files(pattern: str, files: dict[str, str]) -> str:
    """What `grep -n -E pattern` prints over `files` (path -> text)."""
    rx = re.compile(pattern)
    hits = [
        f"{path}:{n}:{line}"
        for path, text in sorted(files.items())
        for n, line in enumerate(text.split("\n"), 1)
        if rx.search(line)
    ]
    return "\n".join(hits) or f"(no matches for {pattern})"


def _line_of(text: str, prefix: str) -> int:
    return next(n for n, line in enumerate(text.split("\n"), 1) if line.startswith(prefix))


def _read_range(text: str, offset: int, limit: int) -> str:
    return numbered("\n".join(text.split("\n")[offset - 1 : offset - 1 + limit]), offset)


def _coder_steps() -> tuple[list[Step], list[Step]]:
    """The coder's steps before and after the user's follow-up."""
    spans_first_try = SPANS_PY.replace(SPANS_OLD_DURATION, SPANS_FIRST_TRY)
    spans_fixed = SPANS_PY.replace(SPANS_OLD_DURATION, SPANS_FIXED_DURATION)
    report = _report_py()
    src = {
        "src/tallyho/spans.py": SPANS_PY,
        "src/tallyho/report.py": report,
        "src/tallyho/sheet.py": SHEET_PY,
        "src/tallyho/cli.py": _cli_py(),
    }
    test_spans = _test_spans_py()
    test_report = _test_report_py()
    dur_at = _line_of(SPANS_PY, "def duration_hours")
    first = [
        Step(
            "I'll find where span durations are computed.",
            [("grep", {"pattern": "def duration_hours|def parse_span|\\.hours\\b", "path": "src"})],
            [_grep_files(r"def duration_hours|def parse_span|\.hours\b", src)],
        ),
        Step(
            None,
            [("file_read", {"path": "src/tallyho/spans.py"}), ("file_read", {"path": "tests/test_spans.py"})],
            [numbered(SPANS_PY), numbered(test_spans)],
        ),
        Step(
            "duration_hours subtracts clock minutes with no day boundary. Let me reproduce it.",
            [
                (
                    "bash",
                    {
                        "command": 'python -c "from datetime import date; from tallyho.spans import parse_span; '
                        "print(parse_span(date(2026, 3, 8), '22:00-06:30 ops-oncall').hours)\""
                    },
                )
            ],
            ["-15.5\n\n[exit code 0, 0.09s]"],
        ),
        Step(
            "Reproduced: -15.5. The weekly report sums these; let me see how report.py uses spans.",
            [("file_read", {"path": "src/tallyho/report.py"})],
            [numbered(report)],
            seconds=14.0,
        ),
        Step(
            None,
            [("grep", {"pattern": "split_at_midnight|total_hours|parse_span", "path": "src"})],
            [_grep_files("split_at_midnight|total_hours|parse_span", src)],
        ),
        Step(
            "Spans get their day from the sheet's day header; checking how the sheet reader builds them.",
            [
                ("file_read", {"path": "src/tallyho/sheet.py"}),
                ("file_read", {"path": "tests/data/week-10.txt"}),
            ],
            [numbered(SHEET_PY), numbered(_week_10())],
        ),
        Step(
            "The sample week has a Thursday night shift (22:00-06:30), yet no test checks its hours.",
            [("file_read", {"path": "src/tallyho/cli.py"}), ("file_read", {"path": "tests/test_cli.py"})],
            [numbered(src["src/tallyho/cli.py"]), numbered(_test_cli_py())],
        ),
        Step(
            "Before changing anything, the current state of the suite:",
            [("run_tests", {"target": "-v"})],
            [_pytest_output(_suite(), seconds=0.84, verbose=True)],
            seconds=12.0,
        ),
        Step(
            "All green, so nothing covers a night shift. I'll make an earlier end mean the next day, "
            "with regression tests.",
            [
                (
                    "file_edit",
                    {"path": "src/tallyho/spans.py", "old": SPANS_OLD_DURATION, "new": SPANS_FIRST_TRY},
                ),
                ("file_edit", {"path": "tests/test_spans.py", "old": "", "new": NIGHT_TEST, "append": True}),
            ],
            [
                f"Applied 1 edit to src/tallyho/spans.py (lines {dur_at}-{dur_at + 4} -> {dur_at}-{dur_at + 6}).",
                "Applied 1 edit to tests/test_spans.py (appended 9 lines).",
            ],
        ),
        Step(
            None,
            [("run_tests", {"target": "tests/test_spans.py"})],
            [
                _pytest_output(
                    _span_tests(night=True),
                    failed={"tests/test_spans.py::test_duration_zero_length": ZERO_LENGTH_FAILURE},
                    seconds=0.19,
                )
            ],
        ),
        Step(
            "A zero-length span became 24 hours: `<= 0` must be `< 0`. The function as edited:",
            [("file_read", {"path": "src/tallyho/spans.py", "offset": dur_at, "limit": 8})],
            [_read_range(spans_first_try, dur_at, 8)],
        ),
        Step(
            None,
            [
                (
                    "file_edit",
                    {"path": "src/tallyho/spans.py", "old": SPANS_FIRST_TRY, "new": SPANS_FIXED_DURATION},
                )
            ],
            [
                f"Applied 1 edit to src/tallyho/spans.py (lines {dur_at}-{dur_at + 6} -> {dur_at}-{dur_at + 10})."
            ],
        ),
        Step(
            None,
            [("run_tests", {"target": "-v"})],
            [_pytest_output(_suite(night=True), seconds=0.88, verbose=True)],
            seconds=12.0,
        ),
        Step(
            "Fixed. `duration_hours` now treats an end earlier than the start as the next day "
            f"(22:00-06:30 is 8.5 hours), and an end equal to the start stays an empty span. Two "
            f"regression tests cover a night shift and a span ending at midnight; all {len(_suite(night=True))} "
            "tests pass.",
        ),
    ]
    week_at = _line_of(report, "def week_report")
    split_at = _line_of(spans_fixed, "def split_at_midnight")
    loop_at = _line_of(report, WEEK_OLD.split("\n")[0])
    fixed_report = report.replace(WEEK_OLD, WEEK_NEW)
    comment_at = _line_of(fixed_report, WEEK_NEW.split("\n")[1])
    suite = _suite(night=True, week=True)
    diff = "\n".join(
        [
            _diff("src/tallyho/report.py", WEEK_OLD, WEEK_NEW, loop_at),
            _diff("src/tallyho/spans.py", SPANS_OLD_DURATION, SPANS_FIXED_DURATION, dur_at),
            _diff("src/tallyho/spans.py", SPLIT_OLD, SPLIT_NEW, split_at),
            _diff("tests/test_report.py", "", WEEK_TEST.strip("\n"), len(test_report.split("\n"))),
            _diff("tests/test_spans.py", "", NIGHT_TEST.strip("\n"), len(test_spans.split("\n"))),
        ]
    )
    second = [
        Step(
            "Understood: list a night shift on its start day, and leave the CSV of other spans as it is.",
            [("grep", {"pattern": "def week_report|def split_at_midnight", "path": "src"})],
            [
                _grep_files(
                    "def week_report|def split_at_midnight", {**src, "src/tallyho/spans.py": spans_fixed}
                )
            ],
        ),
        Step(
            "split_at_midnight is still the stub. Why was it left that way?",
            [("bash", {"command": "git log -p -2 -- src/tallyho/spans.py src/tallyho/report.py | head -80"})],
            [GIT_LOG + "\n[exit code 0, 0.03s]"],
        ),
        Step(
            "It waited for durations to handle the day boundary, which they now do. The week as it shows today:",
            [
                (
                    "bash",
                    {
                        "command": "python -m tallyho --sheet tests/data/week-10.txt --week 2026-03-02 --format markdown"
                    },
                )
            ],
            [_week_table()],
        ),
        Step(
            None,
            [("file_read", {"path": "src/tallyho/report.py", "offset": week_at - 8, "limit": 30})],
            [_read_range(report, week_at - 8, 30)],
        ),
        Step(
            "week_report keys parts by the day they fall on; I'll key whole spans by their start day and "
            "document the stub.",
            [
                ("file_edit", {"path": "src/tallyho/report.py", "old": WEEK_OLD, "new": WEEK_NEW}),
                ("file_edit", {"path": "src/tallyho/spans.py", "old": SPLIT_OLD, "new": SPLIT_NEW}),
            ],
            [
                f"Applied 1 edit to src/tallyho/report.py (lines {loop_at}-{loop_at + 3} -> {loop_at}-{loop_at + 3}).",
                f"Applied 1 edit to src/tallyho/spans.py (lines {split_at}-{split_at + 2} -> {split_at}-{split_at + 7}).",
            ],
        ),
        Step(None, [("file_read", {"path": "tests/test_report.py"})], [numbered(test_report)]),
        Step(
            None,
            [("file_edit", {"path": "tests/test_report.py", "old": "", "new": WEEK_TEST, "append": True})],
            ["Applied 1 edit to tests/test_report.py (appended 8 lines)."],
        ),
        Step(
            "Same week after the change: the Thursday night shift stays on Thursday with 8.50 hours:",
            [
                (
                    "bash",
                    {
                        "command": "python -m tallyho --sheet tests/data/week-10.txt --week 2026-03-02 --format markdown"
                    },
                )
            ],
            [_week_table()],
        ),
        Step(
            None,
            [("run_tests", {"target": "-v"})],
            [_pytest_output(suite, seconds=0.91, verbose=True)],
            seconds=12.0,
        ),
        Step(
            f"All {len(suite)} pass. The diff, to check the CSV path is untouched:",
            [("git_diff", {})],
            [diff],
        ),
        Step(
            "Only spans.py, report.py and their tests changed. Asking a reviewer before I finish.",
            [
                (
                    "spawn_agent",
                    {
                        "role": "reviewer",
                        "task": "Review the uncommitted change in /home/dev/src/tallyho (git diff): night shifts "
                        "(end before start) now run into the next day and are listed on their start day in "
                        "--week reports. Check the tests and that CSV output of other spans is unchanged.",
                    },
                )
            ],
            [REVIEW_VERDICT],
            seconds=95.0,
        ),
        Step(
            "The reviewer approved with one nit: the comment in week_report should say why. Fixing it.",
            [
                (
                    "file_edit",
                    {
                        "path": "src/tallyho/report.py",
                        "old": WEEK_NEW.split("\n")[1],
                        "new": "        # timesheets are signed per start day: a night shift counts on the day it started",
                    },
                )
            ],
            [f"Applied 1 edit to src/tallyho/report.py (line {comment_at})."],
        ),
        Step(
            None,
            [("bash", {"command": "ruff check src tests && ruff format --check src tests"})],
            ["All checks passed!\n14 files already formatted\n\n[exit code 0, 0.12s]"],
        ),
        Step(
            "Done. Night shifts now count correctly: an end earlier than the start runs into the next "
            "day (`22:00-06:30` is 8.5 hours, an equal start and end is still 0), and `tallyho --week` "
            "lists a night shift on the day it started. The CSV export of spans that do not cross "
            f"midnight is unchanged. Three regression tests were added; the whole suite ({len(suite)} tests) "
            "and ruff pass, and the reviewer approved the change.",
        ),
    ]
    return first, second


REVIEW_VERDICT = (
    "agent 1 (reviewer) finished: APPROVE\n\n"
    "- duration_hours: `< 0` (not `<= 0`) keeps an empty span at 0 hours; tests cover 22:00-06:30 and "
    "an end at 00:00.\n"
    "- week_report: spans are keyed by their start day; a Sunday night shift stays in the week it "
    "started. CSV rows of other spans are unchanged (column code untouched).\n"
    "- nit: the comment in week_report says what, not why (timesheets are signed per start day).\n"
    f"- suite: {len(_suite(night=True, week=True))} passed."
)

REVIEWER_IDENTITY = """You are a Reviewer agent in an OpenCollab team, working in {workspace}.
Read the change with git_diff, run the tests, and look for behaviour the change breaks. You do not
edit files. Answer APPROVE or REQUEST CHANGES, then one line per finding, most important first.
Tools: git_diff(path?), file_read(path, offset?, limit?), grep(pattern, path?), run_tests(target?).
"""


def _reviewer_steps(diff: str, test_report: str) -> list[Step]:
    return [
        Step("Reading the change.", [("git_diff", {})], [diff]),
        Step(None, [("run_tests", {})], [_pytest_output(_suite(night=True, week=True), seconds=0.90)]),
        Step(
            None,
            [("file_read", {"path": "tests/test_report.py", "offset": 1, "limit": 24})],
            [numbered("\n".join(test_report.split("\n")[:24]))],
        ),
        Step("APPROVE\n\n" + REVIEW_VERDICT.split("\n\n", 1)[1]),
    ]


# -- writing ---------------------------------------------------------------------------------------


@dataclass
class RunInfo:
    """What `generate_run` wrote, and what the harness would write for each agent at the end."""

    folder: Path
    files: list[Path]
    final_snapshots: dict[int, dict[str, Any]]
    """Per aid: the full snapshot the harness would write at the end (no journal)."""
    requests: dict[int, int]
    fired: dict[int, list[tuple[int, str]]]
    """Per aid: (request, rung) of every rung that fired."""

    @property
    def bytes(self) -> int:
        return sum(p.stat().st_size for p in self.files)


class _Clock:
    def __init__(self) -> None:
        self.now = BASE_TIME

    def tick(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now

    def iso(self) -> str:
        return self.now.isoformat()


class _Tracer:
    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.step = 0
        self.lines: list[str] = []

    def log(
        self, when: datetime, rtype: str, payload: dict[str, Any], tokens: int = 0, latency: float = 0.0
    ) -> None:
        self.step += 1
        record = {
            "timestamp": round(when.timestamp(), 3),
            "step": self.step,
            "run_id": self.run_id,
            "type": rtype,
            "payload": payload,
            "metrics": {"tokens": tokens, "latency_s": round(latency, 3)},
        }
        self.lines.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class _Agent:
    """One agent's ledger, session state, autosaves and trace records."""

    def __init__(self, aid: int, role: str, clock: _Clock, tracer: _Tracer) -> None:
        self.aid = aid
        self.role = role
        self.clock = clock
        self.tracer = tracer
        self.messages: list[dict[str, Any]] = []
        self.sequence = 0
        self.next_checkpoint = 1
        self.base: dict[str, Any] | None = None
        self.journal: list[str] = []
        self.folded: list[str] = []
        """Records of the last checkpoint's journal, kept to show one already folded record."""
        self.steps = 0
        self.used_tokens = 0
        self.context_tokens = 0
        self.seen: list[str] = []
        self.call_no = 0
        self.fired: list[tuple[int, str]] = []
        self.prev_sent: list[dict[str, Any]] = []
        self.prev_prompt = 0
        self.phase = "idle"
        self.terminal: str | None = None
        self.last_saved: dict[str, Any] = {}

    # -- messages
    def add(self, message: dict[str, Any], ctx: tuple[str, str, int] | None = None) -> None:
        m = dict(message)
        if ctx is not None:
            m["_ctx"] = {"name": ctx[0], "layer": ctx[1], "priority": ctx[2]}
        m["timestamp"] = self.clock.iso()
        self.messages.append(m)

    # -- autosave
    def meta(self, with_hashes: bool = True) -> dict[str, Any]:
        state: dict[str, Any] = {
            "used_tokens": self.used_tokens,
            "context_tokens": self.context_tokens,
            "step_count": self.steps,
            "markup_recovered": 0,
            "recent_call_hashes": [],
            "reads_since_last_edit": 0,
            "has_landed_write": self.steps > 8,
            "low_yield_since_progress": 0,
            "distinct_evidence_count": len(self.seen),
            "seen_result_hashes": list(self.seen),
            "scout_ledger": [],
            "steps_since_progress": 0,
            "wind_down_done": False,
            "wind_down_attempts": 0,
            "wind_down_token_mark": None,
            "budget_reserve_consumed": False,
            "loop_blocked_since_progress": 0,
            "phase": self.phase,
            "terminal_reason": self.terminal,
            "pending_events": [],
            "pending_external_user_turn": False,
            "active_turn_start_message_index": self._turn_start(),
            "pending_step_latency": None,
        }
        if not with_hashes:
            del state["seen_result_hashes"]
        return {
            "snapshot_version": 1,
            "aid": self.aid,
            "role": self.role,
            "model": MODEL,
            "session_state": state,
        }

    def _turn_start(self) -> int:
        users = [i for i, m in enumerate(self.messages) if m["role"] == "user"]
        return users[-1] if users else 0

    def snapshot(self) -> dict[str, Any]:
        return {**self.meta(), "_autosave_sequence": self.sequence, "messages": copy.deepcopy(self.messages)}

    def autosave(self, previous_count: int, added_hashes: Sequence[str] = ()) -> None:
        self.sequence += 1
        start = max(0, previous_count - 1)  # the one-message overlap
        record = {
            "journal_version": 1,
            "sequence": self.sequence,
            "replace_from": start,
            "message_count": len(self.messages),
            "messages": self.messages[start:],
            "meta": self.meta(with_hashes=False),
            "seen_result_hashes_reset": False,
            "seen_result_hashes_added": list(added_hashes),
        }
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        self.journal.append(line)
        self.last_saved = self.snapshot()
        if self.sequence >= self.next_checkpoint:
            self.base = self.snapshot()
            self.folded = self.journal[-1:]
            self.journal = []
            self.next_checkpoint *= 2

    # -- a model call
    def call(self, step: Step, call_prefix: str) -> list[str]:
        """Shape, call (trace it), append the reply and the results; returns the new call ids."""
        self.steps += 1
        self.phase = "calling_llm"
        view, fired = shape(self.messages)
        when = self.clock.tick(0.4)
        for rung in fired:
            self.tracer.log(
                when,
                "context_shaping",
                {
                    "seq": self.steps,
                    "aid": self.aid,
                    "rung": rung.name,
                    "tokens_before": rung.before,
                    "tokens_after": rung.after,
                },
            )
            self.fired.append((self.steps, rung.name))
        if not fired:
            before = estimate_view(view)
            self.tracer.log(
                when,
                "context_shaping",
                {
                    "seq": self.steps,
                    "aid": self.aid,
                    "rung": "none",
                    "tokens_before": before,
                    "tokens_after": before,
                },
            )
        prompt = TOOL_SCHEMA_TOKENS + sum(provider_tokens(m) for m in view)
        same = 0
        for a, b in zip(view, self.prev_sent, strict=False):
            if a != b:
                break
            same += 1
        cached = TOOL_SCHEMA_TOKENS + sum(provider_tokens(m) for m in view[:same]) if self.prev_sent else 0
        cached = min(cached, self.prev_prompt, prompt) // CACHE_BLOCK * CACHE_BLOCK
        self.prev_sent = view
        self.prev_prompt = prompt
        ids: list[str] = []
        tool_calls = []
        for name, args in step.calls:
            self.call_no += 1
            call_id = f"{call_prefix}{self.call_no:02d}"
            ids.append(call_id)
            tool_calls.append(
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            )
        reply: dict[str, Any] = {"role": "assistant", "content": step.text}
        if tool_calls:
            reply["tool_calls"] = tool_calls
        output = provider_tokens(reply) - 5 + 3
        usage = {
            "input_tokens": prompt,
            "output_tokens": output,
            "cache_read_tokens": cached,
            "cache_creation_tokens": 0,
            "uncached_input_tokens": prompt - cached,
            "reasoning_tokens": 0,
            "total_tokens": prompt + output,
            "estimated": False,
            "raw": {
                "prompt_tokens": prompt,
                "completion_tokens": output,
                "total_tokens": prompt + output,
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }
        latency = step.seconds * 0.6
        when = self.clock.tick(latency)
        self.tracer.log(
            when,
            "llm_call",
            {
                "aid": self.aid,
                "seq": self.steps,
                "model": MODEL,
                "finish_reason": "tool_calls" if tool_calls else "stop",
                "content": step.text,
                "tool_calls": tool_calls,
                "usage": usage,
                "reasoning": None,
                "thinking": None,
                "reasoning_effort": None,
            },
            tokens=prompt + output,
            latency=latency,
        )
        self.used_tokens += prompt + output
        self.context_tokens = prompt
        self.add(reply)
        return ids

    def results(self, step: Step, ids: Sequence[str]) -> list[str]:
        added = []
        for (name, _), call_id, content in zip(step.calls, ids, step.results, strict=True):
            self.clock.tick(step.seconds * 0.4 / max(1, len(ids)))
            self.add({"role": "tool", "tool_call_id": call_id, "name": name, "content": content})
            h = _hash(content)
            if h not in self.seen:
                self.seen.append(h)
                added.append(h)
        return added

    def run_step(self, step: Step, call_prefix: str, before_results: Any = None) -> None:
        count = len(self.messages)
        ids = self.call(step, call_prefix)
        if before_results is not None:
            before_results()
        added = self.results(step, ids)
        self.phase = "autosaving"
        self.autosave(count, added)
        self.phase = "idle"


def _startup(agent: _Agent, parts: Sequence[tuple[str, str, tuple[str, str, int]]]) -> None:
    for role, content, ctx in parts:
        agent.add({"role": role, "content": content}, ctx)
    agent.autosave(0)


def _history_compaction(tracer: _Tracer, clock: _Clock, aid: int) -> None:
    tracer.log(
        clock.tick(0.05),
        "session.history_compaction",
        {
            "aid": aid,
            "model": MODEL,
            "context_policy": "default",
            "context_window_tokens": CONTEXT_WINDOW,
            "history_trigger_tokens": TRIGGER,
            "history_target_tokens": TARGET,
            "history_thresholds_from": "context_window",
        },
    )


def _terminal(tracer: _Tracer, clock: _Clock, agent: _Agent) -> None:
    agent.phase = "done"
    agent.terminal = "completed"
    tracer.log(
        clock.tick(0.1),
        "session_terminal",
        {
            "aid": agent.aid,
            "role": agent.role,
            "phase": "done",
            "terminal_reason": "completed",
            "step_count": agent.steps,
            "max_steps": 120,
            "step_ceiling_reached": False,
            "used_tokens": agent.used_tokens,
            "max_budget_tokens": 250_000,
        },
    )


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def build_run() -> tuple[dict[str, str], RunInfo]:
    """The run folder's files (name -> text) and what they hold."""
    clock = _Clock()
    tracer = _Tracer(RUN_NAME)
    coder = _Agent(0, "coder", clock, tracer)
    reviewer = _Agent(1, "reviewer", clock, tracer)
    tracer.log(
        clock.tick(0.01),
        "assigned.topology_nodes",
        {"nodes": [{"aid": 0, "role": "coder", "parent": None, "budget_source": "dynamic"}]},
    )
    _history_compaction(tracer, clock, 0)
    _startup(
        coder,
        [
            ("system", IDENTITY.format(workspace=WORKSPACE), ("identity", "identity", 100)),
            ("system", TEAM.format(run=RUN_NAME), ("team", "team", 90)),
            ("system", REPO_MAP, ("repo_map", "project", 30)),
            ("user", TASK.format(workspace=WORKSPACE), ("task", "task", 80)),
        ],
    )
    first, second = _coder_steps()
    for step in first:
        clock.tick(1.5)
        coder.run_step(step, "call_")
    # the user's follow-up, then a steering note folded into that same user turn
    clock.tick(140.0)
    count = len(coder.messages)
    coder.add({"role": "user", "content": FOLLOW_UP})
    coder.autosave(count)
    clock.tick(6.0)
    coder.messages[-1] = {**coder.messages[-1], "content": FOLLOW_UP + STEERING}
    coder.autosave(len(coder.messages))

    test_report = _test_report_py()
    for step in second:
        clock.tick(1.5)
        if step.calls and step.calls[0][0] == "spawn_agent":
            diff = next(s for s in second if s.calls and s.calls[0][0] == "git_diff").results[0]

            def run_reviewer(task: str = str(step.calls[0][1]["task"]), diff: str = diff) -> None:
                tracer.log(
                    clock.tick(0.2),
                    "assigned.topology_nodes",
                    {"nodes": [{"aid": 1, "role": "reviewer", "parent": 0, "budget_source": "dynamic"}]},
                )
                _history_compaction(tracer, clock, 1)
                _startup(
                    reviewer,
                    [
                        (
                            "system",
                            REVIEWER_IDENTITY.format(workspace=WORKSPACE),
                            ("identity", "identity", 100),
                        ),
                        ("system", TEAM.format(run=RUN_NAME), ("team", "team", 90)),
                        ("user", task, ("task", "task", 80)),
                    ],
                )
                for rstep in _reviewer_steps(diff, test_report):
                    clock.tick(1.0)
                    reviewer.run_step(rstep, "rv_")
                _terminal(tracer, clock, reviewer)

            coder.run_step(step, "call_", before_results=run_reviewer)
        else:
            coder.run_step(step, "call_")
    _terminal(tracer, clock, coder)

    files: dict[str, str] = {}
    finals: dict[int, dict[str, Any]] = {}
    for agent in (coder, reviewer):
        name = f"agent_{agent.aid}_{agent.role}.json"
        assert agent.base is not None
        files[name] = _pretty(agent.base)
        journal = agent.journal
        if agent is coder:
            journal = agent.folded + journal  # one record already folded into the snapshot
        if journal:
            files[name + ".journal"] = "".join(line + "\n" for line in journal)
        finals[agent.aid] = agent.last_saved
    files["team.json"] = _pretty(
        {
            "run_id": RUN_NAME,
            "started_at": BASE_TIME.isoformat(),
            "updated_at": clock.iso(),
            "team_file": None,
            "agents": [
                {
                    "aid": a.aid,
                    "role": a.role,
                    "parent": None if a.aid == 0 else 0,
                    "status": "done",
                    "used_tokens": a.used_tokens,
                    "step_count": a.steps,
                }
                for a in (coder, reviewer)
            ],
        }
    )
    files["trajectory.jsonl"] = "".join(line + "\n" for line in tracer.lines)
    info = RunInfo(
        folder=RUN_DIR,
        files=[],
        final_snapshots=finals,
        requests={coder.aid: coder.steps, reviewer.aid: reviewer.steps},
        fired={coder.aid: coder.fired, reviewer.aid: reviewer.fired},
    )
    return files, info


def generate_run(out: Path = RUN_DIR) -> RunInfo:
    """Write the run folder to `out` (replacing what was there) and return what it holds."""
    files, info = build_run()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name, text in sorted(files.items()):
        path = out / name
        path.write_text(text, encoding="utf-8", newline="\n")
        info.files.append(path)
    info.folder = out
    return info


def write_final_snapshot(aid: int, path: Path) -> Path:
    """Write the snapshot the harness would write for agent `aid` at the end (no journal)."""
    _, info = build_run()
    path.write_text(_pretty(info.final_snapshots[aid]), encoding="utf-8", newline="\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.samples.opencollab",
        description="Write the deterministic OpenCollab sample run folder.",
    )
    parser.add_argument("--out", type=Path, default=RUN_DIR, help=f"the run folder (default: {RUN_DIR})")
    args = parser.parse_args(argv)
    info = generate_run(args.out)
    fired = ", ".join(
        f"{rung} x{sum(1 for _, r in info.fired[0] if r == rung)}"
        for rung in sorted({r for _, r in info.fired[0]})
    )
    print(f"{info.folder}: {len(info.files)} files, {info.bytes:,} bytes")
    print(f"  agent 0 coder: {info.requests[0]} requests; fired: {fired or 'nothing'}")
    print(f"  agent 1 reviewer: {info.requests[1]} requests")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
