"""One `RunSettings`, built once from the command line, passed whole to the replay and the app;
the window resolved once, in the replay (`inspector.replay.settings`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import inspector.replay.settings as run_settings
from inspector import cli
from inspector.formats import load
from inspector.model import Transcript
from inspector.replay import Replay
from inspector.replay.settings import RunSettings, WindowSource
from inspector.samples import sample_path

SHORT = sample_path("short-session")  # Claude Code, claude-sonnet-4-5: 200,000, 12 requests


def test_the_window_and_where_it_came_from() -> None:
    tr = load(SHORT)
    codex = Transcript(format="codex", path="rollout.jsonl", window=258_400)  # states 95% of it
    unknown = Transcript(format="generic", path="chat.json", model="no-such-model")
    cases: list[tuple[RunSettings, Transcript, tuple[int | None, str]]] = [
        (RunSettings(), tr, (200_000, "model")),
        (RunSettings(window=90_000), tr, (90_000, "--window")),
        (RunSettings(window=90_000, window_source=WindowSource.SAMPLE), tr, (90_000, "sample")),
        (RunSettings(model="gpt-5"), tr, (400_000, "--model")),
        (RunSettings(window=90_000, model="gpt-5"), tr, (90_000, "--window")),  # --window wins
        (RunSettings(model="gpt-5"), codex, (272_000, "transcript")),  # a stated window wins
        (RunSettings(), codex, (272_000, "transcript")),
        (RunSettings(), unknown, (None, "unknown")),
    ]
    for settings, transcript, want in cases:
        assert settings.window_for(transcript) == want, settings
        replay = Replay.from_settings(transcript, settings)
        assert (replay.window, replay.window_source) == want, settings
        assert isinstance(replay.window_source, WindowSource)


def test_open_one_by_one_is_from_settings() -> None:
    tr = load(SHORT)
    a = Replay.open(tr, "codex", 120_000, window_source="sample")
    b = Replay.from_settings(tr, RunSettings(policy="codex", window=120_000, window_source=WindowSource.SAMPLE))
    assert (a.policy, a.window, a.window_source, a.budget) == (b.policy, b.window, b.window_source, b.budget)
    assert a.policy.name == "codex" and a.window_source is WindowSource.SAMPLE
    assert Replay.from_settings(tr, RunSettings()).policy.name == "claude-code"  # the harness's preset


def test_pinned_makes_the_model_s_window_a_given_one() -> None:
    tr = load(SHORT)
    pinned = RunSettings(model="gpt-5", follow=True).pinned(tr)
    assert (pinned.window, pinned.window_source, pinned.follow) == (400_000, WindowSource.MODEL_GIVEN, True)
    assert pinned.checked_window
    codex = Transcript(format="codex", path="rollout.jsonl", window=258_400)
    same = RunSettings(model="gpt-5")
    assert same.pinned(codex) is same and not same.checked_window
    sample = RunSettings(window=90_000, window_source=WindowSource.SAMPLE)
    assert sample.pinned(tr) is sample and not sample.checked_window  # a sample's window fits
    assert RunSettings(window=90_000).checked_window


def test_the_command_line_builds_one_settings_and_resolves_the_window_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    given: list[RunSettings] = []
    resolved: list[str | None] = []
    from_settings = Replay.from_settings.__func__  # type: ignore[attr-defined]
    real_resolve = run_settings.resolve_window

    def spy_from_settings(cls: type[Replay], /, transcript: Transcript, settings: RunSettings, **kw: Any) -> Replay:
        given.append(settings)
        replay: Replay = from_settings(cls, transcript, settings, **kw)
        return replay

    def spy_resolve(transcript: Transcript, window: int | None, **kw: Any) -> Any:
        resolved.append(kw.get("model"))
        return real_resolve(transcript, window, **kw)

    monkeypatch.setattr(Replay, "from_settings", classmethod(spy_from_settings))
    monkeypatch.setattr(run_settings, "resolve_window", spy_resolve)
    argv = ["report", str(SHORT), "--json", "--no-cache", "--model", "gpt-5", "--policy", "codex", "--step", "3"]
    assert cli.main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["budget"]["window"], report["budget"]["window_source"]) == (400_000, "--model")
    assert given == [RunSettings(policy="codex", model="gpt-5", step=3)]
    assert resolved == ["gpt-5"]  # once: no second resolution in the command line


def test_the_app_receives_the_settings_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr("inspector.tui.run_app", lambda transcript, **kw: seen.update(t=transcript, **kw))
    path = tmp_path / "s.jsonl"
    path.write_bytes(SHORT.read_bytes())
    assert cli.main([str(path), "--model", "gpt-5", "--policy", "opencode", "--no-follow"]) == 0
    settings = seen["settings"]
    assert isinstance(settings, RunSettings) and seen["follower"] is None
    assert (settings.policy, settings.window, settings.window_source) == ("opencode", 400_000, "--model")
    assert (settings.model, settings.follow, settings.session) == ("gpt-5", False, None)
    assert cli.main([]) == 0  # the picker: the settings of the command line, nothing resolved
    assert seen["t"] is None and seen["settings"] == RunSettings()


def test_a_given_window_too_small_for_the_policy_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["report", str(SHORT), "--no-cache", "--policy", "claude-code", "--window", "20000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("context-inspector: ") and err.count("\n") == 1 and "20,000" in err
