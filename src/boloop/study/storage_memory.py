"""An in-process storage (``memory://name``): the :class:`~boloop.study.storage.StorageBackend`
protocol over Python lists, for tests and notebooks.

Stores live as long as the process: ``memory://lab`` opened twice in one process is the same
store, and nothing is shared with other processes. Payloads are kept as the same JSON text the SQL
backends store, so what goes in and comes out is exactly what a database would give back. One
lock per store makes every transaction atomic and serialises writers, as the SQL backends do.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from boloop.errors import InvalidInputError, StorageError, UnknownIdError
from boloop.study.log import (
    EVENT_KINDS,
    Event,
    SeqConflict,
    decode_created,
    decode_events,
    encode_payload,
    now_iso,
)
from boloop.study.log_summary import LogSummary, summarise
from boloop.study.storage_backend import check_droppable, check_import, name_taken

__all__ = ["MemoryStorage", "discard_memory_store"]

_Row = tuple[int, str, "int | None", str, str]  # seq, kind, query_id, payload text, created_at


@dataclass
class _Store:
    lock: threading.RLock = field(default_factory=threading.RLock)
    studies: dict[str, tuple[int, str]] = field(default_factory=dict)  # name -> (id, created)
    events: dict[int, list[_Row]] = field(default_factory=dict)
    snapshots: dict[int, tuple[int, str, bytes]] = field(default_factory=dict)
    last_id: int = 0  # ids only go up: a removed study's id is never given to another


_stores: dict[str, _Store] = {}
_stores_lock = threading.Lock()


class MemoryTransaction:
    """Appends are buffered and applied when the transaction ends without an exception."""

    def __init__(self, store: _Store, url: str) -> None:
        self._store = store
        self._url = url
        self.pending: list[tuple[int, _Row]] = []

    def _rows(self, study_id: int) -> list[_Row]:
        rows = list(self._store.events.get(study_id, []))
        rows += [r for sid, r in self.pending if sid == study_id]
        return rows

    def events(self, study_id: int, after: int = -1) -> list[Event]:
        rows = sorted((r for r in self._rows(study_id) if r[0] > after), key=lambda r: r[0])
        return decode_events(rows, study_id, after, self._url)

    def study(self, study_id: int) -> tuple[str, str] | None:
        for name, (sid, created) in self._store.studies.items():
            if sid == study_id:
                return name, created
        return None

    def append(
        self, study_id: int, seq: int, kind: str, query_id: int | None, payload: dict[str, Any]
    ) -> Event:
        if kind not in EVENT_KINDS:
            raise InvalidInputError(f"kind must be one of {EVENT_KINDS}, got {kind!r}")
        text = encode_payload(payload)
        if study_id not in self._store.events:
            raise StorageError(f"storage {self._url!r}: no study with id {study_id}")
        if any(r[0] == seq for r in self._rows(study_id)):
            raise SeqConflict(
                f"storage {self._url!r}: another process wrote to the study first (event "
                f"{seq} of study {study_id} exists)"
            )
        created = now_iso()
        self.pending.append((study_id, (seq, kind, query_id, text, created)))
        return decode_events([(seq, kind, query_id, text, created)], study_id, seq - 1, self._url)[0]


class MemoryStorage:
    """The store ``memory://name`` of this process (see the module docstring)."""

    def __init__(self, url: str = "memory://", create: bool = True) -> None:
        if not url.startswith("memory://"):
            raise InvalidInputError(f"an in-process storage URL starts with memory://, got {url!r}")
        self.url = url
        self.display_url = url
        with _stores_lock:
            store = _stores.get(url)
            if store is None and create:
                store = _stores[url] = _Store()
        self._store = store
        self.exists = store is not None

    def _need(self) -> _Store:
        if self._store is None:  # opened without create and still empty: look again
            self._store = _stores.get(self.url)
            self.exists = self._store is not None
        if self._store is None:
            raise StorageError(f"storage {self.url!r} was opened without create")
        return self._store

    # -- studies ------------------------------------------------------------------------------
    def study_names(self) -> list[tuple[str, str]]:
        if self._store is None and self.url not in _stores:
            return []
        store = self._need()
        with store.lock:
            return [(n, c) for n, (_, c) in sorted(store.studies.items(), key=lambda i: i[1][0])]

    def created_events(self, names: Sequence[str]) -> dict[str, Event]:
        if self._store is None and self.url not in _stores:
            return {}
        store = self._need()
        rows = []
        with store.lock:
            for name in dict.fromkeys(names):
                hit = store.studies.get(name)
                first = store.events.get(hit[0], [])[:1] if hit is not None else []
                if hit is not None and first and first[0][0] == 0:
                    rows.append((name, hit[0], *first[0]))
        return decode_created(rows, self.url)

    def log_summaries(self) -> dict[str, LogSummary] | None:
        """What the log of every study holds, counted from its rows (see
        :class:`~boloop.study.storage.StorageBackend`)."""
        if self._store is None and self.url not in _stores:
            return {}
        store = self._need()
        with store.lock:
            rows = {
                name: sorted(store.events.get(sid, []), key=lambda r: r[0])
                for name, (sid, _) in store.studies.items()
            }
        return summarise(rows)

    def study_id(self, name: str) -> int:
        hit = None
        if self._store is not None or self.url in _stores:
            store = self._need()
            with store.lock:
                hit = store.studies.get(name)
        if hit is None:
            names = [n for n, _ in self.study_names()]
            raise UnknownIdError(
                f"no study named {name!r} in storage {self.url!r}; stored studies: {names}"
            )
        return hit[0]

    def create_study(self, name: str, config: dict[str, Any]) -> int:
        created = now_iso()
        return self._insert(name, created, [Event(0, "created", None, config, created)])

    def import_study(self, name: str, created_at: str, events: Sequence[Event]) -> int:
        check_import(name, created_at, events, self.url)
        return self._insert(name, created_at, events)

    def _insert(self, name: str, created_at: str, events: Sequence[Event]) -> int:
        store = self._need()
        rows = [
            (ev.seq, ev.kind, ev.query_id, encode_payload(ev.payload), ev.created_at)
            for ev in events
        ]
        with store.lock:
            if name in store.studies:
                raise InvalidInputError(name_taken(name, self.url))
            store.last_id += 1
            sid = store.last_id
            store.studies[name] = (sid, created_at)
            store.events[sid] = rows
        return sid

    def drop_study(self, name: str, last_seq: int) -> None:
        sid = self.study_id(name)
        store = self._need()
        with store.lock:
            rows = store.events.get(sid, [])
            check_droppable(name, decode_events(rows, sid, -1, self.url), last_seq, self.url)
            del store.studies[name]
            store.events.pop(sid, None)
            store.snapshots.pop(sid, None)

    # -- events -------------------------------------------------------------------------------
    @contextmanager
    def transaction(self, write: bool = True) -> Iterator[MemoryTransaction]:
        store = self._need()
        with store.lock:
            tx = MemoryTransaction(store, self.url)
            yield tx
            for sid, row in tx.pending:
                if any(r[0] == row[0] for r in store.events[sid]):  # pragma: no cover - locked
                    raise SeqConflict(f"storage {self.url!r}: event {row[0]} exists")
            for sid, row in tx.pending:
                store.events[sid].append(row)

    def events(self, study_id: int, after: int = -1) -> list[Event]:
        with self.transaction(write=False) as tx:
            return tx.events(study_id, after)

    def put_snapshot(self, study_id: int, seq: int, fingerprint: str, data: bytes) -> None:
        store = self._need()
        with store.lock:
            store.snapshots[study_id] = (int(seq), str(fingerprint), bytes(data))

    def get_snapshot(self, study_id: int) -> tuple[int, str, bytes] | None:
        store = self._need()
        with store.lock:
            return store.snapshots.get(study_id)

    def size_bytes(self) -> int | None:
        return None


def discard_memory_store(url: str) -> None:
    """Forget the in-process store ``url`` and everything in it (a private staging store, see
    :mod:`boloop.study.carry`); a store that does not exist is ignored."""
    with _stores_lock:
        _stores.pop(url, None)
