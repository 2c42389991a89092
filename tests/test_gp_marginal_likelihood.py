"""The lean log posterior of hyperparameter fits and the lean L-BFGS-B driver.

Oracles: :meth:`ExactGP.log_posterior` (the general path; the lean one must give the same numbers
bit for bit without replicated inputs, so that fits and the runs built on them do not change, and
to rounding with them), scikit-learn's
``log_marginal_likelihood`` with its gradient (an independent implementation), central finite
differences and scipy's ``check_grad``; for the driver, ``scipy.optimize.minimize`` itself.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import check_grad, minimize
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as skk

from boloop.gp import ExactGP, GammaPrior, LogNormalPrior, Matern, SquaredExponential
from boloop.gp.marginal_likelihood import StationaryLogPosterior
from boloop.gp.optimize import minimize_lbfgsb


def _gp(seed: int, replicates: bool = False) -> ExactGP:
    """A random GP configuration of the kinds the families fit (kernel, ARD or not, fixed
    variance, noise fitted or not, constant or zero mean, priors or none); with ``replicates``
    the inputs repeat (a policy re-querying points of a grid)."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 5))
    n = int(rng.integers(1, 50))
    ls = rng.uniform(0.1, 2.0, size=d) if rng.random() < 0.7 else float(rng.uniform(0.1, 2.0))
    kind = int(rng.integers(4))
    fixed = ("variance",) if rng.random() < 0.2 else ()
    if kind == 0:
        kern = SquaredExponential(ls, 1.3, fixed=fixed)
    else:
        kern = Matern((0.5, 1.5, 2.5)[kind - 1], ls, 1.3, fixed=fixed)
    priors = {}
    if rng.random() < 0.7:
        priors = {"lengthscale": LogNormalPrior(0.3, 1.2), "noise": GammaPrior(1.1, 0.5)}
        if not fixed:
            priors["variance"] = LogNormalPrior(0.1, 1.0)
    gp = ExactGP(
        kern,
        0.01,
        fit_noise=bool(rng.random() < 0.7),
        mean="constant" if rng.random() < 0.6 else "zero",
        priors=priors,
    )
    X = rng.uniform(0, 3, size=(n, d))
    if replicates:
        n = max(n, 3)
        grid = rng.uniform(0, 3, size=(max(2, n // 3), d))
        X = grid[rng.integers(0, grid.shape[0], size=n)]
        X[1] = X[0]
    gp.set_data(X, np.sin(X).sum(axis=1) + 0.1 * rng.standard_normal(n))
    return gp


def _assert_matches_sklearn(lean, gp, sk_kernel, X, y, shifts, grad_rtol: float) -> None:
    """The lean objective's value and gradient equal scikit-learn's log marginal likelihood at
    the GP's free parameters shifted by each of ``shifts`` (sklearn's theta: log variance, log
    length-scales, log noise, the order of ours)."""
    sk = GaussianProcessRegressor(sk_kernel, alpha=0.0, optimizer=None).fit(X, y)
    for shift in shifts:
        p = gp.free_parameters() + shift
        val, grad = lean(p)
        sk_val, sk_grad = sk.log_marginal_likelihood(p, eval_gradient=True)
        assert val == pytest.approx(sk_val, rel=1e-10)
        np.testing.assert_allclose(grad, sk_grad, rtol=grad_rtol, atol=grad_rtol / 10)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("replicates", [False, True])
def test_lean_log_posterior_is_the_general_one_bit_for_bit(seed: int, replicates: bool) -> None:
    """Without collapsing replicates (the default), the same numbers as the general path."""
    gp = _gp(seed, replicates)
    lean = StationaryLogPosterior.for_gp(gp)
    assert lean is not None
    rng = np.random.default_rng(1000 + seed)
    p0 = gp.free_parameters()
    for _ in range(5):
        p = p0 + rng.standard_normal(p0.size)
        val, grad = gp.log_posterior(p)
        lval, lgrad = lean(p)
        assert lval == val
        assert np.array_equal(lgrad, grad)


@pytest.mark.parametrize("seed", range(40))
def test_collapsed_replicates_give_the_full_log_posterior(seed: int) -> None:
    """Replicated inputs are collapsed to their means plus the within-group scatter: the same
    function as the full n x n path, to rounding."""
    gp = _gp(300 + seed, replicates=True)
    lean = StationaryLogPosterior.for_gp(gp, collapse_replicates=True)
    assert lean is not None
    rng = np.random.default_rng(2000 + seed)
    p0 = gp.free_parameters()
    for _ in range(5):
        p = p0 + 0.7 * rng.standard_normal(p0.size)
        val, grad = gp.log_posterior(p)
        lval, lgrad = lean(p)
        assert lval == pytest.approx(val, rel=1e-11, abs=1e-9)
        np.testing.assert_allclose(lgrad, grad, rtol=1e-7, atol=1e-7 * max(1.0, np.abs(grad).max()))


def test_collapsed_replicates_match_sklearn() -> None:
    rng = np.random.default_rng(5)
    grid = rng.uniform(-1, 2, size=(7, 2))
    X = grid[rng.integers(0, 7, size=30)]
    y = np.sin(3 * X[:, 0]) + X[:, 1] + 0.1 * rng.standard_normal(30)
    gp = ExactGP(SquaredExponential([0.6, 1.1], 1.4), 0.02, fit_noise=True)
    gp.set_data(X, y)
    lean = StationaryLogPosterior.for_gp(gp, collapse_replicates=True)
    assert lean is not None
    sk_kernel = skk.ConstantKernel(1.4) * skk.RBF([0.6, 1.1]) + skk.WhiteKernel(0.02)
    _assert_matches_sklearn(lean, gp, sk_kernel, X, y, (0.0, 0.5, -0.5), grad_rtol=1e-7)


@pytest.mark.parametrize("ard", [True, False])
def test_lean_log_posterior_matches_sklearn_value_and_gradient(ard: bool) -> None:
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 2, size=(25, 3))
    y = np.sin(3 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.05 * rng.standard_normal(25)
    ls = np.array([0.5, 0.9, 1.4]) if ard else 0.8
    gp = ExactGP(SquaredExponential(ls, 1.7), 0.03, fit_noise=True)
    gp.set_data(X, y)
    lean = StationaryLogPosterior.for_gp(gp)
    assert lean is not None
    sk_kernel = skk.ConstantKernel(1.7) * skk.RBF(ls) + skk.WhiteKernel(0.03)
    _assert_matches_sklearn(lean, gp, sk_kernel, X, y, (0.0, 0.3, -0.4), grad_rtol=1e-8)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("replicates", [False, True])
def test_lean_gradient_matches_finite_differences(seed: int, replicates: bool) -> None:
    gp = _gp(100 + seed, replicates)
    lean = StationaryLogPosterior.for_gp(gp, collapse_replicates=replicates)
    assert lean is not None
    p = gp.free_parameters() + 0.1
    err = check_grad(lambda q: lean(q)[0], lambda q: lean(q)[1], p, epsilon=1e-6)
    scale = max(1.0, float(np.linalg.norm(lean(p)[1])))
    assert err <= 1e-4 * scale


def test_replicates_without_noise_are_not_collapsed() -> None:
    """With a fixed zero noise there is no scatter term: the full path (and its jitter)."""
    gp = ExactGP(SquaredExponential(0.5, 1.0), 0.0)
    X = np.array([[0.0], [1.0], [1.0]])
    gp.set_data(X, np.array([0.0, 1.0, 1.0]))
    lean = StationaryLogPosterior.for_gp(gp, collapse_replicates=True)
    assert lean is not None
    p = gp.free_parameters()
    assert lean(p)[0] == gp.log_posterior(p)[0]


def test_lean_path_declines_what_it_does_not_cover() -> None:
    gp = ExactGP(SquaredExponential(0.5, 1.0, fixed=("lengthscale",)), 0.01)
    gp.set_data(np.array([[0.0], [1.0]]), np.array([0.0, 1.0]))
    assert StationaryLogPosterior.for_gp(gp) is None
    empty = ExactGP(SquaredExponential(0.5, 1.0), 0.01)
    assert StationaryLogPosterior.for_gp(empty) is None


def _rosenbrock(x: np.ndarray) -> tuple[float, np.ndarray]:
    a, b = x[:-1], x[1:]
    f = float(np.sum(100.0 * (b - a**2) ** 2 + (1 - a) ** 2))
    g = np.zeros_like(x)
    g[:-1] = -400.0 * a * (b - a**2) - 2.0 * (1 - a)
    g[1:] += 200.0 * (b - a**2)
    return f, g


@pytest.mark.parametrize(
    ("x0", "bounds", "options"),
    [
        (np.array([-1.2, 1.0, 0.5]), [(-2, 2), (-2, 2), (-2, 2)], {"maxiter": 200}),
        (np.array([-1.2, 1.0, 0.5]), [(None, None), (0.2, None), (None, 0.7)], {}),
        (np.array([3.0, -3.0]), [(-1, 1), (-1, 1)], {"maxiter": 5}),  # clipped start, cut short
        (np.array([0.1, 0.2, 0.3, 0.4]), [(-2, 2)] * 4, {"ftol": 1e-4}),
    ],
)
def test_lbfgsb_driver_is_scipys_minimize(x0, bounds, options) -> None:
    x, f, nfev = minimize_lbfgsb(_rosenbrock, x0, bounds, **options)
    ref = minimize(_rosenbrock, x0, jac=True, method="L-BFGS-B", bounds=bounds, options=options)
    assert np.array_equal(x, ref.x)
    assert f == ref.fun
    assert nfev == ref.nfev
    # the path taken when scipy's step has another signature: scipy's public minimize
    xp, fp, nfevp = minimize_lbfgsb(_rosenbrock, x0, bounds, public_interface=True, **options)
    assert np.array_equal(xp, x) and fp == f and nfevp == nfev


@pytest.mark.parametrize("seed", range(6))
def test_fit_finds_the_optimum_scipy_finds_on_the_general_objective(seed: int) -> None:
    """ExactGP.fit (lean objective, lean driver) against scipy's minimize on the general
    log posterior from the same start and bounds: the same optimum, bit for bit."""
    gp = _gp(200 + seed)
    ref_gp = gp.copy()
    names = {
        "variance": (1e-3, 1e3),
        "lengthscale": (1e-2, 1e2),
        **({"noise": (1e-6, 1e2)} if gp.fit_noise else {}),
    }
    if "variance" in gp.kernel.fixed:
        del names["variance"]
    p0 = ref_gp.free_parameters()
    gp.fit(n_restarts=0, bounds=names, maxiter=100, ftol=1e-6)

    def negative(p: np.ndarray) -> tuple[float, np.ndarray]:
        v, g = ref_gp.log_posterior(p)
        return -v, -g

    bounds = []
    for name in [n for n, free in zip(gp.kernel.theta_names, gp.kernel.free_mask) if free]:
        lo, hi = names[name.split("[")[0]]
        bounds.append((np.log(lo), np.log(hi)))
    if gp.fit_noise:
        bounds.append((np.log(max(1e-6, gp.noise_floor)), np.log(1e2)))
    if gp.mean == "constant":
        ym, ys = float(np.mean(gp.y)), float(np.std(gp.y)) or 1.0
        bounds.append((ym - 10 * ys - 1.0, ym + 10 * ys + 1.0))
        p0[-1] = ym
    p0 = np.clip(p0, [b[0] for b in bounds], [b[1] for b in bounds])
    ref = minimize(
        negative,
        p0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": 100, "ftol": 1e-6},
    )
    # the same end point (up to the log(exp(.)) round trip of storing it in the kernel)
    np.testing.assert_allclose(gp.free_parameters(), ref.x, rtol=1e-12, atol=1e-12)
    assert gp.log_posterior(gp.free_parameters())[0] == pytest.approx(-ref.fun, rel=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_fit_with_collapsed_replicates_finds_the_same_optimum(seed: int) -> None:
    """The mechanism's MAP fit on replicated data, with and without collapsing: the same
    hyperparameters and log posterior (the functions agree to rounding)."""
    from boloop.gp import HyperparameterLearning

    rng = np.random.default_rng(400 + seed)
    d = 1 + seed % 2
    grid = rng.uniform(0, 1, size=(6 + seed, d))
    X = grid[rng.integers(0, grid.shape[0], size=40)]
    y = np.sin(5 * X).sum(axis=1) + 0.1 * rng.standard_normal(40)
    fits = []
    for collapse in (False, True):
        gp = ExactGP(
            SquaredExponential(np.full(d, 0.3), 1.0), 0.01, fit_noise=True, mean="constant"
        )
        learning = HyperparameterLearning(n_restarts=1, collapse_replicates=collapse)
        report = learning.fit(gp, np.ones(d), X=X, y=y, rng=seed)
        assert report.refitted
        fits.append((gp.free_parameters(), report.log_posterior))
    (p0, lp0), (p1, lp1) = fits
    np.testing.assert_allclose(p1, p0, rtol=1e-4, atol=1e-4)
    assert lp1 == pytest.approx(lp0, abs=1e-6)
