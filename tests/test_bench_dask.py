"""boloop bench run --executor dask on a real distributed.LocalCluster (no mocks): the rows equal the
process pool's for the same seeds, a worker killed mid-sweep loses no run, an interrupted client
resumes from results.csv, the progress bar moves with the steps, and the errors are clear (bad
scheduler address, missing extra, --scheduler without --executor dask) with nothing written.

One 2-worker LocalCluster serves the module (``cluster``); one test starts its own through the CLI.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from boloop.bench import read_results, run_sweep
from boloop.bench.dask_executor import plan_chunks, start_local_cluster
from boloop.cli import main
from boloop.errors import InvalidInputError
from progress_checks import check_whole_counts_and_no_early_estimate

distributed = pytest.importorskip("distributed", reason="the 'dask' extra is not installed")

pytestmark = pytest.mark.xdist_group("dask")  # one cluster per module, on one xdist worker

TOY_LS = "levelset/toy"

#: a level-set toy whose oracle sleeps: runs last long enough to be caught in progress
_SLOW_PROBLEM = """
import time
from boloop.problems.toy import ToyLevelSet

class Slow(ToyLevelSet):
    def __init__(self, sleep, crash):
        super().__init__()
        self.sleep, self.crash = sleep, crash

    def observe(self, query, rng):
        if self.crash:
            raise RuntimeError("boom in the oracle")
        time.sleep(self.sleep)
        return super().observe(query, rng)

def make(sleep=0.03, crash=0):
    return Slow(sleep, crash)
"""


def _rows(path: Path) -> list[dict[str, str]]:
    with (path / "results.csv").open(newline="") as fh:
        return [
            {k: v for k, v in r.items() if not k.endswith("_seconds")} for r in csv.DictReader(fh)
        ]


@pytest.fixture(scope="module")
def cluster():  # type: ignore[no-untyped-def]
    with start_local_cluster(2) as lc, distributed.Client(lc, set_as_default=False) as client:
        yield lc.scheduler_address, client


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> str:
    src = tmp_path_factory.mktemp("problems") / "slow.py"
    src.write_text(_SLOW_PROBLEM)
    return f"{src}:make"


def _wait_idle(client, seconds: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    """Until no task is processing on any worker and both workers are up (or fail)."""
    client.wait_for_workers(2, timeout=seconds)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(client.processing().values()):
            return
        time.sleep(0.05)
    raise AssertionError(f"tasks still processing: {client.processing()}")


# -- the same rows as the process pool --------------------------------------------------------------
def test_cli_on_a_local_cluster_gives_the_process_pool_rows(tmp_path: Path) -> None:
    """Without --scheduler a LocalCluster of --jobs workers is started (and closed) by the sweep."""
    argv = ["bench", "run", "--problem", TOY_LS, "--method", "toy-random", "randomized-straddle"]
    argv += ["--seeds", "0-1", "--budget", "5", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "dask"), "--executor", "dask", "--jobs", "2"]) == 0
    assert main([*argv, "--out", str(tmp_path / "pool"), "--jobs", "2"]) == 0
    rows = _rows(tmp_path / "dask")
    assert len(rows) == 2 * 2 * 5
    assert rows == _rows(tmp_path / "pool")


def test_sweep_on_a_scheduler_gives_the_process_pool_rows_and_moves_the_bar(
    tmp_path: Path, cluster, slow: str
) -> None:
    import io

    class TTY(io.StringIO):
        def isatty(self) -> bool:
            return True

    address, _ = cluster
    bar = TTY()
    problems = [TOY_LS, "expert/toy", f"{slow}?sleep=0.02"]
    report = run_sweep(
        problems, ["toy-random"], "0-1", 8, tmp_path / "dask",
        executor="dask", scheduler=address, progress=bar,
    )  # fmt: skip
    assert len(report.completed) == 6 and not report.failed
    run_sweep(problems, ["toy-random"], "0-1", 8, tmp_path / "pool", jobs=2)
    assert _rows(tmp_path / "dask") == _rows(tmp_path / "pool")
    # the bar moved with the steps of runs in progress, the count is of whole runs (it read
    # "1.8/72 runs"), no estimate before a run finished (the first was "~6548s left"), full at
    # the end
    found = check_whole_counts_and_no_early_estimate(bar.getvalue(), 6)
    assert any(f.ahead_of_count for f in found)
    assert any(f.left is not None for f in found)
    assert "[" + "#" * 30 + "] 6/6 runs" in bar.getvalue()


def test_failed_runs_are_reported_and_the_others_kept(tmp_path: Path, cluster, slow: str) -> None:
    address, _ = cluster
    crash = f"{slow}?sleep=0&crash=1"
    report = run_sweep(
        [TOY_LS, crash], ["toy-random"], "2", 4, tmp_path, executor="dask", scheduler=address
    )
    assert sorted(k for k, _ in report.failed) == [
        (crash, "toy-random", 0),
        (crash, "toy-random", 1),
    ]
    assert all("boom in the oracle" in msg for _, msg in report.failed)
    assert {r["problem"] for r in _rows(tmp_path)} == {TOY_LS} and len(_rows(tmp_path)) == 8


#: a method of the user's own (docs/methods.md), which the cluster's workers do not have
_OWN_METHOD = """
from boloop.algorithms import register_method
from boloop.algorithms.toy import RandomEvaluate

