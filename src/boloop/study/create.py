"""Creating a study and opening a stored one: :func:`create_study` (the configuration it
stores, checked by building the policy once before anything is stored) and :func:`load_study`.

The :class:`~boloop.study.core.Study` they return is defined in :mod:`boloop.study.core`, which
re-exports both functions; :mod:`boloop.study.listing` lists a storage's studies.
"""

from __future__ import annotations

import numbers
import os
import platform
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

import boloop
from boloop._registry import check_new_id
from boloop._validation import meant_keys
from boloop.algorithms.registry import default_method, get_method, make_policy
from boloop.errors import BoloopError, InvalidInputError
from boloop.problems.base import Problem
from boloop.spaces import Box, CandidateSet
from boloop.study.log import safe_url
from boloop.study.naming import _check_name, _json_options
from boloop.study.pinning import pinned_defaults
from boloop.study.space_file import (
    UserExperiment,
    build_experiment,
    check_family_keys,
    check_safety_limit,
    implied_family,
    load_space_file,
    normalise_space,
    pin_defaults,
)

if TYPE_CHECKING:  # the study module imports this one: Study is imported where it is built
    from boloop.study.core import Study
    from boloop.study.sqlite_log import SQLiteLog
    from boloop.study.storage import StorageBackend

__all__ = ["CONFIG_FORMAT", "DATA_OPTIONS", "create_study", "load_study"]

#: create_study's own arguments: never method options (``Study.try_options`` refuses them as
#: ``boloop study create --option`` does)
_CREATE_ARGUMENTS = frozenset(
    ("name", "method", "space", "problem", "storage", "seed", "family", "from_study",
     "from_storage", "load_if_exists")
)  # fmt: skip

CONFIG_FORMAT = 1

#: Method options that carry data (the expert family's); a study takes data as events instead.
DATA_OPTIONS = ("initial_labels", "initial_observations")


# -- configuration -------------------------------------------------------------------------------
def _family_of(method: str, family: str | None) -> str:
    """The family of ``method`` (``family`` picks one when several families have the id)."""
    return get_method(method, family).family


def _space_document(space: Any) -> dict[str, Any]:
    if isinstance(space, UserExperiment):
        return dict(space.spec)
    if isinstance(space, str | os.PathLike):
        return load_space_file(space)
    if isinstance(space, Box):
        return normalise_space(
            {
                "parameters": [
                    {"name": n, "low": float(lo), "high": float(hi)}
                    for n, lo, hi in zip(space.names, space.lower, space.upper)
                ]
            }
        )
    if isinstance(space, CandidateSet):
        return normalise_space(
            {"candidates": {"columns": list(space.names), "rows": space.points.tolist()}}
        )
    if isinstance(space, Mapping):
        return normalise_space(space)
    raise InvalidInputError(
        f"space must be a dict, a JSON/TOML/CSV file, a Box or a CandidateSet, got {type(space).__name__}"
    )


def _problem_from_config(config: Mapping[str, Any]) -> Problem:
    if config.get("problem") is not None:
        from boloop.problems import get

        return get(config["problem"])
    return build_experiment(config["space"], config["family"], name=config["name"])


