"""COBOL, COBOHL and the baselines of the expert family: bookkeeping, bad input, problems."""

from __future__ import annotations

import math

import numpy as np
import pytest

from boloop.algorithms import make_policy
from boloop.algorithms.expert import (
    COBOHL,
    COBOL,
    GPLCB,
    AlternatingExpert,
    ExpertSampling,
    HumanIntervention,
    RandomSearch,
)
from boloop.errors import AnswerTypeError, InvalidInputError, QueryStateError
from boloop.problems import get
from boloop.queries import Evaluate, Label
from boloop.simulate import simulate
from boloop.spaces import Box, CandidateSet

FAST = {"n_candidates": 128}


def _sphere(x):
    return float(np.sum((np.asarray(x) - 0.3) ** 2))


def _run(policy, expert, iterations, f=_sphere, max_queries=2000):
    """Drive a policy by hand; ``expert(x) -> bool`` (True = accept)."""
    n = 0
    while policy.iteration < iterations:
        q = policy.ask()
        if isinstance(q, Label):
            policy.tell(q.id, bool(expert(q.x)))
        else:
            policy.tell(q.id, f(q.x))
        n += 1
        assert n < max_queries
    return policy


def test_bookkeeping_four_outcomes():
    """Each iteration is exactly one of: vanilla, unasked x^c, accept + evaluation, reject.
    |Q^f| + #rejects = T; the GP data grow only on evaluations (the paper's accounting;
    Algorithm 1's outcomes: the agreement gate, which adds "calibrate", is off)."""
    box = Box([0, 0], [1, 1])
    pol = COBOL(box, seed=3, budget="iterations", agreement_gate=False, **FAST)
    rng = np.random.default_rng(0)
    T = 12
    n_f_before = []
    while pol.iteration < T:
        q = pol.ask()
        n_f_before.append(pol.X_f.shape[0])
        if isinstance(q, Label):
            pol.tell(q.id, bool(rng.random() < 0.5))
        else:
            pol.tell(q.id, _sphere(q.x))
    assert len(pol.outcomes) == T
    assert set(pol.outcomes) <= {"vanilla", "unasked", "accept", "reject"}
    rejects = pol.outcomes.count("reject")
    assert pol.n_evaluations + rejects == T
    assert pol.n_evaluations == T - rejects
    asked = pol.outcomes.count("accept") + rejects
    assert pol.n_expert_queries == asked
    assert pol.X_f.shape[0] == pol.n_initial + pol.n_evaluations
    # every step of Q^g is answered by a label, every step of Q^f by an evaluation
    kinds = [type(q).__name__ for q, _ in pol.history if not q.initial]
    assert kinds.count("Evaluate") == pol.n_evaluations
    assert kinds.count("Label") == asked


def test_lambda_never_negative_and_moves_with_g_lower():
    """lambda >= 0 always (the clip of eq. 5), and lambda rises iff g_lower(x^c) > 0."""
    pol = COBOL(Box([0, 0], [1, 1]), seed=1, lambda0=0.05, zeta=0.5, agreement_gate=False, **FAST)
    rng = np.random.default_rng(1)
    _run(pol, lambda x: bool(rng.random() < 0.3), 10)
    assert all(lam >= 0 for lam in pol.lambda_history)
    assert len(pol.dual_history) >= 10
    clipped = 0
    for before, z, after in pol.dual_history:
        assert after == pytest.approx(max(0.0, before + 0.5 * z))
        assert (after > before) == (z > 0)
        clipped += before + 0.5 * z < 0
    assert clipped > 0  # the clip was exercised (the reference code forgets it)


def test_g_thr_infinite_never_asks_and_always_accept_evaluates():
    box = Box([0, 0], [1, 1])
    pol = _run(COBOL(box, seed=0, g_thr=math.inf, **FAST), lambda x: True, 6)
    assert pol.n_expert_queries == 0
    assert set(pol.outcomes) <= {"vanilla", "unasked"}
    pol = _run(COBOL(box, seed=0, **FAST), lambda x: True, 6)
    assert pol.n_evaluations == 6
    assert "reject" not in pol.outcomes


