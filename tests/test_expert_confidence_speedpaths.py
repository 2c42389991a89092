"""Fast paths of the expert confidence set (issue 7): the quadratic-model start and the batched
Woodbury Newton method of ``support_values`` against the independent per-direction dual method.

The cvxpy tests in test_expert_confidence.py use n <= 25 labels; these use n = 50 in 4-D (the
benchmark's size), where the batched Newton method does all the work.
"""

from __future__ import annotations

import numpy as np
import pytest

import boloop.gp.likelihood_ratio as lr
import boloop.gp.likelihood_ratio_support as lr_support
from boloop.gp.kernels import SquaredExponential
from boloop.gp.likelihood_ratio import LikelihoodRatioModel, support_values


def _model(seed: int, n: int = 50, d: int = 4, B: float = 8.0, c: float = 0.2):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    r = (rng.random(n) < 0.5).astype(float)
    k = SquaredExponential(lengthscale=np.full(d, 0.3), variance=1.0)
    m = LikelihoodRatioModel(k, norm_bound=B, alpha_coefficient=c, adapt=False)
    m.set_data(X, r)
    return m, rng


@pytest.mark.parametrize("seed", [0, 1])
def test_batched_newton_matches_the_dual_method(seed, monkeypatch):
    """Both bounds at 12 points (6 random, 3 near and 3 at labelled points) equal the safeguarded
    dual method to 1e-7, and the batched Newton method converged for every direction itself."""
    m, rng = _model(seed)
    Xq = np.vstack([rng.random((6, 4)), m.X[:3] + 1e-3, m.X[3:6]])
    A, s = m.directions(Xq)
    mle = m.mle
    ll_min = mle.loglik - m.alpha1
    dirs = np.vstack([-A, A])
    ss = np.concatenate([s, s])
    calls = []
    real_dual = lr.support_value_dual

    def counting_dual(*args, **kwargs):
        calls.append(1)
        return real_dual(*args, **kwargs)

    # patched where the batched solver looks it up (its module), not at the re-export in lr
    monkeypatch.setattr(lr_support, "support_value_dual", counting_dual)
    fast = support_values(m.cholesky, m.rejected, mle, ll_min, m.norm_bound, dirs, ss)
    assert not calls  # no fallback was needed
    s_floor = np.maximum(ss, lr.S_MIN)
    for j in range(dirs.shape[0]):
        slow = real_dual(m.cholesky, m.rejected, mle, ll_min, m.norm_bound, dirs[j], float(s_floor[j]))
        assert abs(fast[j] - slow) <= 1e-7 * max(1.0, abs(slow))


def test_quadratic_model_start_solves_the_model():
    """The start is the model problem's KKT point: ball and model-likelihood constraints active to
    the start's tolerance (1e-9: |F1| <= 1e-9 B^2, i.e. 2e-9 relative on ||w||^2 + u^2, and
    |F2| <= 1e-9 (1 + |ll_min|); asserted with 1.5x margin) with positive multipliers, and
    stationarity of the model Lagrangian."""
    m, rng = _model(3)
    A, s = m.directions(rng.random((20, 4)))
    mle = m.mle
    ll_min = mle.loglik - m.alpha1
    B = m.norm_bound
    s = np.maximum(s, lr.S_MIN)
    mu, nu, W = lr.model_start(m.cholesky, m.rejected, mle, ll_min, B, A, s)
    assert np.all(mu > 0) and np.all(nu > 0)
    from scipy.special import expit

    p = expit(mle.Z)
    H = (m.cholesky.T * (p * (1 - p))) @ m.cholesky
    g = m.cholesky.T @ (m.rejected - p)
    D = W - mle.w
    q = mle.loglik + D @ g - 0.5 * np.einsum("ij,jk,ik->i", D, H, D)
    np.testing.assert_allclose(np.einsum("ij,ij->i", W, W) + (s / mu) ** 2, B * B, rtol=3e-9)
    np.testing.assert_allclose(q, ll_min, rtol=0, atol=1.5e-9 * (1 + abs(ll_min)))
    stat = A + nu[:, None] * (g - D @ H) - mu[:, None] * W
    assert np.max(np.abs(stat)) <= 1e-7 * (1 + np.max(np.abs(A)))


@pytest.mark.parametrize("strided", [False, True])
def test_newton_row_solves_match_a_dense_solve(strided):
    """The Woodbury solves of the batched Newton method, ``(mu_j I + diag(S_j) K diag(S_j)) x =
    b``, against numpy's dense solve: with the contiguous right-hand sides the method uses
    (solved in place by LAPACK) and with strided ones (LAPACK works on a copy, written back)."""
    rng = np.random.default_rng(3)
    m, k, n = 5, 3, 9
    F = rng.standard_normal((n, n))
    K = F @ F.T + 0.1 * np.eye(n)
    S = rng.random((m, n)) + 0.1
    mu = rng.random(m) + 0.5
    b = rng.standard_normal((m, k, n))
    if strided:
        rhs = np.zeros((m, k, 2 * n))[:, :, ::2]
        rhs[...] = b
    else:
        rhs = b.copy()
    assert lr._solve_spd_rows(K, S, mu, rhs)
    for j in range(m):
        M = mu[j] * np.eye(n) + S[j][:, None] * K * S[j][None, :]
        assert np.allclose(rhs[j], np.linalg.solve(M, b[j].T).T, rtol=1e-10, atol=1e-12)
    # not positive definite: reported, not solved
    assert not lr._solve_spd_rows(-K, S, mu * 0.0, b.copy())
