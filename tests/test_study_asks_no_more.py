"""A method that asks no more: MR-LPF after the T duels of its horizon, a level-set method with
``allow_repeats=false`` once every candidate of its table is measured. One notion of the policy
contract (``BasePolicy.asks_no_more``, ``NoMoreQueriesError``), said the same way by
``boloop study run`` (the study is complete, exit 0), ``status`` (no ``study ask`` suggested),
``study ask`` (exit 2 with the sentence), the JSON API (its status's ``asks_no_more``; its ask a
409 with ``error: asks_no_more``) and the study page (no answer form, the sentence), each
tried for real: the command as a subprocess, the API over HTTP from ``boloop serve``, the page
in a headless Chromium. Before that state, the methods ask as before.

The other families have no such state: a safe or expert method always has a next setting, and
a preference method with ``repeat_duels="never"`` asks every pair again once all were asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import numpy as np
import pytest

from boloop.algorithms import build_policy, make_policy
from boloop.errors import NoMoreQueriesError, QueryStateError
from boloop.queries import PolicySpec
from boloop.spaces import CandidateSet
from boloop.study import create_study, load_study

#: four temperatures, a level set to map: four answers measure every candidate
LEVEL = {
    "parameters": [{"name": "temperature", "low": 0, "high": 1, "grid": 4}],
    "threshold": 0.5,
}
LEVEL_SENTENCE = (
    "the method asks no more: every one of the 4 candidates is measured and allow_repeats is "
    "false, so its estimate of the sets is final"
)
RECIPES = {
    "candidates": {
        "columns": ["sugar", "flour"],
        "rows": [[0.1, 0.5], [0.9, 0.5], [0.5, 0.9], [0.3, 0.2]],
        "labels": ["plain", "sweet", "rich", "light"],
    }
}
DUEL_SENTENCE = (
    "the method asks no more: all T = 2 duels of its horizon are answered, and its "
    "recommendation is final"
)


def _level_policy(method: str = "straddle"):
    X = np.linspace(0.0, 1.0, 4).reshape(-1, 1)
    spec = PolicySpec(
        method=method,
        family="levelset",
        space=CandidateSet(X),
        settings={"threshold": 0.5},
        seed=0,
        options={"allow_repeats": False},
    )
    return build_policy(spec)


@pytest.mark.parametrize("method", ["straddle", "randomized-straddle", "lse", "us", "random"])
def test_a_level_set_method_without_repeats_asks_until_every_candidate_is_measured(method):
    policy = _level_policy(method)
    asked = []
    for _ in range(4):
        assert policy.asks_no_more() is None
        q = policy.ask()
        assert policy.asks_no_more() is None  # a query is open: it still asks (that one)
        asked.append(int(q.index))
        policy.tell(q.id, float(q.x[0]))
    assert sorted(asked) == [0, 1, 2, 3]  # each candidate once, as before
    reason = policy.asks_no_more()
    assert reason == LEVEL_SENTENCE.removeprefix("the method asks no more: ")
    with pytest.raises(NoMoreQueriesError) as err:
        policy.ask()
    assert str(err.value) == LEVEL_SENTENCE and err.value.reason == reason
    assert isinstance(err.value, QueryStateError)  # callers that caught the refusal still do
    assert policy.pending is None and policy.asks_no_more() == reason  # nothing changed


def test_a_measurement_added_by_hand_counts_as_measured():
    policy = _level_policy()
    policy.observe(np.array([[0.0], [1.0 / 3.0], [2.0 / 3.0]]), [0.1, 0.4, 0.7])
    assert policy.asks_no_more() is None
    policy.observe(np.array([[1.0]]), [0.9])
    assert policy.asks_no_more() is not None
    with pytest.raises(NoMoreQueriesError):
        policy.ask()


@pytest.mark.parametrize("method", ["straddle", "randomized-straddle", "lse"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_initial_design_never_asks_a_candidate_measured_by_hand(method, seed):
    """With allow_repeats=False the design passes over the candidates a user measured before it
    was done: each query is an unmeasured candidate until none is left (the design asked a
    hand-measured one again: a 4-point grid after 3 added measurements asked the first)."""
    grid = np.linspace(0.0, 1.0, 8)
    for added in ([0, 3, 5], [1], [0, 1, 2, 3, 4, 5, 6]):
        X = grid.reshape(-1, 1)
        spec = PolicySpec(
            method=method,
            family="levelset",
            space=CandidateSet(X),
            settings={"threshold": 0.5},
            seed=seed,
            options={"allow_repeats": False},
        )
        policy = build_policy(spec)
        policy.observe(X[added], [float(v) for v in grid[added]])
        measured = {float(v) for v in grid[added]}
        while policy.asks_no_more() is None:
            q = policy.ask()
            x = float(q.x[0])
            assert x not in measured, (added, x)
            measured.add(x)
            policy.tell(q.id, x)
        assert measured == {float(v) for v in grid}


def test_with_repeats_allowed_the_same_method_goes_on_asking():
    X = np.linspace(0.0, 1.0, 4).reshape(-1, 1)
    policy = build_policy(
        PolicySpec("straddle", "levelset", CandidateSet(X), {"threshold": 0.5}, seed=0)
    )
    for _ in range(8):
        q = policy.ask()
        policy.tell(q.id, float(q.x[0]))
        assert policy.asks_no_more() is None


def test_mr_lpf_asks_no_more_after_its_horizon():
    from boloop.problems import get

    policy = make_policy("mr-lpf", get("preference/toy"), seed=0, horizon=3)
    for _ in range(3):
        assert policy.asks_no_more() is None
        q = policy.ask()
        policy.tell(q.id, 0)
    assert policy.asks_no_more() == (
        "all T = 3 duels of its horizon are answered, and its recommendation is final"
    )
    with pytest.raises(NoMoreQueriesError):
        policy.ask()


def test_a_preference_method_that_never_repeats_a_duel_asks_again_after_every_pair(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    study = create_study("never", "eubo", RECIPES, storage=url, seed=0, repeat_duels="never")
    pairs = []
    for _ in range(8):  # 6 pairs of 4 options, then again
        assert study.status(last=0)["asks_no_more"] is None
        q = study.ask()
        pairs.append(frozenset((q.query.a_index, q.query.b_index)))
        study.tell(q.id, "a")
    assert len(set(pairs[:6])) == 6  # every pair once before any twice, as before


def test_the_study_says_it_in_its_status_and_an_undo_makes_it_ask_again(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    study = create_study("lev", "straddle", LEVEL, storage=url, seed=0, allow_repeats=False)
    for _ in range(4):
        assert study.status(last=0)["asks_no_more"] is None
        q = study.ask()
        study.tell(q.id, float(q.params["temperature"]))
    st = study.status(last=0)
    assert st["asks_no_more"] == LEVEL_SENTENCE and st["open_query"] is None
    with pytest.raises(NoMoreQueriesError, match="the method asks no more"):
        study.ask()
    study.undo()
    assert study.status(last=0)["asks_no_more"] is None
    assert study.ask().params["temperature"] == q.params["temperature"]  # the same one again


# -- the command, as a subprocess ---------------------------------------------------------------
def _boloop(args: list[str], cwd, stdin: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "boloop.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


CASES = {
    # name: (create options, answers to type, the sentence)
    "level": (
        ["--method", "straddle", "--space", "lev.json", "--option", "allow_repeats=false"],
        "0.1\n0.7\n0.3\n0.9\n0.2\n",  # one more than the four it asks
        LEVEL_SENTENCE,
    ),
    "duels": (
        ["--method", "mr-lpf", "--space", "recipes.json", "--option", "horizon=2"],
        "a\nb\na\n",
        DUEL_SENTENCE,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_command_says_the_study_is_complete(tmp_path, case):
    create, typed, sentence = CASES[case]
    (tmp_path / "lev.json").write_text(json.dumps(LEVEL))
    (tmp_path / "recipes.json").write_text(json.dumps(RECIPES))
    db = ["--storage", f"sqlite:///{tmp_path / 's.db'}"]
    made = _boloop(["study", "create", "s", *create, "--seed", "0", *db], tmp_path)
    assert made.returncode == 0, made.stderr

    status = _boloop(["study", "status", "s", *db], tmp_path)
    assert "open query:     none (boloop study ask s issues one)" in status.stdout

    run = _boloop(["study", "run", "s", *db], tmp_path, typed)
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    assert f"study 's' is complete: {sentence}." in run.stdout
    assert "recommendation:" in run.stdout.split("is complete")[1]

    status = _boloop(["study", "status", "s", *db], tmp_path)
    assert status.returncode == 0
    assert f"open query:     none ({sentence})" in status.stdout
    assert "issues one" not in status.stdout

    ask = _boloop(["study", "ask", "s", *db], tmp_path)
    assert ask.returncode == 2
    assert ask.stdout == ""
    assert ask.stderr.strip() == f"boloop: error: study 's' is complete: {sentence}"

    again = _boloop(["study", "run", "s", *db], tmp_path, "0.5\n")
    assert again.returncode == 0 and f"is complete: {sentence}." in again.stdout
    assert "-- MEASURE" not in again.stdout and "-- DUEL" not in again.stdout


# -- the API over HTTP and the page in a browser --------------------------------------------------
def _complete_studies(url: str) -> None:
    lev = create_study("lev", "straddle", LEVEL, storage=url, seed=0, allow_repeats=False)
    for _ in range(4):
        q = lev.ask()
        lev.tell(q.id, float(q.params["temperature"]))
    duels = create_study("duels", "mr-lpf", RECIPES, storage=url, seed=0, horizon=2)
    for _ in range(2):
        q = duels.ask()
        duels.tell(q.id, "a")
    create_study("asking", "straddle", LEVEL, storage=url, seed=0, allow_repeats=False)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    pytest.importorskip("fastapi", reason="the web extra is not installed")
    from test_web_browser import _free_port, _serve, _stop

    url = f"sqlite:///{tmp_path_factory.mktemp('no-more') / 'lab.db'}"
    _complete_studies(url)
    port = _free_port()
    proc = _serve(url, port)
    yield f"http://127.0.0.1:{port}", url
    _stop(proc)


def _call(base: str, path: str, method: str = "GET") -> tuple[int, dict]:
    req = urllib.request.Request(base + path, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize(("name", "sentence"), [("lev", LEVEL_SENTENCE), ("duels", DUEL_SENTENCE)])
def test_the_api_says_it_in_the_status_and_refuses_to_ask_with_it(server, name, sentence):
    base, url = server
    code, st = _call(base, f"/api/studies/{name}")
    assert code == 200
    assert st["asks_no_more"] == sentence and st["open_query"] is None
    code, body = _call(base, f"/api/studies/{name}/ask", "POST")
    assert code == 409
    assert body == {"detail": sentence, "error": "asks_no_more"}
    n = load_study(name, storage=url).n_answered
    assert n in (2, 4)  # nothing was asked or stored


def test_the_api_of_a_study_still_asking_is_as_before(server):
    base, _ = server
    code, st = _call(base, "/api/studies/asking")
    assert code == 200 and st["asks_no_more"] is None
    code, q = _call(base, "/api/studies/asking/ask", "POST")
    assert code == 200 and q["kind"] == "evaluate"


def test_the_page_of_a_complete_study_has_no_answer_form_and_says_why(server, shots):
    from browsers import desktop_driver, require_browser

    require_browser()
    from selenium.webdriver.common.by import By

    base, _ = server
    d = desktop_driver()
    try:
        for name, sentence in (("lev", LEVEL_SENTENCE), ("duels", DUEL_SENTENCE)):
            d.get(f"{base}/studies/{name}")
            assert d.find_element(By.ID, "q-title").text == "This study is complete"
            said = d.find_element(By.ID, "complete").text
            assert said.startswith(sentence[0].upper() + sentence[1:] + ".")
            assert not d.find_elements(By.ID, "answer-form")
            assert not d.find_elements(By.CSS_SELECTOR, "input[name=query_id]")
            assert d.find_element(By.ID, "recommendation").text.startswith("recommendation of")
            d.save_screenshot(str(shots / f"asks-no-more-{name}.png"))
        d.get(f"{base}/studies/asking")  # a study that asks: its form, as before
        assert d.find_elements(By.ID, "answer-form")
        assert not d.find_elements(By.ID, "complete")
    finally:
        d.quit()


def test_a_complete_level_set_does_not_promise_that_more_answers_settle_the_undecided(tmp_path):
    """Every candidate measured at the threshold itself: the estimate leaves them undecided,
    and the status no longer says that more answers settle them (the method asks none); a study
    still asking says it does."""
    db = ["--storage", f"sqlite:///{tmp_path / 's.db'}"]
    study = create_study("lev", "straddle", LEVEL, storage=db[1], seed=0, allow_repeats=False)
    q = study.ask()
    study.tell(q.id, 0.5)
    asking = _boloop(["study", "status", "lev", *db], tmp_path)
    assert asking.returncode == 0 and "still undecided" in asking.stdout
    assert "(more answers settle them)" in asking.stdout
    for _ in range(3):
        q = study.ask()
        study.tell(q.id, 0.5)
    assert study.status(last=0)["recommendation"]["n_undecided"] > 0
    done = _boloop(["study", "status", "lev", *db], tmp_path)
    assert done.returncode == 0
    assert "(the method asks no more, so no answer of this study will settle them)" in done.stdout
    assert "more answers settle them" not in done.stdout
