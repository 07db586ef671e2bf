"""The user's settings: `$XDG_CONFIG_HOME/context-inspector/settings.toml` (default
`~/.config/context-inspector/settings.toml`), read once when the command line starts a command
that uses them (the app, `tour`, `calibrate`, `sessions`; `report`, `findings`, `explain` and
`export` neither read nor pay for them).

- `theme`: the app's theme;
- `estimator`: `calibrate`'s default --estimator;
- `session_folders`: more folders where discovery (the session picker, `sessions`) finds sessions.

The app remembers the theme the user chose (`remember_theme`): it edits the file's `theme` line
(or adds one), every other line as the user wrote it (the app opened by the command line only, so
a library caller or a test never writes the user's file).

No file: the defaults, and pydantic is never imported. A file: validated at the door
(`inspector.door.settings_file`); a bad one is `SettingsError`, one line naming every problem
with its location (the command line prints it and exits 2). Pure core: no Textual.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from msgspec import Struct

from inspector.errors import UserError

__all__ = [
    "DEFAULT",
    "Settings",
    "SettingsError",
    "current",
    "load_settings",
    "remember_theme",
    "settings_path",
    "use",
]

DEFAULT_ESTIMATOR = "heuristic"
"""The local estimate calibration starts from unless a run (or the settings file) names another."""


class SettingsError(UserError, ValueError):
    """A settings file that cannot be used; the message is one line."""


class Settings(Struct, frozen=True, kw_only=True):
    """The settings in force (the defaults where no file sets them)."""

    theme: str | None = None
    """The app's theme (None: the app's own, textual-dark)."""
    estimator: str = DEFAULT_ESTIMATOR
    """The local estimate `calibrate` starts from when --estimator is not given."""
    session_folders: tuple[Path, ...] = ()
    """More folders discovery looks in (absolute; a missing one is skipped)."""
    path: Path | None = None
    """The file they were read from (None: no file, the defaults)."""


DEFAULT = Settings()


def xdg_home(variable: str, default: str, env: Mapping[str, str], home: Path | None = None) -> Path:
    """`$variable` when set and absolute (the XDG spec says a relative one is ignored), else
    `home/default` (`home` when given, else `$HOME` when set, else the user's home)."""
    value = env.get(variable, "")
    if value and os.path.isabs(value):
        return Path(value)
    if home is None:
        home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / default


def settings_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the settings file is: `$XDG_CONFIG_HOME` (when set and absolute, as the XDG spec
    says) or `~/.config`, then `context-inspector/settings.toml`."""
    env = os.environ if env is None else env
    return xdg_home("XDG_CONFIG_HOME", ".config", env) / "context-inspector" / "settings.toml"


def cache_folder(env: Mapping[str, str] | None = None) -> Path:
    """The inspector's cache folder: `$XDG_CACHE_HOME` (when set and absolute) or `~/.cache`,
    then `context-inspector` (the loaded transcripts, the prices looked up). Never beside a
    transcript."""
    env = os.environ if env is None else env
    return xdg_home("XDG_CACHE_HOME", ".cache", env) / "context-inspector"


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """The settings of the file at `settings_path(env)`; the defaults when there is none."""
    path = settings_path(env)
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return DEFAULT
    except OSError as exc:
        raise SettingsError(f"cannot read the settings file {path}: {exc.strerror or exc}") from None
    import tomllib  # (only where there is a file: 4 ms of every command's start)

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SettingsError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML: {exc}") from None
    from inspector.door.settings_file import parse_settings, resolve_folder

    try:
        parsed = parse_settings(data, str(path))
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    folders = tuple(dict.fromkeys(resolve_folder(f, path.parent) for f in parsed.session_folders))
    return Settings(theme=parsed.theme, estimator=parsed.estimator, session_folders=folders, path=path)


_current = DEFAULT


def current() -> Settings:
    """The settings in force: those the command line read (`use`), else the defaults (a library
    caller or a test never reads the user's file by accident)."""
    return _current


def use(settings: Settings) -> None:
    """Make `settings` the ones in force (the command line, once, at its start)."""
    global _current
    _current = settings


def remember_theme(theme: str, env: Mapping[str, str] | None = None) -> Path:
    """Write `theme` into the settings file (`settings_path(env)`, made if missing): its `theme`
    line changed, or one added; every other line kept; the settings in force name it from now on.
    The file written is returned; SettingsError (one line) when it cannot be written."""
    global _current
    path = settings_path(env)
    if path.is_symlink():
        path = path.resolve()  # the file a link points to is edited, the link stays
    try:
        text = path.read_bytes().decode("utf-8")  # its line ends as they are
        mode: int | None = path.stat().st_mode & 0o777
    except (FileNotFoundError, NotADirectoryError):
        text, mode = "", None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(
            f"cannot read the settings file {path}: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    from inspector.door.settings_file import with_theme

    try:
        edited = with_theme(text, theme)
    except ValueError as exc:
        raise SettingsError(f"{path}: {exc}") from None
    try:
        import tempfile  # (only to write: 7 ms of every command's start, with `random`)

        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".settings-", suffix=".toml", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(edited)
            if mode is not None:
                os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise SettingsError(f"cannot write the settings file {path}: {exc.strerror or exc}") from None
    _current = Settings(
        theme=theme, estimator=_current.estimator, session_folders=_current.session_folders, path=path
    )
    return path
