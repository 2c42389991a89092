"""The problem registry: ``register`` a factory under ``family/name``; ``get`` by id with options."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from boloop._registry import Entry, Registry
from boloop.errors import InvalidInputError
from boloop.problems.base import Problem

_PROBLEMS = Registry("problem", "boloop.problems")


def register(
    problem_id: str, description: str
) -> Callable[[Callable[..., Problem]], Callable[..., Problem]]:
    """Decorator: register ``factory(**options) -> Problem`` under ``family/name``."""
    if "/" not in problem_id:
        raise InvalidInputError(f"problem ids are 'family/name', got {problem_id!r}")
    return _PROBLEMS.register(problem_id, problem_id.split("/", 1)[0], description)


def _parse_value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def parse_problem_id(problem_id: str) -> tuple[str, dict[str, Any]]:
    """Split ``"family/name?a=-2&b=x"`` into ``("family/name", {"a": -2, "b": "x"})``."""
    name, _, query = problem_id.partition("?")
    options: dict[str, Any] = {}
    if query:
        for part in query.split("&"):
            key, sep, value = part.partition("=")
            if not sep or not key:
                raise InvalidInputError(f"bad option {part!r} in problem id {problem_id!r}")
            options[key] = _parse_value(value)
    return name, options


def get(problem_id: str, **options: Any) -> Problem:
    """Build the problem ``problem_id`` (options after ``?`` and keyword options are merged)."""
    name, parsed = parse_problem_id(problem_id)
    parsed.update(options)
    entry = _PROBLEMS.get(name)
    try:
        problem = entry.factory(**parsed)
    except TypeError as exc:
        raise InvalidInputError(f"bad options for problem {name!r}: {exc}") from exc
    problem.id = (
        problem_id if not options else name + "?" + "&".join(f"{k}={v}" for k, v in parsed.items())
    )
    return problem


def list(family: str | None = None) -> builtins.list[Entry]:  # noqa: A001 - the registry's verb
    """Registered problems (id, family, description), optionally of one family."""
    return _PROBLEMS.entries(family)
