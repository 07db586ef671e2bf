"""The door: a user's policy file, the lab's saved policies and the settings file, validated by
pydantic models (imported only when such a file is read), every problem with its location."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from msgspec.structs import replace

from inspector import cli
from inspector.door import location
from inspector.door.settings_file import ESTIMATORS, KEYS, THEMES
from inspector.live import discover
from inspector.samples import sample_path
from inspector.settings import DEFAULT, Settings, SettingsError, current, load_settings, settings_path, use
from inspector.shaping import CLAUDE_CODE, CODEX, OPENCODE, OPENCOLLAB, Policy, PolicyError, load_policy
from inspector.shaping.policy import PARAMETER_KEYS
from inspector.shaping.policy_file import ContextTable, Parameters, PolicyFile
from inspector.tui.lab import policy_toml

ROOT = Path(__file__).resolve().parents[2]
SHORT = sample_path("short-session")


def _error(path: Path) -> str:
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- the policy file ------------------------------------------------------------------------------


def test_a_policy_file_with_three_problems_reports_all_three_with_their_locations(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(
        "tool_result_budget = 5\n"
        "layers = ['per_tool_budget', 'tool_output_clear', 'foo']\n"
        "eager_keep = 'many'\n",
        encoding="utf-8",
    )
    message = _error(path)
    assert message.startswith(f"{path}: ")
    problems = message.removeprefix(f"{path}: ").split("; ")
    assert len(problems) == 3, message
    assert problems[0].startswith("layers[2]: unknown layer 'foo' (known: eager_clear, per_tool_budget, ")
    assert problems[1] == "tool_result_budget: must be at least 256 (got 5)"
    assert problems[2] == "eager_keep: expected int, got str"


def test_a_team_file_names_its_problems_inside_context(tmp_path: Path) -> None:
    path = tmp_path / "team.json"
    path.write_text(
        json.dumps({"context": {"policy": "nope", "groups_kept": 0, "hist": 1}, "roles": 2}), encoding="utf-8"
    )
    problems = _error(path).removeprefix(f"{path}: ").split("; ")
    assert problems[0] == "context.groups_kept: must be >= 1 (got 0)"
    assert problems[1].startswith("context.policy: unknown policy 'nope' (known: claude-code, codex, ")
    assert problems[2].startswith("context: unknown key 'hist' (allowed: policy, description, layers, ")
    assert problems[3] == "unknown key 'roles' (allowed: context)"
    assert len(problems) == 4
    bad_context = tmp_path / "five.json"
    bad_context.write_text('{"context": 5}', encoding="utf-8")
    assert _error(bad_context) == f"{bad_context}: context: must be a policy name or a table (got 5)"


def test_a_repeated_layer_and_an_empty_name_are_both_named(tmp_path: Path) -> None:
    path = tmp_path / "twice.json"
    path.write_text(json.dumps({"name": " ", "layers": ["auto_compact", "auto_compact"]}), encoding="utf-8")
    assert _error(path) == (
        f"{path}: layers: a layer appears twice; name: must be a non-empty string (got ' ')"
    )


def test_the_file_model_has_every_parameter_of_the_policy_struct() -> None:
    """A parameter added to `Policy` and not to the file's model would be refused in files."""
    params = tuple(k for k in Parameters.model_fields)
    assert params == PARAMETER_KEYS
    assert set(PolicyFile.model_fields) == {*PARAMETER_KEYS, "name", "base"}
    assert set(ContextTable.model_fields) == {*PARAMETER_KEYS, "policy"}


