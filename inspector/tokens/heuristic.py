"""The character heuristic (docs/DESIGN.md §3), OpenCollab's own estimator.

Per message: 64 tokens of overhead, plus a third of a token per ASCII character and one token per
wide (CJK or other non-ASCII) character, over `serialize(message)`.
"""

from __future__ import annotations

from inspector.model import Message

from .base import MESSAGE_OVERHEAD, serialize

ASCII_CHARS_PER_TOKEN = 3


def heuristic_tokens(text: str) -> int:
    """Tokens of `text`: ASCII characters / 3 (rounded up) plus one per non-ASCII character."""
    if text.isascii():
        return -(-len(text) // ASCII_CHARS_PER_TOKEN)
    # the ASCII characters, counted at C speed (lone surrogates are dropped too: wide, as before)
    ascii_count = len(text.encode("ascii", "ignore"))
    wide = len(text) - ascii_count
    return -(-ascii_count // ASCII_CHARS_PER_TOKEN) + wide


class HeuristicEstimator:
    """64 per message + characters/3 for ASCII + 1 per wide character."""

    name = "heuristic"

    def text(self, text: str) -> int:
        return heuristic_tokens(text)

    def message(self, message: Message) -> int:
        return self.serialized(serialize(message))

    @staticmethod
    def serialized(text: str) -> int:
        """`message` of the message whose `serialize` is `text` (for a caller that has it)."""
        return MESSAGE_OVERHEAD + heuristic_tokens(text)
