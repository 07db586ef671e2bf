"""The estimator protocol and the deterministic serialization every estimator sizes."""

from __future__ import annotations

import json
from typing import Protocol, runtime_checkable

from inspector.model import (
    MediaBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)

JSON_SCALARS = frozenset((str, int, bool, type(None)))
"""The exact types of the JSON scalars orjson writes as `json.dumps` does (a float may not be:
`1e-05` is `0.00001` to orjson; a subclass may not be either)."""

MESSAGE_OVERHEAD = 64
"""Tokens a message costs beyond its text (role, framing), in the heuristic estimator."""


def serialize(message: Message) -> str:
    """A deterministic text rendering of what the model is sent for `message`."""
    parts: list[str] = [message.role.value]
    for block in message.blocks:
        if isinstance(block, TextBlock | ReasoningBlock):
            parts.append(block.text)
        elif isinstance(block, ToolCallBlock):
            args = (
                block.arguments
                if isinstance(block.arguments, str)
                else json.dumps(block.arguments, sort_keys=True, ensure_ascii=False)
            )
            parts.append(f"{block.name} {args}")
        elif isinstance(block, ToolResultBlock):
            parts.append(block.content)
        elif isinstance(block, MediaBlock):
            parts.append(f"[{block.type} {block.media_type}]")
    return "\n".join(parts)


@runtime_checkable
class Estimator(Protocol):
    """Sizes text and messages in tokens. Pure: the same input always gives the same number."""

    name: str

    def text(self, text: str) -> int: ...

    def message(self, message: Message) -> int: ...
