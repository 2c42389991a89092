"""A Gaussian posterior over the utilities of a finite option set from duels, and EUBO.

Model (Chu and Ghahramani, "Preference learning with Gaussian processes", ICML 2005, with the
logistic link of the BOHF paper): utilities ``f ~ N(0, K)`` over the ``m`` options, a duel of ``i``
against ``j`` is won by ``i`` with probability ``sigmoid(f_i - f_j)``. The Laplace approximation
(Rasmussen and Williams 2006, Sec. 3.4) is found on the options that have been in a duel, ``U``
(``n_u`` of them), by Newton's method in the form of R&W Algorithm 3.1 for a non-diagonal
``W = D^T diag(p (1 - p)) D`` (``D`` the duel-difference matrix)::

    f_new = K_UU (I + W K_UU)^{-1} (W f + grad log p(y | f))

and extended to every option by the GP conditional (R&W eq. 3.21, 3.24)::

    mean = K_*U grad log p(y | f_hat)        cov = K_** - K_*U (I + W K_UU)^{-1} W K_U*

The log evidence is R&W eq. 3.32: ``log p(y | f_hat) - f_hat^T a / 2 - log det(I + W K_UU) / 2``.

:func:`eubo_all_pairs`: the expected utility of the best option of a duel (Lin et al., "Preference
exploration for efficient Bayesian optimization with multiple outcomes", AISTATS 2022; Astudillo
et al., "qEUBO", AISTATS 2023), ``E[max(f_a, f_b)]``, in closed form for a Gaussian posterior::

    s = sqrt(v_a + v_b - 2 c_ab),  z = (mu_a - mu_b) / s,
    E[max(f_a, f_b)] = mu_b + (mu_a - mu_b) Phi(z) + s phi(z)

for every pair at once. Shapes: ``K`` (m, m); duels (n, 2) of option indices, winner first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from boloop.errors import InvalidInputError

__all__ = ["UtilityPosterior", "WarmStart", "eubo_all_pairs", "expected_max", "best_pairs"]

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@dataclass(frozen=True)
class WarmStart:
    """What a later posterior of the same options reads from an earlier one to start its
    solver (:meth:`UtilityPosterior.warm_start`): a few vectors, not the posterior's m x m
    matrices. Laplace's method starts Newton from ``a`` on the options ``U`` (m options in all);
    expectation propagation starts from the site parameters of the duels ``winners``,
    ``losers`` (None for a Laplace posterior)."""

    m: int
    U: np.ndarray
    a: np.ndarray
    winners: np.ndarray | None = None
    losers: np.ndarray | None = None
    site_precision: np.ndarray | None = None
    site_natural_mean: np.ndarray | None = None


class UtilityPosterior:
    """Laplace posterior of the utilities ``f`` (m,) given duels, under ``f ~ N(0, K)``.

    Parameters
    ----------
    K:
        Prior covariance of the utilities, (m, m), symmetric positive semi-definite.
    winners, losers:
        Option indices (n,) of each duel's winner and loser (a duel may repeat).
    start:
        An earlier posterior of the same options on a subset of these duels, or its
        :class:`WarmStart`: Newton's method starts from its mode (the mode is unique, so the
        start changes only the number of steps).

    :meth:`compact_state` and :meth:`from_compact_state` store and rebuild a posterior without
    its prior ``K`` (m x m) or anything computed from it: the mode ``f_U`` and the duels.
    """

    #: attributes a compact state leaves out: the prior and what the mode's terms recompute
    _DERIVED: tuple[str, ...] = (
        "K",
        "K_UU",
        "U",
        "D",
        "a",
        "W",
        "_lu",
        "_V",
        "_a0",
        "log_evidence",
    )

    def __init__(
        self,
        K: np.ndarray,
        winners: np.ndarray,
        losers: np.ndarray,
        start: UtilityPosterior | WarmStart | None = None,
    ) -> None:
        self._set_duels(K, winners, losers)
        # Newton's start: f = K_UU a with a = 0, or (warm start) the ``a`` of ``start``, a posterior
        # of the same options on a subset of these duels (typically the previous duel's), on its
        # options and 0 on the new ones. The mode is unique (the objective is concave): the start
        # changes only the number of steps.
        self._a0 = np.zeros(self.U.size)
        if start is not None and start.m == self.m and start.U.size:
            pos = np.minimum(np.searchsorted(self.U, start.U), self.U.size - 1)
            if np.array_equal(self.U[pos], start.U):
                self._a0[pos] = start.a
        self.f_U = self.K_UU @ self._a0
        self.newton_steps = 0
        self._solve()

    def _set_duels(self, K: np.ndarray, winners: np.ndarray, losers: np.ndarray) -> None:
        """The prior and the duels: ``K``, ``m``, ``winners``, ``losers``, the options in a duel
        ``U``, the duel-difference matrix ``D`` and ``K_UU``."""
        K = np.asarray(K, dtype=np.float64)
        if K.ndim != 2 or K.shape[0] != K.shape[1]:
            raise InvalidInputError(f"K must be square, got shape {K.shape}")
        w = np.asarray(winners, dtype=np.intp).reshape(-1)
        los = np.asarray(losers, dtype=np.intp).reshape(-1)
        if w.shape != los.shape:
            raise InvalidInputError("winners and losers must have the same length")
        m = K.shape[0]
        if w.size and (min(w.min(), los.min()) < 0 or max(w.max(), los.max()) >= m):
            raise InvalidInputError(f"duel indices must lie in [0, {m})")
        self.K = K
        self.m = m
        self.winners = w
        self.losers = los
        self.U, inv = np.unique(np.concatenate([w, los]), return_inverse=True)
        n = w.size
        #: duel-difference matrix over U: row k is e_winner - e_loser
        self.D = np.zeros((n, self.U.size))
        self.D[np.arange(n), inv[:n]] += 1.0
        self.D[np.arange(n), inv[n:]] -= 1.0
        self.K_UU = K[np.ix_(self.U, self.U)]
        self._V: np.ndarray | None = None

    # -- compact state ----------------------------------------------------------------------------
    def warm_start(self) -> WarmStart:
        """The vectors a later posterior's solver starts from (its ``start``)."""
        return WarmStart(self.m, self.U, self.a)

    def compact_state(self) -> dict[str, Any]:
        """Everything but the prior ``K`` and what is computed from it and the mode: a few
        vectors of the duels' size. :meth:`from_compact_state` with the same ``K`` rebuilds a
        posterior equal to this one bit for bit (the same arithmetic on the same numbers)."""
        return {k: v for k, v in self.__dict__.items() if k not in self._DERIVED}

    @classmethod
    def from_compact_state(cls, K: np.ndarray, state: dict[str, Any]) -> UtilityPosterior:
        """The posterior of :meth:`compact_state` under the prior ``K`` it was found with."""
        post = cls.__new__(cls)
        post.__dict__.update(state)
        post._set_duels(K, state["winners"], state["losers"])
        post._rebuild()
        return post

    def _rebuild(self) -> None:
        """Recompute what :meth:`compact_state` leaves out from the mode ``f_U``."""
        self._at_mode(self.f_U)

    # -- Laplace mode ---------------------------------------------------------------------------
    def _terms(self, f: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        from scipy.special import expit, log_expit

        u = self.D @ f
        loglik = float(np.sum(log_expit(u)))
        grad = self.D.T @ expit(-u)  # d/df sum log sigmoid(D f)
        p = expit(u)
        W = self.D.T @ ((p * (1.0 - p))[:, None] * self.D)
        return loglik, grad, W

    def _psi(self, f: np.ndarray, a: np.ndarray) -> float:
        return self._terms(f)[0] - 0.5 * float(f @ a)

    def _solve(self, tol: float = 1e-10, max_steps: int = 100) -> None:
        from scipy.linalg import lu_factor, lu_solve

        n_u = self.U.size
        if n_u == 0:
            self._at_mode(self.f_U)
            return
        K = self.K_UU
        f = self.f_U
        a = self._a0
        psi = self._psi(f, a)
        eye = np.eye(n_u)
        for step in range(max_steps):
            _, grad, W = self._terms(f)
            lu = lu_factor(eye + W @ K, check_finite=False)
            b = W @ f + grad
            a_new = lu_solve(lu, b, check_finite=False)
            f_new = K @ a_new
            # damped step (R&W Sec. 3.4.1: Newton on this concave objective rarely needs it)
            t = 1.0
            psi_new = self._psi(f_new, a_new)
            while psi_new < psi - 1e-12 and t > 1e-6:
                t *= 0.5
                a_try = a + t * (a_new - a)
                f_try = K @ a_try
                psi_new = self._psi(f_try, a_try)
                f_new, a_new = f_try, a_try
            converged = abs(psi_new - psi) < tol * max(1.0, abs(psi))
            f, a, psi = f_new, a_new, psi_new
            self.newton_steps = step + 1
            if converged:
                break
        self._at_mode(f)

    def _at_mode(self, f: np.ndarray) -> None:
        """Set the mode ``f_U`` and what follows from it: ``a``, ``W``, the factor of
        ``I + W K_UU`` and the log evidence (R&W eq. 3.32)."""
        from scipy.linalg import lu_factor

        self.f_U = f
        n_u = self.U.size
        if n_u == 0:
            self.a: np.ndarray = np.zeros(0)
            self.W = np.zeros((0, 0))
            self._lu = None
            self.log_evidence = 0.0
            return
        loglik, grad, W = self._terms(f)
        # at the mode a = K^{-1} f = grad log p(y | f) (R&W eq. 3.17)
        self.a = grad
        self.W = W
        self._lu = lu_factor(np.eye(n_u) + W @ self.K_UU, check_finite=False)
        logdet = float(np.sum(np.log(np.abs(np.diag(self._lu[0])))))
        self.log_evidence = loglik - 0.5 * float(f @ self.a) - 0.5 * logdet

    # -- posterior ------------------------------------------------------------------------------
    def mean(self, idx: np.ndarray | None = None) -> np.ndarray:
        """Posterior mean of the utilities of ``idx`` (all options by default)."""
        cols = np.arange(self.m) if idx is None else np.asarray(idx, dtype=np.intp)
        if self.U.size == 0:
            return np.zeros(cols.size)
        return self.K[np.ix_(cols, self.U)] @ self.a

    def factor(self) -> np.ndarray:
        """``V`` (r, m) with ``covariance() = K - V^T V`` (r <= number of duels).

        With ``W = S S^T`` (``S = D^T diag(sqrt(p (1 - p)))``, or the eigen-factor of ``W`` when
        there are more duels than options in them), the push-through identity gives
        ``K_*U (I + W K_UU)^{-1} W K_U* = K_*U S (I + S^T K_UU S)^{-1} S^T K_U*``, so
        ``V = L^{-1} S^T K_U*`` with ``L L^T = I + S^T K_UU S`` (R&W Sec. 3.4.3, eq. 3.27's
        symmetric form). Pairwise quantities then cost O(r) each instead of forming the m x m
        covariance."""
        from scipy.linalg import solve_triangular
        from scipy.special import expit

        if self._V is not None:
            return self._V
        if self.U.size == 0:
            return np.zeros((0, self.m))
        n = self.D.shape[0]
        if n <= self.U.size:
            p = expit(self.D @ self.f_U)
            S = self.D.T * np.sqrt(p * (1.0 - p))[None, :]
        else:
            lam, Q = np.linalg.eigh(0.5 * (self.W + self.W.T))
            keep = lam > 1e-14 * max(1.0, float(lam.max(initial=0.0)))
            S = Q[:, keep] * np.sqrt(lam[keep])[None, :]
        B = np.eye(S.shape[1]) + S.T @ self.K_UU @ S
        L = np.linalg.cholesky(0.5 * (B + B.T))
        self._V = solve_triangular(L, S.T @ self.K[self.U, :], lower=True, check_finite=False)
        return self._V

    def variance(self) -> np.ndarray:
        """Posterior variance of every option's utility, (m,)."""
        V = self.factor()
        return np.maximum(np.diag(self.K) - np.einsum("ij,ij->j", V, V), 0.0)

    def difference_variance(self, r: int) -> np.ndarray:
        """Posterior variance of ``f(x) - f(r)`` for every option ``x``, (m,) (rounding can make
        entries slightly negative): ``Var f(x) + Var f(r) - 2 Cov(f(x), f(r))`` with the
        covariance ``K - V^T V`` of :meth:`factor`. Duels identify differences of utilities, so
        this, not :meth:`variance`, shrinks as an option is duelled against ``r``."""
        K = self.K
        V = self.factor()
        vr = V[:, r]
        var = np.diag(K) - np.einsum("ij,ij->j", V, V) + (K[r, r] - vr @ vr)
        var -= 2.0 * (K[:, r] - V.T @ vr)
        return var

    def centred_variance(self) -> np.ndarray:
        """Posterior variance of ``f(x) - f_bar`` for every option ``x``, (m,), ``f_bar`` the
        average utility of all ``m`` options (rounding can make entries slightly negative).

        Duels identify differences of utilities, never their level; centring on the average
        (the sum-to-zero identification of Bradley-Terry models) removes the level without making
        any one option the reference, as :meth:`difference_variance` does (there the reference's
        own uncertainty is added to every other option's). With the covariance ``K - V^T V`` of
        :meth:`factor`, ``c_bar = K 1 / m - V^T (V 1 / m)`` and
        ``Var(f(x) - f_bar) = Var f(x) - 2 c_bar(x) + mean(c_bar)``."""
        K = self.K
        V = self.factor()
        v_bar = V.mean(axis=1)
        c_bar = K.mean(axis=1) - V.T @ v_bar
        var = np.diag(K) - np.einsum("ij,ij->j", V, V)
        return var - 2.0 * c_bar + float(np.mean(c_bar))

    def covariance(self, idx: np.ndarray | None = None) -> np.ndarray:
        """Posterior covariance of the utilities of ``idx`` (all options by default)."""
        from scipy.linalg import lu_solve

        cols = np.arange(self.m) if idx is None else np.asarray(idx, dtype=np.intp)
        prior = self.K[np.ix_(cols, cols)]
        if self.U.size == 0 or self._lu is None:
            return prior.copy()
        C = self.K[np.ix_(self.U, cols)]  # (n_u, k)
        MC = lu_solve(self._lu, self.W @ C, check_finite=False)
        cov = prior - C.T @ MC
        return 0.5 * (cov + cov.T)


def expected_max(
    mu_a: np.ndarray, mu_b: np.ndarray, var_a: np.ndarray, var_b: np.ndarray, cov_ab: np.ndarray
) -> np.ndarray:
    """``E[max(f_a, f_b)]`` for jointly Gaussian ``(f_a, f_b)`` (elementwise; any shapes)."""
    from scipy.special import ndtr

    s2 = np.maximum(var_a + var_b - 2.0 * cov_ab, 0.0)
    s = np.sqrt(s2)
    diff = mu_a - mu_b
    out = np.maximum(mu_a, mu_b)
    pos = s > 1e-12 * np.maximum(1.0, np.abs(diff))
    z = np.where(pos, diff / np.where(pos, s, 1.0), 0.0)
    smooth = mu_b + diff * ndtr(z) + s * _INV_SQRT_2PI * np.exp(-0.5 * z * z)
    return np.where(pos, smooth, out)


def eubo_all_pairs(mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """EUBO of every ordered pair, (m, m); the diagonal (a duel of an option with itself) is
    ``-inf`` so that it is never chosen."""
    mu = np.asarray(mean, dtype=np.float64).reshape(-1)
    S = np.asarray(cov, dtype=np.float64)
    v = np.diag(S)
    E = expected_max(mu[:, None], mu[None, :], v[:, None], v[None, :], S)
    np.fill_diagonal(E, -np.inf)
    return E


def best_pairs(
    posteriors: list[tuple[float, UtilityPosterior]],
    exploit: float = 0.0,
    among: np.ndarray | None = None,
    tol: float = 1e-12,
    optimism: float = 0.0,
    reference: int | str | None = None,
    exclude: Any = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair ``a < b`` of ``among`` whose score is within ``tol`` (relative) of the best, with
    its score, exactly, without scoring every pair in closed form:

    ``score(a, b) = sum_k w_k ( E_k[max(f_a, f_b)] + exploit (u_ka + u_kb) / 2 )``,
    ``u_k(x) = mu_k(x) + optimism sd_k(x)``: the posterior mean, or an upper confidence bound;
    with ``reference`` (an option index) ``sd_k(x)`` is the standard deviation of
    ``f(x) - f(reference)``, the uncertainty that duels can remove (they identify differences of
    utilities, never their level); with ``reference="average"`` it is the standard deviation
    of ``f(x) - f_bar``, ``f_bar`` the average utility of all options
    (:meth:`UtilityPosterior.centred_variance`: no option is the reference)

    over a mixture of posteriors ``[(w_k, posterior_k)]``. ``E[max]`` is bounded above by
    ``max(mu_a, mu_b) + phi(0) (sd_a + sd_b)`` (``E[(d + s Z)^+] <= d^+ + s phi(0)`` and
    ``s <= sd_a + sd_b``); the pairs of largest bound are scored exactly, and only the pairs whose
    bound reaches that score (minus the tolerance) are scored in closed form. Returns ``(a, b,
    score)``, the pairs in row-major order of ``among`` (so that ties are broken as over the full
    list). ``among`` defaults to every option; it must hold at least two. ``exclude``: pairs
    ``(a, b)`` of option indices (either order) left out, unless that would leave no pair."""
    m = posteriors[0][1].m
    idx = np.arange(m) if among is None else np.asarray(among, dtype=np.intp)
    k = idx.size
    if k < 2:
        raise InvalidInputError("best_pairs needs at least two options")
    parts = []
    for w, post in posteriors:
        V = post.factor()[:, idx]
        mu = post.mean(idx)
        kd = np.diag(post.K)[idx]
        var = np.maximum(kd - np.einsum("ij,ij->j", V, V), 0.0)
        if optimism and exploit:
            if reference is None:
                u = mu + optimism * np.sqrt(var)
            elif isinstance(reference, str):
                if reference != "average":
                    raise InvalidInputError(
                        f"reference must be an option index, 'average' or None, got {reference!r}"
                    )
                u = mu + optimism * np.sqrt(np.maximum(post.centred_variance()[idx], 0.0))
            else:
                r = int(reference)
                Vfull = post.factor()
                vr = max(float(post.K[r, r] - Vfull[:, r] @ Vfull[:, r]), 0.0)
                cov_r = post.K[idx, r] - V.T @ Vfull[:, r]
                u = mu + optimism * np.sqrt(np.maximum(var + vr - 2.0 * cov_r, 0.0))
        else:
            u = mu
        parts.append((float(w), mu, np.sqrt(var), V, post.K, kd, u))
    # the bound is symmetric in (a, b): computed on the full k x k matrix, the diagonal (a duel
    # of an option with itself) excluded, and the pairs a < b kept at the end
    bound = np.empty((k, k))
    tmp = np.empty((k, k))
    for n_model, (w, mu, sd, _, _, _, u) in enumerate(parts):
        per_option = w * (_INV_SQRT_2PI * sd + 0.5 * exploit * u)
        target = bound if n_model == 0 else tmp
        np.maximum(mu[:, None], mu[None, :], out=target)
        if w != 1.0:
            target *= w
        target += per_option[:, None]
        target += per_option[None, :]
        if n_model:
            bound += tmp
    np.fill_diagonal(bound, -np.inf)
    if exclude is not None and len(exclude):
        pos = np.full(m, -1, dtype=np.intp)
        pos[idx] = np.arange(k)
        pairs = pos[np.asarray(exclude, dtype=np.intp).reshape(-1, 2)]
        pairs = pairs[(pairs >= 0).all(axis=1) & (pairs[:, 0] != pairs[:, 1])]
        pairs = np.unique(np.sort(pairs, axis=1), axis=0)
        if pairs.shape[0] < k * (k - 1) // 2:  # else every pair is excluded: keep them all
            bound[pairs[:, 0], pairs[:, 1]] = -np.inf
            bound[pairs[:, 1], pairs[:, 0]] = -np.inf
    flat_bound = bound.ravel()

    def exact(flat: np.ndarray) -> np.ndarray:
        a, b = np.divmod(flat, k)
        out = np.zeros(flat.size)
        for w, mu, _, V, K, kd, u in parts:
            Vd = V[:, a] - V[:, b]
            dv = kd[a] + kd[b] - 2.0 * K[idx[a], idx[b]] - np.einsum("ij,ij->j", Vd, Vd)
            e = _expected_max_given(mu[a], mu[b], np.maximum(dv, 0.0))
            out += w * (e + 0.5 * exploit * (u[a] + u[b]))
        return out

    # a first exact score: the pair of largest bound in each row
    rows = np.flatnonzero(np.max(bound, axis=1) > -np.inf)
    best = float(np.max(exact(rows * k + np.argmax(bound[rows], axis=1))))
    sel = np.flatnonzero(flat_bound >= best - tol * max(1.0, abs(best)))
    sel = sel[sel // k < sel % k]  # a < b
    score = exact(sel)
    best = max(best, float(score.max()))
    keep = score >= best - tol * max(1.0, abs(best))
    sel, score = sel[keep], score[keep]
    a, b = np.divmod(sel, k)
    return idx[a], idx[b], score


def _expected_max_given(mu_a: np.ndarray, mu_b: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """``E[max(f_a, f_b)]`` from the means and the variance ``s2`` of ``f_a - f_b``."""
    from scipy.special import ndtr

    s = np.sqrt(s2)
    diff = mu_a - mu_b
    pos = s > 1e-12 * np.maximum(1.0, np.abs(diff))
    z = np.where(pos, diff / np.where(pos, s, 1.0), 0.0)
    smooth = mu_b + diff * ndtr(z) + s * _INV_SQRT_2PI * np.exp(-0.5 * z * z)
    return np.where(pos, smooth, np.maximum(mu_a, mu_b))
