"""Seconds per COBOL iteration in the reference tutorial's setting (issue 12, target 10 ms).

Run with ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/expert_tutorial_speed.py [--repeats 3]``.

Setting: 2-D Ackley on [-1, 1]^2 (shifted by (0.4, -0.3), as ``expert/ackley4``), the synthetic
expert of Example 2.2 with a = 1, 3 initial evaluations and 10 initial labels, T = 30
iterations, COBOL's default settings. An iteration's time is the wall-clock time of its ``ask``
and ``tell`` calls (the oracle's answers excluded); printed: the median over the iterations of
all repeats (one seed per repeat), the median CPU seconds, and the slowest iteration.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from boloop.algorithms.expert import COBOL  # noqa: E402
from boloop.problems import functions as F  # noqa: E402
from boloop.problems import parse_problem_id  # noqa: E402
from boloop.problems.expert import ExpertProblem  # noqa: E402
from boloop.queries import Label  # noqa: E402
from boloop.spaces import Box  # noqa: E402

SHIFT = np.array([0.4, -0.3])


def ackley2(a: float = 1.0) -> ExpertProblem:
    def f(X: np.ndarray) -> np.ndarray:
        return F.ackley(np.asarray(X) - SHIFT)

    grid = np.random.default_rng(0).random((4096, 2)) * 2 - 1
    return ExpertProblem(
        "ackley2", f, Box([-1, -1], [1, 1]), 0.0, SHIFT.copy(), 0.0, float(f(grid).max()), a=a
    )


def run(seed: int, T: int, **options: object) -> tuple[list[float], list[float]]:
    problem = ackley2()
    rng = np.random.default_rng(10_000 + seed)
    policy = COBOL(problem.space, seed, **options)
    wall: list[float] = []
    cpu: list[float] = []
    w = c = 0.0
    while policy.iteration < T:
        before = policy.iteration
        t, p = time.perf_counter(), time.process_time()
        q = policy.ask()
        w += time.perf_counter() - t
        c += time.process_time() - p
        if isinstance(q, Label):
            answer: object = bool(problem.label(q, rng))
        else:
            answer = float(problem.value(q.x[None, :])[0])
        t, p = time.perf_counter(), time.process_time()
        policy.tell(q.id, answer)
        w += time.perf_counter() - t
        c += time.process_time() - p
        if q.initial:
            w = c = 0.0
        elif policy.iteration > before:
            wall.append(w)
            cpu.append(c)
            w = c = 0.0
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument(
        "--refit-growth", type=float, default=None, help="COBOL's refit_growth (default: COBOL's)"
    )
    ap.add_argument(
        "--cobol", nargs="+", default=[], metavar="KEY=VALUE", help="other COBOL options"
    )
    args = ap.parse_args()
    wall: list[float] = []
    cpu: list[float] = []
    options = parse_problem_id("cobol?" + "&".join(args.cobol))[1] if args.cobol else {}
    if args.refit_growth is not None:
        options["refit_growth"] = args.refit_growth
    for seed in range(args.repeats):
        w, c = run(seed, args.iterations, **options)
        wall += w
        cpu += c
    print(
        f"COBOL, 2-D Ackley, a = 1, T = {args.iterations}, 10 initial labels, "
        f"{args.repeats} seeds ({len(wall)} iterations), "
        f"{'COBOL options ' + str(options) if options else 'default settings'}"
    )
    print(f"median wall ms per iteration: {1000 * statistics.median(wall):.1f} (target 10)")
    print(f"median CPU ms per iteration:  {1000 * statistics.median(cpu):.1f}")
    print(f"slowest iteration: {1000 * max(wall):.0f} ms")


if __name__ == "__main__":
    main()
