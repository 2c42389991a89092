"""The simulated Adachi et al. (AISTATS 2024) baseline ``adachi-2024`` and the expert problems'
``compare`` oracle: end to end through ``boloop.simulate``, determinism, the trust discount,
bad answers, and the synthetic expert's pick probabilities."""

from __future__ import annotations

import numpy as np
import pytest

import boloop
from boloop.algorithms import make_policy
from boloop.algorithms.expert import CollaborativeCompare
from boloop.errors import AnswerTypeError, InvalidInputError, QueryStateError
from boloop.problems import get
from boloop.queries import Compare, Evaluate, Label
from boloop.spaces import CandidateSet

_FAST = {"n_candidates": 64}


def _run(problem_id: str, budget: int, seed: int, **options):
    prob = get(problem_id)
    pol = make_policy("adachi-2024", prob, seed, **_FAST, **options)
    trace = boloop.simulate(pol, prob, budget, seed)
    return pol, trace


def test_runs_end_to_end_and_is_deterministic():
    """8 iterations on Ackley-4D: every iteration ends with one evaluation, each preceded by a
    comparison unless the candidates coincided; the same seed gives the same run."""
    pol, trace = _run("expert/ackley4?a=2", 8, 0)
    assert pol.iteration == 8 and pol.n_evaluations == 8
    assert len(pol.outcomes) == 8 and set(pol.outcomes) <= {"lcb", "belief", "coincide"}
    kinds = [type(q).__name__ for q, _ in pol.history]
    assert kinds[:10] == ["Label"] * 10 and kinds.count("Evaluate") == 3 + 8
    n_compare = kinds.count("Compare")
    assert n_compare == 8 - pol.outcomes.count("coincide") and n_compare > 0
    last = trace.records[-1]["metrics"]
    assert last["expert_queries"] == n_compare and last["evaluations"] == 8
    assert np.isfinite(last["simple_regret"]) and last["simple_regret"] >= 0
    pol2, _ = _run("expert/ackley4?a=2", 8, 0)
    np.testing.assert_array_equal(pol.X_f, pol2.X_f)
    assert pol.outcomes == pol2.outcomes
    pol3, _ = _run("expert/ackley4?a=2", 8, 1)
    assert not np.array_equal(pol.X_f, pol3.X_f)


def test_trust_decays_until_the_candidates_coincide():
    """gamma = 0.5: w_t = 0.5^t falls below w_min = 1e-3 at t = 10, after which every
    iteration evaluates the vanilla LCB point without asking."""
    pol, _ = _run("expert/holder2?a=2", 13, 0, gamma=0.5)
    np.testing.assert_allclose(pol.trust_history, 0.5 ** np.arange(13))
    assert pol.outcomes[10:] == ["coincide"] * 3
    assert "coincide" not in pol.outcomes[:3]  # early on the human is asked
    evals = [q for q, _ in pol.history if isinstance(q, Evaluate)]
    assert len(evals) == 3 + 13


def test_late_lcb_candidate_on_a_finite_set():
    """Finite candidates, fixed hyperparameters: with zero trust the belief candidate is the
    LCB candidate (same index), so no comparison is asked."""
    prob = get("expert/holder2?a=2")
    space = CandidateSet.grid(np.array([[0.0, 10.0], [0.0, 10.0]]), 11)
    pol = CollaborativeCompare(space, 0, w0=0.0, fit_hyperparameters=False)
    rng = np.random.default_rng(0)
    for _ in range(15):
        q = pol.ask()
        assert not isinstance(q, Compare)
        pol.tell(q.id, prob.answer(q, rng))
    assert pol.iteration == 2 and pol.outcomes == ["coincide"] * 2


def _open_compare(pol, prob, rng):
    q = pol.ask()
    while not isinstance(q, Compare):
        pol.tell(q.id, prob.answer(q, rng))
        q = pol.ask()
    return q


