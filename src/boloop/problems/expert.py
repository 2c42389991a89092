"""Benchmark problems of the expert family (COBOL, Xu et al., NeurIPS 2024, Sec. 5, App. H-J).

Every problem minimises a black box ``f`` on a box and answers :class:`~boloop.queries.Label`
queries with a synthetic expert (``True`` = accept). Metric columns (``metric_names()``): ``regret``
(``f(x_t) - f*`` of the step's evaluation, 0 in a step without one), ``cumulative_regret``
(``R_{Q^f_T}``, BO evaluations only), ``simple_regret`` (best evaluated value minus ``f*``, the
3 initial evaluations included, as the reference code), ``expert_queries`` (``|Q^g_t|``, BO-phase
labels only: the 10 initial labels are not counted), ``evaluations`` (``|Q^f_t|``, BO phase),
``labels_asked`` / ``labels_rejected`` (BO-phase labels asked / answered *reject*; the default
budget counts f-evaluations, so labels are reported on their own).

Synthetic functions (App. J.2.1; standard definitions of :mod:`boloop.problems.functions`):

==================  ====  =================  ==========================================  ==========
id                  d     domain             change against the standard function        f range
==================  ====  =================  ==========================================  ==========
expert/ackley4      4     [-1, 1]^4          shifted: ``f(x) = ackley(x - s)``,          [0, fmax]
                                             s = (0.4, -0.3, 0.5, -0.45)
expert/holder2      2     [0, 10]^2          standard ``-|...|`` (the paper prints no     [-19.2085, 0]
                                             minus); optimum (8.05502, 9.66459), a corner
expert/rastrigin2   2     [-5.12, 5.12]^2    shifted: ``f(x) = rastrigin(x - s)``,        [0, fmax]
                                             s = (1.6, -2.3)
expert/michalewicz5 5     [0, pi]^5          standard (with the leading minus)           [-4.687658, 0]
expert/rosenbrock3  3     [-5, 10]^3         standard; rho uses the reference code's      [0, 1.5e4]
                                             clip level 1.5e4 as fmax (values above
                                             map above 3, not clipped)
==================  ====  =================  ==========================================  ==========

Ackley and Rastrigin have their optimum at the centre of the paper's box, where a solver's first
point or a symmetric candidate grid finds it for free; they are shifted here (the spec's advice).
``fmax`` of the shifted functions is estimated once by a fixed Sobol sample plus the box corners.

Experts (option ``expert=``):

* ``"synthetic"`` (default; Example 2.2): ``P(reject | x) = S(a rho(f(x)))`` with
  ``rho(v) = 6 (v - fmin) / (fmax - fmin) - 3`` and accuracy ``a`` (option ``a``, default 1;
  the paper uses a in {2, 1, 0, -1, -2}).
  Compare queries (the simulated Adachi et al. 2024 baseline) are answered from the same model:
  see :meth:`ExpertProblem.compare` (option ``compare_mode``); they count as expert queries.
* ``"mvn-strong"``, ``"mvn-weak"``, ``"mvn-wrong"`` (Fig. 6b, piBO's belief form): ``P(accept | x)
  = N(x; m, I) / N(m; m, I) = exp(-|x - m|^2 / 2)`` in the problem's coordinates (Sigma = I as in
  the paper), with m = x* (strong), the midpoint of x* and the box corner farthest from it (weak),
  or that corner (wrong).
* ``"time-varying"`` (Fig. 7): the synthetic expert with accuracy
  ``a_t = 2 (1 - exp(-n_t / alpha_lr))``, n_t the evaluations answered so far in the run. The
  paper prints ``2 (1 - exp(-alpha_lr / |Q^f_t|))``, which *decreases* over time although the text
  says accuracy improves; the increasing form is used (option ``alpha_lr``, default 10). The count
  is reset by :meth:`new_tracker` (called once per simulated run).

Battery-electrolyte tasks of the human study (Sec. 5, App. J.3-J.4): the fitted data are not
public, so ``expert/battery-*`` are **clearly labelled stand-ins** with the documented inputs,
bounds and functional forms (Casteel-Amis conductivity for the two liquid electrolytes; smooth
surfaces with the qualitative shapes the paper reports for the polymer and ionic-liquid tasks),
``f = -log(conductivity)``, Gaussian noise of variance 1 as in the paper, and a stand-in expert
whose belief is the experts' documented prior (see :data:`BATTERY_TASKS`). With your own
measurements, ``expert/battery-li-ma?path=my.csv`` (header + 4 columns: the task's three inputs
and the conductivity in mS/cm) replaces the stand-in objective by ``-(GP mean of log
conductivity)`` fitted to the file (:func:`load_conductivity_csv`); the expert stays the stand-in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from boloop.errors import InvalidInputError
from boloop.gp.optimize import refine_on_box
from boloop.metrics.common import RunningBest, RunningSum
from boloop.problems import functions as F
from boloop.problems.base import MetricTracker, Problem
from boloop.problems.registry import register
from boloop.queries import Compare, Evaluate, Label, Query
from boloop.spaces import Box

__all__ = ["ExpertProblem", "BATTERY_TASKS", "EXPERT_MODELS", "load_conductivity_csv"]

EXPERT_MODELS = ("synthetic", "mvn-strong", "mvn-weak", "mvn-wrong", "time-varying")
_METRICS = [
    "regret",
    "cumulative_regret",
    "simple_regret",
    "expert_queries",
    "evaluations",
    "labels_asked",
    "labels_rejected",
]


def _estimate_range(
    f: Callable[[np.ndarray], np.ndarray], box: Box, upper_quantile: float = 1.0
) -> tuple[float, float]:
    """Min and max (or the ``upper_quantile`` quantile) of f over a fixed scrambled Sobol sample
    (2^14) plus the box corners."""
    from scipy.stats import qmc

    U = qmc.Sobol(box.dim, scramble=True, seed=12345).random(1 << 14)
    corners = np.array(np.meshgrid(*[[0.0, 1.0]] * box.dim)).reshape(box.dim, -1).T
    v = f(box.from_unit(np.vstack([U, corners])))
    return float(np.min(v)), float(np.quantile(v, upper_quantile))


class ExpertProblem(Problem):
    """A minimisation problem with a synthetic accept/reject expert (see the module docstring).

    Parameters
    ----------
    name:
        Id without options.
    f:
        Objective, (n, d) -> (n,).
    box:
        Domain.
    f_opt, x_opt:
        Global minimum value and a minimiser (for regret and the MVN experts).
    f_min, f_max:
        Range used by the synthetic expert's ``rho``.
    expert:
        One of :data:`EXPERT_MODELS`.
    a:
        Accuracy coefficient of the synthetic expert.
    noise_std:
        Standard deviation of the Gaussian evaluation noise.
    belief:
        Optional function ``(n, d) -> (n,)`` replacing ``f`` inside the synthetic expert (a
        mis-specified belief, used by the battery stand-ins).
    """

    def __init__(
        self,
        name: str,
        f: Callable[[np.ndarray], np.ndarray],
        box: Box,
        f_opt: float,
        x_opt: np.ndarray,
        f_min: float,
        f_max: float,
        *,
        expert: str = "synthetic",
        a: float = 1.0,
        alpha_lr: float = 10.0,
        noise_std: float = 0.0,
        belief: Callable[[np.ndarray], np.ndarray] | None = None,
        description: str = "",
        budget: int = 50,
        compare_mode: str = "bernoulli",
    ) -> None:
        if compare_mode not in ("bernoulli", "deterministic"):
            raise InvalidInputError(
                f"compare_mode must be 'bernoulli' or 'deterministic', got {compare_mode!r}"
            )
        self.compare_mode = compare_mode
        if expert not in EXPERT_MODELS:
            raise InvalidInputError(f"expert must be one of {EXPERT_MODELS}, got {expert!r}")
        try:
            a = float(a)
            alpha_lr = float(alpha_lr)
            noise_std = float(noise_std)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"a, alpha_lr and noise_std must be numbers: {exc}") from exc
        if not math.isfinite(a):
            raise InvalidInputError(f"a must be finite, got {a!r}")
        if not alpha_lr > 0:
            raise InvalidInputError(f"alpha_lr must be positive, got {alpha_lr!r}")
        if not noise_std >= 0:
            raise InvalidInputError(f"noise_std must be >= 0, got {noise_std!r}")
        super().__init__(
            id=name,
            family="expert",
            space=box,
            description=description,
            settings={"budget": int(budget), "n_initial": 3, "n_initial_labels": 10},
        )
        self._f = f
        self.f_opt = float(f_opt)
        self.x_opt = np.asarray(x_opt, dtype=np.float64)
        self.f_min = float(f_min)
        self.f_max = float(f_max)
        self.expert = expert
        self.a = a
        self.alpha_lr = alpha_lr
        self.noise_std = noise_std
        self._belief = belief
        self._n_answered_evaluations = 0
        corners = np.array(np.meshgrid(*[[0.0, 1.0]] * box.dim)).reshape(box.dim, -1).T
        corners = box.from_unit(corners)
        far = corners[int(np.argmax(np.sum((corners - self.x_opt) ** 2, axis=1)))]
        self.belief_centre = {
            "mvn-strong": self.x_opt,
            "mvn-weak": 0.5 * (self.x_opt + far),
            "mvn-wrong": far,
        }.get(expert)

    # -- oracles --------------------------------------------------------------------------------
    def value(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64).reshape(-1, self.space.dim)
        return self._f(X)

    def observe(self, query: Evaluate, rng: np.random.Generator) -> float:
        self._n_answered_evaluations += 1
        v = float(self.value(query.x[None, :])[0])
        if self.noise_std > 0:
            v += self.noise_std * float(rng.standard_normal())
        return v

    def rho(self, v: np.ndarray) -> np.ndarray:
        """Example 2.2: the linear map of [f_min, f_max] onto [-3, 3] (not clipped)."""
        return 6.0 * (np.asarray(v) - self.f_min) / (self.f_max - self.f_min) - 3.0

    def accuracy(self) -> float:
        """The synthetic expert's current accuracy ``a`` (time-varying: Fig. 7)."""
        if self.expert == "time-varying":
            return 2.0 * (1.0 - math.exp(-self._n_answered_evaluations / self.alpha_lr))
        return self.a

    def reject_probability(self, X: np.ndarray) -> np.ndarray:
        """``P(reject | x)`` of the expert at X (n, d) -> (n,)."""
        from scipy.special import expit

        X = np.asarray(X, dtype=np.float64).reshape(-1, self.space.dim)
        if self.belief_centre is not None:
            d2 = np.sum((X - self.belief_centre) ** 2, axis=1)
            return 1.0 - np.exp(-0.5 * d2)
        fb = self._belief(X) if self._belief is not None else self.value(X)
        return expit(self.accuracy() * self.rho(fb))

    def label(self, query: Label, rng: np.random.Generator) -> bool:
        p_reject = float(self.reject_probability(query.x[None, :])[0])
        return bool(rng.random() >= p_reject)

    def compare(self, query: Compare, rng: np.random.Generator) -> int:
        """The synthetic expert's pick between ``query.a`` (answer 0) and ``query.b`` (1), for
        the simulated Adachi et al. 2024 baseline (an inferred model; the papers give none).

        With ``p_a, p_b`` the expert's acceptance probabilities (``1 - reject_probability``):
        ``compare_mode="bernoulli"`` (default) answers 1 with probability
        ``(1 + p_b - p_a) / 2`` (a Bernoulli draw of the difference: indifferent when the two
        are equally acceptable, sure when one is always accepted and the other always
        rejected); ``"deterministic"`` answers 1 iff ``p_b > p_a`` (ties pick ``a``).
        """
        p_acc = 1.0 - self.reject_probability(np.vstack([query.a, query.b]))
        if self.compare_mode == "deterministic":
            return int(p_acc[1] > p_acc[0])
        p_b = 0.5 * (1.0 + float(p_acc[1] - p_acc[0]))
        return int(rng.random() < p_b)

    # -- metrics --------------------------------------------------------------------------------
    def metric_names(self) -> list[str]:
        return list(_METRICS)

    def new_tracker(self) -> MetricTracker:
        self._n_answered_evaluations = 0
        return ExpertTracker(self)


