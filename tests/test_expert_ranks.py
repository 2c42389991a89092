"""The numpy mid-ranks and Mann-Whitney count behind COBOL's agreement gate, against scipy.stats
(the oracle): equal values, ties included."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu, rankdata

from boloop.algorithms.expert.ranks import mann_whitney_excess, midranks


def _draws(seed: int, S: int, n: int, tied: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if tied:  # few distinct values: long runs of ties, and duplicated columns
        V = rng.integers(0, 4, size=(S, n)).astype(np.float64)
        V[:, -1] = V[:, 0]
        return V
    return rng.standard_normal((S, n))


@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize(("S", "n"), [(1, 1), (7, 2), (64, 13), (5, 40)])
def test_midranks_equal_scipy_rankdata(S: int, n: int, tied: bool) -> None:
    V = _draws(S * 100 + n, S, n, tied)
    np.testing.assert_array_equal(midranks(V), rankdata(V, method="average", axis=1))


@pytest.mark.parametrize("tied", [False, True])
def test_excess_equals_mannwhitneyu_statistic(tied: bool) -> None:
    V = _draws(3, 50, 17, tied)
    group = np.zeros(17, dtype=bool)
    group[[0, 2, 3, 8, 16]] = True
    r, a = 5, 12
    U = mannwhitneyu(V[:, group], V[:, ~group], axis=1, method="asymptotic").statistic
    np.testing.assert_array_equal(mann_whitney_excess(V, group), 2.0 * U - r * a)


def test_excess_is_the_pairwise_count() -> None:
    V = _draws(11, 30, 9, True)
    group = np.array([1, 0, 0, 1, 1, 0, 0, 0, 1], dtype=bool)
    d = V[:, group][:, :, None] - V[:, ~group][:, None, :]
    expected = np.sum(d > 0, axis=(1, 2)) - np.sum(d < 0, axis=(1, 2))
    np.testing.assert_array_equal(mann_whitney_excess(V, group), expected)
    assert np.any(expected == 0) or np.any(d == 0)  # ties occur in this draw


def test_midranks_rejects_a_vector() -> None:
    with pytest.raises(ValueError):
        midranks(np.zeros(3))


def test_nan_and_a_mask_of_the_wrong_length_are_refused():
    with pytest.raises(ValueError, match="NaN"):
        midranks(np.array([[0.0, np.nan, 1.0]]))
    with pytest.raises(ValueError, match="mask of shape"):
        mann_whitney_excess(np.zeros((2, 3)), np.array([True, False]))
