"""The method registry: ``build_policy(spec)`` builds any method from a
:class:`boloop.queries.PolicySpec` (method id, family, space, settings, seed, options), and
``make_policy(method_id, problem, seed, **options)`` does so with a problem's settings, so the
CLI, the bench and studies need no per-method code. Nothing here imports ``boloop.problems``:
a policy is built from the spec alone and never sees a true function.

The method table
----------------
Every method declares its options next to its registration: a tuple of :class:`Option` (name,
type, default, one-line doc), usually read from the policy's constructor with
:func:`options_from` so that the defaults cannot drift from the code. :func:`check_options`
validates options against the table before a policy is built; an unknown or mistyped option raises
:class:`boloop.errors.OptionError` naming the valid options with their types and defaults, the same
way through ``make_policy``, ``boloop study create --option k=v`` and bench ids (``mr-lpf?lam=0.1``).
The whole table: ``[(e.family, e.id, e.options) for e in list_methods()]``.

Method ids are unique *within a family*: ``random`` is a baseline of the levelset, preference and
expert papers alike, so entries are keyed by ``(family, method_id)`` and :func:`make_policy` picks
the entry registered for ``problem.family``.
"""

from __future__ import annotations

import difflib
import inspect
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from boloop._registry import (
    Entry,
    Registry,
    is_file_id,
    load_file_attribute,
    parse_id_value,
    split_id,
)
from boloop._validation import meant_keys
from boloop.errors import InvalidInputError, OptionError, UnknownIdError
from boloop.queries import BasePolicy, PolicySpec

__all__ = [
    "register_method",
    "make_policy",
    "build_policy",
    "list_methods",
    "get_method",
    "check_options",
    "Option",
    "MethodEntry",
    "options_from",
    "FAMILY_DEFAULTS",
    "default_method",
    "RECOMMEND_KEYWORDS",
    "TYPE_WORDS",
    "check_recommend_keywords",
    "is_method_file",
    "load_method_file",
    "method_file_of",
    "parse_method_id",
]

#: the method a study of a family runs when it names none, chosen by measurement where people
#: work (preference: 25-200 duels, ``docs/reproductions/preference.md``; expert: COBOL, the
#: one method that uses the expert with no harm measured: with a bad expert its defaults ended
#: within 1.5x of GP-LCB in every run of issue 12, ``docs/reproductions/expert.md``; level sets:
#: the randomized straddle (Inatsu et al. Alg. 1), whose learned-kernel default reaches the
#: fitted BoTorch straddle's F-score at 50 and 100 answers on every grid problem, issue 18,
#: ``docs/reproductions/levelset.md``; safe: M-SafeOpt Case 1 (Losalka & Scarlett 2024, Alg. 1),
#: the paper's method, below both baselines on the clinical trial with learned
#: hyperparameters, ``docs/reproductions/safe.md``)
FAMILY_DEFAULTS: dict[str, str] = {
    "preference": "eubo-regret",
    "expert": "cobol",
    "levelset": "randomized-straddle",
    "safe": "m-safeopt",
}


def default_method(family: str | None) -> str:
    """The default method of ``family`` (:data:`FAMILY_DEFAULTS`); an error naming the families
    that have one otherwise."""
    if family in FAMILY_DEFAULTS:
        return FAMILY_DEFAULTS[str(family)]
    from boloop.errors import InvalidInputError

    have = ", ".join(f"--family {f} runs {m}" for f, m in sorted(FAMILY_DEFAULTS.items()))
    what = "the space names no family" if family is None else f"the {family} family has none"
    raise InvalidInputError(
        f"no method given and {what}: name a method (boloop methods) or a family with a "
        f"default method ({have})"
    )


_PACKAGE = "boloop.algorithms"


# ---------------------------------------------------------------------------------- option table
def _is_real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_)


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool | np.bool_)


def _is_seq(v: Any, item: Callable[[Any], bool]) -> bool:
    if isinstance(v, np.ndarray):
        return v.ndim == 1 and all(item(x) for x in v.tolist())
    return isinstance(v, list | tuple) and all(item(x) for x in v)


def _is_kernel(v: Any) -> bool:
    from boloop.gp.kernels import Kernel

    return isinstance(v, Kernel)


