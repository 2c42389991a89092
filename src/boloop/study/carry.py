"""A new study that continues an old one with all its answers: ``create_study(NEW, from_study=OLD)``
and ``boloop study create NEW --from OLD`` (issue 15, "nothing lost").

Loading a study replays its log through a fresh policy and checks every replayed query against
the stored one (:mod:`boloop.study.replay`). When a method proposes differently from the one
that wrote the log (another boloop version, a development version, changed defaults), the log no
longer replays and the study refuses to load. Its answers are still stored; this module reads
them as data, *without* a policy, and records every answer in effect as outside data of a new
study through the public paths a person would use: measurements with
:meth:`~boloop.study.core.Study.add` and expert labels with :meth:`~boloop.study.core.Study.label`.

Nothing is written to the target storage until every answer has been taken: the new study is
first built in a private in-process store, then its whole log is imported in one transaction
(:meth:`~boloop.study.storage.StorageBackend.import_study`). A refusal at any step (an unknown
old study, a name that exists, an answer the new method cannot take as outside data, such as a
preference study's duels) stores nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from boloop.errors import (
    BoloopError,
    InvalidInputError,
    StorageAccessError,
    StorageError,
    StorageUnavailableError,
    StudyMovedError,
    UnknownIdError,
)
from boloop.study.log import Event, moved_mark, safe_url, url_for_command, utc_words
from boloop.study.naming import MAX_NOTE_CHARS, _as_text, _check_name
from boloop.study.replay import (
    _registered,
    _users_method,
    decode_answer,
    decode_query,
    effective_events,
)

if TYPE_CHECKING:
    from boloop.study.core import Study

__all__ = [
    "CarriedAnswer",
    "carried_answers",
    "continuations",
    "continued_among",
    "continues",
    "readable_created_events",
    "create_from",
    "recorded_origin",
    "same_storage",
]


@dataclasses.dataclass(frozen=True)
class CarriedAnswer:
    """One answer in effect of the old study: ``kind`` ``"evaluate"``, ``"label"`` or
    ``"compare"``; ``x`` the point (``None`` for a duel), ``answer`` as stored, ``query_id``
    (``None`` for an added measurement or label), ``seq`` of its event, ``note`` its note,
    ``given_at`` when it was stored (ISO 8601, UTC)."""

    kind: str
    x: list[float] | None
    answer: Any
    query_id: int | None
    seq: int
    note: str | None
    given_at: str | None = None


def recorded_origin(config: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``from_study`` record of a study with ``created`` payload ``config`` (what
    :func:`create_from` stored), or None for a study that continues none."""
    origin = config.get("from_study")
    if not isinstance(origin, Mapping) or not isinstance(origin.get("study"), str):
        return None
    return origin


def continues(
    origin: Mapping[str, Any] | None,
    old_name: str,
    old_created: str,
    storage_url: str,
    logs: Callable[[], tuple[Sequence[Event], Sequence[Event]] | None],
) -> bool:
    """Whether a study whose ``from_study`` record is ``origin`` (:func:`recorded_origin`; None:
    it continues none) continues study ``old_name``, made at ``old_created`` (the time of its
    ``created`` event), both of the storage ``storage_url``. The one rule of
    :func:`continuations` and :func:`continued_among`.

    The link does not depend on how anyone spells the storage's address: a continuation
    records the old study by its name and the time of its ``created`` event, which no two
    studies of one storage share and which ``boloop study migrate`` copies verbatim, so the
    old study is recognised through any URL that reaches its database (``127.0.0.1`` or
    ``localhost``, a Unix socket, a relative or absolute SQLite path), and also after both were
    migrated elsewhere.

    A record of an earlier boloop holds the old study's storage as the URL text it was opened
    with, and no time. It is taken when that text names this storage (the same text, or the same
    SQLite file), or when the new study's first carried answer is one of the old study's: its
    note (``from study 'OLD', query 7, given TIME``) names the query (or event) and the time
    the answer was stored, which the old log must hold at the same microsecond. Only then are
    the logs read: ``logs()`` gives the new study's and the old one's (None if one cannot be
    read: no continuation that this boloop could tell). A continuation of an earlier boloop
    that carried no answer, read through another spelling, is not seen."""
    if origin is None or origin["study"] != old_name:
        return False
    created = origin.get("created_at")
    if isinstance(created, str):
        return created == old_created
    recorded = origin.get("storage")
    if isinstance(recorded, str) and same_storage(recorded, storage_url):
        return True
    read = logs()
    return read is not None and bool(read[0]) and _first_carried_is_from(read[0], old_name, read[1])


