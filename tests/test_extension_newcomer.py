"""What a researcher extending boloop with files of their own meets (a newcomer trial): one-line
refusals instead of tracebacks (a create argument given as ``--option``, a file that does not
import, a problem factory given as a method and the reverse, a misspelt problem option), id values
read by the option's declared type, ids with options in ``make_policy``, the user's file named in
a clash of ids, the mixed file versions of ``bench summary``, and the replay mismatch of a user's
edited method. Every file here is the test's own, written into ``tmp_path``."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path

import pytest

from boloop.algorithms import Option, make_policy, register_method
from boloop.bench import run_sweep
from boloop.errors import InvalidInputError, OptionError
from boloop.simulate import simulate
from boloop.study import create_study
from cli_runner import assert_refused, run_cli

SPACE = 'threshold = 0.5\n[[parameters]]\nname = "a"\nlow = 0.0\nhigh = 1.0\ngrid = 5\n'


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


# -- A: create's own arguments are not method options ---------------------------------------------
@pytest.mark.parametrize(
    "key",
    [
        p
        for p, v in inspect.signature(create_study).parameters.items()
        if v.kind is v.KEYWORD_ONLY or v.kind is v.POSITIONAL_OR_KEYWORD
    ],
)
def test_option_naming_a_create_argument_is_refused_in_one_line(tmp_path, key):
    _write(tmp_path, "sp.toml", SPACE)
    res = run_cli(
        [
            "study",
            "create",
            "s2",
            "--space",
            "sp.toml",
            "--seed",
            "1",
            "--option",
            f"{key}=2",
            "--storage",
            "memory://a",
        ],
        cwd=tmp_path,
    )
    line = assert_refused(res, f"--option {key}=", "not a method option")
    flags = {"seed": "--seed", "from_study": "--from", "method": "--method", "name": "NAME"}
    if key in flags:
        assert flags[key] in line


def test_a_method_option_cannot_take_a_name_the_entry_points_use():
    with pytest.raises(InvalidInputError, match="cannot be named 'seed'"):
        register_method("x-seeded", "levelset", "x", options=[Option("seed", "int", 0)])
    with pytest.raises(InvalidInputError, match="cannot be named 'spec'"):
        register_method("x-specced", "levelset", "x", options=[Option("spec", "str", "")])


def test_an_option_named_as_a_create_argument_still_builds_outside_a_study():
    """A method of an older release with an option ``family`` (a create_study argument, which
    only ``study create --option`` can collide with) registers and builds as before."""
    import subprocess
    import sys

    code = (
        "from boloop.algorithms import Option, make_policy, register_method\n"
        "from boloop.algorithms.toy import RandomEvaluate\n"
        "from boloop.problems import get\n"
        "@register_method('zz-fam', 'levelset', 'x', options=[Option('family', 'str', 'a')])\n"
        "def make(spec, seed, family='a'):\n"
        "    p = RandomEvaluate(spec.space, seed, threshold=0.0, sets=True)\n"
        "    p.kernel_family = family\n"
        "    return p\n"
        "print(make_policy('zz-fam', get('levelset/toy'), family='matern').kernel_family)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "matern"


# -- B, C, D: a user's problem or method file refused in one line, before any run ------------------
RING = """
from boloop.problems.toy import ToyLevelSet


def make(n=25, noise_sd=0.05, fixed_kernel=True):
    return ToyLevelSet(threshold=0.25 + 0.0 * int(n))
"""

METHOD = """
from boloop.algorithms import Option, make_policy, register_method
from boloop.algorithms.toy import RandomEvaluate


@register_method("zz-newcomer-amb", "levelset", "x", options=[Option("eps", "float", 0.05)])
def make_amb(spec, seed, eps=0.05):
    return RandomEvaluate(spec.space, seed, threshold=spec.settings["threshold"], sets=True)


def make_plain(spec, seed, eps=0.05):
    return RandomEvaluate(spec.space, seed, threshold=spec.settings["threshold"], sets=True)


def make_neither(spec=None, seed=None):
    return None if spec is None else {"not": "a policy"}
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's files, written once: a method id belongs to one function of one file."""
    folder = tmp_path_factory.mktemp("newcomer")
    _write(folder, "ring.py", RING)
    _write(folder, "m.py", METHOD)
    _write(folder, "broken.py", "import numpy\n\ndef make(n=25,,):\n    pass\n")
    _write(folder, "raises.py", "SETTINGS = {}\n\nTHRESHOLD = SETTINGS['no_such_key']\n")
    return folder


