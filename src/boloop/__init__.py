"""boloop: Bayesian optimisation and active learning when the feedback is more than a number.

Four families, one ask/tell loop: ``expert`` (COBOL), ``levelset`` (randomized straddle),
``preference`` (MR-LPF) and ``safe`` (M-SafeOpt). See the README and ``docs/``.

``boloop.simulate``, ``boloop.make_policy``, ``boloop.Trace`` and the subpackages
(``boloop.problems``...) are imported lazily on first use, so ``import boloop`` stays cheap.
"""

import logging
from typing import Any

__version__ = "0.1.0"

logging.getLogger("boloop").addHandler(logging.NullHandler())

__all__ = ["__version__", "simulate", "make_policy", "build_policy", "PolicySpec", "Trace"]

_LAZY = {
    "simulate": ("boloop.simulate", "simulate"),
    "Trace": ("boloop.simulate", "Trace"),
    "make_policy": ("boloop.algorithms.registry", "make_policy"),
    "build_policy": ("boloop.algorithms.registry", "build_policy"),
    "PolicySpec": ("boloop.queries", "PolicySpec"),
}

#: subpackages reachable as attributes without an explicit import (``boloop.problems.get``)
_SUBMODULES = frozenset(
    {
        "algorithms",
        "bench",
        "confidence",
        "errors",
        "gp",
        "metrics",
        "problems",
        "queries",
        "spaces",
    }
)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        mod = importlib.import_module(module)
        # ``boloop.simulate`` is the submodule, made callable (it forwards to the function)
        return mod if name == "simulate" else getattr(mod, attr)
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"boloop.{name}")
    raise AttributeError(f"module 'boloop' has no attribute {name!r}")
