"""What a session cost in money: per request and in all, split into input, cache write, cache read
and output, at the prices of the `genai-prices` library (maintained, bundled with it: no network).

Prices: `genai-prices` gives each model's price per million tokens of each kind, as it stood on
the request's date (a price that changed is taken as it was then), with the tier of the
request's whole input where a model has tiers (Claude over 200,000 tokens). Cache writes are at
the 5-minute price: transcripts do not say which cache lifetime a write used. A cache price a
model does not list is its input price (OpenAI bills no cache write). A model the library does
not know has no price ("no price for MODEL"): never $0.

Cost: `input` is usage.input (the uncached input), `cache_write`, `cache_read`, `output` (which
includes reasoning), each times its price. A request that reported no usage has no cost.

The library's import takes about 0.25 s (pydantic, httpx, a 1.6 MB price table), as long as a
whole report of a 3 MB session. So the prices a session needs are kept, once looked up, in a
small file of the user's cache folder (`$XDG_CACHE_HOME/context-inspector/prices.json`, one
table per installed library, `TABLES_KEPT` of them, made anew when that library changes): a
report whose prices are there does not import it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

from msgspec import Struct
from msgspec.structs import force_setattr

from inspector.settings import cache_folder

from .transcript import Request, Transcript, Usage

__all__ = [
    "CostSummary",
    "Money",
    "PriceTable",
    "Prices",
    "SessionCost",
    "money_text",
    "price_table",
    "rebilled_cost",
    "session_cost",
]

PER = 1_000_000
"""Prices are per million tokens."""


class Money(Struct, frozen=True, kw_only=True):
    """US dollars, by kind of token."""

    input: float
    cache_write: float
    cache_read: float
    output: float
    total: float


ZERO = Money(input=0.0, cache_write=0.0, cache_read=0.0, output=0.0, total=0.0)


def _add(a: Money, b: Money) -> Money:
    return Money(
        input=a.input + b.input,
        cache_write=a.cache_write + b.cache_write,
        cache_read=a.cache_read + b.cache_read,
        output=a.output + b.output,
        total=a.total + b.total,
    )


def _rounded(m: Money) -> Money:
    """To a millionth of a dollar, for JSON and equality in tests."""
    return Money(
        input=round(m.input, 6),
        cache_write=round(m.cache_write, 6),
        cache_read=round(m.cache_read, 6),
        output=round(m.output, 6),
        total=round(m.total, 6),
    )


class Tiered(Struct, frozen=True):
    """A price per million tokens, and the higher prices from a request input size on."""

    base: Decimal
    tiers: tuple[tuple[int, Decimal], ...] = ()
    per_token: tuple[tuple[int, int, int], ...] = ()
    """(start, numerator, denominator) of the price of one token from each tier's start on, the
    highest first, then the base's (start -1): exact fractions, so that `dollars` divides
    integers, as `float(price * n / PER)` would give (both are the exact quotient, correctly
    rounded to a float) in a tenth of the time. Derived from `base` and `tiers` when made (any
    value given is replaced)."""

    def __post_init__(self) -> None:
        starts = [(start, price) for start, price in reversed(self.tiers)] + [(-1, self.base)]
        ratios = []
        for start, price in starts:
            num, den = price.as_integer_ratio()
            ratios.append((start, num, den * PER))
        force_setattr(self, "per_token", tuple(ratios))

    def at(self, whole_input: int) -> Decimal:
        """The price for a request whose whole input is `whole_input` tokens (the library's rule:
        the highest tier whose start it exceeds)."""
        for start, price in reversed(self.tiers):
            if whole_input > start:
                return price
        return self.base

    def dollars(self, whole_input: int, tokens: int) -> float:
        """`float(self.at(whole_input) * tokens / PER)`: what `tokens` cost at the price for a
        request whose whole input is `whole_input` tokens."""
        for start, num, den in self.per_token:
            if whole_input > start:
                return num * tokens / den
        num, den = self.per_token[-1][1:]
        return num * tokens / den

    def as_json(self) -> list[Any]:
        return [str(self.base), [[s, str(p)] for s, p in self.tiers]]

    @classmethod
    def from_json(cls, raw: list[Any]) -> Tiered:
        return cls(Decimal(raw[0]), tuple((int(s), Decimal(p)) for s, p in raw[1]))


class Prices(Struct, frozen=True):
    """One model's prices on one day."""

    model: str
    """The library's id of the model (claude-sonnet-4-5 for claude-sonnet-4-5-20250929)."""
    provider: str
    input: Tiered
    cache_write: Tiered
    cache_read: Tiered
    output: Tiered

    def cost(self, usage: Usage) -> Money:
        i, w, r, o = self._parts(usage)
        return Money(input=i, cache_write=w, cache_read=r, output=o, total=sum((i, w, r, o)))

    def total(self, usage: Usage) -> float:
        """`_rounded(self.cost(usage)).total`, without the two `Money` and the four roundings
        it does not keep (the gauge's running sum over every request of a session)."""
        return round(sum(self._parts(usage)), 6)

    def _parts(self, usage: Usage) -> tuple[float, float, float, float]:
        """Input, cache write, cache read, output: each the exact quotient rounded to a float
        (their total is their sum, as `sum` adds them)."""
        whole = usage.context
        return (
            self.input.dollars(whole, usage.input),
            self.cache_write.dollars(whole, usage.cache_write),
            self.cache_read.dollars(whole, usage.cache_read),
            self.output.dollars(whole, usage.output),
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "provider": self.provider,
            **{k: getattr(self, k).as_json() for k in ("input", "cache_write", "cache_read", "output")},
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Prices:
        kinds = {k: Tiered.from_json(raw[k]) for k in ("input", "cache_write", "cache_read", "output")}
        return cls(model=str(raw["model"]), provider=str(raw["provider"]), **kinds)


def _library_dir() -> Path | None:
    """Where `genai_prices` is installed, found without importing it (None: not installed)."""
    from importlib.util import find_spec

    spec = find_spec("genai_prices")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def _version(library: Path) -> str:
    found = sorted(library.parent.glob("genai_prices-*.dist-info"))
    return found[-1].name.removeprefix("genai_prices-").removesuffix(".dist-info") if found else "?"


_CHECKED = re.compile(r"\b(?:[Cc]hecked|[Vv]erified|[Uu]pdated|as of)(?: on)? (20\d\d)-(\d\d)-(\d\d)\b")


def _table_date(data_file: Path) -> str | None:
    """The newest date on which the price table says a price was checked against its provider's
    page ("checked on 2026-11-03"): how recent its prices are (the library states no date of its
    own; dates of prices that start later are not that)."""
    try:
        text = data_file.read_text(encoding="utf-8")
    except OSError:
        return None
    newest: date | None = None
    for m in _CHECKED.finditer(text):
        try:
            day = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            continue
        newest = day if newest is None or day > newest else newest
    return newest.isoformat() if newest else None


TABLES_KEPT = 4
"""Installs of the library whose prices the cache file keeps (the most recently saved)."""


def _cache_file() -> Path:
    return cache_folder() / "prices.json"


class PriceTable:
    """The prices of `genai-prices`, looked up per (model, day) and kept in the cache file."""

    def __init__(self, cache: Path | None = None) -> None:
        self.library = _library_dir()
        self.cache = _cache_file() if cache is None else cache
        self._entries: dict[str, dict[str, Any] | None] = {}
        self._parsed: dict[str, Prices | None] = {}
        """`_entries` read into `Prices`, once per (model, day): reading one is 20 times its use."""
        self._dirty = False
        self.version = "?"
        self.date: str | None = None
        self._key = ""
        if self.library is None:
            return
        data = self.library / "data.py"
        try:
            st = data.stat()
        except OSError:
            st = None
        self._key = f"{self.library}:{st.st_size}:{st.st_mtime_ns}" if st else str(self.library)
        stored = self._read()
        if stored is not None:
            self.version, self.date = stored.get("version", "?"), stored.get("date")
            self._entries = dict(stored.get("prices", {}))
        else:
            self.version, self.date = _version(self.library), _table_date(data)
            self._dirty = True

    @property
    def available(self) -> bool:
        return self.library is not None

    @property
    def source(self) -> str:
        """ "genai-prices 0.2.3 (prices checked up to 2026-11-03)"."""
        if not self.available:
            return "genai-prices is not installed"
        when = f" (prices checked up to {self.date})" if self.date else ""
        return f"genai-prices {self.version}{when}"

    def _tables(self) -> list[dict[str, Any]]:
        """The file's tables, one per installed library (newest first): several installs (a
        pipx one, a project's virtual environment) share the cache folder, and each keeping only
        its own would have every report of another one import the library again."""
        try:
            raw = json.loads(self.cache.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        tables = raw.get("tables") if isinstance(raw, dict) else None
        if not isinstance(tables, list):
            return []
        return [t for t in tables if isinstance(t, dict) and isinstance(t.get("key"), str)]

    def _read(self) -> dict[str, Any] | None:
        for table in self._tables():
            if table["key"] == self._key:
                return table if isinstance(table.get("prices"), dict) else None
        return None

    def save(self) -> None:
        """Keep what was looked up (nothing is written when nothing new was; errors are ignored:
        a read-only home only costs the next report the library's import)."""
        if not self._dirty or not self.available:
            return
        mine = {"key": self._key, "version": self.version, "date": self.date, "prices": self._entries}
        others = [t for t in self._tables() if t["key"] != self._key][: TABLES_KEPT - 1]
        data = {"tables": [mine, *others]}
        try:
            self.cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.cache.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.cache)
            self._dirty = False
        except OSError:
            pass

    def prices(self, model: str, day: date) -> Prices | None:
        """`model`'s prices on `day`; None where the library has none."""
        key = f"{model}|{day.isoformat()}"
        try:
            return self._parsed[key]
        except KeyError:
            pass
        if key not in self._entries:
            found = _look_up(model, day) if self.available else None
            self._entries[key] = found.as_json() if found is not None else None
            self._dirty = True
        raw = self._entries[key]
        parsed = self._parsed[key] = Prices.from_json(raw) if raw is not None else None
        return parsed


def _look_up(model: str, day: date) -> Prices | None:
    """The library's prices of `model` on `day` (this imports it)."""
    from genai_prices import data_snapshot, types

    try:
        provider, info = data_snapshot.get_snapshot().find_provider_model(model, None, None, None)
    except LookupError:
        return None
    mp = info.get_prices(datetime(day.year, day.month, day.day, 12, tzinfo=UTC))

    def tiered(value: Any) -> Tiered | None:
        if value is None:
            return None
        if isinstance(value, types.TieredPrices):
            return Tiered(Decimal(value.base), tuple((int(t.start), Decimal(t.price)) for t in value.tiers))
        return Tiered(Decimal(value))

    base_in, out = tiered(mp.input_mtok), tiered(mp.output_mtok)
    if base_in is None or out is None:
        return None
    return Prices(
        model=info.id,
        provider=provider.id,
        input=base_in,
        cache_write=tiered(mp.cache_write_mtok) or base_in,
        cache_read=tiered(mp.cache_read_mtok) or base_in,
        output=out,
    )


_TABLE: PriceTable | None = None


def price_table() -> PriceTable:
    """The process's price table (read from the cache file once)."""
    global _TABLE
    if _TABLE is None:
        _TABLE = PriceTable()
    return _TABLE


def _day(timestamp: str | None) -> date:
    if timestamp:
        try:
            return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).date()
        except ValueError:
            pass
    return datetime.now(UTC).date()


