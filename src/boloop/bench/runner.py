"""``boloop bench run``: every (problem, method, seed) in worker processes, into ``results.csv``.

The runs go to a local process pool (``executor="process"``, the default) or to a Dask cluster
(``executor="dask"``, :mod:`boloop.bench.dask_executor`: a LocalCluster started for the sweep, or
the scheduler at ``scheduler="tcp://host:port"``). Both give the same rows for the same seeds.

``DIR/results.csv`` has one row per (problem, method, seed, step) and the columns
``problem, method, seed, step``, then the metric columns (in the problems' order; the union when a
sweep mixes problems with different metrics, empty where a problem has no such metric), then
``ask_seconds, tell_seconds`` (see :meth:`boloop.simulate.Trace.step_rows`).

At the start of a sweep the file is rewritten atomically (a temporary file and :func:`os.replace`)
with every complete run already in it; each run is appended (one write, flushed) as soon as it
completes, and the file is rewritten sorted at the end. A sweep that is interrupted therefore keeps
every run completed before the interruption, and a rerun skips the (problem, method, seed) already
present unless ``force``. A run whose rows are not exactly steps 1..budget (recorded with another
budget, or cut short by a kill during its append) is not complete for this sweep: it is run again
and its rows replaced. Two sweeps must not write to the same directory at the same time.

Method ids may carry options like problem ids: ``mr-lpf?beta=2`` runs ``make_policy("mr-lpf",
problem, seed, beta=2)`` and is a distinct method in the table.

A method of your own: ``path/to/file.py:factory`` (with ``?options`` too) imports the file, as
``--problem path/to/file.py:factory`` does (one loader, :func:`boloop._registry.load_file_attribute`),
and runs the method ``factory`` is registered as (:func:`boloop.algorithms.register_method` in the
file; a factory the file did not register is registered under its own name, see
:func:`boloop.algorithms.registry.load_method_file`). The results name it by that id (``emc``, or
``emc?n_initial=3``), as a Python sweep of the same method after ``import`` of the file does. The
file is imported again, by its absolute path, in the workers that do not have the method (a
process pool that does not fork, a Dask cluster, whose workers must see the same path); so is
the file of a method registered by a module of your own and named by its id from Python.

The code of a file's runs: a problem or a method given as ``path/to/file.py:factory`` puts in
the column ``problem_file_sha256`` or ``method_file_sha256`` of its rows (:data:`SHA256_COLUMNS`,
after ``tell_seconds``; the file has them only when a run has such a value) the fingerprint of the
code the process that ran the run executed (:func:`boloop._user_code.fingerprint`): the file and
the modules of the user's own it imports, transitively (named by import statements anywhere in
its text, at module level or inside functions; the user's: loaded from outside the standard
library, site-packages and boloop). For a file that imports none it is the sha256 of the file's
bytes as imported (:func:`boloop._registry.loaded_file_sha256`), the value stored before modules
were followed; otherwise the sha256 of the ``sha256sum`` listing of the file and its modules
(paths relative to the file's folder, sorted). Every process computes it by the same function
(the parent for the comparison, :func:`_source_file`; the process-pool and Dask workers for their
rows, :func:`_ran_sha256`), and the set of modules is read from the code's text, not from what a
process happened to import first, so they agree on unchanged code. A stored run of such a problem
or method whose value is not the one of this sweep is not kept: it runs again, and the progress
output and the log say so in one line per file: ``emc.py changed since its stored runs:
rerunning 4 runs`` (the file changed; it imports no module of the user's), ``emc.py or a module it
imports (helpers.py) changed since ...``, ``emc.py: its stored runs do not record which version of
the file they ran ...`` (no value: an older boloop, or the method named by its id), ``emc.py: its
stored runs record the file but not the modules it imports (helpers.py) ...`` (the file's sha256
alone, by a boloop that did not follow imports, for a file that imports modules of the user's; the
same rows of a file that imports none have the value of this sweep and are kept). The id of a
method or problem, its options and the factory's name are the key already; library methods and
methods named by their id are matched by the key alone, as before. Not covered: modules imported
by computed names (``importlib.import_module(name)``), modules of the user's reached only through
an installed package, installed packages themselves, data files (``force`` reruns). A file or one
of its modules edited after this Python process imported it is refused before anything runs (its
runs would run the old code): a new process imports the new one.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import csv
import importlib.util
import io
import logging
import math
import multiprocessing as mp
import os
import re
import signal
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from boloop._registry import check_new_id
from boloop.errors import BoloopError, InvalidInputError
from boloop.simulate import KEY_COLUMNS, TIME_COLUMNS

__all__ = [
    "parse_seeds",
    "RunSpec",
    "SweepInterrupted",
    "SweepReport",
    "format_interrupted",
    "run_sweep",
    "read_results",
    "write_results",
    "RESULTS_FILE",
]

logger = logging.getLogger("boloop")

RESULTS_FILE = "results.csv"

#: the columns that name the code of a run of a problem or a method given as a file: the sha256
#: (hex) of the file's bytes, or of them and the user's modules it imports (see the module's
#: docstring); empty for ids of the library (and methods named by their id)
PROBLEM_SHA256, METHOD_SHA256 = "problem_file_sha256", "method_file_sha256"
SHA256_COLUMNS = (PROBLEM_SHA256, METHOD_SHA256)

#: where the runs of a sweep go: a local process pool, or a Dask cluster (the ``dask`` extra)
EXECUTORS = ("process", "dask")

Key = tuple[str, str, int]


#: most seeds one sweep takes (each is a run per problem and method): a typo such as
#: ``0-99999999999`` is refused at once instead of filling the memory with seeds
MAX_SEEDS = 100_000

_SEEDS = re.compile(r"([0-9]+)(?:-([0-9]+))?")


def parse_seeds(text: str | int | Sequence[int]) -> list[int]:
    """Seeds from ``"N"`` (0..N-1) or ``"A-B"`` (A..B inclusive), or a list of seeds.

    ``"5-3"``, ``"0"``, negative numbers, duplicates, digits other than 0-9 and more than
    :data:`MAX_SEEDS` seeds are errors.
    """
    if isinstance(text, bool):
        raise InvalidInputError(f"seeds must be 'N' or 'A-B', got {text!r}")
    if isinstance(text, int):
        text = str(text)
    if not isinstance(text, str):
        if isinstance(text, Sized) and len(text) > MAX_SEEDS:  # before a list is built of it
            raise InvalidInputError(f"{len(text)} seeds; a sweep takes at most {MAX_SEEDS}")
        seeds = [int(s) for s in text]
    else:
        found = _SEEDS.fullmatch(text.strip())
        if found is None:  # "²" and "٣" are digits to str.isdigit, not to int()
            raise InvalidInputError(
                f"seeds must be 'N' (0..N-1) or 'A-B' (inclusive), got {text!r}"
            )
        a, b = found.groups()
        lo, hi = (int(a), int(b)) if b is not None else (0, int(a) - 1)
        if b is None and hi < 0:
            raise InvalidInputError(f"seeds 'N' needs N >= 1, got {text!r}")
        if hi < lo:
            raise InvalidInputError(f"seed range {text!r} is empty: {hi} < {lo}")
        if hi - lo + 1 > MAX_SEEDS:
            raise InvalidInputError(
                f"seeds {text!r} are {hi - lo + 1} seeds; a sweep takes at most {MAX_SEEDS}"
            )
        seeds = list(range(lo, hi + 1))
    if len(seeds) > MAX_SEEDS:
        raise InvalidInputError(f"{len(seeds)} seeds; a sweep takes at most {MAX_SEEDS}")
    if not seeds or any(s < 0 for s in seeds):
        raise InvalidInputError(f"seeds must be non-negative and non-empty, got {text!r}")
    if len(set(seeds)) != len(seeds):
        raise InvalidInputError(f"seeds {text!r} repeat a seed")
    return seeds


@dataclass(frozen=True)
class SourceFile:
    """The file of a problem or a method given as ``path/to/file.py:factory`` in a sweep: its
    runs' rows carry its sha256 in ``column``, and a stored run with another value runs again."""

    #: :data:`PROBLEM_SHA256` or :data:`METHOD_SHA256`
    column: str
    #: the file as a worker opens it (a problem's path as given, resolved in the worker as
    #: :func:`boloop.problems.get` resolves it; a method's absolute path, as its workers load it)
    path: str
    #: the path as the user gave it, for messages
    shown: str
    #: the value of ``column``: the sha256 (hex) of the bytes this sweep's process imported, of
    #: the file alone or of it and the user's modules it imports
    #: (:func:`boloop._user_code.fingerprint`)
    sha256: str
    #: the sha256 of the file alone (equal to ``sha256`` when ``modules`` is empty)
    file_sha256: str = ""
    #: the modules of the user's own the file imports, by path relative to its folder
    modules: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep; ``budget`` None means the problem's ``settings["budget"]``."""

    problem: str
    method: str
    seed: int
    budget: int
    #: ``/abs/path/file.py:factory`` that registers ``method`` in a process that lacks it (a
    #: method of the user's own, :func:`boloop.algorithms.registry.method_file_of`); not part
    #: of the key
    method_file: str | None = None
    #: the files of a problem or method given as ``file.py:factory``; not part of the key
    sources: tuple[SourceFile, ...] = ()

    @property
    def key(self) -> Key:
        return (self.problem, self.method, self.seed)


