"""A newcomer's trial of the preference family: every bad input is refused when the method is
built, with an :class:`InvalidInputError` that says what is wrong, instead of a raw numpy error at
the first ``ask``."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from boloop.algorithms.preference import (
    EUBO,
    MAX_OPTIONS,
    MRLPF,
    DoubleThompsonDuels,
    MaxMinLCB,
    RandomDuels,
    RegretAwareEUBO,
)
from boloop.errors import InvalidInputError
from boloop.gp import SquaredExponential
from boloop.spaces import Box, CandidateSet
from cli_runner import assert_refused, run_cli

OPTIONS = np.linspace(0.0, 1.0, 6)[:, None]


def _build(cls, candidates=OPTIONS, **kw):
    if cls is MRLPF:
        kw.setdefault("horizon", 20)
    return cls(candidates, seed=0, **kw)


# -- 2. tie_tol and the other numeric options ------------------------------------------------------
@pytest.mark.parametrize("cls", [MRLPF, MaxMinLCB, RandomDuels, EUBO, RegretAwareEUBO])
@pytest.mark.parametrize("bad", [-1e-3, math.nan, math.inf, "abc", None, True])
def test_a_bad_tie_tol_is_refused_at_construction(cls, bad):
    with pytest.raises(InvalidInputError, match="tie_tol"):
        _build(cls, tie_tol=bad)


@pytest.mark.parametrize("cls", [MRLPF, MaxMinLCB, RandomDuels, EUBO, RegretAwareEUBO])
def test_a_good_tie_tol_still_asks(cls):
    for tol in (0.0, 1e-12, 0.5):
        pol = _build(cls, tie_tol=tol)
        q = pol.ask()
        pol.tell(q.id, 0)
        assert pol.ask().a_index is not None


@pytest.mark.parametrize(
    "cls, option, bad",
    [
        (MRLPF, "lam", "abc"),
        (MRLPF, "delta", 1.5),
        (MRLPF, "kappa", -1.0),
        (MRLPF, "B", math.nan),
        (MRLPF, "horizon", "abc"),
        (MaxMinLCB, "beta", "abc"),
        (MaxMinLCB, "sigma_reg", "abc"),
        (RandomDuels, "n_candidates", 2.5),
        (EUBO, "n_candidates", "many"),
        (EUBO, "exploit", "abc"),
        (EUBO, "min_weight", "abc"),
        (EUBO, "max_models", "abc"),
        (EUBO, "plausible_beta", math.nan),
        (DoubleThompsonDuels, "plausible_beta", -2.0),
    ],
)
def test_other_numeric_options_are_checked_with_a_clear_error(cls, option, bad):
    with pytest.raises(InvalidInputError, match=option):
        _build(cls, **{option: bad})


def test_mrlpf_theory_sigma_reg_needs_a_positive_kappa():
    with pytest.raises(InvalidInputError, match="kappa"):
        _build(MRLPF, sigma_reg="theory", kappa=-2.0)
    pol = _build(MRLPF, sigma_reg="theory", kappa=2.0)
    assert pol.sigma_regs[0] == pytest.approx(0.1)


# -- 3. fewer than two options, or identical options ------------------------------------------------
ALL = [MRLPF, MaxMinLCB, RandomDuels, EUBO, RegretAwareEUBO, DoubleThompsonDuels]


@pytest.mark.parametrize("cls", ALL)
def test_a_single_option_is_refused(cls):
    with pytest.raises(InvalidInputError, match="at least 2 different options"):
        _build(cls, candidates=np.array([[0.3, 0.7]]))


@pytest.mark.parametrize("cls", ALL)
def test_identical_options_are_refused_naming_the_first_pair(cls):
    X = np.array([[0.1, 0.2], [0.5, 0.5], [0.9, 0.1], [0.5, 0.5], [0.1, 0.2], [0.3, 0.3]])
    with pytest.raises(InvalidInputError, match=r"options 1 and 3 .*\[0\.5, 0\.5\]") as err:
        _build(cls, candidates=X)
    assert "2 of the 6 options repeat" in str(err.value)


@pytest.mark.parametrize("cls", ALL)
def test_two_different_options_duel_each_other(cls):
    pol = _build(cls, candidates=np.array([[0.0, 1.0], [1.0, 0.0]]))
    for _ in range(4):
        q = pol.ask()
        assert {q.a_index, q.b_index} <= {0, 1}
        pol.tell(q.id, 0)
    assert pol.recommend_index() in (0, 1)


def test_a_study_of_a_table_with_a_repeated_row_is_refused_and_stores_nothing(tmp_path):
    from boloop.study import create_study

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    table = {"candidates": {"columns": ["sugar", "flour"], "rows": [[1, 2], [3, 4], [1, 2]]}}
    with pytest.raises(InvalidInputError, match=r"options 0 and 2 .*identical"):
        create_study("cake", "eubo-regret", table, storage=url, seed=0)
    assert not (tmp_path / "lab.db").exists() or not _study_names(url)


def _study_names(url):
    from boloop.study.storage import open_storage

    return [n for n, _ in open_storage(url, create=False).study_names()]


# -- 1. an option set too large for the option-by-option matrices ----------------------------------
def test_max_options_is_a_documented_size_of_a_few_thousand_at_most():
    assert 1000 <= MAX_OPTIONS <= 2000
    for cls in ALL:
        assert "MAX_OPTIONS" in (cls.__doc__ or "") or "MAX_OPTIONS" in (
            cls.__init__.__doc__ or ""
        ), cls.__name__


@pytest.mark.parametrize("cls", ALL)
def test_one_option_over_the_limit_is_refused_at_construction(cls):
    X = np.linspace(0.0, 1.0, MAX_OPTIONS + 1)[:, None]
    with pytest.raises(InvalidInputError) as err:
        _build(cls, candidates=X)
    msg = str(err.value)
    assert f"{MAX_OPTIONS + 1} options" in msg and f"limit is {MAX_OPTIONS}" in msg
    assert "coarser grid" in msg and "table" in msg


@pytest.mark.parametrize("cls", [MRLPF, MaxMinLCB, RandomDuels])
def test_the_limit_itself_is_accepted(cls):
    X = np.linspace(0.0, 1.0, MAX_OPTIONS)[:, None]
    assert _build(cls, candidates=X).m == MAX_OPTIONS


def test_a_grid_of_20_points_per_axis_in_3_d_says_how_many_points_per_axis_fit():
    with pytest.raises(InvalidInputError, match="8000 options") as err:
        _build(RegretAwareEUBO, candidates=CandidateSet.grid([[0, 1]] * 3, 20))
    per_axis = int(np.floor(MAX_OPTIONS ** (1 / 3) + 1e-9))
    assert f"at most {per_axis} points per axis for 3 parameters" in str(err.value)


def test_too_many_box_candidates_are_refused_naming_n_candidates():
    with pytest.raises(InvalidInputError, match=f"n_candidates={MAX_OPTIONS + 1}"):
        _build(MaxMinLCB, candidates=Box([0, 0], [1, 1]), n_candidates=MAX_OPTIONS + 1)


def test_study_create_of_three_box_parameters_gets_a_grid_the_methods_take(tmp_path):
    """The newcomer's study: three parameters with bounds and no grid got the family's default
    grid of 20 points per axis (8,000 options) and ran out of memory. The default grid is now as
    fine as the preference methods' limit allows (11 per axis: 1,331 options); a grid asked for
    explicitly beyond the limit is refused, saying so, with nothing stored."""
    from boloop.study import list_studies, load_study

    space = {"parameters": [{"name": n, "low": 0, "high": 1} for n in ("sugar", "flour", "egg")]}
    (tmp_path / "cake.json").write_text(json.dumps(space))
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    env = {**os.environ, "BOLOOP_STORAGE": url}
    argv = ["study", "create", "cake", "--space", "cake.json", "--family", "preference"]
    res = run_cli(argv, cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stderr
    study = load_study("cake", storage=url)
    assert [p["grid"] for p in study.config["space"]["parameters"]] == [11, 11, 11]
    assert study.ask().kind == "compare"
    space["parameters"] = [{**p, "grid": 20} for p in space["parameters"]]
    (tmp_path / "fine.json").write_text(json.dumps(space))
    argv = ["study", "create", "fine", "--space", "fine.json", "--family", "preference"]
    res = run_cli(argv, cwd=tmp_path, env=env)
    assert_refused(res, "8000 options", f"limit is {MAX_OPTIONS}", "points per axis")
    assert [s["name"] for s in list_studies(storage=url)] == ["cake"]


def test_the_family_table_limits_the_default_grid_to_the_methods_limit():
    from boloop.algorithms.families import family_traits

    assert family_traits("preference").max_default_grid_points == MAX_OPTIONS


# -- 6. describe() and a study's status show only the settings a method uses -----------------------
ESTIMATOR_SETTINGS = ("lam", "regularizer", "normalize_loss")


@pytest.mark.parametrize("cls", [EUBO, RegretAwareEUBO, DoubleThompsonDuels])
def test_eubo_and_dts_describe_no_logistic_estimator_and_no_unused_kernel(cls):
    fitted = _build(cls).describe()
    for key in (*ESTIMATOR_SETTINGS, "kernel"):
        assert key not in fitted, key
    assert fitted["kernel_fitted"] is True
    assert fitted["lengthscale_prior"] == "flat" and fitted["lengthscale_cap"] is True
    assert {m["lengthscale"] for m in fitted["models"]} <= set(fitted["lengthscales"])
    fixed = _build(cls, kernel=SquaredExponential(0.3)).describe()
    assert "lengthscale=0.3" in fixed["kernel"] and fixed["kernel_fitted"] is False
    assert "models" not in fixed and not set(ESTIMATOR_SETTINGS) & set(fixed)


def test_dts_describes_no_setting_of_eubos_pair_score():
    d = _build(DoubleThompsonDuels).describe()
    for key in ("exploit", "optimism", "exploit_schedule", "exploit_last", "model_choice"):
        assert key not in d, key
    assert d["plausible_beta"] == 2.0
    assert _build(RegretAwareEUBO).describe()["exploit"] == 1.0


@pytest.mark.parametrize("cls", [MRLPF, MaxMinLCB, RandomDuels])
def test_the_logistic_estimator_methods_still_describe_it(cls):
    d = _build(cls, lam=0.1).describe()
    assert d["lam"] == 0.1 and d["regularizer"] == "rkhs" and "kernel" in d


def test_a_preference_study_status_lists_only_settings_the_method_uses(tmp_path):
    from boloop.study import create_study

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    table = {"candidates": {"columns": ["sugar"], "rows": [[0.1], [0.5], [0.9], [0.3]]}}
    study = create_study("cake", "eubo-regret", table, storage=url, seed=0)
    q = study.ask()
    study.tell(q.id, 0)
    settings = study.status()["settings"]
    assert "exploit" in settings and "models" in settings
    for key in (*ESTIMATOR_SETTINGS, "kernel"):
        assert key not in settings, key


# -- 4. a typo in a numeric column of a CSV table ---------------------------------------------------
RECIPES = """name,sugar,flour,butter
plain,0.2,0.5,0.50

