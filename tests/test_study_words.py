"""What a study says to the person measuring (session 13's web trial): the measured quantity
and the study's description, a decimal comma, no recommendation before the first answer, a
continued study, what follows a g above the limit."""

from __future__ import annotations

import json

import numpy as np
import pytest

from boloop.algorithms.registry import FAMILY_DEFAULTS
from boloop.errors import AnswerTypeError, InvalidInputError
from boloop.study import create_study, list_studies, load_study
from boloop.study.answers import parse_answer, parse_measurement
from cli_runner import run_cli
from study_samples import make_study, reactor_space, reactor_truth

COATING = {
    "description": "Vickers hardness of the coated coupon, 3 indents averaged",
    "threshold": 650.0,
    "measurement": {"name": "hardness", "unit": "HV"},
    "parameters": [
        {"name": "temperature", "low": 150.0, "high": 250.0, "grid": 21, "unit": "°C"},
        {"name": "speed", "low": 10.0, "high": 50.0, "grid": 9, "unit": "mm/s"},
    ],
}
DOSE = {
    "description": "Dose finding",
    "monotone": "dose",
    "h": 1.5,
    "measurement": {"f": {"name": "efficacy", "unit": "%"}, "g": {"name": "side effect"}},
    "parameters": [
        {"name": "dose", "low": 0.0, "high": 100.0, "grid": 11, "unit": "mg"},
        {"name": "timing", "low": 0.0, "high": 24.0, "grid": 5, "unit": "h"},
    ],
}

#: the same spaces without the keys of finding 1 (what older studies have)
PLAIN_COATING = {k: v for k, v in COATING.items() if k not in ("measurement", "description")}
PLAIN_DOSE = {k: v for k, v in DOSE.items() if k not in ("measurement", "description")}


# -- 1. what to measure --------------------------------------------------------------------------
def test_the_prompt_names_the_quantity_and_the_status_the_description():
    coat = create_study("coat", "lse", COATING, storage="memory://w1", seed=0)
    q = coat.ask()
    assert q.prompt().startswith(f"query {q.id}: measure the hardness (HV) at temperature=")
    assert coat.status()["description"] == COATING["description"]
    dose = create_study("dose", "m-safeopt", DOSE, storage="memory://w1", seed=0)
    assert "measure efficacy (f, %) and side effect (g) at dose=" in dose.ask().prompt()
    # answers are stored under the outputs' own names, as before
    q = dose.ask()
    dose.tell(q.id, "f=1.0,g=0.2")
    assert dose.history()[-1]["answer"] == {"f": 1.0, "g": 0.2}


def test_a_study_without_the_keys_says_what_it_said():
    dose = create_study("dose", "m-safeopt", PLAIN_DOSE, storage="memory://w2", seed=0)
    q = dose.ask()
    assert (
        q.prompt()
        == f"query {q.id}: measure the values f, g at dose=0 mg, timing={q.params['timing']:g} h"
    )  # (its parameters keep their units: the question writes them after the values)
    assert dose.status()["description"] is None


@pytest.mark.parametrize(
    ("method", "space", "word"),
    [
        # one measured value: tables per output are refused, and the other way round
        ("lse", {**COATING, "measurement": {"f": {"name": "x"}}}, "measures one value"),
        ("m-safeopt", {**DOSE, "measurement": {"name": "efficacy"}}, "[measurement.f]"),
        ("m-safeopt", {**DOSE, "measurement": {"h": {"name": "x"}}}, "does not measure"),
        ("lse", {**COATING, "measurement": {"name": "x", "colour": "red"}}, "keys ['colour']"),
        ("lse", {**COATING, "measurement": {"name": "x", "g": {"name": "y"}}}, "mixes"),
    ],
)
def test_a_measurement_that_does_not_fit_the_method_is_refused(method, space, word):
    with pytest.raises(InvalidInputError) as err:
        create_study("x", method, space, storage="memory://w3", seed=0)
    assert word in str(err.value)


