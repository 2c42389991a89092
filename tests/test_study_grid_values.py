"""Grid values as people read and type them (trial of a lab engineer, 2026-11-27).

A grid of 31 temperatures over [100, 200] has the step 10/3: its 28th value is the float
193.33333333333334. The refusal of an off-grid ``add`` suggested ``193.333``, which was refused
again (only the 15-digit value of the CSV export was taken), and the status, the history and the
JSON export printed ``183.33333333333334`` where the CSV export writes ``183.333333333333``.

Now a value names a grid value when it is that value written to fewer digits (far finer than the
grid's step), the point stored is the grid's own, every value a refusal suggests is taken when
typed back, and a study shows grid values as the space file defines them, everywhere.
"""

from __future__ import annotations

import csv
import json
import re
import uuid

import numpy as np
import pytest

from boloop.errors import OutOfSpaceError
from boloop.study import create_study, load_study
from boloop.study.space_file import params_to_point
from cli_runner import assert_refused, run_cli

COAT = {
    "threshold": 0.8,
    "parameters": [
        {"name": "temperature", "low": 100.0, "high": 200.0, "grid": 31},
        {"name": "speed", "low": 0.5, "high": 5.0, "grid": 21},
    ],
}

#: (low, high, points): grids whose steps are not round numbers (and one that is, and one whose
#: neighbouring values agree to their 6th significant digit)
GRIDS = [
    (100.0, 200.0, 31),  # 10/3
    (0.0, 10.0, 7),  # 5/3
    (-3.0, 7.7, 9),  # 1.3375
    (0.5, 5.0, 21),  # 0.225
    (1000.0, 1000.01, 11),  # 0.001: 6 digits print 1000 for all of them
    (0.0, 1e-6, 31),  # 1/3 of 1e-7
]

_NEAREST = re.compile(r"x=(\S+) is not a grid value \(nearest: (\S+)(?: or (\S+))?\)")


def _memory() -> str:
    """A storage of its own (``memory://`` URLs with one name share their studies)."""
    return f"memory://grid-values-{uuid.uuid4().hex}"


def _logged_points(study) -> list[list[float]]:
    """The points the log holds for the measurements added (not what the study shows)."""
    return [e["payload"]["x"] for e in study.events() if e["kind"] == "added"]


@pytest.mark.parametrize("low,high,n", GRIDS)
def test_every_suggested_grid_value_is_taken_when_typed_back(low, high, n):
    """Between every two neighbouring grid values, a value is refused with nothing stored; each
    value the refusal suggests, typed back (as text, as the CLI reads it), names the neighbour it
    stands for, and is taken and stored as that grid value itself; the history shows the values
    as the space file defines them."""
    space = {"threshold": 0.5, "parameters": [{"name": "x", "low": low, "high": high, "grid": n}]}
    study = create_study("g", "toy-random", space, family="levelset", storage=_memory(), seed=0)
    grid = np.linspace(low, high, n)
    suggested: set[str] = set()
    for a, b in zip(grid[:-1], grid[1:]):
        for v in (a + (b - a) / 2, a + (b - a) / 3, a + (b - a) * 0.9):
            with pytest.raises(OutOfSpaceError) as err:
                study.add({"x": float(v)}, 0.1)
            assert study.n_answered == 0  # nothing stored
            m = _NEAREST.search(str(err.value))
            assert m is not None, str(err.value)
            below, above = m.group(2), m.group(3)
            assert params_to_point(study.space, {"x": float(below)}).tolist() == [a]
            assert params_to_point(study.space, {"x": float(above)}).tolist() == [b]
            suggested.update((below, above))
    assert len(suggested) == n  # every grid value was suggested, each in one way
    for text in sorted(suggested, key=float):
        study.add({"x": float(text)}, 0.2)  # taken
    assert sorted(x[0] for x in _logged_points(study)) == grid.tolist()  # the grid's own floats
    shown = sorted(r["params"]["x"] for r in study.history())
    assert shown == sorted(float(f"{v:.15g}") for v in grid)


