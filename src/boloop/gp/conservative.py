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

Any kernel with ``lengthscale`` entries in its ``theta`` is handled: a stationary kernel, or
:class:`~boloop.gp.kernels.StationaryPlusTrend`, whose trend (and intercept) variances stay at
their fitted values while the stationary part's length-scales are shortened (the
likelihood-ratio set is that of all free hyperparameters, the trend's included), unless a
ceiling asks for them to be raised to the set's upper edge.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from boloop.gp.exact import ExactGP

__all__ = ["axiswise_conservative", "likelihood_ratio_edge"]


def likelihood_ratio_edge(
    gp: ExactGP,
    p0: np.ndarray,
    idx: Sequence[int] | np.ndarray,
    *,
    best: float,
    drop: float,
    lower: float | None = None,
    upper: float | None = None,
) -> float:
    """The shift ``t`` farthest from 0 in ``[lower, 0]`` (or, with ``upper`` instead, in
    ``[0, upper]``) of the packed log-parameters ``idx`` of ``p0`` (together) that keeps the log
    posterior at least ``best - drop``: the edge of the likelihood-ratio set along that
    direction (``lower`` or ``upper`` when the whole range is inside)."""
    if (lower is None) == (upper is None):
        raise ValueError("give exactly one of lower (<= 0) and upper (>= 0)")
    sel = np.asarray(idx, dtype=np.intp)
    bound = float(lower if lower is not None else upper)  # type: ignore[arg-type]

    def gap(t: float) -> float:
        p = p0.copy()
        p[sel] += t
        try:
            v = gp.log_posterior(p)[0]
        except Exception:
            return -math.inf
        return (v - best + drop) if math.isfinite(v) else -math.inf

    if gap(bound) >= 0:
        return bound
    from scipy.optimize import brentq  # lazily: a study call must not pay for scipy.optimize

    a, b = (bound, 0.0) if bound < 0 else (0.0, bound)
    return float(brentq(gap, a, b, xtol=1e-3))


def axiswise_conservative(
    gp: ExactGP,
    floor: np.ndarray,
    *,
    level: float = 0.95,
    trend_ceiling: float | None = None,
    offset_ceiling: float | None = None,
) -> np.ndarray:
    """Shorten each of ``gp``'s length-scales to its likelihood-ratio edge, at least ``floor``.

    ``floor`` (d,) holds absolute length-scales; an axis already at or below its floor is left as
    it is. With ``trend_ceiling`` (an absolute variance) and a free ``trend_variance`` (a
    :class:`~boloop.gp.kernels.StationaryPlusTrend`), the trend's slope variance is raised to
    the upper edge of the same set, at most ``trend_ceiling``: a larger slope variance is the
    worse case above the data. Likewise ``offset_ceiling`` for a free ``offset_variance`` (the
    intercept's prior variance: every posterior variance is non-decreasing in it). Each edge is
    found with the others held at their fitted values.
    The kernel is changed in place and the GP refactorised. Returns the factors (d,) by which
    the length-scales were multiplied (ones for a kernel without fitted length-scales).
    Call after fitting (the current hyperparameters are taken as the optimum).
    """
    kern = gp.kernel
    names = [nm for nm, free in zip(kern.theta_names, kern.free_mask) if free]
    ls_names = [nm for nm in names if nm.startswith("lengthscale")]
    if gp.n < 2 or not ls_names:
        return np.ones(len(ls_names))
    floor = np.broadcast_to(np.asarray(floor, dtype=np.float64), (len(ls_names),))
    p0 = gp.free_parameters()
    best = gp.log_posterior(p0)[0]
    from scipy.stats import chi2  # lazily: a study call must not pay for scipy.stats

    drop = 0.5 * float(chi2.ppf(level, df=p0.size))
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
    for name, ceiling in (("trend_variance", trend_ceiling), ("offset_variance", offset_ceiling)):
        if ceiling is None or name not in names:
            continue
        i = names.index(name)
        upper = math.log(float(ceiling)) - p0[i]
        if upper > 0:
            theta[theta_names.index(name)] += likelihood_ratio_edge(
                gp, p0, [i], best=best, drop=drop, upper=upper
            )
    kern.theta = theta
    gp.set_data(gp.X.copy(), gp.y.copy())
    return np.exp(log_c)
