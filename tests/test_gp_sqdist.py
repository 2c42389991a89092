"""Squared distances of the kernels: numpy for small matrices (no scipy.spatial import on a study
step), scipy's cdist for large ones; the same numbers bit for bit either way."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from boloop.gp.kernels import Matern, SquaredExponential


@pytest.mark.parametrize("d", [1, 2, 3, 5, 8, 13])
@pytest.mark.parametrize("n,m", [(1, 40), (30, 30), (7, 1), (800, 300)])
def test_scaled_sqdist_equals_cdist_bit_for_bit(d, n, m):
    rng = np.random.default_rng(d * 1000 + n + m)
    X = rng.standard_normal((n, d)) * rng.uniform(0.01, 100.0, size=d)
    Y = rng.standard_normal((m, d)) * rng.uniform(0.01, 100.0, size=d)
    ls = rng.uniform(0.1, 3.0, size=d)
    k = SquaredExponential(lengthscale=ls, variance=1.0)
    assert np.array_equal(k.scaled_sqdist(X, Y), cdist(X / ls, Y / ls, "sqeuclidean"))
    assert np.array_equal(k.scaled_sqdist(X), cdist(X / ls, X / ls, "sqeuclidean"))
    K = Matern(lengthscale=ls, variance=2.0).k(X, Y)
    assert K.shape == (n, m) and np.all(np.isfinite(K))
