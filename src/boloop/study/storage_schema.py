"""The tables of the SQL storage (SQLAlchemy Core, the same for SQLite and PostgreSQL) and their
version, :data:`SCHEMA_VERSION`, checked on every open. What each of ``boloop_meta``,
``boloop_studies``, ``boloop_events`` and ``boloop_snapshots`` holds is told in
:mod:`boloop.study.storage` (which gives :data:`SCHEMA_VERSION` too);
:mod:`boloop.study.sqlite_log` reads and writes the same tables without SQLAlchemy.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

__all__ = ["SCHEMA_VERSION"]

#: version of the tables below; bump it (and write a migration) whenever they change
SCHEMA_VERSION = 1

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
#: ``boloop_meta`` key: the highest study id ``drop_study`` removed. SQLite gives a new row the
#: highest id in the table plus one, which would hand a removed study's id to the next study made
#: (and a process still holding the removed study would read and write the new one's log): a new
#: study's id is kept above it. PostgreSQL's id sequence never goes back; the key is kept there too
_DROPPED_ID_KEY = "dropped_study_id_max"


def _dropped_id_max(conn: Connection) -> int:
    """The highest study id ``drop_study`` removed from this database (0: none)."""
    value = conn.execute(
        sa.select(_meta_table.c.value).where(_meta_table.c.key == _DROPPED_ID_KEY)
    ).scalar()
    try:
        return int(value or 0)
    except ValueError:
        return 0
