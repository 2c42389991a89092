"""Sweeps over problems x methods x seeds (``boloop bench``), results tables, plots, the demo.

* :func:`run_sweep` (``boloop bench run``) writes ``DIR/results.csv``, resumable.
* :func:`plot_results` (``boloop bench plot``) and :func:`summary_table` (``boloop bench summary``).
* :mod:`boloop.bench.demo` (``boloop demo``, ``make demo``): one quick row per family.
"""

from boloop.bench.plan import RunSpec, parse_seeds
from boloop.bench.progress import SweepInterrupted, SweepReport, format_interrupted, format_report
from boloop.bench.report import aggregate, plot_results, summary_table
from boloop.bench.results_file import RESULTS_FILE, read_results
from boloop.bench.sweep import run_sweep

__all__ = [
    "RESULTS_FILE",
    "RunSpec",
    "SweepInterrupted",
    "SweepReport",
    "aggregate",
    "format_interrupted",
    "format_report",
    "parse_seeds",
    "plot_results",
    "read_results",
    "run_sweep",
    "summary_table",
]
