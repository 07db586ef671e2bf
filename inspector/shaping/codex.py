"""Codex's own layers: middle truncation of tool output, and its auto compaction.

Constants (docs/notes/opencode-codex.md §B3-§B4, `codex-rs/core/src/compact.rs`, `truncate.rs`):
- tool output is truncated when recorded into history, by the turn's truncation policy,
  `TruncationPolicy::Bytes(10_000)` by default: the middle goes, head and tail stay, with a
  `…N chars truncated…` marker (the preset's `tool_result_budget`, in bytes);
- auto compaction at `auto_compact_token_limit = context_window * 9 / 10` from 0.48 (the line,
  by version, is in `rules.RULES`); the new history is the most recent real user messages, newest first up to
  `COMPACT_USER_MESSAGE_MAX_TOKENS` = 20,000 (bytes / 4; the one that does not fit is truncated
  in the middle), in chronological order, then ONE user message holding `SUMMARY_PREFIX` and the
  summary; assistant messages, tool calls and tool outputs are dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec.structs import replace

from inspector.model import Block, Message, TextBlock, ToolResultBlock

from .auto_compact import SUMMARY_CACHE_SIZE, SummaryCache
from .base import (
    Action,
    Decision,
    LayerResult,
    ResultCutLayer,
    Sizer,
    acted,
    plural,
    pressed,
    quiet_below_trigger,
)
from .budget import CODEX_USER_MESSAGE_TOKENS, Budget
from .fold import MAX_SUMMARY_ATTEMPTS, Summaries, SummaryFailed, foldable, folded_decisions, summary_message
from .groups import group_spans
from .summarize import Summarizer

TOOL_OUTPUT_LIMIT_BYTES = 10_000
COMPACT_USER_MESSAGE_MAX_TOKENS = CODEX_USER_MESSAGE_TOKENS
SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its thinking "
    "process. You also have access to the state of the tools that were used by that language model. "
    "Use this to build on the work that has already been done and avoid duplicating work. Here is the "
    "summary produced by the other language model, use the information in this summary to assist with "
    "your own analysis:\n"
)
"""Codex `templates/compact/summary_prefix.md`."""


def approx_tokens(text: str) -> int:
    """Codex `approx_token_count`: UTF-8 bytes / 4, rounded up."""
    return -(-len(text.encode("utf-8")) // 4)


def _head(data: bytes, n: int) -> str:
    return data[: max(0, n)].decode("utf-8", errors="ignore")


def _tail(data: bytes, n: int) -> str:
    return data[len(data) - max(0, n) :].decode("utf-8", errors="ignore") if n > 0 else ""


def truncate_middle(text: str, limit_bytes: int) -> str:
    """`text` in at most `limit_bytes` UTF-8 bytes: its head and tail, the middle replaced by
    `…N chars truncated…` (N characters removed). Text within the limit is returned as is."""
    data = text.encode("utf-8")
    if len(data) <= limit_bytes:
        return text
    removed = len(text)
    while True:
        marker = f"\n…{removed} chars truncated…\n"
        room = limit_bytes - len(marker.encode("utf-8"))
        if room <= 0:
            return _head(data, limit_bytes)
        head = _head(data, room // 2)
        tail = _tail(data, room - room // 2)
        actual = len(text) - len(head) - len(tail)
        out = f"{head}\n…{actual} chars truncated…\n{tail}"
        if len(out.encode("utf-8")) <= limit_bytes:
            return out
        removed = actual + 1  # a longer count made the marker longer: try again with room for it


class MiddleTruncate(ResultCutLayer):
    """Always on. A tool result over `budget.tool_result_budget` UTF-8 bytes (10,000 in the codex
    preset) keeps its head and its tail and loses its middle, marked `…N chars truncated…`; the
    result fits in the limit, so a second run changes nothing. Pinned messages are never changed.
    """

    name = "middle_truncate"
    label = "tool output truncation (codex)"

    @staticmethod
    def cut(message: Message, limit: int) -> tuple[Message, int] | None:
        return _truncated(message, limit)

    def cut_reason(self, longest: int, limit: int) -> str:
        return f"tool output of {longest:,} bytes over {limit:,}: head and tail kept, the middle dropped"

    def idle_reason(self, limit: int) -> str:
        return f"no tool output over {limit:,} bytes"

    def acted_reason(self, messages: int, limit: int) -> str:
        return f"{plural(messages, 'message')} with tool output over {limit:,} bytes truncated in the middle"


def _truncated(m: Message, limit: int) -> tuple[Message, int] | None:
    """`m` (not pinned: the caller asks) with every tool result over `limit` UTF-8 bytes truncated
    in the middle, and the longest of them in bytes; or None."""
    blocks: list[Block] | None = None  # (copied once a block is truncated: most messages have none)
    longest = 0
    for j, b in enumerate(m.blocks):
        if isinstance(b, ToolResultBlock) and len(b.content) * 4 > limit:  # (no UTF-8 char is longer)
            size = len(b.content.encode("utf-8"))
            if size > limit:
                longest = max(longest, size)
                if blocks is None:
                    blocks = list(m.blocks)
                blocks[j] = replace(b, content=truncate_middle(b.content, limit))
    if blocks is None:
        return None
    return replace(m, blocks=tuple(blocks)), longest


class CodexCompact:
    """Codex's auto compaction: reactive, above `budget.trigger` (90% of the window) or forced;
    off without a summarizer.

    The new history: group 0 (the system prompt), whatever may not be folded (pinned messages,
    malformed groups, earlier summaries), the most recent real user messages (typed by a person:
    not tool output, not injected) chosen newest first while they fit in 20,000 tokens (bytes /
    4; the first that does not fit is cut in the middle to the room left, pinned ones are kept
    whole and count), in their order, and then ONE user message with Codex's summary prefix and the
    summary of everything else (assistant messages, tool calls and outputs, older user messages).
    Kept only if it lowers the estimate.
    """

    name = "codex_compact"
    label = "compaction (codex)"
    reactive = True

    def __init__(
        self,
        summarizer: Summarizer | None = None,
        *,
        user_tokens: int = COMPACT_USER_MESSAGE_MAX_TOKENS,
        attempts: int = MAX_SUMMARY_ATTEMPTS,
        cache_size: int = SUMMARY_CACHE_SIZE,
    ) -> None:
        self.summarizer = summarizer
        self.summaries = Summaries(summarizer, SummaryCache(cache_size), attempts)
        self.user_tokens = user_tokens

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
        groups = group_spans(src, budget.pins)
        candidates = {i for g in groups if foldable(g) for i in range(g.start, g.end)}
        keep: dict[int, Message] = {}
        truncated: set[int] = set()
        room = self.user_tokens
        for i in range(len(src) - 1, -1, -1):
            m = src[i]
            if not m.is_human:
                continue
            size = -(-sum(len(b.text.encode("utf-8")) for b in m.blocks if isinstance(b, TextBlock)) // 4)
            if budget.pins(m) or i not in candidates:
                room = max(0, room - size)
                continue
            if room <= 0:
                break
            if size <= room:
                keep[i] = m
                room -= size
                continue
            cut = _cut_message(m, room)
            if cut is not None and sizer.message(cut) < sizer.message(m):
                keep[i] = cut
                truncated.add(i)
            break
        fold = sorted(candidates - set(keep))
        if not fold:
            return unchanged(f"{cause}, but nothing to fold besides the recent user messages")
        segment = [src[i] for i in fold]
        try:
            key, text = self.summaries.summarize(segment)
        except SummaryFailed as exc:
            return unchanged(f"{cause}; compaction failed: {exc}")
        summary = summary_message(key, SUMMARY_PREFIX, text, segment, "codex compaction")
        fold_set = set(fold)
        result = (*(keep.get(i, m) for i, m in enumerate(src) if i not in fold_set), summary)
        after = sizer.view(result)
        if after >= before:
            return unchanged(f"{cause}, but the compacted history would not lower the estimate")
        decisions = folded_decisions(self.name, segment, summary, cause, sizer)
        for i in sorted(truncated):
            decisions.append(
                Decision(
                    message_id=src[i].id,
                    layer=self.name,
                    action=Action.TRUNCATED,
                    reason=(
                        f"{cause}; the oldest user message kept, cut in the middle to fit the "
                        f"{self.user_tokens:,}-token budget for recent user messages"
                    ),
                    tokens_before=sizer.message(src[i]),
                    tokens_after=sizer.message(keep[i]),
                )
            )
        for i in sorted(set(keep) - truncated):
            decisions.append(
                Decision(
                    message_id=src[i].id,
                    layer=self.name,
                    action=Action.KEPT_RECENT,
                    reason=f"a recent user message, within {self.user_tokens:,} tokens (bytes/4)",
                    tokens_before=sizer.message(src[i]),
                    tokens_after=sizer.message(src[i]),
                )
            )
        return acted(
            self,
            result,
            before,
            after,
            reason=(
                f"{cause}; kept {plural(len(keep), 'recent user message')}, folded "
                f"{plural(len(segment), 'message')} into one summary, estimate {after:,}"
            ),
            decisions=decisions,
            forced=forced,
            truncated=len(truncated),
            summarized=len(segment),
        )


def _cut_message(m: Message, tokens: int) -> Message | None:
    """`m` with its text cut in the middle to about `tokens` (bytes / 4), or None if nothing is left."""
    texts = [b for b in m.blocks if isinstance(b, TextBlock)]
    total = sum(len(b.text.encode("utf-8")) for b in texts)
    if not texts or tokens <= 0 or total == 0:
        return None
    budget = tokens * 4
    blocks = []
    for b in m.blocks:
        if isinstance(b, TextBlock):
            share = budget * len(b.text.encode("utf-8")) // total
            b = replace(b, text=truncate_middle(b.text, share))
        blocks.append(b)
    return replace(m, blocks=tuple(blocks))
