"""The app, driven with Pilot at 160x48: what the widgets show after each key."""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from textual.worker import Worker

from inspector.formats import load
from inspector.model import Message, Request, Role, Segment, TextBlock, Transcript, Usage
from inspector.replay import Replay
from inspector.samples import SAMPLES, sample_path
from inspector.shaping import PRESETS
from inspector.tokens.harness import harness_tokens
from inspector.tui import InspectorApp
from inspector.tui.app import SCAN_TAIL_S, SCAN_YIELD_S, MainScreen, Pacer
from inspector.tui.viewmodel import CellState
from inspector.tui.widgets.sparkline import buckets
from tests.conftest import settle as shared_settle

SIZE = (160, 48)
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
FA812 = CORPUS / "claude-code" / "spotter-fa812bfe" / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"
MARKUP = "[bold red]x[/]"
OSC52 = "\x1b]52;c;SGVsbG8=\x07"
OSC52_SHOWN = "\\x1b]52;c;SGVsbG8=\\x07"


def sample(name: str) -> tuple[Transcript, int]:
    path = sample_path(name)
    if not path.exists():
        pytest.skip(f"sample {name} not generated yet")
    return load(path), SAMPLES[name].window


async def settle(
    pilot: Any, request: int | None = None, scanned: bool = False, harness: bool = False
) -> MainScreen:
    """Wait (bounded) until the request is shown, its detail is ready and, if asked, the scan is
    done and the harness's own estimate is on the gauge (`harness`: the first columns are drawn
    without it, and it comes once their frames are, `HarnessReady`)."""
    ready = (lambda view: view.harness is not None) if harness else None
    main: MainScreen = await shared_settle(pilot, request, scanned=scanned, detail=True, ready=ready)
    return main


