"""Small studies of every family with made-up answers, shared by the picture and web tests.

The answers come from simple closed-form functions of the named parameters, so a test can
recompute what it expects; nothing here is a benchmark problem.
"""

from __future__ import annotations

import math
from typing import Any

from boloop.study import Study, create_study

#: name -> (method, space document); one per family and shape of picture
SPACES: dict[str, tuple[str, dict[str, Any]]] = {
    "lev1": (
        "randomized-straddle",
        {
            "parameters": [{"name": "temperature", "low": 0, "high": 2, "grid": 41}],
            "threshold": 0.3,
        },
    ),
    "lev2": (
        "straddle",
        {
            "parameters": [
                {"name": "temperature", "low": 0, "high": 2, "grid": 15},
                {"name": "ratio", "low": 0, "high": 1, "grid": 11},
            ],
            "threshold": 0.3,
        },
    ),
    "expert": (
        "cobol",
        {"parameters": [{"name": "a", "low": 0, "high": 1}, {"name": "b", "low": 0, "high": 1}]},
    ),
    "expert4": ("gp-lcb", {"parameters": [{"name": n, "low": 0, "high": 1} for n in "wxyz"]}),
    "pref": (
        "maxminlcb",
        {
            "candidates": {
                "columns": ["sugar", "flour"],
                "rows": [[i / 7, ((3 * i) % 8) / 7] for i in range(8)],
                "labels": [f"recipe {i}" for i in range(8)],
            }
        },
    ),
    "safe": (
        "m-safeopt",
        {
            "monotone": "dose",
            "h": 0.8,
            "parameters": [
                {"name": "dose", "low": 0, "high": 1, "grid": 6},
                {"name": "weight", "low": 0, "high": 1, "grid": 9},
            ],
        },
    ),
}


def reactor_space(power_levels: int, flow_levels: int, settings: dict | None = None) -> dict:
    """A newcomer's made-up reactor (session 10's trial): heater power 0-100 (monotone), flow
    1-10, temperature limit h = 80; :func:`reactor_truth` gives its f and g."""
    spec: dict[str, Any] = {
        "monotone": "power",
        "h": 80.0,
        "parameters": [
            {"name": "power", "low": 0.0, "high": 100.0, "grid": power_levels},
            {"name": "flow", "low": 1.0, "high": 10.0, "grid": flow_levels},
        ],
    }
    if settings:
        spec["settings"] = settings
    return spec


#: a small dose space of the safe family: 11 doses (the monotone parameter) by 5 times, h = 1
SMALL_DOSE = {
    "parameters": [
        {"name": "dose", "low": 0.0, "high": 10.0, "grid": 11},
        {"name": "t", "low": 0.0, "high": 1.0, "grid": 5},
    ],
    "monotone": "dose",
    "h": 1.0,
}


def reactor_truth(power: float, flow: float) -> dict[str, float]:
    """The reactor's output f and temperature g at (power, flow), without noise."""
    g = 25.0 + 0.9 * power * math.exp(-0.08 * (flow - 1.0)) + 0.002 * power * power
    f = power / 100.0 * (1.0 - ((flow - 4.0) / 6.0) ** 2)
    return {"f": f, "g": g}


def f_value(params: dict[str, float]) -> float:
    v = list(params.values())
    return math.sin(3 * v[0]) + (0.5 * math.cos(2 * v[1]) if len(v) > 1 else 0.0)


def safe_value(params: dict[str, float]) -> dict[str, float]:
    d, w = params["dose"], params["weight"]
    return {"f": d * (1 + w) - 0.3 * w, "g": 0.1 + d * (0.4 + w)}


def answer_for(q: Any) -> Any:
    """The made-up answer to a StudyQuery."""
    if q.kind == "evaluate":
        return safe_value(q.params) if q.outputs else f_value(q.params)
    if q.kind == "label":
        return f_value(q.params) < 0.5
    return "a" if f_value(q.a) >= f_value(q.b) else "b"


#: options that make a study's steps fast (fixed kernel hyperparameters): for the browser tests,
#: which test the page, not the method
FAST = {"lev1": {"fit_hyperparameters": False}, "safe": {"fit_hyperparameters": False}}


def make_study(
    name: str, url: str, answers: int = 0, key: str | None = None, fast: bool = False
) -> Study:
    method, space = SPACES[key or name]
    options = FAST.get(key or name, {}) if fast else {}
    study = create_study(name, method, space, storage=url, seed=3, **options)
    for _ in range(answers):
        q = study.ask()
        study.tell(q.id, answer_for(q))
    return study


#: drinks on a grid of two parameters (no labels: options are named by their values)
DRINKS = {
    "parameters": [
        {"name": "sweetness", "low": 0.0, "high": 1.0},
        {"name": "acidity", "low": 0.0, "high": 1.0},
    ]
}


def make_drinks(name: str, url: str, answers: int = 2) -> Study:
    """A preference study of drinks answered by someone who likes sweetness 0.58 and acidity
    0.32. After two answers EUBO-regret (seed 1) recommends a drink that was in no duel."""

    def taste(p: dict[str, float]) -> float:
        return -((p["sweetness"] - 0.58) ** 2 + (p["acidity"] - 0.32) ** 2)

    study = create_study(name, "eubo-regret", DRINKS, storage=url, seed=1, family="preference")
    for _ in range(answers):
        q = study.ask()
        study.tell(q.id, "a" if taste(q.a) >= taste(q.b) else "b")
    return study


def png(width: int, height: int, rgb: tuple[int, int, int], stripe: tuple[int, int, int]) -> bytes:
    """A small PNG image (a colour swatch with a diagonal stripe), written with zlib only."""
    import struct
    import zlib

    rows = []
    for y in range(height):
        row = bytearray([0])  # filter type 0
        for x in range(width):
            row += bytes(stripe if abs(x - y * width // height) < width // 8 else rgb)
        rows.append(bytes(row))
    raw = zlib.compress(b"".join(rows), 9)

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def write_photo_table(directory: Any) -> str:
    """The preference sample as a CSV table with a photo column and the PNGs beside it; returns
    the CSV path (``create_study`` stores the pictures in the study)."""
    import os

    cand = SPACES["pref"][1]["candidates"]
    lines = ["name,photo,sugar,flour"]
    for label, (sugar, flour) in zip(cand["labels"], cand["rows"]):
        fname = label.replace(" ", "-") + ".png"
        colour = (int(90 + 160 * sugar), int(80 + 120 * flour), 60)
        with open(os.path.join(directory, fname), "wb") as fh:
            fh.write(png(96, 64, colour, (245, 240, 230)))
        lines.append(f"{label},{fname},{sugar!r},{flour!r}")
    path = os.path.join(directory, "recipes.csv")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


#: a level set whose last answers, at the right end of its space, lie just above its threshold
#: (0.5): where the threshold's label was written, at the line's right end just above it
EDGE = {"threshold": 0.5, "parameters": [{"name": "t", "low": 0.0, "high": 1.0, "grid": 11}]}
EDGE_VALUES = [0.05, 0.2, 0.35, 0.45, 0.7, 0.8, 0.6, 0.42, 0.53, 0.56, 0.54]


def make_edge(name: str, url: str) -> Study:
    """The :data:`EDGE` study with :data:`EDGE_VALUES` added at t = 0, 0.1, ..., 1 in order."""
    study = create_study(name, "randomized-straddle", EDGE, storage=url, seed=0)
    for k, value in enumerate(EDGE_VALUES):
        study.add({"t": k / 10}, value)
    return study
