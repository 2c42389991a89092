"""The expert's likelihood-ratio confidence set (COBOL, Sec. 3.2, App. B.3, App. F).

cvxpy (Clarabel) is the independent oracle for (37), (38) and (39).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit

from boloop.errors import InvalidInputError
from boloop.gp.kernels import SquaredExponential
from boloop.gp.likelihood_ratio import LikelihoodRatioModel, maximum_likelihood

cp = pytest.importorskip("cvxpy")


def _model(rng, n, d, B=2.0, c=0.1, ls=0.3, jitter=1e-6):
    X = rng.random((n, d))
    r = (rng.random(n) < 0.5).astype(float)
    k = SquaredExponential(lengthscale=np.full(d, ls), variance=1.0)
    m = LikelihoodRatioModel(k, norm_bound=B, alpha_coefficient=c, jitter=jitter, adapt=False)
    m.set_data(X, r)
    return m


def _oracle_bound(m, x, upper):
    """(38)/(39) in the (Z, z) variables with the explicit (n+1)-point kernel matrix."""
    Xa = np.vstack([m.X, x[None, :]])
    K = m.kernel.k(Xa) + m.jitter * np.eye(Xa.shape[0])
    Lfull = np.linalg.cholesky(K)
    n = m.n
    v = cp.Variable(n + 1)  # whitened values of (Z, z)
    Zz = Lfull @ v
    ll = m.rejected @ Zz[:n] - cp.sum(cp.logistic(Zz[:n]))
    cons = [cp.norm(v, 2) <= m.norm_bound, ll >= m.loglik_mle - m.alpha1]
    obj = cp.Maximize(Zz[n]) if upper else cp.Minimize(Zz[n])
    prob = cp.Problem(obj, cons)
    prob.solve(solver="CLARABEL")
    return prob.value


def _oracle_mle(m):
    K = m.kernel.k(m.X) + m.jitter * np.eye(m.n)
    L = np.linalg.cholesky(K)
    w = cp.Variable(m.n)
    Z = L @ w
    prob = cp.Problem(
        cp.Maximize(m.rejected @ Z - cp.sum(cp.logistic(Z))), [cp.norm(w, 2) <= m.norm_bound]
    )
    prob.solve(solver="CLARABEL")
    return prob.value


def test_schur_identity():
    """[Z;z]^T K_{n+1}^{-1} [Z;z] = Z^T K^{-1} Z + (z - k^T K^{-1} Z)^2 / s^2 (rel. 1e-6)."""
    rng = np.random.default_rng(0)
    n, d, jit = 20, 3, 1e-6
    k = SquaredExponential(lengthscale=0.5, variance=1.0)
    X = rng.random((n, d))
    x = rng.random((1, d))
    Z = rng.standard_normal(n)
    z = 0.7
    Kn1 = k.k(np.vstack([X, x])) + jit * np.eye(n + 1)
    lhs = np.concatenate([Z, [z]]) @ np.linalg.solve(Kn1, np.concatenate([Z, [z]]))
    m = LikelihoodRatioModel(k, jitter=jit, adapt=False)
    m.set_data(X, np.zeros(n))
    A, s = m.directions(x)
    w = np.linalg.solve(m.cholesky, Z)
    rhs = w @ w + (z - A[0] @ w) ** 2 / s[0] ** 2
    assert abs(lhs - rhs) <= 1e-6 * abs(lhs)


def test_no_labels_bounds_are_the_ball():
    k = SquaredExponential(lengthscale=0.2, variance=1.0)
    m = LikelihoodRatioModel(k, norm_bound=3.0, adapt=False, jitter=0.0)
    X = np.random.default_rng(1).random((7, 2))
    lo, up = m.bounds(X)
    expect = 3.0 * np.sqrt(k.diag(X))
    np.testing.assert_allclose(up, expect, atol=1e-6)
    np.testing.assert_allclose(lo, -expect, atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_mle_and_bounds_match_cvxpy(seed):
    """Exact solver vs Clarabel: MLE value and both bounds to 1e-5 absolute."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 26))
    d = int(rng.integers(1, 4))
    m = _model(
        rng, n, d, B=float(rng.choice([1.0, 2.0, 4.0, 16.0])), c=float(rng.choice([0.01, 0.1, 1.0]))
    )
    assert abs(m.loglik_mle - _oracle_mle(m)) <= 1e-5
    Xq = np.vstack([rng.random((5, d)), m.X[:1]])
    lo, up = m.bounds(Xq)
    for i, x in enumerate(Xq):
        assert abs(lo[i] - _oracle_bound(m, x, upper=False)) <= 1e-5
        assert abs(up[i] - _oracle_bound(m, x, upper=True)) <= 1e-5


