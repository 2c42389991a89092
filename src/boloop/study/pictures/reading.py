"""What the pictures read of a study, through its public API only: its settings, units and
measured value's name (the axes' labels, the tooltips' settings), its evaluations, its space's
bounds and grids, and the recommendation as a point.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from boloop.recommendations import BestPoint
from boloop.spaces import Box, CandidateSet
from boloop.study.pictures.svg import _CHAR_W, _MARGIN, _fmt, _width


def _settings(study: Any) -> dict[str, Any]:
    return dict(getattr(study.problem, "settings", {}) or {})


def _units(study: Any) -> dict[str, str]:
    """Each parameter's unit by name (:meth:`~boloop.study.Study.units`); empty for a study
    without units (its pictures are drawn exactly as before)."""
    units = getattr(study, "units", None)
    return dict(units()) if callable(units) else {}


def _axis_label(name: str, units: Mapping[str, str], chars: int) -> str:
    """A parameter's name on an axis: ``dose (mg)`` where it has a unit, cut to ``chars``
    characters as the measured value's label is (:func:`_ylabel`); its bare name, as always,
    where it has none."""
    unit = units.get(name)
    if not unit:
        return name
    text = f"{name} ({unit})"
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _xlabel_chars(ncols: int = 1) -> int:
    """The characters of an x-axis label that fit under a panel of :func:`_panel` (one of
    ``ncols`` side by side)."""
    left, right, _, _ = _MARGIN
    return int((_width() - left - right - (ncols - 1) * left) / ncols / _CHAR_W)


def _set(name: str, value: float, units: Mapping[str, str]) -> str:
    """One setting in a tooltip or a description: ``dose=5 mg`` (``dose=5`` without a unit)."""
    unit = units.get(name)
    return f"{name}={_fmt(float(value))}" + (f" {unit}" if unit else "")


def _evaluations(study: Any, hist: list[dict[str, Any]]) -> tuple[np.ndarray, list[Any]]:
    """Points (n, d) of the evaluate rows and their answers."""
    names = study.names
    rows = [r for r in hist if r["kind"] == "evaluate" and r["params"] is not None]
    X = np.array([[r["params"][n] for n in names] for r in rows], dtype=np.float64)
    return X.reshape(len(rows), len(names)), [r["answer"] for r in rows]


def _scalar(answer: Any, key: str = "f") -> float:
    if isinstance(answer, dict):
        return float(answer.get(key, math.nan))
    return float(answer)


#: the longest y-axis label, in characters, that fits along a panel's height at 11 units
YLABEL_CHARS = 26


def _ylabel(study: Any, output: str | None = None) -> str:
    """The measured value's name for a y axis (``coating thickness (µm)``, from the space
    file's ``[measurement]``, for the safe family ``[measurement.f]`` and ``[measurement.g]``
    by ``output``), where the study gives none the ``output`` itself, or ``f``."""
    measured = getattr(study, "measured", None)
    entries = measured() if callable(measured) else []
    for m in entries:
        if m.name is not None and (m.output is None or m.output == output or len(entries) == 1):
            text = m.label()  # written along a panel's height: cut to what fits beside it
            return text if len(text) <= YLABEL_CHARS else text[: YLABEL_CHARS - 1] + "…"
    return output or "f"


def _centre(space: Any) -> np.ndarray:
    box = space if isinstance(space, Box) else space.box
    return np.asarray(box.bounds, dtype=np.float64).mean(axis=1)


def _bounds(space: Any) -> np.ndarray:
    box = space if isinstance(space, Box) else space.box
    return np.asarray(box.bounds, dtype=np.float64)


def _rec_point(study: Any, rec: Any) -> np.ndarray | None:
    d = study.space.dim
    if isinstance(rec, BestPoint):
        rec = rec.point
    if isinstance(rec, np.ndarray) and rec.shape == (d,) and np.all(np.isfinite(rec)):
        return rec
    return None


def _at(names: Sequence[str], point: Any, units: Mapping[str, str] | None = None) -> str:
    """A point as settings: ``dose=5 mg, weight=0.3`` (:func:`_set`)."""
    return ", ".join(_set(nm, v, units or {}) for nm, v in zip(names, point))


def _axis_grid(study: Any, j: int, n: int = 160) -> np.ndarray:
    space = study.space
    if isinstance(space, CandidateSet):
        vals = np.unique(space.points[:, j])
        if vals.size <= n:
            return vals
    lo, hi = _bounds(space)[j]
    return np.linspace(lo, hi, n)
