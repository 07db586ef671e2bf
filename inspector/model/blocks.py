"""Content blocks: the pieces a message is made of, the same for every harness.

Blocks, like every object of the ledger, are msgspec structs: frozen, keyword-only, made in C
without checks (the 101 MB benchmark session makes 20,155 blocks and 12,465 messages, each with
its origin; a pydantic model took about ten times as long to make). Whoever makes one has checked
its values: a reader checks what it read (its own checks, or a typed decoder's) before making a
block of it, and the tests walk every transcript they load to hold each reader to that. A changed
copy is `msgspec.structs.replace(block, ...)`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from msgspec import Struct, field


class _Block(Struct, frozen=True, kw_only=True):
    """What every block is: frozen, made with keywords. `type` names its kind: a class attribute
    that is also written first when a block is encoded (its tag), or a media block's own field."""


class TextBlock(_Block, frozen=True, tag_field="type", tag="text"):
    """Plain text written by a user, an assistant or the harness."""

    type: ClassVar[Literal["text"]] = "text"
    text: str


class ReasoningBlock(_Block, frozen=True, tag_field="type", tag="reasoning"):
    """Thinking / reasoning. `signed` marks content whose bytes do not tell its cost.

    Signed (Anthropic `signature`) or encrypted (OpenAI `encrypted_content`) reasoning cannot be
    split or edited, and its visible text may be far smaller than what it costs when sent back.
    `redacted` marks reasoning whose text is not in the transcript at all.
    """

    type: ClassVar[Literal["reasoning"]] = "reasoning"
    text: str = ""
    signed: bool = False
    redacted: bool = False
    signature_chars: int = 0


class ToolCallBlock(_Block, frozen=True, tag_field="type", tag="tool_call"):
    """A tool call made by the assistant."""

    type: ClassVar[Literal["tool_call"]] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)


class ToolResultBlock(_Block, frozen=True, tag_field="type", tag="tool_result"):
    """The answer to a tool call, as the model sees it (never the harness's richer side record)."""

    type: ClassVar[Literal["tool_result"]] = "tool_result"
    call_id: str
    tool_name: str | None = None
    content: str = ""
    is_error: bool = False
    media: int = 0
    """How many images/documents the result carried (sized separately, not in `content`)."""


class MediaBlock(_Block, frozen=True):
    """An image or document: a placeholder with its size, never its bytes."""

    type: Literal["image", "document"] = "image"
    media_type: str = ""
    size_bytes: int = 0


Block = TextBlock | ReasoningBlock | ToolCallBlock | ToolResultBlock | MediaBlock
