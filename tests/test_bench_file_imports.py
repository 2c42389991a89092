"""``boloop bench run`` with a method or problem file that imports modules of the user's own
(``from zzhelp import SHIFT`` beside it, a package of theirs): an edit of such a module makes the
stored runs run again, as an edit of the named file does; the rows record one fingerprint of the
file and those modules, reproducible with ``sha256sum``; rows stored by an older boloop (the file's
sha256 alone) are kept when the file imports no module of the user's and run again, with a line
saying why, when it does.

The edit-and-rerun sequences run the real command in child processes (a module is imported once
per process), with the files' folder on ``PYTHONPATH`` as a user's project has it.
"""

from __future__ import annotations

import csv
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from boloop.bench import run_sweep
from boloop.errors import InvalidInputError

SRC = str(Path(__file__).resolve().parents[1] / "src")
TOY_LS = "levelset/toy"

#: a method whose draws are shifted by its helper module's SHIFT; every query is logged
_METHOD = """
from pathlib import Path

from boloop.algorithms.toy import RandomEvaluate
from zzhelp import SHIFT


class Counted(RandomEvaluate):
    def _propose(self):
        with open(Path(__file__).with_name("asks.log"), "a") as fh:
            fh.write("ask\\n")
        return super()._propose()


def zz_helped(spec, seed):
    return Counted(spec.space, seed + SHIFT, threshold=spec.settings["threshold"], sets=True)
"""

_HELPER = "SHIFT = 0\n"


def _boloop(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """The ``boloop`` command in a child interpreter (this checkout's boloop), with ``cwd`` on
    ``PYTHONPATH`` (where the user's modules are found, in spawned workers too)."""
    path = [SRC, str(cwd), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-m", "boloop.cli", *args], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr
    return res


def _rows(path: Path) -> list[dict[str, str]]:
    with (path / "results.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def _count(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _metrics(rows: list[dict[str, str]], method: str) -> list[tuple[str, ...]]:
    return [(r["seed"], r["step"], r["loss"], r["fscore"]) for r in rows if r["method"] == method]


def _sha256sum_listing(folder: Path, files: list[str]) -> str:
    """The documented oracle: ``cd folder && sha256sum FILES | LC_ALL=C sort -k 2 | sha256sum``,
    run by the real tools."""
    cmd = "sha256sum " + " ".join(files) + " | LC_ALL=C sort -k 2 | sha256sum"
    out = subprocess.run(["sh", "-c", cmd], cwd=folder, capture_output=True, text=True, check=True)
    return out.stdout.split()[0]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_edited_helper_module_runs_the_method_again(tmp_path: Path, jobs: str) -> None:
    (tmp_path / "mine.py").write_text(_METHOD)
    helper = tmp_path / "zzhelp.py"
    helper.write_text(_HELPER)
    argv = ["bench", "run", "--problem", TOY_LS, "--method", "mine.py:zz_helped"]
    argv += ["--seeds", "2", "--budget", "4", "--jobs", jobs, "--out", "out"]
    counter = tmp_path / "asks.log"
    first = _boloop(argv, tmp_path)
    assert "2 runs completed, 0 skipped" in first.stdout
    per_run = _count(counter) // 2
    assert per_run > 0 and _count(counter) == 2 * per_run
    before = _rows(tmp_path / "out")
    # the rows name the file and its module by the fingerprint sha256sum gives
    listing = _sha256sum_listing(tmp_path, ["mine.py", "zzhelp.py"])
    assert {r["method_file_sha256"] for r in before} == {listing}

    # unchanged: kept, nothing runs
    again = _boloop(argv, tmp_path)
    assert "0 runs completed, 2 skipped" in again.stdout and "changed" not in again.stderr
    assert _count(counter) == 2 * per_run

    # the helper edited (the named file is not): the runs run again, and the command says why
    helper.write_text("SHIFT = 100\n")
    edited = _boloop(argv, tmp_path)
    assert "2 runs completed, 0 skipped" in edited.stdout, edited.stdout + edited.stderr
    assert (
        "mine.py or a module it imports (zzhelp.py) changed since its stored runs: rerunning "
        "2 runs\n"
    ) in edited.stderr
    assert _count(counter) == 4 * per_run
    after = _rows(tmp_path / "out")
    assert _metrics(after, "zz_helped") != _metrics(before, "zz_helped")
    fresh = _boloop([*argv[:-1], "fresh"], tmp_path)
    assert "2 runs completed" in fresh.stdout
    assert _metrics(after, "zz_helped") == _metrics(_rows(tmp_path / "fresh"), "zz_helped")
    new_listing = _sha256sum_listing(tmp_path, ["mine.py", "zzhelp.py"])
    assert {r["method_file_sha256"] for r in after} == {new_listing} != {listing}
    kept = _boloop(argv, tmp_path)
    assert "0 runs completed, 2 skipped" in kept.stdout
