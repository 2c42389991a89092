"""The README's "Benchmarking your own problem" example, run as written (a newcomer found it
failing: its tracker's ``update`` had an old signature, so every run of the sweep failed)."""

from __future__ import annotations

import csv
import shlex
from pathlib import Path

from cli_runner import run_cli

README = Path(__file__).resolve().parents[1] / "README.md"


def _block(start: str) -> str:
    text = README.read_text()
    i = text.index(start)
    return text[i : text.index("```", i)]


def test_the_own_problem_example_runs_as_written(tmp_path):
    (tmp_path / "my_problem.py").write_text(_block("# my_problem.py"))
    commands = _block("boloop bench run --problem my_problem.py:make").replace("\\\n", " ")
    for command in commands.strip().splitlines():
        argv = shlex.split(command)[1:]  # without "boloop"
        res = run_cli(argv, cwd=tmp_path)
        assert res.returncode == 0, res.stderr
    assert "final fscore" in res.stdout  # the summary's table
    with open(tmp_path / "out" / "battery" / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["method"] for r in rows} == {"randomized-straddle", "straddle"}
    fscores = [float(r["fscore"]) for r in rows if r["fscore"]]
    assert fscores and all(0.0 <= f <= 1.0 for f in fscores)
