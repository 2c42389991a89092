"""``Study.try_options`` and ``boloop study try``: options tried on a study's answers with
nothing stored. The case is a lab trial's dose study (noise-free g read at dose 0, every
measurement at one dose level), where the stuck warning's suggested ``min_lengthscale_g`` does
not let the learned default certify more, and ``trend_g=false`` with a longer floor does: the
user finds out from the trial, not from ten more measurements."""

from __future__ import annotations

import json
import math

import pytest

from boloop.errors import BoloopError
from boloop.study import create_study, list_studies, load_study
from cli_runner import run_cli

DOSE = {
    "monotone": "dose",
    "h": 0.6,
    "parameters": [
        {"name": "dose", "low": 0.0, "high": 40.0, "grid": 11, "unit": "mg"},
        {"name": "timing", "low": 0.0, "high": 24.0, "grid": 9, "unit": "h"},
    ],
}


def _truth(dose: float, timing: float) -> dict[str, float]:
    f = 20 + 60 * (1 - math.exp(-dose / 15)) - ((timing - 12) / 12) ** 2 * 15
    g = 0.05 + 0.012 * dose * (1 + 0.3 * math.sin(timing / 24 * math.pi))
    return {"f": round(f, 1), "g": round(g, 3)}


#: the trial's study assumed L_f = L_g_prime = 1 per mg (the default before
#: ``missing_constants``): it repeats one timing and is stuck after 9 answers. With the
#: constants unknown (today's default) the same study measures dose 0 at every timing first and
#: is stuck from answer 12; these tests are about the stuck study, so they keep its answers.
BEFORE = {"missing_constants": 1.0}


