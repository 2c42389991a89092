"""``boloop serve`` while its PostgreSQL server is down (a real server the tests stop and start):
every page answers the human "database cannot be reached" page and every API call a JSON error,
all with HTTP 503 and ``Retry-After`` (never the 400 of a bad answer, never a bare "Internal
Server Error"); nothing is stored; the answer a person sent is shown with a button that sends it
again, and everything works again once the server is back. Also the race message, which names
the open query in words (no Python ``None``).

The PostgreSQL server is the session's (``tests/conftest.py``); every test has its own database.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from boloop.errors import StorageError, StorageUnavailableError  # noqa: E402
from boloop.study import load_study  # noqa: E402
from boloop.web import create_app  # noqa: E402
from study_samples import make_study  # noqa: E402

#: the page's words for an outage (the brief's "the connection to the database server was lost
#: ... repeat it when the server is reachable")
PAGE_WORDS = ("connection to the database server was lost", "when the server is reachable")


def _csrf(client: TestClient, path: str) -> str:
    r = client.get(path)
    assert r.status_code == 200, r.text
    m = re.search(r'name="csrf" value="([^"]+)"', r.text)
    assert m
    return m.group(1)


def _hidden_fields(html: str, form_id: str) -> dict[str, str]:
    """The hidden inputs of the form ``form_id`` of a page, as a browser would send them."""
    m = re.search(rf'<form[^>]*id="{form_id}"[^>]*>(.*?)</form>', html, re.S)
    assert m, f"no form {form_id!r} on the page"
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', m.group(1)))


def _is_outage_page(r, *, where: str) -> None:
    assert r.status_code == 503, f"{where}: {r.status_code} {r.text[:300]}"
    assert r.headers["content-type"].startswith("text/html"), where
    assert r.headers.get("retry-after", "").isdigit(), where
    assert "The database cannot be reached" in r.text, where
    assert all(w in r.text for w in PAGE_WORDS), where
    assert "Internal Server Error" not in r.text and "Traceback" not in r.text, where


def _is_outage_json(r, *, where: str) -> None:
    assert r.status_code == 503, f"{where}: {r.status_code} {r.text[:300]}"
    assert r.headers.get("retry-after", "").isdigit(), where
    body = r.json()
    assert body["error"] == "storage_unavailable" and body["stored"] is False, where
    assert "database server" in body["detail"], where


@pytest.mark.xdist_group("postgres")
def test_every_page_and_api_call_is_a_503_while_the_database_is_down(pg_server, pg_url):
    study = make_study("coat", pg_url, answers=2, key="lev1", fast=True)
    make_study("other", pg_url, key="lev1", fast=True)  # never loaded by the server before
    client = TestClient(create_app(pg_url), follow_redirects=False)
    csrf = _csrf(client, "/studies/coat")  # the study is loaded, its query asked
    q = study.ask()
    history = [(r["query_id"], r["answer"]) for r in study.history()]
    assert len(history) == 2

    pg_server.stop("fast")
    try:
        # pages: the human page, 503
        for path in ("/", "/studies/coat", "/studies/other", "/studies/coat/export.csv"):
            _is_outage_page(client.get(path), where=path)
            assert "reload this page" in client.get(path).text, path  # a GET: reloading is safe
        r = client.post(
            "/studies/coat/tell",
            data={"csrf": csrf, "query_id": str(q.id), "value": "0.51", "note": "batch 7"},
        )
        _is_outage_page(r, where="POST tell")
        assert f"Your answer to query {q.id} was NOT stored" in r.text
        # a POST's result: reloading would send the form again (the browser asks first)
        assert "reload this page" not in r.text and "as below" in r.text
        assert "value: <strong>0.51</strong>" in r.text and "note: <strong>batch 7</strong>" in r.text
        resend = _hidden_fields(r.text, "resend-form")
        assert resend == {"csrf": csrf, "query_id": str(q.id), "value": "0.51", "note": "batch 7"}
        r = client.post("/studies/coat/undo", data={"csrf": csrf, "last": ""})
        _is_outage_page(r, where="POST undo")
        assert "Nothing was withdrawn" in r.text
        r = client.post(
            "/studies",
            data={"csrf": csrf, "name": "new", "method": "toy-random", "problem": "levelset/toy"},
        )
        _is_outage_page(r, where="POST create")
        assert "The study new was NOT created" in r.text
        # what an open page polls, and the API: JSON, 503
        _is_outage_json(client.get("/studies/coat/state"), where="state")
        calls = [
            ("GET", "/api/studies", None),
            ("GET", "/api/studies/coat", None),
            ("GET", "/api/studies/other", None),
            ("POST", "/api/studies/coat/ask", None),
            ("POST", "/api/studies/coat/tell", {"query_id": q.id, "answer": 0.25}),
            ("POST", "/api/studies/coat/undo", None),
            ("GET", "/api/studies/coat/history", None),
        ]
        for method, path, body in calls:
            _is_outage_json(client.request(method, path, json=body), where=f"{method} {path}")
        with pytest.raises(StorageUnavailableError):  # the type the web app maps to 503
            load_study("coat", storage=pg_url)
    finally:
        pg_server.start()

    # nothing was stored, created or withdrawn
    after = load_study("coat", storage=pg_url)
    assert [(r["query_id"], r["answer"]) for r in after.history()] == history
    assert [r["name"] for r in client.get("/api/studies").json()] == ["coat", "other"]
    # the server goes on: the page's "send it again" stores the answer once
    assert client.get("/studies/coat/state").status_code == 200
    r = client.post("/studies/coat/tell", data=resend)
    assert r.status_code == 303 and "?done=told&w=" in r.headers["location"]
    rows = load_study("coat", storage=pg_url).history()
    assert [(r["query_id"], r["answer"], r["note"]) for r in rows][-1] == (q.id, 0.51, "batch 7")
    assert len(rows) == 3
    nxt = client.post("/api/studies/coat/ask").json()
    r = client.post("/api/studies/coat/tell", json={"query_id": nxt["id"], "answer": 0.25})
    assert r.status_code == 200 and r.json()["answered"] == 4


@pytest.mark.xdist_group("postgres")
def test_a_login_carrying_an_answer_while_the_database_is_down_logs_in_and_shows_it(
    pg_server, pg_url
):
    """The review's case: the right token carrying an answer refused for want of a login
    (the server restarted with a new token), while the database is down, answered 503 without
    the session cookie: not logged in, and going Back sent the same login again. Now the
    browser is logged in, the outage page shows the answer, not stored, with its button to
    send it again, which stores it once the database is back."""
    token = "tok-0123456789abcdef"
    study = make_study("coat", pg_url, answers=1, key="lev1", fast=True)
    client = TestClient(create_app(pg_url, token), follow_redirects=False)
    csrf = _csrf(client, "/login")
    r = client.post("/login", data={"csrf": csrf, "token": token, "next": "/"})
    assert r.status_code == 303
    assert client.get("/studies/coat").status_code == 200  # the study is loaded
    q = study.ask()
    client.cookies.delete("boloop_session")  # as after a restart: this browser is logged out
    pg_server.stop("fast")
    try:
        form = {"csrf": csrf, "next": "/studies/coat", "token": token,
                "sent.query_id": str(q.id), "sent.value": "0.51"}  # fmt: skip
        r = client.post("/login", data=form)
        _is_outage_page(r, where="POST login")
        assert "boloop_session=" in r.headers["set-cookie"]
        assert f"Your answer to query {q.id} was NOT stored" in r.text
        assert "value: <strong>0.51</strong>" in r.text
        resend = _hidden_fields(r.text, "resend-form")
        assert resend == {"csrf": csrf, "query_id": str(q.id), "value": "0.51"}
    finally:
        pg_server.start()
    r = client.post("/studies/coat/tell", data=resend)  # logged in: no login page in between
    assert r.status_code == 303 and "?done=told&w=" in r.headers["location"]
    rows = load_study("coat", storage=pg_url).history()
    assert len(rows) == 2 and (rows[-1]["query_id"], rows[-1]["answer"]) == (q.id, 0.51)


@pytest.mark.xdist_group("postgres")
def test_the_openapi_document_names_the_503_of_every_call(pg_url):
    spec = TestClient(create_app(pg_url)).get("/openapi.json").json()
    ops = [(p, m, op) for p, item in spec["paths"].items() for m, op in item.items()]
    assert len(ops) >= 6  # list, status, ask, tell, undo, history
    for path, method, op in ops:
        assert "503" in op["responses"], f"{method} {path}"
        assert "Retry-After" in op["responses"]["503"]["description"]


def test_a_lost_connection_is_a_storage_unavailable_error_other_storage_errors_are_not(tmp_path):
    """The 503 is for an unreachable server only: a file that is no database stays a plain
    StorageError (a 500 page: repeating it would not help)."""
    bad = tmp_path / "not.db"
    bad.write_bytes(b"this is no SQLite file" * 100)
    with pytest.raises(StorageError) as info:
        load_study("x", storage=f"sqlite:///{bad}")
    assert not isinstance(info.value, StorageUnavailableError)


# -- the race message -----------------------------------------------------------------------------
@pytest.mark.parametrize("next_asked", [False, True])
def test_a_refused_answer_says_which_query_is_open_in_words(tmp_path, next_asked):
    url = f"sqlite:///{tmp_path / 'web.db'}"
    make_study("pref", url, answers=1)
    client = TestClient(create_app(url), follow_redirects=False)
    csrf = _csrf(client, "/studies/pref")
    other = load_study("pref", storage=url)
    q = other.ask()
    other.tell(q.id, "a")  # someone else answered the query the page shows
    if next_asked:
        nxt = other.ask().id
    r = client.post("/studies/pref/tell", data={"csrf": csrf, "query_id": str(q.id), "answer": "b"})
    assert r.status_code == 409
    warning = re.search(r'<p class="warning" role="alert" id="warning"[^>]*>(.*?)</p>', r.text, re.S)
    assert warning
    text = warning.group(1)
    # what happened, and the query the page shows now (asked by the page if it was not yet)
    assert f"query {q.id} was answered first by someone else" in text and "None" not in text
    shown = re.search(r'name="query_id" value="(\d+)"', r.text).group(1)
    if next_asked:
        assert shown == str(nxt)
    assert f"The open query is now {shown}" in text and "no query was open" not in text


@pytest.mark.xdist_group("postgres")
def test_the_docs_retry_loop_stores_an_answer_sent_during_an_outage_once(pg_server, pg_url):
    """docs/web.md's ``tell`` that waits out a 503 (run as written): the database comes back
    while it waits, and the answer is stored exactly once."""
    import threading
    import time
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "web.md").read_text()
    block = re.search(r"```python\n(import time, httpx\n.*?)```", text, re.S)
    assert block, "docs/web.md has the retry example"
    scope: dict = {}
    exec(block.group(1), scope)  # defines tell(client, name, query_id, answer)
    make_study("coat", pg_url, key="lev1", fast=True)
    client = TestClient(create_app(pg_url), follow_redirects=False)
    q = client.post("/api/studies/coat/ask").json()
    pg_server.stop("fast")
    statuses = []
    real_post = client.post

    def post(*args, **kwargs):
        r = real_post(*args, **kwargs)
        statuses.append(r.status_code)
        return r

    client.post = post  # type: ignore[method-assign]
    back = threading.Timer(1.0, pg_server.start)
    back.start()
    try:
        t0 = time.monotonic()
        r = scope["tell"](client, "coat", q["id"], 0.5)
    finally:
        back.join()
    assert r.status_code == 200, r.text
    assert statuses[0] == 503 and statuses[-1] == 200  # it waited out the outage
    assert time.monotonic() - t0 >= 1.0
    rows = load_study("coat", storage=pg_url).history()
    assert [(row["query_id"], row["answer"]) for row in rows] == [(q["id"], 0.5)]


# -- what the server's log says of an outage ------------------------------------------------------
def _outage_lines(caplog) -> list[str]:
    """The WARNING lines (and above) of boloop's logger, in order."""
    return [r.getMessage() for r in caplog.records if r.name == "boloop" and r.levelno >= 30]


