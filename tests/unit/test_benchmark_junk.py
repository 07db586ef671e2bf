"""The junk-memory benchmark (`benchmarks.junk`), smaller, in CI: a session with 200,000 junk lines
is reported at about the memory of the same session without them (all of them used to be kept:
700 MB at 1,000,000 lines). Peak resident sizes are the child's own, so the ratio is steady."""

from __future__ import annotations

from benchmarks.junk import TARGET_MB, bench_junk


def test_junk_lines_cost_about_no_memory() -> None:
    (fig,) = bench_junk(200_000)
    assert fig.detail["load_issues_total"] == 200_000 and fig.detail["load_issues_kept"] == 100
    assert fig.passed and fig.measured < TARGET_MB
    assert fig.ratio is not None and fig.ratio < 1.5, (fig.measured, fig.floor)
    assert fig.detail["json_bytes"] < 100_000  # the report holds the sample, not 200,000 issues
