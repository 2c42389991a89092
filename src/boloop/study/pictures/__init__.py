"""Pictures of a study as SVG text, drawn in pure Python (no plotting library, no network).

Shared by ``boloop serve`` (inline in the study page) and ``boloop study plot`` (files).
Public API, stable:

* :func:`progress_svg` -- how the study went, answer by answer: the running best value
  (``expert``: minimisation of f, the recommendation of COBOL's Alg. 1 is the evaluated point of
  lowest posterior mean), the measurements against the threshold ``h`` (``levelset``: how many
  measured points lie above the level, the F-score proxy a person can read without the truth),
  ``f`` and ``g`` against the safety limit (``safe``), and the cumulative wins of the options
  that won most, each in a colour it keeps from one drawing to the next (``preference``).
* :func:`model_svg` -- the current model over the space and the recommendation: a 1-D curve with
  its ``mean +- 2 std`` band, a 2-D heat map, or 1-D slices for more dimensions (through the
  recommendation; a level set's, a map, through the measurement nearest its threshold);
  evaluated points and labels; the level set's classes (``H_t``, ``L_t`` of eq. 3.1 of the
  randomized-straddle paper, and the points still undecided); the certified safe set of
  M-SafeOpt (Alg. 1, eq. 14) with its boundary; the preference options' win rates with 95 %
  Wilson intervals.
* :func:`pictures` -- ``{"progress": svg, "model": svg}``.

Everything is read through the study's public API (``history()``, ``recommend()``, ``space``,
``problem.settings``) and the policy's public read-only methods (``predict(X)`` of the level-set
policies, ``state()`` of the safe policies); a policy without them is drawn from its data alone.
Every text is XML-escaped, so a parameter named ``<script>`` is drawn as text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from boloop.algorithms.families import family_traits
from boloop.confidence import UNDECIDED_SD, undecided
from boloop.spaces import SafeSpace
from boloop.study.pictures.growth import growth_numbers, growth_svg, safe_growth
from boloop.study.pictures.panel import (
    _CROSS,
    _DASHED,
    _DOT,
    _HATCH,
    _MINUS,
    _PLUS,
    _Panel,
    _panel,
    _sign_marks,
    _with_legend,
)
from boloop.study.pictures.preference import _model_preference
from boloop.study.pictures.progress import _progress_lead as _progress_lead
from boloop.study.pictures.progress import progress_svg
from boloop.study.pictures.reading import YLABEL_CHARS as YLABEL_CHARS
from boloop.study.pictures.reading import (
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
from boloop.study.pictures.svg import (
    _BLUE,
    _GREEN,
    _GREY,
    _LAYOUT,
    _MAX_CELLS,
    _ORANGE,
    _RED,
    PHONE_WIDTH,
    _at_width,
    _Cells,
    _cells,
    _colour,
    _document,
    _esc,
    _fmt,
    _measured,
    _message,
    _range,
    _tint,
    _width,
    _wrapped,
    _x_cells,
)
from boloop.study.pictures.svg import PANEL_H as PANEL_H
from boloop.study.pictures.svg import WIDTH as WIDTH
from boloop.study.pictures.svg import _describe as _describe

__all__ = [
    "progress_svg",
    "model_svg",
    "growth_svg",
    "growth_numbers",
    "safe_growth",
    "pictures",
    "PHONE_WIDTH",
]

_LIGHT_GREEN = "#a8dbb5"
#: a cell that looks unsafe: darker than the light green of a certified one (relative luminance
#: 0.36 against 0.63) and hatched, so that the two differ without colour vision
_UNSAFE_FILL = "#d98b80"
_MAX_SLICES = 6


def _predictor(
    study: Any, policy: Any
) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None:
    """The policy's public ``predict(X) -> (mean, std)`` (original coordinates), if any."""
    pred = getattr(policy, "predict", None)
    if not callable(pred):
        return None

    def f(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = pred(X)
        if isinstance(out, dict):  # the expert family: {"f_mean", "f_std", "g", ...}
            out = (out["f_mean"], out["f_std"])
        m, s = out
        return np.asarray(m, dtype=np.float64), np.asarray(s, dtype=np.float64)

    try:
        f(np.asarray(_centre(study.space))[None, :])
    except Exception:  # noqa: BLE001 - no data yet, or not a GP policy: draw the data only
        return None
    return f


def _expert_g(study: Any, policy: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    """The expert's latent g (COBOL's estimate, ``predict(X)["g"]``), if the policy has one."""
    pred = getattr(policy, "predict", None)
    if not family_traits(study.family).expert_belief or not callable(pred):
        return None

    def g(X: np.ndarray) -> np.ndarray:
        return np.asarray(pred(X)["g"], dtype=np.float64)

    try:
        g(np.asarray(_centre(study.space))[None, :])
    except Exception:  # noqa: BLE001 - no expert model (gp-lcb), or no data yet
        return None
    return g


#: the labels given, in either panel of the expert's model: accepted a dot, rejected a cross
_LABEL_ITEMS: list[tuple[str, ...]] = [(_GREEN, "accepted", _DOT), (_RED, "rejected", _CROSS)]
#: the 1-D g panel's key: its curve (the dashed g = 0 line is labelled where it is drawn)
_G_ITEMS: list[tuple[str, ...]] = [(_ORANGE, "expert's latent g (estimate)", "")]
#: the 2-D g map's key: its two sides, by colour and by a mark (a minus where the expert
#: would accept, g <= 0; a plus where it would reject, g > 0), and its g = 0 boundary
_G_ITEMS_2D: list[tuple[str, ...]] = [
    (_GREEN, "expert's g <= 0: would accept", _MINUS),
    (_RED, "g > 0: would reject", _PLUS),
    ("#222", "g = 0", ""),
]


def _g_panel(
    study: Any, gfun: Callable[[np.ndarray], np.ndarray], XL: np.ndarray, acc: list[bool]
) -> tuple[_Panel, str]:
    """Second panel of the expert family's model: COBOL's estimate of the expert's latent g
    (Xu et al. 2024, Sec. 3.2: the logit of a rejection; the expert accepts where ``g <= 0``),
    a curve in 1-D, a map in 2-D (deeper colour = more certain; a minus where it would accept,
    a plus where it would reject, and a dark line between them, so that neither is said by
    colour alone), with the labels given (accepted a dot, rejected a cross); and its numbers in
    words (:func:`_g_lead`)."""
    names = study.names
    units = _units(study)
    xlabel = _axis_label(names[0], units, _xlabel_chars())
    b = _bounds(study.space)
    title = "expert model: latent g (estimate), above 0 = would reject"
    if study.space.dim == 1:
        xs = _axis_grid(study, 0, 200)
        g = gfun(xs[:, None])
        q = _panel(1, (b[0, 0], b[0, 1]), _range([*g.tolist(), 0.0]), title, xlabel, "g")
        q.axes()
        q.hline(0.0, _GREY, "g = 0")
        q.line(xs, g, _ORANGE)
        for xv, a in zip(XL[:, 0], acc):
            (q.dot if a else q.cross)(
                xv, 0.0, _GREEN if a else _RED, title=f"{_set(names[0], xv, units)}: "
                + ("accepted" if a else "rejected"),
            )  # fmt: skip
        return q, _g_lead(g)
    g0, g1 = _axis_grid(study, 0, 30), _axis_grid(study, 1, 30)
    c0, c1 = _cells(g0, b[0, 0], b[0, 1]), _cells(g1, b[1, 0], b[1, 1])
    q = _panel(
        1, c0.limits, c1.limits, title, xlabel, _axis_label(names[1], units, YLABEL_CHARS)
    )  # fmt: skip
    G0, G1 = np.meshgrid(g0, g1, indexing="ij")
    P = np.column_stack([G0.ravel(), G1.ravel()])
    I0, I1 = (a.ravel() for a in np.meshgrid(range(g0.size), range(g1.size), indexing="ij"))
    g = gfun(P)
    top = float(np.max(np.abs(g))) or 1.0
    tips = P.shape[0] <= _MAX_CELLS
    for i, j, gv in zip(I0, I1, g):
        c = _tint(_RED if gv > 0 else _GREEN, 0.15 + 0.75 * abs(gv) / top)
        q.span(c0.lo[i], c0.hi[i], c1.lo[j], c1.hi[j], c, title=f"g {_fmt(gv)}" if tips else "")
    # where the estimate changes sign (g = 0: the expert's decision flips) a dark line between
    # the two cells: the boundary is seen without telling red from green (WCAG 1.4.1)
    reject = (g > 0).reshape(g0.size, g1.size)
    edges = []
    for i in range(g0.size):
        for j in range(g1.size):
            if i + 1 < g0.size and reject[i, j] != reject[i + 1, j]:
                X = q.sx(c0.hi[i])
                edges.append(f"M{X:.1f},{q.sy(c1.lo[j]):.1f}V{q.sy(c1.hi[j]):.1f}")
            if j + 1 < g1.size and reject[i, j] != reject[i, j + 1]:
                Y = q.sy(c1.hi[j])
                edges.append(f"M{q.sx(c0.lo[i]):.1f},{Y:.1f}H{q.sx(c0.hi[i]):.1f}")
    if edges:
        q.parts.append(
            f'<path d="{"".join(edges)}" stroke="#222" stroke-width="1.6" fill="none">'
            "<title>g = 0: the boundary between accept and reject</title></path>"
        )
    # a plus where g > 0 (would reject), a minus elsewhere; none beside a label (drawn next)
    labels_at = np.array([(q.sx(u), q.sy(v)) for u, v in XL]).reshape(-1, 2)
    _sign_marks(q, g0, g1, reject, np.ones_like(reject), keep_off=labels_at)
    q.axes()
    for (u, v), a in zip(XL, acc):
        tip = f"{_at(names, (u, v), units)}: " + ("accepted" if a else "rejected")
        if a:  # a white dot, a dark cross on a white halo: apart from the map's marks
            q.dot(u, v, "#fff", title=tip)
        else:
            q.cross(u, v, "#222", title=tip, halo=True)
    return q, _g_lead(g)


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


def _classes(rec: Any, X: np.ndarray, mean: np.ndarray, h: float) -> np.ndarray:
    """Membership of the method's estimated upper set at X: its ``classify(X)`` if the
    recommendation has one (``LevelSetEstimate``), else ``mean >= h`` (eq. 3.1)."""
    classify = getattr(rec, "classify", None)
    if callable(classify):
        try:
            return np.asarray(classify(X), dtype=bool)
        except Exception:  # noqa: BLE001 - fall back to the definition
            pass
    return np.asarray(mean) >= h


def _class_colour(upper: bool, unsure: bool) -> str:
    c = _ORANGE if upper else _BLUE
    return _LIGHT[c] if unsure else c


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
        lead = f"{n} measurements, {int(np.sum(y > h))} above the threshold {_fmt(h)}."
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


def _g_lead(g: np.ndarray) -> str:
    """The expert model's panel in numbers: the estimated g over the grid :func:`_g_panel`
    draws, and on how many of its points the expert would accept (g <= 0)."""
    return (
        f"The expert model (latent g from {_fmt(float(np.min(g)))} to {_fmt(float(np.max(g)))})"
        f" would accept at {int(np.sum(g <= 0))} of the {g.size} grid points drawn."
    )


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


def _model_safe(study: Any, policy: Any, hist: list[dict[str, Any]], rec: Any, label: str) -> str:
    space: SafeSpace = study.space
    names = study.names
    units = _units(study)
    settings = _settings(study)
    h = float(settings.get("h", settings.get("threshold", math.nan)))
    X, answers = _evaluations(study, hist)
    g = np.array([_scalar(a, "g") for a in answers])
    state = getattr(policy, "state", None)
    bounds = sets = None
    if callable(state) and hist:
        try:
            bounds, sets = state()
        except Exception:  # noqa: BLE001 - not enough data for a posterior yet
            bounds = sets = None
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
            ucb_g = np.asarray(bounds.ucb_g)  # models g - h (the safe policies' convention)
            prefix = np.asarray(sets.prefix, dtype=bool)
            for i in range(xp.shape[0]):
                for j in range(s_vals.size):
                    lcb = float(bounds.lcb_g[i, j])
                    if prefix[i, j]:
                        c = _LIGHT_GREEN
                    elif lcb > 0:
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
                        f"upper bound of g - h {_fmt(float(ucb_g[i, j]))}",
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
    g - h above 0)."""
    lead = f"{g.size} measurements, {int(np.sum(g > h))} with g above the limit h = {_fmt(h)}."
    if bounds is None or sets is None:
        return lead + " No safe set yet."
    prefix = np.asarray(sets.prefix, dtype=bool)
    unsafe = (np.asarray(bounds.lcb_g) > 0) & ~prefix
    n = prefix.size
    return lead + (
        f" Certified safe: {int(prefix.sum())} of the {n} grid points ({prefix.mean():.0%});"
        f" likely unsafe: {int(unsafe.sum())}; not yet known: {n - int(prefix.sum() + unsafe.sum())}."
    )


def pictures(study: Any, growth: bool = True, width: int = WIDTH) -> dict[str, str]:
    """``{"progress": progress_svg(study), "model": model_svg(study)}`` and, for the safe
    family unless ``growth=False``, ``"growth"``: :func:`growth_svg` (its first drawing replays
    the log, seconds for a long study whose method refits hyperparameters at every answer);
    all ``width`` units wide."""
    out = {"progress": progress_svg(study, width), "model": model_svg(study, width)}
    grows = growth and family_traits(study.family).growth_picture
    svg = growth_svg(study, width=width) if grows else None
    if svg is not None:
        out["growth"] = svg
    return out
