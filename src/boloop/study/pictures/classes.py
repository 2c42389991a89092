"""A level-set class map's classes (``H_t``, ``L_t`` of eq. 3.1 of the randomized-straddle
paper, and the points still undecided): their colours, names and key, the lines and marks that
say them without colour (WCAG 1.4.1), and their counts in words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from boloop.confidence import UNDECIDED_SD
from boloop.study.pictures.panel import _DASHED, _MINUS, _PLUS, _Panel, _sign_marks
from boloop.study.pictures.svg import _BLUE, _ORANGE, _Cells

_LIGHT = {_ORANGE: "#f5c9a3", _BLUE: "#aac3e6"}
#: each level-set class's name, by (above, undecided)
_CLASS_NAMES = {
    (True, False): "above (H)",
    (True, True): f"above, within {UNDECIDED_SD:g} std",
    (False, False): "below (L)",
    (False, True): f"below, within {UNDECIDED_SD:g} std",
}
#: the class map's key: the classes' colours with the marks that say them without colour
#: (:func:`_class_marks`), and its two lines
_CLASS_ITEMS: list[tuple[str, ...]] = [
    (_ORANGE, _CLASS_NAMES[True, False], _PLUS),
    (_LIGHT[_ORANGE], _CLASS_NAMES[True, True], _DASHED),
    (_BLUE, _CLASS_NAMES[False, False], _MINUS),
    (_LIGHT[_BLUE], _CLASS_NAMES[False, True], _DASHED),
    ("#222", "above | below", ""),
    ("#222", f"edge of within {UNDECIDED_SD:g} std", "3 2"),
]


def _class_marks(
    p: _Panel,
    xc: np.ndarray,
    yc: np.ndarray,
    xcells: _Cells,
    ycells: _Cells,
    up: np.ndarray,
    unsure: np.ndarray,
    glyph_rows: Sequence[float] | None = None,
) -> None:
    """What says a level-set class map's classes without colour (WCAG 1.4.1), over cells
    centred at ``xc`` x ``yc`` (data units; ``up``, ``unsure`` boolean
    (len(xc), len(yc))): on the edge halfway between two neighbouring cells, a solid dark line
    where the estimate changes from above to below (eq. 3.1's H_t and L_t meet), a dashed one
    at the edge of the cells within :data:`~boloop.confidence.UNDECIDED_SD` std of the
    threshold, and on a lattice of :data:`_GLYPH_STEP` units a plus on a decided cell above, a
    minus on one below (none on an undecided one). ``xcells``, ``ycells``: the cells' extents
    (:func:`_cells`). ``glyph_rows``: the lattice's rows (picture y), all the panel's if None."""
    nx, ny = up.shape
    solid: list[str] = []
    dashed: list[str] = []
    for i in range(nx):
        for j in range(ny):
            if i + 1 < nx:
                X = p.sx((xc[i] + xc[i + 1]) / 2)  # halfway: where the two cells meet
                edge = f"M{X:.1f},{p.sy(ycells.lo[j]):.1f}V{p.sy(ycells.hi[j]):.1f}"
                if up[i, j] != up[i + 1, j]:
                    solid.append(edge)
                if unsure[i, j] != unsure[i + 1, j]:
                    dashed.append(edge)
            if j + 1 < ny:
                Y = p.sy((yc[j] + yc[j + 1]) / 2)
                edge = f"M{p.sx(xcells.lo[i]):.1f},{Y:.1f}H{p.sx(xcells.hi[i]):.1f}"
                if up[i, j] != up[i, j + 1]:
                    solid.append(edge)
                if unsure[i, j] != unsure[i, j + 1]:
                    dashed.append(edge)
    if dashed:
        p.parts.append(
            f'<path d="{"".join(dashed)}" stroke="#222" stroke-width="1" '
            'stroke-dasharray="3 2" fill="none"/>'
        )
    if solid:
        p.parts.append(f'<path d="{"".join(solid)}" stroke="#222" stroke-width="1.6" fill="none"/>')
    _sign_marks(p, xc, yc, up, ~unsure, glyph_rows)


def _class_counts(up: np.ndarray, unsure: np.ndarray) -> tuple[str, dict[str, str]]:
    """How many grid points of a class map are in each class: a sentence (the picture's
    description) and each class key's tooltip (the page's table of numbers)."""
    n = int(up.size)
    counts = {
        _CLASS_NAMES[a, u]: int(np.sum((up == a) & (unsure == u)))
        for a, u in ((True, False), (True, True), (False, False), (False, True))
    }
    lead = f"Of the {n} grid points drawn: " + "; ".join(
        f"{c} {name}" for name, c in counts.items()
    ) + "."
    return lead, {name: f"{c} of {n} grid points" for name, c in counts.items()}


def at_or_above(values: Any, h: float) -> np.ndarray:
    """Whether each value belongs to the upper side of the threshold ``h``, bool array.

    The level-set family's one convention (the paper's eq. 3.1 and its targets:
    ``H = {f >= h}``, ``L = {f < h}``; :func:`boloop.algorithms.levelset.acquisition.classify`
    and the problems' true classes): a value exactly at ``h`` counts as above, so a picture
    that counts or marks measurements agrees with the map of the estimated set."""
    return np.asarray(values, dtype=np.float64) >= float(h)


def _classes(rec: Any, X: np.ndarray, mean: np.ndarray, h: float) -> np.ndarray:
    """Membership of the method's estimated upper set at X: its ``classify(X)`` if the
    recommendation has one (``LevelSetEstimate``), else ``mean >= h`` (eq. 3.1)."""
    classify = getattr(rec, "classify", None)
    if callable(classify):
        try:
            return np.asarray(classify(X), dtype=bool)
        except Exception:  # noqa: BLE001 - fall back to the definition
            pass
    return at_or_above(mean, h)


def _class_colour(upper: bool, unsure: bool) -> str:
    c = _ORANGE if upper else _BLUE
    return _LIGHT[c] if unsure else c
