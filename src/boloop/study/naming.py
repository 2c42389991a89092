"""Study names and the plain values a study stores: checked before anything is written.

A study's name is its key in the storage, a note is stored with an answer, and a method's
options are stored as JSON in the study's ``created`` event so the study can be rebuilt.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from boloop.errors import InvalidInputError

__all__ = ["MAX_NOTE_CHARS"]


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > 255:
        raise InvalidInputError(
            f"name must be a non-empty string of at most 255 characters, got {name!r}"
        )
    if name != name.strip():
        raise InvalidInputError(f"name must not start or end with spaces, got {name!r}")
    return name


#: longest note stored with an answer (characters)
MAX_NOTE_CHARS = 2000


def _check_note(note: Any) -> str | None:
    """A note as stored: None or a stripped string of at most :data:`MAX_NOTE_CHARS`."""
    if note is None:
        return None
    if not isinstance(note, str):
        raise InvalidInputError(f"note must be text, got {type(note).__name__}")
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
