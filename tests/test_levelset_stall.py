"""A level-set study whose estimated map stops changing says so in its status, and one whose map
is still changing does not (``docs/studies.md``, "A level-set map that stops changing";
measured in ``benchmarks/levelset_stall.py``).

The made-up map: a wide bump and a narrow one over a furnace's temperature (100-200 on 101
levels), threshold 0.5, noise sd 0.03. With seed 5 the 5-point start misses the narrow bump at
180 and the learned model never looks there; with seed 2 it finds both.
"""

from __future__ import annotations

import numpy as np
import pytest

from boloop.algorithms.levelset import RandomizedStraddle
from boloop.study import create_study

SPACE = {
    "parameters": [{"name": "temperature", "low": 100, "high": 200, "grid": 101}],
    "threshold": 0.5,
}
LEVELS = np.linspace(100.0, 200.0, 101)


def furnace(t: float) -> float:
    x = (t - 100.0) / 100.0
    return float(
        np.exp(-((x - 0.25) ** 2) / (2 * 0.08**2))
        + 0.8 * np.exp(-((x - 0.8) ** 2) / (2 * 0.025**2))
    )


def _answer(study, n: int, rng: np.random.Generator) -> None:
    for _ in range(n):
        q = study.ask()
        study.tell(q.id, round(furnace(q.params["temperature"]) + 0.03 * rng.normal(), 4))


def _upper(status) -> set[float]:
    return {p["temperature"] for p in status["recommendation"]["upper"]}


