"""The log posterior of a stationary-kernel GP's hyperparameters, lean enough to be optimised
at every refit.

:meth:`boloop.gp.exact.ExactGP.fit` maximises the log marginal likelihood (Rasmussen and Williams
2006, eq. 2.30) plus the log priors of the hyperparameters, with its gradient (eq. 5.9), by
L-BFGS-B: some thirty evaluations per refit on the few dozen observations of a study, where the
level-set family refits after most answers (issue 18). The general path
(:meth:`ExactGP.log_posterior`) builds a kernel object, unpacks the parameters by name and
expands condensed distance matrices at every evaluation: Python overhead several times the cost
of the linear algebra at these sizes. :class:`StationaryLogPosterior` is the same function for a
:class:`~boloop.gp.kernels.StationaryKernel` (squared exponential or Matern, isotropic or ARD)
with everything that does not depend on the parameters prepared once per fit: the data, the
packing of the free parameters, the priors by position. Per evaluation it forms the Gram matrix
once (squared distances summed coordinate by coordinate, the kernel and its slope
``-2 dk/d(r^2)`` from them), factorises it once (LAPACK potrf), and takes the gradient traces
``0.5 tr((alpha alpha^T - K^{-1}) dK_k)`` without forming any ``dK_k`` (see
:meth:`StationaryKernel.gradient_traces`).

Without replicated inputs it performs the general path's floating-point operations in the same
order, so its values and gradients are the same numbers, bit for bit (checked in
``tests/test_gp_marginal_likelihood.py`` against :meth:`ExactGP.log_posterior`, scikit-learn's
``log_marginal_likelihood`` and finite differences): fits, and the runs built on them, do not
change. Where the factorisation fails it hands the evaluation to the general path (its jitter
ladder).

**Replicates.** A policy on a finite grid re-queries points (on ``levelset/toy`` 105 answers fall
on 11-14 of the 41 points). With Gaussian noise ``sigma^2 > 0`` the group means ``ybar_i`` of the
``m_i`` answers at the ``u`` distinct inputs, and the within-group scatter ``S = sum_ij (y_ij -
ybar_i)^2``, are sufficient (Binois, Gramacy and Ludkovski, "Practical heteroscedastic Gaussian
process modeling for large simulation experiments", JCGS 2018)::

    log p(y) = log N(ybar | m, K_u + sigma^2 diag(1 / m_i))
               - (n - u) / 2 log(2 pi sigma^2) - 1/2 sum_i log m_i - S / (2 sigma^2)

so the factorisation is ``u x u`` instead of ``n x n``; the gradient in ``log sigma^2`` gains
``-(n - u) / 2 + S / (2 sigma^2)``. The same function to rounding (relative 1e-13 in the tests),
better conditioned than the full matrix whose identical rows differ only by the noise. Being
equal only to rounding, it changes fixed-seed traces where a run depends on the last bits of a
fit (the safe family's `safe/random-gp` runs do), so it is asked for
(``collapse_replicates=True`` of :meth:`ExactGP.fit` and of
:class:`~boloop.gp.hyperparameters.HyperparameterLearning`), by the level-set family.

Shapes: training inputs (n, d), targets (n,), packed free parameters (p,).
"""

from __future__ import annotations

import copy
import math

import numpy as np
from scipy.linalg import lapack

from boloop.gp.exact import ExactGP, LogNormalPrior
from boloop.gp.kernels import StationaryKernel

__all__ = ["StationaryLogPosterior"]

_LOG_2PI = math.log(2 * math.pi)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_potrf, _potrs, _potri = lapack.dpotrf, lapack.dpotrs, lapack.dpotri


def _pairwise_sqdist(Xs: np.ndarray) -> np.ndarray:
    """``sum_j (x_ij - x_kj)^2`` (n, n) for scaled inputs ``Xs`` (n, d), summed over ``j`` in
    order: the values of ``squareform(pdist(Xs, "sqeuclidean"))``, zero diagonal included."""
    Xt = np.ascontiguousarray(Xs.T)
    D = np.subtract.outer(Xt[0], Xt[0])
    D *= D
    for j in range(1, Xt.shape[0]):
        t = np.subtract.outer(Xt[j], Xt[j])
        t *= t
        D += t
    return D


