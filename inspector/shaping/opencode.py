"""opencode's own layers: prune (tool-output clearing) and its summary compaction on overflow.

Constants (docs/notes/opencode-codex.md §A1-§A4, `packages/opencode/src/session/compaction.ts` and
`overflow.ts`; docs/seeds/002):
- prune: `PRUNE_MINIMUM` = 20,000, `PRUNE_PROTECT` = 40,000, `PRUNE_PROTECTED_TOOLS = ["skill"]`;
  the walk skips the last 2 user turns; sizes are `Token.estimate` (characters / 4, rounded);
  a pruned output is sent as `[Old tool result content cleared]`;
- overflow: `tokens >= usable`, `usable = context - reserved`, `reserved = min(COMPACTION_BUFFER
  = 20,000, max output)` (the preset's budget: trigger = window - 20,000);
- compaction keeps a tail of recent turns within `preserve_recent_tokens = clamp(usable * 0.25,
  MIN_PRESERVE_RECENT_TOKENS = 2_000, MAX_PRESERVE_RECENT_TOKENS = 15_000)`, at most
  `DEFAULT_TAIL_TURNS = 2` turns, and summarizes the rest ("What did we do so far?").
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence

from msgspec.structs import replace

from inspector.model import Message, ReasoningBlock, Role, TextBlock, ToolCallBlock, ToolResultBlock

from .auto_compact import SUMMARY_CACHE_SIZE, SummaryCache
from .base import (
    SCAN_CACHE,
    Action,
    Decision,
    LayerResult,
    Sizer,
    TokenMemo,
    ViewScan,
    acted,
    kept_pinned,
    memo,
    no_change,
    plural,
    pressed,
    quiet_below_trigger,
    starts_with,
)
from .budget import OPENCODE_PRUNE_MINIMUM, Budget
from .fold import MAX_SUMMARY_ATTEMPTS, Summaries, SummaryFailed, foldable, folded_decisions, summary_message
from .groups import Group, group_spans
from .summarize import Summarizer
from .tool_output_clear import CLEARED_CONTENT
from .tools import canonical_set, canonical_tool

PRUNE_MINIMUM = OPENCODE_PRUNE_MINIMUM
PRUNE_PROTECT = 40_000
PRUNE_PROTECTED_TOOLS: tuple[str, ...] = ("skill",)
PRUNE_SKIPPED_TURNS = 2
MIN_PRESERVE_RECENT_TOKENS = 2_000
MAX_PRESERVE_RECENT_TOKENS = 15_000
PRESERVE_SHARE = 0.25
DEFAULT_TAIL_TURNS = 2
SUMMARY_PREFIX = "What did we do so far?\n\n"
"""opencode sends its compaction request as the user text "What did we do so far?"; the summary answers it."""


def token_estimate(text: str) -> int:
    """opencode `Token.estimate`: `Math.max(0, Math.round(length / 4))`."""
    return (len(text) + 2) // 4


def message_estimate(message: Message) -> int:
    """`Token.estimate` over everything a message holds (for tail selection)."""
    total = 0
    for b in message.blocks:
        if isinstance(b, ToolResultBlock):
            total += token_estimate(b.content)
        elif isinstance(b, TextBlock | ReasoningBlock):
            total += token_estimate(b.text)
        elif isinstance(b, ToolCallBlock):
            args = (
                b.arguments if isinstance(b.arguments, str) else json.dumps(b.arguments, ensure_ascii=False)
            )
            total += token_estimate(b.name + args)
    return total


_PruneFacts = tuple[bool, bool, tuple[tuple[int, str, str | None, int, bool], ...]]
"""What `OpencodePrune`'s walk reads of a message: whether it starts a user turn, whether it is a
compaction summary, and its tool results that are not errors, last block first, each as (block
index, call id, tool name, `token_estimate` of its output, whether that output is the
placeholder)."""


def _prune_facts(m: Message) -> _PruneFacts:
    results = tuple(
        (j, b.call_id, b.tool_name, token_estimate(b.content), b.content == CLEARED_CONTENT)
        for j in range(len(m.blocks) - 1, -1, -1)
        if isinstance(b := m.blocks[j], ToolResultBlock) and not b.is_error
    )
    return starts_turn(m), m.is_summary, results


def starts_turn(message: Message) -> bool:
    """A user turn begins at a user message that is not tool results and not injected."""
    return message.role is Role.USER and not message.is_tool_result and not message.is_meta


class OpencodePrune:
    """Always on (opencode runs it after each turn), no trigger line.

    Walks the view newest to oldest. Everything from the second most recent user turn on is
    skipped (`turns < 2`); the walk stops at a compaction summary or at the first output that was
    pruned before (everything older was pruned then). Each tool result met (not an error, not of a
    protected tool such as `skill`, not pinned) adds its `Token.estimate` (characters / 4) to a
    running total; once that total passes 40,000 (`PRUNE_PROTECT`) the result is marked. Only if
    the marked outputs add up to more than 20,000 (`pruned > PRUNE_MINIMUM`) are they replaced with
    `[Old tool result content cleared]`, where that is shorter. Calls, result messages and ids stay.
    """

    name = "opencode_prune"
    label = "prune (opencode)"
    reactive = False

    def __init__(
        self,
        minimum: int = PRUNE_MINIMUM,
        protect: int = PRUNE_PROTECT,
        protected_tools: Iterable[str] = PRUNE_PROTECTED_TOOLS,
    ) -> None:
        self.minimum = minimum
        self.protect = protect
        self.protected = canonical_set(protected_tools)
        self._facts: ViewScan[_PruneFacts] = ViewScan(_prune_facts)
        """What the walk reads of each message (`of`: kept across requests, so a ledger's messages
        are looked at once, not at every request whose ledger holds them)."""
        self._copies: dict[tuple[int, tuple[int, ...]], tuple[Message, Message]] = {}
        """(id(message), its pruned blocks) -> the message and its pruned copy: the same copy at
        every request that prunes the same outputs, so its size is known from the request before."""
        self._names_view: tuple[Message, ...] = ()
        self._names: dict[str, str] = {}
        """The tool call id -> tool name map of `_names_view` (extended where a view extends it)."""

    def _names_of(self, src: tuple[Message, ...], sizer: TokenMemo) -> dict[str, str]:
        """`{c.id: c.name for m in src for c in m.tool_calls}`, carried on from the view before."""
        last = self._names_view
        if last and starts_with(src, last, sizer):
            names, start = self._names, len(last)
        else:
            names, start = {}, 0
        for m in src[start:]:
            for c in m.tool_calls:
                names[c.id] = c.name
        self._names_view, self._names = src, names
        return names

    def _pruned(self, m: Message, js: tuple[int, ...]) -> Message:
        """`m` with the outputs of blocks `js` replaced by the placeholder (one copy per set)."""
        key = (id(m), js)
        hit = self._copies.get(key)
        if hit is not None and hit[0] is m:
            return hit[1]
        blocks = list(m.blocks)
        for j in js:
            b = blocks[j]
            assert isinstance(b, ToolResultBlock)
            blocks[j] = replace(b, content=CLEARED_CONTENT)
        new = replace(m, blocks=tuple(blocks))
        if len(self._copies) >= SCAN_CACHE:
            self._copies.clear()
        self._copies[key] = (m, new)
        return new

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
        names = self._names_of(src, sizer)
        protected = self.protected
        pins = budget.pins
        facts_of = self._facts.of
        turns = 0
        total = 0
        pruned = 0
        marked: list[tuple[int, int, int, int]] = []  # (message, block, estimate, running total)
        stop = ""
        for i in range(len(src) - 1, -1, -1):
            m = src[i]
            facts = facts_of(m)
            assert facts is not None  # (`_prune_facts` answers for every message)
            turn, summary, results = facts
            if turn:
                turns += 1
            if turns < PRUNE_SKIPPED_TURNS:
                continue
            if summary:
                stop = ", stopped at a compaction summary"
                break
            if not results or pins(m):
                continue
            done = False
            for j, call_id, tool_name, est, cleared in results:
                if canonical_tool(names.get(call_id) or tool_name or "") in protected:
                    continue
                if cleared:
                    stop = ", stopped at output pruned before"
                    done = True
                    break
                total += est
                if total > self.protect:
                    pruned += est
                    marked.append((i, j, est, total))
            if done:
                break
        walked = (
            f"{total:,} tokens of tool output (chars/4) before the last {PRUNE_SKIPPED_TURNS} user turns{stop}; "
            f"{pruned:,} beyond the newest {self.protect:,}"
        )
        if pruned <= self.minimum:
            return no_change(
                self,
                src,
                before,
                f"{walked}, not more than the {self.minimum:,} minimum: nothing pruned",
                forced,
            )
        by_message: dict[int, list[tuple[int, int, int, int]]] = {}
        for t in marked:
            b = src[t[0]].blocks[t[1]]
            assert isinstance(b, ToolResultBlock)
            if len(CLEARED_CONTENT) < len(b.content):
                by_message.setdefault(t[0], []).append(t)
        changed: dict[int, Message] = {}
        for i, items in by_message.items():
            new = self._pruned(src[i], tuple(t[1] for t in items))
            if sizer.message(new) <= sizer.message(src[i]):
                changed[i] = new
        if not changed:
            return no_change(
                self, src, before, f"{walked}, but no marked output is longer than the placeholder", forced
            )
        decisions = [
            Decision(
                message_id=src[i].id,
                layer=self.name,
                action=Action.CLEARED,
                reason=(
                    f"{walked}, over the {self.minimum:,} minimum; this output "
                    f"({', '.join(f'{t[2]:,}' for t in by_message[i])} tokens) lies past the newest "
                    f"{self.protect:,} (running total {max(t[3] for t in by_message[i]):,})"
                ),
                tokens_before=sizer.message(src[i]),
                tokens_after=sizer.message(new),
            )
            for i, new in sorted(changed.items())
        ]
        result, after = sizer.replaced(src, changed)
        return acted(
            self,
            result,
            before,
            after,
            reason=f"{walked}, over the {self.minimum:,} minimum: pruned {plural(len(changed), 'message')} of tool output",
            decisions=decisions,
            forced=forced,
            cleared=len(changed),
        )


def tail_start(groups: Sequence[Group], view: Sequence[Message], preserve: int, max_turns: int) -> int:
    """The index of the first group of the retained tail (len(groups) when nothing is kept).

    Walks user turns newest to oldest, keeping whole turns while they fit in `preserve` tokens
    (`Token.estimate`), at most `max_turns`; a turn that does not fit keeps its largest suffix of
    whole groups that fits, and the walk stops there.
    """
    if max_turns <= 0 or preserve <= 0:
        return len(groups)
    starts = [g.index for g in groups if g.index > 0 and starts_turn(view[g.start])]
    sizes = [sum(message_estimate(m) for m in g.messages(view)) for g in groups]
    start = len(groups)
    kept = 0
    bounds = [*starts, len(groups)]
    for t in range(len(starts) - 1, -1, -1):
        if len(starts) - t > max_turns:
            break
        lo, hi = bounds[t], bounds[t + 1]
        size = sum(sizes[lo:hi])
        if kept + size <= preserve:
            kept += size
            start = lo
            continue
        for gi in range(hi - 1, lo - 1, -1):
            if kept + sizes[gi] > preserve:
                break
            kept += sizes[gi]
            start = gi
        break
    return start


class OpencodeCompact:
    """opencode's compaction on overflow: reactive, above `budget.trigger` (usable = window -
    reserved) or forced; off without a summarizer.

    Keeps a tail of the most recent user turns (at most 2, within `preserve_recent_tokens` =
    clamp(usable * 0.25, 2,000, 15,000) by characters/4; a turn that does not fit keeps its
    largest suffix of whole groups that fits) and folds every foldable group before it (not group
    0, complete, no pinned message, no earlier summary) into ONE message answering "What did we do
    so far?" with the summary, placed right before the tail. Kept only if it lowers the estimate.
    """

    name = "opencode_compact"
    label = "compaction (opencode)"
    reactive = True

    def __init__(
        self,
        summarizer: Summarizer | None = None,
        *,
        tail_turns: int = DEFAULT_TAIL_TURNS,
        attempts: int = MAX_SUMMARY_ATTEMPTS,
        cache_size: int = SUMMARY_CACHE_SIZE,
    ) -> None:
        self.summarizer = summarizer
        self.summaries = Summaries(summarizer, SummaryCache(cache_size), attempts)
        self.tail_turns = tail_turns

    def quiet(self, view: Sequence[Message], budget: Budget, estimator: Sizer) -> bool:
        """Whether `apply` would leave `view` as it is, not forced (`Pipeline.quiet`)."""
        return quiet_below_trigger(view, budget, estimator, summarizer_missing=self.summarizer is None)

    def apply(
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
        preserve = min(
            MAX_PRESERVE_RECENT_TOKENS,
            max(MIN_PRESERVE_RECENT_TOKENS, math.floor(budget.trigger * PRESERVE_SHARE)),
        )
        groups = group_spans(src, budget.pins)
        start = tail_start(groups, src, preserve, self.tail_turns)
        fold = [i for g in groups[:start] if foldable(g) for i in range(g.start, g.end)]
        if not fold:
            return unchanged(f"{cause}, but nothing to fold before the retained tail")
        segment = [src[i] for i in fold]
        try:
            key, text = self.summaries.summarize(segment)
        except SummaryFailed as exc:
            return unchanged(f"{cause}; compaction failed: {exc}")
        summary = summary_message(key, SUMMARY_PREFIX, text, segment, "opencode compaction")
        folded_tokens = sum(sizer.message(m) for m in segment)
        if sizer.message(summary) >= folded_tokens:
            return unchanged(
                f"{cause}, but a summary of {plural(len(segment), 'message')} would not lower the estimate"
            )
        fold_set = set(fold)
        out: list[Message] = []
        for i, m in enumerate(src):
            if i == fold[-1]:
                out.append(summary)
            elif i not in fold_set:
                out.append(m)
        result = tuple(out)
        after = sizer.view(result)
        decisions = folded_decisions(self.name, segment, summary, cause, sizer)
        tail = groups[start:] if start < len(groups) else []
        for g in tail:
            for m in g.messages(src):
                decisions.append(
                    Decision(
                        message_id=m.id,
                        layer=self.name,
                        action=Action.KEPT_RECENT,
                        reason=f"in the retained tail (recent turns within {preserve:,} tokens, chars/4)",
                        tokens_before=sizer.message(m),
                        tokens_after=sizer.message(m),
                    )
                )
        for g in groups[:start]:
            if g.pinned:
                decisions.extend(kept_pinned(self.name, m, sizer) for m in g.messages(src) if budget.pins(m))
        return acted(
            self,
            result,
            before,
            after,
            reason=(
                f"{cause}; folded {plural(len(segment), 'message')} into one summary, kept a tail of "
                f"{plural(sum(len(g) for g in tail), 'message')}, estimate {after:,}"
            ),
            decisions=decisions,
            forced=forced,
            summarized=len(segment),
        )