class ExpertTracker(MetricTracker):
    """Per-run metric state (see the module docstring for the definitions)."""

    def __init__(self, problem: ExpertProblem) -> None:
        self.problem = problem
        self.cum = RunningSum()
        self.best = RunningBest(maximize=False)
        self.labels = 0
        self.evaluations = 0
        self.labels_asked = 0
        self.labels_rejected = 0

    #: regret of the evaluated points only: no recommendation is needed (nor computed)
    recommend_options: ClassVar[dict[str, Any] | None] = None

    def update(self, query: Query, answer: Any, recommendation: Any) -> dict[str, float]:
        p = self.problem
        initial = query.initial  # the initial design enters no regret and no count
        regret = 0.0
        if isinstance(query, Label | Compare):  # a comparison is an expert query too
            if not initial:
                self.labels += 1
                if isinstance(query, Label):
                    self.labels_asked += 1
                    self.labels_rejected += 0 if bool(answer) else 1
        elif isinstance(query, Evaluate):
            regret = float(p.value(query.x[None, :])[0]) - p.f_opt
            self.best.add(regret)
            if not initial:
                self.evaluations += 1
                self.cum.add(regret)
        return {
            "regret": regret,
            "cumulative_regret": self.cum.total,
            "simple_regret": self.best.best,
            "expert_queries": float(self.labels),
            "evaluations": float(self.evaluations),
            "labels_asked": float(self.labels_asked),
            "labels_rejected": float(self.labels_rejected),
        }


