"""Double Thompson Sampling (Wu and Liu 2016) on EUBO's utility posterior: method ``dts``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from boloop.algorithms.preference.base import DEFAULT_LENGTHSCALES
from boloop.algorithms.preference.eubo import EUBO
from boloop.gp.kernels import Kernel
from boloop.queries import Query


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
