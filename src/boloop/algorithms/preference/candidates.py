"""The option set of a preference method: how it is made, and what it may hold.

A :class:`~boloop.spaces.CandidateSet` or an (m, d) array is used as it is; a
:class:`~boloop.spaces.Box` is discretised by a scrambled Sobol sample. The set must hold 2 to
:data:`MAX_OPTIONS` distinct options, else :class:`~boloop.errors.InvalidInputError` says how to
fix it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from boloop.errors import InvalidInputError
from boloop.spaces import Box, CandidateSet, grid_points_per_axis

#: the largest option set a preference method accepts. Every method keeps option-by-option
#: matrices (m x m float64; EUBO and DTS one per model of their hyperparameter grid). Measured
#: with one BLAS thread, 3-D options, the first 12 duels: at 1,500 options the peak memory is
#: 0.7 GB (EUBO, DTS), an ask takes at most 0.9 s (EUBO's first; DTS 0.6 s each) and the
#: occasional refit (MaxMinLCB, random, an MR-LPF round end) 2.7 s; at 2,000 options 1.2 GB,
#: 1.5 s per DTS ask and 6.5 s per refit; at 3,000 2.6 GB, 6-7 s per ask and 18-24 s per refit;
#: a 3-parameter grid of 20 points per axis (8,000 options) would need some 18 GB.
MAX_OPTIONS = 1500


def _as_candidates(candidates: Any, n_candidates: int, rng: np.random.Generator) -> CandidateSet:
    if isinstance(candidates, Box):
        _check_size(n_candidates, candidates.dim, sampled=True)
        return CandidateSet(candidates.sample(n_candidates, rng, method="sobol"))
    out = candidates if isinstance(candidates, CandidateSet) else CandidateSet(candidates)
    _check_size(out.n, out.dim, sampled=False)
    return out


def _check_size(m: int, d: int, sampled: bool) -> None:
    """Refuse more than :data:`MAX_OPTIONS` options (``m`` options of ``d`` coordinates;
    ``sampled``: drawn from a Box, ``m`` is ``n_candidates``), saying how to fix it."""
    if m <= MAX_OPTIONS:
        return
    mib = m * m * 8 / 2**20
    what = f"n_candidates={m} is" if sampled else f"{m} options are"
    fix = (
        f"give n_candidates <= {MAX_OPTIONS}"
        if sampled
        else f"use a coarser grid (at most {grid_points_per_axis(MAX_OPTIONS, d)} points per "
        f"axis for {d} parameter{'s' if d > 1 else ''}: a smaller 'grid' for each parameter of "
        "a space file) "
        "or a shorter table of the options worth comparing"
    )
    raise InvalidInputError(
        f"{what} too many for a preference method: the limit is {MAX_OPTIONS} "
        f"(MAX_OPTIONS), because each method keeps option-by-option matrices ({m} x {m} "
        f"floats = {mib:,.0f} MiB each); {fix}"
    )


def _check_distinct(points: np.ndarray) -> None:
    """Refuse fewer than two options, or two identical options (rows of ``points``, (m, d)):
    a duel compares two different options, and a method cannot tell identical ones apart (it
    would spend duels comparing an option with its copy)."""
    m = points.shape[0]
    if m < 2:
        raise InvalidInputError(
            f"a preference method needs at least 2 different options to compare, got {m}"
        )
    _, first, inverse = np.unique(points, axis=0, return_index=True, return_inverse=True)
    if first.size == m:
        return
    inverse = inverse.reshape(-1)
    j = int(np.flatnonzero(first[inverse] != np.arange(m))[0])  # the first repeated row
    i = int(first[inverse[j]])
    raise InvalidInputError(
        f"options {i} and {j} (counting from 0) are identical, {points[i].tolist()}; "
        f"{m - first.size} of the {m} options repeat an earlier one. A duel of an option with "
        "its copy teaches nothing: remove the repeats, or add a column that tells them apart"
    )
