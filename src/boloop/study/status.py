"""Where a study stands, in one vocabulary: :meth:`~StudyStatus.status` (the counts, the method's
own iteration and settings, the open query, the recommendation in parameter names, the last
answers, the warnings of :mod:`boloop.study.status_warnings`) and what a level-set estimate
leaves undecided (:func:`undecided_text`, in a person's words).

:class:`StudyStatus` is a mixin of :class:`~boloop.study.core.Study`, as
:class:`~boloop.study.replay.StudyReplay` and :class:`~boloop.study.snapshots.StudySnapshots`
are: it works on the study's own state. It includes :class:`StudyWarnings`, whose warnings it
gathers.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import numpy as np

from boloop.errors import BoloopError, InvalidInputError, NoMoreQueriesError
from boloop.spaces import CandidateSet, SafeSpace, Space
from boloop.study.history import _json_default
from boloop.study.log import Event, safe_url
from boloop.study.space_file import params_to_point
from boloop.study.status_warnings import StudyWarnings

if TYPE_CHECKING:
    from boloop.queries import Query
    from boloop.study.parameters import StudyQuery
    from boloop.study.readout import PolicyReadout

__all__ = ["StudyStatus", "undecided_text"]


#: the status vocabulary: what an answer to each query kind is called
_COUNT_NAME = {"evaluate": "evaluations", "label": "labels", "compare": "duels"}
#: ``describe()`` keys a status leaves out of the method's settings: the study shows them once
_NOT_SETTINGS = (
    "method",
    "family",
    "iteration",
    "queries_answered",
    "open_query",
    "evaluations",
    "labels",
    "duels",
    "expert_queries",
    "recommendation_index",
    "stall",  # a safe or level-set method's stall: the status's "stuck" and "warnings" say it
)


def _asks_no_more(policy: Any) -> str | None:
    """The policy's :meth:`~boloop.queries.BasePolicy.asks_no_more` as the sentence its ``ask``
    refuses with (None while it asks)."""
    reason = policy.asks_no_more()
    return None if reason is None else str(NoMoreQueriesError(reason))


def _index_in(space: Space, x: np.ndarray) -> int | None:
    """Index of ``x`` in a finite space (flat action index for a SafeSpace), else None."""
    if isinstance(space, CandidateSet | SafeSpace):
        i = int(space.index_of(x[None, :])[0])
        return i if i >= 0 else None
    return None


def _undecided_points(policy: Any, rec: Any) -> int | None:
    """How many candidates of a level-set estimate ``rec`` the policy's posterior leaves
    undecided (:func:`boloop.confidence.undecided`: the mean within 2
    standard deviations of the threshold, the light cells of the model picture); None when the
    policy has no model (:meth:`BasePolicy.predict` raises ``NotImplementedError``) or the
    estimate no points."""
    from boloop.confidence import undecided

    points = getattr(rec, "points", None)
    if points is None:
        return None
    try:
        mean, std = policy.predict(np.asarray(points))
    except (BoloopError, NotImplementedError):  # e.g. no data yet
        return None
    return int(np.count_nonzero(undecided(mean, std, float(rec.threshold))))


def undecided_text(n_undecided: int, asks_no_more: bool = False) -> str:
    """What ``n_undecided`` (a level-set status's count) means, in a person's words;
    ``asks_no_more``: the method asks nothing more (``status()["asks_no_more"]``), so no answer
    of the study will settle them."""
    from boloop.confidence import UNDECIDED_SD

    if n_undecided == 0:
        return (
            f"none still undecided: everywhere the model's value is more than {UNDECIDED_SD:g} "
            "standard deviations from the threshold"
        )
    settle = (
        "the method asks no more, so no answer of this study will settle them"
        if asks_no_more
        else "more answers settle them"
    )
    return (
        f"{n_undecided} still undecided: the model's value there is within {UNDECIDED_SD:g} "
        f"standard deviations of the threshold ({settle})"
    )


class StudyStatus(StudyWarnings):
    """The status of :class:`~boloop.study.core.Study` (a mixin: it works on the study's own
    state), with the warnings of :class:`StudyWarnings`. What it needs from the study is
    declared below (annotations only: no attribute is created here)."""

    # set by Study.__init__ and Study._set_problem
    method: str
    family: str
    seed: int
    options: dict[str, Any]
    problem: Any
    _labels: Sequence[str] | None  # the names of a table's options, or None
    # the replay state (StudyReplay)
    _events: list[Event]
    _effective: list[Event]
    _asked: dict[int, Event]
    _logged_open: set[int]
    # hooks of the host: Study (catching up with the log, the open query, names, continuations)
    # and StudyHistory (a history row)
    refresh: Callable[[], None]
    continued_as: Callable[[], list[str]]
    _asked_query: Callable[[Query], StudyQuery]
    _label: Callable[[int | None], str | None]
    _row: Callable[[Event], dict[str, Any]]

    if TYPE_CHECKING:  # declared for the checker only, as the annotations above

        def readout(self, *, keep_policy: bool = True) -> AbstractContextManager[PolicyReadout]:
            """Study's read-only work on a copy of the policy."""
            ...

        @property
        def names(self) -> list[str]:
            """Study's property: the parameter names."""
            ...

        @property
        def description(self) -> str | None:
            """Study's property: the space file's description."""
            ...

        @property
        def moved(self) -> dict[str, Any] | None:
            """Study's property: where the study was moved, or None."""
            ...

    def _recommendation(self, r: PolicyReadout) -> Any:
        """The readout's recommendation; a level-set estimate's with ``n_undecided``, the
        number of its candidates still undecided (:func:`_undecided_points`)."""
        rec = r.recommend()
        if isinstance(rec, dict) and "n_upper" in rec:
            n_undecided = r.product("undecided points", self._policy, _undecided_points)
            if n_undecided is not None:
                rec["n_undecided"] = n_undecided
        return rec

    def status(self, last: int = 5, *, keep_policy: bool = True) -> dict[str, Any]:
        """Where the study stands, in one vocabulary (``docs/studies.md``, "status").

        ``answered``: answers in effect; ``counts``: ``evaluations`` (measured values, including
        ``added`` measurements), ``labels`` (accept/reject) and ``duels`` (which of two);
        ``withdrawn``; ``iteration`` and ``iteration_meaning``: the method's own count as its
        paper defines it; ``options``: the options given at creation; ``horizon`` (methods that
        plan for a number of answers, MR-LPF's T: ``value``, ``source``, ``left``);
        ``settings``: the method's settings in effect (its ``describe()``, defaults included);
        ``open_query``, ``recommendation`` (in parameter names; None before the first answer in
        effect: a method's favourite before any data names nothing), ``recommendation_meaning``,
        ``last_answers`` (the last ``last`` history rows); ``warnings``: what a person must not
        miss (a measured value over a safety limit; a research option in use that the method
        cautions against, its ``describe()["caution"]``; a method that is stuck); ``stuck``: the last
        of these on its own (None while the method makes progress), a notice rather than an alarm
        (once the study was continued, it names the continuation instead of the command that
        makes one); ``description``: the space file's description (or None); ``continued_as``:
        the studies of this storage that continue this one (:meth:`continued_as`);
        ``over_limit_next``: with a measured value over a safety limit, what the method does next
        and what to check before measuring again (None otherwise); ``noise``: the warnings that
        repeated measurements contradict a fixed noise variance; ``continue_command``: the one
        command that continues the study with every option its warnings suggest (None when they
        suggest none); each of those warnings names this same command, so whichever a person
        follows, no suggestion is lost; ``moved``: where ``boloop study migrate`` moved the
        study (:attr:`moved`; None while it lives here); ``asks_no_more``: once the method has
        no next query (MR-LPF after its horizon; a level-set method with
        ``allow_repeats=False`` once every candidate is measured), the sentence that says so and
        why, ``"the method asks no more: ..."``, as :meth:`ask` refuses with it
        (:class:`~boloop.errors.NoMoreQueriesError`); None while the method asks.

        ``keep_policy=False``, for a process that ends after the status (``boloop study
        status``): the recommendation and settings are read from the live policy itself, not a
        copy of it (a copy of a large policy costs its memory and page faults, read once), and
        the study rebuilds its policy from the log before its next operation. The status is the
        same either way.
        """
        if isinstance(last, bool) or not isinstance(last, numbers.Integral) or last < 0:
            raise InvalidInputError(f"last must be a non-negative integer, got {last!r}")
        self.refresh()
        counts = {"evaluations": 0, "labels": 0, "duels": 0, "added": 0}
        for ev in self._effective:
            if ev.kind == "added":
                counts["labels" if ev.payload.get("label") else "evaluations"] += 1
                counts["added"] += 1
            elif ev.kind == "told":
                kind = self._asked[ev.query_id].payload["query"]["kind"]
                counts[_COUNT_NAME[kind]] += 1
        answers = [e for e in self._effective if e.kind in ("told", "added")]
        pending = self._policy.pending
        policy = self._policy
        # what the live policy says, read before a readout that may read it live (keep_policy)
        live = {
            "counts": {k: v for k, v in counts.items() if v or k in policy.answer_counts},
            **policy.status_counts(),  # the method's own (COBOL: labels beside the budget)
            "withdrawn": sum(1 for e in self._events if e.kind == "withdrawn"),
            "iteration": int(policy.iteration),
            "iteration_meaning": policy.iteration_meaning,
            "options": dict(self.options),
            "horizon": self._horizon(),
            "asks_no_more": _asks_no_more(policy),
        }
        open_query = (
            None
            if pending is None or pending.id not in self._logged_open
            else self._asked_query(pending).to_dict()  # as ask() gives it, the sentence too
        )
        rec_meaning = policy.recommendation_meaning
        # recommend() and describe() on a copy: lazy fits may draw random numbers (see recommend)
        with self.readout(keep_policy=keep_policy) as r:
            if not answers:  # a method's favourite before any answer is no recommendation
                rec = None
            else:
                try:
                    rec = self._recommendation(r)
                except (BoloopError, NotImplementedError) as exc:  # e.g. no data yet
                    rec = f"not available yet ({exc})"
            described = dict(r.described)
        continued = self.continued_as()
        # the options the warnings suggest: one command carries them all (each warning says it)
        suggested = self._suggested_options(described, continued)
        together = self._continue_with(suggested) if suggested else None
        stuck = self._stuck(described, continued, suggested, together)
        alarms = self._over_limit(described)
        outliers = self._noise_outliers(described)
        noisy = self._noise_warnings(described, suggested, together, outliers)
        after_alarms = self._after_over_limit(described)
        # a method's caution about an option in use (e.g. the safe family's offset_g)
        caution = described.pop("caution", None)
        # the study's counts and iteration are shown once, in the study's vocabulary
        for key in _NOT_SETTINGS:
            described.pop(key, None)
        rec_label = None
        if self._labels is not None and isinstance(rec, dict) and set(rec) == set(self.names):
            try:
                rec_label = self._label(_index_in(self.space, params_to_point(self.space, rec)))
            except BoloopError:
                rec_label = None
        return {
            "name": self.name,
            "method": self.method,
            "family": self.family,
            "seed": self.seed,
            "description": self.description,
            "continued_as": continued,
            "moved": self.moved,
            "storage": safe_url(self.storage_url),
            "answered": len(answers),
            **live,
            "settings": json.loads(json.dumps(described, default=_json_default)),
            "open_query": open_query,
            "recommendation": rec,
            "recommendation_label": rec_label,
            "recommendation_meaning": rec_meaning,
            "last_answers": [self._row(e) for e in answers[-last:]] if last else [],
            "warnings": [
                *alarms,
                *noisy,
                *([caution] if caution else []),
                *([stuck] if stuck else []),
            ],
            "over_limit_next": after_alarms,
            "stuck": stuck,
            "noise": noisy,
            "noise_outliers": {
                output: {
                    "query_id": one.row.get("query_id"),
                    "params": dict(one.row.get("params") or {}),
                    "value": one.value,
                    "share": one.share,
                    "others": list(one.others),
                    "fits_without": one.fits_without,
                    "after": one.after,
                }
                for output, one in outliers.items()
            },
            "continue_command": together,
        }

    def _horizon(self) -> dict[str, Any] | None:
        """The planned number of answers of methods that plan for one (MR-LPF's T), where it
        came from (``option``, ``settings``, ``default``) and how many are left."""
        T = self._policy.horizon
        if T is None or isinstance(T, bool) or not isinstance(T, numbers.Integral):
            return None
        if "horizon" in self.options:
            source = "option"
        elif "budget" in self.problem.settings:
            source = "settings"
        else:
            source = "default"
        return {"value": int(T), "source": source, "left": max(0, int(T) - self._policy.iteration)}