rich,0.4,0.6,0.75o
light,0.1,0.4,0.25
sweet,0.6,0.5,0.40
"""


def test_a_typo_in_a_numeric_csv_column_names_its_line_column_and_cell(tmp_path):
    from boloop.study import create_study

    (tmp_path / "recipes.csv").write_text(RECIPES)
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    with pytest.raises(InvalidInputError) as err:
        create_study("cake", "eubo-regret", str(tmp_path / "recipes.csv"), storage=url, seed=0)
    msg = str(err.value)
    assert "line 4" in msg and "column 'butter'" in msg and "'0.75o'" in msg
    assert "3 of the column's 4 values" in msg
    env = {**os.environ, "BOLOOP_STORAGE": url}
    argv = ["study", "create", "cake", "--space", "recipes.csv", "--family", "preference"]
    assert_refused(run_cli(argv, cwd=tmp_path, env=env), "line 4", "'butter'", "'0.75o'")
    assert not (tmp_path / "lab.db").exists()


def test_a_name_column_still_names_the_options_even_with_a_numeric_looking_name(tmp_path):
    from boloop.study import create_study

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    for second in ("rich", "1984"):  # one name of four looks like a number: still the names
        names = ["plain", second, "light", "sweet"]
        path = tmp_path / f"{second}.csv"
        path.write_text(RECIPES.replace("0.75o", "0.75").replace("rich", second))
        study = create_study(f"cake-{second}", "eubo-regret", str(path), storage=url, seed=0)
        assert study.names == ["sugar", "flour", "butter"]
        q = study.ask()
        assert q.a_label in names and q.b_label in names


# -- 5. benchmarks/preference_peers.py: its table and BoTorch's warnings ----------------------------
def _peers_benchmark():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "preference_peers.py"
    spec = importlib.util.spec_from_file_location("preference_peers_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("duels", [20, 30])
def test_the_peers_table_header_separator_and_rows_have_as_many_cells(duels, capsys):
    bench = _peers_benchmark()
    argv = ["--duels", str(duels), "--seeds", "1", "--problems", "preference/toy"]
    bench.main([*argv, "--methods", "random", "--no-peer"])
    table = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("|")]
    assert len(table) == 3
    widths = {ln.count("|") for ln in table}
    assert widths == {6 + (duels >= 25)}, table
    assert all(cell.strip() for ln in table for cell in ln.strip("|").split("|")), table


def test_the_peers_warnings_are_counted_not_printed(capsys):
    import warnings
    from collections import Counter

    bench = _peers_benchmark()
    counts = Counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning that escaped the block would raise here
        with bench.counting_warnings(counts):
            for _ in range(3):
                warnings.warn("optimiser stopped", RuntimeWarning, stacklevel=1)
            warnings.warn("jitter added", UserWarning, stacklevel=1)
    assert counts == Counter({"RuntimeWarning": 3, "UserWarning": 1})
    line = bench.warnings_summary(counts, 2)
    assert "3 RuntimeWarning, 1 UserWarning" in line and "\n" not in line
    assert capsys.readouterr().err == ""


def test_the_peer_runs_without_a_warning_on_stderr_and_ends_with_the_summary(capfd):
    pytest.importorskip("botorch")
    bench = _peers_benchmark()
    argv = ["--duels", "4", "--seeds", "1", "--problems", "preference/toy", "--methods"]
    bench.main(argv)
    out, err = capfd.readouterr()
    assert "Warning" not in err
    assert out.strip().splitlines()[-1].startswith("BoTorch warnings silenced in the peer's 1 run")


def test_a_grid_too_large_to_build_is_refused_before_it_is_built(tmp_path):
    """Six parameters of 20 points per axis would be 64 million grid points, made before any
    method's own limit could refuse them; the space file is refused first, naming the count
    and each parameter's points per axis, and nothing is stored."""
    space = {"parameters": [{"name": f"p{i}", "low": 0, "high": 1, "grid": 20} for i in range(6)]}
    (tmp_path / "big.json").write_text(json.dumps(space))
    env = {**os.environ, "BOLOOP_STORAGE": f"sqlite:///{tmp_path / 'lab.db'}"}
    argv = ["study", "create", "big", "--space", "big.json", "--family", "preference"]
    res = run_cli(argv, cwd=tmp_path, env=env)
    assert_refused(res, "64,000,000 points", "p0: 20", "smaller 'grid'")
    assert not (tmp_path / "lab.db").exists()


