"""A safe method that stops learning: the stall signal and the ``min_lengthscale_g`` assumption.

Two questions, measured with the defaults a user gets (``fit_hyperparameters=True``, learned
hyperparameters) and with ``min_lengthscale_g`` (the user's assumption that g varies no faster
than that fraction of each axis's range):

* **where the stall signal fires** (``policy.stall()``, shown by ``Study.status()`` and the study
  page): the answers at which it is on, per run;
* **what the assumption buys and costs**: the highest value of the monotone parameter reached,
  the final recommendation's objective, and unsafe evaluations (counted against the truth).

Problems: ``made-up/reactor`` (a newcomer's study, run through a study exactly as a user would:
power 0-100 on 30 levels is the monotone parameter, flow 1-10 on 20 levels, temperature
``g = 25 + 0.9 P exp(-0.08 (F - 1)) + 0.002 P^2 <= 80`` with noise sd 0.3, output
``f = P / 100 (1 - ((F - 4) / 6)^2)`` with noise sd 0.01; default study settings), the library's
safe problems, ``made-up/heater`` (``safe_unknown_hyperparameters.made_up_heater``) and
``safe/random-gp`` draws (``safe_unknown_hyperparameters.random_gp_id``).

Each ``safe/random-gp`` line says whether the draw is ``constructed``: rejection sampling found
no valid draw in 20,000 tries and ``_monotone_by_construction`` built one with a truncated,
steeper trend (recorded by wrapping the function, the draw unchanged; ``--compare`` marks such
draws with ``*``).

Run (one thread; one JSON line per run on stdout or ``--out``)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/safe_stall.py \\
        --problems made-up/reactor --seeds 3 --budget 120 --floors none 0.15 0.2
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/safe_stall.py \\
        --problems safe/branin safe/pendulum --seeds 3 --budget 50 --floors none 0.2
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/safe_stall.py --draws 40 --floors 0.2
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/safe_stall.py --draws 40 --n-s 30 --budget 60
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/safe_stall.py \\
        --problems made-up/reactor --seeds 5 --budget 120 --add-every 2   # measurements added
    .venv/bin/python benchmarks/safe_stall.py --table runs.jsonl
    .venv/bin/python benchmarks/safe_stall.py --compare old.jsonl new.jsonl   # paired runs
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from collections import defaultdict

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

REACTOR = {
    "monotone": "power",
    "h": 80.0,
    "parameters": [
        {"name": "power", "low": 0.0, "high": 100.0, "grid": 30},
        {"name": "flow", "low": 1.0, "high": 10.0, "grid": 20},
    ],
}


def reactor_truth(P, F):  # type: ignore[no-untyped-def]
    """(f, g) of the made-up reactor at power ``P``, flow ``F`` (arrays or numbers)."""
    import numpy as np

    g = 25.0 + 0.9 * P * np.exp(-0.08 * (F - 1.0)) + 0.002 * P * P
    f = (P / 100.0) * (1.0 - ((F - 4.0) / 6.0) ** 2)
    return f, g


def run_reactor(
    method: str,
    seed: int,
    budget: int,
    floor: float | None,
    trend_g: bool | None = None,
    options: dict | None = None,
    add_every: int = 0,
) -> dict:
    """The reactor run as a study (memory storage), answered from the truth plus noise;
    ``trend_g`` and ``options`` are passed as the study's options (None: the method's default).
    ``add_every`` k > 0: after every k-th answer the user also adds a measurement of their own
    (``Study.add``: the answered setting measured again, with fresh noise); ``fires`` still
    lists the method's answers (1..budget) after which the stall was on."""
    import numpy as np

    from boloop.study import create_study

    spec = json.loads(json.dumps(REACTOR))
    if floor is not None:
        spec["settings"] = {"min_lengthscale_g": floor}
    extra = {} if trend_g is None else {"trend_g": trend_g}
    extra.update(options or {})
    study = create_study(
        "reactor", method, spec, seed=seed, storage=f"memory://{method}-{seed}-{floor}", **extra
    )
    rng = np.random.default_rng(100 + seed)
    P_grid = np.linspace(0, 100, 30)
    F_grid = np.linspace(1, 10, 20)
    PP, FF = np.meshgrid(P_grid, F_grid)
    ftrue, gtrue = reactor_truth(PP, FF)
    best_safe = float(ftrue[gtrue <= 80.0].max())
    unsafe, fires, max_p = [], [], 0.0
    first_warning = None
    added = 0
    for k in range(1, budget + 1):
        q = study.ask()
        P, F = float(q.params["power"]), float(q.params["flow"])
        f, g = reactor_truth(P, F)
        if g > 80.0:
            unsafe.append([k, round(P, 2), round(F, 2), round(float(g), 2)])
        max_p = max(max_p, P)
        study.tell(
            q.id,
            {
                "f": float(f + 0.01 * rng.standard_normal()),
                "g": float(g + 0.3 * rng.standard_normal()),
            },
        )
        if add_every and k % add_every == 0:
            study.add(
                {"power": P, "flow": F},
                {
                    "f": float(f + 0.01 * rng.standard_normal()),
                    "g": float(g + 0.3 * rng.standard_normal()),
                },
            )
            added += 1
        if study.policy.stall() is not None:
            fires.append(k)
            if first_warning is None:
                warnings = study.status(last=0)["warnings"]
                first_warning = next((w for w in warnings if "stuck" in w), None)
    rec = study.status(last=0)["recommendation"]
    point = rec["point"] if isinstance(rec, dict) and "point" in rec else None
    rec_f = None if point is None else float(reactor_truth(point["power"], point["flow"])[0])
    return {
        "problem": "made-up/reactor",
        "method": method,
        "seed": seed,
        "floor": floor,
        "budget": budget,
        "trend_g": "default" if trend_g is None else trend_g,
        **({"options": options} if options else {}),
        **({"add_every": add_every, "added": added} if add_every else {}),
        "unsafe": len(unsafe),
        "unsafe_at": unsafe,
        "max_s": max_p,
        "rec_f": rec_f,
        "best_safe_f": best_safe,
        "fires": fires,
        "lengthscale_g": study.policy.describe()["lengthscale_g"],
        "first_warning": first_warning,
    }


