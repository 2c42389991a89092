"""Repeated measurements against a fixed noise variance (:mod:`boloop.gp.repeats`), and the safe
family's warning when they contradict ``noise_g`` / ``noise_f`` (its models never learn the
noise: a variance below the real one makes the safety model trust each measurement too much)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2

from boloop.gp.repeats import ALPHA, noise_too_small, repeat_scatter
from boloop.study import create_study
from study_samples import SMALL_DOSE


def test_pooled_variance_is_the_within_setting_scatter():
    """Against a direct computation: settings measured 3, 1 and 2 times."""
    X = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [2.0, 2.0]])
    y = np.array([1.0, 2.0, 4.0, 10.0, -1.0, 1.0])
    rs = repeat_scatter(X, y)
    ss = np.sum((np.array([1.0, 2.0, 4.0]) - 7.0 / 3.0) ** 2) + 2.0  # (-1 - 0)^2 + (1 - 0)^2
    assert rs.df == 3 and rs.settings == 2
    assert rs.variance == pytest.approx(ss / 3.0)
    assert repeat_scatter(X[[0, 3, 4]], y[[0, 3, 4]]).df == 0  # no repeats: no scatter


def test_the_test_is_the_chi_square_quantile():
    """Flagged exactly when S = df s^2 / sigma^2 exceeds chi2_df(1 - ALPHA); the suggestion is
    the upper end of the one-sided 95% interval of the variance."""
    X = np.repeat(np.arange(3.0), 3)[:, None]  # 3 settings x 3: df = 6
    base = np.array([-1.0, 0.0, 1.0])  # each setting: sum of squares 2
    y = np.concatenate([base, base + 5.0, base - 2.0])
    S = 6.0  # 3 x 2
    edge = S / chi2.ppf(1.0 - ALPHA, 6)  # the largest sigma^2 that flags
    assert noise_too_small(X, y, edge * 1.01) is None
    found = noise_too_small(X, y, edge * 0.99)
    assert found is not None and found["df"] == 6 and found["variance"] == pytest.approx(1.0)
    assert found["suggested"] == pytest.approx(S / chi2.ppf(0.05, 6))


def test_false_alarms_and_power_by_simulation():
    """Gaussian repeats with the assumed noise flag at about ALPHA; with ten times its variance
    they flag nearly always (5 settings x 3 repeats, df = 10)."""
    rng = np.random.default_rng(0)
    X = np.repeat(np.arange(5.0), 3)[:, None]
    means = np.repeat(rng.normal(size=5) * 10.0, 3)
    n = 4000
    false = sum(noise_too_small(X, means + rng.normal(size=15), 1.0) is not None for _ in range(n))
    assert false <= 12  # expected 4 (ALPHA * n); P(more than 12) < 1e-3
    power = sum(
        noise_too_small(X, means + rng.normal(size=15) * np.sqrt(10.0), 1.0) is not None
        for _ in range(200)
    )
    assert power >= 180


def _dose_study(url: str, noise_g: float | None = None):
    options = {} if noise_g is None else {"noise_g": noise_g}
    return create_study(
        "dose", "m-safeopt", SMALL_DOSE, storage=url, seed=0, fit_hyperparameters=False, **options
    )


def test_safe_status_warns_when_repeats_contradict_noise_g(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = _dose_study(url)  # noise_g: the default 1e-5 (a standard deviation of 0.003)
    q = study.ask()
    study.tell(q, {"f": 1.0, "g": 0.10})
    for g in (0.25, 0.02, 0.18, 0.05):  # the same setting measured again: sd about 0.09
        study.add(q.params, {"f": 1.0, "g": g})
    st = study.status()
    (warning,) = [w for w in st["warnings"] if "scatter" in w]
    assert warning.startswith("Repeated measurements of g at the same setting scatter more than")
    assert "noise_g = 1e-05 allows" in warning
    assert "can certify settings that are not safe" in warning
    suggested = st["settings"]["noise_check"]["g"]["suggested"]
    assert f"--option noise_g={float(f'{suggested:.2g}'):g}" in warning
    assert "study create dose-continued --from dose" in warning
    assert "f" not in st["settings"]["noise_check"]  # f did not scatter


def test_no_warning_when_the_noise_fits_the_repeats(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = _dose_study(url, noise_g=0.01)  # sd 0.1: the scatter below fits it
    q = study.ask()
    study.tell(q, {"f": 1.0, "g": 0.10})
    for g in (0.25, 0.02, 0.18, 0.05):
        study.add(q.params, {"f": 1.0, "g": g})
    st = study.status()
    assert not [w for w in st["warnings"] if "scatter" in w]
    assert st["settings"]["noise_check"] == {}


def test_the_page_shows_a_plain_notice_with_the_numbers_for_the_owner(tmp_path):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = _dose_study(url)
    q = study.ask()
    study.tell(q, {"f": 1.0, "g": 0.10})
    for g in (0.25, 0.02, 0.18, 0.05):
        study.add(q.params, {"f": 1.0, "g": g})
    page = TestClient(create_app(url), follow_redirects=False).get("/studies/dose").text
    notice = page.split('id="study-noise"', 1)[1].split("</div>", 1)[0]
    assert "The measurements disagree more than the study assumes" in notice
    assert "Ask the study's owner to check" in notice
    details = notice.split("<details", 1)[1]
    assert "scatter more than noise_g" in details and "--option noise_g=" in details
    assert 'id="study-warnings"' not in page  # not the red alarm of a value over the limit


def test_level_set_with_a_fixed_noise_is_checked_a_learned_one_is_not(tmp_path):
    """The level-set family's noise is learned by default (nothing to check); with
    fit_hyperparameters=false it is the fixed noise_variance (default 1e-6), checked alike."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    space = {"parameters": [{"name": "T", "low": 0.0, "high": 1.0, "grid": 11}], "threshold": 0.5}
    scatter = (0.40, 0.62, 0.31, 0.55, 0.47)
    for name, options in (("fixed", {"fit_hyperparameters": False}), ("learned", {})):
        study = create_study(name, "randomized-straddle", space, storage=url, seed=0, **options)
        q = study.ask()
        study.tell(q, scatter[0])
        for v in scatter[1:]:
            study.add(q.params, v)
        st = study.status()
        warned = [w for w in st["warnings"] if "scatter" in w]
        if name == "fixed":
            (w,) = warned
            assert w.startswith("Repeated measurements of the measured value at the same setting")
            assert "noise_variance = 1e-06" in w and "--option noise_variance=" in w
            assert st["noise"] == [w]
        else:
            assert warned == [] and st["settings"]["noise_check"] == {}


