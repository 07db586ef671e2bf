"""Claude Code's own layers: large-result preview, microcompact, and its full auto compaction.

Constants (docs/notes/claude-code-transcripts.md §2.4, §4, §7.2; docs/seeds/001):
- tool results over 50,000 characters are persisted to `tool-results/<id>.txt` and the model is
  sent a `<persisted-output>` wrapper with a 2 KB preview (2.1.51 and later; 100,000 before);
- microcompact clears old results of Read, Bash, Grep, Glob, WebSearch, WebFetch, Edit and Write,
  keeping the 5 most recent (`keepRecent = 5`), replacing them with
  `[Old tool result content cleared]`; time-based, it fires when the gap since the last assistant
  message exceeds the prompt-cache lifetime (60 minutes for the 1-hour cache);
- auto compact replaces the conversation with one summary; after it, up to 5 recently read files
  are restored (`POST_COMPACT_MAX_FILES_TO_RESTORE = 5`, `POST_COMPACT_MAX_TOKENS_PER_FILE =
  5_000`, `POST_COMPACT_TOKEN_BUDGET = 50_000`); 3 consecutive failures open the circuit breaker
  (`MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES = 3`).
The thresholds themselves (the auto-compact, blocking and warning lines, and which microcompact the
version had) are in the table of rules by version (`inspector/harness_rules.py`), read into the policy's budget.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from functools import lru_cache

from msgspec.structs import replace

from inspector.model import Block, Message, Role, Source, SourceKind, TextBlock, ToolResultBlock

from .auto_compact import SUMMARY_CACHE_SIZE, SummaryCache
from .base import (
    Action,
    Decision,
    LayerResult,
    ResultCutLayer,
    Sizer,
    TokenMemo,
    acted,
    memo,
    no_change,
    plural,
    pressed,
    pressure,
    quiet_below_trigger,
    under_trigger,
)
from .budget import Budget
from .fold import MAX_SUMMARY_ATTEMPTS, Summaries, SummaryFailed, foldable, folded_decisions, summary_message
from .groups import group_spans
from .summarize import Summarizer, call_arguments
from .tool_output_clear import CLEARED_CONTENT, ToolOutputClear
from .tools import canonical_tool

CLAUDE_CODE_TOOLS: tuple[str, ...] = (
    "Read",
    "Bash",
    "Grep",
    "Glob",
    "WebSearch",
    "WebFetch",
    "Edit",
    "Write",
)
"""Claude Code's `COMPACTABLE_TOOLS` (microcompact)."""
PREVIEW_THRESHOLD = 50_000
"""Characters above which a tool result is persisted and previewed (2.1.51+)."""
PREVIEW_CHARS = 2_000
"""The preview: the first 2 KB."""
PERSISTED_OPEN = "<persisted-output>"
PERSISTED_CLOSE = "</persisted-output>"
CACHE_LIFETIME_MINUTES = 60.0
"""Time-based microcompact's gap: the 1-hour prompt cache has expired, so clearing costs nothing extra."""
RESTORE_FILES = 5
RESTORE_FILE_TOKENS = 5_000
RESTORE_BUDGET = 50_000
SUMMARY_PREFIX = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
)
"""How Claude Code's compact summary message begins."""


def _kb(chars: str) -> str:
    return f"{max(1, round(len(chars.encode('utf-8')) / 1024))}KB"


def persisted_preview(content: str, call_id: str) -> str:
    """The `<persisted-output>` wrapper Claude Code sends instead of a large result.

    The preview is the first 2,000 characters, cut back to the last line break when one falls in
    its second half.
    """
    head = content[:PREVIEW_CHARS]
    cut = head.rfind("\n")
    if cut >= PREVIEW_CHARS // 2:
        head = head[:cut]
    return (
        f"{PERSISTED_OPEN}\nOutput too large ({_kb(content)}). Full output saved to: "
        f"tool-results/{call_id}.txt\n\nPreview (first 2KB):\n{head}\n...\n{PERSISTED_CLOSE}"
    )


class LargeResultPreview(ResultCutLayer):
    """Always on. A tool result longer than `budget.tool_result_budget` characters (50,000 in the
    claude-code preset) is replaced by Claude Code's `<persisted-output>` wrapper: the size, where
    the full output was saved, and a 2 KB preview. Pinned messages and results that already are a
    wrapper are left alone, so a second run changes nothing.
    """

    name = "large_result_preview"
    label = "large result preview"

    @staticmethod
    def cut(message: Message, limit: int) -> tuple[Message, int] | None:
        return _previewed(message, limit)

    def cut_reason(self, longest: int, limit: int) -> str:
        return (
            f"tool result of {longest:,} chars over {limit:,}: persisted to a file, "
            f"the model is sent a {PREVIEW_CHARS:,}-char preview"
        )

    def idle_reason(self, limit: int) -> str:
        return f"no tool result over {limit:,} chars"

    def acted_reason(self, messages: int, limit: int) -> str:
        return f"{plural(messages, 'message')} with a tool result over {limit:,} chars previewed"


