"""Read-only work on a study's policy: one copy of it per state of the study.

``recommend()`` and ``describe()`` never run on the live policy: some policies fit their models
lazily inside them and draw random numbers for it (the expert family's ``_sync_gp``), which would
make the live study's next query differ from a replay of its log. They run on a deep copy. A
copy of a large policy is not free (a preference study of 1,500 options keeps several m x m
matrices), so one copy serves everything read in one :meth:`Study.readout` scope (a web page's
status and model picture), and what was read is kept with the study's state
(:class:`PolicyReadout`'s ``key``): drawing an unchanged study again copies nothing.

A process that ends after one read (``boloop study status``: one process per call) gains
nothing from a copy: it may read the live policy itself (``copy=False``), and the study rebuilds
its policy from the log before any further use (:meth:`Study.status`'s ``keep_policy``).
"""

from __future__ import annotations

import copy
import traceback
from collections.abc import Callable, Hashable
from typing import Any

from boloop._blas import one_blas_thread
from boloop.errors import BoloopError

__all__ = ["PolicyReadout"]


class PolicyReadout:
    """What is read from copies of a policy in one state ``key`` (the study's generation of
    policy, last event, open query and iteration).

    A copy is made with the readout and asked, in this order, ``recommend()`` (its result, or the
    exception it raised) then ``describe()`` ({} if it fails: introspection only). The
    recommendation is kept as ``name`` writes it (the study's parameter names: plain values,
    nothing of the copy); the copy and its own recommendation object (a level-set estimate's
    ``classify`` calls into the copy) stay for :meth:`product` while the readout is in use
    (``users``) and are dropped after, so its matrices are not kept. A product asked for after
    that is drawn from a new copy brought to the same point (copied, then ``recommend()`` and
    ``describe()``): every product is read from a copy in the same state whoever came first.
    """

    def __init__(
        self, policy: Any, key: Hashable, name: Callable[[Any], Any], copy: bool = True
    ) -> None:
        self.key = key
        self.users = 0
        self._products: dict[str, Any] = {}
        self._twin, self._raw, error, self.described = _read(policy, copy)
        self._recommendation: Any = None
        if error is None:
            try:
                self._recommendation = name(self._raw)
            except Exception as exc:  # noqa: BLE001 - kept and raised again, as recommend()'s
                error = _without_tracebacks(exc)
        self._error = error

    def recommend(self) -> Any:
        """The copy's ``recommend()`` in ``name``'s words (a fresh copy of them: the caller may
        change it), or the exception it raised, raised again."""
        if self._error is not None:
            raise self._error.with_traceback(None)
        return copy.deepcopy(self._recommendation)

    def product(self, name: str, policy: Any, draw: Callable[[Any, Any], Any]) -> Any:
        """``draw(copy, recommendation)`` computed once per state and kept: ``name`` says what
        it is; ``recommendation`` is the copy's own ``recommend()`` result (None if it raised);
        ``policy`` is the live policy (copied again only if this readout's copy was dropped).
        ``draw`` may call anything on the copy; the live policy is never touched. Nothing is
        kept if it raises."""
        if name not in self._products:
            if self._twin is None:
                self._twin, self._raw = _read(policy)[:2]
            self._products[name] = draw(self._twin, self._raw)
        return self._products[name]

    def release(self) -> None:
        """Drop the copy and its recommendation object (what was read from them is kept)."""
        self._twin = self._raw = None


def _read(
    policy: Any, twin_copy: bool = True
) -> tuple[Any, Any, BaseException | None, dict[str, Any]]:
    """A deep copy of ``policy`` after its ``recommend()`` and ``describe()``: (copy,
    recommendation or None, the exception ``recommend()`` raised or None, description).
    ``twin_copy=False``: ``policy`` itself is read (it may change: its owner must not use it
    again)."""
    twin = copy.deepcopy(policy) if twin_copy else policy
    rec: Any = None
    error: BaseException | None = None
    with one_blas_thread():  # as the live policy computes (boloop._blas)
        try:
            rec = twin.recommend()
        except Exception as exc:  # noqa: BLE001 - kept and raised again to whoever reads it
            error = _without_tracebacks(exc)
        try:
            described = dict(twin.describe())
        except Exception:  # noqa: BLE001 - introspection only; a status must always print
            described = {}
    return twin, rec, error, described


def _without_tracebacks(exc: BaseException) -> BaseException:
    """``exc`` with no traceback on it or the exceptions it chains: a kept traceback would keep
    the frames of the copy's ``recommend()``, and with them the copy. Where it came from is kept
    as text (a note on ``exc``: a bug inside a policy's ``recommend()`` still names its line)."""
    if not isinstance(exc, BoloopError) and hasattr(exc, "add_note"):  # notes: Python 3.11+
        where = "".join(traceback.format_tb(exc.__traceback__))
        exc.add_note(f"raised in the policy's recommend():\n{where}")
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        e.__traceback__ = None
        e = e.__cause__ or e.__context__
    return exc
