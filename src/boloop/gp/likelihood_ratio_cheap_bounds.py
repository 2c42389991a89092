"""Cheap bounds on the support values (38)/(39) of COBOL's confidence set (Xu et al. 2024): an
inner one from feasible points of the set (:func:`inner_support_values`, O(n^2) per direction)
and a closed-form outer one from a half-space relaxation of the likelihood constraint
(:func:`relaxed_support_values`, O(n)), against the exact Newton solves of
:func:`boloop.gp.likelihood_ratio_support.support_values`. They screen candidates and decide
widths without the exact bounds. Part of :mod:`boloop.gp.likelihood_ratio`.
"""

from __future__ import annotations

import math

import numpy as np

from boloop.gp.likelihood_ratio_dual import model_start
from boloop.gp.likelihood_ratio_loglik import _einsum
from boloop.gp.likelihood_ratio_mle import MLEResult
from boloop.gp.likelihood_ratio_support import _ball_decided

__all__ = ["inner_support_values", "relaxed_support_values"]


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
