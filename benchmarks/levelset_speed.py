"""Speed of one level-set step (ask + tell), the targets of issue 4.

* 2,500-point grid (``levelset/himmelblau``), n = 300 observations: every method but MILE
  (target <= 5 ms), MILE (target <= 100 ms; the number of "active" rows it formed is printed).
* 5-D box (``levelset/rosenbrock5``), n = 500 observations, 100,000 evaluation points: the policy
  step alone and the step plus the metric update on the 100,000 points (target <= 150 ms).

Observations are pre-loaded at random points (``add_observations``), then ``--repeats`` steps are
timed and the median wall-clock and CPU (process) times are reported (n grows by one per
repeat); on a loaded machine the CPU time is the better estimate of the unloaded step. Run with
one thread::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/levelset_speed.py
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from boloop.algorithms import make_policy
from boloop.problems import get


def _preload(policy, problem, n: int, rng: np.random.Generator) -> None:
    if problem.space.kind == "candidates":
        X = problem.space.points[rng.choice(problem.space.n, n, replace=True)]
    else:
        X = problem.space.sample(n, seed=rng)
    y = problem.value(X) + problem.noise_sd * rng.standard_normal(n)
    policy.add_observations(X, y)


def time_steps(policy, problem, repeats: int, tracker=None) -> dict[str, float]:
    """Medians of wall-clock and CPU (process) seconds of ask + tell (and + metrics)."""
    rng = np.random.default_rng(123)
    rec: dict[str, list[float]] = {"wall": [], "cpu": [], "wall_m": [], "cpu_m": []}
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        q = policy.ask()
        policy.tell(q.id, problem.observe(q, rng))
        t1, c1 = time.perf_counter(), time.process_time()
        rec["wall"].append(t1 - t0)
        rec["cpu"].append(c1 - c0)
        if tracker is not None:
            tracker.update(q, None, policy.recommend())
            rec["wall_m"].append(time.perf_counter() - t0)
            rec["cpu_m"].append(time.process_time() - c0)
    return {k: 1e3 * float(np.median(v)) for k, v in rec.items() if v}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--n-grid", type=int, default=300)
    ap.add_argument("--n-box", type=int, default=500)
    args = ap.parse_args()
    print(f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}  load={os.getloadavg()[0]:.1f}")

    grid = get("levelset/himmelblau")
    print(f"\n2,500-point grid, n = {args.n_grid}: median ask+tell over {args.repeats} steps")
    for m in (
        "randomized-straddle",
        "straddle",
        "lse",
        "us",
        "random",
        "randomized-straddle-max",
        "mile",
    ):
        pol = make_policy(m, grid, seed=0)
        _preload(pol, grid, args.n_grid, np.random.default_rng(0))
        r = time_steps(pol, grid, args.repeats)
        extra = f"  active rows {pol.last_active}/2500" if m == "mile" else ""
        target = 100 if m == "mile" else 5
        print(
            f"  {m:24s} wall {r['wall']:8.2f} ms  cpu {r['cpu']:8.2f} ms  (target <= {target} ms)"
            f"{extra}"
        )

    print("\nMILE on the other 2,500-point grids (n as above; cost grows with the active rows)")
    for pid in ("levelset/sinusoidal", "levelset/gp-sample"):
        prob = get(pid)
        prob.draw_instance(0)
        pol = make_policy("mile", prob, seed=0)
        _preload(pol, prob, args.n_grid, np.random.default_rng(0))
        r = time_steps(pol, prob, args.repeats)
        print(
            f"  {pid:24s} wall {r['wall']:8.2f} ms  cpu {r['cpu']:8.2f} ms  (target <= 100 ms)"
            f"  active rows {pol.last_active}/2500"
        )

    box = get("levelset/rosenbrock5")  # 100,000 evaluation points
    tracker = box.new_tracker()
    box.draw_instance(0)
    print(
        f"\n5-D box, n = {args.n_box}, 100,000 evaluation points: median over {args.repeats} steps"
    )
    for m in ("randomized-straddle", "straddle", "lse", "us", "random"):
        pol = make_policy(m, box, seed=0)
        _preload(pol, box, args.n_box, np.random.default_rng(0))
        tracker = box.new_tracker()
        box._stale = False  # keep the drawn evaluation set
        r = time_steps(pol, box, args.repeats, tracker)
        print(
            f"  {m:20s} step wall {r['wall']:7.2f} cpu {r['cpu']:7.2f} ms | step + metrics wall "
            f"{r['wall_m']:7.2f} cpu {r['cpu_m']:7.2f} ms  (target <= 150 ms)"
        )


if __name__ == "__main__":
    main()
