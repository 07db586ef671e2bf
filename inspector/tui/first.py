"""What the screen says of a session before its first request is shaped (issue 29).

The columns of the request shown first wait for the calibration pass up to it (on a 104 MB
session, 0.2-0.3 s of CPU after the load), but the request's own report needs none: the gauge says
it, and the share of the window it fills, from the moment the replay is open (a replay's settings,
its window and policy, need no pass either).
"""

from __future__ import annotations

from inspector.model import Transcript


def waiting_status(transcript: Transcript, k: int, window: int | None, name: str) -> str:
    """The gauge's line while request k is calibrated and shaped: "request 4,710/4,710: 76,350
    tokens reported (38% of 200,000) · loading session.jsonl: calibrating 10,769 messages…". The
    figure comes first, so that a narrow gauge still shows it; a request with no report says only
    what is loading."""
    requests = transcript.requests
    total = len(requests)
    usage = requests[k - 1].usage if 1 <= k <= total else None
    said = f"request {k:,}/{total:,}"
    if usage is not None:
        said += f": {usage.context:,} tokens reported"
        if window:
            said += f" ({usage.context / window:.0%} of {window:,})"
    return f"{said} · loading {name}: calibrating {len(transcript.messages):,} messages…"
