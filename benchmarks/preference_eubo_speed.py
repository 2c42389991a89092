"""Speed of EUBO on our Laplace posterior against BoTorch's PairwiseGP + EUBO (issue 17).

Two measurements, medians over repeats, one BLAS thread, in the same process so that the ratio
is taken under the same load:

1. **The pair search on 1,000 options.** A Laplace posterior from 100 random duels on 1,000
   options of [0, 1]^3 (SE kernel, length-scale 0.2); the best pair of the EUBO score over all
   499,500 pairs, exactly: ``best_pairs`` (bounds, then closed form on the pairs the bounds
   cannot exclude; no m x m covariance) against the closed form on every pair from the full
   covariance (``eubo_all_pairs``). Both must pick the same pair.
2. **Seconds per duel** (ask + tell, the answer drawn outside the timer) on ``--problem``:
   ``eubo-regret`` and ``eubo`` (length-scale learned) for ``--duels`` duels against BoTorch's
   ``PairwiseGP`` refitted after every duel with the acquisition evaluated as a user would
   (``AnalyticExpectedUtilityOfBestOption`` on a batch of all pairs; needs the ``peers`` extra).

Run::

    OMP_NUM_THREADS=1 python benchmarks/preference_eubo_speed.py --duels 30
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from boloop.algorithms import make_policy  # noqa: E402
from boloop.gp.kernels import SquaredExponential  # noqa: E402
from boloop.gp.utility_laplace import UtilityPosterior, best_pairs, eubo_all_pairs  # noqa: E402
from boloop.problems import get  # noqa: E402
from boloop.simulate import oracle_rng  # noqa: E402


def _median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def pair_search(m: int = 1000, n: int = 100, repeats: int = 7) -> None:
    rng = np.random.default_rng(0)
    X = rng.random((m, 3))
    K = SquaredExponential(0.2, 1.0).k(X, X)
    a = rng.integers(0, m, n)
    b = (a + 1 + rng.integers(0, m - 1, n)) % m
    post = UtilityPosterior(K, a, b)
    iu = np.triu_indices(m, 1)

    def full() -> tuple[int, int]:
        mu = post.mean()
        s = eubo_all_pairs(mu, post.covariance())[iu] + 0.5 * (mu[iu[0]] + mu[iu[1]])
        k = int(np.argmax(s))
        return int(iu[0][k]), int(iu[1][k])

    def fast() -> tuple[int, int]:
        post._V = None  # noqa: SLF001 - time the factor too, as after a new duel
        pa, pb, _ = best_pairs([(1.0, post)], exploit=1.0)
        return int(pa[0]), int(pb[0])

    assert full() == fast(), (full(), fast())
    fit = _median_ms(lambda: UtilityPosterior(K, a, b), repeats)
    t_fast = _median_ms(fast, repeats)
    t_full = _median_ms(full, max(3, repeats // 2))
    print(
        f"{m} options, {n} duels: Laplace fit {fit:.1f} ms; best pair of all {m * (m - 1) // 2} "
        f"pairs: best_pairs {t_fast:.1f} ms, closed form on every pair {t_full:.1f} ms "
        "(same pair)"
    )


def _per_duel(policy, problem, duels: int, seed: int) -> list[float]:
    rng = oracle_rng(seed)
    out = []
    for _ in range(duels):
        t0 = time.perf_counter()
        q = policy.ask()
        t1 = time.perf_counter()
        ans = problem.answer(q, rng)
        t2 = time.perf_counter()
        policy.tell(q.id, ans)
        out.append(t1 - t0 + time.perf_counter() - t2)
    return out


def per_duel(problem_id: str, duels: int, seeds: int) -> None:
    problem = get(problem_id)
    res: dict[str, list[float]] = {}
    for method in ("eubo-regret", "eubo"):
        res[method] = [
            t
            for s in range(seeds)
            for t in _per_duel(make_policy(method, problem, s, kernel="fit"), problem, duels, s)
        ]
    try:
        sys.path.insert(0, str(Path(__file__).parent))
        from preference_peers import BoTorchEUBO

        res["botorch-eubo"] = [
            t
            for s in range(seeds)
            for t in _per_duel(BoTorchEUBO(problem.space.points, s, joint=False), problem, duels, s)
        ]
    except ImportError:
        print("torch/botorch not installed: our methods only")
    ref = statistics.median(res["botorch-eubo"]) if "botorch-eubo" in res else None
    for method, times in res.items():
        med = statistics.median(times)
        ratio = f", BoTorch / this = {ref / med:.0f}x" if ref else ""
        print(
            f"{problem_id} {method}: median {1000 * med:.1f} ms per duel over "
            f"{len(times)} duels{ratio}"
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problem", nargs="*", default=["preference/ackley"])
    ap.add_argument("--duels", type=int, default=30)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--options", type=int, default=1000)
    args = ap.parse_args(argv)
    print(f"load: {os.getloadavg()}")
    pair_search(args.options)
    for pid in args.problem:
        per_duel(pid, args.duels, args.seeds)
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
