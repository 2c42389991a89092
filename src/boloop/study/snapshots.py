"""Policy snapshots: a pickled policy stored beside the log, so a long study loads without
replaying every event.

A snapshot is only a cache. It is reused only by the exact code that wrote it
(:func:`_code_fingerprint`: boloop's sources and numpy's version) and only while no undo reached
back before it; the events after it are replayed and checked as usual
(:mod:`boloop.study.replay`). When and how large (:data:`SNAPSHOT_AFTER_SECONDS`,
:data:`SNAPSHOT_COST_FACTOR`, :data:`SNAPSHOT_MAX_BYTES`, ``BOLOOP_SNAPSHOTS=0``) is set here.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import pickle
import time
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

import boloop
from boloop.errors import StorageError, StorageUnavailableError
from boloop.queries import BasePolicy
from boloop.study.log import Event
from boloop.study.replay import effective_events

if TYPE_CHECKING:
    from boloop.study.sqlite_log import SQLiteLog
    from boloop.study.storage import StorageBackend

__all__ = [
    "SNAPSHOT_AFTER_SECONDS",
    "SNAPSHOT_COST_FACTOR",
    "SNAPSHOT_MAX_BYTES",
    "SNAPSHOTS_ENABLED",
    "StudySnapshots",
]

logger = logging.getLogger("boloop")

#: store a policy snapshot once replaying the events since the last one costs this many seconds
#: (a command-line call loads the study afresh: a 300-answer replay of even a cheap policy costs
#: tens of milliseconds, a snapshot a few)
SNAPSHOT_AFTER_SECONDS = 0.02
#: ... and costs this many times what writing the last snapshot took
SNAPSHOT_COST_FACTOR = 2.0
#: snapshots larger than this (compressed) are not stored
SNAPSHOT_MAX_BYTES = 64 * 2**20
#: set ``BOLOOP_SNAPSHOTS=0`` to never store snapshots (every load replays the whole log)
SNAPSHOTS_ENABLED = os.environ.get("BOLOOP_SNAPSHOTS", "1") != "0"


@functools.lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    """Hash of boloop's source files and the numpy version: a snapshot is only reused by the
    exact code that wrote it (any change to an algorithm means a full, checked replay)."""
    h = hashlib.sha256()
    h.update(boloop.__version__.encode())
    h.update(np.__version__.encode())
    root = os.path.dirname(os.path.abspath(boloop.__file__))
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            if fn.endswith(".py"):
                path = os.path.join(dirpath, fn)
                h.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as fh:
                    h.update(fh.read())
    return h.hexdigest()


class StudySnapshots:
    """The snapshot half of :class:`~boloop.study.core.Study` (a mixin: it works on the study's
    own state). What it needs from the study is declared below (annotations only: no attribute
    is created here)."""

    # set by Study.__init__
    name: str
    problem: Any
    _storage: StorageBackend | SQLiteLog
    _sid: int
    _snapshot_off: bool  # True once the policy could not be pickled or was too large
    _snapshot_cost: float  # seconds the last snapshot took to write (or to load)
    # the replay state (StudyReplay): the last event's seq, the live policy, replay seconds
    # since the last snapshot
    _seq: int
    _policy: BasePolicy
    _cost: float
    # hook of the host: Study (the problem from a snapshot, or built from the configuration)
    _set_problem: Callable[[Any], None]

    def _snapshot_policy(
        self, events: list[Event], effective: list[Event]
    ) -> tuple[BasePolicy, int] | None:
        """``(policy, number of effective events it includes)`` from a valid snapshot."""
        try:
            snap = self._storage.get_snapshot(self._sid)
        except StorageUnavailableError:
            raise  # the database is down: a full replay would not help (and may take minutes)
        except StorageError:
            return None
        if snap is None:
            return None
        seq, fingerprint, data = snap
        if fingerprint != _code_fingerprint() or seq > self._seq:
            return None
        prefix = effective_events([e for e in events if e.seq <= seq], self.name)
        if [e.seq for e in effective[: len(prefix)]] != [e.seq for e in prefix]:
            return None  # a later undo reached back before the snapshot
        t0 = time.perf_counter()
        try:
            saved = pickle.loads(zlib.decompress(data))
        except Exception as exc:  # noqa: BLE001 - a cache: any failure means a full replay
            logger.debug("study %r: snapshot at event %s unreadable: %s", self.name, seq, exc)
            return None
        # what loading it cost approximates what writing the next one will cost
        self._snapshot_cost = max(self._snapshot_cost, time.perf_counter() - t0)
        if isinstance(saved, dict) and "policy" in saved:  # {"policy", "problem"}
            self._set_problem(saved.get("problem"))
            return saved["policy"], len(prefix)
        self._set_problem(None)  # an older snapshot: the policy alone
        return saved, len(prefix)

    def save_snapshot(self) -> None:
        """Store a snapshot of the policy as it is now (unless nothing was applied since the
        last one, or snapshots are off). ``boloop study tell`` calls it: the next call, a new
        process, loads the policy with the answer in it instead of replaying the answer (a
        factorisation, and the import of scipy.linalg, in the level-set and safe families)."""
        if self._cost > 0:
            self._maybe_snapshot(force=True)

    def _maybe_snapshot(self, force: bool = False) -> None:
        """Store a snapshot once replaying the events since the last one would cost more than
        :data:`SNAPSHOT_AFTER_SECONDS` (policies that refit hyperparameters at every answer) and
        more than twice what the last snapshot cost to write (large policies snapshot rarely);
        ``force`` stores one whatever the cost."""
        if not SNAPSHOTS_ENABLED or self._snapshot_off:
            return
        limit = max(SNAPSHOT_AFTER_SECONDS, SNAPSHOT_COST_FACTOR * self._snapshot_cost)
        if not force and self._cost < limit:
            return
        self._cost = 0.0
        t0 = time.perf_counter()
        try:
            try:  # with the problem, so a load needs no registry lookup
                saved: Any = {"policy": self._policy, "problem": self.problem}
                data = zlib.compress(pickle.dumps(saved, protocol=pickle.HIGHEST_PROTOCOL), 1)
                if len(data) > SNAPSHOT_MAX_BYTES:
                    raise ValueError("too large with the problem's data")
            except Exception:  # noqa: BLE001 - a problem from a user's file, a large data set
                raw = pickle.dumps(self._policy, protocol=pickle.HIGHEST_PROTOCOL)
                data = zlib.compress(raw, 1)
        except Exception as exc:  # noqa: BLE001 - unpicklable policies just replay in full
            logger.debug("study %r: policy cannot be pickled: %s", self.name, exc)
            self._snapshot_off = True
            return
        if len(data) > SNAPSHOT_MAX_BYTES:
            logger.debug("study %r: snapshot of %d bytes not stored", self.name, len(data))
            self._snapshot_off = True
            return
        self._storage.put_snapshot(self._sid, self._seq, _code_fingerprint(), data)
        self._snapshot_cost = time.perf_counter() - t0
