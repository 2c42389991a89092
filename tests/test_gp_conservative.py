"""axiswise_conservative: each length-scale at the edge of the likelihood-ratio set, or its floor."""

from __future__ import annotations

import numpy as np
from scipy.stats import chi2

from boloop.gp.conservative import axiswise_conservative
from boloop.gp.exact import ExactGP
from boloop.gp.kernels import Matern


def _fitted(X, y):
    gp = ExactGP(Matern(2.5, lengthscale=[0.3, 0.3], variance=1.0), 1e-4)
    gp.fit(X, y, n_restarts=2, seed=0)
    return gp


def test_an_axis_without_spread_goes_to_its_floor_and_the_other_to_its_edge():
    rng = np.random.default_rng(0)
    x = rng.random(12)
    X = np.column_stack([np.zeros(12), x])  # no spread along axis 0 (all at s = 0)
    y = np.sin(5 * x)
    gp = _fitted(X, y)
    p0 = gp.free_parameters()
    best = gp.log_posterior(p0)[0]
    ls0 = np.array(gp.kernel.lengthscale, dtype=float)
    floor = np.array([0.05, 0.01])
    c = axiswise_conservative(gp, floor, level=0.95)
    ls = np.array(gp.kernel.lengthscale, dtype=float)
    np.testing.assert_allclose(ls, ls0 * c)
    assert ls0[0] > floor[0]
    assert np.isclose(ls[0], floor[0], rtol=1e-9)
    # axis 1 is pinned by the data: it stops at the likelihood-ratio edge, above its floor
    assert floor[1] < ls[1] < ls0[1]
    drop = 0.5 * chi2.ppf(0.95, df=p0.size)
    p = p0.copy()
    p[2] += np.log(c[1])
    assert abs(gp.log_posterior(p)[0] - (best - drop)) < 1e-2
    # the GP was refactorised with the new kernel: its posterior is the one of a fresh GP
    fresh = ExactGP(gp.kernel.clone(), 1e-4).set_data(X, y)
    Xs = rng.random((5, 2))
    np.testing.assert_allclose(gp.predict(Xs)[0], fresh.predict(Xs)[0], rtol=1e-10)


def test_a_floor_above_the_fit_changes_nothing():
    rng = np.random.default_rng(1)
    X = rng.random((10, 2))
    gp = _fitted(X, np.cos(3 * X[:, 0]) + X[:, 1])
    ls0 = np.array(gp.kernel.lengthscale, dtype=float)
    c = axiswise_conservative(gp, ls0 * 2)
    np.testing.assert_array_equal(c, [1.0, 1.0])
    np.testing.assert_array_equal(gp.kernel.lengthscale, ls0)
