"""A finite space's own points: what a policy is given for a measurement the user typed
(``observe``), and which row of a table a point names (``CandidateSet.index_of``)."""

from __future__ import annotations

import numpy as np
import pytest

from boloop.algorithms.safe import MSafeOpt
from boloop.algorithms.toy import RandomEvaluate
from boloop.errors import OutOfSpaceError
from boloop.gp.kernels import Matern
from boloop.spaces import CandidateSet, SafeSpace, points_at

#: s on 31 levels over [100, 200] (step 10/3): its 28th level is the float 580/3
S_LEVELS = np.linspace(100.0, 200.0, 31)


def _safe_policy(space: SafeSpace) -> MSafeOpt:
    return MSafeOpt(
        space,
        1.0,
        kernel_f=Matern(2.5, [30.0, 0.5], 1.0),
        kernel_g=Matern(2.5, [30.0, 0.5], 1.0),
        L_f=1.0,
        L_g_prime=0.01,
        fit_hyperparameters=False,
        seed=0,
    )


def test_a_safe_policy_is_given_the_grid_level_a_measurement_names():
    """``observe([[193.33, 0.5]], ...)`` names the level 580/3 (written to fewer digits, far
    finer than the step): the policy records and conditions on 580/3 itself, exactly as when it
    is given 580/3, and a value between levels is still refused."""
    space = SafeSpace(S_LEVELS, [[0.0], [0.5], [1.0]], names=["s", "x"])
    exact = float(S_LEVELS[28])
    assert exact == 193.33333333333334
    typed, given = _safe_policy(space), _safe_policy(space)
    typed.observe([[193.33, 0.5]], [{"f": 0.0, "g": 2.0}])
    given.observe([[exact, 0.5]], [{"f": 0.0, "g": 2.0}])
    assert [e["point"] for e in typed.over_limit()] == [[exact, 0.5]]
    (b_typed, _), (b_given, _) = typed.state(), given.state()
    for name in ("mean_g", "std_g", "lcb_g", "ucb_g", "lcb_f", "ucb_f"):
        assert np.array_equal(getattr(b_typed, name), getattr(b_given, name)), name
    with pytest.raises(OutOfSpaceError, match="s=193.3 is not a grid value"):
        typed.observe([[193.3, 0.5]], [{"f": 0.0, "g": 0.2}])


def test_check_measurements_gives_the_grid_points_of_a_candidate_set():
    """The contract's default path (one never-issued Evaluate per point, as ``toy-random``
    takes them): the points checked and stored are the table's own floats."""
    grid = CandidateSet.grid([[100.0, 200.0], [0.0, 1.0]], [31, 3], names=["t", "v"])
    policy = RandomEvaluate(grid, seed=0)
    X, _ = policy.check_measurements([[193.333, 0.5], [100.0, 1.0 + 1e-13]], [0.2, 0.1])
    assert X.tolist() == [[580 / 3, 0.5], [100.0, 1.0]]
    policy.observe([[193.333, 0.5]], [0.9])
    assert policy.recommend().point.tolist() == [580 / 3, 0.5]


def test_points_at_reads_a_safe_spaces_actions_without_building_them():
    space = SafeSpace([0.0, 0.5, 1.0], [[1.0, 2.0], [3.0, 4.0]])
    idx = np.arange(space.n)
    assert np.array_equal(points_at(space, idx), space.points)
    assert points_at(space, [4]).tolist() == [[0.5, 3.0, 4.0]]


def test_a_table_with_values_closer_than_the_tolerance_still_names_its_rows():
    """Column 0 holds 0.1 and 0.1 + 1e-12 (closer than the tolerance, 1e-9 * 3): the value
    0.1 + 0.6e-12 is nearer the second, so snapping each column alone gives (0.1 + 1e-12, 1), no
    row; the whole row (0.1, 1) is within the tolerance and is named, as before values written
    to fewer digits were taken. A combination of no row within the tolerance is still none."""
    table = CandidateSet([[0.1, 1.0], [0.1 + 1e-12, 2.0], [0.5, 3.0]])
    assert table.index_of([[0.1 + 0.6e-12, 1.0]]).tolist() == [0]
    assert table.index_of([[0.1 + 0.4e-12, 2.0], [0.1, 2.0]]).tolist() == [1, 1]
    assert table.index_of([[0.1 + 0.6e-12, 3.0], [0.1 + 5e-9, 1.0]]).tolist() == [-1, -1]
    assert table.validate([[0.1 + 0.6e-12, 1.0]]).tolist() == [[0.1, 1.0]]
    space = SafeSpace([0.0, 0.5, 1.0], [[0.1, 1.0], [0.1 + 1e-12, 2.0]])  # the same x table
    assert space.index_of([[0.5, 0.1 + 0.6e-12, 1.0], [0.5, 0.1 + 0.6e-12, 2.0]]).tolist() == [1, 4]


def test_a_value_written_to_fewer_digits_still_names_its_row_after_a_pickle():
    """The display-precision rule is kept, and a space read back from a policy snapshot (pickled
    without its row lookup) names the same rows."""
    import pickle

    grid = CandidateSet.grid([[100.0, 200.0], [0.0, 1.0]], [31, 3])
    safe = SafeSpace(S_LEVELS, [[0.0], [0.5], [1.0]])
    for space in (grid, safe, pickle.loads(pickle.dumps(grid)), pickle.loads(pickle.dumps(safe))):
        i = space.index_of([[193.333, 0.5], [193.3, 0.5]]).tolist()
        assert i[1] == -1 and points_at(space, i[:1]).tolist() == [[580 / 3, 0.5]]
