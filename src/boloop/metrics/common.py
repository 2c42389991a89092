"""Generic metric helpers that the families reuse.

Conventions: ``f_opt`` is the optimal value of the objective; ``maximize`` says whether larger is
better (the preference and safe papers maximise, COBOL minimises). Regrets are non-negative for a
correct ``f_opt``. Arrays: values (n,), masks (N,) of bools.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from boloop.errors import InvalidInputError
from boloop.metrics import register_metric

__all__ = [
    "instantaneous_regret",
    "cumulative",
    "best_so_far",
    "simple_regret",
    "f1_score",
    "misclassification_rate",
    "RunningSum",
    "RunningBest",
]


@register_metric("instantaneous_regret", "common", "f_opt - f(x_t) (maximisation) per step")
def instantaneous_regret(f_opt: float, f_x: Any, maximize: bool = True) -> np.ndarray | float:
    """Regret of the values ``f_x`` (scalar or (n,)): ``f_opt - f_x`` when maximising,
    ``f_x - f_opt`` when minimising."""
    v = np.asarray(f_x, dtype=np.float64)
    r = (f_opt - v) if maximize else (v - f_opt)
    return float(r) if r.ndim == 0 else r


@register_metric("cumulative", "common", "running sum of a per-step quantity")
def cumulative(values: Any) -> np.ndarray:
    """Running sum (n,) of the per-step values (n,): cumulative regret, cumulative counts."""
    return np.cumsum(np.asarray(values, dtype=np.float64))


@register_metric("best_so_far", "common", "running best of the values seen")
def best_so_far(values: Any, maximize: bool = True) -> np.ndarray:
    """Running maximum (or minimum) of values (n,)."""
    v = np.asarray(values, dtype=np.float64)
    return np.maximum.accumulate(v) if maximize else np.minimum.accumulate(v)


@register_metric("simple_regret", "common", "regret of the recommended point f_opt - f(x_hat)")
def simple_regret(f_opt: float, f_recommended: float, maximize: bool = True) -> float:
    """Regret of a recommendation: ``f_opt - f(x_hat)`` (maximising) or ``f(x_hat) - f_opt``."""
    return float(instantaneous_regret(f_opt, float(f_recommended), maximize))


@register_metric("f1_score", "common", "F1 score of an estimated set against the true set")
def f1_score(true_mask: Any, estimated_mask: Any) -> float:
    """F1 = 2 TP / (2 TP + FP + FN) of the estimated set (N,) bools against the true set (N,).

    Both sets empty gives 1.0 (a perfect estimate of an empty set).
    """
    t = np.asarray(true_mask, dtype=bool).reshape(-1)
    e = np.asarray(estimated_mask, dtype=bool).reshape(-1)
    if t.shape != e.shape:
        raise InvalidInputError(
            f"true_mask and estimated_mask must have the same shape, got {t.shape}, {e.shape}"
        )
    tp = int(np.sum(t & e))
    fp = int(np.sum(~t & e))
    fn = int(np.sum(t & ~e))
    denom = 2 * tp + fp + fn
    return 1.0 if denom == 0 else 2.0 * tp / denom


@register_metric("misclassification_rate", "common", "fraction of points classified wrongly")
def misclassification_rate(true_mask: Any, estimated_mask: Any) -> float:
    """Fraction of the N points where the estimated set (N,) and the true set (N,) disagree."""
    t = np.asarray(true_mask, dtype=bool).reshape(-1)
    e = np.asarray(estimated_mask, dtype=bool).reshape(-1)
    if t.shape != e.shape or t.size == 0:
        raise InvalidInputError(
            f"true_mask and estimated_mask must be non-empty of one shape, got {t.shape}, {e.shape}"
        )
    return float(np.mean(t != e))


class RunningSum:
    """A cumulative sum for trackers: ``add(v)`` returns the sum so far."""

    def __init__(self) -> None:
        self.total = 0.0

    def add(self, value: float) -> float:
        self.total += float(value)
        return self.total


class RunningBest:
    """The best value so far for trackers (``maximize`` selects max or min); NaN before any."""

    def __init__(self, maximize: bool = True) -> None:
        self.maximize = maximize
        self.best = float("nan")

    def add(self, value: float) -> float:
        v = float(value)
        if self.best != self.best or (v > self.best if self.maximize else v < self.best):
            self.best = v
        return self.best
