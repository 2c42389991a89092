"""A PostgreSQL server that is reached but refuses the storage URL is the user's mistake, not an
outage: a wrong password, a role the server does not know, a database that does not exist (and a
password the server asks for and the URL does not give). Each is a ``StorageAccessError`` (a
``StorageError``, never the outage's ``StorageUnavailableError``) whose one-line message names the
URL with its password masked and what to check; the password itself appears nowhere. The Python
API, the study commands and ``boloop serve`` (which refuses to start, and answers 500 instead of
the outage's 503 when the server it waited for comes back refusing) all say so.

A real server (the session's, ``tests/conftest.py``): it trusts loopback logins, so the roles
that must give a password get a ``pg_hba.conf`` rule of their own (``PostgresServer.password_role``).
That an outage still starts ``boloop serve`` with 503s is ``tests/test_web_startup_outage.py``.
"""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import time

import pytest

from boloop.cli import main
from boloop.errors import StorageAccessError, StorageError, StorageUnavailableError
from boloop.study import create_study, list_studies, load_study
from boloop.study.storage import open_storage

pytestmark = pytest.mark.xdist_group("postgres")

#: the password every refused URL carries: it must never be shown
PASSWORD = "pw-n0t-in-messages"
RIGHT = "the-right-one-42"
SPACE = {"parameters": [{"name": "x", "low": 0.0, "high": 1.0}], "threshold": 0.5}
_n = itertools.count()


def _name(prefix: str) -> str:
    return f"{prefix}{os.getpid()}_{next(_n)}"


def _masked(url: str) -> str:
    return url.replace(f":{PASSWORD}@", ":***@")


#: the server's three refusals that are the user's mistake
CASES = ("wrong password", "unknown role", "missing database")


def _refusal(pg_server, case: str) -> tuple[str, list[str]]:
    """``(url, words the message must hold)`` of a refusal; the URL carries :data:`PASSWORD`
    (the wrong one for a role that has one, unused by the server's trusted others)."""
    port = pg_server.port
    if case == "wrong password":
        role = _name("pwrole")
        right = pg_server.password_role(role, RIGHT, database=_name("pwdb"))
        url = right.replace(f":{RIGHT}@", f":{PASSWORD}@")
        return url, [f"refused the password of user {role!r}", "28P01", "check the password"]
    if case == "unknown role":
        role = _name("nosuch")
        url = f"postgresql+psycopg://{role}:{PASSWORD}@127.0.0.1:{port}/postgres"
        return url, [f"refused user {role!r}", "28000", "check the user name", "pg_hba.conf"]
    assert case == "missing database"
    db = _name("nodb")
    url = f"postgresql+psycopg://postgres:{PASSWORD}@127.0.0.1:{port}/{db}"
    createdb = f"createdb -h 127.0.0.1 -p {port} -U postgres {db}"
    return url, [f"database {db!r} does not exist", "3D000", createdb]


def _is_refusal(text: str, url: str, words: list[str], where: str) -> None:
    assert f"storage {_masked(url)!r}: " in text, f"{where}: {text}"
    assert all(w in text for w in words), f"{where}: {words} not all in {text}"
    assert "not an outage" in text or "no outage" in text, f"{where}: {text}"
    assert PASSWORD not in text, where


@pytest.mark.parametrize("case", CASES)
def test_python_api_names_what_the_server_refused(pg_server, case):
    url, words = _refusal(pg_server, case)
    calls = {
        "open_storage": lambda: open_storage(url),
        "open_storage(create=False)": lambda: open_storage(url, create=False),
        "list_studies": lambda: list_studies(url),
        "load_study": lambda: load_study("s", storage=url),
        "create_study": lambda: create_study(
            "s", "toy-random", SPACE, family="levelset", storage=url
        ),
    }
    for call, fn in calls.items():
        with pytest.raises(StorageError) as info:
            fn()
        where = f"{case}, {call}"
        assert isinstance(info.value, StorageAccessError), f"{where}: {info.value!r}"
        assert not isinstance(info.value, StorageUnavailableError), where
        _is_refusal(str(info.value), url, words, where)
        assert "\n" not in str(info.value), where
    if case == "wrong password":  # the control: the role's own password opens the database
        assert open_storage(url.replace(f":{PASSWORD}@", f":{RIGHT}@")).exists


