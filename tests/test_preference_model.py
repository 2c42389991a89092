"""Kernel logistic regression on duels and the dueling kernel (boloop.gp.preference).

Checks the identities of the spec's acceptance tests 1-5 (shared/specs/bohf.md Sec. 9) against
closed forms and independent solvers (scipy L-BFGS, dense linear algebra).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import expit

from boloop.errors import InvalidInputError, NotFittedError
from boloop.gp import Matern, SquaredExponential
from boloop.gp.preference import (
    DuelCovariance,
    KernelLogisticDuels,
    dueling_gram,
    dueling_kernel,
)


def _arms(m: int = 40) -> np.ndarray:
    return np.linspace(0.0, 1.0, m)[:, None]


def _data(m: int = 40, n: int = 150, seed: int = 0):
    X = _arms(m)
    K = SquaredExponential(0.1).k(X, X)
    rng = np.random.default_rng(seed)
    f = 3 * np.sin(6 * X[:, 0])
    P = rng.integers(0, m, (n, 2))
    y = (rng.random(n) < expit(f[P[:, 0]] - f[P[:, 1]])).astype(int)
    return X, K, f, P, y


# -- 1. dueling kernel --------------------------------------------------------------------------------
def test_dueling_kernel_identities():
    X = np.random.default_rng(1).random((15, 2))
    kern = Matern(nu=2.5, lengthscale=0.3)
    K = kern.k(X, X)
    rng = np.random.default_rng(2)
    P = rng.integers(0, 15, (25, 2))
    Q = rng.integers(0, 15, (7, 2))
    A = np.zeros((25, 15))
    A[np.arange(25), P[:, 0]] += 1
    A[np.arange(25), P[:, 1]] -= 1
    B = np.zeros((7, 15))
    B[np.arange(7), Q[:, 0]] += 1
    B[np.arange(7), Q[:, 1]] -= 1
    KK = dueling_gram(K, P)
    np.testing.assert_allclose(KK, A @ K @ A.T, atol=1e-12)
    np.testing.assert_allclose(dueling_gram(K, P, Q), A @ K @ B.T, atol=1e-12)
    # the kernel form on points agrees with the index form
    np.testing.assert_allclose(
        dueling_kernel(kern, X[P[:, 0]], X[P[:, 1]], X[Q[:, 0]], X[Q[:, 1]]),
        dueling_gram(K, P, Q),
        atol=1e-12,
    )
    np.testing.assert_allclose(KK, KK.T, atol=1e-14)
    assert np.linalg.eigvalsh(KK).min() >= -1e-10
    # kk((x, x), .) = 0
    same = np.array([[3, 3], [7, 7]])
    assert np.max(np.abs(dueling_gram(K, same, P))) < 1e-14
    # kk(z, z) = 2 - 2 k(x, x') for a unit-variance stationary kernel
    np.testing.assert_allclose(np.diag(KK), 2 - 2 * K[P[:, 0], P[:, 1]], atol=1e-12)


# -- 2. antisymmetry ----------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 60), st.sampled_from(["rkhs", "l2_coef"]))
def test_antisymmetry_after_fit(seed, n, reg):
    X, K, f, P, y = _data(m=12, n=n, seed=seed)
    model = KernelLogisticDuels(K, 0.05, regularizer=reg)
    model.add_many(P, y)
    model.fit()
    i, j = np.meshgrid(np.arange(12), np.arange(12), indexing="ij")
    H = model.h(i, j)
    np.testing.assert_allclose(H, -H.T, atol=1e-9)
    assert np.all(np.diag(H) == 0.0)
    Pm = model.preference_matrix()
    np.testing.assert_allclose(Pm + Pm.T, 1.0, atol=1e-12)
    cov = DuelCovariance(K, 0.05)
    for a, b in P:
        cov.update(a, b)
    V = cov.variance_matrix()
    np.testing.assert_allclose(V, V.T, atol=1e-9)
    assert np.all(np.diag(V) == 0.0)


# -- 3. variance: rank-one updates equal the batch formula (eq. 10) --------------------------------
def test_rank_one_variance_equals_batch_eq10():
    X, K, _, _, _ = _data(m=30)
    rng = np.random.default_rng(5)
    Q = rng.integers(0, 30, (40, 2))
    Q = Q[Q[:, 0] != Q[:, 1]]
    rho = 0.05 * 7.0
    cov = DuelCovariance(K, rho)
    allp = np.array([(i, j) for i in range(30) for j in range(30)])
    prior = np.diag(dueling_gram(K, allp))
    np.testing.assert_allclose(cov.variance(allp[:, 0], allp[:, 1]), prior, atol=1e-12)
    prev = prior
    for n, (a, b) in enumerate(Q, start=1):
        cov.update(a, b)
        now = cov.variance(allp[:, 0], allp[:, 1])
        assert np.all(now <= prev + 1e-12)  # sigma_t^2 non-increasing in t
        prev = now
        if n in (1, 10, len(Q)):
            KK = dueling_gram(K, Q[:n])
            kz = dueling_gram(K, allp, Q[:n])
            L = np.linalg.cholesky(KK + rho * np.eye(n))
            W = np.linalg.solve(L, kz.T)
            batch = prior - np.sum(W * W, axis=0)
            np.testing.assert_allclose(now, np.maximum(batch, 0.0), atol=1e-9)


# -- 4. information gain -------------------------------------------------------------------------------
@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.01, 5.0))
def test_information_gain_identity(seed, rho):
    X, K, _, _, _ = _data(m=20)
    Q = np.random.default_rng(seed).integers(0, 20, (25, 2))
    Q = Q[Q[:, 0] != Q[:, 1]]
    cov = DuelCovariance(K, rho)
    for a, b in Q:
        cov.update(a, b)
    KK = dueling_gram(K, Q)
    _, logdet = np.linalg.slogdet(np.eye(len(Q)) + KK / rho)
    assert cov.information_gain == pytest.approx(0.5 * logdet, abs=1e-8)


def test_self_duel_is_a_no_op():
    X, K, _, _, _ = _data(m=10)
    cov = DuelCovariance(K, 0.05)
    S0 = cov.S.copy()
    assert cov.update(4, 4) == 0.0
    assert np.array_equal(cov.S, S0) and cov.information_gain == 0.0
    model = KernelLogisticDuels(K)
    assert model.add(4, 4, 1) is False
    assert model.n_duels == 0 and model.version == 0


# -- 5. MLE optimality -----------------------------------------------------------------------------------
@pytest.mark.parametrize("normalize", [False, True])
def test_rkhs_fit_first_order_optimality_and_lbfgs(normalize):
    X, K, f, P, y = _data()
    model = KernelLogisticDuels(K, 0.05, normalize_loss=normalize)
    model.add_many(P, y)
    model.fit()
    assert model.gradient_norm < 1e-8
    assert np.linalg.norm(model.gradient()) < 1e-8
    # eq. 38-39 in function form: lambda h_t + sum_i (mu(h_t(z_i)) - y_i) kk(z_i, .) = 0, i.e. on
    # the arms lambda f_t + K_X A^T (c mu - k) = 0 (the fitted f_t has no null-space component)
    pairs, k, c = model.pairs, model.wins, model.counts
    s = 1.0 / model.n_duels if normalize else 1.0
    r = s * (c * expit(model.h(pairs[:, 0], pairs[:, 1])) - k)
    at = np.zeros(K.shape[0])
    np.add.at(at, pairs[:, 0], r)
    np.add.at(at, pairs[:, 1], -r)
    resid = 0.05 * model.utility + K @ at
    assert np.max(np.abs(resid)) < 1e-6
    # independent solver of the same objective in the same parametrisation
    Phi = model.features()
    Psi = Phi[pairs[:, 0]] - Phi[pairs[:, 1]]

    def F(v):
        u = Psi @ v
        return (
            s * np.sum(c * np.logaddexp(0, u) - k * u) + 0.025 * v @ v,
            s * Psi.T @ (c * expit(u) - k) + 0.05 * v,
        )

    res = minimize(
        F,
        np.zeros(Phi.shape[1]),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 50_000, "gtol": 1e-12, "ftol": 1e-16},
    )
    assert np.max(np.abs(Phi @ res.x - model.utility)) < 1e-5


def test_l2_coef_fit_is_stationary_and_matches_lbfgs():
    X, K, f, P, y = _data(m=25, n=60)
    model = KernelLogisticDuels(K, 0.05, regularizer="l2_coef")
    model.add_many(P, y)
    model.fit()
    assert model.gradient_norm < 1e-8
    # eq. 9 as printed, on the raw (unmerged) duels with one theta per duel
    Praw = P[P[:, 0] != P[:, 1]]
    yraw = y[P[:, 0] != P[:, 1]]
    KK = dueling_gram(K, Praw)

    def F(t):
        u = KK @ t
        return (
            np.sum(np.logaddexp(0, u) - yraw * u) + 0.025 * t @ t,
            KK @ (expit(u) - yraw) + 0.05 * t,
        )

    res = minimize(
        F,
        np.zeros(len(Praw)),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 100_000, "gtol": 1e-10, "ftol": 1e-16},
    )
    h_ref = KK @ res.x
    h_ours = model.h(Praw[:, 0], Praw[:, 1])
    assert np.max(np.abs(h_ref - h_ours)) < 1e-3  # theta-space L-BFGS is ill-conditioned


def test_regularisation_limits():
    X, K, f, P, y = _data(m=30, n=100)
    big = KernelLogisticDuels(K, 1e6)
    big.add_many(P, y)
    big.fit()
    assert np.max(np.abs(big.utility)) < 1e-3
    # more data, same lambda: mu(h_t) approaches mu(h) on average
    errs = []
    for n in (50, 400, 3200):
        X, K, f, P, y = _data(m=30, n=n, seed=3)
        mdl = KernelLogisticDuels(K, 0.05)
        mdl.add_many(P, y)
        mdl.fit()
        i, j = np.triu_indices(30, 1)
        errs.append(np.mean(np.abs(expit(mdl.h(i, j)) - expit(f[i] - f[j]))))
    assert errs[0] > errs[1] > errs[2]


def test_repeated_and_reversed_pairs_merge_exactly():
    X, K, _, _, _ = _data(m=15)
    a = KernelLogisticDuels(K, 0.05)
    for _ in range(3):
        a.add(2, 9, 1)
    a.add(9, 2, 1)  # reversed: 9 beat 2, i.e. (2, 9) with y = 0
    assert a.pairs.tolist() == [[2, 9]] and a.wins.tolist() == [3.0] and a.counts.tolist() == [4.0]
    a.fit()
    # one pair only: the fitted probability of 2 over 9 is shrunk towards 1/2 from 3/4
    p = float(expit(a.h(2, 9)))
    assert 0.5 < p < 0.75
    # singular dueling Gram matrix (repeated pair, l2_coef) does not crash
    b = KernelLogisticDuels(K, 0.05, regularizer="l2_coef")
    for _ in range(5):
        b.add(2, 9, 1)
    b.add(9, 2, 1)
    b.fit()
    assert b.gradient_norm < 1e-8


def test_bad_input_changes_nothing():
    X, K, _, P, y = _data(m=10, n=5)
    model = KernelLogisticDuels(K)
    model.add(1, 2, 1)
    before = (model.pairs.copy(), model.wins.copy(), model.n_duels, model.version)
    for args in [(1, 2, 2), (1, 2, 0.5), (1, 10, 1), (-1, 2, 0), (1.5, 2, 0), (1, 2, "1")]:
        with pytest.raises(InvalidInputError):
            model.add(*args)
    with pytest.raises(InvalidInputError):
        model.add_many([[1, 2], [3, 4]], [1, 3])
    after = (model.pairs, model.wins, model.n_duels, model.version)
    assert np.array_equal(before[0], after[0]) and np.array_equal(before[1], after[1])
    assert before[2:] == after[2:]
    with pytest.raises(NotFittedError):
        model.h(0, 1)
    bad = K.copy()
    bad[0, 1] = np.nan
    with pytest.raises(InvalidInputError):
        KernelLogisticDuels(bad)
    with pytest.raises(InvalidInputError):
        KernelLogisticDuels(K, lam=0.0)
    with pytest.raises(InvalidInputError):
        KernelLogisticDuels(K, regularizer="l1")
    with pytest.raises(InvalidInputError):
        DuelCovariance(K, rho=-1.0)


def test_laplace_evidence_prefers_a_sensible_lengthscale():
    """Data from a smooth utility (length-scale ~0.15): the evidence of l = 0.2 beats l = 0.01
    (nearly independent arms) by a wide margin (> 5 nats)."""
    X = _arms(40)
    rng = np.random.default_rng(0)
    f = 3 * np.sin(6 * X[:, 0])
    P = rng.integers(0, 40, (300, 2))
    y = (rng.random(300) < expit(f[P[:, 0]] - f[P[:, 1]])).astype(int)
    ev = {}
    for ls in (0.01, 0.2):
        m = KernelLogisticDuels(SquaredExponential(ls).k(X, X), 0.05)
        m.add_many(P, y)
        ev[ls] = m.laplace_log_evidence()
    assert ev[0.2] > ev[0.01] + 5.0
