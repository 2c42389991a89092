"""The ``boloop`` command line (the command layer: nothing in the library imports it).

``boloop bench run|plot|summary``, ``boloop problems``, ``boloop methods``, ``boloop metrics``,
``boloop demo`` here; ``boloop study ...`` in :mod:`boloop.cli.study` and ``boloop serve`` in
:mod:`boloop.cli.serve` (each module's ``register(subparsers)`` adds its subparser and sets
``func``). Errors from :mod:`boloop.errors` print one line to stderr and exit with status 2;
with ``-v``, the traceback of the exception that caused one (a user's file that does not import,
a problem factory that raises) is printed before that line.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

import boloop
from boloop import _blas
from boloop.errors import BoloopError, InvalidInputError


def _cmd_bench_run(args: argparse.Namespace) -> int:
    from boloop.bench import SweepInterrupted, format_interrupted, format_report, run_sweep

    try:
        report = run_sweep(
            args.problem,
            args.method,
            args.seeds,
            args.budget,
            args.out,
            jobs=args.jobs,
            force=args.force,
            progress=None if args.quiet else sys.stderr,
            executor=args.executor,
            scheduler=args.scheduler,
        )
    except SweepInterrupted as exc:  # Ctrl-C: what is kept, and how to resume
        bar_line_open = not args.quiet and sys.stderr.isatty()  # the bar ends in "\r"
        print(("\n" if bar_line_open else "") + format_interrupted(exc), file=sys.stderr)
        return 130
    print(format_report(report))
    return 1 if report.failed else 0


def _cmd_bench_plot(args: argparse.Namespace) -> int:
    from boloop.bench import plot_results
    from boloop.bench.report import file_version_warnings

    for path in plot_results(args.dir, args.out, y_scale=args.y_scale):
        print(path)
    if not args.verbose:  # with -v, plot_results's log has them
        for warning in file_version_warnings(args.dir).values():  # the plots mix them too
            print(warning, file=sys.stderr)
    return 0


def _cmd_bench_summary(args: argparse.Namespace) -> int:
    from boloop.bench import summary_table

    print(summary_table(args.dir), end="")
    return 0


def _print_entries(entries: list, what: str) -> None:
    if not entries:
        print(f"no {what} registered")
        return
    width = max(len(e.id) for e in entries)
    family = None
    for e in sorted(entries, key=lambda e: (e.family, e.id)):
        if e.family != family:
            family = e.family
            print(f"{family}:")
        print(f"  {e.id:<{width}}  {e.description}")


def _of_family(entries: list, family: str | None, what: str) -> list:
    """The ``entries`` of ``family`` (all if None); a family none of them has is refused
    naming the families there are (a misspelt ``--family`` said "no ... registered")."""
    if family is None:
        return entries
    families = sorted({e.family for e in entries})
    if family not in families:
        raise InvalidInputError(
            f"argument --family: no {what} of a family {family!r}; families: " + ", ".join(families)
        )
    return [e for e in entries if e.family == family]


def _cmd_problems(args: argparse.Namespace) -> int:
    from boloop.problems import list as list_problems

    _print_entries(_of_family(list_problems(), args.family, "problems"), "problems")
    return 0


def _cmd_methods(args: argparse.Namespace) -> int:
    from boloop.algorithms import list_methods

    entries = _of_family(list_methods(), args.family, "methods")
    _print_entries(entries, "methods")
    if getattr(args, "options", False):  # the method table: every option, type, default, doc
        for e in entries:
            print(f"\n{e.family} {e.id}:" + ("" if e.options else " (no options)"))
            for o in e.options:
                print(f"  {o.name} ({o.type}, default {o.default!r}): {o.doc}")
    return 0


def _cmd_metrics(args: argparse.Namespace) -> int:
    from boloop.metrics import list_metrics

    _print_entries(_of_family(list_metrics(), args.family, "metrics"), "metrics")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from boloop.bench.demo import run_demo

    text = run_demo(args.out, jobs=args.jobs, force=args.force, progress=sys.stderr)
    print(text, end="")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="boloop",
        description="Bayesian optimisation and active learning with people in the loop.",
    )
    parser.add_argument("--version", action="version", version=f"boloop {boloop.__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    sub = parser.add_subparsers(dest="command")

    bench = sub.add_parser("bench", help="run, plot and summarise benchmark sweeps")
    bsub = bench.add_subparsers(dest="bench_command")

    def _bench_help(args: argparse.Namespace) -> int:
        bench.print_help()
        return 0

    bench.set_defaults(func=_bench_help)

    run = bsub.add_parser(
        "run",
        help="run problems x methods x seeds into DIR/results.csv",
        description="Run every (problem, method, seed); existing runs in DIR/results.csv are "
        "kept and skipped unless --force, so an interrupted sweep resumes. Runs of a problem "
        "or method given as path/to/file.py:factory run again when that file or a module of "
        "your own it imports has changed (not a data file it reads: --force then).",
    )
    run.add_argument(
        "--problem",
        nargs="+",
        action="extend",
        required=True,
        metavar="ID",
        help="problem ids (see `boloop problems`), with ?options, or path/to/file.py:factory",
    )
    run.add_argument(
        "--method",
        nargs="+",
        action="extend",
        required=True,
        metavar="ID",
        help="method ids (see `boloop methods`), with ?options, or path/to/file.py:factory "
        "(your own method: the file is imported and the method is named by the id it registers; "
        "docs/methods.md)",
    )
    run.add_argument("--seeds", default="1", help="N (seeds 0..N-1) or A-B (inclusive); default 1")
    run.add_argument(
        "--budget",
        type=int,
        default=None,
        help="iterations per run (default: each problem's paper budget)",
    )
    run.add_argument("--out", required=True, metavar="DIR", help="output directory")
    run.add_argument(
        "--jobs", type=int, default=None, help="worker processes (default: one per core)"
    )
    run.add_argument("--force", action="store_true", help="rerun runs already in the results")
    run.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar and no lines about runs skipped or run again: only the final line",
    )
    run.add_argument(
        "--executor",
        choices=("process", "dask"),
        default="process",
        help="where the runs go: a local process pool (default) or a Dask cluster "
        "(pip install 'boloop[dask]'); same rows for the same seeds",
    )
    run.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="with --executor dask: a running Dask scheduler (tcp://host:8786) whose workers run "
        "the sweep (--jobs is then not used); default: a LocalCluster of --jobs workers",
    )
    run.set_defaults(func=_cmd_bench_run)

    help_ = "one PNG per problem and metric (mean ± s.e. per method); needs matplotlib"
    plot = bsub.add_parser(
        "plot",
        help=help_,
        description=f"{help_}: pip install 'boloop[plot]'",
    )
    plot.add_argument("dir", metavar="DIR", help="directory with results.csv (or the file)")
    plot.add_argument("--out", default=None, help="where to write the PNGs (default: DIR)")
    scale = plot.add_mutually_exclusive_group()
    scale.add_argument(
        "--log-y",
        dest="y_scale",
        action="store_const",
        const="log",
        default="auto",
        help="a log y axis for every metric (symmetric log where a mean is 0 or negative); "
        "default: log only for a metric whose means are positive and span more than 2 decades",
    )
    scale.add_argument(
        "--linear-y",
        dest="y_scale",
        action="store_const",
        const="linear",
        help="a linear y axis for every metric",
    )
    plot.set_defaults(func=_cmd_bench_plot)

    summary = bsub.add_parser("summary", help="markdown table of final metrics and s/step")
    summary.add_argument("dir", metavar="DIR", help="directory with results.csv (or the file)")
    summary.set_defaults(func=_cmd_bench_summary)

    for name, fn, what in (
        ("problems", _cmd_problems, "benchmark problems"),
        ("methods", _cmd_methods, "methods"),
        ("metrics", _cmd_metrics, "metric functions"),
    ):
        p = sub.add_parser(name, help=f"list the registered {what} by family")
        p.add_argument("--family", default=None, help="only this family")
        if name == "methods":
            p.add_argument("--options", action="store_true", help="also list every option")
        p.set_defaults(func=fn)

    demo = sub.add_parser("demo", help="a short tour (seconds): one quick problem per family")
    demo.add_argument("--out", default="out/demo", help="output directory (default out/demo)")
    demo.add_argument("--jobs", type=int, default=None, help="worker processes")
    demo.add_argument("--force", action="store_true", help="rerun runs already in the results")
    demo.set_defaults(func=_cmd_demo)

    importlib.import_module("boloop.cli.study").register(sub)  # `boloop study ...`
    importlib.import_module("boloop.cli.serve").register(sub)  # `boloop serve` (web extra, lazy)
    return parser


#: BLAS/OpenMP thread variables a ``boloop study`` call sets to 1 unless the user set them
BLAS_THREAD_VARIABLES = _blas.BLAS_THREAD_VARIABLES


def limit_blas_threads() -> None:
    """One BLAS thread for the small matrices of a study step, unless the environment says
    otherwise (each variable the user set is kept). Must run before numpy is imported: a
    threaded BLAS under CPU load from other processes turns a 20 ms step into seconds."""
    import os

    if "numpy" in sys.modules:  # too late to matter; never half-apply
        return
    for name in BLAS_THREAD_VARIABLES:
        os.environ.setdefault(name, "1")
    if all(os.environ[name] == "1" for name in BLAS_THREAD_VARIABLES):
        _blas.env_pinned()  # every BLAS library loads with one thread: the study needs no limiting


def limit_sweep_blas_threads() -> None:
    """One BLAS thread in every process of a sweep, unless the user set any of
    :data:`BLAS_THREAD_VARIABLES` (then those decide, as they say, in this process and in the
    workers). Must run before numpy is imported: the process pool's workers are forked from
    this process with its BLAS (or spawned with its environment), and this process runs the
    runs itself with ``--jobs 1``. One BLAS thread per worker process: a sweep of 72 level-set
    runs on 2 cores took 37-52 s with the workers' default of one thread per core each, 12.6 s
    with one."""
    import os

    if "numpy" in sys.modules or _blas.thread_variables_set():
        return
    os.environ.update(dict.fromkeys(BLAS_THREAD_VARIABLES, "1"))
    _blas.env_pinned()


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "command", None) in ("study", "serve"):  # small matrices per request
        limit_blas_threads()
    elif getattr(args, "command", None) in ("bench", "demo"):  # one run per core, each one thread
        limit_sweep_blas_threads()
    if getattr(args, "verbose", False):
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 0
    try:
        return int(func(args) or 0)
    except BoloopError as exc:
        cause = exc.__cause__
        if getattr(args, "verbose", False) and cause is not None:  # a user's code raised it
            import traceback

            traceback.print_exception(cause, file=sys.stderr)
        print(f"boloop: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(getattr(args, "interrupt_message", "boloop: interrupted"), file=sys.stderr)
        return 130
    except BrokenPipeError:  # `boloop methods | head`: the reader left; stay quiet
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0

