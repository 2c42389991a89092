"""M-SafeOpt with ``L_f`` or ``L_g_prime`` unknown (neither the user nor the problem gives them).

An unknown constant is the weakest assumption, the limit of the paper's formulas (Losalka &
Scarlett 2024, eqs. 19-22): no lower bound on g's slope (``L'_g -> 0``: ``s_bar`` is the top of
the grid while ``LCB^g`` at the boundary is below ``h``), no upper bound on f's growth
(``L_f -> infinity``: the expansion value is ``+inf`` while ``s_bar`` is above the boundary).
"""

from __future__ import annotations

import math
import warnings
from collections import Counter

import numpy as np
import pytest

from boloop.algorithms import make_policy
from boloop.algorithms.safe import Bounds, MSafeOpt, expansion_limit, safe_sets, select_msafeopt
from boloop.errors import InvalidInputError
from boloop.problems import get
from boloop.spaces import SafeSpace
from boloop.study import create_study

S = np.linspace(0.0, 1.0, 5)  # the safety variable's grid: 0, 0.25, 0.5, 0.75, 1
H = 1.0


def _bounds() -> Bounds:
    """Three x on five s (beta^(1/2) = 1, every width 0.1):

    * x0: g = 0 everywhere, all certified; f rises to 5 at the top (maxLCB = 4.9 there);
    * x1: g = 0, 0.5, 1.5, 2, 2.5: certified up to s = 0.25 (UCB^g 0.6), LCB^g there 0.4 < h;
      f small where certified (UCB 1.1);
    * x2: g = 1.5 everywhere: only s = 0 (always safe, eq. 12), whose LCB^g 1.4 is above h, so
      its range cannot be extended; f = 2 (UCB 2.1).
    """
    mean_f = np.array([[0.0, 1.0, 2.0, 3.0, 5.0], [0.0, 1.0, 2.0, 3.0, 4.0], [2.0] * 5])
    mean_g = np.array([[0.0] * 5, [0.0, 0.5, 1.5, 2.0, 2.5], [1.5] * 5])
    width = np.full((3, 5), 0.1)
    return Bounds(mean_f, width, mean_g, width, 1.0, 1.0)


def _quietly(fn, *args):
    """``fn(*args)`` with every numpy warning an error (no inf * 0, no division by zero)."""
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        return fn(*args)


def test_expansion_limit_with_no_lower_bound_on_the_slope_is_the_top_while_g_has_room():
    boundary = np.array([0, 2, 4, 1])
    lcb_at_boundary = np.array([0.2, 0.9, 0.5, 1.0])  # the last exactly at h: no room
    bar = _quietly(expansion_limit, boundary, lcb_at_boundary, S, H, None)
    assert bar.tolist() == [4, 4, 4, 1]
    # the limit of the paper's closed form as L'_g -> 0, and far from it at L'_g = 1
    assert expansion_limit(boundary, lcb_at_boundary, S, H, 1e-9).tolist() == [4, 4, 4, 1]
    assert expansion_limit(boundary, lcb_at_boundary, S, H, 1.0).tolist() == [3, 2, 4, 1]


def test_sets_with_both_constants_unknown_in_closed_form():
    b = _bounds()
    sets = _quietly(safe_sets, b, S, H, None, None)
    assert sets.boundary.tolist() == [4, 1, 0]
    assert sets.bar.tolist() == [4, 4, 0]
    assert sets.max_lcb == pytest.approx(4.9)
    # x0 is at the top (no room): UCB^f at the boundary; x1 can grow: +inf; x2 cannot: UCB^f
    assert sets.expansion[0] == pytest.approx(5.1)
    assert sets.expansion[1] == math.inf
    assert sets.expansion[2] == pytest.approx(2.1)
    assert not np.isnan(sets.expansion).any()


