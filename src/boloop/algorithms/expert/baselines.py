"""The expert family's baselines (Sec. 5): GP-LCB, random search, expert sampling, and the
simulated expert-guided methods of earlier work (av-2022, khoshvishkaie-2023, adachi-2024)."""

from __future__ import annotations

from typing import Any

import numpy as np

from boloop.algorithms.expert.base import ExpertPolicy, _count, _number
from boloop.algorithms.expert.cobol import COBOL
from boloop.errors import InvalidInputError
from boloop.queries import Compare, Evaluate, Label, Query
from boloop.recommendations import BestPoint
from boloop.spaces import Box, CandidateSet


class RandomSearch(ExpertPolicy):
    """Uniformly random evaluations after the shared initial design (Sec. 5 baseline)."""

    method_id = "random"

    def _bo_propose(self) -> Query:
        U, idx = self._sample_unit(1)
        return self._evaluate_by(U[0], None if idx is None else int(idx[0]), "random")

    def recommend(self) -> BestPoint:
        """The evaluated point with the lowest measured value (``point`` None before any)."""
        if not self.X_f.shape[0]:
            return BestPoint(None)
        return BestPoint(self._from_unit(self.X_f[int(np.argmin(self.y_f))]))


class ExpertSampling(ExpertPolicy):
    """Rejection sampling from the expert (Sec. 5.3): uniform proposals; the expert's accepted
    proposals are evaluated. A rejected proposal does not consume the budget (the budget counts
    samples from the expert's belief, i.e. evaluations); after ``max_rejections`` rejections in a
    row the next proposal is evaluated without asking (a safety cap, logged in ``outcomes``)."""

    method_id = "expert-sampling"
    uses_labels = False  # the initial labels of COBOL are not needed here

    def __init__(
        self, space: Box | CandidateSet, seed: Any = 0, *, max_rejections: int = 200, **kwargs: Any
    ) -> None:
        super().__init__(space, seed, **kwargs)
        self.max_rejections = _count(max_rejections, "max_rejections", 1)
        self._accepted: tuple[np.ndarray, int | None] | None = None
        self._streak = 0

    def _bo_propose(self) -> Query:
        if self._accepted is not None:
            u, index = self._accepted
            self._accepted = None
            return self._evaluate_by(u, index, "expert")
        U, idx = self._sample_unit(1)
        index = None if idx is None else int(idx[0])
        if self._streak >= self.max_rejections:
            self._streak = 0
            self.outcomes.append("cap")
            return self._evaluate_by(U[0], index, "random")
        return self._ask_unit(U[0], index, "label")

    def _after_label(self, query: Label, accepted: bool) -> None:
        if accepted:
            self._streak = 0
            self._accepted = (self._to_unit(query.x)[0], query.index)
            self.outcomes.append("accept")
        else:
            self._streak += 1
            self.outcomes.append("reject")

    def _iteration_done(self, query: Query, answer: Any) -> bool:
        if query.id in self.initial_query_ids:
            return False
        return isinstance(query, Evaluate)

    def recommend(self) -> BestPoint:
        """The evaluated point with the lowest measured value (``point`` None before any)."""
        if not self.X_f.shape[0]:
            return BestPoint(None)
        return BestPoint(self._from_unit(self.X_f[int(np.argmin(self.y_f))]))


class GPLCB(ExpertPolicy):
    """Vanilla GP-LCB: ``x_t = argmin mu - beta_f sigma`` (line 5 of Algorithm 1 alone)."""

    method_id = "gp-lcb"

    def _bo_propose(self) -> Query:
        self._sync_gp()
        U, idx = self._candidates()
        u, index, _ = self._minimise(self._f_lower, U, idx)
        self.outcomes.append("vanilla")
        return self._evaluate_by(u, index, "gp-lcb")


