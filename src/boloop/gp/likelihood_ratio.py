"""The likelihood-ratio confidence set of an expert's latent belief ``g`` (COBOL, Xu et al. 2024).

Paper: Xu, Adachi, Jones and Osborne, "Principled Bayesian Optimisation in Collaboration with
Human Experts", NeurIPS 2024, Sec. 3.2 (Lemma 3.2, Remarks 3.4/3.5), App. B.3 (eq. 37-39) and
App. F (online doubling of ``B_g`` and ``alpha_1``).

Model (Assumption 2.1): a label ``1`` means *reject* and ``P(1 | x) = S(g(x))`` with ``S`` the
sigmoid; ``g`` lies in the RKHS ball ``||g||_k <= B``. With ``n`` labelled points ``X`` (n, d),
labels ``r`` (n,) in {0, 1} and values ``Z = g(X)``, the log-likelihood is

    l(Z) = sum_i r_i Z_i - log(1 + exp(Z_i))                                   (concave)

(37) MLE (printed as a min; it is a max):  l* = max_Z l(Z)  s.t.  Z^T K^{-1} Z <= B^2.
(38)/(39) for a fixed query point x, with z = g(x):

    g_upper(x) = max z,  g_lower(x) = min z   s.t.  [Z; z]^T K_{n+1}^{-1} [Z; z] <= B^2,
                                                     l(Z) >= l* - alpha_1

How it is solved here (exact, no generic NLP solver):

* With ``L = chol(K + jitter I)``, ``w = L^{-1} Z``, ``a(x) = L^{-1} k(X, x)`` and
  ``s(x)^2 = k(x, x) + jitter - ||a(x)||^2``, the Schur complement gives
  ``[Z; z]^T K_{n+1}^{-1} [Z; z] = ||w||^2 + ((z - a^T w) / s)^2``. Writing ``z = a^T w + s u``,
  the norm constraint is ``||w||^2 + u^2 <= B^2``: closed form in the query value, and
  ``g_upper(x) = max a^T w + s u`` over the set ``C = {(w, u): ||(w, u)|| <= B, l(L w) >= l0}``,
  which is the same for every x. ``g_lower(x) = -(max over C of -a^T w + s u)``.
* The MLE is a trust-region-like problem: ``w(mu) = argmax l(Lw) - mu/2 ||w||^2`` by Newton,
  and ``mu`` by a bracketed root search of ``||w(mu)|| = B``.
* The bounds: when the ball's own maximiser ``B (a, s) / sqrt(k(x, x))`` satisfies the likelihood
  constraint the bound is ``B sqrt(k(x, x) + jitter)``; otherwise both constraints are active and
  the KKT system (in ``w``, the ball multiplier ``mu`` and the likelihood multiplier ``nu``) is
  solved by Newton's method for all candidates at once, started from the exact solution of a
  quadratic model of the problem (likelihood expanded at the MLE; separable in the eigenbasis of
  the MLE's Hessian, which all candidates share). Each Newton system
  ``(mu I + nu L^T D L) x = b`` is solved by Woodbury through ``G = mu I + S K S``
  (``S = sqrt(nu D)``), formed elementwise and factored with LAPACK ``dposv`` row by row; the
  line search re-evaluates only the rows whose step is not yet accepted and its residuals are
  reused by the next iteration. Candidates that have not converged
  are finished by a slower, safeguarded dual method (inner Newton in ``w``, damped Newton on the
  convex 2-D dual in ``(mu, nu)`` with backtracking), so every returned bound is a KKT point.

Shapes: labelled inputs (n, d), labels (n,), candidates (m, d) -> bounds (m,).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from boloop._validation import as_points
from boloop.errors import InvalidInputError, NotFittedError
from boloop.gp.exact import robust_cholesky
from boloop.gp.kernels import Kernel

__all__ = [
    "log_likelihood",
    "maximum_likelihood",
    "MLEResult",
    "support_values",
    "relaxed_support_values",
    "inner_support_values",
    "doubling_gain_bound",
    "LikelihoodRatioModel",
    "BoxedLogLikelihood",
    "penalised_maximum_likelihood",
    "mle_eigenbasis",
]

logger = logging.getLogger("boloop")

try:  # the C routine that ``np.einsum`` calls when not optimising (the same values, without
    # its Python-level dispatch, ~1.5 us a call: the Newton loop makes ~300 such calls per bound)
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # pragma: no cover - NumPy < 2 or a future layout
    _einsum = np.einsum

S_MIN = 1e-9  # floor on s(x): the u-term then contributes at most 1e-9 * B
# how far an inner width must exceed a threshold to decide it without the exact bounds
INNER_MARGIN = 1e-6
_NEWTON_BLOCK = 128  # rows per block of the batched Newton solves (cache-sized (128, n, n))
_HALVING_BLOCKS = (2, 6, 21)  # the line search's halvings 1-2, 3-8, 9-29, each block in one batch
# the step factors 2^-b of each block's halvings (b = 1, 2; 3, ..., 8; 9, ..., 29)
_HALVING_FACTORS = tuple(
    0.5 ** np.arange(sum(_HALVING_BLOCKS[:i]) + 1, sum(_HALVING_BLOCKS[: i + 1]) + 1)
    for i in range(len(_HALVING_BLOCKS))
)


def log_likelihood(Z: np.ndarray, rejected: np.ndarray) -> np.ndarray:
    """``l(Z) = sum r Z - log(1 + e^Z)`` over the last axis; Z (..., n), rejected (n,) -> (...)."""
    return np.sum(rejected * Z - np.logaddexp(0.0, Z), axis=-1)


_BOX_BARRIER = 1e-3  # weight of the barrier that boxes the labelled values (BoxedLogLikelihood)


class BoxedLogLikelihood:
    """``l(Z)`` of (4) and, with a box ``|Z_i| <= b`` on the labelled values, ``l(Z) + tau
    sum log(1 - (Z_i / b)^2)`` (``-inf`` outside the box).

    The box is imposed by a log-barrier of weight ``tau`` (an interior-point term): the set
    ``{l_b(Z) >= l_b* - alpha}`` lies inside the box and tends to ``{l(Z) >= l* - alpha} & box``
    as ``tau -> 0``. With ``tau = 1e-3`` the bounds agree with the hard box (cvxpy) to about
    0.05 logit units, the MLE value to about 0.08 (tests); a smaller ``tau`` (1e-5: 1e-3
    agreement) makes the batched Newton method of :func:`support_values` stall near the box and
    fall back to the slow dual method for every direction. ``l_b`` is concave, so every convexity argument of the solvers holds
    unchanged. Methods act on the last axis of Z (..., n).
    """

    def __init__(self, rejected: np.ndarray, box: float | None = None, tau: float = _BOX_BARRIER):
        self.r = np.asarray(rejected, dtype=np.float64)
        self.box = None if box is None else float(box)
        self.tau = float(tau)

    def value(self, Z: np.ndarray) -> np.ndarray:
        ll = log_likelihood(Z, self.r)
        if self.box is None:
            return ll
        q = (Z / self.box) ** 2
        inside = np.all(q < 1.0, axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            bar = np.sum(np.log1p(-np.minimum(q, 1.0 - 1e-300)), axis=-1)
        return np.where(inside, ll + self.tau * bar, -np.inf)

    def grad(self, Z: np.ndarray) -> np.ndarray:
        """``d l_b / d Z`` (..., n)."""
        g = self.r - _expit()(Z)
        if self.box is None:
            return g
        den = np.maximum(self.box**2 - Z * Z, 1e-12 * self.box**2)
        return g - self.tau * 2.0 * Z / den

    def curvature(self, Z: np.ndarray) -> np.ndarray:
        """``-d^2 l_b / d Z^2`` (diagonal, >= 0), (..., n)."""
        p = _expit()(Z)
        c = p * (1.0 - p)
        if self.box is None:
            return c
        b2 = self.box**2
        den = np.maximum(b2 - Z * Z, 1e-12 * b2)
        return c + self.tau * 2.0 * (b2 + Z * Z) / (den * den)

    def terms(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(value(Z), grad(Z), curvature(Z))`` in one call: the same values, bit for bit, as
        the three methods (the same operations in the same order), without their per-call
        overhead. The caller suppresses the floating-point warnings (``np.errstate``) of points
        outside the box."""
        expit = _expit()
        r = self.r
        ll = np.add.reduce(r * Z - np.logaddexp(0.0, Z), axis=-1)
        p = expit(Z)
        g = r - p
        c = p * (1.0 - p)
        box = self.box
        if box is None:
            return ll, g, c
        q = (Z / box) ** 2
        inside = np.logical_and.reduce(q < 1.0, axis=-1)
        # no floor on q as in value(): where a row is inside, every q < 1 (and the floor,
        # 1 - 1e-300 == 1.0, changes nothing); elsewhere the row's value is -inf either way
        bar = np.add.reduce(np.log1p(-q), axis=-1)
        value = np.where(inside, ll + self.tau * bar, -np.inf)
        b2 = box**2
        ZZ = Z * Z
        den = np.maximum(b2 - ZZ, 1e-12 * b2)
        return value, g - self.tau * 2.0 * Z / den, c + self.tau * 2.0 * (b2 + ZZ) / (den * den)

    def value_unchecked(self, Z: np.ndarray) -> np.ndarray:
        """:meth:`value` (the same values, bit for bit) without its ``np.errstate``: the caller
        suppresses the warnings of points outside the box."""
        ll = np.add.reduce(self.r * Z - np.logaddexp(0.0, Z), axis=-1)
        box = self.box
        if box is None:
            return ll
        q = (Z / box) ** 2
        inside = np.logical_and.reduce(q < 1.0, axis=-1)
        bar = np.add.reduce(np.log1p(-np.minimum(q, 1.0 - 1e-300)), axis=-1)
        return np.where(inside, ll + self.tau * bar, -np.inf)

    def grad_curvature(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(grad(Z), curvature(Z))`` with the shared terms computed once (the same values, bit
        for bit, as the two methods)."""
        p = _expit()(Z)
        g = self.r - p
        c = p * (1.0 - p)
        if self.box is None:
            return g, c
        b2 = self.box**2
        ZZ = Z * Z
        den = np.maximum(b2 - ZZ, 1e-12 * b2)
        return g - self.tau * 2.0 * Z / den, c + self.tau * 2.0 * (b2 + ZZ) / (den * den)


_EXPIT: Any = None


def _expit() -> Any:
    """``scipy.special.expit``, imported on first use (a study call that never needs it skips
    the import)."""
    global _EXPIT
    if _EXPIT is None:
        from scipy.special import expit

        _EXPIT = expit
    return _EXPIT


_CHO: Any = None


def _cho_lapack() -> Any:
    """LAPACK ``(dpotrf, dpotrs)`` (scipy), imported on first use."""
    global _CHO
    if _CHO is None:
        from scipy.linalg.lapack import dpotrf, dpotrs

        _CHO = (dpotrf, dpotrs)
    return _CHO


_DPOSV: Any = None


def _dposv() -> Any:
    """LAPACK ``dposv`` (scipy), imported on first use."""
    global _DPOSV
    if _DPOSV is None:
        from scipy.linalg.lapack import dposv

        _DPOSV = dposv
    return _DPOSV


def _as_likelihood(rejected: Any, box: float | None = None) -> BoxedLogLikelihood:
    if isinstance(rejected, BoxedLogLikelihood):
        return rejected
    return BoxedLogLikelihood(np.asarray(rejected, dtype=np.float64), box)


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


def _kkt_residuals(
    L: np.ndarray,
    r: BoxedLogLikelihood,
    A: np.ndarray,
    s: np.ndarray,
    W: np.ndarray,
    mu: np.ndarray,
    nu: np.ndarray,
    ll_min: float,
    B: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """KKT residuals of ``max a^T w + s u`` over C with ``u = s / mu`` eliminated.

    Returns r_w (m, n), r_mu (m,), r_nu (m,), the curvature D = -l''(Z) (m, n) (``P (1 - P)``
    without a box) and h = L^T l'(Z) (m, n).
    """
    Z = W @ L.T
    ll, g, D = r.terms(Z)
    h = g @ L
    r_w = A + nu[:, None] * h - mu[:, None] * W
    r_mu = 0.5 * (B * B - _einsum("ij,ij->i", W, W) - (s / mu) ** 2)
    r_nu = ll - ll_min
    return r_w, r_mu, r_nu, D, h


def _merit(r_w: np.ndarray, r_mu: np.ndarray, r_nu: np.ndarray, B: float) -> np.ndarray:
    """Squared KKT residual; the ball residual (units of B^2) is scaled by 1/B."""
    return _einsum("ij,ij->i", r_w, r_w) + (r_mu / B) ** 2 + r_nu**2


def _solve_spd_rows(K: np.ndarray, S: np.ndarray, mu: np.ndarray, rhs: np.ndarray) -> bool:
    """Solve ``(mu_j I + diag(S_j) K diag(S_j)) x = b`` for every row j in place.

    K (n, n) SPD; S (m, n); mu (m,) > 0; rhs (m, k, n) holds the k right-hand sides of row j
    (overwritten by the solutions). The matrices are formed elementwise in cache-sized blocks and
    factored one by one with LAPACK ``dposv`` (a Python loop over a C routine is cheaper here than
    NumPy's batched LU for n ~ 50). Returns False if some matrix is not numerically SPD.
    """
    dposv = _dposv()
    m, _, n = rhs.shape
    for b0 in range(0, m, _NEWTON_BLOCK):
        Sb = S[b0 : b0 + _NEWTON_BLOCK]
        G = K[None, :, :] * Sb[:, :, None]
        G *= Sb[:, None, :]
        G.reshape(G.shape[0], -1)[:, :: n + 1] += mu[b0 : b0 + _NEWTON_BLOCK, None]
        for i in range(G.shape[0]):
            # G[i] is symmetric, so its transpose is the same matrix in Fortran order (no copy);
            # rhs[b0 + i].T is the Fortran-ordered (n, k) right-hand side, solved in place (the
            # arguments by position: a, b, lower, overwrite_a, overwrite_b)
            bt = rhs[b0 + i].T
            _, x, info = dposv(G[i].T, bt, 1, 1, 1)
            if info != 0:
                return False
            if x is not bt:  # LAPACK worked on a copy (not for these layouts): write it back
                rhs[b0 + i] = x.T
    return True


def support_values(
    L: np.ndarray,
    rejected: np.ndarray,
    mle: MLEResult,
    ll_min: float,
    norm_bound: float,
    A: np.ndarray,
    s: np.ndarray,
    *,
    tol: float = 1e-10,
    max_iter: int = 60,
    value_bound: float | None = None,
    cap: float | None = None,
) -> np.ndarray:
    """``max a_j^T w + s_j u`` over ``C = {||(w, u)|| <= B, l(L w) >= ll_min}`` for each row j.

    L (n, n); rejected (n,); A (m, n) the directions ``a``; s (m,) >= 0 -> values (m,).
    ``g_upper(x) = support(a(x), s(x))`` and ``g_lower(x) = -support(-a(x), s(x))``.
    ``value_bound``: the labelled values are also boxed, ``|L w| <= value_bound`` (the
    barrier-augmented likelihood of :class:`BoxedLogLikelihood`; ``mle`` and ``ll_min`` must come from
    the same augmented likelihood).
    ``cap``: only values below ``cap`` are needed exactly (the caller clips at ``cap``): a row
    whose Newton iterate is a strictly feasible point of C with value at least ``cap +
    INNER_MARGIN`` is certified (its support value is at least that, and any solver's value at
    least ``cap``); once every row still iterating is certified the solve stops, and failed rows
    skip the unboxed re-solve when all of them are certified. A certified row returns its
    feasible point's value, which clips to ``cap`` like the exact one; every other row's value
    is unchanged to the bit (certified rows keep iterating in its batches until then).
    """
    # trial points of the line searches may leave the box (value -inf, rejected by the merit
    # test): their arithmetic warnings are expected
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _support_values(
            L,
            rejected,
            mle,
            ll_min,
            norm_bound,
            A,
            s,
            tol=tol,
            max_iter=max_iter,
            value_bound=value_bound,
            cap=cap,
        )


def _ball_decided(
    L: np.ndarray,
    rejected: np.ndarray | BoxedLogLikelihood,
    ll_min: float,
    norm_bound: float,
    A: np.ndarray,
    s: np.ndarray,
    value_bound: float | None,
) -> tuple[
    np.ndarray, np.ndarray, float, np.ndarray, BoxedLogLikelihood | None, np.ndarray, np.ndarray
]:
    """The opening both support-value solvers share: ``(A, s, B, out, r, W_ball, todo)`` with
    ``out = B ||(a, s)||`` the ball's support values (exact where the ball's maximiser ``W_ball``
    satisfies the likelihood constraint), ``todo`` the rows where it does not, ``s`` floored at
    ``S_MIN``; ``r`` is None when there are no labels or no rows (``out`` is then the answer)."""
    A = np.asarray(A, dtype=np.float64)
    m, n = A.shape
    B = float(norm_bound)
    s = np.maximum(np.asarray(s, dtype=np.float64), S_MIN)
    kappa = np.sqrt(_einsum("ij,ij->i", A, A) + s * s)
    out = B * kappa
    if n == 0 or m == 0:
        return A, s, B, out, None, A, np.zeros(0, dtype=np.intp)
    r = _as_likelihood(rejected, value_bound)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        W_ball = (B / kappa)[:, None] * A
        ok = r.value(W_ball @ L.T) >= ll_min
    return A, s, B, out, r, W_ball, np.flatnonzero(~ok)


def _support_values(
    L: np.ndarray,
    rejected: np.ndarray,
    mle: MLEResult,
    ll_min: float,
    norm_bound: float,
    A: np.ndarray,
    s: np.ndarray,
    *,
    tol: float = 1e-10,
    max_iter: int = 60,
    value_bound: float | None = None,
    cap: float | None = None,
) -> np.ndarray:
    """Implementation of :func:`support_values`."""
    # 1) the ball's maximiser satisfies the likelihood constraint: the ball alone decides
    A, s, B, out, r, _, todo = _ball_decided(L, rejected, ll_min, norm_bound, A, s, value_bound)
    if r is None or todo.size == 0:
        return out
    n = A.shape[1]
    # 2) both constraints active. Start: the exact solution of a quadratic model of the problem
    #    (the likelihood replaced by its second-order expansion at the MLE, whose Hessian's
    #    eigenbasis is shared by all candidates); then batched Newton on the exact KKT system.
    Ad, sd = A[todo], s[todo]
    mu, nu, W = model_start(L, r, mle, ll_min, B, Ad, sd)
    done = np.zeros(todo.size, dtype=bool)
    K_lab = L @ L.T  # the labelled points' kernel matrix (+ jitter), (n, n)
    LT = L.T
    # the state of the rows still iterating, compacted (row j of every array is row act[j] of
    # the problem; converged rows are written back to W, mu, nu and dropped): the current
    # iterate, its residuals, the likelihood's curvature D and h (kept from the line search)
    # and its merit. Every row's arithmetic is that of the same batched operations in the same
    # order; the last bits of a row can still depend on which rows share its batch (BLAS
    # kernels block by batch size), so rows are dropped only when they converge, as before.
    act = np.arange(todo.size)
    Wa, mua, nua, Aa, sa = W, mu, nu, Ad, sd
    r_w, r_mu, r_nu, P, h = _kkt_residuals(L, r, Aa, sa, Wa, mua, nua, ll_min, B)
    merit0 = _merit(r_w, r_mu, r_nu, B)
    # with a box, a direction whose optimum sits at the barrier's edge makes Newton stall: such
    # rows are finished (conservatively, see below) after fewer iterations than converging
    # ones ever need (about 10)
    n_iter = max_iter if r.box is None else min(max_iter, 25)
    # with a cap, the value of a feasible iterate reaching cap + INNER_MARGIN (-inf: none yet);
    # certified rows keep iterating with the others (a row's bits depend on its batch) until
    # every row still iterating is certified
    cert = None if cap is None else np.full(todo.size, -np.inf)
    stopped = act[:0]
    tol_mu = tol * B * B + 1e-14
    tol_nu = tol * (1 + abs(ll_min))
    for _ in range(n_iter):
        scale = 1.0 + np.abs(nua) + np.abs(mua)
        conv = (
            (np.abs(r_w).max(axis=1) <= tol * scale)
            & (np.abs(r_mu) <= tol_mu)
            & (np.abs(r_nu) <= tol_nu)
        )
        # a feasible iterate reaching the cap: the row's certificate (cert is set when cap is)
        if cert is not None and cap is not None:
            room = B * B - _einsum("ij,ij->i", Wa, Wa)
            v_in = _einsum("ij,ij->i", Aa, Wa) + sa * np.sqrt(np.maximum(room, 0.0))
            reach = (r_nu > tol_nu) & (room > 0.0) & (v_in >= cap + INNER_MARGIN)
            cert[act[reach]] = v_in[reach]
        if conv.any():
            rows = act[conv]
            done[rows] = True
            W[rows], mu[rows], nu[rows] = Wa[conv], mua[conv], nua[conv]
            keep = ~conv
            if not keep.any():
                act = act[:0]
                break
            act, Wa, mua, nua, Aa, sa = (
                act[keep],
                Wa[keep],
                mua[keep],
                nua[keep],
                Aa[keep],
                sa[keep],
            )
            r_w, r_mu, r_nu, P, h = r_w[keep], r_mu[keep], r_nu[keep], P[keep], h[keep]
            merit0 = merit0[keep]
        if cert is not None and np.isfinite(cert[act]).all():
            # every row still iterating has a certificate: stop (the rows that converged kept
            # their batches, so their values are those of the full run)
            done[act] = True
            stopped = act
            break
        k_act = act.size
        # Newton matrix M_j = mu_j I + U_j U_j^T with U_j = L^T S_j, S_j = sqrt(nu_j D_j); by
        # Woodbury M_j^{-1} b = (b - U_j G_j^{-1} U_j^T b) / mu_j with G_j = mu_j I + S_j K S_j,
        # whose entries are formed elementwise (O(n^2) per row instead of a 2 n^3 product)
        Sn = np.sqrt(P * nua[:, None])
        rhs = np.empty((k_act, 3, n))  # row j: the three right-hand sides S_j L b
        rhs[:, 0], rhs[:, 1], rhs[:, 2] = r_w @ LT, Wa @ LT, h @ LT
        Za = rhs[:, 1].copy() if r.box is not None else None  # Z = L w of the current iterate
        rhs *= Sn[:, None, :]
        if not _solve_spd_rows(K_lab, Sn, mua, rhs):
            break
        rhs *= Sn[:, None, :]
        inv_mu = 1.0 / mua[:, None]
        p_ = (r_w - rhs[:, 0] @ L) * inv_mu
        q_ = (Wa - rhs[:, 1] @ L) * inv_mu
        m_ = (h - rhs[:, 2] @ L) * inv_mu
        wq = _einsum("ij,ij->i", Wa, q_)
        wm = _einsum("ij,ij->i", Wa, m_)
        hm = _einsum("ij,ij->i", h, m_)
        wp = _einsum("ij,ij->i", Wa, p_)
        hp = _einsum("ij,ij->i", h, p_)
        a11 = wq + sa * sa / mua**3
        a12 = -wm
        a22 = hm
        b1 = wp - r_mu
        b2 = -r_nu - hp
        det = a11 * a22 - a12 * a12
        det = np.where(np.abs(det) < 1e-300, 1e-300, det)
        dmu = (b1 * a22 - a12 * b2) / det
        dnu = (a11 * b2 - a12 * b1) / det
        dW = p_ - q_ * dmu[:, None] + m_ * dnu[:, None]
        # fraction to the boundary: mu > 0, nu > 0
        # (the same values as t = 1, t[neg] = min(t[neg], 0.9 mu[neg] / -dmu[neg]), ...)
        t = np.where(dmu < 0, np.minimum(1.0, 0.9 * mua / -dmu), 1.0)
        t = np.where(dnu < 0, np.minimum(t, 0.9 * nua / -dnu), t)
        if Za is not None:  # and |Z_i| < box (the barrier's domain)
            dZ = dW @ LT
            room = np.where(dZ > 0, r.box - Za, r.box + Za)
            adZ = np.abs(dZ)
            frac = np.where(adZ > 0, room / adZ, np.inf)
            t = np.minimum(t, 0.99 * frac.min(axis=1))
        # backtracking: trial b (0, 1, ..., 29) of a row is the step t / 2^b, accepted when it
        # satisfies the Armijo test on the merit or is below 1e-8; after 30 rejected trials the
        # next halving is taken unchecked. The first trial is evaluated for every row, then the
        # halvings of the rows still pending in blocks of several trials each (_HALVING_BLOCKS):
        # the same accepted step as trying them one by one, in a few batched evaluations (a
        # row stalled at the box's edge needs ~27 halvings per iteration)
        Wn = Wa + t[:, None] * dW
        mun = mua + t * dmu
        nun = nua + t * dnu
        res = _kkt_residuals(L, r, Aa, sa, Wn, mun, nun, ll_min, B)
        merit1 = _merit(res[0], res[1], res[2], B)
        bad = ~(merit1 <= (1 - 1e-4 * t) * merit0) & (t > 1e-8)
        if not bad.any():  # every trial accepted
            Wa, mua, nua = Wn, mun, nun
            r_w, r_mu, r_nu, P, h = res
            merit0 = merit1
            continue
        # the old iterate of the pending rows is read below: the accepted rows are updated in
        # fresh arrays
        good = ~bad
        W_old, mu_old, nu_old = Wa, mua, nua  # the iterate before the step
        Wa, mua, nua = (
            np.where(good[:, None], Wn, Wa),
            np.where(good, mun, mua),
            np.where(good, nun, nua),
        )
        r_w, r_mu, r_nu = (
            np.where(good[:, None], res[0], r_w),
            np.where(good, res[1], r_mu),
            np.where(good, res[2], r_nu),
        )
        P, h = np.where(good[:, None], res[3], P), np.where(good[:, None], res[4], h)
        merit_old, merit0 = merit0, np.where(good, merit1, merit0)
        pend = bad.nonzero()[0]
        b = 0  # halvings tried
        for k, halvings in zip(_HALVING_BLOCKS, _HALVING_FACTORS, strict=True):
            if not pend.size:
                break
            p = pend.size
            tp = t[pend][:, None] * halvings  # (p, k), exact
            Wn = (W_old[pend][:, None, :] + tp[:, :, None] * dW[pend][:, None, :]).reshape(p * k, n)
            mun = (mu_old[pend][:, None] + tp * dmu[pend][:, None]).reshape(-1)
            nun = (nu_old[pend][:, None] + tp * dnu[pend][:, None]).reshape(-1)
            res = _kkt_residuals(
                L,
                r,
                Aa[pend].repeat(k, axis=0),
                sa[pend].repeat(k),
                Wn,
                mun,
                nun,
                ll_min,
                B,
            )
            merit1 = _merit(res[0], res[1], res[2], B).reshape(p, k)
            ok = (merit1 <= (1 - 1e-4 * tp) * merit_old[pend][:, None]) | ~(tp > 1e-8)
            hit = ok.any(axis=1)
            b += k
            if not hit.any():  # no row accepted a trial of this block (a stalled row)
                continue
            first = ok.argmax(axis=1)
            sel = hit.nonzero()[0] * k + first[hit]  # the first accepted trial of each row
            rows = pend[hit]
            Wa[rows], mua[rows], nua[rows] = Wn[sel], mun[sel], nun[sel]
            r_w[rows], r_mu[rows], r_nu[rows] = res[0][sel], res[1][sel], res[2][sel]
            P[rows], h[rows] = res[3][sel], res[4][sel]
            merit0[rows] = merit1.reshape(-1)[sel]
            pend = pend[~hit]
        if pend.size:  # 30 trials rejected: the next halving, taken unchecked (as before)
            t[pend] *= 0.5 ** (b + 1)
            rows = pend
            Wn = W_old[pend] + t[pend, None] * dW[pend]
            if r.box is not None:  # never step out of the box (the barrier is -inf there)
                inside = np.all(np.abs(Wn @ LT) < r.box, axis=1)
                rows, Wn = rows[inside], Wn[inside]
            Wa[rows] = Wn
            mua[rows] = mu_old[rows] + t[rows] * dmu[rows]
            nua[rows] = nu_old[rows] + t[rows] * dnu[rows]
            res = _kkt_residuals(
                L, r, Aa[rows], sa[rows], Wa[rows], mua[rows], nua[rows], ll_min, B
            )
            r_w[rows], r_mu[rows], r_nu[rows], P[rows], h[rows] = res
            merit0[rows] = _merit(res[0], res[1], res[2], B)
    if act.size:  # rows that did not converge: their last iterate
        W[act], mu[act], nu[act] = Wa, mua, nua
    # feasibility-safe value: the u that exactly fills the ball for the current w
    u_fill = np.sqrt(np.maximum(B * B - _einsum("ij,ij->i", W, W), 0.0))
    values = _einsum("ij,ij->i", Ad, W) + sd * u_fill
    if stopped.size:
        values[stopped] = cert[stopped]  # type: ignore[index]
    failed = np.flatnonzero(~done)
    if cert is not None and failed.size and np.isfinite(cert[failed]).all():
        values[failed] = cert[failed]  # every failed row reaches the cap: no re-solve
        failed = failed[:0]
    if r.box is not None and failed.size:
        # the box binds sharply at these directions (the barrier's edge) and Newton stalls:
        # take the support value of the same set without the box -- a superset, so the bound is
        # conservative (never tighter than the boxed one); then clipped like every bound
        values[failed] = _support_values(
            L, r.r, mle, ll_min, B, Ad[failed], sd[failed], tol=tol, max_iter=max_iter, cap=cap
        )
        failed = failed[:0]
    for j in failed:
        values[j] = support_value_dual(L, r, mle, ll_min, B, Ad[j], float(sd[j]))
    out[todo] = values
    return out


def _model_dual(
    c: np.ndarray,
    s: np.ndarray,
    g: np.ndarray,
    y0: np.ndarray,
    sig: np.ndarray,
    l0: np.ndarray,
    ll_min: float,
    B: float,
    mu: np.ndarray,
    nu: np.ndarray,
    *,
    max_iter: int = 30,
    tol: float = 1e-9,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Solve the quadratic-model problem for all rows at once, in the eigenbasis of its Hessian.

    Model of the likelihood around ``y0``: ``q(y) = l0 + g^T (y - y0) - 1/2 (y - y0)^T diag(sig)
    (y - y0)``; problem ``max c^T y + s u`` s.t. ``||y||^2 + u^2 <= B^2``, ``q(y) >= ll_min``.
    For fixed multipliers the maximiser is ``y = (c + nu (g + sig y0)) / (mu + nu sig)`` (O(n));
    the convex 2-D dual in ``(mu, nu)`` (``mu > 0``, ``nu >= 0``) is minimised by damped,
    projected Newton with backtracking. Only a starting point is needed, so the tolerance is
    loose and the iterations are capped. c, g, y0 (m, n); sig (n,) >= 0; s, l0, mu, nu (m,) -> (mu, nu, y).
    """
    e = g + sig * y0
    ss = s * s
    BB = B * B

    def evaluate(mu_: np.ndarray, nu_: np.ndarray) -> tuple[np.ndarray, ...]:
        nu_c = nu_[:, None]
        den = mu_[:, None] + nu_c * sig
        y = (c + nu_c * e) / den
        d = y - y0
        q = l0 + _einsum("ij,ij->i", g, d) - 0.5 * _einsum("ij,ij->i", sig * d, d)
        yy = _einsum("ij,ij->i", y, y)
        half_mu = 0.5 * mu_
        phi = _einsum("ij,ij->i", c, y) + nu_ * (q - ll_min) - half_mu * yy + ss / (2 * mu_)
        phi += half_mu * B * B
        return y, d, q, yy, den, phi

    y, d, q, yy, den, phi = evaluate(mu, nu)
    frozen = np.zeros(mu.shape, dtype=bool)  # rows whose line search found no decrease
    tol_F2 = tol * (1 + abs(ll_min))
    tol_F1 = tol * B * B
    for _ in range(max_iter):
        F1 = 0.5 * (BB - yy - (s / mu) ** 2)  # d phi / d mu
        F2 = q - ll_min  # d phi / d nu
        # KKT of the dual: F1 = 0 and (F2 = 0, or nu = 0 with F2 >= 0: the model's likelihood
        # constraint is inactive); converged rows are kept fixed (zero step)
        at_zero = (nu == 0) & (F2 >= 0)  # nu at its bound: Newton in mu alone (below)
        conv = ((np.abs(F1) <= tol_F1) & ((np.abs(F2) <= tol_F2) | at_zero)) | frozen
        if conv.all():
            break
        t = g - sig * d  # gradient of the model at y
        h11 = _einsum("ij,ij->i", y, y / den) + ss / mu**3
        h12 = -_einsum("ij,ij->i", y, t / den)
        h22 = _einsum("ij,ij->i", t, t / den)
        det = h11 * h22 - h12 * h12
        det = np.where(det > 1e-300, det, 1e-300)
        dmu = -(h22 * F1 - h12 * F2) / det
        dnu = -(h11 * F2 - h12 * F1) / det
        if at_zero.any():
            dmu[at_zero] = -F1[at_zero] / h11[at_zero]
            dnu[at_zero] = 0.0
        dmu[conv] = 0.0
        dnu[conv] = 0.0
        # st = 1, st[neg] = min(1, 0.9 mu[neg] / -dmu[neg]) (the same values, fewer calls)
        st = np.ones_like(mu)
        np.divide(0.9 * mu, -dmu, out=st, where=dmu < 0)
        np.minimum(st, 1.0, out=st)
        slope = F1 * dmu + F2 * dnu
        for _bt in range(30):
            # projected step: nu >= 0 (phi is convex, so the projected Armijo test is valid)
            mun, nun = mu + st * dmu, np.maximum(nu + st * dnu, 0.0)
            new = evaluate(mun, nun)
            bad = ~(new[5] <= phi + 1e-4 * st * slope + 1e-15 * np.abs(phi)) & (st > 1e-12)
            if not bad.any():
                break
            st[bad] *= 0.5
        frozen |= st <= 1e-12
        mu, nu = mun, nun
        y, d, q, yy, den, phi = new
    return mu, nu, y


_EIGEN_CACHE: list[tuple[Any, ...]] = []  # recent (inputs, outputs) of mle_eigenbasis


def mle_eigenbasis(
    L: np.ndarray, r: BoxedLogLikelihood, mle: MLEResult
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(sig, V, w* V, (L^T grad l(Z*)) V)`` of :func:`model_start`: the eigendecomposition of
    the Hessian ``H* = L^T diag(-l''(Z*)) L`` at the MLE (eigenvalues floored at 0) and the MLE
    and its gradient in that basis.

    Every bound of one model state (the exact bounds of a branch-and-bound step come in several
    batches, each refined point in its own call) shares them: the last few results are kept and
    returned for inputs equal, element for element, to theirs (the same values as recomputing;
    inputs are compared by value, so an array changed in place is never served stale).
    """
    box = r.box
    for key, out in _EIGEN_CACHE:
        L0, r0, box0, tau0, w0, Z0 = key
        if (
            box0 == box
            and tau0 == r.tau
            and L0.shape == L.shape
            and np.array_equal(w0, mle.w)
            and np.array_equal(Z0, mle.Z)
            and np.array_equal(r0, r.r)
            and np.array_equal(L0, L)
        ):
            return out
    H = (L.T * r.curvature(mle.Z)) @ L
    sig, V = np.linalg.eigh(H)
    sig = np.maximum(sig, 0.0)
    out = (sig, V, mle.w @ V, (r.grad(mle.Z) @ L) @ V)
    for a in out:
        a.setflags(write=False)
    key = (L.copy(), r.r.copy(), box, r.tau, mle.w.copy(), mle.Z.copy())
    _EIGEN_CACHE.insert(0, (key, out))
    del _EIGEN_CACHE[4:]
    return out


def model_start(
    L: np.ndarray,
    r: BoxedLogLikelihood | np.ndarray,
    mle: MLEResult,
    ll_min: float,
    B: float,
    A: np.ndarray,
    s: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Starting point ``(mu, nu, W)`` of the batched KKT Newton method in :func:`support_values`.

    The quadratic model of ``l(L w)`` at the MLE (Hessian ``H* = L^T diag(p*(1 - p*)) L``,
    eigendecomposed once, O(n^3)) makes the problem separable in ``H*``'s eigenbasis, so its
    exact solution costs O(n) per row and dual iteration (:func:`_model_dual`); it saves about
    one of the (m, n, n) Newton iterations over the start used before (re-expanding the
    likelihood at the model's solution with ``H*`` kept, i.e. SQP steps, made the start worse
    in the benchmark). A (m, n), s (m,) -> mu (m,), nu (m,), W (m, n).
    """
    r = _as_likelihood(r)
    m, n = A.shape
    sig, V, wV, gV = mle_eigenbasis(L, r, mle)
    c = A @ V
    y0 = np.tile(wV, (m, 1))
    g = np.tile(gV, (m, 1))
    l0 = np.full(m, mle.loglik)
    alpha = max(mle.loglik - ll_min, 1e-12)
    mu_star = max(mle.mu, 1e-8)
    # multipliers of the problem without the ball, at the MLE: a guess for the dual's start
    nu = np.sqrt(np.maximum(_einsum("ij,ij->i", c, c / (sig + mu_star)), 1e-16) / (2 * alpha))
    nu = np.maximum(nu, 1e-6)
    mu = np.maximum(s / B, nu * mu_star)
    mu, nu, y = _model_dual(c, s, g, y0, sig, l0, ll_min, B, mu, nu)
    W = y @ V.T
    bad = ~(np.isfinite(mu) & (mu > 0) & np.isfinite(nu) & np.all(np.isfinite(W), axis=1))
    if np.any(bad):  # defensive: a plain interior start (the Newton method then does the work)
        W[bad] = 0.95 * mle.w
        mu[bad] = s[bad] / math.sqrt(max(B * B - 0.9025 * float(mle.w @ mle.w), 1e-300))
        nu[bad] = 1.0
    if r.box is not None:  # the model ignores the box: pull starts back inside, towards the MLE
        lim = 0.999 * r.box
        D = W @ L.T - mle.Z  # (m, n)
        room = np.where(D > 0, lim - mle.Z, lim + mle.Z)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(np.abs(D) > 0, np.maximum(room, 0.0) / np.abs(D), np.inf)
        theta = np.minimum(1.0, np.min(ratio, axis=1, initial=np.inf))
        W = mle.w + theta[:, None] * (W - mle.w)
    return mu, np.maximum(nu, 1e-12), W


def inner_support_values(
    L: np.ndarray,
    rejected: np.ndarray,
    mle: MLEResult,
    ll_min: float,
    norm_bound: float,
    A: np.ndarray,
    s: np.ndarray,
    *,
    value_bound: float | None = None,
    model: bool = True,
) -> np.ndarray:
    """Cheap inner bound on :func:`support_values` (the same arguments): for each row the value
    ``a^T w + s u`` at a *feasible* point of ``C = {||(w, u)|| <= B, l(L w) >= ll_min}`` (with the
    box if ``value_bound``), so never above the support value (39)/(38) of that set; O(n^2) per
    row, no Newton iterations.

    Candidates: the ball's maximiser ``w_B = B a / ||(a, s)||`` if it is feasible (then the
    value is exact), else the points ``w* + theta (w_B - w*)`` for ``theta = 2^-k``, k = 1..5,
    and, with ``model`` (about ten times the cost), ``w* + theta (w0 - w*)`` for ``theta`` in
    {1, 3/4, 1/2, 1/4} with ``w0`` the quadratic-model start of :func:`model_start`: points
    between the MLE ``w*`` (feasible: ``l(L w*) = l* >= ll_min``) and another point of the ball
    (the set is convex), each with the ``u`` that fills the ball; the best feasible one, or the
    MLE's. A (m, n), s (m,) -> (m,).
    """
    A, s, B, out, r, W_ball, todo = _ball_decided(
        L, rejected, ll_min, norm_bound, A, s, value_bound
    )
    if r is None or todo.size == 0:
        return out
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        Ad, sd = A[todo], s[todo]
        ends = [(W_ball[todo], np.array([0.5, 0.25, 0.125, 0.0625, 0.03125]))]
        if model:
            _, _, W0 = model_start(L, r, mle, ll_min, B, Ad, sd)
            ends.append((W0, np.array([1.0, 0.75, 0.5, 0.25])))
        Wt = np.concatenate(
            [mle.w + th[None, :, None] * (W - mle.w)[:, None, :] for W, th in ends], axis=1
        )  # (k, candidates, n)
        sq = B * B - _einsum("ijk,ijk->ij", Wt, Wt)
        feasible = (sq >= 0.0) & (r.value(Wt @ L.T) >= ll_min)
        vals = _einsum("ik,ijk->ij", Ad, Wt) + sd[:, None] * np.sqrt(np.maximum(sq, 0.0))
        vals = np.where(feasible, vals, -np.inf)
        # theta = 0: the MLE itself (its norm may exceed B by a rounding error: u = 0 then)
        v_mle = Ad @ mle.w + sd * math.sqrt(max(B * B - float(mle.w @ mle.w), 0.0))
    out[todo] = np.maximum(vals.max(axis=1), v_mle)
    return out


def relaxed_support_values(
    mle: MLEResult, alpha: float, norm_bound: float, A: np.ndarray, s: np.ndarray
) -> np.ndarray:
    """Closed-form outer bound on :func:`support_values`, O(n) per direction (for screening).

    ``l`` is concave, so ``l(Lw) <= l* + h*^T (w - w*)`` with ``h* = L^T grad l(Z*) = mu* w*``
    (the MLE's KKT condition). The likelihood set therefore lies in the half-space
    ``{w*^T w >= ||w*||^2 - alpha / mu*}``, and the support function of (ball & half-space) in the
    direction ``c = (a, s)`` has a closed form. It is >= the exact support value: relaxed lower
    bounds are <= g_lower and relaxed upper bounds >= g_upper. A (m, n), s (m,) -> (m,).
    """
    A = np.asarray(A, dtype=np.float64)
    B = float(norm_bound)
    s = np.asarray(s, dtype=np.float64)
    c2 = _einsum("ij,ij->i", A, A) + s * s
    c_norm = np.sqrt(c2)
    out = B * c_norm
    w_norm = float(np.linalg.norm(mle.w)) if mle.w.size else 0.0
    if mle.mu <= 0 or w_norm <= 0:
        return out
    g = mle.w / w_norm  # unit normal of the half-space (its u-component is 0)
    beta = (w_norm**2 - alpha / mle.mu) / w_norm  # half-space: g^T v >= beta
    if beta <= -B:
        return out
    if beta >= B:  # degenerate: the set is the single point B g
        return B * (A @ g)
    cg = A @ g
    ball_ok = B * cg >= beta * c_norm  # the ball's maximiser B c / |c| lies in the half-space
    c_perp = np.sqrt(np.maximum(c2 - cg * cg, 0.0))
    cap = beta * cg + math.sqrt(max(B * B - beta * beta, 0.0)) * c_perp
    return np.where(ball_ok, out, cap)


def support_value_dual(
    L: np.ndarray,
    r: BoxedLogLikelihood | np.ndarray,
    mle: MLEResult,
    ll_min: float,
    B: float,
    a: np.ndarray,
    s: float,
    max_outer: int = 200,
) -> float:
    """Safeguarded fallback for one direction: damped Newton on the convex dual in (mu, nu).

    q(mu, nu) = max_w [a^T w - mu/2 ||w||^2 + nu (l(L w) - ll_min)] + s^2 / (2 mu) + mu B^2 / 2.
    """
    from scipy.linalg import cho_factor, cho_solve

    r = _as_likelihood(r)
    n = L.shape[0]
    w = mle.w.copy()

    def inner(mu: float, nu: float, w0: np.ndarray) -> tuple[np.ndarray, float]:
        w = w0.copy()

        def F(v: np.ndarray) -> float:
            return float(a @ v - 0.5 * mu * v @ v + nu * (r.value(L @ v) - ll_min))

        f = F(w)
        for _ in range(100):
            Zw = L @ w
            g = a + nu * (L.T @ r.grad(Zw)) - mu * w
            if np.max(np.abs(g)) < 1e-12 * (1 + nu + mu):
                break
            H = nu * (L.T * r.curvature(Zw)) @ L + mu * np.eye(n)
            step = cho_solve(cho_factor(H, lower=True, check_finite=False), g)
            t = 1.0
            while t > 1e-12:
                fn = F(w + t * step)
                if fn >= f - 1e-14 * (1 + abs(f)):
                    break
                t *= 0.5
            w = w + t * step
            f = F(w)
        return w, f + s * s / (2 * mu) + mu * B * B / 2

    mu, nu = max(s / B, 1e-6), 1.0
    w, q = inner(mu, nu, w)
    for _ in range(max_outer):
        Zw = L @ w
        h = L.T @ r.grad(Zw)
        H = nu * (L.T * r.curvature(Zw)) @ L + mu * np.eye(n)
        cf = cho_factor(H, lower=True, check_finite=False)
        q_ = cho_solve(cf, w)
        m_ = cho_solve(cf, h)
        grad = np.array([0.5 * (B * B - w @ w - (s / mu) ** 2), float(r.value(Zw)) - ll_min])
        if abs(grad[0]) < 1e-11 * B * B and abs(grad[1]) < 1e-11 * (1 + abs(ll_min)):
            break
        hess = np.array([[w @ q_ + s * s / mu**3, -(w @ m_)], [-(w @ m_), h @ m_]])
        try:
            step = -np.linalg.solve(hess + 1e-14 * np.eye(2), grad)
        except np.linalg.LinAlgError:
            step = -grad
        t = 1.0
        for _bt in range(60):
            mun, nun = mu + t * step[0], nu + t * step[1]
            if mun > 0 and nun >= 0:
                wn, qn = inner(mun, nun, w)
                if qn <= q + 1e-13 * (1 + abs(q)):
                    break
            t *= 0.5
        else:
            break
        mu, nu, w, q = mun, nun, wn, qn
    u = math.sqrt(max(B * B - float(w @ w), 0.0))
    return float(a @ w + s * u)


class LikelihoodRatioModel:
    """The expert's confidence set of Lemma 3.2 with online norm-bound estimation (App. F).

    Parameters
    ----------
    kernel:
        The kernel ``k_g`` (COBOL copies the f-GP's length-scales with output scale 1, so that
        ``k(x, x) <= 1``, Assumption 2.5).
    norm_bound:
        Initial guess ``B_g`` (paper: 1).
    alpha_coefficient:
        ``c`` of the practical ``alpha_1 = c sqrt(n + 1)`` (reference code; paper Table 3:
        initial value 0.01). Doubled together with ``B_g`` (App. F: alpha_1 scales with B_g).
    jitter:
        Added to the diagonal of every kernel matrix (1e-6 as in the reference code).
    doubling_period:
        Run the doubling test when the number of labels is a multiple of this (reference code: 3).
    max_norm_bound:
        Cap on ``B_g`` (doubling stops there).
    adapt:
        Whether to run the doubling test at all.
    value_bound:
        If given, the latent values are boxed to ``[-value_bound, value_bound]``: at the labelled
        points inside (37)-(39) (``|Z_i| <= value_bound``, imposed by a log-barrier of weight
        1e-3, see :class:`BoxedLogLikelihood`) and at query points by clipping the bounds and MLE
        predictions. The synthetic expert of Example 2.2 has ``g = a rho(f)`` with ``rho`` onto
        ``[-3, 3]``, and the reference code boxes every value to ``[-3, 3]``; the box also stops
        the App. F doubling from growing ``B_g`` once the labelled values can reach the box.
        ``None``: the problems (37)-(39) exactly as printed.

    Labels: ``rejected`` is 1 for *reject* and 0 for *accept* (the paper's convention).
    """

    def __init__(
        self,
        kernel: Kernel,
        norm_bound: float = 1.0,
        alpha_coefficient: float = 0.01,
        *,
        jitter: float = 1e-6,
        doubling_period: int = 3,
        max_norm_bound: float = 1024.0,
        adapt: bool = True,
        value_bound: float | None = None,
    ) -> None:
        if not isinstance(kernel, Kernel):
            raise InvalidInputError(f"kernel must be a boloop Kernel, got {type(kernel).__name__}")
        for name, v in (("norm_bound", norm_bound), ("alpha_coefficient", alpha_coefficient)):
            if not (math.isfinite(float(v)) and float(v) > 0):
                raise InvalidInputError(f"{name} must be positive and finite, got {v!r}")
        if not (float(jitter) >= 0):
            raise InvalidInputError(f"jitter must be >= 0, got {jitter!r}")
        if int(doubling_period) < 1:
            raise InvalidInputError(f"doubling_period must be >= 1, got {doubling_period!r}")
        self.kernel = kernel
        self.norm_bound = float(norm_bound)
        self.alpha_coefficient = float(alpha_coefficient)
        self.jitter = float(jitter)
        self.doubling_period = int(doubling_period)
        self.max_norm_bound = float(max_norm_bound)
        self.adapt = bool(adapt)
        if value_bound is not None and not float(value_bound) > 0:
            raise InvalidInputError(f"value_bound must be positive or None, got {value_bound!r}")
        self.value_bound = None if value_bound is None else float(value_bound)
        self._X = np.zeros((0, 0))
        self._r = np.zeros(0)
        self._L = np.zeros((0, 0))
        self._mle: MLEResult | None = None
        self._warm: tuple[np.ndarray, float, float] | None = None
        self.doublings = 0

    # ------------------------------------------------------------------ state
    @property
    def n(self) -> int:
        return int(self._r.size)

    @property
    def X(self) -> np.ndarray:
        """Labelled inputs, (n, d)."""
        return self._X.copy()

    @property
    def rejected(self) -> np.ndarray:
        """Labels, (n,): 1 reject, 0 accept."""
        return self._r.copy()

    @property
    def cholesky(self) -> np.ndarray:
        """Lower Cholesky factor ``L`` (n, n) of ``K(X_lab, X_lab) + jitter I``: the model's
        parametrisation ``g(X_lab) = L w`` (a copy)."""
        return self._L.copy()

    @property
    def alpha1(self) -> float:
        """Practical ``alpha_1 = c sqrt(n + 1)`` (reference code; App. F)."""
        return self.alpha_coefficient * math.sqrt(self.n + 1)

    @property
    def mle(self) -> MLEResult:
        if self._mle is None:
            w0, mu_hint = self._warm_start()
            self._mle = maximum_likelihood(
                self._L,
                self._r,
                self.norm_bound,
                w0,
                value_bound=self.value_bound,
                mu_hint=mu_hint,
            )
            self._warm = (self._mle.Z.copy(), self._mle.mu, self.norm_bound)
        return self._mle

    def _warm_start(self) -> tuple[np.ndarray | None, float | None]:
        """Start of the MLE from the last one (before a new label or kernel): its values at the
        labelled points (a new point: 0) and its ball multiplier."""
        from scipy.linalg import solve_triangular

        if self._warm is None or self.n == 0:
            return None, None
        Z, mu, B = self._warm
        if B != self.norm_bound or Z.size not in (self.n, self.n - 1):
            return None, None
        Z0 = np.concatenate([Z, np.zeros(self.n - Z.size)])
        if self.value_bound is not None:
            Z0 = np.clip(Z0, -0.99 * self.value_bound, 0.99 * self.value_bound)
        w0 = solve_triangular(self._L, Z0, lower=True, check_finite=False)
        return w0, mu

    @property
    def loglik_mle(self) -> float:
        """``l_t(g^MLE_t)`` of (37)."""
        return self.mle.loglik

    def _factor(self) -> None:
        n = self.n
        if n == 0:
            self._L = np.zeros((0, 0))
            return
        K = self.kernel.k(self._X)
        K[np.diag_indices_from(K)] += self.jitter
        self._L, _ = robust_cholesky(K)

    def set_kernel(self, kernel: Kernel) -> None:
        """Replace ``k_g`` (e.g. new length-scales copied from the f-GP); refactor and re-solve."""
        if not isinstance(kernel, Kernel):
            raise InvalidInputError(f"kernel must be a boloop Kernel, got {type(kernel).__name__}")
        self.kernel = kernel
        self._factor()
        self._mle = None

    def set_data(self, X: Any, rejected: Any, *, pretrain: bool = True) -> None:
        """Replace all labels. With ``pretrain`` run the doubling test on every prefix (App. F,
        "pre-training with the initial dataset"; reference code ``initial_train``)."""
        Xa = as_points(X, "X", allow_empty=True)
        ra = self._check_labels(rejected, Xa.shape[0])
        if not pretrain or not self.adapt:
            self._X, self._r = Xa, ra
            self._factor()
            self._mle = None
            return
        self._X, self._r = Xa[:0], ra[:0]
        for i in range(Xa.shape[0]):
            self._X, self._r = Xa[: i + 1], ra[: i + 1]
            self._factor()
            self._mle = None
            self._doubling_test()

    @staticmethod
    def _check_labels(rejected: Any, n: int) -> np.ndarray:
        r = np.asarray(rejected, dtype=np.float64).reshape(-1)
        if r.size != n:
            raise InvalidInputError(f"rejected must have {n} entries, got {r.size}")
        if not np.all((r == 0) | (r == 1)):
            raise InvalidInputError("rejected must contain only 0 (accept) and 1 (reject)")
        return r

    def add(self, x: Any, rejected: Any) -> bool:
        """Append one label (1 reject, 0 accept); refit the MLE; maybe double ``B_g``.

        Returns whether ``B_g`` was doubled. Nothing changes if the input is invalid.
        """
        xa = as_points(x, "x", dim=self._X.shape[1] if self.n else None)
        if xa.shape[0] != 1:
            raise InvalidInputError(f"x must be a single point, got shape {xa.shape}")
        if isinstance(rejected, bool | np.bool_):
            rejected = int(rejected)
        ra = self._check_labels([rejected], 1)
        self._X = np.vstack([self._X.reshape(-1, xa.shape[1]), xa])
        self._r = np.concatenate([self._r, ra])
        self._factor()
        self._mle = None
        if self.adapt and self.n % self.doubling_period == 0:
            return self._doubling_test()
        return False

    def _doubling_test(self) -> bool:
        """App. F: double B (and alpha_1) when l(MLE | 2B) - l(MLE | B) > alpha_1(2B)."""
        if not self.adapt or self.norm_bound * 2 > self.max_norm_bound or self.n == 0:
            return False
        current = self.mle
        if current.mu == 0.0:
            # the ball is inactive at B: the MLE is the unconstrained maximiser, which the larger
            # ball of 2B contains too, so l(MLE | 2B) = l(MLE | B) and the test cannot pass
            return False
        alpha_doubled = 2 * self.alpha_coefficient * math.sqrt(self.n + 1)
        bound = doubling_gain_bound(
            self._L, self._r, current, 2 * self.norm_bound, self.value_bound
        )
        if bound < alpha_doubled:  # the test cannot pass: the MLE at 2B is not needed
            return False
        doubled = maximum_likelihood(
            self._L, self._r, 2 * self.norm_bound, w0=current.w, value_bound=self.value_bound
        )
        if doubled.loglik - current.loglik > alpha_doubled:
            self.norm_bound *= 2
            self.alpha_coefficient *= 2
            self._mle = doubled
            self.doublings += 1
            logger.debug("B_g doubled to %g", self.norm_bound)
            return True
        return False

    # ------------------------------------------------------------------ predictions
    def directions(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``a(x) = L^{-1} k(X_lab, x)`` (m, n) and ``s(x)`` (m,) (Schur complement)."""
        from scipy.linalg import solve_triangular

        kxx = self.kernel.diag(X) + self.jitter
        if self.n == 0:
            return np.zeros((X.shape[0], 0)), np.sqrt(kxx)
        Kc = self.kernel.k(self._X, X)
        A = solve_triangular(self._L, Kc, lower=True, check_finite=False).T
        s2 = kxx - _einsum("ij,ij->i", A, A)
        return A, np.sqrt(np.maximum(s2, 0.0))

    def _points(self, X: Any) -> np.ndarray:
        dim = self._X.shape[1] if self.n else None
        return as_points(X, "X", dim=dim)

    def mle_predict(self, X: Any) -> np.ndarray:
        """``g^MLE(x) = k(X_lab, x)^T K^{-1} Z_MLE`` (minimum-norm interpolant), (m,)."""
        Xa = self._points(X)
        if self.n == 0:
            return np.zeros(Xa.shape[0])
        A, _ = self.directions(Xa)
        return self._clip(A @ self.mle.w)

    def _clip(self, v: np.ndarray) -> np.ndarray:
        if self.value_bound is None:
            return v
        return np.clip(v, -self.value_bound, self.value_bound)

    def bounds(
        self, X: Any, *, lower: bool = True, upper: bool = True, chunk_size: int = 1024
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Pointwise bounds (39) and (38) at X (m, d): ``(g_lower, g_upper)``, each (m,) or None."""
        Xa = self._points(X)
        m = Xa.shape[0]
        lo = np.empty(m) if lower else None
        up = np.empty(m) if upper else None
        mle = self.mle
        ll_min = mle.loglik - self.alpha1
        vb = self.value_bound
        for start in range(0, m, chunk_size):
            sl = slice(start, min(m, start + chunk_size))
            A, s = self.directions(Xa[sl])
            if lower and upper:
                vals = support_values(
                    self._L,
                    self._r,
                    mle,
                    ll_min,
                    self.norm_bound,
                    np.vstack([-A, A]),
                    np.concatenate([s, s]),
                    value_bound=vb,
                    cap=vb,
                )
                k = A.shape[0]
                lo[sl] = -vals[:k]  # type: ignore[index]
                up[sl] = vals[k:]  # type: ignore[index]
            elif lower:
                lo[sl] = -support_values(  # type: ignore[index]
                    self._L, self._r, mle, ll_min, self.norm_bound, -A, s, value_bound=vb, cap=vb
                )
            elif upper:
                up[sl] = support_values(  # type: ignore[index]
                    self._L, self._r, mle, ll_min, self.norm_bound, A, s, value_bound=vb, cap=vb
                )
        if lo is not None:
            lo = self._clip(lo)
        if up is not None:
            up = self._clip(up)
        return lo, up

    def relaxed_bounds(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """Cheap outer bounds ``(lower, upper)`` with ``lower <= g_lower``, ``upper >= g_upper``
        (see :func:`relaxed_support_values`), each (m,). Used to screen candidates."""
        Xa = self._points(X)
        A, s = self.directions(Xa)
        if self.n == 0:
            b = self.norm_bound * np.sqrt(_einsum("ij,ij->i", A, A) + s * s)
            return -b, b
        mle = self.mle
        lo = -relaxed_support_values(mle, self.alpha1, self.norm_bound, -A, s)
        up = relaxed_support_values(mle, self.alpha1, self.norm_bound, A, s)
        return self._clip(lo), self._clip(up)

    def inner_bounds(self, X: Any, *, model: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Cheap inner bounds ``(lower, upper)`` with ``lower >= g_lower``, ``upper <= g_upper``
        up to the exact solver's tolerance (values at feasible points of the set, see
        :func:`inner_support_values`; ``model``: also its quadratic-model candidates), each
        (m,). Computes the MLE as :meth:`bounds` does."""
        Xa = self._points(X)
        A, s = self.directions(Xa)
        mle = self.mle
        ll_min = mle.loglik - self.alpha1
        vals = inner_support_values(
            self._L,
            self._r,
            mle,
            ll_min,
            self.norm_bound,
            np.vstack([-A, A]),
            np.concatenate([s, s]),
            value_bound=self.value_bound,
            model=model,
        )
        k = A.shape[0]
        return self._clip(-vals[:k]), self._clip(vals[k:])

    def width_exceeds(self, X: Any, threshold: float) -> np.ndarray:
        """Whether ``g_upper - g_lower > threshold`` at X (m, d), (m,) bool: the same answers as
        ``width(X) > threshold``, with the exact bounds (39) computed only at the points whose
        inner bounds (:meth:`inner_bounds`, first without, then with the quadratic-model
        candidates) do not already show a width above ``threshold + INNER_MARGIN`` (the margin
        covers the exact solver's convergence tolerance, 1e-10 on the KKT residuals: inner
        bounds are values at feasible points, the exact ones within the tolerance of the
        optimum of the same convex problem)."""
        Xa = self._points(X)
        limit = float(threshold) + INNER_MARGIN
        lo, up = self.inner_bounds(Xa, model=False)
        out = (up - lo) > limit
        rest = np.flatnonzero(~out)
        if rest.size:
            lo, up = self.inner_bounds(Xa[rest])
            out[rest] = (up - lo) > limit
            rest = rest[~out[rest]]
        if rest.size:
            out[rest] = self.width(Xa[rest]) > float(threshold)
        return out

    def width(self, X: Any) -> np.ndarray:
        """``g_upper - g_lower`` at X (m, d), (m,)."""
        lo, up = self.bounds(X)
        assert lo is not None and up is not None
        return up - lo

    def require_data(self) -> None:
        if self.n == 0:
            raise NotFittedError("the confidence set has no labels yet")
