"""Speed of the preference policies: seconds per duel (ask + tell), median, one BLAS thread.

Targets (issue 5): MR-LPF ask+tell on 100 arms <= 5 ms per duel and on 275 arms <= 20 ms;
MaxMinLCB on 100 arms at t = 300 <= 20 ms. Also how the cost grows with the number of arms m and
with the step t. Run:

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/preference_speed.py

The oracle's answer is drawn between ask and tell and is not timed. Figures depend on the machine
load; the script prints the median, mean and max over all timed duels of ``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from boloop.algorithms.preference import MRLPF, MaxMinLCB  # noqa: E402
from boloop.gp import SquaredExponential  # noqa: E402
from boloop.problems import get  # noqa: E402
from boloop.problems.preference import PreferenceProblem  # noqa: E402
from boloop.spaces import CandidateSet  # noqa: E402


def _duels(policy, problem, n, rng, timed_from=0, keep=None):
    """Play ``n`` duels; return the ask+tell seconds of duels ``timed_from..n-1`` for which
    ``keep(policy)`` (evaluated before the ask) is true."""
    times = []
    for t in range(n):
        timed = t >= timed_from and (keep is None or keep(policy))
        t0 = time.perf_counter()
        q = policy.ask()
        t1 = time.perf_counter()
        ans = problem.compare(q, rng)
        t2 = time.perf_counter()
        policy.tell(q.id, ans)
        t3 = time.perf_counter()
        if timed:
            times.append((t1 - t0) + (t3 - t2))
    return times


def _all_arms(policy) -> bool:
    return policy.M.size == policy.m


def _round_end(policy) -> bool:
    return policy.n_in_round == policy.schedule[policy.round] - 1


def _grid_problem(m: int) -> PreferenceProblem:
    X = np.linspace(0.0, 1.0, m)[:, None]
    u = 3.0 * np.sin(7.0 * X[:, 0]) * np.exp(-X[:, 0])
    return PreferenceProblem(
        id=f"bench/grid{m}", family="preference", space=CandidateSet(X), utility=u
    )


def report(label: str, times: list[float]) -> None:
    ms = [1000 * t for t in times]
    print(
        f"{label:<52s} median {statistics.median(ms):8.3f} ms  mean {statistics.fmean(ms):8.3f}"
        f"  max {max(ms):8.2f}  (n={len(ms)})",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="skip the scaling sweeps")
    args = ap.parse_args()
    R = args.repeats

    print("== targets ==")
    p = get("preference/rkhs-se")
    y = get("preference/yelp")
    for label, prob, T, beta in (
        ("100 arms (rkhs-se), T = 300", p, 300, 1.0),
        ("275 arms (yelp stand-in), T = 2000", y, 2000, 0.1),
    ):
        runs = {
            "all duels": None,
            "round 1 (all arms survive)": _all_arms,
            "round-end duels (tell fits + eliminates)": _round_end,
        }
        for name, keep in runs.items():
            times = []
            for s in range(R):
                pol = MRLPF(
                    prob.space, horizon=T, kernel=prob.settings["kernel"], beta=beta, seed=s
                )
                times += _duels(pol, prob, T, np.random.default_rng(s), keep=keep)
            report(f"MR-LPF {label}: {name}", times)

    for name, kw in (
        ("candidate set (paper)", {}),
        ("all arms, use_candidate_set=False", {"use_candidate_set": False}),
    ):
        times = []
        for s in range(R):
            pol = MaxMinLCB(p.space, kernel=p.settings["kernel"], seed=s, **kw)
            times += _duels(pol, p, 320, np.random.default_rng(s), timed_from=300)
        report(f"MaxMinLCB 100 arms (rkhs-se), t = 301..320, {name}", times)
        times = []
        for s in range(R):
            pol = MaxMinLCB(y.space, kernel=y.settings["kernel"], beta=2.0, seed=s, **kw)
            times += _duels(pol, y, 320, np.random.default_rng(s), timed_from=300)
        report(f"MaxMinLCB 275 arms (yelp), t = 301..320, {name}", times)

    if args.quick:
        return
    print("== growth with the number of arms m (SE l = 0.1 on a grid of [0, 1]) ==")
    for m in (50, 100, 200, 400, 800):
        q = _grid_problem(m)
        kern = SquaredExponential(0.1)
        times = []
        for s in range(R):
            pol = MRLPF(q.space, horizon=300, kernel=kern, seed=s)
            times += _duels(pol, q, 300, np.random.default_rng(s), keep=_all_arms)
        report(f"MR-LPF m = {m}, round 1 (all arms)", times)
        times = []
        for s in range(R):
            pol = MaxMinLCB(q.space, kernel=kern, use_candidate_set=False, seed=s)
            times += _duels(pol, q, 120, np.random.default_rng(s), timed_from=100)
        report(f"MaxMinLCB m = {m}, all arms, t = 101..120", times)
    print("== growth with the step t (100 arms, rkhs-se, all arms) ==")
    for t_end in (100, 300, 1000, 2000):
        times = []
        for s in range(R):
            pol = MaxMinLCB(p.space, kernel=p.settings["kernel"], use_candidate_set=False, seed=s)
            times += _duels(pol, p, t_end, np.random.default_rng(s), timed_from=t_end - 20)
        report(f"MaxMinLCB 100 arms, t = {t_end - 19}..{t_end}", times)
    for T in (300, 2000, 10000):
        pol = MRLPF(p.space, horizon=T, kernel=p.settings["kernel"], seed=0)
        t0 = time.perf_counter()
        _duels(pol, p, T, np.random.default_rng(0))
        print(
            f"MR-LPF 100 arms, T = {T}: total {time.perf_counter() - t0:.3f} s for T duels",
            flush=True,
        )


if __name__ == "__main__":
    main()
