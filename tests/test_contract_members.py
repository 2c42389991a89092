"""What a study reads of a method beyond ask/tell is declared on ``BasePolicy`` with a neutral
default (``docs/methods.md``, "Writing your own method"): a method written by an author who
knows none of these members runs in a study (its status, a label refused in words, its
pictures), and one that overrides them is read by the study through its public behaviour: its
own counts and horizon in the status, labels given outside its queries, the note on a rejected
setting measured anyway, its alarms over a limit, its stall in the person's units, its model in
the picture. The methods are registered under a throw-away family (and one under ``safe``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from boloop.algorithms import register_method
from boloop.errors import InvalidInputError, QueryStateError
from boloop.queries import BasePolicy, PolicySpec, Query
from boloop.study import create_study
from boloop.study.pictures import pictures

SPACE = {"parameters": [{"name": "temperature", "low": 0, "high": 1, "unit": "K"}]}


class _Bare(BasePolicy):
    """An author's method with none of the optional members: random evaluations."""

    method_id = "zz-contract-bare"
    family = "zz-contract"

    def __init__(self, space: Any, seed: Any) -> None:
        super().__init__(seed)
        self.space = space

    def _propose(self) -> Query:
        return self._new_evaluate(self.space.sample(1, self.rng)[0])

    def _observe(self, query: Query, answer: Any) -> None:
        pass

    def recommend(self) -> Any:
        return self.history[-1][0].x if self.history else None  # type: ignore[attr-defined]


class _Full(_Bare):
    """The same method overriding every optional member a study reads: it asks a label at 0.5,
    then measures 0.53 whatever the answer (the same setting to it: ``same_point`` 0.05, where
    the expert family's is 0.01), then random settings."""

    method_id = "zz-contract-full"
    accepts_labels = True
    same_point = 0.05

    def __init__(self, space: Any, seed: Any) -> None:
        super().__init__(space, seed)
        self.horizon = 6
        self.labels_given = 0

    def _propose(self) -> Query:
        if not self.history:
            return self._new_label([0.5])
        if len(self.history) == 1:
            return self._new_evaluate([0.53])
        return super()._propose()

    def add_labels(self, X: Any, accepted: Any) -> None:
        if self.pending is not None:
            raise QueryStateError("answer the open query before adding labels")
        self.labels_given += len(np.atleast_2d(X))

    def status_counts(self) -> dict[str, int]:
        return {"labels_given": self.labels_given}

    def proposed_by(self, query_id: int) -> str | None:
        return "random"

    def over_limit(self) -> list[dict[str, Any]]:
        return [
            {"query": q.id, "point": q.x.tolist(), "g": float(a), "h": 1.0}  # type: ignore[attr-defined]
            for q, a in self.history
            if q.kind == "evaluate" and float(a) > 1.0
        ]

    def stall_message(self, stall: Mapping[str, Any], unit: str = "") -> str:
        return f"no progress along {stall['axis']}, measured in {unit}"

    def predict(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        n = np.atleast_2d(np.asarray(X, dtype=np.float64)).shape[0]
        return np.full(n, 0.25), np.full(n, 0.1)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "stall": {"message": "no progress", "axis": "temperature"}}


class _BareSafe(BasePolicy):
    """An author's method of the safe family with none of the optional members (no ``state``,
    no ``certified``): random actions of the safe grid, measuring f and g."""

    method_id = "zz-contract-safe"
    family = "safe"
    accepts_measurements = True

    def __init__(self, space: Any, seed: Any) -> None:
        super().__init__(seed)
        self.space = space

    @property
    def measurement_outputs(self) -> tuple[str, ...]:
        return ("f", "g")

    def _propose(self) -> Query:
        i = int(self.rng.integers(self.space.points.shape[0]))
        return self._new_evaluate(self.space.points[i], i, outputs=("f", "g"))

    def _observe(self, query: Query, answer: Any) -> None:
        pass

    def recommend(self) -> Any:
        return self.history[-1][0].x if self.history else None  # type: ignore[attr-defined]


def _make(cls: type[BasePolicy]) -> Any:
    def factory(spec: PolicySpec, seed: Any) -> BasePolicy:
        return cls(spec.space, seed)  # type: ignore[call-arg]

    return factory


register_method("zz-contract-bare", "zz-contract", "test only: no optional member")(_make(_Bare))
register_method("zz-contract-full", "zz-contract", "test only: every optional member")(_make(_Full))
register_method("zz-contract-safe", "safe", "test only: a safe method without a safe set")(
    _make(_BareSafe)
)


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'lab.db'}"


