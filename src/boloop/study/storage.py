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

The code lives in sibling modules, each importing only those listed before it, and their public
names are imported from here: :mod:`~boloop.study.storage_backend` (the protocol, and the checks
every backend makes alike), :mod:`~boloop.study.storage_urls` (storage URLs),
:mod:`~boloop.study.storage_schema` (the tables and their version),
:mod:`~boloop.study.storage_failures` (what a database error means),
:mod:`~boloop.study.storage_connections` (engines, who is told of outages, how long an answer is
waited for), :mod:`~boloop.study.storage_transaction` (the reads and appends of one transaction)
and :mod:`~boloop.study.storage_sql` (:class:`Storage`).
"""

from __future__ import annotations

from boloop.study.log import Event, SeqConflict, safe_url
from boloop.study.storage_backend import StorageBackend, StorageTransaction
from boloop.study.storage_backend import check_droppable as check_droppable
from boloop.study.storage_backend import check_import as check_import
from boloop.study.storage_connections import BUSY_TIMEOUT_SECONDS as BUSY_TIMEOUT_SECONDS
from boloop.study.storage_connections import CONNECT_TIMEOUT_SECONDS as CONNECT_TIMEOUT_SECONDS
from boloop.study.storage_connections import POSTGRES_EXTRA as POSTGRES_EXTRA
from boloop.study.storage_connections import AnswerWatcher as AnswerWatcher
from boloop.study.storage_connections import (
    answers_silent,
    dispose_engines,
    limit_answers,
    watch_connections,
)
from boloop.study.storage_schema import SCHEMA_VERSION
from boloop.study.storage_sql import SQL_BACKENDS as SQL_BACKENDS
from boloop.study.storage_sql import Storage
from boloop.study.storage_transaction import Transaction as Transaction
from boloop.study.storage_urls import DEFAULT_STORAGE, resolve_storage, sqlite_in_memory
from boloop.study.storage_urls import SQLITE_SUFFIXES as SQLITE_SUFFIXES

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
# also imported from here, where they were defined before the split into the modules above:
# check_import and check_droppable (boloop.study.storage_memory), Transaction (tests that wrap
# its methods), BUSY_TIMEOUT_SECONDS (named by boloop.study.sqlite_log), and the other public
# constants and AnswerWatcher


def open_storage(url: str | None = None, create: bool = True) -> StorageBackend:
    """The backend of ``url`` (see the module docstring), opened and checked."""
    resolved = resolve_storage(url)
    if resolved.startswith("memory://"):
        from boloop.study.storage_memory import MemoryStorage

        return MemoryStorage(resolved, create=create)
    return Storage(resolved, create=create)
