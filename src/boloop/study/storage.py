"""Storage of studies: an append-only, versioned event log behind a small protocol.

A storage is named by a URL (``sqlite:///boloop.db`` by default, or ``$BOLOOP_STORAGE``):

``sqlite:///path/lab.db`` (or a bare ``lab.db``)
    a SQLite file in WAL mode, so that a reader never blocks the writer.
``postgresql+psycopg://user:password@host/db`` (``postgresql://`` means the same)
    a PostgreSQL server, for a lab whose people answer from several machines (extra
    ``postgres``: ``pip install 'boloop[postgres]'``, psycopg 3).
``memory://name``
    a store inside this process (tests, notebooks); gone when the process ends.

Every backend follows :class:`StorageBackend` and passes the one contract suite
(``tests/test_storage_contract.py``); the two SQL backends share :class:`Storage` (SQLAlchemy
Core), :mod:`boloop.study.storage_memory` is the third. :func:`open_storage` picks the backend of
a URL. The SQL backends keep four tables:

``boloop_meta``
    ``key -> value`` rows; ``application = boloop`` marks the database as ours and
    ``schema_version`` is checked on every open (a newer or foreign database is refused, never
    written to).
``boloop_studies``
    one row per study: ``name`` is unique, so two processes creating the same study race to one
    winner.
``boloop_snapshots``
    a cache beside the log: the latest pickled state of a study's policy, so that loading a study
    whose policy refits hyperparameters on every answer does not redo every fit. Valid only for
    the same code fingerprint and when no later ``withdrawn`` event reaches back before it;
    otherwise the log is replayed in full. It is the only table whose rows are replaced.
``boloop_events``
    the log. Every event has a per-study sequence number ``seq`` (0 for ``created``) and the
    constraint ``UNIQUE(study_id, seq)``: a writer appends ``seq = last seen + 1`` in one
    transaction, so of two processes answering the same query from the same state exactly one
    insert succeeds (the other gets :class:`SeqConflict`). Kinds: ``created`` (full configuration
    and boloop version), ``asked`` (the query issued), ``told`` (its answer), ``added`` (a
    measurement the user made on their own), ``withdrawn`` (an undo), ``moved`` (``boloop study
    migrate`` copied the study elsewhere: this copy refuses writes from then on) and
    ``move_undone`` (``migrate --undo``). Rows are only ever inserted, except that ``migrate
    --undo`` removes a whole study it had copied, unchanged since but for unanswered questions
    (:meth:`Storage.drop_study`); its id is never given to another study.

One answer is one transaction (:meth:`Storage.transaction`). Writers of one study queue instead of
failing: on SQLite a writing transaction is ``BEGIN IMMEDIATE`` (one writer per file), on
PostgreSQL it locks the study's row (``SELECT ... FOR UPDATE``: writers of other studies go on in
parallel). A lost connection (a server restart, a network cut) is a
:class:`~boloop.errors.StorageUnavailableError` (a :class:`StorageError`) saying so; the
transaction is rolled back by the server, so nothing is half-written, and the pool
replaces connections the server closed before it hands them out again. A server that is reached
but refuses the URL's password (SQLSTATE 28P01), role (28000) or database (3D000), or asks for a
password the URL does not give, is the user's mistake, not an outage: a
:class:`~boloop.errors.StorageAccessError` naming the URL (password masked) and what to check.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol, runtime_checkable

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError

from boloop.errors import (
    InvalidInputError,
    StorageAccessError,
    StorageError,
    StorageNoAnswerError,
    StorageUnavailableError,
    UnknownIdError,
)
from boloop.study.answer_limit import AnswerLimit, connect_noted
from boloop.study.log import (
    EVENT_KINDS,
    Event,
    SeqConflict,
    decode_created,
    decode_events,
    encode_payload,
    now_iso,
    safe_url,
    written_since,
)
from boloop.study.log_summary import (
    LogSummary,
    decode_summaries,
    sqlite_object_check,
    summary_statement,
)

__all__ = [
    "DEFAULT_STORAGE",
    "SCHEMA_VERSION",
    "Event",
    "Storage",
    "StorageBackend",
    "StorageTransaction",
    "SeqConflict",
    "answers_silent",
    "dispose_engines",
    "limit_answers",
    "sqlite_in_memory",
    "open_storage",
    "resolve_storage",
    "safe_url",
    "watch_connections",
]

logger = logging.getLogger("boloop")

#: version of the tables below; bump it (and write a migration) whenever they change
SCHEMA_VERSION = 1
DEFAULT_STORAGE = "sqlite:///boloop.db"
#: seconds a SQLite writer waits for another writer's transaction before giving up
BUSY_TIMEOUT_SECONDS = 30.0
#: seconds to wait for a PostgreSQL server to accept a connection
CONNECT_TIMEOUT_SECONDS = 10
#: the extra that installs the PostgreSQL driver
POSTGRES_EXTRA = "pip install 'boloop[postgres]'"

@runtime_checkable
class StorageTransaction(Protocol):
    """Reads and appends inside one transaction of a :class:`StorageBackend`."""

    def events(self, study_id: int, after: int = -1) -> list[Event]:
        """The study's events with ``seq > after``, in order (a gap or unknown kind: corrupt)."""
        ...

    def append(
        self, study_id: int, seq: int, kind: str, query_id: int | None, payload: dict[str, Any]
    ) -> Event:
        """Append one event at ``seq``; if another transaction holds ``seq`` for the study,
        :class:`SeqConflict` (at the append or when the transaction ends). ``payload`` must be
        plain JSON (else :class:`InvalidInputError`, nothing stored)."""
        ...

    def study(self, study_id: int) -> tuple[str, str] | None:
        """``(name, created_at)`` of the study with id ``study_id`` (its ``created_at`` is that
        of its ``created`` event), or None if there is none: ``migrate --undo`` removed it. Ids
        are never given to another study, so a process holding a study checks with this one
        read that its id still names it (:class:`~boloop.errors.StudyRemovedError`)."""
        ...