# -- one answer that makes most of the scatter (session 18: a slip read as noise) -------------
#: the trial's dose-finding space: f and g named, with units
DOSE = {
    "parameters": [
        {"name": "dose", "low": 0.0, "high": 40.0, "grid": 11, "unit": "mg"},
        {"name": "timing", "low": 0.0, "high": 24.0, "grid": 9, "unit": "h"},
    ],
    "monotone": "dose",
    "h": 0.6,
    "measurement": {"f": {"name": "efficacy", "unit": "%"}, "g": {"name": "toxicity", "unit": "AU"}},
}


def _slip_among_repeats(url: str, before: int, after: int, slip: float = 0.5, noise=None):
    """A safe study whose first query's setting was measured ``before`` times (toxicity 0.05,
    or 0.05 plus ``noise``), then answered with toxicity ``slip``, then measured ``after``
    times more; returns the study and the query."""
    study = create_study("dose", "m-safeopt", DOSE, storage=url, seed=0)
    q = study.ask()
    noise = iter(noise if noise is not None else [0.0] * (before + after))
    for _ in range(before):
        study.add(q.params, {"f": 20.0, "g": round(0.05 + next(noise), 4)})
    study.tell(q, {"f": 20.0, "g": slip})
    for _ in range(after):
        study.add(q.params, {"f": 20.0, "g": round(0.05 + next(noise), 4)})
    return study, q


def test_the_warning_names_one_answer_that_makes_the_scatter_and_says_to_check_it(tmp_path):
    """(Session 18.) Eighteen readings of 0.05 at one setting and one of 0.5: the warning read
    the slip as noise and advised a new study with noise_g = 0.02, carrying the slip. It names
    the answer (query, setting, value) and says to check and undo it first."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study, q = _slip_among_repeats(url, before=9, after=8)
    st = study.status()
    (warning,) = st["noise"]
    where = f"dose={q.params['dose']:g} mg, timing={q.params['timing']:g} h"
    assert (
        f"One answer makes 100% of that scatter: query {q.id}, where the toxicity read 0.5 AU "
        f"at {where} and the 17 other measurements there all read 0.05 AU; without it the "
        "other repeats scatter no more than noise_g allows." in warning
    )
    assert "Check that answer before you change the noise" in warning
    undo = f"boloop study undo dose --storage {url}"
    assert f"{undo} withdraws the last answer first, so undoing it withdraws the 8 answers" in warning
    assert "A larger noise_g would carry the mistake into a new study as noise." in warning
    # the noise is advised only for an answer that is right
    assert "If that answer is right, the model trusts each measurement of the toxicity" in warning
    assert warning.index("Check that answer") < warning.index("--option noise_g=")
    assert st["noise_outliers"] == {
        "g": {
            "query_id": q.id,
            "params": q.params,
            "value": 0.5,
            "share": 1.0,
            "others": [0.05] * 17,
            "fits_without": True,
            "after": 8,
        }
    }


def test_the_last_answer_is_undone_and_the_warning_goes(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study, q = _slip_among_repeats(url, before=17, after=0)
    (warning,) = study.status()["noise"]
    assert f"it is the last answer: undo it (boloop study undo dose --storage {url})" in warning
    assert study.undo()["query_id"] == q.id
    st = study.status()
    assert st["noise"] == [] and st["noise_outliers"] == {}


def test_a_slip_among_noisy_repeats_is_named_and_the_noise_advised_either_way(tmp_path):
    """Repeats that scatter more than noise_g allows (sd 0.01 against 0.003) and one slip of
    ten times: the slip is named; without it the repeats still contradict noise_g."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    noise = 0.01 * np.random.default_rng(1).standard_normal(17)
    study, q = _slip_among_repeats(url, before=9, after=8, noise=noise)
    st = study.status()
    (warning,) = st["noise"]
    assert f"One answer makes 99% of that scatter: query {q.id}" in warning
    assert "and the 17 other measurements there read 0.0" in warning
    assert "without it the other repeats still scatter more than noise_g allows" in warning
    assert "Either way the model trusts each measurement of the toxicity too much" in warning
    assert st["noise_outliers"]["g"]["fits_without"] is False


