"""A study keeps the method defaults it was created with.

A study's log replays only if its method proposes as it did when the answers were given. When a
later boloop changes a method's default (COBOL's ``ask_again`` and ``no_harm`` did), a study
created before would propose differently from the first step the default touches, and load
with a replay error. So at creation the study stores, next to the options given, the defaults
of every other option of the method's table (:func:`pinned_defaults`), and every later build of
its policy passes them (:func:`policy_options`): a default changed in a later version does not
change an existing study; a study created by that version gets the new one.

Only what can be passed back exactly is kept: plain JSON values (numbers, strings, booleans and
lists of them, never ``None``, whose meaning "derive it" stays the code's), for options that the
user does not give and that the method does not look up in the problem's settings: where such
an option comes from (a setting, or the method's own default) is the method's business, and a
factory may treat an option given differently from its default (the safe family drops a paper
problem's kernels when ``fit_hyperparameters`` is given), so a pin there could change what the
method does. Some factories read a setting under another name (MR-LPF's ``beta`` from
``beta_batch``); a pin must never override that, so where the method read a setting that is no
option's name, the policy built with the pins is compared with the one built without them
(their ``describe()`` and first query), and a pin that changes either is dropped. What a method does with an option given explicitly must equal what it does
with its default: the test ``tests/test_study_pinned_defaults.py`` runs every registered method
both ways.

Pins the current method no longer declares (an option removed since) are left out when the
policy is built, with a log line; the replay check then says whether the study still replays.

The reverse, an option added later whose default changes what the method did (the safe
family's ``trend_g``): a study created since always pins it (an option no setting supplies) or
was given it, so a study whose options and pins both lack it was created before it existed and
is built with the value that keeps its method as it was (:data:`ADDED_LATER`). An option that
came as a switch for a behaviour introduced together with another pinned option (LSE's
``restart_intersection``, with the level-set widening) is left at its default for a study that
pins or was given that companion (:data:`ADDED_WITH`): such a study was created with the behaviour.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Collection, Mapping
from typing import Any

from boloop.algorithms.registry import get_method, make_policy
from boloop.errors import BoloopError

__all__ = ["ADDED_LATER", "ADDED_WITH", "pinned_defaults", "policy_options"]

logger = logging.getLogger("boloop")

#: (family, option) -> the value that reproduces what the family's methods did before the
#: option existed (module docstring); only options that no problem setting supplies belong here
ADDED_LATER: dict[tuple[str, str], Any] = {
    ("safe", "trend_g"): False,  # g's learned model was the Matern kernel alone
    ("safe", "offset_g"): False,  # g's trend model had no intercept
    ("safe", "skip_measured_seeds"): False,  # every safe seed was asked, measured or not
    # L_f and L_g_prime that neither the user nor the problem gave were 1.0 (not unknown)
    ("safe", "missing_constants"): 1.0,
    # a learned level-set model was never widened, and LSE intersected its intervals across
    # refits (an option the other level-set methods do not declare, so not passed to them)
    ("levelset", "widen_when_overconfident"): False,
    ("levelset", "restart_intersection"): False,
}

#: (family, option of :data:`ADDED_LATER`) -> the option whose pin came with the behaviour the
#: first switches (module docstring): a study holding it was created with that behaviour on
ADDED_WITH: dict[tuple[str, str], str] = {
    # LSE's restart came with the widening (2410890), whose default is pinned since 4ba2183,
    # before either reached main
    ("levelset", "restart_intersection"): "widen_when_overconfident",
}


def _plain(value: Any) -> bool:
    """A value JSON stores and gives back exactly, and that means itself (not "derive it")."""
    if isinstance(value, bool | str):
        return True
    if isinstance(value, int | float):
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return len(value) > 0 and all(_plain(v) and not isinstance(v, list | tuple) for v in value)
    return False


def _fingerprint(method: str, problem: Any, seed: int, options: Mapping[str, Any]) -> str:
    """``describe()`` and the first query of the policy built with ``options`` (a throwaway)."""
    policy = make_policy(method, problem, seed, **options)
    described = json.dumps(policy.describe(), sort_keys=True, default=repr)
    first = json.dumps(policy.ask().to_dict(), sort_keys=True, default=repr)
    return described + "\n" + first


def pinned_defaults(
    method: str,
    problem: Any,
    seed: int,
    options: Mapping[str, Any],
    settings_read: Collection[str] | None = None,
) -> dict[str, Any]:
    """The defaults of ``method``'s options that a study created now keeps (module docstring).

    ``problem`` is the study's problem (its family and settings), ``options`` the options given,
    ``settings_read`` the settings keys the method looked up when it was built, present or not
    (None: unknown; then the problem's settings stand for them and the pins are checked by
    building the policy with them).
    """
    entry = get_method(method, problem.family)
    settings = problem.settings
    looked_up = set(settings) if settings_read is None else set(settings_read)
    pins = {
        o.name: list(o.default) if isinstance(o.default, tuple) else o.default
        for o in entry.options
        if o.name not in options and o.name not in looked_up and _plain(o.default)
    }
    if not pins:
        return {}
    pins = json.loads(json.dumps(pins))
    names = {o.name for o in entry.options}
    if settings_read is not None and all(
        k in names for k in settings_read if k in settings
    ):  # every setting the method used is an option's own: the pins leave it alone
        return pins
    try:
        reference = _fingerprint(method, problem, seed, options)
        if _fingerprint(method, problem, seed, {**options, **pins}) == reference:
            return pins
        kept = {
            k: v
            for k, v in pins.items()
            if _fingerprint(method, problem, seed, {**options, k: v}) == reference
        }
    except (BoloopError, TypeError, ValueError, KeyError):  # a default not given back as is
        return {}
    dropped = sorted(set(pins) - set(kept))
    logger.debug("study of %s: defaults not pinned (they change the policy): %s", method, dropped)
    return kept


def policy_options(
    method: str, family: str, options: Mapping[str, Any], pinned: Mapping[str, Any]
) -> dict[str, Any]:
    """The options a study's policy is built with: the pinned defaults this boloop's method still
    declares, overridden by the options given; an option added later (:data:`ADDED_LATER`) that
    neither names gets the value of before it existed, unless the study holds the option it
    came with (:data:`ADDED_WITH`)."""
    given = {**pinned, **options}
    older = {
        name: value
        for (fam, name), value in ADDED_LATER.items()
        if fam == family and name not in given and ADDED_WITH.get((fam, name)) not in given
    }
    if not pinned and not older:
        return dict(options)
    entry = get_method(method, family)
    declared = {o.name for o in entry.options}
    older = {k: v for k, v in older.items() if k in declared}
    if older:
        logger.debug(
            "study of %s created before the options %s: built with %s", method, sorted(older), older
        )
        pinned = {**pinned, **older}
    gone = sorted(k for k in pinned if k not in declared)
    if gone:
        logger.info(
            "method %s no longer has the options %s pinned when the study was created; "
            "built without them",
            method,
            gone,
        )
    return {**{k: v for k, v in pinned.items() if k in declared}, **options}
