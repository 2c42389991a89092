"""Preferences against the peer most users would pick: BoTorch's PairwiseGP with EUBO (issue 17).

For every finite preference problem and seed, the same option set, the same logistic outcomes
(the problem's oracle with :func:`boloop.simulate.oracle_rng`) and the same regret (the problem's
tracker) for

* our methods run as a user would (``kernel=fit``), by default ``eubo-regret`` (the study
  default), ``eubo`` and ``maxminlcb``;
* ``botorch-eubo``: BoTorch's ``PairwiseGP`` (default priors and probit likelihood, inputs scaled
  to the unit cube) refitted with ``fit_gpytorch_mll`` after every duel, the next duel the pair of
  largest ``AnalyticExpectedUtilityOfBestOption`` over all pairs of options (the first duel a
  random pair from the seed), recommending the option of largest posterior mean.

Prints R(25) / R(50) / R(100) (cumulative regret; the columns that fit in ``--duels``) and the
simple regret at the end (mean ± standard error over seeds) and the median milliseconds per duel
(ask + tell). BoTorch's warnings during the peer's fits and acquisitions (``OptimizationWarning``
when its optimiser stops early, ``NumericalWarning`` when it adds jitter, ...) are counted, not
printed: one summary line after the table. Needs the optional ``peers`` extra for the peer
(``torch``, ``botorch``); without it only our methods run::

    OMP_NUM_THREADS=1 python benchmarks/preference_peers.py --seeds 5 --duels 100
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import boloop.problems as problems
from boloop.problems import parse_problem_id
from boloop.queries import BasePolicy, Compare, Query
from boloop.recommendations import BestPoint
from boloop.simulate import simulate


@contextlib.contextmanager
def counting_warnings(counts: Counter[str]) -> Iterator[None]:
    """Silence every warning raised inside the block, counting it by category name in
    ``counts`` (BoTorch warns on most refits of a few duels: hundreds of lines per table)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            counts.update(type(w.message).__name__ for w in caught)


def warnings_summary(counts: Counter[str], runs: int) -> str:
    """One line for the warnings of the peer's ``runs`` runs: ``12 OptimizationWarning, ...``."""
    parts = ", ".join(f"{n} {name}" for name, n in counts.most_common()) or "none"
    return f"BoTorch warnings silenced in the peer's {runs} run(s) (not cached): {parts}"


def table_row(cells: list[str]) -> str:
    """A markdown table row of ``cells``."""
    return "| " + " | ".join(cells) + " |"


class BoTorchEUBO(BasePolicy):
    """The peer: PairwiseGP + analytic EUBO over all pairs of a finite option set."""

    method_id = "botorch-eubo"
    family = "preference"

    def __init__(self, options: np.ndarray, seed: int, joint: bool = True) -> None:
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
        self.joint = joint
        #: warnings BoTorch raised in this run (silenced), by category name
        self.warning_counts: Counter[str] = Counter()

    def _acquisition_values(self) -> np.ndarray:
        """BoTorch's analytic EUBO of every pair, evaluated as a user would: the acquisition
        function on a batch of (pair, 2, d) tensors."""
        from botorch.acquisition.preference import AnalyticExpectedUtilityOfBestOption

        acq = AnalyticExpectedUtilityOfBestOption(pref_model=self._model)
        X = self._unit[self.torch.as_tensor(self._pairs)]  # (n_pairs, 2, d)
        with self.torch.no_grad():
            return np.concatenate(
                [acq(X[k : k + 4096]).numpy() for k in range(0, X.shape[0], 4096)]
            )

    def _acquisition_values_joint(self) -> np.ndarray:
        """The same values from one joint posterior over all options (the 2 x 2 posterior of a
        pair is a block of the joint one) and the formula of BoTorch's
        ``AnalyticExpectedUtilityOfBestOption.forward`` (with its ``SIGMA_JITTER`` clamp): the
        same numbers in a fraction of the time, for the regret runs."""
        from botorch.acquisition.preference import SIGMA_JITTER
        from scipy.special import ndtr

        with self.torch.no_grad():
            post = self._model.posterior(self._unit)
            mu = post.mean.squeeze(-1).numpy()
            C = post.covariance_matrix.numpy()
        a, b = self._pairs[:, 0], self._pairs[:, 1]
        var = C[a, a] + C[b, b] - 2.0 * C[a, b]
        sigma = np.sqrt(np.maximum(var, SIGMA_JITTER))
        u = (mu[a] - mu[b]) / sigma
        return sigma * (np.exp(-0.5 * u * u) / np.sqrt(2 * np.pi) + u * ndtr(u)) + mu[b]

    def _propose(self) -> Query:
        if self._model is None:
            i, j = self.rng.choice(self.m, size=2, replace=False)
        else:
            with counting_warnings(self.warning_counts):
                values = (
                    self._acquisition_values_joint() if self.joint else self._acquisition_values()
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
        with counting_warnings(self.warning_counts):
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

    def recommend(self) -> BestPoint:
        k = self.recommend_index()
        return BestPoint(self.options[k].copy(), k)

    def hyperparameters(self) -> dict[str, Any]:
        """The fitted kernel of the last refit: output scale and length-scales (unit cube)."""
        if self._model is None:
            return {}
        cm = self._model.covar_module
        base = getattr(cm, "base_kernel", cm)
        out: dict[str, Any] = {
            "lengthscale": base.lengthscale.detach().numpy().reshape(-1).tolist()
        }
        if hasattr(cm, "outputscale"):
            out["outputscale"] = float(cm.outputscale.detach())
        return out


def run(problem_id: str, method: str, seed: int, duels: int) -> dict:
    problem = problems.get(problem_id)
    if method == "botorch-eubo":
        policy: Any = BoTorchEUBO(problem.space.points, seed)
        trace = simulate(policy, problem, duels, seed=seed)
    else:  # a method id may carry options, as in ``boloop bench run``: eubo-regret?exploit=0.5
        name, options = parse_problem_id(method)
        trace = simulate(
            name, problem, duels, seed=seed, method=method, **{"kernel": "fit", **options}
        )
    rec = trace.records
    extra = (
        {"hyper": policy.hyperparameters(), "warnings": dict(policy.warning_counts)}
        if method == "botorch-eubo"
        else {}
    )
    return {
        **extra,
        "R": {
            t: rec[t - 1]["metrics"]["cumulative_regret"]
            for t in (25, 50, 100, 200)
            if t <= len(rec)
        },
        "simple": rec[-1]["metrics"]["simple_regret"],
        "per_duel": statistics.median(r["ask_seconds"] + r["tell_seconds"] for r in rec),
    }


def _mean_se(values: list[float]) -> str:
    if len(values) < 2:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values) / len(values) ** 0.5:.2f}"


