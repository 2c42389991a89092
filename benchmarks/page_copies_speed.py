"""A study page's and a status's cost on the largest preference study: 1,500 options, ~30 answers.

The page's recommendation, warnings and model picture are read from a deep copy of the live
policy (``Study.readout``), never the live one (lazy fits may draw random numbers). A copy of a
1,500-option preference policy is large (m x m matrices), so the copies per render matter. This
measures, in CPU time (medians), with one BLAS thread (user + system, ``getrusage``):

* ``page, changed``: a page render right after an answer and the next query (given and asked
  through the JSON API, untimed: the method's step is not the page's): the state is new, so the
  page must read a new copy;
* ``page, unchanged``: the same page rendered again (a reload, a second visitor);
* ``status, changed`` / ``status, unchanged``: ``Study.status()`` in process after an answer /
  again with nothing new;
* ``cli status``: ``boloop study status NAME`` as a fresh process (CPU of the child: Python
  start-up, loading the study from its snapshot, the status), after a snapshot was stored.

Each is also given as user time alone: the system time is mostly the page faults of a copy's
fresh memory, and on a shared machine it varies from nothing to several hundred ms for the same
render (reclaim and compaction under other processes' memory use), whatever the code; read the
user time for the code's own work.

``--src A B``: the same measurements with two (or more) source trees of boloop
(``PYTHONPATH=A/src``...), each in its own process on its own copy of the study, the trees taking
turns for ``--rounds`` rounds: a before/after comparison in one run on the same machine.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/page_copies_speed.py [--answers 30]
        [--repeats 7] [--rounds 2] [--src /path/to/before /path/to/after] [--db built.db]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NAME = "pantry"
OPTIONS = 1500
BLAS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def space() -> dict:
    """1,500 options of three ingredients (a fixed random table)."""
    import numpy as np

    rows = np.random.default_rng(0).random((OPTIONS, 3)).round(6).tolist()
    return {
        "candidates": {
            "columns": ["sugar", "flour", "butter"],
            "rows": rows,
            "labels": [f"recipe {i}" for i in range(OPTIONS)],
        }
    }


def answer(a: dict[str, float], b: dict[str, float]) -> str:
    """A person who prefers sugar, dislikes flour and likes some butter: "a" or "b"."""

    def u(p: dict[str, float]) -> float:
        return p["sugar"] - 0.5 * p["flour"] + 0.3 * p["butter"]

    return "a" if u(a) >= u(b) else "b"


def build(url: str, answers: int) -> None:
    from boloop.study import create_study

    study = create_study(NAME, None, space(), storage=url, seed=1, family="preference")
    for _ in range(answers):
        q = study.ask()
        study.tell(q.id, answer(q.a, q.b))


def _cpu(fn) -> tuple[float, float]:
    """CPU time of ``fn()`` in this process: (user + system, user). System time is mostly page
    faults of fresh memory (a copy of a large policy), which vary with the machine's load."""
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    fn()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    user = r1.ru_utime - r0.ru_utime
    return user + r1.ru_stime - r0.ru_stime, user


def _add(out: dict[str, list[float]], key: str, times: tuple[float, float]) -> None:
    out.setdefault(key, []).append(times[0])
    out.setdefault(key + "_user", []).append(times[1])


