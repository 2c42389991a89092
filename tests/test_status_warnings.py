"""The status warnings of a safe study that is both stuck and measured with more noise than it
assumes (a newcomer team's trial: a dose study stuck at dose 0 whose efficacy scattered far
above noise_f): one continuation command for both, and a stuck count of answers that does not
depend on whether a query is open."""

from __future__ import annotations

import numpy as np
import pytest

from boloop.study import create_study, load_study

#: the trial's space file (dose.toml): dose 0-40 mg (monotone, 9 levels) by timing 0-24 h
DOSE = {
    "description": "Dose-finding: efficacy vs side effect",
    "monotone": "dose",
    "h": 1.5,
    "measurement": {"f": {"name": "efficacy", "unit": "%"}, "g": {"name": "side effect"}},
    "parameters": [
        {"name": "dose", "low": 0.0, "high": 40.0, "grid": 9, "unit": "mg"},
        {"name": "timing", "low": 0.0, "high": 24.0, "grid": 7, "unit": "h"},
    ],
}


def _answer(study, n: int, rng: np.random.Generator) -> None:
    """Made-up answers: efficacy peaked at timing 12 with a noise of sd 0.3 (noise_f's default
    assumes 0.003), side effect 0.1 + 0.03 dose (far below h at the lowest dose)."""
    for _ in range(n):
        q = study.ask()
        d, t = q.params["dose"], q.params["timing"]
        f = 50 + d - (t - 12) ** 2 / 10 + 0.3 * rng.normal()
        study.tell(q.id, {"f": round(f, 2), "g": round(0.1 + 0.03 * d, 3)})


