"""A server with no traffic still logs its database's outage (the night a lab leaves ``boloop
serve`` running with no page open): the server reads its PostgreSQL storage itself whenever
nothing has for ``--storage-check`` seconds, through the same storage and so the same outage log
as the requests (:mod:`boloop.web.outage`): one line when the outage begins, one when it ends,
whoever met it. Before, such a server logged nothing, and the first person in the morning found
the outage.

A real PostgreSQL server the tests stop and start (the session's, ``tests/conftest.py``); the
real command (``python -m boloop.cli serve``: uvicorn runs the app's lifespan, which runs the
check) with its log read on its stderr; the database's own view of the server's connection
(``pg_stat_activity``) for what the check costs it.
"""

from __future__ import annotations

import logging
import re
import signal
import time

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from boloop.errors import InvalidInputError  # noqa: E402
from boloop.web import create_app  # noqa: E402
from cli_runner import run_cli  # noqa: E402
from serve_process import Served  # noqa: E402
from silent_relay import SilentRelay  # noqa: E402
from study_samples import make_study  # noqa: E402

BEGAN = "cannot be reached ("
ENDED = "is reachable again after "


def _count(lines: list[str], text: str) -> int:
    return sum(text in line for line in lines)


@pytest.mark.xdist_group("postgres")
def test_an_idle_server_logs_the_outage_when_it_begins_and_ends(pg_server, pg_url):
    """No page open, no API call: the database goes down and comes back, and the server's log
    says both, once each, within a few check intervals. One API call made during the outage
    is counted in the same lines (the check and the requests share one log), not logged
    again. The server then stops at once, cleanly."""
    make_study("coat", pg_url, answers=1, key="lev1", fast=True)
    served = Served(pg_url, "--storage-check", "0.5")
    down = False
    try:
        time.sleep(1.6)  # three checks of a database that answers: nothing to say
        assert _count(served.lines(), "storage ") == 0, served.lines()

        pg_server.stop("fast")
        down = True
        t_down = time.monotonic()
        lines = served.wait_for_line(BEGAN, timeout=15)
        said_after = time.monotonic() - t_down
        began = [line for line in lines if BEGAN in line]
        assert len(began) == 1, lines
        assert began[0].startswith(f"WARNING boloop: storage '{pg_url}' cannot be reached (")
        assert said_after < 10, said_after  # within the interval and a connect, not at a request

        with httpx.Client(base_url=served.base, timeout=30) as client:
            r = client.get("/api/studies/coat")  # a program meets the outage: a 503, counted
            assert r.status_code == 503 and r.json()["error"] == "storage_unavailable"
            time.sleep(1.6)  # more failed checks: no more lines (a reminder comes after 10 min)
            assert _count(served.lines(), BEGAN) == 1, served.lines()

            pg_server.start()
            down = False
            lines = served.wait_for_line(ENDED, timeout=15)
            ended = [line for line in lines if ENDED in line]
            assert len(ended) == 1, lines
            assert re.fullmatch(
                rf"WARNING boloop: storage '{re.escape(pg_url)}' is reachable again after \d+ s "
                r"\(1 request answered 503 meanwhile\): serving its studies",
                ended[0],
            ), ended[0]
            time.sleep(1.1)
            assert client.get("/api/studies/coat").status_code == 200
    finally:
        if down:
            pg_server.start()
        t_stop = time.monotonic()
        code = served.stop(timeout=30)
        stopped_in = time.monotonic() - t_stop
    lines = served.lines()
    assert code in (0, -signal.SIGTERM), (code, lines)  # uvicorn ends by re-raising SIGTERM
    assert stopped_in < 10, stopped_in  # not after a connect timeout, nor killed at 30 s
    assert not [line for line in lines if "Traceback" in line or "ERROR" in line], lines
    assert _count(lines, BEGAN) == 1 and _count(lines, ENDED) == 1, lines


@pytest.mark.xdist_group("postgres")
def test_the_check_is_one_short_read_on_one_idle_connection(pg_server, pg_url):
    """What the database sees of an idle server that checks it every 0.3 s: one connection of
    the server's (``application_name`` boloop) the whole time, which runs a statement at each
    check (its ``query_start`` moves on) and is idle between them, never left inside a
    transaction; no new connection per check."""
    from boloop.study.storage import dispose_engines

    make_study("coat", pg_url, key="lev1", fast=True)
    dispose_engines()  # this process's connections closed: the server's are the only ones
    db = pg_url.rsplit("/", 1)[1]
    served = Served(pg_url, "--storage-check", "0.3")
    try:
        time.sleep(0.5)  # past the start's own reads (the schema check) and a first check
        seen: list[tuple[int, str, str, str]] = []
        t0 = time.monotonic()
        # 3 s (~10 checks), longer on a loaded machine until 6 checks were seen
        while time.monotonic() - t0 < 3.0 or (
            len({r[2] for r in seen}) < 6 and time.monotonic() - t0 < 20.0
        ):
            rows = pg_server.admin(
                "SELECT pid, state, query_start::text, query FROM pg_stat_activity "
                f"WHERE application_name = 'boloop' AND datname = '{db}'"
            )
            seen += rows
            time.sleep(0.03)
    finally:
        served.stop()
    assert seen, "the server holds no connection"
    assert len({pid for pid, *_ in seen}) == 1, seen
    states = {state for _, state, _, _ in seen}
    assert states <= {"idle", "active"}, states  # never 'idle in transaction'
    idle = sum(state == "idle" for _, state, _, _ in seen)
    assert idle >= 0.8 * len(seen), (idle, len(seen))
    starts = sorted({start for _, _, start, _ in seen})
    assert len(starts) >= 6, starts  # a statement at each check, the same connection
    assert all("boloop_studies" in query for *_, query in seen), {r[3] for r in seen}


