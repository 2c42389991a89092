"""What each family declares about itself, so that studies, pictures and the web name no family.

The method table (:mod:`boloop.algorithms.registry`) says what each *method* takes; this table
says what a *family* needs from a user's experiment and how its results are shown: which
top-level keys of a space file it reads, whether it needs a finite grid (and how fine by
default), which settings it cannot run without, whether its answers carry a safety limit, and
which pictures a study of it draws. :mod:`boloop.study` and :mod:`boloop.web` read these
declarations through :func:`family_traits`; a family that declares nothing (a throw-away family
of a test) gets :data:`PLAIN`: a box, no extra keys, the generic pictures.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["FamilyTraits", "PLAIN", "FAMILY_TRAITS", "family_traits", "space_key_owners"]


@dataclass(frozen=True)
class FamilyTraits:
    """One family's declarations (all default to "nothing special").

    - ``space_keys``: top-level space-file keys only this family reads, each with its meaning
      (``threshold`` for the level-set family); other families refuse them.
    - ``key_hints``: a hint added when a space gives this family another family's key
      (``threshold`` to the safe family: its limit is ``h``).
    - ``default_grid``: points per axis when the family needs a finite candidate set and the
      space file gives no ``grid`` (``None``: a :class:`boloop.spaces.Box` unless a parameter
      has a grid).
    - ``max_default_grid_points``: the default grid is made coarser (fewer points per axis for
      the parameters without a ``grid``) so that it has at most this many points (``None``: no
      limit); the preference methods take at most
      :data:`boloop.algorithms.preference.MAX_OPTIONS` options.
    - ``monotone_space``: the space is a :class:`boloop.spaces.SafeSpace` whose first axis is the
      space file's ``monotone`` parameter; ``h`` is the safety threshold, read by the policies as
      ``settings["threshold"]``; ``safe_seeds`` lie at the lowest monotone level (M-SafeOpt,
      Sec. 2).
    - ``required_space_keys``, ``required_space_message``: space-file keys the family cannot run
      without, and the error naming them.
    - ``required_settings``: settings the family cannot run without (after the space's keys are
      merged into the settings; ``threshold`` for the level-set family).
    - ``safety_limit``: answers carry an output ``g`` that must stay at or below ``h``; a web page
      shows the limit and asks before storing an answer above it; the progress picture draws
      ``f`` with the best safe ``f`` so far and ``g`` against the limit.
    - ``level_threshold``: ``settings["threshold"]`` is the level of the set to map, drawn on the
      model and progress pictures; the study is a map, and the page's stall notice says so (a
      map that stopped changing is as often finished as stuck).
    - ``duel_model``: the data are duels; the model picture ranks the options, the progress
      picture counts wins, and studies count the answers as duels.
    - ``expert_belief``: ``predict(X)`` also returns the expert's latent ``g``, drawn on the model
      picture.
    - ``growth_picture``: a study draws the certified safe set's growth, one more picture.
    - ``measured_goal``: ``"minimise"`` or ``"maximise"`` when the one measured value has a
      better direction a person must know at the measurement form (COBOL minimises ``f``);
      ``None`` when it has none (a level set) or when the answer has several outputs with
      different roles (the safe family's ``f`` and ``g``; its page shows the limit instead).
    """

    space_keys: Mapping[str, str] = field(default_factory=dict)
    key_hints: Mapping[str, str] = field(default_factory=dict)
    default_grid: int | None = None
    max_default_grid_points: int | None = None
    monotone_space: bool = False
    required_space_keys: tuple[str, ...] = ()
    required_space_message: str = ""
    required_settings: tuple[str, ...] = ()
    safety_limit: bool = False
    level_threshold: bool = False
    duel_model: bool = False
    expert_belief: bool = False
    growth_picture: bool = False
    measured_goal: str | None = None


#: the traits of a family that declares nothing
PLAIN = FamilyTraits()

#: every family's declarations, in the order their space keys are checked
FAMILY_TRAITS: Mapping[str, FamilyTraits] = MappingProxyType(
    {
        "levelset": FamilyTraits(
            space_keys={"threshold": "the level h of the set {x : f(x) >= h} to map"},
            required_settings=("threshold",),
            level_threshold=True,
        ),
        "safe": FamilyTraits(
            space_keys={
                "monotone": "the parameter in which the safety value grows",
                "h": "the safety limit g <= h",
                "safe_seeds": "points known to be safe",
            },
            key_hints={"threshold": "the safe family's limit is 'h'"},
            default_grid=30,
            monotone_space=True,
            required_space_keys=("monotone", "h"),
            required_space_message=(
                "the safe family needs 'monotone' (the monotone parameter) and 'h' (the safety "
                "threshold) in the space"
            ),
            safety_limit=True,
            growth_picture=True,
        ),
        # 1500: MAX_OPTIONS of the preference methods (equal, tested; not imported here,
        # where the family table is read without importing the algorithms)
        "preference": FamilyTraits(default_grid=20, max_default_grid_points=1500, duel_model=True),
        "expert": FamilyTraits(expert_belief=True, measured_goal="minimise"),
    }
)


def family_traits(family: str | None) -> FamilyTraits:
    """The declarations of ``family`` (:data:`PLAIN` for a family that declares none)."""
    return FAMILY_TRAITS.get(str(family), PLAIN) if family is not None else PLAIN


def space_key_owners() -> dict[str, tuple[str, str]]:
    """``{space key: (owning family, meaning)}`` over every family's ``space_keys``."""
    return {
        key: (name, meaning)
        for name, traits in FAMILY_TRAITS.items()
        for key, meaning in traits.space_keys.items()
    }
