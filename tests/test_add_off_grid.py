"""A measurement added at a point inside the bounds but off the grid (a newcomer typed
``temperature=231`` on a grid of even values and read "points [0] are outside the space"): the
refusal says the point is not on the grid and names the nearest grid values of each offending
parameter; nothing is stored."""

from __future__ import annotations

import json

import pytest

from boloop.errors import OutOfSpaceError
from boloop.spaces import CandidateSet, SafeSpace
from boloop.study import create_study, load_study
from cli_runner import assert_refused, run_cli

SPACE = {
    "threshold": 0.5,
    "parameters": [
        {"name": "temperature", "low": 150.0, "high": 250.0, "grid": 26},  # 150, 154, ..., 250
        {"name": "time_min", "low": 10.0, "high": 60.0, "grid": 11},  # 10, 15, ..., 60
    ],
}


def test_a_table_says_which_option_is_nearest():
    table = CandidateSet([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]], names=["a", "b"])
    assert not table.is_grid()
    assert CandidateSet.grid([[0, 1], [0, 2]], 3, names=["a", "b"]).is_grid()
    msg = table.describe_miss([1.0, 20.0])  # both values occur, not together
    assert "not one of the 3 options" in msg and "nearest" in msg
    msg = table.describe_miss([1.5, 10.0])
    assert "a=1.5 is not a value of any option (nearest: 1 or 2)" in msg
    assert "b=" not in msg.split(":", 1)[1]


# -- the safe family: its actions are a grid too ---------------------------------------------------
SAFE_SPACE = {
    "monotone": "dose",
    "h": 0.8,
    "parameters": [
        {"name": "dose", "low": 0.0, "high": 1.0, "grid": 6},  # 0, 0.2, ..., 1
        {"name": "weight", "low": 0.0, "high": 1.0, "grid": 9},  # 0, 0.125, ..., 1
    ],
}


def test_a_safe_study_refuses_an_off_grid_measurement(tmp_path):
    """A safe study's actions are a grid: a measurement between grid values (inside the bounds)
    is refused naming the nearest grid values, below the limit or above it, with nothing stored
    (it used to be stored and fed to the models off the grid; one above the limit was refused
    only by the policy, as "initial_data has a point that is not a grid action")."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    study = create_study(
        "s", "m-safeopt", SAFE_SPACE, storage=url, seed=0, fit_hyperparameters=False
    )
    with pytest.raises(OutOfSpaceError) as err:
        study.add({"dose": 0.2, "weight": 0.3}, {"f": 0.2, "g": 0.3})
    msg = str(err.value)
    assert "dose=0.2, weight=0.3 is not on the grid" in msg
    assert "weight=0.3 is not a grid value (nearest: 0.25 or 0.375)" in msg
    assert "dose=0.2 is not" not in msg  # a grid value: not blamed
    with pytest.raises(
        OutOfSpaceError, match=r"dose=0\.5 is not a grid value \(nearest: 0\.4 or 0\.6\)"
    ):
        study.add({"dose": 0.5, "weight": 0.25}, {"f": 0.2, "g": 0.9})  # above h = 0.8 as well
    assert study.n_answered == 0 and study.history() == []
    assert load_study("s", storage=url).n_answered == 0
    study.add({"dose": 0.2, "weight": 0.25}, {"f": 0.2, "g": 0.3})  # a grid action: taken
    assert load_study("s", storage=url).history()[0]["params"] == {"dose": 0.2, "weight": 0.25}


#: (method, space, value, an off-grid point: its words, the grid value not blamed; a point off
#: the grid in every parameter: its words; a grid point)
CLI_CASES = {
    "levelset": (
        "randomized-straddle",
        SPACE,
        "0.31",
        ("temperature=231,time_min=20", ("temperature=231", "230", "234"), "time_min=20"),
        ("temperature=231,time_min=22", ("temperature=231", "time_min=22", "20", "25")),
        "temperature=230,time_min=20",
    ),
    "safe": (
        "m-safeopt",
        SAFE_SPACE,
        "f=0.2,g=0.3",
        ("dose=0.3,weight=0.5", ("dose=0.3", "0.2", "0.4"), "weight=0.5"),
        ("dose=0.3,weight=0.3", ("dose=0.3", "weight=0.3", "0.25", "0.375")),
        "dose=0.4,weight=0.5",
    ),
}


@pytest.mark.parametrize("case", sorted(CLI_CASES))
def test_an_off_grid_add_names_the_nearest_grid_values(tmp_path, case):
    """Level set (a CandidateSet grid) and safe (a SafeSpace): the same refusal on the command
    line, naming only the parameters off the grid; nothing stored; a grid point is taken."""
    method, space, value, one_off, both_off, ok_point = CLI_CASES[case]
    one_off, words, on_grid_value = one_off
    both_off, words2 = both_off
    (tmp_path / "space.json").write_text(json.dumps(space))
    create = ["study", "create", "r", "--method", method, "--space", "space.json"]
    assert run_cli([*create, "--seed", "1"], cwd=tmp_path).returncode == 0
    res = run_cli(["study", "add", "r", one_off, value], cwd=tmp_path)
    line = assert_refused(res, "not on the grid", *words)
    assert f"{on_grid_value} is not" not in line.split("grid: ", 1)[1]  # a grid value: not blamed
    assert "points [0]" not in line
    assert_refused(run_cli(["study", "add", "r", both_off, value], cwd=tmp_path), *words2)
    status = run_cli(["study", "status", "r", "--json"], cwd=tmp_path)
    assert json.loads(status.stdout)["answered"] == 0  # nothing stored
    ok = run_cli(["study", "add", "r", ok_point, value], cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr


def test_safe_space_actions_and_misses():
    """index_of finds the flat action of (s, x); a table of x rows (not a grid) whose values all
    occur but not together gets the nearest action."""
    sp = SafeSpace([0.0, 0.5, 1.0], [[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]], names=["s", "a", "b"])
    assert sp.index_of(sp.points).tolist() == list(range(sp.n))
    found = sp.index_of([[0.5, 2.0, 20.0], [0.4, 2.0, 20.0], [0.5, 2.0, 30.0]])
    assert found.tolist() == [4, -1, -1]  # (s_1, x_1); s off the grid; a row of no x
    assert sp.contains([[1.0, 3.0, 30.0]]).tolist() == [True]
    msg = sp.describe_miss([0.5, 2.0, 30.0])
    assert msg.startswith("s=0.5, a=2, b=30 is not one of the 9 options: no option has")
    assert "nearest: s=0.5, a=" in msg
    msg = sp.describe_miss([0.7, 1.5, 10.0])
    assert "s=0.7 is not a value of any option (nearest: 0.5 or 1)" in msg
    assert (
        "a=1.5 is not a value of any option (nearest: 1 or 2)" in msg
        and "b=" not in msg.split(":", 1)[1]
    )
