"""What listing the studies of a storage costs (``list_studies``: ``boloop study list`` and the
web index), as the storage fills with long studies.

A SQLite storage of ``--studies`` studies (default 200) of ``--answers`` answers each (default
200: 401 events), made fast by importing copies of one study's log; among them a study with an
undo (its answer withdrawn, the query open again) and two continuations of the first study (one
recorded as this boloop records it, one as an earlier boloop did: the storage's URL text, no
time). Measured, as medians over ``--repeats``:

1. ``list_studies`` through Python's sqlite3 (the quick path of a plain ``sqlite:///`` URL, what
   ``boloop study list`` and ``boloop serve`` use);
2. the same through SQLAlchemy (``BOLOOP_SQLITE_QUICK=0``, as a SQLite URL with options);
3. the first call of a new process (``boloop study list`` pays it once).

Run:  OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/list_studies_speed.py
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from boloop.study import create_study, list_studies, sqlite_log  # noqa: E402
from boloop.study.log import now_iso  # noqa: E402
from boloop.study.storage import open_storage  # noqa: E402

SPACE = {"parameters": [{"name": "temperature", "low": 20.0, "high": 80.0}], "threshold": 0.5}


def build(url: str, studies: int, answers: int) -> None:
    """``studies`` studies of ``answers`` answers (one with an answer undone), and two
    continuations of ``s000``."""
    first = create_study("s000", "toy-random", SPACE, family="levelset", storage=url, seed=0)
    for k in range(answers):
        q = first.ask()
        first.tell(q.id, 0.001 * k)
    store = open_storage(url)
    events = store.events(store.study_id("s000"))
    for i in range(1, studies - 3):
        created = now_iso()
        head = dataclasses.replace(events[0], created_at=created)
        store.import_study(f"s{i:03d}", created, [head, *events[1:]])
    undone = create_study("undone", "toy-random", SPACE, family="levelset", storage=url, seed=1)
    for k in range(answers):
        undone.tell(undone.ask().id, 0.001 * k)
    undone.undo()
    create_study("s000-new", from_study="s000", storage=url)
    new = store.events(store.study_id("s000-new"))
    record = {k: v for k, v in new[0].payload["from_study"].items() if k != "created_at"}
    created = now_iso()
    head = dataclasses.replace(
        new[0], payload={**new[0].payload, "from_study": record}, created_at=created
    )
    store.import_study("s000-then", created, [head, *new[1:]])


def first_call(url: str) -> float:
    """Seconds of ``list_studies`` in a new process, its first call there (imports excluded)."""
    code = (
        "import sys, time\n"
        "from boloop.study import list_studies\n"
        "t = time.perf_counter(); list_studies(sys.argv[1]); print(time.perf_counter() - t)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, url], capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip())


def median_ms(times: list[float]) -> str:
    return f"{1000 * statistics.median(times):8.1f} ms"


def timed(url: str, repeats: int) -> list[float]:
    took = []
    for _ in range(repeats):
        t = time.perf_counter()
        list_studies(url)
        took.append(time.perf_counter() - t)
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--studies", type=int, default=200)
    ap.add_argument("--answers", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/lab.db"
        build(url, args.studies, args.answers)
        store = open_storage(url)
        names = store.study_names()
        total = sum(len(store.events(store.study_id(n))) for n, _ in names)
        rows = list_studies(url)
        assert len(rows) == len(names) and not any(r["unreadable"] for r in rows)
        print(f"{len(names)} studies, {total} events, SQLite, {args.repeats} repeats")
        print(f"list_studies, Python's sqlite3:    {median_ms(timed(url, args.repeats))}")
        sqlite_log.ENABLED = False
        try:
            print(f"list_studies, SQLAlchemy:          {median_ms(timed(url, args.repeats))}")
        finally:
            sqlite_log.ENABLED = True
        cold = [first_call(url) for _ in range(args.repeats)]
        print(f"list_studies, first call of a process: {median_ms(cold)}")


if __name__ == "__main__":
    main()
