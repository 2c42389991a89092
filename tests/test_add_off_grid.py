"""A measurement added at a point inside the bounds but off the grid (a newcomer typed
``temperature=231`` on a grid of even values and read "points [0] are outside the space"): the
refusal says the point is not on the grid and names the nearest grid values of each offending
parameter; nothing is stored."""

from __future__ import annotations

import json

from boloop.spaces import CandidateSet
from cli_runner import assert_refused, run_cli

SPACE = {
    "threshold": 0.5,
    "parameters": [
        {"name": "temperature", "low": 150.0, "high": 250.0, "grid": 26},  # 150, 154, ..., 250
        {"name": "time_min", "low": 10.0, "high": 60.0, "grid": 11},  # 10, 15, ..., 60
    ],
}


def test_an_off_grid_add_names_the_nearest_grid_values(tmp_path):
    (tmp_path / "space.json").write_text(json.dumps(SPACE))
    create = ["study", "create", "r", "--method", "randomized-straddle", "--space", "space.json"]
    assert run_cli([*create, "--seed", "1"], cwd=tmp_path).returncode == 0
    res = run_cli(["study", "add", "r", "temperature=231,time_min=20", "0.31"], cwd=tmp_path)
    line = assert_refused(res, "not on the grid", "temperature=231", "230", "234")
    assert "time_min=20 is not" not in line.split("grid: ", 1)[1]  # a grid value: not blamed
    assert "points [0]" not in line
    res = run_cli(["study", "add", "r", "temperature=231,time_min=22", "0.31"], cwd=tmp_path)
    assert_refused(res, "temperature=231", "time_min=22", "20", "25")
    status = run_cli(["study", "status", "r", "--json"], cwd=tmp_path)
    assert json.loads(status.stdout)["answered"] == 0  # nothing stored
    ok = run_cli(["study", "add", "r", "temperature=230,time_min=20", "0.31"], cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr


def test_a_table_says_which_option_is_nearest():
    table = CandidateSet([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]], names=["a", "b"])
    assert not table.is_grid()
    assert CandidateSet.grid([[0, 1], [0, 2]], 3, names=["a", "b"]).is_grid()
    msg = table.describe_miss([1.0, 20.0])  # both values occur, not together
    assert "not one of the 3 options" in msg and "nearest" in msg
    msg = table.describe_miss([1.5, 10.0])
    assert "a=1.5 is not a value of any option (nearest: 1 or 2)" in msg
    assert "b=" not in msg.split(":", 1)[1]
