"""The randomized straddle (the paper's method): :class:`RandomizedStraddle` for the average loss
(Definition 3.2, eq. 3.2, Algorithm 1) and :class:`RandomizedStraddleMax` for the max-value loss
(Definitions A.1 and A.3, Algorithms 2 and 3, ``H_T-hat`` of eq. A.2).

Paper: Inatsu, Takeno, Kutsukake, Takeuchi, "Active Learning for Level Set Estimation Using
Randomized Straddle Algorithms" (spec ``shared/specs/lse.md``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from boloop.algorithms.levelset.acquisition import (
    _zero_af_rank,
    _zero_af_rank_and_gradient,
    classify,
    straddle,
)
from boloop.algorithms.levelset.base import LevelSetPolicy, _finite_float
from boloop.confidence import ChiSquaredBeta
from boloop.errors import InvalidInputError, NotFittedError
from boloop.gp.exact import robust_cholesky
from boloop.recommendations import LevelSetEstimate
from boloop.spaces import Box


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
