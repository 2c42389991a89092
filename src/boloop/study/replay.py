"""Replaying a study's event log into a policy, and checking it.

A study is its log (:mod:`boloop.study.storage`): ``created``, then ``asked``, ``told``,
``added`` and ``withdrawn`` events, and the marks ``moved`` / ``move_undone`` that say where the
study's live copy is (:data:`~boloop.study.log.MARK_KINDS`: never given to the policy).
:func:`effective_events` reduces it to the events in
effect (an undo withdraws an answer and the queries after it); :class:`StudyReplay` rebuilds the
policy from them, asking the policy again for every stored query and refusing, with a
:class:`~boloop.errors.StorageError` naming the boloop versions, a replay that asks anything
else: a changed algorithm cannot silently reinterpret old answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

import boloop
from boloop._blas import one_blas_thread
from boloop.algorithms.registry import get_method, make_policy
from boloop.errors import BoloopError, StorageError, StudyRemovedError
from boloop.queries import Query, query_from_dict
from boloop.study.log import MARK_KINDS, Event, removed_message

if TYPE_CHECKING:
    from boloop.queries import BasePolicy
    from boloop.study.sqlite_log import SQLiteLog
    from boloop.study.storage import StorageBackend, StorageTransaction

__all__ = [
    "StudyReplay",
    "continue_command",
    "decode_answer",
    "decode_query",
    "effective_events",
    "storage_option",
]


def effective_events(events: list[Event], name: str) -> list[Event]:
    """The events in effect: a ``withdrawn`` event removes the answer it names and every query
    issued after that answer. The marks (``moved``, ``move_undone``) are no data: left out."""
    stack: list[Event] = []
    for ev in events:
        if ev.kind in MARK_KINDS:
            continue
        if ev.kind != "withdrawn":
            stack.append(ev)
            continue
        target = ev.payload.get("withdraws")
        while stack and stack[-1].seq != target:
            dropped = stack.pop()
            if dropped.kind != "asked":
                raise StorageError(
                    f"study {name!r}: event {ev.seq} withdraws event {target}, which is not the "
                    "last answer"
                )
        if not stack or stack[-1].kind not in ("told", "added"):
            raise StorageError(f"study {name!r}: event {ev.seq} withdraws a missing answer")
        stack.pop()
    return stack


def continue_command(name: str, storage: StorageBackend | SQLiteLog) -> str:
    """The command that continues study ``name`` in a new study with all its answers
    (``boloop study create NEW --from NAME``), with a free name for NEW and ``--storage`` when
    the storage is not the default one."""
    import shlex

    new = _continued_name(name, storage)
    cmd = f"boloop study create {shlex.quote(new)} --from {shlex.quote(name)}"
    return cmd + storage_option(storage.url)


def _continued_name(name: str, storage: StorageBackend | SQLiteLog) -> str:
    """A free name for the study that continues ``name``: ``NAME-continued`` (``-2``, ...)."""
    try:
        taken = {n for n, _ in storage.study_names()}
    except BoloopError:
        taken = set()
    stem = name[: 255 - len("-continued-99")]  # names are at most 255 characters
    new = f"{stem}-continued"
    k = 2
    while new in taken:
        new, k = f"{stem}-continued-{k}", k + 1
    return new


def continue_call(name: str, storage: StorageBackend | SQLiteLog) -> str:
    """The Python call that continues study ``name`` with all its answers (what
    :func:`continue_command` runs), for a method only the user's code registers."""
    from boloop.study.log import safe_url

    new = _continued_name(name, storage)
    shown = safe_url(storage.url)
    where = "YOUR_STORAGE_URL" if shown != storage.url else repr(storage.url)
    return f"create_study({new!r}, from_study={name!r}, storage={where})"


def _users_method(method: str, family: str) -> str | None:
    """Where the user's code defines method ``method`` of ``family`` (``make_amb in amb.py``),
    or None for boloop's own methods (and one not registered)."""
    from boloop.algorithms.registry import defined_by

    try:
        entry = get_method(method, family)
    except BoloopError:
        return None
    module = getattr(entry.factory, "__module__", "") or ""
    if module == "boloop" or module.startswith("boloop."):
        return None
    return defined_by(entry.factory)


