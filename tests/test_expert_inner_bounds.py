"""Inner bounds of the expert confidence set and the width test they shortcut (issue 12).

``inner_support_values`` must never exceed the support value (38)/(39) of the same set (checked
against the batched Newton solver and the independent per-direction dual method), and
``width_exceeds`` must give the same answers as ``width(X) > threshold``; COBOL's gated steps,
which use it, must ask the same queries as with the exact test.
"""

from __future__ import annotations

import numpy as np
import pytest

import boloop.gp.likelihood_ratio as lr
from boloop.gp.likelihood_ratio import (
    LikelihoodRatioModel,
    inner_support_values,
    support_values,
)
from expert_fixtures import cobol_queries, labelled_model

CASES = [  # seed, n, d, B, c, box
    (0, 10, 2, 1.0, 0.01, 3.0),
    (1, 25, 2, 4.0, 0.05, 3.0),
    (2, 40, 4, 8.0, 0.2, None),
    (3, 12, 3, 2.0, 0.01, None),
    (4, 30, 2, 16.0, 0.1, 3.0),
]


@pytest.mark.parametrize("case", CASES)
def test_inner_values_never_exceed_the_support_values(case):
    """At random points, near and at labelled points, in both directions: inner <= Newton's
    support value (+1e-9) and <= the dual method's (an upper bound of its own, unboxed case),
    without the quadratic-model candidates no higher; and the inner values are not vacuous
    (above the MLE's own value a^T w*)."""
    seed, n, d, B, c, box = case
    m, rng = labelled_model(seed, n, d, B, c, box)
    Xq = np.vstack([rng.random((8, d)), m.X[:3] + 1e-3, m.X[3:6]])
    A, s = m.directions(Xq)
    mle = m.mle
    ll_min = mle.loglik - m.alpha1
    dirs = np.vstack([-A, A])
    ss = np.concatenate([s, s])
    args = (m.cholesky, m.rejected, mle, ll_min, m.norm_bound, dirs, ss)
    inner = inner_support_values(*args, value_bound=box)
    cheap = inner_support_values(*args, value_bound=box, model=False)
    exact = support_values(*args, value_bound=box)
    assert np.all(inner <= exact + 1e-9)
    assert np.all(cheap <= inner)  # the cheap candidates are a subset
    assert np.all(inner >= dirs @ mle.w - 1e-12)
    if box is None:
        s_floor = np.maximum(ss, lr.S_MIN)
        for j in range(dirs.shape[0]):
            dual = lr.support_value_dual(
                m.cholesky, m.rejected, mle, ll_min, m.norm_bound, dirs[j], float(s_floor[j])
            )
            assert inner[j] <= dual + 1e-7 * max(1.0, abs(dual))
    lo_i, up_i = m.inner_bounds(Xq)
    lo, up = m.bounds(Xq)
    assert np.all(lo_i >= lo - 1e-9) and np.all(up_i <= up + 1e-9)


@pytest.mark.parametrize("case", CASES)
def test_width_exceeds_answers_as_the_exact_width(case, monkeypatch):
    """For each point and thresholds around its exact width (and 0, 0.1, inf): the same answer as
    ``width(x) > t``; small thresholds are decided without the exact bounds at some point."""
    seed, n, d, B, c, box = case
    m, rng = labelled_model(seed, n, d, B, c, box)
    Xq = np.vstack([rng.random((6, d)), m.X[:2] + 1e-2, m.X[2:4]])
    exact_width = LikelihoodRatioModel.width
    calls = []

    def counting_width(self, X):
        calls.append(1)
        return exact_width(self, X)

    monkeypatch.setattr(LikelihoodRatioModel, "width", counting_width)
    shortcut = 0
    for x in Xq:
        w = float(exact_width(m, x[None, :])[0])
        for t in (0.0, 0.1, w - 1e-3, w - 1e-12, w, w + 1e-12, w + 1e-3, np.inf):
            before = len(calls)
            got = bool(m.width_exceeds(x[None, :], t)[0])
            assert got == (w > t), (x, t, w)
            shortcut += len(calls) == before
    assert shortcut > 0
    batch = m.width_exceeds(Xq, 0.1)
    assert np.array_equal(batch, exact_width(m, Xq) > 0.1)


def test_cobol_gated_steps_ask_as_with_the_exact_width(monkeypatch):
    """COBOL's gated steps (agreement gate closed) decide line 8 through ``width_exceeds``: the
    same queries, to the bit, as with the exact test ``width(x) > g_thr``."""
    fast, gated = cobol_queries(0, 12)
    assert gated > 0  # the gated step was exercised

    def exact_rule(self, X, threshold):
        return self.width(X) > threshold

    monkeypatch.setattr(LikelihoodRatioModel, "width_exceeds", exact_rule)
    slow, gated_slow = cobol_queries(0, 12)
    assert gated_slow == gated
    assert fast == slow
