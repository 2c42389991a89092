"""The intercept of :class:`boloop.gp.kernels.StationaryPlusTrend` (``offset_variance``, the
unknown constant of the safe family's ``offset_g`` model of g): values against scikit-learn's
``ConstantKernel * Matern + ConstantKernel * DotProduct + ConstantKernel`` and the closed form,
gradients against finite differences and the fast traces, the GP posterior against Bayesian
linear regression on the basis ``(1, x_a - c)`` with a GP residual (Rasmussen & Williams 2006,
eq. 2.42) and its vague-prior limit, monotonicity of the posterior variance in the intercept's
prior variance, the shared mechanism's prior and bounds, and the likelihood-ratio edge.

Tolerances: values 1e-12 relative; gradients 1e-6 relative to the largest entry (central
differences, step 1e-6); posteriors 1e-8 (the vague limit 1e-4, a finite variance of 1e8).
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

RNG = np.random.default_rng(11)
X = RNG.uniform(0, 2, size=(12, 3))
Y = RNG.uniform(0, 2, size=(7, 3))
LS = np.array([0.5, 1.1, 2.0])


def _kernel(fixed=(), axis: int = 0, origin: float = 0.3) -> StationaryPlusTrend:
    return StationaryPlusTrend(
        Matern(2.5, LS, 0.9),
        trend_variance=1.7,
        axis=axis,
        origin=origin,
        offset_variance=2.3,
        fixed=fixed,
    )


def test_one_dimension_matches_sklearn_constant_plus_matern_plus_dot_product() -> None:
    ours = StationaryPlusTrend(
        Matern(2.5, 0.4, 1.3), trend_variance=2.5, axis=0, origin=0.0, offset_variance=0.7
    )
    theirs = (
        skk.ConstantKernel(1.3) * skk.Matern(0.4, nu=2.5)
        + skk.ConstantKernel(2.5) * skk.DotProduct(sigma_0=0.0, sigma_0_bounds="fixed")
        + skk.ConstantKernel(0.7)
    )
    x, y = X[:, :1], Y[:, :1]
    assert np.allclose(ours.k(x, y), theirs(x, y), rtol=1e-12, atol=0)
    assert np.allclose(ours.k(x), theirs(x), rtol=1e-12, atol=0)
    assert np.allclose(ours.diag(x), theirs.diag(x), rtol=1e-12, atol=0)
    # sklearn's theta [log c1, log l, log c2, log c3] is ours
    # [log variance, log l, log trend_variance, log offset_variance]
    assert np.allclose(ours.theta, theirs.theta, rtol=1e-14)
    assert ours.theta_names == ["variance", "lengthscale", "trend_variance", "offset_variance"]
    K, dK = ours.gradient(x)
    Ks, dKs = theirs(x, eval_gradient=True)
    assert np.allclose(K, Ks, rtol=1e-12, atol=0)
    assert np.allclose(dK, np.moveaxis(dKs, -1, 0), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("axis,origin", [(0, 0.3), (2, -1.0)])
def test_values_are_the_closed_form(axis, origin) -> None:
    k = _kernel(axis=axis, origin=origin)
    base = Matern(2.5, LS, 0.9)
    u, v = X[:, axis] - origin, Y[:, axis] - origin
    ref = base.k(X, Y) + 1.7 * np.outer(u, v) + 2.3
    assert np.allclose(k.k(X, Y), ref, rtol=1e-12, atol=0)
    assert np.allclose(k.diag(X), 0.9 + 1.7 * u * u + 2.3, rtol=1e-12, atol=0)
    assert np.allclose(np.diag(k.k(X)), k.diag(X), rtol=1e-12, atol=0)
    assert np.all(np.linalg.eigvalsh(k.k(X)) > -1e-10)
    assert k.theta_names[-2:] == ["trend_variance", "offset_variance"]
    assert k.has_offset and not StationaryPlusTrend(base).has_offset


@pytest.mark.parametrize(
    "fixed",
    [(), ("variance",), ("lengthscale",), ("trend_variance",), ("offset_variance",),
     ("trend_variance", "offset_variance")],
)
def test_gradient_matches_finite_differences_and_fast_traces(fixed) -> None:
    k = _kernel(fixed=fixed)
    check_gradient_and_traces(k, X, RNG)


def test_likelihood_gradient_matches_finite_differences() -> None:
    """ExactGP's log marginal likelihood gradient (R&W eq. 5.9) with the intercept free."""
    Xd = RNG.uniform(0, 1, size=(10, 2))
    y = -1.0 + 0.8 * Xd[:, 0] + 0.1 * np.sin(4 * Xd[:, 1])
    gp = ExactGP(
        StationaryPlusTrend(Matern(2.5, [0.3, 0.4], 0.2), 0.9, offset_variance=1.5), 1e-3
    ).set_data(Xd, y)
    p = gp.free_parameters()
    _, grad = gp.log_marginal_likelihood(p, eval_gradient=True)
    eps = 1e-6
    for i in range(p.size):
        up, dn = p.copy(), p.copy()
        up[i] += eps
        dn[i] -= eps
        num = (gp.log_marginal_likelihood(up) - gp.log_marginal_likelihood(dn)) / (2 * eps)
        assert grad[i] == pytest.approx(num, rel=1e-5, abs=1e-7)


