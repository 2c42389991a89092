"""The sweep of ``boloop bench run`` (:func:`run_sweep`): the runs not yet in ``results.csv``
(or whose file changed), run in this process, a process pool or on Dask, each appended as it
completes (the rules are in :mod:`boloop.bench.runner`)."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import importlib.util
import logging
import multiprocessing as mp
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from boloop._registry import check_new_id
from boloop.bench.plan import RunSpec, parse_seeds, plan_runs
from boloop.bench.progress import Progress, SweepInterrupted, SweepReport, _runs
from boloop.bench.results_file import (
    METHOD_SHA256,
    RESULTS_FILE,
    SHA256_COLUMNS,
    Key,
    append_results,
    check_output_folder,
    is_complete,
    read_results,
    write_results,
)
from boloop.bench.workers import (
    _init_worker,
    _one_thread_environment,
    _pool_blas_threads,
    _run_one,
)
from boloop.errors import InvalidInputError

logger = logging.getLogger("boloop")


#: where the runs of a sweep go: a local process pool, or a Dask cluster (the ``dask`` extra)
EXECUTORS = ("process", "dask")


def run_sweep(
    problems: Sequence[str],
    methods: Sequence[str],
    seeds: Sequence[int] | str,
    budget: int | None,
    out: str | Path,
    *,
    jobs: int | None = None,
    force: bool = False,
    progress: IO[str] | None = None,
    on_complete: Callable[[Key], None] | None = None,
    executor: str = "process",
    scheduler: str | None = None,
) -> SweepReport:
    """Run every (problem, method, seed) not yet in ``out/results.csv`` and add its rows.

    Parameters
    ----------
    problems, methods:
        Problem ids (registered or ``path/to/file.py:factory``) and method ids (with ``?options``).
    seeds:
        A list of seeds or a string for :func:`parse_seeds`.
    budget:
        Iterations per run; None uses each problem's ``settings["budget"]``.
    jobs:
        Worker processes (default ``os.cpu_count()``); 1 runs in this process. With
        ``executor="dask"`` and no ``scheduler``: the workers of the LocalCluster started for the
        sweep; with a ``scheduler`` it is not used (the cluster's workers run the sweep).
    force:
        Run again (and replace) runs already in the file.
    progress:
        Stream for the progress bar (``sys.stderr`` from the CLI); None is silent.
    on_complete:
        Called with the key of every run after its rows were written (tests use it to interrupt).
    executor:
        ``"process"`` (a local process pool) or ``"dask"`` (needs ``pip install 'boloop[dask]'``).
    scheduler:
        With ``executor="dask"``: the address of a running Dask scheduler (``tcp://host:8786``);
        None starts a LocalCluster for the sweep and closes it afterwards. A scheduler that cannot
        be reached is an error before anything is written.

    Returns a :class:`SweepReport`; failed runs are reported there (and logged with their traceback:
    ``boloop -v bench run``), not raised, so one crashing method does not lose the rest of a sweep.
    """
    t0 = time.perf_counter()
    for ids, what in ((problems, "problem"), (methods, "method")):
        for given in ids:
            check_new_id(given, what)  # "name?" or an option twice: not what a person meant
    if executor not in EXECUTORS:
        raise InvalidInputError(f"executor must be one of {list(EXECUTORS)}, got {executor!r}")
    if scheduler is not None and executor != "dask":
        raise InvalidInputError(
            f"a scheduler address ({scheduler!r}) needs the Dask executor: --executor dask"
        )
    if executor == "dask":
        from boloop.bench.dask_executor import import_distributed, start_forkserver

        if scheduler is None and importlib.util.find_spec("distributed") is not None:
            # the LocalCluster's workers will fork from it: it imports on another core meanwhile
            start_forkserver()
        import_distributed()  # the missing extra is an error before anything is written
    seed_list = parse_seeds(seeds) if isinstance(seeds, str | int) else parse_seeds(list(seeds))
    specs, metrics = plan_runs(problems, methods, seed_list, budget)
    out = check_output_folder(out)
    path = out / RESULTS_FILE
    old_metrics, runs = read_results(path)
    all_metrics = list(old_metrics) + [m for m in metrics if m not in old_metrics]
    report = SweepReport(path)

    n_jobs = (os.cpu_count() or 1) if jobs is None else int(jobs)
    if n_jobs < 1:
        raise InvalidInputError(f"jobs must be >= 1, got {jobs!r}")
    try:
        with contextlib.ExitStack() as stack:
            _sweep(
                specs,
                runs,
                path,
                all_metrics,
                report,
                stack,
                n_jobs=n_jobs,
                force=force,
                progress=progress,
                on_complete=on_complete,
                executor=executor,
                scheduler=scheduler,
            )
    except KeyboardInterrupt as exc:
        if isinstance(exc, SweepInterrupted):
            raise
        report.seconds = time.perf_counter() - t0
        raise SweepInterrupted(report, len(specs)) from exc
    report.seconds = time.perf_counter() - t0
    return report


def _sweep(
    specs: list[RunSpec],
    runs: dict[Key, list[dict[str, Any]]],
    path: Path,
    all_metrics: list[str],
    report: SweepReport,
    stack: contextlib.ExitStack,
    *,
    n_jobs: int,
    force: bool,
    progress: IO[str] | None,
    on_complete: Callable[[Key], None] | None,
    executor: str,
    scheduler: str | None,
) -> None:
    """The body of :func:`run_sweep` after validation; a Dask client lives on ``stack``."""

    todo: list[RunSpec] = []
    # (file as given, its column, why, its modules): runs to run again
    other_code: dict[tuple[str, str, str, tuple[str, ...]], int] = {}
    for spec in specs:
        rows = runs.get(spec.key)
        if is_complete(rows, spec.budget) and not force:
            changed = _changed_sources(spec, rows)  # type: ignore[arg-type]
            if not changed:
                report.skipped.append(spec.key)
                continue
            for change in changed:
                other_code[change] = other_code.get(change, 0) + 1
            logger.debug("rerunning %s: %s", spec.key, [why[0] for why in changed])
        elif rows is not None:
            logger.info("rerunning %s (incomplete, other budget, or --force)", spec.key)
        runs.pop(spec.key, None)
        todo.append(spec)
    for (shown, column, why, modules), n in other_code.items():
        imported = ", ".join(modules[:5]) + (", ..." if len(modules) > 5 else "")
        if why == _UNSTAMPED:
            how = "an older boloop" + (", or by the method's id" if column == METHOD_SHA256 else "")
            line = (
                f"{shown}: its stored runs do not record which version of the file they ran "
                f"(stored by {how}): rerunning {_runs(n)}"
            )
        elif why == _FILE_ONLY:
            line = (
                f"{shown}: its stored runs record the file but not the modules it imports "
                f"({imported}) (stored by an older boloop): rerunning {_runs(n)}"
            )
        elif modules:
            line = (
                f"{shown} or a module it imports ({imported}) changed since its stored runs: "
                f"rerunning {_runs(n)}"
            )
        else:
            line = f"{shown} changed since its stored runs: rerunning {_runs(n)}"
        report.reruns.append(line)
        logger.info("%s", line)
    client = None
    if executor == "dask" and todo:  # connect first: a bad address writes nothing
        from boloop.bench.dask_executor import dask_client

        def warn(message: str) -> None:  # about the cluster's workers, next to the progress bar
            if progress is not None:
                progress.write(f"warning: {message}\n")

        client = stack.enter_context(dask_client(scheduler, min(n_jobs, len(todo)), warn))
    path.parent.mkdir(parents=True, exist_ok=True)
    # the sha256 columns when a run of this sweep or one kept has a file's (a sweep of library
    # methods writes the file it always wrote)
    extra = (
        SHA256_COLUMNS
        if any(spec.sources for spec in specs)
        or any(rows[0].get(c) for rows in runs.values() for c in SHA256_COLUMNS)
        else ()
    )
    # a clean file (header with every metric column, no rows of runs about to be redone, no row
    # cut short by an interruption) to which each completed run is then appended
    write_results(path, all_metrics, runs, extra)
    bar = Progress(len(todo), progress)
    if progress is not None:
        for line in report.reruns:
            progress.write(line + "\n")
        if report.skipped:
            progress.write(f"{_runs(len(report.skipped))} already in {path}, skipped\n")
    if not todo:
        return

    def finish(spec: RunSpec, result: Any, error: BaseException | None) -> None:
        with _ctrl_c_after():  # a run in the file is a run in the report, Ctrl-C or not
            _finish(spec, result, error)

    def _finish(spec: RunSpec, result: Any, error: BaseException | None) -> None:
        if error is not None:
            msg = f"{type(error).__name__}: {error}"
            detail = "".join(traceback.format_exception(error))  # includes a worker's traceback
            logger.error("run %s failed: %s\n%s", spec.key, msg, detail)
            report.failed.append((spec.key, msg))
            bar.step(spec.key, f"{spec.method} on {spec.problem} seed {spec.seed} FAILED", True)
            return
        key, _, rows = result
        runs[key] = rows
        append_results(path, all_metrics, rows, extra)
        report.completed.append(key)
        bar.step(spec.key, f"{spec.method} on {spec.problem} seed {spec.seed}")
        if on_complete is not None:
            on_complete(key)

    budgets = {spec.key: spec.budget for spec in todo}

    def report_step(key: Key, step: int) -> None:
        bar.advance(key, step / budgets[key])

    if client is not None:
        from boloop.bench.dask_executor import run_on_dask

        run_on_dask(client, todo, finish, report_step if progress is not None else None)
    elif n_jobs == 1 or len(todo) == 1:
        for spec in todo:
            try:
                result = _run_one(spec, report_step if progress is not None else None)
            except Exception as exc:  # reported per run, like a crash in a worker
                finish(spec, None, exc)
                continue
            finish(spec, result, None)
    else:
        ctx = mp.get_context()
        queue = ctx.Queue() if progress is not None else None
        stop = threading.Event()

        def drain() -> None:  # progress messages from the workers, until the sweep ends
            while not stop.is_set():
                try:
                    key, step = queue.get(timeout=0.1)  # type: ignore[union-attr]
                except (EOFError, OSError, ValueError):
                    return
                except Exception:  # queue.Empty
                    continue
                report_step(key, step)

        reader = threading.Thread(target=drain, daemon=True) if queue is not None else None
        if reader is not None:
            reader.start()
        one_thread = _pool_blas_threads(ctx.get_start_method())
        try:
            with cf.ProcessPoolExecutor(
                max_workers=min(n_jobs, len(todo)),
                mp_context=ctx,
                initializer=_init_worker,
                initargs=(queue, one_thread),
            ) as pool:
                # the workers start at the first submissions: a spawned one reads the variables
                with _one_thread_environment(one_thread and ctx.get_start_method() != "fork"):
                    futures = {pool.submit(_run_one, spec): spec for spec in todo}
                try:
                    for fut in cf.as_completed(futures):
                        spec = futures[fut]
                        error = fut.exception()
                        finish(spec, None if error else fut.result(), error)
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise
        finally:
            stop.set()
            if reader is not None:
                reader.join(timeout=1.0)
            if queue is not None:
                queue.close()
    write_results(path, all_metrics, runs, extra)  # sorted by problem, method, seed, step


#: why a stored run of a file is run again: its rows record no sha256; they record the sha256 of
#: the file alone, which imports modules of the user's (an older boloop's rows); another code
_UNSTAMPED, _FILE_ONLY, _CHANGED = "unstamped", "file-only", "changed"


def _changed_sources(
    spec: RunSpec, rows: Sequence[dict[str, Any]]
) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """The files of ``spec`` whose code is not the one every stored row of its run records:
    (the file as given, its column, why: :data:`_UNSTAMPED`, :data:`_FILE_ONLY` or
    :data:`_CHANGED`, the user's modules it imports)."""
    changed = []
    for src in spec.sources:
        stored = {row.get(src.column) or "" for row in rows}
        if stored != {src.sha256}:
            if "" in stored:
                why = _UNSTAMPED
            elif src.modules and stored == {src.file_sha256}:
                why = _FILE_ONLY
            else:
                why = _CHANGED
            changed.append((src.shown, src.column, why, src.modules))
    return changed


@contextlib.contextmanager
def _ctrl_c_after() -> Any:
    """Run the block with Ctrl-C (SIGINT) held back until it ends, then raise it: a run's rows
    appended to the file and its count in the report go together, so the interrupted sweep's
    message counts what the file keeps. (A KeyboardInterrupt raised inside the append, as one
    arriving during its fsync was, left a run in the file that the message did not count.)
    Only in the main thread with Python's default handler; elsewhere the block runs as is."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            raise KeyboardInterrupt