@register_method("zz-dask-own", "levelset", "test only: a method in a user's file")
def make_own(spec, seed, threshold=None):
    return RandomEvaluate(spec.space, seed, threshold=spec.settings["threshold"], sets=True)
"""


def test_a_method_from_a_file_runs_on_the_cluster(tmp_path: Path, cluster) -> None:
    """``--method file.py:factory``: the workers (forked from a server that preloaded boloop
    only) import the file by its absolute path; the rows are the process pool's."""
    address, _ = cluster
    src = tmp_path / "own.py"
    src.write_text(_OWN_METHOD)
    methods = [f"{src}:make_own", "toy-random"]
    report = run_sweep([TOY_LS], methods, "0-1", 4, tmp_path / "dask", executor="dask",
                       scheduler=address)  # fmt: skip
    assert not report.failed, report.failed
    run_sweep([TOY_LS], methods, "0-1", 4, tmp_path / "pool", jobs=2)
    rows = _rows(tmp_path / "dask")
    assert {r["method"] for r in rows} == {"zz-dask-own", "toy-random"} and len(rows) == 16
    assert rows == _rows(tmp_path / "pool")
    # the workers name the file they imported by its sha256, as the parent does (its edit is seen)
    sha = hashlib.sha256(src.read_bytes()).hexdigest()
    assert {(r["method"], r["method_file_sha256"]) for r in rows} == {
        ("zz-dask-own", sha),
        ("toy-random", ""),
    }


def test_a_method_importing_a_module_of_the_user_is_named_alike_on_the_cluster(
    tmp_path: Path, cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file imports a module of the user's own (the workers see it on their ``sys.path``, as
    the parent does): the workers record the fingerprint of the file and the module that the
    parent computes, so the next sweep keeps every run."""
    address, client = cluster
    (tmp_path / "zzdask_help.py").write_text("SEED_SHIFT = 5\n")
    src = tmp_path / "helped.py"
    src.write_text(
        _OWN_METHOD.replace("zz-dask-own", "zz-dask-helped")
        .replace("import RandomEvaluate", "import RandomEvaluate\nfrom zzdask_help import SEED_SHIFT")
        .replace("RandomEvaluate(spec.space, seed,", "RandomEvaluate(spec.space, seed + SEED_SHIFT,")
    )  # fmt: skip
    monkeypatch.syspath_prepend(str(tmp_path))
    # (a function of the workers' own: a bound method of this process's sys.path would be a copy)
    client.run(exec, f"import sys; sys.path.insert(0, {str(tmp_path)!r})")
    try:
        methods = [f"{src}:make_own"]
        report = run_sweep([TOY_LS], methods, "0-1", 3, tmp_path / "dask", executor="dask",
                           scheduler=address)  # fmt: skip
        assert not report.failed, report.failed
        again = run_sweep([TOY_LS], methods, "0-1", 3, tmp_path / "dask", executor="dask",
                          scheduler=address)  # fmt: skip
    finally:
        client.run(exec, f"import sys; sys.path.remove({str(tmp_path)!r})")
    assert len(again.skipped) == 2 and not again.completed and not again.reruns
    listing = "".join(
        f"{hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()}  {name}\n"
        for name in sorted(["helped.py", "zzdask_help.py"])
    )
    assert {r["method_file_sha256"] for r in _rows(tmp_path / "dask")} == {
        hashlib.sha256(listing.encode()).hexdigest()
    }


# -- a worker that dies -----------------------------------------------------------------------------
def test_a_worker_killed_mid_sweep_loses_no_run(tmp_path: Path, cluster, slow: str) -> None:
    """SIGKILL of a worker process that is running a run, after the first run completed: the
    scheduler runs its tasks again elsewhere (the nanny restarts the worker) and the results equal
    the process pool's."""
    address, client = cluster
    problem = f"{slow}?sleep=0.04"
    report, killed = _sweep_killing_a_busy_worker(tmp_path, cluster, problem, "6", 10)
    assert len(report.completed) == 6 and not report.failed
    assert killed[0] not in client.run(os.getpid).values()  # that process is really gone
    run_sweep([problem], ["toy-random"], "6", 10, tmp_path / "pool", jobs=2)
    assert _rows(tmp_path / "dask") == _rows(tmp_path / "pool")
    _wait_idle(client)  # the nanny brought the second worker back for the next tests


