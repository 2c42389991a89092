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

A measured value may use a comma as its decimal mark (:func:`read_number`): ``723,4`` and
``0,05`` read as 723.4 and 0.05, as a phone's decimal keypad in much of Europe types them. A
comma that could as well separate thousands (``1,234``: 1234 or 1.234?) is refused, saying why
and how to write it, as is a number with several commas or with both a point and a comma.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from boloop.errors import AnswerTypeError
from boloop.queries import Compare, Evaluate, Label, Query

__all__ = [
    "DUEL_WORDS",
    "MAX_MEASURED",
    "LABEL_HINT",
    "LABEL_WORDS",
    "free_duel_words",
    "NumberTextError",
    "answer_text",
    "number_texts",
    "parse_answer",
    "parse_duel",
    "parse_label",
    "parse_measurement",
    "read_json",
    "read_number",
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


def free_duel_words(
    a_label: str | None, b_label: str | None, one_key: bool = False
) -> tuple[list[str], list[str]]:
    """The words of :data:`DUEL_WORDS` that answer A and B of a duel without doubt: a side's
    words but the one that is the *other* option's name (options named ``b`` and ``a`` leave
    ``1``, ``left``, ``first`` for A; a word that is its own side's name means that side either
    way), in the table's order; ``one_key``: the one-character ones (the keys of a prompt).
    Each side keeps all but at most one of its words, so at least one key."""
    names = [n.strip().lower() if n is not None else None for n in (a_label, b_label)]
    a, b = (
        [w for w in DUEL_WORDS[side] if w != names[1 - side] and (len(w) == 1 or not one_key)]
        for side in (0, 1)
    )
    return a, b


def parse_duel(text: str) -> int | None:
    """``0`` (A preferred), ``1`` (B preferred), or ``None`` if ``text`` is not a duel word."""
    return _DUEL.get(text.strip().lower()) if isinstance(text, str) else None


class NumberTextError(AnswerTypeError):
    """A typed number that cannot be taken as written: its comma does not say what it is
    (:func:`read_number`), or it is too large to compute with (:data:`MAX_MEASURED`); the
    message says why and how to write it (the web page shows it as it is)."""


#: a number written with one comma as its decimal mark: ``723,4``, ``-0,05``, ``,5``
_COMMA_DECIMAL = re.compile(r"[+-]?\d*,\d+")
#: ... that could as well be a thousands separator: 1-3 digits (not a lone 0), then 3 digits
_COMMA_THOUSANDS = re.compile(r"[+-]?[1-9]\d{0,2},\d{3}")
#: digits, one comma, digits (an exponent allowed): one number with a decimal comma as well as
#: two values separated by a comma, where a query has several outputs
_ONE_COMMA_NUMBER = re.compile(_COMMA_DECIMAL.pattern + r"([eE][+-]?\d+)?")


def read_number(text: str) -> float | None:
    """The number ``text`` writes, with a point or a single comma as its decimal mark; None if
    it is no number. Raises :class:`NumberTextError` saying why for a comma that does not tell:
    ``1,234`` (thousands separator or decimal comma?), ``1,234,5``, ``1.234,5``.

    ``nan`` and ``inf`` read as numbers here; the query refuses them (they are not measured).
    A minus sign as typeset (U+2212, what a spreadsheet or a document copied from gives) reads
    as ``-``; a decimal comma may carry an exponent (``1,5e3``)."""
    s = text.strip().replace("\u2212", "-")
    try:
        return float(s)
    except ValueError:
        pass
    if "," not in s:
        return None
    if _COMMA_THOUSANDS.fullmatch(s):
        whole, frac = s.split(",")
        raise NumberTextError(
            f"{s!r} is ambiguous: is the comma a thousands separator ({whole}{frac}) or a "
            f"decimal comma ({whole}.{frac})? Write {whole}{frac} or {whole}.{frac}"
        )
    if _ONE_COMMA_NUMBER.fullmatch(s):
        return float(s.replace(",", "."))
    body = s.lstrip("+-")
    if body.replace(",", "").replace(".", "").isdigit():  # digits with several marks
        raise NumberTextError(
            f"cannot read {s!r} as one number: write it without thousands separators, with a "
            "decimal point or a single decimal comma (1234.5 or 1234,5)"
        )
    return None


def _pairs(text: str) -> list[tuple[str, str]]:
    """The ``name=value`` pairs of ``text`` as (name, value text): separated by commas, or by
    semicolons when there is one (``f=1,2; g=0,3``); digits after a comma that are no pair
    continue the value before (a decimal comma: ``temperature=35,5``)."""
    s = text.strip()
    # pairs are separated by commas, or by semicolons when there is one: "f=1,2; g=0,3"
    parts = s.split(";") if ";" in s else s.split(",")
    # "a=1;b=2,c=3" (both separators, as before): a part with two pairs splits at commas
    parts = [q for p in parts for q in (p.split(",") if p.count("=") > 1 else [p])]
    if ";" not in s:
        # digits after a comma that are no pair continue the value before: a decimal comma
        # ("temperature=35,5", "f=1,2,g=0,3"), read by the one rule of read_number
        merged: list[str] = []
        for p in parts:
            if merged and "=" not in p and p.strip().isdigit() and "=" in merged[-1]:
                merged[-1] += "," + p
            else:
                merged.append(p)
        parts = merged
    out = []
    for part in parts:
        if not part.strip():
            continue
        key, sep, val = part.partition("=")
        if not sep or not key.strip():
            hint = (
                " (a value with a decimal comma? separate the pairs with ';': "
                "a=1,2; b=0,3, or write a=1.2, b=0.3)"
                if ";" not in s and key.strip().isdigit()
                else ""
            )
            raise AnswerTypeError(f"cannot read {text!r}: expected name=value pairs{hint}")
        out.append((key.strip(), val))
    return out


class _NamedTwice(Exception):
    """A JSON object naming a key twice (raised inside ``json.loads``, which would otherwise
    keep the last value silently); not a ValueError, so that it is not read as bad JSON."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _distinct_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _NamedTwice(key)
        out[key] = value
    return out


def read_json(text: str) -> Any:
    """``json.loads(text)``, refusing an object that names a key twice (``{"t": 0.3, "t":
    0.4}``: plain JSON keeps the last one silently, and a typed point or answer would be stored
    with a value the person may not have meant): :class:`AnswerTypeError` naming the key. Text
    that is no JSON is a ``ValueError`` as for ``json.loads``, and so is JSON nested deeper than
    Python's recursion limit (``[[[[...]]]]``: ``json.loads`` raises RecursionError, which was a
    traceback, and a 500 from the API)."""
    try:
        return json.loads(text, object_pairs_hook=_distinct_keys)
    except _NamedTwice as exc:
        raise AnswerTypeError(f"{exc.name!r} is given twice") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


def _text_value(text: str) -> Any:
    """A typed value from text: JSON if it parses, ``k=v,k=v`` pairs (``k=v; k=v`` when a value
    has a decimal comma), a number (:func:`read_number`), else the stripped text. A name given
    twice (``t=0.3,t=0.4``) is refused: which value was meant is not for us to guess."""
    s = text.strip()
    if not s:
        return s
    try:
        return read_json(s)
    except AnswerTypeError as exc:
        raise AnswerTypeError(f"cannot read {text!r}: {exc}") from None
    except ValueError:
        pass
    if "=" in s:
        out: dict[str, Any] = {}
        for key, val in _pairs(text):
            if key in out:
                raise AnswerTypeError(f"cannot read {text!r}: {key!r} is given twice")
            number = read_number(val)
            if number is None:
                raise AnswerTypeError(f"cannot read {text!r}: {val.strip()!r} is not a number")
            out[key] = number
        return out
    number = read_number(s)  # 'nan', 'inf' parse here and are refused by validate_answer
    return s if number is None else number


#: the largest size (absolute value) of a measured value a study takes: its models square the
#: values and sum the squares (above about 1e154 a square is infinite), so a larger value made NaN
#: of a level-set model and a safe study's next answers a traceback, every time, until undone.
#: No measurement in any unit comes near; a sentinel for a failed run (``sys.float_info.max``)
#: or a slip does.
MAX_MEASURED = 1e100


def _check_size(value: float | dict[str, float], what: str) -> None:
    """Refuse a finite measured value larger in size than :data:`MAX_MEASURED` (a
    :class:`NumberTextError` naming ``what``); infinite ones are refused as such later."""
    named = value.items() if isinstance(value, dict) else [(None, value)]
    for k, v in named:
        if math.isfinite(v) and abs(v) > MAX_MEASURED:
            where = what if k is None else f"{what}[{k!r}]"
            raise NumberTextError(
                f"{where} = {v!r} is too large to compute with: a measured value must stay "
                f"within +-{MAX_MEASURED:g} (the models square it); give it in other units"
            )


def parse_measurement(
    value: Any, what: str = "value", *, measured: bool = True
) -> float | dict[str, float]:
    """A measurement (a number or named numbers) from a value or text; finiteness is checked
    later, the size (:data:`MAX_MEASURED`) here unless ``measured`` is False (the numbers of a
    point, checked against the space instead)."""
    if isinstance(value, str):
        value = _text_value(value)
    if isinstance(value, bool | np.bool_):
        raise AnswerTypeError(f"{what} must be a number or named numbers, got {value!r}")
    if isinstance(value, numbers.Real):
        out_value = float(value)
        if measured:
            _check_size(out_value, what)
        return out_value
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if isinstance(v, str):
                v = _text_value(v)
            if isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Real):
                raise AnswerTypeError(f"{what}[{k!r}] must be a number, got {v!r}")
            out[str(k)] = float(v)
        if measured:
            _check_size(out, what)
        return out
    raise AnswerTypeError(f"{what} must be a number or named numbers, got {value!r}")


def _output_parts(text: str, outputs: tuple[str, ...]) -> list[str] | None:
    """The values of a query with several ``outputs`` typed in one line, or None: separated by
    spaces (each may have a decimal comma: ``1,2 0,3``), else by commas (``1.2,0.3``). A line
    that also reads as one number with a decimal comma (``0,5``, ``1,234``) is refused: it may
    be one value or two (it was read as ``f=0, g=5``)."""
    n = len(outputs)
    if n < 2:
        return None
    spaced = text.split()
    if len(spaced) == n:
        try:
            if all(read_number(p) is not None for p in spaced):
                return spaced
        except AnswerTypeError:
            pass
    if len(spaced) == 1 and _ONE_COMMA_NUMBER.fullmatch(text.strip()):
        # 0,5 / 1,234 / 1,5e3: one number with a decimal comma, or two values
        a, b = outputs[:2]
        raise AnswerTypeError(
            f"{text.strip()!r} may be one number with a decimal comma or {n} values separated "
            f"by a comma: write the {n} values separated by a space (0.5 1.2, or 0,5 1,2) or by "
            f"name ({a}=0,5; {b}=1,2)"
        )
    parts = text.replace(",", " ").split()
    return parts if len(parts) == n else None


def parse_answer(query: Query, answer: Any) -> Any:
    """The validated answer to ``query`` from a Python value or typed text.

    * Evaluate: a number, ``{"f": 1.2, "g": 0.3}``, ``"3.2"``, ``"f=1.2,g=0.3"`` or JSON.
    * Label: ``True``/``False`` or a word of :data:`LABEL_WORDS` (``accept``, ``n``, ``1``...).
    * Compare: the index ``0``/``1`` (an int) or a word of :data:`DUEL_WORDS` (``a``, ``2``...).
    """
    if isinstance(query, Evaluate):
        if isinstance(answer, str):
            parts = (
                None if "=" in answer else _output_parts(answer, tuple(query.outputs))
            )
            if query.outputs and parts is not None and "=" not in answer:
                answer = dict(zip(query.outputs, (_text_value(p) for p in parts)))
            else:
                answer = _text_value(answer)
            if isinstance(answer, str):
                raise AnswerTypeError(
                    f"query {query.id} needs a number"
                    + (f" for each of {list(query.outputs)}" if query.outputs else "")
                    + f", got {answer!r}"
                )
        checked = query.validate_answer(answer)
        _check_size(checked, f"query {query.id}: answer")
        return checked
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


def number_texts(answer: Any, outputs: tuple[str, ...] = ()) -> dict[str, str]:
    """The text each number of a typed measurement was written as, by name (``""`` for one
    value without a name): ``"0.50"`` -> ``{"": "0.50"}``, ``"f=1,2; g=0.30"`` ->
    ``{"f": "1,2", "g": "0.30"}``, ``"1.2 0.30"`` with two ``outputs`` -> one per output, in
    their order. Read as :func:`parse_answer` reads the answer; a number given as a number (not
    text) has none, and neither has text that is no number. The typo question edits these
    texts keystroke by keystroke (:mod:`boloop.study.plausibility`)."""
    texts: dict[str, str] = {}
    if isinstance(answer, Mapping):
        texts = {str(k): v.strip() for k, v in answer.items() if isinstance(v, str)}
    elif isinstance(answer, str):
        s = answer.strip()
        try:
            parts = None
            if len(outputs) > 1 and "=" not in s:
                parts = _output_parts(s, tuple(outputs))
            if parts is not None:
                texts = dict(zip(outputs, parts))
            else:
                try:
                    value = read_json(s)
                except ValueError:  # AnswerTypeError (a name given twice) is one too
                    value = None
                    texts = {k: v.strip() for k, v in _pairs(s)} if "=" in s else {"": s}
                if isinstance(value, Mapping):
                    texts = number_texts(value)
                elif isinstance(value, int | float) and not isinstance(value, bool):
                    texts = {"": s}
        except AnswerTypeError:
            return {}
    out = {}
    for k, text in texts.items():
        try:
            if read_number(text) is not None:
                out[k] = text
        except AnswerTypeError:
            pass
    return out


def answer_text(kind: str, answer: Any) -> str:
    """How an answer reads to a person: ``accept``, ``b``, ``3.2``, ``f=1.2, g=0.3``."""
    if kind == "label":
        return "accept" if answer else "reject"
    if kind == "compare":
        return "a" if int(answer) == 0 else "b"
    if isinstance(answer, Mapping):
        return ", ".join(f"{k}={v:g}" for k, v in answer.items())
    return f"{float(answer):g}"
