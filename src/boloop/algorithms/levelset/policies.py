"""The level-set policies (Inatsu et al., Algorithms 1-3) and their baselines: the shared model,
initial design and loop (LevelSetPolicy), randomized straddle (average and max-value loss),
straddle, LSE, MILE, uncertainty sampling, random."""

from __future__ import annotations

import logging
import math
from typing import Any, ClassVar

import numpy as np

from boloop.algorithms.levelset.acquisition import (
    _zero_af_rank,
    _zero_af_rank_and_gradient,
    classify,
    mile_acquisition,
    straddle,
)
from boloop.confidence import UNDECIDED_SD, ChiSquaredBeta, GotovosLSEBeta, undecided
from boloop.errors import InvalidInputError, NotFittedError, QueryStateError
from boloop.gp.cache import CandidatePosterior, FixedPointsMean
from boloop.gp.exact import ExactGP, robust_cholesky
from boloop.gp.hyperparameters import HyperparameterLearning, default_kernel, space_filling_design
from boloop.gp.kernels import Kernel, SquaredExponential, StationaryKernel
from boloop.gp.optimize import refine_on_box
from boloop.gp.posterior_gradient import posterior_with_gradient
from boloop.queries import BasePolicy, Evaluate, Query
from boloop.recommendations import LevelSetEstimate
from boloop.spaces import Box, CandidateSet

logger = logging.getLogger("boloop")


# ---------------------------------------------------------------------------------------------
def _resolve_learning(
    hyperparameters: HyperparameterLearning | str | None, fit: bool
) -> HyperparameterLearning | None:
    """The mechanism for fitted hyperparameters (None when they are fixed)."""
    if hyperparameters is not None and not isinstance(hyperparameters, HyperparameterLearning):
        if hyperparameters not in ("learned", "plain"):
            raise InvalidInputError(
                "hyperparameters must be 'learned', 'plain' or a HyperparameterLearning, "
                f"got {hyperparameters!r}"
            )
    if not fit:
        if hyperparameters is not None:
            raise InvalidInputError(
                "hyperparameters= only applies when they are fitted (kernel=None or "
                "fit_hyperparameters=True)"
            )
        return None
    if isinstance(hyperparameters, HyperparameterLearning):
        return hyperparameters
    if hyperparameters == "plain":
        logger.warning(
            "level-set policy: plain maximum-likelihood hyperparameters requested (no priors, "
            "one random initial point); the model can become confidently wrong and stop exploring"
        )
        return HyperparameterLearning.plain()
    return LEVELSET_LEARNING


#: The level-set family's settings of the shared mechanism: its defaults, with one start drawn
#: from the priors (not two) besides the previous optimum, since the level-set policies restart
#: at every refit (``refit_restarts="every"``), not only when ``n`` passes a power of two: the
#: same global search for about 1.6 times the fit cost instead of 2.5 (issue 18,
#: ``docs/hyperparameters.md``); and replicated inputs collapsed in the log posterior (a policy
#: on a grid re-queries points: on ``levelset/toy`` 105 answers fall on 11-14 of 41 points).
LEVELSET_LEARNING = HyperparameterLearning(n_restarts=1, collapse_replicates=True)


