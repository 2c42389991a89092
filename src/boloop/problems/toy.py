"""One small toy problem per family, for tests, the demo and the README.

They are not from the papers: each is a cheap 1-D (safe: 1+1-D, expert: 2-D) instance with the
query kinds and metric columns of its family's benchmark problems, and oracles defined here:

* ``levelset/toy`` -- noisy evaluations of ``f(x) = sin(2 pi x) + 0.5 x`` on 41 grid points of
  [0, 1], threshold ``h = 0.25``. Metrics ``loss`` (fraction of grid points misclassified by the
  sets ``{mu_t >= h}`` / ``{mu_t < h}`` of a GP with the problem's kernel fitted to the evaluations
  so far, independent of the policy's own model) and ``fscore`` (F1 of the estimated upper set).
* ``preference/toy`` -- duels between 25 grid points of [0, 1], utility
  ``f(x) = 3 exp(-(x - 0.7)^2 / 0.05)``; the answer follows the Bradley-Terry-Luce model,
  ``P(a preferred to b) = sigmoid(f(a) - f(b))``. Metrics (MR-LPF paper, eq. 1 and Sec. 1.3 of the
  spec): ``regret`` ``mu(f* - f(a)) + mu(f* - f(b)) - 1``, its running sum ``cumulative_regret``,
  ``simple_regret`` ``mu(f* - f(x_hat)) - 1/2`` of ``policy.recommend()``.
* ``safe/toy`` -- actions ``(s, x)``, s in 6 levels of [0, 1], x in 11 grid points of [0, 1];
  objective ``f = s - (x - 0.6)^2`` (maximised), safety ``g = s (0.5 + x)`` increasing in s, safe
  when ``g <= h = 0.8``; noisy answers ``{"f": ..., "g": ...}``. Metrics ``regret``
  (``f*`` over the safe actions minus ``f(s_t, x_t)``; negative for an unsafe action better than
  the safe optimum, which only a policy ignoring safety evaluates), ``cumulative_regret``,
  ``simple_regret``
  of ``policy.recommend()`` (or its ``"point"``; NaN when there is none), ``unsafe`` (cumulative count of evaluations
  with true ``g > h``).
* ``expert/toy`` -- minimise ``f(x) = |x - (0.7, 0.3)|^2`` on [0, 1]^2 with noisy evaluations; a
  synthetic expert accepts ``x`` when ``|x - (0.6, 0.4)|^2 <= 0.15`` (a belief that is close to the
  truth but not exact). Metrics (COBOL, Sec. 2): ``regret`` ``f(x_t) - f*`` of the step's evaluation
  (0 in a step whose label was rejected: only evaluated points enter COBOL's regret),
  ``cumulative_regret``, ``simple_regret`` ``min_tau f(x_tau) - f*``, ``expert_queries`` and
  ``evaluations`` (cumulative counts).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from boloop.gp import CandidatePosterior, ExactGP, SquaredExponential
from boloop.metrics.common import RunningBest, RunningSum, f1_score, misclassification_rate
from boloop.problems.base import MetricTracker, Problem
from boloop.problems.registry import register
from boloop.queries import Compare, Evaluate, Label, Query
from boloop.recommendations import BestPoint
from boloop.spaces import Box, CandidateSet, SafeSpace

__all__ = ["ToyLevelSet", "ToyPreference", "ToySafe", "ToyExpert"]


def recommended_point(rec: BestPoint | None) -> np.ndarray | None:
    """The point (1, d) of a recommendation, or None when there is none yet."""
    if rec is None or rec.point is None:
        return None
    return np.asarray(rec.point, dtype=np.float64).reshape(1, -1)


def _sigmoid(z: Any) -> Any:
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=np.float64)))


# -- levelset ---------------------------------------------------------------------------------------
class ToyLevelSet(Problem):
    """``levelset/toy``: see the module docstring."""

    def __init__(self, noise_std: float = 0.1, n_grid: int = 41, threshold: float = 0.25) -> None:
        space = CandidateSet.grid([[0.0, 1.0]], int(n_grid))
        super().__init__(
            id="levelset/toy",
            family="levelset",
            space=space,
            description="sin(2 pi x) + x/2 on a 1-D grid, threshold 0.25",
            settings={
                "kernel": SquaredExponential(lengthscale=0.15, variance=1.0),
                "noise_variance": float(noise_std) ** 2,
                "threshold": float(threshold),
                "budget": 30,
                "n_initial": 0,
            },
        )
        self.noise_std = float(noise_std)
        self.true_values = self.value(space.points)
        self.true_upper = self.true_values >= self.settings["threshold"]

    def value(self, X: np.ndarray) -> np.ndarray:
        x = np.asarray(X, dtype=np.float64).reshape(-1, 1)[:, 0]
        return np.sin(2 * math.pi * x) + 0.5 * x

    def observe(self, query: Evaluate, rng: np.random.Generator) -> float:
        return float(self.value(query.x[None, :])[0] + self.noise_std * rng.standard_normal())

    def metric_names(self) -> list[str]:
        return ["loss", "fscore"]

    def new_tracker(self) -> MetricTracker:
        return _LevelSetTracker(self)


class _LevelSetTracker(MetricTracker):
    def __init__(self, problem: ToyLevelSet) -> None:
        self.problem = problem
        s = problem.settings
        self.gp = ExactGP(s["kernel"].clone(), noise_variance=max(s["noise_variance"], 1e-8))
        assert isinstance(problem.space, CandidateSet)
        self.cache = CandidatePosterior(self.gp, problem.space.points)

    #: metrics of the queries only: no recommendation is needed (nor computed)
    recommend_options: ClassVar[dict[str, Any] | None] = None

    def update(self, query: Query, answer: Any, recommendation: Any) -> dict[str, float]:
        if isinstance(query, Evaluate):
            self.gp.condition(query.x, float(answer))
        estimated_upper = self.cache.mean >= self.problem.settings["threshold"]
        return {
            "loss": misclassification_rate(self.problem.true_upper, estimated_upper),
            "fscore": f1_score(self.problem.true_upper, estimated_upper),
        }


@register("levelset/toy", "toy: noisy sin(2 pi x) + x/2 on 41 grid points, threshold 0.25")
def _levelset_toy(noise_std: float = 0.1, n_grid: int = 41, threshold: float = 0.25) -> Problem:
    return ToyLevelSet(noise_std=noise_std, n_grid=n_grid, threshold=threshold)


# -- preference -------------------------------------------------------------------------------------
class ToyPreference(Problem):
    """``preference/toy``: see the module docstring."""

    def __init__(self, n_grid: int = 25) -> None:
        space = CandidateSet.grid([[0.0, 1.0]], int(n_grid))
        super().__init__(
            id="preference/toy",
            family="preference",
            space=space,
            description="BTL duels on a 1-D grid, utility 3 exp(-(x-0.7)^2/0.05)",
            settings={
                "kernel": SquaredExponential(lengthscale=0.15, variance=1.0),
                "budget": 40,
            },
        )
        self.utility = self.value(space.points)
        self.f_max = float(np.max(self.utility))

    def value(self, X: np.ndarray) -> np.ndarray:
        x = np.asarray(X, dtype=np.float64).reshape(-1, 1)[:, 0]
        return 3.0 * np.exp(-((x - 0.7) ** 2) / 0.05)

    def compare(self, query: Compare, rng: np.random.Generator) -> int:
        fa, fb = self.value(np.vstack([query.a, query.b]))
        p_a = float(_sigmoid(fa - fb))
        return 0 if rng.random() < p_a else 1

    def metric_names(self) -> list[str]:
        return ["regret", "cumulative_regret", "simple_regret"]

    def new_tracker(self) -> MetricTracker:
        return _PreferenceTracker(self)


class _PreferenceTracker(MetricTracker):
    def __init__(self, problem: ToyPreference) -> None:
        self.problem = problem
        self.cum = RunningSum()

    def update(self, query: Query, answer: Any, recommendation: Any) -> dict[str, float]:
        p = self.problem
        assert isinstance(query, Compare)
        fa, fb = p.value(np.vstack([query.a, query.b]))
        r = float(_sigmoid(p.f_max - fa) + _sigmoid(p.f_max - fb) - 1.0)
        rec = recommended_point(recommendation)
        simple = math.nan
        if rec is not None:
            simple = float(_sigmoid(p.f_max - p.value(rec)[0]) - 0.5)
        return {"regret": r, "cumulative_regret": self.cum.add(r), "simple_regret": simple}


@register("preference/toy", "toy: Bradley-Terry duels on 25 grid points of [0, 1]")
def _preference_toy(n_grid: int = 25) -> Problem:
    return ToyPreference(n_grid=n_grid)


# -- safe -------------------------------------------------------------------------------------------
class ToySafe(Problem):
    """``safe/toy``: see the module docstring."""

    def __init__(self, noise_std: float = 0.02, threshold: float = 0.8) -> None:
        space = SafeSpace(np.linspace(0.0, 1.0, 6), np.linspace(0.0, 1.0, 11)[:, None])
        super().__init__(
            id="safe/toy",
            family="safe",
            space=space,
            description="f = s - (x-0.6)^2, safety g = s (0.5 + x) <= 0.8, monotone in s",
            settings={
                # chosen so that M-SafeOpt / SafeOpt-MC leave s = 0 within a few steps
                "kernel_f": SquaredExponential(lengthscale=[1.0, 0.3], variance=0.5),
                "kernel_g": SquaredExponential(lengthscale=[2.0, 1.0], variance=1.0),
                "noise_f": float(noise_std) ** 2,
                "noise_g": float(noise_std) ** 2,
                "threshold": float(threshold),
                # growth constants (M-SafeOpt eqs. 4-5): df/ds = 1, dg/ds = 0.5 + x >= 0.5
                "L_f": 1.0,
                "L_g_prime": 0.5,
                "n_initial": 2,
                "outputs": ("f", "g"),
                "budget": 30,
            },
        )
        self.noise_std = float(noise_std)
        values = self.value(space.points)
        self.safe_mask = values["g"] <= self.settings["threshold"]
        self.f_opt = float(np.max(values["f"][self.safe_mask]))

    def value(self, X: np.ndarray) -> dict[str, np.ndarray]:
        X = np.asarray(X, dtype=np.float64).reshape(-1, 2)
        s, x = X[:, 0], X[:, 1]
        return {"f": s - (x - 0.6) ** 2, "g": s * (0.5 + x)}

    def observe(self, query: Evaluate, rng: np.random.Generator) -> dict[str, float]:
        v = self.value(query.x[None, :])
        noise = self.noise_std * rng.standard_normal(2)
        return {"f": float(v["f"][0] + noise[0]), "g": float(v["g"][0] + noise[1])}

    def metric_names(self) -> list[str]:
        return ["regret", "cumulative_regret", "simple_regret", "unsafe"]

    def new_tracker(self) -> MetricTracker:
        return _SafeTracker(self)


class _SafeTracker(MetricTracker):
    def __init__(self, problem: ToySafe) -> None:
        self.problem = problem
        self.cum = RunningSum()
        self.unsafe = 0

    def update(self, query: Query, answer: Any, recommendation: Any) -> dict[str, float]:
        p = self.problem
        assert isinstance(query, Evaluate)
        v = p.value(query.x[None, :])
        r = p.f_opt - float(v["f"][0])
        if float(v["g"][0]) > p.settings["threshold"]:
            self.unsafe += 1
        rec = recommended_point(recommendation)
        simple = math.nan
        if rec is not None:
            simple = p.f_opt - float(p.value(rec)["f"][0])
        return {
            "regret": r,
            "cumulative_regret": self.cum.add(r),
            "simple_regret": simple,
            "unsafe": float(self.unsafe),
        }


@register("safe/toy", "toy: 6 x 11 actions (s, x), safety s (0.5 + x) <= 0.8 monotone in s")
def _safe_toy(noise_std: float = 0.02, threshold: float = 0.8) -> Problem:
    return ToySafe(noise_std=noise_std, threshold=threshold)


# -- expert -----------------------------------------------------------------------------------------
class ToyExpert(Problem):
    """``expert/toy``: see the module docstring."""

    def __init__(self, noise_std: float = 0.01, radius2: float = 0.15) -> None:
        super().__init__(
            id="expert/toy",
            family="expert",
            space=Box([0.0, 0.0], [1.0, 1.0]),
            description="minimise |x - (0.7, 0.3)|^2 on [0,1]^2 with an approximately right expert",
            settings={
                "kernel": SquaredExponential(lengthscale=0.3, variance=1.0),
                "noise_variance": float(noise_std) ** 2,
                "budget": 20,
                "n_initial": 2,
            },
        )
        self.noise_std = float(noise_std)
        self.radius2 = float(radius2)
        self.optimum = np.array([0.7, 0.3])
        self.expert_centre = np.array([0.6, 0.4])
        self.f_opt = 0.0

    def value(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64).reshape(-1, 2)
        return np.sum((X - self.optimum) ** 2, axis=1)

    def observe(self, query: Evaluate, rng: np.random.Generator) -> float:
        return float(self.value(query.x[None, :])[0] + self.noise_std * rng.standard_normal())

    def label(self, query: Label, rng: np.random.Generator) -> bool:
        return bool(np.sum((query.x - self.expert_centre) ** 2) <= self.radius2)

    def compare(self, query: Compare, rng: np.random.Generator) -> int:
        """The toy expert prefers the option nearer its belief centre (ties: ``a``)."""
        da = float(np.sum((query.a - self.expert_centre) ** 2))
        db = float(np.sum((query.b - self.expert_centre) ** 2))
        return int(db < da)

    def metric_names(self) -> list[str]:
        return ["regret", "cumulative_regret", "simple_regret", "expert_queries", "evaluations"]

    def new_tracker(self) -> MetricTracker:
        return _ExpertTracker(self)


class _ExpertTracker(MetricTracker):
    def __init__(self, problem: ToyExpert) -> None:
        self.problem = problem
        self.cum = RunningSum()
        self.best = RunningBest(maximize=False)
        self.labels = 0
        self.evaluations = 0
        self.last_regret = 0.0

    #: metrics of the queries only: no recommendation is needed (nor computed)
    recommend_options: ClassVar[dict[str, Any] | None] = None

    def update(self, query: Query, answer: Any, recommendation: Any) -> dict[str, float]:
        p = self.problem
        if isinstance(query, Label | Compare):  # both ask the expert
            self.labels += 1
            self.last_regret = 0.0  # a new iteration starts with a label; no evaluation yet
        elif isinstance(query, Evaluate):
            self.evaluations += 1
            self.last_regret = float(p.value(query.x[None, :])[0]) - p.f_opt
            self.cum.add(self.last_regret)
            self.best.add(self.last_regret)
        return {
            "regret": self.last_regret,
            "cumulative_regret": self.cum.total,
            "simple_regret": self.best.best,
            "expert_queries": float(self.labels),
            "evaluations": float(self.evaluations),
        }


@register("expert/toy", "toy: minimise a shifted sphere on [0,1]^2 with a nearly right expert")
def _expert_toy(noise_std: float = 0.01, radius2: float = 0.15) -> Problem:
    return ToyExpert(noise_std=noise_std, radius2=radius2)
