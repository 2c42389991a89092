"""One run of a sweep as a worker runs it (:func:`_run_one`: in a process-pool worker, a Dask
worker, or this process with one job), and the pool's workers' set-up: the progress queue and one
BLAS thread each (:func:`_init_worker`, :func:`_pool_blas_threads`,
:func:`_one_thread_environment`). The pool pickles :func:`_init_worker` and :func:`_run_one` by
their names in this module."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from boloop.bench.plan import RunSpec
from boloop.bench.results_file import Key
from boloop.errors import BoloopError

logger = logging.getLogger("boloop")


#: in a worker process: the queue for (key, step) progress messages (set by the pool initializer)
_PROGRESS_QUEUE: Any = None


def _init_worker(queue: Any, one_blas_thread: bool) -> None:
    """The pool's initializer, in each worker process: the progress queue, and one BLAS thread
    for good unless the user set a thread variable (:func:`_pool_blas_threads`)."""
    global _PROGRESS_QUEUE
    _PROGRESS_QUEUE = queue
    if one_blas_thread:
        from boloop._blas import one_blas_thread_for_good

        one_blas_thread_for_good()


def _pool_blas_threads(start_method: str) -> bool:
    """Whether the pool's workers are to run one BLAS thread: yes unless the user set any of
    the BLAS thread variables (:data:`boloop._blas.BLAS_THREAD_VARIABLES`), which then decide
    in the workers as in this process. The workers run at once, one per core: with a BLAS of
    one thread per core each (its default) they compete for the cores, and a sweep of 72
    level-set runs on 2 cores took 37-52 s instead of 12.6 s.

    Each worker limits itself in the pool's initializer (:func:`_init_worker`, with
    ``threadpoolctl``): a forked worker has this process's BLAS, loaded with its thread count,
    which only ``threadpoolctl`` changes. A spawned worker (or one of a forkserver) loads its
    own, after the variables that :func:`_one_thread_environment` sets while the pool starts
    them, so it runs one thread without ``threadpoolctl`` too, except a forkserver already
    running (an earlier sweep's, Dask's), which forks workers with the environment it had.
    Without ``threadpoolctl`` a worker not spawned may keep another count: a warning says so
    (``boloop bench run`` sets the variables before numpy is imported, so its workers have one
    thread either way)."""
    from boloop._blas import thread_variables_set

    if thread_variables_set():
        return False
    if start_method != "spawn" and importlib.util.find_spec("threadpoolctl") is None:
        logger.warning(
            "threadpoolctl is not installed: the sweep's worker processes (not spawned) may run "
            "the BLAS library's own thread count (this process's, or a forkserver's), and "
            "together they may oversubscribe the cores. Install boloop[threads], or set OMP_NUM_THREADS=1 (and "
            "OPENBLAS_NUM_THREADS=1, MKL_NUM_THREADS=1) before numpy is imported"
        )
    return True


@contextlib.contextmanager
def _one_thread_environment(active: bool) -> Any:
    """The BLAS thread variables set to 1 in this process's environment for the block (the
    workers a pool starts in it read them when they load numpy), restored afterwards."""
    from boloop._blas import BLAS_THREAD_VARIABLES

    if not active:
        yield
        return
    saved = {name: os.environ.get(name) for name in BLAS_THREAD_VARIABLES}
    os.environ.update(dict.fromkeys(BLAS_THREAD_VARIABLES, "1"))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _run_one(
    spec: RunSpec, report_step: Callable[[Key, int], None] | None = None
) -> tuple[Key, list[str], list[dict[str, Any]]]:
    from boloop._user_code import recording_imports
    from boloop.algorithms import make_policy
    from boloop.algorithms.registry import parse_method_id
    from boloop.problems import get
    from boloop.simulate import simulate

    if report_step is None and _PROGRESS_QUEUE is not None:
        queue = _PROGRESS_QUEUE
        report_step = lambda key, step: queue.put((key, step))  # noqa: E731
    on_record = None
    if report_step is not None:
        last = [0.0]
        callback = report_step

        def on_record(record: dict[str, Any]) -> None:  # at most 5 messages a second
            now = time.perf_counter()
            if now - last[0] >= 0.2:
                last[0] = now
                callback(spec.key, int(record["step"]))

    problem = get(spec.problem)
    # the sweep's budget is the run's horizon: methods that plan for T (MR-LPF's rounds) read it
    problem.settings = {**problem.settings, "budget": spec.budget}
    name = spec.method.partition("?")[0]
    # a user's module imported lazily by the run is recorded as the bytes it executed
    with recording_imports() if spec.sources else contextlib.nullcontext():
        _ensure_method(name, problem.family, spec.method_file)
        name, options = parse_method_id(spec.method, problem.family)
        policy = make_policy(name, problem, spec.seed, **options)
        trace = simulate(
            policy, problem, spec.budget, spec.seed, method=spec.method, on_record=on_record
        )
    rows = trace.step_rows()
    code = {src.column: _ran_sha256(src.path) for src in spec.sources}
    for r in rows:
        r["problem"] = spec.problem  # the id as given on the command line
        r.update(code)
    return spec.key, trace.metric_names, rows


def _ran_sha256(path: str) -> str:
    """The sha256 of the file at ``path`` and of the user's modules it imports as this process
    imported them to run it (:func:`boloop._user_code.fingerprint`: through the loader of
    ``file.py:factory``, in the parent before a fork or here); the bytes on disk of a file this
    process has from another import (a module of the same file imported by name); empty when the
    file cannot be read here (the next sweep then runs the run again). The parent computes the
    value it compares with by the same function (:func:`_source_file`)."""
    from boloop._user_code import fingerprint

    return fingerprint(path).value


def _ensure_method(name: str, family: str, method_file: str | None) -> None:
    """In a worker: import the file that registers method ``name`` if this process lacks it (a
    forked worker has every method of its parent; a spawned one or a Dask worker has boloop's)."""
    from boloop.algorithms.registry import get_method, load_method_file

    if method_file is None:
        return
    try:
        get_method(name, family)
    except BoloopError:
        load_method_file(method_file, family)
