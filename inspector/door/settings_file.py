"""The settings file at the door: the pydantic model of `settings.toml` (`inspector.settings`
reads the file and builds its `Settings` from this).

    theme = "nord"                       # the app's theme (one of Textual's built-in themes)
    estimator = "tiktoken"               # calibrate's default --estimator
    session_folders = ["~/backups/claude", "/mnt/old/codex"]   # more places to find sessions

Every problem is reported with its location, in one line. Imported only when the file exists
(or when the app remembers a theme: `with_theme` edits the file's text, one line of it).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from inspector.door import one_line, problem_text

__all__ = ["ESTIMATORS", "KEYS", "THEMES", "SettingsFile", "parse_settings", "with_theme"]

THEMES = (
    "ansi-dark",
    "ansi-light",
    "atom-one-dark",
    "atom-one-light",
    "catppuccin-frappe",
    "catppuccin-latte",
    "catppuccin-macchiato",
    "catppuccin-mocha",
    "dracula",
    "flexoki",
    "gruvbox",
    "monokai",
    "nord",
    "rose-pine",
    "rose-pine-dawn",
    "rose-pine-moon",
    "solarized-dark",
    "solarized-light",
    "textual-dark",
    "textual-light",
    "tokyo-night",
)
"""Textual's built-in themes (textual 8.2.8; a test holds this equal to `textual.theme.BUILTIN_THEMES`:
the core may not import Textual)."""

ESTIMATORS = ("heuristic", "tiktoken")
"""The local estimates `calibrate` may start from (its --estimator choices)."""


def _theme(name: str) -> str:
    if name not in THEMES:
        raise ValueError(f"unknown theme {name!r} (known: {', '.join(THEMES)})")
    return name


def _folder(text: str) -> str:
    if not text.strip():
        raise ValueError("must be a folder, not an empty string")
    return text


class SettingsFile(BaseModel):
    """What `settings.toml` may hold; each key left out keeps its default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    theme: Annotated[str, AfterValidator(_theme)] | None = Field(
        None, description="The app's theme (default: textual-dark)."
    )
    estimator: Literal["heuristic", "tiktoken"] = Field(
        "heuristic", description="The local estimate `calibrate` starts from when --estimator is not given."
    )
    session_folders: list[Annotated[str, AfterValidator(_folder)]] = Field(
        default_factory=list,
        description="More folders where the session picker and `sessions` look for sessions "
        "(`~` is the home folder; a relative path is relative to the settings file's folder).",
    )


KEYS = tuple(SettingsFile.model_fields)


def parse_settings(data: Mapping[str, Any], where: str) -> SettingsFile:
    """The settings `data` (the file's parsed TOML) holds, or ValueError naming every problem with
    its location, in one line."""
    try:
        return SettingsFile.model_validate(data)
    except ValidationError as exc:
        problems = [problem_text(e, {(): KEYS}) for e in exc.errors(include_url=False)]
        raise ValueError(one_line(where, problems)) from None


def resolve_folder(text: str, base: Path) -> Path:
    """A folder of `session_folders` as a path: `~` expanded, relative to `base`."""
    path = Path(text).expanduser()
    return path if path.is_absolute() else base / path


_THEME_LINE = re.compile(
    r"""^(?P<key>[ \t]*(?:theme|"theme"|'theme')[ \t]*=[ \t]*)(?P<value>"[^"\n]*"|'[^'\n]*')?(?P<rest>.*)$"""
)
_TABLE = re.compile(r"^[ \t]*\[")


def with_theme(text: str, theme: str) -> str:
    """The settings file's `text` with `theme = "THEME"`: its `theme` line's value replaced (a
    comment after it kept), or, where it has none, a line added (at the end of the top-level keys);
    every other line as the user wrote it. ValueError (one line) for an unknown theme, a file that
    is not TOML, or one this edit cannot change without touching anything else."""
    _theme(theme)
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML ({exc}): left as it is") from None
    rows = text.splitlines(keepends=True)
    wanted = f'"{theme}"'
    top = next((i for i, row in enumerate(rows) if _TABLE.match(row)), len(rows))
    for i in range(top):
        found = _THEME_LINE.match(rows[i].rstrip("\r\n"))
        if found is not None:
            end = rows[i][len(rows[i].rstrip("\r\n")) :]
            rest = found["rest"] if found["value"] is not None else ""
            rows[i] = f"{found['key']}{wanted}{rest}{end or chr(10)}"
            break
    else:
        if top and not rows[top - 1].endswith("\n"):
            rows[top - 1] += "\n"
        rows.insert(top, f"theme = {wanted}\n")
    edited = "".join(rows)
    try:
        after = tomllib.loads(edited)
    except tomllib.TOMLDecodeError:
        after = {}
    if after.get("theme") != theme or {k: v for k, v in after.items() if k != "theme"} != {
        k: v for k, v in before.items() if k != "theme"
    }:
        raise ValueError("its theme line could not be changed without touching the rest: left as it is")
    return edited
