"""A stationary kernel plus a linear trend of unknown slope along one axis
(:class:`boloop.gp.kernels.StationaryPlusTrend`, the trend in s of the learned safe model of g):
values against scikit-learn and the closed form, gradients against finite differences, the GP
posterior against Bayesian linear regression with a GP residual (Rasmussen & Williams eq. 2.42),
the shared mechanism's prior and the likelihood-ratio edge of the trend's variance.

Tolerances: values 1e-12 relative; gradients 1e-6 relative to the largest entry (central
differences, step 1e-6); posteriors 1e-8.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.gaussian_process import kernels as skk

from boloop.errors import InvalidInputError
from boloop.gp import ExactGP, HyperparameterLearning, Matern, SquaredExponential
from boloop.gp.conservative import axiswise_conservative
from boloop.gp.kernels import StationaryPlusTrend
from kernel_checks import check_gradient_and_traces

RNG = np.random.default_rng(3)
X = RNG.uniform(0, 2, size=(12, 3))
Y = RNG.uniform(0, 2, size=(7, 3))
LS = np.array([0.5, 1.1, 2.0])


def _trend(axis: int = 0, origin: float = 0.3, fixed=()) -> StationaryPlusTrend:
    return StationaryPlusTrend(
        Matern(2.5, LS, 0.9), trend_variance=1.7, axis=axis, origin=origin, fixed=fixed
    )


def test_one_dimension_matches_sklearn_matern_plus_dot_product() -> None:
    ours = StationaryPlusTrend(Matern(2.5, 0.4, 1.3), trend_variance=2.5, axis=0, origin=0.0)
    theirs = skk.ConstantKernel(1.3) * skk.Matern(0.4, nu=2.5) + skk.ConstantKernel(
        2.5
    ) * skk.DotProduct(sigma_0=0.0, sigma_0_bounds="fixed")
    x, y = X[:, :1], Y[:, :1]
    assert np.allclose(ours.k(x, y), theirs(x, y), rtol=1e-12, atol=0)
    assert np.allclose(ours.k(x), theirs(x), rtol=1e-12, atol=0)
    assert np.allclose(ours.diag(x), theirs.diag(x), rtol=1e-12, atol=0)
    # sklearn's theta: [log c1, log l, log c2], ours [log variance, log l, log trend_variance]
    assert np.allclose(ours.theta, theirs.theta, rtol=1e-14)
    K, dK = ours.gradient(x)
    Ks, dKs = theirs(x, eval_gradient=True)
    assert np.allclose(K, Ks, rtol=1e-12, atol=0)
    assert np.allclose(dK, np.moveaxis(dKs, -1, 0), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("axis,origin", [(0, 0.3), (2, -1.0)])
def test_values_are_the_closed_form_on_any_axis_and_origin(axis, origin) -> None:
    k = _trend(axis, origin)
    base = Matern(2.5, LS, 0.9)
    u, v = X[:, axis] - origin, Y[:, axis] - origin
    assert np.allclose(k.k(X, Y), base.k(X, Y) + 1.7 * np.outer(u, v), rtol=1e-12, atol=0)
    assert np.allclose(k.diag(X), 0.9 + 1.7 * u * u, rtol=1e-12, atol=0)
    assert np.allclose(np.diag(k.k(X)), k.diag(X), rtol=1e-12, atol=0)
    assert np.all(np.linalg.eigvalsh(k.k(X)) > -1e-10)
    # the stationary part's hyperparameters are read through, the trend's comes last
    assert k.theta_names == ["variance", *[f"lengthscale[{i}]" for i in range(3)], "trend_variance"]
    assert k.variance == 0.9 and np.array_equal(k.lengthscale, LS)


@pytest.mark.parametrize("fixed", [(), ("variance",), ("lengthscale",), ("trend_variance",)])
def test_gradient_matches_finite_differences_and_fast_traces(fixed) -> None:
    k = _trend(fixed=fixed)
    check_gradient_and_traces(k, X, RNG)


def test_theta_round_trip_copies_and_errors() -> None:
    base = Matern(2.5, LS, 0.9)
    k = StationaryPlusTrend(base, trend_variance=1.7)
    other = k.with_theta(k.theta + 0.5)
    assert np.allclose(other.theta, k.theta + 0.5) and np.allclose(k.theta[-1], math.log(1.7))
    k.theta = np.log([2.0, 1.0, 1.0, 1.0, 3.0])
    assert k.variance == pytest.approx(2.0) and k.trend_variance == pytest.approx(3.0)
    assert base.variance == 0.9  # the caller's base kernel is copied, not changed
    with pytest.raises(InvalidInputError, match="stationary"):
        StationaryPlusTrend(object())  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="trend_variance"):
        StationaryPlusTrend(base, trend_variance=0.0)
    with pytest.raises(InvalidInputError, match="column 5"):
        StationaryPlusTrend(base, axis=5).k(X)
    with pytest.raises(InvalidInputError, match="theta"):
        k.theta = np.zeros(3)


def test_posterior_is_bayesian_linear_regression_with_a_gp_residual() -> None:
    """R&W eq. 2.42 with a zero prior mean of the coefficient: mean
    ``K*^T Ky^-1 y + R^T b``, ``b = A^-1 H Ky^-1 y``, ``A = B^-1 + H Ky^-1 H^T``,
    ``R = H* - H Ky^-1 K*``; covariance ``K** - K*^T Ky^-1 K* + R^T A^-1 R``."""
    base = SquaredExponential(0.6, 0.5)
    noise, B, c = 1e-2, 4.0, 0.2
    Xd = RNG.uniform(0, 1, size=(9, 2))
    y = 0.3 + 2.0 * (Xd[:, 0] - c) + 0.2 * np.sin(5 * Xd[:, 1])
    Xs = np.column_stack([np.linspace(0, 2, 6), np.linspace(0, 1, 6)])
    gp = ExactGP(StationaryPlusTrend(base, B, axis=0, origin=c), noise)
    gp.set_data(Xd, y)
    mean, var = gp.predict(Xs)
    Ky = base.k(Xd) + noise * np.eye(9)
    Ks, Kss = base.k(Xd, Xs), base.k(Xs)
    H, Hs = (Xd[:, 0] - c)[None, :], (Xs[:, 0] - c)[None, :]
    Ki = np.linalg.inv(Ky)
    A = 1.0 / B + H @ Ki @ H.T
    b = np.linalg.solve(A, H @ Ki @ y)
    R = Hs - H @ Ki @ Ks
    m_ref = Ks.T @ Ki @ y + R.T @ b
    v_ref = np.diag(Kss - Ks.T @ Ki @ Ks + R.T @ np.linalg.solve(A, R))
    assert np.allclose(mean, m_ref, rtol=1e-8, atol=1e-8)
    assert np.allclose(var, v_ref, rtol=1e-8, atol=1e-8)


def test_the_trend_extrapolates_where_the_stationary_model_reverts() -> None:
    """Data on a rising line through the trend's origin over s in [0, 0.3]: at s = 1 the trend
    model's mean follows the line and its standard deviation grows with the distance; the
    stationary one reverts to 0."""
    s = np.linspace(0, 0.3, 8)
    Xd = np.column_stack([s, np.zeros(8)])
    y = 3.0 * s
    Xs = np.array([[0.6, 0.0], [1.0, 0.0]])
    plain = ExactGP(Matern(2.5, [0.1, 0.5], 1.0), 1e-6).set_data(Xd, y)
    trend = ExactGP(
        StationaryPlusTrend(Matern(2.5, [0.1, 0.5], 1.0), trend_variance=25.0), 1e-6
    ).set_data(Xd, y)
    m0, _ = plain.predict(Xs)
    m1, v1 = trend.predict(Xs)
    assert abs(m0[1]) < 0.05  # reverted to the prior mean
    assert 2.0 < m1[1] <= 3.0 + 1e-6  # near the line's 3, shrunk a little towards 0 slope
    assert math.sqrt(v1[1]) > math.sqrt(v1[0])


def test_shared_mechanism_prior_and_bounds_for_the_trend() -> None:
    """log(trend_variance w_a^2 / s_y^2) ~ N(0, 1): a change over the box of the data's scale."""
    width = np.array([4.0, 1.0])
    gp = ExactGP(
        StationaryPlusTrend(Matern(2.5, [0.8, 0.2], 1.0), trend_variance=1.0, axis=0), 1e-4
    )
    Xd = RNG.uniform(0, 1, size=(10, 2))
    y = RNG.normal(0, 3.0, size=10)
    gp.set_data(Xd, y)
    learning = HyperparameterLearning()
    prior = learning.priors_for(gp, width)["trend_variance"]
    assert prior.mu == pytest.approx(math.log(np.var(y) / 16.0))
    assert prior.sigma == learning.variance_prior_sd
    lo, hi = learning.bounds_for(gp, width)["trend_variance"]
    assert lo == pytest.approx(1e-6 * np.var(y) / 16.0) and hi == pytest.approx(1e6 * np.var(y) / 16)
    assert learning.fit(gp, width, rng=0).refitted