@runtime_checkable
class StorageBackend(Protocol):
    """What a :class:`~boloop.study.core.Study` needs from a storage.

    A new backend implements these and passes ``tests/test_storage_contract.py``. Opening a
    backend checks that it is a boloop store of :data:`SCHEMA_VERSION` (a foreign one or another
    version: :class:`StorageError`, nothing written). ``exists`` is False for a store opened
    without ``create`` that holds nothing yet (then nothing is ever created by reading).
    """

    url: str
    exists: bool

    def study_names(self) -> list[tuple[str, str]]:
        """``(name, created_at)`` of every study, in creation order. ``created_at`` is the
        time of the study's ``created`` event (:meth:`create_study` and :meth:`import_study`
        store both alike), so it names the study in its storage: ``boloop study create NEW
        --from OLD`` records OLD by its name and this time (:mod:`boloop.study.carry`)."""
        ...

    def created_events(self, names: Sequence[str]) -> dict[str, Event]:
        """The ``created`` event (seq 0: the study's configuration) of each study of ``names``,
        by name, in one reading transaction, without reading the rest of their logs; a name
        that is not stored is left out. A corrupt first event of any of them:
        :class:`StorageError`, as :meth:`events` says it."""
        ...

    def log_summaries(self) -> dict[str, LogSummary] | None:
        """What the log of every study holds (:class:`~boloop.study.log_summary.LogSummary`), by name,
        counted in one reading transaction without sending or decoding the logs: what
        :func:`~boloop.study.listing.list_studies` reads of a study whose summary is
        :meth:`~boloop.study.log_summary.LogSummary.complete`. A study without events is left out.
        None if the storage cannot count it exactly (its database cannot tell a JSON object
        as Python's ``json`` does): the caller reads the logs."""
        ...

    def study_id(self, name: str) -> int:
        """The id of study ``name``; :class:`UnknownIdError` listing the stored names if absent."""
        ...

    def create_study(self, name: str, config: dict[str, Any]) -> int:
        """Insert the study and its ``created`` event (seq 0) in one transaction; a name that
        exists is :class:`InvalidInputError`. Its id is one no study of this storage ever had,
        also one that :meth:`drop_study` removed."""
        ...

    def import_study(self, name: str, created_at: str, events: Sequence[Event]) -> int:
        """Insert a study with its whole log verbatim (times included) in one transaction, for
        copying between backends; a name that exists, or ``created_at`` other than the time of
        the log's ``created`` event, is :class:`InvalidInputError`."""
        ...

    def transaction(self, write: bool = True) -> AbstractContextManager[StorageTransaction]:
        """A transaction: committed when the block ends, rolled back if it raises. Writing
        transactions of one study queue behind each other."""
        ...

    def drop_study(self, name: str, last_seq: int) -> None:
        """Remove study ``name``, its log and snapshot in one writing transaction, only if every
        event after ``last_seq`` is an ``asked`` one (``boloop study migrate --undo`` removes a
        copy as it was copied, questions opened there aside); otherwise
        :class:`InvalidInputError` naming what was written, nothing removed. Its id is never
        given to another study."""
        ...

    def events(self, study_id: int, after: int = -1) -> list[Event]:
        """The study's events with ``seq > after`` (a reading transaction)."""
        ...

    def put_snapshot(self, study_id: int, seq: int, fingerprint: str, data: bytes) -> None:
        """Replace the study's snapshot (a cache: failures are logged, never raised)."""
        ...

    def get_snapshot(self, study_id: int) -> tuple[int, str, bytes] | None:
        """``(seq, fingerprint, data)`` of the study's snapshot, if any."""
        ...


def open_storage(url: str | None = None, create: bool = True) -> StorageBackend:
    """The backend of ``url`` (see the module docstring), opened and checked."""
    resolved = resolve_storage(url)
    if resolved.startswith("memory://"):
        from boloop.study.storage_memory import MemoryStorage

        return MemoryStorage(resolved, create=create)
    return Storage(resolved, create=create)


# -- URLs --------------------------------------------------------------------------------------
def resolve_storage(storage: str | None) -> str:
    """The storage URL: ``storage`` if given, else ``$BOLOOP_STORAGE``, else ``sqlite:///boloop.db``.

    A bare file path (no ``://``) ending in ``.db``, ``.sqlite`` or ``.sqlite3`` is read as a
    SQLite file; anything else without ``://`` (``notaurl``, a typo in ``$BOLOOP_STORAGE``) is
    refused with :class:`InvalidInputError` before anything is created. Relative SQLite paths are
    made absolute (against the current directory). ``postgresql://`` and ``postgres://`` name
    the psycopg 3 driver (``postgresql+psycopg://``).
    """
    url = storage or os.environ.get("BOLOOP_STORAGE") or DEFAULT_STORAGE
    where = (
        "--storage" if storage else "$BOLOOP_STORAGE" if os.environ.get("BOLOOP_STORAGE") else ""
    )
    if not isinstance(url, str):
        raise InvalidInputError(f"storage must be a URL string, got {storage!r}")
    if "://" not in url:
        if not url.lower().endswith(SQLITE_SUFFIXES):
            raise InvalidInputError(
                f"storage {url!r}{f' (from {where})' if where else ''} is neither a URL "
                "(sqlite:///path/to/lab.db, postgresql+psycopg://user@host/db) nor a SQLite "
                f"file name ending in {', '.join(SQLITE_SUFFIXES)}"
            )
        url = "sqlite:///" + url
    scheme, sep, rest = url.partition("://")
    if scheme.lower() in ("postgresql", "postgres"):
        url = f"postgresql+psycopg://{rest}"
    prefix, sep, rest = url.partition(":///")
    if sep and prefix.startswith("sqlite") and rest and not rest.startswith((":memory:", "file:")):
        path, q, query = rest.partition("?")
        if not os.path.isabs(path):  # pin relative files to the current directory now
            url = f"{prefix}:///{os.path.abspath(path)}{q}{query}"
    return url


def sqlite_in_memory(url: str) -> bool:
    """Whether ``url`` (resolved) is a SQLite database without a file (``sqlite://``,
    ``sqlite:///``, ``sqlite:///:memory:``, ``mode=memory``): it lives in this process's memory
    and ends with it. Useful in one program; a ``boloop study`` command is a process of its own,
    so a study stored there is lost when the command ends."""
    if not url.lower().startswith("sqlite"):
        return False
    try:
        parsed = sa.engine.make_url(url)
    except (SQLAlchemyError, ValueError):
        return False  # not a URL: refused as such where it is opened
    if parsed.host:
        return False  # sqlite://lab.db: refused where it is opened, saying so
    db = parsed.database or ""
    return db in ("", ":memory:") or parsed.query.get("mode") == "memory" or ":memory:" in db


