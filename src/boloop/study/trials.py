"""Trying other options on a study's answers, with nothing stored: :meth:`~StudyTrials.try_options`
(the study a continuation with those options would be, built in a private in-process store,
asked once and thrown away; ``boloop study try``) and :meth:`~StudyTrials.find_floor_g` (the
smallest ``min_lengthscale_g`` that lets a stuck safe study certify more,
:mod:`boloop.study.floor_search`; ``boloop study try --find-floor``).

:class:`StudyTrials` is a mixin of :class:`~boloop.study.core.Study`, as
:class:`~boloop.study.replay.StudyReplay` and :class:`~boloop.study.snapshots.StudySnapshots`
are: it reads the study's own state, never changes it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from boloop.errors import InvalidInputError
from boloop.study.create import _CREATE_ARGUMENTS, create_study

if TYPE_CHECKING:
    from boloop.study.core import Study
    from boloop.study.floor_search import Progress
    from boloop.study.sqlite_log import SQLiteLog
    from boloop.study.storage import StorageBackend

__all__ = ["StudyTrials"]


class StudyTrials:
    """Other options tried on the answers of :class:`~boloop.study.core.Study` (a mixin: it
    works on the study's own state). What it needs from the study is declared below
    (annotations only: no attribute is created here)."""

    # set by Study.__init__
    name: str
    _storage: StorageBackend | SQLiteLog
    # hooks of the host: Study (its recommendation)
    recommend: Callable[[], Any]

    if TYPE_CHECKING:  # declared for the checker only, as the annotations above

        @property
        def storage_url(self) -> str:
            """Study's property: the storage's URL."""
            ...

    def try_options(self, method: str | None = None, **options: Any) -> dict[str, Any]:
        """What this study would do with other ``options`` (or another ``method``), from its
        answers so far, with nothing stored: the study a continuation (``create_study(NEW,
        from_study=NAME, ...)``, ``boloop study create NEW --from NAME``) would be, built in a
        private in-process store, asked once and thrown away. Check an option before you
        continue a study with it, instead of spending measurements to find out: the stuck
        warning's ``min_lengthscale_g`` may not let the safe family certify more with the
        answers you have (with every measurement at one level of the monotone parameter, g's
        learned trend leaves the next level as uncertain whatever the smoothness floor).

        Returns ``method``, ``options`` (as the continuation would be created: this study's
        over-ridden by the ones given), ``answers`` (carried), ``next_query`` (the first query
        it would ask, :meth:`Query.to_dict`) and ``recommendation`` (:meth:`recommend`, in
        parameter names; for the safe family ``boundary_s``, the highest certified level per x
        row), beside ``now``, this study's recommendation, and ``continue_command``, the command
        that continues the study so. Refused as the continuation would be (a study of duels, an
        unknown option), with nothing stored anywhere."""
        import shlex
        import uuid

        from boloop.study.replay import continue_command
        from boloop.study.storage_memory import discard_memory_store

        own = sorted(k for k in options if k in _CREATE_ARGUMENTS)
        if own:
            raise InvalidInputError(
                f"{', '.join(own)}: not a method option but the study's own setting (an argument "
                "of create_study, not an --option): a trial keeps the study's space, seed and "
                "storage and tries method options (and another method with method=...) on its "
                "answers"
            )
        url = f"memory://try-{uuid.uuid4().hex}"
        try:
            trial = create_study(
                self.name,
                method,
                None,
                storage=url,
                from_study=self.name,
                from_storage=self.storage_url,
                **options,
            )
            q = trial.ask()
            given = "" if method is None else f" --method {shlex.quote(method)}"
            for k, v in options.items():
                text = v if isinstance(v, str) else json.dumps(v)
                given += f" --option {shlex.quote(f'{k}={text}')}"
            return {
                "method": trial.method,
                "options": dict(trial.config.get("options") or {}),
                "answers": trial.n_answered,
                "next_query": q.to_dict(),
                "recommendation": trial.recommend(),
                "now": self.recommend(),
                "continue_command": continue_command(self.name, self._storage) + given,
            }
        finally:
            discard_memory_store(url)

    def find_floor_g(self, progress: Progress | None = None) -> dict[str, Any]:
        """The smallest ``min_lengthscale_g`` (0.05, 0.10, ..., 1) under which this safe study,
        continued with its answers so far, would certify more than it does: for g's model as
        the study has it and without its trend along the monotone parameter (``trend_g=false``),
        each value tried as :meth:`try_options` tries it (nothing stored). What a stuck safe
        study needs to go on, found without spending measurements; an assumption about g that
        the person who knows the system must judge (:mod:`boloop.study.floor_search`, which
        gives the search, the result's keys and what ``progress`` is called with)."""
        from boloop.study.floor_search import find_floor_g

        return find_floor_g(cast("Study", self), progress)  # (a mixin of Study only)
