"""The support values (38)/(39) of COBOL's confidence set (Xu et al. 2024, App. B.3): ``max
a^T w + s u`` over ``C = {||(w, u)|| <= B, l(L w) >= ll_min}`` for many directions at once.

Where the ball's own maximiser satisfies the likelihood constraint the ball decides
(:func:`_ball_decided`); elsewhere the KKT system is solved by batched Newton steps from the
quadratic-model start of :mod:`boloop.gp.likelihood_ratio_dual`, with Woodbury solves by LAPACK
``dposv`` row by row (:func:`_solve_spd_rows`) and a batched backtracking line search; rows that
do not converge are finished by that module's dual fallback. Part of
:mod:`boloop.gp.likelihood_ratio`, whose docstring derives the method.
"""

from __future__ import annotations

import numpy as np

from boloop.gp.likelihood_ratio_dual import model_start, support_value_dual
from boloop.gp.likelihood_ratio_loglik import BoxedLogLikelihood, _as_likelihood, _dposv, _einsum
from boloop.gp.likelihood_ratio_mle import MLEResult

__all__ = ["INNER_MARGIN", "S_MIN", "support_values"]


S_MIN = 1e-9  # floor on s(x): the u-term then contributes at most 1e-9 * B
# how far an inner width must exceed a threshold to decide it without the exact bounds
INNER_MARGIN = 1e-6
_NEWTON_BLOCK = 128  # rows per block of the batched Newton solves (cache-sized (128, n, n))
_HALVING_BLOCKS = (2, 6, 21)  # the line search's halvings 1-2, 3-8, 9-29, each block in one batch
# the step factors 2^-b of each block's halvings (b = 1, 2; 3, ..., 8; 9, ..., 29)
_HALVING_FACTORS = tuple(
    0.5 ** np.arange(sum(_HALVING_BLOCKS[:i]) + 1, sum(_HALVING_BLOCKS[: i + 1]) + 1)
    for i in range(len(_HALVING_BLOCKS))
)


