"""Layer 0: eager tool output clear (OpenCollab rung `eager_clear`). Not in the default pipeline."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from inspector.model import Message, ToolResultBlock

from .base import Action, Decision, LayerResult, Sizer, acted, memo, no_change, ordinal, plural
from .budget import Budget
from .summarize import call_arguments
from .tool_output_clear import compactable_results, replace_results
from .tools import DEFAULT_COMPACTABLE_TOOLS, canonical_set, canonical_tool

DEFAULT_EAGER_KEEP = 12
EAGER_STUB_PREFIX = "[Old tool result cleared"
EAGER_STUB = (
    "[Old tool result cleared: {tool} {target}] — you already ran this; the full output is in the "
    "transcript above. Re-issue ONLY if you need the exact content again, not to check whether you read it."
)
TARGET_KEYS = ("path", "file_path", "filename", "file", "pattern", "command")


def call_target(tool: str, arguments: dict[str, Any] | str) -> str:
    """What a call was about: a file_read's path and range, else its first path/pattern/command."""
    args = call_arguments(arguments)
    if canonical_tool(tool) == "file_read":
        path = next((str(args[k]) for k in ("path", "file_path", "filename", "file") if args.get(k)), "")
        offset, limit = args.get("offset"), args.get("limit")
        if isinstance(offset, int) and isinstance(limit, int):
            span = f"lines {offset}-{offset + limit - 1}"
        elif isinstance(offset, int):
            span = f"from line {offset}"
        elif isinstance(limit, int):
            span = f"first {limit} lines"
        else:
            span = "(whole file)"
        return f"{path} {span}".strip()
    for k in TARGET_KEYS:
        if args.get(k):
            return " ".join(str(args[k]).split())[:120]
    return ""


class EagerToolOutputClear:
    """Always on, no trigger; NOT in the default pipeline (kept so its cost can be compared).

    Keeps the `keep` (12) most recent compactable results verbatim and replaces every older one
    (not pinned) with a stub that names the call: `[Old tool result cleared: <tool> <target>] — you
    already ran this; ...`, only where the stub is shorter. Clearing on every call at low pressure
    breaks the provider's prompt cache and makes models re-read files. Idempotent: stubs are skipped.
    """

    name = "eager_clear"
    label = "eager tool output clear"
    reactive = False

    def __init__(
        self, compactable: Iterable[str] = DEFAULT_COMPACTABLE_TOOLS, keep: int = DEFAULT_EAGER_KEEP
    ) -> None:
        self.compactable = canonical_set(compactable)
        self.keep = keep

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
        calls = {c.id: c for m in src for c in m.tool_calls}
        free = [s for s in compactable_results(src, self.compactable) if not budget.pins(src[s.message])]
        total = len(free)
        split = max(0, total - self.keep)
        stubs: dict[tuple[int, int], str] = {}
        for s in free[:split]:
            b = src[s.message].blocks[s.block]
            assert isinstance(b, ToolResultBlock)
            if b.content.startswith(EAGER_STUB_PREFIX):
                continue
            call = calls[b.call_id]
            stub = EAGER_STUB.format(tool=call.name, target=call_target(call.name, call.arguments))
            if len(stub) < len(b.content):
                stubs[(s.message, s.block)] = stub
        targets = [s for s in free[:split] if (s.message, s.block) in stubs]
        changed = replace_results(src, targets, stubs)
        changed = {i: new for i, new in changed.items() if sizer.message(new) <= sizer.message(src[i])}
        if not changed:
            return no_change(
                self,
                src,
                before,
                f"{plural(total, 'compactable result')}, {self.keep} kept, nothing older to clear",
                forced,
            )
        rank = {(s.message, s.block): total - k for k, s in enumerate(free)}
        decisions = [
            Decision(
                message_id=src[i].id,
                layer=self.name,
                action=Action.CLEARED,
                reason=(
                    "eager: "
                    + ", ".join(ordinal(rank[(s.message, s.block)]) for s in targets if s.message == i)
                    + f" most recent compactable result, only {self.keep} kept (no trigger)"
                ),
                tokens_before=sizer.message(src[i]),
                tokens_after=sizer.message(new),
            )
            for i, new in changed.items()
        ]
        result = tuple(changed.get(i, m) for i, m in enumerate(src))
        after = sizer.view(result)
        return acted(
            self,
            result,
            before,
            after,
            reason=f"cleared {plural(len(changed), 'message')} of older compactable results, kept {self.keep}",
            decisions=decisions,
            forced=forced,
            cleared=len(changed),
        )
