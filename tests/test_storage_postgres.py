"""Studies on a real PostgreSQL server (issue 14): several writers, killed writers, a server
that goes away in the middle of a study, passwords kept out of messages.

* 8 processes answer 200 queries across 4 studies (two racing on each study): every answer is
  stored exactly once, every acknowledged answer is there, no answer is lost or replaced.
* Writers killed with SIGKILL at random points (two per study at a time, 10 rounds): every
  answer a writer acknowledged (after ``tell`` returned, i.e. after the commit) survives; none is
  duplicated; the log replays; the study goes on.
* The server stops between two operations and inside a tell (after the insert, before the
  commit): the tell is a clear StorageError, nothing of it is stored, the same Study object goes
  on once the server is back and the repeated tell is stored once.

The server is the session's (``tests/conftest.py``); every test has its own database.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import time

import numpy as np
import pytest

from boloop.errors import QueryStateError, StorageError, UnknownIdError
from boloop.study import create_study, list_studies, load_study
from boloop.study import storage as storage_mod

pytestmark = [
    pytest.mark.xdist_group("postgres"),
    pytest.mark.skipif(
        sys.platform == "win32" or "fork" not in mp.get_all_start_methods(),
        reason="needs fork and SIGKILL",
    ),
]

SPACE = {
    "parameters": [
        {"name": "temperature", "low": 20.0, "high": 80.0},
        {"name": "ratio", "low": 0.0, "high": 1.0},
    ],
    "threshold": 0.5,
}


def _answer_for(name: str, qid: int) -> float:
    return round(int(name[1:]) + 0.001 * qid, 6)


def _create(url: str, name: str):
    return create_study(name, "toy-random", SPACE, family="levelset", storage=url, seed=7)


def _told(url: str, name: str) -> list[tuple[int, float]]:
    """``(query id, answer)`` of every stored answer (withdrawn ones included: there are none)."""
    return [
        (e["query_id"], e["payload"]["answer"])
        for e in load_study(name, storage=url, full_replay=True).events()
        if e["kind"] == "told"
    ]


# -- many writers ---------------------------------------------------------------------------------
def _answering_worker(url: str, name: str, target: int, results: object) -> None:
    try:
        study = load_study(name, storage=url)
        acked, lost = [], 0
        while True:
            study.refresh()
            if study.n_answered >= target:
                break
            q = study.ask()
            try:
                study.tell(q.id, _answer_for(name, q.id))
            except QueryStateError:  # the other writer of this study answered it first
                lost += 1
                continue
            acked.append(q.id)
        results.put(("ok", name, acked, lost))  # type: ignore[attr-defined]
    except BaseException as exc:  # noqa: BLE001 - report anything to the parent
        results.put(("error", name, repr(exc), 0))  # type: ignore[attr-defined]


def test_eight_processes_answer_200_queries_across_four_studies(pg_url):
    names = [f"s{i}" for i in range(4)]
    for n in names:
        _create(pg_url, n)
    ctx = mp.get_context("fork")
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_answering_worker, args=(pg_url, names[w % 4], 50, results))
        for w in range(8)
    ]
    for p in procs:
        p.start()
    outcome = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(30)
    assert all(o[0] == "ok" for o in outcome), [o for o in outcome if o[0] != "ok"]
    total = 0
    for n in names:
        acked = sorted(q for o in outcome if o[1] == n for q in o[2])
        stored = _told(pg_url, n)
        ids = [q for q, _ in stored]
        assert len(ids) == len(set(ids)), f"study {n}: an answer stored twice"
        assert sorted(ids) == acked, f"study {n}: stored {len(ids)}, acknowledged {len(acked)}"
        assert ids == list(range(len(ids)))  # one query after the other, none skipped
        assert all(a == _answer_for(n, q) for q, a in stored), f"study {n}: an answer replaced"
        assert len(ids) >= 50
        total += len(ids)
    assert total >= 200
    assert sum(o[3] for o in outcome) >= 0  # lost races are reported, not errors
    assert {r["name"]: r["answered"] for r in list_studies(pg_url)} == {
        n: len(_told(pg_url, n)) for n in names
    }


def _crash_worker(url: str, name: str, wfd: int) -> None:
    study = load_study(name, storage=url)
    os.write(wfd, b"R\n")
    while True:
        q = study.ask()
        try:
            study.tell(q.id, _answer_for(name, q.id))
        except QueryStateError:
            continue
        os.write(wfd, f"{q.id}\n".encode())


def _read_acks(rfd: int) -> tuple[bool, list[int]]:
    chunks = []
    while True:
        b = os.read(rfd, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(rfd)
    text = b"".join(chunks).decode()
    return "R\n" in text, [int(s) for s in text.replace("R\n", "").split()]


def test_writers_killed_at_random_points_lose_and_duplicate_nothing(pg_url):
    name = "s1"
    _create(pg_url, name)
    ctx = mp.get_context("fork")
    rng = np.random.default_rng(14)
    acknowledged: set[int] = set()
    counts = []
    for _ in range(10):
        pipes, procs = [], []
        for _w in range(2):
            rfd, wfd = os.pipe()
            p = ctx.Process(target=_crash_worker, args=(pg_url, name, wfd), daemon=True)
            p.start()
            os.close(wfd)
            pipes.append(rfd)
            procs.append(p)
        time.sleep(float(rng.uniform(0.05, 0.4)))  # loading takes part of it: kills land anywhere
        for p in procs:
            time.sleep(float(rng.uniform(0.0, 0.03)))
            os.kill(p.pid, signal.SIGKILL)
        for p in procs:
            p.join(10)
            assert p.exitcode == -signal.SIGKILL
        for rfd in pipes:
            acknowledged |= set(_read_acks(rfd)[1])
        stored = _told(pg_url, name)
        ids = [q for q, _ in stored]
        assert ids == list(range(len(ids))), "answers missing, duplicated or out of order"
        assert all(a == _answer_for(name, q) for q, a in stored)
        assert acknowledged <= set(ids), f"acknowledged answers lost: {acknowledged - set(ids)}"
        counts.append(len(ids))
    assert counts[-1] > counts[0] and acknowledged
    study = load_study(name, storage=pg_url)  # the study goes on
    q = study.ask()
    assert q.id == counts[-1]
    study.tell(q.id, _answer_for(name, q.id))
    assert study.n_answered == counts[-1] + 1


# -- the server goes away -------------------------------------------------------------------------
def test_a_server_restart_in_the_middle_of_a_study(pg_server, pg_url, monkeypatch):
    study = _create(pg_url, "s3")
    for _ in range(4):
        q = study.ask()
        study.tell(q.id, _answer_for("s3", q.id))
    q = study.ask()

    # 1. the server is down between two operations
    pg_server.stop("immediate")
    try:
        with pytest.raises(StorageError, match="connection to the database server was lost"):
            study.tell(q.id, 0.25)
        with pytest.raises(StorageError, match="cannot connect to the database server"):
            load_study("s3", storage=pg_url)
    finally:
        pg_server.start()
    assert load_study("s3", storage=pg_url).n_answered == 4  # nothing half-written
    study.tell(q.id, 0.25)  # the same object goes on: the repeated tell is stored
    assert [a for _, a in _told(pg_url, "s3")][-1] == 0.25

    # 2. the server goes down inside a tell: after the insert, before the commit
    q = study.ask()
    real_append = storage_mod.Transaction.append

    def append_then_crash(self, *args, **kwargs):
        event = real_append(self, *args, **kwargs)
        pg_server.stop("immediate")
        return event

    monkeypatch.setattr(storage_mod.Transaction, "append", append_then_crash)
    try:
        with pytest.raises(StorageError, match="rolled back, so nothing of it is half-written"):
            study.tell(q.id, 0.5)
    finally:
        monkeypatch.setattr(storage_mod.Transaction, "append", real_append)
        pg_server.start()
    assert len(_told(pg_url, "s3")) == 5  # the interrupted answer left no trace
    assert load_study("s3", storage=pg_url).ask().id == q.id
    study.tell(q.id, 0.5)  # retry: the study reloads what the failed tell had applied
    stored = _told(pg_url, "s3")
    assert [qid for qid, _ in stored] == list(range(6)) and stored[-1] == (q.id, 0.5)
    assert study.ask().id == q.id + 1 == load_study("s3", storage=pg_url).ask().id


def test_a_connection_cut_mid_tell_is_a_clear_error_and_retry_safe(pg_server, pg_url, monkeypatch):
    """The server ends this client's session (as a network cut or an administrator would) after
    the insert: the tell fails, nothing is stored, the pool reconnects, the retry is stored once."""
    study = _create(pg_url, "s2")
    q = study.ask()
    study.tell(q.id, 0.125)
    q = study.ask()
    real_append = storage_mod.Transaction.append

    def append_then_cut(self, *args, **kwargs):
        event = real_append(self, *args, **kwargs)
        pid = self.conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        pg_server.admin(f"SELECT pg_terminate_backend({int(pid)})")
        return event

    monkeypatch.setattr(storage_mod.Transaction, "append", append_then_cut)
    with pytest.raises(StorageError, match="connection to the database server was lost"):
        study.tell(q.id, 0.75)
    monkeypatch.setattr(storage_mod.Transaction, "append", real_append)
    assert _told(pg_url, "s2") == [(0, 0.125)]
    study.tell(q.id, 0.75)
    assert _told(pg_url, "s2") == [(0, 0.125), (1, 0.75)]
    with pytest.raises(QueryStateError, match="already answered"):
        study.tell(q.id, 0.75)


def test_passwords_stay_out_of_messages_and_status(pg_server, pg_url, capsys):
    from boloop.cli import main

    url = pg_url.replace("postgres@", "postgres:s3cret@")  # trust auth: the password is unused
    study = _create(url, "s1")
    assert "s3cret" not in json_text(study.status())
    with pytest.raises(UnknownIdError) as info:
        load_study("missing", storage=url)
    assert "s3cret" not in str(info.value) and "***" in str(info.value)
    assert main(["study", "create", "s2", "--method", "toy-random", "--problem",
                 "levelset/toy", "--storage", url]) == 0  # fmt: skip
    assert main(["study", "status", "s2", "--storage", url]) == 0
    out, err = capsys.readouterr()
    assert "s3cret" not in out + err and "postgres:***@" in out


def json_text(obj: object) -> str:
    import json

    return json.dumps(obj, default=str)


def test_boloop_serve_over_postgresql_and_a_second_writer(pg_url):
    """The web page's API over a PostgreSQL storage (a password in the URL stays off the page),
    while another process's view of the same study answers too: one log, every answer once."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    _create(pg_url, "s1")
    client = TestClient(create_app(pg_url.replace("postgres@", "postgres:s3cret@")))
    page = client.get("/").text  # the footer names the storage, without its password
    assert "postgres:***@" in page and "s3cret" not in page
    other = load_study("s1", storage=pg_url)
    for k in range(3):
        q = client.post("/api/studies/s1/ask").json()
        r = client.post("/api/studies/s1/tell", json={"query_id": q["id"], "answer": 0.1 * k})
        assert r.status_code == 200, r.text
        q2 = other.ask()
        other.tell(q2.id, 0.5)
    q = client.post("/api/studies/s1/ask").json()
    other.tell(other.ask().id, 0.9)  # the other answers the open query first
    r = client.post("/api/studies/s1/tell", json={"query_id": q["id"], "answer": 0.2})
    assert r.status_code == 409 and "already answered" in r.text
    assert [q for q, _ in _told(pg_url, "s1")] == list(range(7))
    assert [row["name"] for row in client.get("/api/studies").json()] == ["s1"]