def test_the_common_conservative_factor_shortens_only_the_length_scales() -> None:
    rng = np.random.default_rng(0)
    Xd = rng.uniform(size=(12, 2))
    y = np.sin(4 * Xd[:, 0]) + Xd[:, 1]
    gp = ExactGP(StationaryPlusTrend(Matern(2.5, [0.3, 0.3], 1.0), 1.0), 1e-4)
    learning = HyperparameterLearning()
    learning.fit(gp, [1.0, 1.0], X=Xd, y=y, rng=0)
    before = gp.kernel.theta.copy()
    c = learning.conservative(gp)
    assert c < 1.0
    shift = gp.kernel.theta - before
    assert shift[0] == 0.0 and shift[-1] == 0.0  # variance and trend variance kept
    assert np.allclose(shift[1:3], math.log(c), rtol=1e-12)


def test_the_trend_variance_goes_to_the_upper_edge_of_the_likelihood_ratio_set() -> None:
    """With a ceiling the slope variance is raised until the log posterior has dropped by
    0.5 chi2_p(0.95) (the others at their fit), and the length-scales are shortened as without."""
    from scipy.stats import chi2

    width = np.array([1.0, 1.0])
    Xd = np.column_stack([np.repeat([0.0, 0.1], 6), np.tile(np.linspace(0, 1, 6), 2)])
    y = np.sin(3 * Xd[:, 1]) + 1.5 * Xd[:, 0]

    def fitted() -> ExactGP:
        gp = ExactGP(
            StationaryPlusTrend(Matern(2.5, [0.2, 0.2], 1.0), trend_variance=1.0), 1e-4
        )
        HyperparameterLearning().fit(gp, width, X=Xd, y=y, rng=0)
        return gp

    gp = fitted()
    p0 = gp.free_parameters()
    best = gp.log_posterior(p0)[0]
    drop = 0.5 * chi2.ppf(0.95, df=p0.size)
    floor = np.array([0.025, 0.025])
    plain = fitted()
    axiswise_conservative(plain, floor)
    raised = fitted()
    axiswise_conservative(raised, floor, trend_ceiling=1e6)
    assert np.allclose(raised.kernel.lengthscale, plain.kernel.lengthscale, rtol=1e-9)
    assert plain.kernel.trend_variance == gp.kernel.trend_variance
    tv = raised.kernel.trend_variance
    assert tv > gp.kernel.trend_variance
    p = p0.copy()
    p[-2 if gp.fit_noise else -1] = math.log(tv)  # packed: ..., trend_variance, noise
    assert gp.log_posterior(p)[0] == pytest.approx(best - drop, abs=2e-2)
    capped = fitted()
    axiswise_conservative(capped, floor, trend_ceiling=1.01 * gp.kernel.trend_variance)
    assert capped.kernel.trend_variance == pytest.approx(1.01 * gp.kernel.trend_variance)