def test_ordering_and_relaxation():
    rng = np.random.default_rng(5)
    m = _model(rng, 30, 2, B=4.0, c=0.05)
    X = rng.random((50, 2))
    lo, up = m.bounds(X)
    g = m.mle_predict(X)
    assert np.all(lo <= g + 1e-9) and np.all(g <= up + 1e-9)
    rlo, rup = m.relaxed_bounds(X)
    assert np.all(rlo <= lo + 1e-9) and np.all(rup >= up - 1e-9)
    # batch results equal one-at-a-time results
    lo1, up1 = m.bounds(X[:3])
    for i in range(3):
        a, b = m.bounds(X[i : i + 1])
        assert abs(a[0] - lo1[i]) < 1e-8 and abs(b[0] - up1[i]) < 1e-8


def test_width_monotone_in_alpha_and_B_with_fixed_loglik():
    rng = np.random.default_rng(6)
    m = _model(rng, 15, 2, B=2.0, c=0.05)
    X = rng.random((10, 2))
    from boloop.gp.likelihood_ratio import support_values

    A, s = m.directions(X)
    mle = m.mle
    widths = []
    for alpha, B in [(0.05, 2.0), (0.2, 2.0), (0.2, 3.0)]:
        up = support_values(m.cholesky, m.rejected, mle, mle.loglik - alpha, B, A, s)
        lo = -support_values(m.cholesky, m.rejected, mle, mle.loglik - alpha, B, -A, s)
        widths.append(up - lo)
    assert np.all(widths[1] >= widths[0] - 1e-8)
    assert np.all(widths[2] >= widths[1] - 1e-8)
    # l*(B) non-decreasing in B
    lls = [maximum_likelihood(m.cholesky, m.rejected, B).loglik for B in (0.5, 1, 2, 4, 8)]
    assert all(b >= a - 1e-10 for a, b in zip(lls, lls[1:]))


def test_collapse_at_a_training_point():
    rng = np.random.default_rng(7)
    m = _model(rng, 12, 2, B=2.0, c=1e-7)
    lo, up = m.bounds(m.X[:3])
    np.testing.assert_allclose(lo, m.mle.Z[:3], atol=1e-3)
    np.testing.assert_allclose(up, m.mle.Z[:3], atol=1e-3)


def test_bounds_contain_the_true_g():
    """Coverage on synthetic instances: g in the RKHS ball, labels ~ Bernoulli(S(g)).

    With the practical alpha_1 = c sqrt(n+1) the guarantee needs c large enough; with c = 1 and
    the true B the bounds must contain g at >= 95% of 200 test points (5 instances)."""
    rng = np.random.default_rng(8)
    k = SquaredExponential(lengthscale=0.25, variance=1.0)
    hits = total = 0
    for _ in range(5):
        centres = rng.random((6, 2))
        coef = rng.standard_normal(6)
        Kc = k.k(centres)
        norm = math.sqrt(coef @ Kc @ coef)
        B = 3.0
        coef *= B / norm * 0.9

        def g(X, centres=centres, coef=coef):
            return k.k(X, centres) @ coef

        X = rng.random((40, 2))
        r = (rng.random(40) < expit(g(X))).astype(float)
        m = LikelihoodRatioModel(k, norm_bound=B, alpha_coefficient=1.0, adapt=False)
        m.set_data(X, r)
        Xt = rng.random((40, 2))
        lo, up = m.bounds(Xt)
        gt = g(Xt)
        hits += int(np.sum((lo <= gt + 1e-9) & (gt <= up + 1e-9)))
        total += 40
    assert hits / total >= 0.95


