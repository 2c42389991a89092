"""Drive a policy against a benchmark problem for a budget and record a :class:`Trace`.

:func:`simulate` is the loop a person would run, with the problem's oracles answering instead::

    while policy.iteration < budget:
        query = policy.ask()
        answer = problem.answer(query, oracle_rng)
        policy.tell(query.id, answer)
        metrics = tracker.update(query, answer, policy.recommend())

How the budget is counted
-------------------------
The budget is counted by ``policy.iteration``, which each policy advances the way its family's
paper counts its budget (:meth:`boloop.queries.BasePolicy._iteration_done`):

* ``levelset`` (randomized straddle, Sec. 3): one iteration per function evaluation.
* ``safe`` (M-SafeOpt, Algorithm 1): one iteration per evaluation; an evaluation measures the
  objective and the safety value at once (one ``Evaluate`` with ``outputs=("f", "g")``).
* ``preference`` (MR-LPF): one iteration per duel, i.e. per answered ``Compare``.
* ``expert`` (COBOL): one iteration per f-evaluation (labels are counted apart); with
  ``budget="iterations"`` one per pass through the loop of Algorithm 1, where a rejected
  ``Label`` consumes the iteration without an evaluation.

Queries a policy does not count (an initial design evaluated before the first iteration, the
initial labels of COBOHL) belong to the step in progress, normally step 1: ``Trace.step_rows`` has
exactly the steps ``1..budget`` whatever the number of queries.

Steps and records
-----------------
Every answered query is one *record* of the trace: its step (the 1-based iteration it belongs to),
the query kind, its points, the answer, the metric columns of the problem's tracker after it, and
the seconds spent in ``ask`` and in ``tell``. :meth:`Trace.step_rows` collapses the records of one
iteration into one row (metrics after the iteration's last query, seconds summed over its
queries): the ``results.csv`` schema of ``boloop bench``. :meth:`Trace.rows` gives one row per
record, with points and answers JSON-encoded.

Randomness: the oracles draw from a generator derived from ``seed`` by a :class:`numpy.random.\
SeedSequence` spawn key, independent of the policy's own generator (which ``make_policy`` seeds
with the same ``seed``), so the same seed gives the same trace, bit for bit.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
import numbers
import sys
import time
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from boloop.errors import InvalidInputError
from boloop.problems.base import Problem
from boloop.queries import BasePolicy, Compare, Query, check_query
from boloop.recommendations import Recommendation

__all__ = ["simulate", "Trace", "oracle_rng", "KEY_COLUMNS", "TIME_COLUMNS"]

logger = logging.getLogger("boloop")

#: columns that identify a row of results.csv, in order
KEY_COLUMNS = ("problem", "method", "seed", "step")
#: timing columns, last in results.csv
TIME_COLUMNS = ("ask_seconds", "tell_seconds")

# spawn key of the oracles' generator: any fixed tuple distinct from the policy's (empty) key
_ORACLE_SPAWN_KEY = (0x0B01, 0x0)


def oracle_rng(seed: int) -> np.random.Generator:
    """The problem oracles' generator for run ``seed``, independent of ``default_rng(seed)``."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=_ORACLE_SPAWN_KEY))