# ---------------------------------------------------------------------------- synthetic functions
_ACKLEY_SHIFT = np.array([0.4, -0.3, 0.5, -0.45])
_RASTRIGIN_SHIFT = np.array([1.6, -2.3])


def _check_problem_options(name: str, options: Mapping[str, Any], extra: tuple = ()) -> None:
    """Refuse an option an expert problem does not take, listing those it does (the keyword
    options of :class:`ExpertProblem` and ``extra``)."""
    import inspect

    valid = [
        p.name
        for p in inspect.signature(ExpertProblem.__init__).parameters.values()
        if p.kind is p.KEYWORD_ONLY and p.name != "description"
    ] + list(extra)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise InvalidInputError(
            f"unknown option(s) {', '.join(unknown)} for problem {name!r}; valid options: "
            f"{', '.join(valid)}"
        )


def _make(
    name: str,
    f: Callable[[np.ndarray], np.ndarray],
    box: Box,
    f_opt: float,
    x_opt: np.ndarray,
    f_range: tuple[float, float] | None,
    description: str,
    options: dict[str, Any],
) -> ExpertProblem:
    _check_problem_options(name, options)
    if f_range is None:
        lo, hi = _estimate_range(f, box)
        f_range = (min(lo, f_opt), hi)
    return ExpertProblem(
        name, f, box, f_opt, x_opt, f_range[0], f_range[1], description=description, **options
    )


