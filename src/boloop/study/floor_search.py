"""The smallest smoothness assumption under which a stuck safe study certifies more
(:meth:`Study.find_floor_g <boloop.study.core.Study.find_floor_g>`, ``boloop study try NAME
--find-floor``).

A safe study whose certified set stopped growing (the stall of
:meth:`boloop.algorithms.safe.MSafeOpt.stall`) can only go on with a stronger assumption about
how smoothly the safety value ``g`` varies: the option ``min_lengthscale_g`` (a floor on g's
learned length-scales, as a fraction of each parameter's range). The stall message's own
suggestion is 1.5 times the length-scale in use, a rule of thumb that may not be enough: on a
lab trial's dose study (every measurement at one dose) g's learned trend along the dose left
the next level as uncertain under floors 0.25 to 0.6, and without the trend (``trend_g=false``)
0.45 certified 4 mg. Finding that cost the trial ten measurements per value it tried.

Here each value is tried as :meth:`Study.try_options <boloop.study.core.Study.try_options>`
tries it (the continuation built in memory from the answers so far, nothing stored), on the
grid 0.05, 0.10, ..., 1 by bisection: the largest floor first (if even 1, g as smooth as the
whole range, certifies nothing more, no floor does), then halving the interval between a floor
that does not certify more and one that does. That assumes a longer floor never certifies
less, which is how the floor acts on the upper confidence bound of ``g`` but which a refit can
break; the value reported was tried itself, so what it certifies is measured, not assumed.
Certifying more means: on no row of the non-monotone parameters a lower certified level than
the study's, on at least one a higher.

This finds the assumption the answers need, not a safe value: a floor is a statement about g
that the data do not show (where g changes faster, the method can propose settings above the
limit), so the person who knows the system must judge whether it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, cast

from boloop.errors import InvalidInputError

if TYPE_CHECKING:
    from boloop.spaces import Space
    from boloop.study.core import Study

__all__ = ["FLOOR_GRID", "certifies_more", "find_floor_g", "floor_value", "monotone_axis"]

#: the floors tried: 0.05, 0.10, ..., 1 (fractions of each parameter's range)
FLOOR_GRID: tuple[float, ...] = tuple(round(0.05 * k, 2) for k in range(1, 21))

#: the progress callback: the options tried, whether they certify more, their recommendation
Progress = Callable[[Mapping[str, Any], bool, Mapping[str, Any]], None]


class ModelSearched(TypedDict):
    """One entry of :func:`find_floor_g`'s ``models``: a model of g and its smallest floor."""

    options: dict[str, Any]
    floor: float | None
    found: dict[str, Any] | None


class PolicyOnASpace(Protocol):
    """A policy built on a search space, as every policy of boloop's is (a safe policy's space
    lists the monotone parameter first). A method of one's own need not have ``space``."""

    space: Space


def certifies_more(tried: Mapping[str, Any], now: Mapping[str, Any]) -> bool:
    """Whether the safe recommendation ``tried`` certifies more than ``now`` (both
    :meth:`Study.recommend` dicts): its ``boundary_s`` (the highest certified level of the
    monotone parameter per row of the others) nowhere lower and somewhere higher."""
    a, b = tried.get("boundary_s"), now.get("boundary_s")
    if not isinstance(a, Sequence) or not isinstance(b, Sequence) or len(a) != len(b):
        return False
    pairs = [(float(x), float(y)) for x, y in zip(a, b, strict=True)]
    return all(x >= y for x, y in pairs) and any(x > y for x, y in pairs)


