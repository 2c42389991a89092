"""Crash safety and concurrency of studies (issue 8).

* Crash: a worker process answering queries in a tight loop is killed with SIGKILL at random
  points, 40 rounds (forked workers, so a round costs milliseconds, not an interpreter start) plus
  3 rounds of a freshly started interpreter. After every kill: every answer the worker had
  acknowledged (it acknowledges only after ``tell`` returned, i.e. after the commit) is stored,
  none is duplicated, every stored answer is the one given for its query, the log replays, and
  the study goes on.
* Two processes telling the same query id at the same moment: exactly one wins, the other gets
  ``QueryStateError`` (20 races).
* A reader polling ``load_study`` / ``history`` while a writer tells 60 answers: the reader never
  fails and sees a non-decreasing count; the writer finishes every tell.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from boloop.errors import QueryStateError
from boloop.study import create_study, load_study
from boloop.study import storage as storage_mod

pytestmark = pytest.mark.skipif(
    sys.platform == "win32" or "fork" not in mp.get_all_start_methods(),
    reason="needs fork and SIGKILL",
)

SPACE = {
    "parameters": [
        {"name": "temperature", "low": 20.0, "high": 80.0},
        {"name": "ratio", "low": 0.0, "high": 1.0},
    ],
    "threshold": 0.5,
}


def _answer_for(qid: int) -> float:
    return round(0.001 * qid + 0.5, 6)


def _fresh_engines() -> None:
    """Forked children must not use the parent's pooled SQLite connections."""
    storage_mod.dispose_engines(close=False)


def _dispose_engines() -> None:
    storage_mod.dispose_engines()


def _crash_worker(url: str, wfd: int) -> None:
    _fresh_engines()
    study = load_study("crash", storage=url)
    os.write(wfd, b"R\n")  # loaded: the kill lands in the answering loop
    while True:
        q = study.ask()
        study.tell(q.id, _answer_for(q.id))
        os.write(wfd, f"{q.id}\n".encode())


def _wait_ready(rfd: int) -> bytes:
    buf = b""
    while b"R\n" not in buf:
        b = os.read(rfd, 65536)
        if not b:
            raise AssertionError("worker died before it was ready")
        buf += b
    return buf.split(b"R\n", 1)[1]


def _read_all(rfd: int, head: bytes = b"") -> list[int]:
    chunks = [head]
    while True:
        b = os.read(rfd, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(rfd)
    return [int(s) for s in b"".join(chunks).decode().split()]


def _check_log(url: str, acknowledged: set[int]) -> int:
    """The stored answers: consecutive query ids, each answered once with its own answer."""
    study = load_study("crash", storage=url, full_replay=True)
    hist = study.history()
    ids = [row["query_id"] for row in hist]
    assert ids == list(range(len(ids))), "answers missing or out of order"
    assert all(row["answer"] == _answer_for(row["query_id"]) for row in hist)
    assert acknowledged <= set(ids), f"acknowledged answers lost: {sorted(acknowledged - set(ids))}"
    con = sqlite3.connect(url.removeprefix("sqlite:///"))
    told = con.execute(
        "SELECT query_id, COUNT(*) FROM boloop_events WHERE kind='told' "
        "GROUP BY query_id HAVING COUNT(*) > 1"
    ).fetchall()
    integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
    con.close()
    assert told == [], f"duplicated answers {told}"
    assert integrity == "ok"
    # the study goes on: the next query is the policy's, and it can be answered
    q = study.ask()
    assert q.id == len(ids)
    return len(ids)


def test_sigkill_at_random_points_loses_and_duplicates_nothing(tmp_path):
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    create_study("crash", "toy-random", SPACE, family="levelset", storage=url, seed=0)
    ctx = mp.get_context("fork")
    rng = np.random.default_rng(8)
    acknowledged: set[int] = set()
    counts = []
    for _ in range(40):
        _dispose_engines()
        rfd, wfd = os.pipe()
        proc = ctx.Process(target=_crash_worker, args=(url, wfd), daemon=True)
        proc.start()
        os.close(wfd)
        head = _wait_ready(rfd)
        time.sleep(float(rng.uniform(0.0, 0.08)))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(10)
        assert proc.exitcode == -signal.SIGKILL
        acknowledged |= set(_read_all(rfd, head))
        counts.append(_check_log(url, acknowledged))
    assert counts[-1] > counts[0]  # the study progressed over the rounds
    assert len(acknowledged) > 0


def test_sigkill_of_a_fresh_interpreter(tmp_path):
    """Three rounds with a real interpreter start (the CLI's situation)."""
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    create_study("crash", "toy-random", SPACE, family="levelset", storage=url, seed=0)
    script = textwrap.dedent(f"""
        import sys
        from boloop.study import load_study
        study = load_study("crash", storage={url!r})
        print("ready", flush=True)
        while True:
            q = study.ask()
            study.tell(q.id, round(0.001 * q.id + 0.5, 6))
            print(q.id, flush=True)
    """)
    acknowledged: set[int] = set()
    rng = np.random.default_rng(3)
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(float(rng.uniform(0.05, 0.3)))
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=30)
        acknowledged |= {int(s) for s in out.split()}
        _check_log(url, acknowledged)


