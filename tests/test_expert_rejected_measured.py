"""An evaluation at a setting the expert rejected says why (session 18: COBOL asked to measure
exactly the point rejected at the query before, and the page said nothing).

COBOL's veto binds its expert-augmented proposal, not GP-LCB's own step (Xu et al.,
Algorithm 1 line 5; ``reject_rule="veto"`` in :class:`boloop.algorithms.expert.COBOL`): after a
reject the next step is GP-LCB's ``x^u``, which may be the rejected point. The study's open
query says so in one sentence, on the page and in the CLI's question; which step it is comes
from the method (``proposed_by``)."""

from __future__ import annotations

import re

import pytest

from boloop.study import create_study, load_study
from cli_runner import run_cli

#: the trial's annealing recipe (a box: the corner 150 degC, 5 h is where GP-LCB goes)
ANNEAL = {
    "description": "Annealing recipe: the process engineer vets each proposal",
    "measurement": {"name": "defect rate", "unit": "%"},
    "parameters": [
        {"name": "temperature", "low": 150.0, "high": 250.0, "unit": "degC"},
        {"name": "time", "low": 1.0, "high": 5.0, "unit": "h"},
    ],
}

GP_LCB = (
    "the method measures it anyway because its own model of the measurements (GP-LCB) ranks "
    "it the most promising setting: the expert's judgement steers the method's proposals, not "
    "this step."
)
CALIBRATION = (
    "the method measures it anyway: that was a calibration question, measured whatever the "
    "answer, so that the measured value shows the method how far to follow the expert's "
    "judgement."
)


def _defects(params: dict[str, float]) -> float:
    """The defect rate (%): lowest at the corner 150 degC, 5 h."""
    return round(2.0 + 0.02 * (params["temperature"] - 150.0) + 0.3 * (5.0 - params["time"]), 3)


def _engineer(params: dict[str, float]) -> str:
    """An engineer who agrees with the data (accepts low defect rates) but rejects the corner
    (too close to the furnace's limits)."""
    corner = params["temperature"] < 160.0 and params["time"] > 4.6
    return "reject" if corner or _defects(params) > 3.0 else "accept"


def _until_rejected_is_measured(url: str):
    """The study run by the engineer until an evaluation is asked at the point the label just
    before it rejected (a BO-phase label, not a calibration one); returns the study, that
    query and the label's history row."""
    study = create_study("anneal", "cobol", ANNEAL, storage=url, seed=0, n_initial_labels=6)
    for _ in range(40):
        q = study.ask()
        last = study.history(last=1)
        if (
            q.kind == "evaluate"
            and last
            and last[0]["kind"] == "label"
            and last[0]["answer"] is False
            and not last[0].get("calibration")
            and last[0]["params"] == q.params
        ):
            return study, q, last[0]
        study.tell(q, _engineer(q.params) if q.kind == "label" else _defects(q.params))
    raise AssertionError("the engineer's run never measured a point just rejected")


