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

import contextlib
import copy
import math
import textwrap
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, SupportsFloat
from xml.sax.saxutils import escape as _xml_escape

import numpy as np

from boloop._blas import one_blas_thread
from boloop.algorithms.families import family_traits
from boloop.confidence import UNDECIDED_SD, undecided
from boloop.recommendations import BestPoint
from boloop.spaces import Box, CandidateSet, SafeSpace, format_value

__all__ = [
    "progress_svg",
    "model_svg",
    "growth_svg",
    "growth_numbers",
    "safe_growth",
    "pictures",
    "PHONE_WIDTH",
]

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
_LIGHT_GREEN = "#a8dbb5"
#: a cell that looks unsafe: darker than the light green of a certified one (relative luminance
#: 0.36 against 0.63) and hatched, so that the two differ without colour vision
_UNSAFE_FILL = "#d98b80"
#: legend markers (Panel.legend)
_DOT, _CROSS, _HATCH = "marker:dot", "marker:cross", "marker:hatch"
_TRIANGLE = "marker:triangle"
#: a level-set class's key: its colour with a plus (above), a minus (below), or a dashed border
#: (within 2 std: not decided), as the map draws them (:func:`_class_marks`)
_PLUS, _MINUS, _DASHED = "marker:plus", "marker:minus", "marker:dashed"
_MAX_SLICES = 6
#: beyond this many cells a picture draws an outline instead (keeps the SVG small)
_MAX_CELLS = 400
#: the opacity of a band (mean +- 2 std, lowest to highest)
_BAND_OPACITY = 0.22


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


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(n - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step - 1e-9) * step
    ticks = []
    t = start
    while t <= hi + 1e-9 * step:
        ticks.append(0.0 if abs(t) < 1e-12 * step else t)
        t += step
    return ticks


def _x_ticks(lo: float, hi: float, w: float) -> list[float]:
    """The x ticks of an axis ``w`` units long: :func:`_nice_ticks` (about five), fewer while
    their labels (11-unit text) would come closer than a character's width (a narrow picture)."""
    for n in (5, 4, 3, 2):
        ticks = _nice_ticks(lo, hi, n)
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


