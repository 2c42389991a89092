"""The problem registry: ``register`` a factory under ``family/name``; ``get`` by id with options."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from boloop._registry import (
    Entry,
    Registry,
    is_file_id,
    load_file_attribute,
    parse_id_value,
    split_id,
)
from boloop.errors import BoloopError, InvalidInputError
from boloop.problems.base import Problem

_PROBLEMS = Registry("problem", "boloop.problems")


def register(
    problem_id: str, description: str
) -> Callable[[Callable[..., Problem]], Callable[..., Problem]]:
    """Decorator: register ``factory(**options) -> Problem`` under ``family/name``."""
    if "/" not in problem_id:
        raise InvalidInputError(f"problem ids are 'family/name', got {problem_id!r}")
    return _PROBLEMS.register(problem_id, problem_id.split("/", 1)[0], description)


def parse_problem_id(problem_id: str) -> tuple[str, dict[str, Any]]:
    """Split ``"family/name?a=-2&b=x&c=none&d=1,4"`` into ``("family/name", {"a": -2, "b": "x",
    "c": None, "d": [1, 4]})`` (each value read by :func:`boloop._registry.parse_id_value`; a
    method id's values are read by their options' types: :func:`boloop.algorithms.registry.\
parse_method_id`)."""
    name, raw = split_id(problem_id, "problem")
    return name, {key: parse_id_value(text) for key, text in raw.items()}


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

    Raises :class:`~boloop.errors.InvalidInputError`, one line each: an option the factory does
    not take (with the closest name and the valid options, read from its signature); a factory
    that needs arguments no option gives (a method's factory, ``factory(spec, seed)``, says so);
    an exception the factory raises (its type, message and line, :func:`boloop._registry.\
error_place`; the exception is the ``__cause__``); a file's factory that returns no
    :class:`Problem`.
    """
    from boloop._registry import error_place

    name, parsed = parse_problem_id(problem_id)
    parsed.update(options)
    path = None
    if is_file_problem(problem_id):
        factory = _load_file_factory(name)
        path = name.rpartition(":")[0]
    else:
        factory = _PROBLEMS.get(name).factory
    _check_problem_options(name, factory, parsed)
    try:
        problem = factory(**parsed)
    except BoloopError:
        raise
    except Exception as exc:
        shown = problem_id if not options else f"{name} with options {parsed}"
        raise InvalidInputError(
            f"problem {shown!r} could not be built: {error_place(exc, path, path or '')}"
        ) from exc
    if path is not None and not isinstance(problem, Problem):
        kind = type(problem).__name__
        if _is_policy(problem):
            kind += " (a method's policy: the factory is a method factory, give it to --method)"
        raise InvalidInputError(
            f"{name!r} must return a boloop.problems.Problem, got {kind}; a problem factory is "
            "called as factory(**options) (docs/methods.md)"
        )
    problem.id = (
        problem_id if not options else name + "?" + "&".join(f"{k}={v}" for k, v in parsed.items())
    )
    return problem


def _is_policy(obj: Any) -> bool:
    from boloop.queries import BasePolicy

    return isinstance(obj, BasePolicy)


def _check_problem_options(name: str, factory: Callable[..., Any], options: dict[str, Any]) -> None:
    """Refuse, before the factory is called, options its signature does not take (the closest
    name and the valid options with their defaults) and parameters without a default that no
    option gives (a method factory's ``spec`` and ``seed``: said so)."""
    import difflib
    import inspect

    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # no signature to read: the call judges
        return
    params = signature.parameters
    named = {
        k: p for k, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    valid = ", ".join(
        f"{k}" + ("" if p.default is p.empty else f" (default {p.default!r})")
        for k, p in named.items()
    )
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        for key in options:
            if key not in named:
                close = difflib.get_close_matches(str(key), builtins.list(named), 1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise InvalidInputError(
                    f"unknown option {key!r} for problem {name!r}{hint}; valid options: "
                    f"{valid or '(none)'}"
                )
    missing = [
        k for k, p in params.items()
        if p.default is p.empty and p.kind is not p.VAR_KEYWORD and p.kind is not p.VAR_POSITIONAL
        and k not in options
    ]  # fmt: skip
    if not missing:
        return
    method = _method_registered_by(factory)
    if method is not None or missing[:2] == ["spec", "seed"]:
        found = (
            f"it is registered as method {method}"
            if method is not None
            else "it needs the arguments spec and seed, which no problem option gives"
        )
        raise InvalidInputError(
            f"{name!r} is a method factory, not a problem factory: {found}; a problem factory is "
            "called as factory(**options) and returns a boloop.problems.Problem, a method factory "
            "as factory(spec, seed, **options): give it to --method (docs/methods.md)"
        )
    raise InvalidInputError(
        f"problem {name!r} needs the option{'s' if len(missing) > 1 else ''} "
        f"{', '.join(missing)} (parameters of {getattr(factory, '__name__', 'its factory')} "
        f"without a default): give {name}?{missing[0]}=..."
    )


def _method_registered_by(factory: Callable[..., Any]) -> str | None:
    """``'amb' (levelset)`` when ``factory`` is a registered method's factory."""
    import sys

    if "boloop.algorithms.registry" not in sys.modules:  # nothing registered a method
        return None
    from boloop.algorithms.registry import list_methods

    for entry in list_methods():
        if entry.factory is factory:
            return f"{entry.id!r} ({entry.family})"
    return None


def list(family: str | None = None) -> builtins.list[Entry]:  # noqa: A001 - the registry's verb
    """Registered problems (id, family, description), optionally of one family."""
    return _PROBLEMS.entries(family)
