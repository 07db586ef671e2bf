"""The what-if lab (l): change the window and parameters, replay, save as a policy file; and the
screen exported as SVG (e)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Switch

from inspector.formats import load
from inspector.samples import sample_path
from inspector.shaping import load_policy
from inspector.tui import InspectorApp
from inspector.tui.app import MainScreen
from inspector.tui.lab import LabScreen, policy_toml
from tests.conftest import settle as shared_settle

SIZE = (160, 48)


def make_app() -> InspectorApp:
    path = sample_path("long-session")
    if not path.exists():
        pytest.skip("sample long-session not generated yet")
    app = InspectorApp(load(path), policy="opencollab", window=200_000)
    app.animation_level = "none"
    return app


async def settled(pilot: Any, test: Any = None) -> MainScreen:
    main: MainScreen = await shared_settle(pilot, ready=test)
    return main


async def open_lab(pilot: Any) -> LabScreen:
    await pilot.press("l")
    await pilot.pause()
    lab = pilot.app.screen
    assert isinstance(lab, LabScreen)
    return lab


@pytest.mark.slow
async def test_what_if_window_moves_the_gauge_lines_and_changes_the_columns() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        main = await settled(pilot)
        assert main.view is not None
        before_lines = "\n".join(main.gauge.plain_lines())
        before_sent = main.view.sent
        assert "trigger 167,000" in before_lines
        lab = await open_lab(pilot)
        lab.query_one("#lab-window", Input).value = "400k"
        lab.query_one("#layer-tool_output_clear", Switch).value = False
        await pilot.press("enter")
        main = await settled(pilot, lambda v: v.window == 400_000)
        assert main.view is not None and main.replay is not None
        after_lines = "\n".join(main.gauge.plain_lines())
        assert "trigger 167,000" not in after_lines
        assert f"{main.replay.budget.trigger:,}" in after_lines
        assert main.replay.policy.name == "opencollab+what-if"
        assert "tool_output_clear" not in main.replay.policy.layers
        assert [c.name for c in main.view.columns] == [
            "raw",
            "per_tool_budget",
            "old_history_snip",
            "auto_compact",
        ]
        assert main.view.sent != before_sent


@pytest.mark.slow
async def test_what_if_save_writes_a_policy_that_loads_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        lab = await open_lab(pilot)
        assert lab.query_one("#lab-path", Input).value == "./context-policy.toml"
        lab.query_one("#lab-target", Input).value = "0.5"
        lab.query_one("#lab-results", Input).value = "7"
        lab.query_one("#lab-groups", Input).value = "3"
        lab.query_one("#lab-budget", Input).value = "20000"
        lab.query_one("#layer-old_history_snip", Switch).value = False
        await pilot.press("ctrl+s")
        await pilot.pause()
        saved = tmp_path / "context-policy.toml"
        assert saved.is_file() and lab.saved is not None
        expected = lab.build().policy
        loaded = load_policy(str(saved))
        assert loaded == expected
        assert (loaded.target_ratio, loaded.results_kept, loaded.groups_kept, loaded.tool_result_budget) == (
            0.5,
            7,
            3,
            20000,
        )
        assert "old_history_snip" not in loaded.layers
        # to another path the user typed
        lab.query_one("#lab-path", Input).value = str(tmp_path / "other.toml")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert load_policy(str(tmp_path / "other.toml")) == expected


@pytest.mark.parametrize("name", ["opencollab", "no_history_compaction", "claude-code", "opencode", "codex"])
def test_policy_toml_round_trips_every_preset(tmp_path: Path, name: str) -> None:
    policy = load_policy(name)
    path = tmp_path / "p.toml"
    path.write_text(policy_toml(policy), encoding="utf-8")
    assert load_policy(str(path)) == policy


async def test_bad_what_if_value_says_so_and_stays(tmp_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        lab = await open_lab(pilot)
        lab.query_one("#lab-target", Input).value = "2"
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is lab
        assert "target ratio" in str(lab.query_one("#lab-hint").render())


async def test_export_svg_writes_the_screen_in_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        main = await settled(pilot)
        assert main.view is not None
        k = main.view.index
        await pilot.press("e")
        await pilot.pause()
        svg = tmp_path / f"context-inspector-request-{k}.svg"
        assert svg.is_file()
        text = svg.read_text(encoding="utf-8")
        assert text.startswith("<svg")
        # the SVG writes spaces as &#160;
        assert f"request&#160;{k}/{k}" in text or f"request {k}/{k}" in text
