"""``boloop serve`` started while its PostgreSQL server is down (a lab machine booting after a
power cut, a service started before the database): the server starts, says on stderr that the
storage cannot be reached yet (its URL without the password) and that it keeps trying, answers
every page and API call that needs the database with the outage's 503 and ``Retry-After`` (the
same page and JSON as when the database goes away later, ``tests/test_web_db_down.py``), and
works without a restart once the database is up. A storage URL that is the user's mistake (a
malformed URL, a driver that is not installed, a SQLite file in a missing directory) still stops
it at once with one line.

A real server the tests stop and start (the session's, ``tests/conftest.py``), and the real
command (``python -m boloop.cli serve``, uvicorn) where the brief is about the command.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from boloop.errors import InvalidInputError, StorageError, StorageUnavailableError  # noqa: E402
from boloop.study import list_studies, load_study  # noqa: E402
from boloop.web import create_app  # noqa: E402
from study_samples import make_study  # noqa: E402
from test_web_db_down import _csrf, _is_outage_json, _is_outage_page  # noqa: E402

PASSWORD = "pw-n0t-in-logs"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _with_password(url: str) -> str:
    """The same database with a password in the URL (the test server trusts loopback logins, so
    it is never checked: it is there to be kept out of logs and pages)."""
    assert "://postgres@" in url
    return url.replace("://postgres@", f"://postgres:{PASSWORD}@")


@pytest.mark.xdist_group("postgres")
def test_serve_started_while_postgresql_is_down_answers_503_then_works(pg_server, pg_url):
    study = make_study("coat", pg_url, answers=2, key="lev1", fast=True)
    before = [(r["query_id"], r["answer"]) for r in study.history()]
    url = _with_password(pg_url)
    pg_server.stop("fast")
    pg_server.wait_down()
    down = True
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "boloop.cli", "serve", "--storage", url, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            deadline = time.monotonic() + 60
            while True:  # the server is up although its database is not
                assert proc.poll() is None, f"boloop serve exited: {proc.communicate()[1]}"
                try:
                    if client.get("/openapi.json").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "boloop serve did not start"
                time.sleep(0.2)
            bodies = []
            for path in ("/", "/studies/coat", "/studies/coat/export.csv"):
                r = client.get(path)
                _is_outage_page(r, where=path)
                bodies.append(r.text)
            for method, path, body in (
                ("GET", "/api/studies", None),
                ("GET", "/api/studies/coat", None),
                ("POST", "/api/studies/coat/ask", None),
                ("POST", "/api/studies/coat/tell", {"query_id": 2, "answer": 0.5}),
                ("GET", "/studies/coat/state", None),  # what an open page polls
            ):
                r = client.request(method, path, json=body)
                _is_outage_json(r, where=f"{method} {path}")
                bodies.append(r.text)
            assert all(PASSWORD not in b for b in bodies)

            pg_server.start()
            down = False
            page = client.get("/studies/coat")
            assert page.status_code == 200, page.text[:500]
            assert "The database cannot be reached" not in page.text
            q = client.post("/api/studies/coat/ask").json()
            r = client.post("/api/studies/coat/tell", json={"query_id": q["id"], "answer": 0.25})
            assert r.status_code == 200, r.text
            assert r.json() == {
                "stored": True,
                "query_id": q["id"],
                "answered": 3,
                "unusual": [],
            }
            listed = client.get("/api/studies").json()
            assert [(s["name"], s["answered"]) for s in listed] == [("coat", 3)]

            # then the database goes away while the server serves, and comes back
            pg_server.stop("fast")
            down = True
            for _ in range(5):  # an open page polling
                _is_outage_json(client.get("/studies/coat/state"), where="poll while down")
            pg_server.start()
            down = False
            assert client.get("/studies/coat/state").status_code == 200
    finally:
        if down:
            pg_server.start()
        proc.terminate()
        _, err = proc.communicate(timeout=30)

    rows = load_study("coat", storage=pg_url).history()
    assert [(r["query_id"], r["answer"]) for r in rows] == [*before, (q["id"], 0.25)]
    # the start's warning names the storage without its password and says it keeps trying
    masked = url.replace(PASSWORD, "***")
    assert PASSWORD not in err
    start = [line for line in err.splitlines() if "cannot be reached yet" in line]
    assert len(start) == 1, err
    assert start[0].startswith(f"WARNING boloop: storage '{masked}' cannot be reached yet")
    assert "503 with Retry-After" in start[0] and "trying again" in start[0]
    # each outage is one line when it begins and one when it ends (session 18's trial: a line
    # per poll of every open page, and no end of an outage met while serving)
    lines = err.splitlines()
    began = [line for line in lines if f"storage '{masked}' cannot be reached (" in line]
    assert len(began) == 1 and began[0].startswith("WARNING boloop: "), err
    again = [line for line in lines if f"storage '{masked}' is reachable again after " in line]
    assert len(again) == 2, err
    assert "(8 requests answered 503 meanwhile)" in again[0]  # 3 pages, 5 API calls
    assert "(5 requests answered 503 meanwhile)" in again[1]
    assert not [line for line in lines if "GET /" in line or "POST /" in line], err


@pytest.mark.xdist_group("postgres")
def test_an_empty_database_down_at_the_start_is_set_up_when_it_comes_back(pg_server, pg_url):
    """The tables a start would have created are created once the server is reachable: the
    study list is empty, and a study created from the page is stored."""
    pg_server.stop("fast")
    pg_server.wait_down()
    try:
        client = TestClient(create_app(pg_url), follow_redirects=False)
        _is_outage_page(client.get("/"), where="/")
        _is_outage_json(client.get("/api/studies"), where="/api/studies")
        # what needs no database works as during an outage: the API's description, the login
        assert client.get("/openapi.json").status_code == 200
        assert client.get("/login").status_code == 200
    finally:
        pg_server.start()
    assert client.get("/api/studies").json() == []
    csrf = _csrf(client, "/")
    r = client.post(
        "/studies",
        data={"csrf": csrf, "name": "first", "method": "levelset/random", "problem": "levelset/toy"},
    )
    assert r.status_code == 303, r.text[:500]
    assert [s["name"] for s in list_studies(pg_url)] == ["first"]


@pytest.mark.xdist_group("postgres")
def test_a_foreign_database_found_when_the_server_comes_back_is_refused(
    pg_server, pg_url, caplog
):
    """What a start refuses (a database with other tables) is refused when it is found later:
    an error naming it (500), never the outage's 503, and nothing written to it. The server's
    log says it once, not at every request (nor at every check of an idle server)."""
    pg_server.stop("fast")
    pg_server.wait_down()
    try:
        client = TestClient(create_app(pg_url), follow_redirects=False)
        _is_outage_json(client.get("/api/studies"), where="/api/studies")
    finally:
        pg_server.start()
    import psycopg

    dbname = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(
        host="127.0.0.1", port=pg_server.port, user="postgres", dbname=dbname, autocommit=True
    ) as conn:
        conn.execute("CREATE TABLE inventory (item text)")
        r = client.get("/api/studies")
        assert r.status_code == 500 and "not a boloop database" in r.json()["detail"]
        page = client.get("/")
        assert page.status_code == 500 and "not a boloop database" in page.text
        logged = [
            r for r in caplog.records if r.levelname == "ERROR" and "not a boloop" in r.getMessage()
        ]
        assert len(logged) == 1
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
    assert tables == [("inventory",)]


# -- the user's mistakes still stop the start -----------------------------------------------------
def _mistakes(tmp_path) -> list[tuple[str, type[Exception], str]]:
    cases = [
        ("postgresql://lab@db.invalid:notaport/boloop", InvalidInputError, "not a valid URL"),
        ("postgresql://lab@db.invalid:70000/boloop", InvalidInputError, "not a TCP port"),
        ("mysql://lab@db.invalid/boloop", InvalidInputError, "not supported"),
        (f"sqlite:///{tmp_path}/missing/lab.db", InvalidInputError, "does not exist"),
        ("notaurl", InvalidInputError, "neither a URL"),
    ]
    if importlib.util.find_spec("pg8000") is None:  # a driver that is not installed
        cases.append(("postgresql+pg8000://lab@db.invalid/boloop", StorageError, "not installed"))
    return cases


def test_the_users_mistakes_in_the_storage_url_still_fail_at_once(tmp_path):
    for url, error, words in _mistakes(tmp_path):
        with pytest.raises(error) as info:
            create_app(url)
        assert not isinstance(info.value, StorageUnavailableError), url
        assert words in str(info.value) and "\n" not in str(info.value), url
    assert not (tmp_path / "missing").exists()  # nothing created


def test_serve_with_a_malformed_url_exits_with_one_line(tmp_path):
    """The command itself (a child process: a regression would start a server, which the
    timeout ends): exit status 2, one error line, the password masked."""
    res = subprocess.run(
        [sys.executable, "-m", "boloop.cli", "serve", "--port", str(_free_port()),
         "--storage", f"postgresql://lab:{PASSWORD}@db.invalid:notaport/boloop"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines[-1].startswith("boloop: error: storage 'postgresql+psycopg://lab:***@db.invalid")
    assert "not a valid URL" in lines[-1] and "Traceback" not in res.stderr
    assert PASSWORD not in res.stderr
