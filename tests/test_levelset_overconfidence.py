"""Learned level-set models that stop doubting: the widening when a choice is overconfident.

A newcomer's coating map (a linear trend plus one bump that the space-filling start missed) left
the randomized straddle with the kernel learned at F ~ 0.43 in every seed: long length-scales
that no answer contradicted, every answer spent on a few boundary points measured below the noise
level, the bump never seen. The learned default now shortens the length-scales to the edge of
their likelihood-ratio set when the acquisition's choice has ``sigma_{t-1}(x_t) < sigma_n``
(``LevelSetPolicy.widen_when_overconfident``; ``docs/hyperparameters.md``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import chi2

from boloop.algorithms.levelset import RandomizedStraddle, expected_af_over_beta, straddle
from boloop.errors import InvalidInputError
from boloop.gp.kernels import SquaredExponential
from boloop.spaces import CandidateSet

T_AXIS = np.linspace(100.0, 200.0, 31)
V_AXIS = np.linspace(0.5, 5.0, 21)
_TT, _VV = np.meshgrid(T_AXIS, V_AXIS, indexing="ij")
POINTS = np.column_stack([_TT.ravel(), _VV.ravel()])
THRESHOLD = 0.8


def coating(X: np.ndarray) -> np.ndarray:
    """The stand-in: a trend (above at high temperature, low speed) plus a bump near (160, 2)
    about a fifth of each range wide, in the user's own units."""
    X = np.asarray(X, dtype=np.float64).reshape(-1, 2)
    T, v = X[:, 0], X[:, 1]
    bump = np.exp(-(((T - 160) / 20) ** 2) - ((v - 2) / 0.8) ** 2)
    return 0.4 + 0.006 * (T - 100) - 0.15 * v + 0.6 * bump


WIDTH = np.array([100.0, 4.5])
TRUTH = coating(POINTS) > THRESHOLD
BUMP = TRUTH & (np.abs(POINTS[:, 0] - 163) < 12) & (np.abs(POINTS[:, 1] - 2) < 0.6)


def _run(seed: int, n: int, **kw) -> RandomizedStraddle:
    pol = RandomizedStraddle(CandidateSet(POINTS), THRESHOLD, seed=seed, **kw)
    rng = np.random.default_rng(100 + seed)
    for _ in range(n):
        q = pol.ask()
        pol.tell(q.id, float(coating(q.x)[0] + 0.03 * rng.standard_normal()))
    return pol


def _fscore(pol: RandomizedStraddle) -> float:
    est = pol.recommend().upper
    return 2 * float((est & TRUTH).sum()) / float(est.sum() + TRUTH.sum())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_coating_stand_in_finds_the_bump_the_start_missed(seed):
    pol = _run(seed, 60)
    est = pol.recommend().upper
    assert BUMP.sum() >= 20
    assert (est & BUMP).sum() >= 0.8 * BUMP.sum()
    assert _fscore(pol) >= 0.8
    assert pol.describe()["widenings"] >= 1


def test_coating_stand_in_was_stuck_without_the_widening():
    # the regression: the learned default before the widening never saw the bump
    for seed in (0, 1):
        pol = _run(seed, 60, widen_when_overconfident=False)
        assert (pol.recommend().upper & BUMP).sum() == 0
        assert _fscore(pol) < 0.5
        assert pol.describe()["widenings"] == 0
        assert pol.describe()["overconfident_steps"] == 0  # not even counted when off


