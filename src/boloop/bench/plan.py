"""The plan of a sweep, in the parent before anything runs: the seeds (:func:`parse_seeds`), the
runs (:class:`RunSpec`, :func:`plan_runs`) with the files of problems and methods given as
``path/to/file.py:factory`` (:class:`SourceFile`), and the checks that refuse a bad id, option
value or method file before the first run instead of failing every run."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from boloop.bench.results_file import METHOD_SHA256, PROBLEM_SHA256, Key
from boloop.errors import BoloopError, InvalidInputError

#: most seeds one sweep takes (each is a run per problem and method): a typo such as
#: ``0-99999999999`` is refused at once instead of filling the memory with seeds
MAX_SEEDS = 100_000

_SEEDS = re.compile(r"([0-9]+)(?:-([0-9]+))?")


def parse_seeds(text: str | int | Sequence[int]) -> list[int]:
    """Seeds from ``"N"`` (0..N-1) or ``"A-B"`` (A..B inclusive), or a list of seeds.

    ``"5-3"``, ``"0"``, negative numbers, duplicates, digits other than 0-9 and more than
    :data:`MAX_SEEDS` seeds are errors.
    """
    if isinstance(text, bool):
        raise InvalidInputError(f"seeds must be 'N' or 'A-B', got {text!r}")
    if isinstance(text, int):
        text = str(text)
    if not isinstance(text, str):
        if isinstance(text, Sized) and len(text) > MAX_SEEDS:  # before a list is built of it
            raise InvalidInputError(f"{len(text)} seeds; a sweep takes at most {MAX_SEEDS}")
        seeds = [int(s) for s in text]
    else:
        found = _SEEDS.fullmatch(text.strip())
        if found is None:  # "²" and "٣" are digits to str.isdigit, not to int()
            raise InvalidInputError(
                f"seeds must be 'N' (0..N-1) or 'A-B' (inclusive), got {text!r}"
            )
        a, b = found.groups()
        lo, hi = (int(a), int(b)) if b is not None else (0, int(a) - 1)
        if b is None and hi < 0:
            raise InvalidInputError(f"seeds 'N' needs N >= 1, got {text!r}")
        if hi < lo:
            raise InvalidInputError(f"seed range {text!r} is empty: {hi} < {lo}")
        if hi - lo + 1 > MAX_SEEDS:
            raise InvalidInputError(
                f"seeds {text!r} are {hi - lo + 1} seeds; a sweep takes at most {MAX_SEEDS}"
            )
        seeds = list(range(lo, hi + 1))
    if len(seeds) > MAX_SEEDS:
        raise InvalidInputError(f"{len(seeds)} seeds; a sweep takes at most {MAX_SEEDS}")
    if not seeds or any(s < 0 for s in seeds):
        raise InvalidInputError(f"seeds must be non-negative and non-empty, got {text!r}")
    if len(set(seeds)) != len(seeds):
        raise InvalidInputError(f"seeds {text!r} repeat a seed")
    return seeds


@dataclass(frozen=True)
class SourceFile:
    """The file of a problem or a method given as ``path/to/file.py:factory`` in a sweep: its
    runs' rows carry its sha256 in ``column``, and a stored run with another value runs again."""

    #: :data:`PROBLEM_SHA256` or :data:`METHOD_SHA256`
    column: str
    #: the file as a worker opens it (a problem's path as given, resolved in the worker as
    #: :func:`boloop.problems.get` resolves it; a method's absolute path, as its workers load it)
    path: str
    #: the path as the user gave it, for messages
    shown: str
    #: the value of ``column``: the sha256 (hex) of the bytes this sweep's process imported, of
    #: the file alone or of it and the user's modules it imports
    #: (:func:`boloop._user_code.fingerprint`)
    sha256: str
    #: the sha256 of the file alone (equal to ``sha256`` when ``modules`` is empty)
    file_sha256: str = ""
    #: the modules of the user's own the file imports, by path relative to its folder
    modules: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep; ``budget`` None means the problem's ``settings["budget"]``."""

    problem: str
    method: str
    seed: int
    budget: int
    #: ``/abs/path/file.py:factory`` that registers ``method`` in a process that lacks it (a
    #: method of the user's own, :func:`boloop.algorithms.registry.method_file_of`); not part
    #: of the key
    method_file: str | None = None
    #: the files of a problem or method given as ``file.py:factory``; not part of the key
    sources: tuple[SourceFile, ...] = ()

    @property
    def key(self) -> Key:
        return (self.problem, self.method, self.seed)


