"""A safe method that cannot certify more although better settings may lie beyond: the stall it
reports (policy and study), and the user's smoothness assumption ``min_lengthscale_g``."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import boloop.problems as problems
from boloop.algorithms import make_policy
from boloop.errors import BoloopError, InvalidInputError
from boloop.simulate import simulate
from boloop.study import create_study, list_studies, load_study
from cli_runner import run_cli
from study_samples import reactor_space, reactor_truth


def _reactor_spec(settings: dict | None = None) -> dict:
    """A small stand-in of a newcomer's reactor: heater power (monotone, 20 levels), flow (8)."""
    return reactor_space(20, 8, settings)


def _answer(study, n: int, seed: int = 0) -> float:
    """Answer ``n`` queries from the reactor's truth plus noise; returns the highest power."""
    rng = np.random.default_rng(seed)
    top = 0.0
    for _ in range(n):
        q = study.ask()
        P, F = float(q.params["power"]), float(q.params["flow"])
        truth = reactor_truth(P, F)
        study.tell(
            q.id, {"f": truth["f"] + 0.01 * rng.normal(), "g": truth["g"] + 0.3 * rng.normal()}
        )
        top = max(top, P)
    return top


def test_a_stuck_study_says_so_in_status_with_axis_lengthscale_step_and_option():
    study = create_study("reactor", "m-safeopt", _reactor_spec(), seed=0, storage="memory://st1")
    top = _answer(study, 40)
    assert top == 0.0  # the defaults never leave the lowest power level here
    st = study.status()
    stuck = [w for w in st["warnings"] if "stuck" in w]
    assert len(stuck) == 1
    msg = stuck[0]
    d = study.policy.describe()
    stall = d["stall"]
    assert stall is not None and stall["axis"] == "power"
    assert stall["answers"] >= 10
    step = 100.0 / 19
    assert stall["grid_step"] == pytest.approx(step)
    assert stall["lengthscale_g"] == pytest.approx(d["lengthscale_g"][0])
    # the message names the axis, g's length-scale along it, the grid step and the option
    assert "power" in msg and f"{step:.4g}" in msg and f"{stall['lengthscale_g']:.3g}" in msg
    assert "min_lengthscale_g" in msg and "assumption" in msg
    # a study's options are fixed: the warning names the command that carries the answers over
    floor = stall["suggested_min_lengthscale_g"]
    assert 0.2 <= floor <= 1
    assert f"--from reactor --storage memory://st1 --option min_lengthscale_g={floor:g}" in msg


