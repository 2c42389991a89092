"""A study in its user's parameter names: :class:`StudyQuery` (a query with its points named,
its units and what is measured), and :class:`StudyParameters`, which names the policy's points
and recommendations (grid values as the space file defines them), gives each parameter's unit
and says what is measured.

:class:`StudyParameters` is a mixin of :class:`~boloop.study.core.Study`, as
:class:`~boloop.study.replay.StudyReplay` and :class:`~boloop.study.snapshots.StudySnapshots`
are: it reads the study's own state (its space, table labels and configuration).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from boloop.queries import Compare, Evaluate, Label, Query
from boloop.recommendations import BestPoint, SafeRecommendation
from boloop.spaces import Space, params_text
from boloop.study.measured import Measured, what_to_measure
from boloop.study.measured import measured as measured_values
from boloop.study.space_file import defined_params, defined_values, point_to_params

__all__ = ["CALIBRATION_NOTE", "StudyParameters", "StudyQuery"]

CALIBRATION_NOTE = (
    "this point is measured next whatever you answer: your answer, set against the measured "
    "value, tells the method how far to follow your judgement"
)


@dataclass(frozen=True)

class StudyQuery:
    """A query in the user's parameter names.

    ``params`` (Evaluate, Label) or ``a`` and ``b`` (Compare) map parameter names to values;
    ``outputs`` names the values an Evaluate answer must contain (empty: one number); ``label``,
    ``a_label``, ``b_label`` name options of a CSV table. ``query`` is the policy's query.
    ``calibration`` marks a label whose point is measured whatever the answer
    (:class:`boloop.queries.Label`).
    """

    id: int
    kind: str
    query: Query
    params: dict[str, float] | None = None
    a: dict[str, float] | None = None
    b: dict[str, float] | None = None
    outputs: tuple[str, ...] = ()
    label: str | None = None
    a_label: str | None = None
    b_label: str | None = None
    calibration: bool = False
    #: what is measured, in words (:meth:`Study.measured`): one entry per output of an
    #: evaluation (or one for its single value), with the name and unit the space file's
    #: ``[measurement]`` gives (None where it gives none); empty for labels and duels
    measured: tuple[Measured, ...] = ()
    #: each parameter's unit (:meth:`Study.units`), written after its value by :meth:`prompt`;
    #: not part of :meth:`to_dict` (the JSON of a query is as it was)
    units: Mapping[str, str] = field(default_factory=dict)
    #: an evaluation at a setting the expert rejected: why it is measured anyway, in one
    #: sentence (:meth:`Study.ask`; the expert family); written by :meth:`prompt`, and in
    #: :meth:`to_dict` (null when there is none) so that a program learns it as a person does
    rejected_before: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The query as JSON values: ``id``, ``kind``, ``params`` (or ``a``, ``b``), ``label``
        (or ``a_label``, ``b_label``) of a table's option, ``calibration`` (a label measured
        whatever the answer), ``outputs`` (an evaluation) and ``rejected_before`` (always
        there: the sentence, or None). What the API's ``ask``, ``boloop study ask --json`` and
        the status's ``open_query`` give."""
        d: dict[str, Any] = {"id": self.id, "kind": self.kind}
        if self.kind == "compare":
            d["a"] = self.a
            d["b"] = self.b
            if self.a_label is not None:
                d["a_label"], d["b_label"] = self.a_label, self.b_label
        else:
            d["params"] = self.params
            if self.label is not None:
                d["label"] = self.label
        if self.calibration:
            d["calibration"] = True
        if self.kind == "evaluate":
            d["outputs"] = list(self.outputs)
        d["rejected_before"] = self.rejected_before
        return d

    def prompt(self) -> str:
        """A one-paragraph description for a person."""

        def fmt(p: dict[str, float] | None, lab: str | None) -> str:
            body = params_text(p or {}, self.units)
            return f"{lab} ({body})" if lab else body

        if self.kind == "compare":
            return (
                f"query {self.id}: which is better?\n  A: {fmt(self.a, self.a_label)}\n"
                f"  B: {fmt(self.b, self.b_label)}"
            )
        if self.kind == "label":
            text = f"query {self.id}: accept or reject {fmt(self.params, self.label)}?"
            if self.calibration:
                text += f"\n  ({CALIBRATION_NOTE})"
            return text
        what = what_to_measure(self.measured, labelled=True)
        text = f"query {self.id}: measure {what} at {fmt(self.params, self.label)}"
        if self.rejected_before:
            text += f"\n  ({self.rejected_before})"
        return text


