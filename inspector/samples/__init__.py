"""The sample sessions bundled with the app (package data), for demos, tests and benchmarks.

The files are written by the generators in `tools/samples/` (deterministic, seeded; not shipped
in the wheel) and committed next to this module; a test checks that they equal a fresh generation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "OPENCOLLAB_RUN_DIR",
    "SAMPLES",
    "SAMPLES_DIR",
    "SCENARIOS",
    "SCENARIOS_DIR",
    "SampleInfo",
    "sample_info",
    "sample_path",
]

SAMPLES_DIR: Path = Path(__file__).resolve().parent
SCENARIOS_DIR: Path = SAMPLES_DIR / "scenarios"
OPENCOLLAB_RUN_DIR: Path = SAMPLES_DIR / "opencollab-run"
"""The OpenCollab run folder (written by `tools.samples.opencollab`)."""


@dataclass(frozen=True)
class SampleInfo:
    """One bundled sample transcript and how it is meant to be inspected."""

    name: str
    file: str
    title: str
    description: str
    window: int
    policy: str = "opencollab"
    """A preset name, or the absolute path of a bundled policy file (`load_policy` takes either)."""
    compare_policy: str | None = None
    """For scenarios: the policy the lesson compares against (same forms as `policy`)."""

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


def _policy_file(name: str) -> str:
    """The absolute path of a policy file bundled with the scenarios, as `load_policy` takes it."""
    return str(SCENARIOS_DIR / name)


SCENARIOS: dict[str, SampleInfo] = {
    "budget-alone": SampleInfo(
        name="budget-alone",
        file="scenarios/budget-alone.jsonl",
        title="(a) The per-tool budget alone is enough: 9 requests",
        description=(
            "Claude Code reads a whole 37,000-character module and runs the full test suite verbosely, so "
            "two tool results are far longer than the 16,000-character per-tool budget. The budget cuts "
            "them to their head plus a marker, always, before anything else runs. The ledger climbs past "
            "the trigger, yet the view sent stays under it: no other layer ever fires."
        ),
        window=60_000,
    ),
    "clear-suffices": SampleInfo(
        name="clear-suffices",
        file="scenarios/clear-suffices.jsonl",
        title="(b) Tool output clear suffices under pressure: 16 requests",
        description=(
            "Claude Code reads module after module to find a bug, and the context climbs to the trigger. "
            "Past it, tool output clear keeps the 5 most recent results of re-runnable tools and empties "
            "the older ones; that alone brings the view back under the trigger. Snip and auto compact "
            "never have to run."
        ),
        window=60_000,
    ),
    "snip-needed": SampleInfo(
        name="snip-needed",
        file="scenarios/snip-needed.jsonl",
        title="(c) Snip is needed: 20 requests",
        description=(
            "Claude Code writes eleven new test modules; their content travels in the Write calls, which no "
            "clear can touch. Over the trigger, tool output clear helps for two requests, then is not enough. Old "
            "history snip then removes the oldest tool exchanges, whole, until the view is under the target."
        ),
        window=60_000,
    ),
    "compact-last-resort": SampleInfo(
        name="compact-last-resort",
        file="scenarios/compact-last-resort.jsonl",
        title="(d) Auto compact as the last resort, and a pinned task that survives it: 25 requests",
        description=(
            "Claude Code edits three modules, thinking before each call but writing no text, and signed "
            "reasoning cannot be split from its calls, so snip can remove almost nothing. Auto compact "
            "folds the longest unpinned stretch into one visible summary. The user's first message, the "
            "task, is pinned: it stays in the view, verbatim, through the compaction."
        ),
        window=60_000,
    ),
    "overflow-stop": SampleInfo(
        name="overflow-stop",
        file="scenarios/overflow-stop.jsonl",
        title="(e) A provider overflow: forced mode, one retry, a graceful stop: 5 requests",
        description=(
            "After a short investigation the user pastes a whole nightly CI log into one message, and the "
            "provider rejects the call after request 5 as too long: an API error, not a request. The harness "
            "recompacts in forced mode and retries once; the log itself is the newest message, which no layer "
            "removes, so the retry is rejected too and the run stops with its reason."
        ),
        window=60_000,
    ),
    "small-window": SampleInfo(
        name="small-window",
        file="scenarios/small-window.jsonl",
        title="(f) A small window scales the kept counts down to 2 and 2: 9 requests",
        description=(
            "A short fix inspected with a 35,500-token window: the trigger is 2,500 and the target 1,875, "
            "which affords only 2 maximum-size tool exchanges. Snip and auto compact keep the last 2 "
            "groups and tool output clear keeps 2 results, instead of 4 and 5. The fixed prompt overhead "
            "alone is over this trigger, so every layer works at every request."
        ),
        window=35_500,
    ),
    "compaction-storm": SampleInfo(
        name="compaction-storm",
        file="scenarios/compaction-storm.jsonl",
        title="(g) A compaction storm when the target sits at the trigger: 32 requests",
        description=(
            "Many small edits and new test modules make the context grow steadily past the trigger. A "
            "harness that compacts only to just under the trigger crosses it again a request or two later, "
            "and compacts again and again: a storm. With the default target, 75% of the trigger, the same "
            "session compacts twice, far apart."
        ),
        window=60_000,
        policy=_policy_file("target-at-trigger.toml"),
        compare_policy="opencollab",
    ),
    "eager-clear-cache": SampleInfo(
        name="eager-clear-cache",
        file="scenarios/eager-clear-cache.jsonl",
        title="(h) The eager clear's prompt-cache cost at low pressure: 23 requests",
        description=(
            "Claude Code walks through the code path of a CSV row, reading one module after another, far "
            "under the trigger. The default pipeline only appends, so the provider's prompt cache serves "
            "every earlier token. With the eager clear in front, every new read empties an old one: the "
            "prompt prefix is rewritten and everything after it is billed again."
        ),
        window=200_000,
        compare_policy=_policy_file("opencollab-eager.toml"),
    ),
}
"""Short scenario sessions for teaching, one phenomenon each (written by `tools.samples.scripted`).

Kept apart from `SAMPLES` (the two general-purpose samples); `sample_info` and `sample_path` find
both. The tour stops of each scenario are computed from its replay by `inspector.scenarios`.
"""


def sample_info(name: str) -> SampleInfo:
    """The bundled sample or scenario called ``name``.

    Raises ``KeyError`` naming the known samples and scenarios when there is none.
    """
    info = SAMPLES.get(name) or SCENARIOS.get(name)
    if info is None:
        raise KeyError(
            f"unknown sample {name!r}; known samples: {', '.join(sorted(SAMPLES))}; "
            f"scenarios: {', '.join(sorted(SCENARIOS))}"
        )
    return info


def sample_path(name: str = "long-session") -> Path:
    """Return the path of the bundled sample (or scenario) ``name``.

    Raises ``KeyError`` naming the known samples when ``name`` is not one of them.
    """
    try:
        info = sample_info(name)
    except KeyError as exc:
        raise KeyError(exc.args[0]) from None
    return info.path
