"""A method's proposals are checked against the space it was built on (``check_query``).

A newcomer's deliberately broken method proposed a point outside the bounds, a 3-D point in a
2-D space, an index naming another candidate and a point off the grid: ``simulate``, the bench
and a study measured and stored all of them. Each is now a :class:`ProposalError` naming the
method and what is wrong, raised before the query reaches an oracle or a study's log.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from boloop import simulate
from boloop.errors import InvalidInputError, ProposalError
from boloop.problems import get
from boloop.queries import BasePolicy, Evaluate, Query, check_query
from boloop.recommendations import LevelSetEstimate
from boloop.spaces import Box, CandidateSet, SafeSpace

Propose = Callable[["Proposer"], Any]


class Proposer(BasePolicy):
    """A policy whose ``_propose`` is given: the mistakes a method's author can make."""

    method_id = "proposer"

    def __init__(self, family: str, points: np.ndarray | None, propose: Propose) -> None:
        super().__init__(0)
        self.family = family  # type: ignore[misc]
        self.points = points
        self.propose = propose

    def _propose(self) -> Query:
        return self.propose(self)

    def _observe(self, query: Query, answer: Any) -> None:
        pass

    def recommend(self, final_update: bool = True) -> Any:
        upper = None if self.points is None else np.zeros(len(self.points), bool)
        return LevelSetEstimate(0.0, self.iteration, self.points, upper, lambda X: X[:, 0] > 9)


def _proposer(problem_id: str, propose: Propose) -> Proposer:
    problem = get(problem_id)
    space = problem.space
    points = space.points if isinstance(space, CandidateSet) else None
    return Proposer(problem.family, points, propose)


def _run(problem_id: str, propose: Propose) -> None:
    """A refused proposal: ``simulate`` raises before the oracle answers."""
    simulate(_proposer(problem_id, propose), get(problem_id), 2, seed=0)


def _accepted(problem_id: str, propose: Propose) -> None:
    """An accepted proposal: the check ``simulate`` and a study make returns it unchanged."""
    pol = _proposer(problem_id, propose)
    q = pol.ask()
    assert check_query(q, get(problem_id).space, "method 'proposer'") is q


GRID = "levelset/sinusoidal"  # 50 x 50 candidates on [0, 1] x [0, 2]


@pytest.mark.parametrize(
    ("propose", "expected"),
    [
        (lambda p: p._new_evaluate(p.points[0] + 100.0), r"x0=100, x1=100 is not on the grid"),
        (lambda p: p._new_evaluate(p.points[0] + 1e-3), r"x0=0\.001 is not a grid value"),
        (lambda p: p._new_evaluate(np.zeros(3)), r"x of 3 coordinates .* the space has 2 \(x0, x1\)"),
        (lambda p: p._new_evaluate(p.points[:2]), r"x of 4 coordinates"),
        (lambda p: p._new_evaluate(p.points[5], index=7), r"candidate index 7, which is the point"),
        (lambda p: p._new_evaluate(p.points[0], index=10**6), r"index 1000000; .* 2500 candidates"),
        (lambda p: p._new_evaluate(p.points[0] + 100.0, index=0), r"index must name its point"),
    ],
    ids=["outside", "off-grid", "3-d", "two-points", "index-of-another", "index-range", "index+out"],
)
def test_a_finite_space_refuses_what_is_not_its_candidate(propose: Propose, expected: str) -> None:
    with pytest.raises(ProposalError, match=r"method 'proposer' proposed query 0 \(evaluate\)"):
        _run(GRID, propose)
    with pytest.raises(ProposalError, match=expected):
        _run(GRID, propose)


def test_a_candidate_with_its_own_index_or_none_is_accepted() -> None:
    _accepted(GRID, lambda p: p._new_evaluate(p.points[7], index=7))
    _accepted(GRID, lambda p: p._new_evaluate(p.points[7]))
    # a value as a person writes it (fewer digits) names the grid value: within the tolerance
    _accepted(GRID, lambda p: p._new_evaluate(p.points[7] + 1e-12, index=7))


def test_a_box_refuses_a_point_outside_its_bounds_and_not_one_on_them() -> None:
    box = "expert/holder2?a=2"  # Hoelder on [0, 10]^2
    with pytest.raises(ProposalError, match=r"outside the space's bounds \[\[0\.0, 10\.0\]"):
        _run(box, lambda p: p._new_evaluate(np.array([10.5, 0.0])))
    with pytest.raises(ProposalError, match="x of 1 coordinates"):
        _run(box, lambda p: p._new_evaluate(np.array([0.0])))
    _accepted(box, lambda p: p._new_evaluate(np.array([10.0, 0.0])))
    # an index in a Box names the policy's own candidates drawn from it: not checked
    _accepted(box, lambda p: p._new_evaluate(np.array([1.0, 2.0]), index=12345))


def test_a_safe_action_is_a_level_of_s_and_a_row_of_x() -> None:
    space = get("safe/toy").space
    assert isinstance(space, SafeSpace)
    outputs = ("f", "g")
    ok = np.array([space.s_values[1], space.x_points[2, 0]])
    _accepted("safe/toy", lambda p: p._new_evaluate(ok, outputs=outputs))
    bad_s = np.array([space.s_values[1] + 0.013, space.x_points[2, 0]])
    with pytest.raises(ProposalError, match="not a grid value"):
        _run("safe/toy", lambda p: p._new_evaluate(bad_s, outputs=outputs))
    flat = 2 * space.n_s + 3  # x row 2, level 3: not the point given
    with pytest.raises(ProposalError, match=f"candidate index {flat}, which is the point"):
        _run("safe/toy", lambda p: p._new_evaluate(ok, index=flat, outputs=outputs))