def _is_beta_schedule(v: Any) -> bool:
    from boloop.confidence import BetaSchedule

    return isinstance(v, BetaSchedule)


#: the type words an :class:`Option` checks (``"float | None"``): a value must pass one of them
_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "float": _is_real,
    "int": _is_int,
    "bool": lambda v: isinstance(v, bool | np.bool_),
    "str": lambda v: isinstance(v, str),
    "None": lambda v: v is None,
    "Kernel": _is_kernel,
    "BetaSchedule": _is_beta_schedule,
    "Sequence[float]": lambda v: _is_seq(v, _is_real),
    "tuple[str, ...]": lambda v: _is_seq(v, lambda x: isinstance(x, str)),
}

#: type words an :class:`Option` may also use that accept every value (``Any``; the level-set
#: ``hyperparameters`` option, checked by its policy's constructor)
_UNCHECKED_TYPES = ("Any", "HyperparameterLearning")

#: every word an option's ``type`` may be made of, joined by ``" | "``
TYPE_WORDS: tuple[str, ...] = (*_TYPE_CHECKS, *_UNCHECKED_TYPES)


@dataclass(frozen=True)
class Option:
    """One row of the method table.

    ``type`` is a string written as in a type hint, ``"float"``, ``"int | None"``,
    ``"Kernel | str"``, made of the words of :data:`TYPE_WORDS`: ``float``, ``int``, ``bool``,
    ``str``, ``None``, ``Kernel``, ``BetaSchedule``, ``Sequence[float]``, ``tuple[str, ...]`` are
    checked (an ``int`` is a valid ``float``, a ``bool`` is not a number); ``Any`` and
    ``HyperparameterLearning`` accept every value (the policy's constructor checks the latter).
    Any other type (a Python type such as ``int``, a word such as ``"integer"``) is refused when
    the method is registered (:func:`register_method`), naming the valid words. ``default``
    is the value used when neither the option nor the problem's settings give one (documentation:
    the factory applies it).
    """

    name: str
    type: str
    default: Any = None
    doc: str = ""

    def type_error(self) -> str | None:
        """Why ``type`` is not made of :data:`TYPE_WORDS` (None when it is)."""
        valid = ", ".join(repr(w) for w in TYPE_WORDS)
        if not isinstance(self.type, str):
            shown = getattr(self.type, "__name__", None)
            hint = f" (write {shown!r})" if shown in TYPE_WORDS else ""
            return (
                f"option {self.name!r} has type {shown or repr(self.type)}, not a string{hint}; "
                f"an option's type is a string of the words {valid} joined by ' | ', e.g. 'int' "
                "or 'float | None'"
            )
        bad = [w.strip() for w in self.type.split("|") if w.strip() not in TYPE_WORDS]
        if bad:
            close = difflib.get_close_matches(bad[0], TYPE_WORDS, 1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            return (
                f"option {self.name!r} has type {self.type!r}: {bad[0]!r} is not a type word"
                f"{hint}; the valid words, joined by ' | ': {valid}"
            )
        return None

    def accepts(self, value: Any) -> bool:
        words = [w.strip() for w in self.type.split("|")]
        if any(w not in _TYPE_CHECKS for w in words):
            return True  # an unchecked word (Any)
        return any(_TYPE_CHECKS[w](value) for w in words)

    def describe(self) -> str:
        """``name (type, default ...)``: how error messages and listings show the option."""
        return f"{self.name} ({self.type}, default {self.default!r})"


def options_from(
    cls: type,
    docs: Mapping[str, str],
    *,
    skip: Sequence[str] = ("space", "seed"),
    only: Sequence[str] | None = None,
    types: Mapping[str, str] | None = None,
) -> tuple[Option, ...]:
    """The options of a policy class read from its constructor (following ``**kwargs`` up the
    MRO): name, type hint, default; ``docs`` gives the one-line doc of each. ``skip`` leaves out
    the arguments a factory passes itself, ``only`` keeps just the named ones (in that order),
    ``types`` overrides a type hint (a factory that also takes ``kernel="fit"``)."""
    found: dict[str, Option] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        more = False
        for name, p in inspect.signature(init).parameters.items():
            if p.kind is p.VAR_KEYWORD:
                more = True
                continue
            if name == "self" or p.kind is p.VAR_POSITIONAL or name in skip or name in found:
                continue
            ann = p.annotation
            hint = (
                "Any"
                if ann is p.empty
                else ann
                if isinstance(ann, str)
                else getattr(ann, "__name__", "Any")
            )
            hint = (types or {}).get(name, hint)
            default = None if p.default is p.empty else p.default
            found[name] = Option(name, hint, default, docs.get(name, ""))
        if not more:
            break
    if only is not None:
        missing = [n for n in only if n not in found]
        if missing:
            raise InvalidInputError(f"{cls.__name__} has no constructor argument {missing}")
        return tuple(found[n] for n in only)
    return tuple(sorted(found.values(), key=lambda o: o.name))


#: names no option may have: the factory's own ``(spec, seed)`` (an option so named could never
#: reach it: ``got multiple values for keyword argument 'seed'``). The arguments of
#: :func:`boloop.study.create_study` (``name``, ``space``, ``storage``...) are refused where they
#: collide, by ``boloop study create --option``; an option so named still works everywhere else.
RESERVED_OPTION_NAMES: tuple[str, ...] = ("spec", "seed")


@dataclass(frozen=True)
class MethodEntry(Entry):
    """A registered method: id, family, description, factory and its option table."""

    options: tuple[Option, ...] = ()

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Raise :class:`OptionError` for an option this method does not declare or a value of
        the wrong type; the message lists the valid options with types and defaults."""
        valid = "; ".join(o.describe() for o in self.options) or "(none)"
        for name, value in options.items():
            opt = self.option(name)
            if opt is None:
                hint = meant_keys([str(name)], [o.name for o in self.options])
                raise OptionError(
                    f"unknown option {name!r} for method {self.id!r} ({self.family}){hint}; "
                    f"valid options: {valid}"
                )
            if not opt.accepts(value):
                raise OptionError(
                    f"option {name!r} of method {self.id!r} ({self.family}) must be {opt.type}, "
                    f"got {value!r}; valid options: {valid}"
                )


    def read_id_options(self, raw: Mapping[str, str]) -> dict[str, Any]:
        """The options of an id (``method?key=value``) from their text: each value is read as a
        literal (:func:`boloop._registry.parse_id_value`: ``1`` an int, ``true`` a bool,
        ``none`` None, ``1,4`` a list), except that an option whose declared type accepts a
        ``str`` but not that literal keeps the text as written (``mode=1``, ``mode=true``,
        ``mode=nan`` of a ``str`` option are the strings ``"1"``, ``"true"``, ``"nan"``)."""
        options: dict[str, Any] = {}
        for key, text in raw.items():
            value = parse_id_value(text)
            opt = self.option(key)
            if opt is not None and not opt.accepts(value) and opt.accepts(text):
                value = text
            options[key] = value
        return options


class _MethodRegistry(Registry):
    """Entries keyed by ``(family, id)``; the modules of ``boloop.algorithms`` are imported once."""

    def __init__(self) -> None:
        super().__init__("method", _PACKAGE)

    def register(
        self,
        method_id: str,
        family: str,
        description: str,
        options: Sequence[Option] = (),
    ) -> Callable[[Callable[..., BasePolicy]], Callable[..., BasePolicy]]:
        if not method_id or not family:
            raise InvalidInputError(
                f"method_id and family must be non-empty, got {method_id!r}, {family!r}"
            )

        for option in options:
            why = option.type_error() if isinstance(option, Option) else f"{option!r} is no Option"
            if why is None and option.name in RESERVED_OPTION_NAMES:
                why = (
                    f"an option cannot be named {option.name!r}: the factory is called as "
                    "factory(spec, seed, **options)"
                )
            if why is not None:
                raise InvalidInputError(f"method {method_id!r} ({family}): {why}")

        def deco(factory: Callable[..., BasePolicy]) -> Callable[..., BasePolicy]:
            key = (family, method_id)
            old = self._entries.get(key)
            if old is not None and not _same_factory(old.factory, factory):
                raise InvalidInputError(
                    f"method {method_id!r} is already registered for family {family!r} by "
                    f"{defined_by(old.factory)}; {defined_by(factory)} registers it again: "
                    "a method id names one factory of a family, give one of them another id"
                )
            self._entries[key] = MethodEntry(
                method_id, family, description, factory, tuple(options)
            )
            return factory

        return deco

    def get(self, method_id: str, family: str | None = None) -> MethodEntry:
        self.discover()
        if isinstance(method_id, str) and "?" in method_id:  # an id with options, where none go
            name, raw = split_id(method_id, "method")
            if any(m == name for (_, m) in self._entries):
                if not raw:  # "name?": the message below would name empty options
                    raise InvalidInputError(
                        f"method id {method_id!r} has a '?' and no option after it: give the "
                        f"method as {name!r}"
                    )
                keys = ", ".join(f"{k}=..." for k in raw)
                flags = " ".join(f"--option {k}=..." for k in raw)
                raise InvalidInputError(
                    f"method id {method_id!r} carries options, which are given apart here: as "
                    f"keyword arguments (create_study(..., {keys})) or `{flags}`; make_policy, "
                    "simulate and bench ids take them in the id"
                )
        if family is not None:
            entry = self._entries.get((family, method_id))
            if entry is not None:
                return entry  # type: ignore[return-value]
            valid = [e.id for e in self.entries(family)]
            others = sorted(f for (f, m) in self._entries if m == method_id)
            if others:
                raise InvalidInputError(
                    f"method {method_id!r} is for {' and '.join(others)} problems, not {family}; "
                    f"methods for {family}: {', '.join(valid) or '(none yet)'}"
                )
            raise UnknownIdError(
                f"unknown method id {method_id!r} for family {family!r}; valid ids: "
                f"{', '.join(valid) or '(none yet)'}"
            )
        matches = [e for (f, m), e in sorted(self._entries.items()) if m == method_id]
        if len(matches) == 1:
            return matches[0]  # type: ignore[return-value]
        if not matches:
            valid = sorted({m for (_, m) in self._entries})
            raise UnknownIdError(f"unknown method id {method_id!r}; valid ids: {', '.join(valid)}")
        fams = [e.family for e in matches]
        raise InvalidInputError(
            f"method id {method_id!r} exists in several families ({', '.join(fams)}); pass family="
        )


def _qualname(factory: Callable[..., Any]) -> str:
    return f"{getattr(factory, '__module__', '?')}.{getattr(factory, '__qualname__', '?')}"


def defined_by(factory: Callable[..., Any]) -> str:
    """Where a factory is written, as its author knows it: ``make_amb in amb.py`` (a user's file,
    relative to the working directory when it lies below it; the module a file given as
    ``file.py:factory`` is imported as has an internal name), ``boloop.algorithms.x.make``."""
    import os

    module = getattr(factory, "__module__", "") or ""
    source = _source_file(factory)
    if module == "boloop" or module.startswith("boloop.") or source is None:
        return _qualname(factory)
    try:
        shown = os.path.relpath(source)
    except ValueError:  # another drive (Windows)
        shown = source
    if shown.startswith(".."):
        shown = source
    return f"{getattr(factory, '__qualname__', '?')} in {shown}"


def _source_file(factory: Callable[..., Any]) -> str | None:
    code = getattr(factory, "__code__", None)
    return None if code is None else str(Path(code.co_filename).resolve())


def _same_factory(a: Callable[..., Any], b: Callable[..., Any]) -> bool:
    """The same function: same module and name, or the same name defined in the same file (a
    user's file imported again under another module name: by ``import mine`` and by
    ``boloop bench run --method mine.py:factory``, or in a bench worker)."""
    if _qualname(a) == _qualname(b):
        return True
    same_name = getattr(a, "__qualname__", None) == getattr(b, "__qualname__", None)
    return same_name and _source_file(a) is not None and _source_file(a) == _source_file(b)


_METHODS = _MethodRegistry()


def register_method(
    method_id: str, family: str, description: str, options: Sequence[Option] = ()
) -> Callable[[Callable[..., BasePolicy]], Callable[..., BasePolicy]]:
    """Decorator: register ``factory(spec, seed, **options) -> BasePolicy`` as ``method_id`` of
    ``family``, with its option table ``options`` (a sequence of :class:`Option`).

    The factory is called by :func:`build_policy` (and so by :func:`make_policy`, ``simulate``,
    the bench and studies) with

    * ``spec``: the :class:`boloop.queries.PolicySpec` (read ``spec.space``, the search space,
      and ``spec.settings``, the problem's or the study's named settings such as ``threshold``,
      ``kernel``, ``noise_variance``, ``budget``; never a true function),
    * ``seed``: ``spec.seed``, for the policy's ``numpy.random.Generator``,
    * ``**options``: the user's options (``spec.options``), already checked against ``options``;
      only options the user gave are passed, so the factory applies the defaults (an option
      given here takes precedence over the setting of the same name).

    It returns a :class:`boloop.queries.BasePolicy` of ``family``; how to write one is in
    ``docs/methods.md``. Each :class:`Option`'s ``type`` is checked here: a type that is not a
    string of :data:`TYPE_WORDS` raises :class:`boloop.errors.InvalidInputError` naming the
    valid words. The same id may exist in several families (``random``); registering an id
    twice in one family with another factory raises :class:`boloop.errors.InvalidInputError`
    (the same function again, also from the same file imported under another module name, only
    replaces the entry).

    A method registered in a module of your own exists in the processes that imported that
    module: a study of it is loaded after that import, and ``boloop bench run --method
    path/to/file.py:factory`` imports the file (in its worker processes too).
    """
    return _METHODS.register(method_id, family, description, options)


def check_options(method_id: str, family: str | None, options: Mapping[str, Any]) -> None:
    """Validate ``options`` against the table of ``method_id``: raises
    :class:`boloop.errors.OptionError` (unknown name or wrong type, naming the valid options), or
    the errors of :func:`get_method` for an unknown method."""
    _METHODS.get(method_id, family).check_options(options)


def get_method(method_id: str, family: str | None = None) -> MethodEntry:
    """The registry entry of ``method_id`` in ``family`` (or the only family that has it)."""
    return _METHODS.get(method_id, family)


def build_policy(spec: PolicySpec) -> BasePolicy:
    """Build the policy ``spec`` describes: the entry of ``(spec.family, spec.method)`` gets the
    spec (its ``space`` and ``settings``), ``spec.seed`` and ``spec.options``.

    Raises :class:`boloop.errors.UnknownIdError` (listing the valid ids of the family) for an
    unknown method, :class:`boloop.errors.InvalidInputError` when the method exists only for other
    families, and :class:`boloop.errors.OptionError` for an option the method's table does not
    declare or a value of the wrong type (before anything is built).
    """
    if not isinstance(spec, PolicySpec):
        raise InvalidInputError(f"build_policy needs a PolicySpec, got {type(spec).__name__}")
    entry = _METHODS.get(spec.method, spec.family)
    entry.check_options(spec.options)
    policy = entry.factory(spec, spec.seed, **spec.options)
    _check_built(policy, entry.id)
    check_recommend_keywords(policy, entry.id, entry.family)
    return policy


def _check_built(policy: Any, method_id: str) -> None:
    """Refuse what a factory returned if it is no policy, or one whose ``__init__`` skipped
    ``BasePolicy.__init__`` (before: an ``AttributeError`` about ``iteration`` at the first
    ``ask``, far from the cause)."""
    if not isinstance(policy, BasePolicy):
        raise InvalidInputError(
            f"method {method_id!r}: its factory returned {type(policy).__name__}, not a boloop "
            "policy (a boloop.queries.BasePolicy subclass); see docs/methods.md"
        )
    if not all(hasattr(policy, a) for a in ("rng", "iteration", "history")):
        raise InvalidInputError(
            f"method {method_id!r}: {type(policy).__name__}.__init__ must call "
            "super().__init__(seed) (it sets self.rng, self.iteration and self.history)"
        )


#: keywords the metric tracker of a family passes to ``recommend`` in a simulation or a bench
#: run, which every policy of the family must accept (the level-set tracker asks for the sets
#: after every answer: ``recommend(final_update=True)``, Inatsu et al. eq. 3.1 / Algorithm 3)
RECOMMEND_KEYWORDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"levelset": ("final_update",)}
)


def check_recommend_keywords(
    policy: Any, method_id: str, family: str, keywords: Sequence[str] | None = None
) -> None:
    """Raise :class:`~boloop.errors.InvalidInputError` for a policy whose ``recommend`` does not
    take the keywords of its family's contract (:data:`RECOMMEND_KEYWORDS`; ``keywords`` when
    given: those one problem's tracker passes), naming them; otherwise its first simulated step
    fails with a bare ``TypeError`` from the metric tracker. :func:`build_policy` calls it on
    every policy it builds, :func:`boloop.simulate.simulate` on a policy object."""
    needed = RECOMMEND_KEYWORDS.get(family, ()) if keywords is None else tuple(keywords)
    recommend = getattr(policy, "recommend", None)
    if not needed or not callable(recommend):
        return
    try:
        params = inspect.signature(recommend).parameters
    except (TypeError, ValueError):  # no signature to read (a builtin): nothing to judge
        return
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    missing = [k for k in needed if k not in params or params[k].kind is params[k].POSITIONAL_ONLY]
    if missing:
        wanted = ", ".join(f"{k}: bool = True" for k in missing)
        raise InvalidInputError(
            f"method {method_id!r} ({family}): {type(policy).__name__}.recommend() takes no "
            f"keyword {missing[0]!r}; every {family} policy's recommend must accept "
            f"recommend({wanted}) (the {family} metric tracker calls "
            f"recommend({', '.join(f'{k}=True' for k in missing)}) after every answer; "
            "docs/methods.md, the policy contract)"
        )


def parse_method_id(method_id: str, family: str | None = None) -> tuple[str, dict[str, Any]]:
    """Split ``"mr-lpf?lam=0.1&mode=1"`` into the method's id and its options, the values read
    by the option table of the method of ``family`` (:meth:`MethodEntry.read_id_options`: a
    ``str`` option keeps ``1`` as ``"1"``); an id no method has yet is read literally (building
    it then says it is unknown)."""
    name, raw = split_id(method_id, "method")
    try:
        entry = _METHODS.get(name, family)
    except (UnknownIdError, InvalidInputError):
        return name, {key: parse_id_value(text) for key, text in raw.items()}
    return name, entry.read_id_options(raw)


def make_policy(method_id: str, problem: Any, seed: Any = 0, **options: Any) -> BasePolicy:
    """Build method ``method_id`` with the ``family``, ``space`` and ``settings`` of ``problem``
    (a :class:`boloop.problems.Problem`, or anything with those three attributes) and ``seed``;
    ``options`` override the settings. ``method_id`` may carry options as a bench id does,
    ``"mr-lpf?lam=0.1"`` (read by :func:`parse_method_id`), as :func:`boloop.simulate.simulate`
    takes them; an option given both there and as a keyword is refused. Equivalent to
    :func:`build_policy` on the :class:`PolicySpec` made from them; raises the same errors."""
    try:
        family, space, settings = problem.family, problem.space, problem.settings
    except AttributeError as exc:
        raise InvalidInputError(
            f"make_policy needs a problem with family, space and settings, got {problem!r}"
        ) from exc
    if isinstance(method_id, str) and "?" in method_id:
        given = method_id
        method_id, id_options = parse_method_id(method_id, family)
        both = sorted(set(id_options) & set(options))
        if both:
            raise InvalidInputError(
                f"options {both} are given both in the method id {given!r} and as arguments"
            )
        options = {**id_options, **options}
    spec = PolicySpec(
        method=method_id,
        family=family,
        space=space,
        # a read-only view, not a copy: a study checks which settings a method reads
        settings=MappingProxyType(settings),
        seed=seed,
        options=dict(options),
        source=str(getattr(problem, "id", "")),
    )
    return build_policy(spec)


def list_methods(family: str | None = None) -> list[MethodEntry]:
    """Registered methods (id, family, description, options) sorted by family then id."""
    return _METHODS.entries(family)  # type: ignore[return-value]


# ---------------------------------------------------------------------- methods in a user's file
def is_method_file(method_id: str) -> bool:
    """Whether ``method_id`` (options after ``?`` aside) names a factory in a Python file,
    ``path/to/file.py:factory``, as ``boloop bench run --method`` takes it."""
    return is_file_id(method_id)


def load_method_file(reference: str, family: str) -> MethodEntry:
    """The method of ``path/to/file.py:factory`` for ``family``: the file is imported once per
    process (the loader of ``--problem file.py:factory``), which runs its
    :func:`register_method` decorators, and the entry whose factory is ``factory`` is returned.
    A factory the file did not register is registered here, for ``family``, under its name (the
    text after the colon), with the keyword arguments of its signature after ``(spec, seed)``
    as its options (type ``Any``).

    Raises :class:`~boloop.errors.InvalidInputError`, one line each: the file does not exist or
    does not import (its syntax error or exception, with its line); it has no function of that
    name; the function is not a method factory: it cannot be called as ``factory(spec, seed)``
    (a problem's factory with one parameter), or, when it can also be called with no arguments
    (a problem's factory whose parameters all have defaults), so called it returns a
    :class:`boloop.problems.Problem`; it is registered for another family.
    """
    name = reference.partition("?")[0]
    factory = load_file_attribute(name, "method")
    attr = name.rpartition(":")[2]
    mine = [e for e in list_methods() if _same_factory(e.factory, factory)]
    for entry in mine:
        if entry.family == family:
            return entry
    if mine:
        raise InvalidInputError(
            f"method {name!r} is registered as {mine[0].id!r} for {mine[0].family} problems, "
            f"not {family}"
        )
    if isinstance(factory, type):
        raise InvalidInputError(
            f"{name!r} is a class, not a method factory: give the function that builds it, "
            "factory(spec: PolicySpec, seed, **options); see docs/methods.md"
        )
    contract = (
        "a method factory is called as factory(spec: PolicySpec, seed, **options) and returns a "
        "boloop policy (a boloop.queries.BasePolicy); a problem factory, factory(**options), "
        "returns a boloop.problems.Problem: give it to --problem; see docs/methods.md"
    )
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name!r} is not a method factory: {contract}") from None
    params = signature.parameters
    takes_nothing = _binds(signature)
    if not _binds(signature, None, 0):
        found = (
            f"{attr}{signature} takes no (spec, seed): a problem factory's signature"
            if takes_nothing
            else f"{attr}{signature} cannot be called as {attr}(spec, seed)"
        )
        raise InvalidInputError(f"{name!r} is not a method factory: {found}; {contract}")
    if takes_nothing:  # (spec, seed) with defaults, or **options only: what does it build?
        built = _problem_built_by(factory)
        if built is not None:
            raise InvalidInputError(
                f"{name!r} is a problem factory, not a method factory: called with no arguments "
                f"it returns a problem ({built}); {contract}"
            )
    named = [p for p in params.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    options = tuple(
        Option(p.name, "Any", None if p.default is p.empty else p.default) for p in named[2:]
    )
    register_method(
        attr, family, f"{factory.__doc__ or ''}".strip().split("\n")[0] or name, options
    )(factory)
    return _METHODS.get(attr, family)


def _binds(signature: inspect.Signature, *args: Any) -> bool:
    try:
        signature.bind(*args)
    except TypeError:
        return False
    return True


def _problem_built_by(factory: Callable[..., Any]) -> str | None:
    """What a factory that can be called with no arguments returns so, when it is a
    :class:`boloop.problems.Problem` (its class and id): a problem's factory given as a method's
    has only defaulted parameters, and telling the two apart by the signature alone would guess.
    None when it returns anything else or raises (a method factory whose ``spec`` and ``seed``
    default to None fails without them, and is judged as a method when it is built)."""
    import sys

    base = sys.modules.get("boloop.problems.base")  # not imported: nothing returns a Problem
    try:
        built = factory()
    except Exception:
        return None
    if base is None or not isinstance(built, base.Problem):
        return None
    return f"{type(built).__name__} {getattr(built, 'id', '')!r}"


def method_file_of(entry: MethodEntry) -> str | None:
    """``/abs/path/file.py:factory``, which registers ``entry`` when the file is imported in
    another process (:func:`load_method_file`), for a method registered outside boloop by a
    module-level function of a file; None for boloop's own methods (every process has them)."""
    import sys

    module = getattr(entry.factory, "__module__", "") or ""
    if module == "boloop" or module.startswith("boloop."):
        return None
    source = getattr(sys.modules.get(module), "__file__", None)
    qual = getattr(entry.factory, "__qualname__", "")
    if not source or not str(source).endswith(".py") or not qual.isidentifier():
        return None
    return f"{Path(source).resolve()}:{qual}"
