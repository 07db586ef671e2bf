"""What a check returns (`Finding`), the knobs checks share (`Settings`), and small wording helpers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, get_args

from msgspec import Struct

from inspector.model.sanitize import one_line

Severity = Literal["info", "warning", "error"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
"""Lowest first: info, warning, error."""
SEVERITY_RANK: dict[str, int] = {s: i for i, s in enumerate(SEVERITIES)}


class Finding(Struct, frozen=True):
    """One symptom, pointed at: what kind, how bad, at which request, which messages, and why.

    `request` is 1-based like everywhere in the inspector (0 only for a transcript with no
    requests). `explanation` is one line with the numbers. `layer` names what caused it where
    that is known (a shaping layer's name, or `recorded:<what>` for something the harness
    itself recorded); `tokens` is the cost the finding is about, where it has one.
    Transcript text quoted in `explanation` (paths, commands) is untrusted: it is cut to one
    line but not escaped; `findings_text` escapes it for a terminal.
    """

    kind: str
    severity: Severity
    request: int
    message_ids: tuple[str, ...]
    explanation: str
    layer: str | None = None
    tokens: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "severity": self.severity,
            "request": self.request,
            "message_ids": list(self.message_ids),
            "explanation": self.explanation,
            "layer": self.layer,
            "tokens": self.tokens,
        }


class Settings(Struct, frozen=True):
    """The thresholds checks use; the defaults are the issue's.

    - `storm_span`: two compactions at most this many requests apart belong to one storm (3);
    - `loop_repeats` / `loop_span`: the same call at least this many times within this many
      requests is a loop (3 within 10);
    - `breaker`: failed compactions in a row that trip a circuit breaker (Claude Code: 3).
    """

    storm_span: int = 3
    loop_repeats: int = 3
    loop_span: int = 10
    breaker: int = 3

    def __post_init__(self) -> None:
        for name in ("storm_span", "loop_repeats", "loop_span", "breaker"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


def sort_key(f: Finding) -> tuple[int, int, str, str]:
    """By request, then the most severe first, then kind, then text: a stable, readable order."""
    return (f.request, -SEVERITY_RANK[f.severity], f.kind, f.explanation)


def quote(text: str, width: int = 60) -> str:
    """Transcript text for an explanation: its first line, whitespace squeezed, cut to `width`."""
    return one_line(" ".join(text.split()), width)


def requests_text(requests: Sequence[int], limit: int = 8) -> str:
    """ "12, 14, 15 and 18"; long lists end with "... (N in all)"."""
    shown = [str(r) for r in requests[:limit]]
    if len(requests) > limit:
        return f"{', '.join(shown)}, ... ({len(requests)} in all)"
    if len(shown) <= 1:
        return "".join(shown)
    return f"{', '.join(shown[:-1])} and {shown[-1]}"


def span_text(first: int, last: int) -> str:
    """ "request 12" or "requests 12–18"."""
    return f"request {first}" if first == last else f"requests {first}–{last}"


def times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def unique(ids: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(ids))
