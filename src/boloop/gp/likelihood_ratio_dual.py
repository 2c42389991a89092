"""The dual methods of the support values (38)/(39) of COBOL's confidence set (Xu et al. 2024,
App. B.3): the start of the batched KKT Newton method and its safeguarded fallback.

Both minimise a convex dual in the multipliers ``(mu, nu)`` of the ball and of the likelihood
constraint by damped Newton steps. :func:`model_start` does so for a quadratic model of the
likelihood at the MLE, exactly and for all directions at once, in the eigenbasis of the MLE's
Hessian (:func:`mle_eigenbasis`); :func:`support_value_dual` does so for the likelihood itself,
one direction at a time, where the batched Newton method of
:func:`boloop.gp.likelihood_ratio_support.support_values` did not converge. Part of
:mod:`boloop.gp.likelihood_ratio`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from boloop.gp.likelihood_ratio_loglik import BoxedLogLikelihood, _as_likelihood, _einsum
from boloop.gp.likelihood_ratio_mle import MLEResult

__all__ = ["mle_eigenbasis", "model_start", "support_value_dual"]


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