@dataclass
class Trace:
    """What happened in one simulated run.

    Attributes
    ----------
    problem, method, seed, budget:
        The run's identity (``method`` is the registry id).
    metric_names:
        The problem's metric columns, in order.
    records:
        One dict per answered query: ``step``, ``query`` (the query id), ``kind``
        (``evaluate``/``label``/``compare``), ``points`` (list of lists: ``[x]`` or ``[a, b]``),
        ``answer`` (float, dict of floats, bool or int), ``metrics`` (dict), ``ask_seconds``,
        ``tell_seconds``.
    recommendation:
        ``policy.recommend()`` at the end of the run, converted to plain Python.
    """

    problem: str
    method: str
    seed: int
    budget: int
    metric_names: list[str]
    records: list[dict[str, Any]] = field(default_factory=list)
    recommendation: Any = None

    # -- rows -----------------------------------------------------------------------------------
    @property
    def columns(self) -> list[str]:
        """The ``results.csv`` columns: keys, metrics in the problem's order, seconds."""
        return [*KEY_COLUMNS, *self.metric_names, *TIME_COLUMNS]

    def step_rows(self) -> list[dict[str, Any]]:
        """One row per step (iteration): the ``results.csv`` schema (:attr:`columns`)."""
        rows: list[dict[str, Any]] = []
        for rec in self.records:
            if rows and rows[-1]["step"] == rec["step"]:
                row = rows[-1]
                row["ask_seconds"] += rec["ask_seconds"]
                row["tell_seconds"] += rec["tell_seconds"]
                row.update(rec["metrics"])
                continue
            row = {"problem": self.problem, "method": self.method, "seed": self.seed}
            row["step"] = rec["step"]
            row.update({m: rec["metrics"].get(m, math.nan) for m in self.metric_names})
            row["ask_seconds"] = rec["ask_seconds"]
            row["tell_seconds"] = rec["tell_seconds"]
            rows.append(row)
        return [{c: r[c] for c in self.columns} for r in rows]

    def rows(self) -> list[dict[str, Any]]:
        """One flat row per answered query; ``points`` and ``answer`` are JSON strings."""
        out = []
        for rec in self.records:
            row: dict[str, Any] = {
                "problem": self.problem,
                "method": self.method,
                "seed": self.seed,
                "step": rec["step"],
                "query": rec["query"],
                "kind": rec["kind"],
                "points": json.dumps(rec["points"]),
                "answer": json.dumps(rec["answer"]),
            }
            row.update({m: rec["metrics"].get(m, math.nan) for m in self.metric_names})
            row["ask_seconds"] = rec["ask_seconds"]
            row["tell_seconds"] = rec["tell_seconds"]
            out.append(row)
        return out

    def to_csv(self, path: str | Path | None = None, per: str = "query") -> str:
        """CSV text of :meth:`rows` (``per="query"``) or :meth:`step_rows` (``per="step"``);
        written to ``path`` when given."""
        if per not in ("query", "step"):
            raise InvalidInputError(f"per must be 'query' or 'step', got {per!r}")
        rows = self.rows() if per == "query" else self.step_rows()
        header = list(rows[0]) if rows else self.columns
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=header, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        text = buf.getvalue()
        if path is not None:
            Path(path).write_text(text)
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "problem": self.problem,
            "method": self.method,
            "seed": self.seed,
            "budget": self.budget,
            "metric_names": list(self.metric_names),
            "records": self.records,
            "recommendation": self.recommendation,
        }

    def to_json(self, path: str | Path | None = None) -> str:
        """JSON text of the whole trace (``allow_nan``: NaN metrics are written as NaN)."""
        text = json.dumps(self.to_dict(), indent=1)
        if path is not None:
            Path(path).write_text(text)
        return text

    @classmethod
    def from_json(cls, text: str) -> Trace:
        d = json.loads(text)
        return cls(**d)

    @property
    def final_metrics(self) -> dict[str, float]:
        """Metric columns after the last answered query."""
        if not self.records:
            return {m: math.nan for m in self.metric_names}
        last = self.records[-1]["metrics"]
        return {m: last.get(m, math.nan) for m in self.metric_names}


