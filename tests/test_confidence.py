"""Beta schedules equal their formulas at spot values; chi-squared draws are reproducible and have
the right mean; bounds use ``sqrt(beta)`` (beta is always the squared multiplier)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from boloop.confidence import (
    ChiSquaredBeta,
    ChowdhuryGopalanBeta,
    ConstantBeta,
    GotovosLSEBeta,
    SrinivasBeta,
    confidence_bounds,
    lower_bound,
    upper_bound,
)
from boloop.errors import InvalidInputError


def test_constant_beta_units() -> None:
    b = ConstantBeta(sqrt_beta=3.0)  # straddle's beta^(1/2) = 3
    assert b.beta(1) == 9.0 and b.sqrt_beta(17) == 3.0
    c = ConstantBeta(beta=4.0)
    assert c.beta(5) == 4.0 and c.sqrt_beta(5) == 2.0
    with pytest.raises(InvalidInputError):
        ConstantBeta()
    with pytest.raises(InvalidInputError):
        ConstantBeta(beta=1.0, sqrt_beta=1.0)
    with pytest.raises(InvalidInputError, match="sqrt_beta"):
        ConstantBeta(sqrt_beta=-1.0)
    with pytest.raises(InvalidInputError, match="beta"):
        ConstantBeta(beta=float("nan"))


@pytest.mark.parametrize("n,delta,t", [(100, 0.1, 1), (2500, 0.05, 7), (1e6, 0.01, 1000)])
def test_srinivas_finite_set_formula(n: float, delta: float, t: int) -> None:
    """Srinivas et al. (2010), Theorem 1: beta_t = 2 log(|D| t^2 pi^2 / (6 delta))."""
    expected = 2.0 * math.log(n * t**2 * math.pi**2 / (6.0 * delta))
    b = SrinivasBeta(n, delta)
    assert b.beta(t) == pytest.approx(expected, rel=1e-14)
    assert b.sqrt_beta(t) == pytest.approx(math.sqrt(expected), rel=1e-14)


def test_gotovos_lse_spot_values_of_the_level_set_paper() -> None:
    """Inatsu et al., Sec. 5: beta_t^(1/2) = sqrt(2 log(|X| pi^2 t^2 / (6 * 0.05))); |X| = 2500
    gives 4.758 at t = 1 and 6.742 at t = 300 (three decimals)."""
    b = GotovosLSEBeta(2500)
    assert round(b.sqrt_beta(1), 3) == 4.758
    assert round(b.sqrt_beta(300), 3) == 6.742
    assert b.beta(300) == pytest.approx(b.sqrt_beta(300) ** 2, rel=1e-14)
    cont = GotovosLSEBeta.continuous()
    assert cont.n_candidates == 1e15
    expected = math.sqrt(2 * math.log(1e15 * math.pi**2 * 4 / 0.3))
    assert cont.sqrt_beta(2) == pytest.approx(expected, rel=1e-14)
    # non-decreasing in t
    vals = [b.beta(t) for t in range(1, 50)]
    assert all(b2 > b1 for b1, b2 in zip(vals, vals[1:]))


@pytest.mark.parametrize("B,R,delta,gamma", [(1.0, 0.1, 0.05, 0.0), (2.5, 0.01, 0.01, 12.3)])
def test_chowdhury_gopalan_formula(B: float, R: float, delta: float, gamma: float) -> None:
    """Chowdhury and Gopalan (2017), Theorem 2:
    beta_t^(1/2) = B + R sqrt(2 (gamma_{t-1} + 1 + ln(1/delta)))."""
    expected = B + R * math.sqrt(2.0 * (gamma + 1.0 + math.log(1.0 / delta)))
    b = ChowdhuryGopalanBeta(B, R, delta)
    assert b.sqrt_beta(3, information_gain=gamma) == pytest.approx(expected, rel=1e-14)
    assert b.beta(3, information_gain=gamma) == pytest.approx(expected**2, rel=1e-14)
    # M-SafeOpt eq. (30) / COBOL Lemma 3.1 use ln(2/delta): pass delta / 2
    b2 = ChowdhuryGopalanBeta(B, R, delta / 2)
    expected2 = B + R * math.sqrt(2.0 * (gamma + 1.0 + math.log(2.0 / delta)))
    assert b2.sqrt_beta(1, information_gain=gamma) == pytest.approx(expected2, rel=1e-14)
    with pytest.raises(InvalidInputError, match="information_gain"):
        b.sqrt_beta(1)
    with pytest.raises(InvalidInputError, match="information_gain"):
        b.sqrt_beta(1, information_gain=-1.0)


def test_chowdhury_gopalan_with_a_gp_information_gain() -> None:
    from boloop.gp import ExactGP, SquaredExponential

    X = np.linspace(0, 1, 10)[:, None]
    gp = ExactGP(SquaredExponential(0.2), 0.01).set_data(X, np.sin(X[:, 0]))
    gamma = gp.information_gain()
    assert gamma > 0
    b = ChowdhuryGopalanBeta(1.0, 0.1, 0.05)
    assert b.sqrt_beta(11, information_gain=gamma) > b.sqrt_beta(1, information_gain=0.0)


def test_chi_squared_draws_reproducible_and_mean_two() -> None:
    """Inatsu et al., Definition 3.2: beta_t ~ chi-squared(2), drawn from the policy's generator.
    Same seed -> same draws; over 1e5 draws the mean is 2 within 0.05 (the standard error is
    2 / sqrt(1e5) = 0.0063, so the margin is ~8 standard errors)."""
    b = ChiSquaredBeta()
    r1, r2 = np.random.default_rng(123), np.random.default_rng(123)
    d1 = [b.beta(t, rng=r1) for t in range(1, 51)]
    d2 = [b.beta(t, rng=r2) for t in range(1, 51)]
    assert d1 == d2
    d3 = [b.beta(t, rng=np.random.default_rng(124)) for t in range(1, 51)]
    assert d1 != d3
    rng = np.random.default_rng(0)
    draws = np.array([b.beta(1, rng=rng) for _ in range(100_000)])
    assert abs(draws.mean() - 2.0) < 0.05
    assert abs(draws.var() - 4.0) < 0.2  # chi2(2) variance is 4
    assert draws.min() >= 0.0
    # sqrt_beta is the square root of one fresh draw
    r3, r4 = np.random.default_rng(5), np.random.default_rng(5)
    assert b.sqrt_beta(1, rng=r3) == pytest.approx(math.sqrt(b.beta(1, rng=r4)), rel=1e-15)
    with pytest.raises(InvalidInputError, match="rng"):
        b.beta(1)


def test_chi_squared_shift_for_max_value_loss() -> None:
    """Algorithms 2 and 3: beta = 2 log|X| + chi2(2) -- the shift is on beta, not on its root."""
    shift = 2 * math.log(2500)
    b = ChiSquaredBeta(shift=shift)
    r1, r2 = np.random.default_rng(9), np.random.default_rng(9)
    assert b.beta(1, rng=r1) == pytest.approx(shift + r2.chisquare(2.0), rel=1e-15)
    with pytest.raises(InvalidInputError, match="df"):
        ChiSquaredBeta(df=0)
    with pytest.raises(InvalidInputError, match="shift"):
        ChiSquaredBeta(shift=float("inf"))


def test_t_and_delta_validation() -> None:
    for bad_t in (0, -1, 1.5):
        with pytest.raises(InvalidInputError, match="t must"):
            SrinivasBeta(10).beta(bad_t)
    for bad_delta in (0.0, 1.0, -0.1):
        with pytest.raises(InvalidInputError, match="delta"):
            SrinivasBeta(10, bad_delta)
    with pytest.raises(InvalidInputError, match="n_candidates"):
        SrinivasBeta(0)
    with pytest.raises(InvalidInputError):
        ChowdhuryGopalanBeta(-1.0, 1.0)


def test_bounds_use_sqrt_beta_times_std() -> None:
    mean = np.array([0.0, 1.0, -2.0])
    var = np.array([4.0, 1.0, 0.0])
    lo, hi = confidence_bounds(mean, var, beta=9.0)  # sqrt_beta = 3
    assert np.allclose(lo, [-6.0, -2.0, -2.0]) and np.allclose(hi, [6.0, 4.0, -2.0])
    std = np.sqrt(var)
    assert np.allclose(lower_bound(mean, std, 3.0), lo)
    assert np.allclose(upper_bound(mean, std, 3.0), hi)
    lo2, hi2 = confidence_bounds(mean, np.array([-1e-18, 1.0, 0.0]), beta=1.0)  # clipped
    assert np.all(np.isfinite(lo2)) and lo2[0] == 0.0
    with pytest.raises(InvalidInputError, match="beta"):
        confidence_bounds(mean, var, beta=-1.0)
