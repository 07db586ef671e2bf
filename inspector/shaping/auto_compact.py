"""Layer B: auto compact (OpenCollab rung `auto_compact`), the last resort."""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import Struct

from inspector.model import Message, Role, Source, SourceKind, TextBlock

from .base import (
    Action,
    CarryingLayer,
    Decision,
    LayerResult,
    Sizer,
    acted,
    kept_pinned,
    plural,
    pressed,
    quiet_below_trigger,
)
from .budget import Budget
from .groups import Group, _common_prefix, group_spans
from .summarize import Summarizer, cacheable, summarizer_key

SUMMARY_HEADER = "[Context auto-compacted — summary of {n} earlier messages]"
SUMMARY_CACHE_SIZE = 8
SUMMARY_SOURCE = Source.of(SourceKind.SUMMARY, name="auto compact")


def summary_header(n: int) -> str:
    return SUMMARY_HEADER.format(n=n)


class SummaryCache:
    """An LRU of summaries keyed by a hash of the segment; counts hits and misses."""

    def __init__(self, size: int = SUMMARY_CACHE_SIZE) -> None:
        self.size = size
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[str, str] = OrderedDict()

    def get(self, key: str) -> str | None:
        text = self._entries.get(key)
        if text is None:
            self.misses += 1
            return None
        self.hits += 1
        self._entries.move_to_end(key)
        return text

    def put(self, key: str, text: str) -> None:
        self._entries[key] = text
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries


def segment_key(messages: Sequence[Message], summarizer: str) -> str:
    """sha256 of the summarizer's key and the JSON of every message of the segment (every field in
    declared order, each block's kind first: the text pydantic wrote, so ids made from it stay)."""
    import hashlib  # (where a segment is summarized: OpenSSL's 6 ms, not at every start)

    h = hashlib.sha256(summarizer.encode())
    for m in messages:
        h.update(b"\x00")
        h.update(msgspec.json.encode(m))
    return h.hexdigest()


class Stretch(Struct, frozen=True):
    """A run of consecutive foldable groups: view[start:end]."""

    start: int
    end: int
    groups: int

    def __len__(self) -> int:
        return self.end - self.start


def stretches(groups: Sequence[Group], keep: int) -> list[Stretch]:
    """Maximal runs of foldable groups between group 0 and the last `keep` groups.

    Foldable: well formed (a complete exchange, or a message that is not an orphan tool result),
    holding no pinned message and no summary. Pinned groups, summaries and malformed groups split
    stretches.
    """
    region = groups[1 : max(1, len(groups) - keep)]
    out: list[Stretch] = []
    run: list[Group] = []
    for g in [*region, None]:
        if g is not None and g.complete and not g.pinned and not g.summary:
            run.append(g)
            continue
        if run:
            out.append(Stretch(start=run[0].start, end=run[-1].end, groups=len(run)))
            run = []
    return out


