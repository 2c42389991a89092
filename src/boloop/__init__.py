"""boloop: Bayesian optimisation and active learning when the feedback is more than a number.

Four families, one ask/tell loop: ``expert`` (COBOL), ``levelset`` (randomized straddle),
``preference`` (MR-LPF) and ``safe`` (M-SafeOpt). See the README and ``docs/``.
"""

import logging

__version__ = "0.1.0"

logging.getLogger("boloop").addHandler(logging.NullHandler())

__all__ = ["__version__"]
