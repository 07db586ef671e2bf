"""Policies: presets, the budget and pipeline they build, loading from names and files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from msgspec.structs import replace

from inspector.model import Message, Role, TextBlock
from inspector.shaping import (
    LAYER_FACTORIES,
    NO_HISTORY_COMPACTION,
    OPENCOLLAB,
    PRESETS,
    AutoCompact,
    Budget,
    ExtractiveSummarizer,
    ModelSummarizer,
    OldHistorySnip,
    PerToolResultBudget,
    Policy,
    PolicyError,
    RecordedSummarizer,
    ToolOutputClear,
    load_policy,
    policy_from_dict,
    preset,
    register_preset,
)
from inspector.shaping.policy import PRESET_ALIASES


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def one_line_error(target: str | Path) -> str:
    with pytest.raises(PolicyError) as info:
        load_policy(target)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_opencollab_preset() -> None:
    p = load_policy("opencollab")
    assert p is OPENCOLLAB
    assert p.layers == ("per_tool_budget", "tool_output_clear", "old_history_snip", "auto_compact")
    assert p.summarizer == "extractive"
    assert p.tool_result_budget == 16_000
    assert (p.output_reserve, p.safety_buffer, p.target_ratio) == (20_000, 13_000, 0.75)
    assert set(p.compactable_tools) >= {"bash", "file_read", "grep", "git_diff", "run_tests"}
    assert not {"edit", "write"} & set(p.compactable_tools)
    pipeline = p.pipeline()
    kinds = [type(layer) for layer in pipeline.layers]
    assert kinds == [PerToolResultBudget, ToolOutputClear, OldHistorySnip, AutoCompact]
    compact = pipeline.layers[3]
    assert isinstance(compact, AutoCompact) and isinstance(compact.summarizer, ExtractiveSummarizer)
    # Each pipeline has its own summary cache.
    other = p.pipeline().layers[3]
    assert isinstance(other, AutoCompact) and other.cache is not compact.cache


def test_no_history_compaction_preset() -> None:
    p = load_policy("no_history_compaction")
    assert p is NO_HISTORY_COMPACTION
    assert p.pipeline().names == ("per_tool_budget",)
    assert p.summarizer is None


def test_policy_budget_is_the_budget() -> None:
    assert OPENCOLLAB.budget(200_000) == Budget.for_window(200_000)
    assert OPENCOLLAB.budget(None).trigger == 120_000
    custom = replace(OPENCOLLAB, name="x", groups_kept=6, results_kept=9, blocking_buffer=3_000)
    b = custom.budget(200_000)
    assert (b.groups_kept, b.results_kept, b.blocking) == (6, 9, 177_000)


@pytest.mark.parametrize(
    "name", ["OpenCollab", "default", "DEFAULT", "no-history-compaction", " No_History_Compaction "]
)
def test_names_are_normalized(name: str) -> None:
    assert load_policy(name) in (OPENCOLLAB, NO_HISTORY_COMPACTION)


def test_unknown_preset() -> None:
    assert (
        one_line_error("claude-kode")
        == "unknown policy 'claude-kode' (known: claude-code, codex, no_history_compaction, opencode, opencollab)"
    )


def test_registry_leaves_room_for_harness_presets() -> None:
    harness = Policy(
        name="my-harness", layers=("per_tool_budget", "tool_output_clear"), blocking_buffer=3_000
    )
    register_preset(harness, aliases=("mine",))
    try:
        assert preset("My-Harness") is harness
        assert load_policy("mine") is harness
    finally:
        PRESETS.pop("my_harness")
        PRESET_ALIASES.pop("mine")
    with pytest.raises(PolicyError):
        preset("my-harness")


def test_toml_policy_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "tight.toml",
        """
