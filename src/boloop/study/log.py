"""The event log's vocabulary, shared by every storage: :class:`Event`, :class:`SeqConflict`, the
event kinds, time stamps and the JSON encoding of payloads.

Free of SQLAlchemy and numpy on purpose: :mod:`boloop.study.sqlite_log` (the command line's
quick path to a SQLite file) and :mod:`boloop.study.storage` (SQLAlchemy) both build on it, and a
``boloop study ask`` must not pay for imports it does not use.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from boloop.errors import InvalidInputError, StorageError

__all__ = [
    "EVENT_KINDS",
    "MARK_KINDS",
    "Event",
    "LogSummary",
    "SeqConflict",
    "decode_created",
    "decode_events",
    "decode_summaries",
    "encode_payload",
    "moved_mark",
    "moved_message",
    "now_iso",
    "removed_message",
    "safe_url",
    "sqlite_object_check",
    "summarise",
    "summary_statement",
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


#: the kinds of a log that a listing reads from its counts alone: no undo (``withdrawn`` takes
#: back an answer and the questions after it) and no mark of a migrate
_COUNTED_KINDS = ("created", "asked", "told", "added")


@dataclass(frozen=True)
class LogSummary:
    """What a study's log holds, counted by its storage without sending or decoding the log
    (:meth:`~boloop.study.storage.StorageBackend.log_summaries`): ``events`` rows numbered from
    ``first_seq`` to ``last_seq``, ``kinds`` (how many of each kind this boloop knows, those
    present), ``foreign`` (rows of a kind it does not know), ``last_at`` (the time of the last
    event), ``open_query`` (the query of the last ``asked`` event that no ``told`` event
    answers, undos not counted), ``no_query`` (``asked`` and ``told`` rows without a query id)
    and ``odd_payloads`` (payloads the storage cannot vouch are JSON objects)."""

    events: int
    first_seq: int
    last_seq: int
    kinds: dict[str, int]
    foreign: int
    last_at: str
    open_query: int | None
    no_query: int
    odd_payloads: int

    def complete(self) -> bool:
        """Whether the counts say all that a listing reads of the log: its rows are numbered
        0, 1, ... without a gap (``UNIQUE(study_id, seq)``: as many rows as numbers), every
        payload a JSON object and every question and answer naming its query, so the log reads
        without error (:func:`decode_events`); and it holds no undo and no mark of a migrate, so
        its events are all in effect (``effective_events``) and the study is not moved."""
        return (
            self.first_seq == 0
            and self.events == self.last_seq + 1
            and self.foreign == 0
            and self.no_query == 0
            and self.odd_payloads == 0
            and set(self.kinds) <= set(_COUNTED_KINDS)
        )


def summary_statement(payload_is_object: str) -> str:
    """The statement (no parameters) whose rows :func:`decode_summaries` reads, for the tables of
    :mod:`boloop.study.storage` (SQLite and PostgreSQL alike): per study its counts and the time
    of its last event, once per query asked and never answered (with the ``seq`` of its last
    ``asked`` event), else once. One statement, so that it sees one state of the storage on
    every database (PostgreSQL gives each statement its own snapshot). ``payload_is_object``: a
    condition on ``e.payload`` true only of a payload that is a JSON object as Python's ``json``
    reads it (the database's own JSON functions; :func:`sqlite_object_check`)."""
    counts = ", ".join(
        f"SUM(CASE WHEN e.kind = '{k}' THEN 1 ELSE 0 END) AS k{i}" for i, k in enumerate(EVENT_KINDS)
    )
    kinds = ", ".join(f"t.k{i}" for i in range(len(EVENT_KINDS)))
    return (
        f"SELECT t.name, t.n, t.lo, t.hi, {kinds}, t.no_query, t.odd, l.created_at, "
        "o.query_id, o.asked FROM ("
        f"SELECT s.study_id, s.name, COUNT(*) AS n, MIN(e.seq) AS lo, MAX(e.seq) AS hi, {counts}, "
        "SUM(CASE WHEN e.kind IN ('asked', 'told') AND e.query_id IS NULL THEN 1 ELSE 0 END) "
        f"AS no_query, SUM(CASE WHEN {payload_is_object} THEN 0 ELSE 1 END) AS odd "
        "FROM boloop_studies s JOIN boloop_events e ON e.study_id = s.study_id "
        "GROUP BY s.study_id, s.name) t "
        "JOIN boloop_events l ON l.study_id = t.study_id AND l.seq = t.hi "
        "LEFT JOIN (SELECT e.study_id, e.query_id, MAX(CASE WHEN e.kind = 'asked' THEN e.seq END) "
        "AS asked FROM boloop_events e WHERE e.kind IN ('asked', 'told') "
        "GROUP BY e.study_id, e.query_id "
        "HAVING SUM(CASE WHEN e.kind = 'told' THEN 1 ELSE 0 END) = 0) o "
        "ON o.study_id = t.study_id"
    )


def sqlite_object_check(version: tuple[int, ...]) -> str | None:
    """The condition of :func:`summary_statement` for SQLite ``version``: a text payload that
    starts with ``{`` (as every payload boloop writes), holds no NUL (SQLite's JSON parser stops
    at one, Python's does not) and that ``json_valid`` takes. It may doubt a payload Python
    reads (NaN, a leading space): that study's log is read. None for SQLite 3.42 to 3.44, whose
    ``json_valid`` also takes JSON5 (single quotes, comments), which Python's ``json``
    refuses: no check there is exact, so every log is read."""
    if (3, 42) <= tuple(version[:2]) < (3, 45):
        return None
    return (
        "typeof(e.payload) = 'text' AND substr(e.payload, 1, 1) = '{' "
        "AND instr(e.payload, char(0)) = 0 AND json_valid(e.payload)"
    )


def decode_summaries(rows: Iterable[Sequence[Any]]) -> dict[str, LogSummary]:
    """The :class:`LogSummary` of each study, by name, from the rows of
    :func:`summary_statement`."""
    out: dict[str, LogSummary] = {}
    asked_at: dict[str, int] = {}  # the seq of the open query's last asked event
    k = len(EVENT_KINDS)
    for name, n, lo, hi, *rest in rows:
        name = str(name)
        qid, seq = rest[k + 3], rest[k + 4]
        if name in out and (seq is None or int(seq) <= asked_at[name]):
            continue  # another open query, asked before the one kept
        kinds = {kind: int(c) for kind, c in zip(EVENT_KINDS, rest[:k]) if int(c)}
        asked_at[name] = -1 if seq is None else int(seq)
        out[name] = LogSummary(
            events=int(n),
            first_seq=int(lo),
            last_seq=int(hi),
            kinds=kinds,
            foreign=int(n) - sum(kinds.values()),
            last_at=str(rest[k + 2]),
            open_query=None if seq is None or qid is None else int(qid),
            no_query=int(rest[k]),
            odd_payloads=int(rest[k + 1]),
        )
    return out


def summarise(
    events_by_name: Mapping[str, Sequence[tuple[Any, Any, Any, Any, Any]]],
) -> dict[str, LogSummary]:
    """The :class:`LogSummary` of each study from its stored rows ``(seq, kind, query_id,
    payload text, created_at)`` in order of ``seq``, as :func:`summary_statement` counts them (the
    in-process storage, whose rows are at hand)."""
    out = {}
    for name, rows in events_by_name.items():
        if not rows:
            continue
        kinds: dict[str, int] = {}
        no_query = odd = 0
        unanswered: dict[Any, int] = {}  # query id -> seq of its last asked event
        told: set[Any] = set()
        for seq, kind, qid, payload, _ in rows:
            if kind in EVENT_KINDS:
                kinds[kind] = kinds.get(kind, 0) + 1
            if kind in ("asked", "told") and qid is None:
                no_query += 1
            if kind == "asked":
                unanswered[qid] = seq
            elif kind == "told":
                told.add(qid)
            try:
                odd += not isinstance(json.loads(payload), dict)
            except ValueError:
                odd += 1
        asked = [(seq, qid) for qid, seq in unanswered.items() if qid not in told]
        seqs = [r[0] for r in rows]
        out[name] = LogSummary(
            events=len(rows),
            first_seq=min(seqs),
            last_seq=max(seqs),
            kinds=kinds,
            foreign=len(rows) - sum(kinds.values()),
            last_at=rows[-1][4],
            open_query=max(asked)[1] if asked else None,
            no_query=no_query,
            odd_payloads=odd,
        )
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
