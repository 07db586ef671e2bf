"""What every layer shares: decisions, layer results, the layer protocol and the per-run token memo."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from enum import StrEnum
from typing import Generic, Protocol, TypeVar

from msgspec import Struct

from inspector.model import Message

from .budget import Budget
from .groups import pin_label
from .pinning import Pins


class Action(StrEnum):
    """What a layer did to one message."""

    TRUNCATED = "truncated"
    CLEARED = "cleared"
    REMOVED = "removed"
    SUMMARIZED = "summarized"
    KEPT_PINNED = "kept_pinned"
    KEPT_RECENT = "kept_recent"

    @property
    def changed(self) -> bool:
        return self not in (Action.KEPT_PINNED, Action.KEPT_RECENT)


class Decision(Struct, frozen=True):
    """A record of what one layer did to one message, and why, with the numbers.

    `tokens_after` is 0 for a message that left the view (removed, or folded into a summary).
    """

    message_id: str
    layer: str
    action: Action
    reason: str
    tokens_before: int
    tokens_after: int


class LayerResult(Struct, frozen=True):
    """One layer's output: its view, the estimates before and after, whether it fired and why.

    `fired` is True when the output differs from the input; `reason` says why it did or did not
    ("4,210 under trigger 167,000"). Counts are of messages.
    """

    name: str
    label: str
    view: tuple[Message, ...]
    tokens_before: int
    tokens_after: int
    fired: bool
    reason: str
    decisions: tuple[Decision, ...] = ()
    truncated: int = 0
    cleared: int = 0
    removed: int = 0
    summarized: int = 0
    forced: bool = False

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after


class Sizer(Protocol):
    """What layers need of an estimator (inspector.tokens.Estimator satisfies it)."""

    def text(self, text: str) -> int: ...

    def message(self, message: Message) -> int: ...


VIEW_MEMO = 64
"""How many views (their estimates) a TokenMemo remembers:
the views of one run are asked about within it, and a memo kept across the runs of a whole
session would otherwise hold every view of every request (each the size of its ledger)."""


PREFIXES_KEPT = 16
"""How many views the process remembers were declared the start of a longer tuple (`seed_view`):
a fact about two tuples, whatever estimator sizes them, so the view of one request and that of the
request before, each declared through the memo of its own run, are known to share their front
(a layer that carries its work from one to the next compares them: a long ledger's length at C
speed at every request, else). The last views only: each entry holds a view (a ledger's length
of references) and the views of a pass go on from one another."""

_prefixes: dict[int, tuple[tuple[Message, ...], tuple[Message, ...]]] = {}
"""id(view) -> (the view, the tuple it is the start of); the entry holds the view, so its id is
not reused while the entry lives."""
_prefixes_lock = threading.Lock()


def _declare_prefix(messages: tuple[Message, ...], of: tuple[Message, ...]) -> None:
    with _prefixes_lock:
        _prefixes[id(messages)] = (messages, of)
        while len(_prefixes) > PREFIXES_KEPT:
            del _prefixes[next(iter(_prefixes))]


class TokenMemo:
    """An estimator wrapper that sizes each message object once.

    Keyed by object identity, holding a reference to each message so an id is never reused while
    the memo lives. A layer that changes a message makes a new object, which is sized afresh; an
    unchanged message keeps its first estimate through every layer. One memo per run is the
    default; a caller that shapes many requests of one transcript may keep one memo across runs.
    The estimates of whole views are kept for the last `VIEW_MEMO` views only (a view forgotten
    is summed again: the same figure).
    """

    def __init__(self, estimator: Sizer) -> None:
        self.estimator = estimator
        self.name: str = str(getattr(estimator, "name", type(estimator).__name__))
        self._memo: dict[int, tuple[Message, int]] = {}
        self._views: dict[int, tuple[tuple[Message, ...], int]] = {}
        """id(view tuple) -> (the tuple, its estimate): a view passed on unchanged is summed once."""
        self._shared: dict[tuple[int, int], tuple[tuple[Message, ...], tuple[Message, ...], int]] = {}
        """(id(view), id(earlier)) -> (the view, the earlier view, how many messages at their
        front are the same objects): `seed_shared`."""

    def text(self, text: str) -> int:
        return self.estimator.text(text)

    def message(self, message: Message) -> int:
        hit = self._memo.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        tokens = self.estimator.message(message)
        self._memo[id(message)] = (message, tokens)
        return tokens

    def seed_view(
        self, messages: tuple[Message, ...], total: int, prefix_of: tuple[Message, ...] | None = None
    ) -> None:
        """Record the estimate of a view the caller already knows (the sum of what the estimator
        gives for each of `messages`), so it is not summed message by message.

        `prefix_of`: a tuple `messages` is the start of (`messages == prefix_of[:len(messages)]`),
        so that scans of consecutive views cut from the same tuple need not compare them."""
        self._keep_view(messages, total)
        if prefix_of is not None:
            _declare_prefix(messages, prefix_of)

    def _keep_view(self, messages: tuple[Message, ...], total: int) -> None:
        """Remember `messages`' estimate, forgetting the oldest view remembered beyond `VIEW_MEMO`."""
        views = self._views
        views[id(messages)] = (messages, total)
        if len(views) > VIEW_MEMO:
            del views[next(iter(views))]

    def prefix_of(self, messages: tuple[Message, ...]) -> tuple[Message, ...] | None:
        """The tuple `messages` was declared a prefix of (`seed_view`, through any memo), if any."""
        hit = _prefixes.get(id(messages))
        return hit[1] if hit is not None and hit[0] is messages else None

    def seed_shared(self, view: tuple[Message, ...], earlier: tuple[Message, ...], shared: int) -> None:
        """Declare that the first `shared` messages of `view` are those of `earlier` (the same
        objects). A layer that makes the view of a request from the one it made for the request
        before says how much of it it kept as it was, so that the next layer, which compares its
        input with the one it had before (to go on from it), need not compare that front."""
        declared = self._shared
        declared[(id(view), id(earlier))] = (view, earlier, shared)
        if len(declared) > VIEW_MEMO:
            del declared[next(iter(declared))]

    def known_front(self, a: tuple[Message, ...], b: tuple[Message, ...]) -> int:
        """How many messages at their front `a` and `b` are known to share without looking at
        them: both declared the start of one tuple (`seed_view`), or one declared made from the
        other (`seed_shared`); 0 when nothing was declared."""
        if a is b:
            return len(a)
        base = self.prefix_of(a)
        if base is not None and base is self.prefix_of(b):
            return min(len(a), len(b))
        declared = self._shared
        for x, y in ((b, a), (a, b)):
            hit = declared.get((id(x), id(y)))
            if hit is not None and hit[0] is x and hit[1] is y:
                return hit[2]
        return 0

    def replaced(
        self, src: tuple[Message, ...], changes: dict[int, Message]
    ) -> tuple[tuple[Message, ...], int]:
        """`src` with the messages at the given indexes replaced, and its estimate, computed from
        the estimate of `src` and the sizes of the messages that changed (the same integer sum)."""
        out = list(src)
        total = self.view(src)
        size = self.message
        for i, new in changes.items():
            total += size(new) - size(src[i])
            out[i] = new
        result = tuple(out)
        self._keep_view(result, total)
        return result, total

    def view(self, messages: Iterable[Message]) -> int:
        """The estimate of a view: the sum of its messages' estimates."""
        if type(messages) is tuple:
            hit = self._views.get(id(messages))
            if hit is not None and hit[0] is messages:
                return hit[1]
            total = sum(map(self.message, messages))
            self._keep_view(messages, total)
            return total
        return sum(map(self.message, messages))

    def __len__(self) -> int:
        return len(self._memo)


