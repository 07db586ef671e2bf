"""The ledger's types, shared by every part of the inspector: transcript, messages, blocks, usage
(msgspec structs: frozen but for the transcript, keyword-only, made without checks)."""

from .blocks import Block, MediaBlock, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from .message import (
    CONVERSATION,
    DEFAULT_PRIORITY,
    PIN_FLOOR,
    TOOL_OUTPUT,
    Message,
    Origin,
    Role,
    Source,
    SourceKind,
)
from .transcript import (
    SEGMENT_EVENTS,
    AbandonedBranch,
    EventKind,
    LoadIssue,
    RecordedEvent,
    Request,
    Segment,
    SubagentRef,
    Transcript,
    Usage,
)

__all__ = [
    "CONVERSATION",
    "DEFAULT_PRIORITY",
    "PIN_FLOOR",
    "SEGMENT_EVENTS",
    "TOOL_OUTPUT",
    "AbandonedBranch",
    "Block",
    "EventKind",
    "LoadIssue",
    "MediaBlock",
    "Message",
    "Origin",
    "ReasoningBlock",
    "RecordedEvent",
    "Request",
    "Role",
    "Segment",
    "Source",
    "SourceKind",
    "SubagentRef",
    "TextBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "Transcript",
    "Usage",
]
