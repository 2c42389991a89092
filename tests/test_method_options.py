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
from cli_runner import run_cli

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


def test_none_in_a_method_id_sets_an_optional_option_to_none() -> None:
    """``none``/``null`` in an id is None (as JSON's null in ``study create --option``): an
    optional option (``float | None``) can be switched off from the command line."""
    from boloop.problems import parse_problem_id

    assert parse_problem_id("cobol?agreement_level=none&harm_budget=NULL&eta=2") == (
        "cobol",
        {"agreement_level": None, "harm_budget": None, "eta": 2},
    )
    specs, _ = plan_runs(["expert/ackley4?a=2"], ["cobol?agreement_level=none"], [0], 2)
    assert [s.method for s in specs] == ["cobol?agreement_level=none"]
    opt = get_method("cobol", "expert").option("agreement_level")
    assert opt is not None and "None" in opt.type and opt.accepts(None)


def test_numbers_separated_by_commas_in_a_method_id_are_a_sequence_option() -> None:
    """``variances=1,4`` in an id is the list ``[1, 4]``, so an option that takes a sequence can
    be given on the command line; text with commas that are not all numbers stays text."""
    from boloop.problems import parse_problem_id

    assert parse_problem_id("eubo-regret?variances=1,4.5&x=a,b&y=1,b") == (
        "eubo-regret",
        {"variances": [1, 4.5], "x": "a,b", "y": "1,b"},
    )
    specs, _ = plan_runs(["preference/toy"], ["eubo-regret?variances=1,4"], [0], 2)
    assert [s.method for s in specs] == ["eubo-regret?variances=1,4"]
    with pytest.raises(OptionError, match="must be"):
        plan_runs(["preference/toy"], ["eubo-regret?variances=1,b"], [0], 2)


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
    # the command in this process (tests/cli_runner.py); test_bench_run_cli_refuses_unknown_option
    # runs the real entry point
    res = run_cli([*base, "--option", "zz_not_an_option=1"], cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert "unknown option 'zz_not_an_option'" in res.stderr and "valid options" in res.stderr
    name = get_method(method, family).options[0].name
    res = run_cli([*base, "--option", f'{name}={{"a": 1}}'], cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert f"option '{name}' of method '{method}' ({family}) must be" in res.stderr
    listed = run_cli(["study", "list", "--storage", url, "--json"], cwd=tmp_path)
    assert '"s"' not in listed.stdout  # nothing stored


# -- PolicySpec: policies are built from a spec, never from a problem ------------------------------
def test_build_policy_from_a_spec_matches_make_policy_on_the_problem() -> None:
    from boloop.algorithms.registry import build_policy
    from boloop.queries import PolicySpec

    problem = get("levelset/toy")
    spec = PolicySpec(
        method="straddle",
        family="levelset",
        space=problem.space,
        settings={"threshold": problem.settings["threshold"], "kernel": problem.settings["kernel"]},
        seed=3,
        options={"sqrt_beta": 2.0},
    )
    a = build_policy(spec)
    b = make_policy("straddle", problem, 3, sqrt_beta=2.0)
    for _ in range(4):
        qa, qb = a.ask(), b.ask()
        assert qa == qb
        y = float(problem.value(qa.x[None, :])[0])
        a.tell(qa.id, y)
        b.tell(qb.id, y)
    assert a.recommend().upper.tolist() == b.recommend().upper.tolist()


def test_build_policy_validates_options_of_the_spec() -> None:
    from boloop.algorithms.registry import build_policy

    spec = get("preference/toy").policy_spec("mr-lpf", 0, lamda=0.1)
    with pytest.raises(OptionError, match="did you mean 'lam'"):
        build_policy(spec)


def test_algorithms_never_import_problems() -> None:
    import ast

    root = Path(__file__).resolve().parents[1] / "src" / "boloop" / "algorithms"
    offenders = []
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.startswith("boloop.problems")]
    assert not offenders


def test_problem_settings_name_no_method() -> None:
    from boloop.problems import list as list_problems

    methods = {e.id for e in list_methods()} - {"random"}
    for entry in list_problems():
        keys = get(entry.id).settings
        assert not [k for k in keys if any(m in k for m in methods)], entry.id


# -- the contract: Query.initial and observe(points, values) ---------------------------------------
@pytest.mark.parametrize(
    ("problem_id", "method", "n_initial"),
    [
        ("levelset/sinusoidal", "straddle", 1),
        ("safe/toy", "m-safeopt", None),
        ("expert/toy", "cobol", 3),
    ],
)
def test_initial_design_queries_are_flagged(problem_id: str, method: str, n_initial) -> None:
    from boloop.simulate import oracle_rng

    problem = get(problem_id)
    policy = make_policy(method, problem, 0)
    rng = oracle_rng(0)
    flags = []
    while policy.iteration < 3:
        q = policy.ask()
        flags.append(q.initial)
        policy.tell(q.id, problem.answer(q, rng))
    n_flagged = sum(flags)
    assert n_flagged >= 1 and flags[:n_flagged] == [True] * n_flagged  # the design comes first
    assert not any(flags[n_flagged:])
    if n_initial is not None and method != "cobol":
        assert n_flagged == n_initial


def test_initial_flag_round_trips_and_is_not_part_of_equality() -> None:
    from boloop.queries import Evaluate, query_from_dict

    q = Evaluate(id=3, x=[0.5], initial=True)
    assert q.to_dict()["initial"] is True and query_from_dict(q.to_dict()).initial is True
    assert "initial" not in Evaluate(id=3, x=[0.5]).to_dict()
    assert q == Evaluate(id=3, x=[0.5])  # a query stored before the flag still replays


@pytest.mark.parametrize(
    ("problem_id", "method", "value"),
    [
        ("levelset/toy", "straddle", 0.3),
        ("safe/toy", "m-safeopt", {"f": 0.1, "g": -0.5}),
        ("expert/toy", "gp-lcb", 1.0),
    ],
)
def test_observe_adds_a_users_measurement_without_an_iteration(problem_id, method, value) -> None:
    problem = get(problem_id)
    policy = make_policy(method, problem, 0)
    x = (
        problem.policy_spec(method).space.sample(1, seed=1)[0]
        if hasattr(problem.space, "sample")
        else problem.space.points[0]
    )
    policy.observe([x], [value])
    assert policy.iteration == 0 and policy.history == [] and policy.pending is None
    assert policy.ask().id == 0  # no query id was used


def test_observe_refuses_bad_input_and_preferences() -> None:
    from boloop.errors import AnswerTypeError

    policy = make_policy("straddle", get("levelset/toy"), 0)
    x = get("levelset/toy").space.points[0]
    with pytest.raises(InvalidInputError, match="2 values"):
        policy.observe([x], [1.0, 2.0])
    with pytest.raises(AnswerTypeError):
        policy.observe([x], [float("nan")])
    safe = make_policy("m-safeopt", get("safe/toy"), 0)
    with pytest.raises(AnswerTypeError, match="missing"):
        safe.observe([get("safe/toy").space.points[0]], [{"f": 1.0}])
    pref = make_policy("mr-lpf", get("preference/toy"), 0)
    assert not pref.accepts_measurements
    with pytest.raises(InvalidInputError, match="does not take measurements"):
        pref.observe([get("preference/toy").space.points[0]], [1.0])


def test_methods_command_lists_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    from boloop.cli import main

    assert main(["methods", "--family", "safe", "--options"]) == 0
    out = capsys.readouterr().out
    assert "safe m-safeopt:" in out and "  sqrt_beta_f (float | BetaSchedule, default 3.0): " in out
