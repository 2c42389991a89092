"""Which duels a preference method asks, and what its posterior learns (issue 17, session 21).

For each method (an id with options, as ``boloop bench run`` takes them:
``eubo-regret?optimism_reference=average``) run with the kernel fitted on one problem and the
seeds given, per window of duels (1-10, 11-25, 26-50, 51-100, cut at ``--duels``), averaged over
the seeds and the window's duels:

* ``with incumbent``: the share of duels one of whose options is the incumbent (the option of
  largest posterior mean before the duel; the first duel has none and is not counted);
* ``distance``: the Euclidean distance of the duel's two options, the options scaled to the unit
  cube (the median over all pairs of options is printed in the heading);
* ``|du|``: the true utility difference of the two options (near 0: a coin toss);
* ``regret/option``: ``u* - (u_a + u_b) / 2``, the regret of the duel per option;

and at the window's last duel: the correlation of the posterior mean with the true utility over
all options, the number of distinct options duelled so far and in how many seeds the best
option has been in a duel. Needs a method with a posterior mean (``eubo``, ``eubo-regret``)::

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/preference_duel_traces.py \\
        --problem preference/random-table --seeds 10 --methods eubo eubo-regret
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from boloop import problems
from boloop.algorithms.registry import build_policy
from boloop.problems import parse_problem_id
from boloop.simulate import simulate

WINDOWS = ((1, 10), (11, 25), (26, 50), (51, 100), (101, 200))


def duel_rows(problem_id: str, method: str, seed: int, duels: int) -> list[dict[str, Any]]:
    """One row per duel of one run: the pair, the incumbent before it, the posterior after it."""
    problem = problems.get(problem_id)
    name, options = parse_problem_id(method)
    policy: Any = build_policy(problem.policy_spec(name, seed, **{"kernel": "fit", **options}))
    u = np.asarray(problem.utility, dtype=np.float64)
    rows: list[dict[str, Any]] = []
    incumbent: list[int | None] = [None]

    def on_record(record: dict[str, Any]) -> None:
        a, b, _ = policy.duels[-1]
        mean = policy.posterior_mean()
        duelled = {i for i, j, _ in policy.duels} | {j for i, j, _ in policy.duels}
        rows.append(
            {
                "pair": (int(a), int(b)),
                "incumbent_before": incumbent[0],
                "corr": float(np.corrcoef(mean, u)[0, 1]) if np.ptp(mean) > 0 else 0.0,
                "n_duelled": len(duelled),
                "best_duelled": int(np.argmax(u)) in duelled,
                "R": record["metrics"]["cumulative_regret"],
                "simple": record["metrics"]["simple_regret"],
            }
        )
        incumbent[0] = int(np.argmax(mean))

    simulate(policy, problem, duels, seed=seed, on_record=on_record)
    return rows


def summary(problem_id: str, method: str, seeds: int, duels: int) -> list[str]:
    """Markdown rows of ``method`` on ``problem_id``, one per window of duels."""
    problem = problems.get(problem_id)
    X = np.asarray(problem.space.points, dtype=np.float64)
    span = X.max(axis=0) - X.min(axis=0)
    X = (X - X.min(axis=0)) / np.where(span > 0, span, 1.0)
    u = np.asarray(problem.utility, dtype=np.float64)
    runs = [duel_rows(problem_id, method, s, duels) for s in range(seeds)]
    out = []
    for lo, hi in WINDOWS:
        if lo > duels:
            break
        hi = min(hi, duels)
        window = [r for run in runs for r in run[lo - 1 : hi]]
        pairs = np.array([r["pair"] for r in window])
        with_inc = [
            r["incumbent_before"] in r["pair"] for r in window if r["incumbent_before"] is not None
        ]
        dist = np.linalg.norm(X[pairs[:, 0]] - X[pairs[:, 1]], axis=1)
        du = np.abs(u[pairs[:, 0]] - u[pairs[:, 1]])
        regret = u.max() - 0.5 * (u[pairs[:, 0]] + u[pairs[:, 1]])
        last = [run[hi - 1] for run in runs]
        cells = [
            method,
            f"{lo}-{hi}",
            f"{np.mean(with_inc):.2f}" if with_inc else "-",
            f"{dist.mean():.2f}",
            f"{du.mean():.2f}",
            f"{regret.mean():.2f}",
            f"{np.mean([r['corr'] for r in last]):.2f}",
            f"{np.mean([r['n_duelled'] for r in last]):.1f}",
            f"{sum(r['best_duelled'] for r in last)} of {seeds}",
            f"{np.mean([r['R'] for r in last]):.2f}",
            f"{np.mean([r['simple'] for r in last]):.3f}",
        ]
        out.append("| " + " | ".join(cells) + " |")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problem", required=True)
    ap.add_argument("--methods", nargs="+", default=["eubo", "eubo-regret"])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--duels", type=int, default=100)
    args = ap.parse_args(argv)
    X = np.asarray(problems.get(args.problem).space.points, dtype=np.float64)
    span = X.max(axis=0) - X.min(axis=0)
    X = (X - X.min(axis=0)) / np.where(span > 0, span, 1.0)
    iu = np.triu_indices(X.shape[0], 1)
    median = float(np.median(np.linalg.norm(X[iu[0]] - X[iu[1]], axis=1)))
    print(f"{args.problem}, seeds 0-{args.seeds - 1}; median distance of two options {median:.2f}")
    header = [
        "method",
        "duels",
        "with incumbent",
        "distance",
        "|du|",
        "regret/option",
        "corr(mean, u) at end",
        "options duelled",
        "best duelled",
        "R at end",
        "simple regret at end",
    ]
    print("| " + " | ".join(header) + " |")
    print("|---" * len(header) + "|")
    for method in args.methods:
        for row in summary(args.problem, method, args.seeds, args.duels):
            print(row, flush=True)


if __name__ == "__main__":
    main()