class AutoCompact(CarryingLayer):
    """Reactive, the last resort; off unless a summarizer is configured.

    Above `budget.trigger` (or forced), replaces the longest stretch of foldable groups that holds
    no pinned message (between group 0 and the last `budget.groups_kept` groups) with ONE user
    message (source SUMMARY, `is_summary`): `[Context auto-compacted — summary of N earlier
    messages]` followed by the summary. A fold is kept only if it lowers the estimate. While the
    estimate stays above `budget.target`, the next longest stretch is folded the same way, so a
    second run finds nothing left to do. Pinned messages are never folded; summaries are never
    folded again. Summaries are cached (LRU of 8) by a hash of the segment, so an unchanged prefix
    reuses its summary.
    """

    name = "auto_compact"
    label = "auto compact"
    reactive = True

    def __init__(self, summarizer: Summarizer | None = None, cache_size: int = SUMMARY_CACHE_SIZE) -> None:
        self.summarizer = summarizer
        self.cache = SummaryCache(cache_size)
        super().__init__()
        self._keys = _Keys()
        self._stretches = _Stretches()
        self._folded = _Folded()

    def summary_for(self, segment: Sequence[Message]) -> tuple[str, str]:
        """(cache key, summary text) for a segment, from the cache when it holds it."""
        assert self.summarizer is not None
        key = self._keys.key(tuple(segment), summarizer_key(self.summarizer))
        text = self.cache.get(key)
        if text is None:
            text = self.summarizer.summarize(segment)
            if cacheable(self.summarizer):
                self.cache.put(key, text)
        return key, text

    def quiet(self, view: Sequence[Message], budget: Budget, estimator: Sizer) -> bool:
        """Whether `apply` would leave `view` as it is, not forced (`Pipeline.quiet`)."""
        return quiet_below_trigger(view, budget, estimator, summarizer_missing=self.summarizer is None)

    def _apply(
        self,
        view: Sequence[Message],
        budget: Budget,
        estimator: Sizer,
        *,
        forced: bool = False,
        explain: bool = True,
    ) -> LayerResult:
        ready = pressed(self, view, budget, estimator, forced, summarizer_missing=self.summarizer is None)
        if isinstance(ready, LayerResult):
            return ready
        src, sizer, before, cause = ready.src, ready.sizer, ready.before, ready.cause
        unchanged = ready.unchanged
        target = budget.target
        if before <= target:
            return unchanged(f"{cause}, already at or under target {target:,}")
        groups = group_spans(src, budget.pins, sizer.known_front)
        keep = budget.groups_kept
        found = self._stretches.of(groups, keep)
        if not found:
            return unchanged(f"{cause}, but no foldable stretch outside group 0 and the last {keep} groups")
        running = before
        folds: dict[int, tuple[Stretch, Message]] = {}
        decisions: list[Decision] = []
        rejected: list[str] = []
        for st in sorted(found, key=lambda s: (-len(s), s.start)):
            if running <= target:
                break
            segment = src[st.start : st.end]
            key, text = self.summary_for(segment)
            summary = Message(
                id=f"auto-compact-{key[:16]}",
                role=Role.USER,
                blocks=(TextBlock(text=f"{summary_header(len(segment))}\n\n{text}"),),
                timestamp=segment[-1].timestamp,
                source=SUMMARY_SOURCE,
                is_summary=True,
            )
            folded = self._folded.total(segment, sizer)
            size = sizer.message(summary)
            if size >= folded:
                rejected.append(
                    f"a summary of {plural(len(segment), 'message')} ({size:,} >= {folded:,} tokens)"
                )
                continue
            running -= folded - size
            folds[st.start] = (st, summary)
            step = (
                f"{cause}; folded with {plural(len(segment) - 1, 'other message')} into summary {summary.id} "
                f"({folded:,} -> {size:,} tokens)"
            )
            if not explain:
                continue  # (the caller reads the view and the figures only: no decisions)
            decisions.extend(
                Decision(
                    message_id=m.id,
                    layer=self.name,
                    action=Action.SUMMARIZED,
                    reason=step,
                    tokens_before=sizer.message(m),
                    tokens_after=0,
                )
                for m in segment
            )
            decisions.append(
                Decision(
                    message_id=summary.id,
                    layer=self.name,
                    action=Action.SUMMARIZED,
                    reason=(
                        f"{cause}; summary of {plural(len(segment), 'earlier message')} "
                        f"({folded:,} -> {size:,} tokens)"
                    ),
                    tokens_before=folded,
                    tokens_after=size,
                )
            )
        if not folds:
            return unchanged(f"{cause}, but no summary would lower the estimate: {'; '.join(rejected)}")
        for g in groups[1 : max(1, len(groups) - keep)] if explain else ():  # (a copy: only to explain)
            if g.pinned:
                for m in g.messages(src):
                    if budget.pins(m):
                        decisions.append(kept_pinned(self.name, m, sizer))
        out: list[Message] = []
        i = 0
        folded_count = 0
        for start in sorted(folds):
            st, summary = folds[start]
            out.extend(src[i:start])
            out.append(summary)
            folded_count += len(st)
            i = st.end
        out.extend(src[i:])
        result = tuple(out)
        after = running
        sizer.seed_view(result, after)  # (what summing its messages gives: each fold was so summed)
        outcome = "at or under" if after <= target else "still over"
        return acted(
            self,
            result,
            before,
            after,
            reason=(
                f"{cause}; folded {plural(folded_count, 'message')} into "
                f"{'one summary' if len(folds) == 1 else f'{len(folds)} summaries'}, "
                f"estimate {after:,} {outcome} target {target:,}"
            ),
            decisions=decisions,
            forced=forced,
            summarized=folded_count,
        )