name = "tight"
base = "opencollab"
layers = ["per_tool_budget", "tool_output_clear", "old_history_snip"]
tool_result_budget = 8000
compactable_tools = ["Read", "Grep", "bash"]
results_kept = 3
target_ratio = 0.6
""",
    )
    p = load_policy(path)
    assert p.name == "tight"
    assert p.layers == ("per_tool_budget", "tool_output_clear", "old_history_snip")
    assert p.tool_result_budget == 8_000
    assert p.compactable_tools == ("file_read", "grep", "bash")
    assert p.budget(200_000).results_kept == 3
    assert p.budget(200_000).target == int(167_000 * 0.6)
    assert p.output_reserve == 20_000
    assert load_policy(str(path)) == p


def test_toml_name_defaults_to_the_file_stem(tmp_path: Path) -> None:
    p = load_policy(
        write(tmp_path, "mine.toml", "base = 'no_history_compaction'\ntool_result_budget = 4000\n")
    )
    assert p.name == "mine" and p.layers == ("per_tool_budget",) and p.tool_result_budget == 4_000


def test_team_file_context_form(tmp_path: Path) -> None:
    toml = write(
        tmp_path, "team.toml", "[context]\npolicy = 'no_history_compaction'\ntool_result_budget = 20000\n"
    )
    p = load_policy(toml)
    assert p.name == "no_history_compaction"
    assert p.layers == ("per_tool_budget",)
    assert p.tool_result_budget == 20_000
    js = write(
        tmp_path, "team.json", json.dumps({"context": {"policy": "default", "tool_result_budget": 20000}})
    )
    q = load_policy(js)
    assert q.name == "opencollab" and q.tool_result_budget == 20_000 and len(q.layers) == 4
    assert (
        load_policy(write(tmp_path, "short.toml", "context = 'no-history-compaction'\n"))
        is NO_HISTORY_COMPACTION
    )
    assert policy_from_dict({"context": {"tool_result_budget": 9000}}).name == "opencollab"


def test_unknown_keys_are_errors(tmp_path: Path) -> None:
    flat = write(tmp_path, "bad.toml", "name = 'x'\ntool_budget = 5\n")
    message = one_line_error(flat)
    assert message.startswith(f"{flat}: unknown key 'tool_budget' (allowed: name, base, ")
    nested = write(tmp_path, "bad_team.toml", "[context]\npolicy = 'default'\nhistory = true\n")
    assert one_line_error(nested).startswith(f"{nested}: context: unknown key 'history' (allowed: policy, ")
    beside = write(tmp_path, "beside.toml", "roles = 3\n[context]\npolicy = 'default'\n")
    assert one_line_error(beside) == f"{beside}: unknown key 'roles' (allowed: context)"


def test_bad_values_are_errors(tmp_path: Path) -> None:
    cases = {
        "layers = ['per_tool_budget', 'magic']": "layers[1]: unknown layer 'magic' (known: ",
        "tool_result_budget = 'big'": "tool_result_budget: expected int, got str",
        "tool_result_budget = 10": "tool_result_budget: must be at least 256",
        "target_ratio = 1.5": "target_ratio: must be between 0 and 1 (exclusive)",
        "summarizer = 'gpt'": "summarizer: unknown summarizer 'gpt' (known: extractive, recorded, model, none)",
        "groups_kept = 0": "groups_kept: must be >= 1",
        "base = 'nope'": "unknown policy 'nope'",
    }
    for k, (line, expected) in enumerate(cases.items()):
        path = write(tmp_path, f"case{k}.toml", line + "\n")
        assert expected in one_line_error(path), line


def test_numbers_written_as_whole_floats_or_as_text_are_read_as_numbers(tmp_path: Path) -> None:
    """As a hand-written file or a team file's `context` table may hold them (`20000.0`, `2e4`,
    `"0.5"`); a fraction where a count goes, a true/false, or words are still errors."""
    flat = write(
        tmp_path, "floats.toml", "tool_result_budget = 20000.0\neager_keep = 1e3\ntarget_ratio = '0.5'\n"
    )
    policy = load_policy(flat)
    assert (policy.tool_result_budget, policy.eager_keep, policy.target_ratio) == (20_000, 1_000, 0.5)
    assert type(policy.tool_result_budget) is int and type(policy.target_ratio) is float
    team = write(tmp_path, "team.json", '{"context": {"policy": "default", "blocking_buffer": 3000.0}}')
    assert load_policy(team).blocking_buffer == 3_000
    cases = {
        "tool_result_budget = 20000.5": "tool_result_budget: expected int, got float",
        "eager_keep = true": "eager_keep: expected int, got bool",
        "tool_result_budget = 'big'": "tool_result_budget: expected int, got str",
    }
    for k, (line, expected) in enumerate(cases.items()):
        path = write(tmp_path, f"bad{k}.toml", line + "\n")
        assert one_line_error(path) == f"{path}: {expected}", line
    # several problems: every one is named, in the order the fields are declared
    both = write(tmp_path, "both.toml", "trigger_estimator = 'bad'\nsummarizer = 'gpt'\neager_keep = -1\n")
    assert one_line_error(both) == (
        f"{both}: eager_keep: must be >= 0 (got -1); "
        "summarizer: unknown summarizer 'gpt' (known: extractive, recorded, model, none); "
        "trigger_estimator: unknown trigger estimator 'bad' "
        "(known: heuristic, claude_code, claude_code_usage, opencode, codex)"
    )


def test_unreadable_files_are_errors(tmp_path: Path) -> None:
    assert one_line_error(tmp_path / "missing.toml") == f"policy file not found: {tmp_path / 'missing.toml'}"
    broken = write(tmp_path, "broken.toml", "name = \n")
    assert one_line_error(broken).startswith(f"{broken}: not valid TOML: ")
    not_table = write(tmp_path, "list.json", "[1, 2]")
    assert one_line_error(not_table) == f"{not_table}: expected a table of policy settings"


def test_summarizer_choices() -> None:
    messages = [Message(id="s", role=Role.USER, blocks=(TextBlock(text="summary"),), is_summary=True)]
    recorded = replace(OPENCOLLAB, name="r", summarizer="recorded")
    layer = recorded.pipeline(messages=messages).layers[3]
    assert isinstance(layer, AutoCompact) and isinstance(layer.summarizer, RecordedSummarizer)
    off = replace(OPENCOLLAB, name="off", summarizer="none")
    assert off.summarizer is None
    off_layer = off.pipeline().layers[3]
    assert isinstance(off_layer, AutoCompact) and off_layer.summarizer is None
    model = replace(OPENCOLLAB, name="m", summarizer="model")
    with pytest.raises(PolicyError, match="pass summarizer=ModelSummarizer"):
        model.pipeline()
    hook = ModelSummarizer(lambda msgs, prompt: "fine")
    hooked = model.pipeline(summarizer=hook).layers[3]
    assert isinstance(hooked, AutoCompact) and hooked.summarizer is hook


def test_policy_is_frozen_and_strict() -> None:
    with pytest.raises(AttributeError, match="immutable"):
        OPENCOLLAB.tool_result_budget = 1  # type: ignore[misc]
    with pytest.raises(TypeError, match="unknown"):
        Policy(name="x", layers=(), unknown=1)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="layers: a layer appears twice"):
        Policy(name="x", layers=("per_tool_budget", "per_tool_budget"))
    with pytest.raises(ValueError, match="eager_keep: must be >= 0"):
        replace(OPENCOLLAB, eager_keep=-1)


def test_every_layer_name_has_a_factory() -> None:
    assert set(LAYER_FACTORIES) == {
        "eager_clear",
        "per_tool_budget",
        "tool_output_clear",
        "old_history_snip",
        "auto_compact",
        "large_result_preview",
        "microcompact",
        "full_compact",
        "opencode_prune",
        "opencode_compact",
        "middle_truncate",
        "codex_compact",
    }
    everything = Policy(name="all", layers=tuple(LAYER_FACTORIES))
    assert everything.pipeline().names == tuple(LAYER_FACTORIES)


@pytest.fixture(autouse=True)
def _registry_unchanged() -> Iterator[None]:
    before = (dict(PRESETS), dict(PRESET_ALIASES))
    yield
    assert (dict(PRESETS), dict(PRESET_ALIASES)) == before
