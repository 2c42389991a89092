"""Level-set methods with the kernel learned, run by run, on two source trees (before / after).

The widening of issue 18's coating stall (``LevelSetPolicy.widen_when_overconfident``) and LSE's
intersection restarted when the hyperparameters change touch every level-set method with a
learned kernel. This runs each method (``kernel=None``, the default a user gets) on the grids of
``levelset_peers.py`` (library, ``user/*`` and ``stall/*``) and writes one JSON line per run: the
F-score at the checkpoints, the distinct points queried. Run it under each tree and compare::

    git archive d908717 src | tar -x -C /tmp/before
    PYTHONPATH=/tmp/before/src python benchmarks/levelset_overconfidence.py --out before.jsonl
    PYTHONPATH=src python benchmarks/levelset_overconfidence.py --out after.jsonl
    python benchmarks/levelset_overconfidence.py --compare before.jsonl after.jsonl

``--extra '{"widen_when_overconfident": false}'`` passes options to every policy (the same tree
with the widening off).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from boloop.algorithms import make_policy  # noqa: E402
from boloop.bench.runner import parse_seeds  # noqa: E402
from boloop.simulate import simulate  # noqa: E402
from levelset_peers import GRID_PROBLEMS, USER_PROBLEMS, _problem  # noqa: E402
from levelset_stall_problems import STALL_PROBLEMS  # noqa: E402


def _run(method: str, pid: str, seed: int, steps: int, extra: dict[str, Any]) -> dict[str, Any]:
    problem = _problem(pid)
    policy = make_policy(method, problem, seed, kernel=None, **extra)
    trace = simulate(policy, problem, steps, seed)
    f = [r["fscore"] for r in trace.step_rows()]
    X = policy.gp.X
    return {
        "problem": pid,
        "method": method,
        "seed": seed,
        "steps": steps,
        "fscore": f,
        "distinct": len({tuple(x) for x in X}),
        "widenings": len(getattr(policy, "widenings", [])),
    }


def _compare(before: str, after: str, cps: list[int]) -> None:
    def load(path: str) -> dict[tuple[str, str, int], dict[str, Any]]:
        out = {}
        for line in Path(path).read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                out[(r["problem"], r["method"], r["seed"])] = r
        return out

    a, b = load(before), load(after)
    keys = sorted(set(a) & set(b))
    groups: dict[tuple[str, str], list[tuple[str, str, int]]] = {}
    for k in keys:
        groups.setdefault((k[0], k[1]), []).append(k)
    cells = " | ".join(f"F@{c} before / after" for c in cps)
    print(f"| problem | method | seeds | {cells} | worst F@T before / after | identical runs |")
    print("|" + "---|" * (len(cps) + 5))
    for (pid, method), ks in groups.items():
        T = min(a[k]["steps"] for k in ks)
        row = []
        for c in [c for c in cps if c <= T]:
            va = np.array([a[k]["fscore"][c - 1] for k in ks])
            vb = np.array([b[k]["fscore"][c - 1] for k in ks])
            row.append(f"{va.mean():.3f} / {vb.mean():.3f}")
        wa = min(a[k]["fscore"][T - 1] for k in ks)
        wb = min(b[k]["fscore"][T - 1] for k in ks)
        same = sum(a[k]["fscore"] == b[k]["fscore"] for k in ks)
        print(
            f"| {pid} | {method} | {len(ks)} | "
            + " | ".join(row)
            + f" | {wa:.3f} / {wb:.3f} | {same}/{len(ks)} |"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problems", nargs="*", default=None)
    ap.add_argument("--methods", default="randomized-straddle,straddle,lse,us")
    ap.add_argument("--seeds", default="0-9", help="N (seeds 0..N-1) or A-B (inclusive)")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--checkpoints", default="20,50,100")
    ap.add_argument("--extra", default="{}", help="JSON of options passed to every policy")
    ap.add_argument("--out", default=None)
    ap.add_argument("--compare", nargs=2, default=None, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args(argv)
    cps = [int(c) for c in args.checkpoints.split(",")]
    if args.compare:
        _compare(*args.compare, cps)
        return 0
    seeds = parse_seeds(args.seeds)
    problems = args.problems or (GRID_PROBLEMS + list(USER_PROBLEMS) + list(STALL_PROBLEMS))
    extra = json.loads(args.extra)
    fh = open(args.out, "a") if args.out else None
    for pid in problems:
        for method in args.methods.split(","):
            for seed in seeds:
                r = _run(method, pid, seed, args.steps, extra)
                line = json.dumps(r)
                if fh is not None:
                    fh.write(line + "\n")
                    fh.flush()
                else:
                    print(line)
                f = r["fscore"]
                print(
                    pid,
                    method,
                    seed,
                    " ".join(f"{f[c - 1]:.3f}" for c in cps if c <= len(f)),
                    file=sys.stderr,
                )
    if fh is not None:
        fh.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
