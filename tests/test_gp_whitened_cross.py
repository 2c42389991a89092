"""ExactGP.whitened_cross_covariance: the posterior it implies (on all data and on the first j
observations) against fresh GPs and scikit-learn's GaussianProcessRegressor."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as skk

from boloop.errors import InvalidInputError
from boloop.gp import ExactGP, Matern


def _data(n: int = 15) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    X = rng.uniform(0, 1, size=(n, 2))
    return X, np.cos(4 * X[:, 0]) - X[:, 1], rng.uniform(0, 1, size=(6, 2))


def test_it_gives_scikit_learns_posterior_mean_and_covariance() -> None:
    X, y, P = _data()
    gp = ExactGP(Matern(2.5, [0.3, 0.5], 1.4), 1e-3).set_data(X, y)
    V = gp.whitened_cross_covariance(P)
    assert V.shape == (15, 6)
    sk = GaussianProcessRegressor(
        skk.ConstantKernel(1.4) * skk.Matern([0.3, 0.5], nu=2.5), alpha=1e-3, optimizer=None
    ).fit(X, y)
    m, cov = sk.predict(P, return_cov=True)
    np.testing.assert_allclose(V.T @ gp.whitened_residual, m, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(gp.kernel.k(P, P) - V.T @ V, cov, rtol=1e-7, atol=1e-9)


def test_its_first_rows_are_the_posterior_on_the_first_observations() -> None:
    X, y, P = _data()
    gp = ExactGP(Matern(1.5, [0.4, 0.2], 0.9), 1e-2).set_data(X, y)
    V = gp.whitened_cross_covariance(P)
    for j in (1, 6, 11):
        head = ExactGP(Matern(1.5, [0.4, 0.2], 0.9), 1e-2).set_data(X[:j], y[:j])
        mean, var = head.predict(P)
        Vj = V[:j]
        np.testing.assert_allclose(Vj.T @ gp.whitened_residual[:j], mean, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(0.9 - np.sum(Vj * Vj, axis=0), var, rtol=1e-9, atol=1e-12)


def test_no_data_and_bad_shapes() -> None:
    X, y, P = _data()
    assert ExactGP(Matern(2.5, [0.3, 0.5]), 1e-3).whitened_cross_covariance(P).shape == (0, 6)
    gp = ExactGP(Matern(2.5, [0.3, 0.5]), 1e-3).set_data(X, y)
    with pytest.raises(InvalidInputError):
        gp.whitened_cross_covariance(np.zeros((3, 5)))
    with pytest.raises(InvalidInputError):
        gp.whitened_cross_covariance(np.zeros(4))
