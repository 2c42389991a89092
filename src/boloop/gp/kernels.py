"""Covariance functions with gradients in log-hyperparameter space.

Every kernel exposes ``k(X, Y)`` (also ``kernel(X, Y)``), ``diag(X)`` and ``gradient(X)``; its
hyperparameters live in a vector ``theta`` of natural logarithms (``log variance``, then one or
``d`` log length-scales), which is what marginal-likelihood fitting optimises.

Shapes: ``X`` is (n, d), ``Y`` is (m, d); ``k(X, Y)`` is (n, m); ``diag(X)`` is (n,);
``gradient(X)`` returns ``(K, dK)`` with ``K`` (n, n) and ``dK`` (p_free, n, n), the derivatives
with respect to the *free* entries of ``theta`` in order.

Parametrisations (Rasmussen and Williams 2006, eq. 4.9 and 4.14), with
``r^2 = sum_j (x_j - y_j)^2 / l_j^2``:

* squared exponential ``variance * exp(-r^2 / 2)``;
* Matern ``nu = 1/2``: ``variance * exp(-r)``; ``nu = 3/2``: ``variance * (1 + sqrt3 r) exp(-sqrt3 r)``;
  ``nu = 5/2``: ``variance * (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r)``;
* linear ``variance * x . y``;
* a stationary kernel plus a linear trend of unknown slope along one axis, optionally with an
  unknown constant (intercept),
  ``k_0(x, y) + trend_variance (x_a - c)(y_a - c) [+ offset_variance]``
  (:class:`StationaryPlusTrend`; R&W Sec. 2.7).

A paper's own form is expressed exactly through the constructors' alternatives, e.g. the
level-set paper's ``s2 * exp(-|x - x'|^2 / L)`` is ``SquaredExponential.from_scale_form(s2, L)``
(length-scale ``sqrt(L / 2)``).
"""

from __future__ import annotations

import math
import sys
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import cast

import numpy as np

from boloop._validation import as_points
from boloop.errors import InvalidInputError

__all__ = [
    "Kernel",
    "StationaryKernel",
    "SquaredExponential",
    "Matern",
    "Linear",
    "StationaryPlusTrend",
]

# default box on log-hyperparameters during fitting (wide, as in scikit-learn)
_LOG_BOUNDS = (math.log(1e-5), math.log(1e5))



#: below this many (n m d) terms the squared distances are summed with numpy (no scipy.spatial
#: import, ~0.05-0.4 s of a command-line study call); above, scipy's cdist (one pass in C)
_NUMPY_SQDIST_TERMS = 200_000
#: ... and, while scipy.spatial is not imported yet, up to this many: numpy takes ~2 ms for the
#: 776 x 264 x 2 terms of a 300-answer expert study's candidates (cdist 0.2 ms), the import of
#: scipy.spatial ~0.05 s, which a command-line call pays for one such product (issue 15)
_NUMPY_SQDIST_TERMS_COLD = 2_000_000


