"""SVG text shared by every picture of a study: the widths and the layout at a width (a
phone's narrower picture), numbers as text, axis ticks, the colour ramp and its tints, a map's
cells along an axis, wrapped text, the ``<svg>`` document and its ``<desc>`` (the picture's
numbers in words). Knows no study and no panel.
"""

from __future__ import annotations

import contextlib
import math
import textwrap
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape as _xml_escape

import numpy as np

from boloop.spaces import format_value

#: the width of a picture (SVG user units, drawn at as many CSS px on a wide screen)
WIDTH = 560
#: the width of a picture drawn for a phone: the same 11-unit text in a narrower picture, so that
#: scaled to a 390 px phone's column (350 px) its labels are 13 px, and 12 px on a 360 px phone
PHONE_WIDTH = 290
PANEL_H = 220
_MARGIN = (56, 16, 30, 40)  # left, right, top, bottom
#: a perceptually ordered colour ramp (low -> high), interpolated linearly
_RAMP = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
_BLUE, _ORANGE, _GREY, _RED, _GREEN = "#3b6fb6", "#e07b28", "#9a9a9a", "#c0392b", "#2e8b57"
#: beyond this many cells a picture draws an outline instead (keeps the SVG small)
_MAX_CELLS = 400


@dataclass(frozen=True)
class _Layout:
    """How a picture is laid out at one width: the columns of a slices picture, the preference
    chart's left margin and characters of an option's name per line, and the characters per
    line of a caption."""

    width: int
    slice_cols: int
    pref_left: int
    pref_name_chars: int
    caption_chars: int


def _layout_for(width: int) -> _Layout:
    """The layout of a picture ``width`` units wide: a wide one as always; a narrow one (a
    phone's) with one slice per row and the preference chart's margin, names and caption in
    proportion to the width (its fewer x ticks follow from :func:`_x_ticks`)."""
    if width >= WIDTH:
        return _Layout(width, 2, 190, 34, 92)
    k = width / WIDTH
    return _Layout(width, 1, round(190 * k * 1.15), round(34 * k * 1.15), round(92 * k))


#: the layout of the pictures being drawn (a frozen dataclass: never mutated)
_LAYOUT: ContextVar[_Layout] = ContextVar(
    "boloop_pictures_layout",
    default=_layout_for(WIDTH),  # noqa: B039
)


@contextlib.contextmanager
def _at_width(width: int) -> Iterator[None]:
    """Draw the pictures of this block ``width`` units wide (per thread and task)."""
    if width < 200:
        raise ValueError(f"a picture is at least 200 units wide, not {width}")
    token = _LAYOUT.set(_layout_for(int(width)))
    try:
        yield
    finally:
        _LAYOUT.reset(token)


def _width() -> int:
    return _LAYOUT.get().width


def _esc(text: Any) -> str:
    return _xml_escape(str(text), {'"': "&quot;", "'": "&#x27;"})


def _fmt(v: float, digits: int = 4) -> str:
    if not math.isfinite(v):
        return str(v)
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
        return f"{v:.2e}"
    return f"{v:.{digits}g}"


def _measured(v: float) -> str:
    """A measured value in a tooltip, as the history shows it (:func:`format_value`, 6
    significant digits): 1099.9 and 1100.3 on either side of a threshold of 1100 must not both
    read 1100 (a newcomer's trial), as :func:`_fmt`'s 4 digits for the axes would have them."""
    return format_value(v)