class StationaryLogPosterior:
    """``params -> (log posterior, gradient)`` of ``gp``'s packed free hyperparameters.

    Built from the GP's current data, kernel, priors and packing (:meth:`ExactGP.free_parameters`:
    the free kernel log-hyperparameters, then the log noise if fitted, then the constant mean if
    any). Use :meth:`for_gp`, which returns ``None`` where the general path must be used (a
    kernel that is not stationary, or fixed length-scales). ``collapse_replicates`` collapses
    replicated inputs (module docstring): the same function to rounding only, so it is an
    option (the level-set family's refits use it; fits whose traces are kept bit for bit do
    not). The GP is not modified.
    """

    def __init__(self, gp: ExactGP, *, collapse_replicates: bool = False) -> None:
        kern = gp.kernel
        assert isinstance(kern, StationaryKernel)
        self._gp = gp
        # a private shallow copy whose variance and length-scales are set per evaluation (the
        # kernel's own formulas k(r^2) and slope(r^2) are used on them)
        self._kern = copy.copy(kern)
        X = np.array(gp.X, dtype=np.float64)
        y = np.array(gp.y, dtype=np.float64)
        # replicates (the same input observed again: a policy re-querying a grid point) are
        # collapsed to their means where the noise is positive (see the module docstring)
        self._replicates: tuple[np.ndarray, float, float, float] | None = None
        if collapse_replicates and y.size > 1 and (gp.fit_noise or gp.noise_variance > 0):
            # rows compared as a whole (one column: as numbers, several times faster)
            Xu, first, where, counts = np.unique(
                X[:, 0] if X.shape[1] == 1 else X,
                axis=None if X.shape[1] == 1 else 0,
                return_index=True,
                return_inverse=True,
                return_counts=True,
            )
            if Xu.shape[0] < y.size:
                order = np.argsort(first, kind="stable")  # groups in order of first appearance
                rank = np.empty_like(order)
                rank[order] = np.arange(order.size)
                where = rank[where.reshape(-1)]
                m = counts[order].astype(np.float64)
                ybar = np.bincount(where, weights=y, minlength=m.size) / m
                scatter = float(np.sum((y - ybar[where]) ** 2))
                n_extra = float(y.size - m.size)  # n - u
                const = -0.5 * n_extra * _LOG_2PI - 0.5 * float(np.sum(np.log(m)))
                self._replicates = (1.0 / m, scatter, n_extra, const)
                X, y = X[first[order]], ybar
        self._X = X
        self._y = y
        self._n = int(self._y.size)
        self._mask = kern.free_mask
        self._n_free = int(self._mask.sum())
        self._theta = kern.theta.copy()
        self._fit_variance = "variance" not in kern.fixed
        self._fit_noise = gp.fit_noise
        self._noise = gp.noise_variance
        self._constant = gp.mean == "constant"
        self._mean = gp.mean_constant
        self._half_n_log_2pi = 0.5 * self._n * _LOG_2PI
        self._ard = kern.ard
        self._n_params = self._n_free + int(self._fit_noise) + int(self._constant)
        self._diag = slice(None, None, self._n + 1)
        priors = gp.priors
        # (index in theta, index in the packed vector or -1 when fixed, prior, and for a
        # log-normal prior its (mu, sigma, log sigma))
        self._theta_priors = []
        packed = np.cumsum(self._mask) - 1
        for i, name in enumerate(kern.theta_names):
            prior = priors.get(name) or priors.get(name.split("[")[0])
            if prior is not None:
                normal = None
                if type(prior) is LogNormalPrior:
                    normal = (prior.mu, prior.sigma, math.log(prior.sigma))
                self._theta_priors.append(
                    (i, int(packed[i]) if self._mask[i] else -1, prior, normal)
                )
        self._noise_prior = priors.get("noise") if self._fit_noise else None
        self._has_priors = bool(priors)

    @classmethod
    def for_gp(
        cls, gp: ExactGP, *, collapse_replicates: bool = False
    ) -> StationaryLogPosterior | None:
        """The lean objective for ``gp``, or ``None`` when only the general path applies."""
        kern = gp.kernel
        if not isinstance(kern, StationaryKernel) or "lengthscale" in kern.fixed or gp.n < 1:
            return None
        return cls(gp, collapse_replicates=collapse_replicates)

    def __call__(self, params: np.ndarray) -> tuple[float, np.ndarray]:
        """Log marginal likelihood plus log priors at ``params`` (p,), and the gradient (p,)."""
        p = np.asarray(params, dtype=np.float64)
        # unpack (as ExactGP._unpack and the kernel's theta setter do)
        theta = self._theta.copy()
        k = self._n_free
        theta[self._mask] = p[:k]
        i = k
        noise = self._noise
        if self._fit_noise:
            noise = float(np.exp(p[i]))
            i += 1
        const = float(p[i]) if self._constant else self._mean
        kern = self._kern
        variance = float(np.exp(theta[0]))
        ls = np.exp(theta[1:])
        kern.variance = variance
        kern.lengthscale = ls if self._ard else float(ls[0])
        # Gram matrix and the slope -2 dk/d(r^2), from the scaled squared distances
        Xs = self._X / kern.lengthscale
        r2 = _pairwise_sqdist(Xs)
        K, slope = kern._k_and_slope(r2)
        diag = self._diag
        K.flat[diag] = variance
        Kn = K.copy()
        rep = self._replicates
        # the means of m_i replicates have noise variance noise / m_i
        Kn.flat[diag] += noise if rep is None else noise * rep[0]
        # K + noise I is symmetric: its transpose is the Fortran-ordered array LAPACK factorises
        # in place
        L, info = _potrf(Kn.T, lower=1, clean=1, overwrite_a=1)
        if info != 0 or not math.isfinite(L[-1, -1]):
            return self._gp.log_posterior(p)  # the general path's jitter ladder
        r = self._y - const
        alpha, _ = _potrs(L, r, lower=1)
        lml = -0.5 * float(r @ alpha) - float(np.log(L.diagonal()).sum()) - self._half_n_log_2pi
        # R&W eq. 5.9 through W = alpha alpha^T - K^{-1} (see ExactGP.log_marginal_likelihood):
        # K^{-1}'s lower triangle from the factor (potri, in place; the upper part stays zero),
        # doubled off the diagonal; invT is its C-ordered transpose (upper triangle)
        inv, info = _potri(L, lower=1, overwrite_c=1)
        if info != 0:  # pragma: no cover - a valid factor never fails
            return self._gp.log_posterior(p)
        invT = inv.T
        d = invT.diagonal().copy()
        invT *= 2.0
        invT.flat[diag] = d
        W = np.outer(alpha, alpha)
        W -= inv
        g = np.empty(self._n_params)
        j = 0
        if self._fit_variance:
            g[0] = 0.5 * float(np.vdot(W, K))
            j = 1
        S = W * slope
        if self._ard:
            # the slope's diagonal only multiplies zero distances (the general path has 0 there)
            S.flat[diag] = W.flat[diag] * 0.0
            Z = Xs - Xs.sum(axis=0) / self._n
            sums = S.sum(axis=1) + S.sum(axis=0)
            g[j : j + Z.shape[1]] = 0.5 * (sums @ (Z * Z) - 2.0 * np.einsum("ij,ij->j", Z, S @ Z))
            j += Z.shape[1]
        else:  # r2's diagonal is 0: S's diagonal adds (signed) zeros only
            g[j] = 0.5 * float(np.vdot(S, r2))
            j += 1
        if rep is not None:  # the within-group scatter of the replicates
            inv_m, scatter, n_extra, const = rep
            lml += const - 0.5 * n_extra * math.log(noise) - 0.5 * scatter / noise
        if self._fit_noise:
            if rep is None:
                g[j] = 0.5 * noise * float(W.trace())
            else:
                g[j] = 0.5 * noise * float(W.diagonal() @ inv_m) - 0.5 * n_extra
                g[j] += 0.5 * scatter / noise
            j += 1
        if self._constant:
            g[j] = float(alpha.sum())
        if not self._has_priors:
            return lml, g
        # log priors in theta = log p and their gradients (as ExactGP._prior_terms)
        total = 0.0
        for i, j, prior, normal in self._theta_priors:
            if normal is not None:  # LogNormalPrior.logpdf_theta, inlined
                mu, sigma, log_sigma = normal
                z = (float(theta[i]) - mu) / sigma
                lp, dlp = -0.5 * z * z - log_sigma - _HALF_LOG_2PI, -z / sigma
            else:
                lp, dlp = prior.logpdf_theta(float(theta[i]))
            total += lp
            if j >= 0:
                g[j] += dlp
        if self._noise_prior is not None:
            lp, dlp = self._noise_prior.logpdf_theta(math.log(noise))
            total += lp
            g[self._n_free] += dlp
        return lml + total, g
