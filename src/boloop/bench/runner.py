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

Where the code is: :mod:`boloop.bench.sweep` (:func:`run_sweep`, the sweep loop),
:mod:`boloop.bench.plan` (the seeds, the runs and the checks before they run),
:mod:`boloop.bench.workers` (one run, and the pool's worker processes and their BLAS threads),
:mod:`boloop.bench.results_file` (``results.csv``) and :mod:`boloop.bench.progress` (the progress
bar and the reports). This module keeps every name it had, imported from those.
"""

from __future__ import annotations

from boloop.bench.plan import _SEEDS as _SEEDS
from boloop.bench.plan import MAX_SEEDS as MAX_SEEDS
from boloop.bench.plan import RunSpec as RunSpec
from boloop.bench.plan import SourceFile as SourceFile
from boloop.bench.plan import _check_file_method as _check_file_method
from boloop.bench.plan import _check_option_values as _check_option_values
from boloop.bench.plan import _one_family_message as _one_family_message
from boloop.bench.plan import _source_file as _source_file
from boloop.bench.plan import parse_seeds as parse_seeds
from boloop.bench.plan import plan_runs as plan_runs
from boloop.bench.progress import Progress as Progress
from boloop.bench.progress import SweepInterrupted as SweepInterrupted
from boloop.bench.progress import SweepReport as SweepReport
from boloop.bench.progress import _runs as _runs
from boloop.bench.progress import format_interrupted as format_interrupted
from boloop.bench.progress import format_report as format_report
from boloop.bench.results_file import METHOD_SHA256 as METHOD_SHA256
from boloop.bench.results_file import PROBLEM_SHA256 as PROBLEM_SHA256
from boloop.bench.results_file import RESULTS_FILE as RESULTS_FILE
from boloop.bench.results_file import SHA256_COLUMNS as SHA256_COLUMNS
from boloop.bench.results_file import Key as Key
from boloop.bench.results_file import _cell as _cell
from boloop.bench.results_file import _read_rows as _read_rows
from boloop.bench.results_file import append_results as append_results
from boloop.bench.results_file import check_output_folder as check_output_folder
from boloop.bench.results_file import is_complete as is_complete
from boloop.bench.results_file import read_results as read_results
from boloop.bench.results_file import write_results as write_results
from boloop.bench.sweep import _CHANGED as _CHANGED
from boloop.bench.sweep import _FILE_ONLY as _FILE_ONLY
from boloop.bench.sweep import _UNSTAMPED as _UNSTAMPED
from boloop.bench.sweep import EXECUTORS as EXECUTORS
from boloop.bench.sweep import _changed_sources as _changed_sources
from boloop.bench.sweep import _ctrl_c_after as _ctrl_c_after
from boloop.bench.sweep import _sweep as _sweep
from boloop.bench.sweep import logger as logger
from boloop.bench.sweep import run_sweep as run_sweep

# a copy of the value at import (None): a worker's queue is boloop.bench.workers._PROGRESS_QUEUE
from boloop.bench.workers import _PROGRESS_QUEUE as _PROGRESS_QUEUE
from boloop.bench.workers import _ensure_method as _ensure_method
from boloop.bench.workers import _init_worker as _init_worker
from boloop.bench.workers import _one_thread_environment as _one_thread_environment
from boloop.bench.workers import _pool_blas_threads as _pool_blas_threads
from boloop.bench.workers import _ran_sha256 as _ran_sha256
from boloop.bench.workers import _run_one as _run_one

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
