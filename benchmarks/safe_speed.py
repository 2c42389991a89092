"""Speed of the safe family (issue 6 targets): one M-SafeOpt step (ask + tell) on the 200 x 200
problems with n = 100 observations (target <= 20 ms), one step on Hartmann-3's 421,875 actions
(target <= 1 s, peak memory < 2 GB), and how a step grows with the grid size.

Run with one thread (the figures are medians over repeated steps)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        .venv/bin/python benchmarks/safe_speed.py [--quick]

Each measurement runs in a fresh subprocess so that its peak resident memory (``ru_maxrss``) is
its own. A "step" is ``ask()`` (posterior bounds on the whole grid, safe sets, acquisition) plus
``tell()`` (Cholesky append and the O(N n) cache update) after ``n`` observations gathered by the
policy itself.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")


def measure(problem_id: str, method: str, n_obs: int, repeats: int, options: dict) -> dict:
    import numpy as np

    from boloop.algorithms import make_policy
    from boloop.problems import get

    problem = get(problem_id)
    policy = make_policy(method, problem, 0, **options)
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    while policy.gp_g.n < n_obs:
        q = policy.ask()
        policy.tell(q.id, problem.answer(q, rng))
    warm = time.perf_counter() - t0
    asks, tells = [], []
    for _ in range(repeats):
        a = time.perf_counter()
        q = policy.ask()
        b = time.perf_counter()
        policy.tell(q.id, problem.answer(q, rng))
        c = time.perf_counter()
        asks.append(b - a)
        tells.append(c - b)
    steps = [a + t for a, t in zip(asks, tells)]
    return {
        "problem": problem_id,
        "method": method,
        "options": options,
        "N": problem.space.n,
        "n_obs": n_obs,
        "median_step_s": statistics.median(steps),
        "median_ask_s": statistics.median(asks),
        "median_tell_s": statistics.median(tells),
        "warmup_s": warm,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _child(spec: dict) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec)],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ.copy(),
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, skip the largest grids")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        spec = json.loads(args.child)
        print(json.dumps(measure(**spec)))
        return
    rep = 5 if args.quick else 15
    specs = [
        dict(
            problem_id="safe/clinical-trial", method="m-safeopt", n_obs=100, repeats=rep, options={}
        ),
        dict(
            problem_id="safe/clinical-trial",
            method="m-safeopt-x",
            n_obs=100,
            repeats=rep,
            options={},
        ),
        dict(problem_id="safe/branin", method="m-safeopt", n_obs=100, repeats=rep, options={}),
        dict(
            problem_id="safe/clinical-trial",
            method="safeopt-mc",
            n_obs=100,
            repeats=rep,
            options={},
        ),
        dict(
            problem_id="safe/clinical-trial", method="predvar", n_obs=100, repeats=rep, options={}
        ),
        dict(
            problem_id="safe/hartmann3",
            method="m-safeopt",
            n_obs=50,
            repeats=max(3, rep // 3),
            options={},
        ),
        dict(
            problem_id="safe/hartmann3",
            method="m-safeopt",
            n_obs=50,
            repeats=max(3, rep // 3),
            options={"cache_mb": 0.0},  # streamed posterior, no n x N cache
        ),
        dict(
            problem_id="safe/clinical-trial",
            method="m-safeopt",
            n_obs=50,
            repeats=rep,
            options={"fit_hyperparameters": True},
        ),
    ]
    sizes = [50, 100, 200] if args.quick else [50, 100, 200, 400]
    specs += [
        dict(
            problem_id=f"safe/clinical-trial?n={n}",
            method="m-safeopt",
            n_obs=50,
            repeats=rep,
            options={},
        )
        for n in sizes
    ]
    print(
        f"{'problem':28s} {'method':12s} {'options':28s} {'N':>7s} {'n':>4s} "
        f"{'step ms':>9s} {'ask ms':>8s} {'tell ms':>8s} {'peak MB':>8s}"
    )
    for spec in specs:
        r = _child(spec)
        print(
            f"{r['problem']:28s} {r['method']:12s} {json.dumps(r['options']):28s} {r['N']:7d} "
            f"{r['n_obs']:4d} {1e3 * r['median_step_s']:9.1f} {1e3 * r['median_ask_s']:8.1f} "
            f"{1e3 * r['median_tell_s']:8.1f} {r['peak_rss_mb']:8.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