class _Pinpointing(GPLCB):
    """GP-LCB plus a simulated pinpointing expert: the expert "names" a point, simulated by
    asking labels at uniform points until one is accepted (at most ``max_pinpoint_labels``;
    then the last proposal is used). Label queries do not count as iterations; every
    evaluation does."""

    def __init__(
        self,
        space: Box | CandidateSet,
        seed: Any = 0,
        *,
        max_pinpoint_labels: int = 200,
        **kwargs: Any,
    ) -> None:
        super().__init__(space, seed, **kwargs)
        self.max_pinpoint_labels = _count(max_pinpoint_labels, "max_pinpoint_labels", 1)
        self._pin_streak = 0
        self._pin_active = False
        self._to_evaluate: tuple[np.ndarray, int | None] | None = None

    def _pinpoint_label(self) -> Query:
        self._pin_active = True
        U, idx = self._sample_unit(1)
        return self._ask_unit(U[0], None if idx is None else int(idx[0]), "label")

    def _after_label(self, query: Label, accepted: bool) -> None:
        if query.id in self.initial_query_ids:
            return
        u = (self._to_unit(query.x)[0], query.index)
        if not self._pin_active:  # the expert judged the LCB proposal
            if accepted:
                self.outcomes.append("accept")
                self._to_evaluate = u
            else:
                self.outcomes.append("intervene")
                self._pin_streak = 0
                self._pin_active = True
            return
        self._pin_streak += 1
        if accepted or self._pin_streak >= self.max_pinpoint_labels:
            self._to_evaluate = u
            self._pin_active = False
            self._pin_streak = 0

    def _iteration_done(self, query: Query, answer: Any) -> bool:
        return query.id not in self.initial_query_ids and isinstance(query, Evaluate)

    def _next(self) -> Query | None:
        if self._to_evaluate is not None:
            u, index = self._to_evaluate
            self._to_evaluate = None
            return self._ask_unit(u, index, "evaluate")
        if self._pin_active:
            return self._pinpoint_label()
        return None


class HumanIntervention(_Pinpointing):
    """Simulated AV et al. (NeurIPS 2022) "human as constraint" baseline of the human study
    (COBOL Sec. 5, App. J.3): the expert judges every vanilla-LCB proposal; if they reject it
    they intervene with their own pick (rejection-sampled from their belief), which BO must
    evaluate. High trust in the expert; the spec gives no more detail."""

    method_id = "av-2022"
    uses_labels = False

    def _bo_propose(self) -> Query:
        nxt = self._next()
        if nxt is not None:
            return nxt
        self._sync_gp()
        U, idx = self._candidates()
        u, index, _ = self._minimise(self._f_lower, U, idx)
        return self._ask_unit(u, index, "label")


class AlternatingExpert(_Pinpointing):
    """Simulated Khoshvishkaie et al. (ECML 2023) baseline: the evaluation budget is split
    equally and alternately between the expert's own picks (rejection-sampled from their belief)
    and vanilla LCB. Low trust; the quality of the expert's input is ignored."""

    method_id = "khoshvishkaie-2023"
    uses_labels = False

    def _bo_propose(self) -> Query:
        nxt = self._next()
        if nxt is not None:
            return nxt
        if self.n_evaluations % 2 == 0:
            self._pin_streak = 0
            return self._pinpoint_label()
        self.outcomes.append("vanilla")
        return GPLCB._bo_propose(self)

    def _after_label(self, query: Label, accepted: bool) -> None:
        if query.id in self.initial_query_ids:
            return
        self._pin_active = True
        super()._after_label(query, accepted)


