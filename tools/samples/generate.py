"""Deterministic generator of Claude Code 2.1.x session transcripts (JSONL).

Every transcript tells the same kind of story: an engineer asks Claude Code to fix a bug and add a
feature in a small Python repository ("ledgerline", generated from templates), then asks for a few
follow-ups. Everything comes from a seeded ``random.Random`` and a fixed base timestamp: no wall
clock, no network, identical bytes for identical arguments. Lines are written as they are made,
so very large files (100 MB and more) stream out in bounded memory.

The usage figures are honest: the context of a request is a fixed overhead for the system prompt
and tool schemas plus a simple count (characters / 3.6, plus 8 per message; thinking at 1.3x) of
every message sent before it, as the model sees it (tool results by their ``content``, so a
``<persisted-output>`` preview, never ``toolUseResult``). ``cache_read_input_tokens`` is the
previous request's context and ``cache_creation_input_tokens`` the rest.

    python -m tools.samples.regenerate --out inspector/samples      # every registered sample and scenario
    python -m tools.samples.regenerate --requests 2000 --seed 3 --out big.jsonl
"""

from __future__ import annotations

import base64
import difflib
import json
import math
import random
import re
import string
import uuid
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from inspector.samples import SAMPLES, SAMPLES_DIR

__all__ = [
    "DEFAULT_MODEL",
    "RECIPES",
    "SYSTEM_OVERHEAD_TOKENS",
    "GeneratedInfo",
    "Recipe",
    "count_tokens",
    "generate_claude_code",
    "generate_sample",
]

CLAUDE_CODE_VERSION = "2.1.39"
DEFAULT_MODEL = "claude-sonnet-4-5-20250929"
BASE_TIME = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)
SYSTEM_OVERHEAD_TOKENS = 14_500
CHARS_PER_TOKEN = 3.6
TOKENS_PER_MESSAGE = 8
THINKING_WEIGHT = 1.3
PERSIST_THRESHOLD = 50_000
PERSIST_PREVIEW_CHARS = 2_048
BASH_MAX_OUTPUT = 30_000
READ_DEFAULT_LINES = 2_000
HOME = "/home/dev"
CWD = f"{HOME}/projects/ledgerline"
GIT_BRANCH = "fix/blank-rows-and-currency"
SLUG = "steady-ledger-lantern"
_ALNUM = string.ascii_letters + string.digits


@dataclass(frozen=True)
class GeneratedInfo:
    """What one generation wrote."""

    path: Path
    lines: int
    requests: int
    tool_calls: int
    first_context: int
    peak_context: int
    bytes: int


@dataclass(frozen=True)
class Recipe:
    """The arguments that produce one registered sample."""

    requests: int
    seed: int
    session_id: str
    target_peak_tokens: int | None
    scenario: str


RECIPES: dict[str, Recipe] = {
    "long-session": Recipe(
        requests=264,
        seed=7,
        session_id="7f3c9a2e-5b14-4d8e-9a61-2c0e8b4f1d37",
        target_peak_tokens=262_000,
        scenario="feature",
    ),
    "short-session": Recipe(
        requests=12,
        seed=11,
        session_id="3b8d41f0-92c7-4e5a-8f1d-6a0c2e7b9d54",
        target_peak_tokens=26_000,
        scenario="bugfix",
    ),
}


def count_tokens(text: str) -> int:
    """Tokens of ``text`` for the synthetic usage figures: characters / 3.6, rounded."""
    return round(len(text) / CHARS_PER_TOKEN)


# --------------------------------------------------------------------------------------------
# Small deterministic helpers
# --------------------------------------------------------------------------------------------


class _Ids:
    """Identifiers shaped like Claude Code's, drawn from the seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def uuid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def _b62(self, n: int) -> str:
        return "".join(self._rng.choices(_ALNUM, k=n))

    def message(self) -> str:
        return "msg_01" + self._b62(22)

    def request(self) -> str:
        return "req_011C" + self._b62(20)

    def tool(self) -> str:
        return "toolu_01" + self._b62(22)

    def hexstr(self, n: int) -> str:
        return f"{self._rng.getrandbits(4 * n):0{n}x}"

    def signature(self) -> str:
        return base64.b64encode(self._rng.randbytes(self._rng.randint(180, 560))).decode("ascii")


class _Clock:
    """Milliseconds since the fixed base time, advanced by seeded increments."""

    def __init__(self) -> None:
        self.ms = 0

    def advance(self, ms: int) -> str:
        self.ms += max(1, ms)
        return self.stamp()

    def stamp(self) -> str:
        moment = BASE_TIME + timedelta(milliseconds=self.ms)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _stable_seed(*parts: object) -> int:
    return zlib.crc32("\x1f".join(str(p) for p in parts).encode("utf-8"))


def _banner(text: str, char: str = "=", width: int = 80) -> str:
    """A pytest-style separator line with ``text`` centred."""
    inner = f" {text} "
    left = max(1, (width - len(inner)) // 2)
    right = max(1, width - len(inner) - left)
    return char * left + inner + char * right


# --------------------------------------------------------------------------------------------
# Fixed texts: project memory, skill body, prompts
# --------------------------------------------------------------------------------------------

CLAUDE_MD = """# ledgerline

Small CLI and library that turns bank/card CSV exports into categorised summaries.

## Layout
- `src/ledgerline/parser.py`: CSV rows -> `Entry` objects (`parse_rows`, `parse_amount`, `parse_date`)
- `src/ledgerline/io.py`: file reading (`load_entries`), JSON lines export
- `src/ledgerline/cli.py`: argparse entry point, `ledgerline summarize`
- `src/ledgerline/currency.py`, `rates.py`: money arithmetic and the exchange-rate table
- `src/ledgerline/report.py`: summaries and text/Markdown rendering
- `tests/`: pytest, one module per source module; fixtures in `tests/fixtures/`

## Commands
- Tests: `uv run pytest` (single file: `uv run pytest tests/test_parser.py -x`)
- Lint: `uv run ruff check src tests` and `uv run ruff format --check src tests`
- Types: `uv run mypy src` (strict; keep it clean)

## Conventions
- Money is always `Decimal`, never float. Round half-even to the cent only when rendering.
- Every bug fix gets a regression test that fails before the fix.
- The public API of `ledgerline.parser` is used by other teams: do not rename or remove
  functions there, only add keyword arguments with defaults.
- Keep functions small and typed; docstrings say what, not how.
- Do not commit; the user reviews `git diff` first.
"""

SKILL_NAME = "python-testing"
SKILL_BODY = f"""Base directory for this skill: {HOME}/.claude/skills/{SKILL_NAME}

# Python testing conventions

Use this skill when writing or changing pytest tests.

## Structure
- One test module per source module: `tests/test_<module>.py`. Regression tests for a reported
  bug may live in their own module named after the bug (`test_<module>_<bug>.py`).
- Test names say the behaviour: `test_parse_rows_skips_blank_trailing_line`, not `test_bug_12`.
- Prefer `pytest.mark.parametrize` over loops; give ids when the values are not self-explaining.
- Use `tmp_path` for files; never write into the repository from a test.

## Assertions
- Assert on values, not on truthiness: `assert total == Decimal("12.50")`.
- For errors use `pytest.raises(SomeError, match=...)` and check the message names the row.
- Money: compare `Decimal` to `Decimal`; never compare with floats.

## Running
- Run the narrowest selection first (`uv run pytest tests/test_x.py -x`), then the full suite.
- A test that fails before the fix and passes after it is the proof; show both runs.
"""

FEATURE_PROMPTS: tuple[str, ...] = (
    "The `ledgerline summarize` command crashes with `IndexError: list index out of range` when "
    "the CSV export from our bank ends with a blank line (there is one in "
    "tests/fixtures/bank_export_trailing_blank.csv). Please find the cause in the parser and fix "
    "it, with a regression test.\n\nAfter that, add a `--currency CODE` option to `summarize` "
    "that converts all totals to the given currency using the rates table in "
    "`ledgerline/rates.py`; the default stays the ledger's own currency. Keep the public API of "
    "`ledgerline.parser` unchanged.",
    "now also handle the empty case: a file with only the header row (or nothing at all) should "
    "print an empty summary instead of failing",
    "run the full suite",
    "ok. update CHANGELOG.md and show me the final diff before I commit",
)

EXTRA_PROMPTS: tuple[tuple[str, str], ...] = (
    ("summarize --by month puts entries booked on the 31st into the next month, can you look?", "fix"),
    ("run the full suite", "verify"),
    ("add the missing type hints in categories.py and get mypy clean again", "verify"),
    ("rates lookups are slow on big exports (about 2s per file), can you speed that up?", "feature"),
    ("looks good, commit it", "wrapup"),
    ("the markdown report should right-align the totals column", "feature"),
    ("some exports use ; as delimiter, make the parser detect it", "fix"),
)

BUGFIX_PROMPTS: tuple[str, ...] = (
    "Some bank exports write negative amounts with a trailing minus, like `12.50-`. "
    "`parse_amount` in src/ledgerline/parser.py rejects them with a ParseError. Make it accept "
    "that form (it means -12.50) and add a test.",
    "run the full suite",
)


# --------------------------------------------------------------------------------------------
# The virtual repository
# --------------------------------------------------------------------------------------------

_HEADER_IMPORTS = (
    "import csv",
    "import logging",
    "import os",
    "from collections import defaultdict",
    "from collections.abc import Iterable, Iterator, Mapping, Sequence",
    "from dataclasses import dataclass, field",
    "from datetime import date, datetime",
    "from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation",
    "from pathlib import Path",
)

_HEADER_CONSTANTS = (
    'DEFAULT_DELIMITER = ","',
    'CENT = Decimal("0.01")',
    'MAX_AMOUNT = Decimal("10000000")',
    'DATE_FORMATS = ("%Y-%m-%d", "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y")',
    'DEFAULT_RATES: dict[str, Decimal] = {"USD": Decimal("1"), "EUR": Decimal("0.92"), "GBP": Decimal("0.79")}',
)

_ERROR_CLASS = r'''
class $Err(ValueError):
    """Raised when a $noun cannot be processed; carries the 1-based row number."""

    def __init__(self, row: int, message: str) -> None:
        super().__init__(f"row {row}: {message}")
        self.row = row
'''

_FUNCTION_TEMPLATES: tuple[tuple[str, str], ...] = (
    (
        "check_{noun}s",
        r'''
def $fn(items: Iterable[Entry], *, strict: bool = False) -> list[Entry]:
    """Check every $noun in ``items`` and return the ones that pass.

    A failing $noun raises :class:`$Err` when ``strict`` is true; otherwise it is
    skipped and logged at debug level.
    """
    kept: list[Entry] = []
    for index, item in enumerate(items, start=1):
        try:
            value = _validated(item)
        except ($Err, ValueError) as exc:
            if strict:
                raise $Err(index, str(exc)) from exc
            logger.debug("skipping $noun %d: %s", index, exc)
            continue
        kept.append(value)
    return kept
''',
    ),
    (
        "lookup_{noun}",
        r'''
def $fn(key: str, table: Mapping[str, Decimal] | None = None) -> Decimal:
    """Return the $noun stored under ``key``; keys are compared case-insensitively."""
    source = table if table is not None else DEFAULT_RATES
    normalized = key.strip().upper()
    try:
        return source[normalized]
    except KeyError:
        raise $Err(0, f"unknown $noun: {key!r}") from None
''',
    ),
    (
        "group_{noun}s_by_{key}",
        r'''
def $fn(items: Iterable[Entry]) -> dict[str, list[Entry]]:
    """Group ``items`` by $key, keeping the input order inside each group."""
    groups: dict[str, list[Entry]] = defaultdict(list)
    for item in items:
        groups[str(item.$key)].append(item)
    return dict(groups)
''',
    ),
    (
        "total_{noun}",
        r'''
def $fn(items: Iterable[Entry], quantum: Decimal = CENT) -> Decimal:
    """Sum the amounts of ``items`` and round half-even to ``quantum``."""
    total = sum((item.amount.amount for item in items), start=Decimal("0"))
    return total.quantize(quantum, rounding=ROUND_HALF_EVEN)
''',
    ),
    (
        "render_{noun}_table",
        r'''
def $fn(rows: Sequence[tuple[str, Decimal]], width: int = 72) -> str:
    """Render ``rows`` of (label, value) as a fixed-width text table."""
    label_width = max((len(label) for label, _ in rows), default=10) + 2
    lines = [f"{'$noun':<{label_width}}{'total':>{width - label_width}}"]
    lines.append("-" * width)
    for label, value in rows:
        lines.append(f"{label:<{label_width}}{value:>{width - label_width},.2f}")
    return "\n".join(lines)
''',
    ),
    (
        "iter_{noun}s",
        r'''
def $fn(path: Path, delimiter: str = DEFAULT_DELIMITER) -> Iterator[list[str]]:
    """Yield the raw rows of ``path`` after the header row."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        header = next(reader, None)
        if header is None:
            return
        for row in reader:
            yield [cell.strip() for cell in row]
''',
    ),
    (
        "merge_{noun}s",
        r'''
def $fn(base: Mapping[str, Entry], extra: Mapping[str, Entry]) -> dict[str, Entry]:
    """Merge two $noun tables; entries in ``extra`` win on conflicts."""
    merged = dict(base)
    for key, value in extra.items():
        if key in merged and merged[key] != value:
            logger.info("overriding $noun %s", key)
        merged[key] = value
    return merged
''',
    ),
    (
        "validate_{noun}",
        r'''
def $fn(item: Entry) -> list[str]:
    """Return the problems found in ``item`` (an empty list means it is valid)."""
    problems: list[str] = []
    if not str(item.$key).strip():
        problems.append("missing $key")
    if item.amount.amount.is_nan():
        problems.append("amount is not a number")
    if abs(item.amount.amount) > MAX_AMOUNT:
        problems.append(f"amount {item.amount.amount} exceeds {MAX_AMOUNT}")
    return problems
''',
    ),
    (
        "parse_{noun}_date",
        r'''
def $fn(raw: str, formats: Sequence[str] = DATE_FORMATS) -> date:
    """Parse the $noun date with the first of ``formats`` that matches."""
    text = raw.strip()
    for fmt in formats:
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    raise $Err(0, f"unrecognised date {raw!r}; expected one of {', '.join(formats)}")
''',
    ),
    (
        "load_{noun}_settings",
        r'''
