"""Per-round set computations of M-SafeOpt and its baselines, as pure functions (private).

Losalka & Scarlett, "No-Regret Algorithms for Safe Bayesian Optimization with Monotonicity
Constraints", AISTATS 2024. Everything here works on ``(n_x, n_s)`` arrays (one row per ``x``,
the safety variable ``s`` along axis 1, increasing), so that the per-``x`` loop of Algorithm 1
(lines 8-21) is a handful of vectorised reductions. Inputs are the posterior means and standard
deviations of ``f`` and ``g`` on the grid, the multipliers ``beta^f, beta^g`` (the paper's beta
multiplies the standard deviation, eq. (10)-(11)), the threshold ``h`` and the constants
``L_f`` (eq. 4) and ``L'_g`` (eq. 5).

A constant may be unknown (``None``): then the weakest assumption is taken, the limit of the
paper's formulas as ``L'_g -> 0`` (no lower bound on ``g``'s slope: ``s_bar`` is the top of the
grid wherever ``LCB^g`` at the boundary is below ``h``) and ``L_f -> infinity`` (no upper bound
on ``f``'s growth: the expansion value is ``+inf`` wherever ``s_bar`` is above the boundary), so
that (20)-(22) give up on an ``x`` only when its certified range cannot be extended, and every
``x`` that can still grow expands. Computed explicitly, never as ``inf * 0`` or a division by
zero. The refined acquisition (36) needs both constants.

Conventions adopted (spec ``msafeopt.md`` section 7):

* the safe set of row ``x`` is the prefix ``{s_j : j <= j_t(x)}`` with
  ``j_t(x) = max{j : UCB^g(s_j, x) <= h}`` (eq. 14 on the grid; ``j = 0`` always, eq. 12), and
  additionally never below the boundary certified in an earlier round (``j_prev``), since ``g``
  is monotone and a certified point stays safe (the "union over time");
* ``maxLCB_t`` is the maximum of ``LCB^f`` over this prefix-closed safe set of all ``x``;
* ``s_bar`` (eq. 19) is floored to the grid;
* masked reductions use ``-inf``, never a 0/1 multiplication (pitfall P4);
* argmax ties go to the first flat index (pitfall P8).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Bounds", "SafeSets", "safe_sets", "select_msafeopt", "select_safeopt_mc"]


@dataclass
class Bounds:
    """Posterior summaries on the grid, each (n_x, n_s)."""

    mean_f: np.ndarray
    std_f: np.ndarray
    mean_g: np.ndarray
    std_g: np.ndarray
    sqrt_beta_f: float
    sqrt_beta_g: float

    def __post_init__(self) -> None:
        # computed once: the set computations read each of them several times
        self.ucb_f = self.mean_f + self.sqrt_beta_f * self.std_f
        self.lcb_f = self.mean_f - self.sqrt_beta_f * self.std_f
        self.ucb_g = self.mean_g + self.sqrt_beta_g * self.std_g
        self.lcb_g = self.mean_g - self.sqrt_beta_g * self.std_g


@dataclass
class SafeSets:
    """The quantities of Algorithm 1 for one round (all per x, shape (n_x,) unless stated).

    ``boundary`` is the index of ``s_t^{(x)}`` (eq. 14), ``bar`` the index of ``s_bar_t^{(x)}``
    (eq. 19, floored to the grid), ``best`` the index of ``s_hat_t^{(x)}`` (eq. 16),
    ``ucb_best`` its UCB^f value, ``lcb_best`` the row maximum of LCB^f over the safe prefix,
    ``expansion`` = ``UCB^f(s_t^{(x)}, x) + L_f (s_bar - s_t^{(x)})`` (the left side of
    (21)/(22)), ``max_lcb`` = ``maxLCB_t`` (scalar), ``prefix`` the (n_x, n_s) safe-set mask.
    """

    boundary: np.ndarray
    bar: np.ndarray
    best: np.ndarray
    ucb_best: np.ndarray
    lcb_best: np.ndarray
    expansion: np.ndarray
    max_lcb: float
    prefix: np.ndarray


def boundary_index(ucb_g: np.ndarray, h: float, j_prev: np.ndarray | None = None) -> np.ndarray:
    """``j_t(x) = max{j : UCB^g(s_j, x) <= h}`` with ``j = 0`` always safe (eq. 12, 14), (n_x,).

    ``j_prev`` (n_x,), the boundary certified earlier, is a lower bound (monotone ``g``).
    """
    n_s = ucb_g.shape[1]
    ok = ucb_g <= h
    ok[:, 0] = True
    j = n_s - 1 - np.argmax(ok[:, ::-1], axis=1)
    if j_prev is not None:
        j = np.maximum(j, j_prev)
    return j.astype(np.int64)


def expansion_limit(
    boundary: np.ndarray,
    lcb_g_at_boundary: np.ndarray,
    s_values: np.ndarray,
    h: float,
    L_g_prime: float | None,
) -> np.ndarray:
    """Grid index of ``s_bar_t^{(x)}`` (eq. 19), shape (n_x,).

    ``s_bar = max{s : LCB^g(s_t, x) + L'_g (s - s_t) <= h}`` in closed form
    ``s_t + (h - LCB^g(s_t, x)) / L'_g``, capped at the top of the grid and floored to it. Where
    ``LCB^g(s_t, x) > h`` (only possible when the bounds are invalid) ``s_bar = s_t`` (P5).
    ``L_g_prime=None`` (unknown: no lower bound on g's slope): the top of the grid where
    ``LCB^g(s_t, x) < h``, else ``s_t``.
    """
    if L_g_prime is None:
        top = np.full_like(boundary, s_values.size - 1)
        return np.where(lcb_g_at_boundary < h, top, boundary).astype(np.int64)
    s_t = s_values[boundary]
    room = np.maximum(h - lcb_g_at_boundary, 0.0) / L_g_prime
    s_bar = s_t + room
    # floor to the grid with a relative tolerance so that exact grid values are kept
    tol = 1e-12 * max(1.0, float(np.max(np.abs(s_values))))
    bar = np.searchsorted(s_values, s_bar + tol, side="right") - 1
    return np.clip(np.maximum(bar, boundary), 0, s_values.size - 1).astype(np.int64)


def safe_sets(
    b: Bounds,
    s_values: np.ndarray,
    h: float,
    L_f: float | None,
    L_g_prime: float | None,
    j_prev: np.ndarray | None = None,
) -> SafeSets:
    """Safe boundary, expansion limit, safe UCB maximiser and ``maxLCB_t`` (Sec. 3, Alg. 1).

    ``None`` for a constant means unknown (module docstring)."""
    n_x, n_s = b.mean_f.shape
    rows = np.arange(n_x)
    boundary = boundary_index(b.ucb_g, h, j_prev)
    prefix = np.arange(n_s)[None, :] <= boundary[:, None]
    ucb_f = b.ucb_f
    lcb_f = b.lcb_f
    masked_ucb = np.where(prefix, ucb_f, -np.inf)
    best = np.argmax(masked_ucb, axis=1)
    ucb_best = masked_ucb[rows, best]
    lcb_best = np.max(np.where(prefix, lcb_f, -np.inf), axis=1)
    max_lcb = float(np.max(lcb_best))
    bar = expansion_limit(boundary, b.lcb_g[rows, boundary], s_values, h, L_g_prime)
    at_boundary = ucb_f[rows, boundary]
    if L_f is None:  # no bound on f's growth: any room left is worth expanding into
        expansion = np.where(bar > boundary, np.inf, at_boundary)
    else:
        expansion = at_boundary + L_f * (s_values[bar] - s_values[boundary])
    return SafeSets(boundary, bar, best, ucb_best, lcb_best, expansion, max_lcb, prefix)


@dataclass
class Selection:
    """The chosen action and the sets behind it (for tests and introspection)."""

    x_index: int
    s_index: int
    acq: np.ndarray  # (n_x, n_s), 0 off G_t and M_t
    alive: np.ndarray  # (n_x,) bool, D_X^t
    expd: np.ndarray  # (n_x,) bool
    in_g: np.ndarray  # (n_x,) bool: (s_t^{(x)}, x) is in G_t
    in_m: np.ndarray  # (n_x, n_s) bool: M_t membership
    fallback: bool


def _argmax_or_fallback(acq: np.ndarray, fallback_scores: np.ndarray) -> tuple[int, int, bool]:
    """Flat argmax of ``acq`` (first index); if its maximum is not > 0 (all widths ~ 0, P6),
    the argmax of ``fallback_scores`` (-inf where not allowed) instead."""
    flat = int(np.argmax(acq))
    used = False
    if not acq.flat[flat] > 0:
        flat = int(np.argmax(fallback_scores))
        used = True
    i, j = divmod(flat, acq.shape[1])
    return i, j, used


def select_msafeopt(
    b: Bounds,
    sets: SafeSets,
    case: str,
    L_f: float | None,
    L_g_prime: float | None,
    refined: bool = False,
) -> Selection:
    """Elimination, expanders, maximisers and the acquisition (20)-(25), (36); Algorithm 1 line 22.

    ``case`` is ``"1"`` (global safe optimum), ``"2"`` (best s for every x), ``"3a"`` (f and g
    increasing, global optimum) or ``"3b"`` (M-SafeUCB: f = g, only g is modelled; ``b.std_f`` is
    ignored). ``refined`` uses (36) on ``G_t``: ``max{beta^f sigma^f, (L_f/L'_g) beta^g sigma^g}``,
    which needs both constants (``None``: unknown, refused).
    """
    if refined and case != "3b" and (L_f is None or L_g_prime is None):
        raise ValueError("the refined acquisition (36) needs L_f and L_g_prime; one is unknown")
    n_x, n_s = b.mean_f.shape
    rows = np.arange(n_x)
    j = sets.boundary
    last = n_s - 1
    width_f = b.sqrt_beta_f * b.std_f
    width_g = b.sqrt_beta_g * b.std_g
    if case == "1":
        elim = (sets.ucb_best < sets.max_lcb) & (sets.expansion <= sets.max_lcb)  # (20), (21)
        expd = sets.expansion > sets.max_lcb  # (22)
    elif case == "2":
        elim = np.zeros(n_x, dtype=bool)
        expd = sets.expansion > sets.lcb_best  # (24)
    elif case == "3a":
        elim = sets.expansion <= sets.max_lcb  # (21) only
        expd = np.ones(n_x, dtype=bool)
    elif case == "3b":
        elim = np.zeros(n_x, dtype=bool)
        expd = j < last
    else:  # pragma: no cover - validated by the policy
        raise ValueError(f"unknown case {case!r}")
    alive = ~elim
    if not alive.any():  # P6: only possible with invalid bounds; fall back to D_X
        alive = np.ones(n_x, dtype=bool)
    in_g = alive & expd
    acq = np.zeros((n_x, n_s))
    in_m = np.zeros((n_x, n_s), dtype=bool)
    if case in ("1", "2"):
        in_m[rows[alive], sets.best[alive]] = True
        acq[in_m] = width_f[in_m]  # (23), M_t branch
    if case == "3b":
        g_val = width_g[rows, j]
    else:
        ratio = 1.0
        if refined and L_f is not None and L_g_prime is not None:
            ratio = L_f / L_g_prime
        g_val = np.maximum(width_f[rows, j], ratio * width_g[rows, j])  # (23)/(25)/(36)
    acq[rows[in_g], j[in_g]] = g_val[in_g]  # the G branch wins on G and M (P7)
    # fallback when every width is ~0: the safe UCB maximiser of a surviving x (P6)
    fb = np.full((n_x, n_s), -np.inf)
    if case == "3b":
        fb[rows[alive], j[alive]] = b.ucb_g[rows[alive], j[alive]]
    elif case == "3a":
        fb[rows[alive], j[alive]] = b.ucb_f[rows[alive], j[alive]]
    else:
        fb[rows[alive], sets.best[alive]] = sets.ucb_best[alive]
    i, s, used = _argmax_or_fallback(acq, fb)
    return Selection(i, s, acq, alive, expd, in_g, in_m, used)


def select_safeopt_mc(b: Bounds, sets: SafeSets) -> Selection:
    """SafeOpt-MC as the paper ran it (B.2.2, spec 4.1).

    ``G_t`` = the safe-boundary actions of every x whose boundary is below the top of the grid;
    ``M_t = {(s, x) in S_t : UCB^f > maxLCB_t}`` (Sui et al. 2015; strict as in the authors' code);
    ``acq = max{beta^f sigma^f, beta^g sigma^g}`` on ``G_t`` and ``M_t``, 0 elsewhere.
    """
    n_x, n_s = b.mean_f.shape
    rows = np.arange(n_x)
    j = sets.boundary
    width = np.maximum(b.sqrt_beta_f * b.std_f, b.sqrt_beta_g * b.std_g)
    in_m = sets.prefix & (b.ucb_f > sets.max_lcb)
    in_g = j < n_s - 1
    member = in_m.copy()
    member[rows[in_g], j[in_g]] = True
    acq = np.where(member, width, 0.0)
    fb = np.where(sets.prefix, b.ucb_f, -np.inf)
    i, s, used = _argmax_or_fallback(acq, fb)
    alive = np.ones(n_x, dtype=bool)
    return Selection(i, s, acq, alive, in_g.copy(), in_g, in_m, used)


def select_predvar(b: Bounds, sets: SafeSets) -> Selection:
    """PredVar extended to f and g (Schreiter et al. 2015; B.2.2): the largest confidence width
    ``max{beta^f sigma^f, beta^g sigma^g}`` over the whole safe set ``S_t``."""
    n_x, n_s = b.mean_f.shape
    width = np.maximum(b.sqrt_beta_f * b.std_f, b.sqrt_beta_g * b.std_g)
    acq = np.where(sets.prefix, width, 0.0)
    fb = np.where(sets.prefix, b.ucb_f, -np.inf)
    i, s, used = _argmax_or_fallback(acq, fb)
    alive = np.ones(n_x, dtype=bool)
    none = np.zeros(n_x, dtype=bool)
    return Selection(i, s, acq, alive, none, none, sets.prefix.copy(), used)