# ---------------------------------------------------------------------------------------------
# the safe family's learned default (trend_g=True): g's model is trend_kernel_g(space)

N_S = 30
H = 1.0


def _space():
    from boloop.spaces import SafeSpace

    return SafeSpace.grid((0.0, 1.0), N_S, [[0.0, 1.0]], 10)


def _gentle(p: np.ndarray) -> tuple[float, float]:
    """f, g of a healthy stand-in (test_safe_one_step's): g rises 1.0 per unit of s."""
    s, x = float(p[0]), float(p[1])
    return 1.0 - (x - 0.6) ** 2 + s, -2.0 + 2.9 * x + 1.0 * s


def _level(space, s: float) -> int:
    return int(np.argmin(np.abs(space.s_values - s)))


def test_trend_kernel_g_starts_at_the_default_plus_a_trend_from_the_safe_level() -> None:
    from boloop.algorithms.safe import trend_kernel_g
    from boloop.spaces import SafeSpace

    space = SafeSpace.grid((2.0, 6.0), 9, [[0.0, 1.0], [-1.0, 1.0]], 4)
    k = trend_kernel_g(space)
    assert isinstance(k, StationaryPlusTrend) and isinstance(k.base, Matern)
    assert k.axis == 0 and k.origin == 2.0  # zero at the safe level s = s_values[0]
    assert np.allclose(k.lengthscale, [0.8, 0.2, 0.4]) and k.variance == 1.0
    assert k.trend_variance == pytest.approx(1 / 16)
    P = space.points[:5]
    u = P[:, 0] - 2.0
    assert np.allclose(k.k(P), k.base.k(P) + np.outer(u, u) / 16, rtol=1e-12, atol=0)