class RequestCost(Struct, frozen=True, kw_only=True):
    request: int
    model: str | None
    cost: Money | None
    note: str | None = None
    """Why there is no cost: "no usage reported", "no price for MODEL"."""


class CostSummary(Struct, frozen=True, kw_only=True):
    """`report --json`'s `cost`: the session's money, and what it could not price."""

    currency: str = "USD"
    total: Money | None
    """Of the requests priced; None when none could be."""
    requests_priced: int
    requests_unpriced: int
    no_price_for: list[str]
    """Models the price table does not know (their requests have no cost, never $0)."""
    prices: str
    """Where the prices come from: "genai-prices 0.2.3 (prices checked up to 2026-11-03)"."""
    price_table_date: str | None
    cache_writes: str = "at the 5-minute cache-write price"


class SessionCost(Struct, frozen=True, kw_only=True):
    summary: CostSummary
    requests: list[RequestCost]


def _request_cost(
    index: int, usage: Usage | None, model: str | None, timestamp: str | None, table: PriceTable
) -> RequestCost:
    if usage is None:
        return RequestCost(request=index, model=model, cost=None, note="no usage reported")
    if not model:
        return RequestCost(request=index, model=model, cost=None, note="no price: the model is not recorded")
    if not table.available:
        return RequestCost(
            request=index, model=model, cost=None, note="no price: genai-prices is not installed"
        )
    prices = table.prices(model, _day(timestamp))
    if prices is None:
        return RequestCost(request=index, model=model, cost=None, note=f"no price for {model}")
    return RequestCost(request=index, model=model, cost=_rounded(prices.cost(usage)))


