"""Optimising a function over a box: the one mechanism every family uses.

Acquisition functions are maximised over a box the same way in every family: score a large
candidate set, then refine the best candidates locally. :func:`refine_on_box` is the local part
with a solver (multi-start L-BFGS-B inside the box by default; the level-set family's
acquisition, a benchmark's optimum with Nelder-Mead); :func:`perturb_on_box` is the derivative-free
local part (Gaussian perturbations around the best points at shrinking radii; the expert family,
whose scores are batched and have no gradient). Both keep the best point found, never a worse
one than the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

__all__ = ["refine_on_box", "perturb_on_box"]


def refine_on_box(
    objective: Callable[[np.ndarray], Any],
    starts: Iterable[np.ndarray],
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    score: Callable[[np.ndarray], float],
    best_x: np.ndarray,
    best_value: float,
    jac: bool = False,
    method: str = "L-BFGS-B",
    options: Mapping[str, Any] | None = None,
) -> tuple[np.ndarray, float]:
    """Minimise ``objective`` from each start in turn and keep the end point with the highest
    ``score`` if it beats ``best_value``: returns ``(best_x, best_value)`` updated.

    ``objective(x)`` takes one point (d,) and returns a value, or ``(value, gradient)`` when
    ``jac``. With ``method="L-BFGS-B"`` the solver stays in the box ``[lower, upper]``; any other
    scipy method (``"Nelder-Mead"``) is run without bounds on the objective at the point clipped
    to the box. Every end point is clipped to the box; one with a non-finite coordinate is
    skipped. ``score`` (higher is better) judges the end points against ``best_value``, so the
    caller may rank by a quantity other than the one minimised (the level-set policies re-score
    with the GP's own prediction).
    """
    from scipy.optimize import minimize  # lazily: ~0.1 s that a study call skips

    lo = np.asarray(lower, dtype=np.float64)
    hi = np.asarray(upper, dtype=np.float64)
    if method == "L-BFGS-B":
        fun, bounds = objective, list(zip(lower, upper))
    else:

        def fun(x: np.ndarray) -> Any:
            return objective(np.clip(x, lo, hi))

        bounds = None
    for x0 in starts:
        res = minimize(fun, x0, jac=jac, method=method, bounds=bounds, options=dict(options or {}))
        x_new = np.clip(res.x, lower, upper)
        if np.all(np.isfinite(x_new)):
            val = score(x_new)
            if val > best_value:
                best_x, best_value = x_new, val
    return best_x, best_value


def perturb_on_box(
    score: Callable[[np.ndarray], np.ndarray],
    U: np.ndarray,
    values: np.ndarray,
    rng: np.random.Generator,
    *,
    n_keep: int = 3,
    radii: tuple[float, ...] = (0.05, 0.015, 0.004),
    n_local: int = 24,
) -> tuple[np.ndarray, float]:
    """Derivative-free refinement in the unit box: at each radius in turn, the ``n_keep`` best
    points so far get ``n_local`` Gaussian perturbations each (standard deviation ``radius``,
    clipped to [0, 1]^d), scored in one batch; returns the lowest-scoring point and its score.

    ``score`` maps (m, d) to (m,) (lower is better); ``U`` (n, d) and ``values`` (n,) are the
    scored candidates to start from; ``rng`` draws the perturbations.
    """
    dim = U.shape[1]
    pool_U, pool_v = U, values
    for radius in radii:
        order = np.argsort(pool_v)[:n_keep]
        centres = pool_U[order]
        local = centres[:, None, :] + radius * rng.standard_normal((centres.shape[0], n_local, dim))
        local = np.clip(local.reshape(-1, dim), 0.0, 1.0)
        lv = score(local)
        pool_U = np.vstack([centres, local])
        pool_v = np.concatenate([pool_v[order], lv])
    i = int(np.argmin(pool_v))
    return pool_U[i], float(pool_v[i])
