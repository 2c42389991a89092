"""What the web server's limit on the wait for its PostgreSQL server's answer costs (``boloop
serve --storage-answer``, :func:`boloop.study.storage.limit_answers`): each wait for an answer
(a statement, a commit) is noted on the engine's events, and a watchdog thread looks at the
waits a few times per limit (twice a second at the default 10 s).

1. A request through the app (``TestClient``, in this process): ``GET /api/studies/coat`` (a
   read of the study's new events) and the study's answer cycle through the API (``ask``,
   ``tell``, ``undo``: three write transactions), with the limit (10 s) and without (0, which
   is also what a SQLite storage gets: no listener at all): wall and CPU seconds per request,
   rounds alternating between the two (each first in every other round), the median of the
   rounds.
2. One read of the storage (``Storage.study_names``: one statement), with the limit and
   without, the same way: what the listeners add to a statement, with less around it.
3. The bookkeeping of one statement alone (the wait noted, then cleared), in a loop: what the
   limit adds to every statement, measured without the database's noise; and one look of the
   watchdog at no wait (what an idle server pays twice a second).

Without ``--pg URL`` a throwaway server is started with ``tests/pg_server.py`` (Debian's
``initdb``/``pg_ctl``; as the ``postgres`` user when run as root).

Run:  OMP_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/answer_limit_cost.py
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from fastapi.testclient import TestClient  # noqa: E402

from boloop.study import create_study  # noqa: E402
from boloop.study.storage import dispose_engines  # noqa: E402
from boloop.web import create_app  # noqa: E402

SPACE = {"parameters": [{"name": "x", "low": 0.0, "high": 1.0}], "threshold": 0.5}


def _client(url: str, seconds: float) -> TestClient:
    """An app over ``url`` with the answer limit ``seconds``, on a fresh engine (so that 0
    has no listener at all, as a server had before the limit)."""
    dispose_engines()
    app = create_app(url, storage_check_seconds=0, storage_answer_seconds=seconds)
    client = TestClient(app)
    assert client.get("/api/studies/coat").status_code == 200
    return client


#: ``--same``: both "with" and "without" are without the limit (what the noise alone gives)
_SAME = "--same" in sys.argv


def _pair(i: int) -> tuple[tuple[str, float], tuple[str, float]]:
    """Round ``i``'s order: without the limit first, then with it, or the other way round."""
    off, on = ("off", 0.0), ("on", 0.0 if _SAME else 10.0)
    return (off, on) if i % 2 == 0 else (on, off)


