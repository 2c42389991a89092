"""A check shared by the kernels' tests: the analytic gradient against central finite
differences, and the likelihood's fast traces against the dense ones."""

from __future__ import annotations

from typing import Any

import numpy as np


def check_gradient_and_traces(k: Any, X: np.ndarray, rng: np.random.Generator) -> None:
    """``k.gradient(X)`` (one slice per free hyperparameter of ``theta``) equals central
    differences of ``k.k(X)`` in ``theta`` (step 1e-6), ``gram_for_gradient`` gives the same
    Gram matrix, and ``gradient_traces(state, W)`` equals ``sum(W * dK)`` for a random W."""
    n = X.shape[0]
    K, dK = k.gradient(X)
    free = np.flatnonzero(k.free_mask)
    assert dK.shape == (free.size, n, n)
    theta, eps = k.theta, 1e-6
    for row, i in enumerate(free):
        up, dn = theta.copy(), theta.copy()
        up[i] += eps
        dn[i] -= eps
        num = (k.with_theta(up).k(X) - k.with_theta(dn).k(X)) / (2 * eps)
        assert np.allclose(dK[row], num, rtol=0, atol=1e-6 * np.abs(num).max())
    W = rng.standard_normal((n, n))
    K2, state = k.gram_for_gradient(X)
    assert np.allclose(K2, K, rtol=1e-12, atol=0)
    dense = dK.reshape(dK.shape[0], -1) @ W.reshape(-1)
    assert np.allclose(k.gradient_traces(state, W), dense, rtol=1e-10, atol=1e-10)
