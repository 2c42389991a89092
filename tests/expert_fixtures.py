"""Shared builders of the expert confidence-set tests (not a test module): a likelihood-ratio
confidence set on random labels, and the queries of a short COBOL run on a shifted 2-D Ackley
with a threshold expert (the run the speed-path tests compare with and without a shortcut)."""

from __future__ import annotations

import numpy as np

from boloop.algorithms.expert import COBOL
from boloop.gp.kernels import SquaredExponential
from boloop.gp.likelihood_ratio import LikelihoodRatioModel
from boloop.queries import Label
from boloop.spaces import Box


def labelled_model(
    seed: int, n: int, d: int, B: float, c: float, box: float | None
) -> tuple[LikelihoodRatioModel, np.random.Generator]:
    """A confidence set (norm bound ``B``, ``alpha`` coefficient ``c``, value box ``box``) on
    ``n`` uniform points in ``[0, 1]^d`` with coin-flip rejections, and the generator after them."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    r = (rng.random(n) < 0.5).astype(float)
    k = SquaredExponential(lengthscale=np.full(d, 0.3), variance=1.0)
    m = LikelihoodRatioModel(k, norm_bound=B, alpha_coefficient=c, adapt=False, value_bound=box)
    m.set_data(X, r)
    return m, rng


def ackley2(x: np.ndarray) -> float:
    """The 2-D Ackley function shifted to the minimum at (0.4, -0.3)."""
    z = np.asarray(x, dtype=float) - np.array([0.4, -0.3])
    a = -20.0 * np.exp(-0.2 * np.sqrt(0.5 * float(z @ z)))
    return float(a - np.exp(0.5 * float(np.sum(np.cos(2 * np.pi * z)))) + 20.0 + np.e)


def cobol_queries(seed: int, iterations: int) -> tuple[list, int]:
    """Every query of COBOL (defaults) on ``[-1, 1]^2`` until ``iterations``, as (kind, point
    bytes, answer), the expert accepting where ``ackley2 < 4``; and the number of gated steps."""
    policy = COBOL(Box([-1, -1], [1, 1]), seed)
    out = []
    while policy.iteration < iterations:
        q = policy.ask()
        fx = ackley2(q.x)
        answer = bool(fx < 4.0) if isinstance(q, Label) else fx
        out.append((type(q).__name__, q.x.tobytes(), answer))
        policy.tell(q.id, answer)
    return out, int(policy.describe()["gated"])
