"""Persistent studies: a policy whose every query and answer is logged, rebuilt exactly on load.

A :class:`Study` pairs a policy (built by ``make_policy`` from a stored configuration) with the
append-only event log of a :class:`~boloop.study.storage.Storage`. Every operation first catches
up with events other processes appended, then writes its own event in one transaction. Loading
replays the log through a fresh policy and checks that every replayed query equals the stored one;
a mismatch raises :class:`~boloop.errors.StorageError` naming the study and the boloop versions.

The study's parts live beside it. Mixins of :class:`Study`, each working on the study's own
state: :mod:`boloop.study.replay` (the log into a policy, checked), :mod:`boloop.study.snapshots`
(policy snapshots: when, how, whose code), :mod:`boloop.study.history` (the answers as rows, the
raw log, the export), :mod:`boloop.study.status` (where the study stands) with
:mod:`boloop.study.status_warnings` (its warnings in words), :mod:`boloop.study.trials` (other
options tried on the answers, nothing stored), :mod:`boloop.study.parameters` (:class:`StudyQuery`
and the policy's points in the user's parameter names). Beside them: :mod:`boloop.study.naming`
(study names, notes, stored options), :mod:`boloop.study.create` (:func:`create_study`,
:func:`load_study`: the stored configuration), :mod:`boloop.study.listing` (:func:`list_studies`).
This module holds the :class:`Study` class itself (asking, answering, undoing, adding, the
writing transactions, the readout of a policy copy) and re-exports the public names that moved
out of it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import numbers
import threading
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from boloop._blas import one_blas_thread
from boloop.errors import (
    AnswerTypeError,
    BoloopError,
    InvalidInputError,
    QueryStateError,
    StorageBusyError,
    StorageError,
    StorageNoAnswerError,
    StudyMovedError,
)
from boloop.problems.base import Problem
from boloop.queries import BasePolicy, Compare, Evaluate, Query, check_query
from boloop.spaces import Box, CandidateSet, Space, params_text
from boloop.study.answers import (
    free_duel_words,
    number_texts,
    parse_answer,
    parse_duel,
    parse_measurement,
)
from boloop.study.carry import continuations
from boloop.study.create import CONFIG_FORMAT as CONFIG_FORMAT  # moved; importable here too
from boloop.study.create import DATA_OPTIONS as DATA_OPTIONS  # moved; importable here too
from boloop.study.create import _problem_from_config
from boloop.study.create import create_study as create_study  # moved; importable here too
from boloop.study.create import load_study as load_study  # moved; importable here too
from boloop.study.history import StudyHistory
from boloop.study.listing import list_studies as list_studies  # moved; importable here too
from boloop.study.log import (
    Event,
    SeqConflict,
    moved_mark,
    moved_message,
    safe_url,
    utc_words,
)
from boloop.study.naming import MAX_NOTE_CHARS as MAX_NOTE_CHARS  # moved; importable here too
from boloop.study.naming import _check_note
from boloop.study.parameters import CALIBRATION_NOTE as CALIBRATION_NOTE  # moved; importable
from boloop.study.parameters import StudyParameters
from boloop.study.parameters import StudyQuery as StudyQuery  # moved; importable here too
from boloop.study.pinning import policy_options
from boloop.study.readout import PolicyReadout
from boloop.study.replay import (
    StudyReplay,
    decode_answer,
)
from boloop.study.snapshots import SNAPSHOT_AFTER_SECONDS as SNAPSHOT_AFTER_SECONDS
from boloop.study.snapshots import SNAPSHOT_COST_FACTOR as SNAPSHOT_COST_FACTOR
from boloop.study.snapshots import SNAPSHOT_MAX_BYTES as SNAPSHOT_MAX_BYTES
from boloop.study.snapshots import SNAPSHOTS_ENABLED as SNAPSHOTS_ENABLED
from boloop.study.snapshots import StudySnapshots
from boloop.study.space_file import (
    UserExperiment,
    params_to_point,
    point_to_params,
)
from boloop.study.status import StudyStatus
from boloop.study.status import undecided_text as undecided_text  # moved; importable here too
from boloop.study.trials import StudyTrials

if TYPE_CHECKING:  # SQLAlchemy loads only where a study is created or not a plain SQLite file
    from boloop.study.sqlite_log import SQLiteLog
    from boloop.study.storage import StorageBackend, StorageTransaction

__all__ = ["Study", "StudyQuery", "create_study", "load_study", "list_studies"]

logger = logging.getLogger("boloop")

_MAX_RETRIES = 5


# -- the study ---------------------------------------------------------------------------------------
class Study(StudyReplay, StudySnapshots, StudyHistory, StudyStatus, StudyTrials, StudyParameters):
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
        label rejected it. The same setting is the method's (:attr:`BasePolicy.same_point`,
        the expert family's ``SAME_POINT``: within it in every unit-cube coordinate); a method
        without one gets no note. Why comes from the method (:meth:`BasePolicy.proposed_by`:
        Xu et al.'s Algorithm 1 as COBOL runs it, the expert's veto binding the
        expert-augmented proposal, not GP-LCB's own step)."""
        same_point = self._policy.same_point
        box = self.space.box if isinstance(self.space, CandidateSet) else self.space
        x = getattr(query, "x", None)
        if same_point is None or not isinstance(box, Box) or x is None:
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
            if point is None or np.max(np.abs(unit(point) - here)) > same_point:
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
        who = self._policy.proposed_by(query.id)
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
        accept) at ``params`` -- the counterpart of :meth:`add` for a method with
        ``accepts_labels`` (the expert family's COBOL; :meth:`BasePolicy.add_labels`). Refused
        like an answer (bad point, non-boolean label, an open query the policy must see answered
        first), with nothing stored; by a method without ``accepts_labels``, naming it. ``note``
        as in :meth:`add`."""
        note = _check_note(note)
        x = params_to_point(self.space, params, "params")
        if not isinstance(accepted, bool | np.bool_):
            raise InvalidInputError(f"accepted must be a bool (True = accept), got {accepted!r}")
        if not self._policy.accepts_labels:
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

    def _by_label(self, query: Query, answer: Any) -> Any:
        """A compare answered with an option's name (a text column of the table) -> 0 or 1."""
        if not isinstance(query, Compare) or not isinstance(answer, str) or self._labels is None:
            return answer
        key = answer.strip().lower()
        names = [self._label(query.a_index), self._label(query.b_index)]
        side = parse_duel(key)
        if side is not None:  # the grammar's words win over option names ...
            other = names[1 - side]
            if other is None or other.strip().lower() != key:
                return answer
            # ... but not over the name of the other option of this duel: which was meant?
            a, b = free_duel_words(names[0], names[1])
            raise AnswerTypeError(
                f"query {query.id}: {answer.strip()!r} is the word for "
                f"{'AB'[side]} ({names[side]!r}) and the name of {'AB'[1 - side]}; answer "
                f"{a[0]} for A ({names[0]!r}) or {b[0]} for B ({names[1]!r})"
            )
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

    def __repr__(self) -> str:
        return (
            f"Study(name={self.name!r}, method={self.method!r}, answered={self.n_answered}, "
            f"storage={safe_url(self.storage_url)!r})"
        )