@register("expert/ackley4", "Ackley 4-D on [-1,1]^4 (shifted), synthetic expert of accuracy a")
def _ackley4(**options: Any) -> ExpertProblem:
    box = Box([-1.0] * 4, [1.0] * 4)

    def f(X: np.ndarray) -> np.ndarray:
        return F.ackley(np.asarray(X) - _ACKLEY_SHIFT)

    return _make(
        "expert/ackley4",
        f,
        box,
        0.0,
        _ACKLEY_SHIFT.copy(),
        None,
        "Ackley (a=20, b=0.2, c=2pi) shifted by (0.4,-0.3,0.5,-0.45)",
        options,
    )


@register("expert/holder2", "Hoelder table 2-D on [0,10]^2, synthetic expert of accuracy a")
def _holder2(**options: Any) -> ExpertProblem:
    box = Box([0.0, 0.0], [10.0, 10.0])
    return _make(
        "expert/holder2",
        F.holder_table,
        box,
        -19.2085,
        np.array([8.05502, 9.66459]),
        (-19.2085, 0.0),
        "Hoelder table -|sin x1 cos x2 exp|1 - |x|/pi||",
        options,
    )


@register("expert/rastrigin2", "Rastrigin 2-D on [-5.12,5.12]^2 (shifted), synthetic expert")
def _rastrigin2(**options: Any) -> ExpertProblem:
    box = Box([-5.12, -5.12], [5.12, 5.12])

    def f(X: np.ndarray) -> np.ndarray:
        return F.rastrigin(np.asarray(X) - _RASTRIGIN_SHIFT)

    return _make(
        "expert/rastrigin2",
        f,
        box,
        0.0,
        _RASTRIGIN_SHIFT.copy(),
        None,
        "Rastrigin shifted by (1.6, -2.3)",
        options,
    )