def test_tables_in_the_maintenance_database_are_created_with_a_warning(pg_server, pg_url, caplog):
    """A newcomer's URL named the server's ``postgres`` database, and boloop's tables went
    there without a word. They still do (a hosted server may offer no other), with a warning
    that says so; a database of its own gets no warning."""
    import logging

    with caplog.at_level(logging.WARNING, logger="boloop"):
        create_study("own", "toy-random", problem="levelset/toy", storage=pg_url, seed=0)
    assert not [r for r in caplog.records if "maintenance database" in r.getMessage()]
    maintenance = pg_server.url("postgres")
    try:
        with caplog.at_level(logging.WARNING, logger="boloop"):
            study = create_study(
                "in-postgres", "toy-random", problem="levelset/toy", storage=maintenance, seed=0
            )
        said = [r.getMessage() for r in caplog.records if "maintenance database" in r.getMessage()]
        assert len(said) == 1 and "'postgres'" in said[0] and "createdb boloop" in said[0]
        assert study.name in [s["name"] for s in list_studies(maintenance)]
    finally:  # leave the session's maintenance database as it was
        tables = pg_server.admin(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        )  # only boloop's: the maintenance database holds none of its own
        for (name,) in tables:
            pg_server.admin(f'DROP TABLE IF EXISTS "{name}" CASCADE')
