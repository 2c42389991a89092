"""The safe family with hyperparameters nobody knows (issue 18): the learned default, the paper's
refit kept for reproductions, and what a measured g above h does to a run."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import boloop.problems as problems
from boloop.algorithms import make_policy
from boloop.errors import InvalidInputError, OptionError
from boloop.problems.safe import random_monotone_gp
from boloop.simulate import simulate
from cli_runner import run_cli


def test_learned_is_the_default_when_fitting_and_paper_stays_available():
    prob = problems.get("safe/branin")
    learned = make_policy("m-safeopt", prob, 0, fit_hyperparameters=True)
    paper = make_policy("m-safeopt", prob, 0, fit_hyperparameters=True, hyperparameters="paper")
    fixed = make_policy("m-safeopt", prob, 0)
    assert learned.describe()["hyperparameters"] == "learned"
    assert paper.describe()["hyperparameters"] == "paper"
    assert fixed.describe()["hyperparameters"] == "fixed"
    # the learned default starts from a space-filling design of safe seeds, the paper from two
    assert learned.describe()["n_initial"] == 5
    assert paper.describe()["n_initial"] == 2


def test_hyperparameters_option_is_checked():
    prob = problems.get("safe/branin")
    with pytest.raises(InvalidInputError, match="learned"):
        make_policy("m-safeopt", prob, 0, fit_hyperparameters=True, hyperparameters="guess")
    with pytest.raises(InvalidInputError, match="fit_hyperparameters"):
        make_policy("predvar", prob, 0, hyperparameters="learned")
    with pytest.raises(OptionError):
        make_policy("safeopt-mc", prob, 0, hyperparamters="learned")


def test_plain_refit_warns(caplog):
    prob = problems.get("safe/branin")
    with caplog.at_level(logging.WARNING, logger="boloop"):
        make_policy("m-safeopt", prob, 0, fit_hyperparameters=True, hyperparameters="plain")
    assert any("plain maximum-likelihood" in r.message for r in caplog.records)


@pytest.mark.parametrize("method", ["m-safeopt", "safeopt-mc", "predvar"])
def test_learned_hyperparameters_stay_safe_where_the_paper_refit_does_not(method):
    # safe/branin with kernels unknown: the paper's refit evaluates unsafe actions on these seeds
    # (docs/hyperparameters.md); the learned default must not
    seeds = range(2)
    learned = [
        simulate(method, "safe/branin", 30, seed=s, fit_hyperparameters=True).records[-1][
            "metrics"
        ]["unsafe"]
        for s in seeds
    ]
    assert learned == [0.0, 0.0]


def test_paper_refit_is_unsafe_on_branin():
    # the failure the learned default exists for (so that the test above can fail)
    unsafe = [
        simulate(
            "m-safeopt",
            "safe/branin",
            30,
            seed=s,
            fit_hyperparameters=True,
            hyperparameters="paper",
            kernel_f=None,
            kernel_g=None,
        ).records[-1]["metrics"]["unsafe"]
        for s in (1,)
    ]
    assert sum(unsafe) > 0


def test_measured_g_above_h_is_flagged_and_never_certified_again(caplog):
    prob = random_monotone_gp(seed=3)
    policy = make_policy("m-safeopt", prob, 0, fit_hyperparameters=True)
    h = prob.settings["threshold"]
    rng = np.random.default_rng(0)
    for _ in range(policy.describe()["n_initial"] + 1):
        q = policy.ask()
        policy.tell(q.id, prob.observe(q, rng))
    q = policy.ask()
    s_index = q.index % prob.space.n_s
    x_index = q.index // prob.space.n_s
    with caplog.at_level(logging.WARNING, logger="boloop"):
        policy.tell(q.id, {"f": 0.0, "g": h + 1.0})  # the process says: over the limit
    assert any("g = " in r.message and "> h" in r.message for r in caplog.records)
    flagged = policy.over_limit()
    assert [e["query"] for e in flagged] == [q.id]
    assert flagged[0]["g"] == h + 1.0
    assert policy.describe()["over_limit"] == flagged
    for _ in range(15):
        rec = policy.recommend()
        if s_index > 0:
            assert rec.boundary_s[x_index] < prob.space.s_values[s_index]
        q2 = policy.ask()
        assert not (
            q2.index // prob.space.n_s == x_index and q2.index % prob.space.n_s >= max(s_index, 1)
        )
        policy.tell(q2.id, prob.observe(q2, rng))


def test_a_study_warns_of_a_measured_g_above_h_in_status_and_the_cli(tmp_path):
    from boloop.study import create_study

    space = tmp_path / "dose.toml"
    space.write_text(
        'monotone = "dose"\nh = 1.0\n'
        '[[parameters]]\nname = "dose"\nlow = 0.0\nhigh = 1.0\ngrid = 6\n'
        '[[parameters]]\nname = "weight"\nlow = 0.0\nhigh = 1.0\ngrid = 5\n'
    )
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("trial", "m-safeopt", str(space), storage=url, seed=0)
    assert study.status()["warnings"] == []
    q = study.ask()
    study.tell(q.id, {"f": 0.1, "g": 1.5})  # over the limit, even at the safe level
    st = study.status()
    assert len(st["warnings"]) == 1
    assert "g = 1.5 above the limit h = 1" in st["warnings"][0]
    assert "dose" in st["warnings"][0]
    # the point as a person reads it: names and at most 6 significant digits, no Python dict
    assert "{" not in st["warnings"][0] and "dose=0," in st["warnings"][0]
    done = run_cli(["study", "status", "trial", "--storage", url], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "WARNING: query" in out and "above the limit" in out
    assert "the lowest dose, which the safe methods assume safe" in out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_gp_draws_are_valid_even_when_rejection_finds_none(seed):
    # a stationary part far too wiggly for the prior's trend: rejection sampling (here given a
    # single try) fails, and the trend is drawn given the stationary part instead
    prob = random_monotone_gp(seed=seed, lengthscale_g=0.1, variance_g=1.0, max_draws=1, h=0.3)
    F, G = prob.truth()
    h = prob.settings["threshold"]
    ds = np.diff(prob.space.s_values)[None, :]
    assert np.min(np.diff(G, axis=1) / ds) >= 0.1 - 1e-9  # min_slope, every row
    assert np.all(G[:, 0] <= h)  # safe at s = 0
    assert np.max(G) > h  # and something is unsafe
    # the draw is reproducible from its seed
    G2 = random_monotone_gp(seed=seed, lengthscale_g=0.1, variance_g=1.0, max_draws=1, h=0.3)
    np.testing.assert_array_equal(G, G2.truth()[1])


def test_a_g_measured_exactly_at_the_limit_everywhere_is_stored() -> None:
    """Every g equal to h (an integer score with an integer limit) made the learned model's
    floors log(0): the fit raised a math domain error and that answer could never be stored
    (review). Now it is stored and the method goes on asking (no floor from a zero distance)."""
    from boloop.study import create_study
    from study_samples import SMALL_DOSE as space
    for options in ({}, {"trend_g": False}, {"offset_g": True}):
        store = f"memory://g-at-h-{len(options) and next(iter(options))}"
        s = create_study("d", "m-safeopt", space, storage=store, seed=0, **options)
        for i in range(8):
            q = s.ask()
            s.tell(q.id, {"f": 0.1 * i, "g": 1.0})
        assert s.n_answered == 8 and s.ask().kind == "evaluate", options