class _Panel:
    """One plotting area inside an SVG: linear x and y scales, axes, marks."""

    def __init__(
        self,
        x0: float,
        y0: float,
        w: float,
        h: float,
        xlim: tuple[float, float],
        ylim: tuple[float, float],
        title: str = "",
        xlabel: str = "",
        ylabel: str = "",
    ) -> None:
        self.x0, self.y0, self.w, self.h = x0, y0, w, h
        self.xlim, self.ylim = xlim, ylim
        self.title, self.xlabel, self.ylabel = title, xlabel, ylabel
        self.parts: list[str] = []
        #: what a line's label keeps clear of: the boxes (picture units, x0, y0, x1, y1) of the
        #: marks drawn (:meth:`dot`, :meth:`cross`, ...) and of :meth:`keep_clear`
        self.occupied: list[tuple[float, float, float, float]] = []
        #: the lines' labels, placed when the panel is drawn (:meth:`svg`, once every mark is
        #: known): (their place in ``parts``, the line's y, colour, text)
        self._line_labels: list[tuple[int, float, str, str]] = []

    def sx(self, x: SupportsFloat) -> float:
        lo, hi = self.xlim
        return self.x0 + (float(x) - lo) / (hi - lo) * self.w

    def sy(self, y: SupportsFloat) -> float:
        lo, hi = self.ylim
        return self.y0 + self.h - (float(y) - lo) / (hi - lo) * self.h

    def axes(self, xticks: bool = True) -> None:
        p = self.parts
        p.append(
            f'<rect x="{self.x0:.1f}" y="{self.y0:.1f}" width="{self.w:.1f}" height="{self.h:.1f}" '
            'fill="none" stroke="#444" stroke-width="0.8"/>'
        )
        if xticks:
            for t in _x_ticks(*self.xlim, self.w):
                X = self.sx(t)
                p.append(
                    f'<line x1="{X:.1f}" y1="{self.y0 + self.h:.1f}" x2="{X:.1f}" '
                    f'y2="{self.y0 + self.h + 4:.1f}" stroke="#444"/>'
                    f'<text x="{X:.1f}" y="{self.y0 + self.h + 15:.1f}" text-anchor="middle">'
                    f"{_esc(_fmt(t))}</text>"
                )
        for t in _nice_ticks(*self.ylim):
            Y = self.sy(t)
            p.append(
                f'<line x1="{self.x0 - 4:.1f}" y1="{Y:.1f}" x2="{self.x0:.1f}" y2="{Y:.1f}" '
                f'stroke="#444"/><text x="{self.x0 - 6:.1f}" y="{Y + 4:.1f}" text-anchor="end">'
                f"{_esc(_fmt(t))}</text>"
            )
        if self.title:
            # too long for one line from the panel's left (a phone's narrow picture): from the
            # picture's left edge, in lines 12 units apart above the panel
            one_line = len(self.title) * _CHAR_W <= _width() - 4 - self.x0
            x, y = (self.x0, self.y0 - 8) if one_line else (8.0, self.y0 - 6)
            p.append(_wrapped(x, y, self.title, ' font-weight="bold" class="title"', up=True))
        if self.xlabel:
            p.append(
                f'<text x="{self.x0 + self.w / 2:.1f}" y="{self.y0 + self.h + 30:.1f}" '
                f'text-anchor="middle">{_esc(self.xlabel)}</text>'
            )
        if self.ylabel:
            cx, cy = self.x0 - 44, self.y0 + self.h / 2
            p.append(
                f'<text x="{cx:.1f}" y="{cy:.1f}" text-anchor="middle" '
                f'transform="rotate(-90 {cx:.1f} {cy:.1f})">{_esc(self.ylabel)}</text>'
            )

    def line(self, xs: Any, ys: Any, colour: str, width: float = 1.6, dash: str = "") -> None:
        pts = [
            f"{self.sx(x):.1f},{self.sy(y):.1f}"
            for x, y in zip(xs, ys)
            if math.isfinite(float(x)) and math.isfinite(float(y))
        ]
        if len(pts) < 2:
            return
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(
            f'<polyline points="{" ".join(pts)}" fill="none" stroke="{colour}" '
            f'stroke-width="{width}"{d}/>'
        )

    def steps(self, xs: Any, ys: Any, colour: str, dash: str = "") -> None:
        sx: list[Any] = []
        sy: list[Any] = []
        for i, (x, y) in enumerate(zip(xs, ys)):
            if i:
                sx.append(x)
                sy.append(sy[-1])
            sx.append(x)
            sy.append(y)
        self.line(sx, sy, colour, 2.0, dash)

    def band(self, xs: Any, lo: Any, hi: Any, colour: str) -> None:
        up = [f"{self.sx(x):.1f},{self.sy(y):.1f}" for x, y in zip(xs, hi)]
        down = [f"{self.sx(x):.1f},{self.sy(y):.1f}" for x, y in zip(xs[::-1], lo[::-1])]
        self.parts.append(
            f'<polygon points="{" ".join(up + down)}" fill="{colour}" '
            f'fill-opacity="{_BAND_OPACITY}" stroke="none"/>'
        )

    def hline(self, y: float, colour: str, label: str = "") -> None:
        """A dashed horizontal line at ``y`` across the panel; ``label``: its text, placed
        where no mark is (:meth:`_line_label`) once the panel is drawn."""
        if not self.ylim[0] <= y <= self.ylim[1]:
            return
        Y = self.sy(y)
        self.parts.append(
            f'<line x1="{self.x0:.1f}" y1="{Y:.1f}" x2="{self.x0 + self.w:.1f}" y2="{Y:.1f}" '
            f'stroke="{colour}" stroke-dasharray="5 3" stroke-width="1.3"/>'
        )
        if label:
            self._line_labels.append((len(self.parts), Y, colour, label))
            self.parts.append("")  # its place: drawn under the marks drawn after it

    def keep_clear(self, x0: float, y0: float, x1: float, y1: float) -> None:
        """Keep a line's label off the box (``x0``, ``y0``)-(``x1``, ``y1``) (picture units)."""
        self.occupied.append((min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)))

    def _occupy(self, X: float, Y: float, r: float) -> None:
        self.occupied.append((X - r, Y - r, X + r, Y + r))

    def _line_label(self, Y: float, colour: str, label: str) -> str:
        """The text of a line at picture height ``Y``: at the line's right end just above it
        (where it always was), unless a mark is there (a measurement just above a threshold: a
        newcomer's trial): then the first spot clear of every mark (:attr:`occupied`) among
        just below the line there, at its left end above and below, and along it from right to
        left; where no spot is clear, the one over the fewest marks. A spot that leaves the
        panel comes after every spot inside it."""
        w = len(label) * _CHAR_W
        right, left = self.x0 + self.w - 4, self.x0 + 4
        ends = [right, left + w]  # where the text ends (its right edge)
        step = max(w / 2, 2 * _CHAR_W)
        x = right - step
        while x - w > left:
            ends.append(x)
            x -= step
        spots = [(end, base) for end in ends for base in (Y - 4, Y + 12)]  # above, below

        def rank(spot: tuple[float, float]) -> tuple[bool, int]:
            end, base = spot
            x0, y0, x1, y1 = end - w, base - 9, end, base + 3  # the text's box, about
            hits = sum(x0 < b[2] and b[0] < x1 and y0 < b[3] and b[1] < y1 for b in self.occupied)
            return y0 < self.y0 or y1 > self.y0 + self.h, hits

        end, base = min(spots, key=rank)  # (the first of equals: the order above)
        if end == left + w and end != right:  # at the left end: from the panel's left edge
            return f'<text x="{left:.1f}" y="{base:.1f}" fill="{colour}">{_esc(label)}</text>'
        return (
            f'<text x="{end:.1f}" y="{base:.1f}" text-anchor="end" '
            f'fill="{colour}">{_esc(label)}</text>'
        )

    def dot(self, x: float, y: float, colour: str, r: float = 3.2, title: str = "") -> None:
        if not (math.isfinite(float(x)) and math.isfinite(float(y))):
            return
        t = f"<title>{_esc(title)}</title>" if title else ""
        self._occupy(self.sx(x), self.sy(y), r + 0.3)
        self.parts.append(
            f'<circle cx="{self.sx(x):.1f}" cy="{self.sy(y):.1f}" r="{r}" fill="{colour}" '
            f'stroke="#222" stroke-width="0.6">{t}</circle>'
        )

    def triangle(self, x: float, y: float, colour: str, r: float = 4.2, title: str = "") -> None:
        """A point drawn as a triangle pointing up (a measurement above a threshold): its shape
        tells it from a dot without colour."""
        if not (math.isfinite(float(x)) and math.isfinite(float(y))):
            return
        self._occupy(self.sx(x), self.sy(y), r + 0.3)
        self.parts.append(_triangle_path(self.sx(x), self.sy(y), r, colour, title))

    def cross(
        self, x: float, y: float, colour: str, r: float = 4.0, title: str = "", halo: bool = False
    ) -> None:
        """An x mark (:func:`_cross_path`); ``halo``: on a white one a little wider, so that it
        stands out from a map's lines and marks."""
        if not (math.isfinite(float(x)) and math.isfinite(float(y))):
            return
        X, Y = self.sx(x), self.sy(y)
        self._occupy(X, Y, r + 1.0)
        if halo:
            self.parts.append(
                f'<path d="{_cross_d(X, Y, r)}" stroke="#fff" stroke-width="4.5" '
                'stroke-linecap="round"/>'
            )
        self.parts.append(_cross_path(X, Y, r, colour, title))

    def star(self, x: float, y: float, title: str = "recommendation") -> None:
        X, Y = self.sx(x), self.sy(y)
        self._occupy(X, Y, 8.5)
        pts = []
        for k in range(10):
            r = 8.0 if k % 2 == 0 else 3.4
            a = -math.pi / 2 + k * math.pi / 5
            pts.append(f"{X + r * math.cos(a):.1f},{Y + r * math.sin(a):.1f}")
        self.parts.append(
            f'<polygon points="{" ".join(pts)}" fill="#ffd700" stroke="#222" stroke-width="1">'
            f"<title>{_esc(title)}</title></polygon>"
        )

    def cell(
        self,
        x: float,
        y: float,
        dx: float,
        dy: float,
        fill: str,
        title: str = "",
        hatch: bool = False,
    ) -> None:
        """A cell of a map, ``dx`` by ``dy`` centred at (``x``, ``y``) (:meth:`span`)."""
        self.span(x - dx / 2, x + dx / 2, y - dy / 2, y + dy / 2, fill, title, hatch)

    def span(
        self,
        x_lo: float,
        x_hi: float,
        y_lo: float,
        y_hi: float,
        fill: str,
        title: str = "",
        hatch: bool = False,
    ) -> None:
        """A cell of a map from ``x_lo`` to ``x_hi`` and ``y_lo`` to ``y_hi`` (data units;
        :func:`_cells` gives a grid's), cut at the panel's frame (a cell centred on the frame
        draws its inner half only); ``hatch``: with a diagonal line, so that it differs from its
        neighbours by more than colour (WCAG 1.4.1)."""
        right, bottom = self.x0 + self.w, self.y0 + self.h
        X0 = max(self.sx(x_lo), self.x0)
        Y0 = max(self.sy(y_hi), self.y0)
        X1 = min(self.sx(x_hi), right)
        Y1 = min(self.sy(y_lo), bottom)
        if X1 <= X0 or Y1 <= Y0:  # wholly outside the frame
            return
        t = f"<title>{_esc(title)}</title>" if title else ""
        # 0.3 wider and taller than the cell, so that neighbours meet without a seam
        self.parts.append(
            f'<rect x="{X0:.1f}" y="{Y0:.1f}" width="{min(X1 + 0.3, right) - X0:.1f}" '
            f'height="{min(Y1 + 0.3, bottom) - Y0:.1f}" fill="{fill}">{t}</rect>'
        )
        if hatch:
            self.parts.append(_hatch_path(X0, Y0, X1 - X0, Y1 - Y0))

    def legend(
        self, items: Sequence[tuple[str, ...]], tips: dict[str, str] | None = None
    ) -> None:
        """Keys in rows from the panel's top left, wrapped at the picture's width: a colour
        square for ``(colour, text)``, a line sample for ``(colour, text, dash)`` (``dash`` an
        SVG dash array, "" solid), a marker for ``(colour, text, MARK)`` (:data:`_DOT`, a
        point drawn by :meth:`dot`; :data:`_CROSS`, by :meth:`cross`; :data:`_HATCH`, a cell
        of :meth:`cell` with ``hatch``; :data:`_PLUS`, :data:`_MINUS`, :data:`_DASHED`, a
        level-set class), the text alone for ``("", text)``. ``tips``: a tooltip (``<title>``)
        for a key's mark, by its text (a class's count: the page's table of numbers reads it)."""
        tips = tips or {}
        x = self.x0 + 6
        y = self.y0 + 12
        for colour, text, *dash in items:
            if x + 14 + 6.5 * len(text) > _width() and x > self.x0 + 6:
                x, y = self.x0 + 6, y + 16
            tip = f"<title>{_esc(tips[text])}</title>" if text in tips else ""
            if dash and dash[0] in (_PLUS, _MINUS, _DASHED):
                border = ' stroke-dasharray="2 1.5" stroke-width="1"' if dash[0] == _DASHED else (
                    ' stroke-width="0.4"'
                )
                self.parts.append(
                    f'<rect x="{x:.1f}" y="{y - 8:.1f}" width="10" height="10" fill="{colour}" '
                    f'stroke="#222"{border}>{tip}</rect>'
                )
                if dash[0] != _DASHED:
                    self.parts.append(
                        f'<path d="{_sign_glyph(x + 5, y - 3, dash[0] == _PLUS)}" '
                        f'stroke="#222" stroke-width="{_GLYPH_W}" fill="none"/>'
                    )
            elif dash and dash[0] in (_DOT, _CROSS, _HATCH, _TRIANGLE):
                cx, cy = x + 5, y - 3
                if dash[0] == _TRIANGLE:
                    self.parts.append(_triangle_path(cx, cy, 4.2, colour))
                elif dash[0] == _DOT:
                    self.parts.append(
                        f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3.2" fill="{colour}" '
                        'stroke="#222" stroke-width="0.6"/>'
                    )
                elif dash[0] == _CROSS:
                    self.parts.append(_cross_path(cx, cy, 4.0, colour))
                else:
                    self.parts.append(
                        f'<rect x="{x:.1f}" y="{y - 8:.1f}" width="10" height="10" '
                        f'fill="{colour}" stroke="#222" stroke-width="0.4"/>'
                        + _hatch_path(x, y - 8, 10, 10)
                    )
            elif dash:
                d = f' stroke-dasharray="{dash[0]}"' if dash[0] else ""
                self.parts.append(
                    f'<line x1="{x - 2:.1f}" y1="{y - 3:.1f}" x2="{x + 12:.1f}" y2="{y - 3:.1f}" '
                    f'stroke="{colour}" stroke-width="2"{d}/>'
                )
            elif colour:
                self.parts.append(
                    f'<rect x="{x:.1f}" y="{y - 8:.1f}" width="10" height="10" fill="{colour}" '
                    f'stroke="#222" stroke-width="0.4">{tip}</rect>'
                )
            tx = x + 14 if colour else x
            self.parts.append(f'<text x="{tx:.1f}" y="{y + 1:.1f}" class="key">{_esc(text)}</text>')
            x += 22 + 6.5 * len(text)

    def svg(self) -> str:
        parts = list(self.parts)
        for i, Y, colour, label in self._line_labels:  # placed now: every mark is known
            parts[i] = self._line_label(Y, colour, label)
        return "".join(parts)


