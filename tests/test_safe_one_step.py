"""The learned safe default certifies at most one level of ``s`` above the data while all the data
lie at one level of ``s`` (g's length-scale along ``s`` is then not identified), and the
certified set still grows on a healthy problem."""

from __future__ import annotations

import numpy as np
import pytest

from boloop.algorithms.safe import MSafeOpt, PredVar, SafeOptMC
from boloop.gp.kernels import Matern
from boloop.spaces import SafeSpace

N_S = 30
H = 1.0


def _space() -> SafeSpace:
    # a fine grid of s (30 levels, step 0.034 of the box): a fifth of the box is 5.8 steps
    return SafeSpace.grid((0.0, 1.0), N_S, [[0.0, 1.0]], 10)


def _truth(p: np.ndarray) -> tuple[float, float]:
    """f, g of a stand-in: g rises gently in s (1.0 per unit, 0.034 per level) and lies far
    below h = 1 at s = 0 on the low x rows (g - h from -3 to -0.1 across x)."""
    s, x = float(p[0]), float(p[1])
    return 1.0 - (x - 0.6) ** 2 + s, -2.0 + 2.9 * x + 1.0 * s


def _level(space: SafeSpace, s: float) -> int:
    return int(np.argmin(np.abs(space.s_values - s)))


def _make(cls, **kw):
    extra = {"L_f": 2.0, "L_g_prime": 0.5} if cls is MSafeOpt else {}
    return cls(_space(), H, seed=0, **extra, **kw)


@pytest.mark.parametrize("cls", [MSafeOpt, SafeOptMC, PredVar])
def test_no_certification_two_levels_above_single_level_data(cls):
    # All the safe seeds are at s = 0: the data say nothing about how fast g changes along s.
    # The model with the length-scale it assumes there (a fifth of the box) would certify two
    # and more levels up on the low rows from s = 0 alone (the code before this rule did, and
    # proposed s = 2 levels next); the rule allows one.
    policy = _make(cls)
    space = policy.space
    for _ in range(policy.n_initial):
        q = policy.ask()
        assert _level(space, q.x[0]) == 0
        f, g = _truth(q.x)
        policy.tell(q.id, {"f": f, "g": g})
        rec = policy.recommend()
        assert max(_level(space, s) for s in rec.boundary_s) <= 1
    q = policy.ask()
    assert _level(space, q.x[0]) <= 1
    assert max(_level(space, s) for s in policy.recommend().boundary_s) <= 1


def test_the_certified_set_still_grows_a_level_at_a_time():
    policy = _make(MSafeOpt)
    space = policy.space
    measured: set[int] = set()
    top = 0
    for _ in range(policy.n_initial + 25):
        q = policy.ask()
        f, g = _truth(q.x)
        assert g <= H  # never unsafe here
        policy.tell(q.id, {"f": f, "g": g})
        measured.add(_level(space, q.x[0]))
        top = max(top, max(_level(space, s) for s in policy.recommend().boundary_s))
        if len(measured) == 1:  # one level measured: at most one above it, on every row
            assert top <= min(measured) + 1
    # the first step up is taken, and from two measured levels on the fitted model certifies
    # further: no stall on this healthy stand-in
    assert len(measured) >= 3
    assert top >= 8
    assert policy.stall() is None


def test_fixed_kernels_are_not_capped():
    # the paper's setting: a known kernel (here long along s) certifies from s = 0 data alone
    k = Matern(2.5, lengthscale=[1.0, 0.3], variance=1.0)
    policy = _make(MSafeOpt, kernel_f=k, kernel_g=k, fit_hyperparameters=False, n_initial=5)
    for _ in range(5):
        q = policy.ask()
        f, g = _truth(q.x)
        policy.tell(q.id, {"f": f, "g": g})
    assert max(_level(policy.space, s) for s in policy.recommend().boundary_s) >= 2
