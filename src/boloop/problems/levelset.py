"""Level-set problems of Inatsu et al., "Active Learning for Level Set Estimation Using Randomized
Straddle Algorithms" (spec ``shared/specs/lse.md``).

=================================  ================================================================
id                                 setting
=================================  ================================================================
``levelset/gp-sample``             Sec. 5.1 Case 1: a GP(0, exp(-|x-x'|^2/2)) path on a 50 x 50 grid of
                                   [-5, 5]^2, redrawn for every run; theta = 0.5 (Table 1)
``levelset/sinusoidal``            Sec. 5.1 Case 2: sin(10 x1) + cos(4 x2) - cos(3 x1 x2) on a 50 x 50
                                   grid of [0, 1] x [0, 2]; theta = 1 (Table 1)
``levelset/himmelblau``            Sec. 5.1 Case 3: 100 - Himmelblau on a 50 x 50 grid of [-5, 5]^2;
                                   theta = 0 (Table 1)
``levelset/sphere5``               Sec. 5.2 Case 1: 41.65518 - |x|^2 on [-5, 5]^5; theta = 9.6
``levelset/rosenbrock5``           Sec. 5.2 Case 2: 53458.91 - Rosenbrock on [-5, 5]^5; theta = 14800
``levelset/styblinski-tang5``      Sec. 5.2 Case 3: -20.8875 - Styblinski-Tang on [-5, 5]^5; theta = 12.3
``levelset/figure2``               Fig. 2: the 1-D illustration; theta = 3
``levelset/carrier-lifetime``      Sec. 5.3: carrier lifetime of a silicon ingot on the 89 x 74 grid;
                                   the user's CSV (``path=``) or a synthetic stand-in (default)
=================================  ================================================================

Grids are ``linspace`` with endpoints (spec P9). The GP settings of Tables 1-2 are in ``settings``
(``kernel`` with the paper's ``s2 exp(-|x - x'|^2 / L)``, ``noise_variance``, ``threshold``,
``budget``, ``n_initial = 1``); observations carry Gaussian noise of that variance; the truth (H*,
loss) uses the noise-free f (spec P19).

Per-run instances. The GP sample path (Case 1) and the 100,000-point evaluation sets of Sec. 5.2 are
"redrawn for each simulation". Such a problem draws a new instance at the first answer of each run
(after :meth:`new_tracker`, which :func:`boloop.simulate` calls at the start of a run) from the
run's oracle generator, so every method sees the same instance for the same seed. Pass
``instance_seed=k`` to pin one instance instead.

Metrics (:class:`LevelSetTracker`): ``loss`` (the average loss r_t) and ``fscore`` of the sets
``{mu >= theta}`` of the policy's current posterior, on the grid or on the evaluation set X~.
"""

from __future__ import annotations

import csv
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from boloop.errors import InvalidInputError
from boloop.gp.exact import robust_cholesky
from boloop.gp.kernels import Matern, SquaredExponential
from boloop.problems import functions as fn
from boloop.problems.base import MetricTracker, Problem
from boloop.problems.registry import register
from boloop.queries import Evaluate, Query
from boloop.recommendations import LevelSetEstimate
from boloop.spaces import Box, CandidateSet

__all__ = [
    "LevelSetProblem",
    "LevelSetTracker",
    "load_carrier_lifetime",
    "synthetic_lifetime_field",
    "CARRIER_X1",
    "CARRIER_X2",
    "LIFETIME_RANGE",
]

logger = logging.getLogger("boloop")

#: the Sec. 5.3 grid: x1 in {2a + 6 : 1 <= a <= 89}, x2 in {2a + 6 : 1 <= a <= 74}
CARRIER_X1 = 2.0 * np.arange(1, 90) + 6.0
CARRIER_X2 = 2.0 * np.arange(1, 75) + 6.0
#: range of the lifetime f~ in the paper's data (Sec. 5.3)
LIFETIME_RANGE = (0.091587, 7.4613)


