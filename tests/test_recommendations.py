"""The typed recommendation of the policy contract (issue 13): every method of every family returns
a :mod:`boloop.recommendations` value from ``recommend()``, states in words what it is and what its
iteration counts, and the simulation's metric trackers read only that value."""

from __future__ import annotations

import json

import numpy as np
import pytest

from boloop.algorithms import list_methods, make_policy
from boloop.problems import get
from boloop.recommendations import BestPoint, LevelSetEstimate, Recommendation, SafeRecommendation
from boloop.simulate import simulate

#: one small problem per family, and the recommendation type its methods give
FAMILIES = {
    "levelset": ("levelset/toy", LevelSetEstimate),
    "preference": ("preference/toy", BestPoint),
    "safe": ("safe/toy", SafeRecommendation),
    "expert": ("expert/toy", BestPoint),
}
#: the library's own methods (other test modules register throw-away ones such as "zz-crash")
ALL = [
    (e.family, e.id)
    for e in list_methods()
    if e.family in FAMILIES and e.factory.__module__.startswith("boloop.")
]


def _answered(method: str, family: str, steps: int):
    problem = get(FAMILIES[family][0])
    policy = make_policy(method, problem, 0)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        q = policy.ask()
        answer = problem.answer(q, rng)
        if isinstance(answer, dict):  # only the outputs the query asks for (M-SafeUCB: g alone)
            answer = {k: v for k, v in answer.items() if k in q.outputs}
        policy.tell(q.id, answer)
    return policy, problem


@pytest.mark.parametrize(("family", "method"), ALL)
def test_every_method_recommends_a_typed_value_and_says_what_it_is(family: str, method: str):
    policy, problem = _answered(method, family, 3)
    rec = policy.recommend()
    expected = FAMILIES[family][1]
    if method == "toy-random" and family == "safe":
        expected = BestPoint  # the toy evaluates at random and recommends its best point
    assert isinstance(rec, expected)
    json.dumps(rec.to_dict())  # plain values only
    if isinstance(rec, BestPoint) and rec.point is not None:
        assert rec.point.shape == (problem.space.dim,)
        if rec.index is not None:
            np.testing.assert_array_equal(problem.space.points[rec.index], rec.point)
    assert policy.iteration_meaning and policy.recommendation_meaning
    assert set(policy.answer_counts) <= {"evaluations", "labels", "duels"}


def test_level_set_estimate_classifies_the_candidates_as_its_mask():
    policy, problem = _answered("randomized-straddle", "levelset", 6)
    est = policy.recommend()
    np.testing.assert_array_equal(est.classify(problem.space.points), est.upper)
    np.testing.assert_array_equal(est.lower, ~est.upper)
    # the posterior mean at another fixed set, kept incrementally, equals a fresh prediction
    X = np.linspace(0.0, 1.0, 17)[:, None]
    for _ in range(3):
        np.testing.assert_allclose(policy.posterior_mean_at(X), policy.predict(X)[0], atol=1e-10)
        q = policy.ask()
        policy.tell(q.id, problem.answer(q, np.random.default_rng(1)))


def test_safe_recommendation_is_a_certified_best_point():
    policy, problem = _answered("m-safeopt", "safe", 4)
    rec = policy.recommend()
    assert isinstance(rec, BestPoint) and isinstance(rec, Recommendation)
    i, j = divmod(rec.index, problem.space.n_s)
    assert rec.point[0] == problem.space.s_values[j]
    assert rec.best_s.shape == rec.boundary_s.shape == (problem.space.n_x,)
    assert set(rec.to_dict()) == {"point", "index", "best_s", "best_s_index", "boundary_s"}


def test_trace_stores_the_plain_recommendation():
    trace = simulate("mr-lpf", "preference/toy", 5, 0)
    assert set(trace.recommendation) == {"point", "index"}
    assert isinstance(trace.recommendation["index"], int)
