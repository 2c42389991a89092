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

The storage (:mod:`boloop.study.storage`) installs it on its engine's events (PostgreSQL only,
and only where :func:`~boloop.study.storage.limit_answers` set a limit: ``boloop serve``);
nothing here knows SQLAlchemy.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable

__all__ = ["AnswerLimit"]

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
