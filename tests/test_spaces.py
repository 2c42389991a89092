"""Spaces: Box scaling and sampling, CandidateSet grids and look-ups, SafeSpace layout; errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from boloop.errors import BoloopError, InvalidInputError, OutOfSpaceError
from boloop.spaces import Box, CandidateSet, SafeSpace

# ---------------------------------------------------------------- Box


@settings(max_examples=50, deadline=None, derandomize=True)
@given(
    lo=arrays(np.float64, 3, elements=st.floats(-1e3, 1e3)),
    width=arrays(np.float64, 3, elements=st.floats(1e-3, 1e3)),
    u=arrays(np.float64, (7, 3), elements=st.floats(0, 1)),
)
def test_box_unit_round_trip(lo, width, u) -> None:
    box = Box(lo, lo + width)
    X = box.from_unit(u)
    assert np.all(box.contains(X))
    assert np.allclose(box.to_unit(X), u, rtol=0, atol=1e-9)
    assert np.allclose(box.from_unit(box.to_unit(X)), X, rtol=1e-12, atol=1e-9)


def test_box_corners_map_to_unit_corners() -> None:
    box = Box([-5.0, 0.0], [5.0, 2.0], names=["a", "b"])
    assert np.array_equal(box.to_unit([[-5.0, 0.0], [5.0, 2.0]]), [[0.0, 0.0], [1.0, 1.0]])
    assert box.dim == 2 and box.names == ["a", "b"]
    assert np.array_equal(box.bounds, [[-5.0, 5.0], [0.0, 2.0]])
    assert np.array_equal(Box.unit(3).upper, np.ones(3))


@pytest.mark.parametrize("method", ["uniform", "sobol"])
def test_box_sampling_reproducible_and_inside(method: str) -> None:
    box = Box([-1.0, 10.0, 0.0], [1.0, 20.0, 1e-3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning for n not a power of 2 either
        a = box.sample(100, seed=7, method=method)
        b = box.sample(100, seed=7, method=method)
        c = box.sample(100, seed=8, method=method)
    assert a.shape == (100, 3)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert np.all(box.contains(a))
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    assert np.array_equal(box.sample(16, g1, method), box.sample(16, g2, method))
    assert box.sample(0, seed=1, method=method).shape == (0, 3)


def test_sobol_is_balanced() -> None:
    """A scrambled Sobol' sample of 2^10 points has exactly 2^9 points in each half of each axis."""
    U = Box.unit(2).sample(1024, seed=0, method="sobol")
    assert np.all((U < 0.5).sum(axis=0) == 512)


def test_box_contains_and_validate() -> None:
    box = Box([0.0, 0.0], [1.0, 2.0])
    inside = box.contains([[0.5, 1.0], [1.0, 2.0], [1.1, 1.0], [0.5, -0.01]])
    assert inside.tolist() == [True, True, False, False]
    assert box.contains([[1.0 + 1e-14, 2.0]])[0]  # tolerance: 1e-12 of the width
    X = box.validate([[0.25, 0.5]], "x")
    assert X.shape == (1, 2)
    with pytest.raises(OutOfSpaceError, match="x_new"):
        box.validate([[0.5, 3.0]], "x_new")
    with pytest.raises(InvalidInputError, match="x_new"):
        box.validate([[np.nan, 0.5]], "x_new")
    with pytest.raises(InvalidInputError, match="x_new"):
        box.validate([[0.5, 0.5, 0.5]], "x_new")
    with pytest.raises(InvalidInputError, match="method"):
        box.sample(3, method="lhs")
    with pytest.raises(InvalidInputError, match="n"):
        box.sample(-1)


@pytest.mark.parametrize(
    "lower,upper,match",
    [
        ([0.0, 1.0], [1.0], "same length"),
        ([1.0], [0.0], "lower must be < upper"),
        ([0.0], [np.inf], "finite"),
        ([np.nan], [1.0], "finite"),
        ([], [], "same length"),
    ],
)
def test_box_construction_errors(lower, upper, match) -> None:
    with pytest.raises(InvalidInputError, match=match):
        Box(lower, upper)


def test_box_names_must_be_distinct() -> None:
    with pytest.raises(InvalidInputError, match="names"):
        Box([0, 0], [1, 1], names=["a", "a"])


# ---------------------------------------------------------------- CandidateSet


def test_grid_includes_endpoints_and_orders_last_fastest() -> None:
    cs = CandidateSet.grid([[0.0, 1.0], [-2.0, 2.0]], [3, 5])
    assert cs.n == 15 and cs.dim == 2 and len(cs) == 15
    P = cs.points
    assert np.array_equal(P[0], [0.0, -2.0]) and np.array_equal(P[-1], [1.0, 2.0])
    assert np.array_equal(P[:5, 1], np.linspace(-2, 2, 5))  # last coordinate fastest
    assert np.all(P[:5, 0] == 0.0)
    grid_values = (P[:, 0] * 10 + P[:, 1]).reshape(3, 5)
    assert np.array_equal(grid_values[:, 0], [-2.0, 3.0, 8.0])
    assert not P.flags.writeable
    # the same from a Box
    assert np.array_equal(Box([0.0, -2.0], [1.0, 2.0]).grid([3, 5]).points, P)
    # n_per_dim as a scalar
    assert CandidateSet.grid([[0, 1], [0, 1], [0, 1]], 4).n == 64