def _models(described: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The models of g searched, as option dicts added to the floor: the study's own, and
    without the trend along the monotone parameter where the study's model has it."""
    out: list[dict[str, Any]] = [{}]
    if described.get("trend_g"):
        out.append({"trend_g": False})
    return out


def monotone_axis(study: Study) -> str:
    """The name of the safe study's monotone parameter (its space lists it first), ``s``
    where the space names none."""
    names = getattr(cast(PolicyOnASpace, study.policy).space, "names", None)
    return str(names[0]) if names else "s"


def floor_value(own: Sequence[float] | None, floor: float) -> float | list[float]:
    """The ``min_lengthscale_g`` a trial of ``floor`` gives: ``floor`` itself, or, where the
    study has its own floors ``own`` (one per axis, monotone first), each axis's own where it is
    larger: the search never assumes less than the study does along any parameter."""
    if own is None:
        return floor
    return [max(float(o), floor) for o in own]


def _has_safety_value(study: Study) -> bool:
    """Whether the study's answers carry a safety value ``g`` with a limit (its family declares
    ``safety_limit``): the floor bounds the length-scales of g's model."""
    from boloop.algorithms.families import family_traits

    return family_traits(study.family).safety_limit


def find_floor_g(study: Study, progress: Progress | None = None) -> dict[str, Any]:
    """The smallest ``min_lengthscale_g`` of :data:`FLOOR_GRID` under which a continuation of
    the safe ``study`` certifies more with its answers so far, for g's model as the study has
    it and, where that model has a trend along the monotone parameter, without it
    (``trend_g=false``: tried first without a floor); see the module's docstring for the search
    and what it assumes.

    A study with floors of its own (``min_lengthscale_g``, one per axis) keeps each where it is
    larger than the value tried (:func:`floor_value`): the search never assumes less.

    Returns ``axis`` (the monotone parameter's name), ``own_floor`` (the study's floors, one per
    axis, monotone first; None), ``answers`` (the study's), ``now`` (its recommendation),
    ``models`` (one entry per model searched: ``options`` (the model's options besides the
    floor), ``floor`` (the smallest value of the grid found; None where the model certifies
    more without a floor beyond the study's own, or where even 1 certifies nothing more) and
    ``found`` (the :meth:`Study.try_options` result with these options and that floor, whose
    ``options`` give the ``min_lengthscale_g`` tried; None where nothing certifies more)) and
    ``tried`` (every trial
    in order: ``options``, ``certifies_more``, ``boundary_s``). ``progress`` is called after
    each trial with its options, whether it certifies more and its recommendation.

    Refused (:class:`~boloop.errors.InvalidInputError`) for a study of another family, one
    whose g has fixed hyperparameters (the floor applies to learned ones), one with no answers,
    and one that is not stuck (its certified set grows from measurements, which assume
    nothing); nothing is stored in any case."""
    if not _has_safety_value(study):
        raise InvalidInputError(
            f"study {study.name!r} is {_a(study.family)} {study.family} study: the search for min_lengthscale_g "
            "is for the safe family (how smoothly the safety value g varies)"
        )
    with study.readout() as r:  # on a copy: the live policy is never touched
        described = dict(r.described)
    if not described.get("fit_hyperparameters") or described.get("hyperparameters") == "paper":
        raise InvalidInputError(
            f"study {study.name!r} does not learn g's kernel (hyperparameters="
            f"{described.get('hyperparameters')!r}, fit_hyperparameters="
            f"{described.get('fit_hyperparameters')!r}): min_lengthscale_g applies to learned "
            "hyperparameters only; give a kernel_g with a longer length-scale instead"
        )
    if study.n_answered == 0:
        raise InvalidInputError(
            f"study {study.name!r} has no answers yet: there is nothing to certify more from"
        )
    stall = described.get("stall")
    if not (isinstance(stall, Mapping) and stall.get("message")):
        raise InvalidInputError(
            f"study {study.name!r} is not stuck: its certified set can still grow from "
            "measurements, which need no assumption; the search is for a study whose stuck "
            "warning says it cannot (boloop study status). To see what an assumption would do "
            f"anyway: boloop study try {study.name} --option min_lengthscale_g=VALUE"
        )
    own_floor = described.get("min_lengthscale_g")
    own = None if own_floor is None else [float(v) for v in own_floor]
    now = study.recommend()
    tried: list[dict[str, Any]] = []

    def attempt(model: Mapping[str, Any], floor: float | None) -> dict[str, Any]:
        options = (
            dict(model)
            if floor is None
            else {**model, "min_lengthscale_g": floor_value(own, floor)}
        )
        found = study.try_options(**options)
        more = certifies_more(found["recommendation"], now)
        tried.append(
            {
                "options": options,
                "certifies_more": more,
                "boundary_s": found["recommendation"].get("boundary_s"),
            }
        )
        if progress is not None:
            progress(options, more, found["recommendation"])
        found["certifies_more"] = more
        return found

    models: list[ModelSearched] = []
    for model in _models(described):
        if model:  # another model of g: it may certify more without any floor
            alone = attempt(model, None)
            if alone["certifies_more"]:
                models.append({"options": model, "floor": None, "found": alone})
                continue
        lo, hi = -1, len(FLOOR_GRID) - 1  # FLOOR_GRID[lo] does not certify more (-1: none tried)
        best = attempt(model, FLOOR_GRID[hi])
        if not best["certifies_more"]:
            models.append({"options": model, "floor": None, "found": None})
            continue
        while hi - lo > 1:
            mid = (lo + hi) // 2
            found = attempt(model, FLOOR_GRID[mid])
            if found["certifies_more"]:
                hi, best = mid, found
            else:
                lo = mid
        models.append({"options": model, "floor": FLOOR_GRID[hi], "found": best})
    return {
        "axis": monotone_axis(study),
        "own_floor": own,
        "answers": study.n_answered,
        "now": now,
        "models": models,
        "tried": tried,
    }


def _a(word: str) -> str:
    """The article before ``word``: "an expert study", "a safe study"."""
    return "an" if word[:1].lower() in "aeiou" else "a"
