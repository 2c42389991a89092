"""The safe family's policies: M-SafeOpt (Cases 1, 2, 3a, 3b), SafeOpt-MC and PredVar.

Losalka & Scarlett, "No-Regret Algorithms for Safe Bayesian Optimization with Monotonicity
Constraints", AISTATS 2024 (spec ``shared/specs/msafeopt.md``): :class:`MSafeOpt` is Algorithm 1,
:class:`SafeOptMC` and :class:`PredVar` the baselines as the paper ran them (B.2.2). Each only
chooses the action of a round (the selection rules of :mod:`boloop.algorithms._safe_core`); the
rest is :class:`~boloop.algorithms.safe.base._SafePolicy`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from boloop._validation import positive
from boloop.algorithms._safe_core import (
    Bounds,
    SafeSets,
    Selection,
    select_msafeopt,
    select_predvar,
    select_safeopt_mc,
)
from boloop.algorithms.safe.base import _SafePolicy
from boloop.errors import InvalidInputError
from boloop.spaces import SafeSpace

__all__ = ["MSafeOpt", "SafeOptMC", "PredVar"]


class MSafeOpt(_SafePolicy):
    """M-SafeOpt (Losalka & Scarlett 2024, Algorithm 1), Cases 1, 2 and 3.

    Parameters (besides those of the shared base, see :class:`_SafePolicy`)
    ----------
    L_f:
        Maximum growth of ``f`` in ``s`` (eq. 4). ``None``: unknown, no upper bound assumed
        (every ``x`` whose certified range can still be extended stays a candidate and expands).
        Not used by ``case="3b"``.
    L_g_prime:
        Minimum growth ``L'_g > 0`` of ``g`` in ``s`` (eq. 5). ``None``: unknown, no lower bound
        assumed (the expansion limit ``s_bar`` is the top of the grid while ``LCB^g`` at the
        boundary is below ``h``). Not used by ``case="3b"``.
    case:
        ``"1"`` global safe optimum; ``"2"`` best safe s for every x; ``"3a"`` f and g increasing;
        ``"3b"`` M-SafeUCB (f = g, only ``g`` measured).
    acquisition:
        ``"default"`` (23) as in the theorems and experiments, or ``"refined"`` (36), which
        needs both constants.
    """

    def __init__(
        self,
        space: SafeSpace,
        threshold: float,
        *,
        L_f: float | None = None,
        L_g_prime: float | None = None,
        case: str | int = "1",
        acquisition: str = "default",
        **kwargs: Any,
    ) -> None:
        case = str(case)
        if case not in ("1", "2", "3a", "3b"):
            raise InvalidInputError(f"case must be 1, 2, '3a' or '3b', got {case!r}")
        if acquisition not in ("default", "refined"):
            raise InvalidInputError(
                f"acquisition must be 'default' or 'refined', got {acquisition!r}"
            )
        self.case = case
        self.acquisition = acquisition
        if case == "3b":
            self._outputs = ("g",)
        self.L_f = None if L_f is None else positive(L_f, "L_f")
        self.L_g_prime = None if L_g_prime is None else positive(L_g_prime, "L_g_prime")
        unknown = [n for n, v in (("L_f", L_f), ("L_g_prime", L_g_prime)) if v is None]
        if acquisition == "refined" and case != "3b" and unknown:
            raise InvalidInputError(
                "acquisition='refined' weighs g's width by L_f / L_g_prime (eq. 36), but "
                f"{' and '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} unknown: give "
                "them, or use acquisition='default'"
            )
        super().__init__(space, threshold, **kwargs)

    @property
    def method_id(self) -> str:  # type: ignore[override]
        return {"1": "m-safeopt", "2": "m-safeopt-x", "3a": "m-safeopt-3a", "3b": "m-safeucb"}[
            self.case
        ]

    def _constants(self) -> tuple[float | None, float | None]:
        return self.L_f, self.L_g_prime

    def _select(self, b: Bounds, sets: SafeSets) -> Selection:
        return select_msafeopt(
            b, sets, self.case, self.L_f, self.L_g_prime, self.acquisition == "refined"
        )

    def _best_index(self, b: Bounds, sets: SafeSets) -> np.ndarray:
        if self.case == "3b":  # the safe maximiser of an increasing function is the boundary
            return sets.boundary
        return sets.best

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(
            case=self.case,
            acquisition=self.acquisition,
            L_f="unknown" if self.L_f is None else self.L_f,
            L_g_prime="unknown" if self.L_g_prime is None else self.L_g_prime,
        )
        return d


class SafeOptMC(_SafePolicy):
    """SafeOpt-MC (Berkenkamp et al. 2021) as run in the paper (B.2.2, spec 4.1): expanders are the
    safe-boundary actions of the x not yet fully safe, maximisers SafeOpt's
    ``{UCB^f > maxLCB_t}`` within the safe set, acquisition the largest confidence width of f and
    g. Uses no ``L_f``, ``L'_g`` (they only enter through nothing but the shared ``s_bar``, unused)."""

    method_id = "safeopt-mc"

    def _select(self, b: Bounds, sets: SafeSets) -> Selection:
        return select_safeopt_mc(b, sets)


class PredVar(_SafePolicy):
    """PredVar (Schreiter et al. 2015) extended to f and g as in the paper (B.2.2): the action of
    the safe set with the largest confidence width ``max{beta^f sigma^f, beta^g sigma^g}``."""

    method_id = "predvar"

    def _select(self, b: Bounds, sets: SafeSets) -> Selection:
        return select_predvar(b, sets)
