"""Study names and the plain values a study stores: checked before anything is written.

A study's name is its key in the storage, a note is stored with an answer, and a method's
options are stored as JSON in the study's ``created`` event so the study can be rebuilt.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from typing import Any

from boloop.errors import InvalidInputError

__all__ = ["MAX_NOTE_CHARS"]


def _is_not_text(ch: str, allowed: str) -> bool:
    """Whether ``ch`` is no text a person typed: a control character (other than those in
    ``allowed``) or a lone surrogate, which is what Python makes of a byte that is not UTF-8 in
    a command line's arguments (``U+DCFF``); neither can be written to a UTF-8 file (an export)
    or a PostgreSQL text column (NUL), and a name with a line break breaks every line that
    shows it."""
    kind = unicodedata.category(ch)
    return (kind == "Cc" and ch not in allowed) or kind == "Cs"


def _not_text(text: str, allowed: str = "") -> str | None:
    """The first character of ``text`` that is no text a person typed (:func:`_is_not_text`),
    described (``U+000A`` and what it may be), or None."""
    for ch in text:
        if _is_not_text(ch, allowed):
            surrogate = unicodedata.category(ch) == "Cs"
            what = "a byte that is not UTF-8?" if surrogate else "a control character"
            return f"U+{ord(ch):04X} ({what})"
    return None


def _as_text(text: str, allowed: str = "\t\n\r") -> str:
    """``text`` with every character :func:`_is_not_text` refuses replaced by U+FFFD: a note an
    older boloop stored, carried into a note that the checks of today's take."""
    return "".join("\ufffd" if _is_not_text(ch, allowed) else ch for ch in text)


def _check_name(name: Any) -> str:
    """A new study's name, as given, or an :class:`InvalidInputError` saying what is wrong.
    Checked when a study is created only: a stored study loads under the name it has."""
    if not isinstance(name, str) or not name.strip() or len(name) > 255:
        raise InvalidInputError(
            f"name must be a non-empty string of at most 255 characters, got {name!r}"
        )
    if name != name.strip():
        raise InvalidInputError(f"name must not start or end with spaces, got {name!r}")
    bad = _not_text(name)
    if bad is not None:
        raise InvalidInputError(f"name {name!r} has a character that is not text: {bad}")
    if name in (".", ".."):
        # a web address's segment "." or ".." is a folder step: the page would never be reached
        raise InvalidInputError(
            f"name {name!r} cannot name a study: a web address reads it as a folder; choose "
            "another name"
        )
    return name


#: longest note stored with an answer (characters)
MAX_NOTE_CHARS = 2000


def _check_note(note: Any) -> str | None:
    """A note as stored: None or a stripped string of at most :data:`MAX_NOTE_CHARS`."""
    if note is None:
        return None
    if not isinstance(note, str):
        raise InvalidInputError(f"note must be text, got {type(note).__name__}")
    bad = _not_text(note, allowed="\t\n\r")  # lines and tabs are a note's own
    if bad is not None:
        raise InvalidInputError(f"note has a character that is not text: {bad}")
    note = note.strip()
    if len(note) > MAX_NOTE_CHARS:
        raise InvalidInputError(f"note is {len(note)} characters long; at most {MAX_NOTE_CHARS}")
    return note or None


def _json_options(options: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return json.loads(json.dumps(dict(options), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"study options must be plain JSON values (numbers, strings, booleans, lists) so the "
            f"study can be rebuilt from storage: {exc}"
        ) from exc
