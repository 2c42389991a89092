"""The preference family's entries in the method table: settings, option docs and factories.

Method ids (``mr-lpf``, ``maxminlcb``, ``random``, ``eubo``, ``eubo-regret``, ``dts``),
registered when :mod:`boloop.algorithms.preference` is imported.
"""

from __future__ import annotations

from typing import Any

from boloop.algorithms.preference.baselines import MaxMinLCB, RandomDuels
from boloop.algorithms.preference.double_thompson import DoubleThompsonDuels
from boloop.algorithms.preference.eubo import EUBO
from boloop.algorithms.preference.eubo_regret import RegretAwareEUBO
from boloop.algorithms.preference.mrlpf import MRLPF
from boloop.algorithms.registry import options_from, register_method
from boloop.errors import InvalidInputError

_COMMON = ("kernel", "lam", "regularizer", "normalize_loss", "tie_break")


def _settings(problem: Any, beta_key: str) -> dict[str, Any]:
    """Settings shared by the family, and ``beta`` from ``settings[beta_key]`` (else ``beta``):
    ``beta_batch`` multiplies the width of a per-round fit (MR-LPF), ``beta_sequential`` that of
    the fit updated after every duel (MaxMinLCB); a problem may give both when its paper tunes
    them apart (Yelp: 0.1 and 2.0)."""
    s = problem.settings  # read, not copied: studies check which settings a method reads
    out = {k: s[k] for k in _COMMON if k in s}
    beta = s.get(beta_key, s.get("beta"))
    if beta is not None:
        out["beta"] = beta
    return out


