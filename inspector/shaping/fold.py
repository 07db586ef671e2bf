"""What the harness compaction layers share: which groups may be folded, and building the summary.

Claude Code, opencode and Codex each replace most of the conversation with one summary message;
they differ in what they keep (nothing, a tail of recent turns, recent user messages) and in what
they add (restored files). A group may be folded when it is not group 0 (the system prompt), is
complete (no orphan call or result), holds no pinned message and no earlier summary; everything
else stays where it is, so pairing and pins survive and a second run finds nothing to fold.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import Struct

from inspector.model import Message, Role, Source, SourceKind, TextBlock

from .auto_compact import SummaryCache, segment_key
from .base import Action, Decision, Sizer, plural
from .groups import Group
from .summarize import Summarizer, cacheable, summarizer_key

MAX_SUMMARY_ATTEMPTS = 3
"""Claude Code's `MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES`: the circuit breaker opens after 3 failures."""


def foldable(group: Group) -> bool:
    """A group a compaction may fold into its summary."""
    return group.index > 0 and group.complete and not group.pinned and not group.summary


class SummaryFailed(RuntimeError):
    """Every summary attempt failed: the circuit breaker is open."""


class Summaries(Struct):
    """A summarizer with the LRU cache and the circuit breaker the compaction layers share.

    `summarize` tries up to `attempts` times (a model summarizer may fail and succeed on retry);
    an attempt fails when the summarizer raises or answers nothing. After `attempts` failures in
    a row it raises `SummaryFailed`, which the layer reports as an open circuit breaker.
    """

    summarizer: Summarizer | None
    cache: SummaryCache
    attempts: int = MAX_SUMMARY_ATTEMPTS

    def summarize(self, segment: Sequence[Message]) -> tuple[str, str]:
        """(cache key, summary text) of a segment."""
        assert self.summarizer is not None
        key = segment_key(segment, summarizer_key(self.summarizer))
        text = self.cache.get(key)
        if text is not None:
            return key, text
        errors: list[str] = []
        for _ in range(max(1, self.attempts)):
            try:
                text = self.summarizer.summarize(segment).strip()
            except Exception as exc:  # a user-supplied summarizer may fail in any way
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            if not text:
                errors.append("empty summary")
                continue
            if cacheable(self.summarizer):
                self.cache.put(key, text)
            return key, text
        raise SummaryFailed(f"{len(errors)} consecutive summary failures (last: {errors[-1]})")


def summary_message(
    key: str, prefix: str, text: str, segment: Sequence[Message], source_name: str, role: Role = Role.USER
) -> Message:
    """The one message a compaction leaves in place of `segment`."""
    return Message(
        id=f"{source_name.replace(' ', '-')}-{key[:16]}",
        role=role,
        blocks=(TextBlock(text=f"{prefix}{text}"),),
        timestamp=segment[-1].timestamp if segment else None,
        source=Source.of(SourceKind.SUMMARY, name=source_name),
        is_summary=True,
    )


def folded_decisions(
    layer: str, folded: Sequence[Message], summary: Message, cause: str, sizer: Sizer
) -> list[Decision]:
    """SUMMARIZED decisions for every folded message and for the summary itself."""
    before = sum(sizer.message(m) for m in folded)
    size = sizer.message(summary)
    step = f"{cause}; folded with {plural(len(folded) - 1, 'other message')} into summary {summary.id} ({before:,} -> {size:,} tokens)"
    out = [
        Decision(
            message_id=m.id,
            layer=layer,
            action=Action.SUMMARIZED,
            reason=step,
            tokens_before=sizer.message(m),
            tokens_after=0,
        )
        for m in folded
    ]
    out.append(
        Decision(
            message_id=summary.id,
            layer=layer,
            action=Action.SUMMARIZED,
            reason=f"{cause}; summary of {plural(len(folded), 'earlier message')} ({before:,} -> {size:,} tokens)",
            tokens_before=before,
            tokens_after=size,
        )
    )
    return out