@dataclass
class _Instance:
    """One realisation: values on the grid (finite) or f, and the evaluation set (boxes)."""

    grid_values: np.ndarray | None = None  # (N,) f on the candidates (finite problems)
    eval_points: np.ndarray | None = None  # (M, d) X~ (boxes)
    eval_values: np.ndarray | None = None  # (M,) f on X~


@dataclass
class LevelSetProblem(Problem):
    """A level-set benchmark: noise-free ``f``, threshold, noise, and the paper's GP settings.

    Attributes
    ----------
    function:
        ``f(X: (n, d)) -> (n,)`` for analytic problems; ``None`` when the values come from an
        instance (GP sample, data table) on the grid.
    threshold:
        ``theta``.
    noise_sd:
        Standard deviation of the observation noise.
    n_eval:
        Size of the random evaluation set X~ on boxes (paper: 100,000).
    draw:
        ``draw(rng) -> _Instance`` for random instances; ``None`` for fixed problems.
    instance_seed:
        Pin the random instance (``None``: a new one per run).
    """

    function: Callable[[np.ndarray], np.ndarray] | None = None
    threshold: float = 0.0
    noise_sd: float = 0.0
    n_eval: int = 100_000
    draw: Callable[[np.random.Generator], _Instance] | None = None
    instance_seed: int | None = None
    _instance: _Instance | None = field(default=None, repr=False)
    _stale: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if not math.isfinite(float(self.threshold)):
            raise InvalidInputError(
                f"problem {self.id}: threshold must be finite, got {self.threshold!r}"
            )
        if self._instance is not None:
            return
        if self.draw is None:
            self._instance = self._fixed_instance(np.random.default_rng(0))
        elif self.instance_seed is not None:
            self._instance = self.draw(np.random.default_rng(int(self.instance_seed)))

    def _fixed_instance(self, rng: np.random.Generator) -> _Instance:
        inst = _Instance()
        if isinstance(self.space, CandidateSet):
            assert self.function is not None
            inst.grid_values = np.asarray(self.function(self.space.points), dtype=np.float64)
        else:
            inst.eval_points = self.space.sample(self.n_eval, seed=rng)  # type: ignore[union-attr]
            inst.eval_values = self.value(inst.eval_points)
        return inst

    # -- instance per run --------------------------------------------------------------------------
    @property
    def instance(self) -> _Instance:
        if self._instance is None:
            self._instance = self._draw(np.random.default_rng(0))
        return self._instance

    def _draw(self, rng: np.random.Generator) -> _Instance:
        if self.draw is not None:
            return self.draw(rng)
        return self._fixed_instance(rng)

    def draw_instance(self, seed: int | np.random.Generator) -> None:
        """Replace the instance (GP path, evaluation set) by one drawn from ``seed``."""
        self._instance = self._draw(np.random.default_rng(seed))
        self._stale = False

    @property
    def per_run(self) -> bool:
        """Whether a new instance is drawn for every run."""
        if self.instance_seed is not None:
            return False
        return self.draw is not None or not isinstance(self.space, CandidateSet)

    # -- oracles ------------------------------------------------------------------------------------
    def value(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64).reshape(-1, self.space.dim)
        if self.function is not None:
            return np.asarray(self.function(X), dtype=np.float64)
        assert isinstance(self.space, CandidateSet)
        idx = self.space.index_of(X)
        if np.any(idx < 0):
            raise InvalidInputError(
                f"problem {self.id}: a point is not on the grid: {X[idx < 0][0]}"
            )
        values = self.instance.grid_values
        assert values is not None
        return values[idx]

    def observe(self, query: Evaluate, rng: np.random.Generator) -> float:
        if self._stale:
            self._instance = self._draw(np.random.default_rng(int(rng.integers(2**63))))
            self._stale = False
        if query.index is not None and self.function is None:
            values = self.instance.grid_values
            assert values is not None
            f = float(values[query.index])
        else:
            f = float(self.value(query.x.reshape(1, -1))[0])
        noise = float(rng.standard_normal()) * self.noise_sd if self.noise_sd > 0 else 0.0
        return f + noise

    # -- metrics ------------------------------------------------------------------------------------
    def truth(self) -> tuple[np.ndarray, np.ndarray]:
        """``(points, f values)`` on which metrics are computed: the grid or X~."""
        inst = self.instance
        if isinstance(self.space, CandidateSet):
            assert inst.grid_values is not None
            return self.space.points, inst.grid_values
        assert inst.eval_points is not None and inst.eval_values is not None
        return inst.eval_points, inst.eval_values

    def true_upper(self) -> np.ndarray:
        """``H* = {f >= theta}`` on :meth:`truth`'s points, bool (N,)."""
        return self.truth()[1] >= self.threshold

    def new_tracker(self) -> MetricTracker:
        if self.per_run:
            self._stale = True
        return LevelSetTracker(self)

    def metric_names(self) -> list[str]:
        return ["loss", "fscore"]


