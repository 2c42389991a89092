"""What a study's log holds, counted by its storage without sending or decoding the log
(:class:`LogSummary`, :meth:`StorageBackend.log_summaries
<boloop.study.storage.StorageBackend.log_summaries>`): the one SQL statement every database
storage runs (:func:`summary_statement`, SQLite and PostgreSQL alike), the condition that
vouches for a payload on SQLite (:func:`sqlite_object_check`), the rows decoded
(:func:`decode_summaries`) and the same counts made in Python by the in-process store
(:func:`summarise`). What :func:`boloop.study.listing.list_studies` reads instead of every log.

Free of SQLAlchemy and numpy, as :mod:`boloop.study.log` is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from boloop.study.log import EVENT_KINDS

__all__ = [
    "LogSummary",
    "decode_summaries",
    "sqlite_object_check",
    "summarise",
    "summary_statement",
]


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
