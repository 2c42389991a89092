"""Does one answer make most of the scatter among repeated measurements?

A fixed noise variance that repeated measurements contradict is said by a study's status
(:mod:`boloop.gp.repeats`: the pooled within-setting sum of squares ``S`` against
``chi^2_df``), with the variance the repeats support. But ``S`` is a sum of squares: one slip
among readings that agree (``g = 0.5`` typed among eighteen readings of 0.05 at one setting, a
newcomer's trial) makes all of it, and a larger noise variance then carries the slip into a new
study as noise. Before the noise is blamed, the status names that answer.

Leaving measurement ``j`` out of its setting's ``n`` measurements (mean ``ybar``) lowers ``S`` by
exactly ``D_j = n / (n - 1) (y_j - ybar)^2`` (the leave-one-out update of a sum of squares about
the mean). The answer whose removal lowers ``S`` the most *makes* that share of the scatter; it
is named when

* the share is more than half (:data:`MOST`: it makes *most* of the scatter), its setting
  having at least three measurements (of two, either makes all of it: no one answer stands
  out); and
* it stands out from the others by more than chance: with Gaussian noise of any variance,
  ``D_j / sigma^2`` is chi-square with one degree of freedom and independent of the rest's
  ``(S - D_j) / sigma^2`` (``df - 1`` of them), so ``F = (df - 1) D_j / (S - D_j)`` follows
  ``F(1, df - 1)``: the externally studentized residual's outlier test, Bonferroni over the
  ``m`` answers that could be named (Cook and Weisberg, *Residuals and Influence in
  Regression*, 1982, sec. 2.2.2), at the noise test's own false-alarm level
  (:data:`boloop.gp.repeats.ALPHA`, ``m P(F > f) <= ALPHA``). Five noisy repeats make one
  of them the largest share by chance, often more than half; eighteen equal readings and one
  ten times larger (``S - D_j = 0``) do not.

Whether the other repeats, without it, still scatter more than the assumed noise allows is
the same test (:func:`boloop.gp.repeats.noise_too_small`) on the rest.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from boloop.gp.repeats import ALPHA, noise_too_small, repeat_scatter

__all__ = ["MOST", "OneAnswerScatter", "one_answer_scatter", "others_read"]

#: the share of the pooled sum of squares that one answer must make to be named
MOST = 0.5


@dataclass(frozen=True)
class OneAnswerScatter:
    """The answer ``row`` (a study's history row) whose ``value`` makes ``share`` of the
    pooled sum of squares; ``others``: the other values measured at its setting;
    ``fits_without``: whether the repeats without it scatter no more than the assumed noise
    allows (None when too few remain to test it); ``after``: how many answers were given after it (``undo`` withdraws from the last
    one back)."""

    row: Mapping[str, Any]
    value: float
    share: float
    others: tuple[float, ...]
    fits_without: bool | None
    after: int


def _value(row: Mapping[str, Any], output: str) -> float | None:
    """The measured value of ``output`` in an evaluation's history row (a bare number is the
    study's one measured value, stored bare or named), or None."""
    answer = row.get("answer")
    if isinstance(answer, Mapping):
        v = answer.get(output)
        if v is None and len(answer) == 1:
            v = next(iter(answer.values()))
    else:
        v = answer
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        return float(v)
    return None


def one_answer_scatter(
    rows: Sequence[Mapping[str, Any]], output: str, assumed: float, df: int | None = None
) -> OneAnswerScatter | None:
    """The answer among the history ``rows`` (answers in effect, oldest first) that makes more
    than :data:`MOST` of the scatter of ``output``'s repeated measurements (module docstring),
    or None. ``assumed``: the noise variance the method assumes; ``df``: the degrees of freedom
    the method's own test counted (None: not checked); where the rows count others (the
    method's data are not the history's), nothing is said."""
    values: list[float] = []
    settings: list[tuple[Any, ...]] = []
    where: list[int] = []
    for i, row in enumerate(rows):
        if row.get("kind") != "evaluate":
            continue
        v = _value(row, output)
        if v is None:
            continue
        values.append(v)
        settings.append(tuple(sorted((row.get("params") or {}).items())))
        where.append(i)
    if len(values) < 3:
        return None
    ids: dict[tuple[Any, ...], int] = {}
    group = np.array([ids.setdefault(s, len(ids)) for s in settings], dtype=np.int64)
    y = np.asarray(values, dtype=np.float64)
    counts = np.bincount(group)
    means = np.bincount(group, weights=y) / counts
    total = float(np.sum((y - means[group]) ** 2))
    found = repeat_scatter(group[:, None].astype(np.float64), y)
    if total <= 0.0 or (df is not None and found.df != df):
        return None
    n = counts[group]
    drop = np.where(n >= 3, n / np.maximum(n - 1, 1) * (y - means[group]) ** 2, 0.0)
    j = int(np.argmax(drop))
    share = min(1.0, float(drop[j] / total))
    if share <= MOST or not _stands_out(float(drop[j]), total, found.df, np.count_nonzero(n >= 3)):
        return None
    rest = np.arange(y.size) != j
    others = tuple(float(v) for v in y[(group == group[j]) & rest])
    # whether the others fit the assumed noise without it: only where they can be tested (two
    # degrees of freedom at least); None when they cannot, which the warning does not claim
    if repeat_scatter(group[rest, None].astype(np.float64), y[rest]).df < 2:
        fits: bool | None = None
    else:
        fits = noise_too_small(group[rest, None].astype(np.float64), y[rest], assumed) is None
    return OneAnswerScatter(
        row=rows[where[j]],
        value=float(y[j]),
        share=share,
        others=others,
        fits_without=fits,
        after=len(rows) - 1 - where[j],
    )


def _stands_out(d: float, total: float, df: int, m: int | np.integer) -> bool:
    """The outlier test of the module docstring: ``m P(F(1, df - 1) > f) <= ALPHA`` with
    ``f = (df - 1) d / (total - d)`` (infinite where the rest do not scatter at all)."""
    from scipy.stats import f as f_distribution  # lazily, as boloop.gp.repeats

    rest = total - d
    if df < 2:
        return False
    if rest <= 1e-12 * total:
        return True
    p = float(f_distribution.sf((df - 1) * d / rest, 1, df - 1))
    return m * p <= ALPHA


def others_read(others: Sequence[float], amount: Callable[[float], str]) -> str:
    """What the other measurements at the answer's setting read, in words (the noise warning
    of the status and of the page): ``all read 0.05 AU`` or ``read 0.04 to 0.06 AU``
    (``amount`` writes a value with its unit)."""
    lo, hi = min(others), max(others)
    return f"all read {amount(lo)}" if lo == hi else f"read {lo:g} to {amount(hi)}"
