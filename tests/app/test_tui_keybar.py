"""The key bar: the shown bindings on one line, clickable, redrawn (not remounted) as they change."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from rich.style import Style
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.pilot import Pilot
from textual.widgets import Static

from inspector.tui import InspectorApp
from inspector.tui.widgets import KeyBar
from tests.app.test_tui_app import SIZE, sample, settle


class Keys(App[None]):
    BINDINGS = [
        Binding("a", "alpha", "Alpha", tooltip="the first"),
        Binding("b", "beta", "Beta"),
        Binding("c", "gamma", "Gamma", show=False),
        Binding("d", "alpha", "Alpha again"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.ran: list[str] = []
        self.beta_on = False

    def compose(self) -> ComposeResult:
        yield Static("body")
        yield KeyBar()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "beta":
            return True if self.beta_on else None  # shown, disabled
        return True

    def action_alpha(self) -> None:
        self.ran.append("alpha")

    def action_beta(self) -> None:
        self.ran.append("beta")


def line_of(bar: KeyBar) -> str:
    return bar.render().plain


@asynccontextmanager
async def keys_app(width: int = 80) -> AsyncIterator[tuple[Keys, Pilot[None], KeyBar]]:
    """The app above on a screen `width` cells wide, settled: (app, pilot, its key bar)."""
    app = Keys()
    async with app.run_test(size=(width, 6)) as pilot:
        await pilot.pause()
        yield app, pilot, app.query_one(KeyBar)


async def test_the_bar_draws_the_shown_keys_and_the_palette_at_the_right_end() -> None:
    async with keys_app() as (_app, _pilot, bar):
        line = line_of(bar)
        # one key per action, the hidden one left out, the palette's last, at the right end
        assert line.startswith(" a Alpha  b Beta ")
        assert "Gamma" not in line and "Alpha again" not in line
        assert line.endswith("▏^p palette ")
        assert len(line) == 80
        assert [s.key for s in bar.spans] == ["a", "b", "ctrl+p"]
        assert bar.spans[-1].end == 80
        assert [s.enabled for s in bar.spans] == [True, False, True]
        # the disabled key is drawn dim, the enabled one is not
        text = bar.render()
        styles = {text.plain[span.start : span.end]: span.style for span in text.spans}
        disabled, enabled = styles[" b "], styles[" a "]
        assert isinstance(disabled, Style) and isinstance(enabled, Style)
        assert disabled.dim and not enabled.dim


async def test_on_a_narrow_screen_the_keys_are_cut_and_the_palette_stays_at_the_right_end() -> None:
    async with keys_app(24) as (_app, _pilot, bar):
        line = line_of(bar)
        # a key that does not fit whole is left out (never drawn cut in half)
        assert line == " a Alpha    ▏^p palette "
        assert [(s.key, s.start, s.end) for s in bar.spans] == [("a", 0, 9), ("ctrl+p", 13, 24)]
        assert bar.key_at(10) is None
        assert bar.key_at(12) is None  # the rule before the palette's key


async def test_a_click_presses_an_enabled_key_and_not_a_disabled_one() -> None:
    async with keys_app() as (app, pilot, bar):
        a, b = bar.spans[0], bar.spans[1]
        await pilot.click(KeyBar, offset=(a.start + 1, 0))
        await pilot.click(KeyBar, offset=(b.start + 1, 0))
        await pilot.pause()
        assert app.ran == ["alpha"]
        # enabled now: the bindings changed, and the bar is redrawn with it
        app.beta_on = True
        app.refresh_bindings()
        await pilot.pause()
        assert [s.enabled for s in bar.spans] == [True, True, True]
        await pilot.click(KeyBar, offset=(b.start + 1, 0))
        await pilot.pause()
        assert app.ran == ["alpha", "beta"]


async def test_hovering_a_key_gives_its_tooltip() -> None:
    async with keys_app() as (_app, pilot, bar):
        await pilot.hover(KeyBar, offset=(bar.spans[0].start + 1, 0))
        await pilot.pause()
        assert bar.hovered == "a" and bar.tooltip == "the first"
        await pilot.hover(KeyBar, offset=(bar.spans[1].start + 1, 0))
        await pilot.pause()
        assert bar.hovered == "b" and bar.tooltip == "Beta"


async def test_clicking_prev_req_in_the_app_steps_back() -> None:
    transcript, window = sample("short-session")
    total = len(transcript.requests)
    app = InspectorApp(transcript, window=window)
    async with app.run_test(size=SIZE) as pilot:
        main = await settle(pilot, total)
        bar = main.query_one(KeyBar)
        assert "[ Prev req  ] Next req" in line_of(bar)
        prev = next(s for s in bar.spans if s.key == "left_square_bracket")
        await pilot.click(KeyBar, offset=(prev.start + 1, 0))
        main = await settle(pilot, total - 1)
        assert main.view is not None and main.view.index == total - 1
