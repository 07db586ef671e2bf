"""Messages and their sources."""

from __future__ import annotations

from enum import StrEnum

from msgspec import Struct

from .blocks import Block, MediaBlock, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock

PIN_FLOOR = 70
"""A source with priority at or above this is pinned by OpenCollab's rule: never removed or folded
into a summary. A harness preset pins what its harness protects instead (`Policy.pins`, the rule
the shaping layers apply: `inspector.shaping.pinning`)."""


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class SourceKind(StrEnum):
    """Where a piece of context came from (docs/DESIGN.md §2.4)."""

    IDENTITY = "identity"
    TEAM = "team"
    SKILL = "skill"
    TASK = "task"
    PROJECT_INSTRUCTIONS = "project_instructions"
    PROJECT_MAP = "project_map"
    OVERHEAD = "overhead"
    SUMMARY = "summary"
    TOOL_OUTPUT = "tool_output"
    CONVERSATION = "conversation"


DEFAULT_PRIORITY: dict[SourceKind, int] = {
    SourceKind.IDENTITY: 100,
    SourceKind.TEAM: 90,
    SourceKind.SKILL: 85,
    SourceKind.TASK: 80,
    SourceKind.PROJECT_INSTRUCTIONS: 75,
    SourceKind.OVERHEAD: 100,
    SourceKind.PROJECT_MAP: 30,
    SourceKind.SUMMARY: 0,
    SourceKind.TOOL_OUTPUT: 0,
    SourceKind.CONVERSATION: 0,
}


_SOURCES: dict[tuple[object, ...], Source] = {}


class Source(Struct, frozen=True, kw_only=True):
    """A source with its priority; `pinned` when priority >= PIN_FLOOR (OpenCollab's rule; the
    layers ask the policy's, `Budget.pins`)."""

    kind: SourceKind = SourceKind.CONVERSATION
    priority: int = 0
    name: str = ""

    @classmethod
    def of(cls, kind: SourceKind, name: str = "", priority: int | None = None) -> Source:
        """The source of `kind` (frozen: one object per kind, name and priority is shared)."""
        key = (cls, kind, name, priority)
        made = _SOURCES.get(key)
        if made is None:
            if len(_SOURCES) >= 4096:
                _SOURCES.clear()
            made = _SOURCES[key] = cls(
                kind=kind, name=name, priority=DEFAULT_PRIORITY[kind] if priority is None else priority
            )
        return made

    @property
    def pinned(self) -> bool:
        return self.priority >= PIN_FLOOR


CONVERSATION = Source.of(SourceKind.CONVERSATION)
TOOL_OUTPUT = Source.of(SourceKind.TOOL_OUTPUT)


class Origin(Struct, frozen=True, kw_only=True):
    """Where a message came from: file and 1-based line (or row/record number)."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class Message(Struct, frozen=True, kw_only=True):
    """One message of the ledger. Immutable: shaping makes changed copies (`replace`), never
    edits."""

    id: str
    role: Role
    blocks: tuple[Block, ...] = ()
    timestamp: str | None = None
    source: Source = CONVERSATION
    sidechain: bool = False
    agent_id: str | None = None
    origin: Origin | None = None
    response_id: str | None = None
    """The provider's id of the response this assistant message is (Claude `message.id`)."""
    model: str | None = None
    is_meta: bool = False
    """Injected by the harness, not typed by a person (caveats, reminders, skill bodies)."""
    is_summary: bool = False
    """A compaction summary written by the harness."""
    stop_reason: str | None = None

    @property
    def pinned(self) -> bool:
        return self.source.pinned

    @property
    def tool_calls(self) -> tuple[ToolCallBlock, ...]:
        blocks = self.blocks
        if len(blocks) == 1:  # most messages: one look, no generator
            b = blocks[0]
            return (b,) if isinstance(b, ToolCallBlock) else ()
        return tuple(b for b in blocks if isinstance(b, ToolCallBlock))

    @property
    def tool_results(self) -> tuple[ToolResultBlock, ...]:
        blocks = self.blocks
        if len(blocks) == 1:
            b = blocks[0]
            return (b,) if isinstance(b, ToolResultBlock) else ()
        return tuple(b for b in blocks if isinstance(b, ToolResultBlock))

    @property
    def has_text(self) -> bool:
        return any(isinstance(b, TextBlock) and b.text.strip() for b in self.blocks)

    @property
    def has_reasoning(self) -> bool:
        return any(isinstance(b, ReasoningBlock) for b in self.blocks)

    @property
    def text(self) -> str:
        """The text blocks joined, for summaries and search."""
        return "\n".join(b.text for b in self.blocks if isinstance(b, TextBlock))

    @property
    def is_tool_result(self) -> bool:
        return (
            bool(self.blocks)
            and all(isinstance(b, ToolResultBlock | MediaBlock) for b in self.blocks)
            and any(isinstance(b, ToolResultBlock) for b in self.blocks)
        )

    @property
    def is_human(self) -> bool:
        """A user turn typed by a person (not a tool result, not injected)."""
        return self.role is Role.USER and not self.is_tool_result and not self.is_meta and not self.is_summary