def build_problem(problem_id: str) -> tuple[object, bool | None]:
    """The problem, and for ``safe/random-gp`` whether its g was built by
    ``_monotone_by_construction`` (rejection sampling found no valid draw: a truncated, steeper
    trend). The call is only recorded (the same function, the same random numbers): the draw
    is unchanged. ``None`` for other problems."""
    import boloop.problems.safe as safe_problems
    from boloop.problems import get as get_problem
    from safe_unknown_hyperparameters import made_up_heater

    if problem_id == "made-up/heater":
        return made_up_heater(), None
    built = safe_problems._monotone_by_construction
    calls: list[int] = []

    def recorded(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return built(*args, **kwargs)

    safe_problems._monotone_by_construction = recorded
    try:
        problem = get_problem(problem_id)
    finally:
        safe_problems._monotone_by_construction = built
    return problem, (bool(calls) if problem_id.startswith("safe/random-gp") else None)


def run_problem(
    problem_id: str,
    method: str,
    seed: int,
    budget: int,
    floor: float | None,
    trend_g: bool | None = None,
    options: dict | None = None,
) -> dict:
    """A library problem (or the made-up heater, or a random-GP draw) through ``simulate``;
    ``budget`` counts iterations (the safe seeds come on top), ``fires`` lists answers.
    ``trend_g`` is passed as the method's option (None: its default, which older code has)."""
    import numpy as np

    from boloop.algorithms import build_policy
    from boloop.simulate import simulate

    problem, constructed = build_problem(problem_id)
    opts: dict = {"fit_hyperparameters": True}
    if floor is not None:
        opts["min_lengthscale_g"] = floor
    if trend_g is not None:  # g's learned model with (true, the default) or without the trend
        opts["trend_g"] = trend_g
    opts.update(options or {})
    policy = build_policy(problem.policy_spec(method, seed, **opts))
    fires: list[int] = []
    max_s = [0.0]

    answers = [0]
    unsafe_at: list[list] = []
    G = problem.truth()[1] if hasattr(problem, "truth") else None
    n_s = problem.space.n_s

    trail: list = []
    levels: set = set()
    reach = [0]  # most levels certified above the data while they hold a single level of s

    def on_record(rec: dict) -> None:  # one record per answer, the safe seeds included
        answers[0] += 1
        trail.append(rec["points"])
        if rec["points"] and len(levels) < 2:
            levels.add(int(np.argmin(np.abs(problem.space.s_values - rec["points"][0][0]))))
            if len(levels) == 1:
                top = np.searchsorted(problem.space.s_values, policy.recommend().boundary_s.max())
                reach[0] = max(reach[0], int(top) - min(levels))
        max_s[0] = max(max_s[0], float(rec["points"][0][0]) if rec["points"] else 0.0)
        if policy.stall() is not None:
            fires.append(answers[0])
        if rec["metrics"]["unsafe"] > len(unsafe_at) and rec["points"]:
            # every unsafe evaluation: answer, level of s (index), the action, true g - h
            flat = int(problem.space.index_of(np.asarray(rec["points"][:1], dtype=float))[0])
            i, j = divmod(flat, n_s)
            excess = None if G is None else round(float(G[i, j] - problem.threshold), 4)
            unsafe_at.append(
                [answers[0], j, [round(float(v), 4) for v in rec["points"][0]], excess]
            )

    trace = simulate(policy, problem, budget, seed=seed, on_record=on_record)
    m = trace.records[-1]["metrics"]
    return {
        "problem": problem_id.split("?")[0],
        "id": problem_id,
        "method": method,
        "seed": seed,
        "floor": floor,
        "budget": budget,
        "constructed": constructed,
        "trend_g": "default" if trend_g is None else trend_g,
        **({"options": options} if options else {}),
        "unsafe": m["unsafe"],
        "unsafe_at": unsafe_at,
        "single_level_reach": reach[0],
        "trace": hashlib.sha1(json.dumps(trail).encode()).hexdigest()[:12],  # evaluated actions
        "simple_regret": m["simple_regret"],
        "max_s": max_s[0],
        "fires": fires,
        "lengthscale_g": policy.describe()["lengthscale_g"],
    }


def table(paths: list[str]) -> None:
    rows = [json.loads(line) for p in paths for line in open(p) if line.strip()]
    groups: dict = defaultdict(list)
    for r in rows:
        n_s = re.search(r"n_s=(\d+)", r.get("id", ""))
        prob = r["problem"] + (f"?n_s={n_s.group(1)}" if n_s else "")
        groups[(prob, r["method"], str(r["floor"]))].append(r)
    print(
        "| problem | method | min_lengthscale_g | runs | unsafe evaluations (runs) | runs where the stall fired | first fire (answer), median | highest s reached, mean | simple regret or rec f, mean |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (prob, meth, floor), rs in sorted(groups.items()):
        fired = [r for r in rs if r["fires"]]
        first = sorted(r["fires"][0] for r in fired)
        med = first[len(first) // 2] if first else "-"
        val = [r.get("simple_regret", r.get("rec_f")) for r in rs]
        val = [v for v in val if v is not None]
        print(
            f"| {prob} | {meth} | {floor} | {len(rs)} | {sum(r['unsafe'] for r in rs)} "
            f"({sum(1 for r in rs if r['unsafe'])}) | {len(fired)} | {med} | "
            f"{sum(r['max_s'] for r in rs) / len(rs):.3g} | "
            f"{(sum(val) / len(val)) if val else float('nan'):.4g} |"
        )


def compare(old_path: str, new_path: str) -> None:
    """Runs found in both files, paired by (problem id, method, seed): unsafe evaluations (the
    draws or seeds), how many evaluated-action traces differ, simple regret, highest s, stalls."""

    def load(path: str) -> dict:
        rows = (json.loads(line) for line in open(path) if line.strip())
        return {
            (r.get("id", r["problem"]), r["method"], r["seed"], str(r["floor"])): r for r in rows
        }

    old, new = load(old_path), load(new_path)
    for key in old.keys() & new.keys():  # a file written before the marker: take the other's
        for a, b in ((old, new), (new, old)):
            if a[key].get("constructed") is None and b[key].get("constructed") is not None:
                a[key]["constructed"] = b[key]["constructed"]
    groups: dict = defaultdict(list)
    for key in old.keys() & new.keys():
        n_s = re.search(r"n_s=(\d+)", key[0])
        prob = key[0].split("?")[0] + (f"?n_s={n_s.group(1)}" if n_s else "")
        groups[(prob, key[1], key[3])].append(key)

    def who(rs: dict, keys: list) -> str:
        bad = sorted(k for k in keys if rs[k]["unsafe"])
        name = [
            (m.group(1) + ("*" if rs[k].get("constructed") else ""))
            if (m := re.search(r"seed=(\d+)", k[0]))
            else f"seed {k[2]}"
            for k in bad
        ]
        return f"{sum(rs[k]['unsafe'] for k in keys):g}" + (f" ({', '.join(name)})" if name else "")

    print("(a draw marked * is constructed: its g was built by _monotone_by_construction)")
    print(
        "| problem | method | min_lengthscale_g | runs | unsafe evaluations, old (draws) | new "
        "| traces changed | simple regret or rec f, old / new | highest s, old / new "
        "| runs where the stall fired, old / new |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (prob, meth, floor), keys in sorted(groups.items()):
        changed = sum(old[k].get("trace") != new[k].get("trace") for k in keys)
        traced = all("trace" in old[k] for k in keys)

        def mean(rs: dict, name: str, keys: list = keys) -> float:
            v = [rs[k].get(name, rs[k].get("rec_f")) for k in keys]
            v = [x for x in v if x is not None]
            return sum(v) / len(v) if v else float("nan")

        print(
            f"| {prob} | {meth} | {floor} | {len(keys)} | {who(old, keys)} | {who(new, keys)} | "
            f"{changed if traced else 'n/a'} | {mean(old, 'simple_regret'):.4g} / "
            f"{mean(new, 'simple_regret'):.4g} | {mean(old, 'max_s'):.3g} / "
            f"{mean(new, 'max_s'):.3g} | {sum(1 for k in keys if old[k]['fires'])} / "
            f"{sum(1 for k in keys if new[k]['fires'])} |"
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="*", default=[])
    ap.add_argument("--methods", nargs="*", default=["m-safeopt"])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--budget", type=int, default=None)
    ap.add_argument("--draws", type=int, default=0)
    ap.add_argument("--first-draw", type=int, default=0)
    ap.add_argument(
        "--n-s", type=int, default=None, help="levels of s of the random-GP draws (default 12)"
    )
    ap.add_argument("--floors", nargs="*", default=["none"])
    ap.add_argument(
        "--trend-g",
        choices=("true", "false"),
        default=None,
        help="the option trend_g: g's learned model with (true, the default since it was "
        "adopted) or without (false, the Matern model alone) a linear trend in s; omitted: the "
        "method's default (and code older than the option runs)",
    )
    ap.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a method option passed to every run (VALUE read as JSON, else a string), e.g. "
        "offset_g=true; repeatable",
    )
    ap.add_argument(
        "--add-every",
        type=int,
        default=0,
        metavar="K",
        help="made-up/reactor only: after every K-th answer add a measurement of the answered "
        "setting (Study.add, fresh noise), as a user measuring on their own; 0: none (default)",
    )
    ap.add_argument("--out", default=None)
    ap.add_argument("--table", nargs="*", default=None)
    ap.add_argument(
        "--compare", nargs=2, default=None, metavar=("OLD", "NEW"), help="pair two runs' files"
    )
    a = ap.parse_args(argv)
    if a.table is not None:
        table(a.table)
        return
    if a.compare is not None:
        compare(*a.compare)
        return
    from safe_unknown_hyperparameters import random_gp_id

    floors = [None if f == "none" else float(f) for f in a.floors]
    options: dict = {}
    for item in a.option:
        key, _, value = item.partition("=")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    jobs = []
    for prob in a.problems:
        for meth in a.methods:
            for floor in floors:
                for seed in range(a.first_seed, a.first_seed + a.seeds):
                    budget = a.budget or (120 if prob == "made-up/reactor" else 50)
                    jobs.append((prob, meth, seed, budget, floor))
    for d in range(a.first_draw, a.first_draw + a.draws):
        for meth in a.methods:
            for floor in floors:
                pid = random_gp_id(d) + ("" if a.n_s is None else f"&n_s={a.n_s}")
                jobs.append((pid, meth, 0, a.budget or 20, floor))
    out = open(a.out, "a") if a.out else sys.stdout
    for prob, meth, seed, budget, floor in jobs:
        trend_g = None if a.trend_g is None else a.trend_g == "true"
        if prob == "made-up/reactor":
            r = run_reactor(meth, seed, budget, floor, trend_g, options, a.add_every)
        else:
            r = run_problem(prob, meth, seed, budget, floor, trend_g, options)
        out.write(json.dumps(r) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
