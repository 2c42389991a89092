"""Persistent studies for real experiments: ask, tell, undo, resume after a restart.

.. code-block:: python

    from boloop.study import create_study, load_study

    study = create_study("coating", "randomized-straddle", "space.toml", seed=1)
    q = study.ask()              # StudyQuery: q.id, q.kind, q.params == {"temperature": 35.2, ...}
    study.tell(q.id, 0.82)       # one transaction in sqlite:///boloop.db (or $BOLOOP_STORAGE)
    study = load_study("coating")  # after a restart: the log replays to the same policy

See ``docs/studies.md``.
"""

from boloop.study.core import Study, StudyQuery, create_study, list_studies, load_study
from boloop.study.space_file import UserExperiment, build_experiment, load_space_file
from boloop.study.storage import DEFAULT_STORAGE, SCHEMA_VERSION, Storage

__all__ = [
    "DEFAULT_STORAGE",
    "SCHEMA_VERSION",
    "Storage",
    "Study",
    "StudyQuery",
    "UserExperiment",
    "build_experiment",
    "create_study",
    "list_studies",
    "load_space_file",
    "load_study",
]