class CollaborativeCompare(COBOL):
    """Simulated Adachi et al. (AISTATS 2024, "Looping in the human", CoExBO) baseline of the
    human study (COBOL Sec. 5, App. J.3; spec sec. 5.4): BO proposes two candidates, the human
    picks one, and a hand-tuned discounting function decays the trust in the human's belief
    until the two candidates coincide.

    Each BO iteration (after the shared initial design: 3 evaluations and 10 labels):

    1. ``x^u = argmin f_lower`` (vanilla LCB, as line 5 of COBOL's Algorithm 1);
    2. ``x^c = argmin f_lower + w_t g^MLE`` -- the LCB reweighted by the policy's model of the
       expert's belief, ``g^MLE`` the likelihood-ratio MLE (logit of the reject probability,
       clipped to ``[-3, 3]`` as in COBOL) fitted to the 10 initial labels, with trust
       ``w_t = w0 gamma^t`` (``t`` = completed BO iterations);
    3. ``Compare(a=x^u, b=x^c)``: the human picks one (0: the LCB point, 1: the belief point);
    4. ``Evaluate`` the chosen point. One iteration = compare + evaluate.

    When ``w_t < w_min`` (trust exhausted) ``x^c := x^u``, and whenever the two candidates are
    the same point the comparison is skipped and the point is evaluated directly (outcome
    ``"coincide"``); otherwise the outcome is ``"lcb"`` or ``"belief"`` after the human's pick.

    **Inferred, not from the papers** (the COBOL paper and the spec give no formula): the
    additive form ``f_lower + w g`` (COBOL's primal-dual mixing with a fixed schedule instead
    of a data-driven lambda), the exponential discount ``w_t = w0 gamma^t`` with defaults
    ``w0 = 1`` (COBOL's lambda_0) and ``gamma = 0.9``, ``w_min = 1e-3``, and a belief model
    that is fitted once to the pre-elicited initial labels and is not updated by the human's
    picks (CoExBO learns a preference GP from the picks; that is not simulated here). The
    human's pick is answered by the problem's ``compare`` oracle (see
    :meth:`boloop.problems.expert.ExpertProblem.compare`).
    """

    method_id = "adachi-2024"

    def __init__(
        self,
        space: Box | CandidateSet,
        seed: Any = 0,
        *,
        w0: float = 1.0,
        gamma: float = 0.9,
        w_min: float = 1e-3,
        **kwargs: Any,
    ) -> None:
        super().__init__(space, seed, **kwargs)
        self.w0 = _number(w0, "w0", low=0.0)
        self.gamma = _number(gamma, "gamma", low=0.0)
        if self.gamma > 1.0:
            raise InvalidInputError(f"gamma must be in [0, 1], got {gamma!r}")
        self.w_min = _number(w_min, "w_min", low=0.0)
        #: trust weight w_t used at every BO iteration
        self.trust_history: list[float] = []
        self._chosen: tuple[np.ndarray, int | None] | None = None

    def trust(self, t: int | None = None) -> float:
        """The discount ``w_t = w0 gamma^t`` (t: completed BO iterations; default now)."""
        t = self.iteration if t is None else int(t)
        return self.w0 * self.gamma**t

    def _bo_propose(self) -> Query:
        if self._chosen is not None:  # the human picked: evaluate it (same iteration)
            u, index = self._chosen
            self._chosen = None
            return self._ask_unit(u, index, "evaluate")
        self._sync_gp()
        U, idx = self._candidates()
        w = self.trust()
        self.trust_history.append(w)
        u_u, i_u, _ = self._minimise(self._f_lower, U, idx)
        if w < self.w_min:
            u_c, i_c = u_u, i_u
        else:

            def mixed(V: np.ndarray) -> np.ndarray:
                return self._f_lower(V) + w * self.expert.mle_predict(V)

            u_c, i_c, _ = self._minimise(mixed, U, idx)
        same = (i_u == i_c) if self._finite else bool(np.array_equal(u_u, u_c))
        self.last_decision = {"x_u": u_u, "x_c": u_c, "trust": w, "coincide": same}
        if same:
            self.outcomes.append("coincide")
            return self._ask_unit(u_u, i_u, "evaluate")
        if self._finite:
            assert isinstance(self.space, CandidateSet) and i_u is not None and i_c is not None
            a, b = self.space.points[int(i_u)], self.space.points[int(i_c)]
        else:
            a, b = self._from_unit(u_u), self._from_unit(u_c)
        return self._new_compare(a, b, i_u, i_c)

    def _observe(self, query: Query, answer: Any) -> None:
        if isinstance(query, Compare):
            pick = query.b if int(answer) == 1 else query.a
            index = query.b_index if int(answer) == 1 else query.a_index
            self._chosen = (self._to_unit(pick)[0], index)
            self.outcomes.append("belief" if int(answer) == 1 else "lcb")
            self.n_expert_queries += 1
            return
        super()._observe(query, answer)

    def _after_label(self, query: Label, accepted: bool) -> None:
        """Only the initial labels are asked; they feed the belief model (``_add_label``)."""

    def _iteration_done(self, query: Query, answer: Any) -> bool:
        if query.id in self.initial_query_ids:
            return False
        return isinstance(query, Evaluate)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        for key in ("lambda", "eta", "g_thr"):  # COBOL's, unused here
            d.pop(key, None)
        d.update({"trust": self.trust(), "gamma": self.gamma, "w0": self.w0})
        return d
