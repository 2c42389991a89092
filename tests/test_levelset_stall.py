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
    # a measurement there that the map did not expect moves the map, which takes the notice
    # away, and the method looks again
    study.add({"temperature": 180.0}, round(furnace(180.0), 4))
    assert _upper(study.status()) != before and study.status()["stuck"] is None
    _answer(study, 30, rng)
    assert {179.0, 180.0, 181.0} <= _upper(study.status())


def test_no_warning_while_the_map_still_changes(tmp_path):
    """While answers still move the map the study says nothing; it finds the narrow bump, and
    a notice, if any, comes only once the map is right (seed 2 has it right from answer 21 and
    unchanged after)."""
    study = create_study(
        "furnace", "randomized-straddle", SPACE, storage=f"sqlite:///{tmp_path / 'l.db'}", seed=2
    )
    rng = np.random.default_rng(2)
    truth = {t for t in LEVELS if furnace(t) >= 0.5}
    maps = []
    for _ in range(8):
        _answer(study, 10, rng)
        st = study.status()
        maps.append(_upper(st))
        if len(maps) > 2 and maps[-1] != maps[-3]:  # moved within the last 20 answers
            assert st["stuck"] is None and st["warnings"] == []
        if st["stuck"] is not None:
            assert maps[-1] == truth
    assert len({frozenset(m) for m in maps[:3]}) > 1  # the map moved
    assert {179.0, 180.0, 181.0} <= maps[-1]  # and found the narrow bump


def test_a_stall_that_interleaves_new_neighbours_is_reported():
    """The trial's pattern: the method re-measures two boundary points of the wide bump and
    alternates them with their unmeasured neighbours one level away, the map (missing the
    narrow bump at 180) unchanged. A new neighbour breaks the run of repeats, so a count of
    repeats alone stays below the window, but the neighbour is known to within the noise and
    the notice is given."""
    policy = RandomizedStraddle(LEVELS.reshape(-1, 1), 0.5, seed=8)
    rng = np.random.default_rng(8)
    asked: list[float] = []
    found = None
    for _ in range(60):
        q = policy.ask()
        asked.append(float(q.x[0]))
        found = policy.stall()
        if found is not None:
            break
        policy.tell(q.id, furnace(float(q.x[0])) + 0.03 * rng.normal())
    assert found is not None
    k = found["queries"]
    assert k == policy.known_unchanged >= policy.stall_window
    assert policy.repeats_unchanged < policy.stall_window  # repeats alone: no notice yet
    window, earlier = asked[-k:], asked[:-k]
    new = [t for i, t in enumerate(window) if t not in earlier + window[:i]]
    assert len(new) == k - found["repeats"] > 0
    for t in new:  # each a neighbour of a setting measured before it
        before = earlier + window[: window.index(t)]
        assert min(abs(t - b) for b in before) == 1.0
    assert "so close to measured ones" in found["message"]
    # truly stuck: the narrow bump is missing from the map, and stays missing
    mean = policy.candidate_posterior()[0]
    assert not np.any(mean[(LEVELS >= 178) & (LEVELS <= 182)] >= 0.5)
    policy.tell(q.id, furnace(float(q.x[0])) + 0.03 * rng.normal())
    for _ in range(40):
        q = policy.ask()
        policy.tell(q.id, furnace(float(q.x[0])) + 0.03 * rng.normal())
    mean = policy.candidate_posterior()[0]
    assert not np.any(mean[(LEVELS >= 178) & (LEVELS <= 182)] >= 0.5)


