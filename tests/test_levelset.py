"""Level-set family: the randomized straddle (Inatsu et al.) and its baselines.

The checklist is the acceptance-test section (Sec. 7) of ``shared/specs/lse.md``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from boloop.algorithms import make_policy
from boloop.algorithms.levelset import (
    LSE,
    MILE,
    RandomizedStraddle,
    RandomizedStraddleMax,
    RandomSampling,
    Straddle,
    UncertaintySampling,
    classify,
    expected_af_over_beta,
    expected_pointwise_loss,
    mile_acquisition,
    randomized_straddle_af,
    straddle,
)
from boloop.errors import InvalidInputError, OutOfSpaceError, QueryStateError
from boloop.gp import ExactGP
from boloop.gp.kernels import Matern, SquaredExponential
from boloop.metrics.levelset import fscore, level_set_loss, max_value_loss
from boloop.problems import get
from boloop.problems.levelset import (
    CARRIER_X1,
    CARRIER_X2,
    LIFETIME_RANGE,
    load_carrier_lifetime,
    neg_rosenbrock5_f,
    neg_sphere5_f,
    neg_styblinski_tang5_f,
    synthetic_lifetime_field,
)
from boloop.simulate import simulate
from boloop.spaces import Box, CandidateSet

GRID1 = CandidateSet.grid(np.array([[0.0, 1.0]]), 41)


def _run(policy, f, steps, rng, noise_sd=0.0):
    """Answer ``steps`` iterations (plus the initial design) with f + noise."""
    queries = []
    while policy.iteration < steps:
        q = policy.ask()
        y = float(f(q.x.reshape(1, -1))[0]) + noise_sd * float(rng.standard_normal())
        policy.tell(q.id, y)
        queries.append(q)
    return queries


# ---------------------------------------------------------------------------------------------
# 1-3: beta draws, the straddle identity, AF properties
# ---------------------------------------------------------------------------------------------
def _check_chi_squared_two(beta, n_se):
    """mean(beta) = 2 (sd 2), mean(sqrt beta) = sqrt(2 pi)/2 (sd 0.655), each within ``n_se``
    standard errors of the mean of ``beta.size`` draws."""
    n = beta.size
    assert abs(beta.mean() - 2.0) < n_se * 2.0 / math.sqrt(n)
    assert abs(np.sqrt(beta).mean() - math.sqrt(2 * math.pi) / 2) < n_se * 0.655 / math.sqrt(n)


def test_beta_draws_are_chi_squared_two():
    """Spec 7.1: mean(beta) = 2, mean(sqrt beta) = sqrt(2 pi)/2, quantiles 0.225/2.716 of sqrt beta.

    The policy's schedule, 200,000 draws: s.e. of mean(beta) is 0.0045 and of mean(sqrt beta)
    0.0015; margins 0.03 and 0.008 (about 5-6 s.e.), quantiles within 0.01. The policy's own
    draws through ask/tell (200 runs of 20 iterations, 4,000 draws): the same means within 5 s.e.
    (0.16 and 0.052: a chi2(1) or chi2(3), an exponential of mean 1 or the square root and
    the square swapped are all more than 0.4 away), and ``sqrt_betas`` their square roots.
    """
    p = RandomizedStraddle(GRID1, 0.0, kernel=SquaredExponential(0.2), seed=3)
    assert p.beta_shift(1) == 0.0
    rng = np.random.default_rng(3)
    beta = np.array([p.schedule.beta(1, rng=rng) for _ in range(200_000)])
    sb = np.sqrt(beta)
    _check_chi_squared_two(beta, 6.6)  # margins 0.03 and 0.0097
    assert abs(beta.mean() - 2.0) < 0.03
    assert abs(sb.mean() - math.sqrt(2 * math.pi) / 2) < 0.008
    q = np.quantile(sb, [0.025, 0.975])
    assert abs(q[0] - 0.225) < 0.01 and abs(q[1] - 2.716) < 0.01
    draws, roots = [], []
    for seed in range(200):
        pol = RandomizedStraddle(
            GRID1, 0.0, kernel=SquaredExponential(0.2), noise_variance=1.0, seed=seed
        )
        while pol.iteration < 20:
            q = pol.ask()
            pol.tell(q.id, 0.0)
        draws += pol.beta_draws
        roots += pol.sqrt_betas
    assert len(draws) == 4000
    _check_chi_squared_two(np.array(draws), 5.0)
    np.testing.assert_allclose(roots, np.sqrt(draws), rtol=1e-15)


def test_one_beta_draw_per_step_shared_by_all_candidates():
    p = RandomizedStraddle(GRID1, 0.3, kernel=SquaredExponential(0.2), noise_variance=1e-2, seed=0)
    rng = np.random.default_rng(0)
    f = lambda X: np.sin(6 * X[:, 0])  # noqa: E731
    q0 = p.ask()
    assert p.ask() is q0  # initial design: no draw
    p.tell(q0.id, float(f(q0.x.reshape(1, -1))[0]))
    assert p.beta_draws == [] and p.iteration == 0
    for k in range(1, 8):
        q = p.ask()
        assert p.ask() is q  # asking again neither re-draws nor re-selects
        assert len(p.beta_draws) == k
        # the chosen candidate maximises the AF with this single draw over every candidate
        mean, std = p.candidate_posterior()
        a = randomized_straddle_af(mean, std, 0.3, math.sqrt(p.beta_draws[-1]))
        assert a[q.index] == pytest.approx(a.max(), abs=1e-12)
        p.tell(q.id, float(f(q.x.reshape(1, -1))[0]) + 0.1 * rng.standard_normal())
        assert p.iteration == k


@settings(max_examples=200, deadline=None)
@given(
    mu=st.floats(-1e3, 1e3),
    sd=st.floats(0, 1e3),
    theta=st.floats(-1e3, 1e3),
    beta=st.floats(0, 50),
)
def test_straddle_identity_and_af_properties(mu, sd, theta, beta):
    """Spec 7.2-7.3: STR = min(ucb - theta, theta - lcb); 0 <= a <= beta^(1/2) sigma."""
    sb = math.sqrt(beta)
    ucb, lcb = mu + sb * sd, mu - sb * sd
    g = straddle(np.array([mu]), np.array([sd]), theta, sb)[0]
    assert g == pytest.approx(min(ucb - theta, theta - lcb), abs=1e-9 * (1 + abs(mu) + sb * sd))
    a = randomized_straddle_af(np.array([mu]), np.array([sd]), theta, sb)[0]
    assert 0.0 <= a <= sb * sd + 1e-9 * (1 + sb * sd)
    assert randomized_straddle_af(np.array([mu]), np.array([0.0]), theta, sb)[0] == 0.0


def test_argmax_of_unclipped_is_argmax_of_clipped():
    rng = np.random.default_rng(1)
    for _ in range(200):
        mu, sd = rng.normal(size=50), rng.uniform(0, 1, 50)
        sb = math.sqrt(rng.chisquare(2))
        g = straddle(mu, sd, 0.2, sb)
        a = randomized_straddle_af(mu, sd, 0.2, sb)
        assert a[np.argmax(g)] == a.max()


def test_all_zero_af_is_not_broken_by_first_index():
    """Spec P4: when a == 0 everywhere the pick is never np.argmax of the clipped vector (index 0).

    No data and no initial design: the prior mean 0 and std 1 are the same at every candidate, so
    with theta = 5 the clipped AF is 0 everywhere unless beta_1 > 25 (probability e^-12.5) and
    the unclipped straddle and the expected AF are the same everywhere: all 41 candidates are
    exact ties of every rule, and the first query of 30 seeds must be spread over them.
    """
    for tie in ("unclipped", "random", "expected"):
        picks = set()
        for seed in range(30):
            p = RandomizedStraddle(
                GRID1, 5.0, kernel=SquaredExponential(0.2), tie_break=tie, n_initial=0, seed=seed
            )
            q = p.ask()
            assert not q.initial and len(p.beta_draws) == 1 and p.beta_draws[0] < 25
            mean, std = p.candidate_posterior()
            assert np.ptp(mean) == 0.0 and np.ptp(std) == 0.0  # exact ties
            picks.add(q.index)
        assert len(picks) > 5  # uniform among the exact ties


# ---------------------------------------------------------------------------------------------
# 4-6: Lemma B.2, Lemma B.3, the key inequality
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mu,sd", [(0.3, 1.0), (-0.5, 0.5), (1.0, 0.7), (0.0, 2.0)])
def test_lemma_b2_closed_form_matches_monte_carlo(mu, sd):
    """Spec 7.4: relative error < 1% with 10^6 draws (s.e. about 0.2% here)."""
    theta = 0.1
    f = np.random.default_rng(7).normal(mu, sd, 1_000_000)
    for upper in (True, False):
        mc = np.mean(np.where((f >= theta) != upper, np.abs(f - theta), 0.0))
        cf = expected_pointwise_loss(np.array([mu]), np.array([sd]), np.array([upper]), theta)[0]
        assert cf == pytest.approx(mc, rel=0.01)


def test_key_inequality_and_expected_af():
    """Spec 7.6: E_t[l_t] <= E_beta[a] pointwise; E_beta[a] matches Monte Carlo over beta."""
    mu = np.linspace(-3, 3, 61)
    sd = np.full(61, 0.8)
    upper = classify(mu, 0.0)
    el = expected_pointwise_loss(mu, sd, upper, 0.0)
    ea = expected_af_over_beta(mu, sd, 0.0)
    assert np.all(el <= ea + 1e-12)
    beta = np.random.default_rng(2).chisquare(2, 400_000)
    for i in (10, 30, 45):
        mc = np.mean(np.maximum(np.sqrt(beta) * sd[i] - abs(mu[i]), 0.0))
        assert ea[i] == pytest.approx(mc, rel=0.01)


def test_lemma_b3_current_estimate_minimises_expected_loss():
    """Spec 7.5: with the posterior of the last iteration, E[r_T] <= E[r_i] for all stored H_i."""
    prob = get("levelset/sinusoidal")
    pol = make_policy("randomized-straddle-max", prob, seed=4, n_samples=50)
    rng = np.random.default_rng(4)
    queries = _run(pol, prob.value, 25, rng, prob.noise_sd)
    T = pol.iteration
    j = len(queries) - 1  # the posterior of iteration T: every observation before its query
    gp = ExactGP(pol.kernel.clone(), pol.gp.noise_variance).set_data(pol.gp.X[:j], pol.gp.y[:j])
    mean, var = gp.predict(pol.candidates)
    np.testing.assert_allclose(classify(mean, prob.threshold), pol.upper_history[-1])
    losses = [
        np.mean(expected_pointwise_loss(mean, np.sqrt(var), H, prob.threshold))
        for H in pol.upper_history
    ]
    assert np.argmin(losses) == T - 1 or losses[-1] <= min(losses) + 1e-12
    assert all(losses[-1] <= v + 1e-12 for v in losses)


# ---------------------------------------------------------------------------------------------
# 7-8: scale equivariance, set semantics
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [RandomizedStraddle, Straddle, LSE, UncertaintySampling, MILE])
def test_scale_equivariance(cls):
    """Spec 7.7: (f, theta, s2, noise) -> (c f, c theta, c^2 s2, c^2 noise) gives the same queries."""
    grid = CandidateSet.grid(np.array([[0.0, 1.0], [0.0, 1.0]]), 12)
    f = lambda X: np.sin(5 * X[:, 0]) + np.cos(3 * X[:, 1])  # noqa: E731
    runs = []
    for c in (1.0, 37.0):
        pol = cls(
            grid,
            0.4 * c,
            kernel=SquaredExponential.from_scale_form(c * c, 0.3),
            noise_variance=1e-2 * c * c,
            seed=11,
        )
        rng = np.random.default_rng(5)
        qs = _run(pol, lambda X, c=c: c * f(X), 20, rng, 0.1 * c)
        runs.append(([q.index for q in qs], pol.recommend().upper))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_set_semantics():
    """Spec 7.8: H and L partition X; mean == theta exactly is in H; no data and theta <= 0: H = X."""
    mean = np.array([-1.0, 0.5, 0.5 - 1e-15, 2.0])
    H = classify(mean, 0.5)
    np.testing.assert_array_equal(H, [False, True, False, True])
    p = RandomizedStraddle(GRID1, 0.0, kernel=SquaredExponential(0.2), seed=0)
    est = p.recommend()
    assert est.upper.all() and not est.lower.any()
    p2 = RandomizedStraddle(GRID1, 0.1, kernel=SquaredExponential(0.2), seed=0)
    assert not p2.recommend().upper.any()
    est = p.recommend()
    assert np.all(est.upper ^ est.lower)
    np.testing.assert_array_equal(est.classify(GRID1.points), est.upper)


def test_recommend_paper_sets_ignore_the_last_observation():
    """Spec P1: recommend(final_update=False) is Algorithm 1's H_T (posterior before y_T)."""
    prob = get("levelset/sinusoidal")
    pol = make_policy("randomized-straddle", prob, seed=2)
    _run(pol, prob.value, 12, np.random.default_rng(0), prob.noise_sd)
    now = pol.recommend()
    paper = pol.recommend(final_update=False)
    assert paper.iteration == 12 and now.iteration == 13
    gp = ExactGP(pol.kernel.clone(), pol.gp.noise_variance).set_data(pol.gp.X[:-1], pol.gp.y[:-1])
    np.testing.assert_array_equal(paper.upper, classify(gp.predict(pol.candidates)[0], 1.0))
    np.testing.assert_array_equal(now.upper, classify(pol.cache.mean, 1.0))


