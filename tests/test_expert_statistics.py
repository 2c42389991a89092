"""Seeded statistical checks of COBOL's claims (small budgets; fixed seeds, deterministic).

Budgets count f-evaluations (``budget="evaluations"``, the reference code's loop), 256 Sobol
candidates per iteration. Each test states its margin; each can fail.

COBOL runs with its defaults (App. F doubling of B_g) except where a test says otherwise.
Observed (seeds 0-3, 12 evaluations, mean simple regret): GP-LCB 1.25; COBOL a = -2: 2.28;
COBOL a = 2: 1.96 -- the acceleration claim does not reproduce at this budget (strict xfail
below), see docs/reproductions/expert.md for the 10-seed sweeps and the analysis (B_g doubles to
32 on the initial labels, the bounds at x^c are 5-30 logit units wide, lambda decays to 0).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from boloop.algorithms import make_policy
from boloop.problems import get
from boloop.simulate import simulate

OPTS = {"n_candidates": 256}


@cache
def _lcb(n_evals: int) -> np.ndarray:
    """GP-LCB never asks the expert: one set of runs serves every accuracy a."""
    return _sr("expert/ackley4", "gp-lcb", range(4), n_evals)


def _sr(problem_id: str, method: str, seeds, n_evals: int, **options) -> np.ndarray:
    out = []
    for s in seeds:
        p = get(problem_id)
        pol = make_policy(method, p, s, **OPTS, **options)
        out.append(simulate(pol, p, n_evals, seed=s).final_metrics["simple_regret"])
    return np.array(out)


def test_no_harm_with_an_adversarial_expert():
    """a = -2 on Ackley-4D, 12 f-evaluations, seeds 0-3: COBOL's mean simple regret is at most
    2x GP-LCB's (observed 2.28 vs 1.25). The paper's "on par" is asymptotic; at this budget the
    adversary costs COBOL up to a factor 2."""
    cobol = _sr("expert/ackley4?a=-2", "cobol", range(4), 12, budget="evaluations")
    lcb = _lcb(12)
    assert cobol.mean() <= 2.0 * lcb.mean(), (cobol, lcb)


@pytest.mark.xfail(
    strict=True,
    reason="not reproduced: at 12 evaluations COBOL (a = 2) 1.96 vs GP-LCB 1.25 (seeds 0-3)",
)
def test_acceleration_with_an_accurate_expert():
    """a = 2 on Ackley-4D, 12 f-evaluations, seeds 0-3: the paper claims COBOL's simple regret
    is lower than GP-LCB's. Strict xfail: if a change makes it pass, update the docs."""
    cobol = _sr("expert/ackley4?a=2", "cobol", range(4), 12, budget="evaluations")
    lcb = _lcb(12)
    assert cobol.mean() < lcb.mean(), (cobol, lcb)


def test_handover_expert_queries_fall_in_the_second_half():
    """Handover mechanism: Ackley-4D, a = 1, B_g fixed at 1 (no doubling), g_thr = 0.3,
    30 f-evaluations, seeds 1-2: expert queries during evaluations 16-30 are at most a quarter
    of those during evaluations 1-15 (observed: ~20 vs 1-2). With the paper's g_thr = 0.1 and
    the App. F doubling no handover is seen at this budget (docs/reproductions/expert.md)."""
    for s in (1, 2):
        p = get("expert/ackley4?a=1")
        pol = make_policy(
            "cobol", p, s, budget="evaluations", adapt_norm_bound=False, g_thr=0.3, **OPTS
        )
        rows = simulate(pol, p, 30, seed=s).step_rows()
        q = np.array([r["expert_queries"] for r in rows])
        first, second = q[14], q[-1] - q[14]
        assert second <= 0.25 * first, (s, first, second)
