"""Tables and plots of the expert-family reproduction from ``boloop bench`` results.

Usage: ``.venv/bin/python docs/reproductions/expert/analyse.py out/expert`` -- reads every
``out/expert/<study>/results.csv``, writes ``docs/reproductions/expert/<study>_*.png`` and
``docs/reproductions/expert/summary.csv`` (mean and standard error over seeds at selected steps)
and prints markdown tables.
"""

from __future__ import annotations

import csv
import math
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from boloop.bench.summary_csv import update_summary_csv  # noqa: E402

HERE = Path(__file__).resolve().parent
METRICS = ("simple_regret", "cumulative_regret", "expert_queries")


def load(path: Path) -> dict[tuple[str, str], np.ndarray]:
    """{(problem, method): array (n_seeds, T, 3)} of the METRICS per step."""
    runs: dict[tuple[str, str, str], list[dict[str, str]]] = defaultdict(list)
    with open(path) as fh:
        for row in csv.DictReader(fh):
            runs[(row["problem"], row["method"], row["seed"])].append(row)
    grouped: dict[tuple[str, str], list[np.ndarray]] = defaultdict(list)
    for (problem, method, _seed), rows in runs.items():
        rows.sort(key=lambda r: int(r["step"]))
        grouped[(problem, method)].append(
            np.array(
                [
                    [float(r[m]) for m in METRICS]
                    + [float(r["ask_seconds"]) + float(r["tell_seconds"])]
                    for r in rows
                ],
                dtype=float,
            )
        )
    out = {}
    for key, arrs in grouped.items():
        T = min(a.shape[0] for a in arrs)
        out[key] = np.stack([a[:T] for a in arrs])
    return out


def mean_se(v: np.ndarray) -> tuple[float, float]:
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0


def label(problem: str, method: str) -> str:
    opts = problem.split("?", 1)[1] if "?" in problem else ""
    m = method.replace("budget=evaluations&", "[evals]").replace("?budget=evaluations", "[evals]")
    m = m.replace("&budget=evaluations", "[evals]").replace("?[evals]", "[evals]?")
    return f"{m} [{opts}]" if opts else m


def plot_study(name: str, data: dict[tuple[str, str], np.ndarray]) -> Path:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for (problem, method), arr in sorted(data.items()):
        steps = np.arange(1, arr.shape[1] + 1)
        for j, ax in enumerate(axes):  # the three METRICS (column 3 is seconds)
            m = np.nanmean(arr[:, :, j], axis=0)
            se = np.nanstd(arr[:, :, j], axis=0, ddof=1) / math.sqrt(arr.shape[0])
            ax.plot(steps, m, label=label(problem, method))
            ax.fill_between(steps, m - se, m + se, alpha=0.15)
    for ax, metric in zip(axes, METRICS):
        ax.set_xlabel("iteration ([evals] runs: f-evaluation)")
        ax.set_title(metric)
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{name}: mean +- 1 s.e. over seeds")
    fig.tight_layout()
    path = HERE / f"{name}.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def plot_by_problem(name: str, data: dict[tuple[str, str], np.ndarray]) -> None:
    for problem in sorted({p for p, _ in data}):
        plot_study(
            f"{name}_{problem.split('/')[-1].split('?')[0]}",
            {k: v for k, v in data.items() if k[0] == problem},
        )


def main(root: str) -> None:
    rows = []
    reference: dict[tuple[str, str], np.ndarray] = {}
    ref_file = Path(root) / "fig3_iter" / "results.csv"
    if ref_file.exists():  # GP-LCB on Ackley-4D is the reference of every Fig. 3 variant
        reference = {k: v for k, v in load(ref_file).items() if k[1] == "gp-lcb"}
    found = sorted(Path(root).glob("*/results.csv"))
    if not found:  # before anything is written: an empty summary.csv would replace the stored one
        sys.exit(
            f"no results in {root}/*/results.csv: run the boloop bench run commands of "
            "docs/reproductions/expert.md first (nothing was written)"
        )
    for results in found:
        name = results.parent.name
        data = load(results)
        if name.startswith("fig3") or name in ("fig6", "fig7", "handover"):
            for k, v in reference.items():
                data.setdefault(k, v)
        fig4 = Path(root) / "fig4" / "results.csv"
        if name == "fig4_evals" and fig4.exists():  # the baselines never pay for rejections
            for k, v in load(fig4).items():
                if k[1] != "cobol":
                    data.setdefault(k, v)
        if name.startswith("fig4") or name == "battery":
            plot_by_problem(name, data)
        else:
            plot_study(name, data)
        print(f"\n### {name}\n")
        print(
            "| problem | method | seeds | SR@10 | SR@20 | SR@end | R@end | Q^g@half | Q^g@end "
            "| median s/iteration |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for (problem, method), arr in sorted(data.items()):
            T = arr.shape[1]
            cells = []
            for step, j in ((10, 0), (20, 0), (T, 0), (T, 1), (T // 2, 2), (T, 2)):
                if step > T:
                    cells.append("-")
                    continue
                m, se = mean_se(arr[:, step - 1, j])
                cells.append(f"{m:.3g} ± {se:.2g}")
                rows.append([name, problem, method, arr.shape[0], step, METRICS[j], m, se])
            cells.append(f"{float(np.median(arr[:, :, 3])):.3g}")
            print(f"| {problem} | {method} | {arr.shape[0]} | " + " | ".join(cells) + " |")
    # the studies of these results replace theirs; the stored table's other studies are kept
    update = update_summary_csv(
        HERE / "summary.csv",
        ["study", "problem", "method", "seeds", "step", "metric", "mean", "se"],
        rows,
        key=["study"],
    )
    print(update.describe(["study"]), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "out/expert")
