"""Bad input (NaN, inf, wrong shapes, points outside a space) raises a boloop error (a ValueError)
whose message names the argument, and changes no stored or cached state."""

from __future__ import annotations

import numpy as np
import pytest

from boloop import errors
from boloop._validation import as_points, as_rng, as_values, positive
from boloop.errors import BoloopError, InvalidInputError, OutOfSpaceError
from boloop.gp import CandidatePosterior, ExactGP, Matern, SquaredExponential
from boloop.spaces import Box


def test_error_hierarchy() -> None:
    for name in (
        "InvalidInputError",
        "OutOfSpaceError",
        "UnknownIdError",
        "QueryStateError",
        "AnswerTypeError",
        "NotFittedError",
        "StorageError",
        "UnsafeSeedError",
    ):
        cls = getattr(errors, name)
        assert issubclass(cls, BoloopError) and issubclass(cls, ValueError)
    assert issubclass(errors.UnknownIdError, KeyError)
    assert str(errors.UnknownIdError("no such id 'x'")) == "no such id 'x'"  # not KeyError-quoted
    assert issubclass(errors.AnswerTypeError, TypeError)


@pytest.mark.parametrize(
    "value,match",
    [
        ([[1.0, np.nan]], "pts contains NaN"),
        ([[1.0, np.inf]], "pts contains NaN or infinite"),
        (np.zeros((2, 2, 2)), r"pts must have shape \(n, d\)"),
        ([[1.0, 2.0, 3.0]], "pts must have 2 columns"),
        (np.zeros((0, 2)), "pts is empty"),
        ("text", "pts must be numeric"),
        ([[1.0], [1.0, 2.0]], "pts must be numeric"),
    ],
)
def test_as_points_rejects(value, match) -> None:
    with pytest.raises(InvalidInputError, match=match):
        as_points(value, "pts", dim=2)


def test_as_points_shapes() -> None:
    assert as_points(3.0, "p").shape == (1, 1)
    assert as_points([1.0, 2.0, 3.0], "p").shape == (3, 1)  # n one-dimensional points
    assert as_points([1.0, 2.0, 3.0], "p", dim=3).shape == (1, 3)  # one point of dimension 3
    assert as_points(np.zeros((0, 2)), "p", allow_empty=True).shape == (0, 2)
    assert as_points([[1, 2]], "p").dtype == np.float64


def test_as_values_positive_as_rng() -> None:
    assert as_values([[1.0], [2.0]], "v", n=2).shape == (2,)
    with pytest.raises(InvalidInputError, match="v must have 3 values"):
        as_values([1.0, 2.0], "v", n=3)
    with pytest.raises(InvalidInputError, match="v contains NaN"):
        as_values([1.0, np.nan], "v")
    with pytest.raises(InvalidInputError, match="v must be numeric"):
        as_values("abc", "v")
    assert positive("2.5", "scale") == 2.5
    for bad in (0, -1, np.inf, np.nan, "x", None):
        with pytest.raises(InvalidInputError, match="scale"):
            positive(bad, "scale")
    g = np.random.default_rng(1)
    assert as_rng(g) is g
    assert as_rng(5).random() == np.random.default_rng(5).random()


def _snapshot(gp: ExactGP) -> dict:
    return {
        "X": np.array(gp.X),
        "y": np.array(gp.y),
        "L": np.array(gp.cholesky_factor),
        "a": np.array(gp.whitened_residual),
        "n": gp.n,
        "dim": gp.dim,
        "version": gp.version,
        "theta": gp.kernel.theta.copy(),
        "noise": gp.noise_variance,
    }


def _assert_unchanged(gp: ExactGP, snap: dict) -> None:
    now = _snapshot(gp)
    for key, value in snap.items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(now[key], value), key
        else:
            assert now[key] == value, key


@pytest.fixture
def fitted_gp():
    rng = np.random.default_rng(0)
    X = rng.random((12, 2))
    gp = ExactGP(Matern(2.5, [0.4, 0.5]), 1e-3).set_data(X, np.sin(X[:, 0]))
    cache = CandidatePosterior(gp, rng.random((30, 2)))
    cache.mean  # synchronised
    return gp, cache


BAD_CONDITION = [
    ([np.nan, 0.5], 1.0, "x"),
    ([[0.5, np.inf]], [1.0], "x"),
    ([0.5, 0.5], np.nan, "y"),
    ([[0.5, 0.5], [0.1, 0.2]], [1.0, np.inf], "y"),
    ([[0.5, 0.5, 0.5]], [1.0], "x"),  # wrong dimension
    ([[0.5, 0.5], [0.1, 0.2]], [1.0], "y"),  # wrong count
    (np.zeros((1, 2, 2)), [1.0], "x"),  # wrong rank
    ("abc", 1.0, "x"),
    ([0.5, 0.5], "high", "y"),
]


@pytest.mark.parametrize("x,y,name", BAD_CONDITION)
def test_rejected_condition_changes_nothing(fitted_gp, x, y, name) -> None:
    gp, cache = fitted_gp
    snap = _snapshot(gp)
    mean, var = cache.mean.copy(), cache.variance.copy()
    with pytest.raises(InvalidInputError, match=rf"\b{name}\b"):
        gp.condition(x, y)
    _assert_unchanged(gp, snap)
    assert np.array_equal(cache.mean, mean) and np.array_equal(cache.variance, var)
    # the GP still works afterwards, and the cache follows it
    gp.condition([0.3, 0.3], 0.1)
    assert gp.n == snap["n"] + 1
    assert np.allclose(cache.mean, gp.predict(cache.candidates)[0], atol=1e-10)


