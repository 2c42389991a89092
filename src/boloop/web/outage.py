"""What ``boloop serve`` logs while its database cannot be reached: the outage, not each request.

During an outage every request that needs the database answers 503 (:mod:`boloop.web.app`), and
an open study page polls every two seconds: a WARNING per request was some 20 long lines in 30 s
with two pages open (session 18's trial). And a server that lost its database while serving said
nothing when it came back (only one started while it was down did). :class:`OutageLog` is told of
every attempt of the server's process to reach the database (:func:`~boloop.study.storage.
watch_connections`) and logs, on the ``boloop`` logger:

- one WARNING when an outage begins (the first attempt that fails), saying what the server does
  meanwhile;
- a WARNING reminder every ``remind_seconds`` while it lasts (on a failed attempt: an idle server
  does not remind), with how many requests were answered 503 so far;
- one WARNING when it ends (the first attempt that connects, whatever request made it), with how
  long it lasted and how many requests were answered 503.

Each request answered 503 meanwhile is logged at INFO (``boloop -v serve``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from boloop.study.storage import safe_url

__all__ = ["OutageLog", "REMIND_SECONDS", "duration_text"]

logger = logging.getLogger("boloop")

#: seconds between the reminders that an outage goes on
REMIND_SECONDS = 600.0


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

    def began_at_start(self, reason: str) -> None:
        """The database could not be reached when the server started."""
        with self._lock:
            self._begin()
        logger.warning(
            "storage %r cannot be reached yet (%s): every page and API call that needs it "
            "answers 503 with Retry-After; trying again at every request until it can",
            safe_url(self.url),
            reason,
        )

    def connection(self, reason: str | None) -> None:
        """An attempt to reach the database connected (``reason`` None) or failed (why)."""
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