# ---------------------------------------------------------------------------------------------
# 9: max-value variants
# ---------------------------------------------------------------------------------------------
def test_max_variant_finite_beta_shift_and_t_hat():
    prob = get("levelset/sinusoidal")
    pol = make_policy("randomized-straddle-max", prob, seed=1, n_samples=200)
    _run(pol, prob.value, 15, np.random.default_rng(1), prob.noise_sd)
    xi = np.array(pol.beta_draws) - 2 * math.log(2500)
    assert np.all(xi > 0)
    np.testing.assert_allclose(np.array(pol.sqrt_betas) ** 2, np.array(pol.beta_draws))
    t_hat = pol.t_hat()
    assert 1 <= t_hat <= 15
    est = pol.recommend()
    assert est.iteration == t_hat
    np.testing.assert_array_equal(est.upper, pol.upper_history[t_hat - 1])
    losses, _ = pol.expected_max_losses()
    assert losses.shape == (15,) and np.argmin(losses) + 1 == t_hat


def test_max_variant_box_discretisation():
    """Spec 7.9: beta - xi = 2 d log tau_t; |x - [x]_t|_1 <= d r / tau_t; lexicographic ties."""
    box = Box(-5 * np.ones(2), 5 * np.ones(2))
    pol = RandomizedStraddleMax(
        box,
        0.0,
        kernel=SquaredExponential(1.0),
        a=1.0,
        b=0.05,
        n_candidates=64,
        n_fresh=8,
        seed=0,
    )
    assert pol.r == 10.0
    tau = pol.tau(1)
    assert tau == math.ceil(0.05 * 2 * 10 * (math.sqrt(math.log(2)) + math.sqrt(math.pi) / 2))
    X = box.sample(2000, seed=1)
    for t in (1, 3):
        R = pol.round_to_grid(X, t)
        assert np.all(np.abs(X - R).sum(axis=1) <= 2 * 10 / pol.tau(t) + 1e-12)
    # a point exactly between two centres goes to the smaller one
    h = 10 / tau
    x = np.array([[-5 + h, -5 + 0.3 * h]])
    np.testing.assert_allclose(pol.round_to_grid(x, 1), [[-5 + 0.5 * h, -5 + 0.5 * h]])
    assert pol.beta_shift(1) == pytest.approx(2 * 2 * math.log(tau))
    # beta_t = xi_t + 2 d log tau_t: the same seed's Algorithm 1 on the box draws the same xi_t
    # (the beta stream is the first thing drawn from the seed after the Sobol candidates)
    plain = RandomizedStraddle(
        box, 0.0, kernel=SquaredExponential(1.0), n_candidates=64, n_fresh=8, seed=0
    )
    f = lambda X: np.sin(X[:, 0]) + 0.1 * X[:, 1]  # noqa: E731
    for p in (pol, plain):
        _run(p, f, 3, np.random.default_rng(0))
    assert len(pol.beta_draws) == len(plain.beta_draws) == 3
    for t in (1, 2, 3):
        shift = 2 * 2 * math.log(pol.tau(t))
        assert pol.beta_shift(t) == pytest.approx(shift)
        assert pol.beta_draws[t - 1] - plain.beta_draws[t - 1] == pytest.approx(shift, rel=1e-12)
        assert pol.sqrt_betas[t - 1] == pytest.approx(math.sqrt(pol.beta_draws[t - 1]), rel=1e-15)
    with pytest.raises(InvalidInputError, match="a and b"):
        RandomizedStraddleMax(box, 0.0, kernel=SquaredExponential(1.0))


