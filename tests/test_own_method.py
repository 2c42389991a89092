"""A method of one's own (docs/methods.md), as a researcher writes and benchmarks it without the
source: ``boloop bench run --method file.py:factory`` (the file imported in the parent, in
workers that do not fork and on Dask, the method named by its registered id, one-line errors),
a study of a method this process has not registered (the message says so and how to load it),
the policy contract's failure modes (``recommend(final_update=...)``, ``Option`` types at
registration), and the worked example of docs/methods.md run exactly as written.

The example's ``emc.py`` is written once per module into one directory (``docs_dir``): a method
id belongs to one function of one file, and every test here that loads it loads that file.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from boloop.algorithms import Option, make_policy, register_method
from boloop.algorithms.registry import (
    RECOMMEND_KEYWORDS,
    TYPE_WORDS,
    check_recommend_keywords,
    get_method,
    load_method_file,
)
from boloop.algorithms.toy import RandomEvaluate
from boloop.bench import read_results, run_sweep
from boloop.errors import InvalidInputError, StorageError
from boloop.problems import Problem, get
from boloop.study import load_study
from cli_runner import assert_refused, run_cli

DOCS = Path(__file__).resolve().parents[1] / "docs" / "methods.md"
SRC = str(Path(__file__).resolve().parents[1] / "src")
TOY_LS = "levelset/toy"


def _block(start: str, fence: str = "```python") -> str:
    """The body of the code block of docs/methods.md that begins with the line ``start``."""
    text = DOCS.read_text()
    i = text.index(start)
    assert text.rfind(fence, 0, i) == text.rfind("```", 0, i), start  # inside a `fence` block
    return text[i : text.index("```", i)]


@pytest.fixture(scope="module")
def docs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the documented ``emc.py``, as written."""
    path = tmp_path_factory.mktemp("own-method")
    (path / "emc.py").write_text(_block("# emc.py"))
    return path


def _rows(path: Path) -> list[dict[str, str]]:
    with (path / "results.csv").open(newline="") as fh:
        return [
            {k: v for k, v in r.items() if not k.endswith("_seconds")} for r in csv.DictReader(fh)
        ]


def _env() -> dict[str, str]:
    """The environment of a child interpreter: this checkout's boloop first."""
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


# -- boloop bench run --method file.py:factory -----------------------------------------------------
def test_a_method_from_a_file_is_benchmarked_against_a_library_method(docs_dir: Path) -> None:
    argv = ["bench", "run", "--problem", TOY_LS, "--method", "emc.py:make_emc"]
    argv += ["randomized-straddle", "--seeds", "2", "--budget", "4", "--jobs", "2", "--quiet"]
    res = run_cli([*argv, "--out", "out/cli"], cwd=docs_dir)
    assert res.returncode == 0, res.stderr
    assert "4 runs completed, 0 skipped, 0 failed" in res.stdout
    _, runs = read_results(docs_dir / "out" / "cli")
    assert sorted(runs) == [(TOY_LS, m, s) for m in ("emc", "randomized-straddle") for s in (0, 1)]
    assert all(sorted(int(r["step"]) for r in rows) == [1, 2, 3, 4] for rows in runs.values())
    summary = run_cli(["bench", "summary", "out/cli"], cwd=docs_dir)
    assert (
        "| emc | 2 | 4 |" in summary.stdout and "| randomized-straddle | 2 | 4 |" in summary.stdout
    )
    # the same command again skips the runs in the file: the method's id is the key
    again = run_cli([*argv, "--out", "out/cli"], cwd=docs_dir)
    assert "0 runs completed, 4 skipped" in again.stdout, again.stdout
    # from Python, after the file registered it, the id gives the same rows (one name, one method);
    # only the runs of the method given by its file record the file's sha256
    run_sweep([TOY_LS], ["emc", "randomized-straddle"], "2", 4, docs_dir / "out" / "py", jobs=1)
    by_file = _rows(docs_dir / "out" / "cli")
    assert {r["method_file_sha256"] for r in by_file if r["method"] == "emc"} == {
        hashlib.sha256((docs_dir / "emc.py").read_bytes()).hexdigest()
    }
    assert _rows(docs_dir / "out" / "py") == [
        {k: v for k, v in r.items() if not k.endswith("_sha256")} for r in by_file
    ]


