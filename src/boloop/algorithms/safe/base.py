"""What M-SafeOpt and its baselines share: :class:`_SafePolicy`.

Losalka & Scarlett, "No-Regret Algorithms for Safe Bayesian Optimization with Monotonicity
Constraints", AISTATS 2024 (spec ``shared/specs/msafeopt.md``). :class:`_SafePolicy` holds the
options and the state of a safe policy and its ask/tell loop: the safe seeds at ``s = 0``, the
per-round bounds and sets of Algorithm 1 (:meth:`_SafePolicy.state`, from
:mod:`boloop.algorithms._safe_core`), the certified safe boundary (eq. 14, kept as a union over
rounds), a measured ``g > h``, the recommendation and ``describe()``. A subclass chooses the
action (:meth:`_SafePolicy._select`). Its other parts are mixins beside it:
:class:`~boloop.algorithms.safe.models._SafeModels` (the models of ``f`` and ``g - h``),
:class:`~boloop.algorithms.safe.stall._SafeStall` (the stall warning, the noise check) and
:class:`~boloop.algorithms.safe.checks._SafeInputs` (``initial_data``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from boloop.algorithms._safe_core import Bounds, SafeSets, Selection, safe_sets
from boloop.algorithms.safe.checks import _resolve_learning, _SafeInputs, _schedule
from boloop.algorithms.safe.models import (
    OFFSET_G_CAUTION,
    GridPosterior,
    _SafeModels,
    trend_kernel_g,
)
from boloop.algorithms.safe.stall import _SafeStall
from boloop.confidence import BetaSchedule
from boloop.errors import InvalidInputError
from boloop.gp.exact import ExactGP
from boloop.gp.hyperparameters import (
    HyperparameterLearning,
    check_min_lengthscale,
    initial_design_size,
    space_filling_design,
)
from boloop.gp.kernels import Kernel
from boloop.queries import BasePolicy, Evaluate, Query
from boloop.recommendations import SafeRecommendation
from boloop.spaces import SafeSpace

logger = logging.getLogger("boloop")


class _SafePolicy(_SafeModels, _SafeStall, _SafeInputs, BasePolicy):
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

    def over_limit(self) -> list[dict[str, Any]]:
        """Every measured ``g > h``: ``{"query", "point", "g", "h"}`` in the order measured."""
        return [dict(e) for e in self._over_limit]

    # ------------------------------------------------------------------ per-round sets
    def _constants(self) -> tuple[float | None, float | None]:
        """``(L_f, L'_g)`` for the shared sets (None: unknown); the baselines use neither."""
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
