"""The stall of a level-set policy: a map that has stopped changing while the answers teach the
model nothing new, counted at every query and reported in words (``docs/studies.md``, "A
level-set map that stops changing"; measured in ``benchmarks/levelset_stall.py``).

Paper: Inatsu, Takeno, Kutsukake, Takeuchi, "Active Learning for Level Set Estimation Using
Randomized Straddle Algorithms" (spec ``shared/specs/lse.md``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from boloop.algorithms.levelset.acquisition import classify
from boloop.confidence import UNDECIDED_SD, undecided
from boloop.gp.cache import CandidatePosterior
from boloop.gp.exact import ExactGP
from boloop.queries import Query

#: the advice that ends a level-set stall's message, ``where`` the setting farthest from every
#: measurement (the study writes it in parameter names)
FARTHEST_ADVICE = (
    "To check, measure a setting far from all measurements yourself; the farthest is {where}."
)


class LevelSetStall:
    """The stall of a level-set policy (a mixin of
    :class:`~boloop.algorithms.levelset.base.LevelSetPolicy`: it works on the policy's own
    state). What it needs from the policy is declared below (annotations only: no attribute is
    created here)."""

    # set by LevelSetPolicy.__init__ and BasePolicy.__init__
    threshold: float
    finite: bool
    gp: ExactGP
    cache: CandidatePosterior
    candidates: np.ndarray
    N: int
    observed: np.ndarray
    stall_window: int
    _d: int
    _width: np.ndarray
    _repeats_unchanged: int
    _known_unchanged: int
    _known_repeats: int
    _stall_upper: np.ndarray | None
    _stall_anchor: tuple[np.ndarray, np.ndarray] | None
    _stall_reach: np.ndarray | None
    _stall_first_n: int
    _stall: dict[str, Any] | None
    pending: Query | None  # BasePolicy's (read-only)

    @property
    def repeats_unchanged(self) -> int:
        """How many of the latest queries (on a finite space) were in a row at candidates
        already measured, with the estimated set ``{x : mu(x) >= theta}`` (eq. 3.1) the same at
        each of them: 0 when the last query was at a new candidate. The count behind the first
        stall notice (20 such queries; the notice now counts :attr:`known_unchanged`, which
        also covers a stall whose queries interleave new settings), kept as a read-out."""
        return self._repeats_unchanged

    @property
    def known_unchanged(self) -> int:
        """How many of the latest queries were in a row at settings the model already knew as
        well as a measured one, with the estimated map the same at each of them as at the first
        (:meth:`_update_stall`: no candidate changed side of the threshold beyond the noise
        of the answers): the count behind :meth:`stall`. 0 when the last query was somewhere the
        model did not know that well, 1 when the map changed just before it."""
        return self._known_unchanged

    def _map_state(self) -> tuple[np.ndarray, np.ndarray]:
        """The estimated map over the candidates as the stall reads it: ``(upper, undecided)``,
        each candidate's side (eq. 3.1, ``mu >= theta``) and whether the model leaves it
        undecided (``|mu - theta| < 2 sigma``, :func:`boloop.confidence.undecided`)."""
        mean, std = self.cache.mean, self.cache.std
        return classify(mean, self.threshold), undecided(mean, std, self.threshold, UNDECIDED_SD)

    def _answer_reach(self, sd: float, index: int | None, x: np.ndarray | None) -> np.ndarray:
        """The standard deviation of the move of every candidate's mean that one more answer at
        the query ``x_t`` brings, ``|k_{t-1}(x, x_t)| / sqrt(sigma_{t-1}^2(x_t) + sigma_n^2)``
        (N,): the one-step look-ahead of MILE (Zanette et al. 2019, :func:`mile_acquisition`),
        ``sd = sigma_{t-1}(x_t)``. ``index``: the query's candidate (finite), else ``x``."""
        if index is not None:
            cov = self.cache.covariance_with(index)
        else:
            assert x is not None
            cov = self.gp.posterior_covariance(self.candidates, x.reshape(1, -1))[:, 0]
        s_star = math.sqrt(sd * sd + max(self.gp.noise_variance, 0.0))
        return np.abs(cov) / s_star if s_star > 0 else np.zeros(self.N)

    def _map_moved(self, now: tuple[np.ndarray, np.ndarray]) -> bool:
        """Whether the map ``now`` (:meth:`_map_state`) differs from the first of the count in
        a candidate that is not the noise of the answers (:meth:`_update_stall`)."""
        assert self._stall_anchor is not None and self._stall_reach is not None
        upper, unsure = self._stall_anchor
        flipped = now[0] != upper
        if not flipped.any():
            return False
        near = np.abs(self.cache.mean - self.threshold) < UNDECIDED_SD * self._stall_reach
        return bool(np.any(flipped & ~(unsure & now[1] & near)))

    def _update_stall(
        self, sd: float, measured: bool, *, index: int | None = None, x: np.ndarray | None = None
    ) -> None:
        """Count the query just chosen, with ``sd = sigma_{t-1}(x_t)`` (the posterior standard
        deviation its choice was made with), ``measured`` whether it is a candidate measured
        before and ``index`` (its candidate) or ``x`` (a box), into :attr:`known_unchanged`, and
        report a stall once the count reaches :attr:`stall_window`.

        A stall is a map that no longer changes while the answers no longer teach the model
        anything new. A query teaches about as little as a repeat when ``x_t`` was measured,
        or when ``sigma_{t-1}(x_t) < sigma_n`` (the fitted noise's standard deviation): its
        answer's information about ``f(x_t)``, ``1/2 log(1 + sigma_{t-1}^2(x_t) / sigma_n^2)``
        (Srinivas et al. 2010, Lemma 5.3), is then below ``1/2 log 2``, what a second
        measurement of a setting measured once teaches at most (that setting's ``sigma`` is
        already below ``sigma_n``). In length-scales it is a setting so close to measured ones
        that the model's uncertainty there is below the noise's (how close depends on the
        signal-to-noise ratio), such as an unmeasured neighbour of a boundary point re-measured
        many times; a setting far from the data, as in an exploration of the space, is not. It
        is the trigger of :meth:`_widen_if_overconfident` (Wang and de Freitas 2014), read
        here, not acted on.

        The map is the estimated set ``H_t = {x : mu_{t-1}(x) >= theta}`` (eq. 3.1) over the
        candidates, compared with the map at the first query of the count. A candidate on the
        other side now is a change of the map unless it is the noise of the answers the method
        keeps giving, which takes both of:

        * the model left its side undecided at both queries, ``|mu - theta| < 2 sigma``
          (:data:`~boloop.confidence.UNDECIDED_SD`; LSE's unclassified set ``U_t`` at
          ``beta^(1/2) = 2``, Gotovos et al. 2013, and the undecided cells of the map picture;
          the randomized straddle's draw ``beta_t ~ chi2(2)`` makes its acquisition
          ``max{beta_t^(1/2) sigma - |mu - theta|, 0}`` positive there with probability
          ``exp(-u^2 / 2) > e^-2``, ``u = |mu - theta| / sigma``);
        * its mean is now within 2 standard deviations of the move that one more answer at one
          of the count's queries would give it: one answer at ``x_j`` moves ``mu(x)`` by a
          normal of sd ``c_j(x) = |k_{j-1}(x, x_j)| / sqrt(sigma_{j-1}^2(x_j) + sigma_n^2)``
          (the one-step look-ahead of MILE, Zanette et al. 2019; :meth:`_answer_reach`), so
          the next such answer can put it back on the first side.

        On a fine grid the boundary moves by a grid step with almost every answer and the
        settings beside it, their mean within a hair of ``theta``, keep changing side:
        requiring no change at all there would never let a stall be seen (the 2-D furnace grid
        of ``docs/reproductions/levelset.md``). A candidate decided at either end, or beyond
        what the answers move, counts; comparing with the first query of the count, not the
        previous one, keeps a slow drift in view (a candidate decided at the first query that
        ends on the other side counts, however small its steps). Measured
        (``docs/reproductions/levelset.md``, "Boundary jitter on fine grids"): the stuck run of
        that grid is now flagged, and the false alarms rise (8 to 16 of 219 design runs, 2 to 6
        of 120 held out); the first condition alone gave 22 and 8.

        A level-set acquisition that keeps choosing settings it knows while the map stays put
        has a model that is sure of the map everywhere else: its answers sharpen a few
        boundary points and move nothing, whether they re-measure those points or alternate
        with their unmeasured neighbours. That is the end of a run whose map is right, and
        also of a run whose model never saw a region the first points missed (a bump under a
        trend, a second peak): the two look the same from the data, so the report says both
        (``benchmarks/levelset_stall.py``). On a box the map is that of the policy's candidate
        set (the points it classifies and scores at every step), and no query repeats one
        exactly. Reads the posterior the choice was made with; draws no random number and
        changes no choice. :attr:`repeats_unchanged` (the first notice's count) still reads
        the exact map, no candidate changing side at all."""
        upper = classify(self.cache.mean, self.threshold)
        same = self._stall_upper is not None and np.array_equal(upper, self._stall_upper)
        self._stall_upper = upper
        if not measured:
            self._repeats_unchanged = 0
        else:
            self._repeats_unchanged = self._repeats_unchanged + 1 if same else 1
        noise_sd = math.sqrt(max(self.gp.noise_variance, 0.0))
        if not (measured or sd < noise_sd):
            self._known_unchanged = self._known_repeats = 0
            self._stall_anchor = self._stall_reach = None
        else:
            state = self._map_state()
            reach = self._answer_reach(sd, index, x)
            if self._stall_anchor is not None and self._stall_reach is not None:
                np.maximum(self._stall_reach, reach, out=self._stall_reach)
                moved = self._map_moved(state)
            else:
                moved = True
            if not moved:
                self._known_unchanged += 1
                self._known_repeats += int(measured)
            else:
                self._known_unchanged, self._known_repeats = 1, int(measured)
                self._stall_anchor, self._stall_reach = state, reach
                self._stall_first_n = self.gp.n
        self._stall = None
        k = self._known_unchanged
        if k >= self.stall_window:  # the words and the farthest point when read (stall())
            self._stall = {
                "queries": k,
                "repeats": self._known_repeats,
                "since_n": self._stall_first_n,
            }

    def _farthest_candidate(self) -> tuple[np.ndarray, float]:
        """The candidate farthest from every observation (Euclidean, each axis divided by its
        range) and that distance, as a fraction of the unit cube's diagonal. In blocks of
        candidates and observations, so that memory stays bounded on large grids."""
        X = np.asarray(self.gp.X, dtype=np.float64) / self._width
        xx = (X * X).sum(1)
        best_j, best_d2 = 0, -1.0
        for lo in range(0, self.N, 8192):
            C = self.candidates[lo : lo + 8192] / self._width
            cc = (C * C).sum(1)
            near = np.full(C.shape[0], np.inf)
            for start in range(0, X.shape[0], 256):
                d2 = cc[:, None] - 2.0 * C @ X[start : start + 256].T + xx[None, start : start + 256]
                np.minimum(near, d2.min(axis=1), out=near)
            j = int(np.argmax(near))
            if near[j] > best_d2:
                best_j, best_d2 = lo + j, float(near[j])
        return self.candidates[best_j].copy(), math.sqrt(max(best_d2, 0.0) / self._d)

    def stall(self) -> dict[str, Any] | None:
        """A map that has stopped changing, found at the last query (:meth:`_update_stall`), or
        None. Answers and measurements that came in since are read too: when one of them moved
        the map the stall is gone (the method checks again at its next query); when none did,
        it stands, counted to now, and the farthest setting is that of the data now.
        ``queries`` (the :attr:`known_unchanged` count at that query; ``repeats`` of them at
        measured settings, the others new but known to within the noise), ``answered`` (the
        answers given to them: one fewer than ``queries`` while the last is the open query),
        ``added`` (measurements added since the first of them) and ``answers`` (both: the
        observations since the first of them), ``measured_settings`` (distinct settings
        measured), the candidate
        ``farthest`` from every measurement (``farthest_distance``: as a fraction of the
        diagonal of the box scaled to unit sides; None when every candidate is measured), the
        ``finding`` in words and the ``message`` for the person running the study: the finding
        and :data:`FARTHEST_ADVICE` naming ``farthest``."""
        found = self._stall
        if found is None:
            return None
        n = self.gp.n
        if found.get("checked_n") != n:  # data since: the map as it is now, the farthest anew
            found["holds"] = self._stall_anchor is not None and not self._map_moved(
                self._map_state()
            )
            if np.all(self.observed):  # (a distance, rounded, is not exactly 0 in 2-D and up)
                found["farthest"], found["farthest_distance"] = None, 0.0
            else:
                far, dist = self._farthest_candidate()
                found["farthest"], found["farthest_distance"] = far.tolist(), dist
            found["checked_n"] = n
        if not found["holds"]:
            return None
        k, answers = int(found["queries"]), n - int(found["since_n"])
        # the counts a sentence gives side by side say what they count: the last query may
        # be open (asked, not answered: a study page always holds one), and measurements
        # added between the queries are observations too (a newcomer read "22 queries over
        # 21 answers" as an error)
        answered = k - 1 if self.pending is not None else k
        added = max(answers - answered, 0)
        repeats = int(found["repeats"])
        if self.finite:
            measured = int(np.count_nonzero(self.observed))
        else:
            measured = int(np.unique(np.asarray(self.gp.X), axis=0).shape[0])
        near = "so close to measured ones that the model knew their values to within the "
        if repeats == k:
            which = "all at settings already measured"
        elif repeats == 0:  # (a box: no query repeats a setting exactly)
            which = f"all at settings {near}measurement noise"
        else:
            which = (
                f"at settings already measured ({repeats}) or {near}measurement noise "
                f"({k - repeats})"
            )
        over = f"the {answered} answers given to them"
        if answered < k:
            over += f" (the last of the {k}, the open query, has no answer yet)"
        if added:
            some = f"{added} measurements" if added > 1 else "measurement"
            over += f" and the {some} added since the first of them"
        common = (
            f"the estimated map has stopped changing: the last {k} queries were {which}, and "
            f"no setting changed side of the threshold over {over}, other than settings beside "
            "the boundary that the model has not decided and that each answer tips one way or "
            "the other. "
        )
        far = found["farthest"]
        if far is None:
            finding = common + (
                f"Every one of the {measured} settings has been measured: more answers only "
                "sharpen the map's boundary, and you may stop here."
            )
            message = finding
        else:
            finding = common + (
                "The model is sure of the map everywhere else, so more answers to its queries "
                "are unlikely to change it. Either the map is finished, or a region far from "
                "every measurement hides something the model cannot see (a narrow bump or dip "
                "that the first points missed)."
            )
            where = ", ".join(f"{v:.4g}" for v in far)
            message = finding + " " + FARTHEST_ADVICE.format(where=f"x = ({where})")
        return {
            "answers": answers,
            "answered": answered,
            "added": added,
            "queries": k,
            "repeats": repeats,
            "measured_settings": measured,
            "farthest": None if far is None else list(far),
            "farthest_distance": float(found["farthest_distance"]),
            "finding": finding,
            "message": message,
        }
