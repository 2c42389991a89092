"""A user's own experiment: named parameters from Python, a JSON/TOML file, or a CSV table.

The space of a real experiment is described by a small document (a ``dict``, or a JSON/TOML
file with the same keys):

.. code-block:: toml

    # continuous parameters with bounds (a Box), or a grid when "grid" is given
    [[parameters]]
    name = "temperature"
    low = 20.0
    high = 80.0
    grid = 31            # optional: points per axis (a finite candidate grid)
    unit = "degC"        # optional: shown next to the value (web page, questions, pictures)

    [[parameters]]
    name = "ratio"
    low = 0.0
    high = 1.0
    grid = 21

    # or a table of options, one row per option: numeric columns are the parameters, text
    # columns name the option (the preference family's arms)
    candidates = "recipes.csv"

    threshold = 0.5      # level-set family: the level h of {x : f(x) >= h}

    description = "..."  # optional: what the study is, shown to people
    [measurement]        # optional: what is measured, shown to people (boloop.study.measured)
    name = "hardness"    # a safe study names f and g: [measurement.f], [measurement.g]
    unit = "HV"

    # safe family (M-SafeOpt): the monotone parameter, the safety threshold h, safe starts
    monotone = "dose"    # its lowest value is the safe starting level (Sec. 2 of the paper):
    h = 0.9              # (dose_min, x) must be safe (g <= h) for every x
    safe_seeds = [{dose = 0.0, weight = 0.5}]   # optional: must lie at the lowest dose

    [settings]           # anything else the method reads from problem settings
    noise_variance = 1e-4

:func:`load_space_file` turns a file into this normal form (CSV tables are read into it, so a
study keeps its options even if the file changes later); :func:`build_experiment` makes the
:class:`UserExperiment` problem that ``make_policy`` takes. Everything stays JSON, so a study's
configuration is stored verbatim in its ``created`` event.
"""

from __future__ import annotations

import csv
import io
import json
import math
import numbers
import os
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from boloop._validation import known_keys, meant_keys
from boloop.algorithms.families import family_traits, space_key_owners
from boloop.errors import InvalidInputError, OutOfSpaceError
from boloop.problems.base import Problem
from boloop.spaces import (
    Box,
    CandidateSet,
    SafeSpace,
    Space,
    axis_values,
    format_value,
    grid_point,
    grid_points_per_axis,
)
from boloop.study.measured import check_measurement_outputs, normalise_measurement
from boloop.study.media import check_media, embed_media, is_media_name

__all__ = [
    "UserExperiment",
    "build_experiment",
    "check_family_keys",
    "check_safety_limit",
    "implied_family",
    "pin_defaults",
    "load_space_file",
    "normalise_space",
    "read_candidates_csv",
    "defined_params",
    "defined_values",
    "params_to_point",
    "point_to_params",
]

SPACE_FORMAT = 1
#: grid points per axis when a parameter has a ``grid`` and the family declares no default
#: (a family that needs a finite set declares its own: ``FamilyTraits.default_grid``)
_GRID = 20
#: the keys of one entry of ``parameters``
PARAMETER_KEYS = ("name", "low", "high", "grid", "unit")
_KNOWN_KEYS = {
    "format",
    "family",
    "parameters",
    "candidates",
    "threshold",
    "monotone",
    "h",
    "safe_seeds",
    "settings",
    "description",
    "measurement",
}


