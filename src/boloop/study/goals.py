"""Which way is better for the value a person measures, family by family.

A person at a measurement form must know whether a lower or a higher value is the good one:
COBOL's paper minimises ``f`` (the expert family's recommendation is the measured point with
the lowest predicted value). The level-set family maps a threshold (neither way is better) and
the preference family measures nothing; they declare no goal.

This is a family's declaration about itself: its natural home is the family table
(:mod:`boloop.algorithms.families`); it lives here, read by the study page, until it moves
there.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

__all__ = ["MEASURED_GOALS", "measured_goal"]

Goal = Literal["minimise", "maximise"]

#: the goal for the measured value of each family that has one
MEASURED_GOALS: Mapping[str, Goal] = MappingProxyType({"expert": "minimise"})


def measured_goal(family: str | None) -> Goal | None:
    """``"minimise"`` or ``"maximise"``: which way the measured value of ``family`` is better
    (None: the family declares no goal)."""
    return MEASURED_GOALS.get(str(family)) if family is not None else None