def test_theta_round_trip_and_errors() -> None:
    k = _kernel()
    other = k.with_theta(k.theta + 0.5)
    assert np.allclose(other.theta, k.theta + 0.5)
    assert other.offset_variance == pytest.approx(2.3 * math.exp(0.5))
    assert k.offset_variance == 2.3  # with_theta copies
    k.theta = np.log([2.0, 1.0, 1.0, 1.0, 3.0, 4.0])
    assert k.trend_variance == pytest.approx(3.0) and k.offset_variance == pytest.approx(4.0)
    with pytest.raises(InvalidInputError, match="theta"):
        k.theta = np.zeros(5)
    with pytest.raises(InvalidInputError, match="offset_variance"):
        StationaryPlusTrend(Matern(2.5, LS, 0.9), offset_variance=0.0)
    with pytest.raises(InvalidInputError, match="unknown hyperparameters"):
        StationaryPlusTrend(Matern(2.5, LS, 0.9), fixed=("offset_variance",))  # no intercept
    assert "offset_variance=2.3" in repr(_kernel())
    assert "offset" not in repr(StationaryPlusTrend(Matern(2.5, LS, 0.9)))


def _blr_posterior(base, noise, Binv, c, Xd, y, Xs):
    """R&W eq. 2.42 with a zero prior mean of the coefficients on the basis (1, x_0 - c):
    mean ``K*^T Ky^-1 y + R^T b``, ``b = A^-1 H Ky^-1 y``, ``A = B^-1 + H Ky^-1 H^T``,
    ``R = H* - H Ky^-1 K*``; covariance ``K** - K*^T Ky^-1 K* + R^T A^-1 R``; ``B^-1`` may be
    singular (a vague prior on a coefficient)."""
    n = Xd.shape[0]
    Ky = base.k(Xd) + noise * np.eye(n)
    Ks, Kss = base.k(Xd, Xs), base.k(Xs)
    H = np.vstack([np.ones(n), Xd[:, 0] - c])
    Hs = np.vstack([np.ones(Xs.shape[0]), Xs[:, 0] - c])
    Ki = np.linalg.inv(Ky)
    A = Binv + H @ Ki @ H.T
    b = np.linalg.solve(A, H @ Ki @ y)
    R = Hs - H @ Ki @ Ks
    mean = Ks.T @ Ki @ y + R.T @ b
    var = np.diag(Kss - Ks.T @ Ki @ Ks + R.T @ np.linalg.solve(A, R))
    return mean, var


def test_posterior_is_bayesian_linear_regression_with_intercept_and_slope() -> None:
    base = SquaredExponential(0.6, 0.5)
    noise, B, C, c = 1e-2, 4.0, 3.0, 0.2
    Xd = RNG.uniform(0, 1, size=(9, 2))
    y = -1.3 + 2.0 * (Xd[:, 0] - c) + 0.2 * np.sin(5 * Xd[:, 1])
    Xs = np.column_stack([np.linspace(0, 2, 6), np.linspace(0, 1, 6)])
    gp = ExactGP(StationaryPlusTrend(base, B, axis=0, origin=c, offset_variance=C), noise)
    gp.set_data(Xd, y)
    mean, var = gp.predict(Xs)
    m_ref, v_ref = _blr_posterior(base, noise, np.diag([1 / C, 1 / B]), c, Xd, y, Xs)
    assert np.allclose(mean, m_ref, rtol=1e-8, atol=1e-8)
    assert np.allclose(var, v_ref, rtol=1e-8, atol=1e-8)


def test_a_large_offset_variance_tends_to_the_vague_prior_limit() -> None:
    """B^-1 = diag(0, 1 / B): the intercept estimated by generalised least squares, its
    uncertainty added (R&W eq. 2.42 with a vague prior on the constant)."""
    base = Matern(2.5, [0.3, 0.5], 0.05)
    noise, B, c = 1e-4, 2.0, 0.0
    Xd = np.column_stack([np.repeat([0.0, 0.1], 5), np.tile(np.linspace(0, 1, 5), 2)])
    y = -3.0 + 1.5 * Xd[:, 0] + 0.1 * np.cos(3 * Xd[:, 1])
    Xs = np.column_stack([np.linspace(0, 1, 7), np.full(7, 0.4)])
    gp = ExactGP(StationaryPlusTrend(base, B, origin=c, offset_variance=1e8), noise)
    gp.set_data(Xd, y)
    mean, var = gp.predict(Xs)
    m_ref, v_ref = _blr_posterior(base, noise, np.diag([0.0, 1 / B]), c, Xd, y, Xs)
    assert np.allclose(mean, m_ref, rtol=1e-4, atol=1e-4)
    assert np.allclose(var, v_ref, rtol=1e-4, atol=1e-6)


