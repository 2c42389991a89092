"""``boloop study status`` is one process per call: it reads the status from the live policy
(``Study.status(keep_policy=False)``), not a copy that would be read once and thrown away. The
status is the same as from a copy, and a Study read that way goes on exactly as its log says
(its policy is rebuilt before any further use, never stored as a snapshot): checked against a
full replay of the log, which verifies every stored query.
"""

from __future__ import annotations

import json

import pytest

from boloop.algorithms import register_method
from boloop.algorithms.toy import RandomEvaluate
from boloop.study import create_study, load_study
from cli_runner import run_cli
from study_samples import SPACES, answer_for, make_study


class DrawsInRecommend(RandomEvaluate):
    """Test only: ``recommend()`` draws from the policy's generator first, as a lazy model fit
    may (the contract allows it): read on the live policy, it changes every later query."""

    draw: int | None = None

    def recommend(self, final_update: bool = True):  # type: ignore[no-untyped-def]
        self.draw = int(self.rng.integers(2**31))
        return super().recommend(final_update)

    def describe(self):  # type: ignore[no-untyped-def]
        return {**super().describe(), "draw": self.draw}


@register_method("zz-draws-in-recommend", "levelset", "test only: recommend() draws")
def _draws_in_recommend(problem, seed, **options):  # type: ignore[no-untyped-def]
    return DrawsInRecommend(problem.space, seed)


def _answer(study, n: int) -> None:
    for _ in range(n):
        q = study.ask()
        a = answer_for(q)
        if isinstance(a, dict):
            a = {k: v for k, v in a.items() if k in q.outputs}
        study.tell(q.id, a)


@pytest.mark.parametrize("key", ["lev1", "expert", "pref", "safe"])
def test_a_status_read_live_is_the_status_read_from_a_copy(tmp_path, key):
    url = f"sqlite:///{tmp_path / 's.db'}"
    make_study("s", url, answers=6, key=key, fast=True).ask()
    live = load_study("s", storage=url).status(keep_policy=False)
    copied = load_study("s", storage=url).status()
    assert live == copied
    assert live["answered"] == 6 and live["open_query"] is not None
    res = run_cli(["study", "status", "s", "--json", "--storage", url], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == json.loads(json.dumps(copied, default=str))


@pytest.mark.parametrize("then", ["ask and tell", "snapshot", "readout"])
def test_a_study_read_live_goes_on_as_its_log_says(tmp_path, then):
    """A policy whose ``recommend()`` draws random numbers (a lazy fit may: the expert family's)
    is changed by a live read: the study must not ask from it afterwards, nor store it as a
    snapshot. A full replay checks every query the study stored afterwards."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    study = create_study("s", "zz-draws-in-recommend", SPACES["lev1"][1], storage=url, seed=3)
    _answer(study, 5)
    study = load_study("s", storage=url)
    first = study.status(keep_policy=False)
    assert first["settings"]["draw"] is not None
    if then == "readout":  # a readout without a refresh first (the model picture's way)
        with study.readout() as r:
            assert r.described["draw"] == first["settings"]["draw"]
    if then == "snapshot":
        study.save_snapshot()
        study = load_study("s", storage=url)  # from the snapshot, if one was stored
    assert study.status() == first
    _answer(study, 6)
    replayed = load_study("s", storage=url, full_replay=True)  # raises if a query differs
    assert study.ask().to_dict() == replayed.ask().to_dict()
    assert study.status() == replayed.status()