def continued_among(
    storage_url: str, firsts: Mapping[str, Event], log: Callable[[str], Sequence[Event] | None]
) -> dict[str, list[str]]:
    """Which studies continue which (:func:`continues`), among the studies of the storage
    ``storage_url`` whose ``created`` events are ``firsts`` (by name, in creation order; a
    study left out is neither continued nor a continuation): each continued study's
    continuations, oldest first. ``log(name)``: a study's log (None if it cannot be read),
    asked only for a record of an earlier boloop."""
    out: dict[str, list[str]] = {}
    for new, first in firsts.items():
        origin = recorded_origin(first.payload)
        old = origin["study"] if origin is not None else None
        if old is None or old == new or old not in firsts:
            continue

        def logs(new: str = new, old: str = old) -> tuple[Sequence[Event], Sequence[Event]] | None:
            a, b = log(new), log(old)
            return None if a is None or b is None else (a, b)

        if continues(origin, old, firsts[old].created_at, storage_url, logs):
            out.setdefault(old, []).append(new)
    return out


def same_storage(recorded: str, url: str) -> bool:
    """Whether the storage URL ``recorded`` (as a record of an earlier boloop stored it, the
    password masked) names the storage ``url``: the same text, or two SQLite URLs of one file
    (a symbolic link, another spelling of the directory). A PostgreSQL server reached by
    another host name or a socket cannot be told from the text: that takes the identity of
    :func:`continues`."""
    if recorded == safe_url(url):
        return True
    a, b = _sqlite_file(recorded), _sqlite_file(url)
    if a is None or b is None:
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them is gone
        return os.path.realpath(a) == os.path.realpath(b)


def _sqlite_file(url: str) -> str | None:
    """The file of a ``sqlite:///path`` URL (query parameters left out), or None."""
    scheme, sep, rest = url.partition(":///")
    if not sep or not scheme.startswith("sqlite"):
        return None
    path = rest.partition("?")[0]
    if not path or path.startswith((":memory:", "file:")):
        return None
    return path


#: a carried answer's note as :func:`_provenance` writes it: the old query (or event) and when
_CARRIED_NOTE = re.compile(
    r", (?:query (?P<query>\d+)|your own data, event (?P<event>\d+)), "
    r"given (?P<given>\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:\d\d)?)"
)


def _first_carried_is_from(
    new_events: Sequence[Event], old_name: str, old_events: Sequence[Event]
) -> bool:
    """Whether the first answer carried into a study (the first ``added`` event after its
    ``created`` one, whose note names ``old_name``) is an answer of the log ``old_events``:
    the query (or event) the note names was answered (or added) there at the time it says."""
    prefix = f"from study {old_name!r}"
    first = next((e for e in new_events[1:] if e.kind == "added"), None)
    note = first.payload.get("note") if first is not None else None
    if not isinstance(note, str) or not note.startswith(prefix):
        return False
    found = _CARRIED_NOTE.match(note, len(prefix))
    if found is None:
        return False
    given = found["given"]
    for ev in old_events:
        if ev.created_at != given:
            continue
        if found["query"] is not None and ev.kind == "told" and ev.query_id == int(found["query"]):
            return True
        if found["event"] is not None and ev.kind == "added" and ev.seq == int(found["event"]):
            return True
    return False


