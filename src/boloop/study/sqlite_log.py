"""A study's log in an existing boloop SQLite file, read and appended with Python's own
:mod:`sqlite3`: the quick path of ``boloop study ask/tell`` (issue 15).

Importing SQLAlchemy costs a command-line call about 0.15 s, more than loading a 300-answer
study from its snapshot and computing the next query. :func:`open_sqlite_log` therefore opens a
plain ``sqlite:///path`` URL (or a bare ``*.db`` path) whose file already exists and holds the
tables of :mod:`boloop.study.storage` at the schema version this module reads, and returns None
for anything else (a missing file, another database, URL options, a different schema version):
:class:`~boloop.study.storage.Storage` then opens it with SQLAlchemy and gives its own clear
messages. Creating a study, the tables or a database always goes through
:class:`~boloop.study.storage.Storage`.

The semantics are those of :class:`~boloop.study.storage.Storage`: a writing transaction is
``BEGIN IMMEDIATE`` with the same busy timeout, one answer is one transaction, and an insert of an
event whose ``(study_id, seq)`` exists raises :class:`~boloop.study.log.SeqConflict` (of two
tellers exactly one wins).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from boloop.errors import InvalidInputError, StorageError, UnknownIdError
from boloop.study.log import (
    EVENT_KINDS,
    Event,
    SeqConflict,
    decode_created,
    decode_events,
    encode_payload,
    now_iso,
)
from boloop.study.log_summary import (
    LogSummary,
    decode_summaries,
    sqlite_object_check,
    summary_statement,
)

__all__ = ["SCHEMA_VERSION", "SQLiteLog", "open_sqlite_log"]

#: the version of boloop's tables this module reads and writes (that of :mod:`boloop.study.storage`;
#: a database of any other version is left to it)
SCHEMA_VERSION = 1
#: the same as ``boloop.study.storage.BUSY_TIMEOUT_SECONDS``
BUSY_TIMEOUT_SECONDS = 30.0
#: ``BOLOOP_SQLITE_QUICK=0`` sends every storage through SQLAlchemy
ENABLED = os.environ.get("BOLOOP_SQLITE_QUICK", "1") != "0"
#: study names per statement of :meth:`SQLiteLog.created_events` (SQLite takes at most 999
#: parameters per statement before its version 3.32)
_NAMES_PER_READ = 500
_TABLES = {"boloop_meta", "boloop_studies", "boloop_events", "boloop_snapshots"}


def _plain_sqlite_path(storage: str | None) -> str | None:
    """The absolute file path of a plain SQLite URL (what ``resolve_storage`` makes of it), or
    None for anything this module leaves to SQLAlchemy."""
    url = storage or os.environ.get("BOLOOP_STORAGE") or "sqlite:///boloop.db"
    if not isinstance(url, str):
        return None
    if "://" not in url:
        if not url.lower().endswith((".db", ".sqlite", ".sqlite3")):
            return None
        path = url
    elif url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
    else:
        return None
    if not path or "?" in path or "%" in path or path.startswith((":memory:", "file:")):
        return None
    return os.path.abspath(path)


def open_sqlite_log(storage: str | None) -> SQLiteLog | None:
    """The quick log of ``storage`` (a URL, or None for ``$BOLOOP_STORAGE`` or the default),
    or None when SQLAlchemy's :class:`~boloop.study.storage.Storage` must open it."""
    if not ENABLED:
        return None
    path = _plain_sqlite_path(storage)
    if path is None or not os.path.isfile(path):
        return None
    log = SQLiteLog(path)
    return log if log.is_current_boloop_file() else None


