"""The budget: trigger, target and kept counts derived from the window (docs/DESIGN.md §2.1)."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

import pytest

from inspector.shaping import Budget, affordable_groups, trigger_target

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("window", "trigger", "target", "groups", "results"),
    [
        (200_000, 167_000, 125_250, 4, 5),
        (1_000_000, 967_000, 725_250, 4, 5),
        (None, 120_000, 90_000, 4, 5),
        (35_500, 2_500, 1_875, 2, 2),
        (1_048_576, 1_015_576, 761_682, 4, 5),
        (1_015_576, 982_576, 736_932, 4, 5),
        (983_616, 950_616, 712_962, 4, 5),
        (54_333, 21_333, 15_999, 3, 3),
        (54_334, 21_334, 16_000, 4, 4),
        (59_667, 26_667, 20_000, 4, 5),
    ],
)
def test_worked_values(window: int | None, trigger: int, target: int, groups: int, results: int) -> None:
    b = Budget.for_window(window)
    assert (b.trigger, b.target) == (trigger, target)
    assert (b.groups_kept, b.results_kept) == (groups, results)
    assert b.output_reserve == 20_000
    assert b.safety_buffer == 13_000
    assert b.tool_result_budget == 16_000
    assert b.blocking is None


def test_affordable_groups_formula() -> None:
    assert Budget.for_window(35_500).affordable_groups == 2
    assert Budget.for_window(1_048_576).affordable_groups == 190
    assert Budget.for_window(None).affordable_groups == 22
    assert affordable_groups(7_999) == 2
    assert affordable_groups(12_000) == 3


@pytest.mark.parametrize("window", [0, -5])
def test_nonpositive_window_is_unknown(window: int) -> None:
    b = Budget.for_window(window)
    assert b.window is None
    assert (b.trigger, b.target) == (120_000, 90_000)
    assert b.thresholds_from == "fixed_default"


def test_tiny_windows_keep_trigger_above_target() -> None:
    assert trigger_target(1) == (2, 1)
    assert trigger_target(33_003) == (3, 2)
    b = Budget.for_window(34_000)
    assert b.trigger == 1_000
    assert b.target == 750


def test_policy_parameters_move_the_lines() -> None:
    b = Budget.for_window(200_000, output_reserve=10_000, safety_buffer=0, target_ratio=0.5)
    assert (b.trigger, b.target) == (190_000, 95_000)
    assert Budget.for_window(200_000, groups_kept=7, results_kept=1).groups_kept == 7
    assert Budget.for_window(200_000, groups_kept=7, results_kept=1).results_kept == 1
    assert Budget.for_window(200_000, tool_result_budget=20_000).tool_result_budget == 20_000


def test_blocking_hook() -> None:
    b = Budget.for_window(200_000, blocking_buffer=3_000)
    assert b.blocking == 177_000
    assert Budget.for_window(None, blocking_buffer=3_000).blocking is None


def test_lines_for_drawing() -> None:
    b = Budget.for_window(200_000)
    assert b.lines() == [
        ("window", 200_000),
        ("output reserve", 180_000),
        ("safety buffer", 167_000),
        ("trigger", 167_000),
        ("target", 125_250),
    ]
    assert Budget.for_window(None).lines() == [("trigger", 120_000), ("target", 90_000)]
    with_blocking = dict(Budget.for_window(200_000, blocking_buffer=3_000).lines())
    assert with_blocking["blocking"] == 177_000
    assert Budget.for_window(200_000).thresholds_from == "context_window"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"target_ratio": 1.0},
        {"target_ratio": 0.0},
        {"target_ratio": float("nan")},
        {"output_reserve": -1},
        {"safety_buffer": -1},
        {"tool_result_budget": 100},
        {"groups_kept": 0},
        {"results_kept": -1},
    ],
)
def test_bad_parameters_are_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Budget.for_window(200_000, **kwargs)  # type: ignore[arg-type]


def test_budget_is_frozen() -> None:
    b = Budget.for_window(200_000)
    with pytest.raises(AttributeError, match="immutable"):
        b.trigger = 1  # type: ignore[misc]


def _number_literals(path: Path) -> set[int]:
    found: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if tok.type == tokenize.NUMBER:
            try:
                found.add(int(tok.string.replace("_", ""), 0))
            except ValueError:
                continue
    return found


def test_no_threshold_is_hard_coded_outside_the_budget() -> None:
    """Every threshold is read from Budget: 167,000, 155,000 and 125,250 appear nowhere as code,
    and the defaults the budget derives from appear in the shaping package only in budget.py (the
    table of harness rules, `inspector/harness_rules.py`, is below the package)."""
    for path in (ROOT / "inspector").rglob("*.py"):
        numbers = _number_literals(path)
        assert not numbers & {167_000, 155_000, 154_560, 125_250}, path
        if path.parent.name == "shaping" and path.name != "budget.py":
            assert not numbers & {120_000, 90_000, 20_000, 13_000, 16_000}, path
