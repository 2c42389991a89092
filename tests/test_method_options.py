"""The method table: every method of every family declares its options, and an unknown or mistyped
option is one error type (OptionError) naming the valid ones, through the API, ``boloop study
create --option`` and bench method ids."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from boloop.algorithms import list_methods, make_policy
from boloop.algorithms.registry import Option, get_method
from boloop.bench.runner import plan_runs
from boloop.errors import InvalidInputError, OptionError
from boloop.problems import get

#: one small problem per family
PROBLEMS = {
    "levelset": "levelset/toy",
    "preference": "preference/toy",
    "safe": "safe/toy",
    "expert": "expert/toy",
}
ALL = [(e.family, e.id) for e in list_methods() if e.family in PROBLEMS]
#: one method of each family for the slower command-line checks
ONE_PER_FAMILY = [
    ("levelset", "randomized-straddle"),
    ("preference", "mr-lpf"),
    ("safe", "m-safeopt"),
    ("expert", "cobol"),
]


def test_option_error_is_an_invalid_input_error() -> None:
    assert issubclass(OptionError, InvalidInputError)


def test_every_family_has_methods_in_the_table() -> None:
    assert {f for f, _ in ALL} == set(PROBLEMS)


@pytest.mark.parametrize(("family", "method"), ALL)
def test_unknown_option_names_the_valid_ones(family: str, method: str) -> None:
    entry = get_method(method, family)
    with pytest.raises(OptionError) as info:
        make_policy(method, get(PROBLEMS[family]), 0, zz_not_an_option=1)
    msg = str(info.value)
    assert "'zz_not_an_option'" in msg and method in msg
    for opt in entry.options:
        assert f"{opt.name} ({opt.type}" in msg


@pytest.mark.parametrize(("family", "method"), ALL)
def test_every_declared_option_is_taken_by_the_factory(family: str, method: str) -> None:
    """Each option at its declared default builds the policy (the table cannot list an option the
    factory would reject or drop with a TypeError)."""
    problem = get(PROBLEMS[family])
    for opt in get_method(method, family).options:
        assert opt.doc, f"{family}/{method}: option {opt.name} has no doc"
        if opt.default is None:
            continue
        policy = make_policy(method, problem, 0, **{opt.name: opt.default})
        assert policy.family == family


@pytest.mark.parametrize(("family", "method"), ALL)
def test_mistyped_option_is_refused(family: str, method: str) -> None:
    options = get_method(method, family).options
    checked = [o for o in options if not o.accepts(object())]
    if not checked:
        pytest.skip("no typed option")
    opt = checked[0]
    bad = next(v for v in ("zz-not-valid", 2.5, [1, "x"], object()) if not opt.accepts(v))
    with pytest.raises(
        OptionError, match=f"option '{opt.name}' of method '{method}' \\({family}\\) must be"
    ):
        make_policy(method, get(PROBLEMS[family]), 0, **{opt.name: bad})


@pytest.mark.parametrize(
    ("family", "method", "options"),
    [
        ("levelset", "randomized-straddle", {"n_initial": 2.5}),
        ("levelset", "straddle", {"sqrt_beta": "three"}),
        ("preference", "mr-lpf", {"lam": "small"}),
        ("preference", "maxminlcb", {"allow_self_duel": 1}),
        ("safe", "m-safeopt", {"sqrt_beta_f": "3"}),
        ("safe", "predvar", {"keep_certified": "yes"}),
        ("expert", "cobol", {"eta": "high"}),
        ("expert", "gp-lcb", {"n_candidates": 10.0}),
    ],
)
def test_typical_type_mistakes(family: str, method: str, options: dict) -> None:
    with pytest.raises(OptionError, match="valid options"):
        make_policy(method, get(PROBLEMS[family]), 0, **options)


def test_safe_family_no_longer_drops_a_misspelt_safety_setting() -> None:
    with pytest.raises(OptionError, match="sqrt_beta_f"):
        make_policy("m-safeopt", get("safe/toy"), 0, sqrt_beta=2.0)


def test_ints_are_valid_floats_and_kernel_fit_stays_valid() -> None:
    assert make_policy("straddle", get("levelset/toy"), 0, sqrt_beta=2).family == "levelset"
    assert make_policy("mr-lpf", get("preference/toy"), 0, kernel="fit").family == "preference"


def test_option_type_words() -> None:
    opt = Option("x", "float | None", 1.0, "doc")
    assert opt.accepts(1) and opt.accepts(1.5) and opt.accepts(None)
    assert not opt.accepts(True) and not opt.accepts("1")
    assert Option("k", "int", 1).accepts(3) and not Option("k", "int", 1).accepts(3.0)
    assert Option("a", "Any").accepts(object())


@pytest.mark.parametrize(("family", "method"), ONE_PER_FAMILY)
def test_bench_method_id_refuses_unknown_option(family: str, method: str) -> None:
    with pytest.raises(OptionError, match="valid options"):
        plan_runs([PROBLEMS[family]], [f"{method}?zz_not_an_option=1"], [0], 2)
    with pytest.raises(OptionError, match="must be"):
        name = get_method(method, family).options[0].name
        plan_runs([PROBLEMS[family]], [f"{method}?{name}=[1,2]"], [0], 2)


def _boloop(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "boloop.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_bench_run_cli_refuses_unknown_option(tmp_path: Path) -> None:
    res = _boloop(
        "bench",
        "run",
        "--problem",
        "preference/toy",
        "--method",
        "mr-lpf?lamda=0.1",
        "--seeds",
        "1",
        "--budget",
        "2",
        "--out",
        str(tmp_path / "out"),
        cwd=tmp_path,
    )
    assert res.returncode == 2, res.stderr
    assert "unknown option 'lamda'" in res.stderr and "lam (float" in res.stderr


@pytest.mark.parametrize(("family", "method"), ONE_PER_FAMILY)
def test_study_create_refuses_unknown_and_mistyped_options(
    tmp_path: Path, family: str, method: str
) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    base = ["study", "create", "s", "--storage", url, "--method", method]
    base += ["--problem", PROBLEMS[family], "--seed", "0"]
    res = _boloop(*base, "--option", "zz_not_an_option=1", cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert "unknown option 'zz_not_an_option'" in res.stderr and "valid options" in res.stderr
    name = get_method(method, family).options[0].name
    res = _boloop(*base, "--option", f'{name}={{"a": 1}}', cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert f"option '{name}' of method '{method}' ({family}) must be" in res.stderr
    listed = _boloop("study", "list", "--storage", url, "--json", cwd=tmp_path)
    assert '"s"' not in listed.stdout  # nothing stored
