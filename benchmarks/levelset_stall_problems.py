"""Grids for the level-set stall with learned hyperparameters (a trend plus what the start misses).

A newcomer's coating map (temperature x speed, a linear trend plus one bump the 5-point
space-filling start did not touch) left the randomized straddle with the kernel learned at
F 0.42-0.45 in 5 of 5 seeds, the bump never found, while a fixed kernel of the bump's own
length-scales reached 0.93-0.96 (``docs/hyperparameters.md``, "A trend hides a bump").

``stall/coating`` is that map. The other three were written down here, with their fixed-kernel
references, **before anything was run on them**, so that a fix is not tuned to the named case:

* ``stall/trend-needle``: 41 x 41 grid of ``[0, 1]^2``, a steep trend (above at the right) plus
  a narrow bump (sd 0.06) at the opposite side, ``(0.25, 0.75)``; threshold 1, noise sd 0.05;
* ``stall/two-bumps``: 41 x 21 grid of ``[0, 2] x [0, 1]``, two bumps of different widths and
  heights on a flat floor, no trend; threshold 0.5, noise sd 0.05;
* ``stall/trend3d``: 11^3 grid in units of very different sizes (``[0, 50] x [1, 3] x
  [200, 400]``), a trend in two axes plus a bump (sd 12% of each range) in the middle of the
  low side; threshold 1, noise sd 0.03.

Each problem carries a fixed kernel (its ``settings["kernel"]``, zero mean as in the paper's
setting): squared-exponential with the bump's own length-scale per axis (``sd`` of the Gaussian
bump, the trend needs none), output variance the variance of ``f`` on the grid, noise variance the
true one. That is the "fixed-kernel run" of issue 18's criterion for these grids.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from boloop.gp.kernels import SquaredExponential
from boloop.problems.levelset import LevelSetProblem
from boloop.spaces import CandidateSet


def _problem(
    pid: str,
    bounds: list[tuple[float, float]],
    sizes: list[int],
    f: Callable[[np.ndarray], np.ndarray],
    threshold: float,
    noise_sd: float,
    lengthscale: list[float],
) -> LevelSetProblem:
    axes = [np.linspace(lo, hi, n) for (lo, hi), n in zip(bounds, sizes)]
    mesh = np.meshgrid(*axes, indexing="ij")
    space = CandidateSet(np.column_stack([m.ravel() for m in mesh]))
    values = f(space.points)
    kernel = SquaredExponential(
        lengthscale=np.asarray(lengthscale, dtype=np.float64), variance=float(np.var(values))
    )
    return LevelSetProblem(
        id=pid,
        family="levelset",
        space=space,
        description="a trend plus what a space-filling start misses (issue 18's stall)",
        settings={
            "threshold": float(threshold),
            "kernel": kernel,
            "noise_variance": float(noise_sd) ** 2,
        },
        function=f,
        threshold=float(threshold),
        noise_sd=float(noise_sd),
    )


def coating() -> LevelSetProblem:
    """The newcomer's map: ``0.4 + 0.006 (T - 100) - 0.15 v + 0.6 exp(-((T - 160)/20)^2 -
    ((v - 2)/0.8)^2)`` on 31 x 21 points of ``[100, 200] x [0.5, 5]``, threshold 0.8, noise 0.03."""

    def f(X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64).reshape(-1, 2)
        T, v = X[:, 0], X[:, 1]
        bump = np.exp(-(((T - 160) / 20) ** 2) - ((v - 2) / 0.8) ** 2)
        return 0.4 + 0.006 * (T - 100) - 0.15 * v + 0.6 * bump

    # exp(-(u/20)^2) is a Gaussian of sd 20 / sqrt2
    ls = [20 / np.sqrt(2), 0.8 / np.sqrt(2)]
    return _problem("stall/coating", [(100, 200), (0.5, 5)], [31, 21], f, 0.8, 0.03, ls)


def trend_needle() -> LevelSetProblem:
    """``1.2 x + 0.4 y + 0.9 exp(-|p - (0.25, 0.75)|^2 / (2 0.06^2))``, threshold 1."""

    def f(X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64).reshape(-1, 2)
        d2 = (X[:, 0] - 0.25) ** 2 + (X[:, 1] - 0.75) ** 2
        return 1.2 * X[:, 0] + 0.4 * X[:, 1] + 0.9 * np.exp(-d2 / (2 * 0.06**2))

    return _problem("stall/trend-needle", [(0, 1), (0, 1)], [41, 41], f, 1.0, 0.05, [0.06, 0.06])


def two_bumps() -> LevelSetProblem:
    """``exp(-|p - (0.4, 0.3)|^2 / (2 0.1^2)) + 0.8 exp(-|p - (1.5, 0.7)|^2 / (2 0.08^2))`` on
    ``[0, 2] x [0, 1]``, threshold 0.5."""

    def f(X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64).reshape(-1, 2)
        a = (X[:, 0] - 0.4) ** 2 + (X[:, 1] - 0.3) ** 2
        b = (X[:, 0] - 1.5) ** 2 + (X[:, 1] - 0.7) ** 2
        return np.exp(-a / (2 * 0.1**2)) + 0.8 * np.exp(-b / (2 * 0.08**2))

    return _problem("stall/two-bumps", [(0, 2), (0, 1)], [41, 21], f, 0.5, 0.05, [0.09, 0.09])


def trend3d() -> LevelSetProblem:
    """In units ``[0, 50] x [1, 3] x [200, 400]`` (u = position in the box, 0..1 per axis):
    ``u0 + 0.5 u1 - 0.3 u2 + 0.8 exp(-|u - (0.3, 0.7, 0.5)|^2 / (2 0.12^2))``, threshold 1."""
    lo = np.array([0.0, 1.0, 200.0])
    width = np.array([50.0, 2.0, 200.0])

    def f(X: np.ndarray) -> np.ndarray:
        U = (np.asarray(X, dtype=np.float64).reshape(-1, 3) - lo) / width
        d2 = ((U - np.array([0.3, 0.7, 0.5])) ** 2).sum(axis=1)
        return U[:, 0] + 0.5 * U[:, 1] - 0.3 * U[:, 2] + 0.8 * np.exp(-d2 / (2 * 0.12**2))

    return _problem(
        "stall/trend3d",
        [(0, 50), (1, 3), (200, 400)],
        [11, 11, 11],
        f,
        1.0,
        0.03,
        list(0.12 * width),
    )


def _furnace(t: np.ndarray) -> np.ndarray:
    """The furnace of ``tests/test_levelset_stall.py``: a wide bump at 125 and a narrow one
    (height 0.8, sd 2.5) at 180 on ``[100, 200]``."""
    x = (np.asarray(t, dtype=np.float64) - 100.0) / 100.0
    return np.exp(-((x - 0.25) ** 2) / (2 * 0.08**2)) + 0.8 * np.exp(
        -((x - 0.8) ** 2) / (2 * 0.025**2)
    )


def furnace_fine() -> LevelSetProblem:
    """The interleaving case (written down before it was run): the furnace as a 2-D map on a
    fine grid, the kind a lab types, temperature ``[100, 200]`` on 101 levels x hold time
    ``[0, 60]`` min on 61 levels, ``furnace(T) (0.7 + 0.3 time / 60)``, threshold 0.5, noise sd
    0.03. On a fine grid a boundary point has many unmeasured neighbours a small fraction of a
    length-scale away, and a straddle can alternate between the point and them."""

    def f(X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64).reshape(-1, 2)
        return _furnace(X[:, 0]) * (0.7 + 0.3 * X[:, 1] / 60.0)

    return _problem(
        "interleave/furnace-fine", [(100, 200), (0, 60)], [101, 61], f, 0.5, 0.03, [2.5, 60.0]
    )


def furnace_1d() -> LevelSetProblem:
    """The furnace on its own axis, 101 levels of ``[100, 200]``, threshold 0.5, noise 0.03
    (the tests' study)."""

    def f(X: np.ndarray) -> np.ndarray:
        return _furnace(np.asarray(X, dtype=np.float64).reshape(-1))

    return _problem("interleave/furnace", [(100, 200)], [101], f, 0.5, 0.03, [2.5])


#: cases for the interleaved stall (not in the default design set of ``levelset_stall.py``)
INTERLEAVE_PROBLEMS: dict[str, Callable[[], LevelSetProblem]] = {
    "interleave/furnace-fine": furnace_fine,
    "interleave/furnace": furnace_1d,
}

STALL_PROBLEMS: dict[str, Callable[[], LevelSetProblem]] = {
    "stall/coating": coating,
    "stall/trend-needle": trend_needle,
    "stall/two-bumps": two_bumps,
    "stall/trend3d": trend3d,
}
