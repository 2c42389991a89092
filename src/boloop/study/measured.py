"""What a person measures at each query, in words: the space file's ``description`` and
``[measurement]`` table.

A space file may say what is measured, as its parameters say their ``unit``:

.. code-block:: toml

    description = "Vickers hardness of the coated coupon, 3 indents averaged"

    [measurement]          # the one measured value (level set, expert, plain optimisation)
    name = "hardness"
    unit = "HV"

A safe study measures two values, the objective ``f`` and the safety value ``g``; each has its
own table under the output's name, with the same keys:

.. code-block:: toml

    [measurement.f]
    name = "efficacy"
    unit = "%"

    [measurement.g]
    name = "side effect"
    unit = "score"

Both are shown to people only (the web page, ``boloop study ask`` and ``status``); the method
never reads them, they are not settings, and answers are stored under the outputs' own names
(``f``, ``g``) as before. A study whose space has neither is shown as before. A study stores
the measurement beside its space (``config["measurement"]``), not in it: a boloop that predates
the key reads the space as before (its space reader refuses keys it does not know).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from boloop._validation import known_keys
from boloop.errors import InvalidInputError

__all__ = [
    "MEASUREMENT_KEYS",
    "Measured",
    "check_measurement_outputs",
    "goal_sentence",
    "limit_label",
    "output_hints",
    "measured",
    "normalise_measurement",
    "what_to_measure",
]

#: the keys of a ``[measurement]`` table (or of each output's table)
MEASUREMENT_KEYS = ("name", "unit")


def _table(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{where} must be a table with {' and/or '.join(MEASUREMENT_KEYS)}")
    known_keys(
        value,
        MEASUREMENT_KEYS,
        where,
        "(a safe study names each output in its own table: [measurement.f] and [measurement.g])",
    )
    out = {}
    for key in MEASUREMENT_KEYS:
        v = value.get(key)
        if v is None:
            continue
        if not isinstance(v, str) or not v.strip():
            raise InvalidInputError(f"{where} {key} must be a non-empty text, got {v!r}")
        out[key] = v.strip()
    return out


def normalise_measurement(value: Any) -> dict[str, Any]:
    """The normal form of a space's ``measurement``: ``{"name", "unit"}`` (either may be
    missing) for one measured value, or ``{output: {"name", "unit"}}`` for several."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            'space \'measurement\' must be a table: [measurement] name = "hardness", unit = "HV"'
        )
    if any(isinstance(v, Mapping) for v in value.values()):
        flat = sorted(k for k, v in value.items() if not isinstance(v, Mapping))
        if flat:
            raise InvalidInputError(
                f"space 'measurement' mixes keys {flat} with tables of outputs: give either "
                "name and unit of the one measured value, or a table per output "
                "([measurement.f], [measurement.g])"
            )
        return {str(k): _table(v, f"[measurement.{k}]") for k, v in value.items()}
    return _table(value, "[measurement]")


def check_measurement_outputs(measurement: Mapping[str, Any], outputs: Sequence[str]) -> None:
    """Refuse a ``measurement`` that does not fit the method's outputs: tables per output for a
    method measuring one value, one table (or an unknown output) for a method measuring
    several (the safe family's ``f`` and ``g``)."""
    per_output = any(isinstance(v, Mapping) for v in measurement.values())
    if outputs:
        if measurement and not per_output:
            names = ", ".join(outputs)
            raise InvalidInputError(
                f"this method measures {len(outputs)} values ({names}): name each in its own "
                f"table, [measurement.{outputs[0]}] name = ..., unit = ..., not one [measurement]"
            )
        unknown = sorted(set(measurement) - set(outputs))
        if unknown:
            raise InvalidInputError(
                f"[measurement] names outputs {unknown} that this method does not measure; its "
                f"outputs: {list(outputs)}"
            )
    elif per_output:
        raise InvalidInputError(
            f"this method measures one value: give its name and unit in [measurement] itself, "
            f"not in tables per output ({sorted(measurement)})"
        )


