"""What a study's page shows and its poll reads, worked out under the study's lock
(:meth:`boloop.web.pool.StudyPool.run`): the open query with its media and safety limit, the
pictures and the numbers under them, the recommendation, the notices, the words of what to
measure (:func:`_page_context`); the state a page polls (:func:`_state`); and one history row as
a person reads it (:func:`_answer_description`, :func:`_answer_key`). Used by
:mod:`boloop.web.app` and :mod:`boloop.web.answer_forms`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from boloop.algorithms.families import family_traits
from boloop.errors import (
    BoloopError,
    InvalidInputError,
    NoMoreQueriesError,
    StorageAccessError,
    StorageUnavailableError,
)
from boloop.spaces import params_text
from boloop.study import Study
from boloop.study.log import utc_words
from boloop.study.measured import goal_sentence, limit_label, output_hints, what_to_measure
from boloop.study.media import media_index
from boloop.study.pictures import PHONE_WIDTH, pictures
from boloop.study.scatter import others_read
from boloop.study.status import undecided_text

#: the longest wait between an open page's checks for answers given elsewhere (a day); a wait
#: past the browser's setTimeout limit (about 24.8 days) fires at once, so every open page would
#: ask the server again without end
MAX_POLL_SECONDS = 86400.0


def checked_poll_seconds(seconds: Any) -> float:
    """``poll_seconds`` of :func:`~boloop.web.app.create_app`: 0 (off) or a number of seconds up
    to :data:`MAX_POLL_SECONDS`. NaN and infinity made every study page a 500 (the page's
    milliseconds are an int); a negative value was taken silently as off."""
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        value = float("nan")
    if not 0.0 <= value <= MAX_POLL_SECONDS:  # NaN fails both comparisons
        raise InvalidInputError(
            f"poll_seconds (seconds between a page's checks) must be 0 (off) to "
            f"{MAX_POLL_SECONDS:g}, got {seconds!r}"
        )
    return value


def _open_id(study: Study) -> int | None:
    pending = study.policy.pending
    return None if pending is None else int(pending.id)


def _state(study: Study, events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What an open page polls: ``version`` (the last event's seq: the page reloads when it
    changes), ``answered``, ``open_query``, ``moved`` (where a migrate moved the study, or None)
    and ``continued_as`` (the studies that continue it: a continuation writes nothing to this
    study's log, so the version does not show it; one read of the storage's list of studies,
    whose continuations are read again only when it changes). ``events``: the study's
    :meth:`~boloop.study.core.Study.events`, if the caller has them."""
    if events is None:
        events = study.events()
    moved = study.moved
    return {
        "version": events[-1]["seq"],
        "answered": study.n_answered,
        "open_query": _open_id(study),
        "moved": None if moved is None else moved["to"],  # a migrate made this copy read-only
        "continued_as": study.continued_as(),
    }


def _query_json(study: Study, q: Any) -> dict[str, Any]:
    d = q.to_dict()
    media = _query_media(study, q)
    if media:
        d["media"] = media
    if family_traits(study.family).safety_limit:
        d["limit"] = _limit(study)
    return d


def _limit(study: Study) -> dict[str, Any] | None:
    settings = getattr(study.problem, "settings", {}) or {}
    h = settings.get("h", settings.get("threshold"))
    if h is None:
        return None
    return {"output": "g", "h": float(h)}


