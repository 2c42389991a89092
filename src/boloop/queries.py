"""The ask/tell vocabulary shared by every family.

Queries (each carries an integer ``id`` issued by the policy):

* :class:`Evaluate` ``(x)`` -- measure the black box at ``x``. Answer: a float, or a mapping of
  named floats when the problem measures several quantities (``{"f": 1.2, "g": 0.3}`` for the safe
  family; the names the query needs are in ``Evaluate.outputs``).
* :class:`Label` ``(x)`` -- an expert accepts or rejects ``x`` before it is evaluated. Answer: a
  bool, ``True`` for accept.
* :class:`Compare` ``(a, b)`` -- a person says which of two options is better. Answer: the index of
  the preferred option, ``0`` for ``a`` and ``1`` for ``b``.

A policy is built from a :class:`PolicySpec` (method id, family, space, settings, seed, options)
by :func:`boloop.algorithms.registry.build_policy`; simulations, the bench and studies make the
spec, so a policy never sees the benchmark problem (its true function) it may be run against.

A :class:`Policy` asks and is told. :class:`BasePolicy` implements the bookkeeping once: query ids,
the single open query (``ask`` returns it again until it is answered), answer validation, history,
and the iteration count used by budgets. Nothing in a policy knows whether a person or a simulator
answers.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

import numpy as np

from boloop._validation import as_rng
from boloop.errors import (
    AnswerTypeError,
    InvalidInputError,
    NoMoreQueriesError,
    OutOfSpaceError,
    ProposalError,
    QueryStateError,
)
from boloop.spaces import Box, CandidateSet, SafeSpace, points_at

__all__ = [
    "Query",
    "Evaluate",
    "Label",
    "Compare",
    "Answer",
    "Policy",
    "PolicySpec",
    "BasePolicy",
    "query_from_dict",
    "check_query",
]

Answer = float | Mapping[str, float] | bool | int
_Q = TypeVar("_Q", bound="Query")


def _vec(x: Any, name: str) -> np.ndarray:
    arr = np.array(x, dtype=np.float64).reshape(-1)
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} must be a non-empty finite vector, got {x!r}")
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True, eq=False)
class Query:
    """Base of the three query kinds. ``id`` is unique within a policy.

    ``initial`` is ``True`` for a query of the policy's initial design (the random or seed
    evaluations, the initial labels) that the paper does not count as an iteration and that no
    regret includes; metric trackers read it here instead of each family's bookkeeping.
    """

    id: int
    initial: bool = field(default=False, kw_only=True)
    kind: ClassVar[str] = "query"

    def validate_answer(self, answer: Any) -> Any:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def _with_initial(self, d: dict[str, Any]) -> dict[str, Any]:
        if self.initial:
            d["initial"] = True
        return d

    def __eq__(self, other: object) -> bool:
        """Same kind, id and points (``initial`` and a label's ``calibration`` are bookkeeping,
        not part of the question, so a query stored before a flag existed still equals its
        replay)."""
        if not isinstance(other, Query) or other.kind != self.kind:
            return NotImplemented
        a, b = self.to_dict(), other.to_dict()
        for flag in _BOOKKEEPING:
            a.pop(flag, None)
            b.pop(flag, None)
        return _dict_equal(a, b)

    def __hash__(self) -> int:
        return hash((self.kind, self.id))


#: Flags of a query's dict that describe it without being part of the question (``__eq__``).
_BOOKKEEPING = ("initial", "calibration")

#: Names under which a single measured value may be given as a mapping (``{"f": 0.7}``).
SINGLE_VALUE_NAMES = ("f", "y", "value")


@dataclass(frozen=True, eq=False)
class Evaluate(Query):
    """Measure the black box at ``x`` (shape (d,)).

    ``index`` is the candidate's index when the space is finite. ``outputs`` names the quantities
    the answer must contain when it is a mapping (empty: a single float).
    """

    x: np.ndarray = field(default_factory=lambda: np.zeros(0))
    index: int | None = None
    outputs: tuple[str, ...] = ()
    kind: ClassVar[str] = "evaluate"

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", _vec(self.x, "x"))
        object.__setattr__(self, "outputs", tuple(self.outputs))

    def validate_answer(self, answer: Any) -> float | dict[str, float]:
        who = _who(self.id)
        if self.outputs:
            if not isinstance(answer, Mapping):
                raise AnswerTypeError(
                    f"{who} needs named values {list(self.outputs)}, got {answer!r}"
                )
            missing = [k for k in self.outputs if k not in answer]
            if missing:
                raise AnswerTypeError(f"{who}: answer is missing {missing}")
            extra = [k for k in answer if k not in self.outputs]
            if extra:
                raise AnswerTypeError(f"{who}: answer has unknown names {extra}")
            return {k: _finite_float(answer[k], f"answer[{k!r}]", self.id) for k in self.outputs}
        if isinstance(answer, Mapping):
            # one value: a number, or one named by a word that means "the measured value" (any
            # other name is a typo or another family's output, e.g. a parameter or g)
            if len(answer) == 1 and next(iter(answer)) in SINGLE_VALUE_NAMES:
                (value,) = answer.values()
                return _finite_float(value, "answer", self.id)
            raise AnswerTypeError(
                f"{who} measures one value: give a number (or name it "
                f"{' / '.join(SINGLE_VALUE_NAMES)}), got {answer!r}"
            )
        return _finite_float(answer, "answer", self.id)

    def to_dict(self) -> dict[str, Any]:
        return self._with_initial(
            {
                "kind": self.kind,
                "id": self.id,
                "x": self.x.tolist(),
                "index": self.index,
                "outputs": list(self.outputs),
            }
        )


@dataclass(frozen=True, eq=False)
class Label(Query):
    """Ask an expert to accept (``True``) or reject (``False``) the point ``x`` (shape (d,)).

    ``calibration=True`` marks a label whose answer does not change what is measured next:
    the policy measures ``x`` whatever the answer, and the answer, set against the measured
    value, tells it how far the expert's judgement agrees with the data (COBOL's
    ``agreement_gate``). A person should be told so (the study's prompt and page say it)."""

    x: np.ndarray = field(default_factory=lambda: np.zeros(0))
    index: int | None = None
    calibration: bool = False
    kind: ClassVar[str] = "label"

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", _vec(self.x, "x"))

    def validate_answer(self, answer: Any) -> bool:
        if isinstance(answer, bool | np.bool_):
            return bool(answer)
        raise AnswerTypeError(f"query {self.id} (label) needs a bool accept/reject, got {answer!r}")

    def to_dict(self) -> dict[str, Any]:
        d = {"kind": self.kind, "id": self.id, "x": self.x.tolist(), "index": self.index}
        if self.calibration:
            d["calibration"] = True
        return self._with_initial(d)


@dataclass(frozen=True, eq=False)
class Compare(Query):
    """Ask which of ``a`` and ``b`` (each shape (d,)) is better. Answer 0 for ``a``, 1 for ``b``."""

    a: np.ndarray = field(default_factory=lambda: np.zeros(0))
    b: np.ndarray = field(default_factory=lambda: np.zeros(0))
    a_index: int | None = None
    b_index: int | None = None
    kind: ClassVar[str] = "compare"

    def __post_init__(self) -> None:
        object.__setattr__(self, "a", _vec(self.a, "a"))
        object.__setattr__(self, "b", _vec(self.b, "b"))

    def validate_answer(self, answer: Any) -> int:
        if isinstance(answer, bool | np.bool_) or not isinstance(answer, numbers.Integral):
            raise AnswerTypeError(
                f"query {self.id} (compare) needs 0 (first preferred) or 1 (second), got {answer!r}"
            )
        if int(answer) not in (0, 1):
            raise AnswerTypeError(f"query {self.id} (compare) needs 0 or 1, got {answer!r}")
        return int(answer)

    def to_dict(self) -> dict[str, Any]:
        return self._with_initial(
            {
                "kind": self.kind,
                "id": self.id,
                "a": self.a.tolist(),
                "b": self.b.tolist(),
                "a_index": self.a_index,
                "b_index": self.b_index,
            }
        )


_KINDS: dict[str, type[Query]] = {"evaluate": Evaluate, "label": Label, "compare": Compare}


def query_from_dict(d: Mapping[str, Any]) -> Query:
    """Inverse of ``Query.to_dict`` (used by storage)."""
    d = dict(d)
    kind = d.pop("kind", None)
    if kind not in _KINDS:
        raise InvalidInputError(f"unknown query kind {kind!r}; valid: {sorted(_KINDS)}")
    if "outputs" in d:
        d["outputs"] = tuple(d["outputs"])
    return _KINDS[kind](**d)


def _who(qid: int) -> str:
    """How a message names the answer's query: measurements given outside the policy's own
    queries (:meth:`BasePolicy.observe`) are checked as an Evaluate of id -1, never issued."""
    return f"query {qid}" if qid >= 0 else "measurement"


def _finite_float(value: Any, name: str, qid: int) -> float:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise AnswerTypeError(f"{_who(qid)}: {name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise AnswerTypeError(f"{_who(qid)}: {name} must be finite, got {value!r}")
    return v


def _dict_equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_dict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_dict_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _query_points(query: Query) -> list[tuple[str, np.ndarray, int | None]]:
    """The points a query names, each with its name and candidate index."""
    if isinstance(query, Compare):
        return [("a", query.a, query.a_index), ("b", query.b, query.b_index)]
    return [("x", query.x, query.index)]  # type: ignore[attr-defined]


def check_query(query: Any, space: Any, method: str = "the policy") -> Query:
    """Refuse a proposed query that does not fit ``space``, the space the policy was built on.

    Called by :func:`boloop.simulate.simulate` and a study's ``ask`` on every new query, so that a
    method's bug (its own ``_propose``, ``docs/methods.md``) is an error naming it, not a
    measurement taken and stored somewhere the user never allowed. Checked: ``query`` is a
    :class:`Query`; each of its points has the space's dimension and lies in it (inside the
    bounds of a :class:`~boloop.spaces.Box`, within its relative tolerance; on the grid or table
    of a finite space); a candidate index given with a point of a finite space is in range and
    names that point. An index given in a :class:`~boloop.spaces.Box` (a policy's own
    candidates drawn from it) is the policy's and is not checked. Returns ``query``; raises
    :class:`~boloop.errors.ProposalError`.
    """
    if not isinstance(query, Query):
        raise ProposalError(
            f"{method} proposed {type(query).__name__} {query!r}, not a query: its _propose must "
            "return self._new_evaluate(...), self._new_label(...) or self._new_compare(...)"
        )
    if space is None:
        return query
    dim = int(space.dim)
    what = f"{method} proposed query {query.id} ({query.kind})"
    for name, point, index in _query_points(query):
        if point.shape != (dim,):
            raise ProposalError(
                f"{what} with {name} of {point.size} coordinates {point.tolist()}; the space "
                f"has {dim} ({', '.join(map(str, getattr(space, 'names', ())))})"
            )
        if isinstance(space, Box):
            if not bool(space.contains(point[None, :])[0]):
                raise ProposalError(
                    f"{what} with {name} = {point.tolist()}, outside the space's bounds "
                    f"{space.bounds.tolist()}"
                )
            continue
        if index is not None:
            if not 0 <= index < space.n:
                raise ProposalError(
                    f"{what} with {name}'s candidate index {index}; the space has {space.n} "
                    f"candidates (indices 0 to {space.n - 1})"
                )
            at = space.points[index] if isinstance(space, CandidateSet) else points_at(space, [index])[0]
            tol = np.asarray(space._tolerances(), dtype=np.float64)
            if np.all(np.abs(at - point) <= tol):
                continue
            raise ProposalError(
                f"{what} with {name} = {point.tolist()} but candidate index {index}, which is "
                f"the point {at.tolist()}: a query's index must name its point"
            )
        if int(space.index_of(point[None, :])[0]) < 0:
            raise ProposalError(f"{what} off the space's candidates: {space.describe_miss(point)}")
    return query


@dataclass(frozen=True)
class PolicySpec:
    """Everything a policy is built from, and nothing else.

    Attributes
    ----------
    method:
        Registry id of the method (``"randomized-straddle"``, ``"mr-lpf"``...).
    family:
        ``"levelset"``, ``"preference"``, ``"safe"`` or ``"expert"``: selects the method's entry.
    space:
        The :class:`boloop.spaces.Box`, :class:`CandidateSet` or :class:`SafeSpace` to search.
    settings:
        Named settings the methods read as defaults (``threshold``, ``kernel``,
        ``noise_variance``, ``budget``, ``n_initial``...): a paper's settings for a benchmark
        problem, a user's for a study. Plain names, never a method id.
    seed:
        The policy's seed (an int, a Generator or ``None``).
    options:
        Method options; validated against the method's table (:class:`OptionError` otherwise)
        and given precedence over ``settings``.
    source:
        Where the settings came from (a problem id, a space file), for messages only.
    """

    method: str
    family: str
    space: Any
    settings: Mapping[str, Any] = field(default_factory=dict)
    seed: Any = 0
    options: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""


@runtime_checkable
class Policy(Protocol):
    """What every policy offers. Deterministic given its seed and the answers it was told."""

    def ask(self) -> Query: ...

    def tell(self, query_id: int, answer: Any) -> None: ...

    def recommend(self) -> Any:
        """The family's typed recommendation (a level-set policy's also takes
        ``final_update``: ``docs/methods.md``)."""
        ...

    def describe(self) -> dict[str, Any]: ...


class BasePolicy(ABC):
    """Bookkeeping shared by all policies; subclasses implement the algorithm.

    The authors' API (``docs/methods.md``, "Writing your own method"): users call ``ask``,
    ``tell``, ``observe`` and ``recommend``; a method's author subclasses this class and writes the
    protected hooks, whose names are stable and used by every method of the library:

    * :meth:`_propose` builds the next query with :meth:`_new_evaluate`, :meth:`_new_label` or
      :meth:`_new_compare` (wrapped in :meth:`_mark_initial` for the initial design);
    * :meth:`_observe` updates the models with a validated answer (it must leave the policy
      unchanged if it raises);
    * :meth:`recommend` returns the family's typed recommendation; a level-set policy's takes
      ``final_update`` (the metric tracker calls ``recommend(final_update=True)``; a policy
      without the keyword is refused when it is built,
      :data:`boloop.algorithms.registry.RECOMMEND_KEYWORDS`);
    * optionally :meth:`_no_more_queries` (why the method has no next query, once it has none:
      a horizon used up, every candidate measured), :meth:`_iteration_done` (return ``not
      query.initial`` so that the initial design does not use up the budget),
      :meth:`describe`, and, with ``accepts_measurements = True``,
      :meth:`_add_measurements`.

    What a study, its pictures and its page read of a method beyond ask/tell is declared here
    too, each with a neutral default that a family overrides where its paper has the thing
    (``docs/methods.md``, "Writing your own method"): :meth:`predict` (the model picture),
    :meth:`status_counts` (counts shown beside the answers), :attr:`horizon` (a planned number
    of answers), ``accepts_labels`` with :meth:`add_labels` (an expert's labels given outside the
    queries), :attr:`same_point` with :meth:`proposed_by` (why a rejected setting is measured
    anyway), :meth:`over_limit` and :meth:`stall_message` (a safety limit's alarms, a stall in
    the person's units), :meth:`state` and :attr:`certified` (a safe set's pictures).

    Every random number comes from ``self.rng``, made from the seed by ``__init__``.

    ``iteration`` counts completed iterations the way the family's paper counts its budget (by
    default every answered query completes one); ``simulate`` stops when it reaches the budget.
    """

    #: method id of the registry (``"randomized-straddle"``, ``"mr-lpf"``...)
    method_id: ClassVar[str] = ""
    #: family (``"levelset"``, ``"preference"``, ``"safe"``, ``"expert"``)
    family: ClassVar[str] = ""
    #: whether :meth:`observe` takes measurements the user made on their own
    accepts_measurements: ClassVar[bool] = False
    #: what :attr:`iteration` counts, as the family's paper counts its budget (shown by studies)
    iteration_meaning: ClassVar[str] = "the method's own count: one per answered query"
    #: what :meth:`recommend` gives, in one sentence (shown by studies)
    recommendation_meaning: ClassVar[str] = ""
    #: the answer counts a study always shows for this method (zero included): some of
    #: ``evaluations``, ``labels``, ``duels``
    answer_counts: ClassVar[tuple[str, ...]] = ("evaluations",)
    #: whether :meth:`add_labels` takes an expert's accept/reject labels given outside the
    #: policy's own queries (the expert family's COBOL)
    accepts_labels: ClassVar[bool] = False
    #: two points are the same setting to the method's labels when they differ by at most this
    #: much in every unit-cube coordinate (the expert family's ``SAME_POINT``); None: the method
    #: does not tie labels to the settings it measures, and a study says nothing of a rejected
    #: setting measured anyway (:meth:`proposed_by`)
    same_point: ClassVar[float | None] = None
    #: the number of answers the method plans for, when it plans for one (MR-LPF's horizon
    #: ``T``, whose rounds are scheduled for exactly ``T`` duels); None: the method plans for
    #: none. Shown by a study's status with how many answers are left.
    horizon: int | None = None
    #: the certified safe boundary of a method that certifies a safe set: per setting of the
    #: other parameters, the grid index of the highest certified level of the monotone one
    #: (M-SafeOpt's ``s_t^{(x)}``, eq. 14), an integer array (n_x,); None for a method that
    #: certifies nothing. A study draws its growth when the family declares ``growth_picture``.
    certified: np.ndarray | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A method class that writes its own :meth:`add_labels` and says nothing of
        :attr:`accepts_labels` takes labels (before the contract declared the flag, a study gave
        labels to any method with an ``add_labels``)."""
        super().__init_subclass__(**kwargs)
        if "add_labels" in cls.__dict__ and "accepts_labels" not in cls.__dict__:
            cls.accepts_labels = True

    def __init__(self, seed: int | np.random.Generator | None = None) -> None:
        self.seed = seed
        self.rng = as_rng(seed)
        self.iteration = 0
        self.history: list[tuple[Query, Any]] = []
        self._next_id = 0
        self._pending: Query | None = None
        self._answered: set[int] = set()

    # -- the protocol ---------------------------------------------------------------------------
    def ask(self) -> Query:
        """The next query; the same open query again while it is unanswered. Raises
        :class:`~boloop.errors.NoMoreQueriesError` (a :class:`~boloop.errors.QueryStateError`)
        once the method asks no more (:meth:`asks_no_more`), changing nothing."""
        if self._pending is None:
            reason = self.asks_no_more()
            if reason is not None:
                raise NoMoreQueriesError(reason)
            self._pending = check_query(self._propose(), None, f"method {self.method_id!r}")
        return self._pending

    def asks_no_more(self) -> str | None:
        """None while the method has a query to ask (and while one is open); once it has none,
        why, in one clause that follows "the method asks no more: " (MR-LPF: ``"all T = 40
        duels of its horizon are answered, and its recommendation is final"``). Then
        :meth:`ask` raises :class:`~boloop.errors.NoMoreQueriesError` with it, and a study says
        it in its status, its ``run``, its page and its API alike. A method's author writes
        :meth:`_no_more_queries`."""
        return None if self._pending is not None else self._no_more_queries()

    def tell(self, query_id: int | Query, answer: Any) -> None:
        """Give the answer to query ``query_id`` (its id, or the query :meth:`ask` returned).
        Raises and changes nothing on bad input."""
        if isinstance(query_id, Query):
            query_id = query_id.id
        if isinstance(query_id, bool) or not isinstance(query_id, numbers.Integral):
            raise AnswerTypeError(f"query_id must be an integer, got {query_id!r}")
        qid = int(query_id)
        if qid in self._answered:
            raise QueryStateError(f"query {qid} was already answered")
        if self._pending is None or self._pending.id != qid:
            open_id = None if self._pending is None else self._pending.id
            raise QueryStateError(f"query {qid} was never asked (open query: {open_id})")
        query = self._pending
        value = query.validate_answer(answer)
        self._observe(query, value)  # may raise: nothing above changed state
        self._pending = None
        self._answered.add(qid)
        self.history.append((query, value))
        if self._iteration_done(query, value):
            self.iteration += 1

    @property
    def measurement_outputs(self) -> tuple[str, ...]:
        """Names of the values one measurement holds (the ``outputs`` of the policy's Evaluate
        queries, ``("f", "g")`` in the safe family); empty: a single float."""
        return ()

    def check_measurements(self, points: Any, values: Any) -> tuple[np.ndarray, list[Any]]:
        """Validate measurements for :meth:`observe` without changing anything: ``points`` (k, d)
        (or one point (d,)), ``values`` k answers as :meth:`tell` takes them for an Evaluate
        query. Returns the points (k, d) -- in a finite space the grid's own points that they name
        (:meth:`~boloop.spaces.CandidateSet.index_of`: a grid value also as a person writes it
        with fewer digits), so that a model is given, and records, 580/3 for a typed 193.33 --
        and the validated values. Raises
        :class:`~boloop.errors.InvalidInputError` (this method takes no measurements, shapes),
        :class:`~boloop.errors.OutOfSpaceError`, :class:`~boloop.errors.AnswerTypeError`."""
        if not self.accepts_measurements:
            raise InvalidInputError(
                f"method {self.method_id!r} does not take measurements outside its own queries; "
                "answer its queries with tell"
            )
        X = np.array(points, dtype=np.float64, ndmin=2)
        if X.ndim != 2 or X.shape[0] == 0:
            raise InvalidInputError(f"points must be (k, d) with k >= 1, got shape {X.shape}")
        vals = [values] if isinstance(values, Mapping) or np.ndim(values) == 0 else list(values)
        if len(vals) != X.shape[0]:
            raise InvalidInputError(f"{X.shape[0]} points but {len(vals)} values")
        space = getattr(self, "space", None)
        if space is not None and hasattr(space, "contains"):
            finite = isinstance(space, CandidateSet | SafeSpace)
            index = space.index_of(X) if finite else None
            inside = index >= 0 if index is not None else np.asarray(space.contains(X), dtype=bool)
            if not np.all(inside):
                bad = np.flatnonzero(~inside).tolist()
                describe = getattr(space, "describe_miss", None)
                if callable(describe):  # a finite space says which values are off it
                    which = "" if X.shape[0] == 1 else f"point {bad[0]}: "
                    raise OutOfSpaceError(which + describe(X[bad[0]]))
                raise OutOfSpaceError(f"points {bad} are outside the space")
            if index is not None:
                X = points_at(space, index)
        outputs = self.measurement_outputs
        checked = [
            Evaluate(id=-1, x=x, outputs=outputs).validate_answer(v) for x, v in zip(X, vals)
        ]
        return X, checked

    def observe(self, points: Any, values: Any) -> None:
        """Add measurements the user made on their own (earlier experiments, a point they chose):
        ``points`` (k, d) and ``values`` as :meth:`check_measurements` takes them.

        They update the models as answered Evaluate queries at the same points would, but they
        are not the policy's queries: no iteration, no history entry, no query id, and a metric
        tracker never sees them. Policies with ``accepts_measurements = False`` (preferences,
        whose data are duels) refuse. Bad input raises and changes nothing.
        """
        X, checked = self.check_measurements(points, values)
        self._add_measurements(X, checked)

    def add_labels(self, X: Any, accepted: Any) -> None:
        """Add labels an expert gave outside the policy's queries: ``X`` (k, d) in the space,
        ``accepted`` (k,) booleans (``True`` = accept, as a :class:`Label` answer); what a
        study's ``label`` gives the method. Policies with ``accepts_labels = False`` (the
        default) refuse with :class:`~boloop.errors.InvalidInputError`; one that sets it
        ``True`` overrides this, changing nothing when it raises."""
        raise InvalidInputError(
            f"method {self.method_id!r} does not take labels outside its own queries; answer "
            "its queries with tell"
        )

    def predict(self, X: Any) -> Any:
        """The method's model at the points ``X`` (m, d), in the space's coordinates, without
        side effects: ``(mean, std)`` arrays (m,) of the modelled value, or a mapping holding
        them as ``f_mean`` and ``f_std`` (the expert family, whose ``g`` is the expert's
        latent judgement, drawn when the family declares ``expert_belief``). A study's model
        picture draws it and a level-set status counts the undecided points with it. Raises
        :class:`NotImplementedError` (the default: a method without such a model; the picture
        then draws the data only) or a :class:`~boloop.errors.BoloopError` (no data yet)."""
        raise NotImplementedError(f"method {self.method_id!r} has no model to predict with")

    def status_counts(self) -> dict[str, int]:
        """Counts of the method's own that a study's status shows beside its answer counts,
        by name (COBOL: ``labels_asked``, ``labels_rejected``, the labels of its BO phase that
        its budget does not count); ``{}`` (the default) for none."""
        return {}

    def proposed_by(self, query_id: int) -> str | None:
        """Who chose the point of the open evaluation ``query_id``, for a method with
        :attr:`same_point` (a study explains a setting the expert rejected and the method
        measures anyway): ``"initial"``, ``"gp-lcb"``, ``"expert"``, ``"random"`` (the expert
        family's words, :meth:`boloop.algorithms.expert.base.ExpertPolicy.proposed_by`); None
        (the default) when the method does not say."""
        return None

    def over_limit(self) -> list[dict[str, Any]]:
        """Every measured value above a safety limit so far, in the order measured, each
        ``{"query", "point", "g", "h"}`` (``query`` None or negative for a measurement the user
        added): the alarms a study prints after an answer. ``[]`` (the default) for a method
        without a safety limit."""
        return []

    def stall_message(self, stall: Mapping[str, Any], unit: str = "") -> str:
        """The words of a stall (``describe()["stall"]``, a dict with its ``message``) for the
        person running a study, with the values of the stall's ``axis`` written in ``unit``
        (the space file's unit of that parameter, which the method does not know). The default
        is the ``message`` as it stands; the safe family writes its levels in the unit."""
        return str(stall.get("message") or "")

    def state(self) -> Any:
        """The method's model state that a study's family picture draws, in the family's own
        terms (the safe family: the bounds and sets of M-SafeOpt's Algorithm 1, drawn as the
        certified safe set and the cells likely unsafe), computed without side effects; None
        (the default) for a method without one."""
        return None

    @property
    def pending(self) -> Query | None:
        """The open query, if any."""
        return self._pending

    @abstractmethod
    def recommend(self) -> Any:
        """The current best point, or the estimated sets for level-set problems."""

    def describe(self) -> dict[str, Any]:
        """Introspection: counts and settings; subclasses add beta, hyperparameters..."""
        return {
            "method": self.method_id,
            "family": self.family,
            "iteration": self.iteration,
            "queries_answered": len(self.history),
            "open_query": None if self._pending is None else self._pending.id,
        }

    # -- for subclasses ---------------------------------------------------------------------------
    @abstractmethod
    def _propose(self) -> Query:
        """Build the next query (called only when no query is open)."""

    @abstractmethod
    def _observe(self, query: Query, answer: Any) -> None:
        """Update the models with a validated answer. Must not change state if it raises."""

    def _no_more_queries(self) -> str | None:
        """Why the method has no next query, when it has none (see :meth:`asks_no_more`;
        called only while no query is open); None (the default) while :meth:`_propose` can
        build one. A method whose :meth:`_propose` could refuse writes this, so that the refusal
        is a state a study can show rather than an error."""
        return None

    def _iteration_done(self, query: Query, answer: Any) -> bool:
        """Whether this answer completes an iteration of the paper's budget (default: yes)."""
        return True

    def _add_measurements(self, X: np.ndarray, values: list[Any]) -> None:
        """Update the models with validated measurements (:meth:`observe`). Default, for families
        whose :meth:`_observe` reads only an Evaluate's point and answer: one Evaluate per point
        that was never issued (id -1, never in the history)."""
        for x, v in zip(X, values):
            self._observe(Evaluate(id=-1, x=x, outputs=self.measurement_outputs), v)

    @staticmethod
    def _mark_initial(query: _Q) -> _Q:
        """``query`` flagged as part of the initial design (:attr:`Query.initial`)."""
        return dataclasses.replace(query, initial=True)

    def _take_id(self) -> int:
        qid = self._next_id
        self._next_id += 1
        return qid

    def _new_evaluate(
        self, x: Any, index: int | None = None, outputs: tuple[str, ...] = ()
    ) -> Evaluate:
        """A new :class:`Evaluate` of ``x`` (d,) with the next query id; ``index`` is the
        candidate's index in a finite space, ``outputs`` the names of a multi-valued answer."""
        return Evaluate(
            id=self._take_id(), x=x, index=None if index is None else int(index), outputs=outputs
        )

    def _new_label(self, x: Any, index: int | None = None, calibration: bool = False) -> Label:
        """A new :class:`Label` (an expert's accept/reject) of ``x`` with the next query id."""
        return Label(
            id=self._take_id(),
            x=x,
            index=None if index is None else int(index),
            calibration=bool(calibration),
        )

    def _new_compare(
        self, a: Any, b: Any, a_index: int | None = None, b_index: int | None = None
    ) -> Compare:
        """A new :class:`Compare` of ``a`` and ``b`` (each (d,)) with the next query id."""
        return Compare(
            id=self._take_id(),
            a=a,
            b=b,
            a_index=None if a_index is None else int(a_index),
            b_index=None if b_index is None else int(b_index),
        )