#: a level-set sign glyph's half arm and stroke width (picture units)
_GLYPH_R, _GLYPH_W = 2.6, 1.3


def _sign_glyph(X: float, Y: float, plus: bool) -> str:
    """The path data of a plus (``plus``: above the threshold) or a minus (below) centred at
    (``X``, ``Y``): a level-set class said by a shape, not only by its colour (WCAG 1.4.1)."""
    r = _GLYPH_R
    d = f"M{X - r:.1f},{Y:.1f}h{2 * r:.1f}"
    return d + (f"M{X:.1f},{Y - r:.1f}v{2 * r:.1f}" if plus else "")


def _cross_path(X: float, Y: float, r: float, colour: str, title: str = "") -> str:
    """An x mark centred at (``X``, ``Y``) in picture units: a measured point that broke a
    limit is a cross, not only a red dot (its shape says it without colour)."""
    t = f"<title>{_esc(title)}</title>" if title else ""
    return f'<path d="{_cross_d(X, Y, r)}" stroke="{colour}" stroke-width="2">{t}</path>'


def _cross_d(X: float, Y: float, r: float) -> str:
    """The path data of an x mark of half size ``r`` centred at (``X``, ``Y``)."""
    return (
        f"M{X - r:.1f},{Y - r:.1f}L{X + r:.1f},{Y + r:.1f}"
        f"M{X - r:.1f},{Y + r:.1f}L{X + r:.1f},{Y - r:.1f}"
    )


def _triangle_path(X: float, Y: float, r: float, colour: str, title: str = "") -> str:
    """A filled triangle pointing up, centred at (``X``, ``Y``)."""
    t = f"<title>{_esc(title)}</title>" if title else ""
    return (
        f'<path d="M{X:.1f},{Y - r:.1f}L{X + r:.1f},{Y + 0.8 * r:.1f}L{X - r:.1f},{Y + 0.8 * r:.1f}Z" '
        f'fill="{colour}" stroke="#222" stroke-width="0.6">{t}</path>'
    )


def _hatch_path(X: float, Y: float, w: float, h: float) -> str:
    """Two diagonal strokes across a cell (no SVG pattern: a page carries each picture twice,
    one hidden, and a pattern defined in the hidden one would not be drawn in the other)."""
    return (
        f'<path d="M{X:.1f},{Y + h:.1f}L{X + w:.1f},{Y:.1f}M{X:.1f},{Y + h / 2:.1f}'
        f'L{X + w / 2:.1f},{Y:.1f}M{X + w / 2:.1f},{Y + h:.1f}L{X + w:.1f},{Y + h / 2:.1f}" '
        'stroke="#7a1f16" stroke-width="0.8" fill="none"/>'
    )


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


def _panel(
    row: int,
    xlim: tuple[float, float],
    ylim: tuple[float, float],
    title: str,
    xlabel: str,
    ylabel: str,
    col: int = 0,
    ncols: int = 1,
) -> _Panel:
    left, right, top, bottom = _MARGIN
    cw = (_width() - left - right - (ncols - 1) * left) / ncols
    h = PANEL_H - top - bottom
    return _Panel(
        left + col * (cw + left), row * PANEL_H + top, cw, h, xlim, ylim, title, xlabel, ylabel
    )


# -- reading a study ----------------------------------------------------------------------------
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


# -- progress -----------------------------------------------------------------------------------
#: the longest y-axis label, in characters, that fits along a panel's height at 11 units
YLABEL_CHARS = 26


def _ylabel(study: Any, output: str | None = None) -> str:
    """The measured value's name for a y axis (``coating thickness (µm)``, from the space
    file's ``[measurement]``), ``f`` where the study gives none."""
    measured = getattr(study, "measured", None)
    entries = measured() if callable(measured) else []
    for m in entries:
        if m.name is not None and (m.output is None or m.output == output or len(entries) == 1):
            text = m.label()  # written along a panel's height: cut to what fits beside it
            return text if len(text) <= YLABEL_CHARS else text[: YLABEL_CHARS - 1] + "…"
    return "f"


def progress_svg(study: Any, width: int = WIDTH) -> str:
    """The study's progress against the number of answers, as an SVG document (str).

    Drawn as the family declares (:func:`~boloop.algorithms.families.family_traits`):
    ``duel_model`` (preference): cumulative wins of the five options that won most;
    ``safety_limit`` (safe): f with the running best safe f, and g with the limit h;
    ``level_threshold`` (level set): measurements with the threshold and the count above it;
    otherwise (expert, or a family that declares none): evaluations and the running best
    (lowest) f, labels marked accept/reject.

    ``width``: the picture's width in SVG units, drawn at as many CSS px unless scaled
    (:data:`PHONE_WIDTH`: a phone's, the same text in a narrower picture with fewer ticks)."""
    with _at_width(width):
        return _describe(_progress_svg(study), _progress_lead(study))


