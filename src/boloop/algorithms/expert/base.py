"""The expert family's shared policy (Xu et al., COBOL): data, the GP of f, the expert's
likelihood-ratio model, the initial design, recommendation and prediction."""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from boloop._validation import integer_at_least as _count
from boloop.errors import InvalidInputError, OutOfSpaceError, QueryStateError
from boloop.gp.exact import ExactGP, GammaPrior
from boloop.gp.kernels import SquaredExponential
from boloop.gp.likelihood_ratio import LikelihoodRatioModel
from boloop.gp.optimize import perturb_on_box
from boloop.queries import BasePolicy, Evaluate, Label, Query
from boloop.recommendations import BestPoint
from boloop.spaces import Box, CandidateSet

logger = logging.getLogger("boloop")

_BIG = 1e6  # penalty offset for infeasible points in the constrained variant

#: two points count as the same point (the same question to the expert, the same proposal) when
#: they differ by at most this much in every unit-cube coordinate
SAME_POINT = 0.01


def _number(value: Any, name: str, *, low: float | None = None, allow_inf: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a number, got {value!r}") from exc
    if math.isnan(v) or (math.isinf(v) and not allow_inf):
        raise InvalidInputError(f"{name} must be finite, got {value!r}")
    if low is not None and v < low:
        raise InvalidInputError(f"{name} must be >= {low}, got {value!r}")
    return v


def _pair(value: Any, name: str) -> tuple[Any, Any]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise InvalidInputError(f"{name} must be a pair (X, values), got {type(value).__name__}")
    return value[0], value[1]


def _accepted(value: Any, n: int) -> np.ndarray:
    """Labels ``accepted`` (n,) as booleans, validated like a Label answer (bools only)."""
    items = list(value) if isinstance(value, list | tuple | np.ndarray) else [value]
    if len(items) != n:
        raise InvalidInputError(f"accepted must hold {n} booleans, got {len(items)}")
    for a in items:
        if not isinstance(a, bool | np.bool_):
            raise InvalidInputError(f"accepted must hold booleans (True = accept), got {a!r}")
    return np.array([bool(a) for a in items], dtype=bool)


def _gap(U: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Largest coordinate difference (n,) between each row of U (n, d) and u (d,)."""
    return np.max(np.abs(U - u), axis=1)


class ExpertPolicy(BasePolicy):
    """Shared machinery of the expert family: initial design, scaling, the f-GP, candidates.

    Parameters
    ----------
    space:
        A :class:`~boloop.spaces.Box` or a :class:`~boloop.spaces.CandidateSet`.
    seed:
        Seed or Generator; all randomness comes from it.
    n_initial:
        Initial uniformly random evaluations (paper: 3).
    n_initial_labels:
        Initial labels at uniform points, for the policies that use labels (paper: 10). On a
        finite set at most its number of points, each at a point not labelled yet
        (:meth:`_initial_label_point`).
    fit_hyperparameters:
        Fit the f-kernel length-scales by marginal likelihood every time f data arrive (paper);
        otherwise keep ``lengthscale``.
    lengthscale:
        Initial (or fixed) length-scale(s) in unit-cube coordinates.
    noise_variance:
        GP noise ``r`` on standardised outputs (Table 3 and the reference code: 1e-4): fixed,
        or with ``fit_noise`` the largest noise the fit may choose.
    fit_output_scale, fit_noise, noise_floor:
        Which hyperparameters besides the length-scales the marginal likelihood fits (when
        ``fit_hyperparameters``). Default: the output scale, and the noise within
        ``[noise_floor, r]`` (``noise_floor`` 1e-6, the reference code's numerical epsilon):
        Table 3 fits the f-kernel's hyperparameters as BoTorch does by default (output scale
        and noise included); the reference code fixes output scale 1 and noise ``r``
        (``fit_output_scale=False, fit_noise=False``). A fixed ``r`` on standardised outputs
        fixes the model's resolution at ``sqrt(r)`` = 1% of the outputs' standard deviation,
        which a heavy-tailed objective (Rosenbrock on [-5, 10]^3: values 0 to 1e6, standard
        deviation ~3e5) turns into a noise level of a few thousand, above every value near the
        optimum (issue 12); the cap ``r`` keeps the fit from explaining a multimodal objective
        as noise (a free noise went to ~1 on Michalewicz 5-D).
    beta:
        A fixed ``beta_f`` (the multiplier of the std); ``None``: Lemma 3.1 with ``B_f``,
        ``sigma`` = the GP's noise variance (the paper sets ``sigma = r``; with ``fit_noise``
        the fitted ``r``), and ``delta``.
    n_candidates:
        Uniformly random points (from the policy's generator) scored per iteration on a box,
        besides the measured points; the best few are then refined locally.
    initial_observations:
        Measurements ``(X, y)`` the user already has (X (k, d) in the space, y (k,) finite):
        given to :meth:`add_observations` at construction; they take the place of as many
        initial random evaluations.
    refit_growth:
        When the hyperparameters are refitted (warm-started from the last fit). ``0.1``
        (default, as the library's other families, :mod:`boloop.gp.hyperparameters`): once the
        f data have grown by this fraction since the last fit (at least one point: every new
        point up to 10 points, then every second, ..., about every 28th at 300); in between the GP
        is conditioned on the new data with the hyperparameters kept. The refit is most of a
        command-line ask's time (issue 15). ``0``: refitted whenever f data arrive (the
        paper's protocol, Sec. 5).
    """

    family = "expert"
    uses_labels = False
    accepts_measurements = True  # observe(points, values) -> add_observations
    iteration_meaning = (
        "one per evaluation of f (labels are counted apart); the initial labels and "
        "evaluations are not iterations"
    )
    recommendation_meaning = (
        "the measured point with the lowest predicted value (the expert family minimises)"
    )
    answer_counts = ("labels", "evaluations")
    #: a study's note on a rejected setting measured anyway reads labels within this much of
    #: the setting as labels of it (:meth:`proposed_by` says why it is measured)
    same_point = SAME_POINT

    @property
    def beta_f(self) -> float:
        """Old name of :attr:`sqrt_beta_f`, the multiplier of sigma."""
        return self.sqrt_beta_f

    def __init__(
        self,
        space: Box | CandidateSet,
        seed: int | np.random.Generator | None = 0,
        *,
        n_initial: int = 3,
        n_initial_labels: int = 10,
        fit_hyperparameters: bool = True,
        lengthscale: float | Any = 0.3,
        noise_variance: float = 1e-4,
        fit_output_scale: bool = True,
        fit_noise: bool = True,
        noise_floor: float = 1e-6,
        beta: float | None = None,
        B_f: float = 1.0,
        delta: float = 0.01,
        n_candidates: int = 512,
        n_restarts: int = 1,
        initial_observations: Any = None,
        refit_growth: float = 0.1,
    ) -> None:
        super().__init__(seed)
        if not isinstance(space, Box | CandidateSet):
            raise InvalidInputError(
                f"space must be a Box or a CandidateSet, got {type(space).__name__}"
            )
        self.space = space
        self.dim = space.dim
        self._finite = isinstance(space, CandidateSet)
        self._box = space.box if isinstance(space, CandidateSet) else space
        self.n_initial = _count(n_initial, "n_initial", 1)
        self.n_initial_labels = _count(n_initial_labels, "n_initial_labels", 0)
        self.fit_hyperparameters = bool(fit_hyperparameters)
        self.noise_variance = _number(noise_variance, "noise_variance", low=1e-12)
        self.sqrt_beta_fixed = None if beta is None else _number(beta, "beta", low=0.0)
        self.B_f = _number(B_f, "B_f", low=0.0)
        self.delta = _number(delta, "delta", low=1e-12)
        self.n_candidates = _count(n_candidates, "n_candidates", 1)
        self.n_restarts = _count(n_restarts, "n_restarts", 0)
        self.refit_growth = _number(refit_growth, "refit_growth", low=0.0)
        self._last_fit_n = 0
        ls = np.broadcast_to(np.asarray(lengthscale, dtype=np.float64), (self.dim,)).copy()
        if np.any(ls <= 0) or not np.all(np.isfinite(ls)):
            raise InvalidInputError(f"lengthscale must be positive, got {lengthscale!r}")
        priors = {"lengthscale": GammaPrior(3.0, 6.0)} if self.fit_hyperparameters else None
        self.fit_output_scale = bool(fit_output_scale)
        self.fit_noise = bool(fit_noise)
        self.noise_floor = _number(noise_floor, "noise_floor", low=1e-12)
        if self.fit_noise and self.noise_floor > self.noise_variance:
            raise InvalidInputError(
                f"noise_floor ({noise_floor!r}) must be at most noise_variance ({noise_variance!r})"
            )
        self.gp = ExactGP(
            SquaredExponential(
                lengthscale=ls,
                variance=1.0,
                fixed=() if self.fit_output_scale else ("variance",),
            ),
            noise_variance=self.noise_variance,
            fit_noise=self.fit_noise,
            noise_floor=self.noise_floor,
            priors=priors,
        )
        # data in unit-cube coordinates; y raw
        self.X_f = np.zeros((0, self.dim))
        self.y_f = np.zeros(0)
        self.X_g = np.zeros((0, self.dim))
        self.rejected = np.zeros(0)
        self._gp_stale = True
        self._y_mean, self._y_std = 0.0, 1.0
        # the shared initial design: drawn first so every method gets the same points per seed
        self._init_f = self._sample_unit(self.n_initial)
        # the initial label points are drawn by every policy, used or not: the policies of one
        # seed then share the random stream that follows (common random numbers), so COBOL
        # taking GP-LCB's steps repeats GP-LCB's run exactly
        init_g = self._sample_unit(self.n_initial_labels)
        if self._finite:  # a finite set has only n points to ask about without asking twice
            assert isinstance(space, CandidateSet)
            init_g = (init_g[0][: space.n], None if init_g[1] is None else init_g[1][: space.n])
        self._init_g = init_g if self.uses_labels else (np.zeros((0, self.dim)), None)
        self.initial_query_ids: set[int] = set()
        self.outcomes: list[str] = []
        #: the last evaluation asked and who chose its point (:meth:`proposed_by`)
        self._proposer: tuple[int, str] | None = None
        self.n_evaluations = 0  # |Q^f| after the initial design
        self.n_expert_queries = 0  # |Q^g| after the initial design
        if initial_observations is not None:
            self.add_observations(*_pair(initial_observations, "initial_observations"))

    # ------------------------------------------------------------------ space helpers
    def _sample_unit(self, k: int) -> tuple[np.ndarray, np.ndarray | None]:
        """``k`` uniform points in unit coordinates (and their indices on a finite set)."""
        if self._finite:
            assert isinstance(self.space, CandidateSet)
            idx = self.rng.integers(0, self.space.n, size=k)
            return self.space.to_unit()[idx], idx
        return self.rng.random((k, self.dim)), None

    def _to_unit(self, x: np.ndarray) -> np.ndarray:
        return np.clip(self._box.to_unit(np.asarray(x, dtype=np.float64).reshape(1, -1)), 0, 1)

    def _from_unit(self, u: np.ndarray) -> np.ndarray:
        return self._box.from_unit(np.asarray(u, dtype=np.float64).reshape(1, -1))[0]

    def _candidates(self) -> tuple[np.ndarray, np.ndarray | None]:
        """Candidate points in unit coordinates (m, d) and their indices on a finite set."""
        if self._finite:
            assert isinstance(self.space, CandidateSet)
            return self.space.to_unit(), np.arange(self.space.n)
        # uniform points from the policy's generator: a scrambled Sobol set (scipy.stats.qmc)
        # covers the box a little more evenly, but importing scipy.stats costs every
        # command-line ask ~0.2 s (issue 15), and the best candidates are refined locally anyway
        U = self.rng.random((self.n_candidates, self.dim))
        extra = [self.X_f] if self.X_f.size else []
        return np.vstack([U, *extra]), None

    def _ask_unit(
        self, u: np.ndarray, index: int | None, kind: str, calibration: bool = False
    ) -> Query:
        if self._finite:
            assert isinstance(self.space, CandidateSet) and index is not None
            x = self.space.points[int(index)]
        else:
            x = self._from_unit(u)
        if kind == "label":
            return self._new_label(x, index, calibration=calibration)
        return self._new_evaluate(x, index)

    def _nearest_index(self, u: np.ndarray) -> int | None:
        if not self._finite:
            return None
        assert isinstance(self.space, CandidateSet)
        return int(np.argmin(np.sum((self.space.to_unit() - u) ** 2, axis=1)))

    # ------------------------------------------------------------------ f model
    def _sync_gp(self) -> None:
        """Standardise y and (re)fit the GP if f data changed (Sec. 5: every iteration)."""
        if not self._gp_stale:
            return
        y = self.y_f
        self._y_mean = float(np.mean(y))
        sd = float(np.std(y))
        self._y_std = sd if sd > 0 else 1.0
        self._fit_gp(self.gp, self.rng, self._y_mean, self._y_std)
        self._gp_stale = False
        self._on_gp_refit()

    def _fit_gp(self, gp: ExactGP, rng: np.random.Generator, y_mean: float, y_std: float) -> None:
        """Give ``gp`` the standardised f data and fit its length-scales (seed drawn from rng)."""
        ys = (self.y_f - y_mean) / y_std
        gp.set_data(self.X_f, ys)
        n = gp.n
        due = n - self._last_fit_n >= max(1.0, self.refit_growth * self._last_fit_n)
        if self.fit_hyperparameters and n >= 2 and due:
            if gp is self.gp:
                self._last_fit_n = n
            seed = int(rng.integers(2**31))
            bounds = {"noise": (self.noise_floor, self.noise_variance)} if self.fit_noise else None
            try:
                gp.fit(n_restarts=self.n_restarts, seed=seed, bounds=bounds)
            except Exception as exc:  # keep the previous hyperparameters
                logger.debug("GP fit failed (%s); keeping hyperparameters", exc)
                gp.set_data(self.X_f, ys)

    def _on_gp_refit(self) -> None:
        """Hook: COBOL copies the length-scales to k_g."""

    def _lengthscale(self) -> np.ndarray:
        """The f-kernel's length-scales (d,) in unit-cube coordinates."""
        k = self.gp.kernel
        assert isinstance(k, SquaredExponential)
        return np.atleast_1d(np.asarray(k.lengthscale, dtype=np.float64)).copy()

    @property
    def sqrt_beta_f(self) -> float:
        """``beta_f`` of Lemma 3.1: ``B_f + sigma sqrt(2 (gamma + 1 + ln(2/delta)))`` with
        ``sigma = r`` (Table 3; the fitted noise with ``fit_noise``) and ``gamma`` the
        information gain of the observed points."""
        if self.sqrt_beta_fixed is not None:
            return self.sqrt_beta_fixed
        try:
            gamma = self.gp.information_gain() if self.gp.n else 0.0
            val = self.B_f + self.gp.noise_variance * math.sqrt(
                2 * (gamma + 1 + math.log(2 / self.delta))
            )
        except Exception:
            return 1.0
        return val if math.isfinite(val) and val >= 0 else 1.0

    def _f_bounds(self, U: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(f_lower, f_upper, std)`` at U (m, d) in standardised units (eq. 2a/2b, Lemma 3.1)."""
        mean, var = self.gp.predict(U)
        std = np.sqrt(var)
        b = self.sqrt_beta_f
        return mean - b * std, mean + b * std, std

    def _f_lower(self, U: np.ndarray) -> np.ndarray:
        """LCB of f at unit-cube points U (n, d), shape (n,): the vanilla GP-LCB score."""
        return self._f_bounds(U)[0]

    def _f_upper(self, U: np.ndarray) -> np.ndarray:
        """UCB of f at unit-cube points U (n, d), shape (n,)."""
        return self._f_bounds(U)[1]

    def _minimise(
        self,
        score: Callable[[np.ndarray], np.ndarray],
        U: np.ndarray,
        idx: np.ndarray | None,
        *,
        values: np.ndarray | None = None,
        n_keep: int = 3,
        radii: tuple[float, ...] = (0.05, 0.015, 0.004),
        n_local: int = 24,
    ) -> tuple[np.ndarray, int | None, float]:
        """Minimise ``score`` (batched, (m, d) -> (m,)) over candidates, then refine locally."""
        vals = score(U) if values is None else values
        i = int(np.argmin(vals))
        if idx is not None:
            return U[i], int(idx[i]), float(vals[i])
        x, v = perturb_on_box(
            score, U, vals, self.rng, n_keep=n_keep, radii=radii, n_local=n_local
        )
        return x, None, v

    # ------------------------------------------------------------------ BasePolicy
    def _propose(self) -> Query:
        n_lab_init = self._init_g[0].shape[0]
        if self.uses_labels and self._n_init_labels_done() < n_lab_init:
            u, index = self._initial_label_point(self._n_init_labels_done())
            q = self._mark_initial(self._ask_unit(u, index, "label"))
            self.initial_query_ids.add(q.id)
            return q
        if self._n_init_evals_done() < self.n_initial:
            k = self._n_init_evals_done()
            U, idx = self._init_f
            q = self._mark_initial(
                self._ask_unit(U[k], None if idx is None else int(idx[k]), "evaluate")
            )
            self.initial_query_ids.add(q.id)
            self._proposer = (q.id, "initial")
            return q
        return self._bo_propose()

    def _evaluate_by(self, u: np.ndarray, index: int | None, who: str) -> Query:
        """Ask to evaluate the point ``u`` (unit cube; ``index`` on a finite set), chosen by
        ``who`` (:meth:`proposed_by`)."""
        q = self._ask_unit(u, index, "evaluate")
        self._proposer = (q.id, who)
        return q

    def proposed_by(self, query_id: int) -> str | None:
        """Who chose the point of the evaluation ``query_id`` (the last one asked):
        ``"initial"`` (the random initial design), ``"gp-lcb"`` (GP-LCB's own step, ``x^u =
        argmin f_lower``, line 5 of Xu et al.'s Algorithm 1: COBOL's vanilla step, its
        calibration step, its step once the expert is dismissed, and the expert-augmented
        proposal where it is the same point), ``"expert"`` (a proposal that weighs the expert's
        labels: COBOL's ``x^c`` where it differs from ``x^u``, an accepted proposal), ``"random"``
        (a uniformly random point: random search, expert sampling's cap); None for another
        query, or a method that does not say."""
        found = getattr(self, "_proposer", None)  # (a policy pickled before it was kept)
        return found[1] if found is not None and found[0] == query_id else None

    def _initial_label_point(self, k: int) -> tuple[np.ndarray, int | None]:
        """The point of the ``k``-th initial label (unit cube) and its index on a finite set.

        The point drawn at the start, except on a finite set where the expert has labelled it
        already (within :data:`SAME_POINT`: a label the user gave, ``initial_labels``, or an
        earlier draw of the same candidate): then a candidate drawn uniformly among those not
        labelled yet, or where every candidate is that close to a label, the one farthest from
        the labels: a person is not asked again about a point they answered (as with
        ``ask_again=False`` in the BO phase). On a box the draw is kept: the same point again
        has probability 0 (one within :data:`SAME_POINT` in every coordinate, at most
        ``(2 SAME_POINT)^d`` per label).
        """
        U, idx = self._init_g
        if idx is None:
            return U[k], None
        labelled = self.X_g
        if not labelled.shape[0] or np.min(_gap(labelled, U[k])) > SAME_POINT:
            return U[k], int(idx[k])
        assert isinstance(self.space, CandidateSet)
        C = self.space.to_unit()
        gap = np.full(C.shape[0], np.inf)
        for v in labelled:
            gap = np.minimum(gap, _gap(C, v))
        free = np.flatnonzero(gap > SAME_POINT)
        i = int(free[self.rng.integers(free.size)]) if free.size else int(np.argmax(gap))
        return C[i], i

    def _n_init_labels_done(self) -> int:
        return min(self.X_g.shape[0], self._init_g[0].shape[0])

    def _n_init_evals_done(self) -> int:
        return min(self.X_f.shape[0], self.n_initial)

    def _observe(self, query: Query, answer: Any) -> None:
        u = self._to_unit(query.x)  # type: ignore[attr-defined]
        if isinstance(query, Evaluate):
            self.X_f = np.vstack([self.X_f, u])
            self.y_f = np.concatenate([self.y_f, [float(answer)]])
            self._gp_stale = True
            if query.id not in self.initial_query_ids:
                self.n_evaluations += 1
            self._after_evaluation(query)
        elif isinstance(query, Label):
            rejected = 0.0 if bool(answer) else 1.0
            self._add_label(u, rejected, initial=query.id in self.initial_query_ids)
            self.X_g = np.vstack([self.X_g, u])
            self.rejected = np.concatenate([self.rejected, [rejected]])
            if query.id not in self.initial_query_ids:
                self.n_expert_queries += 1
            self._after_label(query, bool(answer))
        else:  # pragma: no cover - only adachi-2024 asks Compare, and handles it itself
            raise InvalidInputError(f"unexpected query kind {query.kind}")

    def _add_measurements(self, X: np.ndarray, values: list[Any]) -> None:
        self.add_observations(X, values)  # the contract's observe(points, values)

    def add_observations(self, X: Any, y: Any) -> None:
        """Add evaluations of f the user made on their own: X (k, d) in the space, y (k,) finite.

        They update the f-model exactly as answered :class:`~boloop.queries.Evaluate` queries at
        the same points would (appended to the data, outputs re-standardised and the GP refitted
        at the next proposal) and, like the initial design, they fill the initial-evaluation
        slots that are still open (the policy then skips that many of its initial points). They
        are not iterations and not BO-phase evaluations: ``iteration``, ``n_evaluations``,
        ``outcomes`` and the expert dialogue (reject streaks, a pending accepted point) are
        untouched (a simulation's metric tracker never sees them: they are the user's points, not
        the policy's, so they enter no regret). Labels cannot be added this way (they are expert
        answers, not f).

        Raises :class:`~boloop.errors.QueryStateError` while a query is open (answer it first)
        and :class:`~boloop.errors.InvalidInputError` /
        :class:`~boloop.errors.OutOfSpaceError` on bad input; nothing changes then.
        """
        if self.pending is not None:
            raise QueryStateError("answer the open query before adding observations")
        Xa = self.space.validate(X, "X")
        items = np.asarray(y, dtype=object).reshape(-1)
        if not all(
            isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_) for v in items
        ):  # as tell: no booleans, no strings
            raise InvalidInputError(f"y must be numbers, got {y!r}")
        ya = items.astype(np.float64)
        if ya.shape[0] != Xa.shape[0] or not np.all(np.isfinite(ya)):
            raise InvalidInputError(f"y must hold {Xa.shape[0]} finite values, got {y!r}")
        U = np.clip(self._box.to_unit(Xa), 0.0, 1.0)
        self.X_f = np.vstack([self.X_f, U])
        self.y_f = np.concatenate([self.y_f, ya])
        self._gp_stale = True

    def _add_label(self, u: np.ndarray, rejected: float, initial: bool) -> None:
        """Hook: update the expert model (must not change state if it raises)."""

    def _after_evaluation(self, query: Evaluate) -> None:
        """Hook after an evaluation is stored."""

    def _after_label(self, query: Label, accepted: bool) -> None:
        """Hook after a label is stored."""

    def _iteration_done(self, query: Query, answer: Any) -> bool:
        if query.id in self.initial_query_ids:
            return False
        return True

    def _bo_propose(self) -> Query:
        raise NotImplementedError

    def recommend(self) -> BestPoint:
        """The evaluated point with the lowest posterior mean (original coordinates); its
        ``point`` is None before the first evaluation.

        Free of side effects: when the GP is out of date the refit is done on a copy, with the
        seed the policy's next refit will draw (read from a copy of its generator), so calling
        this between answers changes nothing the policy does next."""
        if not self.X_f.shape[0]:
            return BestPoint(None)
        gp = self.gp
        if self._gp_stale:
            import copy

            gp = self.gp.copy()
            sd = float(np.std(self.y_f))
            self._fit_gp(gp, copy.deepcopy(self.rng), float(np.mean(self.y_f)), sd or 1.0)
        mean, _ = gp.predict(self.X_f)
        i = int(np.argmin(mean))
        return BestPoint(self._from_unit(self.X_f[i]))

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(
            {
                "evaluations": self.n_evaluations,
                "expert_queries": self.n_expert_queries,
                "beta_f": self.sqrt_beta_f,
                "lengthscale": self._lengthscale().tolist(),
                "outcomes": {k: self.outcomes.count(k) for k in sorted(set(self.outcomes))},
            }
        )
        return d

    def predict(self, points: Any, *, bounds: bool = False) -> dict[str, np.ndarray]:
        """The models at ``points`` (m, d) in the space's coordinates, without side effects.

        ``f_mean``, ``f_std`` (m,): the posterior mean and standard deviation of the f-GP
        (Sec. 3; fitted to standardised values, returned in the units of the measurements). For
        a policy with an expert model (COBOL), also the expert's latent ``g`` (Sec. 3.2: the
        logit of rejecting, ``g <= 0`` where the expert accepts): ``g`` its maximum-likelihood
        estimate and, with ``bounds=True``, ``g_lower``, ``g_upper`` the confidence-set bounds
        (39) and (38) (one small optimisation per point: about a millisecond each); the
        likelihood-ratio confidence set has no Gaussian posterior, so no std.

        Computed on a copy of the policy: a refit pending since the last measurement (which
        draws a seed from the policy's generator) runs on the copy, so the policy's state, its
        generator and its next query are exactly as if this had not been called. Raises
        :class:`~boloop.errors.InvalidInputError` before the first measurement.
        """
        import copy

        X = np.asarray(points, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.dim or not np.all(np.isfinite(X)):
            raise InvalidInputError(f"points must be a finite (m, {self.dim}) array")
        if not self.X_f.shape[0]:
            raise InvalidInputError("no measurements of f yet: the model is the prior")
        outside = ~np.asarray(self._box.contains(X), dtype=bool)
        if np.any(outside):
            raise OutOfSpaceError(
                f"points {np.flatnonzero(outside).tolist()} are outside the space's box"
            )
        twin = copy.deepcopy(self)
        twin._sync_gp()
        U = np.clip(self._box.to_unit(X), 0.0, 1.0)
        mean, var = twin.gp.predict(U)
        out = {
            "f_mean": np.asarray(mean) * twin._y_std + twin._y_mean,
            "f_std": np.sqrt(np.maximum(np.asarray(var), 0.0)) * twin._y_std,
        }
        expert = getattr(twin, "expert", None)
        if isinstance(expert, LikelihoodRatioModel) and expert.n:
            out["g"] = expert.mle_predict(U)
            if bounds:
                lo, up = expert.bounds(U)
                assert lo is not None and up is not None
                out["g_lower"], out["g_upper"] = lo, up
        return out
