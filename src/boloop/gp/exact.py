"""Exact Gaussian-process regression with a Cholesky factor that grows by appends.

Posterior (Rasmussen and Williams 2006, Algorithm 2.1; the papers' eq. 2.1 of Inatsu et al.,
eq. (2a)/(2b) of COBOL, eq. (7)-(9) of M-SafeOpt), with ``r = y - m`` for prior mean ``m``::

    L L^T = K + noise I            a = L^{-1} r         V = L^{-1} K(X, X*)
    mean(X*) = m + V^T a           var(X*) = k(X*, X*) - colsum(V**2)

The log marginal likelihood (R&W eq. 2.30) and its gradient (eq. 5.9) in log-hyperparameters are
used by :meth:`ExactGP.fit` (L-BFGS-B, several starts, optional priors on hyperparameters).

Shapes: training inputs (n, d), targets (n,), test inputs (m, d); means and variances (m,).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from boloop._validation import as_points, as_rng, as_values
from boloop.errors import InvalidInputError
from boloop.gp.kernels import Kernel

__all__ = ["ExactGP", "LogNormalPrior", "GammaPrior", "robust_cholesky"]

logger = logging.getLogger("boloop")

_JITTER_LADDER = (0.0, 1e-12, 1e-10, 1e-8, 1e-6, 1e-4)


class _LbfgsbTolerance(TypedDict, total=False):
    """L-BFGS-B's relative tolerance on the objective when ``fit`` is given one (scipy's
    default otherwise)."""

    ftol: float


def robust_cholesky(A: np.ndarray) -> tuple[np.ndarray, float]:
    """Lower Cholesky factor of a symmetric PSD matrix with a jitter ladder.

    Tries ``A + j * mean(diag(A)) * I`` for ``j`` in (0, 1e-12, ..., 1e-4) and returns the first
    success with the absolute jitter used. Raises ``numpy.linalg.LinAlgError`` if all fail.
    """
    from scipy.linalg import LinAlgError, cholesky

    n = A.shape[0]
    if n == 0:
        return np.zeros((0, 0)), 0.0
    scale = float(np.mean(np.diag(A))) if n else 1.0
    scale = scale if scale > 0 and math.isfinite(scale) else 1.0
    for rel in _JITTER_LADDER:
        jitter = rel * scale
        try:
            B = A if jitter == 0 else A + jitter * np.eye(n)
            L = cholesky(B, lower=True, check_finite=False)
        except LinAlgError:
            continue
        if np.all(np.isfinite(L)):
            if jitter > 0:
                logger.debug("cholesky needed jitter %.3g", jitter)
            return L, jitter
    raise LinAlgError("matrix is not positive definite even with jitter")


def _doubled_lower_inverse(L: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """``2 tril(A^{-1}) - diag(A^{-1})`` for ``A = L L^T`` (LAPACK potri), (n, n).

    For any symmetric ``S``, ``sum(result * S) = tr(A^{-1} S)`` and ``trace(result) =
    trace(A^{-1})``. Only for the trace terms of likelihood gradients (R&W eq. 5.9); linear
    systems are always solved with the factor.
    """
    from scipy.linalg import cho_solve, lapack

    upper_zero = L.shape[0] < 2 or L[0, -1] == 0
    inv, info = lapack.dpotri(L, lower=1, overwrite_c=int(overwrite and upper_zero))
    if info != 0:  # pragma: no cover - a valid factor never fails
        inv = cho_solve((L, True), np.eye(L.shape[0]), check_finite=False)
    if info != 0 or not upper_zero:  # potri leaves the upper part of its input as it was
        inv = np.tril(inv)
    d = np.diag(inv).copy()
    inv *= 2.0
    inv.flat[:: inv.shape[0] + 1] = d
    return inv


@dataclass(frozen=True)
class LogNormalPrior:
    """``log p ~ Normal(mu, sigma^2)`` for a positive hyperparameter ``p``.

    Fitting works in ``theta = log p``, where this prior is a normal density (no Jacobian).
    """

    mu: float
    sigma: float

    def logpdf_theta(self, theta: float) -> tuple[float, float]:
        z = (theta - self.mu) / self.sigma
        return (
            -0.5 * z * z - math.log(self.sigma) - 0.5 * math.log(2 * math.pi),
            -z / self.sigma,
        )


@dataclass(frozen=True)
class GammaPrior:
    """``p ~ Gamma(shape, rate)`` for a positive hyperparameter ``p``, as a density in ``theta = log p``.

    In theta-space the density is ``shape * theta - rate * exp(theta)`` up to a constant (the
    Jacobian ``p`` of ``p = exp(theta)`` is included).
    """

    shape: float
    rate: float

    def logpdf_theta(self, theta: float) -> tuple[float, float]:
        p = math.exp(theta)
        const = self.shape * math.log(self.rate) - math.lgamma(self.shape)
        return const + self.shape * theta - self.rate * p, self.shape - self.rate * p


class ExactGP:
    """Exact GP regression with Gaussian noise.

    Parameters
    ----------
    kernel:
        A :class:`boloop.gp.kernels.Kernel`; its log-hyperparameters are fitted by :meth:`fit`
        except those it marks as ``fixed``.
    noise_variance:
        Variance of the Gaussian observation noise (the papers' ``sigma^2``, ``lambda`` or ``r``).
    fit_noise:
        Fit the noise variance by marginal likelihood (never below ``noise_floor``).
    noise_floor:
        Lower bound of the fitted noise variance.
    mean:
        ``"zero"`` or ``"constant"`` prior mean. A constant mean is fitted with the other
        hyperparameters (initialised at ``mean_constant``).
    priors:
        Optional priors keyed by hyperparameter name: a kernel's ``theta_names`` entry
        (``"variance"``, ``"lengthscale"`` applies to every length-scale, ``"lengthscale[1]"``), or
        ``"noise"``; each a :class:`LogNormalPrior` or :class:`GammaPrior`.
    """

    def __init__(
        self,
        kernel: Kernel,
        noise_variance: float = 1e-6,
        *,
        fit_noise: bool = False,
        noise_floor: float = 1e-10,
        mean: str = "zero",
        mean_constant: float = 0.0,
        priors: Mapping[str, LogNormalPrior | GammaPrior] | None = None,
    ) -> None:
        if not isinstance(kernel, Kernel):
            raise InvalidInputError(f"kernel must be a boloop Kernel, got {type(kernel).__name__}")
        noise_variance = float(noise_variance)
        if not math.isfinite(noise_variance) or noise_variance < 0:
            raise InvalidInputError(f"noise_variance must be >= 0, got {noise_variance!r}")
        if mean not in ("zero", "constant"):
            raise InvalidInputError(f"mean must be 'zero' or 'constant', got {mean!r}")
        if not float(noise_floor) > 0:
            raise InvalidInputError(f"noise_floor must be positive, got {noise_floor!r}")
        self.kernel = kernel
        self.noise_variance = noise_variance
        self.fit_noise = bool(fit_noise)
        self.noise_floor = float(noise_floor)
        self.mean = mean
        self.mean_constant = float(mean_constant) if mean == "constant" else 0.0
        self.priors = dict(priors or {})
        valid = set(kernel.theta_names) | {"lengthscale", "noise"}
        unknown = set(self.priors) - valid
        if unknown:
            raise InvalidInputError(f"priors name unknown hyperparameters {sorted(unknown)}")
        self._dim: int | None = None
        self._n = 0
        self._X = np.zeros((0, 0))
        self._y = np.zeros(0)
        self._L = np.zeros((0, 0))
        self._a = np.zeros(0)
        self._jitter = 0.0
        #: increases whenever the factorisation is recomputed (hyperparameters or data replaced);
        #: caches built on this GP use it to know when an incremental update is not enough.
        self.version = 0
        #: the log marginal likelihood plus log priors at the optimum the last :meth:`fit` found,
        #: as the fit evaluated it (NaN before a fit)
        self.fit_log_posterior = math.nan

    # ------------------------------------------------------------------ pickling
    #: the data buffers, allocated with spare capacity (``_ensure_capacity``), of which only the
    #: first n rows (and n columns of ``_L``) are in use
    _BUFFERS = ("_X", "_y", "_L", "_a")

    def __getstate__(self) -> dict[str, Any]:
        """The state without the buffers' unused capacity: a study snapshot of a GP with 300
        observations in buffers of 512 stores a 300 x 300 factor, not 512 x 512 (a third of the
        bytes to compress at every ``boloop study tell`` of a safe study)."""
        state = self.__dict__.copy()
        state.pop("_layout_cache", None)  # a memo, rebuilt on use
        for name in self._BUFFERS:
            state[name] = pack_used_rows(getattr(self, name), self._n, square=name == "_L")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """The buffers as they were: zeros of the same shapes (so the same capacity and memory
        layout) holding the rows in use."""
        state = dict(state)
        for name in self._BUFFERS:
            state[name] = unpack_used_rows(state[name], square=name == "_L")
        self.__dict__.update(state)

    # ------------------------------------------------------------------ data
    @property
    def n(self) -> int:
        """Number of observations."""
        return self._n

    @property
    def dim(self) -> int | None:
        return self._dim

    @property
    def X(self) -> np.ndarray:
        """Observed inputs, shape (n, d) (a read-only view)."""
        v = self._X[: self._n]
        v.flags.writeable = False
        return v

    @property
    def y(self) -> np.ndarray:
        """Observed targets, shape (n,) (a read-only view)."""
        v = self._y[: self._n]
        v.flags.writeable = False
        return v

    @property
    def cholesky_factor(self) -> np.ndarray:
        """Lower Cholesky factor of ``K + noise I`` (plus jitter), shape (n, n), read-only view."""
        v = self._L[: self._n, : self._n]
        v.flags.writeable = False
        return v

    @property
    def whitened_residual(self) -> np.ndarray:
        """``a = L^{-1} (y - m)``, shape (n,), read-only view."""
        v = self._a[: self._n]
        v.flags.writeable = False
        return v

    def _ensure_capacity(self, n_new: int, d: int) -> None:
        cap = self._L.shape[0]
        if n_new <= cap and self._X.shape[1] == d:
            return
        new_cap = max(16, 2 * cap, n_new)
        L = np.zeros((new_cap, new_cap))
        L[: self._n, : self._n] = self._L[: self._n, : self._n]
        X = np.zeros((new_cap, d))
        if self._n:
            X[: self._n] = self._X[: self._n]
        y = np.zeros(new_cap)
        y[: self._n] = self._y[: self._n]
        a = np.zeros(new_cap)
        a[: self._n] = self._a[: self._n]
        self._L, self._X, self._y, self._a = L, X, y, a

    def set_data(self, X: Any, y: Any) -> ExactGP:
        """Replace all observations and refactorise. Returns ``self``.

        Transactional: on any error (bad input, a kernel that rejects X, a failed factorisation)
        the GP keeps its previous data, factor and version.
        """
        Xa = as_points(X, "X", dim=self._dim if self._dim else None, allow_empty=True)
        ya = as_values(y, "y", n=Xa.shape[0])
        self._check_kernel_accepts(Xa, "X")
        L, jitter, a = self._factorise(Xa, ya)
        n = Xa.shape[0]
        self._dim = Xa.shape[1]
        self._n = 0
        self._ensure_capacity(n, Xa.shape[1])
        self._X[:n] = Xa
        self._y[:n] = ya
        self._L[:n, :n] = L
        self._a[:n] = a
        self._jitter = jitter
        self._n = n
        self.version += 1
        return self

    def _check_kernel_accepts(self, Xa: np.ndarray, name: str) -> None:
        """Raise :class:`InvalidInputError` naming ``name`` if the kernel rejects these points."""
        if Xa.shape[0] == 0:
            return
        try:
            self.kernel.diag(Xa[:1])
        except InvalidInputError as exc:
            raise InvalidInputError(f"{name}: {exc}") from exc

    def _factorise(self, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
        """``(L, jitter, a)`` for inputs (n, d) and targets (n,) without changing any state."""
        from scipy.linalg import solve_triangular

        n = X.shape[0]
        if not n:
            return np.zeros((0, 0)), 0.0, np.zeros(0)
        K = self.kernel.k(X)
        K[np.diag_indices_from(K)] += self.noise_variance
        L, jitter = robust_cholesky(K)
        a = solve_triangular(L, y - self.mean_constant, lower=True, check_finite=False)
        return L, jitter, a

    def _refactor(self) -> None:
        n = self._n
        L, jitter, a = self._factorise(self._X[:n], self._y[:n])
        self._L[:n, :n] = L
        self._a[:n] = a
        self._jitter = jitter
        self.version += 1

    def condition(self, x: Any, y: Any) -> ExactGP:
        """Add observations by Cholesky appends, O(n^2) per point. Returns ``self``.

        The factor rows already present do not change, which is what lets caches over fixed
        candidate sets update in O(N n) per point (:class:`boloop.gp.cache.CandidatePosterior`).
        """
        if np.ndim(x) == 1 and np.ndim(y) == 0:  # one point given as a vector
            x = np.asarray(x, dtype=np.float64).reshape(1, -1)
        Xa = as_points(x, "x", dim=self._dim)
        ya = as_values(y, "y", n=Xa.shape[0])
        self._check_kernel_accepts(Xa, "x")
        if self._dim is None:
            self._dim = Xa.shape[1]
        for xi, yi in zip(Xa, ya):
            self._append_one(xi, float(yi))
        return self

    def _append_one(self, x: np.ndarray, y: float) -> None:
        from scipy.linalg import solve_triangular

        n = self._n
        self._ensure_capacity(n + 1, x.shape[0])
        x2 = x[None, :]
        kxx = float(self.kernel.diag(x2)[0]) + self.noise_variance + self._jitter
        if n:
            kvec = self.kernel.k(self._X[:n], x2)[:, 0]
            ell = solve_triangular(self._L[:n, :n], kvec, lower=True, check_finite=False)
            d2 = kxx - float(ell @ ell)
        else:
            ell = np.zeros(0)
            d2 = kxx
        floor = 1e-12 * max(kxx, 1e-300)
        if not d2 > floor:  # duplicates with tiny noise: keep the factor positive definite
            d2 = max(d2, 0.0) + max(floor, 1e-10 * kxx)
            logger.debug("cholesky append clamped a pivot to %.3g", d2)
        d = math.sqrt(d2)
        self._L[n, :n] = ell
        self._L[n, n] = d
        self._L[:n, n] = 0.0
        self._X[n] = x
        self._y[n] = y
        self._a[n] = (y - self.mean_constant - float(ell @ self._a[:n])) / d
        self._n = n + 1

    # ------------------------------------------------------------------ prediction
    def posterior_weights(self, L: np.ndarray | None = None) -> np.ndarray:
        """``alpha = (K + sigma_n^2 I)^{-1} (y - m)`` (n,), R&W eq. (2.25): the posterior mean at
        x is ``m + k(x, X) alpha`` (empty with no data). ``L`` optionally the Cholesky factor in
        a (Fortran-ordered) copy the caller reuses."""
        from scipy.linalg import solve_triangular

        if self._n == 0:
            return np.zeros(0)
        factor = self.cholesky_factor if L is None else L
        return solve_triangular(factor, self.whitened_residual, lower=True, trans="T")

    def whitened_cross_covariance(self, X: Any) -> np.ndarray:
        """``V = L^{-1} K(X_train, X)`` (n, m), with ``L`` the Cholesky factor of
        ``K + sigma_n^2 I`` (R&W Algorithm 2.1, line 5): the posterior mean at X is
        ``m + V^T (L^{-1} (y - m))`` and the posterior covariance ``K(X, X') - V^T V'``; the first
        j rows are the same quantities for the posterior on the first j observations."""
        Xa = np.asarray(X, dtype=np.float64)
        if Xa.ndim != 2 or (self._n and Xa.shape[1] != self._X.shape[1]):
            raise InvalidInputError(f"X must be (m, {self.dim}), got shape {Xa.shape}")
        if not self._n:
            return np.zeros((0, Xa.shape[0]))
        return self._cross_solve(Xa)

    def _cross_solve(self, Xs: np.ndarray, L: np.ndarray | None = None) -> np.ndarray:
        """``V = L^{-1} K(X, Xs)``, shape (n, m) (Fortran-ordered).

        ``K(Xs, X)`` is computed as an (m, n) C-ordered array whose transpose is the (n, m)
        Fortran-ordered right-hand side LAPACK wants, so the solve works in place without a copy.
        ``L`` optionally passes the factor already in Fortran order (for repeated chunks).
        """
        from scipy.linalg import solve_triangular

        n = self._n
        KsT = self.kernel.k(Xs, self._X[:n]).T
        if L is None:
            L = self._L[:n, :n]
        return solve_triangular(L, KsT, lower=True, check_finite=False, overwrite_b=True)

    def _factor_fortran(self) -> np.ndarray:
        """The current factor as a Fortran-ordered (n, n) copy, for repeated triangular solves."""
        return np.asfortranarray(self._L[: self._n, : self._n])

    def predict(
        self, X: Any, *, full_cov: bool = False, chunk_size: int = 2048
    ) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and variance at ``X`` (m, d); with ``full_cov`` the (m, m) covariance.

        Variances are clipped at zero. Large ``X`` is processed in chunks of ``chunk_size`` rows.
        """
        Xs = as_points(X, "X", dim=self._dim, allow_empty=True)
        if full_cov:
            return self.mean_at(Xs), self.posterior_covariance(Xs, Xs)
        m = Xs.shape[0]
        mean = np.empty(m)
        var = np.empty(m)
        L = self._factor_fortran() if self._n else None
        a = self._a[: self._n]
        step = max(1, int(chunk_size))
        for start in range(0, m, step):
            sl = slice(start, min(m, start + step))
            kdiag = self.kernel.diag(Xs[sl])
            if self._n:
                VT = self._cross_solve(Xs[sl], L).T  # (m_chunk, n), C-ordered
                mean[sl] = self.mean_constant + VT @ a
                var[sl] = kdiag - np.einsum("ij,ij->i", VT, VT)
            else:
                mean[sl] = self.mean_constant
                var[sl] = kdiag
        np.maximum(var, 0.0, out=var)
        return mean, var

    def mean_at(self, X: Any) -> np.ndarray:
        """Posterior mean only, shape (m,)."""
        return self.predict(X)[0]

    def posterior_covariance(self, X1: Any, X2: Any) -> np.ndarray:
        """Posterior covariance ``k_n(X1, X2)``, shape (m1, m2)."""
        A = as_points(X1, "X1", dim=self._dim, allow_empty=True)
        B = as_points(X2, "X2", dim=self._dim or A.shape[1], allow_empty=True)
        prior = self.kernel.k(A, B)
        if not self._n:
            return prior
        return prior - self._cross_solve(A).T @ self._cross_solve(B)

    def information_gain(self) -> float:
        """``0.5 * logdet(I + K / noise)`` of the observed points (Srinivas et al. 2010, eq. 3)."""
        if not self._n:
            return 0.0
        if self.noise_variance <= 0:
            raise InvalidInputError("information gain needs a positive noise_variance")
        logdet = 2.0 * float(np.sum(np.log(np.diag(self._L[: self._n, : self._n]))))
        return 0.5 * (logdet - self._n * math.log(self.noise_variance))

    # ------------------------------------------------------------------ hyperparameters
    def _pack(self) -> np.ndarray:
        parts = [self.kernel.theta[self.kernel.free_mask]]
        if self.fit_noise:
            parts.append([math.log(max(self.noise_variance, self.noise_floor))])
        if self.mean == "constant":
            parts.append([self.mean_constant])
        return np.concatenate(parts)

    def _bounds(
        self, named: Mapping[str, tuple[float, float]] | None = None
    ) -> list[tuple[float | None, float | None]]:
        """Bounds of the packed free parameters; ``named`` narrows them (natural units)."""
        named = named or {}
        valid = set(self.kernel.theta_names) | {"lengthscale", "noise"}
        unknown = set(named) - valid
        if unknown:
            raise InvalidInputError(f"bounds name unknown hyperparameters {sorted(unknown)}")
        kb = self.kernel.bounds.copy()
        for i, name in enumerate(self.kernel.theta_names):
            pair = named.get(name) or named.get(name.split("[")[0])
            if pair is not None:
                kb[i] = [math.log(float(pair[0])), math.log(float(pair[1]))]
        kb = kb[self.kernel.free_mask]
        bounds: list[tuple[float | None, float | None]] = [(float(lo), float(hi)) for lo, hi in kb]
        if self.fit_noise:
            lo_n, hi_n = named.get("noise", (self.noise_floor, 1e5))
            bounds.append((math.log(max(float(lo_n), self.noise_floor)), math.log(float(hi_n))))
        if self.mean == "constant":
            bounds.append((None, None))
        return bounds

    def _layout(self) -> tuple[np.ndarray, int, tuple[tuple[int, Any], ...]]:
        """``(free mask, number free, ((index, prior), ...))`` over the kernel's ``theta``:
        fixed by the kernel's structure and the priors, so memoised on them (a fit evaluates
        the likelihood dozens of times)."""
        k = self.kernel
        key = (type(k), k.fixed, tuple(k.hyperparameter_groups().items()), *self.priors.items())
        cached = getattr(self, "_layout_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        mask = k.free_mask
        pairs = []
        for i, name in enumerate(k.theta_names):
            prior = self.priors.get(name) or self.priors.get(name.split("[")[0])
            if prior is not None:
                pairs.append((i, prior))
        layout = (mask, int(mask.sum()), tuple(pairs))
        self._layout_cache = (key, layout)
        return layout

    def _unpack(self, p: np.ndarray) -> tuple[np.ndarray, float, float]:
        mask, k, _ = self._layout()
        theta = self.kernel.theta.copy()
        theta[mask] = p[:k]
        i = k
        noise = self.noise_variance
        if self.fit_noise:
            noise = float(np.exp(p[i]))
            i += 1
        const = self.mean_constant
        if self.mean == "constant":
            const = float(p[i])
        return theta, noise, const

    def _prior_terms(self, theta: np.ndarray, noise: float) -> tuple[float, np.ndarray]:
        """Log prior and its gradient wrt the packed free vector."""
        if not self.priors:
            return 0.0, np.zeros(0)
        mask, _, pairs = self._layout()
        grad_full = np.zeros(theta.size)
        total = 0.0
        for i, prior in pairs:
            lp, g = prior.logpdf_theta(float(theta[i]))
            total += lp
            grad_full[i] = g
        extra = []
        if self.fit_noise:
            prior = self.priors.get("noise")
            if prior is not None:
                lp, g = prior.logpdf_theta(math.log(noise))
                total += lp
                extra.append(g)
            else:
                extra.append(0.0)
        if self.mean == "constant":
            extra.append(0.0)
        return total, np.concatenate([grad_full[mask], extra])

    def log_marginal_likelihood(
        self, params: np.ndarray | None = None, *, eval_gradient: bool = False
    ) -> float | tuple[float, np.ndarray]:
        """Log marginal likelihood (R&W eq. 2.30) at packed free parameters ``params``.

        ``params`` defaults to the current hyperparameters (see :meth:`free_parameters`). With
        ``eval_gradient`` also returns the gradient wrt ``params`` (R&W eq. 5.9). Priors, if any,
        are not included (see :meth:`log_posterior`).
        """
        if not self._n:
            raise InvalidInputError("log_marginal_likelihood needs data: call set_data first")
        p = self._pack() if params is None else np.asarray(params, dtype=np.float64)
        return self._lml(*self._unpack(p), eval_gradient)

    def _lml(
        self, theta: np.ndarray, noise: float, const: float, eval_gradient: bool
    ) -> float | tuple[float, np.ndarray]:
        """:meth:`log_marginal_likelihood` at unpacked hyperparameters."""
        from scipy.linalg import cho_solve, lapack

        kernel = self.kernel.with_theta(theta)
        X = self._X[: self._n]
        r = self._y[: self._n] - const
        n = self._n
        if eval_gradient:
            K, state = kernel.gram_for_gradient(X)
            K = K.copy()  # the state may hold K itself
        else:
            K, state = kernel.k(X), None
        K.flat[:: n + 1] += noise
        # K is a private copy: factorise it in place, with the jitter ladder only on failure
        L, info = lapack.dpotrf(K, lower=1, clean=1, overwrite_a=1)
        if info != 0 or not np.isfinite(L[-1, -1]):
            K = kernel.k(X)
            K[np.diag_indices_from(K)] += noise
            L, _ = robust_cholesky(K)
        # scipy's cho_solve is this LAPACK call after checks a step's small solves pay for
        alpha, info = lapack.dpotrs(L, r, lower=1)
        if info != 0:  # pragma: no cover - a valid factor never fails
            alpha = cho_solve((L, True), r, check_finite=False)
        lml = (
            -0.5 * float(r @ alpha)
            - float(np.sum(np.log(np.diag(L))))
            - 0.5 * n * math.log(2 * math.pi)
        )
        if not eval_gradient:
            return lml
        # R&W eq. 5.9: d lml / d theta_k = 0.5 tr((alpha alpha^T - K^{-1}) dK_k). The trace terms
        # need K^{-1} itself (not a solve); LAPACK potri forms it from the factor in n^3/3 flops.
        # With dK_k symmetric, sum(W * dK_k) only needs K^{-1}'s lower triangle counted twice off
        # the diagonal: W = alpha alpha^T - (2 tril(K^{-1}) - diag(K^{-1})) gives the same traces.
        W = np.outer(alpha, alpha)
        W -= _doubled_lower_inverse(L, overwrite=True)  # L is not used after this
        # tr(W dK_k) = sum(W * dK_k) as dK_k is symmetric; kernels compute it without dK
        grad = [0.5 * kernel.gradient_traces(state, W)]
        if self.fit_noise:
            grad.append(np.array([0.5 * noise * float(np.trace(W))]))
        if self.mean == "constant":
            grad.append(np.array([float(np.sum(alpha))]))
        return lml, np.concatenate(grad) if grad else np.zeros(0)

    def free_parameters(self) -> np.ndarray:
        """The packed free parameters: free kernel log-hyperparameters, log noise, mean constant."""
        return self._pack()

    def log_posterior(self, params: np.ndarray) -> tuple[float, np.ndarray]:
        """Log marginal likelihood plus log priors, and its gradient."""
        if not self._n:
            raise InvalidInputError("log_marginal_likelihood needs data: call set_data first")
        theta, noise, const = self._unpack(np.asarray(params, dtype=np.float64))
        lml, grad = self._lml(theta, noise, const, True)  # type: ignore[misc]
        lp, gp = self._prior_terms(theta, noise)
        return lml + lp, (grad + gp if gp.size else grad)

    def fit(
        self,
        X: Any = None,
        y: Any = None,
        *,
        n_restarts: int = 3,
        seed: int | np.random.Generator | None = 0,
        maxiter: int = 200,
        bounds: Mapping[str, tuple[float, float]] | None = None,
        starts: Any = None,
        ftol: float | None = None,
        collapse_replicates: bool = False,
    ) -> ExactGP:
        """Maximise the log marginal likelihood (plus log priors) with L-BFGS-B.

        Starts from the current hyperparameters and ``n_restarts`` points drawn log-uniformly in
        the bounds (scikit-learn's strategy), or from ``starts`` (k, p) packed free parameters
        (see :meth:`free_parameters`) when given. ``bounds`` optionally narrows the box of a
        hyperparameter, keyed like ``priors`` (``"variance"``, ``"lengthscale"``,
        ``"lengthscale[1]"``, ``"noise"``), as ``(low, high)`` in natural units. With ``X, y``
        given, replaces the data first. ``ftol`` is L-BFGS-B's relative tolerance on the objective
        (scipy's default when ``None``). ``collapse_replicates``: evaluate the log marginal
        likelihood on the means of replicated inputs plus their scatter (the same function to
        rounding, cheaper when a policy re-queries points; :mod:`boloop.gp.marginal_likelihood`;
        stationary kernels with free length-scales only: otherwise the full likelihood is used).
        Returns ``self`` refactorised at the best optimum found.
        """
        from scipy.linalg import LinAlgError

        if X is not None or y is not None:
            if X is None or y is None:
                raise InvalidInputError("fit needs both X and y, or neither")
            self.set_data(X, y)
        if not self._n:
            raise InvalidInputError("fit needs data: pass X and y or call set_data first")
        rng = as_rng(seed)
        named = dict(bounds or {})
        # the packed free parameters' box (the argument ``bounds`` names a few of them)
        box = self._bounds(named)
        if self.mean == "constant":
            ym = float(np.mean(self._y[: self._n]))
            ys = float(np.std(self._y[: self._n])) or 1.0
            box[-1] = (ym - 10 * ys - 1.0, ym + 10 * ys + 1.0)
        p0 = self._pack()
        if self.mean == "constant" and self._n:
            p0[-1] = float(np.mean(self._y[: self._n]))
        lo = np.array([b[0] for b in box], dtype=np.float64)
        hi = np.array([b[1] for b in box], dtype=np.float64)
        extra = [] if starts is None else list(np.atleast_2d(np.asarray(starts, dtype=np.float64)))
        starts = [np.clip(p0, lo, hi)]
        if extra:
            starts.extend(np.clip(s, lo, hi) for s in extra)
        else:
            for _ in range(int(n_restarts)):
                starts.append(rng.uniform(lo, hi))

        # the same function without per-evaluation overhead where the kernel allows (stationary)
        from boloop.gp.marginal_likelihood import StationaryLogPosterior

        log_posterior = (
            StationaryLogPosterior.for_gp(self, collapse_replicates=collapse_replicates)
            or self.log_posterior
        )

        def objective(p: np.ndarray) -> tuple[float, np.ndarray]:
            try:
                val, grad = log_posterior(p)
            except (LinAlgError, FloatingPointError, ValueError):
                return 1e25, np.zeros_like(p)
            if not math.isfinite(val) or not np.all(np.isfinite(grad)):
                return 1e25, np.zeros_like(p)
            return -val, -grad

        tolerance: _LbfgsbTolerance = {} if ftol is None else {"ftol": float(ftol)}
        best_p, best_val = None, math.inf
        for start in starts:
            if not box:
                best_p, best_val = start, objective(start)[0]
                break
            # scipy's L-BFGS-B without its per-evaluation wrapping (the same iterates)
            from boloop.gp.optimize import minimize_lbfgsb

            x_end, f_end, _ = minimize_lbfgsb(
                objective,
                start,
                box,
                maxiter=maxiter,
                **tolerance,
            )
            if f_end < best_val:
                best_p, best_val = x_end, f_end
        assert best_p is not None
        theta, noise, const = self._unpack(best_p)
        previous = (self.kernel.theta.copy(), self.noise_variance, self.mean_constant)
        self.kernel.theta = theta
        self.noise_variance = noise
        self.mean_constant = const
        try:
            self._refactor()  # factorises before writing anything
        except Exception:
            self.kernel.theta, self.noise_variance, self.mean_constant = previous
            raise
        # NaN when no evaluation of the objective succeeded (every value was the 1e25 penalty)
        self.fit_log_posterior = -best_val if best_val < 1e25 else math.nan
        logger.debug("fitted %r noise=%.3g lml=%.4g", self.kernel, noise, -best_val)
        return self

    def copy(self) -> ExactGP:
        import copy

        return copy.deepcopy(self)


def pack_used_rows(
    buf: np.ndarray, n: int, *, square: bool = False
) -> tuple[tuple[int, ...], np.ndarray]:
    """``(shape, rows in use)`` of a buffer allocated with spare capacity, for pickling: the
    first ``n`` rows (and ``n`` columns when ``square``, a triangular factor)."""
    used = buf[:n, :n] if square else buf[:n]
    return buf.shape, np.ascontiguousarray(used)


def unpack_used_rows(packed: Any, *, square: bool = False) -> np.ndarray:
    """The buffer :func:`pack_used_rows` packed: zeros of the same shape (the same capacity and
    memory layout) holding the rows in use; an array pickled whole (before packing existed) is
    returned as it is."""
    if not isinstance(packed, tuple):
        return packed
    shape, used = packed
    n = used.shape[0]
    buf = np.zeros(shape)
    if square:
        buf[:n, :n] = used
    else:
        buf[:n] = used
    return buf