def test_both_options_of_a_duel_are_checked() -> None:
    space = get("preference/toy").space
    P = space.points
    _accepted("preference/toy", lambda p: p._new_compare(P[0], P[3], 0, 3))
    with pytest.raises(ProposalError, match=r"\(compare\) with b = .* candidate index 4"):
        _run("preference/toy", lambda p: p._new_compare(P[0], P[3], 0, 4))
    with pytest.raises(ProposalError, match=r"\(compare\) off the space's candidates"):
        _run("preference/toy", lambda p: p._new_compare(P[0] + 0.0123, P[3]))


def test_a_propose_that_returns_no_query_names_the_hook() -> None:
    pol = Proposer("levelset", None, lambda p: None)
    with pytest.raises(ProposalError, match=r"proposed NoneType None, not a query: its _propose"):
        pol.ask()
    assert pol.pending is None  # nothing was taken as the open query
    assert issubclass(ProposalError, InvalidInputError)


def test_check_query_without_a_space_checks_the_type_only() -> None:
    q = Evaluate(id=0, x=np.array([5.0, 5.0]))
    assert check_query(q, None) is q
    assert check_query(q, Box([0.0, 0.0], [10.0, 10.0])) is q
    with pytest.raises(ProposalError):
        check_query(q, Box([0.0, 0.0], [1.0, 1.0]))


# -- what a method of one's own returns besides its queries -------------------------------------
def test_a_level_set_estimate_whose_sets_do_not_fit_is_refused_where_it_is_made() -> None:
    """Before, a mask of 3 entries for 2,500 candidates was taken, and a study's status failed
    later with an IndexError about boolean indices."""
    P = get(GRID).space.points
    with pytest.raises(InvalidInputError, match=r"bool mask of shape \(2500,\), .* shape \(3,\)"):
        LevelSetEstimate(0.0, 1, P, np.zeros(3, bool), lambda X: X[:, 0] > 0)
    with pytest.raises(InvalidInputError, match="bool mask"):
        LevelSetEstimate(0.0, 1, P, np.zeros(len(P)), lambda X: X[:, 0] > 0)
    with pytest.raises(InvalidInputError, match="needs points"):
        LevelSetEstimate(0.0, 1, None, np.zeros(len(P), bool), lambda X: X[:, 0] > 0)
    with pytest.raises(InvalidInputError, match="classify must be a function"):
        LevelSetEstimate(0.0, 1, P, np.zeros(len(P), bool), None)  # type: ignore[arg-type]
    est = LevelSetEstimate(0.0, 1, P, P[:, 0] > 0.5, lambda X: X[:, 0] > 0.5)
    assert est.lower is not None and int(est.lower.sum()) == int((P[:, 0] <= 0.5).sum())


_REGISTERING = """
import uuid
import numpy as np
from boloop.algorithms import make_policy, register_method
from boloop.errors import BoloopError
from boloop.problems import get
from boloop.queries import BasePolicy
from boloop.recommendations import LevelSetEstimate
from boloop.study import create_study


class OffGrid(BasePolicy):
    family = "levelset"

    def __init__(self, points, seed):
        super().__init__(seed)
        self.points = points

    def _propose(self):
        return self._new_evaluate(self.points[0] + 1e-3)

    def _observe(self, query, answer):
        pass

    def recommend(self, final_update=True):
        return LevelSetEstimate(0.0, self.iteration, None, None, lambda X: X[:, 0] > 9)


class NoSuper(OffGrid):
    def __init__(self):  # forgets super().__init__(seed)
        self.points = None


register_method("offgrid", "levelset", "a test's")(lambda spec, seed: OffGrid(spec.space.points, seed))
register_method("nosuper", "levelset", "a test's")(lambda spec, seed: NoSuper())
register_method("notapolicy", "levelset", "a test's")(lambda spec, seed: object())
for method in ("nosuper", "notapolicy"):
    try:
        make_policy(method, get("levelset/toy"))
    except BoloopError as exc:
        print(type(exc).__name__, exc)
space = {"threshold": 0.5, "parameters": [{"name": "t", "low": 0.0, "high": 1.0, "grid": 11}]}
storage = "memory://" + uuid.uuid4().hex
try:
    create_study("s", "offgrid", space, storage=storage, seed=0).ask()
except BoloopError as exc:
    print(type(exc).__name__, exc)
from boloop.study import load_study
study = load_study("s", storage=storage)
print("stored:", len(study.history()), study.status()["open_query"])
"""


def test_factories_and_a_study_of_broken_methods(tmp_path) -> None:
    """In a child process: the methods registered here must not reach the other tests (the web
    page's method list builds every registered method)."""
    script = tmp_path / "broken.py"
    script.write_text(_REGISTERING)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == (
        "InvalidInputError method 'nosuper': NoSuper.__init__ must call super().__init__(seed) "
        "(it sets self.rng, self.iteration and self.history)"
    )
    assert lines[1].startswith("InvalidInputError method 'notapolicy': its factory returned object")
    # a study of a method proposing off the grid: refused at the first ask, the method named,
    # and no query stored
    assert lines[2].startswith("ProposalError method 'offgrid' proposed query 0 (evaluate) off")
    assert "t=0.001" in lines[2]
    assert lines[3] == "stored: 0 None"
