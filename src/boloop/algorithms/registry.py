"""The method registry: ``make_policy(method_id, problem, seed, **options)`` builds any method
with the problem's paper settings, so the CLI, the bench and studies need no per-method code.

Method ids are unique *within a family*: ``random`` is a baseline of the levelset, preference and
expert papers alike, so entries are keyed by ``(family, method_id)`` and :func:`make_policy` picks
the entry registered for ``problem.family``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from boloop._registry import Entry, Registry
from boloop.errors import InvalidInputError, UnknownIdError
from boloop.problems.base import Problem
from boloop.queries import BasePolicy

__all__ = ["register_method", "make_policy", "list_methods", "get_method"]

_PACKAGE = "boloop.algorithms"


class _MethodRegistry(Registry):
    """Entries keyed by ``(family, id)``; the modules of ``boloop.algorithms`` are imported once."""

    def __init__(self) -> None:
        super().__init__("method", _PACKAGE)

    def register(
        self, method_id: str, family: str, description: str
    ) -> Callable[[Callable[..., BasePolicy]], Callable[..., BasePolicy]]:
        if not method_id or not family:
            raise InvalidInputError(
                f"method_id and family must be non-empty, got {method_id!r}, {family!r}"
            )

        def deco(factory: Callable[..., BasePolicy]) -> Callable[..., BasePolicy]:
            key = (family, method_id)
            old = self._entries.get(key)
            if old is not None and _qualname(old.factory) != _qualname(factory):
                raise InvalidInputError(
                    f"method {method_id!r} is already registered for family {family!r} by "
                    f"{_qualname(old.factory)}"
                )
            self._entries[key] = Entry(method_id, family, description, factory)
            return factory

        return deco

    def get(self, method_id: str, family: str | None = None) -> Entry:
        self.discover()
        if family is not None:
            entry = self._entries.get((family, method_id))
            if entry is not None:
                return entry
            valid = [e.id for e in self.entries(family)]
            others = sorted(f for (f, m) in self._entries if m == method_id)
            if others:
                raise InvalidInputError(
                    f"method {method_id!r} is for {' and '.join(others)} problems, not {family}; "
                    f"methods for {family}: {', '.join(valid) or '(none yet)'}"
                )
            raise UnknownIdError(
                f"unknown method id {method_id!r} for family {family!r}; valid ids: "
                f"{', '.join(valid) or '(none yet)'}"
            )
        matches = [e for (f, m), e in sorted(self._entries.items()) if m == method_id]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            valid = sorted({m for (_, m) in self._entries})
            raise UnknownIdError(f"unknown method id {method_id!r}; valid ids: {', '.join(valid)}")
        fams = [e.family for e in matches]
        raise InvalidInputError(
            f"method id {method_id!r} exists in several families ({', '.join(fams)}); pass family="
        )


def _qualname(factory: Callable[..., Any]) -> str:
    return f"{getattr(factory, '__module__', '?')}.{getattr(factory, '__qualname__', '?')}"


_METHODS = _MethodRegistry()


def register_method(
    method_id: str, family: str, description: str
) -> Callable[[Callable[..., BasePolicy]], Callable[..., BasePolicy]]:
    """Decorator: register ``factory(problem, seed, **options) -> Policy`` as ``method_id`` of
    ``family``. The same id may exist in several families (``random``); registering an id twice in
    one family with a different factory raises :class:`boloop.errors.InvalidInputError`."""
    return _METHODS.register(method_id, family, description)


def get_method(method_id: str, family: str | None = None) -> Entry:
    """The registry entry of ``method_id`` in ``family`` (or the only family that has it)."""
    return _METHODS.get(method_id, family)


def make_policy(
    method_id: str, problem: Problem, seed: int | None = 0, **options: Any
) -> BasePolicy:
    """Build method ``method_id`` for ``problem`` with the problem's paper settings.

    The entry is looked up for ``problem.family``. Raises :class:`boloop.errors.UnknownIdError`
    (listing the valid ids of the family) for an unknown method, and
    :class:`boloop.errors.InvalidInputError` when the method exists only for other families.
    """
    entry = _METHODS.get(method_id, problem.family)
    return entry.factory(problem, seed, **options)


def list_methods(family: str | None = None) -> list[Entry]:
    """Registered methods (id, family, description) sorted by family then id."""
    return _METHODS.entries(family)
