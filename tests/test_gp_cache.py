"""CandidatePosterior: the incremental O(N n) cache equals a full recompute, across appends,
interleaved reads, refits and data replacement.

Tolerance 1e-9 (absolute, with the prior variance of order 1) over hundreds of random appends.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as skk

from boloop.gp import CandidatePosterior, ExactGP, Matern, SquaredExponential


def _fresh(gp: ExactGP, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Posterior at C from a brand-new GP with the same hyperparameters and data."""
    ref = ExactGP(
        gp.kernel.clone(), gp.noise_variance, mean=gp.mean, mean_constant=gp.mean_constant
    )
    if gp.n:
        ref.set_data(np.array(gp.X), np.array(gp.y))
    return ref.predict(C)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(
    seed=st.integers(0, 2**31 - 1),
    n_init=st.integers(0, 10),
    n_append=st.integers(100, 300),
    d=st.integers(1, 3),
    noise=st.sampled_from([1e-1, 1e-2, 1e-3]),
    kind=st.sampled_from(["se", "m12", "m32", "m52"]),
    read_every=st.integers(3, 60),
    mean=st.sampled_from(["zero", "constant"]),
)
def test_cache_equals_recompute_over_hundreds_of_appends(
    seed, n_init, n_append, d, noise, kind, read_every, mean
) -> None:
    """The cache is read every ``read_every`` appends (so it catches up by 3..60 rows at a time);
    at every read, mean and variance equal the GP's own (chunked, from-the-factor) prediction to
    1e-9, and at the end a from-scratch GP's to 1e-9."""
    rng = np.random.default_rng(seed)
    n = n_init + n_append
    X = rng.uniform(0, 1, size=(n, d))
    y = rng.standard_normal(n)
    C = rng.uniform(-0.1, 1.1, size=(257, d))
    ls = 0.2 + 0.5 * rng.random(d)
    kern = {
        "se": SquaredExponential(ls, 1.1),
        "m12": Matern(0.5, ls, 1.1),
        "m32": Matern(1.5, ls, 1.1),
        "m52": Matern(2.5, ls, 1.1),
    }[kind]
    gp = ExactGP(kern, noise, mean=mean, mean_constant=-0.3)
    if n_init:
        gp.set_data(X[:n_init], y[:n_init])
    cache = CandidatePosterior(gp, C, chunk_size=100)
    worst_m = worst_v = 0.0
    for i in range(n_init, n):
        gp.condition(X[i], y[i])
        if (i - n_init) % read_every == 0 or i == n - 1:
            m_ref, v_ref = gp.predict(C)
            worst_m = max(worst_m, float(np.max(np.abs(cache.mean - m_ref))))
            worst_v = max(worst_v, float(np.max(np.abs(cache.variance - v_ref))))
    m_ref, v_ref = _fresh(gp, C)
    worst_m = max(worst_m, float(np.max(np.abs(cache.mean - m_ref))))
    worst_v = max(worst_v, float(np.max(np.abs(cache.variance - v_ref))))
    assert worst_m < 1e-9 * max(1.0, float(np.max(np.abs(y))))
    assert worst_v < 1e-9
    assert np.allclose(cache.std, np.sqrt(cache.variance), rtol=0, atol=0)


def test_cache_matches_sklearn() -> None:
    """An independent oracle: sklearn on the same data and fixed kernel, 1e-8 relative."""
    rng = np.random.default_rng(0)
    X = rng.random((60, 2))
    y = np.sin(5 * X[:, 0]) * X[:, 1]
    C = rng.random((500, 2))
    gp = ExactGP(Matern(2.5, [0.3, 0.5], 1.4), 1e-3)
    cache = CandidatePosterior(gp, C)
    for xi, yi in zip(X, y):
        gp.condition(xi, yi)
    sk = GaussianProcessRegressor(
        skk.ConstantKernel(1.4) * skk.Matern([0.3, 0.5], nu=2.5), alpha=1e-3, optimizer=None
    ).fit(X, y)
    m, s = sk.predict(C, return_std=True)
    assert np.max(np.abs(cache.mean - m)) <= 1e-8 * np.max(np.abs(m))
    assert np.max(np.abs(cache.variance - s**2)) <= 1e-8 * 1.4