@pytest.fixture()
def stuck(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("dose", "m-safeopt", DOSE, storage=url, seed=3, **BEFORE)
    for _ in range(10):
        q = study.ask()
        study.tell(q.id, _truth(q.params["dose"], q.params["timing"]))
    assert study.recommend()["boundary_s"] == [0.0] * 9  # certified: dose 0 only
    return study, url


def _events(study) -> list:
    return study.history(withdrawn=True)


def test_try_options_reports_what_a_continuation_would_do_and_stores_nothing(stuck):
    study, url = stuck
    before = (_events(study), [s["name"] for s in list_studies(url)])
    floor = study.try_options(min_lengthscale_g=0.3)
    assert floor["answers"] == study.n_answered == 10
    assert floor["options"] == {**BEFORE, "min_lengthscale_g": 0.3}  # the study's own and tried
    assert floor["recommendation"]["boundary_s"] == [0.0] * 9  # the floor alone: no further
    assert floor["now"] == study.recommend()
    both = study.try_options(trend_g=False, min_lengthscale_g=0.45)
    assert max(both["recommendation"]["boundary_s"]) > 0.0  # certifies a higher dose
    assert both["next_query"]["params"]["dose"] > 0.0
    assert both["continue_command"] == (
        f"boloop study create dose-continued --from dose --storage {url} "
        "--option trend_g=false --option min_lengthscale_g=0.45"
    )
    reloaded = load_study("dose", storage=url)
    after = (_events(reloaded), [s["name"] for s in list_studies(url)])
    assert after == before  # nothing stored, no study added


def test_a_bad_option_is_refused_and_stores_nothing(stuck):
    study, url = stuck
    names = [s["name"] for s in list_studies(url)]
    with pytest.raises(BoloopError, match="unknown option 'bogus'"):
        study.try_options(bogus=1)
    assert [s["name"] for s in list_studies(url)] == names


@pytest.mark.parametrize("key", ["seed", "storage", "problem", "from_study", "method"])
def test_the_studys_own_settings_are_no_options_to_try(stuck, tmp_path, key):
    """A trial keeps the study's seed, space and storage: create's own arguments given as
    options are refused with boloop's error (the CLI's one line, exit 2), nothing built."""
    study, url = stuck
    if key != "method":  # in Python, method= is try_options' own argument
        with pytest.raises(BoloopError, match=f"{key}: not a method option"):
            study.try_options(**{key: 5})
    res = run_cli(["study", "try", "dose", "--storage", url, "--option", f"{key}=5"], cwd=tmp_path)
    assert res.returncode == 2 and f"--option {key}=... is not a method option" in res.stderr
    assert "Traceback" not in res.stderr


def test_the_cli_prints_the_trial_beside_the_study_and_the_command(stuck, tmp_path):
    study, url = stuck
    res = run_cli(
        [
            "study", "try", "dose", "--storage", url,
            "--option", "trend_g=false", "--option", "min_lengthscale_g=0.45",
        ],
        cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "nothing was stored ('dose' is unchanged)" in out
    assert "answers carried: 10" in out
    assert "it would ask:    evaluation at dose=4 mg, timing=" in out
    own = out.split("the study's own now:")[1]
    assert "boundary_s: 9 values in [0, 0]" in own
    assert "boundary_s: 9 values in [0, 4]" in out.split("the study's own now:")[0]
    assert "to go on so:     boloop study create dose-continued --from dose" in out
    res = run_cli(
        ["study", "try", "dose", "--storage", url, "--option", "min_lengthscale_g=0.3", "--json"],
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    found = json.loads(res.stdout)
    assert found["options"] == {**BEFORE, "min_lengthscale_g": 0.3} and found["answers"] == 10
    res = run_cli(["study", "try", "dose", "--storage", url], cwd=tmp_path)
    assert res.returncode == 2 and "try needs what to try" in res.stderr


def test_the_stuck_warning_names_the_trial_command(stuck):
    study, url = stuck
    stuck_text = study.status()["stuck"]
    assert stuck_text is not None
    assert (
        f"storing nothing: boloop study try dose --storage {url} --option min_lengthscale_g=0.3"
        in stuck_text
    )
    assert f"boloop study try dose --storage {url} --find-floor finds the smallest" in stuck_text
    assert "trend_g=false" in stuck_text


def _certifies_more(found: dict, now: dict) -> bool:
    pairs = list(zip(found["recommendation"]["boundary_s"], now["boundary_s"], strict=True))
    return all(a >= b for a, b in pairs) and any(a > b for a, b in pairs)


def test_find_floor_finds_the_smallest_floor_that_certifies_more_and_stores_nothing(stuck):
    """The trial's study: no floor up to 1 lets g's learned trend certify more; without the
    trend 0.4 does and the grid's next value below (0.35) does not, each checked here by a
    trial of its own."""
    study, url = stuck
    before = (_events(study), [s["name"] for s in list_studies(url)])
    seen = []
    found = study.find_floor_g(progress=lambda o, more, rec: seen.append((dict(o), more)))
    assert found["axis"] == "dose" and found["answers"] == 10
    assert found["now"] == study.recommend()
    own, no_trend = found["models"]
    assert own["options"] == {} and own["floor"] is None and own["found"] is None
    assert not _certifies_more(study.try_options(min_lengthscale_g=1.0), found["now"])
    assert no_trend["options"] == {"trend_g": False}
    floor = no_trend["floor"]
    assert floor is not None and no_trend["found"]["certifies_more"]
    assert no_trend["found"]["options"] == {**BEFORE, "trend_g": False, "min_lengthscale_g": floor}
    assert _certifies_more(study.try_options(trend_g=False, min_lengthscale_g=floor), found["now"])
    below = round(floor - 0.05, 2)
    assert not _certifies_more(
        study.try_options(trend_g=False, min_lengthscale_g=below), found["now"]
    )
    assert max(no_trend["found"]["recommendation"]["boundary_s"]) > 0.0
    assert [(t["options"], t["certifies_more"]) for t in found["tried"]] == seen
    assert ({"trend_g": False, "min_lengthscale_g": floor}, True) in seen
    reloaded = load_study("dose", storage=url)
    assert (_events(reloaded), [s["name"] for s in list_studies(url)]) == before
    # the study asks what a fresh replay of its log asks: the search left its policy alone
    assert study.ask().to_dict() == load_study("dose", storage=url, full_replay=True).ask().to_dict()


def test_find_floor_reports_a_model_that_needs_no_floor(tmp_path):
    """g = 0.05 dose read without noise at dose 0 only: without the trend the next dose is
    certified with no floor at all; g's trend needs one, which the search finds."""
    space = {
        "monotone": "dose",
        "h": 1.0,
        "parameters": [
            {"name": "dose", "low": 0.0, "high": 10.0, "grid": 21},
            {"name": "time", "low": 1.0, "high": 8.0, "grid": 15},
        ],
    }
    study = create_study("d", "m-safeopt", space, storage=f"sqlite:///{tmp_path / 'd.db'}", seed=0)
    for _ in range(20):  # until the stuck warning (answer 16)
        q = study.ask()
        study.tell(q.id, {"f": 0.1 * q.params["dose"], "g": 0.05 * q.params["dose"]})
        if study.status()["stuck"]:
            break
    assert study.status()["stuck"] is not None
    found = study.find_floor_g()
    own, no_trend = found["models"]
    assert no_trend["floor"] is None and no_trend["found"]["certifies_more"]
    assert no_trend["found"]["options"] == {"trend_g": False}
    assert own["floor"] is not None and own["found"]["certifies_more"]
    below = round(own["floor"] - 0.05, 2)
    if below > 0:
        assert not _certifies_more(study.try_options(min_lengthscale_g=below), found["now"])


def test_find_floor_is_refused_where_it_does_not_apply(stuck, tmp_path):
    study, url = stuck
    levelset = create_study(
        "ls", "randomized-straddle", problem="levelset/toy", storage=url, seed=0
    )
    with pytest.raises(BoloopError, match="is for the safe family"):
        levelset.find_floor_g()
    fresh = create_study("fresh", "m-safeopt", DOSE, storage=url, seed=0)
    with pytest.raises(BoloopError, match="no answers yet"):
        fresh.find_floor_g()
    paper = create_study("paper", "m-safeopt", DOSE, storage=url, seed=0, hyperparameters="paper")
    q = paper.ask()
    paper.tell(q.id, _truth(q.params["dose"], q.params["timing"]))
    with pytest.raises(BoloopError, match="learned hyperparameters only"):
        paper.find_floor_g()
    res = run_cli(
        ["study", "try", "dose", "--storage", url, "--find-floor", "--option", "trend_g=false"],
        cwd=tmp_path,
    )
    assert res.returncode == 2 and "--find-floor tries min_lengthscale_g" in res.stderr


def test_the_cli_finds_the_floor_with_progress_and_units(stuck, tmp_path):
    study, url = stuck
    res = run_cli(["study", "try", "dose", "--storage", url, "--find-floor"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    found = study.find_floor_g()
    floor = found["models"][1]["floor"]
    out = res.stdout
    assert "study 'dose', 10 answers, certifies dose up to 0 mg now. Nothing was stored." in out
    assert "g's model as the study has it: no min_lengthscale_g up to 1 certifies more" in out
    lengths = f"({floor * 40:.3g} mg of dose, {floor * 24:.3g} h of timing)"
    assert (
        f"without g's trend along dose (trend_g=false), with min_lengthscale_g = {floor:g} "
        f"{lengths}: certifies dose up to 4 mg" in out
    )
    assert (
        f"to go on so: boloop study create dose-continued --from dose --storage {url} "
        f"--option trend_g=false --option min_lengthscale_g={floor:g}" in out
    )
    assert "A floor is an assumption about g" in out
    tried = [ln for ln in res.stderr.splitlines() if ln.startswith("  tried ")]
    assert len(tried) == len(found["tried"])
    assert tried[0].startswith("  tried min_lengthscale_g=1.0: certifies nothing more (")
    res = run_cli(["study", "try", "dose", "--storage", url, "--find-floor", "--json"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["models"][1]["floor"] == floor


def test_the_stuck_warning_writes_the_monotone_parameters_values_with_its_unit(stuck):
    """The method knows no units; the study writes the dose's values in the warning with the
    space file's unit, as the question does (a study without units: tests/test_safe_stall.py)."""
    study, _ = stuck
    text = study.status()["stuck"]
    stall = study.policy.stall()
    assert "(it certifies dose up to 0 mg)" in text
    assert f"over {stall['lengthscale_g']:.3g} mg in dose" in text
    assert "the grid step is 4 mg" in text
    assert stall["message"] in text.replace(" mg", "")  # the same words, the unit added


def _answered(url: str, name: str, answers: int, **options):
    study = create_study(name, "m-safeopt", DOSE, storage=url, seed=3, **BEFORE, **options)
    for _ in range(answers):
        q = study.ask()
        study.tell(q.id, _truth(q.params["dose"], q.params["timing"]))
    return study


def test_find_floor_refuses_a_study_that_is_not_stuck(tmp_path):
    """3 answers, no stuck warning: the study certifies more by measuring, which assumes
    nothing; the search offers no assumption (a reviewer was offered 0.75 with the command to
    go on with it)."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = _answered(url, "early", 3, min_lengthscale_g=0.5, trend_g=False)
    assert study.status()["stuck"] is None
    with pytest.raises(BoloopError, match="is not stuck"):
        study.find_floor_g()
    res = run_cli(["study", "try", "early", "--storage", url, "--find-floor"], cwd=tmp_path)
    assert res.returncode == 2 and "is not stuck" in res.stderr
    assert "to go on so" not in res.stdout


def test_find_floor_never_assumes_less_than_the_studys_own_floors(tmp_path):
    """A study that assumes floors of its own, one per parameter: every trial keeps each
    where it is larger than the value tried, and a trial with no value of its own is said to
    keep the study's, not to have no floor."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    own = [0.5, 0.2]
    study = _answered(url, "pa", 10, min_lengthscale_g=own)
    assert study.status()["stuck"] is not None
    found = study.find_floor_g()
    assert found["own_floor"] == own
    for trial in found["tried"]:
        floors = trial["options"].get("min_lengthscale_g")
        if floors is not None:
            assert all(f >= o for f, o in zip(floors, own, strict=True)), trial
    res = run_cli(["study", "try", "pa", "--storage", url, "--find-floor"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "its own min_lengthscale_g = 0.5, 0.2 (20 mg of dose, 4.8 h of timing)" in res.stdout
    assert "without a floor" not in res.stdout


def test_find_floor_says_the_study_was_continued_already(stuck, tmp_path):
    study, url = stuck
    create_study("dose-next", from_study="dose", storage=url, trend_g=False)
    res = run_cli(["study", "try", "dose", "--storage", url, "--find-floor"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "it was continued already as 'dose-next'" in res.stdout
