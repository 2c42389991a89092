"""A study's answers as rows: :meth:`~StudyHistory.history` (in effect, or every answer given
with when an undo withdrew it), the raw log (:meth:`~StudyHistory.events`) and the export of
the history to CSV or JSON (:meth:`~StudyHistory.export`).

:class:`StudyHistory` is a mixin of :class:`~boloop.study.core.Study`, as
:class:`~boloop.study.replay.StudyReplay` and :class:`~boloop.study.snapshots.StudySnapshots`
are: it works on the study's own state.
"""

from __future__ import annotations

import csv
import json
import numbers
import os
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from boloop._files import replaced_when_written
from boloop.errors import BoloopError, InvalidInputError
from boloop.study.answers import answer_text
from boloop.study.log import Event
from boloop.study.replay import decode_answer, decode_query

if TYPE_CHECKING:
    from boloop.queries import Query
    from boloop.study.parameters import StudyQuery

__all__ = ["StudyHistory"]


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return str(obj)


class StudyHistory:
    """The history half of :class:`~boloop.study.core.Study`: its answers as rows, the raw log
    and the export (a mixin: it works on the study's own state). What it needs from the study is
    declared below (annotations only: no attribute is created here)."""

    # set by Study.__init__ and Study._set_problem
    name: str
    config: dict[str, Any]
    _labels: Sequence[str] | None  # the names of a table's options, or None
    # the replay state (StudyReplay)
    _events: list[Event]
    _effective: list[Event]
    _asked: dict[int, Event]
    # hooks of the host: Study (catching up with the log, names, the recommendation)
    refresh: Callable[[], None]
    recommend: Callable[[], Any]
    _params: Callable[[Any], dict[str, float]]
    _wrap: Callable[[Query], StudyQuery]

    if TYPE_CHECKING:  # declared for the checker only, as the annotations above

        @property
        def names(self) -> list[str]:
            """Study's property: the parameter names."""
            ...

    def history(self, last: int | None = None, *, withdrawn: bool = False) -> list[dict[str, Any]]:
        """Answers in effect, oldest first: rows with ``query_id, kind, source, params`` (or
        ``a``, ``b``), ``answer``, ``answer_text``, ``asked_at``, ``told_at`` (UTC), ``note`` (or None);
        ``calibration: True`` on a label whose point was measured whatever the answer (COBOL's
        agreement gate); only the ``last`` ones if given.

        ``withdrawn=True`` (an audit): the answers an undo withdrew too, with their notes, in
        the order they were given, and on every row ``withdrawn_at``: when it was withdrawn
        (UTC), None for an answer in effect."""
        if last is not None and (
            isinstance(last, bool) or not isinstance(last, numbers.Integral) or last < 0
        ):
            raise InvalidInputError(f"last must be a non-negative integer, got {last!r}")
        if not isinstance(withdrawn, bool | np.bool_):  # "yes", "no" and 0 read as true or false
            raise InvalidInputError(f"withdrawn must be True or False, got {withdrawn!r}")
        self.refresh()
        rows = self._withdrawn_too() if withdrawn else self._rows_in_effect()
        if last is not None:
            rows = rows[len(rows) - last :] if last else []
        return rows

    def _rows_in_effect(self) -> list[dict[str, Any]]:
        return [self._row(e) for e in self._effective if e.kind in ("told", "added")]

    def _withdrawn_too(self) -> list[dict[str, Any]]:
        """Every answer of the log in the order given, in effect or withdrawn, with
        ``withdrawn_at``; a withdrawn answer's query is the one asked before it in the log."""
        in_effect = {e.seq for e in self._effective if e.kind in ("told", "added")}
        undone = {e.payload.get("withdraws"): e for e in self._events if e.kind == "withdrawn"}
        asked: dict[int | None, Event] = {}
        rows = []
        for ev in self._events:
            if ev.kind == "asked":
                asked[ev.query_id] = ev
            elif ev.kind in ("told", "added") and (ev.seq in in_effect or ev.seq in undone):
                gone = undone.get(ev.seq) if ev.seq not in in_effect else None
                row = self._row(ev, asked.get(ev.query_id) if gone is not None else None)
                row["withdrawn_at"] = None if gone is None else gone.created_at
                rows.append(row)
        return rows

    def events(self) -> list[dict[str, Any]]:
        """The raw log (including withdrawn answers and stale queries): one dict per event."""
        self.refresh()
        return [
            {
                "seq": e.seq,
                "kind": e.kind,
                "query_id": e.query_id,
                "payload": e.payload,
                "created_at": e.created_at,
            }
            for e in self._events
        ]

    def _row(self, ev: Event, asked: Event | None = None) -> dict[str, Any]:
        """The history row of answer ``ev``; ``asked``: its query's event (default: the one in
        effect)."""
        answer = decode_answer(ev.payload.get("answer"))
        if ev.kind == "added":
            kind = "label" if ev.payload.get("label") else "evaluate"
            return {
                "query_id": None,
                "kind": kind,
                "source": "added",
                "params": self._params(ev.payload["x"]),
                "a": None,
                "b": None,
                "answer": answer,
                "answer_text": answer_text(kind, answer),
                "asked_at": None,
                "told_at": ev.created_at,
                "note": ev.payload.get("note"),
            }
        if asked is None:
            asked = self._asked[ev.query_id]  # type: ignore[index]
        sq = self._wrap(decode_query(asked, self.name))
        row = {
            "query_id": ev.query_id,
            "kind": sq.kind,
            "source": "query",
            "params": sq.params,
            "a": sq.a,
            "b": sq.b,
            "answer": answer,
            "answer_text": answer_text(sq.kind, answer),
            "asked_at": asked.created_at,
            "told_at": ev.created_at,
            "note": ev.payload.get("note"),
        }
        for key in ("label", "a_label", "b_label"):
            if getattr(sq, key) is not None:
                row[key] = getattr(sq, key)
        if sq.calibration:  # a label whose point was measured whatever the answer
            row["calibration"] = True
        return row

    def _flat_rows(self, hist: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
        names = self.names
        cols = ["query_id", "kind", "source", "asked_at", "told_at"]
        has = {k: any(r["kind"] == k for r in hist) for k in ("evaluate", "label", "compare")}
        if has["evaluate"] or has["label"]:
            cols += names
            if self._labels is not None:
                cols.append("label")
        if has["compare"]:
            cols += [f"a.{n}" for n in names] + [f"b.{n}" for n in names]
            if self._labels is not None:
                cols += ["a.label", "b.label"]
        outputs: list[str] = []
        for r in hist:
            if isinstance(r["answer"], dict):
                outputs += [k for k in r["answer"] if k not in outputs]
        if has["evaluate"]:
            cols += [f"value.{k}" for k in outputs] or ["value"]
            if outputs and any(
                not isinstance(r["answer"], dict) for r in hist if r["kind"] == "evaluate"
            ):
                cols.append("value")
        if has["label"]:
            cols.append("accepted")
            cols.append("calibration")  # always with labels, as "note": stable columns
        if has["compare"]:
            cols.append("preferred")
        cols.append("note")  # always, empty when none: scripts read exports of many studies
        rows = []
        for r in hist:
            out = {k: r.get(k) for k in ("query_id", "kind", "source", "asked_at", "told_at")}
            if r["params"] is not None:
                out.update(r["params"])
                if "label" in r:
                    out["label"] = r["label"]
            if r["a"] is not None:
                out.update({f"a.{k}": v for k, v in r["a"].items()})
                out.update({f"b.{k}": v for k, v in r["b"].items()})
                if "a_label" in r:
                    out["a.label"], out["b.label"] = r["a_label"], r["b_label"]
            ans = r["answer"]
            if r["kind"] == "evaluate":
                if isinstance(ans, dict):
                    out.update({f"value.{k}": v for k, v in ans.items()})
                else:
                    out["value"] = ans
            elif r["kind"] == "label":
                out["accepted"] = bool(ans)
                out["calibration"] = bool(r.get("calibration"))
            else:
                out["preferred"] = "a" if int(ans) == 0 else "b"
            out["note"] = r.get("note") or ""
            rows.append(out)
        return cols, rows

    def export(self, path: str | os.PathLike[str], *, withdrawn: bool = False) -> None:
        """Write the history to ``path``: ``.csv`` (one row per answer) or ``.json`` (config,
        history and recommendation). ``withdrawn=True`` (an audit) includes the answers an undo
        withdrew, with their notes, and a ``withdrawn_at`` column (empty, or null in JSON, for
        an answer in effect): :meth:`history` with ``withdrawn=True``."""
        path = os.fspath(path)
        ext = os.path.splitext(path)[1].lower()
        if ext not in (".csv", ".json"):
            raise InvalidInputError(f"path must end in .csv or .json, got {path!r}")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise InvalidInputError(
                f"cannot write {path!r}: the directory {folder!r} does not exist"
            )
        hist = self.history(withdrawn=withdrawn)
        try:  # whole or not at all: a note an older boloop stored may not encode
            with replaced_when_written(path, newline="" if ext == ".csv" else None) as fh:
                self._write_export(fh, ext, hist, withdrawn)
        except OSError as exc:
            raise InvalidInputError(f"cannot write {path!r}: {exc.strerror or exc}") from exc

    def _write_export(
        self, fh: IO[str], ext: str, hist: list[dict[str, Any]], withdrawn: bool = False
    ) -> None:
        # the history's and the recommendation's grid values are already as the space file
        # defines them (0.6, not linspace's 0.6000000000000001: :meth:`_params`); answers and a
        # box's coordinates as they are
        if ext == ".json":
            try:
                rec = self.recommend()
            except (BoloopError, NotImplementedError):
                rec = None
            doc = {"study": self.config, "history": hist, "recommendation": rec}
            json.dump(doc, fh, indent=2, default=_json_default)
            return
        cols, rows = self._flat_rows(hist)
        if withdrawn:  # empty for an answer in effect
            cols.append("withdrawn_at")
            for flat, r in zip(rows, hist):
                flat["withdrawn_at"] = r.get("withdrawn_at") or ""
        # "\n" line ends: the same bytes from the API, the CLI and the web page's export
        w = csv.DictWriter(fh, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
