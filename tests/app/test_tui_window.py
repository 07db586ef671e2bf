"""The app answers first: the distance to the trigger in the gauge, a recorded compaction opened
(`r`), what fills the window (`x`), the chart, small terminals (`v`, the key bar), Enter right
after a cursor move, the time and model, the first run's banner. Pilot: fa812bfe."""

from __future__ import annotations

from inspector.formats import load
from inspector.model import Transcript
from inspector.replay.composition import composition
from inspector.samples import SAMPLES, sample_path
from inspector.tui import InspectorApp
from inspector.tui.banner import sample_banner
from inspector.tui.screens import MessageScreen
from inspector.tui.widgets.keybar import KeyBar
from inspector.tui.window import CompactionScreen, CompositionScreen
from tests.app.test_tui_app import SIZE, screen_text, settle
from tests.conftest import FA812, corpus_file


def pilot_transcript() -> Transcript:
    corpus_file(str(FA812.relative_to(FA812.parents[2])))
    return load(str(FA812))


def long_session() -> InspectorApp:
    info = SAMPLES["long-session"]
    return InspectorApp(
        load(sample_path("long-session")), policy=info.policy, window=info.window, window_source="sample"
    )


async def test_the_gauge_says_126_to_the_trigger_at_request_126() -> None:
    app = InspectorApp(pilot_transcript(), start=126)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, 126, harness=True)  # the harness's figure comes after the columns
        lines = main.gauge.plain_lines()
        assert lines[0].startswith("request 126/157 · context 166,874")
        assert (
            lines[1]
            == "126 to trigger (0.06%) · 10,126 to blocking · 33,126 to window · harness: 258 to trigger"
        )
        # the request's time, the gap since the one before and the model lead the subtitle
        subtitle = str(main.gauge.border_subtitle)
        assert subtitle.startswith("2026-02-12 16:11:57 (+5s) · claude-opus-4-6")
    # at 80 columns the trigger's distance stays, shorter, and every line label keeps its name
    app = InspectorApp(pilot_transcript(), start=126)
    async with app.run_test(size=(80, 24)) as pilot:
        main = await settle(pilot, 126, harness=True)  # the shorter words: with the harness's part
        lines = main.gauge.plain_lines()
        assert lines[1].startswith("126 to trigger (0.06%)")
        labels = " ".join(lines[3:])
        for name in ("target", "trigger", "blocking", "reserve", "window"):
            assert name in labels, (name, labels)


async def test_stepping_onto_the_recorded_compaction_shows_what_it_took() -> None:
    app = InspectorApp(pilot_transcript(), start=126)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, 126)
        note = main.query_one("#compaction-note")
        assert not note.has_class("-shown")
        await pilot.press("r")  # nothing recorded right before 126: says why
        await pilot.pause()
        assert not isinstance(app.screen, CompactionScreen)
        await pilot.press("right_square_bracket")
        main = await settle(pilot, 127)
        assert note.has_class("-shown")
        text = screen_text(app)
        assert "◆ compacted after request 126" in text
        assert "301 messages → 1 · 166,874 → 32,015" in text
        # Claude Code does not protect the task (its summary carries it): no pinned source lost
        assert "no pinned source lost" in text and "lost: ⚑" not in text
        await pilot.press("r")
        await pilot.pause(0.2)
        screen = app.screen
        assert isinstance(screen, CompactionScreen)
        o = screen.opened
        assert [f.weight for f in o.folded[:3]] == [10_384, 9_790, 6_207]
        shown = screen_text(app)
        assert "before · request 126 · 301 messages · 166,874 tokens" in shown
        assert "after · request 127 · 1 message · 32,015 tokens" in shown
        assert "folded · 301 messages · 141,197 tokens, heaviest first" in shown
        assert "no pinned source was folded" in shown and "⚑ task" not in shown
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, CompactionScreen)