@pytest.mark.xdist_group("postgres")
def test_an_outage_is_logged_once_when_it_begins_and_once_when_it_ends(pg_server, pg_url, caplog):
    """Two open pages polling, an answer and API calls during an outage of a running server:
    one WARNING when it begins, none per request (there were ~20 long ones in 30 s), and one
    "reachable again" when it ends, with how long it lasted and the requests answered 503; the
    same for a second outage that begins and ends with other requests."""
    import logging

    caplog.set_level(logging.WARNING, logger="boloop")
    make_study("coat", pg_url, answers=1, key="lev1", fast=True)
    make_study("other", pg_url, key="lev1", fast=True)
    client = TestClient(create_app(pg_url), follow_redirects=False)
    csrf = _csrf(client, "/studies/coat")
    assert client.get("/studies/other").status_code == 200
    masked = pg_url  # no password in the test server's URL
    assert _outage_lines(caplog) == []

    pg_server.stop("fast")
    try:
        refused = 0
        for _ in range(6):  # two pages polling, as for 12 s
            for name in ("coat", "other"):
                _is_outage_json(client.get(f"/studies/{name}/state"), where="poll")
                refused += 1
        _is_outage_page(
            client.post("/studies/coat/tell", data={"csrf": csrf, "query_id": "1", "value": "1"}),
            where="tell",
        )
        _is_outage_json(client.get("/api/studies"), where="api")
        refused += 2
        lines = _outage_lines(caplog)
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"storage '{masked}' cannot be reached (")
        assert "answers 503 with Retry-After until it is back" in lines[0]
    finally:
        pg_server.start()
    assert client.get("/studies/coat/state").status_code == 200  # a poll meets the end
    lines = _outage_lines(caplog)
    assert len(lines) == 2, lines
    m = re.fullmatch(
        rf"storage '{re.escape(masked)}' is reachable again after (\d+) s \((\d+) requests "
        r"answered 503 meanwhile\): serving its studies",
        lines[1],
    )
    assert m, lines[1]
    assert int(m.group(2)) == refused
    for _ in range(3):
        assert client.get("/studies/other/state").status_code == 200
    assert len(_outage_lines(caplog)) == 2  # nothing more while it is reachable

    # a second outage, met by an API call and ended by a page (not a poll)
    pg_server.stop("immediate")
    try:
        _is_outage_json(client.post("/api/studies/coat/ask"), where="api ask")
        _is_outage_json(client.get("/studies/other/state"), where="poll")
    finally:
        pg_server.start()
    assert client.get("/studies/coat").status_code == 200
    lines = _outage_lines(caplog)
    assert len(lines) == 4, lines
    assert lines[2].startswith(f"storage '{masked}' cannot be reached (")
    assert lines[3].startswith(f"storage '{masked}' is reachable again after ")
    assert "(2 requests answered 503 meanwhile)" in lines[3]


