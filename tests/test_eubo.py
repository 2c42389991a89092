"""EUBO on the Laplace utility posterior (issue 17): the model against direct optimisation and
dense linear algebra, the closed-form expected maximum against Monte Carlo and quadrature, and
the policy's behaviour."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, optimize, stats
from scipy.special import log_expit

import boloop.problems as problems
from boloop.algorithms import make_policy
from boloop.algorithms.preference import EUBO
from boloop.errors import InvalidInputError
from boloop.gp.kernels import SquaredExponential
from boloop.gp.utility_laplace import UtilityPosterior, eubo_all_pairs, expected_max
from boloop.simulate import simulate


def _problem(seed=0, m=15, n=30):
    rng = np.random.default_rng(seed)
    X = rng.random((m, 1))
    # well conditioned (the oracle below inverts K): short length-scale plus a nugget
    K = 2.0 * SquaredExponential(0.1, 1.0).k(X, X) + 0.05 * np.eye(m)
    a = rng.integers(0, m, n)
    b = (a + 1 + rng.integers(0, m - 1, n)) % m
    u = np.sin(6 * X[:, 0])
    win = rng.random(n) < 1 / (1 + np.exp(-(u[a] - u[b])))
    return K, np.where(win, a, b), np.where(win, b, a)


def test_laplace_mode_covariance_and_evidence_match_dense_formulas():
    K, w, los = _problem()
    post = UtilityPosterior(K, w, los)
    U = post.U
    KUU = K[np.ix_(U, U)]
    Kinv = np.linalg.inv(KUU)
    pos = {int(o): k for k, o in enumerate(U)}
    wi = np.array([pos[int(v)] for v in w])
    li = np.array([pos[int(v)] for v in los])

    def neg_psi(f):
        return -(np.sum(log_expit(f[wi] - f[li])) - 0.5 * f @ Kinv @ f)

    res = optimize.minimize(neg_psi, np.zeros(U.size), method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(post.mean(U), res.x, atol=1e-5)
    # covariance on U: (K^-1 + W)^-1; elsewhere the GP conditional (R&W eq. 3.24)
    f = post.mean(U)
    p = 1 / (1 + np.exp(-(f[wi] - f[li])))
    D = np.zeros((w.size, U.size))
    D[np.arange(w.size), wi] += 1
    D[np.arange(w.size), li] -= 1
    W = D.T @ np.diag(p * (1 - p)) @ D
    S_U = np.linalg.inv(Kinv + W)
    np.testing.assert_allclose(post.covariance(U), S_U, atol=1e-8)
    allc = np.arange(K.shape[0])
    KxU = K[np.ix_(allc, U)]
    A = KxU @ Kinv
    cov = K - A @ KUU @ A.T + A @ S_U @ A.T
    np.testing.assert_allclose(post.covariance(), cov, atol=1e-7)
    np.testing.assert_allclose(post.mean(), A @ f, atol=1e-6)
    # evidence, eq. 3.32 via log det K + log det(K^-1 + W) = log det(I + W K)
    ld = np.linalg.slogdet(KUU)[1] + np.linalg.slogdet(Kinv + W)[1]
    ev = np.sum(log_expit(f[wi] - f[li])) - 0.5 * f @ Kinv @ f - 0.5 * ld
    assert post.log_evidence == pytest.approx(ev, abs=1e-6)


def test_no_duels_is_the_prior():
    K, _, _ = _problem()
    post = UtilityPosterior(K, np.array([], dtype=int), np.array([], dtype=int))
    np.testing.assert_array_equal(post.mean(), np.zeros(K.shape[0]))
    np.testing.assert_array_equal(post.covariance(), K)
    with pytest.raises(InvalidInputError):
        UtilityPosterior(K, np.array([0]), np.array([K.shape[0]]))


@pytest.mark.parametrize(
    "mu_a,mu_b,va,vb,c",
    [(0.3, -0.2, 1.0, 0.5, 0.2), (1.0, 1.0, 0.3, 0.3, -0.1), (2, -1, 1, 1, 0.9)],
)
def test_expected_max_against_quadrature_and_monte_carlo(mu_a, mu_b, va, vb, c):
    cov = np.array([[va, c], [c, vb]])
    got = float(expected_max(np.array(mu_a), np.array(mu_b), np.array(va), np.array(vb), c))
    # quadrature over the difference d = f_a - f_b: max = f_b + max(d, 0)
    s = np.sqrt(va + vb - 2 * c)
    quad = (
        mu_b
        + integrate.quad(lambda d: d * stats.norm.pdf(d, mu_a - mu_b, s), 0, np.inf, epsabs=1e-12)[
            0
        ]
    )
    assert got == pytest.approx(quad, abs=1e-9)
    rng = np.random.default_rng(0)
    z = rng.multivariate_normal([mu_a, mu_b], cov, size=400_000)
    mc = np.max(z, axis=1)
    assert abs(got - mc.mean()) < 4 * mc.std() / np.sqrt(mc.size)


def test_eubo_all_pairs_is_symmetric_and_never_a_self_duel():
    K, w, los = _problem(1)
    post = UtilityPosterior(K, w, los)
    E = eubo_all_pairs(post.mean(), post.covariance())
    np.testing.assert_allclose(E, E.T)
    assert np.all(np.isneginf(np.diag(E)))
    # a perfectly known pair: E[max] is the larger mean
    assert expected_max(np.array(1.0), np.array(0.0), np.array(0.0), np.array(0.0), 0.0) == 1.0


def test_eubo_policy_duels_distinct_pairs_and_finds_the_best_option():
    prob = problems.get("preference/ackley")
    trace = simulate("eubo", prob, 60, seed=0, kernel="fit")
    pairs = {tuple(sorted(map(tuple, r["points"]))) for r in trace.records}
    assert len(pairs) > 10  # it does not lock onto one pair
    first = np.mean([r["metrics"]["regret"] for r in trace.records[:10]])
    last = np.mean([r["metrics"]["regret"] for r in trace.records[-10:]])
    assert last < first


def test_eubo_options_are_checked_and_seed_reproduces():
    prob = problems.get("preference/toy")
    with pytest.raises(InvalidInputError):
        EUBO(prob.space.points, variances=(0.0,))
    a = simulate("eubo", prob, 15, seed=3, kernel="fit")
    b = simulate("eubo", prob, 15, seed=3, kernel="fit")
    assert [r["points"] for r in a.records] == [r["points"] for r in b.records]
    assert make_policy("eubo", prob, 0).describe()["method"] == "eubo"
