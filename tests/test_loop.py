"""The shared loop: simulate with a trivial random policy for every query kind, traces, determinism,
the per-family method registry and the metric registry."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import boloop
from boloop import problems
from boloop.algorithms import list_methods, make_policy, register_method
from boloop.algorithms.registry import get_method
from boloop.algorithms.toy import RandomEvaluate
from boloop.errors import AnswerTypeError, InvalidInputError, QueryStateError, UnknownIdError
from boloop.metrics import get_metric, list_metrics
from boloop.metrics.common import (
    RunningBest,
    best_so_far,
    cumulative,
    f1_score,
    instantaneous_regret,
    misclassification_rate,
    simple_regret,
)
from boloop.problems import Problem
from boloop.queries import BasePolicy
from boloop.simulate import Trace, oracle_rng, simulate
from boloop.spaces import Box

TOYS = ["levelset/toy", "preference/toy", "safe/toy", "expert/toy"]
KINDS = {
    "levelset/toy": {"evaluate"},
    "preference/toy": {"compare"},
    "safe/toy": {"evaluate"},
    "expert/toy": {"label", "evaluate"},
}


@pytest.mark.parametrize("pid", TOYS)
def test_loop_with_random_policy_each_kind(pid: str) -> None:
    problem = problems.get(pid)
    policy = make_policy("toy-random", problem, seed=3)
    trace = simulate(policy, problem, budget=12, seed=3)
    assert policy.iteration == 12
    assert {r["kind"] for r in trace.records} == KINDS[pid]
    rows = trace.step_rows()
    assert [r["step"] for r in rows] == list(range(1, 13))
    assert list(rows[0]) == [
        "problem",
        "method",
        "seed",
        "step",
        *problem.metric_names(),
        "ask_seconds",
        "tell_seconds",
    ]
    for r in rows:
        assert r["problem"] == pid and r["method"] == "toy-random" and r["seed"] == 3
        assert r["ask_seconds"] >= 0 and r["tell_seconds"] >= 0
    # every record carries the points and the answer of its query, of the right type
    for rec in trace.records:
        if rec["kind"] == "compare":
            assert len(rec["points"]) == 2 and rec["answer"] in (0, 1)
        elif rec["kind"] == "label":
            assert isinstance(rec["answer"], bool)
        elif pid == "safe/toy":
            assert set(rec["answer"]) == {"f", "g"}
        else:
            assert isinstance(rec["answer"], float)
    json.loads(trace.to_json())


def test_expert_rejected_label_consumes_the_iteration() -> None:
    trace = simulate("toy-random", "expert/toy", budget=15, seed=0)
    by_step: dict[int, list[dict]] = {}
    for rec in trace.records:
        by_step.setdefault(rec["step"], []).append(rec)
    assert len(by_step) == 15
    n_reject = n_accept = 0
    for recs in by_step.values():
        kinds = [r["kind"] for r in recs]
        if kinds == ["label"]:
            assert recs[0]["answer"] is False
            n_reject += 1
        else:
            assert kinds == ["label", "evaluate"] and recs[0]["answer"] is True
            n_accept += 1
    assert n_reject > 0 and n_accept > 0  # this seed exercises both branches
    last = trace.step_rows()[-1]
    assert last["expert_queries"] == 15 and last["evaluations"] == n_accept


def test_step_rows_sum_seconds_within_a_step() -> None:
    trace = simulate("toy-random", "expert/toy", budget=6, seed=0)
    rows = trace.step_rows()
    total = sum(r["ask_seconds"] + r["tell_seconds"] for r in rows)
    rec_total = sum(r["ask_seconds"] + r["tell_seconds"] for r in trace.records)
    assert math.isclose(total, rec_total)


@pytest.mark.parametrize("pid", TOYS)
def test_same_seed_same_rows(pid: str) -> None:
    a = simulate("toy-random", pid, budget=8, seed=5)
    b = simulate("toy-random", pid, budget=8, seed=5)
    c = simulate("toy-random", pid, budget=8, seed=6)

    def strip(trace: Trace) -> str:  # repr: NaN metrics compare equal as text
        return repr(
            [{k: v for k, v in r.items() if not k.endswith("_seconds")} for r in trace.rows()]
        )

    assert strip(a) == strip(b)
    assert [r["points"] for r in a.rows()] != [r["points"] for r in c.rows()]


def test_oracle_rng_independent_of_policy_rng() -> None:
    a = oracle_rng(0).random(5)
    b = np.random.default_rng(0).random(5)
    assert not np.allclose(a, b)
    assert np.array_equal(oracle_rng(0).random(5), a)


def test_trace_csv_and_json_roundtrip() -> None:
    trace = simulate("toy-random", "safe/toy", budget=4, seed=1)
    text = trace.to_csv(per="step")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 4 and list(rows[0]) == trace.columns
    per_query = list(csv.DictReader(io.StringIO(trace.to_csv())))
    assert json.loads(per_query[0]["answer"]).keys() == {"f", "g"}
    back = Trace.from_json(trace.to_json())
    assert back.step_rows() == trace.step_rows()
    with pytest.raises(InvalidInputError, match="per"):
        trace.to_csv(per="iteration")


def test_safe_toy_random_counts_unsafe_evaluations() -> None:
    problem = problems.get("safe/toy")
    trace = simulate("toy-random", problem, budget=30, seed=0)
    n_unsafe = 0
    for rec in trace.records:
        g = problem.value(np.array(rec["points"]))["g"][0]
        n_unsafe += g > problem.settings["threshold"]
        assert rec["metrics"]["unsafe"] == n_unsafe
    assert n_unsafe > 0  # random ignores safety; about half of the actions are unsafe


@pytest.mark.parametrize("budget", [0, -1, 2.5, True, "3"])
def test_bad_budget(budget: object) -> None:
    with pytest.raises(InvalidInputError, match="budget"):
        simulate("toy-random", "levelset/toy", budget=budget, seed=0)  # type: ignore[arg-type]


def test_bad_seed() -> None:
    with pytest.raises(InvalidInputError, match="seed"):
        simulate("toy-random", "levelset/toy", budget=2, seed=-1)


def test_boloop_simulate_is_callable_lazily() -> None:
    import boloop.simulate as module

    assert callable(boloop.simulate) and callable(module)
    assert boloop.Trace is Trace and boloop.make_policy is make_policy
    assert len(boloop.simulate("toy-random", "preference/toy", 2, 0).records) == 2


def test_policy_that_never_finishes_an_iteration_is_stopped() -> None:
    from boloop.algorithms.toy import RandomExpert

    class NeverDone(RandomExpert):
        """A policy whose answers never complete an iteration (the contract's hook says no)."""

        def _iteration_done(self, query, answer):  # type: ignore[no-untyped-def]
            return False

    problem = problems.get("expert/toy")
    policy = NeverDone(problem.space, 0)
    with pytest.raises(RuntimeError, match="iterations"):
        simulate(policy, problem, budget=2, seed=0, max_queries=10)


# -- answers of the wrong type / to an unknown id --------------------------------------------------
def test_wrong_answer_type_and_unknown_id_change_nothing() -> None:
    problem = problems.get("preference/toy")
    policy = make_policy("toy-random", problem, seed=0)
    q = policy.ask()
    with pytest.raises(AnswerTypeError):
        policy.tell(q.id, 0.5)
    with pytest.raises(AnswerTypeError):
        policy.tell(q.id, True)
    with pytest.raises(QueryStateError):
        policy.tell(q.id + 7, 0)
    assert policy.iteration == 0 and policy.history == [] and policy.ask() is q
    policy.tell(q.id, 1)
    with pytest.raises(QueryStateError, match="already"):
        policy.tell(q.id, 1)
    assert policy.iteration == 1


# -- method registry -------------------------------------------------------------------------------
def test_toy_random_registered_per_family() -> None:
    families = {e.family for e in list_methods() if e.id == "toy-random"}
    assert {"levelset", "preference", "safe", "expert"} <= families
    for pid in TOYS:
        problem = problems.get(pid)
        assert make_policy("toy-random", problem, 0).family == problem.family


def test_same_method_id_in_two_families() -> None:
    class Tagged(RandomEvaluate):  # a policy that says which factory built it
        def __init__(self, tag: str, spec: Any, seed: int) -> None:
            super().__init__(spec.space, seed=seed)
            self.tag = (tag, seed)

    @register_method("zz-test-dup", "fam-a", "a")
    def fa(spec, seed, **o):  # type: ignore[no-untyped-def]
        return Tagged("a", spec, seed)

    @register_method("zz-test-dup", "fam-b", "b")
    def fb(spec, seed, **o):  # type: ignore[no-untyped-def]
        return Tagged("b", spec, seed)

    pa = Problem("fam-a/x", "fam-a", Box([0], [1]))
    pb = Problem("fam-b/x", "fam-b", Box([0], [1]))
    assert make_policy("zz-test-dup", pa, 1).tag == ("a", 1)
    assert make_policy("zz-test-dup", pb, 2).tag == ("b", 2)
    assert get_method("zz-test-dup", "fam-b").description == "b"
    with pytest.raises(InvalidInputError, match="several families"):
        get_method("zz-test-dup")
    pc = Problem("fam-c/x", "fam-c", Box([0], [1]))
    with pytest.raises(InvalidInputError, match="fam-a and fam-b"):
        make_policy("zz-test-dup", pc)

    def other(problem, seed, **o):  # type: ignore[no-untyped-def]
        return None

    with pytest.raises(InvalidInputError, match="already registered"):
        register_method("zz-test-dup", "fam-a", "again")(other)


def test_unknown_method_lists_valid_ids() -> None:
    problem = problems.get("levelset/toy")
    with pytest.raises(UnknownIdError, match="toy-random") as info:
        make_policy("no-such-method", problem)
    assert "no-such-method" in str(info.value)


def test_unknown_problem_lists_valid_ids() -> None:
    with pytest.raises(UnknownIdError, match="levelset/toy"):
        problems.get("levelset/no-such-problem")


# -- metrics ---------------------------------------------------------------------------------------
def test_metric_registry() -> None:
    assert get_metric("common/f1_score") is f1_score
    assert get_metric("cumulative", family="common") is cumulative
    ids = {e.id for e in list_metrics("common")}
    assert {"instantaneous_regret", "simple_regret", "f1_score", "cumulative"} <= ids
    with pytest.raises(UnknownIdError, match="common/f1_score"):
        get_metric("no-such-metric")


def test_common_metrics_closed_forms() -> None:
    assert instantaneous_regret(3.0, 1.0) == 2.0
    assert instantaneous_regret(0.0, 1.5, maximize=False) == 1.5
    np.testing.assert_array_equal(instantaneous_regret(2.0, [1.0, 2.0]), [1.0, 0.0])
    np.testing.assert_array_equal(cumulative([1, 2, 3]), [1, 3, 6])
    np.testing.assert_array_equal(best_so_far([3, 1, 2], maximize=False), [3, 1, 1])
    assert simple_regret(1.0, 0.25) == 0.75
    t = np.array([1, 1, 0, 0, 1], bool)
    e = np.array([1, 0, 1, 0, 1], bool)
    assert f1_score(t, e) == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))
    assert f1_score(np.zeros(3, bool), np.zeros(3, bool)) == 1.0
    assert misclassification_rate(t, e) == pytest.approx(2 / 5)
    with pytest.raises(InvalidInputError, match="shape"):
        f1_score(t, e[:3])
    rb = RunningBest(maximize=False)
    assert math.isnan(rb.best)
    assert [rb.add(v) for v in (3, 4, 1)] == [3, 3, 1]


