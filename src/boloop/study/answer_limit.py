"""How long this process waits for its PostgreSQL server's answer (:class:`AnswerLimit`).

libpq has a connect timeout but none on a read: a server that keeps the connection open and
answers nothing (a network that drops everything, a paused virtual machine, a frozen server)
holds a statement for as long as the operating system keeps the connection (hours). psycopg 3
offers no read timeout either (its ``cancel()`` asks the same server, over a new connection, to
stop the statement: a frozen server answers that neither). So a limit is kept here: every wait
of a thread for the database's answer (a statement, a commit, a rollback) is noted when it
starts and cleared when it ends; one watchdog thread per process looks at the waits a few times
per limit, and the connection of a wait that has had no answer for ``seconds`` is cut (its
socket shut down: the driver's read ends at once, as if the network had closed it, the
connection is discarded by the pool). Its thread then fails as the storage says
(:class:`~boloop.errors.StorageNoAnswerError`), so no thread stays blocked in the driver, and
no lock it held stays held. What the cut connection had sent is not taken back: a commit the
server receives before it notices the cut is committed (so a write whose commit was cut "may be
stored"); a statement before the commit is rolled back by the server.

After a cut the database is *silent* (:meth:`AnswerLimit.silent`) until it answers again: the
first answer (a statement answered, a new connection made) ends it, and ``answered`` is told.
``no_answer`` is told at each cut, from the watchdog's thread.

The waits are noted by the connections themselves: the storage's engine makes its PostgreSQL
connections with :func:`connect_noted` where :func:`~boloop.study.storage.limit_answers` set a
limit (``boloop serve``), a psycopg connection and cursor whose ``execute``, ``executemany``,
``commit`` and ``rollback`` note the wait around psycopg's own (about a microsecond each;
SQLAlchemy's per-statement events cost several times that a read, as SQLAlchemy joins them to
every connection it hands out: ``benchmarks/answer_limit_cost.py``, docs/web.md). Nothing here
knows SQLAlchemy.

A wait is noted with the socket's number and cleared, under one lock, before its thread can
close the connection (the number is never reused while the watchdog may cut it).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from functools import cache
from typing import Any

__all__ = ["AnswerLimit", "connect_noted"]

logger = logging.getLogger("boloop")

#: the watchdog looks at the waits this many times per limit (a cut comes within 1/10 of it)
_LOOKS_PER_LIMIT = 10
#: ... and at least this often (seconds)
_LONGEST_LOOK = 0.5


class _Wait:
    """One thread's wait for the database: since when, on which socket, for what."""

    __slots__ = ("limit", "since", "fd", "what", "cut")

    def __init__(self, limit: AnswerLimit, since: float, fd: int, what: str) -> None:
        self.limit = limit
        self.since = since
        self.fd = fd
        self.what = what
        self.cut = False