def test_a_password_the_server_asks_for_and_the_url_lacks(pg_server):
    role = _name("pwrole")
    url = pg_server.password_role(role, RIGHT).replace(f":{RIGHT}@", "@")
    with pytest.raises(StorageAccessError) as info:
        open_storage(url)
    text = str(info.value)
    assert text.startswith(f"storage {url!r}: ")
    assert f"asks user {role!r} for a password and none is given" in text
    assert f"postgresql+psycopg://{role}:PASSWORD@" in text and RIGHT not in text


@pytest.mark.parametrize("case", ["wrong password", "missing database"])
def test_a_password_given_as_a_query_parameter_is_never_shown(pg_server, case):
    """libpq also takes the password as ``?password=...``: the refusal masks it there too (it
    was printed in full, on the command line and on the server's 500 page)."""
    url, _ = _refusal(pg_server, case)
    user_at = url.split("://", 1)[1].split("@", 1)[0].split(":")[0]
    query_url = url.replace(f"{user_at}:{PASSWORD}@", f"{user_at}@") + f"?password={PASSWORD}"
    with pytest.raises(StorageAccessError) as info:
        open_storage(query_url)
    text = str(info.value)
    assert PASSWORD not in text and "?password=***" in text, text


def test_safe_url_masks_every_form_of_password():
    from boloop.study.log import safe_url, url_for_command

    cases = {
        "postgresql+psycopg://lab:s3cret@h/db": "postgresql+psycopg://lab:***@h/db",
        "postgresql://lab@h/db?password=s3cret": "postgresql://lab@h/db?password=***",
        "postgresql://lab@h/db?sslmode=require&password=s3cret&x=1": (
            "postgresql://lab@h/db?sslmode=require&password=***&x=1"
        ),
        "postgresql://lab@h/db": "postgresql://lab@h/db",
        "sqlite:////tmp/a@b/lab.db": "sqlite:////tmp/a@b/lab.db",
    }
    for url, shown in cases.items():
        assert safe_url(url) == shown, url
    assert url_for_command("postgresql://lab@h/db?password=s3cret") == "YOUR_STORAGE_URL"


@pytest.mark.parametrize("case", CASES)
def test_study_commands_say_what_the_server_refused(pg_server, case, capsys):
    url, words = _refusal(pg_server, case)
    for argv in (
        ["study", "status", "s", "--storage", url],
        ["study", "list", "--storage", url],
        ["study", "create", "s", "--method", "toy-random", "--problem", "levelset/toy",
         "--storage", url],
    ):  # fmt: skip
        assert main(argv) == 2, (case, argv)
        out, err = capsys.readouterr()
        where = f"{case}: boloop {' '.join(argv[:2])}"
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("boloop: error: storage "), err
        _is_refusal(lines[0], url, words, where)
        assert PASSWORD not in out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("case", CASES)
def test_serve_refuses_to_start(pg_server, case, tmp_path):
    """The command itself (a child process: a regression would start a server and wait, which
    the timeout ends): exit status 2, the refusal on stderr's last line, no traceback."""
    url, words = _refusal(pg_server, case)
    res = subprocess.run(
        [sys.executable, "-m", "boloop.cli", "serve", "--port", str(_free_port()),
         "--storage", url],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
    )  # fmt: skip
    assert res.returncode == 2, f"{res.returncode} {res.stderr}"
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("boloop: error: storage "), res.stderr
    _is_refusal(last, url, words, case)
    assert "Traceback" not in res.stderr and "cannot be reached" not in res.stderr
    assert PASSWORD not in res.stderr + res.stdout


