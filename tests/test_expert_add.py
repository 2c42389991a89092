"""``add_observations`` of the expert family: evaluations of f the user made on their own.

The next proposal after ``add_observations`` equals the one of a policy that received the same
points through answered Evaluate queries (initial design: on a box with fitted hyperparameters;
BO phase: GP-LCB on a finite set with fixed hyperparameters, where a proposal uses no randomness);
bad input changes nothing; and ``Study.add`` works through ``boloop.study`` and replays on load.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from boloop.algorithms import make_policy
from boloop.algorithms.expert import COBOL, GPLCB
from boloop.errors import AnswerTypeError, InvalidInputError, OutOfSpaceError, QueryStateError
from boloop.problems import get
from boloop.queries import Evaluate, Label
from boloop.simulate import oracle_rng
from boloop.spaces import Box, CandidateSet
from boloop.study import create_study, load_study


def _f(x: np.ndarray) -> float:
    return float(np.sum((np.asarray(x) - 0.3) ** 2))


def _answer_labels(pol, accept=lambda x: bool(x[0] < 0.5)):
    """Answer Label queries until the policy asks an Evaluate; return that Evaluate."""
    q = pol.ask()
    while isinstance(q, Label):
        pol.tell(q.id, accept(q.x))
        q = pol.ask()
    assert isinstance(q, Evaluate)
    return q


def _same(q1, q2):
    assert type(q1) is type(q2)
    np.testing.assert_array_equal(q1.x, q2.x)
    assert q1.index == q2.index


@pytest.mark.parametrize("cls", [GPLCB, COBOL])
def test_initial_design_through_add_equals_through_evaluate(cls):
    """Box, fitted hyperparameters: the initial points given by add_observations instead of
    answered Evaluates lead to the same first BO proposal (and the same f-model)."""
    box = Box([0.0, 0.0], [1.0, 1.0])
    kw = {"n_candidates": 64, "n_initial_labels": 4} if cls is COBOL else {"n_candidates": 64}
    a, b = cls(box, 3, **kw), cls(box, 3, **kw)
    xs = []
    for _ in range(a.n_initial):
        q = _answer_labels(a)
        a.tell(q.id, _f(q.x))
        xs.append(q.x)
    qb = _answer_labels(b)  # the first initial evaluation is open on b: answer nothing, add
    _same(qb, Evaluate(id=-1, x=xs[0]))
    b.tell(qb.id, _f(qb.x))
    b.add_observations(np.array(xs[1:]), [_f(x) for x in xs[1:]])
    assert b.X_f.shape == a.X_f.shape and np.array_equal(b.y_f, a.y_f)
    qa_next, qb_next = a.ask(), b.ask()
    _same(qa_next, qb_next)
    assert a.iteration == b.iteration == 0 and b.n_evaluations == 0


def test_bo_phase_add_equals_evaluate_on_a_finite_set():
    """GP-LCB, finite candidates, fixed hyperparameters: answering a BO Evaluate at x or adding
    (x, y) gives the same next proposal; the added point is not an iteration."""
    space = CandidateSet.grid(np.array([[0.0, 1.0], [0.0, 1.0]]), 9)
    a = GPLCB(space, 0, fit_hyperparameters=False)
    b = GPLCB(space, 0, fit_hyperparameters=False)
    for pol in (a, b):
        for _ in range(pol.n_initial):
            q = pol.ask()
            pol.tell(q.id, _f(q.x))
    q = a.ask()  # first BO proposal
    _same(q, b.ask())
    a.tell(q.id, _f(q.x))
    # b keeps the same query open: adding is refused
    with pytest.raises(QueryStateError, match="open query"):
        b.add_observations(q.x[None, :], [_f(q.x)])
    c = GPLCB(space, 0, fit_hyperparameters=False)  # same data, but the BO point is added
    for _ in range(c.n_initial):
        qc = c.ask()
        c.tell(qc.id, _f(qc.x))
    c.add_observations(q.x[None, :], [_f(q.x)])
    _same(a.ask(), c.ask())
    assert a.iteration == 1 and c.iteration == 0
    assert a.n_evaluations == 1 and c.n_evaluations == 0


def test_cobol_bo_phase_add_equals_evaluate_on_a_finite_set():
    """COBOL, finite candidates, fixed hyperparameters, zeta = 0 (lambda does not move when a
    proposal is made, so the policy that proposed and the one that did not share it)."""
    space = CandidateSet.grid(np.array([[0.0, 1.0], [0.0, 1.0]]), 7)
    kw = {"fit_hyperparameters": False, "zeta": 0.0, "n_initial_labels": 5, "g_thr": np.inf}
    a, c = COBOL(space, 1, **kw), COBOL(space, 1, **kw)
    for pol in (a, c):
        for _ in range(pol.n_initial):
            q = _answer_labels(pol)
            pol.tell(q.id, _f(q.x))
    q = _answer_labels(a)
    a.tell(q.id, _f(q.x))
    c.add_observations(q.x[None, :], [_f(q.x)])
    np.testing.assert_array_equal(a.X_f, c.X_f)
    _same(_answer_labels(a), _answer_labels(c))


def test_bad_input_changes_nothing():
    box = Box([0.0, 0.0], [1.0, 1.0])
    pol = GPLCB(box, 0, n_candidates=32)
    for _ in range(pol.n_initial):
        q = pol.ask()
        pol.tell(q.id, _f(q.x))
    X0, y0 = pol.X_f.copy(), pol.y_f.copy()
    for X, y, err in [
        ([[0.5, 0.5]], [np.nan], InvalidInputError),
        ([[0.5, 0.5]], [np.inf], InvalidInputError),
        ([[0.5, 0.5]], [1.0, 2.0], InvalidInputError),
        ([[0.5, 0.5], [0.2, 0.2]], [1.0], InvalidInputError),
        ([[0.5, 0.5]], ["abc"], InvalidInputError),
        ([[0.5, 0.5]], ["1.5"], InvalidInputError),  # as tell: text is not a number
        ([[0.5, 0.5]], [True], InvalidInputError),  # nor a boolean
        ([[0.5, 0.5, 0.5]], [1.0], InvalidInputError),
        ([[1.5, 0.5]], [1.0], OutOfSpaceError),
    ]:
        with pytest.raises(err):
            pol.add_observations(X, y)
        assert np.array_equal(pol.X_f, X0) and np.array_equal(pol.y_f, y0)
    space = CandidateSet.grid(np.array([[0.0, 1.0]]), 5)
    fin = GPLCB(space, 0)
    with pytest.raises(OutOfSpaceError):
        fin.add_observations([[0.3]], [1.0])  # not a candidate
    assert fin.X_f.shape == (0, 1)


def _log_rows(url: str) -> list[tuple]:
    con = sqlite3.connect(url.removeprefix("sqlite:///"))
    try:
        return con.execute(
            "SELECT seq, kind, payload FROM boloop_events ORDER BY event_id"
        ).fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("problem_id", ["expert/toy", "expert/ackley4"])
def test_study_add_with_cobol(tmp_path, problem_id):
    """``Study.add`` on a COBOL study: the measurement enters the f-data, is replayed on load
    (same next query, incremental and full replay), is refused while a query is open (log
    unchanged) and can be undone."""
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    problem, rng = get(problem_id), oracle_rng(0)
    opts = {"fit_hyperparameters": False, "n_candidates": 64}
    study = create_study("e", "cobol", problem=problem_id, storage=url, seed=0, **opts)
    names = problem.space.names
    x = {n: float(v) for n, v in zip(names, problem.space.lower * 0.5 + problem.space.upper * 0.5)}
    study.add(x, 0.25)
    assert study.policy.X_f.shape[0] == 1
    q0 = study.ask()
    study.tell(q0.id, problem.answer(q0.query, rng))
    q1 = study.ask()
    assert load_study("e", storage=url).ask().query == q1.query
    assert load_study("e", storage=url, full_replay=True).ask().query == q1.query
    rows = study.history()
    assert [r["source"] for r in rows] == ["added", "query"]
    before = _log_rows(url)
    with pytest.raises(QueryStateError, match="open query"):
        study.add(x, 0.25)
    assert _log_rows(url) == before
    study.undo()
    study.undo()
    fresh = make_policy("cobol", get(problem_id), 0, **opts).ask()
    assert study.n_answered == 0 and study.ask().query == fresh


def test_a_single_measurement_is_a_number_or_named_as_one():
    """A policy measuring one value takes a number or ``{"f"|"y"|"value": number}``; any other
    name (a parameter, another family's output ``g``) is refused, by tell and by observe, with
    a message that does not name an internal query id; ``Study.add`` stores ``f=0.1`` as the
    number 0.1 (one ``value`` column in the export)."""
    box = Box([0.0, 0.0], [1.0, 1.0])
    pol = GPLCB(box, 0, n_candidates=32)
    q = pol.ask()
    for bad in ({"temperature": 3.0}, {"g": 5.0}, {"f": 1.0, "g": 2.0}):
        with pytest.raises(AnswerTypeError, match="one value"):
            pol.tell(q.id, bad)
        with pytest.raises(AnswerTypeError) as err:
            pol.observe([[0.5, 0.5]], [bad])
        assert "query -1" not in str(err.value)
    assert pol.history == []
    pol.tell(q.id, {"f": 0.5})
    assert pol.y_f.tolist() == [0.5]


def test_study_add_stores_a_named_single_value_as_the_number(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    study = create_study("n", "gp-lcb", space=Box([0, 0], [1, 1]), storage=url, seed=0)
    study.add({"x0": 0.5, "x1": 0.5}, "f=0.1")
    with pytest.raises(AnswerTypeError):
        study.add({"x0": 0.5, "x1": 0.5}, {"g": 0.3})
    assert [r["answer"] for r in study.history()] == [0.1]
    out = tmp_path / "n.csv"
    study.export(out)
    header = out.read_text().splitlines()[0].split(",")
    assert "value" in header and not any(h.startswith("value.") for h in header)


def test_predict_refuses_points_outside_the_box():
    pol = GPLCB(Box([0.0, 0.0], [1.0, 1.0]), 0, n_candidates=32)
    for _ in range(pol.n_initial):
        q = pol.ask()
        pol.tell(q.id, _f(q.x))
    assert pol.predict([[0.5, 0.5]])["f_mean"].shape == (1,)
    with pytest.raises(OutOfSpaceError, match="outside"):
        pol.predict([[5.0, 0.5]])


def test_a_log_written_before_the_checks_still_replays(tmp_path):
    """Logs written before this version's checks load: an added measurement stored as a
    mapping under any one name (Study.add stored 'loss=0.3' as {"loss": 0.3}), and a COBOL
    label stored before labels carried the calibration flag (the flag is bookkeeping: a label
    equals its replay with or without it)."""
    import json

    url = f"sqlite:///{tmp_path / 's.db'}"
    study = create_study("old", "gp-lcb", space=Box([0, 0], [1, 1]), storage=url, seed=0)
    study.add({"x0": 0.2, "x1": 0.3}, 0.3)
    con = sqlite3.connect(tmp_path / "s.db")
    with con:
        (seq, payload), = con.execute(
            "SELECT seq, payload FROM boloop_events WHERE kind = 'added'"
        ).fetchall()
        old = {**json.loads(payload), "answer": {"loss": 0.3}}
        con.execute("UPDATE boloop_events SET payload = ? WHERE seq = ?", (json.dumps(old), seq))
        con.execute("DELETE FROM boloop_snapshots")
    con.close()
    again = load_study("old", storage=url, full_replay=True)
    assert again.policy.y_f.tolist() == [0.3]
    assert Label(id=3, x=[0.1, 0.2], calibration=True) == Label(id=3, x=[0.1, 0.2])


def test_an_expert_study_without_a_method_runs_cobol(tmp_path):
    """A newcomer's trial expected COBOL to be the expert family's default and was refused; it is
    (registry FAMILY_DEFAULTS, the one method that uses the expert with no harm measured)."""
    from boloop.algorithms.registry import default_method
    from boloop.study.core import create_study

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("vet", None, problem="expert/ackley4?a=2", storage=url, seed=0)
    assert study.method == "cobol" == default_method("expert")
    assert study.ask().kind == "label"
