"""COBOL's two-sided promise with default settings (issue 12 acceptance): no harm, some help.

Run with ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/expert_no_harm.py [--seeds 5]
[--evaluations 40] [--jobs 2] [--problems ID ...]``.

For every problem (default: the five synthetic expert problems of the paper, App. J.2.1) and
expert accuracy a in {-2, 2}, COBOL and GP-LCB run with their **default settings** for the same
seeds and the same number of f-evaluations (COBOL's default budget counts f-evaluations; labels
are free but counted). Printed per problem: mean simple regret of GP-LCB, of COBOL at a = -2 and
a = 2, the ratio COBOL / GP-LCB, the labels asked and rejected, and the longest run of
consecutive rejects (anywhere, and at the end of a run). Acceptance (issue 12):

* a = -2: COBOL's mean simple regret <= 1.5 x GP-LCB's on every problem;
* a = 2: COBOL's mean simple regret < GP-LCB's on at least 4 of 5 problems;
* no run ends with more than 5 consecutive rejects.

``--problems`` takes any expert problem ids (without ``?a=``) to rerun the check elsewhere.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from boloop.algorithms import make_policy  # noqa: E402
from boloop.problems import get  # noqa: E402
from boloop.queries import Label  # noqa: E402
from boloop.simulate import simulate  # noqa: E402

SYNTHETIC = (
    "expert/ackley4",
    "expert/holder2",
    "expert/rastrigin2",
    "expert/michalewicz5",
    "expert/rosenbrock3",
)


def _reject_runs(history: list) -> tuple[int, int]:
    """(longest run of consecutive rejected labels, the run at the end of the history)."""
    best = cur = 0
    for query, answer in history:
        if isinstance(query, Label):
            cur = cur + 1 if not answer else 0
        else:
            cur = 0
        best = max(best, cur)
    return best, cur


def run_one(args: tuple[str, str, int, int]) -> dict:
    problem_id, method, seed, n_evals = args
    problem = get(problem_id)
    policy = make_policy(method, problem, seed)
    t0 = time.perf_counter()
    trace = simulate(policy, problem, n_evals, seed=seed)
    history = [(q, a) for q, a in policy.history if not q.initial]
    longest, final = _reject_runs(history)
    return {
        "problem": problem_id,
        "method": method,
        "seed": seed,
        "simple_regret": float(trace.final_metrics["simple_regret"]),
        "evaluations": int(getattr(policy, "n_evaluations", n_evals)),
        "labels_asked": int(getattr(policy, "labels_asked", 0)),
        "labels_rejected": int(getattr(policy, "labels_rejected", 0)),
        "longest_reject_run": longest,
        "final_reject_run": final,
        "seconds": time.perf_counter() - t0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--evaluations", type=int, default=40)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--problems", nargs="+", default=list(SYNTHETIC))
    args = ap.parse_args()
    jobs = []
    for pid in args.problems:
        for s in range(args.seeds):
            jobs.append((pid, "gp-lcb", s, args.evaluations))
            for a in (-2, 2):
                jobs.append((f"{pid}?a={a}", "cobol", s, args.evaluations))
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(run_one, jobs))

    def rows(problem_id: str, method: str) -> list[dict]:
        return [r for r in results if r["problem"] == problem_id and r["method"] == method]

    print(
        f"{args.seeds} seeds x {args.evaluations} f-evaluations, default settings; "
        "SR = mean simple regret (s.e.)"
    )
    head = (
        f"{'problem':<22}{'GP-LCB SR':>16}{'COBOL a=-2':>16}{'ratio':>7}{'COBOL a=2':>16}"
        f"{'ratio':>7}{'labels -2':>11}{'labels 2':>10}{'rej.run':>8}{'end run':>8}"
    )
    print(head)
    print("-" * len(head))
    harm_ok = help_count = 0
    worst_end = 0
    for pid in args.problems:
        lcb = np.array([r["simple_regret"] for r in rows(pid, "gp-lcb")])
        cells, labels, runs, ends = [], [], [], []
        ratios = []
        for a in (-2, 2):
            rs = rows(f"{pid}?a={a}", "cobol")
            sr = np.array([r["simple_regret"] for r in rs])
            ratios.append(sr.mean() / max(lcb.mean(), 1e-300))
            cells.append(f"{sr.mean():.3g} ({sr.std(ddof=1) / np.sqrt(sr.size):.2g})")
            asked = np.mean([r["labels_asked"] for r in rs])
            rej = np.mean([r["labels_rejected"] for r in rs])
            labels.append(f"{asked:.0f}/{rej:.0f}")
            runs.append(max(r["longest_reject_run"] for r in rs))
            ends.append(max(r["final_reject_run"] for r in rs))
        harm_ok += ratios[0] <= 1.5
        help_count += ratios[1] < 1.0
        worst_end = max(worst_end, *ends)
        lcb_cell = f"{lcb.mean():.3g} ({lcb.std(ddof=1) / np.sqrt(lcb.size):.2g})"
        print(
            f"{pid:<22}{lcb_cell:>16}{cells[0]:>16}{ratios[0]:>7.2f}{cells[1]:>16}"
            f"{ratios[1]:>7.2f}{labels[0]:>11}{labels[1]:>10}{max(runs):>8}{max(ends):>8}"
        )
    n = len(args.problems)
    print(
        "labels = mean asked/rejected per run (BO phase); rej.run = longest run of consecutive "
        "rejects in any run; end run = longest run of rejects a run ended with"
    )
    print(f"a = -2, COBOL <= 1.5 x GP-LCB: {harm_ok} of {n} problems")
    print(f"a = 2, COBOL < GP-LCB: {help_count} of {n} problems")
    print(f"longest final reject run: {worst_end} (acceptance: <= 5)")
    secs = [r["seconds"] for r in results if r["method"] == "cobol"]
    print(f"COBOL seconds per run: median {np.median(secs):.1f} (machine shared; under load)")


if __name__ == "__main__":
    main()
