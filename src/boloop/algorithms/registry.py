"""The method registry: ``make_policy(method_id, problem, seed, **options)`` builds any method
with the problem's paper settings, so the CLI, the bench and studies need no per-method code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from boloop._registry import Entry, Registry
from boloop.problems.base import Problem
from boloop.queries import BasePolicy

_METHODS = Registry("method", "boloop.algorithms")


def register_method(
    method_id: str, family: str, description: str
) -> Callable[[Callable[..., BasePolicy]], Callable[..., BasePolicy]]:
    """Decorator: register ``factory(problem, seed, **options) -> Policy`` under ``method_id``."""
    return _METHODS.register(method_id, family, description)


def make_policy(
    method_id: str, problem: Problem, seed: int | None = 0, **options: Any
) -> BasePolicy:
    """Build method ``method_id`` for ``problem`` with the problem's paper settings.

    Raises :class:`boloop.errors.UnknownIdError` (listing the valid ids) for an unknown method, and
    :class:`boloop.errors.InvalidInputError` when the method's family differs from the problem's.
    """
    from boloop.errors import InvalidInputError

    entry = _METHODS.get(method_id)
    if entry.family != problem.family:
        valid = [e.id for e in _METHODS.entries(problem.family)]
        raise InvalidInputError(
            f"method {method_id!r} is for {entry.family} problems, but {problem.id!r} is a "
            f"{problem.family} problem; methods for it: {valid}"
        )
    return entry.factory(problem, seed, **options)


def list_methods(family: str | None = None) -> list[Entry]:
    return _METHODS.entries(family)
