"""The leave-one-out GP of the typo question (boloop.gp.leave_one_out) against independent
oracles: n explicit refits without each point (R&W eq. 5.12 must equal them), and
scikit-learn's GaussianProcessRegressor with the same fixed kernel for the prediction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from boloop.errors import InvalidInputError
from boloop.gp.leave_one_out import fit_leave_one_out


def _matern52(A: np.ndarray, B: np.ndarray, ell: float) -> np.ndarray:
    r = np.sqrt(((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)) / ell
    a = math.sqrt(5.0) * r
    return (1.0 + a + a * a / 3.0) * np.exp(-a)


def _data(n: int = 25, d: int = 2, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = np.sin(5 * X[:, 0]) + X[:, -1] ** 2 + 0.05 * rng.standard_normal(n)
    return X, y


@pytest.mark.parametrize(("ell", "ratio"), [(0.2, 1e-3), (0.6, 0.1)])
def test_the_score_is_the_leave_one_out_density_of_explicit_refits(ell: float, ratio: float) -> None:
    X, y = _data()
    gp = fit_leave_one_out(X, y, [ell], [ratio])
    assert gp is not None
    t = (y - y.mean()) / y.std()
    res, var = [], []
    for i in range(t.size):
        keep = np.arange(t.size) != i
        A = _matern52(X[keep], X[keep], ell) + ratio * np.eye(t.size - 1)
        k = _matern52(X[keep], X[i : i + 1], ell)[:, 0]
        res.append(t[i] - k @ np.linalg.solve(A, t[keep]))
        var.append(1.0 + ratio - k @ np.linalg.solve(A, k))
    res_a, var_a = np.array(res), np.array(var)
    signal = np.mean(res_a**2 / var_a)
    density = np.sum(-0.5 * np.log(2 * np.pi * signal * var_a) - 0.5 * res_a**2 / (signal * var_a))
    assert gp.kernel.variance == pytest.approx(signal, rel=1e-8)
    assert gp.loo_log_density == pytest.approx(density, rel=1e-8)


def test_the_grid_choice_is_the_best_leave_one_out_density() -> None:
    X, y = _data(seed=5)
    grid_l, grid_r = (0.05, 0.2, 0.8), (1e-3, 0.1)
    best = fit_leave_one_out(X, y, grid_l, grid_r)
    assert best is not None
    scores = [fit_leave_one_out(X, y, [ell], [r]).loo_log_density for ell in grid_l for r in grid_r]
    assert best.loo_log_density == pytest.approx(max(scores))


def test_the_prediction_equals_scikit_learns_with_the_same_kernel() -> None:
    gaussian_process = pytest.importorskip("sklearn.gaussian_process")
    kernels = pytest.importorskip("sklearn.gaussian_process.kernels")
    X, y = _data(n=30, d=3, seed=8)
    gp = fit_leave_one_out(X, y, [0.4], [0.05])
    assert gp is not None
    s = gp.kernel.variance
    kernel = kernels.ConstantKernel(s, "fixed") * kernels.Matern(0.4, "fixed", nu=2.5)
    kernel = kernel + kernels.WhiteKernel(0.05 * s, "fixed")
    sk = gaussian_process.GaussianProcessRegressor(kernel, optimizer=None, normalize_y=True)
    sk.fit(X, y)
    for x in np.random.default_rng(1).random((5, 3)):
        mean, sd = gp.predict(x)
        sk_mean, sk_sd = sk.predict(x[None], return_std=True)
        assert mean == pytest.approx(float(sk_mean[0]), rel=1e-6, abs=1e-9)
        assert sd == pytest.approx(float(sk_sd[0]), rel=1e-6)


def test_values_without_spread_have_no_fit_and_bad_input_is_refused() -> None:
    X, _ = _data(n=6)
    assert fit_leave_one_out(X, np.full(6, 2.0), [0.2], [0.01]) is None
    with pytest.raises(InvalidInputError):
        fit_leave_one_out(X, np.arange(5.0), [0.2], [0.01])
    with pytest.raises(InvalidInputError):
        fit_leave_one_out(X, np.r_[np.arange(5.0), np.nan], [0.2], [0.01])
    gp = fit_leave_one_out(X, np.arange(6.0), [0.2], [0.01])
    with pytest.raises(InvalidInputError):
        gp.predict([0.5])