@pytest.mark.parametrize(
    "X,y,name",
    [
        ([[0.1, np.nan]], [1.0], "X"),
        ([[0.1, 0.2]], [np.inf], "y"),
        ([[0.1, 0.2, 0.3]], [1.0], "X"),
        ([[0.1, 0.2]], [1.0, 2.0], "y"),
    ],
)
def test_rejected_set_data_changes_nothing(fitted_gp, X, y, name) -> None:
    gp, cache = fitted_gp
    snap = _snapshot(gp)
    with pytest.raises(InvalidInputError, match=rf"\b{name}\b"):
        gp.set_data(X, y)
    _assert_unchanged(gp, snap)


def test_kernel_that_rejects_points_changes_nothing() -> None:
    """An ARD kernel with 3 length-scales on a fresh GP given 2-column points: the error names
    the argument and the GP does not adopt the wrong dimension."""
    gp = ExactGP(SquaredExponential([1.0, 1.0, 1.0]), 1e-2)
    with pytest.raises(InvalidInputError, match="x"):
        gp.condition([[0.1, 0.2]], [1.0])
    assert gp.n == 0 and gp.dim is None
    with pytest.raises(InvalidInputError, match="X"):
        gp.set_data([[0.1, 0.2]], [1.0])
    assert gp.n == 0 and gp.dim is None
    gp.condition([[0.1, 0.2, 0.3]], [1.0])  # the right dimension is still accepted
    assert gp.n == 1 and gp.dim == 3


def test_rejected_fit_and_predict_change_nothing(fitted_gp) -> None:
    gp, cache = fitted_gp
    snap = _snapshot(gp)
    with pytest.raises(InvalidInputError, match="X"):
        gp.predict([[0.1, np.nan]])
    with pytest.raises(InvalidInputError, match="X"):
        gp.predict([[0.1, 0.2, 0.3]])
    with pytest.raises(InvalidInputError, match="X1"):
        gp.posterior_covariance([[np.inf, 0.0]], [[0.0, 0.0]])
    with pytest.raises(InvalidInputError, match="X2"):
        gp.posterior_covariance([[0.0, 0.0]], [[0.0, 0.0, 0.0]])
    with pytest.raises(InvalidInputError, match="fit needs both X and y"):
        gp.fit(X=np.zeros((3, 2)))
    with pytest.raises(InvalidInputError, match="y"):
        gp.fit(np.zeros((3, 2)), [1.0, np.nan, 2.0])
    _assert_unchanged(gp, snap)


def test_exact_gp_constructor_and_empty_errors() -> None:
    with pytest.raises(InvalidInputError, match="kernel"):
        ExactGP("rbf")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="noise_variance"):
        ExactGP(Matern(), noise_variance=-1.0)
    with pytest.raises(InvalidInputError, match="noise_variance"):
        ExactGP(Matern(), noise_variance=np.nan)
    with pytest.raises(InvalidInputError, match="mean"):
        ExactGP(Matern(), mean="linear")
    with pytest.raises(InvalidInputError, match="noise_floor"):
        ExactGP(Matern(), noise_floor=0.0)
    with pytest.raises(InvalidInputError, match="priors"):
        ExactGP(Matern(), priors={"shape": None})  # type: ignore[dict-item]
    empty = ExactGP(Matern(), 1e-2)
    with pytest.raises(InvalidInputError, match="fit needs data"):
        empty.fit()
    with pytest.raises(InvalidInputError, match="log_marginal_likelihood needs data"):
        empty.log_marginal_likelihood()
    with pytest.raises(InvalidInputError, match="noise_variance"):
        ExactGP(Matern(), 0.0).set_data([[0.0]], [1.0]).information_gain()


def test_candidate_cache_rejects_bad_candidates(fitted_gp) -> None:
    gp, _ = fitted_gp
    with pytest.raises(InvalidInputError, match="candidates"):
        CandidatePosterior(gp, [[0.1, np.nan]])
    with pytest.raises(InvalidInputError, match="candidates"):
        CandidatePosterior(gp, [[0.1, 0.2, 0.3]])
    with pytest.raises(InvalidInputError, match="chunk_size"):
        CandidatePosterior(gp, [[0.1, 0.2]], chunk_size=0)


def test_points_outside_a_space() -> None:
    box = Box([0.0, 0.0], [1.0, 1.0])
    with pytest.raises(OutOfSpaceError, match="x_next"):
        box.validate([[0.5, 1.5]], "x_next")
    with pytest.raises(BoloopError):
        box.validate([[-0.1, 0.5]])


def test_failed_refactorisation_in_fit_restores_hyperparameters(fitted_gp, monkeypatch) -> None:
    """If the final factorisation of fit() fails, the GP keeps its previous hyperparameters,
    data and factor (the error propagates)."""
    import boloop.gp.exact as exact

    gp, _ = fitted_gp
    gp.fit_noise = True
    snap = _snapshot(gp)

    def broken(A):
        raise np.linalg.LinAlgError("forced failure")

    monkeypatch.setattr(exact, "robust_cholesky", broken)
    with pytest.raises(np.linalg.LinAlgError):
        gp.fit(n_restarts=0)
    _assert_unchanged(gp, snap)