@pytest.fixture
def trial(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("dose", "m-safeopt", DOSE, storage=url, seed=3)
    rng = np.random.default_rng(0)
    _answer(study, 17, rng)
    return url, rng


def _stuck_count(text: str) -> int:
    return int(text.split("has not grown in the last ")[1].split()[0])


def test_both_warnings_name_one_command_with_every_suggested_option(trial):
    url, _ = trial
    st = load_study("dose", url).status()
    (noise,) = st["noise"]
    stuck = st["stuck"]
    assert stuck is not None and stuck.startswith("the method is stuck")
    assert noise.startswith("Repeated measurements of the efficacy")
    noise_f = float(f"{st['settings']['noise_check']['f']['suggested']:.2g}")
    command = st["continue_command"]
    assert command.startswith(f"boloop study create dose-continued --from dose --storage {url}")
    assert f"--option noise_f={noise_f:g}" in command and "--option min_lengthscale_g=" in command
    # each warning keeps its own explanation and names the same, combined command
    for text, own, other in (
        (noise, "noise_f", "min_lengthscale_g"),
        (stuck, "min_lengthscale_g", "noise_f"),
    ):
        assert f"run {command} (" in text
        assert text.count("boloop study create") == 1
        assert f"it also sets {other} = " in text and f"it also sets {own} = " not in text
    assert "scatter more than noise_f" in noise and "min_lengthscale_g: the shortest" in stuck
    assert st["warnings"].count(noise) == 1 and st["warnings"].count(stuck) == 1


def test_the_combined_command_creates_the_continuation_with_both_options(trial, tmp_path):
    url, _ = trial
    st = load_study("dose", url).status()
    args = st["continue_command"].split()[3:]  # after "boloop study create"
    name, options = args[0], {}
    for k, v in zip(args, args[1:]):
        if k == "--option":
            key, val = v.split("=")
            options[key] = float(val)
    new = create_study(name, from_study="dose", storage=url, **options)
    assert new.n_answered == 17
    settings = new.status()["settings"]
    assert settings["noise_f"] == pytest.approx(options["noise_f"])
    assert settings["min_lengthscale_g"] == [options["min_lengthscale_g"]] * 2
    assert new.status()["options"] == options
    # the old study now names its continuation, and no longer suggests min_lengthscale_g
    old = load_study("dose", url).status()
    assert f"This study was continued as {name!r}." in old["stuck"]
    assert "min_lengthscale_g" not in (old["continue_command"] or "")


def test_one_suggestion_alone_keeps_its_own_command(tmp_path):
    """A stuck study whose noise fits: its warning names its option alone, as before."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("dose", "m-safeopt", DOSE, storage=url, seed=3, noise_f=1.0)
    _answer(study, 17, np.random.default_rng(0))
    st = study.status()
    assert st["noise"] == [] and st["stuck"] is not None
    command = st["continue_command"]
    assert command.endswith("--from dose --storage " + url + " --option min_lengthscale_g=0.3")
    assert f"run {command} (or give it in a new space file's [settings])" in st["stuck"]
    assert "also sets" not in st["stuck"]


def test_the_stuck_count_is_of_answers_whether_or_not_a_query_is_open(trial):
    """The trial once read 'last 11 answers' with no open query and 'last 12' once query 17
    was asked (the method counted its own iterations at a proposal). The count is of the answers
    given since the proposal at which the certified set last grew: here the first proposal after
    the safe seeds (the set never grew beyond the lowest dose, which the growth picture's replay
    confirms), so all answers after the seeds; the study shows the method's count and text."""
    from boloop.study.pictures import safe_growth

    url, rng = trial
    study = load_study("dose", url)
    assert study.status()["open_query"] is None
    assert np.all(np.vstack(safe_growth(study)) == 0)  # stuck at the lowest dose throughout
    seeds = study.status()["settings"]["n_initial"]
    closed = _stuck_count(study.status()["stuck"])
    assert closed == 17 - seeds
    study.ask()
    st = study.status()
    assert st["open_query"] is not None and _stuck_count(st["stuck"]) == closed
    # one more answer: one more, open query or not
    _answer(study, 1, rng)
    assert _stuck_count(study.status()["stuck"]) == closed + 1
    study.ask()
    assert _stuck_count(study.status()["stuck"]) == closed + 1
    # a measurement added is an answer too, with a query open or not
    study.add({"dose": 0.0, "timing": 12.0}, {"f": 50.0, "g": 0.1})
    assert _stuck_count(study.status()["stuck"]) == closed + 2
    _answer(study, 1, rng)
    study.add({"dose": 0.0, "timing": 4.0}, {"f": 48.0, "g": 0.1})
    st = study.status()
    assert st["open_query"] is None and _stuck_count(st["stuck"]) == closed + 4
    # the study shows the method's own count and message, its values with the dose's unit
    stall = study.policy.describe()["stall"]
    assert stall["answers"] == study.policy.answers_without_growth() == closed + 4
    unit = study.units().get(stall["axis"], "")
    assert st["stuck"].startswith(study.policy.stall_message(stall, unit))
    # a study loaded afresh (its policy rebuilt from the log) counts the same
    assert _stuck_count(load_study("dose", url).status()["stuck"]) == closed + 4


def test_added_measurements_count_towards_the_stall_window(tmp_path):
    """The window is in answers, added measurements included: after the safe seeds and one
    answer to the method's own query, nine measurements added at the lowest dose make ten
    answers without growth, and the next proposal reports the stall although the method has
    completed one iteration (counted in iterations, it waited for nine more of its answers)."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    study = create_study("dose", "m-safeopt", DOSE, storage=url, seed=3)
    rng = np.random.default_rng(0)
    seeds = study.status()["settings"]["n_initial"]
    _answer(study, seeds + 1, rng)
    window = study.policy.stall_window
    assert study.status()["iteration"] == 1 and window == 10
    for t in np.linspace(0.0, 24.0, 7).tolist() + [12.0, 4.0]:
        study.add({"dose": 0.0, "timing": t}, {"f": 50 - (t - 12) ** 2 / 10, "g": 0.1})
    # found at a proposal: none since the last one (it saw no answer without growth)
    assert study.status()["stuck"] is None
    study.ask()
    st = study.status()
    assert st["iteration"] == 1 and st["open_query"] is not None
    assert _stuck_count(st["stuck"]) == window
    study.add({"dose": 0.0, "timing": 20.0}, {"f": 43.6, "g": 0.1})
    assert _stuck_count(study.status()["stuck"]) == window + 1
    _answer(study, 1, rng)  # the open query answered
    assert _stuck_count(study.status()["stuck"]) == window + 2
    study.ask()
    assert _stuck_count(load_study("dose", url).status()["stuck"]) == window + 2