def worker(db: str, repeats: int) -> dict[str, list[float]]:
    """The measurements on the study in ``db`` with the boloop on ``sys.path``."""
    import pickle
    import warnings

    warnings.filterwarnings("ignore")
    from fastapi.testclient import TestClient

    from boloop.study import load_study
    from boloop.web import create_app

    url = f"sqlite:///{db}"
    client = TestClient(create_app(url, poll_seconds=0))
    page = f"/studies/{NAME}"
    assert client.get(page).status_code == 200  # loads (replays) the study, asks, renders
    out: dict[str, list[float]] = {}
    for _ in range(repeats):
        _add(out, "page_unchanged", _cpu(lambda: client.get(page)))
    for _ in range(repeats):
        q = client.post(f"/api/studies/{NAME}/ask").json()
        a = answer(q["a"], q["b"])
        r = client.post(f"/api/studies/{NAME}/tell", json={"query_id": q["id"], "answer": a})
        assert r.status_code == 200, r.text
        client.post(f"/api/studies/{NAME}/ask")  # the next query (the method's step, untimed)
        _add(out, "page_changed", _cpu(lambda: client.get(page)))
    study = load_study(NAME, storage=url)
    study.ask()
    study.save_snapshot()  # the command line loads from it, as it would in use
    out["policy_mb"] = [len(pickle.dumps(study.policy)) / 2**20]
    for _ in range(repeats):
        q = study.ask()
        study.tell(q.id, answer(q.a, q.b))
        study.ask()
        _add(out, "status_changed", _cpu(study.status))
        _add(out, "status_unchanged", _cpu(study.status))
    study.save_snapshot()
    out["cli_status"] = []
    boloop = shutil.which("boloop", path=os.path.dirname(sys.executable)) or "boloop"
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [boloop, "study", "status", NAME, "--storage", url], check=True, capture_output=True
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out["cli_status"].append(
            after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        )
    out["answers"] = [study.n_answered]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answers", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--src", nargs="+", default=None, help="source trees to compare")
    ap.add_argument("--db", default=None, help="a study built by an earlier run (SQLite file)")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.repeats)))
        return
    tmp = Path(tempfile.mkdtemp(prefix="boloop-page-copies-"))
    built = tmp / "built.db"
    if args.db:
        shutil.copy(args.db, built)
    else:
        t0 = time.perf_counter()
        build(f"sqlite:///{built}", args.answers)
        print(f"built a {OPTIONS}-option preference study with {args.answers} answers "
              f"in {time.perf_counter() - t0:.0f} s (kept: {built})")
    trees = args.src or [None]
    results: dict[str, dict[str, list[float]]] = {}
    for rnd in range(args.rounds):
        for i, tree in enumerate(trees):
            db = tmp / f"r{rnd}-t{i}.db"
            shutil.copy(built, db)
            env = dict(os.environ, **BLAS)
            if tree is not None:
                env["PYTHONPATH"] = os.path.join(os.path.abspath(tree), "src")
            cmd = [sys.executable, __file__, "--worker", str(db), "--repeats", str(args.repeats)]
            run = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if run.returncode:
                sys.exit(f"{tree or 'this tree'} failed:\n{run.stderr[-3000:]}")
            got = json.loads(run.stdout.strip().splitlines()[-1])
            key = tree or "this tree"
            for k, v in got.items():
                results.setdefault(key, {}).setdefault(k, []).extend(v)
    rows = [
        ("page_changed", "page after an answer (ms)"),
        ("page_changed_user", "  user time only (ms)"),
        ("page_unchanged", "page again, unchanged (ms)"),
        ("page_unchanged_user", "  user time only (ms)"),
        ("status_changed", "Study.status() after an answer (ms)"),
        ("status_changed_user", "  user time only (ms)"),
        ("status_unchanged", "Study.status() again (ms)"),
        ("status_unchanged_user", "  user time only (ms)"),
        ("cli_status", "boloop study status, child CPU (ms)"),
    ]
    width = max(len(k) for k in results)
    first = next(iter(results.values()))
    print(f"policy pickled: {statistics.median(first['policy_mb']):.1f} MB; answers at the end: "
          f"{int(max(first['answers']))}; CPU-time medians over {args.repeats} x {args.rounds}")
    print(f"{'':<38}" + "".join(f"{k[-width:]:>{max(width, 12) + 2}}" for k in results))
    for key, label in rows:
        print(f"{label:<38}" + "".join(
            f"{1e3 * statistics.median(r[key]):>{max(width, 12) + 2}.1f}" for r in results.values()
        ))


if __name__ == "__main__":
    main()