# ---------------------------------------------------------------------------------------------
# 10-11: problems and the LSE schedule
# ---------------------------------------------------------------------------------------------
def test_ground_truth_set_sizes():
    """Spec 7.10: |H*| = 453 (sinusoidal), 1064 (Himmelblau); 5-D fractions 0.300/0.400/0.500
    within 0.003 (10^6 uniform points; s.e. 0.0005)."""
    assert get("levelset/sinusoidal").true_upper().sum() == 453
    assert get("levelset/himmelblau").true_upper().sum() == 1064
    X = np.random.default_rng(0).uniform(-5, 5, (1_000_000, 5))
    for f, th, frac in (
        (neg_sphere5_f, 9.6, 0.300),
        (neg_rosenbrock5_f, 14800.0, 0.400),
        (neg_styblinski_tang5_f, 12.3, 0.500),
    ):
        assert abs(np.mean(f(X) >= th) - frac) < 0.003


def test_lse_beta_values_and_intersection():
    """Spec 7.11: sqrt(2 log(2500 pi^2 t^2 / 0.3)) = 4.758 (t = 1), 6.742 (t = 300)."""
    prob = get("levelset/himmelblau")
    pol = make_policy("lse", prob, seed=0)
    assert pol.schedule.sqrt_beta(1) == pytest.approx(4.758, abs=5e-4)
    assert pol.schedule.sqrt_beta(300) == pytest.approx(6.742, abs=5e-4)
    assert pol.intersect
    rng = np.random.default_rng(0)
    prev_u = prev_l = None
    assert pol.intersected_bounds is None  # before the first iteration
    for _ in range(6):
        _run(pol, prob.value, pol.iteration + 1, rng, prob.noise_sd)
        bounds = pol.intersected_bounds
        assert bounds is not None
        lcb, ucb = bounds
        if prev_u is not None:
            assert np.all(ucb <= prev_u) and np.all(lcb >= prev_l)
            assert np.any(ucb < prev_u) and np.any(lcb > prev_l)  # and they do tighten
        prev_u, prev_l = ucb, lcb
    assert pol.sqrt_betas[0] == pytest.approx(4.758, abs=5e-4)
    box = make_policy("lse", get("levelset/sphere5", n_eval=100), seed=0, n_candidates=64)
    assert not box.intersect and box.schedule.sqrt_beta(1) == pytest.approx(8.721, abs=5e-4)


