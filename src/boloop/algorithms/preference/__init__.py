"""Bayesian optimisation from pairwise preferences: MR-LPF, MaxMinLCB and random duels.

Kayal, Vakili, Toni, Shiu, Bernacchia, "Bayesian Optimization from Human Feedback: Near-Optimal
Regret Bounds" (ICML): MR-LPF (Algorithm 1, Section 3) with its round schedule and elimination rule
(eq. 11-12), and the baseline MaxMinLCB of Pasztor et al. (2024), "Bandits with Preference
Feedback: A Stackelberg Game Perspective" (Algorithm 1 there; Appendix D of the BOHF paper).

Every policy works on a finite arm set (the paper's setting): a :class:`~boloop.spaces.CandidateSet`
or an (m, d) array. A continuous :class:`~boloop.spaces.Box` is discretised by a scrambled Sobol
sample of ``n_candidates`` points drawn from the policy's seed. The set must hold at least two
options, no two identical ones (a duel of an option with its copy teaches nothing) and at most
:data:`MAX_OPTIONS` (1,500) options: every method keeps several option-by-option matrices (m x m
float64: 17 MiB each at 1,500 options, 488 MiB at 8,000), so a larger set would exhaust the
memory or take seconds per duel. Otherwise the constructor raises
:class:`~boloop.errors.InvalidInputError` saying how to fix it (a coarser grid, fewer
``n_candidates``, a table of the options worth comparing). Each duel is a
:class:`~boloop.queries.Compare` query ``(a, b)``; the answer 0 means ``a`` is preferred, which is the
paper's ``y = 1{x > x'} = 1`` for ``(x, x') = (a, b)``.

Kernel hyperparameters: give a ``kernel`` (the paper's fixed setting, applied to the raw
coordinates; the problems of :mod:`boloop.problems.preference` carry it in their ``settings``), or
leave ``kernel=None`` for the practitioner's default: a squared-exponential kernel on the
candidates scaled to the unit cube, whose length-scale is chosen from ``lengthscales`` by the
Laplace approximation of the marginal likelihood (Rasmussen and Williams 2006, eq. 3.32) of all
duels so far -- at the end of each MR-LPF round (so the kernel is fixed within a round and the
within-round design stays independent of the labels), and for MaxMinLCB/random duels whenever the
number of duels reaches 10, 20, 40, 80, ...

Example (a person answers; 0 means the first option is preferred)::

    import numpy as np
    from boloop.algorithms.preference import MRLPF

    recipes = np.random.default_rng(0).random((60, 3))      # 60 options, 3 features each
    policy = MRLPF(recipes, horizon=100, seed=0)              # length-scale fitted per round
    for _ in range(100):
        q = policy.ask()                                      # Compare(a, b, a_index, b_index)
        policy.tell(q.id, 0 if taste(q.a) > taste(q.b) else 1)
    best = policy.recommend()                                 # (3,) the estimated best option
    policy.M                                                  # the arms still plausible
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from boloop._validation import finite_real as _real
from boloop._validation import integer_at_least as _count
from boloop.algorithms.registry import options_from, register_method
from boloop.errors import InvalidInputError, QueryStateError
from boloop.gp.hyperparameters import HyperparameterLearning
from boloop.gp.kernels import Kernel, SquaredExponential
from boloop.gp.preference import DuelCovariance, KernelLogisticDuels
from boloop.gp.utility_ep import UtilityPosteriorEP
from boloop.gp.utility_laplace import UtilityPosterior, WarmStart, best_pairs
from boloop.queries import BasePolicy, Compare, Query
from boloop.recommendations import BestPoint
from boloop.spaces import Box, CandidateSet, grid_points_per_axis

__all__ = [
    "MRLPF",
    "MaxMinLCB",
    "RandomDuels",
    "EUBO",
    "RegretAwareEUBO",
    "DoubleThompsonDuels",
    "mrlpf_round_schedule",
    "mrlpf_theory_beta",
    "confidence_beta",
    "DEFAULT_LENGTHSCALES",
    "MAX_OPTIONS",
    "RECOMMEND_RULES",
    "copeland_winner",
]

#: the largest option set a preference method accepts. Every method keeps option-by-option
#: matrices (m x m float64; EUBO and DTS one per model of their hyperparameter grid). Measured
#: with one BLAS thread, 3-D options, the first 12 duels: at 1,500 options the peak memory is
#: 0.7 GB (EUBO, DTS), an ask takes at most 0.9 s (EUBO's first; DTS 0.6 s each) and the
#: occasional refit (MaxMinLCB, random, an MR-LPF round end) 2.7 s; at 2,000 options 1.2 GB,
#: 1.5 s per DTS ask and 6.5 s per refit; at 3,000 2.6 GB, 6-7 s per ask and 18-24 s per refit;
#: a 3-parameter grid of 20 points per axis (8,000 options) would need some 18 GB.
MAX_OPTIONS = 1500
#: length-scales (unit-cube units) tried when the kernel is fitted
DEFAULT_LENGTHSCALES = (0.05, 0.1, 0.2, 0.4, 0.8)
#: how the weight of the duel's utility in :class:`RegretAwareEUBO` changes with the duels
EXPLOIT_SCHEDULES = ("constant", "sharpening")
#: what the optimism of :class:`RegretAwareEUBO`'s duel utility is measured against: the
#: incumbent (``sd(f(x) - f(x_hat))``) or the average utility of all options (``sd(f(x) - f_bar)``)
OPTIMISM_REFERENCES = ("incumbent", "average")
#: which duels already asked may be asked again (:class:`EUBO`)
REPEAT_DUELS = ("allow", "not-in-a-row", "never")
#: how the duel is chosen from the model mixture: its average, or one model drawn by weight
MODEL_CHOICES = ("average", "draw")
#: the Gaussian approximation of the utility posterior: Laplace's method or expectation propagation
APPROXIMATIONS = ("laplace", "ep")
#: the sigmoid's Lipschitz constant over pairs that include x = x' (L = mu'(0) = 1/4)
SIGMOID_L = 0.25
#: kappa_r for r >= 2 in the MR-LPF analysis (eq. 28)
KAPPA_LATER_ROUNDS = 6.0


#: recommendation rules of every preference method (see ``_DuelingPolicy.recommend_index``)
RECOMMEND_RULES = ("utility", "copeland")
#: priors over EUBO's length-scale grid (see ``EUBO._log_prior``)
LENGTHSCALE_PRIORS = ("dimension", "flat", "gamma")
#: ``(concentration, rate)`` of the Gamma length-scale prior of ``lengthscale_prior="gamma"``:
#: the default of BoTorch's ``PairwiseGP`` (inputs in the unit cube), the peer of issue 17
GAMMA_LENGTHSCALE_PRIOR = (2.4, 2.7)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    from scipy.special import expit

    return expit(x)


def copeland_winner(P: np.ndarray, tiebreak: np.ndarray | None = None) -> int:
    """The Copeland winner of a matrix of preference probabilities ``P`` (k, k),
    ``P[i, j] = P(option i preferred to option j)``: the option predicted to beat (``P > 1/2``)
    the most others (the diagonal is ignored); ties go to the larger total ``sum_j P[i, j]``, then
    to the larger ``tiebreak`` (k,), then to the smaller index. The recommendation of the BOHF
    authors' script (spec Sec. 3.5)."""
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape[0] == 0:
        raise InvalidInputError(f"P must be a non-empty square matrix, got shape {P.shape}")
    k = P.shape[0]
    off = ~np.eye(k, dtype=bool)
    wins = np.sum((P > 0.5) & off, axis=1)
    total = np.sum(np.where(off, P, 0.0), axis=1)
    tb = np.zeros(k) if tiebreak is None else np.asarray(tiebreak, dtype=np.float64)
    # lexsort: the last key is the primary one; negate for descending order
    order = np.lexsort((np.arange(k), -tb, -total, -wins))
    return int(order[0])


def _ceil_sqrt(n: int) -> int:
    r = math.isqrt(n)
    return r if r * r == n else r + 1


def mrlpf_round_schedule(T: int) -> list[int]:
    """Round lengths of MR-LPF (Algorithm 1, Section 3), summing to exactly ``T``.

    ``N_1 = ceil(sqrt(T))``, ``N_r = ceil(sqrt(N_{r-1} T))``, the last round truncated to what is
    left of ``T``. Exact integer arithmetic: ``T = 300`` gives ``[18, 74, 149, 59]``.
    """
    T = _count(T, "horizon T", 1)
    rounds: list[int] = []
    used = 0
    prev = None
    while used < T:
        n = _ceil_sqrt(T) if prev is None else _ceil_sqrt(prev * T)
        n = min(n, T - used)
        rounds.append(n)
        used += n
        prev = n
    return rounds


def mrlpf_theory_beta(
    B: float, kappa: float, lam: float, n_arms: int, n_rounds: int, delta: float = 0.1
) -> list[float]:
    """Round widths ``beta_(r)(delta) = L (B + sqrt(kappa_r / lambda log(2 R |X| / delta)))`` (eq. 14).

    ``L = 1/4`` (the sigmoid's slope at 0, attained because ``x = x'`` is allowed), ``kappa_1 =
    kappa`` (eq. 2) and ``kappa_r = 6`` for ``r >= 2`` (eq. 28). Returns one value per round.
    """
    for name, v in (("B", B), ("kappa", kappa), ("lam", lam)):
        if not math.isfinite(float(v)) or float(v) <= 0:
            raise InvalidInputError(f"{name} must be positive and finite, got {v!r}")
    if not 0 < delta < 1:
        raise InvalidInputError(f"delta must be in (0, 1), got {delta!r}")
    log_term = math.log(2.0 * n_rounds * n_arms / delta)
    out = []
    for r in range(n_rounds):
        kr = float(kappa) if r == 0 else KAPPA_LATER_ROUNDS
        out.append(SIGMOID_L * (float(B) + math.sqrt(kr / float(lam) * log_term)))
    return out


