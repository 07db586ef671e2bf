"""Recorded events on the request axis: API errors and fresh contexts as their own sparkline marks,
and the gauge's words for them at the requests around them (the provider's text made visible)."""

from __future__ import annotations

from typing import Any

from textual.content import Content

from inspector.formats import load
from inspector.model import (
    EventKind,
    Message,
    RecordedEvent,
    Request,
    Role,
    Segment,
    TextBlock,
    Transcript,
    Usage,
)
from inspector.samples import SCENARIOS
from inspector.tui import InspectorApp
from inspector.tui.app import MainScreen
from inspector.tui.viewmodel import session_view
from inspector.tui.widgets.sparkline import legend
from tests.conftest import settle as shared_settle

SIZE = (160, 48)
HOSTILE = "529 [bold red]x[/] \x1b]52;c;SGVsbG8=\x07 overloaded"
HOSTILE_SHOWN = "529 [bold red]x[/] \\x1b]52;c;SGVsbG8=\\x07 overloaded"


def subtitle_of(main: MainScreen) -> str:
    """The gauge's subtitle as shown (Textual keeps it as markup, the transcript's escaped)."""
    return Content.from_markup(str(main.gauge.border_subtitle)).plain


def events_transcript() -> Transcript:
    """Three requests: an API error after request 1 (no request), then request 2; after it the
    harness began a fresh context (plan mode's "clear context"), in which request 3 is made."""

    def msg(mid: str, role: Role, text: str) -> Message:
        return Message(id=mid, role=role, blocks=(TextBlock(text=text),))

    messages = [
        msg("u1", Role.USER, "Fix the test."),
        msg("a1", Role.ASSISTANT, "Looking."),
        msg("u2", Role.USER, "Go on."),
        msg("a2", Role.ASSISTANT, "Here is the plan."),
        msg("u3", Role.USER, "Implement the plan: fix the test."),
        msg("a3", Role.ASSISTANT, "Done."),
    ]
    return Transcript(
        format="test",
        path="events.jsonl",
        messages=messages,
        segments=[
            Segment(index=0, message_ids=("u1", "a1", "u2", "a2")),
            Segment(index=1, message_ids=("u3", "a3"), started_by=1),
        ],
        requests=[
            Request(index=1, response_id="a1", usage=Usage(input=1_200, output=10), ledger_len=1),
            Request(index=2, response_id="a2", usage=Usage(input=1_260, output=10), ledger_len=3),
            Request(index=3, response_id="a3", segment=1, usage=Usage(input=1_100, output=5), ledger_len=1),
        ],
        events=[
            RecordedEvent(kind=EventKind.API_ERROR, detail=HOSTILE, after_request=1, line=3),
            RecordedEvent(
                kind=EventKind.CONTEXT_CLEARED, style="new_root", after_request=2, segment=1, line=6
            ),
        ],
    )


async def settle(pilot: Any, request: int, scanned: bool = True) -> MainScreen:
    main: MainScreen = await shared_settle(pilot, request, scanned=scanned)
    return main


def test_session_view_sorts_the_events_by_kind() -> None:
    t = events_transcript()
    compaction = RecordedEvent(kind=EventKind.COMPACTION, after_request=1, line=4)
    early = RecordedEvent(kind=EventKind.API_ERROR, detail="x", after_request=0, line=1)
    session = session_view((10, 20, 30), [*t.events, compaction, early])
    # a fresh context and a compaction both begin a segment (n/N stop after them); the first has
    # its own mark; an error before request 1 has no bar to be marked under
    assert (session.recorded, session.cleared, session.errors) == (
        frozenset({1, 2}),
        frozenset({2}),
        frozenset({1}),
    )
    assert legend(session) == "▲ now ◆ recorded • simulated ◇ cleared × API error"
    assert legend(session_view((10,), [compaction])) == legend(None) == "▲ now ◆ recorded • simulated"


async def test_api_error_and_fresh_context_marks_and_the_gauge_words() -> None:
    app = InspectorApp(events_transcript(), window=100_000, start="first")
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, 1)
        subtitle = subtitle_of(main)
        assert f'× an API error after this request: "{HOSTILE_SHOWN}"' in subtitle
        assert "\x1b" not in subtitle and "\x07" not in subtitle
        # one mark per request: the error under request 1 (drawn over ▲), the fresh context under 2
        assert main.sparkline.marks_text().split() == ["×", "◇"]
        assert str(main.sparkline.border_subtitle) == "▲ now ◆ recorded • simulated ◇ cleared × API error"

        await pilot.press("right_square_bracket")
        main = await settle(pilot, 2)
        subtitle = subtitle_of(main)
        assert subtitle.startswith(f'× an API error before this request: "{HOSTILE_SHOWN}"')
        assert "after this request" not in subtitle
        assert main.sparkline.marks_text().split() == ["×", "◇"]

        await pilot.press("right_square_bracket")
        main = await settle(pilot, 3)
        subtitle = subtitle_of(main)
        assert subtitle.startswith(
            "◇ the harness began a fresh context (nothing summarized) right before this request"
        )
        assert "API error" not in subtitle
        assert main.sparkline.marks_text().split() == ["×", "◇", "▲"]

        # the fresh context begins a segment: `N` stops at the request it came before
        await pilot.press("g")
        await pilot.pause(0.1)
        await pilot.press("1", "enter")
        await settle(pilot, 1)
        await pilot.press("n")
        await settle(pilot, 3)


async def test_the_overflow_scenario_marks_its_two_rejected_calls_after_request_5() -> None:
    info = SCENARIOS["overflow-stop"]
    app = InspectorApp(load(info.path), policy=info.policy, window=info.window)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, 5)
        assert main.total == 5
        marks = main.sparkline.marks_text()
        assert marks.split() == ["×"] and marks.rstrip().endswith("×")
        assert main.sparkline.request_at(len(marks.rstrip()) - 1) == 5
        assert '× 2 API errors after this request: "Prompt is too long"' in subtitle_of(main)