def _lines(text: str, width: int, max_lines: int | None = None) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken at spaces (after the commas
    of ``a=0.1, b=0.2``: never inside a number); beyond ``max_lines`` the last line ends in an
    ellipsis."""
    return textwrap.wrap(text, width, max_lines=max_lines, placeholder=" …") or [""]


def _nice_ticks(lo: float, hi: float, n: int = 5, whole: bool = False) -> list[float]:
    """About ``n`` round ticks from ``lo`` to ``hi``; ``whole``: whole numbers only, for an axis
    that counts (answers, wins): no "answer 1.5" or "7.5 points above the threshold"."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(n - 1, 1)
    if whole:
        raw = max(raw, 1.0)
    mag = 10 ** math.floor(math.log10(raw))
    # whole numbers skip 2.5 and may step a little finer (0, 2, 4, 6, 8 rather than 0, 5)
    steps, slack = ((1, 2, 5, 10), 0.8) if whole else ((1, 2, 2.5, 5, 10), 1.0)
    step = next(m * mag for m in steps if m * mag >= raw * slack)
    start = math.ceil(lo / step - 1e-9) * step
    ticks = []
    t = start
    while t <= hi + 1e-9 * step:
        ticks.append(0.0 if abs(t) < 1e-12 * step else t)
        t += step
    return ticks


def _x_ticks(lo: float, hi: float, w: float, whole: bool = False) -> list[float]:
    """The x ticks of an axis ``w`` units long: :func:`_nice_ticks` (about five), fewer while
    their labels (11-unit text) would come closer than a character's width (a narrow picture)."""
    for n in (5, 4, 3, 2):
        ticks = _nice_ticks(lo, hi, n, whole)
        if len(ticks) < 2:
            return ticks
        label = max(len(_fmt(t)) for t in ticks) * _CHAR_W
        if w * (ticks[1] - ticks[0]) / (hi - lo) >= label + _CHAR_W:
            return ticks
    return ticks


def _colour(u: float) -> str:
    """The ramp's colour at ``u`` in [0, 1]."""
    u = min(max(float(u), 0.0), 1.0) if math.isfinite(u) else 0.0
    pos = u * (len(_RAMP) - 1)
    i = min(int(pos), len(_RAMP) - 2)
    w = pos - i
    rgb = [round(a + (b - a) * w) for a, b in zip(_RAMP[i], _RAMP[i + 1])]
    return "#{:02x}{:02x}{:02x}".format(*tuple(rgb))


def _range(values: Sequence[float] | np.ndarray, pad: float = 0.05) -> tuple[float, float]:
    arr = np.asarray(values, dtype=np.float64).ravel()
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return 0.0, 1.0
    lo, hi = float(arr.min()), float(arr.max())
    if hi - lo < 1e-12 * max(1.0, abs(hi)):
        lo, hi = lo - 0.5 * max(1.0, abs(lo)) * 0.1 - 0.5, hi + 0.5 * max(1.0, abs(hi)) * 0.1 + 0.5
    span = hi - lo
    return lo - pad * span, hi + pad * span


#: a grid whose steps differ from their average by less than this share of it is drawn as even
_EVEN_STEPS = 1e-6


@dataclass(frozen=True)
class _Cells:
    """A map's cells along one axis: each grid value's extent, ``lo[i]`` to ``hi[i]`` (data
    units, in the order of the values given), and ``limits``, the axis's extent in the picture
    (the outer cells' outer edges)."""

    lo: np.ndarray
    hi: np.ndarray
    limits: tuple[float, float]


