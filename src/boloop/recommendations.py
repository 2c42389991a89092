"""What a policy recommends: one small typed value per kind (the policy contract, issue 13).

Every policy's ``recommend()`` returns one of these, so that the simulation's metric trackers,
studies, the web page and a user's own code read the same public fields whatever the family:

* :class:`BestPoint` -- the estimated best point of an optimiser (expert, preference families):
  ``point`` (d,) and, in a finite space, its ``index``.
* :class:`SafeRecommendation` -- a :class:`BestPoint` that is certified safe, plus the per-``x``
  outputs of M-SafeOpt (Case 2: ``best_s``, eq. 16; the safe boundary ``boundary_s``).
* :class:`LevelSetEstimate` -- the estimated super- and sub-level sets ``(H_t, L_t)`` of the
  level-set paper (eq. 3.1; eq. A.3 for its Algorithm 3).

``to_dict()`` gives plain Python values (lists, floats, ints), the form traces and exports store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from boloop.errors import InvalidInputError

__all__ = ["Recommendation", "BestPoint", "SafeRecommendation", "LevelSetEstimate"]


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


class Recommendation:
    """Base of the typed recommendations; ``to_dict()`` gives plain values."""

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class BestPoint(Recommendation):
    """The estimated best point.

    Attributes
    ----------
    point:
        The point (d,), or ``None`` when the policy has nothing to recommend yet.
    index:
        Its row in a finite space (candidate set, option table), else ``None``.
    """

    point: np.ndarray | None
    index: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"point": _plain(self.point), "index": self.index}


@dataclass(frozen=True, eq=False)
class SafeRecommendation(BestPoint):
    """The certified-safe recommendation of the safe family (M-SafeOpt, Sec. 3-4).

    Attributes
    ----------
    point, index:
        The action ``(s, x)`` of the certified safe set with the largest ``LCB^f`` (Case 1) and its
        flat grid index (``i_x * n_s + j_s``).
    best_s, best_s_index:
        For every ``x`` (n_x,): the safe ``UCB^f`` maximiser ``s_hat_t^{(x)}`` (eq. 16, Case 2's
        output) and its index on the ``s`` grid.
    boundary_s:
        For every ``x`` (n_x,): the certified safe boundary ``s_t^{(x)}``.
    """

    best_s: np.ndarray | None = None
    best_s_index: np.ndarray | None = None
    boundary_s: np.ndarray | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **super().to_dict(),
            "best_s": _plain(self.best_s),
            "best_s_index": _plain(self.best_s_index),
            "boundary_s": _plain(self.boundary_s),
        }


@dataclass(frozen=True, eq=False)
class LevelSetEstimate(Recommendation):
    """Estimated sets ``(H_t, L_t)`` of eq. (3.1) (or eq. A.3 for Algorithm 3).

    Attributes
    ----------
    threshold:
        ``theta``.
    iteration:
        The ``t`` of ``H_t``: the sets come from the posterior after the initial points and
        ``t - 1`` iterations (``t = T + 1`` means "after all data").
    points:
        The candidate points (N, d) for a finite space, else ``None``.
    upper:
        Bool mask (N,) of ``H_t`` over ``points`` (finite spaces), else ``None``.
    classify:
        ``classify(X) -> bool (m,)``: membership of ``H_t`` for any points X (m, d).
    """

    threshold: float
    iteration: int
    points: np.ndarray | None
    upper: np.ndarray | None
    classify: Callable[[np.ndarray], np.ndarray]

    def __post_init__(self) -> None:
        """Refuse sets that do not fit together (a method of one's own, ``docs/methods.md``):
        before, a mask of another length was taken and failed later, far from its cause, in a
        study's status (an ``IndexError``)."""
        if not callable(self.classify):
            raise InvalidInputError(
                "LevelSetEstimate.classify must be a function classify(X) -> bool (m,), got "
                f"{type(self.classify).__name__}"
            )
        if self.upper is None:
            return
        upper = np.asarray(self.upper)
        if self.points is None:
            raise InvalidInputError(
                "LevelSetEstimate: upper (a mask over candidate points) needs points (N, d)"
            )
        n = len(self.points)
        if upper.shape != (n,) or upper.dtype != np.bool_:
            raise InvalidInputError(
                f"LevelSetEstimate.upper must be a bool mask of shape ({n},), one entry per "
                f"candidate point, got {upper.dtype} of shape {upper.shape}"
            )

    @property
    def lower(self) -> np.ndarray | None:
        """Bool mask (N,) of ``L_t`` (the complement of ``upper``)."""
        return None if self.upper is None else ~self.upper

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": float(self.threshold),
            "iteration": int(self.iteration),
            "upper": _plain(self.upper),
        }

    def __repr__(self) -> str:
        size = "" if self.upper is None else f", n_upper={int(self.upper.sum())}/{self.upper.size}"
        return f"LevelSetEstimate(iteration={self.iteration}, threshold={self.threshold:g}{size})"
