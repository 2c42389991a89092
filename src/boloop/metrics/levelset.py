"""Metrics of the level-set family (Inatsu et al., Sec. 2 and Sec. 5).

With the true upper set ``H* = {f >= theta}`` and an estimate ``H_t`` (bool masks over a finite
set X, or over an evaluation set X~ of random points standing in for a continuous X, Sec. 5.2):

* pointwise loss ``l_t(x) = |f(x) - theta| * 1[x misclassified]`` (Sec. 2),
* ``loss``: the average ``r_t = mean_x l_t(x)`` (the paper's misclassification loss),
* ``max_loss``: ``r~_t = max_x l_t(x)`` (Appendix A),
* ``fscore``: F-score of the upper set, ``2 Pre Rec / (Pre + Rec)`` with ``Pre = |H_t & H*| / |H_t|``
  and ``Rec = |H_t & H*| / |H*|`` (Sec. 5.1). The paper leaves the empty cases open; here
  ``Pre = 0`` when ``H_t`` is empty, ``Rec = 0`` when ``H*`` is empty, and ``F = 0`` when
  ``Pre + Rec = 0`` (spec P11).

Shapes: ``values`` (N,) noise-free ``f`` on the set, ``upper`` (N,) bools of ``H_t``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from boloop.errors import InvalidInputError
from boloop.metrics import register_metric

__all__ = ["pointwise_loss", "level_set_loss", "max_value_loss", "fscore"]


def _check(values: Any, upper: Any, threshold: float) -> tuple[np.ndarray, np.ndarray, float]:
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    u = np.asarray(upper).reshape(-1)
    if u.dtype != bool:
        raise InvalidInputError(f"upper must be a boolean mask, got dtype {u.dtype}")
    if v.shape != u.shape or v.size == 0:
        raise InvalidInputError(
            f"values and upper must be non-empty with equal shapes, got {v.shape} and {u.shape}"
        )
    th = float(threshold)
    if not np.isfinite(th):
        raise InvalidInputError(f"threshold must be finite, got {threshold!r}")
    return v, u, th


def pointwise_loss(values: Any, upper: Any, threshold: float) -> np.ndarray:
    """``l_t(x) = |f(x) - theta|`` where ``x`` is misclassified, else 0; (N,)."""
    v, u, th = _check(values, upper, threshold)
    truth = v >= th
    return np.where(truth != u, np.abs(v - th), 0.0)


@register_metric("loss", "levelset", "average misclassification loss r_t (Inatsu et al., Sec. 2)")
def level_set_loss(values: Any, upper: Any, threshold: float) -> float:
    """``r_t = (1/|X|) sum_x l_t(x)`` (or the mean over the evaluation set X~)."""
    return float(np.mean(pointwise_loss(values, upper, threshold)))


@register_metric("max_loss", "levelset", "max-value loss r~_t = max_x l_t(x) (Appendix A)")
def max_value_loss(values: Any, upper: Any, threshold: float) -> float:
    """``r~_t = max_x l_t(x)``."""
    return float(np.max(pointwise_loss(values, upper, threshold)))


@register_metric("fscore", "levelset", "F-score of the estimated upper set (Sec. 5.1)")
def fscore(true_upper: Any, upper: Any) -> float:
    """F-score of the estimate ``upper`` against ``true_upper`` (bool masks (N,))."""
    t = np.asarray(true_upper).reshape(-1)
    u = np.asarray(upper).reshape(-1)
    if t.dtype != bool or u.dtype != bool or t.shape != u.shape:
        raise InvalidInputError("true_upper and upper must be boolean masks of equal shape")
    tp = float(np.count_nonzero(t & u))
    n_est = float(np.count_nonzero(u))
    n_true = float(np.count_nonzero(t))
    pre = tp / n_est if n_est else 0.0
    rec = tp / n_true if n_true else 0.0
    return 2.0 * pre * rec / (pre + rec) if pre + rec > 0 else 0.0
