"""The worst case, axis by axis, over the length-scales the data cannot rule out (for safety).

:meth:`boloop.gp.hyperparameters.HyperparameterLearning.conservative` shortens all length-scales
by one common factor. That is not enough where the data have no spread along an axis: the safe
family's first data all lie at ``s = 0``, so the likelihood says nothing about the length-scale in
``s`` and the prior alone sets it, while the other axes pin the common factor near 1 (issue 18:
M-SafeOpt then jumped two grid steps up in ``s`` on a ``safe/random-gp`` draw and evaluated an
unsafe action). :func:`axiswise_conservative` shortens each length-scale on its own to the edge of
the likelihood-ratio set of the hyperparameters (the others held at their fitted values):

    min  l_j   subject to   log p(theta_j(l_j) | D) >= log p(theta_hat | D) - chi2_p(level) / 2,

never below a floor per axis (an unidentified axis goes to its floor: the likelihood-ratio set is
then bounded only by the prior, and a model assuming length-scales below the data's resolution
could never certify anything).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.optimize import brentq

from boloop.gp.exact import ExactGP
from boloop.gp.kernels import StationaryKernel

__all__ = ["axiswise_conservative", "likelihood_ratio_edge", "zero_mean_output_variance"]


def likelihood_ratio_edge(
    gp: ExactGP, p0: np.ndarray, idx: Sequence[int], *, best: float, drop: float, lower: float
) -> float:
    """The most negative shift ``t`` in ``[lower, 0]`` of the packed log-parameters ``idx`` of
    ``p0`` (together) that keeps the log posterior at least ``best - drop``: the edge of the
    likelihood-ratio set along that direction (``lower`` when the whole range is inside)."""
    sel = np.asarray(idx, dtype=np.intp)

    def gap(t: float) -> float:
        p = p0.copy()
        p[sel] += t
        try:
            v = gp.log_posterior(p)[0]
        except Exception:
            return -math.inf
        return (v - best + drop) if math.isfinite(v) else -math.inf

    return lower if gap(lower) >= 0 else float(brentq(gap, lower, 0.0, xtol=1e-3))


def axiswise_conservative(
    gp: ExactGP, floor: np.ndarray, *, level: float = 0.95, df: int | None = None
) -> np.ndarray:
    """Shorten each of ``gp``'s length-scales to its likelihood-ratio edge, at least ``floor``.

    ``floor`` (d,) holds absolute length-scales; an axis already at or below its floor is left as
    it is. The kernel is changed in place and the GP refactorised. Returns the factors (d,) by
    which the length-scales were multiplied (ones for a kernel without fitted length-scales).
    Call after fitting (the current hyperparameters are taken as the optimum).

    ``df`` is the degrees of freedom of the chi-squared threshold ``0.5 chi2_df(level)``: ``None``
    (default) takes the number of free hyperparameters ``p``, the joint set (every axis may move
    as far as the whole set allows); ``df=1`` is the likelihood-ratio interval of that one
    length-scale at ``level``, the usual interval for a single parameter and the one the safe
    family uses (issue 18: with ``p`` the interval of each axis was that of a ``p``-dimensional
    set, twice as wide in log-likelihood, and the bounds it gave were the main price in regret).
    """
    kern = gp.kernel
    names = [nm for nm, free in zip(kern.theta_names, kern.free_mask) if free]
    ls_names = [nm for nm in names if nm.startswith("lengthscale")]
    if not isinstance(kern, StationaryKernel) or gp.n < 2 or not ls_names:
        return np.ones(len(ls_names))
    floor = np.broadcast_to(np.asarray(floor, dtype=np.float64), (len(ls_names),))
    p0 = gp.free_parameters()
    best = gp.log_posterior(p0)[0]
    from scipy.stats import chi2  # lazily: a study call must not pay for scipy.stats

    drop = 0.5 * float(chi2.ppf(level, df=p0.size if df is None else int(df)))
    theta_names = kern.theta_names
    theta = kern.theta.copy()
    log_c = np.zeros(len(ls_names))
    for k, name in enumerate(ls_names):
        i = names.index(name)
        lower = math.log(floor[k]) - p0[i]
        if lower >= 0:
            continue
        log_c[k] = likelihood_ratio_edge(gp, p0, [i], best=best, drop=drop, lower=lower)
        theta[theta_names.index(name)] += log_c[k]
    kern.theta = theta
    gp.set_data(gp.X.copy(), gp.y.copy())
    return np.exp(log_c)


def zero_mean_output_variance(gp: ExactGP, X: np.ndarray, y: np.ndarray) -> float:
    """The maximum-likelihood output variance of a **zero-mean** GP with ``gp``'s kernel shape
    (length-scales) and noise variance on data ``(X, y)``.

    With ``K_1`` the kernel matrix at unit variance, ``K_1 = Q diag(lam) Q^T`` and ``z = Q^T y``,
    the negative log marginal likelihood in the variance ``v`` is
    ``0.5 sum_i (z_i^2 / (v lam_i + sigma^2) + log(v lam_i + sigma^2))`` (a one-dimensional
    problem, minimised over ``log v``); without noise the optimum is ``y^T K_1^{-1} y / n``.

    The safe family learns ``g``'s shape on a constant-mean twin and then certifies with the
    zero-mean model of ``g - h``; this is the amplitude that zero-mean model itself fits to the
    data's distance from ``h`` (issue 18: the second moment ``mean(y^2)`` used before is that
    optimum only for uncorrelated data, and overstated the amplitude of correlated ones).
    """
    from scipy.optimize import minimize_scalar

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    kern = gp.kernel.clone()
    theta = kern.theta.copy()
    names = list(kern.theta_names)
    if "variance" not in names:
        raise ValueError("zero_mean_output_variance needs a kernel with an output variance")
    theta[names.index("variance")] = 0.0
    kern.theta = theta
    lam, Q = np.linalg.eigh(kern.k(X))
    lam = np.maximum(lam, 0.0)
    z2 = (Q.T @ y) ** 2
    s2 = max(float(gp.noise_variance), 1e-12 * float(np.max(lam, initial=1.0)))

    def nll(log_v: float) -> float:
        d = math.exp(log_v) * lam + s2
        return 0.5 * float(np.sum(z2 / d + np.log(d)))

    scale = max(float(np.mean(y**2)), 1e-300)
    centre = math.log(scale)
    res = minimize_scalar(
        nll, bounds=(centre - 30.0, centre + 30.0), method="bounded", options={"xatol": 1e-6}
    )
    return float(math.exp(res.x))