def screen_text(app: InspectorApp) -> str:
    """Everything on the terminal, as text (the compositor's rendered lines)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def header_of(main: MainScreen, name: str) -> str:
    assert main.view is not None
    index = [c.name for c in main.view.columns].index(name)
    return main.columns.column_header_text(index)


async def test_first_paint_shows_loading_then_the_last_request() -> None:
    transcript, window = sample("short-session")
    app = InspectorApp(transcript, policy="opencollab", window=window)
    async with app.run_test(size=SIZE) as pilot:
        assert "loading short-session.jsonl" in app.main.gauge.plain_lines()[0] or app.main.view is not None
        main = await settle(pilot)
        assert main.gauge.plain_lines()[0].startswith(
            f"request {len(transcript.requests)}/{len(transcript.requests)}"
        )
        text = screen_text(app)
        assert "raw ledger" in text
        assert "auto compact" in text


async def test_tool_output_clear_header_and_cleared_row() -> None:
    transcript, window = sample("long-session")
    replay = Replay.open(transcript, policy="opencollab", window=window)
    last = len(replay)
    expected = replay.step(last - 1).result.layer("tool_output_clear")
    assert expected.fired and expected.cleared

    app = InspectorApp(transcript, policy="opencollab", window=window)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, last)
        await pilot.press("left_square_bracket")
        main = await settle(pilot, last - 1)
        header = header_of(main, "tool_output_clear")
        assert header.startswith("tool output clear")
        assert "fired" in header
        assert f"{expected.tokens_before:,} → {expected.tokens_after:,}" in header
        assert f"{expected.cleared:,} cleared" in header

        assert main.view is not None
        col = [c.name for c in main.view.columns].index("tool_output_clear")
        cleared = [r for r in range(len(main.view.rows)) if main.view.cell(col, r).state is CellState.CLEARED]
        assert len(cleared) == expected.cleared
        cell = main.columns.column_text(col, cleared[0])
        assert cell.startswith("○"), cell
        assert "[Old t" in cell, cell
        # Later columns keep the cleared version; the raw column still shows the original.
        assert "[Old tool" not in main.columns.column_text(0, cleared[0])

        # Wide enough, the whole placeholder is on the row.
        await pilot.resize_terminal(400, 48)
        await pilot.pause(0.1)
        assert "[Old tool result content cleared]" in main.columns.column_text(col, cleared[0])

        # The detail pane tells the fate in words, with the numbers.
        main.columns.select_row(cleared[0])
        await pilot.pause(0.2)
        for _ in range(100):
            if main.detail.detail is not None and main.detail.detail.row == cleared[0]:
                break
            await pilot.pause(0.02)
        assert "tool output clear: cleared" in main.detail.plain
        assert replay.explain(main.view.rows[cleared[0]].id, last - 1) in main.detail.plain  # type: ignore[union-attr]


@pytest.mark.slow
async def test_smaller_window_moves_lines_and_changes_layers() -> None:
    transcript, window = sample("long-session")
    assert window == 200_000
    app = InspectorApp(transcript, policy="opencollab", window=window)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot)
        before = "\n".join(main.gauge.plain_lines())
        assert "trigger 167,000" in before
        assert "target 125,250" in before
        assert "window 200,000" in before
        assert "reserve 180,000" in before
        assert "idle" in header_of(main, "old_history_snip")
        old_view = main.view

        await pilot.press("w")
        await pilot.pause(0.1)
        await pilot.press(*"100000", "enter")
        for _ in range(300):
            await pilot.pause(0.02)
            if main.view is not old_view and main.view is not None and main.view.window == 100_000:
                break
        main = await settle(pilot)
        after = "\n".join(main.gauge.plain_lines())
        assert "trigger 67,000" in after
        assert "trigger 167,000" not in after
        assert "target 50,250" in after
        assert "window 100,000" in after
        assert "window 100,000" in str(main.gauge.border_title)
        snip = header_of(main, "old_history_snip")
        assert "fired" in snip and "removed" in snip, snip
        assert main.view is not None and "old_history_snip" in main.view.fired


async def test_bracket_keys_and_goto_change_the_request() -> None:
    transcript, window = sample("short-session")
    total = len(transcript.requests)
    app = InspectorApp(transcript, policy="opencollab", window=window)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, total)
        await pilot.press("left_square_bracket")
        main = await settle(pilot, total - 1)
        assert main.gauge.plain_lines()[0].startswith(f"request {total - 1}/{total}")
        await pilot.press("left_square_bracket", "left_square_bracket")
        main = await settle(pilot, total - 3)
        await pilot.press("right_square_bracket")
        main = await settle(pilot, total - 2)
        assert main.gauge.plain_lines()[0].startswith(f"request {total - 2}/{total}")

        await pilot.press("g")
        await pilot.pause(0.1)
        await pilot.press("3", "enter")
        main = await settle(pilot, 3)
        assert main.gauge.plain_lines()[0].startswith(f"request 3/{total}")
        # 12 requests over the sparkline's columns: one ▲, under the middle of request 3's bar
        marks = main.sparkline.marks_text()
        assert marks.count("▲") == 1
        spans = [x for x in range(len(marks)) if main.sparkline.request_at(x) == 3]
        assert len(spans) > 1 and marks.index("▲") == spans[(len(spans) - 1) // 2]
        # Request 3 was made with the ledger as it stood then: fewer rows than at the end.
        assert main.view is not None
        assert len(main.view.rows) == transcript.requests[2].ledger_len

        # A request that does not exist is refused in the dialog, and nothing changes.
        await pilot.press("g")
        await pilot.pause(0.1)
        await pilot.press(*str(total + 5), "enter")
        await pilot.pause(0.1)
        assert app.screen.id == "goto"
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert main.request == 3


def test_the_pacer_keeps_to_its_share_of_a_core_resting_once_a_slice_is_worked() -> None:
    rests: list[float] = []
    pacer = Pacer(work_slice=0.002, share=0.5, max_rest=0.25, sleep=rests.append)
    for _ in range(100):
        pacer.worked(0.0001)  # a request's shaping: one rest per 20, not one per request
    assert len(rests) == 5
    assert sum(rests) == pytest.approx(0.01)  # half of a core: as long as it worked
    pacer.worked(0.0015)
    assert len(rests) == 5  # under a slice: no rest yet
    pacer.worked(3.0)
    assert rests[-1] == 0.25  # one long piece of work: a rest of at most max_rest
    assert pacer.owed == 0.0
    thirds: list[float] = []
    pacer = Pacer(work_slice=0.002, share=2 / 3, sleep=thirds.append)
    for _ in range(100):
        pacer.worked(0.0001)
    assert sum(thirds) == pytest.approx(0.005)  # two thirds: half as long as it worked
    with pytest.raises(ValueError):
        Pacer(share=0)


async def test_the_scan_rests_while_a_request_is_being_shown() -> None:
    transcript, window = sample("short-session")
    total = len(transcript.requests)
    app = InspectorApp(transcript, window=window)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, total)
        # the first request shown: the rest was cut to its frames once it was on screen
        shown_first = main.scan_rests_until
        assert shown_first <= time.monotonic() + SCAN_TAIL_S
        rests: list[float] = []
        shape = main.compute_step

        def spy(*args: Any, **kwargs: Any) -> Worker[None]:
            rests.append(main.scan_rests_until - time.monotonic())
            return shape(*args, **kwargs)

        main.compute_step = spy  # type: ignore[method-assign]
        await pilot.press("left_square_bracket")
        main = await settle(pilot, total - 1)
        # while the step was shaped the scan rested (at most SCAN_YIELD_S); once it was shown,
        # for its frames only
        assert len(rests) == 1 and SCAN_TAIL_S < rests[0] <= SCAN_YIELD_S
        assert shown_first < main.scan_rests_until <= time.monotonic() + SCAN_TAIL_S


async def test_search_finds_the_next_message() -> None:
    transcript, window = sample("short-session")
    app = InspectorApp(transcript, policy="opencollab", window=window)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot)
        assert main.view is not None
        start = main.columns.cursor_row
        query = "pytest"
        expected = next(
            r
            for r in range(start + 1, len(main.view.rows))
            if (m := main.view.rows[r]) is not None and query in (m.text + str(m.blocks)).lower()
        )
        await pilot.press("slash")
        await pilot.pause(0.1)
        await pilot.press(*query, "enter")
        for _ in range(200):
            await pilot.pause(0.02)
            if main.columns.cursor_row != start:
                break
        assert main.columns.cursor_row == expected
        # enter on an empty search bar repeats the last query: the next match.
        await pilot.press("slash")
        await pilot.pause(0.1)
        await pilot.press("enter")
        for _ in range(200):
            await pilot.pause(0.02)
            if main.columns.cursor_row != expected:
                break
        assert main.columns.cursor_row > expected


def tiny_transcript(path: str = "tiny.jsonl") -> Transcript:
    """Two requests; the first user message starts with an OSC 52 clipboard write, then markup."""
    messages = [
        Message(id="u1", role=Role.USER, blocks=(TextBlock(text=f"{OSC52}\nthen {MARKUP} end"),)),
        Message(id="a1", role=Role.ASSISTANT, blocks=(TextBlock(text=f"{MARKUP} reply"),)),
        Message(id="u2", role=Role.USER, blocks=(TextBlock(text="thanks"),)),
        Message(id="a2", role=Role.ASSISTANT, blocks=(TextBlock(text="done"),)),
    ]
    return Transcript(
        format="generic",
        path=path,
        messages=messages,
        segments=[Segment(index=0, message_ids=("u1", "a1", "u2", "a2"))],
        requests=[
            Request(index=1, response_id="a1", usage=Usage(input=1_200, output=10), ledger_len=1),
            Request(index=2, response_id="a2", usage=Usage(input=1_260, output=5), ledger_len=3),
        ],
    )


async def test_markup_and_osc52_are_shown_literally() -> None:
    app = InspectorApp(tiny_transcript(), window=100_000)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, 2)
        assert OSC52_SHOWN in main.columns.row_text(0)
        assert MARKUP in main.columns.row_text(1)
        screen = screen_text(app)
        assert MARKUP in screen
        assert OSC52_SHOWN in screen
        assert "\x1b" not in screen and "\x07" not in screen
        # The detail pane shows the selected message (row 0) whole: the escape, then the markup.
        detail = main.detail.plain
        assert OSC52_SHOWN in detail
        assert f"then {MARKUP} end" in detail
        assert "\x1b" not in detail and "\x07" not in detail
        assert OSC52_SHOWN in screen.split("content", 1)[1]

        await pilot.press("enter")
        await pilot.pause(0.2)
        modal = screen_text(app)
        assert MARKUP in modal
        assert OSC52_SHOWN in modal
        assert "\x1b" not in modal and "\x07" not in modal


@pytest.mark.slow
async def test_open_message_and_help() -> None:
    transcript, window = sample("short-session")
    app = InspectorApp(transcript, policy="opencollab", window=window)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot)
        await pilot.press("down", "down")
        await pilot.pause(0.2)
        assert main.columns.cursor_row == 2
        for _ in range(100):
            if main.detail.detail is not None and main.detail.detail.row == 2:
                break
            await pilot.pause(0.02)
        await pilot.press("enter")
        await pilot.pause(0.2)
        text = screen_text(app)
        assert f"fate at request {len(transcript.requests)}" in text
        assert "per-tool budget:" in text
        await pilot.press("escape")
        await pilot.pause(0.1)
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        text = screen_text(app)
        assert "previous / next request" in text
        await pilot.press("pagedown")
        await pilot.pause(0.2)
        assert "raw ledger | per-tool budget | tool output clear" in screen_text(app)


async def test_policy_choice_changes_the_columns() -> None:
    transcript, window = sample("short-session")
    app = InspectorApp(transcript, policy="opencollab", window=window)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot)
        assert main.view is not None and len(main.view.columns) == 5
        old = main.view
        await pilot.press("p")
        await pilot.pause(0.2)
        screen = screen_text(app)
        assert "no_history_compaction" in screen
        names = [p.name for p in PRESETS.values()]
        index = names.index("no_history_compaction")
        current = names.index("opencollab")
        await pilot.press(
            *(["down"] * (index - current) if index > current else ["up"] * (current - index)), "enter"
        )
        for _ in range(300):
            await pilot.pause(0.02)
            if main.view is not old:
                break
        main = await settle(pilot)
        assert main.view is not None
        assert [c.label for c in main.view.columns] == ["raw ledger", "per-tool budget"]
        assert "policy no_history_compaction" in str(main.gauge.border_title)


async def test_follow_jumps_to_the_newest_request() -> None:
    transcript, window = sample("short-session")
    total = len(transcript.requests)
    app = InspectorApp(transcript, policy="opencollab", window=window, start="first")
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, 1)
        await pilot.press("f")
        main = await settle(pilot, total)
        assert main.following
        assert "following newest" in str(main.gauge.border_subtitle)
        await pilot.press("left_square_bracket")
        main = await settle(pilot, total - 1)
        assert not main.following


async def test_next_event_stops_where_a_layer_starts_firing() -> None:
    transcript, window = sample("long-session")
    replay = Replay.open(transcript, policy="opencollab", window=window)
    starts = [
        k
        for k in range(1, len(replay) + 1)
        if set(replay.step(k).result.fired) - set(replay.step(k - 1).result.fired if k > 1 else ())
    ]
    app = InspectorApp(transcript, policy="opencollab", window=window, start="first")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, 1, scanned=True)
        await pilot.press("n")
        main = await settle(pilot, starts[0])
        await pilot.press("n")
        main = await settle(pilot, starts[1])
        assert "fired" in header_of(main, "tool_output_clear")
        await pilot.press("N")
        await settle(pilot, starts[0])


def corpus_file() -> Path:
    if not FA812.exists():
        pytest.skip(f"real transcript corpus not found at {CORPUS}")
    return FA812


@pytest.mark.slow
async def test_corpus_recorded_compaction_and_summary_row() -> None:
    transcript = load(corpus_file())
    compactions = [e for e in transcript.events if e.kind.value == "compaction"]
    assert compactions and compactions[0].after_request == 126
    app = InspectorApp(transcript, window=100_000)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, len(transcript.requests), scanned=True)
        marks = main.sparkline.marks_text()
        assert "◆" in marks
        x = marks.index("◆")
        assert main.sparkline.request_at(x) is not None
        first, last = buckets(len(transcript.requests), len(marks))[x]
        assert first <= 126 <= last

        await pilot.press("g")
        await pilot.pause(0.1)
        await pilot.press(*"127", "enter")
        main = await settle(pilot, 127)
        assert main.view is not None
        assert main.view.rows[0] is not None and main.view.rows[0].is_summary
        assert main.columns.column_text(0, 0).split()[2] == "sum"
        assert "compacted" in str(main.gauge.border_subtitle)
        await pilot.press("left_square_bracket")
        main = await settle(pilot, 126)
        assert main.view is not None and not main.view.rows[0].is_summary  # type: ignore[union-attr]


@pytest.mark.slow
async def test_the_gauge_shows_the_harness_estimate() -> None:
    """Claude Code's own figure before request 126 (166,742: under its trigger 167,000, so it did
    not compact yet) and before 127, after its compaction (the compacted ledger at characters/4:
    no report yet in the new segment), beside the calibrated one."""
    transcript = load(corpus_file())
    app = InspectorApp(transcript, window=200_000)
    async with app.run_test(size=(220, 48)) as pilot:
        await settle(pilot, len(transcript.requests))
        await pilot.press("g")
        await pilot.pause(0.1)
        await pilot.press(*"126", "enter")
        main = await settle(pilot, 126)
        subtitle = str(main.gauge.border_subtitle)
        assert "the harness estimated 166,742 ·" in subtitle
        assert "over its trigger" not in subtitle
        assert main.view is not None and main.view.harness == (166_742, False)
        replay = main.replay
        assert replay is not None
        assert replay.harness_estimate(126, wait=False) == (166_742, False)
        # the first request after the compaction: no report yet, the compacted ledger at chars/4
        await pilot.press("right_square_bracket")
        main = await settle(pilot, 127)
        assert main.view is not None and main.view.harness is not None
        assert main.view.harness[0] == harness_tokens(transcript, "claude_code")[126] < 10_000


async def test_an_opencollab_trace_is_shaped_as_opencollab_did() -> None:
    from inspector.samples import OPENCOLLAB_RUN_DIR as RUN_DIR

    app = InspectorApp(load(RUN_DIR))
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, 28, harness=True)
        assert str(main.columns.border_title).endswith("deciding with the harness's own estimate")
        assert header_of(main, "tool_output_clear").startswith("tool output clear")
        clear = [c for c in main.view.columns if c.name == "tool_output_clear"]  # type: ignore[union-attr]
        assert clear and clear[0].fired
        assert "the harness estimated 36,681, over its trigger" in str(main.gauge.border_subtitle)


async def test_empty_transcript_and_unknown_policy_say_so() -> None:
    empty = Transcript(format="generic", path="empty.jsonl")
    app = InspectorApp(empty)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(200):
            await pilot.pause(0.02)
            if "no requests" in app.main.gauge.plain_lines()[0]:
                break
        assert "this transcript has no requests" in app.main.gauge.plain_lines()[0]
        assert app.main.view is None
        assert gc.isenabled()  # no first columns to wait for: the collector is on again

    app = InspectorApp(tiny_transcript(), policy="no-such-policy")
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(200):
            await pilot.pause(0.02)
            if "cannot open" in app.main.gauge.plain_lines()[0]:
                break
        line = app.main.gauge.plain_lines()[0]
        assert line.startswith("cannot open: unknown policy 'no-such-policy'"), line
        assert gc.isenabled()


async def test_no_collection_before_the_first_columns_are_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector rests from the screen's mount until the first columns' frame is drawn (the
    collections after the first request's calibration came before that frame), then is on again.
    Held in the load (which runs with the collector on otherwise, unlike the shaping after it)."""
    from inspector.session import Session

    release = threading.Event()
    loading = threading.Event()
    load = Session.open

    def held_open(self: Session) -> Any:
        loading.set()
        assert release.wait(20)
        return load(self)

    monkeypatch.setattr(Session, "open", held_open)
    transcript, window = sample("short-session")
    app = InspectorApp(transcript, window=window)
    try:
        async with app.run_test(size=SIZE) as pilot:
            for _ in range(500):
                if loading.is_set():
                    break
                await pilot.pause(0.01)
            # the session is being loaded: no columns yet, no collection
            assert loading.is_set() and app.main.view is None and not gc.isenabled()
            release.set()
            main = await settle(pilot, len(transcript.requests))
            assert main.columns.view is main.view
            assert gc.isenabled() and not main.core.collector_paused
    finally:
        release.set()
        gc.enable()  # whatever happened, not left off for the tests after it


def test_a_request_drawn_over_several_columns_is_marked_once() -> None:
    from inspector.tui.widgets.sparkline import _mark_columns

    assert _mark_columns(buckets(1, 9)) == {4}
    assert _mark_columns(buckets(3, 10)) == {1, 4, 7}  # 3 columns each, the 10th left blank
    assert _mark_columns(buckets(20, 10)) == set(range(10))  # a column per bucket of requests
    assert _mark_columns([]) == set()
