"""Recommendation rules on the same duels (issue 17): is the simple-regret deficit the estimate's?

Run with ``OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/preference_recommendation.py
--problems ID ... [--seeds 20] [--duels 100] [--method eubo-regret] [--jobs 1] [--out FILE]``
(``--method`` takes options as a method id does: ``'eubo-regret?repeat_duels=not-in-a-row'``).

A recommendation rule never changes the duels, so rules can be compared on exactly the same data:
the method runs once per (option set, seed) as a study would (``kernel=fit``), and its last
posterior and duels are then read by every rule below. Printed: per option set, the mean simple
regret at the end under each rule; then, over every run, how often each rule's simple regret is
below / above the method's own (paired, same duels) and the mean over option sets.

The rules (utilities are the Laplace posterior means of :mod:`boloop.gp.utility_laplace`):

* ``own``: the method's ``recommend_index()`` (for the EUBO methods the model-averaged mean over
  the capped length-scale grid, the study default's rule);
* ``every-model``: the mean averaged over the method's whole grid (length-scales x output
  variances) by Laplace evidence, no cap, no pruning;
* ``gamma``: the same with BoTorch's ``Gamma(2.4, 2.7)`` length-scale prior;
* ``map``: the mean of the single grid model of largest evidence (a maximum-a-posteriori fit, as
  BoTorch's PairwiseGP does);
* ``duelled``: the method's own mean, among the options that were in a duel only;
* ``lcb``: the method's own mean minus one posterior sd of the difference to its incumbent (a
  conservative rule that prefers what the duels have pinned down);
* ``borda``: most duels won minus lost (ties by the method's mean): no model at all.

``--out`` writes one JSON line per run (the rules' simple regrets, R(50), R(100)).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
from concurrent.futures import ProcessPoolExecutor

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from boloop import problems  # noqa: E402
from boloop.algorithms.preference import DEFAULT_LENGTHSCALES, GAMMA_LENGTHSCALE_PRIOR  # noqa: E402
from boloop.algorithms.registry import build_policy  # noqa: E402
from boloop.gp.kernels import SquaredExponential  # noqa: E402
from boloop.gp.utility_laplace import UtilityPosterior  # noqa: E402
from boloop.metrics.preference import preference_simple_regret  # noqa: E402
from boloop.simulate import simulate  # noqa: E402

RULES = ("own", "every-model", "gamma", "map", "duelled", "lcb", "borda")
VARIANCES = (1.0, 4.0, 16.0)


def _grid_mean(policy, prior: str | None, map_only: bool) -> np.ndarray:
    """Posterior mean of the utilities averaged over the whole length-scale x variance grid by
    evidence (times the prior), or of the single model of largest evidence."""
    winners = np.array([i if y else j for i, j, y in policy.duels], dtype=np.intp)
    losers = np.array([j if y else i for i, j, y in policy.duels], dtype=np.intp)
    U = policy.candidates.to_unit()
    lengthscales = getattr(policy, "lengthscales", ()) or DEFAULT_LENGTHSCALES
    variances = getattr(policy, "variances", VARIANCES)
    means, log_weights = [], []
    for ls in lengthscales:
        K = SquaredExponential(ls, 1.0).k(U, U)
        K = 0.5 * (K + K.T)
        for var in variances:
            post = UtilityPosterior(K * var, winners, losers)
            lw = post.log_evidence
            if prior == "gamma":
                k, r = GAMMA_LENGTHSCALE_PRIOR
                lw += k * math.log(ls) - r * ls
            means.append(post.mean())
            log_weights.append(lw)
    lw = np.array(log_weights)
    if map_only:
        return means[int(np.argmax(lw))]
    w = np.exp(lw - lw.max())
    return np.tensordot(w / w.sum(), np.array(means), axes=1)


def _conservative(policy, mean: np.ndarray) -> np.ndarray:
    """Mean minus one sd of ``f(x) - f(incumbent)`` under the method's model mixture."""
    ref = int(np.argmax(mean))
    second = np.zeros_like(mean)
    for wk, post in policy.posteriors():
        d = post.mean() - post.mean()[ref]
        second += wk * (post.difference_variance(ref) + d * d)
    diff = mean - mean[ref]
    return mean - np.sqrt(np.maximum(second - diff * diff, 0.0))


def run(job: tuple[str, int, int, str]) -> dict:
    pid, seed, duels, method = job
    problem = problems.get(pid)
    name, options = problems.parse_problem_id(method)  # a method id with ?key=value options
    policy = build_policy(problem.policy_spec(name, seed, **{"kernel": "fit", **options}))
    trace = simulate(policy, problem, duels, seed=seed)
    rec = trace.records
    utility = problem.utility

    def regret(k: int) -> float:
        return preference_simple_regret(utility, int(k))

    out = {
        "problem": pid,
        "seed": seed,
        "method": method,
        "R50": rec[min(49, duels - 1)]["metrics"]["cumulative_regret"],
        "R100": rec[min(99, duels - 1)]["metrics"]["cumulative_regret"],
        "own": regret(policy.recommend_index()),
    }
    has_model = hasattr(policy, "posteriors")
    mean = policy.posterior_mean() if has_model else None
    out["every-model"] = regret(np.argmax(_grid_mean(policy, None, False)))
    out["gamma"] = regret(np.argmax(_grid_mean(policy, "gamma", False)))
    out["map"] = regret(np.argmax(_grid_mean(policy, None, True)))
    if mean is None:
        mean = _grid_mean(policy, None, False)
    duelled = np.unique([k for i, j, _ in policy.duels for k in (i, j)])
    out["duelled"] = regret(duelled[np.argmax(mean[duelled])])
    out["lcb"] = regret(np.argmax(_conservative(policy, mean))) if has_model else out["own"]
    score = np.zeros(mean.size)
    for i, j, y in policy.duels:
        score[i if y else j] += 1
        score[j if y else i] -= 1
    out["borda"] = regret(np.lexsort((mean, score))[-1])
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problems", nargs="+", required=True)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--duels", type=int, default=100)
    ap.add_argument("--method", default="eubo-regret")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", default=None, help="JSON-lines file of every run")
    args = ap.parse_args(argv)
    jobs = [(p, s, args.duels, args.method) for p in args.problems for s in range(args.seeds)]
    with ProcessPoolExecutor(args.jobs) as ex:
        rows = list(ex.map(run, jobs))
    if args.out:
        with open(args.out, "w") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
    print("| option set | " + " | ".join(RULES) + " |")
    print("|---" * (len(RULES) + 1) + "|")
    per_set: dict[str, list[float]] = {r: [] for r in RULES}
    for pid in args.problems:
        mine = [r for r in rows if r["problem"] == pid]
        means = {rule: statistics.mean(r[rule] for r in mine) for rule in RULES}
        for rule in RULES:
            per_set[rule].append(means[rule])
        print(f"| {pid} | " + " | ".join(f"{means[rule]:.3f}" for rule in RULES) + " |")
    print()
    print(f"{len(rows)} runs of {args.method}, {args.duels} duels; paired against 'own':")
    for rule in RULES[1:]:
        lower = sum(r[rule] < r["own"] - 1e-12 for r in rows)
        higher = sum(r[rule] > r["own"] + 1e-12 for r in rows)
        print(
            f"  {rule}: lower in {lower} runs, higher in {higher}; mean over option sets "
            f"{statistics.mean(per_set[rule]):.4f} (own {statistics.mean(per_set['own']):.4f})"
        )


if __name__ == "__main__":
    main()
