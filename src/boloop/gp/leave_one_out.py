"""A GP regression chosen and calibrated by its leave-one-out predictions.

For a handful of values (tens to a few hundred) whose own scatter is the only yardstick: the
length-scale and the noise-to-signal ratio are chosen from a grid by the leave-one-out log
predictive density, and the signal variance is set so that the leave-one-out standardized
residuals have mean square one. Every leave-one-out quantity is in closed form from one
eigendecomposition per length-scale (Rasmussen and Williams 2006, Sec. 5.4.2, eq. 5.10-5.12):
with ``A = K + r I`` (unit signal variance, noise ratio ``r``) and ``alpha = A^-1 y``,

    y_i - mu_{-i} = alpha_i / [A^-1]_ii,        sigma^2_{-i} = 1 / [A^-1]_ii.

Scaling ``K`` and ``r I`` by a signal variance ``s`` scales every ``sigma^2_{-i}`` by ``s``; the
``s`` that gives the standardized residuals mean square one is ``mean(res^2 / sigma^2)``, and
then the leave-one-out log predictive density (eq. 5.10) is ``-1/2 sum log(s sigma^2_{-i})``
up to a constant shared by every candidate. Used by the study's typo question
(:mod:`boloop.study.plausibility`) to say how far a typed value is from what the earlier ones
predict at its setting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from boloop.errors import InvalidInputError
from boloop.gp.kernels import Matern

__all__ = ["LeaveOneOutGP", "fit_leave_one_out"]


@dataclass(frozen=True)
class LeaveOneOutGP:
    """The fit of :func:`fit_leave_one_out`: a Matern GP (``kernel``, its ``variance`` the
    calibrated signal variance) with noise variance ``noise_ratio * kernel.variance`` and a
    constant mean, on the standardized values (``y_mean``, ``y_sd``)."""

    kernel: Matern
    noise_ratio: float
    X: np.ndarray
    y_mean: float
    y_sd: float
    #: leave-one-out log predictive density of the chosen model (eq. 5.10, standardized values)
    loo_log_density: float
    _eig: np.ndarray
    _Q: np.ndarray
    _alpha: np.ndarray

    def predict(self, x: Sequence[float] | np.ndarray) -> tuple[float, float]:
        """Mean and standard deviation of a new observation at ``x`` (the noise included), in
        the values' units."""
        u = np.asarray(x, dtype=np.float64).reshape(1, -1)
        if u.shape[1] != self.X.shape[1]:
            raise InvalidInputError(f"x needs {self.X.shape[1]} coordinates, got {u.shape[1]}")
        s = self.kernel.variance
        k = self.kernel(self.X, u)[:, 0] / s  # unit signal variance, as alpha
        mean = float(k @ self._alpha)
        qk = self._Q.T @ k
        w = 1.0 / (self._eig + self.noise_ratio)
        var = s * max(1.0 + self.noise_ratio - float(qk @ (qk * w)), self.noise_ratio)
        return self.y_mean + self.y_sd * mean, self.y_sd * math.sqrt(var)


def fit_leave_one_out(
    X: np.ndarray,
    y: np.ndarray,
    lengthscales: Sequence[float],
    noise_ratios: Sequence[float],
    nu: float = 2.5,
) -> LeaveOneOutGP | None:
    """The Matern-``nu`` GP of best leave-one-out log predictive density over ``lengthscales``
    x ``noise_ratios`` (isotropic, on ``X`` as given), its signal variance calibrated on the
    leave-one-out residuals (module docstring). None when ``y`` has no spread."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if X.ndim != 2 or X.shape[0] != y.size or y.size < 2:
        raise InvalidInputError(f"X must be (n, d) with n = len(y) >= 2, got {X.shape}, {y.size}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise InvalidInputError("X and y must be finite")
    y_mean, y_sd = float(y.mean()), float(y.std())
    if y_sd <= 0.0:
        return None
    t = (y - y_mean) / y_sd
    best: tuple[float, float, float, np.ndarray, np.ndarray, np.ndarray, float] | None = None
    for ell in lengthscales:
        eig, Q = np.linalg.eigh(Matern(nu, lengthscale=ell)(X))
        eig = np.maximum(eig, 0.0)
        Qt, Q2 = Q.T @ t, Q * Q
        for ratio in noise_ratios:
            w = 1.0 / (eig + ratio)
            inv_diag = Q2 @ w  # diag of (K + ratio I)^-1
            alpha = Q @ (Qt * w)
            resid, var = alpha / inv_diag, 1.0 / inv_diag  # eq. 5.12, unit signal variance
            signal = float(np.mean(resid * resid / var))
            if not signal > 0.0:
                continue
            score = -0.5 * float(np.sum(np.log(2.0 * np.pi * signal * var))) - 0.5 * t.size
            if best is None or score > best[0]:
                best = (score, float(ell), float(ratio), eig, Q, alpha, signal)
    if best is None:
        return None
    score, ell, ratio, eig, Q, alpha, signal = best
    return LeaveOneOutGP(
        kernel=Matern(nu, lengthscale=ell, variance=signal),
        noise_ratio=ratio,
        X=X,
        y_mean=y_mean,
        y_sd=y_sd,
        loo_log_density=score,
        _eig=eig,
        _Q=Q,
        _alpha=alpha,
    )