R = TypeVar("R")

SCAN_CACHE = 65_536
"""How many messages a ViewScan remembers the outcome of (then it starts afresh)."""


class ViewScan(Generic[R]):
    """The messages of a view for which `fn` has something to say, in view order, as (index, result).

    `fn` must depend on the message's content alone (not on its place, not on an estimator).
    Results are kept by message object, and the last view's answer is kept too: the ledgers of
    consecutive requests extend one another, so a view that starts with the last one (the same
    messages, compared at C speed, identity first) is answered by looking at its new messages only.
    Layers keep one per parameter set, across requests.
    """

    def __init__(self, fn: Callable[[Message], R | None]) -> None:
        self._fn = fn
        self._view: tuple[Message, ...] = ()
        self._hits: list[tuple[int, R]] = []
        self._per: dict[int, tuple[Message, R | None]] = {}

    def of(self, message: Message) -> R | None:
        """`fn(message)`, remembered."""
        hit = self._per.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        got = self._fn(message)
        if len(self._per) >= SCAN_CACHE:
            self._per.clear()
        self._per[id(message)] = (message, got)
        return got

    def __call__(self, view: tuple[Message, ...], sizer: object = None) -> Sequence[tuple[int, R]]:
        """The hits of `view`. With `sizer` (the layer's TokenMemo), what was declared to it of
        how `view` and the last view share their front is not compared again (`starts_with`).

        The hits are the scan's own list, to be read before the next call, which extends it in
        place where its view extends this one (a copy per request would cost a long ledger's
        length each time)."""
        last = self._view
        n = len(last)
        if n and starts_with(view, last, sizer):
            hits = self._hits
            start = n
        else:
            hits = []
            start = 0
        of = self.of
        for i in range(start, len(view)):
            got = of(view[i])
            if got is not None:
                hits.append((i, got))
        self._view = view
        self._hits = hits
        return hits