def test_the_cli_ask_says_the_quantity_threshold_and_limit(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    create_study("coat", "lse", COATING, storage=url, seed=0)
    create_study("dose", "m-safeopt", DOSE, storage=url, seed=0)
    out = run_cli(["study", "ask", "coat", "--storage", url], cwd=tmp_path).stdout
    assert out.startswith(COATING["description"] + "\n")
    assert "measure the hardness (HV) at" in out
    assert "Is the hardness above 650 HV here?" in out
    out = run_cli(["study", "ask", "dose", "--storage", url], cwd=tmp_path).stdout
    assert "efficacy (f, %): higher is better; side effect (g): must stay at most 1.5" in out
    out = run_cli(["study", "status", "coat", "--storage", url], cwd=tmp_path).stdout
    assert f"description:    {COATING['description']}" in out


def test_the_cli_question_gives_each_setting_its_unit(tmp_path):
    """(A newcomer's trial.) ``boloop study ask`` and ``run`` printed ``temperature=150``
    where the page shows ``150 °C``: the question now writes each value with the unit the
    space file gives it, and a study without units is asked as before."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    create_study("coat", "lse", COATING, storage=url, seed=0)
    unitless = [{k: v for k, v in p.items() if k != "unit"} for p in COATING["parameters"]]
    create_study("plain", "lse", {**COATING, "parameters": unitless}, storage=url, seed=0)
    dose = create_study("dose", "m-safeopt", DOSE, storage=url, seed=0)
    asked = run_cli(["study", "ask", "coat", "--storage", url], cwd=tmp_path).stdout
    q = load_study("coat", storage=url).ask()  # the open query, as the command asked it
    t, v = q.params["temperature"], q.params["speed"]
    assert f"measure the hardness (HV) at temperature={t:g} °C, speed={v:g} mm/s\n" in asked
    ran = run_cli(["study", "run", "coat", "--storage", url], cwd=tmp_path, stdin="q\n").stdout
    assert f"at temperature={t:g} °C, speed={v:g} mm/s\n" in ran
    plain = run_cli(["study", "ask", "plain", "--storage", url], cwd=tmp_path).stdout
    q = load_study("plain", storage=url).ask()
    t, v = q.params["temperature"], q.params["speed"]
    assert f"query {q.id}: measure the hardness (HV) at temperature={t:g}, speed={v:g}\n" in plain
    # the JSON of a query is as it was: values without units
    out = run_cli(["study", "ask", "dose", "--json", "--storage", url], cwd=tmp_path).stdout
    assert json.loads(out)["params"] == dose.ask().params
    assert "unit" not in out
    assert dose.units() == {"dose": "mg", "timing": "h"}


def _hardness(p: dict[str, float]) -> float:
    """A made-up hardness of the coating, above 650 HV at high temperature and speed."""
    return 400 + 2 * (p["temperature"] - 150) + 3 * p["speed"]


def test_status_progress_add_and_the_page_history_give_each_setting_its_unit(tmp_path):
    """The question and the pictures wrote ``temperature=150 °C``; ``boloop study status`` (its
    last answers and the recommendation), ``run``'s progress line and its ``r`` key, ``add``'s
    confirmation and the page's history wrote ``temperature=150``: each now writes a value with
    its unit, and a study without units reads as before (no unit anywhere)."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from boloop.web import create_app

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    unitless = [{k: v for k, v in p.items() if k != "unit"} for p in COATING["parameters"]]
    coat = create_study("coat", "lse", COATING, storage=url, seed=0)
    plain = create_study("plain", "lse", {**COATING, "parameters": unitless}, storage=url, seed=0)
    for study in (coat, plain):
        for _ in range(6):
            q = study.ask()
            study.tell(q.id, _hardness(q.params))
    cli = {}
    for name, units in (("coat", (" °C", " mm/s")), ("plain", ("", ""))):
        study = load_study(name, storage=url)
        out = run_cli(["study", "status", name, "--last", "3", "--storage", url], cwd=tmp_path)
        cli[name] = out.stdout
        for r in study.history()[-3:]:
            t, v = r["params"]["temperature"], r["params"]["speed"]
            row = f"query {r['query_id']} [evaluation] temperature={t:g}{units[0]}, speed={v:g}"
            assert f"    {row}{units[1]} -> {r['answer_text']}  (" in out.stdout
        upper = study.status()["recommendation"]["upper"]
        assert len(upper) > 3
        ts, vs = [p["temperature"] for p in upper], [p["speed"] for p in upper]
        first = upper[0]
        assert (
            f"bounding box temperature in [{min(ts):g}, {max(ts):g}]{units[0]}, speed in "
            f"[{min(vs):g}, {max(vs):g}]{units[1]}; first 3: (temperature="
            f"{first['temperature']:g}{units[0]}, speed={first['speed']:g}{units[1]}); "
        ) in out.stdout
        add = ["study", "add", name, "temperature=200,speed=30", "600", "--storage", url]
        added = run_cli(add, cwd=tmp_path).stdout
        assert added == (
            f"stored measurement at temperature=200{units[0]}, speed=30{units[1]} (7 answers)\n"
        )
        page = TestClient(create_app(url, None)).get(f"/studies/{name}").text
        history = page.split('id="history"', 1)[1]
        for r in study.history():  # the page's history, newest first
            t, v = r["params"]["temperature"], r["params"]["speed"]
            where = f"temperature={t:g}{units[0]}, speed={v:g}{units[1]}"
            assert f'<td class="point">{where}</td>' in history
    assert "°C" not in cli["plain"] and "mm/s" not in cli["plain"]
    # the safe family's recommended point, in status, the run's progress line and its r key
    dose = create_study("dose", "m-safeopt", DOSE, storage=url, seed=0)
    for _ in range(4):
        q = dose.ask()
        dose.tell(q.id, {"f": q.params["dose"] / 10, "g": q.params["dose"] / 100})
    rec = dose.status()["recommendation"]["point"]
    said = f"point: dose={rec['dose']:g} mg, timing={rec['timing']:g} h"
    out = run_cli(["study", "status", "dose", "--storage", url], cwd=tmp_path).stdout
    assert f"\n    {said}\n" in out
    ran = run_cli(
        ["study", "run", "dose", "--storage", url], cwd=tmp_path, stdin="f=0.1,g=0.01\nr\nq\n"
    ).stdout
    rec = load_study("dose", storage=url).status()["recommendation"]["point"]
    said = f"point: dose={rec['dose']:g} mg, timing={rec['timing']:g} h"
    assert f"; best: {said}\n" in ran and f"\n  {said}\n" in ran
    # the JSON of a status is as it was: values without units
    as_json = ["study", "status", "dose", "--json", "--storage", url]
    js = json.loads(run_cli(as_json, cwd=tmp_path).stdout)
    assert js["recommendation"]["point"] == rec and "units" not in js


# -- 2. a decimal comma --------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "value"), [("723,4", 723.4), ("0,05", 0.05), ("-1,5", -1.5),
                                             ("1234,5", 1234.5), ("0,234", 0.234),
                                             ("1,5e3", 1500.0), ("-2,5E-2", -0.025),
                                             ("\u22120,5", -0.5), ("\u22121.25", -1.25)])  # fmt: skip
