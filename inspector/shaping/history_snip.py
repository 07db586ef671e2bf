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
from .groups import group_spans

LEADER_CACHE = 65_536
"""How many exchange leaders a snip layer remembers (`OldHistorySnip._leader`)."""


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

    def __init__(self) -> None:
        self._leaders: dict[int, tuple[Message, bool, Message | None]] = {}
        """id(leader) -> (the leader, whether it may lead a removable exchange, the copy of it
        without its tool calls when it has text): a replay snips every request's ledger, each
        the one before and a few messages more, so the same leaders are walked again and again;
        the same copy each time (so what sized it before sizes it again)."""

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
        groups = group_spans(src, budget.pins)
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
            if not (g.exchange and g.complete) or g.pinned or g.summary:
                continue
            leader = src[g.start]
            removable, kept_leader = self._leader(leader)
            if not removable:
                continue
            removed = sum(sizer.message(m) for m in g.messages(src))
            retained = sizer.message(kept_leader) if kept_leader is not None else 0
            if removed - retained <= 0:
                continue
            running -= removed - retained
            removed_groups += 1
            if kept_leader is not None:
                replace[g.start] = kept_leader
            else:
                drop.add(g.start)
            for i in range(g.start + 1, g.end):
                drop.add(i)
            if not explain:
                continue  # (the caller reads the view and the figures only: no decisions)
            step = (
                f"{cause}; tool exchange in group {g.index} of {len(groups)}, removed oldest first "
                f"toward target {target:,} (estimate now {running:,})"
            )
            if kept_leader is not None:
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
        if not removed_groups:
            return unchanged(
                f"{cause}, but no removable tool exchange outside group 0 and the last {keep} groups"
            )
        for g in groups[max(1, len(groups) - keep) :] if explain else ():
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
        for g in droppable if explain else ():
            if g.pinned and g.exchange:
                for m in g.messages(src):
                    if budget.pins(m):
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

    def _leader(self, leader: Message) -> tuple[bool, Message | None]:
        """(whether `leader` may lead a removable exchange: led by text or by calls only, not by
        reasoning alone; its copy without tool calls when it has text), once per leader object."""
        hit = self._leaders.get(id(leader))
        if hit is not None and hit[0] is leader:
            return hit[1], hit[2]
        has_text = leader.has_text
        removable = not (leader.has_reasoning and not has_text)
        kept = (
            structs.replace(
                leader, blocks=tuple(b for b in leader.blocks if not isinstance(b, ToolCallBlock))
            )
            if has_text
            else None
        )
        if len(self._leaders) >= LEADER_CACHE:
            self._leaders.clear()
        self._leaders[id(leader)] = (leader, removable, kept)
        return removable, kept
