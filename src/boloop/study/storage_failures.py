"""What a failed operation of the SQL storage was, told from the database driver's error: a lost
or refused connection (an outage: :class:`~boloop.errors.StorageUnavailableError`), a server
that was reached and refused the URL's password, role or database (the user's mistake, not an
outage: :class:`~boloop.errors.StorageAccessError`, with what to check), and the driver's
message on one line. The helpers of :class:`boloop.study.storage_sql.Storage`; see
:mod:`boloop.study.storage`.
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError, SQLAlchemyError


def _is_connection_error(exc: SQLAlchemyError) -> bool:
    """A lost or refused connection (as opposed to a constraint or a corrupt file)."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    orig = getattr(exc, "orig", None)
    return type(orig).__module__.startswith("psycopg") and type(orig).__name__ in (
        "OperationalError",
        "InterfaceError",
    )


def _reason(exc: SQLAlchemyError) -> str:
    """The driver's message of a database error, on one line."""
    text = str(getattr(exc, "orig", None) or exc)
    return " ".join(text.split())


# -- a server that was reached and said no (the user's mistake, not an outage) -------------------
#: SQLSTATE -> condition name of the refusals that are the user's to correct
_REFUSED_STATES = {
    "28P01": "invalid_password",
    "28000": "invalid_authorization_specification",
    "3D000": "invalid_catalog_name",
}
#: libpq keeps no SQLSTATE of an error the server sent while a connection was being set up (the
#: error has no result to read it from): those are recognised by the server's own message, which
#: names the condition, and only where no SQLSTATE is available. A server whose messages are
#: translated (``lc_messages``) is not recognised and stays an outage, as before.
_REFUSED_MESSAGES = (
    (re.compile(r'password authentication failed for user "'), "28P01"),
    (re.compile(r'authentication failed for user "'), "28000"),  # peer, ident, ldap, cert ...
    (re.compile(r'role "[^"]*" (does not exist|is not permitted to log in)'), "28000"),
    (re.compile(r"no pg_hba\.conf entry for|pg_hba\.conf rejects connection"), "28000"),
    (re.compile(r'database "[^"]*" does not exist'), "3D000"),
)
#: libpq's own word for a server that asks for a password the URL does not give
_NO_PASSWORD = "no password supplied"


def _refused_state(exc: SQLAlchemyError) -> str | None:
    """The SQLSTATE (``28P01``, ``28000``, ``3D000``) if ``exc`` is a PostgreSQL server's refusal
    of the URL's password, role or database, ``"no password"`` if it asked for a password the URL
    does not give; None for anything else (an outage: refused, timed out, lost)."""
    orig = getattr(exc, "orig", None)
    if orig is None or not type(orig).__module__.startswith("psycopg"):
        return None
    state = getattr(orig, "sqlstate", None)
    if state is not None:
        return state if state in _REFUSED_STATES else None
    if type(orig).__name__ != "OperationalError":
        return None
    if getattr(getattr(orig, "pgconn", None), "needs_password", False) is True:
        return "no password"
    text = str(orig)
    for pattern, found in _REFUSED_MESSAGES:
        if pattern.search(text):
            return found
    return "no password" if _NO_PASSWORD in text else None


def _refusal_message(display_url: str, url: str, state: str, reason: str) -> str:
    """What the server refused and what to check, naming ``display_url`` (password masked)."""
    parsed = sa.engine.make_url(url)
    user = parsed.username or "(the operating system user)"
    db = parsed.database or user
    where = "the database server"
    if parsed.host:
        where += f" at {parsed.host}" + (f":{parsed.port}" if parsed.port else "")
    if state == "28P01":
        what = (
            f"{where} refused the password of user {user!r} (SQLSTATE 28P01 invalid_password): "
            "check the password in the URL (a server that asks for passwords says the same of "
            "a user it does not know: check the user name too)"
        )
    elif state == "28000":
        what = (
            f"{where} refused user {user!r} (SQLSTATE 28000 invalid_authorization_specification): "
            f"check the user name in the URL; the role must exist and be allowed to log in, and "
            f"the server's pg_hba.conf must let it connect from this machine to database {db!r}"
        )
    elif state == "3D000":
        createdb = "createdb"
        if parsed.host:
            createdb += f" -h {parsed.host}"
        if parsed.port:
            createdb += f" -p {parsed.port}"
        if parsed.username:
            createdb += f" -U {parsed.username}"
        what = (
            f"database {db!r} does not exist on {where} (SQLSTATE 3D000 invalid_catalog_name): "
            f"create it ({createdb} {db}) or correct the database name in the URL"
        )
    else:
        what = (
            f"{where} asks user {user!r} for a password and none is given: put it in the URL "
            f"({parsed.drivername}://{parsed.username or 'user'}:PASSWORD@...) or in ~/.pgpass"
        )
    return (
        f"storage {display_url!r}: {what}. The server was reached and said no, so this is no "
        f"outage: trying again will not help until it is corrected (the server said: {reason})"
    )