def continuations(
    store: Any, name: str, names: Sequence[tuple[str, str]] | None = None
) -> list[str]:
    """The studies of ``store`` that continue study ``name`` (``create_study(NEW,
    from_study=name)``), oldest first; ``names``: the storage's :meth:`study_names
    <boloop.study.storage.StorageBackend.study_names>`, if the caller has just read them.

    A continuation is recorded in the *new* study only (its ``created`` event's
    ``from_study``); the old study's log is never written to, so a boloop that predates this
    reads it unchanged (an event kind it does not know would make it refuse the whole study). So
    they are found by reading the ``created`` event of every other study of the storage
    (:func:`continues`: whatever URL the storage was opened with), and only that: a record names
    the old study by its name and the time of its ``created`` event, which the storage's list of
    studies gives, and a ``created`` event never changes, so each is read once per process
    (:func:`_origins`). Logs are read only for a record of an earlier boloop, which names no
    time (:func:`_logs_then`). A continuation stored in another storage
    (``--from-storage``) is seen where both studies are (one of them copied to the other's
    storage by ``boloop study migrate``)."""
    names = list(store.study_names() if names is None else names)
    created = dict(names).get(name)
    if created is None:
        return []
    origins = _origins(store, [(n, c) for n, c in names if n != name])
    old_log: list[list[Event]] = []  # the old study's log, read for an earlier boloop's record
    return [
        other
        for other, _ in names
        if continues(
            origins.get(other),
            name,
            created,
            store.url,
            functools.partial(_logs_then, store, other, name, old_log),
        )
    ]


#: ``(storage URL, study name, created_at)`` -> the ``from_study`` record of that study's
#: ``created`` event (None: it continues no study). A study is named by its name and creation
#: time, and its ``created`` event is never rewritten, so what is kept stays true; the URL is in
#: the key because two storages may hold studies of one name and time that differ (a log copied
#: by hand with another record)
_origin_cache: dict[tuple[str, str, str], Mapping[str, Any] | None] = {}
_origin_lock = threading.Lock()
#: entries kept before the cache starts afresh (a record is a few short strings)
_ORIGINS_KEPT = 20_000


def _origins(store: Any, names: Sequence[tuple[str, str]]) -> dict[str, Mapping[str, Any] | None]:
    """The ``from_study`` record (or None) of each study of ``names`` (``(name, created_at)``
    pairs of ``store``) whose ``created`` event can be read: those this process has not read
    yet in one read of their ``created`` events (:meth:`created_events
    <boloop.study.storage.StorageBackend.created_events>`). A study removed since ``names``
    were read, or replaced by another of its name, is left out, as is one whose ``created``
    event cannot be read (a corrupt row: it continues nothing this boloop could tell)."""
    out: dict[str, Mapping[str, Any] | None] = {}
    with _origin_lock:
        for other, created in names:
            key = (store.url, other, created)
            if key in _origin_cache:
                out[other] = _origin_cache[key]
    missing = [n for n, _ in names if n not in out]
    if not missing:
        return out
    first = readable_created_events(store, missing)
    wanted = dict(names)
    with _origin_lock:
        if len(_origin_cache) + len(first) > _ORIGINS_KEPT:
            _origin_cache.clear()
        for other, ev in first.items():
            origin = recorded_origin(ev.payload)
            origin = None if origin is None else dict(origin)
            _origin_cache[(store.url, other, ev.created_at)] = origin
            if ev.created_at == wanted[other]:  # else another study took the name since
                out[other] = origin
    return out


def readable_created_events(store: Any, names: Sequence[str]) -> dict[str, Event]:
    """The ``created`` events of studies ``names`` of ``store``, by name: one read, or, if one
    of them cannot be read (a corrupt row), one read each, leaving that one out."""
    try:
        return store.created_events(names)
    except (StorageUnavailableError, StorageAccessError):
        raise  # the storage, not a study
    except StorageError:
        pass
    out = {}
    for other in names:
        try:
            out.update(store.created_events([other]))
        except (StorageUnavailableError, StorageAccessError):
            raise
        except StorageError:  # this one's first row: no continuation of any study it could be
            continue
    return out


def _logs_then(
    store: Any, other: str, name: str, old_log: list[list[Event]]
) -> tuple[list[Event], list[Event]] | None:
    """The logs of study ``other`` of ``store``, whose record of an earlier boloop names study
    ``name``, and of ``name`` (read once per call of :func:`continuations`, kept in
    ``old_log``; empty if it was removed since): None if ``other``'s cannot be read."""
    try:
        events = store.events(store.study_id(other))
    except UnknownIdError:
        return None
    except (StorageUnavailableError, StorageAccessError):
        raise  # the storage, not that study
    except StorageError:  # a log this boloop cannot read (a newer one's): no continuation
        return None  # of this one that it could tell, and no reason to fail this study's status
    if not old_log:
        try:
            old_log.append(store.events(store.study_id(name)))
        except UnknownIdError:  # removed (migrate --undo) since the names were read
            old_log.append([])
    return events, old_log[0]


