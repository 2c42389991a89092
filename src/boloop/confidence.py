"""Beta schedules and confidence bounds built from a model's posterior mean and standard deviation.

Units. The papers mix "beta" and "beta^(1/2)". In boloop ``beta`` is always the *squared*
multiplier and ``sqrt_beta`` the multiplier of the standard deviation::

    lower = mean - sqrt_beta * std,     upper = mean + sqrt_beta * std.

Every schedule exposes both :meth:`BetaSchedule.beta` and :meth:`BetaSchedule.sqrt_beta` for
iteration ``t >= 1`` (1-based, as in the papers).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np

from boloop.errors import InvalidInputError

__all__ = [
    "BetaSchedule",
    "ConstantBeta",
    "SrinivasBeta",
    "ChowdhuryGopalanBeta",
    "GotovosLSEBeta",
    "ChiSquaredBeta",
    "lower_bound",
    "upper_bound",
    "confidence_bounds",
    "UNDECIDED_SD",
    "undecided",
]


def _check_t(t: int) -> int:
    if int(t) != t or t < 1:
        raise InvalidInputError(f"t must be an integer >= 1, got {t!r}")
    return int(t)


def _check_delta(delta: float) -> float:
    delta = float(delta)
    if not 0.0 < delta < 1.0:
        raise InvalidInputError(f"delta must lie in (0, 1), got {delta!r}")
    return delta


class BetaSchedule(ABC):
    """A rule giving ``beta_t`` (the squared multiplier) at iteration ``t >= 1``.

    ``rng`` is used only by random schedules; ``information_gain`` (``gamma_{t-1}``) only by
    schedules that need it.
    """

    random: bool = False

    @abstractmethod
    def beta(
        self,
        t: int,
        *,
        rng: np.random.Generator | None = None,
        information_gain: float | None = None,
    ) -> float:
        """``beta_t``: the squared multiplier of the standard deviation."""

    def sqrt_beta(
        self,
        t: int,
        *,
        rng: np.random.Generator | None = None,
        information_gain: float | None = None,
    ) -> float:
        """``beta_t^{1/2}``: the multiplier of the standard deviation."""
        return math.sqrt(self.beta(t, rng=rng, information_gain=information_gain))


class ConstantBeta(BetaSchedule):
    """A constant schedule, given either as ``beta`` or as ``sqrt_beta`` (exactly one).

    Example: the straddle heuristic's ``beta^(1/2) = 3`` is ``ConstantBeta(sqrt_beta=3.0)``;
    M-SafeOpt's experiments use the multiplier 3 as well (B.2.2).
    """

    def __init__(self, beta: float | None = None, *, sqrt_beta: float | None = None) -> None:
        if (beta is None) == (sqrt_beta is None):
            raise InvalidInputError("give exactly one of beta and sqrt_beta")
        value = float(beta) if beta is not None else float(sqrt_beta) ** 2  # type: ignore[arg-type]
        if not math.isfinite(value) or value < 0:
            raise InvalidInputError(f"beta must be finite and >= 0, got {value!r}")
        if sqrt_beta is not None and float(sqrt_beta) < 0:
            raise InvalidInputError(f"sqrt_beta must be >= 0, got {sqrt_beta!r}")
        self.value = value

    def beta(self, t, *, rng=None, information_gain=None) -> float:
        _check_t(t)
        return self.value

    def __repr__(self) -> str:
        return f"ConstantBeta(beta={self.value:g})"


class SrinivasBeta(BetaSchedule):
    """Srinivas et al. (2010), Theorem 1, finite domain: ``beta_t = 2 log(|D| t^2 pi^2 / (6 delta))``."""

    def __init__(self, n_candidates: float, delta: float = 0.05) -> None:
        if not float(n_candidates) >= 1:
            raise InvalidInputError(f"n_candidates must be >= 1, got {n_candidates!r}")
        self.n_candidates = float(n_candidates)
        self.delta = _check_delta(delta)

    def beta(self, t, *, rng=None, information_gain=None) -> float:
        t = _check_t(t)
        return 2.0 * math.log(self.n_candidates * t * t * math.pi**2 / (6.0 * self.delta))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_candidates={self.n_candidates:g}, delta={self.delta:g})"


class GotovosLSEBeta(SrinivasBeta):
    """The LSE schedule of Gotovos et al. (2013) as the level-set paper runs it (Inatsu et al., Sec. 5).

    ``beta_t^{1/2} = sqrt(2 log(|X| pi^2 t^2 / (6 * 0.05)))``, i.e. Srinivas' finite-set schedule
    with ``delta = 0.05``. For continuous inputs the paper sets ``|X| = 10^15``
    (:meth:`continuous`). At ``|X| = 2500``: 4.758 at t = 1, 6.742 at t = 300.
    """

    def __init__(self, n_candidates: float, delta: float = 0.05) -> None:
        super().__init__(n_candidates, delta)

    @classmethod
    def continuous(cls, delta: float = 0.05) -> GotovosLSEBeta:
        """The paper's setting on continuous boxes: ``|X| = 10^15``."""
        return cls(1e15, delta)


