"""The table scripts of docs/reproductions run on missing results: they write nothing.

``docs/reproductions/safe/make_figures.py`` and ``docs/reproductions/expert/analyse.py`` rewrite
the ``summary.csv`` committed beside them from ``<in>/*/results.csv``. Run before the sweeps (or
with a mistyped directory, or ``--help``), they used to replace it with an empty table and then
fail (safe) or report success (expert). Each script is run as its page shows it, in a process of
its own, on an empty results directory.
"""

from __future__ import annotations

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