def test_options_of_a_method_from_a_file_are_in_its_id(docs_dir: Path) -> None:
    out = docs_dir / "out" / "options"
    res = run_cli(
        ["bench", "run", "--problem", TOY_LS, "--method", "emc.py:make_emc?n_initial=3"]
        + ["--seeds", "1", "--budget", "4", "--quiet", "--out", str(out)],
        cwd=docs_dir,
    )
    assert res.returncode == 0, res.stderr
    assert {r["method"] for r in _rows(out)} == {"emc?n_initial=3"}
    bad = run_cli(
        ["bench", "run", "--problem", TOY_LS, "--method", "emc.py:make_emc?n_init=3"]
        + ["--out", str(out)],
        cwd=docs_dir,
    )
    assert_refused(bad, "unknown option 'n_init'", "n_initial (int, default 2)")


_BAD_METHODS = """
from boloop.algorithms.toy import RandomEvaluate
from boloop.problems.toy import ToyLevelSet


def make_problem(threshold=0.0):            # a problem's factory, not a method's
    return ToyLevelSet(threshold=threshold)


def returns_dict(spec, seed):
    return {"not": "a policy"}


class NoKeyword(RandomEvaluate):
    def recommend(self):                    # the level-set contract needs final_update
        return super().recommend()


def no_keyword(spec, seed):
    return NoKeyword(spec.space, seed, threshold=spec.settings["threshold"], sets=True)
"""


@pytest.mark.parametrize(
    "method, words, child",
    [
        ("missing.py:make_emc", ["method file 'missing.py' does not exist"], False),
        ("emc.py:make_em", ["'emc.py' has no function 'make_em'", "make_emc"], False),
        ("empty.py:make", ["'empty.py' has no function 'make'; it defines no function"], False),
        ("bad.py:make_problem", ["'bad.py:make_problem' is not a method factory", "(spec"], False),
        ("emc.py:ExpectedMisclassification", ["is a class, not a method factory"], False),
        # these two register their factory (under its name) before it is refused: in a child
        # process, so that this one's registry keeps no broken level-set method
        ("bad.py:returns_dict", ["its factory returned dict, not a boloop policy"], True),
        ("bad.py:no_keyword", ["NoKeyword.recommend() takes no keyword 'final_update'"], True),
    ],
)
def test_a_bad_method_file_is_one_line_before_any_run(
    docs_dir: Path, tmp_path: Path, method: str, words: list[str], child: bool
) -> None:
    (docs_dir / "bad.py").write_text(_BAD_METHODS)
    (docs_dir / "empty.py").write_text("SIZE = 50  # a file with no function at all\n")
    out = tmp_path / "out"
    argv = [
        "bench",
        "run",
        "--problem",
        TOY_LS,
        "--method",
        method,
        "toy-random",
        "--out",
        str(out),
    ]
    if child:
        res = subprocess.run([sys.executable, "-m", "boloop.cli", *argv], cwd=docs_dir,
                             env=_env(), capture_output=True, text=True, timeout=300)  # fmt: skip
    else:
        res = run_cli(argv, cwd=docs_dir)
    assert_refused(res, *words)
    assert not out.exists()  # nothing was run or written


def test_a_method_file_of_another_family_is_refused(docs_dir: Path) -> None:
    res = run_cli(
        ["bench", "run", "--problem", "preference/toy", "--method", "emc.py:make_emc"]
        + ["--out", "out/pref"],
        cwd=docs_dir,
    )
    assert_refused(res, "registered as 'emc' for levelset problems, not preference")


