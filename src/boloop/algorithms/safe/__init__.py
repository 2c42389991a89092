"""Safe Bayesian optimisation with a monotone safety variable: M-SafeOpt, SafeOpt-MC, PredVar.

Losalka & Scarlett, "No-Regret Algorithms for Safe Bayesian Optimization with Monotonicity
Constraints", AISTATS 2024 (spec ``shared/specs/msafeopt.md``). Actions are pairs ``(s, x)`` on a
:class:`boloop.spaces.SafeSpace` grid; every evaluation measures the objective ``f`` (maximised)
and the safety value ``g`` (an :class:`~boloop.queries.Evaluate` with ``outputs=("f", "g")``);
the constraint is ``g(s, x) <= h``; ``g`` is increasing in ``s`` with a minimum growth ``L'_g``
(eq. 5), ``f`` grows at most by ``L_f`` (eq. 4), and ``s = 0`` is safe for every ``x``.

Policies
--------
* :class:`MSafeOpt` ``case="1"`` -- Algorithm 1 for the global safe optimum (regret ``R_T``, eq. 1),
  with elimination (20)-(21), expanders (22), acquisition (23). ``case="2"`` -- the best safe
  ``s`` for every ``x`` (``R'_T``, ``R^X_T``, eq. 2-3): no elimination, expanders (24).
  ``case="3a"`` -- ``f`` and ``g`` both increasing (Sec. 2.5): elimination (21) only, every
  surviving ``x`` expands, acquisition (25) on the boundary. ``case="3b"`` -- M-SafeUCB (Losalka &
  Scarlett 2023), ``f = g``: only ``g`` is measured and modelled. ``acquisition="refined"`` uses
  (36) on the expanders.
* :class:`SafeOptMC` and :class:`PredVar` -- the baselines as the paper ran them (B.2.2).

Safety comes from data, never from the prior
--------------------------------------------
The paper puts a zero-mean GP on ``g``; far from data ``UCB^g = beta * sigma_prior``, which is
below ``h`` whenever ``h > beta * sigma_prior``, so unexplored points would be certified safe from
the prior alone. Here the GP models ``g - h`` with mean zero (equivalently a prior mean ``h`` for
``g``): an unexplored point has ``UCB^g = h + beta sigma > h`` and is never certified. The
paper's confidence-bound algebra is unchanged (``UCB^g = h + UCB^{g-h}``).

Certified points stay certified: ``g`` is monotone, so once ``(s, x)`` has been certified every
``s' <= s`` is safe; the safe boundary of each ``x`` is the maximum over rounds of the boundary
(14) (the paper recomputes (12) each round; with valid bounds both agree, and the union never
shrinks when hyperparameters are refitted).

Hyperparameters
---------------
With kernels given and ``fit_hyperparameters=False`` the kernels are used as they are (the
reproductions: Theorems 1-3 assume a fixed kernel whose RKHS contains ``f`` and ``g`` and a valid
``beta``). ``fit_hyperparameters=True`` (the default, what a user gets on a space of their own)
learns them with ``hyperparameters=``:

* ``"learned"`` (default): the shared mechanism
  :class:`boloop.gp.hyperparameters.HyperparameterLearning` (priors scaled to the space and the
  data, a space-filling design of safe seeds at ``s = 0``, a length-scale cap that shrinks with the
  data, after Berkenkamp, Schoellig and Krause, JMLR 2019), and the safety model ``g`` is
  **certified under the worst case the data cannot rule out**: after every refit ``g``'s
  length-scales are shortened to the edge of the likelihood-ratio set of the hyperparameters
  (:meth:`HyperparameterLearning.conservative`), which widens the bounds away from the data, where
  a fitted length-scale that is too long would certify an unsafe action (Fiedler et al. 2024,
  "On safety in safe Bayesian optimization", show this failure of fitted kernels). Safety
  certified under the conservative model implies it under the fitted one.
* ``"paper"``: the paper's refit through Trieste (Matern-5/2, log-normal priors around
  ``lengthscale_prior`` and ``variance_prior_*``, refit every round, 2 seeds). It evaluates unsafe
  actions when the fitted length-scale is too long (``docs/hyperparameters.md``); reproductions
  only.
* ``"plain"``: unguarded maximum likelihood, only on explicit request (logs a warning).

While every datum lies at one level of ``s`` (the safe seeds), the data cannot identify g's
length-scale along ``s``, and the learned default certifies at most one grid level above that
level (:meth:`_SafePolicy._level_cap`); from two measured levels on, the fitted model decides.

With learned hyperparameters and no kernel of ``g`` given, g's model has the trend in ``s``
that M-SafeOpt assumes (``trend_g=True``, the default; :func:`trend_kernel_g`): a linear term of
unknown slope added to the stationary kernel, its slope variance learned on the twin, raised to
its likelihood-ratio edge and kept at least ``mean((g - h)^2) / w_s^2``. ``trend_g=False`` gives
the stationary Matern model alone (the default before; more unsafe draws on ``safe/random-gp``,
``docs/reproductions/safe.md``). The option is ignored with a kernel of ``g`` given and with
fixed, ``"paper"`` or ``"plain"`` hyperparameters.

``min_lengthscale_g`` is the one assumption a user can add to the learned default: ``g`` varies
no faster than that fraction of each axis's range (the fit and the conservative shortening of
``g``'s length-scales never go below it). It is not learned or checked: if ``g`` changes faster,
the method can certify unsafe actions. Without it a safety model fitted on two levels of ``s``
may decide that ``g`` can change a lot within one grid step and never certify the next level;
:meth:`_SafePolicy.stall` (in ``describe()["stall"]`` and a study's status warnings) reports
that case (``docs/reproductions/safe.md``, "A newcomer's stall").

A measured ``g > h`` (an action certified wrongly, or a process that drifted) is never ignored:
it is logged, listed in :meth:`_SafePolicy.over_limit` and ``describe()``, the ``x`` row's certified
boundary is cut below it (``g`` is monotone in ``s``), the union of past certifications is dropped
(it was justified by bounds that have just proved invalid), and with learned hyperparameters
``g``'s length-scale cap is halved for every such event so that the model becomes more cautious.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from boloop._validation import as_points, as_values, positive
from boloop.algorithms._safe_core import (
    Bounds,
    SafeSets,
    Selection,
    expansion_limit,
    safe_sets,
    select_msafeopt,
    select_predvar,
    select_safeopt_mc,
)
from boloop.algorithms.registry import Option, options_from, register_method
from boloop.confidence import BetaSchedule, ConstantBeta
from boloop.errors import InvalidInputError, UnsafeSeedError
from boloop.gp.cache import CandidatePosterior
from boloop.gp.conservative import axiswise_conservative
from boloop.gp.exact import ExactGP, LogNormalPrior
from boloop.gp.hyperparameters import (
    HyperparameterLearning,
    check_min_lengthscale,
    initial_design_size,
    space_filling_design,
)
from boloop.gp.kernels import Kernel, Matern, StationaryKernel, StationaryPlusTrend
from boloop.queries import BasePolicy, Evaluate, Query
from boloop.recommendations import SafeRecommendation
from boloop.spaces import SafeSpace

__all__ = [
    "MSafeOpt",
    "SafeOptMC",
    "PredVar",
    "GridPosterior",
    "trend_kernel_g",
    # the per-round set computations of Algorithm 1 as pure functions (algorithms/_safe_core.py)
    "Bounds",
    "SafeSets",
    "Selection",
    "expansion_limit",
    "safe_sets",
    "select_msafeopt",
    "select_predvar",
    "select_safeopt_mc",
]

logger = logging.getLogger("boloop")


class GridPosterior:
    """Posterior mean and standard deviation of one :class:`ExactGP` over all actions of a grid.

    Keeps a :class:`CandidatePosterior` (O(N n) per new observation) while its ``n x N`` matrix
    fits in ``cache_mb`` megabytes; beyond that it streams the grid in chunks of x rows each round
    (O(N n^2) time, O(chunk n) memory), so Hartmann-3's 421,875 actions never need several dense
    ``n x N`` copies.
    """

    def __init__(self, gp: ExactGP, space: SafeSpace, cache_mb: float = 512.0) -> None:
        self.gp = gp
        self.space = space
        self.cache_mb = float(cache_mb)
        self._cache: CandidatePosterior | None = None
        self._streamed: tuple[tuple[int, int], np.ndarray, np.ndarray] | None = None

    def _fits(self, n: int) -> bool:
        # the cache doubles its capacity when it grows: budget for twice the rows
        return 2 * max(n, 16) * self.space.n * 8 / 2**20 <= self.cache_mb

    def mean_std(self) -> tuple[np.ndarray, np.ndarray]:
        """``(mean, std)``, each (n_x, n_s)."""
        gp, space = self.gp, self.space
        if self._fits(gp.n):
            if self._cache is None:
                self._cache = CandidatePosterior(gp, space.points)
            return space.as_matrix(self._cache.mean), space.as_matrix(self._cache.std)
        self._cache = None  # free the n x N matrix
        key = (gp.n, gp.version)
        if self._streamed is None or self._streamed[0] != key:

            def mean_std(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
                m, v = gp.predict(P)
                return m, np.sqrt(v)

            mean, std = space.map_rows(mean_std, max_points=16384)
            self._streamed = (key, mean, std)
        return self._streamed[1], self._streamed[2]


def _resolve_learning(
    hyperparameters: HyperparameterLearning | str | None, fit: bool
) -> HyperparameterLearning | None:
    """The shared mechanism for learned hyperparameters; None for fixed ones or ``"paper"``."""
    if hyperparameters is not None and not isinstance(hyperparameters, HyperparameterLearning):
        if hyperparameters not in ("learned", "paper", "plain"):
            raise InvalidInputError(
                "hyperparameters must be 'learned', 'paper', 'plain' or a "
                f"HyperparameterLearning, got {hyperparameters!r}"
            )
    if not fit:
        if hyperparameters is not None:
            raise InvalidInputError("hyperparameters= only applies with fit_hyperparameters=True")
        return None
    if isinstance(hyperparameters, HyperparameterLearning):
        return hyperparameters
    if hyperparameters == "paper":
        return None
    if hyperparameters == "plain":
        logger.warning(
            "safe policy: plain maximum-likelihood hyperparameters requested (no priors, no "
            "conservative set): fitted kernels can certify unsafe actions"
        )
        return HyperparameterLearning.plain()
    return HyperparameterLearning()


def _schedule(value: float | BetaSchedule, name: str) -> BetaSchedule:
    if isinstance(value, BetaSchedule):
        return value
    return ConstantBeta(sqrt_beta=positive(value, name))


class _SafePolicy(BasePolicy):
    """Bookkeeping shared by M-SafeOpt and the baselines: models of ``f`` and ``g - h``, seeds,
    the certified safe boundary, recommendations.

    Parameters
    ----------
    space:
        The :class:`SafeSpace` grid; ``space.s_values[0]`` is the safe level ``s = 0``.
    threshold:
        ``h``: an action is safe iff ``g(s, x) <= h``.
    kernel_f, kernel_g:
        Kernels on the action ``(s, x)`` (dimension ``1 + d_x``). Default Matern-5/2 with
        length-scale 0.2 and variance 1 (the paper's prior means, B.2.2). ``kernel_g`` models
        ``g - h``.
    noise_f, noise_g:
        GP noise variances ``lambda_f, lambda_g`` (paper: 1e-5, pendulum 0.05).
    sqrt_beta_f, sqrt_beta_g:
        The paper's ``beta^f_t, beta^g_t`` (multipliers of the standard deviation, eq. 10-11): a
        number (paper: 3) or a :class:`boloop.confidence.BetaSchedule`.
    n_initial:
        Number of seed evaluations at ``s = 0`` before the algorithm starts; they do not count as
        iterations. Default: 2 rows drawn uniformly (authors' code) with fixed or ``"paper"``
        hyperparameters; with learned ones a space-filling design of
        :func:`boloop.gp.hyperparameters.initial_design_size` rows (``x`` and ``s``).
    initial_data:
        Optional ``(points (m, 1 + d_x), f (m,), g (m,))`` already measured on grid actions. A
        point at ``s = 0`` with ``g > h``, or at ``s > 0`` that the model cannot certify
        (``UCB^g > h`` after conditioning), raises :class:`UnsafeSeedError`.
    fit_hyperparameters:
        Learn both kernels' hyperparameters from the data (see the module docstring).
    hyperparameters:
        How they are learned: ``"learned"`` (default; a
        :class:`~boloop.gp.hyperparameters.HyperparameterLearning` may be given), ``"paper"`` or
        ``"plain"`` (module docstring). Only with ``fit_hyperparameters=True``.
    variance_prior_f, variance_prior_g, lengthscale_prior:
        Means of the log-normal priors (standard deviation 1 in log space, B.2.2).
    cache_mb:
        Memory per GP for the cached grid posterior before switching to streaming.
    keep_certified:
        Keep every action certified in an earlier round (the union over time, valid because g is
        monotone; default). ``False`` recomputes (12) from the current posterior each round as
        the paper and its code do. With a beta that is not a valid bound (the paper's constant 3),
        the union also keeps a point certified by a bound violation of one round.
    min_lengthscale_g:
        **An assumption the user makes** about the safety function: ``g`` varies no faster than a
        length-scale of this fraction of each axis's range (one number for every axis, or one per
        axis in the action's order ``(s, x_1, ..., x_d)``), each in ``(0, 1]``. With learned
        hyperparameters the fit of ``g``'s kernel and its axis-wise conservative shortening never
        go below it (logged when it binds). Default ``None``: no assumption, the length-scales
        may go down to the fit's floor (0.025 of the range), and a safety model fitted on a few
        levels of ``s`` can then be too short-sighted to ever certify the next level (the
        ``stall`` of :meth:`describe`). **If g changes faster than assumed, the method can
        certify and propose unsafe actions.** Refused with fixed kernels and with
        ``hyperparameters="paper"``.
    trend_g:
        With learned hyperparameters and no ``kernel_g``: ``g``'s model is
        :func:`trend_kernel_g` (a linear trend in ``s`` of unknown slope added to the Matern
        kernel, its slope variance at the upper edge of its likelihood-ratio set; default).
        ``False``: the Matern kernel alone. Ignored with ``kernel_g`` given and with fixed,
        ``"paper"`` or ``"plain"`` hyperparameters (what it changes is the learned default's
        model; ``describe()["trend_g"]`` says whether it applies).
    offset_g:
        With the trend (``trend_g`` in effect): ``g - h`` is modelled as ``c + b (s - s_0) +
        z(s, x)`` with an unknown constant ``c`` as well (:func:`trend_kernel_g` with
        ``offset=True``): the data's distance from ``h`` goes into ``c``, whose uncertainty does
        not grow with ``s``, and ``z``'s amplitude is learned from the variation of the data
        alone (without it, the zero-mean model keeps z's variance at least ``mean((g - h)^2)``).
        Ignored where ``trend_g`` does not apply; ``describe()["offset_g"]`` says whether it
        does. **Measured unsafe**: it evaluated unsafe actions on 43 of 100 ``safe/random-gp``
        draws with 30 levels of ``s`` (main's default: 1), mostly right after the first datum
        at a second level, where one datum pins the slope (``docs/reproductions/safe.md``, "An
        unknown constant in g's model"); for research, not for a process that must stay safe.
    skip_measured_seeds:
        A safe seed (an ``x`` row at the lowest level of ``s``) already measured before it is
        asked (the answers a continued study carries, a measurement added with ``observe``) is
        not asked again: the initial design ends sooner (default). ``False``: every seed is
        asked, as before the option (a study created before it keeps that).
    """

    family = "safe"
    iteration_meaning = (
        "the paper's t: one per evaluation after the initial safe-seed evaluations"
    )
    recommendation_meaning = "the best action the model certifies as safe"
    _outputs: tuple[str, ...] = ("f", "g")
    accepts_measurements = True  # observe(points, values): through _observe, as an answer
    #: the certified safe boundary (grid indices of s per x, eq. 14): kept from one round to the
    #: next (``keep_certified``), started afresh after a measured g above h
    certified: np.ndarray

    @property
    def measurement_outputs(self) -> tuple[str, ...]:
        return self._outputs

    def __init__(
        self,
        space: SafeSpace,
        threshold: float,
        *,
        kernel_f: Kernel | None = None,
        kernel_g: Kernel | None = None,
        noise_f: float = 1e-5,
        noise_g: float = 1e-5,
        sqrt_beta_f: float | BetaSchedule = 3.0,
        sqrt_beta_g: float | BetaSchedule = 3.0,
        n_initial: int | None = None,
        initial_data: tuple[Any, Any, Any] | None = None,
        fit_hyperparameters: bool = True,
        hyperparameters: HyperparameterLearning | str | None = None,
        variance_prior_f: float = 1.0,
        variance_prior_g: float = 1.0,
        lengthscale_prior: float = 0.2,
        fit_restarts: int = 2,
        cache_mb: float = 768.0,
        keep_certified: bool = True,
        min_lengthscale_g: float | Sequence[float] | None = None,
        trend_g: bool = True,
        offset_g: bool = False,
        skip_measured_seeds: bool = True,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(seed)
        self.keep_certified = bool(keep_certified)
        if not isinstance(skip_measured_seeds, (bool, np.bool_)):
            raise InvalidInputError(
                f"skip_measured_seeds must be true or false, got {skip_measured_seeds!r}"
            )
        self.skip_measured_seeds = bool(skip_measured_seeds)
        #: grid cells (x row, s level) measured so far (answers and added measurements)
        self._measured_cells: set[tuple[int, int]] = set()
        if not isinstance(space, SafeSpace):
            raise InvalidInputError(f"space must be a SafeSpace, got {type(space).__name__}")
        if space.n_s < 2:
            raise InvalidInputError("space must have at least two s values")
        h = float(threshold)
        if not math.isfinite(h):
            raise InvalidInputError(f"threshold must be finite, got {threshold!r}")
        self.space = space
        self.threshold = h
        self.sqrt_beta_f = _schedule(sqrt_beta_f, "sqrt_beta_f")
        self.sqrt_beta_g = _schedule(sqrt_beta_g, "sqrt_beta_g")
        self.fit_hyperparameters = bool(fit_hyperparameters)
        #: the shared mechanism of learned hyperparameters (None: fixed, or the paper's refit)
        self.learning = _resolve_learning(hyperparameters, self.fit_hyperparameters)
        self.hyperparameters = (
            "fixed"
            if not self.fit_hyperparameters
            else "paper"
            if self.learning is None
            else "plain"
            if self.learning.warn
            else "learned"
        )
        #: the user's smoothness assumption on g (fractions of each axis's range, (dim,)) or None
        self.min_lengthscale_g: np.ndarray | None = None
        #: the mechanism as g's fit uses it (with the assumption, if any)
        self._learning_g = self.learning
        if min_lengthscale_g is not None:
            if self.learning is None:
                raise InvalidInputError(
                    "min_lengthscale_g bounds the learned length-scales of g: it needs "
                    "fit_hyperparameters=True and hyperparameters='learned' (or 'plain'), not "
                    f"{'fixed kernels' if not self.fit_hyperparameters else 'the paper refit'}"
                )
            floor = check_min_lengthscale(min_lengthscale_g, space.dim, "min_lengthscale_g")
            self.min_lengthscale_g = np.broadcast_to(
                np.asarray(floor, dtype=np.float64), (space.dim,)
            ).copy()
            self._learning_g = self.learning.with_options(
                min_lengthscale=tuple(float(v) for v in self.min_lengthscale_g)
            )
        if n_initial is None:
            n_initial = (
                self.learning.initial_design_size(space.dim) if self.learning is not None else 2
            )
        if isinstance(n_initial, bool) or int(n_initial) != n_initial or n_initial < 0:
            raise InvalidInputError(f"n_initial must be a non-negative integer, got {n_initial!r}")
        self.n_initial = min(int(n_initial), space.n_x)
        self.fit_restarts = int(fit_restarts)
        dim = space.dim
        #: side lengths of the action box ``(s, x)``: the unit of the learned length-scales
        self.width = np.array(
            [np.ptp(space.s_values), *np.ptp(space.x_points, axis=0)], dtype=np.float64
        )
        self.width[~(self.width > 0)] = 1.0
        self._last_fit_n = {"f": 0, "g": 0}
        self._shape_g: ExactGP | None = None
        self._over_limit: list[dict[str, Any]] = []
        #: per x row, the first s index measured above h (never certified again)
        self._cut = np.full(space.n_x, space.n_s, dtype=np.int64)
        #: axes along which g's fitted length-scale sits at min_lengthscale_g (last refit)
        self._floor_binds: list[int] = []
        #: answers without growth of the certified set before a stall can be reported: at least
        #: 10, and twice the initial design (the refit schedule's phase of a refit per answer)
        self.stall_window = max(10, 2 * initial_design_size(space.dim))
        self._cert_count = 0
        #: answers the models took after the safe seeds: tells to the method's own queries and
        #: measurements added with observe (:meth:`answers_without_growth`)
        self._answers = 0
        #: ``_answers`` at the proposal at which the certified set last grew (None: no proposal
        #: after the safe seeds yet)
        self._answers_at_growth: int | None = None
        #: the stall found at the last proposal, without its count (:meth:`stall` adds it)
        self._stall: dict[str, Any] | None = None
        #: proposals in a row, since the set last grew, that measure a setting again where even
        #: its exact value would not narrow g one level up on the stuck rows (:meth:`_futile`)
        self._futile_run = 0
        #: learned default: the grid levels of s measured so far; while there is only one, g's
        #: length-scale along s is not identified and certification stops one level above it
        #: (:meth:`_level_cap`)
        self._one_step = self.hyperparameters == "learned"
        self._levels: set[int] = set()
        learned_start = self.learning is not None
        if isinstance(trend_g, np.bool_):
            trend_g = bool(trend_g)
        if not isinstance(trend_g, bool):
            raise InvalidInputError(f"trend_g must be true or false, got {trend_g!r}")
        #: g's model has the trend in s (:func:`trend_kernel_g`): the learned default's model;
        #: False with a kernel given, with fixed, "paper" or "plain" hyperparameters, or when off
        self.trend_g = bool(trend_g and kernel_g is None and self.hyperparameters == "learned")
        if isinstance(offset_g, np.bool_):
            offset_g = bool(offset_g)
        if not isinstance(offset_g, bool):
            raise InvalidInputError(f"offset_g must be true or false, got {offset_g!r}")
        #: g's trend model has an unknown constant (intercept) too (:func:`trend_kernel_g`)
        self.offset_g = bool(offset_g and self.trend_g)
        if self.offset_g:
            logger.warning(OFFSET_G_CAUTION)
        if self.trend_g:
            kernel_g = trend_kernel_g(space, self.min_lengthscale_g, offset=self.offset_g)
        self.gp_f = (
            self._make_gp(
                kernel_f,
                noise_f,
                "noise_f",
                variance_prior_f,
                lengthscale_prior,
                dim,
                self.width if learned_start else None,
            )
            if "f" in self._outputs
            else None
        )
        self.gp_g = self._make_gp(
            kernel_g,
            noise_g,
            "noise_g",
            variance_prior_g,
            lengthscale_prior,
            dim,
            self.width if learned_start else None,
            self.min_lengthscale_g,
        )
        self.post_f = GridPosterior(self.gp_f, space, cache_mb) if self.gp_f is not None else None
        self.post_g = GridPosterior(self.gp_g, space, cache_mb)
        #: certified safe boundary index per x (never decreases)
        self.certified = np.zeros(space.n_x, dtype=np.int64)
        if not self.n_initial:
            self._seed_rows = np.zeros(0, dtype=np.int64)
        elif self.learning is not None and self.learning.initial_design:
            # a space-filling design over the x rows, all at the safe level s = 0
            self._seed_rows = space_filling_design(
                space.x_points.min(axis=0),
                space.x_points.max(axis=0),
                self.n_initial,
                self.rng,
                candidates=space.x_points,
            )
        else:
            self._seed_rows = self.rng.choice(space.n_x, size=self.n_initial, replace=False)
        self._seeds_asked = 0
        self._seed_ids: set[int] = set()
        self._state_key: tuple[Any, ...] | None = None
        self._state: tuple[Bounds, SafeSets] | None = None
        #: the selection behind the last proposal (for tests and introspection)
        self.last_selection: Selection | None = None
        if initial_data is not None:
            self._add_initial_data(initial_data)

    # ------------------------------------------------------------------ models
    @staticmethod
    def _make_gp(
        kernel: Kernel | None,
        noise: float,
        name: str,
        var_prior: float,
        ls_prior: float,
        dim: int,
        width: np.ndarray | None = None,
        floor: np.ndarray | None = None,
    ) -> ExactGP:
        if kernel is None:
            # learned: Matern-5/2 ARD (the paper's family, rougher than the squared exponential,
            # so more cautious away from data) started at a fifth of the box (or at the user's
            # smoothness floor where that is longer)
            ls = [0.2] * dim if width is None else list(0.2 * width)
            if floor is not None and width is not None:
                ls = list(np.maximum(0.2, floor) * width)
            kernel = Matern(2.5, lengthscale=ls, variance=1.0)
        elif not isinstance(kernel, Kernel):
            raise InvalidInputError(f"kernels must be boloop Kernels, got {type(kernel).__name__}")
        else:
            kernel = kernel.clone()
        noise = positive(noise, name)  # named: a [settings] value reaches here unchecked
        priors = {
            "lengthscale": LogNormalPrior(math.log(positive(ls_prior, "lengthscale_prior")), 1.0),
            "variance": LogNormalPrior(math.log(positive(var_prior, "variance_prior")), 1.0),
        }
        valid = set(kernel.theta_names) | {"lengthscale"}
        priors = {k: v for k, v in priors.items() if k in valid}
        return ExactGP(kernel, noise, priors=priors)

    def _append(self, point: np.ndarray, f: float | None, g: float) -> None:
        try:
            self._measured_cells.add(self._grid_index(point))
        except InvalidInputError:  # pragma: no cover - measurements are grid points
            pass
        if self.gp_f is not None and f is not None:
            self.gp_f.condition(point, f)
        self.gp_g.condition(point, g - self.threshold)
        if self._one_step and len(self._levels) < 2:
            self._levels.add(int(np.argmin(np.abs(self.space.s_values - float(point[0])))))
        if self.learning is not None:
            self._learn()
        elif self.fit_hyperparameters:
            for gp in (self.gp_f, self.gp_g):
                if gp is not None and gp.n >= 2:
                    try:
                        gp.fit(n_restarts=self.fit_restarts, seed=self.rng)
                    except (ValueError, np.linalg.LinAlgError) as exc:  # keep the old kernel
                        logger.warning("safe: hyperparameter fit failed (%s); kept old", exc)

    def _learn(self) -> None:
        """Refit with the shared mechanism when due; ``g`` then goes to its conservative edge."""
        learning = self.learning
        assert learning is not None and self._learning_g is not None
        cautious = self._learning_g
        if self._over_limit and cautious.shrink is not None:
            # every measured g > h halves g's length-scale cap (module docstring)
            cautious = cautious.with_options(shrink=cautious.shrink / 2 ** len(self._over_limit))
        gp_f = self.gp_f
        if gp_f is not None and learning.due(gp_f.n, self._last_fit_n["f"], self.space.dim):
            if learning.fit(gp_f, self.width, rng=self.rng).refitted:
                self._last_fit_n["f"] = gp_f.n
        gp_g = self.gp_g
        if not cautious.due(gp_g.n, self._last_fit_n["g"], self.space.dim):
            return
        # g - h has prior mean 0 (safety from data, never from the prior), but its data sit at an
        # offset from 0 (g well below h near s = 0): fitted with mean 0 that offset reads as a
        # very smooth function and the length-scales run long. The kernel is therefore learned on
        # a twin with a constant mean (the variation of g, not its distance to h), taken to the
        # conservative edge of its likelihood-ratio set, and only then used by the zero-mean model.
        # With the intercept in the kernel (offset_g) the constant is the kernel's c instead: the
        # twin keeps the zero mean, and c's prior variance is learned with the others.
        offset = isinstance(gp_g.kernel, StationaryPlusTrend) and gp_g.kernel.has_offset
        if self._shape_g is None:
            self._shape_g = ExactGP(
                gp_g.kernel.clone(),
                gp_g.noise_variance,
                mean="zero" if offset else "constant",
                mean_constant=0.0 if offset else float(np.mean(gp_g.y)),
            )
        shape = self._shape_g
        if cautious.fit(shape, self.width, X=gp_g.X, y=gp_g.y, rng=self.rng).refitted:
            self._last_fit_n["g"] = gp_g.n
            # the worst case axis by axis (gp/conservative.py), never below a fifth of the box
            # (the paper's prior mean, B.2.2) where the data do not pin the length-scale shorter
            # g's kernel is stationary when learned (Matern, or the trend kernel on one); a kernel
            # without length-scales fails here as before
            kernel = cast("StationaryKernel | StationaryPlusTrend", shape.kernel)
            ls = np.atleast_1d(kernel.lengthscale)
            floor = np.minimum(ls, 0.2 * self.width) if ls.size == self.width.size else ls
            if self.min_lengthscale_g is not None:
                # the user's smoothness assumption holds for the worst case as well
                user = self.min_lengthscale_g * self.width
                if ls.size != self.width.size:  # one length-scale: as the fit's bounds take it
                    wg = float(np.exp(np.mean(np.log(self.width))))
                    user = np.full(ls.size, float(np.max(self.min_lengthscale_g)) * wg)
                binds = ls <= user * (1 + 1e-6)
                floor = np.maximum(floor, user)
                self._floor_binds = [int(k) for k in np.flatnonzero(binds)]
                if binds.any():
                    logger.info(
                        "safe: g's length-scale held at min_lengthscale_g along %s (the data "
                        "alone would fit a shorter one): the assumption, not the data, sets it",
                        ", ".join(self._axis_name(k) for k in self._floor_binds),
                    )
            ceiling = offset_ceiling = None
            if isinstance(shape.kernel, StationaryPlusTrend):  # kernel_g = trend_kernel_g(...)
                # the trend's slope variance to the upper edge of the set (the worse case above
                # the data), at most the fit's own bound; the intercept's prior variance likewise
                # (every posterior variance grows with it: the worse case everywhere)
                bounds = cautious.bounds_for(shape, self.width)
                ceiling = bounds.get("trend_variance", (0.0, None))[1]
                offset_ceiling = bounds.get("offset_variance", (0.0, None))[1]
            axiswise_conservative(
                shape,
                floor,
                level=cautious.conservative_level,
                trend_ceiling=ceiling,
                offset_ceiling=offset_ceiling,
            )
            theta = shape.kernel.theta.copy()
            names = shape.kernel.theta_names
            m2 = float(np.mean(gp_g.y**2))
            # log of the floors below; every g exactly at h (m2 = 0) sets none (it raised a
            # math domain error at the first fit, and that answer could never be stored)
            log_m2 = math.log(m2) if m2 > 0 else -math.inf
            if offset:
                # the data's distance from h is c's: its prior variance at least the second
                # moment of g - h (a model calling that offset improbable would revert too
                # fast), z's amplitude as the variation of the data alone set it
                i = names.index("offset_variance")
                theta[i] = max(theta[i], log_m2)
            else:
                # the zero-mean model's amplitude must also explain the data's distance from h:
                # the variance is at least the second moment of g - h (a zero-mean process with
                # the shape's variance alone would call that offset impossible and revert too
                # fast)
                theta[0] = max(theta[0], log_m2)
            if isinstance(shape.kernel, StationaryPlusTrend):
                # and the trend's slope variance at least m^2 / w_s^2: g - h may climb from its
                # data to the limit within the box's range of s (trend_kernel_g)
                i = names.index("trend_variance")
                w_s2 = float(self.width[0]) ** 2
                theta[i] = max(theta[i], math.log(m2 / w_s2) if m2 > 0 else -math.inf)
            gp_g.kernel.theta = theta
            gp_g.set_data(gp_g.X.copy(), gp_g.y.copy())

    # ------------------------------------------------------------------ stall
    def _axis_name(self, k: int) -> str:
        names = getattr(self.space, "names", None)
        if names is not None and k < len(names):
            return str(names[k])
        return "s" if k == 0 else f"x{k}"

    def _update_stall(self, b: Bounds, sets: SafeSets, sel: Selection | None = None) -> None:
        """Whether the certified set has stopped growing for a reason the user can act on.

        A stall is reported when (i) the certified set has not grown for ``stall_window``
        answers, or the last :data:`FUTILE_REPEATS` proposals since it grew (``sel``, the one
        being made, included) each measure a setting again that cannot unblock the rows below
        (:meth:`_futile`: the method would ask the same again), (ii) some x row could still
        improve: an action above its certified boundary
        (never measured over the limit) has ``UCB^f`` above the best certified ``LCB^f``
        (``maxLCB_t``; Case 2: the row's own; M-SafeUCB: any, f = g increases in s), and (iii) on
        such a row the certification of the next grid level fails on the width of the bound, not
        on its mean: ``sigma^g`` there is at least half its prior value (the model knows next to
        nothing there), or at least a fifth of it while ``mu^g + sigma^g <= h`` (the model
        expects the level to be safe but cannot close the gap). (iii) tells a stall apart from a
        method that has reached the limit, where the data beside the boundary pin ``g`` one step
        further (``sigma^g`` a few per cent of the prior's) close to or above ``h``.
        Computed from the round's bounds only (no random numbers, nothing refitted).

        (i) counts answers (:meth:`answers_without_growth`: the method's own and measurements
        added with :meth:`observe`), not iterations: an added measurement feeds the models (and
        their refit schedule, which the window follows) as an answer does. Without added
        measurements the two counts agree at every proposal. The decision is taken here, at a
        proposal (where the certified set is committed); :meth:`stall` reports it with the count
        as it stands when read."""
        count = int(np.sum(self.certified + 1))
        if count > self._cert_count or self._answers_at_growth is None:
            self._cert_count = count
            self._answers_at_growth = self._answers
            self._futile_run = 0
        self._stall = None
        window = self._answers - self._answers_at_growth >= self.stall_window
        # a measured setting again, under a model that only its data can move (:meth:`_futile`)
        repeat = (
            sel is not None
            and (sel.x_index, sel.s_index) in self._measured_cells
            and self._model_stays()
        )
        blind = self._blind_rows(b, sets) if window or repeat else None  # (no work otherwise)
        if sel is not None:
            futile = repeat and blind is not None and self._futile(sel, blind[0], sets.boundary)
            self._futile_run = self._futile_run + 1 if futile else 0
        if blind is None or not (window or self._futile_run >= FUTILE_REPEATS):
            return
        blind_rows, ratio = blind
        ls = np.atleast_1d(np.asarray(getattr(self.gp_g.kernel, "lengthscale", np.nan)))
        ls_s = float(ls[0])
        step = float(np.median(np.diff(self.space.s_values)))
        top = float(self.space.s_values[int(np.max(self.certified))])
        axis = self._axis_name(0)
        i = int(np.flatnonzero(blind_rows)[np.argmax(ratio[blind_rows])])
        self._stall = {
            "axis": axis,
            "lengthscale_g": ls_s,
            "grid_step": step,
            "highest_certified": top,
            "rows": int(np.count_nonzero(blind_rows)),
            "uncertainty_ratio": float(ratio[i]),
            "repeats": self._futile_run if not window else 0,
            "suggested_min_lengthscale_g": (
                self._suggested_floor(ls_s)
                if self.hyperparameters in ("learned", "plain")
                else None
            ),
        }

    def _blind_rows(self, b: Bounds, sets: SafeSets) -> tuple[np.ndarray, np.ndarray] | None:
        """Conditions (ii) and (iii) of :meth:`_update_stall`: the x rows (bool, ``(n_x,)``)
        that could improve above their certified boundary and whose next level the model cannot
        certify for want of knowledge, with ``sigma^g`` there over its prior value per row;
        None when no row is such."""
        n_x, n_s = self.certified.size, self.space.n_s
        rows = np.arange(n_x)
        j = sets.boundary
        nxt = np.minimum(j + 1, n_s - 1)
        open_row = (j < n_s - 1) & (self._cut > nxt)
        above = (np.arange(n_s)[None, :] > j[:, None]) & (
            np.arange(n_s)[None, :] < self._cut[:, None]
        )
        if self.post_f is None:  # M-SafeUCB: f = g is increasing, higher is better
            promising = open_row & above.any(axis=1)
        else:
            best = sets.lcb_best if getattr(self, "case", "1") == "2" else sets.max_lcb
            ucb_above = np.max(np.where(above, b.ucb_f, -np.inf), axis=1)
            promising = open_row & (ucb_above > best)
        if not promising.any():
            return None
        prior_var = self.gp_g.kernel.diag(self.space.points[rows * n_s + nxt])
        # the intercept's prior variance (offset_g) is the same at every action: what the model
        # does not know about the next level is the rest of the prior
        prior_var = prior_var - (getattr(self.gp_g.kernel, "offset_variance", None) or 0.0)
        prior_sd = np.sqrt(np.maximum(prior_var, 1e-300))
        sd = b.std_g[rows, nxt]
        ratio = sd / prior_sd
        # held back by ignorance, not by the limit: the model knows next to nothing at the next
        # level, or expects it to be safe (mean plus one standard deviation below h) while still
        # uncertain by a fifth of its prior there. At the limit the data beside the boundary
        # make the next level's sigma a small fraction of the prior's (a few per cent).
        expects_safe = (b.mean_g[rows, nxt] + sd <= self.threshold) & (ratio >= 0.2)
        blind = promising & (expects_safe | (ratio >= 0.5))
        if not blind.any():
            return None
        return blind, ratio

    def _model_stays(self) -> bool:
        """Whether g's model can change only through its data: a fixed kernel, or the learned
        default while every datum sits at one level of s (:meth:`_level_cap`: the data cannot
        identify how fast g changes along s, so no refit can move the next level's width).
        Otherwise refits as the data grow move the model (measured: a futile-repeat rule
        without this condition was followed by growth in 5 of 8 runs on fine dose grids with
        noisy g, against 1 of 6 for the window)."""
        if self.learning is None:
            return not self.fit_hyperparameters
        return self._one_step and len(self._levels) < 2

    def _futile(self, sel: Selection, blind: np.ndarray, boundary: np.ndarray) -> bool:
        """Whether the proposal ``sel``, which measures a setting again (its grid cell was
        measured before: the caller's condition), is one where even the exact value of g there
        would leave ``sigma^g`` at the next level
        of every row in ``blind`` (one above ``boundary``, this round's) above
        :data:`FUTILE_NARROWING` of what it is: conditioned on a noise-free g at the setting,
        ``var' = var - cov^2 / var_sel`` (posterior (co)variances of g's model). Then
        the answer cannot unblock those rows (nor can any number of repeats: their limit is
        that exact value), and the data after it are the data before it plus a repeat, so the
        method asks the same again. A noise-free measurement repeated is the common case (a
        lab's g read off an instrument: its posterior variance at the setting is already the
        noise floor, ``cov`` about 0)."""
        n_s = self.space.n_s
        rows = np.flatnonzero(blind)
        nxt = np.minimum(boundary[rows] + 1, n_s - 1)
        P = self.space.points[rows * n_s + nxt]
        x = self.space.points[sel.x_index * n_s + sel.s_index][None, :]
        var_sel = float(self.gp_g.posterior_covariance(x, x)[0, 0])
        _, var_nxt = self.gp_g.predict(P)
        cov = self.gp_g.posterior_covariance(P, x)[:, 0]
        if var_sel <= 0.0:
            return True
        narrowed = np.maximum(var_nxt - cov**2 / var_sel, 0.0)
        return bool(np.all(narrowed >= FUTILE_NARROWING**2 * var_nxt))

    def stall_message(self, stall: Mapping[str, Any], unit: str = "") -> str:
        """The words of a stall (:meth:`stall`'s dict, its ``message`` aside) for the person
        running the study; ``unit`` (the monotone parameter's, which the method does not know:
        a study passes the space file's) is written after its values (``up to 40 mg``, the
        length-scale and the grid step)."""
        stale, axis = int(stall["answers"]), str(stall["axis"])
        ls, step = float(stall["lengthscale_g"]), float(stall["grid_step"])
        top, ratio = float(stall["highest_certified"]), float(stall["uncertainty_ratio"])
        repeats = int(stall.get("repeats") or 0)
        u = f" {unit}" if unit else ""
        again = (
            f" Its last {repeats} queries measured settings again that it already knows: their "
            f"answers cannot narrow g one {axis} level up, so it would go on asking the same."
            if repeats
            else ""
        )
        head = (
            f"the method is stuck: the set of settings it can certify as safe has not grown in "
            f"the last {stale} answers (it certifies {axis} up to {top:.4g}{u}), although its "
            f"model of f says that higher {axis} could be better.{again} Its model of the safety "
            f"value g assumes g can change a lot over {ls:.3g}{u} in {axis} (the length-scale "
            f"along {axis}; the grid step is {step:.4g}{u}), so one step beyond the measured "
            f"levels its uncertainty about g is still {100 * ratio:.0f}% of what it is without "
            "any data: "
            "too wide to certify the next level, however often it measures this one. "
        )
        if self.hyperparameters == "fixed":
            return head + (
                "g's kernel is fixed: give one with a longer length-scale along "
                f"{axis}, or learn it (fit_hyperparameters=true) and set min_lengthscale_g."
            )
        if self.hyperparameters == "paper":
            return head + (
                "With hyperparameters='learned' the option min_lengthscale_g can state how "
                "smoothly g varies."
            )
        now = (
            ""
            if self.min_lengthscale_g is None
            else f" (now {', '.join(f'{v:g}' for v in self.min_lengthscale_g)})"
        )
        frac = ls / float(self.width[0])
        hint = self._suggested_floor(ls)
        return head + (
            f"If you know that g varies smoothly, say so with the option min_lengthscale_g"
            f"{now}: the shortest length-scale of g you assume, as a fraction of each "
            f"parameter's range (g's is now {frac:.2g} of {axis}'s range), e.g. "
            f"min_lengthscale_g = {hint:g}. This is an assumption, not something the data show: "
            "if g changes faster than that, the method can propose settings above the limit."
        )

    def _suggested_floor(self, ls: float) -> float:
        """The ``min_lengthscale_g`` a stall message suggests: 1.5 times g's length-scale along s
        as a fraction of its range, in steps of 0.05, at least 0.2 (at most 1)."""
        frac = ls / float(self.width[0])
        return min(1.0, max(0.2, math.ceil(round(30.0 * frac, 6)) / 20.0))

    def noise_check(self) -> dict[str, dict[str, Any]]:
        """Per output (``f``, ``g``), where measurements repeated at one setting scatter more
        than its fixed noise variance (``noise_f``, ``noise_g``) allows: the test's numbers
        (:func:`boloop.gp.repeats.noise_too_small`); empty when none does. The models never
        learn the noise, so a noise variance below the real one makes them trust each
        measurement too much (the safety model certifies too much)."""
        from boloop.gp.repeats import noise_too_small

        out = {}
        for name, gp in (("f", self.gp_f), ("g", self.gp_g)):
            if gp is None or gp.n < 3:
                continue
            found = noise_too_small(gp.X, gp.y, gp.noise_variance)
            if found is not None:
                found["option"] = f"noise_{name}"
                if name == "g":
                    found["cost"] = "so it can certify settings that are not safe"
                out[name] = found
        return out

    def answers_without_growth(self) -> int | None:
        """The answers since the certified safe set last grew: tells to the method's queries and
        measurements added with :meth:`observe`, after the proposal at which the set last grew
        (the set is certified at proposals, so the first one after the safe seeds counts as
        growth). The same whether a query is open or not: asking changes it only when the set
        has grown (to 0). None before the first proposal after the safe seeds."""
        if self._answers_at_growth is None:
            return None
        return self._answers - self._answers_at_growth

    def stall(self) -> dict[str, Any] | None:
        """The stall found at the last proposal (see :meth:`_update_stall`) or None: ``answers``
        without growth (:meth:`answers_without_growth`, as it stands now), ``axis`` (the
        monotone parameter), g's ``lengthscale_g`` along it and the ``grid_step`` (natural
        units), ``highest_certified`` value of the axis, ``rows`` stuck, ``uncertainty_ratio``,
        ``repeats`` (the futile repeats in a row that reported it before ``stall_window``
        answers, 0 when the window did) and a ``message`` for the person running the study,
        built from the same count."""
        if self._stall is None:
            return None
        n = self.answers_without_growth()
        assert n is not None  # a stall is only found at a proposal after the safe seeds
        d = {"answers": n, **self._stall}
        d["message"] = self.stall_message(d)
        return d

    def over_limit(self) -> list[dict[str, Any]]:
        """Every measured ``g > h``: ``{"query", "point", "g", "h"}`` in the order measured."""
        return [dict(e) for e in self._over_limit]

    def _grid_index(self, point: np.ndarray) -> tuple[int, int]:
        flat = int(self.space.index_of(point[None, :])[0])
        if flat < 0:
            miss = self.space.describe_miss(point)
            raise InvalidInputError(f"initial_data has a point that is not a grid action: {miss}")
        i, j = self.space.unflat_index(flat)
        return int(i), int(j)

    def _add_initial_data(self, data: tuple[Any, Any, Any]) -> None:
        try:
            P, yf, yg = data
        except (TypeError, ValueError) as exc:
            raise InvalidInputError("initial_data must be (points, f, g)") from exc
        P = as_points(P, "initial_data points", dim=self.space.dim)
        yf = as_values(yf, "initial_data f", n=P.shape[0])
        yg = as_values(yg, "initial_data g", n=P.shape[0])
        idx = [self._grid_index(p) for p in P]
        h = self.threshold
        for (i, j), g in zip(idx, yg):
            if g > h:
                raise UnsafeSeedError(
                    f"initial_data: the point (s={self.space.s_values[j]}, x={self.space.x_points[i]})"
                    f" has measured g = {g} > h = {h}"
                )
        for p, f, g in zip(P, yf, yg):
            self._append(p, float(f), float(g))
        b = self._bounds(1)
        for i, j in idx:
            if j > 0 and not b.ucb_g[i, j] <= h:
                raise UnsafeSeedError(
                    f"initial_data: the model cannot certify the seed point "
                    f"(s={self.space.s_values[j]}, x={self.space.x_points[i]}) as safe "
                    f"(UCB^g = {b.ucb_g[i, j]:.4g} > h = {h}); give seeds at s = 0 or more data"
                )
            self.certified[i] = max(self.certified[i], j)

    def _level_cap(self) -> int | None:
        """The highest grid level of ``s`` that may be certified while the data cannot identify
        how fast ``g`` changes along ``s``, or None once they can (and with fixed kernels, the
        paper's refit or ``"plain"``, which are never capped).

        Derivation (notation of Losalka & Scarlett 2024, eq. 10-14). The safe set (12) is
        ``S_t = {(s, x) : UCB^g_{t-1}(s, x) <= h}`` and the safe boundary (14)
        ``s_t^{(x)} = max{s : (s, x) in S_t}``. With learned hyperparameters ``UCB^g`` depends on
        g's length-scale along ``s``, ``l_s``. While every measured action has the same level
        ``s = s_0`` (the safe seeds all do), every distance between data points has a zero ``s``
        component, so for a stationary ARD kernel the Gram matrix, hence the marginal
        likelihood, does not depend on ``l_s`` at all: the data say nothing about it (the
        likelihood-ratio set of ``gp/conservative.py`` contains every ``l_s``, and the fit
        leaves it at its start, a fifth of the box). Certifying ``(s_0 + k delta, x)``
        (``delta`` the grid step) from such data needs g's correlation over ``k delta`` along
        ``s`` to be high, i.e. an assumed ``l_s`` of order ``k delta`` or longer: the
        assumption grows with ``k``, and ``k = 1`` is the least that lets the method move at
        all. So until the data hold two distinct levels of ``s`` the safe boundary is capped one
        level above the measured one, ``s_t^{(x)} <= s_0 + delta`` for every ``x``: one step at
        a time while the scale is unknown, as SafeOpt expands its safe set by one step from the
        points it has certified. The first measurement at ``s_0 + delta`` makes the likelihood
        depend on ``l_s``, and from then on the fitted, conservatively shortened length-scale
        decides (nothing is capped).

        Departure from the paper: its kernels are known (Theorems 1-3 assume a fixed kernel whose
        RKHS contains g and a valid ``beta``), so ``l_s`` is never in doubt and (12) needs no
        cap; the cap applies only to the learned default.

        The condition is global (two levels anywhere), not per ``x`` row. A per-row version (cap
        each row one level above its own highest measured level until the row has two, and keep
        no certification of a capped row in the union over time) was measured and not adopted:
        it left no unsafe evaluation on ``safe/random-gp`` with 30 levels of ``s`` (the global
        cap leaves 3 of 100 draws: one datum at a second level does not identify ``l_s``) but
        stalled ``safe/branin`` (200 x rows) in 4 of 5 seeds (``docs/reproductions/safe.md``,
        "One level at a time"). The ``x`` axes need no cap: the design puts several
        distinct ``x`` at ``s = 0``, so their length-scales are identified before anything is
        certified at ``s > 0``."""
        if not self._one_step or len(self._levels) != 1:
            return None
        (level,) = self._levels
        return min(level + 1, self.space.n_s - 1)

    def _bounds(self, t: int) -> Bounds:
        mg, sg = self.post_g.mean_std()
        mg = mg + self.threshold
        bg = self.sqrt_beta_g.sqrt_beta(t, rng=self.rng)
        if self.post_f is None:  # case 3b: f = g
            b = Bounds(mg, sg, mg, sg, bg, bg)
        else:
            mf, sf = self.post_f.mean_std()
            bf = self.sqrt_beta_f.sqrt_beta(t, rng=self.rng)
            b = Bounds(mf, sf, mg, sg, bf, bg)
        if self._over_limit:  # rows with a measured g > h: never certified at or above it
            b.ucb_g = np.where(
                np.arange(self.space.n_s)[None, :] >= self._cut[:, None], np.inf, b.ucb_g
            )
        cap = self._level_cap()
        if cap is not None:  # g's scale along s not identified: one level above the data
            b.ucb_g = np.where(np.arange(self.space.n_s)[None, :] > cap, np.inf, b.ucb_g)
        return b

    # ------------------------------------------------------------------ per-round sets
    def _constants(self) -> tuple[float, float]:
        return 1.0, 1.0

    def state(self) -> tuple[Bounds, SafeSets]:
        """Bounds and sets of Algorithm 1 for the current posterior (cached per data version).

        No side effects: the certified boundary is extended only when a query is proposed, so
        calling :meth:`recommend` between steps never changes the trajectory."""
        t = self.iteration + 1
        key = (
            t,
            self.gp_g.n,
            self.gp_g.version,
            None if self.gp_f is None else (self.gp_f.n, self.gp_f.version),
        )
        if self._state_key != key or self._state is None:
            b = self._bounds(t)
            L_f, L_g = self._constants()
            prev = self.certified if self.keep_certified else None
            sets = safe_sets(b, self.space.s_values, self.threshold, L_f, L_g, prev)
            self._state, self._state_key = (b, sets), key
        return self._state

    def _select(self, b: Bounds, sets: SafeSets) -> Selection:
        raise NotImplementedError

    # ------------------------------------------------------------------ BasePolicy
    def _propose(self) -> Query:
        space = self.space
        while (
            self.skip_measured_seeds
            and self._seeds_asked < self.n_initial
            and (int(self._seed_rows[self._seeds_asked]), 0) in self._measured_cells
        ):
            self._seeds_asked += 1  # measured already (a continued study's answers): not again
        if self._seeds_asked < self.n_initial:
            i = int(self._seed_rows[self._seeds_asked])
            self._seeds_asked += 1
            q = self._mark_initial(
                self._new_evaluate(space.rows(slice(i, i + 1))[0], i * space.n_s, self._outputs)
            )
            self._seed_ids.add(q.id)
            return q
        b, sets = self.state()
        # the union over time (keep_certified): commit this round's certification
        self.certified = np.maximum(self.certified, sets.boundary)
        sel = self._select(b, sets)
        self._update_stall(b, sets, sel)  # no random numbers: after the selection as before it
        if sel.s_index > sets.boundary[sel.x_index]:  # pragma: no cover - guarded by construction
            raise AssertionError("selected an action outside the certified safe set")
        self.last_selection = sel
        flat = sel.x_index * space.n_s + sel.s_index
        point = np.concatenate([[space.s_values[sel.s_index]], space.x_points[sel.x_index]])
        return self._new_evaluate(point, flat, self._outputs)

    def _observe(self, query: Query, answer: Any) -> None:
        if not isinstance(query, Evaluate):  # pragma: no cover - only Evaluate is asked
            raise InvalidInputError("safe policies only ask Evaluate queries")
        g = float(answer["g"])
        f = float(answer["f"]) if "f" in answer else None
        over = g > self.threshold
        if over:
            logger.warning(
                "safe: measured g = %.4g > h = %.4g at %s: the bounds were invalid (or the process "
                "drifted); the certified set is recomputed and the model made more cautious",
                g,
                self.threshold,
                query.x,
            )
            self._over_limit.append(
                {"query": query.id, "point": query.x.tolist(), "g": g, "h": self.threshold}
            )
        self._append(query.x, f, g)
        if query.id not in self._seed_ids:  # an answer to a later query, or a measurement
            self._answers += 1
        if over:
            i, j = self._grid_index(query.x)
            # the past union was justified by bounds that have just failed: certify afresh, and
            # never again at or above the measured violation on this row (g monotone in s)
            self.certified = np.zeros_like(self.certified)
            self._cut[i] = min(self._cut[i], max(j, 1))
            self._cert_count = 0  # growing back counts as growth
            # a stall found under the failed bounds no longer holds (nor its suggested option,
            # next to the over-limit alarm): the next proposal looks again
            self._stall = None

    def _iteration_done(self, query: Query, answer: Any) -> bool:
        return query.id not in self._seed_ids

    def recommend(self) -> SafeRecommendation:
        """The certified-safe recommendation.

        ``point``/``index``: the action of the certified safe set with the largest ``LCB^f``
        (Case 1; pessimistic, spec Sec. 3). ``best_s``/``best_s_index`` (n_x,): for every x the
        safe UCB^f maximiser ``s_hat_t^{(x)}`` (eq. 16; the Case 2 output evaluated by ``R^X``).
        ``boundary_s`` (n_x,): the certified safe boundary ``s_t^{(x)}``.
        """
        b, sets = self.state()
        space = self.space
        lcb = np.where(sets.prefix, b.lcb_f, -np.inf)
        flat = int(np.argmax(lcb))
        i, j = divmod(flat, space.n_s)
        best = self._best_index(b, sets)
        return SafeRecommendation(
            point=np.concatenate([[space.s_values[j]], space.x_points[i]]),
            index=flat,
            best_s=space.s_values[best],
            best_s_index=best,
            boundary_s=space.s_values[sets.boundary],
        )

    def _best_index(self, b: Bounds, sets: SafeSets) -> np.ndarray:
        return sets.best

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        t = self.iteration + 1
        d.update(
            h=self.threshold,  # the safety limit g <= h, named as in the paper and a space file
            sqrt_beta_f=(
                self.sqrt_beta_f.sqrt_beta(t)
                if not self.sqrt_beta_f.random
                else repr(self.sqrt_beta_f)
            ),
            sqrt_beta_g=(
                self.sqrt_beta_g.sqrt_beta(t)
                if not self.sqrt_beta_g.random
                else repr(self.sqrt_beta_g)
            ),
            kernel_f=None if self.gp_f is None else repr(self.gp_f.kernel),
            kernel_g=repr(self.gp_g.kernel) + " (models g - h)",
            fit_hyperparameters=self.fit_hyperparameters,
            hyperparameters=self.hyperparameters,
            n_initial=self.n_initial,
            over_limit=self.over_limit(),
            certified_fraction=float(np.mean((self.certified + 1) / self.space.n_s)),
            min_lengthscale_g=(
                None if self.min_lengthscale_g is None else self.min_lengthscale_g.tolist()
            ),
            lengthscale_g=np.atleast_1d(
                np.asarray(getattr(self.gp_g.kernel, "lengthscale", np.nan), dtype=np.float64)
            ).tolist(),
            min_lengthscale_g_binds=[self._axis_name(k) for k in self._floor_binds],
            trend_g=self.trend_g,
            offset_g=self.offset_g,
            stall=self.stall(),
            noise_f=None if self.gp_f is None else float(self.gp_f.noise_variance),
            noise_g=float(self.gp_g.noise_variance),
            noise_check=self.noise_check(),
        )
        if self.offset_g:
            d["caution"] = OFFSET_G_CAUTION
        return d


def trend_kernel_g(
    space: SafeSpace,
    min_lengthscale_g: float | np.ndarray | None = None,
    *,
    offset: bool = False,
) -> StationaryPlusTrend:
    """The kernel of ``g - h`` of the learned default (``trend_g=True``): the trend in ``s``
    that M-SafeOpt assumes, for learned hyperparameters.

    It is a Matern-5/2 ARD started at a fifth of the box (or at ``min_lengthscale_g``, the
    user's smoothness floor, where that is longer), variance 1, plus a linear trend in ``s`` of
    unknown slope, ``k_0 + sigma_b^2 (s - s_0)(s' - s_0)`` with ``s_0`` the safe level
    (:class:`~boloop.gp.kernels.StationaryPlusTrend`), started at ``sigma_b^2 = 1 / w_s^2``.
    ``trend_g=False`` gives the Matern model alone (the default before; measured against it on
    ``safe/random-gp`` with 30 levels of ``s``, the trend evaluated an unsafe action on 1 of 100
    draws where the Matern model does on 3, and on 1 against 2 of 100 further draws, at a higher
    simple regret there (+22%, +6%), and moved no library problem into a stall:
    ``docs/reproductions/safe.md``, "A trend in s" and "The trend in s becomes the learned
    default").

    Why (Losalka & Scarlett 2024, eq. 10-14). The safe set (12) is
    ``S_t = {(s, x) : UCB^g_{t-1}(s, x) <= h}`` with ``UCB^g_{t-1} = mu^g_{t-1} + beta^g_t
    sigma^g_{t-1}`` (10), and the boundary (14) is the highest ``s`` of ``S_t`` on each row.
    The paper assumes ``g`` increasing in ``s`` (eq. 5: by at least ``L'_g`` per unit). A
    zero-mean stationary model of ``g - h`` cannot represent that: above the highest measured
    level its mean reverts to 0 over g's length-scale along ``s`` whatever the data's rise, and
    its standard deviation to the prior's, so on a steep ``g`` (a rise per grid step comparable
    to the distance to ``h``) ``UCB^g`` two levels above the data can sit below ``h`` while
    ``g`` is above it. With ``g - h = z + b (s - s_0)``, ``z ~ GP(0, k_0)`` and
    ``b ~ N(0, sigma_b^2)`` (Bayesian linear regression in ``s``, Rasmussen & Williams 2006,
    eq. 2.39-2.40), ``mu^g`` above the data follows the slope the data show,
    ``E[b | D] (s - s_0)``, and ``sigma^g`` carries the slope's uncertainty,
    ``Var[b | D] (s - s_0)^2``: ``UCB^g`` grows with the distance above the data instead of
    reverting, and the certified step shrinks on a steep ``g``.

    ``sigma_b`` when the data cannot identify it. While every datum lies at ``s_0`` the trend
    term is 0 on the data, the likelihood does not depend on ``sigma_b`` and
    ``Var[b | D] = sigma_b^2``: its value must come from outside the data's ``s`` information.
    The scale: in the paper's setting the constraint is active (some action unsafe; otherwise
    the safe optimum is the unconstrained one), so ``g - h`` climbs from its measured values,
    of size ``m = mean((g - h)^2)^(1/2)`` (the second moment the amplitude is raised to), to 0
    within the box's range ``w_s`` of ``s``: a slope of order ``m / w_s``. With learned
    hyperparameters (:meth:`_SafePolicy._learn`) the shape twin fits ``sigma_b^2`` with the
    shared mechanism's prior ``log(sigma_b^2 w_s^2 / s_y^2) ~ N(0, 1)``
    (:meth:`~boloop.gp.hyperparameters.HyperparameterLearning.priors_for`); the axis-wise
    conservative step (``gp/conservative.py``) shortens the length-scales and raises
    ``sigma_b^2`` to the upper edge of the same likelihood-ratio set (a larger slope variance is
    the worse case above the data); and the zero-mean model keeps ``sigma_b^2 >= m^2 / w_s^2``
    as its amplitude is kept at least ``m^2``. Certifying ``s_0 + delta`` from ``s_0`` data
    then costs at least ``beta^g_t m delta / w_s`` more in ``UCB^g`` (a tenth of ``m`` with 30
    levels and ``beta^g_t = 3``); the one-level cap (:meth:`_SafePolicy._level_cap`) still
    applies (``sigma_b`` is unidentified as well). Departure from the paper: its kernel of
    ``g`` is known.

    ``offset=True`` (the option ``offset_g``) adds an unknown constant: ``g - h = c + b (s -
    s_0) + z``, ``c ~ N(0, sigma_c^2)`` (R&W eq. 2.39-2.42 with the basis ``(1, s - s_0)``),
    started at ``sigma_c^2 = 1``. The zero-mean model above must explain the data's distance
    from ``h`` through z's amplitude (kept at least ``m^2``), so one step above data that all
    sit at the same ``g - h`` its width is that of a process of amplitude ``m``, close to the
    margin ``m`` itself (a dose study with a constant ``g`` at ``s_0`` never moves); with ``c``
    the offset is the constant's, whose posterior uncertainty does not grow with ``s``, z's
    amplitude is learned from the data's variation alone, and ``sigma_c^2`` is learned on the
    (then zero-mean) twin with the prior ``log(sigma_c^2 / m^2) ~ N(0, 1)``, raised to the upper
    edge of the likelihood-ratio set as the slope's is (every posterior variance is
    non-decreasing in ``sigma_c^2``: the worse case) and kept at least ``m^2``."""
    width = np.array([np.ptp(space.s_values), *np.ptp(space.x_points, axis=0)], dtype=np.float64)
    width[~(width > 0)] = 1.0
    start = 0.2 if min_lengthscale_g is None else np.maximum(0.2, min_lengthscale_g)
    base = Matern(2.5, lengthscale=list(start * width), variance=1.0)
    return StationaryPlusTrend(
        base,
        trend_variance=1.0 / float(width[0]) ** 2,
        axis=0,
        origin=float(space.s_values[0]),
        offset_variance=1.0 if offset else None,
    )


class MSafeOpt(_SafePolicy):
    """M-SafeOpt (Losalka & Scarlett 2024, Algorithm 1), Cases 1, 2 and 3.

    Parameters (besides those of the shared base, see :class:`_SafePolicy`)
    ----------
    L_f:
        Maximum growth of ``f`` in ``s`` (eq. 4). Not needed for ``case="3b"``.
    L_g_prime:
        Minimum growth ``L'_g > 0`` of ``g`` in ``s`` (eq. 5). Not needed for ``case="3b"``.
    case:
        ``"1"`` global safe optimum; ``"2"`` best safe s for every x; ``"3a"`` f and g increasing;
        ``"3b"`` M-SafeUCB (f = g, only ``g`` measured).
    acquisition:
        ``"default"`` (23) as in the theorems and experiments, or ``"refined"`` (36).
    """

    def __init__(
        self,
        space: SafeSpace,
        threshold: float,
        *,
        L_f: float | None = None,
        L_g_prime: float | None = None,
        case: str | int = "1",
        acquisition: str = "default",
        **kwargs: Any,
    ) -> None:
        case = str(case)
        if case not in ("1", "2", "3a", "3b"):
            raise InvalidInputError(f"case must be 1, 2, '3a' or '3b', got {case!r}")
        if acquisition not in ("default", "refined"):
            raise InvalidInputError(
                f"acquisition must be 'default' or 'refined', got {acquisition!r}"
            )
        self.case = case
        self.acquisition = acquisition
        if case == "3b":
            self._outputs = ("g",)
            self.L_f = 1.0 if L_f is None else positive(L_f, "L_f")
            self.L_g_prime = 1.0 if L_g_prime is None else positive(L_g_prime, "L_g_prime")
        else:
            if L_f is None or L_g_prime is None:
                raise InvalidInputError("M-SafeOpt needs L_f and L_g_prime (eq. 4-5)")
            self.L_f = positive(L_f, "L_f")
            self.L_g_prime = positive(L_g_prime, "L_g_prime")
        super().__init__(space, threshold, **kwargs)

    @property
    def method_id(self) -> str:  # type: ignore[override]
        return {"1": "m-safeopt", "2": "m-safeopt-x", "3a": "m-safeopt-3a", "3b": "m-safeucb"}[
            self.case
        ]

    def _constants(self) -> tuple[float, float]:
        return self.L_f, self.L_g_prime

    def _select(self, b: Bounds, sets: SafeSets) -> Selection:
        return select_msafeopt(
            b, sets, self.case, self.L_f, self.L_g_prime, self.acquisition == "refined"
        )

    def _best_index(self, b: Bounds, sets: SafeSets) -> np.ndarray:
        if self.case == "3b":  # the safe maximiser of an increasing function is the boundary
            return sets.boundary
        return sets.best

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(
            case=self.case, acquisition=self.acquisition, L_f=self.L_f, L_g_prime=self.L_g_prime
        )
        return d


class SafeOptMC(_SafePolicy):
    """SafeOpt-MC (Berkenkamp et al. 2021) as run in the paper (B.2.2, spec 4.1): expanders are the
    safe-boundary actions of the x not yet fully safe, maximisers SafeOpt's
    ``{UCB^f > maxLCB_t}`` within the safe set, acquisition the largest confidence width of f and
    g. Uses no ``L_f``, ``L'_g`` (they only enter through nothing but the shared ``s_bar``, unused)."""

    method_id = "safeopt-mc"

    def _select(self, b: Bounds, sets: SafeSets) -> Selection:
        return select_safeopt_mc(b, sets)


class PredVar(_SafePolicy):
    """PredVar (Schreiter et al. 2015) extended to f and g as in the paper (B.2.2): the action of
    the safe set with the largest confidence width ``max{beta^f sigma^f, beta^g sigma^g}``."""

    method_id = "predvar"

    def _select(self, b: Bounds, sets: SafeSets) -> Selection:
        return select_predvar(b, sets)


# ---------------------------------------------------------------------- registry
_COMMON_KEYS = (
    "kernel_f",
    "kernel_g",
    "noise_f",
    "noise_g",
    "sqrt_beta_f",
    "sqrt_beta_g",
    "n_initial",
    "fit_hyperparameters",
    "hyperparameters",
    "variance_prior_f",
    "variance_prior_g",
    "lengthscale_prior",
    "keep_certified",
    "min_lengthscale_g",
)


_OPTION_ONLY = ("trend_g", "offset_g", "skip_measured_seeds", "cache_mb")
#: proposals in a row that repeat a setting the stuck rows cannot learn from (``_futile``),
#: after which the safe family reports a stall without waiting for ``stall_window``: the third
#: repeat of a setting whose exact value would not narrow g one level up (the data then do not
#: change, so neither does the next proposal)
FUTILE_REPEATS = 3
#: ... where "would not narrow" is: g's standard deviation one level up stays above this share
FUTILE_NARROWING = 0.9
#: what a study with ``offset_g`` on says in its warnings, and the log when it is built: the
#: option is for research (docs/reproductions/safe.md, "An unknown constant in g's model")
OFFSET_G_CAUTION = (
    "offset_g is on: a research option, not a safe default. With it the method evaluated "
    "settings above the limit on 43 of 100 random test problems (docs/reproductions/safe.md, "
    "'An unknown constant in g's model'); do not use it where an unsafe setting does harm"
)


def _settings(problem: Any, options: dict[str, Any]) -> dict[str, Any]:
    s = problem.settings
    kw = {k: s[k] for k in _COMMON_KEYS if k in s}
    # trend_g and cache_mb are options only (never a problem's setting): a study pins their
    # defaults (boloop.study.pinning), so a later default does not change an existing study
    given = {k: v for k, v in options.items() if k in _COMMON_KEYS or k in _OPTION_ONLY}
    kw.update(given)
    if kw.get("fit_hyperparameters") and kw.get("hyperparameters") != "paper":
        # learning as a user would: the paper's kernels and seed count are not known to them
        for key in ("kernel_f", "kernel_g", "n_initial"):
            if key not in given:
                kw.pop(key, None)
    return kw


#: one-line docs of the safe options (the method table; types and defaults are read from the
#: constructors, see :func:`boloop.algorithms.registry.options_from`)
_DOCS = {
    "kernel_f": "kernel of the objective f (fixed hyperparameters; None: fitted)",
    "kernel_g": "kernel of the safety function g (fixed hyperparameters; None: fitted)",
    "noise_f": "noise variance of f",
    "noise_g": "noise variance of g",
    "sqrt_beta_f": "beta^(1/2) of f's confidence bounds (a number or a BetaSchedule)",
    "sqrt_beta_g": "beta^(1/2) of g's confidence bounds (a number or a BetaSchedule)",
    "n_initial": "evaluations at the safe seeds before the first iteration",
    "fit_hyperparameters": "learn the kernels' hyperparameters from the data",
    "hyperparameters": "how they are learned: 'learned' (safe default), 'paper' or 'plain'",
    "variance_prior_f": "prior scale of f's output variance when fitted",
    "variance_prior_g": "prior scale of g's output variance when fitted",
    "lengthscale_prior": "prior scale of the length-scales when fitted",
    "keep_certified": "actions once certified safe stay in the safe set",
    "min_lengthscale_g": (
        "your assumption: g's length-scales are at least this fraction of each axis's range "
        "(a number, or one per axis: monotone first); learned kernels only; if g changes faster "
        "the method can certify unsafe actions"
    ),
    "trend_g": (
        "g's learned model has a linear trend in s of unknown slope (false: the Matern kernel "
        "alone, the default before); learned hyperparameters without kernel_g only"
    ),
    "offset_g": (
        "with the trend in s: g's learned model has an unknown constant as well, so z's "
        "amplitude is learned from the data's variation, not their distance from h; measured "
        "unsafe on many random problems (research only)"
    ),
    "skip_measured_seeds": (
        "a safe seed already measured (a continued study's answers, an added measurement) is "
        "not asked again"
    ),
    "cache_mb": "memory for the cached cross-covariances before the grid is streamed",
}
_THRESHOLD = Option("threshold", "float", None, "safety limit h (default: the problem's)")
_MISSPECIFICATION = Option(
    "misspecification", "float", 1.0, "c: L_f times c and L'_g over c (Fig. 4); not used here"
)
_SAFE_OPTIONS = (
    *options_from(MSafeOpt, _DOCS, only=(*_COMMON_KEYS, *_OPTION_ONLY)),
    _THRESHOLD,
)
_MSAFEOPT_OPTIONS = (
    *_SAFE_OPTIONS,
    Option("L_f", "float", 1.0, "Lipschitz constant of f in s (default: the problem's)"),
    Option("L_g_prime", "float", 1.0, "lower bound L'_g of g's slope in s (the problem's)"),
    Option("case", "str | int", None, "'1', '2', '3a' or '3b' (default: the method id's case)"),
    Option("acquisition", "str", "default", "the case's acquisition rule ('default')"),
    Option("misspecification", "float", 1.0, "c: use L_f times c and L'_g over c (Fig. 4)"),
)


def _msafeopt_factory(case: str) -> Any:
    def factory(problem: Any, seed: Any, **options: Any) -> MSafeOpt:
        s = problem.settings
        c = float(options.pop("misspecification", 1.0))
        kw = _settings(problem, options)
        return MSafeOpt(
            problem.space,
            options.get("threshold", s["threshold"]),
            L_f=float(options.get("L_f", s.get("L_f", 1.0))) * c,
            L_g_prime=float(options.get("L_g_prime", s.get("L_g_prime", 1.0))) / c,
            case=options.get("case", case),
            acquisition=options.get("acquisition", "default"),
            seed=seed,
            **kw,
        )

    return factory


register_method(
    "m-safeopt",
    "safe",
    "M-SafeOpt Case 1: global safe optimum (Losalka & Scarlett 2024, Alg. 1)",
    options=_MSAFEOPT_OPTIONS,
)(_msafeopt_factory("1"))
register_method(
    "m-safeopt-x",
    "safe",
    "M-SafeOpt Case 2: best safe s for every x (Losalka & Scarlett 2024)",
    options=_MSAFEOPT_OPTIONS,
)(_msafeopt_factory("2"))
register_method(
    "m-safeucb",
    "safe",
    "M-SafeOpt Case 3b = M-SafeUCB: f = g increasing (Losalka & Scarlett 2023)",
    options=_MSAFEOPT_OPTIONS,
)(_msafeopt_factory("3b"))


@register_method(
    "safeopt-mc",
    "safe",
    "SafeOpt-MC as run in Losalka & Scarlett 2024 (B.2.2)",
    options=(*_SAFE_OPTIONS, _MISSPECIFICATION),
)
def _safeopt_mc(problem: Any, seed: Any, **options: Any) -> SafeOptMC:
    options.pop("misspecification", None)
    return SafeOptMC(
        problem.space,
        options.get("threshold", problem.settings["threshold"]),
        seed=seed,
        **_settings(problem, options),
    )


@register_method(
    "predvar",
    "safe",
    "PredVar for f and g as run in Losalka & Scarlett 2024 (B.2.2)",
    options=(*_SAFE_OPTIONS, _MISSPECIFICATION),
)
def _predvar(problem: Any, seed: Any, **options: Any) -> PredVar:
    options.pop("misspecification", None)
    return PredVar(
        problem.space,
        options.get("threshold", problem.settings["threshold"]),
        seed=seed,
        **_settings(problem, options),
    )
