"""The app on a session whose compaction is of the old style (issue 23): both segments on the
sparkline, the recorded compaction where the file has it, and every request reachable."""

from __future__ import annotations

import pytest

from inspector.formats import load
from inspector.tui import InspectorApp
from inspector.tui.widgets.sparkline import buckets
from tests.app.test_tui_app import SIZE, settle
from tests.conftest import corpus_file


@pytest.mark.slow
async def test_an_old_style_compaction_shows_both_segments() -> None:
    transcript = load(corpus_file("claude-code/conneroisu-b9712494.jsonl"))
    assert len(transcript.requests) == 192
    app = InspectorApp(transcript)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, 192, scanned=True)
        assert main.gauge.plain_lines()[0].startswith("request 192/192")
        marks = main.sparkline.marks_text()
        assert marks.count("◆") == 1
        first, last = buckets(192, len(marks))[marks.index("◆")]
        assert first <= 86 <= last  # the compaction after request 86
        # the first segment is there: stepping reaches request 1, before the compaction
        await pilot.press("g")
        await pilot.pause(0.1)
        await pilot.press("1", "enter")
        main = await settle(pilot, 1)
        assert main.gauge.plain_lines()[0].startswith("request 1/192 · context 23,976")
        await pilot.press("g")
        await pilot.pause(0.1)
        await pilot.press(*"87", "enter")
        main = await settle(pilot, 87)
        assert main.view is not None and main.view.rows[0] is not None and main.view.rows[0].is_summary
        assert "compacted" in str(main.gauge.border_subtitle)
