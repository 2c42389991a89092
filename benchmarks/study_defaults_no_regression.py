"""Preference and expert families: the study-default runs before and after issue 18 (no regression).

Issue 18 gave the level-set and safe families a shared mechanism for learned hyperparameters
(``boloop.gp.hyperparameters``) and EUBO the mechanism's shrinking length-scale cap. This script
runs the preference and expert methods as a study on a user's own space runs them (kernels learned
from the answers: ``kernel="fit"`` for the preference family, whose paper problems otherwise carry
the paper's fixed kernel; the expert family's default already fits its length-scales) and writes
one JSON line per run. Run it once against each source tree and compare::

    git archive 06dc7eb src | tar -x -C /tmp/before      # the tree before issue 18's first commit
    PYTHONPATH=/tmp/before/src OMP_NUM_THREADS=1 python benchmarks/study_defaults_no_regression.py \\
        --out before.jsonl
    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/study_defaults_no_regression.py --out now.jsonl
    python benchmarks/study_defaults_no_regression.py --compare before.jsonl now.jsonl

Only the public ``simulate`` and the problem registry are used, so the same script runs on both
trees. A method the older tree does not have (``eubo``) is reported as missing there.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

PREFERENCE = (
    "preference/ackley",
    "preference/branin",
    "preference/holder",
    "preference/rkhs-se",
    "preference/toy",
)
EXPERT = ("expert/toy", "expert/holder2")
COLUMNS = ("cumulative_regret", "simple_regret")


def jobs(seeds: int, duels: int, evaluations: int) -> list[tuple[str, str, int, int, dict]]:
    out = []
    for pid in PREFERENCE:
        for method in ("mr-lpf", "maxminlcb", "eubo"):
            opts: dict = {"kernel": "fit"}
            if method == "mr-lpf":
                opts["horizon"] = duels
            out += [(pid, method, s, duels, opts) for s in range(seeds)]
    for pid in EXPERT:
        out += [(pid, "cobol", s, evaluations, {}) for s in range(seeds)]
    return out


def run(job: tuple[str, str, int, int, dict]) -> dict:
    pid, method, seed, budget, opts = job
    from boloop.simulate import simulate

    row = {"problem": pid, "method": method, "seed": seed, "budget": budget}
    try:
        trace = simulate(method, pid, budget, seed=seed, **opts)
    except Exception as exc:  # e.g. a method the older tree does not have
        return {**row, "error": f"{type(exc).__name__}: {exc}"}
    m = trace.records[-1]["metrics"]
    return {**row, **{c: float(m[c]) for c in COLUMNS}}


def compare(before_path: str, now_path: str) -> None:
    def load(path: str) -> dict:
        with open(path) as fh:
            rows = [json.loads(line) for line in fh if line.strip()]
        return {(r["problem"], r["method"], r["seed"]): r for r in rows}

    before, now = load(before_path), load(now_path)
    keys = sorted({(p, m) for p, m, _ in now})
    print(
        "| problem | method | seeds | cumulative regret before | after "
        "| simple regret before | after | identical runs |\n|---|---|---|---|---|---|---|---|"
    )
    for p, m in keys:
        seeds = sorted(s for (pp, mm, s) in now if (pp, mm) == (p, m))
        a = [now[(p, m, s)] for s in seeds]
        b = [before.get((p, m, s), {"error": "not run"}) for s in seeds]

        def mean(rows: list[dict], c: str) -> str:
            ok = [r[c] for r in rows if "error" not in r]
            return f"{statistics.mean(ok):.3f}" if len(ok) == len(rows) else "missing"

        same = sum(
            "error" not in x and "error" not in y and all(x[c] == y[c] for c in COLUMNS)
            for x, y in zip(a, b)
        )
        print(
            f"| {p} | {m} | {len(seeds)} | {mean(b, COLUMNS[0])} | {mean(a, COLUMNS[0])} "
            f"| {mean(b, COLUMNS[1])} | {mean(a, COLUMNS[1])} | {same}/{len(seeds)} |"
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--duels", type=int, default=50, help="preference budget")
    ap.add_argument("--evaluations", type=int, default=20, help="expert budget")
    ap.add_argument("--out", help="JSON lines, one per run")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "NOW"))
    ap.add_argument("--only", default="", help="run only problems whose id contains this")
    args = ap.parse_args(argv)
    if args.compare:
        compare(*args.compare)
        return
    todo = [j for j in jobs(args.seeds, args.duels, args.evaluations) if args.only in j[0]]
    out = open(args.out, "w") if args.out else sys.stdout  # noqa: SIM115
    for i, job in enumerate(todo, 1):
        out.write(json.dumps(run(job)) + "\n")
        out.flush()
        print(f"\r{i}/{len(todo)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)


if __name__ == "__main__":
    main()