def _progress_lead(study: Any) -> str:
    """The progress in one or two sentences of numbers (the picture's ``<desc>``)."""
    hist = study.history()
    if not hist:
        return "No answers yet."
    traits = family_traits(study.family)
    if traits.duel_model or all(r["kind"] == "compare" for r in hist):
        return f"{len(hist)} duels answered."
    settings = _settings(study)
    if traits.safety_limit:
        h = float(settings.get("h", settings.get("threshold", math.nan)))
        f = [_scalar(r["answer"], "f") for r in hist]
        g = [_scalar(r["answer"], "g") for r in hist]
        safe = [(v, i + 1) for i, (v, w) in enumerate(zip(f, g)) if math.isfinite(v) and w <= h]
        over = [i + 1 for i, w in enumerate(g) if w > h]
        best = max(safe) if safe else None
        return (
            f"{len(hist)} measurements. "
            + (f"The best safe f is {_fmt(best[0])} (answer {best[1]}). " if best else "")
            + (
                f"{len(over)} measured g above the limit h = {_fmt(h)}: answer"
                f"{'s' if len(over) > 1 else ''} {', '.join(map(str, over))}."
                if over
                else f"No measured g above the limit h = {_fmt(h)}."
            )
        )
    if traits.level_threshold:
        h = float(settings.get("threshold", math.nan))
        y = [_scalar(r["answer"]) for r in hist]
        return f"{len(y)} measurements, {sum(v > h for v in y)} above the threshold {_fmt(h)}."
    vals = [(_scalar(r["answer"]), i + 1) for i, r in enumerate(hist) if r["kind"] == "evaluate"]
    labels = [bool(r["answer"]) for r in hist if r["kind"] == "label"]
    lead = f"{len(vals)} evaluations"
    if vals:
        lead += f", the lowest f {_fmt(min(vals)[0])} (answer {min(vals)[1]})"
    if labels:
        lead += f"; {sum(labels)} labels accepted, {len(labels) - sum(labels)} rejected"
    return lead + "."


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


def _progress_svg(study: Any) -> str:
    hist = study.history()
    label = f"progress of study {study.name}"
    if not hist:
        return _message("no answers yet", label)
    traits = family_traits(study.family)
    n = np.arange(1, len(hist) + 1)
    if traits.duel_model or all(r["kind"] == "compare" for r in hist):
        return _progress_compare(study, hist, label)
    settings = _settings(study)
    body: list[str] = []
    if traits.safety_limit:
        h = float(settings.get("h", settings.get("threshold", math.nan)))
        f = np.array([_scalar(r["answer"], "f") for r in hist])
        g = np.array([_scalar(r["answer"], "g") for r in hist])
        best = np.full(len(hist), np.nan)
        cur = -math.inf
        for i in range(len(hist)):
            if math.isfinite(f[i]) and g[i] <= h:
                cur = max(cur, f[i])
            best[i] = cur if math.isfinite(cur) else np.nan
        p = _panel(0, (0.5, len(hist) + 0.5), _range(f), "f (maximised)", "", _ylabel(study, "f"))
        p.axes()
        for i in range(len(hist)):
            (p.dot if g[i] <= h else p.cross)(
                n[i], f[i], _GREEN if g[i] <= h else _RED, title=f"answer {n[i]}: f={_measured(f[i])}"
            )
        p.steps(n, best, _BLUE)
        q = _panel(
            1,
            (0.5, len(hist) + 0.5),
            _range(np.append(g, h)),
            f"g (limit h = {_fmt(h)})",
            "answers",
            "g",
        )
        q.axes()
        q.hline(h, _RED, f"h = {_fmt(h)}")
        for i in range(len(hist)):
            (q.dot if g[i] <= h else q.cross)(
                n[i], g[i], _GREEN if g[i] <= h else _RED, title=f"answer {n[i]}: g={_measured(g[i])}"
            )
        body += [p.svg(), q.svg()]
        items = [
            (_BLUE, "best safe f so far"),
            (_GREEN, "g <= h", _DOT),
            (_RED, "g > h (unsafe)", _CROSS),
        ]
        return _with_legend(body, 2 * PANEL_H, items, label)
    if traits.level_threshold:
        h = float(settings.get("threshold", math.nan))
        y = np.array([_scalar(r["answer"]) for r in hist])
        above = np.cumsum(y > h)
        p = _panel(
            0, (0.5, len(hist) + 0.5), _range(np.append(y, h)), "measurements", "", _ylabel(study)
        )
        p.axes()
        p.hline(h, _RED, f"threshold {_fmt(h)}")
        for i in range(len(hist)):
            (p.triangle if y[i] > h else p.dot)(
                n[i], y[i], _ORANGE if y[i] > h else _BLUE, title=f"answer {n[i]}: {_measured(y[i])}"
            )
        q = _panel(
            1,
            (0.5, len(hist) + 0.5),
            (0, max(1.0, float(above[-1])) * 1.05),
            "measured points above the threshold (cumulative)",
            "answers",
            "count",
        )
        q.axes()
        q.steps(n, above, _ORANGE)
        body += [p.svg(), q.svg()]
        items = [(_ORANGE, "above the threshold", _TRIANGLE), (_BLUE, "below", _DOT)]
        return _with_legend(body, 2 * PANEL_H, items, label)
    # expert (and any family of Evaluate/Label queries): minimisation of f
    vals = [(i, _scalar(r["answer"])) for i, r in enumerate(hist) if r["kind"] == "evaluate"]
    ys = np.array([v for _, v in vals]) if vals else np.array([0.0, 1.0])
    p = _panel(
        0, (0.5, len(hist) + 0.5), _range(ys), "evaluations and labels", "answers", _ylabel(study)
    )
    p.axes()
    record: list[tuple[int, float]] = []  # (answer number, best f so far)
    cur = math.inf
    for i, v in vals:
        cur = min(cur, v)
        record.append((i + 1, cur))
        p.dot(i + 1, v, _BLUE, title=f"answer {i + 1}: f={_measured(v)}")
    if record:
        p.steps([b[0] for b in record], [b[1] for b in record], _ORANGE)
    y_mark = p.ylim[0] + 0.03 * (p.ylim[1] - p.ylim[0])
    for i, r in enumerate(hist):
        if r["kind"] == "label":
            acc = bool(r["answer"])
            (p.dot if acc else p.cross)(
                i + 1,
                y_mark,
                _GREEN if acc else _RED,
                title=f"answer {i + 1}: " + ("accepted" if acc else "rejected"),
            )
    items = [
        (_ORANGE, "best f so far"),
        (_BLUE, "evaluation"),
        (_GREEN, "accepted", _DOT),
        (_RED, "rejected", _CROSS),
    ]
    return _with_legend([p.svg()], PANEL_H, items, label)


def _option_name(study: Any, row: dict[str, Any], side: str, digits: int = 4) -> str:
    """An option as text: its label, or its parameters (``digits`` significant digits)."""
    lab = row.get(f"{side}_label")
    if lab is not None:
        return str(lab)
    return ", ".join(f"{k}={_fmt(v, digits)}" for k, v in (row[side] or {}).items())


#: the options' lines in the preference progress: a qualitative palette (Okabe and Ito's
#: colour-blind safe colours, without their yellow, too pale for a thin line on white), then
#: the same colours dashed; an option keeps its style (its place in the candidate table), but
#: for a clash with another option drawn (:func:`_option_styles`)
_OPTION_COLOURS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000")
_OPTION_DASHES = ("", "7 3", "2 2", "8 3 2 3")
#: the most options the preference progress draws (those that won most)
_MAX_OPTION_LINES = 5


