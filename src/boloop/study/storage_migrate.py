"""Move studies between storages with their full logs (``boloop study migrate``).

A study is copied event by event, time stamps included, in one transaction at the target
(:meth:`~boloop.study.storage.StorageBackend.import_study`), so the copy replays to exactly the
same policy and the same next query. Snapshots are a cache and are not copied: the first load at
the target replays the log (and checks every query) and stores a new one.

The source copy is then marked as moved: a ``moved`` event in its own log naming the target
(password masked) and the number of events copied. From then on it refuses every write
(:class:`~boloop.errors.StudyMovedError`), so a server or a script still pointed at the old
storage cannot store an answer the target never sees.

A write racing the migrate: the copy is read and the mark appended in one writing transaction
at the source, held while the target imports. A writer of the study (on SQLite any writer of
the file) waits for it, as writers wait for each other, and then sees the mark and is refused
with nothing stored; a write that committed before the migrate's transaction began is in the
copy. There is no moment at which an answer is stored at the source and not copied. If marking
fails after the import (a lost connection), the copy is removed from the target again.

:func:`undo_migration` (``migrate --undo``) undoes a mistaken migrate: it removes the copy from
the target, only if nothing but unanswered questions was written to it since, and appends
``move_undone`` to the source, which is writable again. A process still holding the removed copy
is refused (:class:`~boloop.errors.StudyRemovedError`), and its id is never given to another
study.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Sequence

import boloop
from boloop.errors import BoloopError, InvalidInputError, StudyMovedError, UnknownIdError
from boloop.study.log import Event, moved_mark, moved_message, url_for_command
from boloop.study.storage import StorageBackend, open_storage, resolve_storage, safe_url

__all__ = ["migrate_studies", "undo_migration"]

logger = logging.getLogger("boloop")


def migrate_studies(
    source: str, target: str, names: Sequence[str] | None = None
) -> list[tuple[str, int]]:
    """Copy the studies ``names`` (default: all) of storage ``source`` to storage ``target``.

    Returns ``(name, number of events)`` per copied study, in the source's order; each copied
    study is marked as moved at the source (see the module docstring). Refused with nothing
    written: a source that holds no studies, a name it does not hold (:class:`UnknownIdError`),
    the same storage on both sides, a study already moved (:class:`StudyMovedError`: migrate
    from where it went) and a study whose name exists at the target (studies are copied, never
    merged: :class:`InvalidInputError` naming them).
    """
    src_url, dst_url = resolve_storage(source), resolve_storage(target)
    if src_url == dst_url:
        raise InvalidInputError(f"--from and --to name the same storage {safe_url(src_url)!r}")
    src = open_storage(src_url, create=False)
    stored = dict(src.study_names())
    if not stored:
        raise InvalidInputError(f"storage {safe_url(src_url)!r} holds no studies to copy")
    if names:
        wanted = list(dict.fromkeys(names))
        unknown = [n for n in wanted if n not in stored]
        if unknown:
            raise UnknownIdError(
                f"no study named {', '.join(map(repr, unknown))} in storage "
                f"{safe_url(src_url)!r}; stored studies: {list(stored)}"
            )
    else:
        wanted = list(stored)
    marks = {n: moved_mark(src.events(src.study_id(n))) for n in wanted}
    gone = [n for n in wanted if marks[n] is not None]
    if gone:
        raise StudyMovedError(_moved_refusal(src_url, wanted, gone, marks))
    dst = open_storage(dst_url, create=True)
    there = {n for n, _ in dst.study_names()}
    # a copy an interrupted migrate left (killed after the target's commit, before the source's
    # mark): the same log, so this migrate only marks the source
    left = {n for n in wanted if n in there and _is_copy_of(dst, n, src.events(src.study_id(n)))}
    clash = [n for n in wanted if n in there and n not in left]
    if clash:
        raise InvalidInputError(_clash_message(src, src_url, dst_url, wanted, clash))
    copied: list[tuple[str, int]] = []
    for name in wanted:
        try:
            copied.append((name, _move(src, dst, name, stored[name], dst_url, name in left)))
        except BoloopError as exc:
            if not copied:
                raise
            raise _said(
                exc,
                f"moved before this: {[n for n, _ in copied]} (copied to {safe_url(dst_url)} "
                "and marked as moved at the source)",
            ) from exc
    return copied


def _said(exc: BoloopError, more: str) -> BoloopError:
    """``exc`` again (same type) with ``more`` added to its message."""
    try:
        return type(exc)(f"{exc}; {more}")
    except TypeError:  # pragma: no cover - every boloop error takes one message
        return exc


def _is_copy_of(dst: StorageBackend, name: str, ours: list[Event]) -> bool:
    """Whether study ``name`` at ``dst`` is a copy of the log ``ours`` (the source's) that
    nothing was written to since: that log, event for event, then questions asked at most."""
    theirs = dst.events(dst.study_id(name))
    return theirs[: len(ours)] == ours and all(e.kind == "asked" for e in theirs[len(ours) :])


def _move(
    src: StorageBackend,
    dst: StorageBackend,
    name: str,
    created: str,
    dst_url: str,
    copied_before: bool = False,
) -> int:
    """Copy study ``name`` to ``dst`` and mark it moved at ``src``, in one writing transaction
    at the source (writers of the study wait for it, then see the mark); the number of events
    copied. ``copied_before``: ``dst`` holds a copy an interrupted migrate left (checked again
    inside the transaction): only the mark is written."""
    sid = src.study_id(name)
    imported = False
    try:
        with src.transaction(write=True) as tx:
            events = tx.events(sid)  # PostgreSQL: the study's row lock, as every writer takes
            mark = moved_mark(events)
            if mark is not None:  # moved by another migrate since the check
                raise StudyMovedError(moved_message(name, mark))
            if not copied_before:
                dst.import_study(name, created, events)
                imported = True
            elif not _is_copy_of(dst, name, events):  # written to since the check
                raise InvalidInputError(
                    f"study {name!r} at {safe_url(dst.url)} was written to during this "
                    "migrate; nothing was changed"
                )
            payload = {
                "to": safe_url(dst_url),
                "events": len(events),
                "boloop_version": boloop.__version__,
            }
            tx.append(sid, events[-1].seq + 1, "moved", None, payload)
    except BaseException as exc:
        if not imported:
            raise
        # the mark did not commit: the source stays the study's only live copy
        said = _remove_copy(dst, name, events)
        if isinstance(exc, BoloopError):
            raise _said(exc, said) from exc
        logger.error("migrate of study %r interrupted: %s", name, said)
        raise
    return len(events)


def _remove_copy(dst: StorageBackend, name: str, events: list[Event]) -> str:
    """Remove the copy of a study whose source was not marked; what happened, in words."""
    try:
        dst.drop_study(name, events[-1].seq)
    except BoloopError as again:
        return (
            f"study {name!r} was copied to {safe_url(dst.url)} but not marked as moved at the "
            f"source, and the copy could not be removed ({again}): run the same migrate again "
            "before anyone answers there (it marks the source and keeps the copy)"
        )
    return (
        f"study {name!r} was not marked as moved at the source, so its copy was removed from "
        f"{safe_url(dst.url)} again: the source is still its only live copy"
    )


def undo_migration(
    source: str, target: str, names: Sequence[str] | None = None
) -> list[tuple[str, int]]:
    """Undo a migrate from ``source`` to ``target`` for the studies ``names`` (default: every
    study of ``source`` marked as moved to ``target``): remove each copy from ``target``, only
    if nothing but questions (``asked``, no answer) was written to it since the copy (else
    :class:`InvalidInputError` naming what was, nothing changed for that study: its answers
    given there would be lost), and append ``move_undone``
    to its log at ``source``, where it is writable again. A copy already gone from the target
    (deleted by hand) is no refusal: the mark is cleared. Returns ``(name, events removed from
    the target)`` per study (0 for a copy already gone)."""
    src_url, dst_url = resolve_storage(source), resolve_storage(target)
    if src_url == dst_url:
        raise InvalidInputError(f"--from and --to name the same storage {safe_url(src_url)!r}")
    src = open_storage(src_url, create=False)
    shown = safe_url(dst_url)
    logs = {n: src.events(src.study_id(n)) for n in (names or [n for n, _ in src.study_names()])}
    ours = [n for n, ev in logs.items() if (m := moved_mark(ev)) and m.payload.get("to") == shown]
    if names:
        other = [n for n in dict.fromkeys(names) if n not in ours]
        if other:
            raise InvalidInputError(
                f"studies {other} of storage {safe_url(src_url)!r} are not marked as moved to "
                f"{shown}: nothing to undo, nothing changed"
            )
    if not ours:
        raise InvalidInputError(
            f"no study of storage {safe_url(src_url)!r} is marked as moved to {shown}: nothing "
            "to undo"
        )
    dst = open_storage(dst_url, create=False)
    done = []
    for name in ours:
        sid = src.study_id(name)
        with src.transaction(write=True) as tx:
            events = tx.events(sid)
            mark = moved_mark(events)
            if mark is None or mark.payload.get("to") != shown:  # undone meanwhile
                raise InvalidInputError(f"study {name!r} is no longer marked as moved to {shown}")
            copied = events[: int(mark.payload["events"])]
            removed = 0
            if name in {n for n, _ in dst.study_names()}:
                if dst.events(dst.study_id(name))[: len(copied)] != copied:
                    raise InvalidInputError(
                        f"study {name!r} at {shown} is not the copy migrate made (its log "
                        "differs): nothing removed, nothing changed"
                    )
                dst.drop_study(name, copied[-1].seq)
                removed = len(copied)
            payload = {"from": shown, "boloop_version": boloop.__version__}
            tx.append(sid, events[-1].seq + 1, "move_undone", None, payload)
        done.append((name, removed))
    return done


def _moved_refusal(
    src_url: str, wanted: list[str], gone: list[str], marks: dict[str, Event | None]
) -> str:
    """The refusal of studies already moved: where each went, and what works."""
    lines = [moved_message(n, m).split(" (this copy")[0] for n in gone if (m := marks[n])]
    targets = {str(m.payload.get("to")) for n in gone if (m := marks[n])}
    target = "TARGET_URL"
    if len(targets) == 1 and "***" not in (only := targets.pop()):  # a masked URL does not work
        target = shlex.quote(only)
    text = (
        f"{'; '.join(lines)}. Migrate from there (answers given since are only there), or undo "
        f"a mistaken migrate with `boloop study migrate --undo --from "
        f"{url_for_command(src_url, 'SOURCE_URL')} --to {target}`; nothing was copied"
    )
    others = [n for n in wanted if n not in gone]
    if others:
        picks = " ".join(f"--study {shlex.quote(n)}" for n in others)
        text += f". To copy the others, give them: {picks}"
    return text


def _clash_message(
    src: StorageBackend, src_url: str, dst_url: str, wanted: list[str], clash: list[str]
) -> str:
    """The refusal of studies whose names exist at the target, naming what works: ``--study``
    for the others, and per clashing study either ``boloop study create NEW --from NAME`` (its
    answers in effect under another name, :mod:`boloop.study.carry`) or, for a study of duels,
    which cannot be carried, a copy to another storage."""
    from boloop.study.carry import carried_answers

    others = [n for n in wanted if n not in clash]
    text = (
        f"storage {safe_url(dst_url)!r} already has the studies {clash}; migrate copies "
        "studies, it never merges two logs, and nothing was copied."
    )
    if others:
        picks = " ".join(f"--study {shlex.quote(n)}" for n in others)
        text += f" To copy the others, give them: {picks}."
    source, target = url_for_command(src_url, "SOURCE_URL"), url_for_command(dst_url, "TARGET_URL")
    for name in clash:
        duels = sum(
            a.kind == "compare" for a in carried_answers(src.events(src.study_id(name)), name)
        )
        if duels:
            text += (
                f" {name!r} has duels, which cannot be carried into a study of another name: "
                f"copy it whole to another storage: boloop study migrate --from {source} "
                f"--to OTHER_STORAGE --study {shlex.quote(name)}."
            )
        else:
            text += (
                f" {name!r} can be copied under another name, its answers as the new study's "
                f"own data (not its log): boloop study create NEW --from {shlex.quote(name)} "
                f"--from-storage {source} --storage {target}."
            )
    return text.rstrip(".")