class ResultScans(Generic[R]):
    """A layer's `ViewScan` of `fn(message, limit)` over the messages that are not pinned, one per
    tool-result limit and pins of the budgets it runs with (made on first use, kept across
    requests, so a message is looked at and copied once)."""

    def __init__(self, fn: Callable[[Message, int], R | None]) -> None:
        self._fn = fn
        self._scans: dict[tuple[int, Pins], ViewScan[R]] = {}

    def __call__(self, budget: Budget) -> ViewScan[R]:
        limit, pins = budget.tool_result_budget, budget.pins
        scan = self._scans.get((limit, pins))
        if scan is None:
            fn = self._fn
            scan = self._scans[(limit, pins)] = ViewScan(lambda m: None if pins(m) else fn(m, limit))
        return scan


def starts_with(view: tuple[Message, ...], last: tuple[Message, ...], sizer: object = None) -> bool:
    """Whether `view` begins with every message of `last` (the same objects, or equal): how a
    layer that carries its work from one request to the next knows its input extends the last.
    The front `sizer` (a TokenMemo) was told the two share (`TokenMemo.known_front`) is not
    compared again; the rest is, as a tuple comparison (identity first, at C speed)."""
    n = len(last)
    if len(view) < n:
        return False
    k = sizer.known_front(last, view) if isinstance(sizer, TokenMemo) else 0
    if k >= n:
        return True
    return view[k:n] == last[k:] if k else view[:n] == last


def memo(estimator: Sizer) -> TokenMemo:
    """`estimator` itself if it is already a TokenMemo, else a fresh memo around it."""
    return estimator if isinstance(estimator, TokenMemo) else TokenMemo(estimator)


class Layer(Protocol):
    """A shaping layer: input view in, output view out, plus decisions. Never mutates its input.

    `name` is the rung key ("tool_output_clear"), `label` the words ("tool output clear").
    `reactive` layers do nothing unless the estimate exceeds the trigger (or `forced`).
    `explain` False: the caller reads only the view and the figures (a simulation over every
    request), so a layer may leave `decisions` empty where writing them costs more than the rest.
    A layer may also have `quiet(view, budget, estimator) -> bool`: True only where `apply` (not
    forced) would leave that view as it is, told more cheaply than by applying (`Pipeline.quiet`).
    """

    name: str
    label: str
    reactive: bool

    def apply(
        self,
        view: Sequence[Message],
        budget: Budget,
        estimator: Sizer,
        *,
        forced: bool = False,
        explain: bool = True,
    ) -> LayerResult: ...