# -- creating and opening ----------------------------------------------------------------------
def create_study(
    name: str,
    method: str | None = None,
    space: Any = None,
    *,
    problem: str | Problem | None = None,
    storage: str | None = None,
    seed: int | None = None,
    family: str | None = None,
    load_if_exists: bool = False,
    from_study: str | None = None,
    from_storage: str | None = None,
    **options: Any,
) -> Study:
    """Create a study named ``name`` running ``method`` and store it.

    Parameters
    ----------
    name:
        Unique within the storage.
    method:
        A method id (``"randomized-straddle"``, ``"mr-lpf"``, ``"m-safeopt"``, ``"cobol"``...), or
        None for the family's default (:func:`boloop.algorithms.registry.default_method`: the
        ``preference`` family's is ``eubo-regret``; the family comes from the problem, ``family``
        or the space's ``family`` key).
    space:
        The user's experiment: a space document (dict), a ``.json``/``.toml``/``.csv`` file, a
        :class:`Box` or :class:`CandidateSet` with names; or, as a string without a file suffix,
        a registered problem id (``"levelset/sinusoidal"``).
    problem:
        A registered problem id (or a problem built by ``boloop.problems.get``) instead of a space:
        the study answers its queries by hand, with the problem's space and paper settings.
    storage:
        Storage URL; default ``$BOLOOP_STORAGE`` or ``sqlite:///boloop.db``.
    seed:
        The policy's seed; a random one is drawn and stored when None.
    family:
        The family, when the method id exists in several (``random``); taken from the problem
        or from the space's ``family`` key otherwise.
    load_if_exists:
        Load the existing study of that name instead of failing: a script that resumes. What
        the call gives (method, space or problem, options, seed, family) must be what the study
        was created with, else :class:`InvalidInputError` naming what differs (nothing stored);
        what it leaves out (no seed: a random one) is not compared.
    from_study:
        Continue this stored study (say, one whose log no longer replays with this boloop) with
        all its answers: its method, space or problem, options and seed unless given here, and
        every answer in effect recorded as outside data of the new study (measurements through
        :meth:`Study.add`, expert labels through :meth:`Study.label`); its log is read, never
        replayed. See :func:`boloop.study.carry.create_from`. ``load_if_exists`` is refused
        with it (an existing name is an error).
    from_storage:
        With ``from_study``: the storage holding it, when not ``storage``.
    options:
        Method options, passed to ``make_policy``; must be plain JSON values.

    Nothing is stored unless the policy can be built from this configuration (and, with
    ``from_study``, every answer is taken).
    """
    name = _check_name(name)
    if from_study is not None:
        if load_if_exists:
            raise InvalidInputError(
                "from_study creates a new study: it cannot be combined with load_if_exists"
            )
        from boloop.study.carry import create_from

        return create_from(
            name,
            from_study,
            method=method,
            space=space,
            problem=problem,
            storage=storage,
            from_storage=from_storage,
            seed=seed,
            family=family,
            options=options,
        )
    if from_storage is not None:
        raise InvalidInputError("from_storage is the storage of from_study: give from_study too")
    given_data = sorted(k for k in DATA_OPTIONS if k in options)
    if given_data:
        raise InvalidInputError(
            f"{', '.join(given_data)}: data you already have go into a study with Study.add "
            "(measurements) and Study.label (an expert's labels), or `boloop study add` / "
            "`boloop study label`: then they count in its status, history and export and can "
            "be undone, which options cannot"
        )
    if (
        isinstance(space, str)
        and problem is None
        and os.path.splitext(space)[1].lower() not in (".json", ".toml", ".csv")
        and not os.path.exists(space)
    ):
        space, problem = None, space
    if isinstance(space, Problem) and not isinstance(space, UserExperiment):
        space, problem = None, space
    if (space is None) == (problem is None):
        raise InvalidInputError("give exactly one of space (your experiment) and problem (an id)")
    given_seed = seed is not None
    if seed is None:
        seed = secrets.randbelow(2**31)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InvalidInputError(f"seed must be a non-negative integer, got {seed!r}")
    from boloop.study.core import Study  # (core imports this module)
    from boloop.study.storage import open_storage

    store = None
    if load_if_exists:
        store = open_storage(storage, create=True)
        if name in {n for n, _ in store.study_names()}:
            existing = load_study(name, storage=store.url)
            differs = _differs_from(
                existing.config, method, space, problem, seed if given_seed else None, family,
                options,
            )
            if differs:
                raise InvalidInputError(
                    f"study {name!r} exists in storage {safe_url(store.url)!r} with another "
                    f"configuration than the one given: {'; '.join(differs)}. load_if_exists "
                    "loads a study only as it was created (its answers were given to that "
                    "method); choose another name for a new study, load this one with "
                    "load_study, or continue its answers with other settings with "
                    "create_study(NEW, from_study=...)"
                )
            return existing
    if problem is not None:
        from boloop.problems import get

        if not isinstance(problem, Problem):
            check_new_id(str(problem), "problem")
        prob = problem if isinstance(problem, Problem) else get(str(problem))
        if method is None:
            method = default_method(prob.family)
        family = _family_of(str(method), prob.family)
    else:
        doc = _space_document(space)
        if method is None:
            method = default_method(family or doc.get("family") or implied_family(doc))
        family = _family_of(str(method), family or doc.get("family"))
    method = str(method)
    config: dict[str, Any] = {
        "format": CONFIG_FORMAT,
        "name": name,
        "method": method,
        "family": family,
        "seed": int(seed),
        "options": _json_options(options),
        "problem": None,
        "space": None,
        "boloop_version": boloop.__version__,
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
    }
    if problem is not None:
        config["problem"] = prob.id
    else:
        config["space"] = pin_defaults(doc, family)
        check_family_keys(config["space"], family, method)
        check_safety_limit(config["space"], family, config["options"])
        if config["space"].get("measurement"):
            build_experiment(config["space"], family, name=name)  # does it fit the outputs?
            # shown to people only, and kept beside the space: a boloop that predates the key
            # still loads the study (its space reader refuses a key it does not know)
            config["measurement"] = config["space"].pop("measurement")
    read = _check_buildable(method, config)  # before the storage: a refused study creates nothing
    config["pinned_defaults"] = pinned_defaults(
        method, _problem_from_config(config), int(seed), config["options"], read
    )
    if store is None:
        store = open_storage(storage, create=True)
    sid = store.create_study(name, config)
    return Study(store, sid, name, store.events(sid))


