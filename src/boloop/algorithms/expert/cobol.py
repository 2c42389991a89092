"""COBOL and COBOHL (Xu et al., Algorithms 1-2): the primal-dual expert-augmented LCB with the
no-harm test, and the harm budget that dismisses an expert the data contradict."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from boloop.algorithms.expert.base import (
    _BIG,
    SAME_POINT,
    ExpertPolicy,
    _accepted,
    _count,
    _number,
    _pair,
)
from boloop.algorithms.expert.ranks import mann_whitney_excess
from boloop.errors import InvalidInputError, QueryStateError
from boloop.gp.kernels import SquaredExponential
from boloop.gp.likelihood_ratio import LikelihoodRatioModel
from boloop.queries import Evaluate, Label, Query
from boloop.spaces import Box, CandidateSet


class COBOL(ExpertPolicy):
    """COBOL, Algorithm 1 of Xu et al. (NeurIPS 2024).

    Parameters (besides :class:`ExpertPolicy`'s)
    ----------
    eta:
        Trust weight of the no-harm test (line 6), ``eta >= 1``; paper default 3.
    lambda0:
        Initial primal-dual weight ``lambda_0`` (paper default 1). Ignored if not
        ``primal_dual``.
    g_thr:
        Handover threshold on ``g_upper - g_lower`` in logit units (line 8); main text 0.1
        (Table 3 says 1e-5, the reference code 0.08; see the spec).
    zeta:
        Dual step size of eq. (5) (Table 3: 0.02).
    primal_dual:
        ``True``: x^c minimises ``f_lower + lambda g_lower`` (eq. 5/6) and lambda follows
        ``lambda <- max(0, lambda + zeta g_lower(x^c))``. ``False``: the constrained variant
        ``min f_lower s.t. g_lower <= 0`` (what the paper calls ``lambda_0 = 0``, Fig. 3).
    norm_bound, alpha_coefficient, doubling_period, max_norm_bound, adapt_norm_bound:
        The expert's confidence set (:class:`~boloop.gp.likelihood_ratio.LikelihoodRatioModel`):
        initial ``B_g`` (1), ``alpha_1 = c sqrt(n + 1)`` with ``c = 0.01``, doubling test every 3
        labels and on every prefix of the initial labels (App. F).
    no_harm:
        ``"code"`` (default; the authors' reference code's ``judge``, with which the paper's
        figures were made: vanilla if ``min f_upper < f_lower(x^c) + lambda z*`` or
        (``sigma(argmin f_upper) > eta sigma(x^c)`` and the two LCB values differ by more than
        1e-5)) or ``"paper"`` (line 6 as printed: ``f_lower(x^c) <= min f_upper`` and
        ``sigma(x^u) <= eta sigma(x^c)``). The code's test lets a good expert lead more often
        (issue 12, seventh session in ``docs/reproductions/expert.md``: with a = 2 below GP-LCB
        on 4 of 5 five-seed draws of the synthetic problems in 0.73 of draws, against 0.53 with
        line 6). Line 6's per-step bound ``2 beta (1 + eta) sigma(x^c)`` (App. B.5) does not
        follow from the code's test; with the defaults no harm rests on ``agreement_gate`` and
        ``harm_budget``, which bound what a bad expert costs whichever test is used.
    label_window:
        Keep only the last ``label_window`` labels in the confidence set (Fig. 7 windowing);
        ``None`` keeps all.
    g_value_bound:
        Clip the expert bounds at query points to ``[-3, 3]`` (default, the reference code's
        box; it sets the scale of the dual update: without it ``g_lower`` is about ``-B_g`` in
        unexplored regions and lambda collapses to 0 within two iterations once ``B_g`` has
        doubled to 16-32). ``None``: problems (38)/(39) exactly as printed.
    budget:
        How ``iteration`` counts (what a simulation budget means): ``"evaluations"`` (default:
        one iteration per f-evaluation, the expensive experiment; labels are counted separately
        in ``labels_asked`` / ``labels_rejected``, as in the reference code's loop) or
        ``"iterations"`` (the paper's accounting, Algorithm 1: a rejected proposal consumes an
        iteration; what ``docs/reproductions/expert.md`` uses to compare with the paper).
    reject_rule:
        What follows a reject. ``"veto"`` (default): the rejected proposal is *vetoed*: it and
        its neighbourhood (candidates whose ``k_g``-correlation with it is at least
        ``veto_correlation``) are removed from the search for ``x^c`` for the rest of the run, so
        the same proposal is never put to the expert again; the next proposal (lines 4-6
        re-solved with the updated confidence set and lambda) is *not* put to the expert: see
        ``reject_fallback``. So every reject is followed by an evaluation (at most one label
        per evaluation, never two rejects in a row) and an expert who keeps contradicting the
        data leaves exactly GP-LCB's choice ``x^u`` (which may be a point the expert rejected:
        the veto binds the expert's proposals, not GP-LCB's own step, so a wrong expert cannot
        steer it). No question is put to the expert twice: a point they have labelled (initial
        labels included; within :data:`SAME_POINT` in every unit-cube coordinate) is not asked
        about again: an accepted one is evaluated without asking, one rejected among the
        initial labels gives the step to GP-LCB (a person's trial: the same accepted, measured
        point was asked about four times; ``ask_again``).
        ``"paper"``: Algorithm 1 as printed
        (line 12: back to line 4; with lambda = 0 the same rejected ``x^u`` is proposed and
        asked again until the width there falls below ``g_thr``).
    reject_fallback:
        The evaluation that follows a reject (``"veto"`` rule). ``"lcb"`` (default): the
        re-solved ``x^c`` is evaluated only where Algorithm 1 would evaluate it without a label
        (it passes line 6 and the expert model is sure there, ``g_upper - g_lower <= g_thr``,
        line 8); where line 8 would ask the expert again, the step is GP-LCB's ``x^u``. An
        ``x^c`` that the expert was never asked about and whose ``g`` is unknown is only the
        optimism of ``g_lower`` (about -3 wherever labels are few), not the expert's advice.
        ``"xc"``: the re-solved ``x^c`` is evaluated whenever it passes line 6 (the first to
        third sessions of issue 12; it evaluated such points right after an adversary's reject).
    ask_again:
        ``False`` (default): with the ``"veto"`` rule a point the expert has labelled is not put
        to them again (see ``reject_rule``): a person asked the same question gives the same
        answer, and counting it again as independent evidence would overstate what the labels
        show. ``True``: line 8 asks wherever the expert model is unsure, labelled or not (the
        paper's model of independent labels, under which a synthetic expert's second answer is
        a fresh draw; issue 12, eighth session in ``docs/reproductions/expert.md`` measures both).
    veto_correlation:
        Correlation ``k_g(x, x_rejected)`` (in (0, 1]) from which a candidate counts as the
        same proposal as a rejected one (``"veto"`` rule); 0.5: within about 1.18 length-scales.
    initial_labels, initial_observations:
        The expert's labels ``(X, accepted)`` and measurements ``(X, y)`` the user already has
        (X (k, d) in the space; ``accepted`` (k,) booleans; y (k,) finite). They take the place
        of as many initial random labels / evaluations (the policy asks only the rest) and are
        validated like answers (:meth:`add_labels`, :meth:`add_observations`).
    harm_budget:
        When to stop trusting the expert (not in the paper; issue 12). Line 6's no-harm test
        bounds the regret of an evaluated ``x^c`` by ``2 beta (1 + eta) sigma(x^c)``: a
        constant *factor* on GP-LCB's bound, paid on every expert-led evaluation for as long as
        the expert points at unexplored regions (and, with ``beta_f ~ 1`` on standardised,
        heavy-tailed outputs, ``f_lower(x^c) <= min f_upper`` holds almost everywhere early on).
        The dual variable of eq. (5) is no trust measure either: it follows the optimistic
        ``g_lower(x^c)``, about ``-3`` wherever labels are few, and falls at the same rate for
        a good and a bad expert. So COBOL also compares, on the data, what following the expert
        gave with what GP-LCB forecast for its own proposal (a conservative-bandit budget):
        every evaluated ``x^c`` that differs from ``x^u`` adds ``P_GP(x^u improves the best
        value) - 1[x^c improved it]`` (the forecast for ``x^u`` runs high, as ``x^u`` is the
        argmin of an optimistic bound: the test is conservative, a good expert must beat it);
        once the sum (:attr:`harm`) exceeds ``harm_budget`` the expert is *dismissed*
        (:attr:`expert_dismissed`) for the rest of the run: no label is asked and ``x^u`` is
        evaluated, exactly GP-LCB's step. Each expert-led evaluation
        adds at most 1, so a bad expert costs at most about ``harm_budget + 1`` evaluations
        that improve nothing beyond what GP-LCB's would have, a constant. ``None``: line 6
        alone (the paper).
    agreement_gate:
        Let the expert lead only while the f-data expect it to agree with f (not in the paper;
        issue 12): :attr:`agreement` is the posterior expectation, under the GP of f, of the
        fraction of (rejected, accepted) pairs of labelled points in which the rejected point
        has the higher f (the AUC of the expert's labels as a classifier of f; 1/2 for an
        expert who ranks like a coin, or when the labels hold one class only, or when the GP
        knows nothing there). The expert leads only while the data show, with posterior
        probability at least ``agreement_level``, that it ranks f better than a coin
        (:attr:`agreement_probability`, ``P_GP(AUC > 1/2)``); otherwise the step is GP-LCB's
        ``x^u``: the
        expert is asked about ``x^u`` if the handover test says the expert model is unsure
        there (line 8) and the expert's last answer was not a reject, and ``x^u`` is evaluated
        whatever the answer (a *calibration* label, at a point whose f the next evaluation
        shows). An expert whose rejects the data place at better values than its accepts
        never leads an evaluation; the harm budget still watches the expert once it leads.
        ``False``: the expert leads from the start (the paper).
    agreement_level:
        The posterior probability the agreement gate asks for: ``1 - delta`` with the paper's
        confidence ``delta = 0.01`` (Lemma 3.1, Table 3) by default, the level at which COBOL
        trusts its bounds on f. A point estimate is not evidence: with three to five
        evaluations the expected AUC of an adversary's labels is 1/2 plus noise, and crossing
        1/2 by chance let it lead early steps that sent the rest of the run down another path
        (issue 12, 10 seeds: 4-D Ackley seed 7, shifted Levy seed 0). ``None``: the third
        session's rule (lead while the expected AUC exceeds 1/2).
    max_reject_streak:
        Guard against reject streaks (spec pitfall 9; not in the paper): after this many
        rejections in a row the next iteration evaluates the vanilla LCB point x^u without
        asking (counted as a ``"vanilla"`` outcome and in ``guarded``). ``None`` (default): no
        guard -- with a wide confidence set and lambda = 0, Algorithm 1 re-proposes the same
        rejected x^c = x^u until the width at it falls below ``g_thr``.
    candidate:
        ``"primal-dual"`` (default) or ``"pinpoint"`` (Fig. 6a: x^c is a sample from the expert's
        belief, drawn by asking labels at uniform points until one is accepted; those labels do
        not count as iterations).
    """

    method_id = "cobol"
    uses_labels = True
    accepts_labels = True  # a study's label(params, accepted) -> add_labels

    @property
    def iteration_meaning(self) -> str:  # type: ignore[override]
        """What :attr:`iteration` counts, by ``budget`` (shown in a study's status)."""
        if self.budget == "iterations" and self.candidate != "pinpoint":
            return (
                "Algorithm 1's t: one per proposal (a rejected proposal is an "
                "iteration without an evaluation); the initial labels and evaluations are not "
                "iterations"
            )
        return ExpertPolicy.iteration_meaning

    def __init__(
        self,
        space: Box | CandidateSet,
        seed: Any = 0,
        *,
        eta: float = 3.0,
        lambda0: float = 1.0,
        g_thr: float = 0.1,
        zeta: float = 0.02,
        primal_dual: bool = True,
        norm_bound: float = 1.0,
        alpha_coefficient: float = 0.01,
        doubling_period: int = 3,
        max_norm_bound: float = 1024.0,
        adapt_norm_bound: bool = True,
        no_harm: str = "code",
        label_window: int | None = None,
        candidate: str = "primal-dual",
        g_value_bound: float | None = 3.0,
        budget: str = "evaluations",
        reject_rule: str = "veto",
        veto_correlation: float = 0.5,
        max_reject_streak: int | None = None,
        max_pinpoint_labels: int = 200,
        initial_labels: Any = None,
        harm_budget: float | None = 1.0,
        agreement_gate: bool = True,
        agreement_level: float | None = 0.99,
        reject_fallback: str = "lcb",
        ask_again: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(space, seed, **kwargs)
        self.eta = _number(eta, "eta", low=1.0, allow_inf=True)
        self.agreement_gate = bool(agreement_gate)
        if agreement_level is not None:
            agreement_level = _number(agreement_level, "agreement_level", low=0.0)
            if agreement_level >= 1.0:
                raise InvalidInputError(
                    f"agreement_level must be in [0, 1), got {agreement_level!r}"
                )
        self.agreement_level = agreement_level
        #: joint posterior draws of f behind :attr:`agreement_probability`
        self.agreement_draws = 512
        if reject_fallback not in ("lcb", "xc"):
            raise InvalidInputError(
                f"reject_fallback must be 'lcb' or 'xc', got {reject_fallback!r}"
            )
        self.reject_fallback = reject_fallback
        self.ask_again = bool(ask_again)
        #: BO steps given to GP-LCB because the data did not expect the expert to agree with f
        self.gated = 0
        self._calibration_ids: set[int] = set()
        self.harm_budget = (
            None if harm_budget is None else _number(harm_budget, "harm_budget", allow_inf=True)
        )
        #: per expert-led evaluation: ``P_GP(x^u improves) - 1[x^c improved]``
        self.harm_history: list[float] = []
        #: per GP-led evaluation (x^u evaluated): ``P_GP(x^u improves) - 1[x^u improved]``
        self.gp_forecast_history: list[float] = []
        self._harm_refs: dict[int, tuple[str, float, float]] = {}
        self._pending_ref: tuple[str, float, float] | None = None
        self.lam = _number(lambda0, "lambda0", low=0.0)
        self.lambda0 = self.lam
        self.g_thr = _number(g_thr, "g_thr", low=0.0, allow_inf=True)
        self.zeta = _number(zeta, "zeta", low=0.0)
        self.primal_dual = bool(primal_dual)
        if no_harm not in ("paper", "code"):
            raise InvalidInputError(f"no_harm must be 'paper' or 'code', got {no_harm!r}")
        self.no_harm = no_harm
        if candidate not in ("primal-dual", "pinpoint"):
            raise InvalidInputError(
                f"candidate must be 'primal-dual' or 'pinpoint', got {candidate!r}"
            )
        self.candidate = candidate
        if budget not in ("iterations", "evaluations"):
            raise InvalidInputError(f"budget must be 'iterations' or 'evaluations', got {budget!r}")
        self.budget = budget
        if reject_rule not in ("veto", "paper"):
            raise InvalidInputError(f"reject_rule must be 'veto' or 'paper', got {reject_rule!r}")
        self.reject_rule = reject_rule
        self.veto_correlation = _number(veto_correlation, "veto_correlation", low=1e-12)
        if self.veto_correlation > 1.0:
            raise InvalidInputError(f"veto_correlation must be in (0, 1], got {veto_correlation!r}")
        #: rejected BO-phase proposals (unit-cube coordinates), vetoed for x^c
        self.vetoed = np.zeros((0, self.dim))
        self._after_reject = False
        #: BO-phase labels asked and rejected (initial labels not counted)
        self.labels_asked = 0
        self.labels_rejected = 0
        self.max_reject_streak = (
            None if max_reject_streak is None else _count(max_reject_streak, "max_reject_streak", 1)
        )
        self._reject_streak = 0
        #: iterations where the reject-streak guard evaluated x^u without solving (6)
        self.guarded = 0
        self.max_pinpoint_labels = _count(max_pinpoint_labels, "max_pinpoint_labels", 1)
        self.label_window = (
            None if label_window is None else _count(label_window, "label_window", 1)
        )
        self.expert = LikelihoodRatioModel(
            SquaredExponential(lengthscale=self._lengthscale(), variance=1.0),
            norm_bound=norm_bound,
            alpha_coefficient=alpha_coefficient,
            doubling_period=doubling_period,
            max_norm_bound=max_norm_bound,
            adapt=adapt_norm_bound,
            value_bound=g_value_bound,
        )
        self._pending_eval: tuple[np.ndarray, int | None] | None = None
        self._pinpoint_streak = 0  # -1: an accepted pinpoint is waiting
        self._pinpoint_accepted: tuple[np.ndarray, int | None] = (np.zeros(self.dim), None)
        #: exact bounds are computed in batches of this size during screening
        self.screen_batch = 32
        self.lambda_history: list[float] = [self.lam]
        #: g_upper - g_lower at x^c of every solve of (6) (the handover test's quantity)
        self.width_history: list[float] = []
        #: (lambda before, g_lower(x^c), lambda after) of every dual update
        self.dual_history: list[tuple[float, float, float]] = []
        self.last_decision: dict[str, Any] = {}
        self._candidate_found = True
        if initial_labels is not None:
            self.add_labels(*_pair(initial_labels, "initial_labels"))

    # -- expert model -------------------------------------------------------------------------
    def _label_data(self, X: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.label_window is not None and X.shape[0] > self.label_window:
            return X[-self.label_window :], r[-self.label_window :]
        return X, r

    def add_labels(self, X: Any, accepted: Any) -> None:
        """Add labels the expert gave outside the loop: X (k, d) in the space, ``accepted`` (k,)
        booleans (``True`` = accept, as a :class:`~boloop.queries.Label` answer).

        Like :meth:`add_observations` they fill the initial-label slots that are still open (the
        policy then asks that many fewer random labels; once the initial labels are complete
        the confidence set is pre-trained on all of them, App. F); after the initial phase they
        update the confidence set as answered labels would. They are not iterations and not
        BO-phase labels (``labels_asked``, ``outcomes``, vetoes untouched).

        Raises :class:`~boloop.errors.QueryStateError` while a query is open and
        :class:`~boloop.errors.InvalidInputError` / :class:`~boloop.errors.OutOfSpaceError` on
        bad input (wrong shape, NaN, outside the space, non-boolean labels); nothing changes
        then.
        """
        import copy

        if self.pending is not None:
            raise QueryStateError("answer the open query before adding labels")
        Xa = self.space.validate(X, "X")
        acc = _accepted(accepted, Xa.shape[0])
        U = np.clip(self._box.to_unit(Xa), 0.0, 1.0)
        r = np.where(acc, 0.0, 1.0)
        X_all = np.vstack([self.X_g, U])
        r_all = np.concatenate([self.rejected, r])
        n_init = self._init_g[0].shape[0]
        before = self.X_g.shape[0]
        snapshot = copy.deepcopy(self.expert)
        try:
            if before < n_init or before == 0:
                if X_all.shape[0] >= n_init:  # the initial labels are complete: pre-train
                    self.expert.set_data(*self._label_data(X_all, r_all), pretrain=True)
            elif self.label_window is not None:
                self.expert.set_data(*self._label_data(X_all, r_all), pretrain=False)
            else:
                for u, ri in zip(U, r, strict=True):
                    self.expert.add(u, ri)
        except Exception:
            self.expert = snapshot
            raise
        self.X_g, self.rejected = X_all, r_all

    def _add_label(self, u: np.ndarray, rejected: float, initial: bool) -> None:
        import copy

        snapshot = copy.deepcopy(self.expert)
        try:
            self._add_label_unsafe(u, rejected, initial)
        except Exception:
            self.expert = snapshot  # a failed update leaves the policy unchanged
            raise

    def _add_label_unsafe(self, u: np.ndarray, rejected: float, initial: bool) -> None:
        X = np.vstack([self.X_g, u])
        r = np.concatenate([self.rejected, [rejected]])
        n_init = self._init_g[0].shape[0]
        if initial:
            if X.shape[0] == n_init:  # initial labels complete: pre-train (App. F)
                self.expert.set_data(*self._label_data(X, r), pretrain=True)
            return
        if self.label_window is not None:
            self.expert.set_data(*self._label_data(X, r), pretrain=False)
            return
        self.expert.add(u, rejected)

    def _on_gp_refit(self) -> None:
        ls = self._lengthscale()
        kg = self.expert.kernel
        current = np.atleast_1d(kg.lengthscale) if isinstance(kg, SquaredExponential) else None
        if current is None or not np.array_equal(ls, current):
            self.expert.set_kernel(SquaredExponential(lengthscale=ls, variance=1.0))

    # -- Algorithm 1 --------------------------------------------------------------------------
    def _expert_candidate(
        self, U: np.ndarray, idx: np.ndarray | None, f_low_fn: Callable[[np.ndarray], np.ndarray]
    ) -> tuple[np.ndarray, int | None]:
        """x^c by (5)/(6) (primal-dual) or the constrained variant, exact over the candidates.

        Candidates are screened with ``g_lower`` in [relaxed lower bound, MLE prediction]; the
        exact bound (39) is computed only where the candidate could be the minimiser.
        """
        lam = self.lam
        primal_dual = self.primal_dual

        def phi(f_low: np.ndarray, g_low: np.ndarray) -> np.ndarray:
            if primal_dual:
                return f_low + lam * g_low
            return np.where(g_low <= 0, f_low, _BIG + g_low)

        def score(V: np.ndarray) -> np.ndarray:
            f_low = f_low_fn(V)
            vetoed = self._is_vetoed(V)
            if primal_dual and lam == 0.0:
                return np.where(vetoed, np.inf, f_low)
            g_hi = self.expert.mle_predict(V)  # >= g_lower
            g_lo_rel, _ = self.expert.relaxed_bounds(V)  # <= g_lower
            lb, ub = phi(f_low, g_lo_rel), phi(f_low, g_hi)
            lb[vetoed] = np.inf
            ub[vetoed] = np.inf
            if not np.any(np.isfinite(lb)):
                return lb
            # branch and bound: exact values, in order of the lower bounds, only while a
            # candidate's lower bound can still beat the best value known (a valid upper bound)
            threshold = float(np.min(ub))
            out = lb.copy()
            order = np.argsort(lb, kind="stable")
            start = 0
            while start < order.size and lb[order[start]] <= threshold:
                batch = order[start : start + self.screen_batch]
                batch = batch[lb[batch] <= threshold]
                g_exact, _ = self.expert.bounds(V[batch], upper=False)
                assert g_exact is not None
                out[batch] = phi(f_low[batch], g_exact)
                threshold = min(threshold, float(np.min(out[batch])))
                start += self.screen_batch
            return out

        u, index, value = self._minimise(score, U, idx)
        self._candidate_found = bool(np.isfinite(value))
        return u, index

    def _known_label(self, u: np.ndarray) -> bool | None:
        """The expert's last answer at the point u (unit cube; within :data:`SAME_POINT`),
        initial labels included: True (accepted), False (rejected), None (never asked, or
        ``ask_again`` / ``reject_rule="paper"``). With the ``"veto"`` rule a question is never put
        to the expert twice: its answer stands (an accepted point is evaluated without asking
        again, a rejected one is not evaluated as the expert's proposal)."""
        if self.ask_again or self.reject_rule != "veto" or not self.X_g.shape[0]:
            return None
        same = np.flatnonzero(np.max(np.abs(self.X_g - u[None, :]), axis=1) <= SAME_POINT)
        return None if not same.size else bool(self.rejected[same[-1]] < 0.5)

    def _is_vetoed(self, V: np.ndarray) -> np.ndarray:
        """Whether points V (m, d) count as a rejected proposal (``"veto"`` rule), (m,)."""
        if self.reject_rule != "veto" or not self.vetoed.shape[0]:
            return np.zeros(V.shape[0], dtype=bool)
        corr = self.expert.kernel.k(V, self.vetoed)
        return np.max(corr, axis=1) >= self.veto_correlation

    def _bo_propose(self) -> Query:
        if self._pending_eval is not None:  # accepted label: evaluate x^c in the same iteration
            u, index = self._pending_eval
            self._pending_eval = None
            # the label's point: x^u after a calibration label or where x^c was x^u ("gp"),
            # else the expert-augmented x^c (the label's harm reference says which)
            ref = self._pending_ref
            if ref is None:  # (never: every BO-phase label keeps one) who chose it is unknown
                q = self._ask_unit(u, index, "evaluate")
            else:
                q = self._evaluate_by(u, index, "gp-lcb" if ref[0] == "gp" else "expert")
            if self._pending_ref is not None:
                self._harm_refs[q.id] = self._pending_ref
                self._pending_ref = None
            return q
        self._sync_gp()
        guard = self.max_reject_streak is not None and self._reject_streak >= self.max_reject_streak
        if guard or self.expert_dismissed:
            U, idx = self._candidates()
            u_u, i_u, _ = self._minimise(self._f_lower, U, idx)
            self.guarded += int(guard)
            self.outcomes.append("vanilla")
            return self._gp_led(u_u, i_u)
        if self.agreement_gate and self.candidate == "primal-dual" and not self._expert_may_lead():
            return self._gated_step()
        if self.candidate == "pinpoint" and not self._pinpoint_ready():
            U, idx = self._sample_unit(1)
            return self._ask_unit(U[0], None if idx is None else int(idx[0]), "label")
        U, idx = self._candidates()

        # line 5: vanilla LCB
        u_u, i_u, flow_u = self._minimise(self._f_lower, U, idx)
        # line 4: expert-augmented LCB
        if self.candidate == "pinpoint":
            u_c, i_c = self._pinpoint_point()
        else:
            u_c, i_c = self._expert_candidate(U, idx, self._f_lower)
            if not self._candidate_found:  # every candidate vetoed: GP-LCB's point
                self._after_reject = False
                self.outcomes.append("vanilla")
                return self._gp_led(u_u, i_u)
        pts = np.vstack([u_u, u_c])
        g_low_c, g_up_c = self.expert.bounds(u_c[None, :])
        assert g_low_c is not None and g_up_c is not None
        z_star = float(g_low_c[0])
        width = float(g_up_c[0] - g_low_c[0])
        lam_used = self.lam
        if self.primal_dual and self.candidate == "primal-dual":  # dual update of eq. (5)
            self.lam = max(0.0, self.lam + self.zeta * z_star)
            self.lambda_history.append(self.lam)
            self.dual_history.append((lam_used, z_star, self.lam))
        # min f_upper over candidates, data and the two points (never overestimated)
        U_up = np.vstack([U, self.X_f, pts])
        idx_up = (
            None
            if idx is None
            else np.concatenate([idx, [self._nearest_index(x) for x in self.X_f], [i_u, i_c]])
        )
        u_ucb, _, min_f_up = self._minimise(self._f_upper, U_up, idx_up)
        f_low_pts, _, std_pts = self._f_bounds(np.vstack([pts, u_ucb]))
        flow_c = float(f_low_pts[1])
        if self.no_harm == "paper":
            passes = flow_c <= min_f_up and std_pts[0] <= self.eta * std_pts[1]
        else:  # reference code's judge
            mixed = flow_c + lam_used * z_star
            const1 = min_f_up < mixed
            const2 = std_pts[2] > self.eta * std_pts[1]
            const3 = abs(mixed - flow_u) > 1e-5
            passes = not (const1 or (const2 and const3))
        self.width_history.append(width)
        self.last_decision = {
            "x_u": u_u,
            "x_c": u_c,
            "f_lower_xc": flow_c,
            "f_lower_xu": flow_u,
            "min_f_upper": min_f_up,
            "std_xu": float(std_pts[0]),
            "std_xc": float(std_pts[1]),
            "g_lower_xc": z_star,
            "g_width_xc": width,
            "lambda": lam_used,
            "passes_no_harm": bool(passes),
        }
        if self.candidate == "pinpoint":
            if passes:
                self.outcomes.append("unasked")
                return self._evaluate_by(u_c, i_c, "expert")
            self.outcomes.append("vanilla")
            return self._evaluate_by(u_u, i_u, "gp-lcb")
        if not passes:
            self.outcomes.append("vanilla")
            return self._gp_led(u_u, i_u)
        unsure = width > self.g_thr  # line 8's test
        if unsure and self._after_reject and self.reject_fallback == "lcb":
            # line 8 would ask again; at most one label per evaluation: GP-LCB's step instead
            self._after_reject = False
            self.outcomes.append("vanilla")
            return self._gp_led(u_u, i_u)
        known = self._known_label(u_c) if unsure and not self._after_reject else None
        if known is False:  # the expert rejected this point before (an initial label)
            self.outcomes.append("vanilla")
            return self._gp_led(u_u, i_u)
        # an expert-led proposal (x^c a different point than x^u) or GP-LCB's own (x^c = x^u):
        # remember the GP's forecast that x^u improves the best value (harm_budget)
        distinct = float(np.max(np.abs(u_c - u_u))) > SAME_POINT
        if unsure and not self._after_reject and known is None:
            q = self._ask_unit(u_c, i_c, "label")  # line 8: the expert is unsure -> ask
        else:
            self.outcomes.append("unasked")
            q = self._evaluate_by(u_c, i_c, "expert" if distinct else "gp-lcb")
        self._harm_refs[q.id] = ("expert" if distinct else "gp", *self._improvement_forecast(u_u))
        return q

    def _labelled_f_posterior(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``(rejected mask, mean, covariance)`` of the f-GP's posterior at the labelled points,
        or None without f-data or without labels of both kinds (the agreement statistics)."""
        rej = self.rejected > 0.5
        if not self.X_f.shape[0] or rej.all() or not rej.any():
            return None
        self._sync_gp()
        mean, _ = self.gp.predict(self.X_g)
        return rej, mean, self.gp.posterior_covariance(self.X_g, self.X_g)

    def _read_only(self) -> COBOL:
        """The policy itself when its GP is up to date, else a copy whose pending refit (which
        draws a seed from the generator) leaves this policy untouched: the public statistics
        below change nothing the policy does next."""
        if not self._gp_stale:
            return self
        import copy

        return copy.deepcopy(self)

    @property
    def agreement(self) -> float:
        """Posterior expected AUC of the expert's labels as a classifier of f (the agreement
        gate's statistic with ``agreement_level=None``; the default gate reads
        :attr:`agreement_probability`): the mean over pairs (i rejected, j accepted) of
        ``P_GP(f(x_i) > f(x_j))``; 1/2 without f-data or without labels of both kinds.
        Free of side effects."""
        return self._read_only()._agreement()

    def _agreement(self) -> float:
        from scipy.special import ndtr

        labelled = self._labelled_f_posterior()
        if labelled is None:
            return 0.5
        rej, mean, C = labelled
        i, j = np.flatnonzero(rej), np.flatnonzero(~rej)
        diag = np.diag(C)
        var = diag[i][:, None] + diag[j][None, :] - 2.0 * C[np.ix_(i, j)]
        d = mean[i][:, None] - mean[j][None, :]
        return float(np.mean(ndtr(d / np.sqrt(np.maximum(var, 1e-12)))))

    @property
    def agreement_probability(self) -> float:
        """Posterior probability, under the GP of f, that the expert's labels rank f better than
        a coin: ``P_GP(AUC > 1/2)`` with AUC the fraction of (rejected i, accepted j) pairs of
        labelled points with ``f(x_i) > f(x_j)`` (ties count 1/2). Monte Carlo over joint
        posterior draws of f at the labelled points, with fixed standard normal draws (a
        quadrature rule: the policy's generator is not touched). 1/2 without f-data or without
        labels of both kinds. Free of side effects."""
        return self._read_only()._agreement_probability()

    def _agreement_probability(self) -> float:
        labelled = self._labelled_f_posterior()
        if labelled is None:
            return 0.5
        rej, mean, C = labelled
        w, V = np.linalg.eigh(0.5 * (C + C.T))
        root = V * np.sqrt(np.maximum(w, 0.0))
        z = np.random.default_rng(0).standard_normal((self.agreement_draws, mean.size))
        F = mean[None, :] + z @ root.T  # (S, n) joint draws
        # the Mann-Whitney count by mid-ranks, O(S n) memory instead of S x rejected x accepted:
        # 2 U - r a = #(>) - #(<) = r a (2 AUC - 1), exactly (sums of half-integers)
        excess = mann_whitney_excess(F, rej)
        return float(np.mean(excess > 0.0) + 0.5 * np.mean(excess == 0.0))

    def _expert_may_lead(self) -> bool:
        """agreement_gate: whether the data let the expert lead this step (see the class doc)."""
        if self.agreement_level is None:  # the third session's rule: expected AUC above 1/2
            return self._agreement() > 0.5
        return self._agreement_probability() >= self.agreement_level

    def _gated_step(self) -> Query:
        """GP-LCB's step while the data do not expect the expert to agree with f: ``x^u``,
        after a calibration label if the expert model is unsure there (line 8) and the last
        label was not a reject (at most one label per evaluation after a reject)."""
        U, idx = self._candidates()
        u_u, i_u, _ = self._minimise(self._f_lower, U, idx)
        self.gated += 1
        # line 8's test reads only whether the width at x^u exceeds g_thr (nothing records the
        # width here): decided by inner bounds where they show it, else by the exact bounds
        # (39), and not at all after a reject. The MLE (37) is computed either way, as the
        # exact bounds always did: it warm-starts the next one, so skipping it would change
        # later values
        if self._after_reject or self._known_label(u_u) is not None:
            self.expert.mle  # noqa: B018 - computed for its warm start (see above)
            unsure = False
        else:
            unsure = bool(self.expert.width_exceeds(u_u[None, :], self.g_thr)[0])
        if unsure:
            q = self._ask_unit(u_u, i_u, "label", calibration=True)
            self._calibration_ids.add(q.id)
            self._harm_refs[q.id] = ("gp", *self._improvement_forecast(u_u))
            return q
        self.outcomes.append("vanilla")
        return self._gp_led(u_u, i_u)

    def _improvement_forecast(self, u: np.ndarray) -> tuple[float, float]:
        """``(P_GP(f(u) < best), best)``: the GP's probability that ``u`` improves the best value
        observed so far (probability of improvement, standardised units). The normal CDF by
        ``math.erfc`` (within an ulp of scipy.special.ndtr; scipy.special costs a command-line
        ask ~0.025 s to import, issue 15)."""
        mean, var = self.gp.predict(u[None, :])
        best = float(np.min(self.y_f))
        z = ((best - self._y_mean) / self._y_std - mean[0]) / math.sqrt(max(var[0], 1e-300))
        return 0.5 * math.erfc(-z / math.sqrt(2.0)), best

    def _gp_led(self, u: np.ndarray, index: int | None) -> Query:
        """Evaluate GP-LCB's own proposal x^u, keeping the GP's forecast for harm_budget."""
        q = self._evaluate_by(u, index, "gp-lcb")
        self._harm_refs[q.id] = ("gp", *self._improvement_forecast(u))
        return q

    @property
    def harm(self) -> float:
        """Estimated cost of following the expert (harm_budget): over the expert-led
        evaluations, ``sum P_GP(x^u improves) - 1[x^c improved]``. The reference is the GP's
        own forecast for its proposal x^u, which runs high (x^u is the argmin of an optimistic
        bound; the misses on GP-led evaluations are kept in :attr:`gp_forecast_history`): the
        comparison is conservative on purpose -- subtracting that bias let an adversarial
        expert lead for the whole run on Rosenbrock (docs/reproductions/expert.md)."""
        return float(np.sum(self.harm_history)) if self.harm_history else 0.0

    @property
    def expert_dismissed(self) -> bool:
        """Whether following the expert has cost more than ``harm_budget`` (COBOL then is GP-LCB
        and asks no labels)."""
        return self.harm_budget is not None and self.harm > self.harm_budget

    def _after_evaluation(self, query: Evaluate) -> None:
        self._reject_streak = 0
        self._after_reject = False
        ref = self._harm_refs.pop(query.id, None)
        if ref is not None:  # did the evaluation improve as often as the GP forecast for x^u?
            kind, pi_u, best = ref
            h = pi_u - float(float(self.y_f[-1]) < best)
            (self.harm_history if kind == "expert" else self.gp_forecast_history).append(h)

    def _note_label(self, query: Label, accepted: bool) -> None:
        """Count a BO-phase label; a reject vetoes the proposal (``"veto"`` rule)."""
        self.labels_asked += 1
        if accepted:
            return
        self.labels_rejected += 1
        if self.reject_rule == "veto":
            self.vetoed = np.vstack([self.vetoed, self._to_unit(query.x)])
            self._after_reject = True

    # pinpoint (Fig. 6a): rejection sampling from the expert through labels
    def _pinpoint_ready(self) -> bool:
        return self._pinpoint_streak < 0

    def _pinpoint_point(self) -> tuple[np.ndarray, int | None]:
        u, index = self._pinpoint_accepted
        self._pinpoint_streak = 0
        return u, index

    def _after_label(self, query: Label, accepted: bool) -> None:
        if query.id in self.initial_query_ids:
            return
        if self.candidate == "pinpoint":
            self.labels_asked += 1
            self.labels_rejected += 0 if accepted else 1
            if accepted or self._pinpoint_streak + 1 >= self.max_pinpoint_labels:
                self._pinpoint_accepted = (self._to_unit(query.x)[0], query.index)
                self._pinpoint_streak = -1
            else:
                self._pinpoint_streak += 1
            return
        ref = self._harm_refs.pop(query.id, None)
        if query.id in self._calibration_ids:  # agreement_gate: x^u is evaluated either way
            self.labels_asked += 1
            self.labels_rejected += 0 if accepted else 1
            self.outcomes.append("calibrate")
            self._pending_eval = (self._to_unit(query.x)[0], query.index)
            self._pending_ref = ref
            return
        self._note_label(query, accepted)
        if accepted:
            self.outcomes.append("accept")
            self._pending_eval = (self._to_unit(query.x)[0], query.index)
            self._pending_ref = ref
        else:
            self.outcomes.append("reject")
            self._reject_streak += 1

    def _iteration_done(self, query: Query, answer: Any) -> bool:
        if query.id in self.initial_query_ids:
            return False
        if isinstance(query, Label):
            if self.candidate == "pinpoint" or self.budget == "evaluations":
                return False
            if query.id in self._calibration_ids:  # x^u's evaluation follows in this iteration
                return False
            return not bool(answer)  # a reject consumes the iteration; accept -> evaluation
        return True

    def status_counts(self) -> dict[str, int]:
        """The labels of the BO phase asked and rejected (``labels_asked``,
        ``labels_rejected``): a study shows them beside its answers, since the budget counts
        evaluations only."""
        return {"labels_asked": self.labels_asked, "labels_rejected": self.labels_rejected}

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(
            {
                "lambda": self.lam,
                "norm_bound": self.expert.norm_bound,
                "alpha1": self.expert.alpha1,
                "eta": self.eta,
                "g_thr": self.g_thr,
                "labels": self.expert.n,
                "labels_asked": self.labels_asked,
                "labels_rejected": self.labels_rejected,
                "budget": self.budget,
                "harm": self.harm,
                "expert_dismissed": self.expert_dismissed,
                "gated": self.gated,
                "agreement_level": self.agreement_level,
                "reject_fallback": self.reject_fallback,
                "ask_again": self.ask_again,
            }
        )
        return d


class COBOHL(COBOL):
    """COBOHL, Algorithm 2 (App. E): assumes a helpful expert.

    ``x_t = argmin f_lower s.t. g_lower <= 0`` (falls back to ``argmin g_lower`` when no candidate
    is feasible: the penalised score of the constrained variant); if ``g_upper - g_lower > g_thr``
    at ``x_t`` the expert is asked and the iteration ends without an evaluation, whatever the
    label; otherwise ``f(x_t)`` is evaluated. No no-harm test and no eta.

    What follows an answer (``reject_rule``): ``"veto"`` (default) never puts a proposal to the
    expert twice: a rejected one is vetoed (as in :class:`COBOL`), an *accepted* one is
    evaluated next, and a later proposal at a point already labelled is evaluated without
    asking (as in :class:`COBOL`). Algorithm 2 as printed (``"paper"``) re-solves line 4 after an accept as
    well; an accept leaves ``g_lower`` at the box and the width at ``x_t`` above ``g_thr``, so
    the same point is put to the expert again and again and no evaluation is ever made (a
    newcomer's trial: 145 accepts of one point, 0 evaluations).
    """

    method_id = "cobohl"

    @property
    def iteration_meaning(self) -> str:  # type: ignore[override]
        """What :attr:`iteration` counts, by ``budget``."""
        if self.budget == "iterations":
            return (
                "Algorithm 2's t: one per label (a label ends its iteration) and one per "
                "evaluation; the initial labels and evaluations are not iterations"
            )
        return ExpertPolicy.iteration_meaning

    def __init__(self, space: Box | CandidateSet, seed: Any = 0, **kwargs: Any) -> None:
        kwargs["primal_dual"] = False
        kwargs.setdefault("eta", 1.0)
        super().__init__(space, seed, **kwargs)

    def _bo_propose(self) -> Query:
        if self._pending_eval is not None:  # "veto" rule: an accepted proposal is evaluated
            u, index = self._pending_eval
            self._pending_eval = None
            return self._evaluate_by(u, index, "expert")
        self._sync_gp()
        U, idx = self._candidates()
        u, index = self._expert_candidate(U, idx, self._f_lower)
        if not self._candidate_found:  # every candidate vetoed: GP-LCB's point
            u, index, _ = self._minimise(self._f_lower, U, idx)
            self._after_reject = False
            self.outcomes.append("vanilla")
            return self._evaluate_by(u, index, "gp-lcb")
        lo, up = self.expert.bounds(u[None, :])
        assert lo is not None and up is not None
        width = float(up[0] - lo[0])
        self.last_decision = {"x": u, "g_lower": float(lo[0]), "g_width": width}
        known = self._known_label(u) if width > self.g_thr and not self._after_reject else None
        if known is False:  # the expert rejected this point before (an initial label)
            u, index, _ = self._minimise(self._f_lower, U, idx)
            self.outcomes.append("vanilla")
            return self._evaluate_by(u, index, "gp-lcb")
        if width > self.g_thr and not self._after_reject and known is None:
            return self._ask_unit(u, index, "label")
        self.outcomes.append("unasked")
        return self._evaluate_by(u, index, "expert")

    def _after_label(self, query: Label, accepted: bool) -> None:
        if query.id in self.initial_query_ids:
            return
        self._note_label(query, accepted)
        self.outcomes.append("accept" if accepted else "reject")
        if accepted and self.reject_rule == "veto":
            self._pending_eval = (self._to_unit(query.x)[0], query.index)

    def _iteration_done(self, query: Query, answer: Any) -> bool:
        if query.id in self.initial_query_ids:
            return False
        return self.budget == "iterations" or isinstance(query, Evaluate)
