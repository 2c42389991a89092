"""Level-set acquisition functions (Inatsu et al.): the classification of eq. (3.1), the
(randomized) straddle, the expected pointwise loss, the AF expected over beta ~ chi2(2), MILE."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

# ---------------------------------------------------------------------------------------------
# Closed forms (shapes broadcast; mean, std (N,), threshold scalar)
# ---------------------------------------------------------------------------------------------

def _norm_pdf(x: np.ndarray) -> np.ndarray:
    """Standard normal density, the expression of ``scipy.stats.norm.pdf`` (bit for bit), without
    importing ``scipy.stats`` (a third of a command-line call's start-up)."""
    return np.exp(-(x**2) / 2.0) / math.sqrt(2 * math.pi)

def classify(mean: np.ndarray, threshold: float) -> np.ndarray:
    """Membership of the estimated upper set ``H_t`` (eq. 3.1): ``mean >= threshold``, bool (N,).

    A point whose mean equals the threshold exactly is in ``H_t``; ``L_t`` is the complement.
    """
    return np.asarray(mean, dtype=np.float64) >= float(threshold)


def straddle(mean: np.ndarray, std: np.ndarray, threshold: float, sqrt_beta: float) -> np.ndarray:
    """The straddle heuristic ``STR = beta^(1/2) sigma - |mu - theta|`` (Sec. 2.4), (N,).

    Equal to ``min{ucb - theta, theta - lcb}`` with ``ucb/lcb = mu +- beta^(1/2) sigma``.
    """
    return float(sqrt_beta) * np.asarray(std) - np.abs(np.asarray(mean) - float(threshold))


def randomized_straddle_af(
    mean: np.ndarray, std: np.ndarray, threshold: float, sqrt_beta: float
) -> np.ndarray:
    """The randomized straddle AF ``a = max{beta^(1/2) sigma - |mu - theta|, 0}`` (eq. 3.2), (N,)."""
    return np.maximum(straddle(mean, std, threshold, sqrt_beta), 0.0)


def expected_pointwise_loss(
    mean: np.ndarray, std: np.ndarray, upper: np.ndarray, threshold: float
) -> np.ndarray:
    """Posterior-expected pointwise loss ``E_t[l_i(x)]`` of an estimate ``upper`` (Lemma B.2), (N,).

    With ``alpha = (mu - theta) / sigma``: ``sigma [phi(alpha) - alpha (1 - Phi(alpha))]`` on
    ``H_i`` and ``sigma [phi(-alpha) + alpha (1 - Phi(-alpha))]`` on ``L_i``; where ``sigma = 0`` the
    limits ``max(theta - mu, 0)`` on ``H_i`` and ``max(mu - theta, 0)`` on ``L_i``.
    """
    from scipy.special import ndtr

    mu = np.asarray(mean, dtype=np.float64)
    sd = np.asarray(std, dtype=np.float64)
    up = np.asarray(upper, dtype=bool)
    diff = mu - float(threshold)
    out = np.where(up, np.maximum(-diff, 0.0), np.maximum(diff, 0.0))
    pos = sd > 0
    if np.any(pos):
        s = sd[pos]
        a = diff[pos] / s
        on_h = s * (_norm_pdf(a) - a * ndtr(-a))
        on_l = s * (_norm_pdf(a) + a * ndtr(a))
        out = out.copy()
        out[pos] = np.where(up[pos], on_h, on_l)
    return out


def expected_af_over_beta(mean: np.ndarray, std: np.ndarray, threshold: float) -> np.ndarray:
    """``E_beta[a_{t-1}(x)]`` for ``beta ~ chi2(2)`` at a fixed posterior: ``sigma sqrt(2 pi) (1 - Phi(u))``.

    ``u = |mu - theta| / sigma`` (spec Sec. 2.7, derived there; 0 where ``sigma = 0``). It dominates
    the expected loss of the current estimate, the pointwise form of the key step of Theorem 4.1.
    """
    from scipy.special import ndtr

    sd = np.asarray(std, dtype=np.float64)
    diff = np.abs(np.asarray(mean, dtype=np.float64) - float(threshold))
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(sd > 0, diff / np.where(sd > 0, sd, 1.0), np.inf)
    return np.where(sd > 0, sd * math.sqrt(2 * math.pi) * ndtr(-u), 0.0)


def mile_acquisition(
    mean: np.ndarray,
    variance: np.ndarray,
    threshold: float,
    sqrt_beta: float,
    noise_variance: float,
    covariance_rows: Callable[[np.ndarray], np.ndarray],
    *,
    block: int = 256,
    cutoff: float = 8.0,
) -> tuple[np.ndarray, int]:
    """MILE (Zanette et al. 2019): expected growth of ``S = {mu - beta^(1/2) sigma > theta}``, (N,).

    For a candidate ``x*`` with ``s*^2 = sigma^2(x*) + noise`` and posterior covariance ``k(x, x*)``,
    observing ``x*`` moves ``mu(x)`` by a normal with sd ``c = |k(x, x*)| / s*`` and leaves variance
    ``sigma^2(x) - c^2``, so ``P(x in S after) = Phi((mu - theta - beta^(1/2) sqrt(sigma^2 - c^2)) / c)``
    and ``a(x*) = sum_x [P(x in S after) - 1[x in S now]]`` (terms with ``c = 0`` are 0).

    Because ``c <= sigma(x)``, the term of ``x`` is below ``Phi(-cutoff)`` (6e-16 for 8) in absolute
    value whenever ``mu - theta < -cutoff sigma`` or ``mu - theta > (beta^(1/2) + cutoff) sigma``;
    those ``x`` are skipped, so only ``N_active`` rows of the posterior covariance are formed, in
    blocks of ``block`` rows (never an N x N matrix). ``covariance_rows(idx)`` must return the
    posterior covariance between candidates ``idx`` (b,) and all candidates, shape (b, N).

    Returns ``(a, n_active)``.
    """
    from scipy.special import ndtr

    mu = np.asarray(mean, dtype=np.float64)
    var = np.maximum(np.asarray(variance, dtype=np.float64), 0.0)
    sd = np.sqrt(var)
    m = mu - float(threshold)
    b = float(sqrt_beta)
    n = mu.shape[0]
    in_s = m - b * sd > 0
    active = np.flatnonzero((sd > 0) & (m >= -cutoff * sd) & (m <= (b + cutoff) * sd))
    s_star = np.sqrt(var + float(noise_variance))
    inv_s_star = np.where(s_star > 0, 1.0 / np.where(s_star > 0, s_star, 1.0), 0.0)
    a = np.zeros(n)
    for start in range(0, active.size, block):
        idx = active[start : start + block]
        C = covariance_rows(idx)  # (b, N) posterior covariance k(x, x*)
        np.abs(C, out=C)
        C *= inv_s_star[None, :]  # c(x, x*) = |k(x, x*)| / s*
        z = C * C
        np.subtract(var[idx, None], z, out=z)
        np.maximum(z, 0.0, out=z)
        np.sqrt(z, out=z)  # sigma(x | x*)
        z *= -b
        z += m[idx, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            z /= C  # z = (mu - theta - beta^(1/2) sigma(x | x*)) / c, +-inf where c = 0
        # Phi(z) is a step (z > 0) to 1e-16 when |z| >= cutoff: evaluate Phi only near 0
        a += np.count_nonzero(z > 0, axis=0)
        rows, cols = np.nonzero(np.abs(z) < cutoff)
        if rows.size:
            zz = z[rows, cols]
            a += np.bincount(cols, weights=ndtr(zz) - (zz > 0), minlength=n)
        a -= float(np.count_nonzero(in_s[idx]))
    return a, int(active.size)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _log_expected_af(mean: np.ndarray, std: np.ndarray, threshold: float) -> np.ndarray:
    """``log E_beta[a(x)] = log sigma + log sqrt(2 pi) + log Phi(-|mu - theta| / sigma)`` (N,),
    ``-inf`` where ``sigma = 0``; exact in the far tail where :func:`expected_af_over_beta`
    underflows to 0."""
    from scipy.special import log_ndtr

    sd = np.asarray(std, dtype=np.float64)
    diff = np.abs(np.asarray(mean, dtype=np.float64) - float(threshold))
    pos = sd > 0
    safe = np.where(pos, sd, 1.0)
    with np.errstate(divide="ignore"):
        out = np.log(safe) + _LOG_SQRT_2PI + log_ndtr(-diff / safe)
    return np.where(pos, out, -np.inf)


def _zero_af_rank(mean: np.ndarray, std: np.ndarray, threshold: float) -> np.ndarray:
    """A score in ``(-inf, 0)`` increasing with ``E_beta[a(x)]``: ``-log(1 + 1 / E_beta[a(x)])``.

    Ranks the points where the clipped AF is 0 below every point where it is positive, and among
    them by the expected AF (the ``"expected"`` tie-break); computed from the log so that it keeps
    its order far from the threshold."""
    log_e = _log_expected_af(mean, std, threshold)
    return np.maximum(-np.logaddexp(0.0, -log_e), -1e300)


def _zero_af_rank_and_gradient(
    mean: float, std: float, dmean: np.ndarray, dstd: np.ndarray, threshold: float
) -> tuple[float, np.ndarray]:
    """:func:`_zero_af_rank` at one point and its gradient from those of ``mean`` and ``std``.

    With ``u = |mu - theta| / sigma``: ``d log E = d sigma / sigma - (phi(u) / Phi(-u)) du`` and
    ``du = (sign(mu - theta) d mu - u d sigma) / sigma``; ``d rank = d log E / (1 + E)``."""
    from scipy.special import log_ndtr

    if not std > 0:
        return -1e300, np.zeros_like(dmean)
    diff = mean - threshold
    u = abs(diff) / std
    log_e = math.log(std) + _LOG_SQRT_2PI + float(log_ndtr(-u))
    rank = -float(np.logaddexp(0.0, -log_e))
    mills = math.exp(-0.5 * u * u - _LOG_SQRT_2PI - float(log_ndtr(-u)))  # phi(u) / Phi(-u)
    sign = 1.0 if diff >= 0 else -1.0
    dlog_e = dstd / std - mills * (sign * dmean - u * dstd) / std
    weight = 1.0 / (1.0 + math.exp(min(log_e, 700.0)))
    return max(rank, -1e300), weight * dlog_e