def _bench(files: Path, out: Path, problem: str, method: str):
    return run_cli(
        ["bench", "run", "--problem", problem, "--method", method, "--budget", "2",
         "--out", str(out)],
        cwd=files,
    )  # fmt: skip


@pytest.mark.parametrize(
    "problem, method, words",
    [
        # a syntax error in the problem's file, in the method's file
        ("broken.py:make", "toy-random", ["problem file 'broken.py' does not import",
                                          "SyntaxError at broken.py line 3"]),
        ("ring.py:make", "broken.py:make", ["method file 'broken.py' does not import",
                                            "SyntaxError at broken.py line 3"]),
        # an exception while the file is imported
        ("raises.py:make", "toy-random", ["problem file 'raises.py' does not import",
                                          "KeyError at raises.py line 3", "'no_such_key'"]),
        # a problem option the factory cannot convert
        ("ring.py:make?n=abc", "toy-random", ["problem 'ring.py:make?n=abc' could not be built",
                                              "ValueError at ring.py line 6", "'abc'"]),
    ],
)  # fmt: skip
def test_a_file_that_fails_is_one_line_with_its_place(files, tmp_path, problem, method, words):
    assert_refused(_bench(files, tmp_path / "out", problem, method), *words)
    assert not (tmp_path / "out").exists()  # before any run


def test_the_traceback_of_a_failing_file_is_printed_with_v(files, tmp_path):
    res = run_cli(["-v", "bench", "run", "--problem", "ring.py:make?n=abc", "--method",
                   "toy-random", "--out", str(tmp_path / "out")], cwd=files)  # fmt: skip
    assert res.returncode == 2
    assert "Traceback" in res.stderr and "int(n)" in res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith("boloop: error: problem")


@pytest.mark.parametrize(
    "problem, method, words",
    [
        # a problem's factory whose parameters all have defaults, given as a method
        ("ring.py:make", "ring.py:make", ["'ring.py:make' is a problem factory, not a method",
                                          "returns a problem (ToyLevelSet", "--problem"]),
        # a method's factory given as a problem: registered by its file, or not
        ("m.py:make_amb", "toy-random", ["'m.py:make_amb' is a method factory, not a problem",
                                         "registered as method 'zz-newcomer-amb' (levelset)",
                                         "--method"]),
        ("m.py:make_plain", "toy-random", ["'m.py:make_plain' is a method factory, not a problem",
                                           "spec and seed", "--method"]),
        # a factory that builds neither, as a problem
        ("m.py:make_neither", "toy-random", ["'m.py:make_neither' must return a boloop.problems",
                                             "got NoneType"]),
    ],
)  # fmt: skip
def test_a_factory_of_the_other_kind_is_refused_saying_what_it_is(
    files, tmp_path, problem, method, words
):
    assert_refused(_bench(files, tmp_path / "out", problem, method), *words)
    assert not (tmp_path / "out").exists()


def test_a_misspelt_problem_option_names_the_closest_and_the_valid_ones(files, tmp_path):
    assert_refused(
        _bench(files, tmp_path / "out", "ring.py:make?nosie_sd=0.1", "toy-random"),
        "unknown option 'nosie_sd' for problem 'ring.py:make'",
        "did you mean 'noise_sd'?",
        "n (default 25), noise_sd (default 0.05), fixed_kernel (default True)",
    )


@pytest.mark.parametrize(
    ("problem_id", "closest"),
    [
        ("preference/random-table?nn=5", "did you mean 'n'?"),
        ("preference/yelp?usr=3", "did you mean 'user'?"),
        ("preference/ackley?lengthscal=0.2", "did you mean 'lengthscale'?"),
    ],
)
def test_the_librarys_problems_that_pass_options_on_name_the_closest_too(problem_id, closest):
    """The registered wrappers that pass ``**options`` to the builder read its signature (a
    reviewer's finding: they said "could not be built: TypeError at .../preference.py")."""
    from boloop.problems import get

    with pytest.raises(InvalidInputError) as info:
        get(problem_id)
    assert closest in str(info.value) and "valid options:" in str(info.value)
    assert "TypeError" not in str(info.value)


# -- E, F: id values read by the option's type; make_policy takes ids with options ----------------
def _make_moded(spec, seed, mode="ok", tag=None, anything=None):  # type: ignore[no-untyped-def]
    from boloop.algorithms.toy import RandomEvaluate

    policy = RandomEvaluate(spec.space, seed, threshold=spec.settings["threshold"], sets=True)
    policy.given = {"mode": mode, "tag": tag, "anything": anything}  # what the factory got
    return policy


