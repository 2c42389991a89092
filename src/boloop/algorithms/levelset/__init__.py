"""Active level-set estimation: the randomized straddle and the baselines of its paper.

Paper: Inatsu, Takeno, Kutsukake, Takeuchi, "Active Learning for Level Set Estimation Using
Randomized Straddle Algorithms" (``shared/seeds/001_...``; spec ``shared/specs/lse.md``).

Every policy here estimates the sets with the posterior mean only (Definition 3.1, eq. 3.1)::

    H_t = {x : mu_{t-1}(x) >= theta},      L_t = {x : mu_{t-1}(x) < theta}

and differs only in the acquisition function (AF) that picks ``x_t``:

==============================  =====================================================================
policy (method id)              AF
==============================  =====================================================================
RandomizedStraddle              ``max{beta_t^(1/2) sigma - |mu - theta|, 0}``, ``beta_t ~ chi2(2)``
(``randomized-straddle``)       drawn once per step, shared by every candidate (Definition 3.2,
                                eq. 3.2, Algorithm 1)
RandomizedStraddleMax           the same with ``beta_t = xi_t + 2 log|X|`` (finite, Definition A.1,
(``randomized-straddle-max``)   Algorithm 2) or ``xi_t + 2 d log tau_t`` (boxes, Definition A.3,
                                Algorithm 3); returns ``H_{T-hat}`` (eq. A.2)
Straddle (``straddle``)         ``3 sigma - |mu - theta|`` (Bryan et al. 2005), unclipped
LSE (``lse``)                   Gotovos et al. (2013) ambiguity ``min{ucb~ - theta, theta - lcb~}``
                                with ``beta_t^(1/2) = sqrt(2 log(|X| pi^2 t^2 / (6 * 0.05)))``,
                                bounds intersected over past steps on finite sets only (Sec. 5.2)
MILE (``mile``)                 expected one-step growth of the confident upper set (Zanette et al.
                                2019; robust MILE with epsilon = 0, gamma = -inf), finite sets only
UncertaintySampling (``us``)    ``sigma^2``
RandomSampling (``random``)     uniform
==============================  =====================================================================

Spaces. A :class:`boloop.spaces.CandidateSet` (finite X) is scored exactly, with the posterior
cached on the candidates and updated in O(N n) per observation. On a :class:`boloop.spaces.Box`
the AF is maximised over a fixed scrambled-Sobol candidate set (``n_candidates``, cached like a
finite set) plus ``n_fresh`` uniform points drawn anew each step, and the best ``n_refine`` of them
are refined by L-BFGS-B inside the box on the same AF (its unclipped form for the straddles). That
is an approximation of the exact continuous argmax the theory assumes (spec P5).

Steps. The paper starts from one random initial point (Sec. 5): ``n_initial`` queries are asked
first, chosen uniformly at random, and do not count as iterations (``policy.iteration`` counts the
T iterations of Algorithm 1). Iteration ``t`` (1-based) scores with the posterior given the initial
points and ``t - 1`` iteration observations, so ``H_t`` is the paper's ``H_t``.

Hyperparameters. With a ``kernel`` given the hyperparameters stay fixed (the paper's setting,
zero prior mean). Without one (the default for a user's own problem) a squared-exponential ARD
kernel with a constant mean and fitted noise is learned with the shared mechanism
:class:`boloop.gp.hyperparameters.HyperparameterLearning`: priors scaled to the space and the data
(MAP), a space-filling initial design of ``max(5, 2 d)`` points, refitted on the mechanism's
schedule, each refit started from the previous optimum and one draw of the priors
(``refit_restarts="every"``). ``hyperparameters="plain"`` is the unguarded maximum-likelihood refit from one
random point (logged as a warning): it can become confidently wrong and stop exploring
(``docs/hyperparameters.md``).
"""

from __future__ import annotations

from boloop.algorithms.levelset import methods  # noqa: F401  (registers the methods)
from boloop.algorithms.levelset.acquisition import (
    classify,
    expected_af_over_beta,
    expected_pointwise_loss,
    mile_acquisition,
    randomized_straddle_af,
    straddle,
)
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
from boloop.recommendations import LevelSetEstimate

__all__ = [
    "classify",
    "straddle",
    "randomized_straddle_af",
    "expected_pointwise_loss",
    "expected_af_over_beta",
    "LevelSetEstimate",
    "LevelSetPolicy",
    "RandomizedStraddle",
    "RandomizedStraddleMax",
    "Straddle",
    "LSE",
    "MILE",
    "UncertaintySampling",
    "RandomSampling",
    "mile_acquisition",
]
