"""What ``m-safeopt`` does when ``L_f`` and ``L_g_prime`` are unknown (a study of your own).

``dose``: a lab trial's dose study (0-40 mg on 21 levels, 13 timings, ``h = 0.6``, toxicity
``0.05 + 0.0004 dose^2 (1 + 0.3 sin(2 pi timing / 24))`` measured with noise 0.01, efficacy
``80 (1 - exp(-dose / 15)) (0.7 + 0.3 cos(2 pi (timing - 8) / 24))`` with noise 1; the safe
optimum is f = 70.5 at 32 mg, 8 h), answered from the truth with the constants unknown (the
default) and with ``missing_constants=1.0`` (what a study assumed before). One JSON line per
seed and arm: at each checkpoint the true f of the recommendation, the answers at the most
repeated setting, the timings measured above dose 0, and the measurements whose true g is above h.

``registered``: the registered safe problems, ``m-safeopt`` with their constants vs with both
given as ``'unknown'``: simple regret, cumulative regret and unsafe evaluations at the end.

    OMP_NUM_THREADS=1 python benchmarks/safe_unknown_constants.py dose --seeds 5 --answers 60,100
    OMP_NUM_THREADS=1 python benchmarks/safe_unknown_constants.py registered --seeds 5 --budget 150
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
import uuid
from collections import Counter

import numpy as np

import boloop.problems as problems
from boloop.simulate import simulate
from boloop.study import create_study

DOSE = {
    "monotone": "dose",
    "h": 0.6,
    "parameters": [
        {"name": "dose", "low": 0.0, "high": 40.0, "grid": 21, "unit": "mg"},
        {"name": "timing", "low": 0.0, "high": 24.0, "grid": 13, "unit": "h"},
    ],
    "settings": {"noise_f": 1.0, "noise_g": 1e-4},
}
ARMS = {"unknown": {}, "one": {"missing_constants": 1.0}}
REGISTERED = (
    "safe/toy",
    "safe/clinical-trial",
    "safe/branin",
    "safe/pendulum",
    "safe/random-gp",
    "safe/hartmann3",
)


def efficacy(dose: float, timing: float) -> float:
    return 80 * (1 - math.exp(-dose / 15)) * (0.7 + 0.3 * math.cos((timing - 8) / 24 * 2 * math.pi))


def toxicity(dose: float, timing: float) -> float:
    return 0.05 + 0.0004 * dose**2 * (1 + 0.3 * math.sin(timing / 24 * 2 * math.pi))


def dose_run(seed: int, checkpoints: list[int], options: dict) -> dict:
    """One dose study answered from the truth (noise drawn g first, then f, as the trial did)."""
    rng = np.random.default_rng(seed)
    study = create_study(
        "dose", "m-safeopt", DOSE, seed=seed, storage=f"memory://{uuid.uuid4().hex}", **options
    )
    asked: list[tuple[float, float]] = []
    out: dict = {"seed": seed, "options": options}
    for i in range(max(checkpoints)):
        q = study.ask()
        d, t = q.params["dose"], q.params["timing"]
        g = toxicity(d, t) + rng.normal(0, 0.01)
        asked.append((d, t))
        study.tell(q.id, {"f": round(efficacy(d, t) + rng.normal(0, 1.0), 2), "g": round(g, 3)})
        if i + 1 in checkpoints:
            rec = study.recommend()["point"]
            out[str(i + 1)] = {
                "recommended": rec,
                "true_f": round(efficacy(rec["dose"], rec["timing"]), 2),
                "most_repeated": Counter(asked).most_common(1)[0][1],
                "timings_above_0": len({t for d, t in asked if d > 0}),
                "unsafe": sum(toxicity(d, t) > DOSE["h"] for d, t in asked),
            }
    return out


def dose(seeds: int, checkpoints: list[int]) -> None:
    results: dict[str, list[dict]] = {arm: [] for arm in ARMS}
    for arm, options in ARMS.items():
        for seed in range(seeds):
            r = dose_run(seed, checkpoints, options)
            results[arm].append(r)
            print(json.dumps({"arm": arm, **r}), flush=True)
    for arm, rs in results.items():
        for n in map(str, checkpoints):
            f = [r[n]["true_f"] for r in rs]
            print(
                f"# {arm:8s} {n:>4s} answers: true f {f} mean {statistics.mean(f):.1f}; most "
                f"repeated {[r[n]['most_repeated'] for r in rs]}; timings above 0 "
                f"{[r[n]['timings_above_0'] for r in rs]}; unsafe {sum(r[n]['unsafe'] for r in rs)}"
            )


def registered(seeds: int, budget: int | None, ids: list[str]) -> None:
    unknown = {"L_f": "unknown", "L_g_prime": "unknown"}
    for pid in ids:
        prob = problems.get(pid)
        n = budget or int(prob.settings.get("budget", 50))
        for arm, options in (("known", {}), ("unknown", unknown)):
            rows = []
            for seed in range(seeds):
                t0 = time.perf_counter()
                m = simulate("m-safeopt", prob, n, seed=seed, **options).final_metrics
                rows.append(m)
                print(
                    json.dumps(
                        {
                            "problem": pid,
                            "arm": arm,
                            "seed": seed,
                            "budget": n,
                            "simple_regret": m["simple_regret"],
                            "cumulative_regret": m["cumulative_regret"],
                            "unsafe": m["unsafe"],
                            "seconds": round(time.perf_counter() - t0, 1),
                        }
                    ),
                    flush=True,
                )
            sr = [r["simple_regret"] for r in rows]
            print(
                f"# {pid} {arm} T={n}: simple regret mean {statistics.mean(sr):.4g} max "
                f"{max(sr):.4g}; cumulative regret mean "
                f"{statistics.mean(r['cumulative_regret'] for r in rows):.1f}; unsafe "
                f"{sum(r['unsafe'] for r in rows):g}"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=("dose", "registered"))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--answers", default="60,100", help="dose: checkpoints")
    ap.add_argument("--budget", type=int, default=None, help="registered: default the problem's")
    ap.add_argument("--problems", default=",".join(REGISTERED))
    a = ap.parse_args()
    if a.what == "dose":
        dose(a.seeds, [int(n) for n in a.answers.split(",")])
    else:
        registered(a.seeds, a.budget, a.problems.split(","))


if __name__ == "__main__":
    main()