def confidence_beta(B: float, kappa: float, lam: float, delta: float = 0.1) -> float:
    """Width of Theorem 4.7 (eq. 17/45): ``beta(delta) = L (B + 1/2 sqrt(2 kappa / lambda log(2/delta)))``.

    Valid for a fixed pair when the design is independent of the labels, with ``sigma`` computed
    with regulariser ``rho = lambda kappa``.
    """
    if not 0 < delta < 1:
        raise InvalidInputError(f"delta must be in (0, 1), got {delta!r}")
    return SIGMOID_L * (
        float(B) + 0.5 * math.sqrt(2.0 * float(kappa) / float(lam) * math.log(2.0 / delta))
    )


def _as_candidates(candidates: Any, n_candidates: int, rng: np.random.Generator) -> CandidateSet:
    if isinstance(candidates, Box):
        _check_size(n_candidates, candidates.dim, sampled=True)
        return CandidateSet(candidates.sample(n_candidates, rng, method="sobol"))
    out = candidates if isinstance(candidates, CandidateSet) else CandidateSet(candidates)
    _check_size(out.n, out.dim, sampled=False)
    return out


def _check_size(m: int, d: int, sampled: bool) -> None:
    """Refuse more than :data:`MAX_OPTIONS` options (``m`` options of ``d`` coordinates;
    ``sampled``: drawn from a Box, ``m`` is ``n_candidates``), saying how to fix it."""
    if m <= MAX_OPTIONS:
        return
    mib = m * m * 8 / 2**20
    what = f"n_candidates={m} is" if sampled else f"{m} options are"
    fix = (
        f"give n_candidates <= {MAX_OPTIONS}"
        if sampled
        else f"use a coarser grid (at most {grid_points_per_axis(MAX_OPTIONS, d)} points per "
        f"axis for {d} parameter{'s' if d > 1 else ''}: a smaller 'grid' for each parameter of "
        "a space file) "
        "or a shorter table of the options worth comparing"
    )
    raise InvalidInputError(
        f"{what} too many for a preference method: the limit is {MAX_OPTIONS} "
        f"(MAX_OPTIONS), because each method keeps option-by-option matrices ({m} x {m} "
        f"floats = {mib:,.0f} MiB each); {fix}"
    )


def _check_distinct(points: np.ndarray) -> None:
    """Refuse fewer than two options, or two identical options (rows of ``points``, (m, d)):
    a duel compares two different options, and a method cannot tell identical ones apart (it
    would spend duels comparing an option with its copy)."""
    m = points.shape[0]
    if m < 2:
        raise InvalidInputError(
            f"a preference method needs at least 2 different options to compare, got {m}"
        )
    _, first, inverse = np.unique(points, axis=0, return_index=True, return_inverse=True)
    if first.size == m:
        return
    inverse = inverse.reshape(-1)
    j = int(np.flatnonzero(first[inverse] != np.arange(m))[0])  # the first repeated row
    i = int(first[inverse[j]])
    raise InvalidInputError(
        f"options {i} and {j} (counting from 0) are identical, {points[i].tolist()}; "
        f"{m - first.size} of the {m} options repeat an earlier one. A duel of an option with "
        "its copy teaches nothing: remove the repeats, or add a column that tells them apart"
    )