def test_a_method_with_no_optional_member_runs_in_a_study(url: str) -> None:
    study = create_study("bare", "zz-contract-bare", SPACE, storage=url, seed=1)
    for i in range(3):
        q = study.ask()
        assert q.rejected_before is None
        study.tell(q.id, 2.0 + i)  # above any limit: the method has none
    st = study.status()
    assert st["counts"] == {"evaluations": 3}
    assert st["horizon"] is None and st["stuck"] is None and st["warnings"] == []
    assert "labels_given" not in st and "labels_asked" not in st
    assert study.over_limit_alarms() == []
    with pytest.raises(InvalidInputError) as refused:
        study.label({"temperature": 0.5}, True)
    assert str(refused.value) == (
        "method 'zz-contract-bare' does not take labels outside its own queries"
    )
    assert study.n_answered == 3  # nothing was stored
    drawn = pictures(study)
    assert set(drawn) == {"progress", "model"}
    assert "<svg" in drawn["model"] and "3 evaluations" in drawn["model"]
    assert "Posterior mean" not in drawn["model"]  # no model: the data only


def test_the_policy_refuses_labels_by_default_naming_the_method() -> None:
    policy = _Bare(None, 0)
    with pytest.raises(InvalidInputError, match="'zz-contract-bare' does not take labels"):
        policy.add_labels(np.array([[0.5]]), [True])
    with pytest.raises(NotImplementedError, match="'zz-contract-bare' has no model"):
        policy.predict(np.array([[0.5]]))


def test_a_method_overriding_the_optional_members_is_read_by_the_study(url: str) -> None:
    study = create_study("full", "zz-contract-full", SPACE, storage=url, seed=1)
    q = study.ask()
    assert q.kind == "label"
    study.tell(q.id, False)  # rejected
    q = study.ask()
    assert q.kind == "evaluate" and q.params == {"temperature": 0.53}
    assert q.rejected_before == (  # within same_point of the label; proposed_by's word
        "This setting was rejected at query 0; the method measures it anyway: it is a setting "
        "drawn at random."
    )
    study.tell(q.id, 1.5)  # above the method's limit h = 1
    alarms = study.over_limit_alarms()
    assert len(alarms) == 1 and "query 1: measured" in alarms[0] and "h = 1" in alarms[0]
    study.label({"temperature": 0.9}, True)  # taken: accepts_labels, add_labels
    st = study.status()
    assert st["labels_given"] == 1  # status_counts
    assert st["counts"]["labels"] == 2
    assert st["horizon"] == {"value": 6, "source": "default", "left": 6 - st["iteration"]}
    assert (
        st["stuck"] is not None and "no progress along temperature, measured in K" in (st["stuck"])
    )
    assert "Posterior mean from 0.25 to 0.25" in pictures(study)["model"]  # predict


def test_a_safe_method_without_a_safe_set_draws_its_pictures(url: str) -> None:
    space = {
        "parameters": [
            {"name": "dose", "low": 0, "high": 1, "grid": 4},
            {"name": "timing", "low": 0, "high": 1, "grid": 3},
        ],
        "monotone": "dose",
        "h": 1.0,
    }
    study = create_study("safe", "zz-contract-safe", space, storage=url, seed=1)
    for i in range(2):
        q = study.ask()
        study.tell(q.id, {"f": 0.1 * i, "g": 0.5})
    assert study.over_limit_alarms() == []
    drawn = pictures(study)
    assert "safe space (no posterior yet)" in drawn["model"]  # no state(): the data only
    assert "<svg" in drawn["growth"]  # no certified set: nothing replayed, no failure


def test_a_method_writing_add_labels_takes_labels_unless_it_says_otherwise() -> None:
    """Before the contract declared ``accepts_labels``, a study gave labels to any method with
    an ``add_labels``: a class that writes one and says nothing of the flag still takes them;
    one that says False, or inherits the default, does not."""

    class Writes(_Bare):
        def add_labels(self, X: Any, accepted: Any) -> None:
            pass

    class SaysNo(_Bare):
        accepts_labels = False

        def add_labels(self, X: Any, accepted: Any) -> None:
            pass

    class Inherits(Writes):
        pass

    assert Writes.accepts_labels and Inherits.accepts_labels
    assert not SaysNo.accepts_labels and not _Bare.accepts_labels