def _differs_from(
    config: Mapping[str, Any],
    method: str | None,
    space: Any,
    problem: str | Problem | None,
    seed: int | None,
    family: str | None,
    options: Mapping[str, Any],
) -> list[str]:
    """What a ``create_study(..., load_if_exists=True)`` call asks for that the stored study
    ``config`` was not created with, in words (empty: the same study). Only what the call
    gives is compared: no method (the family's default), no seed (a random one) or no options
    compare equal to whatever was stored; a space compares on the keys and parameter fields
    it gives (the stored space has default grid sizes written in)."""
    out = []
    if method is not None and str(method) != config.get("method"):
        out.append(f"method {config.get('method')!r} (given: {str(method)!r})")
    if family is not None and family != config.get("family"):
        out.append(f"family {config.get('family')!r} (given: {family!r})")
    if seed is not None and int(seed) != config.get("seed"):
        out.append(f"seed {config.get('seed')!r} (given: {int(seed)})")
    stored_options = config.get("options") or {}
    # an option given at its value when the study was created (given then, or the method's
    # default then: the pinned defaults) is the same configuration
    effective = {**(config.get("pinned_defaults") or {}), **stored_options}
    given_options = _json_options(options) if options else {}
    if any(k not in effective or effective[k] != v for k, v in given_options.items()):
        out.append(f"options {stored_options!r} (given: {given_options!r})")
    if problem is not None:
        pid = problem.id if isinstance(problem, Problem) else str(problem)
        if pid != config.get("problem"):
            out.append(f"problem {config.get('problem')!r} (given: {pid!r})")
    elif space is not None:
        stored = config.get("space")
        if stored is None:
            out.append(f"problem {config.get('problem')!r} (given: a space)")
        else:
            given = _space_document(space)
            measurement = given.pop("measurement", None)
            if measurement is not None and measurement != config.get("measurement"):
                out.append("the space's [measurement]")
            for key, value in given.items():
                old = stored.get(key)
                if key == "parameters" and isinstance(value, list) and isinstance(old, list):
                    old = [
                        {k: v for k, v in o.items() if k in g} if isinstance(o, Mapping) else o
                        for o, g in zip(old, value)
                    ] + old[len(value) :]
                if old != value:
                    out.append(f"the space's {key!r}")
    return out


