"""Benchmark problems of the preference family (Kayal et al., Section 5; Pasztor et al. 2024).

Every problem is a finite arm set (:class:`~boloop.spaces.CandidateSet`) with a latent utility
``u`` (m,): a duel ``(a, b)`` is answered by the Bradley-Terry-Luce model, ``a`` preferred with
probability ``mu(u_a - u_b)`` (sigmoid, no temperature: the scale lives in ``u``). Metrics
(:mod:`boloop.metrics.preference`): ``regret`` (r_t of eq. 1), ``cumulative_regret`` (R(T)) and
``simple_regret`` of ``policy.recommend()``.

Problems and where their settings come from (paper = Kayal et al.; [code-BOHF] = the authors'
script, as recorded in the spec ``shared/specs/bohf.md``):

* ``preference/rkhs-se``, ``preference/rkhs-matern52``, ``preference/rkhs-matern32`` (Sec. 5,
  Fig. 1a-c): kernel ridge regression (regulariser 0.05, length-scale 0.1) through 10 values at
  ``linspace(0, 1, 10)``; its mean on 100 equispaced arms of [0, 1] is ``f`` and ``u = scale f``.
  The paper says "random values"; by default we use the fixed values of [code-BOHF]
  ``[-0.5, 0, 0.5, 1, 0.7, 0.2, 0.2, 0.5, 0.95, 0.7]`` and its ``scale = 5`` (both non-paper,
  documented); ``values_seed=k`` draws the 10 values uniformly from [-1, 1] instead.
  Settings: same kernel family for the learner, l = 0.1, lambda = 0.05, beta = 1, T = 300, and
  ``B = scale ||f||_H`` and ``kappa = max 1/mu'(h)`` for the theory presets.
* ``preference/ackley`` (Sec. 5, Fig. 1d-f): the standard 1-D Ackley function on 100 arms of
  [-5, 5] (the paper prints a product of the two exponentials, a typo), used *as printed*, i.e.
  un-negated, as the utility to maximise (``negate=False``, the literal reading of the paper and
  [code-BOHF]; the maximisers are x = +-4.6, two near-tied arms). ``negate=true`` gives the
  Pasztor et al. convention (maximise -Ackley, optimum at 0). The preference ``h = u_a - u_b`` is
  scaled to [-3, 3]: ``u = 3 g / (max g - min g)``. The learner's kernel is an option
  (``kernel=se|matern52|matern32``, panels d-f), l = 0.1 on the raw coordinate, lambda = 0.05,
  beta = 1, T = 2000.
* ``preference/yelp`` (Sec. 5, Fig. 2): restaurants as arms (embeddings, arms x features) and one
  user's ratings as utility, min-max scaled per user to [-3, 3]. Load your own files with
  ``embeddings=<path>`` and ``ratings=<path>`` (formats in :func:`load_yelp_arrays`); missing
  ratings are filled by :func:`complete_ratings` (regularised matrix factorisation). Without
  files a clearly labelled SYNTHETIC stand-in of the paper's shape (275 arms, 32 features, 20
  users, 2563 ratings) is generated deterministically (:func:`synthetic_yelp_standin`); the real
  data need the Yelp Open Dataset and OpenAI embeddings, which cannot be fetched here. SE kernel,
  l = 0.1, lambda = 0.05, T = 2000, beta = 0.1 (MR-LPF) and 2 (MaxMinLCB).
* ``preference/branin``, ``preference/holder`` (the 2-D test functions of Pasztor et al.'s suite):
  10 x 10 grid over the usual domain, utility ``-f`` scaled so that ``max |h| = 3``; SE kernel
  with length-scale 0.2 x the domain width per axis, lambda = 0.05, beta = 1, T = 300 (our
  choices: the BOHF paper does not run these).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from boloop.errors import InvalidInputError
from boloop.gp.kernels import Kernel, Matern, SquaredExponential
from boloop.metrics.preference import duel_regret, preference_simple_regret
from boloop.problems import functions
from boloop.problems.base import MetricTracker, Problem
from boloop.problems.registry import register
from boloop.queries import Compare, Query
from boloop.spaces import CandidateSet

__all__ = [
    "PreferenceProblem",
    "rkhs_function",
    "ackley_problem",
    "yelp_problem",
    "load_yelp_arrays",
    "complete_ratings",
    "scale_ratings",
    "synthetic_yelp_standin",
    "random_table_problem",
    "RKHS_VALUES_CODE",
]

#: the 10 values of the RKHS test functions in the authors' script ([code-BOHF], spec Sec. 5.2)
RKHS_VALUES_CODE = (-0.5, 0.0, 0.5, 1.0, 0.7, 0.2, 0.2, 0.5, 0.95, 0.7)
_METRICS = ["regret", "cumulative_regret", "simple_regret"]


def make_kernel(name: str, lengthscale: Any = 0.1) -> Kernel:
    """``"se"``, ``"matern52"``, ``"matern32"`` or ``"matern12"`` with unit variance."""
    name = str(name).lower()
    if name in ("se", "rbf", "squared-exponential"):
        return SquaredExponential(lengthscale, 1.0)
    nus = {"matern52": 2.5, "matern32": 1.5, "matern12": 0.5}
    if name in nus:
        return Matern(nu=nus[name], lengthscale=lengthscale, variance=1.0)
    raise InvalidInputError(f"kernel must be one of se, matern52, matern32, matern12; got {name!r}")


@dataclass
class PreferenceProblem(Problem):
    """Duels between the arms of ``space`` answered by the BTL model with utility ``utility`` (m,)."""

    utility: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        from scipy.special import expit

        u = np.asarray(self.utility, dtype=np.float64).reshape(-1)
        if not isinstance(self.space, CandidateSet) or u.shape[0] != self.space.n:
            raise InvalidInputError("utility must have one value per arm of a CandidateSet space")
        if not np.all(np.isfinite(u)):
            raise InvalidInputError("utility contains NaN or infinite values")
        self.utility = u
        self.f_max = float(np.max(u))
        h_max = float(np.max(u) - np.min(u))
        #: kappa of eq. 2 over all pairs of arms
        self.kappa = float(1.0 / (expit(h_max) * (1.0 - expit(h_max))))

    @property
    def arms(self) -> CandidateSet:
        """The arm set (the problem's space)."""
        assert isinstance(self.space, CandidateSet)
        return self.space

    @property
    def optimal_indices(self) -> np.ndarray:
        return np.flatnonzero(self.utility == self.f_max)

    def arm_index(self, x: np.ndarray, index: int | None) -> int:
        """The arm of point ``x`` (its ``index`` when the query gives one)."""
        if index is not None:
            if not 0 <= int(index) < self.arms.n:
                raise InvalidInputError(f"arm index {index} outside [0, {self.arms.n})")
            return int(index)
        found = int(self.arms.index_of(np.asarray(x).reshape(1, -1))[0])
        if found < 0:
            raise InvalidInputError(f"{x} is not an arm of {self.id}")
        return found

    def value(self, X: np.ndarray) -> np.ndarray:
        idx = self.arms.index_of(X)
        if np.any(idx < 0):
            raise InvalidInputError(f"X has points that are not arms of {self.id}")
        return self.utility[idx]

    def preference_probability(self, i: Any, j: Any) -> np.ndarray:
        """``P(x_i preferred to x_j) = mu(u_i - u_j)``."""
        from scipy.special import expit

        return expit(self.utility[np.asarray(i)] - self.utility[np.asarray(j)])

    def compare(self, query: Compare, rng: np.random.Generator) -> int:
        """0 if ``a`` is preferred (probability ``mu(u_a - u_b)``), else 1."""
        from scipy.special import expit

        i = self.arm_index(query.a, query.a_index)
        j = self.arm_index(query.b, query.b_index)
        return 0 if rng.random() < float(expit(self.utility[i] - self.utility[j])) else 1

    def metric_names(self) -> list[str]:
        return list(_METRICS)

    def new_tracker(self) -> MetricTracker:
        return _DuelTracker(self)


class _DuelTracker(MetricTracker):
    def __init__(self, problem: PreferenceProblem) -> None:
        self.problem = problem
        self.cumulative = 0.0

    def update(self, query: Query, answer: Any, recommendation: Any) -> dict[str, float]:
        p = self.problem
        if not isinstance(query, Compare):
            raise InvalidInputError(f"{p.id} answers only compare queries")
        i = p.arm_index(query.a, query.a_index)
        j = p.arm_index(query.b, query.b_index)
        r = float(duel_regret(p.utility, i, j))
        self.cumulative += r
        k = recommendation.index
        if k is None:
            k = p.arm_index(np.asarray(recommendation.point), None)
        return {
            "regret": r,
            "cumulative_regret": self.cumulative,
            "simple_regret": preference_simple_regret(p.utility, k),
        }


# -- RKHS test functions (Sec. 5, following Chowdhury and Gopalan 2017) -----------------------------
def rkhs_function(
    kernel: Kernel, values: Any, x_grid: np.ndarray, reg: float = 0.05
) -> tuple[np.ndarray, float]:
    """The kernel ridge regression mean through ``values`` at ``linspace(0, 1, len(values))``.

    Returns ``(f on x_grid, ||f||_H)`` with ``f = k(., X_s) alpha``, ``alpha = (K_s + reg I)^{-1}
    values`` and ``||f||_H^2 = alpha^T K_s alpha``.
    """
    from scipy.linalg import cho_factor, cho_solve

    y = np.asarray(values, dtype=np.float64).reshape(-1)
    Xs = np.linspace(0.0, 1.0, y.size)[:, None]
    Ks = kernel.k(Xs, Xs)
    Ks[np.diag_indices_from(Ks)] += reg
    alpha = cho_solve(cho_factor(Ks, lower=True), y)
    f = kernel.k(np.asarray(x_grid, dtype=np.float64), Xs) @ alpha
    norm2 = float(alpha @ (kernel.k(Xs, Xs) @ alpha))
    return f, math.sqrt(max(norm2, 0.0))


def _rkhs_problem(
    kernel_name: str,
    values_seed: int | None,
    scale: float,
    n_arms: int,
    lengthscale: float,
    lam: float,
    budget: int,
    beta: float,
) -> PreferenceProblem:
    kern = make_kernel(kernel_name, lengthscale)
    if values_seed is None:
        values = np.array(RKHS_VALUES_CODE)
    else:
        values = np.random.default_rng(int(values_seed)).uniform(-1.0, 1.0, 10)
    space = CandidateSet.grid([[0.0, 1.0]], int(n_arms))
    f, norm = rkhs_function(kern, values, space.points, reg=0.05)
    scale = float(scale)
    problem = PreferenceProblem(
        id=f"preference/rkhs-{kernel_name}",
        family="preference",
        space=space,
        description=f"RKHS function of the {kernel_name} kernel (Sec. 5), {n_arms} arms of [0, 1]",
        settings={},
        utility=scale * f,
    )
    problem.settings = {
        "kernel": make_kernel(kernel_name, lengthscale),
        "lam": float(lam),
        "beta": float(beta),
        "budget": int(budget),
        "B": scale * norm,
        "kappa": problem.kappa,
    }
    return problem


def _register_rkhs(kernel_name: str, title: str) -> None:
    @register(f"preference/rkhs-{kernel_name}", f"RKHS test function, {title} kernel (Sec. 5)")
    def factory(
        values_seed: int | None = None,
        scale: float = 5.0,
        n_arms: int = 100,
        lengthscale: float = 0.1,
        lam: float = 0.05,
        budget: int = 300,
        beta: float = 1.0,
    ) -> Problem:
        return _rkhs_problem(
            kernel_name, values_seed, scale, n_arms, lengthscale, lam, budget, beta
        )


for _name, _title in (("se", "SE"), ("matern52", "Matern-5/2"), ("matern32", "Matern-3/2")):
    _register_rkhs(_name, _title)


# -- Ackley (Sec. 5) ---------------------------------------------------------------------------------
def ackley_problem(
    kernel: str = "se",
    negate: bool = False,
    n_arms: int = 100,
    h_range: float = 3.0,
    lengthscale: float = 0.1,
    lam: float = 0.05,
    budget: int = 2000,
    beta: float = 1.0,
) -> PreferenceProblem:
    """1-D Ackley on ``n_arms`` points of [-5, 5], preference scaled to ``[-h_range, h_range]``."""
    space = CandidateSet.grid([[-5.0, 5.0]], int(n_arms))
    g = functions.ackley(space.points)
    if _flag(negate):
        g = -g
    spread = float(np.max(g) - np.min(g))
    return PreferenceProblem(
        id="preference/ackley",
        family="preference",
        space=space,
        description="1-D Ackley (un-negated unless negate=true) on [-5, 5], h scaled to [-3, 3]",
        settings={
            "kernel": make_kernel(kernel, lengthscale),
            "lam": float(lam),
            "beta": float(beta),
            "budget": int(budget),
        },
        utility=float(h_range) * g / spread,
    )


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        if value.lower() not in ("true", "false", "1", "0"):
            raise InvalidInputError(f"expected true/false, got {value!r}")
        return value.lower() in ("true", "1")
    return bool(value)


@register("preference/ackley", "1-D Ackley utility on 100 arms of [-5, 5], h in [-3, 3] (Sec. 5)")
@functools.wraps(ackley_problem, assigned=())  # its signature: options checked by name
def _ackley_factory(**options: Any) -> Problem:
    return ackley_problem(**options)


# -- 2-D problems of the MaxMinLCB suite --------------------------------------------------------------
def _grid2d_problem(
    name: str, fn: Any, bounds: list[list[float]], n_per_dim: int, budget: int, beta: float
) -> PreferenceProblem:
    space = CandidateSet.grid(bounds, int(n_per_dim))
    g = -fn(space.points)
    g = 3.0 * g / float(np.max(g) - np.min(g))
    width = np.array([hi - lo for lo, hi in bounds])
    return PreferenceProblem(
        id=f"preference/{name}",
        family="preference",
        space=space,
        description=f"-{name} on a {n_per_dim} x {n_per_dim} grid, h scaled to [-3, 3]",
        settings={
            "kernel": SquaredExponential(0.2 * width, 1.0),
            "lam": 0.05,
            "beta": float(beta),
            "budget": int(budget),
        },
        utility=g,
    )


@register("preference/branin", "-Branin on a 10 x 10 grid of [-5, 10] x [0, 15], h in [-3, 3]")
def _branin_factory(n_per_dim: int = 10, budget: int = 300, beta: float = 1.0) -> Problem:
    return _grid2d_problem(
        "branin", functions.branin, [[-5.0, 10.0], [0.0, 15.0]], n_per_dim, budget, beta
    )


@register("preference/holder", "-Hoelder table on a 10 x 10 grid of [-10, 10]^2, h in [-3, 3]")
def _holder_factory(n_per_dim: int = 10, budget: int = 300, beta: float = 1.0) -> Problem:
    return _grid2d_problem(
        "holder", functions.holder_table, [[-10.0, 10.0], [-10.0, 10.0]], n_per_dim, budget, beta
    )


# -- random option tables (not in the paper: a check on tables no test names) ----------------------
def random_table_problem(
    n: int = 200,
    dim: int = 3,
    table_seed: int = 0,
    lengthscale: float = 0.3,
    h_range: float = 3.0,
    budget: int = 200,
) -> PreferenceProblem:
    """``n`` options drawn uniformly from the unit cube ``[0, 1]^dim`` and a smooth utility: a
    draw of a Gaussian process with a squared-exponential kernel of ``lengthscale`` at the options
    (from ``table_seed``), scaled so that ``max u - min u = h_range``. No kernel setting: a
    learner must learn its hyperparameters, as on a person's own table."""
    n, dim = int(n), int(dim)
    if n < 2 or dim < 1:
        raise InvalidInputError(f"need n >= 2 options and dim >= 1, got n={n}, dim={dim}")
    if not float(lengthscale) > 0 or not float(h_range) > 0:
        raise InvalidInputError("lengthscale and h_range must be positive")
    rng = np.random.default_rng([int(table_seed), n, dim])
    X = rng.random((n, dim))
    K = SquaredExponential(float(lengthscale), 1.0).k(X, X) + 1e-8 * np.eye(n)
    lam, V = np.linalg.eigh(0.5 * (K + K.T))
    g = V @ (np.sqrt(np.maximum(lam, 0.0)) * rng.standard_normal(n))
    return PreferenceProblem(
        id="preference/random-table",
        family="preference",
        space=CandidateSet(X),
        description=(
            f"{n} random options in [0, 1]^{dim}, a smooth GP-drawn utility (l = {lengthscale}), "
            f"max u - min u = {h_range} (table_seed {table_seed})"
        ),
        settings={"budget": int(budget)},
        utility=float(h_range) * g / float(np.max(g) - np.min(g)),
    )


@register(
    "preference/random-table",
    "random options in [0, 1]^dim with a smooth GP-drawn utility (table_seed=k for another table)",
)
@functools.wraps(random_table_problem, assigned=())  # its signature: options checked by name
def _random_table_factory(**options: Any) -> Problem:
    return random_table_problem(**options)


# -- Yelp (Sec. 5, Fig. 2) ------------------------------------------------------------------------------
def _read_matrix(path: Any, name: str) -> np.ndarray:
    p = Path(path)
    if not p.is_file():
        raise InvalidInputError(f"{name}: no such file {str(p)!r}")
    if p.suffix == ".npy":
        arr = np.load(p, allow_pickle=False)
    else:
        delim = "," if p.suffix == ".csv" else None
        try:
            arr = np.genfromtxt(p, delimiter=delim, dtype=np.float64, filling_values=np.nan)
        except ValueError as exc:
            raise InvalidInputError(f"{name}: cannot parse {str(p)!r}: {exc}") from exc
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2:
        raise InvalidInputError(f"{name} must be a 2-D table, got shape {arr.shape}")
    return arr


def load_yelp_arrays(embeddings: Any, ratings: Any) -> tuple[np.ndarray, np.ndarray]:
    """Read the user's own Yelp-style files.

    * ``embeddings``: arms x features (the paper: 275 x 32), ``.npy`` or a text table
      (``.csv`` comma-separated, otherwise whitespace-separated), no header, finite numbers only.
    * ``ratings``: users x arms (the paper: 20 x 275), ratings in [1, 5]; missing ratings as NaN
      (``.npy``) or empty / ``nan`` cells (text).

    Arrays may be passed instead of paths. Raises :class:`InvalidInputError` on NaN features, a
    shape mismatch, ratings outside [1, 5], or a user without any rating.
    """
    E = embeddings if isinstance(embeddings, np.ndarray) else _read_matrix(embeddings, "embeddings")
    R = ratings if isinstance(ratings, np.ndarray) else _read_matrix(ratings, "ratings")
    E = np.asarray(E, dtype=np.float64)
    R = np.asarray(R, dtype=np.float64)
    if E.ndim != 2 or E.shape[0] < 2:
        raise InvalidInputError(f"embeddings must be arms x features, got shape {E.shape}")
    if not np.all(np.isfinite(E)):
        raise InvalidInputError("embeddings contain NaN or infinite values")
    if R.ndim != 2 or R.shape[1] != E.shape[0]:
        raise InvalidInputError(
            f"ratings must be users x arms with {E.shape[0]} arms, got shape {R.shape}"
        )
    obs = np.isfinite(R)
    if np.any(np.isinf(R)) or np.any((R[obs] < 1.0) | (R[obs] > 5.0)):
        raise InvalidInputError("ratings must lie in [1, 5] (missing: NaN)")
    if np.any(obs.sum(axis=1) == 0):
        raise InvalidInputError("every user needs at least one rating")
    return E, R


def complete_ratings(
    ratings: Any, rank: int = 10, reg: float = 1.0, n_iter: int = 50, seed: int = 0
) -> np.ndarray:
    """Fill the missing (NaN) ratings by regularised matrix factorisation.

    Model ``r_ui = m + b_u + c_i + p_u . q_i`` fitted to the observed ratings by alternating ridge
    regressions (``reg`` on biases and factors, ``rank`` factors, ``n_iter`` sweeps, factors
    initialised from ``seed``); the paper's pipeline used collaborative filtering (Surprise's SVD
    in Pasztor et al.'s code), which this replaces with a deterministic equivalent. Observed
    ratings are kept; predictions are clipped to [1, 5]. Returns users x arms with no NaN.
    """
    R = np.asarray(ratings, dtype=np.float64)
    obs = np.isfinite(R)
    n_u, n_i = R.shape
    mean = float(np.mean(R[obs]))
    rng = np.random.default_rng(seed)
    Q = 0.1 * rng.standard_normal((n_i, rank))
    P = np.zeros((n_u, rank))
    bu = np.zeros(n_u)
    ci = np.zeros(n_i)
    eye = reg * np.eye(rank + 1)
    for _ in range(int(n_iter)):
        for u in range(n_u):
            items = np.flatnonzero(obs[u])
            F = np.hstack([np.ones((items.size, 1)), Q[items]])
            t = R[u, items] - mean - ci[items]
            sol = np.linalg.solve(F.T @ F + eye, F.T @ t)
            bu[u], P[u] = sol[0], sol[1:]
        for i in range(n_i):
            users = np.flatnonzero(obs[:, i])
            if users.size == 0:
                ci[i], Q[i] = 0.0, 0.0
                continue
            F = np.hstack([np.ones((users.size, 1)), P[users]])
            t = R[users, i] - mean - bu[users]
            sol = np.linalg.solve(F.T @ F + eye, F.T @ t)
            ci[i], Q[i] = sol[0], sol[1:]
    pred = np.clip(mean + bu[:, None] + ci[None, :] + P @ Q.T, 1.0, 5.0)
    return np.where(obs, R, pred)


def scale_ratings(row: Any, h_range: float = 3.0) -> np.ndarray:
    """Min-max scale one user's ratings (m,) to ``[-h_range, h_range]`` (constant row -> zeros)."""
    r = np.asarray(row, dtype=np.float64)
    lo, hi = float(np.min(r)), float(np.max(r))
    if hi - lo <= 0:
        return np.zeros_like(r)
    return -h_range + 2.0 * h_range * (r - lo) / (hi - lo)


def synthetic_yelp_standin(
    n_arms: int = 275, n_features: int = 32, n_users: int = 20, n_ratings: int = 2563, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A SYNTHETIC stand-in for the Yelp data of the paper (not real data), same shape.

    Embeddings: unit vectors in R^32 around 12 cluster centres (OpenAI embeddings are unit-norm;
    with l = 0.1 distinct restaurants are then nearly uncorrelated, as in the real problem).
    Ratings: for each user a random taste direction ``w_u``; ``rating = round(3.6 + 0.9 z + 0.5
    eps)`` clipped to 1..5, with ``z`` the standardised score ``w_u . x_i``; each user rates 90
    restaurants plus a random share of the rest, 2563 ratings in all (the paper's count); the others
    are missing (NaN). Deterministic given ``seed``.
    """
    rng = np.random.default_rng(np.random.SeedSequence([20250, int(seed)]))
    centres = rng.standard_normal((12, n_features))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    members = rng.integers(0, 12, n_arms)
    E = centres[members] + 0.35 * rng.standard_normal((n_arms, n_features))
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    W = rng.standard_normal((n_users, n_features))
    S = W @ E.T
    Z = (S - S.mean(axis=1, keepdims=True)) / S.std(axis=1, keepdims=True)
    full = np.clip(np.round(3.6 + 0.9 * Z + 0.5 * rng.standard_normal(Z.shape)), 1, 5)
    base = min(90, n_arms)
    extra = rng.multinomial(max(n_ratings - base * n_users, 0), np.ones(n_users) / n_users)
    R = np.full((n_users, n_arms), np.nan)
    for u in range(n_users):
        k = min(n_arms, base + int(extra[u]))
        items = rng.choice(n_arms, size=k, replace=False)
        R[u, items] = full[u, items]
    return E, R


def yelp_problem(
    user: int = 0,
    embeddings: Any = None,
    ratings: Any = None,
    rank: int = 10,
    lengthscale: float = 0.1,
    lam: float = 0.05,
    budget: int = 2000,
    beta_mrlpf: float = 0.1,
    beta_maxminlcb: float = 2.0,
) -> PreferenceProblem:
    """Yelp restaurants for one user (Sec. 5); the synthetic stand-in when no files are given."""
    synthetic = embeddings is None and ratings is None
    if synthetic:
        E, R = synthetic_yelp_standin()
    elif embeddings is None or ratings is None:
        raise InvalidInputError("give both embeddings= and ratings= files (or neither)")
    else:
        E, R = load_yelp_arrays(embeddings, ratings)
    if isinstance(user, bool) or int(user) != user or not 0 <= int(user) < R.shape[0]:
        raise InvalidInputError(f"user must be an index in [0, {R.shape[0]}), got {user!r}")
    full = complete_ratings(R, rank=rank)
    u = scale_ratings(full[int(user)])
    label = "SYNTHETIC stand-in (not Yelp data)" if synthetic else "user-supplied Yelp data"
    return PreferenceProblem(
        id="preference/yelp",
        family="preference",
        space=CandidateSet(E),
        description=f"Yelp restaurants, user {int(user)}: {label}",
        settings={
            "kernel": SquaredExponential(lengthscale, 1.0),
            "lam": float(lam),
            "beta_batch": float(beta_mrlpf),  # MR-LPF's per-round fits (Sec. 5)
            "beta_sequential": float(beta_maxminlcb),  # MaxMinLCB's per-duel fit
            "beta": float(beta_mrlpf),
            "budget": int(budget),
            "synthetic": synthetic,
        },
        utility=u,
    )


@register(
    "preference/yelp",
    "Yelp restaurants x user ratings (Sec. 5); SYNTHETIC stand-in unless embeddings=/ratings= given",
)
@functools.wraps(yelp_problem, assigned=())  # its signature: options checked by name
def _yelp_factory(**options: Any) -> Problem:
    return yelp_problem(**options)
