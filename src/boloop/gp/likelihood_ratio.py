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

Where the parts live (this module holds :class:`LikelihoodRatioModel` and re-exports the rest):
``likelihood_ratio_loglik`` (``l(Z)``, :class:`BoxedLogLikelihood`, the lazily imported scipy
routines), ``likelihood_ratio_mle`` (the MLE (37), the doubling gain's bound),
``likelihood_ratio_support`` (the exact support values, batched KKT Newton),
``likelihood_ratio_dual`` (the quadratic-model start and the dual fallback) and
``likelihood_ratio_cheap_bounds`` (inner and relaxed support values), all in ``boloop.gp``.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

from boloop._validation import as_points
from boloop.errors import InvalidInputError, NotFittedError
from boloop.gp.exact import robust_cholesky
from boloop.gp.kernels import Kernel
from boloop.gp.likelihood_ratio_cheap_bounds import inner_support_values, relaxed_support_values
from boloop.gp.likelihood_ratio_dual import mle_eigenbasis
from boloop.gp.likelihood_ratio_dual import model_start as model_start
from boloop.gp.likelihood_ratio_dual import support_value_dual as support_value_dual
from boloop.gp.likelihood_ratio_loglik import BoxedLogLikelihood, _einsum, log_likelihood
from boloop.gp.likelihood_ratio_mle import (
    MLEResult,
    doubling_gain_bound,
    maximum_likelihood,
    penalised_maximum_likelihood,
)
from boloop.gp.likelihood_ratio_support import INNER_MARGIN, support_values
from boloop.gp.likelihood_ratio_support import S_MIN as S_MIN
from boloop.gp.likelihood_ratio_support import _solve_spd_rows as _solve_spd_rows

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
