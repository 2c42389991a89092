"""The expert's log-likelihood ``l(Z)`` of COBOL's confidence set (Xu et al. 2024, Assumption
2.1 and eq. 37-39), optionally with a box on the labelled values, and the routines its solvers
share.

``l(Z) = sum_i r_i Z_i - log(1 + exp(Z_i))`` (concave) for labels ``r`` (1 reject, 0 accept) and
latent values ``Z = g(X)``; :class:`BoxedLogLikelihood` adds the log-barrier that boxes
``|Z_i| <= b``. scipy's ``expit`` and the LAPACK routines of the Newton solves (``dpotrf`` /
``dpotrs``, ``dposv``) are imported on first use (:func:`_expit`, :func:`_cho_lapack`,
:func:`_dposv`): importing the models imports no scipy. ``_einsum`` is NumPy's C einsum without
its Python-level dispatch. Part of :mod:`boloop.gp.likelihood_ratio`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["BoxedLogLikelihood", "log_likelihood"]


try:  # the C routine that ``np.einsum`` calls when not optimising (the same values, without
    # its Python-level dispatch, ~1.5 us a call: the Newton loop makes ~300 such calls per bound)
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # pragma: no cover - NumPy < 2 or a future layout
    _einsum = np.einsum


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
