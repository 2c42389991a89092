"""The preference family where people work: 25-200 duels (issue 17).

Cumulative regret R(T) at T in {25, 50, 100, 200} and simple regret at the end, mean and standard
error over seeds, for every registered preference problem and every method run as a user would
(``kernel=fit``: the length-scale is learned from the duels; ``random`` likewise fits its
recommendation model), plus the time per duel. The study default of the family is chosen from
this table (``docs/reproductions/preference.md``).

Run (one thread, ``--jobs`` processes)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/preference_horizons.py \\
        --seeds 20 --horizon 200 --jobs 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

METHODS = ("eubo-regret", "eubo", "maxminlcb", "mr-lpf", "random")
CHECKPOINTS = (25, 50, 100, 200)


def run(job: tuple[str, str, int, int]) -> dict:
    problem_id, method, seed, horizon = job
    from boloop.problems import parse_problem_id
    from boloop.simulate import simulate

    # a method id may carry options, as in ``boloop bench run``: eubo-regret?max_models=15
    name, given = parse_problem_id(method)
    options: dict = {"kernel": "fit", **given}
    if name == "mr-lpf":
        options.setdefault("horizon", horizon)
    t0 = time.perf_counter()
    trace = simulate(name, problem_id, horizon, seed=seed, method=method, **options)
    seconds = time.perf_counter() - t0
    rec = trace.records
    return {
        "seed": seed,
        "horizon": horizon,
        "problem": problem_id,
        "method": method,
        "R": {t: rec[t - 1]["metrics"]["cumulative_regret"] for t in CHECKPOINTS if t <= len(rec)},
        "simple": rec[-1]["metrics"]["simple_regret"],
        "S": {t: rec[t - 1]["metrics"]["simple_regret"] for t in CHECKPOINTS if t <= len(rec)},
        "per_duel": seconds / len(rec),
    }


def _ms(values: list[float]) -> str:
    if len(values) < 2:
        return f"{values[0]:.2f}" if values else "-"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values) / len(values) ** 0.5:.2f}"


def main(argv: list[str] | None = None) -> None:
    import boloop.problems as problems

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds first-seed, ... (resume)")
    ap.add_argument("--horizon", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--methods", nargs="*", default=list(METHODS))
    ap.add_argument("--problems", nargs="*", default=[e.id for e in problems.list("preference")])
    ap.add_argument("--out", default=None, help="also append every run as a JSON line here")
    args = ap.parse_args(argv)
    jobs = [
        (p, m, s, args.horizon)
        for p in args.problems
        for m in args.methods
        for s in range(args.first_seed, args.first_seed + args.seeds)
    ]
    rows = []
    with ProcessPoolExecutor(args.jobs) as pool:
        for i, row in enumerate(pool.map(run, jobs), 1):
            rows.append(row)
            if args.out:
                with open(args.out, "a") as fh:
                    fh.write(json.dumps(row) + "\n")
            print(f"\r{i}/{len(jobs)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    cps = [t for t in CHECKPOINTS if t <= args.horizon]
    head = " | ".join(f"R({t})" for t in cps)
    print(f"| problem | method | {head} | simple regret at {args.horizon} | ms/duel |")
    print("|---" * (4 + len(cps)) + "|")
    for p in args.problems:
        for m in args.methods:
            sel = [r for r in rows if r["problem"] == p and r["method"] == m]
            cells = " | ".join(_ms([r["R"][t] for r in sel]) for t in cps)
            ms = 1000 * statistics.median(r["per_duel"] for r in sel)
            print(f"| {p} | {m} | {cells} | {_ms([r['simple'] for r in sel])} | {ms:.2f} |")


if __name__ == "__main__":
    main()
