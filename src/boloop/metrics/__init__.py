"""Metric functions found by id.

Each family writes its metrics in ``boloop/metrics/<family>.py`` and registers them::

    from boloop.metrics import register_metric

    @register_metric("fscore", "levelset", "F1 score of the estimated upper set (Sec. 5)")
    def fscore(true_upper, estimated_upper): ...

Metric ids are unique within a family (``regret`` means different things for the preference and
the expert papers): look one up with ``get_metric("regret", family="expert")`` or
``get_metric("expert/regret")``; ``get_metric("fscore")`` works while only one family has the id.
Every non-underscore module of this package is imported on the first lookup. Generic helpers that
families reuse (instantaneous and cumulative regret, simple regret of a recommendation, F1 of
sets...) are in :mod:`boloop.metrics.common` and registered under the family ``common``.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

from boloop._registry import Entry
from boloop.errors import InvalidInputError, UnknownIdError

__all__ = ["register_metric", "get_metric", "list_metrics", "Entry"]

_ENTRIES: dict[tuple[str, str], Entry] = {}
_discovered = False


def register_metric(
    metric_id: str, family: str, description: str
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register a metric function as ``metric_id`` of ``family``."""
    if not metric_id or not family or "/" in metric_id:
        raise InvalidInputError(
            f"metric_id (without '/') and family must be non-empty, got {metric_id!r}, {family!r}"
        )

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        _ENTRIES[(family, metric_id)] = Entry(metric_id, family, description, fn)
        return fn

    return deco


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    _discovered = True  # set first: a module may look itself up while it is imported
    try:
        pkg = importlib.import_module(__name__)
        for info in pkgutil.iter_modules(pkg.__path__):
            if not info.name.startswith("_"):
                importlib.import_module(f"{__name__}.{info.name}")
    except BaseException:
        _discovered = False  # a failing module fails every lookup, not a partial registry
        raise


def get_metric(metric_id: str, family: str | None = None) -> Callable[..., Any]:
    """The metric function ``metric_id`` (``"family/id"`` or ``id`` with ``family=``).

    Raises :class:`boloop.errors.UnknownIdError` listing the valid ids.
    """
    _discover()
    if "/" in metric_id:
        family, metric_id = metric_id.split("/", 1)
    if family is not None:
        entry = _ENTRIES.get((family, metric_id))
        if entry is None:
            valid = [f"{f}/{m}" for (f, m) in sorted(_ENTRIES)]
            raise UnknownIdError(
                f"unknown metric {metric_id!r} for family {family!r}; valid ids: {', '.join(valid)}"
            )
        return entry.factory
    matches = [e for (f, m), e in sorted(_ENTRIES.items()) if m == metric_id]
    if len(matches) == 1:
        return matches[0].factory
    valid = [f"{f}/{m}" for (f, m) in sorted(_ENTRIES)]
    if not matches:
        raise UnknownIdError(f"unknown metric id {metric_id!r}; valid ids: {', '.join(valid)}")
    raise InvalidInputError(
        f"metric id {metric_id!r} exists in families {[e.family for e in matches]}; use "
        "'family/id' or family="
    )


def list_metrics(family: str | None = None) -> list[Entry]:
    """Registered metrics (id, family, description, function), sorted by family then id."""
    _discover()
    return [e for _, e in sorted(_ENTRIES.items()) if family in (None, e.family)]
