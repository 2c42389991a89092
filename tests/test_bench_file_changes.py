"""``boloop bench run`` after a user edits the file of their own method or problem
(``--method file.py:factory``, ``--problem file.py:factory``): the stored runs of the old file run
again and the command says why, the runs of an unchanged file are kept (counted by the file
itself: it appends a line to a log next to it each time its code is asked a query or observes a
point), runs stored without the file's sha256 run again with a message, an edit within one
Python process is refused, and the rows stay readable (summary, spawned workers).

The edit-and-rerun sequences run the real command in child processes, as a researcher does: a
file is imported once per process, and this process would hold the old code.
"""

from __future__ import annotations

import csv
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from boloop.bench import read_results, run_sweep, summary_table
from boloop.errors import InvalidInputError

SRC = str(Path(__file__).resolve().parents[1] / "src")
TOY_LS = "levelset/toy"

#: a method of one's own whose draws depend on SHIFT; every query it proposes is logged
_METHOD = """
from pathlib import Path

from boloop.algorithms.toy import RandomEvaluate

SHIFT = 0


class Counted(RandomEvaluate):
    def _propose(self):
        with open(Path(__file__).with_name("asks.log"), "a") as fh:
            fh.write("ask\\n")
        return super()._propose()


def zz_counted(spec, seed):
    return Counted(spec.space, seed + SHIFT, threshold=spec.settings["threshold"], sets=True)
"""

#: a problem of one's own whose threshold is THRESHOLD; every point it observes is logged
_PROBLEM = """
from pathlib import Path

from boloop.problems.toy import ToyLevelSet

THRESHOLD = 0.25


class Counted(ToyLevelSet):
    def observe(self, query, rng):
        with open(Path(__file__).with_name("observes.log"), "a") as fh:
            fh.write("observe\\n")
        return super().observe(query, rng)


def make():
    return Counted(threshold=THRESHOLD)
"""


