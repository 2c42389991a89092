"""EUBO: duels of largest expected best utility on a mixture of utility posteriors.

:class:`EUBO` (Lin et al. 2022) and the values of its options; :class:`RegretAwareEUBO` and
:class:`DoubleThompsonDuels` build on it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from boloop._validation import finite_real as _real
from boloop._validation import integer_at_least as _count
from boloop.algorithms.preference.base import (
    DEFAULT_LENGTHSCALES,
    _DuelingPolicy,
    _refit_due,
    _sigmoid,
)
from boloop.errors import InvalidInputError
from boloop.gp.hyperparameters import HyperparameterLearning
from boloop.gp.kernels import Kernel, SquaredExponential
from boloop.gp.utility_ep import UtilityPosteriorEP
from boloop.gp.utility_laplace import UtilityPosterior, WarmStart, best_pairs
from boloop.queries import Query

#: how the weight of the duel's utility in :class:`RegretAwareEUBO` changes with the duels
EXPLOIT_SCHEDULES = ("constant", "sharpening")
#: what the optimism of :class:`RegretAwareEUBO`'s duel utility is measured against: the
#: incumbent (``sd(f(x) - f(x_hat))``) or the average utility of all options (``sd(f(x) - f_bar)``)
OPTIMISM_REFERENCES = ("incumbent", "average")
#: which duels already asked may be asked again (:class:`EUBO`)
REPEAT_DUELS = ("allow", "not-in-a-row", "never")
#: how the duel is chosen from the model mixture: its average, or one model drawn by weight
MODEL_CHOICES = ("average", "draw")
#: the Gaussian approximation of the utility posterior: Laplace's method or expectation propagation
APPROXIMATIONS = ("laplace", "ep")
#: priors over EUBO's length-scale grid (see ``EUBO._log_prior``)
LENGTHSCALE_PRIORS = ("dimension", "flat", "gamma")
#: ``(concentration, rate)`` of the Gamma length-scale prior of ``lengthscale_prior="gamma"``:
#: the default of BoTorch's ``PairwiseGP`` (inputs in the unit cube), the peer of issue 17
GAMMA_LENGTHSCALE_PRIOR = (2.4, 2.7)


class EUBO(_DuelingPolicy):
    """Duels that maximise the expected utility of the best option (EUBO).

    Lin, Astudillo, Frazier and Bakshy, "Preference exploration for efficient Bayesian
    optimization with multiple outcomes" (AISTATS 2022), eq. 4; Astudillo et al., "qEUBO: a
    decision-theoretic acquisition function for preferential Bayesian optimization" (AISTATS
    2023): the next duel is ``argmax_{a != b} E[max(f(a), f(b))]`` under the posterior of the
    utilities, exact over the finite option set (:func:`boloop.gp.utility_laplace.eubo_all_pairs`)
    on the Laplace posterior of :class:`~boloop.gp.utility_laplace.UtilityPosterior` with the
    logistic link of the BOHF paper. Recommends the option of largest posterior mean.

    Hyperparameters (``kernel=None``): a squared-exponential kernel on the options scaled to the
    unit cube; instead of one fitted (length-scale, output variance) the posterior is averaged
    over the grid ``lengthscales`` x ``variances`` with weights proportional to the Laplace
    evidence (R&W eq. 3.32), reweighted after every duel (Bayesian model averaging: the expected
    maximum and the mean are linear in the mixture). Two safeguards against the failure of
    BoTorch's PairwiseGP + EUBO, which locks onto one pair when its fitted output scale collapses
    (issue 17): the smallest output variance is a floor, and length-scales longer than the shared
    mechanism's shrinking cap (:meth:`HyperparameterLearning.lengthscale_cap`, after A-GP-UCB,
    Berkenkamp et al. JMLR 2019) are left out, so that a few duels of two look-alike options
    cannot make a long length-scale (a confident trend) win the evidence (``lengthscale_cap=False``
    keeps the whole grid, weighted by its evidence and prior only). Models of weight
    below ``min_weight`` are dropped, and between the refits after 10, 20, 40, ... duels only
    the ``max_models`` heaviest are updated (every grid model while there are at most 10 duels).
    The grid's models have equal prior weight (``lengthscale_prior="flat"``) or, with
    ``"dimension"``, the dimension-scaled log-normal of Hvarfner et al. (2024) over the
    length-scale (:meth:`_log_prior`), or with ``"gamma"`` BoTorch's ``PairwiseGP`` default
    ``l ~ Gamma(2.4, 2.7)``; measured in ``docs/reproductions/preference.md`` each helps on some
    option sets and costs on others, so neither is the default.
    ``model_choice="draw"`` (off by default) scores the pairs under one model of the mixture drawn
    by its weight before each duel instead of under the mixture (Thompson sampling of the
    hyperparameters, so that a model of small weight still chooses some duels); measured in the
    same document it does not remove the lock-in of issue 17, so it is not the default.
    ``approximation="ep"`` (off by default) finds each model's Gaussian posterior and evidence by
    expectation propagation with the probit link (:class:`~boloop.gp.utility_ep.UtilityPosteriorEP`)
    instead of Laplace's method; measured in the same document, it is not better either.
    ``repeat_duels`` (``"allow"`` by default) keeps a person from being asked the same duel
    again: ``"not-in-a-row"`` never the last duel at once, ``"never"`` no pair twice until every
    pair has been asked (the pair score is then maximised over the others; :func:`best_pairs`'s
    ``exclude``). The logistic model counts a repeated answer as new evidence, which it is for a
    noisy chooser and not for a person who answers the same again; measured in
    ``docs/reproductions/preference.md`` (eighth pass) under the logistic simulator,
    ``"not-in-a-row"`` costs 2.5% of R(100) and ``"never"`` 37%, so the default allows repeats.
    The options: 2 to :data:`MAX_OPTIONS` distinct ones (each model of the grid keeps its m x m
    kernel matrix and posterior factor).
    """

    method_id = "eubo"
    uses_logistic_estimator = False

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
        exploit: float = 0.0,
        optimism: float = 0.0,
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
            lengthscales=lengthscales,
            n_candidates=n_candidates,
            tie_break=tie_break,
            tie_tol=tie_tol,
            recommend_rule=recommend_rule,
            seed=seed,
        )
        v = np.asarray(variances, dtype=np.float64).reshape(-1)
        if v.size == 0 or not np.all(np.isfinite(v)) or np.any(v <= 0):
            raise InvalidInputError(f"variances must be positive, got {variances!r}")
        self.variances = tuple(float(x) for x in v)
        self.min_weight = _real(min_weight, "min_weight")
        if self.min_weight >= 1:
            raise InvalidInputError(f"min_weight must be in [0, 1), got {min_weight!r}")
        self.max_models = _count(max_models, "max_models", 1)
        if lengthscale_prior not in LENGTHSCALE_PRIORS:
            raise InvalidInputError(
                f"lengthscale_prior must be one of {', '.join(LENGTHSCALE_PRIORS)}, "
                f"got {lengthscale_prior!r}"
            )
        self.lengthscale_prior = lengthscale_prior
        if not isinstance(lengthscale_cap, (bool, np.bool_)):
            raise InvalidInputError(
                f"lengthscale_cap must be True or False, got {lengthscale_cap!r}"
            )
        self.lengthscale_cap = bool(lengthscale_cap)
        self.exploit = _real(exploit, "exploit")
        self.optimism = _real(optimism, "optimism")
        if optimism_reference not in OPTIMISM_REFERENCES:
            raise InvalidInputError(
                f"optimism_reference must be one of {', '.join(OPTIMISM_REFERENCES)}, "
                f"got {optimism_reference!r}"
            )
        self.optimism_reference = optimism_reference
        if exploit_schedule not in EXPLOIT_SCHEDULES:
            raise InvalidInputError(
                f"exploit_schedule must be one of {', '.join(EXPLOIT_SCHEDULES)}, "
                f"got {exploit_schedule!r}"
            )
        self.exploit_schedule = exploit_schedule
        #: the weight of the duel's utility at the last duel chosen
        self.exploit_last = self.exploit
        if plausible_beta is not None:
            plausible_beta = _real(plausible_beta, "plausible_beta (or None)")
        self.plausible_beta = plausible_beta
        if model_choice not in MODEL_CHOICES:
            raise InvalidInputError(
                f"model_choice must be one of {', '.join(MODEL_CHOICES)}, got {model_choice!r}"
            )
        self.model_choice = model_choice
        if approximation not in APPROXIMATIONS:
            raise InvalidInputError(
                f"approximation must be one of {', '.join(APPROXIMATIONS)}, got {approximation!r}"
            )
        self.approximation = approximation
        if repeat_duels not in REPEAT_DUELS:
            raise InvalidInputError(
                f"repeat_duels must be one of {', '.join(REPEAT_DUELS)}, got {repeat_duels!r}"
            )
        self.repeat_duels = repeat_duels
        #: options the last duel was chosen among (all options without ``plausible_beta``)
        self.n_plausible_last = self.m
        #: the models (length-scale, output variance); NaN length-scale: the fixed kernel
        self._grid: list[tuple[float, float]] = (
            [(ls, var) for ls in self.lengthscales for var in self.variances]
            if self.fit_kernel
            else [(math.nan, 1.0)]
        )
        #: Gram matrices of unit variance per length-scale, computed when first needed
        self._grams: dict[float, np.ndarray] = {}
        #: where each grid model's solver starts next (by grid index): its last posterior's mode
        self._warm: dict[int, WarmStart] = {}
        #: the mixture's models (grid indices), one per entry of ``_mixture``
        self._models: list[int] = []
        self._mixture: list[tuple[float, UtilityPosterior]] = []
        self._update()

    def _prior(self, k: int) -> np.ndarray:
        """The prior covariance (m, m) of grid model ``k``: its Gram matrix times its variance."""
        ls, var = self._grid[k]
        if not self.fit_kernel or ls == float(self.kernel.lengthscale):  # type: ignore[attr-defined]
            # the fixed kernel's, or the same numbers as the grid's Gram matrix of this
            # length-scale (the kernel of a fitted EUBO is the grid's middle one, unit variance)
            K = self.K_X
        else:
            gram = self._grams.get(ls)
            if gram is None:
                gram = self._grams[ls] = self._gram(SquaredExponential(ls, 1.0))
            K = gram
        return K * var

    def __getstate__(self) -> dict[str, Any]:
        """A small state for pickling (study snapshots): no m x m matrix. The Gram matrices are
        left out and the mixture's posteriors stored by their modes
        (:meth:`UtilityPosterior.compact_state`); :meth:`__setstate__` recomputes the rest by the
        same arithmetic, so a policy loaded goes on bit for bit as the one pickled."""
        state = super().__getstate__()
        state["_grams"] = {}
        state["_mixture"] = [(wk, post.compact_state()) for wk, post in self._mixture]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        mixture = state.pop("_mixture")
        super().__setstate__(state)
        posterior = UtilityPosteriorEP if self.approximation == "ep" else UtilityPosterior
        self._mixture = [
            (wk, posterior.from_compact_state(self._prior(k), post))
            for (wk, post), k in zip(mixture, self._models)
        ]

    def _update(self) -> None:
        """Laplace posteriors and evidence weights: of every allowed grid model while the duels
        are few and at the refits (10, 20, 40, ... duels), of the models kept then in between."""
        w = np.array([i if y else j for i, j, y in self.duels], dtype=np.intp)
        los = np.array([j if y else i for i, j, y in self.duels], dtype=np.intp)
        n = len(self.duels)
        full = not self.fit_kernel or n <= 10 or _refit_due(n)
        grid = list(range(len(self._grid))) if full else self._models
        if self.fit_kernel and full and self.lengthscale_cap:
            cap = HyperparameterLearning().lengthscale_cap(len(self.duels), self._features.shape[1])
            shortest = min(self.lengthscales)
            grid = [k for k in grid if self._grid[k][0] <= cap or self._grid[k][0] == shortest]
        posterior = UtilityPosteriorEP if self.approximation == "ep" else UtilityPosterior
        posts = [posterior(self._prior(k), w, los, start=self._warm.get(k)) for k in grid]
        self._warm.update({k: p.warm_start() for k, p in zip(grid, posts)})
        ev = np.array([p.log_evidence for p in posts])
        if self.fit_kernel:
            ev = ev + np.array([self._log_prior(self._grid[k][0]) for k in grid])
        weights = np.exp(ev - ev.max())
        weights /= weights.sum()
        keep = weights >= min(self.min_weight, float(weights.max()))
        if full:  # at most max_models models between refits
            keep &= weights >= np.sort(weights)[-min(self.max_models, weights.size)]
        kept = np.flatnonzero(keep)
        weights = weights[kept] / weights[kept].sum()
        self._mixture = [(float(wk), posts[k]) for wk, k in zip(weights, kept)]
        self._models = [grid[k] for k in kept]

    def _log_prior(self, lengthscale: float) -> float:
        """Log prior mass of a grid length-scale (unit-cube units), up to a constant.

        ``"dimension"``: the dimension-scaled log-normal of Hvarfner, Hellsten and Nardi
        (ICML 2024) that the shared mechanism uses (:class:`HyperparameterLearning`,
        ``log l ~ N(sqrt2 + log(d) / 2, 3)``), evaluated at the grid's points (the grid is
        evenly spaced in ``log l``, so the density is the mass); ``"gamma"``: the density of
        ``log l`` under BoTorch's ``l ~ Gamma(2.4, 2.7)``; ``"flat"``: none."""
        if self.lengthscale_prior == "flat":
            return 0.0
        if self.lengthscale_prior == "gamma":
            # log density of log l: Gamma(l; k, r) times the Jacobian l, up to a constant
            k, r = GAMMA_LENGTHSCALE_PRIOR
            return k * math.log(lengthscale) - r * lengthscale
        mu0, sd0 = HyperparameterLearning().lengthscale_prior
        mu = mu0 + 0.5 * math.log(self._features.shape[1])
        return -0.5 * ((math.log(lengthscale) - mu) / sd0) ** 2

    def plausible(self) -> np.ndarray:
        """Indices of the options that may still be the best: ``mean + beta sd`` at least the
        largest ``mean - beta sd`` (mixture mean and standard deviation, ``beta =
        plausible_beta``); every option when ``plausible_beta`` is None."""
        if self.plausible_beta is None:
            return np.arange(self.m)
        mean = self.posterior_mean()
        second = np.zeros(self.m)
        for wk, post in self._mixture:
            mu = post.mean()
            second += wk * (post.variance() + mu * mu)
        sd = np.sqrt(np.maximum(second - mean * mean, 0.0))
        b = self.plausible_beta
        M = np.flatnonzero(mean + b * sd >= np.max(mean - b * sd))
        if M.size < 2:  # a duel needs two options: the best and the runner-up by mean
            M = np.sort(np.argsort(-mean, kind="stable")[:2])
        return M

    def _propose(self) -> Query:
        M = self.plausible()
        self.n_plausible_last = int(M.size)
        ref = int(np.argmax(self.posterior_mean()))
        exploit = self.exploit
        if exploit and self.exploit_schedule == "sharpening":
            exploit *= 1.0 - self.remaining_uncertainty(ref)
        self.exploit_last = exploit
        mixture = self._mixture
        if self.model_choice == "draw" and len(mixture) > 1:
            mixture = [(1.0, self.drawn_model())]
        reference: int | str | None = None
        if exploit and self.optimism:
            reference = ref if self.optimism_reference == "incumbent" else "average"
        a, b, score = best_pairs(
            mixture,
            exploit=exploit,
            among=M,
            tol=self.tie_tol,
            optimism=self.optimism,
            reference=reference,
            exclude=self._asked_pairs(),
        )
        k = self._pick(score) if self.tie_break == "random" else 0
        return self._compare(int(a[k]), int(b[k]))

    def _asked_pairs(self) -> list[tuple[int, int]]:
        """The duels ``repeat_duels`` keeps from being asked again: none (``"allow"``), the last
        one (``"not-in-a-row"``) or every one asked (``"never"``; all are allowed again once
        every pair of the options considered has been asked)."""
        if self.repeat_duels == "allow" or not self.duels:
            return []
        if self.repeat_duels == "not-in-a-row":
            i, j, _ = self.duels[-1]
            return [(i, j)]
        return [(i, j) for i, j, _ in self.duels]

    def remaining_uncertainty(self, reference: int) -> float:
        """The fraction of the prior uncertainty about the options' utilities relative to
        ``reference`` that the duels have not removed, in [0, 1]:

        ``rho = sum_k w_k sum_x Var_k[f(x) - f(r) | duels] / sum_x Var_k[f(x) - f(r)]``

        (posterior over prior, model ``k`` of the mixture with weight ``w_k``). Differences,
        because duels identify differences of utilities, never their level."""
        r = int(reference)
        rho = 0.0
        for wk, post in self._mixture:
            K = post.K
            kd = np.diag(K)
            prior = float(np.sum(kd + K[r, r] - 2.0 * K[:, r]))
            if prior <= 0.0:
                continue
            post_var = post.difference_variance(r)
            rho += wk * min(1.0, max(0.0, float(np.sum(np.maximum(post_var, 0.0))) / prior))
        return rho

    def _observe(self, query: Query, answer: Any) -> None:
        self.duels.append(self._duel_of(query, answer))
        self._update()

    def drawn_model(self) -> UtilityPosterior:
        """One Laplace posterior of the mixture, drawn with its weight from the seed's generator
        (Thompson sampling of the hyperparameters)."""
        weights = np.array([wk for wk, _ in self._mixture])
        return self._mixture[int(self.rng.choice(weights.size, p=weights / weights.sum()))][1]

    def posteriors(self) -> list[tuple[float, UtilityPosterior]]:
        """The model mixture the duels are chosen from: ``(weight, Laplace posterior)`` pairs."""
        return list(self._mixture)

    def posterior_mean(self) -> np.ndarray:
        """The model-averaged posterior mean of every option's utility, (m,)."""
        return sum(wk * post.mean() for wk, post in self._mixture)  # type: ignore[return-value]

    def _estimate(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """Posterior mean utilities and, for the Copeland rule, the posterior probabilities
        ``P(a > b) = E[mu(f_a - f_b)]`` averaged over the models, each by the probit
        approximation ``mu(m / sqrt(1 + pi s^2 / 8))`` of the mean ``m`` and variance ``s^2`` of
        ``f_a - f_b`` (MacKay 1992; Bishop 2006, eq. 4.153)."""
        mean = self.posterior_mean()
        everyone = np.ones(self.m, dtype=bool)
        if self.recommend_rule != "copeland":
            return np.arange(self.m), mean, everyone, None
        P = np.zeros((self.m, self.m))
        for wk, post in self._mixture:
            mu, C = post.mean(), post.covariance()
            v = np.diag(C)
            s2 = np.maximum(v[:, None] + v[None, :] - 2.0 * C, 0.0)
            P += wk * _sigmoid((mu[:, None] - mu[None, :]) / np.sqrt(1.0 + np.pi * s2 / 8.0))
        return np.arange(self.m), mean, everyone, P

    def describe(self) -> dict[str, Any]:
        """Counts and settings; with a fitted kernel the grid (``lengthscales``, ``variances``,
        its prior, cap, ``min_weight``, ``max_models``) and the ``models`` of the mixture now
        (length-scale, output variance, weight); a fixed kernel is shown as ``kernel``."""
        d = super().describe()
        if self.fit_kernel:
            d.update(
                {
                    "lengthscales": list(self.lengthscales),
                    "variances": list(self.variances),
                    "lengthscale_prior": self.lengthscale_prior,
                    "lengthscale_cap": self.lengthscale_cap,
                    "min_weight": self.min_weight,
                    "max_models": self.max_models,
                    "models": [
                        {
                            "lengthscale": self._grid[k][0],
                            "variance": self._grid[k][1],
                            "weight": wk,
                        }
                        for k, (wk, _) in zip(self._models, self._mixture)
                    ],
                }
            )
        d.update(
            {
                "exploit": self.exploit,
                "optimism": self.optimism,
                "optimism_reference": self.optimism_reference,
                "exploit_schedule": self.exploit_schedule,
                "exploit_last": self.exploit_last,
                "plausible_beta": self.plausible_beta,
                "model_choice": self.model_choice,
                "approximation": self.approximation,
                "repeat_duels": self.repeat_duels,
                "n_plausible_last": self.n_plausible_last,
            }
        )
        return d
