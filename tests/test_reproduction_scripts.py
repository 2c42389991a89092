"""The table scripts of docs/reproductions run on missing results: they write nothing.

``docs/reproductions/safe/make_figures.py`` and ``docs/reproductions/expert/analyse.py`` rewrite
the ``summary.csv`` committed beside them from ``<in>/*/results.csv``. Run before the sweeps (or
with a mistyped directory, or ``--help``), they used to replace it with an empty table and then
fail (safe) or report success (expert). Each script is run as its page shows it, in a process of
its own, on an empty results directory.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAFE = ROOT / "docs" / "reproductions" / "safe" / "make_figures.py"
EXPERT = ROOT / "docs" / "reproductions" / "expert" / "analyse.py"
STORED = "study,problem,method\nfig4,expert/ackley4,cobol\n"


def _run(script: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_safe_figures_without_results_keep_the_stored_summary(tmp_path):
    pytest.importorskip("matplotlib")
    (tmp_path / "out").mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "summary.csv").write_text(STORED)
    run = _run(SAFE, "out", "dest", cwd=tmp_path)
    assert run.returncode != 0
    assert "no results in out/*/results.csv" in run.stderr
    assert "nothing was written" in run.stderr
    assert (dest / "summary.csv").read_text() == STORED
    assert sorted(p.name for p in dest.iterdir()) == ["summary.csv"]


def test_safe_figures_help_prints_the_usage_and_writes_nothing(tmp_path):
    run = _run(SAFE, "--help", cwd=tmp_path)
    assert run.returncode == 0
    assert "make_figures.py out/safe docs/reproductions/safe" in run.stdout
    assert list(tmp_path.iterdir()) == []


def test_expert_analyse_without_results_keeps_the_stored_summary(tmp_path):
    pytest.importorskip("matplotlib")
    here = tmp_path / "expert"  # the script writes beside itself: run a copy
    here.mkdir()
    shutil.copy(EXPERT, here / "analyse.py")
    (here / "summary.csv").write_text(STORED)
    (tmp_path / "out").mkdir()
    run = _run(here / "analyse.py", "out", cwd=tmp_path)
    assert run.returncode != 0
    assert "no results in out/*/results.csv" in run.stderr
    assert "nothing was written" in run.stderr
    assert (here / "summary.csv").read_text() == STORED
    assert sorted(p.name for p in here.iterdir()) == ["analyse.py", "summary.csv"]


# --- a partial re-run updates the stored table, it does not replace it --------------------------

EXPERT_RESULTS_HEADER = (
    "problem,method,seed,step,simple_regret,cumulative_regret,expert_queries,"
    "ask_seconds,tell_seconds\n"
)


def _expert_results(path: Path, problem: str, method: str, regret: float) -> None:
    """A results.csv of 2 seeds x 3 steps, the columns analyse.py reads."""
    path.parent.mkdir(parents=True)
    lines = [EXPERT_RESULTS_HEADER]
    for seed in (0, 1):
        for step in (1, 2, 3):
            value = regret + seed
            lines.append(f"{problem},{method},{seed},{step},{value},{value * step},1,0.01,0.01\n")
    path.write_text("".join(lines))


def test_expert_analyse_on_one_study_keeps_the_other_studies_rows(tmp_path):
    pytest.importorskip("matplotlib")
    here = tmp_path / "expert"
    here.mkdir()
    shutil.copy(EXPERT, here / "analyse.py")
    stored = (
        "study,problem,method,seeds,step,metric,mean,se\n"
        "battery,expert/battery-polymer,cobol,10,10,simple_regret,0.5,0.1\n"
        "fig6,expert/ackley4,cobol,10,10,simple_regret,9.0,1.0\n"
    )
    (here / "summary.csv").write_text(stored)
    _expert_results(tmp_path / "out" / "fig6" / "results.csv", "expert/ackley4", "cobol", 2.0)
    run = _run(here / "analyse.py", "out", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "kept from the stored table, not in these results (study): battery" in run.stderr
    assert "replaced (study): fig6" in run.stderr
    rows = (here / "summary.csv").read_text().splitlines()
    assert rows[1] == "battery,expert/battery-polymer,cobol,10,10,simple_regret,0.5,0.1"
    fig6 = [r.split(",") for r in rows[2:]]
    assert fig6 and all(r[0] == "fig6" for r in fig6)
    # the new fig6 rows: 2 seeds, the simple regret at the last step is the mean of 2.0 and 3.0
    final = [r for r in fig6 if r[4] == "3" and r[5] == "simple_regret"]
    assert [(r[3], float(r[6])) for r in final] == [("2", 2.5)]
    assert not any(r[6] == "9.0" for r in fig6)


def test_levelset_analyze_without_arguments_prints_the_usage_and_writes_nothing(tmp_path):
    script = ROOT / "docs" / "reproductions" / "levelset" / "analyze.py"
    for args in ((), ("--help",)):
        run = _run(script, *args, cwd=tmp_path)
        assert run.returncode == 0
        assert "Usage" in run.stdout
    run = _run(script, "out", cwd=tmp_path)
    assert run.returncode != 0
    assert "at least one RESULTS.csv (nothing was written)" in run.stderr
    assert list(tmp_path.iterdir()) == []


def _levelset_results(path: Path, problem: str, method: str, loss: float) -> None:
    """A results.csv of 2 seeds x 50 steps, the columns analyze.py reads."""
    lines = ["problem,method,seed,step,loss,fscore\n"]
    for seed in (0, 1):
        for step in range(1, 51):
            lines.append(f"{problem},{method},{seed},{step},{loss / step + seed},{0.5 + seed / 10}\n")
    path.write_text("".join(lines))


def test_levelset_analyze_on_one_method_keeps_the_others_and_compares_from_the_whole_table(
    tmp_path,
):
    pytest.importorskip("matplotlib")
    script = ROOT / "docs" / "reproductions" / "levelset" / "analyze.py"
    ours, theirs = tmp_path / "ours.csv", tmp_path / "theirs.csv"
    _levelset_results(ours, "levelset/toy", "randomized-straddle", 1.0)
    _levelset_results(theirs, "levelset/toy", "straddle", 3.0)
    run = _run(script, "out", str(ours), str(theirs), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    out = tmp_path / "out"
    first = (out / "comparisons.csv").read_text()
    assert "levelset/toy,straddle,50,loss" in first
    picture = (out / "toy.png").read_bytes()
    # the other method re-run alone, with other numbers: its rows replaced, ours kept
    _levelset_results(theirs, "levelset/toy", "straddle", 5.0)
    run = _run(script, "out", str(theirs), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "kept from the stored table" in run.stderr and "randomized-straddle" in run.stderr
    assert "toy.png not redrawn: these results lack randomized-straddle" in run.stderr
    assert (out / "toy.png").read_bytes() == picture
    rows = list(csv.DictReader((out / "comparisons.csv").open()))
    at50 = {r["metric"]: float(r["proposed_minus_other"]) for r in rows if r["step"] == "50"}
    # loss at step 50: ours 1/50 + 0.5 (mean of seeds), theirs now 5/50 + 0.5
    assert at50["loss"] == pytest.approx(1 / 50 - 5 / 50, rel=1e-3)
    assert "levelset/toy | randomized-straddle" in (out / "table.md").read_text()