_MICHALEWICZ5_X = np.array([2.202906, 1.570796, 1.284992, 1.923058, 1.720470])


@register("expert/michalewicz5", "Michalewicz 5-D (m=10) on [0,pi]^5, synthetic expert")
def _michalewicz5(**options: Any) -> ExpertProblem:
    box = Box([0.0] * 5, [math.pi] * 5)
    return _make(
        "expert/michalewicz5",
        F.michalewicz,
        box,
        -4.687658,
        _MICHALEWICZ5_X,
        (-4.687658, 0.0),
        "Michalewicz -sum sin(x_i) sin(i x_i^2/pi)^20",
        options,
    )


@register("expert/rosenbrock3", "Rosenbrock 3-D on [-5,10]^3, synthetic expert")
def _rosenbrock3(**options: Any) -> ExpertProblem:
    box = Box([-5.0] * 3, [10.0] * 3)
    return _make(
        "expert/rosenbrock3",
        F.rosenbrock,
        box,
        0.0,
        np.ones(3),
        (0.0, 1.5e4),
        "Rosenbrock; rho uses the reference code's clip level 1.5e4",
        options,
    )


# ---------------------------------------------------------------------------- battery stand-ins
def casteel_amis(
    m: np.ndarray, kappa_max: np.ndarray, mu: np.ndarray, a: float, b: float
) -> np.ndarray:
    """Casteel-Amis conductivity ``kappa_max (m/mu)^a exp(b (m - mu)^2 - (a/mu)(m - mu))``.

    m (n,) molality/molarity; kappa_max and mu (n,) the peak conductivity and its position.
    """
    m = np.maximum(np.asarray(m, dtype=np.float64), 1e-9)
    return kappa_max * (m / mu) ** a * np.exp(b * (m - mu) ** 2 - (a / mu) * (m - mu))


def _liquid(mu_opt: float, ec_opt: float) -> Callable[[np.ndarray], np.ndarray]:
    """Stand-in liquid electrolyte: x = (LiPF6 molarity, DMC:EMC ratio, EC (or MA) ratio)."""

    def f(X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64).reshape(-1, 3)
        m, r_dmc, r_ec = X[:, 0], X[:, 1], X[:, 2]
        kappa_max = 12.0 * np.exp(-3.0 * (r_ec - ec_opt) ** 2) * (0.85 + 0.15 * r_dmc)
        mu = mu_opt + 0.25 * (r_ec - ec_opt) - 0.1 * (r_dmc - 0.5)
        kappa = casteel_amis(m, kappa_max, mu, a=1.1, b=-0.35)
        return -np.log(kappa + 1e-3)

    return f


def _polymer(X: np.ndarray) -> np.ndarray:
    """Stand-in PEO-LLZTO: conductivity rises monotonically as particles get smaller and is
    convex in the LLZTO volume fraction (the shapes the paper reports); x = (PEO vol%, LLZTO vol%,
    particle size um)."""
    X = np.asarray(X, dtype=np.float64).reshape(-1, 3)
    peo, llzto, size = X[:, 0], X[:, 1], X[:, 2]
    log_kappa = (
        -2.0 - 0.45 * np.log(size) + 0.006 * (llzto - 15.0) ** 2 - 0.01 * (peo - 82.0) ** 2 / 10
    )
    return -log_kappa


