"""The exact GP posterior at one point with its gradient in the point (stationary kernels).

What a gradient-based search of an acquisition over a box needs: ``mu(x)``, ``sigma(x)`` and their
derivatives in ``x``, from Rasmussen and Williams (2006), eqs. (2.25)-(2.26) differentiated in the
test point. With ``J = dk(x, X)/dx`` (n, d), ``L`` the Cholesky factor of ``K + sigma_n^2 I`` and
``alpha = L^{-T} L^{-1} (y - m)``:

    d mu / dx = J^T alpha,    d var / dx = -2 J^T L^{-T} L^{-1} k(X, x),    d sigma = d var / (2 sigma).
"""

from __future__ import annotations

import math

import numpy as np

from boloop.errors import InvalidInputError
from boloop.gp.exact import ExactGP
from boloop.gp.kernels import StationaryKernel

__all__ = ["posterior_with_gradient"]


def posterior_with_gradient(
    gp: ExactGP, x: np.ndarray, alpha: np.ndarray, L: np.ndarray | None = None
) -> tuple[float, float, np.ndarray, np.ndarray]:
    """``(mean, std, d mean/dx, d std/dx)`` of ``gp``'s posterior at one point x (d,).

    ``alpha`` is :meth:`ExactGP.posterior_weights` of the same posterior; ``L`` optionally the GP's
    Cholesky factor in a (Fortran-ordered) copy reused across points. The kernel must be
    stationary (its value a function of the scaled squared distance ``r^2``).
    """
    from scipy.linalg import solve_triangular

    kern = gp.kernel
    if not isinstance(kern, StationaryKernel):
        raise InvalidInputError(f"gradients need a stationary kernel, got {type(kern).__name__}")
    kxx = float(kern.variance)
    d = x.shape[0]
    if gp.n == 0:
        return gp.mean_constant, math.sqrt(kxx), np.zeros(d), np.zeros(d)
    ls2 = np.asarray(kern.lengthscale, dtype=np.float64) ** 2
    diff = x[None, :] - gp.X  # (n, d)
    r2 = np.sum(diff * diff / ls2, axis=1)
    kx = kern.k_of_r2(r2)
    r2c = np.maximum(r2, 1e-20)
    ratio = kern.dk_dr2_times_r2(r2c) / r2c  # -2 dk/dr2
    J = -(ratio[:, None] * diff) / ls2  # dk(x, x_i)/dx
    if L is None:
        L = gp.cholesky_factor
    v = solve_triangular(L, kx, lower=True, check_finite=False)
    mean = gp.mean_constant + float(v @ gp.whitened_residual)
    var = kxx - float(v @ v)
    w = solve_triangular(L, v, lower=True, trans="T", check_finite=False)
    dmean = J.T @ alpha
    std = math.sqrt(max(var, 0.0))
    dstd = (-(J.T @ w) / std) if std > 1e-300 else np.zeros(d)
    return mean, std, dmean, dstd