def test_a_single_decimal_comma_is_read(text, value):
    assert parse_measurement(text) == value
    study = create_study("c", "lse", PLAIN_COATING, storage=f"memory://w4-{text}", seed=0)
    q = study.ask()
    study.tell(q.id, text)
    assert study.history()[-1]["answer"] == value


@pytest.mark.parametrize(("text", "word"), [("1,234", "ambiguous"), ("12,345", "ambiguous"),
                                            ("1,234,5", "thousands"), ("1.234,5", "thousands")])  # fmt: skip
def test_an_ambiguous_comma_is_refused_saying_why(text, word):
    with pytest.raises(AnswerTypeError) as err:
        parse_measurement(text)
    assert word in str(err.value) and "write" in str(err.value).lower()


def test_comma_separated_pairs_and_outputs_still_read():
    study = create_study("d", "m-safeopt", PLAIN_DOSE, storage="memory://w5", seed=0)
    q = study.ask().query
    assert parse_answer(q, "f=1.2,g=0.3") == {"f": 1.2, "g": 0.3}
    assert parse_answer(q, "1.2,0.3") == {"f": 1.2, "g": 0.3}
    assert parse_answer(q, "1.2, 0.3") == {"f": 1.2, "g": 0.3}
    # decimal commas: the pairs separated by ';', the two values by a space
    assert parse_answer(q, "f=1,2; g=0,3") == {"f": 1.2, "g": 0.3}
    assert parse_answer(q, "1,2 0,3") == {"f": 1.2, "g": 0.3}
    # digits after a comma that are no pair continue the value before (review: a single pair
    # "temperature=35,5" was refused)
    assert parse_answer(q, "f=1,2,g=0,3") == {"f": 1.2, "g": 0.3}
    assert parse_measurement("temperature=35,5") == {"temperature": 35.5}
    with pytest.raises(AnswerTypeError, match="ambiguous"):
        parse_measurement("temperature=1,234")
    # points typed as name=value pairs
    assert parse_measurement("temperature=35,ratio=0.4") == {"temperature": 35.0, "ratio": 0.4}
    assert parse_measurement("temperature=35,5; ratio=0,4") == {"temperature": 35.5, "ratio": 0.4}
    assert parse_measurement("a=1;b=2,c=3") == {"a": 1.0, "b": 2.0, "c": 3.0}  # as before


