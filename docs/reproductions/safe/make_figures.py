"""Tables and figures of docs/reproductions/safe.md from the sweeps' results.csv files.

Usage (after the ``boloop bench run`` commands of safe.md)::

    .venv/bin/python docs/reproductions/safe/make_figures.py out/safe docs/reproductions/safe

Reads every ``<in>/*/results.csv``; writes ``summary.csv`` (per sweep, problem, method: mean and
standard error over seeds of R_T/T, R'_T/T, R^X_T/T, the unsafe count, simple regret, R_10/10 and
the mean instantaneous regret of the last 10 rounds) and the PNGs: ``curves_<problem>.png``
(R_t/t, R'_t/t, R^X_t/t against t, mean +- s.e.; the paper's Figures 2, 5, 6) and
``misspecification.png`` (Figure 4).
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from boloop.bench.summary_csv import update_summary_csv


def load(root: Path) -> dict[tuple[str, str, str], dict[int, dict[int, dict[str, float]]]]:
    """{(sweep, problem, method): {seed: {step: row}}}."""
    data: dict = defaultdict(lambda: defaultdict(dict))
    for path in sorted(root.glob("*/results.csv")):
        sweep = path.parent.name
        with path.open() as fh:
            for row in csv.DictReader(fh):
                key = (sweep, row["problem"], row["method"])
                vals = {k: float(v) for k, v in row.items() if k not in ("problem", "method")}
                data[key][int(row["seed"])][int(row["step"])] = vals
    return data


def curves(runs: dict[int, dict[int, dict[str, float]]], column: str) -> np.ndarray:
    """(n_seeds, T) array of ``column`` per step."""
    T = min(max(steps) for steps in runs.values())
    return np.array([[runs[s][t][column] for t in range(1, T + 1)] for s in sorted(runs)])


def summarise(data: dict) -> list[dict[str, object]]:
    out = []
    for (sweep, problem, method), runs in sorted(data.items()):
        R = curves(runs, "cumulative_regret")
        T = R.shape[1]
        t = np.arange(1, T + 1)
        row: dict[str, object] = {"sweep": sweep, "problem": problem, "method": method}
        row["seeds"] = R.shape[0]
        row["T"] = T
        for name, col in [
            ("R_T/T", "cumulative_regret"),
            ("R'_T/T", "cumulative_regret_prime"),
            ("R^X_T/T", "cumulative_regret_x"),
        ]:
            v = curves(runs, col)[:, -1] / T
            row[name] = float(v.mean())
            row[name + " se"] = float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0
        row["R_10/10"] = float((R[:, 9] / 10).mean()) if T >= 10 else float("nan")
        inst = curves(runs, "regret")
        row["last10 r_t"] = float(inst[:, -10:].mean())
        row["unsafe total"] = float(curves(runs, "unsafe")[:, -1].sum())
        row["simple regret"] = float(curves(runs, "simple_regret")[:, -1].mean())
        row["r^X_T"] = float(curves(runs, "regret_x")[:, -1].mean())
        row["mean R_t/t curve"] = " ".join(
            f"{x:.4f}" for x in (R / t).mean(axis=0)[[0, 9, 19, 29, 39, T - 1]]
        )
        out.append(row)
    return out


def plot(data: dict, outdir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweeps = ("main", "hartmann3", "fitted", "branin_code_Lf", "long")
    main = {k: v for k, v in data.items() if k[0] in sweeps}
    by_problem: dict = defaultdict(dict)
    for (sweep, problem, method), runs in main.items():
        label = (
            method if sweep in ("main", "hartmann3", "fitted", "long") else f"{method} [{sweep}]"
        )
        group = sweep if sweep in ("fitted", "long") else ""
        by_problem[(group, problem)][label] = runs
    for (group, problem), methods in sorted(by_problem.items()):
        fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
        for ax, (title, col) in zip(
            axes,
            [
                ("R_t / t", "cumulative_regret"),
                ("R'_t / t", "cumulative_regret_prime"),
                ("R^X_t / t", "cumulative_regret_x"),
            ],
        ):
            for label, runs in sorted(methods.items()):
                C = curves(runs, col)
                t = np.arange(1, C.shape[1] + 1)
                m = (C / t).mean(axis=0)
                se = (C / t).std(axis=0, ddof=1) / np.sqrt(C.shape[0])
                ax.plot(t, m, label=label)
                ax.fill_between(t, m - se, m + se, alpha=0.2)
            ax.set_title(f"{problem}: {title}")
            ax.set_xlabel("t")
            ax.set_yscale("log")
        axes[0].legend(fontsize=7)
        fig.tight_layout()
        name = problem.split("/")[-1] + (f"_{group}" if group else "")
        fig.savefig(outdir / f"curves_{name}.png", dpi=80)
        plt.close(fig)
    # Figure 4: misspecified L_f <- c L_f, L'_g <- L'_g / c
    panels = [
        ("safe/clinical-trial", "m-safeopt", "cumulative_regret", "clinical R_t/t (Case 1)"),
        (
            "safe/clinical-trial",
            "m-safeopt-x",
            "cumulative_regret_prime",
            "clinical R'_t/t (Case 2)",
        ),
        ("safe/branin", "m-safeopt", "cumulative_regret", "synthetic 2D R_t/t (Case 1)"),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    for ax, (problem, method, col, title) in zip(axes, panels):
        for c in ("0.1", "0.5", "1", "2", "5"):
            key = (
                ("main", problem, method)
                if c == "1"
                else ("misspec", problem, f"{method}?misspecification={c}")
            )
            if key not in data:
                continue
            C = curves(data[key], col)
            t = np.arange(1, C.shape[1] + 1)
            ax.plot(t, (C / t).mean(axis=0), label=f"c = {c}")
        ax.set_title(title)
        ax.set_xlabel("t")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(outdir / "misspecification.png", dpi=80)
    plt.close(fig)


def actions_figure(outdir: Path, budget: int = 50, seed: int = 0) -> list[str]:
    """Figure 1/3 analogue: sampled actions of every method (seed 0) on the clinical trial and
    the synthetic 2D problem, with the true (red) and certified (blue) safe boundaries. Returns
    text lines with where the samples of the second half of the run fall."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from boloop.problems import get
    from boloop.simulate import simulate

    lines = []
    methods = ["m-safeopt", "m-safeopt-x", "safeopt-mc", "predvar"]
    for pid in ("safe/clinical-trial", "safe/branin"):
        prob = get(pid)
        F, G = prob.truth()
        sp = prob.space
        xs = sp.x_points[:, 0]
        true_b = sp.s_values[np.max(np.where(G <= prob.threshold, np.arange(sp.n_s), 0), axis=1)]
        fig, axes = plt.subplots(1, 4, figsize=(16, 3.8), sharey=True)
        for ax, m in zip(axes, methods):
            trace = simulate(m, prob, budget, seed=seed)
            P = np.array([r["points"][0] for r in trace.records])
            rec = trace.recommendation
            ax.contourf(xs, sp.s_values, F.T, levels=20, cmap="Greys", alpha=0.5)
            ax.plot(xs, true_b, "r-", label="true boundary")
            ax.plot(xs, rec["boundary_s"], "b-", label="certified boundary")
            if m == "m-safeopt-x":
                ax.plot(xs, rec["best_s"], "c.", ms=2, label="s_hat(x)")
            ax.scatter(P[:, 1], P[:, 0], c=np.arange(len(P)), cmap="viridis", s=14, zorder=3)
            ax.set_title(f"{pid.split('/')[-1]}: {m}")
            ax.set_xlabel("x")
            late = P[len(P) // 2 :]
            lo, hi = float(xs.min()), float(xs.max())
            frac_hi = float(np.mean(late[:, 1] > lo + 0.5 * (hi - lo)))
            lines.append(
                f"{pid} {m}: second-half samples with x in the upper half of D_X: {frac_hi:.2f}; "
                f"certified boundary / true boundary (mean over x): "
                f"{float(np.mean(np.asarray(rec['boundary_s']) / np.maximum(true_b, 1e-12))):.2f}"
            )
        axes[0].set_ylabel("s")
        axes[0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(outdir / f"actions_{pid.split('/')[-1]}.png", dpi=80)
        plt.close(fig)
    return lines


def main() -> None:
    if "-h" in sys.argv or "--help" in sys.argv:
        print(__doc__)
        return
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = Path(args[0] if args else "out/safe")
    outdir = Path(args[1] if len(args) > 1 else "docs/reproductions/safe")
    data = load(root)
    rows = summarise(data)
    if not rows:  # before anything is written: an empty summary.csv would replace the stored one
        sys.exit(
            f"no results in {root}/*/results.csv: run the boloop bench run commands of "
            "docs/reproductions/safe.md first (nothing was written)"
        )
    outdir.mkdir(parents=True, exist_ok=True)
    # the sweeps of these results replace theirs; the stored table's other sweeps are kept
    update = update_summary_csv(
        outdir / "summary.csv",
        list(rows[0]),
        [{k: (f"{v:.5g}" if isinstance(v, float) else v) for k, v in r.items()} for r in rows],
        key=["sweep"],
    )
    print(update.describe(["sweep"]), file=sys.stderr)
    for r in rows:
        print(
            f"{r['sweep']:15s} {r['problem']:22s} {r['method']:36s} n={r['seeds']:2d} "
            f"R/T {r['R_T/T']:.4f}±{r['R_T/T se']:.4f}  R'/T {r[chr(82) + chr(39) + '_T/T']:.4f}±"
            f"{r[chr(82) + chr(39) + '_T/T se']:.4f}  RX/T {r['R^X_T/T']:.4f}±{r['R^X_T/T se']:.4f} "
            f"R10/10 {r['R_10/10']:.4f} last10 {r['last10 r_t']:.4f} rX_T {r['r^X_T']:.4f} "
            f"unsafe {r['unsafe total']:.0f} simple {r['simple regret']:.4f}"
        )
    plot(data, outdir)
    if "--actions" in sys.argv:
        for line in actions_figure(outdir):
            print(line)


if __name__ == "__main__":
    main()
