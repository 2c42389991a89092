"""What finding a study's continuations costs ("continued as NEW", ``Study.continued_as``).

A SQLite storage of ``--studies`` studies (default 60) of ``--answers`` answers each (default
150: 301 events), made fast by importing copies of one study's log; the first study is
continued twice: once as this boloop records it (the old study's name and creation time), once
as an earlier boloop did (the storage's URL text, no time). Measured, as medians over
``--repeats``:

1. ``continued_as`` of a freshly loaded study, what every ``boloop study status`` and every
   page render pays (the load itself excluded), for a study continued and one that is not:
   the first call of a process (a new process each repeat, as every ``boloop study status``)
   and the later ones of one process (``boloop serve``, a notebook);
2. ``Study.status()`` of a freshly loaded study (the policy snapshot already stored);
3. ``boloop serve``'s state poll of an open page (``GET /studies/NAME/state?since=V``): steady,
   right after another study was created (the storage's list of studies changed), and with
   ``since`` one event behind (the page is stale: the poll looks for answers an undo withdrew).

Run:  OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/continuations_speed.py
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

from boloop.study import create_study, load_study  # noqa: E402
from boloop.study.log import now_iso  # noqa: E402
from boloop.study.storage import open_storage  # noqa: E402

SPACE = {"parameters": [{"name": "temperature", "low": 20.0, "high": 80.0}], "threshold": 0.5}


def build(url: str, studies: int, answers: int) -> None:
    """``studies`` studies of ``answers`` answers, and two continuations of ``s00``."""
    first = create_study("s00", "toy-random", SPACE, family="levelset", storage=url, seed=0)
    for k in range(answers):
        q = first.ask()
        first.tell(q.id, 0.001 * k)
    store = open_storage(url)
    events = store.events(store.study_id("s00"))
    for i in range(1, studies):
        created = now_iso()
        head = dataclasses.replace(events[0], created_at=created)
        store.import_study(f"s{i:02d}", created, [head, *events[1:]])
    create_study("s00-new", from_study="s00", storage=url)
    # s00-new again, recorded as a boloop before the identity record wrote it
    new = store.events(store.study_id("s00-new"))
    record = {k: v for k, v in new[0].payload["from_study"].items() if k != "created_at"}
    created = now_iso()
    head = dataclasses.replace(
        new[0], payload={**new[0].payload, "from_study": record}, created_at=created
    )
    store.import_study("s00-then", created, [head, *new[1:]])
    # and as stored through another spelling of the storage: only its carried answers link it
    record["storage"] = "sqlite:////elsewhere/lab.db"
    created = now_iso()
    head = dataclasses.replace(
        new[0], payload={**new[0].payload, "from_study": record}, created_at=created
    )
    store.import_study("s00-elsewhere", created, [head, *new[1:]])
    for name in ("s05", "s00"):  # a policy snapshot, as after any answer
        load_study(name, storage=url).save_snapshot()


def first_call(url: str, name: str) -> float:
    """Seconds of ``continued_as`` of a study loaded in a new process, its first call there."""
    code = (
        "import sys, time\n"
        "from boloop.study import load_study\n"
        "study = load_study(sys.argv[2], storage=sys.argv[1])\n"
        "t = time.perf_counter(); study.continued_as(); print(time.perf_counter() - t)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, url, name], capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip())


def median_ms(times: list[float]) -> str:
    return f"{1000 * statistics.median(times):8.2f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--studies", type=int, default=60)
    ap.add_argument("--answers", type=int, default=150)
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/lab.db"
        build(url, args.studies, args.answers)
        n_events = len(open_storage(url).events(open_storage(url).study_id("s05")))
        print(f"{args.studies} studies of {n_events} events, SQLite, {args.repeats} repeats")
        for name in ("s00", "s05"):
            cold = [first_call(url, name) for _ in range(args.repeats)]
            print(f"continued_as, first call of a process, {name}:        {median_ms(cold)}")
            took = []
            for _ in range(args.repeats):
                study = load_study(name, storage=url)
                t = time.perf_counter()
                said = study.continued_as()
                took.append(time.perf_counter() - t)
            print(f"continued_as, fresh load, {name} -> {said}: {median_ms(took)}")
        took = []
        for _ in range(args.repeats):
            study = load_study("s05", storage=url)
            t = time.perf_counter()
            study.status()
            took.append(time.perf_counter() - t)
        print(f"status(), fresh load, s05:                  {median_ms(took)}")
        poll(url, args.repeats)


def poll(url: str, repeats: int) -> None:
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    client = TestClient(create_app(url, None))
    assert client.get("/studies/s05").status_code == 200
    version = client.get("/studies/s05/state").json()["version"]
    steady, created, stale = [], [], []
    for i in range(repeats):
        t = time.perf_counter()
        client.get(f"/studies/s05/state?since={version}")
        steady.append(time.perf_counter() - t)
        create_study(f"new-{i}", "toy-random", SPACE, family="levelset", storage=url, seed=i)
        t = time.perf_counter()
        client.get(f"/studies/s05/state?since={version}")
        created.append(time.perf_counter() - t)
        t = time.perf_counter()
        client.get(f"/studies/s05/state?since={version - 1}")
        stale.append(time.perf_counter() - t)
    print(f"state poll, steady:                         {median_ms(steady)}")
    print(f"state poll, after a study was created:      {median_ms(created)}")
    print(f"state poll, page one event behind (since):  {median_ms(stale)}")


if __name__ == "__main__":
    main()