def _request_total(
    usage: Usage | None, model: str | None, timestamp: str | None, table: PriceTable
) -> float | None:
    """`_request_cost(...).cost.total`, or None where that has no cost: the one figure of a
    request the gauge's running sum needs (a fifth of the time: 0.1 s at 4,710 requests before)."""
    if usage is None or not model or not table.available:
        return None
    prices = table.prices(model, _day(timestamp))
    return prices.total(usage) if prices is not None else None


def session_cost(transcript: Transcript, table: PriceTable | None = None) -> SessionCost:
    """Every request's cost and the session's total."""
    table = table or price_table()
    rows = [
        _request_cost(r.index, r.usage, r.model or transcript.model, r.timestamp, table)
        for r in transcript.requests
    ]
    table.save()
    return summed(rows, table)


def summed(rows: Sequence[RequestCost], table: PriceTable) -> SessionCost:
    total: Money | None = None
    for row in rows:
        if row.cost is not None:
            total = row.cost if total is None else _add(total, row.cost)
    unpriced = [row for row in rows if row.cost is None and row.note != "no usage reported"]
    summary = CostSummary(
        total=_rounded(total) if total is not None else None,
        requests_priced=sum(1 for row in rows if row.cost is not None),
        requests_unpriced=len(unpriced),
        no_price_for=sorted({row.model for row in unpriced if row.model}),
        prices=table.source,
        price_table_date=table.date,
    )
    return SessionCost(summary=summary, requests=list(rows))