def _sqeuclidean(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """``sum_k (X_ik - Y_jk)^2``, (n, m): bit for bit what ``cdist(X, Y, "sqeuclidean")`` gives
    (the same sequential sum over k of rounded squares), without importing scipy.spatial for
    the small matrices of a study step."""
    n, d = X.shape
    m = Y.shape[0]
    terms = n * m * d
    if d == 0 or (
        terms > _NUMPY_SQDIST_TERMS
        and (terms > _NUMPY_SQDIST_TERMS_COLD or "scipy.spatial.distance" in sys.modules)
    ):
        from scipy.spatial.distance import cdist

        return cdist(X, Y, "sqeuclidean")
    Xt, Yt = np.ascontiguousarray(X.T), np.ascontiguousarray(Y.T)
    D = np.subtract.outer(Xt[0], Yt[0])
    D *= D
    for k in range(1, d):
        t = np.subtract.outer(Xt[k], Yt[k])
        t *= t
        D += t
    return D

class Kernel(ABC):
    """Base class: hyperparameters as natural logs in ``theta``; some may be ``fixed``.

    Parameters
    ----------
    fixed:
        Names of hyperparameters (``"variance"``, ``"lengthscale"``) held fixed when fitting.
    """

    def __init__(self, fixed: Iterable[str] = ()) -> None:
        self.fixed = frozenset(fixed)
        unknown = self.fixed - set(self.hyperparameter_groups())
        if unknown:
            raise InvalidInputError(
                f"fixed names unknown hyperparameters {sorted(unknown)}; "
                f"valid: {list(self.hyperparameter_groups())}"
            )

    # --- hyperparameter vector -------------------------------------------------------------
    @abstractmethod
    def hyperparameter_groups(self) -> dict[str, int]:
        """Ordered mapping name -> number of entries of ``theta`` it occupies."""

    @property
    @abstractmethod
    def theta(self) -> np.ndarray:
        """All log-hyperparameters, shape (p,)."""

    @theta.setter
    @abstractmethod
    def theta(self, value: np.ndarray) -> None: ...

    @property
    def free_mask(self) -> np.ndarray:
        """Boolean mask over ``theta``: True where the entry is fitted."""
        mask = []
        for name, size in self.hyperparameter_groups().items():
            mask.extend([name not in self.fixed] * size)
        return np.array(mask, dtype=bool)

    @property
    def theta_names(self) -> list[str]:
        names = []
        for name, size in self.hyperparameter_groups().items():
            names.extend([name] if size == 1 else [f"{name}[{i}]" for i in range(size)])
        return names

    @property
    def bounds(self) -> np.ndarray:
        """Bounds on ``theta`` used by fitting, shape (p, 2)."""
        return np.tile(np.array(_LOG_BOUNDS), (self.theta.size, 1))

    def clone(self) -> Kernel:
        import copy

        return copy.deepcopy(self)

    def with_theta(self, theta: np.ndarray) -> Kernel:
        other = self.clone()
        other.theta = np.asarray(theta, dtype=np.float64)
        return other

    # --- evaluation ------------------------------------------------------------------------
    def __call__(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        return self.k(X, Y)

    @abstractmethod
    def k(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        """Covariance matrix ``k(X, Y)``, shape (n, m); ``Y = X`` when omitted."""

    @abstractmethod
    def diag(self, X: np.ndarray) -> np.ndarray:
        """``k(x, x)`` for every row, shape (n,)."""

    @abstractmethod
    def gradient(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(K, dK)``: ``K = k(X, X)`` and its derivatives wrt the free log-hyperparameters."""

    # --- fast likelihood gradients (used by ExactGP; results equal ``gradient``'s) -----------
    def gram_for_gradient(self, X: np.ndarray) -> tuple[np.ndarray, object]:
        """``(K, state)``: ``K = k(X, X)`` (n, n) plus whatever :meth:`gradient_traces` needs."""
        K, dK = self.gradient(X)
        return K, dK

    def gradient_traces(self, state: object, W: np.ndarray) -> np.ndarray:
        """``sum(W * dK_k)`` for every free log-hyperparameter ``k``, shape (p_free,).

        ``W`` is (n, n) (not necessarily symmetric); ``dK_k`` are the symmetric derivatives of
        :meth:`gradient`. The default forms them; stationary kernels avoid that.
        """
        dK = np.asarray(state)
        if dK.shape[0] == 0:
            return np.zeros(0)
        return dK.reshape(dK.shape[0], -1) @ W.reshape(-1)

    def __repr__(self) -> str:
        vals = ", ".join(
            f"{n}={np.round(np.exp(v), 6)}" for n, v in zip(self.theta_names, self.theta)
        )
        return f"{type(self).__name__}({vals})"


class StationaryKernel(Kernel):
    """A kernel of the scaled distance ``r`` with output scale ``variance``.

    Parameters
    ----------
    lengthscale:
        A positive scalar (isotropic) or one positive value per input dimension (ARD).
    variance:
        Output scale ``k(x, x)``.
    """

    def __init__(
        self,
        lengthscale: float | Sequence[float] | np.ndarray = 1.0,
        variance: float = 1.0,
        fixed: Iterable[str] = (),
    ) -> None:
        ls = np.atleast_1d(np.asarray(lengthscale, dtype=np.float64))
        if ls.ndim != 1 or ls.size == 0 or not np.all(np.isfinite(ls)) or np.any(ls <= 0):
            raise InvalidInputError(f"lengthscale must be positive and finite, got {lengthscale!r}")
        variance = float(variance)
        if not math.isfinite(variance) or variance <= 0:
            raise InvalidInputError(f"variance must be positive and finite, got {variance!r}")
        self.lengthscale = ls if ls.size > 1 else float(ls[0])
        self.variance = variance
        super().__init__(fixed)

    @property
    def ard(self) -> bool:
        return np.ndim(self.lengthscale) > 0

    def with_theta(self, theta: np.ndarray) -> Kernel:
        # a shallow copy suffices: the theta setter replaces (never mutates) both hyperparameters
        import copy

        other = copy.copy(self)
        other.theta = np.asarray(theta, dtype=np.float64)
        return other

    def hyperparameter_groups(self) -> dict[str, int]:
        return {"variance": 1, "lengthscale": int(np.size(self.lengthscale))}

    @property
    def theta(self) -> np.ndarray:
        return np.log(np.concatenate([[self.variance], np.atleast_1d(self.lengthscale)]))

    @theta.setter
    def theta(self, value: np.ndarray) -> None:
        value = np.asarray(value, dtype=np.float64).reshape(-1)
        if value.size != 1 + np.size(self.lengthscale):
            raise InvalidInputError(f"theta must have {1 + np.size(self.lengthscale)} entries")
        self.variance = float(np.exp(value[0]))
        ls = np.exp(value[1:])
        self.lengthscale = ls if ls.size > 1 else float(ls[0])

    def _check(self, X: np.ndarray, name: str) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X.reshape(-1, 1) if not self.ard else X.reshape(1, -1)
        if self.ard and X.shape[1] != np.size(self.lengthscale):
            raise InvalidInputError(
                f"{name} has {X.shape[1]} columns but the kernel has "
                f"{np.size(self.lengthscale)} length-scales"
            )
        return X

    def scaled_sqdist(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        """``r^2`` between rows of X and Y, shape (n, m), computed exactly (no expansion)."""
        X = self._check(X, "X") / self.lengthscale
        if Y is None:
            return _sqeuclidean(X, X)
        Y = self._check(Y, "Y") / self.lengthscale
        if Y.shape[1] != X.shape[1]:
            raise InvalidInputError(
                f"Y has {Y.shape[1]} columns but X has {X.shape[1]}; they must match"
            )
        return _sqeuclidean(X, Y)

    @abstractmethod
    def k_of_r2(self, r2: np.ndarray) -> np.ndarray:
        """The kernel as a function of ``r^2`` (including the variance)."""

    @abstractmethod
    def dk_dr2_times_r2(self, r2: np.ndarray) -> np.ndarray:
        """``-2 r^2 dk/d(r^2)`` as a function of ``r^2``; sum of ``d k / d log l_j`` terms."""

    def _k_of_r2_inplace(self, r2: np.ndarray) -> np.ndarray:
        """``k_of_r2(r2)`` that may overwrite (and return) its argument; subclasses speed it up."""
        return self.k_of_r2(r2)

    def _k_and_slope(self, r2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(k(r2), -2 dk/d(r^2))``; the slope is 0 where ``r2 = 0`` for kernels not
        differentiable there (it only ever multiplies squared coordinate differences, 0 there)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = np.where(r2 > 0, self.dk_dr2_times_r2(r2) / r2, 0.0)
        return self.k_of_r2(r2), slope

    def k(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        return self._k_of_r2_inplace(self.scaled_sqdist(X, Y))

    def diag(self, X: np.ndarray) -> np.ndarray:
        X = self._check(X, "X")
        return np.full(X.shape[0], self.variance)

    def gradient(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        X = self._check(X, "X")
        r2 = self.scaled_sqdist(X)
        n = X.shape[0]
        fit_var = "variance" not in self.fixed
        fit_ls = "lengthscale" not in self.fixed
        if not fit_ls:
            K = self._k_of_r2_inplace(r2)
            return K, (K[None].copy() if fit_var else np.zeros((0, n, n)))
        K, slope = self._k_and_slope(r2)
        p = int(fit_var) + (X.shape[1] if self.ard else 1)
        dK = np.empty((p, n, n))
        i = 0
        if fit_var:
            dK[0] = K
            i = 1
        # d k / d log l_j = -2 (dk/dr2) * (x_j - y_j)^2 / l_j^2   (slope = -2 dk/dr2)
        if self.ard:
            Xs = X / self.lengthscale
            for j in range(X.shape[1]):
                out = dK[i + j]
                np.subtract.outer(Xs[:, j], Xs[:, j], out=out)
                np.square(out, out=out)
                out *= slope
        else:
            np.multiply(slope, r2, out=dK[i])
        return K, dK

    def gram_for_gradient(self, X: np.ndarray) -> tuple[np.ndarray, object]:
        # the distances are the same sequential sums of rounded squares as pdist's (so the same
        # values bit for bit, without pdist's and squareform's per-call overhead, most of a
        # marginal-likelihood evaluation for the few points of a step); above
        # _NUMPY_SQDIST_TERMS the kernel and its slope are evaluated on the n (n - 1) / 2
        # distinct pairs only (condensed form), then expanded; k(x, x) = variance for every
        # stationary kernel here
        X = self._check(X, "X")
        Xs = X / self.lengthscale
        n = Xs.shape[0]
        if n * n * Xs.shape[1] <= _NUMPY_SQDIST_TERMS:
            r2 = _sqeuclidean(Xs, Xs)  # symmetric with a zero diagonal, exactly
            if "lengthscale" in self.fixed:
                K = self._k_of_r2_inplace(r2)
                K.flat[:: n + 1] = self.variance
                return K, (Xs, None, None, K)
            K, slope = self._k_and_slope(r2)
            if slope is K:  # the squared exponential's slope is k itself
                slope = K.copy()
            K.flat[:: n + 1] = self.variance
            slope.flat[:: n + 1] = 0.0  # as squareform's diagonal: only multiplies zero distances
            return K, (Xs, None if self.ard else r2, slope, K)
        from scipy.spatial.distance import pdist, squareform  # lazily, as in scaled_sqdist

        r2c = pdist(Xs, "sqeuclidean")
        if "lengthscale" in self.fixed:
            K = squareform(self._k_of_r2_inplace(r2c))
            np.fill_diagonal(K, self.variance)
            return K, (Xs, None, None, K)
        Kc, slope_c = self._k_and_slope(r2c)
        K = squareform(Kc)
        np.fill_diagonal(K, self.variance)
        slope = squareform(slope_c)  # its diagonal only ever multiplies zero distances
        r2_square = None if self.ard else squareform(r2c)
        return K, (Xs, r2_square, slope, K)

    def gradient_traces(self, state: object, W: np.ndarray) -> np.ndarray:
        """Traces without forming ``dK``: with ``S = W * slope`` (slope ``= -2 dk/dr2``),
        ``sum(W * dK_{log l_j}) = sum_ik S_ik (x_ij - x_kj)^2 / l_j^2``
        ``= (rowsum(S) + colsum(S)) . z_j^2 - 2 z_j^T S z_j`` with ``z_j`` the centred scaled
        coordinate: O(n^2 d) work and no (d, n, n) array."""
        Xs: np.ndarray
        r2: np.ndarray | None
        slope: np.ndarray | None
        K: np.ndarray
        Xs, r2, slope, K = state  # type: ignore[misc]
        out = [float(np.vdot(W, K))] if "variance" not in self.fixed else []
        if slope is None:  # length-scales fixed: only the variance, whose derivative is K
            return np.asarray(out, dtype=np.float64)
        S = W * slope
        if self.ard:
            Z = Xs - Xs.mean(axis=0)
            sums = S.sum(axis=1) + S.sum(axis=0)
            out.extend(sums @ (Z * Z) - 2.0 * np.einsum("ij,ij->j", Z, S @ Z))
        else:
            out.append(float(np.vdot(S, r2)))
        return np.asarray(out, dtype=np.float64)


class SquaredExponential(StationaryKernel):
    """Squared exponential (RBF) kernel ``variance * exp(-r^2 / 2)`` (Rasmussen & Williams eq. 4.9)."""

    @classmethod
    def from_scale_form(cls, s2: float, L: float, fixed: Iterable[str] = ()) -> SquaredExponential:
        """The form ``s2 * exp(-|x - x'|^2 / L)`` of the level-set paper (Inatsu et al., Sec. 5)."""
        if not (float(L) > 0):
            raise InvalidInputError(f"L must be positive, got {L!r}")
        return cls(lengthscale=math.sqrt(float(L) / 2.0), variance=s2, fixed=fixed)

    def k_of_r2(self, r2: np.ndarray) -> np.ndarray:
        return self.variance * np.exp(-0.5 * r2)

    def dk_dr2_times_r2(self, r2: np.ndarray) -> np.ndarray:
        return self.variance * np.exp(-0.5 * r2) * r2

    def _k_of_r2_inplace(self, r2: np.ndarray) -> np.ndarray:
        r2 *= -0.5
        np.exp(r2, out=r2)
        r2 *= self.variance
        return r2

    def _k_and_slope(self, r2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        K = self.k_of_r2(r2)
        return K, K  # -2 dk/dr2 = variance * exp(-r2 / 2) = k


class Matern(StationaryKernel):
    """Matern kernel with ``nu`` in {1/2, 3/2, 5/2} (Rasmussen & Williams eq. 4.14, 4.17)."""

    def __init__(
        self,
        nu: float = 2.5,
        lengthscale: float | Sequence[float] | np.ndarray = 1.0,
        variance: float = 1.0,
        fixed: Iterable[str] = (),
    ) -> None:
        if nu not in (0.5, 1.5, 2.5):
            raise InvalidInputError(f"nu must be one of 0.5, 1.5, 2.5, got {nu!r}")
        self.nu = float(nu)
        super().__init__(lengthscale=lengthscale, variance=variance, fixed=fixed)

    def k_of_r2(self, r2: np.ndarray) -> np.ndarray:
        r = np.sqrt(r2)
        if self.nu == 0.5:
            return self.variance * np.exp(-r)
        if self.nu == 1.5:
            a = math.sqrt(3.0) * r
            return self.variance * (1.0 + a) * np.exp(-a)
        a = math.sqrt(5.0) * r
        return self.variance * (1.0 + a + a * a / 3.0) * np.exp(-a)

    def dk_dr2_times_r2(self, r2: np.ndarray) -> np.ndarray:
        # -2 r^2 dk/dr2 = -r dk/dr
        r = np.sqrt(r2)
        if self.nu == 0.5:
            return self.variance * r * np.exp(-r)
        if self.nu == 1.5:
            a = math.sqrt(3.0) * r
            return self.variance * a * a * np.exp(-a)
        a = math.sqrt(5.0) * r
        return self.variance * a * a * (1.0 + a) * np.exp(-a) / 3.0

    def _k_of_r2_inplace(self, r2: np.ndarray) -> np.ndarray:
        a = np.sqrt(r2, out=r2)  # r, then a = sqrt(2 nu) r
        if self.nu == 0.5:
            np.negative(a, out=a)
            np.exp(a, out=a)
            a *= self.variance
            return a
        a *= math.sqrt(3.0) if self.nu == 1.5 else math.sqrt(5.0)
        e = np.negative(a)
        np.exp(e, out=e)
        e *= self.variance
        if self.nu == 1.5:  # (1 + a) e
            a += 1.0
            a *= e
            return a
        # (1 + a + a^2 / 3) e = (1 + a (1 + a / 3)) e
        poly = a * (1.0 / 3.0)
        poly += 1.0
        poly *= a
        poly += 1.0
        poly *= e
        return poly

    def _k_and_slope(self, r2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # slope = -2 dk/d(r^2) = -(dk/dr) / r
        r = np.sqrt(r2)
        if self.nu == 0.5:  # k = v e^{-r}; slope = v e^{-r} / r (0 at r = 0, see base class)
            K = np.exp(-r)
            K *= self.variance
            with np.errstate(divide="ignore", invalid="ignore"):
                slope = np.where(r > 0, K / r, 0.0)
            return K, slope
        c = math.sqrt(3.0) if self.nu == 1.5 else math.sqrt(5.0)
        a = r
        a *= c
        e = np.negative(a)
        np.exp(e, out=e)
        e *= self.variance
        if self.nu == 1.5:  # k = v (1 + a) e^{-a}; slope = 3 v e^{-a}
            K = (1.0 + a) * e
            e *= 3.0
            return K, e
        # k = v (1 + a + a^2/3) e^{-a}; slope = (5/3) v (1 + a) e^{-a}
        K = a * (1.0 / 3.0)
        K += 1.0
        K *= a
        K += 1.0
        K *= e
        a += 1.0
        a *= e
        a *= 5.0 / 3.0
        return K, a

    def __repr__(self) -> str:
        return super().__repr__().replace("Matern(", f"Matern(nu={self.nu}, ")


class Linear(Kernel):
    """Linear (dot-product) kernel ``variance * x . y``."""

    def __init__(self, variance: float = 1.0, fixed: Iterable[str] = ()) -> None:
        variance = float(variance)
        if not math.isfinite(variance) or variance <= 0:
            raise InvalidInputError(f"variance must be positive and finite, got {variance!r}")
        self.variance = variance
        super().__init__(fixed)

    def hyperparameter_groups(self) -> dict[str, int]:
        return {"variance": 1}

    @property
    def theta(self) -> np.ndarray:
        return np.log(np.array([self.variance]))

    @theta.setter
    def theta(self, value: np.ndarray) -> None:
        self.variance = float(np.exp(np.asarray(value, dtype=np.float64).reshape(-1)[0]))

    def k(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        X = as_points(X, "X", allow_empty=True)
        Y = X if Y is None else as_points(Y, "Y", dim=X.shape[1], allow_empty=True)
        return self.variance * (X @ Y.T)

    def diag(self, X: np.ndarray) -> np.ndarray:
        X = as_points(X, "X", allow_empty=True)
        return self.variance * np.einsum("ij,ij->i", X, X)

    def gradient(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        K = self.k(X)
        dK = K[None] if "variance" not in self.fixed else np.zeros((0,) + K.shape)
        return K, dK


class StationaryPlusTrend(Kernel):
    """A stationary kernel plus a linear trend of unknown slope along one axis, optionally with
    an unknown constant:
    ``k(x, y) = k_0(x, y) + trend_variance * (x_a - c) (y_a - c) [+ offset_variance]``.

    It is the covariance of ``z(x) + b (x_a - c) [+ c_0]`` with ``z ~ GP(0, k_0)``, an
    independent slope ``b ~ N(0, trend_variance)`` and, with ``offset_variance``, an independent
    intercept ``c_0 ~ N(0, offset_variance)``: Bayesian linear regression on the basis functions
    ``x_a - c`` (and ``1``) added to a GP (Rasmussen & Williams 2006, Sec. 2.7, eq. 2.39-2.40
    with a zero prior mean of the coefficients, the prior covariance ``B`` diagonal). Away from
    the data along axis ``a`` the prior no longer reverts to the mean: the slope's posterior
    carries the trend the data show, and its uncertainty widens the bounds in proportion to the
    distance ``|x_a - c|``. At ``x_a = c`` the trend contributes nothing. The intercept's
    posterior uncertainty is the same everywhere (it does not grow with the distance); as
    ``offset_variance`` grows the posterior tends to R&W eq. 2.42's vague-prior limit (the
    constant estimated by generalised least squares, its uncertainty added), and every posterior
    variance is non-decreasing in it.

    ``theta`` is ``[log variance, log lengthscale..., log trend_variance(, log
    offset_variance)]``: the base kernel's entries first (so the output scale is ``theta[0]``
    and the length-scales follow, as for a stationary kernel), then the trend's, then the
    intercept's where there is one. ``variance`` and ``lengthscale`` are the base kernel's.

    Parameters
    ----------
    base:
        The stationary part ``k_0`` (copied: the caller's kernel is not changed).
    trend_variance:
        Prior variance of the slope ``b`` (per unit of axis ``a`` squared).
    axis:
        The input column ``a`` of the trend.
    origin:
        ``c``: where the trend is zero (e.g. the lowest level of a monotone axis).
    offset_variance:
        Prior variance of the intercept ``c_0``; ``None`` (default): no intercept (and no entry
        in ``theta``).
    fixed:
        Names held fixed when fitting: ``"variance"``, ``"lengthscale"``, ``"trend_variance"``,
        ``"offset_variance"`` (the first two are passed to the base kernel).
    """

    def __init__(
        self,
        base: StationaryKernel,
        trend_variance: float = 1.0,
        axis: int = 0,
        origin: float = 0.0,
        fixed: Iterable[str] = (),
        offset_variance: float | None = None,
    ) -> None:
        if not isinstance(base, StationaryKernel):
            raise InvalidInputError(
                f"base must be a stationary kernel, got {type(base).__name__}"
            )
        trend_variance = float(trend_variance)
        if not math.isfinite(trend_variance) or trend_variance <= 0:
            raise InvalidInputError(
                f"trend_variance must be positive and finite, got {trend_variance!r}"
            )
        if offset_variance is not None:
            offset_variance = float(offset_variance)
            if not math.isfinite(offset_variance) or offset_variance <= 0:
                raise InvalidInputError(
                    f"offset_variance must be positive and finite (or None), got "
                    f"{offset_variance!r}"
                )
        if isinstance(axis, bool) or int(axis) != axis or axis < 0:
            raise InvalidInputError(f"axis must be a non-negative integer, got {axis!r}")
        origin = float(origin)
        if not math.isfinite(origin):
            raise InvalidInputError(f"origin must be finite, got {origin!r}")
        fixed = frozenset(fixed)
        base = base.clone()  # type: ignore[assignment]
        self.base = base
        self.trend_variance = trend_variance
        self.offset_variance = offset_variance
        self.axis = int(axis)
        self.origin = origin
        super().__init__(fixed | base.fixed)
        base.fixed = base.fixed | (self.fixed & {"variance", "lengthscale"})

    # the base kernel's hyperparameters, as a stationary kernel exposes them
    @property
    def variance(self) -> float:
        return self.base.variance

    @property
    def lengthscale(self) -> float | np.ndarray:
        return self.base.lengthscale

    @property
    def ard(self) -> bool:
        return self.base.ard

    @property
    def has_offset(self) -> bool:
        """Whether the kernel has the intercept term (``offset_variance`` given)."""
        return self.offset_variance is not None

    def hyperparameter_groups(self) -> dict[str, int]:
        groups = {**self.base.hyperparameter_groups(), "trend_variance": 1}
        if self.offset_variance is not None:
            groups["offset_variance"] = 1
        return groups

    @property
    def theta(self) -> np.ndarray:
        tail = [math.log(self.trend_variance)]
        if self.offset_variance is not None:
            tail.append(math.log(self.offset_variance))
        return np.concatenate([self.base.theta, tail])

    @theta.setter
    def theta(self, value: np.ndarray) -> None:
        value = np.asarray(value, dtype=np.float64).reshape(-1)
        p = self.base.theta.size
        q = 1 + (self.offset_variance is not None)
        if value.size != p + q:
            raise InvalidInputError(f"theta must have {p + q} entries")
        self.base.theta = value[:p]
        self.trend_variance = float(np.exp(value[p]))
        if self.offset_variance is not None:
            self.offset_variance = float(np.exp(value[p + 1]))

    def with_theta(self, theta: np.ndarray) -> Kernel:
        import copy

        theta = np.asarray(theta, dtype=np.float64).reshape(-1)
        p = self.base.theta.size
        other = copy.copy(self)
        other.base = self.base.with_theta(theta[:p])  # type: ignore[assignment]
        other.trend_variance = float(np.exp(theta[p]))
        if self.offset_variance is not None:
            other.offset_variance = float(np.exp(theta[p + 1]))
        return other

    def _u(self, X: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
        X = self.base._check(X, name)
        if X.shape[1] <= self.axis:
            raise InvalidInputError(
                f"{name} has {X.shape[1]} columns; the trend is along column {self.axis}"
            )
        return X, X[:, self.axis] - self.origin

    def k(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        X, u = self._u(X, "X")
        if Y is None:
            K = self.base.k(X)
            v = u
        else:
            Y, v = self._u(Y, "Y")
            K = self.base.k(X, Y)
        K += self.trend_variance * np.multiply.outer(u, v)
        if self.offset_variance is not None:
            K += self.offset_variance
        return K

    def diag(self, X: np.ndarray) -> np.ndarray:
        X, u = self._u(X, "X")
        d = self.base.diag(X) + self.trend_variance * u * u
        if self.offset_variance is not None:
            d += self.offset_variance
        return d

    def gradient(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        X, u = self._u(X, "X")
        K0, dK0 = self.base.gradient(X)
        T = self.trend_variance * np.multiply.outer(u, u)
        K = K0 + T
        parts = [dK0]
        if "trend_variance" not in self.fixed:
            parts.append(T[None])  # d T / d log trend_variance = T
        if self.offset_variance is not None:
            C = np.full_like(K, self.offset_variance)
            K += C
            if "offset_variance" not in self.fixed:
                parts.append(C[None])  # d C / d log offset_variance = C
        return K, (np.concatenate(parts) if len(parts) > 1 else dK0)

    def gram_for_gradient(self, X: np.ndarray) -> tuple[np.ndarray, object]:
        X, u = self._u(X, "X")
        K0, state = self.base.gram_for_gradient(X)
        T = self.trend_variance * np.multiply.outer(u, u)
        K = K0 + T  # a new array: the base's state may hold K0 itself
        if self.offset_variance is not None:
            K += self.offset_variance
        return K, (state, T)

    def gradient_traces(self, state: object, W: np.ndarray) -> np.ndarray:
        # the state gram_for_gradient returned: the base kernel's own state and the trend term
        base_state, T = cast("tuple[object, np.ndarray]", state)
        out = [self.base.gradient_traces(base_state, W)]
        if "trend_variance" not in self.fixed:
            out.append(np.array([float(np.vdot(W, T))]))
        if self.offset_variance is not None and "offset_variance" not in self.fixed:
            out.append(np.array([self.offset_variance * float(np.sum(W))]))
        return np.concatenate(out) if len(out) > 1 else out[0]

    def __repr__(self) -> str:
        offset = (
            ""
            if self.offset_variance is None
            else f" + offset_variance={np.round(self.offset_variance, 6)}"
        )
        return (
            f"{type(self).__name__}({self.base!r} + trend_variance="
            f"{np.round(self.trend_variance, 6)} along axis {self.axis} from {self.origin:g}"
            f"{offset})"
        )
