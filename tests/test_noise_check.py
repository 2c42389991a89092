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