def test_a_valid_file_builds_the_msgspec_policy_the_shaping_uses(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(
        "base = 'claude-code'\ntool_result_budget = '30000'\ntarget_ratio = 0.5\nsummarizer = 'none'\n",
        encoding="utf-8",
    )
    policy = load_policy(path)
    assert policy == replace(
        CLAUDE_CODE, name="mine", tool_result_budget=30_000, target_ratio=0.5, summarizer=None
    )
    assert type(policy).__module__ == "inspector.shaping.policy"


@pytest.mark.parametrize("base", [OPENCOLLAB, CLAUDE_CODE, OPENCODE, CODEX], ids=lambda p: p.name)
def test_what_the_lab_saves_comes_back_through_the_door_equal(tmp_path: Path, base: Policy) -> None:
    assert base in (OPENCOLLAB, CLAUDE_CODE, OPENCODE, CODEX)
    changed = replace(base, name="x+what-if", groups_kept=7, tool_result_budget=12_345)
    path = tmp_path / "context-policy.toml"
    path.write_text(policy_toml(changed), encoding="utf-8")
    assert load_policy(path) == changed
    # the same file, spoiled by hand in two places: both named
    path.write_text(policy_toml(changed).replace("groups_kept = 7", "groups_kept = -7") + "colour = 1\n")
    problems = _error(path).removeprefix(f"{path}: ").split("; ")
    assert problems[0] == "groups_kept: must be >= 1 (got -7)"
    assert problems[1].startswith("unknown key 'colour' (allowed: name, base, ")


def test_locations_read_as_in_the_file() -> None:
    assert location(("layers", 2)) == "layers[2]"
    assert location(("context", "layers", 0)) == "context.layers[0]"
    assert location(()) == ""


# -- pydantic only at the door ---------------------------------------------------------------------


def _modules_after_report(*extra: str, env: dict[str, str] | None = None) -> tuple[int, bool]:
    code = (
        "import sys\n"
        "from inspector.cli import _run\n"
        f"code = _run(['report', '--json', {str(SHORT)!r}, *{list(extra)!r}])\n"
        "print(code, 'pydantic' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120, env=env
    )
    last = done.stderr.strip().splitlines()[-1].split()
    assert json.loads(done.stdout)["requests"], done.stderr
    return int(last[0]), last[1] == "True"


def test_report_json_never_imports_pydantic_without_a_policy_file(tmp_path: Path) -> None:
    # the first report of a model fills the price cache (`model.cost`), importing genai-prices,
    # which is built on pydantic; from then on the prices are read from the cache: what is checked
    # here is what the door imports
    _modules_after_report()
    assert _modules_after_report() == (0, False)
    assert _modules_after_report("--policy", "codex") == (0, False)  # a preset's name: no file
    # even with a settings file (report does not read it)
    config = tmp_path / "config"
    (config / "context-inspector").mkdir(parents=True)
    (config / "context-inspector" / "settings.toml").write_text("theme = 'nord'\n")
    env = {**os.environ, "XDG_CONFIG_HOME": str(config)}
    assert _modules_after_report(env=env) == (0, False)
    # the check can fail: a policy file is read at the door
    path = tmp_path / "mine.toml"
    path.write_text("groups_kept = 3\n")
    assert _modules_after_report("--policy", str(path)) == (0, True)


# -- the settings file ------------------------------------------------------------------------------


def _settings(tmp_path: Path, text: str) -> dict[str, str]:
    folder = tmp_path / "xdg" / "context-inspector"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.toml").write_text(text, encoding="utf-8")
    return {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}


def test_the_settings_file_is_found_where_xdg_says() -> None:
    assert settings_path({"HOME": "/h"}) == Path("/h/.config/context-inspector/settings.toml")
    assert settings_path({"HOME": "/h", "XDG_CONFIG_HOME": "/x"}) == Path(
        "/x/context-inspector/settings.toml"
    )
    # a relative XDG_CONFIG_HOME is ignored, as the spec says
    assert settings_path({"HOME": "/h", "XDG_CONFIG_HOME": "rel"}) == Path(
        "/h/.config/context-inspector/settings.toml"
    )


def test_no_settings_file_is_the_defaults(tmp_path: Path) -> None:
    assert load_settings({"HOME": str(tmp_path)}) is DEFAULT
    assert (DEFAULT.theme, DEFAULT.estimator, DEFAULT.session_folders) == (None, "heuristic", ())


def test_a_settings_file_sets_theme_estimator_and_folders(tmp_path: Path) -> None:
    env = _settings(
        tmp_path,
        "theme = 'nord'\nestimator = 'tiktoken'\nsession_folders = ['~/old', 'rel', '/abs', '~/old']\n",
    )
    got = load_settings(env)
    home = Path(os.path.expanduser("~"))
    base = tmp_path / "xdg" / "context-inspector"
    assert got == Settings(
        theme="nord",
        estimator="tiktoken",
        session_folders=(home / "old", base / "rel", Path("/abs")),
        path=base / "settings.toml",
    )


def test_a_bad_settings_file_names_every_problem(tmp_path: Path) -> None:
    env = _settings(tmp_path, "theme = 'neon'\nestimator = 'exact'\nsession_folders = [3]\nfont = 'x'\n")
    with pytest.raises(SettingsError) as info:
        load_settings(env)
    where = tmp_path / "xdg" / "context-inspector" / "settings.toml"
    problems = str(info.value).removeprefix(f"{where}: ").split("; ")
    assert problems[0].startswith("theme: unknown theme 'neon' (known: ansi-dark, ")
    assert problems[1] == "estimator: must be one of 'heuristic' or 'tiktoken' (got 'exact')"
    assert problems[2] == "session_folders[0]: expected str, got int"
    assert problems[3] == "unknown key 'font' (allowed: theme, estimator, session_folders)"
    broken = _settings(tmp_path, "theme = \n")
    with pytest.raises(SettingsError, match="not valid TOML"):
        load_settings(broken)


def test_the_settings_lists_match_textual_and_the_command_line() -> None:
    from textual.theme import BUILTIN_THEMES

    assert sorted(BUILTIN_THEMES) == list(THEMES)
    commands = next(a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction))
    calibrate = next(a for a in commands.choices["calibrate"]._actions if a.dest == "estimator")
    assert tuple(calibrate.choices or ()) == ESTIMATORS
    assert KEYS == ("theme", "estimator", "session_folders")