def _kkt_residuals(
    L: np.ndarray,
    r: BoxedLogLikelihood,
    A: np.ndarray,
    s: np.ndarray,
    W: np.ndarray,
    mu: np.ndarray,
    nu: np.ndarray,
    ll_min: float,
    B: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """KKT residuals of ``max a^T w + s u`` over C with ``u = s / mu`` eliminated.

    Returns r_w (m, n), r_mu (m,), r_nu (m,), the curvature D = -l''(Z) (m, n) (``P (1 - P)``
    without a box) and h = L^T l'(Z) (m, n).
    """
    Z = W @ L.T
    ll, g, D = r.terms(Z)
    h = g @ L
    r_w = A + nu[:, None] * h - mu[:, None] * W
    r_mu = 0.5 * (B * B - _einsum("ij,ij->i", W, W) - (s / mu) ** 2)
    r_nu = ll - ll_min
    return r_w, r_mu, r_nu, D, h


def _merit(r_w: np.ndarray, r_mu: np.ndarray, r_nu: np.ndarray, B: float) -> np.ndarray:
    """Squared KKT residual; the ball residual (units of B^2) is scaled by 1/B."""
    return _einsum("ij,ij->i", r_w, r_w) + (r_mu / B) ** 2 + r_nu**2


def _solve_spd_rows(K: np.ndarray, S: np.ndarray, mu: np.ndarray, rhs: np.ndarray) -> bool:
    """Solve ``(mu_j I + diag(S_j) K diag(S_j)) x = b`` for every row j in place.

    K (n, n) SPD; S (m, n); mu (m,) > 0; rhs (m, k, n) holds the k right-hand sides of row j
    (overwritten by the solutions). The matrices are formed elementwise in cache-sized blocks and
    factored one by one with LAPACK ``dposv`` (a Python loop over a C routine is cheaper here than
    NumPy's batched LU for n ~ 50). Returns False if some matrix is not numerically SPD.
    """
    dposv = _dposv()
    m, _, n = rhs.shape
    for b0 in range(0, m, _NEWTON_BLOCK):
        Sb = S[b0 : b0 + _NEWTON_BLOCK]
        G = K[None, :, :] * Sb[:, :, None]
        G *= Sb[:, None, :]
        G.reshape(G.shape[0], -1)[:, :: n + 1] += mu[b0 : b0 + _NEWTON_BLOCK, None]
        for i in range(G.shape[0]):
            # G[i] is symmetric, so its transpose is the same matrix in Fortran order (no copy);
            # rhs[b0 + i].T is the Fortran-ordered (n, k) right-hand side, solved in place (the
            # arguments by position: a, b, lower, overwrite_a, overwrite_b)
            bt = rhs[b0 + i].T
            _, x, info = dposv(G[i].T, bt, 1, 1, 1)
            if info != 0:
                return False
            if x is not bt:  # LAPACK worked on a copy (not for these layouts): write it back
                rhs[b0 + i] = x.T
    return True


def support_values(
    L: np.ndarray,
    rejected: np.ndarray,
    mle: MLEResult,
    ll_min: float,
    norm_bound: float,
    A: np.ndarray,
    s: np.ndarray,
    *,
    tol: float = 1e-10,
    max_iter: int = 60,
    value_bound: float | None = None,
    cap: float | None = None,
) -> np.ndarray:
    """``max a_j^T w + s_j u`` over ``C = {||(w, u)|| <= B, l(L w) >= ll_min}`` for each row j.

    L (n, n); rejected (n,); A (m, n) the directions ``a``; s (m,) >= 0 -> values (m,).
    ``g_upper(x) = support(a(x), s(x))`` and ``g_lower(x) = -support(-a(x), s(x))``.
    ``value_bound``: the labelled values are also boxed, ``|L w| <= value_bound`` (the
    barrier-augmented likelihood of :class:`BoxedLogLikelihood`; ``mle`` and ``ll_min`` must come from
    the same augmented likelihood).
    ``cap``: only values below ``cap`` are needed exactly (the caller clips at ``cap``): a row
    whose Newton iterate is a strictly feasible point of C with value at least ``cap +
    INNER_MARGIN`` is certified (its support value is at least that, and any solver's value at
    least ``cap``); once every row still iterating is certified the solve stops, and failed rows
    skip the unboxed re-solve when all of them are certified. A certified row returns its
    feasible point's value, which clips to ``cap`` like the exact one; every other row's value
    is unchanged to the bit (certified rows keep iterating in its batches until then).
    """
    # trial points of the line searches may leave the box (value -inf, rejected by the merit
    # test): their arithmetic warnings are expected
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _support_values(
            L,
            rejected,
            mle,
            ll_min,
            norm_bound,
            A,
            s,
            tol=tol,
            max_iter=max_iter,
            value_bound=value_bound,
            cap=cap,
        )


def _ball_decided(
    L: np.ndarray,
    rejected: np.ndarray | BoxedLogLikelihood,
    ll_min: float,
    norm_bound: float,
    A: np.ndarray,
    s: np.ndarray,
    value_bound: float | None,
) -> tuple[
    np.ndarray, np.ndarray, float, np.ndarray, BoxedLogLikelihood | None, np.ndarray, np.ndarray
]:
    """The opening both support-value solvers share: ``(A, s, B, out, r, W_ball, todo)`` with
    ``out = B ||(a, s)||`` the ball's support values (exact where the ball's maximiser ``W_ball``
    satisfies the likelihood constraint), ``todo`` the rows where it does not, ``s`` floored at
    ``S_MIN``; ``r`` is None when there are no labels or no rows (``out`` is then the answer)."""
    A = np.asarray(A, dtype=np.float64)
    m, n = A.shape
    B = float(norm_bound)
    s = np.maximum(np.asarray(s, dtype=np.float64), S_MIN)
    kappa = np.sqrt(_einsum("ij,ij->i", A, A) + s * s)
    out = B * kappa
    if n == 0 or m == 0:
        return A, s, B, out, None, A, np.zeros(0, dtype=np.intp)
    r = _as_likelihood(rejected, value_bound)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        W_ball = (B / kappa)[:, None] * A
        ok = r.value(W_ball @ L.T) >= ll_min
    return A, s, B, out, r, W_ball, np.flatnonzero(~ok)


def _support_values(
    L: np.ndarray,
    rejected: np.ndarray,
    mle: MLEResult,
    ll_min: float,
    norm_bound: float,
    A: np.ndarray,
    s: np.ndarray,
    *,
    tol: float = 1e-10,
    max_iter: int = 60,
    value_bound: float | None = None,
    cap: float | None = None,
) -> np.ndarray:
    """Implementation of :func:`support_values`."""
    # 1) the ball's maximiser satisfies the likelihood constraint: the ball alone decides
    A, s, B, out, r, _, todo = _ball_decided(L, rejected, ll_min, norm_bound, A, s, value_bound)
    if r is None or todo.size == 0:
        return out
    n = A.shape[1]
    # 2) both constraints active. Start: the exact solution of a quadratic model of the problem
    #    (the likelihood replaced by its second-order expansion at the MLE, whose Hessian's
    #    eigenbasis is shared by all candidates); then batched Newton on the exact KKT system.
    Ad, sd = A[todo], s[todo]
    mu, nu, W = model_start(L, r, mle, ll_min, B, Ad, sd)
    done = np.zeros(todo.size, dtype=bool)
    K_lab = L @ L.T  # the labelled points' kernel matrix (+ jitter), (n, n)
    LT = L.T
    # the state of the rows still iterating, compacted (row j of every array is row act[j] of
    # the problem; converged rows are written back to W, mu, nu and dropped): the current
    # iterate, its residuals, the likelihood's curvature D and h (kept from the line search)
    # and its merit. Every row's arithmetic is that of the same batched operations in the same
    # order; the last bits of a row can still depend on which rows share its batch (BLAS
    # kernels block by batch size), so rows are dropped only when they converge, as before.
    act = np.arange(todo.size)
    Wa, mua, nua, Aa, sa = W, mu, nu, Ad, sd
    r_w, r_mu, r_nu, P, h = _kkt_residuals(L, r, Aa, sa, Wa, mua, nua, ll_min, B)
    merit0 = _merit(r_w, r_mu, r_nu, B)
    # with a box, a direction whose optimum sits at the barrier's edge makes Newton stall: such
    # rows are finished (conservatively, see below) after fewer iterations than converging
    # ones ever need (about 10)
    n_iter = max_iter if r.box is None else min(max_iter, 25)
    # with a cap, the value of a feasible iterate reaching cap + INNER_MARGIN (-inf: none yet);
    # certified rows keep iterating with the others (a row's bits depend on its batch) until
    # every row still iterating is certified
    cert = None if cap is None else np.full(todo.size, -np.inf)
    stopped = act[:0]
    tol_mu = tol * B * B + 1e-14
    tol_nu = tol * (1 + abs(ll_min))
    for _ in range(n_iter):
        scale = 1.0 + np.abs(nua) + np.abs(mua)
        conv = (
            (np.abs(r_w).max(axis=1) <= tol * scale)
            & (np.abs(r_mu) <= tol_mu)
            & (np.abs(r_nu) <= tol_nu)
        )
        # a feasible iterate reaching the cap: the row's certificate (cert is set when cap is)
        if cert is not None and cap is not None:
            room = B * B - _einsum("ij,ij->i", Wa, Wa)
            v_in = _einsum("ij,ij->i", Aa, Wa) + sa * np.sqrt(np.maximum(room, 0.0))
            reach = (r_nu > tol_nu) & (room > 0.0) & (v_in >= cap + INNER_MARGIN)
            cert[act[reach]] = v_in[reach]
        if conv.any():
            rows = act[conv]
            done[rows] = True
            W[rows], mu[rows], nu[rows] = Wa[conv], mua[conv], nua[conv]
            keep = ~conv
            if not keep.any():
                act = act[:0]
                break
            act, Wa, mua, nua, Aa, sa = (
                act[keep],
                Wa[keep],
                mua[keep],
                nua[keep],
                Aa[keep],
                sa[keep],
            )
            r_w, r_mu, r_nu, P, h = r_w[keep], r_mu[keep], r_nu[keep], P[keep], h[keep]
            merit0 = merit0[keep]
        if cert is not None and np.isfinite(cert[act]).all():
            # every row still iterating has a certificate: stop (the rows that converged kept
            # their batches, so their values are those of the full run)
            done[act] = True
            stopped = act
            break
        k_act = act.size
        # Newton matrix M_j = mu_j I + U_j U_j^T with U_j = L^T S_j, S_j = sqrt(nu_j D_j); by
        # Woodbury M_j^{-1} b = (b - U_j G_j^{-1} U_j^T b) / mu_j with G_j = mu_j I + S_j K S_j,
        # whose entries are formed elementwise (O(n^2) per row instead of a 2 n^3 product)
        Sn = np.sqrt(P * nua[:, None])
        rhs = np.empty((k_act, 3, n))  # row j: the three right-hand sides S_j L b
        rhs[:, 0], rhs[:, 1], rhs[:, 2] = r_w @ LT, Wa @ LT, h @ LT
        Za = rhs[:, 1].copy() if r.box is not None else None  # Z = L w of the current iterate
        rhs *= Sn[:, None, :]
        if not _solve_spd_rows(K_lab, Sn, mua, rhs):
            break
        rhs *= Sn[:, None, :]
        inv_mu = 1.0 / mua[:, None]
        p_ = (r_w - rhs[:, 0] @ L) * inv_mu
        q_ = (Wa - rhs[:, 1] @ L) * inv_mu
        m_ = (h - rhs[:, 2] @ L) * inv_mu
        wq = _einsum("ij,ij->i", Wa, q_)
        wm = _einsum("ij,ij->i", Wa, m_)
        hm = _einsum("ij,ij->i", h, m_)
        wp = _einsum("ij,ij->i", Wa, p_)
        hp = _einsum("ij,ij->i", h, p_)
        a11 = wq + sa * sa / mua**3
        a12 = -wm
        a22 = hm
        b1 = wp - r_mu
        b2 = -r_nu - hp
        det = a11 * a22 - a12 * a12
        det = np.where(np.abs(det) < 1e-300, 1e-300, det)
        dmu = (b1 * a22 - a12 * b2) / det
        dnu = (a11 * b2 - a12 * b1) / det
        dW = p_ - q_ * dmu[:, None] + m_ * dnu[:, None]
        # fraction to the boundary: mu > 0, nu > 0
        # (the same values as t = 1, t[neg] = min(t[neg], 0.9 mu[neg] / -dmu[neg]), ...)
        t = np.where(dmu < 0, np.minimum(1.0, 0.9 * mua / -dmu), 1.0)
        t = np.where(dnu < 0, np.minimum(t, 0.9 * nua / -dnu), t)
        if Za is not None:  # and |Z_i| < box (the barrier's domain)
            dZ = dW @ LT
            room = np.where(dZ > 0, r.box - Za, r.box + Za)
            adZ = np.abs(dZ)
            frac = np.where(adZ > 0, room / adZ, np.inf)
            t = np.minimum(t, 0.99 * frac.min(axis=1))
        # backtracking: trial b (0, 1, ..., 29) of a row is the step t / 2^b, accepted when it
        # satisfies the Armijo test on the merit or is below 1e-8; after 30 rejected trials the
        # next halving is taken unchecked. The first trial is evaluated for every row, then the
        # halvings of the rows still pending in blocks of several trials each (_HALVING_BLOCKS):
        # the same accepted step as trying them one by one, in a few batched evaluations (a
        # row stalled at the box's edge needs ~27 halvings per iteration)
        Wn = Wa + t[:, None] * dW
        mun = mua + t * dmu
        nun = nua + t * dnu
        res = _kkt_residuals(L, r, Aa, sa, Wn, mun, nun, ll_min, B)
        merit1 = _merit(res[0], res[1], res[2], B)
        bad = ~(merit1 <= (1 - 1e-4 * t) * merit0) & (t > 1e-8)
        if not bad.any():  # every trial accepted
            Wa, mua, nua = Wn, mun, nun
            r_w, r_mu, r_nu, P, h = res
            merit0 = merit1
            continue
        # the old iterate of the pending rows is read below: the accepted rows are updated in
        # fresh arrays
        good = ~bad
        W_old, mu_old, nu_old = Wa, mua, nua  # the iterate before the step
        Wa, mua, nua = (
            np.where(good[:, None], Wn, Wa),
            np.where(good, mun, mua),
            np.where(good, nun, nua),
        )
        r_w, r_mu, r_nu = (
            np.where(good[:, None], res[0], r_w),
            np.where(good, res[1], r_mu),
            np.where(good, res[2], r_nu),
        )
        P, h = np.where(good[:, None], res[3], P), np.where(good[:, None], res[4], h)
        merit_old, merit0 = merit0, np.where(good, merit1, merit0)
        pend = bad.nonzero()[0]
        b = 0  # halvings tried
        for k, halvings in zip(_HALVING_BLOCKS, _HALVING_FACTORS, strict=True):
            if not pend.size:
                break
            p = pend.size
            tp = t[pend][:, None] * halvings  # (p, k), exact
            Wn = (W_old[pend][:, None, :] + tp[:, :, None] * dW[pend][:, None, :]).reshape(p * k, n)
            mun = (mu_old[pend][:, None] + tp * dmu[pend][:, None]).reshape(-1)
            nun = (nu_old[pend][:, None] + tp * dnu[pend][:, None]).reshape(-1)
            res = _kkt_residuals(
                L,
                r,
                Aa[pend].repeat(k, axis=0),
                sa[pend].repeat(k),
                Wn,
                mun,
                nun,
                ll_min,
                B,
            )
            merit1 = _merit(res[0], res[1], res[2], B).reshape(p, k)
            ok = (merit1 <= (1 - 1e-4 * tp) * merit_old[pend][:, None]) | ~(tp > 1e-8)
            hit = ok.any(axis=1)
            b += k
            if not hit.any():  # no row accepted a trial of this block (a stalled row)
                continue
            first = ok.argmax(axis=1)
            sel = hit.nonzero()[0] * k + first[hit]  # the first accepted trial of each row
            rows = pend[hit]
            Wa[rows], mua[rows], nua[rows] = Wn[sel], mun[sel], nun[sel]
            r_w[rows], r_mu[rows], r_nu[rows] = res[0][sel], res[1][sel], res[2][sel]
            P[rows], h[rows] = res[3][sel], res[4][sel]
            merit0[rows] = merit1.reshape(-1)[sel]
            pend = pend[~hit]
        if pend.size:  # 30 trials rejected: the next halving, taken unchecked (as before)
            t[pend] *= 0.5 ** (b + 1)
            rows = pend
            Wn = W_old[pend] + t[pend, None] * dW[pend]
            if r.box is not None:  # never step out of the box (the barrier is -inf there)
                inside = np.all(np.abs(Wn @ LT) < r.box, axis=1)
                rows, Wn = rows[inside], Wn[inside]
            Wa[rows] = Wn
            mua[rows] = mu_old[rows] + t[rows] * dmu[rows]
            nua[rows] = nu_old[rows] + t[rows] * dnu[rows]
            res = _kkt_residuals(
                L, r, Aa[rows], sa[rows], Wa[rows], mua[rows], nua[rows], ll_min, B
            )
            r_w[rows], r_mu[rows], r_nu[rows], P[rows], h[rows] = res
            merit0[rows] = _merit(res[0], res[1], res[2], B)
    if act.size:  # rows that did not converge: their last iterate
        W[act], mu[act], nu[act] = Wa, mua, nua
    # feasibility-safe value: the u that exactly fills the ball for the current w
    u_fill = np.sqrt(np.maximum(B * B - _einsum("ij,ij->i", W, W), 0.0))
    values = _einsum("ij,ij->i", Ad, W) + sd * u_fill
    if stopped.size:
        values[stopped] = cert[stopped]  # type: ignore[index]
    failed = np.flatnonzero(~done)
    if cert is not None and failed.size and np.isfinite(cert[failed]).all():
        values[failed] = cert[failed]  # every failed row reaches the cap: no re-solve
        failed = failed[:0]
    if r.box is not None and failed.size:
        # the box binds sharply at these directions (the barrier's edge) and Newton stalls:
        # take the support value of the same set without the box -- a superset, so the bound is
        # conservative (never tighter than the boxed one); then clipped like every bound
        values[failed] = _support_values(
            L, r.r, mle, ll_min, B, Ad[failed], sd[failed], tol=tol, max_iter=max_iter, cap=cap
        )
        failed = failed[:0]
    for j in failed:
        values[j] = support_value_dual(L, r, mle, ll_min, B, Ad[j], float(sd[j]))
    out[todo] = values
    return out