@dataclass
class SweepReport:
    """What a sweep did: runs completed now, skipped (already present), failed (with messages);
    ``reruns``: one line per problem or method file whose stored runs were run again because the
    file is not the one they ran (``"emc.py changed since its stored runs: rerunning 4 runs"``)."""

    path: Path
    completed: list[Key] = field(default_factory=list)
    skipped: list[Key] = field(default_factory=list)
    failed: list[tuple[Key, str]] = field(default_factory=list)
    seconds: float = 0.0
    reruns: list[str] = field(default_factory=list)


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C (a :class:`KeyboardInterrupt`, so code that catches that still
    does): ``report`` holds the runs completed before it (in the file) and those skipped
    (already in the file); ``total`` is the number of runs of the sweep."""

    def __init__(self, report: SweepReport, total: int) -> None:
        super().__init__("sweep interrupted")
        self.report = report
        self.total = total


def check_output_folder(out: str | Path) -> Path:
    """``out`` as a :class:`~pathlib.Path`, refused if it cannot be a folder: it, or the nearest
    folder above it that exists, is a file. Nothing is created (a sweep that fails before its
    first run writes nothing)."""
    out = Path(out)
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                raise InvalidInputError(
                    f"the output folder {str(out)!r} cannot be made: {str(folder)!r} is a file, "
                    "not a folder"
                )
            break
    return out


# -- results.csv ------------------------------------------------------------------------------------
def read_results(path: str | Path) -> tuple[list[str], dict[Key, list[dict[str, str]]]]:
    """Metric columns and the rows (as strings) by (problem, method, seed) of a results.csv (the
    rows hold every column, :data:`SHA256_COLUMNS` too; those are no metric)."""
    path = Path(path)
    if path.is_dir():
        path = path / RESULTS_FILE
    try:
        fh = path.open(newline="", encoding="utf-8-sig")  # a spreadsheet adds a BOM
    except FileNotFoundError:
        return [], {}
    except IsADirectoryError:  # a sweep created its output folder after the is_dir() check
        return read_results(path)
    with fh:
        try:
            return _read_rows(path, fh)
        except UnicodeDecodeError as exc:  # edited in a program that saved it in another code
            bad = exc.object[exc.start : exc.start + 1].hex()
            raise InvalidInputError(
                f"{path} is not a boloop results file: it is not UTF-8 text (byte 0x{bad}); "
                "boloop writes it in UTF-8"
            ) from None


def _read_rows(path: Path, fh: IO[str]) -> tuple[list[str], dict[Key, list[dict[str, str]]]]:
    """The body of :func:`read_results`: ``fh`` is ``path`` open for reading."""
    reader = csv.DictReader(fh)
    header = list(reader.fieldnames or [])
    missing = [c for c in (*KEY_COLUMNS, *TIME_COLUMNS) if c not in header]
    if missing:
        raise InvalidInputError(f"{path} is not a boloop results file: no columns {missing}")
    metrics = [
        c
        for c in header
        if c not in KEY_COLUMNS and c not in TIME_COLUMNS and c not in SHA256_COLUMNS
    ]
    runs: dict[Key, list[dict[str, str]]] = {}
    for row in reader:
        # a row cut short by an interrupted append has missing (None) or extra fields
        if None in row or None in row.values():
            continue
        try:
            key = (row["problem"], row["method"], int(row["seed"]))
            int(row["step"])
        except ValueError:
            continue
        runs.setdefault(key, []).append(row)
    return metrics, runs


def is_complete(rows: Sequence[dict[str, Any]] | None, budget: int) -> bool:
    """Whether the rows of one run are exactly steps 1..budget."""
    return rows is not None and sorted(int(r["step"]) for r in rows) == list(range(1, budget + 1))


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("nan" if value != value else repr(value))
    return str(value)


def append_results(
    path: str | Path,
    metrics: Sequence[str],
    rows: list[dict[str, Any]],
    extra: Sequence[str] = (),
) -> None:
    """Append the rows of one run to ``path`` in one write, flushed to disk. The file must exist
    with the header ``problem, method, seed, step, *metrics, ask_seconds, tell_seconds, *extra``
    (``extra``: :data:`SHA256_COLUMNS` or none)."""
    header = [*KEY_COLUMNS, *metrics, *TIME_COLUMNS, *extra]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for row in sorted(rows, key=lambda r: int(r["step"])):
        writer.writerow([_cell(row.get(c)) for c in header])
    with open(path, "a", newline="", encoding="utf-8") as fh:
        fh.write(buf.getvalue())
        fh.flush()
        os.fsync(fh.fileno())


def write_results(
    path: str | Path,
    metrics: Sequence[str],
    runs: dict[Key, list[dict[str, Any]]],
    extra: Sequence[str] = (),
) -> None:
    """Write all runs to ``path`` atomically, sorted by problem, method, seed, step; ``extra``
    columns (:data:`SHA256_COLUMNS` or none) follow ``tell_seconds``."""
    path = Path(path)
    header = [*KEY_COLUMNS, *metrics, *TIME_COLUMNS, *extra]
    fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(header)
            for key in sorted(runs):
                for row in sorted(runs[key], key=lambda r: int(r["step"])):
                    writer.writerow([_cell(row.get(c)) for c in header])
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# -- one run (in a worker) --------------------------------------------------------------------------
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


# -- validation in the parent -----------------------------------------------------------------------
def plan_runs(
    problems: Sequence[str], methods: Sequence[str], seeds: Sequence[int], budget: int | None
) -> tuple[list[RunSpec], list[str]]:
    """Check every id (unknown ids raise listing the valid ones), resolve budgets, and return the
    runs and the metric columns in the problems' order."""
    from boloop._registry import is_file_id, split_id
    from boloop._user_code import recording_imports
    from boloop.algorithms.registry import (
        get_method,
        is_method_file,
        load_method_file,
        method_file_of,
    )
    from boloop.problems import get
    from boloop.problems.registry import is_file_problem

    if not problems or not methods:
        raise InvalidInputError("give at least one --problem and one --method")
    if budget is not None and (isinstance(budget, bool) or int(budget) != budget or budget < 1):
        raise InvalidInputError(f"budget must be a positive integer, got {budget!r}")
    specs: list[RunSpec] = []
    seen: set[Key] = set()
    metrics: list[str] = []
    # the user's modules that building and checking the methods imports are recorded as the
    # bytes executed (the files' own imports are, by their loader); a sweep of the library's ids
    # imports as it always did
    files = any(is_file_id(p) for p in problems) or any(is_file_id(m) for m in methods)
    with recording_imports() if files else contextlib.nullcontext():
        for pid in dict.fromkeys(problems):
            problem = get(pid)
            problem_src: tuple[SourceFile, ...] = (
                (_source_file(pid, PROBLEM_SHA256, "problem", relative=True),)
                if is_file_problem(pid)
                else ()
            )
            for m in problem.metric_names():
                if m not in metrics:
                    metrics.append(m)
            b = budget if budget is not None else problem.settings.get("budget")
            if b is None:
                raise InvalidInputError(f"problem {pid!r} has no default budget; give --budget")
            for given in dict.fromkeys(methods):
                name, raw = split_id(given, "method")
                mid = given
                sources = problem_src
                if is_method_file(name):  # path/to/file.py:factory: the id it is registered as
                    entry = load_method_file(name, problem.family)
                    mid = entry.id + given[len(name) :]  # with the ?options as given
                    _check_file_method(problem, pid, given, entry.id, int(b))
                    sources += (_source_file(name, METHOD_SHA256, "method", relative=False),)
                else:
                    try:
                        entry = get_method(name, problem.family)
                    except InvalidInputError as exc:  # a method of another family
                        raise InvalidInputError(_one_family_message(exc, problems, methods)) from exc
                options = entry.read_id_options(raw)  # by the options' types
                entry.check_options(options)  # OptionError names valid ones
                if options:
                    _check_option_values(problem, pid, mid, int(b), int(seeds[0]) if seeds else 0)
                source = method_file_of(entry)
                for s in seeds:
                    spec = RunSpec(pid, mid, int(s), int(b), source, sources)
                    if spec.key not in seen:  # the same method given by its id and its file
                        seen.add(spec.key)
                        specs.append(spec)
    return specs, metrics


