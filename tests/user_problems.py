"""A user's own level-set study on a grid, as the tests of the learned default build it: the
threshold at a quantile of the function on the grid, measurement noise 2% of its spread."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from boloop.problems.levelset import LevelSetProblem
from boloop.spaces import CandidateSet


def user_grid_problem(
    name: str, space: CandidateSet, f: Callable[[np.ndarray], np.ndarray], quantile: float
) -> LevelSetProblem:
    """``user/NAME`` over ``space`` with value ``f`` and the threshold at ``quantile`` of ``f``."""
    vals = f(space.points)
    th = float(np.quantile(vals, quantile))
    return LevelSetProblem(
        id=f"user/{name}",
        family="levelset",
        space=space,
        description="",
        settings={"threshold": th},
        function=f,
        threshold=th,
        noise_sd=0.02 * float(np.std(vals)),
    )
