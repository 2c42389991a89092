"""The baselines the randomized straddle is compared with (Sec. 5.1): the straddle heuristic
(Bryan et al. 2005), LSE (Gotovos et al. 2013), MILE (Zanette et al. 2019), uncertainty
sampling and random sampling.

Paper: Inatsu, Takeno, Kutsukake, Takeuchi, "Active Learning for Level Set Estimation Using
Randomized Straddle Algorithms" (spec ``shared/specs/lse.md``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from boloop.algorithms.levelset.acquisition import mile_acquisition, straddle
from boloop.algorithms.levelset.base import LevelSetPolicy, _finite_float
from boloop.confidence import GotovosLSEBeta
from boloop.errors import InvalidInputError
from boloop.queries import Query


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
