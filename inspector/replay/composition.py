"""What fills the window at one request: the `/context` picture, raw and sent side by side.

Claude Code's `/context` command draws the window as a grid of what fills it (system prompt,
tools, memory files, skills, messages, free space, the autocompact buffer); its users read a
session with that picture in mind. `composition(step)` computes the same picture for any request
of any replayed transcript, from the sources the readers give each message (`Message.source`) and
the calibrated weights, twice: for the raw ledger (what the harness held) and for what the
policy's pipeline sends. The parts of the raw side add up to the request's calibrated context
exactly, those of the sent side to the pipeline's sent estimate; with a known window, the space
parts (free space up to the trigger, the autocompact buffer, the output reserve) complete them
to the window.

A message's weight is split over the parts its blocks belong to (thinking, tool results by
tool, the rest of the conversation) in proportion to their characters; the split is exact in
whole tokens (largest remainders), so nothing is lost or counted twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from inspector.model import (
    Message,
    ReasoningBlock,
    Role,
    Source,
    SourceKind,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from inspector.shaping import Budget, Policy, ShapeResult
from inspector.shaping.policy import pin_reason, preset_for_format
from inspector.tokens.calibration import OVERHEAD_ID

if TYPE_CHECKING:
    from inspector.replay import Replay, Step

OVERHEAD = "overhead"
MEMORY = "memory"
SKILLS = "skills"
PINNED = "pinned"
TASK = "task"
SUMMARY = "summary"
PROJECT = "project"
CONVERSATION = "conversation"
THINKING = "thinking"
TOOL = "tool:"
"""Prefix of a part holding the results of one tool ("tool:Read")."""
FREE = "free"
BUFFER = "buffer"
RESERVE = "reserve"
OVER = "over"

LABELS = {
    OVERHEAD: "system prompt and tools",
    PINNED: "identity and team",
    MEMORY: "memory files",
    SKILLS: "skills",
    TASK: "task",
    SUMMARY: "compaction summary",
    PROJECT: "project map",
    CONVERSATION: "conversation",
    THINKING: "thinking",
    FREE: "free space",
    BUFFER: "autocompact buffer",
    RESERVE: "output reserve",
    OVER: "over the window",
}
ORDER = (OVERHEAD, PINNED, MEMORY, SKILLS, TASK, SUMMARY, PROJECT, CONVERSATION, THINKING)
"""The order of the used parts (tool parts follow the conversation, heaviest first, before thinking)."""
SPACE = (FREE, BUFFER, RESERVE)

_KIND_PART = {
    SourceKind.OVERHEAD: OVERHEAD,
    SourceKind.IDENTITY: PINNED,
    SourceKind.TEAM: PINNED,
    SourceKind.PROJECT_INSTRUCTIONS: MEMORY,
    SourceKind.SKILL: SKILLS,
    SourceKind.TASK: TASK,
    SourceKind.SUMMARY: SUMMARY,
    SourceKind.PROJECT_MAP: PROJECT,
}


@dataclass(frozen=True, slots=True)
class Part:
    """One part of the window: its tokens in the raw ledger and in what is sent."""

    key: str
    label: str
    raw: int
    sent: int
    messages: int = 0
    """Raw ledger messages with a share in this part (0 for the space parts)."""

    @property
    def space(self) -> bool:
        return self.key in SPACE or self.key == OVER


@dataclass(frozen=True, slots=True)
class PinnedRow:
    """The pinned messages of one source at a request: their tokens, and why they are pinned
    (`inspector.shaping.policy.pin_reason`, in the harness's terms)."""

    kind: str
    name: str
    priority: int
    count: int
    tokens: int
    why: str


@dataclass(frozen=True, slots=True)
class Composition:
    """The window at one request, part by part (used parts first, then the space parts)."""

    request: int
    window: int | None
    context: int
    """The raw ledger's tokens: the sum of the used parts' `raw` (the calibrated context)."""
    sent: int
    """What the pipeline sends: the sum of the used parts' `sent`."""
    trigger: int
    parts: tuple[Part, ...]
    overhead_shares: tuple[OverheadShare, ...] = ()
    """The overhead part split into system prompt and tools (`split_overhead`), each with its basis."""
    pinned: tuple[PinnedRow, ...] = ()
    """The pinned sources of the raw ledger, each with why it is pinned in the policy's terms."""

    @property
    def scale(self) -> int:
        """What a share is of: the window, or, unknown, the larger of the context and the trigger."""
        return self.window or max(self.context, self.trigger, 1)

    def share(self, tokens: int) -> float:
        return tokens / self.scale if self.scale else 0.0

    @property
    def used(self) -> tuple[Part, ...]:
        return tuple(p for p in self.parts if not p.space)

    def total(self, side: str) -> int:
        """Every part of one side ("raw" or "sent") added up: the window when it is known and not
        exceeded."""
        return sum(getattr(p, side) for p in self.parts)

    def to_dict(self) -> dict[str, object]:
        return {
            "request": self.request,
            "window": self.window,
            "context": self.context,
            "sent": self.sent,
            "trigger": self.trigger,
            "share_of": "window" if self.window else "context",
            "parts": [
                {
                    "key": p.key,
                    "label": p.label,
                    "raw": p.raw,
                    "sent": p.sent,
                    "raw_share": round(self.share(p.raw), 6),
                    "sent_share": round(self.share(p.sent), 6),
                    "messages": p.messages,
                    "space": p.space,
                }
                for p in self.parts
            ],
            "pinned": [
                {
                    "kind": x.kind,
                    "name": x.name,
                    "priority": x.priority,
                    "count": x.count,
                    "tokens": x.tokens,
                    "why": x.why,
                }
                for x in self.pinned
            ],
            "overhead_split": [
                {
                    "key": x.key,
                    "label": x.label,
                    "tokens": x.tokens,
                    "basis": x.basis,
                    "estimated": x.estimated,
                }
                for x in self.overhead_shares
            ],
        }


def _apportion(total: int, sizes: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """`total` split over the keys in proportion to their sizes, in whole tokens that add up to
    `total` (largest remainders; equal shares when every size is 0)."""
    if not sizes:
        return []
    if len(sizes) == 1:
        return [(sizes[0][0], total)]
    whole = sum(s for _, s in sizes)
    if whole <= 0:
        sizes = [(k, 1) for k, _ in sizes]
        whole = len(sizes)
    exact = [(k, total * s / whole) for k, s in sizes]
    out = [(k, int(v)) for k, v in exact]
    rest = total - sum(v for _, v in out)
    order = sorted(range(len(exact)), key=lambda i: -(exact[i][1] - out[i][1]))
    for i in order[:rest]:
        out[i] = (out[i][0], out[i][1] + 1)
    return out


def _block_size(block: object) -> int:
    if isinstance(block, TextBlock | ReasoningBlock):
        return len(block.text)
    if isinstance(block, ToolCallBlock):
        args = block.arguments
        return len(block.name) + len(args if isinstance(args, str) else json.dumps(args, ensure_ascii=False))
    if isinstance(block, ToolResultBlock):
        return len(block.content)
    return 0


def message_parts(message: Message, weight: int, call_names: dict[str, str]) -> list[tuple[str, int]]:
    """`weight` tokens of `message` split over the parts it fills."""
    if message.id == OVERHEAD_ID:
        return [(OVERHEAD, weight)]
    if message.is_summary:
        return [(SUMMARY, weight)]
    part = _KIND_PART.get(message.source.kind)
    if part is not None:
        return [(part, weight)]
    blocks = message.blocks
    keys = [_block_key(block, call_names) for block in blocks]
    if not keys:
        return [(CONVERSATION, weight)]
    first = keys[0]
    if all(k == first for k in keys):
        return [(first, weight)]  # one part takes the whole weight: no sizes to weigh (`_apportion`)
    sizes: dict[str, int] = {}
    for key, block in zip(keys, blocks, strict=True):
        # a block with no characters (signed thinking, an empty result) still has its place
        sizes[key] = sizes.get(key, 0) + max(1, _block_size(block))
    return _apportion(weight, list(sizes.items()))


def _block_key(block: object, call_names: dict[str, str]) -> str:
    """The part a block of a message belongs to."""
    if isinstance(block, ToolResultBlock):
        return TOOL + (block.tool_name or call_names.get(block.call_id) or "unknown tool")
    if isinstance(block, ReasoningBlock):
        return THINKING
    return CONVERSATION


def call_names_of(messages: Iterable[Message]) -> dict[str, str]:
    """Tool call id -> tool name, over the assistant messages given."""
    return {b.id: b.name for m in messages for b in m.blocks if isinstance(b, ToolCallBlock)}


def sent_weights(result: ShapeResult, weights: dict[str, int]) -> list[tuple[Message, int]]:
    """Every message of what the pipeline sends with its weight there: the weight the last layer
    that changed it gave it (a truncated or cleared result, an inserted summary), else its
    calibrated weight."""
    changed: dict[str, int] = {}
    for layer in result.layers:
        for d in layer.decisions:
            if d.action.changed:
                changed[d.message_id] = d.tokens_after
    return [(m, changed.get(m.id, weights.get(m.id, 0))) for m in result.final]


def build(
    request: int,
    ledger: Sequence[tuple[Message, int]],
    sent: Sequence[tuple[Message, int]],
    budget: Budget,
) -> Composition:
    """The composition of one request from its (message, weight) pairs, raw and sent."""
    names = call_names_of(m for m, _ in ledger)
    names.update(call_names_of(m for m, _ in sent))
    raw_parts: dict[str, int] = {}
    sent_parts: dict[str, int] = {}
    counts: dict[str, int] = {}
    # a message sent as the ledger holds it, at the same weight (most of them), splits the same
    # way: its parts are computed once (id of the message object -> its weight and parts)
    split: dict[int, tuple[int, list[tuple[str, int]]]] = {}
    for m, w in ledger:
        pieces = message_parts(m, w, names)
        split[id(m)] = (w, pieces)
        for key, tokens in pieces:
            raw_parts[key] = raw_parts.get(key, 0) + tokens
            counts[key] = counts.get(key, 0) + 1
    for m, w in sent:
        known = split.get(id(m))
        pieces = known[1] if known is not None and known[0] == w else message_parts(m, w, names)
        for key, tokens in pieces:
            sent_parts[key] = sent_parts.get(key, 0) + tokens
    keys = set(raw_parts) | set(sent_parts)
    tools = sorted((k for k in keys if k.startswith(TOOL)), key=lambda k: (-raw_parts.get(k, 0), k))
    ordered = (
        [k for k in ORDER if k in keys and k != THINKING] + tools + ([THINKING] if THINKING in keys else [])
    )
    parts = [
        Part(
            key,
            LABELS.get(key) or f"tool results · {key[len(TOOL) :]}",
            raw_parts.get(key, 0),
            sent_parts.get(key, 0),
            counts.get(key, 0),
        )
        for key in ordered
    ]
    context = sum(raw_parts.values())
    sent_total = sum(sent_parts.values())
    parts.extend(space_parts(context, sent_total, budget))
    return Composition(
        request=request,
        window=budget.window,
        context=context,
        sent=sent_total,
        trigger=budget.trigger,
        parts=tuple(parts),
    )


def space_parts(context: int, sent: int, budget: Budget) -> list[Part]:
    """The window's unused bands, for each side: free space up to the trigger, the autocompact
    buffer from the trigger to the output reserve, the reserve to the window (what a context
    above a line takes of the band above it is not free); past the window, how far over."""
    window = budget.window
    if not window:
        return []
    reserve_at = max(0, window - budget.output_reserve)
    trigger = min(budget.trigger, reserve_at)

    def bands(used: int) -> tuple[int, int, int, int]:
        free = max(0, trigger - used)
        buffer = max(0, reserve_at - max(used, trigger))
        reserve = max(0, window - max(used, reserve_at))
        return free, buffer, reserve, max(0, used - window)

    raw, out = bands(context), bands(sent)
    parts = [
        Part(FREE, LABELS[FREE], raw[0], out[0]),
        # a harness rule's band below the reserve is its autocompact buffer; a policy's own, its safety buffer
        Part(
            BUFFER, LABELS[BUFFER] if budget.rule and budget.auto_compact else "safety buffer", raw[1], out[1]
        ),
        Part(RESERVE, LABELS[RESERVE], raw[2], out[2]),
    ]
    if raw[3] or out[3]:
        parts.append(Part(OVER, LABELS[OVER], raw[3], out[3]))
    return parts


def pinned_rows(ledger: Sequence[tuple[Message, int]], policy: Policy) -> tuple[PinnedRow, ...]:
    """The pinned sources of a ledger with their weights, heaviest priority first, and why each is
    pinned under `policy`. Pinned is the rule the policy's layers apply (`Policy.pins`): under a
    harness preset the kinds it protects, else priority >= 70."""
    rows: dict[tuple[str, str, int], list[int]] = {}
    sources: dict[tuple[str, str, int], Source] = {}
    pinned = policy.pins
    for m, w in ledger:
        if not pinned(m):
            continue
        name = m.source.name or ("system prompt and tools" if m.id == OVERHEAD_ID else "")
        key = (m.source.kind.value, name, m.source.priority)
        rows.setdefault(key, []).append(w)
        sources.setdefault(key, m.source)
    out = [
        PinnedRow(kind, name, prio, len(ws), sum(ws), pin_reason(policy, sources[(kind, name, prio)]))
        for (kind, name, prio), ws in rows.items()
    ]
    out.sort(key=lambda r: (-r.priority, -r.tokens))
    return tuple(out)


def composition(step: Step, policy: Policy | None = None) -> Composition:
    """The composition of a replayed `Step` (`Replay.step(k)`): its ledger with the calibrated
    weights, and what its pipeline sends; the overhead part split by `split_overhead`; the pinned
    sources with why, under `policy` (None: the preset of the transcript's harness)."""
    weights = step.weights
    ledger = [(m, weights.get(m.id, 0)) for m in step.ledger]
    comp = build(step.index, ledger, sent_weights(step.result, weights), step.budget)
    tr = step.calibration.transcript
    shares = split_overhead(tr.format, weights.get(OVERHEAD_ID, 0), tr.messages)
    pins = pinned_rows(ledger, policy if policy is not None else preset_for_format(tr.format))
    return replace(comp, overhead_shares=shares, pinned=pins)


SYSTEM_PROMPT = "system_prompt"
TOOLS = "tools"
UNSPLIT = "system_prompt_and_tools"

CLAUDE_CODE_SYSTEM_PROMPT = 3_200
"""Claude Code's system prompt, estimated: its `/context` shows "System prompt: 3.2k tokens" in the
2.1 sample of docs/notes/claude-code-transcripts.md §7.1 (2.2k-3.3k across the versions seen there);
the transcript holds neither the prompt nor the tool definitions."""

OVERHEAD_LABEL = "fixed overhead: the first request's billed input minus the visible messages"


@dataclass(frozen=True, slots=True)
class OverheadShare:
    """One share of the fixed overhead: the system prompt, the tools, or both when they cannot be
    told apart; `basis` says where the figure comes from."""

    key: str
    label: str
    tokens: int
    basis: str
    estimated: bool


@dataclass(frozen=True, slots=True)
class Overhead:
    """What the harness sends that the transcript does not hold (system prompt, tool definitions),
    sized from the first request with usage against the visible messages it was made with:
    `tokens` = `billed` - `visible` (the calibration pins it there, `OVERHEAD_ID`), split into
    `shares` that add up to it. No request with usage: nothing is known (`request` None, 0 tokens)."""

    request: int | None
    billed: int | None
    visible: int
    tokens: int
    shares: tuple[OverheadShare, ...]
    label: str = OVERHEAD_LABEL

    def to_dict(self) -> dict[str, object]:
        return {
            "label": self.label,
            "request": self.request,
            "billed": self.billed,
            "visible": self.visible,
            "tokens": self.tokens,
            "shares": [
                {
                    "key": x.key,
                    "label": x.label,
                    "tokens": x.tokens,
                    "basis": x.basis,
                    "estimated": x.estimated,
                }
                for x in self.shares
            ],
        }


def _tools_called(messages: Iterable[Message]) -> tuple[list[str], list[str]]:
    """(built-in tools, MCP tools) the main chain called, each sorted (`mcp__<server>__<tool>`)."""
    names = {b.name for m in messages if not m.sidechain for b in m.blocks if isinstance(b, ToolCallBlock)}
    mcp = sorted(n for n in names if n.startswith("mcp__"))
    return sorted(names - set(mcp)), mcp


def _mcp_servers(mcp: Sequence[str]) -> list[str]:
    return sorted({n.split("__")[1] for n in mcp if n.count("__") >= 2})


def split_overhead(fmt: str, tokens: int, messages: Sequence[Message]) -> tuple[OverheadShare, ...]:
    """The overhead split into system prompt and tools where the harness's prompt or tool list is
    known, else one share for both (every share says its basis):

    - Claude Code: the system prompt is estimated (`CLAUDE_CODE_SYSTEM_PROMPT`, its `/context`
      figure), the tools are the rest: the built-in tools and the MCP tools, of which the ones the
      session called are named (the file holds no tool list). The rest also holds what Claude
      Code sends unrecorded (memory files in the system prompt, the environment).
    - Codex and OpenCollab, when the file holds the system prompt (Codex
      `session_meta.base_instructions`, OpenCollab's leading system message): it weighs with the
      visible messages, and the overhead is the tool definitions (exact by construction). A
      rollout without its base instructions (older Codex, redacted files): one share.
    - opencode and other formats: neither is stored; one share.
    """
    if tokens <= 0:
        return ()
    builtin, mcp = _tools_called(messages)
    called = f"{len(builtin)} built-in tool{'' if len(builtin) == 1 else 's'} called" + (
        f", {len(mcp)} MCP tool{'' if len(mcp) == 1 else 's'} of {', '.join(_mcp_servers(mcp))}" if mcp else ""
    )
    if fmt == "claude-code":
        prompt = min(tokens, CLAUDE_CODE_SYSTEM_PROMPT)
        return (
            OverheadShare(
                SYSTEM_PROMPT,
                "system prompt (estimated)",
                prompt,
                "estimated: Claude Code's /context shows 3.2k for its system prompt (2.2k-3.3k across versions)",
                True,
            ),
            OverheadShare(
                TOOLS,
                "tool definitions (estimated: the rest)",
                tokens - prompt,
                f"the overhead minus the system prompt's estimate; tool definitions ({called}) and "
                "what else Claude Code sends unrecorded (memory files, environment)",
                True,
            ),
        )
    if fmt == "codex":  # the base instructions (developer messages are additions to them)
        in_file = any(m.source.name == "base instructions" for m in messages)
    else:  # OpenCollab: its identity (role prompt) is the leading system message
        in_file = fmt == "opencollab" and any(m.role is Role.SYSTEM for m in messages)
    if in_file:
        return (
            OverheadShare(
                SYSTEM_PROMPT,
                "system prompt (in the transcript)",
                0,
                "the transcript holds the system prompt: it weighs with the visible messages",
                False,
            ),
            OverheadShare(
                TOOLS,
                "tool definitions",
                tokens,
                f"the whole overhead ({called}; and whatever of the prompt the file trims or redacts)",
                False,
            ),
        )
    return (
        OverheadShare(
            UNSPLIT,
            "system prompt and tools",
            tokens,
            f"not split: the transcript holds neither the system prompt nor the tool list ({called})",
            True,
        ),
    )


def overhead(replay: Replay) -> Overhead:
    """The fixed overhead of a replayed transcript, from its first request with usage."""
    tr = replay.transcript
    first = next((r for r in tr.requests if r.usage is not None), None)
    if first is None or first.usage is None:
        return Overhead(None, None, 0, 0, ())
    weights = replay.step(first.index).weights
    tokens = weights.get(OVERHEAD_ID, 0)
    visible = sum(w for mid, w in weights.items() if mid != OVERHEAD_ID)
    billed = first.usage.context
    return Overhead(first.index, billed, visible, tokens, split_overhead(tr.format, tokens, tr.messages))


def grid(comp: Composition, side: str, cells: int) -> list[str]:
    """The composition as `cells` cells, each the key of the part it shows (the `/context` grid):
    every part with tokens gets at least one cell, the rest by largest remainders."""
    parts = [(p.key, getattr(p, side)) for p in comp.parts if getattr(p, side) > 0]
    if not parts or cells <= 0:
        return []
    total = sum(t for _, t in parts)
    base = [(k, max(1, int(cells * t / total))) for k, t in parts]
    while sum(n for _, n in base) > cells:
        i = max(range(len(base)), key=lambda i: base[i][1])
        base[i] = (base[i][0], base[i][1] - 1)
    rest = cells - sum(n for _, n in base)
    if rest:
        exact = [cells * t / total - n for (k, t), (_, n) in zip(parts, base, strict=True)]
        for i in sorted(range(len(base)), key=lambda i: -exact[i])[:rest]:
            base[i] = (base[i][0], base[i][1] + 1)
    return [k for k, n in base for _ in range(n)]


__all__ = [
    "LABELS",
    "Composition",
    "Overhead",
    "OverheadShare",
    "Part",
    "PinnedRow",
    "build",
    "call_names_of",
    "composition",
    "grid",
    "message_parts",
    "overhead",
    "pinned_rows",
    "sent_weights",
    "space_parts",
    "split_overhead",
]
