"""The baselines of the BOHF paper: MaxMinLCB (Pasztor et al. 2024) and random duels."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from boloop._validation import finite_real as _real
from boloop.algorithms.preference.base import DEFAULT_LENGTHSCALES, _DuelingPolicy, _refit_due
from boloop.gp.kernels import Kernel
from boloop.gp.preference import DuelCovariance
from boloop.queries import Query


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
