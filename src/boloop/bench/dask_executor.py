"""The runs of a sweep on a Dask cluster (``boloop bench run --executor dask``).

Needs the ``dask`` extra (``pip install 'boloop[dask]'``: ``distributed``), imported only here and
only when this executor is used. Each (problem, method, seed) runs the same function as in a
process-pool worker (:func:`boloop.bench.workers._run_one`), so the rows are the same, row for row,
for the same seeds; the parent writes ``results.csv`` exactly as for the process pool. A Dask task
runs several runs one after another (:func:`plan_chunks`: large tasks first, single runs last),
since a task costs a few milliseconds of Dask's time, as much as a cheap run.

* Without a scheduler address a ``distributed.LocalCluster`` is started on this machine
  (:func:`start_local_cluster`: one single-threaded worker process per job, BLAS/OpenMP threads 1,
  no dashboard) and closed after the sweep. With ``tcp://host:port`` the sweep runs on that
  scheduler's workers, which must import the same boloop (and see the same paths for
  ``file.py:factory`` problems and methods, and the user's modules they import on their
  ``sys.path``: a worker records the fingerprint of the code it ran, by the rule of
  :mod:`boloop.bench.runner`, and one that imported an older version for an earlier sweep keeps
  it until it restarts, which its rows show).
* A worker that dies (killed, out of memory) loses nothing: the scheduler runs its tasks again on
  other workers (a task cut short runs again whole) (Dask's ``distributed.scheduler.allowed-failures``, 3 by default: a run on which
  one worker more than that died is reported failed with ``KilledWorker``).
* The progress bar moves with the steps of the runs in progress through a Dask event topic of the
  sweep (:meth:`distributed.Worker.log_event`), at most five messages a second per run, and a run
  finished inside a task counts as done (a full bar segment) at once; its rows are written, and
  the count of finished runs moves, when its task ends.
* If the client is interrupted (Ctrl-C, a killed ``boloop``), its tasks are cancelled; a rerun of
  the sweep resumes from ``results.csv`` like any other: the runs of the tasks that ended are in
  it, those of a task cut short run again. On Ctrl-C (or any exception in the client) the runs
  in progress stop at their next step (:func:`_stop_runs`); the workers of a LocalCluster ignore
  SIGINT (:func:`start_forkserver`) and are closed by the client, with distributed's log of
  that shutdown silenced, so the command ends with boloop's one line.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from boloop.errors import InvalidInputError, MissingExtraError

__all__ = [
    "DASK_EXTRA_MESSAGE",
    "import_distributed",
    "start_forkserver",
    "start_local_cluster",
    "plan_chunks",
    "dask_client",
    "run_on_dask",
]

logger = logging.getLogger("boloop")

DASK_EXTRA_MESSAGE = (
    "--executor dask needs the 'dask' extra ({missing} is missing): pip install 'boloop[dask]'"
)

#: environment of LocalCluster workers: one BLAS/OpenMP thread per single-threaded worker
WORKER_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "BLIS_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
}


#: the glibc variable Dask's nannies set before spawning a worker (see start_local_cluster)
MALLOC_TRIM = "MALLOC_TRIM_THRESHOLD_"


def import_distributed() -> Any:
    """The ``distributed`` module, or a :class:`MissingExtraError` naming the extra to install."""
    try:
        import distributed
    except ImportError as exc:
        raise MissingExtraError(
            DASK_EXTRA_MESSAGE.format(missing=exc.name or "distributed")
        ) from exc
    return distributed


#: what the forkserver of LocalCluster workers imports once, before forking each worker
FORKSERVER_PRELOAD = [
    "distributed",
    "numpy",
    "scipy.linalg",
    "boloop.bench.runner",
    "boloop.algorithms",
    "boloop.problems",
    "boloop.simulate",
]


def start_forkserver() -> bool:
    """Start this process's multiprocessing forkserver (if not yet running) preloading
    :data:`FORKSERVER_PRELOAD`, in the environment of LocalCluster workers; False where there is
    no forkserver (Windows). Needs no ``distributed``: :func:`boloop.bench.runner.run_sweep` calls
    it first thing, so the forkserver imports numpy, scipy, distributed and boloop on another core
    while this process imports ``distributed`` and plans the sweep (the LocalCluster's workers are
    then forked in ~0.2 s instead of ~1.2 s after it). Workers forked from it import nothing again
    but the main module of this process (``multiprocessing``'s rule for spawned children), and
    ignore SIGINT (:func:`_sigint_ignored`: Ctrl-C is the client's to handle)."""
    import multiprocessing as mp

    if "forkserver" not in mp.get_all_start_methods():
        return False
    import os
    from multiprocessing import forkserver

    # Dask's nanny sets its own preload list on first use (distributed.utils.get_mp_context);
    # a forkserver already running keeps the list it was started with, ours
    mp.get_context("forkserver").set_forkserver_preload(FORKSERVER_PRELOAD)
    # the forkserver imports numpy (BLAS threads) and glibc reads its MALLOC_ variables when it
    # starts: start it (if not yet running) with the workers' environment, then restore ours
    saved = {k: os.environ.get(k) for k in (*WORKER_ENV, MALLOC_TRIM)}
    try:
        os.environ.update(WORKER_ENV)
        os.environ.pop(MALLOC_TRIM, None)
        with _sigint_ignored():
            forkserver.ensure_running()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return True


@contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored in this process for the block (in the main thread; elsewhere nothing
    changes). A process started in the block ignores it for good, and so do the processes it
    forks: the forkserver passes on the handlers it started with to the workers it forks.

    The LocalCluster's workers are in the terminal's process group, so Ctrl-C reached them too:
    each died with a KeyboardInterrupt traceback, and their nannies and the scheduler logged
    the losses (76 lines before boloop's message in session 18's trial). The client alone now
    takes Ctrl-C and closes them (:func:`dask_client`)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _dask_config(values: dict[str, Any]) -> Any:
    import dask

    return dask.config.set(values)


def start_local_cluster(n_workers: int) -> Any:
    """A ``distributed.LocalCluster`` for sweeps: ``n_workers`` single-threaded worker processes
    on 127.0.0.1 (random ports, no dashboard), one BLAS/OpenMP thread each, and glibc's dynamic
    mmap threshold left alone (Dask sets ``MALLOC_TRIM_THRESHOLD_`` in its workers by default,
    which fixes that threshold: every temporary array above 128 KiB is then mapped and unmapped,
    and boloop's steps over 2500-point candidate sets took 1.7-1.9x the CPU time in a measurement
    with benchmarks/dask_sweep.py's problems). The workers are forked from a forkserver that has
    imported numpy, scipy, distributed and boloop once (where there is one; spawned otherwise).
    Close it with ``.close()`` (or use ``with``)."""
    distributed = import_distributed()
    config: dict[str, Any] = {"distributed.nanny.pre-spawn-environ." + MALLOC_TRIM: None}
    if start_forkserver():
        config["distributed.worker.multiprocessing-method"] = "forkserver"
    try:
        with _dask_config(config):
            return distributed.LocalCluster(
                n_workers=n_workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},  # not port 8787
                env=dict(WORKER_ENV),
            )
    except Exception as exc:
        raise RuntimeError(
            f"could not start a Dask LocalCluster of {n_workers} workers: {exc}"
        ) from exc


@contextmanager
def dask_client(
    scheduler: str | None, n_workers: int, warn: Callable[[str], None] | None = None
) -> Iterator[Any]:
    """A ``distributed.Client`` for a sweep, closed on exit (with the LocalCluster it started).

    ``scheduler`` None starts a LocalCluster of ``n_workers`` single-threaded worker processes on
    127.0.0.1 (random ports, no dashboard). An address that cannot be reached within Dask's
    connect timeout (``distributed.comm.timeouts.connect``, 30 s by default; the environment
    variable ``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT`` changes it) raises
    :class:`InvalidInputError`. Warnings about the scheduler's workers (none yet, another boloop,
    Dask's ``MALLOC_TRIM_THRESHOLD_``) are logged and passed to ``warn`` (the CLI's stderr).
    """
    from boloop.bench.sweep import _ctrl_c_after

    distributed = import_distributed()
    cluster = client = None
    stopping = False
    try:
        if scheduler is None:
            # Ctrl-C waits until the cluster and the client are up (about a second): one cut
            # short leaves half-made objects that distributed then fails to close at exit
            with _ctrl_c_after():
                cluster = start_local_cluster(n_workers)
                client = distributed.Client(cluster.scheduler_address, set_as_default=False)
        else:
            address = scheduler.strip()
            if not address:
                raise InvalidInputError("--scheduler needs an address like tcp://host:8786")
            _check_address(address)
            _probe_scheduler(address)
            try:
                client = distributed.Client(address, set_as_default=False)
            except (OSError, ValueError, TypeError) as exc:  # went away since the probe
                raise _cannot_connect(address, exc) from exc
            for message in _check_workers(client, address):
                logger.warning("%s", message)
                if warn is not None:
                    warn(message)
        yield client
    except BaseException:
        stopping = client is not None
        if stopping:
            with _ctrl_c_after() if cluster is not None else contextlib.nullcontext():
                _stop_runs(client, quiet=cluster is not None)
        raise
    finally:
        with contextlib.ExitStack() as closing:
            if cluster is not None:  # our cluster closes whole (in about a second), not cut short
                closing.enter_context(_ctrl_c_after())
            if stopping:  # a shutdown we cause: distributed's records of it (tasks cancelled in
                # closing workers, lost workers) say nothing to the user
                closing.enter_context(_quiet_distributed_logs())
            if client is not None:
                client.close()
            if cluster is not None:
                cluster.close()


#: in a worker process: the ids of the clients whose sweep stopped (:func:`_stop_runs`)
_STOPPED_CLIENTS: set[str] = set()


def _stop_runs(client: Any, quiet: bool) -> None:
    """A sweep stops (Ctrl-C, an error in this process): its runs in progress on the workers
    stop at their next step (:func:`_run_chunk_on_worker`; a running Dask task cannot be
    interrupted, and a worker waits for it before it closes: an interrupted sweep took 3-5 s
    more to end), and with ``quiet`` (the workers of our LocalCluster, which write to this
    terminal) their ``distributed`` loggers are silenced for the shutdown."""
    try:
        client.run(_mark_stopped, client.id, quiet)
    except Exception:  # the scheduler or a worker may already be gone
        logger.debug("could not stop the runs on the workers", exc_info=True)


def _mark_stopped(client_id: str, quiet: bool) -> None:
    """In a worker: the runs of the client's tasks stop at their next step."""
    if quiet:
        _silence_distributed_loggers()
    _STOPPED_CLIENTS.add(client_id)


def _silence_distributed_loggers() -> dict[str, int]:
    """Set every ``distributed`` logger of this process to CRITICAL; their levels before."""
    names = ["distributed"] + [
        name
        for name, item in logging.root.manager.loggerDict.items()
        if name.startswith("distributed.") and isinstance(item, logging.Logger)
    ]
    before = {}
    for name in names:
        log = logging.getLogger(name)
        before[name] = log.level
        log.setLevel(logging.CRITICAL)
    return before


@contextmanager
def _quiet_distributed_logs() -> Iterator[None]:
    """This process's ``distributed`` loggers silenced for the block (the closing of a stopped
    sweep's client and LocalCluster), restored afterwards."""
    before = _silence_distributed_loggers()
    try:
        yield
    finally:
        for name, level in before.items():
            logging.getLogger(name).setLevel(level)


def _check_address(address: str) -> None:
    """Refuse an address Dask cannot parse (unknown scheme, no port, a port that is no number)
    before a ``distributed.Client`` exists, with distributed's own address parsing.

    A Client refused on a malformed address is left half made: it raises from its constructor,
    then its ``__del__`` waits for its close until a timeout (twice the connect timeout, 60 s by
    default) and prints ``Exception ignored in: <function Client.__del__ ...>``. An unknown scheme
    could also leave distributed's loop state so that the next Client of this process did not
    start its event loop. Schemes without a host and port (``inproc://``) are only checked for
    being known.
    """
    from distributed.comm import parse_address
    from distributed.comm.registry import get_backend

    try:
        scheme, location = parse_address(address)
        backend = get_backend(scheme)
        try:
            backend.get_address_host_port(location)
        except NotImplementedError:  # not an IP transport: nothing more to check here
            pass
    except (ValueError, TypeError) as exc:
        raise InvalidInputError(
            f"--scheduler {address!r} is not a Dask scheduler address: {exc}; give it as "
            "tcp://host:8786 (the scheduler's host and port; nothing was written)"
        ) from exc


def _cannot_connect(address: str, exc: BaseException) -> InvalidInputError:
    hint = "is `dask scheduler` running there? " if isinstance(exc, OSError) else ""
    return InvalidInputError(
        f"cannot connect to the Dask scheduler at {address!r}: {exc} ({hint}nothing was written)"
    )


def _probe_scheduler(address: str) -> None:
    """Open (and close) one connection to ``address`` with distributed's own ``connect``, the
    connection arguments of Dask's configuration (TLS) and its connect timeout, before a Client
    exists: a Client whose start fails is left half made, and its ``__del__`` waits twice the
    connect timeout to close (seen with ``tls://`` without a TLS configuration and with an
    ``inproc://`` address of no listener). Runs in a thread of its own, so that it works whether
    or not the caller runs an event loop."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from distributed.comm import connect
    from distributed.security import Security

    async def probe() -> None:
        comm = await connect(address, **Security().get_connection_args("client"))
        await comm.close()

    with ThreadPoolExecutor(1, thread_name_prefix="boloop-dask-probe") as pool:
        try:
            pool.submit(asyncio.run, probe()).result()
        except (OSError, ValueError, TypeError) as exc:  # refused, timed out, no TLS config
            raise _cannot_connect(address, exc) from exc


def _worker_facts() -> tuple[str, str | None]:
    """Run on each worker by :func:`_check_workers`: boloop's version, MALLOC_TRIM_THRESHOLD_."""
    import os

    import boloop

    return str(boloop.__version__), os.environ.get(MALLOC_TRIM)


def _check_workers(client: Any, address: str) -> list[str]:
    """The workers present import the same boloop as this client (rows must not depend on which
    worker ran a run): a worker without boloop is an error; the warnings are returned."""
    import boloop

    try:
        facts = client.run(_worker_facts)
    except Exception as exc:
        raise InvalidInputError(
            f"the Dask workers of {address} cannot run boloop ({type(exc).__name__}: {exc}): "
            "install the same boloop on every worker (nothing was written)"
        ) from exc
    warnings = []
    if not facts:
        warnings.append(f"the Dask scheduler at {address} has no workers yet; the sweep waits")
    other = {w: v for w, (v, _) in facts.items() if v != boloop.__version__}
    if other:
        warnings.append(
            f"Dask workers run another boloop than this client ({boloop.__version__}): {other}"
        )
    trimmed = sorted(w for w, (_, trim) in facts.items() if trim is not None)
    if trimmed:
        warnings.append(
            f"{len(trimmed)} of {len(facts)} Dask workers run with {MALLOC_TRIM} set (Dask's "
            "default), which makes boloop's runs up to ~1.8x slower; docs/scale.md shows how to "
            "start the workers without it"
        )
    return warnings


#: each task of a sweep takes 1/CHUNK_DIVISOR of the runs left per worker (see plan_chunks)
CHUNK_DIVISOR = 4


def plan_chunks(n_runs: int, n_workers: int, divisor: int = CHUNK_DIVISOR) -> list[int]:
    """Sizes of the tasks (runs per task, in submission order) of a sweep of ``n_runs`` runs on
    ``n_workers`` single-threaded workers: guided self-scheduling (Polychronopoulos and Kuck,
    "Guided self-scheduling", IEEE Trans. Computers 36(12), 1987, where a processor takes
    ceil(R/P) of the R iterations left), with each task taking ceil(R / (divisor * P)) runs.

    Dask costs a few milliseconds per task (scheduler, messages, the parent's client), as much as
    a cheap run; a task of several runs pays it once. The first tasks are large and the last ones
    single runs, so the workers still finish together (the sizes adapt to the sweep and the
    cluster, nothing is tuned to a benchmark), and a worker that dies or an interrupted client
    loses at most one task's runs to be run again. 120 runs on 2 workers: 25 tasks (15, 14, 12,
    ..., 1); up to 8 runs on 2 workers: one run per task.
    """
    if n_runs < 0 or n_workers < 1 or divisor < 1:
        raise ValueError(f"bad chunk plan: {n_runs} runs, {n_workers} workers, /{divisor}")
    sizes: list[int] = []
    left = n_runs
    while left > 0:
        size = max(1, -(-left // (divisor * n_workers)))
        sizes.append(size)
        left -= size
    return sizes


def _portable(exc: BaseException) -> BaseException:
    """``exc`` with its worker-side traceback as a note, or a RuntimeError with its text when it
    does not survive pickling (it goes back to the client inside a task's result)."""
    import pickle
    import traceback

    where = "".join(traceback.format_tb(exc.__traceback__))
    try:
        clone = pickle.loads(pickle.dumps(exc))
    except Exception:
        clone = RuntimeError(f"{type(exc).__name__}: {exc}")
    note = f"Traceback in the Dask worker:\n{where}".rstrip()
    if hasattr(clone, "add_note"):  # Python 3.11+; on 3.10 the note is kept where 3.11 keeps it
        clone.add_note(note)
    else:
        clone.__notes__ = [*getattr(clone, "__notes__", []), note]
    return clone


def _run_chunk_on_worker(
    specs: Sequence[Any], topic: str | None, client_id: str = ""
) -> list[tuple[Any, BaseException | None]]:
    """The runs of one task in a Dask worker, one after another: ``(result, None)`` or
    ``(None, error)`` per run (a run that raises does not stop the others, as in the process
    pool). Progress steps go to the sweep's event ``topic``, and each finished run sends its last
    step, so the bar counts it as done before its task ends. Once the client ``client_id``
    stopped its sweep (:func:`_stop_runs`) the run in progress ends at its next progress check
    (at most five a second) and the task returns what it has, which nobody reads."""
    from distributed import get_worker

    from boloop.bench.workers import _run_one

    worker = get_worker()

    def report_step(key: tuple[str, str, int], step: int) -> None:
        if client_id in _STOPPED_CLIENTS:
            raise _SweepStopped
        if topic is not None:
            worker.log_event(topic, [list(key), step])

    out: list[tuple[Any, BaseException | None]] = []
    for spec in specs:
        try:
            out.append((_run_one(spec, report_step), None))
        except _SweepStopped:
            return out
        except Exception as exc:
            out.append((None, _portable(exc)))
        if client_id in _STOPPED_CLIENTS:
            return out
        if topic is not None:
            worker.log_event(topic, [list(spec.key), spec.budget])
    return out


class _SweepStopped(Exception):
    """In a worker: the client of the run in progress stopped its sweep."""


def run_on_dask(
    client: Any,
    todo: Sequence[Any],
    finish: Callable[[Any, Any, BaseException | None], None],
    report_step: Callable[[tuple[str, str, int], int], None] | None,
) -> None:
    """Submit the runs in tasks of several runs (:func:`plan_chunks` for the workers present; at
    least one) and call ``finish(spec, result, error)`` in this thread for each run of a task as
    the task ends (tasks in completion order, runs in order within a task): the rows of a finished
    task are written, a task cut short (killed worker, interrupted client) is run again whole. On
    any exception here (an interruption) every task still pending is cancelled before it
    propagates."""
    from distributed import as_completed

    token = uuid.uuid4().hex[:12]
    topic = f"boloop-progress-{token}" if report_step is not None else None
    if topic is not None and report_step is not None:
        step_callback = report_step

        def on_event(event: tuple[float, Any]) -> None:
            try:
                key, step = event[1]
                step_callback((str(key[0]), str(key[1]), int(key[2])), int(step))
            except Exception:  # a malformed message must not break the client's event loop
                logger.debug("ignored progress event %r", event)

        client.subscribe_topic(topic, on_event)
    n_workers = max(1, sum(client.nthreads().values()))
    futures: dict[Any, list[Any]] = {}
    try:
        start = 0
        for i, size in enumerate(plan_chunks(len(todo), n_workers)):
            chunk = list(todo[start : start + size])
            start += size
            fut = client.submit(
                _run_chunk_on_worker,
                chunk,
                topic,
                client.id,
                key=f"boloop-runs-{token}-{i}",
                pure=False,
            )
            futures[fut] = chunk
        completed = as_completed(list(futures), loop=client.loop)
        for fut in completed:
            chunk = futures[fut]
            status = fut.status
            if status in ("lost", "pending"):
                # the worker holding the finished task's result died before the result was
                # read: the scheduler runs the task again (this client still wants it); wait
                completed.add(fut)
                continue
            if status == "finished":
                for spec, (result, error) in zip(chunk, fut.result(), strict=True):
                    finish(spec, result, error)
                continue
            if status == "error":  # KilledWorker (a worker died on this task too many times)
                error = fut.exception()
                tb = fut.traceback()
                error = error.with_traceback(tb) if tb is not None else error
            else:  # cancelled: the connection to the scheduler was lost for too long
                error = RuntimeError(f"the Dask task of this run ended {status}")
            for spec in chunk:
                finish(spec, None, error)
    except BaseException:
        pending = [f for f in futures if not f.done()]
        if pending:
            logger.info("cancelling %d pending Dask tasks", len(pending))
            try:
                client.cancel(pending, force=True)
            except Exception:  # the scheduler may already be gone
                logger.debug("could not cancel the pending runs", exc_info=True)
        raise
    finally:
        if topic is not None:
            try:
                client.unsubscribe_topic(topic)
            except Exception:
                logger.debug("could not unsubscribe %s", topic, exc_info=True)