def money_text(value: float | None) -> str:
    """ "$12.34", "$0.0042" (small sums keep two significant digits), "—" for none."""
    if value is None:
        return "—"
    if value and abs(value) < 0.01:
        return f"${value:.2g}" if abs(value) >= 0.0001 else "<$0.0001"
    return f"${value:,.2f}"


def cost_line(cost: CostSummary) -> str:
    """ "$12.34 in all (input $0.12 · cache write $3.40 · cache read $5.10 · output $3.72); prices
    of genai-prices 0.2.3 (prices checked up to 2026-11-03); no price for fake-model (2 requests)"."""
    parts: list[str] = []
    t = cost.total
    if t is not None:
        parts.append(
            f"{money_text(t.total)} in all (input {money_text(t.input)} · cache write "
            f"{money_text(t.cache_write)} · cache read {money_text(t.cache_read)} · output "
            f"{money_text(t.output)}), cache writes at their 5-minute price"
        )
    if cost.no_price_for:
        n = cost.requests_unpriced
        parts.append(
            f"no price for {', '.join(cost.no_price_for)} ({n:,} request{'' if n == 1 else 's'} not priced)"
        )
    elif t is None:
        parts.append("no request reported usage to price")
    return "; ".join(parts) + f"; prices of {cost.prices}"