def storage_option(url: str) -> str:
    """`` --storage URL`` for a command line when ``url`` is not the default storage (the one
    ``--storage`` falls back to: ``$BOLOOP_STORAGE``, else ``sqlite:///boloop.db``), else ``""``.
    A URL with a password is not printed: the option then says where to put it."""
    import shlex

    from boloop.study.log import safe_url
    from boloop.study.storage import resolve_storage

    try:
        if resolve_storage(None) == resolve_storage(url):
            return ""
    except BoloopError:
        pass
    shown = safe_url(url)
    if shown != url:  # masked: pasting it would fail
        return " --storage YOUR_STORAGE_URL"
    return f" --storage {shlex.quote(shown)}"


def _registered(method: str, family: str | None) -> bool:
    """Whether this process has method ``method`` of ``family`` (a method of the user's own is
    registered only where its module was imported; ``family`` None: whichever has it)."""
    try:
        get_method(method, family)
    except BoloopError:
        return False
    return True


def decode_query(ev: Event, name: str) -> Query:
    try:
        return query_from_dict(ev.payload["query"])
    except (KeyError, TypeError, BoloopError) as exc:
        raise StorageError(
            f"study {name!r}: event {ev.seq} holds an unreadable query: {exc}"
        ) from exc


def decode_answer(value: Any) -> Any:
    return value  # JSON keeps float, int, bool and {name: float} exactly


