"""Numerics only: kernels, exact GP regression, caches over candidate sets, information gain.

Nothing here knows about algorithms or queries.
"""

from boloop.gp.cache import CandidatePosterior
from boloop.gp.exact import ExactGP, GammaPrior, LogNormalPrior, robust_cholesky
from boloop.gp.kernels import Kernel, Linear, Matern, SquaredExponential, StationaryKernel

__all__ = [
    "CandidatePosterior",
    "ExactGP",
    "GammaPrior",
    "Kernel",
    "Linear",
    "LogNormalPrior",
    "Matern",
    "SquaredExponential",
    "StationaryKernel",
    "robust_cholesky",
]
