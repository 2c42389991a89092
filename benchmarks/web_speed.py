"""Speed of ``boloop serve``: a study page with 300 answers (pictures included) and an answer
through the JSON API.

Targets (issue 16): page render median < 150 ms; an answer through the API < 50 ms plus the
method's own step time. The step time is measured on a twin study (same method, seed and
answers) told directly through ``Study.tell``; the API overhead is the difference of medians.
Also the safe set's growth image (a page loads it separately): its first drawing, which replays
the history, and a drawing with nothing new.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/web_speed.py [--answers 300] [--repeats 30]

Runs in-process through FastAPI's TestClient (no network), so it measures the server's work:
routing, the study lock, ``ask``/``history``/pictures, template rendering, JSON.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

from boloop.study import create_study
from boloop.web import create_app

#: one study per family; fixed hyperparameters so building 300 answers takes seconds
STUDIES = {
    "levelset-2d": (
        "straddle",
        {
            "parameters": [
                {"name": "temperature", "low": 0, "high": 2, "grid": 25},
                {"name": "ratio", "low": 0, "high": 1, "grid": 20},
            ],
            "threshold": 0.3,
        },
        {"fit_hyperparameters": False},
    ),
    "preference": (
        "maxminlcb",
        {
            "candidates": {
                "columns": ["sugar", "flour"],
                "rows": [[i / 29, ((7 * i) % 30) / 29] for i in range(30)],
                "labels": [f"recipe {i}" for i in range(30)],
            }
        },
        {},
    ),
    "safe": (
        "m-safeopt",
        {
            "monotone": "dose",
            "h": 2.0,
            "parameters": [
                {"name": "dose", "low": 0, "high": 1, "grid": 10},
                {"name": "weight", "low": 0, "high": 1, "grid": 15},
            ],
        },
        {"fit_hyperparameters": False},
    ),
}


def f(p: dict[str, float]) -> float:
    v = list(p.values())
    return math.sin(3 * v[0]) + 0.5 * math.cos(2 * v[1])


def answer(q):
    if q.kind == "compare":
        return "a" if f(q.a) >= f(q.b) else "b"
    if q.outputs:
        d, w = q.params["dose"], q.params["weight"]
        return {"f": d * (1 + w) - 0.3 * w, "g": 0.1 + d * (0.4 + w)}
    return f(q.params)


def build(name: str, url: str, n: int):
    method, space, opts = STUDIES[name]
    study = create_study(name, method, space, storage=url, seed=1, **opts)
    for _ in range(n):
        q = study.ask()
        study.tell(q.id, answer(q))
    return study


def median_ms(xs: list[float]) -> float:
    return 1e3 * statistics.median(xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answers", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--tells", type=int, default=20)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="boloop-web-speed-"))
    url = f"sqlite:///{tmp / 'speed.db'}"
    twin_url = f"sqlite:///{tmp / 'twin.db'}"
    growth: dict[str, float] = {}
    print(f"{'study':<13} {'answers':>7} {'page ms':>8} {'svg KB':>7} {'API tell ms':>11} "
          f"{'step ms':>8} {'overhead ms':>11}")
    for name in STUDIES:
        build(name, url, args.answers)
        twin = build(name, twin_url, args.answers)
        client = TestClient(create_app(url, poll_seconds=0))
        r = client.get(f"/studies/{name}")  # loads (replays) the study and asks
        assert r.status_code == 200, r.text
        page = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            r = client.get(f"/studies/{name}")
            page.append(time.perf_counter() - t0)
            assert r.status_code == 200
        svg_kb = sum(len(client.get(f"/studies/{name}/pictures/{w}.svg").content)
                     for w in ("progress", "model")) / 1024
        api, step = [], []
        for _ in range(args.tells):
            q = client.post(f"/api/studies/{name}/ask").json()
            tq = twin.ask()
            assert tq.id == q["id"]
            a = answer(tq)
            t0 = time.perf_counter()
            twin.tell(tq.id, a)
            step.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            r = client.post(f"/api/studies/{name}/tell", json={"query_id": q["id"], "answer": a})
            api.append(time.perf_counter() - t0)
            assert r.status_code == 200, r.text
        print(f"{name:<13} {args.answers:>7} {median_ms(page):>8.1f} {svg_kb:>7.1f} "
              f"{median_ms(api):>11.1f} {median_ms(step):>8.1f} "
              f"{median_ms(api) - median_ms(step):>11.1f}")
        if name == "safe":
            growth.update(_growth_times(client, name, args.repeats))
    if growth:
        print(
            f"safe set growth image: first drawing (replays {args.answers + args.tells} answers) "
            f"{growth['first']:.0f} ms; again with nothing new {growth['again']:.1f} ms (median)"
        )


def _growth_times(client: TestClient, name: str, repeats: int) -> dict[str, float]:
    """The growth image of the safe study: its first drawing replays the history through a fresh
    policy; later ones reuse the replay (one step per new answer)."""
    t0 = time.perf_counter()
    assert client.get(f"/studies/{name}/pictures/growth.svg").status_code == 200
    first = 1e3 * (time.perf_counter() - t0)
    again = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        client.get(f"/studies/{name}/pictures/growth.svg")
        again.append(time.perf_counter() - t0)
    return {"first": first, "again": median_ms(again)}


if __name__ == "__main__":
    main()
