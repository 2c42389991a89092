"""Storage speed (issue 14): PostgreSQL on loopback against SQLite.

1. ``tell`` + the next ``ask`` on a study with ``--answers`` answers (default 300), in one
   process holding the study (a web page, a script): the median over ``--repeats`` steps, the two
   backends interleaved step by step so that the machine's load hits both alike. Also the same
   step as a command-line call pays it: ``load_study`` + ``tell`` + ``ask``. The method is
   ``toy-random`` by default (a policy that costs nothing, so the figure is the storage's; a real
   method adds the same policy time to both backends).
2. ``--writers`` processes (default 8) answering as fast as they can for ``--seconds``, two per
   study (they race for the same query: the loser's tell is refused, as in a lab where two
   people answer the same study) and one per study: total stored answers per second, and the
   CPU seconds each stored answer cost (writers, plus the server's processes when the benchmark
   started the server), from which the rate two idle cores would allow follows: on a machine
   shared with other jobs the measured rate says more about the load than about the storage.

Without ``--pg URL`` a throwaway server is started with ``tests/pg_server.py`` (Debian's
``initdb``/``pg_ctl``; as the ``postgres`` user when run as root), with ``fsync`` on: every
acknowledged answer is on disk, as with SQLite's full sync.

Run:  OMP_NUM_THREADS=1 nice -n 5 python benchmarks/storage_speed.py [--answers 300]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from boloop.errors import QueryStateError  # noqa: E402
from boloop.study import create_study, load_study  # noqa: E402

SPACE = {
    "parameters": [
        {"name": "temperature", "low": 20.0, "high": 80.0},
        {"name": "ratio", "low": 0.0, "high": 1.0},
    ],
    "threshold": 0.5,
}


def _study(url: str, name: str, method: str, n: int):
    study = create_study(name, method, SPACE, family="levelset", storage=url, seed=0)
    for k in range(n):
        q = study.ask()
        study.tell(q.id, 0.001 * (k % 997))
    return study


def step_times(urls: dict[str, str], method: str, answers: int, repeats: int) -> dict:
    """Median seconds of tell + ask (live study) and load + tell + ask (fresh load) per backend."""
    studies = {b: _study(u, "speed", method, answers) for b, u in urls.items()}
    live: dict[str, list[float]] = {b: [] for b in urls}
    fresh: dict[str, list[float]] = {b: [] for b in urls}
    open_q = {b: s.ask() for b, s in studies.items()}
    for r in range(repeats):
        for b in urls if r % 2 == 0 else list(urls)[::-1]:
            study = studies[b]
            t0 = time.perf_counter()
            study.tell(open_q[b].id, 0.5)
            open_q[b] = study.ask()
            live[b].append(time.perf_counter() - t0)
        for b in urls if r % 2 else list(urls)[::-1]:
            t0 = time.perf_counter()
            s = load_study("speed", storage=urls[b])
            s.tell(s.ask().id, 0.5)
            s.ask()
            fresh[b].append(time.perf_counter() - t0)
            studies[b].refresh()
            open_q[b] = studies[b].ask()
    return {
        b: {"live": statistics.median(live[b]), "fresh": statistics.median(fresh[b])} for b in urls
    }


def _server_cpu(data_dir: str | None) -> dict[int, float]:
    """CPU seconds (user + system) of the PostgreSQL server's processes, by pid (Linux /proc)."""
    if data_dir is None or not os.path.isdir("/proc"):
        return {}
    with open(os.path.join(data_dir, "postmaster.pid")) as fh:
        postmaster = int(fh.readline())
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(d) == postmaster or int(fields[1]) == postmaster:
            out[int(d)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def throughput(
    url: str, writers: int, per_study: int, seconds: float, tag: str, data_dir: str | None = None
) -> tuple[float, float]:
    """Stored answers per second of ``writers`` processes, ``per_study`` on each study, and the
    CPU seconds per stored answer (the writers' and, given its ``data_dir``, the server's)."""
    names = [f"{tag}{i}" for i in range((writers + per_study - 1) // per_study)]
    for n in names:
        create_study(n, "toy-random", SPACE, family="levelset", storage=url, seed=0)
    ctx = mp.get_context("fork")
    results = ctx.Queue()
    done = ctx.Event()
    start = time.time() + 1.0  # every writer has loaded its study before the clock starts
    procs = [
        ctx.Process(
            target=_timed_writer,
            args=(url, names[w // per_study], start, seconds, results, done),
        )
        for w in range(writers)
    ]
    for p in procs:
        p.start()
    time.sleep(max(0.0, start - time.time()))
    before = _server_cpu(data_dir)
    counts = [results.get(timeout=seconds + 120) for _ in procs]
    after = _server_cpu(data_dir)  # the writers' sessions are still open: nothing is lost
    done.set()
    for p in procs:
        p.join(30)
    total = sum(n for n, _ in counts)
    cpu = sum(c for _, c in counts) + sum(v - before.get(k, 0.0) for k, v in after.items())
    return total / seconds, cpu / max(total, 1)


def _timed_writer(
    url: str, name: str, start: float, seconds: float, results: object, done: object
) -> None:
    import resource

    study = load_study(name, storage=url)
    study.ask()
    time.sleep(max(0.0, start - time.time()))
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    n = 0
    while time.time() < start + seconds:
        q = study.ask()
        try:
            study.tell(q.id, 0.5)
            n += 1
        except QueryStateError:
            continue
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    results.put((n, cpu))  # type: ignore[attr-defined]
    done.wait(60)  # type: ignore[attr-defined]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--answers", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=31)
    ap.add_argument("--method", default="toy-random")
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--pg", default=None, help="a PostgreSQL URL of an empty database")
    args = ap.parse_args()

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from pg_server import benchmark_database

    database = contextlib.ExitStack()
    pg_url, server = database.enter_context(benchmark_database(args.pg, "bench", durable=True))
    tmp = tempfile.mkdtemp(prefix="boloop-bench-")
    try:
        sqlite_url = f"sqlite:///{os.path.join(tmp, 'speed.db')}"
        print(f"load: {os.getloadavg()[0]:.2f} (1 min average), {os.cpu_count()} cores")
        res = step_times(
            {"sqlite": sqlite_url, "postgresql": pg_url}, args.method, args.answers, args.repeats
        )
        for kind, label in (("live", "tell + ask"), ("fresh", "load_study + tell + ask")):
            s, p = res["sqlite"][kind], res["postgresql"][kind]
            print(
                f"{label:<26} {args.method}, {args.answers} answers, median of {args.repeats}: "
                f"SQLite {1e3 * s:.1f} ms, PostgreSQL {1e3 * p:.1f} ms, ratio {p / s:.2f}"
            )
        print(f"load: {os.getloadavg()[0]:.2f}")
        data_dir = server.data if server is not None else None
        for per_study in (2, 1):
            for backend, url in (("postgresql", pg_url), ("sqlite", sqlite_url)):
                rate, cpu = throughput(
                    url,
                    args.writers,
                    per_study,
                    args.seconds,
                    f"w{per_study}_",
                    data_dir if backend == "postgresql" else None,
                )
                who = "writers + server" if backend == "postgresql" and data_dir else "writers"
                print(
                    f"{args.writers} writers, {per_study} per study, {args.seconds:g} s: "
                    f"{backend} {rate:.0f} answers/s; {1e3 * cpu:.1f} ms CPU per answer "
                    f"({who}), i.e. at most {2 / cpu:.0f} answers/s on 2 idle cores"
                )
        print(f"load: {os.getloadavg()[0]:.2f}")
    finally:
        database.close()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
