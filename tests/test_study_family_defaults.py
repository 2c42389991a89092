"""A study that names no method runs its family's default, and a space file's own keys say the
family (``threshold``: level set; ``monotone`` and ``h``: safe) when the file names none."""

from __future__ import annotations

import pytest

from boloop.algorithms.registry import FAMILY_DEFAULTS, default_method
from boloop.errors import InvalidInputError
from boloop.study.core import create_study, list_studies

COATING = {
    "threshold": 0.5,
    "parameters": [
        {"name": "temperature", "low": 20.0, "high": 80.0, "grid": 7},
        {"name": "ratio", "low": 0.0, "high": 1.0, "grid": 5},
    ],
}
TRIAL = {
    "monotone": "dose",
    "h": 0.9,
    "parameters": [
        {"name": "dose", "low": 0.0, "high": 1.0, "grid": 8},
        {"name": "timing", "low": 0.0, "high": 24.0, "grid": 5},
    ],
}


def test_every_family_has_a_default_method_that_exists():
    from boloop.algorithms.registry import get_method

    assert set(FAMILY_DEFAULTS) == {"expert", "preference", "levelset", "safe"}
    for family, method in FAMILY_DEFAULTS.items():
        assert default_method(family) == method
        assert get_method(method, family=family).family == family


@pytest.mark.parametrize(
    ("space", "family", "method"),
    [(COATING, "levelset", "randomized-straddle"), (TRIAL, "safe", "m-safeopt")],
)
def test_a_space_files_keys_choose_the_default_method(tmp_path, space, family, method):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("mine", None, space, storage=url, seed=0)
    assert (study.method, study.family) == (method, family)
    q = study.ask()  # the default runs on the user's space
    assert q.kind == "evaluate"


def test_a_space_with_two_familys_keys_is_refused_naming_them_and_stores_nothing(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    both = dict(TRIAL, threshold=0.5)
    with pytest.raises(InvalidInputError) as info:
        create_study("mine", None, both, storage=url, seed=0)
    assert str(info.value).startswith(
        "the space has keys of two families ('threshold' of the levelset family; 'monotone', "
        "'h' of the safe family)"
    )
    assert not (tmp_path / "lab.db").exists() or list_studies(url) == []
