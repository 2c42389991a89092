"""A study keeps the method defaults it was created with (``boloop.study.pinning``): a default
changed by a later boloop must not change the questions an existing study asks."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from boloop.algorithms.registry import get_method, list_methods, make_policy
from boloop.problems import get
from boloop.study import create_study, load_study, pinning
from test_safe_unknown_constants import DOSE

#: one cheap registered problem per family for the run-both-ways check
PROBLEM = {
    "expert": "expert/rastrigin2",
    "levelset": "levelset/himmelblau",
    "preference": "preference/branin",
    "safe": "safe/clinical-trial",
}
STEPS = {"expert": 8, "levelset": 6, "preference": 8, "safe": 6}


def _queries(policy, problem_id: str, steps: int) -> list[dict]:
    """The first ``steps`` queries of ``policy``, answered by the problem's oracle."""
    problem, rng, asked = get(problem_id), np.random.default_rng(0), []
    for _ in range(steps):
        q = policy.ask()
        asked.append(q.to_dict())
        policy.tell(q.id, problem.answer(q, rng))
    return asked


#: the library's methods (other tests register test-only ones that fail on purpose)
LIBRARY_METHODS = [
    (e.family, e.id) for e in list_methods() if e.factory.__module__.startswith("boloop.")
]


@pytest.mark.parametrize("family, method", LIBRARY_METHODS, ids=lambda v: str(v))
def test_a_method_asks_the_same_with_its_defaults_given_as_options(tmp_path, family, method):
    """What a study pins (its method's defaults, passed back as options) must not change what
    the method asks: the study's policy and the plain one ask the same questions."""
    problem_id = PROBLEM[family]
    study = create_study(
        "s", method, problem=problem_id, storage=f"sqlite:///{tmp_path / 's.db'}", seed=0
    )
    entry = get_method(method, family)
    assert set(study.pinned_defaults) <= {o.name for o in entry.options}
    problem = get(problem_id)
    plain = make_policy(method, problem, 0)
    pinned = make_policy(method, problem, 0, **study.policy_options)
    # what the method reports about itself (its settings in a study's status) and what it asks
    assert pinned.describe() == plain.describe()
    assert _queries(pinned, problem_id, STEPS[family]) == _queries(plain, problem_id, STEPS[family])


def _answer_duels(study, n: int) -> None:
    rng = np.random.default_rng(5)
    for _ in range(n):
        q = study.ask()
        study.tell(q.id, "a" if rng.random() < 0.5 else "b")


def test_a_default_changed_later_does_not_change_an_existing_study(tmp_path, monkeypatch):
    """A later boloop that changes a default (simulated by changing the constructor's default,
    as an upgrade would) still loads a study created before, asks what it asked, and a new
    study gets the new default."""
    from boloop.algorithms.preference import RegretAwareEUBO

    url = f"sqlite:///{tmp_path / 's.db'}"
    space = {"parameters": [{"name": "x", "low": 0, "high": 1, "grid": 12}]}
    study = create_study("old", "eubo-regret", space, family="preference", storage=url, seed=2)
    assert study.pinned_defaults["exploit"] == 1.0
    _answer_duels(study, 8)
    asked = [(row["a"], row["b"]) for row in study.history()]
    next_query = study.ask()

    init = RegretAwareEUBO.__init__

    def upgraded_init(self, *args, **kwargs):  # the new version's default: exploit = 0
        kwargs.setdefault("exploit", 0.0)
        init(self, *args, **kwargs)

    monkeypatch.setattr(RegretAwareEUBO, "__init__", upgraded_init)
    # ... and its method table, which is read from the constructor, says so
    entry = get_method("eubo-regret", "preference")
    table = tuple(
        dataclasses.replace(o, default=0.0) if o.name == "exploit" else o for o in entry.options
    )
    upgraded = dataclasses.replace(entry, options=table)
    monkeypatch.setattr(pinning, "get_method", lambda method, family=None: upgraded)
    # the upgrade is real: the method built without the pins now asks differently
    fresh = create_study("new", "eubo-regret", space, family="preference", storage=url, seed=2)
    assert fresh.pinned_defaults["exploit"] == 0.0
    _answer_duels(fresh, 8)
    assert [(row["a"], row["b"]) for row in fresh.history()] != asked

    reloaded = load_study("old", storage=url, full_replay=True)
    assert [(row["a"], row["b"]) for row in reloaded.history()] == asked
    again = reloaded.ask()
    assert (again.id, again.a, again.b) == (next_query.id, next_query.a, next_query.b)


