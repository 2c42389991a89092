"""Would the stall warning be right to come early while every g datum sits at one level of s?

The stall warning (``_SafePolicy.stall``) waits ``stall_window`` answers without growth of the
certified set (10 in two dimensions). A lab trial's dose study was told only at answer 17. With
every measurement of g at one level of s, the model cannot learn how fast g rises along s, so a
warning at the first answer without growth looked justified. This measures that rule, with
``stall_window = 1`` while the data hold a single level (it changes no decision: the warning is
read from the round's bounds only), on ``safe/random-gp`` draws (30 levels, the benchmark's
``random_gp_id``) and the library's safe problems. Per run, one JSON line: the answer where the
early rule would fire, the certified count then and at the end, and whether it grew after it (a
false alarm).

    OMP_NUM_THREADS=1 python benchmarks/safe_stall_early.py rgp 0 100
    OMP_NUM_THREADS=1 python benchmarks/safe_stall_early.py lib safe/branin safe/pendulum \
        safe/clinical-trial safe/hartmann3 made-up/heater
    OMP_NUM_THREADS=1 python benchmarks/safe_stall_early.py dose
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np

from boloop.algorithms.registry import build_policy
from boloop.simulate import simulate
from safe_stall import build_problem
from safe_unknown_hyperparameters import random_gp_id


def run(pid: str, seed: int, budget: int, n_s: int | None = None) -> dict:
    if n_s:
        pid = pid + f"&n_s={n_s}"
    problem, _ = build_problem(pid)
    pol = build_policy(problem.policy_spec("m-safeopt", seed))
    normal_window = pol.stall_window
    pol.stall_window = 1
    s_vals = problem.space.s_values
    levels: set[int] = set()
    rows: list[tuple[int, bool, int]] = []

    def on_record(rec: dict) -> None:
        if rec["points"]:
            levels.add(int(np.argmin(np.abs(s_vals - rec["points"][0][0]))))
        cert = int(np.sum(np.searchsorted(s_vals, pol.recommend().boundary_s) + 1))
        rows.append((len(levels), pol.stall() is not None, cert))

    simulate(pol, problem, budget, seed=seed, on_record=on_record)
    early = next((i for i, (nl, st, c) in enumerate(rows) if nl == 1 and st), None)
    return {
        "id": pid,
        "seed": seed,
        "answers": len(rows),
        "normal_window": normal_window,
        "early": None if early is None else early + 1,
        "cert_at_early": None if early is None else rows[early][2],
        "cert_end": rows[-1][2],
        "levels_end": rows[-1][0],
        "grew_after": None if early is None else rows[-1][2] > rows[early][2],
        "single_level_answers": sum(1 for r in rows if r[0] == 1),
    }


DOSE = [  # the dose study of tests/test_safe_offset.py
    {"name": "dose", "low": 0.0, "high": 10.0, "grid": 21},
    {"name": "time", "low": 1.0, "high": 8.0, "grid": 15},
]


def run_dose(label: str, g_of_dose: object, seed: int, answers: int = 40) -> dict:
    """The dose study run as a study (f = 0.1 dose + noise sd 0.01, g = ``g_of_dose(dose)``
    without noise, h = 1): the answer where the early rule fires, where the warning with its
    window does, and the highest dose measured."""
    import uuid

    from boloop.study import create_study

    space = {"monotone": "dose", "h": 1.0, "parameters": DOSE}
    study = create_study(
        "dose", "m-safeopt", space, storage=f"memory://{uuid.uuid4().hex}", seed=seed
    )
    window = study.policy.stall_window
    study.policy.stall_window = 1
    rng = np.random.default_rng(seed)
    early = normal = None
    doses = []
    for k in range(answers):
        q = study.ask()
        d = q.params["dose"]
        doses.append(d)
        study.tell(q.id, {"f": 0.1 * d + 0.01 * rng.standard_normal(), "g": g_of_dose(d)})
        stall = study.policy.stall()
        if stall is not None and early is None:
            early = k + 1
        if stall is not None and stall["answers"] >= window and normal is None:
            normal = k + 1
    return {
        "id": f"dose ({label})",
        "seed": seed,
        "early": early,
        "with_window": normal,
        "max_dose": max(doses),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="which", required=True)
    r = sub.add_parser("rgp", help="safe/random-gp draws A..B-1 (30 levels, T = 60, seed 0)")
    r.add_argument("first", type=int)
    r.add_argument("stop", type=int)
    lib = sub.add_parser("lib", help="problem ids, seeds 0-2, T = 50")
    lib.add_argument("problems", nargs="+")
    sub.add_parser("dose", help="the dose study, two g's, seeds 0-2, 40 answers")
    args = ap.parse_args(argv)
    if args.which == "dose":
        for label, g in (
            ("g = 0.05 dose", lambda d: 0.05 * d),
            ("g = 0.1 + 0.03 dose", lambda d: 0.1 + 0.03 * d),
        ):
            for seed in range(3):
                print(json.dumps(run_dose(label, g, seed)), flush=True)
    elif args.which == "rgp":
        for d in range(args.first, args.stop):
            pid = random_gp_id(d)
            print(json.dumps(run(pid, 0, 60, n_s=30)), flush=True)
    else:
        for pid in args.problems:
            for seed in range(3):
                print(json.dumps(run(pid, seed, 50)), flush=True)


if __name__ == "__main__":
    main()
