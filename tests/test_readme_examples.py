"""The README's "Benchmarking your own problem" example, run as written (a newcomer found it
failing: its tracker's ``update`` had an old signature, so every run of the sweep failed), and
the study walk-throughs of the README and ``docs/studies.md`` (level set, safe), whose every
command is run as written and whose shown output is checked line by line (a newcomer found
other queries than shown, an ``add`` off the grid, and a ``tell`` before its ``ask``)."""

from __future__ import annotations

import csv
import os
import re
import shlex
from pathlib import Path

import pytest

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


# -- the study walk-throughs (a newcomer found their queries and a refused `add` out of date) ----
DOCS = Path(__file__).resolve().parents[1] / "docs"


def _fence_after(text: str, start: str, fence: str) -> str:
    """The body of the first ``fence`` code block after ``start``."""
    i = text.index(fence, text.index(start)) + len(fence)
    return text[i : text.index("```", i)].strip("\n")


def _matches(shown: str, actual: str) -> bool:
    """A shown output line against the real one; ``...`` in the shown line elides any text."""
    return re.fullmatch(".*".join(map(re.escape, shown.split("..."))), actual) is not None


def _run_console(console: str, cwd: Path) -> None:
    """Run every ``$`` command of a console block as written, in ``cwd``, and check that each
    command succeeds and prints exactly the lines shown under it (if any are shown)."""
    steps: list[tuple[str, list[str]]] = []
    for line in console.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    env = {k: v for k, v in os.environ.items() if k != "BOLOOP_STORAGE"}  # the default storage
    for command, shown in steps:
        argv = shlex.split(command, comments=True)
        if argv[0] == "cat":  # the file's content is what the block shows
            (cwd / argv[1]).write_text("\n".join(shown) + "\n")
            continue
        assert argv[0] == "boloop", command
        stdin = "q\n" if argv[1:3] == ["study", "run"] else None  # stop the prompt at once
        res = run_cli(argv[1:], cwd=cwd, env=env, stdin=stdin)
        assert res.returncode == 0, (command, res.stderr)
        if shown:
            actual = res.stdout.rstrip("\n").splitlines()
            assert len(actual) == len(shown), (command, actual)
            for s, a in zip(shown, actual):
                assert _matches(s, a), (command, s, a)


def test_the_readme_study_walkthrough_runs_as_written(tmp_path):
    text = README.read_text()
    _run_console(_fence_after(text, "## Running a real experiment", "```console"), tmp_path)
    assert (tmp_path / "coating.svg").exists()  # `study plot coating`


@pytest.mark.parametrize("space_file", ["coating.toml", "trial.toml"], ids=["level-set", "safe"])
def test_the_studies_walkthroughs_run_as_written(tmp_path, space_file):
    text = (DOCS / "studies.md").read_text()
    heading = f"`{space_file}`:"
    (tmp_path / space_file).write_text(_fence_after(text, heading, "```toml") + "\n")
    _run_console(_fence_after(text, heading, "```console"), tmp_path)
