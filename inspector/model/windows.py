"""Context windows of known models, for transcripts that do not state their own."""

from __future__ import annotations

CLAUDE_WINDOW = 200_000
CLAUDE_LONG_WINDOW = 1_000_000

# (prefix of a lower-cased model id, window); first match wins, so longer prefixes come first
_PREFIXES: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-5", 400_000),
    ("codex", 400_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("gemini-", 1_048_576),
    ("claude-", CLAUDE_WINDOW),
)


def model_window(model: str | None, observed_max: int = 0) -> int | None:
    """The window of `model`, or None when unknown.

    Claude models have 200,000 tokens unless the id carries `[1m]` or the session itself held
    more than 200,000 (then it ran with the 1,000,000 window, whose id the transcript omits).
    """
    if not model:
        return None
    name = model.lower().split("/")[-1]
    for prefix, window in _PREFIXES:
        if name.startswith(prefix):
            if prefix == "claude-" and ("[1m]" in name or observed_max > CLAUDE_WINDOW):
                return CLAUDE_LONG_WINDOW
            return max(window, observed_max) if observed_max > window else window
    return None
