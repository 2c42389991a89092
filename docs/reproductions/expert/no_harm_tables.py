"""Markdown tables of the issue-12 sweeps (per f-evaluation and per iteration) from bench results.

Usage: ``.venv/bin/python docs/reproductions/expert/no_harm_tables.py DIR [DIR ...]`` -- reads
every ``DIR/results.csv`` and prints, per (problem, method): seeds, simple regret at steps 10, 20
and the last (mean ± s.e.), f-evaluations and BO-phase labels asked / rejected at the end, and
the stuck-run rate: runs that end with more than 5 consecutive rejected proposals (iteration
budget: the last 6 steps made no evaluation) or that spent more than 5 rejects on one
f-evaluation (evaluation budget).
"""

from __future__ import annotations

import csv
import math
import sys
from collections import defaultdict


def _ms(values: list[float]) -> str:
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return f"{mean:.3g}"
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return f"{mean:.3g} ± {sd / math.sqrt(n):.2g}"


def _stuck(rows: list[dict[str, str]]) -> bool:
    ev = [float(r["evaluations"]) for r in rows]
    rej = [float(r.get("labels_rejected", "nan") or "nan") for r in rows]
    if len(rows) >= 6 and ev[-1] == ev[-6]:
        return True  # the last 6 steps (iterations) evaluated nothing
    prev = 0.0
    for x in rej:  # per step (one f-evaluation under the evaluation budget)
        if not math.isnan(x) and x - prev > 5:
            return True
        prev = x if not math.isnan(x) else prev
    return False


def main(dirs: list[str]) -> None:
    runs: dict[tuple[str, str, str], list[dict[str, str]]] = defaultdict(list)
    for d in dirs:
        with open(f"{d}/results.csv") as fh:
            for row in csv.DictReader(fh):
                runs[(row["problem"], row["method"], row["seed"])].append(row)
    groups: dict[tuple[str, str], list[list[dict[str, str]]]] = defaultdict(list)
    for (problem, method, _s), rows in runs.items():
        rows.sort(key=lambda r: int(r["step"]))
        groups[(problem, method)].append(rows)
    print(
        "| problem | method | seeds | SR@10 | SR@20 | SR@end | evaluations | labels asked "
        "| labels rejected | stuck runs |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (problem, method), rs in sorted(groups.items()):

        def at(step: int, key: str, rs: list = rs) -> list[float]:
            return [float(r[min(step, len(r)) - 1][key]) for r in rs]

        T = min(len(r) for r in rs)
        asked = [float(r[-1].get("labels_asked") or 0) for r in rs]
        rejected = [float(r[-1].get("labels_rejected") or 0) for r in rs]
        stuck = sum(_stuck(r) for r in rs)
        print(
            f"| {problem} | {method} | {len(rs)} | {_ms(at(10, 'simple_regret'))} | "
            f"{_ms(at(20, 'simple_regret'))} | {_ms(at(T, 'simple_regret'))} | "
            f"{_ms(at(T, 'evaluations'))} | {_ms(asked)} | {_ms(rejected)} | "
            f"{stuck}/{len(rs)} |"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
