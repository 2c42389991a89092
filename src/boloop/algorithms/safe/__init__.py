"""Safe Bayesian optimisation with a monotone safety variable: M-SafeOpt, SafeOpt-MC, PredVar.

Losalka & Scarlett, "No-Regret Algorithms for Safe Bayesian Optimization with Monotonicity
Constraints", AISTATS 2024 (spec ``shared/specs/msafeopt.md``). Actions are pairs ``(s, x)`` on a
:class:`boloop.spaces.SafeSpace` grid; every evaluation measures the objective ``f`` (maximised)
and the safety value ``g`` (an :class:`~boloop.queries.Evaluate` with ``outputs=("f", "g")``);
the constraint is ``g(s, x) <= h``; ``g`` is increasing in ``s`` with a minimum growth ``L'_g``
(eq. 5), ``f`` grows at most by ``L_f`` (eq. 4), and ``s = 0`` is safe for every ``x``.

Policies
--------
* :class:`MSafeOpt` ``case="1"`` -- Algorithm 1 for the global safe optimum (regret ``R_T``, eq. 1),
  with elimination (20)-(21), expanders (22), acquisition (23). ``case="2"`` -- the best safe
  ``s`` for every ``x`` (``R'_T``, ``R^X_T``, eq. 2-3): no elimination, expanders (24).
  ``case="3a"`` -- ``f`` and ``g`` both increasing (Sec. 2.5): elimination (21) only, every
  surviving ``x`` expands, acquisition (25) on the boundary. ``case="3b"`` -- M-SafeUCB (Losalka &
  Scarlett 2023), ``f = g``: only ``g`` is measured and modelled. ``acquisition="refined"`` uses
  (36) on the expanders.
* :class:`SafeOptMC` and :class:`PredVar` -- the baselines as the paper ran them (B.2.2).

Safety comes from data, never from the prior
--------------------------------------------
The paper puts a zero-mean GP on ``g``; far from data ``UCB^g = beta * sigma_prior``, which is
below ``h`` whenever ``h > beta * sigma_prior``, so unexplored points would be certified safe from
the prior alone. Here the GP models ``g - h`` with mean zero (equivalently a prior mean ``h`` for
``g``): an unexplored point has ``UCB^g = h + beta sigma > h`` and is never certified. The
paper's confidence-bound algebra is unchanged (``UCB^g = h + UCB^{g-h}``).

Certified points stay certified: ``g`` is monotone, so once ``(s, x)`` has been certified every
``s' <= s`` is safe; the safe boundary of each ``x`` is the maximum over rounds of the boundary
(14) (the paper recomputes (12) each round; with valid bounds both agree, and the union never
shrinks when hyperparameters are refitted).

Hyperparameters
---------------
With kernels given and ``fit_hyperparameters=False`` the kernels are used as they are (the
reproductions: Theorems 1-3 assume a fixed kernel whose RKHS contains ``f`` and ``g`` and a valid
``beta``). ``fit_hyperparameters=True`` (the default, what a user gets on a space of their own)
learns them with ``hyperparameters=``:

* ``"learned"`` (default): the shared mechanism
  :class:`boloop.gp.hyperparameters.HyperparameterLearning` (priors scaled to the space and the
  data, a space-filling design of safe seeds at ``s = 0``, a length-scale cap that shrinks with the
  data, after Berkenkamp, Schoellig and Krause, JMLR 2019), and the safety model ``g`` is
  **certified under the worst case the data cannot rule out**: after every refit ``g``'s
  length-scales are shortened to the edge of the likelihood-ratio set of the hyperparameters
  (:meth:`HyperparameterLearning.conservative`), which widens the bounds away from the data, where
  a fitted length-scale that is too long would certify an unsafe action (Fiedler et al. 2024,
  "On safety in safe Bayesian optimization", show this failure of fitted kernels). Safety
  certified under the conservative model implies it under the fitted one.
* ``"paper"``: the paper's refit through Trieste (Matern-5/2, log-normal priors around
  ``lengthscale_prior`` and ``variance_prior_*``, refit every round, 2 seeds). It evaluates unsafe
  actions when the fitted length-scale is too long (``docs/hyperparameters.md``); reproductions
  only.
* ``"plain"``: unguarded maximum likelihood, only on explicit request (logs a warning).

While every datum lies at one level of ``s`` (the safe seeds), the data cannot identify g's
length-scale along ``s``, and the learned default certifies at most one grid level above that
level (:meth:`_SafePolicy._level_cap`); from two measured levels on, the fitted model decides.

With learned hyperparameters and no kernel of ``g`` given, g's model has the trend in ``s``
that M-SafeOpt assumes (``trend_g=True``, the default; :func:`trend_kernel_g`): a linear term of
unknown slope added to the stationary kernel, its slope variance learned on the twin, raised to
its likelihood-ratio edge and kept at least ``mean((g - h)^2) / w_s^2``. ``trend_g=False`` gives
the stationary Matern model alone (the default before; more unsafe draws on ``safe/random-gp``,
``docs/reproductions/safe.md``). The option is ignored with a kernel of ``g`` given and with
fixed, ``"paper"`` or ``"plain"`` hyperparameters.

``min_lengthscale_g`` is the one assumption a user can add to the learned default: ``g`` varies
no faster than that fraction of each axis's range (the fit and the conservative shortening of
``g``'s length-scales never go below it). It is not learned or checked: if ``g`` changes faster,
the method can certify unsafe actions. Without it a safety model fitted on two levels of ``s``
may decide that ``g`` can change a lot within one grid step and never certify the next level;
:meth:`_SafePolicy.stall` (in ``describe()["stall"]`` and a study's status warnings) reports
that case (``docs/reproductions/safe.md``, "A newcomer's stall").

A measured ``g > h`` (an action certified wrongly, or a process that drifted) is never ignored:
it is logged, listed in :meth:`_SafePolicy.over_limit` and ``describe()``, the ``x`` row's certified
boundary is cut below it (``g`` is monotone in ``s``), the union of past certifications is dropped
(it was justified by bounds that have just proved invalid), and with learned hyperparameters
``g``'s length-scale cap is halved for every such event so that the model becomes more cautious.

Modules
-------
* :mod:`~boloop.algorithms.safe.policies` -- :class:`MSafeOpt`, :class:`SafeOptMC`,
  :class:`PredVar`.
* :mod:`~boloop.algorithms.safe.base` -- :class:`_SafePolicy`, what they share: the safe seeds,
  the ask/tell loop, the certified boundary, the per-round sets, the recommendation, ``describe``.
* :mod:`~boloop.algorithms.safe.models` -- the models of ``f`` and ``g - h``: the grid posterior,
  :func:`trend_kernel_g`, how they are built, conditioned and learned (``g`` to its conservative
  edge), their confidence bounds (eq. 10-11) and the one-level cap.
* :mod:`~boloop.algorithms.safe.stall` -- the stall warning and the noise check.
* :mod:`~boloop.algorithms.safe.checks` -- input checks: ``hyperparameters=``, the betas,
  ``initial_data``.
* :mod:`~boloop.algorithms.safe.methods` -- the method ids and their options (the method table).
* :mod:`boloop.algorithms._safe_core` -- the per-round sets of Algorithm 1 as pure functions.
"""

