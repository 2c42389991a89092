"""The SQL storage's connections to its database, in this process: one engine (a connection
pool) per URL, forgotten after a fork or by :func:`dispose_engines`; SQLite's settings on each
new connection; a pooled PostgreSQL connection that the server closed replaced before use; who is
told how each attempt to reach the database went (:func:`watch_connections`); and how long a
PostgreSQL server's answer is waited for (:func:`limit_answers`, :func:`answers_silent`; the waits
themselves are kept by :mod:`boloop.study.answer_limit`). The engines and the answer limits
refer to each other (an engine made under a limit listens for it; a limit set later finds the
engine), so they share one module. Used by :class:`boloop.study.storage_sql.Storage`; the public
names are imported from :mod:`boloop.study.storage`.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from boloop.errors import StorageError, StorageNoAnswerError
from boloop.study.answer_limit import AnswerLimit, connect_noted
from boloop.study.log import safe_url

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "CONNECT_TIMEOUT_SECONDS",
    "POSTGRES_EXTRA",
    "AnswerWatcher",
    "answers_silent",
    "dispose_engines",
    "limit_answers",
    "watch_connections",
]

logger = logging.getLogger("boloop")

#: seconds a SQLite writer waits for another writer's transaction before giving up
BUSY_TIMEOUT_SECONDS = 30.0
#: seconds to wait for a PostgreSQL server to accept a connection
CONNECT_TIMEOUT_SECONDS = 10
#: the extra that installs the PostgreSQL driver
POSTGRES_EXTRA = "pip install 'boloop[postgres]'"


# -- one engine per URL and process ------------------------------------------------------------
#: one engine per URL and process (engines own connection pools); a forked child starts afresh
_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()
_engines_pid = os.getpid()


def _engine_for(url: str) -> Engine:
    """One engine per URL and process. After a fork the parent's pooled connections are left
    to the parent (``dispose(close=False)``): two processes never share a database socket."""
    global _engines_pid
    with _engines_lock:
        if os.getpid() != _engines_pid:
            for old in _engines.values():
                old.dispose(close=False)
            _engines.clear()
            _engines_pid = os.getpid()
        engine = _engines.get(url)
        if engine is None:
            engine = _create_engine(url)
            _engines[url] = engine
        return engine


def dispose_engines(close: bool = True) -> None:
    """Forget this process's engines (the next storage opened makes a new one): ``close=True``
    closes their pooled connections; ``close=False`` leaves them to the process that opened
    them (a forked child, which must not use its parent's database sockets)."""
    with _engines_lock:
        for engine in _engines.values():
            engine.dispose(close=close)
        _engines.clear()


def _create_engine(url: str) -> Engine:
    parsed = sa.engine.make_url(url)
    try:
        if parsed.get_backend_name() == "postgresql":
            engine = sa.create_engine(
                url,
                connect_args={
                    "connect_timeout": CONNECT_TIMEOUT_SECONDS,
                    "application_name": "boloop",
                },
            )
            sa_event.listen(engine, "checkout", _drop_if_closed_by_server)
            if url in _limits:
                _listen_for_answers(engine, url)
        else:
            engine = sa.create_engine(url)
    except ImportError as exc:
        raise StorageError(
            f"storage {safe_url(url)!r} needs the database driver {exc.name or parsed.drivername!r}, "
            f"which is not installed: {POSTGRES_EXTRA if parsed.get_backend_name() == 'postgresql' else exc}"
        ) from exc
    if engine.dialect.name == "sqlite":
        _configure_sqlite(engine)
    return engine


def _drop_if_closed_by_server(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
    """A pooled PostgreSQL connection is replaced before use if the server has closed it (a
    restart, an administrator ending the session): an idle connection's socket is readable only
    then (end of file, or the server's farewell message). Costs no round trip, unlike a ping; a
    connection cut without a word (a network failure) fails at its first statement instead."""
    import select

    try:
        fd = dbapi_conn.fileno()
        readable, _, _ = select.select([fd], [], [], 0)
    except (OSError, ValueError, AttributeError) as exc:
        raise sa.exc.DisconnectionError(f"connection unusable: {exc}") from exc
    if readable or getattr(dbapi_conn, "closed", False):
        raise sa.exc.DisconnectionError("the server closed the connection")


def _configure_sqlite(engine: Engine) -> None:
    @sa_event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # we emit BEGIN ourselves (pysqlite's implicit transactions would defeat BEGIN IMMEDIATE)
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()

    @sa_event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get("boloop_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


# -- whether the database server answers ----------------------------------------------------------
_watchers_lock = threading.Lock()
#: storage URL -> the watchers of its connections (weak references to bound methods)
_watchers: dict[str, list[weakref.WeakMethod[Callable[[str | None], None]]]] = {}


def watch_connections(url: str, watcher: Callable[[str | None], None]) -> None:
    """Call ``watcher(reason)`` after each attempt of this process to reach the database of
    storage ``url`` (as :func:`resolve_storage` gives it), from the thread that made it:
    ``reason`` None when a connection was made, else why the server could not be reached or the
    connection was lost (the driver's words; the operation raised
    :class:`StorageUnavailableError`). ``watcher`` is a bound method, held weakly: it is called
    as long as its object lives. What ``boloop serve`` logs of an outage is told by it
    (:class:`boloop.web.outage.OutageLog`), whatever request met the outage or its end."""
    with _watchers_lock:
        _watchers.setdefault(url, []).append(weakref.WeakMethod(watcher))


def _connection_outcome(url: str, reason: str | None) -> None:
    """Tell the watchers of ``url`` how an attempt to reach its database went."""
    if url not in _watchers:  # nobody watches (every process but a server): nothing to do
        return
    with _watchers_lock:
        refs = _watchers.get(url, [])
        alive = [w for w in refs if w() is not None]
        _watchers[url] = alive
    for ref in alive:
        watcher = ref()
        if watcher is None:
            continue
        try:
            watcher(reason)
        except Exception:  # a watcher's bug must not fail a storage operation
            logger.debug("a connection watcher of %s failed", safe_url(url), exc_info=True)


# -- how long a PostgreSQL server's answer is waited for ------------------------------------------
#: storage URL -> the limit on the waits for its database's answers (:func:`limit_answers`)
_limits: dict[str, AnswerLimit] = {}
#: the engines whose connections note their waits for the limits (:func:`connect_noted`)
_limited_engines: weakref.WeakSet[Engine] = weakref.WeakSet()


class AnswerWatcher(Protocol):
    """What is told of a database's silence (:class:`boloop.web.outage.OutageLog`)."""

    def no_answer(self, waited: float, what: str = "a read") -> None: ...

    def answered(self, ok: bool = True) -> None: ...


def limit_answers(url: str, seconds: float, watcher: AnswerWatcher) -> None:
    """Wait at most ``seconds`` for each answer of the database of PostgreSQL storage ``url``
    in this process (0: as long as the operating system keeps the connection, as before; a
    storage without a database server is not affected): a statement or commit that has had no
    answer for that long has its connection cut and fails as
    :class:`~boloop.errors.StorageNoAnswerError`; a new connection waits at most the same
    (the connect timeout, 10 s, if that is shorter; libpq's least, 2 s). ``watcher.no_answer``
    is told at each cut, ``watcher.answered()`` at the first answer after one
    (:mod:`boloop.study.answer_limit`). One limit per storage and process: the last given."""
    if url.startswith("memory://") or sa.engine.make_url(url).get_backend_name() != "postgresql":
        return
    if not seconds:
        _limits.pop(url, None)
        return
    _limits[url] = AnswerLimit(seconds, watcher.no_answer, watcher.answered)
    with _engines_lock:
        engine = _engines.get(url)
    if engine is not None:
        _listen_for_answers(engine, url, made=True)


def answers_silent(url: str) -> bool:
    """Whether the database of storage ``url`` left a wait without an answer for the limit of
    :func:`limit_answers` and has not answered since."""
    limit = _limits.get(url)
    return limit is not None and limit.silent()


def _listen_for_answers(engine: Engine, url: str, made: bool = False) -> None:
    """Make ``engine``'s connections note their waits for the database's answer for the limit
    of ``url`` (looked up at each wait: it may change, or go): :func:`connect_noted`, with a
    connect timeout no longer than the limit. An engine ``made`` before lets go of the
    connections it holds (made without: the next are made with)."""
    if engine in _limited_engines:
        return
    _limited_engines.add(engine)

    def limit_of() -> AnswerLimit | None:
        return _limits.get(url)

    def connect(_dialect: Any, _record: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
        limit = _limits.get(url)
        if limit is None:
            return None  # SQLAlchemy's own connect
        cparams["connect_timeout"] = _connect_seconds(limit)
        return connect_noted(limit_of, cargs, cparams)

    sa_event.listen(engine, "do_connect", connect)
    if made:
        engine.dispose()


def _no_answer_error(
    url: str, display_url: str, exc: SQLAlchemyError
) -> StorageNoAnswerError | None:
    """The error of this thread's wait that the limit of ``url`` cut, if it was cut (told
    once), or of a new connection that timed out while the database is silent; else None. Any
    wait of the thread still noted ends here."""
    limit = _limits.get(url)
    if limit is None:
        return None
    cut = AnswerLimit.was_cut()
    if cut is None:
        if not limit.silent() or type(getattr(exc, "orig", None)).__name__ != "ConnectionTimeout":
            return None
        cut = (float(_connect_seconds(limit)), "a new connection")
    waited, what = cut
    after = (
        "if the server received the commit before it went silent, it is stored after all "
        "when it goes on (repeating an answer is then refused as 'already answered')"
        if what == "a commit"
        else "the server rolls back the transaction that was cut (what an earlier one of the "
        "same request stored, such as a new study, stays)"
    )
    return StorageNoAnswerError(
        f"storage {display_url!r}: the database server does not answer ({what} has waited "
        f"{waited:.0f} s; the connection is open but nothing comes back: a frozen server, a "
        f"paused virtual machine or a network that drops everything). The connection was cut; "
        f"{after}. Repeat it when the server answers again"
    )


def _connect_seconds(limit: AnswerLimit) -> int:
    """A new connection's timeout under ``limit``: its seconds, at most the connect timeout
    and at least libpq's least (2 s)."""
    return max(2, min(CONNECT_TIMEOUT_SECONDS, math.ceil(limit.seconds)))


def _end_wait(url: str) -> None:
    """This thread waits for no answer of ``url``'s database any more."""
    if url in _limits:
        AnswerLimit.was_cut()
