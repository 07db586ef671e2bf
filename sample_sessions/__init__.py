"""Claude Code transcripts this project generates itself, for demos, tests and benchmarks.

The files are written by :mod:`sample_sessions.generate` (deterministic, seeded) and committed
next to this module; a test checks that they equal a fresh generation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["SAMPLES", "SAMPLES_DIR", "SampleInfo", "sample_path"]

SAMPLES_DIR: Path = Path(__file__).resolve().parent


@dataclass(frozen=True)
class SampleInfo:
    """One bundled sample transcript and how it is meant to be inspected."""

    name: str
    file: str
    title: str
    description: str
    window: int
    policy: str = "opencollab"

    @property
    def path(self) -> Path:
        """Absolute path of the transcript file."""
        return SAMPLES_DIR / self.file


SAMPLES: dict[str, SampleInfo] = {
    "long-session": SampleInfo(
        name="long-session",
        file="long-session.jsonl",
        title="Bug fix and new CLI option: 264 requests, no compaction",
        description=(
            "An engineer asks Claude Code to fix a crash on CSV exports that end with a blank line "
            "and to add a --currency option to a small Python tool, then to handle empty files, run "
            "the full suite and update the changelog. The session ran on a 1M-context model, so it "
            "was never compacted: the context climbs past 200,000 tokens to about 253,000 at the "
            "last request. Inspect it with a 200,000-token window to see what the opencollab "
            "pipeline would have cleared, at which request, and why."
        ),
        window=200_000,
        policy="opencollab",
    ),
    "short-session": SampleInfo(
        name="short-session",
        file="short-session.jsonl",
        title="One-file bug fix: 12 requests",
        description=(
            "A short Claude Code session: the engineer reports that amounts written with a trailing "
            "minus (12.50-) are rejected, Claude Code reproduces it, fixes the parser, adds a test "
            "and runs the full suite. The context stays small, so no layer fires; it is handy for "
            "a first look at the columns and for fast tests."
        ),
        window=200_000,
        policy="opencollab",
    ),
}


def sample_path(name: str = "long-session") -> Path:
    """Return the path of the bundled sample ``name``.

    Raises ``KeyError`` naming the known samples when ``name`` is not one of them.
    """
    try:
        info = SAMPLES[name]
    except KeyError:
        known = ", ".join(sorted(SAMPLES))
        raise KeyError(f"unknown sample {name!r}; known samples: {known}") from None
    return info.path
