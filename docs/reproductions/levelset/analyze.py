"""Summarise level-set bench results (``boloop bench run`` results.csv files) for the reproduction.

Usage::

    .venv/bin/python docs/reproductions/levelset/analyze.py OUT_DIR RESULTS.csv [RESULTS.csv ...]

Writes to OUT_DIR: ``summary.csv`` (mean and standard error of loss and fscore per problem, method
and checkpoint step), ``comparisons.csv`` (randomized straddle minus each other method, with the
standard error of the difference and z = diff / se), and one PNG per problem (loss on a log scale
and fscore against the step, mean +- 2 s.e. bands).
"""

from __future__ import annotations

import csv
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from boloop.bench.summary_csv import update_summary_csv

PROPOSED = "randomized-straddle"


def load(paths: list[str]) -> dict[tuple[str, str], dict[int, dict[int, tuple[float, float]]]]:
    """{(problem, method): {seed: {step: (loss, fscore)}}}."""
    data: dict = defaultdict(lambda: defaultdict(dict))
    for p in paths:
        with open(p, newline="") as fh:
            for r in csv.DictReader(fh):
                prob = r["problem"].split("?")[0]
                data[(prob, r["method"])][int(r["seed"])][int(r["step"])] = (
                    float(r["loss"]),
                    float(r["fscore"]),
                )
    return data


def curves(runs: dict[int, dict[int, tuple[float, float]]]) -> tuple[np.ndarray, np.ndarray]:
    """(seeds, steps, 2) array of complete runs and the steps."""
    steps = sorted(set.intersection(*(set(v) for v in runs.values())))
    arr = np.array([[runs[s][t] for t in steps] for s in sorted(runs)])
    return arr, np.array(steps)


def comparisons(table: list[dict[str, str]]) -> list[list]:
    """The randomized straddle minus every other method, per problem, metric and step
    (50, 100, ..., 400 and the proposed method's last), from summary.csv's rows: the difference
    of the means, the standard error of the difference and z. Computed from the table's six
    significant digits, a value's fourth digit may differ by one from one computed from the raw
    means (56 of the 412 committed values did when this was written)."""
    at = {(r["problem"], r["method"], int(r["step"])): r for r in table}
    rows = []
    for prob in dict.fromkeys(r["problem"] for r in table):
        ours = [t for (p, m, t) in at if p == prob and m == PROPOSED]
        if not ours:
            continue
        others = dict.fromkeys(r["method"] for r in table if r["problem"] == prob)
        for m in others:
            if m == PROPOSED:
                continue
            for t in sorted({50, 100, 150, 200, 250, 300, 400, max(ours)}):
                p_row, m_row = at.get((prob, PROPOSED, t)), at.get((prob, m, t))
                if p_row is None or m_row is None:
                    continue
                for name in ("loss", "fscore"):
                    d = float(p_row[f"{name}_mean"]) - float(m_row[f"{name}_mean"])
                    se = math.hypot(float(p_row[f"{name}_se"]), float(m_row[f"{name}_se"]))
                    rows.append([prob, m, t, name, d, se, d / se if se > 0 else float("nan")])
    return rows


def main() -> None:
    if len(sys.argv) == 1 or "-h" in sys.argv or "--help" in sys.argv:
        print(__doc__)
        return
    if len(sys.argv) < 3:
        sys.exit(f"give OUT_DIR and at least one RESULTS.csv (nothing was written)\n{__doc__}")
    out = Path(sys.argv[1])
    data = load(sys.argv[2:])
    if not data:  # before anything is written: an empty table would replace the stored one
        sys.exit(f"no rows in {' '.join(sys.argv[2:])} (nothing was written)")
    out.mkdir(parents=True, exist_ok=True)
    problems = sorted({p for p, _ in data})
    summary_rows = []
    stored: dict[str, set[str]] = defaultdict(set)  # the methods summary.csv holds per problem
    if (out / "summary.csv").exists():
        with open(out / "summary.csv", newline="", encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                stored[r["problem"]].add(r["method"])
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for prob in problems:
        methods = sorted(m for p, m in data if p == prob)
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for m in methods:
            arr, steps = curves(data[(prob, m)])
            n = arr.shape[0]
            mean = arr.mean(axis=0)
            se = arr.std(axis=0, ddof=1) / math.sqrt(n) if n > 1 else np.zeros_like(mean)
            for k, ax in enumerate(axes):
                ax.plot(steps, mean[:, k], label=f"{m} (n={n})", lw=1.6 if m == PROPOSED else 1.0)
                ax.fill_between(
                    steps, mean[:, k] - 2 * se[:, k], mean[:, k] + 2 * se[:, k], alpha=0.2
                )
            T = steps[-1]
            checkpoints = sorted(
                {t for t in (25, 50, 100, 150, 200, 250, 300, 400, 500) if t < T} | {T}
            )
            for t in checkpoints:
                i = int(np.searchsorted(steps, t))
                if i < len(steps) and steps[i] == t:
                    summary_rows.append([prob, m, t, n, mean[i, 0], se[i, 0], mean[i, 1], se[i, 1]])
        axes[0].set_yscale("log")
        axes[0].set_ylabel("loss r_t (log scale)")
        axes[1].set_ylabel("F-score")
        for ax in axes:
            ax.set_xlabel("iteration")
            ax.grid(alpha=0.3)
        axes[1].legend(fontsize=8)
        fig.suptitle(f"{prob}: mean +- 2 s.e.")
        fig.tight_layout()
        missing = sorted(stored[prob] - set(methods))
        if missing:  # a figure of some of the methods would replace the one of all of them
            print(f"{prob}.png not redrawn: these results lack {', '.join(missing)}",
                  file=sys.stderr)  # fmt: skip
        else:
            fig.savefig(out / f"{prob.split('/')[1]}.png", dpi=90)
        plt.close(fig)
    # these results' (problem, method) rows replace theirs; the stored table's others are kept
    key = ["problem", "method"]
    update = update_summary_csv(
        out / "summary.csv",
        [*key, "step", "seeds", "loss_mean", "loss_se", "fscore_mean", "fscore_se"],
        [[*r[:4], *(f"{v:.6g}" for v in r[4:])] for r in summary_rows],
        key=key,
    )
    print(update.describe(key), file=sys.stderr)
    # the comparisons and the markdown table from the whole summary.csv (a partial re-run's
    # rows beside the stored ones): a comparison never pairs numbers of two different runs' tables
    with open(out / "summary.csv", newline="", encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    comp_rows = comparisons(table)
    with open(out / "comparisons.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["problem", "other", "step", "metric", "proposed_minus_other", "se", "z"])
        for r in comp_rows:
            w.writerow([*r[:4], *(f"{v:.4g}" for v in r[4:])])
    final: dict[str, int] = {}
    for r in table:
        final[r["problem"]] = max(final.get(r["problem"], 0), int(r["step"]))
    lines = [
        "| problem | method | seeds | T | loss r_T (mean +- s.e.) | F-score (mean +- s.e.) |",
        "|---|---|---|---|---|---|",
    ]
    for r in table:
        if int(r["step"]) == final[r["problem"]]:
            lines.append(
                f"| {r['problem']} | {r['method']} | {r['seeds']} | {r['step']} | "
                f"{float(r['loss_mean']):.4g} +- {float(r['loss_se']):.2g} | "
                f"{float(r['fscore_mean']):.4f} +- {float(r['fscore_se']):.4f} |"
            )
    (out / "table.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
