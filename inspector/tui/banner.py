"""The first run's one-line banner: what the bundled sample is, and why this window.

`context-inspector --sample` (the README's first command) opens a sample against the window it
ships with (`inspector.samples.SampleInfo.window`), under its policy, not the window its model has:
the banner says so, and gives the `report` command that shows the same replay.
"""

from __future__ import annotations

import os

from inspector.samples import SAMPLES, SCENARIOS, SampleInfo


def sample_of(path: str) -> SampleInfo | None:
    """The bundled sample or scenario whose transcript `path` is, if it is one."""
    try:
        target = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    for info in (*SAMPLES.values(), *SCENARIOS.values()):
        if os.path.realpath(info.path) == target:
            return info
    return None


def sample_banner(path: str, policy: str, window: int | None) -> str | None:
    """ "sample long-session: its own 200,000-token window under opencollab, so shaping has work to
    do · Bug fix and new CLI option… · the same in a report: context-inspector report
    long-session.jsonl --policy opencollab --window 200000"; None for any other file."""
    info = sample_of(path)
    if info is None:
        return None
    name = os.path.basename(info.path)
    size = f"its own {window:,}-token window" if window else "an unknown window"
    window_arg = f" --window {window}" if window else ""
    return (
        f"sample {info.name}: {size} under {policy}, so shaping has work to do · {info.title} · "
        f"the same in a report: context-inspector report {name} --policy {policy}{window_arg}"
    )


__all__ = ["sample_banner", "sample_of"]