@dataclass(frozen=True)
class Measured:
    """One measured value as a person reads it: ``output`` (``f``, ``g``; None for the one
    value of a method measuring one), and its ``name`` and ``unit`` from the space file."""

    output: str | None
    name: str | None = None
    unit: str | None = None

    @property
    def named(self) -> bool:
        return self.name is not None

    def label(self) -> str:
        """``hardness (HV)``, ``side effect (g, score)``, ``efficacy (f)``; unnamed: ``value``,
        ``g`` (as the page said before names)."""
        if self.name is None:
            base = self.output or "value"
            return f"{base} ({self.unit})" if self.unit else base
        inner = [s for s in (self.output, self.unit) if s]
        return f"{self.name} ({', '.join(inner)})" if inner else self.name

    def noun(self) -> str:
        """What a sentence calls it: ``the hardness``, ``g``, ``the value``."""
        if self.name is not None:
            return f"the {self.name}"
        return self.output or "the value"

    def amount(self, value: float) -> str:
        """``650 HV``, ``1.5``: a value with the unit (if any)."""
        return f"{value:g} {self.unit}" if self.unit else f"{value:g}"


def measured(
    measurement: Mapping[str, Any] | None, outputs: Sequence[str] = ()
) -> list[Measured]:
    """What is measured at each query of a study whose space gave ``measurement`` (its normal
    form, :func:`normalise_measurement`; None: nothing named): one :class:`Measured` per output
    (``outputs``, e.g. ``("f", "g")``), or one for a method measuring one value."""
    table = dict(measurement or {})
    if outputs:
        return [
            Measured(out, *(_parts(table.get(out)) if isinstance(table.get(out), Mapping) else ()))
            for out in outputs
        ]
    if any(isinstance(v, Mapping) for v in table.values()):
        table = {}
    return [Measured(None, *_parts(table))]


def what_to_measure(quantities: Sequence[Measured], *, labelled: bool) -> str:
    """What a query asks to measure, as the object of "measure ... at": one value as ``the
    hardness (HV)`` (unnamed: ``the value``); several as their names, ``efficacy and side
    effect`` (unnamed: ``f and g``), or with ``labelled`` as their labels, ``efficacy (f, %)
    and side effect (g, score)`` (unnamed: ``the values f, g``), where no field beside them
    names each (the command line)."""
    outputs = [q.output for q in quantities if q.output]
    named = any(q.named for q in quantities)
    if not outputs:
        return f"the {quantities[0].label()}" if named else "the value"
    if not labelled:
        return " and ".join(q.name or str(q.output) for q in quantities)
    if named:
        return " and ".join(q.label() for q in quantities)
    return f"the values {', '.join(outputs)}"


def _parts(table: Any) -> tuple[str | None, str | None]:
    table = table or {}
    return table.get("name"), table.get("unit")


def goal_sentence(
    family: str, method: str, quantities: Sequence[Measured], settings: Mapping[str, Any]
) -> str | None:
    """What the person measuring must know about the value, in one sentence: for a level set,
    the question it answers ("Is the hardness above 650 HV here?"); for a value with a better
    direction (``FamilyTraits.measured_goal``), which; None otherwise (the safe family says its
    limit beside ``g``, see :func:`output_hints`)."""
    from boloop.algorithms.families import family_traits

    traits = family_traits(family)
    if len(quantities) != 1:
        return None
    q = quantities[0]
    if traits.level_threshold and settings.get("threshold") is not None:
        h = float(settings["threshold"])
        noun = q.noun() if q.named else "the measured value"
        return (
            f"Is {noun} above {q.amount(h)} here? The study maps where it is: type the "
            "number you measure, not yes or no."
        )
    goal = traits.measured_goal
    if goal is None:
        return None
    better = "Lower" if goal == "minimise" else "Higher"
    if not q.named:
        return f"{better} measured values are better: {method} {goal}s the value."
    return f"{better} {q.name} is better: {method} {goal}s it."


def output_hints(
    family: str, quantities: Sequence[Measured], settings: Mapping[str, Any]
) -> dict[str, str]:
    """Per output of a method measuring several values, what a person reads beside its field:
    the safe family's ``f`` "higher is better" and ``g`` "must stay at most 1.5"."""
    from boloop.algorithms.families import family_traits

    if not family_traits(family).safety_limit:
        return {}
    h = settings.get("h", settings.get("threshold"))
    out = {}
    for q in quantities:
        if q.output == "f":
            out["f"] = "higher is better"
        elif q.output == "g" and h is not None:
            out["g"] = f"must stay at most {q.amount(float(h))}"
    return out


def limit_label(quantities: Sequence[Measured]) -> str:
    """The safety value g as a space file names it ("toxicity (g, AU)"), "g" where it names
    nothing: the alarms of a g above the limit, the page's dialog and its question."""
    return next((q.label() for q in quantities if q.output == "g" and q.named), "g")