def _picture_numbers(svg: str) -> list[tuple[str, str]]:
    """What a picture's marks say on hover or tap (their SVG ``<title>`` tooltips), in drawing
    order, each split at its first ": " into what it is and its value: the page's table "the
    numbers" under the picture, for whoever cannot see the picture or hover over it
    (WCAG 1.1.1)."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(svg)
    except ET.ParseError:  # drawn by this package: never, but a table is no reason to fail
        return []
    rows = []
    for el in root.iter("{http://www.w3.org/2000/svg}title"):
        text = " ".join((el.text or "").split())
        if text:
            what, sep, value = text.partition(": ")
            rows.append((what, value) if sep else (text, ""))
    return rows


def _query_media(study: Study, q: Any) -> dict[str, list[dict[str, str]]]:
    """``{"x"|"a"|"b": [{"column", "file", "type", "url"}]}`` for options with media files."""
    cand = (study.config.get("space") or {}).get("candidates") or {}
    columns = cand.get("media") or {}
    if not columns:
        return {}
    files = media_index(study.config)
    query = q.query
    sides = {"a": query.a_index, "b": query.b_index} if q.kind == "compare" else {"x": query.index}
    out: dict[str, list[dict[str, str]]] = {}
    base = f"/studies/{quote(study.name, safe='')}/media/"
    for side, index in sides.items():
        if index is None:
            continue
        items = []
        for col, names in columns.items():
            if 0 <= index < len(names) and names[index] in files:
                fname = names[index]
                items.append(
                    {
                        "column": col,
                        "file": fname,
                        "type": files[fname].split("/")[0],
                        "url": base + quote(fname, safe=""),
                    }
                )
        if items:
            out[side] = items
    return out


def _page_context(study: Study) -> dict[str, Any]:
    query = None
    ask_error = None
    complete = None  # the method asks no more: said in place of the answer form
    try:
        query = study.ask()
    except (StorageUnavailableError, StorageAccessError):
        raise
    except NoMoreQueriesError as exc:
        complete = _sentence(str(exc))
    except BoloopError as exc:
        ask_error = str(exc)
    hist = study.history()
    with study.readout():  # one copy of the policy for the model picture and the status
        pics = pictures(study, growth=False)  # the growth is an image of its own (a replay)
        # and for a phone (the page's CSS shows one): the same text in a narrower picture
        pics_phone = pictures(study, growth=False, width=PHONE_WIDTH)
        st = study.status(last=0)
    events = study.events()
    units = study.units()
    ctx: dict[str, Any] = {
        "study": study,
        "name": study.name,
        "names": study.names,
        "units": units,
        "query": query,
        "ask_error": ask_error,
        "complete": complete,
        "media": _query_media(study, query) if query is not None else {},
        "limit": _limit(study) if family_traits(study.family).safety_limit else None,
        "growth_picture": family_traits(study.family).growth_picture,
        "history": list(reversed(hist[-30:])),
        "n_history": len(hist),
        "pictures": pics,
        "pictures_phone": pics_phone,
        "picture_numbers": {k: _picture_numbers(v) for k, v in pics.items()},
        "state_version": events[-1]["seq"],
        "quoted": quote(study.name, safe=""),
        "has_notes": any(r.get("note") for r in hist),
        "last_key": _answer_key(hist[-1]) if hist else "",
        "last_desc": _answer_description(hist[-1]) if hist else "",
        "recommendation": _recommendation_view(study, st, units, len(hist)),
        # what a person must not miss (a measured g above the safety limit...), while it holds
        "study_warnings": [
            w
            for w in st.get("warnings") or []
            if w != st.get("stuck") and w not in (st.get("noise") or [])
        ],
        # repeated measurements that contradict the assumed noise: a notice with the owner's part
        # collapsed, as the stuck notice (the person answering cannot change an option)
        "study_noise": st.get("noise") or [],
        # ... and where one answer makes most of that scatter (a slip?), it, in plain words
        "noise_outliers": _noise_outlier_words(study, st),
        # a method that no longer makes progress: a notice, not the alarm above
        "study_stuck": st.get("stuck"),
        # a level-set map that stopped changing is as often finished as stuck (its notice)
        "stuck_map": family_traits(study.family).level_threshold,
        "continued_as": st.get("continued_as") or [],
        "moved": st.get("moved"),  # boloop study migrate moved it: a notice instead of the form
        "over_limit_next": st.get("over_limit_next"),
        **_measurement_words(study),
    }
    return ctx


def _sentence(clause: str) -> str:
    """``clause`` as a sentence: a capital first letter and a full stop."""
    clause = clause.strip()
    return clause[:1].upper() + clause[1:] + ("" if clause.endswith(".") else ".")


def _noise_outlier_words(study: Study, st: Mapping[str, Any]) -> list[str]:
    """Per output, the answer that makes most of the scatter of repeated measurements
    (``status()["noise_outliers"]``) as the page's plain notice says it: which answer, what
    it read where, what the others read there, and to check it first (the owner's details
    say how to undo it)."""
    measured = {m.output or "value": m for m in study.measured()}
    units = study.units()
    out = []
    for output, one in sorted((st.get("noise_outliers") or {}).items()):
        m = measured.get(output)
        name = (m.name or m.output or "the value") if m is not None else output

        def amount(v: float, m: Any = m) -> str:
            return m.amount(v) if m is not None else f"{v:g}"

        who = "an added measurement" if one["query_id"] is None else f"query {one['query_id']}"
        others = one["others"]
        read = others_read(others, amount)
        out.append(
            f"One answer makes most of it: {who}, {name} {amount(one['value'])} at "
            f"{params_text(one['params'], units)}, where the {len(others)} other measurements "
            f"{read}. Check that answer first (a typing slip?): a mistake is undone, not taken "
            "as noise."
        )
    return out


def _field_labels(study: Study) -> dict[str, str]:
    """Each answer field's label ("value" or an output's name: "toxicity (g, AU)", "hardness
    (HV)"; "g", "value" where the space file names nothing; :meth:`Measured.label`)."""
    return {q.output or "value": q.label() for q in study.measured()}


