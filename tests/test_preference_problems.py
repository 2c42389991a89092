"""Problems and metrics of the preference family (spec Sec. 5 and acceptance test 10)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from boloop.errors import InvalidInputError
from boloop.metrics import get_metric
from boloop.metrics.preference import (
    cumulative_duel_regret,
    duel_regret,
    preference_simple_regret,
)
from boloop.problems import get
from boloop.problems.preference import (
    complete_ratings,
    load_yelp_arrays,
    scale_ratings,
    synthetic_yelp_standin,
)
from boloop.queries import Compare


# -- 10. regret bookkeeping ---------------------------------------------------------------------------
def test_regret_bookkeeping():
    u = np.array([0.0, 2.0, 2.0, -1.0, 1.5])  # two tied maximisers
    i, j = np.meshgrid(np.arange(5), np.arange(5), indexing="ij")
    r = duel_regret(u, i, j)
    assert np.all((r >= 0) & (r <= 0.5))
    assert r[1, 2] == 0.0 and r[2, 1] == 0.0 and r[1, 1] == 0.0
    assert r[0, 3] == pytest.approx(0.5 * (expit(2.0) + expit(3.0) - 1.0))
    pairs = np.array([[0, 3], [1, 2], [4, 0]])
    cum = cumulative_duel_regret(u, pairs)
    assert cum[-1] == pytest.approx(sum(duel_regret(u, a, b) for a, b in pairs))
    assert preference_simple_regret(u, 2) == 0.0
    assert preference_simple_regret(u, 3) == pytest.approx(expit(3.0) - 0.5)
    assert get_metric("regret", family="preference") is duel_regret
    with pytest.raises(InvalidInputError):
        duel_regret([np.nan, 1.0], 0, 1)


def test_tracker_columns_match_the_metric_functions():
    p = get("preference/rkhs-se")
    from boloop.algorithms import make_policy

    pol = make_policy("random", p, seed=0)
    tracker = p.new_tracker()
    rng = np.random.default_rng(0)
    total = 0.0
    for _ in range(5):
        q = pol.ask()
        ans = p.compare(q, rng)
        pol.tell(q.id, ans)
        row = tracker.update(q, ans, pol.recommend())
        total += duel_regret(p.utility, q.a_index, q.b_index)
        assert row["regret"] == pytest.approx(duel_regret(p.utility, q.a_index, q.b_index))
        assert row["cumulative_regret"] == pytest.approx(total)
        assert row["simple_regret"] == pytest.approx(
            preference_simple_regret(p.utility, pol.recommend_index())
        )
    assert p.metric_names() == ["regret", "cumulative_regret", "simple_regret"]


def test_btl_oracle_frequencies():
    """P(a preferred) = mu(u_a - u_b): 4000 duels, empirical rate within 0.03 (> 4 s.e.)."""
    p = get("preference/ackley")
    a, b = 10, 50
    q = Compare(id=0, a=p.space.points[a], b=p.space.points[b], a_index=a, b_index=b)
    rng = np.random.default_rng(0)
    wins = sum(p.compare(q, rng) == 0 for _ in range(4000))
    assert wins / 4000 == pytest.approx(float(expit(p.utility[a] - p.utility[b])), abs=0.03)
    # the index is optional: the oracle finds the arm from the point
    q2 = Compare(id=1, a=p.space.points[a], b=p.space.points[b])
    assert p.compare(q2, np.random.default_rng(1)) in (0, 1)
    with pytest.raises(InvalidInputError):
        p.compare(Compare(id=2, a=[0.123], b=p.space.points[b]), rng)


# -- problems ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "pid,argmax_x,f_range,kappa",
    [
        ("preference/rkhs-se", 0.3535, (-0.469, 0.973), 1357),
        ("preference/rkhs-matern52", 0.3434, (-0.473, 0.969), 1349),
        ("preference/rkhs-matern32", 0.3434, (-0.473, 0.964), 1320),
    ],
)
def test_rkhs_functions_match_the_spec_table(pid, argmax_x, f_range, kappa):
    """Spec Sec. 5.2 table (computed from the recipe): argmax, range of f, kappa with the x5 scale."""
    p = get(pid)
    assert p.space.n == 100
    x = p.space.points[:, 0]
    assert x[int(np.argmax(p.utility))] == pytest.approx(argmax_x, abs=1e-3)
    f = p.utility / 5.0
    assert f.min() == pytest.approx(f_range[0], abs=2e-3)
    assert f.max() == pytest.approx(f_range[1], abs=2e-3)
    assert p.kappa == pytest.approx(kappa, rel=0.01)
    assert p.settings["budget"] == 300 and p.settings["lam"] == 0.05
    assert p.settings["B"] > 0
    q = get(pid + "?values_seed=3")
    assert not np.allclose(q.utility, p.utility)


def test_ackley_sign_and_scaling():
    p = get("preference/ackley")
    x = p.space.points[:, 0]
    assert np.ptp(p.utility) == pytest.approx(3.0)  # h = u_a - u_b spans [-3, 3]
    best = x[p.utility >= p.utility.max() - 1e-3]
    assert np.allclose(np.abs(best), 4.596, atol=0.01)  # un-negated: maximisers near +-4.6
    n = get("preference/ackley?negate=true")
    assert abs(x[int(np.argmax(n.utility))]) < 0.06  # Pasztor convention: optimum at 0
    assert p.settings["budget"] == 2000
    assert get("preference/ackley?kernel=matern32").settings["kernel"].nu == 1.5


def test_two_dimensional_grids():
    for pid in ("preference/branin", "preference/holder"):
        p = get(pid)
        assert p.space.n == 100 and p.space.dim == 2
        assert np.ptp(p.utility) == pytest.approx(3.0)


def test_yelp_standin_shape_and_pipeline():
    E, R = synthetic_yelp_standin()
    assert E.shape == (275, 32) and R.shape == (20, 275)
    assert int(np.isfinite(R).sum()) == 2563
    assert np.all(np.isfinite(R).sum(axis=1) >= 90)
    np.testing.assert_allclose(np.linalg.norm(E, axis=1), 1.0)
    E2, R2 = synthetic_yelp_standin()
    assert np.array_equal(E, E2) and np.array_equal(np.isnan(R), np.isnan(R2))
    full = complete_ratings(R)
    obs = np.isfinite(R)
    assert np.all(np.isfinite(full)) and np.array_equal(full[obs], R[obs])
    assert full.min() >= 1.0 and full.max() <= 5.0
    s = scale_ratings(full[0])
    assert s.min() == pytest.approx(-3.0) and s.max() == pytest.approx(3.0)
    p = get("preference/yelp?user=4")
    assert p.space.n == 275 and p.settings["synthetic"] is True
    assert "SYNTHETIC" in p.description
    assert p.settings["beta_batch"] == 0.1 and p.settings["beta_sequential"] == 2.0
    with pytest.raises(InvalidInputError):
        get("preference/yelp?user=20")


def test_matrix_factorisation_recovers_low_rank_ratings():
    """Rank-2 ratings with 40% missing: filled entries within 0.35 RMSE of the truth."""
    rng = np.random.default_rng(0)
    U, V = rng.standard_normal((20, 2)), rng.standard_normal((60, 2))
    full = np.clip(3.0 + 0.6 * U @ V.T, 1, 5)
    R = full.copy()
    mask = rng.random(R.shape) < 0.4
    R[mask] = np.nan
    filled = complete_ratings(R, rank=2, reg=0.1)
    assert np.sqrt(np.mean((filled[mask] - full[mask]) ** 2)) < 0.35


def test_yelp_loader_files(tmp_path):
    E, R = synthetic_yelp_standin()
    np.save(tmp_path / "emb.npy", E)
    np.savetxt(tmp_path / "ratings.csv", R, delimiter=",")
    p = get(f"preference/yelp?embeddings={tmp_path / 'emb.npy'}&ratings={tmp_path / 'ratings.csv'}")
    assert p.space.n == 275 and p.settings["synthetic"] is False
    q = get("preference/yelp?user=0")
    np.testing.assert_allclose(p.utility, q.utility)  # same pipeline on the same numbers
    bad = E.copy()
    bad[5, 3] = np.nan
    np.save(tmp_path / "bad.npy", bad)
    with pytest.raises(InvalidInputError):
        get(f"preference/yelp?embeddings={tmp_path / 'bad.npy'}&ratings={tmp_path / 'ratings.csv'}")
    with pytest.raises(InvalidInputError):
        load_yelp_arrays(E, R[:, :100])
    R6 = R.copy()
    R6[0, np.flatnonzero(np.isfinite(R6[0]))[0]] = 6.0
    with pytest.raises(InvalidInputError):
        load_yelp_arrays(E, R6)
    with pytest.raises(InvalidInputError):
        get(f"preference/yelp?embeddings={tmp_path / 'missing.npy'}&ratings={tmp_path / 'r.csv'}")


def test_random_option_tables_are_reproducible_smooth_and_checked():
    a = get("preference/random-table?n=50&dim=3&table_seed=4")
    b = get("preference/random-table?n=50&dim=3&table_seed=4")
    c = get("preference/random-table?n=50&dim=3&table_seed=5")
    np.testing.assert_array_equal(a.space.points, b.space.points)
    np.testing.assert_array_equal(a.utility, b.utility)
    assert not np.allclose(a.utility, c.utility)
    assert a.space.points.shape == (50, 3)
    assert np.all((a.space.points >= 0) & (a.space.points <= 1))
    assert np.ptp(a.utility) == pytest.approx(3.0)
    assert "kernel" not in a.settings  # a learner must learn its kernel
    # smooth: the utility of close options is closer than that of far ones
    d = np.linalg.norm(a.space.points[:, None] - a.space.points[None], axis=-1)
    du = np.abs(a.utility[:, None] - a.utility[None])
    assert du[(d > 0) & (d < 0.15)].mean() < 0.5 * du[d > 0.6].mean()
    with pytest.raises(InvalidInputError):
        get("preference/random-table?n=1")
