"""How far a context is from the lines that apply to it: the trigger, the blocking line, the window.

The first question a user opens the inspector with is "how close am I to compaction?". The answer
is a subtraction nobody should have to do by hand: `distances(context, ...)` gives, for each line
the policy draws, the tokens left before it (negative: over it), and the share of the window
those tokens are (of the trigger where the window is unknown). The app's header and gauge, the
`report --step` text and JSON, the findings and the live notifications all say it with
`gap_text` / `distance_text`, so the words are the same everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import Struct

LINE_ORDER = ("trigger", "blocking", "window")
"""The lines a distance is told to, in the order they are said."""


class Gap(Struct, frozen=True):
    """The distance from one context size to one line."""

    line: str
    """ "trigger", "blocking" or "window"."""
    value: int
    """Where the line is, in tokens."""
    context: int
    scale: int
    """What the percentage is of: the window when known, else the trigger."""
    scale_name: str = "window"
    """ "window" or "trigger": what `scale` is."""

    @property
    def left(self) -> int:
        """Tokens before the line (negative: over it; 0: at it)."""
        return self.value - self.context

    @property
    def share(self) -> float:
        """`left` as a fraction of `scale`."""
        return self.left / self.scale if self.scale else 0.0

    @property
    def over(self) -> bool:
        return self.left < 0

    def to_dict(self) -> dict[str, int | float | str]:
        return {
            "line": self.line,
            "value": self.value,
            "context": self.context,
            "left": self.left,
            "share_of": self.scale_name,
            "share": round(self.share, 6),
        }


def percent(share: float) -> str:
    """0.00063 -> "0.06%", 0.051 -> "5.1%" (two decimals under 1%, so a near miss is not 0.0%)."""
    value = abs(share) * 100
    return f"{value:.2f}%" if value < 1 else f"{value:.1f}%"


def distances(context: int, trigger: int, blocking: int | None, window: int | None) -> tuple[Gap, ...]:
    """The gaps from `context` to the trigger, the blocking line (when the policy has one) and the
    window (when known), in that order."""
    scale, name = (window, "window") if window else (trigger, "trigger")
    out = [Gap("trigger", trigger, context, scale, name)]
    if blocking is not None and blocking != trigger:
        out.append(Gap("blocking", blocking, context, scale, name))
    if window:
        out.append(Gap("window", window, context, scale, name))
    return tuple(out)


def lines_of(lines: Sequence[tuple[str, int]]) -> tuple[int | None, int | None]:
    """(blocking, window) from `Budget.lines()` pairs."""
    found = dict(lines)
    return found.get("blocking"), found.get("window")


def gap_text(gap: Gap, *, value: bool = True, share: bool = True) -> str:
    """ "126 to trigger 167,000 (0.06%)", "3,000 over trigger 167,000 (1.5%)", "at trigger 167,000"."""
    where = f"{gap.line} {gap.value:,}" if value else gap.line
    pct = f" ({percent(gap.share)})" if share else ""
    if gap.left == 0:
        return f"at {where}"
    if gap.over:
        return f"{-gap.left:,} over {where}{pct}"
    return f"{gap.left:,} to {where}{pct}"


def distance_variants(gaps: Sequence[Gap]) -> list[str]:
    """`distance_text`'s forms, longest first."""
    if not gaps:
        return [""]
    first, rest = gaps[0], gaps[1:]
    of = f" of {first.scale_name}"
    return [
        " · ".join([gap_text(first).replace("%)", f"%{of})"), *(gap_text(g, share=False) for g in rest)]),
        " · ".join([gap_text(first), *(gap_text(g, value=False, share=False) for g in rest)]),
        " · ".join([gap_text(first, value=False), *(gap_text(g, value=False, share=False) for g in rest)]),
        gap_text(first, value=False),
    ]


def distance_text(gaps: Sequence[Gap], *, width: int = 1_000) -> str:
    """Every gap in one line, the first (the trigger) in full: "126 to trigger 167,000 (0.06% of
    window) · 10,126 to blocking 177,000 · 33,126 to window", shorter when `width` is narrow."""
    variants = distance_variants(gaps)
    for text in variants:
        if len(text) <= width:
            return text
    return variants[-1]


__all__ = ["LINE_ORDER", "Gap", "distance_text", "distance_variants", "distances", "gap_text", "lines_of", "percent"]
