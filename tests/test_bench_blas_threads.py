"""The process pool of ``boloop bench run`` runs each worker with one BLAS thread (its workers run
at once, one per core: with the BLAS default of one thread per core each they competed for the
cores, and a 72-run sweep on 2 cores took 37-52 s instead of 12.6 s), forked or spawned, from
the command and from Python; a BLAS thread variable the user set is kept; the rows are those of
one thread.

Each sweep runs in a new Python process whose environment has no BLAS thread variable (the test
process itself usually runs with ``OMP_NUM_THREADS=1``, which a forked worker would inherit), and
a problem of the user's own reports, from inside the worker that runs it, what
``threadpoolctl.threadpool_info()`` says there.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

from boloop._blas import BLAS_THREAD_VARIABLES as BLAS_VARIABLES  # noqa: E402

#: a level-set problem whose oracle writes, in the worker process that runs it, the thread
#: counts of the BLAS libraries loaded there to $BLAS_REPORT/<pid>.json
REPORTING_PROBLEM = """
import json, os
from threadpoolctl import threadpool_info
from boloop.problems.levelset import sinusoidal

def make():
    problem = sinusoidal()
    observe = problem.observe

    def reporting_observe(query, rng):
        info = [(p["internal_api"], p["num_threads"]) for p in threadpool_info()
                if p["user_api"] == "blas"]
        path = os.path.join(os.environ["BLAS_REPORT"], f"{os.getpid()}.json")
        with open(path, "w") as fh:
            json.dump({"pid": os.getpid(), "blas": info}, fh)
        return observe(query, rng)

    problem.observe = reporting_observe
    return problem
"""

#: a sweep from Python with the given start method, after numpy was imported here (with the
#: BLAS default: one thread per core); prints this process's BLAS thread counts
PYTHON_SWEEP = textwrap.dedent(
    """
    import json, multiprocessing, os, sys
    import numpy, scipy.linalg
    from threadpoolctl import threadpool_info
    from boloop.bench import run_sweep

    if __name__ == "__main__":
        multiprocessing.set_start_method(sys.argv[1])
        report = run_sweep([sys.argv[2]], ["randomized-straddle"], "0-3", 6, sys.argv[3], jobs=2)
        assert len(report.completed) == 4 and not report.failed, report.failed
        threads = sorted({p["num_threads"] for p in threadpool_info()})
        print(json.dumps({"pid": os.getpid(), "threads": threads}))
    """
)


def _env(report: Path, **variables: str) -> dict[str, str]:
    """This environment without BLAS thread variables but ``variables``; the problem's
    reports go to the folder ``report``."""
    env = {k: v for k, v in os.environ.items() if k not in BLAS_VARIABLES}
    env.update(variables)
    report.mkdir(exist_ok=True)
    env["BLAS_REPORT"] = str(report)
    return env


def _worker_reports(tmp_path: Path) -> list[dict]:
    """What each worker process that ran a run reported (one per pid)."""
    reports = [json.loads(p.read_text()) for p in (tmp_path / "report").glob("*.json")]
    assert reports, "no worker reported"
    return reports


def _rows(path: Path) -> list[dict[str, str]]:
    with (path / "results.csv").open(newline="") as fh:
        return [
            {k: v for k, v in r.items() if not k.endswith("_seconds")} for r in csv.DictReader(fh)
        ]


def _problem(tmp_path: Path) -> str:
    src = tmp_path / "reporting.py"
    src.write_text(REPORTING_PROBLEM)
    return f"{src}:make"


def _one_thread_rows(tmp_path: Path, problem: str) -> list[dict[str, str]]:
    """The sweep's rows computed in one process with every BLAS variable 1 (the reference)."""
    argv = [sys.executable, "-m", "boloop.cli", "bench", "run", "--problem", problem, "--method"]
    argv += ["randomized-straddle", "--seeds", "0-3", "--budget", "6", "--jobs", "1", "--quiet"]
    out = tmp_path / "one-thread"
    env = _env(tmp_path / "one-thread-report", **dict.fromkeys(BLAS_VARIABLES, "1"))
    done = subprocess.run([*argv, "--out", str(out)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return _rows(out)


needs_two_cores = pytest.mark.skipif(
    (os.cpu_count() or 1) < 2, reason="one core: the BLAS default is one thread already"
)


@needs_two_cores
@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_python_sweep_workers_run_one_blas_thread(tmp_path: Path, start_method: str) -> None:
    """``run_sweep(..., jobs=2)`` from a Python process whose numpy runs one thread per core:
    the workers, forked (with that numpy) or spawned, run one; the caller keeps its count."""
    problem = _problem(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", PYTHON_SWEEP, start_method, problem, str(tmp_path / "pool")],
        env=_env(tmp_path / "report"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    caller = json.loads(done.stdout.strip().splitlines()[-1])
    assert max(caller["threads"]) > 1  # the caller's own BLAS is left as it was
    reports = _worker_reports(tmp_path)
    assert caller["pid"] not in {r["pid"] for r in reports}  # the workers ran the runs
    for r in reports:
        assert r["blas"] and {n for _, n in r["blas"]} == {1}, reports
    assert _rows(tmp_path / "pool") == _one_thread_rows(tmp_path, problem)


@needs_two_cores
def test_cli_pool_workers_run_one_blas_thread(tmp_path: Path) -> None:
    """``boloop bench run --jobs 2`` with no thread variable in the environment."""
    problem = _problem(tmp_path)
    argv = [sys.executable, "-m", "boloop.cli", "bench", "run", "--problem", problem, "--method"]
    argv += ["randomized-straddle", "--seeds", "0-3", "--budget", "6", "--jobs", "2", "--quiet"]
    done = subprocess.run(
        [*argv, "--out", str(tmp_path / "pool")],
        env=_env(tmp_path / "report"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    reports = _worker_reports(tmp_path)
    assert len(reports) == 2  # two worker processes ran the four runs
    for r in reports:
        assert r["blas"] and {n for _, n in r["blas"]} == {1}, reports
    assert _rows(tmp_path / "pool") == _one_thread_rows(tmp_path, problem)


@needs_two_cores
def test_a_thread_variable_the_user_set_is_kept(tmp_path: Path) -> None:
    """``OPENBLAS_NUM_THREADS=2 boloop bench run --jobs 2``: the workers' OpenBLAS runs two
    threads, as asked (the pool limits nothing when the user set a variable)."""
    problem = _problem(tmp_path)
    argv = [sys.executable, "-m", "boloop.cli", "bench", "run", "--problem", problem, "--method"]
    argv += ["randomized-straddle", "--seeds", "0-1", "--budget", "4", "--jobs", "2", "--quiet"]
    done = subprocess.run(
        [*argv, "--out", str(tmp_path / "pool")],
        env=_env(tmp_path / "report", OPENBLAS_NUM_THREADS="2"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for r in _worker_reports(tmp_path):
        assert {n for api, n in r["blas"] if api == "openblas"} == {2}, r
