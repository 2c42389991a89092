"""Aggregate the preference reproduction sweeps (``boloop bench run`` results.csv files).

Usage: ``python docs/reproductions/preference/aggregate.py OUT_DIR [OUT_DIR ...] --dest DIR``

Runs of ``preference/yelp?user=k`` (one user per seed, see preference.md) are pooled as
``preference/yelp``. Writes ``summary.csv`` (per problem and method: runs, mean +- s.e. of the
per-step regret in each MR-LPF round window, of R(T) and of the final simple regret, and the median
ask+tell time, and ``constant_tail_runs``: runs whose per-step regret is constant and > 1e-3 over
the last T/5 steps, i.e. that repeat one suboptimal duel) and one PNG per problem (average per-step regret with s.e. band, as the paper's
Fig. 1-2, and cumulative regret).
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from boloop.algorithms.preference import mrlpf_round_schedule  # noqa: E402
from boloop.bench.summary_csv import update_summary_csv  # noqa: E402

COLORS = {"mr-lpf": "tab:blue", "maxminlcb": "tab:orange", "random": "tab:gray"}
EXTRA = ["tab:green", "tab:purple", "tab:red", "tab:brown", "tab:olive", "tab:cyan"]


def load(dirs: list[str]) -> dict[tuple[str, str], dict[int, dict[str, np.ndarray]]]:
    data: dict[tuple[str, str], dict[int, dict[str, list[float]]]] = defaultdict(dict)
    for d in dirs:
        path = Path(d) / "results.csv"
        if not path.exists():
            sys.exit(f"no {path}: give the directories of boloop bench run (nothing was written)")
        with path.open() as fh:
            for row in csv.DictReader(fh):
                group = re.sub(r"\?user=\d+$", "", row["problem"])
                run = data[(group, row["method"])].setdefault(
                    int(row["seed"]), {k: [] for k in ("regret", "cum", "simple", "sec")}
                )
                run["regret"].append(float(row["regret"]))
                run["cum"].append(float(row["cumulative_regret"]))
                run["simple"].append(float(row["simple_regret"]))
                run["sec"].append(float(row["ask_seconds"]) + float(row["tell_seconds"]))
    return {
        key: {s: {k: np.asarray(v) for k, v in run.items()} for s, run in runs.items()}
        for key, runs in data.items()
    }


def mean_se(x: np.ndarray) -> tuple[float, float]:
    x = np.asarray(x, dtype=np.float64)
    return float(np.mean(x)), float(np.std(x, ddof=1) / np.sqrt(x.size)) if x.size > 1 else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--dest", required=True)
    args = ap.parse_args()
    dest = Path(args.dest)
    data = load(args.dirs)
    if not data:  # before anything is written: an empty table would replace the stored one
        sys.exit(f"no rows in {', '.join(args.dirs)} (nothing was written)")
    dest.mkdir(parents=True, exist_ok=True)
    groups = sorted({g for g, _ in data})
    rows = []
    for g in groups:
        order = {"mr-lpf": 0, "maxminlcb": 1, "random": 2}
        methods = sorted((m for gg, m in data if gg == g), key=lambda m: (order.get(m, 3), m))
        T = min(len(next(iter(data[(g, m)].values()))["regret"]) for m in methods)
        sched = mrlpf_round_schedule(T)
        edges = np.cumsum([0] + sched)
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
        others = iter(EXTRA)
        colors = {m: COLORS.get(m) or next(others, None) for m in methods}
        for m in methods:
            runs = [r for r in data[(g, m)].values() if len(r["regret"]) >= T]
            reg = np.stack([r["regret"][:T] for r in runs])
            cum = np.stack([r["cum"][:T] for r in runs])
            simple = np.array([r["simple"][T - 1] for r in runs])
            sec = np.concatenate([r["sec"][:T] for r in runs])
            row = {"problem": g, "method": m, "runs": len(runs), "T": T}
            for k in range(len(sched)):
                mu, se = mean_se(reg[:, edges[k] : edges[k + 1]].mean(axis=1))
                row[f"regret_round{k + 1}"] = f"{mu:.4f} +- {se:.4f}"
            mu, se = mean_se(cum[:, -1])
            row["R(T)"] = f"{mu:.2f} +- {se:.2f}"
            mu, se = mean_se(simple)
            row["simple_regret(T)"] = f"{mu:.4f} +- {se:.4f}"
            tail = reg[:, -max(1, T // 5) :]
            frozen = (np.ptp(tail, axis=1) == 0.0) & (tail[:, -1] > 1e-3)
            row["constant_tail_runs"] = int(frozen.sum())  # one repeated duel, last T/5 steps
            row["median_ms_per_duel"] = f"{1000 * np.median(sec):.3f}"
            rows.append(row)
            t = np.arange(1, T + 1)
            for ax, y in ((axes[0], reg), (axes[1], cum)):
                mu = y.mean(axis=0)
                se = y.std(axis=0, ddof=1) / np.sqrt(y.shape[0])
                ax.plot(t, mu, color=colors[m], label=f"{m} ({len(runs)} runs)", lw=1.2)
                ax.fill_between(t, mu - se, mu + se, color=colors[m], alpha=0.25, lw=0)
        for e in edges[1:-1]:
            axes[0].axvline(e, color="k", ls=":", lw=0.8)
        axes[0].set(xlabel="t", ylabel="average per-step regret r_t", title=g)
        axes[1].set(xlabel="t", ylabel="cumulative regret R(t)", title=g)
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        name = g.replace("preference/", "").replace("?kernel=", "-").replace("?", "-")
        fig.savefig(dest / f"{name}.png", dpi=90)
        plt.close(fig)
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    # these results' (problem, method) rows replace theirs; the stored table's others are kept
    update = update_summary_csv(dest / "summary.csv", keys, rows, key=["problem", "method"])
    print(update.describe(["problem", "method"]), file=sys.stderr)
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