def plan_runs(
    problems: Sequence[str], methods: Sequence[str], seeds: Sequence[int], budget: int | None
) -> tuple[list[RunSpec], list[str]]:
    """Check every id (unknown ids raise listing the valid ones), resolve budgets, and return the
    runs and the metric columns in the problems' order."""
    from boloop._registry import is_file_id, split_id
    from boloop._user_code import recording_imports
    from boloop.algorithms.registry import (
        get_method,
        is_method_file,
        load_method_file,
        method_file_of,
    )
    from boloop.problems import get
    from boloop.problems.registry import is_file_problem

    if not problems or not methods:
        raise InvalidInputError("give at least one --problem and one --method")
    if budget is not None and (isinstance(budget, bool) or int(budget) != budget or budget < 1):
        raise InvalidInputError(f"budget must be a positive integer, got {budget!r}")
    specs: list[RunSpec] = []
    seen: set[Key] = set()
    metrics: list[str] = []
    # the user's modules that building and checking the methods imports are recorded as the
    # bytes executed (the files' own imports are, by their loader); a sweep of the library's ids
    # imports as it always did
    files = any(is_file_id(p) for p in problems) or any(is_file_id(m) for m in methods)
    with recording_imports() if files else contextlib.nullcontext():
        for pid in dict.fromkeys(problems):
            problem = get(pid)
            problem_src: tuple[SourceFile, ...] = (
                (_source_file(pid, PROBLEM_SHA256, "problem", relative=True),)
                if is_file_problem(pid)
                else ()
            )
            for m in problem.metric_names():
                if m not in metrics:
                    metrics.append(m)
            b = budget if budget is not None else problem.settings.get("budget")
            if b is None:
                raise InvalidInputError(f"problem {pid!r} has no default budget; give --budget")
            for given in dict.fromkeys(methods):
                name, raw = split_id(given, "method")
                mid = given
                sources = problem_src
                if is_method_file(name):  # path/to/file.py:factory: the id it is registered as
                    entry = load_method_file(name, problem.family)
                    mid = entry.id + given[len(name) :]  # with the ?options as given
                    _check_file_method(problem, pid, given, entry.id, int(b))
                    sources += (_source_file(name, METHOD_SHA256, "method", relative=False),)
                else:
                    try:
                        entry = get_method(name, problem.family)
                    except InvalidInputError as exc:  # a method of another family
                        raise InvalidInputError(_one_family_message(exc, problems, methods)) from exc
                options = entry.read_id_options(raw)  # by the options' types
                entry.check_options(options)  # OptionError names valid ones
                if options:
                    _check_option_values(problem, pid, mid, int(b), int(seeds[0]) if seeds else 0)
                source = method_file_of(entry)
                for s in seeds:
                    spec = RunSpec(pid, mid, int(s), int(b), source, sources)
                    if spec.key not in seen:  # the same method given by its id and its file
                        seen.add(spec.key)
                        specs.append(spec)
    return specs, metrics


