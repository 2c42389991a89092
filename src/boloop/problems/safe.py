"""Benchmark problems of the safe family (Losalka & Scarlett, AISTATS 2024, Sec. 5 and B.2).

Every problem is a grid of actions ``(s, x)`` (:class:`boloop.spaces.SafeSpace`, ``s`` first), an
objective ``f`` to maximise, a safety function ``g`` increasing in ``s`` with ``g(0, x) <= h``, the
threshold ``h``, and the growth constants ``L_f`` (eq. 4) and ``L'_g`` (eq. 5). ``settings`` holds
what :func:`boloop.algorithms.make_policy` needs (kernels, noise, beta, seeds) with the paper's
values where it gives them.

* ``safe/clinical-trial`` -- efficacy (37) and toxicity (38) of a two-drug combination, 200 x 200,
  ``h = 0.9`` (authors' code), ``L_f = 0.436``, ``L'_g = 0.035``.
* ``safe/branin`` -- the synthetic 2D problem (122)-(123), with ``f`` = minus Trieste's scaled
  Branin on the rescaled inputs ``(15 s - 5, 15 x)``, as the authors' code runs it (the printed
  (122) omits both the rescaling and the sign); ``h = 2.0`` (not in the paper: with it exactly one
  of the three global optima of ``f`` is unsafe, which is what B.2.1 says ``g`` was designed for).
* ``safe/hartmann3`` -- Hartmann-3 (maximised) with ``g = s + x1^2 + x2^3`` (118), ``h = 2``,
  75^3 = 421,875 actions (option ``n``).
* ``safe/pendulum`` -- the pendulum swing-up of eqs. (119)-(121), 100 x 100, noisy.
* ``safe/random-gp`` -- f and ``g - h`` drawn from the GP prior on a small grid, ``g``
  conditioned (by rejection) to increase in ``s`` and to be safe at ``s = 0`` (tests).

Metric columns (:class:`SafeTracker`): ``regret`` ``r_t`` and ``cumulative_regret`` ``R_t`` (eq. 1),
``simple_regret`` of ``recommend().point``, ``unsafe`` (cumulative count of evaluations with
true ``g > h``), ``regret_prime``/``cumulative_regret_prime`` (``r'_t``, ``R'_t``, eq. 2) and
``regret_x``/``cumulative_regret_x`` (``r^X_t``, ``R^X_t``, eq. 3, from the policy's
``best_s`` after the round). Regret is against the grid optimum of the noiseless ``f``; the
seed evaluations at ``s = 0`` add no regret (authors' code).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from boloop._validation import as_points, as_rng
from boloop.errors import InvalidInputError
from boloop.gp.kernels import Kernel, Matern
from boloop.problems import functions as fn
from boloop.problems.base import MetricTracker, Problem
from boloop.problems.registry import register
from boloop.queries import Evaluate, Query
from boloop.recommendations import SafeRecommendation
from boloop.spaces import SafeSpace

__all__ = [
    "SafeProblem",
    "SafeTracker",
    "clinical_efficacy",
    "clinical_toxicity",
    "branin_objective",
    "branin_safety",
    "hartmann_safety",
    "pendulum_rollout",
    "growth_constants",
    "safe_optima",
    "METRICS",
]

METRICS = [
    "regret",
    "cumulative_regret",
    "simple_regret",
    "unsafe",
    "regret_prime",
    "cumulative_regret_prime",
    "regret_x",
    "cumulative_regret_x",
]


# ---------------------------------------------------------------------- functions
def clinical_efficacy(P: np.ndarray) -> np.ndarray:
    """``f_eff(d1, d2)`` of eq. (37), theta^f = (1, 2, 1, -4, -1); P (n, 2) = (s = d1, x = d2)."""
    d1, d2 = P[:, 0], P[:, 1]
    z = 1.0 - 2.0 * d1 - 1.0 * d2 + 4.0 * d1**2 + 1.0 * d2**2
    return 1.0 / (1.0 + np.exp(z))


def clinical_toxicity(P: np.ndarray) -> np.ndarray:
    """``g_tox(d1, d2)`` of eq. (38), theta^g = (2, 1)."""
    return 1.0 / (1.0 + np.exp(-2.0 * P[:, 0] - 1.0 * P[:, 1]))


def branin_objective(P: np.ndarray) -> np.ndarray:
    """``f_syn1`` as the authors' code computes it: ``-(Branin(15 s - 5, 15 x) - 54.8104)/51.9496``.

    Eq. (122) prints ``alpha * ((x - b s^2 + c s - 6)^2 + 10 (1 - t) cos s + Delta)`` without the
    input rescaling and with the opposite sign; its maximum on the grid is then not the
    three-optima landscape B.2.1 describes. Maximum 1.0474 at three points.
    """
    Z = np.stack([15.0 * P[:, 0] - 5.0, 15.0 * P[:, 1]], axis=1)
    return -(fn.branin(Z) - 54.8104) / 51.9496


def branin_safety(P: np.ndarray) -> np.ndarray:
    """``g_syn1 = 2 s (e^y sin(10 y) + sin(5 y) + 5) / 3`` with ``y = x + 1/3`` (eq. 123)."""
    s, y = P[:, 0], P[:, 1] + 1.0 / 3.0
    return 2.0 * s * (np.exp(y) * np.sin(10.0 * y) + np.sin(5.0 * y) + 5.0) / 3.0


def hartmann_objective(P: np.ndarray) -> np.ndarray:
    """Hartmann-3 maximised, ``s`` the first input (authors' code); max 3.86278."""
    return -fn.hartmann3(P)


def hartmann_safety(P: np.ndarray) -> np.ndarray:
    """``g_syn3D(s, x) = s + x1^2 + x2^3`` (eq. 118)."""
    return P[:, 0] + P[:, 1] ** 2 + P[:, 2] ** 3


_PENDULUM_X = (-2 * math.pi + math.pi / 36, -math.pi - math.pi / 36)


def pendulum_rollout(P: np.ndarray, steps: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """``(f, g)`` of the pendulum swing-up, eqs. (119)-(121); P (n, 2) = (torque s, angle x).

    Gym's Pendulum dynamics (g = 10, m = l = 1, dt = 0.05) without its clipping of the angular
    velocity (8) and torque (2), which would make ``g <= 8 < h`` always (spec 5.2); the torque
    ``40 s`` acts in the first step only; initial velocity 0; angle 0 = upright.

    ``f = max_n f_n`` with ``f_n = -theta_n^2 - thetadot_n^2 / 10 - s^2 / 1000`` while
    ``theta_n <= 0`` and ``f_n = -thetadot_up`` (the angular velocity at the first step with
    ``theta > 0``) once the pendulum has crossed the upright position; ``g = max_n |thetadot_n|``.
    """
    s, th = P[:, 0].astype(np.float64), P[:, 1].astype(np.float64).copy()
    thdot = np.zeros_like(th)
    f = np.full_like(th, -np.inf)
    g = np.zeros_like(th)
    crossed = np.zeros(th.shape, dtype=bool)
    up_vel = np.zeros_like(th)
    dt, grav = 0.05, 10.0
    for n in range(steps):
        u = 40.0 * s if n == 0 else 0.0
        thdot = thdot + (3 * grav / 2 * np.sin(th) + 3.0 * u) * dt
        th = th + thdot * dt
        newly = (~crossed) & (th > 0)
        up_vel = np.where(newly, thdot, up_vel)
        crossed |= newly
        fn_ = np.where(crossed, -up_vel, -(th**2) - thdot**2 / 10.0 - s**2 / 1000.0)
        f = np.maximum(f, fn_)
        g = np.maximum(g, np.abs(thdot))
    return f, g


# ---------------------------------------------------------------------- ground truth helpers
def growth_constants(F: np.ndarray, G: np.ndarray, s_values: np.ndarray) -> tuple[float, float]:
    """``(L_f, L'_g)`` on a grid, (n_x, n_s) arrays: the largest growth slope of ``f`` in ``s``
    (eq. 4) and the smallest of ``g`` (eq. 5), from adjacent grid values (the slope between any two
    grid points is an average of adjacent slopes, so these are exact for the grid)."""
    ds = np.diff(s_values)[None, :]
    return float(np.max(np.diff(F, axis=1) / ds)), float(np.min(np.diff(G, axis=1) / ds))


def safe_optima(F: np.ndarray, G: np.ndarray, h: float) -> tuple[float, np.ndarray]:
    """``(f*, f*(x))``: see :func:`boloop.metrics.safe.safe_optima`."""
    from boloop.metrics.safe import safe_optima as _so

    return _so(F, G, h)


# ---------------------------------------------------------------------- the problem class
@dataclass
class SafeProblem(Problem):
    """A safe-family problem: ``functions(P) -> (f, g)`` over actions P (n, 1 + d_x).

    ``noise_std`` is the standard deviation of the Gaussian noise added to both measurements.
    """

    functions: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] = field(
        default=lambda P: (np.zeros(len(P)), np.zeros(len(P)))
    )
    noise_std: float = 0.0
    _truth: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    @property
    def threshold(self) -> float:
        return float(self.settings["threshold"])

    def truth(self) -> tuple[np.ndarray, np.ndarray]:
        """Noiseless ``(F, G)`` on the grid, each (n_x, n_s), computed once in x-row chunks."""
        if self._truth is None:
            sp: SafeSpace = self.space  # type: ignore[assignment]
            F, G = sp.map_rows(self.functions, max_points=65536)
            self._truth = (F, G)
        return self._truth

    def value(self, X: np.ndarray) -> dict[str, np.ndarray]:
        P = as_points(X, "X", dim=self.space.dim)
        f, g = self.functions(P)
        return {"f": f, "g": g}

    def observe(self, query: Evaluate, rng: np.random.Generator) -> dict[str, float]:
        f, g = self.functions(query.x[None, :])
        vals = {"f": float(f[0]), "g": float(g[0])}
        if self.noise_std > 0:
            vals = {k: v + self.noise_std * float(rng.standard_normal()) for k, v in vals.items()}
        outputs = query.outputs or ("f", "g")
        return {k: vals[k] for k in outputs}

    def new_tracker(self) -> SafeTracker:
        return SafeTracker(self)

    def metric_names(self) -> list[str]:
        return list(METRICS)


class SafeTracker(MetricTracker):
    """Regrets (1)-(3), simple regret and the unsafe count, per answered query (see module doc)."""

    def __init__(self, problem: SafeProblem) -> None:
        self.problem = problem
        F, G = problem.truth()
        self.F, self.G = F, G
        self.h = problem.threshold
        self.f_opt, self.f_opt_x = safe_optima(F, G, self.h)
        self.sums = {"regret": 0.0, "regret_prime": 0.0, "regret_x": 0.0}
        self.unsafe = 0

    def update(self, query: Query, answer: Any, recommendation: Any) -> dict[str, float]:
        sp: SafeSpace = self.problem.space  # type: ignore[assignment]
        if query.index is None:  # type: ignore[attr-defined]
            raise InvalidInputError("safe metrics need grid actions (query.index)")
        i, j = divmod(int(query.index), sp.n_s)  # type: ignore[attr-defined]
        from boloop.metrics.safe import is_unsafe

        self.unsafe += is_unsafe(self.G[i, j], self.h)
        seed = query.initial  # the safe seeds: no regret (Sec. 4)
        r = 0.0 if seed else self.f_opt - self.F[i, j]
        rp = 0.0 if seed else self.f_opt_x[i] - self.F[i, j]
        from boloop.metrics.safe import regret_x

        rec = recommendation
        if not isinstance(rec, SafeRecommendation):
            raise InvalidInputError(
                f"{self.problem.id}: safe metrics need a certified recommendation "
                f"(a SafeRecommendation) from recommend(), got {type(rec).__name__}"
            )
        rx = regret_x(self.F, self.f_opt_x, rec.best_s_index)
        # a certified recommendation is a grid point: it has its flat index
        ri, rj = divmod(int(cast(int, rec.index)), sp.n_s)
        out = {
            "regret": r,
            "cumulative_regret": self.sums["regret"] + r,
            "simple_regret": self.f_opt - self.F[ri, rj],
            "unsafe": float(self.unsafe),
            "regret_prime": rp,
            "cumulative_regret_prime": self.sums["regret_prime"] + rp,
            "regret_x": rx,
            "cumulative_regret_x": self.sums["regret_x"] + (0.0 if seed else rx),
        }
        self.sums["regret"] += r
        self.sums["regret_prime"] += rp
        if not seed:
            self.sums["regret_x"] += rx
        return out


# ---------------------------------------------------------------------- registered problems
def _kernel(ls: list[float], variance: float) -> Kernel:
    return Matern(2.5, lengthscale=ls, variance=variance)


#: fixed kernels of the reproduction: (variance, ARD length-scales) of f and of g - h, the MAP
#: estimates under the paper's log-normal priors (B.2.2) from 60 random grid evaluations
#: (``reference_kernels(problem)``, seed 1), rounded. The paper instead refits online every round.
REFERENCE_KERNELS: dict[str, tuple[tuple[float, list[float]], tuple[float, list[float]]]] = {
    "clinical-trial": ((0.15, [1.6, 3.2]), (0.44, [3.4, 6.6])),
    # g - h: the MAP x length-scale was 0.69; with it the bounds were invalid (2-8 unsafe
    # evaluations in 50 steps of seed 0); 0.3 (period of sin(10 y) is 0.63) gives none
    "branin": ((118.0, [1.14, 3.94]), (54.0, [4.1, 0.3])),
    # g - h: the MAP (variance 14, length-scales 14, 5, 3.5) extrapolated the polynomial g
    # over-confidently (5 unsafe evaluations in 25 steps at n = 12); (1; 1, 0.5, 0.5) gives none
    "hartmann3": ((0.88, [1.16, 0.46, 0.30]), (1.0, [1.0, 0.5, 0.5])),
    # g - h: with the MAP length-scales (1.5, 2.8) beta = 3 bounds were violated near the
    # boundary (3 unsafe evaluations in 40 runs of 50 steps, z = 3.1 and 3.6); (0.5, 1.0): none
    "pendulum": ((8.8, [0.94, 1.69]), (8.0, [0.5, 1.0])),
}


def reference_kernels(problem: SafeProblem, n: int = 60, seed: int = 1) -> tuple[Kernel, Kernel]:
    """MAP Matern-5/2 kernels of ``f`` and ``g - h`` under the paper's priors (length-scale
    LogNormal(log 0.2, 1), variance LogNormal(log v, 1)) from ``n`` random grid evaluations: how
    :data:`REFERENCE_KERNELS` was made."""
    from boloop.gp.exact import ExactGP, LogNormalPrior

    F, G = problem.truth()
    sp: SafeSpace = problem.space  # type: ignore[assignment]
    idx = as_rng(seed).choice(sp.n, n, replace=False)
    X = sp.points[idx]
    out = []
    for y, v in (
        (F.reshape(-1)[idx], problem.settings["variance_prior_f"]),
        (G.reshape(-1)[idx] - problem.threshold, problem.settings["variance_prior_g"]),
    ):
        priors = {
            "lengthscale": LogNormalPrior(math.log(0.2), 1.0),
            "variance": LogNormalPrior(math.log(v), 1.0),
        }
        gp = ExactGP(_kernel([0.3] * sp.dim, 1.0), problem.settings["noise_f"], priors=priors)
        gp.fit(X, y, n_restarts=3, seed=0)
        out.append(gp.kernel)
    return out[0], out[1]


def _settings(
    h: float,
    L_f: float,
    L_g: float,
    dim: int,
    var_f: float,
    var_g: float,
    noise: float = 1e-5,
    ls: list[float] | None = None,
    name: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    ls = ls or [0.2] * dim
    kf, kg = _kernel(ls, var_f), _kernel(ls, var_g)
    if name in REFERENCE_KERNELS:
        (vf, lf), (vg, lg) = REFERENCE_KERNELS[name]
        kf, kg = _kernel(lf, vf), _kernel(lg, vg)
    s = {
        "threshold": h,
        "L_f": L_f,
        "L_g_prime": L_g,
        "kernel_f": kf,
        "kernel_g": kg,
        "noise_f": noise,
        "noise_g": noise,
        "variance_prior_f": var_f,
        "variance_prior_g": var_g,
        "sqrt_beta_f": 3.0,
        "sqrt_beta_g": 3.0,
        "n_initial": 2,
        "budget": 50,
        # reproduction default: kernels fixed (REFERENCE_KERNELS); the paper refits every round
        # with log-normal priors: pass fit_hyperparameters=True to do the same
        "fit_hyperparameters": False,
    }
    s.update(extra)
    return s


@register("safe/clinical-trial", "Two-drug dose finding: efficacy (37), toxicity (38) <= 0.9")
def clinical_trial(n: int = 200, h: float = 0.9) -> SafeProblem:
    space = SafeSpace.grid((0.0, 1.0), n, [[0.0, 2.0]], n, names=["d1", "d2"])
    return SafeProblem(
        id="safe/clinical-trial",
        family="safe",
        space=space,
        description="simulated clinical trial of Losalka & Scarlett (2024), Sec. 5",
        settings=_settings(float(h), 0.436, 0.035, 2, 1.0, 1.0, name="clinical-trial"),
        functions=lambda P: (clinical_efficacy(P), clinical_toxicity(P)),
    )


@register("safe/branin", "Synthetic 2D: minus scaled Branin (122), safety (123) <= 2.0")
def branin(n: int = 200, h: float = 2.0) -> SafeProblem:
    space = SafeSpace.grid((0.0, 1.0), n, [[0.0, 1.0]], n, names=["s", "x"])
    # L_f = 31.25 is the largest growth of f = -ScaledBranin in s (eq. 4); the authors' code uses
    # 10.166, the largest *decrease* (growth of +Branin). L'_g = 0.8597 (code: 0.86).
    return SafeProblem(
        id="safe/branin",
        family="safe",
        space=space,
        description="synthetic 2D problem of Losalka & Scarlett (2024), B.2.1",
        settings=_settings(float(h), 31.25, 0.8597, 2, 9.0, 9.0, name="branin"),
        functions=lambda P: (branin_objective(P), branin_safety(P)),
    )


@register("safe/hartmann3", "Synthetic 3D: Hartmann-3 maximised, g = s + x1^2 + x2^3 <= 2")
def hartmann3(n: int = 75, h: float = 2.0) -> SafeProblem:
    space = SafeSpace.grid((0.0, 1.0), n, [[0.0, 1.0], [0.0, 1.0]], n, names=["s", "x1", "x2"])
    return SafeProblem(
        id="safe/hartmann3",
        family="safe",
        space=space,
        description="synthetic 3D problem of Losalka & Scarlett (2024), B.1",
        settings=_settings(float(h), 1.9, 1.0, 3, 1.0, 1.0, name="hartmann3"),
        functions=lambda P: (hartmann_objective(P), hartmann_safety(P)),
    )


@register("safe/pendulum", "Pendulum swing-up (119)-(121): torque s, start angle x, |w| <= 9")
def pendulum(n: int = 100, h: float = 9.0, noise_variance: float = 0.05) -> SafeProblem:
    space = SafeSpace.grid((0.0, 1.0), n, [list(_PENDULUM_X)], n, names=["torque", "angle"])
    problem = SafeProblem(
        id="safe/pendulum",
        family="safe",
        space=space,
        description="pendulum swing-up of Losalka & Scarlett (2024), B.1 (Gym dynamics, no clip)",
        functions=lambda P: pendulum_rollout(P),
        noise_std=math.sqrt(float(noise_variance)),
    )
    F, G = problem.truth()
    L_f, L_g_min = growth_constants(F, G, space.s_values)
    # g = max_n |thetadot_n| is not exactly increasing in s: the peak speed is sampled at the
    # 100 discrete steps, and about 1% of adjacent grid pairs decrease (by at most ~0.02, the
    # slope minimum is L_g_min ~ -2.2). The paper's L'_g > 0 cannot hold literally; we use
    # 0.5, about the 5th percentile of the adjacent slopes. Safety never relies on L'_g (it comes
    # from UCB^g <= h); L'_g only drives elimination and expansion.
    settings_extra = {"L_g_prime_min_on_grid": L_g_min}
    L_g = 0.5
    width = _PENDULUM_X[1] - _PENDULUM_X[0]
    # not in the paper: length-scales 0.2 of each input's range, variances from the grid's
    # spread of f and g - h (the paper does not state them for this problem)
    var_f = float(np.var(F))
    var_g = float(np.mean((G - h) ** 2))
    problem.settings = _settings(
        float(h),
        L_f,
        L_g,
        2,
        var_f,
        var_g,
        noise=float(noise_variance),
        ls=[0.2, 0.2 * width],
        name="pendulum",
        **settings_extra,
    )
    return problem


class TrendKernel(Kernel):
    """``offset + slope * s s' + k_0((s, x), (s', x'))``: a random offset and slope in ``s`` plus
    a stationary kernel ``k_0`` (fixed hyperparameters; used by ``safe/random-gp`` so that draws
    increasing in ``s`` are common and the policy's model is the generating prior)."""

    def __init__(self, base: Kernel, offset: float, slope: float) -> None:
        self.base = base
        self.offset = float(offset)
        self.slope = float(slope)
        super().__init__(())

    def hyperparameter_groups(self) -> dict[str, int]:
        return {}

    @property
    def theta(self) -> np.ndarray:
        return np.zeros(0)

    @theta.setter
    def theta(self, value: np.ndarray) -> None:
        if np.size(value):
            raise InvalidInputError("TrendKernel has no free hyperparameters")

    def k(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        Y = X if Y is None else np.asarray(Y, dtype=np.float64)
        return self.offset + self.slope * np.outer(X[:, 0], Y[:, 0]) + self.base.k(X, Y)

    def diag(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        return self.offset + self.slope * X[:, 0] ** 2 + self.base.diag(X)

    def gradient(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = np.asarray(X).shape[0]
        return self.k(X), np.zeros((0, n, n))


def _monotone_by_construction(
    space: SafeSpace, kern_g: TrendKernel, rng: np.random.Generator, min_slope: float
) -> np.ndarray:
    """``g - h = a + b s + z(s, x)`` meeting the assumptions by design (issue 18).

    ``z ~ GP(0, k_0)`` is the stationary part of ``kern_g``; the offset ``a`` and the slope
    ``b`` (prior ``N(0, offset)`` and ``N(0, slope)``, the trend of :class:`TrendKernel`) are
    then drawn from their priors *truncated* to the values that make the draw valid given ``z``:
    ``b >= min_slope - min_{x, adjacent s} dz/ds`` (every row increases by at least
    ``min_slope``), then ``-max_x (b + z(1, x)) < a <= -max_x z(0, x)`` (safe at ``s = 0``, some
    action unsafe; the interval is never empty because of the slope). Used when rejection
    sampling of the whole draw found none (a stationary part too wiggly for the prior's trend):
    such draws get a steeper ``g`` than the prior would usually give them. Every draw is valid.
    """
    from scipy.stats import truncnorm

    P = space.points
    K0 = kern_g.base.k(P) + 1e-10 * np.eye(P.shape[0])
    Z = (np.linalg.cholesky(K0) @ rng.standard_normal(P.shape[0])).reshape(space.n_x, space.n_s)
    S = np.broadcast_to(space.s_values[None, :], Z.shape)
    ds = np.diff(space.s_values)[None, :]
    b_min = float(min_slope - np.min(np.diff(Z, axis=1) / ds))
    sd_b = math.sqrt(kern_g.slope)
    b = float(truncnorm.rvs(b_min / sd_b, np.inf, scale=sd_b, random_state=rng))
    b = max(b, b_min)  # guard against rounding in the far tail
    lo = float(-np.max(b * S + Z))
    hi = float(-np.max(Z[:, 0]))
    sd_a = math.sqrt(kern_g.offset)
    a = float(truncnorm.rvs(lo / sd_a, hi / sd_a, scale=sd_a, random_state=rng))
    a = min(max(a, lo + 1e-12 * (hi - lo)), hi)
    return a + b * S + Z


def random_monotone_gp(
    seed: int = 0,
    n_s: int = 12,
    n_x: int = 10,
    d_x: int = 1,
    h: float = 0.0,
    min_slope: float = 0.1,
    max_draws: int = 20000,
    lengthscale_f: float = 0.3,
    lengthscale_g: float = 0.4,
    variance_g: float = 0.05,
) -> SafeProblem:
    """A random problem drawn from the model's own prior, on an ``n_s x n_x`` grid of
    ``[0, 1] x [0, 1]^{d_x}``: ``f ~ GP(0, Matern-5/2(0.3), variance 1)`` and
    ``g - h ~ GP(0, 1 + 4 s s' + Matern-5/2(0.4), variance 0.05)``, the latter kept only if every
    row increases by at least ``min_slope`` per unit of ``s``, ``g(0, x) <= h`` for all x, and
    some action is unsafe (rejection sampling = the prior conditioned on the paper's
    assumptions; when ``max_draws`` draws found none, :func:`_monotone_by_construction` draws
    the trend given the stationary part, so that every seed is a valid problem). ``settings``
    holds the generating kernels and noise 1e-6, so the model is well specified. Evaluations are on grid actions only. ``lengthscale_f``, ``lengthscale_g``
    and ``variance_g`` change the generating kernels (the unknown-hyperparameter benchmark draws
    them from a wide prior, ``benchmarks/safe_unknown_hyperparameters.py``)."""
    rng = as_rng(seed)
    n_x_dim = max(1, round(n_x ** (1.0 / d_x)))
    space = SafeSpace.grid((0.0, 1.0), n_s, [[0.0, 1.0]] * d_x, n_x_dim)
    kern_f = _kernel([float(lengthscale_f)] * (1 + d_x), 1.0)
    kern_g = TrendKernel(
        _kernel([float(lengthscale_g)] * (1 + d_x), float(variance_g)), offset=1.0, slope=4.0
    )
    P = space.points
    eye = 1e-10 * np.eye(P.shape[0])
    Lf = np.linalg.cholesky(kern_f.k(P) + eye)
    Lg = np.linalg.cholesky(kern_g.k(P) + eye)
    F = (Lf @ rng.standard_normal(P.shape[0])).reshape(space.n_x, space.n_s)
    G = None
    ds = np.diff(space.s_values)[None, :]
    for _ in range(int(max_draws)):
        Z = (Lg @ rng.standard_normal(P.shape[0])).reshape(space.n_x, space.n_s)
        if (
            np.min(np.diff(Z, axis=1) / ds) >= min_slope
            and np.all(Z[:, 0] <= 0.0)
            and np.max(Z) > 0.0
        ):
            G = Z + h
            break
    if G is None:
        G = _monotone_by_construction(space, kern_g, rng, min_slope) + h
    L_f, L_g = growth_constants(F, G, space.s_values)
    lookup = {tuple(np.round(p, 9)): k for k, p in enumerate(P)}
    Ff, Gf = F.reshape(-1), G.reshape(-1)

    def functions(Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        try:
            idx = np.array([lookup[tuple(np.round(q, 9))] for q in Q])
        except KeyError as exc:
            raise InvalidInputError("safe/random-gp is defined on its grid actions only") from exc
        return Ff[idx], Gf[idx]

    settings = _settings(float(h), max(L_f, 1e-3), L_g, 1 + d_x, 1.0, 1.0, noise=1e-6)
    settings["kernel_f"] = kern_f
    settings["kernel_g"] = kern_g
    prob = SafeProblem(
        id="safe/random-gp",
        family="safe",
        space=space,
        description="f and g - h drawn from a GP prior, g increasing in s (tests)",
        settings=settings,
        functions=functions,
        _truth=(F, G),  # drawn with the functions: the ground truth is known exactly
    )
    return prob


register("safe/random-gp", "f, g - h drawn from the GP prior; g increasing in s (for tests)")(
    random_monotone_gp
)
