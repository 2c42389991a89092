"""Rank statistics of joint draws, in numpy: the Mann-Whitney count behind COBOL's agreement gate.

For one row of values ``v`` (n,) split into a group ``R`` (the rejected labels, r of them) and
its complement ``A`` (the accepted, a of them), the Mann-Whitney statistic (Mann and Whitney,
1947) is ``U = #{(i, j) in R x A: v_i > v_j} + #{ties} / 2``; with mid-ranks (ties get the mean
of the ranks they span, ``scipy.stats.rankdata``'s ``"average"``) it equals the rank sum of ``R``
minus ``r (r + 1) / 2``. Computed here by one sort per row, without scipy.stats (whose import
costs a command-line call about 0.2 s). Everything is integer or half-integer arithmetic, so the
values equal scipy's exactly.
"""

from __future__ import annotations

import numpy as np

__all__ = ["midranks", "mann_whitney_excess"]


def midranks(V: np.ndarray) -> np.ndarray:
    """Mid-ranks (1-based; ties averaged) of every row of ``V`` (S, n), shape (S, n), float.

    Equal to ``scipy.stats.rankdata(V, method="average", axis=1)`` for values without NaN (which
    are refused; scipy would give a row of NaN): in each row's sorted order a run of equal values
    at positions ``p .. q`` (0-based) gets the rank ``(p + q) / 2 + 1``.
    """
    V = np.asarray(V, dtype=np.float64)
    if V.ndim != 2:
        raise ValueError(f"V must be 2-D (S, n), got shape {V.shape}")
    if np.isnan(V).any():
        raise ValueError("V must not contain NaN (a rank of NaN is undefined)")
    S, n = V.shape
    out = np.empty((S, n), dtype=np.float64)
    if n == 0:
        return out
    order = np.argsort(V, axis=1, kind="stable")
    Vs = np.take_along_axis(V, order, axis=1)
    pos = np.broadcast_to(np.arange(n), (S, n))
    starts = np.ones((S, n), dtype=bool)  # position p starts a run of equal values
    starts[:, 1:] = Vs[:, 1:] != Vs[:, :-1]
    ends = np.ones((S, n), dtype=bool)  # position p ends one
    ends[:, :-1] = starts[:, 1:]
    first = np.maximum.accumulate(np.where(starts, pos, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, pos, n - 1)[:, ::-1], axis=1)[:, ::-1]
    np.put_along_axis(out, order, 0.5 * (first + last) + 1.0, axis=1)
    return out


def mann_whitney_excess(V: np.ndarray, group: np.ndarray) -> np.ndarray:
    """``2 U - r a`` per row of ``V`` (S, n), shape (S,): the number of pairs (i in ``group``,
    j not) with ``v_i > v_j`` minus those with ``v_i < v_j`` (ties count zero), with ``U`` the
    Mann-Whitney statistic of the boolean mask ``group`` (n,) (r True, a False). Positive where
    the group's values rank above the rest's more often than not (AUC > 1/2)."""
    g = np.asarray(group, dtype=bool)
    if g.shape != (np.shape(V)[-1],):
        raise ValueError(f"group must be a mask of shape ({np.shape(V)[-1]},), got {g.shape}")
    r, a = int(np.count_nonzero(g)), int(np.count_nonzero(~g))
    U = midranks(V)[:, g].sum(axis=1) - r * (r + 1) / 2.0
    return 2.0 * U - r * a