def carried_answers(events: list[Event], name: str) -> list[CarriedAnswer]:
    """The answers in effect of a study's log (told and added, minus withdrawn ones), oldest
    first, read as data: no policy is built and nothing is replayed."""
    effective = effective_events(events, name)
    asked: dict[int, Event] = {}
    out: list[CarriedAnswer] = []
    for ev in effective:
        if ev.kind == "asked" and ev.query_id is not None:
            asked[ev.query_id] = ev
        elif ev.kind == "told":
            if ev.query_id not in asked:
                raise StorageError(
                    f"study {name!r}: event {ev.seq} answers query {ev.query_id}, never asked"
                )
            q = decode_query(asked[ev.query_id], name)
            x = getattr(q, "x", None)
            out.append(
                CarriedAnswer(
                    kind=q.kind,
                    x=None if x is None else [float(v) for v in x],
                    answer=decode_answer(ev.payload.get("answer")),
                    query_id=ev.query_id,
                    seq=ev.seq,
                    note=ev.payload.get("note"),
                    given_at=_iso(ev),
                )
            )
        elif ev.kind == "added":
            out.append(
                CarriedAnswer(
                    kind="label" if ev.payload.get("label") else "evaluate",
                    x=[float(v) for v in ev.payload["x"]],
                    answer=decode_answer(ev.payload.get("answer")),
                    query_id=None,
                    seq=ev.seq,
                    note=ev.payload.get("note"),
                    given_at=_iso(ev),
                )
            )
    return out


def _iso(ev: Event) -> str | None:
    t = getattr(ev, "created_at", None)
    if t is None:
        return None
    return t.isoformat() if hasattr(t, "isoformat") else str(t)


def _duel_refusal(
    from_study: str, config: Mapping[str, Any], duels: int, url: str, loads: bool
) -> str:
    """Why a study with duels cannot be continued in a new one, and what can be done: for a
    study that loads (``loads``), keep using it or copy it whole with ``boloop study migrate``;
    for one whose log no longer replays, where its answers are and which boloop loads them."""
    import shlex

    import boloop
    from boloop.study.replay import storage_option

    why = (
        f"study {from_study!r} cannot be continued in a new study: {duels} of its answers are "
        "duels, and a study takes duels only as answers to its own queries (add and label take "
        "measurements and labels; there is no way to record a duel from outside)."
    )
    if loads:
        source = url_for_command(url)
        return (
            f"{why} The study itself is fine: keep answering it (boloop study ask "
            f"{shlex.quote(from_study)}{storage_option(url)}), or copy it with its whole log to "
            f"another storage (boloop study migrate --from {source} --to OTHER_STORAGE "
            f"--study {shlex.quote(from_study)}); nothing was stored"
        )
    made = config.get("boloop_version")
    if made != boloop.__version__:
        load = f"load it with the boloop version that created it ({made!r})"
    else:
        load = (
            "load it with the boloop code that created it (its version number is this one's: "
            "a development version, or changed defaults)"
        )
    return (
        f"{why} To keep working with it, {load}: its answers are safe in the storage "
        f"{safe_url(url)!r}, which no boloop changes"
    )


def _loads(name: str, storage: str | None) -> bool:
    """Whether study ``name`` loads with this boloop (its log replays); reads only."""
    from boloop.study.create import load_study

    try:
        load_study(name, storage=storage)
    except StorageUnavailableError:
        raise  # the storage is down: that says nothing about the study
    except BoloopError:
        return False
    return True


_CUT = " [cut]"


