"""The preference family's pictures: its progress (cumulative wins of the options that won
most, each in a style it keeps from one drawing to the next) and its model (each option's win
rate with a 95 % Wilson interval, and the recommendation).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from boloop.spaces import CandidateSet
from boloop.study.pictures.panel import _Panel, _panel, _with_legend
from boloop.study.pictures.reading import _rec_point
from boloop.study.pictures.svg import (
    _BLUE,
    _CHAR_W,
    _LAYOUT,
    _MARGIN,
    PANEL_H,
    WIDTH,
    _describe,
    _document,
    _esc,
    _fmt,
    _lines,
    _message,
    _width,
)


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
        counts="xy",
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
