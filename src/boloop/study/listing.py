"""Listing a storage's studies (:func:`list_studies`): each study's row read from its log
without replaying it, and from the storage's counts where they say all
(:mod:`boloop.study.log_summary`). :mod:`boloop.study.core` re-exports it.
"""

from __future__ import annotations

from typing import Any

from boloop.errors import (
    StorageAccessError,
    StorageError,
    StorageUnavailableError,
    UnknownIdError,
)
from boloop.study.carry import continued_among, readable_created_events
from boloop.study.create import _open_existing
from boloop.study.log import Event, moved_mark
from boloop.study.replay import effective_events

__all__ = ["list_studies"]


def list_studies(storage: str | None = None) -> list[dict[str, Any]]:
    """The studies in a storage: ``name``, ``created_at``, ``method``, ``family``, ``answered``,
    ``open_query`` (the id of the query asked and not answered, or None), ``last_activity``
    (the time of the last event), ``continued_as`` (the studies of this storage that continue
    it, :meth:`Study.continued_as`), ``moved_to`` (where ``boloop study migrate`` moved it,
    password masked; None while it lives here) and ``unreadable``, read from the logs without
    replaying them.

    The storage counts what the logs hold in one statement (:meth:`log_summaries
    <boloop.study.storage.StorageBackend.log_summaries>`) and gives the studies' ``created``
    events in one more; a log is read only where the counts cannot say all (an undo, a
    migrate's mark, a row the storage cannot vouch for), so that listing costs little more as
    the studies grow long. A study whose log cannot be read (an event kind a newer boloop
    wrote, a corrupt row) does not fail the listing of the others: its row has
    ``unreadable``, why (None for the others), and None for what would come from its log. A
    storage that cannot be reached still fails."""
    store = _open_existing(storage)
    names = store.study_names()
    summaries = store.log_summaries() or {}
    counted = [n for n, _ in names if n in summaries and summaries[n].complete()]
    created_events = readable_created_events(store, counted) if counted else {}
    out = []
    firsts: dict[str, Event] = {}  # the created events of the readable logs, in creation order
    logs: dict[str, list[Event]] = {}  # the logs read
    for name, created_at in names:
        summary = summaries.get(name)
        if summary is not None and name in created_events and summary.complete():
            firsts[name] = first = created_events[name]
            answered = summary.kinds.get("told", 0) + summary.kinds.get("added", 0)
            out.append(
                _listed_row(name, created_at, first, answered, summary.open_query, summary.last_at, None)
            )
            continue
        try:
            events = store.events(store.study_id(name))
            effective = effective_events(events, name)
        except UnknownIdError:  # removed (migrate --undo) since the names were read
            continue
        except (StorageUnavailableError, StorageAccessError):
            raise  # the storage, not this study
        except StorageError as exc:
            out.append(_unreadable_row(name, created_at, str(exc)))
            continue
        logs[name] = events
        if events:
            firsts[name] = events[0]
        answered = len([e for e in effective if e.kind in ("told", "added")])
        told = {e.query_id for e in effective if e.kind == "told"}
        asked = [e.query_id for e in effective if e.kind == "asked" and e.query_id not in told]
        mark = moved_mark(events)
        out.append(
            _listed_row(
                name,
                created_at,
                events[0] if events else None,
                answered,
                asked[-1] if asked else None,
                events[-1].created_at if events else created_at,
                None if mark is None else mark.payload.get("to"),
            )
        )

    def log(name: str) -> list[Event] | None:
        """A listed study's log, for a continuation an earlier boloop recorded."""
        if name not in logs:
            try:
                logs[name] = store.events(store.study_id(name))
            except (StorageUnavailableError, StorageAccessError):
                raise
            except (UnknownIdError, StorageError):  # removed, or a newer kind written, since
                return None
        return logs[name]

    continued = continued_among(store.url, firsts, log)
    for row in out:
        row["continued_as"] = continued.get(row["name"], [])
    return out


def _listed_row(
    name: str,
    created: str,
    first: Event | None,
    answered: int,
    open_query: int | None,
    last_activity: str,
    moved_to: str | None,
) -> dict[str, Any]:
    """The :func:`list_studies` row of a study whose log can be read, its ``created`` event
    ``first`` (None: an empty log) giving the method, family and problem."""
    cfg = first.payload if first is not None else {}
    return {
        "name": name,
        "created_at": created,
        "method": cfg.get("method"),
        "family": cfg.get("family"),
        "problem": cfg.get("problem") or "user space",
        "answered": answered,
        "open_query": open_query,
        "last_activity": last_activity,
        "moved_to": moved_to,
        "unreadable": None,
    }


def _unreadable_row(name: str, created: str, why: str) -> dict[str, Any]:
    """The :func:`list_studies` row of a study whose log cannot be read: ``why``."""
    return {
        "name": name,
        "created_at": created,
        "method": None,
        "family": None,
        "problem": None,
        "answered": None,
        "open_query": None,
        "last_activity": created,
        "moved_to": None,
        "unreadable": why,
    }