def test_exploration_over_the_space_with_the_map_unchanged_is_not_a_stall():
    """Healthy exploration: on a map of two bumps (41 x 21 grid, threshold 0.5, noise 0.05)
    the first 30-odd queries after the start (seed 1) go to new settings spread over the whole space, far
    from the measured ones, while the estimated map (nothing above the threshold yet) does not
    change. The map standing still is not enough: those answers still teach the model, and no
    notice is given. Then the bumps are found and the map changes."""
    from boloop.spaces import CandidateSet

    grid = CandidateSet.grid(np.array([[0.0, 2.0], [0.0, 1.0]]), [41, 21]).points

    def bumps(x: np.ndarray) -> float:
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        a = (x[0] - 0.4) ** 2 + (x[1] - 0.3) ** 2
        b = (x[0] - 1.5) ** 2 + (x[1] - 0.7) ** 2
        return float(np.exp(-a / (2 * 0.1**2)) + 0.8 * np.exp(-b / (2 * 0.08**2)))

    policy = RandomizedStraddle(grid, 0.5, seed=1)
    rng = np.random.default_rng(1)
    seen: list[list[float]] = []
    rows = []  # per query after the start: map unchanged?, new?, count, notice, setting
    previous = None
    for _ in range(60):
        q = policy.ask()
        upper = policy.candidate_posterior()[0] >= 0.5
        if len(seen) >= policy.n_initial:  # after the space-filling start
            rows.append(
                (
                    previous is not None and np.array_equal(upper, previous),
                    q.x.tolist() not in seen,
                    policy.known_unchanged,
                    policy.stall(),
                    q.x.copy(),
                )
            )
        previous = upper
        seen.append(q.x.tolist())
        policy.tell(q.id, bumps(q.x) + 0.05 * rng.normal())
    # the longest stretch of queries with the map unchanged
    best, start = (0, 0), 0
    for i, row in enumerate(rows):
        if not row[0]:
            start = i
        best = max(best, (i - start + 1, start))
    length, first = best
    stretch = rows[first : first + length]
    assert length >= 30 > policy.stall_window and first + length < len(rows)  # then it moved
    assert all(new for _, new, _, _, _ in stretch)  # settings never measured before
    spread = np.ptp(np.array([x for *_, x in stretch]), axis=0)
    assert np.all(spread >= [1.5, 0.75])  # over the whole space
    assert all(count == 0 and notice is None for _, _, count, notice, _ in stretch)


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


def test_a_box_map_that_stopped_changing_is_reported():
    """On a box no query repeats a setting, but the notice reads the map of the candidates the
    policy classifies and scores at every step and the queries known to within the noise: a
    bump plus a trend on the unit square (threshold 0.7, noise 0.03), seed 7, reports the map
    finished (after 50-odd answers, once the boundary's undecided points no longer reset the
    count; 100-odd when any candidate changing side did) and names a point of the box far from
    the data."""
    from boloop.spaces import Box

    def value(x: np.ndarray) -> float:
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        return float(np.exp(-((x - [0.4, 0.6]) ** 2).sum() / (2 * 0.2**2)) + 0.3 * x[0])

    policy = RandomizedStraddle(Box([0.0, 0.0], [1.0, 1.0]), 0.7, seed=7)
    found = _until_stall(policy, value, seed=7, answers=150)
    assert found is not None and found["queries"] >= policy.stall_window
    assert found["repeats"] == 0 and policy.repeats_unchanged == 0
    assert "all at settings so close to measured ones" in found["message"]
    far = np.array(found["farthest"])
    assert np.all((far >= 0.0) & (far <= 1.0)) and found["farthest_distance"] > 0.0
    assert found["measured_settings"] == policy.gp.n > 2 * policy.stall_window  # all distinct
    # the map is right: the candidates' classes agree with the truth almost everywhere
    mean, _ = policy.candidate_posterior()
    points = policy.candidates
    truth = np.array([value(p) >= 0.7 for p in points])
    assert np.mean((mean >= 0.7) == truth) > 0.98


def _furnace_fine(X: np.ndarray) -> np.ndarray:
    """The furnace as a 2-D map: temperature times a hold-time factor ``0.7 + 0.3 time / 60``."""
    X = np.asarray(X, dtype=np.float64).reshape(-1, 2)
    return np.array([furnace(t) for t in X[:, 0]]) * (0.7 + 0.3 * X[:, 1] / 60.0)


def test_a_fine_grid_stall_whose_boundary_jitters_is_reported():
    """On a fine grid (the furnace over 101 temperatures x 61 hold times, 6,161 settings) a
    few settings beside the boundary have their mean within a hair of the threshold and change
    side with almost every answer. Seed 6 misses the narrow bump at 180 and then only sharpens
    the wide bump's boundary: the map changes at many of the window's queries, so "no setting
    changed side" never holds for 20 queries, but every setting that changed side was one the
    model had not decided (``|mu - theta| < 2 sigma`` before and after), and the notice is given.
    The bump stays missing: it is a true stall."""
    from boloop.spaces import CandidateSet

    grid = CandidateSet.grid(np.array([[100.0, 200.0], [0.0, 60.0]]), [101, 61]).points
    policy = RandomizedStraddle(grid, 0.5, seed=6)
    rng = np.random.default_rng(6)
    maps = []  # (side, decided) at each query, read with the posterior the query was chosen with
    found = None
    for _ in range(100):
        q = policy.ask()
        mean, std = policy.candidate_posterior()
        maps.append((mean >= 0.5, np.abs(mean - 0.5) >= 2.0 * std))
        found = policy.stall()
        if found is not None:
            break
        policy.tell(q.id, float(_furnace_fine(q.x)[0]) + 0.03 * rng.normal())
    assert found is not None
    window = maps[-found["queries"] :]
    changed = [not np.array_equal(a[0], b[0]) for a, b in zip(window, window[1:])]
    assert sum(changed) >= 5  # the exact map changed again and again in the window
    first = window[0]
    for side, decided in window[1:]:  # but only where the model had not decided the side
        flipped = side != first[0]
        assert not np.any(flipped & (decided | first[1]))
    # truly stuck: the narrow bump (above the threshold around 180) is missing, and stays so
    bump = (grid[:, 0] >= 175) & (grid[:, 0] <= 185) & (_furnace_fine(grid) >= 0.5)
    assert bump.any() and not np.any(policy.candidate_posterior()[0][bump] >= 0.5)
    policy.tell(q.id, float(_furnace_fine(q.x)[0]) + 0.03 * rng.normal())
    for _ in range(30):
        q = policy.ask()
        policy.tell(q.id, float(_furnace_fine(q.x)[0]) + 0.03 * rng.normal())
    assert not np.any(policy.candidate_posterior()[0][bump] >= 0.5)


