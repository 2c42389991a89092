"""Numerics only: kernels, exact GP regression, caches over candidate sets, information gain.

Nothing here knows about algorithms or queries.
"""

from boloop.gp.cache import CandidatePosterior
from boloop.gp.exact import ExactGP, GammaPrior, LogNormalPrior, robust_cholesky
from boloop.gp.hyperparameters import (
    FitReport,
    HyperparameterLearning,
    initial_design_size,
    space_filling_design,
)
from boloop.gp.kernels import (
    Kernel,
    Linear,
    Matern,
    SquaredExponential,
    StationaryKernel,
    StationaryPlusTrend,
)

__all__ = [
    "CandidatePosterior",
    "ExactGP",
    "FitReport",
    "HyperparameterLearning",
    "GammaPrior",
    "Kernel",
    "Linear",
    "LogNormalPrior",
    "Matern",
    "SquaredExponential",
    "StationaryKernel",
    "StationaryPlusTrend",
    "initial_design_size",
    "robust_cholesky",
    "space_filling_design",
]