@pytest.mark.xdist_group("postgres")
def test_a_long_outage_is_recalled_at_the_reminder_interval(pg_server, pg_url, caplog):
    """While the outage lasts the log reminds of it every ``outage_reminder_seconds`` (10
    minutes by default), on a request that meets it, with the count of 503s so far."""
    import logging
    import time

    caplog.set_level(logging.WARNING, logger="boloop")
    make_study("coat", pg_url, key="lev1", fast=True)
    client = TestClient(create_app(pg_url, outage_reminder_seconds=1.0), follow_redirects=False)
    assert client.get("/studies/coat/state").status_code == 200
    pg_server.stop("fast")
    try:
        t0 = time.monotonic()
        polls = 0
        while time.monotonic() - t0 < 2.6:
            _is_outage_json(client.get("/studies/coat/state"), where="poll")
            polls += 1
            time.sleep(0.2)
        elapsed = time.monotonic() - t0
    finally:
        pg_server.start()
    assert client.get("/studies/coat/state").status_code == 200
    lines = _outage_lines(caplog)
    reminders = [line for line in lines if "still cannot be reached after" in line]
    assert 2 <= len(reminders) <= elapsed / 1.0 + 1, lines
    assert re.search(r"still cannot be reached after \d+ s \(\d+ requests? answered 503 so far\)",
                     reminders[0])  # fmt: skip
    assert lines[0].startswith("storage ") and "cannot be reached (" in lines[0]
    assert lines[-1].startswith("storage ") and f"({polls} requests answered 503" in lines[-1]
    assert len(lines) == 2 + len(reminders)
