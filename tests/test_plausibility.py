"""The typo question: a typed value far outside the values stored so far is asked about before
it is stored on the study page, and warned about (with the undo command) by ``boloop study
tell`` / ``add``; nothing is refused (:mod:`boloop.study.plausibility`). A newcomer's trial
(session 13) typed a hardness ten times too large and only ``undo`` mended it."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from boloop.errors import InvalidInputError
from boloop.study import create_study, load_study
from boloop.study.plausibility import MIN_ANSWERS, unusual_value
from cli_runner import run_cli
from study_samples import SMALL_DOSE

HARDNESS = [512.0, 540.0, 601.0, 655.0, 700.0, 798.0]

#: a coating-hardness map (the trial's): one measured value, named, with a unit
COATING = {
    "parameters": [
        {"name": "temperature", "low": 150.0, "high": 250.0, "grid": 11},
        {"name": "speed", "low": 10.0, "high": 50.0, "grid": 5},
    ],
    "threshold": 650.0,
    "measurement": {"name": "hardness", "unit": "HV"},
}


def _hardness(params: dict[str, float]) -> float:
    t, v = params["temperature"], params["speed"]
    bump = (1.0 - ((t - 205.0) / 60.0) ** 2) * (1.0 - ((v - 25.0) / 40.0) ** 2)
    return round(500.0 + 300.0 * bump, 1)


def _coating(url: str, answers: int, name: str = "coat"):
    study = create_study(name, "randomized-straddle", COATING, storage=url, seed=0)
    for _ in range(answers):
        q = study.ask()
        study.tell(q.id, _hardness(q.params))
    return study


def _dose(url: str, g_step: float = 0.0):
    """A safe study of the small dose space with 6 answers: f 10-15, g 0.1 (plus ``g_step`` per
    answer)."""
    study = create_study(
        "dose", "m-safeopt", SMALL_DOSE, storage=url, seed=0, fit_hyperparameters=False
    )
    for k in range(6):
        q = study.ask()
        study.tell(q.id, {"f": 10.0 + k, "g": 0.1 + g_step * k})
    return study


# -- the rule ------------------------------------------------------------------------------------
def test_a_decimal_slip_either_way_is_asked_about_and_the_likely_value_named():
    up = unusual_value(7234.0, HARDNESS, "the hardness")
    assert up is not None and "7234 for the hardness" in up and "512 to 798" in up
    assert "9.07 times the largest" in up and "723.4 would be inside" in up
    down = unusual_value(72.34, HARDNESS, "the hardness")
    assert down is not None and "723.4 would be inside" in down
    assert "7.08 times smaller than the smallest" in down


@pytest.mark.parametrize("value", [700.0, 1000.0, 2000.0, 300.0, 150.0])
def test_values_within_a_few_times_the_range_are_not_asked_about(value):
    assert unusual_value(value, HARDNESS) is None


def test_no_question_without_a_yardstick():
    """Fewer than MIN_ANSWERS earlier values say nothing about what is far; values all equal (a
    safe study's g at the lowest level) say nothing about how far is far: a step no slip
    explains exactly is not asked about (equal values, below)."""
    assert unusual_value(7234.0, HARDNESS[: MIN_ANSWERS - 1]) is None
    assert unusual_value(0.3, [0.1] * 8) is None  # a factor 3: growth, no slip gives 0.1
    assert unusual_value(0.9, [0.1] * 8) is None  # a wrong key, but where is unknown: growth
    assert unusual_value(1.0, [0.1] * (MIN_ANSWERS - 1)) is None
    assert unusual_value(float("nan"), HARDNESS) is None
    # non-finite earlier values are not counted
    assert unusual_value(7234.0, [*HARDNESS[:4], float("nan")]) is None


def test_a_value_growing_beyond_the_range_is_no_typo():
    """A safe study's g one level up, values that already span decades: not asked about."""
    assert unusual_value(1.0, [0.1, 0.1, 0.1, 0.2, 0.3]) is None
    assert unusual_value(5000.0, [1.0, 10.0, 100.0, 1000.0, 3.0]) is None


def test_near_zero_is_no_slip_when_the_values_come_close_to_zero():
    """(Found on simulated studies: Michalewicz's f ends near -4e-7 after values of -0.6 to
    -0.08.) A value near zero is questioned only when the values stay far from zero."""
    assert unusual_value(-4.3e-7, [-0.61, -0.08, -0.3, -0.2, -0.5, -0.1]) is None
    assert unusual_value(0.5, [500.0, 520.0, 510.0, 530.0, 505.0]) is not None


def test_with_mixed_signs_the_spread_decides():
    earlier = [-2.0, 0.5, 1.0, 3.0, -1.0]
    assert unusual_value(17.0, earlier) is None  # 2.8 spreads above: within 3
    far = unusual_value(30.0, earlier, "f")
    assert far is not None and "5.4 times their spread above them" in far
    assert unusual_value(-30.0, earlier) is not None


# -- equal values ---------------------------------------------------------------------------------
#: eight readings of g = 0.05 at the baseline setting (dose 0, timing 12), as in a trial where
#: every earlier g read the same
BASELINE = [[0.0, 12.0]] * 8
#: eight readings of 0.05 at the lowest dose, at timings 0 to 21
LOWEST = [[0.0, t] for t in (0.0, 3.0, 6.0, 9.0, 12.0, 15.0, 18.0, 21.0)]


@pytest.mark.parametrize(
    ("typed", "slip"),
    [
        ("0.5", "a misplaced decimal point? 0.05"),
        ("0.005", "a misplaced decimal point? 0.05"),
        ("0.50", "a misplaced decimal point? 0.05"),
        ("0,5", "a misplaced decimal point? 0,05"),
        ("-0.05", "a sign slip? 0.05"),
        ("0.055", "a digit typed twice? 0.05"),
        ("0.06", "a wrong key? 0.05"),
        ("0.15", "a wrong key? 0.05"),
        ("0.035", "an extra digit? 0.05"),
    ],
)
def test_a_slip_onto_equal_repeats_at_the_setting_is_asked_about(typed, slip):
    """(The trial's finding: g = 0.5 stored among readings of 0.05 with no question.) At a
    setting measured again and again with the same reading, a value that one slip turns into
    exactly that reading is asked about, the slip named as the person would type it."""
    v = float(typed.replace(",", "."))
    question = unusual_value(v, [0.05] * 8, "g", at=[0.0, 12.0], earlier_at=BASELINE, typed=typed)
    assert question == (
        f"{typed} for g differs from the 8 values stored so far at this setting, which all "
        f"read 0.05. Check the measurement ({slip} would match them)."
    )


def test_a_step_of_more_than_ratio_from_equal_repeats_is_asked_about_at_the_setting():
    """At one setting no growth explains a step: the range rule with the repeats as its range
    (a factor beyond RATIO) asks too; a smaller step that no slip explains does not."""
    def ask(v):
        return unusual_value(v, [0.05] * 8, "g", at=[0.0, 12.0], earlier_at=BASELINE)

    assert ask(5.0) == (
        "5 for g is 100 times what the 8 values stored so far at this setting all read "
        "(0.05). Check the measurement."
    )
    assert ask(0.0004).startswith("0.0004 for g is 125 times smaller than what the 8 values")
    assert ask(0.2) is None and ask(0.012) is None and ask(0.05) is None
    # without the setting (a number alone, no query open), 5 is growth past equal values
    assert unusual_value(5.0, [0.05] * 8) is None


def test_equal_repeats_at_the_setting_ask_whatever_the_other_settings_read():
    """Repeats at this setting agree exactly while other settings read otherwise: the question
    names the repeats (the range rule alone named the whole range's power of ten)."""
    earlier = [0.05] * 6 + [0.2, 0.3, 0.25]
    where = [[0.0, 12.0]] * 6 + [[10.0, 3.0], [20.0, 6.0], [10.0, 21.0]]
    question = unusual_value(0.5, earlier, "g", at=[0.0, 12.0], earlier_at=where, typed="0.5")
    assert question is not None and "the 6 values stored so far at this setting" in question
    assert question.endswith("(a misplaced decimal point? 0.05 would match them).")
    # fewer than MIN_ANSWERS repeats there: the prediction rule, as before
    few = MIN_ANSWERS - 1
    question = unusual_value(
        0.5, earlier[6 - few :], "g", at=[0.0, 12.0], earlier_at=where[6 - few :], typed="0.5"
    )
    assert question is not None and question.startswith("0.5 for g is far from what the 7")


def test_equal_values_everywhere_ask_by_where_the_setting_lies():
    """Every earlier value reads 0.05 (at the lowest dose, timings 0-21): within the earlier
    settings every slip counts (the prediction rule's domain); at the next dose (beyond them)
    or with no setting, only the decimal point and the sign (a keystroke's step is growth)."""
    def ask(typed, at):
        v = float(typed)
        return unusual_value(v, [0.05] * 8, "g", at=at, earlier_at=LOWEST, typed=typed)

    within, beyond = [0.0, 10.0], [4.0, 10.0]
    assert ask("0.06", within).endswith("(a wrong key? 0.05 would match them).")
    assert "the 8 values stored so far for it, which all read 0.05" in ask("0.06", within)
    assert ask("0.06", beyond) is None and ask("0.15", beyond) is None
    for typed in ("0.5", "0.005", "-0.05"):
        assert ask(typed, beyond) is not None and ask(typed, within) is not None
        assert unusual_value(float(typed), [0.05] * 8) is not None  # no setting
    assert ask("0.3", within) is None  # no slip gives 0.05
    assert ask("0.05", within) is None


def test_equal_readings_of_zero_ask_nothing():
    """A wrong key turns any one-digit value into 0, and a reading of zero is often a floor
    (nothing detected): no question, at the setting or anywhere."""
    assert unusual_value(3.0, [0.0] * 8, at=[0.0, 12.0], earlier_at=BASELINE) is None
    assert unusual_value(0.3, [0.0] * 8, at=[0.0, 10.0], earlier_at=LOWEST) is None


def test_the_equal_value_rules_keep_the_benchmarks_rule_before_the_keystrokes():
    """The slips are the module's list (SLIPS) as it stands when asked: with the decimal point
    and the sign alone (the rule before the keystroke slips, benchmarks/typo_catch.py's
    "before") a wrong key onto the repeats is not asked about, a decimal point is."""
    from boloop.study import plausibility

    saved = plausibility.SLIPS
    plausibility.SLIPS = ("point", "sign")
    try:
        args = {"at": [0.0, 12.0], "earlier_at": BASELINE}
        assert unusual_value(0.06, [0.05] * 8, **args, typed="0.06") is None
        assert unusual_value(0.5, [0.05] * 8, **args, typed="0.5") is not None
    finally:
        plausibility.SLIPS = saved


# -- where the value was measured -----------------------------------------------------------------
def _decades(x: np.ndarray) -> np.ndarray:
    """A smooth output spanning three decades over two axes (a rate against temperature)."""
    return 0.02 * 10.0 ** (3.0 * x[:, 0] ** 1.5 - 0.4 * (x[:, 1] - 0.5) ** 2)


def _crossing(x: np.ndarray) -> np.ndarray:
    """A smooth output crossing zero."""
    return np.sin(5.0 * x[:, 0]) + 0.5 * np.cos(3.0 * x[:, 1])


def _sample(function, n: int, seed: int, noise: float = 0.01) -> tuple[np.ndarray, np.ndarray]:
    """``n`` settings in [0, 1]^2 and the output there, with relative (decades) or absolute
    noise, rounded to 4 significant digits as typed."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(n, 2))
    y = function(x)
    y = y * 10.0 ** (noise * rng.standard_normal(n)) if function is _decades else y
    y = y + (noise * rng.standard_normal(n) if function is _crossing else 0.0)
    return x, np.array([float(f"{v:.4g}") for v in y])


def test_a_decimal_slip_inside_values_spanning_decades_is_asked_about_at_its_setting():
    x, y = _sample(_decades, 30, seed=0)
    at = np.array([0.7, 0.4])
    true = float(_decades(at[None, :])[0])  # 0.42, inside the range 0.02-19
    assert y.min() < true / 10.0 and true * 10.0 < y.max()
    for typed, meant in ((true * 10.0, true), (true / 10.0, true)):
        assert unusual_value(typed, y) is None  # the range rule cannot see it
        question = unusual_value(typed, y, "the rate", at=at, earlier_at=x)
        assert question is not None and question.startswith(f"{typed:g} for the rate is far")
        assert "misplaced decimal point?" in question
        assert f"{float(f'{meant:.12g}'):g} would be close to it" in question
        # the prediction it names is the function's value there (an oracle: the truth)
        about = float(re.search(r"about ([0-9.e+-]+);", question).group(1))
        assert abs(math.log10(about / true)) < 0.05
    assert unusual_value(true, y, at=at, earlier_at=x) is None


def test_a_slip_in_values_crossing_zero_is_asked_about_at_its_setting():
    x, y = _sample(_crossing, 30, seed=1)
    at = np.array([0.35, 0.2])
    true = float(_crossing(at[None, :])[0])  # 1.46, range about -1.5 to 1.5
    assert unusual_value(true / 10.0, y) is None and unusual_value(-true, y) is None
    down = unusual_value(true / 10.0, y, "f", at=at, earlier_at=x)
    assert down is not None and "misplaced decimal point?" in down
    flipped = unusual_value(-true, y, "f", at=at, earlier_at=x)
    assert flipped is not None and f"a sign slip? {true:g} would be close to it" in flipped


@pytest.mark.parametrize("function", [_decades, _crossing])
@pytest.mark.parametrize("seed", [2, 3])
def test_clean_values_of_a_smooth_sequence_are_not_asked_about(function, seed):
    """Every value of a smooth, noisy sequence, checked against the ones before it as it is
    typed: none is asked about."""
    x, y = _sample(function, 40, seed=seed)
    for i in range(MIN_ANSWERS, len(y)):
        question = unusual_value(y[i], y[:i], at=x[i], earlier_at=x[:i])
        assert question is None, (i, question)


def test_with_fewer_than_min_answers_known_settings_nothing_is_predicted():
    x, y = _sample(_decades, MIN_ANSWERS + 1, seed=4)
    at = np.array([0.7, 0.4])
    slip = float(_decades(at[None, :])[0]) * 10.0
    few = MIN_ANSWERS - 1
    assert unusual_value(slip, y[:few], at=at, earlier_at=x[:few]) is None
    # values whose setting is unknown (nan) are not counted for the prediction
    unknown = x.copy()
    unknown[:2] = np.nan
    assert unusual_value(slip, y, at=at, earlier_at=unknown) is None
    with pytest.raises(InvalidInputError, match="one setting per earlier value"):
        unusual_value(slip, y, at=at, earlier_at=x[:-1])


def test_the_range_rule_asks_as_before_when_the_setting_is_known():
    x = np.linspace(0.0, 1.0, len(HARDNESS))[:, None]
    for value in (7234.0, 72.34, -700.0):
        with_setting = unusual_value(value, HARDNESS, "the hardness", at=[0.5], earlier_at=x)
        assert with_setting == unusual_value(value, HARDNESS, "the hardness")
        assert "far outside" in with_setting


# -- one keystroke of the number as typed ---------------------------------------------------------
def _line() -> tuple[np.ndarray, list[float]]:
    """A straight output from 0.3 to 0.5 along one axis (25 settings), typed to 4 significant
    digits: its prediction is good to a few parts in ten thousand (0.4358 at 0.679)."""
    x = np.linspace(0.0, 1.0, 25)[:, None]
    return x, [float(f"{v:.4g}") for v in 0.3 + 0.2 * x[:, 0]]


@pytest.mark.parametrize(
    ("typed", "slip"),
    [
        ("0.44358", "a digit typed twice"),
        ("0.4538", "two digits swapped"),
        ("0.4258", "a wrong key"),
        ("0.43758", "an extra digit"),
    ],
)
def test_a_keystroke_slip_is_asked_about_and_its_correction_named(typed, slip):
    x, y = _line()
    assert unusual_value(float(typed), y) is None  # inside the range: the range rule cannot see it
    question = unusual_value(float(typed), y, "the rate", at=[0.679], earlier_at=x, typed=typed)
    assert question is not None and question.startswith(f"{typed} for the rate is far from")
    # named first, or second where another correction fits as well (0.43578, two digits
    # swapped, lies as near the prediction as 0.4358 for 0.43758)
    first = f"({slip}? 0.4358 would be close to it)"
    assert first in question or question.endswith(f"; or {slip}? 0.4358).")
    assert unusual_value(0.4358, y, at=[0.679], earlier_at=x, typed="0.4358") is None


def test_a_digit_left_out_names_the_prediction_not_a_digit():
    """Which digit was left out cannot be told: the question names the prediction."""
    x, y = _line()
    question = unusual_value(0.458, y, "the rate", at=[0.679], earlier_at=x, typed="0.458")
    assert question is not None
    assert question.endswith("(a digit left out? about 0.436 would be expected here).")


def test_a_wrong_key_is_named_beside_a_decimal_point_that_fits_about_as_well():
    """(The trial's finding.) 5.435 typed for 0.435, among values spanning three decades with
    some scatter (the range rule cannot see it): a tenth of it, 0.5435, also lies within NEAR
    predictive standard deviations here, and was named alone before the keystroke slips; the
    correction one keystroke away, nearer the prediction but one of 36 wrong keys, is about as
    probable (module docstring), and the question names both."""
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(30, 1))
    y = [float(f"{v:.4g}") for v in 0.01 * 10 ** (3 * x[:, 0] + 0.06 * rng.standard_normal(30))]
    at = [math.log10(43.5) / 3.0]  # 0.435 there
    assert unusual_value(5.435, y) is None
    question = unusual_value(5.435, y, "the rate", at=at, earlier_at=x, typed="5.435")
    assert question is not None
    assert question.endswith(
        "(a misplaced decimal point? 0.5435 would be close to it; or a wrong key? 0.435)."
    )
    assert unusual_value(0.435, y, at=at, earlier_at=x, typed="0.435") is None


@pytest.mark.parametrize("seed", range(8))
def test_a_decimal_point_slip_is_named_though_a_wrong_key_lands_nearer(seed):
    """-0.2226 typed for -2.226 among values crossing zero (the range rule cannot see it): a
    wrong key on the leading 0 gives -2.2226, as near the prediction as -2.226 is, and nearer
    by chance at some settings; it is one of 45 wrong keys, the decimal point one of two
    corrections: the question names the decimal point (the nearest correction named the
    wrong key at three of these eight seeds, steering the person to store -2.2226)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(30, 1))
    y = [float(f"{v:.4g}") for v in -3.0 + 6.0 * x[:, 0] + 0.02 * rng.standard_normal(30)]
    at = [(3.0 - 2.226) / 6.0]
    assert unusual_value(-0.2226, y) is None
    question = unusual_value(-0.2226, y, "the shift", at=at, earlier_at=x, typed="-0.2226")
    assert question is not None
    assert "(a misplaced decimal point? -2.226 would be close to it" in question


def test_the_decimal_point_and_sign_corrections_keep_the_text_as_typed():
    """Typed with a decimal comma, the corrections of the decimal point and the sign have it
    too, with every digit typed (not %g's six); so does the value the question quotes."""
    x = np.linspace(0.0, 1.0, 25)[:, None]
    y = [float(f"{v:.7g}") for v in -3000.0 + 6000.0 * x[:, 0]]
    at = [(3000.0 - 2226.123) / 6000.0]  # -2226.123 there

    def ask(typed):
        v = float(typed.replace(",", "."))
        return unusual_value(v, y, "the shift", at=at, earlier_at=x, typed=typed)

    assert ask("-222,6123").startswith("-222,6123 for the shift is far from")
    assert "(a misplaced decimal point? -2226,123 would be close to it" in ask("-222,6123")
    assert "(a misplaced decimal point? -2226.123 would be close to it" in ask("-222.6123")
    assert "(a sign slip? -2226,123 would be close to it" in ask("2226,123")
    assert "(a sign slip? -2226.123 would be close to it" in ask("+2226.123")
    # positional, as typed (read_number reads no decimal comma with an exponent: 1,5e-05)
    small = [v * 1e-7 for v in y]
    at_small = unusual_value(-222.6123e-7, small, "x", at=at, earlier_at=x, typed="-0,00002226123")
    assert "(a misplaced decimal point? -0,0002226123 would be close to it" in at_small
    # a number without its text: as before (%g)
    question = unusual_value(-222.6123, y, "the shift", at=at, earlier_at=x)
    assert question.startswith("-222.612 for the shift")
    assert "(a misplaced decimal point? -2226.12 would be close to it" in question


@pytest.mark.parametrize("value", [0.6123, 0.3, 0.52, 0.39])
def test_a_far_value_no_slip_explains_is_not_asked_about(value):
    """Far from the prediction (tens of percent, where 2% is asked about above) but no
    correction of one keystroke, decimal point or sign comes near it: a measurement that
    surprises, not a typo."""
    x, y = _line()
    assert unusual_value(value, y, at=[0.679], earlier_at=x, typed=f"{value:g}") is None


def test_the_slips_edit_the_text_as_typed():
    """``0.40`` typed for 0.43 is a wrong key; the number 0.4 alone has no second digit to
    mistype (one left out, then). A decimal comma stays in the correction; a text that does not
    read as the value is not used."""
    x, y = _line()

    def ask(value, typed):
        return unusual_value(value, y, "the rate", at=[0.65], earlier_at=x, typed=typed)

    assert ask(0.4, "0.40").endswith("(a wrong key? 0.43 would be close to it).")
    assert ask(0.4, "0,40").endswith("(a wrong key? 0,43 would be close to it).")
    assert ask(0.4, None).endswith("(a digit left out? about 0.43 would be expected here).")
    assert ask(0.4, "0.41") == ask(0.4, None)


# -- the study -----------------------------------------------------------------------------------
def test_study_asks_per_output_in_its_own_words(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = _coating(url, answers=6)
    events = len(study.events())
    (question,) = study.unusual_values(7234)
    assert question.startswith("7234 for the hardness is far outside the 6 values")
    assert study.unusual_values("7234") == [question]  # typed text, as the CLI passes it
    assert study.unusual_values(723.4) == []
    assert study.unusual_values("abc") == []  # not a measurement: tell refuses it, not this
    # one measured value named as tell takes it too (f=..., {"f": ...}): the same question
    assert study.unusual_values({"f": 7234.0}) == [question]
    assert study.unusual_values({"value": 7234}) == [question]
    assert study.unusual_values("f=7234") == [question]
    assert len(load_study("coat", storage=url).events()) == events  # asking stores nothing


#: a rate spanning three decades over temperature (a level-set map of where it exceeds 1/s)
RATES = {
    "parameters": [
        {"name": "temperature", "low": 20.0, "high": 120.0, "grid": 21},
        {"name": "pressure", "low": 1.0, "high": 5.0, "grid": 5},
    ],
    "threshold": 1.0,
    "measurement": {"name": "rate", "unit": "1/s"},
}


def _rate(params: dict[str, float]) -> float:
    t, p = params["temperature"], params["pressure"]
    return float(f"{0.01 * 10 ** (3 * (t - 20) / 100) * (1 + 0.1 * (p - 3)):.4g}")


def test_study_asks_at_the_open_query_or_the_added_point(tmp_path):
    """A study passes the setting: the open query's point (tell, the page, the run prompt) or
    the point of a measurement added (``add``); without one, the range rule alone."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("rates", "randomized-straddle", RATES, storage=url, seed=0)
    for _ in range(12):
        q = study.ask()
        study.tell(q.id, _rate(q.params))
    earlier = [row["answer"] for row in study.history()]
    point = {"temperature": 70.0, "pressure": 2.0}
    true = _rate(point)
    assert min(earlier) < true / 10 and true * 10 < max(earlier)  # inside the range
    assert study.unusual_values(true * 10) == []  # no query open: no setting known
    (question,) = study.unusual_values(true * 10, point)
    assert question.startswith(f"{true * 10:g} for the rate is far from what the 12 values")
    assert f"{true:g} would be close to it" in question
    assert study.unusual_values(true, point) == []
    q = study.ask()
    true = _rate(q.params)
    (question,) = study.unusual_values(str(true / 10))  # typed text, at the open query
    assert f"{true:g} would be close to it" in question
    assert study.unusual_values(str(true)) == []


def _wrong_key(value: float) -> tuple[str, str]:
    """``value`` as typed and with its leading digit mistyped (a factor 2 or more off)."""
    text = f"{value:g}"
    i = next(i for i, c in enumerate(text) if c in "123456789")
    return text, text[:i] + ("3" if text[i] in "6789" else "9") + text[i + 1 :]


def test_study_passes_the_text_as_typed(tmp_path):
    """The study reads the typed text (one value, named, several in one line) and the slips
    edit it: the correction keeps the person's decimal comma; a number has its shortest text."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("rates", "randomized-straddle", RATES, storage=url, seed=0)
    for _ in range(12):
        q = study.ask()
        study.tell(q.id, _rate(q.params))
    q = study.ask()
    text, slip = _wrong_key(_rate(q.params))
    assert "." in text and study.unusual_values(text) == []
    comma = f"(a wrong key? {text.replace('.', ',')} would be close to it)"
    for typed in (slip.replace(".", ","), {"rate": slip.replace(".", ",")}):
        (question,) = study.unusual_values(typed)
        assert comma in question, typed
    (question,) = study.unusual_values(float(slip))
    assert f"(a wrong key? {text} would be close to it)" in question


def test_the_texts_are_read_as_tell_reads_the_numbers():
    from boloop.study.answers import number_texts

    assert number_texts(" 0.50 ") == {"": "0.50"}
    assert number_texts("f=1,2; g=0.30") == {"f": "1,2", "g": "0.30"}
    assert number_texts("temperature=35,5") == {"temperature": "35,5"}
    assert number_texts("1,2 0,30", ("f", "g")) == {"f": "1,2", "g": "0,30"}
    assert number_texts("1.2,0.30", ("f", "g")) == {"f": "1.2", "g": "0.30"}
    assert number_texts('{"f": "0,5", "g": 2}') == {"f": "0,5"}  # a JSON number has no text
    assert number_texts({"f": " 0.50", "g": 0.3}) == {"f": "0.50"}
    assert number_texts(0.5) == {} and number_texts("abc") == {} and number_texts("1,234") == {}


def test_the_api_and_the_page_pass_the_text_as_typed(tmp_path):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("rates", "randomized-straddle", RATES, storage=url, seed=0)
    for _ in range(12):
        q = study.ask()
        study.tell(q.id, _rate(q.params))
    c = TestClient(create_app(url), follow_redirects=False)
    csrf = re.search(r'name="csrf" value="([^"]+)"', c.get("/studies/rates").text).group(1)
    q = c.post("/api/studies/rates/ask").json()
    text, slip = _wrong_key(_rate(q["params"]))
    correction = f"(a wrong key? {text.replace('.', ',')} would be close to it)"
    typed = slip.replace(".", ",")
    # the page holds it back (nothing stored) ...
    form = {"csrf": csrf, "query_id": str(q["id"]), "value": typed, "note": ""}
    r = c.post("/studies/rates/tell", data=form)
    assert r.status_code == 400 and correction in r.text
    # ... the API stores it and returns the question
    r = c.post("/api/studies/rates/tell", json={"query_id": q["id"], "answer": typed})
    assert r.status_code == 200, r.text
    (question,) = r.json()["unusual"]
    assert correction in question


def test_safe_study_asks_about_f_and_g_separately(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = _dose(url)  # g the same at every seed: no yardstick
    assert study.unusual_values({"f": 12.0, "g": 0.9}) == []
    (question,) = study.unusual_values({"f": 150.0, "g": 0.2})
    assert question.startswith("150 for ") and "f" in question.split(" is far")[0]


#: the trial's dose-finding space (session 18): f and g named, with units
DOSE = {
    "parameters": [
        {"name": "dose", "low": 0.0, "high": 40.0, "grid": 11, "unit": "mg"},
        {"name": "timing", "low": 0.0, "high": 24.0, "grid": 9, "unit": "h"},
    ],
    "monotone": "dose",
    "h": 0.6,
    "measurement": {"f": {"name": "efficacy", "unit": "%"}, "g": {"name": "toxicity", "unit": "AU"}},
}


def _baseline(url: str):
    """A safe study whose open query's setting (the lowest dose) was measured six times, every
    toxicity 0.05 (a baseline measured again and again, as in the trial)."""
    study = create_study("dose", "m-safeopt", DOSE, storage=url, seed=0)
    q = study.ask()
    for _ in range(6):
        study.add(q.params, {"f": 20.0, "g": 0.05})
    return study, q


def test_study_asks_about_a_slip_among_equal_readings_at_the_open_query(tmp_path):
    """(Session 18: bob stored g = 0.5 among readings of 0.05 with no question; 0.005 and 5
    were let through alike.) The study asks at the open query's setting, in the space's words."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study, q = _baseline(url)
    (question,) = study.unusual_values("f=20; g=0.5")
    assert question == (
        "0.5 for the toxicity differs from the 6 values stored so far at this setting, which "
        "all read 0.05. Check the measurement (a misplaced decimal point? 0.05 would match "
        "them)."
    )
    assert study.unusual_values("20 0.005")[0].startswith("0.005 for the toxicity differs")
    assert study.unusual_values("20 5")[0].startswith("5 for the toxicity is 100 times what")
    assert study.unusual_values("20 0.05") == []
    # the same value at a setting given to add: asked there too
    assert study.unusual_values({"f": 20.0, "g": 0.5}, q.params) == [question]


def test_page_holds_back_a_slip_among_equal_readings(tmp_path):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    _, q = _baseline(url)
    c = TestClient(create_app(url), follow_redirects=False)
    csrf = re.search(r'name="csrf" value="([^"]+)"', c.get("/studies/dose").text).group(1)
    form = {"csrf": csrf, "query_id": str(q.id), "out.f": "20", "out.g": "0.5", "note": ""}
    r = c.post("/studies/dose/tell", data=form)
    assert r.status_code == 400
    assert "0.5 for the toxicity differs from the 6 values stored so far at this setting" in r.text
    assert "0.05 would match them" in r.text and 'name="confirm_unusual"' in r.text
    assert load_study("dose", storage=url).n_answered == 6  # nothing stored
    r = c.post("/studies/dose/tell", data={**form, "out.g": "0.05"})
    assert r.status_code == 303, r.text
    assert load_study("dose", storage=url).history()[-1]["answer"] == {"f": 20.0, "g": 0.05}


def test_cli_tell_warns_about_a_slip_among_equal_readings(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    _, q = _baseline(url)
    r = run_cli(["study", "tell", "dose", str(q.id), "20 0,5", "--storage", url], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "WARNING: 0,5 for the toxicity differs from the 6 values" in r.stdout
    assert "(a misplaced decimal point? 0,05 would match them)" in r.stdout
    assert f"boloop study undo dose --storage {url}" in r.stdout


# -- the command line ----------------------------------------------------------------------------
def test_cli_tell_and_add_store_and_warn_with_the_undo_command(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = _coating(url, answers=6)
    q = study.ask()
    r = run_cli(["study", "tell", "coat", str(q.id), "7234", "--storage", url], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"stored: query {q.id} -> 7234" in r.stdout
    assert re.search(r"WARNING: 7234 for the hardness is far outside .* 723\.4 would be", r.stdout)
    assert f"boloop study undo coat --storage {url}" in r.stdout
    assert load_study("coat", storage=url).history()[-1]["answer"] == 7234.0  # stored as typed
    r = run_cli(["study", "undo", "coat", "--storage", url], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = run_cli(["study", "tell", "coat", str(q.id), "723.4", "--storage", url], cwd=tmp_path)
    assert r.returncode == 0 and "WARNING" not in r.stdout


def test_cli_add_warns_too(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    _coating(url, answers=6)
    point = "temperature=150,speed=10"
    r = run_cli(["study", "add", "coat", point, "55", "--storage", url], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "WARNING: 55 for the hardness is far outside" in r.stdout
    # undo withdraws the added measurement; no query asks for it again
    assert r.stdout.rstrip().endswith("and add it again.")


# -- the page (the framework's TestClient; the real browser: test_web_browser_flow.py) ----------
def test_page_holds_an_unusual_value_back_until_confirmed(tmp_path):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    _coating(url, answers=6)
    c = TestClient(create_app(url), follow_redirects=False)
    page = c.get("/studies/coat").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    q = load_study("coat", storage=url).ask()
    form = {"csrf": csrf, "query_id": str(q.id), "value": "7234", "note": ""}
    r = c.post("/studies/coat/tell", data=form)
    assert r.status_code == 400
    assert "7234 for the hardness is far outside" in r.text and "723.4 would be" in r.text
    assert 'name="confirm_unusual"' in r.text and 'value="7234"' in r.text  # kept in the field
    assert load_study("coat", storage=url).n_answered == 6  # nothing stored
    # corrected: stored without a question
    r = c.post("/studies/coat/tell", data={**form, "value": "723,4"})
    assert r.status_code == 303, r.text
    assert load_study("coat", storage=url).history()[-1]["answer"] == 723.4
    # confirmed: stored as typed
    q = load_study("coat", storage=url).ask()
    form = {**form, "query_id": str(q.id), "value": "9999"}
    assert c.post("/studies/coat/tell", data=form).status_code == 400
    # the box confirms the value it was shown with: changed to another unusual one, asked again
    r = c.post("/studies/coat/tell", data={**form, "value": "8888", "confirm_unusual": "9999"})
    assert r.status_code == 400 and "8888 for the hardness" in r.text
    r = c.post("/studies/coat/tell", data={**form, "confirm_unusual": "9999"})
    assert r.status_code == 303, r.text
    assert load_study("coat", storage=url).history()[-1]["answer"] == 9999.0


def test_cli_run_asks_before_storing(tmp_path):
    """The ``study run`` prompt asks, as the page does: no stores nothing, yes stores."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    _coating(url, answers=6)
    r = run_cli(
        ["study", "run", "coat", "--storage", url], cwd=tmp_path, stdin="7234\nn\n7234\ny\n"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("7234 for the hardness is far outside") == 2
    assert "not stored; type the value again" in r.stdout
    answers = [row["answer"] for row in load_study("coat", storage=url).history()]
    assert answers[6:] == [7234.0]  # the second, confirmed, only


def test_values_typed_in_the_outputs_order_are_asked_about_too(tmp_path):
    """``tell`` and the ``study run`` prompt take a safe study's two values without names, in
    the order of the outputs (``1.2 0.3``, ``1,2 0,3``, ``1.2,0.3``): the question reads them
    as ``tell`` stores them (they were not read, so a slip typed so was never asked about)."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = _dose(url)
    study.ask()
    named = study.unusual_values("f=150; g=0,1")
    assert len(named) == 1 and named[0].startswith("150 for ")
    for typed in ("150 0.1", "150 0,1", "150,0.1"):
        assert study.unusual_values(typed) == named, typed
    # the likely values are written as the value was typed ("10.0" for an extra digit of 150.0)
    assert study.unusual_values("150.0, 0.1") == study.unusual_values("f=150.0; g=0,1")
    assert len(study.unusual_values("150.0, 0.1")) == 1
    assert study.unusual_values("12 0.1") == []


def test_cli_tell_warns_about_values_typed_in_the_outputs_order(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = _dose(url)
    q = study.ask()
    r = run_cli(["study", "tell", "dose", str(q.id), "150 0,1", "--storage", url], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert re.search(r"WARNING: 150 for .* is far outside the 6 values", r.stdout)


def test_growth_past_close_values_is_asked_about_as_the_docs_say():
    """No exception for growth (docs/studies.md): a factor 8 past values that lie close
    together is asked about; a value of the other sign or zero falls under the spread rule."""
    close = [0.010, 0.011, 0.012, 0.010, 0.011]
    assert unusual_value(0.1, close) is not None
    assert unusual_value(0.05, close) is None  # a factor 4.2: within RATIO
    assert unusual_value(-700.0, HARDNESS) is not None  # 4.2 spreads below
    assert unusual_value(0.0, HARDNESS) is None  # 1.8 spreads below


def test_a_confirmation_is_for_the_value_it_was_given_for(tmp_path):
    """(A reviewer's finding.) g above the limit confirmed, then held back as unusual: the page
    carries the over-limit confirmation of that g; changed to another g above the limit, the
    carried confirmation no longer holds and the limit is asked about again."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    _dose(url, g_step=0.05)
    c = TestClient(create_app(url), follow_redirects=False)
    csrf = re.search(r'name="csrf" value="([^"]+)"', c.get("/studies/dose").text).group(1)
    q = load_study("dose", storage=url).ask()
    form = {"csrf": csrf, "query_id": str(q.id), "out.f": "12", "out.g": "35", "note": ""}
    r = c.post("/studies/dose/tell", data=form)
    assert r.status_code == 400 and 'name="confirm_over_limit" value="35"' in r.text
    r = c.post("/studies/dose/tell", data={**form, "confirm_over_limit": "35"})
    assert r.status_code == 400 and "35 for g is far outside" in r.text
    assert '<input type="hidden" name="confirm_over_limit" value="35">' in r.text
    assert 'name="confirm_unusual" value="12|35"' in r.text
    # g changed to 45 with both confirmations of 35 sent: the limit is asked about again
    changed = {**form, "out.g": "45", "confirm_over_limit": "35", "confirm_unusual": "12|35"}
    r = c.post("/studies/dose/tell", data=changed)
    assert r.status_code == 400 and "g = 45 is above the safety limit" in r.text
    assert load_study("dose", storage=url).n_answered == 6
    r = c.post("/studies/dose/tell", data={**form, "confirm_over_limit": "35",
                                             "confirm_unusual": "12|35"})  # fmt: skip
    assert r.status_code == 303
    assert load_study("dose", storage=url).history()[-1]["answer"] == {"f": 12.0, "g": 35.0}


def test_a_value_at_a_setting_beyond_every_earlier_one_is_not_predicted():
    """A safe study's f at the next level of dose, after values at dose 0 only, or a new
    pressure after values at one pressure: the earlier values say nothing there, so only the
    range rule may ask (it does not: the value is a few spreads past them)."""
    rng = np.random.default_rng(0)
    doses = np.zeros(21)
    timings = rng.uniform(0.0, 24.0, 21)
    y = np.round(0.01 * rng.standard_normal(21), 4)
    earlier = np.column_stack([doses, timings])
    assert unusual_value(0.05, y, "f", at=[5.0, 12.0], earlier_at=earlier) is None
    # inside the earlier settings the same sequence still has its yardstick
    x, y2 = _sample(_decades, 30, seed=0)
    at = np.array([0.7, 0.4])
    slip = float(_decades(at[None, :])[0]) * 10.0
    assert unusual_value(slip, y2, at=at, earlier_at=x) is not None
    assert unusual_value(slip, y2, at=[1.5, 0.4], earlier_at=x) is None  # beyond on one axis


def test_the_question_says_how_many_values_the_prediction_used():
    from boloop.study.plausibility import MAX_POINTS

    x, y = _sample(_decades, MAX_POINTS + 50, seed=5)
    at = np.array([0.5, 0.5])
    slip = float(_decades(at[None, :])[0]) / 10.0
    question = unusual_value(slip, y, at=at, earlier_at=x)
    assert question is not None
    assert f"the {MAX_POINTS} nearest of the {MAX_POINTS + 50} values stored so far" in question


def test_the_api_stores_and_returns_the_question(tmp_path):
    """The JSON API stores as `tell` does and says what the page would have asked."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    _coating(url, answers=6)
    c = TestClient(create_app(url), follow_redirects=False)
    q = c.post("/api/studies/coat/ask").json()
    r = c.post("/api/studies/coat/tell", json={"query_id": q["id"], "answer": 7234})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["stored"] is True and out["answered"] == 7
    assert len(out["unusual"]) == 1 and "7234 for the hardness is far outside" in out["unusual"][0]
    assert load_study("coat", storage=url).history()[-1]["answer"] == 7234.0  # stored as typed
    q = c.post("/api/studies/coat/ask").json()
    r = c.post("/api/studies/coat/tell", json={"query_id": q["id"], "answer": 700.5})
    assert r.status_code == 200 and r.json()["unusual"] == []


def test_the_prediction_is_written_without_an_exponent():
    """(A newcomer's trial.) Hardnesses near a threshold of 1100 HV: the question said "about
    1.1e+03", which hides the number that matters; it writes 1090 now."""
    x, y = _line()
    hard = [2000.0 * v + 220.0 for v in y]  # 820 to 1220 HV, 1091.6 at 0.679
    question = unusual_value(1019.6, hard, "the hardness", at=[0.679], earlier_at=x, typed="1019.6")
    assert question is not None and "e+0" not in question
    assert "(about 1090;" in question


@pytest.mark.parametrize(
    ("typed", "hint"),
    [
        ("10067.7", "a digit typed twice? 1067.7 would be close to it"),
        ("15067.7", "an extra digit? 1067.7 would be close to it"),
        ("106.77", "a misplaced decimal point? 1067.7 would be close to it"),
    ],
)
def test_far_outside_the_range_the_prediction_names_the_slip(typed, hint):
    """(A newcomer's trial.) A value far outside the range was hinted with the power of ten that
    brings it inside (10067.7 -> "1006.77"), the wrong value for a digit typed twice, which a
    person taking the hint stored unquestioned. Where the setting is known and a slip fits the
    prediction there, the question names that slip instead."""
    x = np.linspace(0.0, 1.0, 25)[:, None]
    y = [round(820.0 + 400.0 * v, 1) for v in x[:, 0]]
    at = [(1067.7 - 820.0) / 400.0]
    question = unusual_value(float(typed), y, "the hardness", at=at, earlier_at=x, typed=typed)
    assert question is not None and "far outside the 25 values" in question
    assert f"(at this setting the values stored so far predict about 1070: {hint})." in question
    assert "inside that range" not in question
    # without the setting, the range rule's question as before (a power of ten into the range
    # where one brings it there)
    assert unusual_value(float(typed), y, "the hardness").startswith(question.split(" (at")[0])