class SQLiteLog:
    """An open boloop SQLite file (see the module docstring); the subset of
    :class:`~boloop.study.storage.Storage` a study needs once it exists."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.url = "sqlite:///" + path
        self.exists = True

    def is_current_boloop_file(self) -> bool:
        """Whether the file holds boloop's tables at this schema version (anything else, an
        older schema to migrate or another application's file, is left to SQLAlchemy)."""
        try:
            with self._connect() as conn:
                tables = {
                    r[0]
                    for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                }
                if not _TABLES <= tables:
                    return False
                meta = dict(conn.execute("SELECT key, value FROM boloop_meta").fetchall())
        except sqlite3.Error:
            return False
        return (
            meta.get("application") == "boloop"
            and meta.get("schema_version") == str(SCHEMA_VERSION)
        )

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection of its own (safe across threads), never creating the file."""
        uri = "file:" + urllib.parse.quote(self.path) + "?mode=rw"
        conn = sqlite3.connect(
            uri, uri=True, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None,
            check_same_thread=False,
        )  # fmt: skip
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
            yield conn
        finally:
            conn.close()

    @contextmanager
    def transaction(self, write: bool = True) -> Iterator[SQLiteTransaction]:
        """A transaction (writing ones ``BEGIN IMMEDIATE``): commits when the block ends
        normally, rolls back if it raises."""
        try:
            with self._connect() as conn:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield SQLiteTransaction(conn, self.url)
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):  # already rolled back by SQLite
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
        except sqlite3.IntegrityError as exc:
            raise SeqConflict(
                f"storage {self.url!r}: another process wrote to the study first ({exc})"
            ) from exc
        except sqlite3.Error as exc:
            raise StorageError(f"storage {self.url!r}: {exc}") from exc

    def study_names(self) -> list[tuple[str, str]]:
        """``(name, created_at)`` of every study, in creation order."""
        with self.transaction(write=False) as tx:
            rows = tx.conn.execute(
                "SELECT name, created_at FROM boloop_studies ORDER BY study_id"
            ).fetchall()
        return [(r[0], r[1]) for r in rows]

    def created_events(self, names: Sequence[str]) -> dict[str, Event]:
        """The ``created`` event (seq 0) of each study of ``names`` that is stored, by name, as
        :meth:`boloop.study.storage.Storage.created_events` reads them."""
        wanted = list(dict.fromkeys(names))
        rows: list[Any] = []
        with self.transaction(write=False) as tx:
            for start in range(0, len(wanted), _NAMES_PER_READ):
                part = wanted[start : start + _NAMES_PER_READ]
                rows += tx.conn.execute(
                    "SELECT s.name, s.study_id, e.seq, e.kind, e.query_id, e.payload, "
                    "e.created_at FROM boloop_studies s JOIN boloop_events e "
                    "ON e.study_id = s.study_id AND e.seq = 0 "
                    f"WHERE s.name IN ({', '.join('?' * len(part))})",
                    part,
                ).fetchall()
        return decode_created(rows, self.url)

    def log_summaries(self) -> dict[str, LogSummary] | None:
        """What the log of every study holds, counted in one statement, as
        :meth:`boloop.study.storage.Storage.log_summaries` counts it; None where this SQLite
        cannot tell a JSON object as Python does (:func:`~boloop.study.log_summary.sqlite_object_check`)
        or the statement fails (the logs are read instead)."""
        check = sqlite_object_check(sqlite3.sqlite_version_info)
        if check is None:
            return None
        try:
            with self.transaction(write=False) as tx:
                rows = tx.conn.execute(summary_statement(check)).fetchall()
        except StorageError:  # no JSON functions in this SQLite, say: the logs will tell
            return None
        return decode_summaries(rows)

    def study_id(self, name: str) -> int:
        """The id of study ``name``; :class:`UnknownIdError` listing the stored names if absent."""
        with self.transaction(write=False) as tx:
            row = tx.conn.execute(
                "SELECT study_id FROM boloop_studies WHERE name = ?", (name,)
            ).fetchone()
        if row is not None:
            return int(row[0])
        names = [n for n, _ in self.study_names()]
        raise UnknownIdError(
            f"no study named {name!r} in storage {self.url!r}; stored studies: {names}"
        )

    def events(self, study_id: int, after: int = -1) -> list[Event]:
        """The events of a study with ``seq > after``, in order (a reading transaction)."""
        with self.transaction(write=False) as tx:
            return tx.events(study_id, after)

    def put_snapshot(self, study_id: int, seq: int, fingerprint: str, data: bytes) -> None:
        """Replace the study's snapshot (a cache: failures are ignored, as by Storage)."""
        try:
            with self.transaction(write=True) as tx:
                tx.conn.execute("DELETE FROM boloop_snapshots WHERE study_id = ?", (study_id,))
                tx.conn.execute(
                    "INSERT INTO boloop_snapshots (study_id, seq, fingerprint, created_at, data) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (study_id, seq, fingerprint, now_iso(), data),
                )
        except StorageError:
            pass

    def get_snapshot(self, study_id: int) -> tuple[int, str, bytes] | None:
        """``(seq, fingerprint, data)`` of the study's snapshot, if any."""
        with self.transaction(write=False) as tx:
            row = tx.conn.execute(
                "SELECT seq, fingerprint, data FROM boloop_snapshots WHERE study_id = ?",
                (study_id,),
            ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]), bytes(row[2]))

    def size_bytes(self) -> int:
        """Size of the SQLite file plus its WAL."""
        return sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))


class SQLiteTransaction:
    """Reads and appends within one transaction of the quick path, what
    :meth:`SQLiteLog.transaction` yields (the ``Transaction`` of Storage)."""

    def __init__(self, conn: sqlite3.Connection, url: str) -> None:
        self.conn = conn
        self.url = url

    def study(self, study_id: int) -> tuple[str, str] | None:
        """``(name, created_at)`` of the study with this id, None if there is none."""
        row = self.conn.execute(
            "SELECT name, created_at FROM boloop_studies WHERE study_id = ?", (study_id,)
        ).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def events(self, study_id: int, after: int = -1) -> list[Event]:
        rows = self.conn.execute(
            "SELECT seq, kind, query_id, payload, created_at FROM boloop_events "
            "WHERE study_id = ? AND seq > ? ORDER BY seq",
            (study_id, after),
        ).fetchall()
        return decode_events(rows, study_id, after, self.url)

    def append(
        self, study_id: int, seq: int, kind: str, query_id: int | None, payload: dict[str, Any]
    ) -> Event:
        """Insert one event; an existing ``(study_id, seq)`` raises at the insert."""
        if kind not in EVENT_KINDS:
            raise InvalidInputError(f"kind must be one of {EVENT_KINDS}, got {kind!r}")
        created = now_iso()
        text = encode_payload(payload)
        self.conn.execute(
            "INSERT INTO boloop_events (study_id, seq, kind, query_id, payload, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (study_id, seq, kind, query_id, text, created),
        )
        return Event(seq, kind, query_id, json.loads(text), created)
