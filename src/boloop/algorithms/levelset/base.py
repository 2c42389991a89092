"""The level-set policies' shared base: :class:`LevelSetPolicy`, its constructor and options,
the initial design, the ask/tell loop (what is asked first, what an answer or an added
measurement does) and its description.

Paper: Inatsu, Takeno, Kutsukake, Takeuchi, "Active Learning for Level Set Estimation Using
Randomized Straddle Algorithms" (spec ``shared/specs/lse.md``).

The policy's other parts are its mixins, each working on the policy's own state: the posterior
and the estimated sets of eq. (3.1) (:mod:`~boloop.algorithms.levelset.estimates`), the choice
of the next query (:mod:`~boloop.algorithms.levelset.selection`), the learned hyperparameters
(:mod:`~boloop.algorithms.levelset.hyperparameters`) and the stall
(:mod:`~boloop.algorithms.levelset.stall`). The policies built on it are in
:mod:`~boloop.algorithms.levelset.randomized_straddle` (the paper's) and
:mod:`~boloop.algorithms.levelset.baselines`.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from boloop.algorithms.levelset.estimates import LevelSetEstimates
from boloop.algorithms.levelset.hyperparameters import LevelSetHyperparameters, _resolve_learning
from boloop.algorithms.levelset.selection import LevelSetSelection
from boloop.algorithms.levelset.stall import LevelSetStall
from boloop.errors import InvalidInputError, QueryStateError
from boloop.gp.cache import CandidatePosterior, FixedPointsMean
from boloop.gp.exact import ExactGP
from boloop.gp.hyperparameters import HyperparameterLearning, default_kernel, space_filling_design
from boloop.gp.kernels import Kernel, SquaredExponential
from boloop.queries import BasePolicy, Evaluate, Query
from boloop.spaces import Box, CandidateSet


def _finite_float(value: Any, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a number, got {value!r}") from exc
    if not math.isfinite(v):
        raise InvalidInputError(f"{name} must be finite, got {value!r}")
    return v


class LevelSetPolicy(
    LevelSetEstimates, LevelSetSelection, LevelSetHyperparameters, LevelSetStall, BasePolicy
):
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


_REFIT_RESTARTS = ("every", "doubling")
