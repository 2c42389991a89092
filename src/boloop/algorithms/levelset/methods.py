"""The level-set family's entries in the method table: option docs and factories."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from boloop.algorithms.levelset.base import LevelSetPolicy
from boloop.algorithms.levelset.baselines import (
    LSE,
    MILE,
    RandomSampling,
    Straddle,
    UncertaintySampling,
)
from boloop.algorithms.levelset.randomized_straddle import (
    RandomizedStraddle,
    RandomizedStraddleMax,
)
from boloop.algorithms.registry import options_from, register_method
from boloop.errors import InvalidInputError
from boloop.queries import PolicySpec
from boloop.spaces import Box, CandidateSet

# ---------------------------------------------------------------------------------------------
# Registry: factories read the problem's paper settings; options override them.
# ---------------------------------------------------------------------------------------------
_COMMON = (
    "kernel",
    "noise_variance",
    "fit_hyperparameters",
    "n_initial",
    "initial_points",
    "allow_repeats",
)


_NONE = ("none", "null")


def _learns(options: dict[str, Any]) -> bool:
    """Whether method options ask to learn the hyperparameters of a problem that has a kernel."""
    if "fit_hyperparameters" in options:
        return bool(options["fit_hyperparameters"])
    return ("kernel" in options and options["kernel"] is None) or "hyperparameters" in options


def _factory(cls: type[LevelSetPolicy], extra: tuple[str, ...] = ()) -> Callable[..., Any]:
    def factory(problem: PolicySpec, seed: int | None = 0, **options: Any) -> LevelSetPolicy:
        s = problem.settings
        if "threshold" not in s:
            raise InvalidInputError(f"{problem.source or 'the settings'}: no 'threshold' setting")
        kw: dict[str, Any] = {k: s[k] for k in _COMMON if k in s}
        for k in extra:
            if k in s:
                kw[k] = s[k]
        box_opts = s.get("box_options", {})
        if isinstance(problem.space, Box):
            kw.update(box_opts)
        if isinstance(options.get("kernel"), str) and options["kernel"].lower() in _NONE:
            options = {**options, "kernel": None}  # "kernel=None" in a bench method id
        kw.update(options)
        if s.get("kernel") is not None and _learns(options):
            # a run that learns hyperparameters on a paper problem does it as a user would: the
            # paper's kernel, noise variance and one-point start are not known either (unless
            # given); a start the problem prescribes (initial_points) is kept and topped up
            kw["fit_hyperparameters"] = options.get("fit_hyperparameters", True)
            for k in ("kernel", "noise_variance", "n_initial"):
                if k not in options:
                    kw.pop(k, None)
        if not isinstance(problem.space, CandidateSet | Box):
            raise InvalidInputError(
                f"{problem.source or 'space'}: level-set methods need a CandidateSet or a Box space"
            )
        return cls(problem.space, s["threshold"], seed=seed, **kw)

    factory.__qualname__ = f"make_{cls.__name__}"
    return factory


#: one-line docs of the level-set options (the method table; types and defaults are read from the
#: constructors, see :func:`boloop.algorithms.registry.options_from`)
_DOCS = {
    "kernel": "GP covariance with fixed hyperparameters (paper); None learns an SE-ARD kernel",
    "noise_variance": "observation-noise variance (Tables 1-2); start of the fit when fitted",
    "fit_hyperparameters": "fit even with a given kernel (True) or never (False)",
    "hyperparameters": "when fitted: 'learned' (priors, design; default) or 'plain' (unguarded ML)",
    "fit_every": "refit at most every fit_every observations (fitted mode only)",
    "refit_restarts": (
        "fitted mode: restarts from the priors at 'every' refit (default) or on 'doubling' of n"
    ),
    "n_initial": "initial queries, not iterations (paper: 1; learned: max(5, 2d) space-filling)",
    "initial_points": "fixed initial design (k, d) instead of random points",
    "allow_repeats": "finite spaces: False removes observed candidates (Sec. 5.3)",
    "n_candidates": "boxes: fixed Sobol candidates",
    "n_fresh": "boxes: fresh uniform candidates per step",
    "n_refine": "boxes: L-BFGS-B restarts from the best candidates",
    "refine_maxiter": "boxes: iteration cap of each L-BFGS-B restart",
    "widen_when_overconfident": (
        "fitted mode: shorten the length-scales to their likelihood-ratio edge when the choice's "
        "posterior sd is below the noise's and a length-scale is on the shrinking cap"
    ),
    "tie_break": (
        "when the clipped AF is 0 everywhere: 'expected' (largest E_beta[AF]; default when "
        "learned), 'unclipped' (argmax of the unclipped straddle; default with a kernel) or "
        "'random'"
    ),
    "a": "lower end of the max-value loss's range of f (Alg. 2); None: from the data",
    "b": "upper end of the max-value loss's range of f (Alg. 2); None: from the data",
    "n_samples": "joint posterior samples estimating E_T[r~_i] for the returned set (eq. A.2)",
    "max_sample_points": "candidates sampled at most (a random subset beyond)",
    "sqrt_beta": "beta^(1/2), the multiplier of the posterior std",
    "cardinality": "|X| in the LSE beta (default: candidates on a finite set, 1e15 on a box)",
    "delta": "failure probability in the LSE beta",
    "intersect": "intersect the confidence intervals over time (default: on finite sets)",
    "restart_intersection": "fitted mode: start the intersection again when the kernel changes",
    "max_dense": "keep the dense candidate covariance up to this many candidates",
}

for _cls, _desc, _extra in (
    (RandomizedStraddle, "randomized straddle, beta ~ chi2(2) per step (Inatsu et al. Alg. 1)", ()),
    (
        RandomizedStraddleMax,
        "randomized straddle for the max-value loss, returns H_T-hat (Alg. 2 / Alg. 3)",
        ("a", "b"),
    ),
    (Straddle, "straddle heuristic, beta^(1/2) = 3 (Bryan et al. 2005)", ()),
    (
        LSE,
        "LSE (Gotovos et al. 2013) with the theory beta, as run by Inatsu et al.",
        ("cardinality",),
    ),
    (MILE, "MILE (Zanette et al. 2019), beta^(1/2) = 3, finite sets only", ()),
    (UncertaintySampling, "uncertainty sampling: argmax posterior variance", ()),
    (RandomSampling, "uniform random sampling", ()),
):
    register_method(
        _cls.method_id,
        "levelset",
        _desc,
        # the factory also takes kernel="None" (a bench id or --option string): learn it
        options=options_from(
            _cls,
            _DOCS,
            skip=("space", "threshold", "seed"),
            types={"kernel": "Kernel | str | None"},
        ),
    )(_factory(_cls, _extra))
