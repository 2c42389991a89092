"""COBOL's two-sided promise with default settings (issue 12 acceptance): no harm, some help.

Run with ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/expert_no_harm.py [--seeds 5]
[--evaluations 40] [--jobs 2] [--problems ID ...] [--cobol KEY=VALUE ...]``.

For every problem (default: the five synthetic expert problems of the paper, App. J.2.1) and
expert accuracy a in {-2, 2}, COBOL and GP-LCB run with their **default settings** for the same
seeds and the same number of f-evaluations (COBOL's default budget counts f-evaluations; labels
are free but counted). Printed per problem: mean simple regret of GP-LCB, of COBOL at a = -2 and
a = 2, the ratio COBOL / GP-LCB, the labels asked and rejected, and the longest run of
consecutive rejects (anywhere, and at the end of a run). Acceptance (issue 12):

* a = -2: COBOL's mean simple regret <= 1.5 x GP-LCB's on every problem;
* a = 2: COBOL's mean simple regret < GP-LCB's on at least 4 of 5 problems;
* no run ends with more than 5 consecutive rejects.

Per problem and expert it also prints the paired count: in how many seeds COBOL ends below /
above GP-LCB's run of the same seed (by more than 1%), which a few heavy-tailed runs cannot
decide as they decide the means. The strict count of the second line is printed with how many
of its cases are below by more than 1%: COBOL and GP-LCB share their random stream, so where the expert changes nothing that
matters the two runs differ only in the last digits of a local refinement and "below" is a tie.

``--problems`` takes any expert problem ids (without ``?a=``) to rerun the check elsewhere;
``--unseen`` runs it on problems and experts that no test and no default names (made up for
the check, defined here): a shifted 3-D Levy and a shifted 4-D Styblinski-Tang, each with the
synthetic expert (a = -2 bad, a = 2 good) and a Gaussian belief in the spirit of Fig. 6b,
``P(accept) = exp(-|u - m|^2 / (2 0.2^2))`` in unit-cube coordinates (the paper's Sigma = I in
the problem's coordinates rejects almost everything on these boxes), centred at the box corner
farthest from the optimum ("gauss-wrong", bad) or at the optimum ("gauss-strong", good).
``--subsets K`` (with more than 5 seeds) also prints how often the two 5-seed rules would pass
on 5 of the seeds drawn at random, K times: the chance that a 5-seed run of the acceptance
passes, rather than one draw of it. ``--experts a=-2 a=0`` puts a random expert in the good
expert's place (the null the good expert should beat).

``--fresh`` runs it on three more made-up problems, chosen and written down (issue 12, fifth
session) before any rule was measured on them: a reflected 3-D Hartmann on [0, 1]^3
(``x -> 1 - x``), a 5-D sum of six Gaussian wells of width 0.15 on [0, 1]^5 (centres from
``default_rng(2024)``, depths 1, 0.8, 0.8, 0.7, 0.6, 0.5) and 2-D Branin on its usual domain (three
global minima), each with the synthetic expert at a = -2 / a = 2 and a = -1 / a = 1.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from boloop.algorithms import make_policy  # noqa: E402
from boloop.problems import functions as F  # noqa: E402
from boloop.problems import get, parse_problem_id  # noqa: E402
from boloop.problems.expert import ExpertProblem, _estimate_range  # noqa: E402
from boloop.queries import Label  # noqa: E402
from boloop.simulate import simulate  # noqa: E402
from boloop.spaces import Box  # noqa: E402

#: a ratio within this of 1 is reported as a tie next to the strict count of the acceptance
TIE = 0.01
#: no harm: the bad expert's mean simple regret at most this times GP-LCB's
HARM_LIMIT = 1.5

SYNTHETIC = (
    "expert/ackley4",
    "expert/holder2",
    "expert/rastrigin2",
    "expert/michalewicz5",
    "expert/rosenbrock3",
)


_LEVY_SHIFT = np.array([2.5, -3.0, 4.0])
_ST_SHIFT = np.array([1.2, -0.7, 0.9, -1.5])


class _GaussExpert(ExpertProblem):
    """The synthetic problem with a Gaussian belief of width 0.2 (unit cube) around ``centre``."""

    centre_unit: np.ndarray

    def reject_probability(self, X: np.ndarray) -> np.ndarray:
        U = self.space.to_unit(np.asarray(X, dtype=np.float64).reshape(-1, self.space.dim))
        d2 = np.sum((U - self.centre_unit) ** 2, axis=1)
        return 1.0 - np.exp(-0.5 * d2 / 0.2**2)


def _unseen(pid: str) -> ExpertProblem:
    """``unseen/levy3?EXPERT`` or ``unseen/styblinski4?EXPERT`` with EXPERT one of ``a=-2``,
    ``a=2``, ``mvn-wrong``, ``mvn-strong`` (no expert: a = 1, for GP-LCB, which ignores it)."""
    name, _, expert = pid.partition("?")
    if name == "unseen/levy3":
        box = Box([-10.0] * 3, [10.0] * 3)

        def f(X: np.ndarray) -> np.ndarray:
            return F.levy(np.asarray(X) - _LEVY_SHIFT)

        x_opt, f_opt = 1.0 + _LEVY_SHIFT, 0.0
    elif name == "unseen/styblinski4":
        box = Box([-5.0] * 4, [5.0] * 4)

        def f(X: np.ndarray) -> np.ndarray:
            return F.styblinski_tang(np.asarray(X) - _ST_SHIFT)

        x_opt, f_opt = -2.903534 + _ST_SHIFT, -39.16617 * 4
    else:
        raise ValueError(f"unknown unseen problem {pid!r}")
    lo, hi = _estimate_range(f, box)
    if expert.startswith("gauss-"):
        p = _GaussExpert(name, f, box, f_opt, x_opt, min(lo, f_opt), hi)
        u_opt = box.to_unit(x_opt[None, :])[0]
        p.centre_unit = u_opt if expert == "gauss-strong" else np.round(1.0 - u_opt)
        return p
    a = float(expert[2:]) if expert.startswith("a=") else 1.0
    return ExpertProblem(name, f, box, f_opt, x_opt, min(lo, f_opt), hi, a=a)


_WELL_CENTRES = np.random.default_rng(2024).random((6, 5))
_WELL_DEPTHS = np.array([1.0, 0.8, 0.8, 0.7, 0.6, 0.5])


def _wells(X: np.ndarray) -> np.ndarray:
    """Six Gaussian wells of width 0.15 in [0, 1]^5 (made up for ``--fresh``)."""
    d2 = np.sum((np.asarray(X)[:, None, :] - _WELL_CENTRES[None]) ** 2, axis=2)
    return -np.exp(-0.5 * d2 / 0.15**2) @ _WELL_DEPTHS


def _fresh(pid: str) -> ExpertProblem:
    """``fresh/hartmann3``, ``fresh/wells5`` or ``fresh/branin2`` with ``?a=VALUE`` (synthetic
    expert; no expert: a = 1, for GP-LCB, which ignores it)."""
    from scipy.optimize import minimize

    name, _, expert = pid.partition("?")
    if name == "fresh/hartmann3":
        box = Box([0.0] * 3, [1.0] * 3)

        def f(X: np.ndarray) -> np.ndarray:
            return F.hartmann3(1.0 - np.asarray(X))

        x_opt, f_opt = 1.0 - np.array([0.114614, 0.555649, 0.852547]), -3.86278
    elif name == "fresh/wells5":
        box = Box([0.0] * 5, [1.0] * 5)
        f = _wells
        best = min(
            (
                minimize(lambda x: float(_wells(x[None, :])[0]), c, bounds=[(0, 1)] * 5)
                for c in _WELL_CENTRES
            ),
            key=lambda r: r.fun,
        )
        x_opt, f_opt = best.x, float(best.fun)
    elif name == "fresh/branin2":
        box = Box([-5.0, 0.0], [10.0, 15.0])
        f = F.branin
        x_opt, f_opt = np.array([math.pi, 2.275]), 0.397887
    else:
        raise ValueError(f"unknown fresh problem {pid!r}")
    lo, hi = _estimate_range(f, box)
    a = float(expert[2:]) if expert.startswith("a=") else 1.0
    return ExpertProblem(name, f, box, f_opt, x_opt, min(lo, f_opt), hi, a=a)


def _get(pid: str):
    if pid.startswith("fresh/"):
        return _fresh(pid)
    return _unseen(pid) if pid.startswith("unseen/") else get(pid)


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


def run_one(args: tuple[str, str, int, int, dict]) -> dict:
    problem_id, method, seed, n_evals, options = args
    problem = _get(problem_id)
    policy = make_policy(method, problem, seed, **(options if method == "cobol" else {}))
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
    ap.add_argument("--unseen", action="store_true", help="the made-up problems instead")
    ap.add_argument("--fresh", action="store_true", help="the fifth session's made-up problems")
    ap.add_argument("--experts", nargs="+", help="pairs (bad good) of experts, e.g. a=-2 a=2")
    ap.add_argument(
        "--cobol", nargs="+", default=[], metavar="KEY=VALUE", help="COBOL options (not defaults)"
    )
    ap.add_argument(
        "--subsets",
        type=int,
        default=0,
        metavar="K",
        help="also estimate how often the 5-seed rules pass: K random draws of 5 of the seeds run",
    )
    args = ap.parse_args()
    if args.subsets and args.seeds <= 5:
        ap.error("--subsets needs more than 5 seeds to draw 5 from")
    # the values as in a method id (cobol?KEY=VALUE): numbers, true/false, none/null
    options = parse_problem_id("cobol?" + "&".join(args.cobol))[1] if args.cobol else {}
    experts: tuple[str, ...] = ("a=-2", "a=2")
    if args.unseen:
        args.problems = ["unseen/levy3", "unseen/styblinski4"]
        experts = ("a=-2", "a=2", "gauss-wrong", "gauss-strong")
    if args.fresh:
        args.problems = ["fresh/hartmann3", "fresh/wells5", "fresh/branin2"]
        experts = ("a=-2", "a=2", "a=-1", "a=1")
    if args.experts:
        experts = tuple(args.experts)
    jobs = []
    for pid in args.problems:
        for s in range(args.seeds):
            jobs.append((pid, "gp-lcb", s, args.evaluations, {}))
            for e in experts:
                jobs.append((f"{pid}?{e}", "cobol", s, args.evaluations, options))
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = []
        for r in pool.map(run_one, jobs):  # one line per run as it ends (partial sweeps count)
            results.append(r)
            print(
                f"run {r['problem']} {r['method']} seed {r['seed']}: SR {r['simple_regret']:.4g}"
                f" labels {r['labels_asked']}/{r['labels_rejected']} ({r['seconds']:.0f} s)",
                flush=True,
            )

    def rows(problem_id: str, method: str) -> list[dict]:
        return [r for r in results if r["problem"] == problem_id and r["method"] == method]

    print(
        f"{args.seeds} seeds x {args.evaluations} f-evaluations, "
        f"{'COBOL options ' + str(options) if options else 'default settings'}; "
        "SR = mean simple regret (s.e.)"
    )
    head = (
        f"{'problem':<22}{'GP-LCB SR':>16}{'COBOL ' + experts[0]:>16}{'ratio':>7}"
        f"{'COBOL ' + experts[1]:>16}{'ratio':>7}{'labels bad':>11}{'good':>10}{'rej.run':>8}"
        f"{'end run':>8}"
    )
    print(head)
    print("-" * len(head))
    harm_ok = help_count = help_clear = 0
    worst_end = 0
    pairs = [experts[i : i + 2] for i in range(0, len(experts), 2)]
    rows_out = [(pid, pair) for pair in pairs for pid in args.problems]
    for pid, pair in rows_out:
        lcb = np.array([r["simple_regret"] for r in rows(pid, "gp-lcb")])
        cells, labels, runs, ends = [], [], [], []
        ratios = []
        for e in pair:
            rs = rows(f"{pid}?{e}", "cobol")
            sr = np.array([r["simple_regret"] for r in rs])
            ratios.append(sr.mean() / max(lcb.mean(), 1e-300))
            cells.append(f"{sr.mean():.3g} ({sr.std(ddof=1) / np.sqrt(sr.size):.2g})")
            asked = np.mean([r["labels_asked"] for r in rs])
            rej = np.mean([r["labels_rejected"] for r in rs])
            labels.append(f"{asked:.0f}/{rej:.0f}")
            runs.append(max(r["longest_reject_run"] for r in rs))
            ends.append(max(r["final_reject_run"] for r in rs))
        harm_ok += ratios[0] <= HARM_LIMIT
        help_count += ratios[1] < 1.0
        help_clear += ratios[1] < 1.0 - TIE
        worst_end = max(worst_end, *ends)
        lcb_cell = f"{lcb.mean():.3g} ({lcb.std(ddof=1) / np.sqrt(lcb.size):.2g})"
        label = pid if len(pairs) == 1 else f"{pid} {pair[0]}/{pair[1]}"
        print(
            f"{label:<22}{lcb_cell:>16}{cells[0]:>16}{ratios[0]:>7.2f}{cells[1]:>16}"
            f"{ratios[1]:>7.2f}{labels[0]:>11}{labels[1]:>10}{max(runs):>8}{max(ends):>8}"
        )
    n = len(rows_out)
    print(
        "labels = mean asked/rejected per run (BO phase); rej.run = longest run of consecutive "
        "rejects in any run; end run = longest run of rejects a run ended with"
    )
    bad = "/".join(p[0] for p in pairs)
    good = "/".join(p[1] for p in pairs)
    print(f"bad expert ({bad}), COBOL <= {HARM_LIMIT} x GP-LCB: {harm_ok} of {n}")
    print(
        f"good expert ({good}), COBOL < GP-LCB: {help_count} of {n} "
        f"(of which by more than {TIE:.0%}: {help_clear}; the rest are ties, e.g. the same runs "
        "up to the last digits of a local refinement)"
    )
    for pid, pair in rows_out:  # per seed, for the paired view
        base = sorted(rows(pid, "gp-lcb"), key=_seed)
        lcb = [f"{r['simple_regret']:.3g}" for r in base]
        print(f"  per seed {pid} GP-LCB: {' '.join(lcb)}")
        for e in pair:
            rs = sorted(rows(f"{pid}?{e}", "cobol"), key=_seed)
            vals = " ".join(f"{r['simple_regret']:.3g}" for r in rs)
            print(f"  per seed {pid} COBOL {e}: {vals}")
    # the paired count: means of heavy-tailed regrets are decided by a few runs; how many seeds
    # COBOL ends below / above GP-LCB's run of the same seed says how often the expert helps
    for pid, pair in rows_out:
        base = {r["seed"]: r["simple_regret"] for r in rows(pid, "gp-lcb")}
        for e in pair:
            rs = rows(f"{pid}?{e}", "cobol")
            below = sum(r["simple_regret"] < base[r["seed"]] * (1 - TIE) for r in rs)
            above = sum(r["simple_regret"] > base[r["seed"]] * (1 + TIE) for r in rs)
            print(
                f"  paired {pid} COBOL {e}: below GP-LCB's run of the same seed in {below}, "
                f"above in {above} of {len(rs)} seeds (by more than {TIE:.0%})"
            )
    print(f"longest final reject run: {worst_end} (acceptance: <= 5)")
    if args.subsets:
        _subsets(results, rows_out, args.seeds, args.subsets)
    secs = [r["seconds"] for r in results if r["method"] == "cobol"]
    print(f"COBOL seconds per run: median {np.median(secs):.1f} (machine shared; under load)")


def _seed(r: dict) -> int:
    return int(r["seed"])


def _subsets(results: list[dict], rows_out: list, n_seeds: int, k: int) -> None:
    """How often the acceptance's 5-seed rules pass on 5 seeds drawn (without replacement, the
    same seeds for every method, as in a run with ``--seeds 5``) from the ``n_seeds`` run:
    help = the good expert below GP-LCB on at least 4 of every 5 rows (``ceil(0.8 n)`` of n);
    no harm = the bad expert within 1.5x on every row. Draws from ``default_rng(0)``."""
    sr: dict[tuple[str, str], np.ndarray] = {}
    for r in results:
        key = (r["problem"], r["method"])
        sr.setdefault(key, np.full(n_seeds, np.nan))[int(r["seed"])] = r["simple_regret"]
    need = math.ceil(0.8 * len(rows_out))
    rng = np.random.default_rng(0)
    helped = unharmed = 0
    below_total = 0
    for _ in range(k):
        S = rng.choice(n_seeds, size=5, replace=False)
        below = harm_ok = 0
        for pid, (bad, good) in rows_out:
            lcb = sr[(pid, "gp-lcb")][S].mean()
            below += sr[(f"{pid}?{good}", "cobol")][S].mean() < lcb
            harm_ok += sr[(f"{pid}?{bad}", "cobol")][S].mean() <= HARM_LIMIT * lcb
        helped += below >= need
        unharmed += harm_ok == len(rows_out)
        below_total += below
    print(
        f"{k} draws of 5 of the {n_seeds} seeds: good expert below GP-LCB on >= {need} of "
        f"{len(rows_out)} in {helped / k:.3f} of them (mean count below {below_total / k:.2f}); "
        f"bad expert within {HARM_LIMIT}x everywhere in {unharmed / k:.3f}"
    )


if __name__ == "__main__":
    main()
