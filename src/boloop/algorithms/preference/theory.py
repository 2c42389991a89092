"""The BOHF paper's formulas for MR-LPF: its round schedule and its confidence widths.

Kayal et al., "Bayesian Optimization from Human Feedback: Near-Optimal Regret Bounds" (ICML;
spec ``shared/specs/bohf.md``): the round lengths of Algorithm 1, the round widths of eq. 14 and
the width of Theorem 4.7 (eq. 17/45), with the constants of the analysis.
"""

from __future__ import annotations

import math

from boloop._validation import integer_at_least as _count
from boloop.errors import InvalidInputError

#: the sigmoid's Lipschitz constant over pairs that include x = x' (L = mu'(0) = 1/4)
SIGMOID_L = 0.25
#: kappa_r for r >= 2 in the MR-LPF analysis (eq. 28)
KAPPA_LATER_ROUNDS = 6.0


def _ceil_sqrt(n: int) -> int:
    r = math.isqrt(n)
    return r if r * r == n else r + 1


def mrlpf_round_schedule(T: int) -> list[int]:
    """Round lengths of MR-LPF (Algorithm 1, Section 3), summing to exactly ``T``.

    ``N_1 = ceil(sqrt(T))``, ``N_r = ceil(sqrt(N_{r-1} T))``, the last round truncated to what is
    left of ``T``. Exact integer arithmetic: ``T = 300`` gives ``[18, 74, 149, 59]``.
    """
    T = _count(T, "horizon T", 1)
    rounds: list[int] = []
    used = 0
    prev = None
    while used < T:
        n = _ceil_sqrt(T) if prev is None else _ceil_sqrt(prev * T)
        n = min(n, T - used)
        rounds.append(n)
        used += n
        prev = n
    return rounds


def mrlpf_theory_beta(
    B: float, kappa: float, lam: float, n_arms: int, n_rounds: int, delta: float = 0.1
) -> list[float]:
    """Round widths ``beta_(r)(delta) = L (B + sqrt(kappa_r / lambda log(2 R |X| / delta)))`` (eq. 14).

    ``L = 1/4`` (the sigmoid's slope at 0, attained because ``x = x'`` is allowed), ``kappa_1 =
    kappa`` (eq. 2) and ``kappa_r = 6`` for ``r >= 2`` (eq. 28). Returns one value per round.
    """
    for name, v in (("B", B), ("kappa", kappa), ("lam", lam)):
        if not math.isfinite(float(v)) or float(v) <= 0:
            raise InvalidInputError(f"{name} must be positive and finite, got {v!r}")
    if not 0 < delta < 1:
        raise InvalidInputError(f"delta must be in (0, 1), got {delta!r}")
    log_term = math.log(2.0 * n_rounds * n_arms / delta)
    out = []
    for r in range(n_rounds):
        kr = float(kappa) if r == 0 else KAPPA_LATER_ROUNDS
        out.append(SIGMOID_L * (float(B) + math.sqrt(kr / float(lam) * log_term)))
    return out


def confidence_beta(B: float, kappa: float, lam: float, delta: float = 0.1) -> float:
    """Width of Theorem 4.7 (eq. 17/45): ``beta(delta) = L (B + 1/2 sqrt(2 kappa / lambda log(2/delta)))``.

    Valid for a fixed pair when the design is independent of the labels, with ``sigma`` computed
    with regulariser ``rho = lambda kappa``.
    """
    if not 0 < delta < 1:
        raise InvalidInputError(f"delta must be in (0, 1), got {delta!r}")
    return SIGMOID_L * (
        float(B) + 0.5 * math.sqrt(2.0 * float(kappa) / float(lam) * math.log(2.0 / delta))
    )