def test_a_study_whose_map_stopped_changing_says_so_and_where_to_look(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("furnace", "randomized-straddle", SPACE, storage=url, seed=5)
    rng = np.random.default_rng(5)
    _answer(study, 60, rng)
    st = study.status()
    stuck = st["stuck"]
    assert stuck is not None and stuck.startswith("the estimated map has stopped changing")
    assert stuck in st["warnings"]
    # truly stuck: the narrow bump (furnace >= 0.5 at 180) is missing from the map ...
    truth = {t for t in LEVELS if furnace(t) >= 0.5}
    assert 180.0 in truth and not (_upper(st) & {178.0, 179.0, 180.0, 181.0, 182.0})
    # ... and 20 more answers leave the map as it is
    before = _upper(st)
    _answer(study, 20, rng)
    again = study.status()
    assert _upper(again) == before and again["stuck"] is not None
    # the setting it names is the one farthest from every measurement (recomputed here)
    measured = np.array([r["params"]["temperature"] for r in study.history()])
    far = LEVELS[np.argmax(np.min(np.abs(LEVELS[:, None] - measured[None, :]), axis=1))]
    assert f"the farthest is temperature={far:g}." in again["stuck"]
    assert f"boloop study add furnace temperature={far:g} VALUE --storage {url}" in again["stuck"]
    # a measurement there that the map did not expect makes the method look again
    study.add({"temperature": 180.0}, round(furnace(180.0), 4))
    _answer(study, 30, rng)
    after = study.status()
    assert {179.0, 180.0, 181.0} <= _upper(after)
    assert after["stuck"] is None


def test_no_warning_while_the_map_still_changes(tmp_path):
    study = create_study(
        "furnace", "randomized-straddle", SPACE, storage=f"sqlite:///{tmp_path / 'l.db'}", seed=2
    )
    rng = np.random.default_rng(2)
    maps = []
    for _ in range(8):
        _answer(study, 10, rng)
        st = study.status()
        assert st["stuck"] is None and st["warnings"] == []
        maps.append(_upper(st))
    assert len({frozenset(m) for m in maps}) > 1  # the map moved
    assert {179.0, 180.0, 181.0} <= maps[-1]  # and found the narrow bump


def test_the_signal_changes_no_query():
    """The count is read from the posterior the choice was made with: a policy that can never
    report a stall asks the same queries, bit for bit."""
    a = RandomizedStraddle(LEVELS.reshape(-1, 1), 0.5, seed=5)
    b = RandomizedStraddle(LEVELS.reshape(-1, 1), 0.5, seed=5)
    b.stall_window = 10**9
    rng = np.random.default_rng(5)
    reported = 0
    for _ in range(60):
        qa, qb = a.ask(), b.ask()
        assert np.array_equal(qa.x, qb.x)
        y = furnace(float(qa.x[0])) + 0.03 * rng.normal()
        reported += a.describe()["stall"] is not None  # read between ask and tell
        a.tell(qa.id, y)
        b.tell(qb.id, y)
        reported += a.describe()["stall"] is not None  # and after the answer
        assert b.describe()["stall"] is None
    assert reported > 0


def test_the_notice_follows_measurements_added_after_it(tmp_path):
    """After the advice is followed (a measurement added at the named setting) the notice names
    the setting now farthest from the data, or is gone when the measurement moved the map."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("furnace", "randomized-straddle", SPACE, storage=url, seed=5)
    rng = np.random.default_rng(5)
    _answer(study, 60, rng)
    first = study.status()["stuck"]
    named = float(first.split("the farthest is temperature=")[1].split(".")[0])
    study.add({"temperature": named}, round(furnace(named), 4))  # as the map expects there
    second = study.status()["stuck"]
    assert second is not None and f"the farthest is temperature={named:g}." not in second
    measured = np.array([r["params"]["temperature"] for r in study.history()])
    gap = np.min(np.abs(LEVELS[:, None] - measured[None, :]), axis=1)  # to the nearest measured
    now = float(second.split("the farthest is temperature=")[1].split(".")[0])
    assert gap[LEVELS == now][0] == pytest.approx(gap.max())  # (ties: either one)
    study.add({"temperature": 180.0}, 0.9)  # inside the missed bump: the map moves
    assert study.status()["stuck"] is None


def _until_stall(policy, truth, seed: int, answers: int = 80) -> dict | None:
    """Ask and answer (``truth`` plus noise sd 0.03) until the policy reports a stall at a
    query (returned), or ``answers`` queries without one (None)."""
    rng = np.random.default_rng(seed)
    for _ in range(answers):
        q = policy.ask()
        found = policy.stall()
        if found is not None:
            return found
        policy.tell(q.id, truth(q.x) + 0.03 * rng.normal())
    return None


def test_a_grid_measured_everywhere_is_called_finished_not_pointed_elsewhere():
    levels = np.linspace(100.0, 200.0, 11)
    policy = RandomizedStraddle(levels.reshape(-1, 1), 0.5, seed=1)
    found = _until_stall(policy, lambda x: furnace(float(x[0])), seed=1)
    assert found is not None and found["measured_settings"] == 11
    assert found["farthest"] is None and found["farthest_distance"] == 0.0
    assert "Every one of the 11 settings has been measured" in found["message"]
    assert "farthest" not in found["message"]


def test_the_page_says_the_map_stopped_changing(tmp_path):
    """The page's notice for a level-set stall speaks of the map (as often finished as stuck),
    not of a method repeating itself."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    url = f"sqlite:///{tmp_path / 'web.db'}"
    study = create_study("furnace", "randomized-straddle", SPACE, storage=url, seed=5)
    _answer(study, 60, np.random.default_rng(5))
    assert study.status()["stuck"] is not None
    page = TestClient(create_app(url, None), follow_redirects=False).get("/studies/furnace")
    assert page.status_code == 200
    notice = page.text.split('id="study-stuck"', 1)[1].split("</div>", 1)[0]
    assert "The map has stopped changing:" in notice and "repeating itself" not in notice
    assert "the farthest is temperature=" in notice


def test_a_2d_grid_measured_everywhere_names_no_setting():
    """On a grid of two axes too (where a measured setting's distance to the data is not
    exactly 0 after rounding), a stall on a grid measured everywhere names no setting."""
    from boloop.spaces import CandidateSet

    grid = CandidateSet.grid(np.array([[100.0, 200.0], [0.1, 0.7]]), [7, 9])
    points = grid.points

    def value(X: np.ndarray) -> np.ndarray:
        return np.array([furnace(t) * (0.5 + r) for t, r in np.asarray(X).reshape(-1, 2)])

    policy = RandomizedStraddle(points, 0.5, seed=2)
    policy.add_observations(points, value(points))
    found = _until_stall(policy, lambda x: float(value(x)[0]), seed=2)
    assert found is not None and found["measured_settings"] == len(points)
    assert found["farthest"] is None and "Every one of the 63 settings" in found["message"]
