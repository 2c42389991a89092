"""ExactGP against scikit-learn's GaussianProcessRegressor (an independent oracle), finite
differences of the log marginal likelihood, Cholesky appends, duplicates and tiny noise.

Tolerances: 1e-8 relative for mean, variance and log marginal likelihood against sklearn (issue 2);
finite-difference gradients to 1e-5 relative (central differences with step 1e-6).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as skk

from boloop.gp import (
    ExactGP,
    GammaPrior,
    Linear,
    LogNormalPrior,
    Matern,
    SquaredExponential,
    robust_cholesky,
)

RTOL = 1e-8


def _data(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 2.0, size=(n, d))
    y = np.sin(3.0 * X[:, 0]) + 0.5 * X.sum(axis=1) + 0.1 * rng.standard_normal(n)
    return X, y


# (boloop kernel, equivalent sklearn kernel) pairs, all with a non-unit output scale
def _kernel_pairs(d: int):
    ls_ard = np.linspace(0.4, 1.3, d)
    return {
        "se-iso": (
            SquaredExponential(lengthscale=0.7, variance=2.3),
            skk.ConstantKernel(2.3) * skk.RBF(0.7),
        ),
        "se-ard": (
            SquaredExponential(lengthscale=ls_ard, variance=1.7),
            skk.ConstantKernel(1.7) * skk.RBF(ls_ard),
        ),
        "matern12": (
            Matern(0.5, lengthscale=0.9, variance=1.4),
            skk.ConstantKernel(1.4) * skk.Matern(0.9, nu=0.5),
        ),
        "matern32": (
            Matern(1.5, lengthscale=0.6, variance=0.8),
            skk.ConstantKernel(0.8) * skk.Matern(0.6, nu=1.5),
        ),
        "matern52": (
            Matern(2.5, lengthscale=0.5, variance=3.1),
            skk.ConstantKernel(3.1) * skk.Matern(0.5, nu=2.5),
        ),
        "matern52-ard": (
            Matern(2.5, lengthscale=ls_ard, variance=1.2),
            skk.ConstantKernel(1.2) * skk.Matern(ls_ard, nu=2.5),
        ),
        "matern32-ard": (
            Matern(1.5, lengthscale=ls_ard, variance=0.6),
            skk.ConstantKernel(0.6) * skk.Matern(ls_ard, nu=1.5),
        ),
        "matern12-ard": (
            Matern(0.5, lengthscale=ls_ard, variance=2.0),
            skk.ConstantKernel(2.0) * skk.Matern(ls_ard, nu=0.5),
        ),
    }


KERNEL_NAMES = list(_kernel_pairs(3))


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(1e-300, float(np.max(np.abs(b)))))


@pytest.mark.parametrize("name", KERNEL_NAMES)
@pytest.mark.parametrize("noise", [1e-2, 1e-4])
def test_posterior_and_lml_match_sklearn_zero_mean(name: str, noise: float) -> None:
    """Mean, variance, covariance and LML equal sklearn's with the same fixed kernel, 1e-8 relative."""
    d = 3
    X, y = _data(40, d, seed=1)
    Xs = np.random.default_rng(2).uniform(-1.5, 2.5, size=(300, d))
    ours_k, sk_k = _kernel_pairs(d)[name]
    gp = ExactGP(ours_k, noise_variance=noise).set_data(X, y)
    sk = GaussianProcessRegressor(sk_k, alpha=noise, optimizer=None, normalize_y=False).fit(X, y)

    mean, var = gp.predict(Xs)
    sk_mean, sk_std = sk.predict(Xs, return_std=True)
    assert _rel(mean, sk_mean) < RTOL
    assert _rel(var, sk_std**2) < RTOL

    # posterior covariance between two sets, and the full-covariance path of predict
    _, sk_cov = sk.predict(Xs[:50], return_cov=True)
    assert _rel(gp.posterior_covariance(Xs[:50], Xs[:50]), sk_cov) < RTOL
    m_full, cov_full = gp.predict(Xs[:50], full_cov=True)
    assert _rel(m_full, sk_mean[:50]) < RTOL
    assert _rel(cov_full, sk_cov) < RTOL

    lml = gp.log_marginal_likelihood()
    assert abs(lml - sk.log_marginal_likelihood_value_) <= RTOL * abs(
        sk.log_marginal_likelihood_value_
    )