def test_widening_fires_exactly_when_the_choice_is_below_the_noise_and_lands_on_the_edge():
    """Re-derived from public quantities: the first choice of a step is the clipped AF's argmax
    (the zero case: the largest ``E_beta[a]``) under the posterior before the step, with the
    drawn ``beta_t``; the widening happens iff that choice's sd is below the fitted noise sd, a
    fitted length-scale sits on the shrinking cap of the last refit and no widening happened
    since that refit; then the new length-scales are the MAP's times ``c`` with the log posterior
    exactly ``chi2_p(0.95) / 2`` below the MAP's (the likelihood-ratio edge), nothing else
    changed."""
    pol = RandomizedStraddle(CandidateSet(POINTS), THRESHOLD, seed=3)
    rng = np.random.default_rng(103)
    floor = pol.learning.lengthscale_floor(2)
    fired = quiet = held = inside = again = 0
    refit_seen = -1  # last_fit_n at the previous step
    widened_since_refit = widened_before = False
    for _ in range(60):
        gp = pol.gp
        mean, std = (a.copy() for a in pol.candidate_posterior())
        p0 = gp.free_parameters().copy() if gp.n else None
        noise_sd = math.sqrt(gp.noise_variance)
        before = len(pol.widenings)
        counted = len(pol.overconfident_iterations)
        learning = pol.iteration >= 0 and gp.n >= pol.n_initial
        if pol.last_fit_n != refit_seen:  # refitted since the last step: the MAP again
            refit_seen, widened_since_refit = pol.last_fit_n, False
        at_cap = False
        if pol.last_fit_n > 0:
            frac = np.asarray(gp.kernel.lengthscale) / WIDTH
            cap = max(pol.learning.lengthscale_cap(pol.last_fit_n, 2), 2 * floor.max())
            at_cap = bool(frac.max() >= cap * (1 - 1e-3))
        q = pol.ask()
        if learning:
            sb = pol.sqrt_betas[-1]
            a = straddle(mean, std, THRESHOLD, sb)
            if a.max() > 0:
                first = np.flatnonzero(a == a.max())
            else:
                e = expected_af_over_beta(mean, std, THRESHOLD)
                first = np.flatnonzero(e == e.max())
            widened = len(pol.widenings) > before
            sd_first = std[first]
            if widened:
                fired += 1
                again += widened_before  # a widening after a refit that followed one
                assert np.all(sd_first < noise_sd)
                assert at_cap and not widened_since_refit
                widened_since_refit = widened_before = True
                p1 = pol.gp.free_parameters()
                c = pol.widenings[-1]
                assert 0 < c < 1
                shift = p1 - p0
                # packed: log variance, log length-scales (2), log noise, constant mean
                np.testing.assert_allclose(shift[1:3], math.log(c), rtol=1e-12)
                np.testing.assert_allclose(shift[[0, 3, 4]], 0.0, atol=1e-14)
                drop = gp.log_posterior(p0)[0] - pol.gp.log_posterior(p1)[0]
                assert drop == pytest.approx(0.5 * chi2.ppf(0.95, df=p0.size), abs=0.02)
            elif np.all(sd_first < noise_sd):
                # overconfident, not widened: only because it already widened since the last
                # refit or no length-scale is on the cap; counted, nothing changed
                assert widened_since_refit or not at_cap
                held += widened_since_refit
                inside += not at_cap
                assert len(pol.overconfident_iterations) == counted + 1
                assert pol.overconfident_iterations[-1] == pol.iteration + 1  # t, not yet told
                assert pol.gp.free_parameters() == pytest.approx(p0, abs=0)
            else:
                quiet += 1
                assert len(pol.overconfident_iterations) == counted
        y = float(coating(q.x)[0] + 0.03 * rng.standard_normal())
        pol.tell(q.id, y)
    # every case met: widenings in two refit periods, quiet steps, overconfident ones held back
    assert fired >= 2 and again >= 1 and quiet >= 1
    assert held >= 1 and inside >= 1


def test_no_widening_while_the_length_scales_are_the_datas_own():
    """Two bumps on a flat floor (a stand-in): the fitted length-scales stay inside their bounds,
    so overconfident steps are counted but the model is never changed; the run is the one
    without the option, answer for answer."""
    grid = CandidateSet.grid(np.array([[0.0, 2.0], [0.0, 1.0]]), 31)
    centres = np.array([[0.5, 0.3], [1.4, 0.75]])

    def f(X):
        d2 = ((np.asarray(X)[:, None, :] - centres[None]) ** 2).sum(-1)
        return (np.array([1.0, 0.8]) * np.exp(-d2 / (2 * 0.1**2))).sum(1)

    runs = []
    for widen in (True, False):
        pol = RandomizedStraddle(grid, 0.5, seed=1, widen_when_overconfident=widen)
        rng = np.random.default_rng(7)
        for _ in range(80):
            q = pol.ask()
            pol.tell(q.id, float(f(q.x[None, :])[0] + 0.05 * rng.standard_normal()))
        runs.append(pol)
    on, off = runs
    assert len(on.overconfident_iterations) >= 5
    assert on.widenings == []
    np.testing.assert_array_equal(on.gp.X, off.gp.X)


