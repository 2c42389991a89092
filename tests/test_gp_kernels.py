"""Kernels: values against scikit-learn's kernels and closed forms, gradients in log-hyperparameters
against finite differences and against sklearn's analytic gradients, the papers' parametrisations.

Tolerances: values 1e-12 relative; gradients 1e-6 relative to the largest entry (central
differences, step 1e-6).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.gaussian_process import kernels as skk

from boloop.errors import InvalidInputError
from boloop.gp import Linear, Matern, SquaredExponential, StationaryKernel

RNG = np.random.default_rng(0)
X = RNG.uniform(-2, 2, size=(15, 3))
Y = RNG.uniform(-2, 2, size=(9, 3))
LS = np.array([0.5, 1.1, 2.0])


def _pairs():
    return [
        ("se-iso", SquaredExponential(0.8, 1.7), skk.ConstantKernel(1.7) * skk.RBF(0.8)),
        ("se-ard", SquaredExponential(LS, 0.6), skk.ConstantKernel(0.6) * skk.RBF(LS)),
        ("m12-iso", Matern(0.5, 0.8, 1.3), skk.ConstantKernel(1.3) * skk.Matern(0.8, nu=0.5)),
        ("m12-ard", Matern(0.5, LS, 1.3), skk.ConstantKernel(1.3) * skk.Matern(LS, nu=0.5)),
        ("m32-iso", Matern(1.5, 0.7, 2.2), skk.ConstantKernel(2.2) * skk.Matern(0.7, nu=1.5)),
        ("m32-ard", Matern(1.5, LS, 2.2), skk.ConstantKernel(2.2) * skk.Matern(LS, nu=1.5)),
        ("m52-iso", Matern(2.5, 1.2, 0.9), skk.ConstantKernel(0.9) * skk.Matern(1.2, nu=2.5)),
        ("m52-ard", Matern(2.5, LS, 0.9), skk.ConstantKernel(0.9) * skk.Matern(LS, nu=2.5)),
    ]


PAIRS = _pairs()
IDS = [p[0] for p in PAIRS]


@pytest.mark.parametrize("name,ours,theirs", PAIRS, ids=IDS)
def test_values_match_sklearn(name, ours, theirs) -> None:
    assert np.allclose(ours.k(X, Y), theirs(X, Y), rtol=1e-12, atol=0)
    assert np.allclose(ours(X), theirs(X), rtol=1e-12, atol=0)
    assert np.allclose(ours.diag(X), theirs.diag(X), rtol=1e-12, atol=0)
    assert ours.k(X, Y).shape == (15, 9)
    K = ours.k(X)
    assert np.array_equal(K, K.T)
    assert np.all(np.linalg.eigvalsh(K) > -1e-10)


@pytest.mark.parametrize("name,ours,theirs", PAIRS, ids=IDS)
def test_gradient_matches_sklearn_and_theta_order(name, ours, theirs) -> None:
    """sklearn's theta for ``C * base`` is ``[log c, log l...]``, the same order as ours."""
    assert np.allclose(ours.theta, theirs.theta, rtol=1e-14)
    K, dK = ours.gradient(X)
    Ks, dKs = theirs(X, eval_gradient=True)
    assert np.allclose(K, Ks, rtol=1e-12, atol=0)
    assert np.allclose(dK, np.moveaxis(dKs, -1, 0), rtol=1e-9, atol=1e-12)


def _fd_dK(kernel, Xp: np.ndarray, h: float = 1e-6) -> np.ndarray:
    theta = kernel.theta
    free = np.flatnonzero(kernel.free_mask)
    out = []
    for i in free:
        e = np.zeros_like(theta)
        e[i] = h
        out.append(
            (kernel.with_theta(theta + e).k(Xp) - kernel.with_theta(theta - e).k(Xp)) / (2 * h)
        )
    return np.array(out)


ALL_KERNELS = [p[1] for p in PAIRS] + [
    Linear(0.7),
    Matern(2.5, LS, 0.9, fixed=("variance",)),
    SquaredExponential(LS, 0.9, fixed=("lengthscale",)),
    Matern(1.5, 0.4, 1.0, fixed=("variance", "lengthscale")),
]


@pytest.mark.parametrize(
    "kernel", ALL_KERNELS, ids=IDS + ["lin", "m52-fixvar", "se-fixls", "m32-allfixed"]
)
def test_gradient_matches_finite_differences(kernel) -> None:
    """Includes duplicate rows (r = 0), where the Matern-1/2 derivative in l is still 0."""
    Xp = np.vstack([X, X[:3]])
    K, dK = kernel.gradient(Xp)
    assert dK.shape == (int(kernel.free_mask.sum()), Xp.shape[0], Xp.shape[0])
    assert np.allclose(K, kernel.k(Xp), rtol=1e-14)
    if dK.shape[0]:
        fd = _fd_dK(kernel, Xp)
        assert np.max(np.abs(dK - fd)) <= 1e-6 * max(1.0, float(np.max(np.abs(fd))))


def test_level_set_paper_scale_form_is_exact() -> None:
    """Inatsu et al. Sec. 5: ``s2 exp(-|x - x'|^2 / L)`` with e.g. s2 = exp(2), L = 2 exp(-3)."""
    s2, L = math.exp(2.0), 2.0 * math.exp(-3.0)
    k = SquaredExponential.from_scale_form(s2, L)
    d2 = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    assert np.allclose(k.k(X, Y), s2 * np.exp(-d2 / L), rtol=1e-13, atol=0)
    with pytest.raises(InvalidInputError, match="L"):
        SquaredExponential.from_scale_form(1.0, 0.0)


