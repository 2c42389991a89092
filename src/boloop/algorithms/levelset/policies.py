"""The level-set policies (Inatsu et al., Algorithms 1-3) and their baselines: the shared model,
initial design and loop (LevelSetPolicy), randomized straddle (average and max-value loss),
straddle, LSE, MILE, uncertainty sampling, random.

Paper: Inatsu, Takeno, Kutsukake, Takeuchi, "Active Learning for Level Set Estimation Using
Randomized Straddle Algorithms" (spec ``shared/specs/lse.md``).

They live in sibling modules; every name this module held is importable here as before:

* :mod:`~boloop.algorithms.levelset.base`: :class:`LevelSetPolicy` (constructor, initial design,
  the ask/tell loop), with its mixins :mod:`~boloop.algorithms.levelset.estimates` (the
  posterior, the sets of eq. 3.1), :mod:`~boloop.algorithms.levelset.selection` (the argmax of
  the acquisition), :mod:`~boloop.algorithms.levelset.hyperparameters`
  (:data:`LEVELSET_LEARNING`, refits, widening) and :mod:`~boloop.algorithms.levelset.stall`
  (:data:`FARTHEST_ADVICE`);
* :mod:`~boloop.algorithms.levelset.randomized_straddle`: :class:`RandomizedStraddle`,
  :class:`RandomizedStraddleMax`;
* :mod:`~boloop.algorithms.levelset.baselines`: :class:`Straddle`, :class:`LSE`, :class:`MILE`,
  :class:`UncertaintySampling`, :class:`RandomSampling`.
"""

from __future__ import annotations

from boloop.algorithms.levelset.base import _REFIT_RESTARTS as _REFIT_RESTARTS
from boloop.algorithms.levelset.base import LevelSetPolicy as LevelSetPolicy
from boloop.algorithms.levelset.base import _finite_float as _finite_float
from boloop.algorithms.levelset.baselines import LSE as LSE
from boloop.algorithms.levelset.baselines import MILE as MILE
from boloop.algorithms.levelset.baselines import RandomSampling as RandomSampling
from boloop.algorithms.levelset.baselines import Straddle as Straddle
from boloop.algorithms.levelset.baselines import UncertaintySampling as UncertaintySampling
from boloop.algorithms.levelset.hyperparameters import LEVELSET_LEARNING as LEVELSET_LEARNING
from boloop.algorithms.levelset.hyperparameters import _resolve_learning as _resolve_learning
from boloop.algorithms.levelset.hyperparameters import logger as logger
from boloop.algorithms.levelset.randomized_straddle import _TIE_BREAKS as _TIE_BREAKS
from boloop.algorithms.levelset.randomized_straddle import (
    RandomizedStraddle as RandomizedStraddle,
)
from boloop.algorithms.levelset.randomized_straddle import (
    RandomizedStraddleMax as RandomizedStraddleMax,
)
from boloop.algorithms.levelset.stall import FARTHEST_ADVICE as FARTHEST_ADVICE
