"""What the web server's periodic check of its PostgreSQL storage costs (``boloop serve
--storage-check``, :func:`boloop.web.outage.check_storage_periodically`).

1. One check, repeated ``--checks`` times in this process (``StudyPool.check_storage``: the read
   of the list of studies of a storage holding ``--studies`` studies, on the engine's pooled
   connection): the CPU seconds of this process per check (``time.process_time``), the wall
   time per check, and the CPU of the PostgreSQL backend that serves the connection (from
   ``/proc/<pid>/stat``; on this machine only). What a day of checks at the default interval
   costs follows.
2. The real command idle for ``--idle-seconds``: ``boloop serve --storage-check 0.5`` against
   ``--storage-check 0`` (no check), the server process's CPU (``/proc/<pid>/stat``) over the
   same idle time, and the difference per check: the end-to-end figure (the event loop's timer,
   the thread pool's hand-off, the read), with the noise of an idle uvicorn around it.

Without ``--pg URL`` a throwaway server is started with ``tests/pg_server.py`` (Debian's
``initdb``/``pg_ctl``; as the ``postgres`` user when run as root).

Run:  OMP_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/storage_check_cost.py
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

os.environ.setdefault("OMP_NUM_THREADS", "1")

from boloop.study import create_study  # noqa: E402
from boloop.study.storage import dispose_engines  # noqa: E402
from boloop.web.app import StudyPool  # noqa: E402
from boloop.web.outage import STORAGE_CHECK_SECONDS  # noqa: E402

SPACE = {"parameters": [{"name": "x", "low": 0.0, "high": 1.0}], "threshold": 0.5}
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float | None:
    """user + system CPU seconds of process ``pid`` (None: not readable here)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14, 15)


def _backend_pids(url: str) -> list[int]:
    """The PostgreSQL backends of this storage's database opened by boloop
    (``application_name``), through a connection of its own (not counted)."""
    import psycopg
    from sqlalchemy.engine import make_url

    u = make_url(url)
    with psycopg.connect(
        host=u.host, port=u.port, user=u.username, password=u.password, dbname="postgres",
        autocommit=True,
    ) as conn:  # fmt: skip
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'boloop' AND datname = %s",
            (u.database,),
        ).fetchall()
    return [int(r[0]) for r in rows]


def per_check(url: str, checks: int) -> dict[str, float | None]:
    """CPU and wall seconds per :meth:`StudyPool.check_storage`, median of 5 rounds."""
    dispose_engines()  # the studies' set-up connections closed: the pool's is the only one
    pool = StudyPool(url, storage_check_seconds=STORAGE_CHECK_SECONDS)
    pool.check_storage()
    backends = _backend_pids(url)
    backend = backends[0] if len(backends) == 1 else None
    cpu, wall, server = [], [], []
    for _ in range(5):
        b0 = _cpu_seconds(backend) if backend is not None else None
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(checks):
            pool.check_storage()
        cpu.append((time.process_time() - c0) / checks)
        wall.append((time.perf_counter() - w0) / checks)
        b1 = _cpu_seconds(backend) if backend is not None else None
        if b0 is not None and b1 is not None:
            server.append((b1 - b0) / checks)
    return {
        "cpu": statistics.median(cpu),
        "wall": statistics.median(wall),
        "server": statistics.median(server) if server else None,
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def idle_server_cpu(url: str, check: float, seconds: float) -> float:
    """CPU seconds of ``boloop serve --storage-check check`` over ``seconds`` of no traffic,
    counted from its first answer (its start is left out)."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "boloop.cli", "serve", "--storage", url, "--port", str(port),
         "--storage-check", str(check)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("boloop serve did not start") from None
                time.sleep(0.1)
        time.sleep(1.0)  # the start's work done
        c0 = _cpu_seconds(proc.pid)
        time.sleep(seconds)
        c1 = _cpu_seconds(proc.pid)
        assert c0 is not None and c1 is not None
        return c1 - c0
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checks", type=int, default=2000, help="checks per round (5 rounds)")
    ap.add_argument("--studies", type=int, default=50, help="studies in the storage")
    ap.add_argument("--idle-seconds", type=float, default=60.0)
    ap.add_argument("--pg", default=None, help="a PostgreSQL URL of an empty database")
    args = ap.parse_args()

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from pg_server import benchmark_database

    database = contextlib.ExitStack()
    url, _ = database.enter_context(benchmark_database(args.pg, "check"))
    try:
        for i in range(args.studies):
            create_study(f"s{i:03d}", "randomized-straddle", SPACE, storage=url, seed=i)
        print(f"load: {os.getloadavg()[0]:.2f} (1 min average), {os.cpu_count()} cores")
        one = per_check(url, args.checks)
        server_text = (
            "n/a (the database is not on this machine)"
            if one["server"] is None
            else f"{1e6 * one['server']:.0f} us"
        )
        per_day = 86400 / STORAGE_CHECK_SECONDS
        print(
            f"one check ({args.studies} studies, median of 5 x {args.checks}): "
            f"{1e6 * one['cpu']:.0f} us CPU in the server, {1e6 * one['wall']:.0f} us wall, "
            f"{server_text} CPU in the PostgreSQL backend"
        )
        print(
            f"at the default interval ({STORAGE_CHECK_SECONDS:g} s, {per_day:.0f} checks a day, "
            f"an idle server): {per_day * one['cpu']:.2f} s CPU a day in the server "
            f"({100 * one['cpu'] / STORAGE_CHECK_SECONDS:.5f} % of a core)"
        )
        check = 0.5
        on = idle_server_cpu(url, check, args.idle_seconds)
        off = idle_server_cpu(url, 0, args.idle_seconds)
        n = args.idle_seconds / check
        print(
            f"boloop serve idle for {args.idle_seconds:g} s: {1e3 * on:.0f} ms CPU with a check "
            f"every {check:g} s ({n:.0f} checks), {1e3 * off:.0f} ms without; "
            f"{1e6 * (on - off) / n:.0f} us per check (clock ticks of {1e3 / _TICK:.0f} ms)"
        )
        print(f"load: {os.getloadavg()[0]:.2f}")
    finally:
        database.close()


if __name__ == "__main__":
    main()
