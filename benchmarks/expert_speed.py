"""Speed of the expert family (issue 7): median wall-clock seconds, one thread.

Run with ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/expert_speed.py [--repeats 5]``.

Measures
1. the MLE (37) with 50 labels in 4-D (target <= 50 ms);
2. both bounds (38)/(39) for 2,000 candidates with 50 labels (target <= 0.5 s), and the lower
   bound alone (what the acquisition needs);
3. one COBOL iteration (ask + tell) on Ackley-4D with 50 labels (target <= 0.2 s).

The labels come from the synthetic expert of Example 2.2 (a = 1) at uniform points; the kernel is
the ARD SE with length-scale 0.3 and the practical B_g doubling (pre-training on the 50 labels).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from boloop.algorithms.expert import COBOL  # noqa: E402
from boloop.gp.kernels import SquaredExponential  # noqa: E402
from boloop.gp.likelihood_ratio import LikelihoodRatioModel  # noqa: E402
from boloop.problems import get  # noqa: E402
from boloop.queries import Label  # noqa: E402

CPU: list[tuple[str, float]] = []


def _median(fn, repeats: int, name: str = "") -> float:
    """Median wall-clock seconds; the median CPU seconds of this process go to CPU (on a loaded
    machine the CPU time is the better estimate of the unloaded wall-clock time)."""
    times, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    CPU.append((name, statistics.median(cpu)))
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    problem = get("expert/ackley4?a=1")
    box = problem.space
    X = box.sample(50, seed=rng)
    U = box.to_unit(X)
    labels = np.array(
        [not problem.label(Label(id=i, x=x), rng) for i, x in enumerate(X)], dtype=float
    )
    model = LikelihoodRatioModel(SquaredExponential(lengthscale=[0.3] * 4, variance=1.0))
    model.set_data(U, labels, pretrain=True)

    def mle() -> None:
        model._mle = None
        _ = model.mle

    t_mle = _median(mle, args.repeats, "MLE")
    C = rng.random((2000, 4))
    t_both = _median(lambda: model.bounds(C), args.repeats, "both bounds")
    t_lower = _median(lambda: model.bounds(C, upper=False), args.repeats, "lower bound")
    print(f"B_g after pre-training: {model.norm_bound:g}, alpha_1 = {model.alpha1:.3g}")
    print(f"MLE (37), 50 labels:                      {t_mle * 1e3:8.1f} ms   (target 50 ms)")
    print(f"bounds (38)+(39), 2000 candidates:        {t_both:8.3f} s    (target 0.5 s)")
    print(f"lower bound (39) only, 2000 candidates:   {t_lower:8.3f} s")

    # one COBOL iteration with 50 labels: feed 40 BO-phase labels after the 10 initial ones
    policy = COBOL(box, seed=0)
    orng = np.random.default_rng(1)
    while policy.n_expert_queries + policy.n_initial_labels < 50 or policy.X_f.shape[0] < 3:
        q = policy.ask()
        ans = problem.answer(q, orng)
        policy.tell(q.id, ans)
    times, cpu = [], []
    for _ in range(args.repeats):
        t, c = time.perf_counter(), time.process_time()
        it = policy.iteration
        while policy.iteration == it:  # an accepted label is followed by the evaluation
            q = policy.ask()
            policy.tell(q.id, problem.answer(q, orng))
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    CPU.append(("COBOL iteration", statistics.median(cpu)))
    print(
        f"COBOL iteration, Ackley-4D, {policy.expert.n} labels: "
        f"{statistics.median(times):8.3f} s    (target 0.2 s)"
    )
    print("median CPU seconds: " + ", ".join(f"{k} {v:.4f}" for k, v in CPU))


if __name__ == "__main__":
    main()
