"""Layer A: old history snip (OpenCollab rung `old_history_snip`)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence

from msgspec import structs

from inspector.model import Message, ToolCallBlock

from .base import (
    Action,
    CarryingLayer,
    Decision,
    LayerResult,
    Sizer,
    TokenMemo,
    acted,
    kept_pinned,
    plural,
    pressed,
    quiet_below_trigger,
)
from .budget import Budget
from .groups import Group, _common_prefix, group_spans
from .pinning import Pins

LEADER_CACHE = 65_536
"""How many exchange leaders a snip layer remembers (`OldHistorySnip._leader`)."""


class OldHistorySnip(CarryingLayer):
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
        super().__init__()
        self._plan: _Plan | None = None
        """The removable exchanges of the view before, oldest first, with their gains: the
        ledger of a request is the one before and a few messages more, so the exchanges the snip
        would remove are mostly those it weighed the request before (`_Plan`)."""

    def quiet(self, view: Sequence[Message], budget: Budget, estimator: Sizer) -> bool:
        """Whether `apply` would leave `view` as it is, not forced (`Pipeline.quiet`)."""
        return quiet_below_trigger(view, budget, estimator)

    def _apply(
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
        groups = group_spans(src, budget.pins, sizer.known_front)
        keep = budget.groups_kept
        last = max(1, len(groups) - keep)
        plan = self._plan_for(src, groups, last, sizer, budget)
        # the exchanges removed are the first ones whose gains (oldest first) bring the estimate
        # to the target: the loop of old, one group after another, stopped at the first group it
        # met with the estimate at or under the target
        need = before - target
        chosen = plan.upto(need, src, groups, last, self._leader, sizer)
        removed_groups = chosen
        running = before - plan.cum[chosen - 1] if chosen else before
        decisions: list[Decision] = []
        for j in range(chosen) if explain else ():
            gi, gs, ge, _gain, kept_leader = plan.entries[j]
            leader = src[gs]
            step = (
                f"{cause}; tool exchange in group {gi} of {len(groups)}, removed oldest first "
                f"toward target {target:,} (estimate now {before - plan.cum[j]:,})"
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
                        tokens_after=sizer.message(kept_leader),
                    )
                )
            for i in range(gs if kept_leader is None else gs + 1, ge):
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
        for g in groups[1:last] if explain else ():  # (a copy of the groups: only to explain)
            if g.pinned and g.exchange:
                for m in g.messages(src):
                    if budget.pins(m):
                        decisions.append(kept_pinned(self.name, m, sizer))
        result, truncated, removed = plan.view(chosen, src)
        after = running
        sizer.seed_view(result, after)  # (what summing its messages gives: each gain was so summed)
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
            truncated=truncated,
            removed=removed,
        )

    def _plan_for(
        self, src: tuple[Message, ...], groups: Sequence[Group], last: int, sizer: TokenMemo, budget: Budget
    ) -> _Plan:
        """The plan of the view before, for what `src` shares with it, or a fresh one.

        A plan's entries hold for `src` as long as the same sizer sizes the same messages: an
        exchange that ends before the first message `src` does not share with the view before
        (and is still outside the last groups) has the same extent, flags and gain."""
        plan = self._plan
        if plan is None or plan.sizer is not sizer or plan.pins != budget.pins:
            plan = self._plan = _Plan(sizer, budget.pins)
        else:
            plan.rebase(src, groups, last)
        plan.src = src
        return plan

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


Entry = tuple[int, int, int, int, Message | None]
"""(group index, start, end, gain, the leader's copy without its calls or None): an exchange the
snip may remove, and what removing it saves (its messages' sizes less its kept leader's)."""


class _Plan:
    """The removable exchanges of a view in the order the snip removes them, weighed once.

    `entries` are those of the groups before `scanned` (an index into the groups), each with a
    positive gain; `cum[j]` is the sum of the gains of `entries[: j + 1]`. The snip removes the
    first `j + 1` where `cum[j]` first reaches what the estimate is over the target: found by
    bisection, so a request costs what its ledger added, not the exchanges removed. The view is
    kept too, as its first part up to the end of the last exchange removed (`head`), which the
    next request extends."""

    def __init__(self, sizer: TokenMemo, pins: Pins) -> None:
        self.sizer = sizer
        self.pins = pins
        self.src: tuple[Message, ...] = ()
        self.entries: list[Entry] = []
        self.cum: list[int] = []
        self.scanned = 1
        self.head: list[Message] = []
        """The view's messages before `entries[self.head_of - 1]`'s end, those removed taken out."""
        self.head_of = 0
        self.marks: list[tuple[int, int, int]] = []
        """After each of the first `head_of` entries: (the head's length, messages removed,
        leaders truncated), so the head goes back to fewer entries without being made again."""
        self.made: tuple[tuple[Message, ...], int, int] | None = None
        """The last view made, where its rest began in its source, and the head's length then."""
        self.low = 0
        """The head's shortest length since that view: the front of it still as it was."""
        self.shared = 0
        """How many messages at their front `src` shares with the source of the last view made
        (the least of what each `rebase` since found)."""

    def rebase(self, src: tuple[Message, ...], groups: Sequence[Group], last: int) -> None:
        """Keep what holds for `src`: the entries of groups that end before the first message it
        does not share with the view before, and within the groups the snip may remove."""
        old = self.src
        shared = _common_prefix(old, src, self.sizer.known_front(old, src))
        self.shared = min(self.shared, shared)
        # the groups that end before `shared` are the same groups (their extent depends on their
        # own messages and the one after them)
        valid = bisect_left(groups, shared, key=lambda g: g.end)
        valid = min(valid, self.scanned, last)
        if valid < self.scanned:
            n = bisect_left(self.entries, valid, key=lambda e: e[0])
            del self.entries[n:]
            del self.cum[n:]
            self.scanned = max(1, valid)
            self._back_to(n)

    def upto(
        self,
        need: int,
        src: tuple[Message, ...],
        groups: Sequence[Group],
        last: int,
        leader: Callable[[Message], tuple[bool, Message | None]],
        sizer: TokenMemo,
    ) -> int:
        """How many entries the snip removes to save `need` (all there are when they cannot)."""
        cum = self.cum
        if cum and cum[-1] >= need:
            return bisect_left(cum, need) + 1
        entries = self.entries
        total = cum[-1] if cum else 0
        size = sizer.message
        g_at = self.scanned
        while g_at < last and total < need:
            g = groups[g_at]
            g_at += 1
            if not (g.exchange and g.complete) or g.pinned or g.summary:
                continue
            removable, kept = leader(src[g.start])
            if not removable:
                continue
            removed = sum(map(size, src[g.start : g.end]))
            retained = size(kept) if kept is not None else 0
            gain = removed - retained
            if gain <= 0:
                continue
            total += gain
            entries.append((g.index, g.start, g.end, gain, kept))
            cum.append(total)
        self.scanned = g_at
        return len(entries)

    def view(self, chosen: int, src: tuple[Message, ...]) -> tuple[tuple[Message, ...], int, int]:
        """`src` without the first `chosen` entries' exchanges (a leader with text kept, its calls
        dropped): (the view, how many leaders were truncated, how many messages removed)."""
        self._back_to(chosen)
        head, marks = self.head, self.marks
        pos = self.entries[self.head_of - 1][2] if self.head_of else 0
        _, removed, truncated = marks[-1] if marks else (0, 0, 0)
        for _gi, start, end, _gain, kept in self.entries[self.head_of : chosen]:
            head.extend(src[pos:start])
            if kept is not None:
                head.append(kept)
                truncated += 1
                removed += end - start - 1
            else:
                removed += end - start
            pos = end
            marks.append((len(head), removed, truncated))
        self.head_of = chosen
        view = tuple(head) + src[pos:]
        self._declare(view, src, pos)
        return view, truncated, removed

    def _declare(self, view: tuple[Message, ...], src: tuple[Message, ...], pos: int) -> None:
        """Tell the sizer what `view` shares with `src` (all before the first exchange removed) and
        with the view made before (the head as it stayed and, where the head is as it was, the
        rest as far as `src` shares it with the source before), for the next layer's comparisons."""
        sizer, entries, n = self.sizer, self.entries, len(self.head)
        if self.head_of:
            sizer.seed_shared(view, src, entries[0][1])
        made = self.made
        if made is not None:
            before, pos_before, n_before = made
            same = self.low == n == n_before and pos == pos_before
            sizer.seed_shared(view, before, n + max(0, self.shared - pos) if same else self.low)
        self.made = (view, pos, n)
        self.low = n
        self.shared = len(src)

    def _back_to(self, n: int) -> None:
        """The head of the first `n` entries, where it held more."""
        if self.head_of > n:
            del self.marks[n:]
            del self.head[self.marks[-1][0] if self.marks else 0 :]
            self.head_of = n
            self.low = min(self.low, len(self.head))