def test_cobohl_label_consumes_the_iteration():
    pol = _run(COBOHL(Box([0, 0], [1, 1]), seed=2, budget="iterations", **FAST), lambda x: True, 8)
    asked = pol.outcomes.count("accept") + pol.outcomes.count("reject")
    assert pol.n_evaluations + asked == 8


def test_bad_input_is_rejected_and_changes_nothing():
    pol = COBOL(Box([0, 0], [1, 1]), seed=0, **FAST)
    q = pol.ask()
    assert isinstance(q, Label)  # the initial labels come first
    n_hist = len(pol.history)
    with pytest.raises(AnswerTypeError):
        pol.tell(q.id, 1)  # not a bool
    with pytest.raises(AnswerTypeError):
        pol.tell(q.id, "yes")
    with pytest.raises(QueryStateError):
        pol.tell(q.id + 7, True)  # a point that was never proposed
    assert len(pol.history) == n_hist and pol.X_g.shape[0] == 0 and pol.pending is q
    pol.tell(q.id, True)
    with pytest.raises(QueryStateError):
        pol.tell(q.id, False)  # already answered
    # an evaluation before the expert answered the pending label: there is no such query
    _run(pol, lambda x: False, 1)
    while True:
        q = pol.ask()
        if isinstance(q, Label) and not q.initial:
            break
        pol.tell(q.id, True if isinstance(q, Label) else _sphere(q.x))
    n_f = pol.X_f.shape[0]
    with pytest.raises(QueryStateError):
        pol.tell(q.id + 1, 0.5)
    with pytest.raises(AnswerTypeError):
        pol.tell(q.id, 0.5)  # a number for a label
    assert pol.X_f.shape[0] == n_f and pol.pending is q
    with pytest.raises(InvalidInputError):
        COBOL(Box([0, 0], [1, 1]), eta=0.5)
    with pytest.raises(InvalidInputError):
        COBOL(Box([0, 0], [1, 1]), no_harm="other")


def test_same_seed_same_trace_and_shared_initial_design():
    p = get("expert/ackley4", a=2)
    t1 = simulate(make_policy("cobol", p, 4, **FAST), p, 3, seed=4)
    t2 = simulate(make_policy("cobol", p, 4, **FAST), p, 3, seed=4)
    key = [(r["kind"], r["points"], r["answer"]) for r in t1.records]
    assert key == [(r["kind"], r["points"], r["answer"]) for r in t2.records]
    design = {}
    for m in ("cobol", "gp-lcb", "random", "expert-sampling", "cobohl"):
        pol = make_policy(m, p, 9)
        points = []
        while len(points) < pol.n_initial:  # answer the initial labels, collect the evaluations
            q = pol.ask()
            assert q.initial
            if isinstance(q, Evaluate):
                points.append(q.x)
            pol.tell(q.id, True if isinstance(q, Label) else _sphere(q.x))
        design[m] = np.array(points)
    assert design["cobol"].shape == (3, p.space.dim)
    for m in design:
        np.testing.assert_array_equal(design[m], design["cobol"])


def test_baselines_and_finite_candidate_sets():
    box = Box([0, 0], [1, 1])
    pol = _run(GPLCB(box, seed=0, **FAST), lambda x: True, 5)
    assert pol.n_evaluations == 5 and pol.n_expert_queries == 0
    pol = _run(RandomSearch(box, seed=0), lambda x: True, 5)
    assert pol.n_evaluations == 5
    pol = _run(ExpertSampling(box, seed=0), lambda x: x[0] < 0.5, 5)
    assert pol.n_evaluations == 5
    assert all(q.x[0] < 0.5 for q, _ in pol.history if isinstance(q, Evaluate) and not q.initial)
    for cls in (HumanIntervention, AlternatingExpert):
        pol = _run(cls(box, seed=0, **FAST), lambda x: x[0] < 0.5, 6)
        assert pol.n_evaluations == 6
        evaluated = [q for q, _ in pol.history if isinstance(q, Evaluate)]
        labelled = {tuple(q.x): a for q, a in pol.history if isinstance(q, Label)}
        # every evaluated point the expert was asked about was accepted (the pick or the LCB)
        assert all(labelled.get(tuple(q.x), True) for q in evaluated)
    cs = CandidateSet.grid([[0, 1], [0, 1]], 9)
    pol = _run(COBOL(cs, seed=0), lambda x: x[0] < 0.6, 6)
    for q, _ in pol.history:
        assert q.index is not None
        np.testing.assert_array_equal(cs.points[q.index], q.x)
    assert pol.recommend().point is not None