def test_a_setting_read_under_another_name_is_not_overridden(tmp_path):
    """MR-LPF reads its ``beta`` from the setting ``beta_batch``: the default of ``beta`` must
    not be pinned over it."""
    from boloop.algorithms.preference import MRLPF

    space = {
        "parameters": [{"name": "x", "low": 0, "high": 1, "grid": 9}],
        "settings": {"beta_batch": 0.25},
    }
    url = f"sqlite:///{tmp_path / 's.db'}"
    study = create_study("m", "mr-lpf", space, family="preference", storage=url, seed=0)
    assert "beta" not in study.pinned_defaults
    beta = study.status()["settings"]["beta"]
    assert np.all(np.asarray(beta) == 0.25)
    assert inspect.signature(MRLPF.__init__).parameters["beta"].default != 0.25


def test_options_given_win_over_pinned_defaults(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    study = create_study(
        "e", "eubo-regret", problem="preference/branin", storage=url, seed=0, exploit=0.5
    )
    assert "exploit" not in study.pinned_defaults
    assert study.policy_options["exploit"] == 0.5
    assert study.status()["settings"]["exploit"] == 0.5


def test_a_level_set_study_from_before_the_widening_still_replays(tmp_path):
    """A learned level-set study created before ``widen_when_overconfident`` existed (its pins
    lack it) is built without the widening, so it asks what it asked; a new study pins the
    widening. Checked on the newcomer's coating map, where the widening changes the queries."""
    import numpy as np

    from boloop.study.pinning import policy_options

    space = {
        "threshold": 0.8,
        "parameters": [
            {"name": "temperature", "low": 100.0, "high": 200.0, "grid": 31},
            {"name": "speed", "low": 0.5, "high": 5.0, "grid": 21},
        ],
    }

    def thickness(p):  # a trend hides a bump (the trial's map)
        T, v = p["temperature"], p["speed"]
        bump = 0.6 * np.exp(-(((T - 160) / 20) ** 2) - ((v - 2) / 0.8) ** 2)
        return 0.4 + 0.006 * (T - 100) - 0.15 * v + bump

    runs = iter(range(3))

    def queries(**options):
        url = f"memory://widening-{next(runs)}"
        s = create_study("c", "randomized-straddle", space, seed=0, storage=url, **options)
        rng = np.random.default_rng(100)
        for _ in range(40):
            q = s.ask()
            s.tell(q.id, float(thickness(q.params) + 0.03 * rng.standard_normal()))
        return s, [tuple(r["params"].values()) for r in s.history()]

    new, widened = queries()
    assert new.pinned_defaults["widen_when_overconfident"] is True
    _, unwidened = queries(widen_when_overconfident=False)
    assert widened != unwidened  # the option matters on this map
    before = {k: v for k, v in new.pinned_defaults.items() if k != "widen_when_overconfident"}
    built = policy_options("randomized-straddle", "levelset", {}, before)
    assert built["widen_when_overconfident"] is False
    _, old = queries(**built)
    assert old == unwidened


#: an LSE study on a 41 x 21 grid (a trend and a bump), the reviewer's repro
LSE_SPACE = {
    "threshold": 0.5,
    "parameters": [
        {"name": "x", "low": 0.0, "high": 1.0, "grid": 41},
        {"name": "y", "low": 0.0, "high": 1.0, "grid": 21},
    ],
}
LSE_ANSWERS = 40
#: the study's answers; also run by the boloop of 4de0439 below (a script, so plain Python)
LSE_SCRIPT = """
import sys
import numpy as np
from boloop.study import create_study

def value(p):
    x, y = p["x"], p["y"]
    return 0.3 + 0.4 * x - 0.2 * y + 0.6 * np.exp(-((x - 0.3) ** 2 + (y - 0.7) ** 2) / 0.02)

def answer(study, n):
    rng = np.random.default_rng(0)
    for _ in range(n):
        q = study.ask()
        study.tell(q.id, float(value(q.params) + 0.03 * rng.standard_normal()))

if __name__ == "__main__":
    space, url, n = eval(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    answer(create_study("lse-old", "lse", space, seed=0, storage=url), n)
"""


def _lse_queries(url, **options):
    namespace: dict = {}
    exec(LSE_SCRIPT, namespace)
    s = create_study("lse", "lse", LSE_SPACE, seed=0, storage=url, **options)
    namespace["answer"](s, LSE_ANSWERS)
    return s, [tuple(r["params"].values()) for r in s.history()]


def test_an_lse_study_from_before_the_restart_still_replays():
    """A learned LSE study created before ``restart_intersection`` and the widening existed (its
    pins lack both) is built with neither: it intersects its intervals across refits as it did,
    and asks what it asked. A study created since pins both; one that pins the widening but not
    the restart (created between the two pins) had the restart and keeps it."""
    from boloop.study.pinning import policy_options

    new, restarted = _lse_queries("memory://lse-new")
    assert new.pinned_defaults["restart_intersection"] is True
    assert new.pinned_defaults["widen_when_overconfident"] is True
    _, unrestarted = _lse_queries(
        "memory://lse-off", restart_intersection=False, widen_when_overconfident=False
    )
    _, unwidened = _lse_queries("memory://lse-unwidened", widen_when_overconfident=False)
    assert unwidened != unrestarted  # the restart alone changes the queries on this map
    later = ("restart_intersection", "widen_when_overconfident")
    before = {k: v for k, v in new.pinned_defaults.items() if k not in later}
    built = policy_options("lse", "levelset", {}, before)
    assert built["restart_intersection"] is False and built["widen_when_overconfident"] is False
    _, old = _lse_queries("memory://lse-old", **built)
    assert old == unrestarted
    # pins holding the widening: created with the restart, which stays at its default
    since = {k: v for k, v in new.pinned_defaults.items() if k != "restart_intersection"}
    built = policy_options("lse", "levelset", {}, since)
    assert "restart_intersection" not in built
    assert _lse_queries("memory://lse-since", **built)[1] == restarted


@pytest.mark.parametrize("method", sorted(m for f, m in LIBRARY_METHODS if f == "levelset"))
def test_the_restart_option_reaches_lse_only(method):
    """``ADDED_LATER`` is keyed by family; the level-set methods that do not declare
    ``restart_intersection`` are not given it (``policy_options`` keeps declared options)."""
    declared = {o.name for o in get_method(method, "levelset").options}
    assert ("restart_intersection" in declared) == (method == "lse")
    built = pinning.policy_options(method, "levelset", {}, {"n_refine": 2})
    assert ("restart_intersection" in built) == (method == "lse")
    assert built.get("restart_intersection", False) is False
    make_policy(method, get("levelset/himmelblau"), 0, **built)  # would raise on an unknown one


def _written_by_the_boloop_of(commit: str, script: str, space: dict, answers: int, tmp_path):
    """The URL of a SQLite study that the boloop of ``commit`` (its ``src`` from this
    repository's history; the test is skipped without it) created and answered by running
    ``script`` with the space, the URL and the number of answers."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    git = shutil.which("git")
    if (
        git is None
        or subprocess.run(
            [git, "-C", str(root), "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True
        ).returncode
    ):
        pytest.skip(f"commit {commit} is not in this checkout's history")
    archive = subprocess.run(
        [git, "-C", str(root), "archive", commit, "src"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive, check=True)
    path = tmp_path / "old_study.py"
    path.write_text(script)
    url = f"sqlite:///{tmp_path / 'old.db'}"
    env = {
        **os.environ,
        "PYTHONPATH": str(tmp_path / "src"),
        "BOLOOP_SNAPSHOTS": "0",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }
    subprocess.run(
        [sys.executable, str(path), repr(space), url, str(answers)],
        env=env,
        check=True,
        capture_output=True,
    )
    return url


#: a commit from before the widening and LSE's restart (its ``src`` only is run)
BEFORE_RESTART = "4de0439"


def test_an_lse_study_written_by_the_boloop_of_before_loads(tmp_path):
    """End to end: the study is created and answered by the boloop of :data:`BEFORE_RESTART`
    (from this repository's history; skipped without it), then loaded by this one, replaying
    every event."""
    url = _written_by_the_boloop_of(BEFORE_RESTART, LSE_SCRIPT, LSE_SPACE, LSE_ANSWERS, tmp_path)
    study = load_study("lse-old", url, full_replay=True)
    assert "restart_intersection" not in study.pinned_defaults  # written before it existed
    assert len(study.history()) == LSE_ANSWERS
    _, unrestarted = _lse_queries(
        "memory://lse-off-e2e", restart_intersection=False, widen_when_overconfident=False
    )
    assert [tuple(r["params"].values()) for r in study.history()] == unrestarted


#: main before ``missing_constants`` (a safe study without constants used 1.0 each)
BEFORE_UNKNOWN_CONSTANTS = "9212576"

#: a user's dose study (tests/test_safe_unknown_constants.py), answered by a script that the
#: boloop of before runs too
DOSE_SCRIPT = """
import math, sys
import numpy as np
from boloop.study import create_study

def answer(study, n):
    rng = np.random.default_rng(0)
    for _ in range(n):
        q = study.ask()
        d, t = q.params["dose"], q.params["timing"]
        g = 0.05 + 0.0004 * d ** 2 * (1 + 0.3 * math.sin(t / 24 * 2 * math.pi))
        f = 80 * (1 - math.exp(-d / 15)) * (0.7 + 0.3 * math.cos((t - 8) / 24 * 2 * math.pi))
        g = g + rng.normal(0, 0.01)
        study.tell(q.id, {"f": round(f + rng.normal(0, 1.0), 2), "g": round(g, 3)})

if __name__ == "__main__":
    space, url, n = eval(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    answer(create_study("dose-old", "m-safeopt", space, seed=0, storage=url), n)
"""
DOSE_SPACE = DOSE  # the same user study as tests/test_safe_unknown_constants.py
DOSE_ANSWERS = 40


def _dose_queries(url, **options):
    namespace: dict = {}
    exec(DOSE_SCRIPT, namespace)
    s = create_study("dose", "m-safeopt", DOSE_SPACE, seed=0, storage=url, **options)
    namespace["answer"](s, DOSE_ANSWERS)
    return s, [tuple(r["params"].values()) for r in s.history()]


def test_a_safe_study_from_before_missing_constants_keeps_one():
    """A user's m-safeopt study created before ``missing_constants`` (its options and pins lack
    it) is built with 1.0 for the constants nobody gave, as it was; a new one pins 'unknown'."""
    from boloop.study.pinning import policy_options

    new, unknown = _dose_queries("memory://dose-new")
    assert new.pinned_defaults["missing_constants"] == "unknown"
    _, one = _dose_queries("memory://dose-one", missing_constants=1.0)
    assert unknown != one  # the option matters on this study
    before = {k: v for k, v in new.pinned_defaults.items() if k != "missing_constants"}
    built = policy_options("m-safeopt", "safe", {}, before)
    assert built["missing_constants"] == 1.0
    assert "missing_constants" not in policy_options("safeopt-mc", "safe", {}, {"trend_g": True})


def test_a_safe_study_written_by_the_boloop_of_before_loads(tmp_path):
    """End to end: a dose study created and answered by the boloop of
    :data:`BEFORE_UNKNOWN_CONSTANTS` (skipped without it in the history) loads in this one,
    replays every event, says L_f = L_g_prime = 1.0 and asks next what 1.0 asks."""
    url = _written_by_the_boloop_of(
        BEFORE_UNKNOWN_CONSTANTS, DOSE_SCRIPT, DOSE_SPACE, DOSE_ANSWERS, tmp_path
    )
    study = load_study("dose-old", url, full_replay=True)
    assert "missing_constants" not in study.pinned_defaults  # written before it existed
    settings = study.status()["settings"]
    assert (settings["L_f"], settings["L_g_prime"]) == (1.0, 1.0)
    replica, one = _dose_queries("memory://dose-one-e2e", missing_constants=1.0)
    assert [tuple(r["params"].values()) for r in study.history()] == one
    assert study.ask().params == replica.ask().params
