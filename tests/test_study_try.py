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


@pytest.fixture()
def stuck(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("dose", "m-safeopt", DOSE, storage=url, seed=3)
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
    assert floor["options"] == {"min_lengthscale_g": 0.3}
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
    assert found["options"] == {"min_lengthscale_g": 0.3} and found["answers"] == 10
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
    assert "trend_g=false" in stuck_text


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
