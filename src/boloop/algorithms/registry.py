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
from types import MappingProxyType
from typing import Any

import numpy as np

from boloop._registry import Entry, Registry
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


#: the type words an :class:`Option` may use (``"float | None"``); any other word accepts anything
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


@dataclass(frozen=True)
class Option:
    """One row of the method table.

    ``type`` is written as in a type hint, ``"float"``, ``"int | None"``, ``"Kernel | str"``; the
    words of :data:`_TYPE_CHECKS` are checked (an ``int`` is a valid ``float``, a ``bool`` is not a
    number), any other word (``"Any"``) accepts every value. ``default`` is the value used when
    neither the option nor the problem's settings give one.
    """

    name: str
    type: str
    default: Any = None
    doc: str = ""

    def accepts(self, value: Any) -> bool:
        words = [w.strip() for w in self.type.split("|")]
        if any(w not in _TYPE_CHECKS for w in words):
            return True
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
                close = difflib.get_close_matches(str(name), [o.name for o in self.options], 1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise OptionError(
                    f"unknown option {name!r} for method {self.id!r} ({self.family}){hint}; "
                    f"valid options: {valid}"
                )
            if not opt.accepts(value):
                raise OptionError(
                    f"option {name!r} of method {self.id!r} ({self.family}) must be {opt.type}, "
                    f"got {value!r}; valid options: {valid}"
                )


class _MethodRegistry(Registry):
    """Entries keyed by ``(family, id)``; the modules of ``boloop.algorithms`` are imported once."""

    def __init__(self) -> None:
        super().__init__("method", _PACKAGE)

    def register(  # type: ignore[override]
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

        def deco(factory: Callable[..., BasePolicy]) -> Callable[..., BasePolicy]:
            key = (family, method_id)
            old = self._entries.get(key)
            if old is not None and _qualname(old.factory) != _qualname(factory):
                raise InvalidInputError(
                    f"method {method_id!r} is already registered for family {family!r} by "
                    f"{_qualname(old.factory)}"
                )
            self._entries[key] = MethodEntry(
                method_id, family, description, factory, tuple(options)
            )
            return factory

        return deco

    def get(self, method_id: str, family: str | None = None) -> MethodEntry:  # type: ignore[override]
        self.discover()
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


_METHODS = _MethodRegistry()


def register_method(
    method_id: str, family: str, description: str, options: Sequence[Option] = ()
) -> Callable[[Callable[..., BasePolicy]], Callable[..., BasePolicy]]:
    """Decorator: register ``factory(problem, seed, **options) -> Policy`` as ``method_id`` of
    ``family`` with its option table ``options`` (the only options ``make_policy`` passes on).
    The same id may exist in several families (``random``); registering an id twice in one family
    with a different factory raises :class:`boloop.errors.InvalidInputError`."""
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
    return entry.factory(spec, spec.seed, **spec.options)


def make_policy(method_id: str, problem: Any, seed: Any = 0, **options: Any) -> BasePolicy:
    """Build method ``method_id`` with the ``family``, ``space`` and ``settings`` of ``problem``
    (a :class:`boloop.problems.Problem`, or anything with those three attributes) and ``seed``;
    ``options`` override the settings. Equivalent to :func:`build_policy` on the
    :class:`PolicySpec` made from them; raises the same errors."""
    try:
        family, space, settings = problem.family, problem.space, problem.settings
    except AttributeError as exc:
        raise InvalidInputError(
            f"make_policy needs a problem with family, space and settings, got {problem!r}"
        ) from exc
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
