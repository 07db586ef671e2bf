"""Token accounting: estimators and calibration against what the provider billed."""

from .base import MESSAGE_OVERHEAD, Estimator, serialize
from .heuristic import HeuristicEstimator, heuristic_tokens
from .tiktoken_estimator import TiktokenEstimator

ESTIMATORS = ("heuristic", "tiktoken")


def get_estimator(name: str) -> Estimator:
    """A fresh estimator by name: "heuristic" or "tiktoken"."""
    if name == "heuristic":
        return HeuristicEstimator()
    if name == "tiktoken":
        return TiktokenEstimator()
    raise ValueError(f"unknown estimator {name!r}; choose one of: {', '.join(ESTIMATORS)}")


from .accuracy import AccuracyReport, accuracy  # noqa: E402
from .calibration import OVERHEAD_ID, Calibration, calibrate, overhead_message  # noqa: E402

__all__ = [
    "ESTIMATORS",
    "MESSAGE_OVERHEAD",
    "OVERHEAD_ID",
    "AccuracyReport",
    "Calibration",
    "Estimator",
    "HeuristicEstimator",
    "TiktokenEstimator",
    "accuracy",
    "calibrate",
    "get_estimator",
    "heuristic_tokens",
    "overhead_message",
    "serialize",
]