def _previewed(m: Message, limit: int) -> tuple[Message, int] | None:
    """`m` (not pinned: the caller asks) with every result over `limit` chars (not yet a wrapper)
    previewed, and the longest; or None."""
    blocks: list[Block] | None = None  # (copied once a block is previewed: most messages have none)
    longest = 0
    for j, b in enumerate(m.blocks):
        if (
            isinstance(b, ToolResultBlock)
            and len(b.content) > limit
            and not b.content.startswith(PERSISTED_OPEN)
        ):
            longest = max(longest, len(b.content))
            if blocks is None:
                blocks = list(m.blocks)
            blocks[j] = replace(b, content=persisted_preview(b.content, b.call_id))
    if blocks is None:
        return None
    return replace(m, blocks=tuple(blocks)), longest


def _when(ts: str | None) -> datetime | None:
    if not ts:
        return None
    return _parsed_time(ts)


@lru_cache(maxsize=4096)
def _parsed_time(ts: str) -> datetime | None:
    try:
        t = datetime.fromisoformat(ts)
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def idle_minutes(view: Sequence[Message]) -> float | None:
    """Minutes between the last assistant message and the newest message after it (the request
    being made), from their timestamps; None when either is missing."""
    last: datetime | None = None
    at = -1
    for i in range(len(view) - 1, -1, -1):
        if view[i].role is Role.ASSISTANT:
            last = _when(view[i].timestamp)
            at = i
            break
    if last is None:
        return None
    now = max((t for m in view[at + 1 :] if (t := _when(m.timestamp)) is not None), default=None)
    if now is None:
        return None
    gap = (now - last).total_seconds() / 60.0
    return gap if math.isfinite(gap) else None


class Microcompact(ToolOutputClear):
    """Claude Code's microcompact: fires under pressure (the estimate exceeds `budget.trigger`, or
    forced) and, below it, when the gap since the last assistant message exceeds the cache
    lifetime (`idle_gap_minutes`, 60; None turns the time trigger off): the server's prompt cache
    has expired, so clearing costs nothing extra.

    Then, like tool output clear, it keeps the `budget.results_kept` (5) most recent results of
    compactable tools (Claude Code: Read, Bash, Grep, Glob, WebSearch, WebFetch, Edit, Write) and
    replaces every older one with `[Old tool result content cleared]` where that is shorter. Calls,
    result messages and ids survive; pinned messages are never touched; cleared results are
    skipped, so a second run changes nothing.
    """

    name = "microcompact"
    label = "microcompact"
    reactive = False
    """Not purely reactive: the idle trigger fires below the trigger line."""

    def __init__(
        self,
        compactable: Iterable[str] = CLAUDE_CODE_TOOLS,
        idle_gap_minutes: float | None = CACHE_LIFETIME_MINUTES,
    ) -> None:
        super().__init__(compactable)
        self.idle_gap_minutes = idle_gap_minutes

    def quiet(self, view: Sequence[Message], budget: Budget, estimator: Sizer) -> bool:
        """Whether `apply` would leave `view` as it is, not forced (`Pipeline.quiet`): no
        microcompact in this version, under the warning line (legacy), or at or under the trigger
        and not idle past the cache lifetime."""
        mode = budget.clear_mode
        if mode == "none":
            return True
        src = tuple(view)
        before = memo(estimator).view(src)
        if mode == "legacy":
            return before < (budget.warning if budget.warning is not None else budget.trigger)
        if before > budget.trigger:
            return False
        limit = self.idle_gap_minutes
        if limit is None:
            return True
        gap = idle_minutes(src)
        return gap is None or gap <= limit

    def apply(
        self,
        view: Sequence[Message],
        budget: Budget,
        estimator: Sizer,
        *,
        forced: bool = False,
        explain: bool = True,
    ) -> LayerResult:
        sizer: TokenMemo = memo(estimator)
        src = tuple(view)
        before = sizer.view(src)
        mode = budget.clear_mode
        if mode == "none":
            return no_change(self, src, before, "this Claude Code version has no microcompact", forced)
        if mode == "legacy":
            return self._legacy(src, budget, sizer, before, forced=forced, explain=explain)
        if forced or before > budget.trigger:
            return super().apply(src, budget, sizer, forced=forced, explain=explain)
        gap = idle_minutes(src)
        limit = self.idle_gap_minutes
        if limit is None or gap is None or gap <= limit:
            why = under_trigger(before, budget)
            if limit is not None and gap is not None:
                why += f"; {gap:,.0f} min since the last assistant message, within the {limit:g}-min cache lifetime"
            return no_change(self, src, before, why, forced)
        result = super().apply(src, budget, sizer, forced=True, explain=explain)
        old = pressure(before, budget, True)
        new = f"idle {gap:,.0f} min since the last assistant message > {limit:g}-min cache lifetime"
        return replace(
            result,
            reason=result.reason.replace(old, new, 1),
            decisions=tuple(
                replace(d, reason=d.reason.replace(old, new, 1)) for d in result.decisions
            ),
            forced=False,
        )


    def _legacy(
        self, src: tuple[Message, ...], budget: Budget, sizer: TokenMemo, before: int, *, forced: bool, explain: bool
    ) -> LayerResult:
        """The client microcompact of Claude Code ~1.0.68-2.1.68 (`harness_rules.Microcompact` "legacy"): at
        or over the warning line, keep the `results_kept` (3) most recent compactable results and
        clear the older ones, only if that frees `clear_min_saving` (20,000) tokens. (Its other
        condition, that those results hold over 40,000 tokens, is implied by the saving.)"""
        line = budget.warning if budget.warning is not None else budget.trigger
        if not forced and before < line:
            return no_change(self, src, before, f"{before:,} under the warning line {line:,}", forced)
        result = super().apply(src, budget, sizer, forced=True, explain=explain)
        saved = result.tokens_before - result.tokens_after
        if result.fired and not forced and saved < budget.clear_min_saving:
            return no_change(
                self,
                src,
                before,
                f"{before:,} at or over the warning line {line:,}, but clearing would free {saved:,} "
                f"tokens, under {budget.clear_min_saving:,}",
                forced,
            )
        if forced:
            return result
        old = pressure(before, budget, True)
        new = f"estimate {before:,} at or over the warning line {line:,}"
        return replace(
            result,
            reason=result.reason.replace(old, new, 1),
            decisions=tuple(
                replace(d, reason=d.reason.replace(old, new, 1)) for d in result.decisions
            ),
            forced=False,
        )


