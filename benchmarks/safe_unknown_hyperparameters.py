"""Safety with hyperparameters nobody knows (issue 18): unsafe evaluations and regret of the safe
family when the kernels are learned from the data (the default a user gets), next to the fixed
kernels of the reproductions.

* ``safe/random-gp`` draws whose generating length-scales and output variance are themselves drawn
  from a wide prior (log-uniform length-scales of f and g in [0.1, 1], variance of g in
  [0.01, 1]) and are unknown to the method;
* the benchmark problems (``safe/branin``, ``safe/hartmann3``, ``safe/pendulum``,
  ``safe/clinical-trial``) over seeds;
* ``made-up/heater``: a problem made up here and used nowhere else (:func:`made_up_heater`).

Run (one thread; ``--jobs`` processes)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python \\
        benchmarks/safe_unknown_hyperparameters.py --draws 100 --seeds 10 --jobs 2

Prints one row per (problem, method, hyperparameters): runs, runs with an unsafe evaluation, total
unsafe evaluations, mean final simple regret and mean cumulative regret.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

METHODS = ("m-safeopt", "safeopt-mc", "predvar")
MODES = {
    "learned": {"fit_hyperparameters": True},
    "fixed": {},
    # the option offset_g (an unknown constant in g's trend model; not the default)
    "learned-offset": {"fit_hyperparameters": True, "offset_g": True},
}
#: the modes run by default and set side by side by --table
SIDE = ("learned", "fixed")


def random_gp_id(draw: int) -> str | None:
    """A ``safe/random-gp`` id whose kernels come from the wide prior (seeded by ``draw``)."""
    import numpy as np

    rng = np.random.default_rng(10_000 + draw)
    lf, lg = np.exp(rng.uniform(np.log(0.1), np.log(1.0), size=2))
    vg = float(np.exp(rng.uniform(np.log(0.01), np.log(1.0))))
    return f"safe/random-gp?seed={draw}&lengthscale_f={lf:.4f}&lengthscale_g={lg:.4f}&variance_g={vg:.4f}"


def made_up_heater(n: int = 100) -> object:
    """A safe problem made up for this benchmark (in no test, no paper, no default was tuned on
    it): heater power ``s``, position ``x``; the temperature ``g`` rises with the power, fastest
    near a hot spot at ``x = 0.3`` (limit ``h = 0.6``), the yield ``f`` grows with the power and
    peaks near ``x = 0.75``; noise sd 0.005 on both. "fixed" is the MAP kernel from 60 random
    evaluations (``reference_kernels``: what a careful user could fit offline, not shortened)."""
    import numpy as np

    from boloop.problems.safe import SafeProblem, _settings, growth_constants, reference_kernels
    from boloop.spaces import SafeSpace

    def functions(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s, x = P[:, 0], P[:, 1]
        g = 0.2 + 0.6 * s * (0.6 + 0.4 * np.exp(-(((x - 0.3) / 0.15) ** 2)))
        g = g + 0.05 * s**2 * np.sin(8.0 * x)
        f = s * (1.0 + np.cos(5.0 * x)) / 2.0 + 0.5 * np.exp(-(((x - 0.75) / 0.1) ** 2))
        return f, g

    space = SafeSpace.grid((0.0, 1.0), n, [[0.0, 1.0]], n, names=["power", "position"])
    prob = SafeProblem(
        id="made-up/heater",
        family="safe",
        space=space,
        description="made-up heater (benchmark only)",
        functions=functions,
        noise_std=0.005,
    )
    F, G = prob.truth()
    L_f, L_g = growth_constants(F, G, space.s_values)
    prob.settings = _settings(0.6, L_f, L_g, 2, float(np.var(F)), 0.1, noise=0.005**2)
    kf, kg = reference_kernels(prob)
    prob.settings.update(kernel_f=kf, kernel_g=kg)
    return prob


def run(job: tuple[str, str, str, int, int]) -> dict:
    problem_id, method, mode, seed, budget = job
    from boloop.errors import BoloopError
    from boloop.simulate import simulate

    problem = made_up_heater() if problem_id == "made-up/heater" else problem_id
    try:
        trace = simulate(method, problem, budget, seed=seed, **MODES[mode])
    except BoloopError as exc:  # reported, never silently dropped
        return {"problem": problem_id, "method": method, "mode": mode, "error": str(exc)}
    m = trace.records[-1]["metrics"]
    return {
        "problem": problem_id.split("?")[0],
        "id": problem_id,
        "seed": seed,
        "method": method,
        "mode": mode,
        "unsafe": m["unsafe"],
        "simple_regret": m["simple_regret"],
        "cumulative_regret": m["cumulative_regret"],
    }


def side_by_side(paths: list[str]) -> None:
    """Learned next to fixed, per (problem, method), from ``--out`` files of several runs."""
    rows = []
    for path in paths:
        with open(path) as fh:
            rows += [json.loads(line) for line in fh if line.strip()]
    # a run recorded in several files (overlapping chunks) counts once
    rows = list({(r.get("id"), r.get("seed"), r["method"], r["mode"]): r for r in rows}.values())
    bad = [r for r in rows if "error" in r]
    ok = [r for r in rows if "error" not in r]
    print(
        "| problem | method | runs (learned/fixed) | runs with unsafe, learned | unsafe evaluations, "
        "learned / fixed | simple regret, learned / fixed | cumulative regret, learned / fixed |"
        "\n|---|---|---|---|---|---|---|"
    )
    for p, m in sorted({(r["problem"], r["method"]) for r in ok}):
        sel = {
            mode: [r for r in ok if (r["problem"], r["method"], r["mode"]) == (p, m, mode)]
            for mode in SIDE
        }

        def col(key: str, fmt: str, sel: dict = sel) -> str:
            return " / ".join(
                format(statistics.mean(r[key] for r in sel[mode]), fmt) if sel[mode] else "-"
                for mode in SIDE
            )

        print(
            f"| {p} | {m} | {len(sel['learned'])}/{len(sel['fixed'])} "
            f"| {sum(r['unsafe'] > 0 for r in sel['learned'])} "
            f"| {' / '.join(str(int(sum(r['unsafe'] for r in sel[mo]))) for mo in SIDE)} "
            f"| {col('simple_regret', '.4f')} | {col('cumulative_regret', '.2f')} |"
        )
    if bad:
        print(f"\n{len(bad)} runs raised an error: {sorted({r['error'] for r in bad})}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--table", nargs="*", help="only print learned next to fixed from --out files")
    ap.add_argument("--draws", type=int, default=100, help="safe/random-gp prior draws")
    ap.add_argument("--first-draw", type=int, default=0, help="draws are first .. first + n - 1")
    ap.add_argument("--seeds", type=int, default=10, help="seeds per benchmark problem")
    ap.add_argument("--first-seed", type=int, default=0, help="seeds are first .. first + n - 1")
    ap.add_argument("--budget", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--problems",
        nargs="*",
        default=["safe/branin", "safe/hartmann3", "safe/pendulum", "safe/clinical-trial"],
    )
    ap.add_argument("--modes", nargs="*", default=list(SIDE), choices=list(MODES), metavar="MODE")
    ap.add_argument("--out", help="also write every run's row to this file (JSON lines)")
    args = ap.parse_args(argv)
    if args.table:
        side_by_side(args.table)
        return
    jobs = [
        (pid, m, mode, s, args.budget)
        for pid in args.problems
        for m in METHODS
        for mode in args.modes
        for s in range(args.first_seed, args.first_seed + args.seeds)
    ]
    jobs += [
        (random_gp_id(k), m, mode, 0, 20)
        for k in range(args.first_draw, args.first_draw + args.draws)
        for m in METHODS
        for mode in args.modes
    ]
    rows, errors = [], 0
    out = open(args.out, "w") if args.out else None  # noqa: SIM115 (written as runs finish)
    with ProcessPoolExecutor(args.jobs) as pool:
        for i, row in enumerate(pool.map(run, jobs), 1):
            errors += "error" in row
            rows.append(row)
            if out is not None:
                out.write(json.dumps(row) + "\n")
                out.flush()
            print(f"\r{i}/{len(jobs)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    if out is not None:
        out.close()
    print(
        "| problem | method | hyperparameters | runs | runs with unsafe | unsafe evaluations "
        "| simple regret | cumulative regret |\n|---|---|---|---|---|---|---|---|"
    )
    ok = [r for r in rows if "error" not in r]
    keys = sorted({(r["problem"], r["method"], r["mode"]) for r in ok})
    for p, m, mode in keys:
        sel = [r for r in ok if (r["problem"], r["method"], r["mode"]) == (p, m, mode)]
        print(
            f"| {p} | {m} | {mode} | {len(sel)} | {sum(r['unsafe'] > 0 for r in sel)} "
            f"| {int(sum(r['unsafe'] for r in sel))} "
            f"| {statistics.mean(r['simple_regret'] for r in sel):.4f} "
            f"| {statistics.mean(r['cumulative_regret'] for r in sel):.3f} |"
        )
    if errors:
        print(f"\n{errors} runs raised an error (listed in the JSON output, not in the table)")


if __name__ == "__main__":
    main()
