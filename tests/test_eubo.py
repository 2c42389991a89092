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
from boloop.algorithms.preference import EUBO, RegretAwareEUBO
from boloop.errors import InvalidInputError
from boloop.gp.kernels import SquaredExponential
from boloop.gp.utility_laplace import UtilityPosterior, best_pairs, eubo_all_pairs, expected_max
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


# -- issue 17: exact pair search, factor, warm start, regret-aware EUBO, recommendation rules -------
def _posterior(seed, m=40, n=25, ls=0.2, var=2.0):
    rng = np.random.default_rng(seed)
    X = rng.random((m, 2))
    K = var * SquaredExponential(ls, 1.0).k(X, X)
    a = rng.integers(0, m, n)
    b = (a + 1 + rng.integers(0, m - 1, n)) % m
    u = np.sin(4 * X[:, 0]) + X[:, 1]
    win = rng.random(n) < 1 / (1 + np.exp(-(u[a] - u[b])))
    return K, np.where(win, a, b), np.where(win, b, a)


def test_factor_and_variance_reproduce_the_covariance():
    for seed, n in ((0, 10), (1, 120)):  # fewer duels than options in them, and more
        K, w, los = _posterior(seed, n=n)
        post = UtilityPosterior(K, w, los)
        V = post.factor()
        np.testing.assert_allclose(K - V.T @ V, post.covariance(), atol=1e-9)
        np.testing.assert_allclose(post.variance(), np.diag(post.covariance()), atol=1e-9)
        C = post.covariance()  # dense, by its own LU path
        for r in (0, K.shape[0] // 2):
            expected = np.diag(C) + C[r, r] - 2.0 * C[:, r]
            np.testing.assert_allclose(post.difference_variance(r), expected, atol=1e-9)
            assert abs(post.difference_variance(r)[r]) <= 1e-9  # f(r) - f(r) = 0
        # f(x) - f_bar, f_bar the average of all options: the centring matrix on both sides
        m = K.shape[0]
        P = np.eye(m) - np.full((m, m), 1.0 / m)
        np.testing.assert_allclose(post.centred_variance(), np.diag(P @ C @ P), atol=1e-9)


def test_warm_start_reaches_the_same_mode_in_fewer_steps():
    K, w, los = _posterior(2, n=60)
    first = UtilityPosterior(K, w[:59], los[:59])
    cold = UtilityPosterior(K, w, los)
    warm = UtilityPosterior(K, w, los, start=first)
    np.testing.assert_allclose(warm.mean(), cold.mean(), atol=1e-6)
    assert warm.log_evidence == pytest.approx(cold.log_evidence, abs=1e-8)
    assert warm.newton_steps <= cold.newton_steps


@pytest.mark.parametrize(
    "exploit,optimism,ref",
    [(0, 0, False), (1, 0, False), (3, 0, False), (1, 1.5, False), (1, 1, True), (1, 1, "average")],
)
def test_best_pairs_equals_the_argmax_over_every_pair(exploit, optimism, ref):
    for seed in range(4):
        K, w, los = _posterior(seed)
        posts = [(0.3, UtilityPosterior(K, w, los)), (0.7, UtilityPosterior(0.5 * K, w, los))]
        among = np.sort(np.random.default_rng(seed).choice(K.shape[0], 25, replace=False))
        iu = np.triu_indices(among.size, 1)
        full = np.zeros(iu[0].size)
        for wk, p in posts:
            mu = p.mean()[among]
            C = p.covariance()[np.ix_(among, among)]
            if ref == "average":  # sd of f(x) - the average utility of all options
                Cf = p.covariance()
                centred = Cf - Cf.mean(axis=0)[None, :] - Cf.mean(axis=1)[:, None] + Cf.mean()
                u = mu + optimism * np.sqrt(np.diag(centred)[among])
            elif ref:  # sd of f(x) - f(reference), reference = option 3 (not necessarily in among)
                Cf = p.covariance()
                u = mu + optimism * np.sqrt(np.diag(Cf)[among] + Cf[3, 3] - 2 * Cf[among, 3])
            else:
                u = mu + optimism * np.sqrt(np.diag(C))
            E = eubo_all_pairs(mu, C)[iu]
            full += wk * (E + 0.5 * exploit * (u[iu[0]] + u[iu[1]]))
        reference = ref if ref == "average" else (3 if ref else None)
        a, b, score = best_pairs(
            posts, exploit=exploit, among=among, optimism=optimism, reference=reference
        )
        k = int(np.argmax(full))
        assert (a[0], b[0]) == (among[iu[0][k]], among[iu[1][k]])
        assert score[0] == pytest.approx(full[k], rel=1e-10)
    # ties: every tied pair is returned, in row-major order (a problem of two identical options)
    K = np.ones((3, 3)) + np.eye(3)
    post = UtilityPosterior(K, np.array([], dtype=int), np.array([], dtype=int))
    a, b, _ = best_pairs([(1.0, post)])
    assert list(zip(a, b)) == [(0, 1), (0, 2), (1, 2)]


def test_best_pairs_leaves_out_excluded_pairs_unless_all_are():
    """``exclude``: the best pair among the others, in either order of the excluded pairs; pairs
    outside ``among`` or of an option with itself are ignored; excluding every pair excludes
    none (a duel must still be chosen)."""
    K, w, los = _posterior(1)
    posts = [(1.0, UtilityPosterior(K, w, los))]
    among = np.arange(0, K.shape[0], 2)[:12]
    iu = np.triu_indices(among.size, 1)
    p = posts[0][1]
    full = eubo_all_pairs(p.mean()[among], p.covariance()[np.ix_(among, among)])[iu]
    order = np.argsort(-full)
    top = [(int(among[iu[0][k]]), int(among[iu[1][k]])) for k in order[:3]]
    excluded = [top[0][::-1], top[1], (1, 3), (4, 4)]  # reversed, as is, outside among, self
    a, b, score = best_pairs(posts, among=among, exclude=excluded)
    assert (int(a[0]), int(b[0])) == top[2]
    assert score[0] == pytest.approx(full[order[2]], rel=1e-10)
    every = [(int(among[i]), int(among[j])) for i, j in zip(*iu)]
    a, b, _ = best_pairs(posts, among=among, exclude=every)
    assert (int(a[0]), int(b[0])) == top[0]


def test_copeland_winner_counts_predicted_wins():
    from boloop.algorithms.preference import copeland_winner

    # a cycle 0 > 1 > 2 > 0 plus option 3 that beats 0 and 1 only: 3 has the most wins
    P = np.full((4, 4), 0.5)
    for i, j, p in ((0, 1, 0.9), (1, 2, 0.9), (2, 0, 0.9), (3, 0, 0.6), (3, 1, 0.6), (2, 3, 0.7)):
        P[i, j], P[j, i] = p, 1 - p
    assert copeland_winner(P) == 2  # 2 beats 0 and 3 (two wins, larger total than 3's)
    P[2, 3], P[3, 2] = 0.4, 0.6
    assert copeland_winner(P) == 3  # now 3 beats 0, 1 and 2
    with pytest.raises(InvalidInputError):
        copeland_winner(np.zeros((2, 3)))


@pytest.mark.parametrize("method", ["mr-lpf", "maxminlcb", "random", "eubo", "eubo-regret", "dts"])
def test_every_method_recommends_by_either_rule(method):
    prob = problems.get("preference/toy")
    util = simulate(method, prob, 30, seed=1, kernel="fit")
    cope = simulate(method, prob, 30, seed=1, kernel="fit", recommend_rule="copeland")
    # the rule changes the recommendation only, never the duels
    assert [r["points"] for r in util.records] == [r["points"] for r in cope.records]
    for trace in (util, cope):
        assert 0 <= trace.records[-1]["metrics"]["simple_regret"] <= 0.5
    with pytest.raises(InvalidInputError):
        make_policy(method, prob, 0, recommend_rule="borda")


def test_regret_aware_eubo_duels_plausible_options_and_is_eubo_without_its_terms():
    prob = problems.get("preference/random-table?n=60&dim=2&table_seed=5")
    pol = make_policy("eubo-regret", prob, 0)
    trace = simulate(pol, prob, 40, seed=0)
    d = pol.describe()
    assert d["exploit"] == 1.0 and d["optimism"] == 1.0 and d["plausible_beta"] is None
    # the optional bounds: beta = 0 keeps only options whose mean reaches the best mean (and the
    # runner-up, so that a duel exists); a wide beta keeps every option
    narrow = make_policy("eubo-regret", prob, 0, plausible_beta=0.0)
    simulate(narrow, prob, 10, seed=0)
    best = int(np.argmax(narrow.posterior_mean()))
    assert best in set(narrow.plausible()) and narrow.plausible().size == 2
    wide = make_policy("eubo-regret", prob, 0, plausible_beta=50.0)
    simulate(wide, prob, 10, seed=0)
    assert wide.plausible().size == prob.space.n
    assert trace.records[-1]["metrics"]["simple_regret"] < 0.2
    plain = simulate("eubo", prob, 15, seed=3)
    same = simulate("eubo-regret", prob, 15, seed=3, exploit=0.0, optimism=0.0)
    assert [r["points"] for r in plain.records] == [r["points"] for r in same.records]
    with pytest.raises(InvalidInputError):
        make_policy("eubo-regret", prob, 0, exploit=-1.0)


def test_optimism_reference_average_is_an_option_that_changes_the_duels():
    """``optimism_reference="average"`` measures the optimism of the duel's utility against the
    average utility of all options instead of the incumbent (no option is handicapped by being
    the reference); the default keeps the incumbent, and a bad value is refused."""
    prob = problems.get("preference/random-table?n=60&dim=2&table_seed=5")
    default = make_policy("eubo-regret", prob, 0)
    assert default.describe()["optimism_reference"] == "incumbent"
    avg = make_policy("eubo-regret", prob, 0, optimism_reference="average")
    assert avg.describe()["optimism_reference"] == "average"
    first = simulate(avg, prob, 20, seed=0)
    again = simulate("eubo-regret", prob, 20, seed=0, optimism_reference="average")
    base = simulate("eubo-regret", prob, 20, seed=0)
    points = [[r["points"] for r in t.records] for t in (first, again, base)]
    assert points[0] == points[1]  # the seed reproduces the run
    assert points[0] != points[2]  # and the reference changes the duels
    with pytest.raises(InvalidInputError):
        make_policy("eubo-regret", prob, 0, optimism_reference="runner-up")
    with pytest.raises(InvalidInputError):
        best_pairs(avg.posteriors(), exploit=1.0, optimism=1.0, reference="median")


def test_lengthscale_prior_weights_the_grid_before_any_duel():
    """With no duels every grid model has the same evidence, so the weights are the prior:
    uniform under ``"flat"`` (the default), under ``"dimension"`` the Hvarfner et al. (2024)
    log-normal ``log l ~ N(sqrt2 + log(d) / 2, 3)`` at the grid's length-scales, under
    ``"gamma"`` BoTorch's Gamma prior."""
    X = np.random.default_rng(0).random((30, 3))
    grid = (0.05, 0.2, 0.8)
    kw = {"lengthscales": grid, "variances": (1.0,), "min_weight": 0.0, "max_models": 3}

    def weights(policy):
        return {m["lengthscale"]: m["weight"] for m in policy.describe()["models"]}

    flat = weights(EUBO(X, seed=0, **kw))
    assert weights(EUBO(X, seed=0, lengthscale_prior="flat", **kw)) == flat
    assert flat == pytest.approx({ls: 1 / 3 for ls in grid})
    prior = weights(EUBO(X, seed=0, lengthscale_prior="dimension", **kw))
    dens = {ls: stats.norm(np.sqrt(2) + np.log(3) / 2, np.sqrt(3)).pdf(np.log(ls)) for ls in grid}
    total = sum(dens.values())
    assert prior == pytest.approx({ls: d / total for ls, d in dens.items()})
    # "gamma": BoTorch's PairwiseGP default l ~ Gamma(2.4, rate 2.7); the grid is evenly spaced
    # in log l, so a grid point's mass is the density of log l there, Gamma's pdf times l
    gamma = weights(EUBO(X, seed=0, lengthscale_prior="gamma", **kw))
    dens = {ls: ls * stats.gamma(2.4, scale=1 / 2.7).pdf(ls) for ls in grid}
    total = sum(dens.values())
    assert gamma == pytest.approx({ls: d / total for ls, d in dens.items()})
    with pytest.raises(InvalidInputError, match="lengthscale_prior"):
        EUBO(X, seed=0, lengthscale_prior="hvarfner")
    toy = problems.get("preference/toy")
    with pytest.raises(InvalidInputError, match="lengthscale_prior"):
        make_policy("eubo-regret", toy, seed=0, kernel="fit", lengthscale_prior="hvarfner")
    assert make_policy("eubo-regret", toy, seed=0, kernel="fit", lengthscale_prior="dimension")


def test_lengthscale_cap_leaves_out_long_lengthscales_unless_switched_off():
    """The shared mechanism's shrinking cap (``cap0 (n0 / n)^(1 / (d + 1))``, ``n0 = 5`` in 2-D)
    removes the grid's long length-scales once the duels are many; ``lengthscale_cap=False``
    keeps every grid model (all kept here: ``max_models`` is the grid's size, no weight floor)."""
    prob = problems.get("preference/random-table?dim=2&n=40&table_seed=1")
    kw = {"kernel": "fit", "max_models": 15, "min_weight": 0.0}
    cap = (5 / 40) ** (1 / 3)  # 0.5 after 40 duels: 0.8 is out, 0.4 is in

    def lengthscales(**options):
        policy = make_policy("eubo-regret", prob, seed=0, **kw, **options)
        simulate(policy, prob, 40, seed=0)
        return {m["lengthscale"] for m in policy.describe()["models"]}

    assert lengthscales() == {ls for ls in (0.05, 0.1, 0.2, 0.4, 0.8) if ls <= cap}
    assert lengthscales(lengthscale_cap=False) == {0.05, 0.1, 0.2, 0.4, 0.8}
    with pytest.raises(InvalidInputError, match="lengthscale_cap"):
        make_policy("eubo-regret", prob, seed=0, kernel="fit", lengthscale_cap="no")


def test_remaining_uncertainty_is_the_posterior_over_prior_variance_of_differences():
    """``remaining_uncertainty(r)`` against the dense posterior covariance (an independent path:
    the LU form of R&W eq. 3.24, not the factor the method uses): the summed variance of
    ``f(x) - f(r)`` over the options, posterior over prior, mixture-weighted; 1 before any duel
    and shrinking as the duels accumulate on a fixed kernel."""
    X = np.random.default_rng(1).random((25, 2))
    u = np.sin(4 * X[:, 0]) + X[:, 1]
    pol = EUBO(X, kernel=SquaredExponential(0.3, 1.0), exploit=1.0, optimism=1.0, seed=0)
    assert pol.remaining_uncertainty(0) == pytest.approx(1.0)
    rng = np.random.default_rng(2)
    for _ in range(4):
        for _ in range(10):
            q = pol.ask()
            a, b = q.a_index, q.b_index
            pol.tell(q.id, 0 if rng.random() < 1 / (1 + np.exp(-(u[a] - u[b]))) else 1)
        r = int(np.argmax(pol.posterior_mean()))
        expected = 0.0
        for wk, post in pol.posteriors():
            C, K = post.covariance(), post.K
            post_d = np.diag(C) + C[r, r] - 2 * C[:, r]
            prior_d = np.diag(K) + K[r, r] - 2 * K[:, r]
            expected += wk * post_d.sum() / prior_d.sum()
        rho = pol.remaining_uncertainty(r)
        assert rho == pytest.approx(expected, rel=1e-9)
        assert 0 < rho < 1


def test_double_thompson_draws_have_the_posterior_moments():
    prob = problems.get("preference/random-table?n=12&dim=1&table_seed=4")
    # a fixed kernel: one model, so a draw is N(mean, covariance) of that posterior
    pol = make_policy("dts", prob, 0, kernel=SquaredExponential(0.2, 1.0))
    simulate(pol, prob, 15, seed=0)
    ((weight, post),) = pol.posteriors()
    assert weight == 1.0
    draws = np.array([pol.thompson_draw() for _ in range(20000)])
    se = np.sqrt(post.variance() / draws.shape[0])
    assert np.all(np.abs(draws.mean(axis=0) - post.mean()) < 5 * se + 1e-12)
    np.testing.assert_allclose(np.cov(draws.T), post.covariance(), atol=0.06)


def test_double_thompson_duels_good_options_and_seed_reproduces():
    prob = problems.get("preference/random-table?n=40&dim=2&table_seed=5")
    a = simulate("dts", prob, 60, seed=2, kernel="fit")
    b = simulate("dts", prob, 60, seed=2, kernel="fit")
    assert [r["points"] for r in a.records] == [r["points"] for r in b.records]
    first = np.mean([r["metrics"]["regret"] for r in a.records[:15]])
    last = np.mean([r["metrics"]["regret"] for r in a.records[-15:]])
    assert last < first
    assert make_policy("dts", prob, 0).describe()["plausible_beta"] == 2.0
    with pytest.raises(InvalidInputError):
        make_policy("dts", prob, 0, plausible_beta=-1.0)


def test_model_draw_scores_duels_under_one_model_of_the_mixture():
    prob = problems.get("preference/random-table?n=30&dim=1&table_seed=4")
    assert (
        make_policy("eubo-regret", prob, 0, model_choice="draw").describe()["model_choice"]
        == "draw"
    )
    for seed in range(6):
        pol = make_policy("eubo-regret", prob, seed, model_choice="draw")
        simulate(pol, prob, 12, seed=seed)
        mixture = pol.posteriors()
        ref = int(np.argmax(pol.posterior_mean()))
        # the next duel is the best pair of one model of the mixture, scored alone (weight 1)
        best_of = set()
        for _, post in mixture:
            a, b, _ = best_pairs([(1.0, post)], exploit=1.0, optimism=1.0, reference=ref)
            best_of.update(zip(a.tolist(), b.tolist()))
        q = pol.ask()
        assert tuple(sorted((q.a_index, q.b_index))) in best_of
    with pytest.raises(InvalidInputError):
        make_policy("eubo-regret", prob, 0, model_choice="median")


@pytest.mark.parametrize("cls", [EUBO, RegretAwareEUBO])
def test_repeat_duels_keeps_a_person_from_the_same_duel(cls):
    """A person's trial: with consistent answers the default put one pair to them at queries 9,
    10, 13, 14 and 17 of 21. ``repeat_duels="not-in-a-row"`` never asks the last duel again at
    once; ``"never"`` asks no pair twice until every pair has been asked, then allows them all
    again (3 options: 3 pairs). The default (``"allow"``) is unchanged."""
    X = np.random.default_rng(1).random((20, 3))
    utility = X @ np.array([1.0, -0.5, 0.8])

    def duels(points, n, **options):
        pol = cls(points, seed=0, **options)
        out = []
        for _ in range(n):
            q = pol.ask()
            out.append((min(q.a_index, q.b_index), max(q.a_index, q.b_index)))
            better_a = utility[q.a_index] > utility[q.b_index]
            pol.tell(q.id, 0 if better_a else 1)  # a consistent person
        return out

    allowed = duels(X, 21)
    assert len(set(allowed)) < len(allowed)  # what the trial met: the same duel again
    in_a_row = duels(X, 21, repeat_duels="not-in-a-row")
    assert all(x != y for x, y in zip(in_a_row, in_a_row[1:]))
    never = duels(X, 21, repeat_duels="never")
    assert len(set(never)) == len(never)
    three = duels(X[:3], 5, repeat_duels="never")
    assert len(set(three[:3])) == 3 and set(three[3:]) <= set(three[:3])
    with pytest.raises(InvalidInputError, match="repeat_duels"):
        EUBO(X, seed=0, repeat_duels="sometimes")