def _source_file(reference: str, column: str, what: str, *, relative: bool) -> SourceFile:
    """The :class:`SourceFile` of ``path/to/file.py:factory`` (options after ``?`` aside), which
    this process has just imported: the sha256 of the bytes it executed, of the file and of the
    user's modules it imports (:func:`boloop._user_code.fingerprint`). A file or such a module
    edited since this process imported it (a sweep earlier in the same Python session) is
    refused: the runs would run the old code under the new code's sha256."""
    from boloop._registry import file_sha256
    from boloop._user_code import fingerprint

    shown = reference.partition("?")[0].rpartition(":")[0]
    path = Path(shown).expanduser().resolve()
    file_sha256(path)  # an unreadable file is an error here, as it was
    code = fingerprint(path)
    if code.stale:
        which = (
            f"{what} file {shown!r}"
            if path.name in code.stale
            else f"{', '.join(code.stale)}, imported by {what} file {shown!r},"
        )
        raise InvalidInputError(
            f"{which} changed since this Python process imported it: its runs "
            "would run the old code. Benchmark the edited file from a new process (the boloop "
            "command, or a restarted Python session or notebook kernel)"
        )
    return SourceFile(
        column,
        shown if relative else str(path),
        shown,
        code.value,
        file_sha256=code.file_sha256,
        modules=code.modules,
    )


def _check_file_method(problem: Any, pid: str, given: str, method_id: str, budget: int) -> None:
    """A method from the user's file is built once before the sweep (as a run builds it, without
    its options, which are judged next): a factory that returns no boloop policy, or a policy
    that breaks its family's contract, is one error now instead of a failure of every run."""
    from boloop.algorithms import make_policy
    from boloop.queries import BasePolicy

    problem.settings = {**problem.settings, "budget": budget}
    try:
        policy = make_policy(method_id, problem, 0)
    except BoloopError as exc:
        raise InvalidInputError(f"method {given!r} on problem {pid!r}: {exc}") from exc
    except Exception:  # the factory's own bug: each run reports it with its traceback (-v)
        return
    if not isinstance(policy, BasePolicy):
        raise InvalidInputError(
            f"method {given!r}: its factory returned {type(policy).__name__}, not a boloop "
            "policy (a boloop.queries.BasePolicy); see docs/methods.md"
        )


def _one_family_message(
    exc: InvalidInputError, problems: Sequence[str], methods: Sequence[str]
) -> str:
    """The refusal of a method that does not run on one of the problems: one sweep runs every
    method on every problem, so the families go into separate commands into the same ``--out``
    (the CSV takes the union of their metric columns; plot and summary read both)."""
    import shlex

    from boloop.algorithms.registry import list_methods
    from boloop.problems import get, parse_problem_id

    by_family: dict[str, list[str]] = {}
    for pid in dict.fromkeys(problems):
        by_family.setdefault(get(pid).family, []).append(pid)
    serves: dict[str, set[str]] = {}
    for e in list_methods():
        serves.setdefault(e.id, set()).add(e.family)
    commands = []
    for family, pids in by_family.items():
        mids = [
            m for m in dict.fromkeys(methods) if family in serves.get(parse_problem_id(m)[0], ())
        ]
        if mids:
            quoted = " ".join(shlex.quote(x) for x in pids), " ".join(shlex.quote(m) for m in mids)
            commands.append(f"`--problem {quoted[0]} --method {quoted[1]}`")
    text = (
        f"{exc}. One bench run runs every method on every problem, so it takes the methods of "
        "one family: run each family with its own command into the same --out (results.csv "
        "takes both families' columns; bench plot and bench summary cover both)"
    )
    if len(commands) > 1:
        text += ": " + " and ".join(commands)
    return text


def _check_option_values(problem: Any, pid: str, mid: str, budget: int, seed: int) -> None:
    """Option values are checked by the constructors: build the policy once, as a run would (its
    horizon is the budget), so that a bad value stops the sweep before it starts instead of
    failing every run of it. Only the options are judged here: a pair that cannot be built even
    without them (a method for finite sets on a box) stays a failure of its runs, reported with
    the others, as before."""
    from boloop.algorithms import make_policy
    from boloop.algorithms.registry import parse_method_id

    name, options = parse_method_id(mid, problem.family)
    problem.settings = {**problem.settings, "budget": budget}
    try:
        make_policy(name, problem, seed, **options)
    except BoloopError as exc:
        try:
            make_policy(name, problem, seed)
        except BoloopError:
            return  # not the options: the runs fail and say why
        raise InvalidInputError(f"method {mid!r} on problem {pid!r}: {exc}") from exc
