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
from test_bench_file_changes import _boloop, _count, _rows

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
    listing = _sha256sum_listing(tmp_path, ["mine.py", "zzhelp.py"])

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
    # the rows name the file and its module by the fingerprint sha256sum gives
    new_listing = _sha256sum_listing(tmp_path, ["mine.py", "zzhelp.py"])
    assert {r["method_file_sha256"] for r in before} == {listing}
    assert {r["method_file_sha256"] for r in after} == {new_listing} != {listing}
    kept = _boloop(argv, tmp_path)
    assert "0 runs completed, 2 skipped" in kept.stdout


#: a package of the user's: a relative import at import time, a module imported lazily inside a
#: function (only when a run asks its first query), and a module no code names (not followed)
_PACKAGE = {
    "__init__.py": "from .kern import SCALE\n",
    "kern.py": "import json\n\nimport numpy as np\n\nSCALE = 1\n",
    "lazy.py": "OFFSET = 0\n",
    "unused.py": "X = 0\n",
}

_PKG_METHOD = """
import numpy as np

from boloop.algorithms.toy import RandomEvaluate
import {pkg}


class Lazy(RandomEvaluate):
    def _propose(self):
        from {pkg}.lazy import OFFSET

        self.rng = np.random.default_rng(self.rng.integers(1 << 30) + OFFSET)
        return super()._propose()


def {name}(spec, seed):
    return Lazy(spec.space, seed * {pkg}.SCALE, threshold=spec.settings["threshold"], sets=True)
"""


#: a problem of the user's that imports their package
_PKG_PROBLEM = """
import {pkg}
from boloop.problems.toy import ToyLevelSet


def make():
    return ToyLevelSet(threshold=0.25 * {pkg}.SCALE)
"""


def _write_package(folder: Path, pkg: str) -> None:
    (folder / pkg).mkdir()
    for name, text in _PACKAGE.items():
        (folder / pkg / name).write_text(text)


def test_a_package_and_a_module_imported_inside_a_function_are_followed(tmp_path: Path) -> None:
    """``import zzpkg`` follows ``zzpkg/__init__.py``'s relative import, and the import inside a
    method of the policy (run after import time) is read from the text: editing the lazily
    imported module runs the method again; the standard library, numpy and boloop are not the
    user's modules, and a module of the package no code imports is not followed."""
    (tmp_path / "lazy_method.py").write_text(_PKG_METHOD.format(pkg="zzpkg", name="zz_lazy"))
    _write_package(tmp_path, "zzpkg")
    argv = ["bench", "run", "--problem", TOY_LS, "--method", "lazy_method.py:zz_lazy"]
    argv += ["--seeds", "2", "--budget", "4", "--jobs", "2", "--out", "out"]
    _boloop(argv, tmp_path)
    before = _rows(tmp_path / "out")
    files = ["lazy_method.py", "zzpkg/__init__.py", "zzpkg/kern.py", "zzpkg/lazy.py"]
    listing = _sha256sum_listing(tmp_path, files)

    (tmp_path / "zzpkg" / "unused.py").write_text("X = 1\n")  # no code imports it: kept
    again = _boloop(argv, tmp_path)
    assert "0 runs completed, 2 skipped" in again.stdout, again.stderr

    (tmp_path / "zzpkg" / "lazy.py").write_text("OFFSET = 7\n")
    edited = _boloop(argv, tmp_path)
    assert "2 runs completed, 0 skipped" in edited.stdout
    assert (
        "lazy_method.py or a module it imports (zzpkg/__init__.py, zzpkg/kern.py, zzpkg/lazy.py) "
        "changed since its stored runs: rerunning 2 runs\n"
    ) in edited.stderr
    after = _rows(tmp_path / "out")
    assert _metrics(after, "zz_lazy") != _metrics(before, "zz_lazy")
    assert {r["method_file_sha256"] for r in before} == {listing}
    assert {r["method_file_sha256"] for r in after} == {_sha256sum_listing(tmp_path, files)}