#: endings of a bare storage path read as a SQLite file
SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def check_import(name: str, created_at: str, events: Sequence[Event], where: str) -> None:
    """A log to import: starts with ``created`` at seq 0, made at ``created_at`` (the time
    :meth:`StorageBackend.study_names` gives, which names the study), consecutive, known kinds."""
    if not events or events[0].kind != "created" or events[0].seq != 0:
        raise InvalidInputError(f"study {name!r}: a log to import starts with its 'created' event")
    if events[0].created_at != created_at:
        raise InvalidInputError(
            f"study {name!r}: a log to import was created at {events[0].created_at!r}, not at "
            f"{created_at!r}: the study's time is that of its 'created' event"
        )
    for i, ev in enumerate(events):
        if ev.seq != i or ev.kind not in EVENT_KINDS:
            raise InvalidInputError(
                f"study {name!r}: event {i} of the log to import into {where!r} has seq "
                f"{ev.seq}, kind {ev.kind!r}"
            )


def check_droppable(name: str, events: Sequence[Event], last_seq: int, where: str) -> None:
    """A copy ``drop_study`` may remove: it still has its first ``last_seq + 1`` events and
    nothing but ``asked`` events after them (a question opened at the copy, say by someone who
    opened its page, loses nothing when it goes). Otherwise :class:`InvalidInputError` naming
    what was written there."""
    if len(events) < last_seq + 1:
        raise InvalidInputError(
            f"study {name!r} in storage {where!r} has {len(events)} events, fewer than the "
            f"{last_seq + 1} it was copied with: it is not the copy that was made; nothing was "
            "removed"
        )
    what = written_since(events[last_seq + 1 :])
    if what:
        raise InvalidInputError(
            f"study {name!r} in storage {where!r} was written to since it was copied ({what}): "
            "removing it would lose that; nothing was removed (questions asked there and not "
            "answered would not have stopped it)"
        )


# -- the SQL backends (SQLite, PostgreSQL) -------------------------------------------------------
_metadata = sa.MetaData()
_meta_table = sa.Table(
    "boloop_meta",
    _metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)