# -- reading files ---------------------------------------------------------------------------
def load_space_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a ``.json``, ``.toml`` or ``.csv`` space file into the normal form (a JSON dict).

    A CSV file alone is a table of options. Relative ``candidates`` paths in JSON/TOML are
    resolved against the file's directory.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise InvalidInputError(f"space file {path!r} does not exist")
    ext = os.path.splitext(path)[1].lower()
    if ext == ".csv":
        table = embed_media(read_candidates_csv(path), os.path.dirname(os.path.abspath(path)))
        return normalise_space({"candidates": table})
    with open(path, "rb") as fh:
        raw = fh.read()
    if ext == ".json":
        try:
            doc = json.loads(raw.decode("utf-8"))
        except ValueError as exc:
            raise InvalidInputError(f"space file {path!r} is not valid JSON: {exc}") from exc
    elif ext == ".toml":
        doc = _load_toml(raw, path)
    else:
        raise InvalidInputError(f"space file {path!r} must end in .json, .toml or .csv")
    if not isinstance(doc, dict):
        raise InvalidInputError(f"space file {path!r} must hold an object/table at the top")
    cand = doc.get("candidates")
    if isinstance(cand, str):
        cpath = cand if os.path.isabs(cand) else os.path.join(os.path.dirname(path), cand)
        doc = dict(doc)
        doc["candidates"] = embed_media(
            read_candidates_csv(cpath), os.path.dirname(os.path.abspath(cpath))
        )
    elif isinstance(cand, dict) and cand.get("media") and not cand.get("media_files"):
        # the space file's own media key: files beside the space file, stored with the study
        doc = dict(doc)
        doc["candidates"] = embed_media(cand, os.path.dirname(os.path.abspath(path)))
    return normalise_space(doc)


def _load_toml(raw: bytes, path: str) -> dict[str, Any]:
    try:
        import tomllib  # Python >= 3.11
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError as exc:
            raise InvalidInputError(
                "reading TOML on Python 3.10 needs the 'tomli' package (pip install 'boloop[toml]'), "
                "or use a JSON space file"
            ) from exc
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"space file {path!r} is not valid TOML: {exc}") from exc


def read_candidates_csv(source: str | os.PathLike[str] | io.TextIOBase) -> dict[str, Any]:
    """A CSV table of options -> ``{"columns": [...], "rows": [[...]], "labels": [...] | None}``.

    The first row names the columns. Columns whose every value is a finite number are the
    parameters; a text column (at most one) names each option; columns whose every value is a
    media file name (``photo.jpg``, ``take1.wav``; see :mod:`boloop.study.media`) name a file
    beside the table shown with each option (``"media": {column: [file names]}``). A column of
    which at least half the values are finite numbers is a parameter column with a typo: the
    first value that is not a number is an :class:`InvalidInputError` naming its line, column
    and cell (rather than the whole column silently becoming the options' names).
    """
    if isinstance(source, io.TextIOBase):
        text = source.read()
        where = "CSV input"
    else:
        where = f"CSV file {os.fspath(source)!r}"
        if not os.path.isfile(source):
            raise InvalidInputError(f"{where} does not exist")
        with open(source, "rb") as fh:
            text = _utf8_text(fh.read(), where)
    reader = csv.reader(io.StringIO(text))
    # each non-blank record with the line of the file it ends on (a spreadsheet's row number)
    records = [(reader.line_num, r) for r in reader if any(c.strip() for c in r)]
    if len(records) < 2:
        raise InvalidInputError(f"{where} needs a header row and at least one option")
    header = [h.strip() for h in records[0][1]]
    lines = [n for n, _ in records[1:]]
    body = [r for _, r in records[1:]]
    for i, r in zip(lines, body):
        if len(r) != len(header):
            raise InvalidInputError(
                f"{where} line {i} has {len(r)} fields, header has {len(header)}"
            )

    def finite_number(cell: str) -> bool:
        try:
            return math.isfinite(float(cell))
        except ValueError:
            return False

    numeric: list[int] = []
    text_cols: list[int] = []
    media_cols: list[int] = []
    for j, name in enumerate(header):
        if not name:
            raise InvalidInputError(f"{where}: column {j + 1} has no name")
        vals = [r[j].strip() for r in body]
        try:
            nums = [float(v) for v in vals]
        except ValueError:
            finite = [finite_number(v) for v in vals]
            # a numeric column with a typo -- except a first column of distinct values, which
            # may be the options' names even if most look like numbers (sample ids 101, 103b)
            name_like = j == 0 and len(set(vals)) == len(vals)
            if 2 * sum(finite) >= len(vals) and not name_like:
                k = finite.index(False)
                raise InvalidInputError(
                    f"{where} line {lines[k]}, column {name!r}: {vals[k]!r} is not a finite "
                    f"number, while {sum(finite)} of the column's {len(vals)} values are "
                    f"({len(vals) - sum(finite)} not); correct the cell (a column of names that "
                    "look like numbers must be the first column, its names all different)"
                ) from None
            (media_cols if all(is_media_name(v) for v in vals) else text_cols).append(j)
            continue
        if not all(math.isfinite(v) for v in nums):
            raise InvalidInputError(f"{where}: column {name!r} has NaN or infinite values")
        numeric.append(j)
    if not numeric:
        raise InvalidInputError(f"{where} has no numeric column to use as parameters")
    if len(text_cols) > 1:
        raise InvalidInputError(
            f"{where} has several text columns {[header[j] for j in text_cols]}; keep one (the "
            "option's name) and encode the others as numbers"
        )
    out: dict[str, Any] = {
        "columns": [header[j] for j in numeric],
        "rows": [[float(r[j]) for j in numeric] for r in body],
        "labels": [r[text_cols[0]].strip() for r in body] if text_cols else None,
        "label_column": header[text_cols[0]] if text_cols else None,
    }
    if media_cols:
        out["media"] = {header[j]: [r[j].strip() for r in body] for j in media_cols}
    return out