def _source_file(reference: str, column: str, what: str, *, relative: bool) -> SourceFile:
    """The :class:`SourceFile` of ``path/to/file.py:factory`` (options after ``?`` aside), which
    this process has just imported: the sha256 of the bytes it executed, of the file and of the
    user's modules it imports (:func:`boloop._user_code.fingerprint`). A file or such a module
    edited since this process imported it (a sweep earlier in the same Python session) is
    refused: the runs would run the old code under the new code's sha256."""
    from boloop._registry import file_sha256
    from boloop._user_code import fingerprint

    shown = reference.partition("?")[0].rpartition(":")[0]
    path = Path(shown).expanduser().resolve()
    file_sha256(path)  # an unreadable file is an error here, as it was
    code = fingerprint(path)
    if code.stale:
        which = (
            f"{what} file {shown!r}"
            if path.name in code.stale
            else f"{', '.join(code.stale)}, imported by {what} file {shown!r},"
        )
        raise InvalidInputError(
            f"{which} changed since this Python process imported it: its runs "
            "would run the old code. Benchmark the edited file from a new process (the boloop "
            "command, or a restarted Python session or notebook kernel)"
        )
    return SourceFile(
        column,
        shown if relative else str(path),
        shown,
        code.value,
        file_sha256=code.file_sha256,
        modules=code.modules,
    )