@pytest.fixture
def settings_restored() -> object:
    before = current()
    yield None
    use(before)


def test_a_bad_settings_file_is_one_line_and_exit_2_for_the_commands_that_read_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    settings_restored: object,
) -> None:
    for key, value in _settings(tmp_path, "theme = 'neon'\nestimator = 3\n").items():
        monkeypatch.setenv(key, value)
    assert cli.main(["sessions", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("context-inspector: ")
    assert "theme: unknown theme 'neon'" in err and "estimator: must be one of" in err
    assert cli.main(["calibrate", str(SHORT)]) == 2
    assert cli.main([str(SHORT)]) == 2  # the app
    capsys.readouterr()
    # report does not read the settings: a bad file does not stop it
    assert cli.main(["report", "--json", str(SHORT)]) == 0
    assert json.loads(capsys.readouterr().out)["requests"]


def test_calibrate_starts_from_the_settings_estimator(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    settings_restored: object,
) -> None:
    for key, value in _settings(tmp_path, "estimator = 'tiktoken'\n").items():
        monkeypatch.setenv(key, value)
    assert cli.main(["calibrate", "--json", str(SHORT)]) == 0
    assert json.loads(capsys.readouterr().out)["estimator"] == "tiktoken"
    assert cli.main(["calibrate", "--json", "--estimator", "heuristic", str(SHORT)]) == 0
    assert json.loads(capsys.readouterr().out)["estimator"] == "heuristic"  # the flag wins


def test_sessions_finds_the_settings_folders(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    settings_restored: object,
) -> None:
    backup = tmp_path / "backup"
    deep = backup / "claude" / "-home-me-app"
    deep.mkdir(parents=True)
    shutil.copy(SHORT, deep / "short.jsonl")
    (deep / "agent-1.jsonl").write_text('{"sessionId": "sub"}\n')  # a subagent: part of a session
    (deep / "notes.jsonl").write_text('{"role": "user"}\n')  # not a Claude Code session
    rollout = backup / "codex" / "2026" / "01" / "02" / "rollout-2026-01-02T00-00-00-x.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text(json.dumps({"type": "session_meta", "payload": {"id": "cx-1", "cwd": "/w"}}) + "\n")
    env = _settings(tmp_path, f"session_folders = [{str(backup)!r}, {str(tmp_path / 'missing')!r}]\n")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["sessions", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted((r["harness"], Path(r["path"]).name) for r in rows) == [
        ("claude-code", "short.jsonl"),
        ("codex", rollout.name),
    ]
    # discovery with no folders given uses the settings in force; given folders win
    assert len(discover({"HOME": str(tmp_path / "home")}, tmp_path)) == 2
    assert discover({"HOME": str(tmp_path / "home")}, tmp_path, folders=()) == []
    # a folder that is also a harness's own root lists its sessions once
    home = tmp_path / "home"
    (home / ".claude" / "projects").mkdir(parents=True)
    shutil.copytree(backup / "claude", home / ".claude" / "projects", dirs_exist_ok=True)
    twice = discover({"HOME": str(home)}, tmp_path, folders=[home / ".claude" / "projects"])
    assert twice == discover({"HOME": str(home)}, tmp_path, folders=())
    assert sorted(Path(r.path).name for r in twice) == ["notes.jsonl", "short.jsonl"]  # (its own finder's)