def _utf8_text(raw: bytes, where: str) -> str:
    """``raw`` decoded as UTF-8 (a byte order mark dropped), or an :class:`InvalidInputError`
    naming ``where``, the line and the first byte that is not UTF-8: a table saved by a
    spreadsheet in a legacy encoding (Windows-1252's ``é`` is the byte 0xe9) is refused with
    what to do, never a traceback."""
    body = raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = body[: exc.start].count(b"\n") + 1
        raise InvalidInputError(
            f"{where} is not UTF-8 text: byte 0x{body[exc.start]:02x} on line {line} is not "
            "UTF-8 (a file saved in another encoding, e.g. a spreadsheet's plain CSV); save it "
            "as UTF-8 (a spreadsheet's 'CSV UTF-8') and try again"
        ) from None


# -- the normal form ---------------------------------------------------------------------------
def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInputError(f"{what} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise InvalidInputError(f"{what} must be finite, got {value!r}")
    return v


def normalise_space(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Check a space document and return its JSON normal form (see the module docstring)."""
    if not isinstance(doc, Mapping):
        raise InvalidInputError(f"space must be a mapping, got {type(doc).__name__}")
    unknown = sorted(set(doc) - _KNOWN_KEYS)
    if unknown:
        raise InvalidInputError(
            f"space has unknown keys {unknown}{meant_keys(unknown, sorted(_KNOWN_KEYS))}; "
            f"valid: {sorted(_KNOWN_KEYS)}"
        )
    out: dict[str, Any] = {"format": SPACE_FORMAT}
    if doc.get("format", SPACE_FORMAT) != SPACE_FORMAT:
        raise InvalidInputError(f"space format {doc.get('format')!r} is not supported")
    params = doc.get("parameters")
    cand = doc.get("candidates")
    if (params is None) == (cand is None):
        raise InvalidInputError("space needs exactly one of 'parameters' and 'candidates'")
    if params is not None:
        if isinstance(params, Mapping) and params:
            # TOML's [parameters.temperature] tables: a natural guess, and a dictionary here
            first = next(iter(params))
            raise InvalidInputError(
                "space 'parameters' must be a list of tables, one per parameter, each with its "
                f"'name' (in TOML: [[parameters]] then name = {json.dumps(str(first))}, low = "
                f"..., high = ...); got a table of tables keyed {sorted(map(str, params))}"
            )
        if not isinstance(params, Sequence) or isinstance(params, str) or not params:
            raise InvalidInputError("space 'parameters' must be a non-empty list")
        norm = []
        for i, p in enumerate(params):
            if not isinstance(p, Mapping) or "name" not in p:
                raise InvalidInputError(f"parameters[{i}] must be a table with a 'name'")
            known_keys(p, PARAMETER_KEYS, f"parameters[{i}]", "(grid: the number of grid points)")
            name = str(p["name"])
            lo = _number(p.get("low"), f"parameters[{i}] ({name}) low")
            hi = _number(p.get("high"), f"parameters[{i}] ({name}) high")
            if not lo < hi:
                raise InvalidInputError(f"parameter {name!r}: low must be < high, got {lo}, {hi}")
            if not math.isfinite(hi - lo):  # no study could be made of it (the grid overflows)
                raise InvalidInputError(
                    f"parameter {name!r}: the range from {lo:g} to {hi:g} is too wide to compute "
                    "with (high - low overflows); give the parameter in other units"
                )
            q: dict[str, Any] = {"name": name, "low": lo, "high": hi}
            if p.get("grid") is not None:
                g = p["grid"]
                if isinstance(g, bool) or not isinstance(g, numbers.Integral) or g < 2:
                    raise InvalidInputError(f"parameter {name!r}: grid must be an integer >= 2")
                q["grid"] = int(g)
            if p.get("unit") is not None:  # shown to people next to the value
                q["unit"] = str(p["unit"])
            norm.append(q)
        names = [q["name"] for q in norm]
        if len(set(names)) != len(names):
            raise InvalidInputError(f"parameter names must be distinct, got {names}")
        out["parameters"] = norm
    else:
        if not isinstance(cand, Mapping) or "columns" not in cand or "rows" not in cand:
            raise InvalidInputError(
                "space 'candidates' must be a CSV path or {'columns': [...], 'rows': [[...]]}"
            )
        for key in ("columns", "rows", "labels"):  # a string would be read letter by letter
            given = cand.get(key)
            if isinstance(given, str | bytes):
                raise InvalidInputError(
                    f"candidates {key!r} must be a list, got {type(given).__name__} {given!r:.60}"
                )
        cols = [str(c) for c in cand["columns"]]
        rows = [[_number(v, f"candidates row {i}") for v in r] for i, r in enumerate(cand["rows"])]
        if not rows or any(len(r) != len(cols) for r in rows):
            raise InvalidInputError(f"candidates rows must each have {len(cols)} values")
        CandidateSet(rows, names=cols)  # checks names
        labels = cand.get("labels")
        if labels is not None and len(labels) != len(rows):
            raise InvalidInputError("candidates labels must have one entry per row")
        out["candidates"] = {
            "columns": cols,
            "rows": rows,
            "labels": None if labels is None else [str(s) for s in labels],
            "label_column": cand.get("label_column"),
        }
        media = check_media(cand, len(rows))
        if media is not None:
            out["candidates"]["media"], out["candidates"]["media_files"] = media
    names = _names(out)
    if doc.get("family") is not None:
        out["family"] = str(doc["family"])
    if doc.get("description"):
        out["description"] = str(doc["description"])
    if doc.get("measurement") is not None:  # shown to people only (boloop.study.measured)
        out["measurement"] = normalise_measurement(doc["measurement"])
    if doc.get("threshold") is not None:
        out["threshold"] = _number(doc["threshold"], "threshold")
    if doc.get("monotone") is not None:
        mono = str(doc["monotone"])
        if "parameters" not in out:
            raise InvalidInputError("'monotone' needs 'parameters' (the safe space is a grid)")
        if mono not in names:
            raise InvalidInputError(f"monotone parameter {mono!r} is not one of {names}")
        if len(names) < 2:
            raise InvalidInputError(
                "the safe family needs the monotone parameter and at least one other"
            )
        out["monotone"] = mono
    if doc.get("h") is not None:
        out["h"] = _number(doc["h"], "h")
    if doc.get("safe_seeds") is not None:
        seeds = doc["safe_seeds"]
        if not isinstance(seeds, Sequence) or isinstance(seeds, str):
            raise InvalidInputError("safe_seeds must be a list of {name: value} points")
        for i, seed in enumerate(seeds):  # a misspelt name was dropped silently
            unknown = sorted(map(str, set(seed) - set(names))) if isinstance(seed, Mapping) else []
            if unknown:
                raise InvalidInputError(
                    f"safe_seeds[{i}] has unknown parameter names {unknown}; parameters: {names}"
                )
        out["safe_seeds"] = [
            {
                n: _number(s.get(n) if isinstance(s, Mapping) else None, f"safe_seeds[{i}][{n!r}]")
                for n in names
            }
            for i, s in enumerate(seeds)
        ]
    settings = doc.get("settings") or {}
    if not isinstance(settings, Mapping):
        raise InvalidInputError("space 'settings' must be a table")
    try:
        json.dumps(settings, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"space 'settings' must be plain JSON values: {exc}") from exc
    out["settings"] = dict(settings)
    return out


def _names(spec: Mapping[str, Any]) -> list[str]:
    if "parameters" in spec:
        return [p["name"] for p in spec["parameters"]]
    return list(spec["candidates"]["columns"])


# -- the problem object ----------------------------------------------------------------------------
@dataclass
class UserExperiment(Problem):
    """A :class:`Problem` without oracles: a person or an instrument answers every query.

    ``spec`` is the JSON normal form it was built from; ``labels`` names the options of a table.
    """

    spec: dict[str, Any] = field(default_factory=dict)
    labels: list[str] | None = None

    @property
    def names(self) -> list[str]:
        return list(self.space.names)

    def metric_names(self) -> list[str]:
        return []


def _check_new_names(spec: Mapping[str, Any]) -> None:
    """Refuse a parameter (or column) name no person can type or read: empty or only spaces,
    with spaces around it (a typed ``t =0.5`` names ``t``), or with a control character (a line
    break in every question that shows it). A new study's only: a stored one loads as it is."""
    for name in _names(spec):
        control = [c for c in name if unicodedata.category(c) == "Cc"]
        if not name.strip():
            why = "is empty"
        elif name != name.strip():
            why = "starts or ends with spaces"
        elif control:
            why = f"has the control character U+{ord(control[0]):04X}"
        else:
            continue
        raise InvalidInputError(
            f"parameter name {name!r} {why}: a point is typed and shown by its parameters' "
            "names (temperature=35), so give each parameter a name of visible characters"
        )


def pin_defaults(spec: Mapping[str, Any], family: str) -> dict[str, Any]:
    """``spec`` with the default grid sizes written in, so that a stored study never depends
    on this module's defaults (a later boloop with other defaults replays it unchanged); a new
    study's space, so its parameter names are checked here too (:func:`_check_new_names`)."""
    out = normalise_space(spec)
    _check_new_names(out)
    params = out.get("parameters")
    if params is None:
        return out
    traits = family_traits(family)
    g_family = traits.default_grid
    if g_family is not None or any("grid" in p for p in params):
        g0 = _GRID if g_family is None else g_family
        g0 = default_points_per_axis(params, g0, traits.max_default_grid_points)
        out["parameters"] = [{**p, "grid": p.get("grid", g0)} for p in params]
    return out


def default_points_per_axis(
    params: Sequence[Mapping[str, Any]], g0: int, max_points: int | None
) -> int:
    """Points per axis for the parameters without a ``grid``: ``g0``, or fewer, the most that
    keep the whole grid within ``max_points`` (at least 2; ``g0`` when no limit, when every
    parameter has its grid, or when the given grids alone exceed the limit, which the methods
    then refuse with their own message)."""
    free = sum(1 for p in params if "grid" not in p)
    if max_points is None or not free:
        return g0
    fixed = math.prod(int(p["grid"]) for p in params if "grid" in p)
    k = min(g0, grid_points_per_axis(max_points // fixed, free))
    return k if k >= 2 else g0


def implied_family(spec: Mapping[str, Any]) -> str | None:
    """The family a space document's own keys imply when it names none: ``threshold`` is read
    by the level-set family only, ``monotone``, ``h`` and ``safe_seeds`` by the safe family only
    (:func:`boloop.algorithms.families.space_key_owners`). ``None`` when its keys belong to no
    family; an error naming the keys and their families when they belong to several."""
    owned: dict[str, list[str]] = {}
    for key, (owner, _) in space_key_owners().items():
        if spec.get(key) is not None:
            owned.setdefault(owner, []).append(key)
    if len(owned) > 1:
        keys = "; ".join(
            f"{', '.join(map(repr, ks))} of the {fam} family" for fam, ks in sorted(owned.items())
        )
        raise InvalidInputError(
            f"the space has keys of two families ({keys}): keep those of the family you mean, "
            "or name the method (boloop methods)"
        )
    return next(iter(owned), None)


def check_family_keys(spec: Mapping[str, Any], family: str, method: str) -> None:
    """Refuse keys of another family's space (``threshold`` given to ``mr-lpf``): the method
    would ignore them silently, and the person meant another method or another file."""
    hints = family_traits(family).key_hints
    for key, (owner, meaning) in space_key_owners().items():
        if key in spec and spec[key] is not None and family != owner:
            hint = f" ({hints[key]})" if key in hints else ""
            raise InvalidInputError(
                f"the space has {key!r} ({meaning}), which only {owner} methods use; method "
                f"{method!r} is of the {family} family and would ignore it{hint}: remove it from "
                f"the space or choose a {owner} method (boloop methods --family {owner})"
            )


def check_safety_limit(spec: Mapping[str, Any], family: str, options: Mapping[str, Any]) -> None:
    """Refuse a ``threshold`` in a safe space's ``[settings]`` (or a ``threshold`` option) that
    differs from its ``h``: the safe methods take the limit under that name, and the space's
    ``h`` would silently win over the one (the option over the other); nothing is created."""
    if not family_traits(family).monotone_space or spec.get("h") is None:
        return
    h = spec["h"]
    where = {
        "[settings] threshold": (spec.get("settings") or {}).get("threshold"),
        "the option threshold": options.get("threshold"),
    }
    for what, value in where.items():
        if value is None:
            continue
        numeric = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if not numeric or float(value) != float(h):
            raise InvalidInputError(
                f"the space's safety limit is h = {format_value(h)}, but {what} = "
                f"{format_value(value)} gives another: a safe study's limit is h (g <= h); "
                f"remove threshold, or set h = {format_value(value)} if that is the limit"
            )


#: The most points a space file's grid may have (the product of its points per axis): built
#: before any method sees it, a grid of 20 points per axis in 6-D (64 million points) would
#: exhaust memory while being made. Methods have their own, lower limits (preference: 1,500).
MAX_GRID_POINTS = 1_000_000


def _check_grid_size(counts: list[int], params: list[Mapping[str, Any]]) -> None:
    total = math.prod(int(c) for c in counts)
    if total > MAX_GRID_POINTS:
        per_axis = ", ".join(f"{p['name']}: {int(c)}" for p, c in zip(params, counts))
        raise InvalidInputError(
            f"the grid would have {total:,} points ({per_axis} per axis), more than "
            f"{MAX_GRID_POINTS:,}: give a smaller 'grid' to the parameters"
        )


def build_experiment(
    spec: Mapping[str, Any], family: str, name: str = "experiment"
) -> UserExperiment:
    """The :class:`UserExperiment` of a normalised space document for ``family``.

    Parameters with ``grid`` make a finite grid, otherwise a :class:`Box`; families that need
    finite candidate sets (``preference``, ``safe``) always get a grid
    (``grid`` points per axis, default the family's ``default_grid``,
    :mod:`boloop.algorithms.families`); a family with a ``monotone_space`` (``safe``) gets a
    :class:`SafeSpace` whose first axis is the monotone parameter. Settings: ``threshold``
    (level-set), ``h``, ``monotone`` and ``safe_seeds`` (safe, as an (k, d) array in the space's
    column order) plus the document's ``settings`` table.
    """
    spec = normalise_space(spec)
    if spec.get("family") not in (None, family):
        raise InvalidInputError(
            f"the space file is for the {spec['family']!r} family, the method is {family!r}"
        )
    traits = family_traits(family)
    settings: dict[str, Any] = dict(spec["settings"])
    labels = None
    space: Space
    if traits.monotone_space:
        if any(k not in spec for k in traits.required_space_keys):
            raise InvalidInputError(traits.required_space_message)
        params = spec["parameters"]
        mono = next(p for p in params if p["name"] == spec["monotone"])
        others = [p for p in params if p["name"] != spec["monotone"]]
        g0 = _GRID if traits.default_grid is None else traits.default_grid
        s_values = np.linspace(mono["low"], mono["high"], mono.get("grid", g0))
        x_bounds = [[p["low"], p["high"]] for p in others]
        x_counts = [p.get("grid", g0) for p in others]
        _check_grid_size([mono.get("grid", g0), *x_counts], [mono, *others])
        x_points = CandidateSet.grid(x_bounds, x_counts).points
        space = SafeSpace(s_values, x_points, names=[mono["name"]] + [p["name"] for p in others])
        # the safe policies read the safety threshold h as settings["threshold"]
        settings["threshold"] = spec["h"]
        settings["h"] = spec["h"]
        settings["monotone"] = spec["monotone"]
        settings.setdefault("outputs", ("f", "g"))
    elif "candidates" in spec:
        cand = spec["candidates"]
        space = CandidateSet(cand["rows"], names=cand["columns"])
        labels = cand["labels"]
    else:
        params = spec["parameters"]
        names = [p["name"] for p in params]
        bounds = [[p["low"], p["high"]] for p in params]
        if traits.default_grid is not None or any("grid" in p for p in params):
            g0 = _GRID if traits.default_grid is None else traits.default_grid
            g0 = default_points_per_axis(params, g0, traits.max_default_grid_points)
            counts = [p.get("grid", g0) for p in params]
            _check_grid_size(counts, params)
            space = CandidateSet.grid(bounds, counts, names=names)
        else:
            space = Box([b[0] for b in bounds], [b[1] for b in bounds], names=names)
    if "threshold" in spec:
        settings["threshold"] = spec["threshold"]
    if spec.get("measurement"):
        check_measurement_outputs(spec["measurement"], tuple(settings.get("outputs") or ()))
    missing = [k for k in traits.required_settings if k not in settings]
    if missing:
        raise InvalidInputError(
            f"the {family} family needs {' and '.join(map(repr, missing))} in the space"
        )
    if "safe_seeds" in spec:
        if traits.monotone_space:
            lowest = float(space.s_values[0])  # type: ignore[union-attr]
            above = [s for s in spec["safe_seeds"] if s[spec["monotone"]] != lowest]
            if above:
                raise InvalidInputError(
                    f"safe_seeds {above} are not at the lowest value {lowest:g} of the monotone "
                    f"parameter {spec['monotone']!r}: M-SafeOpt (Sec. 2) starts from the lowest "
                    "level, which must be safe for every other parameter value, and takes no "
                    "other safe starting points"
                )
        names = list(space.names)
        settings["safe_seeds"] = np.array(
            [[s[n] for n in names] for s in spec["safe_seeds"]], dtype=np.float64
        )
    return UserExperiment(
        id=f"user/{name}",
        family=family,
        space=space,
        description=spec.get("description", ""),
        settings=settings,
        spec=spec,
        labels=labels,
    )


# -- parameter names <-> points --------------------------------------------------------------
def point_to_params(space: Space, x: Any) -> dict[str, float]:
    """``{name: value}`` of a point (d,) of ``space``."""
    arr = np.asarray(x, dtype=np.float64).reshape(-1)
    return {n: float(v) for n, v in zip(space.names, arr)}


def defined_values(space: Space) -> list[dict[float, float]] | None:
    """Per parameter of a finite ``space``, each of its grid (or option) values -> the value as
    the space file defines it: the shortest decimal, at most 15 significant digits, that is
    closer to this value than to any other of the parameter's values (the value itself when no
    shorter one is); None for a :class:`Box`.

    A grid is built with ``numpy.linspace``, whose points are off by an ulp or so from the decimal
    the space file means: on a grid of 21 points over [0, 1] the 13th is 0.6000000000000001, not
    0.6 (the float nearest 3/5); on 31 points over [100, 200] the 26th is 183.33333333333334
    (written 183.333333333333). Both name the same grid point (a study reads them back to it).
    Computed once per space (a study keeps it): naming a point is then a lookup per value.
    """
    axes = axis_values(space)
    if axes is None:
        return None
    out = []
    for values in axes:
        table: dict[float, float] = {}
        for i, v in enumerate(values.tolist()):
            short = float(f"{v:.15g}")
            if short != v and int(np.argmin(np.abs(values - short))) == i:
                table[v] = short
        out.append(table)
    return out


def defined_params(
    space: Space, params: Mapping[str, Any], defined: list[dict[float, float]] | None = None
) -> dict[str, Any]:
    """``params`` with every value that is one of its parameter's grid (or option) values
    written as the space file defines it (:func:`defined_values`; give ``defined`` when writing
    many points). Values that are not the space's own (a box's coordinates, a point added off
    the grid by an older version) are returned as they are."""
    if defined is None:
        defined = defined_values(space)
    if defined is None:
        return dict(params)
    out = dict(params)
    for name, table in zip(space.names, defined):
        v = out.get(name)
        if isinstance(v, float) and v in table:
            out[name] = table[v]
    return out


def params_to_point(space: Space, params: Mapping[str, Any], what: str = "params") -> np.ndarray:
    """The point (d,) named by ``params``; raises naming unknown, missing or bad values.

    The point must lie in the space's box; in a finite space it must name one of its points
    (:func:`boloop.spaces.grid_point`: each value a grid value, also as a person writes it with
    fewer digits), and that point of the space is returned, with the grid's own values.
    """
    if not isinstance(params, Mapping):
        raise InvalidInputError(f"{what} must map parameter names to numbers, got {params!r}")
    names = list(space.names)
    unknown = [k for k in params if k not in names]
    if unknown:
        raise InvalidInputError(
            f"{what} has unknown parameter names {unknown}; parameters: {names}"
        )
    missing = [n for n in names if n not in params]
    if missing:
        raise InvalidInputError(f"{what} is missing parameters {missing}")
    x = np.array([_number(params[n], f"{what}[{n!r}]") for n in names], dtype=np.float64)
    box = space if isinstance(space, Box) else space.box
    if not bool(box.contains(x[None, :])[0]):
        raise OutOfSpaceError(
            f"{what} {dict(zip(names, x.tolist()))} is outside the bounds "
            f"{dict(zip(names, box.bounds.tolist()))}"
        )
    if isinstance(space, CandidateSet | SafeSpace):
        # a grid value as a person writes it (193.333 for 580/3) is that grid value: the point
        # is the grid's own (one rule for the API, the CLI and the web: spaces.axis_index)
        return grid_point(space, x)
    return x
