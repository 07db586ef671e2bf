"""Token accounting: estimators and calibration against what the provider billed."""

from .base import MESSAGE_OVERHEAD, Estimator, serialize
from .heuristic import HeuristicEstimator, heuristic_tokens

__all__ = ["MESSAGE_OVERHEAD", "Estimator", "HeuristicEstimator", "heuristic_tokens", "serialize"]
