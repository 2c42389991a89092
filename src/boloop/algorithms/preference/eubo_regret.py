"""EUBO for a person's tens of duels: :class:`RegretAwareEUBO` (method ``eubo-regret``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from boloop.algorithms.preference.base import DEFAULT_LENGTHSCALES
from boloop.algorithms.preference.eubo import EUBO
from boloop.gp.kernels import Kernel


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
