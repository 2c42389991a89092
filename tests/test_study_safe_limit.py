"""The safe family's limit as the user names it (trial of a lab engineer, 2026-11-27).

The space says ``h = 1``; ``status()["settings"]`` called it ``threshold``; a ``[settings]
threshold = 5`` beside ``h = 1`` was accepted and silently dropped; and a measurement the user
added above the limit was reported as "query -1: ... the model had certified it".
"""

from __future__ import annotations

import html
import json
import math
import re
import uuid

import pytest

from boloop.errors import InvalidInputError
from boloop.study import create_study, list_studies
from cli_runner import assert_refused, run_cli

PARAMS = [
    {"name": "dose", "low": 0.0, "high": 10.0, "grid": 21},
    {"name": "time", "low": 1.0, "high": 8.0, "grid": 15},
]
DOSE = {"monotone": "dose", "h": 1.0, "parameters": PARAMS}


def _memory() -> str:
    return f"memory://safe-limit-{uuid.uuid4().hex}"


def test_the_settings_name_the_limit_h_in_the_api_and_the_cli(tmp_path):
    study = create_study("dose", "m-safeopt", DOSE, storage=f"sqlite:///{tmp_path / 'lab.db'}")
    settings = study.status()["settings"]
    assert settings["h"] == 1.0 and "threshold" not in settings
    out = run_cli(["study", "status", "dose", "--storage", study.storage_url], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = [ln.split() for ln in out.stdout.splitlines()]
    assert ["h", "1"] in lines
    assert not any(ln and ln[0] == "threshold" for ln in lines)


@pytest.mark.parametrize(
    "given",
    [
        {"space": {**DOSE, "settings": {"threshold": 5.0}}, "options": {}},
        {"space": DOSE, "options": {"threshold": 5.0}},
    ],
    ids=["settings", "option"],
)
def test_a_threshold_other_than_h_is_refused_naming_h(given):
    url = _memory()
    with pytest.raises(InvalidInputError) as err:
        create_study("a8", "m-safeopt", given["space"], storage=url, **given["options"])
    msg = str(err.value)
    assert "h = 1" in msg and "threshold = 5" in msg
    assert list_studies(storage=url) == []  # nothing stored


def test_a_threshold_that_is_not_a_number_is_refused_even_if_it_reads_as_h():
    url = _memory()
    with pytest.raises(InvalidInputError, match="safety limit is h = 1, but"):
        create_study("a8", "m-safeopt", {**DOSE, "settings": {"threshold": "1"}}, storage=url)
    assert list_studies(storage=url) == []


def test_a_threshold_equal_to_h_is_taken():
    space = {**DOSE, "settings": {"threshold": 1.0}}
    study = create_study("a8", "m-safeopt", space, storage=_memory())
    assert study.status()["settings"]["h"] == 1.0


def test_a_conflicting_threshold_in_a_space_file_is_refused_on_the_command_line(tmp_path):
    (tmp_path / "dose.toml").write_text(
        'monotone = "dose"\nh = 1\n[settings]\nthreshold = 5\n'
        '[[parameters]]\nname = "dose"\nlow = 0\nhigh = 10\ngrid = 21\n'
        '[[parameters]]\nname = "time"\nlow = 1\nhigh = 8\ngrid = 15\n'
    )
    res = run_cli(["study", "create", "a8", "--space", "dose.toml"], cwd=tmp_path)
    assert_refused(res, "h = 1", "threshold = 5")
    listed = run_cli(["study", "list", "--json"], cwd=tmp_path)
    assert listed.returncode == 0 and json.loads(listed.stdout) == []


def test_the_alarm_names_g_as_the_space_file_does():
    """A space that names g (``[measurement.g] name = "toxicity", unit = "AU"``): the alarm of
    a value over the limit says "toxicity (g, AU) = 5", as the page's dialog does; unnamed, "g"."""
    named = {**DOSE, "measurement": {"g": {"name": "toxicity", "unit": "AU"}}}
    study = create_study("dose", "m-safeopt", named, storage=_memory(), seed=0)
    study.add({"dose": 10, "time": 1}, {"f": 0.1, "g": 5.0})
    (alarm,) = study.status()["warnings"]
    assert alarm.startswith("your measurement at dose=10, time=1: toxicity (g, AU) = 5 is above")
    q = study.ask()
    study.tell(q.id, {"f": 0.1, "g": 1.5})
    assert study.status()["warnings"][1].startswith(
        f"query {q.id}: measured toxicity (g, AU) = 1.5 above the limit h = 1 at "
    )


def test_an_added_measurement_over_the_limit_is_the_users_not_the_models(tmp_path):
    """The warning names the measurement as the user's, with its parameters, in the status and
    on the command line; an answer to a query over the limit still says the model had certified
    it."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("dose", "m-safeopt", DOSE, storage=url, seed=0)
    study.add({"dose": 10, "time": 1}, {"f": 0.1, "g": 5.0})
    warnings = study.status()["warnings"]
    assert warnings == [
        "your measurement at dose=10, time=1: g = 5 is above the limit h = 1; the model now "
        "takes it into account and no longer certifies that setting or higher ones"
    ]
    out = run_cli(["study", "status", "dose", "--storage", url], cwd=tmp_path).stdout
    assert f"WARNING: {warnings[0]}" in out and "query -1" not in out
    q = study.ask()
    assert q.params["dose"] == 0  # a starting point: the lowest dose, assumed safe
    study.tell(q.id, {"f": 0.1, "g": 1.5})
    warnings = study.status()["warnings"]
    assert len(warnings) == 2 and warnings[1].startswith(f"query {q.id}: measured g = 1.5")
    assert "the lowest dose, which the safe methods assume safe" in warnings[1]
    assert "certif" not in warnings[1]  # the model certified nothing there: it assumed it
    fresh = create_study("dose2", "m-safeopt", DOSE, storage=url, seed=0)
    for _ in range(40):  # answers within the limit until the method proposes a higher dose
        q = fresh.ask()
        if q.params["dose"] > 0:
            break
        d, t = q.params["dose"], q.params["time"]  # g varies over time too, as a process does
        fresh.tell(q.id, {"f": 0.1 * d, "g": 0.02 * d**1.5 * (1 + 0.05 * t) + 0.2 * math.sin(t)})
    assert q.params["dose"] > 0
    fresh.tell(q.id, {"f": 0.1, "g": 1.5})  # a proposal over the limit: the model's
    warnings = fresh.status()["warnings"]
    assert len(warnings) == 1 and warnings[0].startswith(f"query {q.id}: measured g = 1.5")
    assert "the model had certified it" in warnings[0]


def test_tell_and_add_say_a_value_over_the_limit_when_it_is_stored(tmp_path):
    """The command line says it at once (before: only the next ``status`` did), once: a later
    answer within the limit prints no warning again."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    create_study("dose", "m-safeopt", DOSE, storage=url, seed=0)
    add = run_cli(["study", "add", "dose", "dose=10,time=1", "f=0.1,g=5", "--storage", url], cwd=tmp_path)
    assert add.returncode == 0, add.stderr
    assert add.stdout.splitlines()[1:] == [
        "WARNING: your measurement at dose=10, time=1: g = 5 is above the limit h = 1; the model "
        "now takes it into account and no longer certifies that setting or higher ones"
    ]
    run_cli(["study", "ask", "dose", "--storage", url], cwd=tmp_path)
    over = run_cli(["study", "tell", "dose", "0", "f=0.1,g=1.5", "--storage", url], cwd=tmp_path).stdout
    assert [ln for ln in over.splitlines() if ln.startswith("WARNING")] == [
        ln for ln in over.splitlines()[1:]
    ]
    assert over.splitlines()[1].startswith("WARNING: query 0: measured g = 1.5 above the limit")
    assert "the lowest dose" in over  # query 0 is a starting point at dose 0
    run_cli(["study", "ask", "dose", "--storage", url], cwd=tmp_path)
    within = run_cli(["study", "tell", "dose", "1", "f=0.1,g=0.2", "--storage", url], cwd=tmp_path).stdout
    assert "WARNING" not in within and within.startswith("stored: query 1")


def test_the_page_shows_the_same_words(tmp_path):
    """The study page lists the status's warnings: an added measurement above the limit is the
    user's there too, in the words of the status and the CLI."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    url = f"sqlite:///{tmp_path / 'web.db'}"
    study = create_study("dose", "m-safeopt", DOSE, storage=url, seed=0)
    study.add({"dose": 10, "time": 1}, {"f": 0.1, "g": 5.0})
    (warning,) = study.status()["warnings"]
    page = TestClient(create_app(url, None)).get("/studies/dose")
    assert page.status_code == 200, page.text
    text = html.unescape(re.sub(r"\s+", " ", page.text))
    assert warning in text and "query -1" not in text