def test_the_trial_values_are_taken_and_stored_as_the_grid_value(tmp_path):
    """``study.add({"temperature": 193.3333, ...})`` (and 193.333) on 31 points over [100, 200]:
    taken as the grid value 580/3; 193.3 and 193 (settings of their own, not 580/3 written
    shorter) and 191 are refused naming values that are taken."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("coat08", "randomized-straddle", COAT, storage=url, seed=1)
    exact = float(np.linspace(100.0, 200.0, 31)[28])
    assert exact == 193.33333333333334
    for typed in (193.3333, 193.333, 193.33):
        study.add({"temperature": typed, "speed": 3.875}, 0.37)
    assert [x[0] for x in _logged_points(study)] == [exact] * 3
    for typed in (193.3, 193.0, 191.0, 193.32):
        with pytest.raises(OutOfSpaceError, match=r"\(nearest: 190 or 193\.333\)"):
            study.add({"temperature": typed, "speed": 3.875}, 0.37)
    assert load_study("coat08", storage=url).n_answered == 3
    rows = load_study("coat08", storage=url).history()
    assert [r["params"] for r in rows] == [{"temperature": 193.333333333333, "speed": 3.875}] * 3


def test_the_cli_takes_the_value_its_refusal_suggests(tmp_path):
    """The trial's command, and the round trip on the command line."""
    (tmp_path / "coat.json").write_text(json.dumps(COAT))
    create = ["study", "create", "coat08", "--space", "coat.json", "--seed", "1"]
    assert run_cli(create, cwd=tmp_path).returncode == 0
    res = run_cli(
        ["study", "add", "coat08", "temperature=193.333,speed=3.875", "0.37"], cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    assert "stored measurement at temperature=193.333, speed=3.875" in res.stdout
    res = run_cli(["study", "add", "coat08", "temperature=166.5,speed=3.875", "0.37"], cwd=tmp_path)
    line = assert_refused(
        res, "temperature=166.5 is not a grid value (nearest: 163.333 or 166.667)"
    )
    for text in re.search(r"nearest: (\S+) or (\S+)\)", line).groups():  # type: ignore[union-attr]
        ok = run_cli(
            ["study", "add", "coat08", f"temperature={text},speed=3.875", "0.4"], cwd=tmp_path
        )
        assert ok.returncode == 0, ok.stderr
    status = json.loads(run_cli(["study", "status", "coat08", "--json"], cwd=tmp_path).stdout)
    assert status["answered"] == 3
    temps = [r["params"]["temperature"] for r in status["last_answers"]]
    assert temps == [193.333333333333, 163.333333333333, 166.666666666667]


def test_a_safe_study_takes_grid_values_as_written():
    """The safe family's actions (a SafeSpace: the monotone levels, then the other columns) follow
    the same rule."""
    space = {
        "monotone": "dose",
        "h": 1.0,
        "parameters": [
            {"name": "dose", "low": 0.0, "high": 10.0, "grid": 7},  # step 5/3
            {"name": "time", "low": 1.0, "high": 8.0, "grid": 4},  # step 7/3
        ],
    }
    study = create_study(
        "s", "m-safeopt", space, storage=_memory(), seed=0, fit_hyperparameters=False
    )
    study.add({"dose": 1.66667, "time": 3.33333}, {"f": 0.1, "g": 0.2})
    assert _logged_points(study) == [[10 / 6, 1.0 + 7 / 3]]
    assert study.history()[0]["params"] == {"dose": 1.66666666666667, "time": 3.33333333333333}
    with pytest.raises(OutOfSpaceError) as err:
        study.add({"dose": 1.7, "time": 3.3}, {"f": 0.1, "g": 0.2})
    msg = str(err.value)
    assert "dose=1.7 is not a grid value (nearest: 1.66667 or 3.33333)" in msg
    assert "time=3.3 is not a grid value (nearest: 1 or 3.33333)" in msg
    assert study.n_answered == 1


def test_status_history_recommendation_and_exports_show_the_defined_grid_values(tmp_path):
    """The values the trial saw with float noise (183.33333333333334 in the JSON export's
    recommendation, Study.status() and Study.history()) are shown as the CSV export writes them;
    the log keeps the points as computed."""
    study = create_study("c", "randomized-straddle", COAT, storage=_memory(), seed=0)

    def thickness(t: float, v: float) -> float:
        return 0.4 + 0.006 * (t - 100) - 0.15 * v + 0.6 * np.exp(-(((t - 160) / 20) ** 2))

    for _ in range(12):
        q = study.ask()
        for name, value in q.params.items():  # what a query shows is already written so
            assert value == float(f"{value:.15g}"), (name, value)
        study.tell(q.id, float(thickness(q.params["temperature"], q.params["speed"])))
    grid = {float(f"{v:.15g}") for v in np.linspace(100.0, 200.0, 31)}
    noisy = set(np.linspace(100.0, 200.0, 31).tolist()) - grid
    assert 183.33333333333334 in noisy

    def values(points) -> set[float]:
        return {p["temperature"] for p in points}

    st = study.status(last=12)
    rec = study.recommend()
    assert rec["upper"] and values(rec["upper"]) <= grid
    assert st["recommendation"] == rec
    assert values(r["params"] for r in st["last_answers"]) <= grid
    assert values(r["params"] for r in study.history()) <= grid
    study.export(tmp_path / "c.json")
    study.export(tmp_path / "c.csv")
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["recommendation"] == rec
    assert "183.33333333333334" not in (tmp_path / "c.json").read_text()
    with open(tmp_path / "c.csv", newline="") as fh:
        written = [float(r["temperature"]) for r in csv.DictReader(fh)]
    assert written == [r["params"]["temperature"] for r in doc["history"]]
    # the log is unchanged: the asked points are numpy's floats
    asked = [e["payload"]["query"]["x"][0] for e in study.events() if e["kind"] == "asked"]
    assert set(asked) <= set(np.linspace(100.0, 200.0, 31).tolist())


def test_the_cli_writes_values_on_a_fine_grid_with_the_digits_that_tell_them_apart(tmp_path):
    """On a grid whose neighbouring values agree to 6 significant digits (11 points over
    [1000, 1000.01]) the refusal shows the value typed and suggests values in full, and the
    confirmation of a measurement names the grid value stored, not 1000."""
    space = {
        "threshold": 0.5,
        "parameters": [{"name": "x", "low": 1000.0, "high": 1000.01, "grid": 11}],
    }
    (tmp_path / "fine.json").write_text(json.dumps(space))
    assert run_cli(["study", "create", "f", "--space", "fine.json"], cwd=tmp_path).returncode == 0
    res = run_cli(["study", "add", "f", "x=1000.0015", "0.3"], cwd=tmp_path)
    assert_refused(res, "x=1000.0015 is not a grid value (nearest: 1000.001 or 1000.002)")
    res = run_cli(["study", "add", "f", "x=1000.002", "0.3"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "stored measurement at x=1000.002 (1 answer)" in res.stdout


#: a safe space with as many x rows (time on 2 points) as parameters (dose, time): n_x == d
DOSE_2X2 = {
    "monotone": "dose",
    "h": 1.0,
    "parameters": [
        {"name": "dose", "low": 0.0, "high": 10.0, "grid": 4},  # step 10/3
        {"name": "time", "low": 1.0, "high": 8.0, "grid": 2},
    ],
}


def test_a_safe_recommendations_levels_are_levels_when_there_are_as_many_x_rows_as_parameters(
    tmp_path,
):
    """``best_s`` and ``boundary_s`` hold one level of the monotone parameter per x row; with 2
    rows of time and 2 parameters they were shown as a point ``{'dose': .., 'time': ..}`` (a time
    of 0 or 3.33, not a time value). The status, ``recommend()``, the JSON export, the CLI and the
    page show the levels as the space file defines them, and the action as a point."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    (tmp_path / "dose.json").write_text(json.dumps(DOSE_2X2))
    url = f"sqlite:///{tmp_path / 'dose.db'}"
    study = create_study(
        "dose", "m-safeopt", DOSE_2X2, storage=url, seed=0, fit_hyperparameters=False
    )
    for dose in (0.0, 10 / 3):  # low g at the first two levels: both rows certify 10/3
        for time in (1.0, 8.0):
            for _ in range(3):
                study.add({"dose": dose, "time": time}, {"f": 0.1 * dose, "g": 0.01 * dose})
    raw = study.policy.recommend()  # the method's own arrays: one level per x row
    assert raw.best_s.shape == raw.boundary_s.shape == (2,) == (study.space.dim,)
    third = 3.33333333333333  # 10/3 as the space file defines it (the CSV export's value)
    assert raw.best_s.tolist() == raw.boundary_s.tolist() == [10 / 3, 10 / 3]
    rec = study.recommend()
    # the two rows of time hold the same data: their f means tie to the last bits, so which one
    # is the action depends on the CPU's rounding (time 1 on one machine, time 8 on another)
    time = rec["point"]["time"]
    assert time in (1.0, 8.0)
    assert rec == {
        "point": {"dose": third, "time": time},
        "index": int(raw.index),
        "best_s": [third, third],
        "best_s_index": [1, 1],
        "boundary_s": [third, third],
    }
    assert study.status()["recommendation"] == rec
    study.export(tmp_path / "dose-export.json")
    assert json.loads((tmp_path / "dose-export.json").read_text())["recommendation"] == rec
    res = run_cli(["study", "status", "dose", "--storage", url], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    lines = [ln.strip() for ln in res.stdout.splitlines()]
    assert f"point: dose=3.33333, time={time:g}" in lines, res.stdout
    # each per value of the other parameter, the dose in the grid's own digits as the point's
    per_time = "time=1: 3.33333; time=8: 3.33333"
    assert f"best_s per time: {per_time}" in lines, res.stdout
    assert f"boundary_s per time: {per_time}" in lines, res.stdout
    page = TestClient(create_app(url, None)).get("/studies/dose")
    assert page.status_code == 200, page.text
    assert f"dose=3.33333, time={time:g}" in re.sub(r"\s+", " ", page.text)
