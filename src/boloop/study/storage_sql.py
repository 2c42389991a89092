"""The SQL storage of studies: :class:`Storage`, one class for SQLite and PostgreSQL (SQLAlchemy
Core). Opening a database checks its tables (or creates them); then studies are created,
imported, found, listed and removed, and a study's events and snapshot read and written, each
in a transaction. What it keeps, how its writers queue and what its errors mean is told in
:mod:`boloop.study.storage`, which gives :class:`Storage` too and whose
:func:`~boloop.study.storage.open_storage` opens it for a SQLite or PostgreSQL URL.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from boloop.errors import (
    InvalidInputError,
    StorageAccessError,
    StorageError,
    StorageUnavailableError,
    UnknownIdError,
)
from boloop.study.log import Event, SeqConflict, decode_created, encode_payload, now_iso, safe_url
from boloop.study.log_summary import (
    LogSummary,
    decode_summaries,
    sqlite_object_check,
    summary_statement,
)
from boloop.study.storage_backend import check_droppable, check_import, name_taken
from boloop.study.storage_connections import (
    _connection_outcome,
    _end_wait,
    _engine_for,
    _no_answer_error,
)
from boloop.study.storage_failures import (
    _is_connection_error,
    _reason,
    _refusal_message,
    _refused_state,
)
from boloop.study.storage_schema import (
    _DROPPED_ID_KEY,
    _EVENT_COLUMNS,
    SCHEMA_VERSION,
    _dropped_id_max,
    _events_table,
    _meta_table,
    _metadata,
    _snapshots_table,
    _studies_table,
)
from boloop.study.storage_transaction import Transaction
from boloop.study.storage_urls import SQLITE_SUFFIXES, _sqlite_path, resolve_storage

__all__ = ["SQL_BACKENDS", "Storage"]

logger = logging.getLogger("boloop")

#: backends the SQL storage is written and tested for
SQL_BACKENDS = ("sqlite", "postgresql")
#: PostgreSQL's own databases: a storage URL that names one is taken, with a warning
_PG_MAINTENANCE_DATABASES = ("postgres", "template0", "template1")
#: study names per statement of :meth:`Storage.created_events` (SQLite takes at most 999
#: parameters per statement before its version 3.32)
_NAMES_PER_READ = 500
#: key of the PostgreSQL advisory lock that serialises creating the tables
_PG_INIT_LOCK = 0x626F6C6F6F70  # "boloop"


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
            raise InvalidInputError(name_taken(name, self.display_url)) from exc
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
