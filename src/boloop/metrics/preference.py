"""Metrics of the preference family (Kayal et al., eq. 1 and Corollary 4.4).

``utility`` (m,) is the latent utility of the arms, with ``P(x_i preferred to x_j) =
mu(utility[i] - utility[j])`` (Bradley-Terry-Luce, sigmoid link). Regrets are measured against
``f* = max utility`` (not against one argmax index, so tied maximisers have zero regret).

* per-step regret ``r_t = [mu(f* - f(x_t)) + mu(f* - f(x'_t)) - 1] / 2`` (the summand of eq. 1),
  in [0, 1/2], zero iff both arms are optimal;
* cumulative regret ``R(T) = sum_t r_t`` (eq. 1);
* simple regret of a recommendation ``x_hat``: ``mu(f* - f(x_hat)) - 1/2`` (Section 1.3 /
  Corollary 4.4), in [0, 1/2).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from boloop.errors import InvalidInputError
from boloop.metrics import register_metric

__all__ = ["duel_regret", "cumulative_duel_regret", "preference_simple_regret"]


def _utility(utility: Any) -> np.ndarray:
    u = np.asarray(utility, dtype=np.float64).reshape(-1)
    if u.size == 0 or not np.all(np.isfinite(u)):
        raise InvalidInputError("utility must be a non-empty finite vector")
    return u


@register_metric("regret", "preference", "per-step duel regret r_t of eq. 1, in [0, 1/2]")
def duel_regret(utility: Any, i: Any, j: Any) -> np.ndarray | float:
    """``r_t = [mu(f* - f(x_i)) + mu(f* - f(x_j)) - 1] / 2`` for arm indices ``i``, ``j``
    (scalars or arrays of the same shape)."""
    from scipy.special import expit

    u = _utility(utility)
    f_star = float(np.max(u))
    i_arr = np.asarray(i)
    j_arr = np.asarray(j)
    r = 0.5 * (expit(f_star - u[i_arr]) + expit(f_star - u[j_arr]) - 1.0)
    r = np.maximum(r, 0.0)
    return float(r) if r.ndim == 0 else r


@register_metric("cumulative_regret", "preference", "R(T) of eq. 1: running sum of r_t")
def cumulative_duel_regret(utility: Any, pairs: Any) -> np.ndarray:
    """Running sum (n,) of ``r_t`` over the duels ``pairs`` (n, 2) of arm indices."""
    P = np.asarray(pairs).reshape(-1, 2)
    return np.cumsum(np.atleast_1d(duel_regret(utility, P[:, 0], P[:, 1])))


@register_metric("simple_regret", "preference", "mu(f* - f(x_hat)) - 1/2 of the recommended arm")
def preference_simple_regret(utility: Any, index: Any) -> float:
    """``P(x* preferred to x_hat) - 1/2`` for the recommended arm index ``index``."""
    from scipy.special import expit

    u = _utility(utility)
    return float(max(expit(float(np.max(u)) - u[int(index)]) - 0.5, 0.0))