async def test_what_fills_the_window_adds_up_to_the_context() -> None:
    app = long_session()
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, 264)
        await pilot.press("x")
        for _ in range(100):
            await pilot.pause(0.02)
            if isinstance(app.screen, CompositionScreen):
                break
        screen = app.screen
        assert isinstance(screen, CompositionScreen)
        comp = screen.composition
        assert main.view is not None and comp.request == 264
        assert comp.context == main.view.context == 252_610 and comp.sent == main.view.sent
        assert main.replay is not None and comp == composition(main.replay.step(264))
        shown = screen_text(app)
        assert "raw ledger (what the harness held)" in shown and "sent (after the policy's shaping)" in shown
        assert "tool results · Read" in shown and "system prompt and tools" in shown
        assert f"used {comp.context:>9,}" in " ".join(shown.split("  ")) or f"{comp.context:,}" in shown


async def test_at_80x24_every_facet_is_reachable_and_help_and_quit_stay() -> None:
    app = InspectorApp(pilot_transcript(), start=127)
    async with app.run_test(size=(80, 24)) as pilot:
        main = await settle(pilot, 127)
        bar = main.query_one(KeyBar)
        keys = [s.key for s in bar.spans]
        assert "question_mark" in keys and "q" in keys and "v" in keys
        assert not main.detail.display or not main.detail.region.width  # hidden at first
        await pilot.press("v")  # the side panes
        await pilot.pause(0.1)
        assert main.panel == "side" and main.detail.region.width > 40 and main.pinned.region.width > 40
        text = screen_text(app)
        assert "◆ compacted after request 126" in text and "pinned sources" in text
        await pilot.press("v")  # the chart
        await pilot.pause(0.1)
        assert main.panel == "chart" and main.sparkline.region.width >= 70
        assert "◆" in main.sparkline.marks_text()
        await pilot.press("v")  # back to the pipeline
        await pilot.pause(0.1)
        assert main.panel == "columns" and main.columns.region.width >= 70


async def test_resizing_keeps_the_selection() -> None:
    app = long_session()
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, 264)
        await pilot.press("home")
        for _ in range(5):
            await pilot.press("down")
        await pilot.pause(0.2)
        row = main.columns.cursor_row
        assert row == 5
        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.3)
        assert main.columns.cursor_row == row
        await pilot.resize_terminal(200, 50)
        await pilot.pause(0.3)
        assert main.columns.cursor_row == row and main.view is not None and main.view.index == 264


async def test_enter_right_after_a_cursor_move_opens_that_message() -> None:
    app = long_session()
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, 264)
        await pilot.press("home")
        await pilot.pause(0.2)
        await pilot.press("down", "down", "enter")  # faster than the detail's delay
        await pilot.pause(0.1)
        screen = app.screen
        assert isinstance(screen, MessageScreen)
        assert main.view is not None
        message = main.view.message_at(2)
        assert message is not None and screen.detail.message_id == message.id and screen.detail.row == 2


async def test_the_first_run_banner_says_what_the_sample_is_and_why_this_window() -> None:
    app = long_session()
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, 264)
        banner = main.query_one("#banner")
        assert banner.has_class("-shown")
        text = screen_text(app).splitlines()[0]
        assert text.strip().startswith(
            "sample long-session: its own 200,000-token window under opencollab, so shaping has work to do"
        )
    said = sample_banner(str(sample_path("long-session")), "opencollab", 200_000)
    assert said is not None and said.endswith(
        "context-inspector report long-session.jsonl --policy opencollab --window 200000"
    )
    assert sample_banner(str(FA812), "claude-code", 200_000) is None


async def test_the_chart_draws_the_trigger_line_and_sent_beside_raw() -> None:
    app = long_session()
    async with app.run_test(size=(200, 50)) as pilot:
        main = await settle(pilot, 264, scanned=True)
        session = main.session
        assert session is not None and len(session.sent) == 264
        assert session.sent[263] == main.view.sent if main.view is not None else False
        plain = main.sparkline.render().plain.splitlines()
        assert any("┤167k" in line for line in plain) and any("┤200k" in line for line in plain)
        # the cursor's own row, under the marks: request 1 at the left, the ▲ at the newest (264)
        assert plain[-1].startswith("1 ") and plain[-1].rstrip().endswith("▲")
