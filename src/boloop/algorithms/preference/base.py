"""What every preference policy shares: :class:`_DuelingPolicy` (the options, the kernel, the
kernel logistic estimator, the answers, the recommendation rules) and :func:`copeland_winner`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from boloop._validation import finite_real as _real
from boloop._validation import integer_at_least as _count
from boloop.algorithms.preference.candidates import _as_candidates, _check_distinct
from boloop.errors import InvalidInputError
from boloop.gp.kernels import Kernel, SquaredExponential
from boloop.gp.preference import KernelLogisticDuels
from boloop.queries import BasePolicy, Compare, Query
from boloop.recommendations import BestPoint

#: length-scales (unit-cube units) tried when the kernel is fitted
DEFAULT_LENGTHSCALES = (0.05, 0.1, 0.2, 0.4, 0.8)
#: recommendation rules of every preference method (see ``_DuelingPolicy.recommend_index``)
RECOMMEND_RULES = ("utility", "copeland")


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
