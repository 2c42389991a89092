"""Standard optimisation test functions, vectorised: ``f(X)`` with X of shape (n, d) -> (n,).

Definitions follow the Virtual Library of Simulation Experiments (Surjanovic and Bingham), in
their usual (minimisation) form and usual domains. The papers rescale, shift or negate them; that
happens in the family modules, never here. :data:`DOMAINS` and :data:`MINIMA` record the usual
domain (per dimension, or a (d, 2) array) and the known global minimum value.
"""

from __future__ import annotations

import math

import numpy as np

from boloop._validation import as_points

__all__ = [
    "ackley",
    "branin",
    "hartmann3",
    "himmelblau",
    "holder_table",
    "levy",
    "michalewicz",
    "rastrigin",
    "rosenbrock",
    "sphere",
    "styblinski_tang",
    "DOMAINS",
    "MINIMA",
]


def _X(X: np.ndarray, dim: int | None = None) -> np.ndarray:
    return as_points(X, "X", dim=dim)


def ackley(X: np.ndarray, a: float = 20.0, b: float = 0.2, c: float = 2 * math.pi) -> np.ndarray:
    """Ackley: ``-a exp(-b sqrt(mean x^2)) - exp(mean cos(c x)) + a + e``; min 0 at the origin."""
    X = _X(X)
    return (
        -a * np.exp(-b * np.sqrt(np.mean(X**2, axis=1)))
        - np.exp(np.mean(np.cos(c * X), axis=1))
        + a
        + math.e
    )


def branin(X: np.ndarray) -> np.ndarray:
    """Branin-Hoo on [-5, 10] x [0, 15]; min 0.397887 at three points."""
    X = _X(X, 2)
    x1, x2 = X[:, 0], X[:, 1]
    b = 5.1 / (4 * math.pi**2)
    c = 5 / math.pi
    t = 1 / (8 * math.pi)
    return (x2 - b * x1**2 + c * x1 - 6.0) ** 2 + 10.0 * (1 - t) * np.cos(x1) + 10.0


_H3_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
_H3_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
_H3_P = 1e-4 * np.array(
    [[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]], dtype=float
)


def hartmann3(X: np.ndarray) -> np.ndarray:
    """Hartmann 3-D on [0, 1]^3; min -3.86278 at (0.114614, 0.555649, 0.852547)."""
    X = _X(X, 3)
    inner = np.einsum("ij,nij->ni", _H3_A, (X[:, None, :] - _H3_P[None]) ** 2)
    return -np.exp(-inner) @ _H3_ALPHA


def himmelblau(X: np.ndarray) -> np.ndarray:
    """Himmelblau: ``(x1^2 + x2 - 11)^2 + (x1 + x2^2 - 7)^2`` on [-5, 5]^2; min 0 at four points."""
    X = _X(X, 2)
    x1, x2 = X[:, 0], X[:, 1]
    return (x1**2 + x2 - 11) ** 2 + (x1 + x2**2 - 7) ** 2


def holder_table(X: np.ndarray) -> np.ndarray:
    """Hoelder table on [-10, 10]^2; min -19.2085 at (+-8.05502, +-9.66459)."""
    X = _X(X, 2)
    x1, x2 = X[:, 0], X[:, 1]
    return -np.abs(np.sin(x1) * np.cos(x2) * np.exp(np.abs(1 - np.sqrt(x1**2 + x2**2) / math.pi)))


def levy(X: np.ndarray) -> np.ndarray:
    """Levy on [-10, 10]^d; min 0 at (1, ..., 1)."""
    X = _X(X)
    w = 1 + (X - 1) / 4
    head = np.sin(math.pi * w[:, 0]) ** 2
    mid = np.sum((w[:, :-1] - 1) ** 2 * (1 + 10 * np.sin(math.pi * w[:, :-1] + 1) ** 2), axis=1)
    tail = (w[:, -1] - 1) ** 2 * (1 + np.sin(2 * math.pi * w[:, -1]) ** 2)
    return head + mid + tail


def michalewicz(X: np.ndarray, m: float = 10.0) -> np.ndarray:
    """Michalewicz on [0, pi]^d: ``-sum sin(x_i) sin(i x_i^2 / pi)^(2m)``; min -4.687658 for d = 5."""
    X = _X(X)
    i = np.arange(1, X.shape[1] + 1)
    return -np.sum(np.sin(X) * np.sin(i * X**2 / math.pi) ** (2 * m), axis=1)


def rastrigin(X: np.ndarray) -> np.ndarray:
    """Rastrigin on [-5.12, 5.12]^d: ``10 d + sum(x^2 - 10 cos(2 pi x))``; min 0 at the origin."""
    X = _X(X)
    return 10.0 * X.shape[1] + np.sum(X**2 - 10.0 * np.cos(2 * math.pi * X), axis=1)


def rosenbrock(X: np.ndarray) -> np.ndarray:
    """Rosenbrock on [-5, 10]^d: ``sum 100 (x_{i+1} - x_i^2)^2 + (x_i - 1)^2``; min 0 at (1, ..., 1)."""
    X = _X(X)
    return np.sum(100.0 * (X[:, 1:] - X[:, :-1] ** 2) ** 2 + (X[:, :-1] - 1) ** 2, axis=1)


def sphere(X: np.ndarray) -> np.ndarray:
    """Sphere ``sum x^2`` on [-5.12, 5.12]^d; min 0 at the origin."""
    X = _X(X)
    return np.sum(X**2, axis=1)


def styblinski_tang(X: np.ndarray) -> np.ndarray:
    """Styblinski-Tang on [-5, 5]^d: ``0.5 sum(x^4 - 16 x^2 + 5 x)``; min -39.16617 d at x_i = -2.903534."""
    X = _X(X)
    return 0.5 * np.sum(X**4 - 16 * X**2 + 5 * X, axis=1)


#: usual domain: a (lower, upper) pair applied to every dimension, or per-dimension rows
DOMAINS: dict[str, tuple[float, float] | list[tuple[float, float]]] = {
    "ackley": (-32.768, 32.768),
    "branin": [(-5.0, 10.0), (0.0, 15.0)],
    "hartmann3": (0.0, 1.0),
    "himmelblau": (-5.0, 5.0),
    "holder_table": (-10.0, 10.0),
    "levy": (-10.0, 10.0),
    "michalewicz": (0.0, math.pi),
    "rastrigin": (-5.12, 5.12),
    "rosenbrock": (-5.0, 10.0),
    "sphere": (-5.12, 5.12),
    "styblinski_tang": (-5.0, 5.0),
}

#: known global minimum value (for styblinski_tang, per dimension; michalewicz for d = 2 and 5)
MINIMA: dict[str, float] = {
    "ackley": 0.0,
    "branin": 0.397887,
    "hartmann3": -3.86278,
    "himmelblau": 0.0,
    "holder_table": -19.2085,
    "levy": 0.0,
    "michalewicz_2d": -1.8013,
    "michalewicz_5d": -4.687658,
    "rastrigin": 0.0,
    "rosenbrock": 0.0,
    "sphere": 0.0,
    "styblinski_tang_per_dim": -39.16617,
}
