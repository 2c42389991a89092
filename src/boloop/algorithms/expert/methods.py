"""The expert family's entries in the method table: settings, option docs and factories."""

from __future__ import annotations

from typing import Any

from boloop.algorithms.expert.baselines import (
    GPLCB,
    AlternatingExpert,
    CollaborativeCompare,
    ExpertSampling,
    HumanIntervention,
    RandomSearch,
)
from boloop.algorithms.expert.cobol import COBOHL, COBOL
from boloop.algorithms.registry import options_from, register_method
from boloop.queries import PolicySpec

# ---------------------------------------------------------------------------------- registry
_POLICY_KEYS = (
    "n_initial",
    "n_initial_labels",
    "fit_hyperparameters",
    "lengthscale",
    "noise_variance",
    "beta",
    "n_candidates",
)


def _settings(
    problem: PolicySpec, options: dict[str, Any], allowed: tuple[str, ...]
) -> dict[str, Any]:
    kw = {k: problem.settings[k] for k in allowed if k in problem.settings}
    kw.update(options)
    return kw


#: one-line docs of the expert family's options (the method table; types and defaults are read
#: from the constructors, see :func:`boloop.algorithms.registry.options_from`)
_DOCS = {
    "n_initial": "initial uniformly random evaluations (paper: 3)",
    "n_initial_labels": "initial labels at uniform points, for the policies that use labels (10)",
    "fit_hyperparameters": "fit the f-kernel length-scales by marginal likelihood (paper)",
    "lengthscale": "initial (or fixed) length-scale(s) in unit-cube coordinates",
    "noise_variance": "GP noise r on standardised outputs: start of the fit, or fixed (Table 3: "
    "1e-4)",
    "fit_output_scale": "fit the f-kernel's output scale by marginal likelihood (Table 3's BoTorch "
    "default; the reference code fixes it at 1)",
    "fit_noise": "fit the GP noise by marginal likelihood, at least noise_floor (Table 3's BoTorch "
    "default; the reference code fixes r = 1e-4)",
    "noise_floor": "lowest fitted GP noise variance (standardised outputs)",
    "beta": "a fixed beta_f multiplying the std; None: Lemma 3.1 with B_f and delta",
    "B_f": "RKHS norm bound of f in the beta_f of Lemma 3.1",
    "delta": "failure probability in the beta_f of Lemma 3.1",
    "n_candidates": "uniformly random points scored per iteration on a box",
    "n_restarts": "local refinements of the best candidates on a box",
    "refit_growth": "refit the hyperparameters once the f data grew by this fraction (0.1, as "
    "the other families); 0: on every new f value (paper)",
    "eta": "no-harm ratio of Alg. 1 line 6: sigma(x^u) <= eta sigma(x^c)",
    "lambda0": "initial dual variable lambda of eq. 5/6",
    "g_thr": "expert-uncertainty threshold below which x^c is evaluated without a label",
    "zeta": "step size of the dual update lambda <- max(0, lambda + zeta g_lower(x^c))",
    "primal_dual": "True: eq. 5/6 with a dual variable; False: the constrained variant (Fig. 3)",
    "norm_bound": "initial B_g of the expert's likelihood-ratio confidence set",
    "alpha_coefficient": "c in alpha_1 = c sqrt(n + 1) of the confidence set (App. F)",
    "doubling_period": "labels between doubling tests of B_g (App. F)",
    "max_norm_bound": "largest B_g the doubling may reach",
    "adapt_norm_bound": "double B_g when the labels reject it (App. F)",
    "no_harm": "'code' (the reference code's judge, default) or 'paper' (Alg. 1 line 6)",
    "label_window": "keep only the last labels in the confidence set (Fig. 7); None keeps all",
    "candidate": "'primal-dual' or 'pinpoint' (Fig. 6a: x^c sampled from the expert's belief)",
    "budget": "what an iteration counts: 'evaluations' (default; labels counted apart) or "
    "'iterations' (Alg. 1: a reject uses an iteration)",
    "reject_rule": "'veto' (a rejected proposal is never asked again; an evaluation follows) "
    "or 'paper' (Alg. 1 line 12 as printed)",
    "veto_correlation": "k_g-correlation from which a candidate counts as a rejected proposal",
    "ask_again": "put a point the expert already labelled to them again (the paper's "
    "independent labels); False (default): never the same question twice",
    "initial_labels": "(X, accepted): labels the expert already gave, in place of initial ones",
    "initial_observations": "(X, y): measurements already made, in place of initial ones",
    "g_value_bound": "box the latent values (labelled and query points) to [-v, v]; None: as "
    "printed",
    "max_reject_streak": "after this many rejections in a row evaluate x^u unasked; None: never",
    "harm_budget": "stop following the expert once its evaluated proposals cost this much "
    "(standardised units) against GP-LCB's expectation of its own; None: never",
    "agreement_gate": "let the expert lead only while the GP of f expects its rejects to be "
    "worse than its accepts (else GP-LCB's step, after a calibration label); False: the paper",
    "agreement_level": "posterior probability that the labels rank f better than a coin the "
    "agreement gate asks for (1 - delta); None: expected AUC above 1/2",
    "reject_fallback": "after a reject: 'lcb' evaluates x^c only where line 8 would not ask "
    "again, else x^u; 'xc' evaluates x^c whenever it passes line 6",
    "max_pinpoint_labels": "labels asked at most to pinpoint one point",
    "max_rejections": "proposals rejected at most before one is evaluated anyway",
    "w0": "initial trust w_0 in the human's belief (w_t = w0 gamma^t)",
    "gamma": "trust discount per iteration",
    "w_min": "trust below which the LCB point is evaluated without asking",
}