def _cached(path: Path | None) -> dict[tuple[str, str, int, int], dict]:
    if path is None or not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        row["R"] = {int(k): v for k, v in row["R"].items()}
        out[(row["problem"], row["method"], row["seed"], row["duels"])] = row
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--duels", type=int, default=100)
    ap.add_argument("--methods", nargs="*", default=["eubo-regret", "eubo", "maxminlcb"])
    ap.add_argument("--problems", nargs="*", default=[e.id for e in problems.list("preference")])
    ap.add_argument("--no-peer", action="store_true", help="our methods only")
    ap.add_argument(
        "--cached-peer-only",
        action="store_true",
        help="the peer's rows from --cache only: seeds not cached are left out (the table says "
        "how many seeds each cell has), nothing of BoTorch's is run",
    )
    ap.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="JSON-lines file of finished runs of the peer (read, and appended to): BoTorch's "
        "runs take seconds per duel, ours are always rerun",
    )
    args = ap.parse_args(argv)
    methods = list(args.methods)
    if not args.no_peer:
        try:
            import botorch  # noqa: F401

            methods.append("botorch-eubo")
        except ImportError:
            print("torch/botorch not installed (pip install -e '.[peers]'): our methods only")
    cache = _cached(args.cache)
    cps = [t for t in (25, 50, 100, 200) if t <= args.duels]
    header = ["problem", "method", "seeds", *(f"R({t})" for t in cps), "simple regret", "ms/duel"]
    print(table_row(header))
    print("|---" * len(header) + "|")
    peer_warnings: Counter[str] = Counter()
    peer_runs = 0
    for pid in args.problems:
        for m in methods:
            rows = []
            for s in range(args.seeds):
                key = (pid, m, s, args.duels)
                if m == "botorch-eubo" and key in cache:
                    rows.append(cache[key])
                    continue
                if m == "botorch-eubo" and args.cached_peer_only:
                    continue
                row = run(pid, m, s, args.duels)
                if m == "botorch-eubo":
                    peer_warnings.update(row.pop("warnings"))
                    peer_runs += 1
                if m == "botorch-eubo" and args.cache is not None:
                    row.update(problem=pid, method=m, seed=s, duels=args.duels, when=time.time())
                    with args.cache.open("a") as fh:
                        fh.write(json.dumps(row) + "\n")
                rows.append(row)
            if not rows:
                print(table_row([pid, m, "0", *["-"] * (len(header) - 3)]), flush=True)
                continue
            sr = [r["simple"] for r in rows]
            se = (statistics.stdev(sr) if len(sr) > 1 else 0.0) / len(sr) ** 0.5
            ms = 1000 * statistics.median(r["per_duel"] for r in rows)
            cells = [
                pid,
                m,
                str(len(rows)),
                *(_mean_se([r["R"][t] for r in rows]) for t in cps),
                f"{statistics.mean(sr):.3f} ± {se:.3f}",
                f"{ms:.2f}",
            ]
            print(table_row(cells), flush=True)
    if peer_runs:
        print(warnings_summary(peer_warnings, peer_runs))


if __name__ == "__main__":
    main()
