"""MR-LPF, Multi-Round Learning from Preference-based Feedback (Kayal et al., Algorithm 1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from boloop._validation import finite_real as _real
from boloop.algorithms.preference.base import DEFAULT_LENGTHSCALES, _DuelingPolicy
from boloop.algorithms.preference.theory import (
    KAPPA_LATER_ROUNDS,
    mrlpf_round_schedule,
    mrlpf_theory_beta,
)
from boloop.errors import InvalidInputError, QueryStateError
from boloop.gp.kernels import Kernel
from boloop.gp.preference import DuelCovariance
from boloop.queries import Query


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
