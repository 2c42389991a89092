"""Fig. 2 of Inatsu et al.: 20 queries on the 1-D example with beta^(1/2) = 1, 10 and beta ~ chi2(2).

    .venv/bin/python docs/reproductions/levelset/figure2.py docs/reproductions/levelset/figure2.png

The AF is ``max{beta^(1/2) sigma - |mu - theta|, 0}`` in all three panels (the fixed-beta panels use
the straddle with that constant; its argmax is the argmax of the clipped AF when that is positive).
Prints the ratio of the largest to the smallest gap between sorted queries and the median
``|f(x_t) - theta|``.
"""

from __future__ import annotations

import sys

import numpy as np

from boloop.algorithms import make_policy
from boloop.problems import get


def run(method: str, seed: int, **opts):
    prob = get("levelset/figure2")
    pol = make_policy(method, prob, seed=seed, **opts)
    rng = np.random.default_rng(seed)
    xs = []
    while pol.iteration < 20:
        q = pol.ask()
        pol.tell(q.id, prob.observe(q, rng))
        xs.append(q.x[0])
    return prob, pol, np.array(xs)


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = sys.argv[1] if len(sys.argv) > 1 else "figure2.png"
    panels = [
        ("beta^(1/2) = 1", "straddle", {"sqrt_beta": 1.0}),
        ("beta^(1/2) = 10", "straddle", {"sqrt_beta": 10.0}),
        ("beta ~ chi2(2) (proposed)", "randomized-straddle", {}),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6), sharey=True)
    for ax, (title, method, opts) in zip(axes, panels):
        prob, pol, xs = run(method, 0, **opts)
        grid = prob.space.points[:, 0]
        mean, std = pol.candidate_posterior()
        ax.plot(grid, prob.value(grid.reshape(-1, 1)), "k-", lw=1, label="f")
        ax.plot(grid, mean, "b-", lw=1, label="posterior mean")
        ax.fill_between(grid, mean - 2 * std, mean + 2 * std, alpha=0.2)
        ax.axhline(prob.threshold, color="r", lw=0.8, label="theta")
        ax.plot(xs, prob.value(xs.reshape(-1, 1)), "go", ms=4, label="queries")
        gaps = np.diff(np.sort(np.unique(xs)))
        near = np.median(np.abs(prob.value(xs[1:].reshape(-1, 1)) - prob.threshold))
        ax.set_title(
            f"{title}\nmax/min gap {gaps.max() / gaps.min():.1f}, median |f-theta| {near:.2f}"
        )
        print(
            f"{title:28s} max/min gap {gaps.max() / gaps.min():6.2f}  median |f - theta| {near:.3f}"
        )
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=80)


if __name__ == "__main__":
    main()
