"""Layer A: old history snip (OpenCollab rung `old_history_snip`)."""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import structs

from inspector.model import Message, ToolCallBlock

from .base import (
    Action,
    Decision,
    LayerResult,
    Sizer,
    acted,
    kept_pinned,
    plural,
    pressed,
)
from .budget import Budget
from .groups import Group, group_spans


class OldHistorySnip:
    """Reactive: does nothing unless the estimate exceeds `budget.trigger` (or forced).

    Walks groups oldest first and removes complete tool exchanges until the estimate is at or under
    `budget.target`. Never touches group 0 (the system prompt) or the last `budget.groups_kept`
    groups (4, fewer in small windows); never removes user turns, assistant-text turns, pinned
    messages, summaries or malformed exchanges. When the exchange's assistant message has text, the
    text stays and only the calls and their results go. An assistant message that carries
    reasoning but no text is skipped: signed reasoning cannot be split. No model call.
    """

    name = "old_history_snip"
    label = "old history snip"
    reactive = True

    def apply(
        self,
        view: Sequence[Message],
        budget: Budget,
        estimator: Sizer,
        *,
        forced: bool = False,
        explain: bool = True,
    ) -> LayerResult:
        ready = pressed(self, view, budget, estimator, forced)
        if isinstance(ready, LayerResult):
            return ready
        src, sizer, before, cause = ready.src, ready.sizer, ready.before, ready.cause
        unchanged = ready.unchanged
        target = budget.target
        if before <= target:
            return unchanged(f"{cause}, already at or under target {target:,}")
        groups = group_spans(src)
        keep = budget.groups_kept
        droppable = groups[1 : max(1, len(groups) - keep)]
        running = before
        drop: set[int] = set()
        replace: dict[int, Message] = {}
        decisions: list[Decision] = []
        removed_groups = 0
        for g in droppable:
            if running <= target:
                break
            if not self._removable(g, src):
                continue
            leader = src[g.start]
            kept_leader = (
                structs.replace(
                    leader, blocks=tuple(b for b in leader.blocks if not isinstance(b, ToolCallBlock))
                )
                if leader.has_text
                else None
            )
            removed = sum(sizer.message(m) for m in g.messages(src))
            retained = sizer.message(kept_leader) if kept_leader is not None else 0
            if removed - retained <= 0:
                continue
            running -= removed - retained
            removed_groups += 1
            step = (
                f"{cause}; tool exchange in group {g.index} of {len(groups)}, removed oldest first "
                f"toward target {target:,} (estimate now {running:,})"
            )
            if kept_leader is not None:
                replace[g.start] = kept_leader
                n_calls = len(leader.tool_calls)
                decisions.append(
                    Decision(
                        message_id=leader.id,
                        layer=self.name,
                        action=Action.TRUNCATED,
                        reason=f"{step}; its text kept, its {plural(n_calls, 'tool call')} dropped",
                        tokens_before=sizer.message(leader),
                        tokens_after=retained,
                    )
                )
            else:
                drop.add(g.start)
            for i in range(g.start + 1, g.end):
                drop.add(i)
            for i in range(g.start if kept_leader is None else g.start + 1, g.end):
                decisions.append(
                    Decision(
                        message_id=src[i].id,
                        layer=self.name,
                        action=Action.REMOVED,
                        reason=step,
                        tokens_before=sizer.message(src[i]),
                        tokens_after=0,
                    )
                )
        if not decisions:
            return unchanged(
                f"{cause}, but no removable tool exchange outside group 0 and the last {keep} groups"
            )
        for g in groups[max(1, len(groups) - keep) :]:
            for m in g.messages(src):
                decisions.append(
                    Decision(
                        message_id=m.id,
                        layer=self.name,
                        action=Action.KEPT_RECENT,
                        reason=f"in the last {keep} groups, which snip never removes",
                        tokens_before=sizer.message(m),
                        tokens_after=sizer.message(m),
                    )
                )
        for g in droppable:
            if g.pinned and g.exchange:
                for m in g.messages(src):
                    if m.pinned:
                        decisions.append(kept_pinned(self.name, m, sizer))
        result = tuple(replace.get(i, m) for i, m in enumerate(src) if i not in drop)
        after = sizer.view(result)
        outcome = "at or under" if after <= target else "still over"
        return acted(
            self,
            result,
            before,
            after,
            reason=(
                f"{cause}; removed {plural(removed_groups, 'tool exchange')}, "
                f"estimate {after:,} {outcome} target {target:,}"
            ),
            decisions=decisions,
            forced=forced,
            truncated=len(replace),
            removed=len(drop),
        )

    @staticmethod
    def _removable(g: Group, view: Sequence[Message]) -> bool:
        """A complete tool exchange with no pinned or summary message, led by text or by calls only."""
        if not (g.exchange and g.complete) or g.pinned or g.summary:
            return False
        leader = view[g.start]
        return not (leader.has_reasoning and not leader.has_text)
