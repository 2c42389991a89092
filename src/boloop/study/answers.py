"""Answers as people type them: ``accept``/``reject``, ``a``/``b``, ``3.2``, ``f=1.2,g=0.3``, JSON.

One grammar for labels and duels, shared by the Python API (string answers), ``boloop study
tell``, the ``boloop study run`` prompt and the web page (which imports :func:`parse_label` and
:func:`parse_duel`); the table is :data:`LABEL_WORDS` / :data:`DUEL_WORDS` and is printed in
``docs/studies.md``. Words are case-insensitive and surrounding spaces are ignored.

* Label: ``y``, ``yes``, ``accept``, ``1``, ``true`` accept; ``n``, ``no``, ``reject``, ``0``,
  ``false`` reject.
* Duel: ``a``, ``1``, ``left``, ``first`` prefer A; ``b``, ``2``, ``right``, ``second`` prefer B.
  Typed numbers count as a person does (1 = A, 2 = B). ``0`` is refused: it would mean A to
  someone counting from zero but nothing to someone counting from one, and a person who counts
  from zero would read ``1`` as B, so the first ``0`` they type tells them the convention. A
  Python ``int`` answer (not a string) is the policy contract's index: ``0`` = A, ``1`` = B.

:func:`parse_answer` turns a Python value or a string into the value the query's
``validate_answer`` accepts, and raises :class:`boloop.errors.AnswerTypeError` naming the query
otherwise.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from boloop.errors import AnswerTypeError
from boloop.queries import Compare, Evaluate, Label, Query

__all__ = [
    "DUEL_WORDS",
    "LABEL_HINT",
    "LABEL_WORDS",
    "answer_text",
    "parse_answer",
    "parse_duel",
    "parse_label",
    "parse_measurement",
]

#: the words of a label answer: accept (True) and reject (False)
LABEL_WORDS: dict[bool, tuple[str, ...]] = {
    True: ("y", "yes", "accept", "1", "true"),
    False: ("n", "no", "reject", "0", "false"),
}
#: the words of a duel answer: A preferred (0) and B preferred (1)
DUEL_WORDS: dict[int, tuple[str, ...]] = {
    0: ("a", "1", "left", "first"),
    1: ("b", "2", "right", "second"),
}
_LABEL = {w: v for v, words in LABEL_WORDS.items() for w in words}
#: the label words for a message: "y/yes/accept/1/true or n/no/reject/0/false"
LABEL_HINT = " or ".join("/".join(LABEL_WORDS[v]) for v in (True, False))
_DUEL = {w: v for v, words in DUEL_WORDS.items() for w in words}


def parse_label(text: str) -> bool | None:
    """``True`` (accept), ``False`` (reject), or ``None`` if ``text`` is not a label word."""
    return _LABEL.get(text.strip().lower()) if isinstance(text, str) else None


def parse_duel(text: str) -> int | None:
    """``0`` (A preferred), ``1`` (B preferred), or ``None`` if ``text`` is not a duel word."""
    return _DUEL.get(text.strip().lower()) if isinstance(text, str) else None


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
    * Label: ``True``/``False`` or a word of :data:`LABEL_WORDS` (``accept``, ``n``, ``1``...).
    * Compare: the index ``0``/``1`` (an int) or a word of :data:`DUEL_WORDS` (``a``, ``2``...).
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
            label = parse_label(answer)
            if label is None:
                raise AnswerTypeError(
                    f"query {query.id} is a label: answer {LABEL_HINT}, got {answer!r}"
                )
            answer = label
        return query.validate_answer(answer)
    if isinstance(query, Compare):
        if isinstance(answer, str):
            duel = parse_duel(answer)
            if duel is None:
                zero = (
                    " (0 is not an answer: typed numbers count from 1, so 1 = A and 2 = B)"
                    if answer.strip() == "0"
                    else ""
                )
                raise AnswerTypeError(
                    f"query {query.id} is a duel: answer a/1/left for A or b/2/right for B, "
                    f"got {answer!r}{zero}"
                )
            answer = duel
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
