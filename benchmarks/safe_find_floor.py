"""What ``boloop study try NAME --find-floor`` (``Study.find_floor_g``) finds on stuck safe
studies, how long it takes, and what the continuation it proposes then does.

Each run is a study answered from a known ``g`` until its stuck warning appears
(``status()["stuck"]``, at most ``--max-answers``); then the search runs (timed, wall clock);
then, for each model where it found options, the continuation with those options
(``create_study(NEW, from_study=...)``) is answered from the same truth for ``--more`` answers,
counting the highest level of the monotone parameter measured and the measurements of ``g``
above ``h`` (unsafe). One JSON line per run and model; a summary at the end.

Studies (each a dose x time grid read without noise):
- ``trial``: a lab trial's dose study (0-40 mg on 11 levels, timing 0-24 h on 9,
  ``g = 0.05 + 0.012 dose (1 + 0.3 sin(pi timing / 24))``, h = 0.6), the one of
  tests/test_study_try.py;
- ``linear``: ``g = 0.05 dose`` (0-10 on 21 levels, time 1-8 on 15, h = 1), the one of
  tests/test_safe_offset.py.

    OMP_NUM_THREADS=1 python benchmarks/safe_find_floor.py --seeds 5
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
import uuid
from collections.abc import Callable

from boloop.study import create_study

STUDIES: dict[str, tuple[dict, Callable[[float, float], dict[str, float]]]] = {
    "trial": (
        {
            "monotone": "dose",
            "h": 0.6,
            "parameters": [
                {"name": "dose", "low": 0.0, "high": 40.0, "grid": 11, "unit": "mg"},
                {"name": "timing", "low": 0.0, "high": 24.0, "grid": 9, "unit": "h"},
            ],
        },
        lambda d, t: {
            "f": round(20 + 60 * (1 - math.exp(-d / 15)) - ((t - 12) / 12) ** 2 * 15, 1),
            "g": round(0.05 + 0.012 * d * (1 + 0.3 * math.sin(t / 24 * math.pi)), 3),
        },
    ),
    "linear": (
        {
            "monotone": "dose",
            "h": 1.0,
            "parameters": [
                {"name": "dose", "low": 0.0, "high": 10.0, "grid": 21},
                {"name": "time", "low": 1.0, "high": 8.0, "grid": 15},
            ],
        },
        lambda d, t: {"f": 0.1 * d, "g": 0.05 * d},
    ),
}


def _answer(study, truth, n: int) -> tuple[float, int]:
    """Answer ``n`` queries from ``truth``: the highest dose measured and the g above h."""
    h = float(study.config["space"]["h"])
    top, unsafe = 0.0, 0
    for _ in range(n):
        q = study.ask()
        d, t = (float(v) for v in q.params.values())
        y = truth(d, t)
        top, unsafe = max(top, d), unsafe + (y["g"] > h)
        study.tell(q.id, y)
    return top, unsafe


def run(name: str, seed: int, max_answers: int, more: int) -> list[dict]:
    space, truth = STUDIES[name]
    url = f"memory://floor-{uuid.uuid4().hex}"
    study = create_study("s", "m-safeopt", space, storage=url, seed=seed)
    stuck_at = None
    for k in range(1, max_answers + 1):
        _answer(study, truth, 1)
        if study.status()["stuck"]:
            stuck_at = k
            break
    base = {"study": name, "seed": seed, "stuck_at": stuck_at}
    if stuck_at is None:
        return [base]
    t0 = time.perf_counter()
    found = study.find_floor_g()
    seconds = time.perf_counter() - t0
    rows = []
    for i, model in enumerate(found["models"]):
        row = {
            **base,
            "model": model["options"] or "own",
            "floor": model["floor"],
            "found": model["found"] is not None,
            "trials": len(found["tried"]),
            "seconds": round(seconds, 2),
        }
        if model["found"] is not None:
            options = model["found"]["options"]
            cont = create_study(f"c{i}", None, None, storage=url, from_study="s", **options)
            top, unsafe = _answer(cont, truth, more)
            row.update(continued_top=top, continued_unsafe=unsafe)
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--studies", nargs="+", default=list(STUDIES))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--max-answers", type=int, default=40)
    ap.add_argument("--more", type=int, default=20)
    args = ap.parse_args()
    rows = []
    for name in args.studies:
        for seed in range(args.seeds):
            for row in run(name, seed, args.max_answers, args.more):
                print(json.dumps(row), flush=True)
                rows.append(row)
    timed = {(r["study"], r["seed"]): r["seconds"] for r in rows if "seconds" in r}
    if timed:
        print(
            f"search: median {statistics.median(timed.values()):.2f} s over {len(timed)} stuck "
            f"studies; continuations with found options: "
            f"{sum(r.get('found', False) for r in rows)}, unsafe measurements in them: "
            f"{sum(r.get('continued_unsafe', 0) for r in rows)}"
        )


if __name__ == "__main__":
    main()