def _provenance(old: str, a: CarriedAnswer) -> str:
    """The note of a carried answer: where it came from and when it was given (the new study's
    event carries the time of the carry), then the old answer's own note; a note too long for
    the new one ends in ``[cut]``. A character the old note has that a note may not have now
    (a control character, a byte that was not UTF-8, stored by an older boloop) is carried as
    U+FFFD: the whole carry was refused for it."""
    where = f"query {a.query_id}" if a.query_id is not None else f"your own data, event {a.seq}"
    text = f"from study {old!r}, {where}"
    if a.given_at:
        text = f"{text}, given {a.given_at}"
    if a.note:
        text = f"{text}: {_as_text(a.note)}"
    if len(text) > MAX_NOTE_CHARS:
        text = text[: MAX_NOTE_CHARS - len(_CUT)] + _CUT
    return text


def create_from(
    name: str,
    from_study: str,
    *,
    method: str | None = None,
    space: Any = None,
    problem: Any = None,
    storage: str | None = None,
    from_storage: str | None = None,
    seed: int | None = None,
    family: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Study:
    """Create study ``name`` continuing ``from_study`` with every answer in effect as its own data.

    The old study's method, space (or problem), options and seed are used unless given
    (options given are merged over the old ones when the method stays the same; another method
    starts from the options given only). ``from_storage`` is the old study's storage (default
    ``storage``). The old log is read, never replayed, so this works exactly when the old study
    no longer loads. Measurements go in through :meth:`Study.add`, expert labels through
    :meth:`Study.label`, each with a note naming the old study and query; the ``created`` event
    records the old study in ``from_study``: its name and the time of its ``created`` event
    (its identity, :func:`continues`), the storage URL it was read from (password masked, for
    people), its method, boloop version and number of answers carried. Duels have no
    outside-data path: a study with duels is refused, naming why. Nothing is stored unless
    every answer is taken.
    """
    from boloop.study.core import Study
    from boloop.study.create import _open_existing, _problem_from_config, create_study
    from boloop.study.space_file import point_to_params
    from boloop.study.storage import open_storage, resolve_storage
    from boloop.study.storage_memory import MemoryStorage, discard_memory_store

    name = _check_name(name)
    if not isinstance(from_study, str):
        raise InvalidInputError(f"from_study must be a study name, got {from_study!r}")
    source_url = from_storage if from_storage is not None else storage
    same_storage = resolve_storage(source_url) == resolve_storage(storage)
    if same_storage and name == from_study:
        raise InvalidInputError(
            f"the new study needs a name of its own: {name!r} is the study it continues"
        )
    old_store = _open_existing(source_url)
    try:
        old_sid = old_store.study_id(from_study)  # UnknownIdError listing the stored names
    except UnknownIdError as exc:
        if from_storage is not None:
            raise
        raise UnknownIdError(
            f"{exc}. If the study is in another storage, name it with --from-storage URL "
            "(from_storage= in Python)"
        ) from exc
    events = old_store.events(old_sid)
    if not events or events[0].kind != "created":
        raise StorageError(f"study {from_study!r} has no 'created' event")
    mark = moved_mark(events)
    if mark is not None:  # this copy stopped where the migrate took it: continue the live one
        raise StudyMovedError(
            f"study {from_study!r} was moved to {mark.payload.get('to')} on "
            f"{utc_words(mark.created_at)}: continue it from there (--storage "
            "or --from-storage naming that storage); this copy may lack later answers"
        )
    config = events[0].payload
    target = old_store if same_storage else _open_existing(storage)
    if name in {n for n, _ in target.study_names()}:
        raise InvalidInputError(
            f"a study named {name!r} already exists in storage {safe_url(target.url)!r}; "
            "choose another name for the continued study"
        )
    answers = carried_answers(events, from_study)
    duels = sum(1 for a in answers if a.kind == "compare")
    if duels:
        loads = _loads(from_study, source_url)
        raise InvalidInputError(_duel_refusal(from_study, config, duels, old_store.url, loads))
    old_method = config.get("method")
    # the old study's options come along only when the method is not given: a method given
    # (even the same one) starts from the options given, so that an option this version no
    # longer knows can be left behind
    same_method = method is None
    if method is None:
        method = old_method
    if family is None and same_method:
        family = config.get("family")
    space_given = space is not None or problem is not None
    if not space_given:
        if config.get("problem") is not None:
            problem = config["problem"]
        else:
            space = config.get("space")
            if space is not None and config.get("measurement"):  # kept beside the space
                space = {**space, "measurement": config["measurement"]}
    if same_method and old_method is not None and not _registered(old_method, family):
        raise InvalidInputError(
            f"study {from_study!r} runs method {old_method!r}, which is not registered in this "
            "process: a method of your own is registered where the module that registers it is "
            "imported, which the boloop command cannot do. Continue it from Python after that "
            f"import: create_study({name!r}, from_study={from_study!r}, storage=...) (or give "
            "another --method)"
        )
    merged = dict(config.get("options") or {}) if same_method else {}
    merged.update(options or {})
    if seed is None:
        seed = int(config.get("seed", 0))
    try:
        rebuilt = _problem_from_config(config)
        old_space = rebuilt.space
        if not space_given and config.get("problem") is not None:
            # the stored problem as the old study has it: an id stored before boloop refused
            # one for a new study ("levelset/toy?", an option twice) is continued, not refused
            problem = rebuilt
    except BoloopError as exc:
        if not space_given:
            raise StorageError(
                f"study {from_study!r}: its stored space or problem cannot be rebuilt with this "
                f"boloop ({exc}); give the new study's --space or --problem (its parameters in "
                "the old study's order) to carry the answers into it"
            ) from exc
        old_space = None  # the answers' points are read in the new study's space

    # build the new study in a private in-process store first: the target gets all or nothing
    staging_url = f"memory://boloop-from-{secrets.token_hex(8)}"
    try:
        try:
            staged = create_study(
                name,
                method,
                space,
                problem=problem,
                storage=staging_url,
                seed=seed,
                family=family,
                **merged,
            )
        except InvalidInputError as exc:
            kept = sorted(set(config.get("options") or {}) - set(options or {}))
            if not (same_method and kept):
                raise
            raise InvalidInputError(
                f"{exc} (the options {kept} come from study {from_study!r}; give the method, "
                f"--method {method}, to start from your --option values only)"
            ) from exc
        points_space = old_space if old_space is not None else staged.space
        for i, a in enumerate(answers):
            assert a.x is not None
            if len(a.x) != points_space.dim:
                raise InvalidInputError(
                    f"study {from_study!r}'s answers have {len(a.x)} parameters, the new "
                    f"study's space {points_space.dim}; nothing was stored"
                )
            params = point_to_params(points_space, a.x)
            try:
                if a.kind == "label":
                    staged.label(params, bool(a.answer), note=_provenance(from_study, a))
                else:
                    staged.add(params, a.answer, note=_provenance(from_study, a))
            except BoloopError as exc:
                what = "label" if a.kind == "label" else "measurement"
                origin = f"query {a.query_id}" if a.query_id is not None else f"event {a.seq}"
                hint = ""
                if what == "measurement" and _users_method(staged.method, staged.family):
                    hint = (
                        " (a method of your own takes them when its policy sets "
                        "accepts_measurements = True: docs/methods.md, 'Writing your own "
                        "method')"
                    )
                raise InvalidInputError(
                    f"study {from_study!r} cannot be continued as {name!r} (method "
                    f"{staged.method!r}): its answer {i + 1} of {len(answers)} ({what} of "
                    f"{origin}) cannot be recorded as outside data: {exc}{hint}. Nothing was "
                    "stored"
                ) from exc
        staged_store = MemoryStorage(staging_url, create=False)
        new_events = staged_store.events(staged_store.study_id(name))
    finally:
        discard_memory_store(staging_url)
    provenance = {
        "study": from_study,
        # the old study's identity, whatever the URL its storage is reached by (continues())
        "created_at": events[0].created_at,
        # for people: where it was read from, as this process named the storage
        "storage": safe_url(old_store.url),
        "method": old_method,
        "boloop_version": config.get("boloop_version"),
        "answers": len(answers),
    }
    first = new_events[0]
    new_events[0] = dataclasses.replace(first, payload={**first.payload, "from_study": provenance})
    store = open_storage(storage, create=True)
    sid = store.import_study(name, first.created_at, new_events)
    study = Study(store, sid, name, store.events(sid))
    study.save_snapshot()
    return study