def _check_file_method(problem: Any, pid: str, given: str, method_id: str, budget: int) -> None:
    """A method from the user's file is built once before the sweep (as a run builds it, without
    its options, which are judged next): a factory that returns no boloop policy, or a policy
    that breaks its family's contract, is one error now instead of a failure of every run."""
    from boloop.algorithms import make_policy
    from boloop.queries import BasePolicy

    problem.settings = {**problem.settings, "budget": budget}
    try:
        policy = make_policy(method_id, problem, 0)
    except BoloopError as exc:
        raise InvalidInputError(f"method {given!r} on problem {pid!r}: {exc}") from exc
    except Exception:  # the factory's own bug: each run reports it with its traceback (-v)
        return
    if not isinstance(policy, BasePolicy):
        raise InvalidInputError(
            f"method {given!r}: its factory returned {type(policy).__name__}, not a boloop "
            "policy (a boloop.queries.BasePolicy); see docs/methods.md"
        )


def _one_family_message(
    exc: InvalidInputError, problems: Sequence[str], methods: Sequence[str]
) -> str:
    """The refusal of a method that does not run on one of the problems: one sweep runs every
    method on every problem, so the families go into separate commands into the same ``--out``
    (the CSV takes the union of their metric columns; plot and summary read both)."""
    import shlex

    from boloop.algorithms.registry import list_methods
    from boloop.problems import get, parse_problem_id

    by_family: dict[str, list[str]] = {}
    for pid in dict.fromkeys(problems):
        by_family.setdefault(get(pid).family, []).append(pid)
    serves: dict[str, set[str]] = {}
    for e in list_methods():
        serves.setdefault(e.id, set()).add(e.family)
    commands = []
    for family, pids in by_family.items():
        mids = [
            m for m in dict.fromkeys(methods) if family in serves.get(parse_problem_id(m)[0], ())
        ]
        if mids:
            quoted = " ".join(shlex.quote(x) for x in pids), " ".join(shlex.quote(m) for m in mids)
            commands.append(f"`--problem {quoted[0]} --method {quoted[1]}`")
    text = (
        f"{exc}. One bench run runs every method on every problem, so it takes the methods of "
        "one family: run each family with its own command into the same --out (results.csv "
        "takes both families' columns; bench plot and bench summary cover both)"
    )
    if len(commands) > 1:
        text += ": " + " and ".join(commands)
    return text