@pytest.mark.parametrize("name", ["se-ard", "matern12", "matern32", "matern52-ard"])
def test_constant_mean_matches_sklearn_normalize_y(name: str) -> None:
    """A constant prior mean is what sklearn expresses with ``normalize_y=True``.

    sklearn fits a GP (k, alpha) to ``(y - mu) / s``; that is our GP with mean constant ``mu``,
    kernel variance ``s^2 c`` and noise ``s^2 alpha``. Its LML is over the normalised targets, so
    ours equals it minus ``n log s`` (the Jacobian). Tolerance 1e-8 relative.
    """
    d = 3
    X, y = _data(35, d, seed=3)
    y = y + 4.0  # a clearly non-zero mean
    mu, s = float(np.mean(y)), float(np.std(y))
    Xs = np.random.default_rng(4).uniform(-1.0, 2.0, size=(200, d))
    ours_k, sk_k = _kernel_pairs(d)[name]
    alpha = 1e-3
    ours_k.variance = ours_k.variance * s * s
    gp = ExactGP(ours_k, noise_variance=alpha * s * s, mean="constant", mean_constant=mu)
    gp.set_data(X, y)
    sk = GaussianProcessRegressor(sk_k, alpha=alpha, optimizer=None, normalize_y=True).fit(X, y)
    mean, var = gp.predict(Xs)
    sk_mean, sk_std = sk.predict(Xs, return_std=True)
    assert _rel(mean, sk_mean) < RTOL
    assert _rel(var, sk_std**2) < RTOL
    expected = sk.log_marginal_likelihood_value_ - len(y) * math.log(s)
    assert abs(gp.log_marginal_likelihood() - expected) <= RTOL * abs(expected)


def test_linear_kernel_matches_sklearn_dot_product() -> None:
    """``Linear(variance)`` equals sklearn ``ConstantKernel * DotProduct(sigma_0=0)``, 1e-8 relative."""
    X, y = _data(30, 2, seed=5)
    Xs = np.random.default_rng(6).uniform(-1, 2, size=(40, 2))
    gp = ExactGP(Linear(variance=0.7), noise_variance=0.05).set_data(X, y)
    sk_k = skk.ConstantKernel(0.7) * skk.DotProduct(sigma_0=0.0, sigma_0_bounds="fixed")
    sk = GaussianProcessRegressor(sk_k, alpha=0.05, optimizer=None).fit(X, y)
    mean, var = gp.predict(Xs)
    sk_mean, sk_std = sk.predict(Xs, return_std=True)
    assert _rel(mean, sk_mean) < RTOL
    assert _rel(var, sk_std**2) < 1e-7  # variances are differences of O(1) terms here
    lml = gp.log_marginal_likelihood()
    assert abs(lml - sk.log_marginal_likelihood_value_) <= RTOL * abs(lml)


@pytest.mark.parametrize(
    "kind,seed", [("se-ard", 0), ("matern52-ard", 1), ("matern32-iso", 2), ("matern12-iso", 3)]
)
def test_fitted_optimum_at_least_as_good_as_sklearn(kind: str, seed: int) -> None:
    """Same data, same model (variance * kernel + white noise), same number of restarts (3).

    Both optima are evaluated by the same function (our LML). sklearn's optimum is feasible for us
    (our noise floor 1e-10 is below sklearn's WhiteKernel bound 1e-5, sklearn's default
    ``alpha = 1e-10`` is added to its noise). Margin: ours >= sklearn's - 1e-6 * |sklearn's|.
    """
    d = 2
    X, y = _data(30, d, seed=10 + seed)
    if kind == "se-ard":
        ours_k, base = SquaredExponential([1.0, 1.0]), skk.RBF([1.0, 1.0])
    elif kind == "matern52-ard":
        ours_k, base = Matern(2.5, [1.0, 1.0]), skk.Matern([1.0, 1.0], nu=2.5)
    elif kind == "matern32-iso":
        ours_k, base = Matern(1.5, 1.0), skk.Matern(1.0, nu=1.5)
    else:
        ours_k, base = Matern(0.5, 1.0), skk.Matern(1.0, nu=0.5)
    sk_kernel = skk.ConstantKernel(1.0) * base + skk.WhiteKernel(0.1)
    sk = GaussianProcessRegressor(sk_kernel, n_restarts_optimizer=3, random_state=seed).fit(X, y)

    gp = ExactGP(ours_k, noise_variance=0.1, fit_noise=True)
    gp.fit(X, y, n_restarts=3, seed=seed)
    ours = gp.log_marginal_likelihood()

    # sklearn's optimum evaluated by our function: theta = [log c, log l..., log white]
    th = sk.kernel_.theta
    judge = ExactGP(ours_k.clone(), noise_variance=float(np.exp(th[-1])) + 1e-10).set_data(X, y)
    judge.kernel.theta = th[:-1]
    judge.set_data(X, y)
    theirs = judge.log_marginal_likelihood()
    assert abs(theirs - sk.log_marginal_likelihood_value_) < 1e-6 * abs(theirs)
    assert ours >= theirs - 1e-6 * abs(theirs), (ours, theirs)