class CarryingLayer:
    """A layer that carries what it computed for one request's view to the next (a replay shapes
    every request's ledger, each the one before and a few messages more): one view at a time, so
    `apply` holds the layer's lock around `_apply` (the app shapes in worker threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def apply(
        self,
        view: Sequence[Message],
        budget: Budget,
        estimator: Sizer,
        *,
        forced: bool = False,
        explain: bool = True,
    ) -> LayerResult:
        with self._lock:
            return self._apply(view, budget, estimator, forced=forced, explain=explain)

    def _apply(
        self,
        view: Sequence[Message],
        budget: Budget,
        estimator: Sizer,
        *,
        forced: bool = False,
        explain: bool = True,
    ) -> LayerResult:
        raise NotImplementedError


class ResultCutLayer:
    """A layer that replaces each message holding a tool result over `budget.tool_result_budget`
    (pinned messages never) by a copy its subclass makes from the message alone (`cut`): the same
    copy at every request, kept by a `ResultScans`; a copy sized above its original stays out.
    Subclasses give `cut` and the words of their decisions and of their verdicts."""

    name: str
    label: str
    reactive = False

    def __init__(self) -> None:
        self._scan: ResultScans[tuple[Message, int]] = ResultScans(self.cut)

    @staticmethod
    def cut(message: Message, limit: int) -> tuple[Message, int] | None:
        """The copy of `message` (not pinned) with its results over `limit` cut, and the size of
        the longest of them; None where it has none."""
        raise NotImplementedError

    def cut_reason(self, longest: int, limit: int) -> str:
        raise NotImplementedError

    def idle_reason(self, limit: int) -> str:
        raise NotImplementedError

    def acted_reason(self, messages: int, limit: int) -> str:
        raise NotImplementedError

    def quiet(self, view: Sequence[Message], budget: Budget, estimator: Sizer) -> bool:
        """Whether `apply` would leave `view` as it is (`Pipeline.quiet`): no result over the limit
        (the scan `apply` reads, carried on from the view before)."""
        return not self._scan(budget)(tuple(view), memo(estimator))

    def apply(
        self,
        view: Sequence[Message],
        budget: Budget,
        estimator: Sizer,
        *,
        forced: bool = False,
        explain: bool = True,
    ) -> LayerResult:
        sizer = memo(estimator)
        src = tuple(view)
        before = sizer.view(src)
        limit = budget.tool_result_budget
        changed: dict[int, Message] = {}
        decisions: list[Decision] = []
        for i, (new, longest) in self._scan(budget)(src, sizer):
            m = src[i]
            if sizer.message(new) > sizer.message(m):
                continue
            changed[i] = new
            decisions.append(
                Decision(
                    message_id=m.id,
                    layer=self.name,
                    action=Action.TRUNCATED,
                    reason=self.cut_reason(longest, limit),
                    tokens_before=sizer.message(m),
                    tokens_after=sizer.message(new),
                )
            )
        if not changed:
            return no_change(self, src, before, self.idle_reason(limit), forced)
        result, after = sizer.replaced(src, changed)
        return acted(
            self,
            result,
            before,
            after,
            reason=self.acted_reason(len(changed), limit),
            decisions=decisions,
            forced=forced,
            truncated=len(changed),
        )


def kept_pinned(layer: str, message: Message, sizer: Sizer) -> Decision:
    """The decision a layer records for a pinned message it was not allowed to touch."""
    tokens = sizer.message(message)
    return Decision(
        message_id=message.id,
        layer=layer,
        action=Action.KEPT_PINNED,
        reason=f"pinned ({pin_label(message.source)})",
        tokens_before=tokens,
        tokens_after=tokens,
    )


def no_change(layer: Layer, view: tuple[Message, ...], tokens: int, reason: str, forced: bool) -> LayerResult:
    """The result of a layer that left its input as it was, saying why."""
    return LayerResult(
        name=layer.name,
        label=layer.label,
        view=view,
        tokens_before=tokens,
        tokens_after=tokens,
        fired=False,
        reason=reason,
        forced=forced,
    )


def acted(
    layer: Layer,
    view: tuple[Message, ...],
    before: int,
    after: int,
    *,
    reason: str,
    decisions: Iterable[Decision],
    forced: bool,
    truncated: int = 0,
    cleared: int = 0,
    removed: int = 0,
    summarized: int = 0,
) -> LayerResult:
    """The result of a layer that changed its input: its view, the estimates before and after,
    why, what it decided for each message, and how many messages it changed in each way."""
    return LayerResult(
        name=layer.name,
        label=layer.label,
        view=view,
        tokens_before=before,
        tokens_after=after,
        fired=True,
        reason=reason,
        decisions=tuple(decisions),
        truncated=truncated,
        cleared=cleared,
        removed=removed,
        summarized=summarized,
        forced=forced,
    )


class Pressed(Struct, frozen=True):
    """A reactive layer's view once it is known to be over its trigger (or forced): what every
    such layer starts from."""

    layer: Layer
    src: tuple[Message, ...]
    sizer: TokenMemo
    before: int
    """The view's size."""
    cause: str
    """Why the layer acts ("estimate 171,204 > trigger 167,000", or the forced variant)."""
    forced: bool

    def unchanged(self, reason: str) -> LayerResult:
        """The layer leaves the view as it was, saying why."""
        return no_change(self.layer, self.src, self.before, reason, self.forced)


