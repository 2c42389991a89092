"""Study speed and size (issue 8): ``load_study`` + ``ask`` on a study with N answered queries,
and the size of the log of a 1,000-answer study.

For each family's main method (and the toy-random policy) on the family's toy problem: answer
``--answers`` queries through a study (answers from the problem's oracle), then time
``load_study(name) + ask()`` with the default snapshot (median of ``--repeats``, after one
warm-up load that pays the imports) and once with ``full_replay=True`` (every event replayed
through a fresh policy: minutes for methods that refit hyperparameters at every answer). Size: bytes of the ``boloop_events`` table (the log; from SQLite's ``dbstat``) and
of the whole file (log + snapshot + indexes) after ``--log-answers`` toy-random answers, and for
the main method after the N answers above.

Run:  OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/study_speed.py [--answers 300]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from boloop.algorithms import list_methods  # noqa: E402
from boloop.problems import get  # noqa: E402
from boloop.simulate import oracle_rng  # noqa: E402
from boloop.study import create_study, load_study  # noqa: E402

CASES = [
    ("levelset/toy", "randomized-straddle", {}),
    ("preference/toy", "mr-lpf", {"horizon": 2000}),
    ("safe/toy", "m-safeopt", {}),
    ("expert/toy", "cobol", {}),
]


def _fill(url: str, name: str, problem_id: str, method: str, n: int, options: dict) -> float:
    problem = get(problem_id)
    rng = oracle_rng(0)
    study = create_study(name, method, problem=problem_id, storage=url, seed=0, **options)
    t0 = time.perf_counter()
    for _ in range(n):
        q = study.ask()
        study.tell(q.id, problem.answer(q.query, rng))
    return time.perf_counter() - t0


def _load_ask(url: str, name: str, repeats: int, full: bool) -> float:
    if not full:
        load_study(name, storage=url).ask()  # warm-up (imports, engine)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        load_study(name, storage=url, full_replay=full).ask()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _sizes(path: str) -> tuple[int, int]:
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    try:
        log = con.execute(
            "SELECT SUM(pgsize) FROM dbstat WHERE name IN ('boloop_events', "
            "'sqlite_autoindex_boloop_events_1')"
        ).fetchone()[0]
    except sqlite3.OperationalError:  # SQLite built without dbstat
        log = None
    con.close()
    return (log or -1), os.path.getsize(path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--answers", type=int, default=300)
    ap.add_argument("--log-answers", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", default=None, help="only these families (comma-separated)")
    args = ap.parse_args()
    registered = {(e.family, e.id) for e in list_methods()}
    tmp = tempfile.mkdtemp(prefix="boloop-study-speed-")
    print(f"answers={args.answers} repeats={args.repeats} (medians; machine shared, see caveat)")
    print(
        "| family | method | fill s | load+ask s (snapshot) | load+ask s (full replay) "
        "| log KB | file KB |"
    )
    print("|---|---|---|---|---|---|---|")
    for problem_id, method, options in CASES:
        family = problem_id.split("/")[0]
        if args.only and family not in args.only.split(","):
            continue
        for m, opts in ((method, options), ("toy-random", {})):
            if (family, m) not in registered:
                print(f"| {family} | {m} | not registered | | | | |")
                continue
            path = os.path.join(tmp, f"{family}-{m}.db")
            url = f"sqlite:///{path}"
            fill = _fill(url, "s", problem_id, m, args.answers, opts)
            snap = _load_ask(url, "s", args.repeats, full=False)
            full = _load_ask(url, "s", 1, full=True)  # once: minutes for methods that refit
            log, size = _sizes(path)
            print(
                f"| {family} | {m} | {fill:.1f} | {snap:.3f} | {full:.3f} | {log / 1024:.0f} "
                f"| {size / 1024:.0f} |",
                flush=True,
            )
    print()
    print(f"log of a {args.log_answers}-answer study (toy-random, toy problem of each family):")
    for problem_id, _, _ in CASES:
        family = problem_id.split("/")[0]
        if args.only and family not in args.only.split(","):
            continue
        path = os.path.join(tmp, f"{family}-log.db")
        _fill(f"sqlite:///{path}", "s", problem_id, "toy-random", args.log_answers, {})
        log, size = _sizes(path)
        print(f"  {family}: log {log / 2**20:.3f} MB, file {size / 2**20:.3f} MB", flush=True)


if __name__ == "__main__":
    main()
