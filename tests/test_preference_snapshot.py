"""A preference policy pickled (a study snapshot) goes on bit for bit as the one never pickled.

A study stores its policy pickled beside the log (``boloop.study.snapshots``) and a later
command-line call loads it instead of replaying every duel. EUBO and its subclasses pickle a
small state (no option-by-option matrix: the Gram matrices and the posteriors' factors are
recomputed on load), so these tests check that what is recomputed is the same to the last bit:
the queries, the recommendations, ``describe()``, the posterior means and the random
generator's state, over many duels after each of several pickling points.
"""

from __future__ import annotations

import pickle
import sqlite3

import numpy as np
import pytest

from boloop.algorithms.registry import build_policy
from boloop.gp.kernels import SquaredExponential
from boloop.gp.utility_ep import UtilityPosteriorEP
from boloop.gp.utility_laplace import UtilityPosterior
from boloop.problems import get
from boloop.simulate import oracle_rng
from boloop.study import create_study, load_study

#: a few hundred options of three columns, no kernel given: the study default's setting
TABLE = "preference/random-table?n=300&table_seed=4"
#: the duels after which copies are pickled (the 10th is the first refit of EUBO's grid)
PICKLED_AT = (0, 4, 11, 23)
DUELS = 48

METHODS = [
    ("eubo-regret", {}),
    ("eubo", {}),
    ("dts", {}),
    ("eubo-regret", {"approximation": "ep"}),
    ("eubo", {"model_choice": "draw", "plausible_beta": 1.0, "repeat_duels": "never"}),
    ("eubo-regret", {"kernel": SquaredExponential(0.3, 2.0)}),
    ("eubo", {"kernel": SquaredExponential([0.2, 0.4, 0.3])}),  # fixed, one length-scale per axis
    ("eubo", {"recommend_rule": "copeland", "exploit_schedule": "sharpening", "exploit": 1.0}),
    ("mr-lpf", {"horizon": DUELS}),
    ("maxminlcb", {}),
    ("random", {}),
]


def _roundtrip(policy):
    return pickle.loads(pickle.dumps(policy, protocol=pickle.HIGHEST_PROTOCOL))


def _same(x, y) -> bool:
    """Exact equality of nested results (floats bit for bit; NaN equals NaN)."""
    if isinstance(x, dict):
        return isinstance(y, dict) and x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    if isinstance(x, list | tuple):
        return len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y))
    if isinstance(x, np.ndarray | float | np.floating):
        a, b = np.asarray(x), np.asarray(y)
        return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return type(x) is type(y) and x == y


def _state(policy) -> dict:
    """What a person or a simulation sees of a policy, exactly."""
    rec = policy.recommend()
    out = {
        "recommendation": (np.asarray(rec.point), rec.index),
        "describe": policy.describe(),
        "rng": policy.rng.bit_generator.state,
        "iteration": policy.iteration,
    }
    if hasattr(policy, "posterior_mean"):
        out["posterior_mean"] = policy.posterior_mean()
    return out


@pytest.mark.parametrize(("method", "options"), METHODS, ids=lambda v: str(v)[:40])
def test_a_pickled_policy_goes_on_bit_for_bit(method, options):
    """Copies pickled after 0, 4, 11 and 23 duels, and one copy pickled again at each of these
    points, ask the same duels as the policy never pickled, to the last bit, until 48 duels;
    after every duel their recommendation, ``describe()``, posterior mean (EUBO's family) and
    random generator's state are the same too."""
    problem = get(TABLE)
    live = build_policy(problem.policy_spec(method, 0, **options))
    rng = oracle_rng(0)
    copies = []
    chain = None
    for n in range(DUELS):
        if n in PICKLED_AT:
            copies.append(_roundtrip(live))
            chain = _roundtrip(live if chain is None else chain)
        others = [*copies, chain] if chain is not None else []
        q = live.ask()
        for other in others:
            q2 = other.ask()
            assert (q2.a_index, q2.b_index, q2.id) == (q.a_index, q.b_index, q.id), (n, method)
            assert np.array_equal(q2.a, q.a) and np.array_equal(q2.b, q.b)
        answer = problem.answer(q, rng)
        live.tell(q.id, answer)
        want = _state(live)
        for other in others:
            other.tell(q.id, answer)
            assert _same(_state(other), want), (n, method)
    assert len(copies) == len(PICKLED_AT)
    assert _same(_state(_roundtrip(live)), _state(live))  # after the last duel (MR-LPF: done)


@pytest.mark.parametrize("method", ["eubo-regret", "eubo", "dts"])
def test_eubo_pickles_no_option_by_option_matrix(method):
    """A snapshot of EUBO's family holds no m x m matrix: at 300 options and 30 duels its
    pickle is smaller than a tenth of one such matrix (720 kB), while the policy keeps several
    (one Gram matrix per length-scale, one prior per model of the mixture)."""
    problem = get(TABLE)
    policy = build_policy(problem.policy_spec(method, 0))
    rng = oracle_rng(1)
    for _ in range(30):
        q = policy.ask()
        policy.tell(q.id, problem.answer(q, rng))
    m = policy.m
    assert len(pickle.dumps(policy, protocol=pickle.HIGHEST_PROTOCOL)) < m * m * 8 / 10