class LevelSetTracker(MetricTracker):
    """``loss`` (r_t) and ``fscore`` of the sets the policy estimates from its current posterior
    mean (eq. 3.1): the recommendation ``recommend(final_update=True)``, a
    :class:`~boloop.recommendations.LevelSetEstimate`, classifies the problem's evaluation points.

    The row written after an answered query uses the posterior given every answer so far, i.e. the
    paper's ``r_{t+1}`` after iteration t (the paper plots ``r_t`` from ``mu_{t-1}``).
    """

    #: the sets after every answer so far, also for Algorithm 3 (whose default output is H_T-hat)
    recommend_options: ClassVar[dict[str, Any] | None] = {"final_update": True}

    def __init__(self, problem: LevelSetProblem) -> None:
        self.problem = problem

    def update(self, query: Query, answer: Any, recommendation: Any) -> dict[str, float]:
        from boloop.metrics.levelset import fscore, level_set_loss

        if not isinstance(recommendation, LevelSetEstimate):
            raise InvalidInputError(
                f"{self.problem.id}: level-set metrics need estimated sets (a LevelSetEstimate) "
                f"from recommend(), got {type(recommendation).__name__}"
            )
        P, values = self.problem.truth()
        upper = np.asarray(recommendation.classify(P), dtype=bool)
        truth = values >= self.problem.threshold
        return {
            "loss": level_set_loss(values, upper, self.problem.threshold),
            "fscore": fscore(truth, upper),
        }


# ---------------------------------------------------------------------------------------------
# Problem definitions
# ---------------------------------------------------------------------------------------------
def _settings(
    kernel: Any, noise_variance: float, threshold: float, budget: int, **extra: Any
) -> dict[str, Any]:
    s = {
        "kernel": kernel,
        "noise_variance": float(noise_variance),
        "threshold": float(threshold),
        "budget": int(budget),
        "n_initial": 1,
        "fit_hyperparameters": False,
    }
    s.update(extra)
    return s


def _grid(bounds: list[tuple[float, float]], n: Any, problem_id: str) -> CandidateSet:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2:
        raise InvalidInputError(
            f"problem {problem_id}: n_per_dim must be an integer >= 2, got {n!r}"
        )
    return CandidateSet.grid(np.asarray(bounds, dtype=np.float64), int(n))


def _check_threshold(threshold: Any, problem_id: str) -> float:
    try:
        th = float(threshold)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"problem {problem_id}: threshold must be a number, got {threshold!r}"
        ) from exc
    if not math.isfinite(th):
        raise InvalidInputError(
            f"problem {problem_id}: threshold must be finite, got {threshold!r}"
        )
    return th