def test_level_set_paper_matern32_form_is_exact() -> None:
    """Inatsu et al. Sec. 5.3: ``4 (1 + sqrt3 r / 25) exp(-sqrt3 r / 25)`` is Matern(1.5, 25, 4)."""
    k = Matern(1.5, lengthscale=25.0, variance=4.0)
    Xb, Yb = 40 * X, 40 * Y
    r = np.sqrt(((Xb[:, None, :] - Yb[None, :, :]) ** 2).sum(-1))
    expected = 4.0 * (1 + math.sqrt(3) * r / 25) * np.exp(-math.sqrt(3) * r / 25)
    assert np.allclose(k.k(Xb, Yb), expected, rtol=1e-13, atol=0)


def test_closed_forms_at_known_distances() -> None:
    x0 = np.zeros((1, 1))
    x1 = np.ones((1, 1))
    assert SquaredExponential(1.0, 2.0).k(x0, x1)[0, 0] == pytest.approx(2 * math.exp(-0.5))
    assert Matern(0.5, 2.0).k(x0, x1)[0, 0] == pytest.approx(math.exp(-0.5))
    a = math.sqrt(3) / 2
    assert Matern(1.5, 2.0).k(x0, x1)[0, 0] == pytest.approx((1 + a) * math.exp(-a))
    b = math.sqrt(5) / 2
    assert Matern(2.5, 2.0).k(x0, x1)[0, 0] == pytest.approx((1 + b + b * b / 3) * math.exp(-b))
    assert Linear(3.0).k(np.array([[1.0, 2.0]]), np.array([[3.0, -1.0]]))[0, 0] == pytest.approx(
        3.0
    )


def test_theta_round_trip_and_names() -> None:
    k = Matern(2.5, LS, 0.9, fixed=("variance",))
    assert k.theta_names == ["variance", "lengthscale[0]", "lengthscale[1]", "lengthscale[2]"]
    assert list(k.free_mask) == [False, True, True, True]
    new = np.log([2.0, 0.1, 0.2, 0.3])
    k2 = k.with_theta(new)
    assert np.allclose(k2.theta, new, rtol=1e-15)
    assert k2.variance == pytest.approx(2.0) and k.variance == pytest.approx(0.9)  # original kept
    assert k.bounds.shape == (4, 2)
    iso = SquaredExponential(0.3)
    assert iso.theta_names == ["variance", "lengthscale"] and not iso.ard
    assert isinstance(iso, StationaryKernel)
    assert "Matern(nu=2.5" in repr(k)


def test_kernel_construction_errors_name_the_argument() -> None:
    with pytest.raises(InvalidInputError, match="lengthscale"):
        SquaredExponential(-1.0)
    with pytest.raises(InvalidInputError, match="lengthscale"):
        Matern(2.5, [1.0, np.nan])
    with pytest.raises(InvalidInputError, match="variance"):
        Matern(2.5, 1.0, variance=0.0)
    with pytest.raises(InvalidInputError, match="variance"):
        Linear(variance=-1.0)
    with pytest.raises(InvalidInputError, match="nu"):
        Matern(2.0)
    with pytest.raises(InvalidInputError, match="fixed"):
        SquaredExponential(1.0, fixed=("shape",))
    with pytest.raises(InvalidInputError, match="theta"):
        SquaredExponential([1.0, 2.0]).theta = np.zeros(2)
    with pytest.raises(InvalidInputError, match="columns"):
        SquaredExponential(LS).k(X[:, :2])
    with pytest.raises(InvalidInputError):
        SquaredExponential(1.0).k(X, Y[:, :2])
    with pytest.raises(ValueError):  # every boloop error is a ValueError
        Matern(3.0)


@pytest.mark.parametrize(
    "kernel", ALL_KERNELS, ids=IDS + ["lin", "m52-fixvar", "se-fixls", "m32-allfixed"]
)
def test_fast_gradient_traces_equal_dense_traces(kernel) -> None:
    """The likelihood's fast path (``sum(W * dK_k)`` without forming dK) equals the dense sum for a
    random non-symmetric W, to 1e-10 relative; inputs far from the origin test the centring."""
    Xp = np.vstack([X, X[:3]]) + 30.0
    W = np.random.default_rng(1).standard_normal((Xp.shape[0], Xp.shape[0]))
    K, state = kernel.gram_for_gradient(Xp)
    K2, dK = kernel.gradient(Xp)
    assert np.allclose(K, K2, rtol=1e-14, atol=0)
    fast = kernel.gradient_traces(state, W)
    dense = np.einsum("ij,kij->k", W, dK)
    assert fast.shape == dense.shape == (int(kernel.free_mask.sum()),)
    scale = max([1.0] + list(np.abs(dense)))
    assert np.allclose(fast, dense, rtol=1e-10, atol=1e-10 * scale)


def test_with_theta_does_not_share_state() -> None:
    k = Matern(2.5, [0.5, 0.7], 1.3)
    k2 = k.with_theta(np.log([2.0, 0.1, 0.2]))
    k2.lengthscale[0] = 99.0  # mutate the copy's array in place
    assert np.array_equal(k.lengthscale, [0.5, 0.7]) and k.variance == 1.3
    assert k2.nu == 2.5 and isinstance(k2, Matern)