class _Keys:
    """`segment_key`, going on from the hash of the last stretch with the same first message:
    a replay folds, request after request, a stretch that is the one before and a few more."""

    def __init__(self) -> None:
        self._hashes: OrderedDict[tuple[int, str], tuple[tuple[Message, ...], Any]] = OrderedDict()

    def key(self, segment: tuple[Message, ...], summarizer: str) -> str:
        if not segment:
            return segment_key(segment, summarizer)
        at = (id(segment[0]), summarizer)
        hit = self._hashes.get(at)
        if hit is not None and len(segment) >= len(hit[0]) and segment[: len(hit[0])] == hit[0]:
            done, h = hit[0], hit[1].copy()
            self._hashes.move_to_end(at)
        else:
            import hashlib

            done, h = (), hashlib.sha256(summarizer.encode())
        for m in segment[len(done) :]:
            h.update(b"\x00")
            h.update(msgspec.json.encode(m))
        self._hashes[at] = (segment, h.copy())
        if len(self._hashes) > SUMMARY_CACHE_SIZE:
            self._hashes.popitem(last=False)
        return str(h.hexdigest())


class _Folded:
    """The sum of a stretch's sizes, going on from the last stretch with the same first message
    sized by the same sizer (the same integer sum, in the same order)."""

    def __init__(self) -> None:
        self._sizer: Sizer | None = None
        self._sums: OrderedDict[int, tuple[tuple[Message, ...], int]] = OrderedDict()

    def total(self, segment: tuple[Message, ...], sizer: Sizer) -> int:
        if sizer is not self._sizer:
            self._sizer, self._sums = sizer, OrderedDict()
        if not segment:
            return 0
        at = id(segment[0])
        hit = self._sums.get(at)
        if hit is not None and len(segment) >= len(hit[0]) and segment[: len(hit[0])] == hit[0]:
            done, total = hit
            self._sums.move_to_end(at)
        else:
            done, total = (), 0
        total += sum(map(sizer.message, segment[len(done) :]))
        self._sums[at] = (segment, total)
        if len(self._sums) > SUMMARY_CACHE_SIZE:
            self._sums.popitem(last=False)
        return total


def _foldable(g: Group) -> bool:
    return g.complete and not g.pinned and not g.summary


class _Stretches:
    """`stretches`, going on from the groups of the view before: the groups a view shares with
    the one before are the same objects (`group_spans`), so only the runs from the first group
    that differs are walked again."""

    def __init__(self) -> None:
        self._region: tuple[Group, ...] = ()
        self._runs: list[tuple[int, int]] = []
        """(first, past the last) index into the region of each run of foldable groups."""

    def of(self, groups: Sequence[Group], keep: int) -> list[Stretch]:
        region = tuple(groups[1 : max(1, len(groups) - keep)])
        old, runs = self._region, self._runs
        q = _common_prefix(old, region)
        # the runs that ended before q hold; one that reached q goes on from its first group
        n = bisect_left(runs, q, key=lambda r: r[1])
        kept = runs[:n]
        start: int | None = None
        at = q
        if n < len(runs) and runs[n][0] < q:
            start = runs[n][0]  # (a run that reached q: it goes on, or ends, at the groups after)
        for i in range(at, len(region)):
            if _foldable(region[i]):
                if start is None:
                    start = i
            elif start is not None:
                kept.append((start, i))
                start = None
        if start is not None:
            kept.append((start, len(region)))
        self._region, self._runs = region, kept
        return [Stretch(start=region[a].start, end=region[b - 1].end, groups=b - a) for a, b in kept]
