"""Fixed-seed traces of every method on every registered problem, for refactors that must not
change behaviour (issue 13: "every trace of a fixed seed is identical before and after").

Record once before a change, then compare after every step::

    python benchmarks/contract_traces.py record /tmp/before.json
    python benchmarks/contract_traces.py compare /tmp/before.json

A trace is the list of answered queries (step, kind, points, answer, metrics) and the final
recommendation; the timing columns are dropped. A run that raises is recorded by its error type
and message, so a method that cannot run on a problem must keep failing the same way.
``--budget``, ``--seeds`` and ``--only`` (a substring of ``problem method``) keep runs small.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any


def _clean(value: Any) -> Any:
    """JSON-able, with NaN spelled as a string so that equal traces compare equal."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def run_one(problem_id: str, method: str, seed: int, budget: int) -> dict[str, Any]:
    from boloop.simulate import simulate

    try:
        trace = simulate(method, problem_id, budget, seed)
    except Exception as exc:  # a run that fails must keep failing the same way
        return {"error": f"{type(exc).__name__}: {exc}"}
    records = [
        {k: v for k, v in r.items() if k not in ("ask_seconds", "tell_seconds")}
        for r in trace.records
    ]
    return _clean({"records": records, "recommendation": trace.recommendation})


def record(budget: int, seeds: list[int], only: str) -> dict[str, Any]:
    from boloop.algorithms import list_methods
    from boloop.problems import list as list_problems

    out: dict[str, Any] = {}
    for entry in list_problems():
        for m in list_methods(entry.family):
            key = f"{entry.id} {m.id}"
            if only and only not in key:
                continue
            for seed in seeds:
                t0 = time.perf_counter()
                out[f"{key} {seed}"] = run_one(entry.id, m.id, seed, budget)
                print(f"{key} {seed}: {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=("record", "compare"))
    p.add_argument("path")
    p.add_argument("--budget", type=int, default=4)
    p.add_argument("--seeds", default="0,1")
    p.add_argument("--only", default="", help="substring of 'problem method' to restrict runs")
    args = p.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    now = record(args.budget, seeds, args.only)
    if args.mode == "record":
        with open(args.path, "w") as fh:
            json.dump(now, fh)
        print(f"recorded {len(now)} traces to {args.path}")
        return 0
    with open(args.path) as fh:
        before = json.load(fh)
    keys = [k for k in before if not args.only or args.only in k]
    missing = [k for k in keys if k not in now]
    new = [k for k in now if k not in before]
    changed = [k for k in keys if k in now and before[k] != now[k]]
    for k in changed:
        print(f"CHANGED {k}")
    for k in missing:
        print(f"MISSING {k}")
    for k in new:
        print(f"NEW {k}")
    print(f"{len(keys) - len(changed) - len(missing)} of {len(keys)} traces identical")
    return 1 if changed or missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
