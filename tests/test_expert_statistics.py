"""Seeded statistical checks of COBOL's claims (small budgets; fixed seeds, deterministic).

Budgets count f-evaluations (``budget="evaluations"``: the reference code's loop, in which a
rejected proposal is free; the paper's figures come from that code). Each test states its margin;
each can fail. Under Algorithm 1's own budget (a rejected proposal consumes an iteration) the
claims do *not* hold at these budgets -- see docs/reproductions/expert.md (Fig. 3 sweeps).
"""

from __future__ import annotations

from functools import cache

import numpy as np

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


def test_acceleration_with_an_accurate_expert():
    """a = 2 on Ackley-4D, defaults (512 candidates, f-evaluation budget, veto rule, agreement
    gate at level 0.99), seeds 0-4: COBOL's mean simple regret is lower than GP-LCB's after 30
    f-evaluations (observed 0.11 against 0.23). No margin. After 20 evaluations it is not
    (0.83 against 0.77; 0.42 with the gate's earlier rule, the expected AUC above 1/2): the
    gate lets the expert lead only once the data show it ranks f better than a coin: GP-LCB
    took 7-30 of the 30 steps here (seed 4: all)."""
    cobol, lcb = [], []
    for s in range(5):
        p = get("expert/ackley4?a=2")
        pol = make_policy("cobol", p, s)
        rows = simulate(pol, p, 30, seed=s).step_rows()
        cobol.append(rows[29]["simple_regret"])
        pol = make_policy("gp-lcb", p, s)
        rows = simulate(pol, p, 30, seed=s).step_rows()
        lcb.append(rows[29]["simple_regret"])
    assert np.mean(cobol) < np.mean(lcb), (cobol, lcb)


def test_handover_expert_queries_fall_in_the_second_half():
    """Handover mechanism: Ackley-4D, a = 1, B_g fixed at 1 (no doubling), g_thr = 0.3,
    30 f-evaluations, seeds 0-4: expert queries during evaluations 16-30 are at most half of
    those during evaluations 1-15, summed over the seeds. Per seed the split is noisy (seeds
    0-9, first/second half: 7 of 10 seeds at most half with Sobol candidates and a refit at
    every value, 8 of 10 with uniform candidates and the 10% refit schedule; summed 128/44
    and 121/43): a check on two seeds tested the random stream, not the handover. With the
    paper's g_thr = 0.1 and the App. F doubling no handover is seen at this budget
    (docs/reproductions/expert.md). The harm budget is off: this is line 8's handover, not the
    dismissal of an expert (nor the agreement gate)."""
    first = second = 0
    for s in range(5):
        p = get("expert/ackley4?a=1")
        pol = make_policy(
            "cobol",
            p,
            s,
            budget="evaluations",
            adapt_norm_bound=False,
            g_thr=0.3,
            harm_budget=None,
            agreement_gate=False,
            **OPTS,
        )
        rows = simulate(pol, p, 30, seed=s).step_rows()
        q = np.array([r["expert_queries"] for r in rows])
        first, second = first + q[14], second + q[-1] - q[14]
    assert first > 0 and second <= 0.5 * first, (first, second)