@register(
    "levelset/gp-sample",
    "GP(0, exp(-|x-x'|^2/2)) sample path on a 50x50 grid, redrawn per run (Sec. 5.1 Case 1)",
)
def gp_sample(
    threshold: float = 0.5, n_per_dim: int = 50, instance_seed: int | None = None, budget: int = 300
) -> LevelSetProblem:
    th = _check_threshold(threshold, "levelset/gp-sample")
    space = _grid([(-5.0, 5.0), (-5.0, 5.0)], n_per_dim, "levelset/gp-sample")
    prior = SquaredExponential.from_scale_form(1.0, 2.0)
    factor: list[np.ndarray] = []  # the Cholesky factor, computed once and shared by all draws

    def draw(rng: np.random.Generator) -> _Instance:
        if not factor:
            # plain Cholesky of K fails (min eigenvalue ~ -4e-14, spec P8); a 1e-10 jitter suffices
            K = prior.k(space.points)
            K[np.diag_indices_from(K)] += 1e-10
            factor.append(robust_cholesky(K)[0])
        L = factor[0]
        return _Instance(grid_values=L @ rng.standard_normal(L.shape[0]))

    return LevelSetProblem(
        id="levelset/gp-sample",
        family="levelset",
        space=space,
        description="GP sample path, sigma_f^2 = 1, L = 2, noise 1e-6, theta = 0.5 (Table 1)",
        settings=_settings(SquaredExponential.from_scale_form(1.0, 2.0), 1e-6, th, budget),
        threshold=th,
        noise_sd=math.sqrt(1e-6),
        draw=draw,
        instance_seed=instance_seed,
    )


def sinusoidal_f(X: np.ndarray) -> np.ndarray:
    """``sin(10 x1) + cos(4 x2) - cos(3 x1 x2)`` (Sec. 5.1 Case 2), (n, 2) -> (n,)."""
    X = np.asarray(X, dtype=np.float64).reshape(-1, 2)
    return np.sin(10 * X[:, 0]) + np.cos(4 * X[:, 1]) - np.cos(3 * X[:, 0] * X[:, 1])


def neg_himmelblau_f(X: np.ndarray) -> np.ndarray:
    """``100 - Himmelblau(x)`` (Sec. 5.1 Case 3), (n, 2) -> (n,)."""
    return 100.0 - fn.himmelblau(np.asarray(X, dtype=np.float64).reshape(-1, 2))


@register(
    "levelset/sinusoidal",
    "sin(10x1)+cos(4x2)-cos(3x1x2) on a 50x50 grid of [0,1]x[0,2] (Sec. 5.1 Case 2)",
)
def sinusoidal(threshold: float = 1.0, n_per_dim: int = 50, budget: int = 300) -> LevelSetProblem:
    th = _check_threshold(threshold, "levelset/sinusoidal")
    return LevelSetProblem(
        id="levelset/sinusoidal",
        family="levelset",
        space=_grid([(0.0, 1.0), (0.0, 2.0)], n_per_dim, "levelset/sinusoidal"),
        description="sinusoidal, sigma_f^2 = e^2, L = 2e^-3, noise e^-2, theta = 1 (Table 1)",
        settings=_settings(
            SquaredExponential.from_scale_form(math.exp(2), 2 * math.exp(-3)),
            math.exp(-2),
            th,
            budget,
        ),
        function=sinusoidal_f,
        threshold=th,
        noise_sd=math.exp(-1),
    )


@register("levelset/himmelblau", "100 - Himmelblau on a 50x50 grid of [-5,5]^2 (Sec. 5.1 Case 3)")
def himmelblau(threshold: float = 0.0, n_per_dim: int = 50, budget: int = 300) -> LevelSetProblem:
    th = _check_threshold(threshold, "levelset/himmelblau")
    return LevelSetProblem(
        id="levelset/himmelblau",
        family="levelset",
        space=_grid([(-5.0, 5.0), (-5.0, 5.0)], n_per_dim, "levelset/himmelblau"),
        description="shifted negative Himmelblau, sigma_f^2 = e^8, L = 2, noise e^4, theta = 0 (Table 1)",
        settings=_settings(
            SquaredExponential.from_scale_form(math.exp(8), 2.0), math.exp(4), th, budget
        ),
        function=neg_himmelblau_f,
        threshold=th,
        noise_sd=math.exp(2),
    )


def neg_sphere5_f(X: np.ndarray) -> np.ndarray:
    """``41.65518 - sum x_d^2`` (Sec. 5.2 Case 1)."""
    return 41.65518 - fn.sphere(np.asarray(X, dtype=np.float64))


