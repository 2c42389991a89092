"""Persistent studies for real experiments: ask, tell, undo, resume after a restart.

.. code-block:: python

    from boloop.study import create_study, load_study

    study = create_study("coating", "randomized-straddle", "space.toml", seed=1)
    q = study.ask()              # StudyQuery: q.id, q.kind, q.params == {"temperature": 35.2, ...}
    study.tell(q.id, 0.82)       # one transaction in sqlite:///boloop.db (or $BOLOOP_STORAGE)
    study = load_study("coating")  # after a restart: the log replays to the same policy

See ``docs/studies.md``.
"""

from typing import Any

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

#: public names and the module that defines them: imported on first use (PEP 562), so that
#: ``boloop --version`` and the ``boloop study`` parser do not pay for numpy and SQLAlchemy
_LAZY = {
    "Study": "boloop.study.core",
    "StudyQuery": "boloop.study.parameters",
    "create_study": "boloop.study.create",
    "list_studies": "boloop.study.listing",
    "load_study": "boloop.study.create",
    "UserExperiment": "boloop.study.space_file",
    "build_experiment": "boloop.study.space_file",
    "load_space_file": "boloop.study.space_file",
    "DEFAULT_STORAGE": "boloop.study.storage",
    "SCHEMA_VERSION": "boloop.study.storage",
    "Storage": "boloop.study.storage",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'boloop.study' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
