"""Why the handover (Thm. 4.1 (7b), App. F doubling) is or is not seen: numbers per run.

Usage: ``OMP_NUM_THREADS=1 .venv/bin/python docs/reproductions/expert/handover.py [--seeds 3]
[--evaluations 50] [--a 1]``. COBOL with default settings on ``expert/ackley4?a=A``; printed per
seed: labels asked in each block of 10 f-evaluations, the final ``B_g`` and its doublings, and
the median / minimum width ``g_upper - g_lower`` at ``x^c`` over the last 10 solves of (6)
against ``g_thr``; then the same with ``B_g`` fixed at its initial value (``adapt_norm_bound=
False``) to show what the doubling costs.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from boloop.algorithms import make_policy  # noqa: E402
from boloop.problems import get  # noqa: E402
from boloop.simulate import simulate  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--evaluations", type=int, default=50)
    ap.add_argument("--a", type=float, default=1.0)
    args = ap.parse_args()
    for label, opts in (
        ("App. F doubling (default)", {}),
        ("B_g fixed at 1", {"adapt_norm_bound": False}),
    ):
        print(f"## {label}")
        for seed in range(args.seeds):
            p = get(f"expert/ackley4?a={args.a:g}")
            pol = make_policy("cobol", p, seed, **opts)
            rows = simulate(pol, p, args.evaluations, seed=seed).step_rows()
            q = [0.0] + [r["labels_asked"] for r in rows]
            blocks = [int(q[min(i + 10, len(q) - 1)] - q[i]) for i in range(0, len(rows), 10)]
            w = np.array(pol.width_history[-10:])
            print(
                f"seed {seed}: labels per 10 evaluations {blocks}; B_g {pol.expert.norm_bound:g} "
                f"({pol.expert.doublings} doublings), alpha_1 {pol.expert.alpha1:.3g}; width at "
                f"x^c, last 10: median {np.median(w):.3g}, min {w.min():.3g} (g_thr "
                f"{pol.g_thr:g}); SR {rows[-1]['simple_regret']:.3g}"
            )


if __name__ == "__main__":
    main()
