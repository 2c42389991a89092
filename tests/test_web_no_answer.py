"""Requests met by a database that keeps the connection open and answers nothing (a frozen
server, a paused virtual machine, a network that drops everything) answer 503 within the
server's answer limit instead of waiting as long as the operating system keeps the connection
(hours): the page says the database does not answer, the API the same with ``Retry-After``,
the log says it once and says when the database answers again, and an answer sent meanwhile,
which may be stored after all, is stored once.

A real PostgreSQL server (the session's, ``tests/conftest.py``) behind a TCP relay that goes
silent (``tests/silent_relay.py``): the server's connections stay open, nothing comes back. A
short limit (1.5 s) keeps the tests short; the default, 10 s, is the storage check's test's
(``tests/test_web_storage_check.py``).
"""

from __future__ import annotations

import logging
import re
import threading
import time

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from boloop.errors import InvalidInputError  # noqa: E402
from boloop.study import load_study  # noqa: E402
from boloop.web import create_app  # noqa: E402
from cli_runner import run_cli  # noqa: E402
from serve_process import Served  # noqa: E402
from silent_relay import SilentRelay  # noqa: E402
from study_samples import make_study  # noqa: E402

#: the answer limit of these tests (seconds)
LIMIT = 1.5
#: what a 503 may take beyond it: the watchdog's look (LIMIT / 10), a new connection's timeout
#: (2 s at the least, libpq's), a loaded machine
MARGIN = 2.0
SILENT = "does not answer ("
ENDED = "is reachable again after "
UNREACHABLE = "cannot be reached ("


def _relayed(pg_url: str) -> tuple[SilentRelay, str]:
    port = int(pg_url.rsplit(":", 1)[1].split("/")[0])
    relay = SilentRelay(port)
    return relay, pg_url.replace(f":{port}/", f":{relay.port}/")


def _timed(call):
    t0 = time.monotonic()
    r = call()
    return r, time.monotonic() - t0


def _csrf(html: str) -> str:
    m = re.search(r'name="csrf" value="([^"]+)"', html)
    assert m
    return m.group(1)


def _hidden_fields(html: str, form_id: str) -> dict[str, str]:
    m = re.search(rf'<form[^>]*id="{form_id}"[^>]*>(.*?)</form>', html, re.S)
    assert m, f"no form {form_id!r} on the page"
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', m.group(1)))


def _answers(url: str, qid: int) -> list[dict]:
    """The answers in effect to query ``qid``, read straight from the database."""
    return [row for row in load_study("coat", storage=url).history() if row["query_id"] == qid]


def _messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "boloop"]


def _count(lines: list[str], text: str) -> int:
    return sum(text in line for line in lines)


