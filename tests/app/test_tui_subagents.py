"""Subagents in the app: listed under the session (`a`), opened on a main screen of their own, and
back (esc) to the session at the same request and the same selected message.

Real session: fa812bfe (Claude Code 2.1.39), whose Task call ran subagent a93ccab (Explore, haiku,
11 requests, 37 messages) written to `subagents/agent-a93ccab.jsonl`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import OptionList, Static

from inspector.formats import load
from inspector.model import ToolCallBlock, ToolResultBlock
from inspector.tui import InspectorApp
from inspector.tui.app import MainScreen
from inspector.tui.subagents import SubagentsScreen, subagent_label, subagent_links
from inspector.tui.widgets.keybar import KeyBar

SIZE = (160, 48)
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
FOLDER = CORPUS / "claude-code" / "spotter-fa812bfe"
FA812 = FOLDER / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"

pytestmark = pytest.mark.skipif(not FA812.exists(), reason="the corpus (../shared/corpus) is not here")


async def wait_for(pilot: Any, check: Any, what: str, limit: float = 20) -> None:
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)
    await pilot.pause()


def shown(main: MainScreen, request: int) -> bool:
    return (
        main.view is not None
        and main.view.index == request
        and main.columns.view is main.view
        and main.detail.detail is not None
        and main.detail.detail.request == request
    )


def test_the_task_call_and_its_result_are_linked_to_the_subagent() -> None:
    transcript = load(FA812)
    assert [s.agent_id for s in transcript.subagents] == ["a93ccab"]  # the compaction call is not one
    links = subagent_links(transcript)
    assert {ref.agent_id for ref in links.values()} == {"a93ccab"}
    messages = {m.id: m for m in transcript.messages}
    kinds = sorted(
        type(b).__name__
        for mid in links
        for b in messages[mid].blocks
        if isinstance(b, ToolCallBlock | ToolResultBlock)
    )
    assert kinds == ["ToolCallBlock", "ToolResultBlock"]
    call = next(b for mid in links for b in messages[mid].blocks if isinstance(b, ToolCallBlock))
    assert call.name in ("Task", "Agent")
    assert subagent_label(transcript.subagents[0]) == "a93ccab · 11 requests · 37 messages · subagents/ (2.1)"


async def test_a_subagent_opens_and_esc_comes_back_to_the_same_request_and_row() -> None:
    transcript = load(FA812)
    links = subagent_links(transcript)
    app = InspectorApp(transcript, start=5)
    app.animation_level = "none"
    async with app.run_test(size=SIZE) as pilot:
        parent = app.main
        await wait_for(pilot, lambda: shown(parent, 5), "request 5")
        view = parent.view
        assert view is not None
        # the row of the Task call's result: the message pane says it ran the subagent
        row = next(
            i for i in range(len(view.rows)) if (m := view.message_at(i)) is not None and m.id in links
        )
        parent.columns.select_row(row)
        await wait_for(
            pilot,
            lambda: parent.detail.detail is not None and parent.detail.detail.row == row,
            "the detail of the Task row",
        )
        assert str(parent.detail.border_subtitle) == "ran subagent a93ccab: a lists it"
        assert "a" in [s.key for s in parent.query_one(KeyBar).spans]
        selected = view.message_at(row)
        assert selected is not None

        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, SubagentsScreen), "the list of subagents")
        listing = app.screen
        options = listing.query_one(OptionList)
        assert options.option_count == 1 and options.highlighted == 0  # starts on the one this row ran
        assert "a93ccab · 11 requests · 37 messages" in str(options.get_option_at_index(0).prompt)

        await pilot.press("enter")
        await wait_for(
            pilot, lambda: app.main is not parent and shown(app.main, 11), "the subagent's last request"
        )
        child = app.main
        assert isinstance(app.screen, MainScreen) and app.screen is child
        assert child.total == 11 and child.transcript.path.endswith("agent-a93ccab.jsonl")
        assert "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl › subagent a93ccab · policy claude-code" in str(
            child.gauge.border_title
        )
        banner = child.query_one("#banner", Static)
        assert banner.has_class("-shown")
        assert str(banner.render()).startswith(
            "subagent a93ccab of fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl (esc: back to it, at request 5)"
        )
        assert "escape" in [s.key for s in child.query_one(KeyBar).spans]  # "esc Back"
        # the same machinery: step back, the gauge follows
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: shown(child, 10), "the subagent's request 10")

        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is parent, "back to the session")
        assert app.main is parent
        assert parent.view is not None and parent.view.index == 5 and parent.request == 5
        assert parent.columns.cursor_row == row
        assert parent.view.message_at(parent.columns.cursor_row) is selected