from __future__ import annotations

from boloop.algorithms._safe_core import (
    Bounds,
    SafeSets,
    Selection,
    expansion_limit,
    safe_sets,
    select_msafeopt,
    select_predvar,
    select_safeopt_mc,
)
from boloop.algorithms.safe import methods  # noqa: F401  (registers the methods)
from boloop.algorithms.safe.base import _SafePolicy as _SafePolicy
from boloop.algorithms.safe.base import logger as logger
from boloop.algorithms.safe.models import OFFSET_G_CAUTION as OFFSET_G_CAUTION
from boloop.algorithms.safe.models import GridPosterior, trend_kernel_g
from boloop.algorithms.safe.policies import MSafeOpt, PredVar, SafeOptMC
from boloop.algorithms.safe.stall import FUTILE_NARROWING as FUTILE_NARROWING
from boloop.algorithms.safe.stall import FUTILE_REPEATS as FUTILE_REPEATS

__all__ = [
    "MSafeOpt",
    "SafeOptMC",
    "PredVar",
    "GridPosterior",
    "trend_kernel_g",
    # the per-round set computations of Algorithm 1 as pure functions (algorithms/_safe_core.py)
    "Bounds",
    "SafeSets",
    "Selection",
    "expansion_limit",
    "safe_sets",
    "select_msafeopt",
    "select_predvar",
    "select_safeopt_mc",
]