def _ionic(X: np.ndarray) -> np.ndarray:
    """Stand-in bmimSCN-LiClO4-LiTFSI: a double peak in LiTFSI vs bmimSCN and a convex shape in
    LiClO4 vs bmimSCN (the shapes the paper reports); x = (LiClO4 M, LiTFSI M, bmimSCN M)."""
    X = np.asarray(X, dtype=np.float64).reshape(-1, 3)
    c1, c2, c3 = X[:, 0], X[:, 1], X[:, 2]
    t = (c3 - 3.0) / 2.0
    peak1 = np.exp(-((c2 - 0.3) ** 2) / 0.02 - (t - 0.8) ** 2 / 0.1)
    peak2 = 0.9 * np.exp(-((c2 - 1.2) ** 2) / 0.03 - (t - 0.2) ** 2 / 0.1)
    convex = 0.08 * (c1 - 2.0) ** 2 * (1.0 + 0.5 * t)
    log_kappa = -1.0 + 1.5 * (peak1 + peak2) + convex
    return -log_kappa


@dataclass(frozen=True)
class BatteryTask:
    """A stand-in task: objective, box, the experts' belief, description."""

    name: str
    f: Callable[[np.ndarray], np.ndarray]
    lower: tuple[float, float, float]
    upper: tuple[float, float, float]
    belief: Callable[[np.ndarray], np.ndarray]
    description: str


def _belief_monotone(
    weights: tuple[float, float, float], box: Box
) -> Callable[[np.ndarray], np.ndarray]:
    """A (wrong) monotone belief: better when the weighted unit coordinates are larger."""
    w = np.asarray(weights)

    def g(X: np.ndarray) -> np.ndarray:
        return -(box.to_unit(np.asarray(X).reshape(-1, 3)) @ w)

    return g


_LIQ_BOX = Box([0.0, 0.0, 0.0], [2.0, 1.0, 1.0])
_POLY_BOX = Box([70.0, 5.0, 0.04], [95.0, 30.0, 10.0])
_IONIC_BOX = Box([0.0, 0.0, 3.0], [4.0, 1.5, 5.0])

BATTERY_TASKS: dict[str, BatteryTask] = {
    "battery-li-standard": BatteryTask(
        "battery-li-standard",
        _liquid(1.0, 0.3),
        (0.0, 0.0, 0.0),
        (2.0, 1.0, 1.0),
        _liquid(1.0, 0.3),
        "STAND-IN for EC-DMC-EMC-LiPF6 (Dave et al. data, Casteel-Amis fit): optimum near "
        "1 M LiPF6 and 30% EC; the experts' belief matches it",
    ),
    "battery-li-ma": BatteryTask(
        "battery-li-ma",
        _liquid(1.35, 0.3),
        (0.0, 0.0, 0.0),
        (2.0, 1.0, 1.0),
        _liquid(1.5, 0.3),
        "STAND-IN for MA-DMC-EMC-LiPF6 (Logan et al. data, Casteel-Amis fit): optimum at 1.35 M; "
        "the experts believe 1.5 M",
    ),
    "battery-polymer": BatteryTask(
        "battery-polymer",
        _polymer,
        (70.0, 5.0, 0.04),
        (95.0, 30.0, 10.0),
        _belief_monotone((0.0, 1.0, 1.0), _POLY_BOX),
        "STAND-IN for PEO-LLZTO (Zhang et al. data, GP fit): smaller particles are better and "
        "the LLZTO fraction is convex; the experts' belief (more LLZTO and larger particles) is "
        "wrong",
    ),
    "battery-ionic-liquid": BatteryTask(
        "battery-ionic-liquid",
        _ionic,
        (0.0, 0.0, 3.0),
        (4.0, 1.5, 5.0),
        _belief_monotone((1.0, 1.0, -1.0), _IONIC_BOX),
        "STAND-IN for bmimSCN-LiClO4-LiTFSI (Rosol et al. data, GP fit): double peak in LiTFSI "
        "vs bmimSCN; the experts' monotone belief is wrong",
    ),
}