def test_the_posterior_variance_does_not_decrease_with_the_offset_variance() -> None:
    """An independent constant added to the prior never narrows the posterior (the worse case
    for a safety bound is the largest offset variance): checked at and away from the data."""
    base = Matern(2.5, [0.2, 0.3], 0.3)
    Xd = RNG.uniform(0, 0.3, size=(8, 2))
    y = -1.0 + RNG.normal(0, 0.2, size=8)
    Xs = np.vstack([Xd[:3], RNG.uniform(0, 1, size=(20, 2))])
    last = None
    for C in (1e-3, 0.1, 1.0, 10.0, 1e3):
        gp = ExactGP(StationaryPlusTrend(base, 0.5, offset_variance=C), 1e-4).set_data(Xd, y)
        _, var = gp.predict(Xs)
        if last is not None:
            assert np.all(var >= last - 1e-10)
        last = var


def test_shared_mechanism_prior_and_bounds_for_the_intercept() -> None:
    """log(offset_variance / m_y^2) ~ N(0, 1), m_y^2 the mean square of y about the GP's
    prior mean; bounds 1e-6 to 1e6 times m_y^2."""
    width = np.array([4.0, 1.0])
    Xd = RNG.uniform(0, 1, size=(10, 2))
    y = -5.0 + RNG.normal(0, 0.5, size=10)
    gp = ExactGP(
        StationaryPlusTrend(Matern(2.5, [0.8, 0.2], 1.0), 1.0, offset_variance=1.0), 1e-4
    ).set_data(Xd, y)
    learning = HyperparameterLearning()
    m2 = float(np.mean(y**2))
    prior = learning.priors_for(gp, width)["offset_variance"]
    assert prior.mu == pytest.approx(math.log(m2)) and prior.sigma == learning.variance_prior_sd
    lo, hi = learning.bounds_for(gp, width)["offset_variance"]
    assert lo == pytest.approx(1e-6 * m2) and hi == pytest.approx(1e6 * m2)
    # the trend's own prior is unchanged by the intercept (the data's spread)
    assert learning.priors_for(gp, width)["trend_variance"].mu == pytest.approx(
        math.log(np.var(y) / 16.0)
    )
    assert learning.fit(gp, width, rng=0).refitted
    # about a constant prior mean the second moment is taken about it
    twin = ExactGP(
        StationaryPlusTrend(Matern(2.5, [0.8, 0.2], 1.0), 1.0, offset_variance=1.0),
        1e-4,
        mean="constant",
        mean_constant=-5.0,
    ).set_data(Xd, y)
    assert learning.priors_for(twin, width)["offset_variance"].mu == pytest.approx(
        math.log(np.mean((y + 5.0) ** 2))
    )


def test_the_offset_variance_goes_to_the_upper_edge_of_the_likelihood_ratio_set() -> None:
    from scipy.stats import chi2

    width = np.array([1.0, 1.0])
    Xd = np.column_stack([np.repeat([0.0, 0.1], 6), np.tile(np.linspace(0, 1, 6), 2)])
    y = -2.0 + 0.3 * np.sin(3 * Xd[:, 1]) + 1.5 * Xd[:, 0]

    def fitted() -> ExactGP:
        gp = ExactGP(
            StationaryPlusTrend(Matern(2.5, [0.2, 0.2], 1.0), 1.0, offset_variance=1.0), 1e-4
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
    axiswise_conservative(raised, floor, offset_ceiling=1e6)
    assert np.allclose(raised.kernel.lengthscale, plain.kernel.lengthscale, rtol=1e-9)
    assert raised.kernel.trend_variance == gp.kernel.trend_variance  # no trend ceiling given
    assert plain.kernel.offset_variance == gp.kernel.offset_variance
    cv = raised.kernel.offset_variance
    assert cv > gp.kernel.offset_variance
    p = p0.copy()
    p[gp.kernel.theta_names.index("offset_variance")] = math.log(cv)  # no fixed entries
    assert gp.log_posterior(p)[0] == pytest.approx(best - drop, abs=2e-2)
    capped = fitted()
    axiswise_conservative(capped, floor, offset_ceiling=1.01 * gp.kernel.offset_variance)
    assert capped.kernel.offset_variance == pytest.approx(1.01 * gp.kernel.offset_variance)
