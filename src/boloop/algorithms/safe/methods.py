"""The safe family's entries in the method table: settings, option docs and factories.

Method ids (``m-safeopt``, ``m-safeopt-x``, ``m-safeucb``, ``safeopt-mc``, ``predvar``) of
Losalka & Scarlett, "No-Regret Algorithms for Safe Bayesian Optimization with Monotonicity
Constraints", AISTATS 2024 (spec ``shared/specs/msafeopt.md``), registered when
:mod:`boloop.algorithms.safe` is imported.
"""

from __future__ import annotations

from typing import Any

from boloop._validation import positive
from boloop.algorithms.registry import Option, options_from, register_method
from boloop.algorithms.safe.policies import MSafeOpt, PredVar, SafeOptMC
from boloop.errors import InvalidInputError

#: the value of ``L_f``, ``L_g_prime`` and ``missing_constants`` that means "no bound known"
UNKNOWN = "unknown"

# ---------------------------------------------------------------------- registry
_COMMON_KEYS = (
    "kernel_f",
    "kernel_g",
    "noise_f",
    "noise_g",
    "sqrt_beta_f",
    "sqrt_beta_g",
    "n_initial",
    "fit_hyperparameters",
    "hyperparameters",
    "variance_prior_f",
    "variance_prior_g",
    "lengthscale_prior",
    "keep_certified",
    "min_lengthscale_g",
)


_OPTION_ONLY = ("trend_g", "offset_g", "skip_measured_seeds", "cache_mb")


def _settings(problem: Any, options: dict[str, Any]) -> dict[str, Any]:
    s = problem.settings
    kw = {k: s[k] for k in _COMMON_KEYS if k in s}
    # trend_g and cache_mb are options only (never a problem's setting): a study pins their
    # defaults (boloop.study.pinning), so a later default does not change an existing study
    given = {k: v for k, v in options.items() if k in _COMMON_KEYS or k in _OPTION_ONLY}
    kw.update(given)
    if kw.get("fit_hyperparameters") and kw.get("hyperparameters") != "paper":
        # learning as a user would: the paper's kernels and seed count are not known to them
        for key in ("kernel_f", "kernel_g", "n_initial"):
            if key not in given:
                kw.pop(key, None)
    return kw


#: one-line docs of the safe options (the method table; types and defaults are read from the
#: constructors, see :func:`boloop.algorithms.registry.options_from`)
_DOCS = {
    "kernel_f": "kernel of the objective f (fixed hyperparameters; None: fitted)",
    "kernel_g": "kernel of the safety function g (fixed hyperparameters; None: fitted)",
    "noise_f": "noise variance of f",
    "noise_g": "noise variance of g",
    "sqrt_beta_f": "beta^(1/2) of f's confidence bounds (a number or a BetaSchedule)",
    "sqrt_beta_g": "beta^(1/2) of g's confidence bounds (a number or a BetaSchedule)",
    "n_initial": "evaluations at the safe seeds before the first iteration",
    "fit_hyperparameters": "learn the kernels' hyperparameters from the data",
    "hyperparameters": "how they are learned: 'learned' (safe default), 'paper' or 'plain'",
    "variance_prior_f": "prior scale of f's output variance when fitted",
    "variance_prior_g": "prior scale of g's output variance when fitted",
    "lengthscale_prior": "prior scale of the length-scales when fitted",
    "keep_certified": "actions once certified safe stay in the safe set",
    "min_lengthscale_g": (
        "your assumption: g's length-scales are at least this fraction of each axis's range "
        "(a number, or one per axis: monotone first); learned kernels only; if g changes faster "
        "the method can certify unsafe actions"
    ),
    "trend_g": (
        "g's learned model has a linear trend in s of unknown slope (false: the Matern kernel "
        "alone, the default before); learned hyperparameters without kernel_g only"
    ),
    "offset_g": (
        "with the trend in s: g's learned model has an unknown constant as well, so z's "
        "amplitude is learned from the data's variation, not their distance from h; measured "
        "unsafe on many random problems (research only)"
    ),
    "skip_measured_seeds": (
        "a safe seed already measured (a continued study's answers, an added measurement) is "
        "not asked again"
    ),
    "cache_mb": "memory for the cached cross-covariances before the grid is streamed",
}
_THRESHOLD = Option("threshold", "float", None, "safety limit h (default: the problem's)")
_MISSPECIFICATION = Option(
    "misspecification", "float", 1.0, "c: L_f times c and L'_g over c (Fig. 4); not used here"
)
_SAFE_OPTIONS = (
    *options_from(MSafeOpt, _DOCS, only=(*_COMMON_KEYS, *_OPTION_ONLY)),
    _THRESHOLD,
)
_MSAFEOPT_OPTIONS = (
    *_SAFE_OPTIONS,
    Option(
        "L_f",
        "float | str",
        None,
        "upper bound of f's growth per unit of s (eq. 4), or 'unknown' (default: the "
        "problem's, else missing_constants)",
    ),
    Option(
        "L_g_prime",
        "float | str",
        None,
        "lower bound L'_g of g's slope in s (eq. 5), or 'unknown' (default: the problem's, "
        "else missing_constants)",
    ),
    Option(
        "missing_constants",
        "float | str",
        UNKNOWN,
        "L_f and L_g_prime where neither you nor the problem gives them: 'unknown' (no bound "
        "assumed: every x whose certified range can still grow is explored) or a number in "
        "your units (1.0 before this option existed)",
    ),
    Option("case", "str | int", None, "'1', '2', '3a' or '3b' (default: the method id's case)"),
    Option("acquisition", "str", "default", "the case's acquisition rule ('default')"),
    Option("misspecification", "float", 1.0, "c: use L_f times c and L'_g over c (Fig. 4)"),
)


