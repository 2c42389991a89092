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

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["refine_on_box", "perturb_on_box", "minimize_lbfgsb"]


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


def _setulb() -> Any:
    """scipy's L-BFGS-B step with the signature of scipy >= 1.15, or ``None``."""
    try:
        from scipy.optimize import _lbfgsb
    except ImportError:  # pragma: no cover - scipy without the module
        return None
    setulb = getattr(_lbfgsb, "setulb", None)
    doc = getattr(setulb, "__doc__", "") or ""
    if not doc.startswith("setulb(m,x,l,u,nbd,f,g,factr,pgtol,wa,iwa,task,lsave,isave,dsave,maxls"):
        return None  # pragma: no cover - another scipy: the public interface is used
    return setulb


def minimize_lbfgsb(
    fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x0: np.ndarray,
    bounds: Sequence[tuple[float | None, float | None]],
    *,
    maxiter: int = 15000,
    ftol: float = 2.2204460492503131e-09,
    gtol: float = 1e-5,
    maxcor: int = 10,
    maxls: int = 20,
    maxfun: int = 15000,
    public_interface: bool = False,
) -> tuple[np.ndarray, float, int]:
    """Minimise ``fun(x) -> (value, gradient)`` from ``x0`` (p,) within ``bounds`` (p pairs,
    ``None`` for no bound) by L-BFGS-B (Byrd, Lu, Nocedal and Zhu 1995): returns ``(x, value,
    evaluations)``.

    The same iterates and end point as ``scipy.optimize.minimize(fun, x0, jac=True,
    method="L-BFGS-B", bounds=bounds, options=...)`` with these options, for the small problems
    of hyperparameter fits, where scipy's wrapping per call and per evaluation (bounds
    standardisation, a scalar-function object, a result with an inverse-Hessian operator) costs
    as much as a likelihood evaluation. It drives scipy's own L-BFGS-B step (the ``setulb``
    reverse communication of scipy >= 1.15) with the loop of scipy's ``_minimize_lbfgsb``; with
    another scipy, or with ``public_interface=True``, it calls ``scipy.optimize.minimize``
    (the same result; tests compare the two).
    """
    setulb = None if public_interface else _setulb()
    if setulb is None:
        from scipy.optimize import minimize

        res = minimize(
            fun,
            x0,
            jac=True,
            method="L-BFGS-B",
            bounds=list(bounds),
            options={
                "maxiter": maxiter,
                "ftol": ftol,
                "gtol": gtol,
                "maxcor": maxcor,
                "maxls": maxls,
                "maxfun": maxfun,
            },
        )
        return np.asarray(res.x), float(res.fun), int(res.nfev)
    x = np.array(x0, dtype=np.float64).ravel()
    n = x.size
    if len(bounds) != n:
        raise ValueError("length of x0 != length of bounds")
    lo = np.array([-np.inf if b[0] is None else float(b[0]) for b in bounds])
    hi = np.array([np.inf if b[1] is None else float(b[1]) for b in bounds])
    if np.any(lo > hi):
        raise ValueError("L-BFGS-B: a lower bound is greater than its upper bound")
    np.clip(x, lo, hi, out=x)
    has_lo, has_hi = ~np.isinf(lo), ~np.isinf(hi)
    low = np.where(has_lo, lo, 0.0)
    up = np.where(has_hi, hi, 0.0)
    # L-BFGS-B's codes: 0 unbounded, 1 lower only, 2 both, 3 upper only
    nbd = np.array([0, 1, 3, 2], dtype=np.int32)[has_lo.astype(int) + 2 * has_hi.astype(int)]
    m = int(maxcor)
    factr = ftol / np.finfo(float).eps
    f: Any = np.array(0.0, dtype=np.float64)
    g = np.zeros(n, dtype=np.float64)
    wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m, np.float64)
    iwa = np.zeros(3 * n, dtype=np.int32)
    task = np.zeros(2, dtype=np.int32)
    ln_task = np.zeros(2, dtype=np.int32)
    lsave = np.zeros(4, dtype=np.int32)
    isave = np.zeros(44, dtype=np.int32)
    dsave = np.zeros(29, dtype=np.float64)
    nfev = 0
    iterations = 0
    while True:
        g = g.astype(np.float64)
        setulb(
            m,
            x,
            low,
            up,
            nbd,
            f,
            g,
            factr,
            gtol,
            wa,
            iwa,
            task,
            lsave,
            isave,
            dsave,
            maxls,
            ln_task,
        )
        if task[0] == 3:  # the routine wants f and g at x
            value, grad = fun(x.copy())
            f = float(value)
            g = np.atleast_1d(np.asarray(grad, dtype=np.float64))
            nfev += 1
        elif task[0] == 1:  # a new iterate
            iterations += 1
            if iterations >= maxiter:
                task[0], task[1] = 5, 504
            elif nfev > maxfun:
                task[0], task[1] = 5, 502
        else:
            break
    return x, float(f), nfev