def _boloop(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """The ``boloop`` command in a child interpreter (this checkout's boloop)."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
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


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _metrics(rows: list[dict[str, str]], method: str) -> list[tuple[str, ...]]:
    return [(r["seed"], r["step"], r["loss"], r["fscore"]) for r in rows if r["method"] == method]


def _edit_and_rerun(
    tmp_path: Path, *, file: str, text: str, old: str, new: str, argv: list[str], log: str,
    runs: int, column: str, method: str,
) -> None:  # fmt: skip
    """Run ``argv`` (writing ``out``), again unchanged, then after replacing ``old`` by ``new`` in
    ``file``, then again: the checks every test of an edited file shares."""
    src = tmp_path / file
    src.write_text(text)
    counter = tmp_path / log
    first = _boloop([*argv, "--out", "out"], tmp_path)
    assert f"{runs} runs completed, 0 skipped" in first.stdout
    per_run = _count(counter) // runs
    assert per_run > 0 and _count(counter) == per_run * runs
    before = _rows(tmp_path / "out")
    sha_before = _sha256(src)

    # unchanged: every run is kept as it was stored, none is run
    again = _boloop([*argv, "--out", "out"], tmp_path)
    assert f"0 runs completed, {runs} skipped" in again.stdout, again.stdout
    assert "changed" not in again.stderr
    assert _count(counter) == per_run * runs
    assert _rows(tmp_path / "out") == before  # ask_seconds and all

    # edited: the stored runs of the old file run again, and the command says why in one line
    src.write_text(text.replace(old, new))
    edited = _boloop([*argv, "--out", "out"], tmp_path)
    assert f"{runs} runs completed, 0 skipped" in edited.stdout, edited.stdout
    assert f"{file} changed since its stored runs: rerunning {runs} runs\n" in edited.stderr
    assert _count(counter) == 2 * per_run * runs
    after = _rows(tmp_path / "out")
    # the rows are those of the edited file, as a fresh sweep of it gives them
    fresh = _boloop([*argv, "--out", "fresh"], tmp_path)
    assert _metrics(after, method) == _metrics(_rows(tmp_path / "fresh"), method)
    assert _metrics(after, method) != _metrics(before, method)
    # and they are kept by the next sweep
    count_before = _count(counter)
    kept = _boloop([*argv, "--out", "out"], tmp_path)
    assert f"0 runs completed, {runs} skipped" in kept.stdout and fresh.returncode == 0
    assert _count(counter) == count_before
    # each row names the file it ran by its sha256, as sha256sum prints it
    assert {r[column] for r in before if r["method"] == method} == {sha_before}
    assert {r[column] for r in after if r["method"] == method} == {_sha256(src)} != {sha_before}


def test_an_edited_method_file_runs_again_and_an_unchanged_one_is_kept(tmp_path: Path) -> None:
    argv = ["bench", "run", "--problem", TOY_LS, "--method", "mine.py:zz_counted"]
    argv += ["--seeds", "2", "--budget", "4", "--jobs", "1"]
    _edit_and_rerun(
        tmp_path, file="mine.py", text=_METHOD, old="SHIFT = 0", new="SHIFT = 100", argv=argv,
        log="asks.log", runs=2, column="method_file_sha256", method="zz_counted",
    )  # fmt: skip


def test_an_edited_problem_file_runs_again_and_an_unchanged_one_is_kept(tmp_path: Path) -> None:
    """With a library method (matched by its id) and two worker processes."""
    argv = ["bench", "run", "--problem", "prob.py:make", "--method", "toy-random"]
    argv += ["--seeds", "2", "--budget", "4", "--jobs", "2"]
    _edit_and_rerun(
        tmp_path, file="prob.py", text=_PROBLEM, old="THRESHOLD = 0.25", new="THRESHOLD = 0.8",
        argv=argv, log="observes.log", runs=2, column="problem_file_sha256", method="toy-random",
    )  # fmt: skip


def test_runs_stored_without_a_sha256_run_again_and_say_so(tmp_path: Path) -> None:
    """A results.csv written before boloop recorded the file (no sha256 columns): nothing says
    which version of the file its runs ran, so they run again; the library's runs are kept."""
    (tmp_path / "old.py").write_text(_METHOD)
    counter = tmp_path / "asks.log"
    methods = [f"{tmp_path / 'old.py'}:zz_counted", "toy-random"]
    run_sweep([TOY_LS], methods, "2", 3, tmp_path / "out", jobs=1)
    assert _count(counter) == 2 * 3
    # the file as an older boloop wrote it: without the two columns
    rows = _rows(tmp_path / "out")
    header = [c for c in rows[0] if not c.endswith("_sha256")]
    with (tmp_path / "out" / "results.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, header, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)

    report = run_sweep([TOY_LS], methods, "2", 3, tmp_path / "out", jobs=1)
    assert sorted(k[1:] for k in report.completed) == [("zz_counted", 0), ("zz_counted", 1)]
    assert sorted(k[1:] for k in report.skipped) == [("toy-random", 0), ("toy-random", 1)]
    assert report.reruns == [
        f"{tmp_path / 'old.py'}: its stored runs do not record which version of the file they "
        "ran (stored by an older boloop, or by the method's id): rerunning 2 runs"
    ]
    assert _count(counter) == 2 * 2 * 3
    _, runs = read_results(tmp_path / "out")
    assert {
        r["method_file_sha256"] for k, rs in runs.items() if k[1] == "zz_counted" for r in rs
    } == {_sha256(tmp_path / "old.py")}


def test_a_file_edited_after_this_process_imported_it_is_refused(tmp_path: Path) -> None:
    """In one Python session (a notebook) the file is imported once: a sweep after an edit would
    run the old code under the new file's sha256, so it is refused and nothing is written."""
    src = tmp_path / "session.py"
    src.write_text(_PROBLEM)
    run_sweep([f"{src}:make"], ["toy-random"], "1", 3, tmp_path / "out", jobs=1)
    stored = (tmp_path / "out" / "results.csv").read_bytes()
    src.write_text(_PROBLEM.replace("THRESHOLD = 0.25", "THRESHOLD = 0.5"))
    with pytest.raises(InvalidInputError, match="changed since this Python process imported it"):
        run_sweep([f"{src}:make"], ["toy-random"], "1", 3, tmp_path / "out", jobs=1)
    assert (tmp_path / "out" / "results.csv").read_bytes() == stored


def test_spawned_workers_record_the_file_they_ran_and_the_summary_reads_it(
    tmp_path: Path, spawn_workers: None
) -> None:
    (tmp_path / "spawned.py").write_text(_METHOD.replace("zz_counted", "zz_spawned"))
    (tmp_path / "prob.py").write_text(_PROBLEM)
    problems = [f"{tmp_path / 'prob.py'}:make"]
    methods = [f"{tmp_path / 'spawned.py'}:zz_spawned", "toy-random"]
    report = run_sweep(problems, methods, "2", 3, tmp_path / "out", jobs=2)
    assert not report.failed and len(report.completed) == 4
    rows = _rows(tmp_path / "out")
    assert {r["problem_file_sha256"] for r in rows} == {_sha256(tmp_path / "prob.py")}
    assert {(r["method"], r["method_file_sha256"]) for r in rows} == {
        ("zz_spawned", _sha256(tmp_path / "spawned.py")),
        ("toy-random", ""),
    }
    metrics, _ = read_results(tmp_path / "out")
    assert metrics == ["loss", "fscore"]  # the sha256 columns are no metric
    table = summary_table(tmp_path / "out")
    assert "| zz_spawned | 2 | 3 |" in table and "sha256" not in table
    again = run_sweep(problems, methods, "2", 3, tmp_path / "out", jobs=2)
    assert len(again.skipped) == 4 and not again.completed and not again.reruns
