"""Preferences against the peer most users would pick: BoTorch's PairwiseGP with EUBO (issue 17).

For every finite preference problem and seed, the same option set, the same logistic outcomes
(the problem's oracle with :func:`boloop.simulate.oracle_rng`) and the same regret (the problem's
tracker) for

* our methods run as a user would (``kernel=fit``), by default ``eubo`` and ``maxminlcb``;
* ``botorch-eubo``: BoTorch's ``PairwiseGP`` (default priors and probit likelihood, inputs scaled
  to the unit cube) refitted with ``fit_gpytorch_mll`` after every duel, the next duel the pair of
  largest ``AnalyticExpectedUtilityOfBestOption`` over all pairs of options (the first duel a
  random pair from the seed), recommending the option of largest posterior mean.

Prints R(25) / R(50) / R(100) (cumulative regret), simple regret at the end and the median
seconds per duel (ask + tell). Needs the optional ``peers`` extra for the peer (``torch``,
``botorch``); without it only our methods run::

    OMP_NUM_THREADS=1 python benchmarks/preference_peers.py --seeds 5 --duels 100
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

import numpy as np

import boloop.problems as problems
from boloop.queries import BasePolicy, Compare, Query
from boloop.simulate import simulate


class BoTorchEUBO(BasePolicy):
    """The peer: PairwiseGP + analytic EUBO over all pairs of a finite option set."""

    method_id = "botorch-eubo"
    family = "preference"

    def __init__(self, options: np.ndarray, seed: int) -> None:
        import torch

        super().__init__(seed)
        torch.manual_seed(seed)
        self.torch = torch
        self.options = np.asarray(options, dtype=np.float64)
        lo, hi = self.options.min(axis=0), self.options.max(axis=0)
        self._unit = torch.tensor(
            (self.options - lo) / np.where(hi > lo, hi - lo, 1.0), dtype=torch.float64
        )
        self.m = self.options.shape[0]
        self._pairs = np.array(np.triu_indices(self.m, 1)).T  # (m (m - 1) / 2, 2)
        self._comparisons: list[tuple[int, int]] = []
        self._mean = np.zeros(self.m)
        self._model: Any = None

    def _propose(self) -> Query:
        if self._model is None:
            i, j = self.rng.choice(self.m, size=2, replace=False)
        else:
            from botorch.acquisition.preference import AnalyticExpectedUtilityOfBestOption

            acq = AnalyticExpectedUtilityOfBestOption(pref_model=self._model)
            X = self._unit[self.torch.as_tensor(self._pairs)]  # (n_pairs, 2, d)
            with self.torch.no_grad():
                values = np.concatenate(
                    [acq(X[k : k + 4096]).numpy() for k in range(0, X.shape[0], 4096)]
                )
            best = np.flatnonzero(values >= values.max() - 1e-12)
            i, j = self._pairs[int(best[0] if best.size == 1 else self.rng.choice(best))]
        return self._new_compare(self.options[i], self.options[j], a_index=int(i), b_index=int(j))

    def _observe(self, query: Query, answer: Any) -> None:
        from botorch.fit import fit_gpytorch_mll
        from botorch.models.pairwise_gp import PairwiseGP, PairwiseLaplaceMarginalLogLikelihood

        assert isinstance(query, Compare)
        a, b = int(query.a_index), int(query.b_index)
        self._comparisons.append((a, b) if int(answer) == 0 else (b, a))
        comp = self.torch.tensor(self._comparisons, dtype=self.torch.long)
        model = PairwiseGP(self._unit, comp)
        try:
            fit_gpytorch_mll(PairwiseLaplaceMarginalLogLikelihood(model.likelihood, model))
        except Exception:  # botorch warns and keeps the initial values; so do we
            pass
        model.eval()
        with self.torch.no_grad():
            self._mean = model.posterior(self._unit).mean.squeeze(-1).numpy()
        self._model = model

    def recommend_index(self) -> int:
        return int(np.argmax(self._mean))

    def recommend(self) -> np.ndarray:
        return self.options[self.recommend_index()].copy()


def run(problem_id: str, method: str, seed: int, duels: int) -> dict:
    problem = problems.get(problem_id)
    if method == "botorch-eubo":
        policy: Any = BoTorchEUBO(problem.space.points, seed)
        trace = simulate(policy, problem, duels, seed=seed)
    else:
        trace = simulate(method, problem, duels, seed=seed, kernel="fit")
    rec = trace.records
    return {
        "R": {
            t: rec[t - 1]["metrics"]["cumulative_regret"]
            for t in (25, 50, 100, 200)
            if t <= len(rec)
        },
        "simple": rec[-1]["metrics"]["simple_regret"],
        "per_duel": statistics.median(r["ask_seconds"] + r["tell_seconds"] for r in rec),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--duels", type=int, default=100)
    ap.add_argument("--methods", nargs="*", default=["eubo", "maxminlcb"])
    ap.add_argument("--problems", nargs="*", default=[e.id for e in problems.list("preference")])
    args = ap.parse_args(argv)
    try:
        import botorch  # noqa: F401

        methods = [*args.methods, "botorch-eubo"]
    except ImportError:
        print("torch/botorch not installed (pip install -e '.[peers]'): our methods only")
        methods = list(args.methods)
    cps = [t for t in (25, 50, 100, 200) if t <= args.duels]
    print(
        "| problem | method | "
        + " | ".join(f"R({t})" for t in cps)
        + " | simple regret | ms/duel |"
    )
    print("|---" * (4 + len(cps)) + "|")
    for pid in args.problems:
        for m in methods:
            rows = [run(pid, m, s, args.duels) for s in range(args.seeds)]
            cells = " | ".join(f"{statistics.mean(r['R'][t] for r in rows):.2f}" for t in cps)
            sr = [r["simple"] for r in rows]
            ms = 1000 * statistics.median(r["per_duel"] for r in rows)
            print(
                f"| {pid} | {m} | {cells} | {statistics.mean(sr):.3f} ± "
                f"{statistics.pstdev(sr) / len(sr) ** 0.5:.3f} | {ms:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