def neg_rosenbrock5_f(X: np.ndarray) -> np.ndarray:
    """``53458.91 - sum_{d<5} [100 (x_{d+1} - x_d^2)^2 + (1 - x_d)^2]`` (Sec. 5.2 Case 2)."""
    return 53458.91 - fn.rosenbrock(np.asarray(X, dtype=np.float64))


def neg_styblinski_tang5_f(X: np.ndarray) -> np.ndarray:
    """``-20.8875 - sum (x^4 - 16 x^2 + 5 x) / 2`` (Sec. 5.2 Case 3)."""
    return -20.8875 - fn.styblinski_tang(np.asarray(X, dtype=np.float64))


def _box5(
    pid: str,
    desc: str,
    f: Callable[[np.ndarray], np.ndarray],
    s2: float,
    threshold: float,
    n_eval: int,
    instance_seed: int | None,
    budget: int,
    box_options: dict[str, Any],
) -> LevelSetProblem:
    th = _check_threshold(threshold, pid)
    if int(n_eval) < 1:
        raise InvalidInputError(f"problem {pid}: n_eval must be >= 1, got {n_eval!r}")
    return LevelSetProblem(
        id=pid,
        family="levelset",
        space=Box(-5.0 * np.ones(5), 5.0 * np.ones(5)),
        description=desc,
        settings=_settings(
            SquaredExponential.from_scale_form(s2, 40.0),
            1e-6,
            th,
            budget,
            cardinality=1e15,
            box_options=box_options,
        ),
        function=f,
        threshold=th,
        noise_sd=1e-3,
        n_eval=int(n_eval),
        instance_seed=instance_seed,
    )


def _box_options(n_candidates: int, n_fresh: int, n_refine: int) -> dict[str, Any]:
    return {"n_candidates": int(n_candidates), "n_fresh": int(n_fresh), "n_refine": int(n_refine)}


@register("levelset/sphere5", "41.65518 - |x|^2 on [-5,5]^5, theta = 9.6 (Sec. 5.2 Case 1)")
def sphere5(
    threshold: float = 9.6,
    n_eval: int = 100_000,
    instance_seed: int | None = None,
    budget: int = 500,
    n_candidates: int = 1024,
    n_fresh: int = 128,
    n_refine: int = 1,
) -> LevelSetProblem:
    return _box5(
        "levelset/sphere5",
        "shifted negative sphere, sigma_f^2 = 900, L = 40, noise 1e-6 (Table 2)",
        neg_sphere5_f,
        900.0,
        threshold,
        n_eval,
        instance_seed,
        budget,
        _box_options(n_candidates, n_fresh, n_refine),
    )


@register(
    "levelset/rosenbrock5", "53458.91 - Rosenbrock on [-5,5]^5, theta = 14800 (Sec. 5.2 Case 2)"
)
def rosenbrock5(
    threshold: float = 14800.0,
    n_eval: int = 100_000,
    instance_seed: int | None = None,
    budget: int = 500,
    n_candidates: int = 1024,
    n_fresh: int = 128,
    n_refine: int = 1,
) -> LevelSetProblem:
    return _box5(
        "levelset/rosenbrock5",
        "shifted negative Rosenbrock, sigma_f^2 = 30000^2, L = 40, noise 1e-6 (Table 2)",
        neg_rosenbrock5_f,
        30000.0**2,
        threshold,
        n_eval,
        instance_seed,
        budget,
        _box_options(n_candidates, n_fresh, n_refine),
    )


@register(
    "levelset/styblinski-tang5",
    "-20.8875 - Styblinski-Tang on [-5,5]^5, theta = 12.3 (Sec. 5.2 Case 3)",
)
def styblinski_tang5(
    threshold: float = 12.3,
    n_eval: int = 100_000,
    instance_seed: int | None = None,
    budget: int = 500,
    n_candidates: int = 1024,
    n_fresh: int = 128,
    n_refine: int = 1,
) -> LevelSetProblem:
    return _box5(
        "levelset/styblinski-tang5",
        "shifted negative Styblinski-Tang, sigma_f^2 = 75^2, L = 40, noise 1e-6 (Table 2)",
        neg_styblinski_tang5_f,
        75.0**2,
        threshold,
        n_eval,
        instance_seed,
        budget,
        _box_options(n_candidates, n_fresh, n_refine),
    )