def _sweep_killing_a_busy_worker(
    tmp_path: Path, cluster, problem: str, seeds: str, budget: int
) -> tuple[Any, list[int]]:
    """A toy-random sweep into ``tmp_path / "dask"`` on the cluster whose first completed run
    SIGKILLs a worker process that is running a run; the report and the killed pid."""
    address, client = cluster
    _wait_idle(client)
    killed: list[int] = []

    def kill_a_busy_worker(key: tuple) -> None:
        if killed:
            return
        busy = [w for w, keys in client.processing().items() if keys]
        assert busy, "no worker is running a run"
        pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    report = run_sweep(
        [problem], ["toy-random"], seeds, budget, tmp_path / "dask",
        executor="dask", scheduler=address, on_complete=kill_a_busy_worker,
    )  # fmt: skip
    assert killed
    return report, killed


def test_runs_go_in_guided_chunks_that_shrink_to_single_runs() -> None:
    """Several runs per task (Dask's per-task cost paid once), large first and single runs last
    (the workers finish together), for any sweep and cluster size."""
    for n_runs in (0, 1, 5, 8, 9, 40, 120, 1000):
        for n_workers in (1, 2, 3, 16):
            sizes = plan_chunks(n_runs, n_workers)
            assert sum(sizes) == n_runs and all(s >= 1 for s in sizes)
            assert sizes == sorted(sizes, reverse=True)
            if n_runs:
                assert sizes[-1] == 1
                assert sizes[0] <= max(1, -(-n_runs // (2 * n_workers)))  # every worker gets work
            assert len(sizes) <= n_runs
    assert len(plan_chunks(120, 2)) < 40  # far fewer tasks than runs
    assert plan_chunks(8, 2) == [1] * 8


def test_a_worker_killed_inside_a_chunk_loses_no_run(tmp_path: Path, cluster, slow: str) -> None:
    """20 runs on 2 workers go in tasks of several runs: a worker SIGKILLed after the first run
    completed, while it runs a task of several runs: that task runs again elsewhere, whole."""
    assert max(plan_chunks(20, 2)) > 1
    _, client = cluster
    problem = f"{slow}?sleep=0.01"
    report, _ = _sweep_killing_a_busy_worker(tmp_path, cluster, problem, "20", 6)
    assert len(report.completed) == 20 and not report.failed
    run_sweep([problem], ["toy-random"], "20", 6, tmp_path / "pool", jobs=2)
    assert _rows(tmp_path / "dask") == _rows(tmp_path / "pool")
    _wait_idle(client)


# -- an interrupted client --------------------------------------------------------------------------
class _Interrupt(Exception):
    pass


def _interrupt_after_two_then_resume(tmp_path: Path, cluster, args: tuple) -> tuple[Any, list]:
    """A dask sweep of ``args`` into ``tmp_path / "part"`` interrupted (an exception from the
    completion callback) after two completed runs, then run again on the cluster: checks that the
    two completed runs were written before the interruption and that the pending runs were
    cancelled, not left running; the report of the resumed sweep and the two runs."""
    address, client = cluster
    done: list[tuple] = []

    def interrupt_after_two(key: tuple) -> None:
        done.append(key)
        if len(done) == 2:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        run_sweep(
            *args, tmp_path / "part", executor="dask", scheduler=address,
            on_complete=interrupt_after_two,
        )  # fmt: skip
    _, runs = read_results(tmp_path / "part")
    assert set(runs) == set(done)  # the two completed runs were written before the interruption
    _wait_idle(client)  # the pending runs were cancelled, not left running on the cluster
    report = run_sweep(*args, tmp_path / "part", executor="dask", scheduler=address)
    return report, done


def test_an_interrupted_client_cancels_its_runs_and_the_sweep_resumes(
    tmp_path: Path, cluster, slow: str
) -> None:
    problem = f"{slow}?sleep=0.02"
    args = ([problem], ["toy-random"], "6", 8)
    report, done = _interrupt_after_two_then_resume(tmp_path, cluster, args)
    assert sorted(report.skipped) == sorted(done) and len(report.completed) == 4
    run_sweep(*args, tmp_path / "full", jobs=1)
    assert _rows(tmp_path / "part") == _rows(tmp_path / "full")


def test_an_interruption_inside_a_chunk_keeps_the_written_runs_and_resumes_exactly(
    tmp_path: Path, cluster, slow: str
) -> None:
    """Interrupted while the runs of a finished task of several runs are being written: the runs
    written stay, the rest (of that task too) run again, and the table equals an uninterrupted
    one."""
    problem = f"{slow}?sleep=0.005"
    args = ([problem, TOY_LS], ["toy-random"], "10", 5)
    assert max(plan_chunks(20, 2)) > 1
    report, done = _interrupt_after_two_then_resume(tmp_path, cluster, args)
    assert sorted(report.skipped) == sorted(done) and len(report.completed) == 18
    run_sweep(*args, tmp_path / "full", jobs=1)
    assert _rows(tmp_path / "part") == _rows(tmp_path / "full")


#: a level-set toy whose oracle sleeps and, when it does, appends a line to ticking.log beside
#: this file for every observation
_TICKING_PROBLEM = """
import time
from pathlib import Path
from boloop.problems.toy import ToyLevelSet

class Ticking(ToyLevelSet):
    def __init__(self, sleep):
        super().__init__()
        self.sleep = sleep

    def observe(self, query, rng):
        if self.sleep:
            time.sleep(self.sleep)
            with open(Path(__file__).with_name("ticking.log"), "a") as fh:
                fh.write("tick\\n")
        return super().observe(query, rng)

def make(sleep=0.0):
    return Ticking(sleep)
"""


def test_an_interrupted_sweep_stops_its_runs_in_progress(tmp_path: Path, cluster) -> None:
    """A Dask task cannot be interrupted, so a run in progress went on to its end after its
    client stopped (and a closing worker waited for it): it now stops at its next step."""
    address, client = cluster
    src = tmp_path / "ticking.py"
    src.write_text(_TICKING_PROBLEM)
    ticks = tmp_path / "ticking.log"
    # two runs, one task each: the quick one ends first; the slow one lasts 400 x 0.02 s = 8 s+
    problems = [f"{src}:make", f"{src}:make?sleep=0.02"]
    _wait_idle(client)

    def interrupt(key: tuple) -> None:
        raise _Interrupt

    with pytest.raises(_Interrupt):
        run_sweep(problems, ["toy-random"], "1", 400, tmp_path / "out", executor="dask",
                  scheduler=address, on_complete=interrupt)  # fmt: skip
    time.sleep(1.0)  # the next progress check of the run (at most 0.2 s apart) has come
    before = ticks.read_text().count("tick")
    time.sleep(1.0)
    after = ticks.read_text().count("tick")
    assert before == after < 400  # stopped part-way
    _wait_idle(client)


def _process_group_gone(pgid: int, seconds: float) -> bool:
    """Whether every process of group ``pgid`` has ended within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_ctrl_c_on_a_local_cluster_sweep_prints_only_boloops_message(
    tmp_path: Path, slow: str
) -> None:
    """Ctrl-C in a terminal (SIGINT to the whole foreground process group: the command, the
    forkserver and the LocalCluster's workers) after the first runs were stored: exit 130,
    boloop's one line on stderr (no traceback of a worker, no log line of distributed), every
    process of the command ended (the cluster was closed), and the same command resumes."""
    problem = f"{slow}?sleep=0.03"
    argv = [sys.executable, "-m", "boloop.cli", "bench", "run", "--problem", problem]
    argv += ["--method", "toy-random", "--seeds", "24", "--budget", "10", "--quiet"]
    argv += ["--executor", "dask", "--jobs", "2", "--out", str(tmp_path / "out")]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    deadline = time.monotonic() + 180  # a loaded machine imports slowly
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if read_results(tmp_path / "out")[1]:
                break
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    _, runs = read_results(tmp_path / "out")
    kept = len(runs)
    assert 1 <= kept < 24
    assert err.strip().splitlines() == [
        f"boloop: interrupted; {kept} of 24 runs are kept in {tmp_path / 'out' / 'results.csv'} "
        f"({kept} finished now, 0 were there before). Run the same command again to resume: it "
        f"skips the runs in the file and runs the other {24 - kept}"
    ], err
    assert _process_group_gone(proc.pid, 20), "a process of the sweep is still running"
    again = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"{24 - kept} runs completed, {kept} skipped, 0 failed" in again.stdout


def test_a_killed_client_process_resumes(tmp_path: Path, cluster, slow: str) -> None:
    """A real `boloop bench run --executor dask --scheduler ...` killed with SIGKILL after its first
    completed run: the scheduler drops its runs and a rerun completes the sweep."""
    address, client = cluster
    problem = f"{slow}?sleep=0.03"
    argv = [sys.executable, "-m", "boloop.cli", "bench", "run", "--problem", problem]
    argv += ["--method", "toy-random", "--seeds", "6", "--budget", "10", "--quiet"]
    argv += ["--executor", "dask", "--scheduler", address, "--out", str(tmp_path / "killed")]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120  # a loaded machine imports slowly
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            _, runs = read_results(tmp_path / "killed")
            if runs:
                break
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    _, runs = read_results(tmp_path / "killed")
    assert 1 <= len(runs) < 6  # killed part-way
    _wait_idle(client)  # the runs of the dead client are not left running
    report = run_sweep(
        [problem], ["toy-random"], "6", 10, tmp_path / "killed", executor="dask", scheduler=address
    )
    assert set(report.skipped) == set(runs) and len(report.completed) == 6 - len(runs)
    run_sweep([problem], ["toy-random"], "6", 10, tmp_path / "full", jobs=2)
    assert _rows(tmp_path / "killed") == _rows(tmp_path / "full")


# -- errors ------------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    "address, message",
    [
        ("tcp://127.0.0.1:{port}", "cannot connect to the Dask scheduler"),
        ("nonsense://nowhere", "is not a Dask scheduler address"),
        ("tcp://127.0.0.1", "is not a Dask scheduler address"),
    ],
)
def test_a_bad_scheduler_address_is_a_clear_error_and_writes_nothing(
    tmp_path: Path, address: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import dask

    address = address.format(port=_free_port())
    out = tmp_path / "out"
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        with pytest.raises(InvalidInputError, match=message):
            run_sweep([TOY_LS], ["toy-random"], "2", 3, out, executor="dask", scheduler=address)
        argv = ["bench", "run", "--problem", TOY_LS, "--method", "toy-random", "--budget", "3"]
        argv += ["--out", str(out), "--executor", "dask", "--scheduler", address, "--quiet"]
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("boloop: error: ") and message in err and address in err
    assert not out.exists()


@pytest.mark.parametrize(
    "address", ["127.0.0.1", "notanaddress", "tcp://host:port", "tls://127.0.0.1:1"]
)
def test_a_malformed_scheduler_address_ends_the_command_at_once(
    tmp_path: Path, address: str
) -> None:
    """The real command with Dask's default timeouts: one line (naming the address form when
    Dask cannot parse it), exit 2, and the process ends (a half-made Client's ``__del__`` used to
    wait 60 s for its close and print ``Exception ignored in: <function Client.__del__ ...>``;
    the subprocess's timeout, well under those 60 s, fails the test if it still waits). A
    ``tls://`` address without Dask's TLS configuration left such a Client too."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    argv = [sys.executable, "-m", "boloop.cli", "bench", "run", "--problem", TOY_LS]
    argv += ["--method", "toy-random", "--out", str(tmp_path / "out"), "--executor", "dask"]
    proc = subprocess.run(
        [*argv, "--scheduler", address], capture_output=True, text=True, env=env, timeout=40
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("boloop: error: ") and repr(address) in lines[0]
    if address.startswith("tls://"):
        assert "TLS" in lines[0]
    else:
        assert "tcp://host:8786" in lines[0] and "dask scheduler` running" not in lines[0]
    assert not (tmp_path / "out").exists()


def test_scheduler_without_the_dask_executor_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    with pytest.raises(InvalidInputError, match="--executor dask"):
        run_sweep([TOY_LS], ["toy-random"], "1", 3, out, scheduler="tcp://127.0.0.1:8786")
    with pytest.raises(InvalidInputError, match="executor"):
        run_sweep([TOY_LS], ["toy-random"], "1", 3, out, executor="threads")
    argv = ["bench", "run", "--problem", TOY_LS, "--method", "toy-random", "--out", str(out)]
    assert main([*argv, "--scheduler", "tcp://127.0.0.1:8786"]) == 2
    assert "--executor dask" in capsys.readouterr().err
    assert not out.exists()


def test_a_missing_dask_extra_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` fails as if absent
    out = tmp_path / "out"
    with pytest.raises(InvalidInputError, match=re.escape("pip install 'boloop[dask]'")):
        run_sweep([TOY_LS], ["toy-random"], "1", 3, out, executor="dask")
    argv = ["bench", "run", "--problem", TOY_LS, "--method", "toy-random", "--out", str(out)]
    assert main([*argv, "--executor", "dask"]) == 2
    assert "pip install 'boloop[dask]'" in capsys.readouterr().err
    assert not out.exists()
    # the process pool does not need the extra
    assert not run_sweep([TOY_LS], ["toy-random"], "1", 3, out, jobs=1).failed


def test_local_cluster_workers_have_one_blas_thread_and_glibc_defaults(cluster) -> None:
    """One BLAS/OpenMP thread per single-threaded worker, and no MALLOC_TRIM_THRESHOLD_ (Dask's
    default for its workers, which fixes glibc's mmap threshold and slows boloop's steps)."""
    _, client = cluster

    def facts() -> tuple:
        from threadpoolctl import threadpool_info

        return (
            sorted({pool["num_threads"] for pool in threadpool_info()}),
            os.environ.get("MALLOC_TRIM_THRESHOLD_"),
        )

    assert list(client.run(facts).values()) == [([1], None), ([1], None)]
    assert all(n == 1 for n in client.nthreads().values())


def test_workers_with_dask_malloc_trim_are_warned_about(tmp_path: Path, cluster) -> None:
    import io

    address, client = cluster

    def set_trim(value: str | None) -> None:  # in the worker's own os.environ
        if value is None:
            os.environ.pop("MALLOC_TRIM_THRESHOLD_", None)
        else:
            os.environ["MALLOC_TRIM_THRESHOLD_"] = value

    client.run(set_trim, "65536")  # Dask's default
    try:
        log = io.StringIO()
        report = run_sweep(
            [TOY_LS], ["toy-random"], "1", 2, tmp_path,
            executor="dask", scheduler=address, progress=log,
        )  # fmt: skip
    finally:
        client.run(set_trim, None)
    assert len(report.completed) == 1
    assert "warning: 2 of 2 Dask workers run with MALLOC_TRIM_THRESHOLD_ set" in log.getvalue()