def test_problems_registry_and_expert_models():
    p = get("expert/ackley4?a=-2")
    assert p.a == -2 and p.family == "expert"
    assert p.value(p.x_opt[None])[0] == pytest.approx(p.f_opt, abs=1e-9)
    # no benchmark has its optimum at the centre of its box
    for name in ("ackley4", "holder2", "rastrigin2", "michalewicz5", "rosenbrock3"):
        q = get(f"expert/{name}")
        centre = 0.5 * (q.space.lower + q.space.upper)
        assert np.linalg.norm(q.x_opt - centre) > 0.05 * np.linalg.norm(q.space.width)
        assert q.value(q.x_opt[None])[0] == pytest.approx(q.f_opt, abs=1e-3)
        assert q.rho(np.array([q.f_min]))[0] == pytest.approx(-3)
    # a = -2: the expert rejects x* with probability S(6)
    assert p.reject_probability(p.x_opt[None])[0] == pytest.approx(1 / (1 + math.exp(-6)))
    q = get("expert/ackley4")
    assert q.reject_probability(q.x_opt[None])[0] == pytest.approx(0.0474, abs=1e-3)
    strong, wrong = get("expert/ackley4?expert=mvn-strong"), get("expert/ackley4?expert=mvn-wrong")
    assert strong.reject_probability(strong.x_opt[None])[0] == pytest.approx(0.0)
    assert wrong.reject_probability(wrong.x_opt[None])[0] > 0.9
    tv = get("expert/ackley4?expert=time-varying&alpha_lr=5")
    tv.new_tracker()
    assert tv.accuracy() == 0.0
    with pytest.raises(InvalidInputError):
        get("expert/ackley4?expert=psychic")
    for task in ("li-standard", "li-ma", "polymer", "ionic-liquid"):
        b = get(f"expert/battery-{task}")
        assert "STAND-IN" in b.description
        assert b.noise_std == 1.0
        X = b.space.sample(50, seed=0)
        assert np.all(np.isfinite(b.value(X)))
        assert np.all(b.value(X) >= b.f_opt - 1e-6)


def test_tracker_counts_bo_phase_only():
    p = get("expert/holder2", a=1)
    tr = simulate(make_policy("expert-sampling", p, 0), p, 4, seed=0)
    final = tr.final_metrics
    assert final["evaluations"] == 4
    assert final["simple_regret"] >= 0
    labels = sum(1 for r in tr.records if r["kind"] == "label")
    assert final["expert_queries"] == labels
    assert final["cumulative_regret"] >= final["simple_regret"]


@pytest.mark.parametrize("consistent", [False, True])
@pytest.mark.parametrize("primal_dual", [True, False])
def test_screened_expert_candidate_is_the_exact_minimiser(primal_dual, consistent):
    """x^c from the screened branch and bound equals the brute-force argmin over candidates of
    f_lower + lambda g_lower (primal-dual) or of the constrained score. A coin-flipping expert
    (x^c is GP-LCB's x^u here) and one who accepts only x_0 > 0.5, away from the optimum at 0.3
    (x^c is another point: the expert's term decides)."""
    cs = CandidateSet.grid([[0, 1], [0, 1]], 15)
    pol = COBOL(
        cs,
        seed=5,
        lambda0=1.0,
        primal_dual=primal_dual,
        norm_bound=2.0,
        reject_rule="paper",
        agreement_gate=False,  # every step solves line 4 (no gated GP-LCB step) ...
        harm_budget=None,  # ... and the expert is never dismissed
    )
    rng = np.random.default_rng(5)
    _run(pol, (lambda x: x[0] > 0.5) if consistent else (lambda x: bool(rng.random() < 0.5)), 4)
    n_decisions = len(pol.width_history)
    pol.ask()
    assert len(pol.width_history) == n_decisions + 1  # this ask solved lines 4-6 afresh
    decision = pol.last_decision
    # the models after the ask (public, side-effect free): f_lower (eq. 2b) in the GP's
    # standardised units, g_lower (39) at every candidate
    pred = pol.predict(cs.points, bounds=True)
    y_mean, y_std = float(np.mean(pol.y_f)), float(np.std(pol.y_f)) or 1.0
    f_low = (pred["f_mean"] - pol.sqrt_beta_f * pred["f_std"] - y_mean) / y_std
    assert f_low[np.flatnonzero(np.all(cs.to_unit() == decision["x_u"], axis=1))[0]] == (
        pytest.approx(f_low.min(), abs=1e-9)
    )  # x^u is GP-LCB's point: the units are right
    g_low = pred["g_lower"]
    if primal_dual:
        brute = f_low + decision["lambda"] * g_low
    else:
        brute = np.where(g_low <= 0, f_low, 1e6 + g_low)
    [index] = np.flatnonzero(np.all(cs.to_unit() == decision["x_c"], axis=1))
    assert brute[index] == pytest.approx(brute.min(), abs=1e-9)
    assert consistent != np.array_equal(decision["x_c"], decision["x_u"])


