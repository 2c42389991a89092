"""Expectation propagation for the utility posterior (issue 17): the site moments against
quadrature, the fixed point's moment matching, the evidence's stable form against R&W eq. 3.65
and against the exact evidence of small problems (numerical integration), and the policy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import boloop.problems as problems
from boloop.algorithms.preference import EUBO
from boloop.errors import InvalidInputError
from boloop.gp.kernels import SquaredExponential
from boloop.gp.utility_ep import PROBIT_SLOPE, UtilityPosteriorEP, probit_tilted_moments
from boloop.simulate import simulate


def _duels(seed=0, m=12, n=30, variance=4.0):
    rng = np.random.default_rng(seed)
    X = rng.random((m, 1))
    K = variance * SquaredExponential(0.2, 1.0).k(X, X) + 1e-9 * np.eye(m)
    w = rng.integers(0, m, n)
    los = (w + rng.integers(1, m, n)) % m
    return K, w, los


def _difference_matrix(w, los, m):
    A = np.zeros((len(w), m))
    A[np.arange(len(w)), w] += 1.0
    A[np.arange(len(w)), los] -= 1.0
    return A


@pytest.mark.parametrize("m0, v0", [(0.3, 2.0), (-4.0, 9.0), (2.5, 0.1), (-9.0, 1.0)])
def test_tilted_moments_against_quadrature(m0, v0):
    k = PROBIT_SLOPE
    sd = math.sqrt(v0)

    def moment(p):
        return integrate.quad(
            lambda d: d**p * stats.norm.cdf(k * d) * stats.norm.pdf(d, m0, sd),
            m0 - 12 * sd,
            m0 + 12 * sd,
            epsabs=1e-13,
        )[0]

    Z = moment(0)
    mean = moment(1) / Z
    var = moment(2) / Z - mean**2
    log_z, mu, v = probit_tilted_moments(np.array(m0), np.array(v0))
    assert float(log_z) == pytest.approx(math.log(Z), abs=1e-8)
    assert float(mu) == pytest.approx(mean, abs=1e-7)
    assert float(v) == pytest.approx(var, rel=1e-6)


def test_fixed_point_matches_the_tilted_moments_of_every_site():
    K, w, los = _duels()
    post = UtilityPosteriorEP(K, w, los, tol=1e-10)
    A = _difference_matrix(w, los, K.shape[0])
    C = post.covariance()
    md = A @ post.mean()
    vd = np.einsum("ij,jk,ik->i", A, C, A)
    tau, nu = post.site_precision, post.site_natural_mean
    tc, nc = 1.0 / vd - tau, md / vd - nu
    _, m_hat, v_hat = probit_tilted_moments(nc / tc, 1.0 / tc)
    np.testing.assert_allclose(m_hat, md, atol=1e-7)
    np.testing.assert_allclose(v_hat, vd, atol=1e-7)


def test_evidence_stable_form_equals_rw_eq_3_65():
    K, w, los = _duels(seed=1)
    post = UtilityPosteriorEP(K, w, los, tol=1e-10)
    A = _difference_matrix(w, los, K.shape[0])
    Kd = A @ K @ A.T
    C = post.covariance()
    md, vd = A @ post.mean(), np.einsum("ij,jk,ik->i", A, C, A)
    tau, nu = post.site_precision, post.site_natural_mean
    tc, nc = 1.0 / vd - tau, md / vd - nu
    mc, vc = nc / tc, 1.0 / tc
    log_z, _, _ = probit_tilted_moments(mc, vc)
    mt = nu / tau
    M = Kd + np.diag(1.0 / tau)
    naive = (
        -0.5 * np.linalg.slogdet(M)[1]
        - 0.5 * mt @ np.linalg.solve(M, mt)
        + log_z.sum()
        + 0.5 * np.sum(np.log(vc + 1.0 / tau))
        + np.sum((mc - mt) ** 2 / (2.0 * (vc + 1.0 / tau)))
    )
    assert post.log_evidence == pytest.approx(naive, rel=1e-9)


def test_one_duel_is_exact_and_two_duels_match_numerical_integration():
    k = PROBIT_SLOPE
    K = np.array([[1.5, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 2.0]])
    one = UtilityPosteriorEP(K, [0], [2])
    v = K[0, 0] + K[2, 2] - 2 * K[0, 2]
    # one site: the cavity is the prior, so EP's evidence and moments are the exact ones
    assert one.log_evidence == pytest.approx(math.log(0.5), abs=1e-12)
    exact_mean = integrate.quad(
        lambda d: 2 * d * stats.norm.cdf(k * d) * stats.norm.pdf(d, 0, math.sqrt(v)), -40, 40
    )[0]
    assert one.mean()[0] - one.mean()[2] == pytest.approx(exact_mean, abs=1e-9)
    # two sites on a grid: EP is approximate, close to the exact values on this small problem
    two = UtilityPosteriorEP(K, [0, 1], [1, 2], tol=1e-10)
    A = np.array([[1.0, -1.0, 0.0], [0.0, 1.0, -1.0]])
    g = np.linspace(-12, 12, 801)
    G1, G2 = np.meshgrid(g, g, indexing="ij")
    prior = stats.multivariate_normal(np.zeros(2), A @ K @ A.T).pdf(np.dstack([G1, G2]))
    dens = prior * stats.norm.cdf(k * G1) * stats.norm.cdf(k * G2)
    h2 = (g[1] - g[0]) ** 2
    Z = dens.sum() * h2
    mean = np.array([(dens * G1).sum(), (dens * G2).sum()]) * h2 / Z
    assert two.log_evidence == pytest.approx(math.log(Z), abs=1e-3)
    np.testing.assert_allclose(A @ two.mean(), mean, atol=1e-3)


def test_factor_difference_variance_and_warm_start():
    K, w, los = _duels(seed=2)
    post = UtilityPosteriorEP(K, w, los, tol=1e-10)
    V = post.factor()
    np.testing.assert_allclose(post.covariance(), K - V.T @ V, atol=1e-12)
    C = post.covariance()
    r = 3
    dense = np.diag(C) + C[r, r] - 2 * C[:, r]
    np.testing.assert_allclose(post.difference_variance(r), dense, atol=1e-10)
    np.testing.assert_allclose(post.variance(), np.diag(C), atol=1e-10)
    # the previous duels' sites start the next posterior: the same fixed point, fewer sweeps
    prev = UtilityPosteriorEP(K, w[:-1], los[:-1], tol=1e-10)
    warm = UtilityPosteriorEP(K, w, los, start=prev, tol=1e-10)
    np.testing.assert_allclose(warm.mean(), post.mean(), atol=1e-6)
    assert warm.log_evidence == pytest.approx(post.log_evidence, abs=1e-6)
    assert warm.sweeps < post.sweeps
    # a start whose duels are not the first of these is not used
    other = UtilityPosteriorEP(K, los[:5], w[:5])
    cold = UtilityPosteriorEP(K, w, los, start=other, tol=1e-10)
    assert cold.sweeps == post.sweeps


def test_no_duels_is_the_prior_and_bad_settings_are_refused():
    K, _, _ = _duels()
    post = UtilityPosteriorEP(K, [], [])
    np.testing.assert_allclose(post.mean(), 0.0)
    np.testing.assert_allclose(post.covariance(), K)
    assert post.log_evidence == 0.0
    for bad in ({"kappa": 0.0}, {"kappa": math.inf}, {"damping": 0.0}, {"damping": 1.5}):
        with pytest.raises(InvalidInputError):
            UtilityPosteriorEP(K, [0], [1], **bad)


def test_eubo_with_ep_finds_the_best_option_and_refuses_unknown_approximations():
    problem = problems.get("preference/random-table?dim=1&n=10&table_seed=3")
    trace = simulate("eubo-regret", problem, 40, seed=0, kernel="fit", approximation="ep")
    assert trace.records[-1]["metrics"]["simple_regret"] < 0.05
    again = simulate("eubo-regret", problem, 40, seed=0, kernel="fit", approximation="ep")
    assert [r["query"] for r in again.records] == [r["query"] for r in trace.records]
    with pytest.raises(InvalidInputError, match="approximation"):
        EUBO(problem.space, approximation="variational")


def test_a_self_duel_teaches_nothing_and_costs_exactly_log_half_of_evidence():
    """A duel of an option with itself (Double Thompson Sampling asks them) has the constant
    likelihood Phi(0) = 1/2: the posterior is that of the other duels and the log evidence is
    theirs plus log(1/2). It was NaN (the difference's variance is 0), and DTS with EP crashed."""
    K, w, los = _duels(seed=4)
    plain = UtilityPosteriorEP(K, w, los, tol=1e-10)
    at = [3, 11, 20]
    w2, los2 = np.insert(w, at, [5, 5, 2]), np.insert(los, at, [5, 5, 2])
    post = UtilityPosteriorEP(K, w2, los2, tol=1e-10)
    np.testing.assert_allclose(post.mean(), plain.mean(), atol=1e-7)
    np.testing.assert_allclose(post.covariance(), plain.covariance(), atol=1e-7)
    assert post.log_evidence == pytest.approx(plain.log_evidence + 3 * math.log(0.5), abs=1e-7)
    only = UtilityPosteriorEP(K, [4], [4])
    np.testing.assert_allclose(only.mean(), 0.0)
    np.testing.assert_allclose(only.covariance(), K, atol=1e-12)
    assert only.log_evidence == pytest.approx(math.log(0.5), abs=1e-12)
    trace = simulate("dts?approximation=ep", "preference/toy", 40, seed=0)
    assert len(trace.records) == 40