def test_grid_spacing_matches_paper_grids() -> None:
    """The level-set paper's 50 x 50 grid over [-5, 5]^2 (|X| = 2500), spacing 10/49."""
    cs = CandidateSet.grid([[-5, 5], [-5, 5]], 50)
    assert cs.n == 2500
    xs = np.unique(cs.points[:, 0])
    assert xs[0] == -5.0 and xs[-1] == 5.0
    assert np.allclose(np.diff(xs), 10 / 49, rtol=1e-12)


def test_candidate_set_index_of_contains_validate() -> None:
    cs = CandidateSet(np.array([[0.0, 0.0], [1.0, 0.5], [2.0, 1.0]]))
    assert cs.index_of([[1.0, 0.5], [2.0, 1.0], [5.0, 5.0]]).tolist() == [1, 2, -1]
    assert cs.index_of([[1.0 + 1e-12, 0.5]]).tolist() == [1]
    assert cs.contains([[0.0, 0.0], [0.1, 0.0]]).tolist() == [True, False]
    out = cs.validate([[2.0, 1.0]], "x")
    assert np.array_equal(out, [[2.0, 1.0]])
    with pytest.raises(OutOfSpaceError, match="x"):
        cs.validate([[0.3, 0.0]], "x")
    with pytest.raises(InvalidInputError, match="x"):
        cs.validate([[np.inf, 0.0]], "x")
    box = cs.box
    assert np.array_equal(box.lower, [0.0, 0.0]) and np.array_equal(box.upper, [2.0, 1.0])
    assert np.allclose(cs.to_unit()[-1], [1.0, 1.0])


@pytest.mark.parametrize(
    "points,match",
    [
        (np.zeros((0, 2)), "points"),
        (np.array([[0.0, np.nan]]), "points"),
        (np.zeros((2, 2, 2)), "points"),
        ("abc", "points"),
    ],
)
def test_candidate_set_errors(points, match) -> None:
    with pytest.raises(InvalidInputError, match=match):
        CandidateSet(points)


def test_grid_errors() -> None:
    with pytest.raises(InvalidInputError, match="bounds"):
        CandidateSet.grid([0.0, 1.0], 5)
    with pytest.raises(InvalidInputError, match="n_per_dim"):
        CandidateSet.grid([[0.0, 1.0]], 0)
    with pytest.raises(InvalidInputError, match="n_per_dim"):
        CandidateSet.grid([[0.0, 1.0], [0.0, 1.0]], [3])


# ---------------------------------------------------------------- SafeSpace


def test_safe_space_layout_and_reductions_over_s() -> None:
    s = np.array([0.0, 0.25, 0.5, 1.0])
    X = np.array([[10.0, 1.0], [20.0, 2.0], [30.0, 3.0]])
    sp = SafeSpace(s, X)
    assert (sp.n_s, sp.n_x, sp.n, sp.dim) == (4, 3, 12, 3)
    P = sp.points
    assert P.shape == (12, 3)
    # flat index = ix * n_s + is
    for ix in range(3):
        for js in range(4):
            k = int(sp.flat_index(ix, js))
            assert P[k, 0] == s[js] and np.array_equal(P[k, 1:], X[ix])
    ix, js = sp.unflat_index(np.arange(12))
    assert np.array_equal(sp.flat_index(ix, js), np.arange(12))
    # a value over actions reshapes to (n_x, n_s): reductions over s for every x are axis 1
    values = P[:, 0] * 100 + P[:, 1]
    M = sp.as_matrix(values)
    assert M.shape == (3, 4)
    assert np.array_equal(M.max(axis=1), 100 * s[-1] + X[:, 0])
    assert np.array_equal(sp.seeds(), [0, 4, 8])
    assert np.all(P[sp.seeds(), 0] == 0.0)
    assert np.array_equal(sp.rows(slice(1, 3)), P[4:12])
    assert sp.contains(P).all() and not sp.contains([[2.0, 10.0, 1.0]])[0]
    with pytest.raises(InvalidInputError, match="values"):
        sp.as_matrix(np.zeros(5))


def test_safe_space_grid_and_errors() -> None:
    sp = SafeSpace.grid((0.0, 1.0), 5, [[0.0, 1.0]], 7)
    assert sp.n == 35 and np.array_equal(sp.s_values, np.linspace(0, 1, 5))
    with pytest.raises(InvalidInputError, match="s_values"):
        SafeSpace([0.0, 0.5, 0.5], [[0.0]])
    with pytest.raises(InvalidInputError, match="s_values"):
        SafeSpace([1.0, 0.0], [[0.0]])
    with pytest.raises(InvalidInputError, match="x_points"):
        SafeSpace([0.0, 1.0], [[np.nan]])


def test_every_space_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        Box([1.0], [0.0])
    with pytest.raises(BoloopError):
        Box([0.0], [1.0]).validate([[2.0]])


def test_safe_space_map_rows_equals_a_whole_grid_evaluation():
    """map_rows streams x rows in chunks (here 7 actions at most, so chunks of 1 x row) and returns
    the same (n_x, n_s) matrices as evaluating every action at once."""
    from boloop.spaces import SafeSpace

    space = SafeSpace.grid((0.0, 1.0), 4, [[0.0, 2.0], [-1.0, 1.0]], 3)

    def fn(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return P[:, 0] + P[:, 1] ** 2, P[:, 0] * P[:, 2]

    a, b = space.map_rows(fn, max_points=7)
    whole_a, whole_b = fn(space.points)
    np.testing.assert_array_equal(a, space.as_matrix(whole_a))
    np.testing.assert_array_equal(b, space.as_matrix(whole_b))
