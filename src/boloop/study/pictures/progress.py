"""The progress picture (:func:`progress_svg`): how the study went, answer by answer, as the
family declares (:func:`~boloop.algorithms.families.family_traits`); a preference study's is
:func:`boloop.study.pictures.preference._progress_compare`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from boloop.algorithms.families import family_traits
from boloop.study.pictures.classes import at_or_above
from boloop.study.pictures.panel import _CROSS, _DOT, _TRIANGLE, _panel, _with_legend
from boloop.study.pictures.preference import _progress_compare
from boloop.study.pictures.reading import _scalar, _settings, _ylabel
from boloop.study.pictures.svg import (
    _BLUE,
    _GREEN,
    _ORANGE,
    _RED,
    PANEL_H,
    WIDTH,
    _at_width,
    _describe,
    _fmt,
    _measured,
    _message,
    _range,
)


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
        n_up = int(np.sum(at_or_above(y, h)))
        return f"{len(y)} measurements, {n_up} at or above the threshold {_fmt(h)}."
    vals = [(_scalar(r["answer"]), i + 1) for i, r in enumerate(hist) if r["kind"] == "evaluate"]
    labels = [bool(r["answer"]) for r in hist if r["kind"] == "label"]
    lead = f"{len(vals)} evaluations"
    if vals:
        lead += f", the lowest f {_fmt(min(vals)[0])} (answer {min(vals)[1]})"
    if labels:
        lead += f"; {sum(labels)} labels accepted, {len(labels) - sum(labels)} rejected"
    return lead + "."


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
        p = _panel(
            0,
            (0.5, len(hist) + 0.5),
            _range(f),
            "f (maximised)",
            "",
            _ylabel(study, "f"),
            counts="x",
        )
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
            _ylabel(study, "g"),
            counts="x",
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
        up = at_or_above(y, h)
        above = np.cumsum(up)
        p = _panel(
            0,
            (0.5, len(hist) + 0.5),
            _range(np.append(y, h)),
            "measurements",
            "",
            _ylabel(study),
            counts="x",
        )
        p.axes()
        p.hline(h, _RED, f"threshold {_fmt(h)}")
        for i in range(len(hist)):
            (p.triangle if up[i] else p.dot)(
                n[i], y[i], _ORANGE if up[i] else _BLUE, title=f"answer {n[i]}: {_measured(y[i])}"
            )
        q = _panel(
            1,
            (0.5, len(hist) + 0.5),
            (0, max(1.0, float(above[-1])) * 1.05),
            "measured points at or above the threshold (cumulative)",
            "answers",
            "count",
            counts="xy",
        )
        q.axes()
        q.steps(n, above, _ORANGE)
        body += [p.svg(), q.svg()]
        items = [(_ORANGE, "at or above the threshold", _TRIANGLE), (_BLUE, "below", _DOT)]
        return _with_legend(body, 2 * PANEL_H, items, label)
    # expert (and any family of Evaluate/Label queries): minimisation of f
    vals = [(i, _scalar(r["answer"])) for i, r in enumerate(hist) if r["kind"] == "evaluate"]
    ys = np.array([v for _, v in vals]) if vals else np.array([0.0, 1.0])
    p = _panel(
        0,
        (0.5, len(hist) + 0.5),
        _range(ys),
        "evaluations and labels",
        "answers",
        _ylabel(study),
        counts="x",
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
