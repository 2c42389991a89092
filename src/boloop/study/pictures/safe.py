"""The safe family's model picture: the certified safe set of M-SafeOpt (Alg. 1, eq. 14) with
the cells judged likely unsafe and the measured points (one x parameter), or the certified safe
level of each x setting (several), and its numbers in words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from boloop.spaces import SafeSpace
from boloop.study.pictures.panel import _CROSS, _DOT, _HATCH, _panel, _with_legend
from boloop.study.pictures.reading import (
    YLABEL_CHARS,
    _at,
    _axis_label,
    _evaluations,
    _rec_point,
    _scalar,
    _set,
    _settings,
    _units,
    _xlabel_chars,
)
from boloop.study.pictures.svg import (
    _GREEN,
    _MAX_CELLS,
    _RED,
    PANEL_H,
    _cells,
    _describe,
    _document,
    _esc,
    _fmt,
    _message,
    _x_cells,
)

_LIGHT_GREEN = "#a8dbb5"
#: a cell that looks unsafe: darker than the light green of a certified one (relative luminance
#: 0.36 against 0.63) and hatched, so that the two differ without colour vision
_UNSAFE_FILL = "#d98b80"


def _model_safe(study: Any, policy: Any, hist: list[dict[str, Any]], rec: Any, label: str) -> str:
    space: SafeSpace = study.space
    names = study.names
    units = _units(study)
    settings = _settings(study)
    h = float(settings.get("h", settings.get("threshold", math.nan)))
    X, answers = _evaluations(study, hist)
    g = np.array([_scalar(a, "g") for a in answers])
    bounds = sets = None
    if hist:
        try:
            st = policy.state()  # BasePolicy.state: M-SafeOpt's bounds and sets here
        except Exception:  # noqa: BLE001 - not enough data for a posterior yet
            st = None
        if st is not None:
            bounds, sets = st
    s_vals = np.asarray(space.s_values, dtype=np.float64)
    xp = np.asarray(space.x_points, dtype=np.float64)
    sc = _cells(s_vals, s_vals[0], s_vals[-1])
    items: list[tuple[str, ...]] = []
    if xp.shape[1] == 1:
        xv = xp[:, 0]
        xc = _x_cells(xv)
        p = _panel(
            0,
            xc.limits,
            sc.limits,
            "safe set: certified safe, likely unsafe (hatched), measured points",
            _axis_label(names[1], units, _xlabel_chars()),
            _axis_label(names[0], units, YLABEL_CHARS),
        )
        if bounds is not None and sets is not None:
            # bounds of g itself: the safe policies add h back to their model of g - h
            ucb_g = np.asarray(bounds.ucb_g)
            prefix = np.asarray(sets.prefix, dtype=bool)
            for i in range(xp.shape[0]):
                for j in range(s_vals.size):
                    lcb = float(bounds.lcb_g[i, j])
                    if prefix[i, j]:
                        c = _LIGHT_GREEN
                    elif lcb > h:
                        c = _UNSAFE_FILL
                    else:
                        c = "#eeeeee"
                    p.span(
                        xc.lo[i],
                        xc.hi[i],
                        sc.lo[j],
                        sc.hi[j],
                        c,
                        title=f"{_at((names[1], names[0]), (xv[i], s_vals[j]), units)}: "
                        f"upper bound of g {_fmt(float(ucb_g[i, j]))} (limit h = {_fmt(h)})",
                        hatch=c == _UNSAFE_FILL,
                    )
            items += [
                (_LIGHT_GREEN, "certified safe"),
                ("#eeeeee", "not yet known"),
                (_UNSAFE_FILL, "likely unsafe", _HATCH),
            ]
        else:
            p.title = "safe space (no posterior yet)"
        p.axes()
        for (s, x), gv in zip(X, g):
            (p.dot if gv <= h else p.cross)(
                x, s, _GREEN if gv <= h else _RED, title=f"g={_fmt(gv)} (h={_fmt(h)})"
            )
        items += [(_GREEN, "measured g <= h", _DOT), (_RED, "measured g > h", _CROSS)]
        # a method's favourite before any answer is no recommendation: no star
        rpt = _rec_point(study, rec) if hist else None
        lead = _safe_lead(names, g, h, bounds, sets)
        if rpt is not None:
            p.star(float(rpt[1]), float(rpt[0]), "recommendation")
            items.append(("#ffd700", "recommendation"))
            lead += f" The recommendation: {_at(names, rpt, units)}."
        return _describe(_with_legend([p.svg()], PANEL_H, items, label), lead)
    # more than one x dimension: the certified safe level per x option, sorted
    if sets is None:
        return _message(f"{len(hist)} measurements; the safe set appears after the first", label)
    boundary = np.asarray(sets.boundary)
    level = s_vals[boundary]
    unit = f" {units[names[0]]}" if units.get(names[0]) else ""
    lead = _safe_lead(names, g, h, bounds, sets) + (
        f" Certified safe {names[0]} over the {level.size} settings: lowest "
        f"{_fmt(float(level.min()))}{unit}, median {_fmt(float(np.median(level)))}{unit}, "
        f"highest {_fmt(float(level.max()))}{unit}."
    )
    order = np.argsort(-level, kind="stable")
    p = _panel(
        0,
        (0, xp.shape[0]),
        sc.limits,
        f"certified safe {names[0]} for each of the {xp.shape[0]} settings of "
        + ", ".join(names[1:]),
        "settings (sorted)",
        _axis_label(names[0], units, YLABEL_CHARS),
    )
    p.axes(xticks=False)
    if len(order) <= _MAX_CELLS:
        for k, i in enumerate(order):
            p.span(
                k,
                k + 1.0,
                sc.lo[0],
                sc.hi[boundary[i]],
                "#a8dbb5",
                title=_at(names[1:], xp[i], units)
                + f": safe up to {_set(names[0], level[i], units)}",
            )
    else:  # many settings: the sorted levels as one filled step curve (the picture stays small)
        lv = level[order]
        tops = sc.hi[boundary[order]]  # each level's cell's upper edge
        # sorted levels: one corner pair per change of level (at most one per grid level)
        starts = np.flatnonzero(np.r_[True, lv[1:] != lv[:-1]])
        ends = np.r_[starts[1:], lv.size]
        base = sc.lo[0]
        pts = [f"{p.sx(0):.1f},{p.sy(base):.1f}"]
        for a0, a1 in zip(starts, ends):
            top = p.sy(tops[a0])
            pts += [f"{p.sx(a0):.1f},{top:.1f}", f"{p.sx(a1):.1f},{top:.1f}"]
        pts.append(f"{p.sx(lv.size):.1f},{p.sy(base):.1f}")
        p.parts.append(
            f'<polygon points="{" ".join(pts)}" fill="#a8dbb5" stroke="#2e8b57" '
            f'stroke-width="0.8"><title>{_esc(f"{lv.size} settings")}</title></polygon>'
        )
    return _describe(_document([p.svg()], PANEL_H + 10, label), lead)


def _safe_lead(names: Sequence[str], g: np.ndarray, h: float, bounds: Any, sets: Any) -> str:
    """The safe set's numbers in words (the model picture's ``<desc>``): the measurements and
    those whose g broke the limit, and the share of the grid the method certifies safe (its
    safe set ``S_t``, M-SafeOpt Alg. 1, eq. 14) and judges likely unsafe (lower bound of
    g above h)."""
    lead = f"{g.size} measurements, {int(np.sum(g > h))} with g above the limit h = {_fmt(h)}."
    if bounds is None or sets is None:
        return lead + " No safe set yet."
    prefix = np.asarray(sets.prefix, dtype=bool)
    unsafe = (np.asarray(bounds.lcb_g) > h) & ~prefix
    n = prefix.size
    return lead + (
        f" Certified safe: {int(prefix.sum())} of the {n} grid points ({prefix.mean():.0%});"
        f" likely unsafe: {int(unsafe.sum())}; not yet known: {n - int(prefix.sum() + unsafe.sum())}."
    )