@pytest.mark.parametrize("drift", [0.0, 0.02])
def test_a_map_still_changing_in_its_decided_part_is_not_a_stall(drift):
    """Eleven levels on a line, all measured before the start, so that every query re-measures
    one (teaches as little as a repeat); the value is the level itself, threshold 0.5. Without
    drift the level at 0.5 sits on the threshold and changes side with the noise while nothing
    else moves: the notice comes at the 20th query although the map is never the same for 20
    queries. With the answers drifting upwards by 0.02 each, levels the model had decided below
    the threshold cross it one after another: no notice while they do, though every query is a
    repeat."""
    levels = np.linspace(0.0, 1.0, 11)
    policy = RandomizedStraddle(levels.reshape(-1, 1), 0.5, seed=3)
    rng = np.random.default_rng(3)
    policy.add_observations(levels.reshape(-1, 1), levels + 0.03 * rng.normal(size=11))
    sides, decided, notices = [], [], []
    for i in range(40):
        q = policy.ask()
        mean, std = policy.candidate_posterior()
        sides.append(mean >= 0.5)
        decided.append(np.abs(mean - 0.5) >= 2.0 * std)
        notices.append(policy.stall() is not None)
        policy.tell(q.id, float(q.x[0]) + drift * i + 0.03 * rng.normal())
    flips = [np.flatnonzero(a != b) for a, b in zip(sides, sides[1:])]
    if drift == 0.0:
        assert all(set(f) <= {5} for f in flips) and sum(len(f) > 0 for f in flips[:19]) >= 1
        assert notices[19] and not any(notices[:19])
    else:
        # decided levels crossed: a level decided below at one query is above a few later
        crossed = [
            j for j in range(len(levels)) if decided[0][j] and not sides[0][j] and sides[-1][j]
        ]
        assert len(crossed) >= 3
        assert not any(notices)


