"""The study page's answer and undo forms, worked out under the study's lock
(:meth:`boloop.web.pool.StudyPool.run`): an answer read from the form, checked and held back for
the person to confirm where it is above the safety limit or far from the values so far
(:func:`_tell_form`); what a refused answer's page says (:func:`_refusal`), from which browser
stored which answer (:class:`_Senders`); an undo of the answer the page showed
(:func:`_undo_form`) and what a browser is told of its answers withdrawn since
(:func:`_withdrawn_yours`); the API's 409 of an answer to a query not open
(:func:`_tell_conflict`); and what a form was storing when it was not stored (:func:`_unsent`).
Used by :mod:`boloop.web.app`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from boloop.algorithms.families import family_traits
from boloop.errors import (
    BoloopError,
    QueryStateError,
    StorageAccessError,
    StorageUnavailableError,
    StudyMovedError,
)
from boloop.study import Study
from boloop.study.answers import NumberTextError, parse_measurement
from boloop.study.measured import limit_label
from boloop.web.study_view import (
    _answer_description,
    _answer_key,
    _limit,
    _open_id,
    _utc,
)


def _unsent(
    what: str, name: str, values: Mapping[str, str], labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """What a form was storing when it was not stored, for the page that says so (the 503
    page while the database cannot be reached, the login page of a browser not logged in, a
    refused answer's study page): ``what`` ("tell", "undo", "create"), the study, the fields
    as sent (a button to send them again) and the ones a person typed or chose, as
    ``(field, value)`` rows (:func:`_shown`: a measured value by the name the space file
    gives it, ``labels``)."""
    return {
        "what": what,
        "name": name,
        "quoted": quote(name, safe=""),
        "query_id": values.get("query_id", ""),
        "fields": dict(values),
        "shown": _shown(values, labels or {}),
    }


def _shown(values: Mapping[str, str], labels: Mapping[str, str]) -> list[tuple[str, str]]:
    """The fields of an answer a person typed or chose, as ``(field, value)`` rows: a measured
    value by its label (``labels``, the page's field labels: "toxicity (g, AU)", "hardness
    (HV)"; the output's name, "g" or "value", where the space names none), a duel's choice as
    "A is better"/"B is better", the note where one was typed."""
    choice = {"a": "A is better", "b": "B is better"}
    rows = []
    for k, v in values.items():
        if k in ("query_id", "confirm_over_limit", "confirm_unusual") or (
            k == "note" and not v.strip()
        ):
            continue
        field = k[4:] if k.startswith("out.") else k
        shown = labels.get(field, field) if k.startswith("out.") or k == "value" else field
        rows.append((shown, choice.get(v, v) if k == "answer" else v))
    return rows


def _withdrawn_yours(
    study: Study,
    since: int,
    stored_by: Callable[[str], str | None],
    withdrawn_by: Callable[[str], str | None],
    browser: str,
    events: list[dict[str, Any]] | None = None,
) -> list[str]:
    """What a page of ``browser`` must be told of the answers this browser stored
    (``stored_by``, :class:`_Senders`) that an undo withdrew after event ``since`` (the page's
    version): whose undo it was (``withdrawn_by``: this browser, another one, or none this
    server saw: the command line, the API, a program, another server), when, and what is open
    now. Without it the page would show the query open again and say nothing (a newcomer's
    trial: a colleague's undo withdrew bob's answer, and bob did not know to measure again).
    Only what this server remembers since it started (:class:`_Senders`). ``events``: the
    study's :meth:`~boloop.study.core.Study.events`, if the caller has them (a poll does)."""
    if events is None:
        events = study.events()
    mine = []  # (the undo, the key of the answer it withdrew) of this browser's answers
    for undo in (e for e in _after(events, since) if e["kind"] == "withdrawn"):
        gone = _at(events, undo["payload"].get("withdraws"))
        if gone is not None:
            key = f"{'added' if gone['query_id'] is None else gone['query_id']}@{gone['created_at']}"
            if stored_by(key) == browser:
                mine.append((undo, key))
    if not mine:  # the usual case: no history is read
        return []
    rows = {_answer_key(r): r for r in study.history(withdrawn=True)}
    open_id = _open_id(study)
    in_effect = {r["query_id"]: r for r in study.history() if r.get("query_id") is not None}
    out = []
    for undo, key in mine:
        if key not in rows:
            continue
        qid = rows[key].get("query_id")
        desc = _answer_description(rows[key])
        who = withdrawn_by(key)
        by = (
            "from this browser (another tab or window)"
            if who == browser
            else "from another browser"
            if who is not None
            else "made elsewhere (not on this server's pages: the command line, the API or a "
            "program)"
        )
        if qid is None:
            now = "it is no longer in effect"
        elif open_id == qid:
            now = f"query {qid} is open again: answer it again if your answer stands"
        elif qid in in_effect:
            now = f"query {qid} was answered again since ({_answer_description(in_effect[qid])})"
        else:
            now = f"query {qid} is not open now" + (
                f" (the open query is {open_id})" if open_id is not None else ""
            )
        out.append(
            f"Your answer, stored from this browser ({desc}), was withdrawn by an undo {by} at "
            f"{_utc(undo['created_at'])}: {now}. The withdrawn answer stays in the log (export "
            "with the withdrawn answers)."
        )
    return out


def _after(events: list[dict[str, Any]], since: int) -> list[dict[str, Any]]:
    """The events of a log (:meth:`~boloop.study.core.Study.events`, seq 0 first) after seq
    ``since``, without walking the ones before."""
    start = max(since + 1, 0)
    if _at(events, start) is None and start < len(events):  # not numbered from 0: look at all
        return [e for e in events if e["seq"] > since]
    return events[start:]


def _at(events: list[dict[str, Any]], seq: Any) -> dict[str, Any] | None:
    """The event ``seq`` of a log (:meth:`~boloop.study.core.Study.events`), or None."""
    if not isinstance(seq, int) or not 0 <= seq < len(events):
        return None
    ev = events[seq]
    return ev if ev["seq"] == seq else next((e for e in events if e["seq"] == seq), None)


def _undo_form(study: Study, expected: str) -> dict[str, Any]:
    """Withdraw the last answer if it is the one the page named (``expected``, an
    :func:`answer_key`; empty: whatever is last, as the API's undo)."""
    last = study.history(last=1)
    if expected and (not last or _answer_key(last[0]) != expected):
        qid = expected.split("@", 1)[0]
        shown = "an added measurement" if qid == "added" else f"the answer to query {qid}"
        now = _answer_description(last[0]) if last else "none"
        raise QueryStateError(
            f"Nothing was withdrawn: the page showed {shown} as the last, "
            f"but the last answer is now {now} (someone answered or withdrew in the meantime). "
            "Check it and undo again if you mean it."
        )
    return study.undo()


def _tell_conflict(study: Study, query_id: int) -> dict[str, Any]:
    """The machine-readable part of the API's 409 for a ``tell`` to a query that is not open:
    the answer in effect for ``query_id`` (``stored_answer``: ``answer``, ``answer_text``,
    ``note``, ``told_at``, ``kind``), or None when it has none (withdrawn, never asked), and the
    open query. A client that repeats a ``tell`` whose response it never got (the connection
    dropped) compares ``stored_answer`` with what it sent: its own answer stored, or another."""
    rows = [r for r in study.history() if r.get("query_id") == query_id]
    row = rows[-1] if rows else None
    stored = (
        None
        if row is None
        else {k: row.get(k) for k in ("answer", "answer_text", "note", "told_at", "kind")}
    )
    return {
        "error": "query_answered" if row is not None else "query_not_open",
        "query_id": query_id,
        "open_query": _open_id(study),
        "stored_answer": stored,
    }


def _same_answer(study: Study, form: Any) -> dict[str, Any] | None:
    """The history row of the form's query if it holds the very answer the form sends (the
    same form sent twice: a double click, Back and send, a resend after an outage), else None
    (not answered, withdrawn, or answered differently)."""
    raw_id = str(form.get("query_id", "")).strip()
    rows = [r for r in study.history() if str(r.get("query_id")) == raw_id]
    if not rows:
        return None
    row = rows[-1]
    stored = row.get("answer")
    try:
        if row.get("kind") == "label":
            sent: Any = {"accept": True, "reject": False}.get(str(form.get("answer", "")))
        elif row.get("kind") == "compare":
            sent = {"a": 0, "b": 1}.get(str(form.get("answer", "")))
        elif isinstance(stored, Mapping):
            sent = {k: parse_measurement(str(form.get(f"out.{k}", "")), k) for k in stored}
        else:
            sent = parse_measurement(str(form.get("value", "")), "the value")
    except BoloopError:
        return None
    return row if sent is not None and sent == stored else None


class _Senders:
    """Which browser (:meth:`Site.sender_id`) stored which answer through a page,
    by study and :func:`_answer_key`, in this server's memory: a refusal can then say whether
    the answer that stands came from the same browser (sent twice) or another one. Forgotten
    at a restart, and the oldest beyond :attr:`LIMIT`; an answer given by the API, the CLI or
    Python has no browser."""

    LIMIT = 10_000

    def __init__(self) -> None:
        self._by: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def remember(self, study: str, key: str, browser: str) -> None:
        with self._lock:
            self._by[(study, key)] = browser
            while len(self._by) > self.LIMIT:
                del self._by[next(iter(self._by))]

    def sender(self, study: str) -> Callable[[str], str | None]:
        """The browser that stored an answer of ``study`` (by its key), or None if unknown."""

        def get(key: str) -> str | None:
            with self._lock:
                return self._by.get((study, key))

        return get


def _asked_id(study: Study) -> int | None:
    """The id of the open query as the study page shows it (asked if none is open), or None
    when the method cannot ask one."""
    try:
        return int(study.ask().id)
    except (StorageUnavailableError, StorageAccessError):
        raise
    except BoloopError:
        return None


def _refusal(
    study: Study, form: Any, sender: Callable[[str], str | None], browser: str
) -> tuple[str, bool]:
    """What the page says when the form's answer was refused because its query is not open
    (:class:`QueryStateError`), and whether the answer that stands is someone else's (the
    undo then says so). Told apart, from the history, the note and which browser stored the
    answer (``sender``, :class:`_Senders`; ``browser``: this form's): the query withdrawn; the
    same answer sent twice from this browser (or from one unknown, with the same note);
    the same values from another browser or with another note (the note sent is said to be
    not stored); another answer. Each names the query open now."""
    raw_id = str(form.get("query_id", "")).strip()
    note = str(form.get("note", "") or "").strip()
    rows = [r for r in study.history() if str(r.get("query_id")) == raw_id]
    open_id = _asked_id(study)
    now = (
        "There is no open query now."
        if open_id is None
        else f"The open query is now {open_id} (below)."
    )
    kept = "What you sent is shown below, not in the form (that is for another query)."
    if not rows:
        return (
            f"Your answer was not stored: query {raw_id} was withdrawn (undone) before your "
            f"answer arrived. {kept} {now}",
            True,
        )
    row = rows[-1]
    desc = _answer_description(row)
    by = sender(_answer_key(row))
    mine, other = by is not None and by == browser, by is not None and by != browser
    same_note = (row.get("note") or "") == note
    lost_note = "" if same_note or not note else " Your note was NOT stored either."
    if _same_answer(study, form) is not None:
        if mine:
            again = "" if same_note else " The note you sent this time differs: it was NOT stored."
            return (
                f"Your answer was not stored again: this browser had stored it already "
                f"({desc}): it was sent twice (a double click, or Back and send). Nothing is "
                f"stored twice.{again} {now}",
                False,
            )
        if not other and same_note:
            return (
                f"Your answer was not stored again: query {raw_id} was answered already with "
                f"the same answer ({desc}); nothing is stored twice. {now}",
                False,
            )
        who = (
            "first from another browser, with the same values as yours"
            if other
            else "already with the same values as yours but another note, by someone else or "
            "from another page"
        )
        return (
            f"Your answer was not stored: query {raw_id} was answered {who} ({desc})."
            f"{lost_note} {kept} {now}",
            True,
        )
    who = "from this browser (another tab, or before Back)" if mine else "by someone else"
    return (
        f"Your answer was not stored: query {raw_id} was answered first {who} ({desc}). "
        f"{kept} {now}",
        True,
    )


def _typed_fields(query: Any) -> tuple[str, ...]:
    """The form fields a measurement query's answer is typed in: ``value``, or ``out.f``,
    ``out.g``, ... for several outputs."""
    outputs = tuple(getattr(query, "outputs", ()) or ())
    return tuple(f"out.{o}" for o in outputs) if outputs else ("value",)


def confirmation_key(values: Mapping[str, Any], *fields: str) -> str:
    """What a "store it as typed" box confirms: the text of ``fields`` as typed, joined. A box
    holds it as its value, so a confirmation given for one value does not store another typed
    after it (the box ticked, then the value changed)."""
    return "|".join(str(values.get(f, "")).strip() for f in fields)


def _tell_form(
    study: Study, form: Any
) -> tuple[dict[str, str], str | None, tuple[str, str] | None]:
    """Answer from the study page's form. Returns ``(errors by field, warning, held)``: all
    empty when the answer was stored; ``held`` is ``(why, key)`` for a valid answer held back
    for the person to confirm (``"over_limit"``: g above the safety limit; ``"unusual"``: a
    value far outside the values stored so far, :meth:`Study.unusual_values`), ``key`` the
    :func:`confirmation_key` its box must send back; the question is in ``warning``. Raises
    QueryStateError when the query is not the open one."""
    raw_id = str(form.get("query_id", "")).strip()
    note = str(form.get("note", "") or "")
    study.refresh()
    pending = study.policy.pending
    if pending is None or raw_id != str(pending.id):
        now_open = "" if pending is None else f"; the open query is {pending.id}"
        raise QueryStateError(
            f"query {raw_id} is not open any more (it was answered or withdrawn{now_open})"
        )
    kind = pending.kind
    errors: dict[str, str] = {}
    typed: dict[str, str] = {}  # several outputs: each as typed, for the typo question
    if kind in ("label", "compare"):
        answer: Any = str(form.get("answer", ""))
    else:
        outputs = tuple(getattr(pending, "outputs", ()) or ())
        if not outputs:
            answer = str(form.get("value", ""))
            try:
                v = parse_measurement(answer, "the value")
                if not isinstance(v, float):
                    errors["value"] = f"the value must be a number, got {answer.strip()!r}"
                elif not math.isfinite(v):
                    errors["value"] = f"the value must be a finite number, got {answer.strip()!r}"
            except NumberTextError as exc:  # a comma that does not say what it is: say why
                errors["value"] = str(exc)
            except BoloopError:
                errors["value"] = f"the value must be a number, got {answer.strip()!r}"
        else:
            answer = {}
            for out in outputs:
                text = typed[out] = str(form.get(f"out.{out}", ""))
                try:
                    v = parse_measurement(text, out)
                except NumberTextError as exc:
                    errors[f"out.{out}"] = f"{out}: {exc}"
                    continue
                except BoloopError:
                    v = None
                if not isinstance(v, float):
                    errors[f"out.{out}"] = f"{out} must be a number, got {text.strip()!r}"
                elif not math.isfinite(v):
                    errors[f"out.{out}"] = f"{out} must be a finite number, got {text.strip()!r}"
                else:
                    answer[out] = v
            limit = _limit(study) if family_traits(study.family).safety_limit else None
            key = None if limit is None else confirmation_key(form, f"out.{limit['output']}")
            if (
                not errors
                and limit is not None
                and key is not None  # (set exactly when limit is)
                and answer.get(limit["output"], -math.inf) > limit["h"]
                and form.get("confirm_over_limit") != key
            ):
                g = answer[limit["output"]]
                return (
                    {},
                    f"{limit_label(study.measured())} = {g:g} is above the safety limit "
                    f"h = {limit['h']:g}. "
                    "Check the measurement; tick the box and submit again to store it as it is.",
                    ("over_limit", key),
                )
    if errors:
        return errors, None, None
    key = confirmation_key(form, *_typed_fields(pending)) if kind == "evaluate" else None
    if key is not None and form.get("confirm_unusual") != key:
        questions = study.unusual_values(typed or answer)
        if questions:
            return (
                {},
                " ".join(questions)
                + " Correct it, or tick the box and submit again to store it as typed.",
                ("unusual", key),
            )
    if kind == "compare" and answer in ("a", "b"):  # the page's two buttons: a side, whatever
        answer = 0 if answer == "a" else 1  # the options are named (stored as "a"/"b" alike)
    try:
        study.tell(pending.id, answer, note=note)
    except (QueryStateError, StudyMovedError, StorageUnavailableError, StorageAccessError):
        raise
    except BoloopError as exc:
        field = "value" if kind == "evaluate" and not getattr(pending, "outputs", ()) else "answer"
        for out in getattr(pending, "outputs", ()) or ():
            if f"'{out}'" in str(exc) or f"{out}=" in str(exc):
                field = f"out.{out}"
        if "note" in str(exc).split(":")[0]:
            field = "note"
        return {field: str(exc)}, None, None
    return {}, None, None
