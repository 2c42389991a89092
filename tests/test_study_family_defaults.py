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


def test_a_toml_table_per_parameter_is_refused_showing_the_list_form(tmp_path):
    """``[parameters.temperature]`` (a natural guess) is a table of tables; the message shows the
    ``[[parameters]]`` form with the user's own first name, and nothing is stored."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    path = tmp_path / "coat.toml"
    path.write_text(
        "threshold = 0.8\n[parameters.temperature]\nlow = 150\nhigh = 250\n"
        "[parameters.speed]\nlow = 1\nhigh = 5\n"
    )
    with pytest.raises(InvalidInputError) as info:
        create_study("coat", None, str(path), storage=url, seed=0)
    msg = str(info.value)
    assert '[[parameters]] then name = "temperature"' in msg
    assert "['speed', 'temperature']" in msg
    assert not (tmp_path / "lab.db").exists() or list_studies(url) == []


def test_an_unknown_parameter_key_lists_the_valid_ones():
    from boloop.study.space_file import normalise_space

    doc = {"threshold": 0.8, "parameters": [{"name": "t", "low": 0, "high": 1, "points": 21}]}
    with pytest.raises(InvalidInputError) as info:
        normalise_space(doc)
    assert "unknown keys ['points']; valid: ['name', 'low', 'high', 'grid', 'unit']" in str(
        info.value
    )
