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


def make_study(name: str, url: str, answers: int = 0, key: str | None = None) -> Study:
    method, space = SPACES[key or name]
    study = create_study(name, method, space, storage=url, seed=3)
    for _ in range(answers):
        q = study.ask()
        study.tell(q.id, answer_for(q))
    return study