def test_fixed_kernel_never_widens_and_the_option_is_checked():
    kern = SquaredExponential(lengthscale=np.array([14.0, 0.57]), variance=0.1)
    pol = RandomizedStraddle(CandidateSet(POINTS), THRESHOLD, kernel=kern, seed=0)
    assert pol.describe()["widen_when_overconfident"] is False
    rng = np.random.default_rng(0)
    for _ in range(30):
        q = pol.ask()
        pol.tell(q.id, float(coating(q.x)[0] + 0.03 * rng.standard_normal()))
    assert pol.widenings == [] and pol.overconfident_iterations == []
    assert repr(pol.gp.kernel) == repr(kern)
    learned = RandomizedStraddle(CandidateSet(POINTS), THRESHOLD, seed=0)
    assert learned.describe()["widen_when_overconfident"] is True
    with pytest.raises(InvalidInputError):
        RandomizedStraddle(CandidateSet(POINTS), THRESHOLD, widen_when_overconfident="yes")


def test_widening_is_seeded():
    a, b = _run(4, 40), _run(4, 40)
    assert a.widenings == b.widenings
    np.testing.assert_array_equal(a.gp.X, b.gp.X)


def test_lse_intersection_restarts_when_the_kernel_changes_and_only_then():
    """Gotovos et al.'s ``C_t = C_{t-1} cap Q_t`` within one kernel; a refit or a widening
    starts it again from ``Q_t`` of the new model (re-derived from the public posterior)."""
    from boloop.algorithms.levelset import LSE

    pol = LSE(CandidateSet(POINTS), THRESHOLD, seed=2)
    rng = np.random.default_rng(102)
    prev = None
    prev_kernel = None
    restarts = nested = 0
    for _ in range(45):
        q = pol.ask()
        bounds = pol.intersected_bounds
        if bounds is not None:
            lcb, ucb = bounds
            sb = pol.sqrt_betas[-1]
            mean, std = pol.candidate_posterior()
            q_lcb, q_ucb = mean - sb * std, mean + sb * std
            kernel = (repr(pol.gp.kernel), pol.gp.noise_variance, pol.gp.mean_constant)
            if prev is None or kernel != prev_kernel:
                restarts += 1
                np.testing.assert_array_equal(lcb, q_lcb)
                np.testing.assert_array_equal(ucb, q_ucb)
            else:
                nested += 1
                np.testing.assert_array_equal(lcb, np.maximum(prev[0], q_lcb))
                np.testing.assert_array_equal(ucb, np.minimum(prev[1], q_ucb))
            prev, prev_kernel = (lcb, ucb), kernel
        pol.tell(q.id, float(coating(q.x)[0] + 0.03 * rng.standard_normal()))
    assert restarts >= 3 and nested >= 3
    assert (pol.recommend().upper & BUMP).sum() >= 0.8 * BUMP.sum()


def test_lse_without_the_restart_intersects_across_kernels():
    """``restart_intersection=False`` (what a study from before the restart is built with): the
    intersection is Gotovos et al.'s across refits too, one nested sequence from the first step."""
    from boloop.algorithms.levelset import LSE

    pol = LSE(
        CandidateSet(POINTS),
        THRESHOLD,
        seed=2,
        restart_intersection=False,
        widen_when_overconfident=False,
    )
    rng = np.random.default_rng(102)
    prev, kernels = None, set()
    for _ in range(30):
        q = pol.ask()
        bounds = pol.intersected_bounds
        if bounds is not None:
            sb = pol.sqrt_betas[-1]
            mean, std = pol.candidate_posterior()
            kernels.add(repr(pol.gp.kernel))
            expected = (mean - sb * std, mean + sb * std)
            if prev is not None:
                expected = (np.maximum(prev[0], expected[0]), np.minimum(prev[1], expected[1]))
            np.testing.assert_array_equal(bounds[0], expected[0])
            np.testing.assert_array_equal(bounds[1], expected[1])
            prev = bounds
        pol.tell(q.id, float(coating(q.x)[0] + 0.03 * rng.standard_normal()))
    assert len(kernels) >= 3  # refits happened, the intersection went on through them
    for bad in ("no", 0, None):
        with pytest.raises(InvalidInputError):
            LSE(CandidateSet(POINTS), THRESHOLD, restart_intersection=bad)
