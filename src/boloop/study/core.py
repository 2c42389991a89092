"""Persistent studies: a policy whose every query and answer is logged, rebuilt exactly on load.

A :class:`Study` pairs a policy (built by ``make_policy`` from a stored configuration) with the
append-only event log of a :class:`~boloop.study.storage.Storage`. Every operation first catches
up with events other processes appended, then writes its own event in one transaction. Loading
replays the log through a fresh policy and checks that every replayed query equals the stored one;
a mismatch raises :class:`~boloop.errors.StorageError` naming the study and the boloop versions.

The study's parts live beside it: :mod:`boloop.study.replay` (the log into a policy, checked),
:mod:`boloop.study.snapshots` (policy snapshots: when, how, whose code),
:mod:`boloop.study.naming` (study names, notes, stored options); this module holds the
:class:`Study` class, its configuration and :func:`create_study`, :func:`load_study`,
:func:`list_studies`.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import logging
import math
import numbers
import os
import platform
import secrets
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

import boloop
from boloop._blas import one_blas_thread
from boloop.algorithms.registry import default_method, get_method, make_policy
from boloop.errors import (
    AnswerTypeError,
    BoloopError,
    InvalidInputError,
    NoMoreQueriesError,
    QueryStateError,
    StorageAccessError,
    StorageBusyError,
    StorageError,
    StorageNoAnswerError,
    StorageUnavailableError,
    StudyMovedError,
    UnknownIdError,
)
from boloop.problems.base import Problem
from boloop.queries import BasePolicy, Compare, Evaluate, Label, Query, check_query
from boloop.recommendations import BestPoint, SafeRecommendation
from boloop.spaces import Box, CandidateSet, SafeSpace, Space, format_value, params_text
from boloop.study.answers import (
    answer_text,
    number_texts,
    parse_answer,
    parse_duel,
    parse_measurement,
)
from boloop.study.carry import continuations, continued_among, readable_created_events
from boloop.study.log import (
    Event,
    SeqConflict,
    moved_mark,
    moved_message,
    safe_url,
    utc_words,
)
from boloop.study.measured import Measured, limit_label, what_to_measure
from boloop.study.measured import measured as measured_values
from boloop.study.naming import MAX_NOTE_CHARS as MAX_NOTE_CHARS  # moved; importable here too
from boloop.study.naming import _check_name, _check_note, _json_options
from boloop.study.pinning import pinned_defaults, policy_options
from boloop.study.readout import PolicyReadout
from boloop.study.replay import (
    StudyReplay,
    continue_command,
    decode_answer,
    decode_query,
    effective_events,
)
from boloop.study.snapshots import SNAPSHOT_AFTER_SECONDS as SNAPSHOT_AFTER_SECONDS
from boloop.study.snapshots import SNAPSHOT_COST_FACTOR as SNAPSHOT_COST_FACTOR
from boloop.study.snapshots import SNAPSHOT_MAX_BYTES as SNAPSHOT_MAX_BYTES
from boloop.study.snapshots import SNAPSHOTS_ENABLED as SNAPSHOTS_ENABLED
from boloop.study.snapshots import StudySnapshots
from boloop.study.space_file import (
    UserExperiment,
    build_experiment,
    check_family_keys,
    check_safety_limit,
    defined_params,
    defined_values,
    implied_family,
    load_space_file,
    normalise_space,
    params_to_point,
    pin_defaults,
    point_to_params,
)

if TYPE_CHECKING:  # SQLAlchemy loads only where a study is created or not a plain SQLite file
    from boloop.study.floor_search import Progress
    from boloop.study.sqlite_log import SQLiteLog
    from boloop.study.storage import StorageBackend, StorageTransaction

__all__ = ["Study", "StudyQuery", "create_study", "load_study", "list_studies"]

logger = logging.getLogger("boloop")

def _suggested(options: Mapping[str, float]) -> str:
    """Options a warning suggests as a command's ``--option KEY=VALUE`` words."""
    return "".join(f" --option {k}={v:g}" for k, v in options.items())


#: create_study's own arguments: never method options (``Study.try_options`` refuses them as
#: ``boloop study create --option`` does)
_CREATE_ARGUMENTS = frozenset(
    ("name", "method", "space", "problem", "storage", "seed", "family", "from_study",
     "from_storage", "load_if_exists")
)  # fmt: skip

CONFIG_FORMAT = 1
_MAX_RETRIES = 5


#: Method options that carry data (the expert family's); a study takes data as events instead.
DATA_OPTIONS = ("initial_labels", "initial_observations")

# -- queries with names ----------------------------------------------------------------------------
CALIBRATION_NOTE = (
    "this point is measured next whatever you answer: your answer, set against the measured "
    "value, tells the method how far to follow your judgement"
)


@dataclass(frozen=True)

class StudyQuery:
    """A query in the user's parameter names.

    ``params`` (Evaluate, Label) or ``a`` and ``b`` (Compare) map parameter names to values;
    ``outputs`` names the values an Evaluate answer must contain (empty: one number); ``label``,
    ``a_label``, ``b_label`` name options of a CSV table. ``query`` is the policy's query.
    ``calibration`` marks a label whose point is measured whatever the answer
    (:class:`boloop.queries.Label`).
    """

    id: int
    kind: str
    query: Query
    params: dict[str, float] | None = None
    a: dict[str, float] | None = None
    b: dict[str, float] | None = None
    outputs: tuple[str, ...] = ()
    label: str | None = None
    a_label: str | None = None
    b_label: str | None = None
    calibration: bool = False
    #: what is measured, in words (:meth:`Study.measured`): one entry per output of an
    #: evaluation (or one for its single value), with the name and unit the space file's
    #: ``[measurement]`` gives (None where it gives none); empty for labels and duels
    measured: tuple[Measured, ...] = ()
    #: each parameter's unit (:meth:`Study.units`), written after its value by :meth:`prompt`;
    #: not part of :meth:`to_dict` (the JSON of a query is as it was)
    units: Mapping[str, str] = field(default_factory=dict)
    #: an evaluation at a setting the expert rejected: why it is measured anyway, in one
    #: sentence (:meth:`Study.ask`; the expert family); written by :meth:`prompt`, and in
    #: :meth:`to_dict` (null when there is none) so that a program learns it as a person does
    rejected_before: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The query as JSON values: ``id``, ``kind``, ``params`` (or ``a``, ``b``), ``label``
        (or ``a_label``, ``b_label``) of a table's option, ``calibration`` (a label measured
        whatever the answer), ``outputs`` (an evaluation) and ``rejected_before`` (always
        there: the sentence, or None). What the API's ``ask``, ``boloop study ask --json`` and
        the status's ``open_query`` give."""
        d: dict[str, Any] = {"id": self.id, "kind": self.kind}
        if self.kind == "compare":
            d["a"] = self.a
            d["b"] = self.b
            if self.a_label is not None:
                d["a_label"], d["b_label"] = self.a_label, self.b_label
        else:
            d["params"] = self.params
            if self.label is not None:
                d["label"] = self.label
        if self.calibration:
            d["calibration"] = True
        if self.kind == "evaluate":
            d["outputs"] = list(self.outputs)
        d["rejected_before"] = self.rejected_before
        return d

    def prompt(self) -> str:
        """A one-paragraph description for a person."""

        def fmt(p: dict[str, float] | None, lab: str | None) -> str:
            body = params_text(p or {}, self.units)
            return f"{lab} ({body})" if lab else body

        if self.kind == "compare":
            return (
                f"query {self.id}: which is better?\n  A: {fmt(self.a, self.a_label)}\n"
                f"  B: {fmt(self.b, self.b_label)}"
            )
        if self.kind == "label":
            text = f"query {self.id}: accept or reject {fmt(self.params, self.label)}?"
            if self.calibration:
                text += f"\n  ({CALIBRATION_NOTE})"
            return text
        what = what_to_measure(self.measured, labelled=True)
        text = f"query {self.id}: measure {what} at {fmt(self.params, self.label)}"
        if self.rejected_before:
            text += f"\n  ({self.rejected_before})"
        return text


# -- configuration -------------------------------------------------------------------------------
def _family_of(method: str, family: str | None) -> str:
    """The family of ``method`` (``family`` picks one when several families have the id)."""
    return get_method(method, family).family


def _space_document(space: Any) -> dict[str, Any]:
    if isinstance(space, UserExperiment):
        return dict(space.spec)
    if isinstance(space, str | os.PathLike):
        return load_space_file(space)
    if isinstance(space, Box):
        return normalise_space(
            {
                "parameters": [
                    {"name": n, "low": float(lo), "high": float(hi)}
                    for n, lo, hi in zip(space.names, space.lower, space.upper)
                ]
            }
        )
    if isinstance(space, CandidateSet):
        return normalise_space(
            {"candidates": {"columns": list(space.names), "rows": space.points.tolist()}}
        )
    if isinstance(space, Mapping):
        return normalise_space(space)
    raise InvalidInputError(
        f"space must be a dict, a JSON/TOML/CSV file, a Box or a CandidateSet, got {type(space).__name__}"
    )


def _problem_from_config(config: Mapping[str, Any]) -> Problem:
    if config.get("problem") is not None:
        from boloop.problems import get

        return get(config["problem"])
    return build_experiment(config["space"], config["family"], name=config["name"])


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

def _as_typed(v: Any) -> str:
    """A parameter value for a command line: as people write it (``100``, not ``100.0``) where
    that is the same number, else every digit (a grid value such as 183.333333333333)."""
    short = format_value(v)
    try:
        return short if float(short) == float(v) else repr(float(v))
    except (TypeError, ValueError):
        return str(v)


