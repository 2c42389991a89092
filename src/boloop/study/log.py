"""The event log's vocabulary, shared by every storage: :class:`Event`, :class:`SeqConflict`, the
event kinds, time stamps and the JSON encoding of payloads.

Free of SQLAlchemy and numpy on purpose: :mod:`boloop.study.sqlite_log` (the command line's
quick path to a SQLite file) and :mod:`boloop.study.storage` (SQLAlchemy) both build on it, and a
``boloop study ask`` must not pay for imports it does not use.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from boloop.errors import InvalidInputError, StorageError

__all__ = [
    "EVENT_KINDS",
    "MARK_KINDS",
    "Event",
    "SeqConflict",
    "decode_created",
    "decode_events",
    "encode_payload",
    "moved_mark",
    "moved_message",
    "now_iso",
    "removed_message",
    "safe_url",
    "utc_words",
    "written_since",
]

EVENT_KINDS = ("created", "asked", "told", "added", "withdrawn", "moved", "move_undone")
#: events about the study's copy, not its data: ``moved`` (``boloop study migrate`` copied the
#: study to the storage ``payload["to"]``, password masked, with its first ``payload["events"]``
#: events; this copy refuses every write from then on) and ``move_undone`` (``migrate --undo``
#: removed that copy again: writable here once more). Never replayed into a policy.
MARK_KINDS = ("moved", "move_undone")


def now_iso() -> str:
    """UTC time stamp with microseconds, ``2026-11-21T11:20:00.123456Z``."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def utc_words(stamp: str) -> str:
    """A stored time stamp as a person reads it: ``2026-11-27T19:17:29.892809Z`` ->
    ``2026-11-27 19:17:29 UTC``."""
    return f"{str(stamp)[:19].replace('T', ' ')} UTC"


@dataclass(frozen=True)
class Event:
    """One row of the log. ``payload`` is the decoded JSON object."""

    seq: int
    kind: str
    query_id: int | None
    payload: dict[str, Any]
    created_at: str


class SeqConflict(StorageError):
    """Another process appended an event with the same sequence number first."""


def encode_payload(payload: dict[str, Any]) -> str:
    """The stored text of a payload (compact, sorted keys, no NaN)."""
    try:
        return json.dumps(payload, separators=(",", ":"), allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"cannot store {payload!r} as JSON: {exc}") from exc


def decode_events(
    rows: Iterable[tuple[Any, Any, Any, Any, Any]], study_id: int, after: int, url: str
) -> list[Event]:
    """Events from ``(seq, kind, query_id, payload, created_at)`` rows ordered by ``seq``,
    checking that the sequence numbers follow ``after`` without gaps and every payload is a
    JSON object (:class:`StorageError` naming the study and event otherwise)."""
    out = []
    expected = after + 1
    for seq, kind, qid, payload, created in rows:
        if seq == expected and kind not in EVENT_KINDS and isinstance(kind, str) and kind:
            # a well-formed row of a kind this boloop does not know: a newer boloop wrote it
            raise StorageError(
                f"storage {url!r}: study {study_id} event {seq} is of kind {kind!r}, written by "
                f"a newer boloop; this boloop reads the kinds {list(EVENT_KINDS)}: upgrade "
                "boloop to read or write this study (nothing was written)"
            )
        if seq != expected or kind not in EVENT_KINDS:
            raise StorageError(
                f"storage {url!r} is corrupt: study {study_id} event seq {seq} "
                f"(expected {expected}), kind {kind!r}"
            )
        try:
            data = json.loads(payload)
        except ValueError as exc:
            raise StorageError(
                f"storage {url!r} is corrupt: study {study_id} event {seq} payload is not JSON"
            ) from exc
        if not isinstance(data, dict):
            raise StorageError(f"storage {url!r} is corrupt: study {study_id} event {seq} payload")
        out.append(Event(int(seq), kind, None if qid is None else int(qid), data, created))
        expected += 1
    return out


def decode_created(
    rows: Iterable[tuple[Any, Any, Any, Any, Any, Any, Any]], url: str
) -> dict[str, Event]:
    """The first events of studies, by name, from ``(name, study_id, seq, kind, query_id,
    payload, created_at)`` rows of event 0 (what ``created_events`` of every storage reads),
    checked as :func:`decode_events` checks a log (:class:`StorageError` for a corrupt one)."""
    out = {}
    for name, study_id, *row in rows:
        (out[str(name)],) = decode_events([tuple(row)], int(study_id), -1, url)
    return out


def moved_mark(events: Iterable[Event]) -> Event | None:
    """The ``moved`` event in force in a study's log (the last mark event, if it is ``moved``
    and not a later ``move_undone``), or None: the study is writable here."""
    last = None
    for ev in events:
        if ev.kind in MARK_KINDS:
            last = ev
    return last if last is not None and last.kind == "moved" else None


def moved_message(name: str, mark: Event) -> str:
    """The one line that refuses a write to a moved study: where it went and when."""
    when = utc_words(mark.created_at)
    return (
        f"study {name!r} was moved to {mark.payload.get('to')} on {when}; answer it there "
        "(this copy is read-only: nothing was stored)"
    )


#: what each kind of event is, in words, for :func:`written_since` (``asked`` is no writing)
_WRITTEN = {
    "created": ("creation", "creations"),
    "told": ("answer", "answers"),
    "added": ("measurement added", "measurements added"),
    "withdrawn": ("withdrawal", "withdrawals"),
    "moved": ("migrate to another storage", "migrates to other storages"),
    "move_undone": ("undone migrate", "undone migrates"),
}


def written_since(events: Iterable[Event]) -> str:
    """What ``events`` wrote besides questions, in words (``"1 answer, 1 withdrawal"``); empty
    if they are all ``asked`` events (a question asked and not answered loses nothing)."""
    counts: dict[str, int] = {}
    for ev in events:
        if ev.kind != "asked":
            counts[ev.kind] = counts.get(ev.kind, 0) + 1
    return ", ".join(
        f"{n} {_WRITTEN.get(kind, (kind, kind))[n != 1]}" for kind, n in counts.items()
    )


def removed_message(name: str, url: str) -> str:
    """The refusal of every read and write of a study that is no longer in its storage."""
    return (
        f"study {name!r} is no longer in storage {safe_url(url)!r}: it was removed (`boloop "
        "study migrate --undo` removes the copy a migrate made; the study lives on where it "
        "was migrated from). Nothing was stored; load the study again (reload the "
        "page) to see where it is now"
    )


def url_for_command(url: str, placeholder: str = "YOUR_STORAGE_URL") -> str:
    """``url`` quoted for a command line a message suggests, or ``placeholder`` where printing it
    would show a password (:func:`safe_url` would mask it, and a masked URL does not work)."""
    import shlex

    shown = safe_url(url)
    return shlex.quote(shown) if shown == url else placeholder


def safe_url(url: str) -> str:
    """``url`` with its password masked (``postgresql+psycopg://lab:***@host/db``), for
    messages, logs and status lines; a password given as a query parameter (libpq's
    ``?password=...``) is masked too (``...?password=***``)."""
    import re

    if "://" not in url:
        return url
    # libpq's keyword form: password=... among the query parameters (case as libpq reads it)
    url = re.sub(r"([?&]password=)[^&#]*", r"\1***", url)
    if "@" not in url:
        return url
    scheme, _, rest = url.partition("://")
    credentials, _, where = rest.rpartition("@")
    if "/" in credentials:  # the "@" is in the path or the query, not after credentials
        return url
    user, colon, _password = credentials.partition(":")
    return f"{scheme}://{user}:***@{where}" if colon else url