def _store_file_sha256_only(out: Path, sha: dict[str, str]) -> None:
    """``results.csv`` as a boloop that hashed the named file alone wrote it: ``sha`` by method."""
    rows = _rows(out)
    for r in rows:
        r["method_file_sha256"] = sha.get(r["method"], "")
    with (out / "results.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def test_runs_stored_with_the_file_alone_are_kept_only_without_modules_of_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows written before modules were followed record the file's sha256 alone. For a file that
    imports no module of the user's that is still its whole code (the value is the same): the runs
    are kept. For a file that imports one, the rows do not say which version of it they ran: they
    run again, and the sweep says why in one line."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "alone.py").write_text(_METHOD.replace("from zzhelp import SHIFT", "SHIFT = 0")
                                       .replace("zz_helped", "zz_alone"))  # fmt: skip
    (tmp_path / "helped.py").write_text(_METHOD.replace("zzhelp", "zzhelp_old")
                                        .replace("zz_helped", "zz_old"))  # fmt: skip
    (tmp_path / "zzhelp_old.py").write_text(_HELPER)
    methods = [f"{tmp_path / 'alone.py'}:zz_alone", f"{tmp_path / 'helped.py'}:zz_old"]
    out = tmp_path / "out"
    first = run_sweep([TOY_LS], methods + ["toy-random"], "2", 3, out, jobs=1)
    assert len(first.completed) == 6
    rows = _rows(out)
    alone_sha = hashlib.sha256((tmp_path / "alone.py").read_bytes()).hexdigest()
    assert {r["method_file_sha256"] for r in rows if r["method"] == "zz_alone"} == {alone_sha}
    helped_sha = hashlib.sha256((tmp_path / "helped.py").read_bytes()).hexdigest()
    _store_file_sha256_only(out, {"zz_alone": alone_sha, "zz_old": helped_sha})

    report = run_sweep([TOY_LS], methods + ["toy-random"], "2", 3, out, jobs=1)
    assert sorted(k[1:] for k in report.completed) == [("zz_old", 0), ("zz_old", 1)]
    assert sorted(k[1] for k in report.skipped) == ["toy-random"] * 2 + ["zz_alone"] * 2
    assert report.reruns == [
        f"{tmp_path / 'helped.py'}: its stored runs record the file but not the modules it "
        "imports (zzhelp_old.py) (stored by an older boloop): rerunning 2 runs"
    ]
    listing = _sha256sum_listing(tmp_path, ["helped.py", "zzhelp_old.py"])
    rows = _rows(out)
    assert {r["method_file_sha256"] for r in rows if r["method"] == "zz_old"} == {listing}
    assert {r["method_file_sha256"] for r in rows if r["method"] == "zz_alone"} == {alone_sha}
    assert len(rows) == 3 * 6  # no run lost


def test_a_module_edited_after_this_process_imported_it_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In one Python session the helper is imported once: a sweep after its edit would run the
    old helper under the new code's fingerprint, so it is refused and nothing is written."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "session_m.py").write_text(_METHOD.replace("zzhelp", "zzhelp_session")
                                           .replace("zz_helped", "zz_session"))  # fmt: skip
    helper = tmp_path / "zzhelp_session.py"
    helper.write_text(_HELPER)
    methods = [f"{tmp_path / 'session_m.py'}:zz_session"]
    run_sweep([TOY_LS], methods, "1", 3, tmp_path / "out", jobs=1)
    stored = (tmp_path / "out" / "results.csv").read_bytes()
    helper.write_text("SHIFT = 3\n")
    with pytest.raises(InvalidInputError, match=r"zzhelp_session\.py, imported by method file "):
        run_sweep([TOY_LS], methods, "1", 3, tmp_path / "out", jobs=1)
    assert (tmp_path / "out" / "results.csv").read_bytes() == stored


def test_spawned_workers_compute_the_parents_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spawn_workers: None
) -> None:
    """Workers that start a fresh interpreter import the files and the package themselves and
    record the value the parent compares with, so the next sweep keeps every run. The problem's
    file imports the package too, before the method's file is imported: the method's modules are
    those its text imports, not those its import happened to execute first."""
    monkeypatch.syspath_prepend(str(tmp_path))
    method_text = _PKG_METHOD.format(pkg="zzpkg_sp", name="zz_pkg_spawned")
    (tmp_path / "spawned_m.py").write_text(method_text)
    (tmp_path / "spawned_p.py").write_text(_PKG_PROBLEM.format(pkg="zzpkg_sp"))
    _write_package(tmp_path, "zzpkg_sp")
    problems = [f"{tmp_path / 'spawned_p.py'}:make"]
    methods = [f"{tmp_path / 'spawned_m.py'}:zz_pkg_spawned", "toy-random"]
    report = run_sweep(problems, methods, "2", 3, tmp_path / "out", jobs=2)
    assert not report.failed and len(report.completed) == 4
    package = [f"zzpkg_sp/{n}" for n in ("__init__.py", "kern.py")]
    method = _sha256sum_listing(tmp_path, ["spawned_m.py", *package, "zzpkg_sp/lazy.py"])
    problem = _sha256sum_listing(tmp_path, ["spawned_p.py", *package])
    rows = _rows(tmp_path / "out")
    assert {(r["method"], r["method_file_sha256"]) for r in rows} == {
        ("zz_pkg_spawned", method),
        ("toy-random", ""),
    }
    assert {r["problem_file_sha256"] for r in rows} == {problem}
    again = run_sweep(problems, methods, "2", 3, tmp_path / "out", jobs=2)
    assert len(again.skipped) == 4 and not again.completed and not again.reruns


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_helper_beside_the_file_imports_from_any_working_directory(
    tmp_path: Path, jobs: str
) -> None:
    """The `boloop` command puts no folder of the user's on sys.path (only `python -m` puts the
    working directory there): a helper beside the method file was a ModuleNotFoundError unless
    PYTHONPATH named its folder. Loading the file makes its folder importable, as `python
    mine.py` does, in the workers too."""
    folder = tmp_path / "my methods"
    folder.mkdir()
    (folder / "mine.py").write_text(_METHOD)
    (folder / "zzhelp.py").write_text(_HELPER)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    code = "import sys; from boloop.cli import main; sys.exit(main())"  # the console script's
    argv = ["bench", "run", "--problem", TOY_LS, "--method", f"{folder / 'mine.py'}:zz_helped"]
    argv += ["--seeds", "2", "--budget", "3", "--jobs", jobs, "--out", "out"]
    res = subprocess.run([sys.executable, "-c", code, *argv], cwd=elsewhere, env=env,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "2 runs completed" in res.stdout
    assert len(_rows(elsewhere / "out")) > 0