@pytest.mark.xdist_group("postgres")
def test_a_server_started_while_down_sets_up_its_storage_with_no_request(pg_server, pg_url, caplog):
    """Started while the database is down, the server's start says when it tries again; the
    database comes back and, with no request at all, the check opens the storage (creating its
    tables in an empty database) and the log says the outage ended."""
    from fastapi.testclient import TestClient

    from boloop.study.storage import open_storage

    caplog.set_level(logging.WARNING, logger="boloop")
    pg_server.stop("fast")
    pg_server.wait_down()
    down = True
    try:
        app = create_app(pg_url, storage_check_seconds=0.3)
        with TestClient(app):  # runs the lifespan, as uvicorn does; no request is made
            records = [r.getMessage() for r in caplog.records if r.name == "boloop"]
            assert len(records) == 1 and "cannot be reached yet" in records[0], records
            assert "trying again at every request and every 0.3 s without one" in records[0]
            time.sleep(1.0)
            pg_server.start()
            down = False
            deadline = time.monotonic() + 15
            while not any(ENDED in r.getMessage() for r in caplog.records):
                assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
                time.sleep(0.05)
            assert open_storage(pg_url, create=False).study_names() == []  # set up, empty
    finally:
        if down:
            pg_server.start()
    messages = [r.getMessage() for r in caplog.records if r.name == "boloop"]
    assert len(messages) == 2, messages
    assert "(0 requests answered 503 meanwhile)" in messages[1]


@pytest.mark.xdist_group("postgres")
def test_no_check_when_turned_off(pg_server, pg_url, caplog):
    """``storage_check_seconds=0`` (``--storage-check 0``): the server reaches its database only
    for requests, and an outage no request meets is not logged (the behaviour before the
    check, kept for whoever wants it)."""
    from fastapi.testclient import TestClient

    caplog.set_level(logging.WARNING, logger="boloop")
    make_study("coat", pg_url, key="lev1", fast=True)
    with TestClient(create_app(pg_url, storage_check_seconds=0)) as client:
        assert client.get("/api/studies/coat").status_code == 200
        pg_server.stop("fast")
        pg_server.wait_down()
        try:
            time.sleep(1.5)
            assert [r.getMessage() for r in caplog.records if r.name == "boloop"] == []
            assert client.get("/api/studies/coat").status_code == 503  # a request meets it
            assert any(BEGAN in r.getMessage() for r in caplog.records)
        finally:
            pg_server.start()


@pytest.mark.parametrize("value", [-1.0, float("nan"), float("inf")])
def test_the_interval_is_checked(tmp_path, value):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    with pytest.raises(InvalidInputError, match="storage check's interval"):
        create_app(url, storage_check_seconds=value)
    r = run_cli(["serve", "--storage", url, "--storage-check", str(value)], cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "storage check's interval must be 0 (no check) or a number of seconds" in r.stderr
    assert "boloop serve: http" not in r.stderr  # refused before the address is printed


# -- a database that neither answers nor closes ------------------------------------------------
@pytest.mark.xdist_group("postgres")
def test_a_database_that_does_not_answer_is_logged_and_the_server_still_stops(pg_server, pg_url):
    """A pooled connection whose database stops answering without closing: the driver's read
    has no timeout, so the check waited for ever and the log said nothing. Now the log says
    it does not answer once a check has waited ANSWER_SECONDS, says it is reachable again once
    that check is answered, and the real command still stops at once on SIGTERM."""
    from boloop.web.outage import ANSWER_SECONDS

    make_study("coat", pg_url, answers=1, key="lev1", fast=True)
    port = int(pg_url.rsplit(":", 1)[1].split("/")[0])
    relay = SilentRelay(port)
    url = pg_url.replace(f":{port}/", f":{relay.port}/")
    served = Served(url, "--storage-check", "0.5")
    try:
        assert httpx.get(served.base + "/api/studies", timeout=10).status_code == 200
        relay.silent.set()
        t0 = time.monotonic()
        lines = served.wait_for_line("does not answer", timeout=ANSWER_SECONDS + 15)
        took = time.monotonic() - t0
        said = [line for line in lines if "does not answer" in line]
        assert len(said) == 1 and "a read has waited 10 s" in said[0], lines
        assert ANSWER_SECONDS <= took <= ANSWER_SECONDS + 10
        assert _count(lines, ENDED) == 0
        time.sleep(2)  # more checks would be due: none starts while one waits, nothing said
        assert _count(served.lines(), "does not answer") == 1
        assert _count(served.lines(), ENDED) == 0
        relay.silent.clear()  # what was held goes through: the waiting check is answered
        lines = served.wait_for_line(ENDED, timeout=15)
        assert _count(lines, ENDED) == 1 and _count(lines, "does not answer") == 1
        relay.silent.set()
        time.sleep(ANSWER_SECONDS / 2)
        t1 = time.monotonic()
        code = served.stop(timeout=15)
        assert code is not None and time.monotonic() - t1 < 10
        assert not any("Traceback" in line for line in served.lines())
    finally:
        relay.close()
        served.stop(timeout=5)