def test_gp_sample_is_redrawn_per_run_and_shared_across_methods():
    prob = get("levelset/gp-sample")
    t1 = simulate("random", prob, 2, seed=0)
    v1 = prob.instance.grid_values.copy()
    simulate("us", prob, 2, seed=0)
    v2 = prob.instance.grid_values.copy()
    simulate("random", prob, 2, seed=1)
    v3 = prob.instance.grid_values.copy()
    np.testing.assert_array_equal(v1, v2)
    assert not np.allclose(v1, v3)
    assert 0.5 < np.std(v1) < 1.5
    assert t1.metric_names == ["loss", "fscore"]
    pinned = get("levelset/gp-sample?instance_seed=3")
    simulate("random", pinned, 2, seed=5)
    np.testing.assert_array_equal(
        pinned.instance.grid_values, get("levelset/gp-sample?instance_seed=3").instance.grid_values
    )


# ---------------------------------------------------------------------------------------------
# MILE
# ---------------------------------------------------------------------------------------------
def test_mile_matches_naive_formula_and_lookahead_monte_carlo():
    """The pruned, blocked MILE equals the unpruned formula (1e-9) and a Monte Carlo one-step
    look-ahead of |S| (2,000 draws of y*: s.e. < 0.07 points; tolerance 0.25)."""
    grid = CandidateSet.grid(np.array([[0.0, 1.0]]), 30)
    kern = SquaredExponential(0.15, 1.0)
    gp = ExactGP(kern, 0.05)
    X = np.array([[0.1], [0.45], [0.5], [0.8]])
    gp.set_data(X, np.array([0.2, 1.1, 0.9, -0.4]))
    P = grid.points
    mean, var = gp.predict(P)
    cov = gp.posterior_covariance(P, P)
    theta, b = 0.3, 3.0
    a, n_active = mile_acquisition(mean, var, theta, b, 0.05, lambda idx: cov[idx].copy(), block=7)
    s_star = np.sqrt(var + 0.05)
    c = np.abs(cov) / s_star[None, :]
    new_sd = np.sqrt(np.maximum(var[:, None] - c**2, 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = norm.cdf((mean[:, None] - theta - b * new_sd) / c)
    base = (mean - b * np.sqrt(var) > theta).astype(float)
    p = np.where(c > 0, p, base[:, None])
    naive = (p - base[:, None]).sum(axis=0)
    np.testing.assert_allclose(a, naive, atol=1e-9)
    assert 0 < n_active <= 30
    rng = np.random.default_rng(0)
    for j in (3, 15):
        counts = []
        for _ in range(2000):
            y = rng.normal(mean[j], s_star[j])
            g2 = ExactGP(kern, 0.05).set_data(np.vstack([X, P[j : j + 1]]), np.r_[gp.y, y])
            m2, v2 = g2.predict(P)
            counts.append(np.sum(m2 - b * np.sqrt(v2) > theta))
        assert np.mean(counts) - base.sum() == pytest.approx(a[j], abs=0.25)


def test_mile_is_finite_only():
    with pytest.raises(InvalidInputError, match="finite"):
        MILE(Box([0.0], [1.0]), 0.0, kernel=SquaredExponential(0.2))


# ---------------------------------------------------------------------------------------------
# behaviour
# ---------------------------------------------------------------------------------------------
def test_randomized_straddle_beats_lse_theory_beta_and_random():
    """Seeded statistical test (spec 12-13, reduced): Himmelblau, 40 iterations, seeds 0-7.

    Measured when written: randomized straddle 1.53 +- 0.11, LSE 2.83 +- 0.08, random 8.28 +- 1.94
    (mean loss +- s.e.). The test requires the randomized straddle's mean to be lower by at least
    2 standard errors of the difference.
    """
    prob = get("levelset/himmelblau")
    res = {}
    for m in ("randomized-straddle", "lse", "random"):
        res[m] = np.array([simulate(m, prob, 40, seed=s).final_metrics["loss"] for s in range(8)])
    rs = res["randomized-straddle"]
    for m in ("lse", "random"):
        other = res[m]
        se = math.sqrt(rs.var(ddof=1) / rs.size + other.var(ddof=1) / other.size)
        assert other.mean() - rs.mean() > 2 * se, (m, rs.mean(), other.mean(), se)


def test_figure2_fixed_beta_behaviour():
    """Spec 7.15: beta^(1/2) = 10 spreads the 20 queries almost evenly; beta^(1/2) = 1 puts them
    near the theta-crossings (|f - theta| small)."""
    prob = get("levelset/figure2")
    f = prob.value
    out = {}
    for sb in (1.0, 10.0):
        pol = make_policy("straddle", prob, seed=0, sqrt_beta=sb)
        qs = _run(pol, f, 20, np.random.default_rng(0), prob.noise_sd)
        out[sb] = np.array([q.x[0] for q in qs])
    xs = np.sort(np.unique(out[10.0]))
    gaps = np.diff(xs)
    assert gaps.max() / gaps.min() < 4.0  # roughly equal spacing over [-10, 10]
    assert xs.min() < -8 and xs.max() > 8
    near = np.abs(f(out[1.0][1:].reshape(-1, 1)) - 3.0)
    wide = np.abs(f(out[10.0][1:].reshape(-1, 1)) - 3.0)
    assert np.median(near) < 0.5 * np.median(wide)


def test_noise_free_mode_never_repeats():
    """Spec 7.16 (reduced budget): no point is queried twice; budget + 1 initial queries."""
    prob = get("levelset/carrier-lifetime")
    for m in ("randomized-straddle", "random"):
        tr = simulate(m, prob, 40, seed=0)
        pts = [tuple(r["points"][0]) for r in tr.records]
        assert len(pts) == 41 and len(set(pts)) == 41


def test_determinism_and_tracker_columns():
    prob = get("levelset/sinusoidal")
    a = simulate("randomized-straddle", prob, 10, seed=3)
    b = simulate("randomized-straddle", prob, 10, seed=3)
    strip = lambda recs: [{k: v for k, v in r.items() if "seconds" not in k} for r in recs]  # noqa: E731
    assert strip(a.records) == strip(b.records)
    pol = make_policy("randomized-straddle", prob, seed=3)
    _run(pol, prob.value, 10, np.random.default_rng(0), prob.noise_sd)
    H = pol.recommend().upper
    tr = prob.new_tracker()
    m = tr.update(None, None, pol.recommend(final_update=True))
    assert m["loss"] == pytest.approx(level_set_loss(prob.truth()[1], H, 1.0))
    assert m["fscore"] == pytest.approx(fscore(prob.true_upper(), H))


def test_box_policies_query_inside_and_refine():
    prob = get("levelset/sphere5", n_eval=2000)
    for m in ("randomized-straddle", "straddle", "lse", "us", "random"):
        tr = simulate(m, prob, 4, seed=0, n_candidates=128, n_fresh=16)
        X = np.array([r["points"][0] for r in tr.records])
        assert np.all(np.abs(X) <= 5.0 + 1e-12)
        assert np.isfinite(tr.final_metrics["loss"])
    pol = make_policy("straddle", prob, seed=0, n_candidates=128, n_fresh=0, n_refine=2)
    _run(pol, prob.value, 3, np.random.default_rng(0))
    q = pol.ask()
    m, s = pol.predict(q.x.reshape(1, -1))
    cm, cs = pol.candidate_posterior()
    assert straddle(m, s, 9.6, 3.0)[0] >= straddle(cm, cs, 9.6, 3.0).max() - 1e-9


def test_fitted_hyperparameters_default_for_user_problems():
    grid = CandidateSet.grid(np.array([[0.0, 2.0], [0.0, 1.0]]), 15)
    pol = RandomizedStraddle(grid, 0.5, seed=0)
    assert pol.fit
    before = pol.kernel.theta.copy()
    f = lambda X: 3 * np.sin(3 * X[:, 0]) * X[:, 1]  # noqa: E731
    _run(pol, f, 12, np.random.default_rng(0), 0.05)
    assert not np.allclose(pol.kernel.theta, before)
    assert pol.describe()["hyperparameters"] == "fitted"
    with pytest.raises(InvalidInputError, match="fixed hyperparameters"):
        RandomizedStraddleMax(grid, 0.5)


# ---------------------------------------------------------------------------------------------
# metrics and bad input
# ---------------------------------------------------------------------------------------------
def test_metric_definitions():
    values = np.array([2.0, 0.5, -1.0, 3.0])
    upper = np.array([True, False, True, False])
    # truth (theta 1): [T, F, F, T]; misclassified: idx 2 (|-2|) and idx 3 (2)
    assert level_set_loss(values, upper, 1.0) == pytest.approx(4.0 / 4)
    assert max_value_loss(values, upper, 1.0) == pytest.approx(2.0)
    assert fscore(values >= 1.0, upper) == pytest.approx(0.5)
    assert fscore(np.zeros(3, bool), np.zeros(3, bool)) == 0.0


def test_bad_input(tmp_path):
    with pytest.raises(InvalidInputError, match="threshold"):
        RandomizedStraddle(GRID1, float("nan"), kernel=SquaredExponential(0.2))
    with pytest.raises(InvalidInputError, match="threshold"):
        get("levelset/sinusoidal?threshold=nan")
    with pytest.raises(InvalidInputError, match="levelset/himmelblau"):
        get("levelset/himmelblau?n_per_dim=0")
    with pytest.raises(InvalidInputError, match="n_eval"):
        get("levelset/sphere5?n_eval=0")
    with pytest.raises(InvalidInputError):
        RandomizedStraddle(np.zeros((0, 2)), 0.0)
    with pytest.raises(InvalidInputError):
        RandomizedStraddle(np.array([[0.0, np.inf]]), 0.0)
    good = tmp_path / "life.csv"
    rows = ["x1,x2,lifetime"] + [
        f"{a},{b},{1 + a / 100 + b / 200}" for a in (8, 10, 12) for b in (8, 10)
    ]
    good.write_text("\n".join(rows))
    x1, x2, life = load_carrier_lifetime(good)
    assert life.shape == (3, 2) and life[0, 0] == pytest.approx(1 + 0.08 + 0.04)
    prob = get("levelset/carrier-lifetime", path=str(good))
    assert prob.space.n == 6 and prob.settings["allow_repeats"] is False
    for bad, msg in (
        (rows[:3] + ["10,8,"] + rows[4:], "missing"),
        (rows[:3] + ["10,8,abc"] + rows[4:], "not a number"),
        (rows[:-1], "full"),
        (["x1,x2,value"] + rows[1:], "header"),
    ):
        path = tmp_path / "bad.csv"
        path.write_text("\n".join(bad))
        with pytest.raises(InvalidInputError, match=msg) as exc:
            get("levelset/carrier-lifetime", path=str(path))
        assert "carrier-lifetime" in str(exc.value)


def test_synthetic_lifetime_standin_shape_and_range():
    life = synthetic_lifetime_field()
    assert life.shape == (89, 74) and CARRIER_X1[0] == 8 and CARRIER_X2[-1] == 154
    assert life.min() == pytest.approx(LIFETIME_RANGE[0]) and life.max() == pytest.approx(
        LIFETIME_RANGE[1]
    )
    prob = get("levelset/carrier-lifetime")
    assert prob.space.n == 6586 and "SYNTHETIC" in prob.description
    assert 0.1 < prob.true_upper().mean() < 0.6


def test_random_and_us_policies_registered():
    prob = get("levelset/himmelblau")
    assert isinstance(make_policy("random", prob, seed=0), RandomSampling)
    assert isinstance(make_policy("us", prob, seed=0), UncertaintySampling)
    assert isinstance(make_policy("mile", prob, seed=0), MILE)


@pytest.mark.parametrize("kernel", [SquaredExponential([0.7, 1.3]), Matern(1.5, 0.9, 2.0)])
def test_box_refinement_gradient_matches_finite_differences(kernel):
    box = Box([-2.0, -2.0], [2.0, 2.0])
    pol = Straddle(box, 0.2, kernel=kernel, noise_variance=1e-3, n_candidates=32, seed=0)
    X = box.sample(9, seed=1)
    pol.observe(X, np.sin(X[:, 0]) + X[:, 1])
    x = np.array([0.31, -0.47])
    m, s, dm, ds = pol.predict_with_gradient(x)
    pm, ps = pol.predict(x.reshape(1, -1))
    assert m == pytest.approx(pm[0], rel=1e-9) and s == pytest.approx(ps[0], rel=1e-9)
    h = 1e-6
    for j in range(2):
        e = np.zeros(2)
        e[j] = h
        (mp,), (sp,) = pol.predict((x + e).reshape(1, -1))
        (mm,), (sm,) = pol.predict((x - e).reshape(1, -1))
        assert dm[j] == pytest.approx((mp - mm) / (2 * h), rel=1e-5, abs=1e-7)
        assert ds[j] == pytest.approx((sp - sm) / (2 * h), rel=1e-5, abs=1e-7)


def test_add_observations_preloads_data_without_iterations():
    prob = get("levelset/sinusoidal")
    # (T-hat from 20 samples on 100 points: recommend(final_update=False) stays cheap)
    pol = make_policy("randomized-straddle-max", prob, seed=0, n_samples=20, max_sample_points=100)
    # the last of the three is the candidate of largest value: above the threshold
    best = int(np.argmax(prob.value(prob.space.points)))
    X = prob.space.points[[5, 700, best]]
    pol.add_observations(X, prob.value(X))
    assert pol.gp.n == 3 and pol.iteration == 0 and pol.observed.sum() == 3
    q = pol.ask()  # the initial design is already covered: the first query is iteration 1
    assert not q.initial
    with pytest.raises(QueryStateError):
        pol.add_observations(X[:1], [0.0])
    pol.tell(q.id, 0.5)
    assert pol.iteration == 1
    # iteration 1 was chosen from the posterior of the three added observations: its sets H_1
    # (Algorithm 2's recommendation after one iteration) are those of a GP on them alone (not
    # empty: the prior, or a GP without the last point, puts every candidate below)
    gp3 = ExactGP(pol.kernel.clone(), pol.gp.noise_variance).set_data(X, prob.value(X))
    h1 = classify(gp3.predict(pol.candidates)[0], prob.threshold)
    rec = pol.recommend(final_update=False)
    assert rec.iteration == 1 and 0 < h1.sum() < h1.size
    np.testing.assert_array_equal(rec.upper, h1)
    np.testing.assert_array_equal(rec.classify(pol.candidates), h1)
    with pytest.raises(InvalidInputError):
        pol.add_observations(X[:1], [np.nan])
    with pytest.raises(OutOfSpaceError):
        pol.add_observations([[0.123, 0.456]], [1.0])
    assert pol.gp.n == 4
    pol2 = make_policy("random", prob, seed=0)
    _run(pol2, prob.value, 3, np.random.default_rng(0), prob.noise_sd)
    assert pol2.recommend(final_update=False).iteration == 3


def test_mile_dense_downdate_equals_blocked_rows():
    """The rank-one downdated covariance (N <= max_dense) equals the blocked recompute."""
    prob = get("levelset/sinusoidal?n_per_dim=12")
    dense = make_policy("mile", prob, seed=0)
    blocked = make_policy("mile", prob, seed=0, max_dense=10)
    rng = np.random.default_rng(0)
    for _ in range(6):
        qd, qb = dense.ask(), blocked.ask()
        assert qd.index == qb.index
        y = prob.observe(qd, rng)
        dense.tell(qd.id, y)
        blocked.tell(qb.id, y)
    idx = np.arange(0, 144, 7)
    rows = dense.posterior_covariance_rows(idx)
    np.testing.assert_allclose(rows, blocked.posterior_covariance_rows(idx), atol=1e-9)
    C = dense.candidates  # an independent oracle: the GP's own posterior covariance
    np.testing.assert_allclose(rows, dense.gp.posterior_covariance(C[idx], C), atol=1e-9)