def test_the_notice_names_the_farthest_setting_with_its_unit(tmp_path):
    """The question, the pictures and the status write ``temperature=180 °C`` where the space
    gives a unit; the notice wrote ``the farthest is temperature=180`` (the method knows no
    units: the study names its point). It writes the unit after the value, in the study's
    status, ``boloop study status`` and the page's notice; the command that adds a measurement
    there stays as it is typed, and the notice of a study without units is as it was, word for
    word."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from boloop.web import create_app
    from cli_runner import run_cli

    spaced = {**SPACE, "parameters": [{**SPACE["parameters"][0], "unit": "°C"}]}
    urls = {u: f"sqlite:///{tmp_path / (u + '.db')}" for u in ("unit", "plain")}
    notices = {}
    for kind, space in (("unit", spaced), ("plain", SPACE)):
        study = create_study("furnace", "randomized-straddle", space, storage=urls[kind], seed=5)
        _answer(study, 60, np.random.default_rng(5))
        notices[kind] = study.status()["stuck"]
    far = notices["plain"].split("the farthest is temperature=")[1].split(". ")[0]
    assert float(far) in LEVELS
    with_unit = notices["unit"]
    assert f"the farthest is temperature={far} °C. " in with_unit
    assert f"boloop study add furnace temperature={far} VALUE --storage {urls['unit']}" in with_unit
    # nothing else differs: the same stall, the same setting, the same words
    assert with_unit.replace(urls["unit"], urls["plain"]) == notices["plain"].replace(
        f"the farthest is temperature={far}.", f"the farthest is temperature={far} °C."
    )
    out = run_cli(["study", "status", "furnace", "--storage", urls["unit"]], cwd=tmp_path)
    assert f"  WARNING: {with_unit}\n" in out.stdout
    page = TestClient(create_app(urls["unit"], None)).get("/studies/furnace").text
    notice = page.split('id="study-stuck"', 1)[1].split("</div>", 1)[0]
    assert f"the farthest is temperature={far} °C." in notice


def test_the_command_line_says_the_notice_where_answers_are_given(tmp_path):
    """(A newcomer's trial.) The notice was in ``status`` and on the page only: ``tell`` and
    ``run`` now say it after storing (``run`` once, when it appears)."""
    from boloop.study import load_study
    from cli_runner import run_cli

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("furnace", "randomized-straddle", SPACE, storage=url, seed=5)
    rng = np.random.default_rng(5)
    _answer(study, 59, rng)
    q = study.ask()
    value = f"{furnace(q.params['temperature']) + 0.03 * rng.normal():.4f}"
    res = run_cli(["study", "tell", "furnace", str(q.id), value, "--storage", url], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert load_study("furnace", storage=url).status()["stuck"] is not None
    assert "NOTICE: the estimated map has stopped changing" in res.stdout
    study = load_study("furnace", storage=url)
    values = []
    for _ in range(2):  # the next two answers, typed into the loop
        q = study.ask()
        values.append(f"{furnace(q.params['temperature']) + 0.03 * rng.normal():.4f}")
        study.tell(q.id, values[-1])
    for _ in range(2):
        study.undo()
    res = run_cli(
        ["study", "run", "furnace", "--max", "2", "--storage", url],
        cwd=tmp_path,
        stdin="\n".join(values) + "\n",
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("NOTICE: the estimated map has stopped changing") == 1


def _counted(study, k: int) -> tuple[int, int]:
    """From the history alone: the answers given to the last ``k`` queries asked (the open
    one included, if any) and the measurements added after the first of them was answered."""
    hist = study.history()
    asked = [r["query_id"] for r in hist if r["query_id"] is not None]
    pending = study.status(last=0)["open_query"]
    ids = [*asked, pending["id"]] if pending else asked
    first = ids[-k]
    rows = [i for i, r in enumerate(hist) if r["query_id"] is not None and r["query_id"] >= first]
    added = sum(r["source"] == "added" for r in hist[rows[0] :]) if rows else 0
    return len(rows), added


def test_the_notice_says_what_its_counts_of_queries_and_answers_are(tmp_path):
    """(A newcomer's trial.) The notice read "the last 22 queries ... over the 21 answers since
    the first of them" whenever a query was open (the study page always holds one): more
    queries than answers in one sentence, read as an error. The counts differ by the open query,
    and an added measurement is an answer without a query; the sentence now says which is which,
    and its numbers are those of the history."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("furnace", "randomized-straddle", SPACE, storage=url, seed=5)
    rng = np.random.default_rng(5)
    _answer(study, 60, rng)

    def read() -> tuple[dict, str]:
        found = study.policy.describe()["stall"]
        assert found is not None
        return found, study.status()["stuck"]

    found, text = read()  # no query open: as many answers as queries
    k = found["queries"]
    assert found["answered"] == k and found["added"] == 0 and found["answers"] == k
    assert _counted(study, k) == (k, 0)
    assert f"the last {k} queries were" in text
    assert f"over the {k} answers given to them, other than" in text

    study.ask()  # a query open, as on the page: one more query, not yet answered
    found, text = read()
    k = found["queries"]
    assert found["answered"] == k - 1 and found["added"] == 0
    assert _counted(study, k) == (k - 1, 0)
    assert (
        f"over the {k - 1} answers given to them (the last of the {k}, the open query, has no "
        "answer yet), other than"
    ) in text
    assert "answers since the first of them" not in text

    q = study.ask()
    study.tell(q.id, round(furnace(q.params["temperature"]) + 0.03 * rng.normal(), 4))
    far = float(text.split("the farthest is temperature=")[1].split(".")[0])
    study.add({"temperature": far}, round(furnace(far), 4))  # as the map expects there
    study.ask()
    found, text = read()
    k = found["queries"]
    assert (found["answered"], found["added"]) == (k - 1, 1) == _counted(study, k)
    assert found["answers"] == k  # every observation since the first of them
    assert (
        f"over the {k - 1} answers given to them (the last of the {k}, the open query, has no "
        "answer yet) and the measurement added since the first of them, other than"
    ) in text
