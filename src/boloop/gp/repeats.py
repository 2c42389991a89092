"""Do measurements repeated at one setting scatter more than the noise a model assumes?

A GP whose noise variance is fixed (the safe family's ``noise_f``, ``noise_g``: its models never
learn the noise, Losalka & Scarlett's setting with a known ``lambda``) trusts each measurement to
within that noise. When the real noise is larger, the posterior is too narrow everywhere near
the data, and a safety model then certifies what the data do not support. Settings measured more
than once tell: under the model, the scatter of repeats about their setting's mean is pure noise,

    S = sum_i sum_k (y_ik - ybar_i)^2 / sigma^2  ~  chi^2_df,   df = sum_i (n_i - 1)

(the pooled within-setting variance, e.g. Montgomery, *Design and Analysis of Experiments*,
ch. 3; a one-sided test of the variance, ch. 2). :func:`repeat_scatter` computes ``df`` and the
pooled variance ``s^2 = S sigma^2 / df``; :func:`noise_too_small` says whether ``S`` exceeds the
``1 - alpha`` quantile of ``chi^2_df`` (``alpha`` = :data:`ALPHA`, 1 in 1,000: a study that is
checked after every answer should rarely raise a false alarm) and gives the variance the
repeats support: the upper end of its one-sided 95% interval, ``S sigma^2 / chi^2_df(0.05)``, a
cautious value to use instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ALPHA", "RepeatScatter", "noise_too_small", "repeat_scatter"]

#: the false-alarm probability of one check (one output, one state of the data)
ALPHA = 1e-3


@dataclass(frozen=True)
class RepeatScatter:
    """``df`` degrees of freedom from ``settings`` settings measured more than once and the
    pooled within-setting variance ``variance`` of their measurements."""

    df: int
    settings: int
    variance: float


def repeat_scatter(X: Any, y: Any) -> RepeatScatter:
    """The pooled variance of ``y`` about the mean of each distinct row of ``X`` (exactly equal
    rows: a grid's points), over the rows measured more than once."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if y.size == 0:
        return RepeatScatter(0, 0, float("nan"))
    _, group = np.unique(X.reshape(y.size, -1), axis=0, return_inverse=True)
    group = np.asarray(group).reshape(-1)
    counts = np.bincount(group)
    means = np.bincount(group, weights=y) / counts
    ss = float(np.sum((y - means[group]) ** 2))
    df = int(np.sum(counts - 1))
    settings = int(np.count_nonzero(counts > 1))
    return RepeatScatter(df, settings, ss / df if df else float("nan"))


def noise_too_small(X: Any, y: Any, noise_variance: float) -> dict[str, Any] | None:
    """``{"df", "settings", "variance", "assumed", "suggested"}`` when measurements repeated at
    one setting scatter more than ``noise_variance`` allows (module docstring: the test), else
    None (also without repeats)."""
    from scipy.stats import chi2  # lazily: a study's import must not pay for scipy.stats

    rs = repeat_scatter(X, y)
    if rs.df < 2 or not np.isfinite(rs.variance) or noise_variance <= 0:
        return None
    statistic = rs.df * rs.variance / float(noise_variance)
    if statistic <= float(chi2.ppf(1.0 - ALPHA, rs.df)):
        return None
    return {
        "df": rs.df,
        "settings": rs.settings,
        "variance": rs.variance,
        "assumed": float(noise_variance),
        "suggested": float(rs.df * rs.variance / chi2.ppf(0.05, rs.df)),
    }