def figure2_f(X: np.ndarray) -> np.ndarray:
    """``5 exp(-(x+5)^2) + 5 exp(-(x-5)^2) - 2 exp(-x^2) - 1`` (Fig. 2), (n, 1) -> (n,)."""
    x = np.asarray(X, dtype=np.float64).reshape(-1)
    return 5 * np.exp(-((x + 5) ** 2)) + 5 * np.exp(-((x - 5) ** 2)) - 2 * np.exp(-(x**2)) - 1


@register("levelset/figure2", "1-D illustration of Fig. 2, theta = 3, noise 1e-2, start at x = -5")
def figure2(threshold: float = 3.0, n_points: int = 401, budget: int = 20) -> LevelSetProblem:
    th = _check_threshold(threshold, "levelset/figure2")
    space = CandidateSet.grid(np.array([[-10.0, 10.0]]), int(n_points))
    return LevelSetProblem(
        id="levelset/figure2",
        family="levelset",
        space=space,
        description=(
            "Fig. 2: theta = 3, noise 1e-2, initial x = -5, 20 points; domain [-10, 10] and kernel "
            "(s2 = 4, L = 2) are not given by the paper (our choice)"
        ),
        settings=_settings(
            SquaredExponential.from_scale_form(4.0, 2.0),
            1e-2,
            th,
            budget,
            initial_points=np.array([[-5.0]]),
        ),
        function=figure2_f,
        threshold=th,
        noise_sd=0.1,
    )


# ---------------------------------------------------------------------------------------------
# Sec. 5.3: carrier lifetime
# ---------------------------------------------------------------------------------------------
def synthetic_lifetime_field(
    x1: np.ndarray = CARRIER_X1, x2: np.ndarray = CARRIER_X2
) -> np.ndarray:
    """A SYNTHETIC stand-in for the (non-public) lifetime map, shape (len(x1), len(x2)).

    Deterministic: high lifetime in the ingot centre, low near the edges (crucible contamination),
    a few low-lifetime dislocation clusters and a mild ripple; rescaled linearly onto the paper's
    range [0.091587, 7.4613]. It only mimics the shape of the setting, not the real data.
    """
    A, B = np.meshgrid(np.asarray(x1, float), np.asarray(x2, float), indexing="ij")
    lo1, hi1, lo2, hi2 = A.min(), A.max(), B.min(), B.max()
    edge = np.minimum.reduce([A - lo1, hi1 - A, B - lo2, hi2 - B])
    field_ = 1.0 - np.exp(-edge / 18.0)
    for c1, c2, w, depth in (
        (60.0, 50.0, 14.0, 0.8),
        (130.0, 110.0, 20.0, 0.9),
        (150.0, 40.0, 10.0, 0.6),
        (90.0, 120.0, 8.0, 0.5),
    ):
        field_ -= depth * np.exp(-((A - c1) ** 2 + (B - c2) ** 2) / (2 * w * w))
    field_ += 0.08 * np.sin(A / 11.0) * np.cos(B / 13.0)
    lo, hi = LIFETIME_RANGE
    return lo + (field_ - field_.min()) / (field_.max() - field_.min()) * (hi - lo)