def test_bad_answers_rejected_and_state_unchanged():
    prob = get("expert/holder2?a=2")
    pol = make_policy("adachi-2024", prob, 0, **_FAST)
    rng = np.random.default_rng(0)
    q = _open_compare(pol, prob, rng)
    before = (list(pol.outcomes), pol.n_expert_queries, len(pol.history), pol.iteration)
    for bad in ["b", 2, -1, True, 0.5, None]:
        with pytest.raises(AnswerTypeError):
            pol.tell(q.id, bad)
        assert (list(pol.outcomes), pol.n_expert_queries, len(pol.history), pol.iteration) == (
            before
        )
        assert pol.ask() is q
    with pytest.raises(QueryStateError):
        pol.add_observations(q.a[None, :], [1.0])
    pol.tell(q.id, 1)  # the belief candidate is evaluated next, in the same iteration
    nxt = pol.ask()
    assert isinstance(nxt, Evaluate) and np.allclose(nxt.x, q.b)
    assert pol.outcomes[-1] == "belief" and pol.iteration == before[3]


def test_invalid_options():
    prob = get("expert/holder2")
    for kw in [{"gamma": 1.5}, {"gamma": -0.1}, {"w0": np.nan}, {"w_min": -1.0}]:
        with pytest.raises(InvalidInputError):
            make_policy("adachi-2024", prob, 0, **kw)


def test_problem_compare_oracle():
    """The synthetic expert (a = 2) prefers the optimum to the worst corner; the Bernoulli mode
    answers 1 with probability (1 + p_b - p_a) / 2, checked on 4000 draws within 4 s.e."""
    det = get("expert/holder2?a=2&compare_mode=deterministic")
    good, bad = det.x_opt, np.array([5.0, 5.0])
    q = Compare(id=0, a=good, b=bad)
    assert det.compare(q, np.random.default_rng(0)) == 0
    assert det.compare(Compare(id=1, a=bad, b=good), np.random.default_rng(0)) == 1
    prob = get("expert/holder2?a=1")
    a, b = np.array([8.0, 9.0]), np.array([3.0, 4.0])
    p_acc = 1.0 - prob.reject_probability(np.vstack([a, b]))
    p1 = 0.5 * (1.0 + p_acc[1] - p_acc[0])
    rng = np.random.default_rng(1)
    n = 4000
    freq = np.mean([prob.compare(Compare(id=0, a=a, b=b), rng) for _ in range(n)])
    assert abs(freq - p1) < 4 * np.sqrt(p1 * (1 - p1) / n)
    assert 0.05 < p1 < 0.45  # the draw is informative: a is the better point
    with pytest.raises(InvalidInputError):
        get("expert/holder2?compare_mode=sometimes")


def test_labels_are_only_initial():
    pol, _ = _run("expert/holder2?a=2", 3, 0)
    assert sum(isinstance(q, Label) for q, _ in pol.history) == 10
    assert pol.n_expert_queries == sum(isinstance(q, Compare) for q, _ in pol.history)


def test_study_round_trip(tmp_path):
    """An ``adachi-2024`` study answered through ``boloop.study`` (labels, evaluations and
    comparisons) reloads to the same open query."""
    from boloop.simulate import oracle_rng
    from boloop.study import create_study, load_study

    url = f"sqlite:///{tmp_path / 'studies.db'}"
    prob, rng = get("expert/holder2?a=2"), oracle_rng(0)
    study = create_study("c", "adachi-2024", problem="expert/holder2?a=2", storage=url, seed=0)
    kinds = []
    for _ in range(17):  # 10 labels, 3 evaluations, then compare/evaluate pairs
        q = study.ask()
        kinds.append(q.kind)
        study.tell(q.id, prob.answer(q.query, rng))
    assert "compare" in kinds
    q = study.ask()
    assert load_study("c", storage=url).ask().query == q.query
    assert load_study("c", storage=url, full_replay=True).ask().query == q.query


def test_adachi_runs_on_the_expert_toy_and_counts_compares_as_expert_queries():
    """expert/toy answers Compare (the option nearer its belief centre), so every expert-family
    method runs on it; a compare is an expert query in the toy's metric as in the papers' ones."""
    import boloop
    from boloop.problems import get

    problem = get("expert/toy")
    policy = boloop.make_policy("adachi-2024", problem, seed=0)
    trace = boloop.simulate(policy, problem, 8, 0)
    kinds = [q.kind for q, _ in policy.history]
    assert "compare" in kinds
    asked_expert = sum(k in ("label", "compare") for k in kinds)
    assert trace.step_rows()[-1]["expert_queries"] == asked_expert
