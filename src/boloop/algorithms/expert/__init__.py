"""Bayesian optimisation with an expert's accept/reject labels: COBOL, COBOHL and baselines.

Paper: Xu, Adachi, Jones and Osborne, "Principled Bayesian Optimisation in Collaboration with
Human Experts", NeurIPS 2024 (arXiv 2410.10452). Spec: ``shared/specs/cobol.md``.

The paper *minimises* f. Labels: the query vocabulary answers a :class:`~boloop.queries.Label`
with ``True`` for *accept*; internally the paper's convention is used, ``1 = reject`` with
``P(1 | x) = S(g(x))`` (Assumption 2.1), so small ``g`` means the expert likes ``x``.

Policies (method ids as ``boloop methods --family expert`` lists them):

* :class:`COBOL` (``cobol``) -- Algorithm 1: expert-augmented LCB ``x^c`` by the primal-dual
  problem (5)/(6), vanilla LCB ``x^u`` (line 5), the no-harm test (line 6), the handover test
  ``g_upper - g_lower > g_thr`` (line 8); an accepted label is followed by the evaluation of
  ``x^c``. After a reject (default ``reject_rule="veto"``) the rejected proposal is never put to
  the expert again and the next proposal is evaluated (``x^c`` if it passes line 6 and the
  expert model is sure there, line 8, else ``x^u``); the default budget counts f-evaluations (``budget="iterations"``: Algorithm 1's
  accounting, a reject consumes the iteration, lines 11-12). An expert whose evaluated
  proposals keep doing worse than GP-LCB's forecasts is dismissed (``harm_budget``, not in
  the paper): COBOL then is GP-LCB. Before that, the expert leads only while the GP of f
  shows, with probability ``agreement_level`` (0.99), that its rejects are worse than its
  accepts more often than not (``agreement_gate``, not in the paper);
  otherwise the step is GP-LCB's, and a run the gate hands to GP-LCB throughout repeats
  GP-LCB's run of the same seed exactly.
* :class:`COBOHL` (``cobohl``) -- Algorithm 2 (App. E): LCB constrained to ``g_lower <= 0``; if
  the expert is asked, the iteration ends without an evaluation whatever the answer.
* :class:`GPLCB` (``gp-lcb``) -- vanilla GP-LCB (the paper's "vanilla LCB").
* :class:`HumanIntervention` (``av-2022``), :class:`AlternatingExpert` (``khoshvishkaie-2023``)
  and :class:`CollaborativeCompare` (``adachi-2024``): simulated versions of the human study's
  baselines (Sec. 5, App. J.3), as far as the paper describes them.
* :class:`RandomSearch` (``random``) and :class:`ExpertSampling` (``expert-sampling``: uniform
  proposals that the expert accepts or rejects; an accepted one is evaluated, Sec. 5, Fig. 4).

Common protocol (Sec. 5): inputs scaled to the unit cube, outputs standardised every iteration,
ARD squared-exponential kernel for f, its length-scales (Gamma(3, 6) prior), output scale and
noise (in ``[1e-6, r]``, ``r = 1e-4``) fitted by marginal likelihood (Table 3: BoTorch's default;
the reference code fixes output scale 1 and noise ``r``: ``fit_output_scale=False,
fit_noise=False``), the length-scales copied to ``k_g``; ``beta_f`` from Lemma 3.1 with
``B_f = 1``, ``sigma`` = the noise, ``delta = 0.01`` and the information gain of the observed points. Every policy starts with the same 3 uniformly random
evaluations for a given seed; the label-using ones first ask 10 labels at uniform points.
Initial queries do not count as iterations.

The hyperparameters are refitted (warm-started) once the f-values have grown by a tenth since
the last fit (``refit_growth=0.1``, as the other families; ``0``: at every value, the paper's
Sec. 5). Continuous boxes: each iteration scores a fresh set of uniformly random points (plus
the evaluated points) and refines the best few by shrinking Gaussian perturbations. Finite candidate
sets (:class:`~boloop.spaces.CandidateSet`) are scored exhaustively.

Each iteration of COBOL/COBOHL records its outcome in ``outcomes``: ``"vanilla"`` (x^u evaluated),
``"unasked"`` (x^c evaluated without asking), ``"accept"`` (asked, accepted, evaluated) or
``"reject"`` (asked, rejected, no evaluation) -- the four outcomes of the spec's bookkeeping test.
"""

from __future__ import annotations

from boloop.algorithms.expert import methods  # noqa: F401  (registers the methods)
from boloop.algorithms.expert.base import ExpertPolicy
from boloop.algorithms.expert.baselines import (
    GPLCB,
    AlternatingExpert,
    CollaborativeCompare,
    ExpertSampling,
    HumanIntervention,
    RandomSearch,
)
from boloop.algorithms.expert.cobol import COBOHL, COBOL

__all__ = [
    "COBOL",
    "COBOHL",
    "GPLCB",
    "RandomSearch",
    "ExpertSampling",
    "HumanIntervention",
    "AlternatingExpert",
    "CollaborativeCompare",
    "ExpertPolicy",
]