_studies_table = sa.Table(
    "boloop_studies",
    _metadata,
    sa.Column("study_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(255), nullable=False, unique=True),
    sa.Column("created_at", sa.String(32), nullable=False),
)
_events_table = sa.Table(
    "boloop_events",
    _metadata,
    sa.Column("event_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("study_id", sa.Integer, sa.ForeignKey("boloop_studies.study_id"), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("query_id", sa.Integer, nullable=True),
    sa.Column("payload", sa.Text, nullable=False),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.UniqueConstraint("study_id", "seq", name="uq_boloop_events_study_seq"),
)
# a cache, not part of the log: the latest pickled policy of a study (see Storage.put_snapshot)
_snapshots_table = sa.Table(
    "boloop_snapshots",
    _metadata,
    sa.Column("study_id", sa.Integer, sa.ForeignKey("boloop_studies.study_id"), primary_key=True),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.Column("data", sa.LargeBinary, nullable=False),
)
#: an event's columns as :func:`decode_events` reads them
_EVENT_COLUMNS = tuple(
    _events_table.c[k] for k in ("seq", "kind", "query_id", "payload", "created_at")
)
#: backends the SQL storage is written and tested for
SQL_BACKENDS = ("sqlite", "postgresql")
#: ``boloop_meta`` key: the highest study id ``drop_study`` removed. SQLite gives a new row the
#: highest id in the table plus one, which would hand a removed study's id to the next study made
#: (and a process still holding the removed study would read and write the new one's log): a new
#: study's id is kept above it. PostgreSQL's id sequence never goes back; the key is kept there too
_DROPPED_ID_KEY = "dropped_study_id_max"
#: PostgreSQL's own databases: a storage URL that names one is taken, with a warning
_PG_MAINTENANCE_DATABASES = ("postgres", "template0", "template1")
#: study names per statement of :meth:`Storage.created_events` (SQLite takes at most 999
#: parameters per statement before its version 3.32)
_NAMES_PER_READ = 500
#: key of the PostgreSQL advisory lock that serialises creating the tables
_PG_INIT_LOCK = 0x626F6C6F6F70  # "boloop"


def _sqlite_path(url: sa.engine.URL) -> str | None:
    if not url.drivername.startswith("sqlite"):
        return None
    db = url.database
    if not db or db == ":memory:" or db.startswith("file:"):
        return None
    return db


#: one engine per URL and process (engines own connection pools); a forked child starts afresh
_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()
_engines_pid = os.getpid()


def _engine_for(url: str) -> Engine:
    """One engine per URL and process. After a fork the parent's pooled connections are left
    to the parent (``dispose(close=False)``): two processes never share a database socket."""
    global _engines_pid
    with _engines_lock:
        if os.getpid() != _engines_pid:
            for old in _engines.values():
                old.dispose(close=False)
            _engines.clear()
            _engines_pid = os.getpid()
        engine = _engines.get(url)
        if engine is None:
            engine = _create_engine(url)
            _engines[url] = engine
        return engine


def dispose_engines(close: bool = True) -> None:
    """Forget this process's engines (the next storage opened makes a new one): ``close=True``
    closes their pooled connections; ``close=False`` leaves them to the process that opened
    them (a forked child, which must not use its parent's database sockets)."""
    with _engines_lock:
        for engine in _engines.values():
            engine.dispose(close=close)
        _engines.clear()


def _create_engine(url: str) -> Engine:
    parsed = sa.engine.make_url(url)
    try:
        if parsed.get_backend_name() == "postgresql":
            engine = sa.create_engine(
                url,
                connect_args={
                    "connect_timeout": CONNECT_TIMEOUT_SECONDS,
                    "application_name": "boloop",
                },
            )
            sa_event.listen(engine, "checkout", _drop_if_closed_by_server)
            if url in _limits:
                _listen_for_answers(engine, url)
        else:
            engine = sa.create_engine(url)
    except ImportError as exc:
        raise StorageError(
            f"storage {safe_url(url)!r} needs the database driver {exc.name or parsed.drivername!r}, "
            f"which is not installed: {POSTGRES_EXTRA if parsed.get_backend_name() == 'postgresql' else exc}"
        ) from exc
    if engine.dialect.name == "sqlite":
        _configure_sqlite(engine)
    return engine


def _drop_if_closed_by_server(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
    """A pooled PostgreSQL connection is replaced before use if the server has closed it (a
    restart, an administrator ending the session): an idle connection's socket is readable only
    then (end of file, or the server's farewell message). Costs no round trip, unlike a ping; a
    connection cut without a word (a network failure) fails at its first statement instead."""
    import select

    try:
        fd = dbapi_conn.fileno()
        readable, _, _ = select.select([fd], [], [], 0)
    except (OSError, ValueError, AttributeError) as exc:
        raise sa.exc.DisconnectionError(f"connection unusable: {exc}") from exc
    if readable or getattr(dbapi_conn, "closed", False):
        raise sa.exc.DisconnectionError("the server closed the connection")


def _configure_sqlite(engine: Engine) -> None:
    @sa_event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # we emit BEGIN ourselves (pysqlite's implicit transactions would defeat BEGIN IMMEDIATE)
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()

    @sa_event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get("boloop_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def _is_connection_error(exc: SQLAlchemyError) -> bool:
    """A lost or refused connection (as opposed to a constraint or a corrupt file)."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    orig = getattr(exc, "orig", None)
    return type(orig).__module__.startswith("psycopg") and type(orig).__name__ in (
        "OperationalError",
        "InterfaceError",
    )


# -- a server that was reached and said no (the user's mistake, not an outage) -------------------
#: SQLSTATE -> condition name of the refusals that are the user's to correct
_REFUSED_STATES = {
    "28P01": "invalid_password",
    "28000": "invalid_authorization_specification",
    "3D000": "invalid_catalog_name",
}
#: libpq keeps no SQLSTATE of an error the server sent while a connection was being set up (the
#: error has no result to read it from): those are recognised by the server's own message, which
#: names the condition, and only where no SQLSTATE is available. A server whose messages are
#: translated (``lc_messages``) is not recognised and stays an outage, as before.
_REFUSED_MESSAGES = (
    (re.compile(r'password authentication failed for user "'), "28P01"),
    (re.compile(r'authentication failed for user "'), "28000"),  # peer, ident, ldap, cert ...
    (re.compile(r'role "[^"]*" (does not exist|is not permitted to log in)'), "28000"),
    (re.compile(r"no pg_hba\.conf entry for|pg_hba\.conf rejects connection"), "28000"),
    (re.compile(r'database "[^"]*" does not exist'), "3D000"),
)
#: libpq's own word for a server that asks for a password the URL does not give
_NO_PASSWORD = "no password supplied"


def _refused_state(exc: SQLAlchemyError) -> str | None:
    """The SQLSTATE (``28P01``, ``28000``, ``3D000``) if ``exc`` is a PostgreSQL server's refusal
    of the URL's password, role or database, ``"no password"`` if it asked for a password the URL
    does not give; None for anything else (an outage: refused, timed out, lost)."""
    orig = getattr(exc, "orig", None)
    if orig is None or not type(orig).__module__.startswith("psycopg"):
        return None
    state = getattr(orig, "sqlstate", None)
    if state is not None:
        return state if state in _REFUSED_STATES else None
    if type(orig).__name__ != "OperationalError":
        return None
    if getattr(getattr(orig, "pgconn", None), "needs_password", False) is True:
        return "no password"
    text = str(orig)
    for pattern, found in _REFUSED_MESSAGES:
        if pattern.search(text):
            return found
    return "no password" if _NO_PASSWORD in text else None


def _refusal_message(display_url: str, url: str, state: str, reason: str) -> str:
    """What the server refused and what to check, naming ``display_url`` (password masked)."""
    parsed = sa.engine.make_url(url)
    user = parsed.username or "(the operating system user)"
    db = parsed.database or user
    where = "the database server"
    if parsed.host:
        where += f" at {parsed.host}" + (f":{parsed.port}" if parsed.port else "")
    if state == "28P01":
        what = (
            f"{where} refused the password of user {user!r} (SQLSTATE 28P01 invalid_password): "
            "check the password in the URL (a server that asks for passwords says the same of "
            "a user it does not know: check the user name too)"
        )
    elif state == "28000":
        what = (
            f"{where} refused user {user!r} (SQLSTATE 28000 invalid_authorization_specification): "
            f"check the user name in the URL; the role must exist and be allowed to log in, and "
            f"the server's pg_hba.conf must let it connect from this machine to database {db!r}"
        )
    elif state == "3D000":
        createdb = "createdb"
        if parsed.host:
            createdb += f" -h {parsed.host}"
        if parsed.port:
            createdb += f" -p {parsed.port}"
        if parsed.username:
            createdb += f" -U {parsed.username}"
        what = (
            f"database {db!r} does not exist on {where} (SQLSTATE 3D000 invalid_catalog_name): "
            f"create it ({createdb} {db}) or correct the database name in the URL"
        )
    else:
        what = (
            f"{where} asks user {user!r} for a password and none is given: put it in the URL "
            f"({parsed.drivername}://{parsed.username or 'user'}:PASSWORD@...) or in ~/.pgpass"
        )
    return (
        f"storage {display_url!r}: {what}. The server was reached and said no, so this is no "
        f"outage: trying again will not help until it is corrected (the server said: {reason})"
    )


# -- whether the database server answers ----------------------------------------------------------
_watchers_lock = threading.Lock()
#: storage URL -> the watchers of its connections (weak references to bound methods)
_watchers: dict[str, list[weakref.WeakMethod[Callable[[str | None], None]]]] = {}


def watch_connections(url: str, watcher: Callable[[str | None], None]) -> None:
    """Call ``watcher(reason)`` after each attempt of this process to reach the database of
    storage ``url`` (as :func:`resolve_storage` gives it), from the thread that made it:
    ``reason`` None when a connection was made, else why the server could not be reached or the
    connection was lost (the driver's words; the operation raised
    :class:`StorageUnavailableError`). ``watcher`` is a bound method, held weakly: it is called
    as long as its object lives. What ``boloop serve`` logs of an outage is told by it
    (:class:`boloop.web.outage.OutageLog`), whatever request met the outage or its end."""
    with _watchers_lock:
        _watchers.setdefault(url, []).append(weakref.WeakMethod(watcher))


def _connection_outcome(url: str, reason: str | None) -> None:
    """Tell the watchers of ``url`` how an attempt to reach its database went."""
    if url not in _watchers:  # nobody watches (every process but a server): nothing to do
        return
    with _watchers_lock:
        refs = _watchers.get(url, [])
        alive = [w for w in refs if w() is not None]
        _watchers[url] = alive
    for ref in alive:
        watcher = ref()
        if watcher is None:
            continue
        try:
            watcher(reason)
        except Exception:  # a watcher's bug must not fail a storage operation
            logger.debug("a connection watcher of %s failed", safe_url(url), exc_info=True)


# -- how long a PostgreSQL server's answer is waited for ------------------------------------------
#: storage URL -> the limit on the waits for its database's answers (:func:`limit_answers`)
_limits: dict[str, AnswerLimit] = {}
#: the engines whose connections note their waits for the limits (:func:`connect_noted`)
_limited_engines: weakref.WeakSet[Engine] = weakref.WeakSet()


class AnswerWatcher(Protocol):
    """What is told of a database's silence (:class:`boloop.web.outage.OutageLog`)."""

    def no_answer(self, waited: float, what: str = "a read") -> None: ...

    def answered(self, ok: bool = True) -> None: ...


def limit_answers(url: str, seconds: float, watcher: AnswerWatcher) -> None:
    """Wait at most ``seconds`` for each answer of the database of PostgreSQL storage ``url``
    in this process (0: as long as the operating system keeps the connection, as before; a
    storage without a database server is not affected): a statement or commit that has had no
    answer for that long has its connection cut and fails as
    :class:`~boloop.errors.StorageNoAnswerError`; a new connection waits at most the same
    (the connect timeout, 10 s, if that is shorter; libpq's least, 2 s). ``watcher.no_answer``
    is told at each cut, ``watcher.answered()`` at the first answer after one
    (:mod:`boloop.study.answer_limit`). One limit per storage and process: the last given."""
    if url.startswith("memory://") or sa.engine.make_url(url).get_backend_name() != "postgresql":
        return
    if not seconds:
        _limits.pop(url, None)
        return
    _limits[url] = AnswerLimit(seconds, watcher.no_answer, watcher.answered)
    with _engines_lock:
        engine = _engines.get(url)
    if engine is not None:
        _listen_for_answers(engine, url, made=True)


def answers_silent(url: str) -> bool:
    """Whether the database of storage ``url`` left a wait without an answer for the limit of
    :func:`limit_answers` and has not answered since."""
    limit = _limits.get(url)
    return limit is not None and limit.silent()


def _listen_for_answers(engine: Engine, url: str, made: bool = False) -> None:
    """Make ``engine``'s connections note their waits for the database's answer for the limit
    of ``url`` (looked up at each wait: it may change, or go): :func:`connect_noted`, with a
    connect timeout no longer than the limit. An engine ``made`` before lets go of the
    connections it holds (made without: the next are made with)."""
    if engine in _limited_engines:
        return
    _limited_engines.add(engine)

    def limit_of() -> AnswerLimit | None:
        return _limits.get(url)

    def connect(_dialect: Any, _record: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
        limit = _limits.get(url)
        if limit is None:
            return None  # SQLAlchemy's own connect
        cparams["connect_timeout"] = _connect_seconds(limit)
        return connect_noted(limit_of, cargs, cparams)

    sa_event.listen(engine, "do_connect", connect)
    if made:
        engine.dispose()


def _no_answer_error(
    url: str, display_url: str, exc: SQLAlchemyError
) -> StorageNoAnswerError | None:
    """The error of this thread's wait that the limit of ``url`` cut, if it was cut (told
    once), or of a new connection that timed out while the database is silent; else None. Any
    wait of the thread still noted ends here."""
    limit = _limits.get(url)
    if limit is None:
        return None
    cut = AnswerLimit.was_cut()
    if cut is None:
        if not limit.silent() or type(getattr(exc, "orig", None)).__name__ != "ConnectionTimeout":
            return None
        cut = (float(_connect_seconds(limit)), "a new connection")
    waited, what = cut
    after = (
        "if the server received the commit before it went silent, it is stored after all "
        "when it goes on (repeating an answer is then refused as 'already answered')"
        if what == "a commit"
        else "the server rolls back the transaction that was cut (what an earlier one of the "
        "same request stored, such as a new study, stays)"
    )
    return StorageNoAnswerError(
        f"storage {display_url!r}: the database server does not answer ({what} has waited "
        f"{waited:.0f} s; the connection is open but nothing comes back: a frozen server, a "
        f"paused virtual machine or a network that drops everything). The connection was cut; "
        f"{after}. Repeat it when the server answers again"
    )


def _connect_seconds(limit: AnswerLimit) -> int:
    """A new connection's timeout under ``limit``: its seconds, at most the connect timeout
    and at least libpq's least (2 s)."""
    return max(2, min(CONNECT_TIMEOUT_SECONDS, math.ceil(limit.seconds)))


def _end_wait(url: str) -> None:
    """This thread waits for no answer of ``url``'s database any more."""
    if url in _limits:
        AnswerLimit.was_cut()


class Storage:
    """An open SQL storage: SQLite or PostgreSQL (see the module docstring).

    Parameters
    ----------
    url:
        SQLAlchemy URL, or None for ``$BOLOOP_STORAGE`` / ``sqlite:///boloop.db``.
    create:
        Create the tables in an empty database (and the SQLite file if missing). With
        ``create=False`` a missing SQLite file (or an empty PostgreSQL database) is an empty
        storage that is never created.

    Raises :class:`StorageError` for a file that is not a database, a database with foreign
    tables, a schema version this boloop does not read, a server that cannot be reached
    (:class:`StorageUnavailableError`) or refuses the URL's password, role or database
    (:class:`StorageAccessError`), or a driver that is not installed. Nothing is written in
    those cases.
    """

    def __init__(self, url: str | None = None, create: bool = True) -> None:
        self.url = resolve_storage(url)
        self.display_url = safe_url(self.url)
        if self.url.startswith("memory://"):
            raise InvalidInputError(
                f"storage {self.url!r} is an in-process store: open it with open_storage()"
            )
        try:
            parsed = sa.engine.make_url(self.url)
        except (SQLAlchemyError, ValueError) as exc:  # ValueError: a host or port unreadable
            raise InvalidInputError(
                f"storage {self.display_url!r} is not a valid URL: {exc}"
            ) from exc
        backend = parsed.get_backend_name()
        if backend not in SQL_BACKENDS:
            raise InvalidInputError(
                f"storage {self.display_url!r}: the {backend!r} backend is not supported by "
                "this boloop; use SQLite (sqlite:///path/to/lab.db, or a file name ending in "
                f"{', '.join(SQLITE_SUFFIXES)}) or PostgreSQL (postgresql+psycopg://user@host/db)"
            )
        if backend == "sqlite" and parsed.host:  # sqlite://lab.db: two slashes, not three
            path = parsed.host + ("/" + parsed.database if parsed.database else "")
            raise InvalidInputError(
                f"storage {self.display_url!r} has two slashes: SQLite reads {parsed.host!r} as "
                "a host, which it has not, and would keep the studies in memory, lost when the "
                f"process ends; write three slashes before a relative path (sqlite:///{path}) "
                "and four before an absolute one (sqlite:////home/me/lab.db)"
            )
        self.backend = backend
        self._sqlite_path = _sqlite_path(parsed)
        self.exists = True
        if self._sqlite_path is not None and not os.path.exists(self._sqlite_path):
            parent = os.path.dirname(os.path.abspath(self._sqlite_path))
            if not os.path.isdir(parent):
                raise InvalidInputError(
                    f"storage {self.url!r}: directory {parent!r} does not exist (create it first)"
                )
            if not create:
                self.exists = False
                self.engine: Engine | None = None
                return
        self.engine = _engine_for(self.url)
        try:
            self._open(create)
        except StorageError:
            raise
        except SQLAlchemyError as exc:
            cut = _no_answer_error(self.url, self.display_url, exc)
            if cut is not None:
                raise cut from exc
            self._raise_if_refused(exc)
            if _is_connection_error(exc):
                _connection_outcome(self.url, _reason(exc))
                raise StorageUnavailableError(
                    f"storage {self.display_url!r}: cannot connect to the database server: "
                    f"{_reason(exc)}"
                ) from exc
            raise StorageError(
                f"storage {self.display_url!r} cannot be opened as a boloop database: {_reason(exc)}"
            ) from exc

    def _raise_if_refused(self, exc: SQLAlchemyError) -> None:
        """:class:`StorageAccessError` if the server refused the URL's password, role or
        database (the user's mistake: raised before anything is taken for an outage)."""
        state = _refused_state(exc)
        if state is not None:
            raise StorageAccessError(
                _refusal_message(self.display_url, self.url, state, _reason(exc))
            ) from exc

    # -- opening ------------------------------------------------------------------------------
    def _open(self, create: bool) -> None:
        assert self.engine is not None
        with self.engine.connect() as conn:
            _connection_outcome(self.url, None)
            with conn.begin():
                tables = set(sa.inspect(conn).get_table_names())
        if not tables:
            if not create:
                self.exists = False
                return
            self._initialise()
            return
        self._check_schema(tables)

    def _check_schema(self, tables: set[str]) -> None:
        assert self.engine is not None
        if "boloop_meta" not in tables:
            raise StorageError(
                f"storage {self.display_url!r} is not a boloop database (tables: "
                f"{sorted(tables)}); refusing to write to it"
            )
        with self.engine.connect() as conn, conn.begin():
            rows = dict(conn.execute(sa.select(_meta_table.c.key, _meta_table.c.value)).all())
        if rows.get("application") != "boloop":
            raise StorageError(
                f"storage {self.display_url!r} is not a boloop database (meta: {rows})"
            )
        try:
            version = int(rows.get("schema_version", ""))
        except ValueError as exc:
            raise StorageError(
                f"storage {self.display_url!r} has an unreadable schema version "
                f"{rows.get('schema_version')!r}"
            ) from exc
        if version != SCHEMA_VERSION:
            raise StorageError(
                f"storage {self.display_url!r} has schema version {version}, written by boloop "
                f"{rows.get('boloop_version', '?')}; this boloop reads schema version "
                f"{SCHEMA_VERSION}"
            )
        missing = {"boloop_studies", "boloop_events", "boloop_snapshots"} - tables
        if missing:
            raise StorageError(
                f"storage {self.display_url!r} is corrupt: tables {sorted(missing)} missing"
            )

    def _initialise(self) -> None:
        import boloop

        assert self.engine is not None
        if self.engine.dialect.name == "sqlite" and self._sqlite_path is not None:
            # persistent in the file; must run outside any transaction, so on the raw connection
            raw = self.engine.raw_connection()
            try:
                cur = raw.cursor()
                cur.execute("PRAGMA journal_mode = WAL")
                cur.close()
            finally:
                raw.close()
        with self._write_connection() as conn, conn.begin():
            if self.engine.dialect.name == "postgresql":
                # DDL is transactional there; two creators queue on this lock
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_PG_INIT_LOCK)))
            # a concurrent creator may have won the race while we waited for the lock
            tables = set(sa.inspect(conn).get_table_names())
            if tables:
                if "boloop_meta" not in tables:
                    raise StorageError(f"storage {self.display_url!r} is not a boloop database")
            else:
                if self.engine.dialect.name == "postgresql" and (
                    self.engine.url.database in _PG_MAINTENANCE_DATABASES
                ):
                    logger.warning(
                        "storage %s: boloop's tables are being created in PostgreSQL's "
                        "maintenance database %r, which every administration tool connects "
                        "to; a database of their own (createdb boloop) keeps the studies apart",
                        self.display_url,
                        self.engine.url.database,
                    )
                _metadata.create_all(conn)
                conn.execute(
                    _meta_table.insert(),
                    [
                        {"key": "application", "value": "boloop"},
                        {"key": "schema_version", "value": str(SCHEMA_VERSION)},
                        {"key": "boloop_version", "value": boloop.__version__},
                        {"key": "created_at", "value": now_iso()},
                    ],
                )
        self._check_schema(set(sa.inspect(self.engine).get_table_names()))

    @contextmanager
    def _write_connection(self) -> Iterator[Connection]:
        assert self.engine is not None
        with self.engine.connect() as conn:
            conn.execution_options(boloop_write=True)
            yield conn

    # -- studies ------------------------------------------------------------------------------
    def study_names(self) -> list[tuple[str, str]]:
        """``(name, created_at)`` of every study, in creation order."""
        if not self.exists:
            return []
        with self.transaction(write=False) as tx:
            rows = tx.conn.execute(
                sa.select(_studies_table.c.name, _studies_table.c.created_at).order_by(
                    _studies_table.c.study_id
                )
            ).all()
        return [(r[0], r[1]) for r in rows]

    def created_events(self, names: Sequence[str]) -> dict[str, Event]:
        """The ``created`` event of each study of ``names``, by name (see
        :class:`StorageBackend`): one indexed read of event 0 per study
        (``UNIQUE(study_id, seq)``), their names sent in batches a SQLite statement takes."""
        wanted = list(dict.fromkeys(names))
        if not self.exists or not wanted:
            return {}
        s, e = _studies_table, _events_table
        rows: list[Any] = []
        with self.transaction(write=False) as tx:
            for start in range(0, len(wanted), _NAMES_PER_READ):
                rows += tx.conn.execute(
                    sa.select(s.c.name, s.c.study_id, *_EVENT_COLUMNS)
                    .join_from(s, e, e.c.study_id == s.c.study_id)
                    .where(e.c.seq == 0, s.c.name.in_(wanted[start : start + _NAMES_PER_READ]))
                ).all()
        return decode_created([tuple(r) for r in rows], self.display_url)

    def log_summaries(self) -> dict[str, LogSummary] | None:
        """What the log of every study holds, counted in one statement (see
        :class:`StorageBackend`). A payload is vouched for as a JSON object by SQLite's
        ``json_valid`` (:func:`~boloop.study.log_summary.sqlite_object_check`) or PostgreSQL's ``json``
        type, which reads what Python's ``json`` reads, without its NaN and Infinity: a payload
        it refuses fails the statement (PostgreSQL), and None sends the caller to the logs."""
        if not self.exists:
            return {}
        if self.backend == "sqlite":
            import sqlite3

            check = sqlite_object_check(sqlite3.sqlite_version_info)
        else:
            check = "json_typeof(CAST(e.payload AS json)) = 'object'"
        if check is None:
            return None
        try:
            with self.transaction(write=False) as tx:
                rows = tx.conn.exec_driver_sql(summary_statement(check)).all()
        except (StorageUnavailableError, StorageAccessError):
            raise  # the storage, not what it holds
        except StorageError:  # a payload that is no JSON (PostgreSQL refuses to count it)
            return None
        return decode_summaries(rows)

    def study_id(self, name: str) -> int:
        """The id of study ``name``; :class:`UnknownIdError` listing the stored names if absent."""
        if self.exists:
            with self.transaction(write=False) as tx:
                row = tx.conn.execute(
                    sa.select(_studies_table.c.study_id).where(_studies_table.c.name == name)
                ).first()
            if row is not None:
                return int(row[0])
        names = [n for n, _ in self.study_names()]
        raise UnknownIdError(
            f"no study named {name!r} in storage {self.display_url!r}; stored studies: {names}"
        )

    def create_study(self, name: str, config: dict[str, Any]) -> int:
        """Insert the study and its ``created`` event (seq 0) in one transaction."""
        created = now_iso()
        return self._insert_study(name, created, [Event(0, "created", None, config, created)])

    def import_study(self, name: str, created_at: str, events: Sequence[Event]) -> int:
        """Insert a study with its whole log verbatim (see :class:`StorageBackend`)."""
        check_import(name, created_at, events, self.display_url)
        return self._insert_study(name, created_at, events)

    def _insert_study(self, name: str, created_at: str, events: Sequence[Event]) -> int:
        if not self.exists:
            raise StorageError(f"storage {self.display_url!r} was opened without create")
        rows = [
            {
                "seq": ev.seq,
                "kind": ev.kind,
                "query_id": ev.query_id,
                "payload": encode_payload(ev.payload),
                "created_at": ev.created_at,
            }
            for ev in events
        ]
        try:
            with self.transaction(write=True) as tx:
                values: dict[str, Any] = {"name": name, "created_at": created_at}
                if self.backend == "sqlite":  # never reuse a removed study's id (_DROPPED_ID_KEY)
                    floor = _dropped_id_max(tx.conn)
                    top = tx.conn.execute(sa.select(sa.func.max(_studies_table.c.study_id)))
                    if floor > (top.scalar() or 0):
                        values["study_id"] = floor + 1
                result = tx.conn.execute(_studies_table.insert().values(**values))
                key = result.inserted_primary_key
                assert key is not None
                sid = int(key[0])
                tx.conn.execute(_events_table.insert(), [{"study_id": sid, **r} for r in rows])
        except SeqConflict as exc:
            raise InvalidInputError(
                f"a study named {name!r} already exists in storage {self.display_url!r}; load it "
                "with load_study or choose another name"
            ) from exc
        return sid

    def drop_study(self, name: str, last_seq: int) -> None:
        """Remove a study copied here, if nothing was written to it since (see
        :class:`StorageBackend`). The only deletion of log rows, and only of a whole study."""
        sid = self.study_id(name)
        with self.transaction(write=True) as tx:
            events = tx.events(sid)  # PostgreSQL: the study's row lock, as every writer's
            check_droppable(name, events, last_seq, self.display_url)
            for table in (_snapshots_table, _events_table, _studies_table):
                tx.conn.execute(table.delete().where(table.c.study_id == sid))
            if sid > _dropped_id_max(tx.conn):
                tx.conn.execute(_meta_table.delete().where(_meta_table.c.key == _DROPPED_ID_KEY))
                tx.conn.execute(_meta_table.insert().values(key=_DROPPED_ID_KEY, value=str(sid)))

    # -- events -------------------------------------------------------------------------------
    @contextmanager
    def transaction(self, write: bool = True) -> Iterator[Transaction]:
        """A transaction; writing ones queue for the study (SQLite ``BEGIN IMMEDIATE``,
        PostgreSQL ``SELECT ... FOR UPDATE`` of the study's row at its first read or append).

        Commits when the block ends normally, rolls back if it raises. A unique-constraint
        failure is :class:`SeqConflict`; a lost connection a :class:`StorageError` saying so.
        """
        if self.engine is None:
            raise StorageError(f"storage {self.display_url!r} holds no studies yet")
        try:
            with self.engine.connect() as conn:
                _connection_outcome(self.url, None)
                if write:
                    conn.execution_options(boloop_write=True)
                elif self.backend == "postgresql":
                    # reads are single statements (each sees one snapshot): no BEGIN/COMMIT trips
                    conn.execution_options(isolation_level="AUTOCOMMIT")
                with conn.begin():
                    yield Transaction(conn, self.display_url, write=write)
        except IntegrityError as exc:
            raise SeqConflict(
                f"storage {self.display_url!r}: another process wrote to the study first "
                f"({_reason(exc)})"
            ) from exc
        except SQLAlchemyError as exc:
            cut = _no_answer_error(self.url, self.display_url, exc)
            if cut is not None:  # its limit cut the connection: told by the limit, not here
                raise cut from exc
            self._raise_if_refused(exc)
            if _is_connection_error(exc):
                _connection_outcome(self.url, _reason(exc))
                raise StorageUnavailableError(
                    f"storage {self.display_url!r}: the connection to the database server was "
                    f"lost or refused ({_reason(exc)}). The operation was rolled back, so nothing "
                    "of it is half-written; repeat it when the server is reachable (if the "
                    "connection broke during the commit itself and the answer was stored, "
                    "repeating it is refused as 'already answered')"
                ) from exc
            raise StorageError(f"storage {self.display_url!r}: {_reason(exc)}") from exc
        finally:
            _end_wait(self.url)

    def events(self, study_id: int, after: int = -1) -> list[Event]:
        """The events of a study with ``seq > after``, in order (a reading transaction)."""
        with self.transaction(write=False) as tx:
            return tx.events(study_id, after)

    def put_snapshot(self, study_id: int, seq: int, fingerprint: str, data: bytes) -> None:
        """Replace the study's snapshot (a cache: failures are logged, never raised)."""
        try:
            with self.transaction(write=True) as tx:
                tx.conn.execute(
                    _snapshots_table.delete().where(_snapshots_table.c.study_id == study_id)
                )
                tx.conn.execute(
                    _snapshots_table.insert().values(
                        study_id=study_id,
                        seq=seq,
                        fingerprint=fingerprint,
                        created_at=now_iso(),
                        data=data,
                    )
                )
        except StorageError as exc:
            logger.debug("snapshot of study %s at event %s not stored: %s", study_id, seq, exc)

    def get_snapshot(self, study_id: int) -> tuple[int, str, bytes] | None:
        """``(seq, fingerprint, data)`` of the study's snapshot, if any."""
        with self.transaction(write=False) as tx:
            row = tx.conn.execute(
                sa.select(
                    _snapshots_table.c.seq, _snapshots_table.c.fingerprint, _snapshots_table.c.data
                ).where(_snapshots_table.c.study_id == study_id)
            ).first()
        return None if row is None else (int(row[0]), str(row[1]), bytes(row[2]))

    def size_bytes(self) -> int | None:
        """Size of the SQLite file plus its WAL, or None for other databases."""
        if self._sqlite_path is None:
            return None
        total = 0
        for suffix in ("", "-wal"):
            p = self._sqlite_path + suffix
            if os.path.exists(p):
                total += os.path.getsize(p)
        return total


def _dropped_id_max(conn: Connection) -> int:
    """The highest study id ``drop_study`` removed from this database (0: none)."""
    value = conn.execute(
        sa.select(_meta_table.c.value).where(_meta_table.c.key == _DROPPED_ID_KEY)
    ).scalar()
    try:
        return int(value or 0)
    except ValueError:
        return 0


def _reason(exc: SQLAlchemyError) -> str:
    """The driver's message of a database error, on one line."""
    text = str(getattr(exc, "orig", None) or exc)
    return " ".join(text.split())


class Transaction:
    """Reads and appends within one database transaction (see :meth:`Storage.transaction`)."""

    def __init__(self, conn: Connection, url: str, write: bool = False) -> None:
        self.conn = conn
        self.url = url
        self._write = write
        self._locked: set[int] = set()
        #: (name, created_at) of studies whose row a PostgreSQL read fetched with their events
        self._rows: dict[int, tuple[str, str] | None] = {}

    def _lock(self, study_id: int) -> None:
        """PostgreSQL: a writing transaction first takes the study's row lock, so writers of
        one study queue (the UNIQUE constraint still decides any race)."""
        if not self._write or study_id in self._locked or self.conn.dialect.name != "postgresql":
            return
        self.conn.execute(
            sa.select(_studies_table.c.study_id)
            .where(_studies_table.c.study_id == study_id)
            .with_for_update()
        )
        self._locked.add(study_id)

    def study(self, study_id: int) -> tuple[str, str] | None:
        """``(name, created_at)`` of the study with this id, None if there is none."""
        if study_id in self._rows:
            return self._rows[study_id]
        row = self.conn.execute(
            sa.select(_studies_table.c.name, _studies_table.c.created_at).where(
                _studies_table.c.study_id == study_id
            )
        ).first()
        return None if row is None else (str(row[0]), str(row[1]))

    def events(self, study_id: int, after: int = -1) -> list[Event]:
        if self.conn.dialect.name == "postgresql":
            return self._row_and_read(int(study_id), int(after))
        rows = self.conn.execute(
            sa.select(
                _events_table.c.seq,
                _events_table.c.kind,
                _events_table.c.query_id,
                _events_table.c.payload,
                _events_table.c.created_at,
            )
            .where(_events_table.c.study_id == study_id, _events_table.c.seq > after)
            .order_by(_events_table.c.seq)
        ).all()
        return decode_events([tuple(r) for r in rows], study_id, after, self.url)

    def _row_and_read(self, study_id: int, after: int) -> list[Event]:
        """PostgreSQL: the study's row (``name, created_at``, for :meth:`study`; in a writing
        transaction its lock, taken once) and the catch-up read in one round trip, as two
        statements of one simple query (the read runs after the lock is granted, so it sees
        what the previous holder committed). Only integers are put into the text."""
        lock = self._write and study_id not in self._locked
        sql = (
            f"SELECT name, created_at FROM boloop_studies WHERE study_id = {study_id}"
            f"{' FOR UPDATE' if lock else ''}; "
            "SELECT seq, kind, query_id, payload, created_at FROM boloop_events "
            f"WHERE study_id = {study_id} AND seq > {after} ORDER BY seq"
        )
        result = self.conn.exec_driver_sql(sql)
        cursor = result.cursor
        row = cursor.fetchone()
        if not cursor.nextset():  # pragma: no cover - the driver dropped the second result
            raise StorageError(f"storage {self.url!r}: the catch-up read returned nothing")
        rows = [tuple(r) for r in cursor.fetchall()]
        result.close()
        if lock:
            self._locked.add(study_id)
        self._rows[study_id] = None if row is None else (str(row[0]), str(row[1]))
        return decode_events(rows, study_id, after, self.url)

    def append(
        self, study_id: int, seq: int, kind: str, query_id: int | None, payload: dict[str, Any]
    ) -> Event:
        """Insert one event; a second insert of the same ``(study_id, seq)`` fails."""
        if kind not in EVENT_KINDS:
            raise InvalidInputError(f"kind must be one of {EVENT_KINDS}, got {kind!r}")
        text = encode_payload(payload)
        self._lock(study_id)
        created = now_iso()
        self.conn.execute(
            _events_table.insert().values(
                study_id=study_id,
                seq=seq,
                kind=kind,
                query_id=query_id,
                payload=text,
                created_at=created,
            )
        )
        return Event(seq, kind, query_id, json.loads(text), created)
