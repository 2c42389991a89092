"""How a level-set policy chooses its next query: the per-iteration hooks its subclasses write
(the beta draw or schedule, the acquisition function, its gradient), and the argmax of the
acquisition over a finite candidate set or, on a box, over fixed Sobol and fresh uniform
candidates refined by L-BFGS-B (spec P5).

Paper: Inatsu, Takeno, Kutsukake, Takeuchi, "Active Learning for Level Set Estimation Using
Randomized Straddle Algorithms" (spec ``shared/specs/lse.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from boloop.gp.exact import ExactGP
from boloop.gp.kernels import Kernel, StationaryKernel
from boloop.gp.optimize import refine_on_box
from boloop.gp.posterior_gradient import posterior_with_gradient
from boloop.spaces import Box, CandidateSet


class LevelSetSelection:
    """The choice of the next query of a level-set policy (a mixin of
    :class:`~boloop.algorithms.levelset.base.LevelSetPolicy`: it works on the policy's own
    state). What it needs from the policy is declared below (annotations only: no attribute is
    created here)."""

    # set by LevelSetPolicy.__init__ and BasePolicy.__init__
    space: CandidateSet | Box
    threshold: float
    kernel: Kernel
    gp: ExactGP
    candidates: np.ndarray
    rng: np.random.Generator
    n_fresh: int
    n_refine: int
    refine_maxiter: int
    sqrt_betas: list[float]
    # of LevelSetPolicy (the loop) and LevelSetEstimates
    _allowed: Callable[[], np.ndarray | None]
    candidate_posterior: Callable[[], tuple[np.ndarray, np.ndarray]]
    predict: Callable[[Any], tuple[np.ndarray, np.ndarray]]

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
