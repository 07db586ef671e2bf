"""The character heuristic (DESIGN.md §3), OpenCollab's own estimator.

Per message: 64 tokens of overhead, plus a third of a token per ASCII character and one token per
wide (CJK or other non-ASCII) character, over `serialize(message)`.
"""

from __future__ import annotations

from inspector.model import Message

from .base import MESSAGE_OVERHEAD, serialize

ASCII_CHARS_PER_TOKEN = 3


_BELOW_LEAD_BYTES = bytes(range(0xC0))
"""UTF-8 bytes that do not start a multi-byte character (ASCII and continuation bytes)."""


def heuristic_tokens(text: str) -> int:
    """Tokens of `text`: ASCII characters / 3 (rounded up) plus one per non-ASCII character."""
    if text.isascii():
        return -(-len(text) // ASCII_CHARS_PER_TOKEN)
    # one lead byte per non-ASCII character: count them at C speed, not character by character
    wide = len(text.encode("utf-8", "surrogatepass").translate(None, _BELOW_LEAD_BYTES))
    ascii_count = len(text) - wide
    return -(-ascii_count // ASCII_CHARS_PER_TOKEN) + wide


class HeuristicEstimator:
    """64 per message + characters/3 for ASCII + 1 per wide character."""

    name = "heuristic"

    def text(self, text: str) -> int:
        return heuristic_tokens(text)

    def message(self, message: Message) -> int:
        return MESSAGE_OVERHEAD + heuristic_tokens(serialize(message))
