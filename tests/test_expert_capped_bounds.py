"""Support values with a cap (issue 12): ``LikelihoodRatioModel.bounds`` clips the bounds (38)/(39)
at ``value_bound`` and passes it to ``support_values`` as ``cap``, which stops a row once a
feasible Newton iterate shows the value reaches the cap. The clipped values must be those of the
full solve (to the bit within one batch; through ``bounds`` to rounding): rows below the cap
unchanged, rows at or above it at least the cap (and, where a certificate was returned, not above
the exact support value: it is a feasible point's value); COBOL's queries must not change.
"""

from __future__ import annotations

import numpy as np

import boloop.gp.likelihood_ratio as lr
from boloop.gp.likelihood_ratio import support_values
from expert_fixtures import cobol_queries, labelled_model

CASES = [  # seed, n, d, B, c, box
    (0, 10, 2, 4.0, 0.01, 3.0),
    (1, 25, 2, 8.0, 0.05, 3.0),
    (4, 30, 2, 16.0, 0.1, 3.0),
    (5, 20, 3, 12.0, 0.1, 3.0),
    (2, 40, 4, 8.0, 0.2, None),
]


def test_capped_values_clip_to_the_full_solves():
    certified = 0
    for seed, n, d, B, c, box in CASES:
        m, rng = labelled_model(seed, n, d, B, c, box)
        Xq = np.vstack([rng.random((40, d)), m.X[:3] + 1e-3])
        A, s = m.directions(Xq)
        mle = m.mle
        args = (m.cholesky, m.rejected, mle, mle.loglik - m.alpha1, m.norm_bound)
        dirs, ss = np.vstack([-A, A]), np.concatenate([s, s])
        exact = support_values(*args, dirs, ss, value_bound=box)
        # the model's cap where it has one, else a cap inside the range of the values
        cap = box if box is not None else float(np.median(exact))
        capped = support_values(*args, dirs, ss, value_bound=box, cap=cap)
        assert np.array_equal(np.minimum(capped, cap), np.minimum(exact, cap))
        below = capped < cap
        assert np.array_equal(capped[below], exact[below])
        cert = capped != exact  # certificates: feasible points' values, <= the support value
        assert np.all(capped[cert] >= cap + lr.INNER_MARGIN)
        assert np.all(capped[cert] <= exact[cert] + 1e-9)
        certified += int(cert.sum())
        # one row at a time: the same clipped values (a row's certificate does not depend on
        # the cap being reached by the other rows of its batch)
        for j in range(0, dirs.shape[0], 9):
            one = support_values(*args, dirs[j : j + 1], ss[j : j + 1], value_bound=box, cap=cap)
            full = support_values(*args, dirs[j : j + 1], ss[j : j + 1], value_bound=box)
            assert np.array_equal(np.minimum(one, cap), np.minimum(full, cap))
    assert certified > 0  # the early stop was exercised


def test_bounds_are_the_clipped_full_solves():
    m, rng = labelled_model(1, 25, 2, 8.0, 0.05, 3.0)
    Xq = rng.random((30, 2))
    lo, up = m.bounds(Xq)
    A, s = m.directions(Xq)
    mle = m.mle
    args = (m.cholesky, m.rejected, mle, mle.loglik - m.alpha1, m.norm_bound)
    full = support_values(*args, np.vstack([-A, A]), np.concatenate([s, s]), value_bound=3.0)
    # to rounding: rows that stop at the cap leave the others to smaller BLAS calls, whose
    # kernels round differently on some CPUs (6e-15 seen on one; bit-equal on another)
    np.testing.assert_allclose(lo, np.clip(-full[:30], -3.0, 3.0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(up, np.clip(full[30:], -3.0, 3.0), rtol=0, atol=1e-12)
    assert np.any(lo == -3.0) or np.any(up == 3.0)  # some bound is clipped


def test_cobol_asks_as_without_the_cap(monkeypatch):
    fast, _ = cobol_queries(1, 12)
    full = lr.support_values

    def uncapped(*args, cap=None, **kwargs):
        return full(*args, **kwargs)

    monkeypatch.setattr(lr, "support_values", uncapped)
    assert cobol_queries(1, 12)[0] == fast
