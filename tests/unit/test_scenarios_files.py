"""The scenario sessions: registry, files, determinism, and the tours computed from them."""

from __future__ import annotations

import json
import time
from pathlib import Path

import msgspec
import pytest

from inspector.formats import load
from inspector.samples import SAMPLES, SCENARIOS, SCENARIOS_DIR, SampleInfo, sample_info, sample_path
from inspector.scenarios import Tour, open_scenario, scenario_info, scenario_names, stops, tour
from inspector.shaping import load_policy
from tools.samples.regenerate import main
from tools.samples.scripted import SCENARIO_RECIPES, SCRIPTS, generate_scenario

ALL = pytest.mark.parametrize("name", list(SCENARIOS))

EXPECTED = {
    # name: (requests, window, policy, compare policy)
    "budget-alone": (9, 60_000, "opencollab", None),
    "clear-suffices": (16, 60_000, "opencollab", None),
    "snip-needed": (20, 60_000, "opencollab", None),
    "compact-last-resort": (25, 60_000, "opencollab", None),
    "overflow-stop": (5, 60_000, "opencollab", None),
    "small-window": (9, 35_500, "opencollab", None),
    "compaction-storm": (32, 60_000, "target-at-trigger", "opencollab"),
    "eager-clear-cache": (23, 200_000, "opencollab", "opencollab+eager"),
}


def test_registry_lists_the_eight_lessons_in_order() -> None:
    assert scenario_names() == list(EXPECTED)
    assert list(SCENARIOS) == list(SCRIPTS) == list(SCENARIO_RECIPES)
    letters = [info.title[:3] for info in SCENARIOS.values()]
    assert letters == ["(a)", "(b)", "(c)", "(d)", "(e)", "(f)", "(g)", "(h)"]
    assert not set(SCENARIOS) & set(SAMPLES)


@ALL
def test_registry_entry_is_complete_and_its_policies_load(name: str) -> None:
    info = SCENARIOS[name]
    requests, window, policy, compare = EXPECTED[name]
    assert isinstance(info, SampleInfo)
    assert info.name == name
    assert info.file == f"scenarios/{name}.jsonl"
    assert info.path == SCENARIOS_DIR / f"{name}.jsonl"
    assert info.path.is_file()
    assert info.window == window
    assert load_policy(info.policy).name == policy
    assert (load_policy(info.compare_policy).name if info.compare_policy else None) == compare
    assert info.title.endswith(f": {requests} requests")
    assert 2 <= info.description.count(". ") + 1 <= 5
    assert sample_info(name) is info
    assert sample_path(name) == info.path


def test_unknown_names_list_samples_and_scenarios() -> None:
    with pytest.raises(KeyError, match="known samples: long-session, short-session; scenarios: budget-alone"):
        sample_info("nope")
    with pytest.raises(KeyError, match="unknown scenario 'long-session'; known scenarios: budget-alone"):
        scenario_info("long-session")


def test_bundled_policy_files_explain_themselves() -> None:
    storm = load_policy(SCENARIOS["compaction-storm"].policy)
    assert storm.target_ratio == 0.99999
    assert (storm.budget(60_000).trigger, storm.budget(60_000).target) == (27_000, 26_999)
    eager = load_policy(SCENARIOS["eager-clear-cache"].compare_policy or "")
    assert eager.layers == (
        "eager_clear",
        "per_tool_budget",
        "tool_output_clear",
        "old_history_snip",
        "auto_compact",
    )
    assert eager.eager_keep == 12
    for path in SCENARIOS_DIR.glob("*.toml"):
        assert path.read_text(encoding="utf-8").startswith("# ")


@ALL
def test_committed_scenario_equals_a_fresh_generation(name: str, tmp_path: Path) -> None:
    info = generate_scenario(name, tmp_path)
    assert info.path == tmp_path / SCENARIOS[name].file
    assert info.path.read_bytes() == SCENARIOS[name].path.read_bytes(), f"{name} changed: regenerate it"
    assert info.requests == EXPECTED[name][0]


def test_generation_is_deterministic(tmp_path: Path) -> None:
    first = generate_scenario("small-window", tmp_path / "a")
    second = generate_scenario("small-window", tmp_path / "b")
    assert first.path.read_bytes() == second.path.read_bytes()


@ALL
def test_scenario_files_are_small_and_load_cleanly_and_fast(name: str) -> None:
    info = SCENARIOS[name]
    assert info.path.stat().st_size < 350_000
    start = time.perf_counter()
    transcript = load(info.path)
    replay = open_scenario(name)
    for step in replay.steps():
        assert step.result.final
    assert time.perf_counter() - start < 5
    assert transcript.format == "claude-code"
    assert transcript.load_issues == []
    assert len(transcript.requests) == EXPECTED[name][0]
    assert transcript.session_id == SCENARIO_RECIPES[name].session_id
    with info.path.open(encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    assert {r["sessionId"] for r in records if "sessionId" in r} == {SCENARIO_RECIPES[name].session_id}


def test_main_regenerates_scenarios_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    for info in SCENARIOS.values():
        assert (tmp_path / info.file).read_bytes() == info.path.read_bytes()
        assert info.file in printed


@ALL
def test_every_scenario_has_narrated_stops_in_request_order(name: str) -> None:
    found = tour(name)
    assert isinstance(found, Tour)
    assert found.requests == EXPECTED[name][0]
    assert found.window == EXPECTED[name][1]
    assert found.policy == EXPECTED[name][2]
    assert found.compare_policy == EXPECTED[name][3]
    assert 2 <= len(found.stops) <= 4
    assert [s.request for s in found.stops] == sorted(s.request for s in found.stops)
    for stop in found.stops:
        assert 1 <= stop.request <= found.requests
        assert stop.title and stop.title[0].isupper()
        assert stop.narration.endswith(".")
        assert len(stop.narration.split()) >= 25
        assert "\n" not in stop.narration
        assert stop.policy in {EXPECTED[name][2], EXPECTED[name][3]}
    dumped = msgspec.to_builtins(found)
    assert dumped["stops"][0]["narration"] == found.stops[0].narration
    assert stops(name) == found.stops
