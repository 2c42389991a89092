"""ExpertPolicy.predict (issue 16's expert picture): the f-GP's posterior and COBOL's latent g at
any points, without side effects on the policy."""

from __future__ import annotations

import numpy as np
import pytest

from boloop.algorithms.registry import make_policy
from boloop.errors import InvalidInputError
from boloop.problems import get
from boloop.simulate import oracle_rng


def _run(method, steps, probe=None, **options):
    problem = get("expert/toy")
    policy = make_policy(method, problem, 7, **options)
    rng = oracle_rng(3)
    queries = []
    P = np.random.default_rng(0).random((50, 2))
    for k in range(steps):
        q = policy.ask()
        queries.append((q.kind, q.x.tolist()))
        policy.tell(q.id, problem.answer(q, rng))
        if probe is not None and policy.X_f.shape[0]:
            probe(policy, P)
        if k % 3 == 2:  # a measurement of the user's own: one refit for it and the answer
            x = P[k % len(P)]
            policy.add_observations(x[None, :], [float(np.sin(3 * x[0]) + x[1])])
    return policy, queries


@pytest.mark.parametrize("method", ["cobol", "gp-lcb"])
def test_predict_between_answers_changes_no_later_query(method):
    """Called after every answer (a refit is then pending, and a refit draws from the policy's
    generator), predict leaves the trajectory exactly as without it."""
    seen = []

    def probe(policy, P):
        out = policy.predict(P)
        seen.append(sorted(out))
        if method == "cobol":
            policy.predict(P[:3], bounds=True)

    _, plain = _run(method, 16, fit_hyperparameters=True)
    _, probed = _run(method, 16, probe, fit_hyperparameters=True)
    assert probed == plain
    assert seen and all("f_mean" in keys and "f_std" in keys for keys in seen)
    assert any("g" in keys for keys in seen) == (method == "cobol")


def test_f_posterior_matches_scikit_learn():
    """With fixed hyperparameters the f-GP is exact GP regression on standardised values (the
    paper's noise r as the nugget): the same mean and std as scikit-learn's regressor."""
    sk = pytest.importorskip("sklearn.gaussian_process")
    kernels = pytest.importorskip("sklearn.gaussian_process.kernels")
    policy, _ = _run("gp-lcb", 8, fit_hyperparameters=False, lengthscale=0.3)
    X = policy.X_f  # unit-cube coordinates of the measurements (the toy space is [0, 1]^2)
    y = policy.y_f
    ys = (y - y.mean()) / y.std()
    gpr = sk.GaussianProcessRegressor(
        kernels.RBF(0.3, "fixed"), alpha=policy.noise_variance, optimizer=None
    ).fit(X, ys)
    P = np.random.default_rng(1).random((40, 2))
    m, s = gpr.predict(P, return_std=True)
    out = policy.predict(P)
    np.testing.assert_allclose(out["f_mean"], m * y.std() + y.mean(), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(out["f_std"], s * y.std(), rtol=1e-5, atol=1e-9)


def test_g_estimate_lies_within_its_confidence_bounds_and_bad_input_is_refused():
    policy, _ = _run("cobol", 14)
    P = np.random.default_rng(2).random((6, 2))
    out = policy.predict(P, bounds=True)
    assert np.all(out["g_lower"] <= out["g"] + 1e-9) and np.all(out["g"] <= out["g_upper"] + 1e-9)
    for bad in (np.zeros((3, 3)), np.array([[np.nan, 0.5]]), [0.5, 0.5]):
        with pytest.raises(InvalidInputError):
            policy.predict(bad)
    fresh = make_policy("cobol", get("expert/toy"), 0)
    with pytest.raises(InvalidInputError, match="no measurements"):
        fresh.predict(P)