@pytest.fixture(scope="module", autouse=True)
def _moded() -> None:
    """A method with a ``str`` option (registered when the tests run, not at collection: the
    tests over every method stay over the library's)."""
    register_method(
        "zz-newcomer-moded",
        "levelset",
        "a str option",
        options=[
            Option("mode", "str", "ok", "a word"),
            Option("tag", "str | None", None, "a word or none"),
            Option("anything", "Any", None, "any value"),
        ],
    )(_make_moded)


@pytest.mark.parametrize(
    "text, mode",
    [("1", "1"), ("true", "true"), ("nan", "nan"), ("none", "none"), ("1,2", "1,2"), ("x", "x")],
)
def test_a_str_option_in_an_id_keeps_the_text_as_written(text, mode):
    from boloop.problems import get

    problem = get("levelset/toy")
    policy = make_policy(f"zz-newcomer-moded?mode={text}", problem, 0)
    assert policy.given["mode"] == mode
    trace = simulate(f"zz-newcomer-moded?mode={text}", problem, 2, 0)
    assert trace.method == f"zz-newcomer-moded?mode={text}"


def test_id_values_other_types_read_as_literals():
    from boloop.problems import get

    problem = get("levelset/toy")
    given = make_policy("zz-newcomer-moded?tag=none&anything=1", problem, 0).given
    assert given["tag"] is None and given["anything"] == 1  # None is a str | None; Any: literal
    assert make_policy("zz-newcomer-moded?tag=3", problem, 0).given["tag"] == "3"
    with pytest.raises(OptionError, match="must be int"):  # an int option never takes the text
        make_policy("randomized-straddle?n_initial=abc", problem, 0)


def test_a_bench_id_reads_a_str_option_by_its_type(tmp_path):
    report = run_sweep(["levelset/toy"], ["zz-newcomer-moded?mode=1"], "1", 2, tmp_path, jobs=1)
    assert not report.failed and len(report.completed) == 1


def test_make_policy_takes_options_in_the_id_as_simulate_does():
    from boloop.problems import get

    problem = get("levelset/toy")
    by_id = make_policy("zz-newcomer-moded?mode=fast", problem, 0)
    by_kw = make_policy("zz-newcomer-moded", problem, 0, mode="fast")
    assert by_id.given == by_kw.given
    with pytest.raises(InvalidInputError, match=r"options \['mode'\] are given both"):
        make_policy("zz-newcomer-moded?mode=1", problem, 0, mode="2")
    with pytest.raises(OptionError, match="unknown option 'mdoe'.*did you mean 'mode'"):
        make_policy("zz-newcomer-moded?mdoe=1", problem, 0)


def test_a_study_refuses_an_id_with_options_saying_how_to_give_them():
    with pytest.raises(InvalidInputError, match=r"given apart here.*--option mode=\.\.\."):
        create_study("s", "zz-newcomer-moded?mode=1", {"threshold": 0.5, "parameters": [
            {"name": "a", "low": 0.0, "high": 1.0, "grid": 5}]}, storage="memory://e")  # fmt: skip


# -- G: two files registering one id are named as the user knows them ---------------------------
def test_an_id_registered_by_two_files_names_both_files(tmp_path):
    text = METHOD.replace("zz-newcomer-amb", "zz-newcomer-twice")
    _write(tmp_path, "amb.py", text)
    _write(tmp_path, "amb_copy.py", text)
    res = run_cli(
        ["bench", "run", "--problem", "levelset/toy", "--method", "amb.py:make_amb",
         "amb_copy.py:make_amb", "--budget", "2", "--out", "out"],
        cwd=tmp_path,
    )  # fmt: skip
    line = assert_refused(
        res,
        "method 'zz-newcomer-twice' is already registered for family 'levelset' by make_amb in "
        "amb.py; make_amb in amb_copy.py registers it again",
    )
    assert "boloop_user_" not in line


# -- H: what a user reads points to files a user has ----------------------------------------------
def test_no_docstring_or_message_points_to_a_file_not_shipped():
    """DESIGN.md is the developers' notes, not part of the package or its docs: help() and the
    messages point to docs/... or say it in place."""
    import pydoc

    import boloop
    from boloop.problems import MetricTracker

    assert "DESIGN.md" not in pydoc.render_doc(MetricTracker)
    src = Path(boloop.__file__).parent
    naming = [str(p.relative_to(src)) for p in src.rglob("*.py") if "DESIGN.md" in p.read_text()]
    assert not naming


