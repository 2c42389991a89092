"""The query vocabulary: Evaluate / Label / Compare, their answers, and BasePolicy's bookkeeping."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from boloop.errors import AnswerTypeError, InvalidInputError, QueryStateError
from boloop.queries import (
    BasePolicy,
    Compare,
    Evaluate,
    Label,
    Policy,
    Query,
    query_from_dict,
)


# -- answers ---------------------------------------------------------------------------------------
def test_evaluate_answers() -> None:
    q = Evaluate(id=0, x=[0.1, 0.2])
    assert q.validate_answer(1) == 1.0 and isinstance(q.validate_answer(1), float)
    assert q.validate_answer(np.float32(2.5)) == 2.5
    assert q.validate_answer({"y": 3.0}) == 3.0  # a single named value is accepted
    for bad in (True, "1.0", None, float("nan"), float("inf"), [1.0], {"a": 1, "b": 2}):
        with pytest.raises(AnswerTypeError):
            q.validate_answer(bad)


def test_evaluate_named_outputs() -> None:
    q = Evaluate(id=3, x=[0.0, 1.0], outputs=("f", "g"))
    assert q.validate_answer({"g": 2, "f": 1.5}) == {"f": 1.5, "g": 2.0}
    with pytest.raises(AnswerTypeError, match="missing"):
        q.validate_answer({"f": 1.0})
    with pytest.raises(AnswerTypeError, match="unknown"):
        q.validate_answer({"f": 1.0, "g": 1.0, "h": 0.0})
    with pytest.raises(AnswerTypeError, match="named"):
        q.validate_answer(1.0)
    with pytest.raises(AnswerTypeError):
        q.validate_answer({"f": float("nan"), "g": 0.0})


def test_label_answers() -> None:
    q = Label(id=1, x=[0.5])
    assert q.validate_answer(True) is True and q.validate_answer(np.bool_(False)) is False
    for bad in (1, 0, 1.0, "yes", None):
        with pytest.raises(AnswerTypeError, match="bool"):
            q.validate_answer(bad)


def test_compare_answers() -> None:
    q = Compare(id=2, a=[0.0], b=[1.0])
    assert q.validate_answer(0) == 0 and q.validate_answer(np.int64(1)) == 1
    for bad in (2, -1, 0.0, 1.5, True, False, "a", None):
        with pytest.raises(AnswerTypeError):
            q.validate_answer(bad)


@pytest.mark.parametrize(
    "query",
    [
        Evaluate(id=0, x=[0.1, 0.2], index=4, outputs=("f", "g")),
        Label(id=1, x=[0.3], index=None),
        Compare(id=2, a=[0.0, 1.0], b=[1.0, 0.0], a_index=0, b_index=9),
    ],
)
def test_to_dict_roundtrip(query: Query) -> None:
    back = query_from_dict(query.to_dict())
    assert type(back) is type(query) and back == query and back.to_dict() == query.to_dict()


def test_bad_queries() -> None:
    with pytest.raises(InvalidInputError, match="x"):
        Evaluate(id=0, x=[np.nan])
    with pytest.raises(InvalidInputError, match="x"):
        Label(id=0, x=[])
    with pytest.raises(InvalidInputError, match="kind"):
        query_from_dict({"kind": "guess", "id": 0})
    q = Evaluate(id=0, x=[1.0, 2.0])
    with pytest.raises(ValueError):
        q.x[0] = 5.0  # points of a query are read-only


# -- BasePolicy ------------------------------------------------------------------------------------
class Counter(BasePolicy):
    """Compare (0, i) then (i, i+1)...; _observe refuses the answer 1 on query 2 (a model failure)."""

    method_id = "counter"
    family = "test"

    def __init__(self, seed: int | None = 0) -> None:
        super().__init__(seed)
        self.observed: list[Any] = []

    def _propose(self) -> Query:
        i = len(self.observed)
        return self._new_compare([float(i)], [float(i + 1)], i, i + 1)

    def _observe(self, query: Query, answer: Any) -> None:
        if query.id == 2 and answer == 1:
            raise InvalidInputError("model refuses this answer")
        self.observed.append(answer)

    def recommend(self) -> Any:
        return len(self.observed)


def test_ask_returns_the_open_query_until_answered() -> None:
    p = Counter()
    q = p.ask()
    assert p.ask() is q and p.pending is q and q.id == 0
    p.tell(0, 1)
    assert p.pending is None and p.iteration == 1
    q1 = p.ask()
    assert q1.id == 1 and q1 is not q
    assert isinstance(p, Policy)


def test_tell_takes_the_query_itself() -> None:
    p = Counter()
    q = p.ask()
    p.tell(q, 1)  # the object ask() returned, as well as its id
    assert p.history[-1] == (q, 1) and p.pending is None
    with pytest.raises(QueryStateError, match="already answered"):
        p.tell(q, 0)


def test_tell_rejects_and_changes_nothing() -> None:
    p = Counter()
    q = p.ask()
    before = (p.iteration, list(p.history), p.describe())
    with pytest.raises(QueryStateError, match="never asked"):
        p.tell(5, 0)
    with pytest.raises(AnswerTypeError):
        p.tell(q.id, "left")
    with pytest.raises(AnswerTypeError, match="query_id"):
        p.tell("0", 0)  # type: ignore[arg-type]
    assert (p.iteration, list(p.history), p.describe()) == before
    p.tell(q.id, 0)
    with pytest.raises(QueryStateError, match="already answered"):
        p.tell(q.id, 0)


def test_observe_failure_changes_nothing() -> None:
    p = Counter()
    for _ in range(2):
        p.tell(p.ask().id, 0)
    q = p.ask()
    with pytest.raises(InvalidInputError, match="refuses"):
        p.tell(q.id, 1)
    assert p.iteration == 2 and len(p.history) == 2 and p.pending is q
    p.tell(q.id, 0)
    assert p.iteration == 3 and p.recommend() == 3


def test_describe_counts() -> None:
    p = Counter()
    p.tell(p.ask().id, 1)
    p.ask()
    d = p.describe()
    assert d == {
        "method": "counter",
        "family": "test",
        "iteration": 1,
        "queries_answered": 1,
        "open_query": 1,
    }


def test_policy_is_deterministic_given_seed_and_answers() -> None:
    from boloop.algorithms import make_policy
    from boloop.problems import get

    problem = get("expert/toy")

    def play(seed: int) -> list[dict]:
        p = make_policy("toy-random", problem, seed)
        out = []
        for i in range(12):
            q = p.ask()
            out.append(q.to_dict())
            p.tell(q.id, bool(i % 3) if q.kind == "label" else 0.5 * i)
        return out

    assert play(4) == play(4)
    assert play(4) != play(5)