def _fd_grad(f, p: np.ndarray, h: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(p)
    for i in range(p.size):
        e = np.zeros_like(p)
        e[i] = h
        g[i] = (f(p + e) - f(p - e)) / (2 * h)
    return g


@pytest.mark.parametrize(
    "kernel",
    [
        SquaredExponential([0.5, 1.2], variance=1.5),
        Matern(0.5, 0.8, variance=0.7),
        Matern(1.5, [0.6, 0.9], variance=1.1),
        Matern(2.5, 0.7, variance=2.0),
        Matern(2.5, [0.6, 0.9], variance=2.0, fixed=("variance",)),
        Linear(0.5),
    ],
    ids=["se-ard", "m12", "m32-ard", "m52", "m52-ard-fixed-var", "linear"],
)
@pytest.mark.parametrize("fit_noise", [False, True])
@pytest.mark.parametrize("mean", ["zero", "constant"])
def test_lml_gradient_matches_finite_differences(kernel, fit_noise: bool, mean: str) -> None:
    """Analytic LML gradient (R&W eq. 5.9) vs central differences: 1e-5 relative to the gradient norm."""
    X, y = _data(25, 2, seed=7)
    gp = ExactGP(kernel, noise_variance=0.05, fit_noise=fit_noise, mean=mean, mean_constant=0.3)
    gp.set_data(X, y)
    p = gp.free_parameters() + 0.1  # away from the initial values
    val, grad = gp.log_marginal_likelihood(p, eval_gradient=True)
    assert val == pytest.approx(gp.log_marginal_likelihood(p), rel=1e-12)
    fd = _fd_grad(lambda q: gp.log_marginal_likelihood(q), p)
    assert grad.shape == p.shape
    assert np.max(np.abs(grad - fd)) <= 1e-5 * max(1.0, float(np.max(np.abs(fd))))


def test_log_posterior_gradient_with_priors() -> None:
    """LML + log-normal and gamma priors (on length-scales, variance and noise) vs central differences."""
    X, y = _data(25, 2, seed=8)
    priors = {
        "lengthscale": LogNormalPrior(mu=0.0, sigma=0.7),
        "variance": GammaPrior(shape=2.0, rate=1.5),
        "noise": LogNormalPrior(mu=-3.0, sigma=1.0),
    }
    gp = ExactGP(
        Matern(2.5, [0.5, 0.8]), noise_variance=0.05, fit_noise=True, mean="constant", priors=priors
    )
    gp.set_data(X, y)
    p = gp.free_parameters() + 0.05
    val, grad = gp.log_posterior(p)
    fd = _fd_grad(lambda q: gp.log_posterior(q)[0], p)
    assert np.max(np.abs(grad - fd)) <= 1e-5 * max(1.0, float(np.max(np.abs(fd))))
    # and the prior value is the documented density: LML + sum of the priors' log densities
    lml = gp.log_marginal_likelihood(p)
    from scipy import stats

    th = p
    expected = (
        lml
        + stats.norm(0.0, 0.7).logpdf(th[1])
        + stats.norm(0.0, 0.7).logpdf(th[2])
        # Gamma on variance, as a density of log(variance): gamma.pdf(v) * v
        + stats.gamma(a=2.0, scale=1 / 1.5).logpdf(np.exp(th[0]))
        + th[0]
        + stats.norm(-3.0, 1.0).logpdf(th[3])
    )
    assert val == pytest.approx(expected, rel=1e-10)


def test_fit_with_priors_moves_towards_prior() -> None:
    """A tight log-normal prior on the length-scale pins the fitted length-scale near its centre."""
    X, y = _data(20, 1, seed=9)
    centre = math.log(0.05)
    gp = ExactGP(
        SquaredExponential(1.0),
        noise_variance=0.01,
        priors={"lengthscale": LogNormalPrior(mu=centre, sigma=0.01)},
    )
    gp.fit(X, y, n_restarts=2, seed=0)
    assert abs(math.log(gp.kernel.lengthscale) - centre) < 0.05
    free = ExactGP(SquaredExponential(1.0), noise_variance=0.01).fit(X, y, n_restarts=2, seed=0)
    assert abs(math.log(free.kernel.lengthscale) - centre) > 0.5  # the prior did the pinning


def test_fit_is_reproducible_and_respects_fixed_and_noise_floor() -> None:
    X, y = _data(30, 2, seed=11)
    a = ExactGP(Matern(2.5, [1.0, 1.0], variance=2.0, fixed=("variance",)), 0.1, fit_noise=True)
    b = ExactGP(Matern(2.5, [1.0, 1.0], variance=2.0, fixed=("variance",)), 0.1, fit_noise=True)
    a.fit(X, y, n_restarts=2, seed=3)
    b.fit(X, y, n_restarts=2, seed=3)
    assert np.array_equal(a.kernel.theta, b.kernel.theta)
    assert a.noise_variance == b.noise_variance
    assert a.kernel.variance == 2.0  # fixed
    # noiseless data: the fitted noise stays at or above the floor
    y0 = np.sin(X[:, 0]) + X[:, 1]
    c = ExactGP(Matern(2.5, [1.0, 1.0]), 0.1, fit_noise=True, noise_floor=1e-6).fit(X, y0, seed=0)
    assert c.noise_variance >= 1e-6 * (1 - 1e-12)
    mean, var = c.predict(X)
    assert np.all(np.isfinite(var)) and np.all(var >= 0)


def test_fit_constant_mean_recovers_offset() -> None:
    """With a constant mean fitted, far from data the posterior mean returns to the fitted constant."""
    X, y = _data(40, 1, seed=12)
    gp = ExactGP(SquaredExponential(0.5), 0.01, fit_noise=True, mean="constant")
    gp.fit(X, y + 10.0, n_restarts=2, seed=0)
    assert 8.0 < gp.mean_constant < 12.0
    far = gp.predict(np.array([[100.0]]))[0][0]
    assert far == pytest.approx(gp.mean_constant, abs=1e-8)


def test_prediction_chunking_is_exact() -> None:
    X, y = _data(30, 2, seed=13)
    gp = ExactGP(Matern(1.5, [0.5, 0.7]), 1e-3).set_data(X, y)
    Xs = np.random.default_rng(0).uniform(-1, 2, size=(1000, 2))
    m1, v1 = gp.predict(Xs, chunk_size=37)
    m2, v2 = gp.predict(Xs, chunk_size=100_000)
    assert np.allclose(m1, m2, rtol=1e-12, atol=1e-12)
    assert np.allclose(v1, v2, rtol=1e-12, atol=1e-12)
    m3, v3 = gp.predict(Xs, chunk_size=0)  # a non-positive chunk size means one row at a time
    assert np.allclose(m3, m2, rtol=1e-12, atol=1e-12)
    assert np.allclose(v3, v2, rtol=1e-12, atol=1e-12)


def test_empty_gp_predicts_the_prior() -> None:
    gp = ExactGP(SquaredExponential(0.5, variance=2.0), 1e-3, mean="constant", mean_constant=1.5)
    mean, var = gp.predict(np.zeros((3, 2)))
    assert np.all(mean == 1.5) and np.all(var == 2.0)
    assert gp.information_gain() == 0.0


@pytest.mark.parametrize("noise", [1e-3, 0.1, 1.0])
def test_information_gain_equals_logdet_formula(noise: float) -> None:
    """``0.5 logdet(I + K / noise)`` (Srinivas et al. 2010) by slogdet, 1e-10 relative."""
    X, _ = _data(50, 2, seed=14)
    k = Matern(2.5, [0.4, 0.6], variance=1.3)
    gp = ExactGP(k, noise).set_data(X, np.zeros(50))
    sign, logdet = np.linalg.slogdet(np.eye(50) + k.k(X) / noise)
    assert sign > 0
    assert gp.information_gain() == pytest.approx(0.5 * logdet, rel=1e-10)
    # the incremental factor gives the same
    inc = ExactGP(k, noise)
    for i in range(50):
        inc.condition(X[i], 0.0)
    assert inc.information_gain() == pytest.approx(0.5 * logdet, rel=1e-10)


# ---------------------------------------------------------------- Cholesky appends


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(
    seed=st.integers(0, 2**31 - 1),
    n_init=st.integers(0, 20),
    n_append=st.integers(100, 300),
    batch=st.integers(1, 4),
    d=st.integers(1, 3),
    noise=st.sampled_from([1e-1, 1e-2, 1e-3]),
    kind=st.sampled_from(["se", "m12", "m32", "m52"]),
    mean=st.sampled_from(["zero", "constant"]),
)
def test_cholesky_append_equals_recompute(seed, n_init, n_append, batch, d, noise, kind, mean):
    """Hundreds of appends (in batches of 1-4 points) vs ``set_data`` on all points: the factor,
    the whitened residual and the posterior agree to 1e-9 (relative to the prior scale)."""
    rng = np.random.default_rng(seed)
    n = n_init + n_append
    X = rng.uniform(0, 1, size=(n, d))
    y = rng.standard_normal(n)
    ls = 0.3 + 0.4 * rng.random(d)
    kern = {
        "se": SquaredExponential(ls, 1.3),
        "m12": Matern(0.5, ls, 1.3),
        "m32": Matern(1.5, ls, 1.3),
        "m52": Matern(2.5, ls, 1.3),
    }[kind]
    gp = ExactGP(kern, noise, mean=mean, mean_constant=0.4)
    if n_init:
        gp.set_data(X[:n_init], y[:n_init])
    i = n_init
    while i < n:
        j = min(n, i + batch)
        gp.condition(X[i:j], y[i:j])
        i = j
    ref = ExactGP(kern.clone(), noise, mean=mean, mean_constant=0.4).set_data(X, y)
    assert gp.n == ref.n == n
    assert np.max(np.abs(gp.cholesky_factor - ref.cholesky_factor)) < 1e-9
    assert np.max(np.abs(gp.whitened_residual - ref.whitened_residual)) < 1e-9 * max(
        1.0, float(np.max(np.abs(ref.whitened_residual)))
    )
    Xs = rng.uniform(-0.2, 1.2, size=(64, d))
    m1, v1 = gp.predict(Xs)
    m2, v2 = ref.predict(Xs)
    assert np.max(np.abs(m1 - m2)) < 1e-9 * max(1.0, float(np.max(np.abs(m2))))
    assert np.max(np.abs(v1 - v2)) < 1e-9 * 1.3


# ---------------------------------------------------------------- degenerate inputs


@pytest.mark.parametrize("noise", [1e-10, 0.0])
@pytest.mark.parametrize("kind", ["se", "m52", "m12"])
def test_duplicates_and_tiny_noise_stay_finite(noise: float, kind: str) -> None:
    """Exact duplicates with noise 1e-10 (or 0): neither set_data nor condition nor fit raise, and
    every variance is finite and >= 0."""
    kern = {"se": SquaredExponential(0.5), "m52": Matern(2.5, 0.5), "m12": Matern(0.5, 0.5)}[kind]
    rng = np.random.default_rng(0)
    base = rng.random((10, 2))
    X = np.vstack([base, base, base[:3], base[:3]])
    y = rng.standard_normal(X.shape[0])
    Xs = np.vstack([base, rng.random((50, 2))])

    gp = ExactGP(kern.clone(), noise).set_data(X, y)
    mean, var = gp.predict(Xs)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var)) and np.all(var >= 0)

    inc = ExactGP(kern.clone(), noise)
    for xi, yi in zip(X, y):
        inc.condition(xi, yi)
    for _ in range(5):  # the same point over and over
        inc.condition(base[0], 0.5)
    mean, var = inc.predict(Xs)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var)) and np.all(var >= 0)
    assert np.all(np.isfinite(inc.cholesky_factor))
    assert np.isfinite(inc.information_gain()) if noise > 0 else True
    cov = inc.posterior_covariance(Xs[:5], Xs[:5])
    assert np.all(np.isfinite(cov))

    fitted = ExactGP(kern.clone(), max(noise, 1e-10), fit_noise=True).fit(X, y, n_restarts=1)
    mean, var = fitted.predict(Xs)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var)) and np.all(var >= 0)


def test_robust_cholesky_uses_jitter_only_when_needed() -> None:
    A = np.array([[2.0, 0.5], [0.5, 1.0]])
    L, jitter = robust_cholesky(A)
    assert jitter == 0.0
    assert np.allclose(L @ L.T, A, rtol=1e-14)
    singular = np.ones((4, 4))
    L, jitter = robust_cholesky(singular)
    assert jitter > 0 and np.all(np.isfinite(L))
    assert np.allclose(L @ L.T, singular + jitter * np.eye(4), rtol=1e-10)
