"""Token accounting: estimators and calibration against what the provider billed.

`TiktokenEstimator` is imported on first use (the commands that never tokenize do not load its
module); the accuracy measurement is `inspector.tokens.accuracy` (a submodule: the package does
not also bind that name to its function)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import MESSAGE_OVERHEAD, Estimator, serialize
from .calibration import OVERHEAD_ID, Calibration, calibrate, overhead_message
from .heuristic import HeuristicEstimator, heuristic_tokens

if TYPE_CHECKING:
    from .tiktoken_estimator import TiktokenEstimator

ESTIMATORS = ("heuristic", "tiktoken")


def get_estimator(name: str) -> Estimator:
    """A fresh estimator by name: "heuristic" or "tiktoken"."""
    if name == "heuristic":
        return HeuristicEstimator()
    if name == "tiktoken":
        from .tiktoken_estimator import TiktokenEstimator

        return TiktokenEstimator()
    raise ValueError(f"unknown estimator {name!r}; choose one of: {', '.join(ESTIMATORS)}")


def __getattr__(name: str) -> object:
    if name == "TiktokenEstimator":
        from .tiktoken_estimator import TiktokenEstimator

        return TiktokenEstimator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ESTIMATORS",
    "MESSAGE_OVERHEAD",
    "OVERHEAD_ID",
    "Calibration",
    "Estimator",
    "HeuristicEstimator",
    "TiktokenEstimator",
    "calibrate",
    "get_estimator",
    "heuristic_tokens",
    "overhead_message",
    "serialize",
]