def _finite_float(value: Any, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a number, got {value!r}") from exc
    if not math.isfinite(v):
        raise InvalidInputError(f"{name} must be finite, got {value!r}")
    return v


#: the advice that ends a level-set stall's message, ``where`` the setting farthest from every
#: measurement (the study writes it in parameter names)
FARTHEST_ADVICE = (
    "To check, measure a setting far from all measurements yourself; the farthest is {where}."
)


class LevelSetPolicy(BasePolicy):
    """Shared machinery of the level-set policies: GP, candidate cache, initial design, H_t.

    Parameters
    ----------
    space:
        A :class:`CandidateSet` (finite X), an array (N, d) of candidates, or a :class:`Box`.
    threshold:
        ``theta`` (finite).
    kernel:
        GP covariance with *fixed* hyperparameters (the paper); ``None`` fits a squared-exponential
        ARD kernel, a constant mean and the noise by marginal likelihood (real use).
    noise_variance:
        Observation-noise variance of the GP (paper: Tables 1-2). Default 1e-6 with a fixed kernel,
        the starting value of the fit otherwise.
    fit_hyperparameters:
        Override: fit even with a given kernel (``True``, the kernel is the starting point) or
        never (``False``).
    hyperparameters:
        How hyperparameters are learned when they are fitted: a
        :class:`~boloop.gp.hyperparameters.HyperparameterLearning`, ``"learned"`` (:data:`LEVELSET_LEARNING`,
        also what ``None`` means) or ``"plain"`` (unguarded maximum likelihood, with a warning).
    fit_every:
        Refit at most every ``fit_every`` observations (fitted mode only), on the mechanism's
        schedule (:meth:`HyperparameterLearning.due`).
    refit_restarts:
        Fitted mode only: when a refit adds the mechanism's ``n_restarts`` starts drawn from the
        priors to the previous optimum. ``"every"`` (default): at every refit; ``"doubling"``: the
        mechanism's own schedule (the first fit and when ``n`` passes a power of two). Issue 18:
        warm-started refits between doublings stayed in local optima of the log posterior 9-33
        nats below the multi-start optimum on ``levelset/carrier-lifetime`` (a long length-scale
        with the structure explained as noise, or a length-scale on its floor), and the
        randomized straddle sampled by that wrong model.
    n_initial:
        Number of initial queries that do not count as iterations. Default: 1 random point with
        fixed hyperparameters (the paper); with learned ones, a space-filling design of
        ``max(5, 2 d)`` points (:func:`boloop.gp.hyperparameters.initial_design_size`).
    initial_points:
        Optional fixed initial design (k, d) used instead of random points (``n_initial = k``);
        on a finite space each point must be a candidate.
    allow_repeats:
        Finite spaces: ``False`` removes observed candidates (Sec. 5.3, noise-free data).
    n_candidates, n_fresh, n_refine, refine_maxiter:
        Boxes only: fixed Sobol candidates, fresh uniform candidates per step, L-BFGS-B restarts
        and their iteration cap (see the module docstring).
    widen_when_overconfident:
        Fitted mode only (default ``True``; a fixed kernel is never widened, so the paper's
        traces are unchanged, and ``describe()`` shows whether it applies). When the
        acquisition's choice ``x_t`` has
        a posterior standard deviation below the fitted noise's, ``sigma_{t-1}(x_t) < sigma_n``
        (the model would spend the answer where one more measurement teaches less than the noise
        hides), the length-scales are shortened to the edge of their likelihood-ratio set
        (:meth:`HyperparameterLearning.conservative`) until the next refit and the query is
        chosen again with that model. See :meth:`_widen_if_overconfident`.
    seed:
        Seed or Generator; all randomness (initial design, beta draws, tie breaks, Sobol points)
        comes from it.
    """

    method_id: ClassVar[str] = ""
    family: ClassVar[str] = "levelset"
    accepts_measurements: ClassVar[bool] = True  # observe(points, values) -> add_observations
    iteration_meaning: ClassVar[str] = (
        "the paper's t: one per answered query after the random starting points; "
        "measurements you add are not iterations"
    )
    recommendation_meaning: ClassVar[str] = (
        "the estimated set where the value is above the threshold"
    )
    #: whether the policy works on boxes
    supports_box: ClassVar[bool] = True

    @property
    def betas(self) -> list[float]:
        """Old name of :attr:`sqrt_betas`, the multipliers of sigma per iteration."""
        return self.sqrt_betas

    def __init__(
        self,
        space: CandidateSet | Box | np.ndarray,
        threshold: float,
        *,
        kernel: Kernel | None = None,
        noise_variance: float | None = None,
        fit_hyperparameters: bool | None = None,
        hyperparameters: HyperparameterLearning | str | None = None,
        fit_every: int = 1,
        refit_restarts: str = "every",
        n_initial: int | None = None,
        initial_points: Any = None,
        allow_repeats: bool = True,
        n_candidates: int = 2048,
        n_fresh: int = 256,
        n_refine: int = 2,
        refine_maxiter: int = 10,
        widen_when_overconfident: bool = True,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        if isinstance(space, np.ndarray | list):
            space = CandidateSet(space)
        if not isinstance(space, CandidateSet | Box):
            raise InvalidInputError(
                f"space must be a CandidateSet, an (N, d) array or a Box, got {type(space).__name__}"
            )
        if isinstance(space, Box) and not self.supports_box:
            raise InvalidInputError(
                f"{type(self).__name__} needs a finite candidate set (space), got a Box"
            )
        threshold = _finite_float(threshold, "threshold")
        if kernel is not None and not isinstance(kernel, Kernel):
            raise InvalidInputError(f"kernel must be a boloop Kernel, got {type(kernel).__name__}")
        fit = (kernel is None) if fit_hyperparameters is None else bool(fit_hyperparameters)
        learning = _resolve_learning(hyperparameters, fit)
        if refit_restarts not in _REFIT_RESTARTS:
            raise InvalidInputError(
                f"refit_restarts must be one of {', '.join(map(repr, _REFIT_RESTARTS))}, "
                f"got {refit_restarts!r}"
            )
        if n_initial is None:
            n_initial = learning.initial_design_size(space.dim) if learning is not None else 1
        for name, val, lo in (
            ("n_initial", n_initial, 0),
            ("fit_every", fit_every, 1),
            ("n_candidates", n_candidates, 1),
            ("n_fresh", n_fresh, 0),
            ("n_refine", n_refine, 0),
            ("refine_maxiter", refine_maxiter, 1),
        ):
            if isinstance(val, bool) or int(val) != val or val < lo:
                raise InvalidInputError(f"{name} must be an integer >= {lo}, got {val!r}")
        super().__init__(seed)
        self.space = space
        self.threshold = threshold
        self.finite = isinstance(space, CandidateSet)
        self.fit = fit
        #: the hyperparameter mechanism (None with fixed hyperparameters)
        self.learning = learning
        self.fit_every = int(fit_every)
        self.refit_restarts = refit_restarts
        self.n_initial = int(n_initial)
        self._initial_design: np.ndarray | None = None
        self._initial_index: np.ndarray | None = None
        if initial_points is not None:
            design = space.validate(initial_points, "initial_points")
            self._initial_design = design
            self.n_initial = int(design.shape[0])
            if isinstance(space, CandidateSet):
                self._initial_index = space.index_of(design)
        self.allow_repeats = bool(allow_repeats)
        self.n_fresh = int(n_fresh)
        self.n_refine = int(n_refine)
        self.refine_maxiter = int(refine_maxiter)
        dim = space.dim
        width = space.box.width if self.finite else space.width  # type: ignore[union-attr]
        self._width = np.asarray(width, dtype=np.float64)
        if kernel is None:
            if learning is not None and learning.priors:
                kernel = default_kernel(self._width)
            else:
                kernel = SquaredExponential(lengthscale=0.2 * np.asarray(width), variance=1.0)
        self.kernel = kernel.clone()
        if noise_variance is None:
            noise_variance = 1e-6 if not self.fit else 1e-2
        noise_variance = _finite_float(noise_variance, "noise_variance")
        if noise_variance < 0:
            raise InvalidInputError(f"noise_variance must be >= 0, got {noise_variance!r}")
        self.gp = ExactGP(
            self.kernel,
            noise_variance,
            fit_noise=self.fit,
            noise_floor=1e-8,
            mean="constant" if self.fit else "zero",
        )
        if learning is not None and learning.initial_design:
            self._space_filling_start(space, learning.initial_design_size(space.dim))
        if self.finite:
            self.candidates = space.points  # type: ignore[union-attr]
        else:
            self.candidates = space.sample(int(n_candidates), seed=self.rng, method="sobol")  # type: ignore[union-attr]
        self.cache = CandidatePosterior(self.gp, self.candidates)
        self._fixed_mean: FixedPointsMean | None = None
        self.N = int(self.candidates.shape[0])
        self.observed = np.zeros(self.N, dtype=bool)  # finite: which candidates were observed
        self.sqrt_betas: list[float] = []  # sqrt_beta used at each iteration (NaN if none)
        self._n_obs = 0
        self._n_at_iteration: list[int] = []  # observations behind the posterior of iteration t
        self._initial_ids: set[int] = set()
        self._d = dim
        self._last_fit_n = 0
        if not isinstance(widen_when_overconfident, bool | np.bool_):
            raise InvalidInputError(
                f"widen_when_overconfident must be True or False, got {widen_when_overconfident!r}"
            )
        #: whether the widening applies (asked for, and the hyperparameters are fitted)
        self.widen_when_overconfident = (
            bool(widen_when_overconfident) and self.fit and self.learning is not None
        )
        #: iterations (1-based) whose first choice had ``sigma_{t-1}(x_t) < sigma_n``
        self.overconfident_iterations: list[int] = []
        #: common factors ``c < 1`` applied to the length-scales, one per widening
        self.widenings: list[float] = []
        self._widened = False  # the kernel is at its likelihood-ratio edge since the last refit
        #: consecutive queries that teach the model nothing new (:meth:`_update_stall`), the
        #: estimated map unchanged between them, before :meth:`stall` reports one
        #: (``docs/studies.md``, "A level-set map that stops changing", measured in
        #: ``benchmarks/levelset_stall.py``)
        self.stall_window = 20
        self._repeats_unchanged = 0
        self._known_unchanged = 0
        self._known_repeats = 0  # of them, queries at measured candidates
        self._stall_upper: np.ndarray | None = None
        #: the map at the first query of the count (:meth:`_update_stall`): each candidate's
        #: side and whether it was undecided there, ``(upper, undecided)``
        self._stall_anchor: tuple[np.ndarray, np.ndarray] | None = None
        #: per candidate, the largest sd of the move of its mean that one answer at a query of
        #: the count would bring (:meth:`_answer_reach`)
        self._stall_reach: np.ndarray | None = None
        #: the observations (answers and added measurements) when the first query of the
        #: count was chosen: those since are the answers to the count's queries and the
        #: measurements added between them
        self._stall_first_n = 0
        self._stall: dict[str, Any] | None = None

    def _space_filling_start(self, space: CandidateSet | Box, n0: int) -> None:
        """The mechanism's initial design: ``n0`` scrambled-Sobol points (distinct candidates on a
        finite set), drawn from the policy's seed; a given design smaller than ``n0`` is kept
        and topped up to ``n0``."""
        given = self._initial_design
        k = 0 if given is None else given.shape[0]
        if given is None and self.n_initial <= 1:
            return
        n_new = (self.n_initial if given is None else n0) - k
        if n_new <= 0:
            return
        design_seed = int(self.rng.integers(2**63))
        if isinstance(space, CandidateSet):
            n_new = min(n_new, space.points.shape[0] - k)
            exclude = np.zeros(space.points.shape[0], dtype=bool)
            if self._initial_index is not None:
                exclude[self._initial_index[self._initial_index >= 0]] = True
            box = space.box
            idx = space_filling_design(
                box.lower, box.upper, n_new, design_seed, candidates=space.points, exclude=exclude
            )
            old = np.zeros(0, dtype=np.intp) if self._initial_index is None else self._initial_index
            self._initial_index = np.concatenate([old, idx])
            new_points = space.points[idx]
        else:
            new_points = space_filling_design(space.lower, space.upper, n_new, design_seed)
        self._initial_design = new_points if given is None else np.vstack([given, new_points])
        self.n_initial = int(self._initial_design.shape[0])

    @property
    def initial_design(self) -> np.ndarray | None:
        """The planned initial design (k, d) (given or space-filling), or ``None`` when the
        initial points are drawn at random one by one (read-only copy)."""
        return None if self._initial_design is None else self._initial_design.copy()

    # -- posterior access ---------------------------------------------------------------------
    def candidate_posterior(self) -> tuple[np.ndarray, np.ndarray]:
        """``(mean, std)`` of the current posterior at the candidates, each (N,)."""
        return self.cache.mean, self.cache.std

    def predict(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(mean, std)`` of the current posterior at X (m, d)."""
        mean, var = self.gp.predict(X)
        return mean, np.sqrt(var)

    def predict_with_gradient(self, x: Any) -> tuple[float, float, np.ndarray, np.ndarray]:
        """``(mean, std, d mean/dx, d std/dx)`` of the current posterior at one point x (d,),
        the gradients (d,) in closed form (R&W eq. 2.25-2.26 differentiated in x; stationary
        kernels only): what the L-BFGS-B refinement of the acquisition on a box uses."""
        if not isinstance(self.kernel, StationaryKernel):
            raise InvalidInputError(
                f"gradients need a stationary kernel, got {type(self.kernel).__name__}"
            )
        xa = np.asarray(x, dtype=np.float64).reshape(-1)
        if xa.shape[0] != self._d or not np.all(np.isfinite(xa)):
            raise InvalidInputError(f"x must be a finite point of dimension {self._d}")
        return posterior_with_gradient(self.gp, xa, self.gp.posterior_weights())

    def posterior_mean_at(self, X: Any) -> np.ndarray:
        """The current posterior mean (m,) at X (m, d). The candidates' mean is read from the
        candidate cache; for another fixed array (an evaluation set passed again and again) the
        rows ``k(x_i, X)`` are kept and only the new ones computed (:class:`FixedPointsMean`)."""
        X = np.asarray(X, dtype=np.float64)
        if X is self.candidates or (
            X.shape == self.candidates.shape and np.array_equal(X, self.candidates)
        ):
            return np.asarray(self.cache.mean)
        if self._fixed_mean is None or self._fixed_mean.X is not X:
            self._fixed_mean = FixedPointsMean(X)
        return self._fixed_mean.mean(self.gp)

    def estimate(self) -> LevelSetEstimate:
        """The sets from the current posterior (all data), eq. (3.1)."""
        threshold = self.threshold
        mean_at = self.posterior_mean_at

        def _classify(X: np.ndarray) -> np.ndarray:
            return classify(mean_at(X), threshold)

        upper = classify(self.cache.mean, threshold) if self.finite else None
        return LevelSetEstimate(
            threshold,
            self.iteration + 1,
            self.candidates if self.finite else None,
            upper,
            _classify,
        )

    def recommend(self, final_update: bool = True) -> LevelSetEstimate:
        """Estimated sets. ``final_update=True`` (default): from the posterior given all data, the
        best estimate by Lemma B.3; ``False``: Algorithm 1's ``(H_T, L_T)``, from the posterior
        before the last observation (finite spaces only)."""
        if final_update or self.iteration == 0:
            return self.estimate()
        return self._past_estimate(self.iteration)

    def _past_means(self, X: np.ndarray, upto: np.ndarray) -> np.ndarray:
        """Posterior means after the first ``upto[k]`` observations at X (m, d): (len(upto), m).

        Uses that the Cholesky factor only grows by appends with fixed hyperparameters, so
        ``mu_j = m0 + sum_{i < j} a_i V_i`` with ``V = L^{-1} K(X_obs, X)``.
        """
        if self.fit:
            raise NotFittedError(
                "past posteriors need fixed hyperparameters (the kernel was refitted)"
            )
        gp = self.gp
        out = np.empty((len(upto), X.shape[0]))
        if gp.n == 0:
            out[:] = gp.mean_constant
            return out
        V = gp.whitened_cross_covariance(X)  # (n, m)
        cum = np.cumsum(V * gp.whitened_residual[:, None], axis=0)
        for k, j in enumerate(upto):
            out[k] = gp.mean_constant + (cum[j - 1] if j > 0 else 0.0)
        return out

    def _obs_before_iteration(self, t: int) -> int:
        """Number of observations the posterior of iteration ``t`` (1-based) was based on."""
        return self._n_at_iteration[t - 1]

    def _past_estimate(self, t: int) -> LevelSetEstimate:
        if not self.finite:
            raise InvalidInputError("recommend(final_update=False) needs a finite candidate set")
        j = self._obs_before_iteration(t)
        mean = self._past_means(self.candidates, np.array([j]))[0]
        threshold = self.threshold
        past = self._past_means

        def _classify(X: np.ndarray) -> np.ndarray:
            return classify(past(np.asarray(X, dtype=np.float64), np.array([j]))[0], threshold)

        return LevelSetEstimate(threshold, t, self.candidates, classify(mean, threshold), _classify)

    # -- the loop -----------------------------------------------------------------------------
    def _no_more_queries(self) -> str | None:
        """A finite space with ``allow_repeats=False`` whose every candidate is measured (by a
        query or an added measurement): nothing is left to choose from (Sec. 5.3)."""
        if self.finite and not self.allow_repeats and bool(np.all(self.observed)):
            return (
                f"every one of the {self.N} candidates is measured and allow_repeats is false, "
                "so its estimate of the sets is final"
            )
        return None

    def _allowed(self) -> np.ndarray | None:
        """Mask of selectable candidates, or None when all are."""
        if self.finite and not self.allow_repeats:
            allowed = ~self.observed
            if not allowed.any():
                raise QueryStateError("every candidate has been observed (allow_repeats=False)")
            return allowed
        return None

    def _initial_query(self) -> Evaluate:
        """The next point of the initial design (the ``n_obs``-th). With ``allow_repeats=False``
        a design point already measured (a measurement the user added there) is passed over for
        the design's next unmeasured one, or, when none is left, a random unmeasured candidate:
        the design never asks a measured candidate again."""
        k = self._n_obs
        if self._initial_design is not None and self._initial_index is not None and (
            self.finite and not self.allow_repeats
        ):
            index = self._initial_index
            k = next((j for j in range(k, len(index)) if not self.observed[int(index[j])]), -1)
        if self._initial_design is not None and k >= 0:
            idx = None if self._initial_index is None else int(self._initial_index[k])
            q = self._new_evaluate(self._initial_design[k], index=idx)
        else:
            q = self._random_query()
        self._initial_ids.add(q.id)
        return self._mark_initial(q)

    def _random_query(self) -> Evaluate:
        if self.finite:
            allowed = self._allowed()
            pool = np.arange(self.N) if allowed is None else np.flatnonzero(allowed)
            i = int(self.rng.choice(pool))
            return self._new_evaluate(self.candidates[i], index=i)
        x = self.space.sample(1, seed=self.rng)[0]  # type: ignore[union-attr]
        return self._new_evaluate(x)

    def _propose(self) -> Query:
        if self._n_obs < self.n_initial:
            return self._initial_query()
        t = self.iteration + 1
        self._n_at_iteration.append(self.gp.n)
        self._prepare_step(t)
        if self.finite:
            i = self._select_finite(t)
            if self._widen_if_overconfident(float(self.cache.std[i]), t):
                i = self._select_finite(t)
            self._update_stall(float(self.cache.std[i]), bool(self.observed[i]), index=i)
            return self._new_evaluate(self.candidates[i], index=i)
        x = self._select_box(t)
        if self._widen_if_overconfident(float(self.predict(x.reshape(1, -1))[1][0]), t):
            x = self._select_box(t)
        self._update_stall(float(self.predict(x.reshape(1, -1))[1][0]), False, x=x)
        return self._new_evaluate(x)

    @property
    def last_fit_n(self) -> int:
        """The number of observations of the last refit of the hyperparameters (0 before the
        first, and always with fixed ones): the ``n`` of the shrinking cap that
        :meth:`_widen_if_overconfident` compares the length-scales with, and the refit since
        which at most one widening happens."""
        return self._last_fit_n

    def _lengthscale_at_cap(self) -> bool:
        """Whether a fitted length-scale sits on the mechanism's shrinking cap (the upper bound
        of its last fit, :meth:`HyperparameterLearning.lengthscale_cap`): the data pushed it as
        long as the cap allows."""
        assert self.learning is not None
        ls = getattr(self.gp.kernel, "lengthscale", None)
        if ls is None or self._last_fit_n == 0:
            return False
        frac = np.atleast_1d(np.asarray(ls, dtype=np.float64)) / self._width
        floor = self.learning.lengthscale_floor(self._d)
        cap = np.maximum(self.learning.lengthscale_cap(self._last_fit_n, self._d), 2 * floor)
        return bool(np.any(frac >= cap * (1.0 - 1e-3)))

    def _widen_if_overconfident(self, sd: float, t: int) -> bool:
        """Doubt the fitted length-scales when the acquisition would re-measure what it knows.

        With learned hyperparameters a model can be confidently wrong where it has no data: a
        long length-scale that the answers cannot contradict (all of them on a trend, none on a
        bump the space-filling start missed) makes ``sigma`` small everywhere, and a level-set
        acquisition then spends every answer on the few points whose mean is nearest the
        threshold, measured again and again below the noise level (issue 18's coating map:
        one point 15 times in 60 answers, the bump never seen). Its choice ``x_t`` tells: when
        ``sigma_{t-1}(x_t) < sigma_n``, one more answer there changes the posterior less than
        the noise hides, which under the model is the most useful answer only if the model is
        right about everything else. That is the trigger of Wang and de Freitas ("Theoretical
        analysis of Bayesian optimisation with unknown Gaussian process hyper-parameters",
        arXiv:1406.7758, 2014, Sec. 4): they lower the length-scales' upper bound when the
        posterior standard deviation at the chosen point falls below a threshold ``kappa``;
        here ``kappa = sigma_n``, the fitted noise's standard deviation (no constant of ours).
        As in their algorithm, lowering the bound changes the model only where the bound binds:
        the widening applies only when a fitted length-scale sits on the mechanism's shrinking
        cap (the data would have it longer than allowed, :meth:`_lengthscale_at_cap`); a
        length-scale inside its bounds is the data's own, and shortening it would contradict
        them (measured: on a grid of two bumps on a flat floor, widening an interior MAP kept
        the answers on the bump already found and missed the other in 4 of 20 seeds).

        The response uses the mechanism's own likelihood-ratio set instead of a fixed factor:
        the length-scales are shortened by the common factor ``c`` at which the log posterior
        has dropped by ``chi2_p(0.95) / 2`` (:meth:`HyperparameterLearning.conservative`), the
        most doubt the data allow at that level, in the spirit of A-GP-UCB's shrinking
        length-scales (Berkenkamp, Schoellig and Krause, JMLR 2019, Sec. 4). It holds until the
        next refit (which starts again from the MAP) and is applied at most once between
        refits. Returns True when the kernel changed (the caller chooses again with the widened
        model: the same ``beta_t`` draw, the same rule, so every choice is still an argmax of
        the method's acquisition under a model the data cannot reject).
        """
        if not self.widen_when_overconfident:  # False with fixed hyperparameters (__init__)
            return False
        noise_sd = math.sqrt(max(self.gp.noise_variance, 0.0))
        if not sd < noise_sd:
            return False
        self.overconfident_iterations.append(int(t))
        if self._widened or not self._lengthscale_at_cap():
            return False
        assert self.learning is not None
        self._widened = True
        try:
            c = self.learning.conservative(self.gp)
        except Exception as exc:  # keep the fitted model
            logger.warning("widening the length-scales failed, keeping the fitted ones: %s", exc)
            return False
        if not c < 1.0:
            return False
        self.widenings.append(float(c))
        return True

    # -- stall --------------------------------------------------------------------------------
    @property
    def repeats_unchanged(self) -> int:
        """How many of the latest queries (on a finite space) were in a row at candidates
        already measured, with the estimated set ``{x : mu(x) >= theta}`` (eq. 3.1) the same at
        each of them: 0 when the last query was at a new candidate. The count behind the first
        stall notice (20 such queries; the notice now counts :attr:`known_unchanged`, which
        also covers a stall whose queries interleave new settings), kept as a read-out."""
        return self._repeats_unchanged

    @property
    def known_unchanged(self) -> int:
        """How many of the latest queries were in a row at settings the model already knew as
        well as a measured one, with the estimated map the same at each of them as at the first
        (:meth:`_update_stall`: no candidate changed side of the threshold beyond the noise
        of the answers): the count behind :meth:`stall`. 0 when the last query was somewhere the
        model did not know that well, 1 when the map changed just before it."""
        return self._known_unchanged

    def _map_state(self) -> tuple[np.ndarray, np.ndarray]:
        """The estimated map over the candidates as the stall reads it: ``(upper, undecided)``,
        each candidate's side (eq. 3.1, ``mu >= theta``) and whether the model leaves it
        undecided (``|mu - theta| < 2 sigma``, :func:`boloop.confidence.undecided`)."""
        mean, std = self.cache.mean, self.cache.std
        return classify(mean, self.threshold), undecided(mean, std, self.threshold, UNDECIDED_SD)

    def _answer_reach(self, sd: float, index: int | None, x: np.ndarray | None) -> np.ndarray:
        """The standard deviation of the move of every candidate's mean that one more answer at
        the query ``x_t`` brings, ``|k_{t-1}(x, x_t)| / sqrt(sigma_{t-1}^2(x_t) + sigma_n^2)``
        (N,): the one-step look-ahead of MILE (Zanette et al. 2019, :func:`mile_acquisition`),
        ``sd = sigma_{t-1}(x_t)``. ``index``: the query's candidate (finite), else ``x``."""
        if index is not None:
            cov = self.cache.covariance_with(index)
        else:
            assert x is not None
            cov = self.gp.posterior_covariance(self.candidates, x.reshape(1, -1))[:, 0]
        s_star = math.sqrt(sd * sd + max(self.gp.noise_variance, 0.0))
        return np.abs(cov) / s_star if s_star > 0 else np.zeros(self.N)

    def _map_moved(self, now: tuple[np.ndarray, np.ndarray]) -> bool:
        """Whether the map ``now`` (:meth:`_map_state`) differs from the first of the count in
        a candidate that is not the noise of the answers (:meth:`_update_stall`)."""
        assert self._stall_anchor is not None and self._stall_reach is not None
        upper, unsure = self._stall_anchor
        flipped = now[0] != upper
        if not flipped.any():
            return False
        near = np.abs(self.cache.mean - self.threshold) < UNDECIDED_SD * self._stall_reach
        return bool(np.any(flipped & ~(unsure & now[1] & near)))

    def _update_stall(
        self, sd: float, measured: bool, *, index: int | None = None, x: np.ndarray | None = None
    ) -> None:
        """Count the query just chosen, with ``sd = sigma_{t-1}(x_t)`` (the posterior standard
        deviation its choice was made with), ``measured`` whether it is a candidate measured
        before and ``index`` (its candidate) or ``x`` (a box), into :attr:`known_unchanged`, and
        report a stall once the count reaches :attr:`stall_window`.

        A stall is a map that no longer changes while the answers no longer teach the model
        anything new. A query teaches about as little as a repeat when ``x_t`` was measured,
        or when ``sigma_{t-1}(x_t) < sigma_n`` (the fitted noise's standard deviation): its
        answer's information about ``f(x_t)``, ``1/2 log(1 + sigma_{t-1}^2(x_t) / sigma_n^2)``
        (Srinivas et al. 2010, Lemma 5.3), is then below ``1/2 log 2``, what a second
        measurement of a setting measured once teaches at most (that setting's ``sigma`` is
        already below ``sigma_n``). In length-scales it is a setting so close to measured ones
        that the model's uncertainty there is below the noise's (how close depends on the
        signal-to-noise ratio), such as an unmeasured neighbour of a boundary point re-measured
        many times; a setting far from the data, as in an exploration of the space, is not. It
        is the trigger of :meth:`_widen_if_overconfident` (Wang and de Freitas 2014), read
        here, not acted on.

        The map is the estimated set ``H_t = {x : mu_{t-1}(x) >= theta}`` (eq. 3.1) over the
        candidates, compared with the map at the first query of the count. A candidate on the
        other side now is a change of the map unless it is the noise of the answers the method
        keeps giving, which takes both of:

        * the model left its side undecided at both queries, ``|mu - theta| < 2 sigma``
          (:data:`~boloop.confidence.UNDECIDED_SD`; LSE's unclassified set ``U_t`` at
          ``beta^(1/2) = 2``, Gotovos et al. 2013, and the undecided cells of the map picture;
          the randomized straddle's draw ``beta_t ~ chi2(2)`` makes its acquisition
          ``max{beta_t^(1/2) sigma - |mu - theta|, 0}`` positive there with probability
          ``exp(-u^2 / 2) > e^-2``, ``u = |mu - theta| / sigma``);
        * its mean is now within 2 standard deviations of the move that one more answer at one
          of the count's queries would give it: one answer at ``x_j`` moves ``mu(x)`` by a
          normal of sd ``c_j(x) = |k_{j-1}(x, x_j)| / sqrt(sigma_{j-1}^2(x_j) + sigma_n^2)``
          (the one-step look-ahead of MILE, Zanette et al. 2019; :meth:`_answer_reach`), so
          the next such answer can put it back on the first side.

        On a fine grid the boundary moves by a grid step with almost every answer and the
        settings beside it, their mean within a hair of ``theta``, keep changing side:
        requiring no change at all there would never let a stall be seen (the 2-D furnace grid
        of ``docs/reproductions/levelset.md``). A candidate decided at either end, or beyond
        what the answers move, counts; comparing with the first query of the count, not the
        previous one, keeps a slow drift in view (a candidate decided at the first query that
        ends on the other side counts, however small its steps). Measured
        (``docs/reproductions/levelset.md``, "Boundary jitter on fine grids"): the stuck run of
        that grid is now flagged, and the false alarms rise (8 to 16 of 219 design runs, 2 to 6
        of 120 held out); the first condition alone gave 22 and 8.

        A level-set acquisition that keeps choosing settings it knows while the map stays put
        has a model that is sure of the map everywhere else: its answers sharpen a few
        boundary points and move nothing, whether they re-measure those points or alternate
        with their unmeasured neighbours. That is the end of a run whose map is right, and
        also of a run whose model never saw a region the first points missed (a bump under a
        trend, a second peak): the two look the same from the data, so the report says both
        (``benchmarks/levelset_stall.py``). On a box the map is that of the policy's candidate
        set (the points it classifies and scores at every step), and no query repeats one
        exactly. Reads the posterior the choice was made with; draws no random number and
        changes no choice. :attr:`repeats_unchanged` (the first notice's count) still reads
        the exact map, no candidate changing side at all."""
        upper = classify(self.cache.mean, self.threshold)
        same = self._stall_upper is not None and np.array_equal(upper, self._stall_upper)
        self._stall_upper = upper
        if not measured:
            self._repeats_unchanged = 0
        else:
            self._repeats_unchanged = self._repeats_unchanged + 1 if same else 1
        noise_sd = math.sqrt(max(self.gp.noise_variance, 0.0))
        if not (measured or sd < noise_sd):
            self._known_unchanged = self._known_repeats = 0
            self._stall_anchor = self._stall_reach = None
        else:
            state = self._map_state()
            reach = self._answer_reach(sd, index, x)
            if self._stall_anchor is not None and self._stall_reach is not None:
                np.maximum(self._stall_reach, reach, out=self._stall_reach)
                moved = self._map_moved(state)
            else:
                moved = True
            if not moved:
                self._known_unchanged += 1
                self._known_repeats += int(measured)
            else:
                self._known_unchanged, self._known_repeats = 1, int(measured)
                self._stall_anchor, self._stall_reach = state, reach
                self._stall_first_n = self.gp.n
        self._stall = None
        k = self._known_unchanged
        if k >= self.stall_window:  # the words and the farthest point when read (stall())
            self._stall = {
                "queries": k,
                "repeats": self._known_repeats,
                "since_n": self._stall_first_n,
            }

    def _farthest_candidate(self) -> tuple[np.ndarray, float]:
        """The candidate farthest from every observation (Euclidean, each axis divided by its
        range) and that distance, as a fraction of the unit cube's diagonal. In blocks of
        candidates and observations, so that memory stays bounded on large grids."""
        X = np.asarray(self.gp.X, dtype=np.float64) / self._width
        xx = (X * X).sum(1)
        best_j, best_d2 = 0, -1.0
        for lo in range(0, self.N, 8192):
            C = self.candidates[lo : lo + 8192] / self._width
            cc = (C * C).sum(1)
            near = np.full(C.shape[0], np.inf)
            for start in range(0, X.shape[0], 256):
                d2 = cc[:, None] - 2.0 * C @ X[start : start + 256].T + xx[None, start : start + 256]
                np.minimum(near, d2.min(axis=1), out=near)
            j = int(np.argmax(near))
            if near[j] > best_d2:
                best_j, best_d2 = lo + j, float(near[j])
        return self.candidates[best_j].copy(), math.sqrt(max(best_d2, 0.0) / self._d)

    def stall(self) -> dict[str, Any] | None:
        """A map that has stopped changing, found at the last query (:meth:`_update_stall`), or
        None. Answers and measurements that came in since are read too: when one of them moved
        the map the stall is gone (the method checks again at its next query); when none did,
        it stands, counted to now, and the farthest setting is that of the data now.
        ``queries`` (the :attr:`known_unchanged` count at that query; ``repeats`` of them at
        measured settings, the others new but known to within the noise), ``answered`` (the
        answers given to them: one fewer than ``queries`` while the last is the open query),
        ``added`` (measurements added since the first of them) and ``answers`` (both: the
        observations since the first of them), ``measured_settings`` (distinct settings
        measured), the candidate
        ``farthest`` from every measurement (``farthest_distance``: as a fraction of the
        diagonal of the box scaled to unit sides; None when every candidate is measured), the
        ``finding`` in words and the ``message`` for the person running the study: the finding
        and :data:`FARTHEST_ADVICE` naming ``farthest``."""
        found = self._stall
        if found is None:
            return None
        n = self.gp.n
        if found.get("checked_n") != n:  # data since: the map as it is now, the farthest anew
            found["holds"] = self._stall_anchor is not None and not self._map_moved(
                self._map_state()
            )
            if np.all(self.observed):  # (a distance, rounded, is not exactly 0 in 2-D and up)
                found["farthest"], found["farthest_distance"] = None, 0.0
            else:
                far, dist = self._farthest_candidate()
                found["farthest"], found["farthest_distance"] = far.tolist(), dist
            found["checked_n"] = n
        if not found["holds"]:
            return None
        k, answers = int(found["queries"]), n - int(found["since_n"])
        # the counts a sentence gives side by side say what they count: the last query may
        # be open (asked, not answered: a study page always holds one), and measurements
        # added between the queries are observations too (a newcomer read "22 queries over
        # 21 answers" as an error)
        answered = k - 1 if self.pending is not None else k
        added = max(answers - answered, 0)
        repeats = int(found["repeats"])
        if self.finite:
            measured = int(np.count_nonzero(self.observed))
        else:
            measured = int(np.unique(np.asarray(self.gp.X), axis=0).shape[0])
        near = "so close to measured ones that the model knew their values to within the "
        if repeats == k:
            which = "all at settings already measured"
        elif repeats == 0:  # (a box: no query repeats a setting exactly)
            which = f"all at settings {near}measurement noise"
        else:
            which = (
                f"at settings already measured ({repeats}) or {near}measurement noise "
                f"({k - repeats})"
            )
        over = f"the {answered} answers given to them"
        if answered < k:
            over += f" (the last of the {k}, the open query, has no answer yet)"
        if added:
            some = f"{added} measurements" if added > 1 else "measurement"
            over += f" and the {some} added since the first of them"
        common = (
            f"the estimated map has stopped changing: the last {k} queries were {which}, and "
            f"no setting changed side of the threshold over {over}, other than settings beside "
            "the boundary that the model has not decided and that each answer tips one way or "
            "the other. "
        )
        far = found["farthest"]
        if far is None:
            finding = common + (
                f"Every one of the {measured} settings has been measured: more answers only "
                "sharpen the map's boundary, and you may stop here."
            )
            message = finding
        else:
            finding = common + (
                "The model is sure of the map everywhere else, so more answers to its queries "
                "are unlikely to change it. Either the map is finished, or a region far from "
                "every measurement hides something the model cannot see (a narrow bump or dip "
                "that the first points missed)."
            )
            where = ", ".join(f"{v:.4g}" for v in far)
            message = finding + " " + FARTHEST_ADVICE.format(where=f"x = ({where})")
        return {
            "answers": answers,
            "answered": answered,
            "added": added,
            "queries": k,
            "repeats": repeats,
            "measured_settings": measured,
            "farthest": None if far is None else list(far),
            "farthest_distance": float(found["farthest_distance"]),
            "finding": finding,
            "message": message,
        }

    def _observe(self, query: Query, answer: Any) -> None:
        assert isinstance(query, Evaluate)
        self.gp.condition(query.x.reshape(1, -1), [float(answer)])
        self._n_obs += 1
        if self.finite and query.index is not None:
            self.observed[query.index] = True
        if (
            self.fit
            and self.gp.n - self._last_fit_n >= self.fit_every
            and self.learning is not None
            and self.learning.due(self.gp.n, self._last_fit_n, self._d)
        ):
            self._refit()

    def _refit(self) -> None:
        """Refit the hyperparameters with the mechanism (keeps the old ones if the fit fails)."""
        assert self.learning is not None
        # last_fit_n = 0 tells the mechanism that restarts are due (its documented meaning)
        last = 0 if self.refit_restarts == "every" else self._last_fit_n
        report = self.learning.fit(self.gp, self._width, rng=self.rng, last_fit_n=last)
        if report.refitted:
            self._last_fit_n = self.gp.n
            self._widened = False

    def _add_measurements(self, X: np.ndarray, values: list[Any]) -> None:
        self.add_observations(X, values)  # the contract's observe(points, values)

    def add_observations(self, X: Any, y: Any) -> None:
        """Pre-load data (earlier experiments): X (k, d) in the space, y (k,) finite.

        They condition the GP like answers but are not iterations; they count toward the initial
        design (spec P2). Not allowed while a query is open. Raises and changes nothing on bad input.
        """
        if self.pending is not None:
            raise QueryStateError("answer the open query before adding observations")
        Xa = self.space.validate(X, "X")
        ya = np.asarray(y, dtype=np.float64).reshape(-1)
        if ya.shape[0] != Xa.shape[0] or not np.all(np.isfinite(ya)):
            raise InvalidInputError(f"y must hold {Xa.shape[0]} finite values")
        idx = self.space.index_of(Xa) if self.finite else None  # type: ignore[union-attr]
        self.gp.condition(Xa, ya)
        self._n_obs += Xa.shape[0]
        if idx is not None:
            self.observed[idx[idx >= 0]] = True
        if self.fit:
            self._refit()

    def _iteration_done(self, query: Query, answer: Any) -> bool:
        return query.id not in self._initial_ids

    # -- selection ----------------------------------------------------------------------------
    def _prepare_step(self, t: int) -> None:
        """Per-iteration state drawn/updated exactly once (beta draws, bound intersections)."""
        self.sqrt_betas.append(math.nan)

    def _score(self, mean: np.ndarray, std: np.ndarray, t: int) -> np.ndarray:
        """AF values (higher is better) at points with posterior ``mean, std`` (m,)."""
        raise NotImplementedError

    def _score_candidates(self, t: int) -> np.ndarray:
        mean, std = self.candidate_posterior()
        return self._score(mean, std, t)

    def _argmax(self, scores: np.ndarray, allowed: np.ndarray | None) -> int:
        """Argmax with uniform random tie-breaking among exact maximisers."""
        s = scores if allowed is None else np.where(allowed, scores, -np.inf)
        best = np.max(s)
        ties = np.flatnonzero(s == best)
        if ties.size == 1:
            return int(ties[0])
        return int(self.rng.choice(ties))

    def _select_finite(self, t: int) -> int:
        return self._argmax(self._score_candidates(t), self._allowed())

    def _select_box(self, t: int) -> np.ndarray:

        box: Box = self.space  # type: ignore[assignment]
        mean, std = self.candidate_posterior()
        pts = [self.candidates]
        scores = [self._score(mean, std, t)]
        if self.n_fresh:
            fresh = box.sample(self.n_fresh, seed=self.rng)
            fm, fs = self.predict(fresh)
            pts.append(fresh)
            scores.append(self._score(fm, fs, t))
        P = np.concatenate(pts)
        S = np.concatenate(scores)
        best_i = self._argmax(S, None)
        best_x, best_s = P[best_i], S[best_i]
        if self.n_refine:
            order = np.argsort(-S, kind="stable")[: self.n_refine]
            analytic = isinstance(self.kernel, StationaryKernel)
            if analytic:
                gp = self.gp
                # one Fortran-ordered copy of the factor per step (the GP's is a strided view)
                LF = np.asfortranarray(gp.cholesky_factor)
                alpha = gp.posterior_weights(LF)

            def negative(x: np.ndarray) -> Any:
                if not analytic:
                    m, s = self.predict(x.reshape(1, -1))
                    return -float(self._score(m, s, t)[0])
                mu, sd, dmu, dsd = posterior_with_gradient(gp, x, alpha, LF)
                val, grad = self._score_and_gradient(mu, sd, dmu, dsd, t)
                return -val, -grad

            def rescored(x_new: np.ndarray) -> float:
                m_new, s_new = self.predict(x_new.reshape(1, -1))
                return float(self._score(m_new, s_new, t)[0])

            best_x, best_s = refine_on_box(
                negative,
                (P[k] for k in order),
                box.lower,
                box.upper,
                score=rescored,
                best_x=best_x,
                best_value=best_s,
                jac=analytic,
                options={"maxiter": self.refine_maxiter, "maxfun": 3 * self.refine_maxiter},
            )
        return np.asarray(best_x, dtype=np.float64)

    def _score_and_gradient(
        self, mean: float, std: float, dmean: np.ndarray, dstd: np.ndarray, t: int
    ) -> tuple[float, np.ndarray]:
        """AF value and gradient at one point (boxes); default: the straddle with ``betas[-1]``."""
        sb = self.sqrt_betas[-1]
        sign = 1.0 if mean >= self.threshold else -1.0
        return sb * std - abs(mean - self.threshold), sb * dstd - sign * dmean

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(
            {
                "threshold": self.threshold,
                "kernel": repr(self.kernel),
                "noise_variance": self.gp.noise_variance,
                "hyperparameters": "fitted" if self.fit else "fixed",
                "hyperparameter_learning": (
                    None
                    if self.learning is None
                    else ("plain" if not self.learning.priors else "learned")
                ),
                "space": repr(self.space),
                "n_candidates": self.N,
                "allow_repeats": self.allow_repeats,
                "last_sqrt_beta": self.sqrt_betas[-1] if self.sqrt_betas else None,
                "widen_when_overconfident": self.widen_when_overconfident,
                "overconfident_steps": len(self.overconfident_iterations),
                "widenings": len(self.widenings),
                "noise_check": self.noise_check(),
                "stall": self.stall(),
            }
        )
        return d

    def noise_check(self) -> dict[str, dict[str, Any]]:
        """With a fixed noise variance (``fit_hyperparameters=False``; a learned one follows
        the data), ``{"value": ...}`` when measurements repeated at one setting scatter more
        than it allows (:func:`boloop.gp.repeats.noise_too_small`), else empty."""
        from boloop.gp.repeats import noise_too_small

        if self.fit or self.gp.n < 3:
            return {}
        found = noise_too_small(self.gp.X, self.gp.y, self.gp.noise_variance)
        if found is None:
            return {}
        found.update(
            option="noise_variance",
            cost="so its map follows the noise and is too sure of it",
        )
        return {"value": found}


_REFIT_RESTARTS = ("every", "doubling")


# ---------------------------------------------------------------------------------------------
class RandomizedStraddle(LevelSetPolicy):
    """Randomized straddle, Algorithm 1 (Definition 3.2, eq. 3.2).

    Each iteration draws one ``beta_t ~ chi2(2)`` (shared by every candidate) and queries
    ``argmax_x max{beta_t^(1/2) sigma_{t-1}(x) - |mu_{t-1}(x) - theta|, 0}``.

    When the clipped AF is 0 everywhere (a small draw of ``beta_t``), every point is an argmax and
    the paper does not say which to take. ``tie_break`` decides; every rule picks an argmax of the
    clipped AF, so the theory is unaffected:

    * ``"expected"`` (the default with learned hyperparameters): the clipped AF first, then, among
      its zeros, the largest AF expected over ``beta ~ chi2(2)``,
      ``E_beta[a(x)] = sigma sqrt(2 pi) Phi(-|mu - theta| / sigma)``
      (:func:`expected_af_over_beta`, the pointwise bound of the expected loss in Theorem 4.1).
      The ambiguous points the draw would pick on average, not the ones already sampled to the
      noise level (issue 18: with learned hyperparameters the unclipped argmax re-queried the
      two crossings of a known bump 20 times in a row and never looked elsewhere);
    * ``"unclipped"`` (the default with a fixed kernel, the reproduction's setting): the argmax of
      the unclipped straddle (spec P4);
    * ``"random"``: uniformly among the maximisers of the clipped AF (all of X when it is 0).

    Remaining exact ties are broken uniformly at random, never by index.
    """

    method_id: ClassVar[str] = "randomized-straddle"

    def __init__(
        self, space: Any, threshold: float, *, tie_break: str | None = None, **kw: Any
    ) -> None:
        if tie_break is not None and tie_break not in _TIE_BREAKS:
            raise InvalidInputError(
                f"tie_break must be one of {', '.join(map(repr, _TIE_BREAKS))} or None, "
                f"got {tie_break!r}"
            )
        super().__init__(space, threshold, **kw)
        if tie_break is None:
            tie_break = "expected" if self.fit else "unclipped"
        self.tie_break = tie_break
        self._beta_rng = np.random.default_rng(int(self.rng.integers(2**63)))
        #: the random part ``xi_t ~ chi2(2)`` of ``beta_t`` (Definition 3.2), drawn once per
        #: iteration from a stream of the policy's seed: ``beta_t = xi_t + beta_shift(t)``
        self.schedule = ChiSquaredBeta(df=2.0)
        self.beta_draws: list[float] = []  # beta_t (squared), one per iteration

    def beta_shift(self, t: int) -> float:
        """The deterministic part of ``beta_t = xi_t + beta_shift(t)`` at iteration ``t``: 0 for
        Algorithm 1 (Definition 3.2); see :meth:`RandomizedStraddleMax.beta_shift`."""
        return 0.0

    def _prepare_step(self, t: int) -> None:
        xi = self.schedule.beta(t, rng=self._beta_rng)
        beta = xi + self.beta_shift(t)
        self.beta_draws.append(beta)
        self.sqrt_betas.append(math.sqrt(beta))

    def _score(self, mean: np.ndarray, std: np.ndarray, t: int) -> np.ndarray:
        g = straddle(mean, std, self.threshold, self.sqrt_betas[-1])
        if self.tie_break == "random" and self.finite:
            return np.maximum(g, 0.0)
        if self.tie_break == "expected":
            if self.finite and g.shape == (self.N,):
                # the candidates: a positive AF among the selectable ones wins (the zero case's
                # rank, a log-normal-cdf per point, is not needed)
                allowed = self._allowed()
                if (g.max() if allowed is None else g[allowed].max()) > 0:
                    return g
            return np.where(g > 0, g, _zero_af_rank(mean, std, self.threshold))
        return g

    def _score_and_gradient(
        self, mean: float, std: float, dmean: np.ndarray, dstd: np.ndarray, t: int
    ) -> tuple[float, np.ndarray]:
        val, grad = super()._score_and_gradient(mean, std, dmean, dstd, t)
        if self.tie_break != "expected" or val > 0:
            return val, grad
        return _zero_af_rank_and_gradient(mean, std, dmean, dstd, self.threshold)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["tie_break"] = self.tie_break
        d["last_beta"] = self.beta_draws[-1] if self.beta_draws else None
        return d


_TIE_BREAKS = ("expected", "unclipped", "random")


class RandomizedStraddleMax(RandomizedStraddle):
    """Randomized straddle for the max-value loss: Algorithm 2 (finite) and Algorithm 3 (boxes).

    ``beta_t = xi_t + 2 log|X|`` with ``xi_t ~ chi2(2)`` (Definition A.1) on a finite set, and
    ``beta_t = xi_t + 2 d log tau_t`` with ``tau_t = ceil(b d r t^2 (sqrt(log(a d)) + sqrt(pi)/2))``
    (Definition A.3) on a box, where ``a, b`` are the constants of Assumption A.1 (required) and
    ``r`` is the largest side of the box (shifted to ``[0, r]^d``). On a box the sets are
    ``H_t = {x : mu_{t-1}([x]_t) >= theta}`` (eq. A.3) with ``[x]_t`` the nearest point (L1, ties to
    the smaller coordinate) of the grid of ``tau_t`` cell centres per axis; it is never enumerated.

    :meth:`recommend` returns ``(H_T-hat, L_T-hat)`` with ``T-hat = argmin_{i <= T} E_T[r~_i]``
    (eq. A.2), ``E_T`` given ``D_{T-1}``, estimated from ``n_samples`` joint posterior samples on the
    candidates (at most ``max_sample_points`` of them, a random subset beyond that).
    """

    method_id: ClassVar[str] = "randomized-straddle-max"

    def __init__(
        self,
        space: Any,
        threshold: float,
        *,
        a: float | None = None,
        b: float | None = None,
        n_samples: int = 1000,
        max_sample_points: int = 3000,
        **kw: Any,
    ) -> None:
        if kw.get("fit_hyperparameters") or kw.get("kernel") is None:
            raise InvalidInputError(
                "randomized-straddle-max needs a kernel with fixed hyperparameters (kernel=...): "
                "T-hat compares posteriors of past iterations"
            )
        super().__init__(space, threshold, **kw)
        if not self.finite:
            if a is None or b is None:
                raise InvalidInputError(
                    "on a box, randomized-straddle-max needs the constants a and b of Assumption A.1"
                )
            a, b = _finite_float(a, "a"), _finite_float(b, "b")
            if a <= 0 or b <= 0:
                raise InvalidInputError(f"a and b must be positive, got a={a}, b={b}")
            if a * self._d < 1:
                raise InvalidInputError(f"a * d must be >= 1 (log(a d) >= 0), got a={a}")
        self.a, self.b = a, b
        self.n_samples = int(n_samples)
        self.max_sample_points = int(max_sample_points)
        self.upper_history: list[np.ndarray] = []  # finite: H_t masks, one per iteration
        self._t_hat_cache: tuple[int, int] | None = None
        # a separate stream for T-hat so that recommend() never shifts the policy's own draws
        self._t_hat_seed = int(self.rng.integers(2**62))
        if not self.finite:
            self.max_sample_points = min(self.max_sample_points, 512)

    # Algorithm 3 discretisation ---------------------------------------------------------------
    @property
    def r(self) -> float:
        return float(np.max(self.space.width))  # type: ignore[union-attr]

    def tau(self, t: int) -> int:
        """``tau_t`` of Definition A.3 (grid points per axis)."""
        d = self._d
        assert self.a is not None and self.b is not None
        c = math.sqrt(math.log(self.a * d)) + math.sqrt(math.pi) / 2
        return int(math.ceil(self.b * d * self.r * t * t * c))

    def round_to_grid(self, X: Any, t: int) -> np.ndarray:
        """``[x]_t``: nearest cell centre of the ``tau_t``-per-axis grid of ``[0, r]^d`` (shifted back)."""
        box: Box = self.space  # type: ignore[assignment]
        X = np.asarray(X, dtype=np.float64).reshape(-1, self._d)
        tau = self.tau(t)
        h = self.r / tau
        u = (X - box.lower) / h
        # nearest centre (k + 1/2) h; at an exact tie (u integer) take the smaller one (k = u - 1)
        k = np.clip(np.ceil(u) - 1.0, 0, tau - 1)
        return box.lower + (k + 0.5) * h

    def beta_shift(self, t: int) -> float:
        """``2 log|X|`` on a finite set (Definition A.1) or ``2 d log tau_t`` on a box
        (Definition A.3): what Algorithms 2 and 3 add to the ``chi2(2)`` draw in ``beta_t``."""
        if self.finite:
            return 2.0 * math.log(self.N)
        return 2.0 * self._d * math.log(self.tau(t))

    def _prepare_step(self, t: int) -> None:
        super()._prepare_step(t)
        if self.finite:
            self.upper_history.append(classify(self.cache.mean, self.threshold))

    # T-hat ------------------------------------------------------------------------------------
    def _upper_at(self, P: np.ndarray, t: int) -> np.ndarray:
        """``H_t`` membership (eq. 3.1 or A.3) of points P (m, d)."""
        j = self._obs_before_iteration(t)
        Q = P if self.finite else self.round_to_grid(P, t)
        return classify(self._past_means(Q, np.array([j]))[0], self.threshold)

    def expected_max_losses(self, seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Monte Carlo ``E_T[r~_i]`` for i = 1..T (T,), and the evaluation points used (m, d)."""
        T = self.iteration
        if T == 0:
            raise NotFittedError("no iteration yet: nothing to choose T-hat from")
        rng = np.random.default_rng([self._t_hat_seed, T] if seed is None else seed)
        P_idx = np.arange(self.N)
        if self.N > self.max_sample_points:
            P_idx = np.sort(rng.choice(self.N, self.max_sample_points, replace=False))
        P = self.candidates[P_idx]
        j = self._obs_before_iteration(T)  # condition on D_{T-1}
        gp = self.gp
        mean = self._past_means(P, np.array([j]))[0]
        cov = gp.kernel.k(P, P)
        if j:
            V = gp.whitened_cross_covariance(P)[:j]
            cov -= V.T @ V
        L, _ = robust_cholesky(0.5 * (cov + cov.T))
        F = mean[:, None] + L @ rng.standard_normal((P.shape[0], self.n_samples))  # (m, M)
        dist = np.abs(F - self.threshold)
        above = F >= self.threshold
        out = np.empty(T)
        for i in range(1, T + 1):
            up = self.upper_history[i - 1][P_idx] if self.finite else self._upper_at(P, i)
            wrong = above != up[:, None]
            out[i - 1] = float(np.mean(np.max(np.where(wrong, dist, 0.0), axis=0)))
        return out, P

    def t_hat(self) -> int:
        """``T-hat`` of eq. (A.2), in 1..T."""
        T = self.iteration
        if self._t_hat_cache is None or self._t_hat_cache[0] != T:
            losses, _ = self.expected_max_losses()
            self._t_hat_cache = (T, int(np.argmin(losses)) + 1)
        return self._t_hat_cache[1]

    def recommend(self, final_update: bool = False) -> LevelSetEstimate:
        """``(H_T-hat, L_T-hat)`` of Algorithm 2/3; ``final_update=True`` gives the current sets."""
        if final_update or self.iteration == 0:
            return self.estimate()
        t = self.t_hat()
        threshold = self.threshold
        upper_at = self._upper_at

        def _classify(X: np.ndarray) -> np.ndarray:
            return upper_at(np.asarray(X, dtype=np.float64).reshape(-1, self._d), t)

        upper = self.upper_history[t - 1] if self.finite else None
        return LevelSetEstimate(
            threshold, t, self.candidates if self.finite else None, upper, _classify
        )

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update({"a": self.a, "b": self.b, "n_samples": self.n_samples})
        return d


class Straddle(LevelSetPolicy):
    """Straddle heuristic (Bryan et al. 2005; Sec. 2.4): ``argmax beta^(1/2) sigma - |mu - theta|``
    with the constant ``beta^(1/2) = sqrt_beta`` (paper: 3), no clipping, no randomness."""

    method_id: ClassVar[str] = "straddle"

    def __init__(self, space: Any, threshold: float, *, sqrt_beta: float = 3.0, **kw: Any) -> None:
        sqrt_beta = _finite_float(sqrt_beta, "sqrt_beta")
        if sqrt_beta < 0:
            raise InvalidInputError(f"sqrt_beta must be >= 0, got {sqrt_beta}")
        super().__init__(space, threshold, **kw)
        self.sqrt_beta = sqrt_beta

    def _prepare_step(self, t: int) -> None:
        self.sqrt_betas.append(self.sqrt_beta)

    def _score(self, mean: np.ndarray, std: np.ndarray, t: int) -> np.ndarray:
        return straddle(mean, std, self.threshold, self.sqrt_beta)


class LSE(LevelSetPolicy):
    """LSE of Gotovos et al. (2013) as the paper runs it (Sec. 5.1-5.3).

    AF ``min{ucb~_{t-1} - theta, theta - lcb~_{t-1}}`` with ``beta_t^(1/2) =
    sqrt(2 log(|X| pi^2 t^2 / (6 delta)))`` (:class:`boloop.confidence.GotovosLSEBeta`), accuracy
    ``epsilon = 0``, argmax over all of X. With ``intersect=True`` (default on finite sets, as the
    paper) ``ucb~ = min_{i <= t} ucb_{i-1}`` and ``lcb~ = max_{i <= t} lcb_{i-1}``, each with its own
    ``beta_i``; without it (boxes, as the paper) the current bounds. ``cardinality`` is the ``|X|``
    of the formula: the number of candidates on a finite set, ``10^15`` on a box (the paper's).
    ``restart_intersection`` (default True; only with fitted hyperparameters and ``intersect``)
    starts the intersection again from ``Q_t`` when the model's hyperparameters change
    (:meth:`_intersect`); False keeps intersecting across kernels, as boloop did before, which a
    study created then is built with (:data:`boloop.study.pinning.ADDED_LATER`).
    """

    method_id: ClassVar[str] = "lse"

    def __init__(
        self,
        space: Any,
        threshold: float,
        *,
        cardinality: float | None = None,
        delta: float = 0.05,
        intersect: bool | None = None,
        restart_intersection: bool = True,
        **kw: Any,
    ) -> None:
        if not isinstance(restart_intersection, bool | np.bool_):
            raise InvalidInputError(
                f"restart_intersection must be True or False, got {restart_intersection!r}"
            )
        super().__init__(space, threshold, **kw)
        if cardinality is None:
            cardinality = float(self.N) if self.finite else 1e15
        self.schedule = GotovosLSEBeta(cardinality, delta)
        self.intersect = self.finite if intersect is None else bool(intersect)
        if self.intersect and not self.finite:
            raise InvalidInputError("intersect=True needs a finite candidate set (space)")
        #: whether the intersection starts again when the fitted hyperparameters change
        self.restart_intersection = bool(restart_intersection)
        self._ucb: np.ndarray | None = None
        self._lcb: np.ndarray | None = None
        self._intersect_version = -1

    def _prepare_step(self, t: int) -> None:
        sb = self.schedule.sqrt_beta(t)
        self.sqrt_betas.append(sb)
        if self.intersect:
            self._intersect(sb)

    def _intersect(self, sb: float) -> None:
        """``C_t = C_{t-1} cap Q_t`` (Gotovos et al. 2013, Sec. 3) at the candidates.

        With learned hyperparameters the intersection restarts from ``Q_t`` whenever the model's
        hyperparameters changed since the last step (a refit, or the widening of
        :meth:`LevelSetPolicy._widen_if_overconfident`), unless ``restart_intersection=False``
        (the behaviour before the restart existed): the nesting of the ``Q_i`` holds for
        one GP conditioned on more and more data, not across kernels, and keeping a past model's
        intervals keeps its overconfidence for ever (issue 18's coating map: LSE stayed at F ~ 0.42
        on the intervals of its first long-length-scale fits, the bump never seen).
        """
        mean, std = self.candidate_posterior()
        ucb, lcb = mean + sb * std, mean - sb * std
        fresh = self._ucb is None or (
            self.fit and self.restart_intersection and self.gp.version != self._intersect_version
        )
        self._intersect_version = self.gp.version
        if fresh or self._ucb is None or self._lcb is None:  # (None before the first step: fresh then)
            self._ucb, self._lcb = ucb, lcb
        else:
            self._ucb, self._lcb = np.minimum(self._ucb, ucb), np.maximum(self._lcb, lcb)

    def _widen_if_overconfident(self, sd: float, t: int) -> bool:
        widened = super()._widen_if_overconfident(sd, t)
        if widened and self.intersect:
            self._intersect(self.sqrt_betas[-1])  # Q_t of the widened model (a new kernel)
        return widened

    @property
    def intersected_bounds(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(lcb~_{t-1}, ucb~_{t-1})`` at the candidates, each (N,) (copies): the running
        intersection ``max_{i <= t} lcb_{i-1}``, ``min_{i <= t} ucb_{i-1}`` of the confidence
        intervals that LSE classifies by (Gotovos et al. 2013, Sec. 3, ``C_t = C_{t-1} cap Q_t``).
        ``None`` before the first iteration or without ``intersect``."""
        if self._ucb is None or self._lcb is None:
            return None
        return self._lcb.copy(), self._ucb.copy()

    def _score_candidates(self, t: int) -> np.ndarray:
        if self.intersect:
            assert self._ucb is not None and self._lcb is not None
            return np.minimum(self._ucb - self.threshold, self.threshold - self._lcb)
        return super()._score_candidates(t)

    def _score(self, mean: np.ndarray, std: np.ndarray, t: int) -> np.ndarray:
        return straddle(mean, std, self.threshold, self.sqrt_betas[-1])


class MILE(LevelSetPolicy):
    """MILE of Zanette et al. (2019) with ``beta^(1/2) = sqrt_beta`` (paper: 3), i.e. robust MILE
    with ``epsilon = 0`` and ``gamma = -inf`` (Sec. 5.1); finite candidate sets only.

    See :func:`mile_acquisition`. The posterior covariance rows ``k(C_B, C) - V_B^T V``, with
    ``V = L^{-1} K(X, C)`` from the candidate cache, are formed in blocks, O(N_active N n) per step.
    When ``N <= max_dense`` (default 3000: 72 MB) the posterior covariance over the candidates is
    instead kept and downdated by one rank-one term ``v_i v_i^T`` per observation, O(N^2) per step;
    for larger N no N x N matrix is ever held.
    """

    method_id: ClassVar[str] = "mile"
    supports_box: ClassVar[bool] = False

    def __init__(
        self,
        space: Any,
        threshold: float,
        *,
        sqrt_beta: float = 3.0,
        max_dense: int = 3000,
        **kw: Any,
    ) -> None:
        sqrt_beta = _finite_float(sqrt_beta, "sqrt_beta")
        super().__init__(space, threshold, **kw)
        self.sqrt_beta = sqrt_beta
        self.max_dense = int(max_dense)
        self.last_active = 0
        self._sigma: np.ndarray | None = None  # dense posterior covariance (N <= max_dense)
        self._sigma_n = 0
        self._sigma_version = -1

    def _prepare_step(self, t: int) -> None:
        self.sqrt_betas.append(self.sqrt_beta)

    def _cached_V(self) -> np.ndarray:
        return self.cache.whitened_cross_covariance

    def _sync_dense(self) -> np.ndarray:
        V = self._cached_V()
        n = V.shape[0]
        if self._sigma is None or self.gp.version != self._sigma_version or n < self._sigma_n:
            self._sigma = self.gp.kernel.k(self.candidates)
            self._sigma_n, self._sigma_version = 0, self.gp.version
        S = self._sigma
        W = V[self._sigma_n : n]  # rows not yet subtracted: S -= W^T W, in row blocks
        if W.shape[0]:
            for start in range(0, self.N, 512):
                blk = slice(start, start + 512)
                if W.shape[0] == 1:
                    S[blk] -= np.multiply.outer(W[0, blk], W[0])
                else:
                    S[blk] -= W[:, blk].T @ W
        self._sigma_n = n
        return S

    def _covariance_rows(self, idx: np.ndarray) -> np.ndarray:
        if self.N <= self.max_dense:
            return self._sync_dense()[idx]  # a copy (fancy indexing)
        rows = self.gp.kernel.k(self.candidates[idx], self.candidates)
        V = self._cached_V()
        if V.shape[0]:
            rows -= V[:, idx].T @ V
        return rows

    def posterior_covariance_rows(self, idx: Any) -> np.ndarray:
        """Rows ``Sigma_t[idx, :]`` (k, N) of the current posterior covariance over the
        candidates (R&W eq. 2.24): the ``k_{t-1}(x, x*)`` of MILE's one-step look-ahead
        (Zanette et al. 2019; :func:`mile_acquisition`). Read from the downdated dense matrix when
        ``N <= max_dense``, else computed in one block; a new array either way."""
        i = np.asarray(idx)
        if (
            i.ndim != 1
            or not np.issubdtype(i.dtype, np.integer)
            or (i.size and (i.min() < -self.N or i.max() >= self.N))
        ):
            raise InvalidInputError(f"idx must be a 1-D array of candidate indices (< {self.N})")
        return self._covariance_rows(i)

    def _score_candidates(self, t: int) -> np.ndarray:
        a, self.last_active = mile_acquisition(
            self.cache.mean,
            self.cache.variance,
            self.threshold,
            self.sqrt_beta,
            self.gp.noise_variance,
            self._covariance_rows,
        )
        return a


class UncertaintySampling(LevelSetPolicy):
    """Uncertainty sampling: ``argmax sigma^2_{t-1}(x)`` (Sec. 5.1, "US")."""

    method_id: ClassVar[str] = "us"

    def _score(self, mean: np.ndarray, std: np.ndarray, t: int) -> np.ndarray:
        return np.asarray(std) ** 2

    def _score_and_gradient(
        self, mean: float, std: float, dmean: np.ndarray, dstd: np.ndarray, t: int
    ) -> tuple[float, np.ndarray]:
        return std * std, 2.0 * std * dstd


class RandomSampling(LevelSetPolicy):
    """Uniform random queries (Sec. 5.1, "Random"); observed candidates are excluded when
    ``allow_repeats=False``. Sets are still estimated with the posterior mean."""

    method_id: ClassVar[str] = "random"

    def _propose(self) -> Query:
        if self._n_obs < self.n_initial:
            return self._initial_query()
        self._n_at_iteration.append(self.gp.n)
        self.sqrt_betas.append(math.nan)
        return self._random_query()

    def _score(self, mean: np.ndarray, std: np.ndarray, t: int) -> np.ndarray:
        return np.zeros(np.shape(mean))