def test_doubling_fires_on_separable_labels_and_not_on_coin_flips():
    k = SquaredExponential(lengthscale=0.1, variance=1.0)
    # separable: well-separated points with alternating labels -> larger B fits much better
    X = np.linspace(0, 1, 9)[:, None]
    r = np.arange(9) % 2
    m = LikelihoodRatioModel(k, norm_bound=1.0, alpha_coefficient=0.01)
    m.set_data(X, r, pretrain=True)
    assert m.norm_bound > 1.0
    assert math.log2(m.norm_bound) == int(math.log2(m.norm_bound))  # B in {B0 2^k}
    assert m.alpha_coefficient == pytest.approx(0.01 * m.norm_bound)
    # coin flips at one point (5 accepts, 5 rejects): the MLE is Z = 0 for every B, so the
    # test (run when n % period == 0, here at n = 10) does not fire
    m2 = LikelihoodRatioModel(k, norm_bound=1.0, alpha_coefficient=0.01, doubling_period=10)
    fired = [m2.add([0.5], i % 2) for i in range(10)]
    assert not any(fired) and m2.norm_bound == 1.0
    assert abs(m2.mle.Z).max() < 1e-2  # duplicates differ only through the jitter
    # online rule: the test runs only when n % period == 0, and B never decreases
    m3 = LikelihoodRatioModel(k, norm_bound=1.0, alpha_coefficient=0.01, doubling_period=3)
    history = []
    for i in range(9):
        fired = m3.add(X[i], int(r[i]))
        if (i + 1) % 3 != 0:
            assert not fired
        history.append(m3.norm_bound)
    assert all(b >= a for a, b in zip(history, history[1:]))
    assert history[-1] > 1.0


def test_bad_input_changes_nothing():
    k = SquaredExponential(lengthscale=0.3, variance=1.0)
    m = LikelihoodRatioModel(k, adapt=False)
    m.set_data(np.array([[0.1, 0.2]]), [1])
    with pytest.raises(InvalidInputError):
        m.add([0.3, 0.3], 2)
    with pytest.raises(InvalidInputError):
        m.add([0.3, np.nan], 1)
    assert m.n == 1
    with pytest.raises(InvalidInputError):
        LikelihoodRatioModel(k, norm_bound=-1)


@pytest.mark.parametrize("seed", [0, 1])
def test_boxed_labelled_values_match_cvxpy_with_the_hard_box(seed):
    """value_bound=3 boxes the latent values at the labelled points inside (37)-(39): the MLE and
    both bounds equal Clarabel's solution of the problems with the hard constraint |Z_i| <= 3 to
    0.1 (the log-barrier's error at weight 1e-3; observed: MLE value 0.04-0.08, bounds
    0.03-0.05), and the box matters here (the unboxed bounds differ by more than 0.3)."""
    rng = np.random.default_rng(seed)
    n, d, B = 20, 2, 16.0
    X = rng.random((n, d))
    r = (X[:, 0] > 0.5).astype(float)
    flip = rng.random(n) < 0.1
    r[flip] = 1 - r[flip]
    k = SquaredExponential(lengthscale=np.full(d, 0.3), variance=1.0)
    m = LikelihoodRatioModel(k, norm_bound=B, alpha_coefficient=0.1, adapt=False, value_bound=3.0)
    m.set_data(X, r)
    free = LikelihoodRatioModel(k, norm_bound=B, alpha_coefficient=0.1, adapt=False)
    free.set_data(X, r)
    L = np.linalg.cholesky(k.k(X) + m.jitter * np.eye(n))
    w = cp.Variable(n)
    Z = L @ w
    prob = cp.Problem(
        cp.Maximize(r @ Z - cp.sum(cp.logistic(Z))), [cp.norm(w, 2) <= B, cp.abs(Z) <= 3]
    )
    prob.solve(solver="CLARABEL")
    ll_star = prob.value
    assert abs(m.loglik_mle - ll_star) <= 0.1
    Xq = np.vstack([rng.random((4, d)), X[:2]])
    lo, up = m.bounds(Xq)
    lo_free, up_free = free.bounds(Xq)
    gap = 0.0
    for i, x in enumerate(Xq):
        Xa = np.vstack([X, x[None, :]])
        Lf = np.linalg.cholesky(k.k(Xa) + m.jitter * np.eye(n + 1))
        v = cp.Variable(n + 1)
        Zz = Lf @ v
        cons = [
            cp.norm(v, 2) <= B,
            r @ Zz[:n] - cp.sum(cp.logistic(Zz[:n])) >= ll_star - m.alpha1,
            cp.abs(Zz[:n]) <= 3,
        ]
        for sense, ours in ((cp.Minimize, lo[i]), (cp.Maximize, up[i])):
            pr = cp.Problem(sense(Zz[n]), cons)
            pr.solve(solver="CLARABEL")
            assert abs(ours - np.clip(pr.value, -3, 3)) <= 0.1, (i, ours, pr.value)
        gap = max(
            gap, abs(np.clip(lo_free[i], -3, 3) - lo[i]), abs(np.clip(up_free[i], -3, 3) - up[i])
        )
    assert gap > 0.3
