"""What ``boloop serve`` logs while its database cannot be reached: the outage, not each request;
and the server's own light check of its database while it serves, so that the log shows an
outage that no request met (a server left running overnight with no page open).

During an outage every request that needs the database answers 503 (:mod:`boloop.web.app`), and
an open study page polls every two seconds: a WARNING per request was some 20 long lines in 30 s
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
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable

from boloop.study.storage import safe_url

__all__ = [
    "OutageLog",
    "REMIND_SECONDS",
    "STORAGE_CHECK_SECONDS",
    "check_storage_periodically",
    "duration_text",
]

logger = logging.getLogger("boloop")

#: seconds between the reminders that an outage goes on
REMIND_SECONDS = 600.0
#: seconds without any attempt to reach the database after which the server checks it itself
#: (``boloop serve --storage-check``; 0: never)
STORAGE_CHECK_SECONDS = 30.0


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
    same, :class:`boloop.web.app.StudyPool`)."""

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
                if self._since is None:
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
    check: Callable[[], None], log: OutageLog, seconds: float
) -> None:
    """Call ``check`` (a blocking read of the storage, in the thread pool: the event loop never
    waits on the database) whenever nothing has tried to reach the database for ``seconds``;
    until cancelled (the app's lifespan cancels it when the server stops, and waits for a check
    under way: it ends within the driver's connect timeout). ``check`` reports what it meets to
    ``log`` through the storage's watcher, as a request does, and raises nothing.

    One check at a time, each a single short read: between checks no connection is held (it
    is back in the engine's pool, idle). A request that reaches the database resets the clock,
    so a busy server is never checked on top of its traffic."""
    from starlette.concurrency import run_in_threadpool  # the web extra: imported when served

    delay = seconds
    while True:
        await asyncio.sleep(delay)
        idle = log.idle_seconds()
        if idle < seconds:  # a request tried the database meanwhile: that was the check
            delay = seconds - idle
            continue
        try:
            await run_in_threadpool(check)
        except Exception:  # a bug of the check: said, and the server goes on checking
            logger.exception("the server's check of its storage failed")
        delay = seconds