def $fn(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Read ``LEDGERLINE_${NOUN}_*`` settings from ``env`` (default: the process environment)."""
    source = os.environ if env is None else env
    prefix = "LEDGERLINE_${NOUN}_"
    settings = {key[len(prefix):].lower(): value for key, value in source.items() if key.startswith(prefix)}
    logger.debug("loaded %d $noun settings", len(settings))
    return settings
''',
    ),
    (
        "{noun}_cache_key",
        r'''
def $fn(item: Entry, *, precision: int = 2) -> tuple[str, str]:
    """Return a hashable key that identifies ``item`` for caching."""
    amount = item.amount.amount.quantize(Decimal(1).scaleb(-precision))
    return (str(item.$key), f"{amount}:{item.amount.currency}")
''',
    ),
    (
        "{Noun}Index",
        r'''
class $fn:
    """In-memory index of ${noun}s keyed by $key."""

    def __init__(self, items: Iterable[Entry] = ()) -> None:
        self._by_key: dict[str, list[Entry]] = defaultdict(list)
        for item in items:
            self.add(item)

    def __len__(self) -> int:
        return sum(len(bucket) for bucket in self._by_key.values())

    def add(self, item: Entry) -> None:
        """Add ``item`` to the index."""
        self._by_key[str(item.$key)].append(item)

    def find(self, key: str) -> list[Entry]:
        """Return the ${noun}s stored under ``key`` (an empty list when none)."""
        return list(self._by_key.get(key, ()))

    def keys(self) -> list[str]:
        """Return the keys in insertion order."""
        return list(self._by_key)
''',
    ),
    (
        "{Noun}Policy",
        r'''
@dataclass(frozen=True)
class $fn:
    """How ${noun}s are rounded, filtered and labelled in reports."""

    quantum: Decimal = CENT
    include_zero: bool = False
    label: str = "$noun"
    exclude: tuple[str, ...] = ()

    def accepts(self, item: Entry) -> bool:
        """Return true when ``item`` should appear in a report."""
        if str(item.$key) in self.exclude:
            return False
        return self.include_zero or item.amount.amount != 0

    def rounded(self, value: Decimal) -> Decimal:
        """Round ``value`` half-even to the policy's quantum."""
        return value.quantize(self.quantum, rounding=ROUND_HALF_EVEN)
''',
    ),
)

_NOUNS = (
    "amount",
    "row",
    "entry",
    "payee",
    "category",
    "rate",
    "total",
    "account",
    "period",
    "balance",
    "record",
    "batch",
    "statement",
    "transfer",
    "budget",
    "posting",
    "split",
    "memo",
    "fee",
    "refund",
)
_KEYS = ("payee", "category", "booked", "memo", "account")

# Hand-written functions the story edits; generic edits never touch them.
_PARSER_CORE = r'''
def parse_rows(rows: Iterable[list[str]], *, currency: str = "USD") -> Iterator[Entry]:
    """Turn raw CSV rows (header already removed) into entries.

    Columns are ``date, payee, amount[, memo[, currency]]``. Amounts use the ledger
    currency unless the row carries its own code in the fifth column.
    """
    for number, row in enumerate(rows, start=2):
        booked = parse_date(row[0])
        payee = row[1].strip()
        amount = parse_amount(row[2])
        memo = row[3].strip() if len(row) > 3 else ""
        code = row[4].strip().upper() if len(row) > 4 else currency
        yield Entry(booked=booked, payee=payee, amount=Money(amount, code), memo=memo, row=number)


def parse_amount(raw: str) -> Decimal:
    """Parse an amount written like ``1,234.50``, ``-7`` or ``(12.00)``."""
    text = raw.strip().replace(",", "")
    negative = text.startswith("(") and text.endswith(")")
    if negative:
        text = text[1:-1]
    try:
        value = Decimal(text)
    except InvalidOperation as exc:
        raise ParseError(0, f"not an amount: {raw!r}") from exc
    return -value if negative else value


def parse_date(raw: str) -> date:
    """Parse a booking date in any of :data:`DATE_FORMATS`."""
    text = raw.strip()
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    raise ParseError(0, f"unrecognised date {raw!r}")
'''

_CLI_CORE = r'''
def build_parser() -> argparse.ArgumentParser:
    """Build the ``ledgerline`` argument parser with its subcommands."""
    parser = argparse.ArgumentParser(prog="ledgerline", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    summarize = commands.add_parser("summarize", help="print totals per category")
    summarize.add_argument("path", type=Path, help="CSV export to read")
    summarize.add_argument("--by", choices=("category", "payee", "month"), default="category")
    summarize.add_argument("--format", choices=("text", "markdown"), default="text")
    return parser


def cmd_summarize(args: argparse.Namespace) -> int:
    """Run ``ledgerline summarize``: parse, categorise and print totals."""
    entries = list(load_entries(args.path))
    summary = summarize_entries(entries, by=args.by)
    print(render_summary(summary, fmt=args.format))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ledgerline`` console script."""
    args = build_parser().parse_args(argv)
    if args.command == "summarize":
        return cmd_summarize(args)
    return 2
'''

_CURRENCY_CORE = r'''
def convert(money: Money, to: str, rates: Mapping[str, Decimal]) -> Money:
    """Convert ``money`` to the currency ``to`` using USD-based ``rates``."""
    if money.currency == to:
        return money
    usd = money.amount / rates[money.currency]
    return Money((usd * rates[to]).quantize(CENT, rounding=ROUND_HALF_EVEN), to)
'''

_IO_CORE = r'''
def load_entries(path: Path, *, currency: str = "USD") -> Iterator[Entry]:
    """Read a CSV export and yield its entries (the header row is skipped)."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        rows = csv.reader(handle)
        next(rows, None)
        yield from parse_rows(rows, currency=currency)
'''

_RATES_CORE = r'''
def load_rates(path: Path | None = None) -> dict[str, Decimal]:
    """Load the USD-based rate table from ``path`` (default: the bundled ``rates.csv``)."""
    source = path or Path(__file__).with_name("rates.csv")
    table = dict(DEFAULT_RATES)
    with source.open(newline="", encoding="utf-8") as handle:
        for code, value in csv.reader(handle):
            table[code.strip().upper()] = Decimal(value)
    return table
'''

_CORE_NAMES = frozenset(
    {
        "parse_rows",
        "parse_amount",
        "parse_date",
        "build_parser",
        "cmd_summarize",
        "main",
        "convert",
        "convert_summary",
        "load_entries",
        "load_rates",
    }
)

# (path, docstring, raw characters, extra imports, core snippet)
_SOURCE_MODULES: tuple[tuple[str, str, int, tuple[str, ...], str], ...] = (
    (
        "src/ledgerline/parser.py",
        "Parse bank and card CSV exports into :class:`~ledgerline.models.Entry` objects.",
        31_000,
        ("from ledgerline.models import Entry, Money",),
        _PARSER_CORE,
    ),
    (
        "src/ledgerline/cli.py",
        "Command line interface: ``ledgerline summarize`` and friends.",
        14_000,
        (
            "import argparse",
            "from ledgerline.currency import convert_summary",
            "from ledgerline.io import load_entries",
            "from ledgerline.models import Entry, Summary",
            "from ledgerline.rates import load_rates",
            "from ledgerline.report import render_summary, summarize_entries",
        ),
        _CLI_CORE,
    ),
    (
        "src/ledgerline/report.py",
        "Summaries and text/Markdown reports over parsed entries.",
        18_000,
        ("from ledgerline.models import Entry, Summary",),
        "",
    ),
    (
        "src/ledgerline/models.py",
        "Value objects shared by the parser, the rates table and the reports.",
        6_000,
        (),
        "",
    ),
    (
        "src/ledgerline/currency.py",
        "Currency codes, money arithmetic and conversion helpers.",
        5_500,
        ("from ledgerline.models import Entry, Money, Summary",),
        _CURRENCY_CORE,
    ),
    (
        "src/ledgerline/rates.py",
        "Exchange-rate table: loading, caching and lookups by date.",
        7_000,
        ("from ledgerline.models import Entry",),
        _RATES_CORE,
    ),
    (
        "src/ledgerline/io.py",
        "Reading and writing ledger files (CSV in, JSON lines out).",
        5_000,
        ("from ledgerline.models import Entry", "from ledgerline.parser import parse_rows"),
        _IO_CORE,
    ),
    (
        "src/ledgerline/config.py",
        "Configuration from ``ledgerline.toml`` and the environment.",
        4_000,
        (),
        "",
    ),
    (
        "src/ledgerline/validation.py",
        "Checks run on parsed entries before they are summarized.",
        6_000,
        ("from ledgerline.models import Entry",),
        "",
    ),
    (
        "src/ledgerline/categories.py",
        "Rule-based categorisation of entries by payee and memo.",
        5_000,
        ("from ledgerline.models import Entry",),
        "",
    ),
    ("src/ledgerline/formatting.py", "Number and date formatting for reports.", 4_000, (), ""),
)

_TEST_MODULES: tuple[tuple[str, str, int], ...] = (
    ("tests/test_parser.py", "src/ledgerline/parser.py", 8_000),
    ("tests/test_cli.py", "src/ledgerline/cli.py", 5_000),
    ("tests/test_report.py", "src/ledgerline/report.py", 5_000),
    ("tests/test_currency.py", "src/ledgerline/currency.py", 3_500),
    ("tests/test_rates.py", "src/ledgerline/rates.py", 3_000),
    ("tests/test_io.py", "src/ledgerline/io.py", 3_000),
    ("tests/test_validation.py", "src/ledgerline/validation.py", 3_000),
    ("tests/test_categories.py", "src/ledgerline/categories.py", 3_000),
    ("tests/test_formatting.py", "src/ledgerline/formatting.py", 2_500),
)

_TEST_CASES = (
    "blank_rows",
    "unicode_payee",
    "negative_amounts",
    "thousands_separator",
    "missing_column",
    "duplicate_rows",
    "zero_total",
    "mixed_currencies",
    "empty_input",
    "semicolon_delimiter",
    "trailing_whitespace",
    "leap_day",
    "large_values",
    "bom_header",
)
_RAW_AMOUNTS = ("12.50", "1,234.00", "(7.25)", "-0.01", "0", "250", "99.99", "3,000.10", "(0.50)", "18.00")

_CONFTEST = '''"""Shared helpers for the ledgerline tests."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from ledgerline.models import Entry, Money

FIXTURES = Path(__file__).parent / "fixtures"


def make_entry(payee: str = "Grocer", amount: str = "-23.40", currency: str = "USD") -> Entry:
    """Build an entry with sensible defaults for tests."""
    return Entry(
        booked=date(2024, 1, 5),
        payee=payee,
        amount=Money(Decimal(amount), currency),
        memo="",
        row=2,
    )


@pytest.fixture
def bank_export() -> Path:
    return FIXTURES / "bank_export.csv"
'''

_TEXT_FILES: dict[str, str] = {
    "CLAUDE.md": CLAUDE_MD,
    "README.md": (
        "# ledgerline\n\nTurn bank and card CSV exports into categorised summaries.\n\n"
        "```\nuv run ledgerline summarize export.csv --by category\n```\n\n"
        "Totals are computed with `Decimal` and rounded half-even to the cent when rendered.\n"
    ),
    "CHANGELOG.md": (
        "# Changelog\n\n## Unreleased\n\n## 0.7.0 - 2026-02-11\n\n"
        "- `summarize --by month` groups entries by booking month.\n"
        "- Markdown output for `summarize --format markdown`.\n"
        "- Rates table can be overridden with `LEDGERLINE_RATES_FILE`.\n\n"
        "## 0.6.2 - 2026-01-20\n\n- Accept `DD.MM.YYYY` dates.\n- Fix rounding of negative totals.\n"
    ),
    "pyproject.toml": (
        '[project]\nname = "ledgerline"\nversion = "0.7.0"\nrequires-python = ">=3.11"\n'
        'dependencies = []\n\n[project.scripts]\nledgerline = "ledgerline.cli:main"\n\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n\n[tool.mypy]\nstrict = true\n'
    ),
}

_COMMIT_MESSAGES = (
    "Add --by month grouping to summarize",
    "report: Markdown output",
    "rates: allow overriding the table with LEDGERLINE_RATES_FILE",
    "parser: accept DD.MM.YYYY dates",
    "Fix rounding of negative totals",
    "categories: match payee rules case-insensitively",
    "io: read UTF-8 files with a BOM",
    "Bump version to 0.7.0",
    "validation: flag amounts above MAX_AMOUNT",
    "tests: fixtures for the card export format",
    "cli: exit with 2 on unknown subcommands",
    "formatting: thousands separators in text tables",
)


@dataclass
class _Function:
    name: str
    start: int  # index of the ``def``/``class`` line
    end: int  # index one past the last line


class _Repo:
    """A small Python repository held in memory; reads, greps and edits work on it."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.files: dict[str, list[str]] = {}
        self.tests: dict[str, list[str]] = {}
        self.baseline: dict[str, list[str]] = {}
        self.untracked: list[str] = []
        self.commits: list[tuple[str, str]] = [
            (f"{rng.getrandbits(28):07x}", message) for message in _COMMIT_MESSAGES
        ]
        self._functions: dict[str, list[_Function]] = {}
        for rel, text in _TEXT_FILES.items():
            self.files[rel] = text.split("\n")[:-1]
        self.files["src/ledgerline/__init__.py"] = [
            '"""ledgerline: bank CSV exports to categorised summaries."""',
            "",
            '__version__ = "0.7.0"',
        ]
        for rel, doc, size, imports, core in _SOURCE_MODULES:
            self.files[rel] = self._python_module(rel, doc, size, imports, core)
        self.files["tests/conftest.py"] = _CONFTEST.split("\n")[:-1]
        for rel, src, size in _TEST_MODULES:
            lines, ids = self.make_test_module(src, size)
            self.files[rel] = lines
            self.tests[rel] = ids

    # -- generation ------------------------------------------------------------------------

    def _python_module(self, rel: str, doc: str, size: int, imports: tuple[str, ...], core: str) -> list[str]:
        rng = random.Random(_stable_seed("module", rel, self.rng.random()))
        module = rel.rsplit("/", 1)[-1].removesuffix(".py")
        error = "".join(part.capitalize() for part in module.split("_")) + "Error"
        lines = [f'"""{doc}"""', "", "from __future__ import annotations", ""]
        stdlib = set(_HEADER_IMPORTS) | {i for i in imports if i.startswith("import ")}
        lines += sorted(stdlib, key=lambda line: (line.startswith("from "), line))
        lines.append("")
        lines += [i for i in imports if i.startswith("from ledgerline")]
        lines += ["", "logger = logging.getLogger(__name__)", "", *_HEADER_CONSTANTS, ""]
        lines += string.Template(_ERROR_CLASS).substitute(Err=error, noun=module).split("\n")
        if core:
            lines += ["", *core.split("\n")]
        used: set[str] = set(_CORE_NAMES)
        total = sum(len(line) + 1 for line in lines)
        while total < size:
            pattern, template = rng.choice(_FUNCTION_TEMPLATES)
            noun = rng.choice(_NOUNS)
            key = rng.choice(_KEYS)
            name = pattern.format(noun=noun, key=key, Noun=noun.capitalize())
            if name in used:
                second = rng.choice(_NOUNS)
                name = pattern.format(
                    noun=f"{noun}_{second}", key=key, Noun=noun.capitalize() + second.capitalize()
                )
            if name in used:
                continue
            used.add(name)
            body = string.Template(template).substitute(
                fn=name, noun=noun, NOUN=noun.upper(), key=key, Err=error
            )
            chunk = ["", *body.split("\n")]
            lines += chunk
            total += sum(len(line) + 1 for line in chunk)
        while lines and not lines[-1]:
            lines.pop()
        return lines

    def make_test_module(self, src: str, size: int) -> tuple[list[str], list[str]]:
        rng = random.Random(_stable_seed("tests", src, self.rng.random()))
        module = src.rsplit("/", 1)[-1].removesuffix(".py")
        targets = [f.name for f in self.functions(src) if f.name[0].islower() and not f.name.startswith("_")]
        error = "".join(part.capitalize() for part in module.split("_")) + "Error"
        body: list[str] = []
        ids: list[str] = []
        imported: set[str] = set()
        names: set[str] = set()
        while sum(len(line) + 1 for line in body) < size:
            fn = rng.choice(targets)
            case = rng.choice(_TEST_CASES)
            kind = rng.random()
            if kind < 0.35:
                name = f"test_{fn}_handles_{case}"
                if name in names:
                    continue
                raws = rng.sample(_RAW_AMOUNTS, rng.randint(3, 6))
                cases = [f'        ("{raw}", Decimal("{_decimal_of(raw)}")),' for raw in raws]
                body += ["", "", "@pytest.mark.parametrize(", '    ("raw", "expected"),', "    [", *cases]
                body += ["    ],", ")", f"def {name}(raw: str, expected: Decimal) -> None:"]
                body += [f"    assert {fn}(raw) == expected"]
                ids += [f"{name}[{raw}-expected{i}]" for i, raw in enumerate(raws)]
            elif kind < 0.6:
                name = f"test_{fn}_rejects_{case}"
                if name in names:
                    continue
                body += ["", "", f"def {name}() -> None:", f"    with pytest.raises({error}):"]
                body += [f'        {fn}("{rng.choice(("n/a", "", "12..5", "--", "2024-13-40"))}")']
                ids.append(name)
                imported.add(error)
            elif kind < 0.8:
                name = f"test_{fn}_reads_{case}"
                if name in names:
                    continue
                body += ["", "", f"def {name}(tmp_path: Path) -> None:", '    path = tmp_path / "ledger.csv"']
                body += [
                    '    path.write_text("date,payee,amount\\n2024-01-05,Grocer,-23.40\\n", encoding="utf-8")'
                ]
                body += [f"    rows = list({fn}(path))", "    assert len(rows) == 1"]
                ids.append(name)
            else:
                name = f"test_{fn}_keeps_{case}"
                if name in names:
                    continue
                body += ["", "", f"def {name}() -> None:"]
                body += [
                    '    entries = [make_entry(payee="Grocer"), make_entry(payee="Rent", amount="-950.00")]'
                ]
                body += [f"    result = {fn}(entries)", "    assert result is not None"]
                ids.append(name)
            names.add(name)
            imported.add(fn)
        header = [
            f'"""Tests for :mod:`ledgerline.{module}`."""',
            "",
            "from __future__ import annotations",
            "",
            "from decimal import Decimal",
            "from pathlib import Path",
            "",
            "import pytest",
            "",
            "from conftest import make_entry",
            f"from ledgerline.{module} import {', '.join(sorted(imported))}",
        ]
        return header + body, ids

    # -- queries ---------------------------------------------------------------------------

    def abs(self, rel: str) -> str:
        return f"{CWD}/{rel}"

    def text(self, rel: str) -> str:
        return "\n".join(self.files[rel]) + "\n"

    def render(self, rel: str, offset: int = 1, limit: int | None = None) -> tuple[str, str, int, int]:
        """Claude Code's Read output: (numbered text, raw slice, lines shown, total lines)."""
        lines = self.text(rel).split("\n")
        start = max(0, offset - 1)
        chosen = lines[start : start + limit] if limit is not None else lines[start:]
        numbered = "\n".join(f"{start + i + 1:>6}→{line}" for i, line in enumerate(chosen))
        return numbered, "\n".join(chosen), len(chosen), len(lines)

    def rendered_size(self, rel: str) -> int:
        lines = self.files[rel]
        return sum(len(line) + 8 for line in lines) + 7

    def functions(self, rel: str) -> list[_Function]:
        cached = self._functions.get(rel)
        if cached is not None:
            return cached
        found: list[_Function] = []
        lines = self.files[rel]
        for i, line in enumerate(lines):
            match = re.match(r"(?:def|class) (\w+)", line)
            if match:
                end = i + 1
                while end < len(lines) and (not lines[end] or lines[end][0] in " )"):
                    end += 1
                while end > i + 1 and not lines[end - 1]:
                    end -= 1
                found.append(_Function(match.group(1), i, end))
        self._functions[rel] = found
        return found

    def find_function(self, rel: str, name: str) -> _Function | None:
        for function in self.functions(rel):
            if function.name == name:
                return function
        return None

    def line_of(self, rel: str, needle: str) -> int:
        """1-based number of the first line containing ``needle`` (1 when absent)."""
        for i, line in enumerate(self.files[rel]):
            if needle in line:
                return i + 1
        return 1

    def python_files(self, prefix: str = "") -> list[str]:
        return sorted(rel for rel in self.files if rel.endswith(".py") and rel.startswith(prefix))

    def grep(self, pattern: str, prefix: str = "") -> list[tuple[str, int, str]]:
        regex = re.compile(pattern)
        hits: list[tuple[str, int, str]] = []
        for rel in self.python_files(prefix):
            for i, line in enumerate(self.files[rel]):
                if regex.search(line):
                    hits.append((rel, i + 1, line))
        return hits

    def test_file_for(self, rel: str) -> str:
        module = rel.rsplit("/", 1)[-1]
        candidate = f"tests/test_{module}"
        return candidate if candidate in self.tests else "tests/test_parser.py"

    def test_ids(self) -> list[tuple[str, str]]:
        return [(rel, test_id) for rel in sorted(self.tests) for test_id in self.tests[rel]]

    # -- changes ---------------------------------------------------------------------------

    def _touch(self, rel: str) -> None:
        if rel not in self.baseline and rel not in self.untracked:
            self.baseline[rel] = list(self.files[rel])
        self._functions.pop(rel, None)

    def replace(self, rel: str, old: str, new: str) -> int | None:
        """Apply an Edit; return the 0-based index of the first changed line, or None."""
        text = self.text(rel)
        if text.count(old) != 1:
            return None
        self._touch(rel)
        position = text.index(old)
        self.files[rel] = text.replace(old, new).split("\n")[:-1]
        return text.count("\n", 0, position)

    def create(self, rel: str, content: str, test_ids: list[str]) -> None:
        self.files[rel] = content.split("\n")[:-1]
        self._functions.pop(rel, None)
        if rel not in self.untracked:
            self.untracked.append(rel)
        if test_ids:
            self.tests[rel] = test_ids

    def diff(self, only: str | None = None) -> str:
        out: list[str] = []
        for rel in sorted(self.baseline):
            if only is not None and rel != only:
                continue
            before, after = self.baseline[rel], self.files[rel]
            if before == after:
                continue
            old_hash = f"{zlib.crc32(chr(10).join(before).encode()):08x}"[:7]
            new_hash = f"{zlib.crc32(chr(10).join(after).encode()):08x}"[:7]
            out += [f"diff --git a/{rel} b/{rel}", f"index {old_hash}..{new_hash} 100644"]
            out += list(difflib.unified_diff(before, after, f"a/{rel}", f"b/{rel}", lineterm="", n=3))
        return "\n".join(out)

    def diff_stat(self) -> str:
        rows: list[str] = []
        inserted = deleted = 0
        for rel in sorted(self.baseline):
            plus = minus = 0
            for line in difflib.unified_diff(self.baseline[rel], self.files[rel], lineterm="", n=0):
                if line.startswith("+") and not line.startswith("+++"):
                    plus += 1
                elif line.startswith("-") and not line.startswith("---"):
                    minus += 1
            if plus or minus:
                rows.append(f" {rel:<40} | {plus + minus:>3} {'+' * min(plus, 30)}{'-' * min(minus, 30)}")
                inserted += plus
                deleted += minus
        rows.append(f" {len(rows)} files changed, {inserted} insertions(+), {deleted} deletions(-)")
        return "\n".join(rows)

    def commit(self, message: str) -> tuple[str, str]:
        stat = self.diff_stat().split("\n")[-1].strip()
        created = [f" create mode 100644 {rel}" for rel in self.untracked]
        commit_hash = f"{self.rng.getrandbits(28):07x}"
        self.commits.insert(0, (commit_hash, message))
        self.baseline.clear()
        self.untracked.clear()
        return commit_hash, "\n".join([stat, *created])


def _decimal_of(raw: str) -> str:
    text = raw.replace(",", "")
    if text.startswith("(") and text.endswith(")"):
        return "-" + text[1:-1]
    return text


# --------------------------------------------------------------------------------------------
# Story edits (path, old, new) and story files
# --------------------------------------------------------------------------------------------

_STORY_EDITS: dict[str, tuple[str, str, str]] = {
    "blank_rows": (
        "src/ledgerline/parser.py",
        "    for number, row in enumerate(rows, start=2):\n        booked = parse_date(row[0])",
        "    for number, row in enumerate(rows, start=2):\n"
        "        if not any(cell.strip() for cell in row):\n"
        "            # Exports often end with a blank line; csv yields it as [] or [''].\n"
        "            continue\n"
        "        booked = parse_date(row[0])",
    ),
    "trailing_minus": (
        "src/ledgerline/parser.py",
        '    negative = text.startswith("(") and text.endswith(")")\n    if negative:\n        text = text[1:-1]',
        '    negative = text.startswith("(") and text.endswith(")")\n    if negative:\n        text = text[1:-1]\n'
        '    elif text.endswith("-"):\n'
        "        # Some banks write debits as 12.50- (trailing minus).\n"
        "        negative = True\n"
        "        text = text[:-1].strip()",
    ),
    "cli_option": (
        "src/ledgerline/cli.py",
        '    summarize.add_argument("--format", choices=("text", "markdown"), default="text")',
        '    summarize.add_argument("--format", choices=("text", "markdown"), default="text")\n'
        "    summarize.add_argument(\n"
        '        "--currency",\n'
        '        metavar="CODE",\n'
        '        help="convert all totals to this currency (default: the ledger currency)",\n'
        "    )",
    ),
    "cli_convert": (
        "src/ledgerline/cli.py",
        "    summary = summarize_entries(entries, by=args.by)",
        "    summary = summarize_entries(entries, by=args.by)\n"
        "    if args.currency:\n"
        "        summary = convert_summary(summary, args.currency.upper(), load_rates())",
    ),
    "convert_summary": (
        "src/ledgerline/currency.py",
        "    usd = money.amount / rates[money.currency]\n"
        "    return Money((usd * rates[to]).quantize(CENT, rounding=ROUND_HALF_EVEN), to)",
        "    usd = money.amount / rates[money.currency]\n"
        "    return Money((usd * rates[to]).quantize(CENT, rounding=ROUND_HALF_EVEN), to)\n"
        "\n\n"
        "def convert_summary(summary: Summary, to: str, rates: Mapping[str, Decimal]) -> Summary:\n"
        '    """Return ``summary`` with every total converted to the currency ``to``."""\n'
        "    code = to.upper()\n"
        "    if code not in rates:\n"
        "        raise CurrencyError(0, f\"no rate for {code}; known: {', '.join(sorted(rates))}\")\n"
        "    totals = {label: convert(money, code, rates) for label, money in summary.totals.items()}\n"
        "    return Summary(totals=totals, currency=code, count=summary.count)",
    ),
    "cli_empty": (
        "src/ledgerline/cli.py",
        "    entries = list(load_entries(args.path))",
        "    entries = list(load_entries(args.path))\n"
        "    if not entries:\n"
        "        # Header-only or empty export: an empty summary, not an error.\n"
        "        print(render_summary(Summary.empty(args.currency), fmt=args.format))\n"
        "        return 0",
    ),
    "io_empty": (
        "src/ledgerline/io.py",
        "        rows = csv.reader(handle)\n        next(rows, None)",
        "        rows = csv.reader(handle)\n"
        "        if next(rows, None) is None:\n"
        '            logger.info("%s is empty", path)\n'
        "            return",
    ),
    "changelog": (
        "CHANGELOG.md",
        "## Unreleased\n",
        "## Unreleased\n\n"
        "- Fix: `summarize` no longer crashes on exports that end with a blank line.\n"
        "- Fix: empty or header-only exports print an empty summary.\n"
        "- New: `summarize --currency CODE` converts all totals using the rates table.\n",
    ),
}

_STORY_SYMBOLS = {
    "blank_rows": "parse_rows",
    "trailing_minus": "parse_amount",
    "cli_option": "build_parser",
    "cli_convert": "cmd_summarize",
    "convert_summary": "convert",
    "cli_empty": "cmd_summarize",
    "io_empty": "load_entries",
    "changelog": "Unreleased",
}

_STORY_SAY = {
    "story:blank_rows": (
        "Found it: `parse_rows` reads `row[0]` before checking that the row has any cells, and "
        "`csv.reader` yields `[]` for the trailing blank line. I'll skip rows whose cells are all blank."
    ),
    "story:trailing_minus": (
        "`parse_amount` only knows the parenthesised form. I'll add a branch for a trailing minus right after it."
    ),
    "story:cli_option": "Now the feature. First the `--currency` option on the `summarize` subcommand.",
    "story:convert_summary": (
        "Next, a `convert_summary` helper in `currency.py` next to `convert`, so the CLI stays thin."
    ),
    "story:cli_convert": "And wire it into `cmd_summarize`.",
    "story:cli_empty": "`cmd_summarize` should print an empty summary instead of failing when there are no entries.",
    "story:io_empty": "For a completely empty file `next(rows, None)` returns None; `load_entries` should stop there.",
    "story:changelog": "Adding the three user-visible changes under *Unreleased*.",
    "tests/test_parser_blank_rows.py": "Now a regression test module for blank rows, following those conventions.",
    "tests/test_summarize_empty.py": "And tests for the empty and header-only cases.",
    "tests/test_parse_amount_trailing_minus.py": "Now a test for the trailing-minus form, including a value with two signs.",
    "src/ledgerline/parser.py": "The traceback ends in `parse_rows`. Let me read the whole parser module.",
}

_STORY_FILES: dict[str, tuple[str, list[str]]] = {
    "tests/test_parser_blank_rows.py": (
        '''"""Regression tests: exports that end with blank lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledgerline.io import load_entries
from ledgerline.parser import parse_rows


@pytest.mark.parametrize("blank", [[], [""], ["", "", ""], ["  ", ""]])
def test_parse_rows_skips_blank_rows(blank: list[str]) -> None:
    rows = [["2024-01-05", "Grocer", "-23.40"], blank]
    entries = list(parse_rows(rows))
    assert [entry.payee for entry in entries] == ["Grocer"]


def test_load_entries_ignores_trailing_blank_line(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_text("date,payee,amount\\n2024-01-05,Grocer,-23.40\\n\\n", encoding="utf-8")
    entries = list(load_entries(path))
    assert len(entries) == 1
    assert entries[0].row == 2


def test_blank_row_in_the_middle_keeps_row_numbers(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_text("date,payee,amount\\n2024-01-05,A,-1.00\\n\\n2024-01-06,B,-2.00\\n", encoding="utf-8")
    assert [entry.row for entry in load_entries(path)] == [2, 4]
''',
        [
            "test_parse_rows_skips_blank_rows[blank0]",
            "test_parse_rows_skips_blank_rows[blank1]",
            "test_parse_rows_skips_blank_rows[blank2]",
            "test_parse_rows_skips_blank_rows[blank3]",
            "test_load_entries_ignores_trailing_blank_line",
            "test_blank_row_in_the_middle_keeps_row_numbers",
        ],
    ),
    "tests/test_summarize_empty.py": (
        '''"""`summarize` on empty and header-only exports."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledgerline.cli import main


@pytest.mark.parametrize("content", ["", "date,payee,amount\\n", "date,payee,amount\\n\\n"])
def test_summarize_empty_export_prints_empty_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    path = tmp_path / "export.csv"
    path.write_text(content, encoding="utf-8")
    assert main(["summarize", str(path)]) == 0
    assert "no entries" in capsys.readouterr().out


def test_summarize_empty_export_with_currency(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "export.csv"
    path.write_text("date,payee,amount\\n", encoding="utf-8")
    assert main(["summarize", str(path), "--currency", "EUR"]) == 0
    assert "EUR" in capsys.readouterr().out
''',
        [
            "test_summarize_empty_export_prints_empty_summary[]",
            "test_summarize_empty_export_prints_empty_summary[date,payee,amount\\n]",
            "test_summarize_empty_export_prints_empty_summary[date,payee,amount\\n\\n]",
            "test_summarize_empty_export_with_currency",
        ],
    ),
    "tests/test_parse_amount_trailing_minus.py": (
        '''"""parse_amount: amounts written with a trailing minus (12.50-)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from ledgerline.parser import ParseError, parse_amount


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("12.50-", Decimal("-12.50")),
        ("1,234.00-", Decimal("-1234.00")),
        (" 7- ", Decimal("-7")),
        ("12.50", Decimal("12.50")),
    ],
)
def test_parse_amount_trailing_minus(raw: str, expected: Decimal) -> None:
    assert parse_amount(raw) == expected


def test_parse_amount_rejects_double_sign() -> None:
    with pytest.raises(ParseError, match="not an amount"):
        parse_amount("-12.50-")
''',
        [
            "test_parse_amount_trailing_minus[12.50--expected0]",
            "test_parse_amount_trailing_minus[1,234.00--expected1]",
            "test_parse_amount_trailing_minus[ 7- -expected2]",
            "test_parse_amount_trailing_minus[12.50-expected3]",
            "test_parse_amount_rejects_double_sign",
        ],
    ),
}

_NEW_TEST_NAMES = (
    "test_cli_currency",
    "test_report_markdown_totals",
    "test_rates_cache",
    "test_parser_row_numbers",
    "test_currency_rounding",
    "test_validation_limits",
    "test_io_bom",
    "test_categories_rules",
    "test_cli_exit_codes",
    "test_report_month_boundaries",
    "test_rates_lookup_by_date",
    "test_parser_delimiters",
    "test_currency_unknown_code",
    "test_io_jsonl_export",
    "test_formatting_negative_totals",
)

# (exception, message, source file, function, statement that raises); no frame for assertions.
_ERRORS: tuple[tuple[str, str, str, str, str], ...] = (
    ("IndexError", "list index out of range", "src/ledgerline/parser.py", "parse_rows", "payee = row[1]"),
    ("AssertionError", "assert Decimal('-12.50') == Decimal('12.50')", "", "", ""),
    (
        "KeyError",
        "'CHF'",
        "src/ledgerline/currency.py",
        "convert",
        "usd = money.amount / rates[money.currency]",
    ),
    (
        "AttributeError",
        "'Namespace' object has no attribute 'currency'",
        "src/ledgerline/cli.py",
        "cmd_summarize",
        "summary = summarize_entries",
    ),
    (
        "TypeError",
        "unsupported operand type(s) for /: 'decimal.Decimal' and 'float'",
        "src/ledgerline/currency.py",
        "convert",
        "usd = money.amount / rates[money.currency]",
    ),
    ("AssertionError", "assert 'EUR' in 'category          total\\n---'", "", "", ""),
    (
        "decimal.InvalidOperation",
        "[<class 'decimal.ConversionSyntax'>]",
        "src/ledgerline/parser.py",
        "parse_amount",
        "value = Decimal(text)",
    ),
    ("AssertionError", "assert [2, 3] == [2, 4]", "", "", ""),
)


# --------------------------------------------------------------------------------------------
# Narration
# --------------------------------------------------------------------------------------------

_SAY: dict[str, tuple[str, ...]] = {
    "glob": (
        "I'll start by getting an overview of the package layout.",
        "Let me see which files exist under `$dir`.",
        "Let me list the test modules.",
    ),
    "grep": (
        "Let me find every place that uses `$sym`.",
        "Searching for `$sym` to see who depends on it.",
        "Let me check where `$sym` is used before changing it.",
        "Let me see how `$sym` is called across the package.",
    ),
    "read": (
        "Let me read `$file`.",
        "Now let me look at `$sym` in `$file`.",
        "I need to see the rest of `$file` around `$sym`.",
        "Let me check `$file` to understand how this fits together.",
    ),
    "repro": (
        "Let me reproduce the problem first.",
        "First, reproducing the failure with the fixture from the report.",
    ),
    "test": (
        "Now let me run the tests for this module.",
        "Running the tests again.",
        "Let me check that the tests pass now.",
        "Let me run the affected tests.",
    ),
    "test_verbose": ("Running the full suite.", "Let me run the whole test suite verbosely."),
    "read_full": ("Let me read `$file` in full.", "Let me read the whole of `$file`."),
    "edit": (
        "I'll update `$sym` in `$file`.",
        "Now update `$file` accordingly.",
        "The fix belongs in `$sym`; let me change it.",
        "Let me make `$sym` handle this case.",
    ),
    "write": (
        "Let me add tests for this in `$file`.",
        "Now a regression test, in its own module `$file`.",
    ),
    "skill": ("Let me load the project's testing conventions before writing the tests.",),
    "lint": ("Let me run the linters.", "Checking types and lint before moving on."),
    "git": ("Let me look at what changed so far.", "Let me review the diff.", "Checking the working tree."),
    "persist": (
        "Let me run the CLI on the large fixture with debug logging to check the conversion end to end.",
    ),
}

_THINK: dict[str, tuple[str, ...]] = {
    "read": (
        "Before changing anything I want to see how `$sym` is structured and what it returns.",
        "`$file` is on the path of the traceback; reading it around `$sym` should show where rows are handled.",
        "I only need the part of `$file` around `$sym`, not the whole module.",
        "I have not looked at `$file` yet in this session, so I should read it before editing it.",
    ),
    "grep": (
        "Before editing I want to know every caller of `$sym`, otherwise a behaviour change could break the report code.",
        "If `$sym` is only used in one place, the change can stay local; a grep tells me that quickly.",
    ),
    "edit": (
        "The change is small: `$sym` needs one more case, and nothing else in `$file` has to move.",
        "Row numbers in errors are 1-based and count the header, so this change must not shift the numbering.",
        "mypy will complain if the function can return None on the error path, so raising is cleaner than returning early.",
        "Money is Decimal everywhere in this codebase; mixing in floats would be a regression the CLAUDE.md warns about.",
    ),
    "test": (
        "Running only this module's tests first keeps the feedback loop short; the full suite comes at the end.",
        "The failing assertion is informative: the value is right but the label is not, so the conversion ran and the rendering did not pick it up.",
        "If this passes, the remaining risk is in the CLI wiring, which the CLI tests cover.",
    ),
    "repro": (
        "I want to see the exact traceback before touching any code, so I know which layer raises.",
        "The report mentions a fixture that already exists in tests/fixtures, so I can reproduce with the real command.",
    ),
    "git": (
        "Before summarizing I should look at the whole diff once, to make sure no debugging leftovers slipped in.",
        "The diff so far touches `$file` and the CLI; the changelog entry should mention both user-visible changes.",
    ),
    "lint": (
        "ruff and mypy are part of the CI gate here; better to run them now than to leave it to the reviewer.",
    ),
    "final": (
        "Everything the user asked for in this turn is done; time to summarize what changed and how it was verified.",
        "The summary should name the files I changed, the tests I ran, and anything I deliberately left alone.",
    ),
    "general": (
        "csv.reader yields an empty list for a blank line, and indexing an empty list raises IndexError.",
        "I should not change the public signature of anything in ledgerline.parser; a keyword argument with a default would be fine, but here no new argument is needed.",
        "The rates table is USD-based, so converting EUR to GBP means dividing by the EUR rate and multiplying by the GBP rate; rounding must happen once, at the end.",
        "There are two places this could be handled: the reader in io.py or the row loop in parser.py. The parser is the better place because parse_rows is also used directly by other teams.",
        "An empty file has no header row at all, and next(rows, None) returns None in that case, so the reader should stop there instead of calling the parser.",
        "I could also strip whitespace-only cells, since some exports pad the blank line with spaces or a lone delimiter.",
        "Let me keep the user's constraints in mind: no renames in the parser API, Decimal for money, a regression test for every fix.",
        "The fixture files are small, so running the CLI end to end is cheap and catches wiring mistakes the unit tests miss.",
        "It is worth checking the error path too: an unknown currency code should produce a clear message, not a KeyError from deep inside.",
        "I will keep the change minimal and avoid reformatting unrelated code, so the diff stays easy to review.",
        "The existing tests use small helper constructors from conftest.py; new tests should use them too.",
    ),
}

_PLAN_STEPS = (
    "Reproduce the failure with the smallest input that shows it.",
    "Read the code on the failing path, top to bottom, before changing anything.",
    "Write the regression test first and watch it fail.",
    "Make the smallest change that makes the test pass.",
    "Run the module's tests, then the full suite.",
    "Check callers of every function whose behaviour changed.",
    "Run ruff and mypy; fix what they report in the files I touched only.",
    "Look at the whole diff once before summarizing.",
    "Keep Decimal arithmetic; round once, at rendering time.",
    "Do not rename anything in ledgerline.parser; only add keyword arguments with defaults.",
    "Update CHANGELOG.md under Unreleased for user-visible changes.",
    "Mention in the summary anything I noticed but deliberately left alone.",
)

_FINAL: dict[str, str] = {
    "feature-0": (
        "Both parts are done.\n\n**Crash on a trailing blank line**\n"
        "- Cause: `parse_rows` in `src/ledgerline/parser.py` read `row[0]` on the empty row that "
        "`csv.reader` yields for a blank line, hence the `IndexError`.\n"
        "- Fix: rows whose cells are all blank are skipped; row numbers of later rows are unchanged.\n"
        "- Regression tests: `tests/test_parser_blank_rows.py`.\n\n"
        "**`summarize --currency CODE`**\n"
        "- `cli.py`: new `--currency` option; when given, totals go through `convert_summary`.\n"
        "- `currency.py`: `convert_summary()` converts every total with the USD-based rates table "
        "and rounds half-even once per total; an unknown code raises `CurrencyError` naming the known "
        "codes.\n\nThe public API of `ledgerline.parser` is unchanged. $tests"
    ),
    "feature-1": (
        "Empty inputs are handled now:\n\n"
        "- `io.load_entries` stops quietly when the file has no header row at all.\n"
        "- `cmd_summarize` prints an empty summary (in the requested currency, if any) when there are "
        "no entries, and exits with 0.\n"
        "- New tests in `tests/test_summarize_empty.py` cover an empty file, a header-only file and a "
        "header followed by a blank line.\n\n$tests"
    ),
    "feature-2": (
        "The full suite passes now (`$summary`). The first run found a failure, which I fixed (see above); "
        "nothing else changed."
    ),
    "feature-3": (
        "CHANGELOG.md has three entries under *Unreleased* (the blank-line crash, empty exports and "
        "`--currency`). The diff above is everything since the last commit; ruff and mypy are clean. "
        "I have not committed anything."
    ),
    "bugfix-0": (
        "Fixed. `parse_amount` now accepts a trailing minus (`12.50-` -> `-12.50`), alongside the "
        "existing `(12.50)` form; a value with two signs is still rejected.\n\n"
        "- Change: `src/ledgerline/parser.py`, `parse_amount` only.\n"
        "- Tests: `tests/test_parse_amount_trailing_minus.py`. $tests"
    ),
    "bugfix-1": "Full suite: `$summary`. ruff is clean too.",
    "generic": "Done. I changed $files. $tests",
}


# --------------------------------------------------------------------------------------------
# Tool calls
# --------------------------------------------------------------------------------------------


@dataclass
class _Call:
    """One tool call with its result, ready to be written."""

    id: str
    name: str
    input: dict[str, Any]
    content: str
    result: Any
    is_error: bool = False
    duration_ms: int = 120
    progress: list[tuple[dict[str, Any], str | None, int]] = field(default_factory=list)
    meta_after: str | None = None
    touched: str | None = None
    assistant_uuid: str = ""


@dataclass
class _Intent:
    """What the simulated agent wants to do in one tool call."""

    kind: str
    path: str = ""
    arg: str = ""
    fail: bool = False
    origin: str = "filler"
    children: list[_Intent] = field(default_factory=list)


def _hook(event: str, tool: str, command: str) -> dict[str, Any]:
    name = f"{event}:{tool}" if tool else event
    return {"type": "hook_progress", "hookEvent": event, "hookName": name, "command": command}


_PRE_BASH_HOOK = "~/.claude/hooks/deny-dangerous-commands.sh"
_POST_EDIT_HOOK = 'uv run --quiet ruff format "$CLAUDE_PROJECT_DIR/src" "$CLAUDE_PROJECT_DIR/tests"'


class _Tools:
    """Builds tool calls and their results from the repository state."""

    def __init__(self, rng: random.Random, ids: _Ids, repo: _Repo, session_id: str) -> None:
        self.rng = rng
        self.ids = ids
        self.repo = repo
        self.session_id = session_id
        self.last_test_ok = True
        self.last_test_summary = ""

    # -- generic shapes --------------------------------------------------------------------

    def _bash(self, command: str, description: str, output: str, exit_code: int, duration: int) -> _Call:
        call_id = self.ids.tool()
        progress: list[tuple[dict[str, Any], str | None, int]] = [
            (_hook("PreToolUse", "Bash", _PRE_BASH_HOOK), None, self.rng.randint(3, 40))
        ]
        if duration > 2500:
            lines = output.split("\n")
            for step in range(1, min(3, duration // 2500) + 1):
                shown = lines[: max(1, len(lines) * step // 4)]
                progress.append(
                    (
                        {
                            "type": "bash_progress",
                            "output": "\n".join(shown[-5:]),
                            "fullOutput": "\n".join(shown)[-1500:],
                            "elapsedTimeSeconds": step * 2,
                            "totalLines": len(shown),
                        },
                        f"bash-progress-{step - 1}",
                        2000,
                    )
                )
        if len(output) > BASH_MAX_OUTPUT and (exit_code or len(output) <= PERSIST_THRESHOLD):
            output = _truncate_middle(output, BASH_MAX_OUTPUT)
        if exit_code:
            content = f"Exit code {exit_code}\n{output}"
            return _Call(
                call_id,
                "Bash",
                {"command": command, "description": description},
                content,
                f"Error: {content}",
                True,
                duration,
                progress,
            )
        content = self._persisted(call_id, output) if len(output) > PERSIST_THRESHOLD else output
        result = {
            "stdout": output,
            "stderr": "",
            "interrupted": False,
            "isImage": False,
            "noOutputExpected": False,
        }
        return _Call(
            call_id,
            "Bash",
            {"command": command, "description": description},
            content,
            result,
            False,
            duration,
            progress,
        )

    def _persisted(self, call_id: str, output: str) -> str:
        folder = f"{HOME}/.claude/projects/{CWD.replace('/', '-')}/{self.session_id}/tool-results"
        size = f"{len(output.encode('utf-8')) / 1024:.1f}KB"
        return (
            f"<persisted-output>\nOutput too large ({size}). Full output saved to: {folder}/{call_id}.txt\n\n"
            f"Preview (first 2KB):\n{output[:PERSIST_PREVIEW_CHARS]}\n...\n</persisted-output>"
        )

    # -- file tools ------------------------------------------------------------------------

    def read(self, rel: str, hint: int, *, symbol: str = "", full: bool = False) -> _Call:
        repo = self.repo
        total_size = repo.rendered_size(rel)
        tool_input: dict[str, Any] = {"file_path": repo.abs(rel)}
        if full or total_size <= hint:
            numbered, raw, shown, total = repo.render(rel, 1, READ_DEFAULT_LINES)
            start = 1
        else:
            per_line = max(20, total_size // max(1, len(repo.files[rel])))
            limit = max(25, min(600, hint // per_line))
            function = repo.find_function(rel, symbol) if symbol else None
            if function is None:
                functions = repo.functions(rel)
                function = self.rng.choice(functions) if functions else None
            start = max(1, (function.start + 1 - 4) if function else 1)
            numbered, raw, shown, total = repo.render(rel, start, limit)
            tool_input["offset"] = start
            tool_input["limit"] = limit
        result = {
            "type": "text",
            "file": {
                "filePath": repo.abs(rel),
                "content": raw,
                "numLines": shown,
                "startLine": start,
                "totalLines": total,
            },
        }
        return _Call(
            self.ids.tool(), "Read", tool_input, numbered, result, duration_ms=self.rng.randint(4, 60)
        )

    def grep(self, pattern: str, hint: int, *, files_only: bool = False, prefix: str = "") -> _Call:
        """A Grep call; a plain identifier pattern matches whole words only, like the agent meant."""
        regex = rf"\b{pattern}\b" if pattern.isidentifier() else pattern
        hits = self.repo.grep(regex, prefix)
        tool_input: dict[str, Any] = {"pattern": pattern}
        if prefix:
            tool_input["path"] = self.repo.abs(prefix.rstrip("/"))
        if files_only or not hits:
            names = sorted({rel for rel, _, _ in hits})
            tool_input["output_mode"] = "files_with_matches"
            paths = [self.repo.abs(rel) for rel in names]
            content = f"Found {len(paths)} file{'s' if len(paths) != 1 else ''}\n" + "\n".join(paths)
            if not paths:
                content = "No files found"
            result: dict[str, Any] = {
                "mode": "files_with_matches",
                "filenames": paths,
                "numFiles": len(paths),
            }
            return _Call(
                self.ids.tool(), "Grep", tool_input, content, result, duration_ms=self.rng.randint(20, 200)
            )
        tool_input["output_mode"] = "content"
        tool_input["-n"] = True
        lines = [f"{rel}:{number}:{text}" for rel, number, text in hits]
        average = max(1, sum(len(line) + 1 for line in lines) // len(lines))
        limit = max(5, hint // average)
        result = {"mode": "content", "numFiles": 0, "filenames": [], "content": "", "numLines": 0}
        if len(lines) > limit:
            lines = lines[:limit]
            tool_input["head_limit"] = limit
            result["appliedLimit"] = limit
        content = "\n".join(lines)
        result["content"] = content
        result["numLines"] = len(lines)
        return _Call(
            self.ids.tool(), "Grep", tool_input, content, result, duration_ms=self.rng.randint(20, 200)
        )

    def glob(self, pattern: str) -> _Call:
        prefix = pattern.split("*", 1)[0]
        suffix = pattern.rsplit("*", 1)[-1]
        names = sorted(rel for rel in self.repo.files if rel.startswith(prefix) and rel.endswith(suffix))
        paths = [self.repo.abs(rel) for rel in names]
        result = {
            "filenames": paths,
            "durationMs": self.rng.randint(8, 240),
            "numFiles": len(paths),
            "truncated": False,
        }
        return _Call(
            self.ids.tool(),
            "Glob",
            {"pattern": pattern},
            "\n".join(paths) or "No files found",
            result,
            duration_ms=self.rng.randint(8, 240),
        )

    def edit(self, rel: str, old: str, new: str, *, break_it: bool = False) -> _Call:
        repo = self.repo
        call_id = self.ids.tool()
        tool_input = {"file_path": repo.abs(rel), "old_string": old, "new_string": new, "replace_all": False}
        post: list[tuple[dict[str, Any], str | None, int]] = [
            (_hook("PostToolUse", "Edit", _POST_EDIT_HOOK), None, self.rng.randint(200, 900))
        ]
        original = repo.text(rel)
        first = None if break_it else repo.replace(rel, old, new)
        if first is None:
            message = f"String to replace not found in file.\nString: {old}"
            content = f"<tool_use_error>{message}</tool_use_error>"
            return _Call(call_id, "Edit", tool_input, content, f"Error: {message}", True, 30)
        new_lines = new.split("\n")
        start = max(0, first - 4)
        stop = first + len(new_lines) + 4
        snippet, _, _, _ = repo.render(rel, start + 1, stop - start)
        content = (
            f"The file {repo.abs(rel)} has been updated. Here's the result of running `cat -n` on a "
            f"snippet of the edited file:\n{snippet}"
        )
        old_lines = old.split("\n")
        before = original.split("\n")[start:first]
        after = repo.text(rel).split("\n")[first + len(new_lines) : stop]
        patch = {
            "oldStart": start + 1,
            "oldLines": len(before) + len(old_lines) + len(after),
            "newStart": start + 1,
            "newLines": len(before) + len(new_lines) + len(after),
            "lines": [" " + line for line in before]
            + ["-" + line for line in old_lines]
            + ["+" + line for line in new_lines]
            + [" " + line for line in after],
        }
        result = {
            "filePath": repo.abs(rel),
            "oldString": old,
            "newString": new,
            "originalFile": original,
            "structuredPatch": [patch],
            "userModified": False,
            "replaceAll": False,
        }
        return _Call(
            call_id, "Edit", tool_input, content, result, False, self.rng.randint(30, 150), post, touched=rel
        )

    def generic_edit(self, rel: str) -> tuple[str, str, str]:
        """Pick a few lines of a function in ``rel`` and a plausible change to them."""
        repo = self.repo
        lines = repo.files[rel]
        functions = [f for f in repo.functions(rel) if f.name not in _CORE_NAMES]
        if rel.endswith(".md") or not functions:
            anchor = lines[0]
            return anchor, anchor + "\n\n<!-- reviewed: keep this section in sync with the CLI -->", anchor
        for _ in range(12):
            function = self.rng.choice(functions)
            body = [i for i in range(function.start + 1, function.end) if _editable(lines[i])]
            if len(body) < 2:
                continue
            size = self.rng.randint(1, 3)
            first = self.rng.choice(body)
            window = list(range(first, min(first + size, function.end)))
            indent = _indent(lines[first])
            if lines[function.start].startswith("class ") and len(indent) < 8:
                continue  # class-level fields: only edit inside methods
            if not all(_editable(lines[i]) and _indent(lines[i]) == indent for i in window):
                continue
            old = "\n".join(lines[i] for i in window)
            if repo.text(rel).count(old) != 1:
                continue
            assigned = re.search(r"^\s*([a-z_][a-z0-9_]*)\s*(?::[^=]+)?=(?!=)", old, re.M)
            name = function.name
            style = self.rng.random()
            if assigned and style < 0.4:
                var = assigned.group(1)
                new = f'{old}\n{indent}logger.debug("{name}: {var}=%r", {var})'
            elif assigned and style < 0.7:
                var = assigned.group(1)
                new = f'{old}\n{indent}if {var} is None:\n{indent}    raise ValueError("{name}: {var} is required")'
            else:
                note = self.rng.choice(_EDIT_COMMENTS)
                new = f"{indent}# {note}\n{old}"
            return old, new, name
        function = self.rng.choice(functions)
        anchor = lines[function.start]
        return anchor, f"{_indent(anchor)}# {self.rng.choice(_EDIT_COMMENTS)}\n{anchor}", function.name

    def write(self, rel: str, content: str, test_ids: list[str]) -> _Call:
        self.repo.create(rel, content, test_ids)
        result: dict[str, Any] = {
            "type": "create",
            "filePath": self.repo.abs(rel),
            "content": content,
            "structuredPatch": [],
            "originalFile": None,
        }
        post: list[tuple[dict[str, Any], str | None, int]] = [
            (_hook("PostToolUse", "Write", _POST_EDIT_HOOK), None, self.rng.randint(200, 900))
        ]
        return _Call(
            self.ids.tool(),
            "Write",
            {"file_path": self.repo.abs(rel), "content": content},
            f"File created successfully at: {self.repo.abs(rel)}",
            result,
            False,
            self.rng.randint(20, 90),
            post,
            touched=rel,
        )

    def new_test_module(self, target: str, size: int | None = None) -> tuple[str, str, list[str]]:
        """A new test module for `target`, of about `size` characters (default: drawn, 1,200 to
        3,200; the draw is made either way, so a given size moves nothing else)."""
        base = self.rng.choice(_NEW_TEST_NAMES)
        rel = f"tests/{base}.py"
        n = 2
        while rel in self.repo.files:
            rel = f"tests/{base}_{n}.py"
            n += 1
        drawn = self.rng.randint(1_200, 3_200)
        lines, ids = self.repo.make_test_module(target, drawn if size is None else size)
        return rel, "\n".join(lines) + "\n", ids

    def skill(self) -> _Call:
        return _Call(
            self.ids.tool(),
            "Skill",
            {"skill": SKILL_NAME},
            f"Launching skill: {SKILL_NAME}",
            {"success": True, "commandName": SKILL_NAME},
            duration_ms=15,
            meta_after=SKILL_BODY,
        )

    # -- commands --------------------------------------------------------------------------

    def pytest(self, targets: list[str], *, fail: bool, verbose: bool, hint: int) -> _Call:
        repo = self.repo
        selected = [(rel, tid) for rel, tid in repo.test_ids() if not targets or rel in targets]
        if not selected:
            selected = repo.test_ids()[:10]
        failures: list[tuple[str, str]] = []
        if fail:
            count = 1 if hint < 6_000 or self.rng.random() < 0.6 else 2
            failures = self.rng.sample(selected, min(count, len(selected)))
        total = len(selected)
        seconds = 0.25 + total * self.rng.uniform(0.004, 0.02)
        head = [
            _banner("test session starts"),
            "platform linux -- Python 3.12.8, pytest-8.3.4, pluggy-1.5.0"
            + (f" -- {CWD}/.venv/bin/python" if verbose else ""),
        ]
        if verbose:
            head.append("cachedir: .pytest_cache")
        head += [f"rootdir: {CWD}", "configfile: pyproject.toml", "plugins: cov-6.0.0, hypothesis-6.122.3"]
        head.append(("collecting ... " if verbose else "") + f"collected {total} items")
        head.append("")
        body: list[str] = []
        failed = set(failures)
        if verbose:
            for i, (rel, tid) in enumerate(selected, start=1):
                status = "FAILED" if (rel, tid) in failed else "PASSED"
                left = f"{rel}::{tid} {status}"
                body.append(
                    f"{left:<73}[{100 * i // total:>3}%]"
                    if len(left) < 73
                    else f"{left} [{100 * i // total:>3}%]"
                )
        else:
            done = 0
            for rel in sorted({r for r, _ in selected}):
                marks = "".join("F" if (rel, tid) in failed else "." for r, tid in selected if r == rel)
                room = 71 - len(rel)
                prefix = f"{rel} "
                while marks:
                    chunk, marks = marks[:room], marks[room:]
                    done += len(chunk)
                    body.append(f"{prefix + chunk:<73}[{100 * done // total:>3}%]")
                    prefix, room = "", 72
        tail: list[str] = []
        if failures:
            tail += ["", _banner("FAILURES")]
            errors = []
            for rel, tid in failures:
                section, error = self._failure(rel, tid)
                tail += section
                errors.append(error)
            tail.append(_banner("short test summary info"))
            for (rel, tid), (kind, message) in zip(failures, errors, strict=True):
                tail.append(f"FAILED {rel}::{tid} - {kind}: {message}")
        passed = total - len(failures)
        summary = (
            f"{len(failures)} failed, {passed} passed" if failures else f"{passed} passed"
        ) + f" in {seconds:.2f}s"
        tail.append(_banner(summary))
        output = "\n".join(head + body + tail)
        self.last_test_ok = not failures
        self.last_test_summary = summary
        args = " ".join(targets)
        command = f"uv run pytest {args}".rstrip() + (" -v" if verbose else (" -x" if targets else ""))
        if failures and not verbose:
            command = command.replace(" -x", "")
        description = (
            "Run the full test suite"
            if not targets
            else f"Run {', '.join(t.split('/')[-1] for t in targets)}"
        )
        duration = int(seconds * 1000) + self.rng.randint(600, 1800)
        return self._bash(command, description, output, 1 if failures else 0, duration)

    def _failure(self, rel: str, tid: str) -> tuple[list[str], tuple[str, str]]:
        """One pytest failure section for ``tid``; returns it with (exception, message)."""
        repo = self.repo
        name = tid.split("[", 1)[0]
        function = repo.find_function(rel, name)
        lines = repo.files[rel]
        kind, message, src_rel, src_name, needle = self.rng.choice(_ERRORS)
        error = (kind, message)
        out = ["", _banner(tid, "_"), ""]
        if function is not None:
            source = [lines[i] for i in range(function.start, function.end)][:8]
            number = function.start + len(source)
        else:
            source = [f"def {name}() -> None:", "    ..."]
            number = 1
        out += [("    " if i < len(source) - 1 else ">   ") + line for i, line in enumerate(source)]
        src_function = repo.find_function(src_rel, src_name) if src_rel else None
        if src_function is None:
            out.append(f"E       {error[0]}: {error[1]}")
            out += ["", f"{rel}:{number}: {error[0]}"]
            return out, error
        out += ["", f"{rel}:{number}: ", "_ _" + " _" * 37]
        src_lines = [repo.files[src_rel][i] for i in range(src_function.start, src_function.end)]
        at = next((i for i, line in enumerate(src_lines) if needle in line), len(src_lines) - 1)
        shown = src_lines[: at + 1]
        if len(shown) > 12:
            shown = shown[:1] + shown[-11:]
        out.append("")
        out += [("    " if i < len(shown) - 1 else ">   ") + line for i, line in enumerate(shown)]
        out += [f"E       {error[0]}: {error[1]}", "", f"{src_rel}:{src_function.start + at + 1}: {error[0]}"]
        return out, error

    def repro(self, story: str) -> _Call:
        repo = self.repo
        if story == "bugfix":
            number = repo.line_of("src/ledgerline/parser.py", "value = Decimal(text)")
            raising = repo.line_of("src/ledgerline/parser.py", 'raise ParseError(0, f"not an amount')
            output = "\n".join(
                [
                    "Traceback (most recent call last):",
                    f'  File "{repo.abs("src/ledgerline/parser.py")}", line {number}, in parse_amount',
                    "    value = Decimal(text)",
                    "            ^^^^^^^^^^^^^",
                    "decimal.InvalidOperation: [<class 'decimal.ConversionSyntax'>]",
                    "",
                    "The above exception was the direct cause of the following exception:",
                    "",
                    "Traceback (most recent call last):",
                    '  File "<string>", line 1, in <module>',
                    f'  File "{repo.abs("src/ledgerline/parser.py")}", line {raising}, in parse_amount',
                    '    raise ParseError(0, f"not an amount: {raw!r}") from exc',
                    "ledgerline.parser.ParseError: row 0: not an amount: '12.50-'",
                ]
            )
            command = "uv run python -c \"from ledgerline.parser import parse_amount; print(parse_amount('12.50-'))\""
            return self._bash(
                command, "Reproduce the trailing-minus error", output, 1, self.rng.randint(400, 900)
            )
        # (file, function, statement, the part Python underlines, its marker)
        frames = [
            ("src/ledgerline/cli.py", "main", "return cmd_summarize(args)", "cmd_summarize(args)", "^"),
            (
                "src/ledgerline/cli.py",
                "cmd_summarize",
                "entries = list(load_entries(args.path))",
                "list(load_entries(args.path))",
                "^",
            ),
            (
                "src/ledgerline/io.py",
                "load_entries",
                "yield from parse_rows(rows, currency=currency)",
                "",
                "",
            ),
            ("src/ledgerline/parser.py", "parse_rows", "booked = parse_date(row[0])", "row[0]", "~~~^^^"),
        ]
        out = [
            "Traceback (most recent call last):",
            '  File "<frozen runpy>", line 198, in _run_module_as_main',
            '  File "<frozen runpy>", line 88, in _run_code',
            f'  File "{repo.abs("src/ledgerline/__main__.py")}", line 4, in <module>',
            "    raise SystemExit(main())",
            "                     ^^^^^^",
        ]
        for rel, function, statement, part, marker in frames:
            out.append(f'  File "{repo.abs(rel)}", line {repo.line_of(rel, statement)}, in {function}')
            out.append(f"    {statement}")
            if part:
                carets = marker if len(marker) > 1 else marker * len(part)
                out.append(" " * (4 + statement.index(part)) + carets)
        out.append("IndexError: list index out of range")
        command = "uv run ledgerline summarize tests/fixtures/bank_export_trailing_blank.csv"
        return self._bash(
            command,
            "Reproduce the crash on the trailing blank line",
            "\n".join(out),
            1,
            self.rng.randint(500, 1200),
        )

    def lint(self, which: str, fail: bool) -> _Call:
        repo = self.repo
        files = repo.python_files("src/")
        if which == "ruff":
            command, description = "uv run ruff check src tests", "Lint with ruff"
            if fail:
                rel = self.rng.choice(files)
                number = self.rng.randint(1, len(repo.files[rel]))
                output = (
                    f"{rel}:{number}:9: F841 Local variable `rates` is assigned to but never used\n"
                    f"{rel}:{number + 3}:5: E501 Line too long (121 > 110)\nFound 2 errors.\n"
                    "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option)."
                )
            else:
                output = "All checks passed!"
        else:
            command, description = "uv run mypy src", "Type-check with mypy"
            if fail:
                rel = self.rng.choice(files)
                number = self.rng.randint(1, len(repo.files[rel]))
                output = (
                    f'{rel}:{number}: error: Incompatible return value type (got "Decimal | None", expected '
                    f'"Decimal")  [return-value]\nFound 1 error in 1 file (checked {len(files)} source files)'
                )
            else:
                output = f"Success: no issues found in {len(files)} source files"
        return self._bash(command, description, output, 1 if fail else 0, self.rng.randint(700, 3200))

    def git(self, what: str, hint: int) -> _Call:
        repo = self.repo
        if what == "status":
            changed = [f"\tmodified:   {rel}" for rel in sorted(repo.baseline)]
            out = [f"On branch {GIT_BRANCH}"]
            if changed:
                out += [
                    "Changes not staged for commit:",
                    '  (use "git add <file>..." to update what will be committed)',
                    '  (use "git restore <file>..." to discard changes in working directory)',
                    *changed,
                    "",
                ]
            if repo.untracked:
                out += [
                    "Untracked files:",
                    '  (use "git add <file>..." to include in what will be committed)',
                    *[f"\t{rel}" for rel in repo.untracked],
                    "",
                ]
            if not changed and not repo.untracked:
                out.append("nothing to commit, working tree clean")
            else:
                out.append('no changes added to commit (use "git add" and/or "git commit -a")')
            return self._bash(
                "git status", "Show working tree status", "\n".join(out), 0, self.rng.randint(20, 80)
            )
        if what == "log":
            lines = [f"{h} {m}" for h, m in repo.commits[:15]]
            return self._bash("git log --oneline -15", "Show recent commits", "\n".join(lines), 0, 30)
        full = repo.diff()
        if not full:
            return self.git("status", hint)
        if len(full) <= max(hint, 1_500):
            return self._bash("git diff", "Show the diff so far", full, 0, self.rng.randint(20, 90))
        return self._bash("git diff --stat", "Summarize the changes so far", repo.diff_stat(), 0, 40)

    def commit(self) -> _Call:
        message = "Fix blank trailing rows, empty exports; add summarize --currency"
        commit_hash, stat = self.repo.commit(message)
        output = f"[{GIT_BRANCH} {commit_hash}] {message}\n{stat}"
        return self._bash(f'git add -A && git commit -m "{message}"', "Commit the changes", output, 0, 400)

    def debug_run(self, size: int) -> _Call:
        """A CLI run with debug logging whose output is far over the persistence threshold."""
        rng = self.rng
        lines: list[str] = []
        payees = ("Grocer", "Rent", "Coffee Bar", "Transit", "Pharmacy", "Bookshop", "Utilities", "Gym")
        row = 2
        clock = 0
        written = 0
        while written < size:
            row += 1
            clock += rng.randint(1, 9)
            amount = rng.randint(-250_000, 80_000) / 100
            rate = (0.92, 1.0, 0.79, 1.08)[row % 4]
            lines.append(
                f"2026-03-02 10:{14 + clock // 60_000:02d}:{(clock // 1000) % 60:02d},{clock % 1000:03d} DEBUG "
                f"ledgerline.currency: row {row}: {rng.choice(payees):<10} {amount:>10.2f} "
                f"{('EUR', 'USD', 'GBP', 'CHF')[row % 4]} -> {amount * 0.92 / rate:>10.2f} EUR (rate {rate:.6f})"
            )
            written += len(lines[-1]) + 1
        lines += ["", "category          total (EUR)", "-" * 72]
        lines += [f"{label:<18}{rng.randint(-900_000, 90_000) / 100:>54,.2f}" for label in payees]
        command = (
            "uv run ledgerline summarize tests/fixtures/big_ledger.csv --currency EUR --log-level debug 2>&1"
        )
        return self._bash(
            command,
            "Run summarize on the big fixture with debug logs",
            "\n".join(lines),
            0,
            rng.randint(6000, 9000),
        )


_EDIT_COMMENTS = (
    "Keep Decimal all the way through; rounding happens once when rendering.",
    "Rows are 1-based and include the header, matching what users see in a spreadsheet.",
    "Blank cells are treated as missing, not as zero.",
    "The rates table is USD-based: convert via USD to avoid compounding rounding errors.",
    "Order matters here: later rules override earlier ones.",
)


def _editable(line: str) -> bool:
    text = line.strip()
    if not text or text.startswith(
        (
            '"""',
            "#",
            "@",
            ")",
            "]",
            "}",
            "return",
            "raise",
            "yield",
            "else",
            "elif",
            "except",
            "finally",
            "continue",
            "break",
            "def ",
            "class ",
        )
    ):
        return False
    return not text.endswith((":", "(", "[", "{", ",", '"""', "\\"))


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _truncate_middle(text: str, limit: int) -> str:
    half = limit // 2
    dropped = text[half:-half].count("\n")
    return f"{text[:half]}\n\n... [{dropped} lines truncated] ...\n\n{text[-half:]}"


# --------------------------------------------------------------------------------------------
# The transcript writer: envelope, lines, usage accounting
# --------------------------------------------------------------------------------------------


class _Writer:
    """Writes Claude Code lines and keeps the token accounting of every request honest."""

    def __init__(self, out: TextIO, rng: random.Random, ids: _Ids, session_id: str, model: str) -> None:
        self.out = out
        self.rng = rng
        self.ids = ids
        self.session_id = session_id
        self.model = model
        self.clock = _Clock()
        self.parent: str | None = None
        self.slug: str | None = None
        self.sent_tokens = 0
        self.last_context = 0
        self.first_context = 0
        self.peak_context = 0
        self.requests = 0
        self.tool_calls = 0
        self.lines = 0
        self.turn_start_ms = 0
        self.prompt_uuid = ""
        self.todos: list[dict[str, str]] = []
        self.tracked: dict[str, dict[str, Any]] = {}
        self._tracked_this_turn: set[str] = set()

    @property
    def context(self) -> int:
        """Context size the next request would have."""
        return SYSTEM_OVERHEAD_TOKENS + self.sent_tokens

    def _emit(self, record: dict[str, Any]) -> None:
        self.out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
        self.out.write("\n")
        self.lines += 1

    def _envelope(self, parent: str | None) -> dict[str, Any]:
        record: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": CWD,
            "sessionId": self.session_id,
            "version": CLAUDE_CODE_VERSION,
            "gitBranch": GIT_BRANCH,
        }
        if self.slug:
            record["slug"] = self.slug
        return record

    def _progress(
        self, parent: str, data: dict[str, Any], tool_use_id: str, parent_tool_use_id: str, delay: int
    ) -> str:
        uid = self.ids.uuid()
        record = self._envelope(parent)
        record.update(
            type="progress",
            data=data,
            toolUseID=tool_use_id,
            parentToolUseID=parent_tool_use_id,
            uuid=uid,
            timestamp=self.clock.advance(delay),
        )
        self._emit(record)
        return uid

    # -- session-level lines ---------------------------------------------------------------

    def session_start(self) -> None:
        hook_id = self.ids.uuid()
        parent: str | None = None
        for command in ("~/.claude/hooks/load-project-env.sh", "~/.claude/hooks/session-log.sh start"):
            uid = self.ids.uuid()
            record = self._envelope(parent)
            record.update(
                type="progress",
                data=_hook("SessionStart", "", command) | {"hookName": "SessionStart:startup"},
                parentToolUseID=hook_id,
                toolUseID=hook_id,
                timestamp=self.clock.advance(self.rng.randint(20, 60)),
                uuid=uid,
            )
            self._emit(record)
            parent = uid

    def snapshot(self, message_id: str, *, update: bool) -> None:
        self._emit(
            {
                "type": "file-history-snapshot",
                "messageId": message_id,
                "snapshot": {
                    "messageId": message_id,
                    "trackedFileBackups": dict(self.tracked),
                    "timestamp": self.clock.stamp(),
                },
                "isSnapshotUpdate": update,
            }
        )

    def track(self, rel: str) -> None:
        if rel in self._tracked_this_turn:
            return
        self._tracked_this_turn.add(rel)
        version = int(self.tracked.get(rel, {}).get("version", 0)) + 1
        self.tracked[rel] = {
            "backupFileName": f"{zlib.crc32(rel.encode()):08x}{zlib.crc32(self.session_id.encode()):08x}@v{version}",
            "version": version,
            "backupTime": self.clock.stamp(),
        }
        self.snapshot(self.prompt_uuid, update=True)

    def meta(self, text: str, *, source_tool_use_id: str | None = None) -> None:
        uid = self.ids.uuid()
        record = self._envelope(self.parent)
        content: Any = text if source_tool_use_id is None else [{"type": "text", "text": text}]
        record.update(
            type="user",
            message={"role": "user", "content": content},
            isMeta=True,
            uuid=uid,
            timestamp=self.clock.advance(self.rng.randint(2, 30)),
        )
        if source_tool_use_id is not None:
            record["sourceToolUseID"] = source_tool_use_id
        self._emit(record)
        self.parent = uid
        self.sent_tokens += count_tokens(text) + TOKENS_PER_MESSAGE

    def human(self, text: str, pause_ms: int) -> None:
        uid = self.ids.uuid()
        self.prompt_uuid = uid
        self._tracked_this_turn = set()
        self.clock.advance(pause_ms)
        self.turn_start_ms = self.clock.ms
        self.snapshot(uid, update=False)
        record = self._envelope(self.parent)
        record.update(
            type="user",
            message={"role": "user", "content": text},
            uuid=uid,
            timestamp=self.clock.advance(40),
            thinkingMetadata={"maxThinkingTokens": 31999},
            todos=list(self.todos),
            permissionMode="acceptEdits",
        )
        self._emit(record)
        self.parent = uid
        self.sent_tokens += count_tokens(text) + TOKENS_PER_MESSAGE

    def queue(self, text: str) -> None:
        self._emit(
            {
                "type": "queue-operation",
                "operation": "enqueue",
                "timestamp": self.clock.advance(self.rng.randint(500, 4000)),
                "sessionId": self.session_id,
                "content": text,
            }
        )

    def end_turn(self) -> None:
        stop_id = self.ids.uuid()
        parent = self.parent or ""
        for command in ("~/.claude/hooks/session-log.sh stop", "~/.claude/hooks/notify-done.sh"):
            parent = self._progress(
                parent, _hook("Stop", "", command), stop_id, stop_id, self.rng.randint(40, 200)
            )
        uid = self.ids.uuid()
        record = self._envelope(self.parent)
        timestamp = self.clock.advance(self.rng.randint(30, 120))
        record.update(
            type="system",
            subtype="turn_duration",
            durationMs=self.clock.ms - self.turn_start_ms,
            timestamp=timestamp,
            uuid=uid,
            isMeta=False,
        )
        self._emit(record)
        self.parent = uid

    # -- one API response ------------------------------------------------------------------

    def respond(
        self,
        *,
        thinking: str | None,
        text: str | None,
        calls: list[_Call],
        interleave: bool,
        lead_blank: bool,
    ) -> None:
        rng = self.rng
        context = self.context
        input_tokens = rng.randint(1, 10)
        cached = self.last_context if self.requests else min(SYSTEM_OVERHEAD_TOKENS, context)
        cache_read = max(0, min(cached, context - input_tokens))
        creation = context - input_tokens - cache_read
        blocks: list[dict[str, Any]] = []
        if lead_blank:
            blocks.append({"type": "text", "text": "\n\n"})
        if thinking:
            blocks.append({"type": "thinking", "thinking": thinking, "signature": self.ids.signature()})
        if text:
            blocks.append({"type": "text", "text": text})
        for call in calls:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": call.input,
                    "caller": {"type": "direct"},
                }
            )
        if not blocks:
            blocks.append({"type": "text", "text": "Done."})
        final_output = sum(_output_tokens(block) for block in blocks) + rng.randint(3, 40)
        stale = rng.randint(1, 12)
        step = rng.choice((0, 0, 1, 3))
        outputs = [min(final_output, stale + i * step) for i in range(len(blocks) - 1)] + [final_output]
        message_id = self.ids.message()
        request_id = self.ids.request()
        thinking_len = len(thinking or "")
        self.clock.advance(rng.randint(1_200, 6_000) + thinking_len * 8)
        pending: list[_Call] = []
        by_id = {call.id: call for call in calls}
        for block, output_tokens in zip(blocks, outputs, strict=True):
            uid = self.ids.uuid()
            usage = {
                "input_tokens": input_tokens,
                "cache_creation_input_tokens": creation,
                "cache_read_input_tokens": cache_read,
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": creation},
                "output_tokens": output_tokens,
                "service_tier": "standard",
                "inference_geo": "not_available",
            }
            record = self._envelope(self.parent)
            record["message"] = {
                "model": self.model,
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            }
            record.update(
                requestId=request_id,
                type="assistant",
                uuid=uid,
                timestamp=self.clock.advance(rng.randint(250, 1_400) + len(json.dumps(block)) // 40),
            )
            self._emit(record)
            self.parent = uid
            self.sent_tokens += _context_tokens(block) + TOKENS_PER_MESSAGE
            if block["type"] == "tool_use":
                call = by_id[block["id"]]
                call.assistant_uuid = uid
                if interleave:
                    self._result(call)
                else:
                    pending.append(call)
        for call in pending:
            self._result(call)
        self.requests += 1
        self.tool_calls += len(calls)
        if self.requests == 1:
            self.first_context = context
        self.last_context = context
        self.peak_context = max(self.peak_context, context)

    def _result(self, call: _Call) -> None:
        parent = call.assistant_uuid
        for data, tool_use_id, delay in call.progress:
            parent = self._progress(parent, data, tool_use_id or call.id, call.id, delay)
        if call.touched:
            self.track(call.touched)
        block: dict[str, Any]
        if call.is_error:
            block = {"type": "tool_result", "content": call.content, "is_error": True, "tool_use_id": call.id}
        else:
            block = {"tool_use_id": call.id, "type": "tool_result", "content": call.content}
        uid = self.ids.uuid()
        record = self._envelope(self.parent)
        record.update(
            type="user",
            message={"role": "user", "content": [block]},
            uuid=uid,
            timestamp=self.clock.advance(call.duration_ms),
            toolUseResult=call.result,
            sourceToolAssistantUUID=call.assistant_uuid,
        )
        self._emit(record)
        self.parent = uid
        self.sent_tokens += count_tokens(call.content) + TOKENS_PER_MESSAGE
        if call.meta_after:
            self.meta(call.meta_after, source_tool_use_id=call.id)


def _context_tokens(block: dict[str, Any]) -> int:
    """Tokens a content block adds to every later request."""
    kind = block["type"]
    if kind == "thinking":
        return round(count_tokens(block["thinking"]) * THINKING_WEIGHT)
    if kind == "tool_use":
        return count_tokens(block["name"] + json.dumps(block["input"], ensure_ascii=False))
    return count_tokens(block.get("text", ""))


def _output_tokens(block: dict[str, Any]) -> int:
    kind = block["type"]
    if kind == "thinking":
        return count_tokens(block["thinking"])
    if kind == "tool_use":
        return count_tokens(block["name"] + json.dumps(block["input"], ensure_ascii=False))
    return count_tokens(block.get("text", ""))


# --------------------------------------------------------------------------------------------
# The simulated agent: turns, scripts, filler work and the size controller
# --------------------------------------------------------------------------------------------


@dataclass
class _Turn:
    prompt: str
    requests: int
    theme: str
    final_key: str
    script: list[_Intent] = field(default_factory=list)
    tail: list[_Intent] = field(default_factory=list)


def _i(
    kind: str, path: str = "", arg: str = "", *, fail: bool = False, children: Sequence[_Intent] = ()
) -> _Intent:
    return _Intent(kind, path, arg, fail, "script", list(children))


_THEME_FILES: dict[str, tuple[str, ...]] = {
    "fix": ("src/ledgerline/parser.py", "src/ledgerline/io.py", "src/ledgerline/validation.py"),
    "feature": (
        "src/ledgerline/cli.py",
        "src/ledgerline/currency.py",
        "src/ledgerline/rates.py",
        "src/ledgerline/report.py",
    ),
    "verify": (
        "src/ledgerline/categories.py",
        "src/ledgerline/formatting.py",
        "src/ledgerline/report.py",
        "src/ledgerline/parser.py",
    ),
    "wrapup": ("src/ledgerline/cli.py", "src/ledgerline/currency.py", "src/ledgerline/io.py"),
    "bugfix": ("src/ledgerline/parser.py",),
}


class _Agent:
    """Decides what each request does and how large its results are."""

    def __init__(
        self,
        writer: _Writer,
        tools: _Tools,
        repo: _Repo,
        rng: random.Random,
        *,
        requests: int,
        target: int | None,
        scenario: str,
    ) -> None:
        self.writer = writer
        self.tools = tools
        self.repo = repo
        self.rng = rng
        self.total = requests
        self.target = target
        self.scenario = scenario
        self.queue: list[_Intent] = []
        self.planned: list[tuple[int, _Intent]] = []
        self.reserved: list[tuple[int, int]] = []
        self.assistant_chars = 600.0
        self.turn_files: list[str] = []
        self.queued_prompt_written = False
        self.last_written = "tests/test_parser.py"
        self.turn_left = 0
        self.units = 0

    # -- planning --------------------------------------------------------------------------

    def _turns(self) -> list[_Turn]:
        n = self.total
        if self.scenario == "bugfix":
            second = max(2, n // 4) if n >= 6 else 0
            turns = [_Turn(BUGFIX_PROMPTS[0], n - second, "bugfix", "bugfix-0", self._bugfix_script())]
            if second:
                turns.append(
                    _Turn(
                        BUGFIX_PROMPTS[1],
                        second,
                        "verify",
                        "bugfix-1",
                        [_i("test", arg="full"), _i("lint", arg="ruff")],
                    )
                )
            return turns
        shares = (0.52, 0.14, 0.14, 0.20)
        base = min(n, 264) if n > 320 else n
        sizes = [max(2, round(base * share)) for share in shares] if base >= 16 else [n]
        if n <= 320 and len(sizes) > 1:
            sizes[-1] = max(2, n - sum(sizes[:-1]))
        scripts = self._feature_scripts()
        turns = [
            _Turn(
                FEATURE_PROMPTS[i],
                size,
                ("feature", "fix", "verify", "wrapup")[i],
                f"feature-{i}",
                scripts[i],
            )
            for i, size in enumerate(sizes)
        ]
        if len(turns) == 4:
            turns[2].tail = [_i("test", arg="full")]
            turns[3].tail = [_i("git", arg="diff-full")]
        used = sum(t.requests for t in turns)
        k = 0
        while used < n:
            size = self.rng.randint(30, 120)
            if n - used - size < 12:
                size = n - used
            prompt, theme = EXTRA_PROMPTS[k % len(EXTRA_PROMPTS)]
            script = [_i("test", arg="verbose")] if prompt == "run the full suite" else []
            turn = _Turn(prompt, size, theme, "generic", script)
            if script:
                turn.tail = [_i("test", arg="full")]
            if theme == "wrapup":
                turn.tail = [_i("git", arg="status"), _i("commit")]
            turns.append(turn)
            used += size
            k += 1
        if used > n:
            turns[-1].requests -= used - n
        return [t for t in turns if t.requests > 0]

    def _feature_scripts(self) -> list[list[_Intent]]:
        return [
            [
                _i("glob", arg="src/**/*.py"),
                _i(
                    "par",
                    children=[
                        _i("read", "src/ledgerline/cli.py", "cmd_summarize"),
                        _i("grep", arg="parse_rows"),
                    ],
                ),
                _i("repro", arg="feature"),
                _i("read_full", "src/ledgerline/parser.py"),
                _i("read", "src/ledgerline/io.py", "load_entries"),
                _i("edit", "src/ledgerline/parser.py", "story:blank_rows"),
                _i("skill"),
                _i("write", "tests/test_parser_blank_rows.py"),
                _i("test", arg="tests/test_parser_blank_rows.py tests/test_parser.py"),
                _i(
                    "par",
                    children=[
                        _i("read", "src/ledgerline/currency.py", "convert"),
                        _i("read", "src/ledgerline/rates.py", "load_rates"),
                    ],
                ),
                _i("grep", arg="summarize_entries"),
                _i("edit", "src/ledgerline/cli.py", "story:cli_option"),
                _i("edit", "src/ledgerline/currency.py", "story:convert_summary"),
                _i("edit", "src/ledgerline/cli.py", "story:cli_convert"),
                _i("test", arg="tests/test_cli.py", fail=True),
            ],
            [
                _i("read", "src/ledgerline/io.py", "load_entries"),
                _i("edit", "src/ledgerline/io.py", "story:io_empty"),
                _i("edit", "src/ledgerline/cli.py", "story:cli_empty"),
                _i("write", "tests/test_summarize_empty.py"),
                _i("test", arg="tests/test_summarize_empty.py tests/test_cli.py"),
            ],
            [_i("test", arg="verbose", fail=True)],
            [
                _i("read_full", "CHANGELOG.md"),
                _i("edit", "CHANGELOG.md", "story:changelog"),
                _i("par", children=[_i("lint", arg="ruff"), _i("lint", arg="mypy")]),
            ],
        ]

    def _bugfix_script(self) -> list[_Intent]:
        return [
            _i(
                "par",
                children=[
                    _i("grep", arg="parse_amount"),
                    _i("read", "src/ledgerline/parser.py", "parse_amount"),
                ],
            ),
            _i("repro", arg="bugfix"),
            _i("read", "tests/test_parser.py", "test_parse_amount"),
            _i("edit", "src/ledgerline/parser.py", "story:trailing_minus"),
            _i("write", "tests/test_parse_amount_trailing_minus.py"),
            _i("test", arg="tests/test_parse_amount_trailing_minus.py tests/test_parser.py"),
        ]

    def _plan_big_results(self, turns: list[_Turn]) -> None:
        """Schedule the large tool results and reserve their tokens for the size controller."""
        if self.scenario != "feature" or self.total < 40:
            return
        verbose_tokens = int(
            sum(max(80, len(rel) + len(tid) + 16) for rel, tid in self.repo.test_ids()) / CHARS_PER_TOKEN
        )
        period = min(self.total, 300)
        events = (
            (0.18, _Intent("test", arg="verbose-subset", fail=True, origin="planned")),
            (0.36, _Intent("read_full", "src/ledgerline/report.py", origin="planned")),
            (0.50, _Intent("persist", origin="planned")),
            (0.80, _Intent("read_full", "src/ledgerline/cli.py", origin="planned")),
        )
        sizes = {
            "test": int(22_500 / CHARS_PER_TOKEN),
            "read_full": 0,
            "persist": 700,
        }
        for cycle_start in range(0, self.total, period):
            for fraction, intent in events:
                index = cycle_start + int(fraction * period)
                if index >= self.total - 2:
                    continue
                self.planned.append(
                    (index, _Intent(intent.kind, intent.path, intent.arg, intent.fail, "planned"))
                )
                tokens = sizes[intent.kind] or int(self.repo.rendered_size(intent.path) / CHARS_PER_TOKEN)
                self.reserved.append((index, tokens))
        start = 0
        for turn in turns:
            for intent in turn.script:
                if intent.kind == "read_full":
                    self.reserved.append(
                        (start + 3, int(self.repo.rendered_size(intent.path) / CHARS_PER_TOKEN))
                    )
                elif intent.kind == "test" and intent.arg == "verbose":
                    self.reserved.append((start, min(verbose_tokens, int(BASH_MAX_OUTPUT / CHARS_PER_TOKEN))))
            start += turn.requests
        self.planned.sort(key=lambda item: item[0])

    # -- the run ---------------------------------------------------------------------------

    def run(self) -> None:
        turns = self._turns()
        self._plan_big_results(turns)
        writer = self.writer
        writer.session_start()
        writer.meta(_claude_md_reminder())
        for number, turn in enumerate(turns):
            if number == 1:
                writer.slug = SLUG
            writer.human(
                turn.prompt,
                self.rng.randint(2_000, 9_000) if number == 0 else self.rng.randint(20_000, 240_000),
            )
            self.queue = list(turn.script)
            self.turn_files = []
            for r in range(turn.requests):
                if r == turn.requests - 1:
                    self._final(turn)
                    continue
                if (
                    number == 0
                    and len(turns) > 1
                    and not self.queued_prompt_written
                    and r == turn.requests - 2
                ):
                    writer.queue(turns[1].prompt)
                    self.queued_prompt_written = True
                left = turn.requests - 1 - r
                self.turn_left = left
                if turn.tail and left <= len(turn.tail):
                    intent = turn.tail[len(turn.tail) - left]
                else:
                    intent = self._next_intent(turn)
                self._work(intent, turn)
            writer.end_turn()

    def _next_intent(self, turn: _Turn) -> _Intent:
        done = self.writer.requests
        head_is_filler = not self.queue or self.queue[0].origin == "filler"
        if self.planned and self.planned[0][0] <= done and head_is_filler and self.turn_left >= 6:
            return self.planned.pop(0)[1]
        if not self.queue:
            self.queue = self._unit(turn.theme)
        return self.queue.pop(0)

    def _hint(self) -> int:
        """Characters the tool results of this request should roughly add up to."""
        if self.target is None:
            return int(min(14_000, max(150, self.rng.lognormvariate(math.log(2_400), 0.7))))
        done = self.writer.requests
        remaining = max(1, self.total - done - 1)
        reserve = sum(tokens for index, tokens in self.reserved if index > done)
        want = (self.target - self.writer.context - reserve) / remaining
        chars = want * CHARS_PER_TOKEN - self.assistant_chars
        return int(min(14_000, max(150, chars * self.rng.uniform(0.55, 1.45))))

    def _unit(self, theme: str) -> list[_Intent]:
        rng = self.rng
        rel = rng.choice(_THEME_FILES[theme])
        test_rel = self.repo.test_file_for(rel)
        functions = [f.name for f in self.repo.functions(rel) if f.name[0].islower()]
        symbol = rng.choice(functions) if functions else ""
        roll = rng.random()
        if theme == "bugfix":
            self.units += 1
            cycle = (
                _Intent("git", arg="diff"),
                _Intent("lint", arg="mypy"),
                _Intent("grep", arg="ParseError"),
            )
            return [cycle[(self.units - 1) % len(cycle)]]
        if theme == "wrapup" and roll < 0.5:
            return [
                _Intent("par", children=[_Intent("git", arg="status"), _Intent("git", arg="diff")]),
                _Intent("lint", arg=rng.choice(("ruff", "mypy"))),
            ]
        if roll < 0.28:
            first = (
                _Intent("par", children=[_Intent("grep", arg=symbol), _Intent("read", rel, symbol)])
                if rng.random() < 0.5
                else _Intent("grep", arg=symbol)
            )
            return [first, _Intent("read", rel, symbol)]
        if roll < 0.66:
            return [
                _Intent("read", rel, symbol),
                _Intent("edit", rel),
                _Intent("test", arg=test_rel, fail=rng.random() < 0.3 and self.turn_left >= 7),
            ]
        if roll < 0.76:
            return [_Intent("write", arg=rel), _Intent("test", arg="@new")]
        if roll < 0.84:
            return [
                _Intent(
                    "par",
                    children=[
                        _Intent("read", rel, symbol),
                        _Intent("read", test_rel),
                        _Intent("glob", arg="tests/**/*.py"),
                    ],
                )
            ]
        if roll < 0.92:
            return [_Intent("git", arg=rng.choice(("status", "diff", "log")))]
        which = rng.choice(("ruff", "mypy"))
        if rng.random() < 0.3 and self.turn_left >= 4:
            return [_Intent("lint", arg=which, fail=True), _Intent("edit", rel), _Intent("lint", arg=which)]
        return [_Intent("lint", arg=which)]

    # -- building and writing one request --------------------------------------------------

    def _work(self, intent: _Intent, turn: _Turn) -> None:
        hint = self._hint()
        intents = intent.children if intent.kind == "par" else [intent]
        calls = [self._build(child, hint // len(intents), turn) for child in intents]
        rng = self.rng
        spare = hint - sum(len(call.content) for call in calls)
        small = ("grep", "lint", "git", "test", "glob")
        filler = intent.origin in ("filler", "followup") and turn.theme != "bugfix"
        if filler and intent.kind in small and spare > 2_500:
            rel = rng.choice(_THEME_FILES[turn.theme])
            extra = _Intent("read", rel, rng.choice(self.repo.functions(rel)).name)
            calls.append(self._build(extra, spare, turn))
        lead = intents[0]
        after_failure = not self.tools.last_test_ok
        thinking = None
        if rng.random() < (0.55 if after_failure else 0.28):
            thinking = self._thinking(lead)
        text = self._say(lead) if rng.random() < 0.75 or intent.kind == "par" else None
        self.writer.respond(
            thinking=thinking,
            text=text,
            calls=calls,
            interleave=rng.random() < 0.5,
            lead_blank=rng.random() < 0.1,
        )
        chars = len(thinking or "") * THINKING_WEIGHT + len(text or "")
        chars += sum(len(json.dumps(call.input, ensure_ascii=False)) + 40 for call in calls)
        self.assistant_chars = 0.8 * self.assistant_chars + 0.2 * chars

    def _build(self, intent: _Intent, hint: int, turn: _Turn) -> _Call:
        tools, rng = self.tools, self.rng
        kind = intent.kind
        if kind == "glob":
            return tools.glob(intent.arg)
        if kind == "grep":
            return tools.grep(intent.arg or r"Decimal\(", hint)
        if kind == "read":
            return tools.read(intent.path, max(hint, 1_200), symbol=intent.arg)
        if kind == "read_full":
            return tools.read(intent.path, hint, full=True)
        if kind == "repro":
            return tools.repro(intent.arg)
        if kind == "persist":
            return tools.debug_run(rng.randint(120_000, 150_000))
        if kind == "skill":
            return tools.skill()
        if kind == "lint":
            return tools.lint(intent.arg, intent.fail)
        if kind == "commit":
            return tools.commit()
        if kind == "git":
            return tools.git(
                "diff" if intent.arg == "diff-full" else intent.arg,
                200_000 if intent.arg == "diff-full" else hint,
            )
        if kind == "edit":
            if intent.arg.startswith("story:"):
                rel, old, new = _STORY_EDITS[intent.arg.removeprefix("story:")]
                call = tools.edit(rel, old, new)
            else:
                old, new, _ = tools.generic_edit(intent.path)
                broken = rng.random() < 0.05 and "    " in old
                call = tools.edit(
                    intent.path, old.replace("    ", "  ", 1) if broken else old, new, break_it=broken
                )
                if broken:
                    self.queue[:0] = [
                        _Intent("read", intent.path, origin="followup"),
                        _Intent("edit", intent.path, origin="followup"),
                    ]
            if not call.is_error:
                self.turn_files.append(intent.path)
            return call
        if kind == "write":
            if intent.path in _STORY_FILES:
                content, ids = _STORY_FILES[intent.path]
                rel = intent.path
            else:
                rel, content, ids = tools.new_test_module(intent.arg or "src/ledgerline/parser.py")
                intent.path = rel
                self.last_written = rel
            self.turn_files.append(rel)
            return tools.write(rel, content, ids)
        if kind == "test":
            verbose = intent.arg in ("verbose", "verbose-subset") or (
                hint > 4_000 and not intent.fail and intent.arg != "full"
            )
            if intent.arg in ("verbose", "full"):
                targets: list[str] = []
            elif intent.arg == "verbose-subset":
                targets = self._suite_subset(rng.randint(19_000, 26_000))
            elif intent.arg == "@new":
                targets = [self.last_written]
            else:
                targets = intent.arg.split()
            call = tools.pytest(targets, fail=intent.fail, verbose=verbose, hint=hint)
            if intent.fail:
                failing = targets[0] if targets else "tests/test_parser.py"
                source = rng.choice(_THEME_FILES.get(turn.theme, _THEME_FILES["fix"]))
                self.queue[:0] = [
                    _Intent("read", failing, origin="followup"),
                    _Intent("edit", source, origin="followup"),
                    _Intent("test", arg=" ".join(targets) or "full", origin="followup"),
                ]
            return call
        raise ValueError(f"unknown intent {kind!r}")

    def _suite_subset(self, size: int) -> list[str]:
        """Test modules whose verbose pytest output adds up to about ``size`` characters."""
        modules = sorted(self.repo.tests)
        self.rng.shuffle(modules)
        chosen: list[str] = []
        total = 900
        for rel in modules:
            cost = sum(max(80, len(rel) + len(tid) + 16) for tid in self.repo.tests[rel])
            if total + cost <= size:
                chosen.append(rel)
                total += cost
        return sorted(chosen) or modules[:1]

    def _fill(self, template: str, intent: _Intent) -> str:
        rel = intent.path or "src/ledgerline/parser.py"
        symbol = (
            _STORY_SYMBOLS.get(intent.arg.removeprefix("story:"), intent.arg) if intent.kind != "test" else ""
        )
        if not symbol or " " in symbol or "/" in symbol:
            functions = self.repo.functions(rel) if rel in self.repo.files else []
            symbol = self.rng.choice(functions).name if functions else "parse_rows"
        return string.Template(template).safe_substitute(
            file=rel, sym=symbol, dir=rel.rsplit("/", 1)[0] if "/" in rel else "."
        )

    def _say(self, intent: _Intent) -> str:
        story = _STORY_SAY.get(intent.arg, "")
        if not story and (
            intent.kind == "write" or (intent.kind == "read_full" and intent.origin == "script")
        ):
            story = _STORY_SAY.get(intent.path, "")
        if story:
            return story
        key = {"commit": "git"}.get(intent.kind, intent.kind)
        if intent.kind == "test" and intent.arg in ("verbose", "full"):
            key = "test_verbose"
        pool = _SAY.get(key, _SAY["read"])
        return self._fill(self.rng.choice(pool), intent)

    def _thinking(self, intent: _Intent) -> str:
        """Reasoning text: a sentence about the current step, a few general ones, sometimes a plan."""
        rng = self.rng
        count = rng.choice((1, 2, 2, 3, 3, 4, 5, 6, 8))
        first = _THINK.get({"read_full": "read"}.get(intent.kind, intent.kind), _THINK["general"])
        opening = rng.choice(first)
        general = [sentence for sentence in _THINK["general"] if sentence != opening]
        chosen = [opening, *rng.sample(general, min(count - 1, len(general)))]
        text = " ".join(self._fill(sentence, intent) for sentence in chosen)
        if rng.random() < 0.12:
            steps = rng.sample(_PLAN_STEPS, rng.randint(4, 7))
            text += "\n\nPlan:\n" + "\n".join(f"{i}. {step}" for i, step in enumerate(steps, start=1))
        return text

    def _final(self, turn: _Turn) -> None:
        rng = self.rng
        tests = (
            f"Tests: `{self.tools.last_test_summary}`."
            if self.tools.last_test_summary and self.tools.last_test_ok
            else "The last test run still had a failure, which I left for the next step."
            if self.tools.last_test_summary
            else ""
        )
        files = ", ".join(f"`{rel}`" for rel in dict.fromkeys(self.turn_files)) or "nothing"
        template = _FINAL.get(turn.final_key, _FINAL["generic"])
        text = string.Template(template).safe_substitute(
            tests=tests, files=files, summary=self.tools.last_test_summary or "no tests run"
        )
        thinking = self._thinking(_Intent("final")) if rng.random() < 0.3 else None
        self.writer.respond(thinking=thinking, text=text, calls=[], interleave=False, lead_blank=False)


def _claude_md_reminder() -> str:
    return (
        "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n"
        "# claudeMd\nCodebase and user instructions are shown below. Be sure to adhere to these "
        "instructions. IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow "
        f"them exactly as written.\n\nContents of {CWD}/CLAUDE.md (project instructions, checked into "
        f"the codebase):\n\n{CLAUDE_MD}\n</system-reminder>"
    )


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def generate_claude_code(
    path: Path,
    *,
    requests: int,
    seed: int = 7,
    session_id: str | None = None,
    target_peak_tokens: int | None = None,
    scenario: str | None = None,
    model: str = DEFAULT_MODEL,
) -> GeneratedInfo:
    """Write a synthetic Claude Code 2.1.39 transcript with ``requests`` model requests to ``path``.

    ``target_peak_tokens`` steers the sizes of tool results so that the last request's context
    lands near that figure; without it sizes follow a fixed distribution (about 1,000 tokens of
    growth per request). ``scenario`` is ``"feature"`` (bug fix plus feature, four human turns and
    more for long runs) or ``"bugfix"`` (a one-file fix); by default ``"bugfix"`` below 30 requests.
    """
    if requests < 1:
        raise ValueError("requests must be at least 1")
    chosen = scenario or ("bugfix" if requests < 30 else "feature")
    if chosen not in ("feature", "bugfix"):
        raise ValueError(f"unknown scenario {chosen!r}; use 'feature' or 'bugfix'")
    rng = random.Random(seed)
    ids = _Ids(rng)
    sid = session_id or ids.uuid()
    repo = _Repo(random.Random(_stable_seed("repo", seed)))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        writer = _Writer(out, rng, ids, sid, model)
        tools = _Tools(rng, ids, repo, sid)
        agent = _Agent(
            writer, tools, repo, rng, requests=requests, target=target_peak_tokens, scenario=chosen
        )
        agent.run()
    return GeneratedInfo(
        path=path,
        lines=writer.lines,
        requests=writer.requests,
        tool_calls=writer.tool_calls,
        first_context=writer.first_context,
        peak_context=writer.peak_context,
        bytes=path.stat().st_size,
    )


def generate_sample(name: str, out_dir: Path | None = None) -> GeneratedInfo:
    """Generate the registered sample ``name`` into ``out_dir`` (default: the package folder)."""
    info = SAMPLES[name]
    recipe = RECIPES[name]
    target = Path(out_dir) if out_dir is not None else SAMPLES_DIR
    return generate_claude_code(
        target / info.file,
        requests=recipe.requests,
        seed=recipe.seed,
        session_id=recipe.session_id,
        target_peak_tokens=recipe.target_peak_tokens,
        scenario=recipe.scenario,
    )