def test_a_finished_mrlpf_describes_its_last_round_not_one_past_it():
    from boloop.algorithms.preference import MRLPF

    X = np.random.default_rng(0).random((20, 2))
    pol = MRLPF(X, horizon=10, seed=0)
    assert pol.describe()["round"] == 1 and not pol.describe()["finished"]
    for _ in range(10):
        q = pol.ask()
        pol.tell(q.id, 0)
    d = pol.describe()
    assert d["round"] == len(d["schedule"]) and d["finished"]


def test_a_first_column_of_distinct_mostly_numeric_ids_names_the_options(tmp_path):
    """Sample ids such as 101, 102, 103b, 104 in the first column are the options' names (as
    before the typo check); the same column elsewhere is a typo."""
    from boloop.study import create_study

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    ids = "sample,sugar,flour\n101,0.2,0.5\n102,0.4,0.6\n103b,0.1,0.4\n104,0.6,0.5\n"
    (tmp_path / "ids.csv").write_text(ids)
    study = create_study("ids", "eubo-regret", str(tmp_path / "ids.csv"), storage=url, seed=0)
    assert study.names == ["sugar", "flour"]
    q = study.ask()
    assert {q.a_label, q.b_label} <= {"101", "102", "103b", "104"}
    moved = "sugar,sample,flour\n0.2,101,0.5\n0.4,102,0.6\n0.1,103b,0.4\n0.6,104,0.5\n"
    (tmp_path / "moved.csv").write_text(moved)
    with pytest.raises(InvalidInputError, match="column 'sample'"):
        create_study("moved", "eubo-regret", str(tmp_path / "moved.csv"), storage=url, seed=0)