def _measurement_words(study: Study) -> dict[str, Any]:
    """What the page says about what to measure (:mod:`boloop.study.measured`): the space's
    ``description``; the heading's ``measure_what`` ("the hardness (HV)", "efficacy and side
    effect"; "the value", "f and g" when the space names nothing); each field's label
    (``field_labels``: "value" or an output's name) and hint (``field_hints``: "must stay at
    most 1.5"); ``goal_text``, the level set's question or the better direction."""
    quantities = study.measured()
    settings = getattr(study.problem, "settings", {}) or {}
    outputs = [q for q in quantities if q.output]
    return {
        "description": study.description,
        "measure_what": what_to_measure(quantities, labelled=False),
        "field_labels": _field_labels(study),
        "field_hints": output_hints(study.family, quantities, settings),
        "goal_text": goal_sentence(study.family, study.method, quantities, settings),
        "limit_label": limit_label(study.measured()),
        "limit_noun": next((str(q.name) for q in outputs if q.output == "g" and q.named), "g"),
    }


def _recommendation_view(
    study: Study, st: Mapping[str, Any], units: Mapping[str, str], answered: int
) -> dict[str, str] | None:
    """The recommendation as the page says it (``Study.status()``'s ``recommendation``,
    ``recommendation_label`` and ``recommendation_meaning``): ``{"text", "meaning"}``, the text
    being the option's name and its parameters, or "none yet" (always before the first answer:
    a method's favourite before any data is no recommendation); for a level set, how many
    candidates are estimated above the threshold and how many are still undecided (its picture
    shows where); None for anything else. ``st``: ``study.status(last=0)``."""
    rec = st["recommendation"]
    if isinstance(rec, dict) and "n_upper" in rec and answered:  # a level set's estimate
        text = (
            f"{rec['n_upper']} of {rec['n_candidates']} candidates estimated above the "
            f"threshold {rec['threshold']:g}"
        )
        if rec.get("n_undecided") is not None:
            text += "; " + undecided_text(rec["n_undecided"], bool(st.get("asks_no_more")))
        return {"text": text, "meaning": str(st.get("recommendation_meaning") or "")}
    if isinstance(rec, dict) and isinstance(rec.get("point"), dict):
        rec = rec["point"]  # e.g. the safe family's {"point", "index", "best_s", ...}
    point = rec if isinstance(rec, dict) and list(rec) == list(study.names) else None
    if point is None and rec is not None and not isinstance(rec, str):
        return None
    if answered == 0:
        text = "none yet (no answers yet)"
    elif point is None:  # None or "not available yet (...)"
        text = "none yet"
    else:
        text = params_text(point, units)
        if st.get("recommendation_label"):
            text = f"{st['recommendation_label']} ({text})"
    return {"text": text, "meaning": str(st.get("recommendation_meaning") or "")}


def _answer_key(row: Mapping[str, Any]) -> str:
    """What names one history row for an undo form: its query id and the time it was given
    (an answer withdrawn and given again has a new time)."""
    qid = "added" if row.get("query_id") is None else str(row["query_id"])
    return f"{qid}@{row.get('told_at')}"


def _answer_text(row: Mapping[str, Any]) -> str:
    """A history row's answer as a person reads it: ``1094.6``, ``accept``, ``B is better``."""
    text = str(row.get("answer_text", row.get("answer")))
    if row.get("kind") == "compare":
        text = {"a": "A is better", "b": "B is better"}.get(text, text)
    return text


#: characters of an answer's note said with it (a note is up to 2000; the rest is cut)
_NOTE_SHOWN = 60


def _answer_description(row: Mapping[str, Any]) -> str:
    """One history row as a person reads it: ``query 14: B is better, given 2026-11-27
    03:05:41 UTC``, and its note (``, note "bob"``; cut after :data:`_NOTE_SHOWN` characters):
    which of two colleagues' answers it is (a newcomer's trial)."""
    text = _answer_text(row)
    told = str(row.get("told_at") or "")
    when = f", given {_utc(told)}" if told else ""
    note = " ".join(str(row.get("note") or "").split())
    if note:
        cut = note if len(note) <= _NOTE_SHOWN else note[: _NOTE_SHOWN - 1] + "\u2026"
        when += f', note "{cut}"'
    if row.get("query_id") is None:
        return f"the {'label' if row.get('kind') == 'label' else 'measurement'} added: {text}{when}"
    return f"query {row['query_id']}: {text}{when}"


def _utc(stamp: str) -> str:
    """``2026-11-27T03:05:41.123456Z`` as a person reads it: ``2026-11-27 03:05:41 UTC``."""
    return utc_words(stamp)