def rebilled_cost(
    transcript: Transcript, rows: Iterable[tuple[int, int]], table: PriceTable | None = None
) -> tuple[float | None, str | None]:
    """The money of tokens re-billed by prefix rewrites: per (request, tokens re-billed), those
    tokens written to the cache again at that request's cache-write price instead of read from it
    at its cache-read price. (None, why) where a request's model has no price."""
    table = table or price_table()
    total = Decimal(0)
    for k, tokens in rows:
        if not tokens:
            continue
        r = transcript.requests[k - 1]
        model = r.model or transcript.model
        if not model or not table.available:
            return (
                None,
                "no price: the model is not recorded" if not model else "genai-prices is not installed",
            )
        prices = table.prices(model, _day(r.timestamp))
        if prices is None:
            return None, f"no price for {model}"
        whole = r.usage.context if r.usage is not None else tokens
        total += (prices.cache_write.at(whole) - prices.cache_read.at(whole)) * tokens / PER
    table.save()
    return round(float(total), 6), None


_MEMO: dict[tuple[int, int], tuple[Transcript, list[float | None], list[float]]] = {}


def _same_priced(a: Request, b: Request) -> bool:
    return a.index == b.index and a.usage == b.usage and a.model == b.model and a.timestamp == b.timestamp


def _running_costs(transcript: Transcript) -> tuple[list[float | None], list[float]]:
    """Every request's cost total (None: not priced) and the money spent up to it. A transcript
    that extends one seen before (a followed file that grew) reuses that one's figures for the
    requests it shares with it, priced alike (the same usage, model and time): an append costs
    its own requests, not the session's (at 4,710 requests, 65 ms of CPU on every live append
    before)."""
    table = price_table()
    reqs = transcript.requests
    totals: list[float | None] = []
    running: list[float] = []
    for old, old_totals, old_running in _MEMO.values():
        if old.model != transcript.model:
            continue
        n, olds = 0, old.requests
        limit = min(len(olds), len(reqs), len(old_totals))
        while n < limit and (olds[n] is reqs[n] or _same_priced(olds[n], reqs[n])):
            n += 1
        if n > len(totals):
            totals, running = old_totals[:n], old_running[:n]
    spent = running[-1] if running else 0.0
    model = transcript.model
    for r in reqs[len(totals) :]:
        total = _request_total(r.usage, r.model or model, r.timestamp, table)
        if total is not None:
            spent += total
        totals.append(total)
        running.append(spent)
    table.save()
    return totals, running


class MoneyAt(NamedTuple):
    """What the app's gauge says of money at one request (`money_at`)."""

    text: str
    """"cost $0.06 · $10.23 so far", "no price for fake-model", or "" (no usage reported)."""
    priced: bool
    """Whether `text` is a price (not the reason there is none)."""


def money_at(transcript: Transcript, k: int) -> MoneyAt:
    """What the app's gauge says of money at request k: "cost $0.06 · $10.23 so far" (priced),
    "no price for fake-model", or "" where the request reported no usage. The session's costs are
    computed once per transcript (a followed file that grew is a new one: it goes on from the one
    before)."""
    key = (id(transcript), len(transcript.requests))
    hit = _MEMO.get(key)
    if hit is None or hit[0] is not transcript:
        totals, running = _running_costs(transcript)
        if len(_MEMO) >= 4:
            _MEMO.clear()
        hit = _MEMO[key] = (transcript, totals, running)
    _, totals, running = hit
    if not 1 <= k <= len(totals):
        return MoneyAt("", False)
    total = totals[k - 1]
    if total is None:  # why it has no price, said as the report says it
        r = transcript.requests[k - 1]
        row = _request_cost(r.index, r.usage, r.model or transcript.model, r.timestamp, price_table())
        return MoneyAt("" if row.note == "no usage reported" else str(row.note), False)
    return MoneyAt(f"cost {money_text(total)} · {money_text(running[k - 1])} so far", True)
