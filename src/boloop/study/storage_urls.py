"""Storage URLs: the URL a storage is named by (:func:`resolve_storage`: ``--storage``, else
``$BOLOOP_STORAGE``, else :data:`DEFAULT_STORAGE`; a bare SQLite file name is read as one),
whether a URL names a SQLite database without a file (:func:`sqlite_in_memory`), and the file a
SQLite URL names. The URLs a storage takes are listed in :mod:`boloop.study.storage`, which
gives these names too.
"""

from __future__ import annotations

import os

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from boloop.errors import InvalidInputError

__all__ = ["DEFAULT_STORAGE", "SQLITE_SUFFIXES", "resolve_storage", "sqlite_in_memory"]

DEFAULT_STORAGE = "sqlite:///boloop.db"
#: endings of a bare storage path read as a SQLite file
SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def resolve_storage(storage: str | None) -> str:
    """The storage URL: ``storage`` if given, else ``$BOLOOP_STORAGE``, else ``sqlite:///boloop.db``.

    A bare file path (no ``://``) ending in ``.db``, ``.sqlite`` or ``.sqlite3`` is read as a
    SQLite file; anything else without ``://`` (``notaurl``, a typo in ``$BOLOOP_STORAGE``) is
    refused with :class:`InvalidInputError` before anything is created. Relative SQLite paths are
    made absolute (against the current directory). ``postgresql://`` and ``postgres://`` name
    the psycopg 3 driver (``postgresql+psycopg://``).
    """
    url = storage or os.environ.get("BOLOOP_STORAGE") or DEFAULT_STORAGE
    where = (
        "--storage" if storage else "$BOLOOP_STORAGE" if os.environ.get("BOLOOP_STORAGE") else ""
    )
    if not isinstance(url, str):
        raise InvalidInputError(f"storage must be a URL string, got {storage!r}")
    if "://" not in url:
        if not url.lower().endswith(SQLITE_SUFFIXES):
            raise InvalidInputError(
                f"storage {url!r}{f' (from {where})' if where else ''} is neither a URL "
                "(sqlite:///path/to/lab.db, postgresql+psycopg://user@host/db) nor a SQLite "
                f"file name ending in {', '.join(SQLITE_SUFFIXES)}"
            )
        url = "sqlite:///" + url
    scheme, sep, rest = url.partition("://")
    if scheme.lower() in ("postgresql", "postgres"):
        url = f"postgresql+psycopg://{rest}"
    prefix, sep, rest = url.partition(":///")
    if sep and prefix.startswith("sqlite") and rest and not rest.startswith((":memory:", "file:")):
        path, q, query = rest.partition("?")
        if not os.path.isabs(path):  # pin relative files to the current directory now
            url = f"{prefix}:///{os.path.abspath(path)}{q}{query}"
    return url


def sqlite_in_memory(url: str) -> bool:
    """Whether ``url`` (resolved) is a SQLite database without a file (``sqlite://``,
    ``sqlite:///``, ``sqlite:///:memory:``, ``mode=memory``): it lives in this process's memory
    and ends with it. Useful in one program; a ``boloop study`` command is a process of its own,
    so a study stored there is lost when the command ends."""
    if not url.lower().startswith("sqlite"):
        return False
    try:
        parsed = sa.engine.make_url(url)
    except (SQLAlchemyError, ValueError):
        return False  # not a URL: refused as such where it is opened
    if parsed.host:
        return False  # sqlite://lab.db: refused where it is opened, saying so
    db = parsed.database or ""
    return db in ("", ":memory:") or parsed.query.get("mode") == "memory" or ":memory:" in db


def _sqlite_path(url: sa.engine.URL) -> str | None:
    if not url.drivername.startswith("sqlite"):
        return None
    db = url.database
    if not db or db == ":memory:" or db.startswith("file:"):
        return None
    return db
