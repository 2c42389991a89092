"""The initial labels of the expert family on a finite candidate set: the labels the policy
fills up (``n_initial_labels`` minus those the user gave) are asked at candidates nobody has
labelled yet, within ``SAME_POINT``: a person who brought labels from an earlier session (or
gave one with ``study label``) is never asked about one of those points again, nor twice about
one random point."""

from __future__ import annotations

import numpy as np
import pytest

from boloop.algorithms.expert import COBOHL, COBOL
from boloop.algorithms.expert.cobol import SAME_POINT
from boloop.queries import Label
from boloop.spaces import CandidateSet
from boloop.study import create_study


def _initial_label_points(pol) -> list[np.ndarray]:
    """Answer the initial labels the policy asks (accept the left half); their points."""
    asked = []
    q = pol.ask()
    while isinstance(q, Label):
        assert q.initial
        asked.append(np.asarray(q.x, dtype=float))
        pol.tell(q.id, bool(q.x[0] < 0.5))
        q = pol.ask()
    return asked


def _min_gap(space: CandidateSet, points: list[np.ndarray]) -> float:
    U = space.to_unit(np.array(points))
    return min(float(np.max(np.abs(U[i] - U[j]))) for i in range(len(U)) for j in range(i))


@pytest.mark.parametrize("cls", [COBOL, COBOHL])
@pytest.mark.parametrize("seed", range(6))
def test_the_fill_up_asks_only_points_not_labelled(cls, seed):
    """12 candidates, 6 labelled already, 10 initial labels: the 4 asked are 4 other candidates
    (drawn with replacement from all 12 before, they repeated a labelled point or one another
    in five of these six seeds)."""
    space = CandidateSet(np.linspace(0.0, 1.0, 12)[:, None], names=["dose"])
    given = space.points[[0, 2, 4, 6, 8, 10]]
    pol = cls(space, seed, n_initial_labels=10, initial_labels=(given, [True] * 3 + [False] * 3))
    asked = _initial_label_points(pol)
    assert len(asked) == 4
    assert _min_gap(space, [*given, *asked]) > SAME_POINT


def test_a_set_smaller_than_the_initial_labels_is_labelled_once_each():
    """8 options and 10 initial labels: each option is asked about once, then f is measured."""
    space = CandidateSet([[i / 7, ((3 * i) % 8) / 7] for i in range(8)], names=["a", "b"])
    pol = COBOL(space, 0, n_initial_labels=10)
    asked = _initial_label_points(pol)
    assert len(asked) == 8 and _min_gap(space, asked) > SAME_POINT
    assert pol.pending is not None and pol.pending.kind == "evaluate"


def test_a_study_does_not_ask_about_a_point_labelled_with_study_label(tmp_path):
    """The session of the report: labels given with Study.label before the first ask are not
    asked about again among the initial labels."""
    space = {"parameters": [{"name": "dose", "low": 0.0, "high": 1.0, "grid": 9}]}
    study = create_study("e", "cobol", space, storage=f"sqlite:///{tmp_path / 'e.db'}", seed=1)
    given = [0.0, 0.25, 0.5, 0.625, 0.75, 1.0]
    for d in given:
        study.label({"dose": d}, d < 0.6)
    asked = []
    q = study.ask()
    while q.kind == "label":
        asked.append(q.params["dose"])
        study.tell(q.id, q.params["dose"] < 0.6)
        q = study.ask()
    assert len(asked) == 3  # 9 grid points: 9 initial labels at most, 6 given
    assert sorted(asked) == [0.125, 0.375, 0.875]
