"""Reads and appends inside one transaction of the SQL storage: :class:`Transaction`, the
:class:`~boloop.study.storage_backend.StorageTransaction` that
:meth:`boloop.study.storage_sql.Storage.transaction` gives. A study's events (on PostgreSQL read
with its row in one round trip), its row lock in a writing transaction, and the append of one
event. See :mod:`boloop.study.storage`, which gives this class too.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from boloop.errors import InvalidInputError, StorageError
from boloop.study.log import EVENT_KINDS, Event, decode_events, encode_payload, now_iso
from boloop.study.storage_schema import _events_table, _studies_table

__all__ = ["Transaction"]


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