def _options(kw: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Merge user options over the problem's settings; ``kernel="fit"`` (or ``"none"``) drops the
    problem's fixed kernel so the length-scale is fitted (``mr-lpf?kernel=fit`` on the CLI)."""
    kw = {**kw, **options}
    if isinstance(kw.get("kernel"), str):
        if kw["kernel"].lower() not in ("fit", "none"):
            raise InvalidInputError(
                f"kernel option must be a Kernel or 'fit', got {kw['kernel']!r}"
            )
        kw["kernel"] = None
    return kw


#: one-line docs of the preference options (the method table; types and defaults are read from
#: the constructors, see :func:`boloop.algorithms.registry.options_from`)
_DOCS = {
    "kernel": "fixed kernel (paper); 'fit' or None selects the length-scale from the duels",
    "lam": "regularisation lambda of the kernel logistic loss (eq. 7)",
    "beta": "confidence multiplier of sigma (MR-LPF also: one per round, or 'theory')",
    "sigma_reg": "regulariser of sigma_t (default lam; MR-LPF also: one per round, or 'theory')",
    "B": "RKHS-norm bound in the theory beta",
    "kappa": "curvature constant (eq. 2) in the theory beta",
    "delta": "confidence level of the theory beta",
    "regularizer": "'rkhs' (eq. 7) or another penalty of KernelLogisticDuels",
    "normalize_loss": "divide the logistic loss by the number of duels",
    "lengthscales": "length-scales (unit-cube units) tried when the kernel is fitted",
    "n_candidates": "boxes: Sobol candidates standing for the continuous space",
    "tie_break": "'random' (from the seed) or 'first' maximiser in row-major order",
    "tie_tol": "scores within this relative tolerance (>= 0) of the best are ties",
    "recommend_rule": "'utility' (largest estimated utility among the options still considered) "
    "or 'copeland' (most predicted wins over every option, the authors' script)",
    "horizon": "T, the number of duels MR-LPF plans its rounds for (default: the budget)",
    "use_candidate_set": "restrict duels to the plausible maximisers M_t (False: every arm)",
    "allow_self_duel": "allow pairs x = x' (the BOHF authors' script)",
}
_KERNEL_OR_FIT = {"kernel": "Kernel | str | None"}
_EUBO_DOCS = {
    "lengthscale_prior": "prior over the length-scale grid when fitted: 'dimension' "
    "(Hvarfner et al. 2024, log l ~ N(sqrt2 + log(d)/2, 3)), 'gamma' (BoTorch's PairwiseGP "
    "default, l ~ Gamma(2.4, 2.7)) or 'flat'",
    "lengthscale_cap": "leave out grid length-scales above the shared mechanism's shrinking cap "
    "(False: the whole grid, weighted by evidence and prior only)",
    "exploit": "weight of the duel's utility (u_a + u_b) / 2 added to E[max(f_a, f_b)]",
    "optimism": "u = posterior mean + optimism x posterior sd in the duel's utility",
    "optimism_reference": "the sd of 'optimism' is that of f(x) - f(incumbent) ('incumbent') or "
    "of f(x) - the average utility of all options ('average': no option is the reference)",
    "exploit_schedule": "'constant' (exploit as given) or 'sharpening' (exploit times the "
    "fraction of the prior uncertainty of utility differences the duels have removed)",
    "plausible_beta": "duel only options with mean + beta sd >= the best mean - beta sd "
    "(None: every option)",
    "model_choice": "'average' (the duel maximises the mixture's score) or 'draw' (the score of "
    "one model drawn by its evidence weight each duel: Thompson sampling of the hyperparameters)",
    "approximation": "Gaussian approximation of the utility posterior and its evidence: "
    "'laplace' (logistic link) or 'ep' (expectation propagation, probit link)",
    "repeat_duels": "'allow' (default), 'not-in-a-row' (never the last duel again at once) or "
    "'never' (no pair twice until every pair was asked): for a person who finds repeats tiresome",
}

#: the model grid of EUBO, eubo-regret and DTS (the hyperparameters their posteriors average over)
_GRID_DOCS = {
    "variances": "output variances averaged over when fitted (the smallest is a floor)",
    "min_weight": "models of smaller evidence weight are dropped",
    "max_models": "models kept and updated between refits",
}
#: every option doc of EUBO and eubo-regret
_EUBO_OPTION_DOCS = {**_DOCS, **_GRID_DOCS, **_EUBO_DOCS}


@register_method(
    "mr-lpf",
    "preference",
    "MR-LPF (Kayal et al., Algorithm 1): multi-round duels",
    options=options_from(MRLPF, _DOCS, skip=("candidates", "seed"), types=_KERNEL_OR_FIT),
)
def _make_mrlpf(problem: Any, seed: int | None, **options: Any) -> MRLPF:
    kw = _settings(problem, "beta_batch")
    kw["horizon"] = problem.settings.get("budget", 300)
    for key in ("B", "kappa"):
        if key in problem.settings:
            kw[key] = problem.settings[key]
    return MRLPF(problem.space, seed=seed, **_options(kw, options))


@register_method(
    "maxminlcb",
    "preference",
    "MaxMinLCB (Pasztor et al. 2024): Stackelberg duels",
    options=options_from(MaxMinLCB, _DOCS, skip=("candidates", "seed"), types=_KERNEL_OR_FIT),
)
def _make_maxminlcb(problem: Any, seed: int | None, **options: Any) -> MaxMinLCB:
    kw = _settings(problem, "beta_sequential")
    return MaxMinLCB(problem.space, seed=seed, **_options(kw, options))


@register_method(
    "random",
    "preference",
    "uniformly random duels, fitted-utility recommendation",
    options=options_from(RandomDuels, _DOCS, skip=("candidates", "seed"), types=_KERNEL_OR_FIT),
)
def _make_random(problem: Any, seed: int | None, **options: Any) -> RandomDuels:
    kw = _settings(problem, "beta")
    kw.pop("beta", None)
    return RandomDuels(problem.space, seed=seed, **_options(kw, options))


@register_method(
    "eubo",
    "preference",
    "EUBO (Lin et al. 2022): duels of largest expected best utility, Laplace posterior",
    options=options_from(
        EUBO,
        _EUBO_OPTION_DOCS,
        skip=("candidates", "seed"),
        types=_KERNEL_OR_FIT,
    ),
)
def _make_eubo(problem: Any, seed: int | None, **options: Any) -> EUBO:
    kw = {k: problem.settings[k] for k in ("kernel", "tie_break") if k in problem.settings}
    return EUBO(problem.space, seed=seed, **_options(kw, options))


@register_method(
    "eubo-regret",
    "preference",
    "EUBO plus the duel's own expected utility: few duels of low regret (the study default)",
    options=options_from(
        RegretAwareEUBO,
        _EUBO_OPTION_DOCS,
        skip=("candidates", "seed"),
        types=_KERNEL_OR_FIT,
    ),
)
def _make_eubo_regret(problem: Any, seed: int | None, **options: Any) -> RegretAwareEUBO:
    kw = {k: problem.settings[k] for k in ("kernel", "tie_break") if k in problem.settings}
    return RegretAwareEUBO(problem.space, seed=seed, **_options(kw, options))


@register_method(
    "dts",
    "preference",
    "Double Thompson Sampling (Wu and Liu 2016) on the Laplace utility posterior",
    options=options_from(
        DoubleThompsonDuels,
        {
            **_DOCS,
            **_GRID_DOCS,
            "lengthscale_prior": _EUBO_DOCS["lengthscale_prior"],
            "lengthscale_cap": _EUBO_DOCS["lengthscale_cap"],
            "plausible_beta": "first option among mean + beta sd >= the best mean - beta sd; "
            "second among options whose difference to the first has mean - beta sd <= 0",
            "approximation": _EUBO_DOCS["approximation"],
        },
        skip=("candidates", "seed"),
        types=_KERNEL_OR_FIT,
    ),
)
def _make_dts(problem: Any, seed: int | None, **options: Any) -> DoubleThompsonDuels:
    kw = {k: problem.settings[k] for k in ("kernel", "tie_break") if k in problem.settings}
    return DoubleThompsonDuels(problem.space, seed=seed, **_options(kw, options))