# -- I: a summary of rows from two versions of a problem's file says so -------------------------
def _boloop(cwd: Path, *argv: str) -> None:
    """The command in a process of its own (each version of the file is imported afresh)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    res = subprocess.run([sys.executable, "-m", "boloop.cli", *argv], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr


def test_summary_warns_when_a_problems_rows_come_from_two_versions_of_its_file(
    tmp_path, monkeypatch
):
    import shlex

    from boloop.bench import summary_table
    from boloop.bench.report import file_version_warnings

    _write(tmp_path, "ring.py", RING)
    both = ["bench", "run", "--problem", "ring.py:make", "--budget", "2", "--seeds", "2",
            "--out", "out", "--quiet", "--method"]  # fmt: skip
    _boloop(tmp_path, *both, "toy-random", "randomized-straddle")
    monkeypatch.chdir(tmp_path)
    assert file_version_warnings("out") == {}  # one version: nothing to say
    with (tmp_path / "ring.py").open("a") as fh:
        fh.write("# edited\n")
    _boloop(tmp_path, *both, "toy-random")  # only one method run again on the new version
    table = summary_table("out")
    warning = file_version_warnings("out")["ring.py:make"]
    assert warning in table
    assert "2 versions of ring.py" in warning
    assert "older version than ring.py now: randomized-straddle (seeds 0-1)" in warning
    assert "toy-random" not in warning.partition("older version")[2]
    command = warning.split("`")[1]  # the command it gives reruns the old runs
    _boloop(tmp_path, *shlex.split(command)[1:])
    assert file_version_warnings("out") == {} and "warning" not in summary_table("out")


# -- J: a study of the user's method after the user edited it ------------------------------------
EDITED = """
from boloop.algorithms import register_method
from boloop.algorithms.toy import RandomEvaluate


class Mine(RandomEvaluate):
    accepts_measurements = {accepts}

    def _propose(self):
        if {edited}:  # the edit: always the first candidate
            return self._new_evaluate(self.space.points[0], 0)
        return super()._propose()


@register_method("{mid}", "levelset", "a method of the user's, edited")
def make_mine(spec, seed):
    return Mine(spec.space, seed, threshold=spec.settings["threshold"], sets=True)
"""


def _import_version(path: Path, text: str, module: str) -> None:
    """The user's file as it is now, imported (the same function of the same file: registering
    it again replaces the method, as a restarted session importing the edited file does)."""
    import importlib.util

    path.write_text(text)
    spec = importlib.util.spec_from_file_location(module, path)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


@pytest.mark.parametrize("accepts", [True, False])
def test_a_study_of_an_edited_method_of_ones_own_says_its_code_changed(tmp_path, accepts):
    from boloop.errors import StorageError
    from boloop.study import load_study

    mid = f"zz-newcomer-edited-{str(accepts).lower()}"
    path, url = tmp_path / "mine.py", f"sqlite:///{tmp_path / 'j.db'}"
    _import_version(path, EDITED.format(accepts=accepts, edited=False, mid=mid), f"{mid}_v1")
    _write(tmp_path, "sp.toml", SPACE)
    study = create_study("s", mid, str(tmp_path / "sp.toml"), storage=url, seed=3)
    for i in range(4):
        q = study.ask()
        study.tell(q.id, 0.1 * i)
    _import_version(path, EDITED.format(accepts=accepts, edited=True, mid=mid), f"{mid}_v2")
    with pytest.raises(StorageError) as info:
        load_study("s", storage=url)
    text = str(info.value)
    assert f"method {mid!r} is not boloop's" in text and "make_mine in" in text
    assert "changed since" in text and "(a development version" not in text
    if accepts:
        call = text.rpartition(": ")[2]
        assert call == f"create_study('s-continued', from_study='s', storage={url!r})"
        assert "`boloop study create --from` cannot continue it" in text
        continued = eval(call, {"create_study": create_study})  # the advice works as given
        assert continued.n_answered == 4
        # the boloop command, a process without the user's method, says to continue from Python
        import os
        import subprocess
        import sys

        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
        res = subprocess.run(
            [sys.executable, "-m", "boloop.cli", "study", "create", "s3", "--from", "s",
             "--storage", url],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert_refused(res, f"runs method {mid!r}, which is not registered in this process",
                       "Continue it from Python", "create_study('s3', from_study='s'")  # fmt: skip
    else:
        assert "cannot carry its 4 stored answers" in text
        assert "accepts_measurements = True" in text and "docs/methods.md" in text
        with pytest.raises(InvalidInputError, match="accepts_measurements = True"):
            create_study("s2", from_study="s", storage=url)
