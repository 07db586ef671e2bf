"""Context windows of known models, for transcripts that do not state their own.

The models table (window and maximum output per model family and generation, with sources) is
`inspector.shaping.rules.MODELS`; this module asks it.
"""

from __future__ import annotations


def model_window(model: str | None, observed_max: int = 0) -> int | None:
    """The window of `model`, or None when unknown (`inspector.shaping.rules.model_window`).

    Claude models have 200,000 tokens unless the id carries `[1m]` or the session itself held
    more than 200,000 (then it ran with the 1,000,000 window, whose id the transcript omits).
    """
    from inspector.shaping.rules import model_window as from_table

    return from_table(model, observed_max)
