"""Benchmark problems of the papers, found by id (``"levelset/sinusoidal"``, ``"expert/ackley4?a=-2"``).

Family modules in this package register their factories with :func:`register`; every module here
is imported on the first lookup.
"""

from __future__ import annotations

from boloop.problems.base import MetricTracker, Problem
from boloop.problems.registry import get, list, parse_problem_id, register

__all__ = ["MetricTracker", "Problem", "get", "list", "parse_problem_id", "register"]
