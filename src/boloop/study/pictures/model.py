"""The model picture (:func:`model_svg`): the current model over the space, the data and
the recommendation, drawn from a copy of the policy (``Study.readout``). A 1-D curve with its
band, a 2-D map, or 1-D slices for more dimensions here; a safe study's is
:mod:`boloop.study.pictures.safe`'s, a preference study's :mod:`boloop.study.pictures.preference`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from boloop.algorithms.families import family_traits
from boloop.confidence import undecided
from boloop.spaces import SafeSpace
from boloop.study.pictures.classes import (
    _CLASS_ITEMS,
    _CLASS_NAMES,
    _class_colour,
    _class_counts,
    _class_marks,
    _classes,
    at_or_above,
)
from boloop.study.pictures.expert import _G_ITEMS, _G_ITEMS_2D, _LABEL_ITEMS, _expert_g, _g_panel
from boloop.study.pictures.panel import _panel, _with_legend
from boloop.study.pictures.preference import _model_preference
from boloop.study.pictures.reading import (
    YLABEL_CHARS,
    _at,
    _axis_grid,
    _axis_label,
    _bounds,
    _centre,
    _evaluations,
    _rec_point,
    _scalar,
    _set,
    _settings,
    _units,
    _xlabel_chars,
    _ylabel,
)
from boloop.study.pictures.safe import _model_safe
from boloop.study.pictures.svg import (
    _BLUE,
    _GREEN,
    _LAYOUT,
    _MAX_CELLS,
    _RED,
    PANEL_H,
    WIDTH,
    _at_width,
    _Cells,
    _cells,
    _colour,
    _describe,
    _document,
    _fmt,
    _measured,
    _message,
    _range,
    _width,
    _wrapped,
)

#: the most slices the model picture draws for more than two parameters (one per parameter,
#: the first ones; "more dimensions not shown" says the rest)
_MAX_SLICES = 6


def _predictor(
    study: Any, policy: Any
) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None:
    """The policy's ``predict(X) -> (mean, std)`` (original coordinates,
    :meth:`BasePolicy.predict`), if it has a model (the default raises)."""

    def f(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = policy.predict(X)
        if isinstance(out, dict):  # the expert family: {"f_mean", "f_std", "g", ...}
            out = (out["f_mean"], out["f_std"])
        m, s = out
        return np.asarray(m, dtype=np.float64), np.asarray(s, dtype=np.float64)

    try:
        f(np.asarray(_centre(study.space))[None, :])
    except Exception:  # noqa: BLE001 - no data yet, or not a GP policy: draw the data only
        return None
    return f


def model_svg(study: Any, width: int = WIDTH) -> str:
    """The current model over the space, the data and the recommendation (SVG document).

    Drawn from a copy of the study's policy (:meth:`~boloop.study.Study.readout`), never the
    live one: some policies fit their models lazily inside ``recommend`` and draw random numbers
    for it (the expert family's ``_sync_gp``), which would make the live study's next query
    differ from a replay of its log. The copy is the one ``Study.status()`` reads in the same
    state, and the picture is kept with that state: drawn again unchanged, nothing is copied.

    ``width``: the picture's width in SVG units, drawn at as many CSS px unless scaled
    (:data:`PHONE_WIDTH`: a phone's, the same text in a narrower picture with fewer ticks)."""
    with _at_width(width):
        return _model_svg_at(study)


def _model_svg_at(study: Any) -> str:
    hist = study.history()  # catches up with the log
    with study.readout() as r:
        return r.product(  # one picture per width, each kept with the state
            f"model picture {_width()}",
            study.policy,
            lambda policy, rec: _describe(_model_svg(study, hist, policy, rec), ""),
        )


def _model_svg(study: Any, hist: list[dict[str, Any]], policy: Any, rec: Any) -> str:
    label = f"model of study {study.name}"
    space = study.space
    if isinstance(space, SafeSpace):
        return _model_safe(study, policy, hist, rec, label)
    traits = family_traits(study.family)
    if traits.duel_model or (hist and all(r["kind"] == "compare" for r in hist)):
        return _model_preference(study, hist, rec, label)
    if not hist:
        return _message("no answers yet: the model is the prior", label)
    d = space.dim
    pred = _predictor(study, policy)
    threshold = _settings(study).get("threshold") if traits.level_threshold else None
    X, answers = _evaluations(study, hist)
    y = np.array([_scalar(a) for a in answers])
    labels = [r for r in hist if r["kind"] == "label"]
    XL = np.array([[r["params"][n] for n in study.names] for r in labels]).reshape(-1, d)
    acc = [bool(r["answer"]) for r in labels]
    rpt = _rec_point(study, rec)
    gfun = _expert_g(study, policy) if d <= 2 else None
    if d == 1:
        return _model_1d(study, X, y, XL, acc, pred, threshold, rec, rpt, label, gfun)
    if d == 2:
        return _model_2d(study, X, y, XL, acc, pred, threshold, rec, rpt, label, gfun)
    return _model_slices(study, X, y, pred, threshold, rpt, label)


def _fit_lead(
    X: np.ndarray,
    y: np.ndarray,
    threshold: Any,
    names: Sequence[str],
    P: np.ndarray,
    mean: np.ndarray | None,
    units: Mapping[str, str] | None = None,
) -> str:
    """A model picture's numbers in words (its ``<desc>``): the measurements (how many above
    the threshold, for a level set; else the lowest f, which the expert family minimises) and
    the posterior mean over the grid drawn (``P``, ``mean``; None without a model); settings
    with their ``units``."""
    n = int(y.size)
    if threshold is not None:
        h = float(threshold)
        n_up = int(np.sum(at_or_above(y, h)))
        lead = f"{n} measurements, {n_up} at or above the threshold {_fmt(h)}."
    elif n:
        k = int(np.argmin(y))
        lead = f"{n} evaluations, the lowest f {_fmt(float(y[k]))} at {_at(names, X[k], units)}."
    else:
        lead = "No evaluations yet."
    if mean is not None and mean.size:
        lead += (
            f" Posterior mean from {_fmt(float(np.min(mean)))} to {_fmt(float(np.max(mean)))}"
            f" over the {mean.size} grid points drawn"
        )
        k = int(np.argmin(mean))
        lead += "." if threshold is not None else f", lowest at {_at(names, P[k], units)}."
    return lead


def _model_1d(
    study: Any,
    X: np.ndarray,
    y: np.ndarray,
    XL: np.ndarray,
    acc: list[bool],
    pred: Any,
    threshold: Any,
    rec: Any,
    rpt: np.ndarray | None,
    label: str,
    gfun: Callable[[np.ndarray], np.ndarray] | None = None,
) -> str:
    name = study.names[0]
    units = _units(study)
    xs = _axis_grid(study, 0, 200)
    lo_x, hi_x = _bounds(study.space)[0]
    span = [*y.tolist()]
    mean = std = None
    if pred is not None:
        mean, std = pred(xs[:, None])
        span += (mean - 2 * std).tolist() + (mean + 2 * std).tolist()
    if threshold is not None:
        span.append(float(threshold))
    p = _panel(
        0,
        (lo_x, hi_x),
        _range(span or [0, 1]),
        "model: mean and 2 std band",
        _axis_label(name, units, _xlabel_chars()),
        _ylabel(study),
    )
    p.axes()
    if mean is not None and std is not None:
        p.band(xs, mean - 2 * std, mean + 2 * std, _BLUE)
        p.line(xs, mean, _BLUE)
    items: list[tuple[str, ...]] = [(_BLUE, "posterior mean")] if mean is not None else []
    lead = _fit_lead(X, y, threshold, [name], xs[:, None], mean, units)
    tips: dict[str, str] = {}
    if threshold is not None:
        h = float(threshold)
        p.hline(h, _RED, f"threshold {_fmt(h)}")
        if mean is not None and std is not None:
            # the class strip along the bottom, tall enough for its plus and minus marks
            y_mark = p.ylim[0] + 0.03 * (p.ylim[1] - p.ylim[0])
            dy = 0.05 * (p.ylim[1] - p.ylim[0])
            upper = np.asarray(_classes(rec, xs[:, None], mean, h), dtype=bool)
            unsure = np.asarray([bool(undecided(m, s, h)) for m, s in zip(mean, std)])
            # each point's cell reaches halfway to its neighbours, the end ones to the frame
            edges = np.concatenate([[lo_x], (xs[1:] + xs[:-1]) / 2, [hi_x]])
            for a, b, u, un in zip(edges[:-1], edges[1:], upper, unsure):
                p.cell((a + b) / 2, y_mark, b - a, dy, _class_colour(bool(u), bool(un)))
            p.keep_clear(p.x0, p.sy(y_mark - dy / 2), p.x0 + p.w, p.sy(y_mark + dy / 2))
            strip = _Cells(np.array([y_mark - dy / 2]), np.array([y_mark + dy / 2]), p.ylim)
            _class_marks(
                p, xs, np.array([y_mark]), _Cells(edges[:-1], edges[1:], p.xlim), strip,
                upper[:, None], unsure[:, None], glyph_rows=[p.sy(y_mark)],
            )  # fmt: skip
            counts, tips = _class_counts(upper, unsure)
            lead += " " + counts
            items += _CLASS_ITEMS
    for xv, yv in zip(X[:, 0], y):
        p.dot(xv, yv, "#222", title=f"{_set(name, xv, units)}: {_measured(yv)}")
    y_mark = p.ylim[0] + 0.06 * (p.ylim[1] - p.ylim[0])
    for xv, a in zip(XL[:, 0], acc):
        (p.dot if a else p.cross)(
            xv,
            y_mark,
            _GREEN if a else _RED,
            title=f"{_set(name, xv, units)}: {'accepted' if a else 'rejected'}",
        )
    if XL.size:
        items += _LABEL_ITEMS
    if rpt is not None:
        yv = float(pred(rpt[None, :])[0][0]) if pred is not None else p.ylim[1] * 0.9
        where = _set(name, float(rpt[0]), units)
        p.star(float(rpt[0]), yv, f"recommendation {where}")
        items.append(("#ffd700", "recommendation"))
        lead += f" The recommendation: {where}."
    if gfun is not None:
        q, g_lead = _g_panel(study, gfun, XL, acc)
        lead += " " + g_lead
        svg = _with_legend([p.svg(), q.svg()], 2 * PANEL_H, items + _G_ITEMS, label)
        return _describe(svg, lead)
    return _describe(_with_legend([p.svg()], PANEL_H, items, label, tips), lead)


def _model_2d(
    study: Any,
    X: np.ndarray,
    y: np.ndarray,
    XL: np.ndarray,
    acc: list[bool],
    pred: Any,
    threshold: Any,
    rec: Any,
    rpt: np.ndarray | None,
    label: str,
    gfun: Callable[[np.ndarray], np.ndarray] | None = None,
) -> str:
    n0, n1 = study.names
    units = _units(study)
    b = _bounds(study.space)
    g0, g1 = _axis_grid(study, 0, 40), _axis_grid(study, 1, 40)
    c0, c1 = _cells(g0, b[0, 0], b[0, 1]), _cells(g1, b[1, 0], b[1, 1])
    xlim, ylim = c0.limits, c1.limits
    items: list[tuple[str, ...]] = []
    title = "evaluated points"
    body: list[str] = []
    p = _panel(
        0,
        xlim,
        ylim,
        title,
        _axis_label(n0, units, _xlabel_chars()),
        _axis_label(n1, units, YLABEL_CHARS),
    )
    G0, G1 = np.meshgrid(g0, g1, indexing="ij")
    P = np.column_stack([G0.ravel(), G1.ravel()])
    I0, I1 = (a.ravel() for a in np.meshgrid(range(g0.size), range(g1.size), indexing="ij"))
    mean = std = None
    if pred is not None:
        mean, std = pred(P)
    lead = _fit_lead(X, y, threshold, [n0, n1], P, mean, units)
    key_tips: dict[str, str] = {}
    if mean is not None and std is not None:
        tips = P.shape[0] <= _MAX_CELLS  # hover texts only while the picture stays small
        if threshold is not None:
            h = float(threshold)
            p.title = f"level set classes at threshold {_fmt(h)}"
            upper = np.asarray(_classes(rec, P, mean, h), dtype=bool)
            unsure = np.asarray([bool(undecided(m, s, h)) for m, s in zip(mean, std)])
            for (u, v), i, j, m, s, up, un in zip(P, I0, I1, mean, std, upper, unsure):
                c = _class_colour(bool(up), bool(un))
                tip = (
                    f"{_at((n0, n1), (u, v), units)}: {_CLASS_NAMES[bool(up), bool(un)]}, "
                    f"mean {_fmt(m)}, std {_fmt(s)}"
                )
                p.span(c0.lo[i], c0.hi[i], c1.lo[j], c1.hi[j], c, title=tip if tips else "")
            shape = (g0.size, g1.size)
            _class_marks(p, g0, g1, c0, c1, upper.reshape(shape), unsure.reshape(shape))
            counts, key_tips = _class_counts(upper, unsure)
            lead += " " + counts
            items += _CLASS_ITEMS
        else:
            lo, hi = _range(mean, 0.0)
            p.title = f"posterior mean ({_fmt(lo)} .. {_fmt(hi)}, dark = low)"
            for i, j, m, s in zip(I0, I1, mean, std):
                p.span(
                    c0.lo[i],
                    c0.hi[i],
                    c1.lo[j],
                    c1.hi[j],
                    _colour((m - lo) / (hi - lo)),
                    title=f"mean {_fmt(m)}, std {_fmt(s)}" if tips else "",
                )
    p.axes()
    ylo, yhi = _range(y, 0.0) if y.size else (0.0, 1.0)
    for (u, v), val in zip(X, y):
        p.dot(
            u,
            v,
            _colour((val - ylo) / (yhi - ylo)) if pred is None else "#fff",
            title=f"{_at((n0, n1), (u, v), units)}: {_measured(val)}",
        )
    for (u, v), a in zip(XL, acc):
        (p.dot if a else p.cross)(
            u,
            v,
            _GREEN if a else _RED,
            title=f"{_at((n0, n1), (u, v), units)}: " + ("accepted" if a else "rejected"),
        )
    if XL.size:
        items += _LABEL_ITEMS
    if rpt is not None:
        where = _at((n0, n1), rpt, units)
        p.star(float(rpt[0]), float(rpt[1]), f"recommendation {where}")
        items.append(("#ffd700", "recommendation"))
        lead += f" The recommendation: {where}."
    body.append(p.svg())
    if gfun is not None:
        q, g_lead = _g_panel(study, gfun, XL, acc)
        body.append(q.svg())
        lead += " " + g_lead
        return _describe(_with_legend(body, 2 * PANEL_H, items + _G_ITEMS_2D, label), lead)
    return _describe(_with_legend(body, PANEL_H, items, label, key_tips), lead)


def _slice_point(
    study: Any, X: np.ndarray, y: np.ndarray, threshold: Any, rpt: np.ndarray | None
) -> tuple[np.ndarray, str]:
    """The point the slices of :func:`_model_slices` are taken through, and its name in words:
    the recommendation where it is a point (the expert family's); for a level set, whose
    recommendation is a map, the measurement nearest the threshold (a point near the boundary
    being mapped: each slice shows where the model crosses the threshold along its parameter,
    which slices through a point far below or above it may never reach); else the lowest
    measured point (the expert family minimises f); the centre of the space before any
    measurement (labels only). ``X`` (n, d), ``y`` (n,): the measurements."""
    if rpt is not None:
        return rpt, "the recommendation"
    if not y.size:
        return _centre(study.space), "the centre of the space"
    if threshold is not None:
        nearest = int(np.argmin(np.abs(y - float(threshold))))
        return X[nearest], "the measurement nearest the threshold"
    return X[int(np.argmin(y))], "the lowest measured point"


def _model_slices(
    study: Any,
    X: np.ndarray,
    y: np.ndarray,
    pred: Any,
    threshold: Any,
    rpt: np.ndarray | None,
    label: str,
) -> str:
    names = study.names
    units = _units(study)
    d = len(names)
    centre, through = _slice_point(study, X, y, threshold, rpt)
    b = _bounds(study.space)
    dims = list(range(min(d, _MAX_SLICES)))
    ncols = _LAYOUT.get().slice_cols
    body = []
    rows = (len(dims) + ncols - 1) // ncols
    curves = []
    for j in dims:
        xs = _axis_grid(study, j, 80)
        if pred is not None:
            P = np.repeat(centre[None, :], xs.size, axis=0)
            P[:, j] = xs
            m, s = pred(P)
            curves.append((xs, m, s))
        else:
            curves.append((xs, None, None))
    span = y.tolist()
    for _, m, s in curves:
        if m is not None:
            span += (m - 2 * s).tolist() + (m + 2 * s).tolist()
    if threshold is not None:
        span.append(float(threshold))
    ylim = _range(span or [0.0, 1.0])
    for k, j in enumerate(dims):
        xs, m, s = curves[k]
        p = _panel(
            k // ncols,
            (b[j, 0], b[j, 1]),
            ylim,
            "",
            _axis_label(names[j], units, _xlabel_chars(ncols)),
            _ylabel(study) if k % ncols == 0 else "",
            col=k % ncols,
            ncols=ncols,
        )
        p.axes()
        if m is not None:
            p.band(xs, m - 2 * s, m + 2 * s, _BLUE)
            p.line(xs, m, _BLUE)
        if threshold is not None:
            p.hline(float(threshold), _RED)
        for row, val in zip(X, y):
            tip = f"{_set(names[j], row[j], units)}: {_fmt(val)}"
            p.dot(row[j], val, "#222", r=2.2, title=tip)
        p.star(
            float(centre[j]),
            float(m[int(np.argmin(np.abs(xs - centre[j])))]) if m is not None else ylim[1] * 0.95,
            f"{through}: {_at(names, centre, units)}",
        )
        body.append(p.svg())
    lead = _fit_lead(X, y, threshold, names, np.empty((0, d)), None) + (
        f" Slices through {through}: {_at(names, centre, units)}."
    )
    head = _wrapped(
        8,
        14,
        f"slices through {through} (star)"
        + (" (more dimensions not shown)" if d > _MAX_SLICES else ""),
        ' font-weight="bold" class="title"',
    )
    return _describe(_document([head, *body], rows * PANEL_H + 10, label), lead)