class _ReadTracker(dict):
    """A problem's settings that remember which keys a method factory looked up."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.read: set[str] = set()

    def __getitem__(self, key: Any) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.read.add(key)  # type: ignore[arg-type]
        return super().__contains__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)


def _builds_without(method: str, config: Mapping[str, Any], key: str) -> bool:
    """Whether the policy builds once option ``key`` is left out (to name a bad option)."""
    options = {k: v for k, v in config["options"].items() if k != key}
    try:
        make_policy(method, _problem_from_config(config), int(config["seed"]), **options)
    except (TypeError, ValueError, KeyError):
        return False
    return True


def _check_buildable(method: str, config: Mapping[str, Any]) -> set[str]:
    """Build the policy once from ``config`` before anything is stored; the settings keys the
    method read.

    A bad option value (``horizon="abc"``), a missing setting or a ``[settings]`` key of the
    space file that the method never reads is an :class:`InvalidInputError` naming it.
    """
    from boloop.algorithms.registry import build_policy
    from boloop.queries import PolicySpec

    problem = _problem_from_config(config)
    tracker = _ReadTracker(problem.settings)
    options = config["options"]
    spec = PolicySpec(  # make_policy's spec, with settings that record what the method reads
        method=method,
        family=problem.family,
        space=problem.space,
        settings=tracker,
        seed=int(config["seed"]),
        options=dict(options),
        source=str(getattr(problem, "id", "")),
    )
    try:
        build_policy(spec)
    except BoloopError:
        raise
    except (TypeError, ValueError, KeyError) as exc:
        reason = f"missing setting {exc}" if isinstance(exc, KeyError) else str(exc)
        culprits = [k for k in options if _builds_without(method, config, k)]
        if len(culprits) == 1:
            k = culprits[0]
            raise InvalidInputError(
                f"option {k}={options[k]!r} is not valid for method {method!r}: {reason}"
            ) from exc
        shown = ", ".join(f"{k}={v!r}" for k, v in options.items()) or "none"
        raise InvalidInputError(
            f"method {method!r} cannot be built with options ({shown}): {reason}"
        ) from exc
    user_settings = set((config.get("space") or {}).get("settings") or {})
    unread = sorted(user_settings - tracker.read)
    if unread:
        known = sorted(k for k in tracker.read if isinstance(k, str))
        raise InvalidInputError(
            f"the space's [settings] has {unread}{meant_keys(unread, known)}, which method "
            f"{method!r} does not read (a typo?); the settings it reads: "
            f"{', '.join(known) or 'none'}"
        )
    return {k for k in tracker.read if isinstance(k, str)}


def _open_existing(storage: str | None) -> StorageBackend | SQLiteLog:
    """The storage of existing studies: a plain SQLite file through Python's own sqlite3 (no
    SQLAlchemy import, issue 15's quick ``boloop study ask/tell``), anything else (and every
    refusal with its message) through :func:`~boloop.study.storage.open_storage`."""
    from boloop.study.sqlite_log import open_sqlite_log

    quick = open_sqlite_log(storage)
    if quick is not None:
        return quick
    from boloop.study.storage import open_storage

    return open_storage(storage, create=False)


def load_study(name: str, storage: str | None = None, *, full_replay: bool = False) -> Study:
    """Load study ``name``, replaying its log through a fresh policy.

    Every replayed query is checked against the stored one. A snapshot stored by the same code
    (see :mod:`boloop.study.storage`) stands in for the events before it unless ``full_replay``;
    the events after it are replayed and checked.

    Raises :class:`UnknownIdError` (listing the stored names) if there is no such study and
    :class:`StorageError` if the log does not replay to the same queries.
    """
    from boloop.study.core import Study  # (core imports this module)

    store = _open_existing(storage)
    sid = store.study_id(name)
    return Study(store, sid, name, store.events(sid), full_replay=full_replay)