# -- the study ---------------------------------------------------------------------------------------
class Study(StudyReplay, StudySnapshots):
    """A persistent ask/tell loop (use :func:`create_study` / :func:`load_study`).

    Attributes: ``name``, ``method``, ``family``, ``seed``, ``options``, ``pinned_defaults`` (the
    method's other defaults as they were at creation), ``policy_options`` (both, as the policy is
    built), ``problem`` (a registered problem or a :class:`UserExperiment`), ``space``,
    ``storage_url`` and ``config`` (as stored).
    """

    def __init__(
        self,
        storage: StorageBackend | SQLiteLog,
        study_id: int,
        name: str,
        events: list[Event],
        full_replay: bool = False,
    ) -> None:
        if not events or events[0].kind != "created":
            raise StorageError(f"study {name!r} in {storage.url!r} has no 'created' event")
        self._storage = storage
        self._sid = study_id
        self.name = name
        #: the time of the ``created`` event, that of the study's row too: with the name, what
        #: the study's id must still name in the storage (:meth:`_check_here`)
        self._created_at = events[0].created_at
        self.config: dict[str, Any] = events[0].payload
        try:
            self.method: str = self.config["method"]
            self.family: str = self.config["family"]
            self.seed: int = int(self.config["seed"])
            self.options: dict[str, Any] = dict(self.config.get("options", {}))
            pinned = self.config.get("pinned_defaults") or {}
            self.pinned_defaults: dict[str, Any] = dict(pinned)
        except (KeyError, TypeError, ValueError) as exc:
            raise StorageError(
                f"study {name!r}: stored configuration is unreadable: {exc}"
            ) from exc
        # the problem comes from a valid snapshot if there is one (no registry lookup, no
        # imports of other families), else it is built from the configuration in _rebuild
        self.problem: Problem | UserExperiment = None  # type: ignore[assignment]
        self._events: list[Event] = []
        self._full_replay = bool(full_replay)
        self._stale = False  # True: the in-memory state may be ahead of storage; reload first
        self._snapshot_off = False
        self._snapshot_cost = 0.0
        #: (the storage's study list, the studies continuing this one) of continued_as()
        self._continued: tuple[tuple[Any, ...], list[str]] | None = None
        self._generation = 0  # counts the policies _rebuild made (a readout's key names one)
        self._readout: PolicyReadout | None = None
        self._readout_lock = threading.RLock()
        self._rebuild(events)

    # -- public API ---------------------------------------------------------------------------------
    @property
    def storage_url(self) -> str:
        return self._storage.url

    @property
    def policy_options(self) -> dict[str, Any]:
        """The options the study's policy is built with: ``options`` over the method's defaults
        as they were when the study was created (``pinned_defaults``; :mod:`boloop.study.pinning`),
        so that a default changed by a later boloop does not change this study."""
        return policy_options(self.method, self.family, self.options, self.pinned_defaults)

    @property
    def names(self) -> list[str]:
        """The parameter names, in the order of the space's columns."""
        return list(self.space.names)

    @property
    def policy(self) -> BasePolicy:
        """The live policy (for introspection; answer through the study, not the policy)."""
        return self._policy

    @property
    def n_answered(self) -> int:
        """Answers and measurements in effect (withdrawn ones excluded)."""
        return sum(1 for e in self._effective if e.kind in ("told", "added"))

    @property
    def moved(self) -> dict[str, Any] | None:
        """Where ``boloop study migrate`` moved this study (its log's ``moved`` mark, as last
        caught up with): ``{"to": URL (password masked), "at": UTC time, "events": events
        copied}``, or None while the study lives here. A moved study refuses every write with
        :class:`StudyMovedError`; reads go on."""
        mark = moved_mark(self._events)
        if mark is None:
            return None
        return {
            "to": mark.payload.get("to"),
            "at": mark.created_at,
            "events": mark.payload.get("events"),
        }

    def _refuse_if_moved(self) -> None:
        mark = moved_mark(self._events)
        if mark is not None:
            raise StudyMovedError(moved_message(self.name, mark))

    def ask(self) -> StudyQuery:
        """The open query, issuing (and logging) a new one if none is open.

        A refresh never changes the question: while a query is unanswered, every process gets it
        again. A moved study (:attr:`moved`) refuses with :class:`StudyMovedError`, also while
        a query is open: its answer could not be stored here.
        """
        with one_blas_thread():  # the bits a replay of the log computes (boloop._blas)
            return self._ask()

    def _ask(self) -> StudyQuery:
        for _ in range(_MAX_RETRIES):
            self.refresh()
            self._refuse_if_moved()
            t0 = time.perf_counter()
            query = self._policy.ask()
            self._cost += time.perf_counter() - t0
            check_query(query, self.space, f"method {self.method!r}")
            if query.id in self._logged_open:
                self._maybe_snapshot()  # a costly load (a long replay) is paid once, not per call
                return self._asked_query(query)
            try:
                with self._write() as tx:
                    query = self._policy.ask()
                    if query.id not in self._logged_open:
                        self._append(tx, "asked", query.id, {"query": query.to_dict()})
                self._maybe_snapshot()
                return self._asked_query(query)
            except SeqConflict:
                self._reload()
        raise StorageBusyError(
            f"study {self.name!r}: too many concurrent writers, try again (nothing was stored)"
        )

    def _asked_query(self, query: Query) -> StudyQuery:
        """The open query in names, an evaluation at a setting the expert rejected with why it
        is measured anyway (:meth:`_rejected_before`)."""
        sq = self._wrap(query)
        if sq.kind == "evaluate":
            said = self._rejected_before(query)
            if said is not None:
                sq = dataclasses.replace(sq, rejected_before=said)
        return sq

    def _rejected_before(self, query: Query) -> str | None:
        """Why the open evaluation ``query`` is measured at a setting whose last label in
        effect (a query's or one the user added) is a reject, in one sentence; None where no
        label rejected it. The same setting is the expert family's: within
        :data:`~boloop.algorithms.expert.base.SAME_POINT` in every unit-cube coordinate. Why
        comes from the method (``proposed_by``: Xu et al.'s Algorithm 1 as COBOL runs it, the
        expert's veto binding the expert-augmented proposal, not GP-LCB's own step)."""
        from boloop.algorithms.expert.base import SAME_POINT

        read = getattr(self._policy, "proposed_by", None)  # the expert family's methods
        box = self.space.box if isinstance(self.space, CandidateSet) else self.space
        x = getattr(query, "x", None)
        if not callable(read) or not isinstance(box, Box) or x is None:
            return None

        def unit(point: Any) -> np.ndarray:
            u = box.to_unit(np.asarray(point, dtype=np.float64).reshape(1, -1))
            return np.clip(u[0], 0.0, 1.0)

        here = unit(x)
        for ev in reversed(self._effective):
            if ev.kind == "added" and ev.payload.get("label"):
                point, asked = ev.payload.get("x"), None
            elif ev.kind == "told":
                asked = self._asked[ev.query_id].payload["query"]  # type: ignore[index]
                if asked.get("kind") != "label":
                    continue
                point = asked.get("x")
            else:
                continue
            if point is None or np.max(np.abs(unit(point) - here)) > SAME_POINT:
                continue
            if bool(decode_answer(ev.payload.get("answer"))):
                return None  # accepted at its last label here
            break
        else:
            return None
        when = (
            f"at query {ev.query_id}"
            if ev.kind == "told"
            else f"in a label added at {utc_words(ev.created_at)}"
        )
        head = f"This setting was rejected {when}; the method measures it anyway"
        last = next((e for e in reversed(self._effective) if e.kind in ("told", "added")), None)
        if asked is not None and asked.get("calibration") and last is ev:
            return (
                f"{head}: that was a calibration question, measured whatever the answer, so "
                "that the measured value shows the method how far to follow the expert's "
                "judgement."
            )
        who = read(query.id)
        if who == "gp-lcb":
            return (
                f"{head} because its own model of the measurements (GP-LCB) ranks it the most "
                "promising setting: the expert's judgement steers the method's proposals, not "
                "this step."
            )
        if who == "expert":
            return (
                f"{head}: its proposal weighs all the expert's labels together, through its "
                "model of the expert's judgement, not each label as a veto."
            )
        if who == "initial":
            return (
                f"{head}: it is one of the random settings measured first, to start the "
                "method's model of the measurements."
            )
        if who == "random":
            return f"{head}: it is a setting drawn at random."
        return f"{head}."

    def tell(self, query_id: int | StudyQuery, answer: Any, note: str | None = None) -> None:
        """Answer query ``query_id`` (its id, or the :class:`StudyQuery` :meth:`ask` returned).
        One answer is one transaction.

        ``note``: an optional free text stored with the answer ("rejected: too close to the
        solvent's boiling point"), shown in the history and the export, never given to the method.

        Raises :class:`QueryStateError` for a query that is unknown or already answered (also by
        another process: of two tellers of the same query exactly one wins) and
        :class:`AnswerTypeError` for a wrong answer; nothing is stored then.
        """
        if isinstance(query_id, (StudyQuery, Query)):
            query_id = query_id.id
        if isinstance(query_id, bool) or not isinstance(query_id, numbers.Integral):
            try:
                query_id = int(str(query_id).strip())
            except ValueError:
                raise InvalidInputError(f"query_id must be an integer, got {query_id!r}") from None
        qid = int(query_id)
        note = _check_note(note)
        for _ in range(_MAX_RETRIES):
            try:
                with self._write() as tx:
                    self._check_open(qid)
                    pending = self._policy.pending
                    assert pending is not None
                    value = parse_answer(pending, self._by_label(pending, answer))
                    if qid not in self._logged_open:  # asked through .policy directly
                        self._append(tx, "asked", qid, {"query": pending.to_dict()})
                    payload: dict[str, Any] = {"answer": value}
                    if note:
                        payload["note"] = note
                    self._append(tx, "told", qid, payload)
                self._maybe_snapshot()
                return
            except SeqConflict:
                self._reload()
        raise StorageBusyError(
            f"study {self.name!r}: too many concurrent writers, try again (nothing was stored)"
        )

    def undo(self) -> dict[str, Any]:
        """Withdraw the last answer or measurement; returns its history row.

        The withdrawn query becomes the open query again. Raises :class:`QueryStateError` when
        there is nothing to undo.
        """
        for _ in range(_MAX_RETRIES):
            try:
                with self._write() as tx:
                    last = next(
                        (e for e in reversed(self._effective) if e.kind in ("told", "added")), None
                    )
                    if last is None:
                        raise QueryStateError(f"study {self.name!r}: there is no answer to undo")
                    row = self._row(last)
                    self._append(tx, "withdrawn", last.query_id, {"withdraws": last.seq})
                return row
            except SeqConflict:
                self._reload()
        raise StorageBusyError(
            f"study {self.name!r}: too many concurrent writers, try again (nothing was stored)"
        )

    def add(self, params: Mapping[str, Any], value: Any, note: str | None = None) -> None:
        """Record a measurement the user made on their own at ``params`` (named values).

        Only for methods that take measurements outside their own queries (their policy has
        ``add(x, value)``). The value is checked as an answer to an Evaluate query (a number, or
        for one measured value also ``f=...``; named values for several outputs) and stored as
        checked. The open query, if any, stays open, except for the expert family, whose
        methods refuse new data while a query is open (answer it first; nothing is stored).
        ``note``: free text stored with it (as :meth:`tell`'s), never given to the method.
        On a grid (or a table of options) ``params`` must name one of its points, a grid value
        also as a person writes it with fewer digits (193.333 for 580/3:
        :func:`boloop.spaces.axis_index`); the grid's own point is stored.
        """
        note = _check_note(note)
        x = params_to_point(self.space, params, "params")
        measured = parse_measurement(value)
        if isinstance(measured, float) and not math.isfinite(measured):
            raise InvalidInputError(f"value must be finite, got {value!r}")
        if isinstance(measured, dict) and not all(math.isfinite(v) for v in measured.values()):
            raise InvalidInputError(f"value must be finite, got {value!r}")
        # refuses a method that takes no measurements; names and finiteness as tell (nothing
        # stored); what is stored is the checked value (``f=0.1`` is the number 0.1, as for tell)
        _, (measured,) = self._policy.check_measurements(x[None, :], [measured])
        for _ in range(_MAX_RETRIES):
            try:
                with self._write() as tx:
                    payload: dict[str, Any] = {"x": x.tolist(), "answer": measured}
                    if note:
                        payload["note"] = note
                    self._append(tx, "added", None, payload)
                self._maybe_snapshot()
                return
            except SeqConflict:
                self._reload()
            except QueryStateError as exc:  # the method takes no data while a query is open
                raise self._open_query_first(exc, "measurement") from exc
        raise StorageBusyError(
            f"study {self.name!r}: too many concurrent writers, try again (nothing was stored)"
        )

    def label(self, params: Mapping[str, Any], accepted: Any, note: str | None = None) -> None:
        """Record a label the expert gave outside the loop: ``accepted`` (bool, ``True`` =
        accept) at ``params`` -- the counterpart of :meth:`add` for the expert family (the
        policy's ``add_labels``). Refused like an answer (bad point, non-boolean label, an open
        query the policy must see answered first), with nothing stored. ``note`` as in
        :meth:`add`."""
        note = _check_note(note)
        x = params_to_point(self.space, params, "params")
        if not isinstance(accepted, bool | np.bool_):
            raise InvalidInputError(f"accepted must be a bool (True = accept), got {accepted!r}")
        if not callable(getattr(self._policy, "add_labels", None)):
            raise InvalidInputError(
                f"method {self.method!r} does not take labels outside its own queries"
            )
        payload = {"x": x.tolist(), "answer": bool(accepted), "label": True}
        if note:
            payload["note"] = note
        for _ in range(_MAX_RETRIES):
            try:
                with self._write() as tx:
                    self._append(tx, "added", None, payload)
                self._maybe_snapshot()
                return
            except SeqConflict:
                self._reload()
            except QueryStateError as exc:  # the method takes no data while a query is open
                raise self._open_query_first(exc, "label") from exc
        raise StorageBusyError(
            f"study {self.name!r}: too many concurrent writers, try again (nothing was stored)"
        )

    def _open_query_first(self, exc: QueryStateError, what: str) -> QueryStateError:
        """The refusal of an outside datum while a query is open, naming the study and the query
        (a newcomer's trial: "answer the open query before adding observations" named
        neither)."""
        pending = self._policy.pending
        if pending is None:
            return QueryStateError(f"study {self.name!r}: {exc}")
        x = getattr(pending, "x", None)
        where = "" if x is None else f" at {params_text(self._params(x), self.units())}"
        return QueryStateError(
            f"study {self.name!r}: answer the open query {pending.id} ({pending.kind}{where}) "
            f"first (tell), then add this again: method {self.method!r} takes no {what} of your "
            "own while a query is open; nothing was stored"
        )

    def recommend(self) -> Any:
        """The policy's recommendation in parameter names (points become ``{name: value}``);
        None before the first answer, as :meth:`status` says (a method's favourite before any
        data is no recommendation).

        Computed on a copy of the policy: some policies fit their models lazily inside
        ``recommend`` and draw random numbers for it (the expert family), so calling it on the
        live policy would make the next query differ from a replay of the log. The copy is
        :meth:`readout`'s: asked again in the same state, nothing is copied again.
        """
        self.refresh()
        if self.n_answered == 0:
            return None
        with self.readout() as r:
            return self._recommendation(r)

    def _recommendation(self, r: PolicyReadout) -> Any:
        """The readout's recommendation; a level-set estimate's with ``n_undecided``, the
        number of its candidates still undecided (:func:`_undecided_points`)."""
        rec = r.recommend()
        if isinstance(rec, dict) and "n_upper" in rec:
            n_undecided = r.product("undecided points", self._policy, _undecided_points)
            if n_undecided is not None:
                rec["n_undecided"] = n_undecided
        return rec

    def history(self, last: int | None = None, *, withdrawn: bool = False) -> list[dict[str, Any]]:
        """Answers in effect, oldest first: rows with ``query_id, kind, source, params`` (or
        ``a``, ``b``), ``answer``, ``answer_text``, ``asked_at``, ``told_at`` (UTC), ``note`` (or None);
        ``calibration: True`` on a label whose point was measured whatever the answer (COBOL's
        agreement gate); only the ``last`` ones if given.

        ``withdrawn=True`` (an audit): the answers an undo withdrew too, with their notes, in
        the order they were given, and on every row ``withdrawn_at``: when it was withdrawn
        (UTC), None for an answer in effect."""
        if last is not None and (
            isinstance(last, bool) or not isinstance(last, numbers.Integral) or last < 0
        ):
            raise InvalidInputError(f"last must be a non-negative integer, got {last!r}")
        self.refresh()
        rows = self._withdrawn_too() if withdrawn else self._rows_in_effect()
        if last is not None:
            rows = rows[len(rows) - last :] if last else []
        return rows

    def _rows_in_effect(self) -> list[dict[str, Any]]:
        return [self._row(e) for e in self._effective if e.kind in ("told", "added")]

    def _withdrawn_too(self) -> list[dict[str, Any]]:
        """Every answer of the log in the order given, in effect or withdrawn, with
        ``withdrawn_at``; a withdrawn answer's query is the one asked before it in the log."""
        in_effect = {e.seq for e in self._effective if e.kind in ("told", "added")}
        undone = {e.payload.get("withdraws"): e for e in self._events if e.kind == "withdrawn"}
        asked: dict[int | None, Event] = {}
        rows = []
        for ev in self._events:
            if ev.kind == "asked":
                asked[ev.query_id] = ev
            elif ev.kind in ("told", "added") and (ev.seq in in_effect or ev.seq in undone):
                gone = undone.get(ev.seq) if ev.seq not in in_effect else None
                row = self._row(ev, asked.get(ev.query_id) if gone is not None else None)
                row["withdrawn_at"] = None if gone is None else gone.created_at
                rows.append(row)
        return rows

    def events(self) -> list[dict[str, Any]]:
        """The raw log (including withdrawn answers and stale queries): one dict per event."""
        self.refresh()
        return [
            {
                "seq": e.seq,
                "kind": e.kind,
                "query_id": e.query_id,
                "payload": e.payload,
                "created_at": e.created_at,
            }
            for e in self._events
        ]

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
            **{k: getattr(policy, k) for k in _LABEL_COUNTS if hasattr(policy, k)},
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

    @contextlib.contextmanager
    def readout(self, *, keep_policy: bool = True) -> Iterator[PolicyReadout]:
        """Read-only work on a copy of the policy (:mod:`boloop.study.readout`): what the
        copy's ``recommend()`` (in parameter names) and ``describe()`` gave, and :meth:`PolicyReadout.product` for
        more (the model picture). Made once per state of the study (a new event, a new open
        query or a reload makes a new one); the copy lives until the outermost scope using it
        ends, so a web page's status and model picture share one, and an unchanged study is
        read again with no copy. Readouts take a lock, asks and tells do not: a Study is not for
        use from several threads at once (the web server serves one request per study at a
        time). It reads the state last caught up with (callers :meth:`refresh` first, as their
        other reads need the same state).

        ``keep_policy=False`` (a process that ends after this read): a state not read yet is
        read from the live policy itself, no copy; the study then counts its policy as stale
        (rebuilt from the log before the next operation, never stored as a snapshot).
        """
        if self._stale:  # a policy read live, or ahead of storage: not what the log says
            self._reload()
        with self._readout_lock:
            key = self._readout_key()
            r = self._readout
            if r is None or r.key != key:
                r = PolicyReadout(self._policy, key, self._named, copy=keep_policy)
                if keep_policy:
                    self._readout = r
                else:  # recommend() may have changed the live policy (a lazy fit's draws)
                    self._readout = None
                    self._stale = True
                    self._cost = 0.0  # nothing to snapshot until a rebuild (save_snapshot)
            r.users += 1
            try:
                yield r
            finally:
                r.users -= 1
                if r.users == 0:
                    r.release()

    def _readout_key(self) -> tuple[int, int, int | None, int]:
        """What the live policy's state depends on: which policy (a reload makes a new one),
        the events applied to it, its open query (also one asked through ``.policy``) and its
        iteration."""
        pending = self._policy.pending
        return (
            self._generation,
            self._seq,
            None if pending is None else int(pending.id),
            int(self._policy.iteration),
        )

    def over_limit_alarms(self) -> list[str]:
        """Every measured value above the safety limit so far, in the words of
        :meth:`status`'s warnings, read from the live policy (no copy, no replay): what
        ``boloop study tell`` and ``add`` print when an answer adds one. ``[]`` for a method
        without a safety limit."""
        read = getattr(self._policy, "over_limit", None)
        return self._over_limit({"over_limit": read()}) if callable(read) else []

    def _over_limit(self, described: Mapping[str, Any]) -> list[str]:
        """Measured values over a safety limit that the method reported
        (``describe()["over_limit"]``, issue 18), each with its parameters: the alarms of a
        status's ``warnings`` (a stuck method, :meth:`_stuck`, is the other kind). An answer to
        one of the method's queries means the model had certified a setting that was not safe;
        a measurement the user added (:meth:`add`; the policy's entry has no query, id -1, as
        every measurement it did not propose) was never certified, and is said to be theirs."""
        out = []
        lowest = None
        if isinstance(self.space, SafeSpace):
            lowest = float(self.space.s_values[0])
        g = limit_label(self.measured())  # "toxicity (g, AU)" where the space names g
        for e in described.get("over_limit") or []:
            point = np.asarray(e["point"], dtype=np.float64)
            named = self._named(point)
            where = params_text(named, self.units()) if isinstance(named, dict) else named
            ours = e["query"] is None or int(e["query"]) < 0
            said = (
                f"your measurement at {where}: {g} = {e['g']:.4g} is above the limit "
                f"h = {e['h']:.4g}"
                if ours
                else f"query {e['query']}: measured {g} = {e['g']:.4g} above the limit "
                f"h = {e['h']:.4g} at {where}"
            )
            if lowest is not None and float(point[0]) == lowest:
                # the paper's S_0: the lowest level is assumed safe, so it stays allowed
                out.append(
                    f"{said}, the lowest {self.space.names[0]}, which the safe methods assume "
                    "safe (they start there): the method may still propose settings at that "
                    "level; check the process and the limit before going on"
                )
            elif ours:
                out.append(
                    f"{said}; the model now takes it into account and no longer certifies that "
                    "setting or higher ones"
                )
            else:
                out.append(
                    f"{said}: the model had certified it (or the process drifted); the method no "
                    "longer certifies that setting or higher ones and has become more cautious"
                )
        return out

    def _after_over_limit(self, described: Mapping[str, Any]) -> str | None:
        """What the method does after a measured g above the limit and what to check before
        measuring again, in words (a status's ``over_limit_next``); None when no value is over.
        Only says what the method does (M-SafeOpt's certified set, eq. 14: a setting whose
        measured g exceeds h, and every higher level of the monotone parameter at its other
        values, is no longer certified); it changes nothing."""
        entries = described.get("over_limit") or []
        if not entries:
            return None
        mono = self.space.names[0] if isinstance(self.space, SafeSpace) else None
        lowest = float(self.space.s_values[0]) if isinstance(self.space, SafeSpace) else None
        others = ", ".join(self.space.names[1:])
        higher = f", nor a higher {mono} with the same {others}" if mono else ", nor higher ones"
        check = (
            "Before you measure it, check that value (typed right? the instrument? did the "
            "process change?) and that the limit is the right one; if the value was a mistake "
            "and is the last answer, undo it and store the right one."
        )
        if lowest is not None and all(
            float(np.asarray(e["point"], dtype=np.float64)[0]) == lowest for e in entries
        ):
            return (
                f"What happens next: the method assumes the lowest {mono} is safe and may still "
                f"propose settings there. {check}"
            )
        return (
            "What happens next: the next query is a setting the model now believes is below "
            f"the limit; the method will not propose that setting again{higher}. " + check
        )

    def _suggested_options(
        self, described: Mapping[str, Any], continued: Sequence[str] = ()
    ) -> dict[str, float]:
        """The options the status's warnings suggest going on with: for a stuck method of a
        study not continued yet, ``min_lengthscale_g``
        (:meth:`_stuck`), and each fixed noise variance that repeated measurements contradict
        (its value at two significant digits, :meth:`_noise_warnings`)."""
        out: dict[str, float] = {}
        stall = described.get("stall")
        if isinstance(stall, Mapping) and stall.get("message") and not continued:
            floor = stall.get("suggested_min_lengthscale_g")
            if floor is not None:
                out["min_lengthscale_g"] = float(floor)
        for output, c in sorted((described.get("noise_check") or {}).items()):
            if isinstance(c, Mapping):
                out[str(c.get("option") or f"noise_{output}")] = float(f"{c['suggested']:.2g}")
        return out

    def _continue_with(self, options: Mapping[str, float]) -> str:
        """The command that continues the study with all its answers and ``options``."""
        return f"{continue_command(self.name, self._storage)}{_suggested(options)}"

    def _try_with(self, options: Mapping[str, float]) -> str:
        """The command that tries ``options`` on the study's answers, storing nothing
        (:meth:`try_options`)."""
        return self._try_command(_suggested(options))

    def _find_floor_command(self) -> str:
        """The command that searches the smallest ``min_lengthscale_g`` certifying more with the
        study's answers (:meth:`find_floor_g`), storing nothing."""
        return self._try_command(" --find-floor")

    def _try_command(self, words: str) -> str:
        """``boloop study try NAME`` with the storage option where needed, then ``words``."""
        import shlex

        from boloop.study.replay import storage_option

        where = storage_option(self.storage_url)
        return f"boloop study try {shlex.quote(self.name)}{where}{words}"

    def _also(self, own: str, suggested: Mapping[str, float] | None) -> str:
        """What the one command carries besides a warning's own option ``own``, in words ("" when
        it carries that option alone)."""
        others = [k for k in suggested or {} if k != own]
        if not others:
            return ""
        said = ", ".join(
            f"{k} = {suggested[k]:g}, from "  # type: ignore[index]
            + ("the warning that the certified set no longer grows" if k == "min_lengthscale_g" else
               "the warning about repeated measurements")
            for k in others
        )  # fmt: skip
        return (
            "one command for every option the warnings here suggest, so that no advice is lost "
            f"whichever you follow: it also sets {said}"
        )

    def _noise_outliers(self, described: Mapping[str, Any]) -> dict[str, Any]:
        """Per output whose repeated measurements contradict its fixed noise variance
        (``describe()["noise_check"]``), the one answer that makes most of that scatter
        (:func:`boloop.study.scatter.one_answer_scatter`), where one does."""
        from boloop.study.scatter import one_answer_scatter

        checked = sorted((described.get("noise_check") or {}).items())
        if not checked:
            return {}
        rows = self._rows_in_effect()
        out = {}
        for output, c in checked:
            if isinstance(c, Mapping):
                one = one_answer_scatter(rows, output, float(c["assumed"]), int(c["df"]))
                if one is not None:
                    out[output] = one
        return out

    def _noise_warnings(
        self,
        described: Mapping[str, Any],
        suggested: Mapping[str, float] | None = None,
        together: str | None = None,
        outliers: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """A fixed noise variance that repeated measurements contradict
        (``describe()["noise_check"]``, :mod:`boloop.gp.repeats`), in words, with the command
        that continues the study with the variance the repeats support: ``together`` (the
        command of :meth:`status` carrying every option ``suggested`` by its warnings) when
        given, else one with this option alone. Where one answer makes most of the scatter
        (``outliers``, :meth:`_noise_outliers`; a slip among readings that agree), the warning
        names it and says to check it, and undo it if it was a mistake, before the noise."""
        out = []
        checked = sorted((described.get("noise_check") or {}).items())
        if outliers is None:
            outliers = self._noise_outliers(described)
        # the space file's names (the side effect, the hardness) where it gives them
        measured = {m.output or "value": m for m in self.measured()} if checked else {}
        for output, c in checked:
            if not isinstance(c, Mapping):
                continue
            option = str(c.get("option") or f"noise_{output}")
            m = measured.get(output)
            what = m.noun() if m is not None else output
            if what == "the value":
                what = "the measured value"
            value = float(f"{c['suggested']:.2g}")
            cost = f" ({c['cost']})" if c.get("cost") else ""
            command = together or self._continue_with({option: value})
            text = (
                f"Repeated measurements of {what} at the same setting scatter more than "
                f"{option} = {c['assumed']:.3g} allows (a standard "
                f"deviation of {math.sqrt(c['assumed']):.3g}): at {c['settings']} setting"
                f"{'s' if c['settings'] != 1 else ''} measured more than once their standard "
                f"deviation is {math.sqrt(c['variance']):.3g} ({c['df']} repeats; so much scatter "
                "has a chance below 1 in 1,000 under the assumed noise). "
            )
            one = outliers.get(output)
            trusts = f"the model trusts each measurement of {what} too much{cost}"
            if one is None:
                text += f"{trusts[0].upper()}{trusts[1:]}. Measure"
            elif one.fits_without is False:  # (None: the others alone cannot be tested)
                text += self._one_answer_words(one, what, m, option)
                text += f"Either way {trusts}: measure"
            else:
                text += self._one_answer_words(one, what, m, option)
                text += f"If that answer is right, {trusts}: measure"
            text += (
                f" the noise and set {option}; the repeats"
                f"{' (that answer included)' if one is not None else ''} support about "
                f"{value:g} (the upper end of its 95% interval). A study keeps its options: run "
                f"{command}" + (f" ({also})" if (also := self._also(option, suggested)) else "")
            )
            out.append(text)
        return out

    def _one_answer_words(
        self, one: Any, what: str, measured: Measured | None, option: str
    ) -> str:
        """The sentences of a noise warning that name the answer making most of the scatter
        (:class:`boloop.study.scatter.OneAnswerScatter`) and say to check it first, and how to
        undo it (``undo`` withdraws from the last answer back)."""
        import shlex

        from boloop.study.replay import storage_option
        from boloop.study.scatter import others_read

        def amount(v: float) -> str:
            return measured.amount(v) if measured is not None else f"{v:g}"

        row = one.row
        who = (
            f"query {row['query_id']}"
            if row.get("query_id") is not None
            else f"the measurement added at {utc_words(str(row.get('told_at')))}"
        )
        read = others_read(one.others, amount)
        undo = f"boloop study undo {shlex.quote(self.name)}{storage_option(self.storage_url)}"
        if one.after == 0:
            how = f"it is the last answer: undo it ({undo}) and store the right value"
        else:
            later = f"{one.after} answer{'s' if one.after != 1 else ''}"
            how = (
                f"{undo} withdraws the last answer first, so undoing it withdraws the {later} "
                "given after it too (the log keeps them): give those again after the right value"
            )
        rest = (
            f"; without it the other repeats scatter no more than {option} allows"
            if one.fits_without
            else f"; without it the other repeats still scatter more than {option} allows"
            if one.fits_without is False
            else ""  # too few others to test
        )
        return (
            f"One answer makes {math.floor(100 * one.share + 1e-9)}% of that scatter: {who}, "
            f"where {what} read "
            f"{amount(one.value)} at {params_text(row.get('params') or {}, self.units())} and "
            f"the {len(one.others)} other measurements there {read}{rest}. Check that answer "
            "before you change the noise (typed right? a misplaced decimal point? the "
            f"instrument?): if it was a mistake, {how}. A larger {option} would carry the "
            "mistake into a new study as noise. "
        )

    def _stuck(
        self,
        described: Mapping[str, Any],
        continued: Sequence[str] = (),
        suggested: Mapping[str, float] | None = None,
        together: str | None = None,
    ) -> str | None:
        """A method that stopped making progress (``describe()["stall"]``), in words: a safe
        method that cannot certify more, with the
        command that continues the study with the option that may help (``together``, the one
        command of :meth:`status` carrying every option ``suggested`` by its warnings, when
        given), or, once the study was continued, the name of the study that continues it; None
        otherwise. The method's message is used as it stands: its count of answers without
        growth is the method's own (answers and added measurements since its certified set
        last grew, the same whether a query is open or not). A level-set method whose estimated
        map stopped changing (:meth:`LevelSetPolicy.stall`) is said with the setting farthest
        from every measurement in parameter names and the command that adds a measurement
        there (:meth:`_farthest_in_words`)."""
        stall = described.get("stall")
        if isinstance(stall, Mapping) and stall.get("message"):
            text = str(stall["message"])
            unit = self.units().get(str(stall.get("axis")))
            words = getattr(self._policy, "stall_message", None)
            if unit and callable(words):  # the monotone parameter's values with their unit
                text = words(stall, unit)
            far = stall.get("farthest")
            floor = stall.get("suggested_min_lengthscale_g")
            if far is not None and stall.get("finding"):
                text = self._farthest_in_words(str(stall["finding"]), far) or text
            if continued:
                text += f" This study was continued as {', '.join(map(repr, continued))}."
            elif floor is not None:  # a study's options are fixed: a new study carries the answers
                n = self.n_answered
                also = self._also("min_lengthscale_g", suggested) if together else ""
                text += (
                    f" A study keeps the options it was created with: to go on with "
                    f"min_lengthscale_g = {floor:g} and all {n} answers, run "
                    f"{together or self._continue_with({'min_lengthscale_g': floor})} ("
                    + (f"{also}; or give them" if also else "or give it")
                    + " in a new space file's [settings]). See first what it would certify "
                    "with these answers, storing nothing: "
                    + self._try_with(
                        suggested if together and suggested else {"min_lengthscale_g": floor}
                    )
                    + " (the assumption may not be enough: "
                    + self._find_floor_command()
                    + " finds the smallest min_lengthscale_g that certifies more with these "
                    "answers, with g's model as it is and without its trend, trend_g=false)"
                )
            return text
        return None

    def _farthest_in_words(self, finding: str, point: Sequence[float]) -> str | None:
        """A level-set stall in words (``describe()["stall"]``): the method's ``finding`` and
        its advice (:data:`~boloop.algorithms.levelset.policies.FARTHEST_ADVICE`) with the
        candidate farthest from every measurement in parameter names, each value with its unit
        (:meth:`units`: ``the farthest is temperature=180 °C``; the method knows no units), and
        the command that records a measurement made there (values as typed, no units); None
        when the point has no parameter names."""
        import shlex

        from boloop.algorithms.levelset.policies import FARTHEST_ADVICE
        from boloop.study.replay import storage_option

        try:
            named = self._params(np.asarray(point, dtype=np.float64))
        except BoloopError:
            return None
        given = ",".join(f"{k}={_as_typed(v)}" for k, v in named.items())
        first = (
            "answer the open query with the study's pages closed (an open page asks the next "
            "query at once, and add waits for no open query), then "
            if self._policy.pending is not None
            else "with the study's pages closed (an open page asks the next query at once), "
        )
        return (
            f"{finding} {FARTHEST_ADVICE.format(where=params_text(named, self.units()))}"
            f" To add a measurement of your own, {first}run boloop study add "
            f"{shlex.quote(self.name)} {shlex.quote(given)} VALUE"
            f"{storage_option(self.storage_url)}: a value the map does not expect changes the "
            "model, and the method looks again. If the map is what you expected, more answers "
            "will mostly re-measure its boundary: you may stop here."
        )

    def _horizon(self) -> dict[str, Any] | None:
        """The planned number of answers of methods that plan for one (MR-LPF's T), where it
        came from (``option``, ``settings``, ``default``) and how many are left."""
        T = getattr(self._policy, "horizon", None)
        if T is None or isinstance(T, bool) or not isinstance(T, numbers.Integral):
            return None
        if "horizon" in self.options:
            source = "option"
        elif "budget" in self.problem.settings:
            source = "settings"
        else:
            source = "default"
        return {"value": int(T), "source": source, "left": max(0, int(T) - self._policy.iteration)}

    def export(self, path: str | os.PathLike[str], *, withdrawn: bool = False) -> None:
        """Write the history to ``path``: ``.csv`` (one row per answer) or ``.json`` (config,
        history and recommendation). ``withdrawn=True`` (an audit) includes the answers an undo
        withdrew, with their notes, and a ``withdrawn_at`` column (empty, or null in JSON, for
        an answer in effect): :meth:`history` with ``withdrawn=True``."""
        path = os.fspath(path)
        ext = os.path.splitext(path)[1].lower()
        if ext not in (".csv", ".json"):
            raise InvalidInputError(f"path must end in .csv or .json, got {path!r}")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise InvalidInputError(
                f"cannot write {path!r}: the directory {folder!r} does not exist"
            )
        hist = self.history(withdrawn=withdrawn)
        try:
            self._write_export(path, ext, hist, withdrawn)
        except OSError as exc:
            raise InvalidInputError(f"cannot write {path!r}: {exc.strerror or exc}") from exc

    def _write_export(
        self, path: str, ext: str, hist: list[dict[str, Any]], withdrawn: bool = False
    ) -> None:
        # the history's and the recommendation's grid values are already as the space file
        # defines them (0.6, not linspace's 0.6000000000000001: :meth:`_params`); answers and a
        # box's coordinates as they are
        if ext == ".json":
            try:
                rec = self.recommend()
            except (BoloopError, NotImplementedError):
                rec = None
            doc = {"study": self.config, "history": hist, "recommendation": rec}
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(doc, fh, indent=2, default=_json_default)
            return
        cols, rows = self._flat_rows(hist)
        if withdrawn:  # empty for an answer in effect
            cols.append("withdrawn_at")
            for flat, r in zip(rows, hist):
                flat["withdrawn_at"] = r.get("withdrawn_at") or ""
        with open(path, "w", encoding="utf-8", newline="") as fh:
            # "\n" line ends: the same bytes from the API, the CLI and the web page's export
            w = csv.DictWriter(fh, fieldnames=cols, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)

    def refresh(self) -> None:
        """Catch up with events other processes appended (a reading transaction)."""
        if self._stale:  # a failed write could not reload (the storage was unreachable)
            self._reload()
        new = self._read_log(self._seq)
        if new:
            self._apply_new(new)

    # -- internals: the log ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _write(self) -> Iterator[StorageTransaction]:
        """A writing transaction that first catches up with the log; when the transaction or the
        body fails after events were applied to the policy, the study reloads from storage."""
        if self._stale:
            self._reload()
        cm = self._storage.transaction(write=True)
        tx = cm.__enter__()
        try:
            new = tx.events(self._sid, after=self._seq)
            # an id whose study was removed (migrate --undo) writes nothing, anywhere
            self._check_here(tx)
            if new:
                self._apply_new(new)
            # inside the transaction: a migrate that marks the study queues behind it, or this
            # write behind the migrate, which then sees the mark (storage_migrate)
            self._refuse_if_moved()
        except BaseException as exc:
            # rolled back; a database error (a lost connection) comes out as a StorageError
            cm.__exit__(type(exc), exc, exc.__traceback__)
            raise
        self._dirty = False
        try:
            yield tx
        except BaseException as exc:
            self._end_write(cm, exc)
            raise
        self._end_write(cm, None)

    def _end_write(self, cm: Any, exc: BaseException | None) -> None:
        try:
            if exc is None:
                cm.__exit__(None, None, None)
            else:
                cm.__exit__(type(exc), exc, exc.__traceback__)
        except BaseException as failed:
            if self._dirty:
                self._recover(failed)
            raise
        if exc is not None and self._dirty:
            self._recover(exc)

    def _recover(self, exc: BaseException) -> None:
        """Reload after a failed write (``exc``) whose events the policy had already seen; if
        the storage cannot be read either (a lost connection), the next operation reloads
        first. A database that did not answer (:class:`StorageNoAnswerError`) is not asked
        again at once: the next operation reloads (the caller is told now, not after one more
        wait)."""
        self._stale = True
        if isinstance(exc, StorageNoAnswerError):
            return
        try:
            self._reload()
        except BoloopError as exc:
            logger.debug("study %r: reload after a failed write deferred: %s", self.name, exc)

    def _append(
        self,
        tx: StorageTransaction,
        kind: str,
        query_id: int | None,
        payload: dict[str, Any],
    ) -> None:
        """Append an event after the last one seen and apply it to the policy, inside the
        transaction: if the policy refuses it, nothing is committed."""
        ev = tx.append(self._sid, self._seq + 1, kind, query_id, payload)
        self._dirty = True
        self._apply_new([ev])

    def _set_problem(self, problem: Problem | None) -> None:
        """The study's problem: ``problem`` (from a snapshot) or, if none is set yet, the one the
        configuration builds."""
        if self.problem is None:
            self.problem = problem if problem is not None else _problem_from_config(self.config)
        self.space: Space = self.problem.space
        self._labels = getattr(self.problem, "labels", None)
        self._defined: tuple[Space, list[dict[float, float]] | None] | None = None

    def _params(self, x: Any) -> dict[str, float]:
        """A point (d,) of the space in parameter names as people read it: its grid values as
        the space file defines them (183.333333333333, not linspace's 183.33333333333334:
        :func:`~boloop.study.space_file.defined_values`), the same values the CSV export
        writes; other values (a box's coordinates) as they are. Only what is shown: the log
        keeps the points as they were computed."""
        return defined_params(self.space, point_to_params(self.space, x), self._defined_values())

    def _defined_values(self) -> list[dict[float, float]] | None:
        """:func:`~boloop.study.space_file.defined_values` of the space, computed once."""
        if self._defined is None or self._defined[0] is not self.space:
            self._defined = (self.space, defined_values(self.space))
        return self._defined[1]

    def _by_label(self, query: Query, answer: Any) -> Any:
        """A compare answered with an option's name (a text column of the table) -> 0 or 1."""
        if not isinstance(query, Compare) or not isinstance(answer, str) or self._labels is None:
            return answer
        key = answer.strip().lower()
        if parse_duel(key) is not None:
            return answer  # the grammar's words win over option names
        names = [self._label(query.a_index), self._label(query.b_index)]
        hits = [i for i, n in enumerate(names) if n is not None and n.strip().lower() == key]
        if len(hits) == 1:
            return hits[0]
        if len(hits) == 2:  # a table in which the duel's two options have one name
            raise AnswerTypeError(
                f"query {query.id}: both options are named {answer.strip()!r}; answer a or b"
            )
        if any(n.strip().lower() == key for n in self._labels):
            raise AnswerTypeError(
                f"query {query.id}: {answer.strip()!r} is an option of the table but not one of "
                f"this duel ({names[0]!r} or {names[1]!r}); answer a, b or one of those names"
            )
        return answer

    def _add_to_policy(self, x: np.ndarray, value: Any) -> None:
        """Give the policy a measurement it did not ask for (the contract's ``observe``): the
        history and the iteration count are untouched."""
        self._policy.observe(x[None, :], [value])

    def _check_open(self, qid: int) -> None:
        pending = self._policy.pending
        answered = {e.query_id for e in self._effective if e.kind == "told"}
        if qid in answered:
            told = next(e for e in self._effective if e.kind == "told" and e.query_id == qid)
            raise QueryStateError(
                f"study {self.name!r}: query {qid} was already answered at {told.created_at}"
            )
        if pending is None or pending.id != qid:
            now = (
                "no query is open (ask issues the next one)"
                if pending is None
                else f"the open query is {pending.id}"
            )
            asked = next(
                (e for e in reversed(self._events) if e.kind == "asked" and e.query_id == qid),
                None,
            )
            if asked is not None:  # asked, then closed by an undo of an earlier answer
                # (ids repeat once an undo takes the study back; an undo of its own answer
                # opens it again instead: the one that closed it withdrew an older answer)
                undo = next(
                    (
                        e
                        for e in self._events
                        if e.kind == "withdrawn"
                        and e.seq > asked.seq
                        and e.payload.get("withdraws", asked.seq) < asked.seq
                    ),
                    None,
                )
                when = f" at {undo.created_at}" if undo is not None else ""
                raise QueryStateError(
                    f"study {self.name!r}: query {qid} is no longer open: it was asked, then an "
                    f"undo{when} withdrew an answer given before it, which closed it; {now}"
                )
            raise QueryStateError(f"study {self.name!r}: query {qid} was never asked; {now}")

    # -- internals: names ---------------------------------------------------------------------
    def _label(self, index: int | None) -> str | None:
        if self._labels is None or index is None or not 0 <= index < len(self._labels):
            return None
        return self._labels[index]

    def _wrap(self, q: Query) -> StudyQuery:
        if isinstance(q, Compare):
            return StudyQuery(
                id=q.id,
                kind=q.kind,
                query=q,
                a=self._params(q.a),
                b=self._params(q.b),
                a_label=self._label(q.a_index),
                b_label=self._label(q.b_index),
                units=self.units(),
            )
        assert isinstance(q, Evaluate | Label)
        return StudyQuery(
            id=q.id,
            kind=q.kind,
            query=q,
            params=self._params(q.x),
            outputs=tuple(getattr(q, "outputs", ())),
            label=self._label(q.index),
            calibration=bool(getattr(q, "calibration", False)),
            measured=tuple(self.measured()) if q.kind == "evaluate" else (),
            units=self.units(),
        )

    def continued_as(self) -> list[str]:
        """The studies of this storage that continue this one (``create_study(NEW,
        from_study=...)``, ``boloop study create NEW --from ...``), oldest first, whatever URL
        this storage was opened with (:func:`boloop.study.carry.continuations`); read again
        only when the storage's list of studies changes."""
        key = tuple(self._storage.study_names())
        if self._continued is None or self._continued[0] != key:
            self._continued = (key, continuations(self._storage, self.name, key))
        return list(self._continued[1])

    @property
    def description(self) -> str | None:
        """The space file's ``description`` (what the study is, for people), or None."""
        text = (self.config.get("space") or {}).get("description")
        return str(text) if text else None

    def unusual_values(self, value: Any, params: Mapping[str, Any] | None = None) -> list[str]:
        """Questions to ask before storing the measured ``value`` (a number, or named numbers
        of a study with several outputs, as :meth:`tell` and :meth:`add` take them; text
        while a measurement is asked for is read as :meth:`tell` reads it, several values
        also without names in the outputs' order, ``"1.2 0.3"``): one per
        output whose value is far outside the values stored so far for it
        (:func:`boloop.study.plausibility.unusual_value`: a misplaced decimal point, a dropped
        digit). Empty when nothing is unusual or the value is not a measurement. Nothing is
        stored or refused: the study page asks before storing, ``boloop study tell`` and
        ``add`` warn after storing (undo withdraws), a program decides itself.

        ``params``: where the value was measured (named values, as :meth:`add` takes them);
        default: the open query's point. Where it is known, a value is also asked about when it
        is far from what the earlier values predict there and a slip explains it: a decimal
        point, a sign, or one keystroke of the number as typed (a digit typed twice, left out,
        swapped or a wrong key; the module's docstring). Text (``"0.50"``, ``"f=1,2; g=0.30"``,
        or named texts ``{"f": "0.50"}``) keeps those keystrokes; a number has its shortest
        text."""
        from boloop.study.plausibility import unusual_value

        pending = self._policy.pending
        outputs: tuple[str, ...] = ()
        try:
            if isinstance(value, str) and pending is not None and pending.kind == "evaluate":
                # as tell reads it: also several values in the outputs' order ("1.2 0.3")
                typed = parse_answer(pending, value)
                outputs = tuple(getattr(pending, "outputs", ()) or ())
            else:
                typed = parse_measurement(value)  # (named texts too: {"f": "0.50"})
        except BoloopError:
            return []
        # the text each number was typed as ("0.50", "723,4"): the keystrokes a slip edits
        texts = number_texts(value, outputs)
        if isinstance(typed, Mapping):
            new = {str(k): v for k, v in typed.items()}
        else:
            new = {"": typed}
        measured = self.measured()
        if len(new) == 1 and len(measured) == 1 and not measured[0].output:
            # one measured value: {"f": 7234} (as tell takes it too) is the value itself
            key = next(iter(new))
            new = {"": new[key]}
            texts = {"": texts[key]} if key in texts else {}
        earlier: dict[str, list[float]] = {k: [] for k in new}
        where: dict[str, list[Mapping[str, Any]]] = {k: [] for k in new}
        for row in self.history():
            if row["kind"] != "evaluate":
                continue
            old = row["answer"]
            old = old if isinstance(old, Mapping) else {"": old}
            if "" in new and len(old) == 1:  # one measured value: stored bare or as f=...
                old = {"": next(iter(old.values()))}
            for k in earlier:
                v = old.get(k)
                if isinstance(v, numbers.Real) and not isinstance(v, bool):
                    earlier[k].append(float(v))
                    where[k].append(row.get("params") or {})
        at, earlier_at = self._settings(params, pending, where)
        names = {m.output or "": m.noun() for m in measured}
        out = []
        for k, v in new.items():
            if not isinstance(v, numbers.Real) or isinstance(v, bool):
                continue
            text = unusual_value(
                float(v),
                earlier[k],
                names.get(k, k or "the value"),
                at=at,
                earlier_at=earlier_at.get(k) if at is not None else None,
                typed=texts.get(k),
            )
            if text is not None:
                out.append(text)
        return out

    def _settings(
        self, params: Mapping[str, Any] | None, pending: Query | None, where: dict[str, list]
    ) -> tuple[list[float] | None, dict[str, list[list[float]]]]:
        """The new value's setting (``params``, else the open measurement's point) and the
        earlier values' settings per output, as numbers per axis (:func:`point_to_params`
        gives every axis as a number; an earlier setting without an axis is NaN there), or None
        and no settings when the setting is unknown (the range rule alone)."""
        try:
            if params is not None:
                here = point_to_params(self.space, params_to_point(self.space, params))
            elif pending is not None and pending.kind == "evaluate":
                here = point_to_params(self.space, cast(Evaluate, pending).x)
            else:
                return None, {}
        except (BoloopError, TypeError, ValueError):
            return None, {}
        axes = list(here)

        def number(v: Any) -> float:
            real = isinstance(v, numbers.Real) and not isinstance(v, bool)
            return float(v) if real else math.nan

        at = [float(here[a]) for a in axes]
        return at, {k: [[number(p.get(a)) for a in axes] for p in rows] for k, rows in where.items()}

    def try_options(self, method: str | None = None, **options: Any) -> dict[str, Any]:
        """What this study would do with other ``options`` (or another ``method``), from its
        answers so far, with nothing stored: the study a continuation (``create_study(NEW,
        from_study=NAME, ...)``, ``boloop study create NEW --from NAME``) would be, built in a
        private in-process store, asked once and thrown away. Check an option before you
        continue a study with it, instead of spending measurements to find out: the stuck
        warning's ``min_lengthscale_g`` may not let the safe family certify more with the
        answers you have (with every measurement at one level of the monotone parameter, g's
        learned trend leaves the next level as uncertain whatever the smoothness floor).

        Returns ``method``, ``options`` (as the continuation would be created: this study's
        over-ridden by the ones given), ``answers`` (carried), ``next_query`` (the first query
        it would ask, :meth:`Query.to_dict`) and ``recommendation`` (:meth:`recommend`, in
        parameter names; for the safe family ``boundary_s``, the highest certified level per x
        row), beside ``now``, this study's recommendation, and ``continue_command``, the command
        that continues the study so. Refused as the continuation would be (a study of duels, an
        unknown option), with nothing stored anywhere."""
        import shlex
        import uuid

        from boloop.study.replay import continue_command
        from boloop.study.storage_memory import discard_memory_store

        own = sorted(k for k in options if k in _CREATE_ARGUMENTS)
        if own:
            raise InvalidInputError(
                f"{', '.join(own)}: not a method option but the study's own setting (an argument "
                "of create_study, not an --option): a trial keeps the study's space, seed and "
                "storage and tries method options (and another method with method=...) on its "
                "answers"
            )
        url = f"memory://try-{uuid.uuid4().hex}"
        try:
            trial = create_study(
                self.name,
                method,
                None,
                storage=url,
                from_study=self.name,
                from_storage=self.storage_url,
                **options,
            )
            q = trial.ask()
            given = "" if method is None else f" --method {shlex.quote(method)}"
            for k, v in options.items():
                text = v if isinstance(v, str) else json.dumps(v)
                given += f" --option {shlex.quote(f'{k}={text}')}"
            return {
                "method": trial.method,
                "options": dict(trial.config.get("options") or {}),
                "answers": trial.n_answered,
                "next_query": q.to_dict(),
                "recommendation": trial.recommend(),
                "now": self.recommend(),
                "continue_command": continue_command(self.name, self._storage) + given,
            }
        finally:
            discard_memory_store(url)

    def find_floor_g(self, progress: Progress | None = None) -> dict[str, Any]:
        """The smallest ``min_lengthscale_g`` (0.05, 0.10, ..., 1) under which this safe study,
        continued with its answers so far, would certify more than it does: for g's model as
        the study has it and without its trend along the monotone parameter (``trend_g=false``),
        each value tried as :meth:`try_options` tries it (nothing stored). What a stuck safe
        study needs to go on, found without spending measurements; an assumption about g that
        the person who knows the system must judge (:mod:`boloop.study.floor_search`, which
        gives the search, the result's keys and what ``progress`` is called with)."""
        from boloop.study.floor_search import find_floor_g

        return find_floor_g(self, progress)

    def units(self) -> dict[str, str]:
        """Each parameter's unit, by name, as the space file gives it (``unit = "mg"``): shown
        to people after the parameter's values (the web page, the question of ``boloop study
        ask`` and ``run``, the pictures' axes and tooltips), never read by the method. Empty
        where the space gives none (a table of options, a registered problem)."""
        space = self.config.get("space") or {}
        return {
            str(p["name"]): str(p["unit"]) for p in space.get("parameters") or [] if p.get("unit")
        }

    def measured(self) -> list[Measured]:
        """What is measured at each query, in words (:mod:`boloop.study.measured`): one entry
        per output (the safe family's ``f`` and ``g``) or one for the measured value; names and
        units come from the space file's ``[measurement]`` (None where it gives none)."""
        outputs = tuple((getattr(self.problem, "settings", None) or {}).get("outputs") or ())
        table = self.config.get("measurement") or (self.config.get("space") or {}).get(
            "measurement"
        )
        return measured_values(table, outputs)

    def _row(self, ev: Event, asked: Event | None = None) -> dict[str, Any]:
        """The history row of answer ``ev``; ``asked``: its query's event (default: the one in
        effect)."""
        answer = decode_answer(ev.payload.get("answer"))
        if ev.kind == "added":
            kind = "label" if ev.payload.get("label") else "evaluate"
            return {
                "query_id": None,
                "kind": kind,
                "source": "added",
                "params": self._params(ev.payload["x"]),
                "a": None,
                "b": None,
                "answer": answer,
                "answer_text": answer_text(kind, answer),
                "asked_at": None,
                "told_at": ev.created_at,
                "note": ev.payload.get("note"),
            }
        if asked is None:
            asked = self._asked[ev.query_id]  # type: ignore[index]
        sq = self._wrap(decode_query(asked, self.name))
        row = {
            "query_id": ev.query_id,
            "kind": sq.kind,
            "source": "query",
            "params": sq.params,
            "a": sq.a,
            "b": sq.b,
            "answer": answer,
            "answer_text": answer_text(sq.kind, answer),
            "asked_at": asked.created_at,
            "told_at": ev.created_at,
            "note": ev.payload.get("note"),
        }
        for key in ("label", "a_label", "b_label"):
            if getattr(sq, key) is not None:
                row[key] = getattr(sq, key)
        if sq.calibration:  # a label whose point was measured whatever the answer
            row["calibration"] = True
        return row

    def _flat_rows(self, hist: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
        names = self.names
        cols = ["query_id", "kind", "source", "asked_at", "told_at"]
        has = {k: any(r["kind"] == k for r in hist) for k in ("evaluate", "label", "compare")}
        if has["evaluate"] or has["label"]:
            cols += names
            if self._labels is not None:
                cols.append("label")
        if has["compare"]:
            cols += [f"a.{n}" for n in names] + [f"b.{n}" for n in names]
            if self._labels is not None:
                cols += ["a.label", "b.label"]
        outputs: list[str] = []
        for r in hist:
            if isinstance(r["answer"], dict):
                outputs += [k for k in r["answer"] if k not in outputs]
        if has["evaluate"]:
            cols += [f"value.{k}" for k in outputs] or ["value"]
            if outputs and any(
                not isinstance(r["answer"], dict) for r in hist if r["kind"] == "evaluate"
            ):
                cols.append("value")
        if has["label"]:
            cols.append("accepted")
            cols.append("calibration")  # always with labels, as "note": stable columns
        if has["compare"]:
            cols.append("preferred")
        cols.append("note")  # always, empty when none: scripts read exports of many studies
        rows = []
        for r in hist:
            out = {k: r.get(k) for k in ("query_id", "kind", "source", "asked_at", "told_at")}
            if r["params"] is not None:
                out.update(r["params"])
                if "label" in r:
                    out["label"] = r["label"]
            if r["a"] is not None:
                out.update({f"a.{k}": v for k, v in r["a"].items()})
                out.update({f"b.{k}": v for k, v in r["b"].items()})
                if "a_label" in r:
                    out["a.label"], out["b.label"] = r["a_label"], r["b_label"]
            ans = r["answer"]
            if r["kind"] == "evaluate":
                if isinstance(ans, dict):
                    out.update({f"value.{k}": v for k, v in ans.items()})
                else:
                    out["value"] = ans
            elif r["kind"] == "label":
                out["accepted"] = bool(ans)
                out["calibration"] = bool(r.get("calibration"))
            else:
                out["preferred"] = "a" if int(ans) == 0 else "b"
            out["note"] = r.get("note") or ""
            rows.append(out)
        return cols, rows

    def _named(self, rec: Any) -> Any:
        d = self.space.dim
        if type(rec) is BestPoint:  # the point in parameter names (None before any data)
            return self._named(rec.point)
        if isinstance(rec, SafeRecommendation):
            # by field, not by shape: best_s and boundary_s hold one level of s per x row (n_x
            # of them, which may be the space's dimension), the action is a point
            return {
                "point": None if rec.point is None else self._params(rec.point),
                "index": self._named(rec.index),
                "best_s": self._levels(rec.best_s),
                "best_s_index": (
                    None if rec.best_s_index is None else np.asarray(rec.best_s_index).tolist()
                ),
                "boundary_s": self._levels(rec.boundary_s),
            }
        if hasattr(rec, "upper") and hasattr(rec, "threshold") and hasattr(rec, "points"):
            # a level-set estimate (H_t, L_t): the points of the estimated upper set
            # (the estimate's own t is left out: status shows the study's one iteration count)
            out: dict[str, Any] = {"threshold": float(rec.threshold)}
            if rec.points is not None and rec.upper is not None:
                upper = np.asarray(rec.upper, dtype=bool)
                out["n_upper"] = int(upper.sum())
                out["n_candidates"] = int(upper.size)
                out["upper"] = [self._params(p) for p in rec.points[upper]]
            return out
        if dataclasses.is_dataclass(rec) and not isinstance(rec, type):
            return {
                f.name: self._named(getattr(rec, f.name))
                for f in dataclasses.fields(rec)
                if not callable(getattr(rec, f.name))
            }
        if isinstance(rec, Query):
            return self._wrap(rec).to_dict()
        if isinstance(rec, np.ndarray):
            if rec.ndim == 1 and rec.shape[0] == d:
                return self._params(rec)
            if rec.ndim == 2 and rec.shape[1] == d:
                return [self._params(r) for r in rec]
            return rec.tolist()
        if isinstance(rec, Mapping):
            return {str(k): self._named(v) for k, v in rec.items()}
        if isinstance(rec, list | tuple):
            return [self._named(v) for v in rec]
        if isinstance(rec, np.generic):
            return rec.item()
        return rec

    def _levels(self, s: np.ndarray | None) -> list[float] | None:
        """Levels of the monotone parameter (a safe recommendation's ``best_s``, ``boundary_s``:
        one per x row) as the space file defines them, like the points' values."""
        if s is None:
            return None
        table = (self._defined_values() or [{}])[0]
        return [table.get(v, v) for v in np.asarray(s, dtype=np.float64).reshape(-1).tolist()]

    def __repr__(self) -> str:
        return (
            f"Study(name={self.name!r}, method={self.method!r}, answered={self.n_answered}, "
            f"storage={safe_url(self.storage_url)!r})"
        )


def _asks_no_more(policy: Any) -> str | None:
    """The policy's :meth:`~boloop.queries.BasePolicy.asks_no_more` as the sentence its ``ask``
    refuses with (None while it asks)."""
    reason = policy.asks_no_more()
    return None if reason is None else str(NoMoreQueriesError(reason))


_LABEL_COUNTS = ("labels_asked", "labels_rejected")  # expert family: labels beside the budget


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
    policy has no ``predict`` or the estimate no points."""
    from boloop.confidence import undecided

    points = getattr(rec, "points", None)
    predict = getattr(policy, "predict", None)
    if points is None or not callable(predict):
        return None
    try:
        mean, std = predict(np.asarray(points))
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


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return str(obj)


# -- module functions ----------------------------------------------------------------------------
def create_study(
    name: str,
    method: str | None = None,
    space: Any = None,
    *,
    problem: str | Problem | None = None,
    storage: str | None = None,
    seed: int | None = None,
    family: str | None = None,
    load_if_exists: bool = False,
    from_study: str | None = None,
    from_storage: str | None = None,
    **options: Any,
) -> Study:
    """Create a study named ``name`` running ``method`` and store it.

    Parameters
    ----------
    name:
        Unique within the storage.
    method:
        A method id (``"randomized-straddle"``, ``"mr-lpf"``, ``"m-safeopt"``, ``"cobol"``...), or
        None for the family's default (:func:`boloop.algorithms.registry.default_method`: the
        ``preference`` family's is ``eubo-regret``; the family comes from the problem, ``family``
        or the space's ``family`` key).
    space:
        The user's experiment: a space document (dict), a ``.json``/``.toml``/``.csv`` file, a
        :class:`Box` or :class:`CandidateSet` with names; or, as a string without a file suffix,
        a registered problem id (``"levelset/sinusoidal"``).
    problem:
        A registered problem id (or a problem built by ``boloop.problems.get``) instead of a space:
        the study answers its queries by hand, with the problem's space and paper settings.
    storage:
        Storage URL; default ``$BOLOOP_STORAGE`` or ``sqlite:///boloop.db``.
    seed:
        The policy's seed; a random one is drawn and stored when None.
    family:
        The family, when the method id exists in several (``random``); taken from the problem
        or from the space's ``family`` key otherwise.
    load_if_exists:
        Load the existing study of that name instead of failing: a script that resumes. What
        the call gives (method, space or problem, options, seed, family) must be what the study
        was created with, else :class:`InvalidInputError` naming what differs (nothing stored);
        what it leaves out (no seed: a random one) is not compared.
    from_study:
        Continue this stored study (say, one whose log no longer replays with this boloop) with
        all its answers: its method, space or problem, options and seed unless given here, and
        every answer in effect recorded as outside data of the new study (measurements through
        :meth:`Study.add`, expert labels through :meth:`Study.label`); its log is read, never
        replayed. See :func:`boloop.study.carry.create_from`. ``load_if_exists`` is refused
        with it (an existing name is an error).
    from_storage:
        With ``from_study``: the storage holding it, when not ``storage``.
    options:
        Method options, passed to ``make_policy``; must be plain JSON values.

    Nothing is stored unless the policy can be built from this configuration (and, with
    ``from_study``, every answer is taken).
    """
    name = _check_name(name)
    if from_study is not None:
        if load_if_exists:
            raise InvalidInputError(
                "from_study creates a new study: it cannot be combined with load_if_exists"
            )
        from boloop.study.carry import create_from

        return create_from(
            name,
            from_study,
            method=method,
            space=space,
            problem=problem,
            storage=storage,
            from_storage=from_storage,
            seed=seed,
            family=family,
            options=options,
        )
    if from_storage is not None:
        raise InvalidInputError("from_storage is the storage of from_study: give from_study too")
    given_data = sorted(k for k in DATA_OPTIONS if k in options)
    if given_data:
        raise InvalidInputError(
            f"{', '.join(given_data)}: data you already have go into a study with Study.add "
            "(measurements) and Study.label (an expert's labels), or `boloop study add` / "
            "`boloop study label`: then they count in its status, history and export and can "
            "be undone, which options cannot"
        )
    if (
        isinstance(space, str)
        and problem is None
        and os.path.splitext(space)[1].lower() not in (".json", ".toml", ".csv")
        and not os.path.exists(space)
    ):
        space, problem = None, space
    if isinstance(space, Problem) and not isinstance(space, UserExperiment):
        space, problem = None, space
    if (space is None) == (problem is None):
        raise InvalidInputError("give exactly one of space (your experiment) and problem (an id)")
    given_seed = seed is not None
    if seed is None:
        seed = secrets.randbelow(2**31)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InvalidInputError(f"seed must be a non-negative integer, got {seed!r}")
    from boloop.study.storage import open_storage

    store = None
    if load_if_exists:
        store = open_storage(storage, create=True)
        if name in {n for n, _ in store.study_names()}:
            existing = load_study(name, storage=store.url)
            differs = _differs_from(
                existing.config, method, space, problem, seed if given_seed else None, family,
                options,
            )
            if differs:
                raise InvalidInputError(
                    f"study {name!r} exists in storage {safe_url(store.url)!r} with another "
                    f"configuration than the one given: {'; '.join(differs)}. load_if_exists "
                    "loads a study only as it was created (its answers were given to that "
                    "method); choose another name for a new study, load this one with "
                    "load_study, or continue its answers with other settings with "
                    "create_study(NEW, from_study=...)"
                )
            return existing
    if problem is not None:
        from boloop.problems import get

        prob = problem if isinstance(problem, Problem) else get(str(problem))
        if method is None:
            method = default_method(prob.family)
        family = _family_of(str(method), prob.family)
    else:
        doc = _space_document(space)
        if method is None:
            method = default_method(family or doc.get("family") or implied_family(doc))
        family = _family_of(str(method), family or doc.get("family"))
    method = str(method)
    config: dict[str, Any] = {
        "format": CONFIG_FORMAT,
        "name": name,
        "method": method,
        "family": family,
        "seed": int(seed),
        "options": _json_options(options),
        "problem": None,
        "space": None,
        "boloop_version": boloop.__version__,
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
    }
    if problem is not None:
        config["problem"] = prob.id
    else:
        config["space"] = pin_defaults(doc, family)
        check_family_keys(config["space"], family, method)
        check_safety_limit(config["space"], family, config["options"])
        if config["space"].get("measurement"):
            build_experiment(config["space"], family, name=name)  # does it fit the outputs?
            # shown to people only, and kept beside the space: a boloop that predates the key
            # still loads the study (its space reader refuses a key it does not know)
            config["measurement"] = config["space"].pop("measurement")
    read = _check_buildable(method, config)  # before the storage: a refused study creates nothing
    config["pinned_defaults"] = pinned_defaults(
        method, _problem_from_config(config), int(seed), config["options"], read
    )
    if store is None:
        store = open_storage(storage, create=True)
    sid = store.create_study(name, config)
    return Study(store, sid, name, store.events(sid))


def _differs_from(
    config: Mapping[str, Any],
    method: str | None,
    space: Any,
    problem: str | Problem | None,
    seed: int | None,
    family: str | None,
    options: Mapping[str, Any],
) -> list[str]:
    """What a ``create_study(..., load_if_exists=True)`` call asks for that the stored study
    ``config`` was not created with, in words (empty: the same study). Only what the call
    gives is compared: no method (the family's default), no seed (a random one) or no options
    compare equal to whatever was stored; a space compares on the keys and parameter fields
    it gives (the stored space has default grid sizes written in)."""
    out = []
    if method is not None and str(method) != config.get("method"):
        out.append(f"method {config.get('method')!r} (given: {str(method)!r})")
    if family is not None and family != config.get("family"):
        out.append(f"family {config.get('family')!r} (given: {family!r})")
    if seed is not None and int(seed) != config.get("seed"):
        out.append(f"seed {config.get('seed')!r} (given: {int(seed)})")
    stored_options = config.get("options") or {}
    # an option given at its value when the study was created (given then, or the method's
    # default then: the pinned defaults) is the same configuration
    effective = {**(config.get("pinned_defaults") or {}), **stored_options}
    given_options = _json_options(options) if options else {}
    if any(k not in effective or effective[k] != v for k, v in given_options.items()):
        out.append(f"options {stored_options!r} (given: {given_options!r})")
    if problem is not None:
        pid = problem.id if isinstance(problem, Problem) else str(problem)
        if pid != config.get("problem"):
            out.append(f"problem {config.get('problem')!r} (given: {pid!r})")
    elif space is not None:
        stored = config.get("space")
        if stored is None:
            out.append(f"problem {config.get('problem')!r} (given: a space)")
        else:
            given = _space_document(space)
            measurement = given.pop("measurement", None)
            if measurement is not None and measurement != config.get("measurement"):
                out.append("the space's [measurement]")
            for key, value in given.items():
                old = stored.get(key)
                if key == "parameters" and isinstance(value, list) and isinstance(old, list):
                    old = [
                        {k: v for k, v in o.items() if k in g} if isinstance(o, Mapping) else o
                        for o, g in zip(old, value)
                    ] + old[len(value) :]
                if old != value:
                    out.append(f"the space's {key!r}")
    return out


class _ReadTracker(dict):
    """A problem's settings that remember which keys a method factory looked up."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.read: set[str] = set()

    def __getitem__(self, key: Any) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.read.add(key)  # type: ignore[arg-type]
        return super().__contains__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)


def _builds_without(method: str, config: Mapping[str, Any], key: str) -> bool:
    """Whether the policy builds once option ``key`` is left out (to name a bad option)."""
    options = {k: v for k, v in config["options"].items() if k != key}
    try:
        make_policy(method, _problem_from_config(config), int(config["seed"]), **options)
    except (TypeError, ValueError, KeyError):
        return False
    return True


def _check_buildable(method: str, config: Mapping[str, Any]) -> set[str]:
    """Build the policy once from ``config`` before anything is stored; the settings keys the
    method read.

    A bad option value (``horizon="abc"``), a missing setting or a ``[settings]`` key of the
    space file that the method never reads is an :class:`InvalidInputError` naming it.
    """
    from boloop.algorithms.registry import build_policy
    from boloop.queries import PolicySpec

    problem = _problem_from_config(config)
    tracker = _ReadTracker(problem.settings)
    options = config["options"]
    spec = PolicySpec(  # make_policy's spec, with settings that record what the method reads
        method=method,
        family=problem.family,
        space=problem.space,
        settings=tracker,
        seed=int(config["seed"]),
        options=dict(options),
        source=str(getattr(problem, "id", "")),
    )
    try:
        build_policy(spec)
    except BoloopError:
        raise
    except (TypeError, ValueError, KeyError) as exc:
        reason = f"missing setting {exc}" if isinstance(exc, KeyError) else str(exc)
        culprits = [k for k in options if _builds_without(method, config, k)]
        if len(culprits) == 1:
            k = culprits[0]
            raise InvalidInputError(
                f"option {k}={options[k]!r} is not valid for method {method!r}: {reason}"
            ) from exc
        shown = ", ".join(f"{k}={v!r}" for k, v in options.items()) or "none"
        raise InvalidInputError(
            f"method {method!r} cannot be built with options ({shown}): {reason}"
        ) from exc
    user_settings = set((config.get("space") or {}).get("settings") or {})
    unread = sorted(user_settings - tracker.read)
    if unread:
        known = sorted(k for k in tracker.read if isinstance(k, str))
        raise InvalidInputError(
            f"the space's [settings] has {unread}, which method {method!r} does not read "
            f"(a typo?); the settings it reads: {', '.join(known) or 'none'}"
        )
    return {k for k in tracker.read if isinstance(k, str)}


def _open_existing(storage: str | None) -> StorageBackend | SQLiteLog:
    """The storage of existing studies: a plain SQLite file through Python's own sqlite3 (no
    SQLAlchemy import, issue 15's quick ``boloop study ask/tell``), anything else (and every
    refusal with its message) through :func:`~boloop.study.storage.open_storage`."""
    from boloop.study.sqlite_log import open_sqlite_log

    quick = open_sqlite_log(storage)
    if quick is not None:
        return quick
    from boloop.study.storage import open_storage

    return open_storage(storage, create=False)


def load_study(name: str, storage: str | None = None, *, full_replay: bool = False) -> Study:
    """Load study ``name``, replaying its log through a fresh policy.

    Every replayed query is checked against the stored one. A snapshot stored by the same code
    (see :mod:`boloop.study.storage`) stands in for the events before it unless ``full_replay``;
    the events after it are replayed and checked.

    Raises :class:`UnknownIdError` (listing the stored names) if there is no such study and
    :class:`StorageError` if the log does not replay to the same queries.
    """
    store = _open_existing(storage)
    sid = store.study_id(name)
    return Study(store, sid, name, store.events(sid), full_replay=full_replay)


def list_studies(storage: str | None = None) -> list[dict[str, Any]]:
    """The studies in a storage: ``name``, ``created_at``, ``method``, ``family``, ``answered``,
    ``open_query`` (the id of the query asked and not answered, or None), ``last_activity``
    (the time of the last event), ``continued_as`` (the studies of this storage that continue
    it, :meth:`Study.continued_as`), ``moved_to`` (where ``boloop study migrate`` moved it,
    password masked; None while it lives here) and ``unreadable``, read from the logs without
    replaying them.

    The storage counts what the logs hold in one statement (:meth:`log_summaries
    <boloop.study.storage.StorageBackend.log_summaries>`) and gives the studies' ``created``
    events in one more; a log is read only where the counts cannot say all (an undo, a
    migrate's mark, a row the storage cannot vouch for), so that listing costs little more as
    the studies grow long. A study whose log cannot be read (an event kind a newer boloop
    wrote, a corrupt row) does not fail the listing of the others: its row has
    ``unreadable``, why (None for the others), and None for what would come from its log. A
    storage that cannot be reached still fails."""
    store = _open_existing(storage)
    names = store.study_names()
    summaries = store.log_summaries() or {}
    counted = [n for n, _ in names if n in summaries and summaries[n].complete()]
    created_events = readable_created_events(store, counted) if counted else {}
    out = []
    firsts: dict[str, Event] = {}  # the created events of the readable logs, in creation order
    logs: dict[str, list[Event]] = {}  # the logs read
    for name, created_at in names:
        summary = summaries.get(name)
        if summary is not None and name in created_events and summary.complete():
            firsts[name] = first = created_events[name]
            answered = summary.kinds.get("told", 0) + summary.kinds.get("added", 0)
            out.append(
                _listed_row(name, created_at, first, answered, summary.open_query, summary.last_at, None)
            )
            continue
        try:
            events = store.events(store.study_id(name))
            effective = effective_events(events, name)
        except UnknownIdError:  # removed (migrate --undo) since the names were read
            continue
        except (StorageUnavailableError, StorageAccessError):
            raise  # the storage, not this study
        except StorageError as exc:
            out.append(_unreadable_row(name, created_at, str(exc)))
            continue
        logs[name] = events
        if events:
            firsts[name] = events[0]
        answered = len([e for e in effective if e.kind in ("told", "added")])
        told = {e.query_id for e in effective if e.kind == "told"}
        asked = [e.query_id for e in effective if e.kind == "asked" and e.query_id not in told]
        mark = moved_mark(events)
        out.append(
            _listed_row(
                name,
                created_at,
                events[0] if events else None,
                answered,
                asked[-1] if asked else None,
                events[-1].created_at if events else created_at,
                None if mark is None else mark.payload.get("to"),
            )
        )

    def log(name: str) -> list[Event] | None:
        """A listed study's log, for a continuation an earlier boloop recorded."""
        if name not in logs:
            try:
                logs[name] = store.events(store.study_id(name))
            except (StorageUnavailableError, StorageAccessError):
                raise
            except (UnknownIdError, StorageError):  # removed, or a newer kind written, since
                return None
        return logs[name]

    continued = continued_among(store.url, firsts, log)
    for row in out:
        row["continued_as"] = continued.get(row["name"], [])
    return out


def _listed_row(
    name: str,
    created: str,
    first: Event | None,
    answered: int,
    open_query: int | None,
    last_activity: str,
    moved_to: str | None,
) -> dict[str, Any]:
    """The :func:`list_studies` row of a study whose log can be read, its ``created`` event
    ``first`` (None: an empty log) giving the method, family and problem."""
    cfg = first.payload if first is not None else {}
    return {
        "name": name,
        "created_at": created,
        "method": cfg.get("method"),
        "family": cfg.get("family"),
        "problem": cfg.get("problem") or "user space",
        "answered": answered,
        "open_query": open_query,
        "last_activity": last_activity,
        "moved_to": moved_to,
        "unreadable": None,
    }


def _unreadable_row(name: str, created: str, why: str) -> dict[str, Any]:
    """The :func:`list_studies` row of a study whose log cannot be read: ``why``."""
    return {
        "name": name,
        "created_at": created,
        "method": None,
        "family": None,
        "problem": None,
        "answered": None,
        "open_query": None,
        "last_activity": created,
        "moved_to": None,
        "unreadable": why,
    }
