"""What ``boloop serve`` logs while its database cannot be reached: the outage, not each request;
and the server's own light check of its database while it serves, so that the log shows an
outage that no request met (a server left running overnight with no page open).

During an outage every request that needs the database answers 503
(:meth:`boloop.web.site.Site.storage_unavailable`), and an open study page polls every two
seconds: a WARNING per request was some 20 long lines in 30 s
with two pages open (session 18's trial). And a server that lost its database while serving said
nothing when it came back (only one started while it was down did). :class:`OutageLog` is told of
every attempt of the server's process to reach the database (:func:`~boloop.study.storage.
watch_connections`) and logs, on the ``boloop`` logger:

- one WARNING when an outage begins (the first attempt that fails), saying what the server does
  meanwhile;
- a WARNING reminder every ``remind_seconds`` while it lasts (on a failed attempt), with how
  many requests were answered 503 so far;
- one WARNING when it ends (the first attempt that connects, whatever request made it), with how
  long it lasted and how many requests were answered 503.

Each request answered 503 meanwhile is logged at INFO (``boloop -v serve``).

An attempt is a request's or the server's own check (:func:`check_storage_periodically`, run by
the app's lifespan): when no request has tried the database for ``seconds``
(:data:`STORAGE_CHECK_SECONDS` by default), the server reads it once, through the same storage
and so the same watcher. An outage is therefore logged when it begins and when it ends, each
within ``seconds``, whether or not anybody used the server meanwhile, and once: the check is one
more attempt, not another log. A server with traffic is checked by its traffic (no extra read).
A request's or check's wait that the database leaves without an answer (the connection kept,
nothing said: the driver's read has no timeout) is cut after :data:`ANSWER_SECONDS` by the
storage's answer limit (:func:`~boloop.study.storage.limit_answers`): the request answers 503,
and the outage begins (:meth:`OutageLog.no_answer`); it ends when the database answers again.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Callable

from boloop.study.storage import safe_url

__all__ = [
    "ANSWER_SECONDS",
    "MIN_ANSWER_SECONDS",
    "OutageLog",
    "REMIND_SECONDS",
    "STORAGE_CHECK_SECONDS",
    "check_storage_periodically",
    "checked_answer_limit",
    "checked_interval",
    "duration_text",
]

logger = logging.getLogger("boloop")

#: seconds between the reminders that an outage goes on
REMIND_SECONDS = 600.0
#: seconds without any attempt to reach the database after which the server checks it itself
#: (``boloop serve --storage-check``; 0: never)
STORAGE_CHECK_SECONDS = 30.0
#: seconds a request or a check waits for the database's answer before the log says it does
#: not answer and the request answers 503 (``boloop serve --storage-answer``; the connect
#: timeout's length: a read of the list of studies takes milliseconds)
ANSWER_SECONDS = 10.0
#: the shortest answer limit taken: a database answers a statement in well under a second, and
#: the watchdog looks ten times per limit
MIN_ANSWER_SECONDS = 0.5


def checked_interval(seconds: object) -> float:
    """The storage check's interval ``seconds`` (``--storage-check``,
    ``create_app(storage_check_seconds=)``): 0 (no check) or a finite positive number;
    anything else is :class:`~boloop.errors.InvalidInputError`."""
    from boloop.errors import InvalidInputError

    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not 0 <= seconds < math.inf
    ):
        raise InvalidInputError(
            f"the storage check's interval must be 0 (no check) or a number of seconds, got "
            f"{seconds!r}"
        )
    return float(seconds)


def checked_answer_limit(seconds: object) -> float:
    """The longest wait for the database's answer ``seconds`` (``--storage-answer``,
    ``create_app(storage_answer_seconds=)``): 0 (no limit: a request waits as long as the
    database does) or a finite number of seconds from :data:`MIN_ANSWER_SECONDS`; anything else
    is :class:`~boloop.errors.InvalidInputError` (a limit of a nanosecond had the watchdog look
    ten billion times a second, and cut every statement)."""
    from boloop.errors import InvalidInputError

    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not (seconds == 0 or MIN_ANSWER_SECONDS <= seconds < math.inf)
    ):
        raise InvalidInputError(
            f"the storage's answer limit must be 0 (no limit) or at least "
            f"{MIN_ANSWER_SECONDS:g} seconds, got {seconds!r}"
        )
    return float(seconds)


def duration_text(seconds: float) -> str:
    """``42 s``, ``5 min 3 s``, ``2 h 5 min``."""
    total = int(round(seconds))
    if total < 60:
        return f"{total} s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


class OutageLog:
    """The log of the outages of the database of storage ``url`` (see the module docstring).

    :meth:`connection` is the storage's watcher; :meth:`refused` counts a request answered 503;
    :meth:`began_at_start` records an outage that a start found (the server starts all the
    same, :class:`boloop.web.pool.StudyPool`)."""

    def __init__(
        self,
        url: str,
        remind_seconds: float = REMIND_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self.remind_seconds = remind_seconds
        self._clock = clock
        self._lock = threading.Lock()
        #: when the outage began (None: the database is reachable, as far as this process knows)
        self._since: float | None = None
        self._last_told = 0.0
        self._refused = 0
        #: when this process last tried to reach the database (the server's start counts)
        self._last_attempt = clock()
        #: whether a request's wait for the database's answer is limited (the storage's answer
        #: limit, :func:`~boloop.study.storage.limit_answers`): it then answers 503, else waits
        self.answers_limited = False
        #: a check of the server's is waiting for an answer the database has not given within
        #: its time (:meth:`no_answer`): a connection taken from the pool meanwhile proves
        #: nothing, so the outage ends only when that check is answered (:meth:`answered`)
        self._unanswered = False

    def began_at_start(self, reason: str, check_seconds: float = 0.0) -> None:
        """The database could not be reached when the server started (``check_seconds``: the
        server's own check, 0 if it makes none)."""
        with self._lock:
            self._begin()
        every = f"{check_seconds:g} s" if check_seconds < 60 else duration_text(check_seconds)
        also = f" and every {every} without one" if check_seconds else ""
        logger.warning(
            "storage %r cannot be reached yet (%s): every page and API call that needs it "
            "answers 503 with Retry-After; trying again at every request%s until it can",
            safe_url(self.url),
            reason,
            also,
        )

    def connection(self, reason: str | None) -> None:
        """An attempt to reach the database connected (``reason`` None) or failed (why)."""
        self._last_attempt = self._clock()  # one float stored: atomic, no lock needed
        if reason is None and self._since is None:  # the usual case, without the lock
            return
        with self._lock:
            now = self._clock()
            if reason is None:
                if self._since is None or self._unanswered:
                    return
                lasted, refused = now - self._since, self._refused
                self._since = None
                message = (
                    "storage %r is reachable again after %s (%s answered 503 meanwhile): "
                    "serving its studies"
                )
                args: tuple[object, ...] = (duration_text(lasted), _requests(refused))
            elif self._since is None:
                self._begin()
                message = (
                    "storage %r cannot be reached (%s): every page and API call that needs it "
                    "answers 503 with Retry-After until it is back, which this log will say"
                )
                args = (reason,)
            elif now - self._last_told >= self.remind_seconds:
                self._last_told = now
                message = "storage %r still cannot be reached after %s (%s answered 503 so far): %s"
                args = (duration_text(now - self._since), _requests(self._refused), reason)
            else:
                return
        logger.warning(message, safe_url(self.url), *args)

    def no_answer(self, waited: float, what: str = "a read") -> None:
        """A wait for the database (``what``: a request's read, write or commit, the server's
        check) has had no answer for ``waited`` seconds (a connection that neither answers nor
        closes: a network that drops everything, a paused virtual machine, a frozen server):
        the outage begins, logged once, and lasts until the database answers again
        (:meth:`answered`; a connection taken from the pool meanwhile proves nothing)."""
        with self._lock:
            self._unanswered = True
            if self._since is not None:
                return
            self._begin()
        meanwhile = (
            "every page and API call that needs it answers 503 with Retry-After"
            if self.answers_limited
            else "pages and API calls that need it wait or answer 503"
        )
        logger.warning(
            "storage %r does not answer (%s has waited %s): %s until it does, which this log "
            "will say",
            safe_url(self.url),
            what,
            duration_text(waited),
            meanwhile,
        )

    def answered(self, ok: bool = True) -> None:
        """The wait that :meth:`no_answer` was told of has ended: ``ok``, the database answered
        (a statement, a new connection, the server's check): the outage ends, as for any
        attempt that connects; else it failed, and what it met was told to :meth:`connection`
        by the storage's watcher."""
        with self._lock:
            self._unanswered = False
        if ok:
            self.connection(None)

    def idle_seconds(self) -> float:
        """Seconds since this process last tried to reach the database (a request, a check)."""
        return max(0.0, self._clock() - self._last_attempt)

    def refused(self, what: str) -> None:
        """A request (``what``: ``GET /studies/coat/state``) was answered 503 for the outage."""
        with self._lock:
            self._refused += 1
        logger.info("%s: 503, the database cannot be reached", what)

    def _begin(self) -> None:
        self._since = self._last_told = self._clock()
        self._refused = 0


def _requests(count: int) -> str:
    return f"{count} request" + ("" if count == 1 else "s")


async def check_storage_periodically(
    check: Callable[[], bool],
    log: OutageLog,
    seconds: float,
    answer_seconds: float | None = ANSWER_SECONDS,
) -> None:
    """Call ``check`` (a blocking read of the storage, in a worker thread: the event loop never
    waits on the database) whenever nothing has tried to reach the database for ``seconds``;
    until cancelled (the app's lifespan cancels it when the server stops; a check under way is
    left to its thread, which the process's exit ends). ``check`` reports what it meets to
    ``log`` through the storage's watcher, as a request does, returns whether the database
    answered, and raises nothing.

    A check that has no answer after ``answer_seconds`` (a pooled connection whose network
    drops everything: the driver has a connect timeout but none on a read) begins the outage
    (:meth:`OutageLog.no_answer`); it is still waited for, and no other check starts meanwhile;
    its end says whether the outage ends (:meth:`OutageLog.answered`). With ``answer_seconds``
    None the check is not timed here: the storage's own limit on every wait for an answer
    (:func:`~boloop.study.storage.limit_answers`, which ``boloop serve`` sets) cuts a read that
    has no answer, and tells the same log, as it does for a request's.

    One check at a time, each a single short read: between checks no connection is held (it
    is back in the engine's pool, idle). A request that reaches the database resets the clock,
    so a busy server is never checked on top of its traffic."""
    import anyio.to_thread  # starlette's own dependency: the web extra, imported when served

    delay = seconds
    while True:
        await asyncio.sleep(delay)
        idle = log.idle_seconds()
        if idle < seconds:  # a request tried the database meanwhile: that was the check
            delay = seconds - idle
            continue
        run = asyncio.ensure_future(anyio.to_thread.run_sync(check, abandon_on_cancel=True))
        try:
            done, _ = await asyncio.wait({run}, timeout=answer_seconds)  # None: no limit here
            waited = not done
            if waited:
                log.no_answer(answer_seconds or 0.0)
            ok = False
            try:
                ok = bool(await run)
            except Exception:  # a bug of the check: said, and the server goes on checking
                logger.exception("the server's check of its storage failed")
            if waited:
                log.answered(ok)
        except asyncio.CancelledError:
            run.cancel()  # the thread is abandoned, not waited for
            raise
        delay = seconds
