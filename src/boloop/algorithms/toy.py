"""Trivial random policies, one per query kind, registered as ``toy-random`` in every family.

They exist to exercise the loop (tests, the demo's toy rows, the README); they learn nothing. The
families own the real ``random`` baselines of their papers (``random`` in levelset, preference
and expert), registered under the id ``random`` in their own modules.

* :class:`RandomEvaluate` (levelset, safe): evaluates a uniformly drawn point of the space (a
  candidate, an action ``(s, x)`` of a :class:`SafeSpace`, or a uniform point of a :class:`Box`).
* :class:`RandomCompare` (preference): duels two distinct uniformly drawn candidates.
* :class:`RandomExpert` (expert): proposes a uniform point, asks the expert to label it, and
  evaluates it if accepted; a rejected label ends the iteration (COBOL's budget, Algorithm 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from boloop.algorithms.registry import Option, register_method
from boloop.errors import InvalidInputError
from boloop.queries import BasePolicy, Compare, Evaluate, Label, PolicySpec, Query
from boloop.recommendations import BestPoint, LevelSetEstimate
from boloop.spaces import Box, CandidateSet, SafeSpace

__all__ = ["RandomEvaluate", "RandomCompare", "RandomExpert"]


def _draw(space: Any, rng: np.random.Generator) -> tuple[np.ndarray, int | None]:
    """A uniform point of ``space`` (shape (d,)) and its index when the space is finite."""
    if isinstance(space, CandidateSet | SafeSpace):
        i = int(rng.integers(space.n))
        return np.asarray(space.points[i]), i
    if isinstance(space, Box):
        return space.lower + rng.random(space.dim) * (space.upper - space.lower), None
    raise InvalidInputError(f"space must be a Box, CandidateSet or SafeSpace, got {space!r}")


class RandomEvaluate(BasePolicy):
    """Evaluate uniform random points. ``recommend()`` is the best evaluated point (largest
    value, or largest ``objective`` among answers with ``safety <= threshold`` for mappings)
    for ``maximize=True``; for a level-set problem (``threshold`` given, ``sets=True``) it is the
    evaluated points split by their observed values (a ``LevelSetEstimate``)."""

    method_id = "toy-random"
    iteration_meaning = "one per evaluation"
    recommendation_meaning = "the best measured point (with sets: the measured points split by h)"

    def __init__(
        self,
        space: Any,
        seed: int | None = None,
        *,
        family: str = "levelset",
        outputs: tuple[str, ...] = (),
        threshold: float | None = None,
        sets: bool = False,
        maximize: bool = True,
    ) -> None:
        super().__init__(seed)
        self.space = space
        self.family = family  # type: ignore[misc]
        self.outputs = tuple(outputs)
        self.threshold = threshold
        self.sets = sets
        self.maximize = maximize
        self.X: list[np.ndarray] = []
        self.values: list[Any] = []

    #: a user's own measurements join the evaluated points (:meth:`observe`)
    accepts_measurements = True

    @property
    def measurement_outputs(self) -> tuple[str, ...]:
        return self.outputs

    def _propose(self) -> Query:
        x, i = _draw(self.space, self.rng)
        return self._new_evaluate(x, i, self.outputs)

    def _observe(self, query: Query, answer: Any) -> None:
        assert isinstance(query, Evaluate)
        self.X.append(query.x)
        self.values.append(answer)

    def recommend(self, final_update: bool = True) -> BestPoint | LevelSetEstimate:
        """The best measured point; with ``sets``, the measured points split by the threshold
        (``classify`` gives any point the class of its nearest measured point). The toy has no
        model: its sets always use every measurement (``final_update`` is accepted for the
        level-set contract and changes nothing)."""
        if self.sets:
            threshold = float(self.threshold if self.threshold is not None else 0.0)
            X = np.asarray(self.X, dtype=np.float64).reshape(len(self.X), self.space.dim)
            upper = np.asarray(self.values, dtype=np.float64) >= threshold

            def _nearest_class(P: np.ndarray) -> np.ndarray:
                P = np.asarray(P, dtype=np.float64).reshape(-1, X.shape[1])
                if not len(X):
                    return np.zeros(P.shape[0], dtype=bool)
                d2 = ((P[:, None, :] - X[None, :, :]) ** 2).sum(axis=-1)
                return upper[np.argmin(d2, axis=1)]

            return LevelSetEstimate(threshold, self.iteration + 1, X, upper, _nearest_class)
        if not self.X:
            return BestPoint(None)
        if isinstance(self.values[0], Mapping):
            f_name, g_name = self.outputs[0], self.outputs[-1]
            f = np.array([v[f_name] for v in self.values])
            ok = np.ones(f.size, dtype=bool)
            if self.threshold is not None and len(self.outputs) > 1:
                ok = np.array([v[g_name] <= self.threshold for v in self.values])
            if not ok.any():
                return BestPoint(None)
            f = np.where(ok, f, -np.inf if self.maximize else np.inf)
        else:
            f = np.asarray(self.values, dtype=np.float64)
        i = int(np.argmax(f) if self.maximize else np.argmin(f))
        return BestPoint(self.X[i])


class RandomCompare(BasePolicy):
    """Duel two distinct uniform candidates. ``recommend()``: the candidate with most wins."""

    method_id = "toy-random"
    family = "preference"
    iteration_meaning = "one per duel"
    recommendation_meaning = "the option with the most wins"
    answer_counts = ("duels",)

    def __init__(self, space: CandidateSet, seed: int | None = None) -> None:
        super().__init__(seed)
        if not isinstance(space, CandidateSet) or space.n < 2:
            raise InvalidInputError("space must be a CandidateSet of at least 2 candidates")
        self.space = space
        self.wins = np.zeros(space.n)

    def _propose(self) -> Query:
        i, j = self.rng.choice(self.space.n, size=2, replace=False)
        return self._new_compare(self.space.points[i], self.space.points[j], int(i), int(j))

    def _observe(self, query: Query, answer: Any) -> None:
        assert isinstance(query, Compare)
        winner = query.a_index if answer == 0 else query.b_index
        self.wins[winner] += 1

    def recommend(self) -> BestPoint:
        """The candidate with the most wins (``point`` None before the first duel)."""
        if not self.history:
            return BestPoint(None)
        k = int(np.argmax(self.wins))
        return BestPoint(np.asarray(self.space.points[k]), k)


class RandomExpert(BasePolicy):
    """Uniform proposals vetted by an expert: ``Label(x)``, then ``Evaluate(x)`` if accepted.

    An iteration ends with an evaluation or with a rejected label (COBOL, Algorithm 1).
    ``recommend()``: the evaluated point with the smallest observed value (minimisation).
    """

    method_id = "toy-random"
    family = "expert"
    iteration_meaning = "one per proposal (its label, then its evaluation if accepted)"
    recommendation_meaning = "the measured point with the lowest value (minimisation)"
    answer_counts = ("labels", "evaluations")

    def __init__(self, space: Any, seed: int | None = None) -> None:
        super().__init__(seed)
        self.space = space
        self._accepted: Label | None = None
        self.X: list[np.ndarray] = []
        self.y: list[float] = []
        self.n_rejected = 0

    def _propose(self) -> Query:
        if self._accepted is not None:
            return self._new_evaluate(self._accepted.x, self._accepted.index)
        x, i = _draw(self.space, self.rng)
        return self._new_label(x, i)

    def _observe(self, query: Query, answer: Any) -> None:
        if isinstance(query, Label):
            if answer:
                self._accepted = query
            else:
                self.n_rejected += 1
        elif isinstance(query, Evaluate):
            self._accepted = None
            self.X.append(query.x)
            self.y.append(float(answer))

    def _iteration_done(self, query: Query, answer: Any) -> bool:
        return isinstance(query, Evaluate) or not answer

    def recommend(self) -> BestPoint:
        """The evaluated point with the smallest value (``point`` None before any)."""
        if not self.y:
            return BestPoint(None)
        return BestPoint(self.X[int(np.argmin(self.y))])

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(evaluations=len(self.y), rejected=self.n_rejected)
        return d


_MAXIMIZE = Option("maximize", "bool", True, "recommend the largest (True) or smallest value")
_OUTPUTS = Option("outputs", "tuple[str, ...]", (), "names of the measured values (empty: one)")


@register_method(
    "toy-random",
    "levelset",
    "toy: evaluate uniform random candidates",
    options=(_MAXIMIZE, _OUTPUTS),
)
def _levelset_toy_random(problem: PolicySpec, seed: int | None = 0, **options: Any) -> BasePolicy:
    return RandomEvaluate(
        problem.space,
        seed,
        family="levelset",
        threshold=problem.settings.get("threshold"),
        sets=True,
        **options,
    )


@register_method(
    "toy-random",
    "safe",
    "toy: evaluate uniform random actions (ignores safety)",
    options=(_MAXIMIZE, Option("sets", "bool", False, "recommend observed upper/lower sets")),
)
def _safe_toy_random(problem: PolicySpec, seed: int | None = 0, **options: Any) -> BasePolicy:
    return RandomEvaluate(
        problem.space,
        seed,
        family="safe",
        outputs=tuple(problem.settings.get("outputs", ("f", "g"))),
        threshold=problem.settings.get("threshold"),
        **options,
    )


@register_method("toy-random", "preference", "toy: duel two uniform random candidates")
def _preference_toy_random(problem: PolicySpec, seed: int | None = 0, **options: Any) -> BasePolicy:
    return RandomCompare(problem.space, seed, **options)


@register_method("toy-random", "expert", "toy: uniform proposals, labelled, evaluated if accepted")
def _expert_toy_random(problem: PolicySpec, seed: int | None = 0, **options: Any) -> BasePolicy:
    return RandomExpert(problem.space, seed, **options)
