"""The safe set's growth: :func:`safe_growth` (the certified boundary after each answer,
replayed from the log through a fresh policy and kept per study in this process), its picture
(:func:`growth_svg`) and its numbers (:func:`growth_numbers`).
"""

from __future__ import annotations

import copy
import math
import threading
from typing import Any

import numpy as np

from boloop._blas import one_blas_thread
from boloop.algorithms.families import family_traits
from boloop.spaces import SafeSpace
from boloop.study.pictures.panel import _BAND_OPACITY, _panel, _with_legend
from boloop.study.pictures.reading import YLABEL_CHARS, _axis_label, _set, _units, _xlabel_chars
from boloop.study.pictures.svg import (
    _GREEN,
    PANEL_H,
    WIDTH,
    _at_width,
    _cells,
    _colour,
    _describe,
    _fmt,
    _message,
    _tint,
    _wrapped,
    _x_cells,
)

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
    if not family_traits(study.family).growth_picture or study.policy.certified is None:
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
    was used) and its text, read after "up to" (the level of s, "2 mg"; or for a run of levels,
    "a level from 0 to 2 mg": a bare range read "up to 0 to 2 mg"), with ``unit``: s's unit,
    if any."""
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
            (lo if run[0] == run[-1] else f"a level from {lo} to {hi}")
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
        0,
        (0.5, n + 0.5),
        (0.0, 1.0),
        "certified safe share of the space",
        "answers",
        "share",
        counts="x",
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
            counts="y",
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
            "answers", _axis_label(names[0], units, YLABEL_CHARS), counts="x",
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