def _plain(value: Any) -> Any:
    """Convert numpy scalars/arrays and mappings to JSON-able Python values."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Recommendation):
        return _plain(value.to_dict())
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str):
        return value
    return repr(value)


def _points(query: Query) -> list[list[float]]:
    if isinstance(query, Compare):
        return [query.a.tolist(), query.b.tolist()]
    return [query.x.tolist()]  # type: ignore[attr-defined]


def _check_budget(budget: Any) -> int:
    if isinstance(budget, bool) or not isinstance(budget, numbers.Integral) or int(budget) < 1:
        raise InvalidInputError(f"budget must be a positive integer, got {budget!r}")
    return int(budget)


def simulate(
    policy: BasePolicy | str,
    problem: Problem | str,
    budget: int,
    seed: int = 0,
    *,
    method: str | None = None,
    max_queries: int | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    **policy_options: Any,
) -> Trace:
    """Run ``policy`` against ``problem`` until ``policy.iteration >= budget``.

    Parameters
    ----------
    policy:
        A policy object, or a method id (built by ``build_policy(problem.policy_spec(policy,
        seed, **policy_options))``: the policy sees the problem's space and settings only). The
        id may carry options as ``boloop bench run`` takes them, ``"cobol?budget=iterations"``:
        the way to give an option whose name is one of this function's own parameters
        (``budget``, ``seed``, ``method``); an option given both ways is refused.
    problem:
        A :class:`Problem` or a problem id (``"levelset/toy"``).
    budget:
        Number of iterations, counted as the family's paper does (see the module docstring).
    seed:
        Seeds the oracles (through :func:`oracle_rng`) and, when ``policy`` is an id, the policy.
    method:
        Id written to the trace (default: the id given, or ``policy.method_id``).
    max_queries:
        Safety net against a policy that never completes an iteration (default
        ``100 * budget + 1000``); exceeding it raises :class:`RuntimeError`.
    on_record:
        Called with every record as it is made (progress reporting).

    Returns
    -------
    Trace
        One record per answered query; :meth:`Trace.step_rows` gives one row per iteration.
    """
    budget = _check_budget(budget)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or int(seed) < 0:
        raise InvalidInputError(f"seed must be a non-negative integer, got {seed!r}")
    seed = int(seed)
    if isinstance(problem, str):
        from boloop.problems import get

        problem = get(problem)
    if isinstance(policy, str):
        from boloop.algorithms.registry import build_policy, parse_method_id

        method = method or policy
        name, id_options = parse_method_id(policy, problem.family)
        both = sorted(set(id_options) & set(policy_options))
        if both:
            raise InvalidInputError(
                f"options {both} are given both in the method id {policy!r} and as arguments"
            )
        policy = build_policy(problem.policy_spec(name, seed, **id_options, **policy_options))
    elif policy_options:
        raise InvalidInputError(
            f"policy options {sorted(policy_options)} need a method id, not a policy object"
        )
    if not hasattr(policy, "ask") or not hasattr(policy, "tell"):
        raise InvalidInputError(f"policy must have ask/tell, got {type(policy).__name__}")
    method = method or getattr(policy, "method_id", "") or type(policy).__name__
    limit = 100 * budget + 1000 if max_queries is None else int(max_queries)

    metric_names = list(problem.metric_names())
    tracker = problem.new_tracker()
    if tracker.recommend_options:
        from boloop.algorithms.registry import check_recommend_keywords

        # a policy object built by hand must take the keywords this problem's tracker passes
        keys = list(tracker.recommend_options)
        check_recommend_keywords(policy, method, problem.family, keywords=keys)
    rng = oracle_rng(seed)
    trace = Trace(problem.id, method, seed, budget, metric_names)
    declared = set(metric_names)

    n_queries = 0
    while policy.iteration < budget:
        if n_queries >= limit:
            raise RuntimeError(
                f"{method} on {problem.id}: {n_queries} queries answered but only "
                f"{policy.iteration} of {budget} iterations completed"
            )
        step = policy.iteration + 1
        t0 = time.perf_counter()
        query = policy.ask()
        t1 = time.perf_counter()  # the policy's time only: the check below is the harness's
        check_query(query, problem.space, f"method {method!r}")
        answer = problem.answer(query, rng)
        t2 = time.perf_counter()
        policy.tell(query.id, answer)
        t3 = time.perf_counter()
        n_queries += 1
        options = tracker.recommend_options
        recommendation = None if options is None else policy.recommend(**options)
        metrics = tracker.update(query, answer, recommendation)
        unknown = set(metrics) - declared
        if unknown:
            raise InvalidInputError(
                f"tracker of {problem.id} returned undeclared metrics {sorted(unknown)}; "
                f"metric_names() gives {metric_names}"
            )
        record = {
            "step": step,
            "query": int(query.id),
            "kind": query.kind,
            "points": _points(query),
            "answer": _plain(answer),
            "metrics": {k: float(v) for k, v in metrics.items()},
            "ask_seconds": t1 - t0,
            "tell_seconds": t3 - t2,
        }
        trace.records.append(record)
        if on_record is not None:
            on_record(record)
    try:
        trace.recommendation = _plain(policy.recommend())
    except Exception as exc:  # a recommendation is informative only; the run is complete
        logger.warning("%s on %s: recommend() failed: %s", method, problem.id, exc)
    return trace


class _CallableModule(types.ModuleType):
    """``boloop.simulate`` is both this module and the function: importing the submodule rebinds
    the package attribute to the module, so the module forwards calls to :func:`simulate`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Trace:
        return simulate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
