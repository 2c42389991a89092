"""Storage of studies: an append-only, versioned event log written with SQLAlchemy Core.

A storage is named by a URL (``sqlite:///boloop.db`` by default, or ``$BOLOOP_STORAGE``); any
database SQLAlchemy speaks works without new code, SQLite gets WAL mode so that a reader never
blocks the writer. Three tables:

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
    insert succeeds. Kinds: ``created`` (full configuration and boloop version), ``asked`` (the
    query issued), ``told`` (its answer), ``added`` (a measurement the user made on their own),
    ``withdrawn`` (an undo). Rows are only ever inserted.

One answer is one transaction (:meth:`Storage.transaction`); on SQLite a writing transaction is
``BEGIN IMMEDIATE`` so concurrent writers queue on the busy timeout instead of failing on a lock
upgrade.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from boloop.errors import InvalidInputError, StorageError, UnknownIdError
from boloop.study.log import EVENT_KINDS, Event, SeqConflict, decode_events, now_iso
from boloop.study.log import encode_payload as _encode

__all__ = [
    "DEFAULT_STORAGE",
    "SCHEMA_VERSION",
    "Event",
    "Storage",
    "SeqConflict",
    "resolve_storage",
]

logger = logging.getLogger("boloop")

#: version of the tables below; bump it (and write a migration) whenever they change
SCHEMA_VERSION = 1
DEFAULT_STORAGE = "sqlite:///boloop.db"
#: seconds a SQLite writer waits for another writer's transaction before giving up
BUSY_TIMEOUT_SECONDS = 30.0

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


def resolve_storage(storage: str | None) -> str:
    """The storage URL: ``storage`` if given, else ``$BOLOOP_STORAGE``, else ``sqlite:///boloop.db``.

    A bare file path (no ``://``) ending in ``.db``, ``.sqlite`` or ``.sqlite3`` is read as a
    SQLite file; anything else without ``://`` (``notaurl``, a typo in ``$BOLOOP_STORAGE``) is
    refused with :class:`InvalidInputError` before anything is created. Relative SQLite paths are
    made absolute (against the current directory).
    """
    url = storage or os.environ.get("BOLOOP_STORAGE") or DEFAULT_STORAGE
    where = "--storage" if storage else "$BOLOOP_STORAGE" if os.environ.get("BOLOOP_STORAGE") else ""
    if not isinstance(url, str):
        raise InvalidInputError(f"storage must be a URL string, got {storage!r}")
    if "://" not in url:
        if not url.lower().endswith(SQLITE_SUFFIXES):
            raise InvalidInputError(
                f"storage {url!r}{f' (from {where})' if where else ''} is neither a URL "
                "(sqlite:///path/to/lab.db) nor a SQLite file name ending in "
                f"{', '.join(SQLITE_SUFFIXES)}"
            )
        url = "sqlite:///" + url
    prefix, sep, rest = url.partition(":///")
    if sep and prefix.startswith("sqlite") and rest and not rest.startswith((":memory:", "file:")):
        path, q, query = rest.partition("?")
        if not os.path.isabs(path):  # pin relative files to the current directory now
            url = f"{prefix}:///{os.path.abspath(path)}{q}{query}"
    return url


#: endings of a bare storage path read as a SQLite file
SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def _sqlite_path(url: sa.engine.URL) -> str | None:
    if not url.drivername.startswith("sqlite"):
        return None
    db = url.database
    if not db or db == ":memory:" or db.startswith("file:"):
        return None
    return db


_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def _engine_for(url: str) -> Engine:
    """One engine per URL and process (engines own connection pools)."""
    with _engines_lock:
        engine = _engines.get(url)
        if engine is None:
            engine = sa.create_engine(url)
            if engine.dialect.name == "sqlite":
                _configure_sqlite(engine)
            _engines[url] = engine
        return engine


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


class Storage:
    """An open storage (see the module docstring).

    Parameters
    ----------
    url:
        SQLAlchemy URL, or None for ``$BOLOOP_STORAGE`` / ``sqlite:///boloop.db``.
    create:
        Create the tables in an empty database (and the SQLite file if missing). With
        ``create=False`` a missing SQLite file is an empty storage that is never created.

    Raises :class:`StorageError` for a file that is not a database, a database with foreign
    tables, or a schema version this boloop does not read. Nothing is written in those cases.
    """

    def __init__(self, url: str | None = None, create: bool = True) -> None:
        self.url = resolve_storage(url)
        try:
            parsed = sa.engine.make_url(self.url)
        except SQLAlchemyError as exc:
            raise InvalidInputError(f"storage {self.url!r} is not a valid URL: {exc}") from exc
        backend = parsed.get_backend_name()
        if backend != "sqlite":
            # PostgreSQL (issue 14) is not supported yet; say so instead of a driver traceback
            raise InvalidInputError(
                f"storage {self.url!r}: the {backend!r} backend is not supported by this boloop; "
                "use a SQLite URL (sqlite:///path/to/lab.db) or a file name ending in "
                f"{', '.join(SQLITE_SUFFIXES)}"
            )
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
        try:
            self.engine = _engine_for(self.url)
            self._open(create)
        except StorageError:
            raise
        except SQLAlchemyError as exc:
            raise StorageError(
                f"storage {self.url!r} cannot be opened as a boloop database: {getattr(exc, 'orig', None) or exc}"
            ) from exc

    # -- opening ------------------------------------------------------------------------------
    def _open(self, create: bool) -> None:
        assert self.engine is not None
        with self.engine.connect() as conn:
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
                f"storage {self.url!r} is not a boloop database (tables: {sorted(tables)}); "
                "refusing to write to it"
            )
        with self.engine.connect() as conn, conn.begin():
            rows = dict(conn.execute(sa.select(_meta_table.c.key, _meta_table.c.value)).all())
        if rows.get("application") != "boloop":
            raise StorageError(f"storage {self.url!r} is not a boloop database (meta: {rows})")
        try:
            version = int(rows.get("schema_version", ""))
        except ValueError as exc:
            raise StorageError(
                f"storage {self.url!r} has an unreadable schema version {rows.get('schema_version')!r}"
            ) from exc
        if version != SCHEMA_VERSION:
            raise StorageError(
                f"storage {self.url!r} has schema version {version}, written by boloop "
                f"{rows.get('boloop_version', '?')}; this boloop reads schema version "
                f"{SCHEMA_VERSION}"
            )
        missing = {"boloop_studies", "boloop_events", "boloop_snapshots"} - tables
        if missing:
            raise StorageError(f"storage {self.url!r} is corrupt: tables {sorted(missing)} missing")

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
            # a concurrent creator may have won the race while we waited for the lock
            tables = set(sa.inspect(conn).get_table_names())
            if tables:
                if "boloop_meta" not in tables:
                    raise StorageError(f"storage {self.url!r} is not a boloop database")
            else:
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
        assert self.engine is not None
        with self.engine.connect() as conn, conn.begin():
            rows = conn.execute(
                sa.select(_studies_table.c.name, _studies_table.c.created_at).order_by(
                    _studies_table.c.study_id
                )
            ).all()
        return [(r[0], r[1]) for r in rows]

    def study_id(self, name: str) -> int:
        """The id of study ``name``; :class:`UnknownIdError` listing the stored names if absent."""
        if self.exists:
            assert self.engine is not None
            with self.engine.connect() as conn, conn.begin():
                row = conn.execute(
                    sa.select(_studies_table.c.study_id).where(_studies_table.c.name == name)
                ).first()
            if row is not None:
                return int(row[0])
        names = [n for n, _ in self.study_names()]
        raise UnknownIdError(
            f"no study named {name!r} in storage {self.url!r}; stored studies: {names}"
        )

    def create_study(self, name: str, config: dict[str, Any]) -> int:
        """Insert the study and its ``created`` event (seq 0) in one transaction."""
        if not self.exists:
            raise StorageError(f"storage {self.url!r} was opened without create")
        created = now_iso()
        payload = _encode(config)
        try:
            with self._write_connection() as conn, conn.begin():
                result = conn.execute(_studies_table.insert().values(name=name, created_at=created))
                key = result.inserted_primary_key
                assert key is not None
                sid = int(key[0])
                conn.execute(
                    _events_table.insert().values(
                        study_id=sid,
                        seq=0,
                        kind="created",
                        query_id=None,
                        payload=payload,
                        created_at=created,
                    )
                )
        except IntegrityError as exc:
            raise InvalidInputError(
                f"a study named {name!r} already exists in storage {self.url!r}; load it with "
                "load_study or choose another name"
            ) from exc
        return sid

    # -- events -------------------------------------------------------------------------------
    @contextmanager
    def transaction(self, write: bool = True) -> Iterator[Transaction]:
        """A transaction; writing ones take the write lock first (SQLite ``BEGIN IMMEDIATE``).

        Commits when the block ends normally, rolls back if it raises.
        """
        assert self.engine is not None
        try:
            with self.engine.connect() as conn:
                if write:
                    conn.execution_options(boloop_write=True)
                with conn.begin():
                    yield Transaction(conn, self.url)
        except IntegrityError as exc:
            raise SeqConflict(
                f"storage {self.url!r}: another process wrote to the study first ({getattr(exc, 'orig', None) or exc})"
            ) from exc
        except SQLAlchemyError as exc:
            raise StorageError(
                f"storage {self.url!r}: {getattr(exc, 'orig', None) or exc}"
            ) from exc

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


class Transaction:
    """Reads and appends within one database transaction (see :meth:`Storage.transaction`)."""

    def __init__(self, conn: Connection, url: str) -> None:
        self.conn = conn
        self.url = url

    def events(self, study_id: int, after: int = -1) -> list[Event]:
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
        return decode_events(rows, study_id, after, self.url)

    def append(
        self, study_id: int, seq: int, kind: str, query_id: int | None, payload: dict[str, Any]
    ) -> Event:
        """Insert one event; a second insert of the same ``(study_id, seq)`` fails at commit."""
        if kind not in EVENT_KINDS:
            raise InvalidInputError(f"kind must be one of {EVENT_KINDS}, got {kind!r}")
        created = now_iso()
        self.conn.execute(
            _events_table.insert().values(
                study_id=study_id,
                seq=seq,
                kind=kind,
                query_id=query_id,
                payload=_encode(payload),
                created_at=created,
            )
        )
        return Event(seq, kind, query_id, json.loads(_encode(payload)), created)
