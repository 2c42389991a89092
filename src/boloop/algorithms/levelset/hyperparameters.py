"""Learned hyperparameters of the level-set policies: the family's settings of the shared
mechanism (:data:`LEVELSET_LEARNING`), the choice of the mechanism from a policy's options,
and the policy's refits, the widening of length-scales that leave it overconfident (Wang and de
Freitas 2014), and the check of a fixed noise variance against repeated measurements.

Paper: Inatsu, Takeno, Kutsukake, Takeuchi, "Active Learning for Level Set Estimation Using
Randomized Straddle Algorithms" (spec ``shared/specs/lse.md``).
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

from boloop.errors import InvalidInputError
from boloop.gp.exact import ExactGP
from boloop.gp.hyperparameters import HyperparameterLearning

logger = logging.getLogger("boloop")


def _resolve_learning(
    hyperparameters: HyperparameterLearning | str | None, fit: bool
) -> HyperparameterLearning | None:
    """The mechanism for fitted hyperparameters (None when they are fixed)."""
    if hyperparameters is not None and not isinstance(hyperparameters, HyperparameterLearning):
        if hyperparameters not in ("learned", "plain"):
            raise InvalidInputError(
                "hyperparameters must be 'learned', 'plain' or a HyperparameterLearning, "
                f"got {hyperparameters!r}"
            )
    if not fit:
        if hyperparameters is not None:
            raise InvalidInputError(
                "hyperparameters= only applies when they are fitted (kernel=None or "
                "fit_hyperparameters=True)"
            )
        return None
    if isinstance(hyperparameters, HyperparameterLearning):
        return hyperparameters
    if hyperparameters == "plain":
        logger.warning(
            "level-set policy: plain maximum-likelihood hyperparameters requested (no priors, "
            "one random initial point); the model can become confidently wrong and stop exploring"
        )
        return HyperparameterLearning.plain()
    return LEVELSET_LEARNING


#: The level-set family's settings of the shared mechanism: its defaults, with one start drawn
#: from the priors (not two) besides the previous optimum, since the level-set policies restart
#: at every refit (``refit_restarts="every"``), not only when ``n`` passes a power of two: the
#: same global search for about 1.6 times the fit cost instead of 2.5 (issue 18,
#: ``docs/hyperparameters.md``); and replicated inputs collapsed in the log posterior (a policy
#: on a grid re-queries points: on ``levelset/toy`` 105 answers fall on 11-14 of 41 points).
LEVELSET_LEARNING = HyperparameterLearning(n_restarts=1, collapse_replicates=True)


class LevelSetHyperparameters:
    """The hyperparameters of a level-set policy: refits, widening, noise check (a mixin of
    :class:`~boloop.algorithms.levelset.base.LevelSetPolicy`: it works on the policy's own
    state). What it needs from the policy is declared below (annotations only: no attribute is
    created here)."""

    # set by LevelSetPolicy.__init__ and BasePolicy.__init__
    fit: bool
    learning: HyperparameterLearning | None
    refit_restarts: str
    widen_when_overconfident: bool
    overconfident_iterations: list[int]
    widenings: list[float]
    gp: ExactGP
    rng: np.random.Generator
    _d: int
    _width: np.ndarray
    _last_fit_n: int
    _widened: bool

    @property
    def last_fit_n(self) -> int:
        """The number of observations of the last refit of the hyperparameters (0 before the
        first, and always with fixed ones): the ``n`` of the shrinking cap that
        :meth:`_widen_if_overconfident` compares the length-scales with, and the refit since
        which at most one widening happens."""
        return self._last_fit_n

    def _lengthscale_at_cap(self) -> bool:
        """Whether a fitted length-scale sits on the mechanism's shrinking cap (the upper bound
        of its last fit, :meth:`HyperparameterLearning.lengthscale_cap`): the data pushed it as
        long as the cap allows."""
        assert self.learning is not None
        ls = getattr(self.gp.kernel, "lengthscale", None)
        if ls is None or self._last_fit_n == 0:
            return False
        frac = np.atleast_1d(np.asarray(ls, dtype=np.float64)) / self._width
        floor = self.learning.lengthscale_floor(self._d)
        cap = np.maximum(self.learning.lengthscale_cap(self._last_fit_n, self._d), 2 * floor)
        return bool(np.any(frac >= cap * (1.0 - 1e-3)))

    def _widen_if_overconfident(self, sd: float, t: int) -> bool:
        """Doubt the fitted length-scales when the acquisition would re-measure what it knows.

        With learned hyperparameters a model can be confidently wrong where it has no data: a
        long length-scale that the answers cannot contradict (all of them on a trend, none on a
        bump the space-filling start missed) makes ``sigma`` small everywhere, and a level-set
        acquisition then spends every answer on the few points whose mean is nearest the
        threshold, measured again and again below the noise level (issue 18's coating map:
        one point 15 times in 60 answers, the bump never seen). Its choice ``x_t`` tells: when
        ``sigma_{t-1}(x_t) < sigma_n``, one more answer there changes the posterior less than
        the noise hides, which under the model is the most useful answer only if the model is
        right about everything else. That is the trigger of Wang and de Freitas ("Theoretical
        analysis of Bayesian optimisation with unknown Gaussian process hyper-parameters",
        arXiv:1406.7758, 2014, Sec. 4): they lower the length-scales' upper bound when the
        posterior standard deviation at the chosen point falls below a threshold ``kappa``;
        here ``kappa = sigma_n``, the fitted noise's standard deviation (no constant of ours).
        As in their algorithm, lowering the bound changes the model only where the bound binds:
        the widening applies only when a fitted length-scale sits on the mechanism's shrinking
        cap (the data would have it longer than allowed, :meth:`_lengthscale_at_cap`); a
        length-scale inside its bounds is the data's own, and shortening it would contradict
        them (measured: on a grid of two bumps on a flat floor, widening an interior MAP kept
        the answers on the bump already found and missed the other in 4 of 20 seeds).

        The response uses the mechanism's own likelihood-ratio set instead of a fixed factor:
        the length-scales are shortened by the common factor ``c`` at which the log posterior
        has dropped by ``chi2_p(0.95) / 2`` (:meth:`HyperparameterLearning.conservative`), the
        most doubt the data allow at that level, in the spirit of A-GP-UCB's shrinking
        length-scales (Berkenkamp, Schoellig and Krause, JMLR 2019, Sec. 4). It holds until the
        next refit (which starts again from the MAP) and is applied at most once between
        refits. Returns True when the kernel changed (the caller chooses again with the widened
        model: the same ``beta_t`` draw, the same rule, so every choice is still an argmax of
        the method's acquisition under a model the data cannot reject).
        """
        if not self.widen_when_overconfident:  # False with fixed hyperparameters (__init__)
            return False
        noise_sd = math.sqrt(max(self.gp.noise_variance, 0.0))
        if not sd < noise_sd:
            return False
        self.overconfident_iterations.append(int(t))
        if self._widened or not self._lengthscale_at_cap():
            return False
        assert self.learning is not None
        self._widened = True
        try:
            c = self.learning.conservative(self.gp)
        except Exception as exc:  # keep the fitted model
            logger.warning("widening the length-scales failed, keeping the fitted ones: %s", exc)
            return False
        if not c < 1.0:
            return False
        self.widenings.append(float(c))
        return True

    def _refit(self) -> None:
        """Refit the hyperparameters with the mechanism (keeps the old ones if the fit fails)."""
        assert self.learning is not None
        # last_fit_n = 0 tells the mechanism that restarts are due (its documented meaning)
        last = 0 if self.refit_restarts == "every" else self._last_fit_n
        report = self.learning.fit(self.gp, self._width, rng=self.rng, last_fit_n=last)
        if report.refitted:
            self._last_fit_n = self.gp.n
            self._widened = False

    def noise_check(self) -> dict[str, dict[str, Any]]:
        """With a fixed noise variance (``fit_hyperparameters=False``; a learned one follows
        the data), ``{"value": ...}`` when measurements repeated at one setting scatter more
        than it allows (:func:`boloop.gp.repeats.noise_too_small`), else empty."""
        from boloop.gp.repeats import noise_too_small

        if self.fit or self.gp.n < 3:
            return {}
        found = noise_too_small(self.gp.X, self.gp.y, self.gp.noise_variance)
        if found is None:
            return {}
        found.update(
            option="noise_variance",
            cost="so its map follows the noise and is too sure of it",
        )
        return {"value": found}