def test_the_open_evaluation_says_the_setting_was_rejected_and_why(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study, q, label = _until_rejected_is_measured(url)
    # the method's own account of the step: GP-LCB's x^u, not the expert's proposal
    assert study.policy.proposed_by(q.id) == "gp-lcb"
    assert q.rejected_before == f"This setting was rejected at query {label['query_id']}; {GP_LCB}"
    assert q.prompt().endswith(f"\n  ({q.rejected_before})")
    # asked again (another process, a reload): the same sentence
    again = load_study("anneal", storage=url).ask()
    assert again.id == q.id and again.rejected_before == q.rejected_before
    # measured, and GP-LCB's step stays there: the same sentence, the same label named
    study.tell(q, _defects(q.params))
    nxt = study.ask()
    assert nxt.kind == "evaluate" and nxt.params == q.params
    assert nxt.rejected_before == q.rejected_before


def test_a_calibration_label_rejected_is_said_as_calibration(tmp_path):
    """An engineer who rejects everything: the data never let them lead, and every label is a
    calibration question at GP-LCB's point, measured whatever the answer."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("anneal", "cobol", ANNEAL, storage=url, seed=0, n_initial_labels=4)
    said = []
    for _ in range(16):
        q = study.ask()
        if q.kind == "label":
            study.tell(q, "reject")
            continue
        last = study.history(last=1)[0]
        if last["kind"] == "label" and last.get("calibration") and last["params"] == q.params:
            assert q.rejected_before == (
                f"This setting was rejected at query {last['query_id']}; {CALIBRATION}"
            )
            said.append(q.id)
        elif q.rejected_before is not None:
            assert q.rejected_before.endswith(GP_LCB)  # an earlier reject, GP-LCB's step now
        study.tell(q, _defects(q.params))
    assert said


def test_no_sentence_where_nothing_was_rejected(tmp_path):
    """Accepted points, the initial design, other families: no sentence."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("anneal", "cobol", ANNEAL, storage=url, seed=0, n_initial_labels=4)
    for _ in range(12):
        q = study.ask()
        if q.kind == "evaluate":
            assert q.rejected_before is None, q
            study.tell(q, _defects(q.params))
        else:
            study.tell(q, "accept")
    level = create_study(
        "map",
        "randomized-straddle",
        {"parameters": [{"name": "T", "low": 0.0, "high": 1.0, "grid": 5}], "threshold": 0.5},
        storage=url,
        seed=0,
    )
    assert level.ask().rejected_before is None


def test_the_page_and_the_cli_say_it(tmp_path):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    _, q, label = _until_rejected_is_measured(url)
    sentence = f"This setting was rejected at query {label['query_id']}; {GP_LCB}"
    page = TestClient(create_app(url), follow_redirects=False).get("/studies/anneal").text
    note = re.search(r'<p class="meta" id="rejected-note">([^<]*)</p>', page)
    assert note is not None
    assert note.group(1).replace("&#39;", "'") == sentence
    assert page.index(f"Query {q.id}: measure") < note.start()
    r = run_cli(["study", "ask", "anneal", "--storage", url], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"query {q.id}: measure" in r.stdout and f"({sentence})" in r.stdout


def _no_sentence_evaluation(url: str):
    """The engineer's study run (accepting what they like) until an evaluation is asked at a
    setting no label rejected: the same study as :func:`_until_rejected_is_measured`, another
    name; returns the study and that query."""
    study = create_study("anneal-ok", "cobol", ANNEAL, storage=url, seed=0, n_initial_labels=4)
    for _ in range(20):
        q = study.ask()
        if q.kind == "evaluate" and study.n_answered >= 4:
            assert q.rejected_before is None
            return study, q
        study.tell(q, "accept" if q.kind == "label" else _defects(q.params))
    raise AssertionError("no evaluation asked")


def test_the_json_api_carries_it_over_http(tmp_path):
    """A program driving the study through the JSON API learns why as the page's reader does:
    ``rejected_before`` in the query of ``POST /api/studies/{name}/ask`` and in the status's
    ``open_query`` (``GET /api/studies/{name}``), the real ``boloop serve`` over HTTP; null on
    a query where nothing was rejected (the key is always there)."""
    pytest.importorskip("fastapi")
    httpx = pytest.importorskip("httpx")
    from serve_process import Served

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    _, q, label = _until_rejected_is_measured(url)
    sentence = f"This setting was rejected at query {label['query_id']}; {GP_LCB}"
    _, plain = _no_sentence_evaluation(url)
    served = Served(url)
    try:
        with httpx.Client(base_url=served.base, timeout=60) as client:
            asked = client.post("/api/studies/anneal/ask")
            assert asked.status_code == 200, asked.text
            body = asked.json()
            assert (body["id"], body["kind"], body["params"]) == (q.id, "evaluate", q.params)
            assert body["rejected_before"] == sentence
            status = client.get("/api/studies/anneal").json()
            assert status["open_query"]["id"] == q.id
            assert status["open_query"]["rejected_before"] == sentence
            other = client.post("/api/studies/anneal-ok/ask").json()
            assert other["id"] == plain.id and other["kind"] == "evaluate"
            assert "rejected_before" in other and other["rejected_before"] is None
            assert client.get("/api/studies/anneal-ok").json()["open_query"] == other
    finally:
        served.stop()


def test_the_cli_json_carries_it(tmp_path):
    """``boloop study ask --json`` and ``status --json`` (its ``open_query``) carry the sentence
    the question prints; a label's JSON has the key, null."""
    import json

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    _, q, label = _until_rejected_is_measured(url)
    sentence = f"This setting was rejected at query {label['query_id']}; {GP_LCB}"
    r = run_cli(["study", "ask", "anneal", "--storage", url, "--json"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    asked = json.loads(r.stdout)
    assert asked["id"] == q.id and asked["rejected_before"] == sentence
    r = run_cli(["study", "status", "anneal", "--storage", url, "--json"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["open_query"] == asked
    # a label (the first question of a new study): the key, null
    create_study("fresh", "cobol", ANNEAL, storage=url, seed=0, n_initial_labels=4)
    r = run_cli(["study", "ask", "fresh", "--storage", url, "--json"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    label_q = json.loads(r.stdout)
    assert label_q["kind"] == "label" and label_q["rejected_before"] is None