def _option_style(k: int) -> tuple[str, str]:
    """The colour and dash of style number ``k`` (taken modulo the number of styles)."""
    n = len(_OPTION_COLOURS)
    return _OPTION_COLOURS[k % n], _OPTION_DASHES[(k // n) % len(_OPTION_DASHES)]


def _option_styles(drawn: list[str], places: dict[str, int]) -> dict[str, tuple[str, str]]:
    """The styles of the options drawn together: each its own style, that of its place
    (:func:`_option_places`) modulo the number of styles, so that it keeps it from one drawing
    to the next; where places share a style (rows ``k`` and ``k + 28``), the option of the
    lowest place keeps it and the others, in the order of their places, take the next style
    free among those drawn. The result depends on the set drawn only (not on its ranking), so
    the same options always get the same styles, and an option without such a clash always
    its own."""
    n = len(_OPTION_COLOURS) * len(_OPTION_DASHES)
    order = sorted(drawn, key=places.__getitem__)
    own: dict[int, str] = {}
    clashed: list[str] = []
    for nm in order:
        k = places[nm] % n
        if k in own:
            clashed.append(nm)
        else:
            own[k] = nm
    taken = set(own)
    style = {nm: k for k, nm in own.items()}
    for nm in clashed:
        k = places[nm] % n
        while k in taken:  # at most _MAX_OPTION_LINES < n lines: a free style exists
            k = (k + 1) % n
        taken.add(k)
        style[nm] = k
    return {nm: _option_style(style[nm]) for nm in drawn}


def _option_places(study: Any, hist: list[dict[str, Any]]) -> dict[str, int]:
    """Each option's fixed place, for its style: its row in the study's candidate table, else
    (options anywhere in a box) the order in which the duels first showed it, after the
    table's rows. Neither changes when more answers come, so an option keeps its colour from
    one drawing to the next (its rank among the options does not)."""
    space = study.space
    places: dict[str, int] = {}
    n_table = len(space.points) if isinstance(space, CandidateSet) else 0
    seen = 0
    for r in hist:
        for side in ("a", "b"):
            nm = _option_name(study, r, side)
            if nm in places:
                continue
            i = -1
            if n_table and r[side]:
                x = np.array([[float(r[side][n]) for n in study.names]], dtype=np.float64)
                i = int(space.index_of(x)[0])
            if i < 0:
                i, seen = n_table + seen, seen + 1
            places[nm] = i
    return places


def _progress_compare(study: Any, hist: list[dict[str, Any]], label: str) -> str:
    """Cumulative wins of the options that won most (at most :data:`_MAX_OPTION_LINES`), each
    in its own fixed style (:func:`_option_styles`); options without a win are not drawn (a
    flat line at zero per option would hide the others), the key names them. Lines of options
    with the same count are drawn a pixel or two apart, so that none hides another."""
    wins: dict[str, list[int]] = {}
    names: list[str] = []
    short: dict[str, str] = {}  # the legend's text: fewer digits, cut between parameters
    for r in hist:
        for side in ("a", "b"):
            nm = _option_name(study, r, side)
            if nm not in wins:
                wins[nm] = []
                names.append(nm)
                short[nm] = _lines(_option_name(study, r, side, 3), 34, 1)[0]
    places = _option_places(study, hist)
    totals = {nm: 0 for nm in names}
    for r in hist:
        winner = _option_name(study, r, "a" if int(r["answer"]) == 0 else "b")
        totals[winner] += 1
        for nm in names:
            wins[nm].append(totals[nm])
    won = sorted((nm for nm in names if totals[nm] > 0), key=lambda nm: (-totals[nm], places[nm]))
    top = won[:_MAX_OPTION_LINES]
    n = np.arange(1, len(hist) + 1)
    p = _panel(
        0,
        (0.5, len(hist) + 0.5),
        (0, max(1.0, max(totals.values())) * 1.08),
        "cumulative wins of the options that won most",
        "answers",
        "wins",
    )
    p.axes()
    per_px = (p.ylim[1] - p.ylim[0]) / p.h
    items: list[tuple[str, ...]] = []
    styles = _option_styles(top, places)
    for k, nm in enumerate(top):
        colour, dash = styles[nm]
        shift = (k - (len(top) - 1) / 2) * 1.5 * per_px  # side by side where counts are equal
        p.steps(n, np.asarray(wins[nm], dtype=np.float64) + shift, colour, dash)
        items.append((colour, short[nm], dash))
    rest = [totals[nm] for nm in won[len(top) :]]
    if rest:  # the cut may fall inside a tie: say the counts, not "fewer"
        most = max(rest)
        count = f"{most} win" + ("" if most == 1 else "s")
        each = " each" if len(rest) > 1 else ""
        if min(rest) == most:
            items.append(("", f"{len(rest)} more with {count}{each}"))
        else:
            items.append(("", f"{len(rest)} more, at most {count}{each}"))
    never = [short[nm] for nm in sorted(names, key=places.__getitem__) if totals[nm] == 0]
    if never:
        # as many names as one line of the key holds (a phone's narrow picture: their number)
        room = 56 if _width() >= WIDTH else int((_width() - _MARGIN[0]) / _CHAR_W) - 35
        listed: list[str] = []
        for nm in never:
            if len(", ".join([*listed, nm])) > room and len(never) > len(listed) + 1:
                break
            listed.append(nm)
        unlisted = len(never) - len(listed)
        text = f"not drawn, no win yet: {', '.join(listed)}" + (
            f" and {unlisted} more" if unlisted else ""
        )
        if not listed:
            text = f"not drawn, no win yet: {unlisted} options"
        items.append(("", text))
    return _with_legend([p.svg()], PANEL_H, items, label)


# -- the model ----------------------------------------------------------------------------------
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


def _tint(colour: str, t: float) -> str:
    """``colour`` (#rrggbb) mixed with white: ``t`` = 1 the colour, 0 white."""
    t = min(max(float(t), 0.0), 1.0)
    rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(255 + (c - 255) * t):02x}" for c in rgb)


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
#: the spacing of the class map's plus and minus marks (picture units)
_GLYPH_STEP = 16.0


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


def _sign_marks(
    p: _Panel,
    xc: np.ndarray,
    yc: np.ndarray,
    plus: np.ndarray,
    marked: np.ndarray,
    glyph_rows: Sequence[float] | None = None,
    keep_off: np.ndarray | None = None,
) -> None:
    """On a lattice of :data:`_GLYPH_STEP` units over a map of cells centred at ``xc`` x
    ``yc`` (boolean (len(xc), len(yc)) ``plus`` and ``marked``), a plus on each marked cell
    where ``plus``, a minus on the other marked cells: two sides of a map said by a shape, not
    only by its colour (WCAG 1.4.1). ``glyph_rows``: the lattice's rows (picture y), all the
    panel's if None; ``keep_off``: points (picture units, (n, 2)) with no glyph within
    :data:`_GLYPH_STEP` / 2 + 4 units on either axis (marks drawn there stay clear)."""
    (xlo, xhi), (ylo, yhi) = p.xlim, p.ylim
    cols = np.arange(p.x0 + _GLYPH_STEP / 2, p.x0 + p.w, _GLYPH_STEP)
    rows = (
        np.arange(p.y0 + _GLYPH_STEP / 2, p.y0 + p.h, _GLYPH_STEP)
        if glyph_rows is None
        else np.asarray(glyph_rows, dtype=np.float64)
    )
    away = np.empty((0, 2)) if keep_off is None else np.asarray(keep_off, dtype=np.float64)
    near = _GLYPH_STEP / 2 + 4
    glyphs = []
    for Y in rows:
        j = int(np.argmin(np.abs(yc - (yhi - (Y - p.y0) / p.h * (yhi - ylo)))))
        for X in cols:
            i = int(np.argmin(np.abs(xc - (xlo + (X - p.x0) / p.w * (xhi - xlo)))))
            if away.size and np.any(np.max(np.abs(away - (X, Y)), axis=1) < near):
                continue
            if marked[i, j]:
                glyphs.append(_sign_glyph(float(X), float(Y), bool(plus[i, j])))
    if glyphs:
        p.parts.append(
            f'<path d="{"".join(glyphs)}" stroke="#222" stroke-width="{_GLYPH_W}" fill="none"/>'
        )


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


def _at(names: Sequence[str], point: Any, units: Mapping[str, str] | None = None) -> str:
    """A point as settings: ``dose=5 mg, weight=0.3`` (:func:`_set`)."""
    return ", ".join(_set(nm, v, units or {}) for nm, v in zip(names, point))


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


def _axis_grid(study: Any, j: int, n: int = 160) -> np.ndarray:
    space = study.space
    if isinstance(space, CandidateSet):
        vals = np.unique(space.points[:, j])
        if vals.size <= n:
            return vals
    lo, hi = _bounds(space)[j]
    return np.linspace(lo, hi, n)


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


def _legend_rows(items: Sequence[tuple[str, ...]]) -> int:
    """The rows :meth:`_Panel.legend` wraps ``items`` into below a picture (same breaks)."""
    start = _MARGIN[0]
    x, rows = float(start), 1
    for _, text, *_dash in items:
        if x + 14 + 6.5 * len(text) > _width() and x > start:
            x, rows = float(start), rows + 1
        x += 22 + 6.5 * len(text)
    return rows


def _with_legend(
    body: list[str],
    height: float,
    items: Sequence[tuple[str, ...]],
    label: str,
    tips: dict[str, str] | None = None,
) -> str:
    """The document of ``body`` (``height`` tall) with a colour key below it (``tips``: the
    keys' tooltips, by their text)."""
    if not items:
        return _document(body, height, label)
    q = _Panel(_MARGIN[0] - 6, height, 0, 0, (0, 1), (0, 1))
    q.legend(items, tips)
    return _document([*body, q.svg()], height + 16 * _legend_rows(items) + 6, label)


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


def _wilson(wins: int, n: int, z: float = 1.96) -> tuple[float, float, float]:
    """Win rate with its Wilson score interval (95 % for z = 1.96)."""
    if n == 0:
        return math.nan, 0.0, 1.0
    p = wins / n
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return p, max(0.0, c - half), min(1.0, c + half)


def _model_preference(study: Any, hist: list[dict[str, Any]], rec: Any, label: str) -> str:
    stats: dict[str, list[int]] = {}
    short: dict[str, str] = {}  # what a bar's label says: fewer digits (the full name: tooltip)
    for r in hist:
        if r["kind"] != "compare":
            continue
        a, b = _option_name(study, r, "a"), _option_name(study, r, "b")
        short.setdefault(a, _option_name(study, r, "a", 3))
        short.setdefault(b, _option_name(study, r, "b", 3))
        win = a if int(r["answer"]) == 0 else b
        for nm in {a, b}:  # a duel of an option with itself counts once
            stats.setdefault(nm, [0, 0])
            stats[nm][1] += 1
        stats[win][0] += 1
    if not stats:  # a method's favourite before any answer is no recommendation: none shown
        return _message("no answers yet", label)
    rec_name = None
    rpt = _rec_point(study, rec)
    if rpt is not None:
        space = study.space
        labels = getattr(study.problem, "labels", None)
        if isinstance(space, CandidateSet):
            i = int(space.index_of(rpt[None, :])[0])
            if labels is not None and 0 <= i < len(labels):
                rec_name = str(labels[i])
        if rec_name is None:
            named = dict(zip(study.names, (float(v) for v in rpt)))
            rec_name = ", ".join(f"{k}={_fmt(v)}" for k, v in named.items())
            short.setdefault(rec_name, ", ".join(f"{k}={_fmt(v, 3)}" for k, v in named.items()))
        short.setdefault(rec_name, rec_name)
    rows = sorted(stats.items(), key=lambda kv: (-_wilson(*kv[1])[1], -kv[1][0]))[:20]
    if rec_name is not None and all(nm != rec_name for nm, _ in rows):
        # the recommendation is always drawn: first if it was never in a duel, else in the
        # place of the last row shown
        if rec_name in stats:
            rows = [*rows[:19], (rec_name, stats[rec_name])]
        else:
            rows = [(rec_name, [0, 0]), *rows[:19]]
    layout = _LAYOUT.get()
    names = {nm: _lines(short[nm], layout.pref_name_chars, 2) for nm, _ in rows}
    bar_h = 28 if any(len(v) > 1 for v in names.values()) else 18
    left = layout.pref_left
    never = rec_name is not None and rec_name not in stats
    caption = _lines(
        (
            f"recommendation of {study.method}: {short[rec_name]} (gold"
            + ("; it has not been in a duel yet" if never else "")
            + ")"
            if rec_name
            else "no recommendation yet"
        )
        + ". Bars: the answers' win rates, not the method's model.",
        layout.caption_chars,
    )
    top = 30 + bar_h * len(rows) + 44  # the caption's first line, below the x axis's label
    height = top + 14 * (len(caption) - 1) + 8
    p = _Panel(
        left,
        30,
        _width() - left - 20,
        bar_h * len(rows),
        (0.0, 1.0),
        (0, len(rows)),
        "win rate of each option (95 % Wilson interval)",
        "share of its duels won",
        "",
    )
    body = []
    for k, (nm, (w, n)) in enumerate(rows):
        rate, lo, hi = _wilson(w, n)
        yc = len(rows) - k - 0.5
        Y = p.sy(yc)
        star = nm == rec_name
        colour = "#ffd700" if star else _BLUE
        lines = names[nm]
        y0 = Y + 4 - 6.5 * (len(lines) - 1)
        tspans = "".join(
            f'<tspan x="{left - 6}" y="{y0 + 13 * j:.1f}">{_esc(line)}</tspan>'
            for j, line in enumerate(lines)
        )
        body.append(
            '<text text-anchor="end"' + (' font-weight="bold"' if star else "") + f">{tspans}"
            f"<title>{_esc(nm)}</title></text>"
        )
        if n == 0:  # the recommendation, never in a duel: no rate to draw
            body.append(
                f'<rect x="{p.sx(0):.1f}" y="{Y - 6:.1f}" width="12" height="12" fill="{colour}" '
                f'stroke="#222" stroke-width="0.5"/><text x="{p.sx(0) + 18:.1f}" '
                f'y="{Y + 4:.1f}" fill="#555">not in a duel yet: no win rate</text>'
            )
            continue
        body.append(
            f'<rect x="{p.sx(0):.1f}" y="{Y - 6:.1f}" width="{p.sx(rate) - p.sx(0):.1f}" '
            f'height="12" fill="{colour}" stroke="#222" stroke-width="0.5">'
            f"<title>{_esc(nm)}: won {w} of {n}</title></rect>"
        )
        body.append(
            f'<line x1="{p.sx(lo):.1f}" y1="{Y:.1f}" x2="{p.sx(hi):.1f}" y2="{Y:.1f}" '
            'stroke="#222" stroke-width="1.5"/>'
            f'<line x1="{p.sx(lo):.1f}" y1="{Y - 4:.1f}" x2="{p.sx(lo):.1f}" y2="{Y + 4:.1f}" '
            'stroke="#222"/>'
            f'<line x1="{p.sx(hi):.1f}" y1="{Y - 4:.1f}" x2="{p.sx(hi):.1f}" y2="{Y + 4:.1f}" '
            'stroke="#222"/>'
        )
    p.ylim = (0, len(rows))
    p.axes()
    # the y ticks of axes() are meaningless here: drop them, keep the frame, x ticks and title
    p.parts = [s for s in p.parts if 'text-anchor="end"' not in s]
    foot = "".join(
        f'<text x="8" y="{top + 14 * j}" fill="#555">{_esc(line)}</text>'
        for j, line in enumerate(caption)
    )
    n_duels = sum(1 for r in hist if r["kind"] == "compare")
    lead = f"{len(stats)} options in {n_duels} duels"
    if len(rows) < len(stats):
        lead += f" ({len(rows)} drawn, by the lower end of their interval)"
    if rec_name is not None:
        w, n = stats.get(rec_name, (0, 0))
        lead += f". The recommendation of {study.method}: {rec_name}" + (
            f", won {w} of {n} duels." if n else ", in no duel yet."
        )
    else:
        lead += ". No recommendation yet."
    return _describe(_document([p.svg(), *body, foot], height, label), lead)


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


# -- the safe set's growth -------------------------------------------------------------------------
#: (storage URL, study name) -> (rows replayed, their (query_id, told_at), policy, boundaries)
_GROWTH: dict[tuple[str, str], tuple[list[tuple[Any, Any]], Any, list[np.ndarray]]] = {}
_GROWTH_LOCK = threading.Lock()
_GROWTH_REPLAY: dict[tuple[str, str], threading.Lock] = {}


def _next_certified(policy: Any) -> np.ndarray:
    """The certified safe boundary per x (grid indices of s, (n_x,)) the policy's next query is
    chosen under: what the method itself commits (``certified``, reported by ``describe()`` and
    ``Study.status()``) when it proposes that query, read from a copy that proposes it.

    During the initial safe-seed design the next query is a seed at the lowest level, chosen
    without the safe sets, so nothing new is certified: the posterior's hypothetical set (under
    the starting hyperparameters, before any fit) is not what the method certifies."""
    if policy.pending is not None:  # already proposed: its certification is committed
        return np.asarray(policy.certified, dtype=np.int64).copy()
    twin = copy.deepcopy(policy)
    try:
        twin.ask()
    except Exception:  # noqa: BLE001 - a picture never fails: what is committed so far
        return np.asarray(policy.certified, dtype=np.int64).copy()
    return np.asarray(twin.certified, dtype=np.int64).copy()


def safe_growth(study: Any, history: list[dict[str, Any]] | None = None) -> list[np.ndarray]:
    """The certified safe set after each answer in effect: one array of boundary indices
    ``s_t^{(x)}`` (n_x,) per history row (M-SafeOpt, Alg. 1, eq. 14), oldest first: the set the
    method itself certified for its next query (its ``certified``, which ``describe()`` and
    ``Study.status()`` report as ``certified_fraction``), not the posterior's own set, which
    during the initial safe seeds no query is chosen under.

    Replayed from the study's history through a fresh policy built from its configuration (the
    replay that loading a study checks). Kept per study in this process and continued from the
    last row drawn, so a page pays one policy step per new answer; an undo (a history that no
    longer starts with the rows replayed) starts again. Stops early, with what it has, if the
    replay ever asks a different query than the one stored.

    ``history``: ``study.history()`` read by the caller (a server reads it under the study's
    lock and replays without holding it; nothing else of the study changes after loading).
    """
    if not family_traits(study.family).growth_picture or not hasattr(study.policy, "certified"):
        return []
    hist = study.history() if history is None else history
    key = (str(study.storage_url), str(study.name))
    with _GROWTH_LOCK:
        replay_lock = _GROWTH_REPLAY.setdefault(key, threading.Lock())
    with replay_lock, one_blas_thread():  # one replay per study at a time; the log's bits
        return _replay_growth(study, hist, key)


def _replay_growth(
    study: Any, hist: list[dict[str, Any]], key: tuple[str, str]
) -> list[np.ndarray]:
    rows = [(r["query_id"], r["told_at"]) for r in hist]
    with _GROWTH_LOCK:
        cached = _GROWTH.get(key)
    if cached is not None and rows[: len(cached[0])] == cached[0]:
        done, policy, growth = list(cached[0]), cached[1], list(cached[2])
    else:
        from boloop.algorithms.registry import make_policy

        done, growth = [], []
        policy = make_policy(study.method, study.problem, study.seed, **study.policy_options)
    waiting = None  # the row told last, whose boundary is read when the next query is asked
    for row, sig in zip(hist[len(done) :], rows[len(done) :]):
        if policy is None:  # an earlier replay of this history stopped: draw what it had
            break
        try:
            if row["source"] == "query":
                q = policy.ask()
                if q.id != row["query_id"]:
                    policy = None
                    break
                if waiting is not None:  # the method certified this before proposing q
                    done.append(waiting)
                    growth.append(np.asarray(policy.certified, dtype=np.int64).copy())
                    waiting = None
                policy.tell(q.id, row["answer"])
            else:
                if waiting is not None:
                    done.append(waiting)
                    growth.append(_next_certified(policy))
                    waiting = None
                x = np.array([[row["params"][n] for n in study.names]], dtype=np.float64)
                policy.observe(x, [row["answer"]])
        except Exception:  # noqa: BLE001 - a picture never fails; draw what was replayed
            policy = None
            break
        waiting = sig
    if waiting is not None and policy is not None:
        done.append(waiting)
        growth.append(_next_certified(policy))
    with _GROWTH_LOCK:
        _GROWTH[key] = (done, policy, growth)
    return growth


#: the growth picture's colour key: at most this many colours (levels of s grouped beyond it)
_MAX_LEVEL_KEYS = 8


def _level_keys(
    s_vals: np.ndarray, used: np.ndarray, unit: str = ""
) -> tuple[dict[int, int], list[str], list[str]]:
    """The growth picture's discrete colour key for the level indices ``used`` (of ``s_vals``):
    each level its own key while there are at most :data:`_MAX_LEVEL_KEYS`, else that many runs
    of consecutive used levels. Returns the key of each used level, each key's colour (the
    ramp at the key's place among all levels: the lowest dark, the highest yellow, whatever
    was used) and its text (the level of s, or the range of a run, followed by ``unit``: s's
    unit, if any)."""
    levels = sorted({int(k) for k in np.asarray(used).ravel()})
    n_keys = min(len(levels), _MAX_LEVEL_KEYS)
    runs = [
        levels[(j * len(levels)) // n_keys : ((j + 1) * len(levels)) // n_keys]
        for j in range(n_keys)
    ]
    top = max(s_vals.size - 1, 1)
    key, colours, texts = {}, [], []
    for j, run in enumerate(runs):
        for k in run:
            key[k] = j
        colours.append(_colour(0.5 * (run[0] + run[-1]) / top))
        lo, hi = _fmt(s_vals[run[0]]), _fmt(s_vals[run[-1]])
        texts.append(
            (lo if run[0] == run[-1] else f"{lo} to {hi}")
            + (f" {unit}" if unit else "")
            + (" (the highest)" if run[-1] == s_vals.size - 1 else "")
        )
    if len(set(colours)) < len(colours):  # close levels of a fine grid: spread them instead
        colours = [_colour(j / max(n_keys - 1, 1)) for j in range(n_keys)]
    return key, colours, texts


def growth_svg(
    study: Any, history: list[dict[str, Any]] | None = None, width: int = WIDTH
) -> str | None:
    """The safe set's growth (SVG), or None outside the safe family: the certified share of the
    space after each answer and, for one x parameter, the certified boundary of every x after
    each answer (for several, its lowest, median and highest level over the settings).

    The boundary's colours are discrete, one per level of s (runs of levels on a finer grid),
    and the key lists exactly the colours drawn, each with the level it stands for; a set that
    never grew (a method stuck at the lowest level) says so in words.

    ``width``: the picture's width in SVG units, drawn at as many CSS px unless scaled
    (:data:`PHONE_WIDTH`: a phone's, the same text in a narrower picture with fewer ticks)."""
    with _at_width(width):
        return _growth_svg(study, history)


def _growth_svg(study: Any, history: list[dict[str, Any]] | None) -> str | None:
    label = f"safe set growth of study {study.name}"
    growth = safe_growth(study, history)
    if not family_traits(study.family).growth_picture:
        return None
    if not growth:
        return _message("no answers yet: only the lowest level is known to be safe", label)
    space: SafeSpace = study.space
    names = study.names
    units = _units(study)
    unit = f" {units[names[0]]}" if units.get(names[0]) else ""
    s_vals = np.asarray(space.s_values, dtype=np.float64)
    B = np.vstack(growth)  # (answers, n_x)
    n = B.shape[0]
    t = np.arange(1, n + 1, dtype=np.float64)
    share = _certified_share(growth, s_vals.size)
    p = _panel(
        0, (0.5, n + 0.5), (0.0, 1.0), "certified safe share of the space", "answers", "share"
    )
    p.axes()
    p.steps(t, share, _GREEN)
    if np.all(B == B[0]):  # no growth at all: say it, a flat line alone reads as a broken chart
        where = (
            f"only the lowest {names[0]} ({_fmt(s_vals[0])}{unit})"
            if np.all(B == 0)
            else f"{share[0]:.0%} of the space"
        )
        p.parts.append(
            _wrapped(
                p.x0 + 6,
                p.y0 + 16,
                f"no growth: {where} is certified after every answer",
                ' fill="#333"',
            )
        )
    items: list[tuple[str, str] | tuple[str, str, str]] = []
    xp = np.asarray(space.x_points, dtype=np.float64)
    level = s_vals[B]  # (answers, n_x): the certified level of s per x
    if xp.shape[1] == 1:
        xv = xp[:, 0]
        xc = _x_cells(xv)
        step = max(1, math.ceil(n * xv.size / 3000))  # keeps the picture small
        key, colours, texts = _level_keys(s_vals, B[0:n:step], units.get(names[0], ""))
        if len(colours) == 1:
            title = (
                f"certified {names[0]} per {names[1]} after each answer: up to {texts[0]} "
                "throughout"
            )
        else:
            title = f"certified {names[0]} per {names[1]} after each answer (colour: key below)"
        q = _panel(
            1,
            xc.limits,
            (0.5, n + 0.5),
            title,
            _axis_label(names[1], units, _xlabel_chars()),
            "answers",
        )
        for k in range(0, n, step):
            row = k + 1 + (step - 1) / 2
            for i in range(xv.size):
                q.span(
                    xc.lo[i], xc.hi[i], row - step / 2, row + step / 2, colours[key[int(B[k, i])]]
                )
        q.axes()
        items += [(c, f"{names[0]} up to {text}") for c, text in zip(colours, texts)]
    else:
        q = _panel(
            1, (0.5, n + 0.5), _cells(s_vals, s_vals[0], s_vals[-1]).limits,
            f"certified {names[0]} over the {xp.shape[0]} settings: lowest, median, highest",
            "answers", _axis_label(names[0], units, YLABEL_CHARS),
        )  # fmt: skip
        q.axes()
        q.band(t, level.min(axis=1), level.max(axis=1), _GREEN)
        q.steps(t, np.median(level, axis=1), _GREEN)
        # the band is drawn translucent (band()): its key is the colour it shows on white
        items.append((_tint(_GREEN, _BAND_OPACITY), "lowest to highest over the settings"))
        items.append((_GREEN, "median over the settings", ""))
    lead = _growth_lead(growth, share)
    return _describe(_with_legend([p.svg(), q.svg()], 2 * PANEL_H, items, label), lead)


def _certified_share(growth: list[np.ndarray], s_size: int) -> np.ndarray:
    """After each answer, the share of the space certified safe: per x setting, its certified
    levels of s (``b + 1`` of ``s_size``), averaged over the settings."""
    return np.mean((np.vstack(growth) + 1) / s_size, axis=1)


def _growth_lead(growth: list[np.ndarray], share: np.ndarray) -> str:
    """The growth in one or two sentences of numbers (the picture's ``<desc>``); ``share``:
    :func:`_certified_share` of ``growth``."""
    n = len(growth)
    lead = (
        f"{n} answer{'s' if n != 1 else ''}. Certified safe share of the space: {share[0]:.0%} "
        f"after the first answer, {share[-1]:.0%} after the last"
    )
    grew = [k + 1 for k in range(1, n) if np.any(growth[k] != growth[k - 1])]
    if grew:
        lead += f"; it grew at {len(grew)} answer{'s' if len(grew) > 1 else ''}, last at {grew[-1]}."
    else:
        lead += "; it never grew."
    return lead


def _runs(values: np.ndarray) -> list[tuple[int, int]]:
    """The runs of equal consecutive values: (first index, last index) each."""
    out, start = [], 0
    for k in range(1, values.size + 1):
        if k == values.size or values[k] != values[start]:
            out.append((start, k - 1))
            start = k
    return out


def growth_numbers(
    study: Any, history: list[dict[str, Any]] | None = None
) -> tuple[str, list[tuple[str, str]]]:
    """The safe set's growth (:func:`growth_svg`) in numbers, for whoever cannot see the
    picture: its description (a sentence) and one row per answer in effect, ``("after answer
    k", what the method certified then)``: the certified share of the space and, for one x
    parameter, the certified level of s on each run of x sharing it (for several, the lowest,
    median and highest level over the settings), exact where the picture groups levels into at
    most eight colours. ``("", [])`` outside the safe family.

    Read from :func:`safe_growth` (the same replay, kept per study)."""
    if not family_traits(study.family).growth_picture:
        return "", []
    growth = safe_growth(study, history)
    if not growth:
        return "No answers yet: only the lowest level is known to be safe.", []
    space: SafeSpace = study.space
    names = study.names
    units = _units(study)
    unit = f" {units[names[0]]}" if units.get(names[0]) else ""
    s_vals = np.asarray(space.s_values, dtype=np.float64)
    xp = np.asarray(space.x_points, dtype=np.float64)
    share = _certified_share(growth, s_vals.size)
    rows = []
    for k, b in enumerate(growth):
        b = np.asarray(b)
        level = s_vals[b]
        value = f"{share[k]:.0%} certified safe; "
        if xp.shape[1] == 1:
            parts = []
            for i0, i1 in _runs(b):
                x_unit = f" {units[names[1]]}" if units.get(names[1]) else ""
                where = (
                    _set(names[1], xp[i0, 0], units)
                    if i0 == i1
                    else f"{names[1]} {_fmt(xp[i0, 0])} to {_fmt(xp[i1, 0])}{x_unit}"
                )
                parts.append(f"{names[0]} up to {_fmt(float(level[i0]))}{unit} at {where}")
            value += "; ".join(parts)
        else:
            value += (
                f"{names[0]} up to {_fmt(float(level.min()))}{unit} (lowest), "
                f"{_fmt(float(np.median(level)))}{unit} (median), "
                f"{_fmt(float(level.max()))}{unit} (highest)"
            )
        rows.append((f"after answer {k + 1}", value))
    return _growth_lead(growth, share), rows


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