def test_levelset_toy_loss_reaches_small_values() -> None:
    """With 40 random evaluations on 41 points the GP classification of the toy is nearly right:
    loss <= 0.1 (at most 4 of 41 points wrong; observed 0-2 across seeds 0-4)."""
    trace = simulate("toy-random", "levelset/toy", budget=40, seed=0)
    assert trace.final_metrics["loss"] <= 0.1
    assert trace.final_metrics["fscore"] >= 0.85
    first = trace.records[0]["metrics"]["loss"]
    assert first > trace.final_metrics["loss"]


class _Patterned(BasePolicy):
    """Evaluate queries; whether an answer completes an iteration follows a given pattern."""

    method_id = "patterned"
    family = "levelset"

    def __init__(self, space: object, pattern: list[bool]) -> None:
        super().__init__(0)
        self.space = space
        self.pattern = pattern

    def _propose(self):  # type: ignore[no-untyped-def]
        i = int(self.rng.integers(self.space.n))  # type: ignore[attr-defined]
        return self._new_evaluate(self.space.points[i], i)  # type: ignore[attr-defined]

    def _observe(self, query, answer):  # type: ignore[no-untyped-def]
        pass

    def _iteration_done(self, query, answer):  # type: ignore[no-untyped-def]
        return self.pattern[len(self.history) - 1]

    def recommend(self):  # type: ignore[no-untyped-def]
        return None


