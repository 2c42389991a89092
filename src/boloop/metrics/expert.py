"""Metrics of the expert family (COBOL, Xu et al. 2024, Sec. 2 "Metrics" and Sec. 5).

The paper minimises f. With ``f*`` the global minimum value:

* cumulative regret over f-queries ``R_{Q^f_T} = sum_{t in Q^f_T} (f(x_t) - f*)`` -- only
  evaluated points count, rejected proposals do not;
* simple regret ``SR_t = min_{tau in Q^f_t} f(x_tau) - f*``;
* cumulative expert queries ``Q^g_T = |Q^g_T|`` (the handover: it should plateau);
* the number of f-evaluations ``|Q^f_T|``;
* ``labels_asked`` and ``labels_rejected``: BO-phase labels asked and rejected (the budget counts
  f-evaluations by default, so labels are reported separately; initial labels not counted).

The reference code's "cumulative regret" is a different quantity (the running sum of the simple
regret after each evaluation); :func:`cumulative_simple_regret` computes it for comparison.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from boloop.errors import InvalidInputError
from boloop.metrics import register_metric

__all__ = [
    "evaluation_regret",
    "cumulative_regret",
    "simple_regret",
    "cumulative_count",
    "labels_asked",
    "labels_rejected",
    "cumulative_simple_regret",
]


def _values(values: Any, name: str) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(v)):
        raise InvalidInputError(f"{name} must be finite")
    return v


@register_metric("regret", "expert", "f(x_t) - f* of each evaluated point (minimisation)")
def evaluation_regret(f_values: Any, f_opt: float) -> np.ndarray:
    """Instantaneous regret ``f(x_t) - f*`` of evaluated values (n,) -> (n,)."""
    return _values(f_values, "f_values") - float(f_opt)


@register_metric("cumulative_regret", "expert", "R_{Q^f_T}: sum of f(x_t) - f* over evaluations")
def cumulative_regret(f_values: Any, f_opt: float) -> np.ndarray:
    """Running ``R_{Q^f_t}`` over the evaluated values (n,) -> (n,)."""
    return np.cumsum(evaluation_regret(f_values, f_opt))


@register_metric("simple_regret", "expert", "SR_t = min over evaluations of f(x_tau) - f*")
def simple_regret(f_values: Any, f_opt: float) -> np.ndarray:
    """Running ``SR_t`` over the evaluated values (n,) -> (n,)."""
    return np.minimum.accumulate(evaluation_regret(f_values, f_opt))


@register_metric("expert_queries", "expert", "cumulative number of expert queries |Q^g_t|")
def cumulative_count(flags: Any) -> np.ndarray:
    """Running count of the True entries of ``flags`` (n,) (expert asked / f evaluated)."""
    return np.cumsum(np.asarray(flags, dtype=bool).reshape(-1)).astype(np.float64)


@register_metric("labels_asked", "expert", "cumulative number of labels asked (BO phase)")
def labels_asked(flags: Any) -> np.ndarray:
    """Running count of labels asked: ``flags`` (n,) True where a label was asked."""
    return cumulative_count(flags)


@register_metric("labels_rejected", "expert", "cumulative number of rejected labels (BO phase)")
def labels_rejected(flags: Any) -> np.ndarray:
    """Running count of rejects: ``flags`` (n,) True where a label was answered *reject*."""
    return cumulative_count(flags)


@register_metric(
    "cumulative_simple_regret", "expert", "reference code's curve: running sum of SR_t"
)
def cumulative_simple_regret(f_values: Any, f_opt: float) -> np.ndarray:
    """The reference code's logged "cumulative regret": ``sum_{s<=t} SR_s`` (n,) -> (n,)."""
    return np.cumsum(simple_regret(f_values, f_opt))
