"""Content blocks: the pieces a message is made of, the same for every harness."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Block(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextBlock(_Block):
    """Plain text written by a user, an assistant or the harness."""

    type: Literal["text"] = "text"
    text: str


class ReasoningBlock(_Block):
    """Thinking / reasoning. `signed` marks content whose bytes do not tell its cost.

    Signed (Anthropic `signature`) or encrypted (OpenAI `encrypted_content`) reasoning cannot be
    split or edited, and its visible text may be far smaller than what it costs when sent back.
    `redacted` marks reasoning whose text is not in the transcript at all.
    """

    type: Literal["reasoning"] = "reasoning"
    text: str = ""
    signed: bool = False
    redacted: bool = False
    signature_chars: int = 0


class ToolCallBlock(_Block):
    """A tool call made by the assistant."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class ToolResultBlock(_Block):
    """The answer to a tool call, as the model sees it (never the harness's richer side record)."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    tool_name: str | None = None
    content: str = ""
    is_error: bool = False
    media: int = 0
    """How many images/documents the result carried (sized separately, not in `content`)."""


class MediaBlock(_Block):
    """An image or document: a placeholder with its size, never its bytes."""

    type: Literal["image", "document"] = "image"
    media_type: str = ""
    size_bytes: int = 0


Block = Annotated[
    TextBlock | ReasoningBlock | ToolCallBlock | ToolResultBlock | MediaBlock,
    Field(discriminator="type"),
]
