"""Findings: the symptoms context shaping causes or hides, pointed at by request and message.

Debugging an agent starts from a symptom, not a message id. Each check here is a small function
over a replayed transcript that returns `Finding`s (kind, severity, 1-based request, message ids,
a one-line explanation with the numbers):

- `reread`: a file or command read again after its earlier result was cleared, with the tokens
  re-billed, attributed to the layer and policy (or the harness) that cleared it;
- `stop_reason`: finish reasons that contradict the content; turns that ended with calls never
  answered (`unanswered_call`);
- `orphans`: tool results without calls and calls without results, in a ledger or a sent view;
- `compaction_storm`: compactions (recorded or simulated) within a few requests of each other;
- `overflow`: "prompt too long" errors, the retry and whether the run stopped; failed
  compactions and the circuit breaker;
- `api_errors`: every other failed model call the harness recorded (overloaded, rate limits,
  connection errors): no request, placed after the request before it;
- `loops`: the same call with the same arguments repeated within a short span;
- `pressure`: requests sent above the blocking line or trigger, and the closest approach to the
  trigger that applies (with the distance to the blocking line and the window).

`find_all(replay)` runs them all (or those named) and returns the findings sorted by request.
Every request is shaped at most once, however many checks run (see `facts.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from inspector.model.sanitize import visible
from inspector.replay import Replay
from inspector.report.summary import plural

from .base import SEVERITIES, SEVERITY_RANK, Finding, Settings, Severity, sort_key
from .checks import CHECKS, Check, register
from .facts import Facts


class UnknownCheckError(ValueError):
    """A check name that is not in the registry (the message lists the known ones)."""


def select(names: Iterable[str] | None = None) -> list[Check]:
    """The registered checks called `names`, in registry order (all of them for None)."""
    if names is None:
        return list(CHECKS.values())
    wanted = list(dict.fromkeys(names))
    unknown = [n for n in wanted if n not in CHECKS]
    if unknown:
        raise UnknownCheckError(f"unknown check {unknown[0]!r} (known: {', '.join(CHECKS)})")
    return [c for name, c in CHECKS.items() if name in wanted]


def find_all(
    replay: Replay, checks: Iterable[str] | None = None, settings: Settings | None = None
) -> list[Finding]:
    """Run the checks (all, or those named) over a replay; findings sorted by request.

    Requests are shaped through `replay.step`, at most once each (not those `replay.quiet`
    knows no layer fires at), and only if a selected check needs the shaped views.
    """
    facts = Facts(replay, settings)
    found: list[Finding] = []
    for check in select(checks):
        found.extend(check.run(facts))
    return sorted(found, key=sort_key)


def findings_json(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    """The findings as JSON-ready dicts (kind, severity, request, message_ids, explanation, layer, tokens)."""
    return [f.to_dict() for f in findings]


def exit_code(findings: Sequence[Finding]) -> int:
    """0 when no finding has severity "error", 1 otherwise (for `context-inspector findings`)."""
    return 1 if any(f.severity == "error" for f in findings) else 0


def counts(findings: Sequence[Finding]) -> dict[str, int]:
    """How many findings of each severity, every severity present (0 when none)."""
    out: dict[str, int] = dict.fromkeys(SEVERITIES, 0)
    for f in findings:
        out[f.severity] += 1
    return out


def findings_text(findings: Sequence[Finding]) -> list[str]:
    """One plain line per finding, safe for a terminal (transcript text made visible), then a total.

    "request 212  warning  reread  re-read src/app.py at request 212 after ..."; the total says
    "1 finding: 0 errors, 1 warning, 0 info".
    """
    kind_width = max((len(f.kind) for f in findings), default=0)
    lines = [
        f"request {f.request:>5}  {f.severity:<7}  {f.kind:<{kind_width}}  {visible(f.explanation, newlines=False)}"
        for f in findings
    ]
    c = counts(findings)
    lines.append(
        f"{plural(len(findings), 'finding')}: {plural(c['error'], 'error')}, "
        f"{plural(c['warning'], 'warning')}, {c['info']:,} info"
    )
    return lines


__all__ = [
    "CHECKS",
    "SEVERITIES",
    "SEVERITY_RANK",
    "Check",
    "Facts",
    "Finding",
    "Settings",
    "Severity",
    "UnknownCheckError",
    "counts",
    "exit_code",
    "find_all",
    "findings_json",
    "findings_text",
    "register",
    "select",
]