def _check_option_values(problem: Any, pid: str, mid: str, budget: int, seed: int) -> None:
    """Option values are checked by the constructors: build the policy once, as a run would (its
    horizon is the budget), so that a bad value stops the sweep before it starts instead of
    failing every run of it. Only the options are judged here: a pair that cannot be built even
    without them (a method for finite sets on a box) stays a failure of its runs, reported with
    the others, as before."""
    from boloop.algorithms import make_policy
    from boloop.algorithms.registry import parse_method_id

    name, options = parse_method_id(mid, problem.family)
    problem.settings = {**problem.settings, "budget": budget}
    try:
        make_policy(name, problem, seed, **options)
    except BoloopError as exc:
        try:
            make_policy(name, problem, seed)
        except BoloopError:
            return  # not the options: the runs fail and say why
        raise InvalidInputError(f"method {mid!r} on problem {pid!r}: {exc}") from exc


# -- progress ---------------------------------------------------------------------------------------
class Progress:
    """A plain-text progress bar on a stream (stderr): ``[#####-----] 5/10 runs  12s  ~10s left``.

    On a terminal the bar is redrawn in place and moves with the steps of the runs in progress; on
    other streams (logs, CI) one line is written per finished run. The count is of finished runs
    (whole runs: a run is in the results file or not); the estimate of the time left is shown
    once a run has finished (before, it extrapolated the first steps of the first runs, whose
    start-up it includes: a first "~6548s left" for a sweep of 14 s). Thread-safe. A terminal is
    redrawn at most once per ``redraw_seconds`` while runs progress.
    """

    def __init__(
        self,
        total: int,
        stream: IO[str] | None = None,
        width: int = 30,
        redraw_seconds: float = 0.2,
    ) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self.partial: dict[Key, float] = {}
        self.stream = stream
        self.width = width
        self.redraw_seconds = redraw_seconds
        self.t0 = time.perf_counter()
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self._lock = threading.Lock()
        self._last_draw = 0.0
        self._finished: set[Key] = set()

    def advance(self, key: Key, fraction: float) -> None:
        """A run in progress reached ``fraction`` of its budget."""
        with self._lock:
            if key in self._finished:  # a late message from a run already counted
                return
            self.partial[key] = min(max(fraction, 0.0), 1.0)
            if self.tty and time.perf_counter() - self._last_draw > self.redraw_seconds:
                self._draw("")

    def step(self, key: Key | None = None, label: str = "", failed: bool = False) -> None:
        """A run finished (or failed)."""
        with self._lock:
            self.done += 1
            self.failed += failed
            if key is not None:
                self.partial.pop(key, None)
                self._finished.add(key)
            self._draw(label, final=True)

    def _draw(self, label: str, final: bool = False) -> None:
        if self.stream is None or (not self.tty and not final):
            return
        self._last_draw = time.perf_counter()
        progress = self.done + sum(self.partial.values())
        frac = progress / max(self.total, 1)
        fill = int(frac * self.width)
        bar = "#" * fill + "-" * (self.width - fill)
        fail = f" ({self.failed} failed)" if self.failed else ""
        elapsed = time.perf_counter() - self.t0
        # a run has finished: written (done), or at its last step in a task still running (Dask)
        finished = self.done or any(f >= 1.0 for f in self.partial.values())
        left = f"  ~{elapsed / frac * (1 - frac):.0f}s left" if finished and frac < 1 else ""
        text = f"[{bar}] {self.done}/{self.total} runs{fail}  {elapsed:.0f}s{left}  {label}"
        if self.tty:
            self.stream.write("\r" + text[:120].ljust(120))
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(text.rstrip() + "\n")
        self.stream.flush()


# -- the sweep --------------------------------------------------------------------------------------
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


def _runs(count: int) -> str:
    return f"{count} run" + ("" if count == 1 else "s")


def format_interrupted(exc: SweepInterrupted) -> str:
    """The CLI's line after Ctrl-C: how many runs of the sweep are kept in the file and that
    the same command resumes (the runs in the file are skipped, the others run)."""
    r = exc.report
    kept = len(r.completed) + len(r.skipped)
    left = exc.total - kept
    return (
        f"boloop: interrupted; {kept} of {_runs(exc.total)} are kept in {r.path} "
        f"({len(r.completed)} finished now, {len(r.skipped)} were there before). Run the same "
        f"command again to resume: it skips the runs in the file and runs the other {left}"
    )


def format_report(report: SweepReport) -> str:
    """One line per outcome for the CLI."""
    lines = [
        f"{_runs(len(report.completed))} completed, {len(report.skipped)} skipped, "
        f"{len(report.failed)} failed in {report.seconds:.1f}s -> {report.path}"
    ]
    lines += [f"FAILED {k[1]} on {k[0]} seed {k[2]}: {msg}" for k, msg in report.failed]
    return "\n".join(lines)