def _refit_due(n: int) -> bool:
    """Fitted-kernel refits after 10, 20, 40, 80, ... duels."""
    return n >= 10 and n % 10 == 0 and ((n // 10) & (n // 10 - 1)) == 0


class _DuelingPolicy(BasePolicy):
    """Shared set-up of the preference policies (candidates, kernel, estimator, answers)."""

    family = "preference"
    iteration_meaning = "the paper's t: one per duel"
    recommendation_meaning = "the option the method currently believes best"
    answer_counts = ("duels",)
    #: whether the method fits the kernel logistic estimator of eq. 7 (and so uses ``lam``,
    #: ``regularizer``, ``normalize_loss`` and, when fitted, one selected ``kernel``); EUBO and
    #: DTS average Laplace posteriors over a grid of kernels instead
    uses_logistic_estimator: ClassVar[bool] = True

    def __init__(
        self,
        candidates: Any,
        kernel: Kernel | None = None,
        lam: float = 0.05,
        regularizer: str = "rkhs",
        normalize_loss: bool = False,
        lengthscales: Sequence[float] = DEFAULT_LENGTHSCALES,
        n_candidates: int = 256,
        tie_break: str = "random",
        tie_tol: float = 1e-12,
        recommend_rule: str = "utility",
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(seed)
        if recommend_rule not in RECOMMEND_RULES:
            raise InvalidInputError(
                f"recommend_rule must be one of {', '.join(RECOMMEND_RULES)}, got {recommend_rule!r}"
            )
        self.recommend_rule = recommend_rule
        n_candidates = _count(n_candidates, "n_candidates", 2)
        self.candidates = _as_candidates(candidates, n_candidates, self.rng)
        self.m = self.candidates.n
        _check_distinct(self.candidates.points)
        self.lam = _real(lam, "lam", strict=True)
        self.regularizer = regularizer
        self.normalize_loss = bool(normalize_loss)
        if tie_break not in ("random", "first"):
            raise InvalidInputError(f"tie_break must be 'random' or 'first', got {tie_break!r}")
        self.tie_break = tie_break
        #: relative tolerance within which scores count as tied (0: only exact ties)
        self.tie_tol = _real(tie_tol, "tie_tol")
        self.fit_kernel = kernel is None
        if kernel is None:
            ls = np.asarray(lengthscales, dtype=np.float64).reshape(-1)
            if ls.size == 0 or not np.all(np.isfinite(ls)) or np.any(ls <= 0):
                raise InvalidInputError(f"lengthscales must be positive, got {lengthscales!r}")
            self.lengthscales = tuple(float(v) for v in ls)
            self._features = self.candidates.to_unit()
            self.kernel: Kernel = SquaredExponential(self.lengthscales[len(ls) // 2], 1.0)
        else:
            if not isinstance(kernel, Kernel):
                raise InvalidInputError(f"kernel must be a boloop Kernel, got {kernel!r}")
            self.lengthscales = ()
            self._features = np.asarray(self.candidates.points)
            self.kernel = kernel
        self._K_X: np.ndarray | None = self._gram(self.kernel)
        #: every duel told so far: (i, j, y) with global arm indices, y = 1{x_i preferred}
        self.duels: list[tuple[int, int, int]] = []

    # -- helpers ---------------------------------------------------------------------------------
    @property
    def K_X(self) -> np.ndarray:
        """The Gram matrix (m, m) of ``kernel`` on the options (computed again when a loaded
        policy first needs it: a snapshot may leave it out)."""
        if self._K_X is None:
            self._K_X = self._gram(self.kernel)
        return self._K_X

    @K_X.setter
    def K_X(self, value: np.ndarray) -> None:
        self._K_X = value

    #: attributes holding a model whose ``K_X`` is (bit for bit) the policy's prior on the
    #: options it covers (:meth:`_models_prior`): left out of a pickle and shared on load
    _MODELS_ON_K_X: ClassVar[tuple[str, ...]] = ("_model", "_cov")

    def _models_prior(self) -> np.ndarray:
        """The Gram matrix the estimator and the covariance of :attr:`_MODELS_ON_K_X` were built
        on: ``K_X`` (MR-LPF: its rows and columns of the surviving arms)."""
        return self.K_X

    def __getstate__(self) -> dict[str, Any]:
        """A smaller state for pickling (study snapshots): the Gram matrix ``K_X`` (m x m) is
        computed again from the kernel on load, and the estimator's and covariance's copies of
        it are the policy's own again (``_check_gram`` of a symmetric matrix is that matrix, bit
        for bit); the covariance ``S`` of MaxMinLCB and MR-LPF, updated duel by duel, is kept."""
        state = self.__dict__.copy()
        state["_K_X"] = None
        for name in self._MODELS_ON_K_X:
            model = state.get(name)
            if model is not None and getattr(model, "K_X", None) is not None:
                model = copy.copy(model)
                model.K_X = None
                state[name] = model
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in self._MODELS_ON_K_X:
            model = self.__dict__.get(name)
            if model is not None and hasattr(model, "K_X") and model.K_X is None:
                model.K_X = self._models_prior()

    def _gram(self, kernel: Kernel) -> np.ndarray:
        K = kernel.k(self._features, self._features)
        return 0.5 * (K + K.T)

    def _new_model(self, K: np.ndarray) -> KernelLogisticDuels:
        return KernelLogisticDuels(
            K, self.lam, regularizer=self.regularizer, normalize_loss=self.normalize_loss
        )

    def _pick(self, values: np.ndarray, maximise: bool = True) -> int:
        """Index of the max (min) of a flat array; ties within ``tie_tol`` broken by the seed."""
        v = values if maximise else -values
        best = float(np.max(v))
        if self.tie_break == "first":
            return int(np.argmax(v))
        tol = self.tie_tol * max(1.0, abs(best))
        ties = np.flatnonzero(v >= best - tol)
        if ties.size == 1:
            return int(ties[0])
        return int(ties[self.rng.integers(ties.size)])

    def _compare(self, i: int, j: int) -> Compare:
        P = self.candidates.points
        return self._new_compare(P[i], P[j], a_index=i, b_index=j)

    @staticmethod
    def _duel_of(query: Query, answer: Any) -> tuple[int, int, int]:
        assert isinstance(query, Compare) and query.a_index is not None
        assert query.b_index is not None
        return int(query.a_index), int(query.b_index), 1 - int(answer)

    def _select_lengthscale(self, duels: Sequence[tuple[int, int, int]]) -> bool:
        """Fitted mode: the length-scale of largest Laplace evidence on ``duels``; True if changed."""
        if not self.fit_kernel or not duels:
            return False
        best_ls, best_ev = None, -math.inf
        for ls in self.lengthscales:
            kern = SquaredExponential(ls, 1.0)
            model = KernelLogisticDuels(self._gram(kern), self.lam)
            for i, j, y in duels:
                model.add(i, j, y)
            ev = model.laplace_log_evidence()
            if ev > best_ev + 1e-9:
                best_ls, best_ev = ls, ev
        assert best_ls is not None
        current = float(np.asarray(self.kernel.lengthscale))  # type: ignore[attr-defined]
        if best_ls == current:
            return False
        self.kernel = SquaredExponential(best_ls, 1.0)
        self.K_X = self._gram(self.kernel)
        return True

    def recommend(self) -> BestPoint:
        """The estimated best arm: its point (d,) and index (see :meth:`recommend_index`)."""
        k = self.recommend_index()
        return BestPoint(np.array(self.candidates.points[k]), k)

    def recommend_index(self) -> int:
        """The recommended option, by one rule for every method (``recommend_rule``):

        * ``"utility"`` (default): the option of largest estimated utility among the options the
          method still considers (MR-LPF: the surviving set ``M``, Corollary 4.4's "any x in
          M_{R+1}" made the predicted maximin arm, spec Sec. 3.5; the others: every option);
        * ``"copeland"``: the Copeland winner (:func:`copeland_winner`) of the method's estimated
          preference probabilities over every option its estimate covers, the rule of the BOHF
          authors' script. For a utility model (``P(x > x') = mu(u_x - u_x')``) it is the
          option of largest utility over that set, so it differs from ``"utility"`` only in the
          set (MR-LPF: every option of its last fit instead of the survivors).
        """
        arms, util, among, P = self._estimate()
        if self.recommend_rule == "copeland":
            if P is None:
                P = _sigmoid(util[:, None] - util[None, :])
            return int(arms[copeland_winner(P, tiebreak=util)])
        idx = np.flatnonzero(among)
        return int(arms[idx[int(np.argmax(util[idx]))]])

    def _estimate(
        self,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:  # pragma: no cover
        """``(arms, utility, among, P)``: global indices of the options the estimate covers (k,),
        their estimated utilities (k,), a mask (k,) of those still considered, and their
        preference probabilities (k, k) when they are not ``mu(u_i - u_j)`` (else None)."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """Counts and the settings the method uses: the estimator's ``lam``, ``regularizer`` and
        ``normalize_loss`` only for the methods that fit it, the ``kernel`` when it is fixed or
        is the one length-scale selected from the duels (not the grid of EUBO and DTS)."""
        d = super().describe()
        d["n_arms"] = self.m
        if self.uses_logistic_estimator:
            d["lam"] = self.lam
            d["regularizer"] = self.regularizer
            d["normalize_loss"] = self.normalize_loss
        if self.uses_logistic_estimator or not self.fit_kernel:
            d["kernel"] = repr(self.kernel)
        d["kernel_fitted"] = self.fit_kernel
        d["recommend_rule"] = self.recommend_rule
        d["recommendation_index"] = self.recommend_index()
        return d


class MRLPF(_DuelingPolicy):
    """MR-LPF, Multi-Round Learning from Preference-based Feedback (Kayal et al., Algorithm 1).

    Rounds ``r = 1..R`` of lengths :func:`mrlpf_round_schedule` (``T`` duels in all). Within round
    ``r`` each duel is the pair of surviving arms of maximal uncertainty (eq. 11),
    ``argmax_{x, x' in M_r} sigma_(n-1, r)(x, x')``, computed from this round's design only -- never
    from labels -- with ties broken at random from the seed. At the end of the round the estimator
    (eq. 7) is fitted on this round's duels only and the arms whose upper confidence bound
    ``mu(h(x, x')) + beta_(r) sigma(x, x')`` falls below 1/2 against some surviving ``x'`` are
    eliminated (eq. 12); the comparison of an arm with itself is skipped (it is exactly 1/2). When
    a single arm survives it duels itself (zero regret if it is optimal; the duel is a no-op for
    the estimator).

    Parameters
    ----------
    candidates:
        The arms: a CandidateSet, an (m, d) array, or a Box (discretised, see the module doc);
        2 to :data:`MAX_OPTIONS` distinct options, else :class:`InvalidInputError`.
    horizon:
        ``T``, the number of duels. Asking after ``T`` duels raises :class:`QueryStateError`.
    kernel:
        The base kernel ``k`` (fixed, the paper's setting); ``None`` fits a length-scale.
    lam:
        ``lambda`` of eq. 7 (paper: 0.05).
    beta:
        A constant (paper's experiments: 1; Yelp: 0.1), one value per round, or ``"theory"``
        (eq. 14 via :func:`mrlpf_theory_beta`, needs ``B`` and ``kappa``).
    sigma_reg:
        The regulariser ``rho`` of the uncertainty (eq. 10): ``None`` uses ``lam`` (the paper's
        experiments), a float or one value per round, or ``"theory"`` for ``lam * kappa_r``
        (``kappa_1 = kappa``, ``kappa_r = 6``; needs ``kappa``).
    B, kappa, delta:
        RKHS-norm bound, curvature constant (eq. 2) and confidence level for ``"theory"``.
    regularizer, normalize_loss:
        See :class:`boloop.gp.preference.KernelLogisticDuels` (default: RKHS norm, eq. 7).
    tie_break:
        ``"random"`` (default, from the seed) or ``"first"`` (the first maximiser in row-major
        order, as the authors' script).
    """

    method_id = "mr-lpf"

    @property
    def betas(self) -> list[float]:
        """Old name of :attr:`sqrt_betas`, the multipliers of sigma per round."""
        return self.sqrt_betas

    def __init__(
        self,
        candidates: Any,
        horizon: int,
        kernel: Kernel | None = None,
        lam: float = 0.05,
        beta: float | str | Sequence[float] = 1.0,
        sigma_reg: float | str | Sequence[float] | None = None,
        B: float | None = None,
        kappa: float | None = None,
        delta: float = 0.1,
        regularizer: str = "rkhs",
        normalize_loss: bool = False,
        lengthscales: Sequence[float] = DEFAULT_LENGTHSCALES,
        n_candidates: int = 256,
        tie_break: str = "random",
        tie_tol: float = 1e-12,
        recommend_rule: str = "utility",
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(
            candidates,
            kernel=kernel,
            lam=lam,
            regularizer=regularizer,
            normalize_loss=normalize_loss,
            lengthscales=lengthscales,
            n_candidates=n_candidates,
            tie_break=tie_break,
            tie_tol=tie_tol,
            recommend_rule=recommend_rule,
            seed=seed,
        )
        self.schedule = mrlpf_round_schedule(horizon)
        self.horizon = sum(self.schedule)
        B = None if B is None else _real(B, "B", strict=True)
        kappa = None if kappa is None else _real(kappa, "kappa", strict=True)
        delta = _real(delta, "delta", strict=True)
        if delta >= 1:
            raise InvalidInputError(f"delta must be in (0, 1), got {delta!r}")
        R = len(self.schedule)
        #: the multiplier of sigma in each round: eq. 14's ``beta_(r)`` multiplies sigma itself,
        #: so the ``beta`` option is taken as it is
        self.sqrt_betas = self._per_round(beta, "beta", R, B, kappa, delta)
        self.sigma_regs = self._per_round_rho(sigma_reg, R, kappa)
        #: index of the current round (0-based); equals len(schedule) when all rounds are done
        self.round = 0
        self.n_in_round = 0
        #: surviving arms M_r (sorted global indices); M_history[r] is M_{r+1} of the paper
        self.M = np.arange(self.m)
        self.M_history: list[np.ndarray] = [self.M.copy()]
        #: pairs (global indices) of each round, in order
        self.round_pairs: list[list[tuple[int, int]]] = [[]]
        self._local = {int(g): k for k, g in enumerate(self.M)}
        self._start_round()
        self._last_utility: np.ndarray | None = None  # on M_history[-2], from the last round end
        self._last_M: np.ndarray | None = None

    def _per_round(
        self, beta: Any, name: str, R: int, B: float | None, kappa: float | None, delta: float
    ) -> list[float]:
        if isinstance(beta, str):
            if beta != "theory":
                raise InvalidInputError(f"{name} must be a number, a sequence or 'theory'")
            if B is None or kappa is None:
                raise InvalidInputError(f"{name}='theory' needs B and kappa")
            return mrlpf_theory_beta(B, kappa, self.lam, self.m, R, delta)
        vals = np.atleast_1d(np.asarray(beta, dtype=np.float64))
        if vals.size == 1:
            vals = np.repeat(vals, R)
        if vals.size != R or not np.all(np.isfinite(vals)) or np.any(vals < 0):
            raise InvalidInputError(f"{name} must be >= 0, one value or one per round ({R})")
        return [float(v) for v in vals]

    def _per_round_rho(self, sigma_reg: Any, R: int, kappa: float | None) -> list[float]:
        if sigma_reg is None:
            return [self.lam] * R
        if isinstance(sigma_reg, str):
            if sigma_reg != "theory" or kappa is None:
                raise InvalidInputError("sigma_reg='theory' needs kappa (and no other string)")
            return [self.lam * (float(kappa) if r == 0 else KAPPA_LATER_ROUNDS) for r in range(R)]
        vals = np.atleast_1d(np.asarray(sigma_reg, dtype=np.float64))
        if vals.size == 1:
            vals = np.repeat(vals, R)
        if vals.size != R or not np.all(np.isfinite(vals)) or np.any(vals <= 0):
            raise InvalidInputError(f"sigma_reg must be > 0, one value or one per round ({R})")
        return [float(v) for v in vals]

    # -- rounds ----------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        """All ``T`` duels have been answered (and the final elimination has run)."""
        return self.round >= len(self.schedule)

    def _models_prior(self) -> np.ndarray:
        """The round's models are built on the Gram matrix of the arms surviving at its start
        (after the last round, the last round's: no new round starts)."""
        M = self.M_history[min(self.round, len(self.schedule) - 1)]
        return self.K_X[np.ix_(M, M)]

    def _start_round(self) -> None:
        K_M = self._models_prior()
        self._cov = DuelCovariance(K_M, self.sigma_regs[self.round])
        self._model = self._new_model(K_M)
        self.n_in_round = 0

    def _end_round(self) -> None:
        """Fit on this round's duels and eliminate (eq. 12); start the next round."""
        model = self._model.fit()
        P = model.preference_matrix()
        S = np.sqrt(self._cov.variance_matrix())
        ucb = P + self.sqrt_betas[self.round] * S
        np.fill_diagonal(ucb, 1.0)  # x' = x is exactly 1/2 >= 1/2: skipped (pitfall P7)
        keep = np.all(ucb >= 0.5 - 1e-12, axis=1)
        if not np.any(keep):  # cannot happen: the argmax of the fitted utility always survives
            keep[int(np.argmax(model.utility))] = True
        self._last_utility = model.utility.copy()
        self._last_M = self.M
        self.M = self.M[keep]
        self.M_history.append(self.M.copy())
        self._local = {int(g): k for k, g in enumerate(self.M)}
        self.round += 1
        if not self.finished:
            self._select_lengthscale(self.duels)
            self.round_pairs.append([])
            self._start_round()

    # -- protocol ---------------------------------------------------------------------------------
    def _no_more_queries(self) -> str | None:
        """After the T duels of its horizon: the rounds are planned for exactly T (Alg. 1)."""
        if not self.finished:
            return None
        return (
            f"all T = {self.horizon} duels of its horizon are answered, and its recommendation "
            "is final"
        )

    def _propose(self) -> Query:
        if self.finished:  # (ask() says it first: _no_more_queries)
            raise QueryStateError(
                f"MR-LPF has used all {self.horizon} duels of its horizon T and asks no more; "
                "its recommendation (the best option it found) is final"
            )
        if self.M.size == 1:
            g = int(self.M[0])
            return self._compare(g, g)
        V = self._cov.variance_matrix()
        np.fill_diagonal(V, -1.0)
        flat = self._pick(V.ravel())
        a, b = divmod(flat, self.M.size)
        return self._compare(int(self.M[a]), int(self.M[b]))

    def _observe(self, query: Query, answer: Any) -> None:
        i, j, y = self._duel_of(query, answer)
        li, lj = self._local[i], self._local[j]
        self._model.add(li, lj, y)
        self._cov.update(li, lj)
        self.duels.append((i, j, y))
        self.round_pairs[self.round].append((i, j))
        self.n_in_round += 1
        if self.n_in_round == self.schedule[self.round]:
            self._end_round()

    def _estimate(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, None]:
        """``argmax_{x in M} min_{x' in M} mu(h(x, x'))`` from the last round-end fit (sec. 3.5).

        The predicted maximin arm of the surviving set equals the arm of largest fitted utility in
        it. During round 1 the fit uses round 1's duels so far (no duels: the first arm).
        """
        if self._last_utility is None:
            util = self._model.fit().utility
            return self.M, util, np.ones(self.M.size, dtype=bool), None
        assert self._last_M is not None
        return self._last_M, self._last_utility, np.isin(self._last_M, self.M), None

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(
            {
                "horizon": self.horizon,
                "schedule": list(self.schedule),
                # 1-based; after the last duel of the horizon, the last round (not one past it)
                "round": min(self.round + 1, len(self.schedule)),
                "finished": self.round >= len(self.schedule),
                "n_in_round": self.n_in_round,
                "n_surviving": int(self.M.size),
                "beta": list(self.sqrt_betas),
                "sigma_reg": list(self.sigma_regs),
            }
        )
        return d


class MaxMinLCB(_DuelingPolicy):
    """MaxMinLCB (Pasztor et al. 2024, Algorithm 1; Appendix D of Kayal et al.).

    At step ``t`` the estimator (eq. 7) is fitted on all duels so far, ``sigma_t`` is eq. 10 with
    regulariser ``sigma_reg`` (default ``lam``), ``LCB = mu(h_t) - beta sigma_t`` and
    ``UCB = mu(h_t) + beta sigma_t``. The leader maximises its worst-case lower bound and the
    follower is its best response:

    ``x_t = argmax_{x in M_t} min_{x' in M_t} LCB(x, x')``,
    ``x'_t = argmin_{x' in M_t} LCB(x_t, x')``,

    with ``M_t = {x : UCB(x, x') >= 1/2 for all x' != x}`` recomputed from all arms each step
    (``use_candidate_set=False``: ``M_t`` is every arm). Pairs ``x = x'`` are excluded unless
    ``|M_t| = 1`` (``allow_self_duel=True`` includes them, as the BOHF authors' script). Ties are
    broken at random from the seed. The options: 2 to :data:`MAX_OPTIONS` distinct ones (the
    preference matrices are m x m).
    """

    method_id = "maxminlcb"

    @property
    def beta(self) -> float:
        """Old name of :attr:`sqrt_beta`, the multiplier of sigma."""
        return self.sqrt_beta

    def __init__(
        self,
        candidates: Any,
        kernel: Kernel | None = None,
        lam: float = 0.05,
        beta: float = 1.0,
        sigma_reg: float | None = None,
        use_candidate_set: bool = True,
        allow_self_duel: bool = False,
        regularizer: str = "rkhs",
        normalize_loss: bool = False,
        lengthscales: Sequence[float] = DEFAULT_LENGTHSCALES,
        n_candidates: int = 256,
        tie_break: str = "random",
        tie_tol: float = 1e-12,
        recommend_rule: str = "utility",
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(
            candidates,
            kernel=kernel,
            lam=lam,
            regularizer=regularizer,
            normalize_loss=normalize_loss,
            lengthscales=lengthscales,
            n_candidates=n_candidates,
            tie_break=tie_break,
            tie_tol=tie_tol,
            recommend_rule=recommend_rule,
            seed=seed,
        )
        self.sqrt_beta = _real(beta, "beta")
        self.sigma_reg = (
            self.lam if sigma_reg is None else _real(sigma_reg, "sigma_reg", strict=True)
        )
        self.use_candidate_set = bool(use_candidate_set)
        self.allow_self_duel = bool(allow_self_duel)
        self._model = self._new_model(self.K_X)
        self._cov = DuelCovariance(self.K_X, self.sigma_reg)
        self.n_candidates_last = self.m

    def _rebuild(self) -> None:
        self._model = self._new_model(self.K_X)
        self._cov = DuelCovariance(self.K_X, self.sigma_reg)
        for i, j, y in self.duels:
            self._model.add(i, j, y)
            self._cov.update(i, j)

    def _propose(self) -> Query:
        g = self._model.fit().utility
        P = g[:, None] - g[None, :]
        P = 1.0 / (1.0 + np.exp(-P))
        S = np.sqrt(self._cov.variance_matrix())
        if self.use_candidate_set:
            ucb = P + self.sqrt_beta * S
            np.fill_diagonal(ucb, np.inf)
            M = np.flatnonzero(ucb.min(axis=1) >= 0.5)
            if M.size == 0:  # numerically impossible: argmax g has UCB >= 1/2 against all
                M = np.array([int(np.argmax(g))])
        else:
            M = np.arange(self.m)
        self.n_candidates_last = int(M.size)
        if M.size == 1:
            return self._compare(int(M[0]), int(M[0]))
        lcb = (P - self.sqrt_beta * S)[np.ix_(M, M)]
        if not self.allow_self_duel:
            np.fill_diagonal(lcb, np.inf)
        leader = self._pick(lcb.min(axis=1))
        row = lcb[leader]
        follower = self._pick(row, maximise=False)
        return self._compare(int(M[leader]), int(M[follower]))

    def _observe(self, query: Query, answer: Any) -> None:
        i, j, y = self._duel_of(query, answer)
        self._model.add(i, j, y)
        self._cov.update(i, j)
        self.duels.append((i, j, y))
        if _refit_due(len(self.duels)) and self._select_lengthscale(self.duels):
            self._rebuild()

    def _estimate(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, None]:
        """The fitted utility of every arm (the predicted maximin winner is its argmax)."""
        return np.arange(self.m), self._model.fit().utility, np.ones(self.m, dtype=bool), None

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(
            {
                "beta": self.sqrt_beta,
                "sigma_reg": self.sigma_reg,
                "use_candidate_set": self.use_candidate_set,
                "allow_self_duel": self.allow_self_duel,
                "n_candidates_last": self.n_candidates_last,
            }
        )
        return d


class RandomDuels(_DuelingPolicy):
    """Uniformly random duels of two distinct arms; recommends the arm of largest fitted utility
    (eq. 7 on all duels). The baseline ``random`` of the preference family. The options: 2 to
    :data:`MAX_OPTIONS` distinct ones (the fit keeps the m x m kernel matrix)."""

    method_id = "random"

    def __init__(self, candidates: Any, **kwargs: Any) -> None:
        super().__init__(candidates, **kwargs)
        self._model = self._new_model(self.K_X)

    def _propose(self) -> Query:
        i = int(self.rng.integers(self.m))
        j = int(self.rng.integers(self.m - 1))
        return self._compare(i, j + (j >= i))

    def _observe(self, query: Query, answer: Any) -> None:
        i, j, y = self._duel_of(query, answer)
        self._model.add(i, j, y)
        self.duels.append((i, j, y))
        if _refit_due(len(self.duels)) and self._select_lengthscale(self.duels):
            self._model = self._new_model(self.K_X)
            for a, b, v in self.duels:
                self._model.add(a, b, v)

    def _estimate(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, None]:
        return np.arange(self.m), self._model.fit().utility, np.ones(self.m, dtype=bool), None


class EUBO(_DuelingPolicy):
    """Duels that maximise the expected utility of the best option (EUBO).

    Lin, Astudillo, Frazier and Bakshy, "Preference exploration for efficient Bayesian
    optimization with multiple outcomes" (AISTATS 2022), eq. 4; Astudillo et al., "qEUBO: a
    decision-theoretic acquisition function for preferential Bayesian optimization" (AISTATS
    2023): the next duel is ``argmax_{a != b} E[max(f(a), f(b))]`` under the posterior of the
    utilities, exact over the finite option set (:func:`boloop.gp.utility_laplace.eubo_all_pairs`)
    on the Laplace posterior of :class:`~boloop.gp.utility_laplace.UtilityPosterior` with the
    logistic link of the BOHF paper. Recommends the option of largest posterior mean.

    Hyperparameters (``kernel=None``): a squared-exponential kernel on the options scaled to the
    unit cube; instead of one fitted (length-scale, output variance) the posterior is averaged
    over the grid ``lengthscales`` x ``variances`` with weights proportional to the Laplace
    evidence (R&W eq. 3.32), reweighted after every duel (Bayesian model averaging: the expected
    maximum and the mean are linear in the mixture). Two safeguards against the failure of
    BoTorch's PairwiseGP + EUBO, which locks onto one pair when its fitted output scale collapses
    (issue 17): the smallest output variance is a floor, and length-scales longer than the shared
    mechanism's shrinking cap (:meth:`HyperparameterLearning.lengthscale_cap`, after A-GP-UCB,
    Berkenkamp et al. JMLR 2019) are left out, so that a few duels of two look-alike options
    cannot make a long length-scale (a confident trend) win the evidence (``lengthscale_cap=False``
    keeps the whole grid, weighted by its evidence and prior only). Models of weight
    below ``min_weight`` are dropped, and between the refits after 10, 20, 40, ... duels only
    the ``max_models`` heaviest are updated (every grid model while there are at most 10 duels).
    The grid's models have equal prior weight (``lengthscale_prior="flat"``) or, with
    ``"dimension"``, the dimension-scaled log-normal of Hvarfner et al. (2024) over the
    length-scale (:meth:`_log_prior`), or with ``"gamma"`` BoTorch's ``PairwiseGP`` default
    ``l ~ Gamma(2.4, 2.7)``; measured in ``docs/reproductions/preference.md`` each helps on some
    option sets and costs on others, so neither is the default.
    ``model_choice="draw"`` (off by default) scores the pairs under one model of the mixture drawn
    by its weight before each duel instead of under the mixture (Thompson sampling of the
    hyperparameters, so that a model of small weight still chooses some duels); measured in the
    same document it does not remove the lock-in of issue 17, so it is not the default.
    ``approximation="ep"`` (off by default) finds each model's Gaussian posterior and evidence by
    expectation propagation with the probit link (:class:`~boloop.gp.utility_ep.UtilityPosteriorEP`)
    instead of Laplace's method; measured in the same document, it is not better either.
    ``repeat_duels`` (``"allow"`` by default) keeps a person from being asked the same duel
    again: ``"not-in-a-row"`` never the last duel at once, ``"never"`` no pair twice until every
    pair has been asked (the pair score is then maximised over the others; :func:`best_pairs`'s
    ``exclude``). The logistic model counts a repeated answer as new evidence, which it is for a
    noisy chooser and not for a person who answers the same again; measured in
    ``docs/reproductions/preference.md`` (eighth pass) under the logistic simulator,
    ``"not-in-a-row"`` costs 2.5% of R(100) and ``"never"`` 37%, so the default allows repeats.
    The options: 2 to :data:`MAX_OPTIONS` distinct ones (each model of the grid keeps its m x m
    kernel matrix and posterior factor).
    """

    method_id = "eubo"
    uses_logistic_estimator = False

    def __init__(
        self,
        candidates: Any,
        kernel: Kernel | None = None,
        variances: Sequence[float] = (1.0, 4.0, 16.0),
        lengthscales: Sequence[float] = DEFAULT_LENGTHSCALES,
        min_weight: float = 0.01,
        max_models: int = 3,
        lengthscale_prior: str = "flat",
        lengthscale_cap: bool = True,
        exploit: float = 0.0,
        optimism: float = 0.0,
        optimism_reference: str = "incumbent",
        exploit_schedule: str = "constant",
        plausible_beta: float | None = None,
        model_choice: str = "average",
        approximation: str = "laplace",
        repeat_duels: str = "allow",
        n_candidates: int = 256,
        tie_break: str = "random",
        tie_tol: float = 1e-12,
        recommend_rule: str = "utility",
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(
            candidates,
            kernel=kernel,
            lengthscales=lengthscales,
            n_candidates=n_candidates,
            tie_break=tie_break,
            tie_tol=tie_tol,
            recommend_rule=recommend_rule,
            seed=seed,
        )
        v = np.asarray(variances, dtype=np.float64).reshape(-1)
        if v.size == 0 or not np.all(np.isfinite(v)) or np.any(v <= 0):
            raise InvalidInputError(f"variances must be positive, got {variances!r}")
        self.variances = tuple(float(x) for x in v)
        self.min_weight = _real(min_weight, "min_weight")
        if self.min_weight >= 1:
            raise InvalidInputError(f"min_weight must be in [0, 1), got {min_weight!r}")
        self.max_models = _count(max_models, "max_models", 1)
        if lengthscale_prior not in LENGTHSCALE_PRIORS:
            raise InvalidInputError(
                f"lengthscale_prior must be one of {', '.join(LENGTHSCALE_PRIORS)}, "
                f"got {lengthscale_prior!r}"
            )
        self.lengthscale_prior = lengthscale_prior
        if not isinstance(lengthscale_cap, (bool, np.bool_)):
            raise InvalidInputError(
                f"lengthscale_cap must be True or False, got {lengthscale_cap!r}"
            )
        self.lengthscale_cap = bool(lengthscale_cap)
        self.exploit = _real(exploit, "exploit")
        self.optimism = _real(optimism, "optimism")
        if optimism_reference not in OPTIMISM_REFERENCES:
            raise InvalidInputError(
                f"optimism_reference must be one of {', '.join(OPTIMISM_REFERENCES)}, "
                f"got {optimism_reference!r}"
            )
        self.optimism_reference = optimism_reference
        if exploit_schedule not in EXPLOIT_SCHEDULES:
            raise InvalidInputError(
                f"exploit_schedule must be one of {', '.join(EXPLOIT_SCHEDULES)}, "
                f"got {exploit_schedule!r}"
            )
        self.exploit_schedule = exploit_schedule
        #: the weight of the duel's utility at the last duel chosen
        self.exploit_last = self.exploit
        if plausible_beta is not None:
            plausible_beta = _real(plausible_beta, "plausible_beta (or None)")
        self.plausible_beta = plausible_beta
        if model_choice not in MODEL_CHOICES:
            raise InvalidInputError(
                f"model_choice must be one of {', '.join(MODEL_CHOICES)}, got {model_choice!r}"
            )
        self.model_choice = model_choice
        if approximation not in APPROXIMATIONS:
            raise InvalidInputError(
                f"approximation must be one of {', '.join(APPROXIMATIONS)}, got {approximation!r}"
            )
        self.approximation = approximation
        if repeat_duels not in REPEAT_DUELS:
            raise InvalidInputError(
                f"repeat_duels must be one of {', '.join(REPEAT_DUELS)}, got {repeat_duels!r}"
            )
        self.repeat_duels = repeat_duels
        #: options the last duel was chosen among (all options without ``plausible_beta``)
        self.n_plausible_last = self.m
        #: the models (length-scale, output variance); NaN length-scale: the fixed kernel
        self._grid: list[tuple[float, float]] = (
            [(ls, var) for ls in self.lengthscales for var in self.variances]
            if self.fit_kernel
            else [(math.nan, 1.0)]
        )
        #: Gram matrices of unit variance per length-scale, computed when first needed
        self._grams: dict[float, np.ndarray] = {}
        #: where each grid model's solver starts next (by grid index): its last posterior's mode
        self._warm: dict[int, WarmStart] = {}
        #: the mixture's models (grid indices), one per entry of ``_mixture``
        self._models: list[int] = []
        self._mixture: list[tuple[float, UtilityPosterior]] = []
        self._update()

    def _prior(self, k: int) -> np.ndarray:
        """The prior covariance (m, m) of grid model ``k``: its Gram matrix times its variance."""
        ls, var = self._grid[k]
        if not self.fit_kernel or ls == float(self.kernel.lengthscale):  # type: ignore[attr-defined]
            # the fixed kernel's, or the same numbers as the grid's Gram matrix of this
            # length-scale (the kernel of a fitted EUBO is the grid's middle one, unit variance)
            K = self.K_X
        else:
            gram = self._grams.get(ls)
            if gram is None:
                gram = self._grams[ls] = self._gram(SquaredExponential(ls, 1.0))
            K = gram
        return K * var

    def __getstate__(self) -> dict[str, Any]:
        """A small state for pickling (study snapshots): no m x m matrix. The Gram matrices are
        left out and the mixture's posteriors stored by their modes
        (:meth:`UtilityPosterior.compact_state`); :meth:`__setstate__` recomputes the rest by the
        same arithmetic, so a policy loaded goes on bit for bit as the one pickled."""
        state = super().__getstate__()
        state["_grams"] = {}
        state["_mixture"] = [(wk, post.compact_state()) for wk, post in self._mixture]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        mixture = state.pop("_mixture")
        super().__setstate__(state)
        posterior = UtilityPosteriorEP if self.approximation == "ep" else UtilityPosterior
        self._mixture = [
            (wk, posterior.from_compact_state(self._prior(k), post))
            for (wk, post), k in zip(mixture, self._models)
        ]

    def _update(self) -> None:
        """Laplace posteriors and evidence weights: of every allowed grid model while the duels
        are few and at the refits (10, 20, 40, ... duels), of the models kept then in between."""
        w = np.array([i if y else j for i, j, y in self.duels], dtype=np.intp)
        los = np.array([j if y else i for i, j, y in self.duels], dtype=np.intp)
        n = len(self.duels)
        full = not self.fit_kernel or n <= 10 or _refit_due(n)
        grid = list(range(len(self._grid))) if full else self._models
        if self.fit_kernel and full and self.lengthscale_cap:
            cap = HyperparameterLearning().lengthscale_cap(len(self.duels), self._features.shape[1])
            shortest = min(self.lengthscales)
            grid = [k for k in grid if self._grid[k][0] <= cap or self._grid[k][0] == shortest]
        posterior = UtilityPosteriorEP if self.approximation == "ep" else UtilityPosterior
        posts = [posterior(self._prior(k), w, los, start=self._warm.get(k)) for k in grid]
        self._warm.update({k: p.warm_start() for k, p in zip(grid, posts)})
        ev = np.array([p.log_evidence for p in posts])
        if self.fit_kernel:
            ev = ev + np.array([self._log_prior(self._grid[k][0]) for k in grid])
        weights = np.exp(ev - ev.max())
        weights /= weights.sum()
        keep = weights >= min(self.min_weight, float(weights.max()))
        if full:  # at most max_models models between refits
            keep &= weights >= np.sort(weights)[-min(self.max_models, weights.size)]
        kept = np.flatnonzero(keep)
        weights = weights[kept] / weights[kept].sum()
        self._mixture = [(float(wk), posts[k]) for wk, k in zip(weights, kept)]
        self._models = [grid[k] for k in kept]

    def _log_prior(self, lengthscale: float) -> float:
        """Log prior mass of a grid length-scale (unit-cube units), up to a constant.

        ``"dimension"``: the dimension-scaled log-normal of Hvarfner, Hellsten and Nardi
        (ICML 2024) that the shared mechanism uses (:class:`HyperparameterLearning`,
        ``log l ~ N(sqrt2 + log(d) / 2, 3)``), evaluated at the grid's points (the grid is
        evenly spaced in ``log l``, so the density is the mass); ``"gamma"``: the density of
        ``log l`` under BoTorch's ``l ~ Gamma(2.4, 2.7)``; ``"flat"``: none."""
        if self.lengthscale_prior == "flat":
            return 0.0
        if self.lengthscale_prior == "gamma":
            # log density of log l: Gamma(l; k, r) times the Jacobian l, up to a constant
            k, r = GAMMA_LENGTHSCALE_PRIOR
            return k * math.log(lengthscale) - r * lengthscale
        mu0, sd0 = HyperparameterLearning().lengthscale_prior
        mu = mu0 + 0.5 * math.log(self._features.shape[1])
        return -0.5 * ((math.log(lengthscale) - mu) / sd0) ** 2

    def plausible(self) -> np.ndarray:
        """Indices of the options that may still be the best: ``mean + beta sd`` at least the
        largest ``mean - beta sd`` (mixture mean and standard deviation, ``beta =
        plausible_beta``); every option when ``plausible_beta`` is None."""
        if self.plausible_beta is None:
            return np.arange(self.m)
        mean = self.posterior_mean()
        second = np.zeros(self.m)
        for wk, post in self._mixture:
            mu = post.mean()
            second += wk * (post.variance() + mu * mu)
        sd = np.sqrt(np.maximum(second - mean * mean, 0.0))
        b = self.plausible_beta
        M = np.flatnonzero(mean + b * sd >= np.max(mean - b * sd))
        if M.size < 2:  # a duel needs two options: the best and the runner-up by mean
            M = np.sort(np.argsort(-mean, kind="stable")[:2])
        return M

    def _propose(self) -> Query:
        M = self.plausible()
        self.n_plausible_last = int(M.size)
        ref = int(np.argmax(self.posterior_mean()))
        exploit = self.exploit
        if exploit and self.exploit_schedule == "sharpening":
            exploit *= 1.0 - self.remaining_uncertainty(ref)
        self.exploit_last = exploit
        mixture = self._mixture
        if self.model_choice == "draw" and len(mixture) > 1:
            mixture = [(1.0, self.drawn_model())]
        reference: int | str | None = None
        if exploit and self.optimism:
            reference = ref if self.optimism_reference == "incumbent" else "average"
        a, b, score = best_pairs(
            mixture,
            exploit=exploit,
            among=M,
            tol=self.tie_tol,
            optimism=self.optimism,
            reference=reference,
            exclude=self._asked_pairs(),
        )
        k = self._pick(score) if self.tie_break == "random" else 0
        return self._compare(int(a[k]), int(b[k]))

    def _asked_pairs(self) -> list[tuple[int, int]]:
        """The duels ``repeat_duels`` keeps from being asked again: none (``"allow"``), the last
        one (``"not-in-a-row"``) or every one asked (``"never"``; all are allowed again once
        every pair of the options considered has been asked)."""
        if self.repeat_duels == "allow" or not self.duels:
            return []
        if self.repeat_duels == "not-in-a-row":
            i, j, _ = self.duels[-1]
            return [(i, j)]
        return [(i, j) for i, j, _ in self.duels]

    def remaining_uncertainty(self, reference: int) -> float:
        """The fraction of the prior uncertainty about the options' utilities relative to
        ``reference`` that the duels have not removed, in [0, 1]:

        ``rho = sum_k w_k sum_x Var_k[f(x) - f(r) | duels] / sum_x Var_k[f(x) - f(r)]``

        (posterior over prior, model ``k`` of the mixture with weight ``w_k``). Differences,
        because duels identify differences of utilities, never their level."""
        r = int(reference)
        rho = 0.0
        for wk, post in self._mixture:
            K = post.K
            kd = np.diag(K)
            prior = float(np.sum(kd + K[r, r] - 2.0 * K[:, r]))
            if prior <= 0.0:
                continue
            post_var = post.difference_variance(r)
            rho += wk * min(1.0, max(0.0, float(np.sum(np.maximum(post_var, 0.0))) / prior))
        return rho

    def _observe(self, query: Query, answer: Any) -> None:
        self.duels.append(self._duel_of(query, answer))
        self._update()

    def drawn_model(self) -> UtilityPosterior:
        """One Laplace posterior of the mixture, drawn with its weight from the seed's generator
        (Thompson sampling of the hyperparameters)."""
        weights = np.array([wk for wk, _ in self._mixture])
        return self._mixture[int(self.rng.choice(weights.size, p=weights / weights.sum()))][1]

    def posteriors(self) -> list[tuple[float, UtilityPosterior]]:
        """The model mixture the duels are chosen from: ``(weight, Laplace posterior)`` pairs."""
        return list(self._mixture)

    def posterior_mean(self) -> np.ndarray:
        """The model-averaged posterior mean of every option's utility, (m,)."""
        return sum(wk * post.mean() for wk, post in self._mixture)  # type: ignore[return-value]

    def _estimate(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """Posterior mean utilities and, for the Copeland rule, the posterior probabilities
        ``P(a > b) = E[mu(f_a - f_b)]`` averaged over the models, each by the probit
        approximation ``mu(m / sqrt(1 + pi s^2 / 8))`` of the mean ``m`` and variance ``s^2`` of
        ``f_a - f_b`` (MacKay 1992; Bishop 2006, eq. 4.153)."""
        mean = self.posterior_mean()
        everyone = np.ones(self.m, dtype=bool)
        if self.recommend_rule != "copeland":
            return np.arange(self.m), mean, everyone, None
        P = np.zeros((self.m, self.m))
        for wk, post in self._mixture:
            mu, C = post.mean(), post.covariance()
            v = np.diag(C)
            s2 = np.maximum(v[:, None] + v[None, :] - 2.0 * C, 0.0)
            P += wk * _sigmoid((mu[:, None] - mu[None, :]) / np.sqrt(1.0 + np.pi * s2 / 8.0))
        return np.arange(self.m), mean, everyone, P

    def describe(self) -> dict[str, Any]:
        """Counts and settings; with a fitted kernel the grid (``lengthscales``, ``variances``,
        its prior, cap, ``min_weight``, ``max_models``) and the ``models`` of the mixture now
        (length-scale, output variance, weight); a fixed kernel is shown as ``kernel``."""
        d = super().describe()
        if self.fit_kernel:
            d.update(
                {
                    "lengthscales": list(self.lengthscales),
                    "variances": list(self.variances),
                    "lengthscale_prior": self.lengthscale_prior,
                    "lengthscale_cap": self.lengthscale_cap,
                    "min_weight": self.min_weight,
                    "max_models": self.max_models,
                    "models": [
                        {
                            "lengthscale": self._grid[k][0],
                            "variance": self._grid[k][1],
                            "weight": wk,
                        }
                        for k, (wk, _) in zip(self._models, self._mixture)
                    ],
                }
            )
        d.update(
            {
                "exploit": self.exploit,
                "optimism": self.optimism,
                "optimism_reference": self.optimism_reference,
                "exploit_schedule": self.exploit_schedule,
                "exploit_last": self.exploit_last,
                "plausible_beta": self.plausible_beta,
                "model_choice": self.model_choice,
                "approximation": self.approximation,
                "repeat_duels": self.repeat_duels,
                "n_plausible_last": self.n_plausible_last,
            }
        )
        return d


class RegretAwareEUBO(EUBO):
    """EUBO for a person's tens of duels: both options of a duel count, so both should be good.

    The cumulative regret of the BOHF paper (eq. 1) charges a duel for *both* its options,
    ``r_t = [P(x* > x_t) + P(x* > x'_t) - 1] / 2``, while EUBO (Lin et al. 2022) values a duel
    only by the better of its two options, ``E[max(f_a, f_b)]``: it keeps pairing the incumbent
    with options that are almost surely worse but whose utility is still uncertain (a duel whose
    outcome is nearly certain teaches the Laplace posterior little, ``W = p (1 - p)`` is small), and
    each such duel costs regret. The score adds the duel's own utility, counted optimistically:

    ``E[max(f_a, f_b)] + exploit (u_a + u_b) / 2``,
    ``u_x = mean(x) + optimism sd(f(x) - f(x_hat))``

    with ``x_hat`` the incumbent (largest posterior mean), ``exploit = 1`` (the value of what the
    duel reveals and the value of the duel itself, weighted equally) and ``optimism = 1``.
    The optimism is what keeps it from locking: duels identify differences of utilities, never
    their level, so an option's own posterior sd never shrinks by duelling it, while the sd of
    its difference to the incumbent does; with the plain mean (``optimism = 0``) 5 of 20 runs on
    ``preference/toy`` duelled two look-alike options for all 200 duels
    (``docs/reproductions/preference.md``). The incumbent's own posterior sd is part of every
    other option's ``sd(f(x) - f(x_hat))`` and of none of its own, so this term also steers
    duels away from the incumbent (session 21: on the registered 3-D table about three quarters
    of duels 2-50 leave it out, plain EUBO's 5%); ``optimism_reference="average"`` (off by default)
    measures the sd against the average utility of all options instead, which no option is,
    and measured it is worse (the toy's look-alike pair locks again). ``exploit = 0`` gives
    :class:`EUBO`. Optionally
    (``plausible_beta``, off by default) both options are drawn from the plausible maximisers
    (:meth:`EUBO.plausible`); measured at 100 duels with ``beta = 2`` the bounds never excluded an
    option on the registered problems (the posterior is still wide), so it is not a default.
    ``exploit_schedule="sharpening"`` (off by default) multiplies ``exploit`` before each duel by
    ``1 - rho``, ``rho`` the fraction of the prior variance of the utility differences to the
    incumbent that the duels have not removed (:meth:`EUBO.remaining_uncertainty`): plain EUBO
    before any duel, the full duel utility once the differences are known. Measured on 21 option
    tables (15 seeds each, ``docs/reproductions/preference.md``) it helps on some 3-D tables and
    costs on others, so it is not the default either.
    Everything else (model, hyperparameter averaging, exact search over the pairs, at most
    :data:`MAX_OPTIONS` options) is :class:`EUBO`'s.
    """

    method_id = "eubo-regret"

    def __init__(
        self,
        candidates: Any,
        kernel: Kernel | None = None,
        variances: Sequence[float] = (1.0, 4.0, 16.0),
        lengthscales: Sequence[float] = DEFAULT_LENGTHSCALES,
        min_weight: float = 0.01,
        max_models: int = 3,
        lengthscale_prior: str = "flat",
        lengthscale_cap: bool = True,
        exploit: float = 1.0,
        optimism: float = 1.0,
        optimism_reference: str = "incumbent",
        exploit_schedule: str = "constant",
        plausible_beta: float | None = None,
        model_choice: str = "average",
        approximation: str = "laplace",
        repeat_duels: str = "allow",
        n_candidates: int = 256,
        tie_break: str = "random",
        tie_tol: float = 1e-12,
        recommend_rule: str = "utility",
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(
            candidates,
            kernel=kernel,
            variances=variances,
            lengthscales=lengthscales,
            min_weight=min_weight,
            max_models=max_models,
            lengthscale_prior=lengthscale_prior,
            lengthscale_cap=lengthscale_cap,
            exploit=exploit,
            optimism=optimism,
            optimism_reference=optimism_reference,
            exploit_schedule=exploit_schedule,
            plausible_beta=plausible_beta,
            model_choice=model_choice,
            approximation=approximation,
            repeat_duels=repeat_duels,
            n_candidates=n_candidates,
            tie_break=tie_break,
            tie_tol=tie_tol,
            recommend_rule=recommend_rule,
            seed=seed,
        )


class DoubleThompsonDuels(EUBO):
    """Double Thompson Sampling for dueling bandits on the utility posterior of :class:`EUBO`.

    Wu and Liu, "Double Thompson Sampling for dueling bandits" (NeurIPS 2016), Algorithm 1, for
    cumulative regret: the first option of a duel is the winner of a Thompson draw among the
    plausible winners, the second the option a second, independent draw says most likely to beat
    the first, among the options not yet known to lose to it. With a utility model the
    preference matrix is ``P(i > j) = sigmoid(f_i - f_j)``, so (Algorithm 1, lines 10-20):

    - ``a = argmax_{i in M} f1_i``, ``f1`` one joint draw of the utilities from the mixture
      posterior (a model drawn by its weight, then ``f ~ N(mean_k, cov_k)``), ``M`` the plausible
      maximisers (:meth:`EUBO.plausible` at ``plausible_beta``; the upper-confidence Copeland
      set of the paper's line 10);
    - ``b = argmax_{j in S} f2_j`` with ``f2`` a second draw and ``S`` the options whose lower
      confidence bound on ``f_j - f_a`` is at most 0 (``mean - beta sd`` of the difference,
      mixture moments; the paper's ``l_ja <= 1/2``), ``a`` itself included with ``theta_aa =
      1/2``: when the draw puts no option above ``a`` the duel is ``a`` against itself, which
      costs no regret and teaches nothing (the paper's self-duel).

    The draws use the seed's generator. ``plausible_beta`` defaults to 2 (two posterior standard
    deviations). Everything else (model, hyperparameter averaging, at most :data:`MAX_OPTIONS`
    options: each draw factors an m x m covariance) is :class:`EUBO`'s.
    """

    method_id = "dts"

    def __init__(
        self,
        candidates: Any,
        kernel: Kernel | None = None,
        variances: Sequence[float] = (1.0, 4.0, 16.0),
        lengthscales: Sequence[float] = DEFAULT_LENGTHSCALES,
        min_weight: float = 0.01,
        max_models: int = 3,
        lengthscale_prior: str = "flat",
        lengthscale_cap: bool = True,
        plausible_beta: float | None = 2.0,
        approximation: str = "laplace",
        n_candidates: int = 256,
        tie_break: str = "random",
        recommend_rule: str = "utility",
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(
            candidates,
            kernel=kernel,
            variances=variances,
            lengthscales=lengthscales,
            min_weight=min_weight,
            max_models=max_models,
            lengthscale_prior=lengthscale_prior,
            lengthscale_cap=lengthscale_cap,
            plausible_beta=plausible_beta,
            approximation=approximation,
            n_candidates=n_candidates,
            tie_break=tie_break,
            recommend_rule=recommend_rule,
            seed=seed,
        )

    def describe(self) -> dict[str, Any]:
        """:meth:`EUBO.describe` without the settings of EUBO's pair score, which the draws
        do not use (``exploit``, ``optimism``, ``optimism_reference``, ``exploit_schedule``,
        ``model_choice``, ``repeat_duels``)."""
        d = super().describe()
        for key in (
            "exploit",
            "optimism",
            "optimism_reference",
            "exploit_schedule",
            "exploit_last",
            "model_choice",
            "repeat_duels",
        ):
            d.pop(key)
        return d

    def thompson_draw(self) -> np.ndarray:
        """One joint draw of every option's utility from the mixture posterior, (m,)."""
        post = self.drawn_model()
        C = post.covariance()
        lam, Q = np.linalg.eigh(0.5 * (C + C.T))
        z = self.rng.standard_normal(self.m)
        return post.mean() + Q @ (np.sqrt(np.maximum(lam, 0.0)) * z)

    def _propose(self) -> Query:
        M = self.plausible()
        self.n_plausible_last = int(M.size)
        f1 = self.thompson_draw()
        a = int(M[self._pick(f1[M])])
        # mixture moments of f_j - f_a: the paper's lower confidence bound l_ja
        mean = self.posterior_mean()
        second = np.zeros(self.m)
        for wk, post in self._mixture:
            d_mu = post.mean() - post.mean(np.array([a]))[0]
            var = post.difference_variance(a)
            second += wk * (np.maximum(var, 0.0) + d_mu * d_mu)
        d_mean = mean - mean[a]
        sd = np.sqrt(np.maximum(second - d_mean * d_mean, 0.0))
        beta = 0.0 if self.plausible_beta is None else self.plausible_beta
        S = np.flatnonzero(d_mean - beta * sd <= 0.0)
        S = np.union1d(S, [a])
        f2 = self.thompson_draw()
        b = int(S[self._pick(f2[S])])
        return self._compare(a, b) if a <= b else self._compare(b, a)


# -- registry ---------------------------------------------------------------------------------------
_COMMON = ("kernel", "lam", "regularizer", "normalize_loss", "tie_break")


def _settings(problem: Any, beta_key: str) -> dict[str, Any]:
    """Settings shared by the family, and ``beta`` from ``settings[beta_key]`` (else ``beta``):
    ``beta_batch`` multiplies the width of a per-round fit (MR-LPF), ``beta_sequential`` that of
    the fit updated after every duel (MaxMinLCB); a problem may give both when its paper tunes
    them apart (Yelp: 0.1 and 2.0)."""
    s = problem.settings  # read, not copied: studies check which settings a method reads
    out = {k: s[k] for k in _COMMON if k in s}
    beta = s.get(beta_key, s.get("beta"))
    if beta is not None:
        out["beta"] = beta
    return out


def _options(kw: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Merge user options over the problem's settings; ``kernel="fit"`` (or ``"none"``) drops the
    problem's fixed kernel so the length-scale is fitted (``mr-lpf?kernel=fit`` on the CLI)."""
    kw = {**kw, **options}
    if isinstance(kw.get("kernel"), str):
        if kw["kernel"].lower() not in ("fit", "none"):
            raise InvalidInputError(
                f"kernel option must be a Kernel or 'fit', got {kw['kernel']!r}"
            )
        kw["kernel"] = None
    return kw


#: one-line docs of the preference options (the method table; types and defaults are read from
#: the constructors, see :func:`boloop.algorithms.registry.options_from`)
_DOCS = {
    "kernel": "fixed kernel (paper); 'fit' or None selects the length-scale from the duels",
    "lam": "regularisation lambda of the kernel logistic loss (eq. 7)",
    "beta": "confidence multiplier of sigma (MR-LPF also: one per round, or 'theory')",
    "sigma_reg": "regulariser of sigma_t (default lam; MR-LPF also: one per round, or 'theory')",
    "B": "RKHS-norm bound in the theory beta",
    "kappa": "curvature constant (eq. 2) in the theory beta",
    "delta": "confidence level of the theory beta",
    "regularizer": "'rkhs' (eq. 7) or another penalty of KernelLogisticDuels",
    "normalize_loss": "divide the logistic loss by the number of duels",
    "lengthscales": "length-scales (unit-cube units) tried when the kernel is fitted",
    "n_candidates": "boxes: Sobol candidates standing for the continuous space",
    "tie_break": "'random' (from the seed) or 'first' maximiser in row-major order",
    "tie_tol": "scores within this relative tolerance (>= 0) of the best are ties",
    "recommend_rule": "'utility' (largest estimated utility among the options still considered) "
    "or 'copeland' (most predicted wins over every option, the authors' script)",
    "horizon": "T, the number of duels MR-LPF plans its rounds for (default: the budget)",
    "use_candidate_set": "restrict duels to the plausible maximisers M_t (False: every arm)",
    "allow_self_duel": "allow pairs x = x' (the BOHF authors' script)",
}
_KERNEL_OR_FIT = {"kernel": "Kernel | str | None"}
_EUBO_DOCS = {
    "lengthscale_prior": "prior over the length-scale grid when fitted: 'dimension' "
    "(Hvarfner et al. 2024, log l ~ N(sqrt2 + log(d)/2, 3)), 'gamma' (BoTorch's PairwiseGP "
    "default, l ~ Gamma(2.4, 2.7)) or 'flat'",
    "lengthscale_cap": "leave out grid length-scales above the shared mechanism's shrinking cap "
    "(False: the whole grid, weighted by evidence and prior only)",
    "exploit": "weight of the duel's utility (u_a + u_b) / 2 added to E[max(f_a, f_b)]",
    "optimism": "u = posterior mean + optimism x posterior sd in the duel's utility",
    "optimism_reference": "the sd of 'optimism' is that of f(x) - f(incumbent) ('incumbent') or "
    "of f(x) - the average utility of all options ('average': no option is the reference)",
    "exploit_schedule": "'constant' (exploit as given) or 'sharpening' (exploit times the "
    "fraction of the prior uncertainty of utility differences the duels have removed)",
    "plausible_beta": "duel only options with mean + beta sd >= the best mean - beta sd "
    "(None: every option)",
    "model_choice": "'average' (the duel maximises the mixture's score) or 'draw' (the score of "
    "one model drawn by its evidence weight each duel: Thompson sampling of the hyperparameters)",
    "approximation": "Gaussian approximation of the utility posterior and its evidence: "
    "'laplace' (logistic link) or 'ep' (expectation propagation, probit link)",
    "repeat_duels": "'allow' (default), 'not-in-a-row' (never the last duel again at once) or "
    "'never' (no pair twice until every pair was asked): for a person who finds repeats tiresome",
}


@register_method(
    "mr-lpf",
    "preference",
    "MR-LPF (Kayal et al., Algorithm 1): multi-round duels",
    options=options_from(MRLPF, _DOCS, skip=("candidates", "seed"), types=_KERNEL_OR_FIT),
)
def _make_mrlpf(problem: Any, seed: int | None, **options: Any) -> MRLPF:
    kw = _settings(problem, "beta_batch")
    kw["horizon"] = problem.settings.get("budget", 300)
    for key in ("B", "kappa"):
        if key in problem.settings:
            kw[key] = problem.settings[key]
    return MRLPF(problem.space, seed=seed, **_options(kw, options))


@register_method(
    "maxminlcb",
    "preference",
    "MaxMinLCB (Pasztor et al. 2024): Stackelberg duels",
    options=options_from(MaxMinLCB, _DOCS, skip=("candidates", "seed"), types=_KERNEL_OR_FIT),
)
def _make_maxminlcb(problem: Any, seed: int | None, **options: Any) -> MaxMinLCB:
    kw = _settings(problem, "beta_sequential")
    return MaxMinLCB(problem.space, seed=seed, **_options(kw, options))


@register_method(
    "random",
    "preference",
    "uniformly random duels, fitted-utility recommendation",
    options=options_from(RandomDuels, _DOCS, skip=("candidates", "seed"), types=_KERNEL_OR_FIT),
)
def _make_random(problem: Any, seed: int | None, **options: Any) -> RandomDuels:
    kw = _settings(problem, "beta")
    kw.pop("beta", None)
    return RandomDuels(problem.space, seed=seed, **_options(kw, options))


@register_method(
    "eubo",
    "preference",
    "EUBO (Lin et al. 2022): duels of largest expected best utility, Laplace posterior",
    options=options_from(
        EUBO,
        {
            **_DOCS,
            "variances": "output variances averaged over when fitted (the smallest is a floor)",
            "min_weight": "models of smaller evidence weight are dropped",
            "max_models": "models kept and updated between refits",
            **_EUBO_DOCS,
        },
        skip=("candidates", "seed"),
        types=_KERNEL_OR_FIT,
    ),
)
def _make_eubo(problem: Any, seed: int | None, **options: Any) -> EUBO:
    kw = {k: problem.settings[k] for k in ("kernel", "tie_break") if k in problem.settings}
    return EUBO(problem.space, seed=seed, **_options(kw, options))


@register_method(
    "eubo-regret",
    "preference",
    "EUBO plus the duel's own expected utility: few duels of low regret (the study default)",
    options=options_from(
        RegretAwareEUBO,
        {
            **_DOCS,
            "variances": "output variances averaged over when fitted (the smallest is a floor)",
            "min_weight": "models of smaller evidence weight are dropped",
            "max_models": "models kept and updated between refits",
            **_EUBO_DOCS,
        },
        skip=("candidates", "seed"),
        types=_KERNEL_OR_FIT,
    ),
)
def _make_eubo_regret(problem: Any, seed: int | None, **options: Any) -> RegretAwareEUBO:
    kw = {k: problem.settings[k] for k in ("kernel", "tie_break") if k in problem.settings}
    return RegretAwareEUBO(problem.space, seed=seed, **_options(kw, options))


@register_method(
    "dts",
    "preference",
    "Double Thompson Sampling (Wu and Liu 2016) on the Laplace utility posterior",
    options=options_from(
        DoubleThompsonDuels,
        {
            **_DOCS,
            "variances": "output variances averaged over when fitted (the smallest is a floor)",
            "min_weight": "models of smaller evidence weight are dropped",
            "max_models": "models kept and updated between refits",
            "lengthscale_prior": _EUBO_DOCS["lengthscale_prior"],
            "lengthscale_cap": _EUBO_DOCS["lengthscale_cap"],
            "plausible_beta": "first option among mean + beta sd >= the best mean - beta sd; "
            "second among options whose difference to the first has mean - beta sd <= 0",
            "approximation": _EUBO_DOCS["approximation"],
        },
        skip=("candidates", "seed"),
        types=_KERNEL_OR_FIT,
    ),
)
def _make_dts(problem: Any, seed: int | None, **options: Any) -> DoubleThompsonDuels:
    kw = {k: problem.settings[k] for k in ("kernel", "tie_break") if k in problem.settings}
    return DoubleThompsonDuels(problem.space, seed=seed, **_options(kw, options))
