"""The posterior of a level-set policy and the sets it estimates from it: the posterior at the
candidates and at any point (with its gradient, for the refinement on a box), the estimated
sets ``H_t = {x : mu_{t-1}(x) >= theta}`` and ``L_t`` (Definition 3.1, eq. 3.1), and the sets
of a past iteration (Algorithm 1's ``(H_T, L_T)``; the ``H_i`` of Algorithms 2-3's ``T-hat``).

Paper: Inatsu, Takeno, Kutsukake, Takeuchi, "Active Learning for Level Set Estimation Using
Randomized Straddle Algorithms" (spec ``shared/specs/lse.md``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from boloop.algorithms.levelset.acquisition import classify
from boloop.errors import InvalidInputError, NotFittedError
from boloop.gp.cache import CandidatePosterior, FixedPointsMean
from boloop.gp.exact import ExactGP
from boloop.gp.kernels import Kernel, StationaryKernel
from boloop.gp.posterior_gradient import posterior_with_gradient
from boloop.recommendations import LevelSetEstimate


class LevelSetEstimates:
    """The posterior and the estimated sets of a level-set policy (a mixin of
    :class:`~boloop.algorithms.levelset.base.LevelSetPolicy`: it works on the policy's own
    state). What it needs from the policy is declared below (annotations only: no attribute is
    created here)."""

    # set by LevelSetPolicy.__init__ and BasePolicy.__init__
    threshold: float
    finite: bool
    fit: bool
    kernel: Kernel
    gp: ExactGP
    cache: CandidatePosterior
    candidates: np.ndarray
    iteration: int
    _d: int
    _fixed_mean: FixedPointsMean | None
    _n_at_iteration: list[int]

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