def test_one_unknown_constant_is_the_limit_in_that_constant_only():
    b = _bounds()
    # L_f known, L'_g unknown: s_bar = the top for x1, expansion 1.1 + 2 * (1 - 0.25)
    sets = _quietly(safe_sets, b, S, H, 2.0, None)
    assert sets.bar.tolist() == [4, 4, 0]
    assert sets.expansion[1] == pytest.approx(1.1 + 2.0 * 0.75)
    # L'_g = 1 known (s_bar of x1: 0.25 + 0.6 -> 0.75 on the grid), L_f unknown: +inf for x1
    sets = _quietly(safe_sets, b, S, H, None, 1.0)
    assert sets.bar.tolist() == [4, 3, 0]
    assert sets.expansion.tolist()[1:] == [math.inf, pytest.approx(2.1)]


def test_case_1_gives_up_only_on_an_x_that_cannot_grow_and_cannot_win():
    """Eq. 20-22 with unknown constants: x2 (no room, UCB 2.1 < maxLCB 4.9) is eliminated; x1
    (UCB 1.1 < maxLCB, but its certified range can still be extended) stays and expands. With
    L_f = L'_g = 1 (the old assumption, in these units) x1 was eliminated as well."""
    b = _bounds()
    sel = _quietly(select_msafeopt, b, safe_sets(b, S, H, None, None), "1", None, None)
    assert sel.alive.tolist() == [True, True, False]
    assert sel.expd.tolist() == [True, True, False]
    assert sel.in_g.tolist() == [True, True, False]
    old = select_msafeopt(b, safe_sets(b, S, H, 1.0, 1.0), "1", 1.0, 1.0)
    assert old.alive.tolist() == [True, False, False]
    # Case 2 (eq. 24): every x whose expansion value beats its own best LCB expands
    sel2 = select_msafeopt(b, safe_sets(b, S, H, None, None), "2", None, None)
    assert sel2.alive.all() and sel2.expd.tolist() == [True, True, True]


def test_the_refined_acquisition_needs_both_constants():
    b = _bounds()
    with pytest.raises(ValueError, match="unknown"):
        select_msafeopt(b, safe_sets(b, S, H, 2.0, None), "1", 2.0, None, refined=True)
    space = SafeSpace.grid((0.0, 1.0), 5, [[0.0, 1.0]], 4)
    with pytest.raises(InvalidInputError, match="L_g_prime is unknown"):
        MSafeOpt(space, 0.5, L_f=2.0, acquisition="refined", seed=0)
    with pytest.raises(InvalidInputError, match="L_f and L_g_prime are unknown"):
        MSafeOpt(space, 0.5, acquisition="refined", seed=0)
    known = MSafeOpt(space, 0.5, L_f=2.0, L_g_prime=0.5, acquisition="refined", seed=0)
    assert known.describe()["acquisition"] == "refined"


def test_describe_says_unknown_and_the_options_take_it():
    space = SafeSpace.grid((0.0, 1.0), 5, [[0.0, 1.0]], 4)
    d = MSafeOpt(space, 0.5, L_f=2.0, seed=0).describe()
    assert (d["L_f"], d["L_g_prime"]) == (2.0, "unknown")
    clinical = get("safe/clinical-trial")
    given = make_policy("m-safeopt", clinical, 0).describe()
    assert given["L_f"] == clinical.settings["L_f"]
    assert given["L_g_prime"] == clinical.settings["L_g_prime"]
    # a registered problem's constants win over missing_constants; 'unknown' given wins over them
    same = make_policy("m-safeopt", clinical, 0, missing_constants="unknown").describe()
    assert same["L_f"] == clinical.settings["L_f"]
    unknown = make_policy("m-safeopt", clinical, 0, L_f="unknown", L_g_prime="Unknown").describe()
    assert (unknown["L_f"], unknown["L_g_prime"]) == ("unknown", "unknown")
    with pytest.raises(InvalidInputError, match="positive number or 'unknown'"):
        make_policy("m-safeopt", clinical, 0, L_f="large")