def load_conductivity_csv(path: str, box: Box) -> Callable[[np.ndarray], np.ndarray]:
    """The user's own data for a battery task: a CSV with a header and four columns, the three
    inputs of the task (in its units) and the ionic conductivity in mS/cm (> 0), one row per
    measured electrolyte. Returns ``f(X) = -(posterior mean of a GP fitted to log
    conductivity)``, the paper's "GP fit" objective (App. J.3), as a function (n, 3) -> (n,)."""
    from boloop.gp.exact import ExactGP
    from boloop.gp.kernels import SquaredExponential

    try:
        data = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"path: cannot read {path!r} as a 4-column CSV: {exc}") from exc
    if data.shape[1] != 4 or data.shape[0] < 3:
        raise InvalidInputError(f"path: need >= 3 rows of 4 columns, got shape {data.shape}")
    if np.any(data[:, 3] <= 0) or not np.all(np.isfinite(data)):
        raise InvalidInputError("path: conductivities must be positive and finite")
    U = box.to_unit(data[:, :3])
    y = np.log(data[:, 3])
    gp = ExactGP(
        SquaredExponential(lengthscale=[0.3] * 3, variance=float(np.var(y)) or 1.0),
        noise_variance=1e-3,
        mean="constant",
        mean_constant=float(np.mean(y)),
    )
    gp.fit(U, y, n_restarts=3, seed=0)

    def f(X: np.ndarray) -> np.ndarray:
        return -gp.predict(box.to_unit(np.asarray(X, dtype=np.float64).reshape(-1, 3)))[0]

    return f


def _battery_factory(stand_in: BatteryTask) -> Callable[..., ExpertProblem]:
    def factory(path: str | None = None, **options: Any) -> ExpertProblem:
        _check_problem_options(f"expert/{stand_in.name}", options, extra=("path",))
        task = stand_in
        box = Box(task.lower, task.upper)
        if path is not None:  # the user's own measurements replace the stand-in objective
            task = BatteryTask(
                task.name,
                load_conductivity_csv(str(path), box),
                task.lower,
                task.upper,
                task.belief,
                f"{task.name}: GP fit to {path} (user data)",
            )
        options.setdefault("noise_std", 1.0)
        # rho's range: min and 95th percentile (the liquid stand-ins' -log(kappa) blows up at
        # zero salt; with the maximum the expert would accept almost everything)
        lo, hi = _estimate_range(task.f, box, 0.95)
        blo, bhi = _estimate_range(task.belief, box, 0.95)
        # the optimum: best of the Sobol sample refined by Nelder-Mead from it
        from scipy.stats import qmc

        U = qmc.Sobol(3, scramble=True, seed=7).random(4096)
        Xs = box.from_unit(U)
        x0 = Xs[int(np.argmin(task.f(Xs)))]
        x_opt, _ = refine_on_box(
            lambda x: float(task.f(x[None])[0]),
            [x0],
            box.lower,
            box.upper,
            score=lambda x: -float(task.f(x[None])[0]),
            best_x=x0,
            best_value=-math.inf,
            method="Nelder-Mead",
            options={"xatol": 1e-8, "fatol": 1e-10},
        )
        f_opt = min(float(task.f(x_opt[None])[0]), lo)
        # the expert's rho is computed on its belief's own range
        belief = task.belief

        def scaled_belief(X: np.ndarray) -> np.ndarray:
            return lo + (belief(X) - blo) / (bhi - blo) * (hi - lo)

        return ExpertProblem(
            f"expert/{task.name}",
            task.f,
            box,
            f_opt,
            x_opt,
            lo,
            hi,
            belief=scaled_belief,
            description=task.description,
            **options,
        )

    return factory


for _task in BATTERY_TASKS.values():
    register(f"expert/{_task.name}", _task.description.split(":")[0])(_battery_factory(_task))