@settings(max_examples=30, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=25), st.integers(1, 6))
def test_step_rows_follow_the_iteration_count(pattern: list[bool], budget: int) -> None:
    """Any pattern of counted/uncounted queries: records carry the 1-based iteration in progress,
    step rows are exactly 1..budget, each with the metrics of its last query and the seconds of
    all its queries."""
    pattern = pattern + [True] * budget  # enough counted answers to finish
    problem = problems.get("levelset/toy")
    policy = _Patterned(problem.space, pattern)
    trace = simulate(policy, problem, budget, seed=0)
    expected_steps, it = [], 0
    for done in pattern[: len(trace.records)]:
        expected_steps.append(it + 1)
        it += done
    assert [r["step"] for r in trace.records] == expected_steps and it == budget
    rows = trace.step_rows()
    assert [r["step"] for r in rows] == list(range(1, budget + 1))
    for row in rows:
        recs = [r for r in trace.records if r["step"] == row["step"]]
        assert row["loss"] == recs[-1]["metrics"]["loss"]
        assert math.isclose(row["ask_seconds"], sum(r["ask_seconds"] for r in recs))


def test_a_module_that_fails_to_import_fails_every_lookup(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from boloop._registry import Registry

    pkg = tmp_path / "zz_fake_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a_good.py").write_text(
        "from tests_reg import REG\nREG.register('fam/good', 'fam', 'ok')(lambda: 1)\n"
    )
    (pkg / "b_bad.py").write_text("raise ValueError('broken module')\n")
    reg = Registry("problem", "zz_fake_pkg")
    import types

    monkeypatch.setitem(__import__("sys").modules, "tests_reg", types.SimpleNamespace(REG=reg))
    monkeypatch.syspath_prepend(str(tmp_path))
    for _ in range(2):  # the second lookup fails the same way instead of seeing half a registry
        with pytest.raises(ValueError, match="broken module"):
            reg.get("fam/good")