# ---------------------------------------------------------------------- a user's dose study
#: the newcomer's dose study of 2026-11-28: 0-40 mg on 21 levels, 13 timings, toxicity rising
#: ~0.014 per mg near h, so L'_g = 1 "per mg" was far above any slope g has
DOSE = {
    "monotone": "dose",
    "h": 0.6,
    "parameters": [
        {"name": "dose", "low": 0.0, "high": 40.0, "grid": 21, "unit": "mg"},
        {"name": "timing", "low": 0.0, "high": 24.0, "grid": 13, "unit": "h"},
    ],
    "settings": {"noise_f": 1.0, "noise_g": 1e-4},
}


def efficacy(dose: float, timing: float) -> float:
    return 80 * (1 - math.exp(-dose / 15)) * (0.7 + 0.3 * math.cos((timing - 8) / 24 * 2 * math.pi))


def toxicity(dose: float, timing: float) -> float:
    return 0.05 + 0.0004 * dose**2 * (1 + 0.3 * math.sin(timing / 24 * 2 * math.pi))


def answer_dose_study(study, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(n):
        q = study.ask()
        d, t = q.params["dose"], q.params["timing"]
        g = toxicity(d, t) + rng.normal(0, 0.01)
        study.tell(q.id, {"f": round(efficacy(d, t) + rng.normal(0, 1.0), 2), "g": round(g, 3)})


def _asked(study) -> list[tuple[float, float]]:
    return [(r["params"]["dose"], r["params"]["timing"]) for r in study.history()]


def test_a_users_dose_study_leaves_the_first_timing_it_climbs():
    """The newcomer's study: with no constants given, m-safeopt measures doses above 0 at most
    timings within 60 answers, repeats no setting much, and measures nothing above h; with the
    old assumption (1.0 per mg, ``missing_constants=1.0``) it climbed two timings and then
    repeated one setting."""
    new = create_study("dose", "m-safeopt", DOSE, seed=0, storage="memory://unknown-dose")
    assert new.pinned_defaults["missing_constants"] == "unknown"
    answer_dose_study(new, 60)
    settings = new.status()["settings"]
    assert (settings["L_f"], settings["L_g_prime"]) == ("unknown", "unknown")
    asked = _asked(new)
    assert len({t for d, t in asked if d > 0}) >= 8
    assert Counter(asked).most_common(1)[0][1] <= 5
    assert max(toxicity(d, t) for d, t in asked) <= DOSE["h"]
    old = create_study(
        "dose", "m-safeopt", DOSE, seed=0, storage="memory://one-dose", missing_constants=1.0
    )
    answer_dose_study(old, 60)
    asked_old = _asked(old)
    assert len({t for d, t in asked_old if d > 0}) <= 2
    assert Counter(asked_old).most_common(1)[0][1] >= 30
    rec_new, rec_old = new.recommend()["point"], old.recommend()["point"]
    assert efficacy(rec_new["dose"], rec_new["timing"]) > efficacy(
        rec_old["dose"], rec_old["timing"]
    )


def test_a_bad_missing_constants_or_misspecification_is_refused_naming_it():
    """A bad ``missing_constants`` is refused under its own name (not as ``L_f``, which the
    user did not give), and a misspecification c <= 0 is refused even when both constants are
    unknown (nothing to scale: it was silently accepted)."""
    toy = get("safe/toy")
    for bad in ("large", -1.0, 0.0):
        with pytest.raises(InvalidInputError, match=r"^missing_constants must be"):
            make_policy("m-safeopt", toy, 0, L_f="unknown", missing_constants=bad)
    for c in (0.0, -1.0):
        with pytest.raises(InvalidInputError, match=r"^misspecification must be"):
            make_policy("m-safeopt", toy, 0, L_f="unknown", L_g_prime="unknown", misspecification=c)
    both = make_policy("m-safeopt", toy, 0, missing_constants=2.0, L_f="unknown", L_g_prime=0.5)
    assert (both.describe()["L_f"], both.describe()["L_g_prime"]) == ("unknown", 0.5)
