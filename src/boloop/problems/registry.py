"""The problem registry: ``register`` a factory under ``family/name``; ``get`` by id with options."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from boloop._registry import Entry, Registry, is_file_id, load_file_attribute
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


def _parse_number(text: str) -> int | float | None:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return None


def _parse_value(text: str) -> Any:
    """A value in an id: int, float, ``true``/``false``, ``none``/``null`` (None, as JSON's
    ``null`` in ``boloop study create --option``), numbers separated by commas (a list, for an
    option that takes a sequence: ``variances=1,4``), else the text."""
    if text.lower() in ("none", "null"):
        return None
    number = _parse_number(text)
    if number is not None:
        return number
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if "," in text:
        numbers = [_parse_number(part) for part in text.split(",")]
        if all(n is not None for n in numbers):
            return numbers
    return text


def parse_problem_id(problem_id: str) -> tuple[str, dict[str, Any]]:
    """Split ``"family/name?a=-2&b=x&c=none&d=1,4"`` into ``("family/name", {"a": -2, "b": "x",
    "c": None, "d": [1, 4]})``."""
    name, _, query = problem_id.partition("?")
    options: dict[str, Any] = {}
    if query:
        for part in query.split("&"):
            key, sep, value = part.partition("=")
            if not sep or not key:
                raise InvalidInputError(f"bad option {part!r} in problem id {problem_id!r}")
            options[key] = _parse_value(value)
    return name, options


def is_file_problem(problem_id: str) -> bool:
    """Whether ``problem_id`` names a user's factory in a Python file (``path/to/file.py:name``)."""
    return is_file_id(problem_id)


def _load_file_factory(name: str) -> Callable[..., Problem]:
    """The function ``attr`` of the Python file ``path`` in ``"path.py:attr"``: the one loader of
    user files (:func:`boloop._registry.load_file_attribute`), shared with methods."""
    return load_file_attribute(name, "problem")


def get(problem_id: str, **options: Any) -> Problem:
    """Build the problem ``problem_id`` (options after ``?`` and keyword options are merged).

    ``problem_id`` is a registered id (``"levelset/toy"``) or a user's factory in a Python file,
    ``"path/to/file.py:factory"`` (options after ``?`` are passed to it too); the factory returns a
    :class:`Problem`, whose ``family`` selects the methods that can run on it.
    """
    name, parsed = parse_problem_id(problem_id)
    parsed.update(options)
    if is_file_problem(problem_id):
        factory = _load_file_factory(name)
        try:
            problem = factory(**parsed)
        except TypeError as exc:
            raise InvalidInputError(f"bad options for problem {name!r}: {exc}") from exc
        if not isinstance(problem, Problem):
            raise InvalidInputError(
                f"{name!r} must return a boloop.problems.Problem, got {type(problem).__name__}"
            )
        problem.id = (
            problem_id
            if not options
            else name + "?" + "&".join(f"{k}={v}" for k, v in parsed.items())
        )
        return problem
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