class ChowdhuryGopalanBeta(BetaSchedule):
    """Chowdhury and Gopalan (2017), Theorem 2, for an RKHS function with ``||f||_k <= B``.

    ``beta_t^{1/2} = B + R sqrt(2 (gamma_{t-1} + 1 + ln(1/delta)))`` with ``gamma_{t-1}`` the
    information gain of the observations so far, passed as ``information_gain`` (for example
    :meth:`boloop.gp.ExactGP.information_gain`). M-SafeOpt's eq. (30)-(31) and COBOL's Lemma 3.1 use
    ``ln(2/delta)``: pass ``delta / 2``.
    """

    def __init__(self, B: float, R: float, delta: float = 0.05) -> None:
        if not float(B) >= 0 or not float(R) >= 0:
            raise InvalidInputError(f"B and R must be >= 0, got B={B!r}, R={R!r}")
        self.B = float(B)
        self.R = float(R)
        self.delta = _check_delta(delta)

    def sqrt_beta(self, t, *, rng=None, information_gain=None) -> float:
        _check_t(t)
        if information_gain is None:
            raise InvalidInputError("ChowdhuryGopalanBeta needs information_gain (gamma_{t-1})")
        gamma = float(information_gain)
        if not math.isfinite(gamma) or gamma < 0:
            raise InvalidInputError(f"information_gain must be finite and >= 0, got {gamma!r}")
        return self.B + self.R * math.sqrt(2.0 * (gamma + 1.0 + math.log(1.0 / self.delta)))

    def beta(self, t, *, rng=None, information_gain=None) -> float:
        return self.sqrt_beta(t, rng=rng, information_gain=information_gain) ** 2

    def __repr__(self) -> str:
        return f"ChowdhuryGopalanBeta(B={self.B:g}, R={self.R:g}, delta={self.delta:g})"


class ChiSquaredBeta(BetaSchedule):
    """``beta_t = shift + xi_t`` with ``xi_t ~ chi-squared(df)`` drawn from the policy's generator.

    The randomized straddle (Inatsu et al., Definition 3.2) uses ``df = 2`` and ``shift = 0``: one
    draw per step, shared by every candidate. Its max-value-loss variants (Algorithms 2 and 3) add
    ``shift = 2 log|X|`` (on beta, not on its square root). Each call draws anew; call it once per
    step and reuse the value.
    """

    random = True

    def __init__(self, df: float = 2.0, shift: float = 0.0) -> None:
        if not float(df) > 0:
            raise InvalidInputError(f"df must be positive, got {df!r}")
        if not math.isfinite(float(shift)):
            raise InvalidInputError(f"shift must be finite, got {shift!r}")
        self.df = float(df)
        self.shift = float(shift)

    def beta(self, t, *, rng=None, information_gain=None) -> float:
        _check_t(t)
        if rng is None:
            raise InvalidInputError("ChiSquaredBeta needs the policy's rng (numpy Generator)")
        return self.shift + float(rng.chisquare(self.df))

    def __repr__(self) -> str:
        return f"ChiSquaredBeta(df={self.df:g}, shift={self.shift:g})"


def lower_bound(mean: np.ndarray, std: np.ndarray, sqrt_beta: float) -> np.ndarray:
    """``mean - sqrt_beta * std`` (shapes broadcast)."""
    return np.asarray(mean) - float(sqrt_beta) * np.asarray(std)


def upper_bound(mean: np.ndarray, std: np.ndarray, sqrt_beta: float) -> np.ndarray:
    """``mean + sqrt_beta * std`` (shapes broadcast)."""
    return np.asarray(mean) + float(sqrt_beta) * np.asarray(std)


def confidence_bounds(
    mean: np.ndarray, variance: np.ndarray, beta: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)`` from a posterior mean and *variance* and the squared multiplier ``beta``."""
    if not float(beta) >= 0:
        raise InvalidInputError(f"beta must be >= 0, got {beta!r}")
    std = np.sqrt(np.maximum(np.asarray(variance, dtype=np.float64), 0.0))
    s = math.sqrt(float(beta))
    return np.asarray(mean) - s * std, np.asarray(mean) + s * std


#: how many posterior standard deviations from the threshold a point's mean must be for the
#: point to count as decided in what a person is shown (the study's status and model picture)
UNDECIDED_SD = 2.0


def undecided(
    mean: np.ndarray, std: np.ndarray, threshold: float, n_sd: float = UNDECIDED_SD
) -> np.ndarray:
    """Points whose side of the threshold the model is not yet sure of, bool (N,):
    ``|mu - theta| < n_sd sigma``, i.e. the interval ``mu +- n_sd sigma`` contains ``theta`` (the
    unclassified set ``U_t`` of LSE, Gotovos et al. 2013, with ``beta^(1/2) = n_sd`` and the
    current posterior instead of the running intersection). The default 2 is a fixed, readable
    level (about 95% for a Gaussian), not the method's own ``beta_t``."""
    return np.abs(np.asarray(mean) - float(threshold)) < float(n_sd) * np.asarray(std)