def _duels(seed: int, self_duel: bool, m: int = 40, n: int = 30):
    rng = np.random.default_rng(seed)
    X = rng.random((m, 2))
    K = SquaredExponential(0.3, 2.0).k(X, X)
    w = rng.integers(m, size=n)
    los = rng.integers(m, size=n)
    los = np.where(los == w, (los + 1) % m, los)
    if self_duel:  # DTS asks them: a zero row of the duel-difference matrix
        los[0] = w[0]
    return K, w, los


def _same_posterior(p, q) -> None:
    assert p.log_evidence == q.log_evidence
    for a, b in ((p.mean(), q.mean()), (p.covariance(), q.covariance())):
        assert a.tobytes() == b.tobytes()
    assert p.factor().tobytes() == q.factor().tobytes()
    for r in (0, 7):
        assert p.difference_variance(r).tobytes() == q.difference_variance(r).tobytes()


@pytest.mark.parametrize("cls", [UtilityPosterior, UtilityPosteriorEP])
@pytest.mark.parametrize("n", [0, 1, 30])
def test_a_posterior_rebuilt_from_its_compact_state_is_the_same(cls, n):
    """``from_compact_state(K, compact_state())`` gives the same posterior bit for bit (mean,
    covariance, factor, evidence), from a state of vectors only; a warm start from the
    :class:`WarmStart` vectors is the warm start from the whole posterior."""
    K, w, los = _duels(3, self_duel=cls is UtilityPosterior)  # (EP's site would have no variance)
    post = cls(K, w[:n], los[:n])
    state = post.compact_state()
    assert all(np.ndim(v) <= 1 for v in state.values())  # no matrix in it
    _same_posterior(cls.from_compact_state(K, pickle.loads(pickle.dumps(state))), post)
    more = min(n + 5, w.size)
    by_post = cls(K, w[:more], los[:more], start=post)
    by_vectors = cls(K, w[:more], los[:more], start=pickle.loads(pickle.dumps(post.warm_start())))
    _same_posterior(by_vectors, by_post)
    steps = "sweeps" if cls is UtilityPosteriorEP else "newton_steps"
    assert getattr(by_vectors, steps) == getattr(by_post, steps)
    if n == w.size:  # the same duels again: a start at the fixed point is used and needs fewer
        assert getattr(by_vectors, steps) < getattr(cls(K, w, los), steps)


def test_a_preference_study_loads_its_snapshot_and_asks_what_a_replay_asks(tmp_path, monkeypatch):
    """A study of EUBO-regret (the family's default) on 300 options stores a small snapshot after
    its duels; a later load starts from it (no duel replayed) and asks, recommends and describes
    exactly what a full replay of the log does."""
    from boloop.algorithms.preference import RegretAwareEUBO
    from boloop.study import snapshots as snapshot_settings

    monkeypatch.setattr(snapshot_settings, "SNAPSHOT_AFTER_SECONDS", 0.0)
    monkeypatch.setattr(snapshot_settings, "SNAPSHOT_COST_FACTOR", 0.0)
    url = f"sqlite:///{tmp_path / 'pr.db'}"
    problem = get(TABLE)
    study = create_study("p", "eubo-regret", problem=TABLE, storage=url, seed=2)
    rng = oracle_rng(2)
    for _ in range(25):
        q = study.ask()
        study.tell(q.id, problem.answer(q.query, rng))
    con = sqlite3.connect(tmp_path / "pr.db")
    ((size,),) = con.execute("SELECT length(data) FROM boloop_snapshots").fetchall()
    con.close()
    assert size < 300 * 300 * 8 / 10  # no option-by-option matrix in it
    calls = []
    orig = RegretAwareEUBO.tell
    monkeypatch.setattr(
        RegretAwareEUBO, "tell", lambda self, qid, a: (calls.append(qid), orig(self, qid, a))[1]
    )
    loaded = load_study("p", storage=url)
    assert calls == []  # everything came from the snapshot
    replayed = load_study("p", storage=url, full_replay=True)
    assert len(calls) == 25
    for _ in range(6):
        qa, qb = loaded.ask(), replayed.ask()
        assert (qa.id, qa.query.a_index, qa.query.b_index) == (
            qb.id,
            qb.query.a_index,
            qb.query.b_index,
        )
        answer = problem.answer(qa.query, rng)
        loaded.tell(qa.id, answer)
        replayed.refresh()
        assert _same(loaded.recommend(), replayed.recommend())
        assert _same(loaded.policy.describe(), replayed.policy.describe())
        assert _same(loaded.policy.posterior_mean(), replayed.policy.posterior_mean())
