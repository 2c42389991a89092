"""Every benchmark script parses its command line: ``--help`` prints a usage and exits 0
without running anything (a script that read ``sys.argv`` by hand once ran its default work on
``--help``; the documented commands are only as good as the scripts' parsers)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
SCRIPTS = sorted(
    p for p in BENCHMARKS.glob("*.py") if 'if __name__ == "__main__"' in p.read_text()
)


def test_the_benchmarks_directory_has_scripts() -> None:
    assert len(SCRIPTS) >= 20, SCRIPTS


def _help(*args: str) -> str:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    src = str(BENCHMARKS.parent / "src")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, *args, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=BENCHMARKS.parent,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.lstrip().startswith("usage:"), done.stdout[:500]
    return done.stdout


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help_prints_usage_and_runs_nothing(script: Path) -> None:
    """The script's --help, and each of its subcommands' (argparse lists them as ``{a,b}`` at
    the start of a line of the positional arguments; an option's choices follow its name)."""
    usage = _help(str(script))
    for found in re.findall(r"^  \{([\w,-]+)\}", usage, re.M):
        for sub in found.split(","):
            assert sub in _help(str(script), sub)