def test_an_unregistered_factory_is_registered_under_its_name(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text(
        textwrap.dedent(
            """
            from boloop.algorithms.toy import RandomEvaluate

            def zz_plain_random(spec, seed, sets=True):
                '''uniform random candidates (not registered by the file)'''
                return RandomEvaluate(spec.space, seed, threshold=0.25, sets=sets)
            """
        )
    )
    report = run_sweep([TOY_LS], [f"{tmp_path / 'plain.py'}:zz_plain_random?sets=true"], "1", 3,
                       tmp_path / "out", jobs=1)  # fmt: skip
    assert not report.failed
    assert {r["method"] for r in _rows(tmp_path / "out")} == {"zz_plain_random?sets=true"}


def test_a_file_imported_by_name_and_by_path_is_one_method(
    docs_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trial's problem file did ``import mypolicy`` while ``--method mypolicy.py:...`` loads
    the same file by its path, under another module name: the same function of the same file
    registers the same method, not a clash."""
    import importlib

    monkeypatch.syspath_prepend(str(docs_dir))
    entry = load_method_file(f"{docs_dir / 'emc.py'}:make_emc", "levelset")
    by_name = importlib.import_module("emc")  # runs its register_method again: no error
    again = load_method_file(f"{docs_dir / 'emc.py'}:make_emc", "levelset")
    assert (again.id, again.family, again.options) == (entry.id, entry.family, entry.options)
    assert get_method("emc", "levelset").factory is by_name.make_emc

    def make_emc(spec, seed):  # type: ignore[no-untyped-def]  # another function, same name
        return None

    with pytest.raises(InvalidInputError, match="'emc' is already registered"):
        register_method("emc", "levelset", "another")(make_emc)


def test_workers_that_do_not_fork_import_the_method_file(
    docs_dir: Path, tmp_path: Path, spawn_workers: None
) -> None:
    """By its file and by its id after an import (the trial's sweep registered ``emc`` in the
    parent only): a spawned worker imports the file by its absolute path, and the rows are
    those of the runs in this process."""
    methods = [f"{docs_dir / 'emc.py'}:make_emc?n_initial=1", "emc", "randomized-straddle"]
    report = run_sweep([TOY_LS], methods, "2", 4, tmp_path / "spawned", jobs=2)
    assert not report.failed, report.failed
    run_sweep([TOY_LS], methods, "2", 4, tmp_path / "here", jobs=1)
    rows = _rows(tmp_path / "spawned")
    assert {r["method"] for r in rows} == {"emc?n_initial=1", "emc", "randomized-straddle"}
    assert rows == _rows(tmp_path / "here")


# -- a study of a method this process has not registered ------------------------------------------
def test_a_study_of_an_unregistered_method_says_so(tmp_path: Path) -> None:
    (tmp_path / "zz_mine.py").write_text(
        textwrap.dedent(
            """
            from boloop.algorithms import register_method
            from boloop.algorithms.toy import RandomEvaluate

            @register_method("zz-unregistered-here", "levelset", "test only")
            def make(spec, seed):
                return RandomEvaluate(spec.space, seed, threshold=0.25, sets=True)
            """
        )
    )
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    script = (
        "import zz_mine\nfrom boloop.study import create_study\n"
        f"s = create_study('mine', 'zz-unregistered-here', problem='{TOY_LS}', storage='{url}')\n"
        "for i in range(3):\n    q = s.ask(); s.tell(q.id, 0.1 * i)\n"
    )
    made = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert made.returncode == 0, made.stderr
    expected = (
        "study 'mine': the study's method 'zz-unregistered-here' is not registered in this "
        "process: import the module that registers it (boloop.algorithms.register_method) and "
        "load again"
    )
    for full_replay in (True, False):  # without snapshots (as BOLOOP_SNAPSHOTS=0), and with
        with pytest.raises(StorageError) as info:
            load_study("mine", url, full_replay=full_replay)
        text = str(info.value)
        assert text.startswith(expected), text
        assert "proposes differently" not in text and "--from" not in text
    res = run_cli(["study", "ask", "mine", "--storage", url], cwd=tmp_path)
    assert_refused(res, expected, "load the study from Python")


# -- the contract: recommend's keywords, option types ---------------------------------------------
class _NoKeyword(RandomEvaluate):
    def recommend(self):  # type: ignore[no-untyped-def,override]
        return super().recommend()


class _AnyKeywords(RandomEvaluate):
    def recommend(self, **options):  # type: ignore[no-untyped-def,override]
        return super().recommend(**options)


def test_a_level_set_recommend_without_final_update_is_refused_naming_it() -> None:
    """What build_policy checks on every policy it builds (through make_policy and the bench:
    ``bad.py:no_keyword`` above); the policies here are built by hand, so that no broken
    level-set method is registered in this process."""
    space = get(TOY_LS).space
    with pytest.raises(InvalidInputError) as info:
        check_recommend_keywords(_NoKeyword(space, 0), "mine", "levelset")
    text = str(info.value)
    assert text.startswith("method 'mine' (levelset): _NoKeyword.recommend() takes no keyword")
    assert "recommend(final_update: bool = True)" in text and "docs/methods.md" in text
    check_recommend_keywords(_AnyKeywords(space, 0), "mine", "levelset")  # **options: fine
    check_recommend_keywords(RandomEvaluate(space, 0), "mine", "levelset")  # final_update
    check_recommend_keywords(_NoKeyword(space, 0), "mine", "preference")  # no keyword there


def test_simulate_holds_a_hand_built_policy_to_the_same_contract() -> None:
    """A policy object given to simulate() (no registry in between) is refused before its
    first step with the contract's message, not a bare TypeError from the tracker."""
    from boloop.simulate import simulate

    problem = get("levelset/figure2")  # its tracker calls recommend(final_update=True)
    with pytest.raises(InvalidInputError, match=r"_NoKeyword.recommend\(\) takes no keyword"):
        simulate(_NoKeyword(problem.space, 0), problem, budget=2, seed=0)
    toy = get(TOY_LS)  # a tracker that never calls recommend asks nothing of it
    assert len(simulate(_NoKeyword(toy.space, 0), toy, budget=2, seed=0).step_rows()) == 2


@pytest.mark.parametrize(
    "pid", ["levelset/toy", "levelset/sinusoidal", "preference/toy", "safe/toy", "expert/toy"]
)
def test_the_contract_names_every_keyword_a_tracker_passes(pid: str) -> None:
    """The keywords the build-time check asks for are those the family's tracker passes."""
    problem = get(pid)
    passed = problem.new_tracker().recommend_options or {}
    assert set(passed) <= set(RECOMMEND_KEYWORDS.get(problem.family, ())), (pid, passed)


def test_option_types_are_checked_when_a_method_is_registered() -> None:
    def factory(spec, seed, n=1):  # type: ignore[no-untyped-def]
        return RandomEvaluate(spec.space, seed)

    with pytest.raises(InvalidInputError) as info:
        register_method("zz-type-int", "levelset", "t", options=[Option("n", int, 1)])(factory)
    text = str(info.value)
    assert "option 'n' has type int, not a string (write 'int')" in text
    assert all(repr(w) in text for w in TYPE_WORDS)
    with pytest.raises(InvalidInputError, match="'integer' is not a type word .did you mean 'int'"):
        register_method("zz-type-word", "levelset", "t", options=[Option("n", "integer", 1)])
    with pytest.raises(InvalidInputError, match="'flaot' is not a type word"):
        register_method("zz-type-word", "levelset", "t", options=[Option("n", "int | flaot")])
    # a throw-away family (test_web creates a study of every levelset method registered)
    register_method("zz-type-ok", "zz-fam", "t", options=[Option("n", "int | None", 1)])(factory)
    problem = Problem("zz-fam/x", "zz-fam", get(TOY_LS).space)
    with pytest.raises(InvalidInputError, match=re.escape("must be int | None, got 1.5")):
        make_policy("zz-type-ok", problem, 0, n=1.5)
    make_policy("zz-type-ok", problem, 0, n=None)


# -- docs/methods.md, as written ------------------------------------------------------------------
def test_the_worked_example_runs_as_written(docs_dir: Path) -> None:
    """The study (a child interpreter: it imports emc as a user's script does), the bench from
    the command line (in this process) and from Python (a child, whose workers may spawn)."""
    for name in ("coating_study.py", "compare.py"):
        (docs_dir / name).write_text(_block(f"# {name}"))
    study = subprocess.run([sys.executable, "coating_study.py"], cwd=docs_dir, env=_env(),
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert study.returncode == 0, study.stderr
    iteration, n_upper = map(int, study.stdout.split())
    assert iteration == 4  # 6 answers, of which the 2 random initial points are not counted
    assert 0 < n_upper < 31 * 21

    commands = _block("boloop bench run --problem levelset/sinusoidal", "```bash")
    for command in commands.replace("\\\n", " ").strip().splitlines():
        res = run_cli(shlex.split(command)[1:], cwd=docs_dir)
        assert res.returncode == 0, (command, res.stderr)
    assert "| emc | 3 | 40 |" in res.stdout and "| emc?n_initial=5 | 3 | 40 |" in res.stdout
    assert "| randomized-straddle | 3 | 40 |" in res.stdout

    compare = subprocess.run([sys.executable, "compare.py"], cwd=docs_dir, env=_env(),
                             capture_output=True, text=True, timeout=300)  # fmt: skip
    assert compare.returncode == 0, compare.stderr
    assert "| emc | 3 | 40 |" in compare.stdout
    # the Python sweep and the command line name the method alike and give the same rows
    cli_rows = [r for r in _rows(docs_dir / "out" / "emc") if r["method"] != "emc?n_initial=5"]
    assert _rows(docs_dir / "out" / "emc-py") == cli_rows
