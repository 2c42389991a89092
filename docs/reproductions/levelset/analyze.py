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
    summary_rows, comp_rows = [], []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for prob in problems:
        methods = sorted(m for p, m in data if p == prob)
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        stats = {}
        for m in methods:
            arr, steps = curves(data[(prob, m)])
            n = arr.shape[0]
            mean = arr.mean(axis=0)
            se = arr.std(axis=0, ddof=1) / math.sqrt(n) if n > 1 else np.zeros_like(mean)
            stats[m] = (steps, mean, se, n, arr)
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
        fig.savefig(out / f"{prob.split('/')[1]}.png", dpi=90)
        plt.close(fig)
        if PROPOSED in stats:
            steps_p, mean_p, se_p, n_p, _ = stats[PROPOSED]
            for m in methods:
                if m == PROPOSED:
                    continue
                steps_m, mean_m, se_m, n_m, _ = stats[m]
                for t in sorted({50, 100, 150, 200, 250, 300, 400, int(steps_p[-1])}):
                    if t not in steps_p or t not in steps_m:
                        continue
                    i, j = int(np.searchsorted(steps_p, t)), int(np.searchsorted(steps_m, t))
                    for k, name in enumerate(("loss", "fscore")):
                        d = mean_p[i, k] - mean_m[j, k]
                        s = math.sqrt(se_p[i, k] ** 2 + se_m[j, k] ** 2)
                        comp_rows.append([prob, m, t, name, d, s, d / s if s > 0 else float("nan")])
    # these results' (problem, method) rows replace theirs; the stored table's others are kept
    key = ["problem", "method"]
    update = update_summary_csv(
        out / "summary.csv",
        [*key, "step", "seeds", "loss_mean", "loss_se", "fscore_mean", "fscore_se"],
        [[*r[:4], *(f"{v:.6g}" for v in r[4:])] for r in summary_rows],
        key=key,
    )
    print(update.describe(key), file=sys.stderr)
    if comp_rows:
        update_summary_csv(
            out / "comparisons.csv",
            ["problem", "other", "step", "metric", "proposed_minus_other", "se", "z"],
            [[*r[:4], *(f"{v:.4g}" for v in r[4:])] for r in comp_rows],
            key=["problem", "other"],
        )
    # markdown table of the final step of every (problem, method), from the whole summary.csv
    with open(out / "summary.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
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
