"""The studies a web server holds (:class:`StudyPool`): each loaded once and worked on by one
request at a time, the storage opened when it can be (a server starts while its database is
down and answers 503 meanwhile), and the server's own check of a PostgreSQL storage that
nobody uses (:meth:`StudyPool.check_storage`, run by the app's lifespan:
:mod:`boloop.web.app`). The outage's log is :mod:`boloop.web.outage`'s.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from fastapi import HTTPException
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from boloop.errors import (
    BoloopError,
    InvalidInputError,
    StorageNoAnswerError,
    StorageUnavailableError,
    StudyRemovedError,
    UnknownIdError,
)
from boloop.study import Study, load_study
from boloop.study.storage import (
    StorageBackend,
    answers_silent,
    limit_answers,
    open_storage,
    resolve_storage,
    safe_url,
    watch_connections,
)
from boloop.web.outage import ANSWER_SECONDS, REMIND_SECONDS, OutageLog

__all__ = ["StudyPool"]

logger = logging.getLogger("boloop")


# -- studies held by the server -----------------------------------------------------------------
class StudyPool:
    """Loaded studies by name, each with a lock: one request at a time works on a study.

    A study is loaded (its log replayed) once; every operation catches up with events other
    processes appended (``Study`` does that itself), so several servers may share a storage.

    The storage is opened (its tables created, its schema checked) when the pool is made. If its
    database server cannot be reached then (:class:`~boloop.errors.StorageUnavailableError`: a
    lab machine booting after a power cut, a service started before PostgreSQL), the server
    starts all the same: :attr:`waiting` holds the reason, every request that needs the storage
    tries to open it again (:meth:`ready`) and answers the outage's 503 until it opens. Mistakes
    of the user (a malformed URL, a driver that is not installed, a SQLite file in a directory
    that does not exist, a database that is not boloop's, a server that refuses the URL's
    password, role or database: :class:`~boloop.errors.StorageAccessError`) fail at once as
    before.
    """

    def __init__(
        self,
        storage: str | None,
        outage_reminder_seconds: float = REMIND_SECONDS,
        storage_check_seconds: float = 0.0,
        answer_seconds: float = ANSWER_SECONDS,
    ) -> None:
        self.url = _checked_url(storage)
        #: the longest wait for the database's answer (:func:`limit_answers`), 0 where there
        #: is none (asked for none, or a storage without a database server)
        self.answer_seconds = answer_seconds if _has_database_server(self.url) else 0.0
        #: seconds without any attempt to reach the database after which the server's lifespan
        #: checks it (:meth:`check_storage`); 0 where it makes no check (asked for none, or a
        #: storage without a database server: SQLite, memory)
        self.check_seconds = storage_check_seconds if _has_database_server(self.url) else 0.0
        #: why the storage could not be opened yet (None once it is open)
        self.waiting: StorageUnavailableError | None = None
        #: the server's log of the database's outages: told of every attempt to reach it
        self.outage = OutageLog(self.url, outage_reminder_seconds)
        # from here on (the start's own reads too), a wait with no answer is cut and told
        limit_answers(self.url, self.answer_seconds, self.outage)
        self.outage.answers_limited = bool(self.answer_seconds)
        self._opening = threading.Lock()
        #: the storage, once opened (what :meth:`check_storage` reads)
        self._storage: StorageBackend | None = None
        #: what the last check met that is no outage (logged once, not at every check)
        self._check_error: str | None = None
        #: why the database, reached after an outage at the start, refused to be opened (its
        #: ERROR is logged once per reason: a check every 30 s must not repeat it all night)
        self._refused: str | None = None
        try:
            self._storage = open_storage(self.url, create=True)
        except StorageUnavailableError as exc:
            self.waiting = exc
            self.outage.began_at_start(_reason(self.url, exc), self.check_seconds)
        watch_connections(self.url, self.outage.connection)  # from here on, every attempt
        self._studies: dict[str, tuple[Study, threading.Lock]] = {}
        #: held while a study is loaded (its log read and replayed), one per name
        self._loading: dict[str, _Loading] = {}
        self._lock = threading.Lock()

    def ready(self) -> str:
        """The storage URL, once the storage could be opened; until then one more try.

        Raises :class:`StorageUnavailableError` while the database cannot be reached (without
        waiting for a try that another request has under way), and an HTTP 500 if the database,
        reached at last, is no boloop storage or refuses the URL's password, role or database
        (what a start would have refused).
        """
        if self.waiting is None:
            return self.url
        if not self._opening.acquire(blocking=False):  # another request is trying right now
            raise StorageUnavailableError(str(self.waiting))
        try:
            if self.waiting is None:
                return self.url
            try:
                self._storage = open_storage(self.url, create=True)
            except StorageUnavailableError as exc:
                self.waiting = exc
                raise
            except BoloopError as exc:
                if str(exc) != self._refused:  # once, not at every request or check
                    self._refused = str(exc)
                    logger.error("storage %r: %s", safe_url(self.url), exc)
                raise HTTPException(500, str(exc)) from exc
            self.waiting = None  # the outage's log said "reachable again" (OutageLog)
            self._refused = None
            return self.url
        finally:
            self._opening.release()

    def check_storage(self) -> bool:
        """Reach the database once, as a request would, for the server's periodic check
        (:func:`~boloop.web.outage.check_storage_periodically`): one read of the list of
        studies (one short statement; a storage down at the start is opened, and set up, as
        :meth:`ready` does). What it meets is told to :attr:`outage` by the storage's watcher,
        like a request's attempt: an outage begins, goes on or ends there, logged once. Raises
        nothing: a database that, reached at last, refuses to be opened is logged by
        :meth:`ready` (as for a request); any other failure (the database reached but refusing
        the URL's password, its tables gone) is logged once as a WARNING, until the check
        meets another one or none. Returns whether the database answered the read."""
        try:
            self.ready()
            if self._storage is None:
                return False
            self._storage.study_names()
        except (StorageUnavailableError, HTTPException):
            return False  # the outage's log said it (or will); ready() logged a refusal
        except BoloopError as exc:
            if str(exc) != self._check_error:
                self._check_error = str(exc)
                logger.warning("the server's check of its storage failed: %s", exc)
            return False
        self._check_error = None
        return True

    def get(self, name: str) -> tuple[Study, threading.Lock]:
        """Study ``name`` and its lock, loaded if the pool does not hold it yet (one load of a
        name at a time; the pool's own lock is never held while the storage is read). A name's
        loading lock is kept only while a request holds or waits for it: names asked for and
        not found (a 404) leave nothing behind."""
        self.ready()
        with self._lock:
            hit = self._studies.get(name)
            if hit is not None:
                return hit
            loading = self._loading.get(name)
            if loading is None:
                loading = self._loading[name] = _Loading()
            loading.users += 1
        try:
            self._take(loading.lock)
            try:
                with self._lock:
                    hit = self._studies.get(name)
                if hit is None:
                    loaded = (load_study(name, storage=self.url), threading.Lock())
                    with self._lock:
                        hit = self._studies.setdefault(name, loaded)
                return hit
            finally:
                loading.lock.release()
        finally:
            with self._lock:
                loading.users -= 1
                if not loading.users:
                    del self._loading[name]

    def _take(self, lock: threading.Lock) -> None:
        """Take ``lock``, which another request may hold while it waits for the database. Held
        by a request whose wait had no answer (its connection is cut then, and it lets go), the
        lock is not waited for further, nor is the database asked again: a
        :class:`StorageNoAnswerError` at once (the silence ends at the first answer any request
        or check gets). A holder busy with the study itself (a replay, a picture) is waited
        for as long as it takes."""
        if lock.acquire(blocking=False):
            return
        if not self.answer_seconds:
            lock.acquire()
            return
        got = lock.acquire(timeout=self.answer_seconds)
        while not got and not answers_silent(self.url):
            got = lock.acquire(timeout=self.answer_seconds)
        if got and not answers_silent(self.url):  # (never return without the lock: the
            return  # silence may end between the loop's test and this one)
        if got:
            lock.release()
        raise StorageNoAnswerError(
            f"storage {safe_url(self.url)!r}: the database server does not answer (a request "
            f"before this one waited {self.answer_seconds:g} s for it, and it has not answered "
            "since). Nothing of this request was stored; repeat it when the server answers again",
            sent=False,
        )

    def add(self, study: Study) -> None:
        with self._lock:
            self._studies[study.name] = (study, threading.Lock())

    def loaded(self, name: str) -> Study | None:
        """Study ``name`` if the pool holds it, else None: never read from the storage (a page
        that says an answer was not stored may be the outage's)."""
        with self._lock:
            hit = self._studies.get(name)
        return hit[0] if hit is not None else None

    def run(self, name: str, fn: Callable[[Study], Any]) -> Any:
        """``fn(study)`` under the study's lock. A study the pool holds that was removed from
        the storage since (``migrate --undo`` removed the copy this server was showing) is
        forgotten and loaded again: a study of that name that is there now is served, else
        :class:`UnknownIdError` (a 404) saying it was removed."""
        study, lock = self.get(name)
        try:
            self._take(lock)
            try:
                return fn(study)
            finally:
                lock.release()
        except StudyRemovedError as exc:
            with self._lock:
                if self._studies.get(name, (None,))[0] is study:
                    del self._studies[name]
            try:
                study, lock = self.get(name)
            except UnknownIdError as gone:
                raise UnknownIdError(str(exc)) from gone
            self._take(lock)
            try:
                return fn(study)
            finally:
                lock.release()


class _Loading:
    """The lock of one name's load (:meth:`StudyPool.get`) and how many requests hold or wait
    for it (the entry goes when none does)."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0


def _has_database_server(url: str) -> bool:
    """Whether the storage of ``url`` lives in a database server this process connects to
    (PostgreSQL), which can go away while the server runs; a SQLite file is opened by this
    process itself (its failures are no outage: :class:`StorageError`), a memory store is in
    it."""
    return not url.startswith("memory://") and make_url(url).get_backend_name() != "sqlite"


def _checked_url(storage: str | None) -> str:
    """The resolved storage URL; a malformed one is :class:`InvalidInputError` (one line, not
    the parser's traceback) before anything is opened."""
    url = resolve_storage(storage)
    if url.startswith("memory://"):
        return url
    try:
        port = make_url(url).port
    except (ArgumentError, ValueError) as exc:
        raise InvalidInputError(f"storage {safe_url(url)!r} is not a valid URL: {exc}") from exc
    if port is not None and not 0 < port < 65536:
        raise InvalidInputError(f"storage {safe_url(url)!r}: port {port} is not a TCP port")
    return url


def _reason(url: str, exc: Exception) -> str:
    """The message of ``exc`` without its leading ``storage '<url>': ``."""
    text = str(exc)
    prefix = f"storage {safe_url(url)!r}: "
    return text[len(prefix) :] if text.startswith(prefix) else text