def test_reject_streak_guard():
    """lambda_0 = 0 (x^c = x^u) and an expert who rejects everything: with max_reject_streak = 2
    no more than 2 rejects occur in a row (the guard evaluates x^u next); without the guard the
    same rejected point keeps coming back (Algorithm 1 as printed: ``reject_rule="paper"``, the
    paper's iteration budget)."""

    def longest_reject_run(outcomes):
        best = cur = 0
        for o in outcomes:
            cur = cur + 1 if o == "reject" else 0
            best = max(best, cur)
        return best

    box = Box([0, 0], [1, 1])
    paper = {"reject_rule": "paper", "budget": "iterations", "agreement_gate": False, **FAST}
    pol = _run(COBOL(box, seed=0, lambda0=0.0, max_reject_streak=2, **paper), lambda x: False, 9)
    assert longest_reject_run(pol.outcomes) <= 2 and pol.guarded >= 1
    assert pol.n_evaluations == pol.outcomes.count("vanilla") + pol.outcomes.count("unasked")
    pol = _run(COBOL(box, seed=0, lambda0=0.0, **paper), lambda x: False, 9)
    assert pol.guarded == 0 and longest_reject_run(pol.outcomes) > 2


def test_battery_user_data_loader(tmp_path):
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(0, 2, 20), rng.random(20), rng.random(20)])
    kappa = np.exp(1.0 - (X[:, 0] - 1.2) ** 2)
    path = tmp_path / "my.csv"
    np.savetxt(path, np.column_stack([X, kappa]), delimiter=",", header="m,r_dmc,r_ma,kappa")
    p = get("expert/battery-li-ma", path=str(path))
    assert "user data" in p.description
    # the GP fit recovers the optimum's molarity roughly
    assert abs(p.x_opt[0] - 1.2) < 0.3
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(InvalidInputError):
        get("expert/battery-li-ma", path=str(bad))


@pytest.mark.parametrize("cls", [COBOL, GPLCB])
def test_recommend_has_no_side_effects(cls):
    """Calling recommend() between answers (GP out of date: it must refit) leaves every later
    query exactly as without the calls, and recommends what the policy's own refit gives."""

    def drive(call_recommend: bool) -> tuple[list, list]:
        pol = cls(Box([0, 0], [1, 1]), 3, **FAST)
        xs, recs = [], []
        while pol.iteration < 4:
            q = pol.ask()
            xs.append(np.asarray(q.x).copy())
            if isinstance(q, Label):
                pol.tell(q.id, bool(q.x[0] < 0.5))
            else:
                pol.tell(q.id, _sphere(q.x))
                if call_recommend:
                    recs.append(pol.recommend())
        return xs, recs

    plain, _ = drive(False)
    probed, recs = drive(True)
    assert len(plain) == len(probed)
    for a, b in zip(plain, probed, strict=True):
        np.testing.assert_array_equal(a, b)
    assert all(r.point is not None and r.point.shape == (2,) for r in recs)