def test_no_answer_is_named_where_the_scatter_is_noise(tmp_path):
    """Five repeats that scatter (0.02 to 0.25): one of them makes the largest share, but no
    more than chance among five; the warning is the noise's alone."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = _dose_study(url)
    q = study.ask()
    study.tell(q, {"f": 1.0, "g": 0.10})
    for g in (0.25, 0.02, 0.18, 0.05):
        study.add(q.params, {"f": 1.0, "g": g})
    st = study.status()
    (warning,) = st["noise"]
    assert "One answer" not in warning and st["noise_outliers"] == {}
    assert "The model trusts each measurement of g too much" in warning


def test_the_page_names_the_answer_in_its_plain_notice(tmp_path):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    _, q = _slip_among_repeats(url, before=9, after=8)
    page = TestClient(create_app(url), follow_redirects=False).get("/studies/dose").text
    notice = page.split('id="study-noise"', 1)[1].split("<details", 1)[0]
    where = f"dose={q.params['dose']:g} mg, timing={q.params['timing']:g} h"
    assert (
        f"One answer makes most of it: query {q.id}, toxicity 0.5 AU at {where}, where the 17 "
        "other measurements all read 0.05 AU. Check that answer first" in notice
    )
    details = page.split('id="noise-details"', 1)[1].split("</details>", 1)[0]
    assert "boloop study undo dose" in details and "If that answer is right" in details


def test_a_level_set_with_a_fixed_noise_names_the_answer_too(tmp_path):
    """The level-set family's fixed noise_variance is checked alike (its one measured value)."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    space = {"parameters": [{"name": "T", "low": 0.0, "high": 1.0, "grid": 11}], "threshold": 0.5}
    study = create_study(
        "map", "randomized-straddle", space, storage=url, seed=0, fit_hyperparameters=False
    )
    q = study.ask()
    study.tell(q, 4.7)
    for _ in range(5):
        study.add(q.params, 0.47)
    st = study.status()
    (warning,) = st["noise"]
    assert (
        f"One answer makes 100% of that scatter: query {q.id}, where the measured value read 4.7 "
        f"at T={q.params['T']:g} and the 5 other measurements there all read 0.47" in warning
    )
    assert "undoing it withdraws the 5 answers given after it too" in warning
    assert st["noise_outliers"]["value"]["query_id"] == q.id


def test_gaussian_repeats_name_an_answer_about_once_in_a_thousand():
    """(boloop.study.scatter) Repeats with Gaussian noise alone name an answer at about the
    test's 1 in 1,000 (5 repeats at one setting, 18 at one, 3 x 5 settings: 4,000 sets each);
    one reading ten times the others among equal ones is named."""
    from boloop.gp.repeats import ALPHA
    from boloop.study.scatter import one_answer_scatter

    def rows(y, settings):
        return [
            {"kind": "evaluate", "answer": {"g": float(v)}, "params": {"x": float(s)}}
            for v, s in zip(y, settings, strict=True)
        ]

    rng = np.random.default_rng(0)
    n = 4000
    for settings in (np.zeros(5), np.zeros(18), np.repeat(np.arange(5.0), 3)):
        named = sum(
            one_answer_scatter(rows(rng.normal(size=settings.size), settings), "g", 1e-6)
            is not None
            for _ in range(n)
        )
        assert named <= 3 * ALPHA * n, (settings.size, named)  # expected about ALPHA * n = 4
    one = one_answer_scatter(rows([0.05] * 17 + [0.5], np.zeros(18)), "g", 1e-5)
    assert one is not None and one.value == 0.5 and one.share == 1.0 and one.fits_without
