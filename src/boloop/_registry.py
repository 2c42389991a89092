"""A small id -> factory registry with discovery of the modules of a package (private)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from boloop.errors import UnknownIdError


@dataclass(frozen=True)
class Entry:
    id: str
    family: str
    description: str
    factory: Callable[..., Any]


class Registry:
    """Entries by id; the modules of ``package`` are imported once, on first lookup."""

    def __init__(self, what: str, package: str) -> None:
        self.what = what
        self.package = package
        self._entries: dict[Any, Entry] = {}
        self._discovered = False

    def register(
        self, id: str, family: str, description: str
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def deco(factory: Callable[..., Any]) -> Callable[..., Any]:
            self._entries[id] = Entry(id, family, description, factory)
            return factory

        return deco

    def discover(self) -> None:
        if self._discovered:
            return
        self._discovered = True  # set first: a module may look itself up while it is imported
        try:
            pkg = importlib.import_module(self.package)
            for info in pkgutil.iter_modules(pkg.__path__):
                if not info.name.startswith("_") and info.name != "registry":
                    importlib.import_module(f"{self.package}.{info.name}")
        except BaseException:
            # a module that fails to import fails every lookup (not a silently partial registry)
            self._discovered = False
            raise

    def get(self, id: str) -> Entry:
        self.discover()
        if id not in self._entries:
            valid = ", ".join(sorted(self._entries))
            raise UnknownIdError(f"unknown {self.what} id {id!r}; valid ids: {valid}")
        return self._entries[id]

    def entries(self, family: str | None = None) -> list[Entry]:
        self.discover()
        return [e for _, e in sorted(self._entries.items()) if family in (None, e.family)]