def test_refit_growth_skips_refits_but_conditions_on_every_value():
    """refit_growth > 0: between refits the GP keeps its length-scales yet holds every value."""
    pol = GPLCB(Box([0, 0], [1, 1]), 0, refit_growth=10.0, **FAST)
    scales = []
    while pol.iteration < 4:
        q = pol.ask()
        pol.tell(q.id, _sphere(q.x))
        scales.append(pol.describe()["lengthscale"])
    pol.ask()
    assert pol.gp.n == pol.X_f.shape[0] == 7
    assert scales[-1] == scales[-2] == scales[-3]  # no refit after the first
    with pytest.raises(InvalidInputError):
        GPLCB(Box([0, 0], [1, 1]), 0, refit_growth=-1.0)


def test_default_refits_once_the_values_grew_by_a_tenth():
    """The default ``refit_growth=0.1`` (as the other families): the f-kernel's length-scales
    change only at proposals where the values have grown by a tenth since the last fit (every
    value up to 10, then 11, 13, 15, ..., 21, 24, 27, 30, 33, 37), never in between."""
    pol = COBOL(Box([0, 0], [1, 1]), 0, **FAST)
    due, last = [], 3  # the first fit: the first proposal after the 3 initial values
    for n in range(3, 41):
        if n == 3 or n - last >= max(1.0, 0.1 * last):
            due.append(n)
            last = n
    n_values, previous, changed_at = 0, None, []
    while n_values < 40:
        q = pol.ask()
        scales = pol.describe()["lengthscale"]
        if previous is not None and scales != previous:
            changed_at.append(n_values)
        previous = scales
        if isinstance(q, Label):
            pol.tell(q.id, bool(_sphere(q.x) < 0.2))
        else:
            pol.tell(q.id, _sphere(q.x))
            n_values += 1
    assert changed_at, "the length-scales were never refitted"
    assert set(changed_at) <= set(due), (changed_at, due)
    assert any(n > 20 for n in changed_at)  # refits go on as the data grow


def _first_calibration_label(pol, accept, max_queries=300):
    """Drive ``pol`` (labels by ``accept``, values by ``_sphere``) to its first calibration label."""
    for _ in range(max_queries):
        q = pol.ask()
        if isinstance(q, Label) and q.calibration:
            return q
        pol.tell(q.id, bool(accept(q.x)) if isinstance(q, Label) else _sphere(q.x))
    raise AssertionError("no calibration label asked")


@pytest.mark.parametrize("answer", [True, False])
def test_a_calibration_label_says_its_point_is_measured_whatever_the_answer(answer):
    """agreement_gate: before the data show the expert agrees with f, COBOL may ask a label at
    GP-LCB's point and measure that point whatever the answer; the query says so
    (``Label.calibration``, also in ``to_dict``), and an ordinary label does not."""
    pol = COBOL(Box([0, 0], [1, 1]), 0, n_initial_labels=4, **FAST)
    q = _first_calibration_label(pol, accept=lambda x: x[0] > 0.5)  # an expert against f
    assert q.to_dict()["calibration"] is True
    pol.tell(q.id, answer)
    nxt = pol.ask()
    assert isinstance(nxt, Evaluate)
    np.testing.assert_array_equal(nxt.x, q.x)
    first = COBOL(Box([0, 0], [1, 1]), 0, n_initial_labels=4, **FAST).ask()
    assert isinstance(first, Label) and not first.calibration
    assert "calibration" not in first.to_dict()


def test_a_study_prompt_tells_the_expert_about_a_calibration_label(tmp_path):
    from boloop.study import create_study

    study = create_study(
        "cal", "cobol", space=Box([0, 0], [1, 1]), storage=f"sqlite:///{tmp_path / 's.db'}",
        seed=0, n_initial_labels=4, **FAST,
    )
    for _ in range(300):
        q = study.ask()
        if q.kind == "label" and q.calibration:
            break
        study.tell(q.id, bool(q.query.x[0] > 0.5) if q.kind == "label" else _sphere(q.query.x))
    else:
        raise AssertionError("no calibration label asked")
    assert "measured next whatever you answer" in q.prompt()
    assert q.to_dict()["calibration"] is True
    # the history and the export say which labels were calibration labels (a person's trial:
    # nothing after the page showed it)
    study.tell(q.id, True)
    rows = study.history()
    assert rows[-1]["calibration"] is True
    assert not any(r.get("calibration") for r in rows[:-1])
    out = tmp_path / "h.csv"
    study.export(str(out))
    import csv

    with open(out, newline="") as fh:
        exported = list(csv.DictReader(fh))
    flags = [r["calibration"] for r in exported if r["kind"] == "label"]
    assert flags[-1] == "True" and set(flags[:-1]) == {"False"}


