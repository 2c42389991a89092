"""gp.posterior_with_gradient: value and gradient in the test point against scikit-learn's
GaussianProcessRegressor (same kernel, fixed hyperparameters) and its central differences."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as skk

from boloop.errors import InvalidInputError
from boloop.gp import ExactGP, Linear, Matern, SquaredExponential
from boloop.gp.posterior_gradient import posterior_with_gradient


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (SquaredExponential([0.4, 0.7], variance=1.3),
         skk.ConstantKernel(1.3) * skk.RBF([0.4, 0.7])),
        (Matern(2.5, [0.3, 0.5], variance=1.4),
         skk.ConstantKernel(1.4) * skk.Matern([0.3, 0.5], nu=2.5)),
        (Matern(1.5, [0.6, 0.2], variance=0.8),
         skk.ConstantKernel(0.8) * skk.Matern([0.6, 0.2], nu=1.5)),
    ],
)
def test_value_and_gradient_match_scikit_learn(ours, theirs) -> None:
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 1, size=(12, 2))
    y = np.sin(5 * X[:, 0]) + X[:, 1] ** 2
    gp = ExactGP(ours, 1e-3).set_data(X, y)
    sk = GaussianProcessRegressor(theirs, alpha=1e-3, optimizer=None).fit(X, y)
    alpha = gp.posterior_weights()
    h = 1e-6
    for x in rng.uniform(0, 1, size=(5, 2)):
        m, s, dm, ds = posterior_with_gradient(gp, x, alpha)
        (pm,), (ps,) = sk.predict(x[None, :], return_std=True)
        assert m == pytest.approx(pm, rel=1e-8, abs=1e-10)
        assert s == pytest.approx(ps, rel=1e-7, abs=1e-10)
        for j in range(2):
            e = np.zeros(2)
            e[j] = h
            (mp,), (sp,) = sk.predict((x + e)[None, :], return_std=True)
            (mm,), (sm,) = sk.predict((x - e)[None, :], return_std=True)
            assert dm[j] == pytest.approx((mp - mm) / (2 * h), rel=1e-5, abs=1e-6)
            assert ds[j] == pytest.approx((sp - sm) / (2 * h), rel=1e-4, abs=1e-6)


def test_prior_has_zero_gradient_and_the_prior_std() -> None:
    gp = ExactGP(SquaredExponential([0.5], variance=2.0), 1e-3)
    m, s, dm, ds = posterior_with_gradient(gp, np.array([0.3]), gp.posterior_weights())
    assert (m, s) == (0.0, pytest.approx(np.sqrt(2.0)))
    assert np.all(dm == 0) and np.all(ds == 0)


def test_a_non_stationary_kernel_is_refused() -> None:
    gp = ExactGP(Linear(), 1e-3).set_data(np.array([[0.1], [0.5]]), np.array([0.0, 1.0]))
    with pytest.raises(InvalidInputError, match="stationary"):
        posterior_with_gradient(gp, np.array([0.3]), gp.posterior_weights())
