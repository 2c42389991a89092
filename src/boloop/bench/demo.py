"""``boloop demo`` / ``make demo``: a tour of a few seconds through every family that exists.

:data:`DEMO` is the table of entries, one row per family: a quick problem, the proposed method and
its main baseline, a small budget and 3 seeds. Each family engineer tunes their own row (keep the
whole tour near a minute on 2 cores). An entry whose problem or methods are not registered yet is
skipped with a log line; the ``toy`` rows run only for families whose real row was skipped, so the
tour works from the first commit and grows as the families land.

All entries go through the bench runner into ``OUT/results.csv`` (a rerun skips what is there
unless ``force``), then one PNG per problem and metric is written to ``OUT`` and the summary table
is returned. Without matplotlib (the ``plot`` extra) the table says so instead of the plots.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from boloop.bench.report import plot_results, summary_table
from boloop.bench.results_file import check_output_folder
from boloop.bench.sweep import run_sweep
from boloop.errors import BoloopError, MissingExtraError

__all__ = ["DemoEntry", "DEMO", "runnable_entries", "run_demo"]

logger = logging.getLogger("boloop")


@dataclass(frozen=True)
class DemoEntry:
    """One row of the tour: ``methods`` are (proposed, main baseline); ``toy`` rows are fallbacks."""

    family: str
    problem: str
    methods: tuple[str, ...]
    budget: int
    seeds: str = "3"
    toy: bool = False


#: One row per family (append or tune your own family's row), then the toy fallbacks.
DEMO: list[DemoEntry] = [
    DemoEntry("levelset", "levelset/sinusoidal", ("randomized-straddle", "straddle"), 30),
    DemoEntry("preference", "preference/rkhs-se", ("mr-lpf", "maxminlcb"), 300),
    DemoEntry("safe", "safe/clinical-trial", ("m-safeopt", "safeopt-mc"), 30),
    # expert: COBOL with the reference code's budget (rejected proposals are free), a = 1
    DemoEntry(
        "expert",
        "expert/ackley4",
        ("cobol?budget=evaluations&max_reject_streak=10", "gp-lcb"),
        20,
    ),
    # fallbacks while a family's row cannot run
    DemoEntry("levelset", "levelset/toy", ("toy-random",), 30, toy=True),
    DemoEntry("preference", "preference/toy", ("toy-random",), 40, toy=True),
    DemoEntry("safe", "safe/toy", ("toy-random",), 30, toy=True),
    DemoEntry("expert", "expert/toy", ("toy-random",), 20, toy=True),
]


def _available(entry: DemoEntry) -> bool:
    from boloop.algorithms.registry import get_method
    from boloop.problems import get, parse_problem_id

    try:
        problem = get(entry.problem)
        for m in entry.methods:
            get_method(parse_problem_id(m)[0], problem.family)
    except BoloopError as exc:
        logger.info("demo: skipping %s (%s)", entry.problem, exc)
        return False
    return True


def runnable_entries(entries: list[DemoEntry] | None = None) -> list[DemoEntry]:
    """The entries that can run now: real rows whose ids are registered, and the toy row of every
    family without one."""
    from boloop.algorithms import list_methods
    from boloop.problems import list as list_problems

    entries = DEMO if entries is None else entries
    list_problems()  # a family module that fails to import is an error here, not a skipped row
    list_methods()
    real = [e for e in entries if not e.toy and _available(e)]
    covered = {e.family for e in real}
    toys = [e for e in entries if e.toy and e.family not in covered and _available(e)]
    return real + toys


def run_demo(
    out: str | Path = "out/demo",
    *,
    entries: list[DemoEntry] | None = None,
    jobs: int | None = None,
    force: bool = False,
    progress: IO[str] | None = None,
) -> str:
    """Run the tour into ``out`` (results.csv and PNGs) and return the markdown summary."""
    out = check_output_folder(out)  # refused before the tour's first line
    chosen = runnable_entries(entries)
    if not chosen:
        return "no demo entry can run: no problems or methods are registered\n"
    failed: list[str] = []
    for entry in chosen:
        if progress is not None:
            progress.write(
                f"demo: {entry.problem} with {', '.join(entry.methods)}, "
                f"budget {entry.budget}, seeds {entry.seeds}\n"
            )
        report = run_sweep(
            [entry.problem],
            list(entry.methods),
            entry.seeds,
            entry.budget,
            out,
            jobs=jobs,
            force=force,
            progress=progress,
        )
        failed += [f"{k[1]} on {k[0]} seed {k[2]}: {msg}" for k, msg in report.failed]
    text = summary_table(out)
    try:
        plots = plot_results(out)
    except MissingExtraError:  # the tour's runs and table do not need matplotlib
        text += "\nno plots: matplotlib is not installed (pip install 'boloop[plot]')\n"
    else:
        text += f"\n{len(plots)} plots in {out}/\n"
    if failed:
        text += "failed runs:\n" + "\n".join(f"  {f}" for f in failed) + "\n"
    return text
