"""Answers as people type them: ``accept``/``reject``, ``a``/``b``, ``3.2``, ``f=1.2,g=0.3``, JSON.

:func:`parse_answer` turns a Python value or a string into the value the query's
``validate_answer`` accepts, and raises :class:`boloop.errors.AnswerTypeError` naming the query
otherwise. The same rules serve the Python API, the CLI and the interactive loop.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from boloop.errors import AnswerTypeError
from boloop.queries import Compare, Evaluate, Label, Query

__all__ = ["parse_answer", "parse_measurement", "answer_text"]

_ACCEPT = {"accept", "accepted", "yes", "y", "true", "t", "ok", "+"}
_REJECT = {"reject", "rejected", "no", "n", "false", "f", "-"}
_A = {"a", "0", "first", "left"}
_B = {"b", "1", "second", "right"}


def _text_value(text: str) -> Any:
    """A typed value from text: JSON if it parses, ``k=v,k=v`` pairs, else the stripped text."""
    s = text.strip()
    if not s:
        return s
    try:
        return json.loads(s)
    except ValueError:
        pass
    if "=" in s:
        out: dict[str, Any] = {}
        for part in s.replace(";", ",").split(","):
            if not part.strip():
                continue
            key, sep, val = part.partition("=")
            if not sep or not key.strip():
                raise AnswerTypeError(f"cannot read {text!r}: expected name=value pairs")
            try:
                out[key.strip()] = float(val)
            except ValueError as exc:
                raise AnswerTypeError(
                    f"cannot read {text!r}: {val.strip()!r} is not a number"
                ) from exc
        return out
    try:
        return float(s)  # 'nan', 'inf' parse here and are refused by validate_answer
    except ValueError:
        return s


def parse_measurement(value: Any, what: str = "value") -> float | dict[str, float]:
    """A measurement (a number or named numbers) from a value or text; finiteness is checked later."""
    if isinstance(value, str):
        value = _text_value(value)
    if isinstance(value, bool | np.bool_):
        raise AnswerTypeError(f"{what} must be a number or named numbers, got {value!r}")
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if isinstance(v, str):
                v = _text_value(v)
            if isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Real):
                raise AnswerTypeError(f"{what}[{k!r}] must be a number, got {v!r}")
            out[str(k)] = float(v)
        return out
    raise AnswerTypeError(f"{what} must be a number or named numbers, got {value!r}")


def parse_answer(query: Query, answer: Any) -> Any:
    """The validated answer to ``query`` from a Python value or typed text.

    * Evaluate: a number, ``{"f": 1.2, "g": 0.3}``, ``"3.2"``, ``"f=1.2,g=0.3"`` or JSON.
    * Label: ``True``/``False`` or ``accept``/``reject`` (also ``yes``/``no``, ``y``/``n``).
    * Compare: ``0``/``1`` or ``a``/``b`` (the preferred option).
    """
    if isinstance(query, Evaluate):
        if isinstance(answer, str):
            parts = answer.replace(",", " ").split()
            if query.outputs and len(parts) == len(query.outputs) and "=" not in answer:
                answer = dict(zip(query.outputs, (_text_value(p) for p in parts)))
            else:
                answer = _text_value(answer)
            if isinstance(answer, str):
                raise AnswerTypeError(
                    f"query {query.id} needs a number"
                    + (f" for each of {list(query.outputs)}" if query.outputs else "")
                    + f", got {answer!r}"
                )
        return query.validate_answer(answer)
    if isinstance(query, Label):
        if isinstance(answer, str):
            s = answer.strip().lower()
            if s in _ACCEPT:
                answer = True
            elif s in _REJECT:
                answer = False
            else:
                raise AnswerTypeError(
                    f"query {query.id} (label) needs accept or reject, got {answer!r}"
                )
        return query.validate_answer(answer)
    if isinstance(query, Compare):
        if isinstance(answer, str):
            s = answer.strip().lower()
            if s in _A:
                answer = 0
            elif s in _B:
                answer = 1
            else:
                raise AnswerTypeError(
                    f"query {query.id} (compare) needs a or b (the preferred option), got {answer!r}"
                )
        return query.validate_answer(answer)
    raise AnswerTypeError(f"unknown query kind {type(query).__name__}")


def answer_text(kind: str, answer: Any) -> str:
    """How an answer reads to a person: ``accept``, ``b``, ``3.2``, ``f=1.2, g=0.3``."""
    if kind == "label":
        return "accept" if answer else "reject"
    if kind == "compare":
        return "a" if int(answer) == 0 else "b"
    if isinstance(answer, Mapping):
        return ", ".join(f"{k}={v:g}" for k, v in answer.items())
    return f"{float(answer):g}"