def test_the_learned_default_is_the_trend_and_trend_g_false_the_matern_model() -> None:
    """trend_g=True (default) with learned hyperparameters and no kernel_g: g's model is
    trend_kernel_g(space), the same policy as the kernel given; False: the Matern kernel."""
    from boloop.algorithms.safe import MSafeOpt, trend_kernel_g

    space = _space()
    default = MSafeOpt(space, H, L_f=2.0, L_g_prime=0.5, seed=0)
    given = MSafeOpt(space, H, L_f=2.0, L_g_prime=0.5, seed=0, kernel_g=trend_kernel_g(space))
    off = MSafeOpt(space, H, L_f=2.0, L_g_prime=0.5, seed=0, trend_g=False)
    assert default.describe()["kernel_g"].startswith("StationaryPlusTrend(")
    assert default.describe()["trend_g"] is True
    assert default.describe()["kernel_g"] == given.describe()["kernel_g"]
    assert off.describe()["kernel_g"].startswith("Matern(")
    assert off.describe()["trend_g"] is False
    # the same proposals as the kernel given by hand (the variant measured before adoption)
    for _ in range(default.n_initial + 8):
        qa, qb = default.ask(), given.ask()
        assert np.array_equal(qa.x, qb.x)
        f, g = _gentle(qa.x)
        default.tell(qa.id, {"f": f, "g": g})
        given.tell(qb.id, {"f": f, "g": g})


def test_trend_g_applies_to_the_learned_default_only() -> None:
    """Ignored with a kernel of g given and with fixed, 'paper' or 'plain' hyperparameters (the
    option changes the learned default's model); not a boolean: refused."""
    from boloop.algorithms.safe import MSafeOpt, PredVar, SafeOptMC

    space = _space()
    kw = {"L_f": 2.0, "L_g_prime": 0.5, "seed": 0}
    fixed = Matern(2.5, [0.3, 0.3], 1.0)
    for extra in (
        {"kernel_g": fixed},
        {"kernel_f": fixed, "kernel_g": fixed, "fit_hyperparameters": False},
        {"hyperparameters": "paper"},
        {"hyperparameters": "plain"},
    ):
        on = MSafeOpt(space, H, **kw, **extra)
        off = MSafeOpt(space, H, **kw, trend_g=False, **extra)
        assert on.describe()["trend_g"] is False
        assert on.describe()["kernel_g"] == off.describe()["kernel_g"]
        assert on.describe()["kernel_g"].startswith("Matern(")
    for cls in (SafeOptMC, PredVar):
        assert cls(space, H, seed=0).describe()["kernel_g"].startswith("StationaryPlusTrend(")
        assert cls(space, H, seed=0, trend_g=False).describe()["kernel_g"].startswith("Matern(")
    with pytest.raises(InvalidInputError, match="trend_g"):
        MSafeOpt(space, H, **kw, trend_g="false")