def _cells(values: Any, low: float, high: float) -> _Cells:
    """The cells of grid ``values`` (any order) whose bounds are ``low``, ``high``. An even grid
    (or one of one or two values): each value's cell is the average step wide, centred on it,
    and the axis reaches half a step beyond the bounds, as the maps always drew it. An uneven
    grid (a table's doses 0, 1, 2, 5, 10): each cell reaches halfway to its neighbours, the
    outer ones half their neighbour's gap beyond their value, so that a cell stands over its
    value and meets its neighbours, whatever the gaps."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    step = (high - low) / max(v.size - 1, 1)
    grid, at = np.unique(v, return_inverse=True)
    gaps = np.diff(grid)
    if grid.size < 3 or np.all(np.abs(gaps - gaps.mean()) <= _EVEN_STEPS * gaps.mean()):
        return _Cells(v - step / 2, v + step / 2, (low - step / 2, high + step / 2))
    mid = (grid[1:] + grid[:-1]) / 2
    lo = np.concatenate([[grid[0] - gaps[0] / 2], mid])
    hi = np.concatenate([mid, [grid[-1] + gaps[-1] / 2]])
    return _Cells(lo[at], hi[at], (float(lo[0]), float(hi[-1])))


def _x_cells(xv: np.ndarray) -> _Cells:
    """The cells of a safe space's one x parameter, its options ``xv`` (as the space holds
    them): :func:`_cells`, a lone option a cell one unit wide."""
    if xv.size < 2:
        return _Cells(xv - 0.5, xv + 0.5, (float(xv.min()) - 0.5, float(xv.max()) + 0.5))
    return _cells(xv, float(xv.min()), float(xv.max()))


#: the advance of a character of the 11-unit sans-serif text, about (a bold one's, at most)
_CHAR_W = 6.5


def _wrapped(x: float, y: float, text: str, attrs: str = "", up: bool = False) -> str:
    """``text`` at (``x``, ``y``) in lines that fit between ``x`` and the picture's right edge
    (13 units apart): one ``<text>`` of ``<tspan>`` lines; ``up``: the last line at ``y`` and
    the lines 12 apart (a title above its panel), else the first."""
    chars = max(8, int((_width() - 4 - x) / _CHAR_W))
    if len(text) <= chars:  # one line, as it was always drawn
        return f'<text x="{x:.1f}" y="{y:.1f}"{attrs}>{_esc(text)}</text>'
    lines = _lines(text, chars)
    step = 12 if up else 13
    y0 = y - step * (len(lines) - 1) if up else y
    spans = "".join(
        f'<tspan x="{x:.1f}" y="{y0 + step * j:.1f}">{_esc(line)}</tspan>'
        for j, line in enumerate(lines)
    )
    return f"<text{attrs}>{spans}</text>"


def _document(body: Sequence[str], height: float, label: str) -> str:
    w = _width()
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height:.0f}" '
        f'viewBox="0 0 {w} {height:.0f}" role="img" aria-label="{_esc(label)}" '
        'font-family="sans-serif" font-size="11">'
        f'<rect width="100%" height="100%" fill="#fff"/>{"".join(body)}</svg>'
    )


def _message(text: str, label: str) -> str:
    return _document(
        [f'<text x="{_width() / 2}" y="60" text-anchor="middle" fill="#555">{_esc(text)}</text>'],
        110,
        label,
    )


def _describe(svg: str, lead: str) -> str:
    """``svg`` with a ``<desc>``: ``lead`` (the numbers), what its panels show (their titles)
    and its key (WCAG 1.1.1: an SVG of role img is one image to a screen reader, which reads
    none of its texts; its label names it, this describes it)."""
    import xml.etree.ElementTree as ET

    ns = "{http://www.w3.org/2000/svg}"
    try:
        root = ET.fromstring(svg)
    except ET.ParseError:  # drawn here: never; the picture without its description then
        return svg
    titles, keys = [], []
    for t in root.iter(f"{ns}text"):
        # its own words and its lines' (<tspan>), not its tooltip (<title>)
        words = [t.text or ""]
        for c in t:
            words += [c.text or "" if c.tag == f"{ns}tspan" else "", c.tail or ""]
        text = " ".join(" ".join(words).split())
        if t.get("class") == "title":
            titles.append(text)
        elif t.get("class") == "key":
            keys.append(text)
    if root.find(f"{ns}desc") is not None:  # described where it was drawn
        return svg
    parts = [lead] if lead else []
    if titles:
        parts.append("Shown: " + "; ".join(titles) + ".")
    if keys:
        parts.append("Key: " + ", ".join(keys) + ".")
    if not parts:
        return svg
    head = svg.index(">") + 1
    return f"{svg[:head]}<desc>{_esc(' '.join(parts))}</desc>{svg[head:]}"


def _tint(colour: str, t: float) -> str:
    """``colour`` (#rrggbb) mixed with white: ``t`` = 1 the colour, 0 white."""
    t = min(max(float(t), 0.0), 1.0)
    rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(255 + (c - 255) * t):02x}" for c in rgb)