def load_carrier_lifetime(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read a lifetime map from a CSV file with the header ``x1,x2,lifetime``.

    One row per grid point, in any order; the coordinates must form a full rectangular grid (the
    paper's is x1 in {8, 10, ..., 184}, x2 in {8, 10, ..., 154}) and every cell must be a finite
    number. Returns ``(x1 values (n1,), x2 values (n2,), lifetime (n1, n2))``. Raises
    :class:`InvalidInputError` naming the problem, the file and the row; nothing is kept on error.
    """
    where = f"problem levelset/carrier-lifetime, file {str(path)!r}"
    try:
        with open(path, newline="") as fh:
            reader = csv.reader(fh)
            try:
                header = [h.strip().lower() for h in next(reader)]
            except StopIteration:
                raise InvalidInputError(f"{where}: the file is empty") from None
            need = ["x1", "x2", "lifetime"]
            if any(h not in header for h in need):
                raise InvalidInputError(f"{where}: the header must contain {need}, got {header}")
            cols = [header.index(h) for h in need]
            rows = []
            for lineno, row in enumerate(reader, start=2):
                if not row or all(not c.strip() for c in row):
                    continue
                vals = []
                for name, c in zip(need, cols):
                    cell = row[c].strip() if c < len(row) else ""
                    if cell == "":
                        raise InvalidInputError(f"{where}, line {lineno}: missing value for {name}")
                    try:
                        v = float(cell)
                    except ValueError:
                        raise InvalidInputError(
                            f"{where}, line {lineno}: {name} is not a number: {cell!r}"
                        ) from None
                    if not math.isfinite(v):
                        raise InvalidInputError(
                            f"{where}, line {lineno}: {name} is not finite: {cell!r}"
                        )
                    vals.append(v)
                rows.append(vals)
    except OSError as exc:
        raise InvalidInputError(f"{where}: cannot read the file: {exc}") from exc
    if not rows:
        raise InvalidInputError(f"{where}: no data rows")
    data = np.asarray(rows, dtype=np.float64)
    x1 = np.unique(data[:, 0])
    x2 = np.unique(data[:, 1])
    if data.shape[0] != x1.size * x2.size:
        raise InvalidInputError(
            f"{where}: {data.shape[0]} rows do not form a full {x1.size} x {x2.size} grid "
            "(missing or duplicated points)"
        )
    i = np.searchsorted(x1, data[:, 0])
    j = np.searchsorted(x2, data[:, 1])
    grid = np.full((x1.size, x2.size), np.nan)
    grid[i, j] = data[:, 2]
    if np.isnan(grid).any():
        raise InvalidInputError(f"{where}: duplicated grid points (and others missing)")
    return x1, x2, grid


@register(
    "levelset/carrier-lifetime",
    "silicon-ingot carrier lifetime on the 89x74 grid (Sec. 5.3): path=<csv x1,x2,lifetime> or a synthetic stand-in",
)
def carrier_lifetime(
    path: str | None = None, cutoff: float = 3.0, budget: int = 200
) -> LevelSetProblem:
    """f = -lifetime + cutoff, theta = 0: H* is the "red zone" lifetime <= cutoff (Sec. 5.3)."""
    cutoff = _check_threshold(cutoff, "levelset/carrier-lifetime")
    if path is None:
        x1, x2 = CARRIER_X1, CARRIER_X2
        life = synthetic_lifetime_field(x1, x2)
        source = "SYNTHETIC stand-in field (the paper's data are not public)"
    else:
        x1, x2, life = load_carrier_lifetime(path)
        source = f"data file {path}"
    space = CandidateSet.grid(np.array([[x1[0], x1[-1]], [x2[0], x2[-1]]]), [x1.size, x2.size])
    pts = np.array([[a, b] for a in x1 for b in x2])
    if not np.allclose(space.points, pts):  # irregular spacing in a user's file
        space = CandidateSet(pts)
    values = (-life + cutoff).reshape(-1)
    kernel = Matern(nu=1.5, lengthscale=25.0, variance=4.0)
    return LevelSetProblem(
        id="levelset/carrier-lifetime",
        family="levelset",
        space=space,
        description=f"carrier lifetime, f = -lifetime + {cutoff:g}, theta = 0; {source}",
        settings=_settings(kernel, 1e-6, 0.0, budget, allow_repeats=False),
        function=None,
        threshold=0.0,
        noise_sd=0.0,
        draw=None,
        instance_seed=0,
        _instance=_Instance(grid_values=values),
    )
