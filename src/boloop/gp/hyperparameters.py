"""Hyperparameters a method can trust when nobody knows the kernel: one shared mechanism.

Every paper of this library assumes a known kernel; a real user never has one. Plain
maximum-likelihood refits from a one-point start are confidently wrong on small data (the output
variance collapses onto the noise, or the length-scales run to a bound): the posterior standard
deviation is then tiny everywhere and an acquisition built on it stops exploring (issue 18; the
measurements are in ``docs/hyperparameters.md``). :class:`HyperparameterLearning` is what the
families call instead. Its parts, each from the literature:

* **Scale.** Inputs are measured in units of the space's box (the unit cube of Hvarfner et al.,
  without moving the data: priors and bounds are scaled per axis by the box's width), outputs in
  units of the data: the output variance's prior is centred on the sample variance of ``y`` and
  the noise's on a fraction of it (BoTorch's ``Standardize`` outcome transform, done through the
  priors so that the GP keeps the user's units).
* **Priors** (maximum a posteriori instead of maximum likelihood). Length-scales: the
  dimension-scaled log-normal of Hvarfner, Hellsten and Nardi, "Vanilla Bayesian Optimization
  Performs Great in High Dimensions" (ICML 2024), ``log(l_j / w_j) ~ N(sqrt2 + log(d) / 2, 3)``
  with a floor ``l_j >= 0.025 w_j``; noise variance ``log(noise / s_y^2) ~ N(-4, 1)`` with a floor
  ``1e-4 s_y^2`` (BoTorch's defaults for standardised outputs); output variance
  ``log(variance / s_y^2) ~ N(0, 1)``; the slope variance of a linear trend along axis ``a``
  (:class:`~boloop.gp.kernels.StationaryPlusTrend`) ``log(trend_variance w_a^2 / s_y^2) ~ N(0, 1)``
  (a change over the box of the data's scale); the prior variance of its intercept
  ``log(offset_variance / m_y^2) ~ N(0, 1)`` with ``m_y^2`` the mean square of ``y`` about the
  GP's prior mean (an offset of the data's distance from that mean, not of their spread).
* **A space-filling initial design** sized to the dimension: :func:`initial_design_size` points of
  a scrambled Sobol sequence (snapped to distinct candidates on a finite set) instead of one random
  point, so that the first fit sees the spread of the function.
* **Length-scales that cannot outrun the data** (``shrink``, default ``cap0 = 1``): an upper
  bound on every length-scale that shrinks as data arrive, ``l_j <= w_j * cap0 * (n0 / n)^(1 / (d + 1))`` for
  ``n > n0``, after A-GP-UCB (Berkenkamp, Schoellig and Krause, "No-regret Bayesian optimization
  with unknown hyperparameters", JMLR 2019, Sec. 4), which shrinks the length-scales over time so
  that the true function is eventually in the model's RKHS.
* **A conservative set** (:meth:`HyperparameterLearning.conservative`): the shortest common
  scaling of the MAP length-scales whose log posterior is within a likelihood ratio
  ``0.5 chi2_p(level)`` of the MAP's, i.e. the worst case (widest confidence bounds away from the
  data) over the hyperparameters the data cannot rule out. For families whose promise is safety.

Refits are warm-started from the previous optimum; a few restarts drawn from the priors are added
at the first fit and then each time the data have doubled.

:meth:`HyperparameterLearning.plain` is the unguarded maximum-likelihood refit (no priors, wide
bounds, no initial design), only for an explicit request; it logs a warning when used.

Shapes: inputs (n, d), targets (n,).
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from boloop._validation import as_rng
from boloop.errors import InvalidInputError
from boloop.gp.conservative import likelihood_ratio_edge
from boloop.gp.exact import ExactGP, LogNormalPrior
from boloop.gp.kernels import SquaredExponential, StationaryKernel, StationaryPlusTrend

__all__ = [
    "HyperparameterLearning",
    "FitReport",
    "initial_design_size",
    "check_min_lengthscale",
    "space_filling_design",
    "default_kernel",
]

logger = logging.getLogger("boloop")

_SQRT2 = math.sqrt(2.0)
_SQRT3 = math.sqrt(3.0)


def initial_design_size(dim: int) -> int:
    """Points of the initial design for a ``dim``-dimensional space: ``max(5, 2 dim)``.

    Twice the dimension with a floor of five, the usual choice of Sobol initialisation in BO
    practice (Ax's default generation strategy); the level-set paper's single random point
    (Inatsu et al., Sec. 5) is kept for the reproductions.
    """
    dim = int(dim)
    if dim < 1:
        raise InvalidInputError(f"dim must be >= 1, got {dim}")
    return max(5, 2 * dim)


def space_filling_design(
    lower: Any,
    upper: Any,
    n: int,
    rng: int | np.random.Generator | None = None,
    candidates: np.ndarray | None = None,
    exclude: np.ndarray | None = None,
) -> np.ndarray:
    """A scrambled Sobol design of ``n`` points in the box ``[lower, upper]`` (each (d,)).

    Returns points (n, d); with ``candidates`` (N, d) given, returns the indices (n,) of distinct
    candidates, each the nearest (in box-scaled distance) not yet taken to a Sobol point, skipping
    the boolean mask ``exclude`` (N,). Deterministic given ``rng``.
    """
    lo = np.asarray(lower, dtype=np.float64).reshape(-1)
    hi = np.asarray(upper, dtype=np.float64).reshape(-1)
    d = lo.size
    n = int(n)
    if n < 0:
        raise InvalidInputError(f"n must be >= 0, got {n}")
    gen = as_rng(rng)
    width = np.where(hi > lo, hi - lo, 1.0)
    m = max(0, math.ceil(math.log2(max(n, 1))))
    from scipy.stats import qmc  # lazily: scipy.stats costs a study command ~0.1 s to import

    sobol = qmc.Sobol(d, scramble=True, seed=gen)
    U = sobol.random_base2(m)[:n]
    if candidates is None:
        return lo + U * (hi - lo)
    C = (np.asarray(candidates, dtype=np.float64) - lo) / width
    taken = np.zeros(C.shape[0], dtype=bool) if exclude is None else np.array(exclude, dtype=bool)
    if n > int(np.count_nonzero(~taken)):
        raise InvalidInputError(f"cannot pick {n} distinct candidates out of {int((~taken).sum())}")
    out = np.empty(n, dtype=np.intp)
    for k in range(n):
        dist = np.sum((C - U[k]) ** 2, axis=1)
        dist[taken] = np.inf
        i = int(np.argmin(dist))
        out[k] = i
        taken[i] = True
    return out


def check_min_lengthscale(value: Any, dim: int | None, name: str = "min_lengthscale") -> Any:
    """Validate a smoothness floor given as a fraction of each axis's range: one number or one per
    axis (``dim`` of them; any length when ``dim`` is None), each finite in ``(0, 1]``. Returns a
    float or a tuple of floats; raises :class:`InvalidInputError` otherwise."""
    single = isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)
    if single:
        vals = [float(value)]
    elif isinstance(value, list | tuple | np.ndarray) and not isinstance(value, str):
        vals = []
        for v in np.asarray(value, dtype=object).reshape(-1):
            if isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Real):
                raise InvalidInputError(f"{name} must be numbers, got {value!r}")
            vals.append(float(v))
        if not vals:
            raise InvalidInputError(f"{name} must not be empty")
        if dim is not None and len(vals) not in (1, int(dim)):
            raise InvalidInputError(
                f"{name} needs one number or {int(dim)} (one per axis), got {len(vals)}"
            )
    else:
        raise InvalidInputError(
            f"{name} must be a number or a list of numbers (fractions of each axis's range), "
            f"got {value!r}"
        )
    for v in vals:
        if not (math.isfinite(v) and 0 < v <= 1):
            raise InvalidInputError(
                f"{name} values are fractions of each axis's range, in (0, 1]; got {value!r}"
            )
    return vals[0] if single else tuple(vals)


def default_kernel(width: Any) -> SquaredExponential:
    """Squared-exponential ARD kernel for a box of side lengths ``width`` (d,), started at the
    mode of the length-scale prior capped at the box (``min(mode, 1) * width``), variance 1."""
    w = np.asarray(width, dtype=np.float64).reshape(-1)
    d = w.size
    mu = _SQRT2 + 0.5 * math.log(d)
    mode = math.exp(mu - 3.0)  # mode of a log-normal(mu, sigma^2 = 3)
    return SquaredExponential(lengthscale=min(mode, 1.0) * w, variance=1.0)


@dataclass(frozen=True)
class FitReport:
    """What one call of :meth:`HyperparameterLearning.fit` did.

    ``refitted`` is False when the schedule skipped the fit (hyperparameters unchanged) or the fit
    failed (``error`` holds the message, the previous hyperparameters are kept).
    """

    refitted: bool
    n: int
    variance: float
    lengthscale: np.ndarray
    noise_variance: float
    log_posterior: float = math.nan  # at the optimum the fit found (ExactGP.fit_log_posterior)
    error: str | None = None


@dataclass(frozen=True)
class HyperparameterLearning:
    """Settings of the shared hyperparameter mechanism (see the module docstring).

    Parameters
    ----------
    priors:
        Use the scaled priors (MAP). ``False`` is maximum likelihood.
    lengthscale_prior:
        ``(mu0, sigma0)`` of ``log(l_j / w_j) ~ N(mu0 + log(d) / 2, sigma0^2)`` (Hvarfner et al.
        2024: ``(sqrt2, sqrt3)``).
    lengthscale_bounds:
        ``(low, high)`` of ``l_j / w_j``.
    variance_prior_sd:
        Standard deviation of ``log(variance / s_y^2)``.
    noise_prior:
        ``(mu, sigma)`` of ``log(noise / s_y^2) ~ N(mu, sigma^2)`` (BoTorch: ``(-4, 1)``).
    noise_floor:
        Lower bound of ``noise / s_y^2`` (BoTorch: 1e-4).
    initial_design:
        Use a space-filling initial design of :func:`initial_design_size` points.
    shrink:
        ``cap0`` (default 1), or ``None`` for no cap: ``l_j / w_j <= cap0 * (n0 / n)^(1 / (d + 1))``
        (``cap0`` for ``n <= n0``)
        (A-GP-UCB-style shrinking length-scales; ``n0`` the initial design size).
    conservative_level:
        Level of the likelihood-ratio set of :meth:`conservative`.
    n_restarts:
        Extra starts drawn from the priors, used at the first fit (``last_fit_n < n0``) and at
        the first refit after ``n`` passes a power of two (8, 16, 32, ...); other refits only
        warm-start from the previous optimum.
    maxiter:
        L-BFGS-B iterations per start.
    ftol:
        L-BFGS-B's relative tolerance on the log posterior (hyperparameters need no more).
    min_points:
        No fit below this many observations (the starting hyperparameters are used).
    refit_growth:
        Refit schedule (:meth:`due`): after every observation while ``n <= 2 n0``, then whenever
        the data have grown by this fraction since the last fit (0: after every observation).
        Between refits the GP is conditioned on new data with fixed hyperparameters (a Cholesky
        append), which is what makes a step cheap.
    warn:
        Log a warning whenever an unguarded fit is used (set by :meth:`plain`).
    min_lengthscale:
        A smoothness the user asserts: ``l_j / w_j >= min_lengthscale_j`` for every length-scale
        (one number for all axes or one per axis, each in ``(0, 1]``), raising the lower bound
        ``lengthscale_bounds[0]`` where it is larger (and the upper bound to at least twice it, so
        that a shrinking cap never contradicts it). ``None`` (default): no such assumption. It is
        an assumption, not something learned: if the function changes faster, a model held to it
        is overconfident between the data.
    collapse_replicates:
        Evaluate the log posterior on the means of replicated inputs plus their scatter
        (:mod:`boloop.gp.marginal_likelihood`): the same function to rounding, a ``u x u``
        instead of ``n x n`` factorisation when a policy re-queries points (``u`` distinct
        inputs). Off by default: the last bits of a fit can change a fixed-seed trace. Applies to
        stationary kernels with free length-scales; other fits use the full likelihood.
    """

    priors: bool = True
    lengthscale_prior: tuple[float, float] = (_SQRT2, _SQRT3)
    lengthscale_bounds: tuple[float, float] = (0.025, 1e3)
    variance_prior_sd: float = 1.0
    noise_prior: tuple[float, float] = (-4.0, 1.0)
    noise_floor: float = 1e-4
    initial_design: bool = True
    shrink: float | None = 1.0
    conservative_level: float = 0.95
    n_restarts: int = 2
    maxiter: int = 100
    ftol: float | None = 1e-6
    min_points: int = 2
    refit_growth: float = 0.1
    warn: bool = False
    collapse_replicates: bool = False
    min_lengthscale: float | tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        lo, hi = self.lengthscale_bounds
        if self.min_lengthscale is not None:
            object.__setattr__(
                self, "min_lengthscale", check_min_lengthscale(self.min_lengthscale, None)
            )
        if not (0 < lo < hi):
            raise InvalidInputError(f"lengthscale_bounds must satisfy 0 < low < high, got {lo, hi}")
        if not self.noise_floor > 0:
            raise InvalidInputError(f"noise_floor must be positive, got {self.noise_floor}")
        if self.shrink is not None and not self.shrink > 0:
            raise InvalidInputError(f"shrink must be positive or None, got {self.shrink}")
        if not (self.refit_growth >= 0 and math.isfinite(self.refit_growth)):
            raise InvalidInputError(f"refit_growth must be >= 0, got {self.refit_growth}")
        if not 0 < self.conservative_level < 1:
            raise InvalidInputError("conservative_level must be in (0, 1)")
        for name in ("n_restarts", "maxiter", "min_points"):
            v = getattr(self, name)
            if isinstance(v, bool) or int(v) != v or v < (0 if name == "n_restarts" else 1):
                raise InvalidInputError(f"{name} must be a positive integer, got {v!r}")

    def lengthscale_floor(self, dim: int) -> np.ndarray:
        """Lower bounds of ``l_j / w_j`` for ``dim`` axes (d,): ``lengthscale_bounds[0]``, raised
        to ``min_lengthscale`` where that is given."""
        lo = np.full(int(dim), float(self.lengthscale_bounds[0]))
        if self.min_lengthscale is None:
            return lo
        m = np.asarray(self.min_lengthscale, dtype=np.float64).reshape(-1)
        if m.size not in (1, lo.size):
            raise InvalidInputError(
                f"min_lengthscale has {m.size} values for a space of dimension {lo.size}"
            )
        return np.maximum(lo, m)

    # ------------------------------------------------------------------ presets
    @classmethod
    def plain(cls) -> HyperparameterLearning:
        """Unguarded maximum-likelihood refits (the behaviour before issue 18): no priors, wide
        bounds, no initial design. Only on explicit request; logs a warning when used."""
        return cls(
            priors=False,
            lengthscale_bounds=(1e-5, 1e5),
            noise_floor=1e-10,
            initial_design=False,
            shrink=None,
            n_restarts=1,
            maxiter=200,
            ftol=None,
            min_points=3,
            refit_growth=0.0,
            warn=True,
        )

    def with_options(self, **changes: Any) -> HyperparameterLearning:
        """A copy with some settings changed."""
        return replace(self, **changes)

    # ------------------------------------------------------------------ design
    def initial_design_size(self, dim: int) -> int:
        """Initial design size for ``dim`` (1 when ``initial_design`` is off)."""
        return initial_design_size(dim) if self.initial_design else 1

    # ------------------------------------------------------------------ priors and bounds
    def _scale(self, y: np.ndarray) -> float:
        """``s_y^2``: the sample variance of the targets (1 with fewer than 2 distinct values)."""
        if y.size < 2:
            return 1.0
        v = float(np.var(y))
        return v if v > 0 and math.isfinite(v) else 1.0

    def priors_for(
        self, gp: ExactGP, width: Any, y: np.ndarray | None = None
    ) -> dict[str, LogNormalPrior]:
        """The priors of ``gp``'s hyperparameters for a box of side lengths ``width`` (d,) and
        targets ``y`` (n,) (default: the GP's), keyed as :class:`ExactGP` expects."""
        if not self.priors:
            return {}
        y = gp.y if y is None else np.asarray(y, dtype=np.float64)
        s2 = self._scale(y)
        w = np.asarray(width, dtype=np.float64).reshape(-1)
        d = w.size
        mu0, sd0 = self.lengthscale_prior
        out: dict[str, LogNormalPrior] = {}
        names = gp.kernel.theta_names
        ls_names = [n for n in names if n.startswith("lengthscale")]
        for j, name in enumerate(ls_names):
            wj = w[j] if len(ls_names) == d else float(np.exp(np.mean(np.log(w))))
            out[name] = LogNormalPrior(mu0 + 0.5 * math.log(d) + math.log(wj), sd0)
        if "variance" in names:
            out["variance"] = LogNormalPrior(math.log(s2), self.variance_prior_sd)
        if "trend_variance" in names:
            # a linear trend along axis a (StationaryPlusTrend): its change over the box,
            # slope * w_a, has the data's scale, log(trend_variance w_a^2 / s_y^2) ~ N(0, sd)
            wa = self._trend_width(gp, w)
            out["trend_variance"] = LogNormalPrior(math.log(s2 / wa**2), self.variance_prior_sd)
        if "offset_variance" in names:
            # an unknown constant (StationaryPlusTrend's intercept): of the size of the data's
            # distance from the prior mean, log(offset_variance / m_y^2) ~ N(0, sd)
            out["offset_variance"] = LogNormalPrior(
                math.log(self._second_moment(gp, y)), self.variance_prior_sd
            )
        if gp.fit_noise:
            out["noise"] = LogNormalPrior(self.noise_prior[0] + math.log(s2), self.noise_prior[1])
        return out

    @staticmethod
    def _second_moment(gp: ExactGP, y: np.ndarray) -> float:
        """``m_y^2``: the mean square of ``y`` about ``gp``'s prior mean (1 without data or
        when it is 0)."""
        if y.size == 0:
            return 1.0
        m2 = float(np.mean((y - gp.mean_constant) ** 2))
        return m2 if m2 > 0 and math.isfinite(m2) else 1.0

    @staticmethod
    def _trend_width(gp: ExactGP, width: np.ndarray) -> float:
        """The box's width along the axis of ``gp``'s linear trend (1 if unknown)."""
        axis = int(getattr(gp.kernel, "axis", 0))
        return float(width[axis]) if axis < width.size and width[axis] > 0 else 1.0

    def lengthscale_cap(self, n: int, dim: int) -> float:
        """Upper bound of ``l_j / w_j`` after ``n`` observations (``inf`` without ``shrink``)."""
        hi = self.lengthscale_bounds[1]
        if self.shrink is None:
            return hi
        n0 = initial_design_size(dim)
        cap = self.shrink * (n0 / max(n, n0)) ** (1.0 / (dim + 1))
        return float(min(hi, max(cap, 2 * self.lengthscale_bounds[0])))

    def bounds_for(
        self, gp: ExactGP, width: Any, y: np.ndarray | None = None
    ) -> dict[str, tuple[float, float]]:
        """Bounds (natural units) of ``gp``'s hyperparameters, keyed as :meth:`ExactGP.fit` takes."""
        y = gp.y if y is None else np.asarray(y, dtype=np.float64)
        if not self.priors and self.shrink is None and self.min_lengthscale is None:
            return {}  # plain maximum likelihood: the GP's own wide bounds
        s2 = self._scale(y)
        w = np.asarray(width, dtype=np.float64).reshape(-1)
        floor = self.lengthscale_floor(w.size)
        hi = self.lengthscale_cap(int(y.size), w.size)
        out: dict[str, tuple[float, float]] = {}
        ls_names = [n for n in gp.kernel.theta_names if n.startswith("lengthscale")]
        for j, name in enumerate(ls_names):
            ard = len(ls_names) == w.size
            wj = w[j] if ard else float(np.exp(np.mean(np.log(w))))
            lo_j = float(floor[j] if ard else np.max(floor))
            # a user's floor wins over the shrinking cap (default: the cap is >= 2 lo already)
            out[name] = (lo_j * wj, max(hi, 2 * lo_j) * wj)
        if self.priors:
            out["variance"] = (1e-6 * s2, 1e6 * s2)
            if "trend_variance" in gp.kernel.theta_names:
                wa2 = self._trend_width(gp, w) ** 2
                out["trend_variance"] = (1e-6 * s2 / wa2, 1e6 * s2 / wa2)
            if "offset_variance" in gp.kernel.theta_names:
                m2 = self._second_moment(gp, y)
                out["offset_variance"] = (1e-6 * m2, 1e6 * m2)
        if gp.fit_noise:
            out["noise"] = (max(self.noise_floor * s2, gp.noise_floor), max(1e2 * s2, 1e-300))
        return out

    def _prior_starts(
        self, gp: ExactGP, priors: Mapping[str, LogNormalPrior], k: int, rng: np.random.Generator
    ) -> np.ndarray:
        """``k`` packed starting points (k, p): prior draws where there is a prior, the current
        value elsewhere."""
        base = gp.free_parameters()
        names = [n for n, free in zip(gp.kernel.theta_names, gp.kernel.free_mask) if free]
        if gp.fit_noise:
            names.append("noise")
        out = np.tile(base, (k, 1))
        for i, name in enumerate(names):
            prior = priors.get(name)
            if prior is not None:
                out[:, i] = rng.normal(prior.mu, prior.sigma, size=k)
        return out

    # ------------------------------------------------------------------ fitting
    def due(self, n: int, last_fit_n: int, dim: int) -> bool:
        """Whether to refit with ``n`` observations when the last fit saw ``last_fit_n``.

        Not while a space-filling initial design is still being answered (its points do not
        depend on the model), then after every answer while ``n <= 2 n0``, then on growth.
        """
        if n < self.min_points or n <= last_fit_n:
            return False
        if self.initial_design and n < initial_design_size(dim):
            return False
        if n <= 2 * initial_design_size(dim) or last_fit_n < self.min_points:
            return True
        return n - last_fit_n >= max(1.0, self.refit_growth * last_fit_n)

    def fit(
        self,
        gp: ExactGP,
        width: Any,
        *,
        X: Any = None,
        y: Any = None,
        rng: int | np.random.Generator | None = None,
        last_fit_n: int = 0,
    ) -> FitReport:
        """Refit ``gp``'s hyperparameters (MAP under the scaled priors, within the bounds).

        ``width`` (d,) is the side lengths of the space's box (inputs are measured in its units).
        With ``X, y`` the data are replaced first. Randomness (restarts) comes from ``rng``.
        ``last_fit_n`` is the number of observations of the previous fit (it decides whether
        restarts are due; 0: they are). On a failed fit the previous hyperparameters are kept
        (logged) and ``refitted`` is False.
        """
        if X is not None or y is not None:
            gp.set_data(X, y)
        n = gp.n
        k = gp.kernel
        ls = np.atleast_1d(np.asarray(getattr(k, "lengthscale", np.nan), dtype=np.float64))
        if n < self.min_points:
            return FitReport(
                False, n, float(getattr(k, "variance", math.nan)), ls, gp.noise_variance
            )
        if self.warn:
            logger.warning(
                "hyperparameters refitted by plain maximum likelihood, without priors or an "
                "initial design: the model may become confidently wrong on few data"
            )
        gen = as_rng(rng)
        priors = self.priors_for(gp, width)
        gp.priors = dict(priors)
        bounds = self.bounds_for(gp, width)
        n0 = initial_design_size(int(np.size(width)))
        restart = self.n_restarts > 0 and (
            int(last_fit_n) < n0 or n.bit_length() > max(int(last_fit_n), 0).bit_length()
        )
        starts = None
        if priors and restart:
            starts = self._prior_starts(gp, priors, self.n_restarts, gen)
        try:
            gp.fit(
                n_restarts=self.n_restarts if restart else 0,
                seed=int(gen.integers(2**31)),
                maxiter=self.maxiter,
                ftol=self.ftol,
                bounds=bounds,
                starts=starts,
                collapse_replicates=self.collapse_replicates,
            )
        except Exception as exc:  # keep the previous hyperparameters
            logger.warning("hyperparameter fit failed, keeping the previous ones: %s", exc)
            return FitReport(
                False,
                n,
                float(getattr(k, "variance", math.nan)),
                ls,
                gp.noise_variance,
                error=str(exc),
            )
        k = gp.kernel
        return FitReport(
            True,
            n,
            float(getattr(k, "variance", math.nan)),
            np.atleast_1d(np.asarray(getattr(k, "lengthscale", np.nan), dtype=np.float64)),
            gp.noise_variance,
            float(gp.fit_log_posterior),  # the optimum, as the fit evaluated it
        )

    def conservative(self, gp: ExactGP, *, level: float | None = None) -> float:
        """Shorten ``gp``'s length-scales to the worst case the data cannot rule out.

        Finds the smallest factor ``c`` in ``(0, 1]`` such that the log posterior with every
        length-scale multiplied by ``c`` (the other hyperparameters as fitted) is at least the
        current one minus ``0.5 chi2_p(level)``, ``p`` the number of free hyperparameters (the
        likelihood-ratio confidence set of the hyperparameters), never below the length-scale
        floor. Sets the kernel to it, refactorises, and returns ``c``. Call after :meth:`fit`.
        """
        kern = gp.kernel
        if (
            not isinstance(kern, StationaryKernel | StationaryPlusTrend)
            or gp.n < 2
            or "lengthscale" in kern.fixed
        ):
            return 1.0
        level = self.conservative_level if level is None else float(level)
        p0 = gp.free_parameters()
        names = [nm for nm, free in zip(kern.theta_names, kern.free_mask) if free]
        ls_idx = np.array([i for i, nm in enumerate(names) if nm.startswith("lengthscale")])
        best = gp.log_posterior(p0)[0]
        from scipy.stats import chi2  # lazily, as above

        drop = 0.5 * float(chi2.ppf(level, df=p0.size))

        # at most a hundredfold shortening
        log_c = likelihood_ratio_edge(gp, p0, ls_idx, best=best, drop=drop, lower=math.log(1e-2))
        c = math.exp(log_c)
        theta = kern.theta.copy()
        theta[np.array([nm.startswith("lengthscale") for nm in kern.theta_names])] += log_c
        kern.theta = theta
        gp.set_data(gp.X.copy(), gp.y.copy())
        return c
