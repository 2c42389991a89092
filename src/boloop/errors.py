"""Exceptions raised by boloop.

Every input error subclasses :class:`BoloopError` and ``ValueError``, so callers that already catch
``ValueError`` keep working. Messages name the offending argument. A rejected input never changes
stored or cached state.
"""

from __future__ import annotations


class BoloopError(ValueError):
    """Base class of all boloop input errors."""


class InvalidInputError(BoloopError):
    """An argument has the wrong shape, type, or a NaN/infinite value."""


class OptionError(InvalidInputError):
    """A method option is unknown or has the wrong type.

    Raised alike by ``make_policy``, ``boloop study create --option`` and bench method ids
    (``mr-lpf?lam=0.1``); the message names the method's valid options with their types.
    """


class MissingExtraError(InvalidInputError):
    """What was asked for needs an optional dependency that is not installed (``bench plot``
    without matplotlib, ``--executor dask`` without distributed, ``boloop serve`` without the web
    packages). The message names the extra to install: ``pip install 'boloop[plot]'``. The
    command line prints it as one line (exit status 2)."""


class OutOfSpaceError(BoloopError):
    """A point lies outside the space it should belong to."""


class ProposalError(InvalidInputError):
    """A policy proposed a query that does not fit its space: a point outside the bounds, off
    the grid, of the wrong dimension, or a candidate index that names another point (a bug in
    the method's ``_propose``, :func:`boloop.queries.check_query`)."""


class UnknownIdError(BoloopError, KeyError):
    """An id (problem, method, metric, query, study) is not known.

    The message lists the valid ids where there are few enough to list.
    """

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0]) if self.args else ""


class QueryStateError(BoloopError):
    """An answer refers to a query that was never asked, was already answered, or is stale."""


class NoMoreQueriesError(QueryStateError):
    """The method asks no more: it has reached a state where it has no next query (MR-LPF after
    the T duels of its horizon; a level-set method with ``allow_repeats=False`` once every
    candidate is measured), and its recommendation is final. ``reason``: why, the clause that
    :meth:`boloop.queries.BasePolicy.asks_no_more` gives; the message is ``"the method asks no
    more: " + reason``. Withdrawing an answer (a study's undo) can make it ask again."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the method asks no more: {reason}")
        self.reason = reason


class AnswerTypeError(BoloopError, TypeError):
    """An answer has the wrong type for its query (a float for a Label, a bool for a Compare...)."""


class NotFittedError(BoloopError):
    """A model was used before it had the data it needs."""


class StorageError(BoloopError):
    """The study storage is corrupt, foreign, or inconsistent with the replayed policy."""


class StudyMovedError(StorageError):
    """The study was copied to another storage by ``boloop study migrate`` and marked there as
    moved (a ``moved`` event in its log): this copy is read-only. Every write (an answer, a
    measurement, a label, an undo, a new query) is refused with nothing stored; the message
    names where the study went and when. Reads (status, history, export, verify) go on."""


class StudyRemovedError(StorageError):
    """The study this object was loaded as is no longer in its storage: ``boloop study migrate
    --undo`` removed the copy a migrate had made (the study lives on at the migrate's source).
    A process still holding it (a server started on the migrate's target) is refused every read
    and write with nothing stored; loading the study again finds it if it is back, or says it is
    not there."""


class StorageUnavailableError(StorageError):
    """The storage's database server cannot be reached: the connection was refused or lost (a
    server restart, a network cut). Nothing of the operation was stored; unlike the other
    storage errors it is temporary, so the same operation may be repeated once the server is
    back (``boloop serve`` answers it with HTTP 503 and ``Retry-After``)."""


class StorageNoAnswerError(StorageUnavailableError):
    """The storage's database server keeps the connection open but has not answered for the
    limit a process set (:func:`boloop.study.storage.limit_answers`; ``boloop serve``: 10 s):
    a frozen server, a paused virtual machine, a network that drops everything. The connection
    was cut, so nothing waits on it any more. Temporary, like any
    :class:`StorageUnavailableError`; but a write whose commit the server received before it
    went silent may be stored after all (it commits when the server goes on): repeating it is
    then refused as already answered, never stored twice.

    ``sent`` is False where the request sent nothing to the database at all (it was queued
    behind one that waited, :meth:`boloop.web.pool.StudyPool.run`): then nothing of it is
    stored, for sure."""

    def __init__(self, message: str, *, sent: bool = True) -> None:
        super().__init__(message)
        #: whether the request sent anything to the database (False: nothing of it is stored)
        self.sent = sent


class StorageAccessError(StorageError):
    """The storage's database server was reached and refused the URL: a wrong password, a role
    it does not know or does not let in, a database that does not exist. The user's mistake, not
    an outage: the same operation fails the same way until the URL (or the server's roles and
    databases) is corrected, so ``boloop serve`` refuses to start on it and answers HTTP 500
    (never the outage's 503) if it meets it later. The message names the URL with its password
    masked and what to check."""


class StorageBusyError(StorageUnavailableError):
    """Other writers kept changing the study's log while this operation tried to store (it gave
    way after several tries): nothing was stored, and the same operation may be repeated at once
    (``boloop serve`` answers it with HTTP 503, ``Retry-After`` and ``"error": "storage_busy"``)."""


class UnsafeSeedError(BoloopError):
    """A safe seed cannot be certified safe by the model."""
