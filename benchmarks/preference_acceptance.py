"""Issue 17's acceptance, option set by option set: candidates against BoTorch EUBO's cached runs.

A candidate is ``label=method`` or ``label=method:{json options}`` (options as Python values, so
that sequences such as ``variances`` can be given, which a method id's ``?k=v`` cannot). Each is
run on seeds ``0..seeds-1`` for 100 duels with the kernel fitted, as in
``preference_peers.py``; BoTorch's rows come from the cache only. A cell passes when the mean
R(50) and R(100) are below BoTorch's and the mean simple regret at 100 is at most BoTorch's.

``--peer-self-check`` adds a column ``BoTorch'``: BoTorch's own runs on the next ``seeds`` seeds
(``seeds..2 seeds - 1``, from the cache) judged by the same rule against its runs on the first
``seeds``. A method no better and no worse than BoTorch passes a set only as often as that column
does: the rule's noise floor at this many seeds::

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/preference_acceptance.py \\
        --cache benchmarks/preference_peers_botorch.jsonl \\
        --candidates default=eubo-regret 'var1=eubo-regret:{"variances": [1.0]}' \\
        --problems preference/toy "preference/random-table?dim=1&n=30&table_seed=21"
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from boloop import problems
from boloop.simulate import simulate


def _candidate(text: str) -> tuple[str, str, dict[str, Any]]:
    label, _, spec = text.partition("=")
    method, _, opts = spec.partition(":")
    return label, method, json.loads(opts) if opts else {}


def _run(pid: str, method: str, options: dict[str, Any], seed: int, duels: int) -> dict:
    trace = simulate(method, problems.get(pid), duels, seed=seed, **{"kernel": "fit", **options})
    rec = trace.records
    return {
        "R50": rec[49]["metrics"]["cumulative_regret"],
        "R100": rec[99]["metrics"]["cumulative_regret"],
        "simple": rec[-1]["metrics"]["simple_regret"],
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", type=Path, required=True)
    ap.add_argument("--candidates", nargs="+", required=True)
    ap.add_argument("--problems", nargs="+", required=True)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument(
        "--peer-self-check",
        action="store_true",
        help="also judge BoTorch's cached seeds seeds..2*seeds-1 against its seeds 0..seeds-1",
    )
    args = ap.parse_args(argv)
    cands = [_candidate(c) for c in args.candidates]
    peer: dict[tuple[str, int], dict] = {}
    for line in args.cache.read_text().splitlines():
        row = json.loads(line)
        if row["method"] == "botorch-eubo" and row["duels"] == 100:
            peer[(row["problem"], row["seed"])] = row
    mean = statistics.mean
    labels = [c[0] for c in cands] + (["BoTorch'"] if args.peer_self_check else [])
    print("| option set | BoTorch R(50) / R(100) / simple | " + " | ".join(labels) + " |")
    print("|---" * (2 + len(labels)) + "|")
    passes = {label: 0 for label in labels}
    for pid in args.problems:
        b = [peer[(pid, s)] for s in range(args.seeds) if (pid, s) in peer]
        if len(b) < args.seeds:
            print(f"| {pid} | BoTorch has {len(b)} of {args.seeds} seeds cached | skipped |")
            continue
        b50, b100 = mean(r["R"]["50"] for r in b), mean(r["R"]["100"] for r in b)
        bs = mean(r["simple"] for r in b)
        runs = {
            label: [_run(pid, method, opts, s, 100) for s in range(args.seeds)]
            for label, method, opts in cands
        }
        if args.peer_self_check:
            again = [peer.get((pid, s)) for s in range(args.seeds, 2 * args.seeds)]
            if all(again):
                runs["BoTorch'"] = [
                    {"R50": r["R"]["50"], "R100": r["R"]["100"], "simple": r["simple"]}
                    for r in again
                ]
        cells = []
        for label in labels:
            if label not in runs:
                cells.append("not cached")
                continue
            rs = runs[label]
            a50, a100, a_s = (mean(r[k] for r in rs) for k in ("R50", "R100", "simple"))
            ok = a50 < b50 and a100 < b100 and a_s <= bs
            passes[label] += ok
            cells.append(f"{a50:.2f} / {a100:.2f} / {a_s:.3f} {'**pass**' if ok else 'fail'}")
        print(
            f"| {pid} | {b50:.2f} / {b100:.2f} / {bs:.3f} | " + " | ".join(cells) + " |", flush=True
        )
    print("passes: " + ", ".join(f"{k} {v} of {len(args.problems)}" for k, v in passes.items()))


if __name__ == "__main__":
    main()