def test_simulate_takes_a_method_id_with_options() -> None:
    """``simulate("cobol?budget=iterations", ...)`` builds the policy with the id's options, as
    ``boloop bench run`` does (the only way to give an option named like simulate's own
    ``budget``); the same run as the option given by keyword; an option given both ways and an
    unknown option are refused."""
    problem = "expert/ackley4?a=2"
    by_id = simulate("cobol?budget=iterations&n_candidates=64", problem, 6, 1)
    by_kw = simulate(
        make_policy("cobol", problems.get(problem), 1, budget="iterations", n_candidates=64),
        problem, 6, 1,
    )
    assert by_id.method == "cobol?budget=iterations&n_candidates=64"
    assert [r["points"] for r in by_id.records] == [r["points"] for r in by_kw.records]
    assert by_id.records[-1]["metrics"] == by_kw.records[-1]["metrics"]
    with pytest.raises(InvalidInputError, match="both"):
        simulate("cobol?n_candidates=64", problem, 2, 0, n_candidates=32)
    with pytest.raises(InvalidInputError, match="bogus"):
        simulate("cobol?bogus=1", problem, 2, 0)


@pytest.mark.parametrize("seed", [-1, "abc", 1.5, True])
@pytest.mark.parametrize(
    "method, pid",
    [("eubo", "preference/toy"), ("cobol", "expert/toy"), ("straddle", "levelset/toy")],
)
def test_make_policy_refuses_a_bad_seed_clearly(method: str, pid: str, seed: object) -> None:
    """A bad seed is an InvalidInputError naming it, not numpy's ValueError/TypeError."""
    with pytest.raises(InvalidInputError, match="seed"):
        make_policy(method, problems.get(pid), seed=seed)