@pytest.mark.xdist_group("postgres")
def test_pages_and_api_calls_answer_503_within_the_limit_and_an_answer_is_stored_once(
    pg_server, pg_url, caplog
):
    """While the relay is silent: the API's read and answer and the study's page and its
    answer form each answer 503 with Retry-After within the limit (not after hours); the page
    says the database does not answer and that the answer sent may be stored (never that it
    was NOT stored), with the button that sends it again; an undo and a create form say they
    may have been done; the API's tell says ``stored``: null. The log says the outage once. Once the relay forwards again, the same requests
    answer 200, the log says the database is reachable again, and the answer, sent again from
    the page and from the API, is stored once."""
    caplog.set_level(logging.WARNING, logger="boloop")
    make_study("coat", pg_url, answers=1, key="lev1", fast=True)
    relay, url = _relayed(pg_url)
    app = create_app(url, storage_check_seconds=0, storage_answer_seconds=LIMIT)
    client = TestClient(app, follow_redirects=False)
    try:
        page = client.get("/studies/coat")
        assert page.status_code == 200
        csrf = _csrf(page.text)
        qid = client.post("/api/studies/coat/ask").json()["id"]
        assert client.get("/api/studies/coat").status_code == 200

        relay.silent.set()
        r, took = _timed(lambda: client.get("/api/studies/coat"))
        assert r.status_code == 503 and took < LIMIT + MARGIN, (r.status_code, took, r.text)
        assert took >= LIMIT * 0.9, took  # the database had its time to answer
        assert r.headers["retry-after"].isdigit()
        body = r.json()
        assert body["error"] == "storage_unavailable" and body["stored"] is False
        assert "does not answer" in body["detail"], body

        r, took = _timed(lambda: client.get("/studies/coat"))
        assert r.status_code == 503 and took < LIMIT + MARGIN, (r.status_code, took)
        assert r.headers["retry-after"].isdigit()
        assert "The database does not answer" in r.text and "reload this page" in r.text

        sent = {"csrf": csrf, "query_id": str(qid), "value": "0.51", "note": "batch 7"}
        r, took = _timed(lambda: client.post("/studies/coat/tell", data=sent))
        assert r.status_code == 503 and took < LIMIT + MARGIN, (r.status_code, took)
        assert "The database does not answer" in r.text
        assert f"Your answer to query {qid} may be stored, or not" in r.text
        assert "NOT stored" not in r.text
        assert "value: <strong>0.51</strong>" in r.text
        resend = _hidden_fields(r.text, "resend-form")
        assert resend == sent

        r, took = _timed(
            lambda: client.post("/studies/coat/undo", data={"csrf": csrf, "last": ""})
        )
        assert r.status_code == 503 and took < LIMIT + MARGIN, (r.status_code, took)
        assert "The last answer may be withdrawn, or not" in r.text
        assert "Nothing was withdrawn" not in r.text
        create = {"csrf": csrf, "name": "new", "method": "toy-random", "problem": "levelset/toy"}
        r, took = _timed(lambda: client.post("/studies", data=create))
        assert r.status_code == 503 and took < LIMIT + MARGIN, (r.status_code, took)
        assert "The study new may be created, or not" in r.text and "NOT created" not in r.text

        tell = {"query_id": qid, "answer": 0.51, "note": "batch 7"}
        r, took = _timed(lambda: client.post("/api/studies/coat/tell", json=tell))
        assert r.status_code == 503 and took < LIMIT + MARGIN, (r.status_code, took)
        assert r.json()["stored"] is None  # may be stored: the database may commit it later
        assert r.json()["error"] == "storage_unavailable"

        messages = _messages(caplog)
        assert _count(messages, SILENT) == 1, messages
        assert _count(messages, UNREACHABLE) == 0 and _count(messages, ENDED) == 0, messages
        said = next(m for m in messages if SILENT in m)
        assert re.search(r"does not answer \(a (read|write|commit) has waited \d+ s\)", said)

        relay.silent.clear()
        deadline = time.monotonic() + LIMIT + 15
        while (r := client.get("/api/studies/coat")).status_code != 200:
            assert r.status_code == 503, r.text
            assert time.monotonic() < deadline, "still 503 after the relay went on"
            time.sleep(0.2)
        assert client.get("/studies/coat").status_code == 200
        messages = _messages(caplog)
        assert _count(messages, SILENT) == 1 and _count(messages, ENDED) == 1, messages

        # sent again from the page: stored now, or refused as already answered
        r = client.post("/studies/coat/tell", data=resend)
        assert r.status_code in (303, 409), (r.status_code, r.text[:500])
        if r.status_code == 409:
            assert "already" in r.text
        r = client.post("/api/studies/coat/tell", json=tell)
        assert r.status_code == 409 and r.json()["error"] == "query_answered", r.text
        rows = _answers(pg_url, qid)
        assert len(rows) == 1 and rows[0]["answer"] == 0.51, rows
    finally:
        relay.silent.clear()
        relay.close()


@pytest.mark.xdist_group("postgres")
def test_an_answer_whose_commit_had_no_answer_is_stored_once_when_sent_again(pg_server, pg_url):
    """The database goes silent just as an answer's commit reaches it (the relay holds the
    COMMIT): the page says the answer may be stored, and it is, once the database goes on (it
    commits what it received before it saw the connection cut). The answer sent again from the
    page is refused as answered already, and from the API as ``query_answered``: stored once."""
    make_study("coat", pg_url, answers=1, key="lev1", fast=True)
    relay, url = _relayed(pg_url)
    client = TestClient(
        create_app(url, storage_check_seconds=0, storage_answer_seconds=LIMIT),
        follow_redirects=False,
    )
    try:
        page = client.get("/studies/coat")
        assert page.status_code == 200
        qid = client.post("/api/studies/coat/ask").json()["id"]
        sent = {"csrf": _csrf(page.text), "query_id": str(qid), "value": "0.51"}
        relay.silence_at = b"COMMIT\x00"  # the statement, not READ COMMITTED
        r, took = _timed(lambda: client.post("/studies/coat/tell", data=sent))
        assert relay.silent.is_set(), "the relay saw no commit"
        assert r.status_code == 503 and took < LIMIT + MARGIN, (r.status_code, took)
        assert f"Your answer to query {qid} may be stored, or not" in r.text
        assert "NOT stored" not in r.text
        assert "a commit has waited" in r.text  # what the server said
        resend = _hidden_fields(r.text, "resend-form")

        relay.silent.clear()  # the commit goes through, then the connection's end
        deadline = time.monotonic() + LIMIT + 15
        while client.get("/api/studies/coat").status_code != 200:
            assert time.monotonic() < deadline, "still 503 after the relay went on"
            time.sleep(0.2)
        # the held COMMIT goes through on its own connection, maybe after a new connection's
        # read was answered: stored after all, a moment later at most
        deadline = time.monotonic() + 15
        while not (rows := _answers(pg_url, qid)):
            assert time.monotonic() < deadline, "the answer whose commit was held is not stored"
            time.sleep(0.1)
        assert len(rows) == 1 and rows[0]["answer"] == 0.51, rows

        r = client.post("/studies/coat/tell", data=resend)
        assert r.status_code == 409, (r.status_code, r.text[:500])
        assert "answered already with the same answer" in r.text and "nothing is stored twice" in r.text
        r = client.post("/api/studies/coat/tell", json={"query_id": qid, "answer": 0.51})
        assert r.status_code == 409 and r.json()["error"] == "query_answered", r.text
        assert len(_answers(pg_url, qid)) == 1
    finally:
        relay.silent.clear()
        relay.close()


