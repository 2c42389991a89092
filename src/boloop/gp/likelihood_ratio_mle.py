"""The maximum-likelihood problem (37) of COBOL's confidence set (Xu et al. 2024, App. B.3),
``l* = max_Z l(Z) s.t. Z^T K^{-1} Z <= B^2`` in whitened form ``Z = L w``, and the bound on the
gain of App. F's doubling test.

The ball's Lagrangian form ``argmax_w l(L w) - mu/2 ||w||^2`` is solved by Newton's method
(:func:`penalised_maximum_likelihood`), ``mu`` by a bracketed root search of ``||w(mu)|| = B``
(:func:`maximum_likelihood`). Part of :mod:`boloop.gp.likelihood_ratio`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from boloop.gp.likelihood_ratio_loglik import BoxedLogLikelihood, _as_likelihood, _cho_lapack

__all__ = [
    "MLEResult",
    "doubling_gain_bound",
    "maximum_likelihood",
    "penalised_maximum_likelihood",
]


@dataclass(frozen=True)
class MLEResult:
    """Solution of (37): whitened values ``w`` (n,), values ``Z = L w`` (n,), ``loglik`` = l*,
    the ball multiplier ``mu`` (0 when the norm constraint is inactive)."""

    w: np.ndarray
    Z: np.ndarray
    loglik: float
    mu: float


def penalised_maximum_likelihood(
    L: np.ndarray,
    r: np.ndarray | BoxedLogLikelihood,
    mu: float,
    w0: np.ndarray,
    tol: float = 1e-11,
    max_iter: int = 100,
) -> np.ndarray:
    """``argmax_w l(L w) - mu/2 ||w||^2`` by Newton with backtracking; L (n, n), r (n,) -> (n,).

    The Lagrangian form of the MLE (37) of Xu et al. (COBOL) for one multiplier ``mu`` of the
    norm ball ``||w|| <= B``: :func:`maximum_likelihood` searches ``mu`` so that the ball binds.
    ``r`` is the rejected indicator or a :class:`BoxedLogLikelihood` (boxed labelled values)."""
    lik = _as_likelihood(r)
    # trial points outside the box have the value -inf: their warnings are expected
    with np.errstate(divide="ignore", invalid="ignore"):
        return _newton_penalised_loop(L, lik, mu, w0, tol, max_iter)


def _newton_penalised_loop(
    L: np.ndarray, lik: BoxedLogLikelihood, mu: float, w0: np.ndarray, tol: float, max_iter: int
) -> np.ndarray:
    """Implementation of :func:`penalised_maximum_likelihood` (the objective ``l(L v) - mu/2 ||v||^2``
    evaluated without per-call overhead; ``L w`` of an accepted trial point is kept for the next
    iteration: the same product, so the same values)."""
    dpotrf, dpotrs = _cho_lapack()
    w = w0.copy()
    LT = L.T
    half_mu = 0.5 * mu
    Zw = L @ w
    f = float(lik.value_unchecked(Zw)) - half_mu * float(w @ w)
    for _ in range(max_iter):
        g, D = lik.grad_curvature(Zw)
        grad = LT @ g - mu * w
        if float(np.abs(grad).max()) <= tol:
            break
        H = (LT * D) @ L
        H.flat[:: H.shape[0] + 1] += mu
        # scipy's cho_factor / cho_solve are these LAPACK calls (lower triangle of H) after
        # checks that cost more than the solve at this size
        c, info = dpotrf(H, lower=1, clean=0)
        if info == 0:
            step, info = dpotrs(c, grad, lower=1)
        if info != 0:  # not positive definite: a gradient step
            step = grad / max(mu, 1e-12)
        t = 1.0
        while t > 1e-10:
            w_new = w + t * step
            Z_new = L @ w_new
            f_new = float(lik.value_unchecked(Z_new)) - half_mu * float(w_new @ w_new)
            if f_new >= f - 1e-14 * max(1.0, abs(f)):
                break
            t *= 0.5
        if t <= 1e-10:
            break
        w, f, Zw = w_new, f_new, Z_new
    return w


def maximum_likelihood(
    L: np.ndarray,
    rejected: np.ndarray,
    norm_bound: float,
    w0: np.ndarray | None = None,
    *,
    value_bound: float | None = None,
    mu_hint: float | None = None,
) -> MLEResult:
    """Solve (37): ``max_Z l(Z) s.t. Z^T K^{-1} Z <= B^2`` in whitened form ``Z = L w``.

    ``L`` (n, n) is the lower Cholesky factor of ``K + jitter I``; ``rejected`` (n,) in {0, 1}.
    ``value_bound``: also ``|Z_i| <= value_bound`` (by the log-barrier of :class:`BoxedLogLikelihood`;
    ``loglik`` then includes the barrier term). ``w0`` and ``mu_hint`` (the ball multiplier of a
    nearby problem, e.g. before the last label or kernel change) are warm starts: the root search
    for ``mu`` first tries a bracket of one unit of ``log mu`` around the hint (``mu_hint = 0``,
    a ball inactive there: with ``value_bound`` the unconstrained maximiser is tried first); the
    solution is the same (to the root and Newton tolerances) either way.
    """
    from scipy.optimize import brentq  # lazily: a study call must not pay for scipy.optimize

    n = L.shape[0]
    B = float(norm_bound)
    r = _as_likelihood(rejected, value_bound)
    if n == 0:
        return MLEResult(np.zeros(0), np.zeros(0), 0.0, 0.0)
    w_start = np.zeros(n) if w0 is None or w0.shape != (n,) else w0.copy()
    state = {"w": w_start}

    def norm_excess(log_mu: float) -> float:
        w = penalised_maximum_likelihood(L, r, math.exp(log_mu), state["w"])
        state["w"] = w
        return math.sqrt(float(w.dot(w))) - B  # np.linalg.norm(w), the same operations

    def root(a: float, b: float) -> float | None:
        """brentq on [a, b]; None if the end values' signs agree on re-evaluation (the Newton
        solves are warm-started, so a value within rounding of 0 can change sign)."""
        try:
            return float(brentq(norm_excess, a, b, xtol=1e-13, rtol=1e-13, maxiter=200))
        except ValueError:
            return None

    if mu_hint == 0.0 and r.box is not None:
        # the nearby problem's ball was inactive: try the unconstrained maximiser first (it
        # exists with the box's barrier); inside the ball it is the MLE, found without the
        # bracket search down to mu = 1e-14 (a dozen Newton solves)
        w = penalised_maximum_likelihood(L, r, 0.0, w_start)
        if np.linalg.norm(w) <= B:
            Z = L @ w
            return MLEResult(w, Z, float(r.value(Z)), 0.0)
    if mu_hint is not None and mu_hint > 0:  # warm start: a narrow bracket around the hint
        h = math.log(mu_hint)
        f_a = norm_excess(h - 0.5)
        if f_a >= 0:
            f_b = norm_excess(h + 0.5)
            if f_b <= 0:
                log_mu = root(h - 0.5, h + 0.5)
                if log_mu is not None:
                    return _mle_at(L, r, math.exp(log_mu), state["w"], B)
    # ||w(mu)|| <= ||L^T (r - p)|| / mu <= ||L||_2 sqrt(n) / mu: mu_hi makes the ball inactive
    mu_hi = float(np.linalg.norm(L, 2)) * math.sqrt(n) / B * 1.01 + 1e-12
    lo = math.log(mu_hi) - 2.0
    f_hi = norm_excess(math.log(mu_hi))
    f_lo = norm_excess(lo)
    while f_lo < 0 and lo > math.log(1e-14):
        lo -= 3.0
        f_lo = norm_excess(lo)
    if f_lo < 0:  # the unpenalised maximiser lies inside the ball: the constraint is inactive
        w = penalised_maximum_likelihood(L, r, 0.0, state["w"])
        if np.linalg.norm(w) <= B:
            Z = L @ w
            return MLEResult(w, Z, float(r.value(Z)), 0.0)
        w = state["w"]
        Z = L @ w
        return MLEResult(w, Z, float(r.value(Z)), math.exp(lo))
    hi = math.log(mu_hi)
    if f_hi > 0:  # should not happen (bound above); widen defensively
        while f_hi > 0 and hi < 50:
            hi += 3.0
            f_hi = norm_excess(hi)
    log_mu = root(lo, hi)
    if log_mu is None:  # an end value is 0 up to rounding: that end is the root
        log_mu = min((lo, hi), key=lambda x: abs(norm_excess(x)))
    return _mle_at(L, r, math.exp(log_mu), state["w"], B)


def doubling_gain_bound(
    L: np.ndarray,
    rejected: np.ndarray,
    mle: MLEResult,
    norm_bound: float,
    value_bound: float | None = None,
) -> float:
    """Upper bound on ``l(MLE | norm_bound) - mle.loglik`` (the gain of App. F's doubling test
    when ``norm_bound`` is the doubled ``B``), with a margin for rounding.

    ``w -> l(L w)`` is concave (with the box's barrier too, on its domain), so every ``w`` with
    ``||w|| <= B'`` has ``l(L w) <= l(L w*) + h^T (w - w*) <= l(L w*) + B' ||h|| - h^T w*``,
    ``h = L^T grad l(Z*)`` at any point ``w*`` of the domain (here the MLE at ``B``; the
    maximiser at ``B'`` is such a ``w``, and so is the point the solver returns for it). The
    margin ``1e-8 (1 + |l*|)`` covers the rounding of the computed log-likelihoods. O(n^2).
    """
    r = _as_likelihood(rejected, value_bound)
    h = L.T @ r.grad(mle.Z)
    gain = float(norm_bound) * float(np.linalg.norm(h)) - float(h @ mle.w)
    return gain + 1e-8 * (1.0 + abs(mle.loglik))


def _mle_at(L: np.ndarray, r: BoxedLogLikelihood, mu: float, w0: np.ndarray, B: float) -> MLEResult:
    """The MLE for the ball multiplier ``mu`` found by the root search of (37)."""
    w = penalised_maximum_likelihood(L, r, mu, w0)
    # project onto the sphere to remove the root-finding residual (feasibility is exact)
    nw = float(np.linalg.norm(w))
    if nw > B:
        w = w * (B / nw)
    Z = L @ w
    return MLEResult(w, Z, float(r.value(Z)), mu)
