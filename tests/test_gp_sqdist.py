"""Squared distances of the kernels: numpy for small matrices (no scipy.spatial import on a study
step), scipy's cdist for large ones; the same numbers bit for bit either way."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from boloop.gp.kernels import Matern, SquaredExponential


@pytest.mark.parametrize("d", [1, 2, 3, 5, 8, 13])
@pytest.mark.parametrize("n,m", [(1, 40), (30, 30), (7, 1), (800, 300)])
def test_scaled_sqdist_equals_cdist_bit_for_bit(d, n, m):
    rng = np.random.default_rng(d * 1000 + n + m)
    X = rng.standard_normal((n, d)) * rng.uniform(0.01, 100.0, size=d)
    Y = rng.standard_normal((m, d)) * rng.uniform(0.01, 100.0, size=d)
    ls = rng.uniform(0.1, 3.0, size=d)
    k = SquaredExponential(lengthscale=ls, variance=1.0)
    assert np.array_equal(k.scaled_sqdist(X, Y), cdist(X / ls, Y / ls, "sqeuclidean"))
    assert np.array_equal(k.scaled_sqdist(X), cdist(X / ls, X / ls, "sqeuclidean"))
    K = Matern(lengthscale=ls, variance=2.0).k(X, Y)
    assert K.shape == (n, m) and np.all(np.isfinite(K))


def test_a_mid_sized_product_before_scipy_spatial_is_imported_stays_in_numpy():
    """Up to 2e6 terms, while scipy.spatial is not imported (a command-line call), the squared
    distances are summed in numpy (a 300-answer expert study's candidates: 4e5 terms; the
    import would cost ~0.05 s), bit for bit cdist's; above that, or once scipy.spatial is
    imported, cdist."""
    import subprocess
    import sys

    code = (
        "import sys\nimport numpy as np\nfrom boloop.gp.kernels import SquaredExponential\n"
        "rng = np.random.default_rng(3)\nA, B = rng.random((1200, 3)), rng.random((300, 3))\n"
        "k = SquaredExponential(lengthscale=[0.2, 0.5, 1.3], variance=1.0)\n"
        "D = k.scaled_sqdist(A, B)\nprint('scipy.spatial' in sys.modules)\n"
        "from scipy.spatial.distance import cdist\n"
        "ls = np.array([0.2, 0.5, 1.3])\n"
        "print(np.array_equal(D, cdist(A / ls, B / ls, 'sqeuclidean')))\n"
        "print(np.array_equal(D, k.scaled_sqdist(A, B)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    assert out == ["False", "True", "True"], out
