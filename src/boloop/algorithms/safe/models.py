"""The models of the safe family: ``f`` and ``g - h`` as GPs on the action grid ``(s, x)``.

Losalka & Scarlett, "No-Regret Algorithms for Safe Bayesian Optimization with Monotonicity
Constraints", AISTATS 2024 (spec ``shared/specs/msafeopt.md``). Here:

* :class:`GridPosterior` -- a GP's posterior mean and standard deviation on every grid action,
  cached or streamed;
* :func:`trend_kernel_g` -- the kernel of ``g - h`` of the learned default (a trend in ``s``) and
  :data:`OFFSET_G_CAUTION`, the warning of its research option ``offset_g``;
* :class:`_SafeModels` -- the part of :class:`~boloop.algorithms.safe.base._SafePolicy` that
  builds the models (:meth:`~_SafeModels._make_gp`), conditions them on each measurement
  (:meth:`~_SafeModels._append`), learns their hyperparameters (:meth:`~_SafeModels._learn`:
  ``g`` to the conservative edge of its likelihood-ratio set), and gives their confidence bounds
  on the grid (:meth:`~_SafeModels._bounds`, eq. 10-11) with the one-level cap while ``g``'s scale
  along ``s`` is unknown (:meth:`~_SafeModels._level_cap`).

Why the models are what they are (safety from data, never from the prior; the learned default)
is in the package's docstring (:mod:`boloop.algorithms.safe`).
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from boloop._validation import positive
from boloop.algorithms._safe_core import Bounds
from boloop.confidence import BetaSchedule
from boloop.errors import InvalidInputError
from boloop.gp.cache import CandidatePosterior
from boloop.gp.conservative import axiswise_conservative
from boloop.gp.exact import ExactGP, LogNormalPrior
from boloop.gp.hyperparameters import HyperparameterLearning
from boloop.gp.kernels import Kernel, Matern, StationaryKernel, StationaryPlusTrend
from boloop.spaces import SafeSpace

__all__ = ["GridPosterior", "trend_kernel_g", "OFFSET_G_CAUTION"]

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


#: what a study with ``offset_g`` on says in its warnings, and the log when it is built: the
#: option is for research (docs/reproductions/safe.md, "An unknown constant in g's model")
OFFSET_G_CAUTION = (
    "offset_g is on: a research option, not a safe default. With it the method evaluated "
    "settings above the limit on 43 of 100 random test problems (docs/reproductions/safe.md, "
    "'An unknown constant in g's model'); do not use it where an unsafe setting does harm"
)


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


class _SafeModels:
    """The models of :class:`~boloop.algorithms.safe.base._SafePolicy` (a mixin: it works on the
    policy's own state): built, conditioned on each measurement, learned, and their bounds on the
    grid. What it needs from the policy is declared below (annotations only: no attribute is
    created here)."""

    # set by BasePolicy.__init__
    rng: np.random.Generator
    # set by _SafePolicy.__init__
    space: SafeSpace
    threshold: float
    sqrt_beta_f: BetaSchedule
    sqrt_beta_g: BetaSchedule
    fit_hyperparameters: bool
    fit_restarts: int
    learning: HyperparameterLearning | None
    _learning_g: HyperparameterLearning | None
    min_lengthscale_g: np.ndarray | None
    width: np.ndarray
    gp_f: ExactGP | None
    gp_g: ExactGP
    post_f: GridPosterior | None
    post_g: GridPosterior
    _last_fit_n: dict[str, int]
    _shape_g: ExactGP | None
    _over_limit: list[dict[str, Any]]
    _cut: np.ndarray
    _floor_binds: list[int]
    _measured_cells: set[tuple[int, int]]
    _one_step: bool
    _levels: set[int]

    if TYPE_CHECKING:  # the other parts' methods, declared for the checker only

        def _grid_index(self, point: np.ndarray) -> tuple[int, int]:
            """_SafeInputs's: the (x row, s level) of a grid action."""
            ...

        def _axis_name(self, k: int) -> str:
            """_SafeStall's: the name of the action's axis ``k``."""
            ...

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