def pressed(
    layer: Layer,
    view: Sequence[Message],
    budget: Budget,
    estimator: Sizer,
    forced: bool,
    *,
    summarizer_missing: bool = False,
) -> Pressed | LayerResult:
    """The start every reactive layer shares: size the view once; a layer that summarizes is off
    without a summarizer (`summarizer_missing`); under (or at) the trigger and not forced, a layer
    does nothing. Returns the unchanged result in those cases, else the pressed view to act on."""
    sizer = memo(estimator)
    src = tuple(view)
    before = sizer.view(src)
    if summarizer_missing:
        return no_change(layer, src, before, "off: no summarizer configured", forced)
    if not forced and before <= budget.trigger:
        return no_change(layer, src, before, under_trigger(before, budget), forced)
    return Pressed(layer, src, sizer, before, pressure(before, budget, forced), forced)


def quiet_below_trigger(
    view: Sequence[Message], budget: Budget, estimator: Sizer, *, summarizer_missing: bool = False
) -> bool:
    """A reactive layer's `quiet` (see `Pipeline.quiet`): whether `pressed` would return the view
    unchanged, not forced: the layer is off without its summarizer, or the view is at or under the
    trigger."""
    return summarizer_missing or memo(estimator).view(tuple(view)) <= budget.trigger


def under_trigger(tokens: int, budget: Budget) -> str:
    """ "4,210 under trigger 167,000" (or "at trigger" when equal)."""
    word = "at" if tokens == budget.trigger else "under"
    return f"{tokens:,} {word} trigger {budget.trigger:,}"


def pressure(tokens: int, budget: Budget, forced: bool) -> str:
    """Why a reactive layer acts: "estimate 171,204 > trigger 167,000", or the forced variant."""
    if forced and tokens <= budget.trigger:
        return f"forced (overflow recovery), estimate {tokens:,}"
    prefix = "forced (overflow recovery), " if forced else ""
    return f"{prefix}estimate {tokens:,} > trigger {budget.trigger:,}"


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"
