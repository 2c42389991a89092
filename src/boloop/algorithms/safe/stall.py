"""The stall warning of the safe family, and its noise check.

Losalka & Scarlett, "No-Regret Algorithms for Safe Bayesian Optimization with Monotonicity
Constraints", AISTATS 2024 (spec ``shared/specs/msafeopt.md``; notation of eq. 10-14).
:class:`_SafeStall` is the part of :class:`~boloop.algorithms.safe.base._SafePolicy` that tells
whether the certified safe set has stopped growing for a reason the user can act on (a model of
``g`` too short-sighted to certify the next level of ``s``; :meth:`~_SafeStall._update_stall`),
reports it (:meth:`~_SafeStall.stall`, ``describe()["stall"]``, a study's status warnings) in
words (:meth:`~_SafeStall.stall_message`) with the option that would unblock it
(``min_lengthscale_g``), and checks repeated measurements against the fixed noise variances
(:meth:`~_SafeStall.noise_check`). The module docstring of :mod:`boloop.algorithms.safe` says
why (``docs/reproductions/safe.md``, "A newcomer's stall").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from boloop.algorithms._safe_core import Bounds, SafeSets, Selection
from boloop.algorithms.safe.models import GridPosterior
from boloop.gp.exact import ExactGP
from boloop.gp.hyperparameters import HyperparameterLearning
from boloop.spaces import SafeSpace

__all__ = ["FUTILE_REPEATS", "FUTILE_NARROWING"]

#: proposals in a row that repeat a setting the stuck rows cannot learn from (``_futile``),
#: after which the safe family reports a stall without waiting for ``stall_window``: the third
#: repeat of a setting whose exact value would not narrow g one level up (the data then do not
#: change, so neither does the next proposal)
FUTILE_REPEATS = 3
#: ... where "would not narrow" is: g's standard deviation one level up stays above this share
FUTILE_NARROWING = 0.9


class _SafeStall:
    """The stall warning of :class:`~boloop.algorithms.safe.base._SafePolicy` and its noise check
    (a mixin: it works on the policy's own state). What it needs from the policy is declared
    below (annotations only: no attribute is created here)."""

    # set by _SafePolicy.__init__
    space: SafeSpace
    threshold: float
    width: np.ndarray
    hyperparameters: str
    fit_hyperparameters: bool
    learning: HyperparameterLearning | None
    min_lengthscale_g: np.ndarray | None
    gp_f: ExactGP | None
    gp_g: ExactGP
    post_f: GridPosterior | None
    certified: np.ndarray
    stall_window: int
    _cut: np.ndarray
    _one_step: bool
    _levels: set[int]
    _measured_cells: set[tuple[int, int]]
    _cert_count: int
    _answers: int
    _answers_at_growth: int | None
    _stall: dict[str, Any] | None
    _futile_run: int

    # ------------------------------------------------------------------ stall
    def _axis_name(self, k: int) -> str:
        names = getattr(self.space, "names", None)
        if names is not None and k < len(names):
            return str(names[k])
        return "s" if k == 0 else f"x{k}"

    def _update_stall(self, b: Bounds, sets: SafeSets, sel: Selection | None = None) -> None:
        """Whether the certified set has stopped growing for a reason the user can act on.

        A stall is reported when (i) the certified set has not grown for ``stall_window``
        answers, or the last :data:`FUTILE_REPEATS` proposals since it grew (``sel``, the one
        being made, included) each measure a setting again that cannot unblock the rows below
        (:meth:`_futile`: the method would ask the same again), (ii) some x row could still
        improve: an action above its certified boundary
        (never measured over the limit) has ``UCB^f`` above the best certified ``LCB^f``
        (``maxLCB_t``; Case 2: the row's own; M-SafeUCB: any, f = g increases in s), and (iii) on
        such a row the certification of the next grid level fails on the width of the bound, not
        on its mean: ``sigma^g`` there is at least half its prior value (the model knows next to
        nothing there), or at least a fifth of it while ``mu^g + sigma^g <= h`` (the model
        expects the level to be safe but cannot close the gap). (iii) tells a stall apart from a
        method that has reached the limit, where the data beside the boundary pin ``g`` one step
        further (``sigma^g`` a few per cent of the prior's) close to or above ``h``.
        Computed from the round's bounds only (no random numbers, nothing refitted).

        (i) counts answers (:meth:`answers_without_growth`: the method's own and measurements
        added with :meth:`observe`), not iterations: an added measurement feeds the models (and
        their refit schedule, which the window follows) as an answer does. Without added
        measurements the two counts agree at every proposal. The decision is taken here, at a
        proposal (where the certified set is committed); :meth:`stall` reports it with the count
        as it stands when read."""
        count = int(np.sum(self.certified + 1))
        if count > self._cert_count or self._answers_at_growth is None:
            self._cert_count = count
            self._answers_at_growth = self._answers
            self._futile_run = 0
        self._stall = None
        window = self._answers - self._answers_at_growth >= self.stall_window
        # a measured setting again, under a model that only its data can move (:meth:`_futile`)
        repeat = (
            sel is not None
            and (sel.x_index, sel.s_index) in self._measured_cells
            and self._model_stays()
        )
        blind = self._blind_rows(b, sets) if window or repeat else None  # (no work otherwise)
        if sel is not None:
            futile = repeat and blind is not None and self._futile(sel, blind[0], sets.boundary)
            self._futile_run = self._futile_run + 1 if futile else 0
        if blind is None or not (window or self._futile_run >= FUTILE_REPEATS):
            return
        blind_rows, ratio = blind
        ls = np.atleast_1d(np.asarray(getattr(self.gp_g.kernel, "lengthscale", np.nan)))
        ls_s = float(ls[0])
        step = float(np.median(np.diff(self.space.s_values)))
        top = float(self.space.s_values[int(np.max(self.certified))])
        axis = self._axis_name(0)
        i = int(np.flatnonzero(blind_rows)[np.argmax(ratio[blind_rows])])
        self._stall = {
            "axis": axis,
            "lengthscale_g": ls_s,
            "grid_step": step,
            "highest_certified": top,
            "rows": int(np.count_nonzero(blind_rows)),
            "uncertainty_ratio": float(ratio[i]),
            "repeats": self._futile_run if not window else 0,
            "suggested_min_lengthscale_g": (
                self._suggested_floor(ls_s)
                if self.hyperparameters in ("learned", "plain")
                else None
            ),
        }

    def _blind_rows(self, b: Bounds, sets: SafeSets) -> tuple[np.ndarray, np.ndarray] | None:
        """Conditions (ii) and (iii) of :meth:`_update_stall`: the x rows (bool, ``(n_x,)``)
        that could improve above their certified boundary and whose next level the model cannot
        certify for want of knowledge, with ``sigma^g`` there over its prior value per row;
        None when no row is such."""
        n_x, n_s = self.certified.size, self.space.n_s
        rows = np.arange(n_x)
        j = sets.boundary
        nxt = np.minimum(j + 1, n_s - 1)
        open_row = (j < n_s - 1) & (self._cut > nxt)
        above = (np.arange(n_s)[None, :] > j[:, None]) & (
            np.arange(n_s)[None, :] < self._cut[:, None]
        )
        if self.post_f is None:  # M-SafeUCB: f = g is increasing, higher is better
            promising = open_row & above.any(axis=1)
        else:
            best = sets.lcb_best if getattr(self, "case", "1") == "2" else sets.max_lcb
            ucb_above = np.max(np.where(above, b.ucb_f, -np.inf), axis=1)
            promising = open_row & (ucb_above > best)
        if not promising.any():
            return None
        prior_var = self.gp_g.kernel.diag(self.space.points[rows * n_s + nxt])
        # the intercept's prior variance (offset_g) is the same at every action: what the model
        # does not know about the next level is the rest of the prior
        prior_var = prior_var - (getattr(self.gp_g.kernel, "offset_variance", None) or 0.0)
        prior_sd = np.sqrt(np.maximum(prior_var, 1e-300))
        sd = b.std_g[rows, nxt]
        ratio = sd / prior_sd
        # held back by ignorance, not by the limit: the model knows next to nothing at the next
        # level, or expects it to be safe (mean plus one standard deviation below h) while still
        # uncertain by a fifth of its prior there. At the limit the data beside the boundary
        # make the next level's sigma a small fraction of the prior's (a few per cent).
        expects_safe = (b.mean_g[rows, nxt] + sd <= self.threshold) & (ratio >= 0.2)
        blind = promising & (expects_safe | (ratio >= 0.5))
        if not blind.any():
            return None
        return blind, ratio

    def _model_stays(self) -> bool:
        """Whether g's model can change only through its data: a fixed kernel, or the learned
        default while every datum sits at one level of s (:meth:`_level_cap`: the data cannot
        identify how fast g changes along s, so no refit can move the next level's width).
        Otherwise refits as the data grow move the model (measured: a futile-repeat rule
        without this condition was followed by growth in 5 of 8 runs on fine dose grids with
        noisy g, against 1 of 6 for the window)."""
        if self.learning is None:
            return not self.fit_hyperparameters
        return self._one_step and len(self._levels) < 2

    def _futile(self, sel: Selection, blind: np.ndarray, boundary: np.ndarray) -> bool:
        """Whether the proposal ``sel``, which measures a setting again (its grid cell was
        measured before: the caller's condition), is one where even the exact value of g there
        would leave ``sigma^g`` at the next level
        of every row in ``blind`` (one above ``boundary``, this round's) above
        :data:`FUTILE_NARROWING` of what it is: conditioned on a noise-free g at the setting,
        ``var' = var - cov^2 / var_sel`` (posterior (co)variances of g's model). Then
        the answer cannot unblock those rows (nor can any number of repeats: their limit is
        that exact value), and the data after it are the data before it plus a repeat, so the
        method asks the same again. A noise-free measurement repeated is the common case (a
        lab's g read off an instrument: its posterior variance at the setting is already the
        noise floor, ``cov`` about 0)."""
        n_s = self.space.n_s
        rows = np.flatnonzero(blind)
        nxt = np.minimum(boundary[rows] + 1, n_s - 1)
        P = self.space.points[rows * n_s + nxt]
        x = self.space.points[sel.x_index * n_s + sel.s_index][None, :]
        var_sel = float(self.gp_g.posterior_covariance(x, x)[0, 0])
        _, var_nxt = self.gp_g.predict(P)
        cov = self.gp_g.posterior_covariance(P, x)[:, 0]
        if var_sel <= 0.0:
            return True
        narrowed = np.maximum(var_nxt - cov**2 / var_sel, 0.0)
        return bool(np.all(narrowed >= FUTILE_NARROWING**2 * var_nxt))

    def stall_message(self, stall: Mapping[str, Any], unit: str = "") -> str:
        """The words of a stall (:meth:`stall`'s dict, its ``message`` aside) for the person
        running the study; ``unit`` (the monotone parameter's, which the method does not know:
        a study passes the space file's) is written after its values (``up to 40 mg``, the
        length-scale and the grid step)."""
        stale, axis = int(stall["answers"]), str(stall["axis"])
        ls, step = float(stall["lengthscale_g"]), float(stall["grid_step"])
        top, ratio = float(stall["highest_certified"]), float(stall["uncertainty_ratio"])
        repeats = int(stall.get("repeats") or 0)
        u = f" {unit}" if unit else ""
        again = (
            f" Its last {repeats} queries measured settings again that it already knows: their "
            f"answers cannot narrow g one {axis} level up, so it would go on asking the same."
            if repeats
            else ""
        )
        head = (
            f"the method is stuck: the set of settings it can certify as safe has not grown in "
            f"the last {stale} answers (it certifies {axis} up to {top:.4g}{u}), although its "
            f"model of f says that higher {axis} could be better.{again} Its model of the safety "
            f"value g assumes g can change a lot over {ls:.3g}{u} in {axis} (the length-scale "
            f"along {axis}; the grid step is {step:.4g}{u}), so one step beyond the measured "
            f"levels its uncertainty about g is still {100 * ratio:.0f}% of what it is without "
            "any data: "
            "too wide to certify the next level, however often it measures this one. "
        )
        if self.hyperparameters == "fixed":
            return head + (
                "g's kernel is fixed: give one with a longer length-scale along "
                f"{axis}, or learn it (fit_hyperparameters=true) and set min_lengthscale_g."
            )
        if self.hyperparameters == "paper":
            return head + (
                "With hyperparameters='learned' the option min_lengthscale_g can state how "
                "smoothly g varies."
            )
        now = (
            ""
            if self.min_lengthscale_g is None
            else f" (now {', '.join(f'{v:g}' for v in self.min_lengthscale_g)})"
        )
        frac = ls / float(self.width[0])
        hint = self._suggested_floor(ls)
        return head + (
            f"If you know that g varies smoothly, say so with the option min_lengthscale_g"
            f"{now}: the shortest length-scale of g you assume, as a fraction of each "
            f"parameter's range (g's is now {frac:.2g} of {axis}'s range), e.g. "
            f"min_lengthscale_g = {hint:g}. This is an assumption, not something the data show: "
            "if g changes faster than that, the method can propose settings above the limit."
        )

    def _suggested_floor(self, ls: float) -> float:
        """The ``min_lengthscale_g`` a stall message suggests: 1.5 times g's length-scale along s
        as a fraction of its range, in steps of 0.05, at least 0.2 (at most 1)."""
        frac = ls / float(self.width[0])
        return min(1.0, max(0.2, math.ceil(round(30.0 * frac, 6)) / 20.0))

    def noise_check(self) -> dict[str, dict[str, Any]]:
        """Per output (``f``, ``g``), where measurements repeated at one setting scatter more
        than its fixed noise variance (``noise_f``, ``noise_g``) allows: the test's numbers
        (:func:`boloop.gp.repeats.noise_too_small`); empty when none does. The models never
        learn the noise, so a noise variance below the real one makes them trust each
        measurement too much (the safety model certifies too much)."""
        from boloop.gp.repeats import noise_too_small

        out = {}
        for name, gp in (("f", self.gp_f), ("g", self.gp_g)):
            if gp is None or gp.n < 3:
                continue
            found = noise_too_small(gp.X, gp.y, gp.noise_variance)
            if found is not None:
                found["option"] = f"noise_{name}"
                if name == "g":
                    found["cost"] = "so it can certify settings that are not safe"
                out[name] = found
        return out

    def answers_without_growth(self) -> int | None:
        """The answers since the certified safe set last grew: tells to the method's queries and
        measurements added with :meth:`observe`, after the proposal at which the set last grew
        (the set is certified at proposals, so the first one after the safe seeds counts as
        growth). The same whether a query is open or not: asking changes it only when the set
        has grown (to 0). None before the first proposal after the safe seeds."""
        if self._answers_at_growth is None:
            return None
        return self._answers - self._answers_at_growth

    def stall(self) -> dict[str, Any] | None:
        """The stall found at the last proposal (see :meth:`_update_stall`) or None: ``answers``
        without growth (:meth:`answers_without_growth`, as it stands now), ``axis`` (the
        monotone parameter), g's ``lengthscale_g`` along it and the ``grid_step`` (natural
        units), ``highest_certified`` value of the axis, ``rows`` stuck, ``uncertainty_ratio``,
        ``repeats`` (the futile repeats in a row that reported it before ``stall_window``
        answers, 0 when the window did) and a ``message`` for the person running the study,
        built from the same count."""
        if self._stall is None:
            return None
        n = self.answers_without_growth()
        assert n is not None  # a stall is only found at a proposal after the safe seeds
        d = {"answers": n, **self._stall}
        d["message"] = self.stall_message(d)
        return d