def _racer(url: str, qid: int, answer: float, ready: object, go: object, results: object) -> None:
    try:
        _fresh_engines()
        study = load_study("race", storage=url)
        seen = study.ask().id
        ready.release()  # type: ignore[attr-defined]
        if seen != qid:
            raise AssertionError(f"child sees open query {seen}, expected {qid}")
        go.wait()  # type: ignore[attr-defined]
        study.tell(qid, answer)
        results.put(("won", answer))  # type: ignore[attr-defined]
    except QueryStateError as exc:
        results.put(("lost", str(exc)))  # type: ignore[attr-defined]
    except BaseException as exc:  # noqa: BLE001 - report anything else to the parent
        results.put(("error", repr(exc)))  # type: ignore[attr-defined]


def test_two_processes_telling_the_same_query_exactly_one_wins(tmp_path):
    url = f"sqlite:///{tmp_path / 'race.db'}"
    study = create_study("race", "toy-random", SPACE, family="levelset", storage=url, seed=0)
    ctx = mp.get_context("fork")
    for _ in range(20):
        q = study.ask()
        _dispose_engines()
        go = ctx.Event()
        ready = ctx.Semaphore(0)
        results = ctx.Queue()
        procs = [
            ctx.Process(target=_racer, args=(url, q.id, a, ready, go, results)) for a in (1.0, 2.0)
        ]
        for p in procs:
            p.start()
        for _ in procs:  # both have loaded the study and see the same open query
            assert ready.acquire(timeout=30)
        go.set()
        outcome = sorted(results.get(timeout=30) for _ in procs)
        for p in procs:
            p.join(10)
        assert [o[0] for o in outcome] == ["lost", "won"], outcome
        assert "already answered" in outcome[0][1]
        stored = study.history()[-1]
        assert stored["query_id"] == q.id and stored["answer"] == outcome[1][1]
    con = sqlite3.connect(url.removeprefix("sqlite:///"))
    n_told = con.execute("SELECT COUNT(*) FROM boloop_events WHERE kind='told'").fetchone()[0]
    con.close()
    assert n_told == 20


def _writer(url: str, n: int, results: object) -> None:
    _fresh_engines()
    study = load_study("rw", storage=url)
    worst = 0.0
    for _ in range(n):
        q = study.ask()
        t0 = time.perf_counter()
        study.tell(q.id, 0.5)
        worst = max(worst, time.perf_counter() - t0)
    results.put(("done", worst))  # type: ignore[attr-defined]


def test_reader_polling_while_a_writer_tells(tmp_path):
    url = f"sqlite:///{tmp_path / 'rw.db'}"
    create_study("rw", "toy-random", SPACE, family="levelset", storage=url, seed=0)
    ctx = mp.get_context("fork")
    _dispose_engines()
    results = ctx.Queue()
    writer = ctx.Process(target=_writer, args=(url, 60, results))
    writer.start()
    seen = []
    deadline = time.time() + 60
    while writer.is_alive() and time.time() < deadline:
        seen.append(len(load_study("rw", storage=url).history()))
    writer.join(30)
    status, worst = results.get(timeout=10)
    assert status == "done" and writer.exitcode == 0
    seen.append(len(load_study("rw", storage=url).history()))
    assert seen == sorted(seen), "a reader saw answers disappear"
    assert seen[-1] == 60
    assert len(seen) >= 2
