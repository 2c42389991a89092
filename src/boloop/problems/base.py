"""Benchmark problems: a black box, the oracles that answer queries, ground truth for metrics.

A :class:`Problem` answers every query kind a policy may ask (:meth:`Problem.answer`), holds the
paper's settings (kernel hyperparameters, noise, threshold, budget, initial design) in
``settings``, and makes a fresh :class:`MetricTracker` per run for the family's metric columns.
Families subclass it; :mod:`boloop.problems.registry` finds problems by id.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from boloop.errors import InvalidInputError
from boloop.queries import Compare, Evaluate, Label, PolicySpec, Query
from boloop.spaces import Space

__all__ = ["Problem", "MetricTracker"]


class MetricTracker(ABC):
    """Per-run state for a family's metrics; one instance per simulated run.

    ``update`` is called after every answered query with the query, its answer and the policy's
    public recommendation after that answer (a :mod:`boloop.recommendations` value), and returns
    the metric columns of that step: a float for names that :meth:`Problem.metric_names` declares
    (the library's families use ``regret``, ``cumulative_regret``, ``loss``, ``fscore``...; each is
    a column of the bench's ``results.csv``). A tracker never sees the policy itself.
    """

    #: keyword arguments of ``policy.recommend`` for the recommendation passed to :meth:`update`;
    #: ``None`` for a tracker that needs none (then ``recommend`` is not called and ``update``
    #: receives ``None``)
    recommend_options: ClassVar[dict[str, Any] | None] = {}

    @abstractmethod
    def update(self, query: Query, answer: Any, recommendation: Any) -> dict[str, float]: ...


@dataclass
class Problem:
    """A benchmark problem of one family.

    Attributes
    ----------
    id:
        ``family/name`` plus options as given (``"expert/ackley4?a=-2"``).
    family:
        ``"levelset"``, ``"preference"``, ``"safe"`` or ``"expert"``.
    space:
        A :class:`boloop.spaces.Box`, :class:`CandidateSet` or :class:`SafeSpace`.
    settings:
        The paper's settings used by ``make_policy``: e.g. ``kernel`` (a Kernel), ``noise_variance``,
        ``threshold``, ``budget``, ``n_initial``.
    """

    id: str
    family: str
    space: Space
    description: str = ""
    settings: dict[str, Any] = field(default_factory=dict)

    # -- oracles ----------------------------------------------------------------------------------
    def value(self, X: np.ndarray) -> np.ndarray | dict[str, np.ndarray]:
        """Noise-free black-box value(s) at X (n, d)."""
        raise NotImplementedError(f"{self.id} has no black-box value")

    def observe(self, query: Evaluate, rng: np.random.Generator) -> float | dict[str, float]:
        """A (noisy) measurement answering an Evaluate query."""
        raise InvalidInputError(f"problem {self.id} does not answer evaluate queries")

    def label(self, query: Label, rng: np.random.Generator) -> bool:
        """The (synthetic) expert's accept/reject answer to a Label query."""
        raise InvalidInputError(f"problem {self.id} does not answer label queries")

    def compare(self, query: Compare, rng: np.random.Generator) -> int:
        """The preference oracle's answer (0: a preferred, 1: b preferred) to a Compare query."""
        raise InvalidInputError(f"problem {self.id} does not answer compare queries")

    def answer(self, query: Query, rng: np.random.Generator) -> Any:
        """Answer any query from the problem's oracles (used by :func:`boloop.simulate`)."""
        if isinstance(query, Evaluate):
            return self.observe(query, rng)
        if isinstance(query, Label):
            return self.label(query, rng)
        if isinstance(query, Compare):
            return self.compare(query, rng)
        raise InvalidInputError(f"unknown query type {type(query).__name__}")

    # -- policies ---------------------------------------------------------------------------------
    def policy_spec(self, method: str, seed: Any = 0, **options: Any) -> PolicySpec:
        """The :class:`PolicySpec` of ``method`` on this problem: its family, space and settings;
        the oracles and ground truth stay here (``build_policy(spec)`` builds it)."""
        return PolicySpec(
            method=method,
            family=self.family,
            space=self.space,
            settings=self.settings,
            seed=seed,
            options=dict(options),
            source=self.id,
        )

    # -- metrics ----------------------------------------------------------------------------------
    def new_tracker(self) -> MetricTracker:
        raise NotImplementedError(f"{self.id} defines no metrics")

    def metric_names(self) -> list[str]:
        """The metric columns this problem's tracker produces, in order."""
        raise NotImplementedError(f"{self.id} defines no metrics")