def test_reading_the_agreement_statistics_changes_nothing():
    """``agreement`` and ``agreement_probability`` are public: reading them between answers
    (GP out of date) leaves every later query as without the reads; before any measurement
    they are 1/2 without warnings."""
    import warnings

    def drive(read: bool) -> list[np.ndarray]:
        pol = COBOL(Box([0, 0], [1, 1]), 1, n_initial_labels=4, **FAST)
        xs = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            if read:
                assert pol.agreement == 0.5 and pol.agreement_probability == 0.5
            while pol.iteration < 6:
                q = pol.ask()
                xs.append(np.asarray(q.x).copy())
                pol.tell(q.id, bool(q.x[0] < 0.5) if isinstance(q, Label) else _sphere(q.x))
                if read:
                    assert 0.0 <= pol.agreement <= 1.0
                    assert 0.0 <= pol.agreement_probability <= 1.0
        return xs

    plain, probed = drive(False), drive(True)
    assert len(plain) == len(probed)
    for a, b in zip(plain, probed, strict=True):
        np.testing.assert_array_equal(a, b)


def test_cobohl_evaluates_an_accepted_proposal_instead_of_asking_it_forever():
    """Algorithm 2 as printed re-asks an accepted point whose width stays above g_thr, so an
    always-accepting expert got 145 labels and no evaluation (a newcomer's trial). With the
    default ``reject_rule="veto"`` an accepted proposal is evaluated next, at that point; with
    ``"paper"`` the printed loop stays available."""
    box = Box([150.0, 1.0], [250.0, 5.0])
    pol = COBOHL(box, seed=0, **FAST)
    n_queries = 0
    while pol.n_evaluations < 8:
        q = pol.ask()
        n_queries += 1
        assert n_queries < 100, "COBOHL keeps asking without evaluating"
        if isinstance(q, Label):
            pol.tell(q.id, bool(q.x[1] < 3.0))
            if q.x[1] < 3.0 and not q.initial:
                nxt = pol.ask()
                assert isinstance(nxt, Evaluate)
                np.testing.assert_array_equal(nxt.x, q.x)
        else:
            pol.tell(q.id, float((q.x[0] - 200.0) ** 2 / 1e3 + q.x[1]))
    assert pol.labels_asked <= pol.n_evaluations + 1
    printed = COBOHL(box, seed=0, reject_rule="paper", **FAST)
    for _ in range(60):
        q = printed.ask()
        printed.tell(q.id, bool(q.x[1] < 3.0) if isinstance(q, Label) else float(q.x[1]))
    assert printed.labels_asked > 10 * max(printed.n_evaluations - printed.n_initial, 1)


@pytest.mark.parametrize("budget", ["evaluations", "iterations"])
def test_status_says_what_the_iteration_counts(tmp_path, budget):
    """A study's status explains ``iteration`` as the policy counts it: f-evaluations by
    default, proposals with ``budget="iterations"`` (a newcomer saw 'one per proposal' next
    to a count of evaluations)."""
    from boloop.study import create_study

    study = create_study(
        "it", "cobol", space=Box([0, 0], [1, 1]), storage=f"sqlite:///{tmp_path / 's.db'}",
        seed=0, n_initial_labels=4, budget=budget, **FAST,
    )
    evaluations = 0
    while study.status()["iteration"] < 4:
        q = study.ask()
        if q.kind == "label":
            study.tell(q.id, bool(q.query.x[0] < 0.5))
        else:
            evaluations += int(not q.query.initial)
            study.tell(q.id, _sphere(q.query.x))
    status = study.status()
    if budget == "evaluations":
        assert "one per evaluation" in status["iteration_meaning"]
        assert status["iteration"] == evaluations
    else:
        assert "one per proposal" in status["iteration_meaning"]


@pytest.mark.parametrize("pid", ["expert/ackley4", "expert/battery-li-ma"])
def test_an_unknown_problem_option_lists_the_valid_ones(pid):
    with pytest.raises(InvalidInputError, match=r"unknown option\(s\) b .*valid options: .*\ba\b"):
        get(f"{pid}?b=1")
