"""Input checks of the safe family's policies: ``hyperparameters=``, the betas, ``initial_data``.

Losalka & Scarlett, "No-Regret Algorithms for Safe Bayesian Optimization with Monotonicity
Constraints", AISTATS 2024 (spec ``shared/specs/msafeopt.md``). Here:

* :func:`_resolve_learning` -- ``hyperparameters=`` and ``fit_hyperparameters`` to the shared
  mechanism of learned hyperparameters (or None: fixed kernels, the paper's refit);
* :func:`_schedule` -- a beta given as a number or a :class:`~boloop.confidence.BetaSchedule`;
* :class:`_SafeInputs` -- the part of :class:`~boloop.algorithms.safe.base._SafePolicy` that
  takes ``initial_data``: grid actions only, ``g <= h`` measured, and a seed above ``s = 0``
  only where the model certifies it (:class:`~boloop.errors.UnsafeSeedError` otherwise).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from boloop._validation import as_points, as_values, positive
from boloop.algorithms._safe_core import Bounds
from boloop.confidence import BetaSchedule, ConstantBeta
from boloop.errors import InvalidInputError, UnsafeSeedError
from boloop.gp.hyperparameters import HyperparameterLearning
from boloop.spaces import SafeSpace

logger = logging.getLogger("boloop")


def _resolve_learning(
    hyperparameters: HyperparameterLearning | str | None, fit: bool
) -> HyperparameterLearning | None:
    """The shared mechanism for learned hyperparameters; None for fixed ones or ``"paper"``."""
    if hyperparameters is not None and not isinstance(hyperparameters, HyperparameterLearning):
        if hyperparameters not in ("learned", "paper", "plain"):
            raise InvalidInputError(
                "hyperparameters must be 'learned', 'paper', 'plain' or a "
                f"HyperparameterLearning, got {hyperparameters!r}"
            )
    if not fit:
        if hyperparameters is not None:
            raise InvalidInputError("hyperparameters= only applies with fit_hyperparameters=True")
        return None
    if isinstance(hyperparameters, HyperparameterLearning):
        return hyperparameters
    if hyperparameters == "paper":
        return None
    if hyperparameters == "plain":
        logger.warning(
            "safe policy: plain maximum-likelihood hyperparameters requested (no priors, no "
            "conservative set): fitted kernels can certify unsafe actions"
        )
        return HyperparameterLearning.plain()
    return HyperparameterLearning()


def _schedule(value: float | BetaSchedule, name: str) -> BetaSchedule:
    if isinstance(value, BetaSchedule):
        return value
    return ConstantBeta(sqrt_beta=positive(value, name))


class _SafeInputs:
    """The checks of ``initial_data`` of :class:`~boloop.algorithms.safe.base._SafePolicy` (a
    mixin: it works on the policy's own state). What it needs from the policy is declared below
    (annotations only: no attribute is created here)."""

    # set by _SafePolicy.__init__
    space: SafeSpace
    threshold: float
    certified: np.ndarray

    if TYPE_CHECKING:  # the other parts' methods, declared for the checker only

        def _append(self, point: np.ndarray, f: float | None, g: float) -> None:
            """_SafeModels's: condition the models on one measurement."""
            ...

        def _bounds(self, t: int) -> Bounds:
            """_SafeModels's: the confidence bounds on the grid."""
            ...

    def _grid_index(self, point: np.ndarray) -> tuple[int, int]:
        flat = int(self.space.index_of(point[None, :])[0])
        if flat < 0:
            miss = self.space.describe_miss(point)
            raise InvalidInputError(f"initial_data has a point that is not a grid action: {miss}")
        i, j = self.space.unflat_index(flat)
        return int(i), int(j)

    def _add_initial_data(self, data: tuple[Any, Any, Any]) -> None:
        try:
            P, yf, yg = data
        except (TypeError, ValueError) as exc:
            raise InvalidInputError("initial_data must be (points, f, g)") from exc
        P = as_points(P, "initial_data points", dim=self.space.dim)
        yf = as_values(yf, "initial_data f", n=P.shape[0])
        yg = as_values(yg, "initial_data g", n=P.shape[0])
        idx = [self._grid_index(p) for p in P]
        h = self.threshold
        for (i, j), g in zip(idx, yg):
            if g > h:
                raise UnsafeSeedError(
                    f"initial_data: the point (s={self.space.s_values[j]}, x={self.space.x_points[i]})"
                    f" has measured g = {g} > h = {h}"
                )
        for p, f, g in zip(P, yf, yg):
            self._append(p, float(f), float(g))
        b = self._bounds(1)
        for i, j in idx:
            if j > 0 and not b.ucb_g[i, j] <= h:
                raise UnsafeSeedError(
                    f"initial_data: the model cannot certify the seed point "
                    f"(s={self.space.s_values[j]}, x={self.space.x_points[i]}) as safe "
                    f"(UCB^g = {b.ucb_g[i, j]:.4g} > h = {h}); give seeds at s = 0 or more data"
                )
            self.certified[i] = max(self.certified[i], j)