def test_cache_recomputes_after_refit_and_set_data() -> None:
    rng = np.random.default_rng(1)
    X = rng.random((40, 2))
    y = np.cos(4 * X[:, 0]) + X[:, 1] + 0.1 * rng.standard_normal(40)  # noisy: a well-posed fit
    C = rng.random((300, 2))
    gp = ExactGP(Matern(2.5, [1.0, 1.0]), 0.05, fit_noise=True).set_data(X[:20], y[:20])
    cache = CandidatePosterior(gp, C)
    cache.mean  # sync once
    version = gp.version
    gp.fit(n_restarts=1, seed=0)  # new hyperparameters: version changes
    assert gp.version > version and gp.noise_variance > 1e-4
    m_ref, v_ref = _fresh(gp, C)
    assert np.allclose(cache.mean, m_ref, rtol=0, atol=1e-10)
    assert np.allclose(cache.variance, v_ref, rtol=0, atol=1e-10)
    for i in range(20, 30):
        gp.condition(X[i], y[i])
    m_ref, v_ref = _fresh(gp, C)
    assert np.allclose(cache.mean, m_ref, rtol=0, atol=1e-10)
    gp.set_data(X[:5], y[:5])  # fewer points than the cache has seen
    m_ref, v_ref = _fresh(gp, C)
    assert np.allclose(cache.mean, m_ref, rtol=0, atol=1e-10)
    assert np.allclose(cache.variance, v_ref, rtol=0, atol=1e-10)


def test_cache_on_empty_gp_is_the_prior_and_covariance_with() -> None:
    rng = np.random.default_rng(2)
    C = rng.random((50, 2))
    k = SquaredExponential([0.4, 0.6], 2.0)
    gp = ExactGP(k, 1e-2, mean="constant", mean_constant=0.7)
    cache = CandidatePosterior(gp, C)
    assert cache.N == 50
    assert np.all(cache.mean == 0.7) and np.allclose(cache.variance, 2.0)
    assert np.allclose(cache.covariance_with(3), k.k(C[3:4], C)[0])
    X = rng.random((15, 2))
    for xi in X:
        gp.condition(xi, float(xi.sum()))
    cov = gp.posterior_covariance(C[7:8], C)[0]
    assert np.allclose(cache.covariance_with(7), cov, rtol=0, atol=1e-10)
    assert np.isclose(cache.covariance_with(7)[7], cache.variance[7], rtol=0, atol=1e-10)


def test_cache_variance_nonnegative_with_duplicates_and_tiny_noise() -> None:
    """Repeating candidate points with noise 1e-10: variances stay finite and >= 0."""
    rng = np.random.default_rng(3)
    C = rng.random((40, 2))
    gp = ExactGP(Matern(2.5, 0.3), 1e-10)
    cache = CandidatePosterior(gp, C)
    for j in [0, 1, 2, 0, 0, 1, 5, 5, 5, 2]:
        gp.condition(C[j], float(np.sin(C[j, 0])))
        v = cache.variance
        assert np.all(np.isfinite(v)) and np.all(v >= 0)
        assert np.all(np.isfinite(cache.mean))
    assert np.all(cache.variance[[0, 1, 2, 5]] < 1e-6)


def test_whitened_cross_covariance_gives_the_posterior_covariance():
    """k(C, C) - V^T V from the public accessor equals ExactGP.posterior_covariance, and the view
    cannot be written through."""
    import pytest

    from boloop.gp import CandidatePosterior, ExactGP, SquaredExponential

    rng = np.random.default_rng(3)
    gp = ExactGP(SquaredExponential(0.4), 1e-3).set_data(rng.random((12, 2)), rng.random(12))
    C = rng.random((30, 2))
    cache = CandidatePosterior(gp, C)
    gp.condition(rng.random(2), 0.5)
    V = cache.whitened_cross_covariance
    assert V.shape == (13, 30)
    np.testing.assert_allclose(
        gp.kernel.k(C) - V.T @ V, gp.posterior_covariance(C, C), rtol=1e-9, atol=1e-12
    )
    with pytest.raises(ValueError):
        V[0, 0] = 1.0
