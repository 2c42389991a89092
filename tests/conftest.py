"""Shared fixtures: a real PostgreSQL server for the storage tests (see ``pg_server.py``), and
the headless browsers of the page's tests (see ``browsers.py``).

The server is started once per test session, that is once per xdist worker that runs a
PostgreSQL test: each worker's server has its own directory and port, so two workers never
collide. (The tests are marked ``xdist_group("postgres")`` so that ``--dist loadgroup`` could put
them on one worker; pytest-xdist 3.8 under pytest 9 does not group them, and two servers start.)
Stopped and removed at the end. Every test gets a fresh database of its own. Skipped, with the reason, only where no
PostgreSQL server binary (``initdb``, ``pg_ctl``) can be found or the driver (the ``postgres``
extra, psycopg 3, in the ``test`` extra) is not installed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from browsers import desktop_driver, phone_driver
from pg_server import PostgresServer, find_pg_bin


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    bin_dir = find_pg_bin()
    if bin_dir is None:
        pytest.skip(
            "no PostgreSQL server binary (initdb, pg_ctl) on the PATH, in $BOLOOP_PG_BIN or "
            "/usr/lib/postgresql/*/bin: install Debian's postgresql package to run these tests"
        )
    pytest.importorskip(
        "psycopg", reason="psycopg 3 is not installed (pip install 'boloop[postgres]')"
    )
    server = PostgresServer(bin_dir, tag=os.environ.get("PYTEST_XDIST_WORKER", ""))
    try:
        server.start()
        yield server
    finally:
        server.close()


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> str:
    """The URL of a fresh, empty database on the session's server."""
    return pg_server.new_database()


# -- the headless browsers of the page's tests (browsers.py), one of each per module ----------
@pytest.fixture(scope="module")
def shots() -> Path:
    """Where the page's tests save their screenshots: ``$BOLOOP_SCREENSHOTS``, else
    ``$TMPDIR/boloop-screenshots``."""
    out = os.environ.get("BOLOOP_SCREENSHOTS")
    path = Path(out) if out else Path(os.environ.get("TMPDIR", "/tmp")) / "boloop-screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    d = desktop_driver()
    yield d
    d.quit()


@pytest.fixture(scope="module")
def browser2() -> Iterator[object]:
    d = desktop_driver()
    yield d
    d.quit()


@pytest.fixture(scope="module")
def phone() -> Iterator[object]:
    d = phone_driver()
    yield d
    d.quit()


@pytest.fixture
def spawn_workers() -> Iterator[None]:
    """Worker processes that start a fresh interpreter (macOS's and Windows' default, and
    Python 3.14's forkserver alike): they have boloop's methods only, not this process's, and
    import a method's or a problem's file themselves."""
    import multiprocessing as mp

    old = mp.get_start_method()
    mp.set_start_method("spawn", force=True)
    try:
        yield
    finally:
        mp.set_start_method(old, force=True)
