"""The expert family's second model panel: COBOL's estimate of the expert's latent g
(Xu et al. 2024, Sec. 3.2), a curve in 1-D, a map in 2-D, with the labels given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from boloop.algorithms.families import family_traits
from boloop.study.pictures.panel import _CROSS, _DOT, _MINUS, _PLUS, _Panel, _panel, _sign_marks
from boloop.study.pictures.reading import (
    YLABEL_CHARS,
    _at,
    _axis_grid,
    _axis_label,
    _bounds,
    _centre,
    _set,
    _units,
    _xlabel_chars,
)
from boloop.study.pictures.svg import (
    _GREEN,
    _GREY,
    _MAX_CELLS,
    _ORANGE,
    _RED,
    _cells,
    _fmt,
    _range,
    _tint,
)


def _expert_g(study: Any, policy: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    """The expert's latent g (COBOL's estimate, ``predict(X)["g"]``), if the policy has one."""
    if not family_traits(study.family).expert_belief:
        return None

    def g(X: np.ndarray) -> np.ndarray:
        return np.asarray(policy.predict(X)["g"], dtype=np.float64)

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


def _g_lead(g: np.ndarray) -> str:
    """The expert model's panel in numbers: the estimated g over the grid :func:`_g_panel`
    draws, and on how many of its points the expert would accept (g <= 0)."""
    return (
        f"The expert model (latent g from {_fmt(float(np.min(g)))} to {_fmt(float(np.max(g)))})"
        f" would accept at {int(np.sum(g <= 0))} of the {g.size} grid points drawn."
    )
