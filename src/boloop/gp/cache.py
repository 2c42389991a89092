"""Posterior mean and variance over a fixed candidate set, kept current in O(N n) per observation.

With ``L`` the Cholesky factor of ``K + noise I`` and ``V = L^{-1} K(X, C)`` for candidates ``C``
(N, d), the posterior at ``C`` is ``mean = m + V^T a`` and ``var = k(C, C) - colsum(V**2)``. A
Cholesky append (:meth:`ExactGP.condition`) adds one row ``l, d`` to ``L`` and leaves the others
unchanged, so ``V`` gains one row

    v_new = (k(x_new, C) - l^T V) / d

and ``mean += a_new * v_new``, ``var -= v_new**2``: O(N n) work, and identical (up to rounding) to a
recompute. When the GP is refactorised (new hyperparameters, data replaced) the cache recomputes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from boloop._validation import as_points
from boloop.errors import InvalidInputError
from boloop.gp.exact import ExactGP, pack_used_rows, unpack_used_rows

__all__ = ["CandidatePosterior", "FixedPointsMean"]


class CandidatePosterior:
    """Cached posterior of an :class:`ExactGP` over candidates ``C`` of shape (N, d).

    The cache synchronises lazily: reading :attr:`mean`, :attr:`variance` or :attr:`std` first
    brings it up to date with the GP (incrementally when only appends happened since).

    Memory: ``V`` holds ``n x N`` float64 values (for N = 10^5 and n = 300, 240 MB).
    """

    def __init__(self, gp: ExactGP, candidates: Any, chunk_size: int = 8192) -> None:
        if int(chunk_size) < 1:
            raise InvalidInputError(f"chunk_size must be >= 1, got {chunk_size!r}")
        self.gp = gp
        self.candidates = as_points(candidates, "candidates", dim=gp.dim)
        self.chunk_size = int(chunk_size)
        self._prior_var = gp.kernel.diag(self.candidates)
        self._V = np.zeros((0, self.candidates.shape[0]))
        self._n = 0
        self._version = -1
        self._mean = np.zeros(self.candidates.shape[0])
        self._var = self._prior_var.copy()

    def __getstate__(self) -> dict[str, Any]:
        """The state without the unused rows of ``V`` (allocated with spare capacity by
        ``_grow``): a study snapshot stores the n rows in use."""
        state = self.__dict__.copy()
        state["_V"] = pack_used_rows(self._V, self._n)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """``V`` with its capacity (the same shape and layout) and the rows in use."""
        state = dict(state)
        state["_V"] = unpack_used_rows(state["_V"])
        self.__dict__.update(state)

    @property
    def N(self) -> int:
        return int(self.candidates.shape[0])

    def _grow(self, n_rows: int) -> None:
        cap = self._V.shape[0]
        if n_rows <= cap:
            return
        new = np.empty((max(16, 2 * cap, n_rows), self.N))
        new[: self._n] = self._V[: self._n]
        self._V = new

    def _recompute(self) -> None:
        gp = self.gp
        n = gp.n
        self._prior_var = gp.kernel.diag(self.candidates)
        self._grow(n)
        if n:
            L = gp._factor_fortran()
            for start in range(0, self.N, self.chunk_size):
                sl = slice(start, min(self.N, start + self.chunk_size))
                self._V[:n, sl] = gp._cross_solve(self.candidates[sl], L)
            V = self._V[:n]
            self._mean = gp.mean_constant + V.T @ gp.whitened_residual
            self._var = self._prior_var - np.einsum("ij,ij->j", V, V)
        else:
            self._mean = np.full(self.N, gp.mean_constant)
            self._var = self._prior_var.copy()
        self._n = n
        self._version = gp.version

    def update(self) -> None:
        """Bring the cache up to date with the GP (incremental if only appends happened)."""
        gp = self.gp
        if gp.version != self._version or gp.n < self._n:
            self._recompute()
            return
        if gp.n == self._n:
            return
        L = gp.cholesky_factor
        a = gp.whitened_residual
        X = gp.X
        self._grow(gp.n)
        for i in range(self._n, gp.n):
            kx = gp.kernel.k(X[i : i + 1], self.candidates)[0]
            if i:
                kx -= L[i, :i] @ self._V[:i]
            v = kx / L[i, i]
            self._V[i] = v
            self._mean += a[i] * v
            self._var -= v * v
        self._n = gp.n

    @property
    def mean(self) -> np.ndarray:
        """Posterior mean at the candidates, shape (N,)."""
        self.update()
        return self._mean

    @property
    def variance(self) -> np.ndarray:
        """Posterior variance at the candidates (clipped at 0), shape (N,)."""
        self.update()
        return np.maximum(self._var, 0.0)

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.variance)

    @property
    def whitened_cross_covariance(self) -> np.ndarray:
        """``V = L^{-1} K(X, C)``, shape (n, N), synced; a read-only view of the cache's rows.

        The posterior covariance between candidates i and j is ``k(c_i, c_j) - V[:, i] @ V[:, j]``.
        """
        self.update()
        v = self._V[: self._n]
        v.flags.writeable = False
        return v

    def covariance_with(self, index: int) -> np.ndarray:
        """Posterior covariance between candidate ``index`` and every candidate, shape (N,)."""
        self.update()
        c = self.candidates[index : index + 1]
        prior = self.gp.kernel.k(c, self.candidates)[0]
        if not self._n:
            return prior
        return prior - self._V[: self._n, index] @ self._V[: self._n]


class FixedPointsMean:
    """Posterior mean of an :class:`ExactGP` at fixed points X (M, d), O(M n) per new observation.

    Keeps the rows ``k(x_i, X)`` (n, M), appended as observations arrive, and computes
    ``m + alpha^T K`` with ``alpha = L^{-T} a`` (R&W eq. 2.25); recomputes the rows when the GP is
    refactorised (its ``version`` changes). The mean alone (no variance) is what a classification
    by the posterior mean needs, e.g. the level-set estimate of eq. (3.1) on a large evaluation set.
    Memory n x M float64 (500 x 100,000: 400 MB).
    """

    def __init__(self, X: np.ndarray) -> None:
        self.X = X
        self._K = np.zeros((0, X.shape[0]))
        self._n = 0
        self._version = -1

    def mean(self, gp: ExactGP) -> np.ndarray:
        """The posterior mean (M,) of ``gp`` at X, given all of its current data."""

        if gp.version != self._version or gp.n < self._n:
            self._n = 0
            self._version = gp.version
        n = gp.n
        if n == 0:
            return np.full(self.X.shape[0], gp.mean_constant)
        if n > self._K.shape[0]:
            K = np.empty((max(64, 2 * self._K.shape[0], n), self.X.shape[0]))
            K[: self._n] = self._K[: self._n]
            self._K = K
        if n > self._n:
            self._K[self._n : n] = gp.kernel.k(gp.X[self._n : n], self.X)
            self._n = n
        return gp.mean_constant + gp.posterior_weights() @ self._K[:n]
