"""One plotting area inside a picture (:class:`_Panel`: linear scales, axes, lines, bands,
marks, cells, its key) and the shapes it draws (crosses, triangles, hatching, the plus and minus
glyphs that say a side of a map without colour); :func:`_panel` places one in a picture's grid
of rows and columns, :func:`_with_legend` puts a picture's panels and their key in a document.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, SupportsFloat

import numpy as np

from boloop.study.pictures.svg import (
    _CHAR_W,
    _MARGIN,
    PANEL_H,
    _document,
    _esc,
    _fmt,
    _nice_ticks,
    _width,
    _wrapped,
    _x_ticks,
)

#: legend markers (Panel.legend)
_DOT, _CROSS, _HATCH = "marker:dot", "marker:cross", "marker:hatch"
_TRIANGLE = "marker:triangle"
#: a level-set class's key: its colour with a plus (above), a minus (below), or a dashed border
#: (within 2 std: not decided), as the map draws them (:func:`_class_marks`)
_PLUS, _MINUS, _DASHED = "marker:plus", "marker:minus", "marker:dashed"
#: the opacity of a band (mean +- 2 std, lowest to highest)
_BAND_OPACITY = 0.22


def _tick_text(t: float, whole: bool) -> str:
    """A tick's label: on an axis that counts, the whole number written out (20000, not
    ``_fmt``'s 2e+04 for a count of answers)."""
    return str(int(round(t))) if whole and math.isfinite(t) else _fmt(t)


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
        counts: str = "",
    ) -> None:
        self.x0, self.y0, self.w, self.h = x0, y0, w, h
        #: the axes that count (answers, wins), "x", "y" or both: whole-number ticks only
        self.counts = counts
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
            for t in _x_ticks(*self.xlim, self.w, "x" in self.counts):
                X = self.sx(t)
                p.append(
                    f'<line x1="{X:.1f}" y1="{self.y0 + self.h:.1f}" x2="{X:.1f}" '
                    f'y2="{self.y0 + self.h + 4:.1f}" stroke="#444"/>'
                    f'<text x="{X:.1f}" y="{self.y0 + self.h + 15:.1f}" text-anchor="middle">'
                    f"{_esc(_tick_text(t, 'x' in self.counts))}</text>"
                )
        for t in _nice_ticks(*self.ylim, whole="y" in self.counts):
            Y = self.sy(t)
            p.append(
                f'<line x1="{self.x0 - 4:.1f}" y1="{Y:.1f}" x2="{self.x0:.1f}" y2="{Y:.1f}" '
                f'stroke="#444"/><text x="{self.x0 - 6:.1f}" y="{Y + 4:.1f}" text-anchor="end">'
                f"{_esc(_tick_text(t, 'y' in self.counts))}</text>"
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


def _panel(
    row: int,
    xlim: tuple[float, float],
    ylim: tuple[float, float],
    title: str,
    xlabel: str,
    ylabel: str,
    col: int = 0,
    ncols: int = 1,
    counts: str = "",
) -> _Panel:
    left, right, top, bottom = _MARGIN
    cw = (_width() - left - right - (ncols - 1) * left) / ncols
    h = PANEL_H - top - bottom
    return _Panel(
        left + col * (cw + left),
        row * PANEL_H + top,
        cw,
        h,
        xlim,
        ylim,
        title,
        xlabel,
        ylabel,
        counts,
    )


#: the spacing of the class map's plus and minus marks (picture units)
_GLYPH_STEP = 16.0


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