def _round(client: TestClient, requests: int, cycle: bool) -> tuple[float, float]:
    """Wall and CPU seconds per request of one round."""
    t0, c0 = time.perf_counter(), time.process_time()
    if cycle:
        for _ in range(requests // 3):
            q = client.post("/api/studies/coat/ask").json()
            r = client.post("/api/studies/coat/tell", json={"query_id": q["id"], "answer": 0.3})
            assert r.status_code == 200, r.text
            assert client.post("/api/studies/coat/undo").status_code == 200
        n = 3 * (requests // 3)
    else:
        for _ in range(requests):
            assert client.get("/api/studies/coat").status_code == 200
        n = requests
    return (time.perf_counter() - t0) / n, (time.process_time() - c0) / n


def per_request(url: str, requests: int, rounds: int, cycle: bool) -> dict[str, float]:
    """Median wall and CPU per request with the limit (10 s) and without, rounds alternating."""
    samples: dict[str, list[tuple[float, float]]] = {"on": [], "off": []}
    for i in range(rounds):  # the order alternates: the second of a pair ran slower here
        for name, seconds in _pair(i):
            client = _client(url, seconds)
            samples[name].append(_round(client, requests, cycle))
    out = {}
    for name, rows in samples.items():
        out[f"{name}_wall"] = statistics.median(w for w, _ in rows)
        out[f"{name}_cpu"] = statistics.median(c for _, c in rows)
    return out


class _Quiet:
    """A watcher that is told nothing here (no wait is cut)."""

    def no_answer(self, waited: float, what: str = "a read") -> None:
        raise AssertionError("no wait should be cut here")

    def answered(self, ok: bool = True) -> None:
        return


def storage_reads(url: str, reads: int, rounds: int) -> dict[str, float]:
    """Median CPU and wall seconds per ``study_names`` read, with the limit and without."""
    from boloop.study.storage import Storage, limit_answers

    watcher = _Quiet()
    samples: dict[str, list[tuple[float, float]]] = {"on": [], "off": []}
    for i in range(rounds):
        for name, seconds in _pair(i):
            limit_answers(url, seconds, watcher)
            dispose_engines()
            storage = Storage(url, create=False)
            storage.study_names()
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(reads):
                storage.study_names()
            samples[name].append(
                ((time.perf_counter() - t0) / reads, (time.process_time() - c0) / reads)
            )
    limit_answers(url, 0.0, watcher)
    out = {}
    for name, rows in samples.items():
        out[f"{name}_wall"] = statistics.median(w for w, _ in rows)
        out[f"{name}_cpu"] = statistics.median(c for _, c in rows)
    return out


def bookkeeping(statements: int) -> float:
    """Seconds of one statement's bookkeeping (noted, then cleared), no database."""
    from boloop.study.answer_limit import AnswerLimit

    limit = AnswerLimit(10.0, lambda waited, what: None, lambda: None)
    t0 = time.perf_counter()
    for _ in range(statements):
        limit.asked(0, "a read")
        limit.replied()
    return (time.perf_counter() - t0) / statements


def watchdog_look(looks: int) -> float:
    """Seconds per look of the watchdog at no wait."""
    from boloop.study.answer_limit import _watchdog

    t0 = time.perf_counter()
    for _ in range(looks):
        _watchdog._look()
    return (time.perf_counter() - t0) / looks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=300, help="requests per round")
    ap.add_argument("--reads-only", action="store_true", help="skip the requests (1.)")
    ap.add_argument("--same", action="store_true", help="no limit on either side: the noise")
    ap.add_argument("--rounds", type=int, default=7, help="rounds of each (alternating)")
    ap.add_argument("--pg", default=None, help="a PostgreSQL URL of an empty database")
    args = ap.parse_args()

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from pg_server import benchmark_database

    database = contextlib.ExitStack()
    url, _ = database.enter_context(benchmark_database(args.pg, "answer"))
    try:
        study = create_study("coat", "randomized-straddle", SPACE, storage=url, seed=1)
        for i in range(20):
            q = study.ask()
            study.tell(q.id, 0.1 + 0.04 * i)
        print(f"load: {os.getloadavg()[0]:.2f} (1 min average), {os.cpu_count()} cores")
        with_ = "no limit again" if _SAME else "limit 10 s"
        kinds = (("GET /api/studies/coat", False), ("ask, tell, undo", True))
        for label, cycle in () if args.reads_only else kinds:
            r = per_request(url, args.requests, args.rounds, cycle)
            print(
                f"{label} (median of {args.rounds} x {args.requests} requests): "
                f"{with_} {1e6 * r['on_wall']:.0f} us wall, {1e6 * r['on_cpu']:.0f} us CPU; "
                f"no limit {1e6 * r['off_wall']:.0f} us wall, {1e6 * r['off_cpu']:.0f} us CPU; "
                f"difference {1e6 * (r['on_wall'] - r['off_wall']):+.0f} us wall, "
                f"{1e6 * (r['on_cpu'] - r['off_cpu']):+.0f} us CPU"
            )
        r = storage_reads(url, 10 * args.requests, args.rounds)
        print(
            f"one read of the storage (median of {args.rounds} x {10 * args.requests}): "
            f"{with_} {1e6 * r['on_wall']:.0f} us wall, {1e6 * r['on_cpu']:.0f} us CPU; "
            f"no limit {1e6 * r['off_wall']:.0f} us wall, {1e6 * r['off_cpu']:.0f} us CPU; "
            f"difference {1e6 * (r['on_wall'] - r['off_wall']):+.1f} us wall, "
            f"{1e6 * (r['on_cpu'] - r['off_cpu']):+.1f} us CPU"
        )
        each = statistics.median(bookkeeping(200_000) for _ in range(5))
        print(f"one statement's bookkeeping alone (median of 5 x 200000): {1e9 * each:.0f} ns")
        look = watchdog_look(100_000)
        print(
            f"one look of the watchdog at no wait: {1e9 * look:.0f} ns; twice a second: "
            f"{100 * 2 * look:.5f} % of a core"
        )
        print(f"load: {os.getloadavg()[0]:.2f}")
    finally:
        dispose_engines()
        database.close()


if __name__ == "__main__":
    main()
