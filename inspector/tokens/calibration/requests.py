"""What a transcript's requests and events tell calibration beyond their ledgers: which requests
not to learn from, the responses' reported outputs, the recorded clearings of tool output."""

from __future__ import annotations

from datetime import datetime

from inspector.model import EventKind, RecordedEvent, Request, Transcript

CACHE_LIFE_S = 300.0
"""Anthropic's prompt cache keeps a prefix 5 minutes after its last use (the provider's default)."""


def _seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def model_switched(before: Request, req: Request) -> bool:
    """`req` ran on another model than the request before (a Skill or a Task on another model)."""
    return req.model is not None and before.model is not None and req.model != before.model


def prefix_changed(before: Request, req: Request) -> bool:
    """`req` read nothing from the cache although the request before did, within the cache's life
    (`CACHE_LIFE_S`): the prompt's prefix changed (the system prompt or the tool schemas: an MCP
    server came or went, as after `/mcp` at patternstack-263940d8 request 25, 267 s after the one
    before). What the prefix now holds is not in the transcript."""
    u, b = req.usage, before.usage
    if u is None or b is None or u.cache_read or not b.cache_read:
        return False
    t, t0 = _seconds(req.timestamp), _seconds(before.timestamp)
    return t is not None and t0 is not None and 0 <= t - t0 < CACHE_LIFE_S


def _outputs(transcript: Transcript) -> dict[str, int]:
    return {
        rid: usage.output
        for r in transcript.requests
        if (rid := r.response_id) is not None and (usage := r.usage) is not None
    }


CLEARING_LAYERS = frozenset({"tool_output_clear"})
"""Layers whose recorded firing (an OpenCollab trace's context_shaping) names the tool results it
cleared: from the next request on, the harness sent placeholders for them, as after a Claude Code
microcompact."""


def _micro_events(transcript: Transcript) -> list[RecordedEvent]:
    """The recorded clearings of tool output, in request order: Claude Code's microcompacts and
    the clearing layers an OpenCollab trace records (it reports the usage of what it sent)."""
    return sorted(
        (
            e
            for e in transcript.events
            if e.cleared_tool_ids
            and (
                e.kind is EventKind.MICROCOMPACT
                or (e.kind is EventKind.LAYER_FIRED and e.layer in CLEARING_LAYERS)
            )
        ),
        key=lambda e: e.after_request,
    )