@pytest.mark.parametrize("method", ["m-safeopt", "safeopt-mc", "predvar"])
def test_the_option_is_safe_and_grows_on_a_healthy_stand_in(method) -> None:
    """The learned default (with the trend): never unsafe here, the certified set grows well past the one-level
    cap, no stall, and after each refit the zero-mean model's slope variance is at least
    mean((g - h)^2) / w_s^2 (g - h may reach the limit within the box's range of s)."""
    from boloop.algorithms.safe import MSafeOpt, PredVar, SafeOptMC

    cls = {"m-safeopt": MSafeOpt, "safeopt-mc": SafeOptMC, "predvar": PredVar}[method]
    extra = {"L_f": 2.0, "L_g_prime": 0.5} if cls is MSafeOpt else {}
    space = _space()
    policy = cls(space, H, seed=0, **extra)
    assert policy.hyperparameters == "learned"
    top, gs = 0, []
    for _ in range(policy.n_initial + 25):
        q = policy.ask()
        f, g = _gentle(q.x)
        assert g <= H
        gs.append(g)
        policy.tell(q.id, {"f": f, "g": g})
        top = max(top, max(_level(space, s) for s in policy.recommend().boundary_s))
    assert top >= 5
    assert policy.stall() is None
    kern = policy.gp_g.kernel
    assert isinstance(kern, StationaryPlusTrend)
    m2 = float(np.mean((np.asarray(gs) - H) ** 2))
    # the last refit saw a prefix of the data (refits on growth): compare with a margin
    assert kern.trend_variance >= 0.5 * m2
    assert policy.describe()["kernel_g"].startswith("StationaryPlusTrend(")


def test_the_trend_carries_a_steep_rise_above_the_data() -> None:
    """Every row measured at the three lowest levels of a steep, uniform rise (0.41 per level;
    g reaches h four levels up): two levels above the data the trend model's mean of g (the
    learned default) is higher than the stationary model's (``trend_g=False``, which reverts
    towards the prior mean), and neither certifies above the truth."""
    from boloop.algorithms.safe import MSafeOpt

    space = _space()
    S, X_rows = space.s_values, space.x_points[:, 0]

    def g(s, x):
        return H - 1.5 + 0.1 * x + 12.0 * s

    pts = [(S[j], x) for j in range(3) for x in X_rows]
    P = np.array(pts)
    yf = np.array([s + x for s, x in pts])
    yg = np.array([g(s, x) for s, x in pts])
    truth = np.array([np.max(np.flatnonzero(g(S, x) <= H)) for x in X_rows])
    means, tops = [], []
    for trend in (False, True):
        pol = MSafeOpt(
            space, H, L_f=2.0, L_g_prime=0.5, seed=0, initial_data=(P, yf, yg), trend_g=trend
        )
        bounds, _ = pol.state()
        means.append(bounds.mean_g[:, 4])
        tops.append(np.searchsorted(S, pol.recommend().boundary_s))
    assert np.all(means[1] > means[0])
    assert np.all(means[1] - means[0] > 0.1)
    for top in tops:
        assert np.all(top <= truth)


def test_a_study_pins_trend_g_and_a_study_from_before_keeps_the_matern_model() -> None:
    """A study created now pins trend_g=True (so a later default cannot change it); given
    trend_g=false, its g model is the Matern kernel. A study whose options and pins lack
    trend_g was created before the option existed (the learned model was the Matern kernel
    then): it is built with trend_g=False, so its log replays."""
    from boloop.study import create_study
    from boloop.study.pinning import policy_options
    from study_samples import reactor_space

    space = reactor_space(6, 5)
    new = create_study("r", "m-safeopt", space, seed=0, storage="memory://trend-pin-a")
    assert new.pinned_defaults["trend_g"] is True
    assert new.policy.describe()["kernel_g"].startswith("StationaryPlusTrend(")
    off = create_study(
        "r", "m-safeopt", space, seed=0, storage="memory://trend-pin-b", trend_g=False
    )
    assert "trend_g" not in off.pinned_defaults and off.options["trend_g"] is False
    assert off.policy.describe()["kernel_g"].startswith("Matern(")
    # the pins of a study created before trend_g existed (every other default pinned)
    before = {k: v for k, v in new.pinned_defaults.items() if k != "trend_g"}
    assert policy_options("m-safeopt", "safe", {}, before)["trend_g"] is False
    assert policy_options("predvar", "safe", {}, {})["trend_g"] is False
    assert policy_options("m-safeopt", "safe", {"trend_g": True}, before)["trend_g"] is True
    assert policy_options("m-safeopt", "safe", {}, new.pinned_defaults)["trend_g"] is True
