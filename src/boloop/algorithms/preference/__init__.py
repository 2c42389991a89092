"""Bayesian optimisation from pairwise preferences: MR-LPF, MaxMinLCB and random duels.

Kayal, Vakili, Toni, Shiu, Bernacchia, "Bayesian Optimization from Human Feedback: Near-Optimal
Regret Bounds" (ICML): MR-LPF (Algorithm 1, Section 3) with its round schedule and elimination rule
(eq. 11-12), and the baseline MaxMinLCB of Pasztor et al. (2024), "Bandits with Preference
Feedback: A Stackelberg Game Perspective" (Algorithm 1 there; Appendix D of the BOHF paper).

Every policy works on a finite arm set (the paper's setting): a :class:`~boloop.spaces.CandidateSet`
or an (m, d) array. A continuous :class:`~boloop.spaces.Box` is discretised by a scrambled Sobol
sample of ``n_candidates`` points drawn from the policy's seed. The set must hold at least two
options, no two identical ones (a duel of an option with its copy teaches nothing) and at most
:data:`MAX_OPTIONS` (1,500) options: every method keeps several option-by-option matrices (m x m
float64: 17 MiB each at 1,500 options, 488 MiB at 8,000), so a larger set would exhaust the
memory or take seconds per duel. Otherwise the constructor raises
:class:`~boloop.errors.InvalidInputError` saying how to fix it (a coarser grid, fewer
``n_candidates``, a table of the options worth comparing). Each duel is a
:class:`~boloop.queries.Compare` query ``(a, b)``; the answer 0 means ``a`` is preferred, which is the
paper's ``y = 1{x > x'} = 1`` for ``(x, x') = (a, b)``.

Kernel hyperparameters: give a ``kernel`` (the paper's fixed setting, applied to the raw
coordinates; the problems of :mod:`boloop.problems.preference` carry it in their ``settings``), or
leave ``kernel=None`` for the practitioner's default: a squared-exponential kernel on the
candidates scaled to the unit cube, whose length-scale is chosen from ``lengthscales`` by the
Laplace approximation of the marginal likelihood (Rasmussen and Williams 2006, eq. 3.32) of all
duels so far -- at the end of each MR-LPF round (so the kernel is fixed within a round and the
within-round design stays independent of the labels), and for MaxMinLCB/random duels whenever the
number of duels reaches 10, 20, 40, 80, ...

Example (a person answers; 0 means the first option is preferred)::

    import numpy as np
    from boloop.algorithms.preference import MRLPF

    recipes = np.random.default_rng(0).random((60, 3))      # 60 options, 3 features each
    policy = MRLPF(recipes, horizon=100, seed=0)              # length-scale fitted per round
    for _ in range(100):
        q = policy.ask()                                      # Compare(a, b, a_index, b_index)
        policy.tell(q.id, 0 if taste(q.a) > taste(q.b) else 1)
    best = policy.recommend()                                 # (3,) the estimated best option
    policy.M                                                  # the arms still plausible

Modules
-------
* :mod:`~boloop.algorithms.preference.mrlpf` -- :class:`MRLPF`.
* :mod:`~boloop.algorithms.preference.baselines` -- :class:`MaxMinLCB`, :class:`RandomDuels`.
* :mod:`~boloop.algorithms.preference.eubo` -- :class:`EUBO` and the values of its options;
  :mod:`~boloop.algorithms.preference.eubo_regret` -- :class:`RegretAwareEUBO`;
  :mod:`~boloop.algorithms.preference.double_thompson` -- :class:`DoubleThompsonDuels`.
* :mod:`~boloop.algorithms.preference.base` -- :class:`_DuelingPolicy`, what they share (the
  options, the kernel and its length-scale selection, the answers, the recommendation rules),
  and :func:`copeland_winner`.
* :mod:`~boloop.algorithms.preference.candidates` -- the option set and :data:`MAX_OPTIONS`.
* :mod:`~boloop.algorithms.preference.theory` -- MR-LPF's round schedule and the paper's widths.
* :mod:`~boloop.algorithms.preference.methods` -- the method ids and their options (the method
  table).
"""

from __future__ import annotations

from boloop.algorithms.preference import methods  # noqa: F401  (registers the methods)
from boloop.algorithms.preference.base import DEFAULT_LENGTHSCALES, RECOMMEND_RULES, copeland_winner
from boloop.algorithms.preference.base import _DuelingPolicy as _DuelingPolicy
from boloop.algorithms.preference.baselines import MaxMinLCB, RandomDuels
from boloop.algorithms.preference.candidates import MAX_OPTIONS
from boloop.algorithms.preference.double_thompson import DoubleThompsonDuels
from boloop.algorithms.preference.eubo import APPROXIMATIONS as APPROXIMATIONS
from boloop.algorithms.preference.eubo import EUBO
from boloop.algorithms.preference.eubo import EXPLOIT_SCHEDULES as EXPLOIT_SCHEDULES
from boloop.algorithms.preference.eubo import GAMMA_LENGTHSCALE_PRIOR as GAMMA_LENGTHSCALE_PRIOR
from boloop.algorithms.preference.eubo import LENGTHSCALE_PRIORS as LENGTHSCALE_PRIORS
from boloop.algorithms.preference.eubo import MODEL_CHOICES as MODEL_CHOICES
from boloop.algorithms.preference.eubo import OPTIMISM_REFERENCES as OPTIMISM_REFERENCES
from boloop.algorithms.preference.eubo import REPEAT_DUELS as REPEAT_DUELS
from boloop.algorithms.preference.eubo_regret import RegretAwareEUBO
from boloop.algorithms.preference.mrlpf import MRLPF
from boloop.algorithms.preference.theory import KAPPA_LATER_ROUNDS as KAPPA_LATER_ROUNDS
from boloop.algorithms.preference.theory import SIGMOID_L as SIGMOID_L
from boloop.algorithms.preference.theory import (
    confidence_beta,
    mrlpf_round_schedule,
    mrlpf_theory_beta,
)

__all__ = [
    "MRLPF",
    "MaxMinLCB",
    "RandomDuels",
    "EUBO",
    "RegretAwareEUBO",
    "DoubleThompsonDuels",
    "mrlpf_round_schedule",
    "mrlpf_theory_beta",
    "confidence_beta",
    "DEFAULT_LENGTHSCALES",
    "MAX_OPTIONS",
    "RECOMMEND_RULES",
    "copeland_winner",
]