class _Watchdog:
    """The process's one thread that cuts the connections whose waits had no answer in time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        #: thread id -> its wait under way
        self.waits: dict[int, _Wait] = {}
        #: thread id -> (seconds waited, what) of a wait that was cut, until that thread reads it
        self.cuts: dict[int, tuple[float, str]] = {}
        self._tick = _LONGEST_LOOK
        self._thread: threading.Thread | None = None

    def start(self, seconds: float) -> None:
        with self.lock:
            self._tick = min(self._tick, seconds / _LOOKS_PER_LIMIT)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="boloop-answer-limit", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(self._tick)
            try:
                self._look()
            except Exception:  # never let the watchdog die of a bug: said, and it goes on
                logger.exception("the storage's answer limit failed to look at its waits")

    def _look(self) -> None:
        now = time.monotonic()
        told: list[tuple[AnswerLimit, float, str]] = []
        with self.lock:  # a wait cannot end (nor its socket close) while it is being cut
            for tid, wait in self.waits.items():
                waited = now - wait.since
                if wait.cut or waited < wait.limit.seconds:
                    continue
                wait.cut = True
                self.cuts[tid] = (waited, wait.what)
                _shut(wait.fd)
                told.append((wait.limit, waited, wait.what))
        for limit, waited, what in told:
            limit.cut(waited, what)


_watchdog = _Watchdog()


def _shut(fd: int) -> None:
    """Shut the socket ``fd`` down in both directions, through a duplicate of the descriptor
    (the driver's descriptor stays open, and its own until it closes it: no other file can take
    its number meanwhile). A blocked read on it returns at once (end of file)."""
    try:
        dup = os.dup(fd)
    except OSError:
        return
    try:
        sock = socket.socket(fileno=dup)
    except OSError:
        os.close(dup)
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed by the other end: the read has ended anyway
    finally:
        sock.close()  # the duplicate only


class AnswerLimit:
    """Wait at most ``seconds`` for each answer of one database (see the module docstring).

    ``no_answer(waited, what)`` is called at each cut (from the watchdog's thread), and
    ``answered()`` at the first answer after one; neither may raise."""

    def __init__(
        self,
        seconds: float,
        no_answer: Callable[[float, str], None],
        answered: Callable[[], None],
    ) -> None:
        self.seconds = seconds
        self._no_answer = no_answer
        self._answered = answered
        #: a wait was cut and the database has not answered since
        self._silent = False
        _watchdog.start(seconds)

    # -- told by the storage's events, from the thread that waits -------------------------
    def asked(self, fd: int, what: str) -> None:
        """This thread now waits for the database's answer on socket ``fd`` (``what``: "a
        read", "a commit")."""
        tid = threading.get_ident()
        wait = _Wait(self, time.monotonic(), fd, what)
        with _watchdog.lock:
            _watchdog.cuts.pop(tid, None)  # a cut this thread met before was read (or lost)
            _watchdog.waits[tid] = wait

    def replied(self) -> None:
        """This thread's wait ended with an answer."""
        self.ended()
        if self._silent:
            self.heard()

    def heard(self) -> None:
        """The database answered (a statement, a new connection): a silence ends."""
        if self._silent:
            self._silent = False
            try:
                self._answered()
            except Exception:  # a watcher's bug must not fail a storage operation
                logger.debug("an answer watcher failed", exc_info=True)

    @staticmethod
    def ended(fd: int | None = None) -> None:
        """This thread's wait, if any (on socket ``fd``, if given), ended (with an answer or an
        error)."""
        tid = threading.get_ident()
        with _watchdog.lock:
            wait = _watchdog.waits.get(tid)
            if wait is not None and (fd is None or wait.fd == fd):
                del _watchdog.waits[tid]

    @staticmethod
    def was_cut() -> tuple[float, str] | None:
        """``(seconds waited, what)`` if this thread's last wait was cut, once; else None."""
        tid = threading.get_ident()
        with _watchdog.lock:
            _watchdog.waits.pop(tid, None)
            return _watchdog.cuts.pop(tid, None)

    # -- the state --------------------------------------------------------------------------
    def silent(self) -> bool:
        """Whether a wait was cut and the database has not answered since."""
        return self._silent

    def cut(self, waited: float, what: str) -> None:
        """The watchdog cut a wait of ``waited`` seconds."""
        self._silent = True
        try:
            self._no_answer(waited, what)
        except Exception:  # a watcher's bug must not stop the watchdog
            logger.debug("a no-answer watcher failed", exc_info=True)


# -- psycopg connections that note their waits ----------------------------------------------------
class _Noted:
    """The wait of one call of a connection made by :func:`connect_noted`, for its limit."""

    __slots__ = ("limit",)

    def __init__(self, conn: Any, what: str) -> None:
        self.limit: AnswerLimit | None = conn.boloop_limit_of()
        if self.limit is not None:
            try:
                fd = conn.fileno()
            except Exception:  # noqa: BLE001 - a closed connection: the call itself says so
                self.limit = None
                return
            self.limit.asked(fd, what)

    def __enter__(self) -> _Noted:
        return self

    def __exit__(self, typ: object, exc: object, tb: object) -> None:
        if self.limit is None:
            return
        if typ is None:
            self.limit.replied()
        else:  # ended before the connection is closed (its socket's number freed)
            AnswerLimit.ended()


def _what(query: Any) -> str:
    """"a read" or "a write", as the log and the error name the wait of ``query`` (SQLAlchemy
    sends text; anything else is named a statement)."""
    if isinstance(query, bytes):
        query = query[:16].decode("ascii", "replace")
    if not isinstance(query, str):
        return "a statement"
    return "a read" if query.lstrip()[:6].upper() in ("SELECT", "SHOW") else "a write"


@cache
def _noted_classes() -> tuple[type, type]:
    """psycopg's connection and cursor, noting their waits (psycopg is imported here only:
    the ``postgres`` extra)."""
    import psycopg

    class NotedCursor(psycopg.Cursor):  # type: ignore[type-arg]
        __slots__ = ()

        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            with _Noted(self.connection, _what(query)):
                return super().execute(query, params, **kwargs)

        def executemany(self, query: Any, params_seq: Any, **kwargs: Any) -> None:
            with _Noted(self.connection, "a write"):
                super().executemany(query, params_seq, **kwargs)

    class NotedConnection(psycopg.Connection):  # type: ignore[type-arg]
        #: the limit its waits are told to (None: none now)
        boloop_limit_of: Callable[[], AnswerLimit | None] = staticmethod(lambda: None)

        def commit(self) -> None:
            with _Noted(self, "a commit"):
                super().commit()

        def rollback(self) -> None:
            with _Noted(self, "a rollback"):
                super().rollback()

    return NotedConnection, NotedCursor


def connect_noted(
    limit_of: Callable[[], AnswerLimit | None], cargs: Any, cparams: dict[str, Any]
) -> Any:
    """A psycopg connection (``psycopg.connect(*cargs, **cparams)``, as SQLAlchemy's dialect
    makes it) whose every wait for the database's answer is told to the limit ``limit_of()``
    gives at that moment (None: not told). Its making counts as an answer (:meth:`heard`)."""
    connection_class, cursor_class = _noted_classes()
    conn = connection_class.connect(*cargs, cursor_factory=cursor_class, **cparams)  # type: ignore[attr-defined]
    conn.boloop_limit_of = limit_of
    limit = limit_of()
    if limit is not None:
        limit.heard()
    return conn
