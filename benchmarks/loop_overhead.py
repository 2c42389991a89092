"""Overhead of the shared loop itself, without any model: ``simulate`` with the ``toy-random``
policies (ask/tell bookkeeping, answer validation, oracle, tracker, records) and ``boloop bench run``
(process pool start-up and the atomic rewrite of results.csv after every run).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/loop_overhead.py [--repeats 5]``.
Prints medians over the repeats. The levelset/toy tracker fits a GP on 41 points per step, so its
figure includes that metric cost; the others are pure loop overhead.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from boloop.bench import run_sweep
from boloop.simulate import simulate

TOYS = ["levelset/toy", "preference/toy", "safe/toy", "expert/toy"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budget", type=int, default=500)
    args = parser.parse_args()

    print(f"simulate, toy-random, budget {args.budget}: microseconds per step (median)")
    for pid in TOYS:
        per_step, in_policy = [], []
        for r in range(args.repeats):
            t0 = time.perf_counter()
            trace = simulate("toy-random", pid, args.budget, seed=r)
            per_step.append((time.perf_counter() - t0) / args.budget * 1e6)
            in_policy.append(
                sum(x["ask_seconds"] + x["tell_seconds"] for x in trace.records) / args.budget * 1e6
            )
        print(
            f"  {pid:16s} total {statistics.median(per_step):8.1f}   "
            f"of which ask+tell {statistics.median(in_policy):6.1f}"
        )

    print("bench run, 8 runs (toy-random, budget 50): seconds (median)")
    for jobs in (1, 2):
        times = []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as d:
                t0 = time.perf_counter()
                run_sweep(["preference/toy", "safe/toy"], ["toy-random"], "4", 50, d, jobs=jobs)
                times.append(time.perf_counter() - t0)
        print(f"  --jobs {jobs}: {statistics.median(times):.3f}")


if __name__ == "__main__":
    main()