class StudyReplay:
    """The replay half of :class:`~boloop.study.core.Study` (a mixin: it works on the study's
    own state). What it needs from the study is declared below (annotations only: no attribute
    is created here); :meth:`_rebuild` sets the replay state, the rest is set by ``Study``."""

    # set by Study.__init__
    name: str
    method: str
    family: str
    seed: int
    options: dict[str, Any]
    config: dict[str, Any]
    problem: Any
    _storage: StorageBackend | SQLiteLog
    _sid: int
    _created_at: str  # the creation time that, with the name, identifies the study's row
    _full_replay: bool
    # set by _rebuild and kept up to date by _apply / _apply_new (read by Study and snapshots)
    _events: list[Event]
    _seq: int
    _effective: list[Event]
    _asked: dict[int, Event]
    _logged_open: set[int]
    _generation: int  # set by Study.__init__, counted up by _rebuild
    _dirty: bool
    _cost: float
    _stale: bool
    _policy: BasePolicy
    #: True while the stored log is replayed (its events' errors are the log's, not the caller's)
    _replaying_log: bool = False
    # hooks of the host: Study (problem, measurements) and StudySnapshots (snapshot load)
    _set_problem: Callable[[Any], None]
    _add_to_policy: Callable[[np.ndarray, Any], None]
    _snapshot_policy: Callable[[list[Event], list[Event]], tuple[BasePolicy, int] | None]

    if TYPE_CHECKING:  # declared for the checker only, as the annotations above

        @property
        def policy_options(self) -> dict[str, Any]:
            """Study's property: ``options`` over the pinned defaults."""
            ...

    def _mismatch_advice(self) -> str:
        """What happened when the log does not replay, and the way forward that keeps every
        answer (:mod:`boloop.study.carry`; for a study of duels, which cannot be carried, where
        its answers are)."""
        own = _users_method(self.method, self.family)
        if own is not None:
            return self._own_method_advice(own)
        made = self.config.get("boloop_version")
        if made != boloop.__version__:
            why = (
                f"The study was created with boloop {made!r}; this is boloop "
                f"{boloop.__version__!r}, whose method {self.method!r} proposes differently. "
                "Load it with the boloop version that created it"
            )
        else:
            why = (
                f"The study was created with boloop {made!r}, the version number of this one, "
                f"but this boloop's method {self.method!r} proposes differently from the one "
                "that wrote the log (a development version, or changed defaults). Load it with "
                "the boloop code that created it"
            )
        n, duels = self._stored_answers()
        if duels:
            return (
                f"{why}: its {n} stored answers are safe in the storage, which no boloop "
                f"changes ({duels} of them duels, which a new study cannot take as its own data, "
                "so `boloop study create NEW --from` cannot continue it)"
            )
        return (
            f"{why}, or continue with this version and all {n} stored answers kept as the new "
            f"study's data: {continue_command(self.name, self._storage)}"
        )

    def _own_method_advice(self, defined_by: str) -> str:
        """The mismatch of a method the user registered (not boloop's): its code changed since
        the study's answers were given; the old code, or a new study continued from Python (the
        boloop command cannot import the user's method), when the method takes measurements."""
        why = (
            f"The study's method {self.method!r} is not boloop's: it is registered by your code "
            f"({defined_by}), and that code proposes differently from the code that gave the "
            "study's answers, so it changed since. Load the study with the method's code as it "
            "was then"
        )
        n, duels = self._stored_answers()
        if duels:
            return (
                f"{why}: its {n} stored answers are safe in the storage ({duels} of them duels, "
                "which a new study cannot take as its own data)"
            )
        cls = self._policy_class()
        if cls is not None and not cls.accepts_measurements:
            return (
                f"{why}. A new study cannot carry its {n} stored answers with this code: the "
                f"method's policy ({cls.__name__}) does not take measurements outside its own "
                "queries (a policy takes them when it sets accepts_measurements = True; "
                "docs/methods.md, 'Writing your own method'); the answers are safe in the "
                "storage"
            )
        return (
            f"{why}, or continue with the new code and all {n} stored answers kept as a new "
            "study's data, from Python after importing your method (the boloop command cannot "
            f"import it, so `boloop study create --from` cannot continue it): "
            f"{continue_call(self.name, self._storage)}"
        )

    def _policy_class(self) -> type[BasePolicy] | None:
        """The class of the policy the method's code builds now (None when it cannot be built)."""
        policy = getattr(self, "_policy", None)
        if policy is not None:
            return type(policy)
        try:
            return type(make_policy(self.method, self.problem, self.seed, **self.policy_options))
        except Exception:
            return None

    def _stored_answers(self) -> tuple[int, int]:
        """(answers in effect, of which duels) in the stored log."""
        try:
            effective = effective_events(self._storage.events(self._sid, after=-1), self.name)
        except BoloopError:
            effective = list(self._effective)
        compare = {
            e.query_id
            for e in effective
            if e.kind == "asked" and (e.payload.get("query") or {}).get("kind") == "compare"
        }
        answers = [e for e in effective if e.kind in ("told", "added")]
        return len(answers), sum(1 for e in answers if e.kind == "told" and e.query_id in compare)

    def _reload(self) -> None:
        """Rebuild everything from the stored log (after a failed commit or a conflict)."""
        self._rebuild(self._read_log(-1))

    def _read_log(self, after: int) -> list[Event]:
        """The study's events with ``seq > after``, in one reading transaction that also checks
        that the study is still there (:meth:`_check_here`)."""
        with self._storage.transaction(write=False) as tx:
            new = tx.events(self._sid, after)
            self._check_here(tx)
        return new

    def _check_here(self, tx: StorageTransaction) -> None:
        """:class:`StudyRemovedError` unless the study's id still names this study (its name
        and creation time) in the storage: ``migrate --undo`` removes a copy that a process,
        a server started on the migrate's target, may still hold. One read by primary key
        (on PostgreSQL none: the row came with the events)."""
        if tx.study(self._sid) != (self.name, self._created_at):
            raise StudyRemovedError(removed_message(self.name, self._storage.url))

    def _rebuild(self, events: list[Event]) -> None:
        """The policy after the events in effect: from the latest valid snapshot (unless
        ``full_replay``) plus a checked replay of the events after it, else a full replay.
        With one BLAS thread, as every policy step of a study (:mod:`boloop._blas`)."""
        with one_blas_thread():
            self._rebuild_events(events)

    def _rebuild_events(self, events: list[Event]) -> None:
        self._events = list(events)
        self._seq = events[-1].seq if events else -1
        self._effective: list[Event] = []
        self._asked: dict[int, Event] = {}
        self._logged_open: set[int] = set()
        self._dirty = False
        self._cost = 0.0
        effective = effective_events(events, self.name)
        start = 0
        self._generation += 1  # a new policy: what was read from the old one is not its state
        policy = self._snapshot_policy(events, effective) if not self._full_replay else None
        if policy is not None:
            self._policy, start = policy
        else:
            try:
                self._set_problem(None)
                self._policy = make_policy(
                    self.method, self.problem, self.seed, **self.policy_options
                )
            except BoloopError as exc:  # a check added after the study was created
                if not _registered(self.method, self.family):  # missing, not changed
                    raise StorageError(
                        f"study {self.name!r}: the study's method {self.method!r} is not "
                        "registered in this process: import the module that registers it "
                        "(boloop.algorithms.register_method) and load again (the boloop command "
                        "knows only boloop's own methods: load the study from Python, "
                        "boloop.study.load_study, after that import)"
                    ) from exc
                raise StorageError(
                    f"study {self.name!r}: this boloop refuses the study's configuration: {exc}. "
                    f"{self._mismatch_advice()}"
                ) from exc
        for ev in effective[:start]:
            self._apply(ev, replay=False)
        self._replaying_log = True
        try:
            for ev in effective[start:]:
                self._apply(ev)
        finally:
            self._replaying_log = False
        self._stale = False

    def _apply_new(self, new: list[Event]) -> None:
        with one_blas_thread():
            self._apply_new_events(new)

    def _apply_new_events(self, new: list[Event]) -> None:
        if any(e.kind == "withdrawn" for e in new):
            self._rebuild(self._events + new)
            return
        for ev in new:
            if ev.seq != self._seq + 1:
                raise StorageError(f"study {self.name!r}: event {ev.seq} out of order")
            self._apply(ev)
            self._events.append(ev)
            self._seq = ev.seq

    def _apply(self, ev: Event, replay: bool = True) -> None:
        """Apply one event in effect (to the policy too when ``replay``), checking replayed
        queries against the stored ones."""
        if ev.kind == "created" or ev.kind in MARK_KINDS:
            return  # the marks say where the study lives, nothing the policy learns from
        t0 = time.perf_counter()
        if ev.kind == "asked":
            stored = decode_query(ev, self.name)
            if replay:
                replayed = self._policy.ask()
                if replayed.id != stored.id or replayed != stored:
                    raise StorageError(
                        f"study {self.name!r}: replaying the log gives a different query at "
                        f"event {ev.seq}: stored {stored.to_dict()}, replayed "
                        f"{replayed.to_dict()}. {self._mismatch_advice()}"
                    )
            self._asked[stored.id] = ev
            self._logged_open.add(stored.id)
        elif ev.kind == "told":
            qid = ev.query_id
            if qid is None:
                raise StorageError(f"study {self.name!r}: event {ev.seq} answers no query id")
            if replay:
                try:
                    self._policy.tell(qid, decode_answer(ev.payload.get("answer")))
                except BoloopError as exc:
                    raise StorageError(
                        f"study {self.name!r}: the stored answer of event {ev.seq} (query {qid}) "
                        f"is refused on replay: {exc}. {self._mismatch_advice()}"
                    ) from exc
            self._logged_open.discard(qid)
        elif ev.kind == "added" and replay:
            x = np.asarray(ev.payload["x"], dtype=np.float64)
            answer = ev.payload["answer"]
            try:
                if ev.payload.get("label"):
                    self._policy.add_labels(x[None, :], [bool(answer)])
                else:
                    if (
                        isinstance(answer, dict)
                        and len(answer) == 1
                        and not self._policy.measurement_outputs
                    ):  # logs written before a single value's name was checked (f, y, value)
                        answer = next(iter(answer.values()))
                    self._add_to_policy(x, answer)
            except BoloopError as exc:
                if not self._replaying_log:
                    raise  # a new measurement or label: the caller's error, as it is
                raise StorageError(
                    f"study {self.name!r}: the measurement or label added at event {ev.seq} is "
                    f"refused on replay: {exc}. {self._mismatch_advice()}"
                ) from exc
        self._cost += time.perf_counter() - t0
        self._effective.append(ev)
