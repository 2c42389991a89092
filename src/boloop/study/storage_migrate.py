"""Copy studies between storages with their full logs (``boloop study migrate``).

A study is copied event by event, time stamps included, in one transaction at the target
(:meth:`~boloop.study.storage.StorageBackend.import_study`), so the copy replays to exactly the
same policy and the same next query. Snapshots are a cache and are not copied: the first load at
the target replays the log (and checks every query) and stores a new one.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from boloop.errors import InvalidInputError, UnknownIdError
from boloop.study.log import url_for_command
from boloop.study.storage import StorageBackend, open_storage, resolve_storage, safe_url

__all__ = ["migrate_studies"]


def migrate_studies(
    source: str, target: str, names: Sequence[str] | None = None
) -> list[tuple[str, int]]:
    """Copy the studies ``names`` (default: all) of storage ``source`` to storage ``target``.

    Returns ``(name, number of events)`` per copied study, in the source's order. Refused with
    nothing written: a source that holds no studies, a name it does not hold
    (:class:`UnknownIdError`), the same storage on both sides, and a study whose name exists at
    the target (studies are copied, never merged: :class:`InvalidInputError` naming them).
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
    dst = open_storage(dst_url, create=True)
    there = {n for n, _ in dst.study_names()}
    clash = [n for n in wanted if n in there]
    if clash:
        raise InvalidInputError(_clash_message(src, src_url, dst_url, wanted, clash))
    copied = []
    for name in wanted:
        events = src.events(src.study_id(name))
        dst.import_study(name, stored[name], events)
        copied.append((name, len(events)))
    return copied


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
