"""Metrics of the safe family (Losalka & Scarlett, AISTATS 2024, Sec. 2 and B.2.2).

On a grid of actions with noiseless ``F, G`` of shape (n_x, n_s) and threshold ``h``:

* ``f* = max{F : G <= h}`` (global safe optimum) and ``f*(x) = max_s{F(s, x) : G(s, x) <= h}``
  (per-x safe optimum) -- :func:`safe_optima`; regret is against the grid optimum, as in the
  authors' code;
* ``regret``: ``r_t = f* - f(s_t, x_t)`` (eq. 1; ``R_T`` is its sum);
* ``regret_prime``: ``r'_t = f*(x_t) - f(s_t, x_t)`` (eq. 2);
* ``regret_x``: ``r^X_t = max_x (f*(x) - f(s_hat_t^{(x)}, x))`` with the algorithm's best guess
  ``s_hat_t^{(x)}`` after round t (eq. 3, 16);
* ``simple_regret``: ``f* - f(recommended action)``;
* ``unsafe``: whether an evaluated action has true ``g > h`` (counted cumulatively by the tracker).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from boloop.errors import InvalidInputError
from boloop.metrics import register_metric

__all__ = ["safe_optima", "instant_regret", "regret_prime", "regret_x", "is_unsafe"]


def _grids(F: Any, G: Any) -> tuple[np.ndarray, np.ndarray]:
    F = np.asarray(F, dtype=np.float64)
    G = np.asarray(G, dtype=np.float64)
    if F.ndim != 2 or F.shape != G.shape or F.size == 0:
        raise InvalidInputError(
            f"F and G must be (n_x, n_s) of one shape, got {F.shape}, {G.shape}"
        )
    return F, G


def safe_optima(F: Any, G: Any, h: float) -> tuple[float, np.ndarray]:
    """``(f*, f*(x))``: the global safe optimum and the per-x safe optima, (n_x,).

    Rows with no safe action (impossible when ``s = 0`` is safe) get ``-inf``."""
    F, G = _grids(F, G)
    row = np.max(np.where(G <= float(h), F, -np.inf), axis=1)
    return float(np.max(row)), row


@register_metric("regret", "safe", "r_t = f* - f(s_t, x_t), global safe optimum (eq. 1)")
def instant_regret(f_opt: float, f_value: float) -> float:
    return float(f_opt) - float(f_value)


@register_metric("regret_prime", "safe", "r'_t = f*(x_t) - f(s_t, x_t), per-x optimum (eq. 2)")
def regret_prime(f_opt_x: float, f_value: float) -> float:
    return float(f_opt_x) - float(f_value)


@register_metric("regret_x", "safe", "r^X_t = max_x f*(x) - f(s_hat_t(x), x) (eq. 3)")
def regret_x(F: Any, f_opt_x: Any, best_s_index: Any) -> float:
    """``F`` (n_x, n_s), ``f_opt_x`` (n_x,), ``best_s_index`` (n_x,) grid indices of s_hat."""
    F = np.asarray(F, dtype=np.float64)
    idx = np.asarray(best_s_index, dtype=np.int64).reshape(-1)
    if idx.shape[0] != F.shape[0] or np.any(idx < 0) or np.any(idx >= F.shape[1]):
        raise InvalidInputError(f"best_s_index must be {F.shape[0]} indices in [0, {F.shape[1]})")
    return float(np.max(np.asarray(f_opt_x) - F[np.arange(F.shape[0]), idx]))


@register_metric("unsafe", "safe", "1 if the evaluated action has true g > h (summed by trackers)")
def is_unsafe(g_value: float, h: float) -> int:
    return int(float(g_value) > float(h))
