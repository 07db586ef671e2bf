"""The chosen theme is remembered: `t` writes it into the user's settings file (its `theme` line
only), the next start opens with it, and a file that cannot be written is said, never fatal."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.notifications import Notify

import inspector.settings as settings_module
from inspector.door.settings_file import with_theme
from inspector.formats import load
from inspector.samples import SAMPLES, sample_path
from inspector.settings import load_settings, settings_path, use
from inspector.tui import InspectorApp

SIZE = (120, 36)
USER_FILE = """\
# my settings, by hand
estimator = "tiktoken"   # calibrate starts from tiktoken
theme = "textual-dark"   # the dark one
session_folders = [
    "~/backups/claude",  # old laptop
]
"""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """XDG_CONFIG_HOME in tmp_path; the settings in force put back after the test."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(settings_module, "_current", settings_module._current)
    yield tmp_path / "config" / "context-inspector" / "settings.toml"


def sample_app(remember: bool = True) -> InspectorApp:
    """The app on a sample, as `run_app` opens it (remembering the theme) unless `remember` is off."""
    path = sample_path("short-session")
    if not path.exists():
        pytest.skip("sample short-session not generated yet")
    app = InspectorApp(
        load(path), policy="opencollab", window=SAMPLES["short-session"].window, remember=remember
    )
    app.animation_level = "none"
    return app


async def wait_for(pilot: Any, check: Any, what: str) -> None:
    deadline = time.monotonic() + 10
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)


def test_with_theme_changes_only_the_theme_line() -> None:
    edited = with_theme(USER_FILE, "textual-light")
    assert edited == USER_FILE.replace('theme = "textual-dark"', 'theme = "textual-light"')
    assert "# the dark one" in edited  # the comment after the value stays
    # no theme line: one is added after the user's keys, nothing else moves
    bare = '# mine\nestimator = "tiktoken"'
    assert with_theme(bare, "nord") == '# mine\nestimator = "tiktoken"\ntheme = "nord"\n'
    assert with_theme("", "nord") == 'theme = "nord"\n'
    # Windows line ends are kept
    assert with_theme('theme = "nord"\r\nestimator = "heuristic"\r\n', "dracula") == (
        'theme = "dracula"\r\nestimator = "heuristic"\r\n'
    )
    with pytest.raises(ValueError, match="unknown theme 'neon'"):
        with_theme(USER_FILE, "neon")
    with pytest.raises(ValueError, match="not valid TOML"):
        with_theme("theme = [", "nord")
    with pytest.raises(ValueError, match="could not be changed without touching the rest"):
        with_theme('theme = """textual-dark\n"""\n', "nord")


async def test_the_chosen_theme_is_written_and_the_next_start_opens_with_it(config: Path) -> None:
    config.parent.mkdir(parents=True)
    config.write_text(USER_FILE, encoding="utf-8")
    assert settings_path() == config
    use(load_settings())  # as the command line does at its start (then run_app, remembering)
    notes: list[Message] = []
    app = sample_app()
    assert app.theme == "textual-dark"
    async with app.run_test(size=SIZE, notifications=True, message_hook=notes.append) as pilot:
        await wait_for(pilot, lambda: app.main.view is not None, "the first request")
        await pilot.press("t")
        assert app.theme == "textual-light"
        await wait_for(pilot, lambda: 'theme = "textual-light"' in config.read_text(), "the file written")
        await wait_for(
            pilot,
            lambda: any(isinstance(m, Notify) and "remembered in" in m.notification.message for m in notes),
            "the notification",
        )
    # every other key and comment as the user wrote them
    assert config.read_text(encoding="utf-8") == USER_FILE.replace("textual-dark", "textual-light")
    said = [m.notification.message for m in notes if isinstance(m, Notify)]
    assert f"theme textual-light, remembered in {config}" in said

    use(load_settings())  # the next start
    again = sample_app()
    assert again.theme == "textual-light"
    async with again.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: again.main.view is not None, "the first request")
        assert again.theme == "textual-light"
        await pilot.press("t")
        await wait_for(pilot, lambda: 'theme = "textual-dark"' in config.read_text(), "dark written back")
    assert load_settings().theme == "textual-dark"
    assert load_settings().estimator == "tiktoken"


async def test_no_file_yet_one_is_made_with_the_theme(config: Path) -> None:
    use(load_settings())
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.main.view is not None, "the first request")
        await pilot.press("t")
        await wait_for(pilot, config.exists, "the file made")
    assert config.read_text(encoding="utf-8") == 'theme = "textual-light"\n'
    assert [p.name for p in config.parent.iterdir()] == ["settings.toml"]  # no temporary file left


async def test_a_file_that_cannot_be_written_is_said_and_the_theme_holds(config: Path) -> None:
    config.parent.parent.mkdir(parents=True)
    config.parent.write_text("a file where the folder should be", encoding="utf-8")
    use(load_settings())
    notes: list[Message] = []
    app = sample_app()
    async with app.run_test(size=SIZE, notifications=True, message_hook=notes.append) as pilot:
        await wait_for(pilot, lambda: app.main.view is not None, "the first request")
        await pilot.press("t")

        def warned() -> list[str]:
            return [
                m.notification.message
                for m in notes
                if isinstance(m, Notify) and m.notification.severity == "warning"
            ]

        await wait_for(pilot, lambda: bool(warned()), "the warning")
        assert warned()[0].startswith(
            f"theme textual-light for this run only: cannot write the settings file {config}"
        )
        assert "\n" not in warned()[0]
        assert app.theme == "textual-light"  # the app goes on, in the chosen theme
        assert app.main.view is not None


async def test_a_library_caller_never_writes_the_users_file(config: Path) -> None:
    use(load_settings())
    app = sample_app(remember=False)  # a library caller: not the command line's app
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.main.view is not None, "the first request")
        await pilot.press("t")
        await pilot.pause(0.3)
        assert app.theme == "textual-light"
    assert not config.exists()
    assert not config.parent.exists()