@pytest.mark.parametrize("text", ["0,5", "7,25", "1,234", "1,5e3", "-1,5"])
def test_one_comma_between_two_outputs_is_refused_not_split(text):
    """With f and g, ``0,5`` may be one number with a decimal comma or the two values 0 and 5:
    refused saying how to write either (review: it was stored as f=0, g=5), nothing stored."""
    study = create_study("d", "m-safeopt", PLAIN_DOSE, storage=f"memory://w5b-{text}", seed=0)
    q = study.ask()
    with pytest.raises(AnswerTypeError) as err:
        study.tell(q.id, text)
    assert "one number with a decimal comma or 2 values" in str(err.value)
    assert "f=0,5; g=1,2" in str(err.value)
    assert study.n_answered == 0


def test_cli_add_params_with_commas(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    create_study("coat", "lse", PLAIN_COATING, storage=url, seed=0)
    done = run_cli(
        ["study", "add", "coat", "temperature=200,speed=30", "700,5", "--storage", url],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    row = load_study("coat", storage=url).history()[-1]
    assert row["params"] == {"temperature": 200.0, "speed": 30.0} and row["answer"] == 700.5


# -- 3. no recommendation before the first answer --------------------------------------------------
@pytest.mark.parametrize("family", sorted(FAMILY_DEFAULTS))
def test_no_family_names_a_recommendation_before_its_first_answer(family, tmp_path):
    key = {"levelset": "lev1", "preference": "pref"}.get(family, family)
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = make_study("s", url, key=key, fast=True)
    assert study.status()["recommendation"] is None
    assert study.recommend() is None  # the same in Python (review: it named the lowest point)
    out = run_cli(["study", "status", "s", "--storage", url], cwd=tmp_path).stdout
    rec = out.split("recommendation:", 1)[1].splitlines()
    assert rec[1].strip() == "none yet", out


def test_the_safe_model_picture_draws_no_star_before_the_first_answer():
    from boloop.study.pictures import model_svg

    study = create_study("d", "m-safeopt", PLAIN_DOSE, storage="memory://w6", seed=0)
    assert "recommendation" not in model_svg(study)
    q = study.ask()
    study.tell(q.id, {"f": 1.0, "g": 0.1})
    assert "recommendation" in model_svg(study)


# -- 4. a continued study ------------------------------------------------------------------------
def _stuck_reactor(url: str):
    study = create_study("reactor", "m-safeopt", reactor_space(20, 8), seed=0, storage=url)
    rng = np.random.default_rng(0)
    for _ in range(30):
        q = study.ask()
        t = reactor_truth(float(q.params["power"]), float(q.params["flow"]))
        study.tell(q.id, {"f": t["f"] + 0.01 * rng.normal(), "g": t["g"] + 0.3 * rng.normal()})
    return study


def test_a_continued_study_says_so_and_suggests_no_other_continuation(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    old = _stuck_reactor(url)
    assert "--from reactor" in old.status()["stuck"]
    n_events = len(old.events())
    create_study("reactor-2", from_study="reactor", storage=url, min_lengthscale_g=0.3)
    old = load_study("reactor", storage=url)
    assert len(old.events()) == n_events  # the old log is not written to
    st = old.status()
    assert st["continued_as"] == ["reactor-2"]
    assert "continued as 'reactor-2'" in st["stuck"] and "--from" not in st["stuck"]
    assert load_study("reactor-2", storage=url).status()["continued_as"] == []
    rows = {r["name"]: r for r in list_studies(url)}
    assert rows["reactor"]["continued_as"] == ["reactor-2"]
    assert rows["reactor-2"]["continued_as"] == []
    out = run_cli(["study", "status", "reactor", "--storage", url], cwd=tmp_path).stdout
    assert "continued as:   'reactor-2'" in out
    out = run_cli(["study", "list", "--storage", url], cwd=tmp_path).stdout
    assert "continued as reactor-2" in out.splitlines()[0]


# -- 5. after a g above the limit ----------------------------------------------------------------
def test_after_a_g_above_the_limit_the_status_says_what_comes_next():
    from boloop.problems import get
    from boloop.simulate import oracle_rng

    toy, rng = get("safe/toy"), oracle_rng(0)
    study = create_study(
        "t", "m-safeopt", problem="safe/toy", storage="memory://w7", seed=0,
        fit_hyperparameters=False,
    )  # fmt: skip
    assert study.status()["over_limit_next"] is None
    settings = study.problem.settings
    s0, h = float(study.space.s_values[0]), float(settings.get("h", settings["threshold"]))
    for _ in range(60):  # past the starts at the lowest level
        q = study.ask()
        ans = dict(toy.answer(q.query, rng))
        if float(q.query.x[0]) > s0:
            ans["g"] = h + 1.0
            study.tell(q.id, ans)
            break
        study.tell(q.id, ans)
    assert ans["g"] > h, "no query above the lowest level in 60 answers"
    st = study.status()
    mono, other = study.names[0], ", ".join(study.names[1:])
    assert st["warnings"]
    assert f"nor a higher {mono} with the same {other}" in st["over_limit_next"]
    assert "check that value" in st["over_limit_next"]
    # what the page says holds: the next query is neither that setting nor above it
    nxt = np.asarray(study.ask().query.x)
    x = np.asarray(q.query.x)
    assert not (np.array_equal(nxt[1:], x[1:]) and nxt[0] >= x[0])


def test_a_g_above_the_limit_and_the_open_query_name_their_setting_with_its_units():
    """The alarm of a g above the limit (status's warnings, ``tell``'s WARNING, the page) and
    the refusal of an ``add`` while a query is open name a setting: with its units, as the
    question does (``dose=0 mg, timing=18 h``); without them where the space gives none."""
    from boloop.errors import QueryStateError

    def bare(space: dict) -> dict:
        return {**space, "parameters": [{k: v for k, v in p.items() if k != "unit"}
                                        for p in space["parameters"]]}  # fmt: skip

    for space, mg, h in ((DOSE, " mg", " h"), (bare(DOSE), "", "")):
        study = create_study("dose", "m-safeopt", space, storage=f"memory://w9{mg}", seed=0)
        q = study.ask()
        study.tell(q.id, {"f": 0.1, "g": 2.0})
        where = f"dose=0{mg}, timing={q.params['timing']:g}{h}"
        (alarm,) = study.over_limit_alarms()
        g = "side effect (g)"  # as the space names it
        assert alarm.startswith(f"query {q.id}: measured {g} = 2 above the limit h = 1.5 at {where}, ")
        assert alarm in study.status()["warnings"]
    for space, c, mms in ((COATING, " °C", " mm/s"), (bare(COATING), "", "")):
        study = create_study("coat", "lse", space, storage=f"memory://w10{c}", seed=0)
        q = study.ask()
        where = f"temperature={q.params['temperature']:g}{c}, speed={q.params['speed']:g}{mms}"
        with pytest.raises(QueryStateError, match=f"open query {q.id} \\(evaluate at {where}\\)"):
            study.add({"temperature": 150, "speed": 10}, 500)


#: the space keys a boloop from before [measurement] reads (it refuses any other)
_SPACE_KEYS_BEFORE = {"format", "family", "parameters", "candidates", "threshold", "monotone", "h",
                      "safe_seeds", "settings", "description"}  # fmt: skip


def test_the_measurement_is_stored_beside_the_space_and_carried_to_a_continuation(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    dose = create_study("dose", "m-safeopt", DOSE, storage=url, seed=0)
    # an older boloop reads the stored space: only keys it knows
    assert set(dose.config["space"]) <= _SPACE_KEYS_BEFORE
    assert dose.config["measurement"] == DOSE["measurement"]
    q = dose.ask()
    dose.tell(q.id, {"f": 1.0, "g": 0.1})
    new = create_study("dose-2", from_study="dose", storage=url)
    assert [m.label() for m in new.measured()] == ["efficacy (f, %)", "side effect (g)"]
    assert set(new.config["space"]) <= _SPACE_KEYS_BEFORE