def _cut_to(text: str, tokens: int, sizer: Sizer) -> str:
    """`text` cut (from the end) so the sizer gives it at most `tokens`."""
    size = sizer.text(text)
    if size <= tokens:
        return text
    n = max(0, int(len(text) * tokens / max(size, 1)))
    marker = f"\n[... truncated to {tokens:,} tokens]"
    while n > 0 and sizer.text(text[:n] + marker) > tokens:
        n = int(n * 0.95)
    return text[:n] + marker


class FullCompact:
    """Claude Code's auto compaction: reactive, above `budget.trigger` (the version's line) or forced.

    Replaces the whole conversation with ONE summary message (`This session is being continued
    from a previous conversation that ran out of context. ...` then the summary): every foldable
    group after group 0 (complete, no pinned message, no earlier summary); pinned messages and
    malformed groups stay. After the summary it restores up to 5 recently read files (the latest
    result of each Read in the folded part whose path is not read again in what stays), each cut
    to 5,000 tokens, 50,000 in all, as long as the result stays smaller than what was folded.
    Up to 3 summary attempts: a summarizer that raises or answers nothing 3 times in a row opens
    the circuit breaker and nothing changes. When the estimate is still at or above the blocking
    limit (`budget.blocking`) afterwards, the reason says Claude Code would refuse to send.
    """

    name = "full_compact"
    label = "auto compact (full)"
    reactive = True

    def __init__(
        self,
        summarizer: Summarizer | None = None,
        *,
        restore_files: int = RESTORE_FILES,
        restore_file_tokens: int = RESTORE_FILE_TOKENS,
        restore_budget: int = RESTORE_BUDGET,
        attempts: int = MAX_SUMMARY_ATTEMPTS,
        cache_size: int = SUMMARY_CACHE_SIZE,
    ) -> None:
        self.summarizer = summarizer
        self.summaries = Summaries(summarizer, SummaryCache(cache_size), attempts)
        self.restore_files = restore_files
        self.restore_file_tokens = restore_file_tokens
        self.restore_budget = restore_budget

    @property
    def cache(self) -> SummaryCache:
        return self.summaries.cache

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
        fold = [i for g in group_spans(src, budget.pins) if foldable(g) for i in range(g.start, g.end)]
        if not fold:
            return unchanged(
                f"{cause}, but nothing to fold (only the system prompt, pinned messages and summaries)"
            )
        segment = [src[i] for i in fold]
        try:
            key, text = self.summaries.summarize(segment)
        except SummaryFailed as exc:
            return unchanged(f"{cause}; circuit breaker open: {exc}, auto compact stops trying")
        summary = summary_message(key, SUMMARY_PREFIX, text, segment, "auto compact")
        folded_tokens = sum(sizer.message(m) for m in segment)
        size = sizer.message(summary)
        if size >= folded_tokens:
            return unchanged(
                f"{cause}, but a summary of {plural(len(segment), 'message')} would not lower the estimate "
                f"({size:,} >= {folded_tokens:,} tokens)"
            )
        folded_ids = {m.id for m in segment}
        kept = [m for m in src if m.id not in folded_ids]
        restored = self._restore(key, segment, kept, sizer, room=folded_tokens - size - 1)
        last = fold[-1]
        out: list[Message] = []
        for i, m in enumerate(src):
            if i == last:
                out.append(summary)
                out.extend(r for r, _, _ in restored)
            elif m.id not in folded_ids:
                out.append(m)
        result = tuple(out)
        after = sizer.view(result)
        decisions = folded_decisions(self.name, segment, summary, cause, sizer)
        for r, path, cut in restored:
            decisions.append(
                Decision(
                    message_id=r.id,
                    layer=self.name,
                    action=Action.SUMMARIZED,
                    reason=(
                        f"post-compaction file restore: {path}, its latest read"
                        + (f", cut to {self.restore_file_tokens:,} tokens" if cut else "")
                    ),
                    tokens_before=0,
                    tokens_after=sizer.message(r),
                )
            )
        reason = (
            f"{cause}; folded {plural(len(segment), 'message')} into one summary"
            + (f" and restored {plural(len(restored), 'recently read file')}" if restored else "")
            + f", estimate {after:,}"
        )
        if budget.blocking is not None and after >= budget.blocking:
            reason += f", still at or above the blocking limit {budget.blocking:,}: Claude Code would refuse to send"
        return acted(
            self,
            result,
            before,
            after,
            reason=reason,
            decisions=decisions,
            forced=forced,
            summarized=len(segment),
        )

    def _restore(
        self, key: str, segment: Sequence[Message], kept: Sequence[Message], sizer: Sizer, room: int
    ) -> list[tuple[Message, str, bool]]:
        """(message, path, cut) for each restored file, most recently read first."""
        if self.restore_files <= 0 or room <= 0:
            return []
        still_read = {p for m in kept for p in _read_paths(m)}
        paths: dict[str, str] = {}  # call id -> path, for Reads in the folded part
        for m in segment:
            for c in m.tool_calls:
                if canonical_tool(c.name) == "file_read":
                    path = _path_of(c.arguments)
                    if path:
                        paths[c.id] = path
        latest: dict[str, str] = {}  # path -> content of its latest read (insertion = read order)
        for m in segment:
            for b in m.blocks:
                if not isinstance(b, ToolResultBlock) or b.call_id not in paths or b.is_error:
                    continue
                if b.content == CLEARED_CONTENT or b.content.startswith(PERSISTED_OPEN):
                    continue
                path = paths[b.call_id]
                latest.pop(path, None)
                latest[path] = b.content
        out: list[tuple[Message, str, bool]] = []
        spent = 0
        for path in reversed(latest):
            if len(out) >= self.restore_files:
                break
            if path in still_read:
                continue
            cut = sizer.text(latest[path]) > self.restore_file_tokens
            content = _cut_to(latest[path], self.restore_file_tokens, sizer) if cut else latest[path]
            msg = Message(
                id=f"restored-{key[:12]}-{len(out) + 1}",
                role=Role.USER,
                blocks=(TextBlock(text=f"[File restored after compaction: {path}]\n{content}"),),
                timestamp=segment[-1].timestamp if segment else None,
                source=Source.of(SourceKind.SUMMARY, name="post-compaction file restore"),
                is_meta=True,
                is_summary=True,
            )
            size = sizer.message(msg)
            if spent + size > self.restore_budget or spent + size > room:
                continue
            spent += size
            out.append((msg, path, cut))
        return out


def _path_of(arguments: object) -> str:
    args = call_arguments(arguments) if isinstance(arguments, dict | str) else {}
    for k in ("file_path", "path", "filename", "file"):
        v = args.get(k)
        if isinstance(v, str) and v:
            return v
    return ""


def _read_paths(m: Message) -> list[str]:
    return [p for c in m.tool_calls if canonical_tool(c.name) == "file_read" and (p := _path_of(c.arguments))]