def test_serve_waiting_on_an_outage_answers_500_when_the_server_comes_back_refusing(pg_server):
    """Started while the server is down (503s, as for any outage), the server comes back and
    refuses the password: every request is a 500 naming the refusal, not a 503 for ever; once
    the password is right on the server the studies are served without a restart."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    role, db = _name("pwrole"), _name("pwdb")
    url = pg_server.password_role(role, RIGHT, database=db).replace(f":{RIGHT}@", f":{PASSWORD}@")
    words = [f"refused the password of user {role!r}", "28P01"]
    pg_server.stop("fast")
    pg_server.wait_down()
    try:
        client = TestClient(create_app(url), follow_redirects=False)
        r = client.get("/api/studies")
        assert r.status_code == 503 and r.headers.get("retry-after"), r.text
    finally:
        pg_server.start()
    for _ in range(2):  # and again: it is no outage
        r = client.get("/api/studies")
        assert r.status_code == 500, f"{r.status_code} {r.text[:300]}"
        assert "retry-after" not in r.headers
        _is_refusal(r.json()["detail"], url, words, "/api/studies")
        page = client.get("/")
        assert page.status_code == 500, page.text[:300]
        assert words[0].replace("'", "&#39;") in page.text and PASSWORD not in page.text
    pg_server.admin(f"ALTER ROLE \"{role}\" PASSWORD '{PASSWORD}'")  # the server's side fixed
    r = client.get("/api/studies")
    assert r.status_code == 200 and r.json() == [], r.text


def test_a_password_changed_while_serving_is_a_500_not_an_outage(pg_server):
    """The role's password changes on the server while ``boloop serve`` runs (its sessions
    ended): requests that need the database are 500s saying the password was refused, nothing
    is stored, and the same server goes on once the password is the URL's again."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app
    from study_samples import make_study

    role, db = _name("pwrole"), _name("pwdb")
    url = pg_server.password_role(role, RIGHT, database=db)
    make_study("coat", url, answers=2, key="lev1", fast=True)
    client = TestClient(create_app(url), follow_redirects=False)
    q = client.post("/api/studies/coat/ask").json()
    pg_server.admin(f"ALTER ROLE \"{role}\" PASSWORD '{PASSWORD}'")
    pg_server.admin(
        f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'"
    )
    # pg_terminate_backend only signals: on a busy machine a session may still be alive for a
    # moment, and a request using it then loses its connection midway (a 503, rightly: an
    # outage). Wait until the role has no session, so every request must log in afresh.
    deadline = time.monotonic() + 30
    while pg_server.admin(f"SELECT pid FROM pg_stat_activity WHERE usename = '{role}'"):
        assert time.monotonic() < deadline, "the role's sessions did not end"
        time.sleep(0.05)
    words = [f"refused the password of user {role!r}", "28P01"]
    masked = url.replace(f":{RIGHT}@", ":***@")
    for method, path, body in (
        ("POST", "/api/studies/coat/tell", {"query_id": q["id"], "answer": 0.5}),
        ("GET", "/api/studies/coat", None),
        ("GET", "/studies/coat", None),
    ):
        r = client.request(method, path, json=body)
        assert r.status_code == 500, f"{method} {path}: {r.status_code} {r.text[:300]}"
        assert "retry-after" not in r.headers
        text = r.json()["detail"] if path.startswith("/api/") else r.text.replace("&#39;", "'")
        assert f"storage {masked!r}" in text and all(w in text for w in words), text[:500]
        assert RIGHT not in text and PASSWORD not in text
    pg_server.admin(f"ALTER ROLE \"{role}\" PASSWORD '{RIGHT}'")
    assert load_study("coat", storage=url).n_answered == 2  # the refused tell stored nothing
    r = client.post("/api/studies/coat/tell", json={"query_id": q["id"], "answer": 0.5})
    assert r.status_code == 200 and r.json()["answered"] == 3, r.text