def test_the_stall_reaches_the_cli_status(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("reactor", "m-safeopt", _reactor_spec(), seed=0, storage=url)
    _answer(study, 30)
    done = run_cli(["study", "status", "reactor", "--storage", url], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "WARNING: the method is stuck" in out and "min_lengthscale_g" in out


def test_no_stall_in_a_healthy_run():
    prob = problems.get("safe/branin")
    policy = make_policy("m-safeopt", prob, 0, fit_hyperparameters=True)
    seen = []
    simulate(policy, prob, 40, seed=0, on_record=lambda r: seen.append(policy.stall()))
    assert len(seen) >= 40 and all(s is None for s in seen)
    assert policy.describe()["stall"] is None


def test_the_assumption_unsticks_the_stand_in_and_is_shown_in_status():
    study = create_study(
        "reactor",
        "m-safeopt",
        _reactor_spec({"min_lengthscale_g": 0.3}),
        seed=0,
        storage="memory://st2",
    )
    top = _answer(study, 40)
    assert top > 30.0
    st = study.status()
    assert not [w for w in st["warnings"] if "stuck" in w]
    settings = st["settings"]
    assert settings["min_lengthscale_g"] == [0.3, 0.3]
    # g's length-scales (the ones the certification uses) are at least the floor, per axis
    ls = np.asarray(settings["lengthscale_g"])
    assert np.all(ls >= 0.3 * np.array([100.0, 9.0]) * (1 - 1e-9))


@pytest.mark.parametrize("floor", [0.3, [0.4, 0.1]])
def test_fitted_lengthscales_of_g_are_at_least_the_floor(floor, caplog):
    prob = problems.get("safe/branin")
    policy = make_policy("safeopt-mc", prob, 0, fit_hyperparameters=True, min_lengthscale_g=floor)
    width = np.array([np.ptp(prob.space.s_values), *np.ptp(prob.space.x_points, axis=0)])
    with caplog.at_level(logging.INFO, logger="boloop"):
        simulate(policy, prob, 15, seed=0)
    d = policy.describe()
    lo = np.broadcast_to(np.asarray(floor, dtype=float), (2,)) * width
    assert d["min_lengthscale_g"] == list(np.broadcast_to(np.asarray(floor, float), (2,)))
    assert np.all(np.asarray(d["lengthscale_g"]) >= lo * (1 - 1e-9))
    # where the floor binds, it is said (log and describe)
    if d["min_lengthscale_g_binds"]:
        assert any("min_lengthscale_g" in r.message for r in caplog.records)


def test_a_high_floor_binds_and_is_logged(caplog):
    prob = problems.get("safe/branin")
    policy = make_policy("m-safeopt", prob, 0, fit_hyperparameters=True, min_lengthscale_g=1.0)
    with caplog.at_level(logging.INFO, logger="boloop"):
        simulate(policy, prob, 8, seed=0)
    d = policy.describe()
    assert d["min_lengthscale_g_binds"]  # a length-scale of the whole box is longer than the fit
    assert any("held at min_lengthscale_g" in r.message for r in caplog.records)


def test_default_describe_has_no_floor():
    prob = problems.get("safe/branin")
    d = make_policy("predvar", prob, 0, fit_hyperparameters=True).describe()
    assert d["min_lengthscale_g"] is None and d["stall"] is None


@pytest.mark.parametrize(
    "bad",
    [0.0, -0.1, 1.5, float("nan"), float("inf"), [0.2, 0.2, 0.2], [], "0.2", True, [0.2, None]],
)
def test_bad_floors_are_refused(bad):
    prob = problems.get("safe/branin")
    with pytest.raises(BoloopError):
        make_policy("m-safeopt", prob, 0, fit_hyperparameters=True, min_lengthscale_g=bad)


def test_the_floor_is_refused_without_learned_kernels():
    prob = problems.get("safe/branin")
    with pytest.raises(InvalidInputError, match="fixed kernels"):
        make_policy("m-safeopt", prob, 0, min_lengthscale_g=0.2)
    with pytest.raises(InvalidInputError, match="paper"):
        make_policy(
            "predvar",
            prob,
            0,
            fit_hyperparameters=True,
            hyperparameters="paper",
            min_lengthscale_g=0.2,
        )


@pytest.mark.parametrize("bad", [0.0, 2.0, [0.2, 0.2, 0.2], "x"])
def test_a_study_refuses_a_bad_floor_and_stores_nothing(tmp_path, bad):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    with pytest.raises(BoloopError):
        create_study("r", "m-safeopt", _reactor_spec({"min_lengthscale_g": bad}), storage=url)
    with pytest.raises(BoloopError):
        create_study("r", "m-safeopt", _reactor_spec(), storage=url, min_lengthscale_g=bad)
    with pytest.raises(BoloopError):  # fixed kernels take no such assumption
        create_study(
            "r",
            "m-safeopt",
            _reactor_spec({"fit_hyperparameters": False, "min_lengthscale_g": 0.2}),
            storage=url,
        )
    assert list_studies(url) == []


def test_the_floor_round_trips_through_a_stored_study(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study(
        "r", "m-safeopt", _reactor_spec({"min_lengthscale_g": [0.25, 0.1]}), storage=url, seed=1
    )
    _answer(study, 12)
    before = study.status()
    again = load_study("r", storage=url)
    after = again.status()
    assert before["settings"]["min_lengthscale_g"] == [0.25, 0.1]
    assert after["settings"]["min_lengthscale_g"] == [0.25, 0.1]
    assert after["settings"]["lengthscale_g"] == before["settings"]["lengthscale_g"]
    assert again.ask().params == study.ask().params
    # as an option at create, too
    other = create_study(
        "o", "predvar", _reactor_spec(), storage=url, seed=1, min_lengthscale_g=0.2
    )
    assert load_study("o", storage=url).status()["settings"]["min_lengthscale_g"] == [0.2, 0.2]
    assert other.status()["options"] == {"min_lengthscale_g": 0.2}


def test_the_stall_is_on_the_study_page(tmp_path):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    url = f"sqlite:///{tmp_path / 'web.db'}"
    # the noise variances of _answer's noise (with the defaults, 1e-5, the page would also show
    # the warning that repeated measurements contradict them: test_noise_check.py)
    study = create_study(
        "reactor", "m-safeopt", _reactor_spec(), seed=0, storage=url, noise_g=0.09, noise_f=1e-4
    )
    _answer(study, 30)
    page = TestClient(create_app(url, None), follow_redirects=False).get("/studies/reactor")
    assert page.status_code == 200
    # a notice (amber), not the red alarm of a measured value over the limit
    assert 'id="study-warnings"' not in page.text
    notice = page.text.split('id="study-stuck"', 1)[1].split("</div>", 1)[0]
    assert "the method is stuck" in notice and "min_lengthscale_g" in notice
    assert "--from reactor" in notice
    assert study.status()["stuck"] in study.status()["warnings"]


def test_hyperparameter_learning_min_lengthscale_raises_the_lower_bounds():
    from boloop.gp.exact import ExactGP
    from boloop.gp.hyperparameters import HyperparameterLearning
    from boloop.gp.kernels import Matern

    gp = ExactGP(Matern(2.5, lengthscale=[1.0, 1.0]), 1e-4)
    X = np.random.default_rng(0).uniform(size=(40, 2)) * [10.0, 2.0]
    gp.set_data(X, np.sin(X[:, 0]) + X[:, 1])
    width = [10.0, 2.0]
    default = HyperparameterLearning().bounds_for(gp, width)
    floored = HyperparameterLearning(min_lengthscale=(0.3, 0.01)).bounds_for(gp, width)
    assert floored["lengthscale[0]"][0] == pytest.approx(3.0)
    assert floored["lengthscale[1]"] == default["lengthscale[1]"]  # 0.01 < the fit's 0.025
    assert floored["lengthscale[0]"][1] >= 2 * 3.0  # the shrinking cap never contradicts it
    HyperparameterLearning(min_lengthscale=0.3).fit(gp, width, rng=0)
    assert np.all(np.asarray(gp.kernel.lengthscale) >= np.array([3.0, 0.6]) * (1 - 1e-9))
    for bad in (0.0, 1.01, (0.2, float("nan")), "0.3"):
        with pytest.raises(InvalidInputError):
            HyperparameterLearning(min_lengthscale=bad)


def _dose_policy(g_noise: float = 0.0, noise_g: float | None = None):
    """M-SafeOpt on a dose (monotone, 9 levels, h = 1.5) by timing grid, and the answers of a
    truth with g = 0.1 + 0.03 dose (f noisy; g with noise of sd ``g_noise``, the model's
    ``noise_g`` variance when given)."""
    from boloop.algorithms.safe import MSafeOpt
    from boloop.spaces import SafeSpace

    space = SafeSpace(np.linspace(0, 40, 9), np.linspace(0, 24, 7)[:, None], ["dose", "timing"])
    extra = {} if noise_g is None else {"noise_g": noise_g}
    policy = MSafeOpt(space, 1.5, L_f=1.0, L_g_prime=1.0, seed=3, **extra)
    rng = np.random.default_rng(0)

    def answer(x) -> dict:
        d, t = float(x[0]), float(x[1])
        g = 0.1 + 0.03 * d + g_noise * rng.normal()
        return {"f": 50 + d - (t - 12) ** 2 / 10 + 0.3 * rng.normal(), "g": g}

    return policy, answer


def test_repeats_that_cannot_unblock_report_the_stall_before_the_window():
    """g noise-free at dose 0 (a lab's instrument reading): the method measures settings of
    dose 0 again, whose exact values cannot narrow g at the next dose, so nothing changes and
    it asks the same again. The stall is reported at the third such proposal, not after
    ``stall_window`` answers, and says why."""
    policy, answer = _dose_policy()
    for _ in range(policy.n_initial):
        q = policy.ask()
        policy.tell(q, answer(q.x))
    asked = []
    while policy.stall() is None:
        q = policy.ask()
        asked.append(tuple(np.round(q.x, 9)))
        if policy.stall() is None:
            policy.tell(q, answer(q.x))
        assert len(asked) < policy.stall_window, "not reported before the window"
    stall = policy.stall()
    assert stall["repeats"] == 3 and stall["answers"] == len(asked) - 1 < policy.stall_window
    assert all(x[0] == 0.0 for x in asked)  # all at dose 0, the level it cannot leave
    assert "Its last 3 queries measured settings again" in stall["message"]
    assert policy.recommend().boundary_s.max() == 0.0


def test_repeats_that_refits_can_move_wait_for_the_window():
    """A fine dose grid (41 levels) with g measured with noise (sd 0.3, the model told so):
    the method climbs, then repeats settings while refits of g's learned model (data at many
    levels) can still move its width one level up. Repeats are then no reason to report a
    stall early (such a rule was followed by growth in 5 of 8 runs): every stall reported
    waits for the window."""
    from boloop.algorithms.safe import MSafeOpt
    from boloop.spaces import SafeSpace

    space = SafeSpace(np.linspace(0, 40, 41), np.linspace(0, 24, 7)[:, None], ["dose", "timing"])
    policy = MSafeOpt(space, 1.5, L_f=1.0, L_g_prime=1.0, seed=3, noise_g=0.09)
    rng = np.random.default_rng(3)
    seen: set[tuple[float, ...]] = set()
    run = longest = reported = 0
    for _ in range(80):
        q = policy.ask()
        x = tuple(np.round(q.x, 9))
        run = run + 1 if (x in seen and not q.initial) else 0
        longest = max(longest, run)
        seen.add(x)
        stall = policy.stall()
        if stall is not None:
            reported += 1
            assert stall["repeats"] == 0 and stall["answers"] >= policy.stall_window
        d, t = float(q.x[0]), float(q.x[1])
        g = 0.1 + 0.03 * d + 0.3 * rng.normal()
        policy.tell(q, {"f": 50 + d - (t - 12) ** 2 / 10 + 0.3 * rng.normal(), "g": g})
    assert longest >= 3  # it did repeat settings three times and more in a row
    assert policy.recommend().boundary_s.max() >= 10.0  # and it had left the lowest levels


def test_a_measurement_over_the_limit_withdraws_the_stall_and_its_suggestion():
    """The stall was found under bounds that a measured g > h has just shown wrong: it is not
    reported (nor its suggested option, next to the over-limit alarm) until the next proposal
    looks again."""
    policy, answer = _dose_policy()
    while policy.stall() is None:
        q = policy.ask()
        if policy.stall() is not None:
            break
        policy.tell(q, answer(q.x))
        assert policy.iteration < 60, "no stall to withdraw"
    policy.tell(q, answer(q.x))
    assert policy.stall() is not None
    policy.observe([[0.0, 12.0]], [{"f": 50.0, "g": 2.0}])  # over h = 1.5
    assert policy.over_limit() and policy.stall() is None
    assert policy.describe()["stall"] is None


def test_the_policy_counts_answers_without_growth_open_query_or_not():
    """On the policy itself: a dose (monotone, 9 levels) by timing grid with g = 0.1 + 0.03 dose
    measured only at dose 0 (the certified set stays at the lowest dose). The count starts at
    the first proposal after the safe seeds, goes up by one per answer and per measurement
    added, is unchanged by asking while the set does not grow, and goes back to 0 at the
    proposal at which it grows; the stall's ``answers`` and message carry the same number."""
    policy, answer = _dose_policy()

    def said(stall: dict) -> int:
        return int(stall["message"].split("has not grown in the last ")[1].split()[0])

    for _ in range(policy.n_initial):  # the safe seeds are not counted
        q = policy.ask()
        assert q.initial and policy.answers_without_growth() is None
        policy.tell(q, answer(q.x))
    assert policy.answers_without_growth() is None
    window = policy.stall_window
    for k in range(window):
        q = policy.ask()  # the set does not grow: asking leaves the count
        assert policy.answers_without_growth() == k
        # g noise-free at dose 0: each proposal measures a dose-0 setting again whose exact
        # value cannot narrow g one dose up, so the third (k = 2) reports it, before the window
        early = policy.stall()
        assert (early is not None) == (k >= 2)
        assert early is None or (early["answers"] == said(early) == k and early["repeats"] == k + 1)
        policy.tell(q, answer(q.x))
        assert policy.answers_without_growth() == k + 1
    assert policy.recommend().boundary_s.max() == 0.0
    q = policy.ask()
    stall = policy.stall()
    assert stall is not None and stall["answers"] == said(stall) == window
    assert policy.describe()["stall"] == stall
    # a measurement added counts, with the query open and after it is answered
    policy.observe([[0.0, 12.0], [0.0, 4.0]], [answer([0.0, 12.0]), answer([0.0, 4.0])])
    assert policy.answers_without_growth() == said(policy.stall()) == window + 2
    policy.tell(q, answer(q.x))
    assert policy.stall()["answers"] == said(policy.stall()) == window + 3
    assert policy.iteration == window + 1  # the method's own count is not the stall's
    # measurements one level up let the set grow: the next proposal counts from 0 again
    pts = [[5.0, t] for t in np.linspace(0, 24, 7)]
    policy.observe(pts, [answer(p) for p in pts])
    assert policy.answers_without_growth() == window + 10
    policy.ask()
    assert policy.answers_without_growth() == 0 and policy.stall() is None
    assert policy.recommend().boundary_s.max() > 0.0
