"""What a storage of studies is: the :class:`StorageBackend` protocol every backend follows, with
its :class:`StorageTransaction`, and the checks of a log that every backend makes alike before it
imports a study (:func:`check_import`) or removes a copy of one (:func:`check_droppable`).

A new backend implements the protocol and passes ``tests/test_storage_contract.py``, as the SQL
storage (:class:`boloop.study.storage_sql.Storage`) and the in-process one
(:mod:`boloop.study.storage_memory`) do. Nothing here imports SQLAlchemy. These names are
imported from :mod:`boloop.study.storage`, whose docstring tells what a storage keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from boloop.errors import InvalidInputError
from boloop.study.log import EVENT_KINDS, Event, written_since
from boloop.study.log_summary import LogSummary

__all__ = ["StorageBackend", "StorageTransaction", "check_droppable", "check_import"]


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


# -- checks every backend makes alike ---------------------------------------------------------
def name_taken(name: str, url: str) -> str:
    """The refusal of a study name that ``url``'s storage holds already, the same from every
    backend: how to go on with the stored study, at the terminal and in Python, or to choose
    another name."""
    import shlex

    return (
        f"a study named {name!r} already exists in storage {url!r}: go on with it (boloop "
        f"study ask {shlex.quote(name)}, with --storage when not the default; in Python "
        "load_study) or choose another name"
    )


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