@register_method(
    "cobol",
    "expert",
    "COBOL (Xu et al. 2024, Alg. 1): expert-augmented LCB",
    options=options_from(COBOL, _DOCS),
)
def _cobol(problem: PolicySpec, seed: Any = 0, **options: Any) -> COBOL:
    return COBOL(problem.space, seed, **_settings(problem, options, _POLICY_KEYS))


#: COBOHL takes COBOL's options but two: it has no primal-dual step (Alg. 2; always False) and no
#: no-harm test, so no eta (its constructor sets both; the table must not offer or pin them)
_COBOHL_OPTIONS = tuple(
    o for o in options_from(COBOHL, _DOCS) if o.name not in ("primal_dual", "eta")
)


@register_method(
    "cobohl",
    "expert",
    "COBOHL (Xu et al. 2024, Alg. 2): expert-constrained LCB",
    options=_COBOHL_OPTIONS,
)
def _cobohl(problem: PolicySpec, seed: Any = 0, **options: Any) -> COBOHL:
    return COBOHL(problem.space, seed, **_settings(problem, options, _POLICY_KEYS))


@register_method(
    "gp-lcb",
    "expert",
    "vanilla GP-LCB (minimisation), the paper's baseline",
    options=options_from(GPLCB, _DOCS),
)
def _gplcb(problem: PolicySpec, seed: Any = 0, **options: Any) -> GPLCB:
    return GPLCB(problem.space, seed, **_settings(problem, options, _POLICY_KEYS))


@register_method(
    "expert-sampling",
    "expert",
    "rejection sampling from the expert's labels",
    options=options_from(ExpertSampling, _DOCS),
)
def _expert_sampling(problem: PolicySpec, seed: Any = 0, **options: Any) -> ExpertSampling:
    return ExpertSampling(problem.space, seed, **_settings(problem, options, ("n_initial",)))


@register_method(
    "av-2022",
    "expert",
    "simulated AV et al. 2022: expert vetoes LCB and picks",
    options=options_from(HumanIntervention, _DOCS),
)
def _av(problem: PolicySpec, seed: Any = 0, **options: Any) -> HumanIntervention:
    return HumanIntervention(problem.space, seed, **_settings(problem, options, _POLICY_KEYS))


@register_method(
    "khoshvishkaie-2023",
    "expert",
    "simulated Khoshvishkaie et al. 2023: alternate expert/LCB",
    options=options_from(AlternatingExpert, _DOCS),
)
def _alternating(problem: PolicySpec, seed: Any = 0, **options: Any) -> AlternatingExpert:
    return AlternatingExpert(problem.space, seed, **_settings(problem, options, _POLICY_KEYS))


@register_method(
    "random", "expert", "uniformly random evaluations", options=options_from(RandomSearch, _DOCS)
)
def _random(problem: PolicySpec, seed: Any = 0, **options: Any) -> RandomSearch:
    return RandomSearch(problem.space, seed, **_settings(problem, options, ("n_initial",)))


@register_method(
    "adachi-2024",
    "expert",
    "simulated Adachi et al. 2024: human picks LCB or belief-weighted LCB, trust decays",
    options=options_from(CollaborativeCompare, _DOCS),
)
def _adachi(problem: PolicySpec, seed: Any = 0, **options: Any) -> CollaborativeCompare:
    return CollaborativeCompare(problem.space, seed, **_settings(problem, options, _POLICY_KEYS))