class StudyParameters:
    """The parameter names of :class:`~boloop.study.core.Study` (a mixin: it works on the study's
    own state). What it needs from the study is declared below (annotations only: no attribute
    is created here)."""

    # set by Study.__init__ and Study._set_problem
    config: dict[str, Any]
    problem: Any
    space: Space
    _labels: Sequence[str] | None  # the names of a table's options, or None
    _defined: tuple[Space, list[dict[float, float]] | None] | None  # _defined_values' cache

    def units(self) -> dict[str, str]:
        """Each parameter's unit, by name, as the space file gives it (``unit = "mg"``): shown
        to people after the parameter's values (the web page, the question of ``boloop study
        ask`` and ``run``, the pictures' axes and tooltips), never read by the method. Empty
        where the space gives none (a table of options, a registered problem)."""
        space = self.config.get("space") or {}
        return {
            str(p["name"]): str(p["unit"]) for p in space.get("parameters") or [] if p.get("unit")
        }

    def measured(self) -> list[Measured]:
        """What is measured at each query, in words (:mod:`boloop.study.measured`): one entry
        per output (the safe family's ``f`` and ``g``) or one for the measured value; names and
        units come from the space file's ``[measurement]`` (None where it gives none)."""
        outputs = tuple((getattr(self.problem, "settings", None) or {}).get("outputs") or ())
        table = self.config.get("measurement") or (self.config.get("space") or {}).get(
            "measurement"
        )
        return measured_values(table, outputs)

    def _named(self, rec: Any) -> Any:
        d = self.space.dim
        if type(rec) is BestPoint:  # the point in parameter names (None before any data)
            return self._named(rec.point)
        if isinstance(rec, SafeRecommendation):
            # by field, not by shape: best_s and boundary_s hold one level of s per x row (n_x
            # of them, which may be the space's dimension), the action is a point
            return {
                "point": None if rec.point is None else self._params(rec.point),
                "index": self._named(rec.index),
                "best_s": self._levels(rec.best_s),
                "best_s_index": (
                    None if rec.best_s_index is None else np.asarray(rec.best_s_index).tolist()
                ),
                "boundary_s": self._levels(rec.boundary_s),
            }
        if hasattr(rec, "upper") and hasattr(rec, "threshold") and hasattr(rec, "points"):
            # a level-set estimate (H_t, L_t): the points of the estimated upper set
            # (the estimate's own t is left out: status shows the study's one iteration count)
            out: dict[str, Any] = {"threshold": float(rec.threshold)}
            if rec.points is not None and rec.upper is not None:
                upper = np.asarray(rec.upper, dtype=bool)
                out["n_upper"] = int(upper.sum())
                out["n_candidates"] = int(upper.size)
                out["upper"] = [self._params(p) for p in rec.points[upper]]
            return out
        if dataclasses.is_dataclass(rec) and not isinstance(rec, type):
            return {
                f.name: self._named(getattr(rec, f.name))
                for f in dataclasses.fields(rec)
                if not callable(getattr(rec, f.name))
            }
        if isinstance(rec, Query):
            return self._wrap(rec).to_dict()
        if isinstance(rec, np.ndarray):
            if rec.ndim == 1 and rec.shape[0] == d:
                return self._params(rec)
            if rec.ndim == 2 and rec.shape[1] == d:
                return [self._params(r) for r in rec]
            return rec.tolist()
        if isinstance(rec, Mapping):
            return {str(k): self._named(v) for k, v in rec.items()}
        if isinstance(rec, list | tuple):
            return [self._named(v) for v in rec]
        if isinstance(rec, np.generic):
            return rec.item()
        return rec

    def _levels(self, s: np.ndarray | None) -> list[float] | None:
        """Levels of the monotone parameter (a safe recommendation's ``best_s``, ``boundary_s``:
        one per x row) as the space file defines them, like the points' values."""
        if s is None:
            return None
        table = (self._defined_values() or [{}])[0]
        return [table.get(v, v) for v in np.asarray(s, dtype=np.float64).reshape(-1).tolist()]

    def _params(self, x: Any) -> dict[str, float]:
        """A point (d,) of the space in parameter names as people read it: its grid values as
        the space file defines them (183.333333333333, not linspace's 183.33333333333334:
        :func:`~boloop.study.space_file.defined_values`), the same values the CSV export
        writes; other values (a box's coordinates) as they are. Only what is shown: the log
        keeps the points as they were computed."""
        return defined_params(self.space, point_to_params(self.space, x), self._defined_values())

    def _defined_values(self) -> list[dict[float, float]] | None:
        """:func:`~boloop.study.space_file.defined_values` of the space, computed once."""
        if self._defined is None or self._defined[0] is not self.space:
            self._defined = (self.space, defined_values(self.space))
        return self._defined[1]

    def _label(self, index: int | None) -> str | None:
        if self._labels is None or index is None or not 0 <= index < len(self._labels):
            return None
        return self._labels[index]

    def _wrap(self, q: Query) -> StudyQuery:
        if isinstance(q, Compare):
            return StudyQuery(
                id=q.id,
                kind=q.kind,
                query=q,
                a=self._params(q.a),
                b=self._params(q.b),
                a_label=self._label(q.a_index),
                b_label=self._label(q.b_index),
                units=self.units(),
            )
        assert isinstance(q, Evaluate | Label)
        return StudyQuery(
            id=q.id,
            kind=q.kind,
            query=q,
            params=self._params(q.x),
            outputs=tuple(getattr(q, "outputs", ())),
            label=self._label(q.index),
            calibration=bool(getattr(q, "calibration", False)),
            measured=tuple(self.measured()) if q.kind == "evaluate" else (),
            units=self.units(),
        )