@pytest.mark.xdist_group("postgres")
def test_requests_behind_one_that_waits_answer_503_within_the_limit_too(pg_server, pg_url):
    """The real command (``boloop serve --storage-answer 1.5``): three requests for one study
    at once while the relay is silent (the first holds the study while it waits for the
    database, the others wait for the study) each answer 503 within the limit of their own
    start, not one limit after another; the log says so once; and the server answers again
    once the relay forwards again."""
    make_study("coat", pg_url, answers=1, key="lev1", fast=True)
    relay, url = _relayed(pg_url)
    served = Served(url, "--storage-check", "0", "--storage-answer", str(LIMIT))
    try:
        with httpx.Client(base_url=served.base, timeout=60) as client:
            assert client.get("/studies/coat").status_code == 200
            relay.silent.set()
            results: list[tuple[int, float]] = []

            def call(path: str) -> None:
                r, took = _timed(lambda: client.get(path))
                results.append((r.status_code, took))

            threads = [
                threading.Thread(target=call, args=(path,))
                for path in ("/api/studies/coat/history", "/studies/coat", "/studies/coat/state")
            ]
            for t in threads:
                t.start()
                time.sleep(0.1)
            for t in threads:
                t.join(timeout=60)
            assert len(results) == 3
            assert all(code == 503 and took < LIMIT + MARGIN for code, took in results), results
            lines = served.lines()
            assert _count(lines, SILENT) == 1 and _count(lines, ENDED) == 0, lines

            relay.silent.clear()
            deadline = time.monotonic() + LIMIT + 15
            while client.get("/api/studies/coat/history").status_code != 200:
                assert time.monotonic() < deadline, served.lines()
                time.sleep(0.2)
            lines = served.wait_for_line(ENDED, timeout=5)
            assert _count(lines, ENDED) == 1 and _count(lines, SILENT) == 1, lines
    finally:
        relay.silent.clear()
        served.stop(timeout=15)
        relay.close()
    assert not [line for line in served.lines() if "Traceback" in line], served.lines()


def test_sqlite_has_no_answer_limit(tmp_path):
    """A SQLite file is opened by the server itself: no limit, no watchdog, whatever is
    asked (the page and the API as before)."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    make_study("coat", url, answers=1, key="lev1", fast=True)
    app = create_app(url, storage_answer_seconds=0.5)
    client = TestClient(app)
    assert client.get("/studies/coat").status_code == 200
    assert client.get("/api/studies/coat").status_code == 200


@pytest.mark.parametrize("value", [-1.0, float("nan"), float("inf"), 1e-9, 0.4])
def test_the_limit_is_checked(tmp_path, value):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    with pytest.raises(InvalidInputError, match="storage's answer limit"):
        create_app(url, storage_answer_seconds=value)
    r = run_cli(["serve", "--storage", url, "--storage-answer", str(value)], cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "answer limit must be 0 (no limit) or at least 0.5 seconds" in r.stderr
    assert "boloop serve: http" not in r.stderr


@pytest.mark.xdist_group("postgres")
def test_a_request_queued_behind_one_that_waits_says_nothing_of_it_was_stored(pg_server, pg_url):
    """While the database does not answer, an answer queued behind a request that holds the
    study (and waits for the database) is refused without being sent: the API says ``stored``
    false and the page that it was NOT stored (it said 'may be stored, or not', and the API
    ``stored``: null, beside a detail saying 'Nothing of this request was stored')."""
    make_study("coat", pg_url, answers=1, key="lev1", fast=True)
    relay, url = _relayed(pg_url)
    app = create_app(url, storage_check_seconds=0, storage_answer_seconds=LIMIT)
    client = TestClient(app, follow_redirects=False)
    try:
        page = client.get("/studies/coat")
        assert page.status_code == 200
        csrf = _csrf(page.text)
        qid = client.post("/api/studies/coat/ask").json()["id"]
        relay.silent.set()
        assert client.get("/api/studies/coat").status_code == 503  # the database is silent now

        def queued(call):
            """``call`` made while another request holds the study, waiting for the database
            (a new connection: its timeout, 2 s at the least)."""
            holder = threading.Thread(target=lambda: TestClient(app).get("/api/studies/coat"))
            holder.start()
            time.sleep(0.5)  # the holder has the study
            try:
                return call()
            finally:
                holder.join(timeout=60)

        tell = {"query_id": qid, "answer": 0.51}
        r = queued(lambda: client.post("/api/studies/coat/tell", json=tell))
        assert r.status_code == 503, r.text
        body = r.json()
        assert "Nothing of this request was stored" in body["detail"], body
        assert body["stored"] is False, body

        sent = {"csrf": csrf, "query_id": str(qid), "value": "0.51"}
        r = queued(lambda: client.post("/studies/coat/tell", data=sent))
        assert r.status_code == 503
        assert "The database does not answer" in r.text
        assert f"Your answer to query {qid} was NOT stored" in r.text
        assert "may be stored, or not" not in r.text
    finally:
        relay.silent.clear()
        relay.close()
    assert _answers(pg_url, qid) == []