#: a constant neither the options nor the problem's settings give
_ABSENT = object()


def _constant(name: str, value: Any) -> float | None:
    """A constant of eq. 4-5 as given under ``name`` (the option or setting that gave it, so a
    bad value is refused naming it): a positive number, or None for ``'unknown'``."""
    if isinstance(value, str):
        if value.strip().lower() == UNKNOWN:
            return None
        raise InvalidInputError(f"{name} must be a positive number or {UNKNOWN!r}, got {value!r}")
    return positive(value, name)


def _msafeopt_factory(case: str) -> Any:
    def factory(problem: Any, seed: Any, **options: Any) -> MSafeOpt:
        s = problem.settings
        # refused even where no constant is known to scale: c <= 0 is never a misspecification
        c = positive(options.pop("misspecification", 1.0), "misspecification")
        missing = _constant("missing_constants", options.pop("missing_constants", UNKNOWN))
        kw = _settings(problem, options)

        def given(name: str) -> float | None:  # the option, else the problem's, else missing
            value = options.get(name, s.get(name, _ABSENT))
            return missing if value is _ABSENT else _constant(name, value)

        L_f, L_g = given("L_f"), given("L_g_prime")
        return MSafeOpt(
            problem.space,
            options.get("threshold", s["threshold"]),
            L_f=None if L_f is None else L_f * c,
            L_g_prime=None if L_g is None else L_g / c,
            case=options.get("case", case),
            acquisition=options.get("acquisition", "default"),
            seed=seed,
            **kw,
        )

    return factory


register_method(
    "m-safeopt",
    "safe",
    "M-SafeOpt Case 1: global safe optimum (Losalka & Scarlett 2024, Alg. 1)",
    options=_MSAFEOPT_OPTIONS,
)(_msafeopt_factory("1"))
register_method(
    "m-safeopt-x",
    "safe",
    "M-SafeOpt Case 2: best safe s for every x (Losalka & Scarlett 2024)",
    options=_MSAFEOPT_OPTIONS,
)(_msafeopt_factory("2"))
register_method(
    "m-safeucb",
    "safe",
    "M-SafeOpt Case 3b = M-SafeUCB: f = g increasing (Losalka & Scarlett 2023)",
    options=_MSAFEOPT_OPTIONS,
)(_msafeopt_factory("3b"))


@register_method(
    "safeopt-mc",
    "safe",
    "SafeOpt-MC as run in Losalka & Scarlett 2024 (B.2.2)",
    options=(*_SAFE_OPTIONS, _MISSPECIFICATION),
)
def _safeopt_mc(problem: Any, seed: Any, **options: Any) -> SafeOptMC:
    options.pop("misspecification", None)
    return SafeOptMC(
        problem.space,
        options.get("threshold", problem.settings["threshold"]),
        seed=seed,
        **_settings(problem, options),
    )


@register_method(
    "predvar",
    "safe",
    "PredVar for f and g as run in Losalka & Scarlett 2024 (B.2.2)",
    options=(*_SAFE_OPTIONS, _MISSPECIFICATION),
)
def _predvar(problem: Any, seed: Any, **options: Any) -> PredVar:
    options.pop("misspecification", None)
    return PredVar(
        problem.space,
        options.get("threshold", problem.settings["threshold"]),
        seed=seed,
        **_settings(problem, options),
    )
